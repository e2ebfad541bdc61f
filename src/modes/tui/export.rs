//! Taking text out of the terminal: `/copy [N]` puts the last answer (or
//! its N-th code block) on the clipboard through OSC 52, which terminals,
//! ssh and tmux (`set-clipboard on`) pass to the system clipboard;
//! `/export [FILE]` writes the chat as markdown (default
//! `zut-<session>.md` in the working directory).

use super::app::{App, Entry, Intent, ToolState, RELOAD_STATUS_TTL};
use super::markdown::code_blocks;
use base64::Engine;
use std::path::PathBuf;

/// The OSC 52 sequence that sets the clipboard to `text`.
pub fn osc52(text: &str) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\u{1b}]52;c;{b64}\u{7}").into_bytes()
}

/// The chat as a markdown document.
pub fn to_markdown(chat: &[Entry], session: &str) -> String {
    let mut out = format!("# zut session {session}\n");
    for e in chat {
        match e {
            Entry::User(t) => out.push_str(&format!("\n## You\n\n{t}\n")),
            Entry::Assistant { text, blocked, .. } => {
                out.push_str(&format!("\n## zut\n\n{text}\n"));
                if let Some(r) = blocked {
                    out.push_str(&format!("\n> withheld: {r}\n"));
                }
            }
            Entry::Tool {
                name, args, state, ..
            } => {
                out.push_str(&format!("\n**tool `{name}`** `{args}`\n"));
                match state {
                    ToolState::Running(_) => out.push_str("\n(no result)\n"),
                    ToolState::Blocked(r) => out.push_str(&format!("\nblocked {r}\n")),
                    ToolState::Done { is_error, output } => {
                        let fence = if output.contains("```") {
                            "~~~~"
                        } else {
                            "```"
                        };
                        let what = if *is_error { "error" } else { "result" };
                        // Output's own last newline would leave a blank line
                        // before the closing fence.
                        let output = output.trim_end_matches(['\n', '\r']);
                        out.push_str(&format!("\n{what}:\n\n{fence}\n{output}\n{fence}\n"));
                    }
                }
            }
            Entry::Info(t) => out.push_str(&format!("\n_{t}_\n")),
            Entry::Error(t) => out.push_str(&format!("\n> error: {t}\n")),
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
    out
}

impl App {
    /// `/copy [N]`.
    pub(super) fn copy_command(&mut self, arg: Option<&str>) -> Vec<Intent> {
        let last = self.chat.iter().rev().find_map(|e| match e {
            Entry::Assistant { text, .. } if !text.trim().is_empty() => Some(text.clone()),
            _ => None,
        });
        let Some(answer) = last else {
            self.flash_for("no answer to copy yet", "warn");
            return Vec::new();
        };
        let (text, what) = match arg {
            None => (answer, "the last answer".to_string()),
            Some(n) => {
                let blocks = code_blocks(&answer);
                match n.parse::<usize>() {
                    Ok(i) if i >= 1 && i <= blocks.len() => {
                        (blocks[i - 1].clone(), format!("code block {i}"))
                    }
                    _ => {
                        self.flash_for(
                            &format!(
                                "usage: /copy [N], N from 1 to {} (the last answer's code blocks)",
                                blocks.len()
                            ),
                            "error",
                        );
                        return Vec::new();
                    }
                }
            }
        };
        self.flash_for(
            &format!(
                "copied {what} ({} characters) to the clipboard",
                text.chars().count()
            ),
            "success",
        );
        vec![Intent::Terminal(osc52(&text))]
    }

    /// `/export [FILE]`.
    pub(super) fn export_command(&mut self, arg: Option<&str>) {
        let session = if self.session_id.is_empty() {
            "unsaved".to_string()
        } else {
            super::footer::short_session(&self.session_id)
        };
        let path = match arg {
            Some(p) => PathBuf::from(p),
            None => PathBuf::from(format!("zut-{session}.md")),
        };
        let full = if path.is_absolute() {
            path
        } else {
            std::env::current_dir().unwrap_or_default().join(path)
        };
        match std::fs::write(&full, to_markdown(&self.chat, &self.session_id)) {
            Ok(()) => self.flash_for(&format!("exported to {}", full.display()), "success"),
            Err(e) => self.flash_for(&format!("cannot write {}: {e}", full.display()), "error"),
        }
    }

    fn flash_for(&mut self, text: &str, level: &str) {
        self.flash = Some(super::app::Flash {
            text: text.to_string(),
            level: level.to_string(),
            until: Some(self.now + RELOAD_STATUS_TTL),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_carries_the_text_in_base64() {
        assert_eq!(osc52("hi"), b"\x1b]52;c;aGk=\x07".to_vec());
    }

    #[test]
    fn markdown_export_keeps_the_answer_and_fences_tool_output() {
        let chat = vec![
            Entry::User("q".into()),
            Entry::Assistant {
                text: "**a**".into(),
                open: false,
                blocked: None,
            },
            Entry::Tool {
                id: "c1".into(),
                name: "bash".into(),
                extension: None,
                args: r#"{"command":"ls"}"#.into(),
                state: ToolState::Done {
                    is_error: false,
                    output: "a.txt\n".into(),
                },
            },
            Entry::Tool {
                id: "c2".into(),
                name: "read".into(),
                extension: None,
                args: r#"{"path":"x.md"}"#.into(),
                state: ToolState::Done {
                    is_error: true,
                    output: "```\ncode\n```".into(),
                },
            },
        ];
        let md = to_markdown(&chat, "s1");
        assert!(
            md.contains("## You\n\nq\n") && md.contains("## zut\n\n**a**\n"),
            "{md}"
        );
        assert!(
            md.contains("**tool `bash`** `{\"command\":\"ls\"}`\n\nresult:\n\n```\na.txt\n```\n"),
            "{md}"
        );
        // Output holding a fence is fenced with tildes.
        assert!(
            md.contains("error:\n\n~~~~\n```\ncode\n```\n~~~~\n"),
            "{md}"
        );
    }
}
