//! Claude Code hooks as zut interceptors.
//!
//! Role: read the `hooks` of the Claude Code settings files (and zut's own
//! `$ZUT_HOME/settings.json`), pick the handlers that match one event, run
//! them as `sh -c COMMAND` in parallel through the child guard, and fold
//! their exit codes and JSON answers into one [`Verdict`].
//!
//! Call sites ([`agent`]): the agent fires the tool, prompt, stop and
//! auto-compaction events; the engine fires `SessionStart` (before the
//! first job, after `/new`, a switch, a fork and `/compact`), `SessionEnd`
//! (at shutdown and before another session becomes active) and the manual
//! `PreCompact`. `zut hooks` reads the same files through
//! [`settings::inspect`].
//!
//! Invariants:
//! - a malformed entry is a warning naming the file and the JSON path; the
//!   rest of that file still loads;
//! - identical commands of one event run once, across sources and matcher
//!   groups (the first occurrence's timeout and `onFailure` apply);
//! - a timeout or crash never blocks unless the handler says
//!   `"onFailure":"block"`; a timed-out hook's process group is killed;
//! - across handlers: deny > ask > allow; `updatedInput`s in configuration
//!   order; contexts joined in configuration order.

pub mod agent;
pub mod matcher;
pub mod result;
pub mod runner;
pub mod settings;
pub mod tools;

pub use result::Verdict;
pub use settings::{Handler, HookSet};

use crate::events::{Event, EventSink};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Mutex;

/// The loaded hooks of one run and the session identity their input names.
#[derive(Debug, Default)]
pub struct Hooks {
    pub set: HookSet,
    pub project: PathBuf,
    /// `--yolo`: `permission_mode` is `bypassPermissions`.
    pub yolo: bool,
    /// Session id and transcript path.
    pub session: Mutex<(String, String)>,
    /// A tool hook's `continue:false`: the prompt ends after this call,
    /// with this reason (taken by [`agent::halted`]).
    pub halt: Mutex<Option<String>>,
}

impl Hooks {
    /// Loads every source (none with `--no-hooks`).
    pub fn load(
        project: &std::path::Path,
        zut_home: &std::path::Path,
        yolo: bool,
        off: bool,
    ) -> Hooks {
        Hooks {
            set: if off {
                HookSet::default()
            } else {
                HookSet::load(project, zut_home)
            },
            project: project.to_path_buf(),
            yolo,
            session: Mutex::new(Default::default()),
            halt: Mutex::new(None),
        }
    }

    /// The session the hooks' input names from now on (`None`: no
    /// session is kept, the fields are empty).
    pub fn set_session(&self, session: Option<&crate::session::Session>) {
        if let Ok(mut ident) = self.session.lock() {
            *ident = session
                .map(|s| (s.id().to_string(), s.path().display().to_string()))
                .unwrap_or_default();
        }
    }

    /// Whether any handler is configured for `event` (the cheap check
    /// before building input).
    pub fn has(&self, event: &str) -> bool {
        self.set.handlers.iter().any(|h| h.event == event)
    }

    /// Runs the handlers of `event` matching `subject` (the tool name, the
    /// session start's `source`, the end's `reason`, the compaction's
    /// `trigger`, the notification's type; `None` for events without
    /// matchers) with the common
    /// input fields plus `extra`, reports a `hook` event per handler, and
    /// combines the answers.
    pub fn fire(
        &self,
        event: &str,
        subject: Option<&str>,
        extra: Value,
        sink: &dyn EventSink,
    ) -> Verdict {
        let handlers = self.set.matching(event, subject);
        if handlers.is_empty() {
            return Verdict::default();
        }
        let (sid, path) = self.session.lock().map(|s| s.clone()).unwrap_or_default();
        let mut input = json!({
            "session_id": sid,
            "transcript_path": path,
            "cwd": self.project.display().to_string(),
            "permission_mode": if self.yolo { "bypassPermissions" } else { "default" },
            "hook_event_name": event,
        });
        if let (Some(m), Value::Object(x)) = (input.as_object_mut(), extra) {
            m.extend(x);
        }
        let bytes = input.to_string().into_bytes();
        let runs = runner::run_all(&handlers, &bytes, &self.project);
        let plain = matches!(event, "UserPromptSubmit" | "SessionStart");
        let answers: Vec<(&Handler, result::Answer)> = handlers
            .iter()
            .zip(&runs)
            .map(|(h, r)| (*h, result::answer(h, r, plain)))
            .collect();
        for ((h, a), r) in answers.iter().zip(&runs) {
            sink.emit(Event::Hook {
                event: event.to_string(),
                command: h.command.chars().take(120).collect(),
                exit: a.exit,
                outcome: a.outcome.to_string(),
                reason: a.reason.clone(),
                ms: r.ms,
                system_message: a.system_message.clone(),
            });
        }
        result::combine(&answers)
    }
}

/// Characters of a hook's command shown to a person (a one-line script
/// can be a screen long); events carry more (see [`Event::Hook`]).
const SHOWN_COMMAND_CHARS: usize = 72;

/// The name the transcript gives a message a `Stop` hook sent to the
/// model ([`crate::provider::Message::from`]), shown as `[hook] reason`.
pub const CONTINUED_BY: &str = "hook";

/// A hook's command as a person reads it in a message: its first line,
/// each path in it shortened to `…/` and its file name (hooks are mostly
/// `"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh`: the name is what tells
/// them apart), cut with `…` at 72 characters.
pub fn shown_command(command: &str) -> String {
    let trimmed = command.trim();
    let first = trimmed.lines().next().unwrap_or("");
    let short = first
        .split(' ')
        .map(short_path)
        .collect::<Vec<_>>()
        .join(" ");
    if short.chars().count() <= SHOWN_COMMAND_CHARS && first.len() == trimmed.len() {
        return short;
    }
    let kept: String = short.chars().take(SHOWN_COMMAND_CHARS - 1).collect();
    format!("{}…", kept.trim_end())
}

/// `'/a/b/check.sh'` → `'…/check.sh'`; a word that is not a path of two or
/// more parts (`a/b`, `/etc`) is returned as it is.
fn short_path(word: &str) -> String {
    let quote = |c: char| c == '\'' || c == '"';
    let inner = word.trim_matches(quote);
    match inner.rsplit_once('/') {
        Some((dir, name)) if !name.is_empty() && dir.contains('/') => {
            // Quotes around the whole word stay; a quote inside it
            // (`"$DIR"/x.sh`) goes with the directory.
            let quoted = word.len() > 1 && word.starts_with(quote) && word.ends_with(quote);
            let q = if quoted { &word[..1] } else { "" };
            format!("{q}…/{name}{q}")
        }
        _ => word.to_string(),
    }
}

/// What a person reads when a hook blocked, after the word "hook":
/// `"CMD" did not let the agent stop: REASON`, worded by event. The
/// command is quoted as it is (no escapes: a person reads it). `None`
/// where what was blocked says it already, naming the hook: the call of
/// a `PreToolUse` block, the refused prompt of `UserPromptSubmit`, the
/// failed compaction of `PreCompact`.
pub fn shown_block(event: &str, command: &str, reason: &str) -> Option<String> {
    let what = match event {
        "PreToolUse" | "UserPromptSubmit" | "PreCompact" => return None,
        "Stop" => "did not let the agent stop",
        "PostToolUse" | "PostToolUseFailure" => "objected to the tool result",
        // Exit 2 cannot block these; the reason is only shown.
        _ => "said",
    };
    let command = shown_command(command);
    Some(match reason.trim() {
        "" => format!("\"{command}\" {what}"),
        r => format!("\"{command}\" {what}: {r}"),
    })
}

/// A tool_blocked `extension` as a person reads it: `hook COMMAND` gets
/// its command shortened, anything else is returned as it is.
pub fn shown_blocker(extension: &str) -> std::borrow::Cow<'_, str> {
    match extension.strip_prefix("hook ") {
        Some(cmd) => format!("hook {}", shown_command(cmd)).into(),
        None => extension.into(),
    }
}

/// At engine start: the session the hooks' input names, and every
/// settings warning as an `ext_warning` of `hooks`.
pub fn announce(
    hooks: &Hooks,
    session: Option<&crate::session::Session>,
    events: &crossbeam_channel::Sender<Event>,
) {
    hooks.set_session(session);
    for w in &hooks.set.warnings {
        let _ = events.send(Event::ExtWarning {
            extension: "hooks".into(),
            message: w.clone(),
        });
    }
}

#[cfg(test)]
mod shown_tests {
    use super::*;

    #[test]
    fn commands_are_shown_short_and_on_one_line() {
        assert_eq!(shown_command("  ./check.sh  "), "./check.sh");
        assert_eq!(
            shown_command("python3 '/home/me/p/.claude/hooks/gate.py' --strict"),
            "python3 '…/gate.py' --strict"
        );
        assert_eq!(
            shown_command("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/fmt.sh a/b"),
            "…/fmt.sh a/b"
        );
        assert_eq!(shown_command("cat /etc"), "cat /etc");
        let long = format!("python3 -c \"{}\"", "x".repeat(80));
        let shown = shown_command(&long);
        assert_eq!(shown.chars().count(), SHOWN_COMMAND_CHARS);
        assert!(shown.starts_with("python3 -c \"xx") && shown.ends_with('…'));
        assert_eq!(shown_command("set -e\nmake lint"), "set -e…");
        assert_eq!(shown_blocker("hook set -e\nmake"), "hook set -e…");
        assert_eq!(shown_blocker("guard"), "guard");
    }

    #[test]
    fn a_block_is_told_once() {
        assert_eq!(
            shown_block("Stop", "sh /p/.claude/stop.sh", "run the tests").as_deref(),
            Some("\"sh …/stop.sh\" did not let the agent stop: run the tests")
        );
        assert_eq!(
            shown_block("PostToolUse", "./lint.sh", " ").as_deref(),
            Some("\"./lint.sh\" objected to the tool result")
        );
        // What they blocked fails naming the hook: no second line.
        for event in ["PreToolUse", "UserPromptSubmit", "PreCompact"] {
            assert_eq!(shown_block(event, "./x.sh", "no"), None, "{event}");
        }
    }
}
