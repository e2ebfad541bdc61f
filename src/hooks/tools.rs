//! Tool names and inputs in Claude Code's shapes, and `updatedInput` back.

use serde_json::{json, Map, Value};
use std::path::Path;

fn abs(cwd: &Path, p: &Value) -> Value {
    match p.as_str() {
        Some(s) => Value::String(cwd.join(s).display().to_string()),
        None => p.clone(),
    }
}

/// zut's tool name and arguments → Claude Code's name and `tool_input`.
pub fn to_claude(name: &str, args: &Value, cwd: &Path) -> (String, Value) {
    let get = |k: &str| args.get(k).cloned().unwrap_or(Value::Null);
    match name {
        "bash" => {
            let mut m = Map::new();
            m.insert("command".into(), get("command"));
            if let Some(t) = args.get("timeout").and_then(Value::as_f64) {
                m.insert("timeout".into(), json!((t * 1000.0) as u64));
            }
            ("Bash".into(), Value::Object(m))
        }
        "write" => (
            "Write".into(),
            json!({"file_path": abs(cwd, &get("path")), "content": get("content")}),
        ),
        "edit" => {
            let edits: Vec<Value> = args
                .get("edits")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|e| json!({"old_string": e.get("oldText"), "new_string": e.get("newText")}))
                        .collect()
                })
                .unwrap_or_default();
            let file_path = abs(cwd, &get("path"));
            if edits.len() == 1 {
                let e = &edits[0];
                (
                    "Edit".into(),
                    json!({"file_path": file_path, "old_string": e["old_string"], "new_string": e["new_string"], "replace_all": false}),
                )
            } else {
                (
                    "MultiEdit".into(),
                    json!({"file_path": file_path, "edits": edits}),
                )
            }
        }
        "read" => {
            let mut m = Map::new();
            m.insert("file_path".into(), abs(cwd, &get("path")));
            for k in ["offset", "limit"] {
                if let Some(v) = args.get(k) {
                    m.insert(k.into(), v.clone());
                }
            }
            ("Read".into(), Value::Object(m))
        }
        "grep" => {
            let mut m = Map::new();
            m.insert("pattern".into(), get("pattern"));
            if let Some(v) = args.get("path") {
                m.insert("path".into(), v.clone());
            }
            ("Grep".into(), Value::Object(m))
        }
        _ => (name.to_string(), args.clone()),
    }
}

/// A Claude Code `tool_input` (after `updatedInput`s) → zut's arguments
/// for the tool `name`. Bash's `timeout` in ms becomes whole seconds (≥ 1).
pub fn from_claude(name: &str, input: &Value, original: &Value) -> Value {
    let get = |k: &str| input.get(k).cloned().unwrap_or(Value::Null);
    match name {
        "bash" => {
            let timeout = match input.get("timeout").and_then(Value::as_f64) {
                Some(ms) => json!(((ms / 1000.0).ceil() as u64).max(1)),
                None => original.get("timeout").cloned().unwrap_or(json!(120)),
            };
            json!({"command": get("command"), "timeout": timeout})
        }
        "write" => json!({"path": get("file_path"), "content": get("content")}),
        "edit" => {
            let edits: Vec<Value> = match input.get("edits").and_then(Value::as_array) {
                Some(a) => a
                    .iter()
                    .map(
                        |e| json!({"oldText": e.get("old_string"), "newText": e.get("new_string")}),
                    )
                    .collect(),
                None => vec![json!({"oldText": get("old_string"), "newText": get("new_string")})],
            };
            json!({"path": get("file_path"), "edits": edits})
        }
        "read" | "grep" => {
            let mut m = input.as_object().cloned().unwrap_or_default();
            if let Some(p) = m.remove("file_path") {
                m.insert("path".into(), p);
            }
            Value::Object(m)
        }
        _ => input.clone(),
    }
}

/// `tool_response` for a finished call.
pub fn response(claude_name: &str, input: &Value, text: &str, is_error: bool) -> Value {
    match claude_name {
        "Bash" => {
            json!({"stdout": text, "stderr": "", "interrupted": false, "isImage": false, "is_error": is_error})
        }
        "Write" | "Edit" | "MultiEdit" => {
            json!({"filePath": input.get("file_path"), "success": !is_error, "content": text})
        }
        _ => json!({"content": text, "is_error": is_error}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_both_ways() {
        let cwd = Path::new("/p");
        let (n, i) = to_claude("bash", &json!({"command":"ls","timeout":5}), cwd);
        assert_eq!(
            (n.as_str(), i.clone()),
            ("Bash", json!({"command":"ls","timeout":5000}))
        );
        assert_eq!(
            from_claude(
                "bash",
                &json!({"command":"ls -a","timeout":1500}),
                &json!({})
            ),
            json!({"command":"ls -a","timeout":2})
        );
        let (n, i) = to_claude(
            "edit",
            &json!({"path":"a","edits":[{"oldText":"x","newText":"y"}]}),
            cwd,
        );
        assert_eq!(n, "Edit");
        assert_eq!(i["file_path"], "/p/a");
        let (n, _) = to_claude(
            "edit",
            &json!({"path":"a","edits":[{"oldText":"x","newText":"y"},{"oldText":"z","newText":"w"}]}),
            cwd,
        );
        assert_eq!(n, "MultiEdit");
        assert_eq!(
            from_claude(
                "write",
                &json!({"file_path":"/p/b","content":"c"}),
                &json!({})
            ),
            json!({"path":"/p/b","content":"c"})
        );
        assert_eq!(to_claude("mcp__s__t", &json!({"a":1}), cwd).0, "mcp__s__t");
    }
}
