//! The Python SDK (`sdk/python`): its own test suite, and extensions written
//! with it loaded into the real `zut` binary.
//!
//! The suite runs extensions as subprocesses over pipes and the shared
//! protocol vectors (`sdk/vectors`, or `$ZUT_VECTORS_DIR` when set); here it
//! runs under the resolved interpreter rather than the slow `python3` shim.

mod support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The real interpreter behind `python3` (the first PATH entry of
/// [`search_path`]).
fn python() -> PathBuf {
    let path = search_path();
    let dir = path.split(':').next().unwrap_or_default();
    let exe = Path::new(dir).join("python3");
    if exe.exists() {
        exe
    } else {
        PathBuf::from("python3")
    }
}

fn json_events(out: &std::process::Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&out.stdout)
}

#[test]
fn unittest_suite_passes() {
    let out = Command::new(python())
        .args(["-m", "unittest", "discover", "-s", "sdk/python/tests"])
        .current_dir(repo())
        .env("PATH", search_path())
        .env_remove("PYTHONPATH")
        .output()
        .expect("python3 runs the SDK's tests");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python SDK tests failed:\n{stderr}");
    // unittest reports "Ran N tests" and "OK": a run of zero tests is no pass.
    assert!(stderr.contains("\nOK"), "{stderr}");
    assert!(!stderr.contains("Ran 0 tests"), "{stderr}");
}

#[test]
fn approve_example_loads_in_zut() {
    let sb = Sandbox::new();
    let out = zut(&sb)
        .arg("--ext")
        .arg(repo().join("examples/extensions/approve"))
        .args(["--mode", "json"])
        .output()
        .unwrap();
    let events = json_events(&out);
    let loaded = events
        .iter()
        .find(|e| e["type"] == "ext_loaded" && e["extension"] == "approve")
        .unwrap_or_else(|| panic!("approve not loaded: {events:?}"));
    assert_eq!(loaded["commands"], json!(["approve"]));
    assert_eq!(loaded["tools"], json!(["approve_ask"]));
    assert_eq!(loaded["version"], "1.0.0");
}

#[test]
fn approve_command_shows_the_policy() {
    let sb = Sandbox::new();
    let out = zut(&sb)
        .arg("--ext")
        .arg(repo().join("examples/extensions/approve"))
        .args(["-p", "/approve"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("approve policy") && text.contains("bell"),
        "{text}"
    );
}

#[test]
fn sdk_echo_tool_call_through_zut() {
    let sb = Sandbox::new();
    let args = json!({"text": "héllo", "n": 3, "list": [1, {"a": null}]});
    let (out, _) = run_scripted(
        &sb,
        &[repo().join("tests/bench/sdk/py/sdk_echo")],
        &[
            json!({"tool_calls": [{"id": "e1", "name": "echo", "args": args}]}),
            json!({"text": "done"}),
        ],
        &["--mode", "json", "go"],
    );
    let events = json_events(&out);
    let loaded = events
        .iter()
        .find(|e| e["type"] == "ext_loaded")
        .unwrap_or_else(|| panic!("no ext_loaded: {events:?}"));
    assert_eq!(loaded["extension"], "sdk-echo-py");
    assert_eq!(loaded["tools"], json!(["echo"]));
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "e1")
        .unwrap_or_else(|| panic!("no tool_result: {events:?}"));
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["extension"], "sdk-echo-py");
    let text = result["content"][0]["text"].as_str().unwrap();
    let echoed: Value = serde_json::from_str(text).unwrap();
    assert_eq!(echoed, args);
}

#[test]
fn raw_echo_twin_answers_the_same() {
    let sb = Sandbox::new();
    let args = json!({"text": "same"});
    let (out, _) = run_scripted(
        &sb,
        &[repo().join("tests/bench/sdk/py/raw_echo")],
        &[
            json!({"tool_calls": [{"id": "r1", "name": "echo", "args": args}]}),
            json!({"text": "done"}),
        ],
        &["--mode", "json", "go"],
    );
    let events = json_events(&out);
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "r1")
        .unwrap_or_else(|| panic!("no tool_result: {events:?}"));
    assert_eq!(result["extension"], "raw-echo-py");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), args);
}
