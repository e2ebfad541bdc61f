//! The editor's keys: readline bindings, undo, Ctrl+R history search, the
//! queue taken back with Up, and the keys that leave the terminal for a
//! while (Ctrl+G, Ctrl+Z).
//!
//! Called by [`App::on_key`] once no dialog, panel or picker holds the
//! keyboard; like the rest of the app it only changes state and returns
//! [`Intent`]s.

use super::app::{App, Intent};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// An incremental history search (Ctrl+R) in progress.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Search {
    pub query: String,
    /// The history index shown, if anything matched.
    pub found: Option<usize>,
    /// The editor text before the search, given back on Esc.
    draft: String,
}

/// The editor's own state beyond its text.
#[derive(Debug, Clone, Default)]
pub struct Typing {
    pub search: Option<Search>,
    /// Drawing on a real terminal (not a test backend): Ctrl+G and Ctrl+Z
    /// may leave it.
    pub real_terminal: bool,
    /// The screen was given away: the next frame is drawn from scratch.
    pub redraw_all: bool,
    /// Symbols and box drawing in ASCII (`TERM=linux`).
    pub ascii: bool,
}

impl App {
    /// Marks the app as drawing on the real terminal.
    pub fn set_real_terminal(&mut self) {
        self.typing.real_terminal = true;
    }

    pub fn on_real_terminal(&self) -> bool {
        self.typing.real_terminal
    }

    /// The editor's cursor as a byte offset into [`App::editor_text`].
    pub fn editor_cursor(&self) -> usize {
        self.editor.cursor()
    }

    /// Asks for the next frame to be drawn from scratch.
    pub fn redraw_all(&mut self) {
        self.typing.redraw_all = true;
    }

    /// Whether the next frame must be drawn from scratch (asked once).
    pub fn take_redraw_all(&mut self) -> bool {
        std::mem::take(&mut self.typing.redraw_all)
    }

    /// The search line shown above the editor while Ctrl+R is active.
    pub fn search_prompt(&self) -> Option<String> {
        let s = self.typing.search.as_ref()?;
        Some(match s.found {
            Some(_) => format!(
                "(search history) {}▏  Enter send · Ctrl+R older · Esc cancel",
                s.query
            ),
            None if s.query.is_empty() => {
                "(search history) type to search · Esc cancel".to_string()
            }
            None => format!("(search history) {}▏  no match", s.query),
        })
    }

    /// Keys while Ctrl+R is active; `None` when the search ended and the
    /// key should be handled as usual (it accepted the match).
    fn search_key(&mut self, key: &KeyEvent) -> Option<Vec<Intent>> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let s = self.typing.search.as_mut()?;
        match key.code {
            KeyCode::Char('r') | KeyCode::Char('s') if ctrl => {
                let older = key.code == KeyCode::Char('r');
                let next = if older {
                    self.editor.history().search(&s.query, s.found)
                } else {
                    // Ctrl+S: newer.
                    let from = s.found.map_or(0, |i| i + 1);
                    let q = s.query.to_lowercase();
                    let h = self.editor.history().entries();
                    (from..h.len()).find(|&i| h[i].to_lowercase().contains(&q))
                };
                if let Some(i) = next {
                    s.found = Some(i);
                }
            }
            KeyCode::Esc | KeyCode::Char('g') if key.code == KeyCode::Esc || ctrl => {
                let draft = std::mem::take(&mut s.draft);
                self.typing.search = None;
                self.editor.show(draft);
                return Some(Vec::new());
            }
            KeyCode::Backspace => {
                s.query.pop();
                s.found = self.editor.history().search(&s.query, None);
            }
            KeyCode::Char(c) if !ctrl && !key.modifiers.contains(KeyModifiers::ALT) => {
                s.query.push(c);
                s.found = self
                    .editor
                    .history()
                    .search(&s.query, s.found.map(|i| i + 1));
            }
            _ => {
                // Any other key takes the match and does its usual work.
                self.typing.search = None;
                return None;
            }
        }
        let shown = match self.typing.search.as_ref().and_then(|s| s.found) {
            Some(i) => self.editor.history().entries()[i].clone(),
            None => self
                .typing
                .search
                .as_ref()
                .map(|s| s.draft.clone())
                .unwrap_or_default(),
        };
        self.editor.show(shown);
        Some(Vec::new())
    }

    /// The editor's keys; `None` for a key it leaves to the caller.
    pub(super) fn typing_key(&mut self, key: &KeyEvent) -> Option<Vec<Intent>> {
        if self.typing.search.is_some() {
            if let Some(out) = self.search_key(key) {
                return Some(out);
            }
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let e = &mut self.editor;
        match key.code {
            KeyCode::Char('r') if ctrl => {
                self.typing.search = Some(Search {
                    query: String::new(),
                    found: None,
                    draft: e.text().to_string(),
                });
            }
            KeyCode::Char('a') if ctrl => e.home(),
            KeyCode::Char('e') if ctrl => e.end(),
            KeyCode::Char('b') if ctrl => e.left(),
            KeyCode::Char('f') if ctrl => e.right(),
            KeyCode::Char('u') if ctrl => e.kill_to_start(),
            KeyCode::Char('k') if ctrl => e.kill_to_end(),
            KeyCode::Char('w') if ctrl => e.delete_word(),
            KeyCode::Char('y') if ctrl => e.yank(),
            // Ctrl+_ arrives as 0x1f, which terminals also send for Ctrl+/
            // and Ctrl+7.
            KeyCode::Char('_' | '7' | '/') if ctrl => {
                e.undo();
            }
            KeyCode::Char('b' | 'B') if alt => e.word_back(),
            KeyCode::Char('f' | 'F') if alt => e.word_forward(),
            KeyCode::Char('d' | 'D') if alt => e.kill_word_forward(),
            KeyCode::Backspace if alt || ctrl => e.kill_word_back(),
            KeyCode::Char('h') if ctrl => e.backspace(),
            KeyCode::Left if ctrl || alt => e.word_back(),
            KeyCode::Right if ctrl || alt => e.word_forward(),
            KeyCode::Char('g') if ctrl => return Some(vec![Intent::EditExternally]),
            KeyCode::Char('z') if ctrl => return Some(vec![Intent::Suspend]),
            // Up on an empty editor takes the last queued prompt back.
            KeyCode::Up if e.is_empty() && !self.queued.is_empty() => {
                let text = self.queued.pop().unwrap_or_default();
                self.editor.set_text(&text);
                return Some(vec![Intent::TakeBackQueued]);
            }
            _ => return None,
        }
        self.menu_selected = 0;
        Some(Vec::new())
    }

    /// Esc during a turn: abort it and put every queued prompt back into
    /// the editor (after what is typed there) instead of starting them.
    pub(super) fn abort_and_take_back(&mut self) -> Vec<Intent> {
        if !self.queued.is_empty() {
            let mut text = self.editor.text().to_string();
            for q in std::mem::take(&mut self.queued) {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&q);
            }
            self.editor.set_text(&text);
        }
        vec![Intent::AbortAll]
    }

    /// The editor text after an external editor, or the reason it is not.
    pub fn edited_externally(&mut self, result: Result<String, String>) {
        match result {
            Ok(text) => self.editor.set_text(&text),
            Err(e) => self.set_flash(e, "error", Some(super::app::RELOAD_STATUS_TTL)),
        }
    }
}
