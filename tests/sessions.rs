//! Sessions end to end through the real binary: extension state per branch
//! across runs, forks and switches, privacy between extensions, the state
//! cap, recovery from a torn file, compaction, and what reaches providers.

mod support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use support::*;

/// The counter fixture installed as `name`, logging what it hears.
fn counter(sb: &Sandbox, name: &str) -> (PathBuf, PathBuf) {
    let log = sb.path(&format!("{name}.log"));
    let dir = sb.fixture_as("counter", name, &[opt("log", &log)]);
    (dir, log)
}

fn heard(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn call(id: &str, tool: &str, args: Value) -> Value {
    json!({"tool_calls": [{"id": id, "name": tool, "args": args}]})
}

/// Runs zut in JSON mode with `exts`; returns the events and requests.
fn run(
    sb: &Sandbox,
    exts: &[PathBuf],
    script: &[Value],
    extra: &[&str],
) -> (std::process::Output, Vec<Value>, Vec<Value>) {
    let mut args = vec!["--mode", "json"];
    args.extend_from_slice(extra);
    let (out, requests) = run_scripted(sb, exts, script, &args);
    let events = json_lines(&out.stdout);
    (out, events, requests)
}

fn session_of(events: &[Value]) -> Value {
    events
        .iter()
        .rev()
        .find(|e| e["type"] == "session")
        .cloned()
        .unwrap_or_else(|| panic!("no session event in {events:?}"))
}

fn result_text(events: &[Value], id: &str) -> String {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == id)
        .map(|e| e["content"][0]["text"].as_str().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("no result {id} in {events:?}"))
}

fn session_files(sb: &Sandbox) -> Vec<PathBuf> {
    let root = sb.home().join("sessions");
    let mut out = Vec::new();
    for d in std::fs::read_dir(root).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            out.push(f.path());
        }
    }
    out
}

#[test]
fn state_survives_a_restart_with_continue_and_hello_ack_carries_the_session() {
    let sb = Sandbox::new();
    let (dir, log) = counter(&sb, "counter");
    let (out, ev, _) = run(
        &sb,
        std::slice::from_ref(&dir),
        &[
            call("c1", "counter_count", json!({})),
            json!({"text": "ok"}),
        ],
        &["go"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(result_text(&ev, "c1"), "n=1");
    let first = session_of(&ev);
    assert_eq!(first["reason"], "new");
    // The session event comes before the prompt's user_message.
    let at = |t: &str| ev.iter().position(|e| e["type"] == t).unwrap();
    assert!(at("session") < at("user_message"));
    // Run 2 resumes: the extension gets its state back and counts on.
    let (_, ev, _) = run(
        &sb,
        &[dir],
        &[
            call("c2", "counter_count", json!({})),
            json!({"text": "ok"}),
        ],
        &["--continue", "again"],
    );
    assert_eq!(session_of(&ev)["id"], first["id"]);
    assert_eq!(session_of(&ev)["reason"], "resume");
    assert_eq!(result_text(&ev, "c2"), "n=2");
    let h = heard(&log);
    let ack = h
        .iter()
        .rev()
        .find_map(|e| e.get("hello_ack_session"))
        .unwrap();
    assert_eq!(ack["id"], first["id"]);
    assert!(ack["path"].as_str().unwrap().ends_with(".jsonl"));
    assert!(ack["cwd"].as_str().is_some_and(|c| !c.is_empty()));
    let opened: Vec<&Value> = h
        .iter()
        .filter(|e| e["event"] == "session_opened")
        .collect();
    assert_eq!(opened.last().unwrap()["state"], json!({"n": 1}));
    assert!(h.iter().any(|e| e["event"] == "session_start"));
}

#[test]
fn forks_and_switches_keep_each_branch_state_apart() {
    let sb = Sandbox::new();
    let (dir, log) = counter(&sb, "counter");
    let exts = [dir];
    let count = |id: &str| [call(id, "counter_count", json!({})), json!({"text": "ok"})];
    let (_, ev, _) = run(&sb, &exts, &count("a1"), &["go"]);
    let a = session_of(&ev)["id"].as_str().unwrap().to_string();
    // Fork at the end: the child branch starts with n=1.
    let (_, ev, _) = run(&sb, &exts, &[], &["--continue", "/fork"]);
    let b = session_of(&ev);
    assert_eq!(b["reason"], "fork");
    assert_eq!(b["parent_id"], a.as_str());
    let b = b["id"].as_str().unwrap().to_string();
    let h = heard(&log);
    let forked = h
        .iter()
        .rposition(|e| e["event"] == "session_forked")
        .unwrap();
    let switched = h
        .iter()
        .rposition(|e| e["event"] == "session_switched")
        .unwrap();
    assert!(forked < switched, "session_forked then session_switched");
    assert_eq!(h[switched]["state"], json!({"n": 1}));
    // The branch counts on by itself…
    let (_, ev, _) = run(&sb, &exts, &count("b1"), &["--session", &b, "go"]);
    assert_eq!(result_text(&ev, "b1"), "n=2");
    // …while the parent stays where it was.
    let peek = |id: &str| [call(id, "counter_peek", json!({})), json!({"text": "ok"})];
    let (_, ev, _) = run(&sb, &exts, &peek("p1"), &["--session", &a, "look"]);
    assert_eq!(result_text(&ev, "p1"), "n=1");
    let (_, ev, _) = run(&sb, &exts, &peek("p2"), &["--session", &b, "look"]);
    assert_eq!(result_text(&ev, "p2"), "n=2");
    // Switching inside one run to the parent restores its state too.
    let (_, _, _) = run(&sb, &exts, &[], &["--session", &b, &format!("/resume {a}")]);
    let h = heard(&log);
    let last = h
        .iter()
        .rev()
        .find(|e| e["event"] == "session_switched")
        .unwrap();
    assert_eq!(last["session"]["id"], a.as_str());
    assert_eq!(last["state"], json!({"n": 1}));
}

#[test]
fn an_extension_never_sees_another_ones_state_and_details_never_reach_the_provider() {
    let sb = Sandbox::new();
    let (a, _) = counter(&sb, "ca");
    let (b, b_log) = counter(&sb, "cb");
    let exts = [a, b];
    let (_, ev, requests) = run(
        &sb,
        &exts,
        &[call("c1", "ca_count", json!({})), json!({"text": "ok"})],
        &["go"],
    );
    assert_eq!(result_text(&ev, "c1"), "n=1");
    // Neither the stream nor any provider request carries the details.
    for r in &requests {
        assert!(!r.to_string().contains("\"details\""), "{r}");
        assert!(!r.to_string().contains("{\"n\":1}"), "{r}");
    }
    for e in &ev {
        assert!(e.get("details").is_none(), "{e}");
    }
    run(&sb, &exts, &[], &["--continue", "/fork"]);
    for e in heard(&b_log) {
        if e.get("event").is_some() {
            assert_eq!(e["has_state"], false, "cb was sent a state: {e}");
        }
    }
}

#[test]
fn a_state_over_256_kib_is_refused_and_the_previous_one_stays() {
    let sb = Sandbox::new();
    let (dir, _) = counter(&sb, "counter");
    let exts = [dir];
    let (out, ev, requests) = run(
        &sb,
        &exts,
        &[
            call("c1", "counter_count", json!({})),
            call("big1", "counter_big", json!({"bytes": 262_144})),
            call("big2", "counter_big", json!({"bytes": 262_145})),
            json!({"text": "ok"}),
        ],
        &["go"],
    );
    assert_eq!(out.status.code(), Some(0));
    let warnings: Vec<&Value> = ev
        .iter()
        .filter(|e| e["type"] == "ext_warning" && e["extension"] == "counter")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0]["message"]
        .as_str()
        .unwrap()
        .contains("262145 bytes"));
    // The refused result still reached the model.
    assert!(requests.last().unwrap().to_string().contains("big"));
    // The exact limit was accepted: it is the branch state now.
    let file = std::fs::read_to_string(&session_files(&sb)[0]).unwrap();
    let states: Vec<usize> = file
        .lines()
        .filter(|l| l.contains("\"extension_state\""))
        .map(str::len)
        .collect();
    assert_eq!(states.len(), 2, "n=1, then the 262144-byte state");
    assert!(states[1] > 262_144);
}

#[test]
fn a_session_torn_by_kill_9_and_unknown_rows_still_resume() {
    let sb = Sandbox::new();
    let (dir, _) = counter(&sb, "counter");
    let exts = [dir];
    run(&sb, &exts, &[json!({"text": "one"})], &["first"]);
    // A real zut killed with SIGKILL in the middle of a turn.
    let s = script(&sb, &[json!({"delay_ms": 30_000, "text": "never"})]);
    let mut child = zut(&sb)
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--continue",
            "--mode",
            "json",
            "second",
        ])
        .arg("-e")
        .arg(&exts[0])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0 {
        if line.contains("\"turn_start\"") {
            break;
        }
        line.clear();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // What a write cut short looks like, and a row from a newer zut.
    let file = session_files(&sb)[0].clone();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        b"{\"type\":\"future_row\",\"x\":1}\n{\"type\":\"message\",\"mess",
    )
    .unwrap();
    drop(f);
    let (out, _, requests) = run(
        &sb,
        &exts,
        &[json!({"text": "three"})],
        &["--continue", "third"],
    );
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("warning").count(),
        1,
        "one warning for the torn row: {err}"
    );
    let texts: Vec<String> = requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(texts, ["first", "one", "second", "third"]);
}

#[test]
fn compaction_asks_the_provider_for_a_summary_and_tells_extensions() {
    let sb = Sandbox::new();
    let (dir, log) = counter(&sb, "counter");
    let exts = [dir];
    run(
        &sb,
        &exts,
        &[
            call("c1", "counter_count", json!({})),
            json!({"text": "one"}),
        ],
        &["first"],
    );
    run(
        &sb,
        &exts,
        &[json!({"text": "two"})],
        &["--continue", "second"],
    );
    let (out, ev, requests) = run(
        &sb,
        &exts,
        &[json!({"text": "THE SUMMARY"})],
        &["--continue", "/compact keep it short"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(session_of(&ev)["reason"], "compact");
    let ask = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let last = ask.last().unwrap()["content"][0]["text"].as_str().unwrap();
    assert!(
        last.contains("Summarize") && last.contains("keep it short"),
        "{last}"
    );
    let h = heard(&log);
    let compacted = h
        .iter()
        .rev()
        .find(|e| e["event"] == "session_compacted")
        .unwrap();
    assert_eq!(compacted["state"], json!({"n": 1}));
    assert_eq!(compacted["reason"], "manual");
    // The next request starts with the summary and keeps the last turn.
    let (_, _, requests) = run(
        &sb,
        &exts,
        &[json!({"text": "ok"})],
        &["--continue", "next"],
    );
    let texts: Vec<String> = requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(texts[0].contains("THE SUMMARY"), "{texts:?}");
    assert_eq!(&texts[1..], ["second", "two", "next"]);
}

#[test]
fn unknown_session_ids_exit_2_and_no_session_keeps_nothing() {
    let sb = Sandbox::new();
    let out = zut(&sb)
        .args(["--session", "nope-123", "-p", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope-123"));
    let (out, ev, _) = run(&sb, &[], &[json!({"text": "x"})], &["--no-session", "go"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(ev.iter().all(|e| e["type"] != "session"));
    assert!(session_files(&sb).is_empty());
    let out = zut(&sb)
        .args([
            "--continue",
            "--mode",
            "json",
            "--provider",
            "script",
            "--script",
        ])
        .arg(script(&sb, &[json!({"text": "x"})]))
        .arg("hi")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("starting a new one"));
}

/// A reload starts new processes after the session was opened: each new
/// instance hears the latest session event once, with its own state, and
/// counts on from it.
#[test]
fn a_reloaded_extension_hears_the_latest_session_event_with_its_state() {
    let sb = Sandbox::new();
    let (dir, log) = counter(&sb, "counter");
    let (_, ev, _) = run(
        &sb,
        std::slice::from_ref(&dir),
        &[
            call("c1", "counter_count", json!({})),
            call("c2", "counter_count", json!({})),
            json!({"text": "ok"}),
        ],
        &["go"],
    );
    assert_eq!(result_text(&ev, "c2"), "n=2");
    std::fs::remove_file(&log).unwrap();

    let (out, ev, _) = run(
        &sb,
        &[dir],
        &[
            call("c3", "counter_count", json!({})),
            json!({"text": "ok"}),
        ],
        &["--continue", "/reload-ext"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(ev.iter().any(|e| e["type"] == "reload"), "{ev:?}");
    let h = heard(&log);
    let opened: Vec<&Value> = h
        .iter()
        .filter(|e| e["event"] == "session_opened")
        .collect();
    // Once for the first instance at start, once for its replacement.
    assert_eq!(opened.len(), 2, "{h:?}");
    for o in &opened {
        assert_eq!(o["state"], json!({"n": 2}), "{h:?}");
    }
}

/// Runs zut in JSON mode until its stdout shows `marker`, then SIGKILLs it.
fn kill_9_after(sb: &Sandbox, script_lines: &[Value], args: &[&str], marker: &str) {
    let s = script(sb, script_lines);
    let mut child = zut(sb)
        .args(["--provider", "script", "--script", &s, "--mode", "json"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0 {
        if line.contains(marker) {
            break;
        }
        line.clear();
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_session_killed_mid_tool_call_continues_with_an_error_result_for_it() {
    let sb = Sandbox::new();
    // The bash call is running (it sleeps) when zut is killed: the file
    // ends with the call and no result.
    kill_9_after(
        &sb,
        &[call(
            "c1",
            "bash",
            json!({"command": "sleep 30", "timeout": 60}),
        )],
        &["--yolo", "start"],
        "\"tool_call\"",
    );
    let (out, _, requests) = run(
        &sb,
        &[],
        &[json!({"text": "fine"})],
        &["--continue", "next"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("warning").count(), 1, "{err}");
    assert!(err.contains("1 interrupted tool call"), "{err}");
    let messages = requests[0]["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .find(|b| b["type"] == "tool_result")
        .expect("the dangling call got a result");
    assert_eq!(result["call_id"], "c1");
    assert_eq!(result["is_error"], true);
    // Written back: a third run has nothing left to repair.
    let (out, _, _) = run(&sb, &[], &[json!({"text": "ok"})], &["--continue", "again"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
}

#[test]
fn a_second_process_on_a_busy_session_forks_instead_of_interleaving() {
    let sb = Sandbox::new();
    run(&sb, &[], &[json!({"text": "one"})], &["first"]);
    let first = session_files(&sb);
    assert_eq!(first.len(), 1);
    // One zut holds the session (its turn waits on the model)...
    let s = script(&sb, &[json!({"delay_ms": 30_000, "text": "slow"})]);
    let mut holder = zut(&sb)
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--continue",
            "--mode",
            "json",
            "hold",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(holder.stdout.take().unwrap());
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0 {
        if line.contains("\"turn_start\"") {
            break;
        }
        line.clear();
    }
    // ...and a second one continues it at the same time.
    let (out, events, requests) = run(
        &sb,
        &[],
        &[json!({"text": "two"})],
        &["--continue", "second"],
    );
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("open in another zut process"), "{err}");
    let session = session_of(&events);
    assert_ne!(
        Path::new(session["path"].as_str().unwrap()),
        first[0].as_path(),
        "the second process writes a branch of its own"
    );
    assert!(session["parent_id"].as_str().is_some(), "{session}");
    // The branch starts from what the first session held.
    let texts: Vec<&str> = requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"][0]["text"].as_str())
        .collect();
    assert_eq!(texts[..2], ["first", "one"]);
}
