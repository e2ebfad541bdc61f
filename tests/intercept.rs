//! Lifecycle events, interception and tool confirmation end to end: real
//! interceptor extensions, the real binary with the scripted provider, and
//! `--script-log` to see exactly what the model was sent.

mod support;

use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use support::*;
use zut::agent::{Agent, ConfirmRequest, Confirmer, Decision, Options, Outcome};
use zut::cancel::CancelToken;
use zut::events::Event;

fn bash(id: &str, command: &str) -> Value {
    json!({"tool_calls": [{"id": id, "name": "bash", "args": {"command": command, "timeout": 10}}]})
}

fn find(events: &[Value], t: &str) -> Vec<Value> {
    events.iter().filter(|e| e["type"] == t).cloned().collect()
}

#[test]
fn a_guard_blocks_dangerous_bash_and_the_model_sees_the_reason() {
    let sb = Sandbox::new();
    let victim = sb.cwd().join("precious");
    std::fs::create_dir(&victim).unwrap();
    let (out, requests) = run_scripted(
        &sb,
        &[sb.fixture("fx-guard", &[])],
        &[
            bash("c1", &format!("rm -rf {}", victim.display())),
            bash("c2", "echo fine"),
            json!({"text": "ok"}),
        ],
        &["--yolo", "--mode", "json", "clean up"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(victim.exists(), "the blocked command did not run");
    let ev = json_lines(&out.stdout);
    let blocked = find(&ev, "tool_blocked");
    assert_eq!(blocked.len(), 1);
    assert_eq!(
        blocked[0]["reason"],
        "refused: matches danger pattern \"rm -rf\""
    );
    assert_eq!(blocked[0]["extension"], "fx-guard");
    let results = find(&ev, "tool_result");
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[1]["content"][0]["text"], "fine\n");
    // The model receives the reason as the tool error.
    let msgs = requests[1]["messages"].as_array().unwrap();
    let result = &msgs.last().unwrap()["content"][0];
    assert_eq!(
        (
            result["is_error"].as_bool(),
            result["content"][0]["text"].as_str()
        ),
        (
            Some(true),
            Some("refused: matches danger pattern \"rm -rf\"")
        )
    );
}

#[test]
fn rewrites_chain_in_load_order() {
    let sb = Sandbox::new();
    let (a, b) = (
        sb.fixture("fx-rewrite-a", &[]),
        sb.fixture("fx-rewrite-b", &[]),
    );
    let (out, requests) = run_scripted(
        &sb,
        &[a.clone(), b.clone()],
        &[bash("c1", "echo start"), json!({"text": "ok"})],
        &["--yolo", "--mode", "json", "go"],
    );
    assert_eq!(out.status.code(), Some(0));
    let call = &find(&json_lines(&out.stdout), "tool_call")[0];
    assert_eq!(
        call["args"],
        json!({"command": "echo start A B", "timeout": 10}),
        "tool_call shows the args after rewrites"
    );
    let msgs = requests[1]["messages"].as_array().unwrap();
    assert_eq!(
        msgs[1]["content"][0]["args"]["command"], "echo start",
        "the transcript keeps the model's call"
    );
    assert_eq!(msgs[2]["content"][0]["content"][0]["text"], "start A B\n");
    // Reversed load order, reversed chain.
    let (out, _) = run_scripted(
        &sb,
        &[b, a],
        &[bash("c1", "echo start"), json!({"text": "ok"})],
        &["--yolo", "--mode", "json", "go"],
    );
    assert_eq!(
        find(&json_lines(&out.stdout), "tool_call")[0]["args"]["command"],
        "echo start B A"
    );
}

#[test]
fn malformed_modified_args_keep_the_original() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-badargs", &[]);
    let (out, _) = run_scripted(
        &sb,
        &[ext],
        &[bash("c1", "echo same"), json!({"text": "ok"})],
        &["--yolo", "--mode", "json", "go"],
    );
    let ev = json_lines(&out.stdout);
    assert_eq!(find(&ev, "tool_call")[0]["args"]["command"], "echo same");
    assert_eq!(find(&ev, "tool_result")[0]["content"][0]["text"], "same\n");
    let log = std::fs::read_to_string(sb.home().join("logs/ext-fx-badargs.log")).unwrap();
    assert!(
        log.contains("modified_args for bash ignored: it must be a JSON object, got a string"),
        "{log}"
    );
}

#[test]
fn a_rewrite_dropping_the_bash_timeout_is_a_tool_error() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-rewrite-a", &[]);
    // The model's own call lacks the timeout; the rewrite keeps it missing.
    let (out, _) = run_scripted(
        &sb,
        &[ext],
        &[
            json!({"tool_calls": [{"id": "c1", "name": "bash", "args": {"command": "echo x"}}]}),
            json!({"text": "ok"}),
        ],
        &["--yolo", "--mode", "json", "go"],
    );
    assert_eq!(out.status.code(), Some(0));
    let r = &find(&json_lines(&out.stdout), "tool_result")[0];
    assert_eq!(r["is_error"], true);
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("timeout"),
        "{r}"
    );
}

#[test]
fn a_turn_gate_blocks_before_the_model_is_called() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-gate", &[]);
    let (out, requests) = run_scripted(
        &sb,
        std::slice::from_ref(&ext),
        &[json!({"text": "never"})],
        &["-p", "hi"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("turn blocked: closed for maintenance"),
        "{err}"
    );
    assert!(requests.is_empty(), "the provider was never called");
    let (out, _) = run_scripted(
        &sb,
        &[ext],
        &[json!({"text": "never"})],
        &["--mode", "json", "hi"],
    );
    let ev = json_lines(&out.stdout);
    assert!(find(&ev, "turn_blocked")[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("closed for maintenance"));
    let end = &find(&ev, "turn_end")[0];
    assert_eq!(end["stop"], "error");
}

#[test]
fn hidden_context_goes_to_one_request_only_and_is_never_persisted() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-context", &[]);
    let (out, requests) = run_scripted(
        &sb,
        &[ext],
        &[bash("c1", "echo a"), json!({"text": "ok"})],
        &["--yolo", "-p", "go"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        requests[0]["hidden_context"],
        json!(["[fx-context]\nCurrent phase: parse files (step 1)"])
    );
    assert_eq!(
        requests[1]["hidden_context"],
        json!(["[fx-context]\nCurrent phase: parse files (step 2)"])
    );
    let all = requests[1]["messages"].to_string();
    assert!(
        !all.contains("Current phase"),
        "context never enters the transcript: {all}"
    );
}

#[test]
fn a_redactor_changes_what_the_user_sees_not_what_the_model_said() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-redact", &[]);
    let (out, requests) = run_scripted(
        &sb,
        &[ext],
        &[
            json!({"text": "the key is SECRET", "tool_calls": [{"id": "c1", "name": "read", "args": {"path": "."}}]}),
            json!({"text": "again SECRET"}),
        ],
        &["--yolo", "-p", "go"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "again [redacted]\n");
    let msgs = requests[1]["messages"].as_array().unwrap();
    assert_eq!(
        msgs[1]["content"][0]["text"], "the key is SECRET",
        "the model still sees what it said"
    );
}

#[test]
fn a_slow_interceptor_counts_as_allow_at_the_deadline() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-slow-icpt", &[]);
    let s = script(&sb, &[bash("c1", "echo allowed"), json!({"text": "ok"})]);
    let out = zut(&sb)
        .env("ZUT_INTERCEPT_TIMEOUT_MS", "200")
        .arg("-e")
        .arg(&ext)
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--yolo",
            "--mode",
            "json",
            "go",
        ])
        .output()
        .unwrap();
    assert_eq!(
        find(&json_lines(&out.stdout), "tool_result")[0]["content"][0]["text"],
        "allowed\n"
    );
    let log = std::fs::read_to_string(sb.home().join("logs/ext-fx-slow-icpt.log")).unwrap();
    assert!(
        log.contains("intercept tool_call timed out after 200 ms; allowing"),
        "{log}"
    );
}

#[test]
fn an_interceptor_that_dies_counts_as_allow() {
    let sb = Sandbox::new();
    let (dies, guard) = (sb.fixture("fx-die-icpt", &[]), sb.fixture("fx-guard", &[]));
    let (out, _) = run_scripted(
        &sb,
        &[dies, guard],
        &[bash("c1", "echo survived"), json!({"text": "ok"})],
        &["--yolo", "--mode", "json", "go"],
    );
    let ev = json_lines(&out.stdout);
    assert_eq!(
        find(&ev, "tool_result")[0]["content"][0]["text"],
        "survived\n"
    );
    assert!(find(&ev, "ext_error")
        .iter()
        .any(|e| e["extension"] == "fx-die-icpt"));
}

#[test]
fn events_reach_subscribers_in_order() {
    let sb = Sandbox::new();
    let marker = sb.path("marker");
    let ext = sb.fixture("fx-events", &[opt("marker", &marker)]);
    let (out, _) = run_scripted(
        &sb,
        &[ext],
        &[bash("c1", "echo x"), json!({"text": "bye"})],
        &["--yolo", "--mode", "json", "go"],
    );
    assert_eq!(out.status.code(), Some(0));
    let seen: Vec<String> = std::fs::read_to_string(&marker)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("event:"))
        .map(|l| l.split(':').nth(1).unwrap().to_string())
        .collect();
    // The reference order: per step, turn_start, assistant_message, one
    // tool_call per call, turn_end; then the calls run.
    assert_eq!(
        seen,
        [
            "session_start",
            "turn_start",
            "assistant_message",
            "tool_call",
            "turn_end",
            "turn_start",
            "assistant_message",
            "turn_end"
        ],
        "yolo mode asks nobody, so no tool_confirmation_requested"
    );
    let text = std::fs::read_to_string(&marker).unwrap();
    assert!(text.contains(r#"event:tool_call:{"tool_args": {"command": "echo x", "timeout": 10}, "tool_id": "c1", "tool_name": "bash"}"#), "{text}");
    assert!(
        text.contains(r#"event:turn_end:{"stop": "end_turn"}"#),
        "{text}"
    );
    let log = std::fs::read_to_string(sb.home().join("logs/ext-fx-events.log")).unwrap();
    assert!(log.contains("unknown event \"no_such_event\""), "{log}");
}

/// A front end that answers confirmations from a list, and records them.
struct Answers(Mutex<Vec<Decision>>, Mutex<Vec<ConfirmRequest>>);

impl Confirmer for Answers {
    fn confirm(&self, req: &ConfirmRequest, _cancel: &CancelToken) -> Decision {
        self.1.lock().unwrap().push(req.clone());
        self.0.lock().unwrap().remove(0)
    }
}

#[test]
fn confirmation_is_a_question_any_front_end_answers() {
    let sb = Sandbox::new();
    let marker = sb.path("marker");
    let (host, sink) = sb.start(&[
        sb.fixture("fx-events", &[opt("marker", &marker)]),
        sb.fixture("fx-guard", &[]),
    ]);
    let s = script(
        &sb,
        &[
            bash("c1", "touch denied"),
            bash("c2", "touch allowed"),
            bash("c3", "touch always"),
            // "always" remembers this exact command, so the same one again
            // is not asked.
            bash("c4", "touch always"),
            bash("c5", "rm -rf /nonexistent-zut"),
            json!({"text": "done"}),
        ],
    );
    let provider = zut::provider::create(&zut::provider::Settings {
        provider: "script".into(),
        script: Some(s.into()),
        ..Default::default()
    })
    .unwrap();
    let answers = Arc::new(Answers(
        Mutex::new(vec![Decision::Deny, Decision::Allow, Decision::Always]),
        Mutex::new(vec![]),
    ));
    let opts = Options {
        cwd: sb.cwd(),
        max_steps: 10,
        yolo: false,
        confirmer: Some(answers.clone()),
        hooks: Default::default(),
        mcp: Default::default(),
    };
    let mut agent = Agent::new(provider, host.handle(), host.sink(), opts, &sb.home());
    let outcome = agent.prompt("go", &CancelToken::never());
    assert_eq!(
        outcome,
        Outcome::Done {
            text: Some("done".into())
        }
    );
    assert!(!sb.cwd().join("denied").exists());
    assert!(sb.cwd().join("allowed").exists() && sb.cwd().join("always").exists());
    let asked: Vec<String> = answers
        .1
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.tool_id.clone())
        .collect();
    assert_eq!(
        asked,
        ["c1", "c2", "c3"],
        "remembered and blocked calls are not asked"
    );
    assert_eq!(answers.1.lock().unwrap()[0].preview, "touch denied");
    let events = sink.events();
    let denied = events.iter().find_map(|e| match e {
        Event::ToolResult {
            id,
            content,
            is_error: true,
            ..
        } if id == "c1" => Some(zut::agent::content_text(content)),
        _ => None,
    });
    assert_eq!(denied.as_deref(), Some("the user declined to run bash"));
    let requested: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::ConfirmationRequested { .. }))
        .collect();
    assert_eq!(requested.len(), 3);
    drop(agent);
    shutdown_clean(host);
    // Subscribers heard exactly the three real questions.
    let heard: Vec<String> = std::fs::read_to_string(&marker)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("event:tool_confirmation_requested"))
        .map(String::from)
        .collect();
    assert_eq!(heard.len(), 3, "{heard:?}");
    assert!(
        heard[0].contains(r#""tool_preview": "touch denied""#),
        "{heard:?}"
    );
}

#[test]
fn a_blocked_answer_is_withheld_with_its_reason() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-hush", &[]);
    let (out, _) = run_scripted(
        &sb,
        std::slice::from_ref(&ext),
        &[json!({"text": "SECRET plans"})],
        &["-p", "go"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "the user does not see it");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("withheld by extension fx-hush: contains a secret"),
        "{err}"
    );
    let (out, _) = run_scripted(
        &sb,
        &[ext],
        &[json!({"text": "SECRET plans"})],
        &["--mode", "json", "go"],
    );
    let msg = &find(&json_lines(&out.stdout), "assistant_message")[0];
    assert_eq!(msg["blocked"], true);
    assert_eq!(msg["text"], "");
    assert_eq!(
        msg["reason"],
        "withheld by extension fx-hush: contains a secret"
    );
}

/// With an `assistant_message` interceptor loaded, the model's text is not
/// streamed as it arrives: streaming clients get what the user may see, in
/// one delta, and never the original.
#[test]
fn redacted_and_withheld_text_never_streams() {
    let sb = Sandbox::new();
    let redact = sb.fixture("fx-redact", &[]);
    let (out, _) = run_scripted(
        &sb,
        &[redact],
        &[json!({"text": "the key is SECRET"})],
        &["--mode", "json", "go"],
    );
    let events = json_lines(&out.stdout);
    let deltas: String = find(&events, "text_delta")
        .iter()
        .map(|e| e["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(deltas, "the key is [redacted]", "{events:?}");
    assert_eq!(
        find(&events, "assistant_message")[0]["text"],
        "the key is [redacted]"
    );

    let hush = sb.fixture("fx-hush", &[]);
    let (out, _) = run_scripted(
        &sb,
        &[hush],
        &[json!({"text": "SECRET plans"})],
        &["--mode", "json", "go"],
    );
    let events = json_lines(&out.stdout);
    assert!(find(&events, "text_delta").is_empty(), "{events:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("SECRET"));
}

/// Without such an interceptor the text streams as it comes, unchanged.
#[test]
fn text_streams_without_an_answer_interceptor() {
    let sb = Sandbox::new();
    let (out, _) = run_scripted(
        &sb,
        &[],
        &[json!({"text": "the key is SECRET"})],
        &["--mode", "json", "go"],
    );
    let events = json_lines(&out.stdout);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let delta = types.iter().position(|t| *t == "text_delta").unwrap();
    let message = types
        .iter()
        .position(|t| *t == "assistant_message")
        .unwrap();
    assert!(delta < message, "{types:?}");
    assert_eq!(events[delta]["delta"], "the key is SECRET");
}

/// Print mode says on stderr which extension blocked a call, and why.
#[test]
fn print_mode_names_the_extension_that_blocked_a_call() {
    let sb = Sandbox::new();
    let (out, _) = run_scripted(
        &sb,
        &[sb.fixture("fx-guard", &[])],
        &[bash("c1", "rm -rf /nonexistent"), json!({"text": "ok"})],
        &["--yolo", "-p", "clean up"],
    );
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "zut: extension fx-guard blocked the bash call: refused: matches danger pattern \"rm -rf\""
        ),
        "{err}"
    );
}
