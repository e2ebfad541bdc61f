//! Benchmark: the agent loop as a whole process (issue "agent loop").
//!
//! `zut -p --provider script --no-extensions` (the release binary cargo
//! builds for this benchmark) runs
//! - a 1-step answer (`{"text":"done"}`), and
//! - a 200-step tool loop: 200 script lines each calling the built-in `read`
//!   on a small file, then a final text;
//!
//! measuring each whole process's wall time (spawn to reaped) and peak RSS
//! (`ru_maxrss` from `wait4`). The per-step host overhead is
//! (T200 − T1) / 199. The baseline is spawning and reaping `/bin/true` the
//! same way, in the same run.
//!
//! Daily-use bookkeeping, in the same run: the 200-step loop again with
//! every line carrying `thinking` and `usage` (priced through config
//! `models`, so each step emits `thinking_delta` and a priced `usage`
//! event), its per-step cost as a ratio to the plain loop's (goal ≤ 1.1×);
//! the Anthropic request body of a 200-message transcript built with cache
//! breakpoints and thinking against one without (goal ≤ 1.1×); and 50
//! aborts of a stalled Anthropic stream, from the abort to `complete`
//! returning (goal p99 ≤ 200 ms).
//!
//! Run: `cargo bench --bench agent`.

mod common;

use common::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Tool-calling steps of the long script.
const STEPS: usize = 200;
/// Steps of the diagnostic run that shows whether a step's cost grows with
/// the transcript.
const LONG_STEPS: usize = 1000;

/// One finished process: wall time, peak RSS and stdout.
struct Run {
    wall: Duration,
    max_rss_kib: u64,
    stdout: String,
}

/// Spawns `cmd`, reads its stdout to the end and reaps it with `wait4`
/// (which, unlike `Child::wait`, reports the child's peak RSS).
#[allow(clippy::zombie_processes)] // reaped by wait4 below
fn run(cmd: &mut Command) -> Run {
    let t = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = String::new();
    let mut stderr = String::new();
    let _ = child
        .stdout
        .take()
        .map(|mut o| o.read_to_string(&mut stdout));
    let _ = child
        .stderr
        .take()
        .map(|mut e| e.read_to_string(&mut stderr));
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 reaps our own child, which
    // `Child` will not try to reap again (we never call wait on it).
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        let pid = child.id() as libc::pid_t;
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut ru), pid, "wait4");
        ru
    };
    let wall = t.elapsed();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed (status {status}): {stderr}"
    );
    Run {
        wall,
        max_rss_kib: ru.ru_maxrss as u64,
        stdout,
    }
}

/// A scripted print-mode run of `script` in the sandbox.
fn zut(sb: &Sandbox, script: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zut"));
    cmd.args(["-p", "--provider", "script", "--no-extensions", "--yolo"])
        .args([
            "--no-session",
            "--max-steps",
            &(LONG_STEPS + 10).to_string(),
        ])
        .arg("--script")
        .arg(script)
        .arg("--cwd")
        .arg(sb.cwd())
        .arg("go")
        .env("ZUT_HOME", sb.home());
    cmd
}

/// A script of `steps` `read` calls, then the answer.
fn read_loop_script(sb: &Sandbox, steps: usize) -> PathBuf {
    loop_script(sb, steps, false)
}

/// The loop; `daily`: each line also thinks and reports usage.
fn loop_script(sb: &Sandbox, steps: usize, daily: bool) -> PathBuf {
    let mut text = String::new();
    for i in 1..=steps {
        let mut call = serde_json::json!({"tool_calls": [
            {"id": format!("c{i}"), "name": "read", "args": {"path": "small.txt"}}
        ]});
        if daily {
            call["thinking"] = "I will read the file again.".into();
            call["usage"] = serde_json::json!({"input_tokens": 40, "output_tokens": 20,
                "cache_read_tokens": 1000 + i, "cache_write_tokens": 30});
        }
        text.push_str(&call.to_string());
        text.push('\n');
    }
    text.push_str("{\"text\":\"done\"}\n");
    let kind = if daily { "daily" } else { "steps" };
    let path = sb.dir.path().join(format!("{kind}-{steps}.jsonl"));
    std::fs::write(&path, text).expect("script");
    path
}

/// Writes the two scripts and the small file the tool loop reads.
fn scripts(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let small: String = (1..=20)
        .map(|i| format!("line {i} of a small file\n"))
        .collect();
    std::fs::write(sb.cwd().join("small.txt"), small).expect("small.txt");
    let one = sb.dir.path().join("one.jsonl");
    std::fs::write(&one, "{\"text\":\"done\"}\n").expect("script");
    (one, read_loop_script(sb, STEPS))
}

fn main() {
    let mut r = Report::new(
        "agent",
        "zut -p with the scripted provider, as a whole process",
        &[
            "T1: a 1-step answer; T200: 200 steps each calling the built-in `read` on a small",
            "file, then the answer. Wall time from spawn to reaped, peak RSS from wait4;",
            "per-step host overhead = (T200 - T1) / 199. Baseline: spawning /bin/true the same",
            "way. The three alternate run by run; medians and p90. A 1000-step run shows",
            "whether a step's cost grows with the transcript (diagnostic, no goal).",
        ],
    );
    let sb = Sandbox::new();
    let (one, many) = scripts(&sb);
    r.line("zut binary", env!("CARGO_BIN_EXE_zut"));
    // A sanity run: the loop really ran 200 tools and printed the answer.
    let check = run(&mut zut(&sb, &many));
    assert_eq!(check.stdout.trim(), "done", "unexpected output");

    const RUNS: usize = 30;
    let (mut t_true, mut t1, mut t200) = (Samples::new(), Samples::new(), Samples::new());
    let (mut rss1, mut rss200, mut rss_true) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..=RUNS {
        // Rotate the order so no variant always follows the heavy one.
        let mut results = [None, None, None];
        for k in 0..3 {
            let which = (i + k) % 3;
            results[which] = Some(match which {
                0 => run(&mut Command::new("/bin/true")),
                1 => run(&mut zut(&sb, &one)),
                _ => run(&mut zut(&sb, &many)),
            });
        }
        let [a, b, c] = results.map(|r| r.expect("ran"));
        if i == 0 {
            continue; // warm-up
        }
        t_true.push(a.wall);
        rss_true.push(a.max_rss_kib);
        t1.push(b.wall);
        rss1.push(b.max_rss_kib);
        t200.push(c.wall);
        rss200.push(c.max_rss_kib);
    }
    let med = |v: &mut Vec<u64>| {
        v.sort();
        v[(v.len() - 1) / 2]
    };

    r.section("whole-process wall time");
    r.line("/bin/true (baseline)", t_true.summary());
    r.line("zut -p, 1 step", t1.summary());
    r.line(
        &format!("zut -p, {STEPS} read steps + answer"),
        t200.summary(),
    );
    r.line(
        "ratios to /bin/true (medians)",
        format!(
            "1 step {:.1}×   {STEPS} steps {:.1}×",
            ratio(t1.median(), t_true.median()),
            ratio(t200.median(), t_true.median())
        ),
    );
    let per_step = t200.median().saturating_sub(t1.median()) / (STEPS as u32 - 1);
    let per_step_p90 = t200.p90().saturating_sub(t1.p90()) / (STEPS as u32 - 1);
    r.line(
        "per-step host overhead (T200 - T1) / 199",
        format!("{} (from p90s: {})", fmt(per_step), fmt(per_step_p90)),
    );

    // Diagnostic: a step's cost should not grow with the transcript.
    let long = read_loop_script(&sb, LONG_STEPS);
    let t_long = Samples::collect(5, || run(&mut zut(&sb, &long)).wall);
    let per_step_long = t_long.median().saturating_sub(t1.median()) / (LONG_STEPS as u32 - 1);
    r.line(
        &format!("diagnostic: per step over {LONG_STEPS} steps"),
        format!(
            "{} ({:.1}× the {STEPS}-step figure; 1.0× if a step's cost does not grow)",
            fmt(per_step_long),
            ratio(per_step_long, per_step)
        ),
    );

    // Daily-use bookkeeping, through the same process loop.
    std::fs::write(
        sb.home().join("config.json"),
        r#"{"models":{"script":{"context":200000,"input_per_mtok":3,"output_per_mtok":15,
            "cache_read_per_mtok":0.3,"cache_write_per_mtok":3.75}}}"#,
    )
    .expect("config");
    let daily = loop_script(&sb, STEPS, true);
    let daily_cmd = || {
        let mut c = zut(&sb, &daily);
        c.args(["--thinking", "medium"]);
        c
    };
    assert_eq!(run(&mut daily_cmd()).stdout.trim(), "done");
    let (mut tp, mut td) = (Samples::new(), Samples::new());
    for i in 0..=10 {
        let (a, b) = if i % 2 == 0 {
            (run(&mut zut(&sb, &many)), run(&mut daily_cmd()))
        } else {
            let b = run(&mut daily_cmd());
            (run(&mut zut(&sb, &many)), b)
        };
        if i > 0 {
            tp.push(a.wall);
            td.push(b.wall);
        }
    }
    let _ = std::fs::remove_file(sb.home().join("config.json"));
    let plain_step = tp.median().saturating_sub(t1.median()) / (STEPS as u32 - 1);
    let daily_step = td.median().saturating_sub(t1.median()) / (STEPS as u32 - 1);
    let daily_ratio = ratio(daily_step, plain_step);
    r.section("daily-use bookkeeping (thinking, usage, cost; caching)");
    r.line(
        "per step, plain / with thinking+usage",
        format!(
            "{} / {} ({daily_ratio:.2}×)",
            fmt(plain_step),
            fmt(daily_step)
        ),
    );
    let (body_plain, body_cached) = body_costs();
    let body_ratio = ratio(body_cached.median(), body_plain.median());
    r.line(
        "Anthropic body, 200 messages: plain / cached+thinking",
        format!(
            "{} / {} ({body_ratio:.2}×)",
            fmt(body_plain.median()),
            fmt(body_cached.median())
        ),
    );
    let aborts = abort_to_idle(50);
    r.line("abort to idle, 50 stalled streams", aborts.summary());

    r.section("peak RSS (ru_maxrss, medians)");
    r.line("/bin/true", format!("{} KiB", med(&mut rss_true)));
    r.line("zut -p, 1 step", format!("{} KiB", med(&mut rss1)));
    r.line(
        &format!("zut -p, {STEPS} steps"),
        format!("{} KiB", med(&mut rss200)),
    );

    r.section("goals");
    r.goal(
        per_step < Duration::from_micros(200),
        "per-step host overhead < 200 µs",
        fmt(per_step),
    );
    r.goal(
        daily_ratio <= 1.1,
        "per step with thinking, usage and cost ≤ 1.1× plain",
        format!("{daily_ratio:.2}×"),
    );
    r.goal(
        body_ratio <= 1.1,
        "request body with cache breakpoints and thinking ≤ 1.1× plain",
        format!("{body_ratio:.2}×"),
    );
    r.goal(
        aborts.quantile(0.99) <= Duration::from_millis(200),
        "abort to idle p99 ≤ 200 ms",
        fmt(aborts.quantile(0.99)),
    );
    r.goal(
        t1.median() < Duration::from_millis(10),
        "start-up (1-step run) < 10 ms",
        format!(
            "{} ({:.1}× /bin/true)",
            fmt(t1.median()),
            ratio(t1.median(), t_true.median())
        ),
    );
    r.finish();
}

/// Building the Anthropic body of a 200-message transcript, without and
/// with cache breakpoints and thinking (what caching adds per request).
fn body_costs() -> (Samples, Samples) {
    use zut::provider::anthropic::{request_body, BodyOptions};
    use zut::provider::{Block, Message, Request, Role, Thinking, ToolDef};
    let mut messages = Vec::new();
    for i in 0..100 {
        messages.push(Message::user_text(format!("question {i} about the code")));
        messages.push(Message {
            role: Role::Assistant,
            content: vec![
                Block::Thinking {
                    thinking: "thinking about it".into(),
                    signature: "c2ln".into(),
                },
                Block::Text {
                    text: format!("answer {i} with some words in it"),
                },
            ],
            from: None,
        });
    }
    let tools: Vec<ToolDef> = (0..6)
        .map(|i| ToolDef {
            name: format!("tool{i}"),
            description: "a tool".into(),
            schema: serde_json::json!({"type":"object"}),
        })
        .collect();
    let req = Request {
        step: 1,
        system: "You are a coding agent.",
        messages: &messages,
        tools: &tools,
        hidden_context: &[],
    };
    let cached = BodyOptions {
        cache: true,
        thinking: Thinking::Medium,
    };
    let (mut plain, mut with) = (Samples::new(), Samples::new());
    for i in 0..400 {
        let one = |opts| {
            let t = Instant::now();
            let body = request_body("claude-sonnet-4-5", &req, opts);
            let bytes = body.to_string().len();
            std::hint::black_box(bytes);
            t.elapsed()
        };
        let (a, b) = if i % 2 == 0 {
            (one(BodyOptions::default()), one(cached))
        } else {
            let b = one(cached);
            (one(BodyOptions::default()), b)
        };
        if i >= 20 {
            plain.push(a);
            with.push(b);
        }
    }
    (plain, with)
}

/// `n` Anthropic requests against a server that sends the headers and a
/// first event, then stalls; each is aborted 30 ms in. Returns the time
/// from the abort to `complete` returning.
fn abort_to_idle(n: usize) -> Samples {
    use std::io::Write;
    use std::net::TcpListener;
    use zut::provider::{Message, Provider, Request, Settings};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 65536];
            let _ = std::io::Read::read(&mut s, &mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n\
                  event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n",
            );
            held.push(s);
        }
    });
    let mut p = zut::provider::anthropic::Anthropic::new(&Settings {
        provider: "anthropic".into(),
        base_url: Some(url),
        api_key: Some("k".into()),
        ..Settings::default()
    })
    .expect("provider");
    let messages = [Message::user_text("hi")];
    let req = Request {
        step: 1,
        system: "",
        messages: &messages,
        tools: &[],
        hidden_context: &[],
    };
    let mut out = Samples::new();
    for _ in 0..n {
        let (canceller, token) = zut::cancel::pair();
        let fired = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            canceller.cancel();
            Instant::now()
        });
        let result = p.complete(&req, &mut |_| {}, &token);
        let returned = Instant::now();
        let fired = fired.join().expect("canceller");
        assert!(result.is_err(), "a stalled stream cannot answer");
        out.push(returned.saturating_duration_since(fired));
    }
    out
}
