//! The terminal UI against a recording fake core, drawn on ratatui's
//! `TestBackend`. The fake only records calls; the UI is what is tested.

use super::app::{Intent, Then};
use super::theme::ColorDepth;
use super::*;
use crate::agent::Decision;
use crate::core::frontend::{
    Change, CommandSummary, CoreState, SessionSummary, SkillSummary, Submitted, ToolSummary,
};
use crate::events::{Event, ReloadError};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use std::sync::Mutex;
use zut_ext::wire::{ContentBlock, Panel};

/// Records every call; answers `prompt` with `answer`.
#[derive(Default)]
struct FakeCore {
    calls: Mutex<Vec<String>>,
    state: Mutex<CoreState>,
    queue: Mutex<bool>,
}

impl FakeCore {
    fn rec(&self, s: String) {
        self.calls.lock().expect("lock").push(s);
    }
    fn calls(&self) -> Vec<String> {
        self.calls.lock().expect("lock").clone()
    }
}

impl Core for FakeCore {
    fn prompt(&self, text: String) -> Submitted {
        self.rec(format!("prompt {text}"));
        if *self.queue.lock().expect("lock") {
            Submitted::Queued { position: 1 }
        } else {
            Submitted::Started
        }
    }
    fn command(&self, line: String) -> Submitted {
        self.rec(format!("command {line}"));
        Submitted::Started
    }
    fn shell(&self, command: String) -> Submitted {
        self.rec(format!("shell {command}"));
        Submitted::Started
    }
    fn abort(&self, drop_queued: bool) {
        self.rec(format!("abort {drop_queued}"));
    }
    fn confirm(&self, request_id: u64, decision: Decision) {
        self.rec(format!("confirm {request_id} {decision:?}"));
    }
    fn panel_key(&self, extension: &str, panel_id: &str, key: &str, text: Option<String>) {
        self.rec(format!(
            "panel_key {extension} {panel_id} {key} {}",
            text.unwrap_or_default()
        ));
    }
    fn panel_close(&self, extension: &str, panel_id: &str) {
        self.rec(format!("panel_close {extension} {panel_id}"));
    }
    fn change(&self, change: Change) {
        self.rec(match change {
            Change::Reload => "reload".into(),
            Change::NewSession => "new_session".into(),
            Change::Fork(at) => format!("fork {at:?}"),
            Change::Switch(id) => format!("switch {id}"),
            Change::Compact(instructions) => format!("compact {instructions:?}"),
            Change::SetModel(model) => format!("set_model {model}"),
        });
    }
    fn state(&self) -> CoreState {
        self.state.lock().expect("lock").clone()
    }
    fn list_sessions(&self) {
        self.rec("list_sessions".into());
    }
    fn settled(&self) -> crossbeam_channel::Receiver<()> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let _ = tx.send(());
        rx
    }
    fn shutdown(&self) {
        self.rec("shutdown".into());
    }
}

fn state() -> CoreState {
    CoreState {
        provider: "script".into(),
        model: "scripted-model".into(),
        session: Some(SessionSummary {
            id: "s-root".into(),
            ..Default::default()
        }),
        commands: vec![CommandSummary {
            name: "weather".into(),
            description: "forecast for a city".into(),
            extension: "wx".into(),
        }],
        tools: vec![ToolSummary {
            name: "forecast".into(),
            description: "d".into(),
            extension: Some("wx".into()),
        }],
        skills: vec![SkillSummary {
            name: "deploy".into(),
            description: "ship it".into(),
            source: "/skills".into(),
        }],
        sessions: vec![
            SessionSummary {
                id: "s-root".into(),
                title: "first prompt".into(),
                ..Default::default()
            },
            SessionSummary {
                id: "s-branch".into(),
                parent_id: Some("s-root".into()),
                fork_point: Some(2),
                title: "a branch".into(),
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

fn new_app(depth: ColorDepth) -> App {
    let mut app = App::new(
        AppConfig {
            depth,
            ..AppConfig::default()
        },
        Instant::now(),
    );
    app.set_state(state(), Then::Nothing);
    app
}

fn app() -> App {
    new_app(ColorDepth::Xterm256)
}

fn terminal(w: u16, h: u16) -> Terminal<TestBackend> {
    Terminal::new(TestBackend::new(w, h)).expect("test backend")
}

/// The screen as text, one line per row, trailing spaces trimmed.
fn screen_of(app: &App, w: u16, h: u16) -> String {
    let mut t = terminal(w, h);
    t.draw(|f| app.draw(f)).expect("draw");
    let buf = t.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        let mut line = String::new();
        for x in 0..w {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn screen(app: &App) -> String {
    screen_of(app, 100, 30)
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn type_text(app: &mut App, s: &str) {
    for c in s.chars() {
        assert!(app.on_key(key(KeyCode::Char(c))).is_empty());
    }
}

fn notify(ext: &str, level: &str, message: &str) -> Event {
    Event::ExtNotify {
        extension: ext.into(),
        level: level.into(),
        message: message.into(),
    }
}

fn panel(id: &str, title: &str, lines: &[&str], footer: &str) -> Panel {
    Panel {
        id: id.into(),
        title: title.into(),
        lines: lines.iter().map(|s| s.to_string()).collect(),
        footer: footer.into(),
    }
}

// ----- notes -----

#[test]
fn notes_show_under_the_transcript_with_their_owner_and_split_lines() {
    let mut a = app();
    a.on_event(Event::UserMessage {
        text: "hello".into(),
    });
    a.on_event(notify("wx", "warn", "first\nsecond"));
    a.on_event(notify("wx", "info", "   "));
    let s = screen(&a);
    let user = s.find("› hello").expect("user line");
    let first = s.find("[wx] first").expect("first note");
    let second = s.find("[wx] second").expect("second note");
    assert!(user < first && first < second, "{s}");
    assert_eq!(a.notes().len(), 2, "empty message adds nothing");
}

#[test]
fn notes_clear_on_esc_on_the_next_prompt_and_on_slash_clear() {
    let mut a = app();
    a.on_event(notify("wx", "info", "one"));
    assert!(
        a.on_key(key(KeyCode::Esc)).is_empty(),
        "esc with notes only clears them"
    );
    assert!(a.notes().is_empty());

    a.on_event(notify("wx", "info", "two"));
    type_text(&mut a, "next");
    assert_eq!(
        a.on_key(key(KeyCode::Enter)),
        vec![Intent::Prompt("next".into())]
    );
    assert!(a.notes().is_empty());

    a.on_event(notify("wx", "info", "three"));
    type_text(&mut a, "/clear");
    assert!(a.on_key(key(KeyCode::Enter)).is_empty());
    assert!(a.notes().is_empty());
    assert!(!screen(&a).contains("three"));
}

#[test]
fn clear_notes_removes_only_that_extensions_notes() {
    let mut a = app();
    a.on_event(notify("wx", "info", "mine"));
    a.on_event(notify("todo", "info", "theirs"));
    a.on_event(Event::ExtClearNotes {
        extension: "wx".into(),
    });
    let s = screen(&a);
    assert!(!s.contains("mine"), "{s}");
    assert!(s.contains("[todo] theirs"), "{s}");
}

#[test]
fn display_is_a_note_shown_once_even_with_its_command_result() {
    let mut a = app();
    a.on_event(Event::ExtDisplay {
        extension: "wx".into(),
        text: "sunny".into(),
    });
    a.on_event(Event::CommandResult {
        name: "weather".into(),
        action: "display".into(),
        text: "sunny".into(),
    });
    assert_eq!(a.notes().len(), 1);
    assert!(screen(&a).contains("[wx] sunny"));
    assert!(a.chat().is_empty(), "display never enters the transcript");
}

#[test]
fn control_sequences_from_extensions_never_reach_the_screen() {
    let mut a = app();
    a.on_event(notify(
        "wx",
        "info",
        "\u{1b}[2J\u{1b}]0;pwned\u{7}clean\u{1b}[31m text",
    ));
    a.on_event(Event::ExtStatus {
        extension: "wx".into(),
        key: "k".into(),
        level: "info".into(),
        text: "st\u{1b}[1Aatus".into(),
    });
    let s = screen(&a);
    assert!(s.contains("[wx] clean text"), "{s}");
    assert!(s.contains("[wx] status"), "{s}");
    assert!(!s.contains('\u{1b}') && !s.contains("pwned"));
}

// ----- status items and widgets -----

fn status(ext: &str, key: &str, text: &str) -> Event {
    Event::ExtStatus {
        extension: ext.into(),
        key: key.into(),
        level: "success".into(),
        text: text.into(),
    }
}

fn widget(ext: &str, id: &str, title: &str, lines: &[&str]) -> Event {
    Event::ExtWidget {
        extension: ext.into(),
        id: id.into(),
        position: "above_input".into(),
        title: title.into(),
        lines: lines.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn widgets_then_statuses_sit_above_the_editor_sorted_by_extension() {
    let mut a = app();
    a.on_event(status("zz", "a", "2/4 tasks"));
    a.on_event(widget(
        "wx",
        "progress",
        "Progress",
        &["Indexing files", "12/20"],
    ));
    a.on_event(status("aa", "b", "ok\nmore"));
    let s = screen(&a);
    let rows: Vec<&str> = s.lines().collect();
    let at = |needle: &str| {
        rows.iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("{needle} missing:\n{s}"))
    };
    let editor = at("────");
    assert!(at("  [wx] Progress") < at("  Indexing files"));
    assert!(at("  12/20") < at("  [aa] ok ↩ more"));
    assert!(at("  [aa] ok") < at("  [zz] 2/4 tasks"));
    assert!(at("  [zz] 2/4 tasks") < editor);

    // Whitespace-only text deletes a status item; widget_clear deletes a widget.
    a.on_event(status("zz", "a", "  "));
    a.on_event(Event::ExtWidgetClear {
        extension: "wx".into(),
        id: "progress".into(),
    });
    let s = screen(&a);
    assert!(!s.contains("2/4") && !s.contains("Progress"), "{s}");
}

#[test]
fn chrome_is_bounded_with_truncation_markers() {
    let mut a = app();
    let lines: Vec<String> = (0..20).map(|i| format!("line {i}")).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    a.on_event(widget("wx", "big", "Big", &refs));
    for i in 0..9 {
        a.on_event(status("wx", &format!("k{i}"), &format!("status {i}")));
    }
    let s = screen_of(&a, 100, 60);
    let widget_rows = s
        .lines()
        .filter(|r| r.starts_with("  line ") || r.contains("[wx] Big"))
        .count();
    assert_eq!(widget_rows, 11, "{s}");
    assert!(
        s.contains("  ... 10 more line(s) of Big cut to fit ..."),
        "{s}"
    );
    let status_rows = s.lines().filter(|r| r.contains("[wx] status")).count();
    assert_eq!(status_rows, 5, "{s}");
    assert!(s.contains("  ... extension statuses truncated ..."));
}

#[test]
fn chrome_clear_drops_only_that_extensions_items_and_panel() {
    let mut a = app();
    a.on_event(status("wx", "a", "wx status"));
    a.on_event(widget("wx", "w", "WxWidget", &["x"]));
    a.on_event(status("todo", "a", "todo status"));
    a.on_event(Event::ExtOpenPanel {
        extension: "wx".into(),
        panel: panel("p", "Wx panel", &["a"], ""),
    });
    a.on_event(Event::ExtChromeClear {
        extension: "wx".into(),
    });
    let s = screen(&a);
    assert!(
        !s.contains("wx status") && !s.contains("WxWidget") && !s.contains("Wx panel"),
        "{s}"
    );
    assert!(s.contains("[todo] todo status"));
}

// ----- panels -----

#[test]
fn panel_draws_and_sends_keys_with_the_spec_names_to_its_owner() {
    let mut a = app();
    a.on_event(Event::ExtOpenPanel {
        extension: "todo".into(),
        panel: panel(
            "todos",
            "Todos",
            &["▸ □ ship panel api", "  ✓ persist state"],
            "↑/↓ navigate - esc close",
        ),
    });
    let s = screen(&a);
    assert!(
        s.contains("Todos") && s.contains("□ ship panel api") && s.contains("✓ persist state"),
        "{s}"
    );
    assert!(s.contains("↑/↓ navigate - esc close"));

    let pk = |key: &str, text: Option<&str>| Intent::PanelKey {
        extension: "todo".into(),
        panel_id: "todos".into(),
        key: key.into(),
        text: text.map(str::to_string),
    };
    assert_eq!(a.on_key(key(KeyCode::Down)), vec![pk("down", None)]);
    assert_eq!(a.on_key(key(KeyCode::Up)), vec![pk("up", None)]);
    assert_eq!(a.on_key(key(KeyCode::Enter)), vec![pk("enter", None)]);
    assert_eq!(a.on_key(key(KeyCode::PageDown)), vec![pk("pagedown", None)]);
    assert_eq!(
        a.on_key(key(KeyCode::Char('x'))),
        vec![pk("rune", Some("x"))]
    );
    assert_eq!(a.on_key(ctrl('x')), vec![pk("unknown", None)]);
    assert_eq!(a.editor_text(), "", "keys go to the panel, not the editor");

    // A render from the owner replaces lines; from anyone else it is ignored.
    a.on_event(Event::ExtPanelRender {
        extension: "todo".into(),
        panel: panel(
            "todos",
            "",
            &["  □ ship panel api", "▸ ✓ persist state"],
            "",
        ),
    });
    a.on_event(Event::ExtPanelRender {
        extension: "other".into(),
        panel: panel("todos", "Hijack", &["nope"], ""),
    });
    let s = screen(&a);
    assert!(
        s.contains("Todos") && !s.contains("Hijack") && !s.contains("navigate"),
        "{s}"
    );

    assert_eq!(
        a.on_key(key(KeyCode::Esc)),
        vec![Intent::PanelClose {
            extension: "todo".into(),
            panel_id: "todos".into()
        }]
    );
    assert!(a.panel().is_none());
    assert!(!screen(&a).contains("Todos"));
}

#[test]
fn panel_close_from_the_owner_closes_and_a_new_panel_replaces_the_old() {
    let mut a = app();
    a.on_event(Event::ExtOpenPanel {
        extension: "a".into(),
        panel: panel("p1", "First", &["x"], ""),
    });
    a.on_event(Event::ExtOpenPanel {
        extension: "b".into(),
        panel: panel("p2", "Second", &["y"], ""),
    });
    let s = screen(&a);
    assert!(s.contains("Second") && !s.contains("First"));
    a.on_event(Event::ExtPanelClose {
        extension: "a".into(),
        panel_id: "p1".into(),
    });
    assert!(
        a.panel().is_some(),
        "a stale owner cannot close the visible panel"
    );
    a.on_event(Event::ExtPanelClose {
        extension: "b".into(),
        panel_id: "p2".into(),
    });
    assert!(a.panel().is_none());
}

#[test]
fn panel_keys_reach_the_core_through_the_loop_executor() {
    let core = FakeCore::default();
    let mut a = app();
    a.on_event(Event::ExtOpenPanel {
        extension: "todo".into(),
        panel: panel("todos", "Todos", &["a"], ""),
    });
    let mut bell = || {};
    let mut save = |_: &App| {};
    for k in [
        key(KeyCode::Char('a')),
        key(KeyCode::Down),
        key(KeyCode::Esc),
    ] {
        let intents = a.on_key(k);
        assert_eq!(execute(&mut a, &core, intents, &mut bell, &mut save), None);
    }
    assert_eq!(
        core.calls(),
        vec![
            "panel_key todo todos rune a",
            "panel_key todo todos down ",
            "panel_close todo todos"
        ]
    );
}

#[test]
fn esc_without_a_panel_aborts_a_running_turn_so_an_interactive_tool_is_cancelled() {
    let mut a = app();
    a.on_event(Event::TurnStart { step: 1 });
    a.on_event(Event::ExtOpenPanel {
        extension: "ask".into(),
        panel: panel("q", "Question", &["yes?"], ""),
    });
    // First Esc closes the panel, the second aborts the turn.
    assert!(matches!(
        a.on_key(key(KeyCode::Esc)).as_slice(),
        [Intent::PanelClose { .. }]
    ));
    assert_eq!(a.on_key(key(KeyCode::Esc)), vec![Intent::AbortAll]);
}

// ----- confirmation dialog -----

fn confirm_event(id: u64) -> Event {
    Event::ConfirmationRequested {
        request_id: id,
        tool_id: format!("t{id}"),
        tool_name: "bash".into(),
        preview: "rm -rf build".into(),
    }
}

#[test]
fn confirmation_dialog_answers_y_a_n_and_esc() {
    let mut a = app();
    let out = a.on_event(confirm_event(7));
    assert_eq!(
        out,
        vec![Intent::Bell],
        "a waiting confirmation rings when alerts are on"
    );
    let s = screen(&a);
    assert!(
        s.contains("allow bash?")
            && s.contains("rm -rf build")
            && s.contains("[a] always allows the tool bash this session"),
        "{s}"
    );
    assert!(
        a.on_key(key(KeyCode::Char('q'))).is_empty(),
        "other keys do nothing"
    );
    assert_eq!(
        a.on_key(key(KeyCode::Char('y'))),
        vec![Intent::Confirm(7, Decision::Allow)]
    );
    assert!(!screen(&a).contains("allow bash?"));

    for (id, k, d) in [
        (8, KeyCode::Char('a'), Decision::Always),
        (9, KeyCode::Char('n'), Decision::Deny),
        (10, KeyCode::Esc, Decision::Deny),
    ] {
        a.on_event(confirm_event(id));
        assert!(a.on_key(key(k)).is_empty(), "no answer before it is drawn");
        screen(&a);
        assert_eq!(a.on_key(key(k)), vec![Intent::Confirm(id, d)]);
    }
}

#[test]
fn a_call_waiting_for_its_answer_says_so_not_running() {
    let mut a = app();
    a.on_event(Event::UserMessage { text: "go".into() });
    a.on_event(Event::ToolCall {
        id: "t7".into(),
        name: "bash".into(),
        args: serde_json::json!({"command": "rm -rf build"}),
    });
    a.on_event(confirm_event(7));
    let s = screen(&a);
    assert!(
        s.contains("⎿ waiting for your answer…") && !s.contains("running…"),
        "{s}"
    );
    screen(&a);
    a.on_key(key(KeyCode::Char('y')));
    let s = screen(&a);
    assert!(
        s.contains("⎿ running…") && !s.contains("waiting for"),
        "{s}"
    );
}

#[test]
fn confirmations_are_answered_in_order_and_take_priority_over_a_panel() {
    let mut a = app();
    a.on_event(Event::ExtOpenPanel {
        extension: "todo".into(),
        panel: panel("p", "Todos", &["a"], ""),
    });
    a.on_event(confirm_event(1));
    a.on_event(confirm_event(2));
    assert!(screen(&a).contains("(+1 waiting)"));
    assert_eq!(
        a.on_key(key(KeyCode::Char('n'))),
        vec![Intent::Confirm(1, Decision::Deny)]
    );
    screen(&a);
    assert_eq!(
        a.on_key(key(KeyCode::Char('y'))),
        vec![Intent::Confirm(2, Decision::Allow)]
    );
    assert!(matches!(
        a.on_key(key(KeyCode::Down)).as_slice(),
        [Intent::PanelKey { .. }]
    ));
}

// ----- reload and load errors -----

#[test]
fn reload_errors_stay_in_the_chat_and_the_status_goes_after_five_seconds() {
    let t0 = Instant::now();
    let mut a = app();
    a.tick(t0);
    a.on_event(Event::ExtError {
        extension: "broken".into(),
        message: "exited before hello".into(),
    });
    type_text(&mut a, "/reload-ext");
    assert_eq!(
        a.on_key(key(KeyCode::Enter)),
        vec![Intent::Change(Change::Reload)]
    );
    assert!(screen(&a).contains("reloading extensions"));
    a.on_event(Event::Reload {
        stopped: 2,
        loaded: 2,
        ready: 1,
        errors: vec![ReloadError {
            extension: "broken".into(),
            message: "exited before hello".into(),
        }],
    });
    let s = screen(&a);
    assert!(
        s.contains(
            "reloaded: 2 stopped, 2 loaded (1 ready), 1 error(s): broken: exited before hello"
        ),
        "{s}"
    );
    assert_eq!(
        s.matches("✖ broken: exited before hello").count(),
        1,
        "listed once: {s}"
    );
    assert!(a.chat().is_empty(), "errors never enter the transcript");

    assert!(!a.tick(t0 + Duration::from_secs(4)));
    assert!(screen(&a).contains("reloaded:"));
    assert!(a.tick(t0 + RELOAD_STATUS_TTL + Duration::from_millis(1)));
    let s = screen(&a);
    assert!(!s.contains("reloaded:"), "{s}");
    assert!(
        s.contains("✖ broken: exited before hello"),
        "the chat copy stays: {s}"
    );

    a.on_event(Event::Reload {
        stopped: 2,
        loaded: 2,
        ready: 2,
        errors: vec![],
    });
    let s = screen(&a);
    assert!(s.contains("reloaded: 2 stopped, 2 loaded (2 ready)"));
    assert!(
        !s.contains("✖ broken"),
        "a clean reload clears the list: {s}"
    );
}

#[test]
fn slash_clear_drops_load_errors() {
    let mut a = app();
    a.on_event(Event::ExtError {
        extension: "broken".into(),
        message: "bad manifest".into(),
    });
    assert!(screen(&a).contains("✖ broken: bad manifest"));
    assert!(
        screen(&a).contains("to stop loading it: zut ext disable broken"),
        "{}",
        screen(&a)
    );
    type_text(&mut a, "/clear");
    a.on_key(key(KeyCode::Enter));
    assert!(a.load_errors().is_empty());
}

// ----- sizes -----

fn busy_app() -> App {
    let mut a = app();
    type_text(&mut a, "/");
    a.on_event(Event::ExtError {
        extension: "broken".into(),
        message: "a long error message that has to wrap over several rows of a narrow terminal"
            .into(),
    });
    for i in 0..30 {
        a.on_event(Event::UserMessage {
            text: format!("question {i} with some words"),
        });
        a.on_event(Event::TextDelta {
            delta: "answer ".repeat(30),
        });
        a.on_event(Event::ToolCall {
            id: format!("c{i}"),
            name: "forecast".into(),
            args: serde_json::json!({"city": "Berlin"}),
        });
    }
    a.on_event(notify(
        "wx",
        "error",
        "note text that is rather long for forty columns",
    ));
    for i in 0..20 {
        a.on_event(widget(
            "wx",
            &format!("w{i}"),
            "W",
            &["日本語のテキスト", "x"],
        ));
        a.on_event(status("wx", &format!("s{i}"), "status text"));
    }
    a.on_event(Event::Queued {
        text: "later".into(),
        position: 1,
    });
    a.on_event(Event::ExtOpenPanel {
        extension: "todo".into(),
        panel: panel(
            "p",
            "A panel title that is too wide",
            &["▸ one", "two", "three", "four"],
            "footer",
        ),
    });
    a.on_event(confirm_event(1));
    a
}

#[test]
fn every_size_draws_without_panic_and_keeps_editor_and_footer() {
    let a = busy_app();
    for (w, h) in [
        (100, 30),
        (80, 24),
        (40, 12),
        (20, 6),
        (4, 3),
        (3, 2),
        (1, 1),
    ] {
        let s = screen_of(&a, w, h);
        if w >= 20 {
            assert!(s.contains("› /"), "{w}x{h}: editor missing\n{s}");
            let last = s.lines().last().unwrap_or("");
            assert!(last.contains("script"), "{w}x{h}: footer missing\n{s}");
        }
    }
    // The menu, a picker and an empty app also fit a small screen.
    let mut b = app();
    type_text(&mut b, "/");
    screen_of(&b, 40, 12);
    type_text(&mut b, "settings");
    b.on_key(key(KeyCode::Enter));
    screen_of(&b, 40, 12);
    screen_of(&new_app(ColorDepth::None), 40, 12);
}

#[test]
fn resizing_redraws_cleanly_on_the_same_terminal() {
    let a = busy_app();
    let mut t = terminal(100, 30);
    t.draw(|f| a.draw(f)).expect("draw");
    t.backend_mut().resize(40, 12);
    t.resize(ratatui::layout::Rect::new(0, 0, 40, 12))
        .expect("resize");
    t.draw(|f| a.draw(f)).expect("draw");
    assert_eq!(t.backend().buffer().area.width, 40);
}

// ----- colours -----

fn colours(app: &App) -> Vec<Color> {
    let mut t = terminal(100, 30);
    t.draw(|f| app.draw(f)).expect("draw");
    let buf = t.backend().buffer().clone();
    buf.content.iter().flat_map(|c| [c.fg, c.bg]).collect()
}

#[test]
fn no_color_draws_no_colour_and_sixteen_colours_only_named_ones() {
    let fill = |mut a: App| {
        a.on_event(notify("wx", "error", "e"));
        a.on_event(status("wx", "k", "s"));
        a.on_event(Event::UserMessage { text: "u".into() });
        a.on_event(confirm_event(1));
        a
    };
    let plain = fill(new_app(ColorDepth::None));
    assert!(colours(&plain).iter().all(|c| *c == Color::Reset));
    let sixteen = fill(new_app(ColorDepth::Ansi16));
    let cs = colours(&sixteen);
    assert!(cs
        .iter()
        .all(|c| !matches!(c, Color::Indexed(_) | Color::Rgb(..))));
    assert!(
        cs.iter().any(|c| *c != Color::Reset),
        "16 colours still colour"
    );
}

// ----- transcript -----

#[test]
fn streamed_text_and_tool_lines_with_the_serving_extension() {
    let mut a = app();
    a.on_event(Event::UserMessage {
        text: "weather?".into(),
    });
    a.on_event(Event::TextDelta {
        delta: "Let me ".into(),
    });
    a.on_event(Event::TextDelta {
        delta: "check.".into(),
    });
    assert!(screen(&a).contains("● Let me check."));
    a.on_event(Event::AssistantMessage {
        text: "Let me check.".into(),
        blocked: false,
        reason: String::new(),
    });
    a.on_event(Event::ToolCall {
        id: "c1".into(),
        name: "forecast".into(),
        args: serde_json::json!({"city": "Berlin"}),
    });
    assert!(screen(&a).contains("⎿ running…"));
    a.on_event(Event::ToolProgress {
        id: "c1".into(),
        name: "forecast".into(),
        extension: "wx".into(),
        message: Some("asking the \x1b[31mstation".into()),
        progress: Some(3.0),
        total: Some(4.0),
    });
    let s = screen(&a);
    assert!(s.contains("⎿ running… asking the station (75%)"), "{s}");
    a.on_event(Event::ToolResult {
        id: "c1".into(),
        name: "forecast".into(),
        is_error: false,
        content: vec![ContentBlock::Text {
            text: "sunny\n21°C\nwind 3 km/h".into(),
        }],
        extension: Some("wx".into()),
        replaced_by: None,
    });
    let s = screen(&a);
    assert!(s.contains("⚙ forecast (wx) {\"city\":\"Berlin\"}"), "{s}");
    assert!(s.contains("⎿ sunny (+2 lines, Ctrl+O expands)"), "{s}");
    assert!(!s.contains("wind 3 km/h"));
    assert!(a.on_key(ctrl('o')).is_empty());
    let s = screen(&a);
    assert!(
        s.contains("    21°C") && s.contains("    wind 3 km/h"),
        "{s}"
    );
    assert_eq!(a.chat().len(), 3);
}

#[test]
fn tool_progress_shows_on_the_running_calls_line() {
    let mut a = app();
    a.on_event(Event::ToolCall {
        id: "c1".into(),
        name: "mcp__fake__progress".into(),
        args: serde_json::json!({}),
    });
    a.on_event(Event::ToolProgress {
        id: "c1".into(),
        name: "mcp__fake__progress".into(),
        extension: "mcp:fake".into(),
        message: Some("step 2".into()),
        progress: Some(2.0),
        total: Some(4.0),
    });
    assert!(
        screen(&a).contains("⎿ running… step 2 (50%)"),
        "{}",
        screen(&a)
    );
    a.on_event(Event::ToolResult {
        id: "c1".into(),
        name: "mcp__fake__progress".into(),
        is_error: false,
        content: vec![ContentBlock::Text {
            text: "progress done".into(),
        }],
        extension: Some("mcp:fake".into()),
        replaced_by: None,
    });
    let s = screen(&a);
    assert!(
        s.contains("⎿ progress done") && !s.contains("running…"),
        "{s}"
    );
}

#[test]
fn turn_end_errors_and_aborts_are_shown() {
    let mut a = app();
    a.on_event(Event::TurnEnd {
        stop: "aborted".into(),
        error: String::new(),
    });
    a.on_event(Event::TurnEnd {
        stop: "error".into(),
        error: "provider said no".into(),
    });
    a.on_event(Event::ToolCall {
        id: "b".into(),
        name: "bash".into(),
        args: serde_json::json!({}),
    });
    a.on_event(Event::ToolBlocked {
        id: "b".into(),
        name: "bash".into(),
        reason: "policy".into(),
        extension: "guard".into(),
        args: serde_json::json!({}),
    });
    let s = screen(&a);
    assert!(
        s.contains("turn aborted")
            && s.contains("✖ provider said no")
            && s.contains("⊘ blocked by guard: policy"),
        "{s}"
    );
}

#[test]
fn a_session_switch_redraws_the_transcript_from_the_core() {
    use crate::provider::{Block, Message, Role};
    let core = FakeCore::default();
    let mut st = state();
    st.messages = vec![
        Message::user_text("old question"),
        Message {
            role: Role::Assistant,
            content: vec![Block::Text {
                text: "old answer".into(),
            }],
            from: None,
        },
        // Messages nobody typed read as they did live.
        Message::continuation("run the tests too", "guard"),
        Message::continuation("not done yet", crate::hooks::CONTINUED_BY),
    ]
    .into();
    st.session = Some(SessionSummary {
        id: "s-branch".into(),
        ..Default::default()
    });
    *core.state.lock().expect("lock") = st;
    let mut a = app();
    a.on_event(Event::UserMessage {
        text: "current".into(),
    });
    let intents = a.on_event(Event::Session {
        id: "s-branch".into(),
        parent_id: Some("s-root".into()),
        path: "/x".into(),
        fork_point: Some(2),
        reason: "switch".into(),
    });
    assert_eq!(intents, vec![Intent::Refresh(Then::Rebuild)]);
    execute(&mut a, &core, intents, &mut || {}, &mut |_: &App| {});
    let s = screen(&a);
    assert!(
        s.contains("old question") && s.contains("old answer") && !s.contains("current"),
        "{s}"
    );
    assert!(
        s.contains("[guard] run the tests too") && s.contains("[hook] not done yet"),
        "{s}"
    );
    assert!(
        s.contains("session s-branch"),
        "footer shows the session: {s}"
    );
}

#[test]
fn notes_of_the_start_survive_its_session_announcement_and_a_switch_drops_them() {
    let mut a = app();
    let session = |id: &str, reason: &str| Event::Session {
        id: id.into(),
        parent_id: None,
        path: "/x".into(),
        fork_point: None,
        reason: reason.into(),
    };
    // A load warning arrives before the session the state already names
    // is announced (the terminal announces it once its extensions
    // settled).
    a.on_event(Event::ExtWarning {
        extension: "mcp".into(),
        message: "this project is not trusted".into(),
    });
    a.on_event(session("s-root", "new"));
    assert!(screen(&a).contains("this project is not trusted"));
    a.on_event(session("s-root", "compact"));
    assert!(screen(&a).contains("this project is not trusted"));
    a.on_event(session("s-two", "switch"));
    assert!(!screen(&a).contains("this project is not trusted"));
}

// ----- editor, menu, history -----

#[test]
fn enter_sends_alt_enter_and_ctrl_j_make_new_lines() {
    let mut a = app();
    type_text(&mut a, "line one");
    assert!(a
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT))
        .is_empty());
    type_text(&mut a, "two");
    assert!(a.on_key(ctrl('j')).is_empty());
    type_text(&mut a, "three");
    assert!(a
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT))
        .is_empty());
    assert_eq!(a.editor_text(), "line one\ntwo\nthree\n");
    let s = screen(&a);
    assert!(s.contains("› line one\n  two\n  three"), "{s}");
    assert_eq!(
        a.on_key(key(KeyCode::Enter)),
        vec![Intent::Prompt("line one\ntwo\nthree\n".into())]
    );
    assert_eq!(a.editor_text(), "");
    assert!(a.on_key(key(KeyCode::Enter)).is_empty(), "nothing to send");
}

#[test]
fn up_and_down_walk_the_history() {
    let mut a = app();
    for p in ["first", "second"] {
        type_text(&mut a, p);
        a.on_key(key(KeyCode::Enter));
    }
    type_text(&mut a, "draft");
    a.on_key(key(KeyCode::Up));
    assert_eq!(a.editor_text(), "second");
    a.on_key(key(KeyCode::Up));
    assert_eq!(a.editor_text(), "first");
    a.on_key(key(KeyCode::Down));
    a.on_key(key(KeyCode::Down));
    assert_eq!(a.editor_text(), "draft");
}

#[test]
fn pasted_text_goes_into_the_editor_stripped() {
    let mut a = app();
    assert!(a.on_paste("multi\r\nline\u{1b}[31m paste").is_empty());
    assert_eq!(a.editor_text(), "multi\nline paste");
}

#[test]
fn a_prompt_during_a_turn_is_queued_and_shown() {
    let core = FakeCore::default();
    *core.queue.lock().expect("lock") = true;
    let mut a = app();
    a.on_event(Event::TurnStart { step: 1 });
    type_text(&mut a, "follow up");
    let intents = a.on_key(key(KeyCode::Enter));
    execute(&mut a, &core, intents, &mut || {}, &mut |_: &App| {});
    a.on_event(Event::Queued {
        text: "follow up".into(),
        position: 1,
    });
    let s = screen(&a);
    assert_eq!(s.matches("queued: follow up").count(), 1, "{s}");
    a.on_event(Event::UserMessage {
        text: "follow up".into(),
    });
    assert!(!screen(&a).contains("queued: follow up"));
    assert_eq!(core.calls(), vec!["prompt follow up"]);
}

#[test]
fn slash_menu_lists_builtins_commands_and_skills_with_descriptions() {
    let mut a = app();
    type_text(&mut a, "/");
    let s = screen(&a);
    assert!(
        s.contains("/help") && s.contains("keys and commands"),
        "{s}"
    );
    type_text(&mut a, "we");
    let s = screen(&a);
    assert!(
        s.contains("/weather") && s.contains("forecast for a city"),
        "{s}"
    );
    assert!(!s.contains("/help"));
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.editor_text(), "/weather ");
    assert!(
        !screen(&a).contains("forecast for a city"),
        "menu closes once arguments start"
    );
    type_text(&mut a, "berlin");
    assert_eq!(
        a.on_key(key(KeyCode::Enter)),
        vec![Intent::Command("/weather berlin".into())]
    );

    type_text(&mut a, "/sk");
    let names: Vec<String> = a.menu().into_iter().map(|m| m.name).collect();
    assert_eq!(names, vec!["skills", "skill:deploy"]);
    a.on_key(key(KeyCode::Down));
    assert_eq!(
        a.on_key(key(KeyCode::Enter)),
        vec![Intent::Command("/skill:deploy".into())]
    );

    type_text(&mut a, "/rel");
    assert_eq!(
        a.on_key(key(KeyCode::Enter)),
        vec![Intent::Change(Change::Reload)],
        "enter runs the selected entry"
    );

    type_text(&mut a, "/he");
    a.on_key(key(KeyCode::Esc));
    assert!(a.menu().is_empty(), "esc dismisses the menu");
    assert_eq!(a.editor_text(), "/he");
}

#[test]
fn builtins_map_to_core_calls() {
    let core = FakeCore::default();
    *core.state.lock().expect("lock") = state();
    let mut a = app();
    let run = |a: &mut App, line: &str| {
        a.on_key(ctrl('u'));
        type_text(a, line);
        // Close the menu so Enter sends the line as typed.
        a.on_key(key(KeyCode::Char(' ')));
        let intents = a.on_key(key(KeyCode::Enter));
        execute(a, &core, intents, &mut || {}, &mut |_: &App| {})
    };
    run(&mut a, "/new");
    run(&mut a, "/fork 3");
    run(&mut a, "/compact keep the tests");
    run(&mut a, "/model other-model");
    run(&mut a, "/resume abc");
    run(&mut a, "/whatever args");
    assert_eq!(run(&mut a, "/quit"), Some(0));
    assert_eq!(
        core.calls(),
        vec![
            "new_session",
            "fork Some(3)",
            "compact Some(\"keep the tests\")",
            "set_model other-model",
            "switch abc",
            "command /whatever args",
        ]
    );
}

#[test]
fn tree_picker_switches_to_the_chosen_branch() {
    let core = FakeCore::default();
    *core.state.lock().expect("lock") = state();
    let mut a = app();
    type_text(&mut a, "/tree");
    let intents = a.on_key(key(KeyCode::Enter));
    assert_eq!(intents, vec![Intent::Refresh(Then::PickTree)]);
    execute(&mut a, &core, intents, &mut || {}, &mut |_: &App| {});
    // The list is asked for, not read on this thread; the picker opens
    // with the answer.
    assert_eq!(core.calls(), vec!["list_sessions"]);
    assert!(!screen(&a).contains("branches"));
    let more = a.on_event(Event::Sessions {
        sessions: state().sessions,
    });
    assert!(more.is_empty(), "{more:?}");
    let s = screen(&a);
    assert!(
        s.contains("branches") && s.contains("● s-root") && s.contains("s-branch @2"),
        "{s}"
    );
    a.on_key(key(KeyCode::Down));
    assert_eq!(
        a.on_key(key(KeyCode::Enter)),
        vec![Intent::Change(Change::Switch("s-branch".into()))]
    );
}

#[test]
fn session_lists_show_whole_ids_and_mark_the_current_one_and_a_fork_says_where_it_went() {
    // Two sessions of one day: they share their first 15 characters.
    let (first, second) = ("20261202-091500-a1b2", "20261202-093000-c3d4");
    let sessions = vec![
        SessionSummary {
            id: second.into(),
            title: "the second".into(),
            updated: "2026-12-02T09:31:00Z".into(),
            ..Default::default()
        },
        SessionSummary {
            id: first.into(),
            title: "the first".into(),
            updated: "2026-12-02T09:16:00Z".into(),
            ..Default::default()
        },
    ];
    let core = FakeCore::default();
    let mut st = state();
    st.session = Some(SessionSummary {
        id: first.into(),
        ..Default::default()
    });
    st.sessions = sessions.clone();
    *core.state.lock().expect("lock") = st;
    let mut a = app();
    execute(
        &mut a,
        &core,
        vec![Intent::Refresh(Then::Nothing)],
        &mut || {},
        &mut |_: &App| {},
    );
    for command in ["/resume", "/tree"] {
        a.on_key(ctrl('u'));
        type_text(&mut a, command);
        a.on_key(key(KeyCode::Char(' ')));
        let intents = a.on_key(key(KeyCode::Enter));
        execute(&mut a, &core, intents, &mut || {}, &mut |_: &App| {});
        a.on_event(Event::Sessions {
            sessions: sessions.clone(),
        });
        let s = screen(&a);
        assert!(s.contains(&format!("● {first}")), "{command}: {s}");
        if command == "/resume" {
            assert!(s.contains(&format!("  {second}")), "{command}: {s}");
        }
        a.on_key(key(KeyCode::Esc));
    }
    a.on_event(Event::Session {
        id: second.into(),
        parent_id: Some(first.into()),
        path: "/x".into(),
        fork_point: Some(2),
        reason: "fork".into(),
    });
    assert!(
        screen(&a).contains(&format!("forked: now in session {second}")),
        "{}",
        screen(&a)
    );
}

#[test]
fn help_ext_and_skills_sheets_close_with_esc() {
    let core = FakeCore::default();
    let mut st = state();
    st.extensions = vec![crate::core::frontend::ExtensionSummary {
        name: "wx".into(),
        version: "1.0.0".into(),
        source: "flag".into(),
        running: true,
        starting: false,
        commands: vec!["weather".into()],
        tools: vec!["forecast".into()],
        error: None,
    }];
    *core.state.lock().expect("lock") = st;
    let mut a = app();
    for (line, needle) in [
        ("/help", "Ctrl+O"),
        ("/ext", "tools: forecast"),
        ("/skills", "deploy — ship it"),
    ] {
        type_text(&mut a, line);
        a.on_key(key(KeyCode::Char(' ')));
        let intents = a.on_key(key(KeyCode::Enter));
        execute(&mut a, &core, intents, &mut || {}, &mut |_: &App| {});
        let s = screen_of(&a, 100, 40);
        assert!(s.contains(needle), "{line}: {s}");
        a.on_key(key(KeyCode::Esc));
        assert!(!screen_of(&a, 100, 40).contains(needle));
    }
}

#[test]
fn a_narrow_footer_drops_the_least_needed_pieces_whole() {
    let mut a = app();
    a.on_event(Event::Session {
        id: "20261203-174746-c67b".into(),
        parent_id: None,
        path: "/x".into(),
        fork_point: None,
        reason: "new".into(),
    });
    a.on_event(Event::Usage {
        input_tokens: 1200,
        output_tokens: 250,
        cache_read_tokens: 8000,
        cache_write_tokens: 500,
        cost_usd: Some(0.01),
        context_window: 200_000,
    });
    let footer = |w: u16| {
        screen_of(&a, w, 12)
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(
        footer(120),
        "script · scripted-model · session 174746-c67b · 9.7k in (82% cached) · 250 out · $0.01 · 5% ctx"
    );
    // The provider first (its model names it), then the session, then the
    // token counts; the cost and the context use stay longest.
    assert_eq!(
        footer(90),
        "scripted-model · session 174746-c67b · 9.7k in (82% cached) · 250 out · $0.01 · 5% ctx"
    );
    assert_eq!(
        footer(60),
        "scripted-model · 9.7k in (82% cached) · $0.01 · 5% ctx"
    );
    assert_eq!(footer(40), "scripted-model · $0.01 · 5% ctx");
    assert_eq!(footer(12), "scripted...");
}

#[test]
fn the_footer_names_extensions_and_mcp_servers_still_starting() {
    let core = FakeCore::default();
    let starting =
        |name: &str, source: &str, starting: bool| crate::core::frontend::ExtensionSummary {
            name: name.into(),
            source: source.into(),
            running: !starting,
            starting,
            ..Default::default()
        };
    let mut st = state();
    st.extensions = vec![
        starting("clock", "flag", true),
        starting("todo", "flag", false),
        starting("mcp:time", "mcp", true),
    ];
    *core.state.lock().expect("lock") = st.clone();
    let mut a = app();
    let refresh = vec![Intent::Refresh(Then::Nothing)];
    execute(
        &mut a,
        &core,
        refresh.clone(),
        &mut || {},
        &mut |_: &App| {},
    );
    let screen = screen_of(&a, 100, 20);
    assert!(screen.contains("starting: clock, mcp:time"), "{screen}");
    st.extensions = vec![
        starting("clock", "flag", false),
        starting("mcp:time", "mcp", false),
    ];
    *core.state.lock().expect("lock") = st;
    execute(&mut a, &core, refresh, &mut || {}, &mut |_: &App| {});
    assert!(!screen_of(&a, 100, 20).contains("starting"));
}

// ----- quitting, insert, submit, alerts -----

#[test]
fn ctrl_c_twice_and_ctrl_d_on_an_empty_editor_quit() {
    let mut a = app();
    assert!(a.on_key(ctrl('c')).is_empty());
    assert!(screen(&a).contains("press Ctrl+C again to quit"));
    assert_eq!(a.on_key(ctrl('c')), vec![Intent::Quit(0)]);

    let mut a = app();
    a.on_key(ctrl('c'));
    type_text(&mut a, "x");
    assert!(
        a.on_key(ctrl('c')).is_empty(),
        "another key in between disarms"
    );

    let mut a = app();
    type_text(&mut a, "ab");
    a.on_key(key(KeyCode::Left));
    assert!(
        a.on_key(ctrl('d')).is_empty(),
        "ctrl+d deletes in a non-empty editor"
    );
    assert_eq!(a.editor_text(), "a");
    a.on_key(ctrl('u'));
    assert_eq!(a.on_key(ctrl('d')), vec![Intent::Quit(0)]);
}

#[test]
fn insert_submit_and_submit_slash() {
    let mut a = app();
    type_text(&mut a, "say ");
    a.on_event(Event::CommandResult {
        name: "snip".into(),
        action: "insert".into(),
        text: "hello\u{1b}[1m".into(),
    });
    assert_eq!(a.editor_text(), "say hello");
    assert_eq!(
        a.on_event(Event::ExtSubmit {
            extension: "x".into(),
            text: "go on".into()
        }),
        vec![Intent::Prompt("go on".into())]
    );
    assert!(a
        .on_event(Event::ExtSubmit {
            extension: "x".into(),
            text: "  ".into()
        })
        .is_empty());
    assert_eq!(
        a.on_event(Event::ExtSubmitSlash {
            extension: "x".into(),
            text: "/weather paris".into()
        }),
        vec![Intent::Command("/weather paris".into())]
    );
    assert_eq!(
        a.on_event(Event::ExtSubmitSlash {
            extension: "x".into(),
            text: "/reload-ext".into()
        }),
        vec![Intent::Change(Change::Reload)]
    );
}

#[test]
fn alert_rings_once_unless_alerts_are_switched_off_in_settings() {
    let bell = || Event::ExtAlert {
        extension: "x".into(),
        kind: "bell".into(),
        reason: "question_ready".into(),
    };
    let mut a = app();
    assert_eq!(a.on_event(bell()), vec![Intent::Bell]);
    assert!(a
        .on_event(Event::ExtAlert {
            extension: "x".into(),
            kind: "flash".into(),
            reason: String::new()
        })
        .is_empty());
    type_text(&mut a, "/settings");
    a.on_key(key(KeyCode::Enter));
    assert!(screen(&a).contains("terminal alerts: on"));
    assert_eq!(a.on_key(key(KeyCode::Enter)), vec![Intent::SaveSettings]);
    assert!(!a.alerts());
    assert!(screen(&a).contains("terminal alerts: off"));
    a.on_key(key(KeyCode::Esc));
    assert!(a.on_event(bell()).is_empty());
}

#[test]
fn settings_switch_the_theme_to_light_and_to_a_user_theme() {
    let file = super::theme::ThemeFile::parse(
        r#"{"name":"pink","accent":204}"#,
        std::path::Path::new("/t/pink.json"),
    )
    .expect("theme");
    let mut a = App::new(
        AppConfig {
            themes: vec![file],
            ..AppConfig::default()
        },
        Instant::now(),
    );
    assert_eq!(a.theme_name(), "dark");
    type_text(&mut a, "/settings");
    a.on_key(key(KeyCode::Enter));
    a.on_key(key(KeyCode::Down));
    assert!(
        a.on_key(key(KeyCode::Enter)).is_empty(),
        "opens the theme list"
    );
    assert!(screen(&a).contains("pink"));
    a.on_key(key(KeyCode::Down));
    assert_eq!(a.on_key(key(KeyCode::Enter)), vec![Intent::SaveSettings]);
    assert_eq!(a.theme_name(), "light");
    assert_eq!(a.theme.accent, Color::Indexed(25));
    let b = App::new(
        AppConfig {
            themes: a.theme_files.clone(),
            theme: Some("pink".into()),
            ..AppConfig::default()
        },
        Instant::now(),
    );
    assert_eq!(b.theme.accent, Color::Indexed(204));
}

#[test]
fn a_saved_extension_theme_applies_when_its_extension_is_discovered() {
    // The first frame is drawn before any manifest is read: the saved
    // theme of an extension waits for `discovered`, and is what a save
    // meanwhile keeps.
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("theme.json");
    std::fs::write(&path, r#"{"name":"pink","accent":204}"#).expect("theme");
    let mut a = App::new(
        AppConfig {
            theme: Some("pink".into()),
            ..AppConfig::default()
        },
        Instant::now(),
    );
    assert_eq!(a.theme_name(), "pink");
    assert_ne!(a.theme.accent, Color::Indexed(204));
    assert_eq!(
        a.on_event(Event::Discovered {
            themes: vec![path.clone()]
        }),
        vec![Intent::Refresh(Then::Nothing)]
    );
    assert_eq!(a.theme_name(), "pink");
    assert_eq!(a.theme.accent, Color::Indexed(204));
    assert!(a.theme_names().contains(&"pink".to_string()));
    // A theme still unknown after the discovery stays the saved one.
    let mut b = App::new(
        AppConfig {
            theme: Some("gone".into()),
            ..AppConfig::default()
        },
        Instant::now(),
    );
    b.on_event(Event::Discovered { themes: vec![path] });
    assert_eq!(b.theme_name(), "gone");
}

// ----- the loop -----

#[test]
fn the_loop_draws_events_runs_intents_and_quits_with_zero() {
    let core = FakeCore::default();
    *core.state.lock().expect("lock") = state();
    let (ev_tx, ev_rx) = crossbeam_channel::unbounded();
    let (in_tx, in_rx) = crossbeam_channel::unbounded();
    let mut t = terminal(80, 24);
    let mut a = new_app(ColorDepth::Xterm256);
    let mut rings = 0;
    ev_tx
        .send(notify("wx", "info", "from the core"))
        .expect("send");
    ev_tx
        .send(Event::ExtAlert {
            extension: "x".into(),
            kind: "bell".into(),
            reason: String::new(),
        })
        .expect("send");
    for c in "hi".chars() {
        in_tx
            .send(Input::Term(TermEvent::Key(key(KeyCode::Char(c)))))
            .expect("send");
    }
    in_tx
        .send(Input::Term(TermEvent::Key(key(KeyCode::Enter))))
        .expect("send");
    in_tx
        .send(Input::Term(TermEvent::Key(ctrl('d'))))
        .expect("send");
    // Input and events are both ready: the select order is random, so the
    // quit may come before the events; the prompt always comes before it.
    let code = drive(
        &mut t,
        &mut a,
        &core,
        &ev_rx,
        &in_rx,
        &mut || rings += 1,
        &mut |_: &App| {},
    );
    assert_eq!(code, 0);
    let calls = core.calls();
    assert_eq!(calls, vec!["prompt hi", "shutdown"]);
    assert!(rings <= 1);
}

#[test]
fn the_loop_ends_on_a_signal_with_128_plus_its_number() {
    let core = FakeCore::default();
    let (_ev_tx, ev_rx) = crossbeam_channel::unbounded::<Event>();
    let (in_tx, in_rx) = crossbeam_channel::unbounded();
    in_tx.send(Input::Signal(15)).expect("send");
    let mut t = terminal(40, 12);
    let mut a = app();
    let code = drive(
        &mut t,
        &mut a,
        &core,
        &ev_rx,
        &in_rx,
        &mut || {},
        &mut |_: &App| {},
    );
    assert_eq!(code, 143);
    assert_eq!(core.calls(), vec!["shutdown"]);
}

#[test]
fn the_loop_survives_a_flood_and_shows_the_latest_note() {
    let core = FakeCore::default();
    let (ev_tx, ev_rx) = crossbeam_channel::unbounded();
    let (in_tx, in_rx) = crossbeam_channel::unbounded();
    for i in 0..20_000 {
        ev_tx
            .send(notify("flood", "info", &format!("n{i}")))
            .expect("send");
    }
    let mut t = terminal(80, 24);
    let mut a = app();
    // Quit once the flood is drained: the core's channel says when.
    let quitter = std::thread::spawn(move || {
        while !ev_tx.is_empty() {
            std::thread::yield_now();
        }
        in_tx
            .send(Input::Term(TermEvent::Key(ctrl('d'))))
            .expect("send");
    });
    let code = drive(
        &mut t,
        &mut a,
        &core,
        &ev_rx,
        &in_rx,
        &mut || {},
        &mut |_: &App| {},
    );
    quitter.join().expect("join");
    assert_eq!(code, 0);
    assert_eq!(a.notes().len(), super::app::NOTES_MAX, "the oldest went");
    let s = screen_of(&a, 80, 24);
    assert!(s.contains("[flood] n19999"), "{s}");
}

/// A reload's report arrives while the core still runs the reload job, so
/// the refresh it asks for finds the core busy; the `idle` that follows the
/// job is what takes the working sign away.
#[test]
fn the_working_sign_goes_when_a_job_without_done_ends() {
    let mut a = app();
    type_text(&mut a, "/reload-ext");
    assert_eq!(
        a.on_key(key(KeyCode::Enter)),
        vec![Intent::Change(Change::Reload)]
    );
    let refresh = a.on_event(Event::Reload {
        stopped: 1,
        loaded: 1,
        ready: 1,
        errors: vec![],
    });
    assert!(
        refresh.contains(&Intent::Refresh(Then::Nothing)),
        "{refresh:?}"
    );
    a.set_state(
        CoreState {
            busy: true,
            ..state()
        },
        Then::Nothing,
    );
    assert!(screen(&a).contains("working"), "{}", screen(&a));
    let refresh = a.on_event(Event::Idle);
    assert_eq!(refresh, vec![Intent::Refresh(Then::Nothing)]);
    a.set_state(state(), Then::Nothing);
    assert!(!screen(&a).contains("working"), "{}", screen(&a));
}

/// An interceptor's refusal comes without a tool_call event (the call never
/// started); the transcript still shows the call and why it was refused.
#[test]
fn a_call_blocked_before_it_started_is_shown() {
    let mut a = app();
    a.on_event(Event::UserMessage {
        text: "clean up".into(),
    });
    a.on_event(Event::ToolBlocked {
        id: "b1".into(),
        name: "bash".into(),
        reason: "dangerous command: sudo".into(),
        extension: "guard-sh".into(),
        args: serde_json::json!({"command": "sudo rm -rf /var/cache"}),
    });
    // The model is told the reason as the call's error result.
    a.on_event(Event::ToolResult {
        id: "b1".into(),
        name: "bash".into(),
        is_error: true,
        content: vec![zut_ext::wire::ContentBlock::text("dangerous command: sudo")],
        extension: None,
        replaced_by: None,
    });
    let s = screen(&a);
    assert!(s.contains("bash"), "{s}");
    assert!(
        s.contains("sudo rm -rf /var/cache"),
        "what was refused: {s}"
    );
    assert!(
        s.contains("blocked by guard-sh: dangerous command: sudo"),
        "{s}"
    );
}

#[test]
fn hooks_show_their_messages_failures_and_blocks() {
    let mut a = app();
    a.on_event(Event::UserMessage { text: "go".into() });
    a.on_event(Event::Hook {
        event: "PreToolUse".into(),
        command: "./guard.sh".into(),
        exit: Some(0),
        outcome: "allow".into(),
        reason: String::new(),
        ms: 3,
        system_message: "checked by the guard".into(),
    });
    a.on_event(Event::Hook {
        event: "PostToolUse".into(),
        command: "./fmt.sh".into(),
        exit: None,
        outcome: "timeout".into(),
        reason: "ran over 60 s".into(),
        ms: 60_000,
        system_message: String::new(),
    });
    a.on_event(Event::ToolBlocked {
        id: "h1".into(),
        name: "write".into(),
        reason: "writes to .env are not allowed".into(),
        extension: "hook ./guard.sh".into(),
        args: serde_json::json!({"path": ".env"}),
    });
    let s = screen(&a);
    assert!(s.contains("checked by the guard"), "{s}");
    assert!(s.contains("./fmt.sh: timeout: ran over 60 s"), "{s}");
    assert!(
        s.contains("blocked by hook ./guard.sh: writes to .env are not allowed"),
        "{s}"
    );
    assert!(s.contains(".env"), "{s}");
}

#[test]
fn a_hook_that_keeps_the_agent_going_or_objects_says_so() {
    let mut a = app();
    a.on_event(Event::UserMessage { text: "go".into() });
    let hook = |event: &str, command: &str, reason: &str| Event::Hook {
        event: event.into(),
        command: command.into(),
        exit: Some(0),
        outcome: "block".into(),
        reason: reason.into(),
        ms: 3,
        system_message: String::new(),
    };
    a.on_event(hook(
        "PostToolUse",
        "/home/me/.claude/hooks/lint.sh",
        "lint fails",
    ));
    a.on_event(hook("Stop", "./stop.sh", "run the tests first"));
    // A block without a reason does not keep the agent going: nothing to show.
    a.on_event(hook("Stop", "./quiet.sh", " "));
    let s = screen(&a);
    assert!(
        s.contains("\"…/lint.sh\" objected to the tool result: lint fails"),
        "{s}"
    );
    // The reason the model gets, where it goes in the transcript.
    assert!(s.contains("› [hook] run the tests first"), "{s}");
    assert!(!s.contains("quiet"), "{s}");
}

#[test]
fn ctrl_o_unfolds_the_last_turn_only() {
    let mut a = app();
    for (turn, out) in [("1", "first\nfirst-hidden"), ("2", "second\nsecond-hidden")] {
        a.on_event(Event::UserMessage {
            text: format!("turn {turn}"),
        });
        a.on_event(Event::ToolCall {
            id: format!("c{turn}"),
            name: "read".into(),
            args: serde_json::json!({"path": "f"}),
        });
        a.on_event(Event::ToolResult {
            id: format!("c{turn}"),
            name: "read".into(),
            is_error: false,
            content: vec![ContentBlock::text(out)],
            extension: None,
            replaced_by: None,
        });
        a.on_event(Event::Done);
    }
    let s = screen(&a);
    assert!(
        !s.contains("first-hidden") && !s.contains("second-hidden"),
        "{s}"
    );
    a.on_key(ctrl('o'));
    let s = screen(&a);
    assert!(s.contains("second-hidden"), "the last turn unfolds: {s}");
    assert!(
        !s.contains("first-hidden"),
        "earlier turns stay folded: {s}"
    );
    a.on_key(ctrl('o'));
    assert!(!screen(&a).contains("second-hidden"));
}

#[test]
fn a_resumed_call_shows_its_source_once_the_tool_registers() {
    use crate::provider::{Block, Message, Role};
    let mut a = app();
    let mut s = state();
    s.messages = crate::transcript::Transcript::new(vec![
        Message::user_text("what time is it"),
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolCall {
                id: "c1".into(),
                name: "mcp__clock__now".into(),
                args: serde_json::json!({}),
            }],
            from: None,
        },
    ]);
    // Resumed while the MCP server is still starting: not registered yet.
    a.set_state(s.clone(), Then::Rebuild);
    let shown = screen(&a);
    assert!(shown.contains("⚙ mcp__clock__now\n"), "{shown}");
    s.tools.push(ToolSummary {
        name: "mcp__clock__now".into(),
        description: "d".into(),
        extension: Some("mcp:clock".into()),
    });
    a.set_state(s, Then::Nothing);
    let shown = screen(&a);
    assert!(shown.contains("⚙ mcp__clock__now (mcp:clock)"), "{shown}");
}
