//! Terminal concerns of the CLI: stripping control sequences from untrusted
//! text and colouring table cells.
//!
//! Text from extensions (manifest descriptions, log files) is untrusted:
//! table cells and lines go through [`crate::sanitize`] before they reach a
//! terminal.

use crate::sanitize::sanitize;

/// `s` without control sequences, newlines or tabs: one table cell.
pub(crate) fn clean_cell(s: &str) -> String {
    sanitize(s).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` without control sequences; tabs become spaces; one line.
pub(crate) fn clean_line(s: &str) -> String {
    sanitize(s)
        .replace(['\n', '\t'], " ")
        .trim_end()
        .to_string()
}

/// SGR colours used by the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paint {
    Bold,
    Dim,
    Green,
    Yellow,
    Red,
}

/// `text` wrapped in the SGR sequence for `paint` when `color` is on.
pub(crate) fn paint(text: &str, paint: Paint, color: bool) -> String {
    if !color {
        return text.to_string();
    }
    let code = match paint {
        Paint::Bold => "1",
        Paint::Dim => "2",
        Paint::Green => "32",
        Paint::Yellow => "33",
        Paint::Red => "31",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_one_line() {
        assert_eq!(clean_cell("two\nlines\t \x1b[1mx"), "two lines x");
        assert_eq!(clean_line("  --> a.rs\x1b[0m\t "), "  --> a.rs");
        assert_eq!(paint("x", Paint::Red, false), "x");
        assert_eq!(paint("x", Paint::Red, true), "\x1b[31mx\x1b[0m");
    }
}
