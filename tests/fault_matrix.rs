//! The fault matrix: one chaos extension (`tests/fixtures/ext/chaos.py`)
//! misbehaves in one way (a fault) at one point of the protocol (a phase),
//! and the real `zut` binary in `--mode json` must live with it.
//!
//! Every applicable cell (the table in [`applicable`]) asserts:
//! - zut exits by itself, with status 0 or 1 (never a signal, never a
//!   hang) within [`CELL_DEADLINE`];
//! - when the fault breaks the extension, the event stream names it
//!   (`ext_error`, `ext_warning`, a failed tool result, an `error`, a
//!   command result); when the fault is harmless junk zut must tolerate
//!   (unknown fields nested 5000 deep, odd Unicode, huge numbers), the
//!   extension is not reported broken;
//! - no process of the fixture survives (its pidfile lists every one,
//!   grandchildren included) and none is left a zombie;
//! - every line of every session file, if any, parses as JSON.
//!
//! Cells run [`CELLS_AT_ONCE`] at a time; the matrix (phase × fault, ✓ / ✗ / blank for
//! not applicable) and the totals are printed at the end, and the test
//! fails if any cell failed.
//!
//! Also here: an escaping `setsid` grandchild is ended when zut exits, and
//! SIGINT ends a JSON run whose stdout nobody reads with status 130.

mod support;

use serde_json::Value;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::{pid_exists, Sandbox};

const PHASES: &[&str] = &[
    "before_hello",
    "in_hello",
    "after_ack",
    "command",
    "tool",
    "icpt_tool_call",
    "icpt_turn_start",
    "icpt_assistant_message",
    "event",
    "panel",
    "shutdown",
];

const FAULTS: &[&str] = &[
    "hang",
    "crash",
    "sigkill",
    "close_stdout",
    "grandchild",
    "ignore_sigterm",
    "flood",
    "huge_line",
    "bad_utf8",
    "torn",
    "wrong_id",
    "dup_id",
    "no_read",
    "banner",
    "deep",
    "unicode",
    "huge_num",
];

/// How long a cell's zut may run: every deadline below is shortened, so a
/// healthy run is a few seconds even when it waits out a timeout.
const CELL_DEADLINE: Duration = Duration::from_secs(25);

/// Cells run at once: each is mostly a wait on a deadline.
const CELLS_AT_ONCE: usize = 6;

/// What the user must be told.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Something in the stream names the extension as broken or noisy.
    Reported,
    /// The extension is not reported broken (no `ext_error`), and the
    /// phase's work succeeded.
    Clean,
    /// Either is acceptable (e.g. a fault after the answer is given).
    Any,
}

/// The applicable cells and what each must report; `None`: the fault has
/// no meaning at that phase.
fn applicable(phase: &str, fault: &str) -> Option<Expect> {
    use Expect::*;
    let replies = matches!(
        phase,
        "command" | "tool" | "icpt_tool_call" | "icpt_turn_start" | "icpt_assistant_message"
    );
    Some(match fault {
        // Answers bent out of shape need a request to answer.
        "wrong_id" | "dup_id" if !replies => return None,
        // A duplicate answer after the real one costs the call nothing;
        // the stray second reply is a warning at most.
        "dup_id" => Any,
        // The junk rides on the phase's own frame; before `hello` there is
        // none (and any frame before `hello` fails the handshake).
        "deep" | "unicode" | "huge_num" if phase == "before_hello" => return None,
        "deep" | "unicode" | "huge_num" => Clean,
        // Stray output is a warning, whenever it comes (at shutdown the
        // stream may already be closed).
        "banner" | "bad_utf8" if phase == "shutdown" => Any,
        "banner" | "bad_utf8" => Reported,
        // A flood of notes is still a valid stream: zut must not choke.
        "flood" => Any,
        // At shutdown zut already asked the extension to go: what matters
        // is that it goes, not what is reported.
        _ if phase == "shutdown" => Any,
        // An event needs no answer: a hang, a deaf stdin or a torn frame
        // there harms nobody until shutdown, which must still end it.
        "hang" | "no_read" | "ignore_sigterm" | "torn" if phase == "event" => Any,
        // A missed interception deadline means "allow" (the protocol's
        // rule): withholding the answer, or sending one with an id nobody
        // asked for, costs the extension its say, and zut only notes it in
        // the extension's log.
        "hang" | "no_read" | "ignore_sigterm" | "torn" | "wrong_id"
            if phase.starts_with("icpt_") =>
        {
            Any
        }
        // Where no answer is owed or missing one means "allow", nothing
        // waits for the 40 MiB line: on a loaded machine it can still be
        // in flight when the run ends, and the disconnect is then part of
        // the shutdown (reported or not).
        "huge_line" if phase == "event" || phase.starts_with("icpt_") => Any,
        // An interceptor that does not answer costs its deadline, then
        // the event is allowed with a warning.
        _ => Reported,
    })
}

/// Installs the chaos fixture into `sb` with these options.
fn chaos(sb: &Sandbox, opts: &[String]) -> PathBuf {
    let dst = sb.path("exts/chaos");
    std::fs::create_dir_all(&dst).unwrap();
    let script = support::fixtures().join("chaos.py");
    let mut args = vec![Value::from(script.display().to_string())];
    args.extend(opts.iter().map(|o| Value::from(o.as_str())));
    let manifest = serde_json::json!({
        "name": "chaos",
        "version": "0.0.1",
        // Found on the PATH `support::zut` sets: the real interpreter first.
        "exec": "python3",
        "args": args,
        "language": "python",
    });
    std::fs::write(dst.join("extension.json"), manifest.to_string()).unwrap();
    dst
}

/// What the scripted model does in `phase`, and the prompt.
fn scenario(phase: &str) -> (String, Vec<Value>) {
    let text = serde_json::json!({"text": "ok"});
    let call = serde_json::json!({"tool_calls": [{"id": "c1", "name": "chaos_tool", "args": {}}]});
    match phase {
        "command" | "panel" => ("/chaos".into(), vec![text]),
        "tool" | "icpt_tool_call" => ("use the tool".into(), vec![call, text.clone(), text]),
        // The fault comes with the turn's start: a model that takes
        // a moment keeps the run going until zut has seen it (a fault in
        // the last instant of a run is part of the shutdown).
        "event" | "icpt_turn_start" => {
            let slow = serde_json::json!({"delay_ms": 1500, "text": "ok"});
            ("hi".into(), vec![slow, text])
        }
        _ => ("hi".into(), vec![text.clone(), text]),
    }
}

/// Deadlines short enough that a cell waiting one out stays quick.
/// `zut --mode json` with extension `dir`, the scripted provider answering
/// `step`, deadlines shortened, and the prompt "hi".
fn json_prompt(sb: &Sandbox, dir: &std::path::Path, step: serde_json::Value) -> Command {
    let script = support::script(sb, &[step]);
    let mut c = support::zut(sb);
    short_deadlines(&mut c);
    c.args([
        "--mode",
        "json",
        "--provider",
        "script",
        "--script",
        &script,
        "--ext",
    ])
    .arg(dir)
    .arg("hi");
    c
}

fn short_deadlines(c: &mut Command) {
    for (k, v) in [
        // Generous: on a loaded machine a Python start alone can take
        // seconds, and a fixture killed before it records its pid proves
        // nothing.
        ("ZUT_HELLO_TIMEOUT_MS", "5000"),
        // The rest wait on a fixture that is already running and answers
        // in milliseconds when healthy: a hang costs each of them in full,
        // so they are kept short.
        ("ZUT_READY_TIMEOUT_MS", "1000"),
        ("ZUT_COMMAND_TIMEOUT_MS", "1000"),
        ("ZUT_TOOL_TIMEOUT_MS", "1000"),
        ("ZUT_INTERCEPT_TIMEOUT_MS", "1000"),
        ("ZUT_SHUTDOWN_GRACE_MS", "700"),
        ("ZUT_KILL_GRACE_MS", "400"),
        ("ZUT_WRITE_TIMEOUT_MS", "1000"),
    ] {
        c.env(k, v);
    }
}

/// Waits for `child` until `deadline`; kills it past that.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads a pipe to its end on a thread (so a full pipe never stalls zut).
fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

/// The pids a fixture recorded.
fn recorded(pidfile: &Path) -> Vec<u32> {
    std::fs::read_to_string(pidfile)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Checks that every recorded pid is gone (not even a zombie); the orphan
/// reaper may need a moment for a process zut killed on its way out.
fn survivors(pids: &[u32]) -> Vec<u32> {
    let end = Instant::now() + Duration::from_secs(3);
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| pid_exists(p)).collect();
        if left.is_empty() || Instant::now() >= end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether an event reports trouble with the extension.
fn reports(e: &Value) -> bool {
    let t = e["type"].as_str().unwrap_or_default();
    let mentions = e.to_string().contains("chaos");
    match t {
        "ext_error" | "ext_warning" => e["extension"] == "chaos",
        "tool_result" => e["is_error"] == true && mentions,
        "error" | "command_result" => mentions,
        _ => false,
    }
}

/// Every line of every session file parses as JSON.
fn sessions_parse(home: &Path) -> Result<(), String> {
    let Ok(dir) = std::fs::read_dir(home.join("sessions")) else {
        return Ok(());
    };
    let mut stack: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            if let Ok(d) = std::fs::read_dir(&p) {
                stack.extend(d.filter_map(|e| e.ok().map(|e| e.path())));
            }
            continue;
        }
        let text = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        for (n, line) in String::from_utf8_lossy(&text).lines().enumerate() {
            if serde_json::from_str::<Value>(line).is_err() {
                return Err(format!("{} line {}: not JSON", p.display(), n + 1));
            }
        }
    }
    Ok(())
}

/// Runs one cell; `Err` says what went wrong.
fn run_cell(phase: &str, fault: &str, expect: Expect) -> Result<(), String> {
    let sb = Sandbox::new();
    let pidfile = sb.path("pids");
    let dir = chaos(
        &sb,
        &[
            format!("fault={fault}"),
            format!("phase={phase}"),
            format!("pidfile={}", pidfile.display()),
        ],
    );
    let (prompt, script) = scenario(phase);
    let script = support::script(&sb, &script);
    let mut c = support::zut(&sb);
    short_deadlines(&mut c);
    c.arg("--mode")
        .arg("json")
        .arg("--provider")
        .arg("script")
        .arg("--script")
        .arg(&script)
        .arg("--ext")
        .arg(&dir)
        .arg(&prompt)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = c.spawn().map_err(|e| format!("spawn: {e}"))?;
    let out = drain(child.stdout.take().unwrap());
    let err = drain(child.stderr.take().unwrap());
    let status = wait_until(&mut child, started + CELL_DEADLINE);
    let took = started.elapsed();
    let mut problems = Vec::new();
    match status {
        None => problems.push(format!("zut still running after {CELL_DEADLINE:?}")),
        Some(s) if s.signal().is_some() => problems.push(format!("zut killed by {s}")),
        Some(s) if !matches!(s.code(), Some(0 | 1)) => problems.push(format!("zut {s}")),
        Some(_) => {}
    }
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let events: Vec<Value> = String::from_utf8_lossy(&stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let reported = events.iter().any(reports);
    let ext_error = events
        .iter()
        .any(|e| e["type"] == "ext_error" && e["extension"] == "chaos");
    match expect {
        Expect::Reported if !reported => problems.push("the fault was not reported".into()),
        Expect::Clean if ext_error => problems.push("harmless junk broke the extension".into()),
        Expect::Clean if status.and_then(|s| s.code()) != Some(0) => {
            problems.push("harmless junk failed the run".into())
        }
        _ => {}
    }
    let pids = recorded(&pidfile);
    if pids.is_empty() && !ext_error {
        problems.push("the fixture never started".into());
    }
    let left = survivors(&pids);
    if !left.is_empty() {
        problems.push(format!("fixture processes survived: {left:?}"));
        for p in left {
            // SAFETY: cleaning up our own test's leftovers.
            unsafe {
                libc::kill(p as i32, libc::SIGKILL);
            }
        }
    }
    if let Err(e) = sessions_parse(&sb.home()) {
        problems.push(e);
    }
    if problems.is_empty() {
        return Ok(());
    }
    let tail: Vec<String> = events
        .iter()
        .rev()
        .take(6)
        .map(|e| {
            let s = e.to_string();
            s.chars().take(160).collect()
        })
        .collect();
    Err(format!(
        "{} (after {took:.1?}); last events: {tail:?}; stderr: {}",
        problems.join("; "),
        String::from_utf8_lossy(&stderr)
            .chars()
            .take(300)
            .collect::<String>()
    ))
}

#[test]
fn every_fault_at_every_phase_leaves_zut_standing() {
    let cells: Vec<(&str, &str, Expect)> = PHASES
        .iter()
        .flat_map(|p| FAULTS.iter().map(move |f| (*p, *f)))
        .filter_map(|(p, f)| applicable(p, f).map(|e| (p, f, e)))
        .collect();
    let next = AtomicUsize::new(0);
    type Outcome<'a> = (&'a str, &'a str, Result<(), String>);
    let results: Mutex<Vec<Outcome>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        // Cells spend their time waiting on deadlines, not computing.
        for _ in 0..CELLS_AT_ONCE {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(phase, fault, expect)) = cells.get(i) else {
                    return;
                };
                let r = run_cell(phase, fault, expect);
                results.lock().unwrap().push((phase, fault, r));
            });
        }
    });
    let results = results.into_inner().unwrap();
    let mark = |p: &str, f: &str| match results.iter().find(|(rp, rf, _)| *rp == p && *rf == f) {
        Some((_, _, Ok(()))) => "✓",
        Some((_, _, Err(_))) => "✗",
        None => "·",
    };
    let mut table = format!("{:<24}", "phase \\ fault");
    for (i, _) in FAULTS.iter().enumerate() {
        table.push_str(&format!("{:>3}", i + 1));
    }
    table.push('\n');
    for p in PHASES {
        table.push_str(&format!("{p:<24}"));
        for f in FAULTS {
            table.push_str(&format!("{:>3}", mark(p, f)));
        }
        table.push('\n');
    }
    for (i, f) in FAULTS.iter().enumerate() {
        table.push_str(&format!("  {:>2} {f}\n", i + 1));
    }
    let failed: Vec<_> = results.iter().filter(|(_, _, r)| r.is_err()).collect();
    println!("{table}");
    println!(
        "fault matrix: {} cells, {} passed, {} failed",
        results.len(),
        results.len() - failed.len(),
        failed.len()
    );
    for (p, f, r) in &failed {
        println!(
            "✗ {p} × {f}: {}",
            r.as_ref().err().map_or("", |s| s.as_str())
        );
    }
    assert_eq!(results.len(), cells.len(), "every cell ran");
    assert!(
        failed.is_empty(),
        "{} fault-matrix cells failed",
        failed.len()
    );
}

/// A healthy extension starts a grandchild that leaves its process group
/// with `setsid` (so killing the group misses it). zut adopts it as the
/// subreaper once the extension is gone and ends it on its way out.
#[test]
fn an_escaped_setsid_grandchild_does_not_outlive_zut() {
    let sb = Sandbox::new();
    let pidfile = sb.path("pids");
    let dir = chaos(
        &sb,
        &[
            "fault=escape".into(),
            "phase=after_ack".into(),
            format!("pidfile={}", pidfile.display()),
        ],
    );
    let out = json_prompt(&sb, &dir, serde_json::json!({"text": "ok"}))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pids = recorded(&pidfile);
    assert_eq!(pids.len(), 2, "the extension and its grandchild: {pids:?}");
    let left = survivors(&pids);
    for &p in &left {
        // SAFETY: cleaning up our own test's leftovers.
        unsafe {
            libc::kill(p as i32, libc::SIGKILL);
        }
    }
    assert!(left.is_empty(), "outlived zut: {left:?}");
}

/// `--mode json` into a pipe nobody reads, an extension flooding notes, a
/// model that takes its time: once stdout is full, SIGINT still ends zut
/// with 130 (its loop must not be stuck inside a write), and the
/// extension is gone with it.
#[test]
fn sigint_exits_130_while_stdout_is_blocked() {
    let sb = Sandbox::new();
    let pidfile = sb.path("pids");
    let dir = chaos(
        &sb,
        &[
            // Flooding on the turn's first event: the extension is loaded
            // by then (a flood before `ready` only gets it disconnected).
            "fault=flood".into(),
            "phase=event".into(),
            "count=100000".into(),
            format!("pidfile={}", pidfile.display()),
        ],
    );
    let mut child = json_prompt(
        &sb,
        &dir,
        serde_json::json!({"delay_ms": 60000, "text": "late"}),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    // Never read: wait until the pipe is full, so zut's next write blocks.
    let full = support::eventually(Duration::from_secs(30), || {
        let (queued, capacity) = support::pipe_fill(stdout.as_raw_fd());
        // Writes up to a page are atomic: the pipe is full once less
        // than a page is free.
        capacity > 0 && queued + 4096 > capacity
    });
    assert!(full, "stdout never filled up");
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = wait_until(&mut child, Instant::now() + Duration::from_secs(15));
    drop(stdout);
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(130),
        "zut did not exit 130 on SIGINT with stdout blocked: {status:?}"
    );
    let left = survivors(&recorded(&pidfile));
    assert!(left.is_empty(), "outlived zut: {left:?}");
}
