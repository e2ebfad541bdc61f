//! In-memory extensions for the dispatcher's unit tests.
//!
//! A test gives the host a [`PeerFn`]; for every extension the dispatcher
//! would start, it instead opens two OS pipes, runs the usual transport
//! (direct writes, reader and writer threads) on the host's ends, and
//! calls the function on a new thread with a [`Peer`] holding the other
//! ends. The peer plays the extension line by line, so everything from
//! framing to the request table and the dispatcher is the production code;
//! only the process is missing.
//!
//! A peer ends by returning: dropping its ends is EOF on both pipes, which
//! the host treats as the extension closing its stdout.

use super::transport::PeerEnds;
use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;

/// Plays one extension instance; called on a thread of its own.
pub(crate) type PeerFn = Arc<dyn Fn(Peer) + Send + Sync>;

/// The extension side of an in-memory connection.
pub(crate) struct Peer {
    /// The manifest name the host started.
    pub name: String,
    /// The load it belongs to (0 at startup, +1 per reload).
    pub generation: u64,
    from_host: BufReader<File>,
    to_host: File,
}

impl Peer {
    pub(crate) fn new(name: String, generation: u64, ends: PeerEnds) -> Peer {
        Peer {
            name,
            generation,
            from_host: BufReader::new(ends.stdin),
            to_host: ends.stdout,
        }
    }

    /// Writes one frame as one line; false when the host is gone.
    pub fn send(&mut self, frame: Value) -> bool {
        let mut line = frame.to_string();
        line.push('\n');
        self.to_host.write_all(line.as_bytes()).is_ok()
    }

    /// The next frame from the host; `None` at EOF (shutdown done or
    /// disconnected).
    pub fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.from_host.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!("the host wrote a line that is not JSON ({e}): {line:?}")
            })),
        }
    }

    /// The next frame, which must be of type `ty`.
    pub fn expect(&mut self, ty: &str) -> Value {
        match self.recv() {
            Some(f) if f["type"] == ty => f,
            other => panic!("{}: wanted a {ty} frame, got {other:?}", self.name),
        }
    }

    /// Sends `hello` under its manifest name and reads `hello_ack`.
    pub fn hello(&mut self) {
        let name = self.name.clone();
        self.send(json!({"type": "hello", "protocol_version": zut_ext::wire::PROTOCOL_VERSION, "name": name, "version": "1.0.0"}));
        self.expect("hello_ack");
    }

    /// Registers tool `name`.
    pub fn register_tool(&mut self, name: &str) {
        self.send(json!({"type": "register_tool", "name": name, "description": "a test tool"}));
    }

    pub fn ready(&mut self) {
        self.send(json!({"type": "ready"}));
    }

    /// Answers a `tool_call` frame with one text block.
    pub fn reply(&mut self, call: &Value, text: &str) {
        self.send(json!({"type": "tool_result", "id": call["id"], "content": [{"type": "text", "text": text}]}));
    }

    /// Reads until `shutdown`, answers it and returns (EOF), or returns at
    /// EOF; every `tool_call` on the way is answered with `text`.
    pub fn serve(mut self, text: &str) {
        while let Some(f) = self.recv() {
            match f["type"].as_str() {
                Some("tool_call") => self.reply(&f, text),
                Some("shutdown") => {
                    self.send(json!({"type": "shutdown_ack"}));
                    return;
                }
                _ => {}
            }
        }
    }
}
