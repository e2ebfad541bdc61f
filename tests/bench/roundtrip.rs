//! Benchmark: one extension tool call through the whole host (issue "tools").
//!
//! `host.call_tool("rust_echo", …)` on the tiny Rust extension, against two
//! baselines measured in the same run:
//!
//! (a) a raw pipe echo: this process writes the same `tool_call` line to a
//!     `cat` child and reads it back — two pipe hops, no threads, no JSON;
//! (b) the bare skeleton of the host's architecture, written below: a writer
//!     thread, a reader thread, one crossbeam-channel hop each way and
//!     serde_json encoding/decoding of the same `HostFrame::ToolCall` /
//!     `ExtFrame::ToolResult` types, talking to the same extension binary.
//!
//! Small calls are measured unpinned and pinned to one CPU (the program
//! re-runs itself under `taskset -c 0`), with sequential calls per second.
//! A 16 MiB text result is timed against the skeleton, and a counting global
//! allocator reports how many payload-sized copies the host holds at peak
//! during one call: (peak live bytes − live bytes before) / payload size,
//! the result handed back to the caller included.
//!
//! Run: `cargo bench --bench roundtrip` (or `-- unpinned|pinned|big` for
//! some sections only).

mod common;

use common::*;
use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use zut::cancel::CancelToken;
use zut::host::deadlines::Deadlines;
use zut_ext::wire::{decode_ext_frame, encode_line, ContentBlock, ExtFrame, HostFrame};

// ----- counting allocator -----

/// The system allocator, counting live bytes and their high-water mark.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to `System`; the counters
// only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result and the peak extra live bytes during it.
/// Other threads may still be freeing what an earlier call used (a reader
/// drops its line buffer after handing the frame over), so it first waits
/// for the live count to settle.
fn peak_extra<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let mut before = LIVE.load(Ordering::SeqCst);
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = LIVE.load(Ordering::SeqCst);
        if now == before {
            break;
        }
        before = now;
    }
    PEAK.store(before, Ordering::SeqCst);
    let out = f();
    (out, PEAK.load(Ordering::SeqCst).saturating_sub(before))
}

// ----- the baselines -----

/// (a) A `cat` child: every line written comes straight back.
struct PipeEcho {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl PipeEcho {
    fn start() -> PipeEcho {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("cat");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        PipeEcho {
            child,
            stdin,
            stdout,
            line: Vec::new(),
        }
    }

    fn round_trip(&mut self, frame: &[u8]) {
        self.stdin.write_all(frame).expect("write to cat");
        self.line.clear();
        self.stdout
            .read_until(b'\n', &mut self.line)
            .expect("read from cat");
        assert_eq!(self.line.len(), frame.len());
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// (b) The host's architecture with nothing else: writer thread, reader
/// thread, one channel hop each way, the same wire types.
struct Skeleton {
    child: Child,
    to_writer: Option<Sender<HostFrame>>,
    from_reader: Receiver<ExtFrame>,
    threads: Vec<JoinHandle<()>>,
}

impl Skeleton {
    /// Starts the extension and completes its handshake.
    fn start(mut cmd: Command) -> Skeleton {
        let mut child = cmd.spawn().expect("extension");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (to_writer, writer_rx) = crossbeam_channel::bounded::<HostFrame>(256);
        let (reader_tx, from_reader) = crossbeam_channel::unbounded::<ExtFrame>();
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .expect("skeleton thread")
        };
        let writer = spawn("skel-w", Box::new(move || write_loop(stdin, writer_rx)));
        let reader = spawn("skel-r", Box::new(move || read_loop(stdout, reader_tx)));
        let sk = Skeleton {
            child,
            to_writer: Some(to_writer),
            from_reader,
            threads: vec![writer, reader],
        };
        assert!(matches!(sk.recv(), ExtFrame::Hello { .. }));
        sk.send(HostFrame::HelloAck {
            protocol_version: zut_ext::wire::PROTOCOL_VERSION,
            zut_version: String::new(),
            provider: String::new(),
            model: String::new(),
            cwd: String::new(),
            extension_dir: String::new(),
            data_dir: String::new(),
            session: None,
            features: vec![],
        });
        while sk.recv() != ExtFrame::Ready {}
        sk
    }

    fn send(&self, frame: HostFrame) {
        let tx = self.to_writer.as_ref().expect("running");
        tx.send(frame).expect("writer thread");
    }

    fn recv(&self) -> ExtFrame {
        self.from_reader.recv().expect("reader thread")
    }

    /// One tool call; like `Host::call_tool`, it borrows the arguments.
    fn call(&self, id: u64, name: &str, args: &Value) -> Vec<ContentBlock> {
        self.send(HostFrame::ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            args: args.clone(),
        });
        match self.recv() {
            ExtFrame::ToolResult { content, .. } => content,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn stop(mut self) {
        self.send(HostFrame::Shutdown);
        while self.recv() != ExtFrame::ShutdownAck {}
        drop(self.to_writer.take()); // the writer ends and closes stdin
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let _ = self.child.wait();
    }
}

fn write_loop(stdin: ChildStdin, frames: Receiver<HostFrame>) {
    let mut out = std::io::BufWriter::new(stdin);
    for frame in frames {
        if out
            .write_all(&encode_line(&frame))
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
}

fn read_loop(stdout: ChildStdout, frames: Sender<ExtFrame>) {
    let mut input = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if let Ok(frame) = decode_ext_frame(text) {
            if frames.send(frame).is_err() {
                return;
            }
        }
        // Like the host, do not keep a big frame's buffer while idle.
        if line.capacity() > 64 * 1024 {
            line = Vec::new();
        }
    }
}

// ----- measurements -----

/// Blocks of timed calls.
const BLOCKS: usize = 10;
const CALLS_PER_BLOCK: usize = 2_000;

/// The figures of one way of making a call, over every block.
struct Side {
    /// Per-call latency.
    latency: Samples,
    /// Sequential calls per second, one figure per block.
    rate: Vec<f64>,
    /// CPU time of this process per call (all its threads, not the
    /// extension; spinning while waiting counts), one figure per block.
    cpu: Samples,
    /// Context switches per call of the main thread and of the threads
    /// whose name starts with the prefix given to [`Side::block`].
    switches: f64,
}

impl Side {
    fn new() -> Side {
        Side {
            latency: Samples::new(),
            rate: Vec::new(),
            cpu: Samples::new(),
            switches: 0.0,
        }
    }

    /// Times one block of `CALLS_PER_BLOCK` calls; `threads` names the
    /// transport threads whose context switches count.
    fn block(&mut self, threads: &str, mut call: impl FnMut()) {
        let n = CALLS_PER_BLOCK as u32;
        let switched = switches(threads);
        let (start, cpu) = (Instant::now(), cpu_time());
        for _ in 0..n {
            let t = Instant::now();
            call();
            self.latency.push(t.elapsed());
        }
        self.rate.push(f64::from(n) / start.elapsed().as_secs_f64());
        self.cpu.push((cpu_time() - cpu) / n);
        self.switches += (switches(threads) - switched) as f64 / (BLOCKS * CALLS_PER_BLOCK) as f64;
    }

    fn to_json(&self) -> Value {
        json!({
            "latency": self.latency.to_json(),
            "rate": self.rate,
            "cpu": self.cpu.to_json(),
            "switches": self.switches,
        })
    }

    fn from_json(v: &Value) -> Side {
        Side {
            latency: Samples::from_json(&v["latency"]),
            rate: v["rate"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default(),
            cpu: Samples::from_json(&v["cpu"]),
            switches: v["switches"].as_f64().unwrap_or(f64::NAN),
        }
    }
}

/// Context switches (voluntary + involuntary) so far of this process's main
/// thread and of its threads whose name starts with `prefix`.
fn switches(prefix: &str) -> u64 {
    let main = std::process::id().to_string();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    let mut total = 0;
    for task in tasks.flatten() {
        let dir = task.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if task.file_name().to_string_lossy() != main && !comm.starts_with(prefix) {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
        total += status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split(':').nth(1)?.trim().parse::<u64>().ok())
            .sum::<u64>();
    }
    total
}

/// Small-call figures of one run (pinned or not).
struct Small {
    host: Side,
    skeleton: Side,
    pipe: Side,
}

/// Interleaves blocks of host, skeleton and pipe calls, rotating which
/// goes first, so all three see the same machine.
fn small_calls() -> Small {
    let sb = Sandbox::new();
    let dir = echo_ext(&sb, "rust-echo", false);
    let host = start_all(
        &sb,
        sb.config(Deadlines::default()),
        std::slice::from_ref(&dir),
    );
    let skeleton = Skeleton::start(bare_command(&dir));
    let mut pipe = PipeEcho::start();
    let never = CancelToken::never();
    let args = json!({"text": "hello"});
    let line = encode_line(&HostFrame::ToolCall {
        id: "1".into(),
        name: "rust_echo".into(),
        args: args.clone(),
    });
    let mut id = 0u64;
    let mut host_call = || {
        let reply = host.call_tool("rust_echo", &args, &never);
        assert!(reply.is_some_and(|r| !r.is_error));
    };
    let mut skeleton_call = || {
        id += 1;
        skeleton.call(id, "rust_echo", &args);
    };
    // Warm-up: caches, branch predictors, the allocator's free lists.
    for _ in 0..500 {
        host_call();
        skeleton_call();
        pipe.round_trip(&line);
    }
    let mut s = Small {
        host: Side::new(),
        skeleton: Side::new(),
        pipe: Side::new(),
    };
    for block in 0..BLOCKS {
        for turn in 0..3 {
            match (block + turn) % 3 {
                0 => s.host.block("zut-", &mut host_call),
                1 => s.skeleton.block("skel-", &mut skeleton_call),
                _ => s.pipe.block("cat", || pipe.round_trip(&line)),
            }
        }
    }
    skeleton.stop();
    pipe.stop();
    host.shutdown();
    s
}

fn median_f64(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get((v.len().max(1) - 1) / 2).copied().unwrap_or(f64::NAN)
}

impl Small {
    fn to_json(&self) -> Value {
        json!({
            "host": self.host.to_json(),
            "skeleton": self.skeleton.to_json(),
            "pipe": self.pipe.to_json(),
        })
    }

    fn from_json(v: &Value) -> Small {
        Small {
            host: Side::from_json(&v["host"]),
            skeleton: Side::from_json(&v["skeleton"]),
            pipe: Side::from_json(&v["pipe"]),
        }
    }

    fn report(&self, r: &mut Report, label: &str, rate_goal: bool) {
        let (host, skeleton, pipe) = (&self.host, &self.skeleton, &self.pipe);
        r.section(&format!(
            "small tool call ({label}), {} calls each",
            host.latency.len()
        ));
        r.line("(a) raw pipe echo through cat", pipe.latency.summary());
        r.line("(b) bare skeleton", skeleton.latency.summary());
        r.line("host.call_tool", host.latency.summary());
        let vs_skeleton = ratio(host.latency.median(), skeleton.latency.median());
        let vs_pipe = ratio(host.latency.median(), pipe.latency.median());
        r.line(
            "ratios (medians)",
            format!(
                "host/skeleton {vs_skeleton:.2}×   host/pipe {vs_pipe:.2}×   skeleton/pipe {:.2}×",
                ratio(skeleton.latency.median(), pipe.latency.median())
            ),
        );
        r.line(
            "p90 ratio host/skeleton",
            format!("{:.2}×", ratio(host.latency.p90(), skeleton.latency.p90())),
        );
        r.line(
            "CPU in this process per call (median block)",
            format!(
                "host {}   skeleton {}   ({:.2}×)",
                fmt(host.cpu.median()),
                fmt(skeleton.cpu.median()),
                ratio(host.cpu.median(), skeleton.cpu.median())
            ),
        );
        r.line(
            "context switches per call (caller + 2 threads)",
            format!(
                "host {:.2}   skeleton {:.2}",
                host.switches, skeleton.switches
            ),
        );
        let (host_rate, skeleton_rate) = (median_f64(&host.rate), median_f64(&skeleton.rate));
        r.line(
            "sequential calls per second (median block)",
            format!("host {host_rate:.0}/s   skeleton {skeleton_rate:.0}/s"),
        );
        // Pinned, the cost is CPU work alone: the host may add little.
        let limit = if rate_goal { 1.1 } else { 1.5 };
        r.goal(
            vs_skeleton <= limit,
            &format!("{label}: host ≤ {limit}× skeleton at the median"),
            format!("{vs_skeleton:.2}×"),
        );
        if rate_goal {
            r.goal(
                host_rate >= 50_000.0,
                &format!("{label}: ≥ 50,000 sequential calls/s"),
                format!("{host_rate:.0}/s"),
            );
        }
    }
}

/// The 16 MiB result: time against the skeleton, and the host's copies.
fn big_result(r: &mut Report) {
    const PAYLOAD: usize = 16 << 20;
    const UNIT: &str = "0123456789abcdef";
    r.section("16 MiB text result (unpinned)");
    let sb = Sandbox::new();
    let dir = echo_ext(&sb, "rust-echo", false);
    let host = start_all(
        &sb,
        sb.config(Deadlines::default()),
        std::slice::from_ref(&dir),
    );
    let skeleton = Skeleton::start(bare_command(&dir));
    let never = CancelToken::never();
    let args = json!({"text": UNIT, "repeat": PAYLOAD / UNIT.len()});
    let check = |content: &[ContentBlock]| match content {
        [ContentBlock::Text { text }] => assert_eq!(text.len(), PAYLOAD),
        other => panic!("unexpected content of {} blocks", other.len()),
    };
    let (mut host_t, mut skel_t) = (Samples::new(), Samples::new());
    let (mut host_copies, mut skel_copies) = (Vec::new(), Vec::new());
    // Sixteen timed pairs after one warm-up, the order flipping each run:
    // whichever goes second inherits the first one's freed pages and
    // cache state, which skewed six host-first pairs by up to ±30%.
    for run in 0..=16 {
        let host_call = || {
            let ((reply, elapsed), extra) = peak_extra(|| {
                let t = Instant::now();
                (host.call_tool("rust_echo", &args, &never), t.elapsed())
            });
            check(&reply.expect("tool").content);
            (elapsed, extra)
        };
        let skeleton_call = || {
            let ((content, elapsed), extra) = peak_extra(|| {
                let t = Instant::now();
                (skeleton.call(run, "rust_echo", &args), t.elapsed())
            });
            check(&content);
            drop(content);
            (elapsed, extra)
        };
        let ((elapsed, extra), (skel_elapsed, skel_extra)) = if run % 2 == 0 {
            let h = host_call();
            (h, skeleton_call())
        } else {
            let s = skeleton_call();
            (host_call(), s)
        };
        if run > 0 {
            host_t.push(elapsed);
            skel_t.push(skel_elapsed);
            host_copies.push(extra as f64 / PAYLOAD as f64);
            skel_copies.push(skel_extra as f64 / PAYLOAD as f64);
        }
    }
    skeleton.stop();
    host.shutdown();
    let vs = paired_ratio(&host_t, &skel_t);
    r.line("(b) bare skeleton", skel_t.summary());
    r.line("host.call_tool", host_t.summary());
    r.line("ratio host/skeleton (median of pairs)", format!("{vs:.2}×"));
    r.goal(
        vs <= 1.2,
        "16 MiB result: host ≤ 1.2× skeleton",
        format!("{vs:.2}×"),
    );
    let copies = median_f64(&host_copies);
    r.line(
        "payload copies at peak (result included)",
        format!(
            "host {copies:.3}   skeleton {:.3}   (max host {:.3})",
            median_f64(&skel_copies),
            host_copies.iter().copied().fold(0.0, f64::max)
        ),
    );
    r.goal(
        copies <= 3.0,
        "host holds ≤ 3 payload copies at peak",
        format!("{copies:.3}"),
    );
}

fn main() {
    if pin::is_pinned() {
        // The pinned re-run: measure and hand the samples back as JSON.
        if !pin::apply() {
            eprintln!("warning: the pinned run may use {} CPUs", pin::cpus());
        }
        println!("{}", small_calls().to_json());
        return;
    }
    let mut r = Report::new(
        "roundtrip",
        "one tool call through the whole host",
        &[
            "host.call_tool(\"rust_echo\", {\"text\":\"hello\"}) on the tiny Rust extension, vs",
            "(a) a raw pipe echo: the same tool_call line written to a `cat` child and read back, and",
            "(b) the bare skeleton: writer + reader threads, a crossbeam hop each way, serde_json",
            "    encode/decode of the same HostFrame/ExtFrame types, the same extension binary.",
            "Per-call latency medians and p90 over interleaved blocks; unpinned, then the whole",
            "program again on one CPU. Then a 16 MiB result, timed and its peak copies counted",
            "by a counting global allocator in this process (the extension's own memory excluded).",
        ],
    );
    r.line("CPUs available", pin::cpus());
    if selected("unpinned") {
        small_calls().report(&mut r, "unpinned", false);
    }
    if selected("pinned") {
        let (how, pinned) = pin::rerun_pinned();
        Small::from_json(&pinned).report(&mut r, &format!("pinned, {how}"), true);
    }
    if selected("big") {
        big_result(&mut r);
    }
    r.finish();
}
