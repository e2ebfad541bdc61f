//! OpenAI-compatible Chat Completions provider (`--provider openai`).
//!
//! One [`Provider::complete`](super::Provider::complete) is one streamed
//! `POST <base>/chat/completions`, where `<base>` includes `/v1`: OpenAI
//! itself, or through `--base-url` any compatible server (Ollama,
//! llama.cpp, vLLM, OpenRouter…). The key is optional once `--base-url` is
//! given, since local servers need none.
//!
//! Conversion: the system prompt (plus this request's hidden context) is the
//! first `system` message; assistant tool calls become `tool_calls` with
//! JSON-string arguments; every tool result becomes a `tool` message (the
//! API has no error flag, so failed results are prefixed `Error: `); images
//! a tool returned follow in one user message, since `tool` messages carry
//! text only.
//!
//! The stream is folded into a [`Response`]: `delta.content` reaches the
//! caller as it arrives, and so does `delta.refusal` (the model declining:
//! a `refusal` stop); `delta.tool_calls` fragments are merged by `index`.
//! Only choice 0 counts. A call cut short by `finish_reason: "length"` is
//! dropped rather than failing the turn. Servers differ, so this tolerates missing ids (a fresh
//! `call_<n>`), missing indexes, arguments sent in one piece or as an
//! object, `stop` with tool calls, a missing `[DONE]` after a finish reason,
//! and error objects mid-stream (a model error).

use super::api::{Api, Endpoint};
use super::http::{self, Sink};
use super::sse::SseEvent;
use super::{
    Block, CallIds, ContentBlock, Message, ProviderError, Request, Response, Role, Settings,
    StopReason, Thinking, ToolCall, ToolDef, Usage,
};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// API root (including `/v1`) when `--base-url` is not given.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Model when `--model` is not given.
pub const DEFAULT_MODEL: &str = "gpt-4.1-mini";
/// Environment variable holding the key.
pub const KEY_ENV: &str = "OPENAI_API_KEY";

/// The OpenAI-compatible provider.
pub struct OpenAi {
    at: Endpoint,
    api_key: Option<String>,
    thinking: Thinking,
}

impl OpenAi {
    /// Resolves key (settings, `OPENAI_API_KEY`, `auth.json`), base URL and
    /// model. Without a key, OpenAI's own URL is a Config error saying how
    /// to set one; any other `--base-url` simply sends no key.
    pub fn new(settings: &Settings) -> Result<Self, ProviderError> {
        let home = &settings.zut_home;
        let env_key = std::env::var(KEY_ENV).ok();
        let api_key = http::resolve_key(settings.api_key.as_deref(), env_key, home, "openai")?;
        let base = http::base_url(settings.base_url.as_deref(), DEFAULT_BASE_URL)?;
        if api_key.is_none() && base == DEFAULT_BASE_URL {
            return Err(http::missing_key("OpenAI", KEY_ENV, "openai", home));
        }
        let url = format!("{base}/chat/completions");
        Ok(OpenAi {
            at: Endpoint::new(settings, DEFAULT_MODEL, &base, url)?,
            api_key,
            thinking: settings.thinking,
        })
    }
}

impl Api for OpenAi {
    const NAME: &'static str = "openai";
    type Parser<'m> = StreamState<'m>;

    fn endpoint(&self) -> &Endpoint {
        &self.at
    }

    /// The bearer key, when one is configured (a local server may need none).
    fn headers(&self) -> Vec<(&'static str, String)> {
        self.api_key
            .iter()
            .map(|k| ("authorization", format!("Bearer {k}")))
            .collect()
    }

    fn models_url(&self) -> String {
        let base = self.at.url.trim_end_matches("/chat/completions");
        format!("{base}/models")
    }

    fn body(&self, req: &Request<'_>) -> Value {
        request_body(&self.at.model, req, self.thinking)
    }

    fn parser(messages: &[Message]) -> StreamState<'_> {
        StreamState::new(CallIds::after(messages))
    }
}

/// The JSON body of one request.
pub fn request_body(model: &str, req: &Request<'_>, thinking: Thinking) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    if let Some(effort) = thinking.effort() {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    let messages = convert_messages(&req.system_with_context(), req.messages);
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req.tools.iter().map(convert_tool).collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    Value::Object(body)
}

fn convert_tool(tool: &ToolDef) -> Value {
    json!({"type": "function", "function": {
        "name": tool.name, "description": tool.description, "parameters": tool.schema}})
}

/// The system message, then our transcript in API shape.
pub(crate) fn convert_messages(system: &str, messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        match message.role {
            Role::User => push_user(&mut out, &message.content),
            Role::Assistant => push_assistant(&mut out, &message.content),
        }
    }
    out
}

/// Tool results first (they must directly follow the assistant's calls),
/// then one user message with their images, then the user's own content.
fn push_user(out: &mut Vec<Value>, blocks: &[Block]) {
    let mut tool_images = Vec::new();
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            Block::ToolResult {
                call_id,
                is_error,
                content,
            } => {
                out.push(tool_message(call_id, *is_error, content));
                let images = image_parts(content);
                if !images.is_empty() {
                    let label = format!("Image output of tool call {call_id}:");
                    tool_images.push(json!({"type": "text", "text": label}));
                    tool_images.extend(images);
                }
            }
            Block::Text { text } if !text.is_empty() => {
                parts.push(json!({"type": "text", "text": text}));
            }
            Block::Image { mime_type, data } => parts.push(image_part(mime_type, data)),
            _ => {}
        }
    }
    if !tool_images.is_empty() {
        out.push(json!({"role": "user", "content": tool_images}));
    }
    if !parts.is_empty() {
        out.push(json!({"role": "user", "content": user_content(parts)}));
    }
}

/// Plain text as a string (what every compatible server understands);
/// anything with an image as an array of parts.
fn user_content(parts: Vec<Value>) -> Value {
    if parts.iter().all(|p| p["type"] == "text") {
        let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        json!(texts.join("\n"))
    } else {
        Value::Array(parts)
    }
}

fn push_assistant(out: &mut Vec<Value>, blocks: &[Block]) {
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            Block::Text { text } if !text.is_empty() => texts.push(text.as_str()),
            Block::ToolCall { id, name, args } => calls.push(json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}})),
            _ => {}
        }
    }
    if texts.is_empty() && calls.is_empty() {
        return;
    }
    let content = if texts.is_empty() {
        Value::Null
    } else {
        json!(texts.join("\n"))
    };
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    out.push(message);
}

fn tool_message(call_id: &str, is_error: bool, content: &[ContentBlock]) -> Value {
    let text: Vec<&str> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let mut text = text.join("\n");
    if text.is_empty() {
        text = if image_parts(content).is_empty() {
            "(no output)".to_string()
        } else {
            "(image output follows)".to_string()
        };
    }
    if is_error {
        text = format!("Error: {text}");
    }
    json!({"role": "tool", "tool_call_id": call_id, "content": text})
}

fn image_parts(content: &[ContentBlock]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image { mime_type, data } => Some(image_part(mime_type, data)),
            _ => None,
        })
        .collect()
}

fn image_part(mime_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
}

/// A tool call being streamed.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Everything one stream has said so far.
pub(crate) struct StreamState<'a> {
    ids: CallIds<'a>,
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    /// The index the last fragment went to (for fragments without one).
    last_index: Option<u64>,
    finish_reason: Option<String>,
    /// Refusal text arrived (`delta.refusal`).
    refused: bool,
    usage: Usage,
    done: bool,
}

impl<'a> StreamState<'a> {
    fn new(ids: CallIds<'a>) -> Self {
        StreamState {
            ids,
            text: String::new(),
            calls: BTreeMap::new(),
            last_index: None,
            finish_reason: None,
            refused: false,
            usage: Usage::default(),
            done: false,
        }
    }

    /// Applies one event; `Ok(true)` at `[DONE]`.
    fn handle_event(
        &mut self,
        event: &SseEvent,
        sink: &mut Sink<'_>,
    ) -> Result<bool, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| ProviderError::Protocol(format!("invalid JSON in a stream chunk: {e}")))?;
        if let Some(message) = chunk_error(&chunk) {
            return Err(ProviderError::Model(message));
        }
        self.usage_from(&chunk["usage"]);
        if let Some(choice) = first_choice(&chunk) {
            self.choice(choice, sink);
        }
        Ok(false)
    }

    /// `prompt_tokens` includes the cached part; ours is uncached input.
    fn usage_from(&mut self, usage: &Value) {
        if let Some(n) = usage["prompt_tokens"].as_u64() {
            let cached = usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0)
                .min(n);
            self.usage.input_tokens = n - cached;
            self.usage.cache_read_tokens = cached;
        }
        if let Some(n) = usage["completion_tokens"].as_u64() {
            self.usage.output_tokens = n;
        }
    }

    fn choice(&mut self, choice: &Value, sink: &mut Sink<'_>) {
        let delta = &choice["delta"];
        // Reasoning of DeepSeek, llama.cpp, vLLM (`reasoning_content`) and
        // OpenRouter, Ollama (`reasoning`): shown, never part of the answer.
        for field in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta[field].as_str() {
                sink.thinking(text);
            }
        }
        if let Some(text) = delta["content"].as_str() {
            sink.text(text);
            self.text.push_str(text);
        }
        // A refusal comes in its own field instead of `content`; it is the
        // answer the person gets to read.
        if let Some(text) = delta["refusal"].as_str() {
            sink.text(text);
            self.text.push_str(text);
            self.refused = true;
        }
        if let Some(fragments) = delta["tool_calls"].as_array() {
            for fragment in fragments {
                self.tool_fragment(fragment);
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
    }

    /// Merges one `tool_calls[]` fragment into the call it belongs to.
    fn tool_fragment(&mut self, fragment: &Value) {
        let id = fragment["id"].as_str().unwrap_or_default();
        let function = &fragment["function"];
        let name = function["name"].as_str().unwrap_or_default();
        let index = self.fragment_index(fragment["index"].as_u64(), id, name);
        self.last_index = Some(index);
        let call = self.calls.entry(index).or_default();
        if call.id.is_empty() {
            call.id = id.to_string();
        }
        if call.name.is_empty() {
            call.name = name.to_string();
        }
        match &function["arguments"] {
            Value::String(part) => call.arguments.push_str(part),
            Value::Null => {}
            whole => call.arguments = whole.to_string(),
        }
    }

    /// The index of a fragment. Servers that omit it get one by id (a new
    /// id starts a new call); without an id, a fragment naming a function
    /// while the last call already has a name starts a new call, anything
    /// else continues the last call.
    fn fragment_index(&self, given: Option<u64>, id: &str, name: &str) -> u64 {
        if let Some(i) = given {
            return i;
        }
        let next = self.calls.keys().next_back().map_or(0, |i| i + 1);
        if !id.is_empty() {
            let known = self.calls.iter().find(|(_, c)| c.id == id);
            return known.map_or(next, |(i, _)| *i);
        }
        match self.last_index {
            Some(last)
                if !name.is_empty()
                    && self.calls.get(&last).is_some_and(|c| !c.name.is_empty()) =>
            {
                next
            }
            Some(last) => last,
            None => next,
        }
    }

    /// The response, once `[DONE]` or a finish reason was seen.
    fn finish_response(mut self) -> Result<Response, ProviderError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ProviderError::Transport("stream ended early".to_string()));
        }
        for call in self.calls.values().filter(|c| !c.id.is_empty()) {
            self.ids.reserve(&call.id);
        }
        // Output cut by the token limit may end inside a call's arguments:
        // such a call is dropped (never run), the text stays.
        let cut = self.finish_reason.as_deref() == Some("length");
        let mut tool_calls = Vec::new();
        for call in std::mem::take(&mut self.calls).into_values() {
            let name = call.name.clone();
            match self.finish_call(call) {
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
        let stop = if self.refused {
            StopReason::Refusal
        } else {
            stop_reason(self.finish_reason.as_deref(), !tool_calls.is_empty())
        };
        Ok(Response {
            thinking: Vec::new(),
            text: self.text,
            tool_calls,
            stop,
            usage: self.usage,
        })
    }

    fn finish_call(&mut self, call: PartialCall) -> Result<ToolCall, ProviderError> {
        if call.name.is_empty() {
            return Err(ProviderError::Protocol(
                "a streamed tool call has no function name".to_string(),
            ));
        }
        self.ids.call(call.id, call.name, &call.arguments)
    }
}

/// Choice 0 (a choice without an index counts as 0). With `n` > 1 a
/// server interleaves the other choices' chunks; they are not ours.
fn first_choice(chunk: &Value) -> Option<&Value> {
    chunk["choices"]
        .as_array()?
        .iter()
        .find(|c| c["index"].as_u64().unwrap_or(0) == 0)
}

/// The message of an error object sent instead of a chunk.
fn chunk_error(chunk: &Value) -> Option<String> {
    match &chunk["error"] {
        Value::Null => None,
        Value::String(s) => Some(http::one_line(s)),
        error => Some(
            error["message"]
                .as_str()
                .map(http::one_line)
                .unwrap_or_else(|| http::one_line(&error.to_string())),
        ),
    }
}

/// Maps the finish reason; tool calls imply tool use unless the output was
/// cut by the token limit (some servers say `stop` even with calls).
fn stop_reason(reason: Option<&str>, has_calls: bool) -> StopReason {
    match reason {
        Some("length") => StopReason::Length,
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some("content_filter") => StopReason::Refusal,
        _ if has_calls => StopReason::ToolUse,
        _ => StopReason::EndTurn,
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

    #[test]
    fn assistant_and_tool_messages() {
        let messages = vec![
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: "c1".into(),
                    name: "shot".into(),
                    args: json!({"x":1}),
                }],
                from: None,
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::Text {
                        text: "thanks".into(),
                    },
                    Block::ToolResult {
                        call_id: "c1".into(),
                        is_error: false,
                        content: vec![ContentBlock::Image {
                            mime_type: "image/png".into(),
                            data: "QQ==".into(),
                        }],
                    },
                ],
                from: None,
            },
        ];
        let got = convert_messages("", &messages);
        assert_eq!(
            Value::Array(got),
            json!([
                {"role":"assistant","content":null,"tool_calls":[
                    {"id":"c1","type":"function","function":{"name":"shot","arguments":"{\"x\":1}"}}]},
                {"role":"tool","tool_call_id":"c1","content":"(image output follows)"},
                {"role":"user","content":[
                    {"type":"text","text":"Image output of tool call c1:"},
                    {"type":"image_url","image_url":{"url":"data:image/png;base64,QQ=="}}]},
                {"role":"user","content":"thanks"}
            ])
        );
    }

    #[test]
    fn stop_reasons() {
        assert_eq!(stop_reason(Some("stop"), false), StopReason::EndTurn);
        assert_eq!(stop_reason(Some("stop"), true), StopReason::ToolUse);
        assert_eq!(stop_reason(Some("tool_calls"), true), StopReason::ToolUse);
        assert_eq!(stop_reason(Some("length"), true), StopReason::Length);
        assert_eq!(stop_reason(None, false), StopReason::EndTurn);
        assert_eq!(
            stop_reason(Some("content_filter"), false),
            StopReason::Refusal
        );
    }

    #[test]
    fn key_is_optional_only_with_a_custom_base_url() {
        if std::env::var_os(KEY_ENV).is_some() {
            return;
        }
        let local = Settings {
            base_url: Some("http://localhost:11434/v1/".into()),
            ..Settings::default()
        };
        let p = OpenAi::new(&local).expect("no key needed for a local server");
        assert_eq!(p.at.url, "http://localhost:11434/v1/chat/completions");
        assert!(p.api_key.is_none());
        let err = match OpenAi::new(&Settings::default()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("the default URL needs a key"),
        };
        assert!(
            err.contains("OPENAI_API_KEY") && err.contains("--api-key"),
            "{err}"
        );
    }
}
