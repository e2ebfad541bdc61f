//! The extension host: starts extensions, routes their frames, answers the
//! agent's calls, and stops them.
//!
//! Shape (DESIGN §1): two OS threads per extension ([`ext`]), and a central
//! dispatcher — [`Shared`] — that owns the registry, the pending-call tables
//! and the lifecycle channel. Reader threads run the dispatcher's routing
//! directly (a reply goes from the reader to the waiting caller in one
//! channel hop, as in the bare skeleton), and every wait elsewhere is a
//! `select!` with a deadline: on the lifecycle channel while loading, on a
//! reply channel during a call.
//!
//! Determinism: extensions start in parallel, but their registrations are
//! buffered until every handshake has settled and then committed in load
//! order, so "first registration wins" never depends on timing. Events are
//! reported in load order too.

pub mod deadlines;
pub mod discovery;
pub mod ext;
pub mod manifest;
pub mod process;
pub mod registry;

use crate::cancel::CancelToken;
use crate::events::{Event, EventSink};
use crossbeam_channel::{Receiver, Sender};
use deadlines::Deadlines;
use discovery::{Entry, Status};
use ext::{CallKind, Control, Dispatch, Ext, Identity, Phase, Registration, Reply, Withdrawal};
use manifest::{Exec, Manifest};
use registry::{CommandEntry, Registry, ToolEntry};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use zut_ext::wire::{
    ContentBlock, DecodeError, ExtFrame, HostFrame, Panel, SessionInfo, INTERCEPTABLE_EVENTS,
    KNOWN_EVENTS, PROTOCOL_VERSION,
};

/// The zut version reported in `hello_ack`.
pub const ZUT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the host tells extensions and how it behaves.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub zut_home: PathBuf,
    /// The user's project directory (`hello_ack.cwd`).
    pub cwd: PathBuf,
    pub provider: String,
    pub model: String,
    pub deadlines: Deadlines,
    /// Whether a person is at an interactive terminal (interactive tools
    /// are refused otherwise).
    pub interactive: bool,
    /// Where bare launchers (`python3`, `node`) are looked up; `None`: the
    /// process's `PATH`.
    pub search_path: Option<std::ffi::OsString>,
}

/// What became of one discovered directory.
#[derive(Clone)]
pub enum Outcome {
    /// Disabled or shadowed: not started.
    Skipped,
    /// Theme-only: nothing to start.
    ThemeOnly,
    /// Could not be loaded; the full diagnostic.
    Failed(String),
    /// Started (it may have failed its handshake or died since: see its phase).
    Started(Arc<Ext>),
}

/// The result of loading, in load order (what doctor reports).
#[derive(Clone)]
pub struct Loaded {
    pub entry: Entry,
    pub outcome: Outcome,
}

/// A reply from an extension tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    pub content: Vec<ContentBlock>,
    pub is_error: bool,
    /// The extension that served (or failed to serve) the call.
    pub extension: String,
    pub activate_tools: Vec<String>,
    pub details: Option<Value>,
}

/// A reply to a slash command.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandReply {
    pub extension: String,
    /// The canonical command name.
    pub name: String,
    pub action: String,
    pub prompt: String,
    pub insert: String,
    pub display: String,
    pub open_panel: Option<Panel>,
    pub error: String,
}

/// What a tool call needs of a registration (not its schema).
struct ToolRoute {
    ext: u64,
    name: String,
    extension: String,
    interactive: bool,
}

impl ToolRoute {
    fn of(t: &ToolEntry) -> ToolRoute {
        ToolRoute {
            ext: t.ext,
            name: t.name.clone(),
            extension: t.extension.clone(),
            interactive: t.interactive,
        }
    }
}

/// The running extension host.
pub struct Host {
    shared: Arc<Shared>,
    loaded: Vec<Loaded>,
}

/// The dispatcher: registry, extensions, lifecycle channel.
pub struct Shared {
    config: HostConfig,
    sink: Arc<dyn EventSink>,
    registry: Mutex<Registry>,
    exts: Mutex<Vec<Arc<Ext>>>,
    /// Every instance ever started, connected or not: all are joined at shutdown.
    started: Mutex<Vec<Arc<Ext>>>,
    next_id: AtomicU64,
    control_tx: Sender<Control>,
    control_rx: Receiver<Control>,
    threads: Arc<AtomicUsize>,
    session: Mutex<Option<SessionInfo>>,
    stopped: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Host {
    /// Starts every loadable entry in parallel, waits for their handshakes
    /// (bounded by the hello and ready deadlines), commits registrations in
    /// load order and reports `ext_loaded` / `ext_error` / `ext_warning`.
    pub fn start(
        config: HostConfig,
        sink: Arc<dyn EventSink>,
        entries: Vec<Entry>,
        cancel: &CancelToken,
    ) -> Host {
        let (control_tx, control_rx) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared {
            config,
            sink,
            registry: Mutex::new(Registry::default()),
            exts: Mutex::new(Vec::new()),
            started: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            control_tx,
            control_rx,
            threads: Arc::new(AtomicUsize::new(0)),
            session: Mutex::new(None),
            stopped: AtomicBool::new(false),
        });
        let mut loaded: Vec<Loaded> = entries
            .into_iter()
            .enumerate()
            .map(|(order, entry)| {
                let outcome = match &entry.status {
                    Status::Load(m) if m.theme_only() => Outcome::ThemeOnly,
                    Status::Load(m) => match shared.spawn(order, &entry, m) {
                        Ok(ext) => Outcome::Started(ext),
                        Err(e) => Outcome::Failed(e),
                    },
                    Status::Invalid(e) => Outcome::Failed(e.to_string()),
                    Status::Disabled(_) | Status::Shadowed { .. } => Outcome::Skipped,
                };
                Loaded { entry, outcome }
            })
            .collect();
        shared.await_handshakes(&loaded, cancel);
        // Refused manifest `skills` paths: warnings of their extension.
        let theme_warnings = crate::skills::stage_refusals(&loaded);
        shared.commit_and_report(&mut loaded);
        for (extension, message) in theme_warnings {
            shared.emit(Event::ExtWarning { extension, message });
        }
        Host { shared, loaded }
    }

    /// What happened to every discovered directory, in load order.
    pub fn loaded(&self) -> &[Loaded] {
        &self.loaded
    }

    /// Running extensions in load order.
    pub fn extensions(&self) -> Vec<Arc<Ext>> {
        lock(&self.shared.exts).clone()
    }

    /// A snapshot of the active registrations.
    pub fn commands(&self) -> Vec<CommandEntry> {
        lock(&self.shared.registry).commands().cloned().collect()
    }

    /// Active extension tools, deferred ones included.
    pub fn tools(&self) -> Vec<ToolEntry> {
        lock(&self.shared.registry).tools().cloned().collect()
    }

    /// The extension command `name` (case-insensitive), if any.
    pub fn command(&self, name: &str) -> Option<CommandEntry> {
        lock(&self.shared.registry).command(name).cloned()
    }

    /// The extension tool `name`, if any.
    pub fn tool(&self, name: &str) -> Option<ToolEntry> {
        lock(&self.shared.registry).tool(name).cloned()
    }

    /// Why tool `name` cannot be called, when a dead extension owned it.
    pub fn gone_tool(&self, name: &str) -> Option<String> {
        lock(&self.shared.registry).gone_tool(name)
    }

    /// Number of live reader and writer threads (zero after shutdown).
    pub fn live_threads(&self) -> usize {
        self.shared.threads.load(Ordering::SeqCst)
    }

    /// The settings this host runs with.
    pub fn config(&self) -> &HostConfig {
        &self.shared.config
    }

    /// The deadlines in force.
    pub fn deadlines(&self) -> Deadlines {
        self.shared.config.deadlines
    }

    /// Runs extension command `name` with `args` and waits for its response.
    pub fn invoke_command(
        &self,
        name: &str,
        args: &str,
        cancel: &CancelToken,
    ) -> Result<CommandReply, String> {
        let entry = {
            let reg = lock(&self.shared.registry);
            match reg.command(name) {
                Some(e) => e.clone(),
                None => {
                    return Err(reg
                        .gone_command(name)
                        .unwrap_or_else(|| format!("unknown command /{name}")))
                }
            }
        };
        let ext = self
            .shared
            .ext(entry.ext)
            .ok_or_else(|| format!("extension {} is not running", entry.extension))?;
        if let Phase::Disconnected(reason) = ext.phase() {
            return Err(format!(
                "extension {} is not running ({reason})",
                entry.extension
            ));
        }
        let id = self.shared.next_id();
        let rx = ext.expect(id, CallKind::Command);
        let frame = HostFrame::CommandInvoked {
            id: id.to_string(),
            name: entry.name.clone(),
            args: args.trim().to_string(),
        };
        if let Err(e) = ext.send(&frame, &*self.shared, &ext) {
            ext.forget(id);
            return Err(format!("extension {}: {e}", entry.extension));
        }
        let timeout = self.shared.config.deadlines.command;
        let reply = wait_reply(&rx, Some(timeout), cancel);
        ext.forget(id);
        match reply {
            Wait::Reply(Ok(ExtFrame::CommandResponse {
                action,
                prompt,
                insert,
                display,
                open_panel,
                error,
                ..
            })) => Ok(CommandReply {
                extension: entry.extension,
                name: entry.name,
                action,
                prompt,
                insert,
                display,
                open_panel,
                error,
            }),
            Wait::Reply(Ok(_)) => Err("unexpected reply".into()),
            Wait::Reply(Err(reason)) => Err(reason),
            Wait::Cancelled => Err("aborted".into()),
            Wait::TimedOut => Err(format!(
                "timeout waiting for {}/{} after {} ms",
                entry.extension,
                entry.name,
                timeout.as_millis()
            )),
        }
    }

    /// Calls extension tool `name`; `None` if no extension registered it.
    /// Every failure (refused, timed out, aborted, disconnected) is an error
    /// reply the model can read, naming the extension.
    pub fn call_tool(&self, name: &str, args: &Value, cancel: &CancelToken) -> Option<ToolReply> {
        let entry = lock(&self.shared.registry).tool(name).map(ToolRoute::of)?;
        let fail = |reason: String| ToolReply {
            content: vec![ContentBlock::text(format!(
                "extension {}/{} failed: {reason}",
                entry.extension, entry.name
            ))],
            is_error: true,
            extension: entry.extension.clone(),
            activate_tools: Vec::new(),
            details: None,
        };
        if entry.interactive && !self.shared.config.interactive {
            return Some(fail(
                "it is an interactive tool and needs a person at the interactive terminal; this mode cannot run it".into(),
            ));
        }
        let Some(ext) = self.shared.ext(entry.ext) else {
            return Some(fail("the extension is not running".into()));
        };
        let id = self.shared.next_id();
        let rx = ext.expect(id, CallKind::Tool);
        let args = if args.is_null() {
            Value::Object(Default::default())
        } else {
            args.clone()
        };
        let frame = HostFrame::ToolCall {
            id: id.to_string(),
            name: entry.name.clone(),
            args,
        };
        let ticket = match ext.send_tracked(&frame, &*self.shared, &ext) {
            Ok(t) => t,
            Err(e) => {
                ext.forget(id);
                return Some(fail(e.to_string()));
            }
        };
        let timeout = (!entry.interactive).then_some(self.shared.config.deadlines.tool);
        let reply = wait_reply(&rx, timeout, cancel);
        ext.forget(id);
        let reason = match reply {
            Wait::Reply(Ok(ExtFrame::ToolResult {
                content,
                is_error,
                activate_tools,
                details,
                ..
            })) => {
                return Some(ToolReply {
                    content: normalise_content(content, &entry.extension),
                    is_error,
                    extension: entry.extension,
                    activate_tools,
                    details,
                })
            }
            Wait::Reply(Ok(_)) => "unexpected reply".to_string(),
            Wait::Reply(Err(reason)) => return Some(fail(reason)),
            Wait::Cancelled => "aborted".to_string(),
            Wait::TimedOut => format!(
                "timeout waiting for {}/{} after {} ms",
                entry.extension,
                entry.name,
                self.shared.config.deadlines.tool.as_millis()
            ),
        };
        self.shared.abandon(&ext, id, &ticket);
        Some(fail(reason))
    }

    /// Stops every extension: `shutdown` to all at once, one shared grace
    /// deadline, then SIGTERM and SIGKILL; every child reaped and every
    /// thread joined. Idempotent.
    pub fn shutdown(&self) {
        if self.shared.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        lock(&self.shared.exts).clear();
        let exts: Vec<Arc<Ext>> = lock(&self.shared.started).clone();
        let deadline = Instant::now() + self.shared.config.deadlines.shutdown_grace;
        for ext in &exts {
            // Closing first: an extension that exits right after the
            // `shutdown` frame is then an orderly exit, not a crash.
            ext.begin_close(deadline);
            if ext.connected() {
                let _ = ext.send_shutdown(&*self.shared, ext);
            }
        }
        // Disconnected ones were already being stopped by their reader;
        // joining every instance is what guarantees no thread outlives us.
        for ext in &exts {
            ext.join();
        }
    }

    /// Every extension process this host started, in start order, whatever
    /// became of it (for checks that nothing outlives the host).
    pub fn started(&self) -> Vec<Arc<Ext>> {
        lock(&self.shared.started).clone()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// How a wait for a reply ended. Short-lived and moved once, so the size
/// of the frame it may carry does not matter.
#[allow(clippy::large_enum_variant)]
enum Wait {
    Reply(Reply),
    Cancelled,
    TimedOut,
}

fn wait_reply(rx: &Receiver<Reply>, timeout: Option<Duration>, cancel: &CancelToken) -> Wait {
    // A reply often arrives within microseconds. Spinning briefly, then
    // yielding a few times, catches it without parking this thread: on a
    // busy core a park and wake-up costs more than the round trip itself.
    for step in 0..10u32 {
        if let Ok(r) = rx.try_recv() {
            return Wait::Reply(r);
        }
        if step < 6 {
            for _ in 0..(1u32 << step) {
                std::hint::spin_loop();
            }
        } else {
            std::thread::yield_now();
        }
    }
    let never = crossbeam_channel::never();
    let timer = match timeout {
        Some(t) => crossbeam_channel::after(t),
        None => never.clone(),
    };
    crossbeam_channel::select! {
        recv(rx) -> r => Wait::Reply(r.unwrap_or_else(|_| Err("the extension went away".into()))),
        recv(cancel.receiver()) -> _ => Wait::Cancelled,
        recv(timer) -> _ => Wait::TimedOut,
    }
}

/// Drops empty text blocks and makes unknown blocks visible; never empty.
fn normalise_content(content: Vec<ContentBlock>, extension: &str) -> Vec<ContentBlock> {
    let mut out: Vec<ContentBlock> = content
        .into_iter()
        .filter(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()))
        .map(|b| match b {
            ContentBlock::Unknown => ContentBlock::text(format!(
                "[unsupported content block from extension {extension}]"
            )),
            b => b,
        })
        .collect();
    if out.is_empty() {
        out.push(ContentBlock::text("(extension returned no content)"));
    }
    out
}

impl Shared {
    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn ext(&self, id: u64) -> Option<Arc<Ext>> {
        lock(&self.exts).iter().find(|e| e.ident.id == id).cloned()
    }

    fn emit(&self, event: Event) {
        self.sink.emit(event);
    }

    /// Emits an event an extension caused; until its `ext_loaded` is out it
    /// is held back and reported right after it, so the stream stays in
    /// load order whatever the timing.
    fn emit_from(&self, ext: &Ext, event: Event) {
        let mut held = lock(&ext.held);
        match held.as_mut() {
            Some(queue) => queue.push(event),
            None => self.sink.emit(event),
        }
    }

    /// Records a warning (or, with `conflict`, a refused registration) for
    /// doctor, and reports it now unless `ext_loaded` is still to come
    /// (which then reports it).
    fn record_warning(&self, ext: &Ext, message: String, conflict: bool) {
        let held = lock(&ext.held);
        let list = if conflict {
            &ext.conflicts
        } else {
            &ext.warnings
        };
        lock(list).push(message.clone());
        if held.is_none() {
            self.sink.emit(Event::ExtWarning {
                extension: ext.ident.name.clone(),
                message,
            });
        }
    }

    /// Resolves the executable, opens the log and starts the process.
    fn spawn(
        self: &Arc<Self>,
        order: usize,
        entry: &Entry,
        m: &Manifest,
    ) -> Result<Arc<Ext>, String> {
        let log = crate::paths::ext_log(&self.config.zut_home, &m.name);
        let ident = Identity {
            id: self.next_id(),
            order,
            name: m.name.clone(),
            dir: m.dir.clone(),
            source: entry.source,
            exec: m
                .exec
                .as_ref()
                .map(|e| e.configured().to_string())
                .unwrap_or_default(),
            language: m.language.clone(),
            log: log.clone(),
        };
        let fail = |what: String| format!("failed to start: {what}\n{}", ident.describe());
        let program = match &m.exec {
            Some(Exec::Relative { path, .. }) => {
                if !path.is_file() {
                    return Err(fail(format!(
                        "executable {} does not exist",
                        path.display()
                    )));
                }
                if !manifest::is_executable(path) {
                    return Err(fail(format!(
                        "executable {} is not executable (chmod +x it)",
                        path.display()
                    )));
                }
                path.clone()
            }
            Some(Exec::Launcher { configured }) => {
                manifest::find_on_path(configured, self.config.search_path.as_deref())
                    .map_err(fail)?
            }
            None => return Err(fail("no exec".into())),
        };
        let stderr = process::open_log(&log, &m.name, &m.version)
            .map_err(|e| fail(format!("cannot open log: {e}")))?;
        let spawned = process::spawn(&program, &m.args, &m.dir, stderr)
            .map_err(|e| fail(format!("spawn: {e}")))?;
        let dispatch: Arc<dyn Dispatch> = self.clone();
        let describe = ident.describe();
        let ext = Ext::start(
            ident,
            spawned,
            self.config.deadlines,
            dispatch,
            self.threads.clone(),
        )
        .map_err(|e| format!("failed to start: cannot start threads: {e}\n{describe}"))?;
        lock(&self.exts).push(ext.clone());
        lock(&self.started).push(ext.clone());
        Ok(ext)
    }

    /// Waits until every started extension is ready, failed, or past its
    /// deadline. Deadlines run concurrently: the total is the max, not the sum.
    fn await_handshakes(&self, loaded: &[Loaded], cancel: &CancelToken) {
        let d = self.config.deadlines;
        let start = Instant::now();
        // ext id -> (deadline, waiting for hello?)
        let mut waiting: HashMap<u64, (Instant, bool)> = loaded
            .iter()
            .filter_map(|l| match &l.outcome {
                Outcome::Started(e) => Some((e.ident.id, (start + d.hello, true))),
                _ => None,
            })
            .collect();
        while !waiting.is_empty() {
            let next = waiting.values().map(|(t, _)| *t).min().unwrap_or(start);
            crossbeam_channel::select! {
                recv(self.control_rx) -> msg => match msg {
                    Ok(Control::Hello { ext, result: Ok(()) }) => {
                        if let Some(w) = waiting.get_mut(&ext) {
                            *w = (Instant::now() + d.ready, false);
                        }
                    }
                    Ok(Control::Hello { ext, .. } | Control::Ready { ext } | Control::Exited { ext }) => {
                        waiting.remove(&ext);
                    }
                    Err(_) => break,
                },
                recv(cancel.receiver()) -> _ => {
                    for id in waiting.keys() {
                        if let Some(ext) = self.ext(*id) {
                            ext.disconnect("interrupted while loading", self, &ext);
                        }
                    }
                    return;
                }
                default(process::until(next)) => {}
            }
            let now = Instant::now();
            let expired: Vec<(u64, bool)> = waiting
                .iter()
                .filter(|(_, (t, _))| *t <= now)
                .map(|(id, (_, hello))| (*id, *hello))
                .collect();
            for (id, awaiting_hello) in expired {
                waiting.remove(&id);
                let Some(ext) = self.ext(id) else { continue };
                if awaiting_hello {
                    let why = format!("sent no hello within {} ms", d.hello.as_millis());
                    ext.disconnect(&why, self, &ext);
                } else if ext.set_phase(Phase::Ready { auto: true }) {
                    let msg = format!(
                        "sent no ready frame within {} ms; auto-readied",
                        d.ready.as_millis()
                    );
                    process::log_line(&ext.ident.log, &msg);
                    lock(&ext.warnings).push(msg);
                }
            }
        }
    }

    /// Commits buffered registrations in load order, then reports.
    fn commit_and_report(&self, loaded: &mut [Loaded]) {
        for l in loaded.iter() {
            let Outcome::Started(ext) = &l.outcome else {
                continue;
            };
            let staged = lock(&ext.staged).take().unwrap_or_default();
            if ext.connected() {
                for reg in staged {
                    self.apply_registration(ext, reg);
                }
            }
        }
        for l in loaded.iter_mut() {
            match &l.outcome {
                Outcome::Failed(message) => self.emit(Event::ExtError {
                    extension: l.entry.name(),
                    message: message.clone(),
                }),
                Outcome::Skipped if l.entry.source == discovery::Source::Flag => {
                    if let Status::Disabled(_) = l.entry.status {
                        let message =
                            "not loaded: it is disabled in its extension.json (\"enabled\": false)"
                                .to_string();
                        self.emit(Event::ExtWarning {
                            extension: l.entry.name(),
                            message,
                        });
                    }
                }
                Outcome::Started(ext) => {
                    if let Err(message) = self.report_loaded(&ext.clone()) {
                        l.outcome = Outcome::Failed(message);
                    }
                }
                Outcome::ThemeOnly => self.emit(Event::ExtLoaded {
                    extension: l.entry.name(),
                    version: l
                        .entry
                        .manifest()
                        .map(|m| m.version.clone())
                        .unwrap_or_default(),
                    commands: Vec::new(),
                    tools: Vec::new(),
                    source: l.entry.source.as_str().to_string(),
                }),
                Outcome::Skipped => {}
            }
        }
        lock(&self.exts).retain(|e| e.connected());
    }

    /// `ext_loaded`, then its warnings and conflicts, then whatever it sent
    /// while loading; from here on its events flow straight through. An
    /// extension that died while loading gets its `ext_error` instead (the
    /// full diagnostic is returned). The phase is read under the hold lock,
    /// so a death racing with this is reported exactly once, in order.
    fn report_loaded(&self, ext: &Arc<Ext>) -> Result<(), String> {
        let (commands, tools) = {
            let reg = lock(&self.registry);
            (
                reg.commands()
                    .filter(|c| c.ext == ext.ident.id)
                    .map(|c| c.name.clone())
                    .collect(),
                reg.tools()
                    .filter(|t| t.ext == ext.ident.id)
                    .map(|t| t.name.clone())
                    .collect(),
            )
        };
        let mut held = lock(&ext.held);
        if let Phase::Disconnected(reason) = ext.phase() {
            let message = format!("failed to load: {reason}\n{}", ext.ident.describe());
            self.sink.emit(Event::ExtError {
                extension: ext.ident.name.clone(),
                message: message.clone(),
            });
            return Err(message);
        }
        let name = ext.ident.name.clone();
        self.sink.emit(Event::ExtLoaded {
            extension: name.clone(),
            version: lock(&ext.version).clone(),
            commands,
            tools,
            source: ext.ident.source.as_str().to_string(),
        });
        let warnings: Vec<String> = lock(&ext.warnings)
            .iter()
            .chain(lock(&ext.conflicts).iter())
            .cloned()
            .collect();
        for message in warnings {
            self.sink.emit(Event::ExtWarning {
                extension: name.clone(),
                message,
            });
        }
        for event in held.take().unwrap_or_default() {
            self.sink.emit(event);
        }
        Ok(())
    }

    /// Applies a registration now; refusals go to the extension's log, its
    /// warnings (doctor) and, after loading, the event stream.
    fn apply_registration(&self, ext: &Arc<Ext>, reg: Registration) {
        let (id, name) = (ext.ident.id, ext.ident.name.clone());
        let result = {
            let mut r = lock(&self.registry);
            match reg {
                Registration::Command {
                    name: cmd,
                    description,
                } => r.add_command(CommandEntry {
                    name: cmd,
                    description,
                    ext: id,
                    extension: name.clone(),
                }),
                Registration::Tool {
                    name: tool,
                    description,
                    schema,
                    deferred,
                    interactive,
                } => r.add_tool(ToolEntry {
                    name: tool,
                    description,
                    schema,
                    deferred,
                    interactive,
                    ext: id,
                    extension: name.clone(),
                }),
            }
        };
        if let Err(reason) = result {
            process::log_line(&ext.ident.log, &reason);
            self.record_warning(ext, reason, true);
        }
    }

    fn register(&self, ext: &Arc<Ext>, reg: Registration) {
        {
            let mut staged = lock(&ext.staged);
            if let Some(v) = staged.as_mut() {
                v.push(reg);
                return;
            }
        }
        self.apply_registration(ext, reg);
    }

    /// A call was given up: withdraw its frame if still queued, allow a
    /// begun write to finish, else disconnect; tell the extension if it
    /// asked to know.
    fn abandon(&self, ext: &Arc<Ext>, id: u64, ticket: &ext::Ticket) {
        match ticket.withdraw(self.config.deadlines.torn_frame) {
            Withdrawal::Withdrawn => {}
            Withdrawal::Delivered => {
                if ext.tool_cancel.load(Ordering::SeqCst) {
                    let _ = ext.send(&HostFrame::ToolCancel { id: id.to_string() }, self, ext);
                }
            }
            Withdrawal::Torn => {
                let reason = format!(
                    "disconnected: a cancelled tool_call was still being written after {} ms (torn frame)",
                    self.config.deadlines.torn_frame.as_millis()
                );
                ext.disconnect(&reason, self, ext);
            }
        }
    }

    fn on_hello(
        &self,
        ext: &Arc<Ext>,
        protocol_version: u32,
        name: String,
        version: String,
        caps: Vec<String>,
    ) {
        let fail = |why: String| ext.disconnect(&why, self, ext);
        if protocol_version != PROTOCOL_VERSION {
            return fail(format!("unsupported protocol version {protocol_version} in hello (zut speaks {PROTOCOL_VERSION})"));
        }
        if name != ext.ident.name {
            return fail(format!(
                "hello names the extension {name:?} but its extension.json says {:?}",
                ext.ident.name
            ));
        }
        *lock(&ext.version) = version;
        ext.tool_cancel.store(
            caps.iter().any(|c| c == zut_ext::wire::CAP_TOOL_CANCEL),
            Ordering::SeqCst,
        );
        let ack = HostFrame::HelloAck {
            protocol_version: PROTOCOL_VERSION,
            zut_version: ZUT_VERSION.to_string(),
            provider: self.config.provider.clone(),
            model: self.config.model.clone(),
            cwd: self.config.cwd.display().to_string(),
            extension_dir: ext.ident.dir.display().to_string(),
            data_dir: ext.ident.dir.display().to_string(),
            session: lock(&self.session).clone(),
        };
        if ext.send(&ack, self, ext).is_ok() && ext.set_phase(Phase::Registering) {
            let _ = self.control_tx.send(Control::Hello {
                ext: ext.ident.id,
                result: Ok(()),
            });
        }
    }

    fn on_subscribe(&self, ext: &Arc<Ext>, events: Vec<String>, intercept: Vec<String>) {
        for e in events {
            if !KNOWN_EVENTS.contains(&e.as_str()) {
                process::log_line(
                    &ext.ident.log,
                    &format!("subscribe: unknown event {e:?} (kept, never sent)"),
                );
            }
            lock(&ext.events).insert(e);
        }
        for e in intercept {
            if INTERCEPTABLE_EVENTS.contains(&e.as_str()) {
                lock(&ext.intercepts).insert(e);
            } else {
                process::log_line(
                    &ext.ident.log,
                    &format!("subscribe: event {e:?} cannot be intercepted (ignored)"),
                );
            }
        }
    }

    /// Counts one stray line of `kind`; the first of each kind becomes a
    /// warning. Returns how many of that kind were seen.
    fn count_noise(&self, ext: &Arc<Ext>, kind: &'static str, warning: String) -> u64 {
        let seen = {
            let mut noise = lock(&ext.noise);
            let n = noise.counts.entry(kind).or_insert(0);
            *n += 1;
            *n
        };
        if seen == 1 {
            self.record_warning(ext, warning, false);
        }
        seen
    }
}

/// Stray stdout lines of one kind written to the extension log before only
/// counting the rest.
const NOISE_LOGGED: u64 = 20;

impl Dispatch for Shared {
    fn frame(&self, ext: &Arc<Ext>, frame: ExtFrame) {
        let name = || ext.ident.name.clone();
        if ext.phase() == Phase::AwaitingHello {
            return match frame {
                ExtFrame::Hello { protocol_version, name, version, capabilities } => {
                    self.on_hello(ext, protocol_version, name, version, capabilities)
                }
                other => ext.disconnect(
                    &format!("protocol violation: sent a {} frame before hello (hello must be the first frame)", other.type_name()),
                    self,
                    ext,
                ),
            };
        }
        match frame {
            ExtFrame::Hello { .. } => process::log_line(&ext.ident.log, "duplicate hello ignored"),
            ExtFrame::RegisterCommand { name, description } => {
                self.register(ext, Registration::Command { name, description })
            }
            ExtFrame::RegisterTool {
                name,
                description,
                schema,
                deferred,
                interactive,
            } => self.register(
                ext,
                Registration::Tool {
                    name,
                    description,
                    schema: schema.unwrap_or(Value::Null),
                    deferred,
                    interactive,
                },
            ),
            ExtFrame::Ready => {
                if ext.phase() == Phase::Registering && ext.set_phase(Phase::Ready { auto: false })
                {
                    let _ = self.control_tx.send(Control::Ready { ext: ext.ident.id });
                }
            }
            ExtFrame::Subscribe { events, intercept } => self.on_subscribe(ext, events, intercept),
            f @ (ExtFrame::ToolResult { .. }
            | ExtFrame::CommandResponse { .. }
            | ExtFrame::EventInterceptResponse { .. }) => route_reply(ext, f),
            ExtFrame::Notify { level, message } => {
                if !message.trim().is_empty() {
                    self.emit_from(
                        ext,
                        Event::ExtNotify {
                            extension: name(),
                            level: normalise_level(&level),
                            message,
                        },
                    )
                }
            }
            ExtFrame::Status { key, level, text } => self.emit_from(
                ext,
                Event::ExtStatus {
                    extension: name(),
                    key,
                    level: normalise_level(&level),
                    text,
                },
            ),
            ExtFrame::Widget {
                id, title, lines, ..
            } => self.emit_from(
                ext,
                Event::ExtWidget {
                    extension: name(),
                    id,
                    position: "above_input".into(),
                    title,
                    lines,
                },
            ),
            ExtFrame::WidgetClear { id } => self.emit_from(
                ext,
                Event::ExtWidgetClear {
                    extension: name(),
                    id,
                },
            ),
            ExtFrame::Alert { kind, reason } => self.emit_from(
                ext,
                Event::ExtAlert {
                    extension: name(),
                    kind,
                    reason,
                },
            ),
            ExtFrame::ClearNotes => self.emit_from(ext, Event::ExtClearNotes { extension: name() }),
            ExtFrame::Submit { text } => {
                let text = text.trim();
                if !text.is_empty() {
                    self.emit_from(
                        ext,
                        Event::ExtSubmit {
                            extension: name(),
                            text: text.to_string(),
                        },
                    )
                }
            }
            ExtFrame::SubmitSlash { text } => {
                let text = text.trim();
                if text.starts_with('/') {
                    self.emit_from(
                        ext,
                        Event::ExtSubmitSlash {
                            extension: name(),
                            text: text.to_string(),
                        },
                    )
                } else {
                    process::log_line(
                        &ext.ident.log,
                        "submit_slash refused: text does not start with '/'",
                    );
                }
            }
            ExtFrame::OpenPanel { panel } => self.emit_from(
                ext,
                Event::ExtOpenPanel {
                    extension: name(),
                    panel,
                },
            ),
            ExtFrame::PanelRender {
                panel_id,
                title,
                lines,
                footer,
            } => self.emit_from(
                ext,
                Event::ExtPanelRender {
                    extension: name(),
                    panel: Panel {
                        id: panel_id,
                        title,
                        lines,
                        footer,
                    },
                },
            ),
            ExtFrame::PanelClose { panel_id } => self.emit_from(
                ext,
                Event::ExtPanelClose {
                    extension: name(),
                    panel_id,
                },
            ),
            ExtFrame::ShutdownAck => ext.shutdown_acked.store(true, Ordering::SeqCst),
            // The reader logs unknown frames with their type and never
            // dispatches them after hello.
            ExtFrame::Unknown => {}
        }
    }

    fn malformed(&self, ext: &Arc<Ext>, error: DecodeError, preview: String) {
        let (kind, warning) = match &error {
            DecodeError::BadFrame { frame_type, error } if ext.phase() == Phase::AwaitingHello => {
                let why = format!("protocol violation: sent a malformed {frame_type} frame before hello: {error}");
                return ext.disconnect(&why, self, ext);
            }
            DecodeError::BadFrame { frame_type, error } => {
                ("malformed frame", format!("malformed {frame_type} frame skipped: {error}"))
            }
            DecodeError::InvalidUtf8 => (
                "invalid utf-8",
                "wrote a stdout line that is not valid UTF-8 (skipped; stdout is reserved for protocol frames)".into(),
            ),
            DecodeError::NotAnObject(_) => (
                "not a frame",
                format!("wrote a stdout line that is not a JSON frame (skipped; stdout is reserved for protocol frames): {preview}"),
            ),
        };
        let seen = self.count_noise(ext, kind, warning);
        // A flood must not fill the disk: the first lines are logged, the
        // rest only counted (doctor shows the count).
        if seen <= NOISE_LOGGED {
            process::log_line(
                &ext.ident.log,
                &format!("stdout line skipped ({error}): {preview}"),
            );
        }
        if seen == NOISE_LOGGED {
            process::log_line(
                &ext.ident.log,
                &format!("further {kind} lines are counted, not logged"),
            );
        }
    }

    fn disconnected(&self, ext: &Arc<Ext>, reason: &str) {
        lock(&self.registry).remove_extension(ext.ident.id, reason);
        // Until `ext_loaded` is out, the loader reports the failure.
        let loading = lock(&ext.held).is_some();
        if loading {
            let _ = self.control_tx.send(Control::Hello {
                ext: ext.ident.id,
                result: Err(reason.to_string()),
            });
        } else if !ext.closing() {
            self.emit(Event::ExtError {
                extension: ext.ident.name.clone(),
                message: reason.to_string(),
            });
            self.emit(Event::ExtChromeClear {
                extension: ext.ident.name.clone(),
            });
        }
    }

    fn exited(&self, ext: &Arc<Ext>) {
        let _ = self.control_tx.send(Control::Exited { ext: ext.ident.id });
    }
}

/// Hands a reply frame to the call waiting for it; a reply nobody waits
/// for (late, cancelled, duplicate, unknown) is ignored.
fn route_reply(ext: &Arc<Ext>, frame: ExtFrame) {
    let (kind, id) = match &frame {
        ExtFrame::ToolResult { id, .. } => (CallKind::Tool, id),
        ExtFrame::CommandResponse { id, .. } => (CallKind::Command, id),
        ExtFrame::EventInterceptResponse { id, .. } => (CallKind::Intercept, id),
        _ => return,
    };
    let parsed = id.parse::<u64>().ok();
    let type_name = frame.type_name();
    if let Some(waiting) = parsed {
        if ext.resolve(waiting, kind, frame) {
            return;
        }
    }
    // Authors want to know: it usually means a reply came after the
    // deadline or after a tool_cancel.
    let id = parsed.map_or_else(|| "(not a host id)".to_string(), |i| i.to_string());
    process::log_line(
        &ext.ident.log,
        &format!(
            "{type_name} for id {id} ignored: nobody waits for it (late, cancelled or unknown)"
        ),
    );
}

/// `info`, `success`, `warn`, `error`; anything else reads as `info`.
fn normalise_level(level: &str) -> String {
    match level.trim().to_ascii_lowercase().as_str() {
        l @ ("success" | "warn" | "error") => l.to_string(),
        "warning" => "warn".to_string(),
        _ => "info".to_string(),
    }
}

/// The outcome of the `tool_call` interceptor chain.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallVerdict {
    /// `(extension, reason)` of the first interceptor that blocked.
    pub blocked: Option<(String, String)>,
    /// The arguments after every rewrite.
    pub args: Value,
}

/// The outcome of the `turn_start` interceptor chain.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnStartVerdict {
    pub blocked: Option<(String, String)>,
    /// Hidden context for this request only, already bounded.
    pub context: Option<String>,
}

/// The outcome of the `assistant_message` interceptor chain.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantVerdict {
    pub blocked: Option<(String, String)>,
    /// What the user sees.
    pub text: String,
}

/// Upper bound of the hidden context one request can carry.
pub const CONTEXT_CAP: usize = 16 * 1024;
const CONTEXT_TRUNCATED: &str = "\n[extension context truncated]";

impl Host {
    /// Whether any extension subscribed to `event` (cheap; lets the agent
    /// skip building payloads nobody reads).
    pub fn subscribed(&self, event: &str) -> bool {
        lock(&self.shared.exts)
            .iter()
            .any(|e| lock(&e.events).contains(event))
    }

    /// Sends a one-way lifecycle event to its subscribers, in load order.
    /// Each extension's frames stay ordered (one queue per extension).
    pub fn emit_event(&self, payload: &zut_ext::wire::EventPayload) {
        let targets: Vec<Arc<Ext>> = lock(&self.shared.exts)
            .iter()
            .filter(|e| lock(&e.events).contains(&payload.event))
            .cloned()
            .collect();
        if targets.is_empty() {
            return;
        }
        let frame = HostFrame::Event(payload.clone());
        for ext in targets {
            let _ = ext.send(&frame, &*self.shared, &ext);
        }
    }

    /// Consults every `event` interceptor serially in load order; `each`
    /// gets the extension and its response and returns false to stop the
    /// chain. A missing response (deadline, disconnect) counts as allow.
    fn intercept_chain(
        &self,
        event: &str,
        payload: impl Fn() -> zut_ext::wire::EventPayload,
        cancel: &CancelToken,
        mut each: impl FnMut(&Arc<Ext>, ExtFrame) -> bool,
    ) {
        let chain: Vec<Arc<Ext>> = lock(&self.shared.exts)
            .iter()
            .filter(|e| lock(&e.intercepts).contains(event))
            .cloned()
            .collect();
        let timeout = self.shared.config.deadlines.intercept;
        for ext in chain {
            if cancel.is_cancelled() {
                return;
            }
            let id = self.shared.next_id();
            let rx = ext.expect(id, CallKind::Intercept);
            let frame = HostFrame::EventIntercept {
                id: id.to_string(),
                payload: payload(),
            };
            if ext.send(&frame, &*self.shared, &ext).is_err() {
                ext.forget(id);
                continue;
            }
            let reply = wait_reply(&rx, Some(timeout), cancel);
            ext.forget(id);
            match reply {
                Wait::Reply(Ok(frame)) => {
                    if !each(&ext, frame) {
                        return;
                    }
                }
                Wait::TimedOut => process::log_line(
                    &ext.ident.log,
                    &format!(
                        "intercept {event} timed out after {} ms; allowing",
                        timeout.as_millis()
                    ),
                ),
                Wait::Reply(Err(_)) | Wait::Cancelled => {}
            }
        }
    }

    /// Runs the `tool_call` interceptors: the first block wins; each
    /// rewrite must be a JSON object and feeds the next interceptor.
    pub fn intercept_tool_call(
        &self,
        tool_id: &str,
        tool_name: &str,
        args: Value,
        cancel: &CancelToken,
    ) -> ToolCallVerdict {
        let current = std::cell::RefCell::new(args);
        let mut blocked = None;
        self.intercept_chain(
            "tool_call",
            || zut_ext::wire::EventPayload {
                tool_id: tool_id.to_string(),
                tool_name: tool_name.to_string(),
                tool_args: Some(current.borrow().clone()),
                ..zut_ext::wire::EventPayload::named("tool_call")
            },
            cancel,
            |ext, frame| {
                let ExtFrame::EventInterceptResponse { block, reason, modified_args, .. } = frame else { return true };
                if block {
                    let reason = if reason.trim().is_empty() { "tool call refused by extension guard".into() } else { reason };
                    blocked = Some((ext.ident.name.clone(), reason));
                    return false;
                }
                match modified_args {
                    Some(v @ Value::Object(_)) => *current.borrow_mut() = v,
                    Some(Value::Null) | None => {}
                    Some(other) => {
                        let msg = format!(
                            "modified_args for {tool_name} ignored: it must be a JSON object, got {}",
                            json_kind(&other)
                        );
                        process::log_line(&ext.ident.log, &msg);
                    }
                }
                true
            },
        );
        ToolCallVerdict {
            blocked,
            args: current.into_inner(),
        }
    }

    /// Runs the `turn_start` interceptors: the first block wins; contexts
    /// are labelled with their extension, joined and bounded to [`CONTEXT_CAP`].
    pub fn intercept_turn_start(&self, step: u32, cancel: &CancelToken) -> TurnStartVerdict {
        let mut blocked = None;
        let mut parts: Vec<String> = Vec::new();
        self.intercept_chain(
            "turn_start",
            || zut_ext::wire::EventPayload {
                step: u64::from(step),
                ..zut_ext::wire::EventPayload::named("turn_start")
            },
            cancel,
            |ext, frame| {
                let ExtFrame::EventInterceptResponse {
                    block,
                    reason,
                    context,
                    ..
                } = frame
                else {
                    return true;
                };
                if block {
                    let reason = if reason.trim().is_empty() {
                        "turn blocked by extension guard".into()
                    } else {
                        reason
                    };
                    blocked = Some((ext.ident.name.clone(), reason));
                    return false;
                }
                if !context.trim().is_empty() {
                    parts.push(format!("[{}]\n{}", ext.ident.name, context.trim()));
                }
                true
            },
        );
        if blocked.is_some() {
            return TurnStartVerdict {
                blocked,
                context: None,
            };
        }
        let context = (!parts.is_empty()).then(|| bound_context(parts.join("\n\n")));
        TurnStartVerdict {
            blocked: None,
            context,
        }
    }

    /// Runs the `assistant_message` interceptors: the first block wins;
    /// non-empty replacements chain.
    pub fn intercept_assistant_message(
        &self,
        text: &str,
        cancel: &CancelToken,
    ) -> AssistantVerdict {
        let current = std::cell::RefCell::new(text.to_string());
        let mut blocked = None;
        if !text.is_empty() {
            self.intercept_chain(
                "assistant_message",
                || zut_ext::wire::EventPayload {
                    text: current.borrow().clone(),
                    ..zut_ext::wire::EventPayload::named("assistant_message")
                },
                cancel,
                |ext, frame| {
                    let ExtFrame::EventInterceptResponse {
                        block,
                        reason,
                        replace_text,
                        ..
                    } = frame
                    else {
                        return true;
                    };
                    if block {
                        blocked = Some((ext.ident.name.clone(), reason));
                        return false;
                    }
                    if !replace_text.is_empty() {
                        *current.borrow_mut() = replace_text;
                    }
                    true
                },
            );
        }
        AssistantVerdict {
            blocked,
            text: current.into_inner(),
        }
    }
}

/// Cuts `text` to [`CONTEXT_CAP`] bytes on a character boundary, marking it.
pub fn bound_context(text: String) -> String {
    if text.len() <= CONTEXT_CAP {
        return text;
    }
    let mut cut = CONTEXT_CAP - CONTEXT_TRUNCATED.len();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{CONTEXT_TRUNCATED}", text[..cut].trim_end())
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_is_bounded_on_a_char_boundary() {
        let long = "é".repeat(CONTEXT_CAP);
        let b = bound_context(long);
        assert!(b.len() <= CONTEXT_CAP);
        assert!(b.ends_with(CONTEXT_TRUNCATED));
        assert_eq!(bound_context("short".into()), "short");
    }

    #[test]
    fn content_is_normalised() {
        let out = normalise_content(vec![ContentBlock::text(""), ContentBlock::Unknown], "x");
        assert_eq!(
            out,
            vec![ContentBlock::text(
                "[unsupported content block from extension x]"
            )]
        );
        assert_eq!(
            normalise_content(vec![], "x"),
            vec![ContentBlock::text("(extension returned no content)")]
        );
    }
}
