//! The scripted provider: every entry kind, exhaustion,
//! cancellable delays, script errors and the exact `--script-log` shape.

#[path = "common/ask.rs"]
mod common_ask;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zut::cancel::{self, CancelToken};
use zut::provider::script::Script;
use zut::provider::{
    self, Block, ContentBlock, Message, Provider, ProviderError, Request, Response, Role, Settings,
    StopReason, ToolCall, ToolDef, Usage,
};

/// A script file (and a log path next to it) in a fresh temp dir.
struct Fixture {
    dir: tempfile::TempDir,
    script: PathBuf,
}

impl Fixture {
    fn new(lines: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.jsonl");
        std::fs::write(&script, lines).unwrap();
        Fixture { dir, script }
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("requests.jsonl")
    }

    fn settings(&self) -> Settings {
        Settings {
            provider: "script".into(),
            script: Some(self.script.clone()),
            script_log: Some(self.log()),
            ..Settings::default()
        }
    }

    fn provider(&self) -> Script {
        Script::new(&self.settings()).expect("script parses")
    }
}

fn ask_with(
    p: &mut dyn Provider,
    messages: &[Message],
    cancel: &CancelToken,
) -> (Result<Response, ProviderError>, Vec<String>) {
    common_ask::ask(p, "sys", messages, cancel)
}

fn ask(
    p: &mut dyn Provider,
    messages: &[Message],
) -> (Result<Response, ProviderError>, Vec<String>) {
    ask_with(p, messages, &CancelToken::never())
}

fn hi() -> Vec<Message> {
    vec![Message::user_text("hi")]
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        invalid_args: None,
        id: id.into(),
        name: name.into(),
        args,
    }
}

#[test]
fn text_entry_is_one_delta_and_ends_the_turn() {
    let f = Fixture::new("{\"text\":\"Hello there\"}\n");
    let mut p = f.provider();
    let (result, deltas) = ask(&mut p, &hi());
    assert_eq!(deltas, ["Hello there"]);
    assert_eq!(
        result.unwrap(),
        Response {
            thinking: vec![],
            text: "Hello there".into(),
            tool_calls: vec![],
            stop: StopReason::EndTurn,
            usage: Usage::default(),
        }
    );
}

#[test]
fn tool_calls_fill_in_missing_ids_and_args() {
    let f = Fixture::new(concat!(
        r#"{"tool_calls":[{"id":"c1","name":"weather","args":{"city":"Berlin"}},{"name":"clock"},{"name":"clock","args":{"tz":"UTC"}}]}"#,
        "\n",
        r#"{"tool_calls":[{"name":"clock"}]}"#,
        "\n"
    ));
    let mut p = f.provider();
    let (result, deltas) = ask(&mut p, &hi());
    let response = result.unwrap();
    assert!(deltas.is_empty());
    assert_eq!(response.text, "");
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(
        response.tool_calls,
        vec![
            call("c1", "weather", json!({"city":"Berlin"})),
            call("call_1", "clock", json!({})),
            call("call_2", "clock", json!({"tz":"UTC"})),
        ]
    );

    // The next request's transcript holds those three calls: new ids
    // continue after them and never repeat one.
    let transcript = vec![
        Message::user_text("hi"),
        Message {
            role: Role::Assistant,
            content: response
                .tool_calls
                .iter()
                .map(|c| Block::ToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    args: c.args.clone(),
                })
                .collect(),
            from: None,
        },
    ];
    let (result, _) = ask(&mut p, &transcript);
    assert_eq!(result.unwrap().tool_calls[0].id, "call_4");
}

#[test]
fn text_and_tool_calls_together() {
    let f = Fixture::new(
        r#"{"text":"Let me check.","tool_calls":[{"id":"c1","name":"weather","args":{"city":"Paris"}}]}"#,
    );
    let mut p = f.provider();
    let (result, deltas) = ask(&mut p, &hi());
    let response = result.unwrap();
    assert_eq!(deltas, ["Let me check."]);
    assert_eq!(response.text, "Let me check.");
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(
        response.tool_calls,
        vec![call("c1", "weather", json!({"city":"Paris"}))]
    );
}

#[test]
fn echo_answers_with_the_last_user_text() {
    let f = Fixture::new("{\"echo\":true}\n{\"echo\":true}\n");
    let mut p = f.provider();
    let transcript = vec![
        Message::user_text("old question"),
        Message {
            role: Role::User,
            content: vec![
                Block::Text {
                    text: "part one, ".into(),
                },
                Block::Image {
                    mime_type: "image/png".into(),
                    data: "AA==".into(),
                },
                Block::Text {
                    text: "part two".into(),
                },
            ],
            from: None,
        },
        Message {
            role: Role::Assistant,
            content: vec![Block::Text {
                text: "assistant text is never echoed".into(),
            }],
            from: None,
        },
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                call_id: "c1".into(),
                is_error: false,
                content: vec![ContentBlock::text("tool output is not user text")],
            }],
            from: None,
        },
    ];
    let (result, deltas) = ask(&mut p, &transcript);
    assert_eq!(result.unwrap().text, "part one, part two");
    assert_eq!(deltas, ["part one, part two"]);
    let (result, deltas) = ask(&mut p, &[]);
    assert_eq!(result.unwrap().text, "");
    assert!(deltas.is_empty());
}

#[test]
fn error_entry_fails_that_request_only() {
    let f = Fixture::new("{\"error\":\"overloaded\"}\n{\"text\":\"recovered\"}\n");
    let mut p = f.provider();
    let (result, deltas) = ask(&mut p, &hi());
    let err = result.unwrap_err();
    assert_eq!(err, ProviderError::Model("overloaded".into()));
    assert_eq!(err.to_string(), "provider error: overloaded");
    assert!(deltas.is_empty());
    assert_eq!(ask(&mut p, &hi()).0.unwrap().text, "recovered");
}

#[test]
fn requests_after_the_last_entry_are_exhausted() {
    let f = Fixture::new("\n{\"text\":\"only\"}\n\n   \n");
    let mut p = f.provider();
    assert_eq!(ask(&mut p, &hi()).0.unwrap().text, "only");
    for _ in 0..2 {
        assert_eq!(
            ask(&mut p, &hi()).0.unwrap_err(),
            ProviderError::Model("script exhausted".into())
        );
    }
}

#[test]
fn delay_then_answer() {
    let f = Fixture::new(r#"{"delay_ms":120,"text":"late"}"#);
    let mut p = f.provider();
    let started = Instant::now();
    assert_eq!(ask(&mut p, &hi()).0.unwrap().text, "late");
    assert!(started.elapsed() >= Duration::from_millis(120));
}

#[test]
fn abort_interrupts_a_delay() {
    let f = Fixture::new("{\"delay_ms\":30000,\"text\":\"never\"}\n{\"text\":\"next\"}\n");
    let mut p = f.provider();
    let (canceller, token) = cancel::pair();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        canceller.cancel();
    });
    let started = Instant::now();
    let (result, deltas) = ask_with(&mut p, &hi(), &token);
    assert_eq!(result.unwrap_err(), ProviderError::Aborted);
    assert!(deltas.is_empty());
    assert!(started.elapsed() < Duration::from_secs(2));
    // The aborted request consumed its entry.
    assert_eq!(ask(&mut p, &hi()).0.unwrap().text, "next");
}

#[test]
fn script_problems_are_config_errors() {
    let err = |settings: &Settings| match Script::new(settings) {
        Err(ProviderError::Config(m)) => m,
        Err(other) => panic!("expected a config error, got {other:?}"),
        Ok(_) => panic!("expected an error"),
    };
    assert_eq!(
        err(&Settings::default()),
        "the script provider needs --script FILE"
    );

    let missing = Settings {
        script: Some(PathBuf::from("/nonexistent/zut-script.jsonl")),
        ..Settings::default()
    };
    assert!(err(&missing).contains("/nonexistent/zut-script.jsonl"));

    for (bad, needle) in [
        ("{\"text\":\"ok\"}\n\n{\"text\": oops}\n", "line 3"),
        ("{\"text\":\"ok\"}\n[1]\n", "line 2"),
        ("{\"txt\":\"typo\"}\n", "line 1"),
        ("{\"tool_calls\":[{\"args\":{}}]}\n", "line 1"),
    ] {
        let f = Fixture::new(bad);
        let m = err(&f.settings());
        assert!(
            m.contains("script.jsonl") && m.contains(needle),
            "{bad:?} -> {m}"
        );
    }
}

#[test]
fn create_builds_the_script_provider() {
    let f = Fixture::new("{\"text\":\"x\"}");
    let p = provider::create(&f.settings()).expect("create");
    assert_eq!(p.name(), "script");
    assert_eq!(p.model(), "script");
    let named = provider::create(&Settings {
        model: Some("fake-1".into()),
        ..f.settings()
    })
    .unwrap();
    assert_eq!(named.model(), "fake-1");
}

fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn log_has_one_exact_line_per_request() {
    let f = Fixture::new(concat!(
        r#"{"tool_calls":[{"id":"c1","name":"weather","args":{"city":"Berlin"}}]}"#,
        "\n",
        r#"{"error":"boom"}"#,
        "\n"
    ));
    std::fs::write(f.log(), "{\"earlier\":true}\n").unwrap();
    let mut p = f.provider();
    let tools = vec![ToolDef {
        name: "weather".into(),
        description: "Weather for a city".into(),
        schema: json!({"type":"object","properties":{"city":{"type":"string"}}}),
    }];
    let first = vec![Message::user_text("Weather in Berlin?")];
    let hidden = vec!["ctx: metric units".to_string()];
    let req = Request {
        step: 1,
        system: "You are zut.",
        messages: &first,
        tools: &tools,
        hidden_context: &hidden,
    };
    p.complete(&req, &mut |_| {}, &CancelToken::never())
        .unwrap();

    let mut second = first.clone();
    second.push(Message {
        role: Role::Assistant,
        content: vec![Block::ToolCall {
            id: "c1".into(),
            name: "weather".into(),
            args: json!({"city":"Berlin"}),
        }],
        from: None,
    });
    second.push(Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            call_id: "c1".into(),
            is_error: false,
            content: vec![
                ContentBlock::text("12°C"),
                ContentBlock::Image {
                    mime_type: "image/png".into(),
                    data: "AA==".into(),
                },
            ],
        }],
        from: None,
    });
    let req2 = Request {
        step: 2,
        messages: &second,
        hidden_context: &[],
        ..req
    };
    assert!(p
        .complete(&req2, &mut |_| {}, &CancelToken::never())
        .is_err());
    let req3 = Request { step: 3, ..req2 };
    assert!(p
        .complete(&req3, &mut |_| {}, &CancelToken::never())
        .is_err());

    let lines = log_lines(&f.log());
    assert_eq!(lines.len(), 4, "earlier content kept, one line per request");
    assert_eq!(lines[0], "{\"earlier\":true}");
    let schema = serde_json::to_string(&tools[0].schema).unwrap();
    let tools_json =
        format!(r#"[{{"name":"weather","description":"Weather for a city","schema":{schema}}}]"#);
    assert_eq!(
        lines[1],
        format!(
            r#"{{"step":1,"system":"You are zut.","messages":[{{"role":"user","content":[{{"type":"text","text":"Weather in Berlin?"}}]}}],"tools":{tools_json},"hidden_context":["ctx: metric units"]}}"#
        )
    );
    let messages2 = concat!(
        r#"[{"role":"user","content":[{"type":"text","text":"Weather in Berlin?"}]},"#,
        r#"{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"weather","args":{"city":"Berlin"}}]},"#,
        r#"{"role":"user","content":[{"type":"tool_result","call_id":"c1","is_error":false,"content":[{"type":"text","text":"12°C"},{"type":"image","mime_type":"image/png","data":"AA=="}]}]}]"#
    );
    assert_eq!(
        lines[2],
        format!(
            r#"{{"step":2,"system":"You are zut.","messages":{messages2},"tools":{tools_json},"hidden_context":[]}}"#
        )
    );
    let third: Value = serde_json::from_str(&lines[3]).unwrap();
    assert_eq!(third["step"], 3, "the exhausted request is logged too");
}

#[test]
fn no_log_file_without_script_log() {
    let f = Fixture::new("{\"text\":\"x\"}");
    let mut p = Script::new(&Settings {
        script_log: None,
        ..f.settings()
    })
    .unwrap();
    ask(&mut p, &hi()).0.unwrap();
    assert!(!f.log().exists());
}

#[test]
fn unwritable_log_is_a_clear_error() {
    let f = Fixture::new("{\"text\":\"x\"}");
    let mut p = Script::new(&Settings {
        script_log: Some(f.dir.path().join("no/such/dir/log.jsonl")),
        ..f.settings()
    })
    .unwrap();
    match ask(&mut p, &hi()).0.unwrap_err() {
        ProviderError::Config(m) => assert!(m.contains("script log"), "{m}"),
        other => panic!("unexpected {other:?}"),
    }
}
