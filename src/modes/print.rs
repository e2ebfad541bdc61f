//! `-p`: stdout carries nothing but the final answer, so zut composes in
//! pipelines; extension notes, warnings and errors go to stderr, stripped
//! of terminal control sequences (extension text is untrusted).

use crate::events::{Event, EventSink};
use std::io::Write;

/// Renders host events for a person reading stderr.
#[derive(Default)]
pub struct PrintSink;

impl EventSink for PrintSink {
    fn emit(&self, event: Event) {
        let line = match event {
            Event::ExtNotify {
                extension,
                level,
                message,
            } => {
                let tag = if level == "info" {
                    String::new()
                } else {
                    format!("{level}: ")
                };
                format!("[{extension}] {tag}{message}")
            }
            Event::ExtError { extension, message } => {
                format!("zut: extension {extension}: {message}")
            }
            Event::ExtWarning { extension, message } => {
                format!("zut: warning: extension {extension}: {message}")
            }
            Event::ExtDisplay { extension, text } => format!("[{extension}] {text}"),
            Event::AssistantMessage {
                blocked: true,
                reason,
                ..
            } => {
                format!("zut: the assistant's message was {reason}")
            }
            _ => return,
        };
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{}", sanitize(&line));
    }
}

/// Prints `text` and one newline on stdout; a closed pipe is not an error.
pub fn stdout_line(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|_| out.flush());
}

/// Removes terminal escape sequences and control characters other than
/// newline and tab.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                // CSI: ESC [ params final-byte
                Some('[') => {
                    chars.next();
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        if ('\u{40}'..='\u{7e}').contains(&n) {
                            break;
                        }
                    }
                }
                // OSC / DCS / APC…: until BEL or ESC \
                Some(']' | 'P' | '_' | '^' | 'X') => {
                    chars.next();
                    while let Some(n) = chars.next() {
                        if n == '\u{7}' || (n == '\u{1b}' && chars.peek() == Some(&'\\')) {
                            if n == '\u{1b}' {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                _ => {
                    chars.next();
                }
            },
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn strips_escapes_and_controls() {
        assert_eq!(sanitize("a\u{1b}[31mred\u{1b}[0m b"), "ared b");
        assert_eq!(sanitize("x\u{1b}]0;title\u{7}y"), "xy");
        assert_eq!(sanitize("bell\u{7}\r\nok\tz"), "bell\nok\tz");
    }
}
