//! Assistant text as a rendered document: markdown to styled terminal rows.
//!
//! Headings, emphasis, strikethrough, inline code, links (with their URL),
//! block quotes, nested and task lists, GFM tables with aligned columns,
//! rules, and fenced code blocks, highlighted by language
//! ([`super::highlight`]) and fenced off with a bar so they stay apart
//! from prose even without colour. No markup character is left on screen
//! (`**`, `##`, fence lines); code lines longer than the screen wrap, never
//! cut.
//!
//! Cost: a message is split into top-level blocks at blank lines outside
//! code fences ([`split_blocks`]); [`MdCache`] keeps each block's rows, so
//! a long transcript is parsed once per width and theme, and a streaming
//! answer re-parses only its last, growing block.

use super::highlight;
use super::text::{char_width, expand_tabs, width};
use super::theme::Theme;
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

pub type Lines = Vec<Line<'static>>;

/// Rows of rendered blocks, kept for one message between frames.
#[derive(Default)]
pub struct MdCache {
    width: usize,
    theme: Option<Theme>,
    /// Each top-level block's source and its rows.
    blocks: Vec<(String, Lines)>,
    /// The text of every block but the last, as last seen, and where the
    /// last block started: a text that still begins with it (a streaming
    /// answer) is split again only from there.
    stable: String,
}

impl MdCache {
    /// The rows of `text` at `w` columns, reusing every block that did not
    /// change since the last call.
    #[cfg(test)]
    pub fn render(&mut self, text: &str, w: usize, theme: &Theme) -> Lines {
        self.render_tail(text, w, theme, usize::MAX).1
    }

    /// Like [`MdCache::render`], but only the last `limit` rows are copied
    /// out (a screen needs no more); also the index of the first one.
    pub fn render_tail(
        &mut self,
        text: &str,
        w: usize,
        theme: &Theme,
        limit: usize,
    ) -> (usize, Lines) {
        if self.width != w || self.theme.as_ref() != Some(theme) {
            self.width = w;
            self.theme = Some(theme.clone());
            self.blocks.clear();
            self.stable.clear();
        }
        let (skip, parts) = if !self.blocks.is_empty() && text.starts_with(self.stable.as_str()) {
            let keep = self.blocks.len() - 1;
            (keep, split_blocks(&text[self.stable.len()..]))
        } else {
            (0, split_blocks(text))
        };
        let parts: Vec<&str> = std::iter::repeat_n("", skip).chain(parts).collect();
        self.blocks.truncate(parts.len());
        for (i, part) in parts.iter().enumerate().skip(skip) {
            let fresh = match self.blocks.get(i) {
                Some((src, _)) => src != part,
                None => true,
            };
            if fresh {
                let rows = render(part, w, theme);
                if i < self.blocks.len() {
                    self.blocks[i] = (part.to_string(), rows);
                    self.blocks.truncate(i + 1);
                } else {
                    self.blocks.push((part.to_string(), rows));
                }
            }
        }
        // Where the last block starts, for the next call.
        self.stable.clear();
        if let Some(last) = parts.last().filter(|_| parts.len() > skip) {
            let off = last.as_ptr() as usize - text.as_ptr() as usize;
            if off <= text.len() {
                self.stable.push_str(&text[..off]);
            }
        }
        // Blocks joined by one blank row; copied from the end backwards.
        let gap = |b: &(String, Lines), i: usize| usize::from(i > 0 && !b.1.is_empty());
        let total: usize = self
            .blocks
            .iter()
            .enumerate()
            .map(|(i, b)| b.1.len() + gap(b, i))
            .sum();
        let mut rev = Lines::new();
        for (i, b) in self.blocks.iter().enumerate().rev() {
            if rev.len() >= limit {
                break;
            }
            for l in b.1.iter().rev() {
                if rev.len() >= limit {
                    break;
                }
                rev.push(l.clone());
            }
            if gap(b, i) == 1 && rev.len() < limit {
                rev.push(Line::default());
            }
        }
        rev.reverse();
        (total - rev.len(), rev)
    }
}

/// The top-level blocks of `text`: split at blank lines outside code
/// fences, unless the next line is indented (a continuation).
pub fn split_blocks(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    let mut start = 0;
    let mut pos = 0;
    let mut blank_at: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        if let Some(at) = blank_at {
            if !line.trim().is_empty() {
                if fence.is_none() && indent == 0 && !line.starts_with('\t') {
                    let part = text[start..at].trim_matches('\n');
                    if !part.trim().is_empty() {
                        parts.push(part);
                    }
                    start = pos;
                }
                blank_at = None;
            }
        }
        if indent <= 3 {
            let t = trimmed.trim_end();
            for ch in ['`', '~'] {
                let n = t.chars().take_while(|c| *c == ch).count();
                if n >= 3 {
                    match fence {
                        None => fence = Some((ch, n)),
                        Some((c, m)) if c == ch && n >= m && t.len() == n => fence = None,
                        _ => {}
                    }
                }
            }
        }
        if fence.is_none() && line.trim().is_empty() && blank_at.is_none() {
            blank_at = Some(pos);
        }
        pos += line.len();
    }
    let last = text[start..].trim_matches('\n');
    if !last.trim().is_empty() {
        parts.push(last);
    }
    parts
}

/// Renders markdown `text` for `w` columns.
pub fn render(text: &str, w: usize, theme: &Theme) -> Lines {
    let mut r = Renderer::new(w.max(8), theme);
    let opts = Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS | Options::ENABLE_STRIKETHROUGH;
    for ev in Parser::new_ext(text, opts) {
        r.event(ev);
    }
    r.flush();
    r.out
}

/// A quote or list item: what its rows start with.
struct Container {
    first: String,
    rest: String,
    style: Style,
    first_used: bool,
}

struct Table {
    align: Vec<Alignment>,
    rows: Vec<Vec<Vec<(String, Style)>>>,
    header_rows: usize,
}

struct Renderer<'t> {
    theme: &'t Theme,
    w: usize,
    out: Lines,
    containers: Vec<Container>,
    /// The next number of each open list (`None`: bullets).
    lists: Vec<Option<u64>>,
    runs: Vec<(String, Style)>,
    styles: Vec<Style>,
    links: Vec<String>,
    code: Option<(String, String)>,
    table: Option<Table>,
    gap: bool,
}

impl<'t> Renderer<'t> {
    fn new(w: usize, theme: &'t Theme) -> Self {
        Renderer {
            theme,
            w,
            out: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            runs: Vec::new(),
            styles: vec![Style::default()],
            links: Vec::new(),
            code: None,
            table: None,
            gap: false,
        }
    }

    fn fg(&self, c: ratatui::style::Color) -> Style {
        if self.theme.plain() {
            Style::default()
        } else {
            Style::default().fg(c)
        }
    }

    fn base(&self) -> Style {
        self.fg(self.theme.fg)
    }

    fn style(&self) -> Style {
        *self.styles.last().unwrap_or(&Style::default())
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    fn text(&mut self, t: &str) {
        if let Some((_, buf)) = &mut self.code {
            buf.push_str(t);
            return;
        }
        let style = self.base().patch(self.style());
        self.runs.push((t.to_string(), style));
    }

    /// Starts a block: a blank row after the previous one.
    fn block(&mut self) {
        self.flush();
        if self.gap && !self.out.is_empty() {
            let prefix = self.prefix_spans();
            self.out.push(Line::from(prefix));
        }
        self.gap = false;
    }

    /// The prefix spans for the next row (markers on first rows only).
    fn prefix_spans(&mut self) -> Vec<Span<'static>> {
        self.containers
            .iter_mut()
            .map(|c| {
                let text = if c.first_used {
                    c.rest.clone()
                } else {
                    c.first_used = true;
                    c.first.clone()
                };
                Span::styled(text, c.style)
            })
            .collect()
    }

    fn prefix_width(&self) -> usize {
        self.containers.iter().map(|c| width(&c.rest)).sum()
    }

    fn avail(&self) -> usize {
        self.w.saturating_sub(self.prefix_width()).max(4)
    }

    /// Emits the collected inline text as wrapped rows.
    fn flush(&mut self) {
        if self.runs.is_empty() {
            return;
        }
        let runs = std::mem::take(&mut self.runs);
        let rows = wrap_runs(&runs, self.avail());
        for row in rows {
            let mut spans = self.prefix_spans();
            spans.extend(row);
            self.out.push(Line::from(spans));
        }
    }

    fn event(&mut self, ev: Event) {
        if let Some(t) = &mut self.table {
            if let Some(done) = table_event(t, &ev, self.theme) {
                if done {
                    let t = self.table.take().expect("table");
                    self.emit_table(t);
                    self.gap = true;
                }
                return;
            }
        }
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                let style = if self.theme.plain() {
                    Style::default().add_modifier(Modifier::BOLD)
                } else {
                    self.fg(self.theme.tool).patch(self.style())
                };
                self.runs.push((t.to_string(), style));
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                if let Some((_, buf)) = &mut self.code {
                    buf.push_str(&t);
                } else {
                    let s = self.fg(self.theme.muted);
                    self.runs.push((t.trim_end_matches('\n').to_string(), s));
                }
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.runs.push(("\n".into(), Style::default())),
            Event::Rule => {
                self.block();
                let n = self.avail().min(40);
                let mut spans = self.prefix_spans();
                spans.push(Span::styled("─".repeat(n), self.fg(self.theme.muted)));
                self.out.push(Line::from(spans));
                self.gap = true;
            }
            Event::TaskListMarker(done) => {
                let (mark, style) = if done {
                    ("☑ ", self.fg(self.theme.tool))
                } else {
                    ("☐ ", self.fg(self.theme.muted))
                };
                self.runs.push((mark.into(), style));
            }
            Event::FootnoteReference(t) => self.text(&format!("[{t}]")),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag) {
        match tag {
            Tag::Paragraph => self.block(),
            Tag::Heading { level, .. } => {
                self.block();
                let accent = self.fg(self.theme.accent).add_modifier(Modifier::BOLD);
                let s = match level {
                    HeadingLevel::H1 => accent.add_modifier(Modifier::UNDERLINED),
                    HeadingLevel::H2 => accent,
                    _ => self.base().add_modifier(Modifier::BOLD),
                };
                self.styles.push(s);
            }
            Tag::BlockQuote(_) => {
                self.block();
                let s = self.fg(self.theme.muted);
                self.containers.push(Container {
                    first: "│ ".into(),
                    rest: "│ ".into(),
                    style: s,
                    first_used: false,
                });
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.block();
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => l.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.block();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => ["• ", "◦ ", "▪ "][depth % 3].to_string(),
                };
                let rest = " ".repeat(width(&marker));
                let style = self.fg(self.theme.accent);
                self.containers.push(Container {
                    first: marker,
                    rest,
                    style,
                    first_used: false,
                });
                self.gap = false;
            }
            Tag::Table(align) => {
                self.block();
                self.table = Some(Table {
                    align,
                    rows: Vec::new(),
                    header_rows: 0,
                });
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                let link = self
                    .fg(self.theme.accent)
                    .add_modifier(Modifier::UNDERLINED);
                self.push_style(|s| s.patch(link));
                self.links.push(dest_url.to_string());
            }
            Tag::Image { dest_url, .. } => {
                self.text("[image: ");
                self.links.push(dest_url.to_string());
            }
            Tag::FootnoteDefinition(label) => {
                self.block();
                self.text(&format!("[{label}]: "));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                self.gap = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.pop_style();
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.pop_style();
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.emit_code(&lang, &code);
                }
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.gap = true;
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
                self.gap = false;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link => {
                self.pop_style();
                if let Some(url) = self.links.pop() {
                    let shown: String = self
                        .runs
                        .iter()
                        .rev()
                        .take(1)
                        .map(|(t, _)| t.clone())
                        .collect();
                    let bare = url.trim_start_matches("mailto:");
                    if !url.is_empty() && shown != url && shown != bare {
                        let s = self.fg(self.theme.muted);
                        self.runs.push((format!(" ({url})"), s));
                    }
                }
            }
            TagEnd::Image => {
                let url = self.links.pop().unwrap_or_default();
                self.text(&format!("]({url})"));
            }
            TagEnd::FootnoteDefinition => {
                self.flush();
                self.gap = true;
            }
            _ => {}
        }
    }

    /// A code block: a header naming the language, each line behind a bar
    /// (wrapped, never cut), and a closing corner.
    fn emit_code(&mut self, lang: &str, code: &str) {
        let bar = self.fg(self.theme.muted);
        let plain = self.base();
        let code = code.strip_suffix('\n').unwrap_or(code);
        let label = lang.split_whitespace().next().unwrap_or("");
        let mut head = self.prefix_spans();
        head.push(Span::styled(
            if label.is_empty() {
                "╭─".to_string()
            } else {
                format!("╭─ {label}")
            },
            bar,
        ));
        self.out.push(Line::from(head));
        let room = self.avail().saturating_sub(2).max(2);
        for pieces in highlight::highlight(code, label, self.theme, plain) {
            for row in hard_wrap(&pieces, room) {
                let mut spans = self.prefix_spans();
                spans.push(Span::styled("│ ", bar));
                spans.extend(row);
                self.out.push(Line::from(spans));
            }
        }
        let mut foot = self.prefix_spans();
        foot.push(Span::styled("╰─", bar));
        self.out.push(Line::from(foot));
    }

    fn emit_table(&mut self, t: Table) {
        let cols = t.rows.iter().map(|r| r.len()).max().unwrap_or(0);
        if cols == 0 {
            return;
        }
        let cell_w = |c: &Vec<(String, Style)>| c.iter().map(|(s, _)| width(s)).sum::<usize>();
        let mut widths = vec![1usize; cols];
        for row in &t.rows {
            for (i, c) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell_w(c));
            }
        }
        let sep = 3;
        let avail = self.avail().saturating_sub(sep * (cols - 1)).max(cols * 3);
        while widths.iter().sum::<usize>() > avail {
            let (i, m) = widths
                .iter()
                .enumerate()
                .max_by_key(|(_, w)| **w)
                .map(|(i, w)| (i, *w))
                .expect("columns");
            if m <= 3 {
                break;
            }
            widths[i] = m - 1;
        }
        let rule = self.fg(self.theme.muted);
        for (ri, row) in t.rows.iter().enumerate() {
            let cells: Vec<Vec<Vec<Span<'static>>>> = (0..cols)
                .map(|i| match row.get(i) {
                    Some(c) if !c.is_empty() => wrap_runs(c, widths[i]),
                    _ => vec![Vec::new()],
                })
                .collect();
            let height = cells.iter().map(|c| c.len()).max().unwrap_or(1);
            for line in 0..height {
                let mut spans = self.prefix_spans();
                for (i, cell) in cells.iter().enumerate() {
                    if i > 0 {
                        spans.push(Span::styled(" │ ", rule));
                    }
                    let content = cell.get(line).cloned().unwrap_or_default();
                    let used: usize = content.iter().map(|s| width(&s.content)).sum();
                    let pad = widths[i].saturating_sub(used);
                    let (l, r) = match t.align.get(i) {
                        Some(Alignment::Right) => (pad, 0),
                        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                        _ => (0, pad),
                    };
                    if l > 0 {
                        spans.push(Span::raw(" ".repeat(l)));
                    }
                    spans.extend(content);
                    if r > 0 && i + 1 < cols {
                        spans.push(Span::raw(" ".repeat(r)));
                    }
                }
                self.out.push(Line::from(spans));
            }
            if ri + 1 == t.header_rows {
                let mut spans = self.prefix_spans();
                let parts: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                spans.push(Span::styled(parts.join("─┼─"), rule));
                self.out.push(Line::from(spans));
            }
        }
    }
}

/// Feeds one event to an open table; `Some(true)` when the table ended,
/// `Some(false)` when consumed, `None` for events the table leaves alone.
fn table_event(t: &mut Table, ev: &Event, theme: &Theme) -> Option<bool> {
    let plain = theme.plain();
    let fg = |c| {
        if plain {
            Style::default()
        } else {
            Style::default().fg(c)
        }
    };
    fn cell(t: &mut Table) -> Option<&mut Vec<(String, Style)>> {
        t.rows.last_mut().and_then(|r| r.last_mut())
    }
    match ev {
        Event::Start(Tag::TableHead) | Event::Start(Tag::TableRow) => t.rows.push(Vec::new()),
        Event::End(TagEnd::TableHead) => t.header_rows = t.rows.len(),
        Event::Start(Tag::TableCell) => {
            if let Some(r) = t.rows.last_mut() {
                r.push(Vec::new());
            }
        }
        Event::End(TagEnd::Table) => return Some(true),
        Event::Text(s) | Event::Html(s) | Event::InlineHtml(s) => {
            let header = t.header_rows == 0;
            let style = if header {
                fg(theme.fg).add_modifier(Modifier::BOLD)
            } else {
                fg(theme.fg)
            };
            if let Some(c) = cell(t) {
                c.push((s.to_string(), style));
            }
        }
        Event::Code(s) => {
            let style = if plain {
                Style::default().add_modifier(Modifier::BOLD)
            } else {
                fg(theme.tool)
            };
            if let Some(c) = cell(t) {
                c.push((s.to_string(), style));
            }
        }
        Event::SoftBreak | Event::HardBreak => {
            if let Some(c) = cell(t) {
                c.push((" ".into(), Style::default()));
            }
        }
        _ => {}
    }
    Some(false)
}

/// A word of [`wrap_runs`]: its styled pieces and whether a space came
/// before it; `None` is a forced break.
type Word = Option<(Vec<(String, Style)>, bool)>;

/// Word-wraps styled runs to `max` columns; a run of `"\n"` breaks the row.
/// A word wider than the row is split.
pub fn wrap_runs(runs: &[(String, Style)], max: usize) -> Vec<Vec<Span<'static>>> {
    let max = max.max(1);
    // Words: glued pieces between spaces; `None` marks a forced break.
    let mut words: Vec<Word> = Vec::new();
    let mut cur: Vec<(String, Style)> = Vec::new();
    let mut space_before = false;
    let end_word =
        |cur: &mut Vec<(String, Style)>, words: &mut Vec<Word>, space_before: &mut bool| {
            if !cur.is_empty() {
                words.push(Some((std::mem::take(cur), *space_before)));
                *space_before = false;
            }
        };
    for (text, style) in runs {
        if text == "\n" {
            end_word(&mut cur, &mut words, &mut space_before);
            words.push(None);
            space_before = false;
            continue;
        }
        let text = expand_tabs(text);
        let mut piece = String::new();
        for c in text.chars() {
            if c == ' ' || c == '\n' {
                if !piece.is_empty() {
                    cur.push((std::mem::take(&mut piece), *style));
                }
                end_word(&mut cur, &mut words, &mut space_before);
                space_before = true;
            } else {
                piece.push(c);
            }
        }
        if !piece.is_empty() {
            cur.push((piece, *style));
        }
    }
    end_word(&mut cur, &mut words, &mut space_before);

    let mut rows: Vec<Vec<Span<'static>>> = Vec::new();
    let mut row: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for w in words {
        let Some((pieces, space)) = w else {
            rows.push(std::mem::take(&mut row));
            used = 0;
            continue;
        };
        let ww: usize = pieces.iter().map(|(t, _)| width(t)).sum();
        let sp = usize::from(space && used > 0);
        if used + sp + ww <= max {
            if sp == 1 {
                let style = pieces.first().map(|p| p.1).unwrap_or_default();
                row.push(Span::styled(" ", strip_decoration(style)));
            }
            row.extend(pieces.into_iter().map(|(t, s)| Span::styled(t, s)));
            used += sp + ww;
            continue;
        }
        if used > 0 {
            rows.push(std::mem::take(&mut row));
            used = 0;
        }
        // Split a too-long word over rows.
        for (t, s) in pieces {
            let mut buf = String::new();
            for c in t.chars() {
                let cw = char_width(c);
                if used + cw > max && used > 0 {
                    if !buf.is_empty() {
                        row.push(Span::styled(std::mem::take(&mut buf), s));
                    }
                    rows.push(std::mem::take(&mut row));
                    used = 0;
                }
                buf.push(c);
                used += cw;
            }
            if !buf.is_empty() {
                row.push(Span::styled(buf, s));
            }
        }
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows
}

/// A space between words keeps the colour but not underline or strike.
fn strip_decoration(s: Style) -> Style {
    s.remove_modifier(Modifier::UNDERLINED | Modifier::CROSSED_OUT)
}

/// Cuts styled pieces into rows of exactly `max` columns (the last shorter).
fn hard_wrap(pieces: &[(String, Style)], max: usize) -> Vec<Vec<Span<'static>>> {
    let mut rows = Vec::new();
    let mut row: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for (t, s) in pieces {
        let t = expand_tabs(t);
        let mut buf = String::new();
        for c in t.chars() {
            let cw = char_width(c);
            if used + cw > max && used > 0 {
                if !buf.is_empty() {
                    row.push(Span::styled(std::mem::take(&mut buf), *s));
                }
                rows.push(std::mem::take(&mut row));
                used = 0;
            }
            buf.push(c);
            used += cw;
        }
        if !buf.is_empty() {
            row.push(Span::styled(buf, *s));
        }
    }
    rows.push(row);
    rows
}

/// The text of rows, one string per row.
#[cfg(test)]
pub fn plain_rows(lines: &Lines) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

/// The fenced code blocks of markdown `text`, in order.
pub fn code_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for ev in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match ev {
            Event::Start(Tag::CodeBlock(_)) => cur = Some(String::new()),
            Event::Text(t) => {
                if let Some(c) = &mut cur {
                    c.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(c) = cur.take() {
                    out.push(c);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::tui::theme::ColorDepth;

    /// Blocks rendered one by one, joined by a blank row (no cache).
    fn render_blocks(text: &str, w: usize, theme: &Theme) -> Lines {
        let mut out = Lines::new();
        for (i, p) in split_blocks(text).iter().enumerate() {
            let rows = render(p, w, theme);
            if i > 0 && !rows.is_empty() {
                out.push(Line::default());
            }
            out.extend(rows);
        }
        out
    }

    fn rows(text: &str, w: usize) -> Vec<String> {
        let theme = Theme::builtin(true, ColorDepth::TrueColor);
        plain_rows(&render(text, w, &theme))
    }

    #[test]
    fn headings_emphasis_and_lists_leave_no_markup() {
        let r = rows("# Title\n\nSome **bold** and *it* text.\n\n- one\n- two\n  - inner\n\n1. first\n2. second", 40);
        assert_eq!(
            r,
            vec![
                "Title",
                "",
                "Some bold and it text.",
                "",
                "• one",
                "• two",
                "  ◦ inner",
                "",
                "1. first",
                "2. second"
            ]
        );
    }

    #[test]
    fn tables_are_aligned_and_task_lists_ticked() {
        let r = rows(
            "| name | n |\n|:-----|--:|\n| a | 1 |\n| long name | 22 |\n\n- [x] done\n- [ ] todo",
            40,
        );
        assert_eq!(
            r,
            vec![
                "name      │  n",
                "──────────┼───",
                "a         │  1",
                "long name │ 22",
                "",
                "• ☑ done",
                "• ☐ todo"
            ]
        );
    }

    #[test]
    fn code_is_fenced_off_and_wrapped_not_cut() {
        let long = "x".repeat(30);
        let r = rows(&format!("```rust\nlet a = 1;\n{long}\n```"), 20);
        assert_eq!(r[0], "╭─ rust");
        assert_eq!(r[1], "│ let a = 1;");
        assert_eq!(r[2], format!("│ {}", "x".repeat(18)));
        assert_eq!(r[3], format!("│ {}", "x".repeat(12)));
        assert_eq!(r[4], "╰─");
    }

    #[test]
    fn links_show_their_url_and_quotes_a_bar() {
        let r = rows(
            "See [docs](https://x.dev/a) or <https://y.dev>.\n\n> quoted",
            60,
        );
        assert_eq!(
            r,
            vec![
                "See docs (https://x.dev/a) or https://y.dev.",
                "",
                "│ quoted"
            ]
        );
    }

    #[test]
    fn blocks_split_at_blank_lines_outside_fences() {
        let text = "para one\n\n```\ncode\n\nmore\n```\n\n- a\n\n  cont\n\nlast";
        assert_eq!(
            split_blocks(text),
            vec![
                "para one",
                "```\ncode\n\nmore\n```",
                "- a\n\n  cont",
                "last"
            ]
        );
    }

    #[test]
    fn the_cache_reuses_unchanged_blocks() {
        let theme = Theme::builtin(true, ColorDepth::TrueColor);
        let mut c = MdCache::default();
        let a = c.render("# A\n\nbody", 30, &theme);
        let whole = render("# A\n\nbody", 30, &theme);
        assert_eq!(plain_rows(&a), plain_rows(&whole));
        let b = c.render("# A\n\nbody more", 30, &theme);
        assert_eq!(plain_rows(&b), vec!["A", "", "body more"]);
        assert_eq!(c.blocks.len(), 2);
        // Streaming on: the same rows as a whole render, at every step.
        let full = "# A\n\nbody more\n\n```rust\nfn x() {}\n```\n\n- a\n- b";
        for end in (0..=full.len()).filter(|i| full.is_char_boundary(*i)) {
            let part = &full[..end];
            assert_eq!(
                plain_rows(&c.render(part, 30, &theme)),
                plain_rows(&render_blocks(part, 30, &theme)),
                "{part:?}"
            );
        }
        // A text that is not a continuation is split afresh.
        assert_eq!(plain_rows(&c.render("other", 30, &theme)), vec!["other"]);
    }
}
