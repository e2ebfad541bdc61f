//! End-to-end tests of typing and extensions' chrome in the interactive
//! terminal: the real `zut` in a detached tmux session (private socket),
//! the scripted provider, and the fixture extension
//! `tests/fixtures/tui/chrome` (a `right_bar` plan widget and a panel that
//! lists the `panel_key` frames it got).
//!
//! Every wait polls the pane until a text appears or a deadline passes.

#[path = "common/tmux.rs"]
mod tmux;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tmux::{shell_quote, Pane};

fn chrome_ext() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tui/chrome")
        .to_string_lossy()
        .into_owned()
}

/// One `zut` in its own tmux server, killed on drop. `dir` holds `home`
/// (ZUT_HOME) and `project`, and may outlive one run.
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
    fn start(dir: &Path, size: (u16, u16), term: &str, args: &[&str], script: &[&str]) -> Tmux {
        Tmux::start_env(dir, size, &[("TERM", term)], args, script)
    }

    /// [`Tmux::start`] with `env` (which names `TERM`) for zut.
    fn start_env(
        dir: &Path,
        size: (u16, u16),
        env: &[(&str, &str)],
        args: &[&str],
        script: &[&str],
    ) -> Tmux {
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
            "--script-log".into(),
            shell_quote(&dir.join("requests.jsonl").to_string_lossy()),
        ];
        cmd.extend(args.iter().map(|a| shell_quote(a)));
        let env: Vec<String> = env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_quote(v)))
            .collect();
        let line = format!(
            "cd {} && env ZUT_HOME={} {} {}; echo EXITED:$?; sleep 600",
            shell_quote(&project.to_string_lossy()),
            shell_quote(&home.to_string_lossy()),
            env.join(" "),
            cmd.join(" ")
        );
        Tmux {
            pane: Pane::launch("typing", size, &line),
            dir: dir.to_path_buf(),
        }
    }

    fn quit(&self) {
        self.keys(&["C-c"]);
        self.keys(&["C-c"]);
        self.wait_for("EXITED:0");
    }
}

#[test]
fn history_survives_a_restart_and_ctrl_r_finds_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = [
        r#"{"text":"answer one"}"#,
        r#"{"text":"answer two"}"#,
        r#"{"text":"answer three"}"#,
    ];
    let t = Tmux::start(
        dir.path(),
        (100, 30),
        "xterm-256color",
        &["--no-extensions"],
        &script,
    );
    t.wait_for("Enter to send");
    t.type_text("first prompt alpha");
    t.keys(&["Enter"]);
    t.wait_for("answer one");
    t.type_text("second beta");
    t.keys(&["Enter"]);
    t.wait_for("answer two");
    t.quit();
    drop(t);
    let file = dir.path().join("home/history.jsonl");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file)
        .expect("history file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let t = Tmux::start(
        dir.path(),
        (100, 30),
        "xterm-256color",
        &["--no-extensions"],
        &script,
    );
    t.wait_for("Enter to send");
    t.keys(&["Up"]);
    t.wait_for("› second beta");
    t.keys(&["C-u", "C-r"]);
    t.wait_for("(search history)");
    t.type_text("alpha");
    t.wait_for("› first prompt alpha");
    t.keys(&["Enter"]);
    // The script's next answer goes to the prompt found.
    t.wait_for("answer one");
    let log = std::fs::read_to_string(dir.path().join("requests.jsonl")).expect("log");
    assert!(log.contains("first prompt alpha"), "{log}");
}

#[test]
fn esc_aborts_and_puts_the_queue_back_into_the_editor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Tmux::start(
        dir.path(),
        (100, 30),
        "xterm-256color",
        &["--no-extensions"],
        &[r#"{"delay_ms":20000,"text":"slow"}"#, r#"{"text":"never"}"#],
    );
    t.wait_for("Enter to send");
    t.type_text("go");
    t.keys(&["Enter"]);
    t.wait_for("working");
    t.type_text("later one");
    t.keys(&["Enter"]);
    t.wait_for("queued: later one");
    t.keys(&["Escape"]);
    let pane = t.wait_for("turn aborted");
    let pane = if pane.contains("› later one") {
        pane
    } else {
        t.wait_for("› later one")
    };
    assert!(!pane.contains("queued:"), "{pane}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !t.capture().contains("never"),
        "the queued prompt never started"
    );
}

#[test]
fn a_panel_command_runs_during_a_slow_turn_and_a_paste_is_one_frame() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Tmux::start(
        dir.path(),
        (100, 30),
        "xterm-256color",
        &["--ext", &chrome_ext()],
        &[r#"{"delay_ms":20000,"text":"slow answer"}"#],
    );
    t.wait_for("Phases");
    t.type_text("go");
    t.keys(&["Enter"]);
    t.wait_for("working");
    t.type_text("/keys");
    t.keys(&["Enter"]);
    let pane = t.wait_for("frames: 0");
    assert!(pane.contains("working"), "still in the turn:\n{pane}");
    assert!(!pane.contains("slow answer"), "{pane}");
    t.paste("hunter2 pass");
    let pane = t.wait_for("frames: 1");
    assert!(pane.contains("frame 1: rune hunter2 pass"), "{pane}");
    assert!(!pane.contains("slow answer"), "{pane}");
}

#[test]
fn a_right_bar_plan_is_a_rail_at_120_columns_showing_the_current_phase() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Tmux::start(
        dir.path(),
        (120, 36),
        "xterm-256color",
        &["--ext", &chrome_ext()],
        &[],
    );
    let pane = t.wait_for("▸ 21. current phase");
    let row = pane
        .lines()
        .find(|l| l.contains("▸ 21. current phase"))
        .expect("row");
    let col = row.chars().position(|c| c == '▸').expect("marker");
    assert!(col > 70, "on the right:\n{pane}");
    let editor = pane
        .lines()
        .position(|l| l.starts_with('›'))
        .expect("editor");
    let phase = pane
        .lines()
        .position(|l| l.contains("▸ 21."))
        .expect("phase");
    assert!(phase < editor, "{pane}");
}

#[test]
fn term_linux_draws_ascii_in_sixteen_colours() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Tmux::start(dir.path(), (80, 24), "linux", &["--no-extensions"], &[]);
    let pane = t.wait_for("Enter to send");
    for s in ["─", "›", "●"] {
        assert!(!pane.contains(s), "{s} on a linux console:\n{pane}");
    }
    assert!(pane.contains("----------"), "{pane}");
    assert!(pane.lines().any(|l| l.starts_with('>')), "{pane}");
    let coloured = t.capture_with(&["-e"]);
    assert!(
        !coloured.contains("38;5;") && !coloured.contains("38;2;"),
        "256-colour or RGB sequences:\n{coloured:?}"
    );
}

#[test]
fn an_external_sigint_leaves_the_alternate_screen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Tmux::start(
        dir.path(),
        (80, 24),
        "xterm-256color",
        &["--no-extensions"],
        &[],
    );
    t.wait_for("Enter to send");
    let pid = String::from_utf8_lossy(
        &Command::new("pgrep")
            .args([
                "-f",
                &format!(
                    "{} --provider script --script {}",
                    env!("CARGO_BIN_EXE_zut"),
                    t.dir.join("script.jsonl").display()
                ),
            ])
            .output()
            .expect("pgrep")
            .stdout,
    )
    .lines()
    .next()
    .map(str::to_string)
    .expect("zut's pid");
    Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    let pane = t.wait_for("EXITED:");
    assert!(pane.contains("EXITED:130"), "{pane}");
    assert!(
        !pane.contains("Enter to send"),
        "the alternate screen was left:\n{pane}"
    );
}

#[test]
fn the_terminal_is_usable_while_an_extension_starts_and_a_prompt_waits_for_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gate = dir.path().join("gate");
    let gated = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tui/gated");
    let t = Tmux::start_env(
        dir.path(),
        (100, 30),
        &[
            ("TERM", "xterm-256color"),
            ("ZUT_TEST_GATE", &gate.to_string_lossy()),
            // The gate opens long before this; a pass cannot be a timeout.
            ("ZUT_HELLO_TIMEOUT_MS", "60000"),
        ],
        &["--ext", &gated.to_string_lossy()],
        &[r#"{"text":"the answer"}"#],
    );
    // Drawn, with the editor live, while the extension has not said hello.
    let pane = t.wait_for("starting: gated");
    assert!(pane.contains("Enter to send"), "{pane}");
    t.type_text("use the gated tool");
    t.wait_for("› use the gated tool");
    t.keys(&["Enter"]);
    t.wait_for("working");
    // The prompt waits for the extension: nothing has reached the model.
    assert!(!dir.path().join("requests.jsonl").exists());
    std::fs::write(&gate, "").expect("open the gate");
    t.wait_for("the answer");
    t.wait_gone("starting: gated");
    let log = std::fs::read_to_string(dir.path().join("requests.jsonl")).expect("log");
    assert!(
        log.contains("gated_tool"),
        "the first request lists the tool: {log}"
    );
    t.quit();
}

#[test]
fn quitting_while_an_extension_starts_ends_it_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gate = dir.path().join("never-opened");
    let gated = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tui/gated");
    let t = Tmux::start_env(
        dir.path(),
        (100, 30),
        &[
            ("TERM", "xterm-256color"),
            ("ZUT_TEST_GATE", &gate.to_string_lossy()),
            ("ZUT_HELLO_TIMEOUT_MS", "60000"),
        ],
        &["--ext", &gated.to_string_lossy()],
        &[],
    );
    t.wait_for("starting: gated");
    let asked = std::time::Instant::now();
    t.quit();
    // Well inside the 60 s hello deadline: the load was abandoned.
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "{:?}",
        asked.elapsed()
    );
}
