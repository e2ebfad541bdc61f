//! Every example extension, run through the real binary the way its README
//! shows: the examples are documentation that must keep working.

mod support;

use serde_json::json;
use std::path::PathBuf;
use support::*;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/extensions")
        .join(name)
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn hello_py_commands() {
    let sb = Sandbox::new();
    let run = |args: &[&str]| {
        zut(&sb)
            .arg("--ext")
            .arg(example("hello-py"))
            .args(args)
            .output()
            .unwrap()
    };
    assert_eq!(stdout(&run(&["-p", "/hello zut"])), "Hello, zut!\n");
    let ping = run(&["-p", "/ping"]);
    assert_eq!(stdout(&ping), "");
    assert!(String::from_utf8_lossy(&ping.stderr).contains("[hello-py] pong"));
    let s = script(&sb, &[json!({"echo": true})]);
    let greet = stdout(&run(&[
        "--provider",
        "script",
        "--script",
        &s,
        "-p",
        "/greet Ada",
    ]));
    assert!(greet.contains("Ada"), "{greet}");
}

#[test]
fn clock_node_commands_and_status() {
    let sb = Sandbox::new();
    let run = |args: &[&str]| {
        zut(&sb)
            .arg("--ext")
            .arg(example("clock-node"))
            .args(args)
            .output()
            .unwrap()
    };
    let now = stdout(&run(&["-p", "/now"]));
    assert!(now.contains("local") && now.contains("iso"), "{now}");
    let events = json_lines(stdout(&run(&["--mode", "json"])).as_bytes());
    assert_eq!(events[0]["type"], "ext_loaded");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "ext_status" && e["key"] == "clock"),
        "{events:?}"
    );
}

#[test]
fn weather_py_tool() {
    let sb = Sandbox::new();
    let (out, _) = run_scripted(
        &sb,
        &[example("weather-py")],
        &[
            json!({"tool_calls": [{"id": "w1", "name": "weather", "args": {"city": "Berlin"}}, {"id": "w2", "name": "weather", "args": {}}]}),
            json!({"text": "done"}),
        ],
        &["--mode", "json", "go"],
    );
    let results: Vec<_> = json_lines(stdout(&out).as_bytes())
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results[0]["is_error"], false);
    assert!(results[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Berlin"));
    assert_eq!(results[0]["extension"], "weather-py");
    assert_eq!(
        results[1]["is_error"], true,
        "a missing city is the model's error to fix"
    );
}

#[test]
fn guard_sh_blocks_dangerous_commands() {
    let sb = Sandbox::new();
    let (out, _) = run_scripted(
        &sb,
        &[example("guard-sh")],
        &[
            json!({"tool_calls": [{"id": "c1", "name": "bash", "args": {"command": "sudo rm -rf /", "timeout": 5}}]}),
            json!({"tool_calls": [{"id": "c2", "name": "bash", "args": {"command": "echo safe", "timeout": 5}}]}),
            json!({"text": "done"}),
        ],
        &["--yolo", "--mode", "json", "go"],
    );
    let events = json_lines(stdout(&out).as_bytes());
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool_blocked" && e["id"] == "c1"),
        "{events:?}"
    );
    let safe = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "c2")
        .unwrap();
    assert_eq!(safe["content"][0]["text"], "safe\n");
}

#[test]
fn redact_py_hides_keys_and_adds_context() {
    let sb = Sandbox::new();
    let (out, requests) = run_scripted(
        &sb,
        &[example("redact-py")],
        &[json!({"text": "key sk-ant-api03-abcdefghijklmnop1234 here"})],
        &["-p", "go"],
    );
    let text = stdout(&out);
    assert!(
        text.contains("[redacted]") && !text.contains("sk-ant-api03"),
        "{text}"
    );
    let request = &requests[0];
    assert!(
        request["hidden_context"][0]
            .as_str()
            .unwrap()
            .starts_with("[redact-py]"),
        "{request}"
    );
}

#[test]
fn rust_echo_command_and_tool() {
    build_example("zut-example-echo");
    let sb = Sandbox::new();
    let out = zut(&sb)
        .arg("--ext")
        .arg(example("rust-echo"))
        .args(["-p", "/echo hello there"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "hello there\n");
    let (out, _) = run_scripted(
        &sb,
        &[example("rust-echo")],
        &[
            json!({"tool_calls": [{"id": "e1", "name": "rust_echo", "args": {"text": "ab", "repeat": 3}}]}),
            json!({"text": "done"}),
        ],
        &["--mode", "json", "go"],
    );
    let events = json_lines(stdout(&out).as_bytes());
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "e1")
        .unwrap();
    assert_eq!(result["content"][0]["text"], "ababab");
    assert_eq!(result["extension"], "rust-echo");
}

/// The todo list lives in the session: a second run that continues it
/// sees what the first added.
#[test]
fn todo_keeps_its_list_in_the_session() {
    build_example("zut-example-todo");
    let sb = Sandbox::new();
    let call = |id: &str, args: serde_json::Value| json!({"tool_calls": [{"id": id, "name": "todo", "args": args}]});
    let (out, _) = run_scripted(
        &sb,
        &[example("todo")],
        &[
            call("t1", json!({"action": "add", "text": "buy milk"})),
            call("t2", json!({"action": "add", "text": "call Ada"})),
            call("t3", json!({"action": "toggle", "index": 1})),
            json!({"text": "noted"}),
        ],
        &["--mode", "json", "plan my day"],
    );
    let events = json_lines(stdout(&out).as_bytes());
    let last = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "t3")
        .unwrap();
    let listing = last["content"][0]["text"].as_str().unwrap();
    assert!(
        listing.contains("buy milk") && listing.contains("call Ada"),
        "{listing}"
    );

    let (out, _) = run_scripted(
        &sb,
        &[example("todo")],
        &[
            call("t4", json!({"action": "list"})),
            json!({"text": "still there"}),
        ],
        &["--continue", "--mode", "json", "what is left?"],
    );
    let events = json_lines(stdout(&out).as_bytes());
    let listed = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "t4")
        .unwrap();
    assert_eq!(
        listed["content"][0]["text"], last["content"][0]["text"],
        "the continued session restores the list: {events:?}"
    );
}

/// A plan started through the tool shows as a widget, and every later
/// model request carries the current phase as hidden context; the bundled
/// skill is offered to the model.
#[test]
fn tasked_phases_plan_widget_context_and_skill() {
    build_example("zut-example-tasked-phases");
    let sb = Sandbox::new();
    let (out, requests) = run_scripted(
        &sb,
        &[example("tasked-phases")],
        &[
            json!({"tool_calls": [{"id": "p1", "name": "phase_advance", "args": {"phases": ["parse", "ship"]}}]}),
            json!({"tool_calls": [{"id": "p2", "name": "phase_advance", "args": {}}]}),
            json!({"text": "shipped"}),
        ],
        &["--mode", "json", "do it in phases"],
    );
    let events = json_lines(stdout(&out).as_bytes());
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "ext_widget" && e["extension"] == "tasked-phases"),
        "{events:?}"
    );
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0]["hidden_context"], json!([]));
    let ctx = |i: usize| {
        requests[i]["hidden_context"][0]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert!(ctx(1).contains("phase 1/2: parse"), "{}", ctx(1));
    assert!(ctx(2).contains("phase 2/2: ship"), "{}", ctx(2));
    assert!(
        requests[0]["system"]
            .as_str()
            .unwrap()
            .contains("Split a larger task into ordered phases"),
        "{}",
        requests[0]["system"]
    );
    let shown = zut(&sb)
        .arg("--ext")
        .arg(example("tasked-phases"))
        .args(["-p", "/phases"])
        .output()
        .unwrap();
    assert!(stdout(&shown).contains("no plan"), "{}", stdout(&shown));
}

#[test]
fn keep_safe_keeps_a_printed_secret_out_of_the_provider_request() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.cwd().join("config.env"),
        "db_password=hunter2\nkey=sk-ant-api03-abcdefghijklmnop1234\n",
    )
    .unwrap();
    let (out, requests) = run_scripted(
        &sb,
        &[example("keep-safe")],
        &[
            json!({"tool_calls": [{"id": "a", "name": "read", "args": {"path": "config.env"}}]}),
            json!({"text": "read it"}),
        ],
        &["-p", "show the config"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(requests.len(), 2);
    let seen = requests[1]["messages"].to_string();
    assert!(
        !seen.contains("hunter2") && !seen.contains("sk-ant-api03"),
        "{seen}"
    );
    assert!(seen.contains("db_password=[redacted]"), "{seen}");
    assert!(requests[1]["hidden_context"]
        .to_string()
        .contains("redacted"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("keep-safe replaced the result"));
}

#[test]
fn keep_safe_keeps_the_agent_going_until_the_tests_pass() {
    let sb = Sandbox::new();
    let s = script(
        &sb,
        &[
            json!({"text": "all done"}),
            json!({"tool_calls": [{"id": "w", "name": "write", "args": {"path": "fixed", "content": "ok\n"}}]}),
            json!({"text": "now really done"}),
        ],
    );
    let log = sb.path("requests.jsonl");
    let out = zut(&sb)
        .env(
            "KEEP_SAFE_TEST",
            "test -f fixed || { echo 'test_fixed FAILED'; exit 3; }",
        )
        .arg("--ext")
        .arg(example("keep-safe"))
        .args(["--provider", "script", "--script", &s, "--script-log"])
        .arg(&log)
        .args(["--yolo", "-p", "fix it"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout(&out).trim(), "now really done");
    let requests = json_lines(&std::fs::read(&log).unwrap());
    assert_eq!(requests.len(), 3, "one continue, then green");
    let second = requests[1]["messages"].to_string();
    assert!(
        second.contains("The tests still fail") && second.contains("test_fixed FAILED"),
        "{second}"
    );
}
