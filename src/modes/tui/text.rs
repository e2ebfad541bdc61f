//! Text helpers for drawing: control-sequence stripping, display width,
//! wrapping and truncation.
//!
//! Invariant: everything an extension, a tool or the model wrote goes
//! through [`strip_controls`] before it reaches a cell, so no byte of it can
//! move the cursor, change colours or talk to the terminal.

use unicode_width::UnicodeWidthChar;

/// Removes terminal control sequences and control characters from `text`
/// (everything but newline and tab): zut's one sanitiser,
/// [`crate::sanitize::sanitize`], as an owned string for a cell.
pub fn strip_controls(text: &str) -> String {
    crate::sanitize::sanitize(text).into_owned()
}

/// Columns `c` occupies (tabs count as [`TAB`] spaces).
pub fn char_width(c: char) -> usize {
    if c == '\t' {
        TAB
    } else {
        c.width().unwrap_or(0)
    }
}

/// How many spaces a tab becomes.
pub const TAB: usize = 4;

/// Display width of `s`.
pub fn width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// `s` with tabs expanded to spaces, for drawing.
pub fn expand_tabs(s: &str) -> String {
    if s.contains('\t') {
        s.replace('\t', &" ".repeat(TAB))
    } else {
        s.to_string()
    }
}

/// Cuts `s` to at most `max` columns, ending in `...` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return expand_tabs(s);
    }
    if max <= 3 {
        return ".".repeat(max);
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w > max - 3 {
            break;
        }
        used += w;
        if c == '\t' {
            out.push_str(&" ".repeat(TAB));
        } else {
            out.push(c);
        }
    }
    out.push_str("...");
    out
}

/// Splits `text` into rows of at most `max` columns: on newlines, then at
/// the last space that fits, else mid-word. Tabs are expanded. A line that
/// starts indented keeps its indent on the rows it wraps onto (a hanging
/// indent, as long as it takes at most half the width), so a wrapped list
/// item or `key: value` row still reads as part of its block. An empty
/// text is one empty row.
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    wrap_hanging(text, max, None)
}

/// [`wrap`] for one two-column row (`/name   what it does`): the rows it
/// wraps onto start under the second column, when that column is at most
/// half the width. Anything else (several lines, one column) wraps as
/// [`wrap`] does.
pub fn wrap_columns(text: &str, max: usize) -> Vec<String> {
    wrap_hanging(text, max, second_column(text))
}

/// Where the second column of `term  description` starts: after the
/// first run of two or more spaces past the indent (a term may hold
/// single spaces: `PageUp / PageDown  scroll`), or after the `key: ` of a
/// `key: value` row.
fn second_column(text: &str) -> Option<usize> {
    if text.contains('\n') {
        return None;
    }
    let text = expand_tabs(text);
    let indent = text.len() - text.trim_start_matches(' ').len();
    let first_word = text[indent..].split(' ').next().unwrap_or("");
    if first_word.len() > 1 && first_word.ends_with(':') {
        let end = indent + first_word.len() + 1;
        return (end < text.len()).then(|| width(&text[..end]));
    }
    let gap = indent + text[indent..].find("  ")?;
    let end = text.len() - text[gap..].trim_start_matches(' ').len();
    (end < text.len()).then(|| width(&text[..end]))
}

fn wrap_hanging(text: &str, max: usize, hang: Option<usize>) -> Vec<String> {
    let max = max.max(1);
    let mut rows = Vec::new();
    for line in text.split('\n') {
        let line = expand_tabs(line);
        if width(&line) <= max {
            rows.push(line);
            continue;
        }
        let indent_len = line.len() - line.trim_start_matches(' ').len();
        let hang = hang.unwrap_or(indent_len);
        let spaces = " ".repeat(hang);
        let indent = if hang * 2 <= max { spaces.as_str() } else { "" };
        // Every row starts with `indent`: the first has it from the line.
        let mut row = String::new();
        let mut used = 0;
        // The leading spaces of the current row, which are never a break.
        let mut lead = indent_len;
        // Byte index in `row` just after the last space past the lead,
        // and the width up to it.
        let mut last_space: Option<(usize, usize)> = None;
        for c in line.chars() {
            let w = char_width(c);
            if used + w > max && c == ' ' {
                // The overflowing space is the break itself.
                rows.push(row.trim_end().to_string());
                (row, used, lead) = (indent.to_string(), indent.len(), indent.len());
                last_space = None;
                continue;
            }
            if used + w > max {
                match last_space {
                    Some((at, w_at)) if at < row.len() => {
                        let rest = row.split_off(at);
                        rows.push(row.trim_end().to_string());
                        used = used - w_at + indent.len();
                        row = format!("{indent}{rest}");
                    }
                    _ => {
                        rows.push(row.trim_end().to_string());
                        (row, used) = (indent.to_string(), indent.len());
                    }
                }
                lead = indent.len();
                last_space = None;
            }
            row.push(c);
            used += w;
            if c == ' ' && row.len() > lead {
                last_space = Some((row.len(), used));
            }
        }
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_column_row_wraps_under_its_second_column() {
        let row = "/switch      switch to a session or branch of this project";
        assert_eq!(
            wrap_columns(row, 40),
            [
                "/switch      switch to a session or",
                "             branch of this project"
            ]
        );
        // A `key: value` row hangs under its value.
        assert_eq!(
            wrap_columns("  tools: alpha, beta, gamma", 20),
            ["  tools: alpha,", "         beta, gamma"]
        );
        // A term may hold single spaces.
        assert_eq!(
            wrap_columns("PageUp / PageDown  scroll the chat by a screen", 40),
            [
                "PageUp / PageDown  scroll the chat by a",
                "                   screen"
            ]
        );
        // One column, or a second column past half the width: as wrap.
        assert_eq!(
            wrap_columns("one two three four", 9),
            wrap("one two three four", 9)
        );
        assert_eq!(
            wrap_columns("/a-very-long-name  does things", 20),
            wrap("/a-very-long-name  does things", 20)
        );
    }

    #[test]
    fn strip_controls_removes_every_kind_of_sequence() {
        assert_eq!(strip_controls("\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(strip_controls("a\u{1b}]0;title\u{7}b"), "ab");
        assert_eq!(
            strip_controls("a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\b"),
            "alinkb"
        );
        assert_eq!(strip_controls("x\u{1b}Pdcs\u{1b}\\y"), "xy");
        assert_eq!(strip_controls("\u{1b}(Bok\u{1b}7"), "ok");
        assert_eq!(
            strip_controls("bell\u{7} cr\r bs\u{8} del\u{7f} c1\u{9b}2J."),
            "bell cr bs del c1."
        );
        assert_eq!(strip_controls("keep\nnew\tlines"), "keep\nnew\tlines");
        assert_eq!(strip_controls("trailing\u{1b}"), "trailing");
        assert_eq!(strip_controls("ünï ✓ 日本"), "ünï ✓ 日本");
    }

    #[test]
    fn wrap_breaks_at_spaces_then_mid_word_and_keeps_newlines() {
        assert_eq!(wrap("hello world foo", 11), vec!["hello world", "foo"]);
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("a\n\nb", 10), vec!["a", "", "b"]);
        assert_eq!(wrap("", 10), vec![""]);
        assert_eq!(
            wrap("日本語テキスト", 4),
            vec!["日本", "語テ", "キス", "ト"]
        );
        for row in wrap("some long words that wrap in a narrow column", 7) {
            assert!(width(&row) <= 7, "{row:?}");
        }
    }

    #[test]
    fn wrapped_rows_keep_the_indent_of_their_line() {
        assert_eq!(
            wrap("    tools: alpha, beta, gamma", 20),
            vec!["    tools: alpha,", "    beta, gamma"]
        );
        // Mid-word breaks keep it too.
        assert_eq!(wrap("  abcdefghij", 6), vec!["  abcd", "  efgh", "  ij"]);
        // A space right at the edge is the break; the next row is indented.
        assert_eq!(wrap("  ab cd ef", 5), vec!["  ab", "  cd", "  ef"]);
        // An indent wider than half the row is not repeated (no progress
        // otherwise), and the indent itself is never a break point.
        assert_eq!(wrap("      abcdef", 8), vec!["      ab", "cdef"]);
        for max in 1..12 {
            for row in wrap("   some long words\tthat wrap   in a column", max) {
                assert!(width(&row) <= max, "{max}: {row:?}");
            }
        }
    }

    #[test]
    fn truncate_marks_the_cut() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("a long line of text", 10), "a long ...");
        assert_eq!(truncate("abc", 2), "..");
        assert_eq!(width(&truncate("日本語テキスト", 7)), 7);
    }
}
