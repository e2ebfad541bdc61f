//! Syntax highlighting of code blocks, by language, in the theme's colours.
//!
//! The grammars are syntect's bundled set (the ones bat and delta use),
//! loaded once, on the first code block that names a language: a session
//! without code never pays for them. Colours are not taken from a syntect
//! theme but from the terminal theme's roles (keywords in the accent
//! colour, strings in the tool colour, comments muted, …), so code follows
//! `/settings` and user themes, and a `NO_COLOR` terminal gets none.
//!
//! Invariant: highlighting never changes the text; a grammar error leaves
//! the rest of the block in the plain colour.

use super::theme::Theme;
use ratatui::style::{Color, Modifier, Style};
use std::sync::OnceLock;
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};

/// The bundled grammars, loaded on first use.
fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Scope prefixes and the theme role each gets, most specific first.
struct Roles {
    table: Vec<(Scope, Role)>,
}

#[derive(Clone, Copy)]
enum Role {
    Comment,
    String,
    Number,
    Keyword,
    Function,
    Type,
}

fn roles() -> &'static Roles {
    static ROLES: OnceLock<Roles> = OnceLock::new();
    ROLES.get_or_init(|| {
        let pairs = [
            ("comment", Role::Comment),
            ("string", Role::String),
            ("constant.character", Role::String),
            ("constant.numeric", Role::Number),
            ("constant.language", Role::Number),
            ("constant", Role::Number),
            ("keyword", Role::Keyword),
            ("storage.modifier", Role::Keyword),
            ("storage.type.function", Role::Keyword),
            ("storage.type", Role::Type),
            ("storage", Role::Keyword),
            ("entity.name.function", Role::Function),
            ("support.function", Role::Function),
            ("variable.function", Role::Function),
            ("meta.function-call", Role::Function),
            ("entity.name.type", Role::Type),
            ("entity.name.class", Role::Type),
            ("entity.name.struct", Role::Type),
            ("entity.name.enum", Role::Type),
            ("support.type", Role::Type),
            ("support.class", Role::Type),
            ("entity.name.tag", Role::Keyword),
            ("entity.other.attribute-name", Role::Function),
            ("markup.inserted", Role::String),
            ("markup.deleted", Role::Number),
        ];
        Roles {
            table: pairs
                .iter()
                .filter_map(|(s, r)| Scope::new(s).ok().map(|s| (s, *r)))
                .collect(),
        }
    })
}

fn role_style(role: Role, theme: &Theme) -> Style {
    let c: Color = match role {
        Role::Comment => theme.muted,
        Role::String => theme.tool,
        Role::Number => theme.warning,
        Role::Keyword => theme.accent,
        Role::Function => theme.assistant,
        Role::Type => theme.user,
    };
    let s = Style::default().fg(c);
    match role {
        Role::Comment => s.add_modifier(Modifier::ITALIC),
        Role::Keyword => s.add_modifier(Modifier::BOLD),
        _ => s,
    }
}

/// The grammar for a fence's info string (`rust`, `py`, `sh`, …), if any.
fn syntax_for(lang: &str) -> Option<&'static SyntaxReference> {
    let token = lang.split([',', ' ', '{']).next().unwrap_or("").trim();
    if token.is_empty() {
        return None;
    }
    let set = syntaxes();
    let token = match token.to_ascii_lowercase().as_str() {
        "shell" | "console" | "zsh" => "sh".to_string(),
        "ts" | "typescript" | "tsx" => "js".to_string(),
        "jsonc" | "json5" => "json".to_string(),
        other => other.to_string(),
    };
    set.find_syntax_by_token(&token)
}

/// Highlighted pieces of one code line: `(text, style)`; the text pieces
/// joined are the line.
pub type Pieces = Vec<(String, Style)>;

/// `code` split into lines, each cut into styled pieces. Without a known
/// grammar, or under `NO_COLOR`, every line is one piece in `plain`.
pub fn highlight(code: &str, lang: &str, theme: &Theme, plain: Style) -> Vec<Pieces> {
    // A streaming answer re-renders its last block at every frame: a code
    // block that stopped growing is highlighted once, not at every frame.
    /// Code, language, theme and style, and what they highlighted to.
    type Memo = (String, String, Theme, Style, Vec<Pieces>);
    thread_local! {
        static RECENT: std::cell::RefCell<Vec<Memo>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    const KEPT: usize = 16;
    let hit = RECENT.with(|r| {
        r.borrow()
            .iter()
            .find(|(c, l, t, p, _)| c == code && l == lang && *p == plain && t == theme)
            .map(|e| e.4.clone())
    });
    if let Some(pieces) = hit {
        return pieces;
    }
    let pieces = highlight_now(code, lang, theme, plain);
    RECENT.with(|r| {
        let mut r = r.borrow_mut();
        if r.len() == KEPT {
            r.remove(0);
        }
        r.push((
            code.to_string(),
            lang.to_string(),
            theme.clone(),
            plain,
            pieces.clone(),
        ));
    });
    pieces
}

fn highlight_now(code: &str, lang: &str, theme: &Theme, plain: Style) -> Vec<Pieces> {
    let lines: Vec<&str> = code.split_inclusive('\n').collect();
    let grammar = if theme.plain() {
        None
    } else {
        syntax_for(lang)
    };
    let Some(grammar) = grammar else {
        return lines
            .iter()
            .map(|l| vec![(l.trim_end_matches('\n').to_string(), plain)])
            .collect();
    };
    let set = syntaxes();
    let table = &roles().table;
    let mut state = ParseState::new(grammar);
    let mut stack = ScopeStack::new();
    let mut broken = false;
    let mut out = Vec::with_capacity(lines.len());
    for raw in lines {
        let owned;
        let line = if raw.ends_with('\n') {
            raw
        } else {
            owned = format!("{raw}\n");
            owned.as_str()
        };
        let text_end = line.len() - 1;
        let ops = if broken {
            Vec::new()
        } else {
            match state.parse_line(line, set) {
                Ok(ops) => ops,
                Err(e) => {
                    log::debug!("highlighting stopped: {e}");
                    broken = true;
                    Vec::new()
                }
            }
        };
        let mut pieces: Pieces = Vec::new();
        let mut at = 0;
        let style_now = |stack: &ScopeStack| -> Style {
            for scope in stack.as_slice().iter().rev() {
                for (prefix, role) in table {
                    if prefix.is_prefix_of(*scope) {
                        return role_style(*role, theme);
                    }
                }
            }
            plain
        };
        for (pos, op) in ops {
            let pos = pos.min(text_end);
            if pos > at {
                push_piece(&mut pieces, &line[at..pos], style_now(&stack));
                at = pos;
            }
            if stack.apply(&op).is_err() {
                broken = true;
            }
        }
        if text_end > at {
            push_piece(&mut pieces, &line[at..text_end], style_now(&stack));
        }
        if broken {
            // The grammar gave up: keep the text, lose the colour.
            pieces = vec![(line[..text_end].to_string(), plain)];
        }
        out.push(pieces);
    }
    out
}

fn push_piece(pieces: &mut Pieces, text: &str, style: Style) {
    if text.is_empty() {
        return;
    }
    match pieces.last_mut() {
        Some((t, s)) if *s == style => t.push_str(text),
        _ => pieces.push((text.to_string(), style)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::tui::theme::ColorDepth;

    #[test]
    fn rust_keywords_and_strings_get_their_roles_and_text_is_kept() {
        let theme = Theme::builtin(true, ColorDepth::TrueColor);
        let plain = Style::default().fg(theme.fg);
        let code = "fn main() {\n    let s = \"hi\"; // note\n}";
        let lines = highlight(code, "rust", &theme, plain);
        assert_eq!(lines.len(), 3);
        let joined: Vec<String> = lines
            .iter()
            .map(|p| p.iter().map(|(t, _)| t.as_str()).collect())
            .collect();
        assert_eq!(joined, code.split('\n').collect::<Vec<_>>());
        let style_of = |line: usize, word: &str| {
            lines[line]
                .iter()
                .find(|(t, _)| t.contains(word))
                .map(|(_, s)| *s)
                .expect("piece")
        };
        assert_eq!(style_of(0, "fn").fg, Some(theme.accent));
        assert_eq!(style_of(1, "\"hi\"").fg, Some(theme.tool));
        assert_eq!(style_of(1, "// note").fg, Some(theme.muted));
    }

    #[test]
    fn unknown_language_and_no_color_are_plain() {
        let theme = Theme::builtin(true, ColorDepth::TrueColor);
        let plain = Style::default();
        let lines = highlight("a b\nc", "no-such-lang", &theme, plain);
        assert_eq!(
            lines,
            vec![
                vec![("a b".to_string(), plain)],
                vec![("c".to_string(), plain)]
            ]
        );
        let mono = Theme::builtin(true, ColorDepth::None);
        let lines = highlight("fn x() {}", "rust", &mono, plain);
        assert_eq!(lines, vec![vec![("fn x() {}".to_string(), plain)]]);
    }
}
