//! The frames of the protocol additions as the SDK writes them
//! (`tool_progress`, `unregister_tool` / `unregister_command`), and
//! `hello_ack.features` read tolerantly. The new intercept fields
//! (`replace_content`, `decision`) and payload fields (`is_error`,
//! `content`, `extension`, `steps`, `continued`) are part of
//! [`crate::wire`]'s frames.
//!
//! Hosts that announce an addition in `hello_ack.features` act on these;
//! older hosts skip them as unknown frames and fields (the protocol's
//! rule), so an extension may always send them.
//!
//! Invariants: encoding follows [`crate::wire`]'s conventions (compact, one
//! line, empty optional fields left out); decoding the extra host fields is
//! tolerant: a field of the wrong shape reads as absent, never as an error.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Number, Value};

/// Frames beyond the base protocol that an extension writes.
///
/// ```
/// use zut_ext::additions::AddedFrame;
/// let f = AddedFrame::UnregisterTool { name: "weather".into() };
/// assert_eq!(zut_ext::wire::encode_line(&f), b"{\"type\":\"unregister_tool\",\"name\":\"weather\"}\n");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AddedFrame {
    /// A running tool call is alive; restarts its reply deadline.
    ToolProgress {
        /// The id of the `tool_call` frame.
        id: String,
        /// What the tool is doing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// How far it got (any unit; with `total`, a fraction of it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        progress: Option<Number>,
        /// The whole amount of work.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<Number>,
    },
    /// Withdraws one of this extension's tools.
    UnregisterTool {
        /// The tool.
        name: String,
    },
    /// Withdraws one of this extension's commands.
    UnregisterCommand {
        /// The command.
        name: String,
    },
}

impl AddedFrame {
    /// The wire `type`.
    ///
    /// ```
    /// let f = zut_ext::additions::AddedFrame::UnregisterCommand { name: "x".into() };
    /// assert_eq!(f.type_name(), "unregister_command");
    /// ```
    pub fn type_name(&self) -> &'static str {
        match self {
            AddedFrame::ToolProgress { .. } => "tool_progress",
            AddedFrame::UnregisterTool { .. } => "unregister_tool",
            AddedFrame::UnregisterCommand { .. } => "unregister_command",
        }
    }
}

/// A progress figure as a JSON number: integral values are written as
/// integers (`3`, not `3.0`); NaN and infinities are left out.
///
/// ```
/// assert_eq!(zut_ext::additions::number(3.0).unwrap().to_string(), "3");
/// assert_eq!(zut_ext::additions::number(0.5).unwrap().to_string(), "0.5");
/// assert!(zut_ext::additions::number(f64::NAN).is_none());
/// ```
pub fn number(v: f64) -> Option<Number> {
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        Some(Number::from(v as i64))
    } else {
        Number::from_f64(v)
    }
}

/// The `hello_ack` fields of the additions.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct HelloAckAdditions {
    /// The additions this host supports.
    #[serde(default, deserialize_with = "lenient")]
    pub features: Vec<String>,
}

/// Reads the additions' fields from a whole host line; anything unreadable
/// gives the defaults.
///
/// ```
/// let a: zut_ext::additions::HelloAckAdditions =
///     zut_ext::additions::read_fields(br#"{"type":"hello_ack","features":["tool_progress"]}"#);
/// assert_eq!(a.features, ["tool_progress"]);
/// ```
pub fn read_fields<T: Default + for<'de> Deserialize<'de>>(line: &[u8]) -> T {
    serde_json::from_slice(line).unwrap_or_default()
}

/// A field of the wrong shape reads as its default instead of failing the
/// whole frame.
fn lenient<'de, D: Deserializer<'de>, T: Default + for<'a> Deserialize<'a>>(
    d: D,
) -> Result<T, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(T::deserialize(v).unwrap_or_default())
}
