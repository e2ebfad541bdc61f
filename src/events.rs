//! The one event stream every front end consumes (documented in zut(1), JSON MODE).
//!
//! The host (extension readers, loader) and the agent loop emit [`Event`]s
//! into an [`EventSink`]; JSON and RPC modes serialise them as they are, print
//! mode and the terminal UI render them. Field names are the contract.

use serde::Serialize;
use serde_json::Value;
use std::sync::Mutex;
use zut_ext::wire::{ContentBlock, Panel};

/// One event, serialised with `type` as the discriminator.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    ExtLoaded {
        extension: String,
        version: String,
        commands: Vec<String>,
        tools: Vec<String>,
        source: String,
    },
    ExtError {
        extension: String,
        message: String,
    },
    ExtWarning {
        extension: String,
        message: String,
    },
    /// An extension registered or withdrew a tool or command after it was
    /// loaded; its names now.
    ExtToolsChanged {
        extension: String,
        tools: Vec<String>,
        commands: Vec<String>,
    },
    UserMessage {
        text: String,
    },
    /// A `user_message` interceptor refused the prompt: it was neither
    /// sent nor saved.
    PromptBlocked {
        extension: String,
        reason: String,
    },
    /// An `agent_end` interceptor kept the prompt going: `reason` goes to
    /// the model as a user message.
    PromptContinued {
        extension: String,
        reason: String,
    },
    TurnStart {
        step: u32,
    },
    TurnBlocked {
        reason: String,
    },
    TextDelta {
        delta: String,
    },
    /// The model's reasoning as it streams (shown dimmed; never the answer).
    ThinkingDelta {
        delta: String,
    },
    /// One provider request's tokens and price (`cost_usd` null when the
    /// model's price is unknown); `input_tokens` is the uncached part.
    Usage {
        input_tokens: u64,
        output_tokens: u64,
        cache_read_tokens: u64,
        cache_write_tokens: u64,
        cost_usd: Option<f64>,
        /// The model's context window in tokens (0: unknown).
        context_window: u64,
    },
    /// A failed provider request is tried again: `attempt` is the attempt
    /// about to be made (2 for the first retry), after `wait_ms`.
    Retry {
        attempt: u32,
        wait_ms: u64,
        reason: String,
    },
    ToolCall {
        id: String,
        name: String,
        args: Value,
    },
    ToolBlocked {
        id: String,
        name: String,
        reason: String,
        /// The extension that refused the call (`hook COMMAND` for a hook).
        extension: String,
        /// The arguments the refused call had (after earlier rewrites).
        args: Value,
    },
    ToolResult {
        id: String,
        name: String,
        is_error: bool,
        content: Vec<ContentBlock>,
        #[serde(skip_serializing_if = "Option::is_none")]
        extension: Option<String>,
        /// The extension whose `tool_result` interceptor replaced the
        /// content (the last one, when several did).
        #[serde(skip_serializing_if = "Option::is_none")]
        replaced_by: Option<String>,
    },
    /// A running call said it is still working: one per extension
    /// `tool_progress` frame or MCP `notifications/progress`, before the
    /// call's `tool_result`.
    ToolProgress {
        /// The model's call id, as in `tool_call` and `tool_result`.
        id: String,
        name: String,
        extension: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        progress: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
    },
    AssistantMessage {
        text: String,
        blocked: bool,
        /// Why an interceptor withheld it (only when blocked).
        #[serde(skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    TurnEnd {
        stop: String,
        #[serde(skip_serializing_if = "String::is_empty")]
        error: String,
    },
    CommandResult {
        name: String,
        action: String,
        text: String,
    },
    ExtNotify {
        extension: String,
        level: String,
        message: String,
    },
    ExtDisplay {
        extension: String,
        text: String,
    },
    ExtAlert {
        extension: String,
        kind: String,
        reason: String,
    },
    ExtClearNotes {
        extension: String,
    },
    ExtStatus {
        extension: String,
        key: String,
        level: String,
        text: String,
    },
    ExtWidget {
        extension: String,
        id: String,
        position: String,
        title: String,
        lines: Vec<String>,
    },
    ExtWidgetClear {
        extension: String,
        id: String,
    },
    ExtChromeClear {
        extension: String,
    },
    ExtSubmit {
        extension: String,
        text: String,
    },
    ExtSubmitSlash {
        extension: String,
        text: String,
    },
    ExtOpenPanel {
        extension: String,
        panel: Panel,
    },
    ExtPanelRender {
        extension: String,
        panel: Panel,
    },
    ExtPanelClose {
        extension: String,
        panel_id: String,
    },
    /// A tool call waits for a person's approval; the front end answers
    /// with `Core::confirm(request_id, …)`.
    ConfirmationRequested {
        request_id: u64,
        tool_id: String,
        tool_name: String,
        preview: String,
    },
    /// The active session changed (`reason`: `new`, `resume`, `fork`,
    /// `switch`, `compact`).
    Session {
        id: String,
        parent_id: Option<String>,
        path: String,
        fork_point: Option<usize>,
        reason: String,
    },
    /// A `/reload-ext` finished: how many stopped, loaded and became ready,
    /// and every load error (the extension keeps its own `ext_error` too).
    Reload {
        stopped: usize,
        loaded: usize,
        ready: usize,
        errors: Vec<ReloadError>,
    },
    /// A prompt was queued behind the running turn.
    Queued {
        text: String,
        position: usize,
    },
    /// One hook handler ran (Claude Code hooks, zut-hooks(7)); `exit`
    /// is null on timeout.
    Hook {
        event: String,
        command: String,
        exit: Option<i32>,
        outcome: String,
        reason: String,
        ms: u64,
        #[serde(skip_serializing_if = "String::is_empty")]
        system_message: String,
    },
    Error {
        message: String,
    },
    Done,
    /// The answer to [`crate::core::frontend::Core::list_sessions`]: this
    /// project's sessions, newest first. Only front ends that asked get it.
    Sessions {
        sessions: Vec<crate::core::frontend::SessionSummary>,
    },
    /// The core finished a job that does not end with `done` (a reload, a
    /// session change, a model change) and is idle again, its state final.
    /// For front ends that show that state; never written to the JSON
    /// stream or to an RPC client.
    Idle,
    /// The extensions a front end did not wait for (the terminal's) are
    /// loaded and their registrations committed: the state no longer names
    /// them as starting. Internal like [`Event::Idle`].
    Loaded,
    /// The dispatcher discovered the extensions of a load left to it (the
    /// terminal's, which draws before reading any manifest): the state
    /// names them as starting from now on, and `themes` are their theme
    /// files. Internal like [`Event::Idle`].
    Discovered {
        themes: Vec<std::path::PathBuf>,
    },
}

/// One load error reported by a reload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReloadError {
    pub extension: String,
    pub message: String,
}

/// Where events go. Called from any thread; must not block for long.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);
}

/// Collects events in memory (tests, doctor).
#[derive(Default)]
pub struct Collect(pub Mutex<Vec<Event>>);

impl EventSink for Collect {
    fn emit(&self, event: Event) {
        if let Ok(mut v) = self.0.lock() {
            v.push(event);
        }
    }
}

impl Collect {
    /// A copy of everything seen so far.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// Drops everything.
pub struct Discard;

impl EventSink for Discard {
    fn emit(&self, _event: Event) {}
}

/// Forwards to a channel (the terminal UI's loop).
impl EventSink for crossbeam_channel::Sender<Event> {
    fn emit(&self, event: Event) {
        let _ = self.send(event);
    }
}
