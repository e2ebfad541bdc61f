//! Benchmark: request-to-response latency of `zut --mode rpc` (issue "rpc").
//!
//! A `zut --mode rpc` process with 50 tiny extensions loaded (each a `sh`
//! script registering one tool and one command, so `list_tools` answers
//! 55 tools) is asked `ping` and `list_tools` over its stdin/stdout pipes,
//! one request at a time. The baseline, measured in the same run over the
//! same kind of pipes, is a bare JSON-lines echo: this program re-run as a
//! child that reads a line, parses it with serde_json and writes a
//! response line (no threads, no channels). For `list_tools` the echo
//! answers with the very data zut answered (serialised again each time),
//! so both sides move the same bytes. Everything is interleaved in blocks
//! so that a busy machine weighs on all alike; the ratios are medians of
//! back-to-back pairs.
//!
//! The clock stops when the response line has been read; parsing it
//! happens outside the timed part, so a longer answer (`list_tools`) costs
//! only its writing and transfer.
//!
//! A second part times `get_state` and `abort` of a process whose project
//! keeps 1,000 sessions (10 KB each) against one whose project keeps one:
//! the answers must not depend on what is on disk.
//!
//! Run: `cargo bench --bench rpc`.

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child that plays the bare echo: the file holding the data
/// of its `list_tools` answer.
const ECHO_ENV: &str = "ZUT_BENCH_RPC_ECHO";
const EXTENSIONS: usize = 50;
const BLOCKS: usize = 30;
const PER_BLOCK: usize = 100;
/// Goal: zut's latency over the bare echo's.
const GOAL: f64 = 2.0;
/// Sessions kept by the project of the "many sessions" process.
const SESSIONS: usize = 1000;
/// Goal: `get_state` and `abort` with [`SESSIONS`] over with one.
const SESSIONS_GOAL: f64 = 1.2;

/// The echo's answer, fields in zut's order (a `json!` map would sort them).
#[derive(serde::Serialize)]
struct Response<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a Value,
    command: &'a Value,
    success: bool,
    data: &'a Value,
}

/// The bare echo: one response line per request line.
fn echo_server(tools: &Path) {
    let tools: Value = serde_json::from_slice(&std::fs::read(tools).expect("the tools file"))
        .expect("the tools JSON");
    let pong = json!({"pong": true});
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let req: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let resp = Response {
            kind: "response",
            id: &req["id"],
            command: &req["type"],
            success: true,
            data: if req["type"] == "list_tools" {
                &tools
            } else {
                &pong
            },
        };
        let mut bytes = serde_json::to_vec(&resp).expect("response JSON");
        bytes.push(b'\n');
        if out.write_all(&bytes).and_then(|_| out.flush()).is_err() {
            break;
        }
    }
}

/// A JSON-lines peer on the other end of two pipes.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl Peer {
    fn spawn(mut cmd: Command) -> Peer {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning the peer");
        Peer {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().expect("stdout")),
            child,
            next_id: 0,
            line: String::new(),
        }
    }

    /// Sends one request and times it until its response line is read;
    /// returns the time and the response.
    fn call(&mut self, kind: &str) -> (Duration, Value) {
        self.next_id += 1;
        let mut req =
            serde_json::to_vec(&json!({"id": self.next_id, "type": kind})).expect("request JSON");
        req.push(b'\n');
        let stdin = self.stdin.as_mut().expect("stdin open");
        let t = Instant::now();
        stdin.write_all(&req).expect("writing a request");
        stdin.flush().expect("flushing a request");
        for _ in 0..10_000 {
            self.line.clear();
            let n = self
                .stdout
                .read_line(&mut self.line)
                .expect("reading a line");
            assert!(n > 0, "the peer closed its stdout");
            // Responses are the only lines that start this way.
            if self.line.starts_with("{\"type\":\"response\"") {
                let elapsed = t.elapsed();
                let v: Value = serde_json::from_str(&self.line).expect("response JSON");
                assert_eq!(v["id"], self.next_id, "out of order: {v}");
                assert_eq!(v["success"], true, "{v}");
                return (elapsed, v);
            }
            // An event: not ours to time.
        }
        panic!(
            "no response line among 10000 lines; the last: {}",
            self.line
        );
    }

    fn close(mut self) {
        self.stdin.take();
        let mut rest = String::new();
        while self.stdout.read_line(&mut rest).is_ok_and(|n| n > 0) {}
        let _ = self.child.wait();
    }
}

fn main() {
    if let Some(tools) = std::env::var_os(ECHO_ENV) {
        echo_server(Path::new(&tools));
        return;
    }
    let mut r = Report::new(
        "rpc",
        "request-to-response latency of zut --mode rpc",
        &[
            "ping and list_tools sent one at a time to `zut --mode rpc` with 50 tiny sh",
            "extensions loaded (one tool each), vs a bare JSON-lines echo child (serde_json,",
            "no threads) over the same kind of pipes, answering list_tools with the same data;",
            "blocks interleaved in one run; ratios are medians of back-to-back pairs; unpinned.",
        ],
    );
    let sb = Sandbox::new();
    let script = fixtures().join("named-tool.sh").display().to_string();
    let dirs: Vec<_> = (0..EXTENSIONS)
        .map(|i| {
            let name = format!("bench{i:02}");
            sb.ext(&name, "sh", &[script.clone(), name.clone()])
        })
        .collect();
    let mut zut = rpc_command(&sb);
    for d in &dirs {
        zut.arg("-e").arg(d);
    }
    let mut zut = Peer::spawn(zut);
    // Everything loaded before the clock runs.
    let (_, state) = zut.call("get_state");
    let running = state["data"]["extensions"]
        .as_array()
        .map_or(0, |a| a.iter().filter(|e| e["running"] == true).count());
    assert_eq!(running, EXTENSIONS, "only {running} extensions running");
    let (_, tools) = zut.call("list_tools");
    let tool_count = tools["data"]["tools"].as_array().map_or(0, Vec::len);
    r.line("zut binary", env!("CARGO_BIN_EXE_zut"));
    r.line("extensions running", running);
    r.line("tools in list_tools", tool_count);

    let tools_file = sb.dir.path().join("tools.json");
    std::fs::write(&tools_file, tools["data"].to_string()).expect("writing the tools file");
    let mut echo = Command::new(std::env::current_exe().expect("own path"));
    echo.env(ECHO_ENV, &tools_file);
    let mut echo = Peer::spawn(echo);

    for _ in 0..300 {
        echo.call("ping");
        zut.call("ping");
        zut.call("list_tools");
    }
    let mut samples: [Samples; 4] = std::array::from_fn(|_| Samples::new());
    for _ in 0..BLOCKS {
        for _ in 0..PER_BLOCK {
            samples[0].push(echo.call("ping").0);
            samples[1].push(zut.call("ping").0);
            samples[2].push(echo.call("list_tools").0);
            samples[3].push(zut.call("list_tools").0);
        }
    }
    let [e, p, el, l] = samples;
    r.section("latency, request written → response line read");
    r.line("bare echo, ping", e.summary());
    r.line("zut ping", p.summary());
    r.line(
        &format!(
            "bare echo, same {} bytes as list_tools",
            tools["data"].to_string().len()
        ),
        el.summary(),
    );
    r.line("zut list_tools (50 extensions)", l.summary());
    let (rp, rl) = (paired_ratio(&p, &e), paired_ratio(&l, &el));
    r.line("ping / echo (median of pairs)", format!("{rp:.2}×"));
    r.line(
        "list_tools / same-size echo (median of pairs)",
        format!("{rl:.2}×"),
    );
    r.line(
        "list_tools / ping echo (median of pairs)",
        format!("{:.2}×", paired_ratio(&l, &e)),
    );
    r.goal(rp <= GOAL, "ping ≤ 2× the bare echo", format!("{rp:.2}×"));
    state_with_sessions(&mut r);
    r.goal(
        rl <= GOAL,
        "list_tools with 50 extensions ≤ 2× the bare echo",
        format!("{rl:.2}×"),
    );
    echo.close();
    zut.close();
    r.finish();
}

/// `zut --mode rpc` in `sb`'s project, scripted provider, no extensions
/// but those given with `-e`.
fn rpc_command(sb: &Sandbox) -> Command {
    let mut zut = Command::new(env!("CARGO_BIN_EXE_zut"));
    zut.args(["--mode", "rpc", "--provider", "script", "--no-extensions"])
        .current_dir(sb.cwd())
        .env("ZUT_HOME", sb.home())
        .env("PATH", search_path())
        .env_remove("ZUT_RPC_TOKEN");
    zut
}

/// A `zut --mode rpc` in a project holding `sessions` sessions.
fn rpc_with_sessions(sb: &Sandbox, sessions: usize) -> Peer {
    let store = zut::session::Store::new(&sb.home(), &sb.cwd());
    let text = "x".repeat(10 * 1024);
    for i in 0..sessions {
        let mut s = store.create().expect("creating a session");
        s.append_message(&zut::provider::Message::user_text(format!("{i} {text}")))
            .expect("writing a session");
    }
    Peer::spawn(rpc_command(sb))
}

/// `get_state` and `abort` with 1 and with [`SESSIONS`] sessions.
fn state_with_sessions(r: &mut Report) {
    let (one_sb, many_sb) = (Sandbox::new(), Sandbox::new());
    let mut one = rpc_with_sessions(&one_sb, 1);
    let mut many = rpc_with_sessions(&many_sb, SESSIONS);
    for _ in 0..100 {
        one.call("get_state");
        many.call("get_state");
    }
    let mut samples: [Samples; 4] = std::array::from_fn(|_| Samples::new());
    for block in 0..10 {
        for _ in 0..50 {
            // Which process goes first alternates, so neither always
            // follows the other's wake-up.
            if block % 2 == 0 {
                samples[0].push(one.call("get_state").0);
                samples[1].push(many.call("get_state").0);
                samples[2].push(one.call("abort").0);
                samples[3].push(many.call("abort").0);
            } else {
                samples[1].push(many.call("get_state").0);
                samples[0].push(one.call("get_state").0);
                samples[3].push(many.call("abort").0);
                samples[2].push(one.call("abort").0);
            }
        }
    }
    let [gs1, gsn, ab1, abn] = samples;
    r.section(&format!("get_state and abort, 1 vs {SESSIONS} sessions"));
    r.line("get_state, 1 session", gs1.summary());
    r.line(&format!("get_state, {SESSIONS} sessions"), gsn.summary());
    r.line("abort, 1 session", ab1.summary());
    r.line(&format!("abort, {SESSIONS} sessions"), abn.summary());
    let (rg, ra) = (paired_ratio(&gsn, &gs1), paired_ratio(&abn, &ab1));
    r.goal(
        rg <= SESSIONS_GOAL,
        &format!("get_state with {SESSIONS} sessions ≤ 1.2× with one"),
        format!("{rg:.2}×"),
    );
    r.goal(
        ra <= SESSIONS_GOAL,
        &format!("abort with {SESSIONS} sessions ≤ 1.2× with one"),
        format!("{ra:.2}×"),
    );
    one.close();
    many.close();
}
