//! End-to-end tests of the interactive terminal: the real `zut` binary in a
//! detached tmux session (100×30), driven with `send-keys` and read with
//! `capture-pane`, with the scripted provider and a fixture extension
//! (`tests/fixtures/tui/ui`) that sets a status item and a widget and owns
//! a key-driven panel.
//!
//! Every wait polls the pane until a text appears or a deadline passes;
//! the shell that ran `zut` then prints its exit status and whether the
//! terminal is back in canonical mode, which is how "restored" is checked.

#[path = "common/tmux.rs"]
mod tmux;

use std::path::{Path, PathBuf};
use tmux::{shell_quote, Pane};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tui")
}

/// One `zut` in its own tmux server (private socket), killed on drop.
struct Tmux {
    pane: Pane,
    _dir: tempfile::TempDir,
    dir: PathBuf,
}

impl std::ops::Deref for Tmux {
    type Target = Pane;
    fn deref(&self) -> &Pane {
        &self.pane
    }
}

impl Tmux {
    /// Starts `zut ARGS` in a detached 100×30 session, with a fresh
    /// ZUT_HOME and project in a temporary directory, and `script` as the
    /// scripted provider's lines.
    fn start(args: &[&str], script: &[&str]) -> Tmux {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let home = dir.join("home");
        let project = dir.join("project");
        std::fs::create_dir_all(&home).expect("mkdir");
        std::fs::create_dir_all(&project).expect("mkdir");
        let script_path = dir.join("script.jsonl");
        std::fs::write(&script_path, script.join("\n") + "\n").expect("script");
        let mut cmd = vec![
            shell_quote(env!("CARGO_BIN_EXE_zut")),
            "--provider".into(),
            "script".into(),
            "--script".into(),
            shell_quote(&script_path.to_string_lossy()),
        ];
        cmd.extend(args.iter().map(|a| shell_quote(a)));
        // After zut: its status, then whether the tty is canonical again.
        let line = format!(
            "cd {} && env ZUT_HOME={} TERM=xterm-256color {}; echo EXITED:$?; stty -a | tr ' ;' '\\n\\n' | grep -x -- '-*icanon' | sed 's/^/MODE:/'; sleep 600",
            shell_quote(&project.to_string_lossy()),
            shell_quote(&home.to_string_lossy()),
            cmd.join(" ")
        );
        Tmux {
            pane: Pane::launch("tui", (100, 30), &line),
            _dir: tmp,
            dir,
        }
    }

    /// Waits for zut to exit; asserts the status and a restored terminal.
    fn assert_exited(&self, status: i32) {
        let pane = self.wait_for("MODE:");
        assert!(pane.contains(&format!("EXITED:{status}")), "{pane}");
        assert!(
            pane.contains("MODE:icanon"),
            "terminal left in raw mode:\n{pane}"
        );
        assert!(
            !pane.contains("› "),
            "the alternate screen was left:\n{pane}"
        );
    }
}

fn ui_ext() -> String {
    fixtures().join("ui").to_string_lossy().into_owned()
}

/// Starts with the fixture extension and waits for the footer and its chrome.
fn with_ui(script: &[&str]) -> Tmux {
    let t = Tmux::start(&["--ext", &ui_ext()], script);
    t.wait_for("[ui] ui ready");
    t
}

#[test]
fn ctrl_d_on_an_empty_editor_quits_with_zero_and_restores_the_terminal() {
    let t = Tmux::start(&["--no-extensions"], &[]);
    t.wait_for("script");
    t.keys(&["C-d"]);
    t.assert_exited(0);
}

#[test]
fn ctrl_c_twice_and_slash_quit_leave_cleanly() {
    let t = Tmux::start(&["--no-extensions"], &[]);
    t.wait_for("script");
    t.keys(&["C-c"]);
    t.wait_for("press Ctrl+C again to quit");
    t.keys(&["C-c"]);
    t.assert_exited(0);

    let t = Tmux::start(&["--no-extensions"], &[]);
    t.wait_for("script");
    t.type_text("/quit");
    t.keys(&["Enter"]);
    t.assert_exited(0);
}

#[test]
fn status_items_and_widgets_are_visible_above_the_editor() {
    let t = with_ui(&[]);
    let pane = t.wait_for("step 1 of 3");
    let row = |needle: &str| {
        pane.lines()
            .position(|l| l.contains(needle))
            .unwrap_or(usize::MAX)
    };
    assert!(row("[ui] Progress") < row("step 1 of 3"), "{pane}");
    assert!(
        row("step 1 of 3") < row("[ui] ui ready"),
        "widgets come before statuses:\n{pane}"
    );
    assert!(
        row("[ui] ui ready") < row("─────"),
        "chrome sits above the editor:\n{pane}"
    );
}

#[test]
fn a_panel_is_driven_by_keys_and_esc_closes_it() {
    let t = with_ui(&[]);
    t.type_text("/todos");
    t.keys(&["Enter"]);
    t.wait_for("▸ □ one");
    t.keys(&["Down"]);
    t.wait_for("▸ □ two");
    t.type_text("x");
    t.wait_for("▸ ✓ two");
    t.keys(&["Escape"]);
    let pane = t.wait_for("[ui] panel closed");
    assert!(!pane.contains("Todos"), "{pane}");
    t.keys(&["C-d"]);
    t.assert_exited(0);
}

#[test]
fn confirmation_y_runs_the_tool_and_n_denies_it() {
    let t = Tmux::start(
        &["--no-extensions"],
        &[
            r#"{"tool_calls":[{"id":"c1","name":"bash","args":{"command":"echo ran-once","timeout":10}}]}"#,
            r#"{"text":"first done"}"#,
            r#"{"tool_calls":[{"id":"c2","name":"bash","args":{"command":"echo never-ran","timeout":10}}]}"#,
            r#"{"text":"second done"}"#,
        ],
    );
    t.wait_for("script");
    t.type_text("go");
    t.keys(&["Enter"]);
    t.wait_for("allow bash?");
    t.type_text("y");
    t.wait_for("first done");
    t.wait_for("ran-once");
    t.type_text("again");
    t.keys(&["Enter"]);
    t.wait_for("allow bash?");
    t.type_text("n");
    let pane = t.wait_for("second done");
    assert!(!pane.contains("never-ran\n"), "{pane}");
    assert!(
        pane.contains("✗"),
        "the denied call shows as an error:\n{pane}"
    );
}

#[test]
fn reload_ext_reports_on_the_status_line() {
    let t = with_ui(&[]);
    t.type_text("/reload-ext");
    t.keys(&["Enter"]);
    t.wait_for("reloaded: 1 stopped, 1 loaded (1 ready)");
    t.wait_for("[ui] ui ready");
    // The temporary status goes by itself.
    t.wait_gone("reloaded:");
}

#[test]
fn a_broken_extension_error_stays_in_the_chat() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&broken).expect("mkdir");
    std::fs::write(
        broken.join("extension.json"),
        r#"{"name":"broken","exec":"./missing"}"#,
    )
    .expect("write");
    let t = Tmux::start(&["--ext", &broken.to_string_lossy()], &[]);
    t.wait_for("✖ broken");
    let _ = &t.dir;
}
