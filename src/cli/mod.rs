//! `zut ext …`: the extension management subcommands.
//!
//! The binary calls [`run_ext`] with everything after `zut ext` and exits
//! with the code it returns: 0 success, 1 failure, 2 usage error, 130
//! interrupted. Tests call [`run_ext_io`] with their own output buffers and
//! cancellation token, so nothing here touches process-global state except
//! the signal bridge that [`run_ext`] sets up.
//!
//! Invariants shared by every subcommand:
//! - the data a command prints (`list`, `logs`) goes to stdout; every
//!   message, warning and error goes to stderr, one line each, lower-case,
//!   naming the thing at fault and what to do;
//! - commands never prompt (`remove` is a plain command like `rm`);
//! - a failed `install` leaves nothing behind under `$ZUT_HOME/extensions`.

mod args;
mod builder;
mod conformance;
mod copy;
pub mod doctor;
mod ext;
pub mod hooks;
mod install;
pub mod list;
mod logs;
pub mod mcp;
mod new;
mod process;
pub mod sessions;
pub mod skills;
/// The suggester moved below the CLI (skills use it too).
pub use crate::suggest;
mod term;
pub mod trust;
mod update;

use crate::cancel::{self, CancelToken};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// What every `zut ext` subcommand needs to know about the invocation.
#[derive(Debug, Clone, Default)]
pub struct CliContext {
    /// The project directory (`--cwd`, default the process's).
    pub cwd: PathBuf,
    /// `$ZUT_HOME` (see [`crate::paths::zut_home`]).
    pub zut_home: PathBuf,
    /// `--ext` paths, in the order given (shown by `list`).
    pub ext_paths: Vec<PathBuf>,
    /// `--no-extensions`: `list` shows only the `--ext` paths.
    pub no_extensions: bool,
}

/// Where a subcommand writes, and how it learns it was interrupted.
pub struct Io<'a> {
    /// Data output (the table of `list`, log contents).
    pub out: &'a mut dyn Write,
    /// Messages, warnings and errors.
    pub err: &'a mut dyn Write,
    /// Whether `out` is a terminal: log bytes are then stripped of terminal
    /// control sequences, which extensions do not get to send to the screen.
    pub out_is_tty: bool,
    /// Whether to colour the table (a terminal and no `NO_COLOR`).
    pub color: bool,
    /// Cancelled on SIGINT/SIGTERM/SIGHUP: installs roll back, `logs -f`
    /// stops, child processes (git, go, cargo) are killed.
    pub cancel: CancelToken,
}

/// Runs `zut ext <args…>` against the real stdout/stderr, turning
/// SIGINT/SIGTERM/SIGHUP into cancellation; returns the exit code.
pub fn run_ext(args: &[String], ctx: &CliContext) -> i32 {
    let (canceller, token) = cancel::pair();
    // Signals keep their default action if the bridge cannot start.
    let bridge = crate::signals::SignalBridge::cancel(canceller).ok();
    let stdout = std::io::stdout();
    let out_is_tty = stdout.is_terminal();
    let no_color = matches!(std::env::var_os("NO_COLOR"), Some(v) if !v.is_empty());
    let color = out_is_tty && !no_color;
    let mut out = stdout.lock();
    let mut err = std::io::stderr();
    let mut io = Io {
        out: &mut out,
        err: &mut err,
        out_is_tty,
        color,
        cancel: token,
    };
    let code = run_ext_io(args, ctx, &mut io);
    let _ = io.out.flush();
    drop(bridge);
    code
}

/// Runs `zut ext <args…>` with explicit streams and cancellation; returns
/// the exit code (0 ok, 1 failure, 2 usage error, 130 interrupted).
pub fn run_ext_io(args: &[String], ctx: &CliContext, io: &mut Io<'_>) -> i32 {
    ext::dispatch(args, ctx, io)
}

/// Why a subcommand did not succeed; decides the exit code.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Bad arguments: the message, then the subcommand's usage line. Exit 2.
    Usage(String),
    /// The command could not do its job. Exit 1.
    Error(String),
    /// Cancelled by a signal; whatever was half done was rolled back. Exit 130.
    Interrupted,
    /// Whoever reads stdout went away (`zut ext list | head`): stop
    /// quietly. Exit 0.
    StdoutClosed,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Error(message)
    }
}

/// Typed errors a subcommand step reports as they print.
macro_rules! failure_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for Failure {
            fn from(e: $t) -> Self {
                Failure::Error(e.to_string())
            }
        }
    )*};
}

failure_from!(crate::trust::TrustError, install::RecordError);

/// Shorthand for fallible subcommand steps.
pub(crate) type Outcome<T = ()> = Result<T, Failure>;

/// Splits `zut [global flags] ext …` (see `args::split_ext`): `None` when
/// it is not an `ext` invocation, `Some(Err(message))` for a global flag
/// that does not apply to `ext` (a usage error).
pub fn split_ext(args: &[String]) -> Option<Result<(Globals, &[String]), String>> {
    args::split_ext(args)
}

pub use args::Globals;
