//! What zut refuses to let untrusted input do, through the real binary:
//! escape sequences reaching a terminal, files that would block zut,
//! project extensions starting in a directory nobody trusted, and
//! registrations beyond their caps. man/zut-security.7 names these tests.

mod support;

use serde_json::json;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Output};
use support::*;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `cmd` with its stdout on a fresh pseudo-terminal; returns what the
/// terminal received and the exit status.
fn on_a_terminal(mut cmd: Command) -> (Vec<u8>, Option<i32>) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the given integers.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = cmd
        .stdout(slave)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // `cmd` still holds the slave end inside its Stdio: drop it so that
    // reading the master ends (EIO) when the child closes its copy.
    drop(cmd);
    let mut master = std::fs::File::from(master);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match master.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let status = child.wait().unwrap();
    (got, status.code())
}

const HOSTILE: &str = "\x1b[31mred\x1b[0m \x1b]52;c;ZXZpbA==\x07\x1b]8;;http://x\x1b\\link\u{9b}2J";

#[test]
fn print_mode_keeps_bytes_for_a_pipe_and_strips_them_for_a_terminal() {
    let sb = Sandbox::new();
    let ext = sb.fixture(
        "fx-normal",
        &["greet=note\x1b]0;title\x07 \x1b[2Jhere\r".to_string()],
    );
    let command = format!("/echo {HOSTILE}");
    let piped = zut(&sb)
        .arg("--ext")
        .arg(&ext)
        .args(["-p", &command])
        .output()
        .unwrap();
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    assert_eq!(
        String::from_utf8_lossy(&piped.stdout),
        format!("echo: {HOSTILE}\n"),
        "a pipe gets the display text byte for byte"
    );
    // Notes on stderr are always cleaned.
    assert!(
        stderr(&piped).contains("[fx-normal] note here\n"),
        "{:?}",
        stderr(&piped)
    );
    assert!(!piped.stderr.contains(&0x1b));

    let mut cmd = zut(&sb);
    cmd.arg("--ext").arg(&ext).args(["-p", &command]);
    let (tty, code) = on_a_terminal(cmd);
    assert_eq!(code, Some(0));
    let tty = String::from_utf8_lossy(&tty);
    // The terminal turns "\n" into "\r\n" itself (onlcr).
    assert_eq!(tty, "echo: red link\r\n");

    // Model text: the same rule.
    let (piped, _) = run_scripted(&sb, &[], &[json!({"text": HOSTILE})], &["-p", "hi"]);
    assert_eq!(
        String::from_utf8_lossy(&piped.stdout),
        format!("{HOSTILE}\n")
    );
    let s = script(&sb, &[json!({"text": HOSTILE})]);
    let mut cmd = zut(&sb);
    cmd.args(["--provider", "script", "--script", &s, "-p", "hi"]);
    let (tty, code) = on_a_terminal(cmd);
    assert_eq!(
        (String::from_utf8_lossy(&tty).as_ref(), code),
        ("red link\r\n", Some(0))
    );
}

/// `fx-normal` installed as a project extension of the sandbox's project.
fn project_extension(sb: &Sandbox) -> std::path::PathBuf {
    let ext = sb.fixture("fx-normal", &[]);
    let dst = sb.cwd().join(".zut/extensions/fx-normal");
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::rename(ext, &dst).unwrap();
    dst
}

fn load_events(sb: &Sandbox, env: &[(&str, &str)]) -> Vec<serde_json::Value> {
    let out = zut(sb)
        .envs(env.iter().copied())
        .args(["--mode", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    json_lines(&out.stdout)
}

#[test]
fn project_extensions_start_only_in_a_trusted_directory() {
    let sb = Sandbox::new();
    project_extension(&sb);
    let real = sb.cwd().canonicalize().unwrap();
    let events = load_events(&sb, &[]);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ext_warning");
    assert_eq!(events[0]["extension"], "fx-normal");
    let msg = events[0]["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("\"zut ext trust {}\"", real.display())),
        "{msg}"
    );
    assert!(
        !sb.home().join("logs/ext-fx-normal.log").exists(),
        "never started"
    );

    let all = load_events(&sb, &[("ZUT_TRUST_ALL", "1")]);
    assert_eq!(all[0]["type"], "ext_loaded", "{all:?}");

    let trust = zut(&sb).args(["ext", "trust"]).output().unwrap();
    assert_eq!(trust.status.code(), Some(0), "{}", stderr(&trust));
    assert!(stderr(&trust).contains(&format!("trusted {}", real.display())));
    // It says everything trust lets start, not only extensions.
    for what in [".zut/extensions", ".mcp.json", ".claude/settings.json"] {
        assert!(stderr(&trust).contains(what), "{}", stderr(&trust));
    }
    let stored: Vec<String> =
        serde_json::from_slice(&std::fs::read(sb.home().join("trust.json")).unwrap()).unwrap();
    assert_eq!(stored, [real.display().to_string()]);
    assert_eq!(load_events(&sb, &[])[0]["type"], "ext_loaded");

    // Trust is for the exact directory: a subdirectory with its own
    // project extensions is not trusted by its parent.
    let sub = sb.cwd().join("sub");
    std::fs::create_dir_all(sub.join(".zut")).unwrap();
    std::fs::rename(
        sb.cwd().join(".zut/extensions"),
        sub.join(".zut/extensions"),
    )
    .unwrap();
    let out = zut(&sb)
        .arg("--cwd")
        .arg(&sub)
        .args(["--mode", "json"])
        .output()
        .unwrap();
    assert_eq!(json_lines(&out.stdout)[0]["type"], "ext_warning");

    let untrust = zut(&sb).args(["ext", "untrust", "."]).output().unwrap();
    assert_eq!(untrust.status.code(), Some(0));
    assert!(
        stderr(&untrust).contains("no longer trusted"),
        "{}",
        stderr(&untrust)
    );
    let again = zut(&sb).args(["ext", "untrust"]).output().unwrap();
    assert!(
        stderr(&again).contains("was not trusted"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn flag_extensions_need_no_trust() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let out = zut(&sb)
        .arg("--ext")
        .arg(&ext)
        .args(["--mode", "json"])
        .output()
        .unwrap();
    assert_eq!(json_lines(&out.stdout)[0]["type"], "ext_loaded");
}

/// Runs `cmd` to completion, failing the test if it has not finished in
/// 20 s (what a FIFO opened for reading would otherwise cause: forever).
fn output_within(mut cmd: Command) -> Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(20)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: plain kill(2) on our own child.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("zut blocked (pid {pid})");
        }
    }
}

#[test]
fn a_fifo_manifest_is_refused_instead_of_blocking() {
    let sb = Sandbox::new();
    let dir = sb.path("fifo-ext");
    std::fs::create_dir_all(&dir).unwrap();
    mkfifo(&dir.join("extension.json"));
    let mut cmd = zut(&sb);
    cmd.arg("--ext").arg(&dir).args(["--mode", "json"]);
    let out = output_within(cmd);
    let events = json_lines(&out.stdout);
    let msg = events[0]["message"].as_str().unwrap_or_default();
    assert_eq!(events[0]["type"], "ext_error", "{events:?}");
    assert!(
        msg.contains("FIFO") && msg.contains("extension.json"),
        "{msg}"
    );

    // The same file reached through the project directory and `zut ext list`.
    let project = sb.cwd().join(".zut/extensions");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::rename(&dir, project.join("fifo-ext")).unwrap();
    let mut cmd = zut(&sb);
    cmd.env("ZUT_TRUST_ALL", "1")
        .args(["ext", "list", "--json"]);
    let out = output_within(cmd);
    assert!(String::from_utf8_lossy(&out.stdout).contains("FIFO"));
}

#[test]
fn fifo_auth_and_config_files_are_refused_instead_of_blocking() {
    let sb = Sandbox::new();
    mkfifo(&sb.home().join("auth.json"));
    let mut cmd = zut(&sb);
    cmd.args(["--provider", "anthropic", "-p", "hi"]);
    let out = output_within(cmd);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("auth.json") && stderr(&out).contains("FIFO"),
        "{}",
        stderr(&out)
    );

    std::fs::remove_file(sb.home().join("auth.json")).unwrap();
    // The first run remembered its provider there.
    let _ = std::fs::remove_file(sb.home().join("config.json"));
    mkfifo(&sb.home().join("config.json"));
    let mut cmd = zut(&sb);
    cmd.args(["-p", "hi"]);
    let out = output_within(cmd);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("config.json") && stderr(&out).contains("FIFO"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn install_refuses_a_fifo_in_the_source_and_leaves_nothing() {
    let sb = Sandbox::new();
    let src = sb.path("src");
    hello_source(&src);
    mkfifo(&src.join("pipe"));
    let mut cmd = zut(&sb);
    cmd.args(["ext", "install"]).arg(&src);
    let out = output_within(cmd);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}", src.join("pipe").display())) && err.contains("FIFO"),
        "{err}"
    );
    assert_eq!(installed(&sb), Vec::<String>::new(), "no staging left");
}

#[test]
fn sigterm_during_install_removes_the_staging_directory() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let src = sb.path("src");
    hello_source(&src);
    // A `go` that says it started, then builds forever.
    let bin = sb.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = sb.path("building");
    std::fs::write(
        bin.join("go"),
        format!("#!/bin/sh\ntouch '{}'\nexec sleep 60\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("go"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let _ = std::fs::remove_file(&marker);
        let mut child = zut(&sb)
            .env("PATH", &path)
            .args(["ext", "install", "--build=go"])
            .arg(&src)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        assert!(
            eventually(std::time::Duration::from_secs(20), || marker.exists()),
            "the build never started"
        );
        assert!(
            installed(&sb)
                .iter()
                .any(|n| n.starts_with(".zut-extension-install-")),
            "staging exists while building: {:?}",
            installed(&sb)
        );
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(130), "{err}");
        assert!(err.contains("interrupted"), "{err}");
        assert_eq!(installed(&sb), Vec::<String>::new(), "signal {signal}");
    }
}

#[test]
fn a_world_readable_auth_file_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let auth = sb.home().join("auth.json");
    std::fs::write(&auth, r#"{"anthropic":{"api_key":"k"}}"#).unwrap();
    let run = || {
        let mut cmd = zut(&sb);
        // Nothing listens there: the request fails after the key is read,
        // and its retries of the refused connection do not wait.
        cmd.env("ZUT_RETRY_BASE_MS", "1");
        cmd.args([
            "--provider",
            "anthropic",
            "--base-url",
            "http://127.0.0.1:9",
            "-p",
            "hi",
        ]);
        stderr(&output_within(cmd))
    };
    std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = run();
    let warning = format!("{} is readable by every user", auth.display());
    assert_eq!(err.matches(&warning).count(), 1, "{err}");
    assert!(
        err.contains(&format!("chmod 600 {}", auth.display())),
        "{err}"
    );
    std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(!run().contains("readable by every user"));
}

const CAPS_EXT: &str = r#"import json, sys
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit({"type": "hello", "protocol_version": 2, "name": "caps", "version": "1", "capabilities": ["tools"]})
for line in sys.stdin:
    m = json.loads(line); t = m.get("type")
    if t == "hello_ack":
        emit({"type": "register_tool", "name": "long_doc", "description": "x" * (16 * 1024 + 1), "schema": {"type": "object"}})
        emit({"type": "register_tool", "name": "bad_image", "description": "d", "schema": {"type": "object"}})
        for i in range(130):
            emit({"type": "register_tool", "name": "t%d" % i, "description": "d", "schema": {"type": "object"}})
        emit({"type": "ready"})
    elif t == "tool_call":
        emit({"type": "tool_result", "id": m["id"], "content": [{"type": "image", "mime_type": "image/png", "data": "not base64!"}]})
    elif t == "shutdown":
        emit({"type": "shutdown_ack"}); break
"#;

#[test]
fn registration_caps_and_invalid_images() {
    let sb = Sandbox::new();
    let dir = sb.path("caps");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("caps.py"), CAPS_EXT).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        r#"{"name":"caps","exec":"python3","args":["caps.py"]}"#,
    )
    .unwrap();
    let (out, _) = run_scripted(
        &sb,
        &[dir],
        &[
            json!({"tool_calls": [{"id": "c1", "name": "bad_image", "args": {}}]}),
            json!({"text": "done"}),
        ],
        &["--mode", "json", "go"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = json_lines(&out.stdout);
    let loaded = events.iter().find(|e| e["type"] == "ext_loaded").unwrap();
    let tools = loaded["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 128, "{tools:?}");
    assert!(!tools.contains(&"long_doc".into()));
    let warnings: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "ext_warning" && e["extension"] == "caps")
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("tool long_doc refused") && w.contains("16385 bytes")),
        "{warnings:?}"
    );
    assert_eq!(
        warnings
            .iter()
            .filter(|w| w.contains("at most 128 tools"))
            .count(),
        3,
        "{warnings:?}"
    );
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("extension caps/bad_image failed") && text.contains("not valid base64"),
        "{text}"
    );
}

const CLOSES_STDIN: &str = r#"import json, os, sys, time
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit({"type": "hello", "protocol_version": 2, "name": "crashy", "version": "1", "capabilities": ["events"]})
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "hello_ack":
        emit({"type": "subscribe", "events": ["session_start", "turn_start", "turn_end", "tool_call"]})
        emit({"type": "ready"})
    elif m.get("type") == "event":
        # Crash while events are still being delivered: stdin goes first,
        # the exit a moment later.
        os.close(0)
        time.sleep(0.8)
        os._exit(3)
"#;

#[test]
fn a_crash_during_event_delivery_reports_the_exit_status() {
    let sb = Sandbox::new();
    let dir = sb.path("crashy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("crashy.py"), CLOSES_STDIN).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        r#"{"name":"crashy","exec":"python3","args":["crashy.py"]}"#,
    )
    .unwrap();
    // Events of the second step are written while the extension has closed
    // its stdin but not yet exited; the turn outlives it, so its end is
    // reported rather than folded into shutdown.
    let (out, _) = run_scripted(
        &sb,
        &[dir],
        &[
            json!({"tool_calls": [{"id": "a", "name": "bash", "args": {"command": "sleep 0.3", "timeout": 10}}]}),
            json!({"tool_calls": [{"id": "b", "name": "bash", "args": {"command": "sleep 1.5", "timeout": 10}}]}),
            json!({"text": "ok"}),
        ],
        &["--yolo", "--mode", "json", "go"],
    );
    let events = json_lines(&out.stdout);
    let errors: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "ext_error" && e["extension"] == "crashy")
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(errors.len(), 1, "{events:?}");
    assert!(errors[0].contains("exit status 3"), "{errors:?}");
    assert!(!errors[0].contains("stdin is closed"), "{errors:?}");
}

/// An extension directory at `sb/<name>` with this manifest and files.
fn ext_dir(sb: &Sandbox, name: &str, manifest: &str) -> std::path::PathBuf {
    let dir = sb.path(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("extension.json"), manifest).unwrap();
    dir
}

fn load_error(sb: &Sandbox, dir: &std::path::Path) -> String {
    let mut cmd = zut(sb);
    cmd.arg("--ext").arg(dir).args(["--mode", "json"]);
    let events = json_lines(&output_within(cmd).stdout);
    let e = events
        .iter()
        .find(|e| e["type"] == "ext_error")
        .unwrap_or_else(|| panic!("no ext_error in {events:?}"));
    e["message"].as_str().unwrap().to_string()
}

#[test]
fn an_unknown_frame_before_hello_is_named_with_the_right_article() {
    let sb = Sandbox::new();
    let dir = ext_dir(
        &sb,
        "early",
        r#"{"name":"early","exec":"sh","args":["-c","echo '{\"type\":\"bogus\"}'; sleep 5"]}"#,
    );
    let msg = load_error(&sb, &dir);
    assert!(
        msg.contains("sent a frame of unknown type \"bogus\" before hello")
            && !msg.contains("a unknown"),
        "{msg}"
    );
}

#[test]
fn a_directory_as_exec_is_called_a_directory() {
    let sb = Sandbox::new();
    let dir = ext_dir(&sb, "direxec", r#"{"name":"direxec","exec":"./bin"}"#);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let msg = load_error(&sb, &dir);
    assert!(msg.contains("is a directory, not a program"), "{msg}");
    assert!(!msg.contains("does not exist"), "{msg}");
}

#[test]
fn the_yolo_hint_names_each_confirmed_tool_once() {
    let sb = Sandbox::new();
    let (out, _) = run_scripted(
        &sb,
        &[],
        &[
            json!({"tool_calls": [{"id": "w", "name": "write", "args": {"path": "f", "content": "x"}}]}),
            json!({"text": "ok"}),
        ],
        &["--mode", "json", "x"],
    );
    let result = json_lines(&out.stdout)
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    let text = result["content"][0]["text"].as_str().unwrap().to_string();
    assert!(
        text.contains("--yolo to allow bash, write and edit without asking"),
        "{text}"
    );
}

const LIST_FDS: &str = r#"import json, os, sys
open_fds = [fd for fd in range(3, 256) if os.path.exists("/proc/self/fd/%d" % fd)]
with open(sys.argv[1], "w") as f:
    json.dump({"fds": open_fds, "cwd": os.getcwd(), "env": os.environ.get("ZUT_PROBE")}, f)
sys.stdout.write(json.dumps({"type": "hello", "protocol_version": 2, "name": "fds", "version": "1", "capabilities": []}) + "\n")
sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "hello_ack":
        sys.stdout.write('{"type":"ready"}\n'); sys.stdout.flush()
    elif m.get("type") == "shutdown":
        sys.stdout.write('{"type":"shutdown_ack"}\n'); sys.stdout.flush(); break
"#;

#[test]
fn extensions_inherit_the_environment_their_directory_and_three_descriptors() {
    use std::os::fd::AsRawFd;
    let sb = Sandbox::new();
    let dir = sb.path("fds");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("fds.py"), LIST_FDS).unwrap();
    let report = sb.path("fds.json");
    std::fs::write(
        dir.join("extension.json"),
        json!({"name": "fds", "exec": "python3", "args": ["fds.py", report]}).to_string(),
    )
    .unwrap();
    // A descriptor zut itself inherits without close-on-exec, as from a
    // shell redirection (`zut 7<file`).
    let leaked = std::fs::File::open(dir.join("fds.py")).unwrap();
    let fd = leaked.as_raw_fd();
    // SAFETY: clearing FD_CLOEXEC on our own open descriptor.
    unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
    let mut cmd = zut(&sb);
    cmd.env("ZUT_PROBE", "inherited")
        .arg("--ext")
        .arg(&dir)
        .args(["--mode", "json"]);
    let out = output_within(cmd);
    drop(leaked);
    assert_eq!(
        json_lines(&out.stdout)[0]["type"],
        "ext_loaded",
        "{}",
        stderr(&out)
    );
    let seen: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(seen["fds"], json!([]), "descriptor {fd} was open in zut");
    assert_eq!(
        seen["cwd"],
        dir.canonicalize().unwrap().display().to_string()
    );
    assert_eq!(
        seen["env"], "inherited",
        "the environment is passed on whole"
    );
    // Its log is the user's alone.
    let log = std::fs::metadata(sb.home().join("logs/ext-fds.log")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&log.permissions()) & 0o777,
        0o600
    );
}
