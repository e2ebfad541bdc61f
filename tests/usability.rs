//! What a user meets first, through the real `zut` binary: global flags in
//! front of `ext`, usage errors and their exit status, what is remembered
//! in `config.json` and when, and the advice given for a command or tool
//! that a disabled extension may provide.

#[path = "common/http_server.rs"]
mod http_server;
mod support;

use http_server::{Reply, TestServer};
use serde_json::json;
use std::fs;
use support::*;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `$ZUT_HOME/extensions/<name>/extension.json`.
fn installed(sb: &Sandbox, name: &str, manifest: serde_json::Value) {
    let dir = sb.home().join("extensions").join(name);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
}

fn names(list_json: &[u8]) -> Vec<String> {
    let rows: serde_json::Value = serde_json::from_slice(list_json).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn global_flags_before_ext_are_taken_or_refused_never_a_prompt() {
    let sb = Sandbox::new();
    installed(&sb, "weather", json!({"name": "weather", "exec": "sh"}));
    let flagged = sb.path("flagged");
    fs::create_dir_all(&flagged).unwrap();
    fs::write(
        flagged.join("extension.json"),
        r#"{"name":"flagged","exec":"sh"}"#,
    )
    .unwrap();

    let out = zut(&sb).args(["ext", "list", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(names(&out.stdout), ["weather"]);

    for flag in ["--no-extensions", "--no-ext"] {
        let out = zut(&sb)
            .args([flag, "ext", "list", "--json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        // It shapes a run, not the listing of what is installed.
        assert_eq!(names(&out.stdout), ["weather"], "{flag}");
    }

    // --ext is relative to where zut starts, not to --cwd.
    let out = zut(&sb)
        .current_dir(sb.dir.path())
        .args([
            "--cwd", "proj", "--no-ext", "-e", "flagged", "ext", "list", "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(names(&out.stdout), ["flagged", "weather"]);

    for flags in [&["--yolo"][..], &["--provider", "openai"], &["-p"]] {
        let out = zut(&sb).args(flags).args(["ext", "list"]).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(flags[0]) && err.contains("zut ext"), "{err}");
        assert!(out.stdout.is_empty());
        assert!(
            !err.contains("provider configured"),
            "read as a prompt: {err}"
        );
    }
}

#[test]
fn ext_alone_prints_its_help_and_exits_2() {
    let sb = Sandbox::new();
    let out = zut(&sb).arg("ext").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    for sub in [
        "list", "install", "remove", "enable", "disable", "logs", "doctor",
    ] {
        assert!(err.contains(sub), "{sub}: {err}");
    }
    let out = zut(&sb).args(["ext", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("install"));
}

#[test]
fn max_steps_zero_is_a_usage_error() {
    let sb = Sandbox::new();
    let s = script(&sb, &[json!({"text": "hi"})]);
    let out = zut(&sb)
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--max-steps",
            "0",
            "-p",
            "x",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--max-steps"));
    let out = zut(&sb)
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--max-steps",
            "1",
            "-p",
            "x",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn unknown_provider_is_a_usage_error_and_nothing_is_saved() {
    let sb = Sandbox::new();
    let out = zut(&sb)
        .args(["--provider", "bogus", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    for p in ["anthropic", "openai", "script"] {
        assert!(err.contains(p), "{err}");
    }
    assert!(!sb.home().join("config.json").exists());

    // A bad value already in config.json names the file.
    fs::write(sb.home().join("config.json"), r#"{"provider": "bogus"}"#).unwrap();
    let out = zut(&sb).args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("config.json"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn start_errors_keep_their_text_and_exit_2() {
    let sb = Sandbox::new();
    let s = script(&sb, &[json!({"text": "hi"})]);
    let run = |extra: &[&str]| {
        let mut args = vec!["--provider", "script", "--script", &s];
        args.extend_from_slice(extra);
        args.extend(["-p", "x"]);
        let out = zut(&sb).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        text(&out.stderr)
    };
    assert_eq!(
        run(&["--thinking", " Loud "]),
        "zut: --thinking: thinking level \"loud\" is not one of off, low, medium, high\n"
    );
    let err = run(&["--cwd", "no-such-dir"]);
    assert!(err.starts_with("zut: --cwd no-such-dir: "), "{err}");
    assert!(err.contains("No such file or directory"), "{err}");
    fs::write(sb.home().join("config.json"), "{").unwrap();
    let err = run(&[]);
    assert!(err.starts_with("zut: "), "{err}");
    assert!(err.contains("config.json"), "{err}");
}

#[test]
fn provider_settings_are_remembered_only_after_a_working_run() {
    let sb = Sandbox::new();
    let config = sb.home().join("config.json");
    // Nothing listens on this port: the run fails, nothing is saved.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let out = zut(&sb)
        .env("ZUT_RETRY_BASE_MS", "1")
        .args([
            "--provider",
            "openai",
            "--api-key",
            "k",
            "--base-url",
            &dead,
        ])
        .args(["--model", "m1", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(!config.exists(), "a failed run remembers nothing");

    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "model": "m1",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let body = chunk(json!({"role": "assistant", "content": "hello"}), None)
        + &chunk(json!({}), Some("stop"))
        + "data: [DONE]\n\n";
    let server = TestServer::start(vec![Reply::sse(&body)]);
    let url = format!("{}/v1", server.url().trim_end_matches('/'));
    let out = zut(&sb)
        .args(["--provider", "openai", "--api-key", "k", "--base-url", &url])
        .args(["--model", "m1", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "hello");
    let saved: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(saved["provider"], "openai");
    assert_eq!(saved["model"], "m1");
    assert_eq!(saved["base_url"], url.as_str());
}

#[test]
fn a_disabled_extension_is_named_for_an_unknown_command_or_tool() {
    let sb = Sandbox::new();
    installed(
        &sb,
        "weather",
        json!({"name": "weather", "exec": "sh", "enabled": false}),
    );
    let (out, _) = run_scripted(&sb, &[], &[json!({"text": "unused"})], &["-p", "/forecast"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no command /forecast"), "{err}");
    assert!(err.contains("zut ext enable weather"), "{err}");

    let (out, requests) = run_scripted(
        &sb,
        &[],
        &[
            json!({"tool_calls": [{"id": "c1", "name": "forecast", "args": {}}]}),
            json!({"text": "done"}),
        ],
        &["-p", "weather?"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let second = requests.get(1).map(|r| r.to_string()).unwrap_or_default();
    assert!(second.contains("zut ext enable weather"), "{requests:?}");

    // Without a disabled extension the plain message stays.
    let (out, _) = run_scripted(
        &sb,
        &[],
        &[json!({"text": "x"})],
        &["--no-ext", "-p", "/forecast"],
    );
    let err = text(&out.stderr);
    assert!(err.contains("unknown command /forecast"), "{err}");
}

#[test]
fn extensions_hear_turn_end_with_max_steps() {
    let sb = Sandbox::new();
    let marker = sb.path("marker");
    let ext = sb.fixture("fx-events", &[opt("marker", &marker)]);
    let (out, _) = run_scripted(
        &sb,
        &[ext],
        &[json!({"tool_calls": [{"id": "c1", "name": "read", "args": {"path": "."}}]})],
        &["--max-steps", "1", "-p", "go"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let seen = fs::read_to_string(&marker).unwrap();
    assert!(
        seen.contains(r#"event:turn_end:{"stop": "max_steps"}"#),
        "{seen}"
    );
}

#[test]
fn every_example_installs_as_its_readme_says() {
    let sb = Sandbox::new();
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/extensions");
    for name in [
        "hello-py",
        "clock-node",
        "guard-sh",
        "redact-py",
        "weather-py",
    ] {
        let out = zut(&sb)
            .args(["ext", "install"])
            .arg(examples.join(name))
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {err}");
        assert!(err.contains(&format!("installed {name}")), "{err}");
    }
    let out = zut(&sb)
        .args([
            "--provider",
            "script",
            "--script",
            "/dev/null",
            "-p",
            "/hello zut",
        ])
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "Hello, zut!\n", "{}", text(&out.stderr));
}
