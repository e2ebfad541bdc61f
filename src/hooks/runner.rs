//! Runs handlers: `sh -c COMMAND` through the child guard, the input on
//! stdin, stdout and stderr capped at [`OUTPUT_CAP`] each, one thread per
//! handler, all of one event in parallel, each bounded by its timeout
//! (then its process group is killed). The group, with whatever the hook
//! forked, also dies when zut does, `kill -9` included
//! ([`ChildGuard::group_dies_with_zut`]).

use super::settings::Handler;
use crate::proc::ChildGuard;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most of a hook's stdout, and of its stderr, that is kept.
pub const OUTPUT_CAP: usize = 1 << 20;

/// The least a fresh pipe holds on Linux (one page, when the user's pipe
/// quota is spent); input up to this size is written without a thread.
const PIPE_ROOM: usize = 4096;

/// How one handler run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Exit {
    Code(i32),
    /// Killed by a signal, or could not start (the message).
    Crashed(String),
    TimedOut,
}

/// One handler's run.
#[derive(Debug, Clone)]
pub struct Run {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
    pub ms: u64,
}

fn read_capped(mut r: impl Read) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// Runs one handler with `input` on stdin, in `project`.
pub fn run_one(command: &str, timeout: Duration, input: &[u8], project: &Path) -> Run {
    let start = Instant::now();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(project)
        .env("CLAUDE_PROJECT_DIR", project)
        .env("ZUT_PROJECT_DIR", project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // This thread waits for the hook, so the signal fires only if zut dies.
    crate::proc::die_with_zut(&mut cmd);
    let done = |exit, stdout, stderr| Run {
        exit,
        stdout,
        stderr,
        ms: start.elapsed().as_millis() as u64,
    };
    let mut guard = match ChildGuard::spawn(&mut cmd) {
        Ok(g) => {
            let mut g = g.with_grace(Duration::ZERO);
            // What the hook forks dies with zut too.
            g.group_dies_with_zut();
            g
        }
        Err(e) => {
            return done(
                Exit::Crashed(format!("cannot start sh: {e}")),
                String::new(),
                String::new(),
            )
        }
    };
    let (otx, orx) = crossbeam_channel::bounded::<(bool, String)>(2);
    for (is_out, pipe) in [
        (
            true,
            guard
                .take_stdout()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
        (
            false,
            guard
                .take_stderr()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
    ] {
        let tx = otx.clone();
        let _ = std::thread::Builder::new()
            .name("hook-out".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let text = pipe.map(read_capped).unwrap_or_default();
                let _ = tx.send((is_out, text));
            });
    }
    drop(otx);
    if let Some(mut stdin) = guard.take_stdin() {
        if input.len() <= PIPE_ROOM {
            // Fits in an empty pipe: the write cannot block, whatever the
            // hook does, so it needs no thread (the common case).
            let _ = stdin.write_all(input);
        } else {
            let input = input.to_vec();
            let _ = std::thread::Builder::new()
                .name("hook-in".into())
                .stack_size(64 * 1024)
                .spawn(move || {
                    let _ = stdin.write_all(&input);
                });
        }
    }
    let deadline = start + timeout;
    let status = guard.wait_until(Some(deadline)).ok().flatten();
    let exit = match status {
        None => {
            guard.kill_now();
            Exit::TimedOut
        }
        Some(s) => match s.code() {
            Some(c) => Exit::Code(c),
            None => Exit::Crashed(format!("hook ended by a signal ({s})")),
        },
    };
    // Whatever is left of the hook's group goes with the guard.
    drop(guard);
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let grace = Instant::now() + Duration::from_millis(500);
    for _ in 0..2 {
        crossbeam_channel::select! {
            recv(orx) -> r => match r {
                Ok((true, t)) => stdout = t,
                Ok((false, t)) => stderr = t,
                Err(_) => break,
            },
            recv(crossbeam_channel::at(grace)) -> _ => break,
        }
    }
    done(exit, stdout, stderr)
}

/// Runs `handlers` in parallel; results in the handlers' order.
pub fn run_all(handlers: &[&Handler], input: &[u8], project: &Path) -> Vec<Run> {
    if let [h] = handlers {
        return vec![run_one(&h.command, h.timeout, input, project)];
    }
    let (tx, rx) = crossbeam_channel::unbounded::<(usize, Run)>();
    for (i, h) in handlers.iter().enumerate() {
        let (thread_tx, command, timeout, input, project) = (
            tx.clone(),
            h.command.clone(),
            h.timeout,
            input.to_vec(),
            project.to_path_buf(),
        );
        let spawned = std::thread::Builder::new()
            .name("hook".into())
            .spawn(move || {
                let _ = thread_tx.send((i, run_one(&command, timeout, &input, &project)));
            });
        if let Err(e) = spawned {
            let _ = tx.send((
                i,
                Run {
                    exit: Exit::Crashed(format!("cannot start a thread: {e}")),
                    stdout: String::new(),
                    stderr: String::new(),
                    ms: 0,
                },
            ));
        }
    }
    drop(tx);
    let mut out: Vec<Option<Run>> = vec![None; handlers.len()];
    for (i, r) in rx {
        out[i] = Some(r);
    }
    out.into_iter()
        .map(|r| {
            r.unwrap_or(Run {
                exit: Exit::Crashed("the hook's thread ended without a result".into()),
                stdout: String::new(),
                stderr: String::new(),
                ms: 0,
            })
        })
        .collect()
}
