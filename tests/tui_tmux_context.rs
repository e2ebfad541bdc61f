//! End-to-end tests of context from the keyboard in the interactive
//! terminal: `@path` (Tab completion, the file reaching the request the
//! scripted provider gets) and `!command` (its output on screen and in the
//! next request), with the real `zut` in a detached tmux session on a
//! private socket.
//!
//! Every wait polls the pane until a text appears or a deadline passes.

#[path = "common/tmux.rs"]
mod tmux;

use serde_json::Value;
use std::path::{Path, PathBuf};
use tmux::{shell_quote, Pane};

/// One `zut` in its own tmux server, killed on drop; `dir` holds `home`
/// (ZUT_HOME), `project`, the script and the request log.
struct Tmux {
    pane: Pane,
    dir: PathBuf,
}

impl std::ops::Deref for Tmux {
    type Target = Pane;
    fn deref(&self) -> &Pane {
        &self.pane
    }
}

impl Tmux {
    fn start(dir: &Path, args: &[&str], script: &[&str]) -> Tmux {
        let home = dir.join("home");
        std::fs::create_dir_all(&home).expect("mkdir");
        let script_path = dir.join("script.jsonl");
        std::fs::write(&script_path, script.join("\n") + "\n").expect("script");
        let mut cmd = vec![
            shell_quote(env!("CARGO_BIN_EXE_zut")),
            "--provider".into(),
            "script".into(),
            "--script".into(),
            shell_quote(&script_path.to_string_lossy()),
            "--script-log".into(),
            shell_quote(&dir.join("requests.jsonl").to_string_lossy()),
            "--no-extensions".into(),
        ];
        cmd.extend(args.iter().map(|a| shell_quote(a)));
        let line = format!(
            "cd {} && env ZUT_HOME={} TERM=xterm-256color {}; echo EXITED:$?; sleep 600",
            shell_quote(&dir.join("project").to_string_lossy()),
            shell_quote(&home.to_string_lossy()),
            cmd.join(" ")
        );
        Tmux {
            pane: Pane::launch("context", (100, 30), &line),
            dir: dir.to_path_buf(),
        }
    }

    /// The user messages' texts of every request the provider got.
    fn requests(&self) -> Vec<Vec<String>> {
        let log = std::fs::read_to_string(self.dir.join("requests.jsonl")).unwrap_or_default();
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|r| {
                r["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|m| m["role"] == "user")
                    .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                    .filter_map(|b| b["text"].as_str().map(str::to_string))
                    .collect()
            })
            .collect()
    }

    fn quit(&self) {
        self.keys(&["C-c"]);
        self.keys(&["C-c"]);
        self.wait_for("EXITED:0");
    }
}

/// A project with one source file and an ignored build directory.
fn project(dir: &Path) {
    let p = dir.join("project");
    std::fs::create_dir_all(p.join("src")).expect("mkdir");
    std::fs::create_dir_all(p.join("target")).expect("mkdir");
    std::fs::create_dir_all(p.join(".git")).expect("mkdir");
    std::fs::write(p.join(".gitignore"), "target/\n").expect("write");
    std::fs::write(p.join("src/greeting.txt"), "hello from the attached file\n").expect("write");
    std::fs::write(p.join("target/greeting.o"), "obj").expect("write");
}

#[test]
fn at_file_completes_with_tab_and_reaches_the_provider() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    let t = Tmux::start(dir.path(), &[], &[r#"{"text":"read it"}"#]);
    t.wait_for("Enter to send");
    t.type_text("summarise @src/gre");
    t.keys(&["Tab"]);
    t.wait_for("› summarise @src/greeting.txt");
    t.type_text("now");
    t.keys(&["Enter"]);
    t.wait_for("read it");
    let screen = t.wait_for("[attached: src/greeting.txt (1 line)]");
    assert!(
        !screen.contains("hello from the attached file"),
        "the file's text is not drawn:\n{screen}"
    );
    let requests = t.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        requests[0],
        ["summarise @src/greeting.txt now\n\n[attached: src/greeting.txt (1 line)]\n```txt\nhello from the attached file\n```"]
    );
    t.quit();
}

#[test]
fn bang_command_under_yolo_shows_its_output_and_reaches_the_next_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    let t = Tmux::start(dir.path(), &["--yolo"], &[r#"{"text":"seen it"}"#]);
    t.wait_for("Enter to send");
    t.type_text("!echo hi-from-the-shell");
    t.keys(&["Enter"]);
    t.wait_for("bash");
    // Expanded, the tool line shows the output itself.
    t.keys(&["C-o"]);
    t.wait_until("the output on screen", |s| {
        s.lines()
            .any(|l| l.contains("hi-from-the-shell") && !l.contains("echo"))
    });
    assert!(t.requests().is_empty(), "no model call for !command");
    t.type_text("what did it print?");
    t.keys(&["Enter"]);
    t.wait_for("seen it");
    let requests = t.requests();
    assert_eq!(
        requests[0],
        [
            "`$ echo hi-from-the-shell`\nhi-from-the-shell",
            "what did it print?"
        ],
        "{requests:?}"
    );
    t.quit();
}

#[test]
fn bang_command_without_yolo_asks_first_and_a_denial_sends_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    project(dir.path());
    let t = Tmux::start(dir.path(), &[], &[r#"{"text":"fine"}"#]);
    t.wait_for("Enter to send");
    t.type_text("!touch made-by-bang");
    t.keys(&["Enter"]);
    t.wait_for("this exact command");
    t.keys(&["n"]);
    t.wait_for("declined");
    assert!(!dir.path().join("project/made-by-bang").exists());
    t.type_text("next");
    t.keys(&["Enter"]);
    t.wait_for("fine");
    assert_eq!(t.requests()[0], ["next"]);
    // "always" for this exact command: asked once, then it just runs.
    t.type_text("!echo again >> count.txt");
    t.keys(&["Enter"]);
    t.wait_for("this exact command");
    t.keys(&["a"]);
    let count = dir.path().join("project/count.txt");
    let lines = |n: usize| {
        let end = std::time::Instant::now() + tmux::DEADLINE;
        while std::fs::read_to_string(&count)
            .unwrap_or_default()
            .lines()
            .count()
            < n
        {
            assert!(std::time::Instant::now() < end, "{n} runs of the command");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    lines(1);
    t.wait_gone("allow bash?");
    t.type_text("!echo again >> count.txt");
    t.keys(&["Enter"]);
    lines(2);
    assert!(!t.capture().contains("allow bash?"), "{}", t.capture());
    t.quit();
}
