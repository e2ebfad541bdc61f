//! The one start of every mode: the run's settings ([`Run`]), its session
//! ([`open_session`]), the host and MCP servers, and the announcement of
//! the session to extensions and on the event channel ([`boot`]). Errors
//! are printed here, once, and become the exit status.

use super::engine::{self, Engine, EngineConfig};
use super::{EXIT_FAILURE, EXIT_USAGE};
use crate::cancel::CancelToken;
use crate::events::Event;
use crate::host::{self, HostHandle};
use crate::session::{Session, Store};

/// Which non-interactive front end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Print,
    Json,
    /// The terminal UI.
    Interactive,
}

/// Everything one non-interactive run needs.
pub struct Run {
    pub mode: Mode,
    /// The prompt (stdin already appended); `None`: load and exit.
    pub prompt: Option<String>,
    pub host: host::HostConfig,
    pub discovery: host::discovery::Options,
    pub provider: crate::provider::Settings,
    pub max_steps: u32,
    pub yolo: bool,
    /// `--no-skills`: no skill discovery, `skill` tool or `/skill:`.
    pub no_skills: bool,
    /// Which session to keep (`--no-session`, `--continue`, `--session`).
    pub session: SessionChoice,
    /// `--no-hooks`: no Claude Code hooks.
    pub no_hooks: bool,
    /// Where the MCP servers come from (`--mcp-config`, `--no-mcp`).
    pub mcp: crate::mcp::config::Sources,
}

/// The session a run starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// `--no-session`: nothing is kept.
    None,
    /// A new session (the default).
    New,
    /// `--continue`: the latest of this project, else a new one.
    Continue,
    /// `--session ID`.
    Resume(String),
}

/// The store, the session and why it was opened (`new` or `resume`).
pub type OpenedSession = (Option<Store>, Option<Session>, &'static str);

/// Opens the run's session: the store, the session, and why (`new` or
/// `resume`). A session id that does not exist is a usage error.
pub fn open_session(
    choice: &SessionChoice,
    zut_home: &std::path::Path,
    cwd: &std::path::Path,
    quiet: bool,
) -> Result<OpenedSession, (i32, String)> {
    if *choice == SessionChoice::None {
        return Ok((None, None, "new"));
    }
    let store = Store::new(zut_home, cwd);
    let fail = |e: crate::session::SessionError| (EXIT_FAILURE, format!("session: {e}"));
    // A session another zut process is writing is continued in a branch
    // of its own, so the two never interleave rows.
    let open = |id: &str| match store.open(id) {
        Err(crate::session::SessionError::Busy { .. }) => {
            let fork = store.read(id).and_then(|s| s.fork(None))?;
            if !quiet {
                eprintln!(
                    "zut: session {id} is open in another zut process; continuing in a new branch {} forked from it",
                    fork.id()
                );
            }
            Ok(fork)
        }
        other => other,
    };
    let (session, reason) = match choice {
        SessionChoice::Resume(id) => match open(id) {
            Ok(s) => (s, "resume"),
            Err(crate::session::SessionError::Unknown { .. }) => {
                return Err((
                    EXIT_USAGE,
                    format!(
                        "no session {id:?} for {}; list them with zut sessions",
                        store.cwd().display()
                    ),
                ))
            }
            Err(e @ crate::session::SessionError::Ambiguous { .. }) => {
                return Err((EXIT_USAGE, e.to_string()))
            }
            Err(e) => return Err(fail(e)),
        },
        SessionChoice::Continue => match store.latest() {
            Some(id) => (open(&id).map_err(fail)?, "resume"),
            None => {
                if !quiet {
                    eprintln!("zut: no earlier session for this directory; starting a new one");
                }
                (store.create().map_err(fail)?, "new")
            }
        },
        _ => match store.create() {
            Ok(s) => (s, "new"),
            // Like tools in read-only containers: say it once and go on
            // without a session rather than refuse to run.
            Err(e @ crate::session::SessionError::Io { .. }) => {
                if !quiet {
                    eprintln!("zut: warning: cannot keep a session ({e}); going on without one");
                }
                return Ok((None, None, "new"));
            }
            Err(e) => return Err(fail(e)),
        },
    };
    if let (Some(w), false) = (session.warning(), quiet) {
        eprintln!("zut: warning: {w}");
    }
    Ok((Some(store), Some(session), reason))
}

/// The extensions' load as [`boot`] leaves it.
pub enum Load {
    /// Every handshake settled and the session was announced.
    Done(host::LoadReport),
    /// Still running (the terminal opens at once): the engine's worker
    /// waits for it and then announces the session.
    Running(host::Loading),
}

impl Load {
    /// The report, once the load is done.
    pub fn report(&self) -> Option<&host::LoadReport> {
        match self {
            Load::Done(report) => Some(report),
            Load::Running(_) => None,
        }
    }
}

/// A front end's start: the session chosen, the host started (and, but
/// for the terminal, loaded and told the session). Every mode boots
/// through [`boot`].
pub struct Booted {
    pub host: HostHandle,
    pub load: Load,
    pub store: Option<Store>,
    pub session: Option<Session>,
    /// Why the session was opened: `new` or `resume`.
    pub reason: &'static str,
    /// The MCP servers, starting in the background.
    pub mcp: std::sync::Arc<crate::mcp::hub::Hub>,
}

/// The one boot of every mode: opens the run's session (a print or JSON
/// run that only loads keeps none), starts the host with the extensions
/// discovered, and announces the session to them and on `events`. The
/// terminal does not wait for the extensions' handshakes: it is usable at
/// once, its footer naming those still starting ([`Load::Running`]).
/// Errors are printed here; `Err` is the exit status.
pub fn boot(
    run: &Run,
    front: crate::commands::Mode,
    events: &crossbeam_channel::Sender<Event>,
    cancel: &CancelToken,
) -> Result<Booted, i32> {
    let quiet = front == crate::commands::Mode::Rpc;
    let (store, session, reason) =
        match open_session(&run.session, &run.host.zut_home, &run.host.cwd, quiet) {
            Ok(x) => x,
            Err((code, message)) => {
                eprintln!("zut: {message}");
                return Err(code);
            }
        };
    let loads_only = front == crate::commands::Mode::Print
        && run.prompt.as_deref().is_none_or(|p| p.trim().is_empty());
    let session = match session {
        Some(s) if loads_only => {
            let _ = s.discard_if_empty();
            None
        }
        s => s,
    };
    let mut config = run.host.clone();
    config.session = session.as_ref().map(Session::info);
    if front == crate::commands::Mode::Rpc {
        // Panel-driven tools need a person at a terminal.
        config.interactive = false;
    }
    let sink: host::EventOut = std::sync::Arc::new(events.clone());
    // MCP servers start first, in the background, so that they come up
    // while the extensions load.
    let mcp = crate::mcp::hub::Hub::start(
        crate::mcp::config::load(&run.mcp),
        &run.host.cwd,
        &run.host.zut_home,
        sink.clone(),
    );
    // The terminal draws before a manifest is read: the dispatcher
    // discovers its extensions, and their themes arrive with
    // `Event::Discovered`. The other modes wait for the load anyway.
    let terminal = front == crate::commands::Mode::Terminal;
    let entries = (!terminal).then(|| host::discovery::discover(&run.discovery));
    let (host, loading) =
        match HostHandle::launch(config, entries, Some(run.discovery.clone()), sink) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("zut: {e}");
                return Err(EXIT_FAILURE);
            }
        };
    let load = if terminal {
        Load::Running(loading)
    } else {
        let report = loading.wait(cancel);
        announce_session(&host, events, session.as_ref(), reason);
        Load::Done(report)
    };
    let kinds = host::discovery::ProjectKinds {
        extensions: !run.discovery.no_extensions,
        hooks: !run.no_hooks,
        mcp: !run.mcp.none,
    };
    let home = crate::skills::home_dir();
    if let Some(message) = host::discovery::ancestor_note(&run.host.cwd, home.as_deref(), kinds) {
        let _ = events.send(Event::ExtWarning {
            extension: "zut".into(),
            message,
        });
    }
    Ok(Booted {
        host,
        load,
        store,
        session,
        reason,
        mcp,
    })
}

impl Booted {
    /// The engine over this boot's host and session, for `front`.
    pub fn engine(
        self,
        run: &Run,
        events: crossbeam_channel::Sender<Event>,
        front: crate::commands::Mode,
        can_confirm: bool,
    ) -> std::sync::Arc<Engine> {
        Engine::start(
            self.host,
            events,
            EngineConfig {
                provider: run.provider.clone(),
                cwd: run.host.cwd.clone(),
                zut_home: run.host.zut_home.clone(),
                max_steps: run.max_steps,
                yolo: run.yolo,
                can_confirm,
                store: self.store,
                session: self.session,
                front,
                start_source: match self.reason {
                    "resume" => "resume",
                    _ => "startup",
                },
                mcp: self.mcp,
                loading: match self.load {
                    Load::Running(loading) => Some(loading),
                    Load::Done(_) => None,
                },
                hooks: std::sync::Arc::new(crate::hooks::Hooks::load(
                    &run.host.cwd,
                    &run.host.zut_home,
                    run.yolo,
                    run.no_hooks,
                )),
            },
        )
    }
}

/// The start of a run: `session_start` to extensions (with the session,
/// if any), then `session_opened` with each one's own state, and the JSON
/// stream's `session` event.
pub fn announce_session(
    host: &HostHandle,
    events: &crossbeam_channel::Sender<Event>,
    session: Option<&Session>,
    reason: &str,
) {
    let info = session.map(Session::info);
    let states: std::collections::HashMap<String, serde_json::Value> = session
        .map(|s| {
            s.states()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    host.set_session(info.clone(), Some("session_start"), states.clone());
    if let Some(info) = info {
        let _ = events.send(engine::session_event(&info, reason));
        host.set_session(Some(info), Some("session_opened"), states);
    }
}
