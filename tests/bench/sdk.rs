//! Benchmark: what an extension SDK costs per tool call.
//!
//! For each language, the same extension — tool `echo` answering its args
//! as compact JSON text — written with the SDK and by hand, both started
//! directly (no zut in between) and driven over their pipes: `hello`,
//! `hello_ack`, registrations up to `ready`, then tool-call round trips
//! alternating between the two processes call by call (so both see the same
//! load), then `shutdown`. The figure is the median of the per-pair ratios
//! SDK / by hand; the goal is ≤ 1.2×.
//!
//! - Rust: `tests/bench/sdk/rust` (`zut-bench-sdk-echo`, `zut-bench-raw-echo`,
//!   built in release through cargo at each run, so never stale);
//! - Python: `tests/bench/sdk/py/{sdk_echo,raw_echo}.py` on the resolved
//!   interpreter;
//! - TypeScript: `tests/bench/sdk/ts/{sdk_echo,raw_echo}.js` on `node`.
//!
//! A language whose files or runtime are missing is skipped with a line
//! saying why. Run: `cargo bench --bench sdk` (or `-- rust | python | ts`).

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The SDK may cost at most this much more per call than the hand-written
/// extension.
const GOAL: f64 = 1.2;

/// An extension process driven over its pipes.
struct Ext {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Ext {
    /// Starts `cmd` and completes the handshake up to `ready`.
    fn start(mut cmd: Command) -> Ext {
        let what = format!("{cmd:?}");
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut ext = Ext {
            child,
            stdin,
            stdout,
            line: String::new(),
        };
        assert_eq!(ext.read()["type"], "hello", "{what}: first frame");
        ext.write(&json!({"type":"hello_ack","protocol_version":2,"zut_version":"bench","provider":"none","model":"none","cwd":"/"}).to_string());
        while ext.read()["type"] != "ready" {}
        ext
    }

    fn write(&mut self, line: &str) {
        self.stdin
            .write_all(line.as_bytes())
            .expect("extension reads");
        self.stdin.write_all(b"\n").expect("extension reads");
        self.stdin.flush().expect("flush");
    }

    fn read(&mut self) -> Value {
        self.line.clear();
        let n = self
            .stdout
            .read_line(&mut self.line)
            .expect("extension writes");
        assert!(n > 0, "extension closed its stdout");
        serde_json::from_str(&self.line).expect("a JSON frame")
    }

    /// One tool call, timed from writing the request to reading the answer.
    fn call(&mut self, request: &str) -> Duration {
        let t = Instant::now();
        self.write(request);
        self.line.clear();
        self.stdout
            .read_line(&mut self.line)
            .expect("extension answers");
        let d = t.elapsed();
        debug_assert!(self.line.contains("tool_result"));
        d
    }

    fn shutdown(mut self) {
        self.write(r#"{"type":"shutdown"}"#);
        while self.read()["type"] != "shutdown_ack" {}
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// Times `calls` round trips on each of two extensions after `warmup`
/// untimed ones each, in groups of four: SDK, by hand, by hand, SDK. Returns
/// the per-call samples and, per group, sum(SDK) / sum(by hand).
///
/// Scoring a group rather than a pair cancels the position effect: on one
/// CPU the call that follows the other process's call pays for its wake-up,
/// so pair ratios split into two clusters (near 0.6× and 1.6× for the same
/// program on both sides) and their median jumps between them. In a group
/// each side is first once and second once.
fn race(sdk: Command, raw: Command, warmup: usize, calls: usize) -> (Samples, Samples, Vec<f64>) {
    let mut sdk = Ext::start(sdk);
    let mut raw = Ext::start(raw);
    let request = |i: usize| {
        json!({"type":"tool_call","id":format!("c{i}"),"name":"echo","args":{"text":"hello from the benchmark","n":i}})
            .to_string()
    };
    // Check once that both answer what the benchmark expects.
    for ext in [&mut sdk, &mut raw] {
        ext.write(&request(0));
        let r = ext.read();
        assert_eq!(r["id"], "c0", "{r}");
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        let echoed: Value = serde_json::from_str(text).expect("echo answers JSON text");
        assert_eq!(echoed["n"], 0, "{r}");
    }
    for i in 1..=warmup {
        sdk.call(&request(i));
        raw.call(&request(i));
    }
    let (mut a, mut b) = (Samples::new(), Samples::new());
    let mut groups = Vec::with_capacity(calls / 2);
    for g in 0..calls / 2 {
        let req = request(warmup + 1 + g);
        let s1 = sdk.call(&req);
        let r1 = raw.call(&req);
        let r2 = raw.call(&req);
        let s2 = sdk.call(&req);
        groups.push(ratio(s1 + s2, r1 + r2));
        a.push(s1);
        a.push(s2);
        b.push(r1);
        b.push(r2);
    }
    sdk.shutdown();
    raw.shutdown();
    (a, b, groups)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get((v.len().max(1) - 1) / 2).copied().unwrap_or(f64::NAN)
}

fn compare(report: &mut Report, lang: &str, sdk: Command, raw: Command, calls: usize) {
    let (a, b, groups) = race(sdk, raw, calls / 10, calls);
    report.line(&format!("{lang} SDK echo, per call"), a.summary());
    report.line(&format!("{lang} by hand, per call"), b.summary());
    let r = median(groups);
    report.line(
        &format!("{lang} SDK / by hand (median of groups)"),
        format!("{r:.2}×"),
    );
    report.line(
        &format!("{lang} SDK / by hand (p90 / p90)"),
        format!("{:.2}×", ratio(a.p90(), b.p90())),
    );
    report.goal(
        r <= GOAL,
        &format!("{lang} SDK ≤ {GOAL}× by hand"),
        format!("{r:.2}×"),
    );
}

/// The release binaries of `tests/bench/sdk/rust`, built when missing.
fn rust_bins() -> (PathBuf, PathBuf) {
    let dir = profile_dir();
    let (sdk, raw) = (
        dir.join("zut-bench-sdk-echo"),
        dir.join("zut-bench-raw-echo"),
    );
    // Always through cargo: a quick no-op when current, and never a
    // measurement of an SDK older than the source.
    eprintln!("building zut-bench-sdk-echo (cargo build --release -p zut-bench-sdk-echo)…");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let ok = Command::new(cargo)
        .args(["build", "--release", "-p", "zut-bench-sdk-echo"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok && sdk.is_file() && raw.is_file(),
        "building the Rust bench extensions failed"
    );
    (sdk, raw)
}

fn script_pair(dir: &str, ext: &str) -> Result<(PathBuf, PathBuf), String> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bench/sdk")
        .join(dir);
    let (sdk, raw) = (
        base.join(format!("sdk_echo.{ext}")),
        base.join(format!("raw_echo.{ext}")),
    );
    for f in [&sdk, &raw] {
        if !f.is_file() {
            return Err(format!("{} is missing", f.display()));
        }
    }
    Ok((sdk, raw))
}

fn with_arg(program: &Path, script: &Path) -> Command {
    let mut c = Command::new(program);
    c.arg(script);
    if let Some(dir) = script.parent() {
        c.current_dir(dir);
    }
    c
}

fn main() {
    // One CPU for this driver and both extensions: where the scheduler
    // happens to place each process otherwise changes a call by ~2×.
    let pinned = pin::to_cpu0();
    let mut report = Report::new(
        "sdk",
        "tool-call round trip through each SDK vs the same extension by hand",
        &[
            "both processes started directly, pinned to CPU 0, driven over pipes",
            "calls in groups of four (SDK, by hand, by hand, SDK); figure: median of",
            "per-group sum ratios; goal ≤ 1.2× per language",
        ],
    );
    report.line(
        "pinned to CPU 0",
        if pinned {
            "yes"
        } else {
            "no (affinity refused)"
        },
    );
    if selected("rust") {
        report.section("Rust (zut_ext::Extension vs wire types by hand)");
        let (sdk, raw) = rust_bins();
        compare(
            &mut report,
            "Rust",
            Command::new(sdk),
            Command::new(raw),
            4000,
        );
    }
    if selected("python") {
        report.section("Python (zut_ext.py vs raw_echo.py)");
        match script_pair("py", "py") {
            Ok((sdk, raw)) => {
                let py = python();
                compare(
                    &mut report,
                    "Python",
                    with_arg(&py, &sdk),
                    with_arg(&py, &raw),
                    2000,
                );
            }
            Err(why) => report.line("skipped Python", why),
        }
    }
    if selected("ts") {
        report.section("TypeScript (SDK vs raw_echo.js, on node)");
        let node_ok = Command::new("node")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        match script_pair("ts", "js") {
            Ok(_) if !node_ok => report.line("skipped TypeScript", "node is not on PATH"),
            Ok((sdk, raw)) => {
                let node = PathBuf::from("node");
                compare(
                    &mut report,
                    "TypeScript",
                    with_arg(&node, &sdk),
                    with_arg(&node, &raw),
                    2000,
                );
            }
            Err(why) => report.line("skipped TypeScript", why),
        }
    }
    report.finish();
}
