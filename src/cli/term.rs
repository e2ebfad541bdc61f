//! Terminal concerns of the CLI: stripping control sequences from untrusted
//! text, colouring table cells, and turning signals into cancellation.
//!
//! Text from extensions (manifest descriptions, log files) is untrusted:
//! before it reaches a terminal every escape sequence and control character
//! other than newline and tab is removed. [`Sanitizer`] is stateful so that
//! a sequence split across two reads (as in `logs -f`) is still removed.

use crate::cancel::Canceller;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};
use std::thread::JoinHandle;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

/// Where the sanitizer is inside an escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Text,
    /// After ESC.
    Escape,
    /// Inside `ESC [ …` until a final byte.
    Csi,
    /// Inside an OSC/DCS/APC/PM/SOS string until BEL or `ESC \`.
    Str,
    /// After ESC inside such a string.
    StrEscape,
}

/// Removes terminal control sequences from a byte stream.
#[derive(Debug, Default)]
pub(crate) struct Sanitizer {
    state: State,
}

impl Sanitizer {
    /// Appends the printable part of `input` to `out`.
    pub(crate) fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &b in input {
            self.state = match self.state {
                State::Text => match b {
                    ESC => State::Escape,
                    b'\n' | b'\t' => {
                        out.push(b);
                        State::Text
                    }
                    0..=0x1f | 0x7f => State::Text,
                    _ => {
                        out.push(b);
                        State::Text
                    }
                },
                State::Escape => match b {
                    b'[' => State::Csi,
                    b']' | b'P' | b'X' | b'^' | b'_' => State::Str,
                    _ => State::Text,
                },
                State::Csi => match b {
                    0x40..=0x7e => State::Text,
                    _ => State::Csi,
                },
                State::Str => match b {
                    BEL => State::Text,
                    ESC => State::StrEscape,
                    _ => State::Str,
                },
                State::StrEscape => match b {
                    b'\\' => State::Text,
                    _ => State::Str,
                },
            };
        }
    }
}

/// `s` without control sequences, newlines or tabs: one table cell.
pub(crate) fn clean_cell(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    Sanitizer::default().push(s.as_bytes(), &mut out);
    String::from_utf8_lossy(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// `s` without control sequences; tabs become spaces; one line.
pub(crate) fn clean_line(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    Sanitizer::default().push(s.as_bytes(), &mut out);
    String::from_utf8_lossy(&out)
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

/// Cancels a [`Canceller`] on SIGINT, SIGTERM or SIGHUP while alive.
///
/// Once installed, these signals no longer kill the process: every
/// long-running step checks the token and rolls back. Child processes in
/// the foreground process group receive a terminal's SIGINT themselves.
pub(crate) struct SignalBridge {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl SignalBridge {
    /// Starts the bridge; `None` (signals keep their default action) if the
    /// handlers cannot be registered.
    pub(crate) fn install(canceller: Canceller) -> Option<Self> {
        let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP]).ok()?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("zut-ext-signals".into())
            .spawn(move || {
                for _ in signals.forever() {
                    canceller.cancel();
                }
            })
            .ok()?;
        Some(SignalBridge {
            handle,
            thread: Some(thread),
        })
    }
}

impl Drop for SignalBridge {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(chunks: &[&[u8]]) -> String {
        let mut s = Sanitizer::default();
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strips_sequences_even_when_split() {
        assert_eq!(strip(&[b"a\x1b[31mred\x1b[0m b\n"]), "ared b\n");
        assert_eq!(strip(&[b"x\x1b[3", b"1my"]), "xy");
        assert_eq!(strip(&[b"\x1b]0;title\x07t"]), "t");
        assert_eq!(strip(&[b"\x1b]8;;http://x\x1b\\link"]), "link");
        assert_eq!(strip(&[b"bell\x07\r\x08 \t\xc3\xa9"]), "bell \t\u{e9}");
    }

    #[test]
    fn cells_are_one_line() {
        assert_eq!(clean_cell("two\nlines\t \x1b[1mx"), "two lines x");
        assert_eq!(clean_line("  --> a.rs\x1b[0m\t "), "  --> a.rs");
        assert_eq!(paint("x", Paint::Red, false), "x");
        assert_eq!(paint("x", Paint::Red, true), "\x1b[31mx\x1b[0m");
    }
}
