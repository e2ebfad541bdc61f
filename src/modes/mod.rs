//! Front ends. Each runs one `select!` loop over its own input and the
//! [`Event`] channel of the core's [`Engine`] (a [`Core`]).
//!
//! - [`print`](mod@print): `-p`, final answer on stdout, notes and errors on stderr;
//! - [`json`]: `--mode json`, every event as one JSON line on stdout;
//! - [`tui`]: the interactive terminal, driven through [`Core`];
//! - [`rpc`]: `--mode rpc`, JSON-lines requests until stdin closes.
//!
//! Every mode starts through the core's one [`boot`] (session, host,
//! announcement) and [`crate::core::boot::Booted::engine`]; print and JSON
//! run one prompt (or one slash command) through [`run_once`]. JSON and RPC
//! write stdout through the one policy of [`out`].

pub mod json;
pub mod out;
pub mod print;
pub mod rpc;
pub mod tui;

use crate::cancel::CancelToken;
use crate::events::Event;

use crate::core::boot::{boot, Mode, Run};
use crate::core::engine::Engine;
use crate::core::frontend::Core;
use crate::core::{EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK};
use crate::host;

/// Hands a first line to the engine: `/name` runs a command; `//text`
/// and ` /text` send text that starts with a slash as a prompt.
fn submit_first(engine: &Engine, line: &str) {
    match line.strip_prefix('/') {
        Some(rest) if !rest.starts_with('/') => engine.command(line.to_string()),
        Some(rest) => engine.prompt(rest.to_string()),
        None => engine.prompt(line.trim_start().to_string()),
    };
}

/// Runs one prompt or slash command and shuts the extensions down.
pub fn run_once(run: Run, cancel: &CancelToken) -> i32 {
    let (tx, rx) = crossbeam_channel::unbounded::<Event>();
    let booted = match boot(&run, crate::commands::Mode::Print, &tx, cancel) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let host = booted.host.clone();
    // Print and JSON wait for the load in boot.
    let report = booted.load.report().cloned().unwrap_or_default();
    let mut front: Box<dyn Front> = match run.mode {
        Mode::Json => Box::new(json::JsonOut::new(cancel.clone())),
        _ => Box::new(print::Printer::for_run(&run.host.zut_home, &report)),
    };
    // Skill files that could not be read, from the user's own roots (an
    // extension's are its ext_warning).
    if let Some(set) = host.view().skills.clone() {
        for w in set.warnings.iter().filter(|w| w.extension.is_none()) {
            eprintln!("zut: warning: {}", crate::sanitize::sanitize(&w.message));
        }
    }
    let prompt = run.prompt.clone().filter(|p| !p.trim().is_empty());
    let Some(prompt) = prompt else {
        // Load, report, stop: a check that every extension (and MCP
        // server) loads.
        booted.mcp.wait_ready(cancel);
        let mcp_failed = booted.mcp.status().iter().any(|s| s.state == "failed");
        host.shutdown();
        booted.mcp.shutdown();
        drop(tx);
        for e in rx.try_iter() {
            front.show(&e);
        }
        front.finish();
        let failed = report
            .loaded
            .iter()
            .any(|l| matches!(l.outcome, host::Outcome::Failed(_)));
        return if cancel.is_cancelled() {
            EXIT_INTERRUPTED
        } else if (failed || mcp_failed) && run.mode == Mode::Json {
            EXIT_FAILURE
        } else {
            EXIT_OK
        };
    };
    drop(host);
    let engine = booted.engine(&run, tx, crate::commands::Mode::Print, false);
    submit_first(&engine, &prompt);
    let mut interrupted = false;
    let never = CancelToken::never();
    let mut signal = cancel;
    let mut done = false;
    while !done {
        crossbeam_channel::select! {
            recv(rx) -> e => match e {
                Ok(Event::Done) => done = true,
                Ok(e) => front.show(&e),
                Err(_) => done = true,
            },
            recv(signal.receiver()) -> _ => {
                interrupted = true;
                engine.abort(true);
                signal = &never;
            }
        }
    }
    // `done` comes after the extensions stopped, so whatever they sent on
    // their way out is reported before it, and nothing is lost.
    engine.shutdown();
    drop(engine);
    for e in rx.try_iter() {
        if !matches!(e, Event::Done) {
            front.show(&e);
        }
    }
    front.show(&Event::Done);
    front.finish();
    if interrupted || cancel.is_cancelled() {
        if run.mode == Mode::Print {
            eprintln!("zut: interrupted");
        }
        EXIT_INTERRUPTED
    } else {
        front.exit_code()
    }
}

/// `zut` in a terminal: the host, the engine and the terminal UI's loop.
pub fn run_interactive(run: Run) -> i32 {
    let (tx, rx) = crossbeam_channel::unbounded::<Event>();
    // The UI opens at once; the extensions' handshakes run meanwhile and
    // their reports arrive as events (the first prompt waits for them).
    let front = crate::commands::Mode::Terminal;
    let booted = match boot(&run, front, &tx, &CancelToken::never()) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let zut_home = run.host.zut_home.clone();
    let engine = booted.engine(&run, tx, front, true);
    if let Some(p) = run.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
        submit_first(&engine, p);
    }
    let core: std::sync::Arc<dyn Core> = engine.clone();
    let code = tui::run(
        core,
        rx,
        tui::TuiOptions {
            zut_home,
            project: run.host.cwd.clone(),
        },
    );
    engine.shutdown();
    code
}

/// A non-interactive front end: renders events, knows the exit status.
pub trait Front {
    /// Shows one event.
    fn show(&mut self, event: &Event);
    /// The exit status once `done` was shown.
    fn exit_code(&self) -> i32;
    /// Waits for what was shown to reach its output (bounded once the run
    /// is interrupted).
    fn finish(&mut self) {}
}
