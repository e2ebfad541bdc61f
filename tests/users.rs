//! What users hit, pinned end to end through the real binary: each test
//! is named after what a person saw go wrong.

mod support;

use serde_json::{json, Value};
use support::*;

fn tool_results(requests: &[Value]) -> Vec<Value> {
    requests
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .collect()
}

#[test]
fn an_extension_tool_result_over_the_limit_is_cut_before_the_model_sees_it() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let big = "x".repeat(20_000);
    let (out, requests) = {
        let lines = [
            json!({"tool_calls": [{"id": "c1", "name": "fx_normal_echo", "args": {"text": big}}]}),
            json!({"text": "done"}),
        ];
        let s = script(&sb, &lines);
        let log = sb.path("requests.jsonl");
        let out = zut(&sb)
            .env("ZUT_TOOL_RESULT_MAX_BYTES", "1000")
            .arg("-e")
            .arg(&ext)
            .args(["--provider", "script", "--script", &s, "--script-log"])
            .arg(&log)
            .args(["--mode", "json", "go"])
            .output()
            .unwrap();
        (out, json_lines(&std::fs::read(&log).unwrap()))
    };
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&requests);
    let text = results[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.len() < 1500,
        "cut to about the limit: {} bytes",
        text.len()
    );
    assert!(text.contains("bytes cut"), "{text}");
    assert!(text.contains("tool_result_max_bytes"), "{text}");
    // The image after the text is kept: only text counts against the limit.
    assert_eq!(results[0]["content"][1]["type"], "image");
    // The event stream shows what the model saw.
    let event = json_lines(&out.stdout)
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(event["content"][0]["text"].as_str().unwrap(), text);
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_mistyped_flag_gets_a_did_you_mean() {
    let sb = Sandbox::new();
    let out = zut(&sb)
        .args(["--provder", "x", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean \"--provider\"?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_after_an_mcp_subcommand_prints_the_usage() {
    let sb = Sandbox::new();
    for args in [["mcp", "add", "--help"], ["mcp", "doctor", "-h"]] {
        let out = zut(&sb).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            stdout(&out).starts_with("usage: zut mcp add"),
            "{}",
            stdout(&out)
        );
        assert_eq!(stderr(&out), "");
    }
    // After `--` it is the server's own flag: the server is added.
    let out = zut(&sb)
        .args(["mcp", "add", "--global", "h", "--", "some-server", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("added MCP server h"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_mistyped_subcommand_gets_a_did_you_mean_not_a_terminal() {
    let sb = Sandbox::new();
    let out = zut(&sb).arg("sesions").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "zut: \"sesions\" is not a zut command; did you mean \"sessions\"? (to send it to the model: zut -p sesions)\n"
    );
    let out = zut(&sb).args(["mcp", "ad", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("zut mcp: unknown subcommand \"ad\"; did you mean \"add\"?\n"),
        "{}",
        stderr(&out)
    );
    // A prompt of several words, or one far from any command, is a prompt.
    let out = zut(&sb).args(["fix", "sessions"]).output().unwrap();
    assert!(
        stderr(&out).contains("needs a terminal"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_mistyped_ext_path_is_a_usage_error_naming_it() {
    let sb = Sandbox::new();
    let out = zut(&sb)
        .args(["--ext", "./nope", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--ext ./nope: no such directory"),
        "{}",
        stderr(&out)
    );
    std::fs::create_dir(sb.cwd().join("empty")).unwrap();
    let out = zut(&sb)
        .args(["--ext", "empty", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("has no extension.json"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn script_alone_picks_the_scripted_provider_and_clashes_are_named() {
    let sb = Sandbox::new();
    let s = script(&sb, &[json!({"text": "from the script"})]);
    let out = zut(&sb)
        .args(["--script", &s, "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from the script\n");
    let out = zut(&sb)
        .args(["--provider", "openai", "--script", &s, "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--script is for the scripted provider"),
        "{}",
        stderr(&out)
    );
}

/// A project extension whose program exits before `hello`.
fn broken_project_extension(sb: &Sandbox) {
    let dir = sb.cwd().join(".zut/extensions/bad");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        r#"{"name":"bad","exec":"./run.sh"}"#,
    )
    .unwrap();
    std::fs::write(dir.join("run.sh"), "#!/bin/sh\necho oops >&2\nexit 3\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn ext_doctor_names_a_failed_extension_s_directory_and_log_once() {
    let sb = Sandbox::new();
    broken_project_extension(&sb);
    let out = zut(&sb)
        .env("ZUT_TRUST_ALL", "1")
        .args(["ext", "doctor"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("directory:").count(), 1, "{text}");
    assert_eq!(text.matches("log:").count(), 1, "{text}");
    assert!(
        text.contains("exit status 3") && text.contains("oops"),
        "{text}"
    );
}

#[test]
fn global_flags_before_ext_do_not_change_what_ext_list_shows() {
    let sb = Sandbox::new();
    broken_project_extension(&sb);
    let plain = zut(&sb).args(["ext", "list"]).output().unwrap();
    let flagged = zut(&sb)
        .args(["--no-extensions", "ext", "list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&plain.stdout).contains("bad"));
    assert_eq!(plain.stdout, flagged.stdout);
}

#[test]
fn claude_md_is_read_after_agents_md() {
    let sb = Sandbox::new();
    std::fs::write(sb.cwd().join("AGENTS.md"), "agents rule").unwrap();
    std::fs::write(sb.cwd().join("CLAUDE.md"), "claude rule").unwrap();
    let (out, requests) = run_scripted(&sb, &[], &[json!({"text": "ok"})], &["-p", "hi"]);
    assert_eq!(out.status.code(), Some(0));
    let system = requests[0]["system"].as_str().unwrap();
    let (a, c) = (
        system.find("agents rule").unwrap(),
        system.find("claude rule").unwrap(),
    );
    assert!(a < c, "{system}");
}

#[test]
fn the_open_file_soft_limit_is_raised_to_the_hard_limit() {
    let sb = Sandbox::new();
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [{"id": "c1", "name": "bash",
                "args": {"command": "echo soft=$(ulimit -Sn) hard=$(ulimit -Hn)", "timeout": 10}}]}),
            json!({"text": "ok"}),
        ],
    );
    let zut_bin = env!("CARGO_BIN_EXE_zut");
    // Lower the soft limit in a shell, then start zut from it.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -Sn 256 && exec \"$ZUT_BIN\" --provider script --script \"$SCRIPT\" --yolo --mode json go")
        .current_dir(sb.cwd())
        .env("ZUT_HOME", sb.home())
        .env("ZUT_BIN", zut_bin)
        .env("SCRIPT", &s)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let result = json_lines(&out.stdout)
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .expect("the bash call ran");
    let text = result["content"][0]["text"].as_str().unwrap().to_string();
    let soft = text
        .split("soft=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    let hard = text
        .split("hard=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    assert_eq!(soft, hard, "{text}");
    assert_ne!(soft, "256", "{text}");
}

#[test]
fn an_unwritable_zut_home_warns_once_and_zut_goes_on() {
    let sb = Sandbox::new();
    // A home below a regular file cannot be created, not even by root.
    let blocker = sb.path("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let home = blocker.join("zut");
    let ext = sb.fixture("fx-normal", &[]);
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [{"id": "c1", "name": "fx_normal_echo", "args": {"text": "hi"}}]}),
            json!({"text": "all fine"}),
        ],
    );
    let out = zut(&sb)
        .env("ZUT_HOME", &home)
        .arg("-e")
        .arg(&ext)
        .args(["--provider", "script", "--script", &s, "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "all fine\n");
    assert_eq!(
        stderr(&out).matches("warning").count(),
        1,
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("going on without one"),
        "{}",
        stderr(&out)
    );
}

/// `n` installed extensions `e0`… that do nothing (never started here).
fn idle_extensions(sb: &Sandbox, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let name = format!("e{i}");
            let dir = sb.home().join("extensions").join(&name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("extension.json"),
                json!({"name": name, "version": "1", "exec": "./run.sh"}).to_string(),
            )
            .unwrap();
            name
        })
        .collect()
}

#[test]
fn many_zut_processes_changing_config_json_at_once_lose_no_change() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home().join("config.json"),
        "{\"provider\": \"openai\", \"theme\": \"kept\"}\n",
    )
    .unwrap();
    let names = idle_extensions(&sb, 24);
    // All started before any is waited for: their read-modify-writes of
    // the one file overlap.
    let children: Vec<_> = names
        .iter()
        .map(|n| {
            zut(&sb)
                .args(["ext", "disable", n, "--global"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let config: Value =
        serde_json::from_slice(&std::fs::read(sb.home().join("config.json")).unwrap()).unwrap();
    let recorded = config["extensions_enabled"]["global"].as_object().unwrap();
    let mut missing: Vec<&String> = names
        .iter()
        .filter(|n| recorded.get(*n) != Some(&json!(false)))
        .collect();
    missing.sort();
    assert!(missing.is_empty(), "lost: {missing:?} in {config}");
    assert_eq!(config["provider"], "openai");
    assert_eq!(config["theme"], "kept");
    use std::os::unix::fs::PermissionsExt;
    let lock = sb.home().join("config.json.lock");
    let mode = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_config_change_that_cannot_take_the_lock_says_which_file_and_changes_nothing() {
    let sb = Sandbox::new();
    idle_extensions(&sb, 1);
    let config = sb.home().join("config.json");
    std::fs::write(&config, "{\"theme\": \"kept\"}\n").unwrap();
    let lock = sb.home().join("config.json.lock");
    let held = std::fs::File::create(&lock).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let out = zut(&sb)
        .env("ZUT_CONFIG_LOCK_MS", "200")
        .args(["ext", "disable", "e0", "--global"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&lock.display().to_string()), "{err}");
    assert!(
        err.contains("another zut process has held it for 200 ms"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "{\"theme\": \"kept\"}\n"
    );
    // Released, the same change goes through.
    drop(held);
    let out = zut(&sb)
        .args(["ext", "disable", "e0", "--global"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(&config)
        .unwrap()
        .contains("\"e0\": false"));
}

/// Whether `pid` has ended: gone, or a zombie nobody reaps (an orphan
/// whose new parent is a container's init that does not reap).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// The pids written to `files` once all are written (`None` past the
/// deadline).
fn pids_from(files: &[std::path::PathBuf]) -> Option<Vec<u32>> {
    let mut pids = Vec::new();
    let ok = eventually(std::time::Duration::from_secs(20), || {
        pids = files
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .filter_map(|t| t.trim().parse().ok())
            .collect();
        pids.len() == files.len()
    });
    ok.then_some(pids)
}

/// `kill -9` of zut, then every pid must end within the deadline.
fn kill_zut_and_expect_gone(mut zut: std::process::Child, pids: &[u32]) {
    zut.kill().unwrap();
    zut.wait().unwrap();
    let gone = eventually(std::time::Duration::from_secs(10), || {
        pids.iter().all(|&p| ended(p))
    });
    let left: Vec<u32> = pids.iter().copied().filter(|&p| !ended(p)).collect();
    for &p in &left {
        // SAFETY: plain kill(2) of a process this test started.
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
    assert!(gone, "left running after kill -9 of zut: {left:?}");
}

#[test]
fn what_a_bash_call_forked_dies_when_zut_is_killed_outright() {
    let sb = Sandbox::new();
    // A background job, a shell that forks (it waits for its sleep), and
    // a pipeline; the pids land in files once everything runs.
    let command = "sleep 300 & echo $! > bg.pid; \
                   sh -c 'echo $$ > sh.pid; sleep 300; true' & \
                   sleep 300 | cat & echo $! > pipe.pid; \
                   wait";
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [{"id": "c1", "name": "bash", "args": {"command": command, "timeout": 600}}]}),
            json!({"text": "never"}),
        ],
    );
    let child = zut(&sb)
        .args(["--provider", "script", "--script", &s, "--yolo", "-p", "go"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let files: Vec<_> = ["bg.pid", "sh.pid", "pipe.pid"]
        .iter()
        .map(|f| sb.cwd().join(f))
        .collect();
    let Some(pids) = pids_from(&files) else {
        let mut child = child;
        let _ = child.kill();
        panic!("the command never started");
    };
    kill_zut_and_expect_gone(child, &pids);
}

#[test]
fn what_a_hook_forked_dies_when_zut_is_killed_outright() {
    let sb = Sandbox::new();
    let pid_file = sb.path("hook-bg.pid");
    let command = format!("sleep 300 & echo $! > '{}'; wait", pid_file.display());
    std::fs::write(
        sb.home().join("settings.json"),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}})
            .to_string(),
    )
    .unwrap();
    let s = script(&sb, &[json!({"text": "never"})]);
    let child = zut(&sb)
        .env("HOME", sb.path("home"))
        .args(["--provider", "script", "--script", &s, "-p", "go"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let Some(pids) = pids_from(std::slice::from_ref(&pid_file)) else {
        let mut child = child;
        let _ = child.kill();
        panic!("the hook never started");
    };
    kill_zut_and_expect_gone(child, &pids);
}
