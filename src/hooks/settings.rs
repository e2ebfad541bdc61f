//! The settings files and their `hooks`, merged in a fixed order:
//! `~/.claude/settings.json`, `<cwd>/.claude/settings.json`,
//! `<cwd>/.claude/settings.local.json` (both trust-gated like project
//! extensions) and `$ZUT_HOME/settings.json`.

use super::matcher::Matcher;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default per-handler timeout when neither the handler nor
/// `ZUT_HOOK_TIMEOUT_MS` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Overrides [`DEFAULT_TIMEOUT`] (milliseconds).
pub const TIMEOUT_ENV: &str = "ZUT_HOOK_TIMEOUT_MS";

/// One configured command handler.
#[derive(Debug, Clone)]
pub struct Handler {
    /// The settings file it came from.
    pub source: PathBuf,
    pub event: String,
    /// The matcher as written (empty: none).
    pub matcher_text: String,
    pub matcher: Matcher,
    pub command: String,
    pub timeout: Duration,
    /// `"onFailure":"block"`: a timeout or crash blocks.
    pub block_on_failure: bool,
}

/// Every handler of every source, in configuration order, plus what was
/// skipped and why.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    pub handlers: Vec<Handler>,
    pub warnings: Vec<String>,
    /// Handlers of a type zut does not run (`http`, `prompt`, `agent`).
    pub skipped: Vec<Skipped>,
}

/// A handler left out because of its type.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub source: PathBuf,
    /// Its JSON path, e.g. `hooks.PreToolUse[0].hooks[1]`.
    pub path: String,
    pub event: String,
    pub kind: String,
}

/// One settings file as `zut hooks` reports it.
#[derive(Debug, Clone)]
pub struct SourceReport {
    pub path: PathBuf,
    pub exists: bool,
    /// A project file (run only in a trusted project).
    pub project: bool,
    /// Whether its hooks run (always for user files that exist).
    pub trusted: bool,
    /// What it holds, read even when untrusted (never run from here).
    pub set: HookSet,
}

/// Every source for `zut hooks`: what each holds and whether it runs.
/// Untrusted project files are read for the listing only.
pub fn inspect(cwd: &Path, zut_home: &Path) -> Vec<SourceReport> {
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    let trusted = crate::trust::is_trusted(zut_home, cwd);
    sources(user_home.as_deref(), cwd, zut_home)
        .into_iter()
        .map(|(path, gated)| {
            let mut set = HookSet::default();
            let bytes = std::fs::read(&path).ok();
            if let Some(b) = &bytes {
                set.read(&path, b);
            }
            SourceReport {
                exists: bytes.is_some(),
                project: gated,
                trusted: !gated || trusted,
                path,
                set,
            }
        })
        .collect()
}

/// The four sources in order; the bool says whether the file is trust-gated.
pub fn sources(user_home: Option<&Path>, cwd: &Path, zut_home: &Path) -> Vec<(PathBuf, bool)> {
    let mut v = Vec::new();
    if let Some(h) = user_home {
        v.push((h.join(".claude/settings.json"), false));
    }
    v.push((cwd.join(".claude/settings.json"), true));
    v.push((cwd.join(".claude/settings.local.json"), true));
    v.push((zut_home.join("settings.json"), false));
    v
}

/// The events zut fires (zut-hooks(7) maps each to its point).
pub const EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "Notification",
];

/// Claude Code events with nothing to map to in zut.
const NOT_APPLICABLE: &[(&str, &str)] = &[
    ("SubagentStart", "zut has no subagents"),
    ("SubagentStop", "zut has no subagents"),
    (
        "PermissionRequest",
        "zut asks through PreToolUse's permissionDecision instead",
    ),
];

/// Why handlers of `event` never run, if they do not.
fn unsupported_event(event: &str) -> Option<String> {
    if EVENTS.contains(&event) {
        return None;
    }
    Some(match NOT_APPLICABLE.iter().find(|(e, _)| *e == event) {
        Some((_, why)) => format!("never fires in zut ({why}); its handlers are kept but not run"),
        None => "not an event zut knows; its handlers are kept but never run".to_string(),
    })
}

fn default_timeout() -> Duration {
    std::env::var(TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TIMEOUT)
}

impl HookSet {
    /// Reads every source. Untrusted project files are skipped with a
    /// warning that names `zut ext trust`.
    pub fn load(cwd: &Path, zut_home: &Path) -> HookSet {
        let user_home = std::env::var_os("HOME").map(PathBuf::from);
        let trusted = crate::trust::is_trusted(zut_home, cwd);
        let mut set = HookSet::default();
        for (file, gated) in sources(user_home.as_deref(), cwd, zut_home) {
            let Ok(bytes) = std::fs::read(&file) else {
                continue;
            };
            if gated && !trusted {
                set.warnings.push(format!(
                    "{}: hooks not run: this project is not trusted (run zut ext trust {})",
                    file.display(),
                    cwd.display()
                ));
                continue;
            }
            set.read(&file, &bytes);
        }
        set
    }

    /// The handlers of `event` whose matcher accepts `subject` (`None`:
    /// events without matchers), identical commands once.
    pub fn matching(&self, event: &str, subject: Option<&str>) -> Vec<&Handler> {
        let mut out: Vec<&Handler> = Vec::new();
        for h in self.handlers.iter().filter(|h| h.event == event) {
            if subject.is_some_and(|s| !h.matcher.matches(s)) {
                continue;
            }
            if out.iter().any(|o| o.command == h.command) {
                continue;
            }
            out.push(h);
        }
        out
    }

    /// Parses one file's `hooks` into handlers.
    pub fn read(&mut self, file: &Path, bytes: &[u8]) {
        let warn = |set: &mut HookSet, path: &str, what: &str| {
            set.warnings
                .push(format!("{}: {path}: {what}; entry skipped", file.display()))
        };
        let doc: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                self.warnings
                    .push(format!("{}: not valid JSON: {e}", file.display()));
                return;
            }
        };
        let Some(hooks) = doc.get("hooks") else {
            return;
        };
        let Some(events) = hooks.as_object() else {
            return warn(self, "hooks", "not an object");
        };
        let default = default_timeout();
        for (event, groups) in events {
            if let Some(why) = unsupported_event(event) {
                self.warnings
                    .push(format!("{}: hooks.{event}: {why}", file.display()));
            }
            let Some(groups) = groups.as_array() else {
                warn(self, &format!("hooks.{event}"), "not an array");
                continue;
            };
            for (gi, group) in groups.iter().enumerate() {
                let gpath = format!("hooks.{event}[{gi}]");
                let matcher_text = match group.get("matcher") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(_) => {
                        warn(self, &format!("{gpath}.matcher"), "not a string");
                        continue;
                    }
                };
                let matcher = match Matcher::parse(Some(&matcher_text)) {
                    Ok(m) => m,
                    Err(e) => {
                        warn(self, &format!("{gpath}.matcher"), &e);
                        continue;
                    }
                };
                let Some(list) = group.get("hooks").and_then(Value::as_array) else {
                    warn(self, &format!("{gpath}.hooks"), "missing or not an array");
                    continue;
                };
                for (hi, h) in list.iter().enumerate() {
                    let hpath = format!("{gpath}.hooks[{hi}]");
                    let kind = h.get("type").and_then(Value::as_str).unwrap_or("command");
                    if kind != "command" {
                        self.skipped.push(Skipped {
                            source: file.to_path_buf(),
                            path: hpath.clone(),
                            event: event.clone(),
                            kind: kind.to_string(),
                        });
                        warn(
                            self,
                            &hpath,
                            &format!(
                                "handler type {kind:?} is not supported by zut (only \"command\")"
                            ),
                        );
                        continue;
                    }
                    let Some(command) = h
                        .get("command")
                        .and_then(Value::as_str)
                        .filter(|c| !c.trim().is_empty())
                    else {
                        warn(self, &format!("{hpath}.command"), "missing or not a string");
                        continue;
                    };
                    let timeout = match h.get("timeout") {
                        None | Some(Value::Null) => default,
                        Some(t) => match t.as_f64().filter(|s| *s > 0.0 && s.is_finite()) {
                            Some(s) => Duration::from_secs_f64(s),
                            None => {
                                warn(
                                    self,
                                    &format!("{hpath}.timeout"),
                                    "not a positive number of seconds",
                                );
                                continue;
                            }
                        },
                    };
                    let block_on_failure =
                        h.get("onFailure").and_then(Value::as_str) == Some("block");
                    self.handlers.push(Handler {
                        source: file.to_path_buf(),
                        event: event.clone(),
                        matcher_text: matcher_text.clone(),
                        matcher: matcher.clone(),
                        command: command.to_string(),
                        timeout,
                        block_on_failure,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_entry_is_named_and_the_rest_loads() {
        let mut set = HookSet::default();
        let doc = br#"{"hooks":{"PreToolUse":[
            {"matcher":"Bash","hooks":[{"type":"command","command":"a"},{"type":"http","url":"x"}]},
            {"matcher":"(","hooks":[{"command":"b"}]},
            {"hooks":[{"command":"a"},{"command":7}]}]}}"#;
        set.read(Path::new("/p/s.json"), doc);
        assert_eq!(set.handlers.len(), 2);
        assert!(set.warnings[0].contains("hooks.PreToolUse[0].hooks[1]"));
        assert!(set.warnings[1].contains("hooks.PreToolUse[1].matcher"));
        assert!(set.warnings[2].contains("/p/s.json: hooks.PreToolUse[2].hooks[1].command"));
        assert_eq!(
            set.matching("PreToolUse", Some("Bash")).len(),
            1,
            "deduplicated"
        );
        assert_eq!(set.matching("PreToolUse", Some("Read")).len(), 1);
    }
}
