//! Where extensions' chrome goes: widgets by `position` (above the
//! editor, under it, or a side rail on wide terminals), the panel as an
//! overlay, and the ASCII fallback for terminals without box drawing.
//!
//! Rules (they are what the reference extensions expect):
//! - `right_bar` widgets form a rail on the right of the chat when the
//!   terminal is at least [`RAIL_MIN_COLS`] wide, else they join the
//!   `above_input` ones; `below_input` widgets sit between the editor and
//!   the footer; empty and unknown positions are `above_input`.
//! - A widget cut to its row limit says how much is hidden, and keeps its
//!   marked line (`▸ `, `● `: the current phase, the selection) in view.
//! - A panel floats over the chat and the chrome, up to [`PANEL_SHARE`] %
//!   of the screen height whatever the widgets take, with a `↓ N more`
//!   marker when its lines do not fit; its marked line is always in view.
//!
//! Drawing only: nothing here changes the [`App`].

use super::app::App;
use super::text::{truncate, width};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

/// The narrowest terminal that gets a side rail for `right_bar` widgets.
pub const RAIL_MIN_COLS: usize = 100;
/// The most of the screen height a panel may cover, in per cent.
pub const PANEL_SHARE: usize = 80;
/// At most this many rows of `below_input` widgets.
pub const BELOW_ROWS: usize = 6;

type Lines = Vec<Line<'static>>;

/// Where a widget is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Above,
    Below,
    Rail,
}

/// The placement of a widget's `position` at `cols` columns.
pub fn place(position: &str, cols: usize) -> Place {
    match position {
        "right_bar" if cols >= RAIL_MIN_COLS => Place::Rail,
        "below_input" => Place::Below,
        _ => Place::Above,
    }
}

/// Whether a line is the marked one (a selection, the current step).
pub fn is_marked(l: &str) -> bool {
    let s = l.trim_start();
    s.starts_with("▸ ") || s.starts_with("● ") || s.starts_with('\u{200b}')
}

/// The window of `total` lines shown in `rows` rows so that `keep` (if
/// any) is visible: (first line shown, lines shown). When not everything
/// fits, one row is left for a marker.
pub fn window(total: usize, keep: Option<usize>, rows: usize) -> (usize, usize) {
    if total <= rows {
        return (0, total);
    }
    let shown = rows.saturating_sub(1).max(1.min(rows));
    let first = match keep {
        Some(k) if k >= shown => (k + 1 - shown).min(total - shown),
        _ => 0,
    };
    (first, shown)
}

impl App {
    /// Columns of the side rail at `w` columns, if there is one.
    pub(super) fn rail_width(&self, w: usize) -> Option<usize> {
        self.widgets
            .values()
            .any(|wd| place(&wd.position, w) == Place::Rail)
            .then(|| (w * 3 / 10).clamp(24, 44))
    }

    /// The rows of the widgets placed at `at` on a screen `cols` wide, at
    /// most `max_rows`, each `w` columns at most.
    pub(super) fn widget_lines(&self, at: Place, cols: usize, w: usize, max_rows: usize) -> Lines {
        let t = &self.theme;
        let indent = if at == Place::Rail { "" } else { "  " };
        let one = |s: &str| truncate(&s.replace('\n', " ↩ "), w);
        let mine: Vec<_> = self
            .widgets
            .iter()
            .filter(|(_, wd)| place(&wd.position, cols) == at)
            .collect();
        let mut out: Lines = Vec::new();
        for (i, ((ext, _), wd)) in mine.iter().enumerate() {
            let left = max_rows.saturating_sub(out.len());
            if left < 2 {
                let hidden = mine.len() - i;
                out.truncate(max_rows.saturating_sub(1));
                out.push(Line::styled(
                    one(&format!(
                        "{indent}... {hidden} more widget(s) cut to fit ..."
                    )),
                    self.fg(t.muted),
                ));
                break;
            }
            out.push(Line::styled(
                one(&format!("{indent}[{ext}] {}", wd.title)),
                self.fg(t.accent),
            ));
            let keep = wd.lines.iter().position(|l| is_marked(l));
            let (first, shown) = window(wd.lines.len(), keep, left - 1);
            for (j, l) in wd.lines.iter().enumerate().skip(first).take(shown) {
                let style = if Some(j) == keep {
                    self.fg(t.fg).add_modifier(Modifier::BOLD)
                } else {
                    self.fg(t.fg)
                };
                out.push(Line::styled(one(&format!("{indent}{l}")), style));
            }
            let hidden = wd.lines.len() - shown;
            if hidden > 0 {
                out.push(Line::styled(
                    one(&format!(
                        "{indent}... {hidden} more line(s) of {} cut to fit ...",
                        wd.title
                    )),
                    self.fg(t.muted),
                ));
            }
        }
        out
    }

    /// Draws the rail in `r` of a screen `cols` wide: a rule on its left,
    /// then its widgets.
    pub(super) fn draw_rail(&self, f: &mut Frame, r: Rect, cols: usize) {
        if r.width < 3 || r.height == 0 {
            return;
        }
        let rule: Lines = (0..r.height)
            .map(|_| Line::styled("│", self.fg(self.theme.muted)))
            .collect();
        f.render_widget(Paragraph::new(rule), Rect::new(r.x, r.y, 1, r.height));
        let inner = Rect::new(r.x + 2, r.y, r.width - 2, r.height);
        let lines = self.widget_lines(
            Place::Rail,
            cols,
            usize::from(inner.width),
            usize::from(r.height),
        );
        f.render_widget(Paragraph::new(lines), inner);
    }

    /// The panel's overlay: the bottom of `screen` down to `bottom` (the
    /// rule above the editor), at most [`PANEL_SHARE`] % of its height.
    pub(super) fn panel_area(screen: Rect, bottom: usize) -> Rect {
        let h = usize::from(screen.height);
        let tall = (h * PANEL_SHARE / 100).min(bottom).max(3.min(bottom));
        Rect::new(
            screen.x,
            screen.y + (bottom - tall) as u16,
            screen.width,
            tall as u16,
        )
    }

    /// The open panel, at the bottom of `over`, as tall as its lines need.
    pub(super) fn draw_panel(&self, f: &mut Frame, over: Rect) {
        let Some(open) = &self.panel else {
            return;
        };
        let p = &open.panel;
        let footer_rows = if p.footer.is_empty() { 0 } else { 2 };
        if over.height < 3 || over.width < 10 {
            return;
        }
        let bw = over.width.min(100);
        let bh = (p.lines.len().max(1) + footer_rows + 2).min(usize::from(over.height)) as u16;
        let r = Rect::new(
            over.x + (over.width - bw) / 2,
            over.y + over.height - bh,
            bw,
            bh,
        );
        let inner_w = usize::from(r.width - 2);
        let inner_h = usize::from(r.height - 2);
        let footer_rows = if inner_h > footer_rows + 1 {
            footer_rows
        } else {
            0
        };
        let body_h = inner_h.saturating_sub(footer_rows).max(1.min(inner_h));
        let sel = p.lines.iter().position(|l| is_marked(l));
        let (first, shown) = window(p.lines.len(), sel, body_h);
        let mut lines: Lines = p
            .lines
            .iter()
            .enumerate()
            .skip(first)
            .take(shown)
            .map(|(i, l)| {
                let text = truncate(&l.replace('\u{200b}', ""), inner_w);
                if Some(i) == sel {
                    let pad = inner_w.saturating_sub(width(&text));
                    Line::styled(format!("{text}{}", " ".repeat(pad)), self.selected())
                } else if text.contains('✓') {
                    Line::styled(text, self.fg(self.theme.tool))
                } else {
                    Line::styled(text, self.fg(self.theme.fg))
                }
            })
            .collect();
        if shown < p.lines.len() {
            let below = p.lines.len() - first - shown;
            let marker = match (first, below) {
                (0, b) => format!("↓ {b} more"),
                (a, 0) => format!("↑ {a} more above"),
                (a, b) => format!("↓ {b} more (↑ {a} above)"),
            };
            lines.push(Line::styled(
                truncate(&marker, inner_w),
                self.fg(self.theme.muted),
            ));
        }
        if footer_rows > 0 {
            lines.push(Line::default());
            lines.push(Line::styled(
                truncate(&p.footer, inner_w),
                self.fg(self.theme.muted),
            ));
        }
        let title = if p.title.is_empty() {
            &open.extension
        } else {
            &p.title
        };
        let title = truncate(&format!(" {title} "), inner_w);
        let style = self.fg(self.theme.accent);
        f.render_widget(Clear, r);
        f.render_widget(
            Paragraph::new(lines).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(style)
                    .title(Span::styled(title, style.add_modifier(Modifier::BOLD))),
            ),
            r,
        );
    }

    /// The first screen's line: how to start and what loaded (shown while
    /// the chat is empty).
    pub(super) fn first_screen(&self, w: usize) -> Vec<Line<'static>> {
        let empty = self.chat.is_empty()
            && self.notes.is_empty()
            && self.sheet.is_none()
            && self.load_errors.is_empty()
            && self.editor.is_empty();
        if !empty {
            return Vec::new();
        }
        let provider = match (self.state.provider.as_str(), self.state.model.as_str()) {
            ("", _) => "no provider".to_string(),
            (p, "") => p.to_string(),
            (p, m) => format!("{p} {m}"),
        };
        use crate::words::plural;
        let servers = self
            .state
            .extensions
            .iter()
            .filter(|e| e.source == "mcp")
            .count();
        let exts = self.state.extensions.len() - servers;
        let mut what = Vec::new();
        match (exts, servers) {
            (0, 0) => what.push("no extensions".to_string()),
            (0, _) => {}
            (n, _) => what.push(plural(n, "extension")),
        }
        if servers > 0 {
            what.push(plural(servers, "MCP server"));
        }
        if !self.state.skills.is_empty() {
            what.push(plural(self.state.skills.len(), "skill"));
        }
        let pieces = [
            "Type a prompt, Enter to send".to_string(),
            "/help for keys and commands".to_string(),
            provider,
            format!("{} loaded", what.join(", ")),
        ];
        // Pieces wrap whole onto the next row rather than being cut.
        let mut rows: Vec<String> = Vec::new();
        for piece in pieces {
            match rows.last_mut() {
                Some(row) if width(row) + 3 + width(&piece) <= w => {
                    row.push_str(" · ");
                    row.push_str(&piece);
                }
                _ => rows.push(piece),
            }
        }
        rows.into_iter()
            .map(|r| Line::styled(truncate(&r, w), self.fg(self.theme.muted)))
            .collect()
    }

    /// Whether symbols are drawn in ASCII (`TERM=linux`).
    pub(super) fn ascii(&self) -> bool {
        self.typing.ascii
    }
}

/// Replaces box drawing and the UI's symbols by ASCII in every cell.
pub fn ascii_fallback(buf: &mut Buffer) {
    let area = buf.area;
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let cell = &mut buf[(x, y)];
            if let Some(a) = ascii_of(cell.symbol()) {
                cell.set_symbol(a);
            }
        }
    }
}

fn ascii_of(s: &str) -> Option<&'static str> {
    if s.is_ascii() {
        return None;
    }
    Some(match s {
        "─" | "━" | "═" => "-",
        "│" | "┃" | "║" | "▏" => "|",
        "┌" | "┐" | "└" | "┘" | "├" | "┤" | "┬" | "┴" | "┼" | "╭" | "╮" | "╰" | "╯" => {
            "+"
        }
        "›" | "▸" | "▶" | "→" | "⟩" => ">",
        "‹" | "←" => "<",
        "●" | "•" | "⚙" | "◆" | "■" => "*",
        "○" | "◇" | "□" => "o",
        "⎿" | "└─" => "`",
        "✖" | "✗" | "✘" | "×" => "x",
        "✓" | "✔" => "v",
        "↓" | "▼" => "v",
        "↑" | "▲" => "^",
        "⏳" | "…" => "~",
        "↩" => "/",
        "⊘" => "!",
        "·" => ".",
        "—" | "–" => "-",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_keeps_the_marked_line_and_leaves_a_row_for_the_marker() {
        assert_eq!(window(5, None, 10), (0, 5));
        assert_eq!(window(30, None, 14), (0, 13));
        assert_eq!(window(30, Some(20), 14), (8, 13));
        assert_eq!(window(30, Some(29), 14), (17, 13));
        assert_eq!(window(3, Some(2), 1), (2, 1));
    }

    #[test]
    fn positions_resolve_by_width() {
        assert_eq!(place("right_bar", 120), Place::Rail);
        assert_eq!(place("right_bar", 99), Place::Above);
        assert_eq!(place("below_input", 60), Place::Below);
        assert_eq!(place("", 120), Place::Above);
        assert_eq!(place("somewhere", 120), Place::Above);
    }
}
