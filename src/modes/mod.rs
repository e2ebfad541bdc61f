//! Front ends. Each consumes the one event stream ([`crate::events`]) and
//! drives the host and the agent through their synchronous APIs.
//!
//! - [`print`]: `-p`, final answer on stdout, notes and errors on stderr;
//! - [`json`]: `--mode json`, every event as one JSON line on stdout;
//! - [`tui`]: the interactive terminal, driven through [`crate::frontend::Core`].
//!
//! Both run one prompt (or one slash command) through [`run_once`].

pub mod json;
pub mod print;
pub mod tui;

use crate::agent::{self, Agent, Outcome};
use crate::cancel::CancelToken;
use crate::events::{Event, EventSink};
use crate::host::{self, Host};
use std::sync::Arc;

/// Exit statuses (DESIGN §3).
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_INTERRUPTED: i32 = 130;

/// Which non-interactive front end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Print,
    Json,
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
}

/// Runs one prompt or slash command and shuts the extensions down.
pub fn run_once(run: Run, cancel: &CancelToken) -> i32 {
    let sink: Arc<dyn EventSink> = match run.mode {
        Mode::Print => Arc::new(print::PrintSink),
        Mode::Json => Arc::new(json::JsonSink::default()),
    };
    let entries = host::discovery::discover(&run.discovery);
    let zut_home = run.host.zut_home.clone();
    let cwd = run.host.cwd.clone();
    let host = Host::start(run.host, sink.clone(), entries, cancel);
    // No sessions yet: session_start carries no session.
    host.emit_event(&zut_ext::wire::EventPayload::named("session_start"));
    let code = match run.prompt.as_deref().map(str::trim) {
        None | Some("") => EXIT_OK,
        Some(p) => {
            let ctx = Ctx {
                mode: run.mode,
                host: &host,
                sink: &sink,
                cancel,
            };
            let make_agent = || -> Result<Agent<'_>, String> {
                let provider = crate::provider::create(&run.provider).map_err(|e| e.to_string())?;
                let opts = agent::Options {
                    cwd: cwd.clone(),
                    max_steps: run.max_steps,
                    yolo: run.yolo,
                    confirmer: None,
                };
                Ok(Agent::new(provider, &host, sink.clone(), opts, &zut_home))
            };
            match p.strip_prefix('/') {
                Some(command) => ctx.command(command, make_agent),
                None => ctx.prompt(p, make_agent),
            }
        }
    };
    // `done` comes after the extensions stopped, so whatever they sent on
    // their way out is reported before it, and nothing is lost.
    host.shutdown();
    if run.prompt.as_deref().is_some_and(|p| !p.trim().is_empty()) {
        sink.emit(Event::Done);
    }
    if cancel.is_cancelled() {
        EXIT_INTERRUPTED
    } else {
        code
    }
}

struct Ctx<'a> {
    mode: Mode,
    host: &'a Host,
    sink: &'a Arc<dyn EventSink>,
    cancel: &'a CancelToken,
}

impl Ctx<'_> {
    fn fail(&self, message: String) -> i32 {
        match self.mode {
            Mode::Print => eprintln!("zut: {}", print::sanitize(&message)),
            Mode::Json => self.sink.emit(Event::Error { message }),
        }
        EXIT_FAILURE
    }

    fn prompt<'h>(
        &self,
        text: &str,
        make_agent: impl FnOnce() -> Result<Agent<'h>, String>,
    ) -> i32 {
        let mut agent = match make_agent() {
            Ok(a) => a,
            Err(e) => return self.fail(e),
        };
        let outcome = agent.prompt(text, self.cancel);
        self.finish(outcome)
    }

    fn finish(&self, outcome: Outcome) -> i32 {
        let print_text = |text: &Option<String>| {
            if let (Mode::Print, Some(t)) = (self.mode, text) {
                print::stdout_line(t);
            }
        };
        match outcome {
            Outcome::Done { text } => {
                print_text(&text);
                EXIT_OK
            }
            Outcome::MaxSteps { text } => {
                print_text(&text);
                self.fail(
                    "stopped: the --max-steps limit was reached before the model finished".into(),
                )
            }
            Outcome::Blocked { reason } => self.fail(format!("turn blocked: {reason}")),
            Outcome::Failed { error } => self.fail(error),
            Outcome::Aborted => EXIT_INTERRUPTED,
        }
    }

    /// `/name args`: an extension command, honoured as far as this mode can.
    fn command<'h>(
        &self,
        line: &str,
        make_agent: impl FnOnce() -> Result<Agent<'h>, String>,
    ) -> i32 {
        let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        if host::registry::BUILTIN_COMMANDS.contains(&name.to_lowercase().as_str()) {
            return self.fail(format!(
                "/{name} is a command of the interactive terminal; it cannot run here"
            ));
        }
        let known = self.host.command(name).is_some();
        let reply = match self.host.invoke_command(name, args.trim(), self.cancel) {
            Ok(r) => r,
            Err(e) if known => return self.fail(format!("/{name}: {e}")),
            // Unknown, or its extension is gone: the error says which.
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
        if self.mode == Mode::Json {
            if action == "display" && reply.error.trim().is_empty() {
                self.sink.emit(Event::ExtDisplay {
                    extension: reply.extension.clone(),
                    text: text.clone(),
                });
            }
            self.sink.emit(Event::CommandResult {
                name: reply.name.clone(),
                action: action.clone(),
                text: text.clone(),
            });
        }
        if !reply.error.trim().is_empty() {
            return self.fail(format!("/{}: {}", reply.name, reply.error.trim()));
        }
        match action.as_str() {
            "prompt" if text.trim().is_empty() => EXIT_OK,
            "prompt" => self.prompt(&text, make_agent),
            "display" => {
                if self.mode == Mode::Print {
                    print::stdout_line(&text);
                }
                EXIT_OK
            }
            "noop" => EXIT_OK,
            "insert" | "open_panel" => {
                if self.mode == Mode::Print {
                    eprintln!(
                        "zut: /{} answered with {action:?}, which needs the interactive terminal; nothing was done",
                        reply.name
                    );
                }
                EXIT_OK
            }
            other => self.fail(format!("/{}: unknown action {other:?}", reply.name)),
        }
    }
}
