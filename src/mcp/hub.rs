//! Every configured MCP server of a run, started in the background.
//!
//! Role: [`Hub::start`] launches each server on a thread of its own at boot
//! (in parallel with each other and with the extensions) and reports each
//! one on the event stream as the participant `mcp:NAME`: `ext_loaded`
//! (tools = the `mcp__…` names, source `mcp`) or `ext_error`, then
//! `ext_tools_changed` after a `list_changed` re-list. The agent asks for
//! [`Hub::tools`] and routes `mcp__…` calls through [`Hub::call`].
//!
//! Invariants:
//! - nothing here blocks a caller on a server still starting except
//!   [`Hub::wait_ready`], which is bounded by each server's own startup
//!   timeout (a prompt's first request waits; the terminal never does);
//! - a failing server never stops the others;
//! - [`Hub::shutdown`] (also on drop) stops every server, starting ones
//!   included, in parallel: stdin closed, the shutdown grace, SIGTERM,
//!   SIGKILL.

use super::client::{Client, OnChange, Progress, Tool};
use super::config::{Loaded, ServerSpec};
use crate::cancel::CancelToken;
use crate::events::{Event, EventSink};
use crossbeam_channel::Receiver;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zut_ext::wire::ContentBlock;

/// Where one server is in its life.
#[derive(Clone)]
enum State {
    Starting(Option<Arc<Client>>),
    Ready(Arc<Client>),
    Failed(String),
    Stopped,
}

struct Slot {
    spec: ServerSpec,
    state: Mutex<State>,
    /// Disconnects when the start thread has finished (ready or failed).
    done: Receiver<()>,
    started: Instant,
    log: PathBuf,
}

/// One MCP tool as the agent sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct HubTool {
    pub tool: Tool,
    /// The server's name in the config.
    pub server: String,
    /// Offered only after `tool_search` activated it.
    pub deferred: bool,
    /// A call asks for confirmation (the server's `confirm` and not
    /// `readOnlyHint`).
    pub confirm: bool,
}

/// What `zut ext doctor`, `/ext` and `zut mcp doctor` show per server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    /// `starting`, `ready`, `failed` or `stopped`.
    pub state: &'static str,
    /// The `mcp__…` names of its tools (when ready).
    pub tools: Vec<String>,
    pub protocol_version: String,
    /// The server's own version (`serverInfo.version`).
    pub version: String,
    /// The command line it was started with.
    pub command: String,
    pub log: PathBuf,
    /// The failure, for `failed`.
    pub message: String,
    pub origin: String,
}

/// The run's MCP servers; [`Hub::default`] has none.
#[derive(Default)]
pub struct Hub {
    slots: Vec<Arc<Slot>>,
    /// Bumped whenever the set of MCP tools changes (a server became ready,
    /// failed, or re-listed).
    generation: Arc<AtomicU64>,
    stopped: AtomicBool,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The participant name of server `name` on the event stream.
pub fn participant(name: &str) -> String {
    format!("mcp:{name}")
}

impl Hub {
    /// Reports the config's warnings and starts every server in the
    /// background; returns at once.
    pub fn start(
        loaded: Loaded,
        project: &Path,
        zut_home: &Path,
        sink: Arc<dyn EventSink>,
    ) -> Arc<Hub> {
        for (what, message) in &loaded.warnings {
            let extension = if super::config::valid_name(what) {
                participant(what)
            } else {
                "mcp".to_string()
            };
            sink.emit(Event::ExtWarning {
                extension,
                message: message.clone(),
            });
        }
        let mut hub = Hub::default();
        let mut senders = Vec::new();
        for spec in loaded.servers {
            let (tx, done) = crossbeam_channel::bounded::<()>(0);
            senders.push(tx);
            hub.slots.push(Arc::new(Slot {
                log: super::client::log_path(zut_home, &spec.name),
                spec,
                state: Mutex::new(State::Starting(None)),
                done,
                started: Instant::now(),
            }));
        }
        let hub = Arc::new(hub);
        for (slot, tx) in hub.slots.clone().into_iter().zip(senders) {
            let (project, home, sink) =
                (project.to_path_buf(), zut_home.to_path_buf(), sink.clone());
            let generation = hub.generation.clone();
            let weak = Arc::downgrade(&hub);
            let spawned = std::thread::Builder::new()
                .name(format!("mcp-start-{}", slot.spec.name))
                .spawn(move || {
                    let stopped = move || {
                        weak.upgrade()
                            .is_none_or(|h| h.stopped.load(Ordering::SeqCst))
                    };
                    run_start(&slot, &project, &home, &sink, &generation, &stopped);
                    drop(tx);
                });
            match spawned {
                Ok(t) => lock(&hub.threads).push(t),
                Err(e) => log::error!("cannot start a thread for an MCP server: {e}"),
            }
        }
        hub
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Changes whenever the MCP tool set does.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Waits for servers still starting, each up to its own startup
    /// timeout (counted from boot), or until `cancel`.
    pub fn wait_ready(&self, cancel: &CancelToken) {
        for slot in &self.slots {
            let deadline = slot.started + slot.spec.startup_timeout + Duration::from_millis(500);
            crossbeam_channel::select! {
                recv(slot.done) -> _ => {},
                recv(cancel.receiver()) -> _ => return,
                default(deadline.saturating_duration_since(Instant::now())) => {},
            }
        }
    }

    /// The tools of every ready server, in config order.
    pub fn tools(&self) -> Vec<HubTool> {
        let mut out = Vec::new();
        for slot in &self.slots {
            if let State::Ready(c) = &*lock(&slot.state) {
                for t in c.tools().iter() {
                    out.push(HubTool {
                        tool: t.clone(),
                        server: slot.spec.name.clone(),
                        deferred: slot.spec.deferred,
                        confirm: slot.spec.confirm && !t.read_only,
                    });
                }
            }
        }
        out
    }

    /// The tool the model calls `name`, if a ready server offers it.
    pub fn tool(&self, name: &str) -> Option<HubTool> {
        if !name.starts_with("mcp__") {
            return None;
        }
        self.slots
            .iter()
            .find_map(|slot| match &*lock(&slot.state) {
                State::Ready(c) => c.tools().iter().find(|t| t.name == name).map(|t| HubTool {
                    tool: t.clone(),
                    server: slot.spec.name.clone(),
                    deferred: slot.spec.deferred,
                    confirm: slot.spec.confirm && !t.read_only,
                }),
                _ => None,
            })
    }

    /// Calls the MCP tool `name`: `None` when no server offers it; else
    /// the content, `is_error` and the participant that served it.
    pub fn call(
        &self,
        name: &str,
        args: &Value,
        cancel: &CancelToken,
        progress: &mut dyn FnMut(Progress),
    ) -> Option<(Vec<ContentBlock>, bool, String)> {
        let found = self
            .slots
            .iter()
            .find_map(|slot| match &*lock(&slot.state) {
                State::Ready(c) => c
                    .tools()
                    .iter()
                    .find(|t| t.name == name)
                    .map(|t| (c.clone(), t.remote.clone())),
                _ => None,
            });
        let (client, remote) = found?;
        let who = participant(client.name());
        let args = if args.is_object() {
            args.clone()
        } else {
            Value::Object(Default::default())
        };
        let out = match client.call(&remote, &args, cancel, progress) {
            Ok(result) => {
                let (content, is_error) = super::result::map_result(&result);
                (content, is_error, who)
            }
            Err(super::client::CallError::Cancelled) => {
                (vec![ContentBlock::text("aborted")], true, who)
            }
            Err(e) => (
                vec![ContentBlock::text(format!(
                    "MCP server {}, tool {remote}: {e}",
                    client.name()
                ))],
                true,
                who,
            ),
        };
        Some(out)
    }

    /// Every server's state, in config order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.slots
            .iter()
            .map(|slot| {
                let state = lock(&slot.state).clone();
                let none = super::client::ServerInfo::default;
                let (name, tools, info, message) = match &state {
                    State::Starting(_) => ("starting", Vec::new(), none(), String::new()),
                    State::Ready(c) => (
                        "ready",
                        c.tools().iter().map(|t| t.name.clone()).collect(),
                        c.info(),
                        String::new(),
                    ),
                    State::Failed(m) => ("failed", Vec::new(), none(), m.clone()),
                    State::Stopped => ("stopped", Vec::new(), none(), String::new()),
                };
                let mut command = vec![slot.spec.command.clone()];
                command.extend(slot.spec.args.iter().cloned());
                ServerStatus {
                    name: slot.spec.name.clone(),
                    state: name,
                    tools,
                    protocol_version: info.protocol_version,
                    version: info.version,
                    command: command.join(" "),
                    log: slot.log.clone(),
                    message,
                    origin: slot.spec.origin.clone(),
                }
            })
            .collect()
    }

    /// Stops every server in parallel; later calls do nothing.
    pub fn shutdown(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let grace = crate::host::deadlines::Deadlines::from_env().shutdown_grace;
        std::thread::scope(|s| {
            for slot in &self.slots {
                let state = std::mem::replace(&mut *lock(&slot.state), State::Stopped);
                let client = match state {
                    State::Ready(c) | State::Starting(Some(c)) => c,
                    _ => continue,
                };
                s.spawn(move || client.shutdown(grace));
            }
        });
        for t in lock(&self.threads).drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// One server's start, on its own thread: launch, handshake, report.
fn run_start(
    slot: &Slot,
    project: &Path,
    home: &Path,
    sink: &Arc<dyn EventSink>,
    generation: &Arc<AtomicU64>,
    stopped: &dyn Fn() -> bool,
) {
    let who = participant(&slot.spec.name);
    let on_change: OnChange = {
        let (sink, generation, who) = (sink.clone(), generation.clone(), who.clone());
        Arc::new(move |tools: &[Tool]| {
            generation.fetch_add(1, Ordering::SeqCst);
            sink.emit(Event::ExtToolsChanged {
                extension: who.clone(),
                tools: tools.iter().map(|t| t.name.clone()).collect(),
                commands: Vec::new(),
            });
        })
    };
    let client = match Client::launch(&slot.spec, project, home, Some(on_change)) {
        Ok(c) => Arc::new(c),
        Err(e) => return fail(slot, sink, generation, &who, e.to_string()),
    };
    {
        let mut state = lock(&slot.state);
        if !matches!(*state, State::Starting(_)) {
            return; // shut down before it was launched; the client drops here
        }
        *state = State::Starting(Some(client.clone()));
    }
    let result = client.initialize();
    if stopped() {
        return;
    }
    match result {
        Ok(()) => {
            let tools: Vec<String> = client.tools().iter().map(|t| t.name.clone()).collect();
            let info = client.info();
            *lock(&slot.state) = State::Ready(client);
            generation.fetch_add(1, Ordering::SeqCst);
            sink.emit(Event::ExtLoaded {
                extension: who,
                version: info.version,
                commands: Vec::new(),
                tools,
                source: "mcp".into(),
            });
        }
        Err(e) => fail(slot, sink, generation, &who, e.to_string()),
    }
}

fn fail(
    slot: &Slot,
    sink: &Arc<dyn EventSink>,
    generation: &AtomicU64,
    who: &str,
    message: String,
) {
    {
        let mut state = lock(&slot.state);
        if matches!(*state, State::Stopped) {
            return;
        }
        *state = State::Failed(message.clone());
    }
    generation.fetch_add(1, Ordering::SeqCst);
    sink.emit(Event::ExtError {
        extension: who.to_string(),
        message,
    });
}
