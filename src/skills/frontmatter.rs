//! The `SKILL.md` reader: an optional frontmatter block between `---` lines,
//! then a markdown body.
//!
//! The frontmatter is a small, documented subset of YAML, read by hand so
//! that zut needs no YAML crate:
//! - top-level `key: value` lines; values may be plain, `"double"` (with
//!   `\"`, `\\`, `\n`, `\t` escapes) or `'single'` (`''` is a quote);
//! - inline lists `[a, "b, c", d]` and block lists (indented `- item` lines
//!   under `key:`);
//! - one level of nested map under `permissions:` (`tool: [patterns]`, or
//!   `tool:` followed by a deeper block list);
//! - `|` and `>` block scalars (their indented lines, kept or folded), which
//!   skills written for other tools use for long descriptions;
//! - `#` comments on their own line or after a value outside quotes;
//! - unknown keys are ignored, together with anything indented under them.
//!
//! Invariant: [`parse`] never panics on any input; anything it cannot read
//! is an [`Error`] naming the line, and the caller skips the whole file.

use std::fmt;

/// What a `SKILL.md` says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Doc {
    pub name: Option<String>,
    pub description: Option<String>,
    /// `disable-model-invocation: true`: only `/skill:NAME` runs it.
    pub disable_model_invocation: bool,
    /// Informational: tools the skill means to use.
    pub allowed_tools: Vec<String>,
    /// Informational: per-tool patterns, in file order.
    pub permissions: Vec<(String, Vec<String>)>,
    /// Everything after the frontmatter, trimmed.
    pub body: String,
}

/// Why a file could not be read as a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// 1-based line in the file, when one is at fault.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(n) => write!(f, "line {n}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

fn err(line: usize, message: impl Into<String>) -> Error {
    Error {
        line: Some(line),
        message: message.into(),
    }
}

/// Parses a whole `SKILL.md`.
pub fn parse(text: &str) -> Result<Doc, Error> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.lines().collect();
    // The frontmatter opens on the first non-blank line.
    let Some(open) = lines.iter().position(|l| !l.trim().is_empty()) else {
        return Ok(Doc::default());
    };
    if lines[open].trim_end() != "---" {
        return Ok(Doc {
            body: text.trim().to_string(),
            ..Doc::default()
        });
    }
    let close = lines[open + 1..]
        .iter()
        .position(|l| l.trim_end() == "---")
        .map(|i| open + 1 + i)
        .ok_or_else(|| {
            err(
                open + 1,
                "the frontmatter opened with --- is never closed by another --- line",
            )
        })?;
    let mut doc = header(&lines[open + 1..close], open + 2)?;
    doc.body = lines[close + 1..].join("\n").trim().to_string();
    Ok(doc)
}

/// One frontmatter line with its 1-based number and indentation.
struct Line<'a> {
    no: usize,
    indent: usize,
    text: &'a str,
}

/// Reads the lines between the `---` markers; `first` is the file line
/// number of `lines[0]`.
fn header(lines: &[&str], first: usize) -> Result<Doc, Error> {
    let mut items: Vec<Line<'_>> = Vec::new();
    for (i, raw) in lines.iter().enumerate() {
        let no = first + i;
        if raw[..raw.len() - raw.trim_start().len()].contains('\t') {
            return Err(err(no, "tabs cannot indent YAML; use spaces"));
        }
        let trimmed = raw.trim();
        items.push(Line {
            no,
            indent: raw.len() - raw.trim_start().len(),
            text: trimmed,
        });
    }
    let mut doc = Doc::default();
    let mut i = 0;
    while i < items.len() {
        let line = &items[i];
        if line.text.is_empty() || line.text.starts_with('#') {
            i += 1;
            continue;
        }
        if line.indent > 0 {
            return Err(err(line.no, "indented line without a key above it"));
        }
        let (key, rest) = split_key(line.text).ok_or_else(|| {
            err(
                line.no,
                format!("expected \"key: value\", found {:?}", line.text),
            )
        })?;
        // The lines indented under this key.
        let start = i + 1;
        let mut end = start;
        while end < items.len() && (items[end].indent > 0 || items[end].text.is_empty()) {
            end += 1;
        }
        let nested = &items[start..end];
        let value = strip_comment(rest);
        match key {
            "name" => doc.name = Some(scalar(value, nested, line.no)?),
            "description" => doc.description = Some(scalar(value, nested, line.no)?),
            "disable-model-invocation" | "disable_model_invocation" => {
                doc.disable_model_invocation = boolean(&scalar(value, nested, line.no)?)
                    .ok_or_else(|| err(line.no, format!("{key} must be true or false")))?;
            }
            "allowed-tools" | "allowed_tools" => {
                doc.allowed_tools = list(value, nested, line.no, true)?;
            }
            "permissions" => doc.permissions = permissions(value, nested, line.no)?,
            _ => {}
        }
        i = end;
    }
    Ok(doc)
}

/// `key: rest` with a plain key; `None` when the line is not one.
fn split_key(text: &str) -> Option<(&str, &str)> {
    let (key, rest) = match text.split_once(':') {
        Some((k, r)) if r.is_empty() || r.starts_with(' ') => (k, r),
        _ => return None,
    };
    let key = key.trim_end();
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
    plain.then_some((key, rest.trim()))
}

/// Cuts a ` #` comment that is outside quotes.
fn strip_comment(value: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev_space = true;
    for (i, c) in value.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') if prev_space || i == 0 => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if prev_space => return value[..i].trim_end(),
            _ => {}
        }
        prev_space = c == ' ' || c == '[' || c == ',';
    }
    value
}

/// A scalar value: inline, or a `|` / `>` block of the nested lines.
fn scalar(value: &str, nested: &[Line<'_>], no: usize) -> Result<String, Error> {
    let block = value.trim_end_matches(['-', '+']);
    if block == "|" || block == ">" {
        let parts: Vec<&str> = nested.iter().map(|l| l.text).collect();
        let text = if block == "|" {
            parts.join("\n")
        } else {
            fold(&parts)
        };
        return Ok(text.trim().to_string());
    }
    if let Some(extra) = nested
        .iter()
        .find(|l| !l.text.is_empty() && !l.text.starts_with('#'))
    {
        // A plain multi-line scalar: YAML folds its continuation lines.
        if value.starts_with(['"', '\'', '[']) || extra.text.starts_with("- ") {
            return Err(err(
                extra.no,
                "unexpected indented line under a single value",
            ));
        }
        let mut parts = vec![value];
        parts.extend(nested.iter().map(|l| l.text));
        return Ok(fold(&parts).trim().to_string());
    }
    unquote(value, no)
}

/// `>` folding: lines joined by spaces, blank lines kept as breaks.
fn fold(parts: &[&str]) -> String {
    let mut out = String::new();
    for p in parts {
        if p.is_empty() {
            out.push('\n');
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(p);
        }
    }
    out
}

/// Removes matching quotes (and resolves escapes in double quotes).
fn unquote(value: &str, no: usize) -> Result<String, Error> {
    let value = value.trim();
    let Some(first) = value.chars().next() else {
        return Ok(String::new());
    };
    if first != '"' && first != '\'' {
        return Ok(value.to_string());
    }
    let inner = &value[1..];
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match (first, c) {
            ('"', '\\') => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(e @ ('"' | '\\' | '/')) => out.push(e),
                Some(e) => {
                    return Err(err(no, format!("unknown escape \\{e} in a quoted value")));
                }
                None => break,
            },
            ('\'', '\'') => {
                let mut rest = chars.clone();
                if rest.next() == Some('\'') {
                    out.push('\'');
                    chars = rest;
                } else {
                    return finish_quoted(out, chars.as_str(), no);
                }
            }
            ('"', '"') => return finish_quoted(out, chars.as_str(), no),
            _ => out.push(c),
        }
    }
    Err(err(no, format!("unterminated {first} quote")))
}

fn finish_quoted(out: String, rest: &str, no: usize) -> Result<String, Error> {
    if rest.trim().is_empty() {
        Ok(out)
    } else {
        Err(err(
            no,
            format!("unexpected text after a quoted value: {rest:?}"),
        ))
    }
}

/// Splits an inline list `[a, "b", c]` into unquoted items.
fn inline_list(value: &str, no: usize) -> Result<Vec<String>, Error> {
    let inner = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .ok_or_else(|| err(no, format!("unterminated inline list {value:?}")))?;
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in inner.chars() {
        match (quote, c) {
            (None, '"' | '\'') if current.trim().is_empty() => {
                quote = Some(c);
                current.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (None, ',') => {
                items.push(unquote(&current, no)?);
                current.clear();
            }
            (None, '[' | ']') => return Err(err(no, "nested lists are not supported")),
            _ => current.push(c),
        }
    }
    if quote.is_some() {
        return Err(err(no, "unterminated quote in an inline list"));
    }
    if !current.trim().is_empty() || !items.is_empty() {
        items.push(unquote(&current, no)?);
    }
    Ok(items.into_iter().filter(|s| !s.is_empty()).collect())
}

/// A list value: inline `[…]`, a block of `- item` lines, or (when
/// `comma_scalar`) a comma-separated plain value (`Read, Grep`).
fn list(
    value: &str,
    nested: &[Line<'_>],
    no: usize,
    comma_scalar: bool,
) -> Result<Vec<String>, Error> {
    let meaningful: Vec<&Line<'_>> = nested
        .iter()
        .filter(|l| !l.text.is_empty() && !l.text.starts_with('#'))
        .collect();
    if !value.is_empty() {
        if let Some(extra) = meaningful.first() {
            return Err(err(extra.no, "a list given inline cannot continue below"));
        }
        if value.starts_with('[') {
            return inline_list(value, no);
        }
        let one = unquote(value, no)?;
        if comma_scalar && !value.starts_with(['"', '\'']) {
            return Ok(one
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect());
        }
        return Ok(vec![one]);
    }
    meaningful
        .iter()
        .map(|l| {
            let item = l
                .text
                .strip_prefix('-')
                .filter(|r| r.is_empty() || r.starts_with(' '))
                .ok_or_else(|| err(l.no, format!("expected \"- item\", found {:?}", l.text)))?;
            unquote(strip_comment(item.trim()), l.no)
        })
        .collect()
}

/// `permissions:` as a one-level map of tool → patterns.
fn permissions(
    value: &str,
    nested: &[Line<'_>],
    no: usize,
) -> Result<Vec<(String, Vec<String>)>, Error> {
    if !value.is_empty() && value != "{}" {
        return Err(err(no, "permissions must be a map of tool: [patterns]"));
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < nested.len() {
        let l = &nested[i];
        if l.text.is_empty() || l.text.starts_with('#') {
            i += 1;
            continue;
        }
        let (tool, rest) = split_key(l.text).ok_or_else(|| {
            err(
                l.no,
                format!(
                    "expected \"tool: [patterns]\" under permissions, found {:?}",
                    l.text
                ),
            )
        })?;
        let start = i + 1;
        let mut end = start;
        while end < nested.len() && (nested[end].indent > l.indent || nested[end].text.is_empty()) {
            end += 1;
        }
        let patterns = list(strip_comment(rest), &nested[start..end], l.no, false)?;
        out.push((tool.to_string(), patterns));
        i = end;
    }
    Ok(out)
}

fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Doc {
        parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn no_frontmatter_is_all_body() {
        let d = ok("\n# Title\n\nDo things.\n");
        assert_eq!(d.body, "# Title\n\nDo things.");
        assert_eq!(d.name, None);
        assert_eq!(ok(""), Doc::default());
    }

    #[test]
    fn full_documented_example() {
        let d = ok(concat!(
            "---\n",
            "name: code-review\n",
            "description: Run a thorough self-review pass on a recent change.\n",
            "allowed-tools: [read, bash]\n",
            "permissions:\n",
            "  bash: [\"git diff*\", \"git log*\"]\n",
            "---\n",
            "\n",
            "# Code review\n",
            "\n",
            "When asked to review code, ...\n",
        ));
        assert_eq!(d.name.as_deref(), Some("code-review"));
        assert_eq!(
            d.description.as_deref(),
            Some("Run a thorough self-review pass on a recent change.")
        );
        assert_eq!(d.allowed_tools, ["read", "bash"]);
        assert_eq!(
            d.permissions,
            [(
                "bash".to_string(),
                vec!["git diff*".to_string(), "git log*".to_string()]
            )]
        );
        assert!(!d.disable_model_invocation);
        assert_eq!(d.body, "# Code review\n\nWhen asked to review code, ...");
    }

    #[test]
    fn quotes_comments_and_block_lists() {
        let d = ok(concat!(
            "\u{feff}---\n",
            "# a comment line\n",
            "name: \"quoted # not a comment\"  # a comment\n",
            "description: 'it''s: fine' \n",
            "disable_model_invocation: True\n",
            "allowed_tools:\n",
            "  - read   # first\n",
            "  # between\n",
            "  - \"grep\"\n",
            "permissions:\n",
            "  bash:\n",
            "    - 'git *'\n",
            "  read: []\n",
            "unknown:\n",
            "  deep:\n",
            "    - whatever: [x\n",
            "---\n",
            "body\n",
        ));
        assert_eq!(d.name.as_deref(), Some("quoted # not a comment"));
        assert_eq!(d.description.as_deref(), Some("it's: fine"));
        assert!(d.disable_model_invocation);
        assert_eq!(d.allowed_tools, ["read", "grep"]);
        assert_eq!(
            d.permissions,
            [
                ("bash".to_string(), vec!["git *".to_string()]),
                ("read".to_string(), vec![])
            ]
        );
        assert_eq!(d.body, "body");
    }

    #[test]
    fn escapes_block_scalars_and_comma_lists() {
        let d = ok(concat!(
            "---\n",
            "name: x\n",
            "description: >-\n",
            "  Long text\n",
            "  folded here.\n",
            "allowed-tools: Read, Grep , Glob\n",
            "---\n",
            "b",
        ));
        assert_eq!(d.description.as_deref(), Some("Long text folded here."));
        assert_eq!(d.allowed_tools, ["Read", "Grep", "Glob"]);
        let d = ok("---\ndescription: |\n  one\n  two\n---\n");
        assert_eq!(d.description.as_deref(), Some("one\ntwo"));
        let d = ok("---\ndescription: \"a \\\"q\\\"\\nnext\"\n---\n");
        assert_eq!(d.description.as_deref(), Some("a \"q\"\nnext"));
        let d = ok("---\ndescription: plain\n  continued\n---\n");
        assert_eq!(d.description.as_deref(), Some("plain continued"));
        let d = ok("---\ndisable-model-invocation: false\n---\nx");
        assert!(!d.disable_model_invocation);
    }

    #[test]
    fn malformed_files_name_the_line() {
        for (text, line, needle) in [
            ("---\nname: x\n", Some(1), "never closed"),
            ("---\nname x\n---\n", Some(2), "key: value"),
            ("---\nname: \"open\n---\n", Some(2), "unterminated"),
            (
                "---\nallowed-tools: [a, b\n---\n",
                Some(2),
                "unterminated inline list",
            ),
            (
                "---\ndisable-model-invocation: maybe\n---\n",
                Some(2),
                "true or false",
            ),
            ("---\n  name: x\n---\n", Some(2), "indented"),
            ("---\nallowed-tools:\n  read\n---\n", Some(3), "- item"),
            ("---\nname: \"a\" b\n---\n", Some(2), "after a quoted"),
            ("---\npermissions: yes\n---\n", Some(2), "map"),
            ("---\nallowed-tools: [a, [b]]\n---\n", Some(2), "nested"),
            ("---\nname: 'x'\n  - y\n---\n", Some(3), "indented line"),
            ("---\n\tname: x\n---\n", Some(2), "tabs"),
        ] {
            let e = parse(text).expect_err(text);
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        for text in [
            "---",
            "---\n---",
            "---\n:\n---",
            "---\n\"\n---",
            "---\na: '\n---",
            "---\na: [\"]\n---",
            "---\na: \"\\\n---",
            "---\n- x\n---",
            "---\na: é'ü\n---",
            "---\npermissions:\n  - x\n---",
        ] {
            let _ = parse(text);
        }
        assert_eq!(ok("---\n---\nbody").body, "body");
    }
}
