//! The built `todo` extension as zut runs it: a child process spoken to
//! over its stdin/stdout pipes.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

struct Ext {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: mpsc::Receiver<Value>,
}

impl Ext {
    fn start() -> Ext {
        let mut child = Command::new(env!("CARGO_BIN_EXE_zut-example-todo"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the todo extension");
        let stdout = child.stdout.take().unwrap();
        let (tx, frames) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(serde_json::from_str::<Value>(&line).expect("JSON line"));
            }
        });
        let stdin = child.stdin.take();
        Ext {
            child,
            stdin,
            frames,
        }
    }
    fn send(&mut self, v: Value) {
        let w = self.stdin.as_mut().unwrap();
        writeln!(w, "{v}").unwrap();
    }
    fn next(&self) -> Value {
        self.frames
            .recv_timeout(Duration::from_secs(10))
            .expect("a frame in time")
    }
    /// The next frame of type `t`; others (a redraw racing the panel's
    /// close, say) are skipped.
    fn next_of(&self, t: &str) -> Value {
        loop {
            let f = self.next();
            if f["type"] == t {
                return f;
            }
        }
    }
}

#[test]
fn todo_over_real_pipes() {
    let mut ext = Ext::start();
    assert_eq!(ext.next()["name"], "todo");
    ext.send(json!({"type":"hello_ack","protocol_version":2}));
    assert_eq!(ext.next()["name"], "todo", "register_command");
    assert_eq!(ext.next()["type"], "register_tool");
    let sub = ext.next();
    assert_eq!(
        sub["events"],
        json!([
            "session_opened",
            "session_switched",
            "session_forked",
            "session_compacted"
        ])
    );
    assert_eq!(ext.next()["type"], "ready");

    ext.send(json!({"type":"event","event":"session_opened","session":{"id":"b1"},"state":{"todos":[{"text":"old","done":true}]}}));
    ext.send(
        json!({"type":"tool_call","id":"1","name":"todo","args":{"action":"add","text":"new"}}),
    );
    let r = ext.next();
    assert_eq!(r["content"][0]["text"], "1. [x] old\n2. [ ] new");
    assert_eq!(
        r["details"],
        json!({"todos":[{"text":"old","done":true},{"text":"new","done":false}]})
    );

    ext.send(json!({"type":"command_invoked","id":"2","name":"todo"}));
    let r = ext.next();
    assert_eq!(r["action"], "open_panel");
    assert_eq!(r["open_panel"]["lines"], json!(["▸ ✓ old", "  □ new"]));
    ext.send(json!({"type":"panel_key","panel_id":"todo","key":"down"}));
    ext.send(json!({"type":"panel_key","panel_id":"todo","key":"rune","text":" "}));
    assert_eq!(ext.next()["lines"], json!(["  ✓ old", "▸ □ new"]));
    let r = ext.next();
    assert_eq!(r["lines"], json!(["  ✓ old", "▸ ✓ new"]));
    assert_eq!(r["title"], "Todos (2/2 done)");
    ext.send(json!({"type":"panel_close","panel_id":"todo"}));

    ext.send(json!({"type":"event","event":"session_switched","session":{"id":"b2"}}));
    ext.send(json!({"type":"tool_call","id":"3","name":"todo","args":{"action":"list"}}));
    let r = ext.next_of("tool_result");
    assert_eq!(
        r["content"][0]["text"], "no todos",
        "a branch without state starts empty"
    );
    assert_eq!(r["details"], json!({"todos":[]}));

    ext.send(json!({"type":"shutdown"}));
    assert_eq!(ext.next_of("shutdown_ack")["type"], "shutdown_ack");
    ext.stdin = None;
    assert!(ext.child.wait().unwrap().success());
}
