//! Key order is the author's and the model's, end to end: a tool schema an
//! extension registers reaches the provider's request body with its keys
//! in the order the extension wrote them, and the arguments a model streams
//! reach the extension in the order the model wrote them. Through the real
//! `zut` binary, a real extension process and the local HTTP test server.

#[path = "common/http_server.rs"]
mod http_server;

use http_server::{Reply, TestServer};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};

/// An extension that registers `order_probe` with a schema whose keys are
/// deliberately not sorted, and writes each `tool_call` line it receives,
/// byte for byte, to `seen.jsonl`.
const PROBE: &str = r#"
import json, sys
out = sys.stdout
def emit(o):
    out.write(json.dumps(o) + "\n"); out.flush()
emit({"type": "hello", "protocol_version": 2, "name": "order-probe", "version": "1.0.0",
      "capabilities": ["tools"]})
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello_ack":
        emit({"type": "register_tool", "name": "order_probe", "description": "records its arguments",
              "schema": {"type": "object",
                         "properties": {"zeta": {"type": "integer", "description": "last letter"},
                                        "alpha": {"type": "object"}},
                         "required": ["zeta", "alpha"]}})
        emit({"type": "ready"})
    elif msg["type"] == "tool_call":
        with open("seen.jsonl", "a") as f:
            f.write(line)
        emit({"type": "tool_result", "id": msg["id"], "content": [{"type": "text", "text": "ok"}]})
    elif msg["type"] == "shutdown":
        emit({"type": "shutdown_ack"}); break
"#;

fn probe_extension(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("probe.py"), PROBE).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        json!({"name": "order-probe", "version": "1.0.0", "exec": "python3",
               "args": ["probe.py"], "description": "key order probe"})
        .to_string(),
    )
    .unwrap();
}

/// One OpenAI chunk.
fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    let c = json!({"id":"c","object":"chat.completion.chunk",
        "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
    format!("data: {c}\n\n")
}

/// Position of `needle` in `hay`, failing loudly.
fn at(hay: &str, needle: &str) -> usize {
    hay.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {hay}"))
}

#[test]
fn schema_and_arguments_keep_their_key_order() {
    http_server::fast_retries();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let ext = root.join("probe");
    probe_extension(&ext);
    let (home, proj) = (root.join("home"), root.join("proj"));
    std::fs::create_dir_all(&proj).unwrap();

    // The model streams the arguments with keys in reverse alphabetical
    // order, nested too, split across chunks.
    let call = chunk(
        json!({"tool_calls":[{"index":0,"id":"call_1","type":"function",
            "function":{"name":"order_probe","arguments":"{\"zeta\": 1, \"alpha\""}}]}),
        None,
    ) + &chunk(
        json!({"tool_calls":[{"index":0,"function":{"arguments":": {\"y\": 2, \"b\": 3}}"}}]}),
        Some("tool_calls"),
    ) + "data: [DONE]\n\n";
    let answer = chunk(json!({"content":"done"}), Some("stop")) + "data: [DONE]\n\n";
    let server = TestServer::start(vec![Reply::sse(&call), Reply::sse(&answer)]);

    let out = Command::new(env!("CARGO_BIN_EXE_zut"))
        .current_dir(&proj)
        .env("ZUT_HOME", &home)
        .env("ZUT_RETRY_BASE_MS", "1")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .args(["-p", "--yolo", "--provider", "openai", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("--ext")
        .arg(&ext)
        .arg("probe the order")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "zut failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done");

    // 1. The schema as the author wrote it, in the first request's body.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let body = String::from_utf8(requests[0].body.clone()).unwrap();
    let schema = r#"{"type":"object","properties":{"zeta":{"type":"integer","description":"last letter"},"alpha":{"type":"object"}},"required":["zeta","alpha"]}"#;
    assert!(body.contains(schema), "schema reordered in:\n{body}");

    // 2. The arguments as the model wrote them, in the tool_call frame.
    let seen = std::fs::read_to_string(ext.join("seen.jsonl")).unwrap();
    let frame = seen.lines().next().expect("one tool_call frame");
    assert!(at(frame, "\"zeta\"") < at(frame, "\"alpha\""), "{frame}");
    assert!(at(frame, "\"y\"") < at(frame, "\"b\""), "{frame}");

    // 3. And the same order goes back to the model in the transcript.
    let second = String::from_utf8(requests[1].body.clone()).unwrap();
    assert!(
        second.contains(r#"{\"zeta\":1,\"alpha\":{\"y\":2,\"b\":3}}"#),
        "{second}"
    );
}
