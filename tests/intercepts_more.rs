//! The interception points and tool progress beyond the reference
//! protocol, through the real binary and real Python extensions:
//! `user_message`, `tool_result`, `agent_end`, the `tool_call` decision
//! (`approve` / `ask`), and `tool_progress` restarting a call's deadline.
//! What the model got is read from the script provider's request log.

mod support;

use serde_json::{json, Value};
use support::*;

/// The intercept and event frames the extension received.
fn seen(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read(dir.join("seen.jsonl"))
        .map(|b| json_lines(&b))
        .unwrap_or_default()
}

fn events(out: &std::process::Output) -> Vec<Value> {
    json_lines(&out.stdout)
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

/// Every text of a request's messages, for "the model never saw it".
fn request_text(r: &Value) -> String {
    r["messages"].to_string()
}

fn session_text(sb: &Sandbox) -> String {
    let mut all = String::new();
    let mut stack = vec![sb.home().join("sessions")];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        } else if let Ok(t) = std::fs::read_to_string(&p) {
            all.push_str(&t);
        }
    }
    all
}

#[test]
fn user_message_rewrites_the_prompt_and_adds_hidden_context_to_every_request() {
    let sb = Sandbox::new();
    let ext = plan_ext(
        &sb,
        json!({"name": "um", "intercept": ["user_message"], "tools": [{"name": "noop"}],
               "answers": {"user_message": {"replace_text": "rewritten prompt", "context": "ctx-um"}}}),
    );
    let (out, requests) = run_scripted(
        &sb,
        std::slice::from_ref(&ext),
        &[
            json!({"tool_calls": [{"id": "a", "name": "noop", "args": {}}]}),
            json!({"text": "done"}),
        ],
        &["--mode", "json", "original prompt"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert!(request_text(r).contains("rewritten prompt"), "{r}");
        assert!(!request_text(r).contains("original prompt"), "{r}");
        assert!(r["hidden_context"].to_string().contains("ctx-um"), "{r}");
    }
    let payloads = seen(&ext);
    assert_eq!(payloads.len(), 1, "once per prompt: {payloads:?}");
    assert_eq!(payloads[0]["event"], "user_message");
    assert_eq!(payloads[0]["text"], "original prompt");
    let saved = session_text(&sb);
    assert!(saved.contains("rewritten prompt"), "{saved}");
    assert!(!saved.contains("ctx-um"), "hidden context is never saved");
}

#[test]
fn a_blocked_prompt_is_neither_sent_nor_saved_and_names_the_extension() {
    let sb = Sandbox::new();
    let ext = plan_ext(
        &sb,
        json!({"name": "gate", "intercept": ["user_message"],
               "answers": {"user_message": {"block": true, "reason": "no secrets in prompts"}}}),
    );
    let (out, requests) = run_scripted(
        &sb,
        &[ext],
        &[json!({"text": "never"})],
        &["-p", "my password is hunter2"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(requests.is_empty(), "{requests:?}");
    assert!(
        stderr.contains("gate") && stderr.contains("no secrets in prompts"),
        "{stderr}"
    );
    assert!(!session_text(&sb).contains("hunter2"));
    // The JSON stream says so too.
    let (out, _) = run_scripted(
        &sb,
        &[sb.path("exts").join("gate")],
        &[json!({"text": "never"})],
        &["--mode", "json", "x"],
    );
    let ev = events(&out);
    let b = of_type(&ev, "prompt_blocked");
    assert_eq!(b.len(), 1, "{ev:?}");
    assert_eq!(b[0]["extension"], "gate");
    assert_eq!(b[0]["reason"], "no secrets in prompts");
}

#[test]
fn tool_result_replacement_keeps_a_secret_from_the_model_and_the_transcript() {
    let sb = Sandbox::new();
    let ext = plan_ext(
        &sb,
        json!({"name": "redact", "intercept": ["tool_result"],
               "tools": [{"name": "leaky", "text": "token=SECRET123"}],
               "answers": {"tool_result": {"replace_content": [{"type": "text", "text": "token=[redacted]"}],
                                            "context": "ctx-tr"}}}),
    );
    std::fs::write(sb.cwd().join("notes.txt"), "plain\n").unwrap();
    let (out, requests) = run_scripted(
        &sb,
        std::slice::from_ref(&ext),
        &[
            json!({"tool_calls": [{"id": "a", "name": "leaky", "args": {"q": 1}}]}),
            json!({"tool_calls": [{"id": "b", "name": "read", "args": {"path": "notes.txt"}}]}),
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
    assert_eq!(requests.len(), 3);
    let second = request_text(&requests[1]);
    assert!(!second.contains("SECRET123"), "{second}");
    assert!(second.contains("token=[redacted]"), "{second}");
    assert!(requests[1]["hidden_context"].to_string().contains("ctx-tr"));
    assert!(!requests[0]["hidden_context"].to_string().contains("ctx-tr"));
    assert!(!session_text(&sb).contains("SECRET123"));
    let ev = events(&out);
    let results = of_type(&ev, "tool_result");
    assert_eq!(results[0]["replaced_by"], "redact");
    assert_eq!(results[0]["content"][0]["text"], "token=[redacted]");
    assert!(!out.stdout.windows(9).any(|w| w == b"SECRET123"));
    let payloads = seen(&ext);
    assert_eq!(payloads.len(), 2, "{payloads:?}");
    let p = &payloads[0];
    assert_eq!(p["event"], "tool_result");
    assert_eq!(p["tool_id"], "a");
    assert_eq!(p["tool_name"], "leaky");
    assert_eq!(p["tool_args"], json!({"q": 1}));
    assert_eq!(p["is_error"], false);
    assert_eq!(p["content"][0]["text"], "token=SECRET123");
    assert_eq!(p["extension"], "redact");
    // Built-in tools are intercepted too, with no `extension`.
    assert_eq!(payloads[1]["tool_name"], "read");
    assert!(payloads[1].get("extension").is_none(), "{}", payloads[1]);
    assert_eq!(payloads[1]["is_error"], false);
}

#[test]
fn a_blocked_tool_result_reaches_the_model_as_an_error_with_the_reason() {
    let sb = Sandbox::new();
    let ext = plan_ext(
        &sb,
        json!({"name": "withhold", "intercept": ["tool_result"],
               "tools": [{"name": "leaky", "text": "private data"}],
               "answers": {"tool_result": {"block": true, "reason": "result withheld by policy"}}}),
    );
    let (out, requests) = run_scripted(
        &sb,
        &[ext],
        &[
            json!({"tool_calls": [{"id": "a", "name": "leaky", "args": {}}]}),
            json!({"text": "done"}),
        ],
        &["-p", "go"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let second = request_text(&requests[1]);
    assert!(!second.contains("private data"), "{second}");
    assert!(second.contains("result withheld by policy"), "{second}");
    assert!(second.contains("\"is_error\":true"), "{second}");
    assert!(stderr.contains("withhold"), "print mode says who: {stderr}");
}

#[test]
fn agent_end_keeps_the_prompt_going_at_most_eight_times() {
    let sb = Sandbox::new();
    let ext = plan_ext(
        &sb,
        json!({"name": "keepgoing", "intercept": ["agent_end"],
               "answers": {"agent_end": {"block": true, "reason": "tests still fail, keep going"}}}),
    );
    let lines: Vec<Value> = (0..12)
        .map(|i| json!({"text": format!("answer {i}")}))
        .collect();
    let (out, requests) = run_scripted(
        &sb,
        std::slice::from_ref(&ext),
        &lines,
        &["--mode", "json", "go"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(requests.len(), 9, "the first answer and 8 continues");
    assert!(request_text(&requests[1]).contains("tests still fail, keep going"));
    let payloads = seen(&ext);
    assert_eq!(payloads.len(), 8, "not consulted after the 8th continue");
    for (i, p) in payloads.iter().enumerate() {
        assert_eq!(p["event"], "agent_end");
        assert_eq!(p["continued"], i as u64, "{p}");
        assert_eq!(p["text"], format!("answer {i}"));
        assert_eq!(p["steps"], i as u64 + 1, "{p}");
    }
    let ev = events(&out);
    let warnings: Vec<_> = of_type(&ev, "ext_warning")
        .into_iter()
        .filter(|w| w["extension"] == "keepgoing")
        .collect();
    assert_eq!(warnings.len(), 1, "{ev:?}");
    assert_eq!(of_type(&ev, "prompt_continued").len(), 8);
    let saved = session_text(&sb);
    let marked = saved
        .lines()
        .filter(|l| l.contains("\"extension\":\"keepgoing\"") && l.contains("keep going"))
        .count();
    assert_eq!(marked, 8, "{saved}");
}

#[test]
fn agent_end_is_not_consulted_when_the_prompt_ends_otherwise() {
    let sb = Sandbox::new();
    let ext = plan_ext(
        &sb,
        json!({"name": "keepgoing", "intercept": ["agent_end"],
               "answers": {"agent_end": {"block": true, "reason": "more"}}}),
    );
    let (out, _) = run_scripted(
        &sb,
        std::slice::from_ref(&ext),
        &[json!({"error": "provider exploded"})],
        &["--mode", "json", "go"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(seen(&ext).is_empty());
}

#[test]
fn approve_skips_the_confirmation_and_ask_overrides_yolo() {
    let sb = Sandbox::new();
    let approve = plan_ext(
        &sb,
        json!({"name": "approver", "intercept": ["tool_call"],
               "answers": {"tool_call": {"decision": "approve"}}}),
    );
    let (out, _) = run_scripted(
        &sb,
        &[approve],
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "args": {"command": "echo approved > a.txt", "timeout": 5}}]}),
            json!({"text": "done"}),
        ],
        &["-p", "go"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(sb.cwd().join("a.txt").exists(), "approved without --yolo");

    let sb = Sandbox::new();
    let ask = plan_ext(
        &sb,
        json!({"name": "asker", "intercept": ["tool_call"],
               "answers": {"tool_call": {"decision": "ask"}}}),
    );
    let other = plan_ext(
        &sb,
        json!({"name": "approver2", "intercept": ["tool_call"],
               "answers": {"tool_call": {"decision": "approve"}}}),
    );
    let (out, requests) = run_scripted(
        &sb,
        &[ask, other],
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "args": {"command": "echo asked > b.txt", "timeout": 5}}]}),
            json!({"text": "done"}),
        ],
        &["-p", "--yolo", "go"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !sb.cwd().join("b.txt").exists(),
        "ask wins over approve and --yolo"
    );
    assert!(stderr.contains("asker"), "{stderr}");
    assert!(request_text(&requests[1]).contains("asker asks for confirmation"));
}

#[test]
fn progress_keeps_a_call_alive_and_a_silent_call_still_times_out() {
    let sb = Sandbox::new();
    plan_ext(
        &sb,
        json!({"name": "slow", "tools": [
            {"name": "chatty", "run_ms": 3000, "progress_ms": 500},
            {"name": "silent", "run_ms": 2500}]}),
    );
    let mut c = zut(&sb);
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [{"id": "p1", "name": "chatty", "args": {}}]}),
            json!({"tool_calls": [{"id": "p2", "name": "silent", "args": {}}]}),
            json!({"text": "done"}),
        ],
    );
    let out = c
        .env("ZUT_TOOL_TIMEOUT_MS", "1000")
        .arg("-e")
        .arg(sb.path("exts").join("slow"))
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--mode",
            "json",
            "go",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let results = of_type(&ev, "tool_result");
    assert_eq!(results.len(), 2, "{ev:?}");
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(results[0]["content"][0]["text"], "chatty done");
    assert_eq!(results[1]["is_error"], true, "{}", results[1]);
    assert!(results[1]["content"].to_string().contains("timeout"));
    let progress = of_type(&ev, "tool_progress");
    assert!(progress.len() >= 3, "{progress:?}");
    let p = progress[0];
    assert_eq!(p["id"], "p1", "the model's call id");
    assert_eq!(p["name"], "chatty");
    assert_eq!(p["extension"], "slow");
    assert_eq!(p["message"], "working");
    assert_eq!(p["total"], 100.0);
    // Every progress event of the call comes before its result.
    let last_progress = ev
        .iter()
        .rposition(|e| e["type"] == "tool_progress")
        .unwrap();
    let first_result = ev.iter().position(|e| e["type"] == "tool_result").unwrap();
    assert!(last_progress < first_result);
}

#[test]
fn progress_never_keeps_a_call_past_ten_timeouts() {
    let sb = Sandbox::new();
    plan_ext(
        &sb,
        json!({"name": "forever", "tools": [{"name": "endless", "run_ms": 6000, "progress_ms": 50}]}),
    );
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [{"id": "e", "name": "endless", "args": {}}]}),
            json!({"text": "done"}),
        ],
    );
    let started = std::time::Instant::now();
    let out = zut(&sb)
        .env("ZUT_TOOL_TIMEOUT_MS", "200")
        .env("ZUT_SHUTDOWN_GRACE_MS", "300")
        .env("ZUT_KILL_GRACE_MS", "200")
        .arg("-e")
        .arg(sb.path("exts").join("forever"))
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--mode",
            "json",
            "go",
        ])
        .output()
        .unwrap();
    let ev = events(&out);
    let results = of_type(&ev, "tool_result");
    assert_eq!(results[0]["is_error"], true, "{ev:?}");
    let text = results[0]["content"].to_string();
    assert!(text.contains("timeout"), "{text}");
    assert!(
        started.elapsed() < std::time::Duration::from_millis(5500),
        "capped, not run out"
    );
}
