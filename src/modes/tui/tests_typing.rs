//! Tests of the editor's keys, the queue, and extensions' chrome (panel
//! overlay geometry, widget positions, pastes into panels), drawn on a
//! `TestBackend`.

use super::app::{App, AppConfig, Intent, Then, NOTES_MAX};
use crate::core::frontend::{CoreState, ExtensionSummary};
use crate::events::Event;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::time::Instant;
use zut_ext::wire::Panel;

fn app_with(ascii: bool) -> App {
    let mut a = App::new(
        AppConfig {
            ascii,
            ..AppConfig::default()
        },
        Instant::now(),
    );
    a.set_state(
        CoreState {
            provider: "script".into(),
            extensions: vec![ExtensionSummary {
                name: "todo".into(),
                ..Default::default()
            }],
            ..Default::default()
        },
        Then::Nothing,
    );
    a
}

fn app() -> App {
    app_with(false)
}

/// The screen as text and the cursor position.
fn draw(a: &App, w: u16, h: u16) -> (Vec<String>, (u16, u16)) {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("backend");
    t.draw(|f| a.draw(f)).expect("draw");
    let buf = t.backend().buffer().clone();
    let rows = (0..h)
        .map(|y| {
            (0..w)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect();
    let c = t.get_cursor_position().expect("cursor");
    (rows, (c.x, c.y))
}

fn k(code: KeyCode, m: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, m)
}

fn press(a: &mut App, code: KeyCode, m: KeyModifiers) -> Vec<Intent> {
    a.on_key(k(code, m))
}

fn ctrl(a: &mut App, c: char) {
    press(a, KeyCode::Char(c), KeyModifiers::CONTROL);
}

fn alt(a: &mut App, c: char) {
    press(a, KeyCode::Char(c), KeyModifiers::ALT);
}

fn typed(a: &mut App, s: &str) {
    for c in s.chars() {
        press(a, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

/// The editor text with `|` at the cursor.
fn at(a: &App) -> String {
    let t = a.editor_text();
    let c = a.editor_cursor();
    format!("{}|{}", &t[..c], &t[c..])
}

#[test]
fn readline_line_and_char_keys() {
    let mut a = app();
    typed(&mut a, "hello world");
    ctrl(&mut a, 'a');
    assert_eq!(at(&a), "|hello world");
    ctrl(&mut a, 'f');
    ctrl(&mut a, 'f');
    assert_eq!(at(&a), "he|llo world");
    ctrl(&mut a, 'b');
    assert_eq!(at(&a), "h|ello world");
    ctrl(&mut a, 'e');
    assert_eq!(at(&a), "hello world|");
    ctrl(&mut a, 'w');
    assert_eq!(at(&a), "hello |");
    ctrl(&mut a, 'y');
    assert_eq!(at(&a), "hello world|");
    ctrl(&mut a, 'a');
    ctrl(&mut a, 'k');
    assert_eq!(at(&a), "|");
    ctrl(&mut a, 'y');
    ctrl(&mut a, 'b');
    ctrl(&mut a, 'u');
    assert_eq!(at(&a), "|d");
    // Ctrl+_ reaches crossterm as Ctrl+7 in most terminals.
    ctrl(&mut a, '7');
    assert_eq!(a.editor_text(), "hello world");
    ctrl(&mut a, '_');
    assert_eq!(a.editor_text(), "", "undo again: before the yank");
}

#[test]
fn word_keys_with_alt_and_ctrl_arrows() {
    let mut a = app();
    typed(&mut a, "git commit --amend");
    alt(&mut a, 'b');
    assert_eq!(at(&a), "git commit --|amend");
    press(&mut a, KeyCode::Left, KeyModifiers::CONTROL);
    assert_eq!(at(&a), "git |commit --amend");
    alt(&mut a, 'f');
    assert_eq!(at(&a), "git commit| --amend");
    press(&mut a, KeyCode::Right, KeyModifiers::CONTROL);
    assert_eq!(at(&a), "git commit --amend|");
    press(&mut a, KeyCode::Backspace, KeyModifiers::ALT);
    assert_eq!(at(&a), "git commit --|");
    ctrl(&mut a, 'a');
    alt(&mut a, 'd');
    assert_eq!(at(&a), "| commit --");
}

#[test]
fn newlines_from_shift_enter_alt_enter_and_ctrl_j() {
    let mut a = app();
    typed(&mut a, "a");
    assert!(press(&mut a, KeyCode::Enter, KeyModifiers::SHIFT).is_empty());
    typed(&mut a, "b");
    press(&mut a, KeyCode::Enter, KeyModifiers::ALT);
    typed(&mut a, "c");
    ctrl(&mut a, 'j');
    assert_eq!(a.editor_text(), "a\nb\nc\n");
    assert_eq!(
        press(&mut a, KeyCode::Enter, KeyModifiers::NONE),
        vec![Intent::Prompt("a\nb\nc\n".into())]
    );
}

#[test]
fn wide_and_combining_characters_place_the_cursor_by_columns() {
    let mut a = app();
    typed(&mut a, "日本e\u{301}x");
    press(&mut a, KeyCode::Left, KeyModifiers::NONE);
    press(&mut a, KeyCode::Left, KeyModifiers::NONE);
    assert_eq!(at(&a), "日本|e\u{301}x", "the accent moves with its letter");
    let (rows, cur) = draw(&a, 40, 10);
    // "› " then two wide characters: column 6.
    assert_eq!(cur.0, 6, "{rows:?}");
    press(&mut a, KeyCode::Backspace, KeyModifiers::NONE);
    assert_eq!(at(&a), "日|e\u{301}x");
    assert_eq!(draw(&a, 40, 10).1 .0, 4);
    press(&mut a, KeyCode::Delete, KeyModifiers::NONE);
    assert_eq!(at(&a), "日|x");
    typed(&mut a, "👍🏽");
    press(&mut a, KeyCode::Left, KeyModifiers::NONE);
    assert_eq!(at(&a), "日|👍🏽x", "the emoji and its skin tone are one");
}

#[test]
fn ctrl_r_searches_history_newest_first() {
    let mut a = app();
    for p in ["cargo test", "ls -la", "cargo build"] {
        typed(&mut a, p);
        press(&mut a, KeyCode::Enter, KeyModifiers::NONE);
    }
    typed(&mut a, "draft");
    ctrl(&mut a, 'r');
    typed(&mut a, "cargo");
    assert_eq!(a.editor_text(), "cargo build");
    let (rows, _) = draw(&a, 80, 20);
    assert!(
        rows.iter().any(|r| r.contains("(search history) cargo")),
        "{rows:?}"
    );
    ctrl(&mut a, 'r');
    assert_eq!(a.editor_text(), "cargo test");
    press(&mut a, KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(a.editor_text(), "draft", "Esc gives the draft back");
    ctrl(&mut a, 'r');
    typed(&mut a, "ls");
    assert_eq!(
        press(&mut a, KeyCode::Enter, KeyModifiers::NONE),
        vec![Intent::Prompt("ls -la".into())]
    );
}

#[test]
fn the_queue_comes_back_with_up_and_with_esc() {
    let mut a = app();
    a.on_event(Event::TurnStart { step: 1 });
    for t in ["second", "third"] {
        a.on_event(Event::Queued {
            text: t.into(),
            position: 1,
        });
    }
    let (rows, _) = draw(&a, 80, 20);
    assert!(rows.iter().any(|r| r.contains("queued: third")), "{rows:?}");
    assert_eq!(
        press(&mut a, KeyCode::Up, KeyModifiers::NONE),
        vec![Intent::TakeBackQueued]
    );
    assert_eq!(a.editor_text(), "third");
    let (rows, _) = draw(&a, 80, 20);
    assert!(
        !rows.iter().any(|r| r.contains("queued: third")),
        "{rows:?}"
    );
    ctrl(&mut a, 'u');
    typed(&mut a, "mine");
    assert_eq!(
        press(&mut a, KeyCode::Esc, KeyModifiers::NONE),
        vec![Intent::AbortAll]
    );
    assert_eq!(a.editor_text(), "mine\nsecond");
}

#[test]
fn a_long_paste_is_folded_and_sent_whole() {
    let mut a = app();
    let text: String = (0..12).map(|i| format!("row {i}\n")).collect();
    a.on_paste(&text);
    let (rows, _) = draw(&a, 80, 20);
    assert!(
        rows.iter().any(|r| r.contains("› [pasted 12 lines]")),
        "{rows:?}"
    );
    assert_eq!(
        press(&mut a, KeyCode::Enter, KeyModifiers::NONE),
        vec![Intent::Prompt(text)]
    );
}

fn open_panel(a: &mut App, n: usize, sel: Option<usize>) {
    let lines = (0..n)
        .map(|i| {
            if Some(i) == sel {
                format!("▸ item {i}")
            } else {
                format!("  item {i}")
            }
        })
        .collect();
    a.on_event(Event::ExtOpenPanel {
        extension: "todo".into(),
        panel: Panel {
            id: "p".into(),
            title: "Todo".into(),
            lines,
            footer: "↑/↓ move · esc close".into(),
        },
    });
}

fn widget(a: &mut App, id: &str, position: &str, lines: &[&str]) {
    a.on_event(Event::ExtWidget {
        extension: "phases".into(),
        id: id.into(),
        position: position.into(),
        title: "Phases".into(),
        lines: lines.iter().map(|s| s.to_string()).collect(),
    });
}

#[test]
fn a_paste_into_a_panel_is_one_rune() {
    let mut a = app();
    open_panel(&mut a, 3, None);
    assert_eq!(
        a.on_paste("s3cr\u{1b}[31met pass"),
        vec![Intent::PanelKey {
            extension: "todo".into(),
            panel_id: "p".into(),
            key: "rune".into(),
            text: Some("s3cret pass".into()),
        }]
    );
}

#[test]
fn a_thirty_line_panel_overlays_eighty_percent_with_a_marker() {
    for (w, h, min_shown) in [(80u16, 24u16, 13usize), (120, 36, 22)] {
        let mut a = app();
        for i in 0..4 {
            widget(&mut a, &format!("w{i}"), "above_input", &["a", "b", "c"]);
        }
        open_panel(&mut a, 30, None);
        let (rows, _) = draw(&a, w, h);
        let shown = rows.iter().filter(|r| r.contains(" item ")).count();
        assert!(
            shown >= min_shown,
            "{w}x{h}: {shown} shown\n{}",
            rows.join("\n")
        );
        let marker = format!("↓ {} more", 30 - shown);
        assert!(
            rows.iter().any(|r| r.contains(&marker)),
            "{}",
            rows.join("\n")
        );
        let top = rows
            .iter()
            .position(|r| r.contains(" Todo "))
            .expect("title");
        assert!(
            usize::from(h) - top <= usize::from(h) * 80 / 100 + 3,
            "at most 80% of the height (plus editor and footer)"
        );
        // The selection far down is never on an unseen row.
        open_panel(&mut a, 30, Some(27));
        let (rows, _) = draw(&a, w, h);
        assert!(
            rows.iter().any(|r| r.contains("▸ item 27")),
            "{}",
            rows.join("\n")
        );
        assert!(rows.iter().any(|r| r.contains("↑")), "{}", rows.join("\n"));
    }
}

#[test]
fn right_bar_is_a_side_rail_when_wide_and_keeps_the_current_phase() {
    let mut a = app();
    let mut lines: Vec<String> = (1..=20).map(|i| format!("✓ {i}. done phase")).collect();
    lines.push("▸ 21. current phase".into());
    lines.push("  22. later".into());
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    widget(&mut a, "plan", "right_bar", &refs);
    let (rows, _) = draw(&a, 120, 36);
    let cur = rows
        .iter()
        .find(|r| r.contains("▸ 21. current phase"))
        .expect("current phase on screen");
    let col = cur.chars().position(|c| c == '▸').expect("marker");
    assert!(col >= 120 - 45, "on the right rail: {cur:?}");
    assert!(rows.iter().any(|r| r.contains("│")), "the rail's rule");
    // Narrow: above the editor, cut, saying so, current phase kept.
    let (rows, _) = draw(&a, 80, 24);
    let all = rows.join("\n");
    assert!(all.contains("▸ 21. current phase"), "{all}");
    assert!(all.contains("cut to fit"), "{all}");
    let editor = rows
        .iter()
        .position(|r| r.starts_with("›"))
        .expect("editor");
    let phase = rows
        .iter()
        .position(|r| r.contains("▸ 21."))
        .expect("phase");
    assert!(phase < editor, "{all}");
}

#[test]
fn below_input_sits_between_the_editor_and_the_footer() {
    let mut a = app();
    widget(&mut a, "b", "below_input", &["under the editor"]);
    let (rows, _) = draw(&a, 80, 20);
    let editor = rows
        .iter()
        .position(|r| r.starts_with("›"))
        .expect("editor");
    let under = rows
        .iter()
        .position(|r| r.contains("under the editor"))
        .expect("widget");
    assert!(under > editor, "{}", rows.join("\n"));
    assert!(rows[19].contains("script"), "the footer stays last");
}

#[test]
fn commands_keep_notes_and_notes_are_capped() {
    let mut a = app();
    a.on_event(Event::ExtNotify {
        extension: "clock".into(),
        level: "info".into(),
        message: "tick".into(),
    });
    typed(&mut a, "/todo");
    let out = press(&mut a, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(out, vec![Intent::Command("/todo".into())]);
    assert_eq!(a.notes().len(), 1, "a command does not clear notes");
    for i in 0..500 {
        a.on_event(Event::ExtNotify {
            extension: "flood".into(),
            level: "info".into(),
            message: format!("n{i}"),
        });
    }
    assert_eq!(a.notes().len(), NOTES_MAX);
    assert_eq!(a.notes()[NOTES_MAX - 1].text, "n499");
}

#[test]
fn the_first_screen_says_how_to_start() {
    let a = app();
    let (rows, _) = draw(&a, 100, 20);
    assert!(
        rows[0].contains("Enter to send")
            && rows[0].contains("/help")
            && rows[0].contains("script"),
        "{rows:?}"
    );
    assert!(rows[0].contains("1 extension"), "{rows:?}");
}

#[test]
fn the_first_screen_wraps_whole_pieces_and_counts_mcp_servers_apart() {
    let mut a = app();
    let ext = |name: &str, source: &str| ExtensionSummary {
        name: name.into(),
        source: source.into(),
        ..Default::default()
    };
    a.set_state(
        CoreState {
            provider: "script".into(),
            extensions: vec![
                ext("todo", "flag"),
                ext("mcp:a", "mcp"),
                ext("mcp:b", "mcp"),
            ],
            ..Default::default()
        },
        Then::Nothing,
    );
    let (rows, _) = draw(&a, 100, 20);
    assert_eq!(
        rows[0],
        "Type a prompt, Enter to send · /help for keys and commands · script"
    );
    assert_eq!(rows[1], "1 extension, 2 MCP servers loaded");
    // Narrow: no piece is cut, each row holds what fits.
    let (rows, _) = draw(&a, 36, 20);
    assert_eq!(
        rows[..4],
        [
            "Type a prompt, Enter to send",
            "/help for keys and commands · script",
            "1 extension, 2 MCP servers loaded",
            ""
        ]
    );
}

#[test]
fn ascii_mode_draws_no_box_drawing_or_symbols() {
    let mut a = app_with(true);
    open_panel(&mut a, 3, Some(1));
    typed(&mut a, "hi");
    let (rows, _) = draw(&a, 80, 24);
    let all = rows.join("\n");
    for s in ["─", "│", "┌", "›", "▸", "●", "↓"] {
        assert!(!all.contains(s), "{s} in\n{all}");
    }
    assert!(all.contains("+-"), "{all}");
}
