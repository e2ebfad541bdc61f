//! The engine behind every front end: the [`Core`] implementation.
//!
//! It owns the host handle and a worker thread that owns the agent. Every
//! request of a front end becomes a [`Job`] on the worker's queue (prompts
//! queue behind a running turn, in order); the worker runs one job at a
//! time and reports everything on the front end's [`Event`] channel, ending
//! each prompt or command with `done`. Abort cancels the running job's
//! token; confirmations wait on the worker for [`Core::confirm`].
//!
//! Nothing here runs on a front end's thread except the cheap enqueueing
//! in the [`Core`] methods.

use crate::agent::{self, Agent, ConfirmRequest, Confirmer, Decision, Outcome};
use crate::cancel::{self, CancelToken, Canceller};
use crate::events::{Event, EventSink};
use crate::frontend::{
    CommandSummary, Core, CoreState, ExtensionSummary, Submitted, ToolSummary,
};
use crate::host::{registry::BUILTIN_COMMANDS, HostHandle, Phase};
use crossbeam_channel::{Receiver, Sender};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
}

/// One unit of work for the worker.
enum Job {
    Prompt(String),
    Command(String),
    Reload,
    NewSession,
    Fork(Option<usize>),
    Switch(String),
    Compact(Option<String>),
    SetModel(String),
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
    current: Option<Canceller>,
    model: String,
    provider: String,
    /// The transcript as the last finished job left it.
    messages: Vec<crate::provider::Message>,
}

/// Routes confirmation answers to the waiting worker.
#[derive(Default)]
struct Confirms {
    waiting: Mutex<HashMap<u64, Sender<Decision>>>,
}

impl Confirmer for Confirms {
    fn confirm(&self, req: &ConfirmRequest, cancel: &CancelToken) -> Decision {
        let (tx, rx) = crossbeam_channel::bounded(1);
        lock(&self.waiting).insert(req.request_id, tx);
        let d = crossbeam_channel::select! {
            recv(rx) -> d => d.unwrap_or(Decision::Deny),
            recv(cancel.receiver()) -> _ => Decision::Deny,
        };
        lock(&self.waiting).remove(&req.request_id);
        d
    }
}

/// The engine: a [`Core`] over a host handle and a worker thread.
pub struct Engine {
    jobs: Mutex<Option<Sender<(u64, Job)>>>,
    shared: Arc<Mutex<Shared>>,
    host: HostHandle,
    events: Sender<Event>,
    confirms: Arc<Confirms>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sends agent events into the front end's channel.
struct ChannelSink(Sender<Event>);

impl EventSink for ChannelSink {
    fn emit(&self, event: Event) {
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
            ..Shared::default()
        }));
        let confirms = Arc::new(Confirms::default());
        let engine = Arc::new(Engine {
            jobs: Mutex::new(Some(tx)),
            shared: shared.clone(),
            host: host.clone(),
            events: events.clone(),
            confirms: confirms.clone(),
            worker: Mutex::new(None),
        });
        let mut worker = Worker {
            host,
            events,
            config,
            shared,
            confirms,
            agent: None,
        };
        let handle = std::thread::Builder::new()
            .name("zut-agent".into())
            .spawn(move || worker.run(rx));
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

    fn abort(&self, drop_queued: bool) {
        let mut s = lock(&self.shared);
        if drop_queued {
            s.dropped = s.seq;
        }
        if let Some(c) = s.current.as_ref() {
            c.cancel();
        }
    }

    fn confirm(&self, request_id: u64, decision: Decision) {
        if let Some(tx) = lock(&self.confirms.waiting).remove(&request_id) {
            let _ = tx.send(decision);
        }
    }

    fn panel_key(&self, extension: &str, panel_id: &str, key: &str, text: Option<String>) {
        self.host.panel_key(extension, panel_id, key, text);
    }

    fn panel_close(&self, extension: &str, panel_id: &str) {
        self.host.panel_close(extension, panel_id);
    }

    fn reload(&self) {
        self.submit(Job::Reload);
    }

    fn new_session(&self) {
        self.submit(Job::NewSession);
    }

    fn fork(&self, at: Option<usize>) {
        self.submit(Job::Fork(at));
    }

    fn switch(&self, id: String) {
        self.submit(Job::Switch(id));
    }

    fn compact(&self, instructions: Option<String>) {
        self.submit(Job::Compact(instructions));
    }

    fn set_model(&self, model: String) {
        self.submit(Job::SetModel(model));
    }

    fn state(&self) -> CoreState {
        let s = lock(&self.shared);
        let mut state = CoreState {
            provider: s.provider.clone(),
            model: s.model.clone(),
            busy: s.busy,
            queued: s.pending,
            messages: s.messages.clone(),
            ..CoreState::default()
        };
        drop(s);
        state.commands = self.commands();
        state.tools = self.tools();
        state.extensions = self
            .host
            .all_extensions()
            .into_iter()
            .map(|e| ExtensionSummary {
                running: matches!(e.phase, Phase::Ready { .. } | Phase::Registering),
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
            .collect();
        state
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

    fn tools(&self) -> Vec<ToolSummary> {
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
        let view = self.host.view();
        builtin
            .iter()
            .cloned()
            .chain(view.registry.tools().map(|t| ToolSummary {
                name: t.name.clone(),
                description: t.description.clone(),
                extension: Some(t.extension.clone()),
            }))
            .collect()
    }

    fn shutdown(&self) {
        self.abort(true);
        lock(&self.jobs).take();
        let w = lock(&self.worker).take();
        if let Some(w) = w {
            if w.join().is_err() {
                log::error!("the agent thread panicked");
            }
        }
        self.host.shutdown();
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The worker: owns the agent, runs one job at a time.
struct Worker {
    host: HostHandle,
    events: Sender<Event>,
    config: EngineConfig,
    shared: Arc<Mutex<Shared>>,
    confirms: Arc<Confirms>,
    agent: Option<Agent>,
}

impl Worker {
    fn run(&mut self, rx: Receiver<(u64, Job)>) {
        for (seq, job) in rx {
            let (canceller, token) = cancel::pair();
            {
                let mut s = lock(&self.shared);
                s.pending = s.pending.saturating_sub(1);
                if seq <= s.dropped {
                    continue;
                }
                s.busy = true;
                s.current = Some(canceller);
            }
            self.run_job(job, &token);
            let messages = self
                .agent
                .as_ref()
                .map(|a| a.transcript().to_vec())
                .unwrap_or_default();
            let mut s = lock(&self.shared);
            s.messages = messages;
            s.busy = false;
            s.current = None;
        }
    }

    fn emit(&self, e: Event) {
        let _ = self.events.send(e);
    }

    fn fail(&self, message: String) {
        self.emit(Event::Error { message });
    }

    fn run_job(&mut self, job: Job, cancel: &CancelToken) {
        match job {
            Job::Prompt(text) => {
                self.prompt(&text, cancel);
                self.emit(Event::Done);
            }
            Job::Command(line) => {
                self.command(&line, cancel);
                self.emit(Event::Done);
            }
            Job::Reload => self.reload(),
            Job::SetModel(model) => {
                self.config.provider.model = Some(model.clone());
                lock(&self.shared).model = model;
                self.agent = None;
            }
            Job::NewSession | Job::Fork(_) | Job::Switch(_) | Job::Compact(_) => {
                self.fail("sessions are not available in this build yet".into());
            }
        }
    }

    fn agent(&mut self) -> Result<&mut Agent, String> {
        if self.agent.is_none() {
            let provider = crate::provider::create(&self.config.provider).map_err(|e| e.to_string())?;
            let opts = agent::Options {
                cwd: self.config.cwd.clone(),
                max_steps: self.config.max_steps,
                yolo: self.config.yolo,
                confirmer: self
                    .config
                    .can_confirm
                    .then(|| self.confirms.clone() as Arc<dyn Confirmer>),
            };
            let sink: Arc<dyn EventSink> = Arc::new(ChannelSink(self.events.clone()));
            self.agent = Some(Agent::new(
                provider,
                self.host.clone(),
                sink,
                opts,
                &self.config.zut_home,
            ));
        }
        Ok(self.agent.as_mut().expect("just created"))
    }

    fn prompt(&mut self, text: &str, cancel: &CancelToken) {
        let agent = match self.agent() {
            Ok(a) => a,
            Err(e) => return self.fail(e),
        };
        match agent.prompt(text, cancel) {
            Outcome::Done { .. } | Outcome::Aborted => {}
            Outcome::MaxSteps { .. } => self.fail(
                "stopped: the --max-steps limit was reached before the model finished".into(),
            ),
            Outcome::Blocked { reason } => self.fail(format!("turn blocked: {reason}")),
            Outcome::Failed { error } => self.fail(error),
        }
    }

    fn reload(&mut self) {
        // The report reaches front ends as a `reload` event; the agent
        // notices the new generation and rebuilds its tools and prompt.
        let _ = self.host.reload();
    }

    /// `/name args`: a core built-in or an extension command.
    fn command(&mut self, line: &str, cancel: &CancelToken) {
        let line = line.trim().trim_start_matches('/');
        let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let lower = name.to_lowercase();
        match lower.as_str() {
            "reload-ext" => {
                self.reload();
                self.emit(Event::CommandResult {
                    name: "reload-ext".into(),
                    action: "noop".into(),
                    text: String::new(),
                });
                return;
            }
            "model" if !args.trim().is_empty() => {
                self.run_job(Job::SetModel(args.trim().to_string()), cancel);
                return;
            }
            _ => {}
        }
        if BUILTIN_COMMANDS.contains(&lower.as_str()) {
            return self.fail(format!(
                "/{name} is a command of the interactive terminal; it cannot run here"
            ));
        }
        let known = self.host.command(name).is_some();
        if !known && self.host.view().registry.gone_command(name).is_none() {
            return self.fail(unknown_command(name, &self.host));
        }
        let reply = match self.host.invoke_command(name, args.trim(), cancel) {
            Ok(r) => r,
            Err(e) if known => return self.fail(format!("/{name}: {e}")),
            Err(e) => return self.fail(e),
        };
        let action = if reply.action.is_empty() {
            "noop".to_string()
        } else {
            reply.action.clone()
        };
        let text = match action.as_str() {
            "prompt" => reply.prompt.clone(),
            "insert" => reply.insert.clone(),
            "display" => reply.display.clone(),
            "open_panel" => reply
                .open_panel
                .as_ref()
                .map(|p| p.title.clone())
                .unwrap_or_default(),
            _ => String::new(),
        };
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

/// "unknown command" with what is available and how to send the text as a
/// prompt instead.
pub fn unknown_command(name: &str, host: &HostHandle) -> String {
    let mut names: Vec<String> = host
        .view()
        .registry
        .commands()
        .map(|c| format!("/{}", c.name))
        .collect();
    names.extend(["/reload-ext".to_string(), "/model".to_string()]);
    format!(
        "unknown command /{name}; available: {}. To send text that starts with / as a prompt, begin it with a space or with //",
        names.join(", ")
    )
}
