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
//! Tool calls of one step run one after another in the model's order, each
//! intercepted, confirmed, executed and answered before the next is sent
//! (an extension sees its calls in the order the model made them).
//!
//! Lifecycle events to extensions, per step: `turn_start`, then
//! `assistant_message`, one `tool_call` per call with the model's original
//! arguments, `turn_end`, then per call its interception and execution.

pub mod auto_compact;
mod cap;
pub mod tools;

use crate::cancel::CancelToken;
use crate::events::{Event, EventSink};
use crate::host::HostHandle;
use crate::provider::{
    Block, Message, Provider, ProviderError, Request, Role, StopReason, StreamEvent, ToolDef,
};
use crate::transcript::Transcript;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tools::{ToolContext, ToolOutput};
use zut_ext::wire::{ContentBlock, EventPayload};

/// How often the interceptors and `Stop` hooks may keep one prompt going.
pub const MAX_CONTINUES: u32 = 8;

/// The timeout of a `!command` ([`Agent::run_shell`]): long, since the
/// person watches it and Esc ends it.
pub const SHELL_TIMEOUT_SECS: u64 = 600;

/// Tools that change the machine and so ask a person first.
pub const CONFIRMED_TOOLS: &[&str] = &["bash", "write", "edit"];

/// [`CONFIRMED_TOOLS`] as prose: `bash, write and edit`.
fn confirmed_tools_list() -> String {
    match CONFIRMED_TOOLS.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// A person's answer to a confirmation question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
    /// Allow, and do not ask again in this session for the same scope
    /// ([`approval_scope`]): this exact command, this file, this tool.
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
    /// Claude Code hooks (zut-hooks(7)); empty with `--no-hooks`.
    pub hooks: Arc<crate::hooks::Hooks>,
    /// The run's MCP servers ([`crate::mcp::hub::Hub::default`]: none).
    pub mcp: Arc<crate::mcp::hub::Hub>,
}

/// What the agent reports as it goes, on its own thread (the session
/// store listens here).
pub trait Observer: Send {
    /// A message was appended to the transcript (the model's original
    /// text, before any `replace_text`; a continuation with who added it).
    fn message(&mut self, _message: &Message) {}
    /// An extension's tool result carried `details`: its new state on the
    /// active branch (`null` clears). An error refuses it with that reason.
    fn state(&mut self, _extension: &str, _state: &Value) -> Result<(), String> {
        Ok(())
    }
    /// Where an automatic compaction would cut the transcript (`None`: no
    /// session, nothing to compact, or `auto_compact` off).
    fn compact_point(&self) -> Option<usize> {
        None
    }
    /// Replaces the history before [`Observer::compact_point`] with
    /// `summary` (reason `auto` or `manual`); returns the transcript to go
    /// on with (the session's, compacted in place).
    fn compact(&mut self, _summary: &str, _reason: &str) -> Result<Transcript, String> {
        Err("no session to compact".into())
    }
}

/// A conversation with a model.
pub struct Agent {
    provider: Box<dyn Provider>,
    host: HostHandle,
    observer: Option<Box<dyn Observer>>,
    /// The host's load generation the system prompt was built for.
    generation: u64,
    /// The MCP hub's tool generation the system prompt was built for.
    mcp_generation: u64,
    zut_home: PathBuf,
    sink: Arc<dyn EventSink>,
    opts: Options,
    system: String,
    /// Shared with the session and the engine's view, never copied
    /// ([`Transcript`]); only this agent appends to it.
    transcript: Transcript,
    activated: HashSet<String>,
    approved: HashSet<String>,
    next_call: u64,
    /// Hidden context from hooks: this prompt's, and the next request's.
    hook_context: (Vec<String>, Vec<String>),
    /// The most bytes of text of one tool result the model sees.
    result_cap: usize,
    /// `!command`s run so far, for their call ids.
    shell_runs: u64,
}

impl Agent {
    pub fn new(
        provider: Box<dyn Provider>,
        host: HostHandle,
        sink: Arc<dyn EventSink>,
        opts: Options,
        zut_home: &Path,
    ) -> Self {
        let generation = host.view().generation;
        let mut agent = Agent {
            provider,
            host,
            observer: None,
            generation,
            mcp_generation: opts.mcp.generation(),
            zut_home: zut_home.to_path_buf(),
            sink,
            system: String::new(),
            opts,
            transcript: Transcript::default(),
            activated: HashSet::new(),
            approved: HashSet::new(),
            next_call: 0,
            hook_context: Default::default(),
            result_cap: cap::limit(zut_home),
            shell_runs: 0,
        };
        agent.system = agent.build_system();
        agent
    }

    /// The transcript so far.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Goes on with `transcript` (a resumed or switched session's, shared
    /// with it): later messages are appended to that list.
    pub fn set_transcript(&mut self, transcript: Transcript) {
        self.transcript = transcript;
    }

    /// Hidden context for the next provider request only (a
    /// `SessionStart` hook's output).
    pub fn add_next_context(&mut self, context: Vec<String>) {
        self.hook_context.1.extend(context);
    }

    /// Who hears about messages and extension state.
    pub fn set_observer(&mut self, observer: Option<Box<dyn Observer>>) {
        self.observer = observer;
    }

    /// Uses another provider from the next request on (`/model`).
    pub fn set_provider(&mut self, provider: Box<dyn Provider>) {
        self.provider = provider;
    }

    /// Sends one request outside a turn (compaction): no events, no tools.
    pub fn complete_once(
        &mut self,
        messages: &[Message],
        cancel: &CancelToken,
    ) -> Result<String, String> {
        let req = Request {
            step: 1,
            system: &self.system,
            messages,
            tools: &[],
            hidden_context: &[],
        };
        let mut ignore = |_: StreamEvent<'_>| {};
        self.provider
            .complete(&req, &mut ignore, cancel)
            .map(|r| r.text)
            .map_err(|e| e.to_string())
    }

    /// `!command` typed in the terminal: the built-in `bash` tool run for
    /// the person, through exactly the checks a model's call goes through
    /// (interceptors, `PreToolUse` hooks, the confirmation unless `--yolo`
    /// or an "always" for this exact command). The call and its result are
    /// reported as a tool call; when it ran, its output (capped like a tool
    /// result) joins the transcript as a user message "`$ command`" plus
    /// the output, so the model sees it with the next prompt. Returns the
    /// reason when it did not run.
    pub fn run_shell(&mut self, command: &str, cancel: &CancelToken) -> Result<(), String> {
        self.shell_runs += 1;
        let id = format!("shell_{}", self.shell_runs);
        let args = serde_json::json!({"command": command, "timeout": SHELL_TIMEOUT_SECS});
        let (out, _, ran) = self.call_one(&id, "bash", args, cancel);
        let content = out.content;
        self.emit(Event::ToolResult {
            id,
            name: "bash".into(),
            is_error: out.is_error,
            content: content.clone(),
            extension: None,
            replaced_by: None,
        });
        if !ran {
            return Err(content_text(&content));
        }
        let output = content_text(&content);
        self.push(Message::user_text(format!(
            "`$ {}`\n{}",
            command.trim(),
            output.trim_end()
        )));
        Ok(())
    }

    fn push(&mut self, message: Message) {
        if let Some(o) = self.observer.as_mut() {
            o.message(&message);
        }
        self.transcript.push(message);
    }

    /// After `/reload-ext` the tools and skills changed: rebuild the
    /// system prompt.
    fn refresh_tools(&mut self) {
        let generation = self.host.view().generation;
        if generation != self.generation {
            self.generation = generation;
            // The model was told it may call what it activated "from now
            // on": a reload keeps what the extensions still offer.
            let activated = std::mem::take(&mut self.activated);
            self.activated = activated
                .into_iter()
                .filter(|n| self.is_deferred(n))
                .collect();
            self.system = self.build_system();
        }
        let mcp = self.opts.mcp.generation();
        if mcp != self.mcp_generation {
            self.mcp_generation = mcp;
            self.system = self.build_system();
        }
    }

    /// The skills of the host's current load (`None` with `--no-skills`).
    fn skills(&self) -> Option<Arc<crate::skills::SkillSet>> {
        self.host.view().skills.clone()
    }

    fn build_system(&self) -> String {
        let skills = self.skills().unwrap_or_default();
        system_prompt(&self.opts.cwd, &self.zut_home, &self.tool_defs(), &skills)
    }

    /// The tools the next request advertises: built-ins, `tool_search`
    /// while a deferred tool exists, then extension tools in registration
    /// order and MCP tools in config order (deferred ones once activated).
    pub fn tool_defs(&self) -> Vec<ToolDef> {
        let mut defs = tools::definitions();
        if self.skills().is_some_and(|s| s.offers_model_skills()) {
            defs.push(tools::skill::definition());
        }
        let mcp = self.opts.mcp.tools();
        if !self.deferred_tools(&mcp).is_empty() {
            defs.push(tools::tool_search::definition());
        }
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
        defs.extend(
            mcp.into_iter()
                .filter(|t| !t.deferred || self.activated.contains(&t.tool.name))
                .map(|t| ToolDef {
                    name: t.tool.name,
                    description: t.tool.description,
                    schema: t.tool.schema,
                }),
        );
        defs
    }

    /// Every deferred tool (extensions', then MCP servers'), activated or
    /// not: what `tool_search` searches.
    fn deferred_tools(
        &self,
        mcp: &[crate::mcp::hub::HubTool],
    ) -> Vec<tools::tool_search::Candidate> {
        let ext = self
            .host
            .tools()
            .into_iter()
            .filter(|t| t.deferred)
            .map(|t| (t.name, t.description));
        let mcp = mcp
            .iter()
            .filter(|t| t.deferred)
            .map(|t| (t.tool.name.clone(), t.tool.description.clone()));
        ext.chain(mcp)
            .map(|(name, description)| tools::tool_search::Candidate { name, description })
            .collect()
    }

    /// Whether `name` is a deferred tool that activation can offer.
    fn is_deferred(&self, name: &str) -> bool {
        self.host.tool(name).is_some_and(|e| e.deferred)
            || self.opts.mcp.tool(name).is_some_and(|t| t.deferred)
    }

    /// Whether a call of `name` asks a person first (unless `--yolo` or a
    /// remembered approval): bash, write and edit, and MCP tools unless
    /// read-only (`readOnlyHint`) or their server says `confirm: false`.
    pub fn needs_confirmation(&self, name: &str) -> bool {
        CONFIRMED_TOOLS.contains(&name) || self.opts.mcp.tool(name).is_some_and(|t| t.confirm)
    }

    /// Runs one guarded call: `tool_search` and MCP tools here, everything
    /// else through [`execute`]. Same return as [`execute`].
    fn execute(
        &self,
        id: &str,
        name: &str,
        args: &Result<Value, String>,
        ctx: &ToolContext,
        cancel: &CancelToken,
    ) -> (ToolOutput, Option<String>, Vec<String>, Option<Value>) {
        if let Ok(a) = args {
            if name == tools::tool_search::NAME {
                let candidates = self.deferred_tools(&self.opts.mcp.tools());
                if !candidates.is_empty() {
                    let (out, activate) = tools::tool_search::run(a, &candidates);
                    return (out, None, activate, None);
                }
            }
            if name.starts_with("mcp__") {
                let server = (self.opts.mcp.tool(name))
                    .map(|t| crate::mcp::hub::participant(&t.server))
                    .unwrap_or_default();
                let mut progress = |p: crate::host::Progress| self.progress(id, name, &server, &p);
                if let Some((content, is_error, server)) =
                    self.opts.mcp.call(name, a, cancel, &mut progress)
                {
                    return (
                        ToolOutput { content, is_error },
                        Some(server),
                        Vec::new(),
                        None,
                    );
                }
            }
        }
        let skills = self.skills();
        let mut progress =
            |extension: &str, p: &crate::host::Progress| self.progress(id, name, extension, p);
        execute(
            &self.host,
            skills.as_deref(),
            name,
            args,
            ctx,
            cancel,
            &mut progress,
        )
    }

    fn emit(&self, e: Event) {
        self.sink.emit(e);
    }

    /// A running call's progress report, as the `tool_progress` event.
    fn progress(&self, id: &str, name: &str, extension: &str, p: &crate::host::Progress) {
        self.emit(Event::ToolProgress {
            id: id.to_string(),
            name: name.to_string(),
            extension: extension.to_string(),
            message: p.message.clone(),
            progress: p.progress,
            total: p.total,
        })
    }

    /// Runs one user prompt to the end.
    pub fn prompt(&mut self, text: &str, cancel: &CancelToken) -> Outcome {
        // The first request waits for MCP servers still starting (each up
        // to its startup timeout); later ones find them all settled.
        self.opts.mcp.wait_ready(cancel);
        self.refresh_tools();
        let verdict = self.host.intercept_user_message(text, cancel);
        if let Some((extension, reason)) = verdict.blocked {
            self.emit(Event::PromptBlocked {
                extension: extension.clone(),
                reason: reason.clone(),
            });
            return Outcome::Blocked {
                reason: format!("the prompt was refused by extension {extension}: {reason}"),
            };
        }
        let text = verdict.text.as_str();
        match crate::hooks::agent::prompt_submit(&self.opts.hooks, text, &*self.sink) {
            Ok(context) => {
                self.hook_context.0 = verdict.context.into_iter().chain(context).collect()
            }
            Err(reason) => return Outcome::Blocked { reason },
        }
        let mut continued = 0;
        let mut last_continuer = String::new();
        self.push(Message::user_text(text));
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
            let mut hidden = hidden;
            hidden.extend(self.hook_context.0.iter().cloned());
            hidden.append(&mut self.hook_context.1);
            let tools = self.tool_defs();
            // While an extension may rewrite or withhold the answer, its
            // text is not streamed: the interceptor's verdict is shown
            // whole ([`Agent::show_assistant`]), so a redaction is airtight
            // for streaming clients too.
            let held = self.answers_intercepted();
            let resp = match self.request(step, &tools, &hidden, held, cancel) {
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
            let mut content = resp.thinking.clone();
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
            self.push(Message::new(Role::Assistant, content));
            last_text = self.show_assistant(&resp.text, held, cancel);
            let calls = self.number_calls(&resp.tool_calls);
            for (id, call) in &calls {
                self.host_event(EventPayload {
                    tool_id: id.clone(),
                    tool_name: call.name.clone(),
                    tool_args: Some(call.args.clone()),
                    ..EventPayload::named("tool_call")
                });
            }
            self.emit(Event::TurnEnd {
                stop: stop.into(),
                error: String::new(),
            });
            self.host_event(EventPayload {
                stop: stop.into(),
                ..EventPayload::named("turn_end")
            });
            if calls.is_empty() {
                if stop == "end_turn" {
                    if continued == MAX_CONTINUES {
                        self.emit(Event::ExtWarning {
                            extension: last_continuer,
                            message: format!("it kept the prompt going {MAX_CONTINUES} times; the prompt ends here"),
                        });
                        return Outcome::Done { text: last_text };
                    }
                    if let Some(who) =
                        self.keep_going(last_text.as_deref(), step, continued, cancel)
                    {
                        continued += 1;
                        last_continuer = who;
                        continue;
                    }
                }
                return Outcome::Done { text: last_text };
            }
            let results = self.run_tools(&calls, cancel);
            self.push(Message::new(Role::User, results));
            if cancel.is_cancelled() {
                return self.end_aborted();
            }
            if let Some(reason) = crate::hooks::agent::halted(&self.opts.hooks) {
                return self.end_turn("error", Outcome::Blocked { reason });
            }
        }
        // Extensions hear it too, like every other end of a turn.
        self.end_turn("max_steps", Outcome::MaxSteps { text: last_text })
    }

    /// Asks the `agent_end` interceptors, then the `Stop` hooks, whether
    /// the prompt may end; one that says no gets its reason sent to the
    /// model as a user message (saved with its name). Returns who.
    fn keep_going(
        &mut self,
        text: Option<&str>,
        step: u32,
        continued: u32,
        cancel: &CancelToken,
    ) -> Option<String> {
        let text = text.unwrap_or("");
        if let Some((ext, reason)) = self.host.intercept_agent_end(text, step, continued, cancel) {
            self.emit(Event::PromptContinued {
                extension: ext.clone(),
                reason: reason.clone(),
            });
            self.push(Message::continuation(reason, &ext));
            return Some(ext);
        }
        let sink = self.sink.clone();
        let reason = crate::hooks::agent::stop(&self.opts.hooks, continued, &*sink)?;
        self.push(Message::continuation(reason, crate::hooks::CONTINUED_BY));
        Some("hooks".into())
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

    /// Whether an extension intercepts `assistant_message`.
    fn answers_intercepted(&self) -> bool {
        self.host
            .view()
            .exts
            .iter()
            .any(|e| e.intercepts.iter().any(|i| i == "assistant_message"))
    }

    /// Runs the `assistant_message` chain and reports what the user sees;
    /// when the text was `held` back from streaming, what may be seen is
    /// streamed now, as one delta.
    fn show_assistant(&self, text: &str, held: bool, cancel: &CancelToken) -> Option<String> {
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
        if held && !verdict.text.is_empty() {
            self.emit(Event::TextDelta {
                delta: verdict.text.clone(),
            });
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

    /// Gives every call of a step an id (the model's, else a fresh one).
    fn number_calls(
        &mut self,
        calls: &[crate::provider::ToolCall],
    ) -> Vec<(String, crate::provider::ToolCall)> {
        calls
            .iter()
            .map(|call| {
                self.next_call += 1;
                let id = if call.id.is_empty() {
                    format!("call_{}", self.next_call)
                } else {
                    call.id.clone()
                };
                (id, call.clone())
            })
            .collect()
    }

    /// Runs one step's tool calls one after another in the model's order:
    /// each is guarded, executed and reported before the next begins.
    fn run_tools(
        &mut self,
        calls: &[(String, crate::provider::ToolCall)],
        cancel: &CancelToken,
    ) -> Vec<Block> {
        let ctx = ToolContext {
            cwd: self.opts.cwd.clone(),
        };
        let mut blocks = Vec::with_capacity(calls.len());
        for (id, call) in calls {
            let name = call.name.clone();
            let (out, extension, ran) = if cancel.is_cancelled() {
                (ToolOutput::error("aborted"), None, None)
            } else if let Some(why) = &call.invalid_args {
                (ToolOutput::error(why.clone()), None, None)
            } else {
                let args = self.guard(id, &name, call.args.clone(), cancel);
                let (out, extension, activate, details) =
                    self.execute(id, &name, &args, &ctx, cancel);
                for t in activate {
                    if self.is_deferred(&t) {
                        self.activated.insert(t);
                    }
                }
                if let (Some(ext), Some(state)) = (&extension, details) {
                    self.commit_state(ext, &state);
                }
                (out, extension, args.ok())
            };
            let out = ToolOutput {
                content: cap::cap(out.content, self.result_cap),
                ..out
            };
            let (out, replaced_by) = match ran {
                Some(args) => self.after_tool(id, &name, &args, out, &extension, cancel),
                None => (out, None),
            };
            self.emit(Event::ToolResult {
                id: id.clone(),
                name,
                is_error: out.is_error,
                content: out.content.clone(),
                extension,
                replaced_by,
            });
            blocks.push(Block::ToolResult {
                call_id: id.clone(),
                is_error: out.is_error,
                content: out.content,
            });
        }
        blocks
    }

    /// What the model gets from a call that ran: the `tool_result`
    /// interceptors may replace or withhold the output and add hidden
    /// context for the next request; then the `PostToolUse` hooks see the
    /// final output. Returns it and who replaced it.
    fn after_tool(
        &mut self,
        id: &str,
        name: &str,
        args: &Value,
        out: ToolOutput,
        extension: &Option<String>,
        cancel: &CancelToken,
    ) -> (ToolOutput, Option<String>) {
        let seen = crate::host::ToolResultSeen {
            id: id.to_string(),
            name: name.to_string(),
            args: args.clone(),
            is_error: out.is_error,
            content: out.content,
            extension: extension.clone(),
        };
        let verdict = self.host.intercept_tool_result(&seen, cancel);
        self.hook_context.1.extend(verdict.context);
        let (out, replaced_by) = match (verdict.blocked, verdict.content) {
            (Some((ext, reason)), _) => (ToolOutput::error(reason), Some(ext)),
            (None, Some((ext, content))) => (
                ToolOutput {
                    content: cap::cap(content, self.result_cap),
                    is_error: seen.is_error,
                },
                Some(ext),
            ),
            (None, None) => (
                ToolOutput {
                    content: seen.content,
                    is_error: seen.is_error,
                },
                None,
            ),
        };
        let text = content_text(&out.content);
        let sink = self.sink.clone();
        let more = crate::hooks::agent::post_tool_use(
            &self.opts.hooks,
            id,
            name,
            args,
            &text,
            out.is_error,
            &*sink,
        );
        self.hook_context.1.extend(more);
        (out, replaced_by)
    }

    /// One call outside a model turn (`zut mcp serve`, a `!command`):
    /// interception, hooks, confirmation (refused where nobody can
    /// confirm), execution, `tool_result` interception and `PostToolUse`,
    /// as for a call the model makes. The output, the participant that
    /// served it, and whether the call ran at all (`false`: refused).
    pub fn call_one(
        &mut self,
        id: &str,
        name: &str,
        args: Value,
        cancel: &CancelToken,
    ) -> (ToolOutput, Option<String>, bool) {
        let ctx = ToolContext {
            cwd: self.opts.cwd.clone(),
        };
        let args = self.guard(id, name, args, cancel);
        let (out, extension, _, _) = self.execute(id, name, &args, &ctx, cancel);
        let out = ToolOutput {
            content: cap::cap(out.content, self.result_cap),
            ..out
        };
        match &args {
            Ok(a) => (
                self.after_tool(id, name, a, out, &extension, cancel).0,
                extension,
                true,
            ),
            Err(_) => (out, extension, false),
        }
    }

    /// An extension's `details`: its state on the active branch, unless the
    /// store refuses it (too large), which the extension hears as a warning.
    fn commit_state(&mut self, extension: &str, state: &Value) {
        let Some(o) = self.observer.as_mut() else {
            return;
        };
        match o.state(extension, state) {
            Ok(()) => self
                .host
                .set_state(extension, (!state.is_null()).then(|| state.clone())),
            Err(reason) => self.emit(Event::ExtWarning {
                extension: extension.to_string(),
                message: format!("its state was not saved: {reason}"),
            }),
        }
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
        let verdict = self.host.intercept_tool_call(id, name, args, cancel);
        if let Some((ext, reason)) = verdict.blocked {
            self.emit(Event::ToolBlocked {
                id: id.into(),
                name: name.into(),
                reason: reason.clone(),
                extension: ext.clone(),
                args: verdict.args,
            });
            log::info!("tool call {name} ({id}) blocked by {ext}: {reason}");
            return Err(reason);
        }
        let ext_confirm = verdict.confirm;
        let sink = self.sink.clone();
        // Kept for the blocked line only where a hook may block.
        let before_hooks = self
            .opts
            .hooks
            .has("PreToolUse")
            .then(|| verdict.args.clone());
        let (args, perm) = match crate::hooks::agent::pre_tool_use(
            &self.opts.hooks,
            id,
            name,
            verdict.args,
            &*sink,
        ) {
            crate::hooks::agent::Pre::Run(a, p) => (a, p),
            crate::hooks::agent::Pre::Block(cmd, reason) => {
                self.emit(Event::ToolBlocked {
                    id: id.into(),
                    name: name.into(),
                    reason: reason.clone(),
                    extension: format!("hook {cmd}"),
                    args: before_hooks.unwrap_or_default(),
                });
                return Err(reason);
            }
        };
        self.emit(Event::ToolCall {
            id: id.into(),
            name: name.into(),
            args: args.clone(),
        });
        // block > ask > approve > allow, extensions and hooks alike.
        let asked_by = match (&ext_confirm, &perm) {
            (crate::host::Confirm::Ask(ext), _) => Some(format!("extension {ext}")),
            (_, Some((false, cmd))) => {
                Some(format!("the hook {}", crate::hooks::shown_command(cmd)))
            }
            _ => None,
        };
        let approved = matches!(ext_confirm, crate::host::Confirm::Approve(_))
            || matches!(perm, Some((true, _)));
        let scope = approval_scope(name, &args).0;
        let needs = self.needs_confirmation(name)
            && !self.opts.yolo
            && !self.approved.contains(&scope)
            && !approved;
        if asked_by.is_some() || needs {
            let ctx = ToolContext {
                cwd: self.opts.cwd.clone(),
            };
            if let Err(bad) = tools::check(name, &args, &ctx) {
                return Err(content_text(&bad.content));
            }
            let Some(confirmer) = self.opts.confirmer.clone() else {
                if let Some(who) = &asked_by {
                    let reason = format!(
                        "{who} asks for confirmation of {name}, and nobody can confirm in this mode"
                    );
                    if let crate::host::Confirm::Ask(ext) = &ext_confirm {
                        self.emit(Event::ToolBlocked {
                            id: id.into(),
                            name: name.into(),
                            reason: reason.clone(),
                            extension: ext.clone(),
                            args: args.clone(),
                        });
                    }
                    return Err(reason);
                }
                if name.starts_with("mcp__") {
                    return Err(format!(
                        "{name} needs confirmation, and nobody can confirm in this mode: run zut with --yolo, or give its server \"confirm\": false in the MCP config"
                    ));
                }
                return Err(format!(
                    "{name} needs confirmation, and nobody can confirm in this mode: run zut with --yolo to allow {} without asking",
                    confirmed_tools_list()
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
            crate::hooks::agent::notify(
                &self.opts.hooks,
                format!("zut needs your permission to use {name}"),
                "permission_prompt",
                self.sink.clone(),
            );
            match confirmer.confirm(&req, cancel) {
                Decision::Allow => {}
                Decision::Always => {
                    self.approved.insert(scope);
                }
                Decision::Deny => return Err(format!("the user declined to run {name}")),
            }
        }
        Ok(args)
    }
}

/// Runs one guarded call: a built-in, an extension tool, or an error.
/// Returns the output, the serving extension, tools to activate and the
/// extension's `details` (never shown to the model).
fn execute(
    host: &HostHandle,
    skills: Option<&crate::skills::SkillSet>,
    name: &str,
    args: &Result<Value, String>,
    ctx: &ToolContext,
    cancel: &CancelToken,
    on_progress: &mut dyn FnMut(&str, &crate::host::Progress),
) -> (ToolOutput, Option<String>, Vec<String>, Option<Value>) {
    let args = match args {
        Ok(a) => a,
        Err(reason) => return (ToolOutput::error(reason.clone()), None, Vec::new(), None),
    };
    if let Some(set) = skills.filter(|s| name == "skill" && s.offers_model_skills()) {
        return (tools::skill::run(args, set), None, Vec::new(), None);
    }
    if let Some(out) = tools::run(name, args, ctx, cancel) {
        return (out, None, Vec::new(), None);
    }
    match host.call_tool_with_progress(name, args, cancel, on_progress) {
        Some(r) => (
            ToolOutput {
                content: r.content,
                is_error: r.is_error,
            },
            Some(r.extension),
            r.activate_tools,
            r.details,
        ),
        None => {
            let why = host
                .gone_tool(name)
                .unwrap_or_else(|| match &host.view().disabled_hint {
                    Some(hint) => format!("no tool {name:?}; {hint}"),
                    None => format!("unknown tool {name:?}"),
                });
            (ToolOutput::error(why), None, Vec::new(), None)
        }
    }
}

/// What "always" remembers for a call, and how the dialog names it: this
/// exact `bash` command, this file for `write`/`edit` (either tool), else
/// this tool.
pub fn approval_scope(name: &str, args: &Value) -> (String, String) {
    let field = |k: &str| args.get(k).and_then(Value::as_str).map(str::trim);
    match (name, field("command"), field("path")) {
        ("bash", Some(cmd), _) => (format!("bash\0{cmd}"), "this exact command".into()),
        ("write" | "edit", _, Some(path)) => (
            format!("file\0{path}"),
            format!("writes and edits of {path}"),
        ),
        _ => (format!("tool\0{name}"), format!("the tool {name}")),
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

/// The instruction files read into the system prompt, in order: the
/// user's `$ZUT_HOME/AGENTS.md`, then the project's `AGENTS.md` and
/// `CLAUDE.md` (so a project set up for Claude Code works unchanged; both
/// are read when both exist, AGENTS.md first). Only regular files count.
pub fn instruction_files(cwd: &Path, zut_home: &Path) -> [PathBuf; 3] {
    [
        zut_home.join("AGENTS.md"),
        cwd.join("AGENTS.md"),
        cwd.join("CLAUDE.md"),
    ]
}

/// Identity, project directory, tools, skills the model may load, and
/// the instruction files ([`instruction_files`]).
pub fn system_prompt(
    cwd: &Path,
    zut_home: &Path,
    tools: &[ToolDef],
    skills: &crate::skills::SkillSet,
) -> String {
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
    if let Some(section) = crate::skills::prompt_section(skills) {
        s.push('\n');
        s.push_str(&section);
    }
    for path in instruction_files(cwd, zut_home) {
        if let Ok(text) = crate::safe_fs::read_regular_string(&path) {
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

/// The text of a tool result for front ends: its text blocks joined by
/// newlines, each image as an `[image]` placeholder.
pub fn content_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.as_str(),
            #[allow(unreachable_patterns)]
            _ => "[image]",
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
