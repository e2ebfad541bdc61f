//! The shared vectors (`sdk/vectors/`) against the Rust wire types and the
//! protocol schema (`sdk/protocol.schema.json`).
//!
//! - every `frames.json` line: host lines decode (or are rejected) as the
//!   vector says, extension lines round-trip exactly through `ExtFrame`, and
//!   every parseable line is accepted or refused by the schema accordingly;
//! - the schema, the wire enums and the vectors name the same frame types;
//! - every conversation's frames fit the schema.

mod schema_check;

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
    assert!(files.len() >= 7, "conversations are missing in {}", dir.display());
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
    for v in frame_vectors().iter().filter(|v| v.direction == "host_to_ext") {
        let decoded = decode_host_frame(v.line.as_bytes());
        let parsed: Option<Value> = serde_json::from_str(&v.line).ok();
        if v.valid {
            let frame = decoded.unwrap_or_else(|e| panic!("{}: rejected: {e}", v.name));
            let want = v.frame_type.as_deref().expect("valid vectors name a type");
            let parsed = parsed.expect("valid lines are JSON");
            assert_eq!(parsed["type"], want, "{}: vector type field", v.name);
            if frame == HostFrame::Unknown {
                assert!(!known.contains(want), "{}: known type {want} decoded as unknown", v.name);
            } else {
                assert_eq!(host_type(&frame), want, "{}", v.name);
                seen.insert(want.to_string());
                schema
                    .check("host_to_ext", &parsed, false)
                    .unwrap_or_else(|e| panic!("{}: schema refuses a valid frame: {e}", v.name));
            }
        } else {
            assert!(decoded.is_err(), "{}: accepted {:?}", v.name, v.line);
            assert!(v.frame_type.is_none(), "{}: invalid vectors have type null", v.name);
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
    for v in frame_vectors().iter().filter(|v| v.direction == "ext_to_host") {
        assert!(v.valid, "{}: extension vectors are all valid", v.name);
        let frame = decode_ext_frame(v.line.as_bytes())
            .unwrap_or_else(|e| panic!("{}: rejected: {e}", v.name));
        assert_ne!(frame, ExtFrame::Unknown, "{}", v.name);
        let want = v.frame_type.as_deref().expect("type");
        assert_eq!(frame.type_name(), want, "{}", v.name);
        let encoded = encode_line(&frame);
        assert_eq!(encoded.last(), Some(&b'\n'));
        assert!(!encoded[..encoded.len() - 1].contains(&b'\n'), "one line");
        let again: Value = serde_json::from_slice(&encoded).expect("encoder writes JSON");
        let original: Value = serde_json::from_str(&v.line).expect("vector is JSON");
        assert_eq!(again, original, "{}: round trip changed the frame", v.name);
        schema
            .check("ext_to_host", &original, false)
            .unwrap_or_else(|e| panic!("{}: schema refuses: {e}", v.name));
        seen.insert(want.to_string());
    }
    assert_eq!(seen, known, "extension frame types covered by vectors vs schema");
}

#[test]
fn vector_names_are_unique() {
    let mut names = BTreeSet::new();
    for v in frame_vectors() {
        assert!(names.insert(v.name.clone()), "duplicate vector name {}", v.name);
    }
}

#[test]
fn the_checker_refuses_what_the_schema_forbids() {
    // Guards against a checker that accepts everything.
    let schema = checker();
    let bad = [
        ("host_to_ext", r#"{"type":"tool_call","id":"1","name":5}"#),
        ("host_to_ext", r#"{"type":"tool_call","id":"1"}"#),
        ("host_to_ext", r#"{"type":"hello_ack","protocol_version":-1}"#),
        ("ext_to_host", r#"{"type":"notify","level":"loud","message":"x"}"#),
        ("ext_to_host", r#"{"type":"tool_result","id":"1","content":[{"type":"text"}]}"#),
        ("ext_to_host", r#"{"type":"command_response","id":"1","action":"shout"}"#),
        ("ext_to_host", r#"{"type":"open_panel","panel":{"title":"no id"}}"#),
        ("ext_to_host", r#"{"type":"hello_ack","protocol_version":2}"#),
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
        assert!(matches!(exit, Some("clean") | Some("error")), "{file}: exit");
    }
}
