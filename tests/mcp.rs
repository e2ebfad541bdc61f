//! MCP servers through the real binary: `tests/fixtures/mcp/fake_server.py`
//! started from `--mcp-config` (or `.mcp.json`), driven by the scripted
//! provider in `--mode json`. Each test covers one edge case of the client:
//! handshake, versions, pagination, names, progress, cancellation,
//! `list_changed`, bad output, early exit, results, errors, server requests,
//! confirmation and `tool_search`.

mod support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use support::*;

fn fake() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fake_server.py")
}

/// A server entry running the fake server with `args`, plus zut's `keys`.
fn server(args: &[&str], keys: Value) -> Value {
    let mut a = vec![fake().display().to_string()];
    a.extend(args.iter().map(|s| s.to_string()));
    let mut entry = json!({"command": "python3", "args": a});
    if let (Some(e), Some(k)) = (entry.as_object_mut(), keys.as_object()) {
        for (key, v) in k {
            e.insert(key.clone(), v.clone());
        }
    }
    entry
}

/// Writes an `--mcp-config` file with these servers; returns its path.
fn config(sb: &Sandbox, servers: &[(&str, Value)]) -> String {
    let mut m = serde_json::Map::new();
    for (name, entry) in servers {
        m.insert(name.to_string(), entry.clone());
    }
    let path = sb.path("mcp-test.json");
    std::fs::write(&path, json!({"mcpServers": m}).to_string()).unwrap();
    path.display().to_string()
}

/// `zut --mode json` with the config and no prompt: loads, reports, exits.
fn load_only(sb: &Sandbox, cfg: &str, envs: &[(&str, &str)]) -> (Option<i32>, Vec<Value>) {
    let mut c = zut(sb);
    for (k, v) in envs {
        c.env(k, v);
    }
    let out = c
        .args(["--no-extensions", "--mcp-config", cfg, "--mode", "json"])
        .output()
        .unwrap();
    (out.status.code(), json_lines(&out.stdout))
}

/// A scripted prompt with the config; the events and the provider requests.
fn prompt(
    sb: &Sandbox,
    cfg: &str,
    lines: &[Value],
    extra: &[&str],
) -> (std::process::Output, Vec<Value>, Vec<Value>) {
    let mut args = vec!["--no-extensions", "--mcp-config", cfg, "--mode", "json"];
    args.extend_from_slice(extra);
    args.push("go");
    let (out, requests) = run_scripted(sb, &[], lines, &args);
    let events = json_lines(&out.stdout);
    (out, events, requests)
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

fn result_of<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == id)
        .unwrap_or_else(|| panic!("no tool_result {id} in {events:#?}"))
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn recorded(path: &Path) -> Vec<Value> {
    std::fs::read(path)
        .map(|b| json_lines(&b))
        .unwrap_or_default()
}

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"tool_calls": [{"id": id, "name": name, "args": args}]})
}

#[test]
fn a_server_loads_as_a_participant_with_sanitised_and_hashed_names_across_pages() {
    let sb = Sandbox::new();
    let rec = sb.path("rec.jsonl");
    let cfg = config(
        &sb,
        &[(
            "fake",
            server(
                &["--page-size", "3", "--record", &rec.display().to_string()],
                json!({}),
            ),
        )],
    );
    let (code, events) = load_only(&sb, &cfg, &[]);
    assert_eq!(code, Some(0), "{events:#?}");
    let loaded = of_type(&events, "ext_loaded");
    let l = loaded
        .iter()
        .find(|e| e["extension"] == "mcp:fake")
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(l["source"], "mcp");
    let tools: Vec<&str> = l["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    // 11 tools over four pages, none lost.
    assert_eq!(tools.len(), 11, "{tools:?}");
    assert!(tools.contains(&"mcp__fake__echo"));
    let long = tools
        .iter()
        .find(|t| t.starts_with("mcp__fake__a_very"))
        .unwrap();
    assert_eq!(long.len(), 64);
    assert_eq!(
        &long[..55],
        "mcp__fake__a_very_long_tool_name_that_needs_sanitising_"
    );
    assert_eq!(&long[55..56], "_");
    assert!(long[56..].chars().all(|c| c.is_ascii_hexdigit()));
    // The hash is stable across runs.
    let (_, again) = load_only(&sb, &cfg, &[]);
    assert!(
        again.iter().any(|e| e["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == *long))),
        "{again:#?}"
    );
    // The handshake's order: initialize, initialized, then tools/list.
    let methods: Vec<String> = recorded(&rec)
        .iter()
        .take(6)
        .map(|m| m["method"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(methods[0], "initialize");
    assert_eq!(methods[1], "notifications/initialized");
    assert_eq!(&methods[2..6], ["tools/list"; 4]);
    let first = &recorded(&rec)[0];
    assert_eq!(first["params"]["protocolVersion"], "2025-11-25");
    assert!(first["params"]["capabilities"]["roots"].is_object());
    // stderr went to the server's own log.
    assert!(sb.home().join("logs/mcp-fake.log").is_file());
}

#[test]
fn a_slow_initialize_is_waited_for_and_one_past_the_startup_timeout_fails() {
    let sb = Sandbox::new();
    let cfg = config(
        &sb,
        &[
            ("slow", server(&["--slow-init", "600"], json!({}))),
            (
                "slower",
                server(&["--slow-init", "5000"], json!({"startup_timeout_ms": 300})),
            ),
        ],
    );
    // The first provider request waits for the slow server: it sees
    // tool_search (its tools are deferred).
    let (out, events, requests) = prompt(&sb, &cfg, &[json!({"text": "ok"})], &[]);
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    assert!(tool_names(&requests[0]).contains(&"tool_search".to_string()));
    let err = of_type(&events, "ext_error");
    assert_eq!(err.len(), 1, "{events:#?}");
    assert_eq!(err[0]["extension"], "mcp:slower");
    let msg = err[0]["message"].as_str().unwrap();
    assert!(msg.contains("slower") && msg.contains("300 ms"), "{msg}");
    assert!(of_type(&events, "ext_loaded")
        .iter()
        .any(|e| e["extension"] == "mcp:slow"));
}

#[test]
fn an_old_protocol_version_is_accepted_and_an_unknown_one_refused() {
    let sb = Sandbox::new();
    let cfg = config(
        &sb,
        &[
            ("old", server(&["--version", "2024-11-05"], json!({}))),
            ("odd", server(&["--version", "1999-01-01"], json!({}))),
        ],
    );
    let (code, events) = load_only(&sb, &cfg, &[]);
    assert_eq!(code, Some(1), "a failed server fails the load check");
    assert!(of_type(&events, "ext_loaded")
        .iter()
        .any(|e| e["extension"] == "mcp:old"));
    let err = of_type(&events, "ext_error");
    assert_eq!(err[0]["extension"], "mcp:odd");
    assert!(err[0]["message"].as_str().unwrap().contains("1999-01-01"));
}

#[test]
fn non_json_stdout_before_initialize_fails_naming_the_line_and_after_it_is_skipped() {
    let sb = Sandbox::new();
    let cfg = config(
        &sb,
        &[
            ("banner", server(&["--banner"], json!({}))),
            ("noisy", server(&["--noise"], json!({"deferred": false}))),
        ],
    );
    let (out, events, _) = prompt(
        &sb,
        &cfg,
        &[
            call("c1", "mcp__noisy__echo", json!({"text": "hi"})),
            json!({"text": "done"}),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    let err = of_type(&events, "ext_error");
    assert_eq!(err.len(), 1, "{events:#?}");
    assert_eq!(err[0]["extension"], "mcp:banner");
    let msg = err[0]["message"].as_str().unwrap();
    assert!(msg.contains("fake server 1.0 starting up"), "{msg}");
    assert_eq!(text_of(result_of(&events, "c1")), "echo: hi");
}

#[test]
fn a_server_exiting_during_initialize_is_reported_with_status_and_stderr_and_others_go_on() {
    let sb = Sandbox::new();
    let cfg = config(
        &sb,
        &[
            ("dies", server(&["--exit-on-init", "3"], json!({}))),
            ("fine", server(&[], json!({}))),
        ],
    );
    let (code, events) = load_only(&sb, &cfg, &[]);
    assert_eq!(code, Some(1));
    let err = of_type(&events, "ext_error");
    let msg = err[0]["message"].as_str().unwrap();
    assert_eq!(err[0]["extension"], "mcp:dies");
    assert!(msg.contains("exit status 3"), "{msg}");
    assert!(msg.contains("cannot open the database"), "{msg}");
    assert!(of_type(&events, "ext_loaded")
        .iter()
        .any(|e| e["extension"] == "mcp:fine"));
}

#[test]
fn every_content_type_tool_errors_and_json_rpc_errors_reach_the_model() {
    let sb = Sandbox::new();
    let cfg = config(&sb, &[("fake", server(&[], json!({"deferred": false})))]);
    let (out, events, requests) = prompt(
        &sb,
        &cfg,
        &[
            json!({"tool_calls": [
                {"id": "a", "name": "mcp__fake__all_types", "args": {}},
                {"id": "s", "name": "mcp__fake__structured", "args": {}},
                {"id": "f", "name": "mcp__fake__fails", "args": {}},
                {"id": "r", "name": "mcp__fake__rpc_error", "args": {}}
            ]}),
            json!({"text": "done"}),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    let a = result_of(&events, "a");
    assert_eq!(a["is_error"], false);
    assert_eq!(a["extension"], "mcp:fake");
    let blocks = a["content"].as_array().unwrap();
    assert_eq!(blocks[0], json!({"type": "text", "text": "plain"}));
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["mime_type"], "image/png");
    assert!(blocks[2]["text"].as_str().unwrap().contains("audio/wav"));
    assert!(blocks[3]["text"].as_str().unwrap().contains("linked.txt"));
    assert!(blocks[4]["text"]
        .as_str()
        .unwrap()
        .ends_with("embedded body"));
    assert_eq!(text_of(result_of(&events, "s")), r#"{"temperature":21}"#);
    let f = result_of(&events, "f");
    assert_eq!(
        (f["is_error"].clone(), text_of(f)),
        (json!(true), "it broke".into())
    );
    let r = result_of(&events, "r");
    assert_eq!(r["is_error"], true);
    let t = text_of(r);
    assert!(
        t.contains("fake") && t.contains("rpc_error") && t.contains("backend down"),
        "{t}"
    );
    // Offered directly (deferred: false), with the server's schema.
    let tools = &requests[0]["tools"];
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__fake__echo")
        .unwrap();
    assert_eq!(echo["schema"]["properties"]["text"]["type"], "string");
}

#[test]
fn deferred_tools_are_found_and_activated_by_tool_search() {
    let sb = Sandbox::new();
    let cfg = config(&sb, &[("fake", server(&[], json!({})))]);
    let (out, events, requests) = prompt(
        &sb,
        &cfg,
        &[
            call("q", "tool_search", json!({"query": "ECHO the text"})),
            call("e", "mcp__fake__echo", json!({"text": "found"})),
            json!({"text": "done"}),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    let first = tool_names(&requests[0]);
    assert!(first.contains(&"tool_search".to_string()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("mcp__")), "{first:?}");
    let found = text_of(result_of(&events, "q"));
    assert!(found.contains("mcp__fake__echo"), "{found}");
    assert!(tool_names(&requests[1]).contains(&"mcp__fake__echo".to_string()));
    assert_eq!(text_of(result_of(&events, "e")), "echo: found");
}

#[test]
fn progress_becomes_tool_progress_events_before_the_result() {
    let sb = Sandbox::new();
    let cfg = config(
        &sb,
        &[(
            "fake",
            server(&[], json!({"deferred": false, "tool_timeout_ms": 400})),
        )],
    );
    // 4 steps of 250 ms: 1 s in all, past the 400 ms timeout, which each
    // progress notification restarts.
    let (out, events, _) = prompt(
        &sb,
        &cfg,
        &[
            call(
                "p",
                "mcp__fake__progress",
                json!({"steps": 4, "delay_ms": 250}),
            ),
            json!({"text": "done"}),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e["id"] == "p" && e["type"] != "tool_call")
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "tool_progress",
            "tool_progress",
            "tool_progress",
            "tool_progress",
            "tool_result"
        ]
    );
    let p = of_type(&events, "tool_progress");
    assert_eq!(p[1]["progress"], 2.0);
    assert_eq!(p[1]["total"], 4.0);
    assert_eq!(p[1]["message"], "step 2");
    assert_eq!(p[1]["extension"], "mcp:fake");
    assert_eq!(p[1]["name"], "mcp__fake__progress");
    assert_eq!(text_of(result_of(&events, "p")), "progress done");
}

#[test]
fn a_call_that_never_answers_times_out_and_the_server_hears_notifications_cancelled() {
    let sb = Sandbox::new();
    let rec = sb.path("rec.jsonl");
    let cfg = config(
        &sb,
        &[(
            "fake",
            server(
                &["--record", &rec.display().to_string()],
                json!({"deferred": false, "tool_timeout_ms": 300}),
            ),
        )],
    );
    let (out, events, _) = prompt(
        &sb,
        &cfg,
        &[
            call("h", "mcp__fake__hang", json!({})),
            call("e", "mcp__fake__echo", json!({"text": "still there"})),
            json!({"text": "done"}),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    let h = result_of(&events, "h");
    assert_eq!(h["is_error"], true);
    assert!(text_of(h).contains("no answer within"), "{}", text_of(h));
    assert_eq!(text_of(result_of(&events, "e")), "echo: still there");
    let msgs = recorded(&rec);
    let call_id = msgs
        .iter()
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "hang")
        .map(|m| m["id"].clone())
        .unwrap();
    let cancelled = msgs
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("{msgs:#?}"));
    assert_eq!(cancelled["params"]["requestId"], call_id);
    // The call carried a progress token.
    assert!(msgs
        .iter()
        .any(|m| m["params"]["_meta"]["progressToken"].is_number()));
}

#[test]
fn list_changed_re_lists_and_the_new_tool_is_offered() {
    let sb = Sandbox::new();
    let cfg = config(&sb, &[("fake", server(&[], json!({"deferred": false})))]);
    let (out, events, requests) = prompt(
        &sb,
        &cfg,
        &[
            call("c", "mcp__fake__change", json!({})),
            call("e1", "mcp__fake__echo", json!({"text": "1"})),
            call("e2", "mcp__fake__echo", json!({"text": "2"})),
            call("n", "mcp__fake__added", json!({})),
            json!({"text": "done"}),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    assert!(!tool_names(&requests[0]).contains(&"mcp__fake__added".to_string()));
    assert!(
        tool_names(&requests[3]).contains(&"mcp__fake__added".to_string()),
        "{events:#?}"
    );
    let changed = of_type(&events, "ext_tools_changed");
    assert_eq!(changed[0]["extension"], "mcp:fake");
    assert!(changed[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "mcp__fake__added"));
    assert_eq!(text_of(result_of(&events, "n")), "ran added");
}

#[test]
fn server_requests_are_answered_ping_roots_and_method_not_found() {
    let sb = Sandbox::new();
    let cfg = config(&sb, &[("fake", server(&[], json!({"deferred": false})))]);
    let (out, events, _) = prompt(
        &sb,
        &cfg,
        &[
            call("r", "mcp__fake__ask_roots", json!({})),
            json!({"text": "done"}),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    let answers: Value = serde_json::from_str(&text_of(result_of(&events, "r"))).unwrap();
    assert_eq!(answers["ping"], json!({}));
    let uri = answers["roots/list"]["roots"][0]["uri"].as_str().unwrap();
    let cwd = sb.cwd().canonicalize().unwrap();
    assert!(
        uri == format!("file://{}", cwd.display())
            || uri == format!("file://{}", sb.cwd().display()),
        "{uri}"
    );
    assert_eq!(answers["sampling/createMessage"]["code"], -32601);
}

#[test]
fn a_confirm_needing_call_is_refused_without_yolo_and_never_reaches_the_server() {
    let sb = Sandbox::new();
    let rec = sb.path("rec.jsonl");
    let r = rec.display().to_string();
    let cfg = config(
        &sb,
        &[
            (
                "strict",
                server(&["--record", &r], json!({"deferred": false})),
            ),
            (
                "lax",
                server(&[], json!({"deferred": false, "confirm": false})),
            ),
        ],
    );
    let (out, events, _) = prompt(
        &sb,
        &cfg,
        &[
            json!({"tool_calls": [
                {"id": "w", "name": "mcp__strict__write_thing", "args": {}},
                {"id": "ro", "name": "mcp__strict__echo", "args": {"text": "read-only"}},
                {"id": "l", "name": "mcp__lax__write_thing", "args": {}}
            ]}),
            json!({"text": "done"}),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    let w = result_of(&events, "w");
    assert_eq!(w["is_error"], true);
    assert!(text_of(w).contains("--yolo"), "{}", text_of(w));
    assert!(!recorded(&rec)
        .iter()
        .any(|m| m["params"]["name"] == "write_thing"));
    assert_eq!(text_of(result_of(&events, "ro")), "echo: read-only");
    assert_eq!(text_of(result_of(&events, "l")), "ran write_thing");
    // With --yolo it runs.
    let (_, events, _) = prompt(
        &sb,
        &cfg,
        &[
            call("w", "mcp__strict__write_thing", json!({})),
            json!({"text": "done"}),
        ],
        &["--yolo"],
    );
    assert_eq!(text_of(result_of(&events, "w")), "ran write_thing");
}

#[test]
fn an_untrusted_projects_mcp_json_is_not_started_and_no_mcp_starts_nothing() {
    let sb = Sandbox::new();
    let doc = json!({"mcpServers": {"proj": server(&[], json!({}))}});
    std::fs::write(sb.cwd().join(".mcp.json"), doc.to_string()).unwrap();
    let out = zut(&sb)
        .args(["--no-extensions", "--mode", "json"])
        .output()
        .unwrap();
    let events = json_lines(&out.stdout);
    let warn = of_type(&events, "ext_warning");
    assert!(
        warn.iter()
            .any(|w| w["message"].as_str().unwrap().contains("zut ext trust")),
        "{events:#?}"
    );
    assert!(of_type(&events, "ext_loaded").is_empty());
    // Trusted, it loads; --no-mcp starts nothing.
    let out = zut(&sb)
        .env("ZUT_TRUST_ALL", "1")
        .args(["--no-extensions", "--mode", "json"])
        .output()
        .unwrap();
    let events = json_lines(&out.stdout);
    assert!(
        of_type(&events, "ext_loaded")
            .iter()
            .any(|e| e["extension"] == "mcp:proj"),
        "{events:#?}"
    );
    let out = zut(&sb)
        .env("ZUT_TRUST_ALL", "1")
        .args(["--no-extensions", "--no-mcp", "--mode", "json"])
        .output()
        .unwrap();
    assert!(json_lines(&out.stdout).is_empty());
}

fn zut_mcp(sb: &Sandbox, args: &[&str]) -> (Option<i32>, String, String) {
    let out = zut(sb).arg("mcp").args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn zut_mcp_add_list_get_remove_edit_the_files_and_keep_other_keys() {
    let sb = Sandbox::new();
    let file = sb.cwd().join(".mcp.json");
    std::fs::write(
        &file,
        r#"{"keep": {"a": 1}, "mcpServers": {"old": {"command": "x"}}}"#,
    )
    .unwrap();
    let f = fake().display().to_string();
    let (code, _, err) = zut_mcp(
        &sb,
        &[
            "add",
            "fake",
            "-e",
            "TOKEN=${SECRET:-none}",
            "--",
            "python3",
            &f,
            "--page-size",
            "2",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("zut ext trust"), "untrusted project: {err}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(doc["keep"], json!({"a": 1}));
    assert_eq!(doc["mcpServers"]["old"]["command"], "x");
    assert_eq!(doc["mcpServers"]["fake"]["args"][2], "2");
    assert_eq!(doc["mcpServers"]["fake"]["env"]["TOKEN"], "${SECRET:-none}");
    let (code, _, _) = zut_mcp(&sb, &["add", "fake", "--", "x"]);
    assert_eq!(code, Some(1), "a taken name is refused");
    let (code, _, _) = zut_mcp(&sb, &["add", "--global", "g", "--", "python3", &f]);
    assert_eq!(code, Some(0));
    assert!(sb.home().join("mcp.json").is_file());

    let (code, out, _) = zut_mcp(&sb, &["list", "--json"]);
    assert_eq!(code, Some(0));
    let listed: Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["old", "fake", "g"]);
    assert_eq!(listed["servers"][1]["starts"], false, "untrusted");
    assert_eq!(listed["servers"][2]["source"], "global");
    let (_, out, _) = zut_mcp(&sb, &["list"]);
    assert!(out.contains("fake  project  python3"), "{out}");
    // `zut ext list` points at them: only the global one would start
    // (the project is not trusted).
    let ext = zut(&sb).args(["ext", "list"]).output().unwrap();
    let err = String::from_utf8_lossy(&ext.stderr);
    assert!(
        err.contains("note: 1 MCP server also starts with zut; see zut mcp list"),
        "{err}"
    );

    let (code, out, _) = zut_mcp(&sb, &["get", "fake"]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains(&format!("command: python3 {f} --page-size 2")),
        "{out}"
    );
    assert!(out.contains("env: TOKEN"), "{out}");
    let (code, _, err) = zut_mcp(&sb, &["get", "nope"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("nope"), "{err}");

    let (code, _, _) = zut_mcp(&sb, &["remove", "fake"]);
    assert_eq!(code, Some(0));
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert!(doc["mcpServers"].get("fake").is_none());
    assert_eq!(doc["keep"], json!({"a": 1}));
    let (code, _, _) = zut_mcp(&sb, &["remove", "fake"]);
    assert_eq!(code, Some(1));
    let (code, _, _) = zut_mcp(&sb, &["bogus"]);
    assert_eq!(code, Some(2));
}

#[test]
fn zut_mcp_doctor_starts_each_server_and_reports_failures_with_stderr() {
    let sb = Sandbox::new();
    let f = fake().display().to_string();
    let doc = json!({"mcpServers": {
        "good": {"command": "python3", "args": [f, "--version", "2024-11-05"]},
        "bad": {"command": "python3", "args": [f, "--exit-on-init", "4"]}
    }});
    std::fs::write(sb.home().join("mcp.json"), doc.to_string()).unwrap();
    let (code, out, _) = zut_mcp(&sb, &["doctor", "--json"]);
    assert_eq!(code, Some(1), "{out}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let by = |n: &str| {
        d["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(by("good")["ok"], true);
    assert_eq!(by("good")["protocol_version"], "2024-11-05");
    assert_eq!(by("good")["tools"].as_array().unwrap().len(), 11);
    let e = by("bad")["error"].as_str().unwrap().to_string();
    assert!(
        e.contains("exit status 4") && e.contains("cannot open the database"),
        "{e}"
    );
    let (code, out, _) = zut_mcp(&sb, &["doctor", "good"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("good: ok, protocol 2024-11-05, 11 tool(s)"),
        "{out}"
    );
    let (code, _, _) = zut_mcp(&sb, &["doctor", "missing"]);
    assert_eq!(code, Some(1));
}

#[test]
fn an_abort_cancels_the_running_call_and_no_server_outlives_zut() {
    let sb = Sandbox::new();
    let rec = sb.path("rec.jsonl");
    let pidfile = sb.path("pid");
    let cfg = config(
        &sb,
        &[(
            "fake",
            server(
                &[
                    "--record",
                    &rec.display().to_string(),
                    "--pidfile",
                    &pidfile.display().to_string(),
                ],
                json!({"deferred": false}),
            ),
        )],
    );
    let s = script(
        &sb,
        &[
            call("h", "mcp__fake__hang", json!({})),
            json!({"text": "never"}),
        ],
    );
    let child = zut(&sb)
        .args(["--no-extensions", "--mcp-config", &cfg])
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--mode",
            "json",
            "go",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = eventually(std::time::Duration::from_secs(20), || {
        recorded(&rec).iter().any(|m| m["params"]["name"] == "hang")
    });
    assert!(started, "the call never reached the server");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let events = json_lines(&out.stdout);
    assert_eq!(result_of(&events, "h")["is_error"], true);
    let msgs = recorded(&rec);
    let id = msgs
        .iter()
        .find(|m| m["params"]["name"] == "hang")
        .map(|m| m["id"].clone())
        .unwrap();
    assert!(
        msgs.iter()
            .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == id),
        "{msgs:#?}"
    );
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        eventually(std::time::Duration::from_secs(5), || !pid_exists(pid)),
        "the server {pid} outlived zut"
    );
}

#[test]
fn zut_ext_doctor_lists_mcp_servers_with_state_tools_and_log() {
    let sb = Sandbox::new();
    let f = fake().display().to_string();
    let doc = json!({"mcpServers": {
        "good": {"command": "python3", "args": [f]},
        "bad": {"command": "python3", "args": [f, "--exit-on-init", "5"]}
    }});
    std::fs::write(sb.home().join("mcp.json"), doc.to_string()).unwrap();
    let out = zut(&sb).args(["ext", "doctor", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by = |n: &str| {
        d["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == n)
            .unwrap_or_else(|| panic!("{d:#}"))
            .clone()
    };
    let good = by("mcp:good");
    assert_eq!(
        (good["status"].as_str(), good["source"].as_str()),
        (Some("ok"), Some("mcp"))
    );
    assert_eq!(good["tools"].as_array().unwrap().len(), 11);
    assert!(good["log"].as_str().unwrap().ends_with("logs/mcp-good.log"));
    let bad = by("mcp:bad");
    assert_eq!(bad["status"], "error");
    assert!(bad["error"].as_str().unwrap().contains("exit status 5"));
    let out = zut(&sb).args(["ext", "doctor", "good"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("mcp:good [mcp] ok") && !text.contains("mcp:bad"),
        "{text}"
    );
    // Servers are counted apart from extensions (there are none here).
    assert!(
        text.contains("\n0 extensions and 1 MCP server: 1 ok, 0 with warnings"),
        "{text}"
    );
}

#[test]
fn mcp_calls_go_through_extension_interceptors_and_claude_code_hooks() {
    let sb = Sandbox::new();
    let rec = sb.path("rec.jsonl");
    let marker = sb.path("marks");
    let guard = sb.fixture("fx-guard", &[opt("marker", &marker)]);
    let cfg = config(
        &sb,
        &[(
            "fake",
            server(
                &["--record", &rec.display().to_string()],
                json!({"deferred": false}),
            ),
        )],
    );
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "mcp__fake__fails", "hooks": [
        {"type": "command", "command": "echo refused by policy >&2; exit 2"}
    ]}]}});
    std::fs::create_dir_all(sb.cwd().join(".claude")).unwrap();
    std::fs::write(sb.cwd().join(".claude/settings.json"), hooks.to_string()).unwrap();
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [
                {"id": "e", "name": "mcp__fake__echo", "args": {"text": "seen"}},
                {"id": "f", "name": "mcp__fake__fails", "args": {}}
            ]}),
            json!({"text": "done"}),
        ],
    );
    let out = zut(&sb)
        .env("ZUT_TRUST_ALL", "1")
        .arg("-e")
        .arg(&guard)
        .args(["--mcp-config", &cfg, "--provider", "script", "--script", &s])
        .args(["--mode", "json", "go"])
        .output()
        .unwrap();
    let events = json_lines(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    let marks = std::fs::read_to_string(&marker).unwrap();
    assert!(
        marks.contains(r#"intercept:tool_call:{"text": "seen"}"#),
        "{marks}"
    );
    assert_eq!(text_of(result_of(&events, "e")), "echo: seen");
    let f = result_of(&events, "f");
    assert_eq!(f["is_error"], true);
    assert!(text_of(f).contains("refused by policy"), "{}", text_of(f));
    assert!(!recorded(&rec)
        .iter()
        .any(|m| m["params"]["name"] == "fails"));
}

#[test]
fn rpc_list_tools_and_get_state_show_mcp_servers_and_their_tools() {
    use std::io::{BufRead, Write};
    let sb = Sandbox::new();
    let cfg = config(&sb, &[("fake", server(&[], json!({})))]);
    let s = script(&sb, &[json!({"text": "ok"})]);
    let mut child = zut(&sb)
        .args(["--no-extensions", "--mcp-config", &cfg])
        .args(["--provider", "script", "--script", &s, "--mode", "rpc"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = |pred: &dyn Fn(&Value) -> bool| -> Value {
        for l in lines.by_ref() {
            let v: Value = serde_json::from_str(&l.unwrap()).unwrap();
            if pred(&v) {
                return v;
            }
        }
        panic!("zut ended first");
    };
    // A prompt's first request waits for the server; after it, it is ready.
    writeln!(stdin, r#"{{"id":"p","type":"prompt","message":"hi"}}"#).unwrap();
    next(&|v| v["type"] == "done");
    writeln!(stdin, r#"{{"id":"t","type":"list_tools"}}"#).unwrap();
    let tools = next(&|v| v["id"] == "t");
    let echo = tools["data"]
        .as_array()
        .or(tools["data"]["tools"].as_array())
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__fake__echo")
        .unwrap_or_else(|| panic!("{tools:#}"))
        .clone();
    assert_eq!(echo["extension"], "mcp:fake");
    writeln!(stdin, r#"{{"id":"s","type":"get_state"}}"#).unwrap();
    let state = next(&|v| v["id"] == "s");
    let ext = state["data"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "mcp:fake")
        .unwrap_or_else(|| panic!("{state:#}"))
        .clone();
    assert_eq!(
        (ext["source"].as_str(), ext["running"].as_bool()),
        (Some("mcp"), Some(true))
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
