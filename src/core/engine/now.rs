//! Extension commands typed during a turn: they run at once, beside the
//! turn, instead of queueing behind it on the worker (so `/todo` can open
//! and update its panel while the model works).
//!
//! Only a name the registry knows as an extension command, and only while
//! the worker is busy, goes this way; built-ins, skills and unknown names
//! keep their place in the worker's queue. Such a command ends without
//! `done` (the running turn's `done` is still to come); a `prompt` action
//! arrives as `ext_submit`, which a front end starts or queues like any
//! extension's submit.

use super::{lock, Engine};
use crate::cancel::CancelToken;
use crate::events::Event;

impl Engine {
    /// Runs `line` now when it names an extension command and a job is
    /// running; false otherwise.
    pub(super) fn extension_command_now(&self, line: &str) -> bool {
        let line = line.trim().trim_start_matches('/');
        let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        if name.is_empty() || name.contains(':') || !lock(&self.shared).busy {
            return false;
        }
        if self.host.command(name).is_none() {
            return false;
        }
        let replies = self
            .host
            .invoke_command_async(name, args.trim(), CancelToken::never());
        let (events, name) = (self.events.clone(), name.to_string());
        let spawned = std::thread::Builder::new()
            .name("zut-command-now".into())
            .spawn(move || {
                let reply = match replies.recv() {
                    Ok(Ok(r)) => r,
                    Ok(Err(e)) => {
                        let _ = events.send(Event::Error {
                            message: format!("/{name}: {e}"),
                        });
                        return;
                    }
                    Err(_) => return,
                };
                let (action, text) = reply.action_and_text();
                let error = reply.error.trim();
                if action == "display" && error.is_empty() {
                    let _ = events.send(Event::ExtDisplay {
                        extension: reply.extension.clone(),
                        text: text.clone(),
                    });
                }
                if let (Some(panel), true) = (&reply.open_panel, action == "open_panel") {
                    let _ = events.send(Event::ExtOpenPanel {
                        extension: reply.extension.clone(),
                        panel: panel.clone(),
                    });
                }
                let _ = events.send(Event::CommandResult {
                    name: reply.name.clone(),
                    action: action.clone(),
                    text: text.clone(),
                });
                if !error.is_empty() {
                    let _ = events.send(Event::Error {
                        message: format!("/{}: {error}", reply.name),
                    });
                    return;
                }
                match action.as_str() {
                    "prompt" if !text.trim().is_empty() => {
                        let _ = events.send(Event::ExtSubmit {
                            extension: reply.extension.clone(),
                            text,
                        });
                    }
                    "prompt" | "display" | "noop" | "insert" | "open_panel" => {}
                    other => {
                        let _ = events.send(Event::Error {
                            message: format!("/{}: unknown action {other:?}", reply.name),
                        });
                    }
                }
            });
        if let Err(e) = spawned {
            log::warn!("cannot start a command thread: {e}");
        }
        true
    }
}
