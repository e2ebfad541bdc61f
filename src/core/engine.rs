//! The engine behind every front end: the [`Core`] implementation.
//!
//! It owns the host handle and a worker thread that owns the agent. Every
//! request of a front end becomes a `Job` on the worker's queue (prompts
//! queue behind a running turn, in order); the worker runs one job at a
//! time and reports everything on the front end's [`Event`] channel, ending
//! each prompt, command or `!command` with `done`. Abort cancels the running job's
//! token; confirmations wait on the worker for [`Core::confirm`].
//!
//! Nothing here runs on a front end's thread except the cheap enqueueing
//! in the [`Core`] methods.

use crate::agent::{self, Agent, ConfirmRequest, Confirmer, Decision, Outcome};
use crate::cancel::{self, CancelToken, Canceller};
use crate::commands;
use crate::core::frontend::{
    Change, CommandSummary, Core, CoreState, ExtensionSummary, Submitted, ToolSummary,
};
use crate::events::{Event, EventSink};
use crate::host::{CommandError, HostHandle, Phase};
use crate::provider::Message;
use crate::session::{Session, Store};
use crossbeam_channel::{Receiver, Sender};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod now;

/// What the engine needs besides the host.
pub struct EngineConfig {
    pub provider: crate::provider::Settings,
    pub cwd: PathBuf,
    pub zut_home: PathBuf,
    pub max_steps: u32,
    pub yolo: bool,
    /// A person (TUI) or a client (RPC) answers confirmations; otherwise
    /// bash/write/edit without `--yolo` are refused.
    pub can_confirm: bool,
    /// The project's session store; `None` with `--no-session`.
    pub store: Option<Store>,
    /// The session to start with (already opened or created).
    pub session: Option<Session>,
    /// Claude Code hooks (zut-hooks(7)).
    pub hooks: Arc<crate::hooks::Hooks>,
    /// The `SessionStart` hooks' `source` for the run's first session:
    /// `startup`, or `resume` for `--continue` / `--session`.
    pub start_source: &'static str,
    /// The front end, for which built-in commands run ([`commands`]).
    pub front: commands::Mode,
    /// The run's MCP servers.
    pub mcp: Arc<crate::mcp::hub::Hub>,
    /// The extensions' load, when the front end did not wait for it (the
    /// terminal): the worker waits for it before its first job, then
    /// announces the session to the extensions.
    pub loading: Option<crate::host::Loading>,
}

/// One unit of work for the worker.
enum Job {
    Prompt(String),
    Command(String),
    /// `!command` from the terminal ([`Agent::run_shell`]).
    Shell(String),
    Change(Change),
}

/// State the front end's thread and the worker share (a leaf lock: never
/// held across a wait).
#[derive(Default)]
struct Shared {
    busy: bool,
    /// Jobs submitted and not started.
    pending: usize,
    /// Sequence of the last job submitted; jobs at or below `dropped` are
    /// skipped (abort with `drop_queued`).
    seq: u64,
    dropped: u64,
    /// Prompt jobs submitted and not started, oldest first, and the ones
    /// taken back (skipped when their turn comes).
    queued_prompts: Vec<u64>,
    withdrawn: Vec<u64>,
    current: Option<Canceller>,
    model: String,
    provider: String,
    /// The active session's identity, for `state()`.
    session: Option<crate::core::frontend::SessionSummary>,
    /// The transcript of the active branch, for `state()`: the same list
    /// the session and the agent hold, not a copy.
    messages: crate::transcript::Transcript,
    /// Sequence of the last job finished (or skipped).
    finished: u64,
    /// [`Core::settled`] receivers, each with the job it waits for.
    settling: Vec<(u64, Sender<()>)>,
    /// This run's provider usage, added up from the agent's `usage` events.
    usage: crate::provider::usage::Totals,
    /// While the extensions' first load runs: those it starts. `state()`
    /// names them without asking the dispatcher, which is busy starting
    /// them; the worker clears it once the load is committed.
    starting: Option<crate::host::StartingNames>,
}

/// Where the agent's messages and extension states go: the active session
/// (if any) and the copy `state()` reads.
struct Recorder {
    session: Arc<Mutex<Option<Session>>>,
    shared: Arc<Mutex<Shared>>,
    /// For an automatic compaction's `session` event and the extensions'
    /// `session_compacted`.
    host: HostHandle,
    events: Sender<Event>,
    /// Config `auto_compact` (default true).
    auto_compact: bool,
}

impl agent::Observer for Recorder {
    // The agent appends the message to the transcript it shares with the
    // session and `state()`; only the row is left to write.
    fn message(&mut self, message: &Message) {
        if let Some(s) = lock(&self.session).as_mut() {
            if let Err(e) = s.record_message(message) {
                log::warn!("session: {e}");
            }
        }
    }

    fn state(&mut self, extension: &str, state: &serde_json::Value) -> Result<(), String> {
        match lock(&self.session).as_mut() {
            // No session: states are not kept (nothing to keep them in).
            None => Ok(()),
            Some(s) => match s.set_state(extension, state.clone()) {
                Ok(()) => Ok(()),
                Err(crate::session::StateError::Write(e)) => {
                    log::warn!("session: {e}");
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            },
        }
    }

    fn compact_point(&self) -> Option<usize> {
        if !self.auto_compact {
            return None;
        }
        lock(&self.session).as_ref()?.compact_point()
    }

    fn compact(
        &mut self,
        summary: &str,
        reason: &str,
    ) -> Result<crate::transcript::Transcript, String> {
        let (info, transcript, states) = {
            let mut guard = lock(&self.session);
            let s = guard.as_mut().ok_or("no session to compact")?;
            s.compact_with_reason(summary.to_string(), reason)
                .map_err(|e| e.to_string())?;
            (s.info(), s.transcript(), s.states().clone())
        };
        lock(&self.shared).messages = transcript.clone();
        let _ = self.events.send(session_event(&info, "compact"));
        self.host.set_session_with_reason(
            Some(info),
            Some("session_compacted"),
            reason,
            states.into_iter().collect(),
        );
        Ok(transcript)
    }
}

/// A session as front ends list it.
fn summary_of(s: &Session) -> crate::core::frontend::SessionSummary {
    crate::core::frontend::SessionSummary {
        id: s.id().to_string(),
        parent_id: s.parent_id().map(str::to_string),
        path: s.path().display().to_string(),
        fork_point: s.fork_point(),
        title: s
            .messages()
            .iter()
            .find_map(crate::session::prompt_text)
            .map(|t| crate::session::one_line(&t, 60))
            .unwrap_or_default(),
        updated: String::new(),
    }
}

/// Routes confirmation answers to the waiting worker.
///
/// The agent announces a confirmation before it starts waiting, so a fast
/// client (RPC) can answer before the worker registered its slot: such an
/// answer is kept in `early` and taken when the wait begins. Lock order:
/// `waiting`, then `early`.
#[derive(Default)]
struct Confirms {
    waiting: Mutex<HashMap<u64, Sender<Decision>>>,
    early: Mutex<HashMap<u64, Decision>>,
}

impl Confirmer for Confirms {
    fn confirm(&self, req: &ConfirmRequest, cancel: &CancelToken) -> Decision {
        let (tx, rx) = crossbeam_channel::bounded(1);
        {
            let mut waiting = lock(&self.waiting);
            if let Some(d) = lock(&self.early).remove(&req.request_id) {
                return d;
            }
            waiting.insert(req.request_id, tx);
        }
        let d = crossbeam_channel::select! {
            recv(rx) -> d => d.unwrap_or(Decision::Deny),
            recv(cancel.receiver()) -> _ => Decision::Deny,
        };
        lock(&self.waiting).remove(&req.request_id);
        d
    }
}

/// A tool list and the host view it was built from.
/// The host view and MCP tool generation a tool list was built from.
type ToolsCache = (Arc<crate::host::View>, u64, Arc<[ToolSummary]>);

/// The engine: a [`Core`] over a host handle and a worker thread.
pub struct Engine {
    jobs: Mutex<Option<Sender<(u64, Job)>>>,
    shared: Arc<Mutex<Shared>>,
    host: HostHandle,
    events: Sender<Event>,
    confirms: Arc<Confirms>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Cancelled at shutdown: ends a load the worker still waits for.
    stopping: cancel::Canceller,
    /// Disconnected when the worker thread has ended.
    worker_ended: Receiver<()>,
    store: Option<Store>,
    /// The active session (the worker's), discarded at shutdown when
    /// nothing was recorded in it.
    session: Arc<Mutex<Option<Session>>>,
    /// The last tool list and the host view it was built from.
    tools_cache: Mutex<Option<ToolsCache>>,
    /// For the `SessionEnd` hooks at shutdown, and their `reason`.
    hooks: Arc<crate::hooks::Hooks>,
    end_reason: &'static str,
    /// Stopped with the host.
    mcp: Arc<crate::mcp::hub::Hub>,
}

/// The longest [`Core::state`] waits for the dispatcher's extension
/// report before it answers with the last one.
const STATE_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sends agent events into the front end's channel.
struct ChannelSink(Sender<Event>, Arc<Mutex<Shared>>);

impl EventSink for ChannelSink {
    fn emit(&self, event: Event) {
        crate::provider::usage::count(&event, &mut lock(&self.1).usage);
        let _ = self.0.send(event);
    }
}

impl Engine {
    /// Starts the worker. The provider is created lazily, on the first
    /// request that needs it, so a missing key only fails that request.
    pub fn start(host: HostHandle, events: Sender<Event>, config: EngineConfig) -> Arc<Engine> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let shared = Arc::new(Mutex::new(Shared {
            model: host.config().model.clone(),
            provider: host.config().provider.clone(),
            starting: config.loading.as_ref().map(|l| l.starting()),
            ..Shared::default()
        }));
        let confirms = Arc::new(Confirms::default());
        let mut config = config;
        let session = Arc::new(Mutex::new(config.session.take()));
        if let Some(s) = lock(&session).as_ref() {
            let mut sh = lock(&shared);
            sh.session = Some(summary_of(s));
            sh.messages = s.transcript();
        }
        let store = config.store.clone();
        crate::hooks::announce(&config.hooks, lock(&session).as_ref(), &events);
        let hooks = config.hooks.clone();
        // Claude Code's reasons: leaving the terminal is the user ending
        // the prompt loop; every other end is "other".
        let end_reason = match config.front {
            commands::Mode::Terminal => "prompt_input_exit",
            _ => "other",
        };
        let (ended_tx, worker_ended) = crossbeam_channel::bounded::<()>(0);
        let (stopping, stopped) = cancel::pair();
        let engine = Arc::new(Engine {
            stopping,
            jobs: Mutex::new(Some(tx)),
            shared: shared.clone(),
            host: host.clone(),
            events: events.clone(),
            confirms: confirms.clone(),
            worker: Mutex::new(None),
            worker_ended,
            store,
            session: session.clone(),
            tools_cache: Mutex::new(None),
            hooks,
            end_reason,
            mcp: config.mcp.clone(),
        });
        let mut worker = Worker {
            host,
            events,
            config,
            shared,
            confirms,
            agent: None,
            session,
            next_context: Vec::new(),
            stopped,
        };
        let handle = std::thread::Builder::new()
            .name("zut-agent".into())
            .spawn(move || {
                let _ended = ended_tx;
                worker.run(rx)
            });
        match handle {
            Ok(h) => *lock(&engine.worker) = Some(h),
            Err(e) => log::error!("cannot start the agent thread: {e}"),
        }
        engine
    }

    fn submit(&self, job: Job) -> Submitted {
        let mut s = lock(&self.shared);
        let position = s.pending + usize::from(s.busy);
        s.pending += 1;
        s.seq += 1;
        let seq = s.seq;
        if matches!(job, Job::Prompt(_)) {
            s.queued_prompts.push(seq);
        }
        drop(s);
        if let Some(tx) = lock(&self.jobs).as_ref() {
            let _ = tx.send((seq, job));
        }
        if position == 0 {
            Submitted::Started
        } else {
            Submitted::Queued { position }
        }
    }

    /// The host this engine drives.
    pub fn host(&self) -> &HostHandle {
        &self.host
    }
}

impl Core for Engine {
    fn prompt(&self, text: String) -> Submitted {
        let r = self.submit(Job::Prompt(text.clone()));
        if let Submitted::Queued { position } = r {
            let _ = self.events.send(Event::Queued { text, position });
        }
        r
    }

    fn command(&self, line: String) -> Submitted {
        self.submit(Job::Command(line))
    }

    fn shell(&self, command: String) -> Submitted {
        self.submit(Job::Shell(command))
    }

    fn abort(&self, drop_queued: bool) {
        let mut s = lock(&self.shared);
        if drop_queued {
            s.dropped = s.seq;
            s.queued_prompts.clear();
        }
        if let Some(c) = s.current.as_ref() {
            c.cancel();
        }
    }

    fn confirm(&self, request_id: u64, decision: Decision) {
        let mut waiting = lock(&self.confirms.waiting);
        match waiting.remove(&request_id) {
            Some(tx) => {
                let _ = tx.send(decision);
            }
            // Announced, not yet waited for: the worker takes it from here.
            None => {
                lock(&self.confirms.early).insert(request_id, decision);
            }
        }
    }

    fn panel_key(&self, extension: &str, panel_id: &str, key: &str, text: Option<String>) {
        self.host.panel_key(extension, panel_id, key, text);
    }

    fn panel_close(&self, extension: &str, panel_id: &str) {
        self.host.panel_close(extension, panel_id);
    }

    fn change(&self, change: Change) {
        self.submit(Job::Change(change));
    }

    fn state(&self) -> CoreState {
        let s = lock(&self.shared);
        let mut state = CoreState {
            provider: s.provider.clone(),
            model: s.model.clone(),
            busy: s.busy,
            queued: s.pending,
            session: s.session.clone(),
            messages: s.messages.clone(),
            usage: s.usage,
            ..CoreState::default()
        };
        drop(s);
        if let Some(skills) = self.host.view().skills.clone() {
            state.skills = skills
                .skills
                .iter()
                .map(|s| crate::core::frontend::SkillSummary {
                    name: s.name.clone(),
                    description: s.description.clone(),
                    source: s.source.clone(),
                })
                .collect();
        }
        state.commands = self.commands();
        state.tools = self.tools().to_vec();
        let starting = lock(&self.shared).starting.clone();
        state.extensions = match starting {
            Some(starting) => starting
                .get()
                .into_iter()
                .map(|e| ExtensionSummary {
                    name: e.name,
                    version: e.version,
                    source: e.source.to_string(),
                    starting: true,
                    ..ExtensionSummary::default()
                })
                .collect(),
            // Bounded: a dispatcher busy past the deadline leaves the last
            // report it gave, never a front end waiting.
            None => self
                .host
                .all_extensions_within(STATE_WAIT)
                .into_iter()
                .map(|e| ExtensionSummary {
                    running: matches!(e.phase, Phase::Ready { .. } | Phase::Registering),
                    starting: matches!(e.phase, Phase::AwaitingHello | Phase::Registering)
                        && e.error.is_none(),
                    error: match &e.phase {
                        Phase::Disconnected(r) if !r.is_empty() => Some(r.clone()),
                        _ => e.error.clone(),
                    },
                    name: e.name,
                    version: e.version,
                    source: e.source,
                    commands: e.commands,
                    tools: e.tools,
                })
                .collect(),
        };
        state
            .extensions
            .extend(self.mcp.status().into_iter().map(|s| ExtensionSummary {
                name: crate::mcp::hub::participant(&s.name),
                version: s.version,
                source: "mcp".into(),
                running: s.state == "ready",
                starting: s.state == "starting",
                commands: Vec::new(),
                tools: s.tools,
                error: (!s.message.is_empty()).then_some(s.message),
            }));
        state
    }

    fn settled(&self) -> Receiver<()> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let mut s = lock(&self.shared);
        if s.finished >= s.seq {
            let _ = tx.send(());
        } else {
            let seq = s.seq;
            s.settling.push((seq, tx));
        }
        rx
    }

    fn list_sessions(&self) {
        // On a thread of its own: reading every session file must neither
        // hold up the front end nor wait behind a running turn.
        let Some(store) = self.store.clone() else {
            let _ = self.events.send(Event::Sessions {
                sessions: Vec::new(),
            });
            return;
        };
        let events = self.events.clone();
        let spawned = std::thread::Builder::new()
            .name("zut-sessions".into())
            .spawn(move || {
                let sessions = store
                    .list()
                    .into_iter()
                    .map(|s| crate::core::frontend::SessionSummary {
                        id: s.id,
                        parent_id: s.parent_id,
                        path: s.path.display().to_string(),
                        fork_point: s.fork_point,
                        title: s.title,
                        updated: s.updated,
                    })
                    .collect();
                let _ = events.send(Event::Sessions { sessions });
            });
        if let Err(e) = spawned {
            log::error!("cannot start the session lister: {e}");
        }
    }

    fn commands(&self) -> Vec<CommandSummary> {
        self.host
            .view()
            .registry
            .commands()
            .map(|c| CommandSummary {
                name: c.name.clone(),
                description: c.description.clone(),
                extension: c.extension.clone(),
            })
            .collect()
    }

    fn tools(&self) -> Arc<[ToolSummary]> {
        // The list changes only when the host publishes a new view (a load,
        // a reload, an extension gone); until then the same one serves.
        let view = self.host.view();
        let mcp = self.mcp.generation();
        let mut cache = lock(&self.tools_cache);
        if let Some((seen, gen, tools)) = cache.as_ref() {
            if Arc::ptr_eq(seen, &view) && *gen == mcp {
                return tools.clone();
            }
        }
        // The built-in definitions never change; building their schemas on
        // every call would cost more than the rest of the list.
        static BUILTIN: std::sync::OnceLock<Vec<ToolSummary>> = std::sync::OnceLock::new();
        let builtin = BUILTIN.get_or_init(|| {
            crate::agent::tools::definitions()
                .into_iter()
                .map(|t| ToolSummary {
                    name: t.name,
                    description: t.description,
                    extension: None,
                })
                .collect()
        });
        let tools: Arc<[ToolSummary]> = builtin
            .iter()
            .cloned()
            .chain(view.registry.tools().map(|t| ToolSummary {
                name: t.name.clone(),
                description: t.description.clone(),
                extension: Some(t.extension.clone()),
            }))
            .chain(self.mcp.tools().into_iter().map(|t| ToolSummary {
                name: t.tool.name,
                description: t.tool.description,
                extension: Some(crate::mcp::hub::participant(&t.server)),
            }))
            .collect();
        *cache = Some((view, mcp, tools.clone()));
        tools
    }

    fn withdraw_last(&self) -> bool {
        let mut s = lock(&self.shared);
        match s.queued_prompts.pop() {
            Some(seq) => {
                s.withdrawn.push(seq);
                true
            }
            None => false,
        }
    }

    fn command_now(&self, line: &str) -> bool {
        self.extension_command_now(line)
    }

    fn shutdown(&self) {
        self.stopping.cancel();
        self.abort(true);
        lock(&self.jobs).take();
        let w = lock(&self.worker).take();
        // The first shutdown only (drop shuts down again).
        let first = w.is_some();
        // An aborted job ends at once unless a tool is stuck in a system
        // call nobody can interrupt (a hung NFS read, a device): then zut
        // exits without it rather than never.
        let wait = self.host.deadlines().shutdown_grace;
        match self.worker_ended.recv_timeout(wait) {
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                log::warn!(
                    "the agent thread did not end within {wait:?} of the abort; exiting without it"
                )
            }
            _ => {
                if let Some(w) = w {
                    if w.join().is_err() {
                        log::error!("the agent thread panicked");
                    }
                }
            }
        }
        if first {
            crate::hooks::agent::session_end(&self.hooks, self.end_reason, &self.events);
        }
        // A run that recorded nothing (a command, an aborted start) leaves
        // no empty session behind.
        if let Some(s) = lock(&self.session).take() {
            let _ = s.discard_if_empty();
        }
        self.host.shutdown();
        self.mcp.shutdown();
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Marks job `seq` finished and wakes whoever waits for it.
fn finish(s: &mut Shared, seq: u64) {
    s.finished = s.finished.max(seq);
    let done = s.finished;
    s.settling.retain(|(wanted, tx)| {
        if *wanted <= done {
            let _ = tx.send(());
            false
        } else {
            true
        }
    });
}

/// The worker: owns the agent, runs one job at a time.
struct Worker {
    host: HostHandle,
    events: Sender<Event>,
    config: EngineConfig,
    shared: Arc<Mutex<Shared>>,
    confirms: Arc<Confirms>,
    agent: Option<Agent>,
    /// The active session (shared with the agent's recorder).
    session: Arc<Mutex<Option<Session>>>,
    /// `SessionStart` hook output not yet sent: hidden context of the
    /// next provider request.
    next_context: Vec<String>,
    /// The engine is shutting down.
    stopped: CancelToken,
}

impl Worker {
    fn run(&mut self, rx: Receiver<(u64, Job)>) {
        // Before the first job, on this thread: the front end is not held
        // up, and the first prompt waits for the extensions and the hooks'
        // context.
        if let Some(loading) = self.config.loading.take() {
            loading.wait(&self.stopped);
            lock(&self.shared).starting = None;
            self.emit(Event::Loaded);
            if self.stopped.is_cancelled() {
                return;
            }
            let reason = match self.config.start_source {
                "resume" => "resume",
                _ => "new",
            };
            super::boot::announce_session(
                &self.host,
                &self.events,
                lock(&self.session).as_ref(),
                reason,
            );
        }
        let source = self.config.start_source;
        self.session_start(source);
        for (seq, job) in rx {
            let (canceller, token) = cancel::pair();
            {
                let mut s = lock(&self.shared);
                s.pending = s.pending.saturating_sub(1);
                s.queued_prompts.retain(|&q| q != seq);
                if let Some(i) = s.withdrawn.iter().position(|&w| w == seq) {
                    s.withdrawn.remove(i);
                    continue;
                }
                if seq <= s.dropped {
                    finish(&mut s, seq);
                    continue;
                }
                s.busy = true;
                s.current = Some(canceller);
            }
            // Answers to questions of earlier jobs (late, or never asked)
            // must not answer this job's.
            lock(&self.confirms.early).clear();
            let ends_with_done = self.run_job(job, &token);
            {
                let mut s = lock(&self.shared);
                s.busy = false;
                s.current = None;
            }
            // After the state is idle: a front end that asks for the state
            // when it sees `done` must not find the job still running.
            self.emit(if ends_with_done {
                Event::Done
            } else {
                Event::Idle
            });
            // After its events: whoever waits for the job finds them sent.
            finish(&mut lock(&self.shared), seq);
        }
        // No more jobs: nobody may wait for one (the receivers disconnect).
        lock(&self.shared).settling.clear();
    }

    fn emit(&self, e: Event) {
        let _ = self.events.send(e);
    }

    /// `SessionStart` hooks: their output waits for the next request.
    fn session_start(&mut self, source: &str) {
        let context = crate::hooks::agent::session_start(&self.config.hooks, source, &self.events);
        self.next_context.extend(context);
    }

    fn fail(&self, message: String) {
        self.emit(Event::Error { message });
    }

    /// Runs one job; true when it must end with `done` (prompts and
    /// commands).
    fn run_job(&mut self, job: Job, cancel: &CancelToken) -> bool {
        match job {
            Job::Prompt(text) => {
                self.prompt(&text, cancel);
                return true;
            }
            Job::Command(line) => {
                self.command(&line, cancel);
                return true;
            }
            Job::Shell(command) => {
                self.shell(&command, cancel);
                return true;
            }
            Job::Change(change) => self.change(change, cancel),
        }
        false
    }

    fn change(&mut self, change: Change, cancel: &CancelToken) {
        match change {
            Change::Reload => self.reload(),
            Change::SetModel(model) => {
                crate::provider::models::remember(
                    &self.config.zut_home,
                    &self.config.provider.provider,
                    &model,
                );
                self.config.provider.model = Some(model.clone());
                lock(&self.shared).model = model.clone();
                if let Some(agent) = self.agent.as_mut() {
                    match crate::provider::create(&self.config.provider) {
                        Ok(p) => agent.set_provider(p),
                        Err(e) => self.fail(e.to_string()),
                    }
                }
            }
            Change::NewSession => self.new_session(),
            Change::Fork(at) => self.fork(at),
            Change::Switch(id) => self.switch(&id),
            Change::Compact(instructions) => self.compact(instructions, cancel),
        }
    }

    fn agent(&mut self) -> Result<&mut Agent, String> {
        if self.agent.is_none() {
            let provider =
                crate::provider::create(&self.config.provider).map_err(|e| e.to_string())?;
            let opts = agent::Options {
                cwd: self.config.cwd.clone(),
                max_steps: self.config.max_steps,
                yolo: self.config.yolo,
                confirmer: self
                    .config
                    .can_confirm
                    .then(|| self.confirms.clone() as Arc<dyn Confirmer>),
                hooks: self.config.hooks.clone(),
                mcp: self.config.mcp.clone(),
            };
            let sink: Arc<dyn EventSink> =
                Arc::new(ChannelSink(self.events.clone(), self.shared.clone()));
            let mut agent = Agent::new(
                provider,
                self.host.clone(),
                sink,
                opts,
                &self.config.zut_home,
            );
            agent.set_transcript(lock(&self.shared).messages.clone());
            agent.set_observer(Some(Box::new(Recorder {
                session: self.session.clone(),
                shared: self.shared.clone(),
                host: self.host.clone(),
                events: self.events.clone(),
                auto_compact: !self.config.provider.no_auto_compact,
            })));
            self.agent = Some(agent);
        }
        Ok(self.agent.as_mut().expect("just created"))
    }

    /// `!command`: run through the agent, whose confirmation rules and
    /// transcript it shares; a refusal is reported on its tool line.
    fn shell(&mut self, command: &str, cancel: &CancelToken) {
        match self.agent() {
            Ok(agent) => {
                let _ = agent.run_shell(command, cancel);
            }
            Err(e) => self.fail(e),
        }
    }

    fn prompt(&mut self, text: &str, cancel: &CancelToken) {
        let context = std::mem::take(&mut self.next_context);
        let agent = match self.agent() {
            Ok(a) => a,
            Err(e) => return self.fail(e),
        };
        agent.add_next_context(context);
        match agent.prompt(text, cancel) {
            Outcome::Done { .. } | Outcome::Aborted => {}
            Outcome::MaxSteps { .. } => self.fail(
                "stopped: the --max-steps limit was reached before the model finished".into(),
            ),
            Outcome::Blocked { reason } => self.fail(format!("turn blocked: {reason}")),
            Outcome::Failed { error } => self.fail(error),
        }
    }

    /// Makes `session` the active one: the transcript, the states, the
    /// JSON `session` event, then the extensions' session events.
    fn activate(&mut self, session: Session, reason: &str, events: &[&str]) {
        // Claude Code's `/clear` is zut's new session; a switch or a fork
        // resumes a conversation.
        let (end, start) = match reason {
            "new" => ("clear", "clear"),
            _ => ("other", "resume"),
        };
        crate::hooks::agent::session_end(&self.config.hooks, end, &self.events);
        self.config.hooks.set_session(Some(&session));
        let info = session.info();
        let states: HashMap<String, serde_json::Value> = session
            .states()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        {
            let mut sh = lock(&self.shared);
            sh.session = Some(summary_of(&session));
            sh.messages = session.transcript();
        }
        if let Some(agent) = self.agent.as_mut() {
            agent.set_transcript(session.transcript());
        }
        self.emit(session_event(&info, reason));
        *lock(&self.session) = Some(session);
        for (n, event) in events.iter().enumerate() {
            // The host remembers only the last one for late extensions.
            let _ = n;
            self.host
                .set_session(Some(info.clone()), Some(event), states.clone());
        }
        self.next_context.clear();
        self.session_start(start);
    }

    fn store(&self) -> Result<Store, ()> {
        match &self.config.store {
            Some(s) => Ok(s.clone()),
            None => {
                self.fail("no session is kept in this run (--no-session)".into());
                Err(())
            }
        }
    }

    fn new_session(&mut self) {
        let Ok(store) = self.store() else { return };
        match store.create() {
            Ok(s) => self.activate(s, "new", &["session_opened"]),
            Err(e) => self.fail(format!("cannot start a session: {e}")),
        }
    }

    fn fork(&mut self, at: Option<usize>) {
        let forked = match lock(&self.session).as_ref() {
            Some(s) => s.fork(at),
            None => return self.fail("no session to fork (--no-session)".into()),
        };
        match forked {
            Ok(s) => self.activate(s, "fork", &["session_forked", "session_switched"]),
            Err(e) => self.fail(format!("cannot fork: {e}")),
        }
    }

    fn switch(&mut self, id: &str) {
        let Ok(store) = self.store() else { return };
        let id = match store.resolve(id) {
            Ok(full) => full,
            Err(e) => return self.fail(format!("cannot switch: {e}")),
        };
        let id = id.as_str();
        // The active session is already open (and locked) here: switching
        // to it re-activates it rather than opening it a second time.
        let current = lock(&self.session).take_if(|s| s.id() == id);
        let opened = match current {
            Some(s) => Ok(s),
            None => store.open(id),
        };
        match opened {
            Ok(s) => {
                if let Some(w) = s.warning() {
                    self.emit(Event::ExtWarning {
                        extension: "zut".into(),
                        message: w.to_string(),
                    });
                }
                let events: &[&str] = if s.parent_id().is_some() {
                    &["session_forked", "session_switched"]
                } else {
                    &["session_switched"]
                };
                self.activate(s, "switch", events)
            }
            Err(e) => self.fail(format!("cannot switch: {e}")),
        }
    }

    /// One provider request asks for a summary of the history before the
    /// last user turn; the summary replaces that history.
    fn compact(&mut self, instructions: Option<String>, cancel: &CancelToken) {
        // The history before the cut, and the request after it, make one
        // request: a copy, since the transcript itself must not change
        // until the summary has come back.
        let history = match lock(&self.session).as_ref() {
            None => return self.fail("no session to compact (--no-session)".into()),
            Some(s) => match s.compact_point() {
                Some(p) => s.messages()[..p].to_vec(),
                None => return self.fail("nothing to compact yet".into()),
            },
        };
        let custom = instructions.as_deref().unwrap_or("").trim().to_string();
        if let Err(e) =
            crate::hooks::agent::pre_compact(&self.config.hooks, "manual", &custom, &self.events)
        {
            return self.fail(format!("compaction {e}"));
        }
        let mut ask = history;
        let mut request = String::from(agent::auto_compact::SUMMARY_REQUEST);
        if let Some(extra) = instructions.filter(|i| !i.trim().is_empty()) {
            request.push_str("\n\n");
            request.push_str(extra.trim());
        }
        ask.push(Message::user_text(request));
        let summary = match self.agent() {
            Ok(agent) => agent.complete_once(&ask, cancel),
            Err(e) => Err(e),
        };
        let summary = match summary {
            Ok(s) if !s.trim().is_empty() => s,
            Ok(_) => return self.fail("compaction failed: the model returned no summary".into()),
            Err(e) => return self.fail(format!("compaction failed: {e}")),
        };
        let compacted = {
            let mut guard = lock(&self.session);
            let Some(s) = guard.as_mut() else { return };
            s.compact(summary)
                .map(|()| (s.info(), s.transcript(), s.states().clone()))
        };
        match compacted {
            Ok((info, transcript, states)) => {
                // Compacted in place: the agent and `state()` share it.
                lock(&self.shared).messages = transcript.clone();
                if let Some(agent) = self.agent.as_mut() {
                    agent.set_transcript(transcript);
                }
                self.emit(session_event(&info, "compact"));
                self.host.set_session_with_reason(
                    Some(info),
                    Some("session_compacted"),
                    "manual",
                    states.into_iter().collect(),
                );
                self.session_start("compact");
            }
            Err(e) => self.fail(format!("compaction failed: {e}")),
        }
    }

    fn reload(&mut self) {
        // The report reaches front ends as a `reload` event; the agent
        // notices the new generation and rebuilds its tools and prompt.
        let _ = self.host.reload();
    }

    /// `/skills` and `/skill:NAME request`.
    fn skill_command(&mut self, s: crate::skills::Slash, cancel: &CancelToken) {
        use crate::skills::Slash;
        let (name, action, text) = match s {
            Slash::Error(message) => return self.fail(message),
            Slash::Display { name, text } => (name, "display", text),
            Slash::Prompt { name, text } => (name, "prompt", text),
        };
        self.emit(Event::CommandResult {
            name,
            action: action.into(),
            text: text.clone(),
        });
        if action == "prompt" {
            self.prompt(&text, cancel);
        }
    }

    /// A built-in command of the table in [`commands`]: run here when it
    /// works in this front end's mode, refused with where it works when not.
    fn builtin(&mut self, builtin: &'static commands::Builtin, arg: &str, cancel: &CancelToken) {
        let name = builtin.name;
        if !builtin.works_in(self.config.front) {
            return self.fail(format!(
                "/{name} works only in {}",
                builtin.where_it_works()
            ));
        }
        let change = match name {
            "help" => return self.display(name, self.help_text()),
            "model" if arg.is_empty() => {
                // The provider's list when it answers, else what is in use.
                let (current, provider) = {
                    let s = lock(&self.shared);
                    (s.model.clone(), s.provider.clone())
                };
                let text = match crate::provider::models::list(&self.config.provider) {
                    Ok(ids) => format!(
                        "model: {current} ({provider})\n{}",
                        crate::provider::models::listing(&ids, &current)
                    ),
                    Err(e) => {
                        let s = lock(&self.shared);
                        format!(
                            "model: {} ({}); /model NAME to change it (the list of models is unavailable: {e})",
                            s.model, s.provider
                        )
                    }
                };
                return self.display(name, text);
            }
            "resume" | "switch" if arg.is_empty() => {
                return self.fail(format!(
                    "/{name} needs a session id (zut sessions lists them)"
                ))
            }
            _ => match Change::from_slash(name, arg) {
                // `/model NAME` answers with no `command_result`.
                Some(Ok(Change::SetModel(model))) => {
                    return self.change(Change::SetModel(model), cancel)
                }
                Some(Ok(change)) => change,
                Some(Err(message)) => return self.fail(message),
                // `/skills` is answered by the skills module before the
                // table; a built-in of the table the engine does not run
                // is a bug of the table, reported rather than ignored.
                None => return self.fail(format!("/{name} cannot run here")),
            },
        };
        self.change(change, cancel);
        self.emit(Event::CommandResult {
            name: name.into(),
            action: "noop".into(),
            text: String::new(),
        });
    }

    /// A built-in's `display` answer.
    fn display(&self, name: &str, text: String) {
        self.emit(Event::CommandResult {
            name: name.into(),
            action: "display".into(),
            text,
        });
    }

    /// `/help` outside the terminal: the commands that work in this mode,
    /// then the skills prefix and the extensions' commands.
    fn help_text(&self) -> String {
        let mut lines: Vec<String> = commands::available(self.config.front)
            .map(|b| format!("/{:<12} {}", b.name, b.description))
            .collect();
        let view = self.host.view();
        if view.skills.is_some() {
            lines.push(format!("/{:<12} run a skill", "skill:NAME"));
        }
        for c in view.registry.commands() {
            lines.push(format!(
                "/{:<12} {} [{}]",
                c.name,
                crate::sanitize::sanitize(&c.description),
                c.extension
            ));
        }
        lines.join("\n")
    }

    /// `/name args`: a core built-in or an extension command.
    fn command(&mut self, line: &str, cancel: &CancelToken) {
        let line = line.trim().trim_start_matches('/');
        let skills = self.host.view().skills.clone();
        if let Some(s) = crate::skills::slash(line, skills.as_deref()) {
            return self.skill_command(s, cancel);
        }
        let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        if let Some(builtin) = commands::find(name) {
            return self.builtin(builtin, args.trim(), cancel);
        }
        let known = self.host.command(name).is_some();
        if !known && self.host.view().registry.gone_command(name).is_none() {
            return self.fail(unknown_command(name, &self.host, self.config.front));
        }
        let reply = match self.host.invoke_command(name, args.trim(), cancel) {
            Ok(r) => r,
            Err(e @ CommandError::Unknown(_)) => return self.fail(e.to_string()),
            Err(e) => return self.fail(format!("/{name}: {e}")),
        };
        let (action, text) = reply.action_and_text();
        if action == "display" && reply.error.trim().is_empty() {
            self.emit(Event::ExtDisplay {
                extension: reply.extension.clone(),
                text: text.clone(),
            });
        }
        if let (Some(panel), true) = (&reply.open_panel, action == "open_panel") {
            self.emit(Event::ExtOpenPanel {
                extension: reply.extension.clone(),
                panel: panel.clone(),
            });
        }
        self.emit(Event::CommandResult {
            name: reply.name.clone(),
            action: action.clone(),
            text: text.clone(),
        });
        if !reply.error.trim().is_empty() {
            return self.fail(format!("/{}: {}", reply.name, reply.error.trim()));
        }
        match action.as_str() {
            "prompt" if text.trim().is_empty() => {}
            "prompt" => self.prompt(&text, cancel),
            "display" | "noop" | "insert" | "open_panel" => {}
            other => self.fail(format!("/{}: unknown action {other:?}", reply.name)),
        }
    }
}

/// The JSON stream's `session` event for `info`.
pub fn session_event(info: &zut_ext::wire::SessionInfo, reason: &str) -> Event {
    Event::Session {
        id: info.id.clone(),
        parent_id: (!info.parent_id.is_empty()).then(|| info.parent_id.clone()),
        path: info.path.clone(),
        fork_point: (info.fork_point > 0).then_some(info.fork_point as usize),
        reason: reason.to_string(),
    }
}

/// "unknown command" with what is available in `mode` and how to send the
/// text as a prompt instead.
pub fn unknown_command(name: &str, host: &HostHandle, mode: commands::Mode) -> String {
    if let Some(hint) = &host.view().disabled_hint {
        return format!("no command /{name}; {hint}");
    }
    let mut names: Vec<String> = host
        .view()
        .registry
        .commands()
        .map(|c| format!("/{}", c.name))
        .collect();
    names.extend(commands::available(mode).map(|b| format!("/{}", b.name)));
    format!(
        "unknown command /{name}; available: {}. To send text that starts with / as a prompt, begin it with a space or with //",
        names.join(", ")
    )
}
