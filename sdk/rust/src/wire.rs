//! The zut extension wire format: the one definition of every frame.
//!
//! Frames are single-line JSON objects discriminated by a top-level `type`.
//! [`ExtFrame`] is everything an extension may write on stdout,
//! [`HostFrame`] everything the host writes on the extension's stdin. The
//! host and the Rust SDK both use these types, so the two sides cannot drift.
//!
//! Invariants:
//! - decoding never fails on an unknown `type` (it becomes `Unknown`) or on an
//!   unknown field (ignored): the protocol grows additively;
//! - encoding produces compact JSON with no embedded newline, so one frame is
//!   exactly one line;
//! - optional payload fields that are empty are left out on the wire, as the
//!   reference host does (`step: 0` never appears, `args` is omitted when empty).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The protocol major both sides must agree on in `hello` / `hello_ack`.
pub const PROTOCOL_VERSION: u32 = 2;

/// Tool names an extension can never claim, whether or not the host
/// implements them (the spec's built-in namespace plus its reserved names).
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
pub const INTERCEPTABLE_EVENTS: &[&str] = &["tool_call", "turn_start", "assistant_message"];

/// The capability an extension advertises in `hello` to receive `tool_cancel`.
pub const CAP_TOOL_CANCEL: &str = "tool_cancel";

/// One block of tool output or message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        #[serde(default)]
        text: String,
    },
    /// An image, base64 (standard alphabet) encoded.
    Image {
        #[serde(default)]
        mime_type: String,
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
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }
}

/// The content of an extension-owned panel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    #[serde(default)]
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    #[serde(default)]
    pub lines: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub footer: String,
}

/// Identity of the active session branch, in `hello_ack` and session events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parent_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fork_point: u64,
}

/// Frames an extension writes on its stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExtFrame {
    /// Required first frame.
    Hello {
        #[serde(default)]
        protocol_version: u32,
        #[serde(default)]
        name: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        version: String,
        #[serde(default)]
        capabilities: Vec<String>,
    },
    RegisterCommand {
        name: String,
        #[serde(default)]
        description: String,
    },
    RegisterTool {
        name: String,
        #[serde(default)]
        description: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schema: Option<Value>,
        #[serde(default, skip_serializing_if = "is_false")]
        deferred: bool,
        #[serde(default, skip_serializing_if = "is_false")]
        interactive: bool,
    },
    /// All initial registrations are flushed.
    Ready,
    Subscribe {
        #[serde(default)]
        events: Vec<String>,
        #[serde(default)]
        intercept: Vec<String>,
    },
    EventInterceptResponse {
        #[serde(deserialize_with = "id_string")]
        id: String,
        #[serde(default, skip_serializing_if = "is_false")]
        block: bool,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        modified_args: Option<Value>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        replace_text: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        context: String,
    },
    ToolResult {
        #[serde(deserialize_with = "id_string")]
        id: String,
        #[serde(default)]
        content: Vec<ContentBlock>,
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
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
    CommandResponse {
        #[serde(deserialize_with = "id_string")]
        id: String,
        #[serde(default)]
        action: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        prompt: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        insert: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        display: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        open_panel: Option<Panel>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        error: String,
    },
    Notify {
        #[serde(default)]
        level: String,
        #[serde(default)]
        message: String,
    },
    Status {
        #[serde(default)]
        key: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        level: String,
        #[serde(default)]
        text: String,
    },
    Widget {
        #[serde(default)]
        id: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        position: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        title: String,
        #[serde(default)]
        lines: Vec<String>,
    },
    WidgetClear {
        #[serde(default)]
        id: String,
    },
    Alert {
        #[serde(default)]
        kind: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    ClearNotes,
    Submit {
        #[serde(default)]
        text: String,
    },
    SubmitSlash {
        #[serde(default)]
        text: String,
    },
    /// Spontaneous panel open (interactive tools use it).
    OpenPanel {
        #[serde(default)]
        panel: Panel,
    },
    PanelRender {
        #[serde(default)]
        panel_id: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        title: String,
        #[serde(default)]
        lines: Vec<String>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        footer: String,
    },
    PanelClose {
        #[serde(default)]
        panel_id: String,
    },
    ShutdownAck,
    /// Any `type` this version does not know. Logged, never fatal.
    #[serde(other)]
    Unknown,
}

/// Frames the host writes on an extension's stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostFrame {
    HelloAck {
        protocol_version: u32,
        #[serde(default)]
        zut_version: String,
        #[serde(default)]
        provider: String,
        #[serde(default)]
        model: String,
        #[serde(default)]
        cwd: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        extension_dir: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        data_dir: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<SessionInfo>,
    },
    CommandInvoked {
        #[serde(deserialize_with = "id_string")]
        id: String,
        name: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        args: String,
    },
    ToolCall {
        #[serde(deserialize_with = "id_string")]
        id: String,
        name: String,
        #[serde(default)]
        args: Value,
    },
    ToolCancel {
        #[serde(deserialize_with = "id_string")]
        id: String,
    },
    Event(EventPayload),
    EventIntercept {
        #[serde(deserialize_with = "id_string")]
        id: String,
        #[serde(flatten)]
        payload: EventPayload,
    },
    PanelKey {
        panel_id: String,
        key: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        text: String,
    },
    PanelClose {
        panel_id: String,
    },
    PanelResize {
        panel_id: String,
        width: u32,
        height: u32,
    },
    Shutdown,
    #[serde(other)]
    Unknown,
}

/// The payload of `event` and `event_intercept`: the event name plus the
/// fields that event carries. Empty fields stay off the wire.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventPayload {
    pub event: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub step: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stop: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_args: Option<Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_preview: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionInfo>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub state: Option<Value>,
}

impl EventPayload {
    /// A payload with only the event name set.
    pub fn named(event: &str) -> Self {
        EventPayload {
            event: event.to_string(),
            ..Default::default()
        }
    }
}

impl ExtFrame {
    /// The wire `type` of this frame (`"unknown"` for [`ExtFrame::Unknown`]).
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
            ExtFrame::Unknown => "unknown",
        }
    }
}

/// Why a line could not be decoded as a frame.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// The line is not valid UTF-8.
    InvalidUtf8,
    /// The line is not a JSON object (a banner, a stray print).
    NotAnObject(String),
    /// A JSON object of a known `type` whose fields have the wrong shape.
    BadFrame { frame_type: String, error: String },
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
pub fn decode_ext_frame(line: &[u8]) -> Result<ExtFrame, DecodeError> {
    decode(line)
}

/// Decodes one line (without its `\n`) written by the host.
pub fn decode_host_frame(line: &[u8]) -> Result<HostFrame, DecodeError> {
    decode(line)
}

fn decode<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Result<T, DecodeError> {
    let text = std::str::from_utf8(line).map_err(|_| DecodeError::InvalidUtf8)?;
    if !text.trim_start().starts_with('{') {
        return Err(DecodeError::NotAnObject("expected a JSON object".into()));
    }
    match serde_json::from_str::<T>(text) {
        Ok(frame) => Ok(frame),
        Err(err) => {
            // Tell a stray print apart from a real frame with a bad field.
            #[derive(Deserialize)]
            struct Tag {
                #[serde(rename = "type")]
                frame_type: Option<String>,
            }
            match serde_json::from_str::<Tag>(text) {
                Ok(Tag {
                    frame_type: Some(frame_type),
                }) => Err(DecodeError::BadFrame {
                    frame_type,
                    error: err.to_string(),
                }),
                Ok(Tag { frame_type: None }) => Err(DecodeError::BadFrame {
                    frame_type: "untyped".into(),
                    error: err.to_string(),
                }),
                Err(_) => Err(DecodeError::NotAnObject(err.to_string())),
            }
        }
    }
}

/// Encodes a frame as one line, newline included.
pub fn encode_line<T: Serialize>(frame: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    encode_into(frame, &mut out);
    out
}

/// Appends a frame and its newline to `out`.
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
                },
                r#"{"type":"hello_ack","protocol_version":2,"zut_version":"0.1.0","provider":"script","model":"m","cwd":"/p","extension_dir":"/p/e","data_dir":"/p/e"}"#,
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
