//! `zut mcp serve` driven by MCP clients: the official Python client
//! (`mcp`, installed by `.ci/mcp-servers` with `mcp-server-time`) and the
//! TypeScript SDK's client (`@modelcontextprotocol/sdk`, same script), each
//! skipped loudly where missing, for the everyday path; raw JSON-RPC lines
//! for cancellation and `list_changed`, which need exact timing.

mod support;

use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::*;

fn fake() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fake_server.py")
}

fn cache() -> PathBuf {
    match std::env::var_os("ZUT_MCP_CACHE") {
        Some(c) if !c.is_empty() => PathBuf::from(c),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/zut-ci/mcp"),
    }
}

fn py_cache() -> PathBuf {
    cache().join("py")
}

/// Writes past the test harness's capture, so a skip shows in every run.
fn loud(line: &str) {
    match std::fs::OpenOptions::new().write(true).open("/dev/stderr") {
        Ok(mut f) => {
            let _ = writeln!(f, "{line}");
        }
        Err(_) => eprintln!("{line}"),
    }
}

/// The fake MCP server as one of the user's servers, for serve to re-export.
fn user_server(sb: &Sandbox, args: &[&str]) {
    let mut a = vec![fake().display().to_string()];
    a.extend(args.iter().map(|s| s.to_string()));
    let doc = json!({"mcpServers": {"fake": {"command": "python3", "args": a}}});
    std::fs::write(sb.home().join("mcp.json"), doc.to_string()).unwrap();
}

#[test]
fn the_python_mcp_client_calls_built_in_extension_and_mcp_tools_through_zut() {
    let py = py_cache();
    if !py.join("mcp").is_dir() {
        loud(&format!(
            "SKIPPED: the Python mcp client is not installed in {} (offline?); run .ci/mcp-servers",
            py.display()
        ));
        return;
    }
    let sb = Sandbox::new();
    user_server(&sb, &[]);
    std::fs::write(sb.cwd().join("small.txt"), "hello\n").unwrap();
    let tool_ext = sb.fixture("fx-normal", &[]);
    let guard = sb.fixture("fx-guard", &[]);
    let server = json!({
        "command": env!("CARGO_BIN_EXE_zut"),
        "args": ["--ext", tool_ext, "--ext", guard, "mcp", "serve", "--yolo"],
        "env": {"ZUT_HOME": sb.home(), "PATH": search_path()},
        "cwd": sb.cwd(),
    });
    let calls = json!([
        {"name": "read", "arguments": {"path": "small.txt"}},
        {"name": "fx_normal_echo", "arguments": {"text": "from a client"}},
        {"name": "bash", "arguments": {"command": "rm -rf /nonexistent-zut-dir", "timeout": 5}},
        {"name": "mcp__fake__progress", "arguments": {"steps": 3, "delay_ms": 20}, "progress": true},
        {"name": "mcp__fake__echo", "arguments": {"text": "via zut"}}
    ]);
    let out = std::process::Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/serve_client.py"))
        .arg(server.to_string())
        .arg(calls.to_string())
        .env("PYTHONPATH", &py)
        .env("PATH", search_path())
        .current_dir(sb.cwd())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(r["server"], "zut");
    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for t in ["read", "bash", "fx_normal_echo", "mcp__fake__echo"] {
        assert!(tools.contains(&t), "{t} missing from {tools:?}");
    }
    let call = |i: usize| r["calls"][i].clone();
    assert_eq!(call(0)["content"][0]["text"], "hello");
    assert_eq!(call(1)["is_error"], false, "{:#}", call(1));
    assert!(call(1)["content"].to_string().contains("from a client"));
    // The extension's interceptor refuses it, even with --yolo.
    assert_eq!(call(2)["is_error"], true);
    assert!(call(2)["content"].to_string().contains("danger pattern"));
    assert_eq!(
        call(3)["progress"].as_array().unwrap().len(),
        3,
        "{:#}",
        call(3)
    );
    assert_eq!(call(3)["content"][0]["text"], "progress done");
    assert_eq!(call(4)["content"][0]["text"], "echo: via zut");
}

#[test]
fn the_typescript_sdk_client_calls_zut_tools_with_progress() {
    let modules = cache().join("npm/node_modules");
    if !modules.join("@modelcontextprotocol/sdk").is_dir() {
        loud(&format!(
            "SKIPPED: the MCP TypeScript SDK is not installed in {} (offline?); run .ci/mcp-servers",
            modules.display()
        ));
        return;
    }
    let sb = Sandbox::new();
    user_server(&sb, &[]);
    std::fs::write(sb.cwd().join("small.txt"), "hello\n").unwrap();
    let tool_ext = sb.fixture("fx-normal", &[]);
    let server = json!({
        "command": env!("CARGO_BIN_EXE_zut"),
        "args": ["--ext", tool_ext, "mcp", "serve",
                 "--tools", "read,write,fx_normal_echo,mcp__fake__progress"],
        "env": {"ZUT_HOME": sb.home(), "PATH": search_path()},
        "cwd": sb.cwd(),
    });
    let calls = json!([
        {"name": "read", "arguments": {"path": "small.txt"}},
        {"name": "write", "arguments": {"path": "x.txt", "content": "no"}},
        {"name": "fx_normal_echo", "arguments": {"text": "from node"}},
        {"name": "mcp__fake__progress", "arguments": {"steps": 2, "delay_ms": 20}, "progress": true}
    ]);
    let out = std::process::Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/serve_client_node.cjs"))
        .arg(server.to_string())
        .arg(calls.to_string())
        .env("NODE_PATH", &modules)
        .current_dir(sb.cwd())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(r["server"], "zut");
    assert_eq!(r["tools"].as_array().unwrap().len(), 4, "{r:#}");
    assert_eq!(r["calls"][0]["content"][0]["text"], "hello");
    assert_eq!(r["calls"][1]["is_error"], true);
    assert!(r["calls"][1]["content"].to_string().contains("--yolo"));
    assert!(!sb.cwd().join("x.txt").exists());
    assert!(r["calls"][2]["content"].to_string().contains("from node"));
    // The SDK runs notification handlers a tick after they arrive and drops
    // a call's progress handler once its answer is read, so a progress that
    // reaches it right before the answer can be lost on its side (under
    // load zut's writes of both may arrive together). zut sends every one
    // in order before the answer: the Python client's test counts them.
    let seen = r["calls"][3]["progress"].as_array().unwrap().len();
    assert!((1..=2).contains(&seen), "{:#}", r["calls"][3]);
}

/// A raw JSON-RPC client over zut's stdio.
struct Raw {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: crossbeam_channel::Receiver<Value>,
}

impl Raw {
    fn start(sb: &Sandbox, extra: &[&str]) -> Raw {
        let mut child = zut(sb)
            .args(["mcp", "serve"])
            .args(extra)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(stdout).lines() {
                let Ok(l) = l else { return };
                if let Ok(v) = serde_json::from_str::<Value>(&l) {
                    let _ = tx.send(v);
                }
            }
        });
        let mut raw = Raw {
            child,
            stdin,
            lines,
        };
        raw.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
        let init = raw.until(|m| m["id"] == 0);
        assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message matching `f` within 10 s; the others are collected.
    fn until(&mut self, f: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(m) if f(&m) => return m,
                Ok(_) => {}
                Err(_) => panic!("no matching message from zut mcp serve"),
            }
        }
    }

    fn finish(mut self) -> Vec<Value> {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success());
        self.lines.try_iter().collect()
    }
}

#[test]
fn a_cancelled_call_is_cancelled_downstream_and_gets_no_answer() {
    let sb = Sandbox::new();
    let rec = sb.path("rec.jsonl");
    user_server(&sb, &["--record", &rec.display().to_string()]);
    let mut c = Raw::start(&sb, &[]);
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "mcp__fake__hang", "arguments": {}}}));
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&rec).is_ok_and(|t| t.contains("\"hang\""))
    }));
    c.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "user"}}),
    );
    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mcp__fake__echo", "arguments": {"text": "after"}}}));
    let after = c.until(|m| m["id"] == 2 || m["id"] == 1);
    assert_eq!(after["id"], 2, "the cancelled call was answered: {after}");
    assert_eq!(after["result"]["content"][0]["text"], "echo: after");
    // bash without --yolo is refused, naming --yolo.
    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": "true", "timeout": 5}}}));
    let bash = c.until(|m| m["id"] == 3);
    assert_eq!(bash["result"]["isError"], true);
    assert!(bash["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("--yolo"));
    let rest = c.finish();
    assert!(!rest.iter().any(|m| m["id"] == 1), "{rest:#?}");
    let got = std::fs::read_to_string(&rec).unwrap();
    assert!(got.contains("notifications/cancelled"), "{got}");
}

#[test]
fn a_changed_tool_set_is_announced_with_list_changed() {
    let sb = Sandbox::new();
    user_server(&sb, &[]);
    let mut c = Raw::start(&sb, &["--tools", "mcp__fake__change,mcp__fake__added,read"]);
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let list = c.until(|m| m["id"] == 1);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "mcp__fake__change"]);
    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mcp__fake__change", "arguments": {}}}));
    c.until(|m| m["method"] == "notifications/tools/list_changed");
    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
    let list = c.until(|m| m["id"] == 3);
    assert!(list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "mcp__fake__added"));
    c.finish();
}
