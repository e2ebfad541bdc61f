//! The scripted provider (`--provider script`; its format is documented in zut(1), PROVIDERS).
//!
//! A real provider that replays a JSON-lines script instead of calling a
//! model, so extensions, tools and intercepts can be exercised end to end
//! without a network. Each request consumes the next script entry:
//!
//! ```text
//! {"text":"Hello"}                                   final answer
//! {"tool_calls":[{"id":"c1","name":"weather","args":{"city":"Berlin"}}]}
//! {"text":"Let me check.","tool_calls":[…]}          both
//! {"echo":true}              the text of the last user message with text
//! {"error":"overloaded"}     fails with ProviderError::Model("overloaded")
//! {"delay_ms":500,"text":"…"}  answers after a cancellable delay
//! {"thinking":"…","text":"…"}   thinking streamed (and kept) before the text
//! {"usage":{"input_tokens":10,"output_tokens":2,"cache_read_tokens":0,"cache_write_tokens":0}}
//! {"chunks":["He","llo"],"chunk_delay_ms":20}   text in these deltas
//! ```
//!
//! Invariants: the whole script is parsed at construction, so a bad line
//! fails before any request (naming file and line); blank lines are
//! skipped; a tool call without `id` gets a `call_<n>` unique in the
//! transcript, one without `args` gets `{}`; text arrives as one delta; the
//! stop is `tool_use` exactly when there are tool calls. After the last
//! entry every request fails with `script exhausted`. With `--script-log`,
//! every request received (error and exhausted ones too) is appended as one
//! compact JSON line, flushed, before it is answered.

use super::{
    Block, CallIds, Message, Provider, ProviderError, Request, Response, Role, Settings,
    StopReason, StreamEvent, ToolCall, ToolDef, Usage,
};
use crate::cancel::CancelToken;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The keys a script entry may have; an entry needs at least one.
const ENTRY_KEYS: [&str; 8] = [
    "text",
    "tool_calls",
    "echo",
    "error",
    "delay_ms",
    "thinking",
    "usage",
    "chunks",
];

/// The scripted provider.
pub struct Script {
    entries: Vec<Entry>,
    next: usize,
    log: Option<PathBuf>,
    model: String,
    pricing: super::usage::Pricing,
}

/// One script line.
#[derive(Debug, Clone, Default, Deserialize)]
struct Entry {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<EntryCall>>,
    #[serde(default)]
    echo: bool,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    delay_ms: Option<u64>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    /// Replaces `text`: the answer is these joined, one delta each.
    #[serde(default)]
    chunks: Option<Vec<String>>,
    #[serde(default)]
    chunk_delay_ms: Option<u64>,
}

/// One tool call of a script line.
#[derive(Debug, Clone, Deserialize)]
struct EntryCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    args: Option<Value>,
}

/// One `--script-log` line, fields in this order.
#[derive(Serialize)]
struct LogLine<'a> {
    step: u32,
    system: &'a str,
    messages: &'a [Message],
    tools: &'a [ToolDef],
    hidden_context: &'a [String],
}

impl Script {
    /// Reads and checks the whole script named by `--script`.
    pub fn new(settings: &Settings) -> Result<Self, ProviderError> {
        let path = settings.script.as_deref().ok_or_else(|| {
            ProviderError::Config("the script provider needs --script FILE".to_string())
        })?;
        let text = std::fs::read_to_string(path).map_err(|e| {
            ProviderError::Config(format!("cannot read the script {}: {e}", path.display()))
        })?;
        Ok(Script {
            entries: parse_script(path, &text)?,
            next: 0,
            log: settings.script_log.clone(),
            model: settings
                .model
                .clone()
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "script".to_string()),
            pricing: settings.pricing.clone(),
        })
    }

    /// Appends the request to `--script-log`, if set.
    fn log_request(&self, req: &Request<'_>) -> Result<(), ProviderError> {
        let Some(path) = &self.log else {
            return Ok(());
        };
        let line = LogLine {
            step: req.step,
            system: req.system,
            messages: req.messages,
            tools: req.tools,
            hidden_context: req.hidden_context,
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| log_error(path, &e))?;
        // Streamed into the file: a large transcript is not copied into
        // one string first.
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, file);
        serde_json::to_writer(&mut out, &line).map_err(|e| log_error(path, &e))?;
        out.write_all(b"\n")
            .and_then(|()| out.flush())
            .map_err(|e| log_error(path, &e))
    }
}

fn log_error(path: &Path, e: &dyn std::fmt::Display) -> ProviderError {
    ProviderError::Config(format!(
        "cannot write the script log {}: {e}",
        path.display()
    ))
}

/// Parses every non-blank line; the first bad one is an error naming the
/// file and its 1-based line number.
fn parse_script(path: &Path, text: &str) -> Result<Vec<Entry>, ProviderError> {
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry = parse_entry(line).map_err(|e| {
            ProviderError::Config(format!("script {} line {}: {e}", path.display(), i + 1))
        })?;
        entries.push(entry);
    }
    Ok(entries)
}

fn parse_entry(line: &str) -> Result<Entry, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let Some(object) = value.as_object() else {
        return Err("expected a JSON object".to_string());
    };
    if !ENTRY_KEYS.iter().any(|k| object.contains_key(*k)) {
        return Err(format!("expected one of {}", ENTRY_KEYS.join(", ")));
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// The concatenated text blocks of the last user message that has text.
fn echo_text(messages: &[Message]) -> String {
    let texts = |m: &Message| -> Vec<String> {
        m.content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.clone()),
                _ => None,
            })
            .collect()
    };
    messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::User)
        .map(texts)
        .find(|t| !t.is_empty())
        .map(|t| t.concat())
        .unwrap_or_default()
}

/// The entry's tool calls with ids and args filled in.
fn tool_calls(entry: &Entry, messages: &[Message]) -> Vec<ToolCall> {
    let calls = entry.tool_calls.as_deref().unwrap_or_default();
    let mut ids = CallIds::after(messages);
    for id in calls.iter().filter_map(|c| c.id.as_deref()) {
        ids.reserve(id);
    }
    calls
        .iter()
        .map(|c| ToolCall {
            id: c.id.clone().unwrap_or_else(|| ids.fresh()),
            name: c.name.clone(),
            args: c
                .args
                .clone()
                .unwrap_or_else(|| Value::Object(Default::default())),
            invalid_args: None,
        })
        .collect()
}

impl Provider for Script {
    fn name(&self) -> &str {
        "script"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn model_info(&self) -> Option<super::usage::ModelInfo> {
        self.pricing.info(&self.model)
    }

    fn list_models(&mut self) -> Result<Vec<String>, ProviderError> {
        Ok(vec![self.model.clone()])
    }

    fn complete(
        &mut self,
        req: &Request<'_>,
        on_event: &mut dyn FnMut(StreamEvent<'_>),
        cancel: &CancelToken,
    ) -> Result<Response, ProviderError> {
        self.log_request(req)?;
        let Some(entry) = self.entries.get(self.next).cloned() else {
            return Err(ProviderError::Model("script exhausted".to_string()));
        };
        self.next += 1;
        if let Some(ms) = entry.delay_ms {
            if !cancel.sleep(Duration::from_millis(ms)) {
                return Err(ProviderError::Aborted);
            }
        }
        if cancel.is_cancelled() {
            return Err(ProviderError::Aborted);
        }
        if let Some(message) = entry.error {
            return Err(ProviderError::Model(message));
        }
        let mut thinking = Vec::new();
        if let Some(t) = entry.thinking.as_deref().filter(|t| !t.is_empty()) {
            on_event(StreamEvent::ThinkingDelta(t));
            thinking.push(Block::Thinking {
                thinking: t.to_string(),
                signature: String::new(),
            });
        }
        let text = if let Some(chunks) = &entry.chunks {
            let pause = Duration::from_millis(entry.chunk_delay_ms.unwrap_or(0));
            for (i, chunk) in chunks.iter().enumerate() {
                if i > 0 && !pause.is_zero() && !cancel.sleep(pause) {
                    return Err(ProviderError::Aborted);
                }
                if !chunk.is_empty() {
                    on_event(StreamEvent::TextDelta(chunk));
                }
            }
            chunks.concat()
        } else if entry.echo {
            echo_text(req.messages)
        } else {
            entry.text.clone().unwrap_or_default()
        };
        if entry.chunks.is_none() && !text.is_empty() {
            on_event(StreamEvent::TextDelta(&text));
        }
        let tool_calls = tool_calls(&entry, req.messages);
        let stop = if tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        };
        Ok(Response {
            thinking,
            text,
            tool_calls,
            stop,
            usage: entry.usage.unwrap_or_default(),
        })
    }
}
