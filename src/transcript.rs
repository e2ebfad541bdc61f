//! The messages of one conversation branch, held once and shared.
//!
//! A resumed session can be large (every tool output ever returned), so
//! its messages exist once in memory: the [`Session`](crate::session::Session)
//! that loaded them, the agent that sends them to the model and appends to
//! them, and the engine's view behind `state()` (RPC `get_messages`, the
//! terminal's redraw) all hold a handle to the same list. Cloning a
//! [`Transcript`] clones the handle, never the messages.
//!
//! Invariants:
//! - one writer at a time, and in the engine only the agent's worker
//!   thread writes (appends, compaction, a switch replacing the list), so
//!   a reader on another thread waits at most for one append;
//! - the writer never holds a read guard while it writes (a provider
//!   request reads the list for as long as it runs; its guard is dropped
//!   before the answer is appended), so readers and the writer cannot
//!   deadlock;
//! - a poisoned lock is taken over: a panic elsewhere does not lose the
//!   conversation.

use crate::provider::Message;
use serde::{Serialize, Serializer};
use std::fmt;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A shared handle to one branch's messages.
#[derive(Clone, Default)]
pub struct Transcript(Arc<RwLock<Vec<Message>>>);

impl Transcript {
    /// A new list holding `messages` (moved, not copied).
    pub fn new(messages: Vec<Message>) -> Transcript {
        Transcript(Arc::new(RwLock::new(messages)))
    }

    /// The messages, for as long as the guard lives.
    pub fn read(&self) -> RwLockReadGuard<'_, Vec<Message>> {
        self.0.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The messages, to change them (see the module invariants).
    pub fn write(&self) -> RwLockWriteGuard<'_, Vec<Message>> {
        self.0.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends one message.
    pub fn push(&self, message: Message) {
        self.write().push(message);
    }

    /// How many messages there are.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// A copy of the messages (for tests and small transcripts; the point
    /// of this type is not to need it).
    pub fn to_vec(&self) -> Vec<Message> {
        self.read().clone()
    }

    /// Whether both handles share one list.
    pub fn same(&self, other: &Transcript) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl From<Vec<Message>> for Transcript {
    fn from(messages: Vec<Message>) -> Transcript {
        Transcript::new(messages)
    }
}

impl fmt::Debug for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Transcript({} messages)", self.len())
    }
}

/// Serialises as the list of messages.
impl Serialize for Transcript {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.read().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_messages() {
        let a = Transcript::new(vec![Message::user_text("one")]);
        let b = a.clone();
        b.push(Message::user_text("two"));
        assert_eq!(a.len(), 2);
        assert!(a.same(&b));
        assert!(!a.same(&Transcript::new(a.to_vec())));
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            serde_json::to_value(a.to_vec()).unwrap()
        );
    }
}
