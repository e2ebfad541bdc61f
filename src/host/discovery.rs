//! The one discovery function. Startup, `/reload-ext` and `zut ext doctor`
//! / `list` all call [`discover`], so what doctor reports is what zut loads.
//!
//! Order is deterministic and is the load order everywhere (first
//! registration wins, interceptors run in this order): `--ext` paths in the
//! order given, then `<cwd>/.zut/extensions/*`, then
//! `$ZUT_HOME/extensions/*`, each directory listing sorted by name.
//! A name seen earlier shadows later ones: `--ext` beats project beats
//! global. Hidden directories (staging dirs of `zut ext install`) are skipped.
//!
//! Whether an installed extension is enabled: the choice `zut ext
//! enable|disable` recorded in `$ZUT_HOME/config.json` if there is one
//! ([`state_key`]), else its manifest's `enabled`. `--ext` paths follow
//! their manifests.
//!
//! Project extensions of a directory the user has not trusted
//! ([`crate::trust`]) are listed as [`Status::Untrusted`] and never started;
//! they shadow nothing, so a cloned repository cannot hide a global
//! extension by reusing its name.

use super::manifest::{self, Manifest, ManifestError};
use std::path::{Path, PathBuf};

/// Where an extension was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// `--ext PATH`.
    Flag,
    /// `<cwd>/.zut/extensions/`.
    Project,
    /// `$ZUT_HOME/extensions/`.
    Global,
}

impl Source {
    /// `flag`, `project` or `global` (the JSON event stream's spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Project => "project",
            Source::Global => "global",
        }
    }
}

/// What discovery decided about one directory.
#[derive(Debug, Clone)]
pub enum Status {
    /// Enabled and first of its name: to be started (or theme-only).
    Load(Manifest),
    /// Disabled: by `zut ext disable` (recorded in `config.json`), else by
    /// `"enabled": false` in the manifest. The manifest's `enabled` holds
    /// the outcome.
    Disabled(Manifest),
    /// An earlier directory has the same name.
    Shadowed {
        manifest: Option<Manifest>,
        by: PathBuf,
    },
    /// The manifest is missing or invalid.
    Invalid(ManifestError),
    /// A project extension of a directory the user has not trusted.
    Untrusted {
        /// The manifest, when it parsed (for `list` and `doctor`).
        manifest: Option<Manifest>,
        /// The project directory to trust (absolute, symlinks resolved).
        project: PathBuf,
    },
}

impl Status {
    /// Why an untrusted entry was not started, naming the command to run.
    pub fn untrusted_message(project: &Path) -> String {
        format!(
            "not loaded: project extensions in {0} start only once the directory is trusted; run \"zut ext trust {0}\" (or set ZUT_TRUST_ALL=1)",
            project.display()
        )
    }
}

/// One discovered extension directory.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dir: PathBuf,
    pub source: Source,
    pub status: Status,
}

impl Entry {
    /// The manifest name when known, else the directory name.
    pub fn name(&self) -> String {
        match &self.status {
            Status::Load(m) | Status::Disabled(m) => m.name.clone(),
            Status::Shadowed {
                manifest: Some(m), ..
            }
            | Status::Untrusted {
                manifest: Some(m), ..
            } => m.name.clone(),
            _ => dir_name(&self.dir),
        }
    }

    /// The manifest, when it parsed.
    pub fn manifest(&self) -> Option<&Manifest> {
        match &self.status {
            Status::Load(m) | Status::Disabled(m) => Some(m),
            Status::Shadowed { manifest, .. } | Status::Untrusted { manifest, .. } => {
                manifest.as_ref()
            }
            Status::Invalid(_) => None,
        }
    }
}

/// What to scan.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub cwd: PathBuf,
    pub zut_home: PathBuf,
    /// `--ext` paths, in the order given.
    pub ext_paths: Vec<PathBuf>,
    /// `--no-extensions`: only `ext_paths` are considered.
    pub no_extensions: bool,
}

/// What a project directory can hold that zut reads only from the
/// project directory itself: `(what, relative path)`.
const PROJECT_THINGS: [(&str, &str); 4] = [
    ("extensions", ".zut/extensions"),
    ("hooks", ".claude/settings.json"),
    ("hooks", ".claude/settings.local.json"),
    ("MCP servers", ".mcp.json"),
];

/// Which kinds [`ancestor_note`] looks for (the run's `--no-*` flags).
#[derive(Debug, Clone, Copy)]
pub struct ProjectKinds {
    pub extensions: bool,
    pub hooks: bool,
    pub mcp: bool,
}

/// Project extensions, hooks and `.mcp.json` are read from the project
/// directory only. When `cwd` is below the directory that has them (a
/// subdirectory of a repository), the note that says so and how to use
/// them: the nearest ancestor, up to the repository root (a directory
/// with `.git`), never `home` or above it.
pub fn ancestor_note(cwd: &Path, home: Option<&Path>, kinds: ProjectKinds) -> Option<String> {
    let wanted = |what: &str| match what {
        "extensions" => kinds.extensions,
        "hooks" => kinds.hooks,
        _ => kinds.mcp,
    };
    let has = |dir: &Path, rel: &str| {
        let p = dir.join(rel);
        if rel == ".zut/extensions" {
            std::fs::read_dir(&p).is_ok_and(|mut d| d.next().is_some())
        } else if rel.starts_with(".claude/") {
            std::fs::read(&p)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|v| v.get("hooks").cloned())
                .is_some_and(|h| h.as_object().is_some_and(|o| !o.is_empty()))
        } else {
            p.is_file()
        }
    };
    if cwd.join(".git").exists() {
        return None;
    }
    for dir in cwd.ancestors().skip(1) {
        if home.is_some_and(|h| h.starts_with(dir)) {
            return None;
        }
        let mut found: Vec<&str> = Vec::new();
        let mut what: Vec<&str> = Vec::new();
        for (kind, rel) in PROJECT_THINGS {
            if wanted(kind) && has(dir, rel) {
                found.push(rel);
                if !what.contains(&kind) {
                    what.push(kind);
                }
            }
        }
        if !found.is_empty() {
            let what = match what.as_slice() {
                [one] => one.to_string(),
                [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
                [] => unreachable!(),
            };
            return Some(format!(
                "{} has project {what} ({}), which zut reads only from the project \
                 directory, and this run's is {}; to use them, run zut --cwd {}",
                dir.display(),
                found.join(", "),
                cwd.display(),
                dir.display()
            ));
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// Scans everything `opts` names, in load order.
pub fn discover(opts: &Options) -> Vec<Entry> {
    // Only asked when there is something to trust.
    let project_root = crate::paths::project_extensions(&opts.cwd);
    let untrusted = !opts.no_extensions
        && project_root.is_dir()
        && !crate::trust::is_trusted(&opts.zut_home, &opts.cwd);
    let project = opts.cwd.canonicalize().unwrap_or_else(|_| opts.cwd.clone());
    let mut dirs: Vec<(PathBuf, Source)> = opts
        .ext_paths
        .iter()
        .map(|p| (absolute(&opts.cwd, p), Source::Flag))
        .collect();
    if !opts.no_extensions {
        for (root, source) in [
            (crate::paths::project_extensions(&opts.cwd), Source::Project),
            (
                crate::paths::global_extensions(&opts.zut_home),
                Source::Global,
            ),
        ] {
            dirs.extend(
                crate::walk::list_dirs(&root)
                    .into_iter()
                    .map(|d| (d, source)),
            );
        }
    }
    let choices = if dirs.iter().any(|(_, s)| *s != Source::Flag) {
        enabled_choices(&opts.zut_home)
    } else {
        crate::config::ExtensionsEnabled::default()
    };
    let mut seen: Vec<(String, PathBuf)> = Vec::new();
    let mut entries = Vec::with_capacity(dirs.len());
    for (dir, source) in dirs {
        let mut loaded = manifest::load(&dir);
        if let (Ok(m), Some(key)) = (&mut loaded, state_key(source, &dir)) {
            if let Some(enabled) = choices.get(&key) {
                m.enabled = enabled;
            }
        }
        if untrusted && source == Source::Project {
            entries.push(Entry {
                dir,
                source,
                status: Status::Untrusted {
                    manifest: loaded.ok(),
                    project: project.clone(),
                },
            });
            continue;
        }
        // Scan-level shadowing uses the directory name too, so that a broken
        // project copy still hides the global one of the same name.
        let keys: Vec<String> = match &loaded {
            Ok(m) if source == Source::Flag => vec![m.name.clone()],
            Ok(m) => vec![m.name.clone(), dir_name(&dir)],
            Err(_) if source == Source::Flag => vec![],
            Err(_) => vec![dir_name(&dir)],
        };
        let shadow = keys
            .iter()
            .find_map(|k| seen.iter().find(|(n, _)| n == k).map(|(_, d)| d.clone()));
        let status = match (loaded, shadow) {
            (Ok(m), Some(by)) => Status::Shadowed {
                manifest: Some(m),
                by,
            },
            (Err(_), Some(by)) => Status::Shadowed { manifest: None, by },
            (Ok(m), None) if !m.enabled => Status::Disabled(m),
            (Ok(m), None) => Status::Load(m),
            (Err(e), None) => Status::Invalid(e),
        };
        if !matches!(status, Status::Shadowed { .. }) {
            seen.extend(keys.into_iter().map(|k| (k, dir.clone())));
        }
        entries.push(Entry {
            dir,
            source,
            status,
        });
    }
    entries
}

/// The theme files of the extensions `entries` loads, ordered by
/// extension name (the terminal's theme menu order).
pub fn theme_paths(entries: &[Entry]) -> Vec<PathBuf> {
    let mut themed: Vec<&Manifest> = entries
        .iter()
        .filter_map(|e| match &e.status {
            Status::Load(m) => Some(m),
            _ => None,
        })
        .collect();
    themed.sort_by(|a, b| a.name.cmp(&b.name));
    themed.iter().flat_map(|m| m.themes.clone()).collect()
}

/// Where `zut ext enable|disable` records its choice for the installed
/// extension at `dir` (see [`crate::config::ExtensionKey`]); `None` for an
/// `--ext` path, which follows its manifest alone.
pub fn state_key(source: Source, dir: &Path) -> Option<crate::config::ExtensionKey> {
    let name = dir.file_name()?.to_string_lossy().into_owned();
    match source {
        Source::Flag => None,
        Source::Global => Some(crate::config::ExtensionKey::Global(name)),
        Source::Project => {
            // The project's extensions directory with links resolved; the
            // extension's own directory is not resolved (a link there is
            // still this project's entry).
            let parent = dir.parent()?;
            let root = parent
                .canonicalize()
                .unwrap_or_else(|_| parent.to_path_buf());
            Some(crate::config::ExtensionKey::Project(root.join(name)))
        }
    }
}

/// The recorded choices; an unreadable `config.json` is logged and leaves
/// every extension to its manifest (zut's startup reports the file itself).
fn enabled_choices(home: &Path) -> crate::config::ExtensionsEnabled {
    crate::config::extensions_enabled(home).unwrap_or_else(|e| {
        log::warn!("{e}; extensions follow their manifests' \"enabled\"");
        crate::config::ExtensionsEnabled::default()
    })
}

/// The skills of the extensions that contribute them: enabled and first
/// of their name, in load order (whether or not the process started:
/// skills are files).
pub fn skill_bundles<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
) -> Vec<crate::skills::Bundle<'a>> {
    entries
        .into_iter()
        .filter_map(|e| match &e.status {
            Status::Load(m) => Some(m.bundle()),
            _ => None,
        })
        .collect()
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// The hint for a command or tool nobody registered: manifests do not
/// declare what an extension provides, so every disabled extension among
/// `entries` is a candidate ("the disabled extension(s) a, b may provide
/// it: zut ext enable a"). `None` when none is disabled.
pub fn disabled_hint<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Option<String> {
    let mut names: Vec<String> = entries
        .into_iter()
        .filter(|e| matches!(e.status, Status::Disabled(_)))
        .map(Entry::name)
        .collect();
    names.dedup();
    let first = names.first()?.clone();
    Some(format!(
        "the disabled extension(s) {} may provide it: zut ext enable {first}",
        names.join(", ")
    ))
}

/// `p` made absolute against `cwd`, without resolving symlinks.
pub fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(root: &Path, dir: &str, json: &str) -> PathBuf {
        let d = root.join(dir);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("extension.json"), json).unwrap();
        d
    }

    #[test]
    fn ancestor_hooks_count_only_when_some_are_set_and_wanted() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        let cwd = repo.join("a/b");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".claude")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let all = ProjectKinds {
            extensions: true,
            hooks: true,
            mcp: true,
        };
        let settings = repo.join(".claude/settings.json");
        std::fs::write(&settings, r#"{"hooks": {}}"#).unwrap();
        assert_eq!(ancestor_note(&cwd, None, all), None);
        std::fs::write(&settings, r#"{"hooks": {"Stop": []}}"#).unwrap();
        let note = ancestor_note(&cwd, None, all).unwrap();
        assert!(
            note.starts_with(&format!(
                "{} has project hooks (.claude/settings.json)",
                repo.display()
            )),
            "{note}"
        );
        let no_hooks = ProjectKinds {
            hooks: false,
            ..all
        };
        assert_eq!(ancestor_note(&cwd, None, no_hooks), None);
        // $HOME and above are never looked at.
        assert_eq!(ancestor_note(&cwd, Some(&repo), all), None);
        assert_eq!(ancestor_note(&cwd, Some(&repo.join("a")), all), None);
    }

    #[test]
    fn order_and_shadowing() {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().join("proj");
        let home = t.path().join("home");
        let pe = cwd.join(".zut/extensions");
        let ge = home.join("extensions");
        ext(&pe, "b", r#"{"name":"b","exec":"./x"}"#);
        ext(&pe, "a", r#"{"name":"a","exec":"./x","enabled":false}"#);
        ext(&pe, "broken", r#"{"#);
        ext(&ge, "a", r#"{"name":"a","exec":"./x"}"#);
        ext(&ge, "broken", r#"{"name":"broken","exec":"./x"}"#);
        ext(&ge, "c", r#"{"name":"c","exec":"./x"}"#);
        ext(
            &ge,
            ".zut-extension-install-1",
            r#"{"name":"tmp","exec":"./x"}"#,
        );
        let flag = ext(t.path(), "dev-c", r#"{"name":"c","exec":"./x"}"#);
        crate::trust::add(&home, &cwd).unwrap();
        let opts = Options {
            cwd: cwd.clone(),
            zut_home: home,
            ext_paths: vec![flag.clone()],
            no_extensions: false,
        };
        let got: Vec<(String, Source, &'static str)> = discover(&opts)
            .iter()
            .map(|e| {
                let s = match e.status {
                    Status::Load(_) => "load",
                    Status::Disabled(_) => "disabled",
                    Status::Shadowed { .. } => "shadowed",
                    Status::Invalid(_) => "invalid",
                    Status::Untrusted { .. } => "untrusted",
                };
                (e.name(), e.source, s)
            })
            .collect();
        let want = vec![
            ("c".to_string(), Source::Flag, "load"),
            ("a".into(), Source::Project, "disabled"),
            ("b".into(), Source::Project, "load"),
            ("broken".into(), Source::Project, "invalid"),
            ("a".into(), Source::Global, "shadowed"),
            ("broken".into(), Source::Global, "shadowed"),
            ("c".into(), Source::Global, "shadowed"),
        ];
        assert_eq!(got, want);
        let only_flag = Options {
            no_extensions: true,
            ..opts
        };
        assert_eq!(discover(&only_flag).len(), 1);
    }

    #[test]
    fn untrusted_project_extensions_shadow_nothing() {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().join("proj");
        let home = t.path().join("home");
        ext(
            &cwd.join(".zut/extensions"),
            "a",
            r#"{"name":"a","exec":"./x"}"#,
        );
        ext(&cwd.join(".zut/extensions"), "b", r#"{"#);
        ext(
            &home.join("extensions"),
            "a",
            r#"{"name":"a","exec":"./x"}"#,
        );
        let opts = Options {
            cwd: cwd.clone(),
            zut_home: home.clone(),
            ..Options::default()
        };
        let got = discover(&opts);
        let real = cwd.canonicalize().unwrap();
        assert!(
            matches!(&got[0].status, Status::Untrusted { manifest: Some(m), project } if m.name == "a" && project == &real)
        );
        assert!(matches!(
            &got[1].status,
            Status::Untrusted { manifest: None, .. }
        ));
        assert!(
            matches!(got[2].status, Status::Load(_)),
            "the global one still loads"
        );
        assert!(
            Status::untrusted_message(&real).contains(&format!("zut ext trust {}", real.display()))
        );
        crate::trust::add(&home, &cwd).unwrap();
        let got = discover(&opts);
        assert!(matches!(got[0].status, Status::Load(_)));
        assert!(matches!(got[2].status, Status::Shadowed { .. }));
    }
}
