//! Nothing the host queued for an extension is lost at a clean exit, and a
//! call waiting on an extension whose stdout ends fails when it ends: real
//! Python fixtures over real pipes, the real binary for the whole run.

mod support;

use serde_json::json;
use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::*;
use zut::cancel::CancelToken;

/// Tool calls in the scripted run: more than the host's queue holds (256
/// frames), so most wait behind a subscriber that reads slowly.
const CALLS: usize = 400;

#[test]
fn every_queued_tool_call_event_reaches_a_slow_subscriber_before_shutdown() {
    let sb = Sandbox::new();
    let seen = sb.path("seen.txt");
    let dir = sb.fixture("fx-slow-subscriber", &[opt("out", &seen)]);
    // Large frames: the pipe itself holds only a few of them, so what is
    // still to be read when `shutdown` is written is small, while what
    // was queued when the run ended is hundreds of frames (seconds of
    // reading at 5 ms a line, far past the grace below).
    let pad = "x".repeat(2000);
    let calls: Vec<_> = (0..CALLS)
        .map(|n| json!({"id": format!("c{n}"), "name": "read", "args": {"path": format!("missing-{n}"), "pad": pad}}))
        .collect();
    let script = script(
        &sb,
        &[json!({ "tool_calls": calls }), json!({"text": "done"})],
    );
    let out = zut(&sb)
        .env("ZUT_SHUTDOWN_GRACE_MS", "1000")
        .env("ZUT_WRITE_TIMEOUT_MS", "5000")
        .args([
            "--mode",
            "json",
            "--provider",
            "script",
            "--script",
            &script,
            "--ext",
        ])
        .arg(&dir)
        .arg("go")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&out.stdout);
    assert!(
        !events
            .iter()
            .any(|e| e["type"] == "ext_error" && e["extension"] == "fx-slow-subscriber"),
        "the subscriber was reported broken: {events:?}"
    );
    let text = std::fs::read_to_string(&seen).unwrap_or_default();
    let ids: Vec<&str> = text.lines().collect();
    let distinct: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(
        (ids.len(), distinct.len()),
        (CALLS, CALLS),
        "tool_call events received by the slow subscriber"
    );
}

#[test]
fn a_call_fails_as_soon_as_the_extension_closes_its_stdout() {
    let sb = Sandbox::new();
    let mut config = sb.config();
    // Neither may be what ends the call: the tool timeout is a minute,
    // and waiting out the exit drain would take 5 s.
    config.deadlines.tool = Duration::from_secs(60);
    config.deadlines.exit_drain = Duration::from_secs(5);
    let (host, sink) = sb.start_with(config, &[sb.fixture("fx-close-stdout", &[])]);
    let started = Instant::now();
    let r = host
        .call_tool("fx_close_stdout", &json!({}), &CancelToken::never())
        .unwrap();
    let took = started.elapsed();
    assert!(r.is_error);
    let message = zut::agent::content_text(&r.content);
    assert!(message.contains("closed its stdout"), "{message}");
    assert!(
        took < Duration::from_secs(2),
        "failed after {took:?}: by a deadline, not by the end of its stdout"
    );
    let error = error_of(&sink.events(), "fx-close-stdout").expect("reported");
    assert!(error.contains("closed its stdout"), "{error}");
    shutdown_clean(host);
}
