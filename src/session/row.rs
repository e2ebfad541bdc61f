//! The rows of a session file, one JSON object per line, tagged by `type`.
//!
//! Writing borrows ([`RowOut`]) so an append never clones a message;
//! reading owns ([`RowIn`]) and maps every `type` it does not know to
//! [`RowIn::Unknown`], so files written by a newer zut still load.

use crate::provider::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The first row of every session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The session (branch) id, also the file's name without `.jsonl`.
    pub id: String,
    /// The branch this one was forked from.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// The absolute project directory.
    pub cwd: String,
    /// How many of the parent's messages were copied.
    #[serde(default)]
    pub fork_point: Option<usize>,
    /// RFC 3339, UTC.
    pub created: String,
}

/// A row as written.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RowOut<'a> {
    Session(&'a Header),
    Message {
        message: &'a Message,
        /// Who added it when nobody typed it ([`Message::from`]: an
        /// extension's `agent_end` continue, or `hook`).
        #[serde(skip_serializing_if = "Option::is_none")]
        extension: Option<&'a str>,
    },
    ExtensionState {
        extension: &'a str,
        state: &'a Value,
    },
    Compaction {
        summary: &'a str,
        kept: usize,
        /// `manual` or `auto`.
        reason: &'a str,
    },
}

impl<'a> RowOut<'a> {
    /// The row of `message`, with who added it ([`Message::from`]) beside
    /// it: the one way a message row is made, so the two never disagree.
    pub fn message(message: &'a Message) -> RowOut<'a> {
        RowOut::Message {
            message,
            extension: message.from.as_deref(),
        }
    }
}

/// A row as read.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RowIn {
    Session(Header),
    Message {
        message: Message,
        /// Becomes [`Message::from`].
        #[serde(default)]
        extension: Option<String>,
    },
    ExtensionState {
        extension: String,
        /// Absent or `null`: the extension's state is cleared.
        #[serde(default)]
        state: Value,
    },
    Compaction {
        summary: String,
        kept: usize,
    },
    /// A row type this version does not know: skipped.
    #[serde(other)]
    Unknown,
}

/// Just enough of a row to count messages without decoding them (listing).
#[derive(Deserialize)]
pub struct Peek {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub kept: Option<usize>,
}

/// One row as a line, newline included.
pub fn encode(row: &RowOut<'_>, out: &mut Vec<u8>) {
    // Serialising these types cannot fail: every map key is a string and
    // no value is a non-finite float (serde_json has none).
    let _ = serde_json::to_writer(&mut *out, row);
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(row: RowOut<'_>) -> String {
        let mut out = Vec::new();
        encode(&row, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rows_have_their_documented_shapes() {
        let h = Header {
            id: "20240501-120304-ab12".into(),
            parent_id: None,
            cwd: "/p".into(),
            fork_point: None,
            created: "2024-05-01T12:03:04Z".into(),
        };
        assert_eq!(
            line(RowOut::Session(&h)),
            "{\"type\":\"session\",\"id\":\"20240501-120304-ab12\",\"parent_id\":null,\"cwd\":\"/p\",\"fork_point\":null,\"created\":\"2024-05-01T12:03:04Z\"}\n"
        );
        assert_eq!(
            line(RowOut::Message {
                message: &Message::user_text("hi"),
                extension: None,
            }),
            "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n"
        );
        assert_eq!(
            line(RowOut::ExtensionState {
                extension: "todo",
                state: &json!({"n": 1})
            }),
            "{\"type\":\"extension_state\",\"extension\":\"todo\",\"state\":{\"n\":1}}\n"
        );
        assert_eq!(
            line(RowOut::Compaction {
                summary: "s",
                kept: 4,
                reason: "auto"
            }),
            "{\"type\":\"compaction\",\"summary\":\"s\",\"kept\":4,\"reason\":\"auto\"}\n"
        );
    }

    #[test]
    fn a_state_row_without_state_clears() {
        let row: RowIn =
            serde_json::from_str(r#"{"type":"extension_state","extension":"x"}"#).unwrap();
        assert!(matches!(
            row,
            RowIn::ExtensionState {
                state: Value::Null,
                ..
            }
        ));
    }

    #[test]
    fn unknown_types_decode_as_unknown() {
        let row: RowIn = serde_json::from_str(r#"{"type":"label","text":"v2"}"#).unwrap();
        assert!(matches!(row, RowIn::Unknown));
    }
}
