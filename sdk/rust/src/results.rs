//! What SDK handlers return: command responses, tool results, interception
//! decisions, and the helpers that build them.
//!
//! These are plain values; the SDK turns each into exactly one wire frame
//! answering the request it belongs to. Invariants:
//! - a [`ToolResult`]'s `details` distinguishes "absent" (`None`: stored state
//!   unchanged) from an explicit JSON `null` (`Some(Value::Null)`: clears it);
//! - decisions default to "allow, unchanged".

use crate::wire::{ContentBlock, Panel};
use serde_json::Value;

/// What zut does with a command's answer.
///
/// ```
/// assert_eq!(zut_ext::Action::Display.as_str(), "display");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Submit `prompt` as a user message and run a turn.
    Prompt,
    /// Put `insert` into the editor without submitting it.
    Insert,
    /// Show `display` as a one-shot note.
    Display,
    /// Open the panel in `open_panel`.
    OpenPanel,
    /// Nothing to do in the UI (the extension handled it).
    Noop,
}

impl Action {
    /// The wire spelling of the action.
    ///
    /// ```
    /// assert_eq!(zut_ext::Action::OpenPanel.as_str(), "open_panel");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Prompt => "prompt",
            Action::Insert => "insert",
            Action::Display => "display",
            Action::OpenPanel => "open_panel",
            Action::Noop => "noop",
        }
    }
}

/// The answer to a slash command. Build it with [`prompt`], [`insert`],
/// [`display`], [`open_panel_response`], [`noop`] or [`error`].
///
/// ```
/// let r = zut_ext::display("hi");
/// assert_eq!(r.action, zut_ext::Action::Display);
/// assert_eq!(r.text, "hi");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// What zut does with the answer.
    pub action: Action,
    /// The prompt, inserted text or displayed note, as `action` says.
    pub text: String,
    /// The panel to open, for [`Action::OpenPanel`].
    pub panel: Option<Panel>,
    /// An error shown as a red status line whatever the action.
    pub error: String,
}

/// A response that submits `text` as a user prompt.
///
/// ```
/// let r = zut_ext::prompt("Greet me.");
/// assert_eq!(r.action, zut_ext::Action::Prompt);
/// ```
pub fn prompt(text: impl Into<String>) -> Response {
    with_action(Action::Prompt, text.into())
}

/// A response that inserts `text` into the editor.
///
/// ```
/// assert_eq!(zut_ext::insert("x").action, zut_ext::Action::Insert);
/// ```
pub fn insert(text: impl Into<String>) -> Response {
    with_action(Action::Insert, text.into())
}

/// A response that shows `text` as a note.
///
/// ```
/// assert_eq!(zut_ext::display("x").text, "x");
/// ```
pub fn display(text: impl Into<String>) -> Response {
    with_action(Action::Display, text.into())
}

/// A response that opens an extension-owned panel.
///
/// ```
/// use zut_ext::wire::Panel;
/// let p = Panel { id: "p".into(), title: "T".into(), lines: vec!["a".into()], footer: String::new() };
/// assert_eq!(zut_ext::open_panel_response(p).action, zut_ext::Action::OpenPanel);
/// ```
pub fn open_panel_response(panel: Panel) -> Response {
    Response {
        panel: Some(panel),
        ..with_action(Action::OpenPanel, String::new())
    }
}

/// A response that changes nothing in the UI.
///
/// ```
/// assert_eq!(zut_ext::noop().action, zut_ext::Action::Noop);
/// ```
pub fn noop() -> Response {
    with_action(Action::Noop, String::new())
}

/// A response reporting an error (action `noop`).
///
/// ```
/// let r = zut_ext::error("usage: /todo [add TEXT]");
/// assert_eq!(r.error, "usage: /todo [add TEXT]");
/// ```
pub fn error(message: impl Into<String>) -> Response {
    Response {
        error: message.into(),
        ..noop()
    }
}

fn with_action(action: Action, text: String) -> Response {
    Response {
        action,
        text,
        panel: None,
        error: String::new(),
    }
}

/// The answer to a tool call.
///
/// ```
/// use serde_json::json;
/// let r = zut_ext::text_result("ok").with_details(json!({"n": 1}));
/// assert!(!r.is_error);
/// assert_eq!(r.details, Some(json!({"n": 1})));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResult {
    /// What the model sees.
    pub content: Vec<ContentBlock>,
    /// The call failed.
    pub is_error: bool,
    /// Deferred tools this result makes available.
    pub activate_tools: Vec<String>,
    /// Opaque state zut stores for the session branch: `None` leaves the
    /// stored state alone, `Some(Value::Null)` clears it.
    pub details: Option<Value>,
}

impl ToolResult {
    /// The same result carrying `details` as the branch's state.
    ///
    /// ```
    /// let r = zut_ext::text_result("cleared").with_details(serde_json::Value::Null);
    /// assert_eq!(r.details, Some(serde_json::Value::Null));
    /// ```
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The same result activating these deferred tools.
    ///
    /// ```
    /// let r = zut_ext::text_result("enabled").with_activate_tools(["lookup"]);
    /// assert_eq!(r.activate_tools, vec!["lookup".to_string()]);
    /// ```
    pub fn with_activate_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.activate_tools = names.into_iter().map(Into::into).collect();
        self
    }
}

/// A text content block.
///
/// ```
/// let block = zut_ext::text("hello");
/// assert_eq!(block, zut_ext::wire::ContentBlock::text("hello"));
/// ```
pub fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::text(text)
}

/// An image content block from base64 (standard alphabet) data.
///
/// ```
/// let block = zut_ext::image("image/png", "iVBORw0KGgo=");
/// # drop(block);
/// ```
pub fn image(mime_type: impl Into<String>, base64_data: impl Into<String>) -> ContentBlock {
    ContentBlock::Image {
        mime_type: mime_type.into(),
        data: base64_data.into(),
    }
}

/// An image content block from raw bytes (encoded to base64 here).
///
/// ```
/// let block = zut_ext::image_bytes("image/png", b"\x89PNG\r\n\x1a\n");
/// assert_eq!(block, zut_ext::image("image/png", "iVBORw0KGgo="));
/// ```
pub fn image_bytes(mime_type: impl Into<String>, raw: &[u8]) -> ContentBlock {
    image(mime_type, base64(raw))
}

/// A successful result holding one text block.
///
/// ```
/// let r = zut_ext::text_result("done");
/// assert_eq!(r.content, vec![zut_ext::text("done")]);
/// ```
pub fn text_result(s: impl Into<String>) -> ToolResult {
    ToolResult {
        content: vec![text(s)],
        ..ToolResult::default()
    }
}

/// A failed result holding one text block.
///
/// ```
/// assert!(zut_ext::error_result("boom").is_error);
/// ```
pub fn error_result(s: impl Into<String>) -> ToolResult {
    ToolResult {
        is_error: true,
        ..text_result(s)
    }
}

/// A `tool_call` interceptor's verdict.
///
/// ```
/// let d = zut_ext::ToolCallDecision::block("not on main");
/// assert!(d.block);
/// assert_eq!(zut_ext::ToolCallDecision::default(), zut_ext::ToolCallDecision::allow());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCallDecision {
    /// Refuse the call; the model sees `reason` as the tool error.
    pub block: bool,
    /// Why (on block) or a pass-through note.
    pub reason: String,
    /// Replacement arguments (a JSON object), ignored when blocking.
    pub modified_args: Option<Value>,
    /// Skip the confirmation dialog, or require it even under `--yolo`
    /// (hosts rank block > ask > approve > allow across extensions).
    pub decision: Option<Approval>,
}

/// A `tool_call` interceptor's say on confirmation.
///
/// ```
/// assert_eq!(zut_ext::Approval::Ask.as_str(), "ask");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// This call skips the confirmation dialog.
    Approve,
    /// This call needs confirmation even under `--yolo` or a remembered approval.
    Ask,
}

impl Approval {
    /// The wire value.
    ///
    /// ```
    /// assert_eq!(zut_ext::Approval::Approve.as_str(), "approve");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::Approve => "approve",
            Approval::Ask => "ask",
        }
    }
}

impl ToolCallDecision {
    /// Let the call run unchanged.
    ///
    /// ```
    /// assert!(!zut_ext::ToolCallDecision::allow().block);
    /// ```
    pub fn allow() -> Self {
        Self::default()
    }

    /// Refuse the call with a reason the model sees.
    ///
    /// ```
    /// assert_eq!(zut_ext::ToolCallDecision::block("no").reason, "no");
    /// ```
    pub fn block(reason: impl Into<String>) -> Self {
        ToolCallDecision {
            block: true,
            reason: reason.into(),
            ..Self::default()
        }
    }

    /// Let the call run without the confirmation dialog.
    ///
    /// ```
    /// assert_eq!(zut_ext::ToolCallDecision::approve().decision, Some(zut_ext::Approval::Approve));
    /// ```
    pub fn approve() -> Self {
        ToolCallDecision {
            decision: Some(Approval::Approve),
            ..Self::default()
        }
    }

    /// Let the call run only after the user confirmed it, even under `--yolo`.
    ///
    /// ```
    /// assert_eq!(zut_ext::ToolCallDecision::ask().decision, Some(zut_ext::Approval::Ask));
    /// ```
    pub fn ask() -> Self {
        ToolCallDecision {
            decision: Some(Approval::Ask),
            ..Self::default()
        }
    }

    /// Let the call run with these arguments instead.
    ///
    /// ```
    /// let d = zut_ext::ToolCallDecision::modify(serde_json::json!({"command": "ls", "timeout": 30}));
    /// assert!(d.modified_args.is_some());
    /// ```
    pub fn modify(args: Value) -> Self {
        ToolCallDecision {
            modified_args: Some(args),
            ..Self::default()
        }
    }
}

/// A `turn_start` interceptor's verdict.
///
/// ```
/// let d = zut_ext::TurnStartDecision::context("Current phase: parse");
/// assert!(!d.block);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnStartDecision {
    /// Stop the turn before the model is called.
    pub block: bool,
    /// Shown to the user on block.
    pub reason: String,
    /// Hidden context for the upcoming model request only (ignored on block).
    pub context: String,
}

impl TurnStartDecision {
    /// Let the turn start unchanged.
    ///
    /// ```
    /// assert_eq!(zut_ext::TurnStartDecision::allow().context, "");
    /// ```
    pub fn allow() -> Self {
        Self::default()
    }

    /// Stop the turn, telling the user why.
    ///
    /// ```
    /// assert!(zut_ext::TurnStartDecision::block("after hours").block);
    /// ```
    pub fn block(reason: impl Into<String>) -> Self {
        TurnStartDecision {
            block: true,
            reason: reason.into(),
            context: String::new(),
        }
    }

    /// Let the turn start with hidden context for the model.
    ///
    /// ```
    /// assert_eq!(zut_ext::TurnStartDecision::context("c").context, "c");
    /// ```
    pub fn context(context: impl Into<String>) -> Self {
        TurnStartDecision {
            context: context.into(),
            ..Self::default()
        }
    }
}

/// An `assistant_message` interceptor's verdict.
///
/// ```
/// let d = zut_ext::AssistantMessageDecision::replace("[redacted]");
/// assert_eq!(d.replace_text.as_deref(), Some("[redacted]"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantMessageDecision {
    /// Hide the message from the user.
    pub block: bool,
    /// Shown to the user on block.
    pub reason: String,
    /// The text the user sees instead (the transcript keeps the original).
    pub replace_text: Option<String>,
}

impl AssistantMessageDecision {
    /// Show the message unchanged.
    ///
    /// ```
    /// assert_eq!(zut_ext::AssistantMessageDecision::allow().replace_text, None);
    /// ```
    pub fn allow() -> Self {
        Self::default()
    }

    /// Hide the message, telling the user why.
    ///
    /// ```
    /// assert!(zut_ext::AssistantMessageDecision::block("leak").block);
    /// ```
    pub fn block(reason: impl Into<String>) -> Self {
        AssistantMessageDecision {
            block: true,
            reason: reason.into(),
            replace_text: None,
        }
    }

    /// Show `text` instead of the message.
    ///
    /// ```
    /// let d = zut_ext::AssistantMessageDecision::replace("x");
    /// assert!(!d.block);
    /// ```
    pub fn replace(text: impl Into<String>) -> Self {
        AssistantMessageDecision {
            replace_text: Some(text.into()),
            ..Self::default()
        }
    }
}

/// Standard base64 with padding (RFC 4648 §4), for [`image_bytes`].
fn base64(raw: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(raw.len().div_ceil(3) * 4);
    for chunk in raw.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_examples() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (raw, want) in cases {
            assert_eq!(base64(raw.as_bytes()), want, "{raw:?}");
        }
        assert_eq!(base64(&[0xff, 0xfe, 0xfd]), "//79");
    }
}

/// A `user_message` interceptor's verdict on the prompt as typed.
///
/// ```
/// let d = zut_ext::UserMessageDecision::replace("run the unit tests").with_context("tests live in tests/");
/// assert_eq!(d.context, "tests live in tests/");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserMessageDecision {
    /// Drop the prompt: it is neither sent nor saved; the user sees `reason`.
    pub block: bool,
    /// Why.
    pub reason: String,
    /// What the model sees and the session saves instead.
    pub replace_text: Option<String>,
    /// Hidden context sent with every request of this prompt, never saved.
    pub context: String,
}

impl UserMessageDecision {
    /// Let the prompt through unchanged.
    ///
    /// ```
    /// assert_eq!(zut_ext::UserMessageDecision::allow(), Default::default());
    /// ```
    pub fn allow() -> Self {
        Self::default()
    }

    /// Drop the prompt, telling the user why.
    ///
    /// ```
    /// assert!(zut_ext::UserMessageDecision::block("not here").block);
    /// ```
    pub fn block(reason: impl Into<String>) -> Self {
        UserMessageDecision {
            block: true,
            reason: reason.into(),
            ..Self::default()
        }
    }

    /// Send this text instead.
    ///
    /// ```
    /// assert!(zut_ext::UserMessageDecision::replace("x").replace_text.is_some());
    /// ```
    pub fn replace(text: impl Into<String>) -> Self {
        UserMessageDecision {
            replace_text: Some(text.into()),
            ..Self::default()
        }
    }

    /// Adds hidden context.
    ///
    /// ```
    /// assert_eq!(zut_ext::UserMessageDecision::allow().with_context("c").context, "c");
    /// ```
    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = context.into();
        self
    }
}

/// A `tool_result` interceptor's verdict, before the model sees the result.
///
/// ```
/// let d = zut_ext::ToolResultDecision::replace(vec![zut_ext::text("[redacted]")]);
/// assert!(d.replace_content.is_some());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResultDecision {
    /// Withhold the result: the model gets an error result reading `reason`.
    pub block: bool,
    /// Why.
    pub reason: String,
    /// The blocks the model and the transcript get instead.
    pub replace_content: Option<Vec<ContentBlock>>,
    /// Hidden context for the next request.
    pub context: String,
}

impl ToolResultDecision {
    /// Let the result through unchanged.
    ///
    /// ```
    /// assert_eq!(zut_ext::ToolResultDecision::allow(), Default::default());
    /// ```
    pub fn allow() -> Self {
        Self::default()
    }

    /// Withhold the result; the model reads `reason` as the tool's error.
    ///
    /// ```
    /// assert!(zut_ext::ToolResultDecision::block("secret").block);
    /// ```
    pub fn block(reason: impl Into<String>) -> Self {
        ToolResultDecision {
            block: true,
            reason: reason.into(),
            ..Self::default()
        }
    }

    /// Give the model these blocks instead.
    ///
    /// ```
    /// assert_eq!(zut_ext::ToolResultDecision::replace(vec![]).replace_content, Some(vec![]));
    /// ```
    pub fn replace(content: Vec<ContentBlock>) -> Self {
        ToolResultDecision {
            replace_content: Some(content),
            ..Self::default()
        }
    }

    /// Adds hidden context for the next request.
    ///
    /// ```
    /// assert_eq!(zut_ext::ToolResultDecision::allow().with_context("c").context, "c");
    /// ```
    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = context.into();
        self
    }
}

/// An `agent_end` interceptor's verdict when the model ends a prompt.
///
/// ```
/// let d = zut_ext::AgentEndDecision::keep_going("the tests still fail");
/// assert!(d.block);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentEndDecision {
    /// Not done yet: `reason` goes to the model and the prompt goes on.
    pub block: bool,
    /// What the model is told.
    pub reason: String,
}

impl AgentEndDecision {
    /// Let the prompt end.
    ///
    /// ```
    /// assert!(!zut_ext::AgentEndDecision::done().block);
    /// ```
    pub fn done() -> Self {
        Self::default()
    }

    /// Continue the prompt, telling the model `reason`.
    ///
    /// ```
    /// assert_eq!(zut_ext::AgentEndDecision::keep_going("go on").reason, "go on");
    /// ```
    pub fn keep_going(reason: impl Into<String>) -> Self {
        AgentEndDecision {
            block: true,
            reason: reason.into(),
        }
    }
}
