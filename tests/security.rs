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
        &[format!("greet=note\x1b]0;title\x07 \x1b[2Jhere\r")],
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
