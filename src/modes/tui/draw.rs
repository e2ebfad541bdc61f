//! Drawing the terminal UI. Everything here reads the [`App`]; nothing
//! changes it.
//!
//! Screen, top to bottom: the chat (transcript, load errors, notes, an
//! open help sheet), the persistent chrome (widgets, status items, queued
//! prompts, the temporary status line), a rule, the editor and a footer.
//! The `/` menu, pickers, the panel and the confirmation dialog float over
//! the chat. The chat is laid out from the bottom up and stops as soon as
//! the screen is full, so a long transcript costs no more than a short one.

use super::app::{App, Entry, ToolState, STATUS_ROWS, WIDGET_ROWS};
use super::layout::{Place, BELOW_ROWS};
use super::text::{truncate, width, wrap, wrap_columns};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

/// At most this many rows of a tool's output when expanded.
const EXPANDED_ROWS: usize = 400;
/// At most this many editor rows are shown.
const EDITOR_ROWS: usize = 8;

type Lines = Vec<Line<'static>>;

impl App {
    pub(super) fn fg(&self, c: Color) -> Style {
        if self.theme.plain() {
            Style::default()
        } else {
            Style::default().fg(c)
        }
    }

    pub(super) fn selected(&self) -> Style {
        if self.theme.plain() {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
                .fg(self.theme.selection_fg)
                .bg(self.theme.selection_bg)
        }
    }

    fn level(&self, level: &str) -> Style {
        match level {
            "warn" | "warning" => self.fg(self.theme.warning),
            "error" => self.fg(self.theme.error),
            "success" => self.fg(self.theme.tool),
            _ => self.fg(self.theme.muted),
        }
    }

    /// Draws the whole screen.
    pub fn draw(&self, f: &mut Frame) {
        let area = f.area();
        if area.width < 4 || area.height < 3 {
            return;
        }
        let w = usize::from(area.width);
        let h = usize::from(area.height);

        let (editor_rows, cursor) = self.editor.layout(w - 2);
        let editor_h = editor_rows.len().clamp(1, EDITOR_ROWS.min((h / 3).max(1)));
        let below = self.widget_lines(Place::Below, w, w, BELOW_ROWS.min(h / 4));
        let fixed = (editor_h + 2 + below.len()).min(h);
        let avail = h - fixed;
        let mut chrome = self.chrome_lines(w);
        let chrome_max = avail / 2;
        if chrome.len() > chrome_max {
            chrome.drain(..chrome.len() - chrome_max);
        }
        let chat_h = avail - chrome.len();

        let rect = |y: usize, height: usize| {
            Rect::new(area.x, area.y + y as u16, area.width, height as u16)
        };
        let rail = self.rail_width(w);
        let chat_w = rail.map_or(w, |r| w - r - 1);
        let chat_area = Rect::new(area.x, area.y, chat_w as u16, chat_h as u16);
        f.render_widget(Paragraph::new(self.chat_window(chat_w, chat_h)), chat_area);
        let first = self.first_screen(chat_w);
        if !first.is_empty() && chat_h > 0 {
            let rows = first.len().min(chat_h);
            f.render_widget(Paragraph::new(first), rect(0, rows));
        }
        if let Some(r) = rail {
            let x = area.x + (w - r - 1) as u16;
            self.draw_rail(f, Rect::new(x, area.y, (r + 1) as u16, chat_h as u16), w);
        }
        f.render_widget(Paragraph::new(chrome.clone()), rect(chat_h, chrome.len()));

        // Rule, editor, footer.
        let rule_y = avail;
        if rule_y < h {
            let rule = Line::styled("─".repeat(w), self.fg(self.theme.muted));
            f.render_widget(Paragraph::new(rule), rect(rule_y, 1));
        }
        let first = if cursor.0 >= editor_h {
            cursor.0 + 1 - editor_h
        } else {
            0
        };
        let ed_lines: Lines = editor_rows
            .iter()
            .enumerate()
            .skip(first)
            .take(editor_h)
            .map(|(i, row)| {
                let prefix = if i == 0 { "› " } else { "  " };
                Line::from(vec![
                    Span::styled(prefix, self.fg(self.theme.accent)),
                    Span::styled(row.clone(), self.fg(self.theme.fg)),
                ])
            })
            .collect();
        let editor_y = rule_y + 1;
        if editor_y < h {
            f.render_widget(
                Paragraph::new(ed_lines),
                rect(editor_y, editor_h.min(h - editor_y)),
            );
        }
        let below_y = editor_y + editor_h;
        if !below.is_empty() && below_y + below.len() <= h {
            f.render_widget(Paragraph::new(below.clone()), rect(below_y, below.len()));
        }
        if below_y + below.len() < h {
            f.render_widget(
                Paragraph::new(self.footer(w)),
                rect(below_y + below.len(), 1),
            );
        }

        // Overlays, lowest first; the focused one ends on top.
        let over = Rect::new(area.x, area.y, area.width, avail as u16);
        let menu = self.menu();
        if !menu.is_empty() && self.panel.is_none() && self.picker.is_none() {
            self.draw_menu(f, &menu, over);
        }
        // Boxes float over the chat and leave the chrome visible, unless
        // the chat is too short to hold one.
        let over = if chat_h >= 6 {
            Rect::new(area.x, area.y, area.width, chat_h as u16)
        } else {
            over
        };
        if let Some(p) = &self.picker {
            self.draw_picker(f, p, over);
        }
        if self.panel.is_some() {
            // Over the chrome too: widgets never squeeze a panel.
            self.draw_panel(f, App::panel_area(area, avail));
        }
        if !self.confirmations.is_empty() {
            self.draw_confirmation(f, over);
        }
        let focused_elsewhere =
            self.panel.is_some() || self.picker.is_some() || !self.confirmations.is_empty();
        if !focused_elsewhere && editor_y + (cursor.0 - first) < h {
            let x = area.x + (2 + cursor.1).min(w - 1) as u16;
            let y = area.y + (editor_y + cursor.0 - first) as u16;
            f.set_cursor_position((x, y));
        }
        if self.ascii() {
            super::layout::ascii_fallback(f.buffer_mut());
        }
    }

    /// The last `height` chat rows (minus the scroll offset).
    fn chat_window(&self, w: usize, height: usize) -> Lines {
        if height == 0 {
            return Vec::new();
        }
        self.chat_view.set((w, height));
        if let super::scroll::Scroll::Top(top) = self.scroll {
            return self.held_window(top, w, height);
        }
        let need = height;
        // Built bottom-up, reversed at the end.
        let mut rev: Lines = Vec::new();
        let push = |block: Lines, rev: &mut Lines| {
            rev.extend(block.into_iter().rev());
            rev.len() >= need
        };
        'fill: {
            if let Some(s) = &self.sheet {
                if push(self.sheet_lines(s, w), &mut rev) {
                    break 'fill;
                }
            }
            for n in self.notes.iter().rev() {
                if push(self.note_lines(&n.owner, &n.level, &n.text, w), &mut rev) {
                    break 'fill;
                }
            }
            for e in self.load_errors.iter().rev() {
                if push(self.error_lines(e, w), &mut rev) {
                    break 'fill;
                }
            }
            for (i, e) in self.chat.iter().enumerate().rev() {
                // A screen needs only the last rows of a long answer.
                self.row_limit.set(need.saturating_sub(rev.len()) + 2);
                let lines = self.entry_lines(e, i, w);
                self.row_limit.set(usize::MAX);
                if push(lines, &mut rev) {
                    break 'fill;
                }
            }
        }
        let total = rev.len();
        let scroll = 0;
        rev.reverse();
        let end = total - scroll;
        let start = end.saturating_sub(height);
        rev.drain(start..end).collect()
    }

    /// Whether Ctrl+O unfolds entry `index`: the tool lines and thinking
    /// of the last turn (from the last prompt on), so a long session does
    /// not unfold all at once.
    fn expanded(&self, index: usize) -> bool {
        self.expand_tools
            && !self.chat[index + 1..]
                .iter()
                .any(|e| matches!(e, Entry::User(_)))
    }

    pub(super) fn entry_lines(&self, e: &Entry, index: usize, w: usize) -> Lines {
        let first = index == 0;
        let t = &self.theme;
        let mut out = Vec::new();
        match e {
            Entry::User(text) => {
                if !first {
                    out.push(Line::default());
                }
                let mut style = self.fg(t.user_bubble_fg);
                if let Some(bg) = t.user_bubble_bg {
                    style = style.bg(bg);
                }
                for (i, row) in wrap(text, w.saturating_sub(2)).into_iter().enumerate() {
                    let prefix = if i == 0 { "› " } else { "  " };
                    out.push(Line::from(vec![
                        Span::styled(prefix, self.fg(t.user).add_modifier(Modifier::BOLD)),
                        Span::styled(row, style),
                    ]));
                }
            }
            Entry::Assistant { text, blocked, .. } => {
                if !text.is_empty() {
                    let (first_row, rows) = self
                        .md
                        .borrow_mut()
                        .entry(index)
                        .or_default()
                        .render_tail(text, w.saturating_sub(2), t, self.row_limit.get());
                    for (i, row) in (first_row..).zip(rows) {
                        let prefix = if i == 0 { "● " } else { "  " };
                        let mut spans = vec![Span::styled(prefix, self.fg(t.assistant))];
                        spans.extend(row.spans);
                        out.push(Line::from(spans));
                    }
                }
                if let Some(reason) = blocked {
                    out.extend(prefixed(
                        &format!("withheld: {reason}"),
                        "  ",
                        "  ",
                        w,
                        self.fg(t.warning),
                    ));
                }
            }
            Entry::Tool {
                id,
                name,
                extension,
                args,
                state,
            } => {
                let change = self.finished_change(id, state);
                let mut parts = vec![(
                    format!("⚙ {name}"),
                    self.fg(t.tool).add_modifier(Modifier::BOLD),
                )];
                if let Some(x) = extension {
                    parts.push((format!(" ({x})"), self.fg(t.muted)));
                }
                if let Some(d) = change {
                    parts.push((format!(" +{}", d.added), self.fg(t.tool)));
                    parts.push((format!(" -{}", d.removed), self.fg(t.error)));
                }
                if !args.is_empty() {
                    parts.push((format!(" {args}"), self.fg(t.tool_out)));
                }
                out.push(fit(parts, w));
                let asking = self.confirmations.iter().any(|c| c.tool_id == *id);
                match state {
                    // Nothing runs before the dialog is answered.
                    ToolState::Running(_) if asking => out.push(Line::styled(
                        "  ⎿ waiting for your answer…",
                        self.fg(t.warning),
                    )),
                    ToolState::Running(p) if p.is_empty() => {
                        out.push(Line::styled("  ⎿ running…", self.fg(t.muted)))
                    }
                    ToolState::Running(p) => {
                        out.push(Line::styled(format!("  ⎿ running… {p}"), self.fg(t.muted)))
                    }
                    ToolState::Blocked(reason) => out.extend(prefixed(
                        &format!("blocked {reason}"),
                        "  ⊘ ",
                        "    ",
                        w,
                        self.fg(t.warning),
                    )),
                    ToolState::Done { is_error, output } => {
                        let style = if *is_error {
                            self.fg(t.error)
                        } else {
                            self.fg(t.tool_out)
                        };
                        let mark = if *is_error { "  ⎿ ✗ " } else { "  ⎿ " };
                        let rows: Vec<&str> = output.lines().collect();
                        if rows.is_empty() {
                            out.push(Line::styled(format!("{mark}(no output)"), style));
                        } else if self.expanded(index) {
                            let wrapped = prefixed(output, mark, "    ", w, style);
                            let n = wrapped.len();
                            out.extend(wrapped.into_iter().take(EXPANDED_ROWS));
                            if let Some(d) = change {
                                out.extend(self.diff_lines(d, w, "    "));
                            }
                            if n > EXPANDED_ROWS {
                                out.push(Line::styled(
                                    format!("    … {} more rows", n - EXPANDED_ROWS),
                                    self.fg(t.muted),
                                ));
                            }
                        } else {
                            let more = if rows.len() > 1 {
                                format!(" (+{} lines, Ctrl+O expands)", rows.len() - 1)
                            } else {
                                String::new()
                            };
                            out.push(fit(
                                vec![
                                    (format!("{mark}{}", rows[0]), style),
                                    (more, self.fg(t.muted)),
                                ],
                                w,
                            ));
                        }
                    }
                }
            }
            Entry::Thinking(text) => {
                let style = self
                    .fg(t.muted)
                    .add_modifier(Modifier::DIM | Modifier::ITALIC);
                let streaming = self.busy && index + 1 == self.chat.len();
                if streaming || self.expanded(index) {
                    out.extend(prefixed(text, "∴ ", "  ", w, style));
                } else {
                    let n = text.lines().count().max(1);
                    let s = if n == 1 { "" } else { "s" };
                    out.push(Line::styled(
                        truncate(&format!("∴ thought for {n} line{s} (Ctrl+O unfolds)"), w),
                        style,
                    ));
                }
            }
            Entry::Info(text) => out.extend(prefixed(text, "· ", "  ", w, self.fg(t.muted))),
            Entry::Error(text) => out.extend(prefixed(text, "✖ ", "  ", w, self.fg(t.error))),
        }
        out
    }

    pub(super) fn error_lines(&self, text: &str, w: usize) -> Lines {
        prefixed(text, "✖ ", "  ", w, self.fg(self.theme.error))
    }

    pub(super) fn note_lines(&self, owner: &str, level: &str, text: &str, w: usize) -> Lines {
        let tag = format!("[{owner}] ");
        let tw = width(&tag);
        let (avail, indent) = if w >= tw + 8 {
            (w - tw, " ".repeat(tw))
        } else {
            (w, String::new())
        };
        wrap(text, avail)
            .into_iter()
            .enumerate()
            .map(|(i, row)| {
                let head = if i == 0 {
                    Span::styled(tag.clone(), self.fg(self.theme.accent))
                } else {
                    Span::raw(indent.clone())
                };
                Line::from(vec![head, Span::styled(row, self.level(level))])
            })
            .collect()
    }

    pub(super) fn sheet_lines(&self, s: &super::app::Sheet, w: usize) -> Lines {
        let mut out = vec![Line::styled(
            truncate(&s.title, w),
            self.fg(self.theme.accent).add_modifier(Modifier::BOLD),
        )];
        for l in &s.lines {
            let style = self.fg(self.theme.fg);
            match w.checked_sub(2).filter(|&avail| avail > 1) {
                // Help's `/name  description` rows wrap under the description.
                Some(avail) => out.extend(
                    wrap_columns(l, avail)
                        .into_iter()
                        .map(|r| Line::styled(format!("  {r}"), style)),
                ),
                None => out.extend(prefixed(l, "  ", "  ", w, style)),
            }
        }
        out.push(Line::styled(
            truncate("  (Esc closes)", w),
            self.fg(self.theme.muted),
        ));
        out
    }

    /// Widgets, status items, queued prompts and the temporary status.
    fn chrome_lines(&self, w: usize) -> Lines {
        let t = &self.theme;
        let one = |s: &str| truncate(&s.replace('\n', " ↩ "), w);
        let widgets = self.widget_lines(Place::Above, w, w, WIDGET_ROWS);
        let mut statuses: Lines = self
            .statuses
            .iter()
            .map(|((ext, _), s)| {
                Line::styled(one(&format!("  [{ext}] {}", s.text)), self.level(&s.level))
            })
            .collect();
        if statuses.len() > STATUS_ROWS {
            statuses.truncate(STATUS_ROWS - 1);
            statuses.push(Line::styled(
                one("  ... extension statuses truncated ..."),
                self.fg(t.muted),
            ));
        }
        let mut out = widgets;
        out.extend(statuses);
        for q in self.queued.iter().take(3) {
            let first = q.lines().next().unwrap_or("");
            out.push(Line::styled(
                one(&format!("  ⏳ queued: {first}")),
                self.fg(t.muted),
            ));
        }
        if self.queued.len() > 3 {
            out.push(Line::styled(
                one(&format!("  … {} more queued", self.queued.len() - 3)),
                self.fg(t.muted),
            ));
        }
        if let Some(fl) = &self.flash {
            out.push(Line::styled(one(&fl.text), self.level(&fl.level)));
        }
        if let Some(s) = self.search_prompt() {
            out.push(Line::styled(one(&s), self.fg(t.accent)));
        }
        out
    }

    fn footer(&self, w: usize) -> Line<'static> {
        let t = &self.theme;
        let session = if self.session_id.is_empty() {
            "no session".to_string()
        } else {
            format!("session {}", super::footer::short_session(&self.session_id))
        };
        // Each piece with how long a narrow footer keeps it (the lowest
        // goes first): the provider is implied by its model, the session
        // and token counts matter less than the cost and the context use.
        // The script provider has no model: nothing is shown for it.
        let mut pieces: Vec<(u8, String)> = vec![
            (
                if self.state.model.is_empty() { 6 } else { 0 },
                self.state.provider.clone(),
            ),
            (6, self.state.model.clone()),
            (1, session),
        ];
        if self.usage.requests > 0 {
            let [tokens, kept] = self.usage.footer_parts();
            pieces.extend(tokens.into_iter().map(|p| (2, p)));
            pieces.extend(kept.into_iter().zip([5, 4]).map(|(p, rank)| (rank, p)));
        }
        pieces.retain(|(_, p)| !p.is_empty());
        let mut right = String::new();
        // Extensions and MCP servers still starting: the terminal does not
        // wait for them (the first prompt does).
        let starting: Vec<&str> = self
            .state
            .extensions
            .iter()
            .filter(|e| e.starting)
            .map(|e| e.name.as_str())
            .collect();
        if !starting.is_empty() {
            right.push_str(&format!(
                "starting: {}",
                super::text::strip_controls(&starting.join(", "))
            ));
        }
        if self.busy {
            if !right.is_empty() {
                right.push_str(" · ");
            }
            right.push_str("● working (Esc aborts)");
        }
        if !self.alerts {
            right.push_str(if right.is_empty() {
                "alerts off"
            } else {
                " · alerts off"
            });
        }
        let rw = width(&right);
        // The right side shows only with room to spare beside it.
        let with_right = rw + 4 < w;
        let room = if with_right { w - rw - 1 } else { w };
        let join = |pieces: &[(u8, String)]| {
            let texts: Vec<&str> = pieces.iter().map(|(_, p)| p.as_str()).collect();
            texts.join(" · ")
        };
        while pieces.len() > 1 && width(&join(&pieces)) > room {
            // The last of the lowest rank goes.
            let low = pieces.iter().map(|(r, _)| *r).min().unwrap_or(0);
            if let Some(i) = pieces.iter().rposition(|(r, _)| *r == low) {
                pieces.remove(i);
            }
        }
        let left = truncate(&join(&pieces), room);
        if !with_right {
            return Line::styled(left, self.fg(t.muted));
        }
        let gap = w - width(&left) - rw;
        Line::from(vec![
            Span::styled(left, self.fg(t.muted)),
            Span::raw(" ".repeat(gap)),
            Span::styled(right, self.fg(t.spinner)),
        ])
    }

    fn draw_menu(&self, f: &mut Frame, menu: &[super::app::MenuItem], over: Rect) {
        let rows = menu.len().min(8).min(usize::from(over.height));
        if rows == 0 {
            return;
        }
        let sel = self.menu_selected.min(menu.len() - 1);
        let first = if sel >= rows { sel + 1 - rows } else { 0 };
        let w = usize::from(over.width);
        let name_w = menu
            .iter()
            .map(|m| width(&m.name) + 1)
            .max()
            .unwrap_or(0)
            .min(w / 2);
        let lines: Lines = menu
            .iter()
            .enumerate()
            .skip(first)
            .take(rows)
            .map(|(i, m)| {
                let name = truncate(&format!("/{}", m.name), name_w + 1);
                let pad = (name_w + 2).saturating_sub(width(&name));
                let desc = truncate(&m.description, w.saturating_sub(name_w + 3));
                let line = Line::from(vec![
                    Span::styled(
                        format!("{name}{}", " ".repeat(pad)),
                        self.fg(self.theme.accent),
                    ),
                    Span::styled(desc, self.fg(self.theme.muted)),
                ]);
                if i == sel {
                    line.style(self.selected())
                } else {
                    line
                }
            })
            .collect();
        let r = Rect::new(
            over.x,
            over.y + over.height - rows as u16,
            over.width,
            rows as u16,
        );
        f.render_widget(Clear, r);
        f.render_widget(Paragraph::new(lines), r);
    }

    /// A bordered box of `inner_h` rows, centred horizontally and placed at
    /// the bottom of `over`, or `None` when there is no room.
    fn float(&self, over: Rect, inner_h: usize, max_w: u16) -> Option<Rect> {
        if over.height < 3 || over.width < 10 {
            return None;
        }
        let width = over.width.min(max_w).max(10.min(over.width));
        let height = (inner_h as u16 + 2).min(over.height);
        let x = over.x + (over.width - width) / 2;
        let y = over.y + over.height - height;
        Some(Rect::new(x, y, width, height))
    }

    pub(super) fn bordered(&self, title: String, style: Style) -> Block<'static> {
        Block::default()
            .borders(Borders::ALL)
            .border_style(style)
            .title(Span::styled(title, style.add_modifier(Modifier::BOLD)))
    }

    fn draw_picker(&self, f: &mut Frame, p: &super::app::Picker, over: Rect) {
        let Some(r) = self.float(over, p.items.len() + 1, 80) else {
            return;
        };
        let inner_w = usize::from(r.width - 2);
        let rows = usize::from(r.height - 2).saturating_sub(1);
        let sel = p.selected.min(p.items.len().saturating_sub(1));
        let first = if rows > 0 && sel >= rows {
            sel + 1 - rows
        } else {
            0
        };
        let mut lines: Lines = p
            .items
            .iter()
            .enumerate()
            .skip(first)
            .take(rows)
            .map(|(i, it)| {
                let label = truncate(&it.label, inner_w);
                let rest = inner_w.saturating_sub(width(&label) + 2);
                let line = Line::from(vec![
                    Span::styled(label, self.fg(self.theme.fg)),
                    Span::raw("  "),
                    Span::styled(truncate(&it.detail, rest), self.fg(self.theme.muted)),
                ]);
                if i == sel {
                    line.style(self.selected())
                } else {
                    line
                }
            })
            .collect();
        lines.push(Line::styled(
            truncate("↑/↓ choose · Enter select · Esc close", inner_w),
            self.fg(self.theme.muted),
        ));
        f.render_widget(Clear, r);
        let title = truncate(&format!(" {} ", p.title), inner_w);
        f.render_widget(
            Paragraph::new(lines).block(self.bordered(title, self.fg(self.theme.accent))),
            r,
        );
    }
}

/// `text` wrapped to `w` columns, the first row after `first`, the rest
/// after `rest` (both the same width).
fn prefixed(text: &str, first: &str, rest: &str, w: usize, style: Style) -> Lines {
    let pw = width(first);
    if w <= pw + 1 {
        return wrap(text, w.max(1))
            .into_iter()
            .map(|r| Line::styled(r, style))
            .collect();
    }
    wrap(text, w - pw)
        .into_iter()
        .enumerate()
        .map(|(i, r)| Line::styled(format!("{}{r}", if i == 0 { first } else { rest }), style))
        .collect()
}

/// Styled pieces on one row, cut with `...` at `w` columns.
fn fit(parts: Vec<(String, Style)>, w: usize) -> Line<'static> {
    let mut spans = Vec::new();
    let mut left = w;
    for (text, style) in parts {
        let tw = width(&text);
        if tw <= left {
            spans.push(Span::styled(text, style));
            left -= tw;
        } else {
            spans.push(Span::styled(truncate(&text, left), style));
            break;
        }
    }
    Line::from(spans)
}
