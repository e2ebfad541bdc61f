//! Where zut keeps its state (see zut(1), FILES).

use std::path::{Path, PathBuf};

/// `$ZUT_HOME`: `$ZUT_HOME`, else `$XDG_STATE_HOME/zut`, else the platform
/// default (`~/.local/state/zut` on Linux, `~/Library/Application Support/zut`
/// on macOS), else `.zut` when no home directory is known.
pub fn zut_home() -> PathBuf {
    zut_home_from(|k| std::env::var_os(k).filter(|v| !v.is_empty()))
}

fn zut_home_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    if let Some(h) = var("ZUT_HOME") {
        return PathBuf::from(h);
    }
    if let Some(x) = var("XDG_STATE_HOME") {
        return PathBuf::from(x).join("zut");
    }
    match var("HOME") {
        Some(home) if cfg!(target_os = "macos") => {
            PathBuf::from(home).join("Library/Application Support/zut")
        }
        Some(home) => PathBuf::from(home).join(".local/state/zut"),
        None => PathBuf::from(".zut"),
    }
}

/// Creates `dir` and its missing parents readable by the user alone
/// (0700): `$ZUT_HOME` holds transcripts, logs and keys. Directories that
/// exist keep their mode.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// `$ZUT_HOME/extensions`.
pub fn global_extensions(home: &Path) -> PathBuf {
    home.join("extensions")
}

/// `<cwd>/.zut/extensions`.
pub fn project_extensions(cwd: &Path) -> PathBuf {
    cwd.join(".zut").join("extensions")
}

/// `$ZUT_HOME/logs`.
pub fn logs_dir(home: &Path) -> PathBuf {
    home.join("logs")
}

/// The stderr log of extension `name`.
pub fn ext_log(home: &Path, name: &str) -> PathBuf {
    logs_dir(home).join(format!("ext-{name}.log"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(vars: &[(&str, &str)]) -> PathBuf {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        zut_home_from(|k| m.get(k).map(Into::into))
    }

    #[test]
    fn resolution_order() {
        assert_eq!(
            resolve(&[("ZUT_HOME", "/z"), ("XDG_STATE_HOME", "/x"), ("HOME", "/h")]),
            PathBuf::from("/z")
        );
        assert_eq!(
            resolve(&[("XDG_STATE_HOME", "/x"), ("HOME", "/h")]),
            PathBuf::from("/x/zut")
        );
        if !cfg!(target_os = "macos") {
            assert_eq!(
                resolve(&[("HOME", "/h")]),
                PathBuf::from("/h/.local/state/zut")
            );
        }
        assert_eq!(resolve(&[]), PathBuf::from(".zut"));
    }
}
