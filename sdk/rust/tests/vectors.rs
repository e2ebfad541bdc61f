//! The shared vectors (`sdk/vectors/`) against the Rust wire types and the
//! protocol schema (`sdk/protocol.schema.json`).
//!
//! - every `frames.json` line: host lines decode (or are rejected) as the
//!   vector says, extension lines round-trip exactly through `ExtFrame`, and
//!   every parseable line is accepted or refused by the schema accordingly;
//! - the schema, the wire enums and the vectors name the same frame types;
//! - every conversation's frames fit the schema.

mod schema_check;
mod support;

use support::pipe;

use schema_check::Checker;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use zut_ext::wire::{decode_ext_frame, decode_host_frame, encode_line, ExtFrame, HostFrame};

fn sdk_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read_json(path: PathBuf) -> Value {
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn checker() -> Checker {
    Checker::new(read_json(sdk_dir().join("protocol.schema.json")))
}

/// One entry of `frames.json`.
struct Vector {
    name: String,
    direction: String,
    line: String,
    valid: bool,
    frame_type: Option<String>,
}

fn frame_vectors() -> Vec<Vector> {
    let all = read_json(sdk_dir().join("vectors/frames.json"));
    let all = all.as_array().expect("frames.json is an array");
    assert!(all.len() > 40, "frames.json looks truncated");
    all.iter()
        .map(|v| Vector {
            name: v["name"].as_str().expect("name").to_string(),
            direction: v["direction"].as_str().expect("direction").to_string(),
            line: v["line"].as_str().expect("line").to_string(),
            valid: v["valid"].as_bool().expect("valid"),
            frame_type: v["type"].as_str().map(str::to_string),
        })
        .collect()
}

/// Every conversation file, by file name.
pub fn conversations() -> Vec<(String, Value)> {
    let dir = sdk_dir().join("vectors/conversations");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 7,
        "conversations are missing in {}",
        dir.display()
    );
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, read_json(p))
        })
        .collect()
}

fn host_type(frame: &HostFrame) -> String {
    let v = serde_json::to_value(frame).expect("host frames serialise");
    v["type"].as_str().expect("tagged").to_string()
}

#[test]
fn host_lines_decode_as_the_vectors_say() {
    let schema = checker();
    let known: BTreeSet<String> = schema.frame_types("host_to_ext").into_iter().collect();
    let mut seen = BTreeSet::new();
    for v in frame_vectors()
        .iter()
        .filter(|v| v.direction == "host_to_ext")
    {
        let decoded = decode_host_frame(v.line.as_bytes());
        let parsed: Option<Value> = serde_json::from_str(&v.line).ok();
        if v.valid {
            let frame = decoded.unwrap_or_else(|e| panic!("{}: rejected: {e}", v.name));
            let want = v.frame_type.as_deref().expect("valid vectors name a type");
            // Lines whose unknown fields no JSON value can hold (`1e400`, a
            // lone surrogate, nesting past serde_json's limit) are checked
            // through what the decoder kept: the frame, encoded again.
            let parsed = parsed.unwrap_or_else(|| {
                serde_json::from_slice(&encode_line(&frame)).expect("frames encode as JSON")
            });
            assert_eq!(parsed["type"], want, "{}: vector type field", v.name);
            if frame == HostFrame::Unknown {
                assert!(
                    !known.contains(want),
                    "{}: known type {want} decoded as unknown",
                    v.name
                );
            } else {
                assert_eq!(host_type(&frame), want, "{}", v.name);
                seen.insert(want.to_string());
                schema
                    .check("host_to_ext", &parsed, false)
                    .unwrap_or_else(|e| panic!("{}: schema refuses a valid frame: {e}", v.name));
            }
        } else {
            assert!(decoded.is_err(), "{}: accepted {:?}", v.name, v.line);
            assert!(
                v.frame_type.is_none(),
                "{}: invalid vectors have type null",
                v.name
            );
            if let Some(parsed) = parsed {
                assert!(
                    schema.check("host_to_ext", &parsed, false).is_err(),
                    "{}: schema accepts an invalid line",
                    v.name
                );
            }
        }
    }
    assert_eq!(seen, known, "host frame types covered by vectors vs schema");
}

#[test]
fn extension_lines_round_trip_exactly() {
    let schema = checker();
    let known: BTreeSet<String> = schema.frame_types("ext_to_host").into_iter().collect();
    let mut seen = BTreeSet::new();
    for v in frame_vectors()
        .iter()
        .filter(|v| v.direction == "ext_to_host")
    {
        assert!(v.valid, "{}: extension vectors are all valid", v.name);
        let frame = decode_ext_frame(v.line.as_bytes())
            .unwrap_or_else(|e| panic!("{}: rejected: {e}", v.name));
        let want = v.frame_type.as_deref().expect("type");
        let original: Value = serde_json::from_str(&v.line).expect("vector is JSON");
        let through_wire = (frame != ExtFrame::Unknown).then(|| encode_line(&frame));
        let wire_keeps_it = through_wire
            .as_ref()
            .is_some_and(|e| serde_json::from_slice::<Value>(e).ok().as_ref() == Some(&original));
        // The protocol additions' frames and fields are written by the SDK
        // through `zut_ext::additions` (the host's wire enums may not carry
        // them yet): those vectors must round-trip through that encoder.
        let encoded = if wire_keeps_it {
            assert_eq!(frame.type_name(), want, "{}", v.name);
            through_wire.unwrap()
        } else {
            let added: AddedFrame = serde_json::from_str(&v.line).unwrap_or_else(|e| {
                panic!(
                    "{}: neither the wire enums nor the additions keep it: {e}",
                    v.name
                )
            });
            assert_eq!(added.type_name(), want, "{}", v.name);
            encode_line(&added)
        };
        assert_eq!(encoded.last(), Some(&b'\n'));
        assert!(!encoded[..encoded.len() - 1].contains(&b'\n'), "one line");
        let again: Value = serde_json::from_slice(&encoded).expect("encoder writes JSON");
        assert_eq!(again, original, "{}: round trip changed the frame", v.name);
        schema
            .check("ext_to_host", &original, false)
            .unwrap_or_else(|e| panic!("{}: schema refuses: {e}", v.name));
        seen.insert(want.to_string());
    }
    assert_eq!(
        seen, known,
        "extension frame types covered by vectors vs schema"
    );
}

#[test]
fn vector_names_are_unique() {
    let mut names = BTreeSet::new();
    for v in frame_vectors() {
        assert!(
            names.insert(v.name.clone()),
            "duplicate vector name {}",
            v.name
        );
    }
}

#[test]
fn the_checker_refuses_what_the_schema_forbids() {
    // Guards against a checker that accepts everything.
    let schema = checker();
    let bad = [
        ("host_to_ext", r#"{"type":"tool_call","id":"1","name":5}"#),
        ("host_to_ext", r#"{"type":"tool_call","id":"1"}"#),
        (
            "host_to_ext",
            r#"{"type":"hello_ack","protocol_version":-1}"#,
        ),
        (
            "ext_to_host",
            r#"{"type":"notify","level":"loud","message":"x"}"#,
        ),
        (
            "ext_to_host",
            r#"{"type":"tool_result","id":"1","content":[{"type":"text"}]}"#,
        ),
        (
            "ext_to_host",
            r#"{"type":"command_response","id":"1","action":"shout"}"#,
        ),
        (
            "ext_to_host",
            r#"{"type":"open_panel","panel":{"title":"no id"}}"#,
        ),
        (
            "ext_to_host",
            r#"{"type":"hello_ack","protocol_version":2}"#,
        ),
    ];
    for (dir, line) in bad {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(schema.check(dir, &v, false).is_err(), "accepted {line}");
    }
    let good: Value = serde_json::from_str(r#"{"type":"ready","later":[1]}"#).unwrap();
    assert_eq!(schema.check("ext_to_host", &good, false), Ok(()));
    let pattern: Value =
        serde_json::from_str(r#"{"type":"tool_result","content":"<any>"}"#).unwrap();
    assert_eq!(schema.check("ext_to_host", &pattern, true), Ok(()));
    assert!(schema.check("ext_to_host", &pattern, false).is_err());
}

#[test]
fn conversation_frames_fit_the_schema() {
    let schema = checker();
    let host_types = schema.frame_types("host_to_ext");
    for (file, conv) in conversations() {
        let steps = conv["steps"].as_array().expect("steps");
        assert_eq!(steps[0]["expect"]["type"], "hello", "{file}: first step");
        for (i, step) in steps.iter().enumerate() {
            if let Some(frame) = step.get("send") {
                let t = frame["type"].as_str().expect("sent frames have a type");
                if host_types.iter().any(|k| k == t) {
                    schema
                        .check("host_to_ext", frame, false)
                        .unwrap_or_else(|e| panic!("{file} step {i}: {e}"));
                }
            } else if let Some(pattern) = step.get("expect") {
                schema
                    .check("ext_to_host", pattern, true)
                    .unwrap_or_else(|e| panic!("{file} step {i}: {e}"));
            } else {
                assert!(step.get("expect_none_before").is_some(), "{file} step {i}");
                assert_eq!(i, steps.len() - 1, "{file}: expect_none_before is last");
            }
        }
        let exit = conv["exit"].as_str();
        assert!(
            matches!(exit, Some("clean") | Some("error")),
            "{file}: exit"
        );
    }
}

// ----- conversations: the declared extension, built with the SDK -----

use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc;
use std::time::Duration;
use zut_ext::additions::AddedFrame;
use zut_ext::wire::ContentBlock;
use zut_ext::{
    display, error, error_result, image, insert, noop, prompt, text, text_result, AgentEndDecision,
    AssistantMessageDecision, Extension, Response, ToolCallDecision, ToolResult,
    ToolResultDecision, TurnStartDecision, UserMessageDecision,
};

/// How long an `expect` waits for its frame.
const EXPECT_WAIT: Duration = Duration::from_secs(10);

fn substitute(v: &Value, args: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("{args}", args)),
        Value::Object(o) => o
            .iter()
            .map(|(k, v)| (k.clone(), substitute(v, args)))
            .collect(),
        other => other.clone(),
    }
}

fn reply_to_response(reply: &Value) -> Response {
    let field = |k: &str| reply[k].as_str().unwrap_or_default().to_string();
    let mut r = match reply["action"].as_str() {
        Some("prompt") => prompt(field("prompt")),
        Some("insert") => insert(field("insert")),
        Some("display") => display(field("display")),
        Some("noop") => noop(),
        other => panic!("vector reply action {other:?} is not supported by the harness"),
    };
    if let Some(e) = reply["error"].as_str() {
        r.error = error(e).error;
    }
    r
}

fn tool_behavior(behavior: &str) -> impl Fn(Value) -> ToolResult + Send + Sync + 'static {
    let behavior = behavior.to_string();
    move |args| match behavior.as_str() {
        "echo" => text_result(serde_json::to_string(&args).expect("args serialise")),
        "error" => error_result("boom"),
        "panic" => panic!("vector tool panics on purpose"),
        "details" => text_result("ok").with_details(args),
        "image" => ToolResult {
            content: vec![image("image/png", "iVBORw0KGgo=")],
            ..ToolResult::default()
        },
        other => panic!("unknown vector behavior {other}"),
    }
}

fn build(decl: &Value) -> Extension {
    let s = |v: &Value| {
        v.as_str()
            .expect("string in extension declaration")
            .to_string()
    };
    let mut ext = Extension::new(&s(&decl["name"]), &s(&decl["version"]));
    let handle = ext.handle();
    let state = decl.get("state").map(|st| ext.state(st["default"].clone()));
    for c in decl["commands"].as_array().into_iter().flatten() {
        let reply = c["reply"].clone();
        ext.command(&s(&c["name"]), &s(&c["description"]), move |args| {
            reply_to_response(&substitute(&reply, args))
        });
    }
    for t in decl["tools"].as_array().into_iter().flatten() {
        let (name, desc, schema) = (s(&t["name"]), s(&t["description"]), t["schema"].clone());
        match t["behavior"].as_str() {
            Some("progress") => {
                ext.tool_with(&name, &desc, schema, |call, _| {
                    call.progress(Some("step 1"), Some(1.0), Some(2.0));
                    call.progress(Some("step 2"), Some(2.0), Some(2.0));
                    text_result("done")
                });
                continue;
            }
            Some("late") => {
                let h = handle.clone();
                ext.tool(&name, &desc, schema, move |args| {
                    let echo = tool_behavior("echo");
                    let late = args["name"].as_str().unwrap_or_default();
                    h.register_tool(
                        late,
                        "registered late",
                        json!({"type":"object"}),
                        move |_, a| echo(a),
                    );
                    h.unregister_tool(args["drop"].as_str().unwrap_or_default());
                    h.unregister_command(args["drop_command"].as_str().unwrap_or_default());
                    text_result("ok")
                });
                continue;
            }
            Some("count") => {
                let st = state.clone().expect("count needs a declared state");
                ext.tool(&name, &desc, schema, move |_| {
                    let now = st.update(|v| v["n"] = json!(v["n"].as_u64().unwrap_or(0) + 1));
                    text_result(now["n"].to_string())
                });
                continue;
            }
            Some("typed_weather") => {
                #[derive(serde::Deserialize)]
                struct Weather {
                    city: String,
                    #[serde(default = "one")]
                    days: u32,
                }
                fn one() -> u32 {
                    1
                }
                let schema = json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                    "required": ["city"]
                });
                ext.typed_tool(&name, &desc, schema, |_, w: Weather| {
                    text_result(format!("{} {}", w.city, w.days))
                });
                continue;
            }
            _ => {}
        }
        let f = tool_behavior(&s(&t["behavior"]));
        if t["deferred"].as_bool().unwrap_or(false) {
            ext.deferred_tool(&name, &desc, schema, f);
        } else {
            ext.tool(&name, &desc, schema, f);
        }
    }
    for e in decl["events"].as_array().into_iter().flatten() {
        ext.on(&s(e), |_| {});
    }
    let behavior = &decl["intercept_behavior"];
    for kind in decl["intercept"].as_array().into_iter().flatten() {
        match kind.as_str() {
            Some("tool_call") => {
                let b = &behavior["tool_call"];
                let b = b.clone();
                ext.intercept_tool_call(move |name, _args| {
                    if Some(name) == b["block_tool"].as_str() {
                        ToolCallDecision::block(b["reason"].as_str().unwrap_or_default())
                    } else if Some(name) == b["approve_tool"].as_str() {
                        ToolCallDecision::approve()
                    } else if Some(name) == b["ask_tool"].as_str() {
                        ToolCallDecision::ask()
                    } else {
                        ToolCallDecision::allow()
                    }
                });
            }
            Some("turn_start") => {
                let context = behavior["turn_start"]["context"]
                    .as_str()
                    .map(str::to_string);
                ext.intercept_turn_start(move |_| match &context {
                    Some(c) => TurnStartDecision::context(c.clone()),
                    None => TurnStartDecision::allow(),
                });
            }
            Some("assistant_message") => {
                let pair = behavior["assistant_message"]["replace"].clone();
                ext.intercept_assistant_message(move |text| {
                    match (pair[0].as_str(), pair[1].as_str()) {
                        (Some(from), Some(to)) if text.contains(from) => {
                            AssistantMessageDecision::replace(text.replace(from, to))
                        }
                        _ => AssistantMessageDecision::allow(),
                    }
                });
            }
            Some("user_message") => {
                let b = behavior["user_message"].clone();
                ext.intercept_user_message(move |text| {
                    let str_of = |k: &str| b[k].as_str().unwrap_or_default().to_string();
                    if b["block_if"].as_str().is_some_and(|w| text.contains(w)) {
                        return UserMessageDecision::block(str_of("reason"));
                    }
                    let d = match (b["replace"][0].as_str(), b["replace"][1].as_str()) {
                        (Some(from), Some(to)) => {
                            UserMessageDecision::replace(text.replace(from, to))
                        }
                        _ => UserMessageDecision::allow(),
                    };
                    d.with_context(str_of("context"))
                });
            }
            Some("tool_result") => {
                let secret = behavior["tool_result"]["redact"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                ext.intercept_tool_result(move |r| {
                    let texts: Vec<&str> = (r.content.iter())
                        .filter_map(|b| match b {
                            ContentBlock::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    if secret.is_empty() || !texts.iter().any(|t| t.contains(&secret)) {
                        return ToolResultDecision::allow();
                    }
                    ToolResultDecision::replace(
                        texts
                            .iter()
                            .map(|t| text(t.replace(&secret, "[redacted]")))
                            .collect(),
                    )
                });
            }
            Some("agent_end") => {
                let b = behavior["agent_end"].clone();
                ext.intercept_agent_end(move |end| match b["until"].as_str() {
                    Some(u) if !end.text.contains(u) => {
                        AgentEndDecision::keep_going(b["reason"].as_str().unwrap_or_default())
                    }
                    _ => AgentEndDecision::done(),
                });
            }
            other => panic!("unknown intercept {other:?}"),
        }
    }
    ext
}

/// Subset match: every field of `want` is in `got` and equal; objects
/// recursively, arrays element by element, `"<any>"` matches anything.
fn matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::String(s), _) if s == "<any>" => true,
        (Value::Object(w), Value::Object(g)) => w
            .iter()
            .all(|(k, wv)| g.get(k).is_some_and(|gv| matches(wv, gv))),
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(a, b)| matches(a, b))
        }
        (w, g) => w == g,
    }
}

#[test]
fn subset_matching_follows_the_vector_rules() {
    let got = json!({"type":"t","a":{"b":1,"c":2},"l":[1,2],"x":"y"});
    assert!(matches(&json!({"type":"t","a":{"b":1}}), &got));
    assert!(matches(&json!({"l":[1,2],"x":"<any>"}), &got));
    assert!(!matches(&json!({"l":[1]}), &got));
    assert!(!matches(&json!({"a":{"b":2}}), &got));
    assert!(!matches(&json!({"missing":"<any>"}), &got));
}

/// Runs one conversation against the Rust SDK; the error says which step failed.
fn run_conversation(file: &str, conv: &Value, schema: &Checker) -> Result<(), String> {
    let mut ext = build(&conv["extension"]);
    let (mut to_ext, ext_in) = pipe::pipe();
    let (ext_out, from_ext) = pipe::pipe();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(ext.run_with(ext_in, ext_out).map_err(|e| e.to_string()));
    });
    let (frames_tx, frames) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(from_ext).lines() {
            let line = line.expect("extension writes UTF-8");
            let v: Value = serde_json::from_str(&line).expect("extension writes JSON lines");
            if frames_tx.send(v).is_err() {
                return;
            }
        }
    });
    let check = |frame: &Value| {
        schema
            .check("ext_to_host", frame, false)
            .map_err(|e| format!("{file}: the SDK wrote a frame outside the schema: {e}: {frame}"))
    };
    let steps = conv["steps"].as_array().expect("steps");
    for (i, step) in steps.iter().enumerate() {
        if let Some(frame) = step.get("send") {
            let mut line = serde_json::to_vec(frame).expect("serialise");
            line.push(b'\n');
            to_ext
                .write_all(&line)
                .map_err(|e| format!("{file} step {i}: extension stopped reading: {e}"))?;
        } else if let Some(want) = step.get("expect") {
            loop {
                let got = frames
                    .recv_timeout(EXPECT_WAIT)
                    .map_err(|e| format!("{file} step {i}: no frame matching {want} ({e})"))?;
                check(&got)?;
                if got["type"] == want["type"] {
                    if !matches(want, &got) {
                        return Err(format!("{file} step {i}: expected {want}, got {got}"));
                    }
                    break;
                }
            }
        } else if let Some(t) = step.get("expect_none_before") {
            while let Ok(got) = frames.recv_timeout(EXPECT_WAIT) {
                check(&got)?;
                if got["type"] == *t {
                    return Err(format!("{file} step {i}: unexpected {got}"));
                }
            }
        }
    }
    drop(to_ext);
    let outcome = done_rx
        .recv_timeout(EXPECT_WAIT)
        .map_err(|_| format!("{file}: run_with did not return after its input closed"))?;
    match (conv["exit"].as_str(), outcome) {
        (Some("clean"), Ok(())) => {}
        (Some("error"), Err(msg)) => {
            if conv["name"] == "protocol_mismatch" && !msg.contains("protocol version 3") {
                return Err(format!("{file}: unclear error {msg:?}"));
            }
        }
        (want, got) => {
            return Err(format!(
                "{file}: wanted exit {want:?}, run returned {got:?}"
            ))
        }
    }
    // run_with has returned, so the output is closed: whatever is left is
    // readable to the end without waiting.
    while let Ok(got) = frames.recv_timeout(EXPECT_WAIT) {
        check(&got)?;
    }
    Ok(())
}

#[test]
fn conversations_pass_against_the_rust_sdk() {
    let schema = checker();
    let mut failures = Vec::new();
    for (file, conv) in conversations() {
        if let Err(e) = run_conversation(&file, &conv, &schema) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_wrong_expectation_fails_the_harness() {
    // The harness must be able to fail: a conversation expecting a reply
    // the declared extension does not give is reported.
    let schema = checker();
    let (file, mut conv) = conversations()
        .into_iter()
        .find(|(_, c)| c["name"] == "commands")
        .expect("commands conversation");
    let steps = conv["steps"].as_array_mut().unwrap();
    let step = steps
        .iter_mut()
        .find(|s| s["expect"]["display"] == "hi there")
        .expect("the hi there step");
    step["expect"]["display"] = json!("hi somebody else");
    let err = run_conversation(&file, &conv, &schema).unwrap_err();
    assert!(err.contains("hi somebody else"), "{err}");
}

#[test]
fn the_additions_host_fields_are_read_from_the_vectors() {
    use zut_ext::additions::{read_fields, HelloAckAdditions};
    use zut_ext::wire::{decode_host_frame, EventPayload, HostFrame};
    let line = |name: &str| {
        frame_vectors()
            .into_iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("vector {name}"))
            .line
    };
    let payload = |name: &str| -> EventPayload {
        match decode_host_frame(line(name).as_bytes()) {
            Ok(HostFrame::EventIntercept { payload, .. }) => payload,
            other => panic!("{name}: {other:?}"),
        }
    };
    let ack: HelloAckAdditions = read_fields(line("hello_ack_features").as_bytes());
    assert_eq!(ack.features, ["late_registration", "tool_progress"]);
    let r = payload("intercept_tool_result");
    assert_eq!(
        (r.is_error, r.content.map(|c| c.len()), r.extension.as_str()),
        (Some(false), Some(1), "wx")
    );
    let b = payload("intercept_tool_result_builtin");
    assert_eq!((b.is_error, b.extension.as_str()), (Some(true), ""));
    let end = payload("intercept_agent_end");
    assert_eq!((end.steps, end.continued), (3, Some(1)));
    let none: HelloAckAdditions = read_fields(line("hello_ack_minimal").as_bytes());
    assert!(none.features.is_empty());
}
