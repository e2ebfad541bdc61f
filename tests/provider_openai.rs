//! The OpenAI-compatible provider against a real local HTTP server
//! replaying Chat Completions event streams (OpenAI's and looser ones).

#[path = "common/ask.rs"]
mod common_ask;
#[path = "common/http_server.rs"]
mod http_server;

use http_server::{fast_retries, Reply, TestServer};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use zut::cancel::{self, CancelToken};
use zut::provider::openai::OpenAi;
use zut::provider::{
    Block, ContentBlock, Message, Provider, ProviderError, Request, Response, Role, Settings,
    StopReason, ToolDef, Usage,
};

fn provider_with_key(server: &TestServer, key: Option<&str>) -> OpenAi {
    fast_retries();
    OpenAi::new(&Settings {
        provider: "openai".into(),
        base_url: Some(format!("{}/v1", server.url())),
        api_key: key.map(str::to_string),
        ..Settings::default()
    })
    .expect("provider")
}

fn provider(server: &TestServer) -> OpenAi {
    provider_with_key(server, Some("sk-test"))
}

fn ask(
    p: &mut OpenAi,
    messages: &[Message],
    cancel: &CancelToken,
) -> (Result<Response, ProviderError>, Vec<String>) {
    common_ask::ask(p, "You are terse.", messages, cancel)
}

fn hello() -> Vec<Message> {
    vec![Message::user_text("Say hello")]
}

/// One `data:` line with a chunk in OpenAI's envelope.
fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({"id":"chatcmpl-abc","object":"chat.completion.chunk","created":1700000000,
        "model":"gpt-4.1-mini","system_fingerprint":"fp_1",
        "choices":[{"index":0,"delta":delta,"logprobs":null,"finish_reason":finish}]});
    format!("data: {c}\n\n")
}

fn usage(prompt: u64, completion: u64) -> String {
    let c = json!({"id":"chatcmpl-abc","object":"chat.completion.chunk","created":1700000000,
        "model":"gpt-4.1-mini","choices":[],
        "usage":{"prompt_tokens":prompt,"completion_tokens":completion,"total_tokens":prompt+completion}});
    format!("data: {c}\n\n")
}

const DONE: &str = "data: [DONE]\n\n";

fn text_stream(parts: &[&str]) -> String {
    let mut s = chunk(
        json!({"role":"assistant","content":"","refusal":null}),
        None,
    );
    for p in parts {
        s += &chunk(json!({"content":p}), None);
    }
    s + &chunk(json!({}), Some("stop")) + &usage(12, 3) + DONE
}

fn call_start(index: u64, id: &str, name: &str) -> String {
    chunk(
        json!({"tool_calls":[{"index":index,"id":id,"type":"function",
            "function":{"name":name,"arguments":""}}]}),
        None,
    )
}

fn call_args(index: u64, part: &str) -> String {
    chunk(
        json!({"tool_calls":[{"index":index,"function":{"arguments":part}}]}),
        None,
    )
}

#[test]
fn plain_text_answer_streams_deltas() {
    let server = TestServer::start(vec![Reply::sse(&text_stream(&["Hel", "lo", "!"]))]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    assert_eq!(deltas, ["Hel", "lo", "!"]);
    assert_eq!(
        result.expect("answer"),
        Response {
            thinking: vec![],
            text: "Hello!".into(),
            tool_calls: vec![],
            stop: StopReason::EndTurn,
            usage: Usage {
                input_tokens: 12,
                output_tokens: 3,
                ..Usage::default()
            },
        }
    );
    let r = &server.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.json(),
        json!({
            "model": "gpt-4.1-mini",
            "messages": [
                {"role":"system","content":"You are terse."},
                {"role":"user","content":"Say hello"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
}

#[test]
fn multi_tool_turn_merges_fragments_by_index() {
    let stream = chunk(json!({"role":"assistant","content":null}), None)
        + &call_start(0, "call_AAA", "read")
        + &call_args(0, "{\"pa")
        + &call_start(1, "call_BBB", "grep")
        + &call_args(1, "{\"pattern\":\"TODO\",")
        + &call_args(0, "th\":\"a.rs\"}")
        + &call_args(1, "\"path\":\"src\"}")
        + &chunk(json!({}), Some("tool_calls"))
        + &usage(40, 22)
        + DONE;
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("answer");
    assert!(deltas.is_empty());
    assert_eq!(response.stop, StopReason::ToolUse);
    let calls: Vec<_> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.args.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_AAA", "read", json!({"path":"a.rs"})),
            ("call_BBB", "grep", json!({"pattern":"TODO","path":"src"})),
        ]
    );
    assert_eq!(response.usage.output_tokens, 22);
}

#[test]
fn tool_arguments_spread_across_many_chunks() {
    let args =
        json!({"path":"notes/ünïcode ✓.md","content":"line 1\nline \"2\"\n\ttab","n":[1,2.5,null]})
            .to_string();
    let mut stream = chunk(json!({"content":"Writing."}), None) + &call_start(0, "call_W", "write");
    let chars: Vec<char> = args.chars().collect();
    for piece in chars.chunks(2) {
        stream += &call_args(0, &piece.iter().collect::<String>());
    }
    stream += &chunk(json!({}), Some("tool_calls"));
    stream += DONE;
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("answer");
    assert_eq!(deltas, ["Writing."]);
    assert_eq!(response.text, "Writing.");
    assert_eq!(response.tool_calls[0].args.to_string(), args);
    assert_eq!(response.usage, Usage::default(), "no usage chunk was sent");
}

#[test]
fn tolerates_servers_without_ids_indexes_or_done() {
    // Ollama / llama.cpp style: no key, ids and indexes omitted, arguments
    // in one piece (once as a string, once as an object), `stop` although
    // tools were called, and the stream just ends without [DONE].
    let transcript = vec![
        Message::user_text("first"),
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                args: json!({}),
            }],
            from: None,
        },
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                call_id: "call_1".into(),
                is_error: false,
                content: vec![ContentBlock::text("x")],
            }],
            from: None,
        },
    ];
    let stream = format!(
        "data: {}\n\ndata: {}\n\ndata: {}\n\n",
        json!({"choices":[{"delta":{"role":"assistant","tool_calls":[
            {"function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}}]}),
        json!({"choices":[{"delta":{"tool_calls":[
            {"id":"","function":{"name":"bash","arguments":{"command":"ls","timeout":5}}}]}}]}),
        json!({"choices":[{"delta":{},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":7,"completion_tokens":9}}),
    );
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider_with_key(&server, None);
    let (result, _) = ask(&mut p, &transcript, &CancelToken::never());
    let response = result.expect("answer");
    assert_eq!(response.stop, StopReason::ToolUse);
    let calls: Vec<_> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.args.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_2", "read", json!({"path":"a"})),
            ("call_3", "bash", json!({"command":"ls","timeout":5})),
        ],
        "generated ids continue after the transcript's call_1"
    );
    assert_eq!(response.usage.input_tokens, 7);
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[test]
fn error_body_reaches_the_caller_as_one_line() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let server = TestServer::start(vec![Reply::json(401, body)]);
    let mut p = provider(&server);
    let (result, _) = ask(&mut p, &hello(), &CancelToken::never());
    let err = result.unwrap_err();
    assert_eq!(
        err.to_string(),
        "provider returned HTTP 401: Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys. (invalid_api_key)"
    );
    assert_eq!(server.request_count(), 1);
}

#[test]
fn non_json_error_body_is_cut_to_200_characters() {
    let page = format!("<html>\n<body>{}</body>\n</html>", "x".repeat(1000));
    let server = TestServer::start(vec![Reply::json(404, &page)]);
    let mut p = provider(&server);
    match ask(&mut p, &hello(), &CancelToken::never()).0.unwrap_err() {
        ProviderError::Http { status, message } => {
            assert_eq!(status, 404);
            assert!(message.starts_with("<html> <body>xxx"), "{message}");
            assert_eq!(
                message.chars().count(),
                201,
                "200 characters and an ellipsis"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn rate_limit_then_success_is_retried() {
    let limited = r#"{"error":{"message":"Rate limit reached for gpt-4.1-mini","type":"requests","code":"rate_limit_exceeded"}}"#;
    let server = TestServer::start(vec![
        Reply::json(429, limited),
        Reply::sse(&text_stream(&["ok"])),
    ]);
    let mut p = provider(&server);
    let (result, _) = ask(&mut p, &hello(), &CancelToken::never());
    assert_eq!(result.expect("answer").text, "ok");
    assert_eq!(server.request_count(), 2);
}

#[test]
fn server_errors_give_up_after_three_retries() {
    let body = r#"{"error":{"message":"The server is overloaded","type":"server_error"}}"#;
    let server = TestServer::start(vec![
        Reply::json(503, body),
        Reply::json(502, body),
        Reply::json(500, body),
        Reply::json(503, body),
        Reply::sse(&text_stream(&["never"])),
    ]);
    let mut p = provider(&server);
    let (result, _) = ask(&mut p, &hello(), &CancelToken::never());
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Http {
            status: 503,
            message: "The server is overloaded".into()
        }
    );
    assert_eq!(server.request_count(), 4);
}

#[test]
fn error_object_mid_stream_is_a_model_error() {
    let stream = chunk(json!({"content":"Sure, "}), None)
        + &format!(
            "data: {}\n\n",
            json!({"error":{"message":"Provider returned error","code":502}})
        );
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Model("Provider returned error".into())
    );
    assert_eq!(deltas, ["Sure, "]);
    assert_eq!(server.request_count(), 1);
}

#[test]
fn stream_without_finish_or_done_ends_early() {
    let stream = chunk(json!({"content":"Half"}), None);
    let server = TestServer::start(vec![Reply::sse_cut(&stream)]);
    let mut p = provider(&server);
    match ask(&mut p, &hello(), &CancelToken::never()).0.unwrap_err() {
        ProviderError::Transport(m) => assert!(m.contains("ended early"), "{m}"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(server.request_count(), 1, "text was shown: no retry");
}

#[test]
fn abort_while_the_server_stalls() {
    let server = TestServer::start(vec![Reply::sse_stall(&chunk(
        json!({"content":"Let me think"}),
        None,
    ))]);
    let mut p = provider(&server);
    let (canceller, token) = cancel::pair();
    let started = Instant::now();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        canceller.cancel();
    });
    let (result, deltas) = ask(&mut p, &hello(), &token);
    assert_eq!(result.unwrap_err(), ProviderError::Aborted);
    assert_eq!(deltas, ["Let me think"]);
    assert!(started.elapsed() < Duration::from_millis(1300));
}

#[test]
fn request_body_converts_tools_results_images_and_hidden_context() {
    let server = TestServer::start(vec![
        Reply::sse(&text_stream(&["a"])),
        Reply::sse(&text_stream(&["b"])),
    ]);
    let mut p = provider(&server);
    let transcript = vec![
        Message {
            role: Role::User,
            content: vec![
                Block::Text {
                    text: "Compare with this".into(),
                },
                Block::Image {
                    mime_type: "image/jpeg".into(),
                    data: "/9j/4AAQ".into(),
                },
            ],
            from: None,
        },
        Message {
            role: Role::Assistant,
            content: vec![
                Block::Text {
                    text: "Running both.".into(),
                },
                Block::ToolCall {
                    id: "call_a".into(),
                    name: "bash".into(),
                    args: json!({"command":"false","timeout":5}),
                },
                Block::ToolCall {
                    id: "call_b".into(),
                    name: "read".into(),
                    args: json!({"path":"x.png"}),
                },
            ],
            from: None,
        },
        Message {
            role: Role::User,
            content: vec![
                Block::ToolResult {
                    call_id: "call_a".into(),
                    is_error: true,
                    content: vec![ContentBlock::text("exit status 1")],
                },
                Block::ToolResult {
                    call_id: "call_b".into(),
                    is_error: false,
                    content: vec![
                        ContentBlock::text("x.png (2 KB)"),
                        ContentBlock::Image {
                            mime_type: "image/png".into(),
                            data: "iVBO".into(),
                        },
                    ],
                },
            ],
            from: None,
        },
    ];
    let tools = vec![ToolDef {
        name: "bash".into(),
        description: "Run a command".into(),
        schema: json!({"type":"object","properties":{"command":{"type":"string"}}}),
    }];
    let hidden = vec!["Extension says: be careful.".to_string()];
    let mut req = Request {
        step: 3,
        system: "",
        messages: &transcript,
        tools: &tools,
        hidden_context: &hidden,
    };
    p.complete(&req, &mut |_| {}, &CancelToken::never())
        .expect("first");
    req.hidden_context = &[];
    p.complete(&req, &mut |_| {}, &CancelToken::never())
        .expect("second");

    let reqs = server.requests();
    let (a, b) = (reqs[0].json(), reqs[1].json());
    assert_eq!(
        a["tools"],
        json!([{"type":"function","function":{"name":"bash","description":"Run a command",
            "parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}])
    );
    let conversation = json!([
        {"role":"user","content":[
            {"type":"text","text":"Compare with this"},
            {"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}}]},
        {"role":"assistant","content":"Running both.","tool_calls":[
            {"id":"call_a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"false\",\"timeout\":5}"}},
            {"id":"call_b","type":"function","function":{"name":"read","arguments":"{\"path\":\"x.png\"}"}}]},
        {"role":"tool","tool_call_id":"call_a","content":"Error: exit status 1"},
        {"role":"tool","tool_call_id":"call_b","content":"x.png (2 KB)"},
        {"role":"user","content":[
            {"type":"text","text":"Image output of tool call call_b:"},
            {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]}
    ]);
    let mut with_context = vec![json!({"role":"system","content":"Extension says: be careful."})];
    with_context.extend(conversation.as_array().unwrap().iter().cloned());
    assert_eq!(a["messages"], Value::Array(with_context));
    assert_eq!(
        b["messages"], conversation,
        "no system prompt and no context: no system message"
    );
}

#[test]
fn json_instead_of_a_stream_is_reported() {
    let server = TestServer::start(vec![
        Reply::json(200, r#"{"error":{"message":"model 'llama9' not found"}}"#),
        Reply::json(
            200,
            r#"{"id":"x","choices":[{"message":{"content":"hi"}}]}"#,
        ),
    ]);
    let mut p = provider(&server);
    assert_eq!(
        ask(&mut p, &hello(), &CancelToken::never()).0.unwrap_err(),
        ProviderError::Model("model 'llama9' not found".into())
    );
    match ask(&mut p, &hello(), &CancelToken::never()).0.unwrap_err() {
        ProviderError::Protocol(m) => assert!(m.contains("expected an event stream"), "{m}"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(server.request_count(), 2, "neither is retried");
}

#[test]
fn refusal_delta_is_the_answer_with_a_refusal_stop() {
    let stream = chunk(
        json!({"role":"assistant","content":null,"refusal":""}),
        None,
    ) + &chunk(json!({"refusal":"I'm sorry, "}), None)
        + &chunk(json!({"refusal":"I can't help with that."}), None)
        + &chunk(json!({}), Some("stop"))
        + DONE;
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("a refusal is an answer, not an error");
    assert_eq!(deltas, ["I'm sorry, ", "I can't help with that."]);
    assert_eq!(response.text, "I'm sorry, I can't help with that.");
    assert_eq!(response.stop, StopReason::Refusal);
}

#[test]
fn only_choice_zero_is_used() {
    let two = |a: &str, b: &str, finish: Option<&str>| {
        let c = json!({"id":"x","object":"chat.completion.chunk","choices":[
            {"index":1,"delta":{"content":b},"finish_reason":finish},
            {"index":0,"delta":{"content":a},"finish_reason":finish}]});
        format!("data: {c}\n\n")
    };
    let only_one = {
        let c = json!({"id":"x","object":"chat.completion.chunk","choices":[
            {"index":1,"delta":{"content":"SECOND","tool_calls":[{"index":0,"id":"c9",
                "type":"function","function":{"name":"bash","arguments":"{}"}}]},
             "finish_reason":"tool_calls"}]});
        format!("data: {c}\n\n")
    };
    let stream = two("Hel", "Other", None) + &only_one + &two("lo", " text", Some("stop")) + DONE;
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, deltas) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("answer");
    assert_eq!(deltas, ["Hel", "lo"]);
    assert_eq!(response.text, "Hello");
    assert!(response.tool_calls.is_empty());
    assert_eq!(response.stop, StopReason::EndTurn);
}

#[test]
fn length_inside_a_tool_call_keeps_the_text_and_drops_the_call() {
    let stream = chunk(json!({"role":"assistant","content":"Writing it."}), None)
        + &call_start(0, "call_cut", "write")
        + &call_args(0, "{\"path\":\"a.txt\",\"content\":\"hal")
        + &chunk(json!({}), Some("length"))
        + DONE;
    let server = TestServer::start(vec![Reply::sse(&stream)]);
    let mut p = provider(&server);
    let (result, _) = ask(&mut p, &hello(), &CancelToken::never());
    let response = result.expect("a cut answer is not an error");
    assert_eq!(response.text, "Writing it.");
    assert_eq!(response.stop, StopReason::Length);
    assert!(response.tool_calls.is_empty());
}
