//! The TypeScript SDK (`sdk/typescript`, package `zut-ext`) from the outside:
//! its own node:test suite (API items, shared vectors, the `secret` example
//! over pipes), then extensions written with it loaded into the real `zut`
//! binary with the scripted provider.
//!
//! Needs `node` (18 or later) on PATH. The vector runner reads
//! `sdk/vectors` unless `ZUT_VECTORS_DIR` names another directory.

mod support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn sdk_dir() -> PathBuf {
    repo().join("sdk/typescript")
}

/// Runs `cmd` and returns its stdout, failing with everything it said.
fn ok_stdout(cmd: &mut Command) -> String {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?} exited {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn node_test_suite_passes() {
    // The files are listed one by one: how `node --test DIR` treats a
    // directory differs between Node versions.
    let mut files: Vec<PathBuf> = std::fs::read_dir(sdk_dir().join("test"))
        .expect("sdk/typescript/test")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".test.js"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "test files: {files:?}");
    let out = ok_stdout(
        Command::new("node")
            .args(["--test", "--test-reporter=tap"])
            .args(&files)
            .current_dir(sdk_dir())
            .stdin(std::process::Stdio::null()),
    );
    // The TAP summary (asked for explicitly: newer Node versions default to
    // another reporter): something ran and nothing failed.
    assert!(out.contains("\n# fail 0"), "{out}");
    assert!(!out.contains("\n# pass 0"), "{out}");
}

#[test]
fn built_sdk_is_committed_next_to_its_source() {
    for f in [
        "dist/index.js",
        "dist/index.d.ts",
        "src/index.ts",
        "package.json",
    ] {
        assert!(sdk_dir().join(f).is_file(), "sdk/typescript/{f} missing");
    }
    let pkg: Value =
        serde_json::from_slice(&std::fs::read(sdk_dir().join("package.json")).unwrap()).unwrap();
    assert_eq!(pkg["name"], "zut-ext");
    assert_eq!(pkg["main"], "dist/index.js");
    assert_eq!(pkg["types"], "dist/index.d.ts");
    assert!(pkg.get("dependencies").is_none(), "no runtime dependencies");
}

fn example(name: &str) -> PathBuf {
    repo().join("examples/extensions").join(name)
}

#[test]
fn secret_example_redacts_the_assistant_message() {
    let sb = Sandbox::new();
    let s = script(
        &sb,
        &[json!({"text": "the key is sk-live-1234, keep sk-live-1234 safe"})],
    );
    let out = ok_stdout(
        zut(&sb)
            .env("ZUT_SECRET_API_KEY", "sk-live-1234")
            .arg("--ext")
            .arg(example("secret"))
            .args([
                "--provider",
                "script",
                "--script",
                &s,
                "--mode",
                "json",
                "go",
            ]),
    );
    let events = json_lines(out.as_bytes());
    let loaded = events
        .iter()
        .find(|e| e["type"] == "ext_loaded")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(loaded["extension"], "secret");
    assert_eq!(loaded["commands"], json!(["secret"]));
    let message = events
        .iter()
        .find(|e| e["type"] == "assistant_message")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(
        message["text"],
        "the key is [redacted:API_KEY], keep [redacted:API_KEY] safe"
    );
    assert_eq!(message["blocked"], false);
}

#[test]
fn secret_example_lists_names_not_values() {
    let sb = Sandbox::new();
    let out = ok_stdout(
        zut(&sb)
            .env("ZUT_SECRET_TOKEN", "abcd-efgh")
            .arg("--ext")
            .arg(example("secret"))
            .args(["-p", "/secret list"]),
    );
    assert_eq!(out, "secrets (values hidden): TOKEN\n");
}

#[test]
fn sdk_echo_bench_input_serves_a_tool_call_through_zut() {
    let sb = Sandbox::new();
    let (out, _) = run_scripted(
        &sb,
        &[repo().join("tests/bench/sdk/ts/sdk_echo")],
        &[
            json!({"tool_calls": [{"id": "e1", "name": "echo", "args": {"n": 7, "text": "hi"}}]}),
            json!({"text": "done"}),
        ],
        &["--mode", "json", "go"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&out.stdout);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "ext_loaded" && e["extension"] == "sdk-echo-ts"),
        "{events:?}"
    );
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "e1")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(result["is_error"], false);
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let echoed: Value = serde_json::from_str(text).expect("echo answers JSON");
    assert_eq!(echoed, json!({"n": 7, "text": "hi"}));
}
