//! The agent's and the engine's call sites: one function per intercept
//! point, each taking the loaded [`Hooks`] and returning what the caller
//! must do. Every function returns at once when no handler is configured
//! for its event, so a run without hooks pays one scan of an empty list.

use super::{tools, Hooks};
use crate::events::EventSink;
use serde_json::{json, Value};

/// A PreToolUse verdict on the final arguments.
pub enum Pre {
    /// Run with these arguments; `Some(true)`: skip confirmation (allow),
    /// `Some(false)`: confirm even under `--yolo` (ask), naming the hook.
    Run(Value, Option<(bool, String)>),
    /// Refused: the hook's command and the reason the model gets.
    Block(String, String),
}

/// PreToolUse for the call `id` of `name` with `args`.
pub fn pre_tool_use(h: &Hooks, id: &str, name: &str, args: Value, sink: &dyn EventSink) -> Pre {
    if !h.has("PreToolUse") {
        return Pre::Run(args, None);
    }
    let (cname, input) = tools::to_claude(name, &args, &h.project);
    let v = h.fire(
        "PreToolUse",
        Some(&cname),
        json!({"tool_name": cname, "tool_input": input, "tool_use_id": id}),
        sink,
    );
    if let Some((cmd, reason)) = &v.stop {
        halt(h, cmd, reason);
    }
    if let Some((cmd, reason)) = v.block.or(v.stop) {
        let reason = if reason.is_empty() {
            format!("blocked by hook {}", super::shown_command(&cmd))
        } else {
            reason
        };
        return Pre::Block(cmd, reason);
    }
    let args = if v.updated.is_empty() {
        args
    } else {
        let mut merged = input;
        for u in &v.updated {
            if let (Some(m), Some(u)) = (merged.as_object_mut(), u.as_object()) {
                m.extend(u.clone());
            }
        }
        tools::from_claude(name, &merged, &args)
    };
    let perm = match v.ask {
        Some(cmd) => Some((false, cmd)),
        None if v.allow => Some((true, String::new())),
        None => None,
    };
    Pre::Run(args, perm)
}

/// PostToolUse (or PostToolUseFailure when `is_error`): the hidden
/// context for the next request (exit-2 reasons, `decision:block`
/// reasons, `additionalContext`).
pub fn post_tool_use(
    h: &Hooks,
    id: &str,
    name: &str,
    args: &Value,
    text: &str,
    is_error: bool,
    sink: &dyn EventSink,
) -> Vec<String> {
    let event = if is_error {
        "PostToolUseFailure"
    } else {
        "PostToolUse"
    };
    if !h.has(event) {
        return Vec::new();
    }
    let (cname, input) = tools::to_claude(name, args, &h.project);
    let response = tools::response(&cname, &input, text, is_error);
    let mut v = h.fire(
        event,
        Some(&cname),
        json!({"tool_name": cname, "tool_input": input, "tool_use_id": id, "tool_response": response}),
        sink,
    );
    if let Some((cmd, reason)) = &v.stop {
        halt(h, cmd, reason);
    }
    if let Some((_, reason)) = v.block.take().filter(|(_, r)| !r.is_empty()) {
        v.context.insert(0, reason);
    }
    v.context
}

/// Records a tool hook's `continue:false` (the first one wins).
fn halt(h: &Hooks, cmd: &str, reason: &str) {
    if let Ok(mut slot) = h.halt.lock() {
        if slot.is_none() {
            let cmd = super::shown_command(cmd);
            *slot = Some(match reason.trim() {
                "" => format!("stopped by hook {cmd}"),
                r => format!("{r} (stopped by hook {cmd})"),
            });
        }
    }
}

/// Whether a `PreToolUse` or `PostToolUse` hook answered `continue:false`
/// since the last call: the reason the prompt ends with (taken, so it
/// ends one prompt only).
pub fn halted(h: &Hooks) -> Option<String> {
    h.halt.lock().ok().and_then(|mut slot| slot.take())
}

/// SessionStart (`source`: `startup`, `resume`, `clear` or `compact`): the
/// hidden context of the next request (plain stdout and
/// `additionalContext`, in configuration order).
pub fn session_start(h: &Hooks, source: &str, sink: &dyn EventSink) -> Vec<String> {
    if !h.has("SessionStart") {
        return Vec::new();
    }
    h.fire(
        "SessionStart",
        Some(source),
        json!({"source": source}),
        sink,
    )
    .context
}

/// SessionEnd (`reason`: `clear`, `prompt_input_exit` or `other`). It
/// cannot block: zut waits for the handlers (each within its timeout) and
/// goes on.
pub fn session_end(h: &Hooks, reason: &str, sink: &dyn EventSink) {
    if h.has("SessionEnd") {
        h.fire("SessionEnd", Some(reason), json!({"reason": reason}), sink);
    }
}

/// PreCompact (`trigger`: `manual` or `auto`, with the `/compact`
/// instructions): `Err` with the reason when a hook cancels the compaction
/// (exit 2, `decision:"block"` or `continue:false`).
pub fn pre_compact(
    h: &Hooks,
    trigger: &str,
    instructions: &str,
    sink: &dyn EventSink,
) -> Result<(), String> {
    if !h.has("PreCompact") {
        return Ok(());
    }
    let v = h.fire(
        "PreCompact",
        Some(trigger),
        json!({"trigger": trigger, "custom_instructions": instructions}),
        sink,
    );
    let Some((cmd, reason)) = v.block.or(v.stop) else {
        return Ok(());
    };
    let cmd = super::shown_command(&cmd);
    match reason.trim() {
        "" => Err(format!("cancelled by hook {cmd}")),
        r => Err(format!("cancelled by hook {cmd}: {r}")),
    }
}

/// UserPromptSubmit, at the start of every prompt: the prompt's hidden
/// context, or why it was refused.
pub fn prompt_submit(h: &Hooks, prompt: &str, sink: &dyn EventSink) -> Result<Vec<String>, String> {
    // A halt left by an aborted prompt must not end this one.
    let _ = halted(h);
    if !h.has("UserPromptSubmit") {
        return Ok(Vec::new());
    }
    let v = h.fire("UserPromptSubmit", None, json!({"prompt": prompt}), sink);
    if let Some((cmd, reason)) = v.block.or(v.stop) {
        let cmd = super::shown_command(&cmd);
        return Err(if reason.is_empty() {
            format!("blocked by hook {cmd}")
        } else {
            format!("{reason} (blocked by hook {cmd})")
        });
    }
    Ok(v.context)
}

/// Stop: the reason to continue with, if a hook blocked the stop. A block
/// without a reason (`{"decision":"block","reason":""}`, which some
/// published hooks print as a formality) gives the model nothing to go on,
/// so it does not keep the agent going.
pub fn stop(h: &Hooks, continued: u32, sink: &dyn EventSink) -> Option<String> {
    if !h.has("Stop") {
        return None;
    }
    let v = h.fire(
        "Stop",
        None,
        json!({"stop_hook_active": continued > 0}),
        sink,
    );
    if v.stop.is_some() {
        return None;
    }
    v.block
        .map(|(_, r)| r.trim().to_string())
        .filter(|r| !r.is_empty())
}

/// Notification (a confirmation dialog), run without waiting for it.
pub fn notify(
    h: &std::sync::Arc<Hooks>,
    message: String,
    kind: &str,
    sink: std::sync::Arc<dyn EventSink>,
) {
    if !h.has("Notification") {
        return;
    }
    let (h, kind) = (h.clone(), kind.to_string());
    let _ = std::thread::Builder::new()
        .name("hook-notify".into())
        .spawn(move || {
            h.fire(
                "Notification",
                Some(&kind),
                json!({"message": message, "notification_type": kind}),
                &*sink,
            );
        });
}
