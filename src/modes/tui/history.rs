//! Sent prompts, per project, kept across runs in `$ZUT_HOME/history.jsonl`
//! and browsed with Up/Down or searched with Ctrl+R.
//!
//! The file holds one JSON object a line, `{"project": DIR, "text": PROMPT}`,
//! for every project; each project keeps its last [`HISTORY_MAX`] prompts.
//! A prompt is appended as it is sent (so two terminals in one project
//! both keep theirs); the file is rewritten, trimmed, only when it grew
//! past the bound by a tenth. It is created owner-only (0600): prompts can
//! hold secrets. A line that does not parse is skipped, never fatal.
//!
//! Invariant: browsing keeps the unsent draft and gives it back past the
//! newest entry.

use std::io::Write;
use std::path::{Path, PathBuf};

/// At most this many prompts are remembered per project.
pub const HISTORY_MAX: usize = 1000;

/// The history of one project.
#[derive(Debug, Default, Clone)]
pub struct History {
    entries: Vec<String>,
    /// The entry shown, when browsing.
    browsing: Option<usize>,
    /// What was typed before browsing started.
    draft: String,
    /// Where it is kept, and under which project; `None`: not kept.
    file: Option<(PathBuf, String)>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Row {
    project: String,
    text: String,
}

impl History {
    /// The history of `project` kept in `file` (loaded now; a missing or
    /// unreadable file is an empty history).
    pub fn load(file: PathBuf, project: String) -> History {
        let entries = read_rows(&file)
            .into_iter()
            .filter(|r| r.project == project)
            .map(|r| r.text)
            .collect::<Vec<_>>();
        let skip = entries.len().saturating_sub(HISTORY_MAX);
        History {
            entries: entries.into_iter().skip(skip).collect(),
            browsing: None,
            draft: String::new(),
            file: Some((file, project)),
        }
    }

    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    pub fn stop_browsing(&mut self) {
        self.browsing = None;
    }

    /// The previous (older) entry; `current` is kept as the draft when
    /// browsing starts. `None` when there is none.
    pub fn prev(&mut self, current: &str) -> Option<String> {
        let next = match self.browsing {
            None if self.entries.is_empty() => return None,
            None => {
                self.draft = current.to_string();
                self.entries.len() - 1
            }
            Some(0) => return None,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        Some(self.entries[next].clone())
    }

    /// The next (newer) entry, or the draft past the newest; `None` when
    /// not browsing.
    pub fn next(&mut self) -> Option<String> {
        let i = self.browsing?;
        if i + 1 < self.entries.len() {
            self.browsing = Some(i + 1);
            Some(self.entries[i + 1].clone())
        } else {
            self.browsing = None;
            Some(std::mem::take(&mut self.draft))
        }
    }

    /// Remembers a sent prompt (unless blank or equal to the newest).
    pub fn push(&mut self, text: &str) {
        self.browsing = None;
        self.draft.clear();
        if text.trim().is_empty() || self.entries.last().map(String::as_str) == Some(text) {
            return;
        }
        self.entries.push(text.to_string());
        if self.entries.len() > HISTORY_MAX {
            self.entries.remove(0);
        }
        if let Some((file, project)) = &self.file {
            if let Err(e) = append(file, project, text) {
                log::warn!("history not saved to {}: {e}", file.display());
            }
        }
    }

    /// The newest entry older than `before` (an index; `None`: from the
    /// newest) containing `query`, case-insensitively.
    pub fn search(&self, query: &str, before: Option<usize>) -> Option<usize> {
        let end = before.unwrap_or(self.entries.len()).min(self.entries.len());
        let q = query.to_lowercase();
        (0..end)
            .rev()
            .find(|&i| self.entries[i].to_lowercase().contains(&q))
    }
}

fn read_rows(file: &Path) -> Vec<Row> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Row>(l).ok())
        .collect()
}

fn open_private(file: &Path, append: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut o = std::fs::OpenOptions::new();
    o.create(true).mode(0o600);
    if append {
        o.append(true);
    } else {
        o.write(true).truncate(true);
    }
    o.open(file)
}

/// Appends one prompt; trims every project to its last [`HISTORY_MAX`]
/// when one of them grew past the bound by a tenth.
fn append(file: &Path, project: &str, text: &str) -> std::io::Result<()> {
    let row = serde_json::to_string(&Row {
        project: project.to_string(),
        text: text.to_string(),
    })?;
    {
        let mut f = open_private(file, true)?;
        f.write_all(format!("{row}\n").as_bytes())?;
    }
    let rows = read_rows(file);
    let mine = rows.iter().filter(|r| r.project == project).count();
    if mine <= HISTORY_MAX + HISTORY_MAX / 10 {
        return Ok(());
    }
    let mut counts = std::collections::HashMap::<&str, usize>::new();
    for r in &rows {
        *counts.entry(r.project.as_str()).or_default() += 1;
    }
    let mut seen = std::collections::HashMap::<&str, usize>::new();
    let mut out = String::new();
    for r in &rows {
        let n = seen.entry(r.project.as_str()).or_default();
        *n += 1;
        if counts[r.project.as_str()] - *n < HISTORY_MAX {
            out.push_str(&serde_json::to_string(r)?);
            out.push('\n');
        }
    }
    // Written beside, then renamed: a crash never leaves half a history.
    let tmp = file.with_extension("jsonl.tmp");
    {
        let mut f = open_private(&tmp, false)?;
        f.write_all(out.as_bytes())?;
    }
    std::fs::rename(&tmp, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_per_project_across_loads_owner_only_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("history.jsonl");
        let mut a = History::load(file.clone(), "/a".into());
        let mut b = History::load(file.clone(), "/b".into());
        a.push("one");
        b.push("other");
        a.push("two");
        a.push("two");
        let a2 = History::load(file.clone(), "/a".into());
        assert_eq!(a2.entries(), ["one", "two"]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(
            &file,
            format!("{}not json\n", std::fs::read_to_string(&file).unwrap()),
        )
        .unwrap();
        let mut a = History::load(file.clone(), "/a".into());
        for i in 0..HISTORY_MAX + HISTORY_MAX / 10 + 1 {
            a.push(&format!("p{i}"));
        }
        let a3 = History::load(file.clone(), "/a".into());
        assert_eq!(a3.entries().len(), HISTORY_MAX);
        assert_eq!(
            a3.entries().last().unwrap(),
            &format!("p{}", HISTORY_MAX + 100)
        );
        let b2 = History::load(file.clone(), "/b".into());
        assert_eq!(b2.entries(), ["other"], "another project's prompts stay");
    }

    #[test]
    fn search_finds_newest_first_then_older() {
        let mut h = History::default();
        for t in ["cargo test", "ls", "cargo build", "CARGO doc"] {
            h.push(t);
        }
        assert_eq!(h.search("cargo", None), Some(3));
        assert_eq!(h.search("cargo", Some(3)), Some(2));
        assert_eq!(h.search("cargo", Some(2)), Some(0));
        assert_eq!(h.search("cargo", Some(0)), None);
        assert_eq!(h.search("zzz", None), None);
    }
}
