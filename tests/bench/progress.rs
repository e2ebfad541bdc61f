//! Benchmark: what `tool_progress` costs the host (issue "protocol
//! additions").
//!
//! One `host.call_tool_with_progress` of the tiny Rust extension's
//! `rust_echo` that sleeps 1 s before answering, once sending a
//! `tool_progress` frame every 10 ms (about 100 frames, each restarting
//! the deadline and reported to the caller) and once silent. The host's
//! CPU time (this process: the caller, the dispatcher and the extension's
//! reader and writer threads; the extension is a child) is measured over
//! each call, the two kinds interleaved call by call.
//!
//! Run: `cargo bench --bench progress`.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;
use zut::cancel::CancelToken;
use zut::host::deadlines::Deadlines;

const ROUNDS: usize = 6;

fn main() {
    let mut r = Report::new(
        "progress",
        "host CPU of a 1 s tool call with and without progress",
        &[
            "host.call_tool_with_progress on the tiny Rust extension: sleep 1 s, then answer;",
            "with a tool_progress frame every 10 ms vs none; host CPU (getrusage of this",
            "process) per call, the two interleaved; medians over the rounds.",
        ],
    );
    let sb = Sandbox::new();
    let dir = echo_ext(&sb, "busy", false);
    let host = start_all(&sb, sb.config(Deadlines::default()), &[dir]);
    let never = CancelToken::never();
    let call = |progress_ms: u64| -> (Duration, usize) {
        let mut frames = 0;
        let cpu = cpu_time();
        let reply = host
            .call_tool_with_progress(
                "rust_echo",
                &json!({"text": "done", "sleep_ms": 1000, "progress_ms": progress_ms}),
                &never,
                &mut |_, _| frames += 1,
            )
            .expect("rust_echo is registered");
        assert!(!reply.is_error, "{:?}", reply.content);
        (cpu_time() - cpu, frames)
    };
    call(10);
    let (mut with, mut without) = (Samples::new(), Samples::new());
    let mut frames = 0;
    for _ in 0..ROUNDS {
        let (c, n) = call(10);
        with.push(c);
        frames = n;
        without.push(call(0).0);
    }
    host.shutdown();
    assert!(
        frames >= 50,
        "the extension sent {frames} progress frames: rebuild it (cargo build --release -p zut-example-echo)"
    );

    r.section("host CPU per 1 s call");
    r.line("silent call", without.summary());
    r.line(&format!("{frames} progress frames"), with.summary());
    let extra = with.median().saturating_sub(without.median());
    r.line(
        "added per progress frame",
        fmt(extra / u32::try_from(frames.max(1)).unwrap_or(1)),
    );
    // Against the call's own second: what share of one core progress takes.
    let share = extra.as_secs_f64() / 1.0;
    r.line(
        "added, as a share of the call's wall time",
        format!("{:.3}%", share * 100.0),
    );

    r.section("goals");
    let x = ratio(with.median(), without.median());
    r.goal(
        x <= 1.05,
        "progress every 10 ms costs ≤ 1.05× the host CPU of the silent call",
        format!(
            "{x:.2}× ({} vs {})",
            fmt(with.median()),
            fmt(without.median())
        ),
    );
    r.finish();
}
