//! One handler's answer (exit code, JSON fields) and the combination of
//! all handlers of one event into a [`Verdict`].

use super::runner::{Exit, Run};
use super::settings::Handler;
use serde_json::Value;

/// What one handler said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// `allow`, `approve`, `ask`, `block`, `error` or `timeout`.
    pub outcome: &'static str,
    pub exit: Option<i32>,
    /// The block reason, the error text, or `permissionDecisionReason`.
    pub reason: String,
    /// `continue:false`: the prompt ends, with `stopReason`.
    pub stop: Option<String>,
    pub system_message: String,
    pub updated_input: Option<Value>,
    /// `additionalContext`, or plain stdout where that is context.
    pub context: String,
}

/// Reads one run. `plain_is_context`: plain stdout of exit 0 is context
/// (UserPromptSubmit, SessionStart).
pub fn answer(h: &Handler, run: &Run, plain_is_context: bool) -> Answer {
    let fail = |outcome, exit, reason: String| Answer {
        outcome: if h.block_on_failure { "block" } else { outcome },
        exit,
        reason,
        ..Answer::default()
    };
    match &run.exit {
        Exit::TimedOut => fail(
            "timeout",
            None,
            format!("hook timed out after {} ms", h.timeout.as_millis()),
        ),
        Exit::Crashed(m) => fail("error", None, m.clone()),
        Exit::Code(2) => Answer {
            outcome: "block",
            exit: Some(2),
            reason: run.stderr.trim().to_string(),
            ..Answer::default()
        },
        Exit::Code(0) => {
            let mut a = Answer {
                outcome: "allow",
                exit: Some(0),
                ..Answer::default()
            };
            let text = run.stdout.trim();
            let json = serde_json::from_str::<Value>(text)
                .ok()
                .filter(Value::is_object);
            let Some(j) = json else {
                if plain_is_context {
                    a.context = text.to_string();
                }
                return a;
            };
            let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
            a.system_message = s(j.get("systemMessage"));
            if j.get("continue") == Some(&Value::Bool(false)) {
                a.stop = Some(s(j.get("stopReason")));
                a.outcome = "block";
                a.reason = s(j.get("stopReason"));
            }
            match j.get("decision").and_then(Value::as_str) {
                Some("block") => {
                    a.outcome = "block";
                    a.reason = s(j.get("reason"));
                }
                Some("approve") => a.outcome = "approve",
                _ => {}
            }
            if let Some(o) = j.get("hookSpecificOutput") {
                match o.get("permissionDecision").and_then(Value::as_str) {
                    Some("deny") => {
                        a.outcome = "block";
                        a.reason = s(o.get("permissionDecisionReason"));
                    }
                    Some("ask") if a.outcome != "block" => {
                        a.outcome = "ask";
                        a.reason = s(o.get("permissionDecisionReason"));
                    }
                    Some("allow") if a.outcome != "block" => a.outcome = "approve",
                    _ => {}
                }
                a.updated_input = o.get("updatedInput").filter(|v| v.is_object()).cloned();
                a.context = s(o.get("additionalContext"));
            }
            a
        }
        Exit::Code(c) => fail("error", Some(*c), run.stderr.trim().to_string()),
    }
}

/// All handlers of one event, combined: deny > ask > allow.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// The first blocking handler's command and reason.
    pub block: Option<(String, String)>,
    /// `continue:false`: command and `stopReason`.
    pub stop: Option<(String, String)>,
    /// The first handler that asked for confirmation.
    pub ask: Option<String>,
    /// Some handler allowed (skip confirmation).
    pub allow: bool,
    /// `updatedInput`s in configuration order.
    pub updated: Vec<Value>,
    /// Contexts in configuration order.
    pub context: Vec<String>,
}

/// Folds the answers (in configuration order).
pub fn combine(answers: &[(&Handler, Answer)]) -> Verdict {
    let mut v = Verdict::default();
    for (h, a) in answers {
        match a.outcome {
            "block" if v.block.is_none() => v.block = Some((h.command.clone(), a.reason.clone())),
            "ask" if v.ask.is_none() => v.ask = Some(h.command.clone()),
            "approve" => v.allow = true,
            _ => {}
        }
        if let (Some(r), None) = (&a.stop, &v.stop) {
            v.stop = Some((h.command.clone(), r.clone()));
        }
        if let Some(u) = &a.updated_input {
            v.updated.push(u.clone());
        }
        if !a.context.is_empty() {
            v.context.push(a.context.clone());
        }
    }
    v
}
