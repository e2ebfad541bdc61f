//! The one way zut starts a subprocess: a [`ChildGuard`].
//!
//! Role: every child (an extension, the `bash` tool's shell, the git, go
//! and cargo runs of `zut ext install`) is started through
//! [`ChildGuard::spawn`], which puts it at the head of a new process group
//! so that it and everything it starts can be signalled together.
//!
//! Invariants:
//! - a guard's child is reaped before the guard is gone: dropping it (on
//!   any path, a panic included) sends SIGTERM to the whole group, waits
//!   the kill grace, sends SIGKILL and reaps; a child that survives even
//!   SIGKILL for [`REAP_LIMIT`] is logged and left behind;
//! - once the child is reaped, whatever is left of its group gets SIGKILL
//!   when the guard drops, so helpers (git's, a shell's background jobs)
//!   never outlive the run that started them;
//! - exit is observed through a pidfd on Linux, which a grandchild holding
//!   the child's stdout open cannot hide; where there is none, waiting
//!   with a deadline checks every [`FALLBACK_POLL`] instead;
//! - nothing here sleeps in a loop while a pidfd exists: waits are either
//!   a `poll` with a deadline ([`ChildGuard::wait_until`],
//!   [`ExitWatch::exited_by`]) or a channel to `select!` on
//!   ([`ChildGuard::exit_notice`]).
//!
//! All system calls go through `rustix`; the only `unsafe` is in
//! [`inherited_fds`], which keeps inherited descriptors from children, and
//! the `pre_exec` hook of [`die_with_zut`].

use crossbeam_channel::Receiver;
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::{Pid, Signal};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// SIGTERM → SIGKILL grace when `ZUT_KILL_GRACE_MS` is not set.
pub const DEFAULT_KILL_GRACE_MS: u64 = 1000;
/// The environment variable that overrides the kill grace (see zut(1), ENVIRONMENT).
pub const KILL_GRACE_ENV: &str = "ZUT_KILL_GRACE_MS";
/// How long a SIGKILLed child may take to be reported dead.
pub const REAP_LIMIT: Duration = Duration::from_secs(5);
/// Without a pidfd, how often a deadline wait checks whether the child exited.
pub const FALLBACK_POLL: Duration = Duration::from_millis(10);

/// The kill grace: `ZUT_KILL_GRACE_MS` or [`DEFAULT_KILL_GRACE_MS`].
pub fn kill_grace_from_env() -> Duration {
    let ms = std::env::var(KILL_GRACE_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_KILL_GRACE_MS);
    Duration::from_millis(ms)
}

/// A started child, the leader of its own process group, reaped on drop.
pub struct ChildGuard {
    child: Child,
    watch: ExitWatch,
    /// Set once the child is reaped.
    status: Option<ExitStatus>,
    /// SIGTERM → SIGKILL grace used when the guard drops a live child.
    grace: Duration,
    /// The [`ChildGuard::exit_notice`] thread, joined once the child is reaped.
    notice: Option<JoinHandle<()>>,
    /// [`ChildGuard::group_dies_with_zut`]'s watchdog, reaped on drop.
    watchdog: Option<Watchdog>,
}

/// A `sh` in the child's process group that SIGKILLs the group when the
/// pipe it reads reaches end of file, which happens when zut's end closes:
/// on drop, or when zut dies however it dies.
struct Watchdog {
    child: Child,
    /// zut's end of the pipe: never written, close-on-exec, so no other
    /// program holds it.
    _alive: OwnedFd,
}

impl ChildGuard {
    /// Starts `cmd` in a new process group (the child's pid is the group
    /// id) and opens its pidfd. The drop grace is the environment's kill
    /// grace; [`ChildGuard::with_grace`] changes it.
    pub fn spawn(cmd: &mut Command) -> io::Result<ChildGuard> {
        inherited_fds::close_on_exec();
        cmd.process_group(0);
        let child = cmd.spawn()?;
        let pid = Pid::from_child(&child);
        Ok(ChildGuard {
            watch: ExitWatch::open(pid),
            child,
            status: None,
            grace: kill_grace_from_env(),
            notice: None,
            watchdog: None,
        })
    }

    /// Makes the child's whole process group die with zut, whatever it
    /// forked (`sleep 300 &`, `sh -c 'sleep 300; true'`, a pipeline): a
    /// watchdog `sh` joins the group and reads a pipe only zut can write
    /// to; when zut is gone (even by `kill -9`, which no handler sees) the
    /// kernel closes that pipe, the read ends and the watchdog SIGKILLs
    /// the group. It holds none of the child's descriptors (its output is
    /// `/dev/null`), so it delays no end of file; the group's own end (the
    /// guard's drop) kills it too.
    ///
    /// Compared with [`die_with_zut`] alone it reaches every process that
    /// stayed in the group, and does not depend on which thread spawned
    /// the child. Not covered: processes that left the group (`setsid`),
    /// and a zut that dies in the microseconds between the child's start
    /// and the watchdog's (then [`die_with_zut`] still kills the child).
    /// Costs one `sh` per call; if it cannot start, this is logged and
    /// the child runs without it.
    pub fn group_dies_with_zut(&mut self) {
        match self.start_watchdog() {
            Ok(w) => self.watchdog = Some(w),
            Err(e) => log::warn!(
                "cannot start the watchdog of process group {}: {e}",
                self.pid()
            ),
        }
    }

    fn start_watchdog(&self) -> io::Result<Watchdog> {
        let (read, alive) = cloexec_pipe()?;
        let child = Command::new("sh")
            .arg("-c")
            .arg("read _; kill -9 0")
            .stdin(std::process::Stdio::from(read))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(self.pid() as i32)
            .spawn()?;
        Ok(Watchdog {
            child,
            _alive: alive,
        })
    }

    /// The SIGTERM → SIGKILL grace used on drop.
    pub fn with_grace(mut self, grace: Duration) -> ChildGuard {
        self.grace = grace;
        self
    }

    /// The child's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.watch.pid.as_raw_nonzero().get() as u32
    }

    /// A handle that observes the exit and signals the group without
    /// needing the guard (for threads that must not hold it).
    pub fn watch(&self) -> ExitWatch {
        self.watch.clone()
    }

    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Reaps the child if it has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = self.child.try_wait()?;
        }
        Ok(self.status)
    }

    /// Waits for the child to exit and reaps it, for as long as it takes.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let s = self.child.wait()?;
        self.status = Some(s);
        Ok(s)
    }

    /// Waits until the child exits (and reaps it) or `deadline` passes
    /// (`Ok(None)`); `None` waits for ever.
    pub fn wait_until(&mut self, deadline: Option<Instant>) -> io::Result<Option<ExitStatus>> {
        loop {
            if let Some(s) = self.try_wait()? {
                return Ok(Some(s));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
            if deadline.is_none() && self.watch.pidfd.is_none() {
                return self.wait().map(Some);
            }
            self.watch.wait_for_exit(deadline)?;
        }
    }

    /// A channel that disconnects once the child has exited (it is not
    /// reaped: [`ChildGuard::wait`] then returns at once). For `select!`
    /// next to a timer and a cancel token. Costs one small thread blocked
    /// in the kernel (`poll` on the pidfd, else `waitid` without reaping),
    /// which ends when the child does.
    pub fn exit_notice(&mut self) -> io::Result<Receiver<()>> {
        let (tx, rx) = crossbeam_channel::bounded::<()>(0);
        let watch = self.watch.clone();
        let handle = std::thread::Builder::new()
            .name("child-exit".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                watch.block_until_exit();
                drop(tx);
            })?;
        if let Some(old) = self.notice.replace(handle) {
            self.notice = Some(old); // keep the first; the new one ends with the child too
        }
        Ok(rx)
    }

    /// Sends `signal` to the whole process group.
    pub fn signal_group(&self, signal: Signal) {
        self.watch.signal_group(signal);
    }

    /// SIGTERM to the group, up to `grace` for the child to exit, SIGKILL
    /// to the group, then up to [`REAP_LIMIT`] to reap. The status, or
    /// `None` if the child survived SIGKILL that long.
    pub fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Ok(Some(s)) = self.try_wait() {
            return Some(s);
        }
        self.signal_group(Signal::TERM);
        let status = self.wait_until(Some(Instant::now() + grace)).ok().flatten();
        self.signal_group(Signal::KILL);
        status.or_else(|| self.reap_after_kill())
    }

    /// SIGKILL to the group at once, then reap (spawn failures, cleanup).
    pub fn kill_now(&mut self) -> Option<ExitStatus> {
        self.signal_group(Signal::KILL);
        self.reap_after_kill()
    }

    fn reap_after_kill(&mut self) -> Option<ExitStatus> {
        let status = self
            .wait_until(Some(Instant::now() + REAP_LIMIT))
            .ok()
            .flatten();
        if status.is_none() {
            log::warn!(
                "child {} did not die after SIGKILL; it is left unreaped",
                self.pid()
            );
        }
        status
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let reaped = self.status.is_some() || self.terminate(self.grace).is_some();
        // Whatever is left of the group: background jobs, helpers.
        if self.watch.group_alive() {
            self.signal_group(Signal::KILL);
        }
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.child.kill();
            let _ = w.child.wait();
        }
        if reaped {
            if let Some(h) = self.notice.take() {
                let _ = h.join();
            }
        }
    }
}

/// Observes one child's exit and signals its group; cheap to clone, safe
/// to use from any thread. It never reaps (only the guard does).
#[derive(Clone)]
pub struct ExitWatch {
    pid: Pid,
    /// Readable once the process has exited (Linux); `None` elsewhere or
    /// on kernels without pidfds.
    pidfd: Option<Arc<OwnedFd>>,
}

impl ExitWatch {
    fn open(pid: Pid) -> ExitWatch {
        ExitWatch {
            pid,
            pidfd: pidfd_open(pid).map(Arc::new),
        }
    }

    /// The descriptor that becomes readable when the process exits, for
    /// polling it next to others.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_deref().map(AsFd::as_fd)
    }

    /// Waits until the process has exited (reaped or not) or `deadline`
    /// passes; `None` when this cannot be known (no pidfd).
    pub fn exited_by(&self, deadline: Instant) -> Option<bool> {
        let fd = self.fd()?;
        let ready = wait_ready(fd, PollFlags::IN, None, None, Some(deadline)).ok()?;
        Some(ready.io)
    }

    /// Sends `signal` to the process group; errors (the group is gone)
    /// are expected and ignored.
    pub fn signal_group(&self, signal: Signal) {
        // A guard's pid is never 0 or 1, which would mean our own group
        // or every process; checked anyway.
        if self.pid.as_raw_nonzero().get() > 1 {
            let _ = rustix::process::kill_process_group(self.pid, signal);
        }
    }

    /// Whether any process of the group still exists.
    pub fn group_alive(&self) -> bool {
        self.pid.as_raw_nonzero().get() > 1
            && rustix::process::test_kill_process_group(self.pid).is_ok()
    }

    /// Blocks until the exit is visible or `deadline` passes; with no
    /// pidfd, returns after at most [`FALLBACK_POLL`] so the caller checks.
    fn wait_for_exit(&self, deadline: Option<Instant>) -> io::Result<()> {
        match self.fd() {
            Some(fd) => wait_ready(fd, PollFlags::IN, None, None, deadline).map(drop),
            None => {
                let left = deadline.map_or(FALLBACK_POLL, until);
                std::thread::sleep(left.min(FALLBACK_POLL));
                Ok(())
            }
        }
    }

    /// Blocks until the process has exited, without reaping it.
    fn block_until_exit(&self) {
        match self.fd() {
            Some(fd) => {
                let _ = wait_ready(fd, PollFlags::IN, None, None, None);
            }
            None => loop {
                use rustix::process::{waitid, WaitId, WaitIdOptions};
                let opts = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
                match waitid(WaitId::Pid(self.pid), opts) {
                    Err(e) if e == rustix::io::Errno::INTR => continue,
                    _ => return,
                }
            },
        }
    }
}

#[cfg(target_os = "linux")]
fn pidfd_open(pid: Pid) -> Option<OwnedFd> {
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
}

#[cfg(not(target_os = "linux"))]
fn pidfd_open(_pid: Pid) -> Option<OwnedFd> {
    None
}

/// A wake-up descriptor: [`Wake::wake`] makes it readable for good (it
/// is never read). It interrupts a thread blocked in [`wait_ready`]
/// without closing any descriptor under its feet. On Linux it is one
/// eventfd; elsewhere a self-pipe (two descriptors). Every descriptor the
/// host holds is copied into each child it spawns and closed again by the
/// child's exec, so one per extension instead of two is paid by every
/// later start.
pub struct Wake {
    read: OwnedFd,
    #[cfg(not(target_os = "linux"))]
    write: OwnedFd,
}

impl Wake {
    #[cfg(target_os = "linux")]
    pub fn new() -> io::Result<Wake> {
        use rustix::event::{eventfd, EventfdFlags};
        let read = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        Ok(Wake { read })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn new() -> io::Result<Wake> {
        use rustix::pipe::{pipe_with, PipeFlags};
        let (read, write) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        Ok(Wake { read, write })
    }

    /// Wakes every current and future wait on this descriptor.
    pub fn wake(&self) {
        // A counter at its maximum (or a full pipe) is already readable:
        // a failed write changes nothing.
        #[cfg(target_os = "linux")]
        let _ = rustix::io::write(&self.read, &1u64.to_ne_bytes());
        #[cfg(not(target_os = "linux"))]
        let _ = rustix::io::write(&self.write, b"x");
    }

    /// The descriptor to poll for readability.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }
}

/// Which of the polled descriptors are ready.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ready {
    pub io: bool,
    pub woken: bool,
    pub exited: bool,
}

/// Waits until `fd` is ready for `events` (`IN`/`OUT`), the wake pipe
/// fires, the pidfd (if any) reports an exit, or `deadline` passes.
pub fn wait_ready(
    fd: BorrowedFd<'_>,
    events: PollFlags,
    wake: Option<&Wake>,
    pidfd: Option<BorrowedFd<'_>>,
    deadline: Option<Instant>,
) -> io::Result<Ready> {
    let mut fds = [
        PollFd::from_borrowed_fd(fd, events),
        PollFd::from_borrowed_fd(fd, events),
        PollFd::from_borrowed_fd(fd, events),
    ];
    // Present descriptors go first; only `fds[..n]` is polled.
    let mut n = 1;
    let mut wake_at = None;
    let mut exit_at = None;
    for (extra, at) in [(wake.map(Wake::fd), &mut wake_at), (pidfd, &mut exit_at)] {
        if let Some(e) = extra {
            fds[n] = PollFd::from_borrowed_fd(e, PollFlags::IN);
            *at = Some(n);
            n += 1;
        }
    }
    loop {
        let timeout = match deadline {
            None => None,
            Some(d) => Some(
                Timespec::try_from(until(d)).map_err(|_| io::Error::other("deadline too far"))?,
            ),
        };
        match rustix::event::poll(&mut fds[..n], timeout.as_ref()) {
            Ok(_) => {}
            Err(e) if e == rustix::io::Errno::INTR => continue,
            Err(e) => return Err(e.into()),
        }
        let fired = |i: Option<usize>| i.is_some_and(|i| !fds[i].revents().is_empty());
        return Ok(Ready {
            io: !fds[0].revents().is_empty(),
            woken: fired(wake_at),
            exited: fired(exit_at),
        });
    }
}

/// Puts `fd` in non-blocking mode.
pub fn set_nonblocking(fd: impl AsFd) -> io::Result<()> {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    let flags = fcntl_getfl(&fd)?;
    fcntl_setfl(&fd, flags | OFlags::NONBLOCK)?;
    Ok(())
}

/// A pipe whose ends are close-on-exec, so no other child inherits them.
pub fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// Remaining time until `deadline`, zero if passed.
pub fn until(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// Whether process `pid` no longer runs. A zombie counts as gone: a killed
/// orphan may linger unreaped when the container's init does not reap.
pub fn is_gone(pid: u32) -> bool {
    let Some(p) = Pid::from_raw(pid as i32) else {
        return true;
    };
    if rustix::process::test_kill_process(p).is_err() {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| Some(stat.rsplit_once(')')?.1.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// Makes zut the reaper of its orphaned descendants (Linux): a grandchild
/// that leaves its extension's process group with `setsid()` is reparented
/// to zut instead of init when its parent dies, so [`end_adopted`] can
/// still find and end it. Best effort; elsewhere nothing happens.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        log::warn!("cannot become the reaper of escaped extension processes: {e}");
    }
}

/// The pids whose parent is this process, read from `/proc` (Linux only;
/// empty elsewhere or when `/proc` is unreadable).
fn children() -> Vec<u32> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| parent_of(pid) == Some(me))
        .collect()
}

/// The parent pid of `pid` from `/proc/PID/stat` (the field after the
/// state, which follows the command name's closing parenthesis).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Ends every process still parented to zut: by the time this runs (on
/// the way out, after every extension was stopped and reaped) those are
/// descendants that escaped their extension's process group and were
/// adopted through [`become_subreaper`]. SIGTERM to each (and to the
/// group it leads), SIGKILL to what is left after `grace`, and every one
/// reaped, so none outlives zut nor lingers as a zombie. Repeats a few
/// rounds: ending one adopted process hands its own children to zut.
/// Returns how many were ended.
pub fn end_adopted(grace: Duration) -> usize {
    let mut ended = 0;
    for _ in 0..4 {
        let pids: Vec<Pid> = children()
            .into_iter()
            .filter_map(|p| Pid::from_raw(p as i32))
            .collect();
        if pids.is_empty() {
            break;
        }
        for &pid in &pids {
            signal_tree(pid, Signal::TERM);
        }
        let deadline = Instant::now() + grace;
        let mut left = pids.clone();
        loop {
            left.retain(|&pid| !reaped(pid, rustix::process::WaitOptions::NOHANG));
            if left.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(until(deadline).min(FALLBACK_POLL));
        }
        for &pid in &left {
            signal_tree(pid, Signal::KILL);
            // It was sent SIGKILL, so this wait returns promptly.
            reaped(pid, rustix::process::WaitOptions::empty());
        }
        ended += pids.len();
    }
    ended
}

/// Sends `signal` to `pid` and, when it leads a process group, to that group.
fn signal_tree(pid: Pid, signal: Signal) {
    if rustix::process::getpgid(Some(pid)) == Ok(pid) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
    let _ = rustix::process::kill_process(pid, signal);
}

/// Reaps `pid` if it has ended; true when it is gone (or not our child).
fn reaped(pid: Pid, options: rustix::process::WaitOptions) -> bool {
    !matches!(rustix::process::waitpid(Some(pid), options), Ok(None))
}

/// Asks the kernel to SIGKILL the child `cmd` starts when the thread that
/// started it ends, which a `kill -9` of zut (or the OOM killer) does to
/// every thread at once: a tool's shell must not keep running under init
/// after zut is gone. Linux only (`PR_SET_PDEATHSIG`); elsewhere nothing
/// happens.
///
/// The signal follows the thread, not the process: use it only where the
/// thread that spawns the child also waits for it, as the `bash` tool and
/// the hook runner do (the child is reaped before that thread can end).
/// It reaches the child and any program the child `exec`s in its place
/// (`bash -c 'sleep 300'` execs the sleep); processes the child forks are
/// not covered, since the kernel clears the setting on `fork`: for them,
/// [`ChildGuard::group_dies_with_zut`].
///
/// It adds a `pre_exec` hook, so the child is started with `fork` rather
/// than `posix_spawn`: fine for a tool call, not for extension starts (see
/// [`inherited_fds`]).
pub fn die_with_zut(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        let zut = rustix::process::getpid();
        // SAFETY: the hook runs between fork and exec and makes two
        // system calls only (prctl, getppid): no allocation, no lock.
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
                // zut died before the setting took: the kernel will never
                // send it, so do not start at all.
                if rustix::process::getppid() != Some(zut) {
                    return Err(io::Error::other("zut exited while starting the command"));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// Descriptors zut inherited (a shell's or an IDE's open files and pipes)
/// must not reach the programs zut starts. zut's own descriptors are
/// close-on-exec already (std opens everything with `O_CLOEXEC`); the
/// inherited ones are marked once, in zut itself, before the first spawn.
/// Doing it here rather than in a `pre_exec` hook keeps spawning on
/// `posix_spawn` (vfork-like), which a `pre_exec` closure would turn into a
/// full `fork` of zut: that cost 1.2 ms of CPU per extension start.
/// Apart from the hook of [`die_with_zut`], the only `unsafe` of the
/// subprocess code lives in this module.
pub mod inherited_fds {
    use std::sync::Once;

    /// Marks every descriptor above stderr close-on-exec; runs once per
    /// process (descriptors are inherited only at start).
    pub fn close_on_exec() {
        static DONE: Once = Once::new();
        DONE.call_once(mark_cloexec_above_stderr);
    }

    fn mark_cloexec_above_stderr() {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: a plain system call on descriptor numbers; it only
            // sets the close-on-exec flag and closes nothing.
            let done = unsafe {
                libc::syscall(
                    libc::SYS_close_range,
                    3 as libc::c_uint,
                    libc::c_uint::MAX,
                    libc::CLOSE_RANGE_CLOEXEC,
                )
            } == 0;
            if done {
                return;
            }
        }
        // Older kernels: mark them one by one.
        for fd in 3..4096 {
            // SAFETY: fcntl on a descriptor number that may not be open;
            // it changes no memory.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    fn sleeper(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        cmd
    }

    /// Reads the grandchild pid the script prints first.
    fn first_line_pid(guard: &mut ChildGuard) -> u32 {
        use std::io::BufRead;
        let out = guard.take_stdout().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(out).read_line(&mut line).unwrap();
        line.trim().parse().expect("a pid")
    }

    /// Waits briefly for `pid` to be gone: signals are delivered asynchronously.
    fn gone_soon(pid: u32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if is_gone(pid) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn drop_kills_and_reaps_the_child_and_its_group() {
        let mut guard = ChildGuard::spawn(&mut sleeper("sleep 30 & echo $!; wait"))
            .unwrap()
            .with_grace(Duration::from_millis(200));
        let leader = guard.pid();
        let helper = first_line_pid(&mut guard);
        drop(guard);
        // Reaped, not a zombie: the pid is gone outright.
        assert!(
            rustix::process::test_kill_process(Pid::from_raw(leader as i32).unwrap()).is_err(),
            "leader {leader} not reaped"
        );
        assert!(gone_soon(helper), "helper {helper} survived");
    }

    #[test]
    fn a_panic_inside_the_scope_still_reaps() {
        let (tx, rx) = std::sync::mpsc::channel();
        let result = std::panic::catch_unwind(move || {
            let guard = ChildGuard::spawn(&mut sleeper("trap '' TERM; sleep 30"))
                .unwrap()
                .with_grace(Duration::from_millis(100));
            tx.send(guard.pid()).unwrap();
            panic!("boom while holding a guard");
        });
        assert!(result.is_err());
        let pid = rx.recv().unwrap();
        assert!(
            rustix::process::test_kill_process(Pid::from_raw(pid as i32).unwrap()).is_err(),
            "child {pid} still exists after the panic"
        );
    }

    #[test]
    fn wait_until_honours_the_deadline_and_then_reaps() {
        let mut guard = ChildGuard::spawn(&mut sleeper("sleep 0.3; exit 4")).unwrap();
        let soon = Instant::now() + Duration::from_millis(50);
        assert!(guard.wait_until(Some(soon)).unwrap().is_none());
        assert!(Instant::now() >= soon);
        let status = guard.wait_until(None).unwrap().expect("exited");
        assert_eq!(status.code(), Some(4));
    }

    #[test]
    fn exit_notice_disconnects_when_the_child_exits() {
        let mut guard = ChildGuard::spawn(&mut sleeper("exit 7")).unwrap();
        let notice = guard.exit_notice().unwrap();
        crossbeam_channel::select! {
            recv(notice) -> r => assert!(r.is_err()),
            default(Duration::from_secs(10)) => panic!("no exit notice"),
        }
        assert_eq!(guard.wait().unwrap().code(), Some(7));
    }

    #[test]
    fn terminate_escalates_to_sigkill() {
        let mut guard = ChildGuard::spawn(&mut sleeper("trap '' TERM; echo $$; sleep 30")).unwrap();
        // Once it has printed, the trap is set: SIGTERM alone cannot stop it.
        first_line_pid(&mut guard);
        let started = Instant::now();
        let status = guard.terminate(Duration::from_millis(100)).expect("reaped");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
