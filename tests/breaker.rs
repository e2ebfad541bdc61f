//! Slowness and silence, through the real `zut` binary: a hung extension's
//! load error is printed in full once a day (with how to stop loading it),
//! a deaf interceptor is noted and then skipped (the circuit breaker), a
//! panel opened where nobody can see it is closed at once, and project
//! files in an ancestor of the working directory are pointed out.

mod support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use support::*;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn seen(dir: &Path) -> Vec<Value> {
    std::fs::read(dir.join("seen.jsonl"))
        .map(|b| json_lines(&b))
        .unwrap_or_default()
}

/// Installs an extension in `$ZUT_HOME/extensions/hung` that never says hello.
fn install_hung(sb: &Sandbox) -> PathBuf {
    let dir = sb.home().join("extensions").join("hung");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({
        "name": "hung", "version": "0.1.0", "exec": "python3",
        "args": [fixtures().join("fx.py").display().to_string(), "no-hello"],
        "language": "python", "description": "never says hello"
    });
    std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    dir
}

/// One print-mode run with the hello deadline at `hello_ms`; its stderr.
fn print_run(sb: &Sandbox, hello_ms: u32) -> String {
    let s = script(sb, &[json!({"text": "fine"})]);
    let out = zut(sb)
        .args(["--provider", "script", "--script", &s, "-p", "hi"])
        .env("ZUT_HELLO_TIMEOUT_MS", hello_ms.to_string())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout).trim(), "fine", "{err}");
    err
}

fn assert_full(err: &str) {
    assert!(
        err.contains("sent no hello within") && err.contains("zut ext disable hung"),
        "the whole block and how to stop loading it: {err}"
    );
}

fn assert_short(err: &str) {
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("hung")).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].contains("zut ext doctor hung"), "{err}");
    assert!(!err.contains("sent no hello"), "{err}");
}

#[test]
fn a_hung_extension_is_shown_in_full_once_a_day_unless_its_error_changes() {
    let sb = Sandbox::new();
    install_hung(&sb);
    let memo = sb.home().join("state").join("shown-errors.json");

    assert_full(&print_run(&sb, 300));
    assert!(memo.is_file());
    assert_short(&print_run(&sb, 300));
    assert_short(&print_run(&sb, 300));

    // A different block (another deadline) is shown in full again.
    assert_full(&print_run(&sb, 350));
    assert_short(&print_run(&sb, 350));

    // Shown on an earlier day: in full again.
    let mut m: Value = serde_json::from_slice(&std::fs::read(&memo).unwrap()).unwrap();
    m["hung"]["day"] = json!(1);
    std::fs::write(&memo, m.to_string()).unwrap();
    assert_full(&print_run(&sb, 350));
    assert_short(&print_run(&sb, 350));

    // A corrupt memo is no memo, and is replaced.
    std::fs::write(&memo, "{not json").unwrap();
    assert_full(&print_run(&sb, 350));
    assert!(serde_json::from_slice::<Value>(&std::fs::read(&memo).unwrap()).is_ok());
    assert_short(&print_run(&sb, 350));

    // One that cannot be written: in full every time, nothing else changes.
    std::fs::remove_dir_all(sb.home().join("state")).unwrap();
    std::fs::write(sb.home().join("state"), "a file").unwrap();
    assert_full(&print_run(&sb, 350));
    assert_full(&print_run(&sb, 350));

    // The whole text stays in doctor.
    let out = zut(&sb)
        .args(["ext", "doctor", "hung"])
        .env("ZUT_HELLO_TIMEOUT_MS", "300")
        .output()
        .unwrap();
    let all = text(&out.stdout) + &text(&out.stderr);
    assert!(all.contains("hello"), "{all}");
}

#[test]
fn json_mode_reports_every_load_failure_in_full() {
    let sb = Sandbox::new();
    install_hung(&sb);
    let s = script(&sb, &[json!({"text": "fine"}), json!({"text": "fine"})]);
    for _ in 0..2 {
        let out = zut(&sb)
            .args([
                "--provider",
                "script",
                "--script",
                &s,
                "--mode",
                "json",
                "hi",
            ])
            .env("ZUT_HELLO_TIMEOUT_MS", "300")
            .output()
            .unwrap();
        let errors: Vec<Value> = json_lines(&out.stdout)
            .into_iter()
            .filter(|e| e["type"] == "ext_error" && e["extension"] == "hung")
            .collect();
        assert_eq!(errors.len(), 1, "{}", text(&out.stdout));
        assert!(errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("sent no hello within 300 ms"));
    }
}

/// `steps - 1` calls of `noop`, then the answer "done".
fn steps(n: usize) -> Vec<Value> {
    let mut v: Vec<Value> = (0..n - 1)
        .map(|i| json!({"tool_calls": [{"id": format!("c{i}"), "name": "noop", "args": {}}]}))
        .collect();
    v.push(json!({"text": "done"}));
    v
}

fn warnings(events: &[Value], ext: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "ext_warning" && e["extension"] == ext)
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_deaf_interceptor_is_noted_once_and_skipped_after_three_misses() {
    let sb = Sandbox::new();
    let ext = plan_ext(
        &sb,
        json!({"name": "deaf", "intercept": ["turn_start"], "tools": [{"name": "noop"}],
               "answers": {"turn_start": {"silent": true}}}),
    );
    let s = script(&sb, &steps(6));
    let log = sb.path("requests.jsonl");
    let out = zut(&sb)
        .arg("-e")
        .arg(&ext)
        .args(["--provider", "script", "--script", &s, "--script-log"])
        .arg(&log)
        .args(["-p", "go"])
        .env("ZUT_INTERCEPT_TIMEOUT_MS", "300")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout).trim(), "done");
    assert_eq!(json_lines(&std::fs::read(&log).unwrap()).len(), 6);
    let asked = seen(&ext)
        .into_iter()
        .filter(|f| f["event"] == "turn_start")
        .count();
    assert_eq!(asked, 3, "requests 4 to 6 went without asking it");
    let note: Vec<&str> = err
        .lines()
        .filter(|l| {
            l.contains("deaf")
                && l.contains("did not answer the turn_start intercept within 300 ms")
        })
        .collect();
    assert_eq!(note.len(), 1, "{err}");
    let tripped: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("deaf") && l.contains("skipped for the rest of this run"))
        .collect();
    assert_eq!(tripped.len(), 1, "{err}");
}

#[test]
fn an_answer_resets_the_count_of_missed_intercepts() {
    let sb = Sandbox::new();
    let silent = json!({"silent": true});
    let ext = plan_ext(
        &sb,
        json!({"name": "flaky", "intercept": ["turn_start"], "tools": [{"name": "noop"}],
               "answers": {"turn_start": [silent, silent, {}, silent, silent, {}, silent]}}),
    );
    let (out, requests) = run_scripted(
        &sb,
        std::slice::from_ref(&ext),
        &steps(7),
        &["--mode", "json", "go"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(requests.len(), 7);
    let asked = seen(&ext)
        .into_iter()
        .filter(|f| f["event"] == "turn_start")
        .count();
    assert_eq!(asked, 7, "never three misses in a row: always asked");
    let w = warnings(&json_lines(&out.stdout), "flaky");
    assert_eq!(w.len(), 1, "the first miss only: {w:?}");
    assert!(w[0].contains("within"), "{w:?}");
}

#[test]
fn a_panel_opened_during_a_call_outside_the_terminal_is_closed_at_once() {
    let sb = Sandbox::new();
    let ext = plan_ext(
        &sb,
        json!({"name": "asker", "tools": [{"name": "approve_it", "panel": true}]}),
    );
    let lines = [
        json!({"tool_calls": [{"id": "a", "name": "approve_it", "args": {}}]}),
        json!({"text": "done"}),
    ];
    let s = script(&sb, &lines);
    let log = sb.path("requests.jsonl");
    let out = zut(&sb)
        .arg("-e")
        .arg(&ext)
        .args(["--provider", "script", "--script", &s, "--script-log"])
        .arg(&log)
        .args(["-p", "go"])
        // Without panel_close the call would end here, as an error.
        .env("ZUT_TOOL_TIMEOUT_MS", "20000")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let requests = json_lines(&std::fs::read(&log).unwrap());
    assert_eq!(requests.len(), 2, "{err}");
    assert!(
        requests[1]
            .to_string()
            .contains("panel closed, nobody answered"),
        "the extension's own answer to panel_close reached the model: {}",
        requests[1]
    );
    assert!(
        err.contains("asker") && err.contains("\"Approve?\"") && err.contains("closed it"),
        "{err}"
    );

    // JSON mode: the same, and the panel is an event.
    let (out, requests) = run_scripted(&sb, &[ext], &lines, &["--mode", "json", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(requests[1]
        .to_string()
        .contains("panel closed, nobody answered"));
    let ev = json_lines(&out.stdout);
    assert!(ev.iter().any(|e| e["type"] == "ext_open_panel"), "{ev:?}");
}

#[test]
fn project_files_in_an_ancestor_are_pointed_out_once() {
    let sb = Sandbox::new();
    let proj = sb.cwd();
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::write(proj.join(".mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
    let ext = proj.join(".zut/extensions/tool");
    std::fs::create_dir_all(&ext).unwrap();
    std::fs::write(ext.join("extension.json"), r#"{"name":"tool","exec":"sh"}"#).unwrap();
    let sub = proj.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let s = script(&sb, &[json!({"text": "fine"})]);
    let run = |dir: &Path, extra: &[&str]| {
        let out = zut(&sb)
            .current_dir(dir)
            .args(["--provider", "script", "--script", &s, "--no-session"])
            .args(extra)
            .args(["-p", "hi"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stderr)
    };

    let err = run(&sub, &[]);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("reads only from the project directory"))
        .collect();
    assert_eq!(notes.len(), 1, "{err}");
    let proj_s = std::fs::canonicalize(&proj).unwrap().display().to_string();
    assert!(
        notes[0].contains(&format!("--cwd {proj_s}"))
            && notes[0].contains(".zut/extensions")
            && notes[0].contains(".mcp.json"),
        "{err}"
    );

    // Where they are: no note.
    assert!(!run(&proj, &[]).contains("reads only from"));
    // What the run would not load anyway is not mentioned.
    let err = run(&sub, &["--no-mcp"]);
    assert!(
        err.contains(".zut/extensions") && !err.contains(".mcp.json"),
        "{err}"
    );
    assert!(!run(&sub, &["--no-mcp", "--no-extensions"]).contains("reads only from"));

    // Not above the repository root.
    let outside = sb.path("outer");
    std::fs::create_dir_all(outside.join("repo/.git")).unwrap();
    std::fs::create_dir_all(outside.join("repo/sub")).unwrap();
    std::fs::write(outside.join(".mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
    assert!(!run(&outside.join("repo/sub"), &[]).contains("reads only from"));
}
