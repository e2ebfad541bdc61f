//! The `bash` tool: run a shell command with a required timeout.
//!
//! The command runs as `bash -c COMMAND` (`sh -c` where there is no bash)
//! in the project directory, with stdin from `/dev/null` and stdout and
//! stderr on ONE pipe so the output keeps its order. The shell leads its
//! own process group, so everything it starts can be signalled together.
//!
//! Threads: a waiter that reaps the shell and sends its status on a
//! channel, and a reader that `poll`s the pipe (and a stop pipe) and keeps
//! a bounded [`Capture`] of the output. The calling thread `select!`s on
//! the status, the timeout and the cancel token; nothing sleeps in a loop.
//!
//! Invariants:
//! - the shell is always reaped and both threads are always joined (the
//!   only exception is a shell that survives SIGKILL, which is logged);
//! - when the shell exits, whatever is left of its group is SIGKILLed, so
//!   background jobs do not outlive the call or keep it waiting; output
//!   from processes that left the group is drained for [`DRAIN_GRACE`] only;
//! - on timeout or cancel the group gets SIGTERM, then SIGKILL after the
//!   kill grace (`ZUT_KILL_GRACE_MS`, default 1000 ms);
//! - memory is bounded: the first [`HEAD_BYTES`] and last [`TAIL_BYTES`] of
//!   the output are kept, the middle is counted and replaced by a marker.

use super::common::Args;
use super::{ToolContext, ToolOutput};
use crate::cancel::CancelToken;
use crate::provider::ToolDef;
use crossbeam_channel::{self as channel, Receiver};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Output kept from the start of a long output.
pub const HEAD_BYTES: usize = 30 * 1024;
/// Output kept from the end of a long output.
pub const TAIL_BYTES: usize = 20 * 1024;
/// SIGTERM → SIGKILL grace when `ZUT_KILL_GRACE_MS` is not set.
pub const DEFAULT_KILL_GRACE_MS: u64 = 1000;
/// The environment variable that overrides the kill grace (see zut(1), ENVIRONMENT).
pub const KILL_GRACE_ENV: &str = "ZUT_KILL_GRACE_MS";
/// After the shell is gone, how long output may still be drained from
/// processes that escaped its group (`setsid`) but hold the pipe.
pub const DRAIN_GRACE: Duration = Duration::from_millis(250);
/// How long a SIGKILLed shell may take to be reported dead.
const REAP_LIMIT: Duration = Duration::from_secs(5);
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

fn bash(args: &Value, ctx: &ToolContext, cancel: &CancelToken) -> Result<ToolOutput, ToolOutput> {
    let args = Args::new("bash", args)?;
    let command = args.string("command", "the shell command to run")?;
    let timeout = args.positive("timeout", "a positive whole number of seconds")?;
    if command.trim().is_empty() {
        return Err(args.error("\"command\" is empty"));
    }
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
        kill_grace(),
    )
    .map_err(|e| args.error(format!("cannot start the shell: {e}")))?;
    Ok(report(end, output, timeout))
}

/// The kill grace: `ZUT_KILL_GRACE_MS` or [`DEFAULT_KILL_GRACE_MS`].
fn kill_grace() -> Duration {
    let ms = std::env::var(KILL_GRACE_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_KILL_GRACE_MS);
    Duration::from_millis(ms)
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
    let job = Job::start(command, cwd)?;
    let timer = Instant::now()
        .checked_add(timeout)
        .map(channel::at)
        .unwrap_or_else(channel::never);
    let end = channel::select! {
        recv(job.exited) -> status => match status {
            Ok(Ok(status)) => End::Exited(status),
            Ok(Err(e)) => End::Lost(e.to_string()),
            Err(_) => End::Lost("the waiter thread vanished".into()),
        },
        recv(timer) -> _ => End::TimedOut,
        recv(cancel.receiver()) -> _ => End::Aborted,
    };
    let reaped = match end {
        End::Exited(_) | End::Lost(_) => true,
        End::TimedOut | End::Aborted => job.terminate(kill_grace),
    };
    // Whatever is left of the group: background jobs, TERM-ignorers.
    signal_group(job.pgid, libc::SIGKILL);
    Ok((end, job.finish(reaped)))
}

/// A running shell and the two threads that watch it.
struct Job {
    pgid: libc::pid_t,
    exited: Receiver<io::Result<ExitStatus>>,
    waiter: JoinHandle<()>,
    reader: Reader,
}

impl Job {
    fn start(command: &str, cwd: &Path) -> io::Result<Job> {
        let (out_read, out_write) = pipe()?;
        let child = spawn_shell(command, cwd, &out_write)?;
        // Only the shell (and what it starts) may hold the write end now,
        // so end of file means they have all closed it.
        drop(out_write);
        let pgid = child.id() as libc::pid_t;
        let (status_tx, exited) = channel::bounded(1);
        let waiter = thread::Builder::new()
            .name("bash-wait".into())
            .spawn(move || {
                let mut child: Child = child;
                let _ = status_tx.send(child.wait());
            });
        let waiter = match waiter {
            Ok(waiter) => waiter,
            Err(e) => {
                // The closure, and with it the Child, is gone: kill and
                // reap the shell by pid.
                signal_group(pgid, libc::SIGKILL);
                // SAFETY: waitpid on our own child's pid with a null status
                // pointer, which waitpid allows.
                unsafe { libc::waitpid(pgid, std::ptr::null_mut(), 0) };
                return Err(e);
            }
        };
        match Reader::start(out_read) {
            Ok(reader) => Ok(Job {
                pgid,
                exited,
                waiter,
                reader,
            }),
            Err(e) => {
                signal_group(pgid, libc::SIGKILL);
                let _ = exited.recv_timeout(REAP_LIMIT);
                let _ = waiter.join();
                Err(e)
            }
        }
    }

    /// SIGTERM, then SIGKILL once the grace is over; returns whether the
    /// shell was reaped. Within the grace, the rest of the group gets the
    /// same chance to exit: the pipe reaching end of file means every
    /// process that held it is gone.
    fn terminate(&self, grace: Duration) -> bool {
        signal_group(self.pgid, libc::SIGTERM);
        let deadline = Instant::now() + grace;
        let mut reaped = self.exited.recv_deadline(deadline).is_ok();
        if reaped {
            let _ = self.reader.done.recv_deadline(deadline);
        }
        signal_group(self.pgid, libc::SIGKILL);
        if !reaped {
            reaped = self.exited.recv_timeout(REAP_LIMIT).is_ok();
        }
        reaped
    }

    /// Joins the threads and returns the rendered output.
    fn finish(self, reaped: bool) -> String {
        if reaped {
            let _ = self.waiter.join();
        } else {
            log::warn!(
                "bash: shell {} did not die after SIGKILL; its waiter thread is left behind",
                self.pgid
            );
        }
        self.reader.finish(DRAIN_GRACE).render()
    }
}

/// Sends `signal` to process group `pgid`; errors (the group is already
/// gone) are expected and ignored.
fn signal_group(pgid: libc::pid_t, signal: libc::c_int) {
    // Never 0 or 1: those would signal our own group or everything.
    if pgid > 1 {
        // SAFETY: killpg has no memory-safety preconditions.
        unsafe { libc::killpg(pgid, signal) };
    }
}

/// Starts the shell with both output streams on `output`, in a new
/// process group.
fn spawn_shell(command: &str, cwd: &Path, output: &OwnedFd) -> io::Result<Child> {
    match shell_command("bash", command, cwd, output)?.spawn() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            shell_command("sh", command, cwd, output)?.spawn()
        }
        spawned => spawned,
    }
}

fn shell_command(shell: &str, command: &str, cwd: &Path, output: &OwnedFd) -> io::Result<Command> {
    let mut cmd = Command::new(shell);
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(output.try_clone()?))
        .stderr(Stdio::from(output.try_clone()?))
        .process_group(0);
    Ok(cmd)
}

/// A pipe whose ends are close-on-exec, so no other child inherits them.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    #[cfg(target_os = "linux")]
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    // SAFETY: as above; FD_CLOEXEC is set right after (a concurrent fork
    // could still inherit the ends, which only delays end of file).
    #[cfg(not(target_os = "linux"))]
    let rc = unsafe {
        let rc = libc::pipe(fds.as_mut_ptr());
        if rc == 0 {
            libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(fds[1], libc::F_SETFD, libc::FD_CLOEXEC);
        }
        rc
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe(2) succeeded, so both descriptors are open and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
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
        let (stop_read, stop) = pipe()?;
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
        libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two pollfd structs.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if rc >= 0 {
            break;
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return Wake::Failed;
        }
    }
    if fds[1].revents != 0 {
        Wake::Stop
    } else if fds[0].revents != 0 {
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
        let mut fd = libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a zero timeout never blocks.
        if unsafe { libc::poll(&mut fd, 1, 0) } <= 0 || fd.revents == 0 {
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

    /// Whether `pid` is no longer running. A killed orphan may linger as a
    /// zombie when the container's init does not reap; that is dead too.
    fn is_dead(pid: libc::pid_t) -> bool {
        // SAFETY: signal 0 only checks for existence.
        let gone = unsafe { libc::kill(pid, 0) } == -1
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        let zombie = fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| Some(stat.rsplit_once(')')?.1.trim_start().starts_with('Z')))
            .unwrap_or(false);
        gone || zombie
    }

    /// Waits briefly for `pid` to die: signals are delivered asynchronously.
    fn dies_soon(pid: libc::pid_t) -> bool {
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            if is_dead(pid) {
                return true;
            }
            thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn read_pid(path: &Path) -> libc::pid_t {
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
        let pid: libc::pid_t = text(&out).trim().parse().unwrap();
        // SAFETY: signal 0 only checks for existence; a zombie would pass.
        assert_eq!(unsafe { libc::kill(pid, 0) }, -1, "shell {pid} not reaped");
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
        // SAFETY: we started this process; clean it up.
        unsafe { libc::kill(pid, libc::SIGKILL) };
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
