//! The prompt editor: a multi-line text buffer with a cursor, the readline
//! keys a shell user's fingers expect, undo, folded pastes and a history
//! of sent prompts.
//!
//! Our own rather than `tui-textarea`: the prompt wraps softly at the
//! screen width (tui-textarea scrolls long lines sideways), large pastes
//! fold into `[pasted N lines]` placeholders that expand when sent, and
//! history, `@path` completion and the queue all edit the same text; a
//! widget built around its own rendering and key map would have to be
//! fought at each of these points, while the buffer itself is small.
//!
//! Invariants: `cursor` is always a grapheme boundary of `text` (never
//! inside a letter's combining marks or an emoji sequence); history
//! browsing keeps the unsent draft and gives it back past the newest
//! entry; every change that alters the text can be undone with one
//! [`Editor::undo`] per key press (a run of typed characters is one step).

use super::history::History;
use super::text::{strip_controls, TAB};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// A paste of more than this many lines is shown folded.
pub const FOLD_LINES: usize = 10;
/// At most this many undo steps are kept.
const UNDO_MAX: usize = 100;

/// What the last change was, so runs of the same kind merge.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Last {
    #[default]
    Other,
    Typing,
    Kill,
}

/// A folded paste: the placeholder shown and the text it stands for.
#[derive(Debug, Clone)]
struct Fold {
    label: String,
    text: String,
}

/// The editor's text, cursor, kill buffer, undo steps and history.
#[derive(Debug, Default, Clone)]
pub struct Editor {
    text: String,
    /// Byte offset into `text`.
    cursor: usize,
    /// The last killed text, for Ctrl+Y.
    killed: String,
    undo: Vec<(String, usize)>,
    last: Last,
    folds: Vec<Fold>,
    history: History,
}

impl Editor {
    /// An editor over a loaded history.
    pub fn with_history(history: History) -> Editor {
        Editor {
            history,
            ..Editor::default()
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    /// The cursor as a byte offset.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Keeps the state for one undo step. Runs of the same kind (typing,
    /// successive kills) share one step.
    fn save(&mut self, kind: Last) {
        if kind != Last::Other && kind == self.last {
            return;
        }
        self.last = kind;
        if self
            .undo
            .last()
            .is_some_and(|(t, c)| *t == self.text && *c == self.cursor)
        {
            return;
        }
        self.undo.push((self.text.clone(), self.cursor));
        if self.undo.len() > UNDO_MAX {
            self.undo.remove(0);
        }
    }

    /// Takes back the last change (Ctrl+_); false if there is none.
    pub fn undo(&mut self) -> bool {
        self.last = Last::Other;
        match self.undo.pop() {
            Some((t, c)) => {
                self.text = t;
                self.cursor = c.min(self.text.len());
                true
            }
            None => false,
        }
    }

    /// Replaces the whole text; the cursor goes to the end.
    pub fn set_text(&mut self, text: &str) {
        if text != self.text {
            self.save(Last::Other);
        }
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.history.stop_browsing();
    }

    /// Replaces the bytes `range` of the text (a completion) and puts the
    /// cursor after the new text; a range off the text or inside a
    /// character changes nothing.
    pub fn replace(&mut self, range: std::ops::Range<usize>, with: &str) {
        if range.start > range.end
            || range.end > self.text.len()
            || !self.text.is_char_boundary(range.start)
            || !self.text.is_char_boundary(range.end)
        {
            return;
        }
        self.save(Last::Other);
        self.text.replace_range(range.clone(), with);
        self.cursor = range.start + with.len();
        self.history.stop_browsing();
    }

    /// Empties the editor (history stays).
    pub fn clear(&mut self) {
        self.set_text("");
    }

    pub fn insert_char(&mut self, c: char) {
        self.save(if c.is_whitespace() {
            Last::Other
        } else {
            Last::Typing
        });
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
        // A combining mark typed after a letter joins it: keep the cursor
        // after the whole cluster.
        self.cursor = self.next_boundary(self.prev_boundary(self.cursor));
    }

    /// Inserts text at the cursor (typed, pasted or from an extension's
    /// `insert`): control sequences removed, CR LF and lone CR become LF.
    pub fn insert_str(&mut self, s: &str) {
        let clean = strip_controls(&s.replace("\r\n", "\n").replace('\r', "\n"));
        if clean.is_empty() {
            return;
        }
        self.save(Last::Other);
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
        self.last = Last::Other;
    }

    /// A bracketed paste: more than [`FOLD_LINES`] lines are shown as one
    /// `[pasted N lines]` placeholder that [`Editor::take`] expands.
    pub fn paste(&mut self, s: &str) {
        let clean = strip_controls(&s.replace("\r\n", "\n").replace('\r', "\n"));
        let lines = clean.trim_end_matches('\n').split('\n').count();
        if lines <= FOLD_LINES {
            self.insert_str(&clean);
            return;
        }
        let mut label = format!("[pasted {lines} lines]");
        let mut n = 1;
        while self.folds.iter().any(|f| f.label == label) {
            n += 1;
            label = format!("[pasted {lines} lines #{n}]");
        }
        self.insert_str(&label);
        self.folds.push(Fold { label, text: clean });
    }

    pub fn newline(&mut self) {
        self.save(Last::Other);
        self.text.insert(self.cursor, '\n');
        self.cursor += 1;
    }

    fn prev_boundary(&self, at: usize) -> usize {
        self.text[..at]
            .grapheme_indices(true)
            .next_back()
            .map(|(i, _)| i)
            .unwrap_or(0)
    }

    fn next_boundary(&self, at: usize) -> usize {
        self.text[at..]
            .graphemes(true)
            .next()
            .map(|g| at + g.len())
            .unwrap_or(at)
    }

    /// Removes `from..to` (a kill when `kill`: kept for Ctrl+Y, and
    /// successive kills join).
    fn remove(&mut self, from: usize, to: usize, kill: bool) {
        if from >= to {
            return;
        }
        let gone = self.text[from..to].to_string();
        if kill {
            let joining = self.last == Last::Kill;
            self.save(Last::Kill);
            if joining {
                if from < self.cursor {
                    self.killed.insert_str(0, &gone);
                } else {
                    self.killed.push_str(&gone);
                }
            } else {
                self.killed = gone;
            }
        } else {
            self.save(Last::Other);
        }
        self.text.replace_range(from..to, "");
        self.cursor = from;
    }

    pub fn backspace(&mut self) {
        let p = self.prev_boundary(self.cursor);
        self.remove(p, self.cursor, false);
    }

    pub fn delete(&mut self) {
        let n = self.next_boundary(self.cursor);
        let at = self.cursor;
        self.remove(at, n, false);
    }

    pub fn left(&mut self) {
        self.last = Last::Other;
        self.cursor = self.prev_boundary(self.cursor);
    }

    pub fn right(&mut self) {
        self.last = Last::Other;
        self.cursor = self.next_boundary(self.cursor);
    }

    /// The start of the word before `at` (Alt+B): words are runs of
    /// letters and digits.
    fn word_left(&self, at: usize) -> usize {
        let mut seen_word = false;
        let mut pos = at;
        for (i, g) in self.text[..at].grapheme_indices(true).rev() {
            let word = g.chars().next().is_some_and(char::is_alphanumeric);
            if word {
                seen_word = true;
            } else if seen_word {
                break;
            }
            pos = i;
        }
        pos
    }

    /// The end of the word after `at` (Alt+F).
    fn word_right(&self, at: usize) -> usize {
        let mut seen_word = false;
        let mut pos = at;
        for (i, g) in self.text[at..].grapheme_indices(true) {
            let word = g.chars().next().is_some_and(char::is_alphanumeric);
            if word {
                seen_word = true;
            } else if seen_word {
                break;
            }
            pos = at + i + g.len();
        }
        pos
    }

    /// Alt+B, Ctrl+←.
    pub fn word_back(&mut self) {
        self.last = Last::Other;
        self.cursor = self.word_left(self.cursor);
    }

    /// Alt+F, Ctrl+→.
    pub fn word_forward(&mut self) {
        self.last = Last::Other;
        self.cursor = self.word_right(self.cursor);
    }

    /// Alt+D: kills to the end of the next word.
    pub fn kill_word_forward(&mut self) {
        let e = self.word_right(self.cursor);
        let at = self.cursor;
        self.remove(at, e, true);
    }

    /// Alt+Backspace: kills to the start of the previous word.
    pub fn kill_word_back(&mut self) {
        let s = self.word_left(self.cursor);
        let at = self.cursor;
        self.remove(s, at, true);
    }

    /// Ctrl+Y: inserts the last killed text.
    pub fn yank(&mut self) {
        if self.killed.is_empty() {
            return;
        }
        self.save(Last::Other);
        let k = self.killed.clone();
        self.text.insert_str(self.cursor, &k);
        self.cursor += k.len();
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map(|i| self.cursor + i)
            .unwrap_or(self.text.len())
    }

    pub fn home(&mut self) {
        self.last = Last::Other;
        self.cursor = self.line_start();
    }

    pub fn end(&mut self) {
        self.last = Last::Other;
        self.cursor = self.line_end();
    }

    /// Kills from the line start to the cursor (Ctrl+U).
    pub fn kill_to_start(&mut self) {
        let s = self.line_start();
        let at = self.cursor;
        self.remove(s, at, true);
    }

    /// Kills from the cursor to the line end (Ctrl+K); at the end of a
    /// line, the newline.
    pub fn kill_to_end(&mut self) {
        let mut e = self.line_end();
        if e == self.cursor && e < self.text.len() {
            e += 1;
        }
        let at = self.cursor;
        self.remove(at, e, true);
    }

    /// Kills the whitespace-delimited word before the cursor (Ctrl+W).
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches([' ', '\t']);
        let start = trimmed.rfind([' ', '\t', '\n']).map(|i| i + 1).unwrap_or(0);
        // A newline right before the cursor goes alone.
        let start = if trimmed.len() == before.len() && before.ends_with('\n') {
            self.cursor - 1
        } else {
            start
        };
        let at = self.cursor;
        self.remove(start, at, true);
    }

    /// Whether the cursor is on the first line (Up browses history there).
    pub fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    /// Whether the cursor is on the last line (Down browses history there).
    pub fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// The cursor's display column in its line.
    fn column(&self) -> usize {
        self.text[self.line_start()..self.cursor]
            .graphemes(true)
            .map(cluster_width)
            .sum()
    }

    fn move_to_column(&mut self, line_start: usize, col: usize) {
        let line = &self.text[line_start..];
        let line = &line[..line.find('\n').unwrap_or(line.len())];
        let mut used = 0;
        let mut off = 0;
        for g in line.graphemes(true) {
            let w = cluster_width(g);
            if used + w > col {
                break;
            }
            used += w;
            off += g.len();
        }
        self.cursor = line_start + off;
    }

    /// Moves up one line; false if already on the first.
    pub fn up(&mut self) -> bool {
        if self.on_first_line() {
            return false;
        }
        self.last = Last::Other;
        let col = self.column();
        let this_start = self.line_start();
        let prev_start = self.text[..this_start - 1]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0);
        self.move_to_column(prev_start, col);
        true
    }

    /// Moves down one line; false if already on the last.
    pub fn down(&mut self) -> bool {
        if self.on_last_line() {
            return false;
        }
        self.last = Last::Other;
        let col = self.column();
        let next_start = self.line_end() + 1;
        self.move_to_column(next_start, col);
        true
    }

    /// Shows the previous (older) history entry; false if there is none.
    pub fn history_prev(&mut self) -> bool {
        match self.history.prev(&self.text) {
            Some(t) => {
                self.show(t);
                true
            }
            None => false,
        }
    }

    /// Shows the next (newer) entry, or the draft past the newest.
    pub fn history_next(&mut self) -> bool {
        match self.history.next() {
            Some(t) => {
                self.show(t);
                true
            }
            None => false,
        }
    }

    /// Shows `text` as browsed (history, search): the cursor at the end.
    pub fn show(&mut self, text: String) {
        self.save(Last::Other);
        self.text = text;
        self.cursor = self.text.len();
    }

    /// The text with every folded paste expanded.
    pub fn expanded(&self) -> String {
        let mut text = self.text.clone();
        for f in &self.folds {
            if let Some(i) = text.find(&f.label) {
                text.replace_range(i..i + f.label.len(), &f.text);
            }
        }
        text
    }

    /// Takes the text out to send it: folded pastes expanded, remembered
    /// in the history (as typed, unless blank or equal to the newest
    /// entry) and the editor emptied.
    pub fn take(&mut self) -> String {
        let text = self.expanded();
        let shown = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.folds.clear();
        self.undo.clear();
        self.last = Last::Other;
        self.history.push(&text_for_history(&shown, &text));
        text
    }

    /// Rows of the editor wrapped at `width` columns, and the cursor's
    /// (row, column) among them. Tabs are drawn as spaces. A long text is
    /// laid out only around the cursor (the editor shows a few rows), so
    /// a key costs the same in a 5,000-line prompt as in a short one.
    pub fn layout(&self, width: usize) -> (Vec<String>, (usize, usize)) {
        const AROUND: usize = 40;
        let mut from = self.cursor;
        for _ in 0..=AROUND {
            match self.text[..from].rfind('\n') {
                Some(i) => from = i,
                None => {
                    from = 0;
                    break;
                }
            }
        }
        if from > 0 {
            from += 1;
        }
        let mut to = self.cursor;
        for _ in 0..=AROUND {
            match self.text[to..].find('\n') {
                Some(i) => to += i + 1,
                None => {
                    to = self.text.len();
                    break;
                }
            }
        }
        if from == 0 && to == self.text.len() {
            return layout_text(&self.text, self.cursor, width);
        }
        let to = if to < self.text.len() { to - 1 } else { to };
        layout_text(&self.text[from..to], self.cursor - from, width)
    }
}

/// [`Editor::layout`] of `text` with the cursor at byte `cursor`.
fn layout_text(text: &str, cursor: usize, width: usize) -> (Vec<String>, (usize, usize)) {
    {
        let width = width.max(2);
        let mut rows = vec![String::new()];
        let mut col = 0;
        let mut pos = (0, 0);
        for (i, g) in text.grapheme_indices(true) {
            if i == cursor {
                pos = (rows.len() - 1, col);
            }
            if g == "\n" || g == "\r\n" {
                rows.push(String::new());
                col = 0;
                continue;
            }
            let w = cluster_width(g);
            // Leave the last column for the cursor.
            if col + w >= width {
                rows.push(String::new());
                col = 0;
                if i == cursor {
                    pos = (rows.len() - 1, 0);
                }
            }
            let row = rows.last_mut().expect("rows is never empty");
            if g == "\t" {
                row.push_str(&" ".repeat(TAB));
            } else {
                row.push_str(g);
            }
            col += w;
        }
        if cursor >= text.len() {
            pos = (rows.len() - 1, col);
        }
        (rows, pos)
    }
}

/// What the history keeps of a sent prompt: the full text, unless it is
/// huge because of a folded paste (then what was shown).
fn text_for_history(shown: &str, full: &str) -> String {
    if full.len() > 64 * 1024 {
        shown.to_string()
    } else {
        full.to_string()
    }
}

/// Columns one grapheme cluster takes (a tab: [`TAB`]).
pub fn cluster_width(g: &str) -> usize {
    if g == "\t" {
        TAB
    } else {
        g.width()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(s: &str) -> Editor {
        let mut e = Editor::default();
        for c in s.chars() {
            e.insert_char(c);
        }
        e
    }

    #[test]
    fn editing_keeps_the_cursor_on_char_boundaries() {
        let mut e = typed("héllo");
        e.left();
        e.left();
        e.backspace();
        assert_eq!(e.text(), "hélo");
        e.home();
        e.delete();
        assert_eq!(e.text(), "élo");
        e.end();
        e.insert_char('!');
        assert_eq!(e.text(), "élo!");
    }

    #[test]
    fn combining_marks_and_emoji_move_and_delete_as_one() {
        // e + combining acute, then a family emoji (ZWJ sequence), then x.
        let mut e = typed("e\u{301}👨\u{200d}👩\u{200d}👧x");
        e.left();
        e.left();
        assert_eq!(&e.text()[..e.cursor()], "e\u{301}");
        e.backspace();
        assert_eq!(e.text(), "👨\u{200d}👩\u{200d}👧x");
        e.right();
        e.backspace();
        assert_eq!(e.text(), "x");
    }

    #[test]
    fn wide_characters_keep_their_column_between_lines() {
        let mut e = typed("日本語");
        e.newline();
        e.insert_str("abcdef");
        e.left();
        e.left(); // column 4
        assert!(e.up());
        assert_eq!(&e.text()[..e.cursor()], "日本");
        let (_, cur) = e.layout(20);
        assert_eq!(cur, (0, 4));
    }

    #[test]
    fn up_and_down_move_between_lines_then_fall_through() {
        let mut e = typed("first line");
        e.newline();
        e.insert_str("ab");
        assert!(!e.on_first_line());
        assert!(e.up());
        assert_eq!(&e.text()[..e.cursor()], "fi");
        assert!(!e.up(), "already on the first line");
        assert!(e.down());
        assert!(!e.down());
        assert_eq!(e.cursor(), e.text().len());
    }

    #[test]
    fn history_browses_older_entries_and_restores_the_draft() {
        let mut e = typed("one");
        assert_eq!(e.take(), "one");
        e.insert_str("two");
        e.take();
        e.insert_str("two");
        e.take(); // a repeat is not stored twice
        e.insert_str("draft");
        assert!(e.history_prev());
        assert_eq!(e.text(), "two");
        assert!(e.history_prev());
        assert_eq!(e.text(), "one");
        assert!(!e.history_prev());
        assert!(e.history_next());
        assert_eq!(e.text(), "two");
        assert!(e.history_next());
        assert_eq!(e.text(), "draft");
        assert!(!e.history_next());
    }

    #[test]
    fn pasted_text_is_normalised_and_stripped() {
        let mut e = Editor::default();
        e.insert_str("a\r\nb\rc\u{1b}[31md");
        assert_eq!(e.text(), "a\nb\ncd");
    }

    #[test]
    fn a_long_paste_folds_and_is_sent_in_full() {
        let mut e = typed("see ");
        let big: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        e.paste(&big);
        assert_eq!(e.text(), "see [pasted 12 lines]");
        e.paste(&big);
        assert_eq!(e.text(), "see [pasted 12 lines][pasted 12 lines #2]");
        let sent = e.take();
        assert_eq!(sent, format!("see {big}{big}"));
        let mut e = Editor::default();
        e.paste("a\nb");
        assert_eq!(e.text(), "a\nb", "a short paste is shown as it is");
    }

    #[test]
    fn kill_and_word_deletion() {
        let mut e = typed("one two  three");
        e.delete_word();
        assert_eq!(e.text(), "one two  ");
        e.delete_word();
        assert_eq!(e.text(), "one ");
        e.home();
        e.kill_to_end();
        assert_eq!(e.text(), "");
        let mut e = typed("abc def");
        e.left();
        e.kill_to_start();
        assert_eq!(e.text(), "f");
    }

    #[test]
    fn word_motion_kills_and_yank() {
        let mut e = typed("foo-bar baz");
        e.word_back();
        assert_eq!(&e.text()[e.cursor()..], "baz");
        e.word_back();
        assert_eq!(&e.text()[e.cursor()..], "bar baz");
        e.word_forward();
        assert_eq!(&e.text()[e.cursor()..], " baz");
        e.home();
        e.kill_word_forward();
        assert_eq!(e.text(), "-bar baz");
        e.end();
        e.kill_word_back();
        e.kill_word_back();
        assert_eq!(e.text(), "-");
        e.home();
        e.yank();
        assert_eq!(e.text(), "bar baz-", "successive kills join");
    }

    #[test]
    fn undo_takes_back_a_typed_run_then_a_kill() {
        let mut e = typed("hello");
        e.insert_char(' ');
        for c in "world".chars() {
            e.insert_char(c);
        }
        e.kill_to_start();
        assert_eq!(e.text(), "");
        assert!(e.undo());
        assert_eq!(e.text(), "hello world");
        assert!(e.undo());
        assert_eq!(e.text(), "hello ");
        assert!(e.undo());
        assert!(e.undo());
        assert_eq!(e.text(), "");
        assert!(!e.undo());
    }

    #[test]
    fn layout_wraps_and_places_the_cursor() {
        let e = typed("abcdef\ngh");
        let (rows, cur) = e.layout(4);
        assert_eq!(rows, vec!["abc", "def", "gh"]);
        assert_eq!(cur, (2, 2));
        let mut e = typed("ab");
        e.left();
        assert_eq!(e.layout(10).1, (0, 1));
        assert_eq!(Editor::default().layout(10), (vec![String::new()], (0, 0)));
    }
}
