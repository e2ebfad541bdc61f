//! Helpers shared by the benchmark programs in `tests/bench/`.
//!
//! - [`Samples`]: timings with median / p90, and [`fmt`] / [`ratio`] to print them;
//! - [`Report`]: the header and one PASS/MISS line per goal;
//! - [`Sandbox`]: a temporary ZUT_HOME, project and extension directories,
//!   and hosts started on them through the library API;
//! - the tiny fixture extensions ([`echo_ext`], [`py_ext`], [`holdout_ext`])
//!   and how to start the very same command without the host ([`bare_command`]);
//! - [`pin`]: re-running the whole program on one CPU.
//!
//! Benchmarks print ratios against baselines measured in the same run, so
//! that a slow or busy machine shifts both sides together.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use zut::cancel::CancelToken;
use zut::events::Discard;
use zut::host::deadlines::Deadlines;
use zut::host::discovery::{self, Status};
use zut::host::manifest::{self, Exec};
use zut::host::{Host, HostConfig};

// ----- timing -----

/// A set of timings of one operation.
#[derive(Debug, Clone)]
pub struct Samples(Vec<Duration>);

impl Samples {
    /// Runs `f` `warmup` times untimed, then `n` times timed.
    pub fn time(warmup: usize, n: usize, mut f: impl FnMut()) -> Samples {
        for _ in 0..warmup {
            f();
        }
        Samples::collect(n, || {
            let t = Instant::now();
            f();
            t.elapsed()
        })
    }

    /// `n` samples from `f`, which measures one run itself (so that setup
    /// and teardown can stay outside the timed part).
    pub fn collect(n: usize, mut f: impl FnMut() -> Duration) -> Samples {
        Samples((0..n).map(|_| f()).collect())
    }

    pub fn push(&mut self, d: Duration) {
        self.0.push(d);
    }

    /// Adds every sample of `other` (blocks measured at different times).
    pub fn append(&mut self, other: Samples) {
        self.0.extend(other.0);
    }

    pub fn new() -> Samples {
        Samples(Vec::new())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Every sample in nanoseconds (to hand samples from a child run).
    pub fn to_json(&self) -> serde_json::Value {
        self.0.iter().map(|d| d.as_nanos() as u64).collect()
    }

    /// The inverse of [`Samples::to_json`].
    pub fn from_json(v: &serde_json::Value) -> Samples {
        let nanos = v.as_array().map(Vec::as_slice).unwrap_or_default();
        Samples(
            nanos
                .iter()
                .filter_map(serde_json::Value::as_u64)
                .map(Duration::from_nanos)
                .collect(),
        )
    }

    /// The `q` quantile (0.0..=1.0), nearest rank.
    pub fn quantile(&self, q: f64) -> Duration {
        let mut v = self.0.clone();
        v.sort();
        if v.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    }

    pub fn median(&self) -> Duration {
        self.quantile(0.5)
    }

    pub fn p90(&self) -> Duration {
        self.quantile(0.9)
    }

    /// `median M  p90 P  (n=N)`.
    pub fn summary(&self) -> String {
        format!(
            "median {:>9}  p90 {:>9}  (n={})",
            fmt(self.median()),
            fmt(self.p90()),
            self.len()
        )
    }
}

/// A duration with a unit that keeps three significant digits.
pub fn fmt(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// `a / b`.
pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-12)
}

/// The median of `a[i] / b[i]`: pairs measured back to back share the
/// machine's load of that moment, so their ratio is steadier than the
/// ratio of two medians on a shared machine.
pub fn paired_ratio(a: &Samples, b: &Samples) -> f64 {
    let mut r: Vec<f64> = a.0.iter().zip(&b.0).map(|(x, y)| ratio(*x, *y)).collect();
    r.sort_by(f64::total_cmp);
    r.get((r.len().max(1) - 1) / 2).copied().unwrap_or(f64::NAN)
}

/// CPU time (user + system) used so far by this process, all its threads
/// included and its children excluded.
pub fn cpu_time() -> Duration {
    rusage(libc::RUSAGE_SELF)
}

/// CPU time (user + system) of the children this process has reaped.
pub fn children_cpu_time() -> Duration {
    rusage(libc::RUSAGE_CHILDREN)
}

fn rusage(who: libc::c_int) -> Duration {
    // SAFETY: getrusage fills the zeroed struct we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

// ----- reporting -----

/// Whether section `name` should run: every section when the command line
/// names none (`cargo bench --bench X` passes only `--bench`), else only
/// the sections it names (`cargo bench --bench X -- big`).
pub fn selected(name: &str) -> bool {
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    named.is_empty() || named.iter().any(|a| a == name)
}

/// Prints the header and the goal lines, and counts them.
pub struct Report {
    name: &'static str,
    goals: usize,
    met: usize,
}

impl Report {
    /// Prints `title` and the explanation lines under it.
    pub fn new(name: &'static str, title: &str, explain: &[&str]) -> Report {
        println!("== {name}: {title}");
        for line in explain {
            println!("   {line}");
        }
        println!();
        Report {
            name,
            goals: 0,
            met: 0,
        }
    }

    /// A section heading.
    pub fn section(&self, title: &str) {
        println!("\n-- {title}");
    }

    /// One measured figure.
    pub fn line(&self, label: &str, value: impl std::fmt::Display) {
        println!("   {label:<44} {value}");
    }

    /// One goal: `PASS` or `MISS`, what was asked and what was measured.
    pub fn goal(&mut self, ok: bool, goal: &str, measured: impl std::fmt::Display) {
        self.goals += 1;
        self.met += usize::from(ok);
        let verdict = if ok { "PASS" } else { "MISS" };
        println!("   {verdict}  {goal}: {measured}");
    }

    /// The closing tally.
    pub fn finish(self) {
        println!("\n== {}: {}/{} goals met", self.name, self.met, self.goals);
    }
}

// ----- paths and binaries -----

/// `tests/bench/fixtures`.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bench/fixtures")
}

/// The profile directory this benchmark was built into (`<target>/release`):
/// the bench binary lives in its `deps/`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the benchmark's own path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the benchmark runs from <target>/<profile>/deps")
        .to_path_buf()
}

/// The release build of the tiny Rust extension, built on first use when it
/// is missing (`cargo build --release -p zut-example-echo`).
pub fn echo_binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = profile_dir().join("zut-example-echo");
        if !bin.is_file() {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            eprintln!("building zut-example-echo (cargo build --release -p zut-example-echo)…");
            let ok = Command::new(cargo)
                .args(["build", "--release", "-p", "zut-example-echo"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .is_ok_and(|s| s.success());
            if !ok || !bin.is_file() {
                eprintln!(
                    "error: {} is missing; run `cargo build --release -p zut-example-echo` with the same CARGO_TARGET_DIR first",
                    bin.display()
                );
                std::process::exit(1);
            }
        }
        bin
    })
    .clone()
}

/// Passes the resolved interpreter to benchmark child processes.
pub const PYTHON_ENV: &str = "ZUT_BENCH_PYTHON";

/// The real Python interpreter (`python3` on PATH may be a pyenv shim that
/// costs ~120 ms per start), resolved once per run.
pub fn python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        if let Some(p) = std::env::var_os(PYTHON_ENV) {
            return PathBuf::from(p);
        }
        let out = Command::new("python3")
            .args([
                "-c",
                "import os, sys; print(os.path.realpath(sys.executable))",
            ])
            .output()
            .expect("python3 is needed by the Python fixtures");
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
    .clone()
}

/// PATH for extension launchers: the real Python's directory, then the
/// release directory (where `zut-example-echo` lives), then `$PATH`.
pub fn search_path() -> OsString {
    let python_dir = python().parent().map(Path::to_path_buf).unwrap_or_default();
    let echo_dir = echo_binary()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut dirs = vec![python_dir, echo_dir];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).expect("PATH entries without ':'")
}

// ----- sandboxes and hosts -----

/// A temporary ZUT_HOME, project directory and extension directories.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("zut-bench-")
            .tempdir()
            .expect("a temporary directory");
        for sub in ["home", "proj", "exts"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("sandbox directories");
        }
        Sandbox { dir }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn cwd(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    /// Writes `exts/<name>/extension.json` starting `exec args…`.
    pub fn ext(&self, name: &str, exec: &str, args: &[String]) -> PathBuf {
        let dir = self.dir.path().join("exts").join(name);
        std::fs::create_dir_all(&dir).expect("extension directory");
        let manifest = serde_json::json!({
            "name": name,
            "version": "0.1.0",
            "exec": exec,
            "args": args,
        });
        std::fs::write(dir.join("extension.json"), manifest.to_string()).expect("extension.json");
        dir
    }

    /// Host settings: `deadlines`, launchers looked up on [`search_path`].
    pub fn config(&self, deadlines: Deadlines) -> HostConfig {
        HostConfig {
            zut_home: self.home(),
            cwd: self.cwd(),
            provider: "script".into(),
            model: "bench".into(),
            deadlines,
            interactive: false,
            search_path: Some(search_path()),
            skills: true,
            session: None,
        }
    }

    /// Discovers `dirs` as `--ext` paths and starts a host on them.
    pub fn start(&self, config: HostConfig, dirs: &[PathBuf]) -> Host {
        let entries = self.entries(dirs);
        Host::start(config, Arc::new(Discard), entries, &CancelToken::never())
    }

    /// The discovery entries of `dirs` as `--ext` paths.
    pub fn entries(&self, dirs: &[PathBuf]) -> Vec<discovery::Entry> {
        discovery::discover(&discovery::Options {
            cwd: self.cwd(),
            zut_home: self.home(),
            ext_paths: dirs.to_vec(),
            no_extensions: true,
        })
    }
}

/// Starts a host and checks that every extension loaded.
pub fn start_all(sb: &Sandbox, config: HostConfig, dirs: &[PathBuf]) -> Host {
    let host = sb.start(config, dirs);
    let running = host.extensions().len();
    assert_eq!(
        running,
        dirs.len(),
        "only {running} of {} extensions loaded (logs in {})",
        dirs.len(),
        sb.home().join("logs").display()
    );
    host
}

/// A tiny Rust extension (`zut-example-echo`) named `name`.
pub fn echo_ext(sb: &Sandbox, name: &str, intercept: bool) -> PathBuf {
    let mut args = vec![name.to_string()];
    if intercept {
        args.push("--intercept".into());
    }
    sb.ext(name, "zut-example-echo", &args)
}

/// A tiny Python extension (`fixtures/py-echo.py`) named `name`.
pub fn py_ext(sb: &Sandbox, name: &str) -> PathBuf {
    let script = fixtures().join("py-echo.py").display().to_string();
    sb.ext(name, "python3", &[script, name.to_string()])
}

/// An extension that never acks shutdown and ignores SIGTERM.
pub fn holdout_ext(sb: &Sandbox, name: &str) -> PathBuf {
    let script = fixtures().join("holdout.sh").display().to_string();
    sb.ext(name, "sh", &[script, name.to_string()])
}

/// The command the host would run for the extension in `dir` (same
/// program, arguments and working directory), for bare harnesses.
pub fn bare_command(dir: &Path) -> Command {
    let m = manifest::load(dir).expect("a valid fixture manifest");
    let program = match m.exec.as_ref().expect("an exec") {
        Exec::Relative { path, .. } => path.clone(),
        Exec::Launcher { configured } => {
            manifest::find_on_path(configured, Some(&search_path())).expect("launcher on PATH")
        }
    };
    let mut cmd = Command::new(program);
    cmd.args(&m.args)
        .current_dir(&m.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

/// Whether discovery would load the extension in `dir` (sanity check).
pub fn loadable(sb: &Sandbox, dir: &Path) -> bool {
    sb.entries(&[dir.to_path_buf()])
        .first()
        .is_some_and(|e| matches!(e.status, Status::Load(_)))
}

/// Short deadlines for shutdown benchmarks, everything else at its default.
pub fn deadlines(shutdown_grace_ms: u64, kill_grace_ms: u64) -> Deadlines {
    Deadlines {
        shutdown_grace: Duration::from_millis(shutdown_grace_ms),
        kill_grace: Duration::from_millis(kill_grace_ms),
        ..Deadlines::default()
    }
}

/// The resident set of this process in KiB (`VmRSS`).
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

// ----- pinning -----

/// Running the whole program, children included, on CPU 0.
pub mod pin {
    use std::process::Command;

    /// Set in the environment of the pinned re-run.
    const ENV: &str = "ZUT_BENCH_PINNED";

    /// Whether this process is the pinned re-run.
    pub fn is_pinned() -> bool {
        std::env::var_os(ENV).is_some()
    }

    /// Re-runs this program (same arguments) on CPU 0 and returns how it
    /// was pinned and the JSON value the pinned run printed as its last
    /// stdout line (its measurements); the pinned run's stderr passes through.
    pub fn rerun_pinned() -> (String, serde_json::Value) {
        let exe = std::env::current_exe().expect("own path");
        let args: Vec<String> = std::env::args().skip(1).collect();
        let taskset = Command::new("taskset").arg("-V").output().is_ok();
        let (mut cmd, how) = if taskset {
            let mut c = Command::new("taskset");
            c.args(["-c", "0"]).arg(&exe);
            (c, "taskset -c 0")
        } else {
            (
                Command::new(&exe),
                "sched_setaffinity(CPU 0) (taskset not found)",
            )
        };
        cmd.args(&args)
            .env(ENV, if taskset { "taskset" } else { "self" })
            .env(super::PYTHON_ENV, super::python())
            .stderr(std::process::Stdio::inherit());
        let out = cmd.output().expect("re-running the benchmark pinned");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let value = stdout
            .lines()
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| {
                panic!(
                    "the pinned run ({}) printed no result: {stdout}",
                    out.status
                )
            });
        (how.to_string(), value)
    }

    /// In the pinned re-run: pins the process to CPU 0 if `taskset` did not
    /// already, and checks the affinity. Call first thing in `main`.
    pub fn apply() -> bool {
        if std::env::var(ENV).as_deref() == Ok("self") {
            to_cpu0();
        }
        cpus() == 1
    }

    /// Pins this process, and the children it starts from now on, to CPU 0;
    /// true when it then runs on one CPU. Call while single-threaded.
    pub fn to_cpu0() -> bool {
        // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it;
        // pid 0 is this process.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
        cpus() == 1
    }

    /// How many CPUs this process may run on.
    pub fn cpus() -> usize {
        // SAFETY: sched_getaffinity fills the zeroed set we own.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return 0;
            }
            libc::CPU_COUNT(&set) as usize
        }
    }
}
