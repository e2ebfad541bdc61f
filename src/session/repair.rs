//! Making a loaded transcript one that a provider accepts again.
//!
//! A session file can end with a tool call whose result never came (zut
//! killed mid-call, the OOM killer, power loss), or hold a result whose
//! call is gone (rows of two processes interleaved). Both make every
//! later request fail with a 400 from the provider. [`repair`] gives each
//! dangling call a synthetic error result and drops each orphan result.
//!
//! Invariants: it is deterministic, so replaying the same file always
//! gives the same transcript; it never changes the index of an existing
//! message except in the rare case of two assistant messages in a row
//! (it then inserts one message between them); an existing message is
//! never left empty (a stripped one keeps a short note).

use crate::provider::{Block, Message, Role};
use std::collections::HashSet;
use zut_ext::wire::ContentBlock;

/// What the model is told a dangling call returned.
pub const INTERRUPTED: &str =
    "the tool call was interrupted (zut stopped before it returned); no result was recorded";

/// What [`repair`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Repairs {
    /// Dangling calls given a synthetic error result.
    pub dangling: usize,
    /// Results without a call, dropped.
    pub orphans: usize,
    /// Index of the message inserted at the end of the transcript (which
    /// the caller may persist), if any.
    pub appended: Option<usize>,
    /// Indices at which a message was inserted mid-transcript.
    pub inserted: Vec<usize>,
}

impl Repairs {
    pub fn any(&self) -> bool {
        self.dangling + self.orphans > 0
    }
}

/// A synthetic error result for call `id`.
fn synthetic(id: &str) -> Block {
    Block::ToolResult {
        call_id: id.to_string(),
        is_error: true,
        content: vec![ContentBlock::Text {
            text: INTERRUPTED.to_string(),
        }],
    }
}

fn calls_of(m: &Message) -> Vec<String> {
    if m.role != Role::Assistant {
        return Vec::new();
    }
    m.content
        .iter()
        .filter_map(|b| match b {
            Block::ToolCall { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// Repairs `messages` in place (see the module docs).
pub fn repair(messages: &mut Vec<Message>) -> Repairs {
    let mut r = Repairs::default();
    let mut i = 0;
    while i < messages.len() {
        // The calls the message before this one made, still unanswered.
        let open: Vec<String> = if i > 0 {
            calls_of(&messages[i - 1])
        } else {
            Vec::new()
        };
        let m = &mut messages[i];
        if m.role == Role::User {
            let answered: HashSet<String> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::ToolResult { call_id, .. } => Some(call_id.clone()),
                    _ => None,
                })
                .collect();
            let before = m.content.len();
            m.content.retain(|b| match b {
                Block::ToolResult { call_id, .. } => open.contains(call_id),
                _ => true,
            });
            r.orphans += before - m.content.len();
            let missing: Vec<Block> = open
                .iter()
                .filter(|id| !answered.contains(*id))
                .map(|id| synthetic(id))
                .collect();
            r.dangling += missing.len();
            // Results come first in the message that answers the calls.
            m.content.splice(0..0, missing);
            if m.content.is_empty() {
                m.content.push(Block::Text {
                    text: "(a tool result whose call was lost was dropped)".into(),
                });
            }
        } else if !open.is_empty() {
            // An assistant message right after unanswered calls.
            r.dangling += open.len();
            messages.insert(
                i,
                Message::new(Role::User, open.iter().map(|id| synthetic(id)).collect()),
            );
            r.inserted.push(i);
        }
        i += 1;
    }
    if let Some(last) = messages.last() {
        let open = calls_of(last);
        if !open.is_empty() {
            r.dangling += open.len();
            messages.push(Message::new(
                Role::User,
                open.iter().map(|id| synthetic(id)).collect(),
            ));
            r.appended = Some(messages.len() - 1);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(ids: &[&str]) -> Message {
        Message {
            role: Role::Assistant,
            content: ids
                .iter()
                .map(|id| Block::ToolCall {
                    id: id.to_string(),
                    name: "bash".into(),
                    args: json!({}),
                })
                .collect(),
            from: None,
        }
    }

    fn results(ids: &[&str]) -> Message {
        Message {
            role: Role::User,
            content: ids
                .iter()
                .map(|id| Block::ToolResult {
                    call_id: id.to_string(),
                    is_error: false,
                    content: vec![],
                })
                .collect(),
            from: None,
        }
    }

    fn result_ids(m: &Message) -> Vec<String> {
        m.content
            .iter()
            .filter_map(|b| match b {
                Block::ToolResult { call_id, .. } => Some(call_id.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_sound_transcript_is_untouched() {
        let mut m = vec![
            Message::user_text("hi"),
            call(&["a", "b"]),
            results(&["a", "b"]),
        ];
        let before = m.clone();
        assert!(!repair(&mut m).any());
        assert_eq!(m, before);
    }

    #[test]
    fn a_trailing_dangling_call_gets_an_appended_error_result() {
        let mut m = vec![Message::user_text("hi"), call(&["a", "b"])];
        let r = repair(&mut m);
        assert_eq!((r.dangling, r.orphans, r.appended), (2, 0, Some(2)));
        assert_eq!(result_ids(&m[2]), ["a", "b"]);
    }

    #[test]
    fn partial_answers_are_completed_and_orphans_dropped() {
        let mut m = vec![
            Message::user_text("hi"),
            call(&["a", "b"]),
            results(&["b", "zzz"]),
            Message::user_text("next"),
            results(&["lost"]),
        ];
        let r = repair(&mut m);
        assert_eq!((r.dangling, r.orphans, r.appended), (1, 2, None));
        assert_eq!(m.len(), 5, "no message index moved");
        assert_eq!(result_ids(&m[2]), ["a", "b"]);
        assert!(result_ids(&m[4]).is_empty());
        assert!(!m[4].content.is_empty());
        // Repairing twice changes nothing more: replay is stable.
        let again = m.clone();
        assert!(!repair(&mut m).any());
        assert_eq!(m, again);
    }

    #[test]
    fn two_assistant_messages_in_a_row_get_results_between_them() {
        let mut m = vec![Message::user_text("hi"), call(&["a"]), call(&["b"])];
        let r = repair(&mut m);
        assert_eq!(r.inserted, [2]);
        assert_eq!(r.appended, Some(4));
        assert_eq!(result_ids(&m[2]), ["a"]);
        assert_eq!(result_ids(&m[4]), ["b"]);
    }
}
