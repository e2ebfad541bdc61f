//! End-to-end tests of reading and approving in the interactive terminal:
//! the real `zut` binary in a detached tmux session (100×30, private
//! socket) with the scripted provider, read with `capture-pane`.

#[path = "common/tmux.rs"]
mod tmux;

use std::path::PathBuf;
use std::time::{Duration, Instant};
use tmux::{shell_quote as quote, Pane, DEADLINE};

struct Tmux {
    pane: Pane,
    _tmp: tempfile::TempDir,
    project: PathBuf,
}

impl std::ops::Deref for Tmux {
    type Target = Pane;
    fn deref(&self) -> &Pane {
        &self.pane
    }
}

impl Tmux {
    fn start(script: &[&str]) -> Tmux {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let (home, project) = (dir.join("home"), dir.join("project"));
        std::fs::create_dir_all(&home).expect("mkdir");
        std::fs::create_dir_all(&project).expect("mkdir");
        let script_path = dir.join("script.jsonl");
        std::fs::write(&script_path, script.join("\n") + "\n").expect("script");
        let line = format!(
            "cd {} && env ZUT_HOME={} TERM=xterm-256color {} --no-extensions --provider script --script {}; echo EXITED:$?; sleep 600",
            quote(&project.to_string_lossy()),
            quote(&home.to_string_lossy()),
            quote(env!("CARGO_BIN_EXE_zut")),
            quote(&script_path.to_string_lossy()),
        );
        let t = Tmux {
            pane: Pane::launch("read", (100, 30), &line),
            _tmp: tmp,
            project,
        };
        t.tmux(&["set-option", "-g", "set-clipboard", "on"]);
        t.wait_for("script");
        t
    }

    fn send(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    fn file(&self, name: &str) -> PathBuf {
        self.project.join(name)
    }
}

fn json_text(text: &str) -> String {
    serde_json::json!({ "text": text }).to_string()
}

#[test]
fn a_markdown_answer_is_rendered_with_no_markup_left() {
    let answer = "## Steps\n\n1. Run **cargo build**\n2. See [docs](https://doc.rust-lang.org)\n\n| tool | ok |\n|---|---|\n| cargo | yes |\n\n```rust\nfn main() { println!(\"hi\"); }\n```\n";
    let t = Tmux::start(&[&json_text(answer)]);
    t.send("how?");
    let pane = t.wait_for("╰─");
    for shown in [
        "Steps",
        "1. Run cargo build",
        "docs (https://doc.rust-lang.org)",
        "tool  │ ok",
        "╭─ rust",
        "│ fn main()",
    ] {
        assert!(pane.contains(shown), "{shown:?} missing:\n{pane}");
    }
    for raw in ["**", "##", "```", "|---"] {
        assert!(!pane.contains(raw), "{raw:?} left on screen:\n{pane}");
    }
}

#[test]
fn an_edit_is_approved_after_reading_its_diff() {
    let call = serde_json::json!({"tool_calls": [{"id": "e1", "name": "edit", "args": {
        "path": "notes.txt", "edits": [{"oldText": "colour = red", "newText": "colour = blue"}]}}]});
    let t = Tmux::start(&[&call.to_string(), &json_text("changed it")]);
    std::fs::write(t.file("notes.txt"), "title\ncolour = red\nend\n").expect("write");
    t.send("make it blue");
    let pane = t.wait_for("allow edit?");
    for shown in [
        "notes.txt  +1 -1",
        "@@ -1,3 +1,3 @@",
        "-colour = red",
        "+colour = blue",
        "writes and edits of notes.txt",
    ] {
        assert!(pane.contains(shown), "{shown:?} missing:\n{pane}");
    }
    assert_eq!(
        std::fs::read_to_string(t.file("notes.txt")).expect("read"),
        "title\ncolour = red\nend\n"
    );
    t.keys(&["y"]);
    let pane = t.wait_for("changed it");
    assert!(pane.contains("⚙ edit +1 -1"), "{pane}");
    assert_eq!(
        std::fs::read_to_string(t.file("notes.txt")).expect("read"),
        "title\ncolour = blue\nend\n"
    );
}

#[test]
fn always_covers_only_the_exact_command_it_named() {
    let bash = |id: &str, cmd: &str| {
        serde_json::json!({"tool_calls": [{"id": id, "name": "bash", "args": {"command": cmd, "timeout": 10}}]}).to_string()
    };
    let t = Tmux::start(&[
        &bash("b1", "echo harmless"),
        &json_text("one"),
        &bash("b2", "echo harmless"),
        &json_text("two"),
        &bash("b3", "echo harmless; touch surprise"),
        &json_text("three"),
    ]);
    t.send("first");
    let pane = t.wait_for("allow bash?");
    assert!(
        pane.contains("always allows this exact command") && pane.contains("timeout 10 s"),
        "{pane}"
    );
    t.keys(&["a"]);
    t.wait_for("one");
    t.send("second");
    let pane = t.wait_for("two");
    assert!(
        !pane.contains("allow bash?"),
        "the same command ran without asking:\n{pane}"
    );
    t.send("third");
    let pane = t.wait_for("allow bash?");
    assert!(pane.contains("touch surprise"), "{pane}");
    t.keys(&["n"]);
    t.wait_for("three");
    assert!(
        !t.file("surprise").exists(),
        "a different command was not allowed by 'always'"
    );
}

#[test]
fn page_up_home_and_end_reach_all_of_a_long_answer() {
    let long: String = (1..=300).map(|i| format!("line number {i}\n\n")).collect();
    let t = Tmux::start(&[&json_text(&long)]);
    t.send("long please");
    t.wait_for("line number 300");
    t.keys(&["PageUp"]);
    let pane = t.wait_for("more (End");
    assert!(!pane.contains("line number 300"), "{pane}");
    t.keys(&["Home"]);
    let pane = t.wait_for("› long please");
    assert!(
        pane.contains("line number 1\n") || pane.contains("line number 1 "),
        "{pane}"
    );
    t.keys(&["End"]);
    let pane = t.wait_until("back at the bottom", |p| {
        p.contains("line number 300") && !p.contains("more (End")
    });
    assert!(!pane.contains("› long please"), "{pane}");
}

#[test]
fn copy_lands_in_a_tmux_buffer_and_export_writes_markdown() {
    let t = Tmux::start(&[&json_text(
        "Use this:\n\n```sh\nls -la /tmp\n```\n\nand **that**.",
    )]);
    t.send("what?");
    t.wait_for("ls -la /tmp");
    t.send("/copy 1");
    t.wait_for("copied code block 1");
    let end = Instant::now() + DEADLINE;
    loop {
        let out = t.tmux(&["show-buffer"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text == "ls -la /tmp\n" {
            break;
        }
        assert!(Instant::now() < end, "tmux buffer: {text:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    t.send("/export out/session.md");
    t.wait_for("cannot write");
    std::fs::create_dir_all(t.file("out")).expect("mkdir");
    t.send("/export out/session.md");
    t.wait_for("exported to");
    let md = std::fs::read_to_string(t.file("out/session.md")).expect("exported");
    assert!(
        md.contains("## You\n\nwhat?") && md.contains("and **that**."),
        "{md}"
    );
}
