//! `zut ext list [--json]`: what discovery found, for people and scripts.
//!
//! Rows come straight from [`crate::host::discovery::discover`], in load order, so the
//! list shows exactly what zut would start and why the rest is not started
//! (disabled, shadowed, invalid). The table is aligned, one row per
//! directory, with descriptions stripped of control sequences and
//! shortened; `--json` prints the complete rows as an array of objects.

use super::term::{clean_cell, paint, Paint};
use crate::host::discovery::{Entry, Status};
use serde::Serialize;
use std::path::Path;

/// The longest description the table shows before cutting it with `…`.
const DESCRIPTION_WIDTH: usize = 48;

/// What a row's extension will do at startup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Loaded at startup.
    Enabled,
    /// Disabled by `zut ext disable`, or by `"enabled": false` in its
    /// manifest.
    Disabled,
    /// An earlier extension of the same name wins.
    Shadowed,
    /// The manifest is missing or invalid.
    Invalid,
    /// A project extension of a directory the user has not trusted.
    Untrusted,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Enabled => "enabled",
            State::Disabled => "disabled",
            State::Shadowed => "shadowed",
            State::Invalid => "invalid",
            State::Untrusted => "untrusted",
        }
    }
}

/// One discovered extension directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// The manifest name, else the directory name.
    pub name: String,
    pub version: String,
    pub state: State,
    /// Whether it is enabled: the `zut ext enable|disable` choice, else the
    /// manifest's `enabled`; `null` when the manifest is invalid.
    pub enabled: Option<bool>,
    /// `flag` (`--ext`), `project` or `global`.
    pub source: &'static str,
    /// The directory that wins over this one.
    pub shadowed_by: Option<String>,
    /// The source (`flag`, `project`, `global`) of that directory.
    pub shadowed_by_source: Option<&'static str>,
    pub description: String,
    pub language: String,
    /// No process, only a theme.
    pub theme_only: bool,
    pub dir: String,
    /// Why the manifest is invalid.
    pub error: Option<String>,
}

/// One row per entry, in discovery order.
pub fn rows(entries: &[Entry]) -> Vec<Row> {
    entries.iter().map(|e| row(e, entries)).collect()
}

fn row(e: &Entry, all: &[Entry]) -> Row {
    let m = e.manifest();
    let (state, shadowed_by, error) = match &e.status {
        Status::Load(_) => (State::Enabled, None, None),
        Status::Disabled(_) => (State::Disabled, None, None),
        Status::Shadowed { by, .. } => (State::Shadowed, Some(by.clone()), None),
        Status::Invalid(err) => (State::Invalid, None, Some(err.to_string())),
        Status::Untrusted { .. } => (State::Untrusted, None, None),
    };
    let shadowed_by_source = shadowed_by
        .as_ref()
        .and_then(|by| all.iter().find(|o| &o.dir == by).map(|o| o.source.as_str()));
    Row {
        name: e.name(),
        version: m.map(|m| m.version.clone()).unwrap_or_default(),
        state,
        enabled: m.map(|m| m.enabled),
        source: e.source.as_str(),
        shadowed_by: shadowed_by.map(|p| p.display().to_string()),
        shadowed_by_source,
        description: m.map(|m| m.description.clone()).unwrap_or_default(),
        language: m.map(|m| m.language.clone()).unwrap_or_default(),
        theme_only: m.is_some_and(|m| m.theme_only()),
        dir: e.dir.display().to_string(),
        error,
    }
}

/// The rows as a pretty JSON array (with a final newline).
pub fn render_json(rows: &[Row]) -> String {
    let mut s = serde_json::to_string_pretty(rows).unwrap_or_else(|_| "[]".into());
    s.push('\n');
    s
}

/// The rows as an aligned table with a header; `home` (when given) is
/// shown as `~` in directories.
pub fn render_table(rows: &[Row], color: bool, home: Option<&Path>) -> String {
    let header = [
        "NAME",
        "VERSION",
        "STATUS",
        "SOURCE",
        "DESCRIPTION",
        "DIRECTORY",
    ];
    let cells: Vec<[String; 6]> = rows.iter().map(|r| table_cells(r, home)).collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    push_line(&mut out, &head, &widths, |_, t| {
        paint(t, Paint::Bold, color)
    });
    for (row, r) in cells.iter().zip(rows) {
        push_line(&mut out, row, &widths, |col, t| match col {
            2 => paint(t, state_paint(r.state), color),
            5 => paint(t, Paint::Dim, color),
            _ => t.to_string(),
        });
    }
    out
}

fn table_cells(r: &Row, home: Option<&Path>) -> [String; 6] {
    let mut status = match (r.state, r.shadowed_by_source) {
        (State::Shadowed, Some(src)) => format!("shadowed by {src}"),
        (state, _) => state.as_str().to_string(),
    };
    if r.theme_only {
        status.push_str(" (theme)");
    }
    let about = match &r.error {
        Some(e) => {
            let prefix = Path::new(&r.dir).join(crate::host::manifest::MANIFEST_FILE);
            let prefix = format!("{}: ", prefix.display());
            e.strip_prefix(&prefix).unwrap_or(e).to_string()
        }
        None => r.description.clone(),
    };
    [
        clean_cell(&r.name),
        or_dash(clean_cell(&r.version)),
        status,
        r.source.to_string(),
        or_dash(shorten(&clean_cell(&about), DESCRIPTION_WIDTH)),
        tilde(&r.dir, home),
    ]
}

fn state_paint(state: State) -> Paint {
    match state {
        State::Enabled => Paint::Green,
        State::Disabled => Paint::Yellow,
        State::Shadowed => Paint::Dim,
        State::Invalid => Paint::Red,
        State::Untrusted => Paint::Yellow,
    }
}

/// Appends one line: cells padded to `widths` (the last one not padded),
/// two spaces apart, `style` applied after padding is computed.
fn push_line(
    out: &mut String,
    cells: &[String],
    widths: &[usize],
    style: impl Fn(usize, &str) -> String,
) {
    let last = cells.len() - 1;
    for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
        out.push_str(&style(i, cell));
        if i < last {
            let pad = w - cell.chars().count() + 2;
            out.push_str(&" ".repeat(pad));
        }
    }
    out.push('\n');
}

fn or_dash(s: String) -> String {
    if s.is_empty() {
        "-".into()
    } else {
        s
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut cut: String = s.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

fn tilde(dir: &str, home: Option<&Path>) -> String {
    let dir_path = Path::new(dir);
    match home.and_then(|h| dir_path.strip_prefix(h).ok()) {
        Some(rest) if home.is_some_and(|h| h != Path::new("/")) => {
            format!("~/{}", rest.display())
        }
        _ => clean_cell(dir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::discovery::Source;
    use crate::host::manifest::Manifest;
    use std::path::PathBuf;

    fn manifest(name: &str, description: &str, theme: bool) -> Manifest {
        Manifest {
            dir: PathBuf::from(format!("/h/ext/{name}")),
            name: name.into(),
            version: "1.2.3".into(),
            exec: None,
            args: vec![],
            language: "go".into(),
            description: description.into(),
            skills: vec![],
            enabled: true,
            themes: if theme {
                vec![PathBuf::from("/t")]
            } else {
                vec![]
            },
        }
    }

    fn entries() -> Vec<Entry> {
        let m = manifest("dark", "a \x1b[31mdark\x1b[0m\ntheme", true);
        vec![
            Entry {
                dir: PathBuf::from("/p/.zut/extensions/dark"),
                source: Source::Project,
                status: Status::Load(m.clone()),
            },
            Entry {
                dir: PathBuf::from("/h/ext/dark"),
                source: Source::Global,
                status: Status::Shadowed {
                    manifest: Some(m),
                    by: PathBuf::from("/p/.zut/extensions/dark"),
                },
            },
        ]
    }

    #[test]
    fn rows_carry_state_and_shadowing() {
        let rows = rows(&entries());
        assert_eq!(rows[0].state, State::Enabled);
        assert!(rows[0].theme_only);
        assert_eq!(rows[1].state, State::Shadowed);
        assert_eq!(
            rows[1].shadowed_by.as_deref(),
            Some("/p/.zut/extensions/dark")
        );
        assert_eq!(rows[1].shadowed_by_source, Some("project"));
        let json: serde_json::Value = serde_json::from_str(&render_json(&rows)).unwrap();
        assert_eq!(json[1]["state"], "shadowed");
        assert_eq!(json[0]["shadowed_by"], serde_json::Value::Null);
        assert_eq!(json[0]["enabled"], true);
    }

    #[test]
    fn table_is_aligned_clean_and_optionally_coloured() {
        let rows = rows(&entries());
        let plain = render_table(&rows, false, Some(Path::new("/h")));
        let lines: Vec<&str> = plain.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].contains("enabled (theme)"), "{plain}");
        assert!(lines[1].contains("a dark theme"), "sanitised: {plain}");
        assert!(lines[2].contains("shadowed by project (theme)"), "{plain}");
        assert!(lines[2].ends_with("~/ext/dark"), "{plain}");
        let col = lines[0].find("SOURCE").unwrap();
        assert!(lines.iter().all(|l| !l[col..].starts_with(' ')), "{plain}");
        assert!(!plain.contains('\x1b'));
        let colored = render_table(&rows, true, None);
        assert!(
            colored.contains("\x1b[32menabled (theme)\x1b[0m"),
            "{colored}"
        );
    }

    #[test]
    fn long_descriptions_are_cut() {
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }
}
