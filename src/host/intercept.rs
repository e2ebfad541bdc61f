//! The interception chains: for each interceptable event, every
//! extension that asked for it is consulted serially in load order, each
//! under its own deadline ([`super::deadlines::Deadlines::intercept`]).
//!
//! Invariants: a missing answer (deadline, disconnect, abort) is "allow,
//! unchanged" for that extension only; the first `block` ends the chain;
//! rewrites (arguments, text, content) feed the next interceptor; hidden
//! contexts are labelled with their extension, joined in chain order and
//! bounded to [`CONTEXT_CAP`]; the payload of each consultation is built
//! when it is sent, so it shows every earlier rewrite.
//!
//! A deaf interceptor costs every step its deadline, so misses are counted
//! ([`Breaker`]): the first one is reported as an `ext_warning`, and after
//! [`BREAKER_MISSES`] in a row the extension's intercepts are skipped for
//! the rest of the run (with a second warning); an answer resets the count.

use super::handle::{normalise_content, wait_reply, Wait};
use super::transport::CallKind;
use super::{EventOut, HostHandle, ViewExt};
use crate::cancel::CancelToken;
use crate::events::Event;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use zut_ext::wire::{ContentBlock, EventPayload, ExtFrame, HostFrame};

/// The outcome of the `tool_call` interceptor chain.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallVerdict {
    /// `(extension, reason)` of the first interceptor that blocked.
    pub blocked: Option<(String, String)>,
    /// The arguments after every rewrite.
    pub args: Value,
    /// What the chain said about asking the person.
    pub confirm: Confirm,
}

/// A `tool_call` interceptor's `decision`, combined over the chain: the
/// first `ask` wins over any `approve` (and a block over both).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Confirm {
    /// Nobody said: the usual rules (confirmed tools, `--yolo`, "always").
    #[default]
    Default,
    /// This extension lets the call skip the dialog.
    Approve(String),
    /// This extension wants the person asked, even under `--yolo` or a
    /// remembered approval.
    Ask(String),
}

/// The outcome of the `turn_start` interceptor chain.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnStartVerdict {
    pub blocked: Option<(String, String)>,
    /// Hidden context for this request only, already bounded.
    pub context: Option<String>,
}

/// The outcome of the `assistant_message` interceptor chain.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantVerdict {
    pub blocked: Option<(String, String)>,
    /// What the user sees.
    pub text: String,
}

/// Upper bound of the hidden context one request can carry.
pub const CONTEXT_CAP: usize = 16 * 1024;
const CONTEXT_TRUNCATED: &str = "\n[extension context truncated]";

impl HostHandle {
    /// Consults every `event` interceptor serially in load order; `each`
    /// gets the extension and its response and returns false to stop the
    /// chain. A missing response (deadline, disconnect) counts as allow.
    fn intercept_chain(
        &self,
        event: &str,
        payload: impl Fn() -> zut_ext::wire::EventPayload,
        cancel: &CancelToken,
        mut each: impl FnMut(&ViewExt, ExtFrame) -> bool,
    ) {
        let view = self.view();
        let timeout = self.inner.config.deadlines.intercept;
        let breaker = &self.inner.breaker;
        for ext in view
            .exts
            .iter()
            .filter(|e| e.intercepts.iter().any(|x| x == event))
            .filter(|e| !breaker.is_open(&e.name))
        {
            if cancel.is_cancelled() {
                return;
            }
            let id = self.next_id();
            let rx = ext.conn.expect(id, CallKind::Intercept);
            let frame = HostFrame::EventIntercept {
                id: id.to_string(),
                payload: payload(),
            };
            if ext.conn.send(&frame).is_err() {
                ext.conn.forget(id);
                continue;
            }
            let reply = wait_reply(&rx, Some(timeout), cancel);
            ext.conn.forget(id);
            match reply {
                Wait::Reply(Ok(frame)) => {
                    breaker.answered(&ext.name);
                    if !each(ext, frame) {
                        return;
                    }
                }
                Wait::TimedOut => {
                    ext.conn.log_line(&format!(
                        "intercept {event} timed out after {} ms; allowing",
                        timeout.as_millis()
                    ));
                    breaker.missed(&ext.name, event, timeout);
                }
                Wait::Reply(Err(_)) | Wait::Cancelled => {}
            }
        }
    }

    /// Runs the `tool_call` interceptors: the first block wins; each
    /// rewrite must be a JSON object and feeds the next interceptor.
    pub fn intercept_tool_call(
        &self,
        tool_id: &str,
        tool_name: &str,
        args: Value,
        cancel: &CancelToken,
    ) -> ToolCallVerdict {
        let current = std::cell::RefCell::new(args);
        let mut blocked = None;
        let mut confirm = Confirm::Default;
        self.intercept_chain(
            "tool_call",
            || zut_ext::wire::EventPayload {
                tool_id: tool_id.to_string(),
                tool_name: tool_name.to_string(),
                tool_args: Some(current.borrow().clone()),
                ..zut_ext::wire::EventPayload::named("tool_call")
            },
            cancel,
            |ext, frame| {
                let ExtFrame::EventInterceptResponse { block, reason, modified_args, decision, .. } = frame else { return true };
                if block {
                    let reason = if reason.trim().is_empty() { "tool call refused by extension guard".into() } else { reason };
                    blocked = Some((ext.name.clone(), reason));
                    return false;
                }
                match (decision.as_str(), &confirm) {
                    ("ask", Confirm::Ask(_)) | ("approve", Confirm::Ask(_) | Confirm::Approve(_)) | ("", _) => {}
                    ("ask", _) => confirm = Confirm::Ask(ext.name.clone()),
                    ("approve", _) => confirm = Confirm::Approve(ext.name.clone()),
                    (other, _) => ext.conn.log_line(&format!(
                        "decision {other:?} for {tool_name} ignored: it must be \"approve\" or \"ask\""
                    )),
                }
                match modified_args {
                    Some(v @ Value::Object(_)) => *current.borrow_mut() = v,
                    Some(Value::Null) | None => {}
                    Some(other) => {
                        let msg = format!(
                            "modified_args for {tool_name} ignored: it must be a JSON object, got {}",
                            json_kind(&other)
                        );
                        ext.conn.log_line(&msg);
                    }
                }
                true
            },
        );
        ToolCallVerdict {
            blocked,
            args: current.into_inner(),
            confirm,
        }
    }

    /// Runs the `turn_start` interceptors: the first block wins; contexts
    /// are labelled with their extension, joined and bounded to [`CONTEXT_CAP`].
    pub fn intercept_turn_start(&self, step: u32, cancel: &CancelToken) -> TurnStartVerdict {
        let mut blocked = None;
        let mut parts: Vec<String> = Vec::new();
        self.intercept_chain(
            "turn_start",
            || zut_ext::wire::EventPayload {
                step: u64::from(step),
                ..zut_ext::wire::EventPayload::named("turn_start")
            },
            cancel,
            |ext, frame| {
                let ExtFrame::EventInterceptResponse {
                    block,
                    reason,
                    context,
                    ..
                } = frame
                else {
                    return true;
                };
                if block {
                    let reason = if reason.trim().is_empty() {
                        "turn blocked by extension guard".into()
                    } else {
                        reason
                    };
                    blocked = Some((ext.name.clone(), reason));
                    return false;
                }
                if !context.trim().is_empty() {
                    parts.push(format!("[{}]\n{}", ext.name, context.trim()));
                }
                true
            },
        );
        if blocked.is_some() {
            return TurnStartVerdict {
                blocked,
                context: None,
            };
        }
        let context = (!parts.is_empty()).then(|| bound_context(parts.join("\n\n")));
        TurnStartVerdict {
            blocked: None,
            context,
        }
    }

    /// Runs the `assistant_message` interceptors: the first block wins;
    /// non-empty replacements chain.
    pub fn intercept_assistant_message(
        &self,
        text: &str,
        cancel: &CancelToken,
    ) -> AssistantVerdict {
        let current = std::cell::RefCell::new(text.to_string());
        let mut blocked = None;
        if !text.is_empty() {
            self.intercept_chain(
                "assistant_message",
                || zut_ext::wire::EventPayload {
                    text: current.borrow().clone(),
                    ..zut_ext::wire::EventPayload::named("assistant_message")
                },
                cancel,
                |ext, frame| {
                    let ExtFrame::EventInterceptResponse {
                        block,
                        reason,
                        replace_text,
                        ..
                    } = frame
                    else {
                        return true;
                    };
                    if block {
                        blocked = Some((ext.name.clone(), reason));
                        return false;
                    }
                    if !replace_text.is_empty() {
                        *current.borrow_mut() = replace_text;
                    }
                    true
                },
            );
        }
        AssistantVerdict {
            blocked,
            text: current.into_inner(),
        }
    }

    /// Runs the `user_message` interceptors once per prompt: the first
    /// block wins; non-empty replacements chain; contexts are labelled,
    /// joined and bounded like `turn_start`'s.
    pub fn intercept_user_message(&self, text: &str, cancel: &CancelToken) -> UserMessageVerdict {
        let current = std::cell::RefCell::new(text.to_string());
        let mut blocked = None;
        let mut parts = Vec::new();
        self.intercept_chain(
            "user_message",
            || EventPayload {
                text: current.borrow().clone(),
                ..EventPayload::named("user_message")
            },
            cancel,
            |ext, frame| {
                let ExtFrame::EventInterceptResponse {
                    block,
                    reason,
                    replace_text,
                    context,
                    ..
                } = frame
                else {
                    return true;
                };
                if block {
                    blocked = Some((
                        ext.name.clone(),
                        or_default(reason, "prompt refused by extension guard"),
                    ));
                    return false;
                }
                if !replace_text.is_empty() {
                    *current.borrow_mut() = replace_text;
                }
                push_context(&mut parts, &ext.name, &context);
                true
            },
        );
        UserMessageVerdict {
            context: joined(&parts, &blocked),
            blocked,
            text: current.into_inner(),
        }
    }

    /// Runs the `tool_result` interceptors after a tool returned: the
    /// first block wins; each `replace_content` feeds the next
    /// interceptor; contexts are labelled, joined and bounded.
    pub fn intercept_tool_result(
        &self,
        result: &ToolResultSeen,
        cancel: &CancelToken,
    ) -> ToolResultVerdict {
        let current = std::cell::RefCell::new(result.content.clone());
        let mut replaced_by = None;
        let mut blocked = None;
        let mut parts = Vec::new();
        self.intercept_chain(
            "tool_result",
            || EventPayload {
                tool_id: result.id.clone(),
                tool_name: result.name.clone(),
                tool_args: Some(result.args.clone()),
                is_error: Some(result.is_error),
                content: Some(current.borrow().clone()),
                extension: result.extension.clone().unwrap_or_default(),
                ..EventPayload::named("tool_result")
            },
            cancel,
            |ext, frame| {
                let ExtFrame::EventInterceptResponse {
                    block,
                    reason,
                    replace_content,
                    context,
                    ..
                } = frame
                else {
                    return true;
                };
                if block {
                    blocked = Some((
                        ext.name.clone(),
                        or_default(reason, "tool result withheld by extension guard"),
                    ));
                    return false;
                }
                if let Some(content) = replace_content {
                    match crate::host::registry::check_content(&content) {
                        Ok(()) => {
                            *current.borrow_mut() = normalise_content(content, &ext.name);
                            replaced_by = Some(ext.name.clone());
                        }
                        Err(why) => ext.conn.log_line(&format!(
                            "replace_content for {} ignored: {why}",
                            result.name
                        )),
                    }
                }
                push_context(&mut parts, &ext.name, &context);
                true
            },
        );
        ToolResultVerdict {
            context: joined(&parts, &blocked),
            blocked,
            content: replaced_by.map(|ext| (ext, current.into_inner())),
        }
    }

    /// Runs the `agent_end` interceptors: `(extension, reason)` of the
    /// first that wants the prompt to go on.
    pub fn intercept_agent_end(
        &self,
        text: &str,
        steps: u32,
        continued: u32,
        cancel: &CancelToken,
    ) -> Option<(String, String)> {
        let mut go_on = None;
        self.intercept_chain(
            "agent_end",
            || EventPayload {
                text: text.to_string(),
                steps: u64::from(steps),
                continued: Some(u64::from(continued)),
                ..EventPayload::named("agent_end")
            },
            cancel,
            |ext, frame| match frame {
                ExtFrame::EventInterceptResponse {
                    block: true,
                    reason,
                    ..
                } => {
                    go_on = Some((ext.name.clone(), or_default(reason, "keep going")));
                    false
                }
                _ => true,
            },
        );
        go_on
    }
}

/// Consecutive missed intercept deadlines after which an extension's
/// intercepts are skipped for the rest of the run.
pub const BREAKER_MISSES: u32 = 3;

/// Missed intercept deadlines per extension name, for one run (a reload
/// keeps them: the same program is as deaf after a restart).
pub struct Breaker {
    /// Where its notes go; taken at shutdown, so that handles that outlive
    /// the host do not hold the front end's event channel open.
    events: Mutex<Option<EventOut>>,
    state: Mutex<HashMap<String, Misses>>,
}

#[derive(Default)]
struct Misses {
    /// Misses since the last answer.
    in_a_row: u32,
    /// The first-miss note was given.
    noted: bool,
    /// Its intercepts are skipped.
    open: bool,
}

impl Breaker {
    pub(super) fn new(events: EventOut) -> Breaker {
        Breaker {
            events: Mutex::new(Some(events)),
            state: Mutex::new(HashMap::new()),
        }
    }

    /// No more notes: the host stopped.
    pub(super) fn close(&self) {
        self.events.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Misses>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `extension`'s intercepts are skipped.
    pub fn is_open(&self, extension: &str) -> bool {
        self.lock().get(extension).is_some_and(|m| m.open)
    }

    /// `extension` answered an intercept: its count starts again.
    fn answered(&self, extension: &str) {
        if let Some(m) = self.lock().get_mut(extension) {
            m.in_a_row = 0;
        }
    }

    /// `extension` let the `event` intercept deadline pass: a note the
    /// first time, a warning (and no more intercepts) at the limit.
    fn missed(&self, extension: &str, event: &str, deadline: Duration) {
        let message = {
            let mut state = self.lock();
            let m = state.entry(extension.to_string()).or_default();
            m.in_a_row += 1;
            if m.in_a_row >= BREAKER_MISSES && !m.open {
                m.open = true;
                Some(format!(
                    "missed the intercept deadline {BREAKER_MISSES} times in a row; \
                     its intercepts are skipped for the rest of this run"
                ))
            } else if !m.noted {
                m.noted = true;
                Some(format!(
                    "did not answer the {event} intercept within {} ms, so zut went on \
                     without it; each miss delays the request by that long",
                    deadline.as_millis()
                ))
            } else {
                None
            }
        };
        if let Some(message) = message {
            let events = self
                .events
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            if let Some(events) = events {
                events.emit(Event::ExtWarning {
                    extension: extension.to_string(),
                    message,
                });
            }
        }
    }
}

/// Cuts `text` to [`CONTEXT_CAP`] bytes on a character boundary, marking it.
pub fn bound_context(text: String) -> String {
    if text.len() <= CONTEXT_CAP {
        return text;
    }
    let mut cut = CONTEXT_CAP - CONTEXT_TRUNCATED.len();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{CONTEXT_TRUNCATED}", text[..cut].trim_end())
}

/// The outcome of the `user_message` interceptor chain.
#[derive(Debug, Clone, PartialEq)]
pub struct UserMessageVerdict {
    pub blocked: Option<(String, String)>,
    /// What the model sees and the session saves.
    pub text: String,
    /// Hidden context for every request of this prompt, already bounded.
    pub context: Option<String>,
}

/// A finished tool call, as the `tool_result` interceptors see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultSeen {
    /// The model's call id.
    pub id: String,
    pub name: String,
    /// The arguments it ran with.
    pub args: Value,
    pub is_error: bool,
    pub content: Vec<ContentBlock>,
    /// The extension (or MCP server) that ran it; `None` for built-ins.
    pub extension: Option<String>,
}

/// The outcome of the `tool_result` interceptor chain.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultVerdict {
    /// The model gets an error with this reason instead of the result.
    pub blocked: Option<(String, String)>,
    /// The last replacing extension and the content after every rewrite.
    pub content: Option<(String, Vec<ContentBlock>)>,
    /// Hidden context for the next request, already bounded.
    pub context: Option<String>,
}

/// `reason`, or `fallback` when it is blank.
fn or_default(reason: String, fallback: &str) -> String {
    if reason.trim().is_empty() {
        fallback.to_string()
    } else {
        reason
    }
}

/// Adds an interceptor's context, labelled with its extension.
fn push_context(parts: &mut Vec<String>, extension: &str, context: &str) {
    if !context.trim().is_empty() {
        parts.push(format!("[{extension}]\n{}", context.trim()));
    }
}

/// The joined, bounded context; none once the chain blocked.
fn joined(parts: &[String], blocked: &Option<(String, String)>) -> Option<String> {
    (blocked.is_none() && !parts.is_empty()).then(|| bound_context(parts.join("\n\n")))
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_is_bounded_on_a_char_boundary() {
        let long = "é".repeat(CONTEXT_CAP);
        let b = bound_context(long);
        assert!(b.len() <= CONTEXT_CAP);
        assert!(b.ends_with(CONTEXT_TRUNCATED));
        assert_eq!(bound_context("short".into()), "short");
    }
}
