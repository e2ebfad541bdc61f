//! Benchmark: the cost of tool-call interception (issue "interception").
//!
//! `host.intercept_tool_call` with 0, 1 and 5 intercepting extensions (the
//! tiny Rust extension with `--intercept`, which allows every call), against
//! the hook model that starts a process per call — `sh fixtures/hook.sh` and
//! `python3 fixtures/hook.py`, each reading the event JSON on stdin and
//! printing a decision — and against one bare extension tool call
//! (`host.call_tool`), all measured in the same run.
//!
//! The same extension also intercepts `tool_result`: one such
//! consultation (a short listing as the result) is measured beside the
//! `tool_call` one.
//!
//! Run: `cargo bench --bench intercept`.

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use zut::cancel::CancelToken;
use zut::host::deadlines::Deadlines;
use zut::host::Host;
use zut_ext::wire::EventPayload;

/// A host with `n` extensions, intercepting or not.
fn host(sb: &Sandbox, prefix: &str, n: usize, intercept: bool) -> Host {
    let dirs: Vec<PathBuf> = (0..n)
        .map(|i| echo_ext(sb, &format!("{prefix}-{i}"), intercept))
        .collect();
    start_all(sb, sb.config(Deadlines::default()), &dirs)
}

/// The arguments every intercepted call carries.
fn tool_args() -> Value {
    json!({"command": "ls -la src", "timeout": 30})
}

/// One call of the hook model: start `program args…`, write the event on
/// its stdin, read its decision, reap it.
fn hook_call(program: &PathBuf, script: &PathBuf, event: &[u8]) {
    let mut child = Command::new(program)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("hook process");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(event).expect("event to hook");
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut out)
        .expect("hook decision");
    let status = child.wait().expect("reap hook");
    assert!(status.success(), "hook failed: {status}");
    let decision: Value = serde_json::from_str(out.trim()).expect("hook prints JSON");
    assert_eq!(decision["block"], false);
}

fn main() {
    let mut r = Report::new(
        "intercept",
        "cost of one intercepted tool call",
        &[
            "host.intercept_tool_call with 0, 1 and 5 intercepting tiny Rust extensions (allow),",
            "vs the hook model spawning a process per call (sh hook.sh, python3 hook.py: event",
            "JSON on stdin, decision on stdout), vs one bare extension tool call (host.call_tool).",
            "All interleaved in blocks in one run; medians and p90; unpinned.",
        ],
    );
    let sb = Sandbox::new();
    let (h0, h1, h5) = (
        host(&sb, "plain", 1, false),
        host(&sb, "one", 1, true),
        host(&sb, "five", 5, true),
    );
    let never = CancelToken::never();
    let sh = PathBuf::from("sh");
    let (hook_sh, hook_py) = (fixtures().join("hook.sh"), fixtures().join("hook.py"));
    let python = python();
    let mut event = serde_json::to_vec(&EventPayload {
        tool_id: "c1".into(),
        tool_name: "bash".into(),
        tool_args: Some(tool_args()),
        ..EventPayload::named("tool_call")
    })
    .expect("event JSON");
    event.push(b'\n');
    r.line("Python interpreter (pyenv shim bypassed)", python.display());

    let intercept = |h: &Host| {
        let v = h.intercept_tool_call("c1", "bash", tool_args(), &never);
        assert!(v.blocked.is_none());
    };
    // The same call's result, as the model would get it.
    let seen = zut::host::ToolResultSeen {
        id: "c1".into(),
        name: "bash".into(),
        args: tool_args(),
        is_error: false,
        content: vec![zut_ext::wire::ContentBlock::text(
            "total 8\ndrwxr-xr-x 2 u u 4096 main.rs\n-rw-r--r-- 1 u u 120 lib.rs",
        )],
        extension: None,
    };
    let intercept_result = |h: &Host| {
        let v = h.intercept_tool_result(&seen, &never);
        assert!(v.blocked.is_none() && v.content.is_none());
    };
    let call = || {
        let reply = h1.call_tool("rust_echo", &json!({"text": "hello"}), &never);
        assert!(reply.is_some_and(|r| !r.is_error));
    };
    // Warm-up of every path.
    for _ in 0..300 {
        intercept(&h0);
        intercept(&h1);
        intercept(&h5);
        intercept_result(&h1);
        call();
    }
    hook_call(&sh, &hook_sh, &event);
    hook_call(&python, &hook_py, &event);

    let (mut t0, mut t1, mut t5, mut rtt) = (
        Samples::new(),
        Samples::new(),
        Samples::new(),
        Samples::new(),
    );
    let (mut t_sh, mut t_py) = (Samples::new(), Samples::new());
    let mut t1r = Samples::new();
    for _block in 0..10 {
        t0.append(Samples::time(0, 500, || intercept(&h0)));
        t1.append(Samples::time(0, 500, || intercept(&h1)));
        t1r.append(Samples::time(0, 500, || intercept_result(&h1)));
        rtt.append(Samples::time(0, 500, call));
        t5.append(Samples::time(0, 200, || intercept(&h5)));
        t_sh.append(Samples::time(0, 20, || hook_call(&sh, &hook_sh, &event)));
        t_py.append(Samples::time(0, 3, || hook_call(&python, &hook_py, &event)));
    }
    for h in [h0, h1, h5] {
        h.shutdown();
    }

    r.section("per intercepted tool call");
    r.line("no interceptor (chain is empty)", t0.summary());
    r.line("1 intercepting extension", t1.summary());
    r.line("1 tool_result interceptor (same extension)", t1r.summary());
    r.line("5 intercepting extensions", t5.summary());
    r.line("hook model: sh hook.sh per call", t_sh.summary());
    r.line("hook model: python3 hook.py per call", t_py.summary());
    r.line("bare extension tool call (call_tool)", rtt.summary());
    let added1 = t1.median().saturating_sub(t0.median());
    let added5 = t5.median().saturating_sub(t0.median());
    r.line(
        "added by interception (median - empty chain)",
        format!(
            "1 ext {}   5 exts {} ({} each)",
            fmt(added1),
            fmt(added5),
            fmt(added5 / 5)
        ),
    );
    let (vs_sh, vs_py) = (
        ratio(t_sh.median(), t1.median()),
        ratio(t_py.median(), t1.median()),
    );
    r.line(
        "hook model / 1 interceptor (medians)",
        format!(
            "sh {vs_sh:.0}×   python {vs_py:.0}×   (vs 5 interceptors: sh {:.0}×, python {:.0}×)",
            ratio(t_sh.median(), t5.median()),
            ratio(t_py.median(), t5.median())
        ),
    );

    r.section("goals");
    r.goal(
        vs_sh >= 10.0,
        "1 interceptor ≥ 10× cheaper than the sh hook",
        format!("{vs_sh:.0}×"),
    );
    r.goal(
        vs_py >= 100.0,
        "1 interceptor ≥ 100× cheaper than the Python hook",
        format!("{vs_py:.0}×"),
    );
    let vs_call = ratio(added1, rtt.median());
    r.goal(
        vs_call <= 1.0,
        "one interceptor adds ≤ 1× a bare extension tool call",
        format!("{} = {vs_call:.2}× of {}", fmt(added1), fmt(rtt.median())),
    );
    let vs_result = ratio(t1r.median(), t1.median());
    r.goal(
        vs_result <= 1.1,
        "a tool_result interceptor costs ≤ 1.1× a tool_call interceptor",
        format!("{vs_result:.2}×"),
    );
    r.finish();
}
