//! Providers for daily use, through the real binary against local servers
//! that speak each API's streaming format: proxies from the environment,
//! retries with `Retry-After` and their events, prompt caching and
//! thinking on the wire, usage and cost events, the script provider's
//! thinking/usage/chunks lines, refusals in print mode.

#[path = "common/http_server.rs"]
mod http_server;

use http_server::{Reply, TestProxy, TestServer};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A project and a `$ZUT_HOME` in a fresh temp dir.
struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (home, proj) = (root.join("home"), root.join("proj"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&proj).unwrap();
    Env {
        _tmp: tmp,
        home,
        proj,
    }
}

const PROXY_VARS: [&str; 8] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// `zut ARGS` in `e`, no proxy variables unless `vars` sets them.
fn zut(e: &Env, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zut"));
    cmd.current_dir(&e.proj)
        .env("ZUT_HOME", &e.home)
        .env("ZUT_RETRY_BASE_MS", "1")
        .env_remove("ZUT_PROVIDER_IDLE_TIMEOUT_MS")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .args(["--no-session", "--no-extensions"])
        .args(args);
    for v in PROXY_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON events of a `--mode json` run.
fn events(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

/// One OpenAI chat-completions chunk.
fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({"id":"c","object":"chat.completion.chunk","choices":[
        {"index":0,"delta":delta,"finish_reason":finish}]});
    format!("data: {c}\n\n")
}

fn openai_answer(text: &str) -> String {
    chunk(json!({"content": text}), Some("stop")) + "data: [DONE]\n\n"
}

/// One Anthropic SSE event.
fn ev(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap()
    )
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn http_proxy_from_the_environment_carries_the_request_and_no_proxy_bypasses_it() {
    let e = env();
    let server = TestServer::start(vec![
        Reply::sse(&openai_answer("via proxy")),
        Reply::sse(&openai_answer("direct")),
        Reply::sse(&openai_answer("upper")),
    ]);
    let proxy = TestProxy::start();
    let base = format!("{}/v1", server.url());
    let args = [
        "-p",
        "--provider",
        "openai",
        "--base-url",
        base.as_str(),
        "hi",
    ];

    let out = zut(&e, &args, &[("http_proxy", proxy.url())]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "via proxy");
    let seen = proxy.seen();
    let authority = server.url().trim_start_matches("http://");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].0, authority);
    assert_eq!(seen[0].1, "POST /v1/chat/completions HTTP/1.1");

    // NO_PROXY with a list (spaces, the port form) goes direct.
    let no = format!("example.com, {authority}");
    let out = zut(
        &e,
        &args,
        &[("HTTP_PROXY", proxy.url()), ("NO_PROXY", no.as_str())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "direct");
    assert_eq!(proxy.seen().len(), 1, "bypassed: nothing new at the proxy");

    // Upper case alone works too; an https proxy variable does not apply
    // to an http URL.
    let out = zut(
        &e,
        &args,
        &[
            ("HTTP_PROXY", proxy.url()),
            ("HTTPS_PROXY", "http://127.0.0.1:9"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "upper");
    assert_eq!(proxy.seen().len(), 2);
    assert_eq!(server.request_count(), 3);
}

#[test]
fn a_bad_proxy_variable_is_a_clear_error() {
    let e = env();
    let out = zut(
        &e,
        &[
            "-p",
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "hi",
        ],
        &[("ALL_PROXY", "gopher://nope")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("gopher://nope"), "{}", stderr(&out));
}

#[test]
fn retries_honour_retry_after_and_are_announced() {
    let e = env();
    let server = TestServer::start(vec![
        Reply::json(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "1"),
        Reply::json(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#,
        ),
        Reply::json(408, r#"{"error":{"message":"timeout"}}"#),
        Reply::sse(&openai_answer("finally")),
    ]);
    let base = format!("{}/v1", server.url());
    let out = zut(
        &e,
        &[
            "--mode",
            "json",
            "--provider",
            "openai",
            "--base-url",
            &base,
            "hi",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let retries = of_type(&evs, "retry");
    assert_eq!(retries.len(), 3, "{evs:?}");
    let attempts: Vec<u64> = retries
        .iter()
        .map(|r| r["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [2, 3, 4]);
    assert!(retries[0]["wait_ms"].as_u64().unwrap() >= 1000);
    assert!(retries[0]["reason"].as_str().unwrap().contains("429"));
    assert!(retries[1]["reason"].as_str().unwrap().contains("busy"));
    let answer = of_type(&evs, "assistant_message");
    assert_eq!(answer[0]["text"], "finally");
    assert_eq!(server.request_count(), 4);

    // A fifth failure is never tried: four tries in all.
    let server = TestServer::start(vec![Reply::json(503, "{}"); 5]);
    let base = format!("{}/v1", server.url());
    let out = zut(
        &e,
        &["-p", "--provider", "openai", "--base-url", &base, "hi"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(server.request_count(), 4);
    let err = stderr(&out);
    assert!(err.contains("attempt 2 of 4"), "{err}");
    assert!(err.contains("HTTP 503"), "{err}");
}

fn anthropic_thinking_answer() -> String {
    ev(
        json!({"type":"message_start","message":{"id":"m","type":"message","role":"assistant",
        "content":[],"usage":{"input_tokens":40,"cache_read_input_tokens":1000,
        "cache_creation_input_tokens":200,"output_tokens":1}}}),
    ) + &ev(json!({"type":"content_block_start","index":0,
            "content_block":{"type":"thinking","thinking":"","signature":""}}))
        + &ev(json!({"type":"content_block_delta","index":0,
            "delta":{"type":"thinking_delta","thinking":"Let me "}}))
        + &ev(json!({"type":"content_block_delta","index":0,
            "delta":{"type":"thinking_delta","thinking":"think."}}))
        + &ev(json!({"type":"content_block_delta","index":0,
            "delta":{"type":"signature_delta","signature":"c2lnbmVk"}}))
        + &ev(json!({"type":"content_block_stop","index":0}))
        + &ev(json!({"type":"content_block_start","index":1,
            "content_block":{"type":"redacted_thinking","data":"RU5DUllQVEVE"}}))
        + &ev(json!({"type":"content_block_stop","index":1}))
        + "event: ping\ndata: {\"type\": \"ping\"}\n\n"
        + &ev(json!({"type":"content_block_start","index":2,
            "content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}))
        + &ev(json!({"type":"content_block_delta","index":2,
            "delta":{"type":"input_json_delta","partial_json":"{\"path\":\"a.txt\"}"}}))
        + &ev(json!({"type":"content_block_stop","index":2}))
        + &ev(
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},
            "usage":{"output_tokens":30}}),
        )
        + &ev(json!({"type":"message_stop"}))
}

fn anthropic_text(text: &str) -> String {
    ev(
        json!({"type":"message_start","message":{"id":"m2","type":"message","role":"assistant",
        "content":[],"usage":{"input_tokens":5,"cache_read_input_tokens":1200,"output_tokens":1}}}),
    ) + &ev(
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    ) + &ev(
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}}),
    ) + &ev(json!({"type":"content_block_stop","index":0}))
        + &ev(
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}),
        )
        + &ev(json!({"type":"message_stop"}))
}

#[test]
fn anthropic_caches_thinks_keeps_signed_blocks_and_prices_usage() {
    let e = env();
    write(&e.proj.join("a.txt"), "alpha\n");
    // Prices of a model of our own, so the arithmetic is checked exactly.
    write(
        &e.home.join("config.json"),
        r#"{"models":{"test-model":{"context":10000,"input_per_mtok":2,"output_per_mtok":10,
            "cache_read_per_mtok":0.5,"cache_write_per_mtok":4}}}"#,
    );
    let server = TestServer::start(vec![
        Reply::sse(&anthropic_thinking_answer()),
        Reply::sse(&anthropic_text("It says alpha.")),
    ]);
    let out = zut(
        &e,
        &[
            "--mode",
            "json",
            "--yolo",
            "--provider",
            "anthropic",
            "--api-key",
            "k",
            "--model",
            "test-model",
            "--thinking",
            "medium",
            "--base-url",
            server.url(),
            "read a.txt",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);

    // Thinking streamed as its own events, never in the answer.
    let thinking: Vec<&str> = of_type(&evs, "thinking_delta")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(thinking, ["Let me ", "think."]);
    for m in of_type(&evs, "assistant_message") {
        assert!(!m["text"].as_str().unwrap().contains("think"), "{m}");
    }

    // Usage per request, priced with the configured prices.
    let usage = of_type(&evs, "usage");
    assert_eq!(usage.len(), 2, "{evs:?}");
    assert_eq!(usage[0]["input_tokens"], 40);
    assert_eq!(usage[0]["output_tokens"], 30);
    assert_eq!(usage[0]["cache_read_tokens"], 1000);
    assert_eq!(usage[0]["cache_write_tokens"], 200);
    let cost = usage[0]["cost_usd"].as_f64().unwrap();
    let want = (40.0 * 2.0 + 30.0 * 10.0 + 1000.0 * 0.5 + 200.0 * 4.0) / 1e6;
    assert!((cost - want).abs() < 1e-12, "{cost} vs {want}");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let first = reqs[0].json();
    assert_eq!(
        first["thinking"],
        json!({"type":"enabled","budget_tokens":8192})
    );
    assert!(first["max_tokens"].as_u64().unwrap() > 8192);
    let eph = json!({"type":"ephemeral"});
    let system = first["system"].as_array().unwrap();
    assert_eq!(system.last().unwrap()["cache_control"], eph);
    let tools = first["tools"].as_array().unwrap();
    assert_eq!(tools.last().unwrap()["cache_control"], eph);
    assert!(tools[0].get("cache_control").is_none() || tools.len() == 1);
    let count = first.to_string().matches("cache_control").count();
    // System, last tool, newest message: no per-request context here.
    assert_eq!(count, 3, "{count} breakpoints");

    // The second request sends the signed blocks back unchanged, first.
    let second = reqs[1].json();
    let messages = second["messages"].as_array().unwrap();
    let assistant = &messages[1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"][0],
        json!({"type":"thinking","thinking":"Let me think.","signature":"c2lnbmVk"})
    );
    assert_eq!(
        assistant["content"][1],
        json!({"type":"redacted_thinking","data":"RU5DUllQVEVE"})
    );
    assert_eq!(assistant["content"][2]["type"], "tool_use");
    // The breakpoint moved to the newest message (the tool result).
    let newest = messages.last().unwrap()["content"].as_array().unwrap();
    assert_eq!(newest.last().unwrap()["cache_control"], eph);
    assert!(assistant["content"][2].get("cache_control").is_none());
}

#[test]
fn no_cache_flag_and_config_send_no_breakpoints() {
    let e = env();
    let server = TestServer::start(vec![
        Reply::sse(&anthropic_text("a")),
        Reply::sse(&anthropic_text("b")),
    ]);
    let base = [
        "-p",
        "--provider",
        "anthropic",
        "--api-key",
        "k",
        "--base-url",
    ];
    let mut args = base.to_vec();
    args.extend([server.url(), "--no-cache", "hi"]);
    let out = zut(&e, &args, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    write(&e.home.join("config.json"), r#"{"cache": false}"#);
    let mut args = base.to_vec();
    args.extend([server.url(), "hi"]);
    let out = zut(&e, &args, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    for r in server.requests() {
        let body = String::from_utf8(r.body.clone()).unwrap();
        assert!(!body.contains("cache_control"), "{body}");
        assert!(!body.contains("\"thinking\""), "{body}");
    }
}

#[test]
fn openai_reasoning_is_thinking_effort_is_sent_and_cached_tokens_split() {
    let e = env();
    let answer = chunk(
        json!({"role":"assistant","reasoning_content":"step one; "}),
        None,
    ) + &chunk(json!({"reasoning":"step two"}), None)
        + &chunk(json!({"content":"Answer."}), Some("stop"))
        + &format!(
            "data: {}\n\n",
            json!({"id":"c","object":"chat.completion.chunk","choices":[],
                "usage":{"prompt_tokens":1000,"completion_tokens":20,
                         "prompt_tokens_details":{"cached_tokens":800}}})
        )
        + "data: [DONE]\n\n";
    let server = TestServer::start(vec![Reply::sse(&answer)]);
    let base = format!("{}/v1", server.url());
    let out = zut(
        &e,
        &[
            "--mode",
            "json",
            "--provider",
            "openai",
            "--model",
            "gpt-4.1",
            "--thinking",
            "high",
            "--base-url",
            &base,
            "hi",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let thinking: Vec<&str> = of_type(&evs, "thinking_delta")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(thinking, ["step one; ", "step two"]);
    assert_eq!(of_type(&evs, "assistant_message")[0]["text"], "Answer.");
    let usage = of_type(&evs, "usage")[0];
    assert_eq!(usage["input_tokens"], 200);
    assert_eq!(usage["cache_read_tokens"], 800);
    assert_eq!(usage["output_tokens"], 20);
    // gpt-4.1 is in the built-in table: 2 / 0.5 / 8 dollars per million.
    let want = (200.0 * 2.0 + 800.0 * 0.5 + 20.0 * 8.0) / 1e6;
    assert!((usage["cost_usd"].as_f64().unwrap() - want).abs() < 1e-12);
    let body = server.requests()[0].json();
    assert_eq!(body["reasoning_effort"], "high");
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[test]
fn script_thinking_usage_and_chunks() {
    let e = env();
    let script = e.proj.join("s.jsonl");
    write(
        &script,
        concat!(
            r#"{"thinking":"pondering","chunks":["Hel","lo ","there"],"chunk_delay_ms":5,"#,
            r#""usage":{"input_tokens":100,"output_tokens":10,"cache_read_tokens":50,"cache_write_tokens":0}}"#,
            "\n",
            r#"{"text":"no usage"}"#,
            "\n"
        ),
    );
    write(
        &e.home.join("config.json"),
        r#"{"models":{"script":{"input_per_mtok":1,"output_per_mtok":2,"cache_read_per_mtok":0.1,"cache_write_per_mtok":1}}}"#,
    );
    let s = script.to_str().unwrap();
    let out = zut(
        &e,
        &[
            "--mode",
            "json",
            "--provider",
            "script",
            "--script",
            s,
            "hi",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let deltas: Vec<&str> = of_type(&evs, "text_delta")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Hel", "lo ", "there"]);
    assert_eq!(of_type(&evs, "thinking_delta")[0]["delta"], "pondering");
    assert_eq!(of_type(&evs, "assistant_message")[0]["text"], "Hello there");
    let usage = of_type(&evs, "usage")[0];
    let want = (100.0 * 1.0 + 10.0 * 2.0 + 50.0 * 0.1) / 1e6;
    assert!((usage["cost_usd"].as_f64().unwrap() - want).abs() < 1e-12);
    // Thinking position: before the text.
    let at = |t: &str| evs.iter().position(|e| e["type"] == t).unwrap();
    assert!(at("thinking_delta") < at("text_delta"));

    // Print mode never shows thinking.
    let out = zut(
        &e,
        &["-p", "--provider", "script", "--script", s, "hi"],
        &[],
    );
    assert_eq!(stdout(&out), "Hello there\n");
    assert!(!stderr(&out).contains("pondering"));
}

#[test]
fn rpc_get_state_holds_the_session_usage_totals() {
    let e = env();
    let script = e.proj.join("s.jsonl");
    write(
        &script,
        concat!(
            r#"{"text":"a","usage":{"input_tokens":10,"output_tokens":1,"cache_read_tokens":5,"cache_write_tokens":2}}"#,
            "\n",
            r#"{"text":"b","usage":{"input_tokens":20,"output_tokens":2,"cache_read_tokens":0,"cache_write_tokens":0}}"#,
            "\n"
        ),
    );
    write(
        &e.home.join("config.json"),
        r#"{"models":{"script":{"input_per_mtok":1000000,"output_per_mtok":0,"cache_read_per_mtok":0,"cache_write_per_mtok":0}}}"#,
    );
    let input = concat!(
        r#"{"id":1,"type":"prompt","message":"one"}"#,
        "\n",
        r#"{"id":2,"type":"prompt","message":"two"}"#,
        "\n"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_zut"))
        .current_dir(&e.proj)
        .env("ZUT_HOME", &e.home)
        .args(["--no-session", "--no-extensions", "--mode", "rpc"])
        .args(["--provider", "script", "--script", script.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::{BufRead, BufReader, Write};
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    let reader = BufReader::new(child.stdout.take().unwrap());
    let mut done = 0;
    let mut state = None;
    for line in reader.lines() {
        let line = line.unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if v["type"] == "done" {
            done += 1;
            if done == 2 {
                stdin
                    .write_all(b"{\"id\":3,\"type\":\"get_state\"}\n")
                    .unwrap();
            }
        }
        if v["type"] == "response" && v["id"] == 3 {
            state = Some(v);
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    let state = state.expect("get_state answered");
    let usage = &state["data"]["usage"];
    assert_eq!(usage["input_tokens"], 30, "{state}");
    assert_eq!(usage["output_tokens"], 3);
    assert_eq!(usage["cache_read_tokens"], 5);
    assert_eq!(usage["cache_write_tokens"], 2);
    assert!((usage["cost_usd"].as_f64().unwrap() - 30.0).abs() < 1e-9);
}

#[test]
fn a_refusal_in_print_mode_says_so_and_exits_1() {
    let e = env();
    let answer = ev(
        json!({"type":"message_start","message":{"id":"m","type":"message",
        "role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}),
    ) + &ev(
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    ) + &ev(
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I can't help with that."}}),
    ) + &ev(json!({"type":"content_block_stop","index":0}))
        + &ev(
            json!({"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":5}}),
        )
        + &ev(json!({"type":"message_stop"}));
    let server = TestServer::start(vec![Reply::sse(&answer)]);
    let out = zut(
        &e,
        &[
            "-p",
            "--provider",
            "anthropic",
            "--api-key",
            "k",
            "--base-url",
            server.url(),
            "bad things",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("refused to answer: I can't help with that."),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");
}

#[test]
fn tool_arguments_that_are_not_json_go_back_to_the_model_as_an_error() {
    let e = env();
    let call = chunk(
        json!({"tool_calls":[{"index":0,"id":"call_1","type":"function",
            "function":{"name":"write","arguments":"{\"path\": \"x.txt\", \"content\": "}}]}),
        Some("tool_calls"),
    ) + "data: [DONE]\n\n";
    let server = TestServer::start(vec![
        Reply::sse(&call),
        Reply::sse(&openai_answer("sorry, fixed")),
    ]);
    let base = format!("{}/v1", server.url());
    let out = zut(
        &e,
        &[
            "-p",
            "--yolo",
            "--provider",
            "openai",
            "--base-url",
            &base,
            "write",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "sorry, fixed");
    assert!(!e.proj.join("x.txt").exists(), "the call never ran");
    let second = server.requests()[1].json();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result")
        .clone();
    assert_eq!(result["tool_call_id"], "call_1");
    assert!(
        result["content"].to_string().contains("not valid JSON"),
        "{result}"
    );
}

/// `zut` with a session kept (no `--no-session`).
fn zut_session(e: &Env, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zut"))
        .current_dir(&e.proj)
        .env("ZUT_HOME", &e.home)
        .stdin(Stdio::null())
        .args(["--no-extensions"])
        .args(args)
        .output()
        .unwrap()
}

/// Every `compaction` row of every session file under `$ZUT_HOME`.
fn compaction_rows(home: &Path) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut dirs = vec![home.join("sessions")];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                for line in std::fs::read_to_string(&p).unwrap().lines() {
                    let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                    if v["type"] == "compaction" {
                        rows.push(v);
                    }
                }
            }
        }
    }
    rows
}

fn script_file(e: &Env, name: &str, lines: &[Value]) -> String {
    let path = e.proj.join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    write(&path, &text);
    path.to_str().unwrap().to_string()
}

#[test]
fn context_too_long_compacts_once_and_tries_again() {
    let e = env();
    let first = script_file(&e, "1.jsonl", &[json!({"text":"one"})]);
    let out = zut_session(
        &e,
        &["-p", "--provider", "script", "--script", &first, "first"],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let log = e.proj.join("log.jsonl");
    // The counter fixture logs the extension events it hears.
    let ext = e.proj.join("counter");
    std::fs::create_dir_all(&ext).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ext/counter");
    std::fs::copy(fixture.join("counter.py"), ext.join("counter.py")).unwrap();
    let heard = e.proj.join("heard.jsonl");
    write(
        &ext.join("extension.json"),
        &json!({"name":"counter","version":"1.0.0","exec":"python3",
            "args":["counter.py", format!("log={}", heard.display())]})
        .to_string(),
    );
    let second = script_file(
        &e,
        "2.jsonl",
        &[
            json!({"error":"prompt is too long: 210000 tokens > 200000 maximum"}),
            json!({"text":"SUMMARY OF BEFORE"}),
            json!({"text":"two"}),
        ],
    );
    let out = zut_session(
        &e,
        &[
            "--continue",
            "--mode",
            "json",
            "--provider",
            "script",
            "--script",
            &second,
            "--script-log",
            log.to_str().unwrap(),
            "--ext",
            ext.to_str().unwrap(),
            "second",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    assert!(
        of_type(&evs, "session")
            .iter()
            .any(|s| s["reason"] == "compact"),
        "{evs:?}"
    );
    assert_eq!(of_type(&evs, "assistant_message")[0]["text"], "two");
    let rows = compaction_rows(&e.home);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["reason"], "auto");
    assert_eq!(rows[0]["summary"], "SUMMARY OF BEFORE");
    let heard: Vec<Value> = std::fs::read_to_string(&heard)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let compacted = heard
        .iter()
        .find(|h| h["event"] == "session_compacted")
        .unwrap_or_else(|| panic!("no session_compacted in {heard:?}"));
    assert_eq!(compacted["reason"], "auto");
    // The retried request carries the summary instead of the old history.
    let requests: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 3);
    let retried = requests[2]["messages"].to_string();
    assert!(retried.contains("SUMMARY OF BEFORE"), "{retried}");
    assert!(!retried.contains("\"one\""), "{retried}");

    // A second "too long" after compacting is an error, not another round.
    let third = script_file(
        &e,
        "3.jsonl",
        &[
            json!({"error":"prompt is too long"}),
            json!({"text":"SUMMARY AGAIN"}),
            json!({"error":"prompt is too long"}),
            json!({"text":"never"}),
        ],
    );
    let out = zut_session(
        &e,
        &[
            "--continue",
            "-p",
            "--provider",
            "script",
            "--script",
            &third,
            "third",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("prompt is too long"),
        "{}",
        stderr(&out)
    );
    assert_eq!(compaction_rows(&e.home).len(), 2);
}

#[test]
fn a_nearly_full_window_compacts_before_the_request_unless_turned_off() {
    let e = env();
    // A window of one token: every request is over 85 %.
    write(
        &e.home.join("config.json"),
        r#"{"models":{"script":{"context":1}}}"#,
    );
    let first = script_file(&e, "1.jsonl", &[json!({"text":"one"})]);
    let out = zut_session(
        &e,
        &["-p", "--provider", "script", "--script", &first, "first"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        compaction_rows(&e.home).is_empty(),
        "nothing to compact yet"
    );
    let second = script_file(
        &e,
        "2.jsonl",
        &[json!({"text":"EARLIER: one"}), json!({"text":"two"})],
    );
    let out = zut_session(
        &e,
        &[
            "--continue",
            "-p",
            "--provider",
            "script",
            "--script",
            &second,
            "second",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "two");
    let rows = compaction_rows(&e.home);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["reason"], "auto");

    write(
        &e.home.join("config.json"),
        r#"{"auto_compact": false, "models":{"script":{"context":1}}}"#,
    );
    let third = script_file(&e, "3.jsonl", &[json!({"text":"three"})]);
    let out = zut_session(
        &e,
        &[
            "--continue",
            "-p",
            "--provider",
            "script",
            "--script",
            &third,
            "third",
        ],
    );
    assert_eq!(stdout(&out).trim(), "three", "{}", stderr(&out));
    assert_eq!(compaction_rows(&e.home).len(), 1);
}

#[test]
fn zut_models_lists_both_apis_and_slash_model_lists_and_remembers() {
    let e = env();
    let server = TestServer::start(vec![
        Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"gpt-4.1","object":"model"},{"id":"gpt-5","object":"model"}]}"#,
        ),
        Reply::json(
            200,
            r#"{"data":[{"type":"model","id":"claude-opus-4-5","display_name":"Claude Opus 4.5"},
                {"type":"model","id":"claude-haiku-4-5","display_name":"Claude Haiku 4.5"}],
                "has_more":false,"first_id":"claude-opus-4-5","last_id":"claude-haiku-4-5"}"#,
        ),
        Reply::json(200, r#"{"data":[{"id":"gpt-4.1"},{"id":"gpt-5"}]}"#),
        Reply::json(401, r#"{"error":{"message":"bad key"}}"#),
    ]);
    let base = format!("{}/v1", server.url());
    let out = zut(
        &e,
        &["--provider", "openai", "--base-url", &base, "models"],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "gpt-4.1\ngpt-5\n");

    let out = zut(
        &e,
        &[
            "models",
            "--json",
            "--provider",
            "anthropic",
            "--api-key",
            "k",
            "--base-url",
            server.url(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        doc["models"],
        json!(["claude-opus-4-5", "claude-haiku-4-5"])
    );
    let reqs = server.requests();
    assert_eq!(reqs[0].method, "GET");
    assert_eq!(reqs[0].path, "/v1/models");
    assert!(reqs[1].path.starts_with("/v1/models"), "{}", reqs[1].path);
    assert_eq!(reqs[1].header("x-api-key"), Some("k"));

    // /model lists (the current one marked) ...
    write(
        &e.home.join("config.json"),
        &json!({"provider":"openai","base_url":base,"model":"gpt-4.1"}).to_string(),
    );
    let out = zut(&e, &["-p", "/model"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("* gpt-4.1\n  gpt-5"),
        "{}",
        stdout(&out)
    );
    // ... and switches, remembered like --model.
    let out = zut(&e, &["-p", "/model gpt-5"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(e.home.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["model"], "gpt-5");

    // A failing list is one line and status 1.
    let out = zut(&e, &["models"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("bad key"), "{}", stderr(&out));
}

#[test]
fn signed_thinking_survives_the_session_file() {
    let e = env();
    write(&e.proj.join("a.txt"), "alpha\n");
    let server = TestServer::start(vec![
        Reply::sse(&anthropic_thinking_answer()),
        Reply::sse(&anthropic_text("It says alpha.")),
        Reply::sse(&anthropic_text("Still alpha.")),
    ]);
    let args = |first: bool| {
        let mut a = vec!["-p", "--yolo", "--provider", "anthropic", "--api-key", "k"];
        a.extend(["--thinking", "low", "--base-url", server.url()]);
        if !first {
            a.push("--continue");
        }
        a.push(if first { "read a.txt" } else { "and now?" });
        a
    };
    let out = zut_session(&e, &args(true));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "It says alpha.");
    let out = zut_session(&e, &args(false));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Still alpha.");
    let resumed = server.requests()[2].json();
    let assistant = &resumed["messages"][1];
    assert_eq!(
        assistant["content"][0],
        json!({"type":"thinking","thinking":"Let me think.","signature":"c2lnbmVk"})
    );
    assert_eq!(
        assistant["content"][1],
        json!({"type":"redacted_thinking","data":"RU5DUllQVEVE"})
    );
}

#[test]
fn https_urls_take_https_proxy_lower_case_first_and_no_proxy_lists() {
    let e = env();
    let lower = TestProxy::start();
    let upper = TestProxy::start();
    // A port nobody listens on: each proxy answers 502, which is enough to
    // see where the CONNECT went (no TLS server is needed for that).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let authority = closed.local_addr().unwrap().to_string();
    drop(closed);
    let base = format!("https://{authority}/v1");
    let args = [
        "-p",
        "--provider",
        "openai",
        "--base-url",
        base.as_str(),
        "hi",
    ];

    let out = zut(
        &e,
        &args,
        &[("https_proxy", lower.url()), ("HTTPS_PROXY", upper.url())],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!lower.connects().is_empty(), "{}", stderr(&out));
    assert!(lower.connects().iter().all(|c| *c == authority));
    assert!(upper.connects().is_empty(), "lower case wins");

    let out = zut(&e, &args, &[("HTTPS_PROXY", upper.url())]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!upper.connects().is_empty(), "{}", stderr(&out));
    assert!(upper.connects().iter().all(|c| *c == authority));

    // An http proxy variable does not apply to an https URL, and a
    // NO_PROXY list naming the host keeps it off the proxy.
    let before = (lower.connects().len(), upper.connects().len());
    let out = zut(&e, &args, &[("http_proxy", lower.url())]);
    assert_eq!(out.status.code(), Some(1));
    let out = zut(
        &e,
        &args,
        &[
            ("HTTPS_PROXY", upper.url()),
            ("no_proxy", "other.example,127.0.0.1"),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        (lower.connects().len(), upper.connects().len()),
        before,
        "nothing more went through a proxy"
    );
}

/// `zut` keeping a session, without proxy variables or extensions.
fn zut_kept(e: &Env, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zut"));
    cmd.current_dir(&e.proj)
        .env("ZUT_HOME", &e.home)
        .env("ZUT_RETRY_BASE_MS", "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .args(["--no-extensions"])
        .args(args);
    for v in PROXY_VARS {
        cmd.env_remove(v);
    }
    cmd.output().unwrap()
}

#[test]
fn a_context_error_over_http_compacts_once_for_both_apis() {
    // OpenAI: the error's code alone says what happened.
    let e = env();
    let too_long = r#"{"error":{"message":"Input is larger than this model accepts.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let server = TestServer::start(vec![
        Reply::sse(&openai_answer("one")),
        Reply::json(400, too_long),
        Reply::sse(&openai_answer("OPENAI SUMMARY")),
        Reply::sse(&openai_answer("two")),
    ]);
    let base = format!("{}/v1", server.url());
    let run = |prompt: &str, more: bool| {
        let mut a = vec!["-p", "--provider", "openai", "--base-url", base.as_str()];
        if more {
            a.push("--continue");
        }
        a.push(prompt);
        zut_kept(&e, &a)
    };
    let out = run("first", false);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run("second", true);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "two");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let retried = reqs[3].json()["messages"].to_string();
    assert!(retried.contains("OPENAI SUMMARY"), "{retried}");
    assert!(!retried.contains("\"one\""), "{retried}");
    let rows = compaction_rows(&e.home);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["reason"], "auto");

    // Anthropic: HTTP 400 "prompt is too long", twice: one compaction,
    // then the second error stands.
    let e = env();
    let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
    let server = TestServer::start(vec![
        Reply::sse(&anthropic_text("one")),
        Reply::json(400, too_long),
        Reply::sse(&anthropic_text("ANTHROPIC SUMMARY")),
        Reply::json(400, too_long),
        Reply::sse(&anthropic_text("never")),
    ]);
    let run = |prompt: &str, more: bool| {
        let mut a = vec!["-p", "--provider", "anthropic", "--api-key", "k"];
        a.extend(["--base-url", server.url()]);
        if more {
            a.push("--continue");
        }
        a.push(prompt);
        zut_kept(&e, &a)
    };
    let out = run("first", false);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run("second", true);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("prompt is too long"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.request_count(), 4, "no second round");
    let retried = server.requests()[3].json()["messages"].to_string();
    assert!(retried.contains("ANTHROPIC SUMMARY"), "{retried}");
    assert_eq!(compaction_rows(&e.home).len(), 1);
}

#[test]
fn an_answer_interceptor_never_sees_the_thinking() {
    let e = env();
    // The redacting fixture rewrites SECRET in the answer it is shown; had
    // it been shown the thinking too, its rewrite would carry it.
    let ext = e.proj.join("fx-redact");
    std::fs::create_dir_all(&ext).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ext");
    std::fs::copy(fixtures.join("fx.py"), ext.join("fx.py")).unwrap();
    write(
        &ext.join("extension.json"),
        &json!({"name":"fx-redact","version":"1.2.3","exec":"python3",
            "args":["fx.py","icpt","modes=redact"]})
        .to_string(),
    );
    let script = script_file(
        &e,
        "s.jsonl",
        &[json!({"thinking":"a SECRET plan","text":"the SECRET answer"})],
    );
    let ext = ext.to_str().unwrap();
    let args = ["--provider", "script", "--script", &script, "--ext", ext];
    let mut json_args = vec!["--mode", "json"];
    json_args.extend(args);
    json_args.push("hi");
    let out = zut(&e, &json_args, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    assert!(of_type(&evs, "ext_error").is_empty(), "{evs:?}");
    let answers = of_type(&evs, "assistant_message");
    assert_eq!(answers.len(), 1, "{evs:?}");
    assert_eq!(answers[0]["text"], "the [redacted] answer");
    let raw = stdout(&out);
    assert!(!raw.contains("[redacted] plan"), "{raw}");

    let mut print_args = vec!["-p"];
    print_args.extend(args);
    print_args.push("hi");
    let out = zut(&e, &print_args, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "the [redacted] answer\n");
    assert!(!stderr(&out).contains("plan"), "{}", stderr(&out));
}

#[test]
fn config_idle_timeout_ends_a_stalled_stream_and_the_environment_wins() {
    let e = env();
    write(&e.home.join("config.json"), r#"{"idle_timeout_ms": 300}"#);
    let stalled = chunk(json!({"role":"assistant"}), None);
    let server = TestServer::start(vec![Reply::sse_stall(&stalled), Reply::sse_stall(&stalled)]);
    let base = format!("{}/v1", server.url());
    let args = [
        "-p",
        "--provider",
        "openai",
        "--base-url",
        base.as_str(),
        "hi",
    ];
    let started = std::time::Instant::now();
    let out = zut(&e, &args, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no data from the provider for 0.3 s"),
        "{}",
        stderr(&out)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));

    let out = zut(&e, &args, &[("ZUT_PROVIDER_IDLE_TIMEOUT_MS", "200")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no data from the provider for 0.2 s"),
        "{}",
        stderr(&out)
    );
}
