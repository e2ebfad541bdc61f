//! Benchmark: MCP servers through zut (issue "MCP servers").
//!
//! - **call**: one `tools/call` of the test server's `echo` through zut's
//!   hub (`Hub::call`: request table, writer and reader threads, result
//!   mapping) against the same call made by a minimal direct JSON-RPC
//!   client to its own copy of the same server (a line written, a line
//!   read, parsed), interleaved in blocks, the whole program pinned to
//!   CPU 0 (its servers inherit the pin).
//! - **start**: five servers started together by the hub, until all are
//!   ready (handshake and `tools/list`), against one alone; each server
//!   waits 300 ms before answering `initialize`, as a server that loads
//!   something at start does, so the figure says whether starts overlap.
//! - **serve**: `read` of a small file through `zut mcp serve` against
//!   the Node `server-filesystem`'s `read_text_file` of the same file,
//!   both driven by the same minimal client; skipped with a line when the
//!   Node server is not in the test cache (`.ci/mcp-servers`).
//!
//! Run: `cargo bench --bench mcp` (or `-- call | start | serve`).

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zut::cancel::CancelToken;
use zut::events::Collect;
use zut::mcp::config::{Loaded, ServerSpec};
use zut::mcp::hub::Hub;

fn fake_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fake_server.py")
}

fn spec(name: &str, command: &Path, args: &[String], cwd: &Path) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        command: command.display().to_string(),
        args: args.to_vec(),
        env: Default::default(),
        cwd: Some(cwd.to_path_buf()),
        startup_timeout: Duration::from_secs(30),
        tool_timeout: Duration::from_secs(30),
        enabled: true,
        deferred: false,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        confirm: false,
        origin: "flag".into(),
        file: cwd.join("mcp.json"),
    }
}

fn hub(sb: &Sandbox, specs: Vec<ServerSpec>) -> Arc<Hub> {
    let hub = Hub::start(
        Loaded {
            servers: specs,
            warnings: Vec::new(),
        },
        &sb.cwd(),
        &sb.home(),
        Arc::new(Collect::default()),
    );
    hub.wait_ready(&CancelToken::never());
    hub
}

/// A minimal MCP client over a child's pipes: no threads, one request at
/// a time.
struct Direct {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
    line: String,
}

impl Direct {
    fn start(mut cmd: Command) -> Direct {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("server starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut d = Direct {
            child,
            stdin,
            stdout,
            next: 0,
            line: String::new(),
        };
        d.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        d.notify("notifications/initialized");
        d
    }

    fn notify(&mut self, method: &str) {
        let line = json!({"jsonrpc": "2.0", "method": method}).to_string();
        writeln!(self.stdin, "{line}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Sends one request and reads lines until its answer.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").expect("write");
        self.stdin.flush().expect("flush");
        loop {
            self.line.clear();
            let n = self.stdout.read_line(&mut self.line).expect("read");
            assert!(n > 0, "the server closed its stdout during {method}");
            let v: Value = serde_json::from_str(&self.line).expect("JSON-RPC line");
            if v["id"] == id {
                return v;
            }
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pin_to_cpu0() -> bool {
    // SAFETY: a zeroed cpu_set_t with one bit set, for this process.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

fn call_section(r: &mut Report, sb: &Sandbox, python: &Path) {
    r.section("one tools/call of echo (pinned to CPU 0)");
    let script = vec![fake_server().display().to_string()];
    let h = hub(sb, vec![spec("fake", python, &script, &sb.cwd())]);
    let name = zut::mcp::naming::tool_name("fake", "echo");
    let never = CancelToken::never();
    let args = json!({"text": "hello"});
    let mut direct = {
        let mut c = Command::new(python);
        c.args(&script).current_dir(sb.cwd());
        Direct::start(c)
    };
    let mut via_zut = || {
        let (content, is_error, _) = h
            .call(&name, &args, &never, &mut |_| {})
            .expect("the hub offers echo");
        assert!(!is_error && !content.is_empty());
    };
    let mut by_hand = || {
        let v = direct.call("echo", json!({"text": "hello"}));
        assert!(v["result"]["content"].is_array(), "{v}");
    };
    for _ in 0..200 {
        via_zut();
        by_hand();
    }
    let (mut z, mut d) = (Samples::new(), Samples::new());
    for _ in 0..10 {
        z.append(Samples::time(0, 300, &mut via_zut));
        d.append(Samples::time(0, 300, &mut by_hand));
    }
    h.shutdown();
    r.line("through zut's hub", z.summary());
    r.line("minimal direct JSON-RPC client", d.summary());
    let x = ratio(z.median(), d.median());
    r.goal(
        x <= 1.15,
        "an MCP call through zut ≤ 1.15× a direct client (pinned, median)",
        format!("{x:.2}×"),
    );
}

fn start_section(r: &mut Report, sb: &Sandbox, python: &Path) {
    r.section("servers starting (each waits 300 ms in initialize)");
    let slow = |n: usize| -> Vec<ServerSpec> {
        (0..n)
            .map(|i| {
                spec(
                    &format!("s{i}"),
                    python,
                    &[
                        fake_server().display().to_string(),
                        "--slow-init".into(),
                        "300".into(),
                    ],
                    &sb.cwd(),
                )
            })
            .collect()
    };
    let time = |n: usize| -> Duration {
        let t = Instant::now();
        let h = hub(sb, slow(n));
        let took = t.elapsed();
        assert!(
            h.status().iter().all(|s| s.state == "ready"),
            "every server ready"
        );
        h.shutdown();
        took
    };
    // The same five started by hand: one thread per server doing the
    // handshake and tools/list, all at once (what the hardware allows).
    let bare = || -> Duration {
        let t = Instant::now();
        let threads: Vec<_> = (0..5)
            .map(|_| {
                let (python, script) = (python.to_path_buf(), fake_server());
                std::thread::spawn(move || {
                    let mut c = Command::new(python);
                    c.arg(script).args(["--slow-init", "300"]);
                    let mut d = Direct::start(c);
                    d.request("tools/list", json!({}));
                })
            })
            .collect();
        for t in threads {
            t.join().expect("starter thread");
        }
        t.elapsed()
    };
    let (mut one, mut five, mut by_hand) = (Samples::new(), Samples::new(), Samples::new());
    for _ in 0..5 {
        one.push(time(1));
        five.push(time(5));
        by_hand.push(bare());
    }
    r.line("one server", one.summary());
    r.line("five servers together", five.summary());
    r.line(
        "five started at once by hand (bare threads)",
        by_hand.summary(),
    );
    r.line(
        "hub / by hand",
        format!("{:.2}×", ratio(five.median(), by_hand.median())),
    );
    let x = ratio(five.median(), one.median());
    r.goal(
        x <= 1.2,
        "five servers start in ≤ 1.2× the time of one",
        format!("{x:.2}×"),
    );
}

fn serve_section(r: &mut Report, sb: &Sandbox) {
    r.section("reading a small file: zut mcp serve vs server-filesystem");
    let cache = std::env::var_os("ZUT_MCP_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/zut-ci/mcp")
        });
    let fs_server =
        cache.join("npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    if !fs_server.exists() {
        r.line(
            "skipped",
            format!("{} is not installed (npm install --prefix {}/npm @modelcontextprotocol/server-filesystem)", fs_server.display(), cache.display()),
        );
        return;
    }
    let file = sb.cwd().join("notes.txt");
    std::fs::write(&file, "a small file\nof three lines\nto read\n").expect("file");
    let mut serve = {
        let mut c = Command::new(env!("CARGO_BIN_EXE_zut"));
        c.args(["--no-extensions", "mcp", "serve", "--tools", "read"])
            .current_dir(sb.cwd())
            .env("ZUT_HOME", sb.home());
        Direct::start(c)
    };
    let mut node = {
        let mut c = Command::new("node");
        c.arg(&fs_server)
            .arg(sb.cwd())
            .current_dir(sb.cwd())
            .env_remove("NODE_EXTRA_CA_CERTS");
        Direct::start(c)
    };
    let path = file.display().to_string();
    let mut via_zut = || {
        let v = serve.call("read", json!({"path": path}));
        assert!(
            v["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("three")),
            "{v}"
        );
    };
    let mut via_node = || {
        let v = node.call("read_text_file", json!({"path": path}));
        assert!(
            v["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("three")),
            "{v}"
        );
    };
    for _ in 0..100 {
        via_zut();
        via_node();
    }
    let (mut z, mut n) = (Samples::new(), Samples::new());
    for _ in 0..10 {
        z.append(Samples::time(0, 200, &mut via_zut));
        n.append(Samples::time(0, 200, &mut via_node));
    }
    r.line("zut mcp serve: read", z.summary());
    r.line("server-filesystem: read_text_file", n.summary());
    let x = ratio(z.median(), n.median());
    r.goal(
        x <= 0.5,
        "zut mcp serve reads a small file in ≤ 0.5× server-filesystem's time",
        format!("{x:.2}×"),
    );
}

fn main() {
    let mut r = Report::new(
        "mcp",
        "MCP servers through zut",
        &[
            "call: Hub::call vs a minimal direct JSON-RPC client to the same Python test server,",
            "pinned to CPU 0; start: five servers (300 ms initialize each) vs one, until ready;",
            "serve: zut mcp serve's read vs server-filesystem's read_text_file, same client.",
        ],
    );
    let sb = Sandbox::new();
    let python = python();
    if selected("start") {
        start_section(&mut r, &sb, &python);
    }
    if selected("serve") {
        serve_section(&mut r, &sb);
    }
    if selected("call") {
        let pinned = pin_to_cpu0();
        r.line("pinned to CPU 0", pinned);
        call_section(&mut r, &sb, &python);
    }
    r.finish();
}
