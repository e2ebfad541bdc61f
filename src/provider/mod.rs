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
mod api;
mod http;
pub mod models;
pub mod openai;
mod proxy;
pub mod script;
pub mod sse;
pub mod usage;

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
    /// The model's reasoning (Anthropic extended thinking), kept with its
    /// signature so it can be sent back unchanged; never shown as the
    /// answer.
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        signature: String,
    },
    /// Reasoning the provider encrypted; sent back as it came.
    RedactedThinking {
        data: String,
    },
}

/// One transcript message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
    /// Who added a user message that nobody typed: the extension whose
    /// `agent_end` interceptor, or [`crate::hooks::CONTINUED_BY`] when a
    /// `Stop` hook, kept the prompt going with it. The transcript shows it as `[name] text`,
    /// live and on resume. Never part of the message's JSON (providers,
    /// RPC, `--script-log`): a session row carries it beside the message.
    #[serde(skip)]
    pub from: Option<String>,
}

impl Message {
    /// A message of `role` holding `content`.
    pub fn new(role: Role, content: Vec<Block>) -> Self {
        Message {
            role,
            content,
            from: None,
        }
    }

    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message::new(Role::User, vec![Block::Text { text: text.into() }])
    }

    /// A user message that `from` (an extension, or `hook`) added.
    pub fn continuation(text: impl Into<String>, from: impl Into<String>) -> Self {
        Message {
            from: Some(from.into()),
            ..Message::user_text(text)
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
    /// Assembles a streamed tool call: `json` (the accumulated arguments),
    /// empty meaning `{}`; a missing id gets a fresh one. Arguments that are
    /// not valid JSON make a call with `{}` and [`ToolCall::invalid_args`]
    /// set: it is answered with an error result the model can correct,
    /// never run. (`Err` is kept for callers that must refuse a call.)
    pub(crate) fn call(
        &mut self,
        id: String,
        name: String,
        json: &str,
    ) -> Result<ToolCall, ProviderError> {
        let mut invalid_args = None;
        let args = if json.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(json).unwrap_or_else(|e| {
                invalid_args = Some(format!(
                    "the arguments of tool call {name:?} are not valid JSON ({e}); \
                     the call was not run: send it again with a JSON object"
                ));
                Value::Object(Default::default())
            })
        };
        let id = if id.is_empty() {
            self.fresh()
        } else {
            self.reserve(&id);
            id
        };
        Ok(ToolCall {
            id,
            name,
            args,
            invalid_args,
        })
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub args: Value,
    /// Why the model's arguments could not be used (not valid JSON): the
    /// call gets this as its error result instead of running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_args: Option<String>,
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

/// Token accounting, when the provider reports it. `input_tokens` is the
/// uncached part of the prompt; cache reads and writes are counted apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl Usage {
    /// The whole prompt: uncached input plus cache reads and writes.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// How hard the model may think (`--thinking`, config `thinking`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Thinking {
    #[default]
    Off,
    Low,
    Medium,
    High,
}

impl Thinking {
    /// Parses `off`, `low`, `medium`, `high`.
    pub fn parse(s: &str) -> Result<Self, UnknownThinking> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" | "none" | "" => Ok(Thinking::Off),
            "low" => Ok(Thinking::Low),
            "medium" => Ok(Thinking::Medium),
            "high" => Ok(Thinking::High),
            other => Err(UnknownThinking(other.to_string())),
        }
    }

    /// Anthropic's `budget_tokens`.
    pub fn budget_tokens(self) -> Option<u32> {
        match self {
            Thinking::Off => None,
            Thinking::Low => Some(2048),
            Thinking::Medium => Some(8192),
            Thinking::High => Some(24576),
        }
    }

    /// OpenAI's `reasoning_effort`.
    pub fn effort(self) -> Option<&'static str> {
        match self {
            Thinking::Off => None,
            Thinking::Low => Some("low"),
            Thinking::Medium => Some("medium"),
            Thinking::High => Some("high"),
        }
    }
}

/// One complete assistant answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Thinking blocks, in order, to keep ahead of the text in the transcript.
    pub thinking: Vec<Block>,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop: StopReason,
    pub usage: Usage,
}

/// Incremental output while a response streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent<'a> {
    TextDelta(&'a str),
    /// Reasoning the model shows while it thinks (never part of the answer).
    ThinkingDelta(&'a str),
    /// The request failed and is tried again: `attempt` is the number of
    /// the attempt about to be made (2 for the first retry), after `wait_ms`.
    Retry {
        attempt: u32,
        wait_ms: u64,
        reason: &'a str,
    },
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

/// A thinking level that is not one of `off`, `low`, `medium`, `high`
/// (trimmed and lower-cased).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownThinking(pub String);

impl std::fmt::Display for UnknownThinking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "thinking level {:?} is not one of off, low, medium, high",
            self.0
        )
    }
}

impl std::error::Error for UnknownThinking {}

/// A model backend.
pub trait Provider: Send {
    /// `anthropic`, `openai` or `script`.
    fn name(&self) -> &str;
    /// The model name sent with requests (may be empty for `script`).
    fn model(&self) -> &str;
    /// Context window and prices of the current model, when known.
    fn model_info(&self) -> Option<usage::ModelInfo> {
        None
    }
    /// The ids of the models this provider offers (`GET /v1/models`).
    fn list_models(&mut self) -> Result<Vec<String>, ProviderError> {
        Err(ProviderError::Config(format!(
            "the {} provider cannot list models",
            self.name()
        )))
    }
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
    /// `--no-cache` or config `"cache": false`: no Anthropic cache breakpoints.
    pub no_cache: bool,
    /// `--thinking` or config `thinking`.
    pub thinking: Thinking,
    /// Context windows and prices (config `models` over the built-in table).
    pub pricing: usage::Pricing,
    /// Config `"auto_compact": false`: never compact on the agent's own.
    pub no_auto_compact: bool,
    /// Config `connect_timeout_ms` and `idle_timeout_ms`.
    pub timeouts: Timeouts,
}

/// How long an HTTP provider waits to connect and for the next data of a
/// stream; `None` keeps the default (10 s and 120 s). The environment's
/// `ZUT_PROVIDER_IDLE_TIMEOUT_MS` wins over the configured idle timeout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Option<std::time::Duration>,
    pub idle: Option<std::time::Duration>,
}

/// Fills the daily-use options from the flags and config (`cache`,
/// `thinking`, `models`); flags win. A bad `--thinking` is an error; a bad
/// config value is logged and ignored, so a typo never stops zut.
pub fn apply_options(
    settings: &mut Settings,
    config: &serde_json::Map<String, Value>,
    no_cache: bool,
    thinking: Option<&str>,
) -> Result<(), UnknownThinking> {
    settings.no_cache = no_cache || config.get("cache") == Some(&Value::Bool(false));
    settings.no_auto_compact = config.get("auto_compact") == Some(&Value::Bool(false));
    settings.thinking = match thinking {
        Some(t) => Thinking::parse(t)?,
        None => match config.get("thinking").and_then(Value::as_str) {
            Some(t) => Thinking::parse(t).unwrap_or_else(|e| {
                log::warn!("config \"thinking\": {e}; thinking stays off");
                Thinking::Off
            }),
            None => Thinking::Off,
        },
    };
    let millis = |key: &str| match config.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64().filter(|ms| *ms > 0) {
            Some(ms) => Some(std::time::Duration::from_millis(ms)),
            None => {
                log::warn!("config \"{key}\" must be a positive number of milliseconds, not {v}; the default stays");
                None
            }
        },
    };
    settings.timeouts = Timeouts {
        connect: millis("connect_timeout_ms"),
        idle: millis("idle_timeout_ms"),
    };
    let (pricing, warnings) = usage::Pricing::from_config(config.get("models"));
    for w in warnings {
        log::warn!("{w}");
    }
    settings.pricing = pricing;
    Ok(())
}

/// Tries of one provider request, the first included.
pub const MAX_TRIES: u32 = http::MAX_RETRIES + 1;

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn options(config: Value) -> Settings {
        let mut s = Settings::default();
        apply_options(&mut s, config.as_object().unwrap(), false, None).unwrap();
        s
    }

    #[test]
    fn timeouts_come_from_config_and_bad_ones_keep_the_default() {
        let s = options(serde_json::json!({"connect_timeout_ms": 1500, "idle_timeout_ms": 30000}));
        assert_eq!(s.timeouts.connect, Some(Duration::from_millis(1500)));
        assert_eq!(s.timeouts.idle, Some(Duration::from_secs(30)));
        let s = options(serde_json::json!({"connect_timeout_ms": "soon", "idle_timeout_ms": 0}));
        assert_eq!(s.timeouts, Timeouts::default());
        assert_eq!(options(serde_json::json!({})).timeouts, Timeouts::default());
    }
}
