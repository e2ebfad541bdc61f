//! `-p`: stdout carries nothing but the final answer, so zut composes in
//! pipelines; extension notes, warnings and errors go to stderr, stripped
//! of terminal control sequences (extension text is untrusted). The answer
//! (model text, an interceptor's rewrite, a command's `display`) is
//! stripped too when stdout is a terminal, and left intact for a pipe.

use crate::events::{Event, EventSink};
use crate::sanitize::sanitize;
use std::io::{IsTerminal, Write};

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
/// Sanitized when stdout is a terminal, byte for byte into a pipe.
pub fn stdout_line(text: &str) {
    let mut out = std::io::stdout().lock();
    let text = crate::sanitize::for_output(text, out.is_terminal());
    let _ = writeln!(out, "{text}").and_then(|_| out.flush());
}
