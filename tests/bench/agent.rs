//! Benchmark: the agent loop as a whole process (issue "agent loop").
//!
//! `zut -p --provider script --no-extensions` (the release binary cargo
//! builds for this benchmark) runs
//! - a 1-step answer (`{"text":"done"}`), and
//! - a 200-step tool loop: 200 script lines each calling the built-in `read`
//!   on a small file, then a final text;
//!
//! measuring each whole process's wall time (spawn to reaped) and peak RSS
//! (`ru_maxrss` from `wait4`). The per-step host overhead is
//! (T200 − T1) / 199. The baseline is spawning and reaping `/bin/true` the
//! same way, in the same run.
//!
//! Run: `cargo bench --bench agent`.

mod common;

use common::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Tool-calling steps of the long script.
const STEPS: usize = 200;
/// Steps of the diagnostic run that shows whether a step's cost grows with
/// the transcript.
const LONG_STEPS: usize = 1000;

/// One finished process: wall time, peak RSS and stdout.
struct Run {
    wall: Duration,
    max_rss_kib: u64,
    stdout: String,
}

/// Spawns `cmd`, reads its stdout to the end and reaps it with `wait4`
/// (which, unlike `Child::wait`, reports the child's peak RSS).
#[allow(clippy::zombie_processes)] // reaped by wait4 below
fn run(cmd: &mut Command) -> Run {
    let t = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = String::new();
    let mut stderr = String::new();
    let _ = child
        .stdout
        .take()
        .map(|mut o| o.read_to_string(&mut stdout));
    let _ = child
        .stderr
        .take()
        .map(|mut e| e.read_to_string(&mut stderr));
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 reaps our own child, which
    // `Child` will not try to reap again (we never call wait on it).
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        let pid = child.id() as libc::pid_t;
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut ru), pid, "wait4");
        ru
    };
    let wall = t.elapsed();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed (status {status}): {stderr}"
    );
    Run {
        wall,
        max_rss_kib: ru.ru_maxrss as u64,
        stdout,
    }
}

/// A scripted print-mode run of `script` in the sandbox.
fn zut(sb: &Sandbox, script: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zut"));
    cmd.args(["-p", "--provider", "script", "--no-extensions", "--yolo"])
        .args([
            "--no-session",
            "--max-steps",
            &(LONG_STEPS + 10).to_string(),
        ])
        .arg("--script")
        .arg(script)
        .arg("--cwd")
        .arg(sb.cwd())
        .arg("go")
        .env("ZUT_HOME", sb.home());
    cmd
}

/// A script of `steps` `read` calls, then the answer.
fn read_loop_script(sb: &Sandbox, steps: usize) -> PathBuf {
    let mut text = String::new();
    for i in 1..=steps {
        let call = serde_json::json!({"tool_calls": [
            {"id": format!("c{i}"), "name": "read", "args": {"path": "small.txt"}}
        ]});
        text.push_str(&call.to_string());
        text.push('\n');
    }
    text.push_str("{\"text\":\"done\"}\n");
    let path = sb.dir.path().join(format!("steps-{steps}.jsonl"));
    std::fs::write(&path, text).expect("script");
    path
}

/// Writes the two scripts and the small file the tool loop reads.
fn scripts(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let small: String = (1..=20)
        .map(|i| format!("line {i} of a small file\n"))
        .collect();
    std::fs::write(sb.cwd().join("small.txt"), small).expect("small.txt");
    let one = sb.dir.path().join("one.jsonl");
    std::fs::write(&one, "{\"text\":\"done\"}\n").expect("script");
    (one, read_loop_script(sb, STEPS))
}

fn main() {
    let mut r = Report::new(
        "agent",
        "zut -p with the scripted provider, as a whole process",
        &[
            "T1: a 1-step answer; T200: 200 steps each calling the built-in `read` on a small",
            "file, then the answer. Wall time from spawn to reaped, peak RSS from wait4;",
            "per-step host overhead = (T200 - T1) / 199. Baseline: spawning /bin/true the same",
            "way. The three alternate run by run; medians and p90. A 1000-step run shows",
            "whether a step's cost grows with the transcript (diagnostic, no goal).",
        ],
    );
    let sb = Sandbox::new();
    let (one, many) = scripts(&sb);
    r.line("zut binary", env!("CARGO_BIN_EXE_zut"));
    // A sanity run: the loop really ran 200 tools and printed the answer.
    let check = run(&mut zut(&sb, &many));
    assert_eq!(check.stdout.trim(), "done", "unexpected output");

    const RUNS: usize = 30;
    let (mut t_true, mut t1, mut t200) = (Samples::new(), Samples::new(), Samples::new());
    let (mut rss1, mut rss200, mut rss_true) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..=RUNS {
        // Rotate the order so no variant always follows the heavy one.
        let mut results = [None, None, None];
        for k in 0..3 {
            let which = (i + k) % 3;
            results[which] = Some(match which {
                0 => run(&mut Command::new("/bin/true")),
                1 => run(&mut zut(&sb, &one)),
                _ => run(&mut zut(&sb, &many)),
            });
        }
        let [a, b, c] = results.map(|r| r.expect("ran"));
        if i == 0 {
            continue; // warm-up
        }
        t_true.push(a.wall);
        rss_true.push(a.max_rss_kib);
        t1.push(b.wall);
        rss1.push(b.max_rss_kib);
        t200.push(c.wall);
        rss200.push(c.max_rss_kib);
    }
    let med = |v: &mut Vec<u64>| {
        v.sort();
        v[(v.len() - 1) / 2]
    };

    r.section("whole-process wall time");
    r.line("/bin/true (baseline)", t_true.summary());
    r.line("zut -p, 1 step", t1.summary());
    r.line(
        &format!("zut -p, {STEPS} read steps + answer"),
        t200.summary(),
    );
    r.line(
        "ratios to /bin/true (medians)",
        format!(
            "1 step {:.1}×   {STEPS} steps {:.1}×",
            ratio(t1.median(), t_true.median()),
            ratio(t200.median(), t_true.median())
        ),
    );
    let per_step = t200.median().saturating_sub(t1.median()) / (STEPS as u32 - 1);
    let per_step_p90 = t200.p90().saturating_sub(t1.p90()) / (STEPS as u32 - 1);
    r.line(
        "per-step host overhead (T200 - T1) / 199",
        format!("{} (from p90s: {})", fmt(per_step), fmt(per_step_p90)),
    );

    // Diagnostic: a step's cost should not grow with the transcript.
    let long = read_loop_script(&sb, LONG_STEPS);
    let t_long = Samples::collect(5, || run(&mut zut(&sb, &long)).wall);
    let per_step_long = t_long.median().saturating_sub(t1.median()) / (LONG_STEPS as u32 - 1);
    r.line(
        &format!("diagnostic: per step over {LONG_STEPS} steps"),
        format!(
            "{} ({:.1}× the {STEPS}-step figure; 1.0× if a step's cost does not grow)",
            fmt(per_step_long),
            ratio(per_step_long, per_step)
        ),
    );

    r.section("peak RSS (ru_maxrss, medians)");
    r.line("/bin/true", format!("{} KiB", med(&mut rss_true)));
    r.line("zut -p, 1 step", format!("{} KiB", med(&mut rss1)));
    r.line(
        &format!("zut -p, {STEPS} steps"),
        format!("{} KiB", med(&mut rss200)),
    );

    r.section("goals");
    r.goal(
        per_step < Duration::from_micros(200),
        "per-step host overhead < 200 µs",
        fmt(per_step),
    );
    r.goal(
        t1.median() < Duration::from_millis(10),
        "start-up (1-step run) < 10 ms",
        format!(
            "{} ({:.1}× /bin/true)",
            fmt(t1.median()),
            ratio(t1.median(), t_true.median())
        ),
    );
    r.finish();
}
