//! Extension processes and the few OS primitives the transport needs.
//!
//! A child runs in its own process group (so a holdout and its own children
//! are signalled together), with cwd = its extension directory and stderr
//! appended straight to its log file by the OS (no drain thread), and no
//! open descriptor but stdin, stdout and stderr.
//! Exit is observed through a pidfd, so a grandchild that keeps stdout open
//! cannot hide the child's death. [`Wake`] is a self-pipe that interrupts a
//! thread blocked in `poll`, which is how reader and writer threads are told
//! to stop without closing descriptors under their feet.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A started extension process.
pub struct Spawned {
    pub child: Child,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    /// Readable once the child has exited (Linux); `None` elsewhere.
    pub pidfd: Option<OwnedFd>,
}

/// Extension logs are readable by the user alone: an extension's stderr
/// can hold anything it saw, keys included.
const LOG_MODE: u32 = 0o600;

/// Opens (creating) the log in append mode and writes the start header.
pub fn open_log(path: &Path, name: &str, version: &str) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(LOG_MODE)
        .open(path)?;
    writeln!(
        f,
        "\n[zut] starting {name}/{version} (pid {})",
        std::process::id()
    )?;
    Ok(f)
}

/// Appends one `[zut] `-prefixed line to an extension log; best effort.
pub fn log_line(path: &Path, line: &str) {
    if let Ok(mut f) = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(LOG_MODE)
        .open(path)
    {
        let _ = writeln!(f, "[zut] {line}");
    }
}

/// Starts `program args…` in `dir`, in a new process group.
pub fn spawn(program: &Path, args: &[String], dir: &Path, stderr: File) -> io::Result<Spawned> {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    // SAFETY: the hook only makes system calls that are safe between fork
    // and exec (close_range, fcntl), touching no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            only_standard_descriptors();
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(io::Error::other("child pipes missing"));
    };
    set_nonblocking(stdin.as_raw_fd())?;
    set_nonblocking(stdout.as_raw_fd())?;
    let pidfd = pidfd_open(child.id());
    Ok(Spawned {
        child,
        stdin,
        stdout,
        pidfd,
    })
}

/// Waits until process `pid` (a child not yet reaped) has exited, or
/// `deadline` passes; `None` when this cannot be known (no pidfd).
pub fn exited_by(pid: u32, deadline: Instant) -> Option<bool> {
    let Some(pidfd) = pidfd_open(pid) else {
        // Already reaped (by the reader): it has exited.
        return (io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)).then_some(true);
    };
    let ready = wait_ready(pidfd.as_raw_fd(), libc::POLLIN, None, None, Some(deadline)).ok()?;
    Some(ready.io)
}

/// In the child, before exec: every descriptor above stderr becomes
/// close-on-exec, so the extension starts with stdin, stdout and stderr
/// only. zut's own descriptors are close-on-exec already; this catches the
/// ones zut itself inherited (a shell's or an IDE's open files and pipes).
fn only_standard_descriptors() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a plain system call on descriptor numbers.
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
    // Older kernels: mark them one by one (fcntl is async-signal-safe).
    for fd in 3..4096 {
        // SAFETY: fcntl on a descriptor number that may not be open.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: plain syscall; a non-negative return is a new descriptor we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just returned by the kernel and nobody else owns it.
    Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

#[cfg(not(target_os = "linux"))]
fn pidfd_open(_pid: u32) -> Option<OwnedFd> {
    None
}

pub(crate) fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own, with valid flag arguments.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A pipe, both ends close-on-exec and blocking: `(read, write)`.
#[cfg(test)]
pub(crate) fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two descriptors on success; we own them after.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned only here.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// Sends `sig` to the process group led by `pgid`; errors (already gone) ignored.
pub fn kill_group(pgid: u32, sig: libc::c_int) {
    if pgid > 1 {
        // SAFETY: kill with a negative pid signals a process group; no memory involved.
        unsafe {
            libc::kill(-(pgid as libc::pid_t), sig);
        }
    }
}

/// Whether any process of group `pgid` still exists.
pub fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    pgid > 1 && unsafe { libc::kill(-(pgid as libc::pid_t), 0) } == 0
}

/// Human text for an exit status: `exit status 3` or `killed by signal 9 (SIGKILL)`.
pub fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    match status.signal() {
        Some(sig) => format!("killed by signal {sig} ({})", signal_name(sig)),
        None => "exited".to_string(),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// A self-pipe: [`Wake::wake`] makes the read end readable for good.
pub struct Wake {
    read: OwnedFd,
    write: OwnedFd,
}

impl Wake {
    pub fn new() -> io::Result<Wake> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 fills two descriptors on success; we own them after.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created and are owned only here.
        Ok(unsafe {
            Wake {
                read: OwnedFd::from_raw_fd(fds[0]),
                write: OwnedFd::from_raw_fd(fds[1]),
            }
        })
    }

    /// Wakes every current and future `poll` on this pipe.
    pub fn wake(&self) {
        // SAFETY: writing one byte from a valid buffer to our own pipe.
        unsafe {
            libc::write(self.write.as_raw_fd(), b"x".as_ptr().cast(), 1);
        }
    }

    /// The descriptor to poll for readability.
    pub fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }
}

/// Which of the polled descriptors are ready.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ready {
    pub io: bool,
    pub woken: bool,
    pub exited: bool,
}

/// Waits until `fd` is ready for `events` (POLLIN/POLLOUT), the wake pipe
/// fires, the pidfd (if any) reports an exit, or `deadline` passes.
pub fn wait_ready(
    fd: RawFd,
    events: libc::c_short,
    wake: Option<&Wake>,
    pidfd: Option<RawFd>,
    deadline: Option<Instant>,
) -> io::Result<Ready> {
    // A negative fd is ignored by poll: that is how absent ones are left out.
    let mut fds = [
        libc::pollfd {
            fd,
            events,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.map_or(-1, Wake::fd),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: pidfd.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        let timeout = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                left.as_millis().min(i32::MAX as u128) as i32
                    + i32::from(left.subsec_nanos() % 1_000_000 != 0)
            }
        };
        // SAFETY: `fds` is a valid array of pollfd for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok(Ready {
            io: fds[0].revents != 0,
            woken: wake.is_some() && fds[1].revents != 0,
            exited: pidfd.is_some() && fds[2].revents != 0,
        });
    }
}

/// Reaps `child` if it has exited.
pub fn try_reap(child: &mut Child) -> Option<ExitStatus> {
    child.try_wait().ok().flatten()
}

/// Remaining time until `deadline`, zero if passed.
pub fn until(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// Makes zut the reaper of its orphaned descendants (Linux): a grandchild
/// that leaves its extension's process group with `setsid()` is reparented
/// to zut instead of init when its parent dies, so [`end_adopted`] can
/// still find and end it. Best effort; elsewhere nothing happens.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with integer arguments only; no memory involved.
        let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
        if rc != 0 {
            log::warn!(
                "cannot become the reaper of escaped extension processes: {}",
                io::Error::last_os_error()
            );
        }
    }
}

/// The pids whose parent is this process, read from `/proc` (Linux only;
/// empty elsewhere or when `/proc` is unreadable).
pub fn children() -> Vec<u32> {
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
        let pids = children();
        if pids.is_empty() {
            break;
        }
        for &pid in &pids {
            signal_tree(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        let pids_len = pids.len();
        let mut left: Vec<u32> = pids;
        while !left.is_empty() {
            left.retain(|&pid| !reap_nohang(pid));
            if left.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(until(deadline).min(Duration::from_millis(10)));
        }
        for &pid in &left {
            signal_tree(pid, libc::SIGKILL);
            reap_blocking(pid);
        }
        ended += pids_len;
    }
    ended
}

/// Sends `sig` to `pid` and, when it leads a process group, to that group.
fn signal_tree(pid: u32, sig: libc::c_int) {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill and getpgid take plain integers; no memory involved.
    unsafe {
        if libc::getpgid(p) == p {
            libc::kill(-p, sig);
        }
        libc::kill(p, sig);
    }
}

/// Reaps `pid` if it has ended; true when it is gone (or not our child).
fn reap_nohang(pid: u32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on one pid with a valid status pointer.
    let rc = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
    rc != 0
}

fn reap_blocking(pid: u32) {
    let mut status = 0;
    // SAFETY: waitpid on one pid with a valid status pointer; it was sent
    // SIGKILL, so this returns promptly.
    unsafe {
        libc::waitpid(pid as libc::pid_t, &mut status, 0);
    }
}
