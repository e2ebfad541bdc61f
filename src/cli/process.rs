//! Running the external tools `install` needs (git, go, cargo) so that a
//! cancellation stops them and everything they started, and a failure can
//! show what they said.
//!
//! The child runs under a [`ChildGuard`]: its own process group, so a
//! cancel (SIGTERM, then SIGKILL after the kill grace) also reaches git's
//! helpers (`git-remote-https`, credential helpers) and cargo's or go's
//! compilers; whatever of the group is still alive when the tool exits is
//! killed too. The wait is a `select!` on the child's exit and the cancel
//! token, nothing polls.
//!
//! The child's stdin is always closed (nothing may prompt). Its stdout is
//! discarded ([`run`]) or kept in a file ([`run_capturing`]) and its stderr
//! collected; only the last [`TAIL_LINES`] lines
//! are kept, for the error message when it fails (a successful clone or
//! build says nothing).

use super::{Failure, Outcome};
use crate::cancel::CancelToken;
use crate::proc::{self, ChildGuard};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Command, ExitStatus, Stdio};

/// How many lines of a failed build's stderr an error shows.
pub(crate) const TAIL_LINES: usize = 20;

/// How a child ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub status: ExitStatus,
    /// The last lines of stderr.
    pub tail: Vec<String>,
}

/// Runs `cmd` to completion, stopping its whole process group if `cancel`
/// fires. `what` names the tool in errors ("git", "go build").
pub(crate) fn run(cmd: &mut Command, what: &str, cancel: &CancelToken) -> Outcome<Finished> {
    run_to(cmd, what, cancel, Stdio::null())
}

/// Like [`run`], and returns what the tool printed on stdout too (at most
/// [`MAX_STDOUT`] bytes: short answers such as `git rev-parse HEAD`).
pub(crate) fn run_capturing(
    cmd: &mut Command,
    what: &str,
    cancel: &CancelToken,
) -> Outcome<(Finished, String)> {
    use std::io::{Read, Seek};
    // A file, not a pipe: nothing has to drain it while the tool runs.
    let mut file = tempfile::tempfile().map_err(|e| format!("cannot run {what}: {e}"))?;
    let handle = file
        .try_clone()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    let done = run_to(cmd, what, cancel, Stdio::from(handle))?;
    let mut out = Vec::new();
    file.rewind()
        .and_then(|()| file.take(MAX_STDOUT).read_to_end(&mut out))
        .map_err(|e| format!("cannot read what {what} printed: {e}"))?;
    Ok((done, String::from_utf8_lossy(&out).into_owned()))
}

/// How much of a tool's stdout [`run_capturing`] keeps.
pub(crate) const MAX_STDOUT: u64 = 64 << 10;

fn run_to(cmd: &mut Command, what: &str, cancel: &CancelToken, stdout: Stdio) -> Outcome<Finished> {
    cmd.stdin(Stdio::null());
    cmd.stdout(stdout).stderr(Stdio::piped());
    let mut guard = ChildGuard::spawn(cmd).map_err(|e| format!("cannot run {what}: {e}"))?;
    let collector = guard.take_stderr().map(|stderr| {
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
    let exited = guard
        .exit_notice()
        .map_err(|e| format!("cannot wait for {what}: {e}"))?;
    crossbeam_channel::select! {
        recv(exited) -> _ => {}
        recv(cancel.receiver()) -> _ => {
            guard.terminate(proc::kill_grace_from_env());
            return Err(Failure::Interrupted);
        }
    }
    let status = guard
        .wait()
        .map_err(|e| format!("cannot wait for {what}: {e}"))?;
    // Dropping the guard kills what is left of the group, so a helper that
    // still holds stderr cannot keep the collector waiting.
    drop(guard);
    let tail = collector.and_then(|h| h.join().ok()).unwrap_or_default();
    Ok(Finished { status, tail })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::time::{Duration, Instant};

    /// A `git` that starts a helper (a grandchild of zut), writes its pid
    /// and waits for ever.
    fn fake_git(dir: &Path) {
        let script = "#!/bin/sh\nsleep 300 &\necho $! > \"$PID_FILE\"\necho cloning >&2\nwait\n";
        let path = dir.join("git");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn path_with(dir: &Path) -> String {
        let old = std::env::var("PATH").unwrap_or_default();
        format!("{}:{old}", dir.display())
    }

    /// Waits for the fake tool to report its helper's pid.
    fn helper_pid(file: &Path) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(pid) = std::fs::read_to_string(file)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                return pid;
            }
            assert!(
                Instant::now() < deadline,
                "the fake git never started its helper"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn gone_soon(pid: u32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if proc::is_gone(pid) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn cancel_kills_the_git_helper_too() {
        let dir = tempfile::tempdir().unwrap();
        fake_git(dir.path());
        let pid_file = dir.path().join("helper.pid");
        let (canceller, token) = crate::cancel::pair();
        let mut cmd = Command::new("git");
        cmd.arg("clone")
            .env("PATH", path_with(dir.path()))
            .env("PID_FILE", &pid_file);
        let runner = std::thread::spawn(move || run(&mut cmd, "git", &token).map(|_| ()));
        let helper = helper_pid(&pid_file);
        canceller.cancel();
        let outcome = runner.join().unwrap();
        assert!(matches!(outcome, Err(Failure::Interrupted)), "{outcome:?}");
        assert!(gone_soon(helper), "git helper {helper} survived the cancel");
    }

    #[test]
    fn a_finished_tool_reports_status_and_stderr_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("for i in $(seq 1 30); do echo line $i >&2; done; exit 3")
            .current_dir(dir.path());
        let done = run(&mut cmd, "sh", &CancelToken::never()).unwrap();
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(done.tail.len(), TAIL_LINES);
        assert_eq!(done.tail.last().map(String::as_str), Some("line 30"));
    }
}
