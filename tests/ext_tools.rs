//! Extension tools and the transport rules under `tool_call`, against real
//! fixture processes: results with text and images, errors, deadlines,
//! interactive refusal, `tool_cancel` only for those who asked, late
//! results, queue overflow, write timeouts, withdrawal and torn frames,
//! out-of-order answers, crashes mid-call, deferred activation and
//! concurrent calls in one model turn.

mod support;

use serde_json::{json, Value};

use std::sync::Arc;
use std::time::Duration;
use support::*;
use zut::cancel::{self, CancelToken};
use zut::events::Event;
use zut::host::Phase;
use zut_ext::wire::{ContentBlock, EventPayload};

fn never() -> CancelToken {
    CancelToken::never()
}

fn text(r: &zut::host::ToolReply) -> String {
    zut::agent::content_text(&r.content)
}

#[test]
fn a_tool_returns_text_and_image_with_attribution() {
    let sb = Sandbox::new();
    let (host, _) = sb.start(&[sb.fixture("fx-normal", &[])]);
    let r = host
        .call_tool("fx_normal_echo", &json!({"text": "hi"}), &never())
        .unwrap();
    assert!(!r.is_error);
    assert_eq!(r.extension, "fx-normal");
    assert_eq!(r.content[0], ContentBlock::text(r#"echo {"text": "hi"}"#));
    assert!(
        matches!(&r.content[1], ContentBlock::Image { mime_type, data } if mime_type == "image/png" && !data.is_empty())
    );
    let r = host.call_tool("fx_fail", &json!({}), &never()).unwrap();
    assert!(r.is_error);
    assert_eq!(text(&r), "nope");
    assert!(host
        .call_tool("no_such_tool", &json!({}), &never())
        .is_none());
    shutdown_clean(host);
}

#[test]
fn a_timeout_is_a_tool_error_and_cancel_goes_only_to_those_who_asked() {
    let sb = Sandbox::new();
    let with = sb.path("with-cap");
    let without = sb.path("without-cap");
    let a = sb.fixture(
        "fx-normal",
        &[opt("marker", &with), "caps=tools,tool_cancel".into()],
    );
    let b = sb.fixture_as("fx-normal", "fx-plain", &[opt("marker", &without)]);
    let mut config = sb.config();
    config.deadlines.tool = Duration::from_millis(200);
    // fx-plain's tools clash with fx-normal's except the prefixed ones.
    let (host, _) = sb.start_with(config, &[a, b]);
    let r = host.call_tool("fx_hang", &json!({}), &never()).unwrap();
    assert!(r.is_error);
    assert_eq!(
        text(&r),
        "extension fx-normal/fx_hang failed: timeout waiting for fx-normal/fx_hang after 200 ms"
    );
    assert!(eventually(Duration::from_secs(3), || {
        std::fs::read_to_string(&with)
            .unwrap_or_default()
            .contains("tool_cancel:")
    }));
    // Normal completion never sends tool_cancel.
    let before = std::fs::read_to_string(&with)
        .unwrap()
        .matches("tool_cancel")
        .count();
    host.call_tool("fx_normal_echo", &json!({}), &never())
        .unwrap();
    // fx-plain lacks the capability: its timed-out call gets no tool_cancel.
    let r = host
        .call_tool(
            "fx_plain_wait",
            &json!({"path": sb.path("never").display().to_string()}),
            &never(),
        )
        .unwrap();
    assert!(r.is_error && text(&r).contains("timeout"), "{}", text(&r));
    host.call_tool("fx_plain_echo", &json!({}), &never())
        .unwrap(); // a round trip after the timeout
    assert!(!std::fs::read_to_string(&without)
        .unwrap()
        .contains("tool_cancel"));
    assert_eq!(
        std::fs::read_to_string(&with)
            .unwrap()
            .matches("tool_cancel")
            .count(),
        before
    );
    shutdown_clean(host);
}

#[test]
fn a_late_result_is_ignored() {
    let sb = Sandbox::new();
    let mut config = sb.config();
    config.deadlines.tool = Duration::from_millis(500);
    let (host, sink) = sb.start_with(config, &[sb.fixture("fx-normal", &[])]);
    let r = host
        .call_tool("fx_late", &json!({"ms": 800}), &never())
        .unwrap();
    assert!(r.is_error && text(&r).contains("timeout"));
    // The answer arrives after the deadline: logged, ignored, harmless.
    let log = sb.home().join("logs/ext-fx-normal.log");
    assert!(eventually(Duration::from_secs(5), || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("tool_result for id")
    }));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("ignored: nobody waits for it (late, cancelled or unknown)"),
        "{logged}"
    );
    let r = host
        .call_tool("fx_normal_echo", &json!({"text": "after"}), &never())
        .unwrap();
    assert!(text(&r).contains("after"));
    assert!(error_of(&sink.events(), "fx-normal").is_none());
    shutdown_clean(host);
}

#[test]
fn interactive_tools_are_refused_outside_the_terminal() {
    let sb = Sandbox::new();
    let (host, _) = sb.start(&[sb.fixture("fx-normal", &[])]);
    let r = host.call_tool("fx_ask", &json!({}), &never()).unwrap();
    assert!(r.is_error);
    assert!(text(&r).contains("interactive tool"), "{}", text(&r));
    shutdown_clean(host);
}

#[test]
fn interactive_tools_wait_without_deadline_until_cancelled() {
    let sb = Sandbox::new();
    let mut config = sb.config();
    config.interactive = true;
    config.deadlines.tool = Duration::from_millis(50);
    let (host, _) = sb.start_with(config, &[sb.fixture("fx-normal", &[])]);
    let (canceller, token) = cancel::pair();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300)); // well past the tool deadline
        canceller.cancel();
    });
    let r = host.call_tool("fx_ask", &json!({}), &token).unwrap();
    t.join().unwrap();
    assert!(r.is_error);
    assert!(text(&r).ends_with("failed: aborted"), "{}", text(&r));
    shutdown_clean(host);
}

#[test]
fn out_of_order_answers_reach_their_callers() {
    let sb = Sandbox::new();
    let marker = sb.path("marker");
    let (host, _) = sb.start(&[sb.fixture("fx-normal", &[opt("marker", &marker)])]);
    let host = Arc::new(host);
    let slow = {
        let host = host.clone();
        std::thread::spawn(move || {
            host.call_tool("fx_slow", &json!({"ms": 300}), &never())
                .unwrap()
        })
    };
    // The slow call reached the extension first.
    let got_call =
        || std::fs::read_to_string(&marker).is_ok_and(|m| m.lines().any(|l| l == "tool_call"));
    assert!(eventually(Duration::from_secs(10), got_call));
    let fast = host
        .call_tool("fx_slow", &json!({"ms": 1}), &never())
        .unwrap();
    let slow = slow.join().unwrap();
    // Each caller gets the answer to its own arguments (a swap of the
    // replies would give the slow caller "ms=1"), under distinct ids.
    let (s, f) = (text(&slow), text(&fast));
    assert!(s.starts_with("slow ") && s.ends_with(" ms=300"), "{s}");
    assert!(f.starts_with("slow ") && f.ends_with(" ms=1"), "{f}");
    assert_ne!(s.split(' ').nth(1), f.split(' ').nth(1), "{s} / {f}");
    shutdown_clean(Arc::try_unwrap(host).ok().unwrap());
}

#[test]
fn a_crash_during_a_call_fails_it_at_once() {
    let sb = Sandbox::new();
    let (host, sink) = sb.start(&[sb.fixture("fx-normal", &[])]);
    let r = host.call_tool("fx_crash", &json!({}), &never()).unwrap();
    assert!(r.is_error);
    assert!(text(&r).contains("exit status 9"), "{}", text(&r));
    let events = sink.events();
    assert!(error_of(&events, "fx-normal").is_some());
    assert!(events.contains(&Event::ExtChromeClear {
        extension: "fx-normal".into()
    }));
    let r = host.call_tool("fx_fail", &json!({}), &never());
    assert!(r.is_none(), "the dead extension's tools are gone");
    shutdown_clean(host);
}

/// A host with one extension that never reads its stdin, and this write
/// deadline.
fn never_reading(sb: &Sandbox, write: Duration) -> (zut::host::Host, Arc<zut::events::Collect>) {
    let mut config = sb.config();
    config.deadlines.write = write;
    sb.start_with(config, &[sb.fixture("fx-no-read", &[])])
}

/// A `turn_start` event carrying `bytes` of text.
fn event_of(bytes: usize) -> EventPayload {
    EventPayload {
        step: 1,
        text: "x".repeat(bytes),
        ..EventPayload::named("turn_start")
    }
}

#[test]
fn a_full_queue_waits_for_room_then_disconnects_an_extension_that_never_reads() {
    let sb = Sandbox::new();
    let (host, sink) = never_reading(&sb, Duration::from_millis(600));
    // The extension never reads: the pipe fills, the writer blocks, the
    // queue fills; the next sender waits for room, and when none comes
    // within the write deadline the extension is disconnected.
    let big = event_of(4096);
    for _ in 0..400 {
        host.emit_event(&big);
    }
    // The dispatcher reports the disconnect as soon as it hears of it.
    assert!(eventually(Duration::from_secs(5), || error_of(
        &sink.events(),
        "fx-no-read"
    )
    .is_some()));
    let msg = error_of(&sink.events(), "fx-no-read").unwrap();
    assert!(msg.contains("not reading its stdin"), "{msg}");
    shutdown_clean(host);
}

#[test]
fn a_burst_larger_than_the_queue_reaches_a_slow_reader_whole() {
    let sb = Sandbox::new();
    let marker = sb.path("marker");
    let dir = sb.fixture("fx-normal", &[opt("marker", &marker), "slow_read=1".into()]);
    let (host, sink) = sb.start(&[dir]);
    // 600 events, well past the 256-frame queue: backpressure makes the
    // sender wait while the extension reads, and nothing is dropped.
    let ev = event_of(64);
    for _ in 0..600 {
        host.emit_event(&ev);
    }
    assert!(
        error_of(&sink.events(), "fx-normal").is_none(),
        "{:?}",
        sink.events()
    );
    let r = host
        .call_tool("fx_normal_echo", &json!({"x": 1}), &never())
        .unwrap();
    assert!(!r.is_error, "{}", text(&r));
    shutdown_clean(host);
}

#[test]
fn a_blocked_write_disconnects_after_the_write_deadline() {
    let sb = Sandbox::new();
    let (host, sink) = never_reading(&sb, Duration::from_millis(200));
    let big = event_of(1 << 20);
    host.emit_event(&big);
    assert!(eventually(Duration::from_secs(5), || error_of(
        &sink.events(),
        "fx-no-read"
    )
    .is_some()));
    let msg = error_of(&sink.events(), "fx-no-read").unwrap();
    assert!(msg.contains("write blocked for 200 ms"), "{msg}");
    shutdown_clean(host);
}

#[test]
fn a_cancelled_call_still_queued_is_withdrawn_and_the_transport_stays_healthy() {
    let sb = Sandbox::new();
    let (host, _) = never_reading(&sb, Duration::from_secs(30));
    // Block the writer on a frame larger than the pipe buffer.
    host.emit_event(&event_of(1 << 20));
    let (canceller, token) = cancel::pair();
    canceller.cancel();
    let r = host.call_tool("stuck_tool", &json!({}), &token).unwrap();
    assert!(text(&r).ends_with("failed: aborted"), "{}", text(&r));
    assert!(
        !matches!(host.extensions()[0].phase, Phase::Disconnected(_)),
        "withdrawing a queued frame keeps the transport"
    );
    shutdown_clean(host);
}

#[test]
fn a_cancelled_call_whose_write_began_tears_the_stream() {
    let sb = Sandbox::new();
    let (host, sink) = never_reading(&sb, Duration::from_secs(30));
    let (canceller, token) = cancel::pair();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        canceller.cancel();
    });
    // Arguments far larger than the pipe: the write begins and blocks.
    let r = host
        .call_tool("stuck_tool", &json!({"blob": "y".repeat(1 << 20)}), &token)
        .unwrap();
    t.join().unwrap();
    assert!(r.is_error);
    let ext = &host.all_extensions()[0];
    assert!(
        matches!(ext.phase, Phase::Disconnected(ref m) if m.contains("torn frame")),
        "{:?}",
        ext.phase
    );
    assert!(error_of(&sink.events(), "fx-no-read")
        .unwrap()
        .contains("torn frame"));
    shutdown_clean(host);
}

// ----- through the agent loop -----

#[test]
fn deferred_tools_are_advertised_after_activation() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let log = sb.path("log.jsonl");
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [{"id": "l", "name": "fx_loader", "args": {}}]}),
            json!({"tool_calls": [{"id": "h", "name": "fx_hidden", "args": {}}]}),
            json!({"text": "done"}),
        ],
    );
    let out = zut(&sb)
        .arg("-e")
        .arg(&ext)
        .args(["--provider", "script", "--script", &s, "--script-log"])
        .arg(&log)
        .args(["-p", "go"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = json_lines(&std::fs::read(&log).unwrap());
    let names = |i: usize| tool_names(&requests[i]);
    assert!(names(0).contains(&"fx_loader".to_string()));
    assert!(
        !names(0).contains(&"fx_hidden".to_string()),
        "deferred tools are not advertised at first"
    );
    assert!(
        names(1).contains(&"fx_hidden".to_string()),
        "activated from the next request on"
    );
    assert!(!names(1).contains(&"no_such_tool".to_string()));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "done\n",
        "print mode: nothing but the answer"
    );
    let request = &requests[2]["messages"];
    let result = request
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["content"][0]["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["content"][0]["content"][0]["text"], "hidden ran");
}

#[test]
fn tool_calls_of_one_step_run_one_after_another_in_model_order() {
    let sb = Sandbox::new();
    let a = sb.fixture_as("fx-normal", "fx-a", &[]);
    let b = sb.fixture_as("fx-normal", "fx-b", &[]);
    let flag = sb.path("flag").display().to_string();
    // fx-a's call waits for a file that only fx-b's later call creates:
    // the calls run one after the other, so the wait gives up first.
    let (out, _) = run_scripted(
        &sb,
        &[a, b],
        &[
            json!({"tool_calls": [
                {"id": "w", "name": "fx_a_wait", "args": {"path": flag}},
                {"id": "t", "name": "fx_b_touch", "args": {"path": flag}}
            ]}),
            json!({"text": "ok"}),
        ],
        &["--mode", "json", "go"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = json_lines(&out.stdout)
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(
        (results[0]["id"].as_str(), results[1]["id"].as_str()),
        (Some("w"), Some("t")),
        "model order"
    );
    assert_eq!(results[0]["content"][0]["text"], "never appeared");
    assert_eq!(results[1]["content"][0]["text"], "touched");
    assert_eq!(results[0]["extension"], "fx-a");
    assert_eq!(results[1]["extension"], "fx-b");
}

#[test]
fn interactive_tools_are_refused_in_print_mode() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let call = json!({"tool_calls": [{"id": "q", "name": "fx_ask", "args": {}}]});
    let (out, _) = run_scripted(
        &sb,
        &[ext],
        &[call, json!({"text": "ok"})],
        &["--mode", "json", "go"],
    );
    let r = json_lines(&out.stdout)
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(r["is_error"], true);
    assert!(r["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("interactive"));
}

#[test]
fn a_tool_timeout_from_the_environment_reaches_the_model() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-normal", &[]);
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [{"id": "h", "name": "fx_hang", "args": {}}]}),
            json!({"text": "ok"}),
        ],
    );
    let out = zut(&sb)
        .env("ZUT_TOOL_TIMEOUT_MS", "150")
        .arg("-e")
        .arg(&ext)
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--mode",
            "json",
            "go",
        ])
        .output()
        .unwrap();
    let r = json_lines(&out.stdout)
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(
        r["content"][0]["text"],
        "extension fx-normal/fx_hang failed: timeout waiting for fx-normal/fx_hang after 150 ms"
    );
}
