//! The SDK runs each request's handler on the thread that read it and hands
//! reading to another thread when the handler is slow. These tests pin what
//! that must never cost: a blocked handler does not stop later frames from
//! being read and answered, a `tool_cancel` still reaches it, every call is
//! answered exactly once across many hand-overs, and a panic on the reading
//! thread answers an error without ending the extension.
//! Each test runs a real `Extension::run_with` over in-memory pipes and
//! plays the host.

mod support;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Session, WAIT};
use zut_ext::*;

/// Longer than the hand-over delay (2 ms), so a handler this slow is
/// always handed over, often more than once in a row.
const SLOW: Duration = Duration::from_millis(5);

fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"type":"tool_call","id":id,"name":name,"args":args})
}

fn text(frame: &Value) -> &str {
    frame["content"][0]["text"].as_str().unwrap_or("")
}

fn shutdown(mut s: Session) -> Vec<Value> {
    s.send(&json!({"type":"shutdown"}));
    assert_eq!(s.next_of("shutdown_ack"), json!({"type":"shutdown_ack"}));
    assert_eq!(s.finish(), Ok(()));
    s.rest()
}

#[test]
fn a_blocked_tool_lets_later_calls_through_and_its_cancel_reaches_it() {
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let (seen_tx, seen_rx) = mpsc::channel::<bool>();
    let (gate, seen) = (Mutex::new(gate_rx), Mutex::new(seen_tx));
    let mut ext = Extension::new("x", "1");
    ext.interactive_tool("block", "d", json!({}), move |cancel, _| {
        gate.lock().unwrap().recv().unwrap();
        seen.lock().unwrap().send(cancel.is_cancelled()).unwrap();
        text_result("too late")
    });
    ext.tool("echo", "d", json!({}), |args| text_result(args.to_string()));
    let (mut s, _) = Session::ready(ext);
    s.send(&tool_call("t1", "block", json!({})));
    for i in 0..5 {
        let id = format!("e{i}");
        s.send(&tool_call(&id, "echo", json!({"i": i})));
        let r = s.next();
        assert_eq!(
            (r["id"].as_str(), text(&r)),
            (Some(id.as_str()), &*format!("{{\"i\":{i}}}"))
        );
    }
    s.send(&json!({"type":"tool_cancel","id":"t1"}));
    // An answer after the cancel proves the cancel was read and handled.
    s.send(&tool_call("e5", "echo", json!({})));
    assert_eq!(s.next()["id"], "e5");
    gate_tx.send(()).unwrap();
    assert!(
        seen_rx.recv_timeout(WAIT).unwrap(),
        "the token was cancelled"
    );
    let rest = shutdown(s);
    assert!(
        rest.is_empty(),
        "the cancelled call stays unanswered: {rest:?}"
    );
}

#[test]
fn a_tool_waiting_on_its_token_hears_the_cancel() {
    let (tx, rx) = mpsc::channel::<bool>();
    let tx = Mutex::new(tx);
    let mut ext = Extension::new("x", "1");
    ext.interactive_tool("ask", "d", json!({}), move |cancel, _| {
        tx.lock().unwrap().send(cancel.wait_timeout(WAIT)).unwrap();
        error_result("cancelled")
    });
    let (mut s, _) = Session::ready(ext);
    s.send(&tool_call("t1", "ask", json!({})));
    s.send(&json!({"type":"tool_cancel","id":"t1"}));
    assert!(
        rx.recv_timeout(WAIT).unwrap(),
        "cancelled before the wait ran out"
    );
    let rest = shutdown(s);
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn rapid_calls_with_slow_ones_each_get_exactly_one_answer() {
    const CALLS: usize = 200;
    let runs = Arc::new(AtomicUsize::new(0));
    let mut ext = Extension::new("x", "1");
    let r = runs.clone();
    ext.tool("work", "d", json!({}), move |args| {
        r.fetch_add(1, Ordering::SeqCst);
        if args["slow"] == true {
            std::thread::sleep(SLOW);
        }
        text_result(args["n"].to_string())
    });
    let (mut s, _) = Session::ready(ext);
    for n in 0..CALLS {
        let args = json!({"n": n, "slow": n % 3 == 0});
        s.send(&tool_call(&format!("c{n}"), "work", args));
    }
    let mut answers: HashMap<String, usize> = HashMap::new();
    for _ in 0..CALLS {
        let f = s.next();
        assert_eq!(f["type"], "tool_result", "{f}");
        let id = f["id"].as_str().unwrap().to_string();
        assert_eq!(
            format!("c{}", text(&f)),
            id,
            "the answer belongs to its call"
        );
        *answers.entry(id).or_default() += 1;
    }
    assert_eq!(answers.len(), CALLS, "every call answered");
    assert!(answers.values().all(|&n| n == 1), "{answers:?}");
    // Every answer is in, so every handler has returned; one more run would
    // mean a call was read twice.
    assert_eq!(runs.load(Ordering::SeqCst), CALLS);
    let rest = shutdown(s);
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn a_panicking_handler_answers_an_error_and_serving_goes_on() {
    let mut ext = Extension::new("x", "1");
    ext.tool("boom", "d", json!({}), |args| {
        if args["slow"] == true {
            std::thread::sleep(SLOW); // panics after reading was handed over
        }
        panic!("tool exploded")
    });
    ext.tool("echo", "d", json!({}), |args| text_result(args.to_string()));
    let (mut s, _) = Session::ready(ext);
    for (i, slow) in [false, true, false].into_iter().enumerate() {
        let id = format!("b{i}");
        s.send(&tool_call(&id, "boom", json!({"slow": slow})));
        let r = s.next();
        assert_eq!(
            (r["id"].as_str(), r["is_error"].as_bool()),
            (Some(id.as_str()), Some(true))
        );
        assert_eq!(text(&r), "panic: tool exploded");
        s.send(&tool_call(&format!("e{i}"), "echo", json!({"i": i})));
        let r = s.next();
        assert_eq!(r["id"], format!("e{i}"));
        assert_ne!(r["is_error"], true, "{r}");
    }
    shutdown(s);
}

#[test]
fn end_of_input_while_a_handler_blocks_still_ends_run() {
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let gate = Mutex::new(gate_rx);
    let mut ext = Extension::new("x", "1");
    ext.tool("block", "d", json!({}), move |_| {
        let _ = gate.lock().unwrap().recv();
        text_result("done")
    });
    ext.tool("echo", "d", json!({}), |args| text_result(args.to_string()));
    let (mut s, _) = Session::ready(ext);
    s.send(&tool_call("t1", "block", json!({})));
    s.send(&tool_call("e1", "echo", json!({})));
    assert_eq!(s.next()["id"], "e1");
    s.close_input();
    assert_eq!(
        s.finish(),
        Ok(()),
        "run_with returned with the handler still blocked"
    );
    drop(gate_tx);
    assert!(
        s.rest().is_empty(),
        "nothing written after run_with returned"
    );
}
