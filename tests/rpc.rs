//! The real `zut --mode rpc` driven through its pipes by a small client:
//! every request type, malformed lines, the token gate, abort, queued
//! prompts, confirmations, reload, end-of-input shutdown, and the reference
//! clients in `examples/rpc/`.

mod support;

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::time::Duration;
use support::*;

/// How long any single line may take before the test fails (a guard
/// against hanging, not a measurement).
const LINE_GUARD: Duration = Duration::from_secs(30);

/// A client of one `zut --mode rpc` process.
struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: crossbeam_channel::Receiver<Value>,
    /// Lines read while looking for something else, oldest first.
    backlog: VecDeque<Value>,
    next_id: u64,
}

/// The zut command for RPC mode in `sb`, scripted provider on `script`.
fn rpc_command(sb: &Sandbox, exts: &[PathBuf], script_lines: &[Value]) -> std::process::Command {
    let s = script(sb, script_lines);
    let mut c = zut(sb);
    for e in exts {
        c.arg("-e").arg(e);
    }
    c.args(["--mode", "rpc", "--provider", "script", "--script", &s])
        .env("ZUT_SHUTDOWN_GRACE_MS", "800")
        .env("ZUT_KILL_GRACE_MS", "400")
        .env_remove("ZUT_RPC_TOKEN");
    c
}

impl Rpc {
    fn start(sb: &Sandbox, exts: &[PathBuf], script_lines: &[Value]) -> Rpc {
        Rpc::spawn(rpc_command(sb, exts, script_lines))
    }

    fn spawn(mut c: std::process::Command) -> Rpc {
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Rpc {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            backlog: VecDeque::new(),
            next_id: 0,
        }
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line from the pipe (not the backlog).
    fn read(&mut self) -> Option<Value> {
        match self.lines.recv_timeout(LINE_GUARD) {
            Ok(v) => Some(v),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => None,
            Err(_) => panic!(
                "no line from zut within {LINE_GUARD:?}; backlog {:?}",
                self.backlog
            ),
        }
    }

    /// Sends a request with a fresh id and returns its response; events
    /// read meanwhile go to the backlog.
    fn request(&mut self, kind: &str, fields: Value) -> Value {
        self.next_id += 1;
        let id = format!("r{}", self.next_id);
        let mut req = json!({"id": id, "type": kind});
        if let Value::Object(extra) = fields {
            req.as_object_mut().unwrap().extend(extra);
        }
        self.send_raw(&req.to_string());
        self.response(&json!(id))
    }

    /// Waits for the response carrying `id`.
    fn response(&mut self, id: &Value) -> Value {
        loop {
            let v = self.read().expect("zut exited before answering");
            if v["type"] == "response" && &v["id"] == id {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// Lines (backlog first) up to and including the first that matches.
    fn until(&mut self, f: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let v = match self.backlog.pop_front() {
                Some(v) => v,
                None => self
                    .read()
                    .unwrap_or_else(|| panic!("zut exited; seen {seen:#?}")),
            };
            let hit = f(&v);
            seen.push(v);
            if hit {
                return seen;
            }
        }
    }

    /// Lines up to and including the next event of type `t`.
    fn until_type(&mut self, t: &str) -> Vec<Value> {
        self.until(|v| v["type"] == t)
    }

    /// Closes stdin and returns the exit status and every remaining line.
    fn close(mut self) -> (Option<i32>, Vec<Value>) {
        self.stdin.take();
        let mut rest: Vec<Value> = self.backlog.drain(..).collect();
        while let Some(v) = self.read() {
            rest.push(v);
        }
        let status = self.child.wait().unwrap();
        (status.code(), rest)
    }
}

fn ok_data(r: &Value) -> &Value {
    assert_eq!(r["success"], true, "request failed: {r}");
    &r["data"]
}

fn types(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|v| v["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

fn pid_in(file: &Path) -> u32 {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines().next().unwrap().trim().parse().unwrap()
}

#[test]
fn queries_describe_the_extensions_tools_and_transcript() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let mut rpc = Rpc::start(&sb, &[ext], &[json!({"text": "Hello there"})]);

    let hello = rpc.request("hello", json!({}));
    let d = ok_data(&hello);
    assert_eq!(d["protocol_version"], 1);
    assert_eq!(d["provider"], "script");
    assert_eq!(d["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(ok_data(&rpc.request("ping", json!({})))["pong"], true);

    let state = rpc.request("get_state", json!({}));
    let d = ok_data(&state).clone();
    // Every mode keeps a session unless --no-session.
    assert!(
        d["session"]["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{d}"
    );
    assert_eq!(d["provider"], "script");
    assert_eq!(d["busy"], false);
    assert_eq!(d["queued"], 0);
    let ext0 = &d["extensions"][0];
    assert_eq!(ext0["name"], "fx-normal");
    assert_eq!(ext0["version"], "1.2.3");
    assert_eq!(ext0["source"], "flag");
    assert_eq!(ext0["running"], true);

    let commands = rpc.request("list_commands", json!({}));
    let list = ok_data(&commands)["commands"].as_array().unwrap().clone();
    let find = |n: &str| list.iter().find(|c| c["name"] == n).cloned();
    assert_eq!(find("reload-ext").unwrap()["extension"], Value::Null);
    assert_eq!(find("echo").unwrap()["extension"], "fx-normal");
    assert_eq!(find("echo").unwrap()["description"], "display the args");

    let tools = rpc.request("list_tools", json!({}));
    let tools = ok_data(&tools)["tools"].as_array().unwrap().clone();
    let tool = |n: &str| tools.iter().find(|t| t["name"] == n).cloned();
    assert_eq!(tool("bash").unwrap()["extension"], Value::Null);
    assert_eq!(tool("fx_normal_echo").unwrap()["extension"], "fx-normal");

    let empty = rpc.request("get_messages", json!({}));
    assert_eq!(ok_data(&empty)["messages"], json!([]));

    let p = rpc.request("prompt", json!({"message": "hi"}));
    assert_eq!(ok_data(&p)["queued"], false);
    let turn = rpc.until_type("done");
    let deltas: String = turn
        .iter()
        .filter(|v| v["type"] == "text_delta")
        .map(|v| v["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Hello there");
    let messages = rpc.request("get_messages", json!({}));
    let m = ok_data(&messages)["messages"].as_array().unwrap().clone();
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(m[0]["role"], "user");
    assert_eq!(m[0]["content"][0]["text"], "hi");
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(m[1]["content"][0]["text"], "Hello there");
    assert_eq!(
        ok_data(&rpc.request("get_state", json!({})))["message_count"],
        2
    );

    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn commands_run_extension_and_core_commands_and_drop_submit() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let mut rpc = Rpc::start(&sb, &[ext], &[json!({"echo": true})]);

    let r = rpc.request("command", json!({"text": "/echo hi there"}));
    assert_eq!(ok_data(&r)["queued"], false);
    let lines = rpc.until_type("done");
    let result = lines
        .iter()
        .find(|v| v["type"] == "command_result")
        .unwrap();
    assert_eq!(result["name"], "echo");
    assert_eq!(result["action"], "display");
    assert_eq!(result["text"], "echo: hi there");

    // The leading slash is optional; a prompt action runs a turn.
    let r = rpc.request("command", json!({"text": "do-prompt go"}));
    ok_data(&r);
    let lines = rpc.until_type("done");
    let said = lines
        .iter()
        .find(|v| v["type"] == "assistant_message")
        .unwrap();
    assert_eq!(said["text"], "from command: go");

    // One-way frames become events; `submit` has no editor here.
    ok_data(&rpc.request("command", json!({"text": "/chrome"})));
    let lines = rpc.until_type("done");
    let t = types(&lines);
    for want in [
        "ext_notify",
        "ext_status",
        "ext_widget",
        "ext_alert",
        "ext_clear_notes",
    ] {
        assert!(t.iter().any(|x| x == want), "no {want} in {t:?}");
    }
    assert!(!t.iter().any(|x| x == "ext_submit"), "{t:?}");

    // An unknown command is accepted as a request and fails as an event.
    ok_data(&rpc.request("command", json!({"text": "/nope"})));
    let lines = rpc.until_type("done");
    let err = lines.iter().find(|v| v["type"] == "error").unwrap();
    assert!(err["message"]
        .as_str()
        .unwrap()
        .contains("unknown command /nope"));

    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn malformed_lines_and_unknown_types_are_answered_and_serving_goes_on() {
    let sb = Sandbox::new();
    let mut rpc = Rpc::start(&sb, &[], &[]);
    for bad in ["this is not json", "[1,2,3]", "{\"id\":5", "\"text\""] {
        rpc.send_raw(bad);
        let r = rpc.response(&Value::Null);
        assert_eq!(r["success"], false, "{bad}: {r}");
        assert_eq!(r["command"], Value::Null);
        assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
    rpc.send_raw(r#"{"id":"x","type":"dance"}"#);
    let r = rpc.response(&json!("x"));
    assert_eq!(r["success"], false);
    assert_eq!(r["command"], "dance");
    assert!(r["error"].as_str().unwrap().contains("\"dance\""), "{r}");

    rpc.send_raw(r#"{"id":7,"message":"no type"}"#);
    let r = rpc.response(&json!(7));
    assert_eq!(r["success"], false);

    let r = rpc.request("prompt", json!({}));
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("message"), "{r}");
    let r = rpc.request("switch", json!({}));
    assert_eq!(r["success"], false);
    let r = rpc.request("confirm", json!({"request_id": 1, "decision": "sure"}));
    assert_eq!(r["success"], false);
    let r = rpc.request("confirm", json!({"request_id": 99, "decision": "allow"}));
    assert_eq!(r["success"], false, "nothing waits for confirmation 99");

    // Invalid UTF-8 is a bad line too.
    rpc.stdin
        .as_mut()
        .unwrap()
        .write_all(b"\xff\xfe\n")
        .unwrap();
    let r = rpc.response(&Value::Null);
    assert_eq!(r["success"], false);

    assert_eq!(ok_data(&rpc.request("ping", json!({})))["pong"], true);
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn a_token_gates_everything_behind_hello() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let with_token = |sb: &Sandbox| {
        let mut c = rpc_command(sb, std::slice::from_ref(&ext), &[]);
        c.env("ZUT_RPC_TOKEN", "s3cret");
        Rpc::spawn(c)
    };

    // Anything but hello first: one failure, nothing else, status 1.
    let mut rpc = with_token(&sb);
    let r = rpc.request("ping", json!({}));
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("hello"), "{r}");
    let (code, rest) = rpc.close();
    assert_eq!(code, Some(1));
    assert!(rest.is_empty(), "an unauthenticated client saw {rest:?}");

    // A wrong token: the same.
    let mut rpc = with_token(&sb);
    let r = rpc.request("hello", json!({"token": "guess"}));
    assert_eq!(r["success"], false);
    assert!(rpc.backlog.is_empty());
    let (code, rest) = rpc.close();
    assert_eq!(code, Some(1));
    assert!(rest.is_empty(), "{rest:?}");

    // A malformed first line: the same.
    let mut rpc = with_token(&sb);
    rpc.send_raw("hello?");
    assert_eq!(rpc.response(&Value::Null)["success"], false);
    let (code, _) = rpc.close();
    assert_eq!(code, Some(1));

    // The right token: the events held back so far follow the response.
    let mut rpc = with_token(&sb);
    let r = rpc.request("hello", json!({"token": "s3cret"}));
    assert_eq!(ok_data(&r)["protocol_version"], 1);
    assert!(
        rpc.backlog.is_empty(),
        "events before the hello response: {:?}",
        rpc.backlog
    );
    let loaded = rpc.until_type("ext_loaded");
    assert_eq!(loaded.last().unwrap()["extension"], "fx-normal");
    assert_eq!(ok_data(&rpc.request("ping", json!({})))["pong"], true);
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn events_dropped_before_hello_are_counted_in_its_answer_and_a_warning() {
    let sb = Sandbox::new();
    // Two extensions that each say 600 things while loading: more than
    // the 1000 events kept for a client that has not said hello yet.
    let exts: Vec<PathBuf> = ["n1", "n2"]
        .iter()
        .map(|n| plan_ext(&sb, json!({"name": n, "notify": 600})))
        .collect();
    let mut c = rpc_command(&sb, &exts, &[]);
    c.env("ZUT_RPC_TOKEN", "s3cret");
    let mut rpc = Rpc::spawn(c);
    let r = rpc.request("hello", json!({"token": "s3cret"}));
    let dropped = ok_data(&r)["dropped_events"].as_u64().unwrap();
    assert!(dropped >= 200, "{r}");
    let held = rpc.until(|v| {
        v["type"] == "ext_warning"
            && v["extension"] == "zut"
            && v["message"].as_str().unwrap().contains("before hello")
    });
    assert_eq!(held.len(), 1001, "the 1000 kept, then the warning");
    let warning = held.last().unwrap()["message"].as_str().unwrap();
    assert!(
        warning.starts_with(&format!("{dropped} events")),
        "{warning}"
    );
    let (code, rest) = rpc.close();
    assert_eq!(code, Some(0));
    assert!(
        !rest
            .iter()
            .any(|v| v["type"] == "ext_warning" && v["extension"] == "zut"),
        "said once: {rest:?}"
    );

    // Nothing dropped: the answer says 0 and no warning comes.
    let mut c = rpc_command(&sb, &exts[..1], &[]);
    c.env("ZUT_RPC_TOKEN", "s3cret");
    let mut rpc = Rpc::spawn(c);
    let r = rpc.request("hello", json!({"token": "s3cret"}));
    assert_eq!(ok_data(&r)["dropped_events"], 0, "{r}");
    assert_eq!(ok_data(&rpc.request("ping", json!({})))["pong"], true);
    let (_, rest) = rpc.close();
    assert!(
        !rest
            .iter()
            .any(|v| v["type"] == "ext_warning" && v["extension"] == "zut"),
        "{rest:?}"
    );
}

#[test]
fn abort_ends_a_delayed_step() {
    let sb = Sandbox::new();
    let mut rpc = Rpc::start(
        &sb,
        &[],
        &[
            json!({"delay_ms": 60_000, "text": "too late"}),
            json!({"text": "after"}),
        ],
    );
    ok_data(&rpc.request("prompt", json!({"message": "slow"})));
    rpc.until_type("turn_start");
    assert_eq!(ok_data(&rpc.request("get_state", json!({})))["busy"], true);
    let r = rpc.request("abort", json!({}));
    assert_eq!(ok_data(&r)["was_busy"], true);
    let lines = rpc.until_type("done");
    let end = lines.iter().find(|v| v["type"] == "turn_end").unwrap();
    assert_eq!(end["stop"], "aborted");
    assert!(
        !lines.iter().any(|v| v["type"] == "text_delta"),
        "{lines:?}"
    );

    // Still serving, and the next prompt gets the next script line.
    ok_data(&rpc.request("prompt", json!({"message": "again"})));
    let lines = rpc.until_type("done");
    let said = lines
        .iter()
        .find(|v| v["type"] == "assistant_message")
        .unwrap();
    assert_eq!(said["text"], "after");
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

/// A bash call that waits for confirmation: it holds a turn open for as
/// long as the test needs, without timing.
fn bash_call(id: &str, command: &str) -> Value {
    json!({"tool_calls": [{"id": id, "name": "bash", "args": {"command": command, "timeout": 10}}]})
}

#[test]
fn confirmations_round_trip_allow_and_deny() {
    let sb = Sandbox::new();
    let mut rpc = Rpc::start(
        &sb,
        &[],
        &[
            bash_call("c1", "echo yes > allowed.txt"),
            json!({"text": "ran it"}),
            bash_call("c2", "echo no > denied.txt"),
            json!({"text": "skipped it"}),
        ],
    );
    ok_data(&rpc.request("prompt", json!({"message": "run it"})));
    let lines = rpc.until_type("confirmation_requested");
    let ask = lines.last().unwrap().clone();
    assert_eq!(ask["tool_name"], "bash");
    assert_eq!(ask["tool_id"], "c1");
    assert!(
        ask["preview"].as_str().unwrap().contains("allowed.txt"),
        "{ask}"
    );
    let id = ask["request_id"].clone();
    ok_data(&rpc.request("confirm", json!({"request_id": id, "decision": "allow"})));
    let lines = rpc.until_type("done");
    let result = lines.iter().find(|v| v["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(
        std::fs::read_to_string(sb.cwd().join("allowed.txt")).unwrap(),
        "yes\n"
    );
    // Answered once; a second answer is refused.
    let again = rpc.request("confirm", json!({"request_id": id, "decision": "allow"}));
    assert_eq!(again["success"], false);

    ok_data(&rpc.request("prompt", json!({"message": "run that"})));
    let ask = rpc.until_type("confirmation_requested").pop().unwrap();
    assert_ne!(ask["request_id"], id);
    ok_data(&rpc.request(
        "confirm",
        json!({"request_id": ask["request_id"], "decision": "deny"}),
    ));
    let lines = rpc.until_type("done");
    let result = lines.iter().find(|v| v["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], true, "{result}");
    assert!(!sb.cwd().join("denied.txt").exists());
    let said = lines
        .iter()
        .find(|v| v["type"] == "assistant_message")
        .unwrap();
    assert_eq!(said["text"], "skipped it");
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn a_call_that_can_only_fail_is_refused_before_anyone_is_asked() {
    let sb = Sandbox::new();
    std::fs::write(sb.cwd().join("f.txt"), "one\n").unwrap();
    let mut rpc = Rpc::start(
        &sb,
        &[],
        &[
            json!({"tool_calls": [
                {"id": "c1", "name": "bash", "args": {"command": "echo hi"}},
                {"id": "c2", "name": "edit", "args": {"path": "f.txt",
                    "edits": [{"oldText": "absent", "newText": "x"}]}}
            ]}),
            json!({"text": "fixed"}),
        ],
    );
    ok_data(&rpc.request("prompt", json!({"message": "go"})));
    let lines = rpc.until_type("done");
    assert!(
        !types(&lines).iter().any(|t| t == "confirmation_requested"),
        "{lines:?}"
    );
    let results: Vec<&Value> = lines
        .iter()
        .filter(|v| v["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["is_error"] == true));
    assert!(
        results[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("timeout"),
        "{}",
        results[0]
    );
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn yolo_runs_tools_without_asking() {
    let sb = Sandbox::new();
    let mut c = rpc_command(
        &sb,
        &[],
        &[bash_call("c1", "echo y > y.txt"), json!({"text": "ok"})],
    );
    c.arg("--yolo");
    let mut rpc = Rpc::spawn(c);
    ok_data(&rpc.request("prompt", json!({"message": "go"})));
    let lines = rpc.until_type("done");
    assert!(!types(&lines).iter().any(|t| t == "confirmation_requested"));
    assert!(sb.cwd().join("y.txt").exists());
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn prompts_queue_behind_a_running_turn_and_abort_keeps_or_drops_them() {
    let sb = Sandbox::new();
    let mut rpc = Rpc::start(
        &sb,
        &[],
        &[
            bash_call("c1", "true"),
            json!({"echo": true}),
            bash_call("c2", "true"),
            json!({"echo": true}),
        ],
    );
    // Turn 1 waits for its confirmation; prompt 2 queues behind it.
    ok_data(&rpc.request("prompt", json!({"message": "first"})));
    rpc.until_type("confirmation_requested");
    let r = rpc.request("prompt", json!({"message": "second"}));
    assert_eq!(ok_data(&r)["queued"], true);
    assert_eq!(ok_data(&r)["position"], 1);
    let queued = rpc.until_type("queued").pop().unwrap();
    assert_eq!(queued["text"], "second");
    let s = rpc.request("get_state", json!({}));
    assert_eq!(ok_data(&s)["busy"], true);
    assert_eq!(ok_data(&s)["queued"], 1);

    // Abort without drop_queued: turn 1 ends aborted, "second" still runs.
    ok_data(&rpc.request("abort", json!({})));
    let lines = rpc.until_type("done");
    let end = lines.iter().find(|v| v["type"] == "turn_end").unwrap();
    assert_eq!(end["stop"], "aborted", "{lines:?}");
    let lines = rpc.until_type("done");
    let said = lines
        .iter()
        .find(|v| v["type"] == "assistant_message")
        .unwrap();
    assert_eq!(said["text"], "second");

    // Abort with drop_queued: "fourth" never runs; "fifth" gets its turn.
    ok_data(&rpc.request("prompt", json!({"message": "third"})));
    rpc.until_type("confirmation_requested");
    let r = rpc.request("prompt", json!({"message": "fourth"}));
    assert_eq!(ok_data(&r)["queued"], true);
    ok_data(&rpc.request("abort", json!({"drop_queued": true})));
    rpc.until_type("done");
    ok_data(&rpc.request("prompt", json!({"message": "fifth"})));
    let lines = rpc.until_type("done");
    let users: Vec<&Value> = lines
        .iter()
        .filter(|v| v["type"] == "user_message")
        .collect();
    assert_eq!(users.len(), 1, "{lines:?}");
    assert_eq!(users[0]["text"], "fifth");
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn reload_starts_new_extension_processes() {
    let sb = Sandbox::new();
    let pidfile = sb.path("fx.pid");
    let ext = sb.fixture("fx-normal", &[opt("pidfile", &pidfile)]);
    let mut rpc = Rpc::start(&sb, &[ext], &[]);
    ok_data(&rpc.request("ping", json!({})));
    rpc.until_type("ext_loaded");
    let first = pid_in(&pidfile);

    ok_data(&rpc.request("reload_extensions", json!({})));
    let lines = rpc.until_type("reload");
    let report = lines.last().unwrap();
    assert_eq!(report["stopped"], 1);
    assert_eq!(report["ready"], 1);
    assert_eq!(report["errors"], json!([]));
    let second = pid_in(&pidfile);
    assert_ne!(first, second);
    assert!(
        !pid_exists(first),
        "the old extension {first} is still there"
    );

    // The same through the slash command.
    ok_data(&rpc.request("command", json!({"text": "/reload-ext"})));
    let lines = rpc.until_type("done");
    assert!(types(&lines).iter().any(|t| t == "reload"), "{lines:?}");
    let third = pid_in(&pidfile);
    assert_ne!(second, third);
    let s = rpc.request("get_state", json!({}));
    assert_eq!(ok_data(&s)["extensions"][0]["running"], true);
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
    assert!(!pid_exists(third));
}

#[test]
fn a_reload_keeps_the_deferred_tools_the_model_activated() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let log = sb.path("log.jsonl");
    let mut c = rpc_command(
        &sb,
        &[ext],
        &[
            json!({"tool_calls": [{"id": "l", "name": "fx_loader", "args": {}}]}),
            json!({"text": "loaded"}),
            json!({"text": "after the reload"}),
        ],
    );
    c.arg("--script-log").arg(&log);
    let mut rpc = Rpc::spawn(c);
    rpc.until_type("ext_loaded");
    ok_data(&rpc.request("prompt", json!({"message": "load it"})));
    rpc.until_type("done");
    ok_data(&rpc.request("command", json!({"text": "/reload-ext"})));
    // A command ends with its own `done`, after the reload's report.
    let lines = rpc.until_type("done");
    assert!(types(&lines).iter().any(|t| t == "reload"), "{lines:?}");
    ok_data(&rpc.request("prompt", json!({"message": "again"})));
    rpc.until_type("done");
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
    let requests = json_lines(&std::fs::read(&log).unwrap());
    let names = |i: usize| tool_names(&requests[i]);
    assert!(!names(0).contains(&"fx_hidden".to_string()));
    assert!(names(1).contains(&"fx_hidden".to_string()));
    // The model was told it may call it from now on: a reload of the
    // extension that still offers it keeps it.
    assert!(
        names(2).contains(&"fx_hidden".to_string()),
        "{:?}",
        names(2)
    );
}

/// The resident memory of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_notify_flood_to_a_client_that_does_not_read_keeps_memory_bounded() {
    let sb = Sandbox::new();
    let ext = sb.fixture("flood-notify", &[]);
    let mut child = rpc_command(&sb, &[ext], &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Nobody reads stdout: the pipe fills within a moment, and then every
    // event is either queued within the writer's bounds or dropped.
    std::thread::sleep(Duration::from_millis(1000));
    let early = rss_kib(pid);
    std::thread::sleep(Duration::from_millis(2000));
    let late = rss_kib(pid);
    // Unbounded, the flood grew the process by about 1.8 MB/s.
    assert!(
        late < early + 2048,
        "memory grew from {early} KiB to {late} KiB in 2 s"
    );
    // The client reads again: the stream says what it missed.
    let stdout = child.stdout.take().unwrap();
    let lines = crossbeam_channel::unbounded();
    let tx = lines.0.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + LINE_GUARD;
    let mut said = false;
    while !said && std::time::Instant::now() < deadline {
        if let Ok(line) = lines.1.recv_timeout(Duration::from_millis(100)) {
            let v: Value = serde_json::from_str(&line).expect("a JSON line");
            said = v["type"] == "ext_warning"
                && v["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("events were dropped"));
        }
    }
    assert!(said, "no warning about the dropped events");
    // End of input ends zut and its extension while the stream is read.
    drop(child.stdin.take());
    let deadline = std::time::Instant::now() + LINE_GUARD;
    while child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "zut did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn end_of_input_shuts_down_and_leaves_no_child() {
    let sb = Sandbox::new();
    let pidfile = sb.path("fx.pid");
    let marker = sb.path("frames.txt");
    let ext = sb.fixture(
        "fx-normal",
        &[opt("pidfile", &pidfile), opt("marker", &marker)],
    );
    let mut rpc = Rpc::start(&sb, &[ext], &[]);
    ok_data(&rpc.request("ping", json!({})));
    rpc.until_type("ext_loaded");
    let pid = pid_in(&pidfile);
    assert!(pid_exists(pid));
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
    assert!(!pid_exists(pid), "extension {pid} outlived zut");
    let frames = std::fs::read_to_string(&marker).unwrap();
    assert!(
        frames.lines().any(|l| l == "shutdown"),
        "no graceful shutdown: {frames}"
    );
}

#[test]
fn session_requests_are_accepted_and_answered_by_events() {
    let sb = Sandbox::new();
    let mut rpc = Rpc::start(&sb, &[], &[json!({"text": "one"}), json!({"text": "two"})]);
    let outcome = |v: &Value| v["type"] == "session" || v["type"] == "error";
    for (kind, fields) in [
        ("clear", json!({})),
        ("fork", json!({})),
        ("switch", json!({"session": "nope"})),
        ("compact", json!({"instructions": "keep it short"})),
    ] {
        let r = rpc.request(kind, fields);
        assert_eq!(r["command"], kind);
        ok_data(&r);
        rpc.until(outcome);
    }
    // set_model applies before the next prompt, which is queued behind it.
    ok_data(&rpc.request("set_model", json!({"model": "other-model"})));
    ok_data(&rpc.request("prompt", json!({"message": "hi"})));
    rpc.until_type("done");
    let s = rpc.request("get_state", json!({}));
    assert_eq!(ok_data(&s)["model"], "other-model");
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

// ----- the reference clients -----

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rpc")
}

/// Runs a reference client against the real binary with a script that
/// asks to run bash, and returns its exit status and output.
fn run_client(program: &str, client: &str, answer: &str) -> (Sandbox, std::process::Output) {
    let sb = Sandbox::new();
    let s = script(
        &sb,
        &[
            json!({"text": "Let me write it. ", "tool_calls": [{"id": "c1", "name": "bash", "args": {"command": "echo hi > from-client.txt", "timeout": 10}}]}),
            json!({"text": "All written."}),
        ],
    );
    let out = std::process::Command::new(program)
        .arg(examples().join(client))
        .args([
            answer,
            "make the file",
            "--",
            "--provider",
            "script",
            "--script",
            &s,
        ])
        .current_dir(sb.cwd())
        .env("ZUT_BIN", env!("CARGO_BIN_EXE_zut"))
        .env("ZUT_HOME", sb.home())
        .env("PATH", search_path())
        .env_remove("ZUT_RPC_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (sb, out)
}

fn check_client(program: &str, client: &str) {
    let (sb, out) = run_client(program, client, "--yes");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.contains("Let me write it."), "{stdout}");
    assert!(stdout.contains("All written."), "{stdout}");
    assert!(
        sb.cwd().join("from-client.txt").exists(),
        "{stdout}\n{stderr}"
    );

    let (sb, out) = run_client(program, client, "--no");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("All written."), "{stdout}");
    assert!(!sb.cwd().join("from-client.txt").exists());
}

#[test]
fn the_python_client_streams_and_answers_confirmations() {
    check_client("python3", "client.py");
}

#[test]
fn the_node_client_streams_and_answers_confirmations() {
    check_client("node", "client.js");
}

#[test]
fn a_signal_shuts_down_like_end_of_input_with_status_130() {
    let sb = Sandbox::new();
    let pidfile = sb.path("fx.pid");
    let ext = sb.fixture("fx-normal", &[opt("pidfile", &pidfile)]);
    let mut rpc = Rpc::start(&sb, &[ext], &[json!({"delay_ms": 60_000, "text": "never"})]);
    ok_data(&rpc.request("prompt", json!({"message": "wait"})));
    rpc.until_type("turn_start");
    let pid = pid_in(&pidfile);
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(rpc.child.id() as i32, libc::SIGTERM) };
    let status = rpc.child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!pid_exists(pid), "extension {pid} outlived zut");
}

#[test]
fn list_tools_follows_a_reload_that_changes_the_tools() {
    let sb = Sandbox::new();
    let ext = sb.fixture_as("fx-normal", "tl-one", &[]);
    let mut rpc = Rpc::start(&sb, std::slice::from_ref(&ext), &[]);
    rpc.until_type("ext_loaded");
    let names = |rpc: &mut Rpc| -> Vec<String> {
        let r = rpc.request("list_tools", json!({}));
        ok_data(&r)["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let first = names(&mut rpc);
    assert!(first.iter().any(|n| n == "tl_one_echo"), "{first:?}");
    // Asked again with nothing changed: the same answer.
    assert_eq!(names(&mut rpc), first);

    // The same directory now holds an extension with other tool names.
    let manifest = ext.join("extension.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("tl-one", "tl-two")).unwrap();
    ok_data(&rpc.request("reload_extensions", json!({})));
    rpc.until_type("reload");
    let second = names(&mut rpc);
    assert!(second.iter().any(|n| n == "tl_two_echo"), "{second:?}");
    assert!(!second.iter().any(|n| n == "tl_one_echo"), "{second:?}");
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn list_commands_lists_every_built_in_rpc_runs_and_help_works() {
    let sb = Sandbox::new();
    let mut rpc = Rpc::start(&sb, &[], &[]);
    let r = rpc.request("list_commands", json!({}));
    let listed: Vec<String> = ok_data(&r)["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["extension"].is_null())
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = zut::commands::available(zut::commands::Mode::Rpc)
        .map(|b| b.name.to_string())
        .collect();
    assert_eq!(listed, expected);
    for name in [
        "help",
        "model",
        "new",
        "fork",
        "resume",
        "switch",
        "compact",
        "reload-ext",
    ] {
        assert!(
            listed.iter().any(|n| n == name),
            "{name} missing: {listed:?}"
        );
    }
    let r = rpc.request("command", json!({"text": "/help"}));
    ok_data(&r);
    let seen = rpc.until_type("done");
    let help = seen
        .iter()
        .find(|v| v["type"] == "command_result")
        .unwrap_or_else(|| panic!("no command_result in {seen:#?}"));
    assert_eq!(help["action"], "display");
    assert!(help["text"].as_str().unwrap().contains("/switch"), "{help}");
    assert!(!help["text"].as_str().unwrap().contains("/tree"), "{help}");
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn clear_answers_after_it_took_effect_so_a_read_right_after_sees_it() {
    let sb = Sandbox::new();
    let replies: Vec<Value> = (0..5)
        .map(|i| json!({"text": format!("answer {i}")}))
        .collect();
    let mut rpc = Rpc::start(&sb, &[], &replies);
    for run in 0..5 {
        ok_data(&rpc.request("prompt", json!({"message": format!("hi {run}")})));
        rpc.until_type("done");
        let before = rpc.request("get_messages", json!({}));
        assert_eq!(ok_data(&before)["messages"].as_array().unwrap().len(), 2);
        // Pipelined: the read is sent before the clear is answered.
        rpc.send_raw(&json!({"id": format!("c{run}"), "type": "clear"}).to_string());
        rpc.send_raw(&json!({"id": format!("m{run}"), "type": "get_messages"}).to_string());
        let cleared = rpc.response(&json!(format!("c{run}")));
        ok_data(&cleared);
        // The new session's event came before the answer.
        assert!(
            rpc.backlog
                .iter()
                .any(|v| v["type"] == "session" && v["reason"] == "new"),
            "run {run}: {:?}",
            rpc.backlog
        );
        rpc.backlog.clear();
        let messages = rpc.response(&json!(format!("m{run}")));
        assert_eq!(ok_data(&messages)["messages"], json!([]), "run {run}");
        let state = rpc.request("get_state", json!({}));
        assert_eq!(ok_data(&state)["message_count"], 0, "run {run}");
    }
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}

#[test]
fn sigterm_ends_rpc_within_a_second_while_its_client_does_not_read() {
    use std::os::fd::AsRawFd;
    let sb = Sandbox::new();
    let mut child = rpc_command(&sb, &[], &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Far more answers than the pipe and the writer's queue hold, and
    // nobody reading them: zut's loop ends up waiting to write.
    let pings: String = (0..20_000)
        .map(|i| format!("{{\"id\":{i},\"type\":\"ping\"}}\n"))
        .collect();
    stdin.write_all(pings.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let full = eventually(Duration::from_secs(30), || {
        let (queued, capacity) = support::pipe_fill(stdout.as_raw_fd());
        capacity > 0 && queued + 4096 > capacity
    });
    assert!(full, "stdout never filled up");
    let t = std::time::Instant::now();
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let pid = child.id() as i32;
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = rx.recv_timeout(Duration::from_secs(10));
    let elapsed = t.elapsed();
    if status.is_err() {
        // SAFETY: killing our own child that outlived the test.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let code = status.ok().and_then(|s| s.ok()).and_then(|s| s.code());
    assert_eq!(code, Some(130));
    assert!(elapsed <= Duration::from_secs(1), "took {elapsed:?}");
    drop((stdin, stdout));
}

#[test]
fn an_approving_interceptor_lets_a_call_skip_the_dialog() {
    let sb = Sandbox::new();
    let approver = plan_ext(
        &sb,
        json!({"name": "approver", "intercept": ["tool_call"],
               "answers": {"tool_call": {"decision": "approve"}}}),
    );
    let mut rpc = Rpc::start(
        &sb,
        &[approver],
        &[bash_call("c1", "echo ok > ok.txt"), json!({"text": "done"})],
    );
    ok_data(&rpc.request("prompt", json!({"message": "go"})));
    let lines = rpc.until_type("done");
    assert!(
        !types(&lines).iter().any(|t| t == "confirmation_requested"),
        "{lines:?}"
    );
    assert!(sb.cwd().join("ok.txt").exists());
    let (code, _) = rpc.close();
    assert_eq!(code, Some(0));
}
