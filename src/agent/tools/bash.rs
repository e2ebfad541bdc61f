//! The `bash` tool: run a shell command with a required timeout.
//!
//! The command runs as `bash -c COMMAND` (`sh -c` where there is no bash)
//! in the project directory, with stdin from `/dev/null` and stdout and
//! stderr on ONE pipe so the output keeps its order. The shell runs under a
//! [`ChildGuard`]: it leads its own process group, so everything it starts
//! can be signalled together, and it is killed and reaped whatever happens
//! to the call (an early return or a panic included).
//!
//! If zut is killed outright (`kill -9`, the OOM killer) the shell's whole
//! process group is SIGKILLed ([`ChildGuard::group_dies_with_zut`]: a
//! watchdog in the group sees zut's pipe close), so neither a `sleep 300`
//! nor what the shell forked (`sleep 300 &`, a pipeline, `sh -c '…'`) goes
//! on under init; the shell itself also gets the kernel's SIGKILL
//! ([`proc::die_with_zut`]). The command runs exactly as before (no
//! wrapper: its signals, stdin, exit status are the shell's); only a
//! process that left the group (`setsid`) escapes.
//!
//! Threads: the guard's exit notice (a channel that disconnects when the
//! shell exits), and a reader that `poll`s the pipe (and a stop pipe) and
//! keeps a bounded `Capture` of the output. The calling thread `select!`s
//! on the exit, the timeout and the cancel token; nothing sleeps in a loop.
//!
//! Invariants:
//! - the shell is always reaped and both threads are always joined (the
//!   only exception is a shell that survives SIGKILL, which is logged);
//! - when the shell exits, whatever is left of its group is SIGKILLed at
//!   once (no SIGTERM first), so background jobs (`cmd &`, a daemon that
//!   did not `setsid`) do not outlive the call or keep it waiting; the
//!   model is told so in the tool description. Output from processes that
//!   left the group is drained for [`DRAIN_GRACE`] only;
//! - on timeout or cancel the group gets SIGTERM, then SIGKILL after the
//!   kill grace (`ZUT_KILL_GRACE_MS`, default 1000 ms);
//! - memory is bounded: the first [`HEAD_BYTES`] and last [`TAIL_BYTES`] of
//!   the output are kept, the middle is counted and replaced by a marker.

use super::common::Args;
use super::{ToolContext, ToolOutput};
use crate::cancel::CancelToken;
use crate::proc::{self, ChildGuard, REAP_LIMIT};
use crate::provider::ToolDef;
use crossbeam_channel::{self as channel, Receiver};
use rustix::event::{PollFd, PollFlags};
use rustix::process::Signal;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Output kept from the start of a long output.
pub const HEAD_BYTES: usize = 30 * 1024;
/// Output kept from the end of a long output.
pub const TAIL_BYTES: usize = 20 * 1024;
pub use crate::proc::{DEFAULT_KILL_GRACE_MS, KILL_GRACE_ENV};
/// After the shell is gone, how long output may still be drained from
/// processes that escaped its group (`setsid`) but hold the pipe.
pub const DRAIN_GRACE: Duration = Duration::from_millis(250);
/// Bytes read per `read` call.
const READ_CHUNK: usize = 64 * 1024;
/// Most bytes drained once the reader is told to stop, so a process that
/// writes forever cannot keep it.
const STOP_DRAIN_LIMIT: usize = 1024 * 1024;

/// The definition advertised to the model.
pub fn definition() -> ToolDef {
    ToolDef {
        name: "bash".into(),
        description: format!(
            "Run a shell command with bash -c in the project directory. stdout and stderr are \
             returned together, in order; long output keeps the first {} KiB and the last {} \
             KiB. A non-zero exit status makes the result an error ending in `exit code N`. \
             timeout (seconds) is required: when it passes, the command and everything it \
             started are killed. stdin is empty, so interactive commands cannot work, and \
             background processes are killed when the command finishes.",
            HEAD_BYTES / 1024,
            TAIL_BYTES / 1024
        ),
        schema: json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The command line to run (bash syntax)"
                },
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Seconds before the command is killed"
                }
            },
            "required": ["command", "timeout"]
        }),
    }
}

/// Runs the tool.
pub fn run(args: &Value, ctx: &ToolContext, cancel: &CancelToken) -> ToolOutput {
    bash(args, ctx, cancel).unwrap_or_else(|err| err)
}

/// Checks the arguments without running anything (before a person is
/// asked to approve a call that would fail anyway).
pub fn check(args: &Value) -> Result<(), ToolOutput> {
    parse(&Args::new("bash", args)?).map(drop)
}

/// `command` and `timeout`, validated.
fn parse<'a>(args: &Args<'a>) -> Result<(&'a str, u64), ToolOutput> {
    let command = args.string("command", "the shell command to run")?;
    let timeout = args.positive("timeout", "a positive whole number of seconds")?;
    if command.trim().is_empty() {
        return Err(args.error("\"command\" is empty"));
    }
    Ok((command, timeout))
}

fn bash(args: &Value, ctx: &ToolContext, cancel: &CancelToken) -> Result<ToolOutput, ToolOutput> {
    let args = Args::new("bash", args)?;
    let (command, timeout) = parse(&args)?;
    if !ctx.cwd.is_dir() {
        return Err(args.error(format!(
            "the working directory {} does not exist",
            ctx.cwd.display()
        )));
    }
    if cancel.is_cancelled() {
        return Err(args.error("aborted"));
    }
    let (end, output) = execute(
        command,
        &ctx.cwd,
        Duration::from_secs(timeout),
        cancel,
        proc::kill_grace_from_env(),
    )
    .map_err(|e| args.error(format!("cannot start the shell: {e}")))?;
    Ok(report(end, output, timeout))
}

/// How a command run ended.
#[derive(Debug)]
enum End {
    /// The shell exited on its own (or was killed by someone else).
    Exited(ExitStatus),
    TimedOut,
    Aborted,
    /// Waiting for the shell failed; should not happen.
    Lost(String),
}

/// Runs `command` to its end and returns how it ended and its output.
fn execute(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    cancel: &CancelToken,
    kill_grace: Duration,
) -> io::Result<(End, String)> {
    let mut job = Job::start(command, cwd, kill_grace)?;
    let timer = Instant::now()
        .checked_add(timeout)
        .map(channel::at)
        .unwrap_or_else(channel::never);
    let end = channel::select! {
        recv(job.exited) -> _ => match job.guard.wait() {
            Ok(status) => End::Exited(status),
            Err(e) => End::Lost(e.to_string()),
        },
        recv(timer) -> _ => End::TimedOut,
        recv(cancel.receiver()) -> _ => End::Aborted,
    };
    if matches!(end, End::TimedOut | End::Aborted) {
        job.terminate(kill_grace);
    }
    // Whatever is left of the group: background jobs, TERM-ignorers.
    job.guard.signal_group(Signal::KILL);
    Ok((end, job.finish()))
}

/// A running shell, its exit notice and its output reader.
struct Job {
    guard: ChildGuard,
    exited: Receiver<()>,
    reader: Reader,
}

impl Job {
    fn start(command: &str, cwd: &Path, kill_grace: Duration) -> io::Result<Job> {
        let (out_read, out_write) = proc::cloexec_pipe()?;
        let mut guard = spawn_shell(command, cwd, &out_write)?.with_grace(kill_grace);
        // Only the shell (and what it starts) may hold the write end now,
        // so end of file means they have all closed it.
        drop(out_write);
        let started = guard
            .exit_notice()
            .and_then(|exited| Ok((exited, Reader::start(out_read)?)));
        match started {
            Ok((exited, reader)) => Ok(Job {
                guard,
                exited,
                reader,
            }),
            Err(e) => {
                guard.kill_now();
                Err(e)
            }
        }
    }

    /// SIGTERM, then SIGKILL once the grace is over, then reap. Within the
    /// grace, the rest of the group gets the same chance to exit: the pipe
    /// reaching end of file means every process that held it is gone.
    fn terminate(&mut self, grace: Duration) {
        self.guard.signal_group(Signal::TERM);
        let deadline = Instant::now() + grace;
        let reaped = matches!(self.guard.wait_until(Some(deadline)), Ok(Some(_)));
        if reaped {
            let _ = self.reader.done.recv_deadline(deadline);
        }
        self.guard.signal_group(Signal::KILL);
        if !reaped {
            let _ = self.guard.wait_until(Some(Instant::now() + REAP_LIMIT));
        }
    }

    /// Collects the output; dropping the guard then reaps the shell (if a
    /// SIGKILLed shell was not reported dead in time, the guard logs it).
    fn finish(self) -> String {
        self.reader.finish(DRAIN_GRACE).render()
    }
}

/// Starts the shell with both output streams on `output`, in a new
/// process group that dies with zut.
fn spawn_shell(command: &str, cwd: &Path, output: &OwnedFd) -> io::Result<ChildGuard> {
    let mut guard = match ChildGuard::spawn(&mut shell_command("bash", command, cwd, output)?) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            ChildGuard::spawn(&mut shell_command("sh", command, cwd, output)?)
        }
        spawned => spawned,
    }?;
    guard.group_dies_with_zut();
    Ok(guard)
}

fn shell_command(shell: &str, command: &str, cwd: &Path, output: &OwnedFd) -> io::Result<Command> {
    let mut cmd = Command::new(shell);
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(output.try_clone()?))
        .stderr(Stdio::from(output.try_clone()?));
    // This thread waits for the shell, so the signal fires only if zut dies.
    proc::die_with_zut(&mut cmd);
    Ok(cmd)
}

/// The output reader thread.
struct Reader {
    handle: JoinHandle<Capture>,
    /// Disconnects when the thread ends (end of file or told to stop).
    done: Receiver<()>,
    /// Closing this wakes the thread's `poll` and makes it stop.
    stop: OwnedFd,
}

impl Reader {
    fn start(output: OwnedFd) -> io::Result<Reader> {
        let (stop_read, stop) = proc::cloexec_pipe()?;
        let (done_tx, done) = channel::bounded::<()>(0);
        let handle = thread::Builder::new()
            .name("bash-output".into())
            .spawn(move || {
                let capture = read_output(File::from(output), &stop_read);
                drop(done_tx);
                capture
            })?;
        Ok(Reader { handle, done, stop })
    }

    /// Waits up to `grace` for end of file, then stops the thread (it
    /// drains what is already in the pipe) and returns what it kept.
    fn finish(self, grace: Duration) -> Capture {
        let _ = self.done.recv_timeout(grace);
        drop(self.stop);
        self.handle.join().unwrap_or_default()
    }
}

/// What woke the reader.
enum Wake {
    Data,
    Stop,
    Failed,
}

/// The reader thread's loop: read until end of file or until `stop` closes.
fn read_output(mut pipe: File, stop: &OwnedFd) -> Capture {
    let mut capture = Capture::default();
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match wait_readable(&pipe, stop) {
            Wake::Data => match read_some(&mut pipe, &mut buf) {
                0 => break,
                n => capture.push(&buf[..n]),
            },
            Wake::Stop => {
                drain_ready(&mut pipe, &mut buf, &mut capture);
                break;
            }
            Wake::Failed => break,
        }
    }
    capture
}

/// Blocks until the pipe has data (or end of file) or `stop` is closed.
fn wait_readable(pipe: &File, stop: &OwnedFd) -> Wake {
    let mut fds = [
        PollFd::new(pipe, PollFlags::IN),
        PollFd::new(stop, PollFlags::IN),
    ];
    loop {
        match rustix::event::poll(&mut fds, None) {
            Ok(_) => break,
            Err(e) if e == rustix::io::Errno::INTR => continue,
            Err(_) => return Wake::Failed,
        }
    }
    if !fds[1].revents().is_empty() {
        Wake::Stop
    } else if !fds[0].revents().is_empty() {
        Wake::Data
    } else {
        Wake::Failed
    }
}

/// Reads once; 0 means end of file or an error.
fn read_some(pipe: &mut File, buf: &mut [u8]) -> usize {
    loop {
        match pipe.read(buf) {
            Ok(n) => return n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return 0,
        }
    }
}

/// Reads what is in the pipe right now, up to [`STOP_DRAIN_LIMIT`].
fn drain_ready(pipe: &mut File, buf: &mut [u8], capture: &mut Capture) {
    let mut drained = 0;
    while drained < STOP_DRAIN_LIMIT {
        let mut fd = [PollFd::new(&*pipe, PollFlags::IN)];
        let now = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        if !matches!(rustix::event::poll(&mut fd, Some(&now)), Ok(n) if n > 0)
            || fd[0].revents().is_empty()
        {
            return;
        }
        match read_some(pipe, buf) {
            0 => return,
            n => {
                capture.push(&buf[..n]);
                drained += n;
            }
        }
    }
}

/// The output, bounded: its start, its end and how much was in between.
#[derive(Debug, Default)]
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Capture {
    fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let room = HEAD_BYTES - self.head.len();
        let (to_head, rest) = data.split_at(room.min(data.len()));
        self.head.extend_from_slice(to_head);
        self.tail
            .extend(&rest[rest.len().saturating_sub(TAIL_BYTES)..]);
        let excess = self.tail.len().saturating_sub(TAIL_BYTES);
        self.tail.drain(..excess);
    }

    /// The text: everything, or head, a `[... N bytes omitted ...]` line
    /// and tail. Invalid UTF-8 becomes U+FFFD.
    fn render(&self) -> String {
        let omitted = self.total - (self.head.len() + self.tail.len()) as u64;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if omitted == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        format!(
            "{}\n[... {omitted} bytes omitted ...]\n{}",
            String::from_utf8_lossy(&self.head),
            String::from_utf8_lossy(&tail)
        )
    }
}

/// The tool result: the output, then what went wrong, if anything.
fn report(end: End, output: String, timeout: u64) -> ToolOutput {
    let problem = match end {
        End::Exited(status) if status.success() => None,
        End::Exited(status) => Some(match (status.code(), status.signal()) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => format!("exited abnormally ({status})"),
        }),
        End::TimedOut => Some(format!("bash: command timed out after {timeout} s")),
        End::Aborted => Some("bash: aborted".to_string()),
        End::Lost(e) => Some(format!("bash: could not wait for the command: {e}")),
    };
    match problem {
        None if output.is_empty() => ToolOutput::text("(no output)"),
        None => ToolOutput::text(output),
        Some(problem) if output.is_empty() => ToolOutput::error(problem),
        Some(problem) => {
            ToolOutput::error(format!("{}\n\n{problem}", output.trim_end_matches('\n')))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{context, text};
    use super::*;
    use std::fs;

    fn bash(ctx: &ToolContext, command: &str, timeout: u64) -> ToolOutput {
        run(
            &json!({"command": command, "timeout": timeout}),
            ctx,
            &CancelToken::never(),
        )
    }

    /// Whether `pid` is no longer running (a zombie orphan counts as dead).
    fn is_dead(pid: i32) -> bool {
        proc::is_gone(pid as u32)
    }

    /// Waits briefly for `pid` to die: signals are delivered asynchronously.
    fn dies_soon(pid: i32) -> bool {
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            if is_dead(pid) {
                return true;
            }
            thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn read_pid(path: &Path) -> i32 {
        let text = fs::read_to_string(path).expect("pid file");
        text.trim().parse().expect("a pid")
    }

    #[test]
    fn returns_output_and_success() {
        let (_dir, ctx) = context();
        let out = bash(&ctx, "echo hello; printf 'no newline'", 5);
        assert!(!out.is_error);
        assert_eq!(text(&out), "hello\nno newline");
        assert_eq!(text(&bash(&ctx, "true", 5)), "(no output)");
    }

    #[test]
    fn runs_in_the_project_directory_with_empty_stdin() {
        let (_dir, ctx) = context();
        let out = bash(&ctx, "pwd; cat; echo end", 5);
        let cwd = fs::canonicalize(&ctx.cwd).unwrap();
        assert_eq!(text(&out), format!("{}\nend\n", cwd.display()));
    }

    #[test]
    fn merges_stderr_in_order() {
        let (_dir, ctx) = context();
        let out = bash(&ctx, "echo one; echo two >&2; echo three; echo four >&2", 5);
        assert_eq!(text(&out), "one\ntwo\nthree\nfour\n");
    }

    #[test]
    fn non_zero_exit_is_an_error_with_the_code() {
        let (_dir, ctx) = context();
        let out = bash(&ctx, "echo failing; exit 3", 5);
        assert!(out.is_error);
        assert_eq!(text(&out), "failing\n\nexit code 3");
        let out = bash(&ctx, "exit 1", 5);
        assert_eq!(text(&out), "exit code 1");
        let out = bash(&ctx, "kill -9 $$", 5);
        assert_eq!(text(&out), "killed by signal 9");
    }

    #[test]
    fn the_shell_is_reaped() {
        let (_dir, ctx) = context();
        let out = bash(&ctx, "echo $$", 5);
        let pid: i32 = text(&out).trim().parse().unwrap();
        // A zombie would still pass this check: reaped means gone.
        let pid = rustix::process::Pid::from_raw(pid).expect("a pid");
        assert!(
            rustix::process::test_kill_process(pid).is_err(),
            "shell {pid:?} not reaped"
        );
    }

    #[test]
    fn timeout_kills_the_whole_process_group() {
        let (_dir, ctx) = context();
        let started = Instant::now();
        let out = bash(
            &ctx,
            "sleep 30 & echo $! > bg.pid; echo partial; sleep 30",
            1,
        );
        let took = started.elapsed();
        assert!(took < Duration::from_millis(1900), "took {took:?}");
        assert!(out.is_error);
        assert_eq!(text(&out), "partial\n\nbash: command timed out after 1 s");
        let pid = read_pid(&ctx.cwd.join("bg.pid"));
        assert!(dies_soon(pid), "background sleep {pid} survived");
    }

    #[test]
    fn sigkill_follows_when_sigterm_is_ignored() {
        let (_dir, ctx) = context();
        let started = Instant::now();
        let (end, output) = execute(
            "trap '' TERM; echo ready; sleep 30; echo survived",
            &ctx.cwd,
            Duration::from_millis(200),
            &CancelToken::never(),
            Duration::from_millis(200),
        )
        .unwrap();
        assert!(matches!(end, End::TimedOut), "{end:?}");
        assert_eq!(output, "ready\n");
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn background_job_holding_the_pipe_does_not_hang() {
        let (_dir, ctx) = context();
        let started = Instant::now();
        let out = bash(&ctx, "sleep 30 & echo $! > bg.pid; echo started", 10);
        assert!(started.elapsed() < Duration::from_millis(800));
        assert!(!out.is_error, "{}", text(&out));
        assert_eq!(text(&out), "started\n");
        let pid = read_pid(&ctx.cwd.join("bg.pid"));
        assert!(dies_soon(pid), "background sleep {pid} survived");
    }

    #[test]
    fn a_job_that_left_the_group_is_drained_only_briefly() {
        let (_dir, ctx) = context();
        let started = Instant::now();
        let out = bash(
            &ctx,
            "setsid sh -c 'echo $$ > esc.pid; exec sleep 30' & \
             while [ ! -s esc.pid ]; do :; done; echo done",
            10,
        );
        let took = started.elapsed();
        let pid = read_pid(&ctx.cwd.join("esc.pid"));
        // We started this process; clean it up.
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        assert!(took < Duration::from_millis(900), "took {took:?}");
        assert_eq!(text(&out), "done\n");
    }

    #[test]
    fn cancellation_stops_the_command() {
        let (_dir, ctx) = context();
        let (canceller, token) = crate::cancel::pair();
        let trigger = thread::spawn(move || {
            thread::sleep(Duration::from_millis(150));
            canceller.cancel();
        });
        let started = Instant::now();
        let out = run(
            &json!({"command": "echo before; sleep 30", "timeout": 60}),
            &ctx,
            &token,
        );
        trigger.join().unwrap();
        assert!(started.elapsed() < Duration::from_millis(900));
        assert!(out.is_error);
        assert_eq!(text(&out), "before\n\nbash: aborted");
        // Already cancelled: nothing is started.
        let out = run(&json!({"command": "touch ran", "timeout": 5}), &ctx, &token);
        assert_eq!(text(&out), "bash: aborted");
        assert!(!ctx.cwd.join("ran").exists());
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let (_dir, ctx) = context();
        let out = bash(&ctx, "seq 1 100000", 10);
        let out = text(&out);
        // seq 1 100000 prints 588895 bytes.
        let omitted = 588_895 - HEAD_BYTES - TAIL_BYTES;
        assert!(out.starts_with("1\n2\n3\n"));
        assert!(out.ends_with("\n99999\n100000\n"));
        assert!(out.contains(&format!("\n[... {omitted} bytes omitted ...]\n")));
        assert!(out.len() < HEAD_BYTES + TAIL_BYTES + 100);
    }

    #[test]
    fn invalid_timeouts_and_commands_are_refused() {
        let (_dir, ctx) = context();
        let never = CancelToken::never();
        let call = |args: Value| text(&run(&args, &ctx, &never));
        assert_eq!(
            call(json!({"command": "true"})),
            "bash: \"timeout\" is required: a positive whole number of seconds"
        );
        for (bad, shown) in [
            (json!(0), "0"),
            (json!(-5), "-5"),
            (json!(1.5), "1.5"),
            (json!("5"), "\"5\""),
        ] {
            assert_eq!(
                call(json!({"command": "true", "timeout": bad})),
                format!(
                    "bash: \"timeout\" must be a positive whole number of seconds, got {shown}"
                )
            );
        }
        assert_eq!(
            call(json!({"timeout": 5})),
            "bash: \"command\" is required: the shell command to run"
        );
        assert_eq!(
            call(json!({"command": "  ", "timeout": 5})),
            "bash: \"command\" is empty"
        );
    }

    #[test]
    fn capture_counts_what_it_drops() {
        let mut capture = Capture::default();
        for _ in 0..100 {
            capture.push(&[b'x'; 1000]);
        }
        assert_eq!(capture.head.len(), HEAD_BYTES);
        assert_eq!(capture.tail.len(), TAIL_BYTES);
        assert_eq!(capture.total, 100_000);
        let mut small = Capture::default();
        small.push(b"a");
        small.push(b"b");
        assert_eq!(small.render(), "ab");
    }
}
