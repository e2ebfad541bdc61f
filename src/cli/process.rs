//! Running the external tools `install` needs (git, go, cargo) so that a
//! cancellation kills them and a failure can show what they said.
//!
//! The child's stdin is always closed (nothing may prompt). Its stdout is
//! discarded and its stderr collected; only the last [`TAIL_LINES`] lines
//! are kept, for the error message when it fails (a successful clone or
//! build says nothing).

use super::{Failure, Outcome};
use crate::cancel::CancelToken;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// How many lines of a failed build's stderr an error shows.
pub(crate) const TAIL_LINES: usize = 20;

/// How often a running child is checked for exit and cancellation.
const POLL: Duration = Duration::from_millis(50);

/// How a child ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub status: ExitStatus,
    /// The last lines of stderr.
    pub tail: Vec<String>,
}

/// Runs `cmd` to completion, killing it if `cancel` fires. `what` names the
/// tool in errors ("git", "go build").
pub(crate) fn run(cmd: &mut Command, what: &str, cancel: &CancelToken) -> Outcome<Finished> {
    cmd.stdin(Stdio::null());
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {what}: {e}"))?;
    let collector = child.stderr.take().map(|stderr| {
        std::thread::spawn(move || {
            let mut tail = VecDeque::with_capacity(TAIL_LINES);
            for line in BufReader::new(stderr).split(b'\n').map_while(Result::ok) {
                if tail.len() == TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(super::term::clean_line(&String::from_utf8_lossy(&line)));
            }
            Vec::from(tail)
        })
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(format!("cannot wait for {what}: {e}").into()),
        }
        if !cancel.sleep(POLL) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Failure::Interrupted);
        }
    };
    let tail = collector.and_then(|h| h.join().ok()).unwrap_or_default();
    Ok(Finished { status, tail })
}
