//! The zut extension wire format: the one definition of every frame.
//!
//! Frames are single-line JSON objects discriminated by a top-level `type`.
//! [`ExtFrame`] is everything an extension may write on stdout,
//! [`HostFrame`] everything the host writes on the extension's stdin. The
//! host and the Rust SDK both use these types, so the two sides cannot drift.
//!
//! Invariants:
//! - decoding never fails on an unknown `type` (it becomes `Unknown`) or on an
//!   unknown top-level field, whatever it holds: a line is parsed whole in
//!   one pass, and a line that pass refuses is decoded again with every
//!   field its type does not define skipped unparsed (a huge number, a lone
//!   surrogate escape, nesting of any depth), so the protocol grows
//!   additively and junk beside a frame cannot cost the frame;
//! - encoding produces compact JSON with no embedded newline, so one frame is
//!   exactly one line;
//! - optional payload fields that are empty are left out on the wire, as the
//!   reference host does (`step: 0` never appears, `args` is omitted when empty).

use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The protocol major both sides must agree on in `hello` / `hello_ack`.
///
/// ```
/// assert_eq!(zut_ext::wire::PROTOCOL_VERSION, 2);
/// ```
pub const PROTOCOL_VERSION: u32 = 2;

/// Tool names an extension can never claim, whether or not the host
/// implements them (the spec's built-in namespace plus its reserved names).
///
/// ```
/// assert!(zut_ext::wire::RESERVED_TOOL_NAMES.contains(&"bash"));
/// ```
pub const RESERVED_TOOL_NAMES: &[&str] = &[
    "read",
    "write",
    "edit",
    "bash",
    "python",
    "worktree",
    "grep",
    "ast",
    "lsp",
    "web_search",
    "web_open",
    "web_find",
    "web_click",
    "schedule",
    "update_goal",
    "plan",
    "skill",
];

/// Event names the host recognises in `subscribe.events`.
///
/// ```
/// assert!(zut_ext::wire::KNOWN_EVENTS.contains(&"turn_start"));
/// ```
pub const KNOWN_EVENTS: &[&str] = &[
    "session_start",
    "session_opened",
    "session_switched",
    "session_forked",
    "session_compacted",
    "turn_start",
    "tool_call",
    "tool_confirmation_requested",
    "assistant_message",
    "turn_end",
];

/// Event names that can be intercepted (`subscribe.intercept`).
///
/// ```
/// assert_eq!(zut_ext::wire::INTERCEPTABLE_EVENTS.len(), 3);
/// ```
pub const INTERCEPTABLE_EVENTS: &[&str] = &["tool_call", "turn_start", "assistant_message"];

/// Events that can be intercepted beyond the reference protocol (hosts
/// that list [`FEATURE_LATE_REGISTRATION`] and later): `user_message`,
/// `tool_result`, `agent_end`.
///
/// ```
/// assert!(zut_ext::wire::ADDED_INTERCEPTABLE_EVENTS.contains(&"agent_end"));
/// ```
pub const ADDED_INTERCEPTABLE_EVENTS: &[&str] = &["user_message", "tool_result", "agent_end"];

/// The capability an extension advertises in `hello` to receive `tool_cancel`.
///
/// ```
/// assert_eq!(zut_ext::wire::CAP_TOOL_CANCEL, "tool_cancel");
/// ```
pub const CAP_TOOL_CANCEL: &str = "tool_cancel";

/// Feature names a host lists in `hello_ack.features` (additions beyond the
/// reference protocol).
///
/// ```
/// assert!(zut_ext::wire::FEATURE_LATE_REGISTRATION.starts_with("late"));
/// ```
pub const FEATURE_LATE_REGISTRATION: &str = "late_registration";
/// See [`FEATURE_LATE_REGISTRATION`]: the host honours `tool_progress`.
pub const FEATURE_TOOL_PROGRESS: &str = "tool_progress";

/// One block of tool output or message content.
///
/// ```
/// use zut_ext::wire::{encode_line, ContentBlock};
/// let line = encode_line(&ContentBlock::text("hi"));
/// assert_eq!(line, b"{\"type\":\"text\",\"text\":\"hi\"}\n");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        #[serde(default)]
        text: String,
    },
    /// An image, base64 (standard alphabet) encoded.
    Image {
        /// The media type, e.g. `image/png`.
        #[serde(default)]
        mime_type: String,
        /// The image bytes, base64 encoded.
        #[serde(default)]
        data: String,
    },
    /// A block type this version does not know; kept so one odd block does
    /// not make the whole frame undecodable.
    #[serde(other)]
    Unknown,
}

impl ContentBlock {
    /// A text block.
    ///
    /// ```
    /// let b = zut_ext::wire::ContentBlock::text("hi");
    /// assert!(matches!(b, zut_ext::wire::ContentBlock::Text { .. }));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }
}

/// The content of an extension-owned panel.
///
/// ```
/// let p = zut_ext::wire::Panel { id: "todo".into(), lines: vec!["a".into()], ..Default::default() };
/// assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"id":"todo","lines":["a"]}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    /// Identifies the panel in keys, redraws and closes.
    #[serde(default)]
    pub id: String,
    /// The heading.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// The body, one entry per row.
    #[serde(default)]
    pub lines: Vec<String>,
    /// A hint line under the body.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub footer: String,
}

/// Identity of the active session branch, in `hello_ack` and session events.
///
/// ```
/// let s: zut_ext::wire::SessionInfo = serde_json::from_str(r#"{"id":"b1","fork_point":4}"#).unwrap();
/// assert_eq!((s.id.as_str(), s.fork_point), ("b1", 4));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The current branch (session) id.
    pub id: String,
    /// The branch this one was forked from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parent_id: String,
    /// The session file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The project directory of the session.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    /// Where the branch forked from its parent (0: not a fork).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fork_point: u64,
}

/// Frames an extension writes on its stdout.
///
/// ```
/// use zut_ext::wire::{decode_ext_frame, ExtFrame};
/// assert_eq!(decode_ext_frame(br#"{"type":"ready"}"#).unwrap(), ExtFrame::Ready);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExtFrame {
    /// Required first frame.
    Hello {
        /// The protocol major; must be 2.
        #[serde(default)]
        protocol_version: u32,
        /// Must equal the manifest name.
        #[serde(default)]
        name: String,
        /// The extension's version.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        version: String,
        /// Features the extension supports (`tool_cancel` opts in to cancellation).
        #[serde(default)]
        capabilities: Vec<String>,
    },
    /// Registers a slash command (before `ready`).
    RegisterCommand {
        /// The name.
        name: String,
        /// What it does, for the user or the model.
        #[serde(default)]
        description: String,
    },
    /// Registers a tool the model can call (before `ready`).
    RegisterTool {
        /// The name.
        name: String,
        /// What it does, for the user or the model.
        #[serde(default)]
        description: String,
        /// JSON Schema of the arguments.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schema: Option<Value>,
        /// Hidden until a result activates it.
        #[serde(default, skip_serializing_if = "is_false")]
        deferred: bool,
        /// Waits for a person: no host reply deadline.
        #[serde(default, skip_serializing_if = "is_false")]
        interactive: bool,
    },
    /// All initial registrations are flushed.
    Ready,
    /// Lifecycle events to observe and events to intercept.
    Subscribe {
        /// Events to receive as `event` frames.
        #[serde(default)]
        events: Vec<String>,
        /// Events to receive as `event_intercept` (`tool_call`, `turn_start`, `assistant_message`).
        #[serde(default)]
        intercept: Vec<String>,
    },
    /// The answer to an `event_intercept`; every field defaults to "allow, unchanged".
    EventInterceptResponse {
        /// The correlation id.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// Refuse the action.
        #[serde(default, skip_serializing_if = "is_false")]
        block: bool,
        /// Why (on block) or a pass-through note.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
        /// `tool_call` only: the replacement argument object.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        modified_args: Option<Value>,
        /// `assistant_message` only: the text the user sees instead.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        replace_text: String,
        /// `turn_start`, `user_message`, `tool_result`: hidden context for
        /// the upcoming model request(s).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        context: String,
        /// `tool_result` only (addition): the blocks the model and the
        /// transcript get instead of the tool's own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replace_content: Option<Vec<ContentBlock>>,
        /// `tool_call` only (addition): `approve` (skip the confirmation
        /// dialog) or `ask` (confirm even under `--yolo`).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        decision: String,
    },
    /// The answer to a `tool_call`.
    ToolResult {
        /// The correlation id.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// What the model sees.
        #[serde(default)]
        content: Vec<ContentBlock>,
        /// The call failed.
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
        /// Deferred tools this result makes available.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        activate_tools: Vec<String>,
        /// Opaque extension state; `Some(Value::Null)` (an explicit `null`)
        /// is distinct from absence: it clears the stored snapshot.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        details: Option<Value>,
    },
    /// The answer to a `command_invoked`.
    CommandResponse {
        /// The correlation id.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// `prompt`, `insert`, `display`, `open_panel` or `noop`.
        #[serde(default)]
        action: String,
        /// For `prompt`: the user message to submit.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        prompt: String,
        /// For `insert`: the text for the editor.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        insert: String,
        /// For `display`: the note to show.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        display: String,
        /// For `open_panel`: the panel.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        open_panel: Option<Panel>,
        /// Shown as a red status line whatever the action.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        error: String,
    },
    /// A one-shot note under the transcript.
    Notify {
        /// `info`, `success`, `warn` or `error`.
        #[serde(default)]
        level: String,
        /// The note.
        #[serde(default)]
        message: String,
    },
    /// Sets or replaces a persistent status item; empty `text` clears it.
    Status {
        /// Identifies the item among this extension's items.
        #[serde(default)]
        key: String,
        /// `info`, `success`, `warn` or `error`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        level: String,
        /// The item; empty clears it.
        #[serde(default)]
        text: String,
    },
    /// Sets or replaces a persistent widget.
    Widget {
        /// The correlation id.
        #[serde(default)]
        id: String,
        /// Placement: `above_input` (also for empty and unknown),
        /// `below_input`, or `right_bar` (a side rail on wide terminals).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        position: String,
        /// The heading.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        title: String,
        /// The rows.
        #[serde(default)]
        lines: Vec<String>,
    },
    /// Removes a widget.
    WidgetClear {
        /// The correlation id.
        #[serde(default)]
        id: String,
    },
    /// Asks the host for a structured alert (kind `bell`).
    Alert {
        /// The alert, e.g. `bell`.
        #[serde(default)]
        kind: String,
        /// Why, as metadata (never rendered).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    /// Removes every note this extension showed.
    ClearNotes,
    /// Submits text as a user prompt (interactive host only).
    Submit {
        /// The text.
        #[serde(default)]
        text: String,
    },
    /// Runs a slash command as if the user typed it.
    SubmitSlash {
        /// The text.
        #[serde(default)]
        text: String,
    },
    /// Spontaneous panel open (interactive tools use it).
    OpenPanel {
        /// The panel to open.
        #[serde(default)]
        panel: Panel,
    },
    /// Redraws an open panel.
    PanelRender {
        /// The panel.
        #[serde(default)]
        panel_id: String,
        /// The heading.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        title: String,
        /// The rows.
        #[serde(default)]
        lines: Vec<String>,
        /// A hint line under the rows.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        footer: String,
    },
    /// Closes a panel (from the extension) or reports that the user closed it (from the host).
    PanelClose {
        /// The panel.
        #[serde(default)]
        panel_id: String,
    },
    /// The answer to `shutdown`.
    ShutdownAck,
    /// Withdraws a tool registered earlier (feature `late_registration`).
    UnregisterTool {
        /// The name as registered.
        name: String,
    },
    /// Withdraws a command registered earlier (feature `late_registration`).
    UnregisterCommand {
        /// The name as registered.
        name: String,
    },
    /// A running tool call is still alive (feature `tool_progress`); restarts
    /// that call's reply deadline.
    ToolProgress {
        /// The `id` of the `tool_call` frame.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// What the tool is doing now.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Work done so far, in units of `total`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        progress: Option<f64>,
        /// All the work, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
    },
    /// Any `type` this version does not know. Logged, never fatal.
    #[serde(other)]
    Unknown,
}

/// Frames the host writes on an extension's stdin.
///
/// ```
/// use zut_ext::wire::{decode_host_frame, HostFrame};
/// let f = decode_host_frame(br#"{"type":"tool_cancel","id":"7"}"#).unwrap();
/// assert_eq!(f, HostFrame::ToolCancel { id: "7".into() });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostFrame {
    /// The host's answer to `hello`.
    HelloAck {
        /// The host's protocol major.
        protocol_version: u32,
        /// The host's version.
        #[serde(default)]
        zut_version: String,
        /// The active model provider.
        #[serde(default)]
        provider: String,
        /// The active model.
        #[serde(default)]
        model: String,
        /// The user's project directory.
        #[serde(default)]
        cwd: String,
        /// The extension's own directory.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        extension_dir: String,
        /// Where the extension keeps its files.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        data_dir: String,
        /// The active session branch, when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<SessionInfo>,
        /// Additions beyond the reference protocol this host supports
        /// (zut sends `late_registration` and `tool_progress`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        features: Vec<String>,
    },
    /// The user ran a registered slash command.
    CommandInvoked {
        /// The correlation id.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// The command as registered.
        name: String,
        /// Everything typed after the command name, trimmed.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        args: String,
    },
    /// The model called a registered tool.
    ToolCall {
        /// The correlation id.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// The tool as registered.
        name: String,
        /// The JSON object the model produced.
        #[serde(default)]
        args: Value,
    },
    /// A delivered tool call was abandoned (only with the `tool_cancel` capability).
    ToolCancel {
        /// The correlation id.
        #[serde(deserialize_with = "id_string")]
        id: String,
    },
    /// A subscribed lifecycle event (no answer expected).
    Event(EventPayload),
    /// A chance to block or rewrite an event; answered with `event_intercept_response`.
    EventIntercept {
        /// The correlation id.
        #[serde(deserialize_with = "id_string")]
        id: String,
        /// The event and its fields.
        #[serde(flatten)]
        payload: EventPayload,
    },
    /// A key pressed in the extension's focused panel.
    PanelKey {
        /// The panel.
        panel_id: String,
        /// The normalised key name (`up`, `down`, `enter`, `rune`, ...).
        key: String,
        /// For `rune`: the typed character.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        text: String,
    },
    /// Closes a panel (from the extension) or reports that the user closed it (from the host).
    PanelClose {
        /// The panel.
        panel_id: String,
    },
    /// The panel was resized (defined; current hosts do not send it).
    PanelResize {
        /// The panel.
        panel_id: String,
        /// Columns.
        width: u32,
        /// Rows.
        height: u32,
    },
    /// The host is stopping: answer `shutdown_ack` and exit.
    Shutdown,
    /// Any `type` this version does not know. Logged, never fatal.
    #[serde(other)]
    Unknown,
}

/// The payload of `event` and `event_intercept`: the event name plus the
/// fields that event carries. Empty fields stay off the wire.
///
/// ```
/// let e = zut_ext::wire::EventPayload { step: 2, ..zut_ext::wire::EventPayload::named("turn_start") };
/// assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"event":"turn_start","step":2}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventPayload {
    /// The event name.
    pub event: String,
    /// `turn_start`: the step, from 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub step: u64,
    /// `turn_end`: why the turn stopped.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stop: String,
    /// `turn_end`: the error that ended the turn.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    /// Tool events: the call id in the transcript.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_id: String,
    /// Tool events: the tool.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_name: String,
    /// Tool events: its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_args: Option<Value>,
    /// `tool_confirmation_requested`: the short preview shown to the user.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_preview: String,
    /// `assistant_message`: the text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Session events: the active branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionInfo>,
    /// `session_compacted`: `manual` (`/compact`) or `auto` (the context
    /// was nearly full, or the provider said it was too long).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Session events: this extension's stored state for the branch (`null`: none).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub state: Option<Value>,
    /// `tool_result` (addition): whether the tool failed; always present
    /// on that event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `tool_result` (addition): what the tool returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ContentBlock>>,
    /// `tool_result` (addition): the extension (or `mcp:SERVER`) that ran
    /// the tool; empty for built-in tools.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub extension: String,
    /// `agent_end` (addition): the model steps of this prompt so far.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steps: u64,
    /// `agent_end` (addition): how often this prompt was already continued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continued: Option<u64>,
}

impl EventPayload {
    /// A payload with only the event name set.
    ///
    /// ```
    /// assert_eq!(zut_ext::wire::EventPayload::named("turn_end").event, "turn_end");
    /// ```
    pub fn named(event: &str) -> Self {
        EventPayload {
            event: event.to_string(),
            ..Default::default()
        }
    }
}

impl ExtFrame {
    /// The wire `type` of this frame (`"unknown"` for [`ExtFrame::Unknown`]).
    ///
    /// ```
    /// assert_eq!(zut_ext::wire::ExtFrame::ClearNotes.type_name(), "clear_notes");
    /// ```
    pub fn type_name(&self) -> &'static str {
        match self {
            ExtFrame::Hello { .. } => "hello",
            ExtFrame::RegisterCommand { .. } => "register_command",
            ExtFrame::RegisterTool { .. } => "register_tool",
            ExtFrame::Ready => "ready",
            ExtFrame::Subscribe { .. } => "subscribe",
            ExtFrame::EventInterceptResponse { .. } => "event_intercept_response",
            ExtFrame::ToolResult { .. } => "tool_result",
            ExtFrame::CommandResponse { .. } => "command_response",
            ExtFrame::Notify { .. } => "notify",
            ExtFrame::Status { .. } => "status",
            ExtFrame::Widget { .. } => "widget",
            ExtFrame::WidgetClear { .. } => "widget_clear",
            ExtFrame::Alert { .. } => "alert",
            ExtFrame::ClearNotes => "clear_notes",
            ExtFrame::Submit { .. } => "submit",
            ExtFrame::SubmitSlash { .. } => "submit_slash",
            ExtFrame::OpenPanel { .. } => "open_panel",
            ExtFrame::PanelRender { .. } => "panel_render",
            ExtFrame::PanelClose { .. } => "panel_close",
            ExtFrame::ShutdownAck => "shutdown_ack",
            ExtFrame::UnregisterTool { .. } => "unregister_tool",
            ExtFrame::UnregisterCommand { .. } => "unregister_command",
            ExtFrame::ToolProgress { .. } => "tool_progress",
            ExtFrame::Unknown => "unknown",
        }
    }
}

/// Why a line could not be decoded as a frame.
///
/// ```
/// use zut_ext::wire::{decode_host_frame, DecodeError};
/// assert!(matches!(decode_host_frame(b"Loading..."), Err(DecodeError::NotAnObject(_))));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// The line is not valid UTF-8.
    InvalidUtf8,
    /// The line is not a JSON object (a banner, a stray print).
    NotAnObject(String),
    /// A JSON object of a known `type` whose fields have the wrong shape.
    BadFrame {
        /// The frame's `type`.
        frame_type: String,
        /// What the decoder said.
        error: String,
    },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::InvalidUtf8 => write!(f, "line is not valid UTF-8"),
            DecodeError::NotAnObject(e) => write!(f, "line is not a JSON object: {e}"),
            DecodeError::BadFrame { frame_type, error } => {
                write!(f, "malformed {frame_type} frame: {error}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one line (without its `\n`) written by an extension.
///
/// ```
/// let f = zut_ext::wire::decode_ext_frame(br#"{"type":"notify","level":"info","message":"hi"}"#).unwrap();
/// assert_eq!(f.type_name(), "notify");
/// ```
pub fn decode_ext_frame(line: &[u8]) -> Result<ExtFrame, DecodeError> {
    decode(line, ext_fields)
}

/// Decodes one line (without its `\n`) written by the host.
///
/// ```
/// use zut_ext::wire::{decode_host_frame, HostFrame};
/// assert_eq!(decode_host_frame(br#"{"type":"shutdown"}"#).unwrap(), HostFrame::Shutdown);
/// ```
pub fn decode_host_frame(line: &[u8]) -> Result<HostFrame, DecodeError> {
    decode(line, host_fields)
}

fn decode<T: DeserializeOwned>(
    line: &[u8],
    known: fn(&str) -> Option<&'static [&'static str]>,
) -> Result<T, DecodeError> {
    let text = std::str::from_utf8(line).map_err(|_| DecodeError::InvalidUtf8)?;
    if !text.trim_start().starts_with('{') {
        return Err(DecodeError::NotAnObject("expected a JSON object".into()));
    }
    // The usual line (every field one its type defines, plain values)
    // parses in one pass. Anything that pass refuses, from a malformed
    // line to an unknown field holding `1e400`, takes the careful path,
    // which decides what the frame is and says what is wrong with it.
    let (frame_type, map) = match serde_json::from_str::<Map<String, Value>>(text) {
        Ok(mut all) => {
            let frame_type = frame_type_of(all.get("type"))?;
            let fields = known(&frame_type).unwrap_or(&[]);
            all.retain(|key, _| fields.contains(&key.as_str()));
            (frame_type, all)
        }
        Err(_) => decode_careful(text, known)?,
    };
    build(frame_type, map)
}

/// The frame of `frame_type` made of `fields` (those its type defines).
fn build<T: DeserializeOwned>(
    frame_type: String,
    mut fields: Map<String, Value>,
) -> Result<T, DecodeError> {
    fields.insert("type".into(), Value::String(frame_type.clone()));
    T::deserialize(Value::Object(fields)).map_err(|e| DecodeError::BadFrame {
        frame_type,
        error: e.to_string(),
    })
}

/// A frame's `type`: a string, or the error that names what it is not.
fn frame_type_of(tag: Option<&Value>) -> Result<String, DecodeError> {
    let error = match tag {
        Some(Value::String(t)) => return Ok(t.clone()),
        Some(_) => "`type` is not a string",
        None => "missing field `type`",
    };
    Err(DecodeError::BadFrame {
        frame_type: "untyped".into(),
        error: error.into(),
    })
}

/// Decodes a line the one-pass parse refused, in two passes that never
/// build a value the frame does not define.
fn decode_careful(
    text: &str,
    known: fn(&str) -> Option<&'static [&'static str]>,
) -> Result<(String, Map<String, Value>), DecodeError> {
    // First pass: the `type` alone; every other value is skipped unparsed
    // (no number conversion, no escape decoding, no recursion), which also
    // proves the whole line is one well-formed JSON object.
    let tag =
        pick(text, |key| key == b"type").map_err(|e| DecodeError::NotAnObject(e.to_string()))?;
    let frame_type = frame_type_of(tag.get("type"))?;
    // Second pass: only the fields this type defines are built; an unknown
    // type keeps none and decodes to `Unknown`.
    let fields = known(&frame_type).unwrap_or(&[]);
    let map = pick(text, |key| fields.iter().any(|f| f.as_bytes() == key)).map_err(|e| {
        DecodeError::BadFrame {
            frame_type: frame_type.clone(),
            error: e.to_string(),
        }
    })?;
    Ok((frame_type, map))
}

/// Reads the top-level object of `text`, building the values of the keys
/// `keep` accepts and skipping every other value with
/// [`serde::de::IgnoredAny`], which serde_json walks iteratively without
/// converting numbers or decoding strings: an unknown field may hold
/// `1e400`, a lone surrogate or nesting of any depth.
fn pick(text: &str, keep: impl Fn(&[u8]) -> bool) -> serde_json::Result<Map<String, Value>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let map = de.deserialize_map(Pick { keep })?;
    de.end()?;
    Ok(map)
}

struct Pick<F> {
    keep: F,
}

impl<'de, F: Fn(&[u8]) -> bool> Visitor<'de> for Pick<F> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        while let Some(KeyBytes(key)) = access.next_key()? {
            if (self.keep)(&key) {
                // A kept key is one of ours: plain ASCII, so this is lossless.
                let name = String::from_utf8_lossy(&key).into_owned();
                let value: Value = access.next_value()?;
                out.insert(name, value);
            } else {
                access.next_value::<IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}

/// An object key as raw bytes: a key with a lone surrogate escape is
/// still read (and then skipped) instead of failing the frame.
struct KeyBytes(Vec<u8>);

impl<'de> Deserialize<'de> for KeyBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyBytes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<KeyBytes, E> {
                Ok(KeyBytes(v.to_vec()))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<KeyBytes, E> {
                Ok(KeyBytes(v.as_bytes().to_vec()))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// The fields each extension frame type defines (its `type` aside).
fn ext_fields(frame_type: &str) -> Option<&'static [&'static str]> {
    Some(match frame_type {
        "hello" => &["protocol_version", "name", "version", "capabilities"],
        "register_command" => &["name", "description"],
        "register_tool" => &["name", "description", "schema", "deferred", "interactive"],
        "ready" | "clear_notes" | "shutdown_ack" => &[],
        "subscribe" => &["events", "intercept"],
        "event_intercept_response" => &[
            "id",
            "block",
            "reason",
            "modified_args",
            "replace_text",
            "context",
            "replace_content",
            "decision",
        ],
        "tool_result" => &["id", "content", "is_error", "activate_tools", "details"],
        "command_response" => &[
            "id",
            "action",
            "prompt",
            "insert",
            "display",
            "open_panel",
            "error",
        ],
        "notify" => &["level", "message"],
        "status" => &["key", "level", "text"],
        "widget" => &["id", "position", "title", "lines"],
        "widget_clear" => &["id"],
        "alert" => &["kind", "reason"],
        "submit" | "submit_slash" => &["text"],
        "open_panel" => &["panel"],
        "panel_render" => &["panel_id", "title", "lines", "footer"],
        "panel_close" => &["panel_id"],
        "unregister_tool" | "unregister_command" => &["name"],
        "tool_progress" => &["id", "message", "progress", "total"],
        _ => return None,
    })
}

/// The fields of `event_intercept`: an `id`, then those of
/// [`EventPayload`], which `event` has alone ([`EVENT_FIELDS`]).
const INTERCEPT_FIELDS: &[&str] = &[
    "id",
    "event",
    "step",
    "stop",
    "error",
    "tool_id",
    "tool_name",
    "tool_args",
    "tool_preview",
    "text",
    "session",
    "state",
    "is_error",
    "content",
    "extension",
    "steps",
    "continued",
];

/// The fields of [`EventPayload`].
const EVENT_FIELDS: &[&str] = INTERCEPT_FIELDS.split_at(1).1;

/// The fields each host frame type defines (its `type` aside).
fn host_fields(frame_type: &str) -> Option<&'static [&'static str]> {
    Some(match frame_type {
        "hello_ack" => &[
            "protocol_version",
            "zut_version",
            "provider",
            "model",
            "cwd",
            "extension_dir",
            "data_dir",
            "session",
            "features",
        ],
        "command_invoked" | "tool_call" => &["id", "name", "args"],
        "tool_cancel" => &["id"],
        "event" => EVENT_FIELDS,
        "event_intercept" => INTERCEPT_FIELDS,
        "panel_key" => &["panel_id", "key", "text"],
        "panel_close" => &["panel_id"],
        "panel_resize" => &["panel_id", "width", "height"],
        "shutdown" => &[],
        _ => return None,
    })
}

/// Encodes a frame as one line, newline included.
///
/// ```
/// let line = zut_ext::wire::encode_line(&zut_ext::wire::ExtFrame::Ready);
/// assert_eq!(line, b"{\"type\":\"ready\"}\n");
/// ```
pub fn encode_line<T: Serialize>(frame: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    encode_into(frame, &mut out);
    out
}

/// Appends a frame and its newline to `out`.
///
/// ```
/// let mut buf = Vec::new();
/// zut_ext::wire::encode_into(&zut_ext::wire::ExtFrame::ShutdownAck, &mut buf);
/// assert!(buf.ends_with(b"}\n"));
/// ```
pub fn encode_into<T: Serialize>(frame: &T, out: &mut Vec<u8>) {
    // Serialising our own types into a Vec cannot fail: every map key is a
    // string and no Serialize impl here returns an error.
    serde_json::to_writer(&mut *out, frame).expect("wire frames always serialise");
    out.push(b'\n');
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Distinguishes an explicit `null` (Some(Null)) from an absent field (None).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Correlation ids are strings on the wire; a number is accepted too.
fn id_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        S(String),
        N(serde_json::Number),
    }
    Ok(match Id::deserialize(d)? {
        Id::S(s) => s,
        Id::N(n) => n.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn enc<T: Serialize>(f: &T) -> String {
        String::from_utf8(encode_line(f)).unwrap()
    }

    #[test]
    fn host_frames_have_exact_json() {
        let cases: Vec<(HostFrame, &str)> = vec![
            (
                HostFrame::HelloAck {
                    protocol_version: 2,
                    zut_version: "0.1.0".into(),
                    provider: "script".into(),
                    model: "m".into(),
                    cwd: "/p".into(),
                    extension_dir: "/p/e".into(),
                    data_dir: "/p/e".into(),
                    session: None,
                    features: vec![],
                },
                r#"{"type":"hello_ack","protocol_version":2,"zut_version":"0.1.0","provider":"script","model":"m","cwd":"/p","extension_dir":"/p/e","data_dir":"/p/e"}"#,
            ),
            (
                HostFrame::HelloAck {
                    protocol_version: 2,
                    zut_version: "0.1.0".into(),
                    provider: "script".into(),
                    model: "m".into(),
                    cwd: "/p".into(),
                    extension_dir: String::new(),
                    data_dir: String::new(),
                    session: None,
                    features: vec!["late_registration".into(), "tool_progress".into()],
                },
                r#"{"type":"hello_ack","protocol_version":2,"zut_version":"0.1.0","provider":"script","model":"m","cwd":"/p","features":["late_registration","tool_progress"]}"#,
            ),
            (
                HostFrame::CommandInvoked {
                    id: "7".into(),
                    name: "Ping".into(),
                    args: String::new(),
                },
                r#"{"type":"command_invoked","id":"7","name":"Ping"}"#,
            ),
            (
                HostFrame::ToolCall {
                    id: "8".into(),
                    name: "weather".into(),
                    args: json!({"city":"Berlin"}),
                },
                r#"{"type":"tool_call","id":"8","name":"weather","args":{"city":"Berlin"}}"#,
            ),
            (
                HostFrame::ToolCancel { id: "8".into() },
                r#"{"type":"tool_cancel","id":"8"}"#,
            ),
            (
                HostFrame::Event(EventPayload {
                    step: 1,
                    ..EventPayload::named("turn_start")
                }),
                r#"{"type":"event","event":"turn_start","step":1}"#,
            ),
            (
                HostFrame::Event(EventPayload {
                    session: Some(SessionInfo {
                        id: "b1".into(),
                        fork_point: 4,
                        ..Default::default()
                    }),
                    state: Some(Value::Null),
                    ..EventPayload::named("session_opened")
                }),
                r#"{"type":"event","event":"session_opened","session":{"id":"b1","fork_point":4},"state":null}"#,
            ),
            (
                HostFrame::EventIntercept {
                    id: "9".into(),
                    payload: EventPayload {
                        tool_id: "c1".into(),
                        tool_name: "bash".into(),
                        tool_args: Some(json!({"command":"ls","timeout":5})),
                        ..EventPayload::named("tool_call")
                    },
                },
                r#"{"type":"event_intercept","id":"9","event":"tool_call","tool_id":"c1","tool_name":"bash","tool_args":{"command":"ls","timeout":5}}"#,
            ),
            (
                HostFrame::PanelKey {
                    panel_id: "p".into(),
                    key: "rune".into(),
                    text: "x".into(),
                },
                r#"{"type":"panel_key","panel_id":"p","key":"rune","text":"x"}"#,
            ),
            (
                HostFrame::PanelClose {
                    panel_id: "p".into(),
                },
                r#"{"type":"panel_close","panel_id":"p"}"#,
            ),
            (HostFrame::Shutdown, r#"{"type":"shutdown"}"#),
        ];
        for (frame, want) in cases {
            assert_eq!(enc(&frame), format!("{want}\n"));
            assert_eq!(decode_host_frame(want.as_bytes()).unwrap(), frame, "{want}");
        }
    }

    #[test]
    fn ext_frames_round_trip_exactly() {
        let lines = [
            r#"{"type":"hello","protocol_version":2,"name":"weather","version":"1.0.0","capabilities":["commands","tool_cancel"]}"#,
            r#"{"type":"register_command","name":"weather","description":"current weather"}"#,
            r#"{"type":"register_tool","name":"ask","description":"d","schema":{"type":"object"},"deferred":true,"interactive":true}"#,
            r#"{"type":"ready"}"#,
            r#"{"type":"subscribe","events":["turn_start"],"intercept":["tool_call"]}"#,
            r#"{"type":"event_intercept_response","id":"3","block":true,"reason":"no"}"#,
            r#"{"type":"event_intercept_response","id":"3","modified_args":{"command":"echo","timeout":30}}"#,
            r#"{"type":"tool_result","id":"4","content":[{"type":"text","text":"ok"},{"type":"image","mime_type":"image/png","data":"AAAA"}],"is_error":true,"activate_tools":["x"],"details":null}"#,
            r#"{"type":"command_response","id":"5","action":"open_panel","open_panel":{"id":"p","title":"T","lines":["a"],"footer":"f"}}"#,
            r#"{"type":"notify","level":"info","message":"hi"}"#,
            r#"{"type":"status","key":"k","level":"success","text":"2/4"}"#,
            r#"{"type":"widget","id":"w","position":"above_input","title":"T","lines":["l"]}"#,
            r#"{"type":"widget_clear","id":"w"}"#,
            r#"{"type":"alert","kind":"bell","reason":"question_ready"}"#,
            r#"{"type":"clear_notes"}"#,
            r#"{"type":"submit","text":"go"}"#,
            r#"{"type":"submit_slash","text":"/x"}"#,
            r#"{"type":"open_panel","panel":{"id":"p","lines":[]}}"#,
            r#"{"type":"panel_render","panel_id":"p","title":"T","lines":["x"],"footer":"f"}"#,
            r#"{"type":"panel_close","panel_id":"p"}"#,
            r#"{"type":"shutdown_ack"}"#,
            r#"{"type":"unregister_tool","name":"ask"}"#,
            r#"{"type":"unregister_command","name":"weather"}"#,
            r#"{"type":"tool_progress","id":"4","message":"step 2","progress":2.0,"total":5.0}"#,
            r#"{"type":"tool_progress","id":"4"}"#,
        ];
        for line in lines {
            let frame = decode_ext_frame(line.as_bytes()).unwrap();
            assert_ne!(frame, ExtFrame::Unknown, "{line}");
            assert_eq!(enc(&frame), format!("{line}\n"));
        }
    }

    #[test]
    fn details_null_differs_from_absent() {
        let with_null =
            decode_ext_frame(br#"{"type":"tool_result","id":"1","details":null}"#).unwrap();
        let absent = decode_ext_frame(br#"{"type":"tool_result","id":"1"}"#).unwrap();
        match (with_null, absent) {
            (ExtFrame::ToolResult { details: a, .. }, ExtFrame::ToolResult { details: b, .. }) => {
                assert_eq!(a, Some(Value::Null));
                assert_eq!(b, None);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknowns_are_tolerated() {
        assert_eq!(
            decode_ext_frame(br#"{"type":"telemetry","x":1}"#).unwrap(),
            ExtFrame::Unknown
        );
        let f = decode_ext_frame(br#"{"type":"ready","future_field":{"a":1}}"#).unwrap();
        assert_eq!(f, ExtFrame::Ready);
        let f = decode_ext_frame(br#"{"type":"tool_result","id":7,"content":[{"type":"audio"}]}"#)
            .unwrap();
        assert_eq!(
            f,
            ExtFrame::ToolResult {
                id: "7".into(),
                content: vec![ContentBlock::Unknown],
                is_error: false,
                activate_tools: vec![],
                details: None
            }
        );
    }

    #[test]
    fn unknown_fields_are_skipped_unparsed() {
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        let odd = [
            r#"{"type":"tool_result","id":"1","big":1e400,"content":[]}"#.to_string(),
            r#"{"type":"tool_result","id":"1","s":"\udc00","content":[]}"#.to_string(),
            r#"{"type":"tool_result","\udc00":1,"id":"1","content":[]}"#.to_string(),
            format!(r#"{{"x":{deep},"type":"tool_result","id":"1","content":[]}}"#),
        ];
        for line in &odd {
            match decode_ext_frame(line.as_bytes()) {
                Ok(ExtFrame::ToolResult { id, .. }) => assert_eq!(id, "1"),
                other => panic!("{line:.80}: {other:?}"),
            }
        }
        let hello = format!(
            r#"{{"type":"hello","protocol_version":2,"name":"n","n":-1e999,"u":"\ud800x","d":{deep}}}"#
        );
        assert!(matches!(
            decode_ext_frame(hello.as_bytes()),
            Ok(ExtFrame::Hello {
                protocol_version: 2,
                ..
            })
        ));
        let call = format!(r#"{{"type":"tool_call","id":"t","name":"n","args":{{}},"z":{deep}}}"#);
        assert!(matches!(
            decode_host_frame(call.as_bytes()),
            Ok(HostFrame::ToolCall { .. })
        ));
        // An unknown type with junk beside it is still just unknown.
        assert_eq!(
            decode_ext_frame(br#"{"type":"later","v":1e400}"#).unwrap(),
            ExtFrame::Unknown
        );
    }

    /// The one-pass decode is a shortcut, never a different answer: on
    /// every line it takes, the careful two-pass decode says the same.
    #[test]
    fn the_one_pass_decode_agrees_with_the_careful_one() {
        fn careful<T: DeserializeOwned>(
            line: &str,
            known: fn(&str) -> Option<&'static [&'static str]>,
        ) -> Result<T, DecodeError> {
            decode_careful(line, known).and_then(|(t, map)| build(t, map))
        }
        let ext = [
            r#"{"type":"hello","protocol_version":2,"name":"n","version":"1"}"#,
            r#"{"type":"register_tool","name":"t","description":"d","schema":{"type":"object"},"extra":[1,2]}"#,
            r#"{"type":"tool_result","id":"1","content":[{"type":"text","text":"a\"b\u00e9"}],"is_error":true}"#,
            r#"{"type":"tool_result","id":"1","id":"2","content":[]}"#,
            r#"{"type":"ready","type":"notify","message":"last type wins"}"#,
            r#"{"name":"n","type":"register_command","description":7}"#,
            r#"{"type":"later","x":1}"#,
            r#"{"type":7}"#,
            r#"{"message":"no type"}"#,
        ];
        for line in ext {
            assert_eq!(
                decode_ext_frame(line.as_bytes()),
                careful::<ExtFrame>(line, ext_fields),
                "{line}"
            );
        }
        let host = [
            r#"{"type":"hello_ack","protocol_version":2,"zut_version":"0.1.0","provider":"p","model":"m","cwd":"/p","extension_dir":"/e","data_dir":"/d","features":["tool_progress"],"new":{}}"#,
            r#"{"type":"tool_call","id":"c","name":"n","args":{"deep":[[{}]]}}"#,
            r#"{"type":"shutdown","reason":"unknown here"}"#,
        ];
        for line in host {
            assert_eq!(
                decode_host_frame(line.as_bytes()),
                careful::<HostFrame>(line, host_fields),
                "{line}"
            );
        }
    }

    #[test]
    fn known_fields_are_still_checked() {
        // The tolerance is for what we do not read, not for what we do.
        for line in [
            r#"{"type":"tool_result","id":1e400}"#,
            r#"{"type":"notify","message":"\udc00"}"#,
        ] {
            assert!(
                matches!(
                    decode_ext_frame(line.as_bytes()),
                    Err(DecodeError::BadFrame { .. })
                ),
                "{line}"
            );
        }
        assert!(matches!(
            decode_ext_frame(br#"{"type":"ready","x":[1,}"#),
            Err(DecodeError::NotAnObject(_))
        ));
        assert!(matches!(
            decode_ext_frame(br#"{"type":7}"#),
            Err(DecodeError::BadFrame { .. })
        ));
    }

    #[test]
    fn decode_errors_say_what_went_wrong() {
        assert_eq!(decode_ext_frame(b"\xff\xfe"), Err(DecodeError::InvalidUtf8));
        assert!(matches!(
            decode_ext_frame(b"Loading plugin..."),
            Err(DecodeError::NotAnObject(_))
        ));
        assert!(matches!(
            decode_ext_frame(b"[1,2]"),
            Err(DecodeError::NotAnObject(_))
        ));
        match decode_ext_frame(br#"{"type":"register_command","name":5}"#) {
            Err(DecodeError::BadFrame { frame_type, .. }) => {
                assert_eq!(frame_type, "register_command")
            }
            other => panic!("{other:?}"),
        }
    }
}
