//! Project trust: which project directories may start their own
//! extensions (`<dir>/.zut/extensions`).
//!
//! A repository can carry a `.zut/extensions` directory; running zut in a
//! freshly cloned repository must not run its programs. Project extensions
//! therefore start only in a directory the user trusted with
//! `zut ext trust [DIR]`; the list lives in `$ZUT_HOME/trust.json` as a
//! JSON array of absolute, symlink-resolved directory paths.
//!
//! Invariants:
//! - trust is per exact directory: trusting `/src/app` does not trust
//!   `/src/app/sub` nor `/src` (zut looks for project extensions only in
//!   its working directory, never in a parent, so nothing is inherited);
//! - paths are compared after resolving symlinks, so a link to a trusted
//!   directory is trusted and a trusted path later replaced by a link to
//!   somewhere else is not;
//! - `ZUT_TRUST_ALL=1` (or `true`/`yes`) trusts every directory (CI, tests);
//! - a missing `trust.json` trusts nothing; a corrupt one trusts nothing and
//!   is never silently replaced (`trust` and `untrust` then fail naming it);
//! - `--ext` paths and global extensions never need trust: the user named
//!   or installed them.

use crate::config::ConfigError;
use std::path::{Path, PathBuf};

/// Why trust could not be looked up or changed.
#[derive(Debug)]
pub enum TrustError {
    /// The directory could not be resolved (missing, unreadable).
    Resolve {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// The path resolves to something other than a directory.
    NotADirectory(PathBuf),
    /// `trust.json` exists but could not be read.
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    /// `trust.json` is not a JSON array of strings.
    Corrupt {
        file: PathBuf,
        source: serde_json::Error,
    },
    Encode {
        file: PathBuf,
        source: serde_json::Error,
    },
    /// Writing `trust.json` failed.
    Write(ConfigError),
}

impl std::fmt::Display for TrustError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrustError::Resolve { dir, source } => write!(f, "{}: {source}", dir.display()),
            TrustError::NotADirectory(dir) => write!(f, "{} is not a directory", dir.display()),
            TrustError::Read { file, source } => {
                write!(f, "cannot read {}: {source}", file.display())
            }
            TrustError::Corrupt { file, source } => write!(
                f,
                "{} is not valid: {source} (it must be a JSON array of directory paths; fix or delete it)",
                file.display()
            ),
            TrustError::Encode { file, source } => {
                write!(f, "cannot encode {}: {source}", file.display())
            }
            TrustError::Write(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TrustError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TrustError::Resolve { source, .. } | TrustError::Read { source, .. } => Some(source),
            TrustError::Corrupt { source, .. } | TrustError::Encode { source, .. } => Some(source),
            TrustError::Write(e) => Some(e),
            TrustError::NotADirectory(_) => None,
        }
    }
}

/// The environment variable that trusts every directory.
pub const TRUST_ALL_ENV: &str = "ZUT_TRUST_ALL";

/// `$ZUT_HOME/trust.json`.
pub fn path(home: &Path) -> PathBuf {
    home.join("trust.json")
}

/// True when `ZUT_TRUST_ALL` is set to `1`, `true` or `yes`.
pub fn trust_all() -> bool {
    std::env::var(TRUST_ALL_ENV)
        .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
        .unwrap_or(false)
}

/// `dir` resolved to the absolute, symlink-free form the store holds.
pub fn canonical(dir: &Path) -> Result<PathBuf, TrustError> {
    let real = dir.canonicalize().map_err(|source| TrustError::Resolve {
        dir: dir.to_path_buf(),
        source,
    })?;
    if !real.is_dir() {
        return Err(TrustError::NotADirectory(dir.to_path_buf()));
    }
    Ok(real)
}

/// The trusted directories in `trust.json`; none when it does not exist.
pub fn load(home: &Path) -> Result<Vec<PathBuf>, TrustError> {
    let file = path(home);
    let bytes = match crate::safe_fs::read_regular(&file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(TrustError::Read { file, source }),
    };
    let list: Vec<String> = match serde_json::from_slice(&bytes) {
        Ok(l) => l,
        Err(source) => return Err(TrustError::Corrupt { file, source }),
    };
    Ok(list.into_iter().map(PathBuf::from).collect())
}

/// Whether project extensions of `dir` may start.
pub fn is_trusted(home: &Path, dir: &Path) -> bool {
    if trust_all() {
        return true;
    }
    let Ok(real) = dir.canonicalize() else {
        return false;
    };
    match load(home) {
        Ok(list) => list.iter().any(|t| t == &real),
        Err(e) => {
            log::warn!("{e}");
            false
        }
    }
}

/// Adds `dir` (canonicalized); returns it and whether it was new.
pub fn add(home: &Path, dir: &Path) -> Result<(PathBuf, bool), TrustError> {
    let real = canonical(dir)?;
    let mut list = load(home)?;
    if list.contains(&real) {
        return Ok((real, false));
    }
    list.push(real.clone());
    save(home, &list)?;
    Ok((real, true))
}

/// Removes `dir`; returns the path looked for and whether it was listed.
/// A directory that no longer exists can still be removed by its path.
pub fn remove(home: &Path, dir: &Path) -> Result<(PathBuf, bool), TrustError> {
    let real = canonical(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut list = load(home)?;
    let before = list.len();
    list.retain(|p| p != &real);
    if list.len() == before {
        return Ok((real, false));
    }
    save(home, &list)?;
    Ok((real, true))
}

fn save(home: &Path, list: &[PathBuf]) -> Result<(), TrustError> {
    let strings: Vec<String> = list
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let mut text = serde_json::to_string_pretty(&strings).map_err(|source| TrustError::Encode {
        file: path(home),
        source,
    })?;
    text.push('\n');
    crate::config::write_atomic(&path(home), text.as_bytes(), 0o600).map_err(TrustError::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_directory_after_resolving_links() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let proj = t.path().join("proj");
        std::fs::create_dir_all(proj.join("sub")).unwrap();
        std::os::unix::fs::symlink(&proj, t.path().join("link")).unwrap();
        assert!(!is_trusted(&home, &proj));
        let (real, new) = add(&home, &t.path().join("link")).unwrap();
        assert!(new);
        assert_eq!(real, proj.canonicalize().unwrap());
        assert!(!add(&home, &proj).unwrap().1, "already listed");
        assert!(is_trusted(&home, &proj));
        assert!(is_trusted(&home, &t.path().join("link")));
        assert!(!is_trusted(&home, &proj.join("sub")), "no inheritance");
        assert!(!is_trusted(&home, t.path()), "no inheritance upward");
        let saved: Vec<String> =
            serde_json::from_slice(&std::fs::read(path(&home)).unwrap()).unwrap();
        assert_eq!(saved, [real.display().to_string()]);
        assert!(remove(&home, &proj).unwrap().1);
        assert!(!remove(&home, &proj).unwrap().1);
        assert!(!is_trusted(&home, &proj));
    }

    #[test]
    fn corrupt_store_trusts_nothing_and_is_kept() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(path(t.path()), "{not a list").unwrap();
        assert!(!is_trusted(t.path(), t.path()));
        let e = add(t.path(), t.path()).unwrap_err();
        assert!(matches!(&e, TrustError::Corrupt { file, .. } if file == &path(t.path())));
        assert!(e.to_string().contains("trust.json is not valid"), "{e}");
        assert_eq!(std::fs::read(path(t.path())).unwrap(), b"{not a list");
        let e = add(t.path(), &t.path().join("missing")).unwrap_err();
        let TrustError::Resolve { dir, source } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(dir, &t.path().join("missing"));
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        assert!(e.to_string().contains("missing"));
        std::fs::write(t.path().join("file"), "").unwrap();
        assert!(matches!(
            add(t.path(), &t.path().join("file")),
            Err(TrustError::NotADirectory(_))
        ));
    }
}
