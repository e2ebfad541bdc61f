//! Moving around the chat: by screen, to either end, with the mouse wheel.
//!
//! The view either follows the bottom ([`Scroll::Bottom`], the chat drawn
//! bottom-up, costing only what is on screen) or is held at a row counted
//! from the top ([`Scroll::Top`]), so output arriving below never moves
//! it; a `↓ N more` marker then ends the view. Reaching the bottom again
//! (PgDn, End, the wheel) follows it again.

use super::app::App;
use super::markdown::Lines;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Where the chat view is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scroll {
    /// Following new output.
    #[default]
    Bottom,
    /// Held: this row (from the top of the whole chat) is the first shown.
    Top(usize),
}

/// Rows one wheel notch moves.
pub const WHEEL_ROWS: usize = 3;

impl App {
    /// Every chat row, top to bottom: transcript, load errors, notes, the
    /// open sheet.
    pub(super) fn all_chat_rows(&self, w: usize) -> Lines {
        let mut out = Lines::new();
        for (i, e) in self.chat.iter().enumerate() {
            out.extend(self.entry_lines(e, i, w));
        }
        for e in &self.load_errors {
            out.extend(self.error_lines(e, w));
        }
        for n in &self.notes {
            out.extend(self.note_lines(&n.owner, &n.level, &n.text, w));
        }
        if let Some(s) = &self.sheet {
            out.extend(self.sheet_lines(s, w));
        }
        out
    }

    /// The rows of a held view, its last row the `↓ N more` marker when
    /// rows are hidden below.
    pub(super) fn held_window(&self, top: usize, w: usize, height: usize) -> Lines {
        let mut all = self.all_chat_rows(w);
        let total = all.len();
        let top = top.min(total.saturating_sub(height));
        let end = (top + height).min(total);
        let below = total - end;
        let mut rows: Lines = all.drain(top..end).collect();
        if below > 0 {
            let hidden = below + 1;
            rows.pop();
            rows.push(self.more_marker(hidden, w));
        }
        rows
    }

    fn more_marker(&self, n: usize, w: usize) -> Line<'static> {
        let text = format!(" ↓ {n} more (End: back to the bottom) ");
        let text = super::text::truncate(&text, w);
        let style = if self.theme.plain() {
            Style::default().add_modifier(ratatui::style::Modifier::REVERSED)
        } else {
            Style::default()
                .fg(self.theme.selection_fg)
                .bg(self.theme.selection_bg)
        };
        Line::from(vec![Span::styled(text, style)])
    }

    /// The chat's width and height at the last frame.
    fn view_size(&self) -> (usize, usize) {
        let (w, h) = self.chat_view.get();
        (w.max(1), h.max(1))
    }

    /// Moves the view `rows` up (negative: down).
    pub(super) fn scroll_rows(&mut self, rows: isize) {
        let (w, h) = self.view_size();
        let total = self.all_chat_rows(w).len();
        let bottom_top = total.saturating_sub(h);
        let now = match self.scroll {
            Scroll::Bottom => bottom_top,
            Scroll::Top(t) => t.min(bottom_top),
        };
        let next = if rows >= 0 {
            now.saturating_sub(rows as usize)
        } else {
            now + rows.unsigned_abs()
        };
        self.scroll = if next >= bottom_top {
            Scroll::Bottom
        } else {
            Scroll::Top(next)
        };
    }

    /// PgUp / PgDn: the visible height minus two.
    pub(super) fn scroll_page(&mut self, up: bool) {
        let (_, h) = self.view_size();
        let step = h.saturating_sub(2).max(1) as isize;
        self.scroll_rows(if up { step } else { -step });
    }

    pub(super) fn scroll_home(&mut self) {
        self.scroll = Scroll::Top(0);
    }

    pub(super) fn scroll_end(&mut self) {
        self.scroll = Scroll::Bottom;
    }

    /// A mouse event: the wheel scrolls the chat.
    pub fn on_mouse(&mut self, m: crossterm::event::MouseEvent) {
        use crossterm::event::MouseEventKind;
        match m.kind {
            MouseEventKind::ScrollUp => self.scroll_rows(WHEEL_ROWS as isize),
            MouseEventKind::ScrollDown => self.scroll_rows(-(WHEEL_ROWS as isize)),
            _ => {}
        }
    }

    /// Whether the view is held above the bottom.
    pub fn scrolled(&self) -> bool {
        self.scroll != Scroll::Bottom
    }
}
