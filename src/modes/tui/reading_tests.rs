//! Snapshot tests of reading and approving on ratatui's `TestBackend`:
//! rendered markdown, highlighted and plain code, the diff dialog, a held
//! view with its marker, and the footer.

use super::app::{Intent, Then};
use super::theme::ColorDepth;
use super::*;
use crate::agent::Decision;
use crate::core::frontend::{CoreState, SessionSummary};
use crate::events::Event;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use std::time::Instant;

fn app(depth: ColorDepth, model: &str) -> App {
    let mut a = App::new(
        AppConfig {
            depth,
            ..AppConfig::default()
        },
        Instant::now(),
    );
    a.set_state(
        CoreState {
            provider: "anthropic".into(),
            model: model.into(),
            session: Some(SessionSummary {
                id: "0123456789abcdef".into(),
                ..Default::default()
            }),
            ..Default::default()
        },
        Then::Nothing,
    );
    a
}

fn answer(a: &mut App, text: &str) {
    a.on_event(Event::UserMessage { text: "q".into() });
    a.on_event(Event::TextDelta { delta: text.into() });
    a.on_event(Event::Done);
}

fn draw(a: &App, w: u16, h: u16) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| a.draw(f)).expect("draw");
    t.backend().buffer().clone()
}

fn rows(b: &Buffer) -> Vec<String> {
    let area = b.area;
    (0..area.height)
        .map(|y| {
            let mut s = String::new();
            for x in 0..area.width {
                s.push_str(b[(x, y)].symbol());
            }
            s.trim_end().to_string()
        })
        .collect()
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// The cell where `needle` starts on the screen.
fn find(b: &Buffer, needle: &str) -> (u16, u16) {
    for (y, row) in rows(b).iter().enumerate() {
        if let Some(byte) = row.find(needle) {
            return (row[..byte].chars().count() as u16, y as u16);
        }
    }
    panic!("{needle:?} not on screen:\n{}", rows(b).join("\n"));
}

const DOC: &str = "# Plan\n\nThis is **important** and `code`.\n\n- first\n- [x] done\n\n| col | n |\n|-----|--:|\n| a | 10 |\n\n```rust\nfn main() {}\n```";

#[test]
fn a_markdown_answer_reads_as_a_document() {
    let mut a = app(ColorDepth::TrueColor, "claude-sonnet-4");
    answer(&mut a, DOC);
    let b = draw(&a, 60, 24);
    let r = rows(&b);
    let start = r
        .iter()
        .position(|l| l.starts_with("● Plan"))
        .expect("heading");
    assert_eq!(
        r[start..start + 15].to_vec(),
        vec![
            "● Plan",
            "",
            "  This is important and code.",
            "",
            "  • first",
            "  • ☑ done",
            "",
            "  col │  n",
            "  ────┼───",
            "  a   │ 10",
            "",
            "  ╭─ rust",
            "  │ fn main() {}",
            "  ╰─",
            "",
        ]
    );
    let text = r.join("\n");
    for raw in ["**", "##", "```", "|--"] {
        assert!(!text.contains(raw), "{raw} left on screen:\n{text}");
    }
    let theme = &a.theme;
    let (x, y) = find(&b, "Plan");
    assert_eq!(b[(x, y)].fg, theme.accent);
    assert!(b[(x, y)].modifier.contains(ratatui::style::Modifier::BOLD));
    let (x, y) = find(&b, "important");
    assert!(b[(x, y)].modifier.contains(ratatui::style::Modifier::BOLD));
    let (x, y) = find(&b, "fn main");
    assert_eq!(b[(x, y)].fg, theme.accent, "keyword coloured");
}

#[test]
fn under_no_color_code_is_plain_but_still_fenced_off() {
    let mut a = app(ColorDepth::None, "m");
    answer(&mut a, "```python\ndef f():\n    return 1\n```");
    let b = draw(&a, 40, 12);
    let r = rows(&b);
    let start = r
        .iter()
        .position(|l| l.contains("╭─ python"))
        .expect("fence");
    assert_eq!(
        r[start..start + 4].to_vec(),
        vec!["● ╭─ python", "  │ def f():", "  │     return 1", "  ╰─"]
    );
    let (x, y) = find(&b, "def");
    assert_eq!(b[(x, y)].fg, ratatui::style::Color::Reset);
}

#[test]
fn the_edit_dialog_shows_a_coloured_diff_and_scrolls_when_taller() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("notes.txt");
    let body: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&file, &body).expect("write");
    let mut a = app(ColorDepth::TrueColor, "m");
    let path = file.display().to_string();
    a.on_event(Event::ToolCall {
        id: "c1".into(),
        name: "edit".into(),
        args: serde_json::json!({"path": path, "edits": [
            {"oldText": "line 2\n", "newText": "line two\n"},
            {"oldText": "line 30\n", "newText": ""}
        ]}),
    });
    a.on_event(Event::ConfirmationRequested {
        request_id: 1,
        tool_id: "c1".into(),
        tool_name: "edit".into(),
        preview: path.clone(),
    });
    let b = draw(&a, 80, 14);
    let text = rows(&b).join("\n");
    assert!(text.contains("allow edit?"), "{text}");
    assert!(text.contains("+1 -2"), "{text}");
    assert!(text.contains("@@ -1,5 +1,5 @@"), "{text}");
    assert!(
        text.contains("-line 2") && text.contains("+line two"),
        "{text}"
    );
    assert!(
        text.contains(&format!("always allows writes and edits of {path}")),
        "{text}"
    );
    assert!(
        text.contains("below (PgUp/PgDn"),
        "a tall diff says how much is hidden:\n{text}"
    );
    let (x, y) = find(&b, "+line two");
    assert_eq!(b[(x, y)].fg, a.theme.tool);
    let (x, y) = find(&b, "-line 2");
    assert_eq!(b[(x, y)].fg, a.theme.error);
    // Scrolling shows the second hunk.
    assert!(a.on_key(key(KeyCode::PageDown)).is_empty());
    assert!(a.on_key(key(KeyCode::PageDown)).is_empty());
    let text = rows(&draw(&a, 80, 14)).join("\n");
    assert!(
        text.contains("-line 30") && text.contains("above"),
        "{text}"
    );
    assert_eq!(
        a.on_key(key(KeyCode::Char('y'))),
        vec![Intent::Confirm(1, Decision::Allow)]
    );
    // The finished call carries its +N -M.
    a.on_event(Event::ToolResult {
        id: "c1".into(),
        name: "edit".into(),
        is_error: false,
        content: vec![zut_ext::wire::ContentBlock::Text {
            text: "applied 2 edits".into(),
        }],
        extension: None,
        replaced_by: None,
    });
    let text = rows(&draw(&a, 80, 24)).join("\n");
    assert!(text.contains("⚙ edit +1 -2"), "{text}");
}

#[test]
fn a_dialog_too_small_to_draw_takes_no_answer() {
    let mut a = app(ColorDepth::TrueColor, "m");
    a.on_event(Event::ConfirmationRequested {
        request_id: 3,
        tool_id: "x".into(),
        tool_name: "bash".into(),
        preview: "rm -rf /tmp/x".into(),
    });
    let text = rows(&draw(&a, 80, 5)).join("\n");
    assert!(text.contains("too small"), "{text}");
    assert!(a.on_key(key(KeyCode::Char('y'))).is_empty());
    draw(&a, 80, 24);
    assert_eq!(
        a.on_key(key(KeyCode::Char('y'))),
        vec![Intent::Confirm(3, Decision::Allow)]
    );
}

#[test]
fn the_bash_dialog_shows_the_whole_command_its_cwd_and_timeout() {
    let mut a = app(ColorDepth::TrueColor, "m");
    let cmd = format!("echo {} && rm -rf ./build", "x".repeat(150));
    a.on_event(Event::ToolCall {
        id: "b".into(),
        name: "bash".into(),
        args: serde_json::json!({"command": cmd, "timeout": 30}),
    });
    a.on_event(Event::ConfirmationRequested {
        request_id: 4,
        tool_id: "b".into(),
        tool_name: "bash".into(),
        preview: "cut".into(),
    });
    let text = rows(&draw(&a, 80, 24)).join("\n");
    assert!(text.contains("rm -rf ./build"), "{text}");
    assert!(text.contains("timeout 30 s"), "{text}");
    assert!(text.contains("always allows this exact command"), "{text}");
}

#[test]
fn a_held_view_keeps_its_place_and_shows_what_is_below() {
    let mut a = app(ColorDepth::TrueColor, "m");
    let long: String = (1..=100).map(|i| format!("row {i}\n\n")).collect();
    answer(&mut a, &long);
    let h = 20u16;
    draw(&a, 60, h);
    let (_, chat_h) = a.chat_view.get();
    a.on_key(key(KeyCode::PageUp));
    let r = rows(&draw(&a, 60, h));
    let marker = r
        .iter()
        .find(|l| l.contains("↓ ") && l.contains("more"))
        .expect("marker");
    let n: usize = marker
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("count");
    assert_eq!(
        n,
        chat_h - 2 + 1,
        "a page is the view minus two rows:\n{}",
        r.join("\n")
    );
    let before = r[..chat_h - 1].to_vec();
    // New output does not move the held view.
    a.on_event(Event::UserMessage {
        text: "more".into(),
    });
    let r = rows(&draw(&a, 60, h));
    assert!(!a.scrolled(), "sending a prompt follows the bottom again");
    let _ = r;
    a.on_key(key(KeyCode::PageUp));
    let held = rows(&draw(&a, 60, h));
    a.on_event(Event::TextDelta {
        delta: "streamed\n\nmore".into(),
    });
    assert_eq!(rows(&draw(&a, 60, h))[..chat_h - 1], held[..chat_h - 1]);
    // Home shows the top, End follows the bottom.
    a.on_key(key(KeyCode::Home));
    let top = rows(&draw(&a, 60, h));
    assert!(top[0].contains("› q"), "{}", top.join("\n"));
    assert!(before.len() == chat_h - 1);
    a.on_key(key(KeyCode::End));
    assert!(!a.scrolled());
    let bottom = rows(&draw(&a, 60, h)).join("\n");
    assert!(
        bottom.contains("streamed") && !bottom.contains("↓ "),
        "{bottom}"
    );
}

#[test]
fn the_footer_shows_model_short_session_tokens_cache_cost_and_context() {
    let mut a = app(ColorDepth::TrueColor, "claude-sonnet-4");
    a.on_event(Event::Usage {
        input_tokens: 10_000,
        output_tokens: 2_000,
        cache_read_tokens: 30_000,
        cache_write_tokens: 0,
        cost_usd: Some(0.125),
        context_window: 200_000,
    });
    // The latest request's prompt fills the window's share: 50k of 200k.
    a.on_event(Event::Usage {
        input_tokens: 1_000,
        output_tokens: 0,
        cache_read_tokens: 49_000,
        cache_write_tokens: 0,
        cost_usd: Some(5.88),
        context_window: 200_000,
    });
    let r = rows(&draw(&a, 120, 10));
    assert_eq!(
        r[9],
        "anthropic · claude-sonnet-4 · session 01234567 · 90k in (88% cached) · 2.0k out · $6.00 · 25% ctx"
    );
}

#[test]
fn thinking_is_dim_while_streaming_and_folded_after() {
    let mut a = app(ColorDepth::TrueColor, "m");
    a.on_event(Event::UserMessage { text: "q".into() });
    a.on_event(Event::ThinkingDelta {
        delta: "weighing it\nsecond thought".into(),
    });
    let b = draw(&a, 60, 12);
    let (x, y) = find(&b, "weighing it");
    assert!(b[(x, y)].modifier.contains(ratatui::style::Modifier::DIM));
    a.on_event(Event::TextDelta {
        delta: "answer".into(),
    });
    a.on_event(Event::Done);
    let text = rows(&draw(&a, 60, 12)).join("\n");
    assert!(
        text.contains("∴ thought for 2 lines") && !text.contains("weighing"),
        "{text}"
    );
}

#[test]
fn copy_sends_osc52_and_export_writes_markdown() {
    let mut a = app(ColorDepth::TrueColor, "m");
    answer(&mut a, "text\n\n```\nfirst\n```\n\n```sh\nsecond\n```");
    for c in "/copy 2".chars() {
        a.on_key(key(KeyCode::Char(c)));
    }
    let out = a.on_key(key(KeyCode::Enter));
    assert_eq!(out, vec![Intent::Terminal(export::osc52("second\n"))]);
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("out.md");
    for c in format!("/export {}", file.display()).chars() {
        a.on_key(key(KeyCode::Char(c)));
    }
    a.on_key(key(KeyCode::Enter));
    let md = std::fs::read_to_string(&file).expect("exported");
    assert!(md.contains("## zut\n\ntext\n\n```\nfirst\n```"), "{md}");
}
