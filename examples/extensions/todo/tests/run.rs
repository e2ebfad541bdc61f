//! The built `todo` extension as zut runs it: a child process spoken to
//! over its stdin/stdout pipes.

use serde_json::json;
use zut_ext::testing::Peer;

#[test]
fn todo_over_real_pipes() {
    let mut ext = Peer::start(env!("CARGO_BIN_EXE_zut-example-todo"));
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

    assert!(ext.shutdown().success());
}
