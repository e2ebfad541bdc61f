//! The prompt editor: a multi-line text buffer with a cursor and a history
//! of sent prompts.
//!
//! Invariants: `cursor` is always a char boundary of `text`; history
//! browsing keeps the unsent draft and gives it back past the newest entry.

use super::text::{char_width, strip_controls, TAB};

/// The editor's text, cursor and history.
#[derive(Debug, Default, Clone)]
pub struct Editor {
    text: String,
    /// Byte offset into `text`.
    cursor: usize,
    history: Vec<String>,
    /// The history entry shown, when browsing.
    browsing: Option<usize>,
    /// What was typed before browsing started.
    draft: String,
}

/// At most this many prompts are remembered.
const HISTORY_MAX: usize = 500;

impl Editor {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The cursor as a byte offset.
    #[cfg(test)]
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Replaces the whole text; the cursor goes to the end.
    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.browsing = None;
    }

    /// Empties the editor (history stays).
    pub fn clear(&mut self) {
        self.set_text("");
    }

    pub fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    /// Inserts text at the cursor (typed, pasted or from an extension's
    /// `insert`): control sequences removed, CR LF and lone CR become LF.
    pub fn insert_str(&mut self, s: &str) {
        let clean = strip_controls(&s.replace("\r\n", "\n").replace('\r', "\n"));
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    pub fn newline(&mut self) {
        self.insert_char('\n');
    }

    fn prev_boundary(&self, at: usize) -> usize {
        self.text[..at]
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
            .unwrap_or(0)
    }

    fn next_boundary(&self, at: usize) -> usize {
        self.text[at..]
            .chars()
            .next()
            .map(|c| at + c.len_utf8())
            .unwrap_or(at)
    }

    pub fn backspace(&mut self) {
        if self.cursor > 0 {
            let p = self.prev_boundary(self.cursor);
            self.text.replace_range(p..self.cursor, "");
            self.cursor = p;
        }
    }

    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            let n = self.next_boundary(self.cursor);
            self.text.replace_range(self.cursor..n, "");
        }
    }

    pub fn left(&mut self) {
        self.cursor = self.prev_boundary(self.cursor);
    }

    pub fn right(&mut self) {
        self.cursor = self.next_boundary(self.cursor);
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
        self.cursor = self.line_start();
    }

    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Deletes from the line start to the cursor (Ctrl+U).
    pub fn kill_to_start(&mut self) {
        let s = self.line_start();
        self.text.replace_range(s..self.cursor, "");
        self.cursor = s;
    }

    /// Deletes from the cursor to the line end (Ctrl+K).
    pub fn kill_to_end(&mut self) {
        let e = self.line_end();
        self.text.replace_range(self.cursor..e, "");
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches([' ', '\t']);
        let start = trimmed.rfind([' ', '\t', '\n']).map(|i| i + 1).unwrap_or(0);
        // A newline right before the cursor goes alone.
        let start = if trimmed.len() == before.len() && before.ends_with('\n') {
            self.prev_boundary(self.cursor)
        } else {
            start
        };
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Whether the cursor is on the first line (Up browses history there).
    pub fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    /// Whether the cursor is on the last line (Down browses history there).
    pub fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    fn column(&self) -> usize {
        self.text[self.line_start()..self.cursor].chars().count()
    }

    fn move_to_column(&mut self, line_start: usize, col: usize) {
        let line = &self.text[line_start..];
        let line = &line[..line.find('\n').unwrap_or(line.len())];
        let off: usize = line.chars().take(col).map(char::len_utf8).sum();
        self.cursor = line_start + off;
    }

    /// Moves up one line; false if already on the first.
    pub fn up(&mut self) -> bool {
        if self.on_first_line() {
            return false;
        }
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
        let col = self.column();
        let next_start = self.line_end() + 1;
        self.move_to_column(next_start, col);
        true
    }

    /// Shows the previous (older) history entry; false if there is none.
    pub fn history_prev(&mut self) -> bool {
        let next = match self.browsing {
            None if self.history.is_empty() => return false,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return false,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        self.text = self.history[next].clone();
        self.cursor = self.text.len();
        true
    }

    /// Shows the next (newer) entry, or the draft past the newest.
    pub fn history_next(&mut self) -> bool {
        let Some(i) = self.browsing else {
            return false;
        };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            self.text = self.history[i + 1].clone();
        } else {
            self.browsing = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
        true
    }

    /// Takes the text out to send it: remembered in the history (unless
    /// blank or equal to the newest entry) and the editor emptied.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
            if self.history.len() > HISTORY_MAX {
                self.history.remove(0);
            }
        }
        text
    }

    /// Rows of the editor wrapped at `width` columns, and the cursor's
    /// (row, column) among them. Tabs are drawn as spaces.
    pub fn layout(&self, width: usize) -> (Vec<String>, (usize, usize)) {
        let width = width.max(2);
        let mut rows = vec![String::new()];
        let mut col = 0;
        let mut cursor = (0, 0);
        for (i, c) in self.text.char_indices() {
            if i == self.cursor {
                cursor = (rows.len() - 1, col);
            }
            if c == '\n' {
                rows.push(String::new());
                col = 0;
                continue;
            }
            let w = char_width(c);
            // Leave the last column for the cursor.
            if col + w >= width {
                rows.push(String::new());
                col = 0;
                if i == self.cursor {
                    cursor = (rows.len() - 1, 0);
                }
            }
            let row = rows.last_mut().expect("rows is never empty");
            if c == '\t' {
                row.push_str(&" ".repeat(TAB));
            } else {
                row.push(c);
            }
            col += w;
        }
        if self.cursor >= self.text.len() {
            cursor = (rows.len() - 1, col);
        }
        (rows, cursor)
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
