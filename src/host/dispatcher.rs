//! The dispatcher: the one thread that owns the host's state.
//!
//! It owns every extension's phase, registrations, subscriptions, warnings
//! and load order, the registry, and the session identity. It runs one
//! `select!` over an urgent lane (shutdown, reload), the command channel
//! from the [`super::HostHandle`], the inbox that every extension's threads
//! post to, and `after(nearest deadline)`. Nothing else changes host state.
//!
//! What callers need on their own threads (the routes of tools and
//! commands, who subscribed to what) is published after every change as an
//! immutable [`View`] behind one leaf lock; a tool call reads it, talks to
//! the extension's connection directly and waits for its reply there, so
//! the dispatcher is never on the hot path of a call.
//!
//! Loading (startup and `/reload-ext`): every extension starts at once (the
//! processes from several threads for a large load, see
//! [`process::launch_all`]); the handshakes run concurrently; registrations
//! and the events an extension causes are held until every handshake has
//! settled, then committed and reported in load order, so "first
//! registration wins" and the event stream never depend on timing. What is
//! held per extension is bounded.

use super::deadlines::Deadlines;
use super::discovery::{self, Entry, Status};
use super::lobby::Lobby;
use super::manifest::{Exec, Manifest};
use super::process;
use super::registry::{CommandEntry, Registry, ToolEntry};
use super::transport::{Conn, ExtId, FromExt, Inbound, ThreadCount, Waiting};
use super::{
    EventOut, ExtReport, HostConfig, LoadReport, Loaded, Outcome, Phase, View, ViewExt, ZUT_VERSION,
};
use crate::events::{Event, ReloadError};
use crossbeam_channel::{Receiver, Sender};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use zut_ext::wire::{
    DecodeError, EventPayload, ExtFrame, HostFrame, Panel, SessionInfo, ADDED_INTERCEPTABLE_EVENTS,
    FEATURE_LATE_REGISTRATION, FEATURE_TOOL_PROGRESS, INTERCEPTABLE_EVENTS, KNOWN_EVENTS,
    PROTOCOL_VERSION,
};

/// Requests from the handle.
pub(super) enum Command {
    /// Start these entries (startup), or those discovered here when
    /// `None`; answered when all have settled. `starting` is where front
    /// ends read their names meanwhile.
    Load {
        entries: Option<Vec<Entry>>,
        starting: super::handle::StartingNames,
        reply: Sender<LoadReport>,
    },
    /// Give up on handshakes still running (the user interrupted).
    AbortLoad,
    /// A snapshot of every extension for doctor, `/ext` and tests.
    Report { reply: Sender<Vec<ExtReport>> },
    /// The active session changed; `event` (if any) was just broadcast.
    Session {
        info: Option<SessionInfo>,
        event: Option<String>,
        states: HashMap<String, Value>,
    },
    /// An extension's state on the active branch (`None` clears).
    State {
        extension: String,
        state: Option<Value>,
    },
}

/// The urgent lane, checked before anything else.
pub(super) enum Urgent {
    /// Stop everything, rediscover with the same inputs, start again.
    Reload { reply: Sender<LoadReport> },
    /// Stop everything and end the dispatcher.
    Shutdown { reply: Sender<Vec<ExtReport>> },
}

/// What `hello_ack.features` lists: the additions beyond the reference
/// protocol this host honours.
pub(super) const HOST_FEATURES: &[&str] = &[FEATURE_LATE_REGISTRATION, FEATURE_TOOL_PROGRESS];

/// Most events one extension may cause before it is reported loaded, and
/// their bytes: past either it is disconnected (a flood before `ready`).
const HELD_EVENTS: usize = 1024;
const HELD_BYTES: usize = 4 * 1024 * 1024;
/// Stray stdout lines of one kind written to the extension log before only
/// counting the rest.
const NOISE_LOGGED: u64 = 20;

/// A registration held until the load is committed.
#[derive(Debug, Clone)]
enum Registration {
    Command {
        name: String,
        description: String,
    },
    Tool {
        name: String,
        description: String,
        schema: Value,
        deferred: bool,
        interactive: bool,
    },
    /// A late `unregister_tool` / `unregister_command`.
    Remove {
        name: String,
        command: bool,
    },
}

/// Everything the dispatcher knows about one discovered directory.
struct ExtState {
    entry: Entry,
    /// `None` for skipped, theme-only and failed-to-start entries.
    conn: Option<Arc<Conn>>,
    id: u64,
    phase: Phase,
    /// Why it could not be loaded (manifest or spawn errors).
    failed: Option<String>,
    version: String,
    events: BTreeSet<String>,
    intercepts: BTreeSet<String>,
    warnings: Vec<String>,
    conflicts: Vec<String>,
    noise: HashMap<&'static str, u64>,
    /// Registrations until the load commits (`None` after).
    staged: Option<Vec<Registration>>,
    /// Events it caused until its `ext_loaded` is out (`None` after).
    held: Option<Vec<Event>>,
    held_bytes: usize,
    /// Hello or ready deadline while handshaking.
    deadline: Option<Instant>,
    /// While registering: the latest moment of auto-ready, however busy it
    /// is (`ZUT_READY_TIMEOUT_MS` after `hello_ack`).
    ready_by: Option<Instant>,
    /// Set once its threads reported the exit.
    exited: Option<Option<std::process::ExitStatus>>,
    /// It answered `shutdown` with `shutdown_ack`.
    acked: bool,
    /// Its log lines while a load commits (registrations refused, names
    /// unregistered), written in one append once the load is reported
    /// ([`ExtState::write_held_log`]); `None`: each line is written at once.
    held_log: Option<Vec<String>>,
}

impl ExtState {
    fn log(&self) -> std::path::PathBuf {
        self.conn
            .as_ref()
            .map(|c| c.log.clone())
            .unwrap_or_default()
    }

    /// Appends a line to its log through its connection (or holds it
    /// while a load commits); an entry that never started has no
    /// connection and its line is dropped.
    fn log_line(&mut self, line: &str) {
        match (&mut self.held_log, &self.conn) {
            (Some(held), Some(_)) => held.push(line.to_string()),
            (None, Some(c)) => c.log_line(line),
            (_, None) => {}
        }
    }

    /// Writes the lines held while its load committed, in one append.
    fn write_held_log(&mut self) {
        let held = self.held_log.take().unwrap_or_default();
        if let (false, Some(c)) = (held.is_empty(), &self.conn) {
            let lines: Vec<&str> = held.iter().map(String::as_str).collect();
            c.log_lines(&lines);
        }
    }

    fn handshaking(&self) -> bool {
        matches!(self.phase, Phase::AwaitingHello | Phase::Registering)
    }

    fn describe(&self, zut_home: &std::path::Path) -> String {
        describe(&self.entry, zut_home)
    }
}

/// The diagnostic block every load error carries.
fn describe(entry: &Entry, zut_home: &std::path::Path) -> String {
    let m = entry.manifest();
    let language = m
        .map(|m| m.language.as_str())
        .filter(|l| !l.is_empty())
        .unwrap_or("(not declared)");
    let exec = m
        .and_then(|m| m.exec.as_ref())
        .map(|e| e.configured().to_string())
        .unwrap_or_default();
    let log = crate::paths::ext_log(zut_home, &entry.name());
    format!(
        "extension {}\n  directory: {}\n  executable: {}\n  language: {}\n  log: {}",
        entry.name(),
        entry.dir.display(),
        exec,
        language,
        log.display()
    )
}

/// What the dispatcher is in the middle of.
enum Job {
    Idle,
    /// Handshakes running; answer `reply` when all have settled.
    Loading {
        reply: Sender<LoadReport>,
        reload: Option<usize>,
    },
    /// Old instances are stopping; then `then`.
    Stopping {
        then: AfterStop,
    },
}

enum AfterStop {
    Reload {
        reply: Sender<LoadReport>,
        stopped: usize,
    },
    Shutdown {
        reply: Sender<Vec<ExtReport>>,
    },
}

pub(super) struct Dispatcher {
    config: HostConfig,
    /// The inputs of discovery, kept for `/reload-ext`.
    discovery: Option<discovery::Options>,
    /// Launcher names resolved on the search path during this load.
    launchers: HashMap<String, std::path::PathBuf>,
    events: EventOut,
    inbox_tx: Sender<Inbound>,
    inbox: Receiver<Inbound>,
    commands: Receiver<Command>,
    urgent: Receiver<Urgent>,
    exts: Vec<ExtState>,
    /// Instances of earlier generations still shutting down.
    retired: Vec<Arc<Conn>>,
    /// Their states, for the final report.
    stopped: Vec<ExtState>,
    registry: Registry,
    generation: u64,
    next_id: Arc<std::sync::atomic::AtomicU64>,
    session: Option<SessionInfo>,
    last_session_event: Option<String>,
    states: HashMap<String, Value>,
    view: Arc<Mutex<Arc<View>>>,
    threads: ThreadCount,
    job: Job,
    /// The skills of the current load (`None` with `--no-skills`).
    skills: Option<Arc<crate::skills::SkillSet>>,
    /// Every connection ever started, joined before the dispatcher ends.
    all: Vec<Arc<Conn>>,
    /// The lobbies of loads, each reading its extensions until released
    /// when its load is over (finished ones are let go at the next load).
    lobbies: Vec<Lobby>,
    pids: Arc<Mutex<Vec<u32>>>,
    /// Unit tests: extensions are played by threads of this process.
    #[cfg(test)]
    peers: Option<super::in_memory::PeerFn>,
}

/// Where the handle finds the dispatcher.
pub(super) struct Channels {
    pub commands: Sender<Command>,
    pub urgent: Sender<Urgent>,
}

impl Dispatcher {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        config: HostConfig,
        discovery: Option<discovery::Options>,
        events: EventOut,
        view: Arc<Mutex<Arc<View>>>,
        threads: ThreadCount,
        next_id: Arc<std::sync::atomic::AtomicU64>,
        pids: Arc<Mutex<Vec<u32>>>,
        #[cfg(test)] peers: Option<super::in_memory::PeerFn>,
    ) -> std::io::Result<(Channels, std::thread::JoinHandle<()>)> {
        let (cmd_tx, cmd_rx) = crossbeam_channel::unbounded();
        let (urgent_tx, urgent_rx) = crossbeam_channel::unbounded();
        let (inbox_tx, inbox_rx) = crossbeam_channel::unbounded();
        let session = config.session.clone();
        let mut d = Dispatcher {
            config,
            discovery,
            launchers: HashMap::new(),
            events,
            inbox_tx,
            inbox: inbox_rx,
            commands: cmd_rx,
            urgent: urgent_rx,
            exts: Vec::new(),
            retired: Vec::new(),
            stopped: Vec::new(),
            registry: Registry::default(),
            generation: 0,
            next_id,
            session,
            last_session_event: None,
            states: HashMap::new(),
            view,
            threads,
            job: Job::Idle,
            skills: None,
            all: Vec::new(),
            lobbies: Vec::new(),
            pids,
            #[cfg(test)]
            peers,
        };
        let handle = std::thread::Builder::new()
            .name("zut-dispatch".into())
            .spawn(move || d.run())?;
        Ok((
            Channels {
                commands: cmd_tx,
                urgent: urgent_tx,
            },
            handle,
        ))
    }

    fn run(&mut self) {
        loop {
            if let Ok(u) = self.urgent.try_recv() {
                self.on_urgent(u);
                if self.step_job() {
                    break;
                }
                continue;
            }
            let deadline = self.nearest_deadline();
            let timer = deadline
                .map(crossbeam_channel::at)
                .unwrap_or_else(crossbeam_channel::never);
            crossbeam_channel::select! {
                recv(self.urgent) -> u => match u {
                    Ok(u) => if self.on_urgent(u) { break },
                    Err(_) => { if self.on_urgent(Urgent::Shutdown { reply: crossbeam_channel::bounded(1).0 }) { break } }
                },
                recv(self.commands) -> c => match c {
                    Ok(c) => self.on_command(c),
                    // The handle is gone: stop everything.
                    Err(_) => { if self.on_urgent(Urgent::Shutdown { reply: crossbeam_channel::bounded(1).0 }) { break } }
                },
                recv(self.inbox) -> m => if let Ok(m) = m { self.on_inbound(m) },
                recv(timer) -> _ => self.on_deadlines(),
            }
            if self.step_job() {
                break;
            }
        }
        // Every extension gets its reader before the readers are joined.
        for lobby in self.lobbies.drain(..) {
            lobby.finish();
        }
        for conn in &self.all {
            conn.join();
        }
        self.publish();
    }

    fn nearest_deadline(&self) -> Option<Instant> {
        self.exts.iter().filter_map(|e| e.deadline).min()
    }

    // ----- commands -----

    /// Returns true when the dispatcher must end now.
    fn on_urgent(&mut self, u: Urgent) -> bool {
        match u {
            Urgent::Reload { reply } => {
                let stopped = self
                    .exts
                    .iter()
                    .filter(|e| e.conn.as_ref().is_some_and(|c| c.connected()))
                    .count();
                // A load in progress is answered with what it has so far.
                if let Job::Loading { reply: r, .. } = std::mem::replace(&mut self.job, Job::Idle) {
                    let _ = r.send(self.report_load(None));
                }
                self.stop_all(true);
                self.job = Job::Stopping {
                    then: AfterStop::Reload { reply, stopped },
                };
                false
            }
            Urgent::Shutdown { reply } => {
                if let Job::Loading { reply: r, .. } = std::mem::replace(&mut self.job, Job::Idle) {
                    for e in &self.exts {
                        if let (Some(c), true) = (&e.conn, e.handshaking()) {
                            c.disconnect("interrupted while loading");
                        }
                    }
                    let _ = r.send(self.report_load(None));
                }
                self.stop_all(false);
                self.job = Job::Stopping {
                    then: AfterStop::Shutdown { reply },
                };
                false
            }
        }
    }

    fn on_command(&mut self, c: Command) {
        match c {
            Command::Load {
                entries,
                starting,
                reply,
            } => {
                let entries = match entries {
                    Some(entries) => entries,
                    None => {
                        let entries = self
                            .discovery
                            .as_ref()
                            .map(discovery::discover)
                            .unwrap_or_default();
                        starting.set(&entries);
                        self.events.emit(Event::Discovered {
                            themes: discovery::theme_paths(&entries),
                        });
                        entries
                    }
                };
                self.start_entries(entries);
                self.job = Job::Loading {
                    reply,
                    reload: None,
                };
            }
            Command::AbortLoad => {
                if matches!(self.job, Job::Loading { .. }) {
                    for e in &self.exts {
                        if let (Some(c), true) = (&e.conn, e.handshaking()) {
                            c.disconnect("interrupted while loading");
                        }
                    }
                }
            }
            Command::Report { reply } => {
                let _ = reply.send(self.exts.iter().map(|e| self.ext_report(e)).collect());
            }
            Command::Session {
                info,
                event,
                states,
            } => {
                self.session = info;
                if event.is_some() {
                    self.last_session_event = event;
                }
                self.states = states;
            }
            Command::State { extension, state } => match state {
                Some(v) => {
                    self.states.insert(extension, v);
                }
                None => {
                    self.states.remove(&extension);
                }
            },
        }
    }

    /// Advances the current job; true when the dispatcher must end.
    fn step_job(&mut self) -> bool {
        match &self.job {
            Job::Idle => false,
            Job::Loading { .. } => {
                if self.exts.iter().any(|e| e.handshaking()) {
                    return false;
                }
                let Job::Loading { reply, reload } = std::mem::replace(&mut self.job, Job::Idle)
                else {
                    return false;
                };
                self.commit();
                let report = self.report_load(reload);
                if let Some(stopped) = reload {
                    let errors: Vec<ReloadError> = report
                        .loaded
                        .iter()
                        .filter_map(|l| match &l.outcome {
                            Outcome::Failed(m) => Some(ReloadError {
                                extension: l.entry.name(),
                                message: m.clone(),
                            }),
                            _ => None,
                        })
                        .collect();
                    self.emit(Event::Reload {
                        stopped,
                        loaded: report.loaded.iter().filter(|l| !matches!(l.outcome, Outcome::Skipped)).count(),
                        ready: report
                            .loaded
                            .iter()
                            .filter(|l| matches!(&l.outcome, Outcome::Started(r) if matches!(r.phase, Phase::Ready { .. })))
                            .count(),
                        errors,
                    });
                }
                let _ = reply.send(report);
                // Calls can reach the extensions now: each gets its reader.
                for lobby in &self.lobbies {
                    lobby.release();
                }
                for e in &mut self.exts {
                    e.write_held_log();
                }
                false
            }
            Job::Stopping { .. } => {
                let still = self.retired.iter().any(|c| !c.exited_seen());
                if still {
                    return false;
                }
                for c in self.retired.drain(..) {
                    c.join();
                }
                let Job::Stopping { then } = std::mem::replace(&mut self.job, Job::Idle) else {
                    return false;
                };
                match then {
                    AfterStop::Shutdown { reply } => {
                        let report = self
                            .exts
                            .iter()
                            .filter(|e| e.conn.is_some())
                            .map(|e| self.ext_report(e))
                            .collect();
                        let _ = reply.send(report);
                        true
                    }
                    AfterStop::Reload { reply, stopped } => {
                        self.stopped.clear();
                        self.generation += 1;
                        self.registry = Registry::default();
                        self.publish();
                        let entries = self
                            .discovery
                            .as_ref()
                            .map(discovery::discover)
                            .unwrap_or_default();
                        self.start_entries(entries);
                        self.job = Job::Loading {
                            reply,
                            reload: Some(stopped),
                        };
                        // Nothing to wait for (no extensions): finish now.
                        self.step_job()
                    }
                }
            }
        }
    }

    /// `shutdown` to every running instance at once; each one's grace
    /// runs from when its `shutdown` is written, and its reader thread
    /// escalates to SIGTERM and SIGKILL past it.
    fn stop_all(&mut self, reload: bool) {
        for e in &self.exts {
            if let Some(c) = &e.conn {
                // Each grace starts once its `shutdown` is written, behind
                // whatever was queued before it: nothing queued is lost.
                c.shutdown();
                self.retired.push(c.clone());
            }
        }
        if !reload {
            // Shutting down: the extensions stay in place, so what they
            // send on their way out is still reported (nothing is lost).
            return;
        }
        // A reload replaces every instance: what the old ones still send
        // is dropped, and their status and widgets go.
        let exts: Vec<ExtState> = self.exts.drain(..).collect();
        for e in exts {
            if e.held.is_none() && !matches!(e.phase, Phase::Disconnected(_)) {
                self.events.emit(Event::ExtChromeClear {
                    extension: e.entry.name(),
                });
            }
            self.stopped.push(e);
        }
        self.registry = Registry::default();
        self.publish();
    }

    // ----- loading -----

    fn start_entries(&mut self, entries: Vec<Entry>) {
        let now = Instant::now();
        let first = self.exts.len();
        for entry in entries {
            let id = self.next_id();
            let mut st = ExtState {
                entry,
                conn: None,
                id,
                phase: Phase::Disconnected(String::new()),
                failed: None,
                version: String::new(),
                events: BTreeSet::new(),
                intercepts: BTreeSet::new(),
                warnings: Vec::new(),
                conflicts: Vec::new(),
                noise: HashMap::new(),
                staged: Some(Vec::new()),
                held: Some(Vec::new()),
                held_bytes: 0,
                deadline: None,
                ready_by: None,
                exited: None,
                acked: false,
                held_log: None,
            };
            match &st.entry.status {
                Status::Load(m) => {
                    // Refused manifest `skills` paths: the extension still
                    // loads; the warning follows its `ext_loaded`.
                    let refused = crate::skills::refusals(&m.bundle());
                    if !refused.is_empty() {
                        let log = crate::paths::ext_log(&self.config.zut_home, &m.name);
                        let lines: Vec<&str> = refused.iter().map(String::as_str).collect();
                        process::log_lines(&log, &lines);
                    }
                    st.warnings.extend(refused);
                    if m.theme_only() {
                        st.phase = Phase::Ready { auto: false };
                    }
                }
                Status::Invalid(e) => st.failed = Some(e.to_string()),
                Status::Disabled(_) | Status::Shadowed { .. } | Status::Untrusted { .. } => {}
            }
            self.exts.push(st);
        }
        // Read by one lobby thread until the load is over.
        let mut waiting = Vec::new();
        self.start_processes(first, now, &mut waiting);
        self.lobbies.retain(|l| !l.is_finished());
        self.lobbies.push(Lobby::open(waiting, &self.threads));
    }

    fn next_id(&self) -> u64 {
        self.next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Starts the process of every extension of `exts[first..]` that
    /// loads, all at once ([`process::launch_all`]), and connects each.
    fn start_processes(&mut self, first: usize, now: Instant, waiting: &mut Vec<Waiting>) {
        #[cfg(test)]
        if let Some(peers) = self.peers.clone() {
            for i in first..self.exts.len() {
                if starts(&self.exts[i]).is_some() {
                    let started = self.spawn_in_memory(i, peers.clone(), waiting);
                    self.started(i, now, started);
                }
            }
            return;
        }
        // Programs first, on this thread: a launcher is looked up once per
        // load (PATH may have changed since the last one), and the Python
        // environment is made once for all the Python extensions.
        self.launchers.clear();
        let (mut resolved, mut unresolved) = (Vec::new(), Vec::new());
        for (i, e) in self.exts.iter().enumerate().skip(first) {
            let Some(m) = starts(e) else {
                continue;
            };
            match program(&mut self.launchers, self.config.search_path.as_deref(), m) {
                Ok(program) => {
                    let python = process::is_python(&m.language, &program);
                    resolved.push((i, m, program, python));
                }
                Err(why) => unresolved.push((i, why)),
            }
        }
        let home = &self.config.zut_home;
        let python_env = if resolved.iter().any(|r| r.3) {
            process::python_env(home)
        } else {
            Vec::new()
        };
        let (order, launches): (Vec<usize>, Vec<process::Launch>) = resolved
            .into_iter()
            .map(|(i, m, program, python)| {
                let launch = process::Launch {
                    program,
                    args: &m.args,
                    dir: &m.dir,
                    log: crate::paths::ext_log(home, &m.name),
                    name: &m.name,
                    version: &m.version,
                    env: if python { &python_env } else { &[] },
                };
                (i, launch)
            })
            .unzip();
        let launched = process::launch_all(&launches);
        for (i, why) in unresolved {
            self.started(i, now, Err(why));
        }
        for (i, launched) in order.into_iter().zip(launched) {
            let started = launched.and_then(|l| self.connect(i, l, waiting));
            self.started(i, now, started);
        }
    }

    /// Records how the start of `exts[i]` went.
    fn started(&mut self, i: usize, now: Instant, started: Result<Arc<Conn>, String>) {
        let st = &mut self.exts[i];
        match started {
            Ok(conn) => {
                st.conn = Some(conn);
                st.phase = Phase::AwaitingHello;
                st.deadline = Some(now + self.config.deadlines.hello);
                st.version = starts(st).map(|m| m.version.clone()).unwrap_or_default();
            }
            Err(why) => st.failed = Some(failed_to_start(&st.entry, &self.config.zut_home, &why)),
        }
    }

    /// Connects a started process: its connection, its pid on record.
    fn connect(
        &mut self,
        i: usize,
        launched: process::Launched,
        waiting: &mut Vec<Waiting>,
    ) -> Result<Arc<Conn>, String> {
        let ext = ExtId {
            id: self.exts[i].id,
            generation: self.generation,
        };
        let conn = Conn::start(
            ext,
            self.exts[i].entry.name(),
            (launched.log, launched.log_file),
            launched.spawned,
            self.config.deadlines,
            self.inbox_tx.clone(),
            self.threads.clone(),
            waiting,
        )
        .map_err(|e| format!("cannot start threads: {e}"))?;
        self.all.push(conn.clone());
        self.pids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(conn.pid);
        Ok(conn)
    }

    /// Starts an in-memory peer instead of a process (unit tests).
    #[cfg(test)]
    fn spawn_in_memory(
        &mut self,
        i: usize,
        peers: super::in_memory::PeerFn,
        waiting: &mut Vec<Waiting>,
    ) -> Result<Arc<Conn>, String> {
        let id = self.exts[i].id;
        let m = starts(&self.exts[i]).ok_or("no manifest")?.clone();
        let log = crate::paths::ext_log(&self.config.zut_home, &m.name);
        let log_file = process::open_log(&log, &m.name, &m.version).map_err(|e| e.to_string())?;
        let ext = ExtId {
            id,
            generation: self.generation,
        };
        let (conn, ends) = Conn::start_in_memory(
            ext,
            m.name.clone(),
            (log, Some(log_file)),
            self.config.deadlines,
            self.inbox_tx.clone(),
            self.threads.clone(),
            waiting,
        )
        .map_err(|e| e.to_string())?;
        let peer = super::in_memory::Peer::new(m.name.clone(), self.generation, ends);
        std::thread::Builder::new()
            .name(format!("peer-{}", m.name))
            .spawn(move || peers(peer))
            .map_err(|e| e.to_string())?;
        self.all.push(conn.clone());
        Ok(conn)
    }

    /// Commits every held registration in load order, then reports each
    /// extension (`ext_loaded` or `ext_error`, its warnings, then what it
    /// sent while loading) and replays the latest session event to those
    /// that want it.
    fn commit(&mut self) {
        for i in 0..self.exts.len() {
            // Written after the load is reported: a refused name is in the
            // report already, and the log can wait that long.
            self.exts[i].held_log = Some(Vec::new());
            let staged = self.exts[i].staged.take().unwrap_or_default();
            if self.exts[i].conn.as_ref().is_some_and(|c| c.connected()) {
                for reg in staged {
                    self.apply_registration(i, reg);
                }
            }
        }
        let home = self.config.zut_home.clone();
        for i in 0..self.exts.len() {
            let e = &mut self.exts[i];
            let held = e.held.take().unwrap_or_default();
            let name = e.entry.name();
            if let Some(message) = &e.failed {
                self.events.emit(Event::ExtError {
                    extension: name,
                    message: message.clone(),
                });
                continue;
            }
            match (&e.entry.status, &e.phase, &e.conn) {
                (Status::Disabled(_), _, _) if e.entry.source == discovery::Source::Flag => {
                    self.events.emit(Event::ExtWarning {
                        extension: name,
                        message:
                            "not loaded: it is disabled in its extension.json (\"enabled\": false)"
                                .into(),
                    });
                }
                (Status::Untrusted { project, .. }, _, _) => {
                    self.events.emit(Event::ExtWarning {
                        extension: name,
                        message: Status::untrusted_message(project),
                    });
                }
                (Status::Disabled(_) | Status::Shadowed { .. }, _, _) => {}
                (_, Phase::Disconnected(reason), Some(_)) => {
                    let message = format!(
                        "failed to load: {reason}\n{}{}",
                        e.describe(&home),
                        stderr_tail(reason, &e.log())
                    );
                    e.failed = Some(message.clone());
                    self.events.emit(Event::ExtError {
                        extension: name,
                        message,
                    });
                }
                _ => {
                    let (commands, tools) = registered(&self.registry, e.id);
                    self.events.emit(Event::ExtLoaded {
                        extension: name.clone(),
                        version: e.version.clone(),
                        commands,
                        tools,
                        source: e.entry.source.as_str().to_string(),
                    });
                    for message in e.warnings.iter().chain(e.conflicts.iter()) {
                        self.events.emit(Event::ExtWarning {
                            extension: name.clone(),
                            message: message.clone(),
                        });
                    }
                    for ev in held {
                        self.events.emit(ev);
                    }
                }
            }
        }
        self.skills = self.config.skills.then(|| {
            let set = crate::skills::discover(
                &self.config.cwd,
                &self.config.zut_home,
                crate::skills::home_dir().as_deref(),
                &discovery::skill_bundles(self.exts.iter().map(|e| &e.entry)),
            );
            for w in &set.warnings {
                match &w.extension {
                    Some(ext) => {
                        self.events.emit(Event::ExtWarning {
                            extension: ext.clone(),
                            message: w.message.clone(),
                        });
                    }
                    None => log::warn!("{}", w.message),
                }
            }
            Arc::new(set)
        });
        self.publish();
        if let Some(event) = self.last_session_event.clone() {
            for e in &self.exts {
                if let (Some(c), true) = (&e.conn, e.events.contains(&event)) {
                    let payload = EventPayload {
                        session: self.session.clone(),
                        state: self.states.get(&e.entry.name()).cloned(),
                        ..EventPayload::named(&event)
                    };
                    let _ = c.try_send(&HostFrame::Event(payload));
                }
            }
        }
    }

    fn report_load(&self, reload: Option<usize>) -> LoadReport {
        let _ = reload;
        LoadReport {
            generation: self.generation,
            loaded: self
                .exts
                .iter()
                .map(|e| Loaded {
                    entry: e.entry.clone(),
                    outcome: match (&e.failed, &e.entry.status, &e.conn) {
                        (Some(m), _, _) => Outcome::Failed(m.clone()),
                        (
                            None,
                            Status::Disabled(_)
                            | Status::Shadowed { .. }
                            | Status::Untrusted { .. },
                            _,
                        ) => Outcome::Skipped,
                        (None, _, None) => Outcome::ThemeOnly,
                        (None, _, Some(_)) => Outcome::Started(Box::new(self.ext_report(e))),
                    },
                })
                .collect(),
        }
    }

    fn ext_report(&self, e: &ExtState) -> ExtReport {
        let (commands, tools) = registered(&self.registry, e.id);
        let tool_kinds = self
            .registry
            .tools()
            .filter(|t| t.ext == e.id)
            .map(|t| (t.name.clone(), t.deferred, t.interactive))
            .collect();
        ExtReport {
            id: e.id,
            name: e.entry.name(),
            source: e.entry.source.as_str().to_string(),
            pid: e.conn.as_ref().map(|c| c.pid),
            log: e.log(),
            version: e.version.clone(),
            phase: e.phase.clone(),
            warnings: e.warnings.clone(),
            conflicts: e.conflicts.clone(),
            noise: e.noise.clone(),
            commands,
            tools,
            tool_kinds,
            exit: e.exited.flatten(),
            error: e.failed.clone(),
            shutdown_acked: e.acked,
        }
    }

    /// Publishes what callers need: routes and subscriptions of the
    /// extensions reported loaded and still connected.
    fn publish(&self) {
        let exts = self
            .exts
            .iter()
            .filter(|e| e.held.is_none())
            .filter_map(|e| {
                let conn = e.conn.as_ref()?;
                conn.connected().then(|| ViewExt {
                    conn: conn.clone(),
                    id: e.id,
                    name: e.entry.name(),
                    events: e.events.iter().cloned().collect(),
                    intercepts: e.intercepts.iter().cloned().collect(),
                })
            })
            .collect();
        let view = View {
            generation: self.generation,
            registry: self.registry.clone(),
            exts,
            deadlines: self.config.deadlines,
            skills: self.skills.clone(),
            disabled_hint: discovery::disabled_hint(self.exts.iter().map(|e| &e.entry)),
        };
        *self.view.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(view);
    }

    // ----- deadlines -----

    fn on_deadlines(&mut self) {
        let now = Instant::now();
        let d: Deadlines = self.config.deadlines;
        let mut changed = false;
        for i in 0..self.exts.len() {
            let e = &mut self.exts[i];
            if e.deadline.is_none_or(|t| t > now) {
                continue;
            }
            e.deadline = None;
            match e.phase {
                Phase::AwaitingHello => {
                    if let Some(c) = &e.conn {
                        c.disconnect(&format!(
                            "sent no hello within {} ms (write each frame as one line and flush stdout after it)",
                            d.hello.as_millis()
                        ));
                    }
                }
                Phase::Registering => {
                    let msg = if e.ready_by.is_some_and(|t| t <= now) {
                        format!(
                            "sent no ready frame within {} ms; auto-readied",
                            d.ready.as_millis()
                        )
                    } else {
                        format!(
                            "sent no ready frame and nothing else for {} ms; auto-readied",
                            d.idle_ready.as_millis()
                        )
                    };
                    e.ready_by = None;
                    e.log_line(&msg);
                    e.warnings.push(msg);
                    e.phase = Phase::Ready { auto: true };
                    changed = true;
                }
                _ => {}
            }
        }
        if changed {
            self.after_ready_change();
        }
    }

    fn after_ready_change(&mut self) {}

    // ----- the inbox -----

    fn index_of(&self, ext: ExtId) -> Option<usize> {
        if ext.generation != self.generation {
            return None;
        }
        self.exts.iter().position(|e| e.id == ext.id)
    }

    fn on_inbound(&mut self, m: Inbound) {
        let conn = self.all.iter().find(|c| c.ext == m.ext).cloned();
        let exited = matches!(m.msg, FromExt::Exited(_));
        self.handle_inbound(m);
        // Counted only now: a reply may take the fast path once every
        // earlier message of its extension has been fully handled.
        if let Some(c) = &conn {
            if exited {
                c.mark_exited_seen();
            }
            c.handled_one();
        }
        if exited {
            // Instances that are over and whose threads have ended are
            // let go (those still ending go at a later exit, or at the
            // end of the run).
            self.all
                .retain(|c| !(c.exited_seen() && c.join_if_finished()));
        }
    }

    fn handle_inbound(&mut self, m: Inbound) {
        let conn = self.all.iter().find(|c| c.ext == m.ext).cloned();
        let Some(i) = self.index_of(m.ext) else {
            // A stopped instance: its exit and ack are recorded for the
            // final report; its frames (an earlier generation's, or sent on
            // its way out) are logged, not shown.
            if let Some(st) = self.stopped.iter_mut().find(|e| e.id == m.ext.id) {
                match &m.msg {
                    FromExt::Exited(status) => st.exited = Some(*status),
                    FromExt::Frame(ExtFrame::ShutdownAck) => st.acked = true,
                    _ => {}
                }
            }
            match (&m.msg, &conn) {
                (FromExt::Frame(f), Some(c)) => c.log_line(&format!(
                    "{} frame after shutdown began: logged, not shown",
                    f.type_name()
                )),
                // Calls still waiting on a replaced instance fail now, not
                // at their deadline.
                (FromExt::Disconnected { .. }, Some(c)) => c.fail_pending(),
                _ => {}
            }
            return;
        };
        match m.msg {
            FromExt::Frame(frame) => self.on_frame(i, frame),
            FromExt::Reply(kind, id, frame) => {
                let frame_type = frame.type_name();
                let resolved = self.exts[i]
                    .conn
                    .as_ref()
                    .is_some_and(|c| c.resolve(id, kind, frame));
                if !resolved {
                    self.stray_reply(i, frame_type, &id.to_string());
                }
            }
            FromExt::StrayReply { frame_type, id } => self.stray_reply(i, frame_type, &id),
            FromExt::UnknownType(name) => {
                if self.exts[i].phase == Phase::AwaitingHello {
                    self.violation(i, format!("protocol violation: sent a frame of unknown type {name:?} before hello (hello must be the first frame)"));
                } else {
                    let n = self.exts[i].noise.entry("unknown frame type").or_insert(0);
                    *n += 1;
                    let seen = *n;
                    if seen <= NOISE_LOGGED {
                        self.exts[i].log_line(&format!("frame of unknown type {name:?} ignored"));
                    }
                }
            }
            FromExt::Malformed { error, preview } => self.malformed(i, error, preview),
            FromExt::Disconnected {
                reason,
                by_shutdown,
            } => self.on_disconnected(i, reason, by_shutdown),
            FromExt::Dropped(frame_type) => {
                // Reported once (the terminal may send many keys in a
                // row), then logged, then only counted.
                let warning = format!(
                    "a {frame_type} frame was dropped: its queue was full (it is not reading its stdin)"
                );
                if self.count_noise(i, "dropped frame", warning) <= NOISE_LOGGED {
                    self.exts[i].log_line(&format!(
                        "{frame_type} frame dropped: the queue to the extension was full"
                    ));
                }
            }
            FromExt::Exited(status) => {
                self.exts[i].exited = Some(status);
            }
        }
    }

    fn stray_reply(&mut self, i: usize, frame_type: &str, id: &str) {
        // Authors want to know: it usually means a reply came after the
        // deadline or after a tool_cancel.
        self.exts[i].log_line(&format!(
            "{frame_type} for id {id} ignored: nobody waits for it (late, cancelled or unknown)"
        ));
    }

    fn violation(&self, i: usize, why: String) {
        if let Some(c) = &self.exts[i].conn {
            c.disconnect(&why);
        }
    }

    /// The transport closed the connection; the phase and what the user is
    /// told are decided here. `closing`: its end belongs to a shutdown
    /// (an end that came before the shutdown began is reported).
    fn on_disconnected(&mut self, i: usize, reason: String, closing: bool) {
        let e = &mut self.exts[i];
        let reason = match (&e.phase, reason.strip_prefix("exited: ")) {
            (Phase::AwaitingHello, Some(how)) => format!("exited before hello: {how}"),
            (Phase::AwaitingHello, None) if reason == "closed its stdout" => {
                "closed its stdout before hello without exiting".to_string()
            }
            _ => reason,
        };
        e.phase = Phase::Disconnected(reason.clone());
        e.deadline = None;
        self.registry.remove_extension(e.id, &reason);
        if e.held.is_none() && !closing {
            let name = e.entry.name();
            self.events.emit(Event::ExtError {
                extension: name.clone(),
                message: format!("{reason}{}", stderr_tail(&reason, &e.log())),
            });
            self.events.emit(Event::ExtChromeClear { extension: name });
        }
        self.publish();
        // Callers woken now already see the extension gone, in the
        // registry and on the event stream.
        if let Some(c) = &self.exts[i].conn {
            c.fail_pending();
        }
    }

    /// Emits an event an extension caused; until its `ext_loaded` is out
    /// it is held and reported right after it (bounded).
    fn emit_from(&mut self, i: usize, event: Event) {
        let e = &mut self.exts[i];
        match e.held.as_mut() {
            None => {
                self.events.emit(event);
            }
            Some(held) => {
                let size = event_size(&event);
                if held.len() >= HELD_EVENTS || e.held_bytes + size > HELD_BYTES {
                    let why = format!(
                        "disconnected: it sent more than {HELD_EVENTS} events or {} MiB before it was loaded",
                        HELD_BYTES >> 20
                    );
                    if let Some(c) = &e.conn {
                        c.disconnect(&why);
                    }
                    return;
                }
                e.held_bytes += size;
                held.push(event);
            }
        }
    }

    fn emit(&self, event: Event) {
        self.events.emit(event);
    }

    /// Records a warning (or, with `conflict`, a refused registration) for
    /// doctor, and reports it now unless `ext_loaded` is still to come.
    fn record_warning(&mut self, i: usize, message: String, conflict: bool) {
        let e = &mut self.exts[i];
        if conflict {
            e.conflicts.push(message.clone());
        } else {
            e.warnings.push(message.clone());
        }
        if e.held.is_none() {
            self.events.emit(Event::ExtWarning {
                extension: e.entry.name(),
                message,
            });
        }
    }

    fn count_noise(&mut self, i: usize, kind: &'static str, warning: String) -> u64 {
        let n = self.exts[i].noise.entry(kind).or_insert(0);
        *n += 1;
        let seen = *n;
        if seen == 1 {
            self.record_warning(i, warning, false);
        }
        seen
    }

    fn malformed(&mut self, i: usize, error: DecodeError, preview: String) {
        let (kind, warning) = match &error {
            DecodeError::BadFrame { frame_type, error } if self.exts[i].phase == Phase::AwaitingHello => {
                return self.violation(i, format!("protocol violation: sent a malformed {frame_type} frame before hello: {error}"));
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
        let seen = self.count_noise(i, kind, warning);
        // A flood must not fill the disk: the first lines are logged, the
        // rest only counted (doctor shows the count).
        let e = &mut self.exts[i];
        if seen <= NOISE_LOGGED {
            e.log_line(&format!("stdout line skipped ({error}): {preview}"));
        }
        if seen == NOISE_LOGGED {
            e.log_line(&format!("further {kind} lines are counted, not logged"));
        }
    }

    fn on_frame(&mut self, i: usize, frame: ExtFrame) {
        let name = self.exts[i].entry.name();
        if self.exts[i].phase == Phase::AwaitingHello {
            return match frame {
                ExtFrame::Hello {
                    protocol_version,
                    name,
                    version,
                    capabilities,
                } => self.on_hello(i, protocol_version, name, version, capabilities),
                other => self.violation(
                    i,
                    format!(
                        "protocol violation: sent {} frame before hello (hello must be the first frame)",
                        with_article(other.type_name())
                    ),
                ),
            };
        }
        if self.exts[i].phase == Phase::Registering {
            Self::restart_idle(&mut self.exts[i], &self.config.deadlines, Instant::now());
        }
        match frame {
            ExtFrame::Hello { .. } => self.exts[i].log_line("duplicate hello ignored"),
            ExtFrame::UnregisterTool { name } => self.unregister(i, name, false),
            ExtFrame::UnregisterCommand { name } => self.unregister(i, name, true),
            ExtFrame::ToolProgress { id, .. } => {
                // Progress normally reaches its call on the reader; one that
                // gets here matched no call still waiting.
                self.exts[i].log_line(&format!(
                    "tool_progress for id {id} ignored: no such call is running"
                ))
            }
            ExtFrame::RegisterCommand { name, description } => {
                self.register(i, Registration::Command { name, description })
            }
            ExtFrame::RegisterTool {
                name,
                description,
                schema,
                deferred,
                interactive,
            } => self.register(
                i,
                Registration::Tool {
                    name,
                    description,
                    schema: schema.unwrap_or(Value::Null),
                    deferred,
                    interactive,
                },
            ),
            ExtFrame::Ready => {
                let e = &mut self.exts[i];
                if e.phase == Phase::Registering {
                    e.phase = Phase::Ready { auto: false };
                    e.deadline = None;
                    e.ready_by = None;
                }
            }
            ExtFrame::Subscribe { events, intercept } => self.on_subscribe(i, events, intercept),
            f @ (ExtFrame::ToolResult { .. }
            | ExtFrame::CommandResponse { .. }
            | ExtFrame::EventInterceptResponse { .. }) => {
                // Replies normally complete their call on the reader; one
                // that reaches here had no numeric id.
                self.stray_reply(i, f.type_name(), "(not a host id)");
            }
            ExtFrame::Notify { level, message } => {
                if !message.trim().is_empty() {
                    self.emit_from(
                        i,
                        Event::ExtNotify {
                            extension: name,
                            level: normalise_level(&level),
                            message,
                        },
                    )
                }
            }
            ExtFrame::Status { key, level, text } => self.emit_from(
                i,
                Event::ExtStatus {
                    extension: name,
                    key,
                    level: normalise_level(&level),
                    text,
                },
            ),
            // The position as sent: the terminal places it, JSON and RPC
            // clients see what the extension asked for.
            ExtFrame::Widget {
                id,
                title,
                lines,
                position,
            } => self.emit_from(
                i,
                Event::ExtWidget {
                    extension: name,
                    id,
                    position,
                    title,
                    lines,
                },
            ),
            ExtFrame::WidgetClear { id } => self.emit_from(
                i,
                Event::ExtWidgetClear {
                    extension: name,
                    id,
                },
            ),
            ExtFrame::Alert { kind, reason } => self.emit_from(
                i,
                Event::ExtAlert {
                    extension: name,
                    kind,
                    reason,
                },
            ),
            ExtFrame::ClearNotes => self.emit_from(i, Event::ExtClearNotes { extension: name }),
            ExtFrame::Submit { text } => {
                let text = text.trim();
                if !text.is_empty() {
                    self.emit_from(
                        i,
                        Event::ExtSubmit {
                            extension: name,
                            text: text.to_string(),
                        },
                    )
                }
            }
            ExtFrame::SubmitSlash { text } => {
                let text = text.trim();
                if text.starts_with('/') {
                    self.emit_from(
                        i,
                        Event::ExtSubmitSlash {
                            extension: name,
                            text: text.to_string(),
                        },
                    )
                } else {
                    self.exts[i].log_line("submit_slash refused: text does not start with '/'");
                }
            }
            ExtFrame::OpenPanel { panel } => {
                // Nobody can see or answer it outside the terminal: the
                // extension hears so at once instead of waiting for input.
                if !self.config.interactive {
                    if let Some(c) = &self.exts[i].conn {
                        let _ = c.try_send(&HostFrame::PanelClose {
                            panel_id: panel.id.clone(),
                        });
                    }
                }
                self.emit_from(
                    i,
                    Event::ExtOpenPanel {
                        extension: name,
                        panel,
                    },
                )
            }
            ExtFrame::PanelRender {
                panel_id,
                title,
                lines,
                footer,
            } => self.emit_from(
                i,
                Event::ExtPanelRender {
                    extension: name,
                    panel: Panel {
                        id: panel_id,
                        title,
                        lines,
                        footer,
                    },
                },
            ),
            ExtFrame::PanelClose { panel_id } => self.emit_from(
                i,
                Event::ExtPanelClose {
                    extension: name,
                    panel_id,
                },
            ),
            ExtFrame::ShutdownAck => self.exts[i].acked = true,
            ExtFrame::Unknown => {}
        }
    }

    fn on_hello(
        &mut self,
        i: usize,
        protocol_version: u32,
        name: String,
        version: String,
        caps: Vec<String>,
    ) {
        if protocol_version != PROTOCOL_VERSION {
            return self.violation(i, format!("unsupported protocol version {protocol_version} in hello (zut speaks {PROTOCOL_VERSION})"));
        }
        let expected = self.exts[i].entry.name();
        if name != expected {
            return self.violation(
                i,
                format!(
                    "hello names the extension {name:?} but its extension.json says {expected:?}"
                ),
            );
        }
        let e = &mut self.exts[i];
        e.version = version;
        let Some(conn) = e.conn.clone() else { return };
        conn.tool_cancel.store(
            caps.iter().any(|c| c == zut_ext::wire::CAP_TOOL_CANCEL),
            std::sync::atomic::Ordering::SeqCst,
        );
        let ack = HostFrame::HelloAck {
            protocol_version: PROTOCOL_VERSION,
            zut_version: ZUT_VERSION.to_string(),
            provider: self.config.provider.clone(),
            model: self.config.model.clone(),
            cwd: self.config.cwd.display().to_string(),
            extension_dir: e.entry.dir.display().to_string(),
            data_dir: e.entry.dir.display().to_string(),
            session: self.session.clone(),
            features: HOST_FEATURES.iter().map(|f| f.to_string()).collect(),
        };
        if conn.try_send(&ack).is_ok() {
            let now = Instant::now();
            e.phase = Phase::Registering;
            e.ready_by = Some(now + self.config.deadlines.ready);
            e.deadline = e.ready_by;
            Self::restart_idle(e, &self.config.deadlines, now);
        }
    }

    fn on_subscribe(&mut self, i: usize, events: Vec<String>, intercept: Vec<String>) {
        let e = &mut self.exts[i];
        for ev in events {
            if !KNOWN_EVENTS.contains(&ev.as_str()) {
                e.log_line(&format!(
                    "subscribe: unknown event {ev:?} (kept, never sent)"
                ));
            }
            e.events.insert(ev);
        }
        for ev in intercept {
            if INTERCEPTABLE_EVENTS.contains(&ev.as_str())
                || ADDED_INTERCEPTABLE_EVENTS.contains(&ev.as_str())
            {
                e.intercepts.insert(ev);
            } else {
                e.log_line(&format!(
                    "subscribe: event {ev:?} cannot be intercepted (ignored)"
                ));
            }
        }
        if e.held.is_none() {
            self.publish();
        }
    }

    fn register(&mut self, i: usize, reg: Registration) {
        if let Some(staged) = self.exts[i].staged.as_mut() {
            staged.push(reg);
            return;
        }
        let before = registered(&self.registry, self.exts[i].id);
        self.apply_registration(i, reg);
        self.publish();
        self.tools_changed(i, before);
    }

    /// A late `unregister_tool` / `unregister_command`: the name is gone
    /// from the next provider request (a command at once).
    fn unregister(&mut self, i: usize, name: String, command: bool) {
        if let Some(staged) = self.exts[i].staged.as_mut() {
            staged.push(Registration::Remove { name, command });
            return;
        }
        let before = registered(&self.registry, self.exts[i].id);
        self.apply_registration(i, Registration::Remove { name, command });
        self.publish();
        self.tools_changed(i, before);
    }

    /// Sends `ext_tools_changed` when extension `i`'s names differ from
    /// `before` (commands, tools) and its `ext_loaded` is out.
    fn tools_changed(&mut self, i: usize, before: (Vec<String>, Vec<String>)) {
        let now = registered(&self.registry, self.exts[i].id);
        if now == before || self.exts[i].held.is_some() {
            return;
        }
        let (commands, tools) = now;
        self.emit(Event::ExtToolsChanged {
            extension: self.exts[i].entry.name(),
            tools,
            commands,
        });
    }

    /// Moves the idle auto-ready deadline to 250 ms from `now`, never past
    /// the ready timeout.
    fn restart_idle(e: &mut ExtState, d: &Deadlines, now: Instant) {
        let idle = now + d.idle_ready;
        e.deadline = Some(match e.ready_by {
            Some(by) => by.min(idle),
            None => idle,
        });
    }

    /// Applies a registration now; refusals go to the extension's log, its
    /// conflicts (doctor) and, after loading, the event stream.
    fn apply_registration(&mut self, i: usize, reg: Registration) {
        let (id, name) = (self.exts[i].id, self.exts[i].entry.name());
        let result = match reg {
            Registration::Command {
                name: cmd,
                description,
            } => self.registry.add_command(CommandEntry {
                name: cmd,
                description,
                ext: id,
                extension: name,
            }),
            Registration::Tool {
                name: tool,
                description,
                schema,
                deferred,
                interactive,
            } => self.registry.add_tool(ToolEntry {
                name: tool,
                description,
                schema,
                deferred,
                interactive,
                ext: id,
                extension: name,
            }),
            Registration::Remove {
                name: gone,
                command,
            } => {
                let removed = if command {
                    self.registry.remove_command(id, &gone)
                } else {
                    self.registry.remove_tool(id, &gone)
                };
                let kind = if command { "command" } else { "tool" };
                let msg = if removed {
                    format!("unregistered {kind} {gone:?}")
                } else {
                    format!("unregister_{kind} {gone:?} ignored: it has no such {kind}")
                };
                self.exts[i].log_line(&msg);
                return;
            }
        };
        if let Err(refused) = result {
            let reason = refused.to_string();
            self.exts[i].log_line(&reason);
            self.record_warning(i, reason, true);
        }
    }
}

/// The manifest of an extension whose process a load starts: one that
/// loads and is not a theme only.
fn starts(e: &ExtState) -> Option<&Manifest> {
    match &e.entry.status {
        Status::Load(m) if !m.theme_only() => Some(m),
        _ => None,
    }
}

/// The program that runs extension `m`. A launcher (`python3`, `node`)
/// is looked up once per load, not once per extension that names it.
fn program(
    launchers: &mut HashMap<String, std::path::PathBuf>,
    search_path: Option<&std::ffi::OsStr>,
    m: &Manifest,
) -> Result<std::path::PathBuf, String> {
    match &m.exec {
        Some(exec @ Exec::Launcher { configured }) => {
            if let Some(found) = launchers.get(configured) {
                return Ok(found.clone());
            }
            let found = exec.program(search_path).map_err(|e| e.to_string())?;
            launchers.insert(configured.clone(), found.clone());
            Ok(found)
        }
        Some(exec) => exec.program(search_path).map_err(|e| e.to_string()),
        None => Err("no exec".into()),
    }
}

/// Why an extension did not start, with where it was found: described
/// only when it fails, since most starts never need the text.
fn failed_to_start(entry: &Entry, zut_home: &std::path::Path, what: &str) -> String {
    format!("failed to start: {what}\n{}", describe(entry, zut_home))
}

/// Names an extension registered, commands and tools.
fn registered(registry: &Registry, id: u64) -> (Vec<String>, Vec<String>) {
    (
        registry
            .commands()
            .filter(|c| c.ext == id)
            .map(|c| c.name.clone())
            .collect(),
        registry
            .tools()
            .filter(|t| t.ext == id)
            .map(|t| t.name.clone())
            .collect(),
    )
}

/// Rough size of an event held while loading (its text fields).
fn event_size(e: &Event) -> usize {
    64 + match e {
        Event::ExtNotify { message, .. } => message.len(),
        Event::ExtWidget { lines, title, .. } => {
            title.len() + lines.iter().map(String::len).sum::<usize>()
        }
        Event::ExtOpenPanel { panel, .. } | Event::ExtPanelRender { panel, .. } => {
            panel.title.len() + panel.lines.iter().map(String::len).sum::<usize>()
        }
        Event::ExtStatus { text, .. } | Event::ExtSubmit { text, .. } => text.len(),
        _ => 0,
    }
}

/// `word` with its indefinite article: `a notify`, `an unknown`.
fn with_article(word: &str) -> String {
    let vowel = word
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} {word}", if vowel { "an" } else { "a" })
}

/// `info`, `success`, `warn`, `error`; anything else reads as `info`.
fn normalise_level(level: &str) -> String {
    match level.trim().to_ascii_lowercase().as_str() {
        l @ ("success" | "warn" | "error") => l.to_string(),
        "warning" => "warn".to_string(),
        _ => "info".to_string(),
    }
}

/// The stderr tail of [`process::stderr_tail`], for the failures a crash
/// explains (an exit, a closed stdout, no hello).
fn stderr_tail(reason: &str, log: &std::path::Path) -> String {
    if !(reason.contains("exited")
        || reason.contains("closed its stdout")
        || reason.contains("no hello"))
    {
        return String::new();
    }
    process::stderr_tail(log)
}
