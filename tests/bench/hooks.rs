//! Benchmark: the cost of Claude Code hooks (issue "Claude Code hooks").
//!
//! - a `PreToolUse` hook (`zut::hooks::agent::pre_tool_use` with one
//!   handler) against spawning the same `sh -c COMMAND` directly with the
//!   same input on stdin;
//! - four matching handlers of one event against one of them (they run in
//!   parallel);
//! - a built-in tool call (`read` of a small file) with the hook call sites
//!   and no hooks configured, against the same call without them (what a
//!   tool call cost before hooks).
//!
//! Pairs are measured back to back and compared by their paired ratio.
//!
//! Run: `cargo bench --bench hooks`.

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;
use zut::agent::tools::{self, ToolContext};
use zut::cancel::CancelToken;
use zut::events::Discard;
use zut::hooks::agent::{post_tool_use, pre_tool_use, Pre};
use zut::hooks::{HookSet, Hooks};

/// What a typical validator does: read the input, answer nothing, exit 0.
const COMMAND: &str = "cat >/dev/null";

/// Hooks with `n` distinct PreToolUse handlers of `COMMAND` (distinct, so
/// de-duplication does not fold them).
fn hooks(project: &Path, n: usize) -> Hooks {
    let handlers: Vec<Value> = (0..n)
        .map(|i| json!({"type": "command", "command": format!("{COMMAND} # {i}")}))
        .collect();
    let doc = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": handlers}]}});
    let mut set = HookSet::default();
    set.read(Path::new("bench-settings.json"), doc.to_string().as_bytes());
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    Hooks {
        set,
        project: project.to_path_buf(),
        ..Hooks::default()
    }
}

fn args() -> Value {
    json!({"command": "ls -la src", "timeout": 30})
}

/// One PreToolUse round; the call must be allowed.
fn pre(h: &Hooks) {
    match pre_tool_use(h, "c1", "bash", args(), &Discard) {
        Pre::Run(..) => {}
        Pre::Block(cmd, why) => panic!("{cmd} blocked: {why}"),
    }
}

/// The baseline: `sh -c COMMAND` with the same input, reaped.
fn direct(project: &Path, input: &[u8]) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(COMMAND)
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input).expect("input");
    drop(stdin);
    let mut out = String::new();
    let _ = child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out);
    assert!(child.wait().expect("reap").success());
}

/// `n` back-to-back pairs of (a, b), alternating which goes first.
fn pairs(n: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (Samples, Samples) {
    let (mut sa, mut sb) = (Samples::new(), Samples::new());
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed()
    };
    for i in 0..n {
        if i % 2 == 0 {
            sa.push(time(&mut a));
            sb.push(time(&mut b));
        } else {
            sb.push(time(&mut b));
            sa.push(time(&mut a));
        }
    }
    (sa, sb)
}

fn main() {
    let mut r = Report::new(
        "hooks",
        "cost of Claude Code hooks",
        &[
            "PreToolUse with one handler (cat >/dev/null) vs spawning sh -c with the same input;",
            "four matching handlers vs one; a read tool call with the hook call sites and no",
            "hooks configured vs the same call without them. Back-to-back pairs, paired ratios.",
        ],
    );
    let sb = Sandbox::new();
    let project = sb.cwd();
    let (one, four, none) = (hooks(&project, 1), hooks(&project, 4), Hooks::default());
    let input =
        json!({"session_id": "", "transcript_path": "", "cwd": project.display().to_string(),
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls -la src", "timeout": 30000}, "tool_use_id": "c1"})
        .to_string()
        .into_bytes();
    for _ in 0..20 {
        pre(&one);
        direct(&project, &input);
    }

    r.section("a PreToolUse hook vs sh -c directly");
    let (hook1, sh) = pairs(300, || pre(&one), || direct(&project, &input));
    r.line("PreToolUse, 1 handler", hook1.summary());
    r.line("sh -c COMMAND directly", sh.summary());
    let vs_sh = paired_ratio(&hook1, &sh);

    r.section("four handlers vs one");
    let (hook4, hook1b) = pairs(200, || pre(&four), || pre(&one));
    r.line("PreToolUse, 4 handlers", hook4.summary());
    r.line("PreToolUse, 1 handler", hook1b.summary());
    let vs_one = paired_ratio(&hook4, &hook1b);

    r.section("a tool call with no hooks configured");
    std::fs::write(project.join("f.txt"), "alpha\nbeta\n").expect("file");
    let ctx = ToolContext {
        cwd: project.clone(),
    };
    let never = CancelToken::never();
    let read_args = json!({"path": "f.txt"});
    // Both sides take the arguments by value, as the agent's guard does.
    let call = || {
        let a = read_args.clone();
        let out = tools::run("read", &a, &ctx, &never).expect("built-in");
        assert!(!out.is_error);
        out
    };
    let with_sites = || {
        let a = match pre_tool_use(&none, "c1", "read", read_args.clone(), &Discard) {
            Pre::Run(a, _) => a,
            Pre::Block(..) => unreachable!("no hooks"),
        };
        let out = tools::run("read", &a, &ctx, &never).expect("built-in");
        let more = post_tool_use(&none, "c1", "read", &a, "", out.is_error, &Discard);
        assert!(more.is_empty());
    };
    let plain = || {
        call();
    };
    for _ in 0..200 {
        plain();
        with_sites();
    }
    // The read itself is tens of microseconds: time batches of 100.
    let (sites, today) = pairs(
        200,
        || (0..100).for_each(|_| with_sites()),
        || (0..100).for_each(|_| plain()),
    );
    let per = |s: &Samples| s.median() / 100;
    r.line(
        "read with hook call sites, no hooks (per call)",
        fmt(per(&sites)),
    );
    r.line("read as before hooks (per call)", fmt(per(&today)));
    let vs_today = paired_ratio(&sites, &today);

    r.section("goals");
    r.goal(
        vs_sh <= 1.2,
        "a PreToolUse hook ≤ 1.2× sh -c directly",
        format!("{vs_sh:.2}×"),
    );
    r.goal(
        vs_one <= 1.5,
        "four handlers ≤ 1.5× one",
        format!("{vs_one:.2}×"),
    );
    r.goal(
        vs_today <= 1.02,
        "no hooks configured: a tool call ≤ 1.02× today",
        format!("{vs_today:.3}×"),
    );
    r.finish();
}
