//! The Rust SDK's behaviour beyond the shared vectors: the handshake with
//! `on_hello`, cancellation of interactive tools, ordering and concurrency
//! of handlers, panics, panels and the one-way frames of a `Handle`.
//! Each test runs a real `Extension::run_with` over in-memory pipes and
//! plays the host.

mod support;

use serde_json::{json, Value};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use support::{Session, WAIT};
use zut_ext::wire::Panel;
use zut_ext::*;

fn tool_call(id: &str, name: &str) -> Value {
    json!({"type":"tool_call","id":id,"name":name,"args":{}})
}

fn command(id: &str, name: &str) -> Value {
    json!({"type":"command_invoked","id":id,"name":name})
}

/// An extension with a `/ping` command answering `pong`, used as a probe:
/// its answer proves the reader has handled every earlier frame.
fn with_ping(mut ext: Extension) -> Extension {
    ext.command("ping", "probe", |_| display("pong"));
    ext
}

fn shutdown(mut s: Session) -> Vec<Value> {
    s.send(&json!({"type":"shutdown"}));
    let ack = s.next_of("shutdown_ack");
    assert_eq!(ack, json!({"type":"shutdown_ack"}));
    assert_eq!(s.finish(), Ok(()));
    s.rest()
}

#[test]
fn on_hello_sees_the_host_and_registers_before_ready() {
    let mut ext = Extension::new("hi", "2.0.0");
    let handle = ext.handle();
    ext.command("a", "first", |_| noop());
    ext.on_hello(|ext, host| {
        let cwd = host.cwd.clone();
        ext.command("cwd", "project dir", move |_| display(cwd.clone()));
    });
    let mut s = Session::start(ext);
    let hello = s.next();
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["name"], "hi");
    assert_eq!(hello["version"], "2.0.0");
    assert_eq!(hello["protocol_version"], 2);
    assert_eq!(hello["capabilities"], json!(CAPABILITIES));
    assert!(handle.host().is_none(), "no host info before hello_ack");
    s.send(&json!({"type":"hello_ack","protocol_version":2,"cwd":"/proj","model":"m"}));
    let names: Vec<Value> = (0..3).map(|_| s.next()).collect();
    assert_eq!(names[0]["name"], "a");
    assert_eq!(names[1]["name"], "cwd");
    assert_eq!(
        names[2],
        json!({"type":"ready"}),
        "no subscribe without events"
    );
    let host = handle.host().expect("host info after hello_ack");
    assert_eq!((host.cwd.as_str(), host.model.as_str()), ("/proj", "m"));
    s.send(&command("1", "cwd"));
    assert_eq!(s.next()["display"], "/proj");
    shutdown(s);
}

#[test]
fn end_of_input_before_or_after_the_handshake_is_a_clean_end() {
    let mut s = Session::start(Extension::new("x", "1"));
    assert_eq!(s.next()["type"], "hello");
    s.close_input();
    assert_eq!(s.finish(), Ok(()));

    let (mut s, _) = Session::ready(Extension::new("x", "1"));
    s.close_input();
    assert_eq!(s.finish(), Ok(()));
    assert!(s.rest().is_empty());
}

#[test]
fn a_first_frame_other_than_hello_ack_is_an_error() {
    let mut s = Session::start(Extension::new("x", "1"));
    s.next();
    s.send(&command("1", "ping"));
    let err = s.finish().unwrap_err();
    assert!(err.contains("must be hello_ack"), "{err}");
    assert!(err.contains("command_invoked"), "{err}");
    assert!(s.rest().is_empty(), "nothing after a failed handshake");

    let mut s = Session::start(Extension::new("x", "1"));
    s.next();
    s.send_raw("Loading...");
    assert!(s.finish().unwrap_err().contains("parse hello_ack"));
}

#[test]
fn a_cancel_that_overtakes_the_handler_still_cancels_it() {
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let gate = Mutex::new(gate_rx);
    let mut ext = Extension::new("x", "1");
    let handle = ext.handle();
    ext.interactive_tool("ask", "d", json!({"type":"object"}), move |cancel, _| {
        gate.lock().unwrap().recv().unwrap();
        handle.notify(Level::Info, &format!("cancelled={}", cancel.is_cancelled()));
        text_result("late")
    });
    let (mut s, frames) = Session::ready(with_ping(ext));
    let tool = frames.iter().find(|f| f["name"] == "ask").unwrap();
    assert_eq!(tool["interactive"], true);
    s.send(&tool_call("t1", "ask"));
    s.send(&json!({"type":"tool_cancel","id":"t1"}));
    s.send(&command("p", "ping"));
    assert_eq!(s.next()["id"], "p", "the reader handled the cancel");
    gate_tx.send(()).unwrap();
    assert_eq!(
        s.next(),
        json!({"type":"notify","level":"info","message":"cancelled=true"})
    );
    let rest = shutdown(s);
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn a_result_after_cancellation_is_dropped() {
    let (saw_tx, saw_rx) = mpsc::channel::<()>();
    let saw = Mutex::new(saw_tx);
    let mut ext = Extension::new("x", "1");
    ext.interactive_tool("ask", "d", json!({}), move |cancel, _| {
        assert!(cancel.wait_timeout(WAIT), "cancelled");
        saw.lock().unwrap().send(()).unwrap();
        text_result("late")
    });
    ext.tool("quick", "d", json!({}), |_| text_result("quick"));
    let (mut s, _) = Session::ready(ext);
    s.send(&tool_call("t1", "ask"));
    s.send(&json!({"type":"tool_cancel","id":"t1"}));
    s.send(&json!({"type":"tool_cancel","id":"unknown"}));
    saw_rx.recv_timeout(WAIT).unwrap();
    s.send(&tool_call("t2", "quick"));
    let r = s.next();
    assert_eq!(
        (r["id"].as_str(), r["content"][0]["text"].as_str()),
        (Some("t2"), Some("quick"))
    );
    let rest = shutdown(s);
    assert!(rest.iter().all(|f| f["id"] != "t1"), "{rest:?}");
}

#[test]
fn shutdown_and_end_of_input_cancel_waiting_handlers() {
    for by_shutdown in [true, false] {
        let (tx, rx) = mpsc::channel::<bool>();
        let tx = Mutex::new(tx);
        let mut ext = Extension::new("x", "1");
        ext.interactive_tool("ask", "d", json!({}), move |cancel, _| {
            tx.lock().unwrap().send(cancel.wait_timeout(WAIT)).unwrap();
            error_result("cancelled")
        });
        let (mut s, _) = Session::ready(with_ping(ext));
        s.send(&tool_call("t1", "ask"));
        s.send(&command("p", "ping"));
        s.next_of("command_response");
        if by_shutdown {
            s.send(&json!({"type":"shutdown"}));
            assert_eq!(s.next()["type"], "shutdown_ack");
        } else {
            s.close_input();
        }
        assert!(
            rx.recv_timeout(WAIT).unwrap(),
            "handler saw the cancellation"
        );
        assert_eq!(s.finish(), Ok(()));
        assert!(s.rest().is_empty(), "nothing written after the end");
    }
}

#[test]
fn a_slow_handler_does_not_hold_up_other_calls() {
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let gate = Mutex::new(gate_rx);
    let mut ext = Extension::new("x", "1");
    ext.command("slow", "d", move |_| {
        gate.lock().unwrap().recv().unwrap();
        display("slow done")
    });
    let (mut s, _) = Session::ready(with_ping(ext));
    s.send(&command("1", "slow"));
    for i in 0..20 {
        let id = format!("p{i}");
        s.send(&command(&id, "ping"));
        assert_eq!(s.next()["id"], id.as_str());
    }
    gate_tx.send(()).unwrap();
    assert_eq!(s.next()["display"], "slow done");
    shutdown(s);
}

#[test]
fn panicking_handlers_answer_and_the_extension_keeps_serving() {
    let mut ext = Extension::new("x", "1");
    ext.command("boom", "d", |_| panic!("command exploded"));
    ext.on("turn_start", |_| panic!("event exploded"));
    ext.intercept_tool_call(|_, _| panic!("guard exploded"));
    ext.intercept_turn_start(|_| panic!("turn exploded"));
    let (mut s, frames) = Session::ready(with_ping(ext));
    let sub = frames.iter().find(|f| f["type"] == "subscribe").unwrap();
    assert_eq!(sub["events"], json!(["turn_start"]));
    assert_eq!(sub["intercept"], json!(["tool_call", "turn_start"]));
    s.send(&command("1", "boom"));
    let r = s.next();
    assert_eq!(
        (r["id"].as_str(), r["action"].as_str()),
        (Some("1"), Some("noop"))
    );
    assert!(r["error"].as_str().unwrap().contains("command exploded"));
    s.send(&json!({"type":"event","event":"turn_start","step":1}));
    s.send(&json!({"type":"event_intercept","id":"i1","event":"tool_call","tool_name":"bash","tool_args":{}}));
    let r = s.next();
    assert_eq!(r["block"], true);
    assert_eq!(r["reason"], "intercept panic: guard exploded");
    s.send(&json!({"type":"event_intercept","id":"i2","event":"turn_start","step":2}));
    assert_eq!(s.next()["reason"], "intercept panic: turn exploded");
    s.send(&command("2", "ping"));
    assert_eq!(s.next()["display"], "pong");
    shutdown(s);
}

#[test]
fn interceptor_answers_keep_only_what_applies() {
    let mut ext = Extension::new("x", "1");
    ext.intercept_tool_call(|tool, _| match tool {
        "bash" => ToolCallDecision::modify(json!({"command":"echo GUARDED","timeout":30})),
        "bad" => ToolCallDecision::modify(json!("not an object")),
        _ => ToolCallDecision {
            modified_args: Some(json!({"x":1})),
            ..ToolCallDecision::block("no")
        },
    });
    ext.intercept_assistant_message(|text| AssistantMessageDecision::replace(text));
    let (mut s, _) = Session::ready(ext);
    let ask = |s: &mut Session, id: &str, tool: &str| {
        s.send(&json!({"type":"event_intercept","id":id,"event":"tool_call","tool_name":tool,"tool_args":{"command":"ls"}}));
        s.next()
    };
    assert_eq!(
        ask(&mut s, "1", "bash"),
        json!({"type":"event_intercept_response","id":"1","modified_args":{"command":"echo GUARDED","timeout":30}})
    );
    assert_eq!(
        ask(&mut s, "2", "bad"),
        json!({"type":"event_intercept_response","id":"2"})
    );
    assert_eq!(
        ask(&mut s, "3", "rm"),
        json!({"type":"event_intercept_response","id":"3","block":true,"reason":"no"})
    );
    s.send(&json!({"type":"event_intercept","id":"4","event":"assistant_message","text":"same"}));
    assert_eq!(
        s.next(),
        json!({"type":"event_intercept_response","id":"4"}),
        "unchanged text is no rewrite"
    );
    s.send(&json!({"type":"event_intercept","id":"5","event":"turn_start","step":1}));
    assert_eq!(
        s.next(),
        json!({"type":"event_intercept_response","id":"5"}),
        "no interceptor: allow"
    );
    shutdown(s);
}

#[test]
fn events_run_in_order_and_carry_session_state() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut ext = Extension::new("x", "1");
    for name in ["session_opened", "turn_start"] {
        let seen = seen.clone();
        ext.on(name, move |e| seen.lock().unwrap().push(e.clone()));
    }
    let (mut s, _) = Session::ready(with_ping(ext));
    s.send(&json!({"type":"event","event":"session_opened","session":{"id":"b1","parent_id":"r","fork_point":4},"state":{"v":1}}));
    for step in 1..=30 {
        s.send(&json!({"type":"event","event":"turn_start","step":step}));
    }
    s.send(&json!({"type":"event","event":"turn_end","stop":"end_turn"}));
    s.send(&command("p", "ping"));
    s.next_of("command_response");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 31, "turn_end was not subscribed");
    let session = seen[0].session.as_ref().unwrap();
    assert_eq!((session.id.as_str(), session.fork_point), ("b1", 4));
    assert_eq!(seen[0].state, Some(json!({"v":1})));
    let steps: Vec<u64> = seen[1..].iter().map(|e| e.step).collect();
    assert_eq!(steps, (1..=30).collect::<Vec<u64>>());
    drop(seen);
    shutdown(s);
}

#[test]
fn panel_keys_arrive_in_order_and_unknown_panels_are_ignored() {
    let (tx, rx) = mpsc::channel::<Vec<String>>();
    let keys = Arc::new(Mutex::new(Vec::new()));
    let mut ext = Extension::new("x", "1");
    let k = keys.clone();
    let tx = Mutex::new(tx);
    ext.on_panel_key(
        "main",
        move |key, text| k.lock().unwrap().push(format!("{key}:{text}")),
        move || {
            tx.lock()
                .unwrap()
                .send(keys.lock().unwrap().clone())
                .unwrap()
        },
    );
    let (mut s, _) = Session::ready(with_ping(ext));
    s.send(&json!({"type":"panel_key","panel_id":"other","key":"down"}));
    for i in 0..100 {
        s.send(&json!({"type":"panel_key","panel_id":"main","key":"rune","text":i.to_string()}));
    }
    s.send(&json!({"type":"panel_close","panel_id":"main"}));
    let got = rx.recv_timeout(WAIT).unwrap();
    let want: Vec<String> = (0..100).map(|i| format!("rune:{i}")).collect();
    assert_eq!(got, want);
    shutdown(s);
}

#[test]
fn handle_frames_are_exact() {
    let mut ext = Extension::new("x", "1");
    let h = ext.handle();
    h.notify(Level::Info, "dropped: not connected yet");
    ext.command("all", "d", move |_| {
        h.notify(Level::Warn, "careful");
        h.set_status("progress", "2/4", Some(Level::Success));
        h.set_status("plain", "x", None);
        h.clear_status("progress");
        h.set_widget("plan", WIDGET_ABOVE_INPUT, "Plan", ["a", "b"]);
        h.clear_widget("plan");
        h.alert(ALERT_BELL, "question_ready");
        h.clear_notes();
        h.submit("go on");
        h.submit_slash("/todo");
        let panel = Panel {
            id: "p".into(),
            title: "T".into(),
            lines: vec!["l".into()],
            footer: "f".into(),
        };
        h.open_panel(panel.clone());
        h.render_panel(&panel);
        h.close_panel("p");
        open_panel_response(panel)
    });
    let (mut s, _) = Session::ready(ext);
    s.send(&command("1", "all"));
    let want = [
        json!({"type":"notify","level":"warn","message":"careful"}),
        json!({"type":"status","key":"progress","level":"success","text":"2/4"}),
        json!({"type":"status","key":"plain","text":"x"}),
        json!({"type":"status","key":"progress","text":""}),
        json!({"type":"widget","id":"plan","position":"above_input","title":"Plan","lines":["a","b"]}),
        json!({"type":"widget_clear","id":"plan"}),
        json!({"type":"alert","kind":"bell","reason":"question_ready"}),
        json!({"type":"clear_notes"}),
        json!({"type":"submit","text":"go on"}),
        json!({"type":"submit_slash","text":"/todo"}),
        json!({"type":"open_panel","panel":{"id":"p","title":"T","lines":["l"],"footer":"f"}}),
        json!({"type":"panel_render","panel_id":"p","title":"T","lines":["l"],"footer":"f"}),
        json!({"type":"panel_close","panel_id":"p"}),
        json!({"type":"command_response","id":"1","action":"open_panel","open_panel":{"id":"p","title":"T","lines":["l"],"footer":"f"}}),
    ];
    for w in want {
        assert_eq!(s.next(), w);
    }
    shutdown(s);
}

#[test]
fn tool_results_carry_activation_null_details_and_raw_images() {
    let mut ext = Extension::new("x", "1");
    ext.deferred_tool("later", "d", json!({}), |_| text_result("hidden"));
    ext.tool("load", "d", json!({}), |_| {
        text_result("on").with_activate_tools(["later"])
    });
    ext.tool("reset", "d", json!({}), |_| {
        text_result("cleared").with_details(Value::Null)
    });
    ext.tool("pic", "d", json!({}), |_| ToolResult {
        content: vec![text("see"), image_bytes("image/png", b"\x89PNG")],
        ..ToolResult::default()
    });
    let (mut s, frames) = Session::ready(ext);
    assert_eq!(
        frames.iter().find(|f| f["name"] == "later").unwrap()["deferred"],
        true
    );
    s.send(&tool_call("1", "load"));
    assert_eq!(s.next()["activate_tools"], json!(["later"]));
    s.send(&tool_call("2", "reset"));
    let r = s.next();
    assert!(
        r.as_object().unwrap().contains_key("details") && r["details"].is_null(),
        "{r}"
    );
    s.send(&tool_call("3", "pic"));
    assert_eq!(
        s.next()["content"][1],
        json!({"type":"image","mime_type":"image/png","data":"iVBORw=="})
    );
    shutdown(s);
}

#[test]
fn malformed_lines_and_unknown_frames_are_skipped() {
    let (mut s, _) = Session::ready(with_ping(Extension::new("x", "1")));
    for raw in [
        "not json",
        "[1]",
        "{\"id\":1}",
        "{\"type\":\"tool_call\",\"id\":\"1\",\"name\":5}",
        "{\"type\":\"from_the_future\"}",
        "{\"type\":\"hello_ack\",\"protocol_version\":2}",
    ] {
        s.send_raw(raw);
    }
    s.send(&command("p", "ping"));
    assert_eq!(
        s.next()["id"],
        "p",
        "the first frame written answers the ping"
    );
    shutdown(s);
}
