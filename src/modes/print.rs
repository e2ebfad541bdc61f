//! `-p`: stdout carries nothing but the final answer, so zut composes in
//! pipelines; extension notes, warnings and errors go to stderr, stripped
//! of terminal control sequences (extension text is untrusted). The answer
//! (model text, an interceptor's rewrite, a command's `display`) is
//! stripped too when stdout is a terminal, and left intact for a pipe.
//!
//! An extension that fails to load fails at every run, so its error block
//! is printed in full once a day (and again when it changes), then as one
//! line; what was shown is remembered in `$ZUT_HOME/state/shown-errors.json`
//! ([`ShownErrors`]), and a memo that cannot be read or written only means
//! the block is printed in full.

use crate::events::Event;
use crate::host::discovery::Source;
use crate::sanitize::sanitize;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

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
    /// The extensions that failed to load in this run: their diagnostic
    /// and where they were found.
    load_failures: HashMap<String, (String, Source, PathBuf)>,
    /// Which load failures were already shown today.
    shown: Option<ShownErrors>,
}

impl Printer {
    /// A printer for a run whose load ended as `report`, remembering the
    /// load failures it shows under `zut_home`.
    pub fn for_run(zut_home: &Path, report: &crate::host::LoadReport) -> Printer {
        let load_failures = report
            .loaded
            .iter()
            .filter_map(|l| match &l.outcome {
                crate::host::Outcome::Failed(m) => Some((
                    l.entry.name(),
                    (m.clone(), l.entry.source, l.entry.dir.clone()),
                )),
                _ => None,
            })
            .collect();
        Printer {
            load_failures,
            shown: Some(ShownErrors::open(zut_home)),
            ..Printer::default()
        }
    }

    /// A load failure of `extension`: the whole block with how to stop
    /// loading it, or (shown already today) one line.
    fn load_failure(&mut self, extension: &str, message: &str) -> Option<String> {
        let (known, source, dir) = self.load_failures.get(extension)?;
        if known != message {
            return None;
        }
        let silence = match source {
            Source::Flag => format!("to stop loading it, leave out --ext {}", dir.display()),
            _ => format!("to stop loading it: zut ext disable {extension}"),
        };
        let first = self
            .shown
            .as_mut()
            .is_none_or(|s| s.first_today(extension, message));
        Some(if first {
            format!("zut: extension {extension}: {message}\n{silence}")
        } else {
            format!(
                "zut: extension {extension} failed to load, as shown in full earlier today \
                 (zut ext doctor {extension} has the details; {silence})"
            )
        })
    }
}

/// The load failures printed in full, by extension: a hash of the block
/// and the day (UTC) it was shown.
pub struct ShownErrors {
    path: PathBuf,
    shown: serde_json::Map<String, serde_json::Value>,
}

impl ShownErrors {
    /// The memo under `zut_home`; unreadable or corrupt is empty.
    pub fn open(zut_home: &Path) -> ShownErrors {
        let path = zut_home.join("state").join("shown-errors.json");
        let shown = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| match v {
                serde_json::Value::Object(m) => Some(m),
                _ => None,
            })
            .unwrap_or_default();
        ShownErrors { path, shown }
    }

    /// Whether `block` of `extension` was not yet shown today; if not, it
    /// is remembered as shown now (a failed write is ignored: the block is
    /// then shown in full next time too).
    pub fn first_today(&mut self, extension: &str, block: &str) -> bool {
        let today = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() / 86_400)
            .unwrap_or(0);
        let hash = format!("{:016x}", fnv1a(block.as_bytes()));
        let entry = serde_json::json!({"hash": hash, "day": today});
        if self.shown.get(extension) == Some(&entry) {
            return false;
        }
        self.shown.insert(extension.to_string(), entry);
        if let Err(e) = self.save() {
            log::debug!("cannot write {}: {e}", self.path.display());
        }
        true
    }

    fn save(&self) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".shown-errors.")
            .tempfile_in(dir)?;
        serde_json::to_writer(&mut tmp, &self.shown)?;
        tmp.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// FNV-1a: a hash that stays the same across builds, for the memo.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
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
            Event::ExtError { extension, message } => self
                .load_failure(extension, message)
                .unwrap_or_else(|| format!("zut: extension {extension}: {message}")),
            // zut's own notes about the run (see boot's ancestor note).
            Event::ExtWarning { extension, message } if extension == "zut" => {
                format!("zut: note: {message}")
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
                Some(cmd) => format!(
                    "zut: hook \"{}\" blocked the {name} call: {reason}",
                    crate::hooks::shown_command(cmd)
                ),
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
                "zut: extension {extension} opened the panel {:?}, which needs a person at the terminal; zut closed it at once (panel_close), so the call goes on without that input",
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
                    "block" => lines.extend(
                        crate::hooks::shown_block(event, command, reason)
                            .map(|text| format!("zut: hook {text}")),
                    ),
                    "error" | "timeout" => lines.push(format!(
                        "zut: hook \"{}\" ({event}) failed: {reason}",
                        crate::hooks::shown_command(command)
                    )),
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

/// Prints `text` and one newline on stdout; a closed pipe is not an error.
/// Sanitized when stdout is a terminal, byte for byte into a pipe.
pub fn stdout_line(text: &str) {
    let mut out = std::io::stdout().lock();
    let text = crate::sanitize::for_output(text, out.is_terminal());
    let _ = writeln!(out, "{text}").and_then(|_| out.flush());
}
