//! Benchmark: `/reload-ext` (issue "host core").
//!
//! `HostHandle::reload` of 50 tiny Rust extensions (`zut-example-echo`,
//! the same one `startup` uses): `shutdown` to all fifty at once, one
//! shared grace, every old instance reaped, discovery run again, fifty new
//! processes started and their handshakes committed in load order. The
//! baseline is what a user would otherwise do, measured in the same run
//! and interleaved with it: `shutdown` of the whole host, then a fresh
//! start (discovery included) of the same fifty.
//!
//! Run: `cargo bench --bench reload`.

mod common;

use common::*;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zut::cancel::CancelToken;
use zut::events::Discard;
use zut::host::deadlines::Deadlines;
use zut::host::discovery::{self, Options};
use zut::host::{HostConfig, HostHandle, Outcome, Phase};

/// Extensions per host.
const N: usize = 50;
/// Timed pairs (after one untimed warm-up pair).
const RUNS: usize = 10;

fn main() {
    let mut r = Report::new(
        "reload",
        "/reload-ext of 50 tiny extensions",
        &[
            "HostHandle::reload of 50 tiny Rust extensions (shutdown all, reap, rediscover, start, handshakes)",
            "vs shutdown of the whole host followed by a fresh start of the same 50 (discovery included),",
            "alternating which goes first. Timings are wall clock; medians and p90 over the runs shown as n.",
        ],
    );
    r.line("tiny Rust extension", echo_binary().display());
    let sb = Sandbox::new();
    let dirs: Vec<PathBuf> = (0..N)
        .map(|i| echo_ext(&sb, &format!("echo-{i:02}"), false))
        .collect();
    let opts = Options {
        cwd: sb.cwd(),
        zut_home: sb.home(),
        ext_paths: dirs,
        no_extensions: true,
    };
    let config = sb.config(Deadlines::default());

    let mut host = start(&config, &opts);
    let (mut reload_t, mut restart_t) = (Samples::new(), Samples::new());
    for run in 0..=RUNS {
        let reload_first = run % 2 == 0;
        let mut reload_d = Duration::ZERO;
        let mut restart_d = Duration::ZERO;
        for step in 0..2 {
            if (step == 0) == reload_first {
                reload_d = reload(&host);
            } else {
                let t = Instant::now();
                host.shutdown();
                host = start(&config, &opts);
                restart_d = t.elapsed();
            }
        }
        if run > 0 {
            reload_t.push(reload_d);
            restart_t.push(restart_d);
        }
    }
    host.shutdown();

    r.section(&format!("/reload-ext of {N} × tiny Rust extension"));
    r.line("shutdown + start (baseline)", restart_t.summary());
    r.line("HostHandle::reload", reload_t.summary());
    let paired = paired_ratio(&reload_t, &restart_t);
    r.line(
        "ratio",
        format!(
            "reload/restart {paired:.2}× (median of per-run pairs; {:.2}× of medians)",
            ratio(reload_t.median(), restart_t.median())
        ),
    );
    r.goal(
        paired <= 1.3,
        "reload ≤ 1.3× shutdown + start",
        format!("{paired:.2}×"),
    );
    r.finish();
}

/// A host on `opts` whose `/reload-ext` discovers `opts` again; every
/// extension must load.
fn start(config: &HostConfig, opts: &Options) -> HostHandle {
    let entries = discovery::discover(opts);
    let (host, report) = HostHandle::start(
        config.clone(),
        entries,
        Some(opts.clone()),
        Arc::new(Discard),
        &CancelToken::never(),
    )
    .expect("a host");
    assert_eq!(ready(&report.loaded), N, "not every extension loaded");
    host
}

/// One timed reload; every extension must be ready again.
fn reload(host: &HostHandle) -> Duration {
    let t = Instant::now();
    let report = host.reload();
    let d = t.elapsed();
    assert_eq!(ready(&report.loaded), N, "not every extension reloaded");
    d
}

fn ready(loaded: &[zut::host::Loaded]) -> usize {
    loaded
        .iter()
        .filter(
            |l| matches!(&l.outcome, Outcome::Started(r) if matches!(r.phase, Phase::Ready { .. })),
        )
        .count()
}
