//! Anthropic Messages API provider (`--provider anthropic`).
//!
//! One [`Provider::complete`](super::Provider::complete) is one streamed
//! `POST <base>/v1/messages`. The transcript is converted block by block
//! (text, base64 images, `tool_use`, `tool_result` inside user messages);
//! the request's hidden context is appended to the system prompt of that
//! request only.
//!
//! The event stream is folded into a [`Response`]: text deltas reach the
//! caller as they arrive, tool-input JSON is accumulated per content block
//! and parsed once the stop reason is known: a call cut short by
//! `max_tokens` is dropped (the turn ends with a `length` stop and the text
//! streamed so far), and `refusal` is a stop reason of its own. A stream is complete only with
//! `message_stop`; anything shorter is a transport error, an `error` event a
//! model error. Retries, abort and idle deadlines live in `provider::http`.
//!
//! Prompt caching (on unless `--no-cache`): `cache_control` breakpoints on
//! the last tool definition, the last system block (and the stable system
//! block when hidden context follows it) and the last content block of the
//! newest message, never more than four. The system prompt always travels
//! as a list of text blocks. Thinking (`--thinking`): `thinking` with a
//! budget and `max_tokens` above it; `thinking` and `redacted_thinking`
//! blocks come back as [`Block::Thinking`] / [`Block::RedactedThinking`]
//! with their signatures and are sent back unchanged.

use super::api::{Api, Endpoint};
use super::http::{self, Sink};
use super::sse::SseEvent;
use super::{
    Block, CallIds, ContentBlock, Message, ProviderError, Request, Response, Role, Settings,
    StopReason, Thinking, ToolCall, ToolDef, Usage,
};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// API root when `--base-url` is not given.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Model when `--model` is not given.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// `max_tokens` sent with every request.
pub const MAX_TOKENS: u32 = 8192;
/// The `anthropic-version` header.
pub const API_VERSION: &str = "2023-06-01";
/// Environment variable holding the key.
pub const KEY_ENV: &str = "ANTHROPIC_API_KEY";

/// The Anthropic provider.
pub struct Anthropic {
    at: Endpoint,
    api_key: String,
    options: BodyOptions,
}

/// What shapes a request body besides the request itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BodyOptions {
    /// Place `cache_control` breakpoints.
    pub cache: bool,
    pub thinking: Thinking,
}

impl Anthropic {
    /// Resolves key (settings, `ANTHROPIC_API_KEY`, `auth.json`), base URL
    /// and model; a missing key is a Config error saying how to set one.
    pub fn new(settings: &Settings) -> Result<Self, ProviderError> {
        let home = &settings.zut_home;
        let env_key = std::env::var(KEY_ENV).ok();
        let api_key = http::resolve_key(settings.api_key.as_deref(), env_key, home, "anthropic")?
            .ok_or_else(|| http::missing_key("Anthropic", KEY_ENV, "anthropic", home))?;
        let base = http::base_url(settings.base_url.as_deref(), DEFAULT_BASE_URL)?;
        Ok(Anthropic {
            at: Endpoint::new(settings, DEFAULT_MODEL, &base, messages_url(&base))?,
            api_key,
            options: BodyOptions {
                cache: !settings.no_cache,
                thinking: settings.thinking,
            },
        })
    }
}

fn messages_url(base: &str) -> String {
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

impl Api for Anthropic {
    const NAME: &'static str = "anthropic";
    type Parser<'m> = StreamState<'m>;

    fn endpoint(&self) -> &Endpoint {
        &self.at
    }

    /// The key and API version every request carries.
    fn headers(&self) -> Vec<(&'static str, String)> {
        vec![
            ("x-api-key", self.api_key.clone()),
            ("anthropic-version", API_VERSION.to_string()),
        ]
    }

    fn models_url(&self) -> String {
        let base = self.at.url.trim_end_matches("/messages");
        format!("{base}/models?limit=1000")
    }

    fn body(&self, req: &Request<'_>) -> Value {
        request_body(&self.at.model, req, self.options)
    }

    fn parser(messages: &[Message]) -> StreamState<'_> {
        StreamState::new(CallIds::after(messages))
    }
}

/// The JSON body of one request.
pub fn request_body(model: &str, req: &Request<'_>, options: BodyOptions) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let budget = options.thinking.budget_tokens();
    let max_tokens = budget.map_or(MAX_TOKENS, |b| MAX_TOKENS.max(b + MAX_TOKENS));
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(budget) = budget {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    let system = system_blocks(req, options.cache);
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let mut messages = convert_messages(req.messages);
    if options.cache {
        mark_newest_message(&mut messages);
    }
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let mut tools: Vec<Value> = req.tools.iter().map(convert_tool).collect();
        if options.cache {
            if let Some(last) = tools.last_mut() {
                last["cache_control"] = ephemeral();
            }
        }
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The system prompt and this request's hidden context as text blocks;
/// with caching, the last one is a breakpoint, and so is the stable
/// prompt when context follows it (the context changes per request).
fn system_blocks(req: &Request<'_>, cache: bool) -> Vec<Value> {
    let mut blocks: Vec<Value> = std::iter::once(req.system)
        .chain(req.hidden_context.iter().map(String::as_str))
        .filter(|part| !part.trim().is_empty())
        .map(|text| json!({"type": "text", "text": text}))
        .collect();
    if cache {
        let n = blocks.len();
        if n > 1 && !req.system.trim().is_empty() {
            blocks[0]["cache_control"] = ephemeral();
        }
        if let Some(last) = blocks.last_mut() {
            last["cache_control"] = ephemeral();
        }
    }
    blocks
}

/// A breakpoint on the last block of the newest message that may carry
/// one (thinking blocks may not).
fn mark_newest_message(messages: &mut [Value]) {
    let Some(content) = messages
        .last_mut()
        .and_then(|m| m.get_mut("content"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let target = content.iter_mut().rev().find(|b| {
        !matches!(
            b["type"].as_str(),
            Some("thinking") | Some("redacted_thinking")
        )
    });
    if let Some(block) = target {
        block["cache_control"] = ephemeral();
    }
}

fn convert_tool(tool: &ToolDef) -> Value {
    json!({"name": tool.name, "description": tool.description, "input_schema": tool.schema})
}

/// Our transcript in API shape. Tool results always travel in a user
/// message, ahead of any other content (the API requires them first);
/// blank text blocks and empty messages are dropped (the API rejects them).
pub(crate) fn convert_messages(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        let mut results = Vec::new();
        let mut others = Vec::new();
        for block in &message.content {
            match block {
                Block::ToolResult {
                    call_id,
                    is_error,
                    content,
                } => results.push(tool_result(call_id, *is_error, content)),
                other => others.extend(convert_block(other)),
            }
        }
        match message.role {
            Role::User => {
                results.extend(others);
                push_message(&mut out, "user", results);
            }
            Role::Assistant => {
                push_message(&mut out, "assistant", others);
                push_message(&mut out, "user", results);
            }
        }
    }
    out
}

fn push_message(out: &mut Vec<Value>, role: &str, content: Vec<Value>) {
    if !content.is_empty() {
        out.push(json!({"role": role, "content": content}));
    }
}

/// A text, image or tool-call block; `None` for blank text.
fn convert_block(block: &Block) -> Option<Value> {
    match block {
        Block::Text { text } => text_block(text),
        Block::Image { mime_type, data } => Some(image_block(mime_type, data)),
        Block::ToolCall { id, name, args } => {
            let input = if args.is_object() {
                args.clone()
            } else {
                json!({})
            };
            Some(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
        }
        Block::Thinking {
            thinking,
            signature,
        } => Some(json!({"type": "thinking", "thinking": thinking, "signature": signature})),
        Block::RedactedThinking { data } => {
            Some(json!({"type": "redacted_thinking", "data": data}))
        }
        Block::ToolResult { .. } => None,
    }
}

fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn image_block(mime_type: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
}

fn tool_result(call_id: &str, is_error: bool, content: &[ContentBlock]) -> Value {
    let blocks: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => text_block(text),
            ContentBlock::Image { mime_type, data } => Some(image_block(mime_type, data)),
            ContentBlock::Unknown => None,
        })
        .collect();
    json!({"type": "tool_result", "tool_use_id": call_id, "content": blocks, "is_error": is_error})
}

/// A tool-use content block being streamed.
struct ToolBlock {
    id: String,
    name: String,
    json: String,
}

/// Everything one stream has said so far.
pub(crate) struct StreamState<'a> {
    ids: CallIds<'a>,
    text: String,
    /// Thinking blocks by content index, in the order they appeared.
    thinking: BTreeMap<u64, Block>,
    open: BTreeMap<u64, ToolBlock>,
    /// Tool blocks whose stop arrived; their input is parsed at the end,
    /// once the stop reason says whether it may have been cut short.
    closed: Vec<(u64, ToolBlock)>,
    stop_reason: Option<String>,
    usage: Usage,
    stopped: bool,
}

impl<'a> StreamState<'a> {
    fn new(ids: CallIds<'a>) -> Self {
        StreamState {
            ids,
            text: String::new(),
            thinking: BTreeMap::new(),
            open: BTreeMap::new(),
            closed: Vec::new(),
            stop_reason: None,
            usage: Usage::default(),
            stopped: false,
        }
    }

    /// Applies one event; `Ok(true)` once `message_stop` arrived.
    fn handle_event(
        &mut self,
        event: &SseEvent,
        sink: &mut Sink<'_>,
    ) -> Result<bool, ProviderError> {
        let data: Value = match serde_json::from_str(&event.data) {
            Ok(v) => v,
            Err(_) if event.event == "ping" => return Ok(false),
            Err(e) => {
                return Err(ProviderError::Protocol(format!(
                    "invalid JSON in the {:?} event: {e}",
                    event.event
                )))
            }
        };
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&event.event);
        match kind {
            "message_start" => self.message_start(&data),
            "content_block_start" => self.block_start(&data, sink),
            "content_block_delta" => self.block_delta(&data, sink),
            "content_block_stop" => self.block_stop(&data),
            "message_delta" => self.message_delta(&data),
            "message_stop" => {
                self.stopped = true;
                return Ok(true);
            }
            "error" => return Err(stream_error(&data)),
            _ => {} // ping and event types added later
        }
        Ok(false)
    }

    fn message_start(&mut self, data: &Value) {
        self.read_usage(&data["message"]["usage"]);
    }

    /// Takes every count the usage object carries (message_start has the
    /// input side, message_delta the final output and sometimes all four).
    fn read_usage(&mut self, usage: &Value) {
        let fields = [
            ("input_tokens", &mut self.usage.input_tokens),
            ("output_tokens", &mut self.usage.output_tokens),
            ("cache_read_input_tokens", &mut self.usage.cache_read_tokens),
            (
                "cache_creation_input_tokens",
                &mut self.usage.cache_write_tokens,
            ),
        ];
        for (name, slot) in fields {
            if let Some(n) = usage[name].as_u64() {
                *slot = n;
            }
        }
    }

    fn block_start(&mut self, data: &Value, sink: &mut Sink<'_>) {
        let block = &data["content_block"];
        match block["type"].as_str() {
            Some("tool_use") => {
                let id = block["id"].as_str().unwrap_or_default().to_string();
                let name = block["name"].as_str().unwrap_or_default().to_string();
                let tool = ToolBlock {
                    id,
                    name,
                    json: String::new(),
                };
                self.open.insert(index(data), tool);
            }
            // Normally empty; some compatible servers put text here.
            Some("text") => {
                let text = block["text"].as_str().unwrap_or_default();
                sink.text(text);
                self.text.push_str(text);
            }
            Some("thinking") => {
                let thinking = block["thinking"].as_str().unwrap_or_default();
                sink.thinking(thinking);
                let signature = block["signature"].as_str().unwrap_or_default();
                self.thinking.insert(
                    index(data),
                    Block::Thinking {
                        thinking: thinking.to_string(),
                        signature: signature.to_string(),
                    },
                );
            }
            Some("redacted_thinking") => {
                let data_field = block["data"].as_str().unwrap_or_default().to_string();
                self.thinking
                    .insert(index(data), Block::RedactedThinking { data: data_field });
            }
            _ => {} // server-side tool blocks are not ours
        }
    }

    fn block_delta(&mut self, data: &Value, sink: &mut Sink<'_>) {
        let delta = &data["delta"];
        match delta["type"].as_str() {
            Some("text_delta") => {
                let text = delta["text"].as_str().unwrap_or_default();
                sink.text(text);
                self.text.push_str(text);
            }
            Some("input_json_delta") => {
                let part = delta["partial_json"].as_str().unwrap_or_default();
                if let Some(tool) = self.open.get_mut(&index(data)) {
                    tool.json.push_str(part);
                }
            }
            Some("thinking_delta") => {
                let part = delta["thinking"].as_str().unwrap_or_default();
                sink.thinking(part);
                if let Some(Block::Thinking { thinking, .. }) = self.thinking.get_mut(&index(data))
                {
                    thinking.push_str(part);
                }
            }
            Some("signature_delta") => {
                let part = delta["signature"].as_str().unwrap_or_default();
                if let Some(Block::Thinking { signature, .. }) = self.thinking.get_mut(&index(data))
                {
                    signature.push_str(part);
                }
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, data: &Value) {
        let idx = index(data);
        if let Some(tool) = self.open.remove(&idx) {
            self.closed.push((idx, tool));
        }
    }

    fn message_delta(&mut self, data: &Value) {
        if let Some(reason) = data["delta"]["stop_reason"].as_str() {
            self.stop_reason = Some(reason.to_string());
        }
        let usage = data["usage"].clone();
        self.read_usage(&usage);
    }

    /// The response, once `message_stop` was seen.
    fn finish_response(mut self) -> Result<Response, ProviderError> {
        if !self.stopped {
            return Err(ProviderError::Transport("stream ended early".to_string()));
        }
        // Output cut by the token limit may end inside a tool call's
        // arguments: such a call is dropped (never run), the text stays.
        let cut = stop_reason(self.stop_reason.as_deref(), false) == StopReason::Length;
        let mut blocks = std::mem::take(&mut self.closed);
        blocks.extend(std::mem::take(&mut self.open));
        blocks.sort_by_key(|(idx, _)| *idx);
        let mut tool_calls: Vec<ToolCall> = Vec::new();
        for (_, tool) in blocks {
            let name = tool.name.clone();
            match self.ids.call(tool.id, tool.name, &tool.json) {
                Ok(call) if cut && call.invalid_args.is_some() => {
                    log::warn!("dropped tool call {name:?} cut off by the output limit")
                }
                Ok(call) => tool_calls.push(call),
                Err(e) if cut => {
                    log::warn!("dropped tool call {name:?} cut off by the output limit: {e}")
                }
                Err(e) => return Err(e),
            }
        }
        let stop = stop_reason(self.stop_reason.as_deref(), !tool_calls.is_empty());
        Ok(Response {
            thinking: self.thinking.into_values().collect(),
            text: self.text,
            tool_calls,
            stop,
            usage: self.usage,
        })
    }
}

/// The content-block index of an event (0 when absent).
fn index(data: &Value) -> u64 {
    data["index"].as_u64().unwrap_or(0)
}

/// Maps the API's stop reason; tool calls imply tool use unless the output
/// was cut by the token limit or the model refused.
fn stop_reason(reason: Option<&str>, has_calls: bool) -> StopReason {
    match reason {
        Some("max_tokens") | Some("model_context_window_exceeded") => StopReason::Length,
        Some("tool_use") => StopReason::ToolUse,
        Some("refusal") => StopReason::Refusal,
        _ if has_calls => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

/// An `error` event: `{"type":"error","error":{"type":…,"message":…}}`.
fn stream_error(data: &Value) -> ProviderError {
    let error = &data["error"];
    let message = error["message"]
        .as_str()
        .map(http::one_line)
        .unwrap_or_else(|| http::one_line(&data.to_string()));
    match error["type"].as_str() {
        Some(kind) if !kind.is_empty() => ProviderError::Model(format!("{kind}: {message}")),
        _ => ProviderError::Model(message),
    }
}

impl http::EventParser for StreamState<'_> {
    fn handle(&mut self, event: &SseEvent, sink: &mut Sink<'_>) -> Result<bool, ProviderError> {
        self.handle_event(event, sink)
    }

    fn finish(self) -> Result<Response, ProviderError> {
        self.finish_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<'a>(messages: &'a [Message], tools: &'a [ToolDef], hidden: &'a [String]) -> Request<'a> {
        Request {
            step: 1,
            system: "be brief",
            messages,
            tools,
            hidden_context: hidden,
        }
    }

    #[test]
    fn body_has_system_with_context_tools_and_stream() {
        let messages = [Message::user_text("hi")];
        let tools = [ToolDef {
            name: "read".into(),
            description: "Read a file".into(),
            schema: json!({"type":"object"}),
        }];
        let hidden = ["ctx one".to_string(), "ctx two".to_string()];
        let plain = BodyOptions::default();
        let body = request_body("m", &req(&messages, &tools, &hidden), plain);
        assert_eq!(
            body,
            json!({
                "model": "m",
                "max_tokens": MAX_TOKENS,
                "system": [{"type":"text","text":"be brief"},{"type":"text","text":"ctx one"},
                           {"type":"text","text":"ctx two"}],
                "messages": [{"role":"user","content":[{"type":"text","text":"hi"}]}],
                "tools": [{"name":"read","description":"Read a file","input_schema":{"type":"object"}}],
                "stream": true
            })
        );
        let bare = request_body("m", &req(&messages, &[], &[]), plain);
        assert!(bare.get("tools").is_none());
        assert_eq!(bare["system"], json!([{"type":"text","text":"be brief"}]));
    }

    /// Counts `cache_control` objects anywhere in a body.
    fn breakpoints(v: &Value) -> usize {
        match v {
            Value::Object(m) => {
                usize::from(m.contains_key("cache_control"))
                    + m.values().map(breakpoints).sum::<usize>()
            }
            Value::Array(a) => a.iter().map(breakpoints).sum(),
            _ => 0,
        }
    }

    #[test]
    fn caching_marks_system_last_tool_and_newest_block_at_most_four() {
        let messages = [
            Message::user_text("first"),
            Message {
                role: Role::Assistant,
                content: vec![Block::Text { text: "ok".into() }],
                from: None,
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::Text { text: "a".into() },
                    Block::Text { text: "b".into() },
                ],
                from: None,
            },
        ];
        let tool = |n: &str| ToolDef {
            name: n.into(),
            description: String::new(),
            schema: json!({}),
        };
        let tools = [tool("one"), tool("two")];
        let cached = BodyOptions {
            cache: true,
            thinking: Thinking::Off,
        };
        let body = request_body("m", &req(&messages, &tools, &[]), cached);
        let eph = json!({"type":"ephemeral"});
        assert_eq!(body["system"][0]["cache_control"], eph);
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["cache_control"], eph);
        let newest = &body["messages"][2]["content"];
        assert!(newest[0].get("cache_control").is_none());
        assert_eq!(newest[1]["cache_control"], eph);
        assert!(body["messages"][0]["content"][0]
            .get("cache_control")
            .is_none());
        assert_eq!(breakpoints(&body), 3);
        // Hidden context: the stable prompt is a breakpoint of its own.
        let hidden = ["today".to_string()];
        let body = request_body("m", &req(&messages, &tools, &hidden), cached);
        assert_eq!(body["system"][0]["cache_control"], eph);
        assert_eq!(body["system"][1]["cache_control"], eph);
        assert_eq!(breakpoints(&body), 4);
        let off = request_body(
            "m",
            &req(&messages, &tools, &hidden),
            BodyOptions::default(),
        );
        assert_eq!(breakpoints(&off), 0);
    }

    #[test]
    fn thinking_budget_and_blocks_sent_back_unchanged() {
        let messages = [
            Message::user_text("q"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Thinking {
                        thinking: "hmm".into(),
                        signature: "sig==".into(),
                    },
                    Block::RedactedThinking { data: "ENC".into() },
                    Block::ToolCall {
                        id: "t".into(),
                        name: "read".into(),
                        args: json!({}),
                    },
                ],
                from: None,
            },
        ];
        for (level, budget) in [
            (Thinking::Low, 2048),
            (Thinking::Medium, 8192),
            (Thinking::High, 24576),
        ] {
            let opts = BodyOptions {
                cache: true,
                thinking: level,
            };
            let body = request_body("m", &req(&messages, &[], &[]), opts);
            assert_eq!(
                body["thinking"],
                json!({"type":"enabled","budget_tokens":budget})
            );
            assert!(body["max_tokens"].as_u64().unwrap() > budget);
            assert_eq!(
                body["messages"][1]["content"],
                json!([{"type":"thinking","thinking":"hmm","signature":"sig=="},
                       {"type":"redacted_thinking","data":"ENC"},
                       {"type":"tool_use","id":"t","name":"read","input":{},
                        "cache_control":{"type":"ephemeral"}}])
            );
        }
        let off = request_body("m", &req(&messages, &[], &[]), BodyOptions::default());
        assert!(off.get("thinking").is_none());
        assert_eq!(off["max_tokens"], MAX_TOKENS);
    }

    #[test]
    fn transcript_conversion() {
        let messages = vec![
            Message {
                role: Role::User,
                content: vec![
                    Block::Text {
                        text: "look".into(),
                    },
                    Block::Image {
                        mime_type: "image/png".into(),
                        data: "AAAA".into(),
                    },
                ],
                from: None,
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Text { text: " ".into() },
                    Block::ToolCall {
                        id: "t1".into(),
                        name: "read".into(),
                        args: json!({"path":"a"}),
                    },
                ],
                from: None,
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::Text {
                        text: "and then".into(),
                    },
                    Block::ToolResult {
                        call_id: "t1".into(),
                        is_error: true,
                        content: vec![
                            ContentBlock::text("no such file"),
                            ContentBlock::Unknown,
                            ContentBlock::Image {
                                mime_type: "image/jpeg".into(),
                                data: "BBBB".into(),
                            },
                        ],
                    },
                ],
                from: None,
            },
        ];
        let got = convert_messages(&messages);
        assert_eq!(
            Value::Array(got),
            json!([
                {"role":"user","content":[
                    {"type":"text","text":"look"},
                    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}
                ]},
                {"role":"assistant","content":[
                    {"type":"tool_use","id":"t1","name":"read","input":{"path":"a"}}
                ]},
                {"role":"user","content":[
                    {"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[
                        {"type":"text","text":"no such file"},
                        {"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"BBBB"}}
                    ]},
                    {"type":"text","text":"and then"}
                ]}
            ])
        );
    }

    #[test]
    fn stop_reasons() {
        assert_eq!(stop_reason(Some("end_turn"), false), StopReason::EndTurn);
        assert_eq!(
            stop_reason(Some("stop_sequence"), false),
            StopReason::EndTurn
        );
        assert_eq!(stop_reason(Some("tool_use"), true), StopReason::ToolUse);
        assert_eq!(stop_reason(Some("max_tokens"), true), StopReason::Length);
        assert_eq!(stop_reason(None, true), StopReason::ToolUse);
        assert_eq!(stop_reason(Some("refusal"), false), StopReason::Refusal);
    }

    #[test]
    fn base_url_variants() {
        assert_eq!(
            messages_url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(messages_url("http://h/v1"), "http://h/v1/messages");
    }

    #[test]
    fn missing_key_explains_every_option() {
        let err = http::resolve_key(None, None, std::path::Path::new(""), "anthropic")
            .unwrap()
            .ok_or_else(|| http::missing_key("Anthropic", KEY_ENV, "anthropic", "".as_ref()))
            .unwrap_err()
            .to_string();
        for needle in ["--api-key", "ANTHROPIC_API_KEY", "auth.json", "\"api_key\""] {
            assert!(err.contains(needle), "{err}");
        }
    }
}
