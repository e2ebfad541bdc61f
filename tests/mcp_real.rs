//! Real MCP servers through the real binary: the reference
//! `@modelcontextprotocol/server-everything` (npm) and `mcp-server-time`
//! (PyPI), installed by `.ci/mcp-servers` into `$ZUT_MCP_CACHE` (default
//! `$HOME/.cache/zut-ci/mcp`). Where one is missing (no registry reachable)
//! its test prints a loud SKIPPED line and passes.

mod support;

use serde_json::{json, Value};
use std::path::PathBuf;
use support::*;

fn cache() -> PathBuf {
    match std::env::var_os("ZUT_MCP_CACHE") {
        Some(c) if !c.is_empty() => PathBuf::from(c),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/zut-ci/mcp"),
    }
}

/// The `mcpServers` entry of a real server, if it is installed.
fn installed(name: &str) -> Option<Value> {
    let c = cache();
    let entry = match name {
        "everything" => {
            let js =
                c.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
            js.is_file()
                .then(|| json!({"command": "node", "args": [js.display().to_string()]}))
        }
        "time" => c.join("py/mcp_server_time").is_dir().then(|| {
            json!({"command": "python3",
                   "args": ["-m", "mcp_server_time", "--local-timezone", "Europe/Berlin"],
                   "env": {"PYTHONPATH": c.join("py").display().to_string()}})
        }),
        _ => None,
    };
    if entry.is_none() {
        loud(&format!(
            "SKIPPED: the MCP server {name} is not installed in {} (offline?); run .ci/mcp-servers",
            cache().display()
        ));
    }
    entry
}

/// Writes past the test harness's capture, so a skip shows in every run.
fn loud(line: &str) {
    use std::io::Write;
    match std::fs::OpenOptions::new().write(true).open("/dev/stderr") {
        Ok(mut f) => {
            let _ = writeln!(f, "{line}");
        }
        Err(_) => eprintln!("{line}"),
    }
}

fn config(sb: &Sandbox, servers: Value) -> String {
    let path = sb.path("real-mcp.json");
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).unwrap();
    path.display().to_string()
}

fn result<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == id)
        .unwrap_or_else(|| panic!("no tool_result {id}: {events:#?}"))
}

fn text(r: &Value) -> String {
    r["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn server_everything_tools_results_progress_and_roots() {
    let Some(mut everything) = installed("everything") else {
        return;
    };
    everything["deferred"] = json!(false);
    let sb = Sandbox::new();
    let cfg = config(&sb, json!({"everything": everything}));
    let calls = json!({"tool_calls": [
        {"id": "echo", "name": "mcp__everything__echo", "args": {"message": "hi"}},
        {"id": "sum", "name": "mcp__everything__get-sum", "args": {"a": 2, "b": 3}},
        {"id": "img", "name": "mcp__everything__get-tiny-image", "args": {}},
        {"id": "long", "name": "mcp__everything__trigger-long-running-operation", "args": {"duration": 1, "steps": 3}},
        {"id": "roots", "name": "mcp__everything__get-roots-list", "args": {}},
        {"id": "links", "name": "mcp__everything__get-resource-links", "args": {"count": 2}}
    ]});
    let (out, _) = run_scripted(
        &sb,
        &[],
        &[calls, json!({"text": "done"})],
        &[
            "--no-extensions",
            "--mcp-config",
            &cfg,
            "--mode",
            "json",
            "go",
        ],
    );
    let events = json_lines(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    assert!(events
        .iter()
        .any(|e| e["type"] == "ext_loaded" && e["extension"] == "mcp:everything"));
    assert_eq!(text(result(&events, "echo")), "Echo: hi");
    assert!(text(result(&events, "sum")).contains('5'));
    let img = result(&events, "img");
    assert!(img["content"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["type"] == "image" && b["mime_type"] == "image/png"));
    let progress = events
        .iter()
        .filter(|e| e["type"] == "tool_progress" && e["id"] == "long")
        .count();
    assert!(progress >= 1, "{events:#?}");
    assert!(!result(&events, "long")["is_error"].as_bool().unwrap());
    let roots = text(result(&events, "roots"));
    assert!(roots.contains("file://"), "{roots}");
    assert!(text(result(&events, "links")).contains("resource link"));
}

#[test]
fn mcp_server_time_is_found_by_tool_search_and_called() {
    let Some(time) = installed("time") else {
        return;
    };
    let sb = Sandbox::new();
    let cfg = config(&sb, json!({"time": time}));
    let (out, requests) = run_scripted(
        &sb,
        &[],
        &[
            json!({"tool_calls": [{"id": "q", "name": "tool_search", "args": {"query": "current time"}}]}),
            json!({"tool_calls": [{"id": "t", "name": "mcp__time__get_current_time", "args": {"timezone": "Asia/Tokyo"}}]}),
            json!({"text": "done"}),
        ],
        &[
            "--no-extensions",
            "--mcp-config",
            &cfg,
            "--mode",
            "json",
            "go",
        ],
    );
    let events = json_lines(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    assert!(text(result(&events, "q")).contains("mcp__time__get_current_time"));
    let names: Vec<&str> = requests[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mcp__time__get_current_time"), "{names:?}");
    let t = text(result(&events, "t"));
    assert!(t.contains("Asia/Tokyo") && t.contains("datetime"), "{t}");
}

#[test]
fn zut_mcp_doctor_checks_both_real_servers() {
    let (Some(everything), Some(time)) = (installed("everything"), installed("time")) else {
        return;
    };
    let sb = Sandbox::new();
    std::fs::write(
        sb.home().join("mcp.json"),
        json!({"mcpServers": {"everything": everything, "time": time}}).to_string(),
    )
    .unwrap();
    let out = zut(&sb).args(["mcp", "doctor", "--json"]).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    for s in doc["servers"].as_array().unwrap() {
        assert_eq!(s["ok"], true, "{s:#}");
        assert!(!s["tools"].as_array().unwrap().is_empty());
    }
}
