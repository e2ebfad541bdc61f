//! Benchmark: extension host start-up, shutdown and idle memory (issue
//! "host core").
//!
//! (a) `Host::start` of 50 tiny extensions (spawn, hello, hello_ack,
//!     registrations, ready), once with the Rust `zut-example-echo` and
//!     once with the Python `fixtures/py-echo.py`, against a bare harness
//!     that spawns the same 50 commands and reads one hello line from each.
//!     The sequential sum (spawn + hello one child after another) is shown
//!     for contrast: it is what a host that does not overlap handshakes pays.
//!     So is the bare harness spawning from two threads, as the host does
//!     for a load this size (a spawn waits for its child's `exec`, and two
//!     threads overlap those waits). So is the whole handshake done by hand
//!     without a host (hello,
//!     `hello_ack`, registrations up to `ready`), once on one thread and
//!     once with a thread per extension: between them and the bare harness
//!     they split the host's overhead into what the protocol's round trip
//!     costs, what a thread per extension costs, and what the host adds.
//! (b) `Host::shutdown` of 50 extensions that acknowledge, and of 50 that
//!     never acknowledge and ignore SIGTERM (one shared deadline, then
//!     SIGTERM, then SIGKILL).
//! (c) Resident memory per idle extension, measured in child processes
//!     that run only a host: (RSS with 50 idle extensions − RSS with none) / 50.
//!
//! Run: `cargo bench --bench startup` (or `-- rust|python|shutdown|memory`
//! for some sections only).

mod common;

use common::*;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zut::cancel::CancelToken;
use zut::events::Discard;
use zut::host::deadlines::Deadlines;
use zut::host::Host;

/// Extensions per host.
const N: usize = 50;
/// Environment of the memory-measuring child: how many extensions to start.
const RSS_CHILD_ENV: &str = "ZUT_BENCH_RSS_EXTS";

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Rust,
    Python,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Rust => "tiny Rust extension",
            Kind::Python => "tiny Python extension",
        }
    }

    /// `N` extension directories of this kind in `sb`.
    fn dirs(self, sb: &Sandbox) -> Vec<PathBuf> {
        (0..N)
            .map(|i| match self {
                Kind::Rust => echo_ext(sb, &format!("echo-{i:02}"), false),
                Kind::Python => py_ext(sb, &format!("py-{i:02}")),
            })
            .collect()
    }
}

fn main() {
    if let Ok(n) = std::env::var(RSS_CHILD_ENV) {
        return rss_child(n.parse().expect("extension count"));
    }
    let mut r = Report::new(
        "startup",
        "extension host start-up, shutdown and idle memory",
        &[
            "(a) Host::start of 50 tiny extensions (spawn + hello + hello_ack + registrations + ready)",
            "    vs a bare harness spawning the same 50 commands at once and reading one hello line each;",
            "    the sequential sum (spawn + hello one after another) is printed for contrast,",
            "    and so is the whole handshake done by hand (one thread; a thread per extension).",
            "(b) Host::shutdown of 50 extensions that ack, and of 50 that never ack and ignore SIGTERM.",
            "(c) host RSS per idle extension, in child processes running only a host.",
            "Timings are wall clock; medians and p90 over the runs shown as n.",
        ],
    );
    r.line("tiny Rust extension", echo_binary().display());
    r.line(
        "Python interpreter (pyenv shim bypassed)",
        python().display(),
    );

    // The acking-shutdown figures come from the hosts of the Rust start-up.
    if selected("rust") || selected("shutdown") {
        let ack_shutdowns = startup(&mut r, Kind::Rust, 20);
        if selected("shutdown") {
            shutdown(&mut r, ack_shutdowns);
        }
    }
    if selected("python") {
        startup(&mut r, Kind::Python, 4);
    }
    if selected("memory") {
        memory(&mut r);
    }
    r.finish();
}

// ----- (a) start-up -----

/// Measures start-up of `kind`; returns the shutdown timings of the hosts
/// it started (they all acknowledge).
fn startup(r: &mut Report, kind: Kind, runs: usize) -> Samples {
    r.section(&format!("(a) start of {N} × {}", kind.label()));
    let sb = Sandbox::new();
    let dirs = kind.dirs(&sb);
    let config = sb.config(Deadlines::default());
    let (mut host_t, mut bare_t, mut stop_t) = (Samples::new(), Samples::new(), Samples::new());
    let (mut host_cpu, mut bare_cpu) = (Samples::new(), Samples::new());
    let mut host_whole_cpu = Samples::new();
    let (mut host_kids, mut bare_kids) = (Samples::new(), Samples::new());
    let (mut hand_t, mut hand_cpu) = (Samples::new(), Samples::new());
    let (mut threads_t, mut threads_cpu) = (Samples::new(), Samples::new());
    let mut bare2_t = Samples::new();
    // Run 0 is an untimed warm-up (page cache, allocator); then bare and
    // host alternate which goes first, so neither always meets a machine
    // still busy with the other's exiting children.
    for run in 0..=runs {
        let one = |host_first: bool| {
            if host_first {
                let h = host_start(&sb, &config, &dirs);
                (bare_concurrent(&dirs, 1), h)
            } else {
                let b = bare_concurrent(&dirs, 1);
                (b, host_start(&sb, &config, &dirs))
            }
        };
        let (bare, host) = one(run % 2 == 1);
        let bare2 = bare_concurrent(&dirs, 2);
        let hand = by_hand(&dirs, &sb, false);
        let threads = by_hand(&dirs, &sb, true);
        if run > 0 {
            hand_t.push(hand.wall);
            hand_cpu.push(hand.cpu);
            threads_t.push(threads.wall);
            threads_cpu.push(threads.cpu);
            bare_t.push(bare.wall);
            bare2_t.push(bare2.wall);
            bare_cpu.push(bare.cpu);
            bare_kids.push(bare.children);
            host_t.push(host.wall);
            host_cpu.push(host.cpu);
            host_whole_cpu.push(host.whole_cpu);
            host_kids.push(host.children);
            stop_t.push(host.stopped);
        }
    }
    let sequential = Samples::collect(2, || sequential_sum(&dirs));
    r.line("bare harness (concurrent spawn + hello)", bare_t.summary());
    r.line("bare harness spawning from two threads", bare2_t.summary());
    r.line("Host::start", host_t.summary());
    r.line("sequential sum (for contrast)", sequential.summary());
    r.line("handshake by hand, one thread", hand_t.summary());
    r.line("handshake by hand, a thread each", threads_t.summary());
    let paired = paired_ratio(&host_t, &bare_t);
    r.line(
        "ratios",
        format!(
            "host/bare {paired:.2}× (median of per-run pairs; {:.2}× of medians)   sequential/bare {:.2}×",
            ratio(host_t.median(), bare_t.median()),
            ratio(sequential.median(), bare_t.median())
        ),
    );
    r.line(
        "contrasts / bare (median of per-run pairs)",
        format!(
            "by hand: one thread {:.2}×, a thread each {:.2}×   bare from two threads {:.2}× (host/it {:.2}×)",
            paired_ratio(&hand_t, &bare_t),
            paired_ratio(&threads_t, &bare_t),
            paired_ratio(&bare2_t, &bare_t),
            paired_ratio(&host_t, &bare2_t)
        ),
    );
    let each = |s: &Samples| fmt(s.median() / N as u32);
    let per_ext =
        |host: &Samples, bare: &Samples| format!("host {}   bare {}", each(host), each(bare));
    r.line(
        "CPU in this process per extension (median)",
        format!(
            "{}   by hand {} (a thread each {})",
            per_ext(&host_cpu, &bare_cpu),
            each(&hand_cpu),
            each(&threads_cpu)
        ),
    );
    r.line(
        "host CPU per extension, start through shutdown",
        each(&host_whole_cpu),
    );
    // The extensions' side: what the handshake costs them is CPU the
    // machine's cores cannot spend on starting the others.
    r.line(
        "children's CPU per extension, to exit (median)",
        per_ext(&host_kids, &bare_kids),
    );
    r.goal(
        paired <= 1.2,
        &format!("{} start ≤ 1.2× bare harness", kind.label()),
        format!("{paired:.2}×"),
    );
    if kind == Kind::Python {
        r.line("Host::shutdown (50 Python, all ack)", stop_t.summary());
    }
    stop_t
}

/// What one start of the 50 cost.
struct Run {
    /// Wall time until every extension is ready (host) or has said hello (bare).
    wall: Duration,
    /// CPU time of this process over `wall`.
    cpu: Duration,
    /// CPU time of the 50 children, from spawn to exit.
    children: Duration,
    /// Wall time of the host's shutdown (zero for the bare harness).
    stopped: Duration,
    /// CPU time of this process from the start through the shutdown
    /// (zero for the bare harness): what the host pays for an extension's
    /// whole short life, reader threads started after `ready` included.
    whole_cpu: Duration,
}

/// One `Host::start` on `dirs`: its wall and CPU time, then the wall time
/// of its shutdown. Discovery (reading the manifests) is left out.
fn host_start(sb: &Sandbox, config: &zut::host::HostConfig, dirs: &[PathBuf]) -> Run {
    let entries = sb.entries(dirs);
    let children = children_cpu_time();
    let (t, cpu) = (Instant::now(), cpu_time());
    let host = Host::start(
        config.clone(),
        Arc::new(Discard),
        entries,
        &CancelToken::never(),
    );
    let (started, started_cpu) = (t.elapsed(), cpu_time() - cpu);
    assert_eq!(host.extensions().len(), N, "not every extension loaded");
    let t = Instant::now();
    host.shutdown();
    Run {
        wall: started,
        cpu: started_cpu,
        stopped: t.elapsed(),
        children: children_cpu_time() - children,
        whole_cpu: cpu_time() - cpu,
    }
}

/// Spawns every command, then reads one line from each: the floor any host
/// pays to start `dirs` concurrently. With `spawners` > 1, that many
/// threads share the spawns (each takes the next command).
fn bare_concurrent(dirs: &[PathBuf], spawners: usize) -> Run {
    let commands: Vec<std::sync::Mutex<Command>> = dirs
        .iter()
        .map(|d| std::sync::Mutex::new(bare_command(d)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let spawn_next = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(cmd) = commands.get(i) else {
                return mine;
            };
            mine.push(cmd.lock().unwrap().spawn().expect("spawn"));
        }
    };
    let children = children_cpu_time();
    let (t, cpu) = (Instant::now(), cpu_time());
    let mut running: Vec<Child> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..spawners).map(|_| s.spawn(spawn_next)).collect();
        let mut all = spawn_next();
        for h in helpers {
            all.extend(h.join().expect("a spawning thread"));
        }
        all
    });
    for child in &mut running {
        read_hello(child);
    }
    let (wall, cpu) = (t.elapsed(), cpu_time() - cpu);
    reap(running);
    Run {
        wall,
        cpu,
        children: children_cpu_time() - children,
        stopped: Duration::ZERO,
        whole_cpu: Duration::ZERO,
    }
}

/// Spawns every command and does the whole handshake by hand: read
/// `hello`, answer `hello_ack`, read lines up to `ready`. With `threads`,
/// a thread per extension does it as soon as that extension is spawned
/// (the shape of a host's reader per extension, with nothing else); else
/// this thread does it for one extension after another once all are
/// spawned. Only the wall time and this process's CPU are kept.
fn by_hand(dirs: &[PathBuf], sb: &Sandbox, threads: bool) -> Run {
    let mut commands: Vec<Command> = dirs.iter().map(|d| bare_command(d)).collect();
    let acks: Vec<Vec<u8>> = dirs.iter().map(|d| hello_ack(sb, d)).collect();
    let (t, cpu) = (Instant::now(), cpu_time());
    let mut running = Vec::with_capacity(dirs.len());
    // One thread: each extension's pipes and `hello_ack`, handshaken once
    // all are spawned. A thread each: the threads doing it.
    let (mut pending, mut helpers) = (Vec::new(), Vec::new());
    for (cmd, ack) in commands.iter_mut().zip(acks) {
        let mut child = cmd.spawn().expect("spawn");
        let mut stdin = child.stdin.take().expect("piped stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        running.push(child);
        if threads {
            let h = std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    read_line_of(&mut stdout, "hello");
                    stdin.write_all(&ack).expect("hello_ack");
                    read_line_of(&mut stdout, "ready");
                    (stdin, stdout)
                })
                .expect("a thread");
            helpers.push(h);
        } else {
            pending.push((stdin, stdout, ack));
        }
    }
    for (stdin, stdout, ack) in &mut pending {
        read_line_of(stdout, "hello");
        stdin.write_all(ack).expect("hello_ack");
    }
    // The pipes stay open until the clock stops.
    let mut kept = Vec::with_capacity(dirs.len());
    for (stdin, mut stdout, _) in pending {
        read_line_of(&mut stdout, "ready");
        kept.push((stdin, stdout));
    }
    for h in helpers {
        kept.push(h.join().expect("handshake thread"));
    }
    let (wall, cpu) = (t.elapsed(), cpu_time() - cpu);
    drop(kept);
    reap(running);
    Run {
        wall,
        cpu,
        children: Duration::ZERO,
        stopped: Duration::ZERO,
        whole_cpu: Duration::ZERO,
    }
}

/// Reads lines until a frame of type `ty`.
fn read_line_of(stdout: &mut impl BufRead, ty: &str) {
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdout.read_line(&mut line).expect("a line");
        assert!(n > 0, "the extension ended before {ty}");
        let frame: serde_json::Value = serde_json::from_str(&line).expect("a JSON frame");
        if frame["type"] == ty {
            return;
        }
    }
}

/// The `hello_ack` a host would send the extension in `dir`.
fn hello_ack(sb: &Sandbox, dir: &Path) -> Vec<u8> {
    let dir = dir.display().to_string();
    zut_ext::wire::encode_line(&zut_ext::wire::HostFrame::HelloAck {
        protocol_version: zut_ext::wire::PROTOCOL_VERSION,
        zut_version: env!("CARGO_PKG_VERSION").into(),
        provider: "script".into(),
        model: "script".into(),
        cwd: sb.cwd().display().to_string(),
        extension_dir: dir.clone(),
        data_dir: dir,
        session: None,
        features: Vec::new(),
    })
}

/// Spawn + hello of each command in turn; the sum of the waits.
fn sequential_sum(dirs: &[PathBuf]) -> Duration {
    let mut children = Vec::with_capacity(dirs.len());
    let mut total = Duration::ZERO;
    for dir in dirs {
        let mut cmd = bare_command(dir);
        let t = Instant::now();
        let mut child = cmd.spawn().expect("spawn");
        read_hello(&mut child);
        total += t.elapsed();
        children.push(child);
    }
    reap(children);
    total
}

fn read_hello(child: &mut Child) {
    let stdout = child.stdout.as_mut().expect("piped stdout");
    read_line_of(&mut BufReader::new(stdout), "hello");
}

/// Closes every stdin (the fixtures exit on EOF) and waits for all.
fn reap(children: Vec<Child>) {
    let children: Vec<Child> = children
        .into_iter()
        .map(|mut c| {
            drop(c.stdin.take());
            c
        })
        .collect();
    for mut c in children {
        let _ = c.wait();
    }
}

// ----- (b) shutdown -----

fn shutdown(r: &mut Report, ack: Samples) {
    r.section(&format!("(b) shutdown of {N} extensions"));
    r.line("Host::shutdown, 50 Rust that ack", ack.summary());
    r.goal(
        ack.median() <= Duration::from_millis(100),
        "shutdown of 50 acking extensions ≤ 100 ms",
        fmt(ack.median()),
    );

    let (grace, kill) = (300, 200);
    let sb = Sandbox::new();
    let dirs: Vec<PathBuf> = (0..N)
        .map(|i| holdout_ext(&sb, &format!("holdout-{i:02}")))
        .collect();
    let mut killed = 0;
    let holdouts = Samples::collect(3, || {
        let host = start_all(&sb, sb.config(deadlines(grace, kill)), &dirs);
        let t = Instant::now();
        host.shutdown();
        let elapsed = t.elapsed();
        killed = host
            .all_extensions()
            .iter()
            .filter(|e| {
                use std::os::unix::process::ExitStatusExt;
                e.exit.and_then(|s| s.signal()) == Some(libc::SIGKILL)
            })
            .count();
        elapsed
    });
    let bound = Duration::from_millis(grace + kill + 200);
    r.line(
        "deadlines (shortened for this run)",
        format!("ZUT_SHUTDOWN_GRACE_MS={grace}  ZUT_KILL_GRACE_MS={kill}"),
    );
    r.line("Host::shutdown, 50 holdouts", holdouts.summary());
    r.line(
        "holdouts ended by SIGKILL (last run)",
        format!("{killed}/{N}"),
    );
    r.goal(
        holdouts.median() <= bound && killed == N,
        &format!(
            "shutdown of 50 holdouts ≤ grace + kill grace + 200 ms = {}",
            fmt(bound)
        ),
        format!("{} (p90 {})", fmt(holdouts.median()), fmt(holdouts.p90())),
    );
}

// ----- (c) memory -----

fn memory(r: &mut Report) {
    r.section(&format!(
        "(c) host memory per idle extension ({N} × tiny Rust)"
    ));
    let (mut none, mut full) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        none.push(run_rss_child(0, &[]));
        full.push(run_rss_child(N, &[]));
    }
    let (base, with) = (median(&none), median(&full));
    let per = (with as f64 - base as f64) / N as f64;
    r.line(
        "child RSS with a host and no extension",
        format!("{base} KiB (median of 5)"),
    );
    r.line(
        &format!("child RSS with {N} idle extensions"),
        format!("{with} KiB (median of 5)"),
    );
    r.line("per extension", format!("{per:.1} KiB"));
    r.goal(
        per <= 150.0,
        "RSS per idle extension ≤ 150 KiB",
        format!("{per:.1} KiB"),
    );
    // The same with glibc's per-thread malloc arenas capped, to show how
    // much of the figure is arenas rather than the host's own data.
    let arena = median(
        &(0..3)
            .map(|_| run_rss_child(N, &[("MALLOC_ARENA_MAX", "1")]))
            .collect::<Vec<_>>(),
    );
    let arena_base = median(
        &(0..3)
            .map(|_| run_rss_child(0, &[("MALLOC_ARENA_MAX", "1")]))
            .collect::<Vec<_>>(),
    );
    r.line(
        "per extension with MALLOC_ARENA_MAX=1 (diagnostic)",
        format!("{:.1} KiB", (arena as f64 - arena_base as f64) / N as f64),
    );
}

fn median(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort();
    v[(v.len() - 1) / 2]
}

/// Runs this program as a memory child with `n` extensions; its RSS in KiB.
fn run_rss_child(n: usize, env: &[(&str, &str)]) -> u64 {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .env(RSS_CHILD_ENV, n.to_string())
        .env(PYTHON_ENV, python())
        .envs(env.iter().copied())
        .output()
        .expect("memory child");
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().unwrap_or_else(|_| {
        panic!(
            "memory child printed {text:?}, stderr {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The memory child: a host with `n` idle extensions; prints VmRSS in KiB.
fn rss_child(n: usize) {
    let sb = Sandbox::new();
    let dirs: Vec<PathBuf> = (0..n)
        .map(|i| echo_ext(&sb, &format!("echo-{i:02}"), false))
        .collect();
    let host = start_all(&sb, sb.config(Deadlines::default()), &dirs);
    // Idle: let every thread reach its blocking wait.
    std::thread::sleep(Duration::from_millis(200));
    println!("{}", rss_kib());
    host.shutdown();
}
