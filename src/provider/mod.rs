//! Model providers behind one synchronous, streaming trait.
//!
//! The agent loop builds a [`Request`] (system prompt, transcript, tool
//! definitions, hidden per-request context) and a provider turns it into one
//! assistant [`Response`], reporting text as it streams through a callback.
//! Providers never panic on what the network sends: every failure is a
//! [`ProviderError`] that reads as one clear line.
//!
//! Implementations: `anthropic` (Messages API, SSE), `openai` (Chat
//! Completions, SSE; any compatible server through `--base-url`) and `script`
//! (replays a JSON-lines script, logs every request; format in zut(1)).

use crate::cancel::CancelToken;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
pub use zut_ext::wire::ContentBlock;

pub mod anthropic;
mod http;
pub mod openai;
pub mod script;
pub mod sse;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One block of a transcript message. The JSON shape is the normalised one
/// of the scripted provider (`--script-log`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    Image {
        mime_type: String,
        data: String,
    },
    ToolCall {
        id: String,
        name: String,
        args: Value,
    },
    ToolResult {
        call_id: String,
        is_error: bool,
        content: Vec<ContentBlock>,
    },
}

/// One transcript message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub schema: Value,
}

/// Everything one model call needs.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// 1-based model-call number within the current prompt.
    pub step: u32,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolDef],
    /// Extension context injected into this request only (never persisted).
    pub hidden_context: &'a [String],
}

impl Request<'_> {
    /// The system prompt with this request's hidden context appended, the
    /// non-empty parts joined by blank lines. This is what the HTTP
    /// providers send; the transcript itself never holds the context.
    pub fn system_with_context(&self) -> String {
        std::iter::once(self.system)
            .chain(self.hidden_context.iter().map(String::as_str))
            .filter(|part| !part.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// Hands out `call_<n>` ids for tool calls that arrive without one, unique
/// within the conversation. The transcript is only scanned when an id is
/// actually needed, so well-behaved servers cost nothing per request.
pub(crate) struct CallIds<'a> {
    messages: &'a [Message],
    /// Ids the current response supplied itself.
    reserved: Vec<String>,
    /// Built on first use: every id in the transcript and this response.
    used: Option<std::collections::HashSet<String>>,
    next: usize,
}

impl<'a> CallIds<'a> {
    /// Starts after the tool calls of `messages`.
    pub(crate) fn after(messages: &'a [Message]) -> Self {
        CallIds {
            messages,
            reserved: Vec::new(),
            used: None,
            next: 0,
        }
    }

    /// Marks an id the model supplied itself as taken.
    pub(crate) fn reserve(&mut self, id: &str) {
        match &mut self.used {
            Some(used) => {
                used.insert(id.to_string());
            }
            None => self.reserved.push(id.to_string()),
        }
    }

    /// A fresh, unused `call_<n>`.
    pub(crate) fn fresh(&mut self) -> String {
        let messages = self.messages;
        let reserved = &mut self.reserved;
        let next = &mut self.next;
        let used = self.used.get_or_insert_with(|| {
            let mut used: std::collections::HashSet<String> = messages
                .iter()
                .flat_map(|m| &m.content)
                .filter_map(|b| match b {
                    Block::ToolCall { id, .. } => Some(id.clone()),
                    _ => None,
                })
                .collect();
            *next = used.len() + 1;
            used.extend(reserved.drain(..));
            used
        });
        loop {
            let id = format!("call_{}", self.next);
            self.next += 1;
            if used.insert(id.clone()) {
                return id;
            }
        }
    }
}

impl CallIds<'_> {
    /// Assembles a streamed tool call: `json` (the accumulated arguments)
    /// must be a JSON value, empty meaning `{}`; a missing id gets a fresh one.
    pub(crate) fn call(
        &mut self,
        id: String,
        name: String,
        json: &str,
    ) -> Result<ToolCall, ProviderError> {
        let args = if json.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(json).map_err(|e| {
                ProviderError::Protocol(format!(
                    "the arguments of tool call {name:?} are not valid JSON: {e}"
                ))
            })?
        };
        let id = if id.is_empty() {
            self.fresh()
        } else {
            self.reserve(&id);
            id
        };
        Ok(ToolCall { id, name, args })
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    /// The output token limit was reached.
    Length,
    /// The model (or the provider's filter) declined to answer; the
    /// response's text is the refusal, when the provider sent one.
    Refusal,
}

/// Token accounting, when the provider reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// The request's price, when known.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// One complete assistant answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop: StopReason,
    pub usage: Usage,
}

/// Incremental output while a response streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent<'a> {
    TextDelta(&'a str),
}

/// A provider failure, one line for the user.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderError {
    /// Not configured (no key, unknown provider…): says how to fix it.
    Config(String),
    /// The server answered with an error status.
    Http { status: u16, message: String },
    /// Connection, TLS, or a stream cut short.
    Transport(String),
    /// The server sent something we cannot understand.
    Protocol(String),
    /// The provider's own error (script `{"error":…}`, SSE error event).
    Model(String),
    /// The cancel token fired.
    Aborted,
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProviderError::Config(m) => write!(f, "{m}"),
            ProviderError::Http { status, message } => {
                write!(f, "provider returned HTTP {status}: {message}")
            }
            ProviderError::Transport(m) => write!(f, "connection to provider failed: {m}"),
            ProviderError::Protocol(m) => write!(f, "unexpected provider response: {m}"),
            ProviderError::Model(m) => write!(f, "provider error: {m}"),
            ProviderError::Aborted => write!(f, "aborted"),
        }
    }
}

impl std::error::Error for ProviderError {}

/// A model backend.
pub trait Provider: Send {
    /// `anthropic`, `openai` or `script`.
    fn name(&self) -> &str;
    /// The model name sent with requests (may be empty for `script`).
    fn model(&self) -> &str;
    /// Runs one model call. `on_event` sees text deltas as they arrive.
    /// Must return promptly with [`ProviderError::Aborted`] once `cancel` fires.
    fn complete(
        &mut self,
        req: &Request<'_>,
        on_event: &mut dyn FnMut(StreamEvent<'_>),
        cancel: &CancelToken,
    ) -> Result<Response, ProviderError>;
}

/// What the command line and config say about the provider.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `anthropic`, `openai`, `script`.
    pub provider: String,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub script: Option<PathBuf>,
    pub script_log: Option<PathBuf>,
    /// `$ZUT_HOME`, for `auth.json`.
    pub zut_home: PathBuf,
}

/// The providers `--provider` accepts.
pub const NAMES: &[&str] = &["anthropic", "openai", "script"];

/// Builds the provider the settings name.
pub fn create(settings: &Settings) -> Result<Box<dyn Provider>, ProviderError> {
    match settings.provider.as_str() {
        "anthropic" => Ok(Box::new(anthropic::Anthropic::new(settings)?)),
        "openai" => Ok(Box::new(openai::OpenAi::new(settings)?)),
        "script" => Ok(Box::new(script::Script::new(settings)?)),
        "" => Err(ProviderError::Config(
            "no model provider configured: run with --provider anthropic (key in ANTHROPIC_API_KEY), \
             --provider openai (key in OPENAI_API_KEY; --base-url for Ollama or another compatible server), \
             or --provider script --script FILE; zut remembers the last provider in $ZUT_HOME/config.json"
                .into(),
        )),
        other => Err(ProviderError::Config(format!(
            "unknown provider {other:?}: use anthropic, openai or script"
        ))),
    }
}
