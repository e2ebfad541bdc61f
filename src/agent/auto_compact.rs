//! Automatic compaction: keeping a long session inside the model's window.
//!
//! Before each provider request the agent estimates the request's size
//! (about four characters a token, over the system prompt, tool schemas,
//! hidden context and transcript); above [`THRESHOLD`] of the model's
//! context window it compacts first, as `/compact` does: the history before
//! the last user prompt is summarised by the model and replaced by that
//! summary. A provider's "context too long" error compacts once and tries
//! the request once more; a second such error is an error.
//!
//! The session does the rewriting (through [`super::Observer::compact`]),
//! so without a session, or with config `"auto_compact": false`, nothing is
//! compacted and the provider's error stands.
//!
//! Claude Code hooks: `PreCompact` (trigger `auto`) runs first and may
//! cancel the compaction; after it, `SessionStart` (source `compact`) runs
//! and its output is hidden context of the request that follows.

use super::Agent;
use crate::cancel::CancelToken;
use crate::provider::{Block, Message, ProviderError, Request, Response, StreamEvent, ToolDef};

/// Share of the context window above which a request is compacted first.
pub const THRESHOLD: f64 = 0.85;

/// What the model is asked to write when compacting.
pub const SUMMARY_REQUEST: &str =
    "Summarize the conversation so far for your own later use: the goal, \
decisions, files touched and what remains to do. Answer with the summary only.";

/// Whether `e` says the prompt did not fit the model's context
/// (Anthropic "prompt is too long", OpenAI `context_length_exceeded` /
/// "maximum context length", and the like from compatible servers).
pub fn is_context_too_long(e: &ProviderError) -> bool {
    let message = match e {
        ProviderError::Http {
            status: 400 | 413 | 422,
            message,
        } => message,
        ProviderError::Model(message) | ProviderError::Protocol(message) => message,
        _ => return false,
    };
    let m = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "context_length_exceeded",
        "maximum context length",
        "context length",
        "context window",
        "too many tokens",
    ]
    .iter()
    .any(|needle| m.contains(needle))
}

/// Whether a request of `estimate` tokens fills more than [`THRESHOLD`]
/// of a `window`-token context.
fn too_full(estimate: u64, window: u64) -> bool {
    estimate as f64 > THRESHOLD * window as f64
}

/// About how many tokens `text` is.
fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

fn block_chars(b: &Block) -> usize {
    match b {
        Block::Text { text } => text.len(),
        Block::Image { .. } => 6400, // ~1600 tokens, a typical screenshot
        Block::ToolCall { name, args, .. } => name.len() + args.to_string().len(),
        Block::ToolResult { content, .. } => content
            .iter()
            .map(|c| match c {
                zut_ext::wire::ContentBlock::Text { text } => text.len(),
                _ => 6400,
            })
            .sum(),
        Block::Thinking { thinking, .. } => thinking.len(),
        Block::RedactedThinking { data } => data.len() / 2,
    }
}

impl Agent {
    /// One provider request of step `step`: compacted first when it would
    /// not fit, streamed to the front ends (text and thinking held back
    /// while `held`), its usage reported, and tried once more after a
    /// compaction when the provider says the context is too long.
    pub(super) fn request(
        &mut self,
        step: u32,
        tools: &[ToolDef],
        hidden: &[String],
        held: bool,
        cancel: &CancelToken,
    ) -> Result<Response, ProviderError> {
        let mut after = self.compact_if_full(tools, hidden, cancel);
        let mut compacted = false;
        loop {
            let with_after: Vec<String>;
            let hidden_context = if after.is_empty() {
                hidden
            } else {
                with_after = hidden.iter().chain(&after).cloned().collect();
                &with_after
            };
            let sink = self.sink.clone();
            let mut on_event = |e: StreamEvent<'_>| match e {
                StreamEvent::TextDelta(_) | StreamEvent::ThinkingDelta(_) if held => {}
                other => sink.emit(crate::provider::usage::stream_event(other)),
            };
            // The transcript is read in place for the request, and the
            // guard is gone before anything appends or compacts.
            let answer = {
                let messages = self.transcript.read();
                let req = Request {
                    step,
                    system: &self.system,
                    messages: &messages,
                    tools,
                    hidden_context,
                };
                self.provider.complete(&req, &mut on_event, cancel)
            };
            match answer {
                Ok(r) => {
                    let usage = crate::provider::usage::usage_event(&*self.provider, &r.usage);
                    self.sink.emit(usage);
                    return Ok(r);
                }
                Err(e) if !compacted && is_context_too_long(&e) => {
                    compacted = true;
                    log::info!("{e}: compacting and trying again");
                    match self.compact_auto(cancel) {
                        Ok(context) => after.extend(context),
                        Err(why) => {
                            log::warn!("automatic compaction failed: {why}");
                            return Err(e);
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The estimated prompt size of the next request, in tokens.
    fn estimate(&self, tools: &[ToolDef], hidden: &[String]) -> u64 {
        let messages: usize = self
            .transcript
            .read()
            .iter()
            .flat_map(|m| &m.content)
            .map(block_chars)
            .sum();
        let tools: usize = tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.schema.to_string().len())
            .sum();
        let hidden: usize = hidden.iter().map(String::len).sum();
        tokens(self.system.len() + messages + tools + hidden)
    }

    /// Compacts first when the next request would fill more than
    /// [`THRESHOLD`] of the window. A failed compaction is logged and the
    /// request goes ahead (the provider will say whether it fits). Returns
    /// the `SessionStart` hooks' context after a compaction.
    pub(super) fn compact_if_full(
        &mut self,
        tools: &[ToolDef],
        hidden: &[String],
        cancel: &CancelToken,
    ) -> Vec<String> {
        let Some(window) = self
            .provider
            .model_info()
            .map(|i| i.context)
            .filter(|c| *c > 0)
        else {
            return Vec::new();
        };
        let estimate = self.estimate(tools, hidden);
        if !too_full(estimate, window) {
            return Vec::new();
        }
        log::info!("request estimated at {estimate} of {window} tokens: compacting first");
        self.compact_auto(cancel).unwrap_or_else(|e| {
            log::warn!("automatic compaction skipped: {e}");
            Vec::new()
        })
    }

    /// Summarises the history before the last user prompt and has the
    /// session replace it (reason `auto`); the transcript follows. Returns
    /// the `SessionStart` hooks' context (source `compact`).
    pub(super) fn compact_auto(&mut self, cancel: &CancelToken) -> Result<Vec<String>, String> {
        let point = self
            .observer
            .as_ref()
            .and_then(|o| o.compact_point())
            .ok_or("nothing to compact")?;
        let sink = self.sink.clone();
        crate::hooks::agent::pre_compact(&self.opts.hooks, "auto", "", &*sink)?;
        let mut ask: Vec<Message> = {
            let messages = self.transcript.read();
            messages[..point.min(messages.len())].to_vec()
        };
        ask.push(Message::user_text(SUMMARY_REQUEST));
        let summary = self.complete_once(&ask, cancel)?;
        if summary.trim().is_empty() {
            return Err("the model returned no summary".into());
        }
        let observer = self.observer.as_mut().ok_or("no session")?;
        self.transcript = observer.compact(&summary, "auto")?;
        Ok(crate::hooks::agent::session_start(
            &self.opts.hooks,
            "compact",
            &*sink,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_85_percent_of_the_window() {
        assert!(!too_full(85, 100));
        assert!(too_full(86, 100));
        assert!(!too_full(170_000, 200_000));
        assert!(too_full(170_001, 200_000));
        assert_eq!(tokens(8), 2);
        assert_eq!(tokens(9), 3);
    }

    #[test]
    fn context_errors_of_both_apis_are_recognised() {
        let http = |status, m: &str| ProviderError::Http {
            status,
            message: m.into(),
        };
        assert!(is_context_too_long(&http(
            400,
            "prompt is too long: 210000 tokens > 200000 maximum"
        )));
        assert!(is_context_too_long(&http(
            400,
            "This model's maximum context length is 128000 tokens."
        )));
        assert!(is_context_too_long(&ProviderError::Model(
            "context_length_exceeded".into()
        )));
        assert!(!is_context_too_long(&http(429, "prompt is too long")));
        assert!(!is_context_too_long(&http(400, "max_tokens: too big")));
        assert!(!is_context_too_long(&ProviderError::Aborted));
    }
}
