//! `-p`: stdout carries nothing but the final answer, so zut composes in
//! pipelines; extension notes, warnings and errors go to stderr, stripped
//! of terminal control sequences (extension text is untrusted). The answer
//! (model text, an interceptor's rewrite, a command's `display`) is
//! stripped too when stdout is a terminal, and left intact for a pipe.

use crate::events::Event;
use crate::sanitize::sanitize;
use std::io::{IsTerminal, Write};

/// `-p`: notes, warnings and errors on stderr as they come; the final
/// answer (the last assistant message of the turn, after `replace_text`)
/// on stdout at `done`.
#[derive(Default)]
pub struct Printer {
    /// What the last model step said (cleared when a new step starts).
    last_text: Option<String>,
    failed: bool,
    busy_tool: Option<String>,
    /// A command's `display` text, printed at `done` unless an error came.
    display: Option<String>,
}

impl super::Front for Printer {
    fn show(&mut self, event: &Event) {
        let line = match event {
            Event::TurnStart { .. } => {
                self.last_text = None;
                return;
            }
            Event::AssistantMessage {
                blocked: false,
                text,
                ..
            } => {
                self.last_text = Some(text.clone());
                return;
            }
            Event::AssistantMessage {
                blocked: true,
                reason,
                ..
            } => {
                self.last_text = None;
                format!("zut: the assistant's message was {reason}")
            }
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
            Event::ToolCall { name, .. } => {
                self.busy_tool = Some(name.clone());
                return;
            }
            Event::ToolBlocked {
                name,
                reason,
                extension,
                ..
            } => match extension.strip_prefix("hook ") {
                Some(cmd) => format!("zut: hook {cmd:?} blocked the {name} call: {reason}"),
                None => format!("zut: extension {extension} blocked the {name} call: {reason}"),
            },
            Event::PromptContinued { extension, reason } => {
                format!("zut: extension {extension} keeps the prompt going: {reason}")
            }
            Event::ToolResult {
                name,
                is_error,
                content,
                replaced_by: Some(by),
                ..
            } => {
                if *is_error {
                    let text = crate::agent::content_text(content);
                    format!("zut: extension {by} withheld or replaced the result of the {name} call: {text}")
                } else {
                    format!("zut: extension {by} replaced the result of the {name} call")
                }
            }
            Event::ToolResult {
                name,
                is_error: true,
                content,
                extension: None,
                ..
            } if crate::agent::CONFIRMED_TOOLS.contains(&name.as_str()) => {
                let text = crate::agent::content_text(content);
                if !text.contains("--yolo") {
                    return;
                }
                format!("zut: {text}")
            }
            Event::ExtOpenPanel { extension, panel } if self.busy_tool.is_some() => format!(
                "zut: extension {extension} opened the panel {:?} and waits for input that print mode cannot give; the call ends at the extension's own timeout or the tool deadline",
                panel.title
            ),
            Event::CommandResult { name, action, text } => match action.as_str() {
                "display" => {
                    self.display = Some(text.clone());
                    return;
                }
                "insert" | "open_panel" => format!(
                    "zut: /{name} answered with {action:?}, which needs the interactive terminal; nothing was done"
                ),
                _ => return,
            },
            Event::Hook {
                event,
                command,
                outcome,
                reason,
                system_message,
                ..
            } => {
                let mut lines = Vec::new();
                if !system_message.is_empty() {
                    lines.push(format!("[hook] {system_message}"));
                }
                match outcome.as_str() {
                    // The tool_blocked line names the tool.
                    "block" if event == "PreToolUse" => {}
                    "block" => lines.push(hook_block_line(event, command, reason)),
                    "error" | "timeout" => {
                        lines.push(format!("zut: hook {command:?} ({event}) failed: {reason}"))
                    }
                    _ => {}
                }
                if lines.is_empty() {
                    return;
                }
                lines.join("\n")
            }
            Event::Error { message } => {
                self.failed = true;
                format!("zut: {message}")
            }
            Event::TurnEnd { stop, .. } if stop == "refusal" => {
                self.failed = true;
                match self.last_text.take().filter(|t| !t.trim().is_empty()) {
                    Some(t) => format!("zut: the model refused to answer: {t}"),
                    None => "zut: the model refused to answer".to_string(),
                }
            }
            Event::Retry {
                attempt,
                wait_ms,
                reason,
            } => format!(
                "zut: {reason}; trying again in {:.1} s (attempt {attempt} of {})",
                *wait_ms as f64 / 1000.0,
                crate::provider::MAX_TRIES
            ),
            Event::Done => {
                if !self.failed {
                    if let Some(t) = self.display.take() {
                        stdout_line(&t);
                    }
                    if let Some(t) = self.last_text.take() {
                        stdout_line(&t);
                    }
                }
                return;
            }
            _ => return,
        };
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{}", sanitize(&line));
    }

    fn exit_code(&self) -> i32 {
        if self.failed {
            crate::core::EXIT_FAILURE
        } else {
            crate::core::EXIT_OK
        }
    }
}

/// What a blocking hook of `event` did, for stderr.
fn hook_block_line(event: &str, command: &str, reason: &str) -> String {
    let what = match event {
        "Stop" => "did not let the agent stop",
        "UserPromptSubmit" => "blocked the prompt",
        "PostToolUse" | "PostToolUseFailure" => "objected to the tool result",
        "PreCompact" => "cancelled the compaction",
        // Exit 2 cannot block these; the reason is only shown.
        _ => "said",
    };
    match reason.trim() {
        "" => format!("zut: hook {command:?} {what}"),
        r => format!("zut: hook {command:?} {what}: {r}"),
    }
}

/// Prints `text` and one newline on stdout; a closed pipe is not an error.
/// Sanitized when stdout is a terminal, byte for byte into a pipe.
pub fn stdout_line(text: &str) {
    let mut out = std::io::stdout().lock();
    let text = crate::sanitize::for_output(text, out.is_terminal());
    let _ = writeln!(out, "{text}").and_then(|_| out.flush());
}
