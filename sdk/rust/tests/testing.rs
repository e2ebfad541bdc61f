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
    // A duration no other test here uses: the process is found by it.
    let ext = Peer::spawn(sh("echo '{\"type\":\"hello\"}'; exec sleep 37"));
    assert_eq!(ext.next()["type"], "hello");
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|p: &u32| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.starts_with("sleep\u{0}37"))
                && std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .ok()
                    .and_then(|s| {
                        s.rsplit_once(')')?
                            .1
                            .split_whitespace()
                            .nth(1)?
                            .parse::<u32>()
                            .ok()
                    })
                    == Some(std::process::id())
        })
        .collect();
    assert_eq!(pids.len(), 1, "{pids:?}");
    drop(ext);
    assert!(!alive(pids[0]), "pid {} still runs", pids[0]);
}
