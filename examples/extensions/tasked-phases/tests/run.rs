//! The built `tasked-phases` extension as zut runs it: a child process spoken to
//! over its stdin/stdout pipes.

use serde_json::json;
use zut_ext::testing::Peer;

#[test]
fn phases_over_real_pipes() {
    let mut ext = Peer::start(env!("CARGO_BIN_EXE_zut-example-tasked-phases"));
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

    assert!(ext.shutdown().success());
}
