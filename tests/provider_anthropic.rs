//! The Anthropic provider against a real local HTTP server replaying
//! Messages API event streams.

#[path = "common/ask.rs"]
mod common_ask;
#[path = "common/http_server.rs"]
mod http_server;

use http_server::{fast_retries, Reply, TestServer};
use serde_json::json;
use std::time::{Duration, Instant};
use zut::cancel::{self, CancelToken};
use zut::provider::anthropic::Anthropic;
use zut::provider::{
    Block, ContentBlock, Message, Provider, ProviderError, Request, Response, Role, Settings,
    StopReason, ToolDef, Usage,
};

/// A provider without cache breakpoints, so bodies read as plain shapes
/// (caching has its own tests through [`provider_with`]).
fn provider(server: &TestServer) -> Anthropic {
    provider_with(
        server,
        Settings {
            no_cache: true,
            ..Settings::default()
        },
    )
}

fn provider_with(server: &TestServer, settings: Settings) -> Anthropic {
    fast_retries();
    Anthropic::new(&Settings {
        provider: "anthropic".into(),
        base_url: Some(server.url().to_string()),
        api_key: Some("sk-test".into()),
        ..settings
    })
    .expect("provider")
}

fn ask(
    p: &mut Anthropic,
    messages: &[Message],
    cancel: &CancelToken,
) -> (Result<Response, ProviderError>, Vec<String>) {
    common_ask::ask(p, "You are terse.", messages, cancel)
}

fn hello() -> Vec<Message> {
    vec![Message::user_text("Say hello")]
}

/// Formats one SSE event the way the API does.
fn ev(name: &str, data: serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start(input_tokens: u64) -> String {
    ev(
        "message_start",
        json!({"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant",
            "model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,
            "usage":{"input_tokens":input_tokens,"output_tokens":1}}}),
    )
}

fn text_block(index: u64, parts: &[&str]) -> String {
    let mut s = ev(
        "content_block_start",
        json!({"type":"content_block_start","index":index,"content_block":{"type":"text","text":""}}),
    );
    for p in parts {
        s += &ev(
            "content_block_delta",
            json!({"type":"content_block_delta","index":index,"delta":{"type":"text_delta","text":p}}),
        );
    }
    s + &ev(
        "content_block_stop",
        json!({"type":"content_block_stop","index":index}),
    )
}

fn tool_block(index: u64, id: &str, name: &str, json_parts: &[&str]) -> String {
    let mut s = ev(
        "content_block_start",
        json!({"type":"content_block_start","index":index,
            "content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}),
    );
    for p in json_parts {
        s += &ev(
            "content_block_delta",
            json!({"type":"content_block_delta","index":index,
                "delta":{"type":"input_json_delta","partial_json":p}}),
        );
    }
    s + &ev(
        "content_block_stop",
        json!({"type":"content_block_stop","index":index}),
    )
}

fn message_end(stop_reason: &str, output_tokens: u64) -> String {
    ev(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":stop_reason,"stop_sequence":null},
            "usage":{"output_tokens":output_tokens}}),
    ) + &ev("message_stop", json!({"type":"message_stop"}))
}

fn plain_answer() -> String {
    message_start(25)
        + &text_block(0, &["Hello", ", wor", "ld!"])
        + "event: ping\ndata: {\"type\": \"ping\"}\n\n"
        + &message_end("end_turn", 15)
}

#[test]
fn plain_text_answer_streams_deltas() {
    let server = TestServer::start(vec![Reply::sse(&plain_answer())]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("answer");
    assert_eq!(deltas, ["Hello", ", wor", "ld!"]);
    assert_eq!(
        response,
        Response {
            thinking: vec![],
            text: "Hello, world!".into(),
            tool_calls: vec![],
            stop: StopReason::EndTurn,
            usage: Usage {
                input_tokens: 25,
                output_tokens: 15,
                ..Usage::default()
            },
        }
    );

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("sk-test"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.json();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["max_tokens"], 8192);
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"][0]["text"], "You are terse.");
    assert_eq!(
        body["messages"],
        json!([{"role":"user","content":[{"type":"text","text":"Say hello"}]}])
    );
    assert!(body.get("tools").is_none());
}

#[test]
fn multi_tool_turn_returns_both_calls_in_order() {
    let stream = message_start(120)
        + &text_block(0, &["Let me look at both files."])
        + &tool_block(1, "toolu_01A", "read", &["{\"path\": ", "\"src/main.rs\"}"])
        + &tool_block(
            2,
            "toolu_01B",
            "read",
            &["{\"path\": \"Cargo.toml\", \"limit\": 20}"],
        )
        + &message_end("tool_use", 88);
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("answer");
    assert_eq!(deltas, ["Let me look at both files."]);
    assert_eq!(response.stop, StopReason::ToolUse);
    let calls: Vec<_> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.args.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("toolu_01A", "read", json!({"path":"src/main.rs"})),
            ("toolu_01B", "read", json!({"path":"Cargo.toml","limit":20})),
        ]
    );
    assert_eq!(response.usage.output_tokens, 88);
}

#[test]
fn tool_arguments_spread_across_many_deltas() {
    let args = json!({"command": "grep -rn \"fn main\" src | head -n 5", "timeout": 30,
        "note": "ünïcödé ✓", "nested": {"list": [1, 2, {"k": null}]}})
    .to_string();
    // One delta per 3 bytes, cut at char boundaries, plus empty ones.
    let mut parts = Vec::new();
    let mut cur = String::new();
    for ch in args.chars() {
        cur.push(ch);
        if cur.len() >= 3 {
            parts.push(std::mem::take(&mut cur));
            parts.push(String::new());
        }
    }
    parts.push(cur);
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    assert!(refs.len() > 40);
    let stream = message_start(10)
        + &tool_block(0, "toolu_1", "bash", &refs)
        + &tool_block(1, "toolu_2", "list", &[])
        + &message_end("tool_use", 50);
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("answer");
    assert!(deltas.is_empty());
    assert_eq!(response.text, "");
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.tool_calls[0].args.to_string(), args);
    assert_eq!(response.tool_calls[1].args, json!({}));
}

#[test]
fn error_body_reaches_the_caller_as_one_line() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content: Input should be a valid list"}}"#;
    let server = TestServer::start(vec![Reply::json(400, body)]);
    let mut p = provider(&server);
    let (result, _) = ask(&mut p, &hello(), &CancelToken::never());
    let err = result.unwrap_err();
    assert_eq!(
        err,
        ProviderError::Http {
            status: 400,
            message: "messages.0.content: Input should be a valid list".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "provider returned HTTP 400: messages.0.content: Input should be a valid list"
    );
    assert_eq!(server.request_count(), 1, "400 is not retried");
}

#[test]
fn rate_limit_then_success_is_retried() {
    let limited = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = TestServer::start(vec![
        Reply::json(429, limited).header("retry-after", "0"),
        Reply::json(529, overloaded),
        Reply::sse(&plain_answer()),
    ]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    assert_eq!(result.expect("answer").text, "Hello, world!");
    assert_eq!(deltas.concat(), "Hello, world!");
    assert_eq!(server.request_count(), 3);
}

#[test]
fn server_errors_give_up_after_three_retries() {
    let body = r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#;
    let server = TestServer::start(vec![
        Reply::json(500, body),
        Reply::json(500, body),
        Reply::json(500, body),
        Reply::json(500, body),
        Reply::sse(&plain_answer()),
    ]);
    let mut p = provider(&server);
    let (result, _) = ask(&mut p, &hello(), &CancelToken::never());
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Http {
            status: 500,
            message: "Internal server error".into()
        }
    );
    assert_eq!(server.request_count(), 4, "one attempt and three retries");
}

#[test]
fn connection_refused_is_a_transport_error() {
    fast_retries();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut p = Anthropic::new(&Settings {
        base_url: Some(format!("http://127.0.0.1:{port}")),
        api_key: Some("k".into()),
        ..Settings::default()
    })
    .unwrap();
    let (result, _) = ask(&mut p, &hello(), &CancelToken::never());
    match result.unwrap_err() {
        ProviderError::Transport(m) => assert!(!m.is_empty()),
        other => panic!("expected a transport error, got {other:?}"),
    }
}

#[test]
fn mid_stream_error_event_is_a_model_error() {
    let stream = message_start(5)
        + &text_block(0, &["Partial"])
        + &ev(
            "error",
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
        );
    let server = TestServer::start(vec![Reply::sse(&stream), Reply::sse(&plain_answer())]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Model("overloaded_error: Overloaded".into())
    );
    assert_eq!(deltas, ["Partial"]);
    assert_eq!(server.request_count(), 1);
}

#[test]
fn stream_without_message_stop_ends_early() {
    // Clean end of the HTTP body, but no message_stop: text was shown, so
    // no retry either.
    let stream = message_start(5) + &text_block(0, &["Half an ans"]);
    let server = TestServer::start(vec![Reply::sse(&stream), Reply::sse(&plain_answer())]);
    let mut p = provider(&server);
    let (result, _) = ask(&mut p, &hello(), &CancelToken::never());
    match result.unwrap_err() {
        ProviderError::Transport(m) => assert!(m.contains("stream ended early"), "{m}"),
        other => panic!("expected a transport error, got {other:?}"),
    }
    assert_eq!(server.request_count(), 1);
}

#[test]
fn connection_cut_before_any_text_is_retried() {
    let server = TestServer::start(vec![
        Reply::sse_cut(&message_start(5)),
        Reply::sse(&plain_answer()),
    ]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    assert_eq!(result.expect("answer").text, "Hello, world!");
    assert_eq!(deltas.concat(), "Hello, world!");
    assert_eq!(server.request_count(), 2);
}

/// Cancels after `ms` on another thread; returns when that happened.
fn cancel_after(ms: u64) -> (CancelToken, std::sync::mpsc::Receiver<Instant>) {
    let (canceller, token) = cancel::pair();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ms));
        let _ = tx.send(Instant::now());
        canceller.cancel();
    });
    (token, rx)
}

#[test]
fn abort_while_the_server_stalls_mid_stream() {
    let stream = message_start(5) + &text_block(0, &["Thinking"])[..];
    let server = TestServer::start(vec![Reply::sse_stall(&stream)]);
    let mut p = provider(&server);
    let (token, fired) = cancel_after(300);
    let (result, deltas) = ask(&mut p, &hello(), &token);
    let returned = Instant::now();
    assert_eq!(result.unwrap_err(), ProviderError::Aborted);
    assert_eq!(deltas, ["Thinking"]);
    let cancelled_at = fired.recv().unwrap();
    assert!(returned.duration_since(cancelled_at) < Duration::from_secs(1));
}

#[test]
fn abort_while_the_server_never_answers() {
    let server = TestServer::start(vec![Reply::silent()]);
    let mut p = provider(&server);
    let (token, fired) = cancel_after(200);
    let (result, _) = ask(&mut p, &hello(), &token);
    let returned = Instant::now();
    assert_eq!(result.unwrap_err(), ProviderError::Aborted);
    assert!(returned.duration_since(fired.recv().unwrap()) < Duration::from_secs(1));
}

#[test]
fn request_body_converts_tools_results_and_hidden_context() {
    let answer = message_start(1) + &text_block(0, &["ok"]) + &message_end("end_turn", 1);
    let server = TestServer::start(vec![Reply::sse(&answer), Reply::sse(&answer)]);
    let mut p = provider(&server);
    let transcript = vec![
        Message {
            role: Role::User,
            content: vec![
                Block::Text {
                    text: "What is in this picture and in a.txt?".into(),
                },
                Block::Image {
                    mime_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                },
            ],
            from: None,
        },
        Message {
            role: Role::Assistant,
            content: vec![
                Block::Text {
                    text: "Reading it.".into(),
                },
                Block::ToolCall {
                    id: "toolu_9".into(),
                    name: "read".into(),
                    args: json!({"path":"a.txt"}),
                },
            ],
            from: None,
        },
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                call_id: "toolu_9".into(),
                is_error: false,
                content: vec![ContentBlock::text("alpha\nbeta")],
            }],
            from: None,
        },
    ];
    let tools = vec![ToolDef {
        name: "read".into(),
        description: "Read a file".into(),
        schema: json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
    }];
    let hidden = vec!["Branch: main".to_string(), "Today is Monday.".to_string()];
    let mut first = Request {
        step: 2,
        system: "You are terse.",
        messages: &transcript,
        tools: &tools,
        hidden_context: &hidden,
    };
    p.complete(&first, &mut |_| {}, &CancelToken::never())
        .expect("first");
    first.hidden_context = &[];
    p.complete(&first, &mut |_| {}, &CancelToken::never())
        .expect("second");

    let reqs = server.requests();
    let (a, b) = (reqs[0].json(), reqs[1].json());
    let texts = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|b| b["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        texts(&a["system"]),
        ["You are terse.", "Branch: main", "Today is Monday."]
    );
    assert_eq!(
        texts(&b["system"]),
        ["You are terse."],
        "context is for one request only"
    );
    assert_eq!(
        a["tools"],
        json!([{"name":"read","description":"Read a file",
            "input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}])
    );
    assert_eq!(
        a["messages"],
        json!([
            {"role":"user","content":[
                {"type":"text","text":"What is in this picture and in a.txt?"},
                {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}
            ]},
            {"role":"assistant","content":[
                {"type":"text","text":"Reading it."},
                {"type":"tool_use","id":"toolu_9","name":"read","input":{"path":"a.txt"}}
            ]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":"toolu_9","is_error":false,
                 "content":[{"type":"text","text":"alpha\nbeta"}]}
            ]}
        ])
    );
    assert_eq!(a["messages"], b["messages"]);
}

#[test]
fn key_comes_from_auth_json_when_not_given() {
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        return; // the environment wins over auth.json; nothing to check here
    }
    let home = tempfile::tempdir().unwrap();
    let settings = Settings {
        zut_home: home.path().to_path_buf(),
        ..Settings::default()
    };
    let err = match Anthropic::new(&settings) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("no key anywhere must be a config error"),
    };
    assert!(
        err.contains("--api-key") && err.contains("ANTHROPIC_API_KEY"),
        "{err}"
    );
    assert!(err.contains(&home.path().join("auth.json").display().to_string()));

    zut::config::save_api_key(home.path(), "anthropic", "sk-from-file").unwrap();
    let answer = message_start(1) + &text_block(0, &["ok"]) + &message_end("end_turn", 1);
    let server = TestServer::start(vec![Reply::sse(&answer)]);
    fast_retries();
    let mut p = Anthropic::new(&Settings {
        base_url: Some(server.url().to_string()),
        ..settings
    })
    .unwrap();
    ask(&mut p, &hello(), &CancelToken::never()).0.unwrap();
    assert_eq!(
        server.requests()[0].header("x-api-key"),
        Some("sk-from-file")
    );
}

#[test]
fn abort_interrupts_the_backoff_sleep() {
    let limited = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    let server = TestServer::start(vec![
        Reply::json(429, limited).header("retry-after", "20"),
        Reply::sse(&plain_answer()),
    ]);
    let mut p = provider(&server);
    let (token, fired) = cancel_after(200);
    let (result, _) = ask(&mut p, &hello(), &token);
    let returned = Instant::now();
    assert_eq!(result.unwrap_err(), ProviderError::Aborted);
    assert!(returned.duration_since(fired.recv().unwrap()) < Duration::from_secs(1));
    assert_eq!(server.request_count(), 1, "no retry after the abort");
}

#[test]
fn refusal_is_the_answer_with_a_refusal_stop() {
    let stream = message_start(9)
        + &text_block(0, &["I can't help ", "with that."])
        + &message_end("refusal", 6);
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("a refusal is an answer, not an error");
    assert_eq!(deltas, ["I can't help ", "with that."]);
    assert_eq!(response.text, "I can't help with that.");
    assert_eq!(response.stop, StopReason::Refusal);
    assert!(response.tool_calls.is_empty());
}

#[test]
fn max_tokens_inside_a_tool_call_keeps_the_text_and_drops_the_call() {
    let stream = message_start(30)
        + &text_block(0, &["Writing ", "the file now."])
        + &tool_block(
            1,
            "toolu_cut",
            "write",
            &["{\"path\": \"notes.txt\", ", "\"content\": \"first li"],
        )
        + &message_end("max_tokens", 8192);
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("a cut answer is not an error");
    assert_eq!(deltas, ["Writing ", "the file now."]);
    assert_eq!(response.text, "Writing the file now.");
    assert_eq!(response.stop, StopReason::Length);
    assert!(response.tool_calls.is_empty(), "{:?}", response.tool_calls);
}

#[test]
fn invalid_tool_arguments_without_a_cut_become_a_call_that_is_not_run() {
    let stream = message_start(30)
        + &tool_block(0, "toolu_bad", "write", &["{\"path\": "])
        + &message_end("tool_use", 20);
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, _) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("not a failed prompt");
    assert_eq!(response.stop, StopReason::ToolUse);
    let call = &response.tool_calls[0];
    assert_eq!(call.id, "toolu_bad");
    assert_eq!(call.args, json!({}));
    let why = call.invalid_args.as_deref().expect("marked invalid");
    assert!(why.contains("not valid JSON"), "{why}");
}
