//! Extension processes: how they start, where their stderr goes, and how
//! their end is described.
//!
//! A load starts all its processes at once ([`launch_all`]): on one thread
//! for a few, on several that share the starts for many,
//! since each start holds its thread until the child has called `exec`.
//!
//! A child runs through a [`ChildGuard`] (its own process group, exit
//! observed through a pidfd, killed and reaped if the guard drops), with
//! cwd = its extension directory and stderr appended straight to its log
//! file by the OS (no drain thread), and no open descriptor but stdin,
//! stdout and stderr. Its stdin and stdout are non-blocking: the transport
//! bounds every read and write with [`wait_ready`] and a [`Wake`] pipe.
//! A Python extension also finds the Python SDK zut was built with: it is
//! written to `$ZUT_HOME/sdk/python` and put on its `PYTHONPATH`
//! ([`python_env`]), after whatever `PYTHONPATH` zut itself was given.

use crate::proc::{self, ChildGuard};
pub use crate::proc::{until, wait_ready, Ready, Wake};
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command, ExitStatus, Stdio};

/// A started extension process.
pub struct Spawned {
    pub guard: ChildGuard,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
}

/// Extension logs are readable by the user alone: an extension's stderr
/// can hold anything it saw, keys included.
const LOG_MODE: u32 = 0o600;

/// Opens (creating) the log in append mode and writes the start header,
/// in one write: `writeln!` on a `File` is a system call per piece, seven
/// for this line, paid by every extension start.
pub fn open_log(path: &Path, name: &str, version: &str) -> io::Result<File> {
    let open = || {
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(LOG_MODE)
            .open(path)
    };
    // The folder is made only the first time it is missing.
    let mut f = match open() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                crate::paths::create_private_dir(dir)?;
            }
            open()?
        }
        other => other?,
    };
    let header = format!(
        "\n[zut] starting {name}/{version} (pid {})\n",
        std::process::id()
    );
    f.write_all(header.as_bytes())?;
    Ok(f)
}

/// Appends one `[zut] `-prefixed line to an extension log; best effort.
pub fn log_line(path: &Path, line: &str) {
    log_lines(path, &[line]);
}

/// Appends `[zut] `-prefixed lines to an extension log, in one write;
/// best effort.
pub fn log_lines(path: &Path, lines: &[&str]) {
    if let Ok(f) = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(LOG_MODE)
        .open(path)
    {
        append_lines(&f, lines);
    }
}

/// Appends `[zut] `-prefixed lines to an open log, in one write (appends
/// of other writers interleave whole); best effort.
pub fn append_lines(mut log: &File, lines: &[&str]) {
    let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 7).sum());
    for line in lines {
        text.push_str("[zut] ");
        text.push_str(line);
        text.push('\n');
    }
    let _ = log.write_all(text.as_bytes());
}

/// The Python SDK (`zut_ext`) this build carries; `zut ext new` writes it
/// beside a Python scaffold too.
pub const PYTHON_SDK: &str = include_str!("../../sdk/python/zut_ext/__init__.py");

/// Whether an extension runs under Python: its manifest says
/// `"language": "python"`, or its program is a `python…` launcher.
pub fn is_python(language: &str, program: &Path) -> bool {
    language.eq_ignore_ascii_case("python")
        || program
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("python"))
}

/// The environment a Python extension ([`is_python`]) gets on top of
/// zut's: `PYTHONPATH` ending in `$ZUT_HOME/sdk/python`, where
/// `import zut_ext` finds the SDK of this build (so an installed extension
/// needs no copy of its own). Empty when the SDK cannot be written there
/// (a read-only `$ZUT_HOME`: logged, the extension starts anyway). The
/// same for every Python extension of a load: worked out once per load.
pub fn python_env(zut_home: &Path) -> Vec<(&'static str, OsString)> {
    let dir = zut_home.join("sdk/python");
    if let Err(e) = place_python_sdk(&dir) {
        log::warn!("cannot write the Python SDK under {}: {e}", dir.display());
        return Vec::new();
    }
    let mut paths: Vec<PathBuf> = std::env::var_os("PYTHONPATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    paths.push(dir);
    match std::env::join_paths(paths) {
        Ok(joined) => vec![("PYTHONPATH", joined)],
        Err(_) => Vec::new(),
    }
}

/// Makes `DIR/zut_ext/__init__.py` (and `py.typed`) this build's SDK:
/// left alone when it already is, else written beside and renamed into
/// place, so a concurrent zut or a starting extension never reads half a
/// file.
fn place_python_sdk(dir: &Path) -> io::Result<()> {
    let pkg = dir.join("zut_ext");
    let init = pkg.join("__init__.py");
    if std::fs::read(&init).is_ok_and(|b| b == PYTHON_SDK.as_bytes()) {
        return Ok(());
    }
    crate::paths::create_private_dir(&pkg)?;
    for (name, text) in [("__init__.py", PYTHON_SDK), ("py.typed", "")] {
        let mut tmp = tempfile::NamedTempFile::new_in(&pkg)?;
        tmp.write_all(text.as_bytes())?;
        tmp.persist(pkg.join(name)).map_err(|e| e.error)?;
    }
    Ok(())
}

/// One extension process to start, resolved: what [`launch`] needs.
pub struct Launch<'a> {
    pub program: PathBuf,
    pub args: &'a [String],
    pub dir: &'a Path,
    pub log: PathBuf,
    pub name: &'a str,
    pub version: &'a str,
    /// Added to zut's environment.
    pub env: &'a [(&'static str, OsString)],
}

/// A started extension process and the log it writes its stderr to.
pub struct Launched {
    pub spawned: Spawned,
    /// The log's path ([`Launch::log`]).
    pub log: PathBuf,
    /// A second descriptor on the log for the host's own lines; `None`
    /// when the log could not be opened (stderr then goes nowhere).
    pub log_file: Option<File>,
}

/// Opens the extension's log and starts its process with stderr appended
/// to it. The error says which step failed.
pub fn launch(l: &Launch) -> Result<Launched, String> {
    // A read-only $ZUT_HOME (a container, a locked-down home) must not
    // stop extensions: their stderr then goes nowhere.
    // The host's own lines go through a second descriptor on the same
    // open file (appends interleave whole), not a fresh open each.
    // A $ZUT_HOME that cannot be written is told to the user once (the
    // session that cannot be kept), not once per extension: this goes to
    // zut's own log only.
    let (stderr, log_file) = match open_log(&l.log, l.name, l.version) {
        Ok(file) => {
            let kept = file.try_clone().ok();
            (file, kept)
        }
        Err(e) => {
            log::warn!(
                "cannot open {}: {e}; the extension's stderr is discarded",
                l.log.display()
            );
            let null = OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .map_err(|e| format!("cannot open log: {e}"))?;
            // Its own lines still try the log's path each time.
            (null, None)
        }
    };
    let spawned =
        spawn(&l.program, l.args, l.dir, stderr, l.env).map_err(|e| format!("spawn: {e}"))?;
    Ok(Launched {
        spawned,
        log: l.log.clone(),
        log_file,
    })
}

/// One starting thread per this many starts (below twice as many, one
/// thread does them all): a thread costs about 50 µs, and each start
/// waits 0.1-0.4 ms for its child's `exec`.
const STARTS_PER_SPAWNER: usize = 4;
/// At most this many threads start a load's processes.
const MAX_SPAWNERS: usize = 4;

/// [`launch`]es every start, results in the order given.
///
/// Why more than one thread: a start blocks the thread that makes it until
/// the child has called `exec` (`posix_spawn` is vfork-like), and on a
/// machine busy with the children started just before, that wait for the
/// CPU, not the work, bounds a load. Threads that each take the next start
/// overlap those waits: on 2 cores, 50 tiny extensions are all started
/// about 15 % sooner from two threads than from one. One thread per
/// `STARTS_PER_SPAWNER` starts, the caller's included, at most
/// `MAX_SPAWNERS` and no more than the cores; the helpers are scoped and
/// joined before this returns. If a helper cannot start, the others do its
/// share.
pub fn launch_all(launches: &[Launch]) -> Vec<Result<Launched, String>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let wanted = (launches.len() / STARTS_PER_SPAWNER).clamp(1, MAX_SPAWNERS);
    let spawners = if wanted > 1 {
        wanted.min(std::thread::available_parallelism().map_or(1, |n| n.get()))
    } else {
        1
    };
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(l) = launches.get(i) else {
                return done;
            };
            done.push((i, launch(l)));
        }
    };
    let mut slots: Vec<Option<Result<Launched, String>>> = launches.iter().map(|_| None).collect();
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..spawners)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("zut-spawn".into())
                    .stack_size(64 * 1024)
                    .spawn_scoped(s, work)
                    .ok()
            })
            .collect();
        let mut done = work();
        for h in helpers {
            // A helper that panicked left its starts unmade; they fail
            // below with the others it never reached.
            done.extend(h.join().unwrap_or_default());
        }
        for (i, r) in done {
            slots[i] = Some(r);
        }
    });
    slots
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("spawn: its starting thread failed".into())))
        .collect()
}

/// Starts `program args…` in `dir`, in a new process group, with `env`
/// added to zut's environment.
pub fn spawn(
    program: &Path,
    args: &[String],
    dir: &Path,
    stderr: File,
    env: &[(&str, OsString)],
) -> io::Result<Spawned> {
    let mut command = Command::new(program);
    command
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr));
    let mut guard = ChildGuard::spawn(&mut command)?;
    // On any error below, dropping the guard kills and reaps the child.
    let (Some(stdin), Some(stdout)) = (guard.take_stdin(), guard.take_stdout()) else {
        return Err(io::Error::other("child pipes missing"));
    };
    proc::set_nonblocking(&stdin)?;
    proc::set_nonblocking(&stdout)?;
    Ok(Spawned {
        guard,
        stdin,
        stdout,
    })
}

/// A pipe, both ends close-on-exec and blocking: `(read, write)`. The
/// in-memory test peers speak through it.
#[cfg(test)]
pub(crate) fn pipe() -> io::Result<(File, File)> {
    let (read, write) = proc::cloexec_pipe()?;
    Ok((File::from(read), File::from(write)))
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
    use rustix::process::Signal;
    let names = [
        (Signal::HUP, "SIGHUP"),
        (Signal::INT, "SIGINT"),
        (Signal::QUIT, "SIGQUIT"),
        (Signal::ILL, "SIGILL"),
        (Signal::ABORT, "SIGABRT"),
        (Signal::BUS, "SIGBUS"),
        (Signal::FPE, "SIGFPE"),
        (Signal::KILL, "SIGKILL"),
        (Signal::SEGV, "SIGSEGV"),
        (Signal::PIPE, "SIGPIPE"),
        (Signal::TERM, "SIGTERM"),
    ];
    names
        .iter()
        .find(|(s, _)| s.as_raw() == sig)
        .map_or("signal", |(_, name)| name)
}

/// Lines of a child's stderr shown with a failure.
const STDERR_TAIL_LINES: usize = 5;

/// The last lines a child (extension or MCP server) wrote to stderr, its
/// log, this run, as a block to append to a failure, so a crash explains
/// itself; zut's own log lines are left out. Empty when there is nothing
/// to show.
pub fn stderr_tail(log: &Path) -> String {
    let Ok(text) = read_tail(log, 16 * 1024) else {
        return String::new();
    };
    // Only this run's part of the log: after the last start header.
    let run = text
        .rfind("[zut] starting ")
        .map_or(&text[..], |i| &text[i..]);
    let lines: Vec<&str> = run
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("[zut] "))
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = &lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..];
    let tail: Vec<String> = tail
        .iter()
        .map(|l| format!("    {}", crate::sanitize::sanitize(l)))
        .collect();
    format!("\n  last lines of its stderr:\n{}", tail.join("\n"))
}

fn read_tail(path: &Path, max: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(max)))?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};

    /// Many starts share threads, yet each result is in its place: every
    /// process is the one asked for, and a start that fails fails alone.
    #[test]
    fn launch_all_keeps_the_order_and_fails_each_start_alone() {
        let home = tempfile::tempdir().expect("temp dir");
        let dir = home.path();
        let n = 3 * STARTS_PER_SPAWNER;
        let names: Vec<String> = (0..n).map(|i| format!("ext{i}")).collect();
        let args: Vec<Vec<String>> = names
            .iter()
            .map(|name| vec!["-c".into(), format!("echo {name}; cat >/dev/null")])
            .collect();
        let launches: Vec<Launch> = names
            .iter()
            .zip(&args)
            .enumerate()
            .map(|(i, (name, args))| Launch {
                // One start in the middle cannot find its program.
                program: if i == n / 2 {
                    dir.join("missing")
                } else {
                    PathBuf::from("/bin/sh")
                },
                args,
                dir,
                log: dir.join(format!("{name}.log")),
                name,
                version: "1",
                env: &[],
            })
            .collect();
        let launched = launch_all(&launches);
        assert_eq!(launched.len(), n);
        for (i, r) in launched.into_iter().enumerate() {
            if i == n / 2 {
                let why = r.err().expect("the missing program fails");
                assert!(why.starts_with("spawn: "), "{why}");
                continue;
            }
            let mut l = r.unwrap_or_else(|e| panic!("start {i}: {e}"));
            let flags = rustix::fs::fcntl_getfl(&l.spawned.stdout).expect("flags");
            rustix::fs::fcntl_setfl(&l.spawned.stdout, flags - rustix::fs::OFlags::NONBLOCK)
                .expect("blocking stdout");
            let mut line = String::new();
            BufReader::new(&mut l.spawned.stdout)
                .read_line(&mut line)
                .expect("a line");
            assert_eq!(line.trim(), names[i], "start {i} is its own process");
            assert!(l.log_file.is_some(), "start {i} has its log");
            // Closing stdin ends `cat`; the guard reaps the child.
            drop(l.spawned.stdin);
            assert!(l.spawned.guard.wait().expect("reaped").success());
        }
    }

    /// A log that cannot be opened costs the extension its stderr, not its
    /// start.
    #[test]
    fn a_log_that_cannot_be_opened_costs_the_stderr_not_the_start() {
        let home = tempfile::tempdir().expect("temp dir");
        let dir = home.path();
        // A directory where the log file should be: no open can succeed,
        // whoever runs the test.
        let log = dir.join("ext-x.log");
        std::fs::create_dir(&log).expect("a directory in the way");
        let args = vec!["-c".to_string(), "echo up >&2; echo up".to_string()];
        let launched = launch(&Launch {
            program: PathBuf::from("/bin/sh"),
            args: &args,
            dir,
            log: log.clone(),
            name: "x",
            version: "1",
            env: &[],
        })
        .expect("it starts anyway");
        assert!(launched.log_file.is_none());
        assert!(log.is_dir(), "nothing was written in its place");
        let mut guard = launched.spawned.guard;
        drop(launched.spawned.stdin);
        assert!(guard.wait().expect("reaped").success());
    }
}
