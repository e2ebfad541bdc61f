//! Claude Code hooks, event by event, through the real binary with the
//! scripted provider: every event zut fires, exit codes, JSON fields and
//! their combination, matcher forms, the stdin shape of each built-in
//! tool, parallel runs, de-duplication, onFailure, trust and `zut hooks`.
//!
//! The hooks are the Python fixture `tests/fixtures/hooks/hook.py` (it
//! logs its input and answers as its arguments say) and the sh fixture
//! `log_input.sh`; each test has its own sandbox, `HOME` and `ZUT_HOME`.

mod support;

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Output;
use support::*;

fn hooks_dir() -> PathBuf {
    fixtures().parent().unwrap().join("hooks")
}

/// `s` quoted for `sh`.
fn q(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The command of a `hook.py` handler labelled `label` doing `action`.
fn hook(sb: &Sandbox, label: &str, action: &[&str]) -> String {
    let mut cmd = format!(
        "python3 {} {} {}",
        q(&hooks_dir().join("hook.py").display().to_string()),
        q(&sb.path("hooks.jsonl").display().to_string()),
        q(label)
    );
    for a in action {
        cmd.push(' ');
        cmd.push_str(&q(a));
    }
    cmd
}

/// One handler entry.
fn h(command: String) -> Value {
    json!({"type": "command", "command": command})
}

/// `$ZUT_HOME/settings.json` (not trust-gated) with these `hooks`.
fn user_settings(sb: &Sandbox, hooks: Value) {
    std::fs::write(
        sb.home().join("settings.json"),
        json!({ "hooks": hooks }).to_string(),
    )
    .unwrap();
}

/// What one run left behind.
struct Ran {
    out: Output,
    events: Vec<Value>,
    requests: Vec<Value>,
    /// The hook inputs `hook.py` logged, in the order they ended.
    hooks: Vec<Value>,
}

impl Ran {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn of(&self, t: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == t).collect()
    }
    fn labelled(&self, label: &str) -> Vec<&Value> {
        self.hooks.iter().filter(|r| r["label"] == label).collect()
    }
    fn hook_events(&self, event: &str) -> Vec<&Value> {
        self.of("hook")
            .into_iter()
            .filter(|e| e["event"] == event)
            .collect()
    }
}

/// Runs zut with the scripted provider; `mode` is `json` or `print`.
fn run(sb: &Sandbox, lines: &[Value], mode: &str, args: &[&str]) -> Ran {
    let s = script(sb, lines);
    let log = sb.path("requests.jsonl");
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(sb.path("hooks.jsonl"));
    let mut c = zut(sb);
    c.env("HOME", sb.path("home"))
        .env("ZUT_HOOK_TIMEOUT_MS", "20000")
        .args(["--provider", "script", "--script", &s, "--script-log"])
        .arg(&log);
    if mode == "json" {
        c.args(["--mode", "json"]);
    } else {
        c.arg("-p");
    }
    let out = c.args(args).output().unwrap();
    let events = if mode == "json" {
        json_lines(&out.stdout)
    } else {
        Vec::new()
    };
    let read = |p: PathBuf| std::fs::read(p).map(|b| json_lines(&b)).unwrap_or_default();
    Ran {
        events,
        requests: read(log),
        hooks: read(sb.path("hooks.jsonl")),
        out,
    }
}

fn bash(id: &str, command: &str) -> Value {
    json!({"id": id, "name": "bash", "args": {"command": command, "timeout": 5}})
}

fn calls(list: Vec<Value>) -> Value {
    json!({ "tool_calls": list })
}

fn text(t: &str) -> Value {
    json!({ "text": t })
}

/// The text of the tool result `id` in the last request's messages.
fn result_text(r: &Ran, id: &str) -> String {
    let last = r.requests.last().expect("a request");
    for m in last["messages"].as_array().unwrap() {
        for b in m["content"].as_array().unwrap() {
            if b["type"] == "tool_result" && b["call_id"] == id {
                return b["content"].to_string();
            }
        }
    }
    panic!("no result for {id} in {last}");
}

#[test]
fn session_start_output_is_hidden_context_of_the_first_request_only() {
    let sb = Sandbox::new();
    user_settings(
        &sb,
        json!({"SessionStart": [
            {"matcher": "startup", "hooks": [h(hook(&sb, "plain", &["say", "todo: fix the parser"]))]},
            {"hooks": [h(hook(&sb, "json", &["json", r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"branch wip"}}"#]))]},
            {"matcher": "resume", "hooks": [h(hook(&sb, "resume-only", &["ok"]))]}
        ]}),
    );
    let r = run(
        &sb,
        &[calls(vec![bash("c1", "true")]), text("done")],
        "json",
        &["--yolo", "go"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.requests.len(), 2);
    let first = r.requests[0]["hidden_context"].to_string();
    assert!(first.contains("todo: fix the parser") && first.contains("branch wip"));
    assert!(!r.requests[1]["hidden_context"]
        .to_string()
        .contains("branch wip"));
    assert!(!r.requests[0]["messages"].to_string().contains("branch wip"));
    let plain = r.labelled("plain");
    assert_eq!(plain.len(), 1);
    let input = &plain[0]["input"];
    assert_eq!(input["hook_event_name"], "SessionStart");
    assert_eq!(input["source"], "startup");
    assert!(!input["session_id"].as_str().unwrap().is_empty());
    assert!(input["transcript_path"]
        .as_str()
        .unwrap()
        .ends_with(".jsonl"));
    assert!(r.labelled("resume-only").is_empty(), "matcher on source");

    // --continue resumes: source "resume", and only the matching groups.
    let r = run(&sb, &[text("again")], "json", &["--continue", "more"]);
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.labelled("resume-only")[0]["input"]["source"], "resume");
    assert!(r.labelled("plain").is_empty());
}

#[test]
fn session_end_runs_at_exit_with_reason_other() {
    let sb = Sandbox::new();
    user_settings(
        &sb,
        json!({"SessionEnd": [{"hooks": [h(hook(&sb, "end", &["ok"]))]}]}),
    );
    let r = run(&sb, &[text("hi")], "print", &["go"]);
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    let end = r.labelled("end");
    assert_eq!(end.len(), 1, "{:?}", r.hooks);
    assert_eq!(end[0]["input"]["reason"], "other");
    assert_eq!(end[0]["input"]["hook_event_name"], "SessionEnd");
    assert!(!end[0]["input"]["session_id"].as_str().unwrap().is_empty());
}

#[test]
fn pre_compact_sees_the_trigger_and_instructions_and_exit_2_cancels() {
    let sb = Sandbox::new();
    let two = [text("one")];
    assert_eq!(
        run(&sb, &two, "json", &["first"]).out.status.code(),
        Some(0)
    );
    assert_eq!(
        run(&sb, &two, "json", &["--continue", "second"])
            .out
            .status
            .code(),
        Some(0)
    );
    user_settings(
        &sb,
        json!({
            "PreCompact": [{"matcher": "manual", "hooks": [h(hook(&sb, "pre", &["exit", "2", "not now"]))]}],
            "SessionStart": [{"matcher": "compact", "hooks": [h(hook(&sb, "after", &["ok"]))]}]
        }),
    );
    let r = run(
        &sb,
        &[text("the summary")],
        "print",
        &["--continue", "/compact keep the tests"],
    );
    assert_eq!(r.out.status.code(), Some(1), "cancelled: {}", r.stderr());
    assert!(
        r.stderr().contains("compaction cancelled by hook") && r.stderr().contains("not now"),
        "{}",
        r.stderr()
    );
    let pre = &r.labelled("pre")[0]["input"];
    assert_eq!(pre["trigger"], "manual");
    assert_eq!(pre["custom_instructions"], "keep the tests");
    assert!(r.requests.is_empty(), "no summary was asked for");
    assert!(r.labelled("after").is_empty());

    user_settings(
        &sb,
        json!({
            "PreCompact": [{"matcher": "auto", "hooks": [h(hook(&sb, "pre", &["exit", "2", "not now"]))]}],
            "SessionStart": [{"matcher": "compact", "hooks": [h(hook(&sb, "after", &["say", "re-read NOTES.md"]))]}]
        }),
    );
    let r = run(
        &sb,
        &[text("the summary"), text("ok")],
        "json",
        &["--continue", "/compact"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    assert!(r.labelled("pre").is_empty(), "matcher auto, trigger manual");
    assert_eq!(r.labelled("after")[0]["input"]["source"], "compact");
}

#[test]
fn each_built_in_tool_reaches_pre_tool_use_in_claude_codes_shape() {
    let sb = Sandbox::new();
    std::fs::write(sb.cwd().join("f.txt"), "alpha beta\n").unwrap();
    let log = sb.path("sh.jsonl");
    let sh = format!(
        "sh {} {}",
        q(&hooks_dir().join("log_input.sh").display().to_string()),
        q(&log.display().to_string())
    );
    user_settings(
        &sb,
        json!({"PreToolUse": [{"hooks": [h(sh)]}], "PostToolUse": [{"matcher": "Bash", "hooks": [h(hook(&sb, "post", &["ok"]))]}]}),
    );
    let r = run(
        &sb,
        &[
            calls(vec![
                bash("c1", "echo hi"),
                json!({"id": "c2", "name": "write", "args": {"path": "w.txt", "content": "x"}}),
                json!({"id": "c3", "name": "edit", "args": {"path": "f.txt", "edits": [{"oldText": "alpha", "newText": "gamma"}]}}),
                json!({"id": "c4", "name": "edit", "args": {"path": "f.txt", "edits": [{"oldText": "gamma", "newText": "a"}, {"oldText": "beta", "newText": "b"}]}}),
                json!({"id": "c5", "name": "read", "args": {"path": "f.txt", "offset": 1, "limit": 5}}),
                json!({"id": "c6", "name": "grep", "args": {"pattern": "a", "path": "."}}),
                json!({"id": "c7", "name": "mcp__files__stat", "args": {"p": 1}}),
            ]),
            text("done"),
        ],
        "json",
        &["--yolo", "go"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    let seen = json_lines(&std::fs::read(&log).unwrap());
    let by_id = |id: &str| {
        seen.iter()
            .find(|i| i["tool_use_id"] == id)
            .unwrap_or_else(|| panic!("{id} not seen: {seen:?}"))
    };
    // file_path is absolute, under the `cwd` the input names.
    let abs = |f: &str| format!("{}/{f}", by_id("c2")["cwd"].as_str().unwrap());
    let b = by_id("c1");
    assert_eq!(b["hook_event_name"], "PreToolUse");
    assert_eq!(b["tool_name"], "Bash");
    assert_eq!(
        b["tool_input"],
        json!({"command": "echo hi", "timeout": 5000})
    );
    assert_eq!(b["permission_mode"], "bypassPermissions");
    assert_eq!(by_id("c2")["tool_name"], "Write");
    assert_eq!(
        by_id("c2")["tool_input"],
        json!({"file_path": abs("w.txt"), "content": "x"})
    );
    let e = by_id("c3");
    assert_eq!(e["tool_name"], "Edit");
    assert_eq!(e["tool_input"]["file_path"], abs("f.txt"));
    assert_eq!(e["tool_input"]["old_string"], "alpha");
    assert_eq!(e["tool_input"]["new_string"], "gamma");
    let m = by_id("c4");
    assert_eq!(m["tool_name"], "MultiEdit");
    assert_eq!(
        m["tool_input"]["edits"],
        json!([{"old_string": "gamma", "new_string": "a"}, {"old_string": "beta", "new_string": "b"}])
    );
    assert_eq!(by_id("c5")["tool_name"], "Read");
    assert_eq!(
        by_id("c5")["tool_input"],
        json!({"file_path": abs("f.txt"), "offset": 1, "limit": 5})
    );
    assert_eq!(by_id("c6")["tool_name"], "Grep");
    assert_eq!(
        by_id("c6")["tool_input"],
        json!({"pattern": "a", "path": "."})
    );
    assert_eq!(by_id("c7")["tool_name"], "mcp__files__stat");
    assert_eq!(by_id("c7")["tool_input"], json!({"p": 1}));
    // PostToolUse for Bash: Claude Code's tool_response.
    let post = &r.labelled("post")[0]["input"];
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_use_id"], "c1");
    assert!(post["tool_response"]["stdout"]
        .as_str()
        .unwrap()
        .contains("hi"));
    assert_eq!(r.labelled("post").len(), 1, "only Bash matched");
}

#[test]
fn exit_codes_block_warn_or_pass() {
    let sb = Sandbox::new();
    user_settings(
        &sb,
        json!({"PreToolUse": [
            {"matcher": "Bash", "hooks": [h(hook(&sb, "gate", &["exit", "2", "no network commands"]))]},
            {"matcher": "Write", "hooks": [h(hook(&sb, "broken", &["exit", "1", "linter crashed"]))]},
            {"matcher": "Read", "hooks": [h(hook(&sb, "chatty", &["say", "not json, ignored"]))]}
        ]}),
    );
    std::fs::write(sb.cwd().join("r.txt"), "read me").unwrap();
    let r = run(
        &sb,
        &[
            calls(vec![
                bash("c1", "curl example.com"),
                json!({"id": "c2", "name": "write", "args": {"path": "w.txt", "content": "written"}}),
                json!({"id": "c3", "name": "read", "args": {"path": "r.txt"}}),
            ]),
            text("done"),
        ],
        "print",
        &["--yolo", "go"],
    );
    let err = r.stderr();
    assert_eq!(r.out.status.code(), Some(0), "{err}");
    assert!(result_text(&r, "c1").contains("no network commands"));
    assert!(
        err.contains("blocked the bash call: no network commands") && err.contains("gate"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd().join("w.txt")).unwrap(),
        "written"
    );
    assert!(err.contains("(PreToolUse) failed: linter crashed"), "{err}");
    assert!(result_text(&r, "c3").contains("read me"));
}

#[test]
fn permission_decisions_combine_deny_over_ask_over_allow() {
    let sb = Sandbox::new();
    let allow =
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}"#;
    let ask = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check it"}}"#;
    let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"never on Fridays"}}"#;
    user_settings(
        &sb,
        json!({"PreToolUse": [
            {"matcher": "Bash", "hooks": [h(hook(&sb, "allow", &["json", allow]))]},
            {"matcher": "Write", "hooks": [h(hook(&sb, "allow2", &["json", allow])), h(hook(&sb, "ask", &["json", ask]))]},
            {"matcher": "Edit", "hooks": [h(hook(&sb, "allow3", &["json", allow])), h(hook(&sb, "ask2", &["json", ask])), h(hook(&sb, "deny", &["json", deny]))]}
        ]}),
    );
    std::fs::write(sb.cwd().join("e.txt"), "old").unwrap();
    // No --yolo: print mode cannot confirm, so only "allow" runs bash.
    let r = run(
        &sb,
        &[
            calls(vec![
                bash("c1", "echo allowed-by-hook"),
                json!({"id": "c2", "name": "write", "args": {"path": "w.txt", "content": "x"}}),
                json!({"id": "c3", "name": "edit", "args": {"path": "e.txt", "edits": [{"oldText": "old", "newText": "new"}]}}),
            ]),
            text("done"),
        ],
        "json",
        &["go"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    assert!(result_text(&r, "c1").contains("allowed-by-hook"));
    assert!(
        result_text(&r, "c2").contains("asks for confirmation"),
        "{}",
        result_text(&r, "c2")
    );
    assert!(!sb.cwd().join("w.txt").exists());
    assert!(result_text(&r, "c3").contains("never on Fridays"));
    assert_eq!(
        std::fs::read_to_string(sb.cwd().join("e.txt")).unwrap(),
        "old"
    );
    let outcomes: Vec<String> = r
        .hook_events("PreToolUse")
        .iter()
        .map(|e| e["outcome"].as_str().unwrap().to_string())
        .collect();
    for o in ["approve", "ask", "block"] {
        assert!(outcomes.iter().any(|x| x == o), "{outcomes:?}");
    }
}

#[test]
fn updated_input_applies_in_configuration_order_and_legacy_decisions_work() {
    let sb = Sandbox::new();
    let first = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"echo first"}}}"#;
    let second = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo second","timeout":2500}}}"#;
    user_settings(
        &sb,
        json!({"PreToolUse": [
            {"matcher": "Bash", "hooks": [h(hook(&sb, "u1", &["json", first])), h(hook(&sb, "u2", &["json", second]))]},
            {"matcher": "Write", "hooks": [h(hook(&sb, "legacy-approve", &["json", r#"{"decision":"approve","suppressOutput":true}"#]))]},
            {"matcher": "Read", "hooks": [h(hook(&sb, "legacy-block", &["json", r#"{"decision":"block","reason":"old style no"}"#]))]}
        ]}),
    );
    let r = run(
        &sb,
        &[
            calls(vec![
                bash("c1", "echo original"),
                json!({"id": "c2", "name": "write", "args": {"path": "w.txt", "content": "ok"}}),
                json!({"id": "c3", "name": "read", "args": {"path": "w.txt"}}),
            ]),
            text("done"),
        ],
        "json",
        &["go"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    let call = r
        .of("tool_call")
        .into_iter()
        .find(|e| e["id"] == "c1")
        .cloned()
        .unwrap();
    assert_eq!(
        call["args"],
        json!({"command": "echo second", "timeout": 3})
    );
    assert!(result_text(&r, "c1").contains("second"));
    assert_eq!(
        std::fs::read_to_string(sb.cwd().join("w.txt")).unwrap(),
        "ok",
        "legacy approve skips confirmation"
    );
    assert!(result_text(&r, "c3").contains("old style no"));
}

#[test]
fn continue_false_ends_the_prompt_and_system_message_is_shown() {
    let sb = Sandbox::new();
    user_settings(
        &sb,
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [h(hook(&sb, "halt", &["json", r#"{"continue":false,"stopReason":"budget exhausted","systemMessage":"halting now"}"#]))]}]}),
    );
    let r = run(
        &sb,
        &[calls(vec![bash("c1", "echo never")]), text("unreached")],
        "print",
        &["--yolo", "go"],
    );
    let err = r.stderr();
    assert_eq!(r.out.status.code(), Some(1), "{err}");
    assert_eq!(r.requests.len(), 1, "the prompt ended after the call");
    assert!(err.contains("[hook] halting now"), "{err}");
    assert!(err.contains("budget exhausted"), "{err}");
}

#[test]
fn matcher_forms_pick_their_tools() {
    let sb = Sandbox::new();
    let groups: Vec<Value> = [
        ("none", None),
        ("empty", Some("")),
        ("star", Some("*")),
        ("bash", Some("Bash")),
        ("edit-write", Some("Edit|Write")),
        ("mcp", Some("mcp__.*")),
        ("any-edit", Some(".*Edit")),
    ]
    .iter()
    .map(|(label, m)| {
        let mut g = json!({"hooks": [h(hook(&sb, label, &["ok"]))]});
        if let Some(m) = m {
            g["matcher"] = json!(m);
        }
        g
    })
    .collect();
    user_settings(&sb, json!({ "PreToolUse": groups }));
    std::fs::write(sb.cwd().join("f.txt"), "a b").unwrap();
    let r = run(
        &sb,
        &[
            calls(vec![
                bash("c1", "true"),
                json!({"id": "c2", "name": "write", "args": {"path": "w.txt", "content": "x"}}),
                json!({"id": "c3", "name": "edit", "args": {"path": "f.txt", "edits": [{"oldText": "a", "newText": "c"}, {"oldText": "b", "newText": "d"}]}}),
                json!({"id": "c4", "name": "mcp__git__log", "args": {}}),
            ]),
            text("done"),
        ],
        "json",
        &["--yolo", "go"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    let tools = |label: &str| -> Vec<String> {
        let mut v: Vec<String> = r
            .labelled(label)
            .iter()
            .map(|x| x["input"]["tool_name"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    let all = vec!["Bash", "MultiEdit", "Write", "mcp__git__log"];
    assert_eq!(tools("none"), all);
    assert_eq!(tools("empty"), all);
    assert_eq!(tools("star"), all);
    assert_eq!(tools("bash"), vec!["Bash"]);
    assert_eq!(tools("edit-write"), vec!["Write"], "exact names only");
    assert_eq!(tools("mcp"), vec!["mcp__git__log"]);
    assert_eq!(tools("any-edit"), vec!["MultiEdit"]);
}

#[test]
fn post_tool_use_and_failure_feed_the_next_request() {
    let sb = Sandbox::new();
    let ctx = r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint: 0 problems"}}"#;
    user_settings(
        &sb,
        json!({
            "PostToolUse": [{"matcher": "Write", "hooks": [h(hook(&sb, "ctx", &["json", ctx])), h(hook(&sb, "two", &["exit", "2", "tests now fail"]))]}],
            "PostToolUseFailure": [{"hooks": [h(hook(&sb, "fail", &["ok"]))]}]
        }),
    );
    let r = run(
        &sb,
        &[
            calls(vec![
                json!({"id": "c1", "name": "write", "args": {"path": "w.txt", "content": "x"}}),
                json!({"id": "c2", "name": "read", "args": {"path": "missing.txt"}}),
            ]),
            text("done"),
        ],
        "json",
        &["--yolo", "go"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    let hidden = r.requests[1]["hidden_context"].to_string();
    assert!(hidden.contains("lint: 0 problems") && hidden.contains("tests now fail"));
    assert!(!r.requests[1]["messages"].to_string().contains("lint: 0"));
    let fail = r.labelled("fail");
    assert_eq!(fail.len(), 1, "only the failed read");
    assert_eq!(fail[0]["input"]["hook_event_name"], "PostToolUseFailure");
    assert_eq!(fail[0]["input"]["tool_name"], "Read");
    assert!(r.labelled("ctx")[0]["input"]["tool_response"]["success"] == json!(true));
}

#[test]
fn user_prompt_submit_blocks_before_the_model_is_asked() {
    let sb = Sandbox::new();
    for answer in [
        vec!["exit", "2", "no secrets in prompts"],
        vec![
            "json",
            r#"{"decision":"block","reason":"no secrets in prompts"}"#,
        ],
    ] {
        user_settings(
            &sb,
            json!({"UserPromptSubmit": [{"hooks": [h(hook(&sb, "gate", &answer))]}]}),
        );
        let r = run(&sb, &[text("never")], "print", &["my password is hunter2"]);
        let err = r.stderr();
        assert_eq!(r.out.status.code(), Some(1), "{err}");
        assert!(r.requests.is_empty());
        assert!(err.contains("no secrets in prompts"), "{err}");
        assert_eq!(
            r.labelled("gate")[0]["input"]["prompt"],
            "my password is hunter2"
        );
    }
}

#[test]
fn stop_hooks_continue_with_stop_hook_active_and_are_capped_at_eight() {
    let sb = Sandbox::new();
    user_settings(
        &sb,
        json!({"Stop": [{"hooks": [h(hook(&sb, "stop", &["stop_once", "run the tests first"]))]}]}),
    );
    let r = run(&sb, &[text("done"), text("tests pass")], "json", &["go"]);
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    let stops = r.labelled("stop");
    assert_eq!(stops.len(), 2);
    assert_eq!(stops[0]["input"]["stop_hook_active"], false);
    assert_eq!(stops[1]["input"]["stop_hook_active"], true);
    assert!(r.requests[1]["messages"]
        .to_string()
        .contains("run the tests first"));

    let lines: Vec<Value> = (0..12).map(|i| text(&format!("answer {i}"))).collect();
    // A block with an empty reason (a formality in some published hooks)
    // lets the agent stop.
    user_settings(
        &sb,
        json!({"Stop": [{"hooks": [h(hook(&sb, "formal", &["json", r#"{"decision":"block","reason":""}"#]))]}]}),
    );
    let r = run(&sb, &lines, "json", &["go"]);
    assert_eq!(r.requests.len(), 1, "{}", r.stderr());
    user_settings(
        &sb,
        json!({"Stop": [{"hooks": [h(hook(&sb, "never", &["exit", "2", "keep going"]))]}]}),
    );
    let r = run(&sb, &lines, "json", &["go"]);
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.requests.len(), 9, "eight continues at most");
    assert_eq!(r.labelled("never").len(), 8);
}

#[test]
fn handlers_run_in_parallel_once_per_command_and_see_the_project_dir() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.cwd().join(".claude")).unwrap();
    let slow = |l: &str| h(hook(&sb, l, &["sleep", "0.6"]));
    std::fs::write(
        sb.cwd().join(".claude/settings.json"),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [slow("a"), slow("b"), slow("c")]}]}})
            .to_string(),
    )
    .unwrap();
    // The same command in the user file runs once across both sources.
    user_settings(
        &sb,
        json!({"UserPromptSubmit": [{"hooks": [slow("a")]}, {"matcher": "*", "hooks": [slow("b")]}]}),
    );
    let out = zut(&sb)
        .args(["ext", "trust"])
        .arg(sb.cwd())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let r = run(&sb, &[text("hi")], "json", &["go"]);
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.hooks.len(), 3, "de-duplicated: {:?}", r.hooks);
    let starts: Vec<f64> = r
        .hooks
        .iter()
        .map(|x| x["start"].as_f64().unwrap())
        .collect();
    let ends: Vec<f64> = r.hooks.iter().map(|x| x["end"].as_f64().unwrap()).collect();
    let latest_start = starts.iter().cloned().fold(f64::MIN, f64::max);
    let earliest_end = ends.iter().cloned().fold(f64::MAX, f64::min);
    // Each started before any ended: they ran side by side (a wall-clock
    // bound would flake on a loaded machine; the overlap cannot).
    assert!(latest_start < earliest_end, "they overlapped");
    let proj = std::fs::canonicalize(sb.cwd()).unwrap();
    for x in &r.hooks {
        let cwd = std::fs::canonicalize(x["cwd"].as_str().unwrap()).unwrap();
        assert_eq!(cwd, proj);
        assert!(x["claude_project_dir"].as_str().is_some());
        assert_eq!(x["claude_project_dir"], x["zut_project_dir"]);
    }
}

#[test]
fn on_failure_block_turns_a_timeout_into_a_block() {
    let sb = Sandbox::new();
    let slow = hook(&sb, "slow", &["sleep", "5"]);
    user_settings(
        &sb,
        json!({"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"command": slow, "timeout": 0.4, "onFailure": "block"}]},
            {"matcher": "Write", "hooks": [{"command": format!("{slow} #w"), "timeout": 0.4}]},
            {"matcher": "Read", "hooks": [{"command": "kill -9 $$"}]}
        ]}),
    );
    std::fs::write(sb.cwd().join("r.txt"), "content").unwrap();
    let r = run(
        &sb,
        &[
            calls(vec![
                bash("c1", "echo ran"),
                json!({"id": "c2", "name": "write", "args": {"path": "w.txt", "content": "x"}}),
                json!({"id": "c3", "name": "read", "args": {"path": "r.txt"}}),
            ]),
            text("done"),
        ],
        "json",
        &["--yolo", "go"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    assert!(!result_text(&r, "c1").contains("ran"), "blocked");
    assert!(
        sb.cwd().join("w.txt").exists(),
        "a timeout alone never blocks"
    );
    assert!(
        result_text(&r, "c3").contains("content"),
        "a crash never blocks"
    );
    let pre = r.hook_events("PreToolUse");
    assert_eq!(pre[0]["outcome"], "block");
    assert_eq!(pre[0]["exit"], Value::Null);
    assert_eq!(pre[1]["outcome"], "timeout");
    assert_eq!(pre[2]["outcome"], "error");
}

#[test]
fn zut_hooks_lists_sources_trust_and_what_it_skips() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.cwd().join(".claude")).unwrap();
    std::fs::write(
        sb.cwd().join(".claude/settings.json"),
        r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"sh check.sh"},{"type":"prompt","prompt":"is it safe?"},{"type":"command"}]}],"SubagentStop":[{"hooks":[{"command":"true"}]}]}}"#,
    )
    .unwrap();
    user_settings(
        &sb,
        json!({"Stop": [{"hooks": [{"type": "agent", "prompt": "x"}, {"command": "sh stop.sh"}]}]}),
    );
    let list = |json: bool| {
        let mut c = zut(&sb);
        c.env("HOME", sb.path("home")).arg("hooks");
        if json {
            c.arg("--json");
        }
        c.output().unwrap()
    };
    let out = list(true);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let entries = doc["hooks"].as_array().unwrap();
    let bash = entries
        .iter()
        .find(|e| e["command"] == "sh check.sh")
        .unwrap();
    assert_eq!(bash["event"], "PreToolUse");
    assert_eq!(bash["matcher"], "Bash");
    assert!(bash["source"]
        .as_str()
        .unwrap()
        .ends_with(".claude/settings.json"));
    assert_eq!(bash["runs"], false, "untrusted project");
    let stop = entries
        .iter()
        .find(|e| e["command"] == "sh stop.sh")
        .unwrap();
    assert_eq!(stop["runs"], true);
    let project = doc["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["path"]
                .as_str()
                .unwrap()
                .ends_with("proj/.claude/settings.json")
        })
        .unwrap();
    assert_eq!(project["trusted"], false);
    let kinds: Vec<&str> = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["prompt", "agent"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            ".claude/settings.json: hooks.PreToolUse[0].hooks[1]: handler type \"prompt\""
        ),
        "{err}"
    );
    assert!(
        err.contains(".claude/settings.json: hooks.PreToolUse[0].hooks[2].command"),
        "{err}"
    );
    assert!(err.contains("hooks.SubagentStop: never fires"), "{err}");
    let text = String::from_utf8_lossy(&list(false).stdout).into_owned();
    assert!(
        text.contains("not trusted") && text.contains("sh check.sh"),
        "{text}"
    );

    // `zut ext trust` trusts the project's hook files too.
    let t = zut(&sb)
        .args(["ext", "trust"])
        .arg(sb.cwd())
        .output()
        .unwrap();
    assert!(t.status.success());
    let doc: Value = serde_json::from_slice(&list(true).stdout).unwrap();
    let bash = doc["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["command"] == "sh check.sh")
        .cloned()
        .unwrap();
    assert_eq!(bash["runs"], true);
}

/// Reads JSON lines from `lines` until one of type `t` (panics after 20 s).
fn until_type(lines: &crossbeam_channel::Receiver<Value>, t: &str) -> Value {
    loop {
        match lines.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok(v) if v["type"] == t => return v,
            Ok(_) => {}
            Err(e) => panic!("no {t} line: {e}"),
        }
    }
}

#[test]
fn a_confirmation_dialog_is_a_notification_and_ask_asks_for_any_tool() {
    use std::io::{BufRead, Write};
    let sb = Sandbox::new();
    let ask = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}"#;
    user_settings(
        &sb,
        json!({
            "PreToolUse": [{"matcher": "Read", "hooks": [h(hook(&sb, "ask", &["json", ask]))]}],
            "Notification": [{"matcher": "permission_prompt", "hooks": [h(hook(&sb, "note", &["ok"]))]}]
        }),
    );
    // read never needs confirmation; the hook's "ask" makes it.
    let read = json!({"id": "c1", "name": "read", "args": {"path": "x.txt"}});
    let s = script(&sb, &[calls(vec![read]), text("done")]);
    let mut child = zut(&sb)
        .env("HOME", sb.path("home"))
        .env_remove("ZUT_RPC_TOKEN")
        .args(["--mode", "rpc", "--provider", "script", "--script", &s])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"id":"r1","type":"prompt","message":"go"}}"#).unwrap();
    let asked = until_type(&rx, "confirmation_requested");
    assert_eq!(asked["tool_name"], "read");
    let log = sb.path("hooks.jsonl");
    let noted = eventually(std::time::Duration::from_secs(10), || {
        std::fs::read(&log)
            .map(|b| json_lines(&b).iter().any(|r| r["label"] == "note"))
            .unwrap_or(false)
    });
    assert!(noted, "the Notification hook ran while the dialog was open");
    let confirm = json!({"id": "r2", "type": "confirm", "request_id": asked["request_id"], "decision": "deny"});
    writeln!(stdin, "{confirm}").unwrap();
    until_type(&rx, "done");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let records = json_lines(&std::fs::read(&log).unwrap());
    let note = records.iter().find(|r| r["label"] == "note").unwrap();
    assert_eq!(note["input"]["hook_event_name"], "Notification");
    assert_eq!(note["input"]["notification_type"], "permission_prompt");
    assert!(note["input"]["message"].as_str().unwrap().contains("read"));
}

#[test]
fn a_new_session_is_claude_codes_clear() {
    let sb = Sandbox::new();
    user_settings(
        &sb,
        json!({
            "SessionStart": [{"hooks": [h(hook(&sb, "start", &["ok"]))]}],
            "SessionEnd": [{"hooks": [h(hook(&sb, "end", &["ok"]))]}]
        }),
    );
    let r = run(&sb, &[], "json", &["/new"]);
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    let start: Vec<&Value> = r.labelled("start").iter().map(|x| &x["input"]).collect();
    let end: Vec<&Value> = r.labelled("end").iter().map(|x| &x["input"]).collect();
    assert_eq!(start.len(), 2);
    assert_eq!(start[0]["source"], "startup");
    assert_eq!(start[1]["source"], "clear");
    assert_eq!(end.len(), 2);
    assert_eq!(end[0]["reason"], "clear");
    assert_eq!(end[0]["session_id"], start[0]["session_id"]);
    assert_eq!(end[1]["reason"], "other");
    assert_eq!(end[1]["session_id"], start[1]["session_id"]);
    assert_ne!(start[0]["session_id"], start[1]["session_id"]);
}

/// The `.nf` example blocks of man/man7/zut-hooks.7, roff escapes undone.
fn man_examples() -> Vec<String> {
    let page = std::fs::read_to_string(hooks_dir().join("../../../man/man7/zut-hooks.7")).unwrap();
    page.split(".nf\n.RS\n")
        .skip(1)
        .map(|b| {
            b.split("\n.RE\n.fi")
                .next()
                .unwrap()
                .replace("\\e", "\\")
                .replace("\\(dq", "\"")
        })
        .collect()
}

#[test]
fn the_man_pages_examples_work_as_written() {
    let sb = Sandbox::new();
    let ex = man_examples();
    assert_eq!(ex.len(), 4, "{ex:?}");
    let dir = sb.cwd().join(".claude/hooks");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bash_guard.sh"), &ex[0]).unwrap();
    std::fs::write(dir.join("env_guard.py"), &ex[1]).unwrap();
    std::fs::write(dir.join("format.sh"), &ex[2]).unwrap();
    let settings: Value = serde_json::from_str(&ex[3]).expect("the settings are JSON");
    std::fs::write(sb.cwd().join(".claude/settings.json"), settings.to_string()).unwrap();
    std::fs::write(sb.cwd().join(".env"), "TOKEN=1").unwrap();
    let t = zut(&sb).args(["ext", "trust", "."]).output().unwrap();
    assert!(t.status.success(), "{t:?}");
    let r = run(
        &sb,
        &[
            calls(vec![
                bash("c1", "rm -rf build"),
                bash("c2", "sudo make install"),
                bash("c3", "echo fine"),
                json!({"id": "c4", "name": "read", "args": {"path": ".env"}}),
                json!({"id": "c5", "name": "write", "args": {"path": "m.rs", "content": "fn  main( ){}"}}),
            ]),
            text("done"),
        ],
        "json",
        &["--yolo", "go"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    assert!(result_text(&r, "c1").contains("use trash"));
    assert!(result_text(&r, "c2").contains("use trash"));
    assert!(result_text(&r, "c3").contains("fine"));
    assert!(result_text(&r, "c4").contains("stay out of the chat"));
    assert_eq!(
        std::fs::read_to_string(sb.cwd().join("m.rs")).unwrap(),
        "fn main() {}\n",
        "rustfmt ran: {:?}",
        r.hook_events("PostToolUse")
    );
    assert!(r.requests[1]["hidden_context"]
        .to_string()
        .contains("m.rs was reformatted"));
}

#[test]
fn a_large_input_reaches_the_hook_whole() {
    let sb = Sandbox::new();
    user_settings(
        &sb,
        json!({"PreToolUse": [{"matcher": "Write", "hooks": [h(hook(&sb, "big", &["ok"]))]}]}),
    );
    let content = "x".repeat(300_000);
    let r = run(
        &sb,
        &[
            calls(vec![
                json!({"id": "c1", "name": "write", "args": {"path": "big.txt", "content": content}}),
            ]),
            text("done"),
        ],
        "json",
        &["--yolo", "go"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    let seen = &r.labelled("big")[0]["input"]["tool_input"]["content"];
    assert_eq!(seen.as_str().unwrap().len(), 300_000);
}

#[test]
fn automatic_compaction_runs_pre_compact_auto_and_session_start_compact() {
    let sb = Sandbox::new();
    let r = run(&sb, &[text("one")], "json", &["first"]);
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    // A one-token window: the next request compacts first.
    std::fs::write(
        sb.home().join("config.json"),
        r#"{"models":{"script":{"context":1}}}"#,
    )
    .unwrap();
    user_settings(
        &sb,
        json!({
            "PreCompact": [{"matcher": "auto", "hooks": [h(hook(&sb, "pre", &["exit", "2", "keep it all"]))]}],
            "SessionStart": [{"matcher": "compact", "hooks": [h(hook(&sb, "after", &["say", "re-read NOTES.md"]))]}]
        }),
    );
    let r = run(&sb, &[text("two")], "json", &["--continue", "second"]);
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.labelled("pre")[0]["input"]["trigger"], "auto");
    assert_eq!(r.requests.len(), 1, "cancelled: no summary request");
    assert!(r.labelled("after").is_empty());

    user_settings(
        &sb,
        json!({
            "PreCompact": [{"matcher": "auto", "hooks": [h(hook(&sb, "pre", &["ok"]))]}],
            "SessionStart": [{"matcher": "compact", "hooks": [h(hook(&sb, "after", &["say", "re-read NOTES.md"]))]}]
        }),
    );
    let r = run(
        &sb,
        &[text("SUMMARY"), text("three")],
        "json",
        &["--continue", "third"],
    );
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.labelled("after")[0]["input"]["source"], "compact");
    let last = r.requests.last().unwrap();
    assert!(
        last["hidden_context"]
            .to_string()
            .contains("re-read NOTES.md"),
        "{last}"
    );
}

#[test]
fn a_hooks_output_is_capped_at_one_mebibyte() {
    let sb = Sandbox::new();
    // 3 MiB on stdout and on stderr; exit 0, so stdout is plain context.
    let flood = "head -c 3145728 /dev/zero | tr '\\0' x; head -c 3145728 /dev/zero >&2";
    user_settings(
        &sb,
        json!({"UserPromptSubmit": [{"hooks": [{"command": flood}]}]}),
    );
    let r = run(&sb, &[text("hi")], "json", &["go"]);
    assert_eq!(r.out.status.code(), Some(0), "{}", r.stderr());
    let hidden = r.requests[0]["hidden_context"][0].as_str().unwrap();
    assert_eq!(hidden.len(), 1 << 20);
    assert!(hidden.bytes().all(|b| b == b'x'));
}
