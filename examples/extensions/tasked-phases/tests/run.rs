//! The built `tasked-phases` extension as zut runs it: a child process spoken to
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
        let mut child = Command::new(env!("CARGO_BIN_EXE_zut-example-tasked-phases"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the tasked-phases extension");
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
}

#[test]
fn phases_over_real_pipes() {
    let mut ext = Ext::start();
    assert_eq!(ext.next()["name"], "tasked-phases");
    ext.send(json!({"type":"hello_ack","protocol_version":2}));
    assert_eq!(ext.next()["name"], "phases");
    assert_eq!(ext.next()["name"], "phase_advance");
    let sub = ext.next();
    assert_eq!(sub["intercept"], json!(["turn_start"]));
    assert_eq!(ext.next()["type"], "ready");

    ext.send(json!({"type":"event_intercept","id":"i0","event":"turn_start","step":1}));
    assert_eq!(
        ext.next(),
        json!({"type":"event_intercept_response","id":"i0"}),
        "no plan, no context"
    );

    ext.send(json!({"type":"tool_call","id":"1","name":"phase_advance","args":{"phases":["parse","check"]}}));
    let w = ext.next();
    assert_eq!(
        w,
        json!({"type":"widget","id":"phases","position":"above_input","title":"Phases","lines":["▸ 1. parse","  2. check"]})
    );
    let r = ext.next();
    assert_eq!(
        r["details"],
        json!({"phases":["parse","check"],"current":0})
    );

    ext.send(json!({"type":"event_intercept","id":"i1","event":"turn_start","step":2}));
    let c = ext.next();
    assert!(
        c["context"].as_str().unwrap().contains("phase 1/2: parse"),
        "{c}"
    );

    ext.send(json!({"type":"event","event":"session_forked","session":{"id":"b2"},"state":{"phases":["a","b","c"],"current":2}}));
    assert_eq!(ext.next()["lines"], json!(["✓ 1. a", "✓ 2. b", "▸ 3. c"]));
    ext.send(json!({"type":"tool_call","id":"2","name":"phase_advance","args":{}}));
    ext.next();
    let r = ext.next();
    assert_eq!(
        r["content"][0]["text"],
        "finished \"c\"; all 3 phases are done"
    );
    ext.send(json!({"type":"tool_call","id":"3","name":"phase_advance","args":{"phases":[]}}));
    assert_eq!(ext.next(), json!({"type":"widget_clear","id":"phases"}));
    let r = ext.next();
    assert!(
        r.as_object().unwrap().contains_key("details") && r["details"].is_null(),
        "{r}"
    );

    ext.send(json!({"type":"shutdown"}));
    assert_eq!(ext.next()["type"], "shutdown_ack");
    ext.stdin = None;
    assert!(ext.child.wait().unwrap().success());
}
