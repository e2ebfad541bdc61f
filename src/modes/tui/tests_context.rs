//! Context from the keyboard on a `TestBackend`: `@path` Tab completion
//! over the project's files, the attachment at send, and `!command`.

use super::app::{App, AppConfig, Entry, Intent, Then};
use crate::core::frontend::{CoreState, Submitted};
use crate::events::Event;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::fs;
use std::path::Path;
use std::time::Instant;

/// A project with a `.gitignore`d build directory and log files.
fn project() -> tempfile::TempDir {
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path();
    fs::create_dir_all(root.join(".git")).expect("mkdir");
    fs::create_dir_all(root.join("src/modes")).expect("mkdir");
    fs::create_dir_all(root.join("build")).expect("mkdir");
    fs::write(root.join(".gitignore"), "build/\n*.log\n").expect("write");
    fs::write(root.join("README.md"), "# readme\n").expect("write");
    fs::write(root.join("src/main.rs"), "fn main() {}\n").expect("write");
    fs::write(root.join("src/modes/json.rs"), "// json\n").expect("write");
    fs::write(root.join("src/modes/print.rs"), "// print\n").expect("write");
    fs::write(root.join("build/main.o"), "obj").expect("write");
    fs::write(root.join("rebuild.log"), "log").expect("write");
    t
}

fn app_in(root: &Path) -> App {
    let mut a = App::new(
        AppConfig {
            project: Some(root.to_path_buf()),
            ..AppConfig::default()
        },
        Instant::now(),
    );
    a.set_state(
        CoreState {
            provider: "script".into(),
            ..Default::default()
        },
        Then::Nothing,
    );
    a
}

fn press(a: &mut App, code: KeyCode) -> Vec<Intent> {
    a.on_key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(a: &mut App, s: &str) {
    for c in s.chars() {
        press(a, KeyCode::Char(c));
    }
}

fn screen(a: &App) -> String {
    let (w, h) = (100, 30);
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("backend");
    t.draw(|f| a.draw(f)).expect("draw");
    let buf = t.backend().buffer().clone();
    (0..h)
        .map(|y| {
            let row: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
            row.trim_end().to_string() + "\n"
        })
        .collect()
}

#[test]
fn tab_completes_a_unique_file() {
    let p = project();
    let mut a = app_in(p.path());
    typed(&mut a, "look at @src/ma");
    assert!(press(&mut a, KeyCode::Tab).is_empty());
    assert_eq!(a.editor_text(), "look at @src/main.rs ");
    // Not a prefix of any path: a part of one is enough when it is unique.
    a.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    typed(&mut a, "@READ");
    press(&mut a, KeyCode::Tab);
    assert_eq!(a.editor_text(), "@README.md ");
    assert!(screen(&a).contains("› @README.md"), "{}", screen(&a));
}

#[test]
fn tab_with_several_matches_completes_their_common_part_and_lists_them() {
    let p = project();
    let mut a = app_in(p.path());
    typed(&mut a, "@src/m");
    press(&mut a, KeyCode::Tab);
    assert_eq!(a.editor_text(), "@src/m", "main.rs and modes/ share only m");
    let s = screen(&a);
    for f in ["src/main.rs", "src/modes/json.rs", "src/modes/print.rs"] {
        assert!(s.contains(f), "{f} listed:\n{s}");
    }
    assert!(s.contains("3 files match @src/m"), "{s}");
    typed(&mut a, "o");
    press(&mut a, KeyCode::Tab);
    assert_eq!(a.editor_text(), "@src/modes/");
    typed(&mut a, "p");
    press(&mut a, KeyCode::Tab);
    assert_eq!(a.editor_text(), "@src/modes/print.rs ");
}

#[test]
fn gitignored_files_are_not_offered() {
    let p = project();
    let mut a = app_in(p.path());
    typed(&mut a, "@build/");
    press(&mut a, KeyCode::Tab);
    assert_eq!(a.editor_text(), "@build/");
    assert!(screen(&a).contains("no project file matches @build/"));
    a.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    typed(&mut a, "@rebuild");
    press(&mut a, KeyCode::Tab);
    assert_eq!(a.editor_text(), "@rebuild", "rebuild.log is ignored");
    // Everything offered for a bare @ is outside the ignored paths.
    a.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    typed(&mut a, "@");
    press(&mut a, KeyCode::Tab);
    let s = screen(&a);
    assert!(s.contains("5 files match @"), "{s}");
    assert!(!s.contains("main.o") && !s.contains("rebuild.log"), "{s}");
}

#[test]
fn tab_outside_a_mention_does_nothing() {
    let p = project();
    let mut a = app_in(p.path());
    typed(&mut a, "src/ma");
    press(&mut a, KeyCode::Tab);
    assert_eq!(a.editor_text(), "src/ma");
}

#[test]
fn sending_attaches_and_the_transcript_shows_the_prompt_as_typed() {
    let p = project();
    let mut a = app_in(p.path());
    typed(&mut a, "explain @src/main.rs and @src");
    let out = press(&mut a, KeyCode::Enter);
    let expected = "explain @src/main.rs and @src\n\n[attached: src/main.rs (1 line)]\n```rs\nfn main() {}\n```";
    assert_eq!(out, [Intent::Prompt(expected.into())]);
    a.on_submitted(expected, Submitted::Started);
    a.on_event(Event::UserMessage {
        text: expected.into(),
    });
    let users: Vec<&Entry> = a
        .chat()
        .iter()
        .filter(|e| matches!(e, Entry::User(_) | Entry::Info(_)))
        .collect();
    assert_eq!(
        users,
        [
            &Entry::Info("not attached: @src: it is a directory, not a file".into()),
            &Entry::User("explain @src/main.rs and @src\n[attached: src/main.rs (1 line)]".into()),
        ]
    );
    let s = screen(&a);
    assert!(!s.contains("fn main"), "the file's text is not drawn:\n{s}");
    // The history keeps the prompt as typed.
    press(&mut a, KeyCode::Up);
    assert_eq!(a.editor_text(), "explain @src/main.rs and @src");
}

#[test]
fn a_queued_prompt_with_an_attachment_is_shown_and_taken_back_as_typed() {
    let p = project();
    let mut a = app_in(p.path());
    a.on_event(Event::TurnStart { step: 1 });
    typed(&mut a, "then @README.md");
    let out = press(&mut a, KeyCode::Enter);
    let [Intent::Prompt(sent)] = out.as_slice() else {
        panic!("{out:?}");
    };
    assert!(sent.contains("# readme"));
    a.on_submitted(sent, Submitted::Queued { position: 1 });
    assert!(screen(&a).contains("then @README.md"));
    press(&mut a, KeyCode::Up);
    assert_eq!(a.editor_text(), "then @README.md");
}

#[test]
fn bang_runs_a_shell_command_and_a_bare_bang_is_refused() {
    let p = project();
    let mut a = app_in(p.path());
    typed(&mut a, "!echo hi");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        [Intent::Shell("echo hi".into())]
    );
    typed(&mut a, "! ");
    assert!(press(&mut a, KeyCode::Enter).is_empty());
    assert!(screen(&a).contains("type a shell command after !"));
    // Queued behind a turn: said so.
    a.on_shell_submitted("ls", Submitted::Queued { position: 1 });
    assert!(screen(&a).contains("!ls runs after the turn"));
}

#[test]
fn help_names_at_path_and_bang_command() {
    let p = project();
    let mut a = app_in(p.path());
    typed(&mut a, "/help");
    press(&mut a, KeyCode::Enter);
    let lines = a.sheet.as_ref().expect("the help sheet").lines.join("\n");
    assert!(lines.contains("@path "), "{lines}");
    assert!(lines.contains("!command "), "{lines}");
    assert!(lines.contains("(terminal only)"), "{lines}");
}
