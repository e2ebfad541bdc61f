//! An MCP `tools/call` result as zut content blocks.
//!
//! `text` → text, `image` → image; `audio`, `resource_link` and `resource`
//! become a text line naming them (an embedded text resource inline);
//! `structuredContent` as JSON text when `content` is empty; `isError` →
//! `is_error`.

use serde_json::Value;
use zut_ext::wire::ContentBlock;

/// Maps a `tools/call` result; the bool is `is_error`.
pub fn map_result(result: &Value) -> (Vec<ContentBlock>, bool) {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut blocks = Vec::new();
    for item in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        blocks.push(map_block(item));
    }
    if blocks.is_empty() {
        if let Some(s) = result.get("structuredContent").filter(|v| !v.is_null()) {
            blocks.push(text(s.to_string()));
        }
    }
    (blocks, is_error)
}

fn text(t: String) -> ContentBlock {
    ContentBlock::Text { text: t }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn map_block(item: &Value) -> ContentBlock {
    match s(item, "type") {
        "text" => text(s(item, "text").to_string()),
        "image" => ContentBlock::Image {
            mime_type: s(item, "mimeType").to_string(),
            data: s(item, "data").to_string(),
        },
        "audio" => text(format!(
            "[audio {}, {} bytes of base64 not shown]",
            or(s(item, "mimeType"), "of unknown type"),
            s(item, "data").len()
        )),
        "resource_link" => {
            let uri = s(item, "uri");
            let name = or(s(item, "name"), uri);
            let mut line = format!("[resource link {name}");
            if !uri.is_empty() && uri != name {
                line.push_str(&format!(" <{uri}>"));
            }
            let d = s(item, "description");
            if !d.is_empty() {
                line.push_str(&format!(": {d}"));
            }
            line.push(']');
            text(line)
        }
        "resource" => {
            let r = item.get("resource").unwrap_or(&Value::Null);
            let uri = s(r, "uri");
            match r.get("text").and_then(Value::as_str) {
                Some(t) => text(format!("[resource {uri}]\n{t}")),
                None => text(format!(
                    "[resource {uri} ({}, binary, {} bytes of base64 not shown)]",
                    or(s(r, "mimeType"), "unknown type"),
                    s(r, "blob").len()
                )),
            }
        }
        other => text(format!("[content of type {other:?} not shown]")),
    }
}

fn or<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_content_type_maps() {
        let (b, err) = map_result(&json!({"content":[
            {"type":"text","text":"hi"},
            {"type":"image","mimeType":"image/png","data":"AAAA"},
            {"type":"audio","mimeType":"audio/wav","data":"AAAA"},
            {"type":"resource_link","uri":"file:///a","name":"a"},
            {"type":"resource","resource":{"uri":"file:///b","text":"body"}},
        ],"isError":true}));
        assert!(err);
        assert_eq!(b[0], text("hi".into()));
        assert!(matches!(&b[1], ContentBlock::Image{mime_type,..} if mime_type=="image/png"));
        assert!(matches!(&b[2], ContentBlock::Text{text} if text.contains("audio/wav")));
        assert!(matches!(&b[3], ContentBlock::Text{text} if text.contains("file:///a")));
        assert!(matches!(&b[4], ContentBlock::Text{text} if text.ends_with("\nbody")));
        let (b, err) = map_result(&json!({"content":[],"structuredContent":{"x":1}}));
        assert!(!err);
        assert_eq!(b, vec![text("{\"x\":1}".into())]);
    }
}
