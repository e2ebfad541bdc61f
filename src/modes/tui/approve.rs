//! Approving a tool call after seeing it: the confirmation dialog's body
//! (a unified diff of a `write`/`edit`, the whole `bash` command with its
//! working directory and timeout, any other call's arguments), its scroll
//! position, the exact scope `a` remembers, and the `+N -M` of a finished
//! change.
//!
//! Invariants: a dialog takes an answer only once it has been drawn whole
//! (body, scope line and key line); on a terminal too small for that it
//! says so and waits (Ctrl+C still denies). Diffs are computed once, when
//! the call is announced, from the file as it is then.

use super::app::App;
use super::markdown::Lines;
use super::text::{strip_controls, truncate, width, wrap};
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;
use serde_json::Value;
use std::path::Path;

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// A file larger than this is not diffed (the dialog says so).
const MAX_DIFF_BYTES: u64 = 4 * 1024 * 1024;

/// One row of a unified diff.
#[derive(Debug, Clone, PartialEq)]
pub enum DiffRow {
    Hunk(String),
    Add(String),
    Del(String),
    Same(String),
    /// Something the diff could not show (the edit will fail, …).
    Note(String),
}

/// The change a `write` or `edit` call would make.
#[derive(Debug, Clone, PartialEq)]
pub struct FileDiff {
    pub new_file: bool,
    pub added: usize,
    pub removed: usize,
    pub rows: Vec<DiffRow>,
}

/// The diff of a `write`/`edit` call against the file as it is now, with
/// relative paths taken from `cwd`; `None` for other tools.
pub fn diff_for_call(name: &str, args: &Value, cwd: &Path) -> Option<FileDiff> {
    let path = args.get("path").and_then(Value::as_str)?;
    let full = cwd.join(path);
    let old = match std::fs::metadata(&full) {
        Ok(m) if m.len() > MAX_DIFF_BYTES => {
            return Some(note(format!("{path} is too large to diff here")))
        }
        Ok(_) => match std::fs::read(&full) {
            Ok(b) => Some(String::from_utf8_lossy(&b).replace("\r\n", "\n")),
            Err(e) => return Some(note(format!("cannot read {path}: {e}"))),
        },
        Err(_) => None,
    };
    let new = match name {
        "write" => args.get("content").and_then(Value::as_str)?.to_string(),
        "edit" => {
            let Some(old) = &old else {
                return Some(note(format!("{path} does not exist: the edit will fail")));
            };
            match apply_edits(old, args.get("edits")?) {
                Ok(n) => n,
                Err(why) => return Some(note(why)),
            }
        }
        _ => return None,
    };
    Some(unified(old.as_deref(), &new))
}

fn note(text: String) -> FileDiff {
    FileDiff {
        new_file: false,
        added: 0,
        removed: 0,
        rows: vec![DiffRow::Note(text)],
    }
}

/// The file after the edits, each `oldText` found once in the original.
fn apply_edits(original: &str, edits: &Value) -> Result<String, String> {
    let items = edits.as_array().ok_or("edits is not a list")?;
    let mut spans: Vec<(usize, usize, &str)> = Vec::new();
    for (i, e) in items.iter().enumerate() {
        let old = e.get("oldText").and_then(Value::as_str).unwrap_or("");
        let new = e.get("newText").and_then(Value::as_str).unwrap_or("");
        let old = old.replace("\r\n", "\n");
        if old.is_empty() {
            return Err(format!("edits[{i}] has no oldText: the edit will fail"));
        }
        let Some(at) = original.find(&old) else {
            return Err(format!(
                "edits[{i}].oldText is not in the file: the edit will fail"
            ));
        };
        spans.push((at, at + old.len(), new));
    }
    spans.sort_by_key(|s| s.0);
    let mut out = String::with_capacity(original.len());
    let mut at = 0;
    for (start, end, new) in spans {
        if start < at {
            return Err("two edits overlap: the edit will fail".into());
        }
        out.push_str(&original[at..start]);
        out.push_str(new);
        at = end;
    }
    out.push_str(&original[at..]);
    Ok(out)
}

/// A unified diff of `old` (absent: a new file) to `new`.
pub fn unified(old: Option<&str>, new: &str) -> FileDiff {
    use similar::{ChangeTag, TextDiff};
    let before = old.unwrap_or("");
    let diff = TextDiff::from_lines(before, new);
    let mut rows = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let o = first.old_range().start..last.old_range().end;
        let n = first.new_range().start..last.new_range().end;
        rows.push(DiffRow::Hunk(format!(
            "@@ -{},{} +{},{} @@",
            o.start + usize::from(!o.is_empty()),
            o.len(),
            n.start + usize::from(!n.is_empty()),
            n.len()
        )));
        for op in &group {
            for change in diff.iter_changes(op) {
                let text = change.value().trim_end_matches('\n').to_string();
                match change.tag() {
                    ChangeTag::Equal => rows.push(DiffRow::Same(text)),
                    ChangeTag::Insert => {
                        added += 1;
                        rows.push(DiffRow::Add(text));
                    }
                    ChangeTag::Delete => {
                        removed += 1;
                        rows.push(DiffRow::Del(text));
                    }
                }
            }
        }
    }
    if rows.is_empty() {
        rows.push(DiffRow::Note("no change".into()));
    }
    FileDiff {
        new_file: old.is_none(),
        added,
        removed,
        rows,
    }
}

/// A waiting question's extra state: what it shows and how far it is
/// scrolled.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Detail {
    /// The call's arguments, when its `tool_call` was seen.
    pub args: Option<Value>,
    pub diff: Option<FileDiff>,
    /// How the dialog names what `a` remembers.
    pub scope: String,
    /// Body rows scrolled past.
    pub offset: usize,
}

impl Detail {
    pub fn new(tool_name: &str, args: Option<Value>, diff: Option<FileDiff>) -> Detail {
        let scope =
            crate::agent::approval_scope(tool_name, args.as_ref().unwrap_or(&Value::Null)).1;
        Detail {
            args,
            diff,
            scope: strip_controls(&scope),
            offset: 0,
        }
    }
}

impl App {
    /// Keeps a call's arguments, and the change of a write/edit, for its
    /// dialog and its line.
    pub(super) fn note_call(&mut self, id: &str, name: &str, args: &Value) {
        // Relative paths are the project's, as the tools read them.
        let cwd =
            (self.project.clone()).unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
        let diff = diff_for_call(name, args, &cwd);
        self.calls.insert(
            id.to_string(),
            Detail {
                args: Some(args.clone()),
                diff,
                ..Detail::default()
            },
        );
    }

    /// The change a finished, successful write/edit made, if it was seen.
    pub(super) fn finished_change(
        &self,
        id: &str,
        state: &super::app::ToolState,
    ) -> Option<&FileDiff> {
        if !matches!(
            state,
            super::app::ToolState::Done {
                is_error: false,
                ..
            }
        ) {
            return None;
        }
        self.calls
            .get(id)
            .and_then(|c| c.diff.as_ref())
            .filter(|d| !d.rows.iter().any(|r| matches!(r, DiffRow::Note(_))))
    }

    /// The styled rows of a diff, each prefixed by its sign.
    pub(super) fn diff_lines(&self, d: &FileDiff, w: usize, indent: &str) -> Lines {
        let t = &self.theme;
        let mut out = Lines::new();
        for row in &d.rows {
            let (sign, text, style) = match row {
                DiffRow::Hunk(h) => ("", h.as_str(), self.fg(t.accent)),
                DiffRow::Add(s) => ("+", s.as_str(), self.fg(t.tool)),
                DiffRow::Del(s) => ("-", s.as_str(), self.fg(t.error)),
                DiffRow::Same(s) => (" ", s.as_str(), self.fg(t.muted)),
                DiffRow::Note(s) => ("", s.as_str(), self.fg(t.warning)),
            };
            let text = strip_controls(text);
            let room = w.saturating_sub(width(indent) + 1).max(1);
            for (i, piece) in wrap(&text, room).into_iter().enumerate() {
                let lead = if i == 0 { sign } else { " " };
                out.push(Line::styled(format!("{indent}{lead}{piece}"), style));
            }
        }
        out
    }

    /// The dialog's body for the front question, `w` columns wide.
    fn confirmation_body(&self, c: &super::app::Confirmation, w: usize) -> Lines {
        let t = &self.theme;
        let mut out = Lines::new();
        let args = c.detail.args.as_ref();
        let text_of = |k: &str| args.and_then(|a| a.get(k)).and_then(Value::as_str);
        match (c.tool_name.as_str(), &c.detail.diff) {
            ("bash", _) if text_of("command").is_some() => {
                let cmd = strip_controls(text_of("command").unwrap_or(""));
                for (i, row) in wrap(&cmd, w.saturating_sub(2)).into_iter().enumerate() {
                    let lead = if i == 0 { "$ " } else { "  " };
                    out.push(Line::from(vec![
                        Span::styled(lead, self.fg(t.accent)),
                        Span::styled(row, self.fg(t.fg).add_modifier(Modifier::BOLD)),
                    ]));
                }
                let cwd = std::env::current_dir()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                let timeout = args
                    .and_then(|a| a.get("timeout"))
                    .map(|v| match v.as_u64() {
                        Some(n) => format!("{n} s"),
                        None => strip_controls(&v.to_string()),
                    })
                    .unwrap_or_else(|| "none given".into());
                for row in wrap(
                    &format!("in {}  ·  timeout {timeout}", strip_controls(&cwd)),
                    w,
                ) {
                    out.push(Line::styled(row, self.fg(t.muted)));
                }
            }
            ("write" | "edit", Some(d)) => {
                let path = strip_controls(text_of("path").unwrap_or(""));
                let what = if d.new_file {
                    format!("{path} (new file, +{})", d.added)
                } else {
                    format!("{path}  +{} -{}", d.added, d.removed)
                };
                out.push(Line::styled(
                    truncate(&what, w),
                    self.fg(t.fg).add_modifier(Modifier::BOLD),
                ));
                out.extend(self.diff_lines(d, w, ""));
            }
            _ => {
                for row in wrap(&c.preview, w) {
                    out.push(Line::styled(row, self.fg(t.fg)));
                }
                if let Some(a) = args.filter(|a| a.as_object().is_some_and(|o| !o.is_empty())) {
                    let pretty = serde_json::to_string_pretty(a).unwrap_or_default();
                    for row in wrap(&strip_controls(&pretty), w) {
                        out.push(Line::styled(row, self.fg(t.muted)));
                    }
                }
            }
        }
        out
    }

    /// Draws the front question over `over`, or a "too small" line when it
    /// cannot be drawn whole; notes which question was drawn whole.
    pub(super) fn draw_confirmation(&self, f: &mut Frame, over: Rect) {
        self.confirm_drawn.set(None);
        let Some(c) = self.confirmations.front() else {
            return;
        };
        let t = &self.theme;
        let box_w = over.width.min(100);
        let inner_w = usize::from(box_w).saturating_sub(2).max(1);
        let body = self.confirmation_body(c, inner_w);
        let waiting = if self.confirmations.len() > 1 {
            format!("  (+{} waiting)", self.confirmations.len() - 1)
        } else {
            String::new()
        };
        let scope_line = Line::styled(
            truncate(
                &format!("[a] always allows {} this session", c.detail.scope),
                inner_w,
            ),
            self.fg(t.muted),
        );
        let keys = Line::styled(
            truncate(
                &format!("[y] allow once  [a] always  [n/Esc] deny{waiting}"),
                inner_w,
            ),
            self.fg(t.accent),
        );
        // Body, a position line, scope and keys, inside a border.
        let fixed = 3;
        let room = usize::from(over.height).saturating_sub(2 + fixed);
        if over.width < 20 || room == 0 {
            let msg = "terminal too small for the approval dialog: enlarge it (Ctrl+C denies)";
            let r = Rect::new(over.x, over.y, over.width, 1.min(over.height));
            if r.height > 0 {
                f.render_widget(Clear, r);
                f.render_widget(
                    Paragraph::new(Line::styled(
                        truncate(msg, usize::from(over.width)),
                        self.fg(t.warning),
                    )),
                    r,
                );
            }
            return;
        }
        let shown = body.len().min(room);
        let max_off = body.len() - shown;
        let off = c.detail.offset.min(max_off);
        let mut lines: Lines = body[off..off + shown].to_vec();
        let below = body.len() - off - shown;
        let position = if max_off == 0 {
            String::new()
        } else {
            format!("↑ {off} above · ↓ {below} below (PgUp/PgDn, ↑/↓ scroll)")
        };
        lines.push(Line::styled(
            truncate(&position, inner_w),
            self.fg(t.warning),
        ));
        lines.push(scope_line);
        lines.push(keys);
        let height = (lines.len() + 2) as u16;
        let x = over.x + (over.width - box_w) / 2;
        let r = Rect::new(x, over.y + over.height - height, box_w, height);
        let title = truncate(&format!(" allow {}? ", c.tool_name), inner_w);
        f.render_widget(Clear, r);
        f.render_widget(
            Paragraph::new(lines).block(self.bordered(title, self.fg(t.warning))),
            r,
        );
        self.confirm_page.set(room);
        self.confirm_drawn.set(Some(c.request_id));
    }

    /// A key for the open dialog that scrolls it; true when used.
    pub(super) fn confirmation_scroll(&mut self, code: crossterm::event::KeyCode) -> bool {
        use crossterm::event::KeyCode;
        let page = self.confirm_page.get().saturating_sub(1).max(1);
        let Some(c) = self.confirmations.front_mut() else {
            return false;
        };
        let off = &mut c.detail.offset;
        match code {
            KeyCode::Up => *off = off.saturating_sub(1),
            KeyCode::Down => *off += 1,
            KeyCode::PageUp => *off = off.saturating_sub(page),
            KeyCode::PageDown => *off += page,
            KeyCode::Home => *off = 0,
            KeyCode::End => *off = usize::MAX / 2,
            _ => return false,
        }
        true
    }

    /// Whether the front question was drawn whole, so it may be answered.
    pub(super) fn confirmation_visible(&self) -> bool {
        let front = self.confirmations.front().map(|c| c.request_id);
        front.is_some() && self.confirm_drawn.get() == front
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_new_file_is_all_plus_and_an_edit_has_hunks() {
        let d = unified(None, "a\nb\n");
        assert!(d.new_file);
        assert_eq!((d.added, d.removed), (2, 0));
        assert_eq!(
            d.rows,
            vec![
                DiffRow::Hunk("@@ -0,0 +1,2 @@".into()),
                DiffRow::Add("a".into()),
                DiffRow::Add("b".into())
            ]
        );
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("f.txt"), "one\ntwo\nthree\n").expect("write");
        let args = json!({"path": "f.txt", "edits": [{"oldText": "two", "newText": "2"}]});
        let d = diff_for_call("edit", &args, dir.path()).expect("diff");
        assert_eq!((d.added, d.removed, d.new_file), (1, 1, false));
        assert_eq!(d.rows[0], DiffRow::Hunk("@@ -1,3 +1,3 @@".into()));
        assert!(d.rows.contains(&DiffRow::Del("two".into())));
        assert!(d.rows.contains(&DiffRow::Add("2".into())));
        let bad = json!({"path": "f.txt", "edits": [{"oldText": "zzz", "newText": "2"}]});
        let d = diff_for_call("edit", &bad, dir.path()).expect("diff");
        assert!(matches!(&d.rows[0], DiffRow::Note(n) if n.contains("will fail")));
    }
}
