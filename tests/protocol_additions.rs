//! The additions beyond the reference protocol, through the real binary
//! and real extension processes: late registration and withdrawal with
//! `ext_tools_changed`, `hello_ack.features`, and idle auto-ready.

mod support;

use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::*;

/// Installs fixture `name` (which runs `../proto.py`) in the sandbox.
fn proto_fixture(sb: &Sandbox, name: &str) -> PathBuf {
    let dir = sb.fixture(name, &[]);
    let manifest = dir.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["args"][0] = fixtures().join("proto.py").display().to_string().into();
    std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
    dir
}

#[test]
fn tools_registered_and_withdrawn_after_ready_follow_from_the_next_request() {
    let sb = Sandbox::new();
    let ext = proto_fixture(&sb, "proto-late");
    let (out, requests) = run_scripted(
        &sb,
        std::slice::from_ref(&ext),
        &[
            json!({"tool_calls": [{"id": "a", "name": "trigger", "args": {}}]}),
            json!({"tool_calls": [{"id": "b", "name": "late_tool", "args": {}}]}),
            json!({"text": "done"}),
        ],
        &["--mode", "json", "go"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(requests.len(), 3, "{requests:?}");
    let first = tool_names(&requests[0]);
    assert!(first.contains(&"trigger".into()), "{first:?}");
    assert!(!first.contains(&"late_tool".into()), "{first:?}");
    let second = tool_names(&requests[1]);
    assert!(
        second.contains(&"late_tool".into()),
        "registered late: {second:?}"
    );
    assert!(second.contains(&"trigger".into()), "{second:?}");
    let third = tool_names(&requests[2]);
    assert!(third.contains(&"late_tool".into()), "{third:?}");
    assert!(!third.contains(&"trigger".into()), "withdrawn: {third:?}");

    let events = json_lines(&out.stdout);
    let changed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "ext_tools_changed")
        .collect();
    // One per frame: late_tool, latecmd, then the two withdrawals.
    assert_eq!(changed.len(), 4, "{changed:?}");
    assert_eq!(changed[0]["extension"], "proto-late");
    assert_eq!(changed[0]["tools"], json!(["trigger", "late_tool"]));
    assert_eq!(changed[0]["commands"], json!([]));
    assert_eq!(
        changed[1]["commands"],
        json!(["latecmd"]),
        "sent when only commands change"
    );
    assert_eq!(changed[3]["tools"], json!(["late_tool"]));
    assert_eq!(changed[3]["commands"], json!([]));
    // Each change is out before the tool_result of the call that caused it.
    let pos = |f: &dyn Fn(&Value) -> bool| events.iter().position(f).unwrap();
    let change = pos(&|e| e["type"] == "ext_tools_changed");
    let result = pos(&|e| e["type"] == "tool_result");
    assert!(change < result, "{events:?}");

    let ack: Value = serde_json::from_slice(&std::fs::read(ext.join("ack.json")).unwrap()).unwrap();
    assert_eq!(
        ack["features"],
        json!(["late_registration", "tool_progress"])
    );
}

#[test]
fn a_late_tool_with_a_taken_name_is_refused_with_a_warning() {
    let sb = Sandbox::new();
    let ext = proto_fixture(&sb, "proto-late");
    // The second `trigger` call registers `late_tool` again: a taken name.
    let (out, requests) = run_scripted(
        &sb,
        &[ext],
        &[
            json!({"tool_calls": [{"id": "a", "name": "trigger", "args": {}}]}),
            json!({"tool_calls": [{"id": "b", "name": "trigger", "args": {}}]}),
            json!({"text": "done"}),
        ],
        &["--mode", "json", "go"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&out.stdout);
    // The second trigger call registers late_tool again: a taken name.
    let warned = events.iter().any(|e| {
        e["type"] == "ext_warning"
            && e["extension"] == "proto-late"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("late_tool"))
    });
    assert!(warned, "{events:?}");
    let changed = events
        .iter()
        .filter(|e| e["type"] == "ext_tools_changed")
        .count();
    assert_eq!(
        changed, 2,
        "a refused registration changes nothing: {events:?}"
    );
    assert_eq!(
        tool_names(&requests[2])
            .iter()
            .filter(|n| *n == "late_tool")
            .count(),
        1
    );
}

#[test]
fn an_extension_that_never_sends_ready_is_ready_after_a_short_silence() {
    let sb = Sandbox::new();
    let ext = proto_fixture(&sb, "proto-noready");
    let started = Instant::now();
    let (out, requests) = run_scripted(
        &sb,
        &[ext],
        &[
            json!({"tool_calls": [{"id": "q", "name": "quiet_tool", "args": {}}]}),
            json!({"text": "ok"}),
        ],
        &["--mode", "json", "go"],
    );
    let took = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        took < Duration::from_millis(2_500),
        "waited for the 3 s ready timeout: {took:?}"
    );
    assert!(tool_names(&requests[0]).contains(&"quiet_tool".into()));
    let events = json_lines(&out.stdout);
    assert!(
        events.iter().any(|e| e["type"] == "ext_warning"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("auto-readied"))),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool_result" && e["content"][0]["text"] == "quiet_tool ran"),
        "{events:?}"
    );
}

#[test]
fn the_clock_node_example_loads_without_the_ready_timeout() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("node not installed: skipped");
        return;
    }
    let sb = Sandbox::new();
    let ext = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/extensions/clock-node");
    let started = Instant::now();
    let (out, _) = run_scripted(
        &sb,
        &[ext],
        &[json!({"text": "ok"})],
        &["--mode", "json", "go"],
    );
    let took = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&out.stdout);
    assert!(
        events.iter().any(|e| e["type"] == "ext_loaded"),
        "{events:?}"
    );
    assert!(
        took < Duration::from_millis(2_500),
        "clock-node took {took:?}"
    );
}
