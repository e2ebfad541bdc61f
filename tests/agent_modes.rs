//! The real `zut` binary in print and JSON modes with the scripted
//! provider: the turn loop, built-in tools on a temporary project, the exit
//! status contract, slash commands, and stdout carrying only the answer.

mod support;

use serde_json::{json, Value};
use std::io::Write;
use std::process::{Output, Stdio};
use support::*;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn piped_stdin_is_appended_and_only_the_answer_is_printed() {
    let sb = Sandbox::new();
    let s = script(&sb, &[json!({"echo": true})]);
    let mut child = zut(&sb)
        .args(["--provider", "script", "--script", &s, "-p", "say"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "say\n\nhello\n");
}

#[test]
fn a_multi_step_tool_loop_changes_the_project() {
    let sb = Sandbox::new();
    std::fs::write(sb.cwd().join("notes.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(sb.cwd().join("AGENTS.md"), "Project rule: tabs.").unwrap();
    std::fs::write(sb.home().join("AGENTS.md"), "User rule: be brief.").unwrap();
    let log = sb.path("requests.jsonl");
    let s = script(
        &sb,
        &[
            json!({"text": "Reading.", "tool_calls": [{"id": "c1", "name": "read", "args": {"path": "notes.txt"}}]}),
            json!({"tool_calls": [
                {"id": "c2", "name": "edit", "args": {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}},
                {"id": "c3", "name": "write", "args": {"path": "sub/new.txt", "content": "fresh"}}
            ]}),
            json!({"tool_calls": [{"id": "c4", "name": "bash", "args": {"command": "cat notes.txt sub/new.txt", "timeout": 10}}]}),
            json!({"text": "All done."}),
        ],
    );
    let out = zut(&sb)
        .args(["--provider", "script", "--script", &s, "--script-log"])
        .arg(&log)
        .args(["--yolo", "--mode", "json", "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(sb.cwd().join("notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd().join("sub/new.txt")).unwrap(),
        "fresh"
    );
    let ev = json_lines(&out.stdout);
    let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    // The new session is announced first, then the prompt.
    assert_eq!(types[..2], ["session", "user_message"]);
    assert_eq!(types.last(), Some(&"done"));
    assert_eq!(types.iter().filter(|t| **t == "turn_start").count(), 4);
    let steps: Vec<u64> = ev
        .iter()
        .filter(|e| e["type"] == "turn_start")
        .map(|e| e["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [1, 2, 3, 4]);
    let bash = ev
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "c4")
        .unwrap();
    assert_eq!(bash["content"][0]["text"], "alpha\ngamma\nfresh");
    let read = ev
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "c1")
        .unwrap();
    assert_eq!(read["is_error"], false);
    assert!(read.get("extension").is_none());
    let last = ev.iter().rev().find(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(last["stop"], "end_turn");
    // The provider saw the results in the next request, as normalised blocks.
    let requests: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 4);
    let system = requests[0]["system"].as_str().unwrap();
    for needle in [
        "Project rule: tabs.",
        "User rule: be brief.",
        &sb.cwd().display().to_string(),
        "- bash:",
    ] {
        assert!(
            system.contains(needle),
            "{needle:?} missing from the system prompt"
        );
    }
    let second = &requests[1]["messages"];
    assert_eq!(second[1]["content"][1]["type"], "tool_call");
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
    assert_eq!(second[2]["content"][0]["call_id"], "c1");
    assert_eq!(second[2]["content"][0]["content"][0]["text"], "alpha\nbeta");
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read", "write", "edit", "bash", "grep"]);
}

#[test]
fn max_steps_stops_the_loop_with_status_1() {
    let sb = Sandbox::new();
    let call = json!({"tool_calls": [{"name": "read", "args": {"path": "."}}]});
    let (out, _) = run_scripted(
        &sb,
        &[],
        &[call.clone(), call.clone(), call],
        &["--max-steps", "2", "--mode", "json", "x"],
    );
    assert_eq!(out.status.code(), Some(1));
    let ev = json_lines(&out.stdout);
    assert_eq!(ev.iter().filter(|e| e["type"] == "turn_start").count(), 2);
    assert!(ev
        .iter()
        .any(|e| e["type"] == "turn_end" && e["stop"] == "max_steps"));
    assert!(ev
        .iter()
        .any(|e| e["type"] == "error" && e["message"].as_str().unwrap().contains("--max-steps")));
}

#[test]
fn provider_errors_and_an_exhausted_script_fail_clearly() {
    let sb = Sandbox::new();
    let (out, _) = run_scripted(&sb, &[], &[json!({"error": "overloaded"})], &["-p", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(stderr(&out).trim(), "zut: provider error: overloaded");
    let (out, _) = run_scripted(
        &sb,
        &[],
        &[json!({"tool_calls": [{"name": "read", "args": {"path": "."}}]})],
        &["--mode", "json", "x"],
    );
    assert_eq!(out.status.code(), Some(1));
    let ev = json_lines(&out.stdout);
    let end = ev.iter().rev().find(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(
        (end["stop"].as_str(), end["error"].as_str()),
        (Some("error"), Some("provider error: script exhausted"))
    );
}

#[test]
fn abort_interrupts_a_turn_and_exits_130() {
    let sb = Sandbox::new();
    let s = script(&sb, &[json!({"delay_ms": 30000, "text": "too late"})]);
    let mut child = zut(&sb)
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--mode",
            "json",
            "x",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the turn to start (the event says the provider is running).
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut reader, &mut line).unwrap() > 0
        && !line.contains("turn_start")
    {
        line.clear();
    }
    let t = std::time::Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(t.elapsed() < std::time::Duration::from_secs(10));
    assert!(rest.contains(r#""stop":"aborted""#), "{rest}");
}

#[test]
fn confirmed_tools_need_yolo_outside_the_interactive_terminal() {
    let sb = Sandbox::new();
    let (out, _) = run_scripted(
        &sb,
        &[],
        &[
            json!({"tool_calls": [{"id": "b", "name": "bash", "args": {"command": "touch made", "timeout": 5}}]}),
            json!({"text": "ok"}),
        ],
        &["--mode", "json", "x"],
    );
    assert_eq!(out.status.code(), Some(0));
    let result = json_lines(&out.stdout)
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["is_error"], true);
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("--yolo"));
    assert!(!sb.cwd().join("made").exists());
}

#[test]
fn usage_errors_exit_2_and_help_lists_every_flag() {
    let sb = Sandbox::new();
    let out = zut(&sb).args(["-p"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("-p needs a PROMPT"));
    let out = zut(&sb).args(["--frobnicate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = zut(&sb).args(["--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--ext",
        "--no-extensions",
        "--provider",
        "--model",
        "--base-url",
        "--api-key",
        "--script",
        "--script-log",
        "--cwd",
        "--yolo",
        "--continue",
        "--session",
        "--no-session",
        "--max-steps",
        "--mode",
        "--version",
        "-p",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
    let out = zut(&sb).args(["--version"]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("zut {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn no_provider_says_how_to_configure_one() {
    let sb = Sandbox::new();
    let out = zut(&sb).args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("no model provider configured") && err.contains("ANTHROPIC_API_KEY"),
        "{err}"
    );
}

#[test]
fn a_provider_that_never_answered_is_not_remembered() {
    let sb = Sandbox::new();
    // Nothing listens on port 9: the call fails, so nothing is saved (a
    // working run saves it: see tests/usability.rs).
    let out = zut(&sb)
        .args([
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m1",
            "-p",
            "hi",
        ])
        .env("ZUT_RETRY_BASE_MS", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("connection"), "{}", stderr(&out));
    assert!(!sb.home().join("config.json").exists());
}

#[test]
fn json_mode_without_a_prompt_loads_and_exits() {
    let sb = Sandbox::new();
    let ok = sb.fixture("fx-normal", &[]);
    let bad = sb.fixture("fx-exit-3", &[]);
    let out = zut(&sb)
        .args(["--mode", "json", "--ext"])
        .arg(&ok)
        .arg("-e")
        .arg(&bad)
        .output()
        .unwrap();
    // A failed extension makes the check fail (it is what CI runs).
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let ev = json_lines(&out.stdout);
    assert_eq!(ev[0]["type"], "ext_loaded");
    assert_eq!(ev[0]["extension"], "fx-normal");
    assert_eq!(ev[0]["source"], "flag");
    assert_eq!(ev[1]["type"], "ext_error");
    assert!(ev[1]["message"].as_str().unwrap().contains("exit status 3"));
    assert_eq!(ev.len(), 2);
}

#[test]
fn print_mode_slash_commands_honour_each_action() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let run = |cmd: &str| {
        zut(&sb)
            .arg("--ext")
            .arg(&ext)
            .args(["-p", cmd])
            .output()
            .unwrap()
    };
    let out = run("/echo   hi there  ");
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).as_ref()
        ),
        (Some(0), "echo: hi there\n")
    );
    let json = zut(&sb)
        .arg("--ext")
        .arg(&ext)
        .args(["--mode", "json", "/echo x"])
        .output()
        .unwrap();
    let ev = json_lines(&json.stdout);
    let kinds: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "ext_loaded",
            "session",
            "ext_display",
            "command_result",
            "done"
        ]
    );
    assert_eq!(
        (ev[2]["extension"].as_str(), ev[2]["text"].as_str()),
        (Some("fx-normal"), Some("echo: x"))
    );
    assert_eq!(
        ev[3],
        serde_json::json!({"type": "command_result", "name": "echo", "action": "display", "text": "echo: x"})
    );
    let out = run("/do-noop");
    assert_eq!((out.status.code(), out.stdout.len()), (Some(0), 0));
    let out = run("/fail");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "an error wins over the action");
    assert!(stderr(&out).contains("/fail: it went wrong"));
    let out = run("/do-insert x");
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("needs the interactive terminal"));
    let out = run("/do-open_panel");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("\"open_panel\", which needs the interactive terminal"));
    let out = run("/nope");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown command /nope"));
    // A prompt action runs a turn with the command's prompt.
    let (out, _) = run_scripted(
        &sb,
        &[ext],
        &[json!({"echo": true})],
        &["-p", "/do-prompt abc"],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from command: abc\n");
}

#[test]
fn json_mode_reports_command_results_and_notes() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let out = zut(&sb)
        .arg("--ext")
        .arg(&ext)
        .args(["--mode", "json", "/chrome"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ev = json_lines(&out.stdout);
    let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for t in [
        "ext_notify",
        "ext_status",
        "ext_widget",
        "ext_widget_clear",
        "ext_alert",
        "ext_clear_notes",
        "ext_open_panel",
        "ext_panel_render",
        "ext_panel_close",
        "command_result",
        "done",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    let widget = ev.iter().find(|e| e["type"] == "ext_widget").unwrap();
    assert_eq!(
        widget["position"], "RIGHT_BAR",
        "the position is passed through unchanged"
    );
    let notify = ev.iter().find(|e| e["type"] == "ext_notify").unwrap();
    assert_eq!(
        (notify["level"].as_str(), notify["message"].as_str()),
        (Some("warn"), Some("careful"))
    );
    assert!(
        !types.contains(&"ext_submit"),
        "submit is ignored outside the interactive terminal"
    );
}

#[test]
fn print_mode_notes_go_to_stderr_sanitised() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let out = zut(&sb)
        .arg("--ext")
        .arg(&ext)
        .args(["-p", "/chrome"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("[fx-normal] warn: careful"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sigterm_during_a_command_shuts_down_gracefully() {
    let sb = Sandbox::new();
    let pidfile = sb.path("pid");
    let marker = sb.path("marker");
    let ext = sb.fixture(
        "fx-normal",
        &[opt("pidfile", &pidfile), opt("marker", &marker)],
    );
    let mut child = zut(&sb)
        .arg("--ext")
        .arg(&ext)
        .args(["-p", "/hang"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(eventually(std::time::Duration::from_secs(10), || pidfile
        .exists()
        && std::fs::read_to_string(&pidfile).unwrap().ends_with('\n')));
    let ext_pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The command reached the extension, which never answers it.
    let invoked = || {
        std::fs::read_to_string(&marker).is_ok_and(|m| m.lines().any(|l| l == "command_invoked"))
    };
    assert!(eventually(std::time::Duration::from_secs(10), invoked));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        eventually(std::time::Duration::from_secs(2), || !pid_exists(ext_pid)),
        "extension survived"
    );
}

#[test]
fn command_line_paths_are_relative_to_where_zut_starts_not_to_cwd() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let elsewhere = sb.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    // Run from the sandbox root with a relative --ext and a --cwd elsewhere.
    let rel = ext.strip_prefix(sb.dir.path()).unwrap();
    let out = zut(&sb)
        .current_dir(sb.dir.path())
        .arg("--cwd")
        .arg(&elsewhere)
        .arg("--ext")
        .arg(rel)
        .args(["-p", "/echo ok"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "echo: ok\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
