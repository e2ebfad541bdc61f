//! The agent: one prompt in, model calls and tool calls until the model ends
//! its turn.
//!
//! Per step: `turn_start` (event, then interceptors, which may block the
//! turn or add hidden context for this request only) → provider call with
//! text streamed as `text_delta` → `turn_end` → the assistant message
//! (interceptors may hide or rewrite what the user sees; the transcript
//! keeps the original) → for each tool call: `tool_call` event,
//! interceptors (block or rewrite args), confirmation, execution → results
//! appended → next step. Every step of it is reported on the event stream.
//!
//! Tool calls of one step run concurrently when they go to extensions;
//! built-in tools run one after another in the model's order (two edits of
//! one file must not race); results are reported in the model's order.

pub mod tools;

use crate::cancel::CancelToken;
use crate::events::{Event, EventSink};
use crate::host::Host;
use crate::provider::{
    Block, Message, Provider, ProviderError, Request, Role, StopReason, StreamEvent, ToolDef,
};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tools::{ToolContext, ToolOutput};
use zut_ext::wire::{ContentBlock, EventPayload};

/// Tools that change the machine and so ask a person first.
pub const CONFIRMED_TOOLS: &[&str] = &["bash", "write", "edit"];

/// A person's answer to a confirmation question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
    /// Allow, and do not ask again for this tool in this session.
    Always,
}

/// A question for the person at the front end.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfirmRequest {
    /// Unique within the process; the front end answers by it.
    pub request_id: u64,
    pub tool_id: String,
    pub tool_name: String,
    /// Short summary of what will run (the dialog's text).
    pub preview: String,
    pub args: Value,
}

/// Something that can ask a person (the TUI dialog, an RPC client).
pub trait Confirmer: Send + Sync {
    /// Blocks until answered; cancellation counts as deny.
    fn confirm(&self, req: &ConfirmRequest, cancel: &CancelToken) -> Decision;
}

/// How one prompt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The model ended its turn; the text the user sees (None if blocked).
    Done {
        text: Option<String>,
    },
    /// A `turn_start` interceptor refused.
    Blocked {
        reason: String,
    },
    MaxSteps {
        text: Option<String>,
    },
    Failed {
        error: String,
    },
    Aborted,
}

/// Agent settings.
pub struct Options {
    pub cwd: PathBuf,
    pub max_steps: u32,
    /// Run bash/write/edit without asking.
    pub yolo: bool,
    /// Who answers confirmations; `None` outside interactive front ends.
    pub confirmer: Option<Arc<dyn Confirmer>>,
}

/// A conversation with a model.
pub struct Agent<'h> {
    provider: Box<dyn Provider>,
    host: &'h Host,
    sink: Arc<dyn EventSink>,
    opts: Options,
    system: String,
    transcript: Vec<Message>,
    activated: HashSet<String>,
    approved: HashSet<String>,
    next_call: u64,
}

impl<'h> Agent<'h> {
    pub fn new(
        provider: Box<dyn Provider>,
        host: &'h Host,
        sink: Arc<dyn EventSink>,
        opts: Options,
        zut_home: &Path,
    ) -> Self {
        let mut agent = Agent {
            provider,
            host,
            sink,
            system: String::new(),
            opts,
            transcript: Vec::new(),
            activated: HashSet::new(),
            approved: HashSet::new(),
            next_call: 0,
        };
        agent.system = system_prompt(&agent.opts.cwd, zut_home, &agent.tool_defs());
        agent
    }

    /// The transcript so far.
    pub fn transcript(&self) -> &[Message] {
        &self.transcript
    }

    /// The tools the next request advertises: built-ins, then extension
    /// tools in registration order (deferred ones once activated).
    pub fn tool_defs(&self) -> Vec<ToolDef> {
        let mut defs = tools::definitions();
        defs.extend(
            self.host
                .tools()
                .into_iter()
                .filter(|t| !t.deferred || self.activated.contains(&t.name))
                .map(|t| ToolDef {
                    name: t.name,
                    description: t.description,
                    schema: t.schema,
                }),
        );
        defs
    }

    fn emit(&self, e: Event) {
        self.sink.emit(e);
    }

    /// Runs one user prompt to the end.
    pub fn prompt(&mut self, text: &str, cancel: &CancelToken) -> Outcome {
        self.transcript.push(Message::user_text(text));
        self.emit(Event::UserMessage {
            text: text.to_string(),
        });
        let mut last_text: Option<String> = None;
        for step in 1..=self.opts.max_steps {
            if cancel.is_cancelled() {
                return self.end_aborted();
            }
            let hidden = match self.start_turn(step, cancel) {
                Ok(h) => h,
                Err(outcome) => return outcome,
            };
            let tools = self.tool_defs();
            let req = Request {
                step,
                system: &self.system,
                messages: &self.transcript,
                tools: &tools,
                hidden_context: &hidden,
            };
            let sink = self.sink.clone();
            let mut on_event = |e: StreamEvent<'_>| match e {
                StreamEvent::TextDelta(d) => sink.emit(Event::TextDelta {
                    delta: d.to_string(),
                }),
            };
            let resp = match self.provider.complete(&req, &mut on_event, cancel) {
                Ok(r) => r,
                Err(ProviderError::Aborted) => return self.end_aborted(),
                Err(e) => {
                    return self.end_turn(
                        "error",
                        Outcome::Failed {
                            error: e.to_string(),
                        },
                    )
                }
            };
            let stop = match resp.stop {
                _ if !resp.tool_calls.is_empty() => "tool_use",
                StopReason::ToolUse | StopReason::EndTurn => "end_turn",
                StopReason::Length => "length",
                StopReason::Refusal => "refusal",
            };
            self.emit(Event::TurnEnd {
                stop: stop.into(),
                error: String::new(),
            });
            self.host_event(EventPayload {
                stop: stop.into(),
                ..EventPayload::named("turn_end")
            });
            let mut content = Vec::new();
            if !resp.text.is_empty() {
                content.push(Block::Text {
                    text: resp.text.clone(),
                });
            }
            for c in &resp.tool_calls {
                content.push(Block::ToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    args: c.args.clone(),
                });
            }
            self.transcript.push(Message {
                role: Role::Assistant,
                content,
            });
            last_text = self.show_assistant(&resp.text, cancel);
            if resp.tool_calls.is_empty() {
                return Outcome::Done { text: last_text };
            }
            let results = self.run_tools(&resp.tool_calls, cancel);
            self.transcript.push(Message {
                role: Role::User,
                content: results,
            });
            if cancel.is_cancelled() {
                return self.end_aborted();
            }
        }
        self.emit(Event::TurnEnd {
            stop: "max_steps".into(),
            error: String::new(),
        });
        Outcome::MaxSteps { text: last_text }
    }

    fn end_aborted(&self) -> Outcome {
        self.end_turn("aborted", Outcome::Aborted)
    }

    fn end_turn(&self, stop: &str, outcome: Outcome) -> Outcome {
        let error = match &outcome {
            Outcome::Failed { error } => error.clone(),
            Outcome::Blocked { reason } => reason.clone(),
            _ => String::new(),
        };
        self.emit(Event::TurnEnd {
            stop: stop.into(),
            error: error.clone(),
        });
        self.host_event(EventPayload {
            stop: stop.into(),
            error,
            ..EventPayload::named("turn_end")
        });
        outcome
    }

    fn host_event(&self, payload: EventPayload) {
        if self.host.subscribed(&payload.event) {
            self.host.emit_event(&payload);
        }
    }

    /// `turn_start` event and interceptors; the hidden context to send.
    fn start_turn(&self, step: u32, cancel: &CancelToken) -> Result<Vec<String>, Outcome> {
        self.emit(Event::TurnStart { step });
        self.host_event(EventPayload {
            step: u64::from(step),
            ..EventPayload::named("turn_start")
        });
        let verdict = self.host.intercept_turn_start(step, cancel);
        if let Some((ext, reason)) = verdict.blocked {
            let reason = format!("{reason} (blocked by extension {ext})");
            self.emit(Event::TurnBlocked {
                reason: reason.clone(),
            });
            return Err(self.end_turn("error", Outcome::Blocked { reason }));
        }
        Ok(verdict.context.into_iter().collect())
    }

    /// Runs the `assistant_message` chain and reports what the user sees.
    fn show_assistant(&self, text: &str, cancel: &CancelToken) -> Option<String> {
        let verdict = self.host.intercept_assistant_message(text, cancel);
        if let Some((ext, reason)) = verdict.blocked {
            let reason = match reason.trim() {
                "" => format!("withheld by extension {ext}"),
                r => format!("withheld by extension {ext}: {r}"),
            };
            self.emit(Event::AssistantMessage {
                text: String::new(),
                blocked: true,
                reason,
            });
            return None;
        }
        self.emit(Event::AssistantMessage {
            text: verdict.text.clone(),
            blocked: false,
            reason: String::new(),
        });
        self.host_event(EventPayload {
            text: verdict.text.clone(),
            ..EventPayload::named("assistant_message")
        });
        Some(verdict.text)
    }

    /// Runs one step's tool calls; returns the result blocks in model order.
    fn run_tools(
        &mut self,
        calls: &[crate::provider::ToolCall],
        cancel: &CancelToken,
    ) -> Vec<Block> {
        // Guard every call first, in order: events, interceptors, confirmation.
        let mut planned: Vec<(String, String, Result<Value, String>)> =
            Vec::with_capacity(calls.len());
        for call in calls {
            self.next_call += 1;
            let id = if call.id.is_empty() {
                format!("call_{}", self.next_call)
            } else {
                call.id.clone()
            };
            planned.push((
                id.clone(),
                call.name.clone(),
                self.guard(&id, &call.name, call.args.clone(), cancel),
            ));
        }
        let host = self.host;
        let ctx = &ToolContext {
            cwd: self.opts.cwd.clone(),
        };
        let outputs: Vec<(ToolOutput, Option<String>, Vec<String>)> = std::thread::scope(|s| {
            let mut handles = Vec::with_capacity(planned.len());
            let ext_calls = planned
                .iter()
                .filter(|(_, n, a)| a.is_ok() && host.tool(n).is_some())
                .count();
            for (_, name, args) in &planned {
                let run = move || execute(host, name, args, ctx, cancel);
                let concurrent = ext_calls > 1
                    && args.is_ok()
                    && !tools::BUILTIN_NAMES.contains(&name.as_str())
                    && host.tool(name).is_some();
                handles.push(if concurrent {
                    Err(s.spawn(run))
                } else {
                    Ok(run())
                });
            }
            handles
                .into_iter()
                .map(|h| match h {
                    Ok(r) => r,
                    Err(j) => j.join().unwrap_or_else(|_| {
                        (ToolOutput::error("tool thread panicked"), None, Vec::new())
                    }),
                })
                .collect()
        });
        let mut blocks = Vec::with_capacity(planned.len());
        for ((id, name, _), (out, extension, activate)) in planned.into_iter().zip(outputs) {
            for t in activate {
                if host.tool(&t).is_some_and(|e| e.deferred) {
                    self.activated.insert(t);
                }
            }
            self.emit(Event::ToolResult {
                id: id.clone(),
                name,
                is_error: out.is_error,
                content: out.content.clone(),
                extension,
            });
            blocks.push(Block::ToolResult {
                call_id: id,
                is_error: out.is_error,
                content: out.content,
            });
        }
        blocks
    }

    /// Event, interceptors and confirmation for one call: the effective
    /// arguments, or the error the model receives instead of running it.
    fn guard(
        &mut self,
        id: &str,
        name: &str,
        args: Value,
        cancel: &CancelToken,
    ) -> Result<Value, String> {
        self.host_event(EventPayload {
            tool_id: id.into(),
            tool_name: name.into(),
            tool_args: Some(args.clone()),
            ..EventPayload::named("tool_call")
        });
        let verdict = self.host.intercept_tool_call(id, name, args, cancel);
        if let Some((ext, reason)) = verdict.blocked {
            self.emit(Event::ToolBlocked {
                id: id.into(),
                name: name.into(),
                reason: reason.clone(),
            });
            log::info!("tool call {name} ({id}) blocked by {ext}: {reason}");
            return Err(reason);
        }
        let args = verdict.args;
        self.emit(Event::ToolCall {
            id: id.into(),
            name: name.into(),
            args: args.clone(),
        });
        if CONFIRMED_TOOLS.contains(&name) && !self.opts.yolo && !self.approved.contains(name) {
            let Some(confirmer) = self.opts.confirmer.clone() else {
                return Err(format!(
                    "{name} needs confirmation, and nobody can confirm in this mode: run zut with --yolo to allow {name}, write and edit without asking"
                ));
            };
            self.next_call += 1;
            let req = ConfirmRequest {
                request_id: self.next_call,
                tool_id: id.into(),
                tool_name: name.into(),
                preview: preview(&args),
                args: args.clone(),
            };
            self.emit(Event::ConfirmationRequested {
                request_id: req.request_id,
                tool_id: id.into(),
                tool_name: name.into(),
                preview: req.preview.clone(),
            });
            self.host_event(EventPayload {
                tool_id: id.into(),
                tool_name: name.into(),
                tool_preview: req.preview.clone(),
                ..EventPayload::named("tool_confirmation_requested")
            });
            match confirmer.confirm(&req, cancel) {
                Decision::Allow => {}
                Decision::Always => {
                    self.approved.insert(name.to_string());
                }
                Decision::Deny => return Err(format!("the user declined to run {name}")),
            }
        }
        Ok(args)
    }
}

/// Runs one guarded call: a built-in, an extension tool, or an error.
fn execute(
    host: &Host,
    name: &str,
    args: &Result<Value, String>,
    ctx: &ToolContext,
    cancel: &CancelToken,
) -> (ToolOutput, Option<String>, Vec<String>) {
    let args = match args {
        Ok(a) => a,
        Err(reason) => return (ToolOutput::error(reason.clone()), None, Vec::new()),
    };
    if let Some(out) = tools::run(name, args, ctx, cancel) {
        return (out, None, Vec::new());
    }
    match host.call_tool(name, args, cancel) {
        Some(r) => (
            ToolOutput {
                content: r.content,
                is_error: r.is_error,
            },
            Some(r.extension),
            r.activate_tools,
        ),
        None => (
            ToolOutput::error(format!("unknown tool {name:?}")),
            None,
            Vec::new(),
        ),
    }
}

/// The confirmation dialog's one-line summary: the first of `command`,
/// `path`, `file_path`, `url`, `query`, `name`, else compact JSON; ≤ 120 chars.
pub fn preview(args: &Value) -> String {
    let text = ["command", "path", "file_path", "url", "query", "name"]
        .iter()
        .find_map(|k| {
            args.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
        })
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| args.to_string());
    if text.chars().count() <= 120 {
        return text;
    }
    let cut: String = text.chars().take(117).collect();
    format!("{cut}...")
}

/// Identity, project directory, tools, and AGENTS.md files.
pub fn system_prompt(cwd: &Path, zut_home: &Path, tools: &[ToolDef]) -> String {
    let mut s = String::from(
        "You are zut, a coding agent working in a terminal on the user's project. \
         Use the tools to inspect and change files and run commands; keep answers short and concrete.\n",
    );
    s.push_str(&format!("\nProject directory: {}\n", cwd.display()));
    s.push_str("\nTools:\n");
    for t in tools {
        let first = t.description.lines().next().unwrap_or("");
        s.push_str(&format!("- {}: {first}\n", t.name));
    }
    for path in [zut_home.join("AGENTS.md"), cwd.join("AGENTS.md")] {
        if let Ok(text) = std::fs::read_to_string(&path) {
            if !text.trim().is_empty() {
                s.push_str(&format!(
                    "\nInstructions from {}:\n{}\n",
                    path.display(),
                    text.trim()
                ));
            }
        }
    }
    s
}

/// The text blocks of a tool result, joined (for front ends).
pub fn content_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn preview_prefers_known_fields_and_is_bounded() {
        assert_eq!(
            preview(&json!({"command":" ls -la ","timeout":5})),
            "ls -la"
        );
        assert_eq!(preview(&json!({"path":"a.rs","content":"x"})), "a.rs");
        assert_eq!(preview(&json!({"x":1})), "{\"x\":1}");
        let long = preview(&json!({"command": "y".repeat(300)}));
        assert_eq!(long.chars().count(), 120);
        assert!(long.ends_with("..."));
    }
}
