//! Copying an extension's source tree into the install staging directory,
//! and the symlink policy shared with git clones.
//!
//! Invariants:
//! - nothing outside the source tree is ever read: a symlink that resolves
//!   outside it is refused (the error names the link and its target);
//! - in-tree symlinks to files are copied as regular files; in-tree symlinks
//!   to directories are recreated as relative links (no cycles, no
//!   duplication), so the installed copy is self-contained;
//! - everything is copied except `.git` and the plan's `exclude` paths (a
//!   build tool's output directory); `.gitignore` is *not* applied, since
//!   built files such as `dist/index.js` are usually ignored and are
//!   exactly what must be installed. An excluded path that holds or leads
//!   to a *required* path (the manifest, a file `exec` or `args` names) is
//!   copied after all;
//! - file mode bits are preserved; directories keep theirs plus owner
//!   `rwx`, so the installed copy can always be removed again;
//! - only regular files, directories and symlinks are copied: a FIFO,
//!   socket or device (not ignored) fails the install, naming it;
//! - the files copied add up to at most [`Plan::max_bytes`] (their
//!   apparent sizes, so a sparse file counts in full): the file that would
//!   pass the cap fails the install, naming it and the cap, before a byte
//!   of it is written;
//! - the walk checks cancellation between entries.

use super::{Failure, Outcome};
use crate::cancel::CancelToken;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

/// What to leave out.
pub(crate) struct Plan {
    /// Paths relative to the source root not to copy (besides `.git`).
    pub exclude: Vec<PathBuf>,
    /// Paths relative to the source root that are copied even if excluded.
    pub required: Vec<PathBuf>,
    /// A directory never to enter (the staging directory, should it lie
    /// inside the source).
    pub skip: Option<PathBuf>,
    /// The most bytes the copied files may add up to ([`max_bytes_from_env`]).
    pub max_bytes: u64,
}

/// The install size cap when `ZUT_INSTALL_MAX_MIB` is not set.
pub(crate) const DEFAULT_MAX_MIB: u64 = 100;
/// The environment variable that changes the cap (in MiB; see zut-ext(1)).
pub(crate) const MAX_MIB_ENV: &str = "ZUT_INSTALL_MAX_MIB";

/// The install size cap in bytes: `ZUT_INSTALL_MAX_MIB` or [`DEFAULT_MAX_MIB`].
pub(crate) fn max_bytes_from_env() -> u64 {
    let mib = std::env::var(MAX_MIB_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_MAX_MIB);
    mib.saturating_mul(1 << 20)
}

/// Per-walk state.
struct Walk<'a> {
    root: PathBuf,
    plan: &'a Plan,
    cancel: &'a CancelToken,
    warnings: &'a mut Vec<String>,
    /// Bytes copied so far.
    copied: u64,
}

/// Copies the tree at `src` into the existing directory `dst`; non-fatal
/// oddities (dangling links, sockets) are appended to `warnings`.
pub(crate) fn copy_tree(
    src: &Path,
    dst: &Path,
    plan: &Plan,
    cancel: &CancelToken,
    warnings: &mut Vec<String>,
) -> Outcome {
    let root = fs::canonicalize(src)
        .map_err(|e| format!("cannot read source directory {}: {e}", src.display()))?;
    let mut walk = Walk {
        root: root.clone(),
        plan,
        cancel,
        warnings,
        copied: 0,
    };
    walk.dir(&root, dst, Path::new(""))?;
    let mode = fs::metadata(&root)
        .map(|m| m.permissions().mode())
        .unwrap_or(0o755);
    set_mode(dst, mode | 0o700)
}

impl Walk<'_> {
    /// Copies the children of `src` (an in-tree directory, canonical) into
    /// `dst`.
    fn dir(&mut self, src: &Path, dst: &Path, rel: &Path) -> Outcome {
        for name in sorted_children(src)? {
            if self.cancel.is_cancelled() {
                return Err(Failure::Interrupted);
            }
            if name == ".git" {
                continue;
            }
            let path = src.join(&name);
            if self.plan.skip.as_deref() == Some(path.as_path()) {
                continue;
            }
            let child_rel = rel.join(&name);
            let excluded = self.plan.exclude.contains(&child_rel);
            let needed = self
                .plan
                .required
                .iter()
                .any(|r| r.starts_with(&child_rel) || child_rel.starts_with(r));
            if excluded && !needed {
                continue;
            }
            let meta = fs::symlink_metadata(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let target = dst.join(&name);
            if meta.file_type().is_symlink() {
                self.symlink(&path, &target, &child_rel)?;
            } else if meta.is_dir() {
                fs::create_dir(&target)
                    .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
                self.dir(&path, &target, &child_rel)?;
                set_mode(&target, meta.permissions().mode() | 0o700)?;
            } else if meta.is_file() {
                self.count(&path, meta.len())?;
                copy_file(&path, &target)?;
            } else {
                return Err(not_copyable(&path, &meta).into());
            }
        }
        Ok(())
    }

    /// Adds a file of `len` bytes to the total, refusing the one that
    /// would take it past the cap.
    fn count(&mut self, path: &Path, len: u64) -> Outcome {
        let total = self.copied.saturating_add(len);
        if total > self.plan.max_bytes {
            return Err(too_big(path, len, self.copied, self.plan.max_bytes).into());
        }
        self.copied = total;
        Ok(())
    }

    /// Applies the symlink policy to the link at `link`.
    fn symlink(&mut self, link: &Path, target: &Path, rel: &Path) -> Outcome {
        let shown = fs::read_link(link)
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        let resolved = match fs::canonicalize(link) {
            Ok(r) => r,
            Err(_) => {
                escape_check(link, rel, &shown)?;
                self.warnings.push(format!(
                    "skipped dangling symlink {} -> {shown}",
                    link.display()
                ));
                return Ok(());
            }
        };
        if !resolved.starts_with(&self.root) {
            return Err(outside(link, &resolved).into());
        }
        if self
            .plan
            .skip
            .as_deref()
            .is_some_and(|s| resolved.starts_with(s))
        {
            return Ok(());
        }
        if resolved.is_dir() {
            let inside = resolved.strip_prefix(&self.root).unwrap_or(Path::new(""));
            let relative = relative_link(rel, inside);
            std::os::unix::fs::symlink(&relative, target)
                .map_err(|e| format!("cannot create link {}: {e}", target.display()).into())
        } else if resolved.is_file() {
            let len = fs::metadata(&resolved).map(|m| m.len()).unwrap_or(0);
            self.count(link, len)?;
            copy_file(&resolved, target)
        } else {
            let meta = fs::metadata(&resolved)
                .map_err(|e| format!("cannot read {}: {e}", resolved.display()))?;
            Err(not_copyable(link, &meta).into())
        }
    }
}

/// Refuses any symlink under `root` (except inside `.git`) that resolves
/// outside it; used on git clones, which are not copied file by file.
pub(crate) fn check_symlinks(root: &Path, label: &str) -> Outcome {
    let canon = fs::canonicalize(root).map_err(|e| format!("cannot read {label}: {e}"))?;
    let mut stack = vec![canon.clone()];
    while let Some(dir) = stack.pop() {
        for name in sorted_children(&dir)? {
            if name == ".git" {
                continue;
            }
            let path = dir.join(&name);
            let meta = fs::symlink_metadata(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if meta.file_type().is_symlink() {
                let rel = path.strip_prefix(&canon).unwrap_or(&path);
                match fs::canonicalize(&path) {
                    Ok(r) if !r.starts_with(&canon) => {
                        return Err(outside(&Path::new(label).join(rel), &r).into())
                    }
                    Ok(_) => {}
                    Err(_) => {
                        let shown = fs::read_link(&path)
                            .map(|t| t.display().to_string())
                            .unwrap_or_default();
                        escape_check(&Path::new(label).join(rel), rel, &shown)?;
                    }
                }
            } else if meta.is_dir() {
                stack.push(path);
            }
        }
    }
    Ok(())
}

/// A dangling link is harmless unless its text already points outside.
fn escape_check(link: &Path, rel: &Path, shown: &str) -> Outcome {
    let text = Path::new(shown);
    let joined = rel.parent().unwrap_or(Path::new("")).join(text);
    if text.is_absolute() || crate::safe_fs::lexically_inside(&joined).is_none() {
        return Err(outside(link, text).into());
    }
    Ok(())
}

fn outside(link: &Path, target: &Path) -> String {
    format!(
        "symlink {} points outside the extension directory (to {}); replace it with a copy of what it points to, or remove it",
        link.display(),
        target.display()
    )
}

/// The link text that reaches `target` (relative to the root) from a link
/// at `link` (relative to the root).
fn relative_link(link: &Path, target: &Path) -> PathBuf {
    let depth = link.parent().map_or(0, |p| p.components().count());
    let mut out: PathBuf = std::iter::repeat_n(Component::ParentDir, depth).collect();
    out.push(target);
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

fn sorted_children(dir: &Path) -> Outcome<Vec<std::ffi::OsString>> {
    let rd = fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut names = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        names.push(entry.file_name());
    }
    names.sort();
    Ok(names)
}

/// Copies content and mode bits.
/// The refusal for a FIFO, socket or device in the source tree: copying
/// a FIFO would block forever, and none of them belongs in an extension.
fn not_copyable(path: &Path, meta: &fs::Metadata) -> String {
    format!(
        "refusing to install {}: it is {}; an extension may contain only regular files, directories and symlinks (remove it)",
        path.display(),
        crate::safe_fs::kind(meta)
    )
}

fn too_big(path: &Path, len: u64, before: u64, cap: u64) -> String {
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64);
    let so_far = if before > 0 {
        format!(" after {} of other files", mib(before))
    } else {
        String::new()
    };
    format!(
        "refusing to install {}: it is {}{so_far}, over the install size cap of {} (set {MAX_MIB_ENV} to raise it, or remove the file)",
        path.display(),
        mib(len),
        mib(cap)
    )
}

/// Copies a regular file with its mode; the source is opened without
/// blocking and checked again, so a file swapped for a FIFO is refused.
fn copy_file(from: &Path, to: &Path) -> Outcome {
    let fail =
        |e: std::io::Error| format!("cannot copy {} to {}: {e}", from.display(), to.display());
    let mut src = crate::safe_fs::open_regular(from).map_err(fail)?;
    let mode = src.metadata().map_err(fail)?.permissions().mode();
    let mut dst = fs::File::create(to).map_err(fail)?;
    std::io::copy(&mut src, &mut dst).map_err(fail)?;
    dst.set_permissions(fs::Permissions::from_mode(mode & 0o7777))
        .map_err(fail)?;
    Ok(())
}

pub(crate) fn set_mode(path: &Path, mode: u32) -> Outcome {
    fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o7777))
        .map_err(|e| format!("cannot set permissions on {}: {e}", path.display()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_links() {
        assert_eq!(
            relative_link(Path::new("a/b/link"), Path::new("c/d")),
            PathBuf::from("../../c/d")
        );
        assert_eq!(
            relative_link(Path::new("link"), Path::new("c")),
            PathBuf::from("c")
        );
        assert_eq!(
            relative_link(Path::new("link"), Path::new("")),
            PathBuf::from(".")
        );
    }
}
