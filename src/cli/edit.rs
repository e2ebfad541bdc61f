//! Flipping `enabled` in an `extension.json` without touching anything else.
//!
//! `zut ext enable|disable` edit the JSON *text*: a small scanner finds the
//! members of the top-level object; an existing top-level `enabled` value
//! is replaced in place, otherwise `"enabled": false` is inserted after the
//! opening brace in the style of the first member. Every other byte
//! (formatting, key order, escapes, duplicate keys)
//! stays as it was. The result is checked before it is accepted: it must
//! parse, and equal the original with only `enabled` changed.

use serde_json::Value;
use std::ops::Range;

/// A member of the top-level object.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
    key: String,
    /// The key including its quotes.
    key_span: Range<usize>,
    /// The value's text.
    value_span: Range<usize>,
}

/// What [`set_enabled`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The file already says so (an absent `enabled` means enabled).
    Unchanged,
    /// The new text of the file.
    Rewritten(String),
}

/// The text of a manifest with top-level `enabled` set to `enabled`.
pub fn set_enabled(text: &str, enabled: bool) -> Result<Change, String> {
    let original: Value =
        serde_json::from_str(text).map_err(|e| format!("is not valid JSON ({e})"))?;
    let Value::Object(mut expected) = original else {
        return Err("is not a JSON object".into());
    };
    let (open, members) = scan(text)?;
    let current: Vec<&Member> = members.iter().filter(|m| m.key == "enabled").collect();
    let literal = if enabled { "true" } else { "false" };
    let rewritten = if current.is_empty() {
        if enabled {
            return Ok(Change::Unchanged);
        }
        insert_member(text, open, members.first(), literal)
    } else {
        if current
            .iter()
            .all(|m| &text[m.value_span.clone()] == literal)
        {
            return Ok(Change::Unchanged);
        }
        let mut out = text.to_string();
        for m in current.iter().rev() {
            out.replace_range(m.value_span.clone(), literal);
        }
        out
    };
    expected.insert("enabled".into(), Value::Bool(enabled));
    match serde_json::from_str::<Value>(&rewritten) {
        Ok(Value::Object(got)) if got == expected => Ok(Change::Rewritten(rewritten)),
        _ => Err("could not be edited safely; set \"enabled\" by hand".into()),
    }
}

/// Inserts `"enabled": <literal>` right after the opening brace, copying
/// the whitespace before the first key and around its colon.
fn insert_member(text: &str, open: usize, first: Option<&Member>, literal: &str) -> String {
    let after_brace = open + 1;
    let member = match first {
        Some(f) => {
            let lead = &text[after_brace..f.key_span.start];
            let colon = &text[f.key_span.end..f.value_span.start];
            format!("{lead}\"enabled\"{colon}{literal},")
        }
        None => format!("\"enabled\": {literal}"),
    };
    let mut out = String::with_capacity(text.len() + member.len());
    out.push_str(&text[..after_brace]);
    out.push_str(&member);
    out.push_str(&text[after_brace..]);
    out
}

/// Finds the top-level object's opening brace and members. `text` must
/// already be known to be valid JSON.
fn scan(text: &str) -> Result<(usize, Vec<Member>), String> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return Err("is not a JSON object".into());
    }
    let open = i;
    let mut members = Vec::new();
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Ok((open, members));
    }
    loop {
        let key_start = i;
        let key_end = skip_string(b, i)?;
        let key: String = serde_json::from_str(&text[key_start..key_end])
            .map_err(|e| format!("has an unreadable key ({e})"))?;
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return Err("is not a JSON object".into());
        }
        let value_start = skip_ws(b, i + 1);
        let value_end = skip_value(b, value_start)?;
        members.push(Member {
            key,
            key_span: key_start..key_end,
            value_span: value_start..value_end,
        });
        i = skip_ws(b, value_end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Ok((open, members)),
            _ => return Err("is not a JSON object".into()),
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// `i` is at an opening quote; returns the index after the closing one.
fn skip_string(b: &[u8], mut i: usize) -> Result<usize, String> {
    if b.get(i) != Some(&b'"') {
        return Err("is not a JSON object".into());
    }
    i += 1;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 2,
            b'"' => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err("has an unterminated string".into())
}

/// Returns the index after the value starting at `i`.
fn skip_value(b: &[u8], i: usize) -> Result<usize, String> {
    match b.get(i) {
        Some(b'"') => skip_string(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while let Some(&c) = b.get(j) {
                match c {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            Err("has an unterminated value".into())
        }
        Some(_) => {
            let mut j = i;
            while !matches!(
                b.get(j),
                None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            ) {
                j += 1;
            }
            Ok(j)
        }
        None => Err("ends too early".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(text: &str, enabled: bool) -> String {
        match set_enabled(text, enabled).unwrap() {
            Change::Rewritten(t) => t,
            Change::Unchanged => text.to_string(),
        }
    }

    #[test]
    fn replaces_in_place() {
        let t = "{\n    \"name\" :\"a\",\n\t\"enabled\":  true , \"x\":{\"enabled\":true}}\n";
        assert_eq!(
            rewrite(t, false),
            "{\n    \"name\" :\"a\",\n\t\"enabled\":  false , \"x\":{\"enabled\":true}}\n"
        );
        assert_eq!(set_enabled(t, true).unwrap(), Change::Unchanged);
    }

    #[test]
    fn inserts_in_the_first_members_style() {
        assert_eq!(
            rewrite("{\n  \"name\": \"a\"\n}\n", false),
            "{\n  \"enabled\": false,\n  \"name\": \"a\"\n}\n"
        );
        assert_eq!(
            rewrite("{\"name\":\"a\"}", false),
            "{\"enabled\":false,\"name\":\"a\"}"
        );
        assert_eq!(rewrite(" {} ", false), " {\"enabled\": false} ");
        assert_eq!(
            set_enabled("{\"name\":\"a\"}", true).unwrap(),
            Change::Unchanged
        );
    }

    #[test]
    fn odd_values_and_keys() {
        assert_eq!(
            rewrite(
                r#"{"en\u0061bled":null,"s":"}\"{","a":[1,{"b":[]}]}"#,
                false
            ),
            r#"{"en\u0061bled":false,"s":"}\"{","a":[1,{"b":[]}]}"#
        );
        assert_eq!(
            rewrite(r#"{"enabled":false,"n":1,"enabled":"no"}"#, true),
            r#"{"enabled":true,"n":1,"enabled":true}"#
        );
    }

    #[test]
    fn refuses_what_is_not_an_object() {
        assert!(set_enabled("[1]", true).is_err());
        assert!(set_enabled("{", true)
            .unwrap_err()
            .contains("not valid JSON"));
    }
}
