//! Claude Code hooks through the real binary: a project's
//! `.claude/settings.json` with a bash validator, a `.env` guard, a
//! post-edit formatter, a prompt-context hook and a stop hook.

mod support;

use serde_json::{json, Value};
use support::*;

fn settings(sb: &Sandbox) {
    let fx = fixtures().parent().unwrap().join("hooks");
    let f = |n: &str| fx.join(n).display().to_string();
    let doc = json!({"hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": format!("sh {}", f("bash_validator.sh"))}]},
            {"matcher": "Read|Edit|Write", "hooks": [{"type": "command", "command": format!("python3 {}", f("env_guard.py"))}]},
            {"matcher": ".*", "hooks": [{"type": "command", "command": format!("sh {}", f("bash_validator.sh"))}]}
        ],
        "PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": format!("sh {}", f("formatter.sh"))}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": format!("sh {}", f("prompt_context.sh"))}]}],
        "Stop": [{"hooks": [{"type": "command", "command": format!("sh {}", f("stop_once.sh"))}]}],
        "PreCompact": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:1"}]}]
    }});
    std::fs::create_dir_all(sb.cwd().join(".claude")).unwrap();
    std::fs::write(sb.cwd().join(".claude/settings.json"), doc.to_string()).unwrap();
}

#[test]
fn a_real_projects_hooks_behave_as_in_claude_code() {
    let sb = Sandbox::new();
    settings(&sb);
    std::fs::write(sb.cwd().join(".env"), "KEY=1").unwrap();
    let log = sb.path("requests.jsonl");
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [
                {"id": "c1", "name": "bash", "args": {"command": "rm -rf /tmp/nothing", "timeout": 5}},
                {"id": "c2", "name": "read", "args": {"path": ".env"}},
                {"id": "c3", "name": "write", "args": {"path": "a.txt", "content": "hello"}}
            ]}),
            json!({"text": "done"}),
            json!({"text": "tests pass"}),
        ],
    );
    let out = zut(&sb)
        .env("HOME", sb.path("home"))
        .env("ZUT_TRUST_ALL", "1")
        .args(["--provider", "script", "--script", &s, "--script-log"])
        .arg(&log)
        .args(["--yolo", "--mode", "json", "go"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{err} {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let events = json_lines(&out.stdout);
    let of = |t: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == t).collect() };
    let blocked = of("tool_blocked");
    assert_eq!(blocked.len(), 2, "{events:?}");
    assert_eq!(blocked[0]["reason"], "rm -rf is not allowed here");
    assert!(blocked[0]["extension"]
        .as_str()
        .unwrap()
        .starts_with("hook sh "));
    assert_eq!(blocked[1]["reason"], "secrets stay secret");
    assert_eq!(
        std::fs::read_to_string(sb.cwd().join("a.txt")).unwrap(),
        "HELLO"
    );
    // The untrusted-type handler is skipped with a warning naming the path.
    assert!(of("ext_warning").iter().any(|w| w["message"]
        .as_str()
        .unwrap()
        .contains("hooks.PreCompact[0].hooks[0]")));
    // The bash validator appears in two groups but runs once per call.
    let bash_runs = of("hook")
        .iter()
        .filter(|h| {
            h["event"] == "PreToolUse" && h["command"].as_str().unwrap().contains("bash_validator")
        })
        .count();
    assert_eq!(bash_runs, 3, "one per call, de-duplicated");
    let timeout_free = of("hook").iter().all(|h| h["outcome"] != "timeout");
    assert!(timeout_free);
    let reqs = json_lines(&std::fs::read(&log).unwrap());
    assert_eq!(reqs.len(), 3, "the stop hook continued once");
    assert!(reqs[0]["hidden_context"]
        .to_string()
        .contains("branch: main"));
    assert!(reqs[1]["hidden_context"].to_string().contains("formatted "));
    assert!(
        !reqs[2]["hidden_context"].to_string().contains("formatted "),
        "one-shot"
    );
    assert!(reqs[2]["messages"]
        .to_string()
        .contains("run the tests first"));
    assert!(!reqs[0]["messages"].to_string().contains("branch: main"));
}

#[test]
fn print_mode_says_which_hook_blocked_and_why() {
    let sb = Sandbox::new();
    settings(&sb);
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [
                {"id": "c1", "name": "bash", "args": {"command": "rm -rf /tmp/nothing", "timeout": 5}}
            ]}),
            json!({"text": "done"}),
            json!({"text": "tests pass"}),
        ],
    );
    let out = zut(&sb)
        .env("HOME", sb.path("home"))
        .env("ZUT_TRUST_ALL", "1")
        .args(["--provider", "script", "--script", &s, "--yolo", "-p", "go"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "tests pass");
    // Each hook is named by its command with the path cut to its file name.
    assert!(
        err.contains(
            "zut: hook \"sh …/bash_validator.sh\" blocked the bash call: rm -rf is not allowed here"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "zut: hook \"sh …/stop_once.sh\" did not let the agent stop: run the tests first"
        ),
        "{err}"
    );
}

#[test]
fn untrusted_projects_and_no_hooks_run_nothing() {
    let sb = Sandbox::new();
    settings(&sb);
    let s = script(&sb, &[json!({"text": "hi"})]);
    for extra in [vec![], vec!["--no-hooks"]] {
        let mut c = zut(&sb);
        c.env("HOME", sb.path("home"));
        if !extra.is_empty() {
            c.env("ZUT_TRUST_ALL", "1");
        }
        let out = c
            .args(["--provider", "script", "--script", &s, "--mode", "json"])
            .args(&extra)
            .arg("go")
            .output()
            .unwrap();
        let events = json_lines(&out.stdout);
        assert!(
            !events.iter().any(|e| e["type"] == "hook"),
            "{extra:?} {events:?}"
        );
        if extra.is_empty() {
            assert!(events.iter().any(|e| e["type"] == "ext_warning"
                && e["message"].as_str().unwrap().contains("zut ext trust")));
        }
    }
}

#[test]
fn a_timed_out_hook_loses_its_group_and_does_not_block() {
    let sb = Sandbox::new();
    let pidfile = sb.path("child.pid");
    let cmd = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
    let doc =
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"command": cmd, "timeout": 0.3}]}]}});
    std::fs::write(sb.home().join("settings.json"), doc.to_string()).unwrap();
    let s = script(&sb, &[json!({"text": "hi"})]);
    let out = zut(&sb)
        .env("HOME", sb.path("home"))
        .args(["--provider", "script", "--script", &s, "-p", "go"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("failed: hook timed out"), "{err}");
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(eventually(std::time::Duration::from_secs(5), || {
        !pid_exists(pid)
    }));
}
