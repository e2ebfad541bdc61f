//! `tasked-phases`: keep the model working through a plan one phase at a
//! time, written with the Rust SDK (`zut_ext`).
//!
//! - tool `phase_advance`: with `phases` it starts a new plan (an empty
//!   list drops the plan); without arguments it finishes the current phase
//!   and moves to the next. Every result carries the plan as `details`, so
//!   zut keeps it per session branch (a dropped plan sends `null`, which
//!   clears the stored state);
//! - a `turn_start` interceptor adds hidden context naming the current phase
//!   and the remaining ones, for the upcoming model request only;
//! - the widget `phases` shows the plan above the editor while one is
//!   active; `/phases` shows it as a note;
//! - session events (`session_opened`, `_switched`, `_forked`,
//!   `_compacted`) restore the plan from the branch's state;
//! - the bundled skill `phases` (`skills/phases/SKILL.md`, declared in
//!   `extension.json`) tells the model how to use the tool.
//!
//! Invariant: `current <= phases.len()`; phases before `current` are done,
//! and `current == phases.len()` means the plan is complete.

use serde_json::{json, Value};
use std::sync::{Arc, Mutex, MutexGuard};
use zut_ext::{display, error_result, text_result, Extension, Handle, TurnStartDecision};
use zut_ext::{ToolResult, WIDGET_ABOVE_INPUT};

const WIDGET: &str = "phases";
/// Longest phase name kept, in characters (names show in a narrow widget).
const MAX_NAME: usize = 60;

/// The plan: ordered phase names and the index of the current phase.
#[derive(Debug, Default, Clone, PartialEq)]
struct Plan {
    phases: Vec<String>,
    current: usize,
}

impl Plan {
    fn active(&self) -> bool {
        !self.phases.is_empty()
    }

    fn complete(&self) -> bool {
        self.active() && self.current >= self.phases.len()
    }

    fn state(&self) -> Value {
        if self.active() {
            json!({"phases": self.phases, "current": self.current})
        } else {
            Value::Null
        }
    }

    /// The plan stored in `state`; no plan when it is absent or unreadable.
    fn from_state(state: Option<&Value>) -> Plan {
        let Some(s) = state else {
            return Plan::default();
        };
        let phases: Vec<String> = (s["phases"].as_array().into_iter().flatten())
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        let current = s["current"].as_u64().unwrap_or(0) as usize;
        Plan {
            current: current.min(phases.len()),
            phases,
        }
    }

    /// One line per phase: done, current and pending marked.
    fn lines(&self) -> Vec<String> {
        (self.phases.iter().enumerate())
            .map(|(i, p)| {
                let mark = match i.cmp(&self.current) {
                    std::cmp::Ordering::Less => "✓",
                    std::cmp::Ordering::Equal => "▸",
                    std::cmp::Ordering::Greater => " ",
                };
                format!("{mark} {}. {p}", i + 1)
            })
            .collect()
    }

    /// Where the plan stands, for the model and for `/phases`.
    fn summary(&self) -> String {
        if !self.active() {
            return "no plan".into();
        }
        if self.complete() {
            return format!("all {} phases are done", self.phases.len());
        }
        format!(
            "phase {}/{}: {}",
            self.current + 1,
            self.phases.len(),
            self.phases[self.current]
        )
    }

    /// The hidden context for the next model request; `None` without an
    /// unfinished plan.
    fn context(&self) -> Option<String> {
        if !self.active() || self.complete() {
            return None;
        }
        let next = &self.phases[self.current + 1..];
        let mut text = format!("Current {}.", self.summary());
        if !next.is_empty() {
            text.push_str(&format!(" Remaining after it: {}.", next.join(", ")));
        }
        text.push_str(" Work on this phase only; call phase_advance when it is finished.");
        Some(text)
    }

    /// Runs one `phase_advance` call.
    fn advance(&mut self, args: &Value) -> Result<String, String> {
        if let Some(list) = args.get("phases") {
            let list = list.as_array().ok_or("`phases` must be a list of names")?;
            let mut phases = Vec::with_capacity(list.len());
            for p in list {
                let name = p.as_str().map(str::trim).unwrap_or_default();
                if name.is_empty() {
                    return Err("phase names must be non-empty strings".into());
                }
                phases.push(name.chars().take(MAX_NAME).collect());
            }
            *self = Plan { phases, current: 0 };
            return Ok(if self.active() {
                format!("new plan; {}", self.summary())
            } else {
                "plan dropped".into()
            });
        }
        if !self.active() {
            return Err("no plan: call phase_advance with `phases` first".into());
        }
        if self.complete() {
            return Err("the plan is already complete".into());
        }
        let finished = self.phases[self.current].clone();
        self.current += 1;
        Ok(format!("finished {finished:?}; {}", self.summary()))
    }
}

fn lock(m: &Mutex<Plan>) -> MutexGuard<'_, Plan> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Shows the plan in the widget, or removes the widget without one.
fn show(handle: &Handle, plan: &Plan) {
    if plan.active() {
        handle.set_widget(WIDGET, WIDGET_ABOVE_INPUT, "Phases", plan.lines());
    } else {
        handle.clear_widget(WIDGET);
    }
}

fn main() -> Result<(), zut_ext::Error> {
    let plan = Arc::new(Mutex::new(Plan::default()));
    let mut ext = Extension::new("tasked-phases", env!("CARGO_PKG_VERSION"));
    let handle = ext.handle();

    let p = plan.clone();
    ext.command("phases", "show the current plan", move |_| {
        let plan = lock(&p);
        let mut text = plan.summary();
        for line in plan.lines() {
            text.push('\n');
            text.push_str(&line);
        }
        display(text)
    });

    let (p, h) = (plan.clone(), handle.clone());
    let schema = json!({
        "type": "object",
        "properties": {
            "phases": {
                "type": "array",
                "items": {"type": "string"},
                "description": "start a new plan with these phases (an empty list drops the plan); omit to finish the current phase"
            }
        }
    });
    ext.tool(
        "phase_advance",
        "Start a phased plan, or finish the current phase and move to the next.",
        schema,
        move |args| {
            let mut plan = lock(&p);
            let result: ToolResult = match plan.advance(&args) {
                Ok(text) => text_result(text),
                Err(msg) => error_result(msg),
            };
            show(&h, &plan);
            result.with_details(plan.state())
        },
    );

    let p = plan.clone();
    ext.intercept_turn_start(move |_step| match lock(&p).context() {
        Some(context) => TurnStartDecision::context(context),
        None => TurnStartDecision::allow(),
    });

    for event in [
        "session_opened",
        "session_switched",
        "session_forked",
        "session_compacted",
    ] {
        let (p, h) = (plan.clone(), handle.clone());
        ext.on(event, move |e| {
            let mut plan = lock(&p);
            *plan = Plan::from_state(e.state.as_ref());
            show(&h, &plan);
        });
    }
    ext.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_advances_to_completion() {
        let mut plan = Plan::default();
        assert!(plan.advance(&json!({})).is_err());
        plan.advance(&json!({"phases": ["parse", "check", "ship"]}))
            .unwrap();
        assert_eq!(plan.lines(), ["▸ 1. parse", "  2. check", "  3. ship"]);
        let ctx = plan.context().unwrap();
        assert!(
            ctx.contains("phase 1/3: parse") && ctx.contains("check, ship"),
            "{ctx}"
        );
        plan.advance(&json!({})).unwrap();
        plan.advance(&json!({})).unwrap();
        assert_eq!(
            plan.advance(&json!({})).unwrap(),
            "finished \"ship\"; all 3 phases are done"
        );
        assert!(plan.complete() && plan.context().is_none());
        assert!(plan.advance(&json!({})).is_err());
    }

    #[test]
    fn state_round_trips_and_an_empty_list_drops_the_plan() {
        let mut plan = Plan::default();
        plan.advance(&json!({"phases": ["a", "b"]})).unwrap();
        plan.advance(&json!({})).unwrap();
        assert_eq!(Plan::from_state(Some(&plan.state())), plan);
        assert_eq!(
            Plan::from_state(Some(&json!({"phases":["a"],"current":9}))).current,
            1
        );
        assert_eq!(
            plan.advance(&json!({"phases": []})).unwrap(),
            "plan dropped"
        );
        assert_eq!(plan.state(), Value::Null);
        assert!(plan.advance(&json!({"phases": ["", "x"]})).is_err());
        assert!(plan.advance(&json!({"phases": "x"})).is_err());
    }
}
