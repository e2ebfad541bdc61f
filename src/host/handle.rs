//! [`HostHandle`], the only way into the host: `'static`, `Clone`, and
//! callable from any thread. A call reads the current [`View`], queues its
//! frame on the extension's connection and waits in a `select!` against its
//! deadline and the cancel token; the reader completes it straight from the
//! request table, so the dispatcher is never on the hot path of a call.
//! Everything that changes host state is a [`Command`] (or an [`Urgent`]
//! request) to the dispatcher.
//!
//! [`Host`] wraps a handle whose events go to an [`EventSink`], for
//! `zut ext doctor`, benchmarks and tests.

use super::*;

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

impl CommandReply {
    /// The action (`noop` when none was given) and the text it carries:
    /// the prompt, the inserted text, the display, or the panel's title.
    pub fn action_and_text(&self) -> (String, String) {
        let action = if self.action.is_empty() {
            "noop".to_string()
        } else {
            self.action.clone()
        };
        let text = match action.as_str() {
            "prompt" => self.prompt.clone(),
            "insert" => self.insert.clone(),
            "display" => self.display.clone(),
            "open_panel" => self
                .open_panel
                .as_ref()
                .map(|p| p.title.clone())
                .unwrap_or_default(),
            _ => String::new(),
        };
        (action, text)
    }
}

/// The host could not start: its dispatcher thread did not.
#[derive(Debug)]
pub struct StartError(pub std::io::Error);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot start the host thread: {}", self.0)
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Why an extension command gave no answer ([`HostHandle::invoke_command`]).
#[derive(Debug)]
pub enum CommandError {
    /// No extension has the command: "unknown command /x", or where it
    /// went (its extension stopped or was reloaded away).
    Unknown(String),
    /// Its extension is registered but not connected.
    NotRunning { extension: String },
    /// The extension's connection ended before or while it answered
    /// (the transport's reason, naming the extension).
    Ended(String),
    /// The extension answered with a frame that is not a command response.
    Unexpected,
    /// The caller's cancel token fired.
    Aborted,
    /// No answer within the command deadline.
    TimedOut {
        extension: String,
        command: String,
        after: Duration,
    },
    /// The thread of [`HostHandle::invoke_command_async`] could not start.
    Thread(std::io::Error),
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::Unknown(text) | CommandError::Ended(text) => f.write_str(text),
            CommandError::NotRunning { extension } => {
                write!(f, "extension {extension} is not running")
            }
            CommandError::Unexpected => f.write_str("unexpected reply"),
            CommandError::Aborted => f.write_str("aborted"),
            CommandError::TimedOut {
                extension,
                command,
                after,
            } => write!(
                f,
                "timeout waiting for {extension}/{command} after {} ms",
                after.as_millis()
            ),
            CommandError::Thread(e) => write!(f, "cannot start a thread: {e}"),
        }
    }
}

impl std::error::Error for CommandError {}

/// A load the dispatcher is running ([`HostHandle::launch`]).
pub struct Loading {
    rx: Receiver<LoadReport>,
    commands: Sender<Command>,
    starting: StartingNames,
}

/// One extension of a [`Loading`]: what a front end names while it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Starting {
    pub name: String,
    pub version: String,
    /// `flag`, `project` or `global`.
    pub source: &'static str,
}

/// The extensions a load starts, in load order, readable from any thread
/// without asking the dispatcher (which is busy spawning them). Filled in
/// once they are discovered: at once when the caller discovered them,
/// or by the dispatcher when the discovery was left to it.
#[derive(Debug, Clone, Default)]
pub struct StartingNames(Arc<Mutex<Vec<Starting>>>);

impl StartingNames {
    /// The names known now (none while the discovery is still running).
    pub fn get(&self) -> Vec<Starting> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records the extensions of `entries` that will start (theme-only
    /// ones start nothing).
    pub(super) fn set(&self, entries: &[Entry]) {
        let names = entries
            .iter()
            .filter_map(|e| match &e.status {
                discovery::Status::Load(m) if !m.theme_only() => Some(Starting {
                    name: m.name.clone(),
                    version: m.version.clone(),
                    source: e.source.as_str(),
                }),
                _ => None,
            })
            .collect();
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = names;
    }
}

impl Loading {
    /// The extensions this load starts ([`StartingNames`]).
    pub fn starting(&self) -> StartingNames {
        self.starting.clone()
    }

    /// Waits until every handshake settled (bounded by the hello and ready
    /// deadlines) and the registrations are committed. Cancelling ends the
    /// handshakes still running; what settled is committed and reported.
    pub fn wait(self, cancel: &CancelToken) -> LoadReport {
        crossbeam_channel::select! {
            recv(self.rx) -> r => r.unwrap_or_default(),
            recv(cancel.receiver()) -> _ => {
                let _ = self.commands.send(Command::AbortLoad);
                self.rx.recv().unwrap_or_default()
            }
        }
    }
}

/// The only way into the host. Cheap to clone; every clone talks to the
/// same dispatcher.
#[derive(Clone)]
pub struct HostHandle {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) config: HostConfig,
    view: Arc<Mutex<Arc<View>>>,
    channels: Channels,
    next_id: Arc<AtomicU64>,
    threads: ThreadCount,
    dispatcher: Mutex<Option<std::thread::JoinHandle<()>>>,
    stopped: AtomicBool,
    /// Pid of every process ever started (for checks that none outlives us).
    pids: Arc<Mutex<Vec<u32>>>,
    /// The extensions as they ended (after shutdown).
    last: Mutex<Vec<ExtReport>>,
    /// Missed intercept deadlines per extension (the circuit breaker).
    pub(super) breaker: intercept::Breaker,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Inner {
    fn shutdown(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        self.breaker.close();
        let (tx, rx) = crossbeam_channel::bounded(1);
        if self
            .channels
            .urgent
            .send(Urgent::Shutdown { reply: tx })
            .is_ok()
        {
            if let Ok(report) = rx.recv() {
                *self.last.lock().unwrap_or_else(|p| p.into_inner()) = report;
            }
        }
        let handle = self
            .dispatcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(h) = handle {
            if h.join().is_err() {
                log::error!("the host dispatcher panicked");
            }
        }
    }
}

impl HostHandle {
    /// Starts the dispatcher and every loadable entry in parallel, waits for
    /// their handshakes (bounded by the hello and ready deadlines), commits
    /// registrations in load order and reports `ext_loaded` / `ext_error` /
    /// `ext_warning` on `events`. `discovery` is what `/reload-ext` runs
    /// again (`None`: reload restarts nothing).
    pub fn start(
        config: HostConfig,
        entries: Vec<Entry>,
        discovery: Option<discovery::Options>,
        events: EventOut,
        cancel: &CancelToken,
    ) -> Result<(HostHandle, LoadReport), StartError> {
        let (handle, loading) = Self::launch(config, Some(entries), discovery, events)?;
        Ok((handle, loading.wait(cancel)))
    }

    /// [`HostHandle::start`] without the wait: the extensions start and
    /// their handshakes run while the caller goes on (the terminal draws
    /// its first frame at once). Until [`Loading::wait`] returns, the view
    /// names them as starting and they take no calls; everything else the
    /// handle does is answered as usual. With `entries` `None` the
    /// dispatcher discovers them itself (from `discovery`), so the caller
    /// does not even read their manifests; [`Loading::starting`] names
    /// them from then on and [`Event::Discovered`](crate::events::Event::Discovered) says so.
    pub fn launch(
        config: HostConfig,
        entries: Option<Vec<Entry>>,
        discovery: Option<discovery::Options>,
        events: EventOut,
    ) -> Result<(HostHandle, Loading), StartError> {
        Self::start_inner(
            config,
            entries,
            discovery,
            events,
            #[cfg(test)]
            None,
        )
    }

    /// [`HostHandle::start`] with every extension played by `peers` on a
    /// thread of this process over pipes instead of a process: for the
    /// dispatcher's unit tests. Discovery (startup and reload) is real.
    #[cfg(test)]
    pub(crate) fn start_with_peers(
        config: HostConfig,
        discovery: discovery::Options,
        events: EventOut,
        peers: in_memory::PeerFn,
    ) -> (HostHandle, LoadReport) {
        let (handle, loading) = Self::launch_with_peers(config, discovery, events, peers);
        (handle, loading.wait(&CancelToken::never()))
    }

    /// [`HostHandle::launch`] of what the dispatcher discovers from
    /// `discovery`, every extension played by `peers`.
    #[cfg(test)]
    pub(crate) fn launch_with_peers(
        config: HostConfig,
        discovery: discovery::Options,
        events: EventOut,
        peers: in_memory::PeerFn,
    ) -> (HostHandle, Loading) {
        match Self::start_inner(config, None, Some(discovery), events, Some(peers)) {
            Ok(x) => x,
            Err(e) => panic!("{e}"),
        }
    }

    fn start_inner(
        config: HostConfig,
        entries: Option<Vec<Entry>>,
        discovery: Option<discovery::Options>,
        events: EventOut,
        #[cfg(test)] peers: Option<in_memory::PeerFn>,
    ) -> Result<(HostHandle, Loading), StartError> {
        let view = Arc::new(Mutex::new(Arc::new(View {
            deadlines: config.deadlines,
            ..View::default()
        })));
        let threads: ThreadCount = Arc::new(AtomicUsize::new(0));
        let next_id = Arc::new(AtomicU64::new(1));
        let pids = Arc::new(Mutex::new(Vec::new()));
        let breaker = intercept::Breaker::new(events.clone());
        let (channels, join) = Dispatcher::start(
            config.clone(),
            discovery,
            events,
            view.clone(),
            threads.clone(),
            next_id.clone(),
            pids.clone(),
            #[cfg(test)]
            peers,
        )
        .map_err(StartError)?;
        let handle = HostHandle {
            inner: Arc::new(Inner {
                config,
                view,
                channels,
                next_id,
                threads,
                dispatcher: Mutex::new(Some(join)),
                stopped: AtomicBool::new(false),
                pids,
                last: Mutex::new(Vec::new()),
                breaker,
            }),
        };
        let starting = StartingNames::default();
        if let Some(entries) = &entries {
            starting.set(entries);
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        let commands = handle.inner.channels.commands.clone();
        let _ = commands.send(Command::Load {
            entries,
            starting: starting.clone(),
            reply: tx,
        });
        Ok((
            handle,
            Loading {
                rx,
                commands,
                starting,
            },
        ))
    }

    /// The routes and subscriptions in force now.
    pub fn view(&self) -> Arc<View> {
        self.inner
            .view
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The settings this host runs with.
    pub fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    /// The deadlines in force.
    pub fn deadlines(&self) -> Deadlines {
        self.inner.config.deadlines
    }

    /// The pid of every extension process this host started, whatever
    /// became of it.
    pub fn started_pids(&self) -> Vec<u32> {
        self.inner
            .pids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Number of live reader and writer threads (zero after shutdown).
    pub fn live_threads(&self) -> usize {
        self.inner.threads.load(Ordering::SeqCst)
    }

    /// The extension command `name` (case-insensitive), if any.
    pub fn command(&self, name: &str) -> Option<CommandEntry> {
        self.view().registry.command(name).cloned()
    }

    /// The extension tool `name`, if any.
    pub fn tool(&self, name: &str) -> Option<ToolEntry> {
        self.view().registry.tool(name).cloned()
    }

    /// Active extension commands in registration order.
    pub fn commands(&self) -> Vec<CommandEntry> {
        self.view().registry.commands().cloned().collect()
    }

    /// Active extension tools, deferred ones included.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.view().registry.tools().cloned().collect()
    }

    /// Why tool `name` cannot be called, when a dead extension owned it.
    pub fn gone_tool(&self, name: &str) -> Option<String> {
        self.view().registry.gone_tool(name)
    }

    /// The extensions of the current load that are running, in load order
    /// (after shutdown: every one that was started, as it ended).
    pub fn extensions(&self) -> Vec<ExtReport> {
        if self.inner.stopped.load(Ordering::SeqCst) {
            return self.all_extensions();
        }
        self.all_extensions()
            .into_iter()
            .filter(|e| e.pid.is_some() && !matches!(e.phase, Phase::Disconnected(_)))
            .collect()
    }

    /// Every entry of the current load, whatever became of it (after
    /// shutdown: every one that was started, as it ended).
    pub fn all_extensions(&self) -> Vec<ExtReport> {
        if self.inner.stopped.load(Ordering::SeqCst) {
            return self
                .inner
                .last
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
        }
        ask(&self.inner.channels.commands, |reply| Command::Report {
            reply,
        })
    }

    /// [`HostHandle::all_extensions`], waiting at most `wait` for the
    /// dispatcher; past it (the dispatcher busy) the last report given.
    pub fn all_extensions_within(&self, wait: std::time::Duration) -> Vec<ExtReport> {
        let last = || {
            self.inner
                .last
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        };
        if self.inner.stopped.load(Ordering::SeqCst) {
            return last();
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        if self
            .inner
            .channels
            .commands
            .send(Command::Report { reply: tx })
            .is_err()
        {
            return last();
        }
        match rx.recv_timeout(wait) {
            Ok(report) => {
                *self.inner.last.lock().unwrap_or_else(|p| p.into_inner()) = report.clone();
                report
            }
            Err(_) => last(),
        }
    }

    pub(super) fn next_id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Runs extension command `name` with `args` and waits for its response.
    pub fn invoke_command(
        &self,
        name: &str,
        args: &str,
        cancel: &CancelToken,
    ) -> Result<CommandReply, CommandError> {
        let view = self.view();
        let entry = match view.registry.command(name) {
            Some(e) => e.clone(),
            None => {
                return Err(CommandError::Unknown(
                    view.registry
                        .gone_command(name)
                        .unwrap_or_else(|| format!("unknown command /{name}")),
                ))
            }
        };
        let Some(ext) = view.ext(entry.ext) else {
            return Err(CommandError::NotRunning {
                extension: entry.extension,
            });
        };
        let conn = ext.conn.clone();
        drop(view);
        let id = self.next_id();
        let rx = conn.expect(id, CallKind::Command);
        let frame = HostFrame::CommandInvoked {
            id: id.to_string(),
            name: entry.name.clone(),
            args: args.trim().to_string(),
        };
        if let Err(e) = conn.send(&frame) {
            conn.forget(id);
            return Err(CommandError::Ended(format!(
                "extension {}: {e}",
                entry.extension
            )));
        }
        let timeout = self.inner.config.deadlines.command;
        let reply = wait_reply(&rx, Some(timeout), cancel);
        conn.forget(id);
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
            Wait::Reply(Ok(_)) => Err(CommandError::Unexpected),
            Wait::Reply(Err(reason)) => Err(CommandError::Ended(reason)),
            Wait::Cancelled => Err(CommandError::Aborted),
            Wait::TimedOut => Err(CommandError::TimedOut {
                extension: entry.extension,
                command: entry.name,
                after: timeout,
            }),
        }
    }

    /// The non-blocking form of [`HostHandle::invoke_command`]: the reply
    /// arrives on the returned channel, so a UI never waits on an extension.
    pub fn invoke_command_async(
        &self,
        name: &str,
        args: &str,
        cancel: CancelToken,
    ) -> Receiver<Result<CommandReply, CommandError>> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let (handle, name, args) = (self.clone(), name.to_string(), args.to_string());
        let spawned = std::thread::Builder::new()
            .name("zut-command".into())
            .spawn(move || {
                let _ = tx.send(handle.invoke_command(&name, &args, &cancel));
            });
        if let Err(e) = spawned {
            let (tx, rx2) = crossbeam_channel::bounded(1);
            let _ = tx.send(Err(CommandError::Thread(e)));
            return rx2;
        }
        rx
    }

    /// Calls extension tool `name`; `None` if no extension registered it.
    /// Every failure (refused, timed out, aborted, disconnected) is an error
    /// reply the model can read, naming the extension.
    pub fn call_tool(&self, name: &str, args: &Value, cancel: &CancelToken) -> Option<ToolReply> {
        self.call_tool_with_progress(name, args, cancel, &mut |_, _| {})
    }

    /// [`HostHandle::call_tool`], telling `on_progress` (extension,
    /// report) of each `tool_progress` frame the call receives. Each one
    /// restarts the reply deadline, never past [`PROGRESS_CAP`] times the
    /// tool timeout counted from when the call was sent.
    pub fn call_tool_with_progress(
        &self,
        name: &str,
        args: &Value,
        cancel: &CancelToken,
        on_progress: &mut dyn FnMut(&str, &Progress),
    ) -> Option<ToolReply> {
        let view = self.view();
        let entry = view.registry.tool(name)?;
        let (extension, tool, interactive) = (
            entry.extension.clone(),
            entry.name.clone(),
            entry.interactive,
        );
        let fail = |reason: String| ToolReply {
            content: vec![ContentBlock::text(format!(
                "extension {extension}/{tool} failed: {reason}"
            ))],
            is_error: true,
            extension: extension.clone(),
            activate_tools: Vec::new(),
            details: None,
        };
        if interactive && !self.inner.config.interactive {
            return Some(fail(
                "it is an interactive tool and needs a person at the interactive terminal; this mode cannot run it".into(),
            ));
        }
        let Some(conn) = view.ext(entry.ext).map(|e| e.conn.clone()) else {
            return Some(fail("the extension is not running".into()));
        };
        drop(view);
        let id = self.next_id();
        let rx = conn.expect(id, CallKind::Tool);
        let args = if args.is_null() {
            Value::Object(Default::default())
        } else {
            args.clone()
        };
        let frame = HostFrame::ToolCall {
            id: id.to_string(),
            name: tool.clone(),
            args,
        };
        let ticket = match conn.send_tracked(&frame) {
            Ok(t) => t,
            Err(e) => {
                conn.forget(id);
                return Some(fail(e.to_string()));
            }
        };
        let timeout = (!interactive).then_some(self.inner.config.deadlines.tool);
        let sent = std::time::Instant::now();
        let mut progressed = false;
        let reply = loop {
            // A full timeout from now (each progress restarts it), but
            // never past the cap.
            let wait = timeout.map(|t| {
                t.min(
                    (sent + t * PROGRESS_CAP).saturating_duration_since(std::time::Instant::now()),
                )
            });
            match wait_reply_spinning(&rx, wait, cancel, !progressed) {
                Wait::Reply(Ok(ExtFrame::ToolProgress {
                    message,
                    progress,
                    total,
                    ..
                })) => {
                    progressed = true;
                    on_progress(
                        &extension,
                        &Progress {
                            message,
                            progress,
                            total,
                        },
                    )
                }
                reply => break reply,
            }
        };
        conn.forget(id);
        let reason = match reply {
            Wait::Reply(Ok(ExtFrame::ToolResult {
                content,
                is_error,
                activate_tools,
                details,
                ..
            })) => {
                if let Err(why) = crate::host::registry::check_content(&content) {
                    return Some(fail(why.to_string()));
                }
                return Some(ToolReply {
                    content: normalise_content(content, &extension),
                    is_error,
                    extension,
                    activate_tools,
                    details,
                });
            }
            Wait::Reply(Ok(_)) => "unexpected reply".to_string(),
            Wait::Reply(Err(reason)) => return Some(fail(reason)),
            Wait::Cancelled => "aborted".to_string(),
            Wait::TimedOut if !progressed => format!(
                "timeout waiting for {extension}/{tool} after {} ms",
                self.inner.config.deadlines.tool.as_millis()
            ),
            Wait::TimedOut => format!(
                "timeout waiting for {extension}/{tool} after {} ms (progress restarts the {} ms timeout, up to {PROGRESS_CAP} times it in all)",
                sent.elapsed().as_millis(),
                self.inner.config.deadlines.tool.as_millis()
            ),
        };
        // Given up: withdraw the frame if still queued, allow a begun write
        // to finish, else the stream is torn; tell the extension if it asked.
        match ticket.withdraw(self.inner.config.deadlines.torn_frame) {
            Withdrawal::Withdrawn => {}
            Withdrawal::Delivered => {
                if conn.tool_cancel.load(Ordering::SeqCst) {
                    let _ = conn.send(&HostFrame::ToolCancel { id: id.to_string() });
                }
            }
            Withdrawal::Torn => conn.disconnect(&format!(
                "disconnected: a cancelled tool_call was still being written after {} ms (torn frame)",
                self.inner.config.deadlines.torn_frame.as_millis()
            )),
        }
        Some(fail(reason))
    }

    /// Whether any extension subscribed to `event` (cheap; lets the agent
    /// skip building payloads nobody reads).
    pub fn subscribed(&self, event: &str) -> bool {
        self.view()
            .exts
            .iter()
            .any(|e| e.events.iter().any(|x| x == event))
    }

    /// Sends a one-way lifecycle event to its subscribers, in load order.
    /// Each extension's frames stay ordered (one queue per extension).
    pub fn emit_event(&self, payload: &EventPayload) {
        let view = self.view();
        let frame = HostFrame::Event(payload.clone());
        for e in view
            .exts
            .iter()
            .filter(|e| e.events.contains(&payload.event))
        {
            let _ = e.conn.send(&frame);
        }
    }

    /// Sends a session event to its subscribers, each with only its own
    /// state, and makes it the event replayed to extensions that become
    /// ready later (reload, slow start).
    pub fn set_session(
        &self,
        info: Option<SessionInfo>,
        event: Option<&str>,
        states: HashMap<String, Value>,
    ) {
        self.set_session_with_reason(info, event, "", states)
    }

    /// [`HostHandle::set_session`] whose event carries `reason`
    /// (`session_compacted`: `manual` or `auto`).
    pub fn set_session_with_reason(
        &self,
        info: Option<SessionInfo>,
        event: Option<&str>,
        reason: &str,
        states: HashMap<String, Value>,
    ) {
        let _ = self.inner.channels.commands.send(Command::Session {
            info: info.clone(),
            event: event.map(str::to_string),
            states: states.clone(),
        });
        let Some(event) = event else { return };
        let view = self.view();
        for e in view
            .exts
            .iter()
            .filter(|e| e.events.iter().any(|x| x == event))
        {
            let payload = EventPayload {
                session: info.clone(),
                state: states.get(&e.name).cloned(),
                reason: reason.to_string(),
                ..EventPayload::named(event)
            };
            let _ = e.conn.send(&HostFrame::Event(payload));
        }
    }

    /// Records an extension's state on the active branch (for replays).
    pub fn set_state(&self, extension: &str, state: Option<Value>) {
        let _ = self.inner.channels.commands.send(Command::State {
            extension: extension.to_string(),
            state,
        });
    }

    /// A key for a panel owned by `extension`.
    pub fn panel_key(&self, extension: &str, panel_id: &str, key: &str, text: Option<String>) {
        self.to_extension(
            extension,
            HostFrame::PanelKey {
                panel_id: panel_id.to_string(),
                key: key.to_string(),
                text: text.unwrap_or_default(),
            },
        );
    }

    /// The person closed `extension`'s panel.
    pub fn panel_close(&self, extension: &str, panel_id: &str) {
        self.to_extension(
            extension,
            HostFrame::PanelClose {
                panel_id: panel_id.to_string(),
            },
        );
    }

    /// The terminal's thread never waits on an extension: a full queue
    /// drops the frame with a warning.
    fn to_extension(&self, extension: &str, frame: HostFrame) {
        let view = self.view();
        if let Some(e) = view.exts.iter().find(|e| e.name == extension) {
            e.conn.offer(&frame);
        }
    }

    /// `/reload-ext`: stops every extension (each with its grace), discovers
    /// again with the same inputs, starts them, rebuilds the registry and
    /// emits a `reload` event. Blocks until the new set has settled.
    pub fn reload(&self) -> LoadReport {
        ask(&self.inner.channels.urgent, |reply| Urgent::Reload {
            reply,
        })
    }

    /// Stops every extension: `shutdown` to all at once, each with its grace
    /// from when its `shutdown` is written, then SIGTERM and SIGKILL; every child reaped and every
    /// thread joined. Idempotent; also done when the last handle drops.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }
}

/// How many tool timeouts a call that keeps sending `tool_progress` may
/// run in all, counted from when it was sent.
pub const PROGRESS_CAP: u32 = 10;

/// One `tool_progress` report of a running extension tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub message: Option<String>,
    pub progress: Option<f64>,
    pub total: Option<f64>,
}

/// How a wait for a reply ended. Short-lived and moved once, so the size
/// of the frame it may carry does not matter.
#[allow(clippy::large_enum_variant)]
pub(super) enum Wait {
    Reply(Reply),
    Cancelled,
    TimedOut,
}

pub(super) fn wait_reply(
    rx: &Receiver<Reply>,
    timeout: Option<Duration>,
    cancel: &CancelToken,
) -> Wait {
    wait_reply_spinning(rx, timeout, cancel, true)
}

/// [`wait_reply`]; without `spin` it blocks at once (the wait after a
/// `tool_progress`: the reply is then seldom microseconds away).
fn wait_reply_spinning(
    rx: &Receiver<Reply>,
    timeout: Option<Duration>,
    cancel: &CancelToken,
    spin: bool,
) -> Wait {
    // A reply often arrives within microseconds. Spinning briefly, then
    // yielding a few times, catches it without parking this thread: on a
    // busy core a park and wake-up costs more than the round trip itself.
    for step in 0..if spin { 10u32 } else { 0 } {
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
pub(super) fn normalise_content(content: Vec<ContentBlock>, extension: &str) -> Vec<ContentBlock> {
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

/// A host whose events go to an [`EventSink`]: for `zut ext doctor`,
/// benchmarks and tests, which want the load report and a collected event
/// list rather than a loop of their own.
pub struct Host {
    handle: HostHandle,
    loaded: Vec<Loaded>,
    sink: Arc<dyn EventSink>,
}

impl Host {
    /// Starts a host whose events go to `sink`.
    pub fn start(
        config: HostConfig,
        sink: Arc<dyn EventSink>,
        entries: Vec<Entry>,
        cancel: &CancelToken,
    ) -> Host {
        let (handle, report) = match HostHandle::start(config, entries, None, sink.clone(), cancel)
        {
            Ok(x) => x,
            Err(e) => {
                log::error!("{e}");
                panic!("{e}")
            }
        };
        Host {
            handle,
            loaded: report.loaded,
            sink,
        }
    }

    /// The handle (for the agent and calls).
    pub fn handle(&self) -> HostHandle {
        self.handle.clone()
    }

    /// The sink events go to (for an agent of the same run).
    pub fn sink(&self) -> Arc<dyn EventSink> {
        self.sink.clone()
    }

    /// What happened to every discovered directory, in load order.
    pub fn loaded(&self) -> &[Loaded] {
        &self.loaded
    }
}

impl std::ops::Deref for Host {
    type Target = HostHandle;
    fn deref(&self) -> &HostHandle {
        &self.handle
    }
}

/// Sends the dispatcher a request made with a reply channel and waits for
/// the answer; the default when the dispatcher is gone.
fn ask<T: Default, M>(to: &Sender<M>, request: impl FnOnce(Sender<T>) -> M) -> T {
    let (tx, rx) = crossbeam_channel::bounded(1);
    if to.send(request(tx)).is_err() {
        return T::default();
    }
    rx.recv().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

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
