//! `todo`: a todo list for the current session branch, written with the
//! Rust SDK (`zut_ext`).
//!
//! - `/todo` opens the panel `todo`: up/down move the cursor, space toggles
//!   the selected item, `d` deletes it, Esc closes the panel;
//!   `/todo add TEXT` adds an item without opening it;
//! - the tool `todo` (actions `add`, `list`, `toggle`, `remove`) lets the
//!   model keep the list; every result carries the whole list as `details`,
//!   which zut stores as this extension's state for the session branch;
//! - on `session_opened`, `session_switched`, `session_forked` and
//!   `session_compacted` the list is restored from the event's `state`
//!   (an empty list when the branch has none).
//!
//! Invariant: the cursor always points at an item, or is 0 for an empty
//! list. Changes made in the panel reach the session state with the next
//! tool result (only tool results carry state in the protocol).

use serde_json::{json, Value};
use std::sync::{Arc, Mutex, MutexGuard};
use zut_ext::wire::Panel;
use zut_ext::{display, error, error_result, open_panel_response, text_result, Extension, Handle};

const PANEL: &str = "todo";
const FOOTER: &str = "↑/↓ move · space toggle · d delete · esc close";

/// One item of the list.
#[derive(Debug, Clone, PartialEq)]
struct Todo {
    text: String,
    done: bool,
}

/// The list, the panel cursor and whether the panel is open.
#[derive(Debug, Default)]
struct Todos {
    items: Vec<Todo>,
    cursor: usize,
    panel_open: bool,
}

impl Todos {
    /// The list as session state: `{"todos":[{"text":..,"done":..}]}`.
    fn state(&self) -> Value {
        let items: Vec<Value> = (self.items.iter())
            .map(|t| json!({"text": t.text, "done": t.done}))
            .collect();
        json!({ "todos": items })
    }

    /// Replaces the list with a stored state; anything unreadable is an
    /// empty list (a branch without state starts empty).
    fn restore(&mut self, state: Option<&Value>) {
        let items = state.and_then(|s| s["todos"].as_array());
        self.items = (items.into_iter().flatten())
            .filter_map(|t| {
                Some(Todo {
                    text: t["text"].as_str()?.to_string(),
                    done: t["done"].as_bool().unwrap_or(false),
                })
            })
            .collect();
        self.clamp();
    }

    fn clamp(&mut self) {
        self.cursor = self.cursor.min(self.items.len().saturating_sub(1));
    }

    /// The list as text for the model and for `display`.
    fn listing(&self) -> String {
        if self.items.is_empty() {
            return "no todos".to_string();
        }
        let lines: Vec<String> = (self.items.iter().enumerate())
            .map(|(i, t)| format!("{}. [{}] {}", i + 1, if t.done { "x" } else { " " }, t.text))
            .collect();
        lines.join("\n")
    }

    fn panel(&self) -> Panel {
        let done = self.items.iter().filter(|t| t.done).count();
        let mut lines: Vec<String> = (self.items.iter().enumerate())
            .map(|(i, t)| {
                let mark = if t.done { "✓" } else { "□" };
                let arrow = if i == self.cursor { "▸" } else { " " };
                format!("{arrow} {mark} {}", t.text)
            })
            .collect();
        if lines.is_empty() {
            lines.push("(empty: ask the model to add todos, or /todo add TEXT)".into());
        }
        Panel {
            id: PANEL.into(),
            title: format!("Todos ({done}/{} done)", self.items.len()),
            lines,
            footer: FOOTER.into(),
        }
    }

    /// Applies one key; true when the panel must be redrawn.
    fn key(&mut self, key: &str, text: &str) -> bool {
        match (key, text) {
            ("up", _) => self.cursor = self.cursor.saturating_sub(1),
            ("down", _) => self.cursor += 1,
            ("rune", " ") | ("enter", _) => match self.items.get_mut(self.cursor) {
                Some(t) => t.done = !t.done,
                None => return false,
            },
            ("rune", "d") | ("delete", _) if self.cursor < self.items.len() => {
                self.items.remove(self.cursor);
            }
            _ => return false,
        }
        self.clamp();
        true
    }

    /// Runs a tool call; `Err` is a message for an error result.
    fn tool(&mut self, args: &Value) -> Result<String, String> {
        let index = || -> Result<usize, String> {
            let n = args["index"]
                .as_u64()
                .ok_or("`index` (1-based) is required")?;
            match usize::try_from(n) {
                Ok(i) if i >= 1 && i <= self.items.len() => Ok(i - 1),
                _ => Err(format!(
                    "no todo number {n} (the list has {})",
                    self.items.len()
                )),
            }
        };
        match args["action"].as_str() {
            Some("list") => {}
            Some("add") => {
                let text = args["text"].as_str().map(str::trim).unwrap_or_default();
                if text.is_empty() {
                    return Err("`text` is required for add".into());
                }
                self.items.push(Todo {
                    text: text.into(),
                    done: false,
                });
            }
            Some("toggle") => {
                let i = index()?;
                self.items[i].done = !self.items[i].done;
            }
            Some("remove") => {
                let i = index()?;
                self.items.remove(i);
                self.clamp();
            }
            other => {
                return Err(format!(
                    "unknown action {other:?}: use add, list, toggle or remove"
                ))
            }
        }
        Ok(self.listing())
    }
}

fn lock(m: &Mutex<Todos>) -> MutexGuard<'_, Todos> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Redraws the panel if it is open.
fn redraw(handle: &Handle, todos: &Todos) {
    if todos.panel_open {
        handle.render_panel(&todos.panel());
    }
}

fn main() -> Result<(), zut_ext::Error> {
    let todos = Arc::new(Mutex::new(Todos::default()));
    let mut ext = Extension::new("todo", env!("CARGO_PKG_VERSION"));
    let handle = ext.handle();

    let (t, h) = (todos.clone(), handle.clone());
    ext.command(
        "todo",
        "open the todo panel (/todo add TEXT adds one)",
        move |args| {
            let mut todos = lock(&t);
            match args.split_once(' ').map(|(verb, rest)| (verb, rest.trim())) {
                Some(("add", text)) if !text.is_empty() => {
                    todos.items.push(Todo {
                        text: text.into(),
                        done: false,
                    });
                    redraw(&h, &todos);
                    display(format!("added: {text}"))
                }
                _ if args.is_empty() => {
                    todos.panel_open = true;
                    open_panel_response(todos.panel())
                }
                _ => error("usage: /todo or /todo add TEXT"),
            }
        },
    );

    let (t, h) = (todos.clone(), handle.clone());
    let schema = json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "list", "toggle", "remove"]},
            "text": {"type": "string", "description": "the todo, for add"},
            "index": {"type": "integer", "minimum": 1, "description": "1-based item number, for toggle and remove"}
        },
        "required": ["action"]
    });
    ext.tool(
        "todo",
        "Keep the session's todo list: add, list, toggle or remove items. Returns the whole list.",
        schema,
        move |args| {
            let mut todos = lock(&t);
            let result = match todos.tool(&args) {
                Ok(listing) => text_result(listing),
                Err(msg) => error_result(msg),
            };
            redraw(&h, &todos);
            result.with_details(todos.state())
        },
    );

    for event in [
        "session_opened",
        "session_switched",
        "session_forked",
        "session_compacted",
    ] {
        let (t, h) = (todos.clone(), handle.clone());
        ext.on(event, move |e| {
            let mut todos = lock(&t);
            todos.restore(e.state.as_ref());
            redraw(&h, &todos);
        });
    }

    let (t, h) = (todos.clone(), handle.clone());
    let t2 = todos.clone();
    ext.on_panel_key(
        PANEL,
        move |key, text| {
            let mut todos = lock(&t);
            if key == "esc" {
                todos.panel_open = false;
                h.close_panel(PANEL);
            } else if todos.key(key, text) {
                redraw(&h, &todos);
            }
        },
        move || lock(&t2).panel_open = false,
    );
    ext.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(items: &[(&str, bool)]) -> Todos {
        let items = (items.iter())
            .map(|(s, d)| Todo {
                text: s.to_string(),
                done: *d,
            })
            .collect();
        Todos {
            items,
            ..Todos::default()
        }
    }

    #[test]
    fn keys_move_toggle_and_delete_within_bounds() {
        let mut t = with(&[("a", false), ("b", false)]);
        assert!(t.key("up", ""));
        assert_eq!(t.cursor, 0);
        t.key("down", "");
        t.key("down", "");
        assert_eq!(t.cursor, 1, "cursor stays on the last item");
        t.key("rune", " ");
        assert!(t.items[1].done);
        t.key("rune", "d");
        assert_eq!((t.items.len(), t.cursor), (1, 0));
        t.key("rune", "d");
        assert!(t.items.is_empty());
        assert!(!t.key("rune", "d"), "nothing to delete");
        assert!(!t.key("rune", " "), "nothing to toggle");
        assert!(t.panel().lines[0].contains("empty"));
    }

    #[test]
    fn state_round_trips_and_junk_restores_empty() {
        let t = with(&[("a", true), ("b", false)]);
        let mut back = Todos::default();
        back.restore(Some(&t.state()));
        assert_eq!(back.items, t.items);
        back.restore(Some(&Value::Null));
        assert!(back.items.is_empty());
        back.restore(Some(&json!({"todos":[{"done":true},{"text":"ok"}]})));
        assert_eq!(
            back.items,
            vec![Todo {
                text: "ok".into(),
                done: false
            }]
        );
    }

    #[test]
    fn tool_actions_validate_their_arguments() {
        let mut t = Todos::default();
        assert!(t.tool(&json!({"action":"add"})).is_err());
        assert_eq!(
            t.tool(&json!({"action":"add","text":"x"})).unwrap(),
            "1. [ ] x"
        );
        assert_eq!(
            t.tool(&json!({"action":"toggle","index":1})).unwrap(),
            "1. [x] x"
        );
        assert!(t.tool(&json!({"action":"toggle","index":2})).is_err());
        assert!(t.tool(&json!({"action":"remove","index":0})).is_err());
        assert!(t.tool(&json!({"action":"fly"})).is_err());
        assert_eq!(
            t.tool(&json!({"action":"remove","index":1})).unwrap(),
            "no todos"
        );
    }
}
