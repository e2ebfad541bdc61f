//! The Rust SDK: write a zut extension as a set of handlers.
//!
//! An [`Extension`] collects registrations (commands, tools, event handlers,
//! interceptors, panel callbacks), then [`Extension::run`] speaks the
//! protocol on stdin/stdout until the host says `shutdown` or closes stdin.
//! A [`Handle`] sends one-way frames (notes, status, widgets, panels) from
//! any thread at any time.
//!
//! Invariants:
//! - the run sequence is fixed: `hello`; the first host line must be a
//!   `hello_ack` of protocol major 2 (anything else ends [`Extension::run`]
//!   with an [`Error`]); the `on_hello` callback; every `register_command`,
//!   every `register_tool`, one `subscribe` (only when something is
//!   subscribed or intercepted), `ready`;
//! - every request gets exactly one answer, even when its handler panics
//!   (commands and tools answer an error, interceptors block, "fail
//!   closed"); unknown commands and tools get an error answer;
//! - exactly one thread reads the host's input at any time, and reading
//!   never stops for long: a command, tool or interceptor runs on the
//!   thread that read its request (no thread wake-up between a request and
//!   its answer), and when it is still running after [`HANDOVER_AFTER`] a
//!   watchdog hands reading to another worker; the old thread, once its
//!   handler returns, goes back to the pool instead of reading. So handlers
//!   still run concurrently, and a handler that blocks for minutes never
//!   keeps `tool_cancel` or `panel_key` from being read;
//! - events run in order on the reading thread; panel callbacks run in order
//!   on one panel thread, so keystrokes are never reordered;
//! - frames are written whole (one lock per line) and flushed one by one,
//!   by the thread that produced them;
//!   nothing is written after `shutdown_ack` or after `run` returns;
//! - a tool's [`CancelToken`] exists before its handler starts, so a
//!   `tool_cancel` that overtakes the handler still cancels it; tokens are
//!   also cancelled on `shutdown` and at the end of input, and a result
//!   produced after cancellation is dropped;
//! - malformed lines and unknown frame types are logged on stderr and
//!   skipped.

use crate::additions::{self, AddedFrame, HelloAckAdditions};
use crate::lines::{Line, LineReader};
use crate::results::{error, error_result, AssistantMessageDecision, Response, ToolCallDecision};
use crate::results::{AgentEndDecision, ToolResultDecision, UserMessageDecision};
use crate::results::{ToolResult, TurnStartDecision};
use crate::wire::{self, ContentBlock, EventPayload, ExtFrame, HostFrame, Panel, SessionInfo};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The capabilities every SDK advertises in `hello`, `tool_cancel` included.
///
/// ```
/// assert!(zut_ext::CAPABILITIES.contains(&"tool_cancel"));
/// ```
pub const CAPABILITIES: &[&str] = &[
    "commands",
    "tools",
    "events",
    "alerts",
    "panels",
    "session_state",
    "status",
    "widgets",
    wire::CAP_TOOL_CANCEL,
];

/// The widget position zut renders (above the editor).
///
/// ```
/// assert_eq!(zut_ext::WIDGET_ABOVE_INPUT, "above_input");
/// ```
pub const WIDGET_ABOVE_INPUT: &str = "above_input";

/// The alert kind that rings the terminal bell.
///
/// ```
/// assert_eq!(zut_ext::ALERT_BELL, "bell");
/// ```
pub const ALERT_BELL: &str = "bell";

/// How long an idle worker thread waits for more work before it exits.
const WORKER_IDLE: Duration = Duration::from_secs(30);

/// A handler still running after this long on the reading thread hands
/// reading over to another thread.
const HANDOVER_AFTER: Duration = Duration::from_millis(2);

/// The watchdog behind the hand-over stops ticking after this long without
/// a handler on the reading thread, so an idle extension costs nothing.
const WATCH_IDLE: Duration = Duration::from_millis(100);

/// A lifecycle event as the host sent it (`event` names which one).
///
/// ```
/// let e = zut_ext::Event::named("turn_start");
/// assert_eq!(e.event, "turn_start");
/// ```
pub type Event = EventPayload;

/// Severity of a note or a status item.
///
/// ```
/// assert_eq!(zut_ext::Level::Warn.as_str(), "warn");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Neutral information.
    Info,
    /// Something went well.
    Success,
    /// Worth a look.
    Warn,
    /// Something failed.
    Error,
}

impl Level {
    /// The wire spelling.
    ///
    /// ```
    /// assert_eq!(zut_ext::Level::Success.as_str(), "success");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Success => "success",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// What the host said about itself in `hello_ack`.
///
/// ```
/// let info = zut_ext::HostInfo::default();
/// assert_eq!(info.cwd, "");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostInfo {
    /// The protocol major (2).
    pub protocol_version: u32,
    /// The host's version.
    pub zut_version: String,
    /// The active model provider.
    pub provider: String,
    /// The active model.
    pub model: String,
    /// The user's project directory (the extension runs in its own directory).
    pub cwd: String,
    /// The extension's own directory.
    pub extension_dir: String,
    /// Where the extension keeps its files (its own directory today).
    pub data_dir: String,
    /// The active session branch, when the host already has one.
    pub session: Option<SessionInfo>,
    /// Protocol additions the host supports (`late_registration`,
    /// `tool_progress`, ...); empty on hosts that announce none.
    pub features: Vec<String>,
}

/// Why [`Extension::run`] stopped with an error. Its `Debug` form is the
/// message, so `fn main() -> Result<(), zut_ext::Error>` prints it cleanly.
///
/// ```
/// let e = zut_ext::Error::ProtocolVersion(3);
/// assert_eq!(e.to_string(), "unsupported host protocol version 3 (want 2)");
/// ```
pub enum Error {
    /// Reading stdin or writing stdout failed.
    Io(io::Error),
    /// The host's first line was not a usable `hello_ack`.
    Handshake(String),
    /// The host speaks another protocol major.
    ProtocolVersion(u32),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "extension i/o failed: {e}"),
            Error::Handshake(msg) => write!(f, "{msg}"),
            Error::ProtocolVersion(v) => write!(
                f,
                "unsupported host protocol version {v} (want {})",
                wire::PROTOCOL_VERSION
            ),
        }
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

/// Cooperative cancellation for a tool call.
///
/// Interactive tool handlers receive one; it is cancelled when the host sends
/// `tool_cancel` for the call, on `shutdown`, and when the host's input ends.
///
/// ```
/// use std::time::Duration;
/// let token = zut_ext::CancelToken::new();
/// assert!(!token.wait_timeout(Duration::from_millis(1)));
/// token.cancel();
/// assert!(token.is_cancelled());
/// token.wait(); // returns at once
/// ```
#[derive(Clone, Default)]
pub struct CancelToken {
    state: Arc<(Mutex<bool>, Condvar)>,
}

impl CancelToken {
    /// A token nobody has cancelled yet.
    ///
    /// ```
    /// assert!(!zut_ext::CancelToken::new().is_cancelled());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the token and wakes every waiter; later calls do nothing.
    ///
    /// ```
    /// let t = zut_ext::CancelToken::new();
    /// let t2 = t.clone();
    /// std::thread::spawn(move || t2.cancel());
    /// t.wait();
    /// ```
    pub fn cancel(&self) {
        *lock(&self.state.0) = true;
        self.state.1.notify_all();
    }

    /// Whether the token was cancelled.
    ///
    /// ```
    /// let t = zut_ext::CancelToken::new();
    /// t.cancel();
    /// assert!(t.is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        *lock(&self.state.0)
    }

    /// Blocks until the token is cancelled.
    ///
    /// ```
    /// let t = zut_ext::CancelToken::new();
    /// t.cancel();
    /// t.wait();
    /// ```
    pub fn wait(&self) {
        let mut done = lock(&self.state.0);
        while !*done {
            done = self.state.1.wait(done).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Blocks until the token is cancelled or `timeout` passes; true when
    /// cancelled.
    ///
    /// ```
    /// let t = zut_ext::CancelToken::new();
    /// assert!(!t.wait_timeout(std::time::Duration::ZERO));
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let done = lock(&self.state.0);
        let (done, _) = self
            .state
            .1
            .wait_timeout_while(done, timeout, |d| !*d)
            .unwrap_or_else(|p| p.into_inner());
        *done
    }

    fn same(&self, other: &CancelToken) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }
}

/// One running tool call, as its handler sees it: the call's id, its
/// cancellation and progress reports.
///
/// ```
/// let mut ext = zut_ext::Extension::new("x", "1");
/// ext.tool_with("fetch", "Download it.", serde_json::json!({"type": "object"}), |call, _args| {
///     call.progress(Some("connecting"), None, None);
///     zut_ext::text_result(format!("call {} done", call.id()))
/// });
/// ```
pub struct ToolCall {
    id: String,
    cancel: CancelToken,
    handle: Handle,
}

impl ToolCall {
    /// The id of the `tool_call` frame (what `tool_progress` names).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The call's cancellation (host `tool_cancel`, `shutdown`, end of input).
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// Whether the host gave up on the call.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Tells the host the call is alive (`tool_progress`); on hosts with
    /// the `tool_progress` feature each report restarts the call's reply
    /// deadline. Nothing is sent once the call was cancelled.
    pub fn progress(&self, message: Option<&str>, progress: Option<f64>, total: Option<f64>) {
        if !self.cancel.is_cancelled() {
            self.handle
                .tool_progress(&self.id, message, progress, total);
        }
    }
}

/// The payload of a `tool_result` intercept: a tool returned, the model has
/// not seen the result yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResultEvent {
    /// The call id in the transcript.
    pub tool_id: String,
    /// The tool.
    pub tool_name: String,
    /// The arguments as executed.
    pub tool_args: Value,
    /// The tool failed.
    pub is_error: bool,
    /// The blocks it returned.
    pub content: Vec<ContentBlock>,
    /// The extension that served it (empty for built-in tools).
    pub extension: String,
}

/// The payload of an `agent_end` intercept: the model ended a prompt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentEnd {
    /// The final answer.
    pub text: String,
    /// Model steps of this prompt so far.
    pub steps: u64,
    /// How often this prompt was already continued.
    pub continued: u64,
}

/// State that belongs to the active session branch, managed for you; made by
/// [`Extension::state`].
///
/// It starts as the default; a session event (opened, switched, forked,
/// compacted) restores the branch's stored snapshot, or the default when the
/// branch has none (or its snapshot does not deserialise as `T`). Change it
/// in a tool handler and the SDK saves it as that tool result's `details`; a
/// tool that returns `details` itself sets it too.
///
/// ```
/// let mut ext = zut_ext::Extension::new("x", "1");
/// let count = ext.state(0u64);
/// let c = count.clone();
/// ext.tool("count", "Count calls on this branch.", serde_json::json!({"type": "object"}), move |_| {
///     zut_ext::text_result(c.update(|n| *n += 1).to_string())
/// });
/// assert_eq!(count.get(), 0);
/// ```
pub struct BranchState<T> {
    inner: Arc<StateInner<T>>,
}

impl<T> Clone for BranchState<T> {
    fn clone(&self) -> Self {
        BranchState {
            inner: self.inner.clone(),
        }
    }
}

struct StateInner<T> {
    default: T,
    /// The value and whether it changed since it was last saved.
    now: Mutex<(T, bool)>,
}

impl<T: Clone + Serialize + DeserializeOwned + Send + 'static> BranchState<T> {
    /// A copy of the current branch's state.
    pub fn get(&self) -> T {
        lock(&self.inner.now).0.clone()
    }

    /// Replaces the state; it is saved with the next tool result.
    pub fn set(&self, value: T) {
        *lock(&self.inner.now) = (value, true);
    }

    /// Changes the state in place and returns a copy of the result.
    pub fn update(&self, f: impl FnOnce(&mut T)) -> T {
        let mut now = lock(&self.inner.now);
        f(&mut now.0);
        now.1 = true;
        now.0.clone()
    }
}

/// What the dispatcher needs from a [`BranchState`] of any `T`.
trait StateSlot: Send + Sync {
    fn restore(&self, state: Option<&Value>);
    /// The value to save when it changed.
    fn take(&self) -> Option<Value>;
    fn current(&self) -> Value;
    fn saved(&self, details: &Value);
}

impl<T: Clone + Serialize + DeserializeOwned + Send + Sync + 'static> StateSlot for StateInner<T> {
    fn restore(&self, state: Option<&Value>) {
        let value = state
            .filter(|v| !v.is_null())
            .and_then(|v| T::deserialize(v).ok())
            .unwrap_or_else(|| self.default.clone());
        *lock(&self.now) = (value, false);
    }

    fn take(&self) -> Option<Value> {
        let mut now = lock(&self.now);
        if !now.1 {
            return None;
        }
        now.1 = false;
        serde_json::to_value(&now.0).ok()
    }

    fn current(&self) -> Value {
        serde_json::to_value(&lock(&self.now).0).unwrap_or(Value::Null)
    }

    fn saved(&self, details: &Value) {
        if let Ok(v) = T::deserialize(details) {
            *lock(&self.now) = (v, false);
        }
    }
}

/// Session events that carry this extension's stored state.
const STATE_EVENTS: &[&str] = &[
    "session_opened",
    "session_switched",
    "session_forked",
    "session_compacted",
];

type CommandFn = Arc<dyn Fn(&str) -> Response + Send + Sync>;
type ToolFn = Arc<dyn Fn(&ToolCall, Value) -> ToolResult + Send + Sync>;
type EventFn = Arc<dyn Fn(&Event) + Send + Sync>;
type ToolInterceptFn = Arc<dyn Fn(&str, &Value) -> ToolCallDecision + Send + Sync>;
type TurnInterceptFn = Arc<dyn Fn(u64) -> TurnStartDecision + Send + Sync>;
type MessageInterceptFn = Arc<dyn Fn(&str) -> AssistantMessageDecision + Send + Sync>;
type UserInterceptFn = Arc<dyn Fn(&str) -> UserMessageDecision + Send + Sync>;
type ResultInterceptFn = Arc<dyn Fn(&ToolResultEvent) -> ToolResultDecision + Send + Sync>;
type EndInterceptFn = Arc<dyn Fn(&AgentEnd) -> AgentEndDecision + Send + Sync>;
type KeyFn = Arc<dyn Fn(&str, &str) + Send + Sync>;
type CloseFn = Arc<dyn Fn() + Send + Sync>;
type HelloFn = Box<dyn FnOnce(&mut Extension, &HostInfo) + Send>;
type Job = Box<dyn FnOnce() + Send>;

struct CommandEntry {
    name: String,
    description: String,
    handler: CommandFn,
}

struct ToolEntry {
    name: String,
    description: String,
    schema: Value,
    deferred: bool,
    interactive: bool,
    handler: ToolFn,
}

#[derive(Clone, Default)]
struct PanelCallbacks {
    on_key: Option<KeyFn>,
    on_close: Option<CloseFn>,
}

/// State shared by the extension, its handles and the running loop.
struct Shared {
    name: String,
    /// The open output; `None` before `run` and once it has ended.
    out: Mutex<Option<Box<dyn Write + Send>>>,
    host: Mutex<Option<HostInfo>>,
    panels: Mutex<HashMap<String, PanelCallbacks>>,
    /// The live registrations, filled when serving starts and changed by
    /// late (un)registration through a [`Handle`].
    tools: Mutex<HashMap<String, ToolFn>>,
    commands: Mutex<HashMap<String, CommandFn>>,
    /// `ready` was sent: registrations from now on are late registrations.
    announced: AtomicBool,
}

/// Sends one-way frames to the host; cheap to clone, usable from any thread.
///
/// Frames sent before [`Extension::run`] has written `hello`, or after it
/// returned, are dropped (with a line on stderr).
///
/// ```
/// use zut_ext::{Extension, Level};
/// let mut ext = Extension::new("clock", "1.0.0");
/// let handle = ext.handle();
/// std::thread::spawn(move || handle.notify(Level::Info, "tick"));
/// ```
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl Handle {
    fn send(&self, frame: &ExtFrame) -> bool {
        self.send_line(&wire::encode_line(frame), frame.type_name())
    }

    fn send_added(&self, frame: &AddedFrame) -> bool {
        self.send_line(&wire::encode_line(frame), frame.type_name())
    }

    fn send_line(&self, line: &[u8], type_name: &str) -> bool {
        let mut out = lock(&self.shared.out);
        let Some(w) = out.as_mut() else {
            drop(out);
            self.log(&format!("not connected; dropped a {type_name} frame"));
            return false;
        };
        match w.write_all(line).and_then(|()| w.flush()) {
            Ok(()) => true,
            Err(e) => {
                *out = None;
                drop(out);
                self.log(&format!("writing to the host failed, output closed: {e}"));
                false
            }
        }
    }

    /// Closes the output: nothing is written after this.
    fn close(&self) {
        lock(&self.shared.out).take();
    }

    /// Registers (or replaces) a tool after `ready`: it is announced at
    /// once and offered from the host's next model request (hosts with the
    /// `late_registration` feature). Before `ready`, use [`Extension::tool`].
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// let h = ext.handle();
    /// ext.command("more", "add a tool", move |_| {
    ///     h.register_tool("extra", "Added later.", serde_json::json!({"type": "object"}), |_call, _args| {
    ///         zut_ext::text_result("extra")
    ///     });
    ///     zut_ext::noop()
    /// });
    /// ```
    pub fn register_tool(
        &self,
        name: &str,
        description: &str,
        schema: Value,
        f: impl Fn(&ToolCall, Value) -> ToolResult + Send + Sync + 'static,
    ) {
        lock(&self.shared.tools).insert(name.to_string(), Arc::new(f));
        self.send(&ExtFrame::RegisterTool {
            name: name.into(),
            description: description.into(),
            schema: Some(schema),
            deferred: false,
            interactive: false,
        });
    }

    /// Withdraws a tool; the host stops offering it and calls to it get an
    /// error result.
    ///
    /// ```
    /// zut_ext::Extension::new("x", "1").handle().unregister_tool("gone");
    /// ```
    pub fn unregister_tool(&self, name: &str) {
        lock(&self.shared.tools).remove(name);
        if self.shared.announced.load(Ordering::SeqCst) {
            self.send_added(&AddedFrame::UnregisterTool { name: name.into() });
        }
    }

    /// Registers (or replaces) a slash command after `ready`; it works at once.
    ///
    /// ```
    /// zut_ext::Extension::new("x", "1").handle()
    ///     .register_command("later", "added late", |_| zut_ext::display("hi"));
    /// ```
    pub fn register_command(
        &self,
        name: &str,
        description: &str,
        f: impl Fn(&str) -> Response + Send + Sync + 'static,
    ) {
        lock(&self.shared.commands).insert(name.to_string(), Arc::new(f));
        self.send(&ExtFrame::RegisterCommand {
            name: name.into(),
            description: description.into(),
        });
    }

    /// Withdraws a slash command.
    ///
    /// ```
    /// zut_ext::Extension::new("x", "1").handle().unregister_command("gone");
    /// ```
    pub fn unregister_command(&self, name: &str) {
        lock(&self.shared.commands).remove(name);
        if self.shared.announced.load(Ordering::SeqCst) {
            self.send_added(&AddedFrame::UnregisterCommand { name: name.into() });
        }
    }

    /// Reports progress of tool call `id` (see [`ToolCall::progress`]).
    ///
    /// ```
    /// zut_ext::Extension::new("x", "1").handle().tool_progress("7", Some("half"), Some(1.0), Some(2.0));
    /// ```
    pub fn tool_progress(
        &self,
        id: &str,
        message: Option<&str>,
        progress: Option<f64>,
        total: Option<f64>,
    ) {
        self.send_added(&AddedFrame::ToolProgress {
            id: id.into(),
            message: message.map(str::to_string),
            progress: progress.and_then(additions::number),
            total: total.and_then(additions::number),
        });
    }

    /// Writes `[name] message` on stderr (the extension's log file).
    ///
    /// ```
    /// zut_ext::Extension::new("demo", "1").handle().log("starting");
    /// ```
    pub fn log(&self, message: &str) {
        eprintln!("[{}] {message}", self.shared.name);
    }

    /// What the host said in `hello_ack`; `None` before it arrived.
    ///
    /// ```
    /// assert!(zut_ext::Extension::new("demo", "1").handle().host().is_none());
    /// ```
    pub fn host(&self) -> Option<HostInfo> {
        lock(&self.shared.host).clone()
    }

    /// Shows a one-shot note.
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.notify(zut_ext::Level::Success, "cache refreshed");
    /// ```
    pub fn notify(&self, level: Level, message: &str) {
        self.send(&ExtFrame::Notify {
            level: level.as_str().into(),
            message: message.into(),
        });
    }

    /// Sets or replaces the status item `key`; empty `text` clears it.
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.set_status("progress", "2/4 done", Some(zut_ext::Level::Success));
    /// ```
    pub fn set_status(&self, key: &str, text: &str, level: Option<Level>) {
        self.send(&ExtFrame::Status {
            key: key.into(),
            level: level.map(|l| l.as_str().to_string()).unwrap_or_default(),
            text: text.into(),
        });
    }

    /// Removes the status item `key`.
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.clear_status("progress");
    /// ```
    pub fn clear_status(&self, key: &str) {
        self.set_status(key, "", None);
    }

    /// Sets or replaces the widget `id` (use [`WIDGET_ABOVE_INPUT`]).
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.set_widget("plan", zut_ext::WIDGET_ABOVE_INPUT, "Plan", ["parse", "check"]);
    /// ```
    pub fn set_widget<I, S>(&self, id: &str, position: &str, title: &str, lines: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.send(&ExtFrame::Widget {
            id: id.into(),
            position: position.into(),
            title: title.into(),
            lines: lines.into_iter().map(Into::into).collect(),
        });
    }

    /// Removes the widget `id`.
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.clear_widget("plan");
    /// ```
    pub fn clear_widget(&self, id: &str) {
        self.send(&ExtFrame::WidgetClear { id: id.into() });
    }

    /// Asks the host for an alert ([`ALERT_BELL`]); `reason` is metadata.
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.alert(zut_ext::ALERT_BELL, "question_ready");
    /// ```
    pub fn alert(&self, kind: &str, reason: &str) {
        self.send(&ExtFrame::Alert {
            kind: kind.into(),
            reason: reason.into(),
        });
    }

    /// Removes every note this extension showed.
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.clear_notes();
    /// ```
    pub fn clear_notes(&self) {
        self.send(&ExtFrame::ClearNotes);
    }

    /// Submits `text` as a user prompt (interactive zut only).
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.submit("Summarize the workspace.");
    /// ```
    pub fn submit(&self, text: &str) {
        self.send(&ExtFrame::Submit { text: text.into() });
    }

    /// Runs a slash command as if the user typed it (`text` starts with `/`).
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.submit_slash("/todo");
    /// ```
    pub fn submit_slash(&self, text: &str) {
        self.send(&ExtFrame::SubmitSlash { text: text.into() });
    }

    /// Opens a panel outside a command reply (interactive tools use this).
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// use zut_ext::wire::Panel;
    /// handle.open_panel(Panel { id: "ask-1".into(), title: "Question".into(),
    ///     lines: vec!["Proceed? y/n".into()], footer: "y/n".into() });
    /// ```
    pub fn open_panel(&self, panel: Panel) {
        self.send(&ExtFrame::OpenPanel { panel });
    }

    /// Redraws an open panel.
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// use zut_ext::wire::Panel;
    /// handle.render_panel(&Panel { id: "ask-1".into(), lines: vec!["y".into()], ..Panel::default() });
    /// ```
    pub fn render_panel(&self, panel: &Panel) {
        self.send(&ExtFrame::PanelRender {
            panel_id: panel.id.clone(),
            title: panel.title.clone(),
            lines: panel.lines.clone(),
            footer: panel.footer.clone(),
        });
    }

    /// Closes the panel `id`.
    ///
    /// ```no_run
    /// # let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.close_panel("ask-1");
    /// ```
    pub fn close_panel(&self, id: &str) {
        self.send(&ExtFrame::PanelClose {
            panel_id: id.into(),
        });
    }

    /// Routes keys and the close of panel `id` to these callbacks (in order,
    /// on the panel thread). Registering again replaces both.
    ///
    /// ```
    /// let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.on_panel_key("ask-1", |key, text| eprintln!("{key} {text}"), || eprintln!("closed"));
    /// ```
    pub fn on_panel_key(
        &self,
        id: &str,
        on_key: impl Fn(&str, &str) + Send + Sync + 'static,
        on_close: impl Fn() + Send + Sync + 'static,
    ) {
        lock(&self.shared.panels).insert(
            id.to_string(),
            PanelCallbacks {
                on_key: Some(Arc::new(on_key)),
                on_close: Some(Arc::new(on_close)),
            },
        );
    }

    /// Forgets the callbacks of panel `id` (keys for it are then ignored).
    ///
    /// ```
    /// let handle = zut_ext::Extension::new("demo", "1").handle();
    /// handle.forget_panel("ask-1");
    /// ```
    pub fn forget_panel(&self, id: &str) {
        lock(&self.shared.panels).remove(id);
    }
}

/// An extension: its registrations and the protocol loop.
///
/// Registration methods take `&mut self` and return it, so calls chain
/// (like `std::process::Command`). Handlers are closures that may run on any
/// thread, hence `Send + Sync + 'static`.
///
/// ```no_run
/// use serde_json::json;
/// use zut_ext::{display, text_result, Extension};
///
/// fn main() -> Result<(), zut_ext::Error> {
///     Extension::new("hello", "1.0.0")
///         .command("hello", "say hi", |args| display(format!("hi {args}")))
///         .tool("shout", "Upper-case `text`.", json!({"type": "object"}), |args| {
///             text_result(args["text"].as_str().unwrap_or("").to_uppercase())
///         })
///         .run()
/// }
/// ```
pub struct Extension {
    handle: Handle,
    version: String,
    commands: Vec<CommandEntry>,
    tools: Vec<ToolEntry>,
    events: Vec<(String, EventFn)>,
    tool_intercept: Option<ToolInterceptFn>,
    turn_intercept: Option<TurnInterceptFn>,
    message_intercept: Option<MessageInterceptFn>,
    user_intercept: Option<UserInterceptFn>,
    result_intercept: Option<ResultInterceptFn>,
    end_intercept: Option<EndInterceptFn>,
    states: Vec<Arc<dyn StateSlot>>,
    on_hello: Option<HelloFn>,
}

impl Extension {
    /// A new extension; `name` must equal the `name` of its `extension.json`.
    ///
    /// ```
    /// let ext = zut_ext::Extension::new("todo", "0.1.0");
    /// assert_eq!(ext.name(), "todo");
    /// ```
    pub fn new(name: &str, version: &str) -> Self {
        Extension {
            handle: Handle {
                shared: Arc::new(Shared {
                    name: name.to_string(),
                    out: Mutex::new(None),
                    host: Mutex::new(None),
                    panels: Mutex::new(HashMap::new()),
                    tools: Mutex::new(HashMap::new()),
                    commands: Mutex::new(HashMap::new()),
                    announced: AtomicBool::new(false),
                }),
            },
            version: version.to_string(),
            commands: Vec::new(),
            tools: Vec::new(),
            events: Vec::new(),
            tool_intercept: None,
            turn_intercept: None,
            message_intercept: None,
            user_intercept: None,
            result_intercept: None,
            end_intercept: None,
            states: Vec::new(),
            on_hello: None,
        }
    }

    /// The extension's name.
    ///
    /// ```
    /// assert_eq!(zut_ext::Extension::new("x", "1").name(), "x");
    /// ```
    pub fn name(&self) -> &str {
        &self.handle.shared.name
    }

    /// A [`Handle`] for one-way frames, to move into handlers and threads.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// let handle = ext.handle();
    /// ext.command("bell", "ring", move |_| {
    ///     handle.alert(zut_ext::ALERT_BELL, "asked");
    ///     zut_ext::noop()
    /// });
    /// ```
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// What the host said in `hello_ack`; `None` before it arrived.
    ///
    /// ```
    /// assert!(zut_ext::Extension::new("x", "1").host().is_none());
    /// ```
    pub fn host(&self) -> Option<HostInfo> {
        self.handle.host()
    }

    /// Writes `[name] message` on stderr (the extension's log file).
    ///
    /// ```
    /// zut_ext::Extension::new("x", "1").log("hello log");
    /// ```
    pub fn log(&self, message: &str) {
        self.handle.log(message);
    }

    /// Runs `f` after `hello_ack`, before the registrations are sent; it may
    /// register more (for example depending on [`HostInfo::cwd`]).
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.on_hello(|ext, host| {
    ///     let cwd = host.cwd.clone();
    ///     ext.command("cwd", "show the project directory", move |_| zut_ext::display(cwd.clone()));
    /// });
    /// ```
    pub fn on_hello(
        &mut self,
        f: impl FnOnce(&mut Extension, &HostInfo) + Send + 'static,
    ) -> &mut Self {
        self.on_hello = Some(Box::new(f));
        self
    }

    /// Registers the slash command `/name`; `f` gets the text after it.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.command("greet", "ask for a greeting", |args| zut_ext::prompt(format!("Greet {args}.")));
    /// ```
    pub fn command(
        &mut self,
        name: &str,
        description: &str,
        f: impl Fn(&str) -> Response + Send + Sync + 'static,
    ) -> &mut Self {
        self.commands.push(CommandEntry {
            name: name.into(),
            description: description.into(),
            handler: Arc::new(f),
        });
        self
    }

    /// Registers a tool the model can call; `schema` describes its args.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.tool("echo", "Echo the args.", serde_json::json!({"type": "object"}), |args| {
    ///     zut_ext::text_result(args.to_string())
    /// });
    /// ```
    pub fn tool(
        &mut self,
        name: &str,
        description: &str,
        schema: Value,
        f: impl Fn(Value) -> ToolResult + Send + Sync + 'static,
    ) -> &mut Self {
        self.add_tool(
            name,
            description,
            schema,
            false,
            false,
            Arc::new(move |_: &ToolCall, a| f(a)),
        )
    }

    /// Registers a tool that stays hidden until a result activates it.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.deferred_tool("lookup", "Find a note.", serde_json::json!({"type": "object"}), |_| {
    ///     zut_ext::text_result("found")
    /// });
    /// ```
    pub fn deferred_tool(
        &mut self,
        name: &str,
        description: &str,
        schema: Value,
        f: impl Fn(Value) -> ToolResult + Send + Sync + 'static,
    ) -> &mut Self {
        self.add_tool(
            name,
            description,
            schema,
            true,
            false,
            Arc::new(move |_: &ToolCall, a| f(a)),
        )
    }

    /// Registers a tool that waits for a person (no host deadline). The
    /// handler must return when its [`CancelToken`] is cancelled; a result
    /// returned after that is dropped.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.interactive_tool("wait", "Wait for the user.", serde_json::json!({"type": "object"}),
    ///     |cancel, _args| {
    ///         if cancel.wait_timeout(Duration::from_secs(60)) {
    ///             zut_ext::error_result("cancelled")
    ///         } else {
    ///             zut_ext::text_result("no answer")
    ///         }
    ///     });
    /// ```
    pub fn interactive_tool(
        &mut self,
        name: &str,
        description: &str,
        schema: Value,
        f: impl Fn(&CancelToken, Value) -> ToolResult + Send + Sync + 'static,
    ) -> &mut Self {
        self.add_tool(
            name,
            description,
            schema,
            false,
            true,
            Arc::new(move |call: &ToolCall, a| f(&call.cancel, a)),
        )
    }

    /// Registers a tool whose handler gets the running [`ToolCall`] (its id,
    /// cancellation and [`ToolCall::progress`]) besides the arguments.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.tool_with("build", "Build it.", serde_json::json!({"type": "object"}), |call, _| {
    ///     for step in 1..=3 {
    ///         call.progress(Some("compiling"), Some(step as f64), Some(3.0));
    ///     }
    ///     zut_ext::text_result("built")
    /// });
    /// ```
    pub fn tool_with(
        &mut self,
        name: &str,
        description: &str,
        schema: Value,
        f: impl Fn(&ToolCall, Value) -> ToolResult + Send + Sync + 'static,
    ) -> &mut Self {
        self.add_tool(name, description, schema, false, false, Arc::new(f))
    }

    /// Registers a tool whose arguments are deserialised into `A` (serde)
    /// after being checked against `schema` ([`crate::check_args`]): invalid
    /// arguments never reach the handler; the model gets an error result
    /// naming the field (`invalid arguments for NAME: ...`).
    ///
    /// ```
    /// #[derive(serde::Deserialize)]
    /// struct Weather { city: String, #[serde(default = "one")] days: u32 }
    /// fn one() -> u32 { 1 }
    ///
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.typed_tool("weather", "Weather for a city.", serde_json::json!({
    ///     "type": "object",
    ///     "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    ///     "required": ["city"]
    /// }), |_call, w: Weather| zut_ext::text_result(format!("{} {}", w.city, w.days)));
    /// ```
    pub fn typed_tool<A: DeserializeOwned + 'static>(
        &mut self,
        name: &str,
        description: &str,
        schema: Value,
        f: impl Fn(&ToolCall, A) -> ToolResult + Send + Sync + 'static,
    ) -> &mut Self {
        let tool = name.to_string();
        let checked = schema.clone();
        self.add_tool(
            name,
            description,
            schema,
            false,
            false,
            Arc::new(move |call: &ToolCall, args: Value| {
                if let Some(e) = crate::args::check_args(&checked, &args) {
                    return error_result(format!("invalid arguments for {tool}: {e}"));
                }
                match A::deserialize(&args) {
                    Ok(a) => f(call, a),
                    Err(e) => error_result(format!("invalid arguments for {tool}: {e}")),
                }
            }),
        )
    }

    /// A [`BranchState`] that follows the active session branch; subscribes
    /// to the session events that carry state (an `on` handler for them
    /// still runs).
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// let todos = ext.state(Vec::<String>::new());
    /// assert!(todos.get().is_empty());
    /// ```
    pub fn state<T: Clone + Serialize + DeserializeOwned + Send + Sync + 'static>(
        &mut self,
        default: T,
    ) -> BranchState<T> {
        let inner = Arc::new(StateInner {
            now: Mutex::new((default.clone(), false)),
            default,
        });
        self.states.push(inner.clone());
        for name in STATE_EVENTS {
            if !self.events.iter().any(|(n, _)| n == name) {
                self.events
                    .push((name.to_string(), Arc::new(|_: &Event| {})));
            }
        }
        BranchState { inner }
    }

    /// Intercepts each prompt before its first turn: block it, rewrite it,
    /// or add hidden context.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.intercept_user_message(|text| zut_ext::UserMessageDecision::replace(text.trim()));
    /// ```
    pub fn intercept_user_message(
        &mut self,
        f: impl Fn(&str) -> UserMessageDecision + Send + Sync + 'static,
    ) -> &mut Self {
        self.user_intercept = Some(Arc::new(f));
        self
    }

    /// Intercepts every tool's result before the model sees it.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("redact", "1");
    /// ext.intercept_tool_result(|r| {
    ///     let hit = r.content.iter().any(|b| matches!(b, zut_ext::wire::ContentBlock::Text { text } if text.contains("SECRET")));
    ///     if hit { zut_ext::ToolResultDecision::block("withheld: it held a secret") } else { zut_ext::ToolResultDecision::allow() }
    /// });
    /// ```
    pub fn intercept_tool_result(
        &mut self,
        f: impl Fn(&ToolResultEvent) -> ToolResultDecision + Send + Sync + 'static,
    ) -> &mut Self {
        self.result_intercept = Some(Arc::new(f));
        self
    }

    /// Intercepts the end of each prompt; [`AgentEndDecision::keep_going`]
    /// continues it.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.intercept_agent_end(|end| if end.text.contains("DONE") {
    ///     zut_ext::AgentEndDecision::done()
    /// } else {
    ///     zut_ext::AgentEndDecision::keep_going("finish the task, then say DONE")
    /// });
    /// ```
    pub fn intercept_agent_end(
        &mut self,
        f: impl Fn(&AgentEnd) -> AgentEndDecision + Send + Sync + 'static,
    ) -> &mut Self {
        self.end_intercept = Some(Arc::new(f));
        self
    }

    fn add_tool(
        &mut self,
        name: &str,
        description: &str,
        schema: Value,
        deferred: bool,
        interactive: bool,
        handler: ToolFn,
    ) -> &mut Self {
        self.tools.push(ToolEntry {
            name: name.into(),
            description: description.into(),
            schema,
            deferred,
            interactive,
            handler,
        });
        self
    }

    /// Subscribes to the lifecycle event `event`; `f` runs in order on the
    /// reading thread, so keep it short. Registering again replaces it.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.on("session_opened", |e| eprintln!("state: {:?}", e.state));
    /// ```
    pub fn on(&mut self, event: &str, f: impl Fn(&Event) + Send + Sync + 'static) -> &mut Self {
        let f: EventFn = Arc::new(f);
        match self.events.iter_mut().find(|(name, _)| name == event) {
            Some(slot) => slot.1 = f,
            None => self.events.push((event.to_string(), f)),
        }
        self
    }

    /// Intercepts tool calls: block them or rewrite their args.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("guard", "1");
    /// ext.intercept_tool_call(|tool, args| {
    ///     match args["command"].as_str() {
    ///         Some(c) if tool == "bash" && c.contains("rm -rf") => zut_ext::ToolCallDecision::block("refused"),
    ///         _ => zut_ext::ToolCallDecision::allow(),
    ///     }
    /// });
    /// ```
    pub fn intercept_tool_call(
        &mut self,
        f: impl Fn(&str, &Value) -> ToolCallDecision + Send + Sync + 'static,
    ) -> &mut Self {
        self.tool_intercept = Some(Arc::new(f));
        self
    }

    /// Intercepts the start of each model turn (`step` counts from 1).
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.intercept_turn_start(|step| zut_ext::TurnStartDecision::context(format!("step {step}")));
    /// ```
    pub fn intercept_turn_start(
        &mut self,
        f: impl Fn(u64) -> TurnStartDecision + Send + Sync + 'static,
    ) -> &mut Self {
        self.turn_intercept = Some(Arc::new(f));
        self
    }

    /// Intercepts the assistant's final text before the user sees it.
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.intercept_assistant_message(|text| {
    ///     zut_ext::AssistantMessageDecision::replace(text.replace("SECRET", "[redacted]"))
    /// });
    /// ```
    pub fn intercept_assistant_message(
        &mut self,
        f: impl Fn(&str) -> AssistantMessageDecision + Send + Sync + 'static,
    ) -> &mut Self {
        self.message_intercept = Some(Arc::new(f));
        self
    }

    /// Routes keys and the close of panel `id` to these callbacks; see
    /// [`Handle::on_panel_key`].
    ///
    /// ```
    /// let mut ext = zut_ext::Extension::new("x", "1");
    /// ext.on_panel_key("main", |key, _text| eprintln!("{key}"), || {});
    /// ```
    pub fn on_panel_key(
        &mut self,
        id: &str,
        on_key: impl Fn(&str, &str) + Send + Sync + 'static,
        on_close: impl Fn() + Send + Sync + 'static,
    ) -> &mut Self {
        self.handle.on_panel_key(id, on_key, on_close);
        self
    }

    /// Speaks the protocol on stdin/stdout until `shutdown` or the end of
    /// stdin (both `Ok`); see [`Error`] for the rest.
    ///
    /// ```no_run
    /// fn main() -> Result<(), zut_ext::Error> {
    ///     zut_ext::Extension::new("idle", "1.0.0").run()
    /// }
    /// ```
    pub fn run(&mut self) -> Result<(), Error> {
        // `Stdin` itself, not its lock: reading moves between threads.
        self.run_with(io::stdin(), io::stdout())
    }

    /// [`Extension::run`] over any reader and writer (tests use in-memory
    /// pipes). Reading moves between threads, so the reader must be `Send`
    /// and own its data. The writer is dropped when this returns.
    ///
    /// ```
    /// let host = b"{\"type\":\"hello_ack\",\"protocol_version\":2}\n{\"type\":\"shutdown\"}\n";
    /// let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    /// # struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    /// # impl std::io::Write for Shared {
    /// #     fn write(&mut self, b: &[u8]) -> std::io::Result<usize> { self.0.lock().unwrap().extend_from_slice(b); Ok(b.len()) }
    /// #     fn flush(&mut self) -> std::io::Result<()> { Ok(()) }
    /// # }
    /// zut_ext::Extension::new("x", "1").run_with(&host[..], Shared(out.clone())).unwrap();
    /// let written = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    /// assert!(written.ends_with("{\"type\":\"ready\"}\n{\"type\":\"shutdown_ack\"}\n"));
    /// ```
    pub fn run_with<R, W>(&mut self, reader: R, writer: W) -> Result<(), Error>
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        *lock(&self.handle.shared.out) = Some(Box::new(writer));
        // The line splitter buffers itself: no BufReader in between.
        let input: Box<dyn Read + Send> = Box::new(reader);
        let result = self.serve(LineReader::new(input));
        self.handle.close();
        result
    }

    fn serve(&mut self, mut lines: Input) -> Result<(), Error> {
        let hello = ExtFrame::Hello {
            protocol_version: wire::PROTOCOL_VERSION,
            name: self.name().to_string(),
            version: self.version.clone(),
            capabilities: CAPABILITIES.iter().map(|c| c.to_string()).collect(),
        };
        if !self.handle.send(&hello) {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "cannot write hello",
            )));
        }
        let Some(host) = self.handshake(&mut lines)? else {
            return Ok(());
        };
        *lock(&self.handle.shared.host) = Some(host.clone());
        if let Some(f) = self.on_hello.take() {
            f(self, &host);
        }
        let dispatch = self.dispatcher(lines);
        for frame in self.registrations() {
            self.handle.send(&frame);
        }
        self.handle.shared.announced.store(true, Ordering::SeqCst);
        Arc::new(dispatch).serve()
    }

    /// Reads `hello_ack`; `None` when the input ended first.
    fn handshake<R: Read>(&self, lines: &mut LineReader<R>) -> Result<Option<HostInfo>, Error> {
        let line = match lines.next_line()? {
            Line::Eof => return Ok(None),
            Line::TooLong(n) => {
                return Err(Error::Handshake(format!(
                    "parse hello_ack: a {n}-byte line is over the limit"
                )))
            }
            Line::Data(line) => line,
        };
        let frame = wire::decode_host_frame(&line)
            .map_err(|e| Error::Handshake(format!("parse hello_ack: {e}")))?;
        match frame {
            HostFrame::HelloAck {
                protocol_version,
                zut_version,
                provider,
                model,
                cwd,
                extension_dir,
                data_dir,
                session,
                ..
            } => {
                if protocol_version != wire::PROTOCOL_VERSION {
                    return Err(Error::ProtocolVersion(protocol_version));
                }
                let added: HelloAckAdditions = additions::read_fields(&line);
                Ok(Some(HostInfo {
                    features: added.features,
                    protocol_version,
                    zut_version,
                    provider,
                    model,
                    cwd,
                    extension_dir,
                    data_dir,
                    session,
                }))
            }
            _ => Err(Error::Handshake(format!(
                "first host frame must be hello_ack (got {:?})",
                frame_type(&line)
            ))),
        }
    }

    fn registrations(&self) -> Vec<ExtFrame> {
        let mut frames: Vec<ExtFrame> = self
            .commands
            .iter()
            .map(|c| ExtFrame::RegisterCommand {
                name: c.name.clone(),
                description: c.description.clone(),
            })
            .collect();
        frames.extend(self.tools.iter().map(|t| ExtFrame::RegisterTool {
            name: t.name.clone(),
            description: t.description.clone(),
            schema: Some(t.schema.clone()),
            deferred: t.deferred,
            interactive: t.interactive,
        }));
        let events: Vec<String> = self.events.iter().map(|(n, _)| n.clone()).collect();
        let intercept: Vec<String> = [
            (self.tool_intercept.is_some(), "tool_call"),
            (self.turn_intercept.is_some(), "turn_start"),
            (self.message_intercept.is_some(), "assistant_message"),
            (self.user_intercept.is_some(), "user_message"),
            (self.result_intercept.is_some(), "tool_result"),
            (self.end_intercept.is_some(), "agent_end"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| n.to_string())
        .collect();
        if !events.is_empty() || !intercept.is_empty() {
            frames.push(ExtFrame::Subscribe { events, intercept });
        }
        frames.push(ExtFrame::Ready);
        frames
    }

    fn dispatcher(&self, input: Input) -> Dispatch {
        lock(&self.handle.shared.commands)
            .extend((self.commands.iter()).map(|c| (c.name.clone(), c.handler.clone())));
        lock(&self.handle.shared.tools)
            .extend((self.tools.iter()).map(|t| (t.name.clone(), t.handler.clone())));
        Dispatch {
            handle: self.handle.clone(),
            events: self.events.iter().cloned().collect(),
            tool_intercept: self.tool_intercept.clone(),
            turn_intercept: self.turn_intercept.clone(),
            message_intercept: self.message_intercept.clone(),
            user_intercept: self.user_intercept.clone(),
            result_intercept: self.result_intercept.clone(),
            end_intercept: self.end_intercept.clone(),
            states: self.states.clone(),
            pending: Mutex::new(HashMap::new()),
            pool: Pool::new(),
            panel_thread: Mutex::new(None),
            input: Mutex::new(input),
            role: Mutex::new(Role::default()),
            watch: Condvar::new(),
            ended: Condvar::new(),
        }
    }
}

/// The host's input as the reading thread sees it.
type Input = LineReader<Box<dyn Read + Send>>;

/// Who reads, under [`Dispatch::role`].
///
/// The reading thread publishes the handler it runs in `inline`; whoever
/// empties `inline` under the lock settles who reads next: the reading
/// thread when its handler returns (it reads on), or the watchdog once the
/// handler has run for [`HANDOVER_AFTER`] (another worker reads, and the
/// old thread leaves when its handler returns). So there is never a second
/// reader, and never none while serving goes on.
#[derive(Default)]
struct Role {
    /// The handler on the reading thread: its serial number and start.
    inline: Option<(u64, Instant)>,
    /// The serial number of the last handler published in `inline`.
    serial: u64,
    /// The watchdog waits without a deadline; publishing a handler wakes it.
    parked: bool,
    /// Serving ended (`shutdown`, end of input or a read error).
    over: bool,
    /// How serving ended, until [`Dispatch::serve`] takes it.
    end: Option<Result<(), Error>>,
}

/// The frozen registrations of a running extension and its in-flight calls.
struct Dispatch {
    handle: Handle,
    events: HashMap<String, EventFn>,
    tool_intercept: Option<ToolInterceptFn>,
    turn_intercept: Option<TurnInterceptFn>,
    message_intercept: Option<MessageInterceptFn>,
    user_intercept: Option<UserInterceptFn>,
    result_intercept: Option<ResultInterceptFn>,
    end_intercept: Option<EndInterceptFn>,
    /// The managed branch states ([`Extension::state`]).
    states: Vec<Arc<dyn StateSlot>>,
    /// Tool calls whose handler has not answered yet, by correlation id.
    pending: Mutex<HashMap<String, CancelToken>>,
    pool: Pool,
    /// Runs panel callbacks one after another; started on first use.
    panel_thread: Mutex<Option<mpsc::Sender<Job>>>,
    /// The host's input; locked only while a line is read, by the one
    /// thread that reads (see [`Role`]).
    input: Mutex<Input>,
    role: Mutex<Role>,
    /// Wakes the watchdog: a handler started while it was parked, or
    /// serving ended.
    watch: Condvar,
    /// Tells [`Dispatch::serve`] that serving ended.
    ended: Condvar,
}

impl Dispatch {
    /// Serves until `shutdown` or the end of input. Reading starts on a
    /// pool worker, never on this thread: a handler blocked here would keep
    /// `run` from returning after the end.
    fn serve(self: &Arc<Self>) -> Result<(), Error> {
        let me = self.clone();
        std::thread::Builder::new()
            .name("zut-ext-watch".into())
            .spawn(move || me.watch())?;
        self.read_on_pool();
        let mut role = lock(&self.role);
        loop {
            if let Some(end) = role.end.take() {
                return end;
            }
            role = self.ended.wait(role).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Reads and handles frames while this thread is the reader; returns
    /// when reading was handed to another thread or serving ended.
    fn lead(&self) {
        loop {
            let next = lock(&self.input).next_line();
            let line = match next {
                Err(e) => return self.finish(Err(e.into())),
                Ok(Line::Eof) => return self.finish(Ok(())),
                Ok(Line::TooLong(n)) => {
                    self.handle
                        .log(&format!("skipped a {n}-byte line: over the limit"));
                    continue;
                }
                Ok(Line::Data(line)) => line,
            };
            match wire::decode_host_frame(&line) {
                Ok(HostFrame::Shutdown) => {
                    self.handle.send(&ExtFrame::ShutdownAck);
                    self.handle.close();
                    return self.finish(Ok(()));
                }
                Ok(frame) => {
                    if !self.dispatch(frame, &line) {
                        return;
                    }
                }
                Err(e) => self.handle.log(&format!("skipped a malformed line: {e}")),
            }
        }
    }

    /// Makes a pool worker the reader.
    fn read_on_pool(self: &Arc<Self>) {
        let me = self.clone();
        self.pool.spawn(Box::new(move || {
            if let Err(msg) = guarded(|| me.lead()) {
                let e = io::Error::other(format!("the reading thread panicked: {msg}"));
                me.finish(Err(Error::Io(e)));
            }
        }));
    }

    /// Cancels every waiting tool call, records how serving ended and wakes
    /// whoever waits for it.
    fn finish(&self, end: Result<(), Error>) {
        self.cancel_all();
        let mut role = lock(&self.role);
        role.over = true;
        role.end = Some(end);
        self.watch.notify_all();
        self.ended.notify_all();
    }

    /// Runs `work` on the reading thread; true when this thread is still
    /// the reader afterwards, false when reading was handed over meanwhile.
    fn inline(&self, work: impl FnOnce()) -> bool {
        let serial = {
            let mut role = lock(&self.role);
            role.serial += 1;
            role.inline = Some((role.serial, Instant::now()));
            if role.parked {
                role.parked = false;
                self.watch.notify_one();
            }
            role.serial
        };
        work();
        let mut role = lock(&self.role);
        match role.inline {
            Some((s, _)) if s == serial => {
                role.inline = None;
                true
            }
            _ => false,
        }
    }

    /// The watchdog: hands reading to a pool worker when the handler on the
    /// reading thread has run for [`HANDOVER_AFTER`]. It ticks while
    /// handlers run and parks after [`WATCH_IDLE`] without one; parking and
    /// publishing a handler both happen under the role lock, so a handler
    /// that starts as the watchdog parks is seen by one side or the other.
    fn watch(self: Arc<Self>) {
        let mut role = lock(&self.role);
        let mut idle_since: Option<Instant> = None; // nothing ran yet: park
        while !role.over {
            let now = Instant::now();
            if let Some((_, started)) = role.inline {
                idle_since = Some(now);
                let due = started + HANDOVER_AFTER;
                if now < due {
                    role = wait_timeout(&self.watch, role, due - now);
                    continue;
                }
                role.inline = None;
                drop(role);
                self.read_on_pool();
                role = lock(&self.role);
            } else if idle_since.is_some_and(|t| now.duration_since(t) < WATCH_IDLE) {
                role = wait_timeout(&self.watch, role, HANDOVER_AFTER);
            } else {
                role.parked = true;
                while role.parked && !role.over {
                    role = self.watch.wait(role).unwrap_or_else(|p| p.into_inner());
                }
                idle_since = Some(Instant::now());
            }
        }
    }

    /// Handles one frame on the reading thread; false when reading was
    /// handed to another thread while a handler ran here.
    fn dispatch(&self, frame: HostFrame, line: &[u8]) -> bool {
        match frame {
            HostFrame::CommandInvoked { id, name, args } => return self.command(id, name, args),
            HostFrame::ToolCall { id, name, args } => return self.tool(id, name, args),
            HostFrame::ToolCancel { id } => {
                if let Some(token) = lock(&self.pending).get(&id) {
                    token.cancel();
                }
            }
            HostFrame::Event(event) => {
                if STATE_EVENTS.contains(&event.event.as_str()) {
                    for st in &self.states {
                        st.restore(event.state.as_ref());
                    }
                }
                if let Some(f) = self.events.get(&event.event) {
                    if let Err(msg) = guarded(|| f(&event)) {
                        let name = &event.event;
                        self.handle
                            .log(&format!("event {name} handler panicked: {msg}"));
                    }
                }
            }
            HostFrame::EventIntercept { id, payload } => {
                return self.inline(|| self.intercept(id, payload));
            }
            HostFrame::PanelKey {
                panel_id,
                key,
                text,
            } => {
                let callbacks = lock(&self.handle.shared.panels).get(&panel_id).cloned();
                if let Some(f) = callbacks.and_then(|c| c.on_key) {
                    self.on_panel_thread(Box::new(move || f(&key, &text)));
                }
            }
            HostFrame::PanelClose { panel_id } => {
                let callbacks = lock(&self.handle.shared.panels).get(&panel_id).cloned();
                if let Some(f) = callbacks.and_then(|c| c.on_close) {
                    self.on_panel_thread(Box::new(move || f()));
                }
            }
            HostFrame::HelloAck { .. } => self.handle.log("ignored a second hello_ack"),
            HostFrame::PanelResize { .. } => {}
            HostFrame::Shutdown => unreachable!("handled by the read loop"),
            HostFrame::Unknown => {
                let t = frame_type(line);
                self.handle
                    .log(&format!("skipped a frame of unknown type {t:?}"));
            }
        }
        true
    }

    fn command(&self, id: String, name: String, args: String) -> bool {
        let found = lock(&self.handle.shared.commands).get(&name).cloned();
        let Some(f) = found else {
            self.answer_command(id, error(format!("no handler for /{name}")));
            return true;
        };
        self.inline(|| {
            let response =
                guarded(|| f(&args)).unwrap_or_else(|msg| error(format!("panic: {msg}")));
            self.answer_command(id, response);
        })
    }

    fn answer_command(&self, id: String, r: Response) {
        use crate::results::Action;
        let text = |a: Action| {
            if r.action == a {
                r.text.clone()
            } else {
                String::new()
            }
        };
        self.handle.send(&ExtFrame::CommandResponse {
            id,
            action: r.action.as_str().into(),
            prompt: text(Action::Prompt),
            insert: text(Action::Insert),
            display: text(Action::Display),
            open_panel: if r.action == Action::OpenPanel {
                r.panel.clone()
            } else {
                None
            },
            error: r.error.clone(),
        });
    }

    fn tool(&self, id: String, name: String, args: Value) -> bool {
        let found = lock(&self.handle.shared.tools).get(&name).cloned();
        let Some(f) = found else {
            self.answer_tool(id, error_result(format!("no handler for tool {name:?}")));
            return true;
        };
        // The token exists before the handler starts: a tool_cancel read
        // right after this frame finds it.
        let token = CancelToken::new();
        lock(&self.pending).insert(id.clone(), token.clone());
        self.inline(|| {
            let call = ToolCall {
                id: id.clone(),
                cancel: token.clone(),
                handle: self.handle.clone(),
            };
            let result = guarded(|| f(&call, args))
                .unwrap_or_else(|msg| error_result(format!("panic: {msg}")));
            let result = self.with_state(result);
            {
                let mut pending = lock(&self.pending);
                if pending.get(&id).is_some_and(|t| t.same(&token)) {
                    pending.remove(&id);
                }
            }
            if token.is_cancelled() {
                self.handle
                    .log(&format!("dropped the result of cancelled tool call {id}"));
            } else {
                self.answer_tool(id, result);
            }
        })
    }

    /// Puts changed branch state into the result's `details` (one state:
    /// its value; several: an array of them).
    fn with_state(&self, mut r: ToolResult) -> ToolResult {
        if self.states.is_empty() {
            return r;
        }
        if let Some(d) = &r.details {
            for st in &self.states {
                st.saved(d);
            }
            return r;
        }
        let changed: Vec<bool> = self.states.iter().map(|st| st.take().is_some()).collect();
        if changed.contains(&true) {
            r.details = Some(match self.states.as_slice() {
                [one] => one.current(),
                all => Value::Array(all.iter().map(|st| st.current()).collect()),
            });
        }
        r
    }

    fn answer_tool(&self, id: String, r: ToolResult) {
        self.handle.send(&ExtFrame::ToolResult {
            id,
            content: r.content,
            is_error: r.is_error,
            activate_tools: r.activate_tools,
            details: r.details,
        });
    }

    /// Answers one `event_intercept`: exactly one response, blocking when the
    /// interceptor panics.
    fn intercept(&self, id: String, p: EventPayload) {
        let mut frame = InterceptAnswer::default();
        let outcome = guarded(|| match p.event.as_str() {
            "tool_call" => {
                if let Some(f) = &self.tool_intercept {
                    let args = p.tool_args.clone().unwrap_or(Value::Null);
                    let d = f(&p.tool_name, &args);
                    frame.block = d.block;
                    frame.reason = d.reason;
                    frame.modified_args = d.modified_args.filter(|a| !d.block && a.is_object());
                    frame.decision = (d.decision.filter(|_| !d.block))
                        .map(|a| a.as_str().to_string())
                        .unwrap_or_default();
                }
            }
            "user_message" => {
                if let Some(f) = &self.user_intercept {
                    let d = f(&p.text);
                    frame.block = d.block;
                    frame.reason = d.reason;
                    if !d.block {
                        frame.replace_text = (d.replace_text)
                            .filter(|t| !t.is_empty() && *t != p.text)
                            .unwrap_or_default();
                        frame.context = d.context;
                    }
                }
            }
            "tool_result" => {
                if let Some(f) = &self.result_intercept {
                    let event = ToolResultEvent {
                        tool_id: p.tool_id.clone(),
                        tool_name: p.tool_name.clone(),
                        tool_args: p.tool_args.clone().unwrap_or(Value::Null),
                        is_error: p.is_error.unwrap_or(false),
                        content: p.content.clone().unwrap_or_default(),
                        extension: p.extension.clone(),
                    };
                    let d = f(&event);
                    frame.block = d.block;
                    frame.reason = d.reason;
                    if !d.block {
                        frame.replace_content = d.replace_content;
                        frame.context = d.context;
                    }
                }
            }
            "agent_end" => {
                if let Some(f) = &self.end_intercept {
                    let d = f(&AgentEnd {
                        text: p.text.clone(),
                        steps: p.steps,
                        continued: p.continued.unwrap_or(0),
                    });
                    frame.block = d.block;
                    frame.reason = d.reason;
                }
            }
            "turn_start" => {
                if let Some(f) = &self.turn_intercept {
                    let d = f(p.step);
                    frame.block = d.block;
                    frame.reason = d.reason;
                    frame.context = if d.block { String::new() } else { d.context };
                }
            }
            "assistant_message" => {
                if let Some(f) = &self.message_intercept {
                    let d = f(&p.text);
                    frame.block = d.block;
                    frame.reason = d.reason;
                    frame.replace_text = (d.replace_text)
                        .filter(|t| !d.block && !t.is_empty() && *t != p.text)
                        .unwrap_or_default();
                }
            }
            _ => {}
        });
        if let Err(msg) = outcome {
            frame = InterceptAnswer {
                block: true,
                reason: format!("intercept panic: {msg}"),
                ..InterceptAnswer::default()
            };
        }
        self.handle.send(&ExtFrame::EventInterceptResponse {
            id,
            block: frame.block,
            reason: frame.reason,
            modified_args: frame.modified_args,
            replace_text: frame.replace_text,
            replace_content: frame.replace_content,
            context: frame.context,
            decision: frame.decision,
        });
    }

    fn on_panel_thread(&self, job: Job) {
        let mut slot = lock(&self.panel_thread);
        let tx = slot.get_or_insert_with(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let handle = self.handle.clone();
            std::thread::spawn(move || {
                for job in rx {
                    if let Err(msg) = guarded(job) {
                        handle.log(&format!("panel callback panicked: {msg}"));
                    }
                }
            });
            tx
        });
        // The thread only ends when this sender is dropped, so sending works.
        let _ = tx.send(job);
    }

    fn cancel_all(&self) {
        for token in lock(&self.pending).values() {
            token.cancel();
        }
    }
}

#[derive(Default)]
struct InterceptAnswer {
    block: bool,
    reason: String,
    modified_args: Option<Value>,
    replace_text: String,
    replace_content: Option<Vec<ContentBlock>>,
    context: String,
    decision: String,
}

/// Worker threads that take over reading when a handler is slow: a
/// hand-over reuses an idle worker when there is one and starts a new thread
/// otherwise, so handlers never wait for each other and an extension with
/// many slow calls does not pay a thread start for each.
///
/// `idle` counts workers waiting for a job that nobody has claimed; a caller
/// claims one by decrementing it before sending, so every sent job has a
/// worker. A worker idle for [`WORKER_IDLE`] exits if it can un-count itself.
struct Pool {
    idle: Arc<AtomicUsize>,
    tx: mpsc::Sender<Job>,
    rx: Arc<Mutex<mpsc::Receiver<Job>>>,
}

impl Pool {
    fn new() -> Pool {
        let (tx, rx) = mpsc::channel();
        Pool {
            idle: Arc::new(AtomicUsize::new(0)),
            tx,
            rx: Arc::new(Mutex::new(rx)),
        }
    }

    fn spawn(&self, job: Job) {
        if claim(&self.idle) {
            // A claimed worker holds the receiver's lock or waits for it.
            if let Err(mpsc::SendError(job)) = self.tx.send(job) {
                std::thread::spawn(job);
            }
            return;
        }
        let (idle, rx) = (self.idle.clone(), self.rx.clone());
        std::thread::spawn(move || {
            let mut job = Some(job);
            loop {
                if let Some(j) = job.take() {
                    j();
                    idle.fetch_add(1, Ordering::SeqCst);
                }
                let next = lock(&rx).recv_timeout(WORKER_IDLE);
                match next {
                    Ok(j) => job = Some(j),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if claim(&idle) {
                            return;
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        });
    }
}

/// Takes one idle worker off the count; false when none is idle.
fn claim(idle: &AtomicUsize) -> bool {
    idle.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

/// Runs `f`, turning a panic into its message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        if let Some(s) = payload.downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic payload".to_string()
        }
    })
}

/// Waits on `cv` for at most `timeout`, ignoring poisoning like [`lock`].
fn wait_timeout<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    match cv.wait_timeout(guard, timeout) {
        Ok((g, _)) => g,
        Err(p) => p.into_inner().0,
    }
}

/// Locks a mutex, ignoring poisoning: handlers run under `catch_unwind` and
/// never hold these locks, so a poisoned lock still guards consistent data.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The `type` of a raw line, for messages about frames we do not handle.
fn frame_type(line: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Tag {
        #[serde(rename = "type")]
        t: Option<String>,
    }
    serde_json::from_slice::<Tag>(line)
        .ok()
        .and_then(|t| t.t)
        .unwrap_or_default()
}
