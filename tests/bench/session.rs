//! Benchmark: the session store (issue "sessions").
//!
//! Resume: `Store::open` of a session of 10,000 messages (prompts, answers
//! with tool calls, tool results of ~1 KiB) and 1,000 extension state rows,
//! against reading the very same file line by line with a plain
//! `BufReader` (no decoding) in the same run.
//!
//! Append: `Session::append_message`, one flushed row per call, against a
//! plain `BufWriter` writing the same encoded lines and flushing after each
//! (the same number of `write` calls, no encoding).
//!
//! Run: `cargo bench --bench session` (or `-- resume|append`).

mod common;

use common::*;
use serde_json::json;
use std::fs::{self, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use zut::provider::{Block, Message, Role};
use zut::session::{Session, Store};
use zut_ext::wire::ContentBlock;

const MESSAGES: usize = 10_000;
const STATE_ROWS: usize = 1_000;
const RESUME_RUNS: usize = 15;
const APPEND_ROWS: usize = 2_000;
const APPEND_ROUNDS: usize = 7;

/// Message `i` of a plausible coding session: a prompt, an answer that
/// calls a tool, its result, an answer, and so on.
fn message(i: usize) -> Message {
    match i % 4 {
        0 => Message::user_text(format!("step {i}: please look at src/module_{i}.rs and fix the failing test")),
        1 => Message {
            role: Role::Assistant,
            content: vec![
                Block::Text {
                    text: format!("I will read src/module_{i}.rs first."),
                },
                Block::ToolCall {
                    id: format!("call_{i}"),
                    name: "read".into(),
                    args: json!({"path": format!("src/module_{i}.rs"), "offset": 0, "limit": 200}),
                },
            ], from: None, },
        2 => Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                call_id: format!("call_{}", i - 1),
                is_error: false,
                content: vec![ContentBlock::Text {
                    text: format!("fn f_{i}() -> u32 {{\n    {i}\n}}\n").repeat(30),
                }],
            }], from: None, },
        _ => Message {
            role: Role::Assistant,
            content: vec![Block::Text {
                text: format!("The test failed because f_{i} returned the wrong value; fixed it and the suite passes now."),
            }], from: None, },
    }
}

/// The session to resume: every 10th message is followed by a state row
/// of one of five extensions.
fn build(store: &Store) -> Session {
    let mut s = store.create().expect("create session");
    for i in 0..MESSAGES {
        s.append_message(&message(i)).expect("append");
        if i % (MESSAGES / STATE_ROWS) == 0 {
            let state =
                json!({"step": i, "todo": ["read", "fix", "test"], "notes": "x".repeat(200)});
            s.set_state(&format!("ext-{}", (i / 10) % 5), state)
                .expect("state");
        }
    }
    s
}

/// The baseline: the same bytes, line by line, nothing decoded.
fn read_plain(path: &Path) -> usize {
    let mut r = BufReader::new(fs::File::open(path).expect("open"));
    let mut line = Vec::new();
    let mut n = 0;
    while r.read_until(b'\n', &mut line).expect("read") > 0 {
        n += 1;
        line.clear();
    }
    n
}

fn resume(report: &mut Report, dir: &Path) {
    report.section(&format!(
        "resume: {MESSAGES} messages + {STATE_ROWS} state rows"
    ));
    let store = Store::new(&dir.join("home"), dir);
    let built = build(&store);
    let (id, path) = (built.id().to_string(), built.path().to_path_buf());
    drop(built);
    let size = fs::metadata(&path).expect("stat").len();
    report.line("file size", format!("{:.1} MiB", size as f64 / 1048576.0));

    let (mut store_t, mut plain_t) = (Samples::new(), Samples::new());
    // Warm the page cache and the allocator on both sides.
    let _ = store.open(&id).expect("open");
    let _ = read_plain(&path);
    for _ in 0..RESUME_RUNS {
        let t = Instant::now();
        let s = store.open(&id).expect("open");
        store_t.push(t.elapsed());
        assert_eq!(s.messages().len(), MESSAGES);
        assert_eq!(s.states().len(), 5);
        assert!(s.warning().is_none());
        drop(s);
        let t = Instant::now();
        let rows = read_plain(&path);
        plain_t.push(t.elapsed());
        assert_eq!(rows, 1 + MESSAGES + STATE_ROWS);
    }
    report.line("Store::open", store_t.summary());
    report.line("BufReader lines (baseline)", plain_t.summary());
    report.line(
        "ratio open / baseline (paired median)",
        format!("{:.1}x", paired_ratio(&store_t, &plain_t)),
    );
    let m = store_t.median();
    report.goal(m <= Duration::from_millis(100), "resume <= 100 ms", fmt(m));
}

fn append(report: &mut Report, dir: &Path) {
    report.section(&format!("append: {APPEND_ROWS} flushed rows per round"));
    let msgs: Vec<Message> = (0..APPEND_ROWS).map(message).collect();
    // The baseline writes the bytes the store writes: encode once, up front.
    let lines: Vec<Vec<u8>> = msgs
        .iter()
        .map(|m| {
            let mut l =
                serde_json::to_vec(&json!({"type": "message", "message": m})).expect("json");
            l.push(b'\n');
            l
        })
        .collect();
    let bytes: usize = lines.iter().map(Vec::len).sum();
    report.line("mean row", format!("{} bytes", bytes / APPEND_ROWS));

    let store = Store::new(&dir.join("home"), &dir.join("append"));
    let (mut store_t, mut plain_t) = (Samples::new(), Samples::new());
    for round in 0..APPEND_ROUNDS + 1 {
        let mut s = store.create().expect("create");
        let t = Instant::now();
        for m in &msgs {
            s.append_message(m).expect("append");
        }
        let per_store = t.elapsed() / APPEND_ROWS as u32;
        let store_len = fs::metadata(s.path()).expect("stat").len();
        let path = s.path().to_path_buf();
        drop(s);
        let _ = fs::remove_file(&path);

        let plain_path = dir.join("plain.jsonl");
        let _ = fs::remove_file(&plain_path);
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&plain_path)
            .expect("open");
        let mut w = BufWriter::new(f);
        let t = Instant::now();
        for l in &lines {
            w.write_all(l).expect("write");
            w.flush().expect("flush");
        }
        let per_plain = t.elapsed() / APPEND_ROWS as u32;
        drop(w);
        // The header row is the only difference in content.
        assert!(store_len > bytes as u64);
        if round > 0 {
            store_t.push(per_store);
            plain_t.push(per_plain);
        }
    }
    report.line("Session::append_message per row", store_t.summary());
    report.line(
        "BufWriter write+flush per row (baseline)",
        plain_t.summary(),
    );
    report.line(
        "ratio append / baseline (paired median)",
        format!("{:.1}x", paired_ratio(&store_t, &plain_t)),
    );
    let m = store_t.median();
    report.goal(
        m <= Duration::from_micros(50),
        "append <= 50 us per row",
        fmt(m),
    );
}

fn main() {
    let mut report = Report::new(
        "session",
        "session store: resume and append",
        &[
            "resume: Store::open of 10,000 messages + 1,000 state rows vs BufReader lines of the same file",
            "append: Session::append_message (one flushed row) vs BufWriter write+flush of the same line",
        ],
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().canonicalize().expect("canonical tempdir");
    if selected("resume") {
        resume(&mut report, &dir);
    }
    if selected("append") {
        append(&mut report, &dir);
    }
    report.finish();
}
