//! The test harness itself: bounded waits, clear failures, nothing left
//! running.

use std::process::Command;
use std::time::Duration;
use zut_ext::testing::Peer;

fn sh(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", script]);
    c
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// The message `ext.next()` panics with.
fn failed_wait(ext: &Peer) -> String {
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ext.next()))
        .expect_err("the wait should fail");
    err.downcast_ref::<String>().cloned().unwrap_or_default()
}

#[test]
fn a_silent_extension_fails_the_wait_with_a_message() {
    let ext = Peer::spawn(sh("sleep 30")).waiting(Duration::from_millis(100));
    let msg = failed_wait(&ext);
    assert!(msg.contains("no frame from the extension within"), "{msg}");
}

#[test]
fn a_line_that_is_not_a_frame_fails_naming_it() {
    let ext = Peer::spawn(sh("echo 'Starting up...'; sleep 30"));
    let msg = failed_wait(&ext);
    assert!(msg.contains("Starting up..."), "{msg}");
}

#[test]
fn dropping_the_peer_ends_the_process() {
    // The shell names its own pid, which `exec` keeps for the sleep: no
    // search of /proc that could run before the exec.
    let ext = Peer::spawn(sh(
        "echo \"{\\\"type\\\":\\\"hello\\\",\\\"pid\\\":$$}\"; exec sleep 37",
    ));
    let hello = ext.next();
    assert_eq!(hello["type"], "hello");
    let pid = hello["pid"].as_u64().expect("the shell's pid") as u32;
    assert!(alive(pid), "pid {pid} runs before the drop");
    drop(ext);
    assert!(!alive(pid), "pid {pid} still runs");
}
