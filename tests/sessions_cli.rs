//! `zut sessions …` through the real binary, on session files written by
//! the store library in a temporary `$ZUT_HOME`.

use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};
use zut::provider::{Block, Message, Role};
use zut::session::{Session, Store};
use zut_ext::wire::ContentBlock;

struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let cwd = root.join("proj");
        std::fs::create_dir_all(&cwd).unwrap();
        Env {
            home: root.join("home"),
            cwd,
            _tmp: tmp,
        }
    }

    fn store(&self) -> Store {
        Store::new(&self.home, &self.cwd)
    }

    /// `zut sessions ARGS` run in `dir` (the project unless told).
    fn zut_in(&self, dir: &Path, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_zut"))
            .current_dir(dir)
            .env("ZUT_HOME", &self.home)
            .env("TZ", "UTC")
            .stdin(Stdio::null())
            .arg("sessions")
            .args(args)
            .output()
            .unwrap()
    }

    fn zut(&self, args: &[&str]) -> Output {
        self.zut_in(&self.cwd, args)
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assistant(blocks: Vec<Block>) -> Message {
    Message {
        role: Role::Assistant,
        content: blocks,
        from: None,
    }
}

/// A root session with a tool round and a state, and a branch of it.
fn two_sessions(env: &Env) -> (Session, Session) {
    let mut root = env.store().create().unwrap();
    root.append_message(&Message::user_text("what is in main.rs?"))
        .unwrap();
    root.append_message(&assistant(vec![
        Block::Text {
            text: "let me look".into(),
        },
        Block::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            args: json!({"path": "src/main.rs"}),
        },
    ]))
    .unwrap();
    root.append_message(&Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            call_id: "c1".into(),
            is_error: false,
            content: vec![ContentBlock::Text {
                text: "fn main() {\n}\n".into(),
            }],
        }],
        from: None,
    })
    .unwrap();
    root.append_message(&assistant(vec![Block::Text {
        text: "an empty main\nnothing else".into(),
    }]))
    .unwrap();
    root.set_state("todo", json!({"open": 2})).unwrap();
    let branch = root.fork(Some(2)).unwrap();
    // The root is the most recently written, whatever the clock resolution.
    std::fs::File::options()
        .append(true)
        .open(root.path())
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(60))
        .unwrap();
    (root, branch)
}

#[test]
fn list_shows_sessions_newest_first_with_their_parent() {
    let env = Env::new();
    let (root, branch) = two_sessions(&env);
    for args in [&[][..], &["list"][..]] {
        let out = env.zut(args);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("ID "), "{text}");
        assert!(lines[0].contains("PARENT") && lines[0].contains("PROMPT"));
        assert!(lines[1].starts_with(root.id()), "{text}");
        assert!(lines[1].contains("what is in main.rs?"));
        assert!(lines[1].split_whitespace().any(|w| w == "4"), "{text}");
        assert!(lines[2].starts_with(branch.id()), "{text}");
        // The fork point 2 moved past the tool results to keep the pair.
        assert!(lines[2].contains(&format!("{}@3", root.id())), "{text}");
    }
}

#[test]
fn list_follows_cwd_and_says_when_there_is_nothing() {
    let env = Env::new();
    two_sessions(&env);
    let elsewhere = env.cwd.parent().unwrap().join("other");
    std::fs::create_dir_all(&elsewhere).unwrap();

    let out = env.zut_in(&elsewhere, &[]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("no sessions for"), "{}", stderr(&out));

    let out = Command::new(env!("CARGO_BIN_EXE_zut"))
        .current_dir(&elsewhere)
        .env("ZUT_HOME", &env.home)
        .args(["--cwd", "../proj", "sessions", "list"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 3, "{}", stdout(&out));
}

#[test]
fn show_prints_the_transcript_and_states() {
    let env = Env::new();
    let (root, _) = two_sessions(&env);
    let out = env.zut(&["show", root.id()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for want in [
        format!("session {}", root.id()),
        format!("file    {}", root.path().display()),
        "[0] user:\n  what is in main.rs?".into(),
        "[1] assistant:\n  let me look\n  → read({\"path\":\"src/main.rs\"}) [c1]".into(),
        "[2] tool results:\n  ← [c1] fn main() { … (2 lines)".into(),
        "[3] assistant:\n  an empty main\n  nothing else".into(),
        "state todo: {\"open\":2} (10 bytes)".into(),
    ] {
        assert!(text.contains(&want), "missing {want:?} in:\n{text}");
    }
    assert!(!text.contains("parent"), "{text}");
    assert_eq!(stderr(&out), "");
}

#[test]
fn show_names_the_parent_warns_about_torn_rows_and_cleans_control_characters() {
    let env = Env::new();
    let (root, mut branch) = two_sessions(&env);
    branch
        .append_message(&Message::user_text("\x1b[31mred\x1b[0m"))
        .unwrap();
    let mut f = std::fs::File::options()
        .append(true)
        .open(branch.path())
        .unwrap();
    f.write_all(b"{\"type\":\"message\",\"mess").unwrap();
    drop(f);

    let out = env.zut(&["show", branch.id()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("parent  {} at message 3", root.id())),
        "{text}"
    );
    assert!(text.contains("\u{FFFD}[31mred"), "{text}");
    assert!(!text.contains('\x1b'));
    assert_eq!(
        stderr(&out),
        format!(
            "warning: session file {}: skipped 1 unreadable row\n",
            branch.path().display()
        )
    );
}

#[test]
fn a_unique_part_of_an_id_works_where_an_id_does() {
    let env = Env::new();
    let (root, branch) = two_sessions(&env);
    let full = root.id().to_string();
    // The terminal's footer shows the id without its date.
    let (short, last) = (&full[9..], &full[full.len() - 4..]);
    for q in [short, last] {
        let out = env.zut(&["show", q]);
        assert!(out.status.success(), "{q}: {}", stderr(&out));
        assert!(
            stdout(&out).starts_with(&format!("session {full}\n")),
            "{q}"
        );
    }
    // A resumed session by its last part: the model sees its transcript.
    let script = env.cwd.join("s.jsonl");
    std::fs::write(&script, "{\"text\":\"again\"}\n").unwrap();
    let log = env.cwd.join("req.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_zut"))
        .current_dir(&env.cwd)
        .env("ZUT_HOME", &env.home)
        .args([
            "--no-extensions",
            "--no-mcp",
            "--no-hooks",
            "--provider",
            "script",
        ])
        .arg("--script")
        .arg(&script)
        .arg("--script-log")
        .arg(&log)
        .args(["--session", last, "-p", "more"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "again");
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(sent.contains("what is in main.rs?"), "{sent}");

    let out = env.zut(&["rm", short]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), format!("removed session {full}\n"));
    assert!(!root.path().exists() && branch.path().exists());
}

#[test]
fn rm_removes_one_session_and_unknown_ids_fail() {
    let env = Env::new();
    let (root, branch) = two_sessions(&env);
    let out = env.zut(&["rm", root.id()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!root.path().exists());
    assert!(branch.path().exists());
    assert_eq!(env.store().list().len(), 1);

    for args in [
        ["rm", root.id()],
        ["show", root.id()],
        ["show", "../../etc"],
    ] {
        let out = env.zut(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).starts_with("zut sessions: no session"),
            "{}",
            stderr(&out)
        );
        assert!(stderr(&out).contains(args[1]));
    }
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    for args in [&["bogus"][..], &["show"][..], &["rm", "a", "b"][..]] {
        let out = env.zut(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("zut sessions --help"));
    }
    let out = env.zut(&["--help"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("show"));
}

/// Runs `cmd` to its end; its peak resident memory in KiB (`wait4`).
fn peak_rss_kib(cmd: &mut Command) -> (std::process::ExitStatus, i64) {
    use std::os::unix::process::ExitStatusExt;
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter; `pid` is our child,
    // reaped here and nowhere else (the Child is forgotten below).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    std::mem::forget(child);
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4");
    (std::process::ExitStatus::from_raw(status), usage.ru_maxrss)
}

/// A session of "the first prompt" and 100 user messages of 1 MiB: its
/// file and size in bytes. The rows are written straight to the file, so that this
/// process stays small: the peak of a child it spawns starts at its
/// parent's.
fn big_session(env: &Env) -> (std::path::PathBuf, u64) {
    let mut s = env.store().create().unwrap();
    s.append_message(&Message::user_text("the first prompt"))
        .unwrap();
    let path = s.path().to_path_buf();
    drop(s);
    let row = serde_json::to_string(&json!({
        "type": "message",
        "message": Message::user_text("y".repeat(1 << 20)),
    }))
    .unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for _ in 0..100 {
        writeln!(f, "{row}").unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 100 << 20, "{size}");
    (path, size)
}

#[test]
fn listing_a_100_mib_session_reads_it_row_by_row() {
    let env = Env::new();
    big_session(&env);
    let (status, kib) = peak_rss_kib(
        Command::new(env!("CARGO_BIN_EXE_zut"))
            .current_dir(&env.cwd)
            .env("ZUT_HOME", &env.home)
            .arg("sessions"),
    );
    assert!(status.success(), "{status:?}");
    // A listing holds one row at a time (here 1 MiB), never the file.
    let listed = env.zut(&[]);
    assert!(stdout(&listed).contains("the first prompt"), "{listed:?}");
    assert!(stdout(&listed).contains("101"), "{listed:?}");
    assert!(kib < 40 * 1024, "zut sessions peaked at {kib} KiB");
}

#[test]
fn continuing_a_100_mib_session_keeps_one_copy_of_it() {
    let env = Env::new();
    let (path, size) = big_session(&env);
    let script = env.cwd.join("script.jsonl");
    std::fs::write(&script, "{\"text\":\"done\"}\n").unwrap();
    let log = env.cwd.join("requests.jsonl");
    let (status, kib) = peak_rss_kib(
        Command::new(env!("CARGO_BIN_EXE_zut"))
            .current_dir(&env.cwd)
            .env("ZUT_HOME", &env.home)
            .stdin(Stdio::null())
            .args(["-p", "--provider", "script", "--no-extensions", "--script"])
            .arg(&script)
            .arg("--script-log")
            .arg(&log)
            .args(["--continue", "the next prompt"]),
    );
    assert!(status.success(), "{status:?}");
    // One copy of the transcript (100 MiB of text) plus the program: the
    // session, the engine's view and the agent share it, and the request
    // is logged without a second copy in memory. Three copies, or one
    // more whole-file buffer, would pass 1.6x.
    let bound = size as i64 * 16 / 10 / 1024;
    assert!(
        kib < bound,
        "zut -p --continue peaked at {kib} KiB on a {} KiB session (bound {bound} KiB)",
        size / 1024
    );
    // The model saw the whole history and the new prompt.
    let logged = std::fs::read(&log).unwrap();
    let request: serde_json::Value = serde_json::from_slice(&logged).unwrap();
    drop(logged);
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        102,
        "first prompt, 100 rows, the next prompt"
    );
    assert_eq!(messages[0]["content"][0]["text"], "the first prompt");
    for m in &messages[1..101] {
        assert_eq!(m["content"][0]["text"].as_str().unwrap().len(), 1 << 20);
    }
    assert_eq!(messages[101]["content"][0]["text"], "the next prompt");
    // And the answer was recorded in the same session.
    let again = env
        .store()
        .read(&path.file_stem().unwrap().to_string_lossy());
    assert_eq!(again.unwrap().messages().len(), 103);
}
