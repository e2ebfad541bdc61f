//! Driving a built extension the way zut does, for its own tests.
//!
//! A [`Peer`] starts the extension's program with piped stdin and stdout,
//! reads its frames on a thread of its own, and lets a test send host
//! frames and wait for the extension's, each wait bounded by a deadline,
//! so a test fails with a message instead of hanging.
//!
//! Invariants: frames are read with the protocol's line limit and each must
//! be a JSON object, else the test panics naming the line; the process is
//! killed and reaped when the `Peer` drops, so a failing test leaves
//! nothing running.
//!
//! ```no_run
//! use serde_json::json;
//! use zut_ext::testing::Peer;
//!
//! // In `tests/run.rs` of a crate whose binary is `my-ext`, the path is
//! // `env!("CARGO_BIN_EXE_my-ext")`.
//! let mut ext = Peer::start("target/debug/my-ext");
//! let registrations = ext.handshake();
//! assert!(registrations.iter().any(|f| f["name"] == "my_tool"));
//! ext.send(json!({"type": "tool_call", "id": "1", "name": "my_tool", "args": {}}));
//! assert_eq!(ext.next_of("tool_result")["id"], "1");
//! assert!(ext.shutdown().success());
//! ```

use crate::lines::{Line, LineReader};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long [`Peer::next`] waits for a frame unless told otherwise.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// A running extension process and the frames it wrote.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: mpsc::Receiver<Value>,
    wait: Duration,
}

impl Peer {
    /// Starts `program` (no arguments) with piped stdin and stdout; its
    /// stderr stays the test's. Panics when it cannot start.
    ///
    /// ```no_run
    /// let ext = zut_ext::testing::Peer::start("target/debug/my-ext");
    /// # drop(ext);
    /// ```
    pub fn start(program: impl AsRef<Path>) -> Peer {
        Peer::spawn(Command::new(program.as_ref()))
    }

    /// Starts `command` as given (arguments, environment, directory), with
    /// piped stdin and stdout.
    ///
    /// ```no_run
    /// let mut cmd = std::process::Command::new("python3");
    /// cmd.arg("main.py");
    /// let ext = zut_ext::testing::Peer::spawn(cmd);
    /// # drop(ext);
    /// ```
    pub fn spawn(mut command: Command) -> Peer {
        let what = format!("{command:?}");
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, frames) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = LineReader::new(stdout);
            loop {
                let frame = match lines.next_line() {
                    Ok(Line::Data(line)) => serde_json::from_slice::<Value>(&line)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| {
                            json!({"type": "not_a_frame", "line": String::from_utf8_lossy(&line)})
                        }),
                    Ok(Line::TooLong(n)) => json!({"type": "not_a_frame", "bytes": n}),
                    Ok(Line::Eof) | Err(_) => return,
                };
                if tx.send(frame).is_err() {
                    return;
                }
            }
        });
        Peer {
            stdin: child.stdin.take(),
            child,
            frames,
            wait: DEFAULT_WAIT,
        }
    }

    /// Changes how long each wait for a frame may take.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// let ext = zut_ext::testing::Peer::start("my-ext").waiting(Duration::from_secs(2));
    /// # drop(ext);
    /// ```
    pub fn waiting(mut self, wait: Duration) -> Peer {
        self.wait = wait;
        self
    }

    /// Writes one host frame as a line. Panics when the extension's stdin
    /// is closed.
    ///
    /// ```no_run
    /// # let mut ext = zut_ext::testing::Peer::start("my-ext");
    /// ext.send(serde_json::json!({"type": "tool_cancel", "id": "1"}));
    /// ```
    pub fn send(&mut self, frame: Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{frame}")
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("the extension does not read its stdin: {e}"));
    }

    /// The next frame the extension wrote. Panics when none comes in time,
    /// when its stdout ended, or when the line was not a JSON object.
    ///
    /// ```no_run
    /// # let ext = zut_ext::testing::Peer::start("my-ext");
    /// assert_eq!(ext.next()["type"], "hello");
    /// ```
    pub fn next(&self) -> Value {
        let frame = match self.frames.recv_timeout(self.wait) {
            Ok(f) => f,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no frame from the extension within {:?}", self.wait)
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("the extension closed its stdout")
            }
        };
        assert_ne!(frame["type"], "not_a_frame", "{frame}");
        frame
    }

    /// The next frame of type `kind`; frames of other types before it (a
    /// redraw racing an answer, say) are skipped.
    ///
    /// ```no_run
    /// # let ext = zut_ext::testing::Peer::start("my-ext");
    /// let result = ext.next_of("tool_result");
    /// # drop(result);
    /// ```
    pub fn next_of(&self, kind: &str) -> Value {
        loop {
            let frame = self.next();
            if frame["type"] == kind {
                return frame;
            }
        }
    }

    /// The handshake as zut does it: reads `hello`, answers `hello_ack` of
    /// this protocol version, and returns the frames up to `ready` (the
    /// registrations and subscription), `ready` excluded.
    ///
    /// ```no_run
    /// # let mut ext = zut_ext::testing::Peer::start("my-ext");
    /// let frames = ext.handshake();
    /// assert!(frames.iter().all(|f| f["type"] != "ready"));
    /// ```
    pub fn handshake(&mut self) -> Vec<Value> {
        self.handshake_with(json!({}))
    }

    /// [`Peer::handshake`] with extra `hello_ack` fields (a `session`, a
    /// `cwd`…).
    ///
    /// ```no_run
    /// # let mut ext = zut_ext::testing::Peer::start("my-ext");
    /// ext.handshake_with(serde_json::json!({"session": {"id": "s1"}}));
    /// ```
    pub fn handshake_with(&mut self, fields: Value) -> Vec<Value> {
        let hello = self.next();
        assert_eq!(hello["type"], "hello", "the first frame: {hello}");
        let mut ack = json!({
            "type": "hello_ack",
            "protocol_version": crate::wire::PROTOCOL_VERSION,
        });
        if let (Some(ack), Some(extra)) = (ack.as_object_mut(), fields.as_object()) {
            ack.extend(extra.clone());
        }
        self.send(ack);
        let mut frames = Vec::new();
        loop {
            let frame = self.next();
            if frame["type"] == "ready" {
                return frames;
            }
            frames.push(frame);
        }
    }

    /// Sends `shutdown`, waits for `shutdown_ack`, closes stdin and waits
    /// for the process to exit; returns how it exited.
    ///
    /// ```no_run
    /// # let mut ext = zut_ext::testing::Peer::start("my-ext");
    /// assert!(ext.shutdown().success());
    /// ```
    pub fn shutdown(&mut self) -> ExitStatus {
        self.send(json!({"type": "shutdown"}));
        self.next_of("shutdown_ack");
        self.stdin = None;
        self.child.wait().expect("wait for the extension")
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stdin = None;
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
