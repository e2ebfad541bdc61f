//! Walking a project's files the way git sees them, without ever blocking.
//!
//! The `ignore` crate's own `.gitignore` handling opens every ignore file
//! with a plain `open`, so a FIFO named `.gitignore` (or
//! `.git/info/exclude`) anywhere in the tree hangs the walk, and with it
//! the tool thread, forever. Here the crate only walks; the ignore files
//! are read by zut through [`crate::safe_fs::read_regular`] (non-blocking
//! open, regular files only) and compiled with the crate's matcher, so
//! the patterns mean exactly what they mean to ripgrep and git.
//!
//! Invariants: entries come in file-name order; `.git` is never entered;
//! symlinks are not followed; hidden files are included; a path is judged
//! by the `.gitignore` of its own directory first, then those above it up
//! to the repository root (the first directory holding `.git`, else the
//! filesystem root), the repository's `.git/info/exclude` last; an
//! ignored directory is not entered; an unreadable or non-regular ignore
//! file counts as empty.

use crate::safe_fs::read_regular;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One directory's ignore rules.
#[derive(Clone)]
struct DirRules {
    /// Its own ignore files compiled (`None`: it has none).
    rules: Option<Arc<Gitignore>>,
    /// It holds `.git`: the search for ignore files stops here.
    repo_root: bool,
}

/// The compiled ignore files of each directory seen, by directory.
#[derive(Default)]
struct Rules {
    by_dir: HashMap<PathBuf, DirRules>,
}

impl Rules {
    /// `dir`'s own rules, read once.
    fn of(&mut self, dir: &Path) -> DirRules {
        if let Some(found) = self.by_dir.get(dir) {
            return found.clone();
        }
        let mut builder = GitignoreBuilder::new(dir);
        let mut any = false;
        let repo_root = dir.join(".git").exists();
        // Lowest priority first: within one matcher the last match wins.
        if repo_root {
            any |= add_file(&mut builder, &dir.join(".git/info/exclude"));
        }
        any |= add_file(&mut builder, &dir.join(".gitignore"));
        let built = any
            .then(|| builder.build().ok())
            .flatten()
            .filter(|g| !g.is_empty())
            .map(Arc::new);
        let found = DirRules {
            rules: built,
            repo_root,
        };
        self.by_dir.insert(dir.to_path_buf(), found.clone());
        found
    }

    /// Whether `path` is ignored: the nearest directory with a matching
    /// pattern decides.
    fn ignored(&mut self, path: &Path, is_dir: bool) -> bool {
        let mut dir = path.parent();
        while let Some(d) = dir {
            let here = self.of(d);
            if let Some(rules) = &here.rules {
                match rules.matched(path, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            if here.repo_root {
                break;
            }
            dir = d.parent();
        }
        false
    }
}

/// Adds the lines of ignore file `file` (if it is a readable regular
/// file); whether it had any.
fn add_file(builder: &mut GitignoreBuilder, file: &Path) -> bool {
    let Ok(bytes) = read_regular(file) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut any = false;
    for line in text.lines() {
        if builder.add_line(Some(file.to_path_buf()), line).is_ok() {
            any = true;
        }
    }
    any
}

/// A walk of `dir` (see the module invariants). Errors (unreadable
/// directories) are yielded and may be skipped.
pub fn project_files(dir: &Path) -> ignore::Walk {
    let rules = Arc::new(Mutex::new(Rules::default()));
    ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(move |e| {
            if e.file_name() == ".git" {
                return false;
            }
            if e.depth() == 0 {
                return true;
            }
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            let mut rules = rules.lock().unwrap_or_else(|p| p.into_inner());
            !rules.ignored(e.path(), is_dir)
        })
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
}

/// Non-hidden subdirectories of `root` (symlinks to directories
/// included), sorted by name; nothing if absent.
pub fn list_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn names(dir: &Path) -> Vec<String> {
        project_files(dir)
            .filter_map(Result::ok)
            .filter(|e| e.depth() > 0)
            .map(|e| {
                e.path()
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn nested_ignore_files_negation_and_exclude_apply() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        fs::create_dir_all(root.join(".git/info")).unwrap();
        fs::create_dir_all(root.join("sub/deep")).unwrap();
        fs::create_dir_all(root.join("build")).unwrap();
        fs::write(root.join(".git/info/exclude"), "*.local\n").unwrap();
        fs::write(root.join(".gitignore"), "build/\n*.log\n").unwrap();
        fs::write(root.join("sub/.gitignore"), "!keep.log\nsecret*\n").unwrap();
        for f in [
            "a.txt",
            "x.log",
            "y.local",
            "build/out.txt",
            "sub/keep.log",
            "sub/other.log",
            "sub/secret.txt",
            "sub/deep/secret2",
            "sub/deep/ok.rs",
        ] {
            fs::write(root.join(f), "x").unwrap();
        }
        assert_eq!(
            names(root),
            [
                ".gitignore",
                "a.txt",
                "sub",
                "sub/.gitignore",
                "sub/deep",
                "sub/deep/ok.rs",
                "sub/keep.log",
            ]
        );
    }

    #[test]
    fn fifo_ignore_files_do_not_block_the_walk() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        fs::create_dir_all(root.join(".git/info")).unwrap();
        fs::create_dir_all(root.join("sub")).unwrap();
        mkfifo(&root.join(".gitignore"));
        mkfifo(&root.join("sub/.gitignore"));
        mkfifo(&root.join(".git/info/exclude"));
        fs::write(root.join("sub/f.txt"), "x").unwrap();
        // A blocking open of any of the FIFOs would never return.
        let (tx, rx) = crossbeam_channel::bounded(1);
        let dir = root.to_path_buf();
        std::thread::spawn(move || tx.send(names(&dir)));
        let found = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the walk finishes although the ignore files are FIFOs");
        assert!(found.contains(&"sub/f.txt".to_string()), "{found:?}");
    }
}
