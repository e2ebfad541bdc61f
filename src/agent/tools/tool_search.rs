//! The `tool_search` tool: the model finds deferred tools (every MCP
//! server's by default, and extensions' registered with `deferred`) and
//! activates them for the rest of the session.
//!
//! Offered only while a deferred tool exists. A query matches a tool when
//! the whole query, or any of its words, occurs in the tool's name or
//! description, case-insensitively; tools matching more words come first.
//! The result names each tool exactly as the model must call it.

use super::common::Args;
use super::ToolOutput;
use crate::provider::ToolDef;
use serde_json::{json, Value};

/// The most tools one search returns (and activates).
pub const MAX_RESULTS: usize = 20;

/// The tool's name.
pub const NAME: &str = "tool_search";

/// One deferred tool the search can find.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub name: String,
    pub description: String,
}

/// The definition advertised to the model.
pub fn definition() -> ToolDef {
    ToolDef {
        name: NAME.into(),
        description: "Find more tools: MCP servers' and extensions' tools are not listed until \
                      searched for. Give words describing what you need (for example \
                      \"current time\" or \"github issue\"); the matching tools are activated \
                      and can be called from the next step on, by the names returned."
            .into(),
        schema: json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words to look for in tool names and descriptions"
                }
            },
            "required": ["query"]
        }),
    }
}

/// Runs a search; the output and the names to activate.
pub fn run(args: &Value, candidates: &[Candidate]) -> (ToolOutput, Vec<String>) {
    let args = match Args::new(NAME, args) {
        Ok(a) => a,
        Err(e) => return (e, Vec::new()),
    };
    let query = match args.string("query", "words describing the tool you need") {
        Ok(q) => q.trim().to_string(),
        Err(e) => return (e, Vec::new()),
    };
    if query.is_empty() {
        return (
            args.error("\"query\" is empty: describe the tool you need"),
            Vec::new(),
        );
    }
    let found = search(&query, candidates);
    if found.is_empty() {
        return (
            ToolOutput::text(format!(
                "No tool matches {query:?} ({} tools can be searched). Try other words.",
                candidates.len()
            )),
            Vec::new(),
        );
    }
    let mut text = format!(
        "{} tool(s) found and activated; call them by these names from now on:\n",
        found.len()
    );
    for c in &found {
        let first = c.description.lines().next().unwrap_or("").trim();
        if first.is_empty() {
            text.push_str(&format!("- {}\n", c.name));
        } else {
            text.push_str(&format!("- {}: {first}\n", c.name));
        }
    }
    let names = found.iter().map(|c| c.name.clone()).collect();
    (ToolOutput::text(text.trim_end()), names)
}

/// The candidates matching `query`, best first, at most [`MAX_RESULTS`].
pub fn search<'a>(query: &str, candidates: &'a [Candidate]) -> Vec<&'a Candidate> {
    let q = query.to_lowercase();
    let words: Vec<&str> = q
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let mut scored: Vec<(usize, usize, &Candidate)> = candidates
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let hay = format!("{} {}", c.name, c.description).to_lowercase();
            // Names use `_` where a query has spaces.
            let hay_spaced = hay.replace(['_', '-'], " ");
            let whole = hay.contains(&q) || hay_spaced.contains(&q);
            let hits = words
                .iter()
                .filter(|w| hay.contains(*w) || hay_spaced.contains(*w))
                .count();
            let score = hits + if whole { words.len() + 1 } else { 0 };
            (score > 0).then_some((score, i, c))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(MAX_RESULTS)
        .map(|(_, _, c)| c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, description: &str) -> Candidate {
        Candidate {
            name: name.into(),
            description: description.into(),
        }
    }

    #[test]
    fn matches_words_and_substrings_case_insensitively_best_first() {
        let all = [
            c("mcp__time__convert_time", "Convert a time between zones"),
            c("mcp__time__get_current_time", "Get the current time"),
            c("mcp__git__git_log", "Show commits"),
        ];
        let names =
            |q: &str| -> Vec<String> { search(q, &all).iter().map(|c| c.name.clone()).collect() };
        assert_eq!(names("CURRENT time")[0], "mcp__time__get_current_time");
        assert_eq!(names("current time").len(), 2);
        assert_eq!(names("git_log"), ["mcp__git__git_log"]);
        assert_eq!(names("git log"), ["mcp__git__git_log"]);
        assert!(names("weather").is_empty());
        let (out, act) = run(&json!({"query": "commits"}), &all);
        assert!(!out.is_error);
        assert_eq!(act, ["mcp__git__git_log"]);
        let (out, _) = run(&json!({}), &all);
        assert!(out.is_error);
    }
}
