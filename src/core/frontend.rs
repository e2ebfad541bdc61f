//! The contract between a front end (terminal UI, RPC, print, JSON) and the
//! core that runs turns, commands, sessions and extensions for it.
//!
//! Shape (gitui, rust-analyzer): a front end owns one loop that `select!`s
//! over its own input and the [`Event`] channel the core gives it. It asks
//! the core for things through [`Core`], whose methods never block on an
//! extension or a model: each returns at once and its outcome arrives later
//! as events on that channel. A turn runs on the core's worker thread.
//!
//! Every method is cheap and callable from the front end's thread at any
//! time; calls that do not apply right now (abort while idle, a panel key
//! for a closed panel) are ignored, never an error.

use crate::agent::Decision;
#[allow(unused_imports)] // named in the docs above
use crate::events::Event;
use serde::Serialize;
use std::sync::Arc;

/// A change of extensions, session or model, asked for by a built-in slash
/// command or an RPC request.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Restart every extension (`/reload-ext`); reported by a `reload` event.
    Reload,
    /// Start a fresh session (`/new`, RPC `clear`).
    NewSession,
    /// Fork the active session at message index `at` (default: the end) and
    /// switch to the new branch.
    Fork(Option<usize>),
    /// Switch to another session or branch of this project by id.
    Switch(String),
    /// Summarise older history (`/compact`).
    Compact(Option<String>),
    /// Use another model from the next request on.
    SetModel(String),
}

impl Change {
    /// The change the built-in slash command `name` stands for with the
    /// text after it, the same in every mode: `None` when `name` is not
    /// one of these commands or is one that then needs a front end's own
    /// answer (`/model` and `/resume` without an argument), an error the
    /// message for an argument it cannot take.
    pub fn from_slash(name: &str, arg: &str) -> Option<Result<Change, String>> {
        let arg = arg.trim();
        let given = (!arg.is_empty()).then(|| arg.to_string());
        Some(Ok(match name {
            "reload-ext" => Change::Reload,
            "new" => Change::NewSession,
            "fork" => match given.as_deref().map(str::parse::<usize>) {
                None => Change::Fork(None),
                Some(Ok(n)) => Change::Fork(Some(n)),
                Some(Err(_)) => {
                    return Some(Err(format!("/fork takes a message index, not {arg:?}")))
                }
            },
            "compact" => Change::Compact(given),
            "model" => Change::SetModel(given?),
            "resume" | "switch" => Change::Switch(given?),
            _ => return None,
        }))
    }
}

/// What a front end may ask of the core. Outcomes arrive as [`Event`]s.
pub trait Core: Send + Sync {
    /// Send a prompt to the model: starts a turn now, or queues it behind the
    /// running one (the returned value says which). Ends with `done`.
    fn prompt(&self, text: String) -> Submitted;
    /// Run a slash command line (`"/weather berlin"`): an extension command,
    /// `/skill:NAME …`, or a built-in of [`crate::commands`] that works in
    /// this front end's mode (one that does not is refused with where it
    /// works). Its result arrives as `command_result` (and, for a `prompt`
    /// action, a turn), then `done`. The terminal runs its own built-ins
    /// (`/clear`, `/tree`, …) and sends the rest here.
    fn command(&self, line: String) -> Submitted;
    /// Run a shell command typed as `!command` in the terminal, without the
    /// model: the built-in `bash` tool under its confirmation rules, shown
    /// as a tool call; its output joins the conversation as a user message
    /// the model sees with the next prompt. Queues like a prompt; ends with
    /// `done`.
    fn shell(&self, command: String) -> Submitted;
    /// End the running turn (`turn_end` with `stop:"aborted"`, then `done`);
    /// queued prompts are dropped only when `drop_queued`.
    fn abort(&self, drop_queued: bool);
    /// Answer a `confirmation_requested` event.
    fn confirm(&self, request_id: u64, decision: Decision);
    /// A key for the extension panel that is open (`panel_key`).
    fn panel_key(&self, extension: &str, panel_id: &str, key: &str, text: Option<String>);
    /// The person closed the panel (`panel_close` to its owner).
    fn panel_close(&self, extension: &str, panel_id: &str);
    /// Change what the core runs with: extensions, session or model. Runs
    /// in turn with prompts and commands; events say what changed.
    fn change(&self, change: Change);
    /// A snapshot of what the front end shows in menus and headers. Cheap
    /// whatever the project holds: it reads no file and waits on nothing
    /// without a short deadline ([`CoreState::sessions`] stays empty; ask
    /// [`Core::list_sessions`]).
    fn state(&self) -> CoreState;
    /// A receiver that gets a message (or disconnects) once every request
    /// submitted so far has taken effect, after the events it caused were
    /// sent: for a front end that answers a change only when it is done.
    fn settled(&self) -> crossbeam_channel::Receiver<()>;
    /// Lists this project's sessions off the caller's thread; answered by a
    /// `sessions` event (empty with `--no-session`).
    fn list_sessions(&self);
    /// [`CoreState::tools`] alone, without asking every extension for its
    /// report (RPC `list_tools`). The same `Arc` comes back for as long as
    /// the tool set is unchanged, so a caller may cache what it derives
    /// from it (compare with `Arc::ptr_eq`).
    fn tools(&self) -> Arc<[ToolSummary]> {
        self.state().tools.into()
    }
    /// [`CoreState::commands`] alone (RPC `list_commands`).
    fn commands(&self) -> Vec<CommandSummary> {
        self.state().commands
    }
    /// Withdraw the newest queued prompt that has not started (the person
    /// took it back to edit); false when there is none.
    fn withdraw_last(&self) -> bool {
        false
    }
    /// Run an extension command now, beside a running turn, when `line`
    /// names one; false leaves it to [`Core::command`] (built-ins, skills
    /// and unknown names queue as usual).
    fn command_now(&self, _line: &str) -> bool {
        false
    }
    /// Stop the running turn, shut extensions down; `done` never follows.
    fn shutdown(&self);
}

/// What became of a prompt or command handed to the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Submitted {
    /// It runs now.
    Started,
    /// It waits behind the running turn; `position` 1 is next.
    Queued { position: usize },
}

/// A snapshot of the core for display.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CoreState {
    pub provider: String,
    pub model: String,
    /// A turn or command is running.
    pub busy: bool,
    /// Prompts waiting behind it.
    pub queued: usize,
    /// The active session, if any.
    pub session: Option<SessionSummary>,
    pub extensions: Vec<ExtensionSummary>,
    /// Extension commands, in registration order (built-ins not included).
    pub commands: Vec<CommandSummary>,
    /// Every tool the next request advertises.
    pub tools: Vec<ToolSummary>,
    pub skills: Vec<SkillSummary>,
    /// Sessions of this project (newest first), for `/resume` and `/tree`:
    /// filled by the front end from the `sessions` event, never by
    /// [`Core::state`].
    pub sessions: Vec<SessionSummary>,
    /// The transcript of the active branch, for redrawing after a switch:
    /// the engine's own list, shared rather than copied (a resumed session
    /// can be large), so it reads as of when it is read.
    pub messages: crate::transcript::Transcript,
    /// Tokens and cost of this run's provider requests (the footer reads
    /// `usage.footer_parts()`, `tokens_in()`, `cache_share()`, `context_percent()`).
    pub usage: crate::provider::usage::Totals,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionSummary {
    pub id: String,
    pub parent_id: Option<String>,
    pub path: String,
    pub fork_point: Option<usize>,
    /// First user prompt, shortened (for pickers).
    pub title: String,
    /// RFC 3339 time of the last write.
    pub updated: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExtensionSummary {
    pub name: String,
    pub version: String,
    /// `flag`, `project` or `global`.
    pub source: String,
    pub running: bool,
    /// Still in its handshake (an MCP server: still connecting).
    pub starting: bool,
    pub commands: Vec<String>,
    pub tools: Vec<String>,
    /// The last error, if it failed or died.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CommandSummary {
    pub name: String,
    pub description: String,
    pub extension: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolSummary {
    pub name: String,
    pub description: String,
    /// None for built-in tools.
    pub extension: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SkillSummary {
    pub name: String,
    pub description: String,
    /// Where it was found (a root directory or `extension NAME`).
    pub source: String,
}

#[cfg(test)]
mod tests {
    use super::Change;

    #[test]
    fn every_mode_reads_a_changing_built_in_the_same_way() {
        let parse = |name, arg| Change::from_slash(name, arg);
        assert_eq!(parse("reload-ext", ""), Some(Ok(Change::Reload)));
        assert_eq!(parse("new", " "), Some(Ok(Change::NewSession)));
        assert_eq!(parse("fork", ""), Some(Ok(Change::Fork(None))));
        assert_eq!(parse("fork", " 3 "), Some(Ok(Change::Fork(Some(3)))));
        assert_eq!(
            parse("fork", "three"),
            Some(Err("/fork takes a message index, not \"three\"".into()))
        );
        assert_eq!(parse("compact", ""), Some(Ok(Change::Compact(None))));
        assert_eq!(
            parse("compact", "keep the plan"),
            Some(Ok(Change::Compact(Some("keep the plan".into()))))
        );
        assert_eq!(
            parse("model", "m-2"),
            Some(Ok(Change::SetModel("m-2".into())))
        );
        assert_eq!(
            parse("switch", "s-1"),
            Some(Ok(Change::Switch("s-1".into())))
        );
        assert_eq!(
            parse("resume", "s-1"),
            Some(Ok(Change::Switch("s-1".into())))
        );
        // Without an argument these need the front end's own answer.
        assert_eq!(parse("model", ""), None);
        assert_eq!(parse("resume", ""), None);
        assert_eq!(parse("help", ""), None);
        assert_eq!(parse("weather", "berlin"), None);
    }
}
