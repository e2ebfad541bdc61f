//! `zut ext install [--force] [--build=go|cargo] [--ref REF] <path|git-url>`,
//! and the pieces `zut ext update` ([`super::update`]) reuses.
//!
//! The extension is assembled in a hidden staging directory
//! (`.zut-extension-install-*`, skipped by discovery) inside
//! `$ZUT_HOME/extensions`, validated there, and only then renamed to
//! `$ZUT_HOME/extensions/<manifest name>` in one atomic step.
//!
//! Invariants:
//! - on any failure or interruption nothing is left behind: no
//!   destination, no staging or scratch directory (they are [`TempDir`]s,
//!   removed when dropped), and with `--force` the previous copy is back;
//! - nothing is built unless `--build` asks for it, and only from a local
//!   path;
//! - git runs with hooks off, submodules off, no prompts and only the
//!   https/ssh/git/file transports, with `--` before the URL;
//! - where it came from is recorded in `$ZUT_HOME/installs/<name>.json`
//!   ([`Record`]), never inside the extension;
//! - what is installed has a valid manifest whose name passes
//!   [`manifest::check_name`], and an in-tree executable that exists, is a
//!   regular file and is executable.

use super::builder::{self, Builder, Job};
use super::copy::{self, Plan};
use super::process;
use super::{CliContext, Failure, Io, Outcome};
use crate::host::discovery;
use crate::host::manifest::{self, Exec, Manifest, ManifestError, MANIFEST_FILE};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// Prefix of the staging directories (hidden, so discovery skips them).
pub const STAGING_PREFIX: &str = ".zut-extension-install-";
/// Prefix of the directory a replaced copy waits in during `--force`.
const ASIDE_PREFIX: &str = ".zut-extension-old-";

/// A parsed `install` invocation.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub source: String,
    pub force: bool,
    pub build: Option<Builder>,
    /// `--ref`: the branch or tag to clone (git URLs only).
    pub git_ref: Option<String>,
}

/// Where the extension comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A local directory (absolute).
    Local(PathBuf),
    /// A URL (or scp-like address) handed to `git clone`.
    Git(String),
}

impl Origin {
    fn label(&self) -> String {
        match self {
            Origin::Local(p) => p.display().to_string(),
            Origin::Git(u) => u.clone(),
        }
    }
}

/// Decides whether `source` is a git URL or a local path.
///
/// Git: `https://`, `ssh://`, `git://`, `file://`, `user@host:path`, or a
/// name ending in `.git` that is not itself an extension directory.
/// `http://` is refused rather than fetched unencrypted.
pub(crate) fn classify(source: &str, cwd: &Path) -> Result<Origin, String> {
    let lower = source.to_ascii_lowercase();
    if lower.starts_with("http://") {
        return Err(format!(
            "refusing to fetch {source} over unencrypted http; use an https:// URL"
        ));
    }
    let is_url = ["https://", "ssh://", "git://", "file://"]
        .iter()
        .any(|p| lower.starts_with(p));
    if is_url || is_scp_like(source) {
        return Ok(Origin::Git(source.to_string()));
    }
    let path = discovery::absolute(cwd, Path::new(source));
    if source.ends_with(".git") && !path.join(MANIFEST_FILE).is_file() {
        return Ok(Origin::Git(source.to_string()));
    }
    Ok(Origin::Local(path))
}

/// `git@host:path`: a user before the first `:` and no `/` before it.
fn is_scp_like(s: &str) -> bool {
    s.split_once(':')
        .is_some_and(|(before, _)| before.contains('@') && !before.contains('/'))
}

/// Runs an install; prints `installed <name> <version> to <dir>`.
pub(crate) fn install(req: &Request, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let origin = classify(&req.source, &ctx.cwd)?;
    if let (Some(r), Origin::Local(p)) = (&req.git_ref, &origin) {
        return Err(Failure::Usage(format!(
            "--ref {r} names a git branch or tag, but {} is a local directory",
            p.display()
        )));
    }
    let root = crate::paths::global_extensions(&ctx.zut_home);
    fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(&root)
        .map_err(|e| {
            format!(
                "cannot create a staging directory in {}: {e}",
                root.display()
            )
        })?;
    let mut warnings = Vec::new();
    let staged = stage(&origin, req, &root, staging.path(), io, &mut warnings);
    for w in &warnings {
        let _ = writeln!(io.err, "zut ext install: warning: {w}");
    }
    let m = staged?;
    if io.cancel.is_cancelled() {
        return Err(Failure::Interrupted);
    }
    let dest = root.join(&m.name);
    let record = match &origin {
        Origin::Git(url) => Record::Git {
            url: url.clone(),
            git_ref: req.git_ref.clone(),
            build: req.build.map(|b| b.tool().to_string()),
            commit: head_commit(staging.path(), io),
        },
        Origin::Local(path) => Record::Local {
            path: path.clone(),
            build: req.build.map(|b| b.tool().to_string()),
        },
    };
    if let Some(w) = commit(staging, &dest, req.force, &root, &m.name)? {
        let _ = writeln!(io.err, "zut ext install: warning: {w}");
    }
    if let Err(e) = write_record(&ctx.zut_home, &m.name, &record) {
        let _ = writeln!(
            io.err,
            "zut ext install: warning: {e}; zut ext update will not know where {} came from",
            m.name
        );
    }
    let version = if m.version.is_empty() {
        String::new()
    } else {
        format!(" {}", super::term::clean_cell(&m.version))
    };
    let _ = writeln!(
        io.err,
        "installed {}{version} to {}",
        m.name,
        dest.display()
    );
    Ok(())
}

/// The last path segment of a git URL without `.git`: `https://host/a/todo.git`
/// → `todo`. `None` when it is not a plausible directory name.
fn name_from_url(url: &str) -> Option<&str> {
    let last = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()?
        .trim_end_matches(".git");
    (!last.is_empty() && !last.starts_with('.') && !last.contains('\\')).then_some(last)
}

/// Fills `staging` from the origin and validates the result.
fn stage(
    origin: &Origin,
    req: &Request,
    root: &Path,
    staging: &Path,
    io: &mut Io<'_>,
    warnings: &mut Vec<String>,
) -> Outcome<Manifest> {
    match origin {
        Origin::Local(src) => stage_local(src, req, root, staging, io, warnings)?,
        Origin::Git(url) => {
            // Most repositories are named after their extension: refuse a
            // clash before a clone that may take minutes, not after it.
            if let Some(name) = name_from_url(url).filter(|_| !req.force) {
                let dest = root.join(name);
                if dest.symlink_metadata().is_ok() {
                    return Err(format!(
                        "{} (the name {url} ends in); nothing was cloned",
                        exists(&dest, name)
                    )
                    .into());
                }
            }
            stage_git(url, req.git_ref.as_deref(), staging, io)?;
            // The name is known only from the cloned manifest: refuse an
            // existing one now, before any checks on the clone.
            if let (false, Ok(m)) = (req.force, manifest::load(staging)) {
                let dest = root.join(&m.name);
                if dest.symlink_metadata().is_ok() {
                    return Err(format!(
                        "the manifest cloned from {url} names the extension \"{}\", and {}",
                        m.name,
                        exists(&dest, &m.name)
                    )
                    .into());
                }
            }
            if let Some(b) = req.build {
                build_clone(b, url, root, staging, io)?;
            }
        }
    }
    validate_staged(staging, origin, warnings)
}

/// `--build` on a clone: the clone is the source, built in place (cargo
/// gets a scratch target directory, as for a local path), so what lands in
/// the extension is the clone plus the built executable.
pub(crate) fn build_clone(
    b: Builder,
    url: &str,
    root: &Path,
    staging: &Path,
    io: &mut Io<'_>,
) -> Outcome {
    let m = manifest::load(staging).map_err(|e| relabel(e, url))?;
    let (tool, rel) = builder::preflight(b, &m, staging)?;
    let job = Job {
        builder: b,
        tool,
        src: staging,
        name: &m.name,
        out: staging.join(rel),
        scratch_root: root,
    };
    builder::build(&job, io)
}

fn stage_local(
    src: &Path,
    req: &Request,
    root: &Path,
    staging: &Path,
    io: &mut Io<'_>,
    warnings: &mut Vec<String>,
) -> Outcome {
    match fs::metadata(src) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(format!("not a directory: {}", src.display()).into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("not a directory: {} (it does not exist)", src.display()).into())
        }
        Err(e) => return Err(format!("not a directory: {} ({e})", src.display()).into()),
    }
    let m = manifest::load(src).map_err(|e| e.to_string())?;
    if !req.force && root.join(&m.name).symlink_metadata().is_ok() {
        return Err(exists(&root.join(&m.name), &m.name).into());
    }
    let build = match req.build {
        Some(b) => Some((b, builder::preflight(b, &m, src)?)),
        None => None,
    };
    // A cargo build gets a fresh target directory of its own; a stale
    // `target/` in the source is the build tool's output, not the
    // extension.
    let exclude = match req.build {
        Some(Builder::Cargo) => vec![PathBuf::from("target")],
        _ => Vec::new(),
    };
    let plan = Plan {
        exclude,
        required: required_paths(&m, src),
        skip: fs::canonicalize(staging).ok(),
        max_bytes: copy::max_bytes_from_env(),
    };
    copy::copy_tree(src, staging, &plan, &io.cancel, warnings)?;
    if let Some((builder, (tool, rel))) = build {
        let job = Job {
            builder,
            tool,
            src,
            name: &m.name,
            out: staging.join(rel),
            scratch_root: root,
        };
        builder::build(&job, io)?;
    }
    Ok(())
}

/// Paths (relative to `src`) always copied: the manifest, the executable
/// (and the in-tree file a link to it resolves to), the files `args` names,
/// declared skills directories and theme files.
fn required_paths(m: &Manifest, src: &Path) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from(MANIFEST_FILE)];
    let real_root = fs::canonicalize(src).ok();
    let mut named: Vec<&str> = m.args.iter().map(String::as_str).collect();
    if let Some(Exec::Relative { configured, .. }) = &m.exec {
        named.push(configured);
    }
    for n in named {
        let Some(rel) = crate::safe_fs::lexically_inside(Path::new(n)) else {
            continue;
        };
        if src.join(&rel).symlink_metadata().is_err() {
            continue;
        }
        if let (Some(root), Ok(real)) = (&real_root, fs::canonicalize(src.join(&rel))) {
            out.extend(real.strip_prefix(root).ok().map(Path::to_path_buf));
        }
        out.push(rel);
    }
    out.extend(
        m.skills
            .iter()
            .filter_map(|s| crate::safe_fs::lexically_inside(Path::new(s))),
    );
    out.extend(
        m.themes
            .iter()
            .filter_map(|t| t.strip_prefix(src).ok().map(Path::to_path_buf)),
    );
    out.retain(|p| !p.as_os_str().is_empty());
    out
}

/// `git` from PATH, or the error saying it is missing.
fn git() -> Outcome<Command> {
    let git = manifest::find_on_path("git", None).map_err(|_| {
        "git is not installed or not on PATH; install git, or clone the repository yourself and install the directory".to_string()
    })?;
    let mut cmd = Command::new(git);
    cmd.env("GIT_TERMINAL_PROMPT", "0");
    Ok(cmd)
}

/// The commit checked out in the clone at `dir`, if git can tell.
pub(crate) fn head_commit(dir: &Path, io: &mut Io<'_>) -> Option<String> {
    let mut cmd = git().ok()?;
    cmd.arg("-C")
        .arg(dir)
        .args(["rev-parse", "--verify", "HEAD"]);
    let (done, out) = process::run_capturing(&mut cmd, "git", &io.cancel).ok()?;
    let commit = out.trim();
    (done.status.success() && !commit.is_empty() && commit.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| commit.to_string())
}

/// Shallow-clones `url` (at branch or tag `git_ref`) into `staging` with
/// hooks, submodules and unsafe transports off.
pub(crate) fn stage_git(
    url: &str,
    git_ref: Option<&str>,
    staging: &Path,
    io: &mut Io<'_>,
) -> Outcome {
    let mut cmd = git()?;
    cmd.args(["clone", "--depth", "1", "--no-recurse-submodules"]);
    if let Some(r) = git_ref {
        cmd.arg("--branch").arg(r);
    }
    for config in [
        "core.hooksPath=/dev/null",
        "protocol.allow=never",
        "protocol.https.allow=always",
        "protocol.ssh.allow=always",
        "protocol.git.allow=always",
        "protocol.file.allow=always",
    ] {
        cmd.args(["-c", config]);
    }
    cmd.arg("--").arg(url).arg(staging);
    // git's progress chatter is kept back; it is shown only on failure.
    let done = process::run(&mut cmd, "git", &io.cancel)?;
    if !done.status.success() {
        let said = if done.tail.is_empty() {
            String::new()
        } else {
            format!(
                "; git said:\n{}",
                done.tail
                    .iter()
                    .map(|l| super::term::clean_cell(l))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        };
        return Err(format!(
            "git clone of {url} failed ({}); nothing was installed{said}",
            done.status
        )
        .into());
    }
    copy::check_symlinks(staging, url)?;
    copy::set_mode(staging, 0o755)
}

/// Validates the staged copy; launcher and skills problems are warnings.
pub(crate) fn validate_staged(
    staging: &Path,
    origin: &Origin,
    warnings: &mut Vec<String>,
) -> Outcome<Manifest> {
    let label = origin.label();
    let m = manifest::load(staging).map_err(|e| relabel(e, &label))?;
    match &m.exec {
        Some(Exec::Launcher { configured })
            if manifest::find_on_path(configured, None).is_err() =>
        {
            warnings.push(format!(
                "launcher {configured:?} is not on PATH; {} will not start until it is installed",
                m.name
            ));
        }
        Some(Exec::Relative { configured, path }) => check_executable(configured, path, origin)?,
        None | Some(Exec::Launcher { .. }) => {}
    }
    check_skills(&m, &label, warnings);
    Ok(m)
}

/// The declared skills as zut will load them from the staged copy: every
/// refused `skills` path and skipped `SKILL.md` becomes an install warning
/// (the skills directories themselves are copied as required paths).
fn check_skills(m: &Manifest, label: &str, warnings: &mut Vec<String>) {
    for refusal in crate::skills::refusals(&m.bundle()) {
        warnings.push(format!("{refusal} (in {label}); zut will not load it"));
    }
    for w in crate::skills::bundled(&m.bundle()).warnings {
        warnings.push(w.message);
    }
}

/// Shows a manifest error against the source rather than the staging dir.
fn relabel(e: ManifestError, label: &str) -> String {
    ManifestError {
        dir: PathBuf::from(label),
        ..e
    }
    .to_string()
}

fn check_executable(configured: &str, path: &Path, origin: &Origin) -> Outcome {
    let label = origin.label();
    let problem = match manifest::check_program(path) {
        Ok(()) => return Ok(()),
        Err(p) => p,
    };
    if let manifest::ExecProblem::Missing(_) = problem {
        let hint = match origin {
            Origin::Local(_) => {
                "build it before installing, or let install build it with --build=go or --build=cargo"
            }
            Origin::Git(_) => {
                "let install build the clone with --build=go or --build=cargo"
            }
        };
        return Err(
            format!("extension executable {configured:?} is missing from {label}; {hint}").into(),
        );
    }
    if let manifest::ExecProblem::Directory(_) | manifest::ExecProblem::NotAFile(_) = problem {
        return Err(format!(
            "extension executable {configured:?} in {label} is not a regular file; point \"exec\" at the program"
        )
        .into());
    }
    let hint = match origin {
        Origin::Local(src) => format!(
            "run chmod +x {} and install again",
            src.join(crate::safe_fs::lexically_inside(Path::new(configured)).unwrap_or_default())
                .display()
        ),
        Origin::Git(_) => format!(
            "mark it executable in the repository (git update-index --chmod=+x {}) and install again",
            super::term::clean_cell(configured)
        ),
    };
    Err(format!("extension executable {configured:?} in {label} is not executable; {hint}").into())
}

fn exists(dest: &Path, name: &str) -> String {
    format!(
        "{} already exists; install again with --force to replace it, or remove it first with zut ext remove {name}",
        dest.display()
    )
}

/// Moves the staged copy to `dest`. With `force` an existing copy is moved
/// aside first, restored if the move fails, deleted once it succeeded.
/// Returns a warning if the old copy could not be deleted.
pub(crate) fn commit(
    staging: TempDir,
    dest: &Path,
    force: bool,
    root: &Path,
    name: &str,
) -> Outcome<Option<String>> {
    if dest.symlink_metadata().is_err() {
        fs::rename(staging.path(), dest)
            .map_err(|e| format!("cannot move the staged copy to {}: {e}", dest.display()))?;
        let _ = staging.keep();
        return Ok(None);
    }
    if !force {
        return Err(exists(dest, name).into());
    }
    let aside = tempfile::Builder::new()
        .prefix(ASIDE_PREFIX)
        .tempdir_in(root)
        .map_err(|e| format!("cannot create a directory in {}: {e}", root.display()))?;
    let old = aside.path().join(name);
    fs::rename(dest, &old)
        .map_err(|e| format!("cannot move {} aside to replace it: {e}", dest.display()))?;
    if let Err(e) = fs::rename(staging.path(), dest) {
        return Err(match fs::rename(&old, dest) {
            Ok(()) => format!(
                "cannot move the staged copy to {}: {e}; the previous copy is unchanged",
                dest.display()
            ),
            Err(e2) => {
                let kept = aside.keep();
                format!(
                    "cannot move the staged copy to {}: {e}; restoring the previous copy failed too ({e2}): it is at {}",
                    dest.display(),
                    kept.join(name).display()
                )
            }
        }
        .into());
    }
    let _ = staging.keep();
    let path = aside.path().to_path_buf();
    Ok(aside.close().err().map(|e| {
        format!(
            "the previous copy could not be deleted completely ({e}); remove {} by hand",
            path.display()
        )
    }))
}

/// What install remembers about where an extension came from, in
/// `$ZUT_HOME/installs/<name>.json` (outside the extension, so a clone
/// stays exactly as git left it): what `zut ext update` needs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub(crate) enum Record {
    Git {
        url: String,
        #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
        git_ref: Option<String>,
        /// `go` or `cargo`, as `--build` was given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        build: Option<String>,
        /// The commit installed, for the record (update asks the clone).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
    },
    Local {
        path: PathBuf,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        build: Option<String>,
    },
}

/// `$ZUT_HOME/installs`.
pub(crate) fn records_dir(home: &Path) -> PathBuf {
    home.join("installs")
}

/// `$ZUT_HOME/installs/<name>.json`.
pub(crate) fn record_path(home: &Path, name: &str) -> PathBuf {
    records_dir(home).join(format!("{name}.json"))
}

/// Why an install record could not be read, written or deleted; each
/// names the record's file.
#[derive(Debug)]
pub(crate) enum RecordError {
    Encode {
        path: PathBuf,
        source: serde_json::Error,
    },
    Write(crate::config::ConfigError),
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not a record.
    Invalid {
        path: PathBuf,
        source: serde_json::Error,
    },
    Delete {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Encode { path, source } => {
                write!(f, "cannot encode {}: {source}", path.display())
            }
            RecordError::Write(e) => write!(f, "{e}"),
            RecordError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            RecordError::Invalid { path, source } => write!(
                f,
                "{} is not valid: {source} (reinstall the extension with zut ext install --force to rewrite it)",
                path.display()
            ),
            RecordError::Delete { path, source } => {
                write!(f, "cannot delete {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordError::Encode { source, .. } | RecordError::Invalid { source, .. } => {
                Some(source)
            }
            RecordError::Read { source, .. } | RecordError::Delete { source, .. } => Some(source),
            RecordError::Write(e) => Some(e),
        }
    }
}

/// Writes the install record of `name` atomically (mode 0600).
pub(crate) fn write_record(home: &Path, name: &str, record: &Record) -> Result<(), RecordError> {
    let path = record_path(home, name);
    let mut text = match serde_json::to_string_pretty(record) {
        Ok(t) => t,
        Err(source) => return Err(RecordError::Encode { path, source }),
    };
    text.push('\n');
    crate::config::write_atomic(&path, text.as_bytes(), 0o600).map_err(RecordError::Write)
}

/// The install record of `name`: `Ok(None)` when there is none (installed
/// by hand, or by a zut from before records); unreadable is an error.
pub(crate) fn read_record(home: &Path, name: &str) -> Result<Option<Record>, RecordError> {
    let path = record_path(home, name);
    let text = match crate::safe_fs::read_regular_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(RecordError::Read { path, source }),
    };
    match serde_json::from_str(&text) {
        Ok(r) => Ok(Some(r)),
        Err(source) => Err(RecordError::Invalid { path, source }),
    }
}

/// Forgets the install record of `name` (after `zut ext remove`).
pub(crate) fn remove_record(home: &Path, name: &str) -> Result<(), RecordError> {
    let path = record_path(home, name);
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(RecordError::Delete { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let home = tempfile::tempdir().unwrap();
        assert!(matches!(read_record(home.path(), "x"), Ok(None)));
        let git = Record::Git {
            url: "file:///r".into(),
            git_ref: Some("v1".into()),
            build: None,
            commit: Some("abc".into()),
        };
        write_record(home.path(), "x", &git).unwrap();
        assert_eq!(read_record(home.path(), "x").unwrap(), Some(git));
        let text = fs::read_to_string(record_path(home.path(), "x")).unwrap();
        assert!(
            text.contains("\"source\": \"git\"") && text.contains("\"ref\": \"v1\""),
            "{text}"
        );
        fs::write(record_path(home.path(), "x"), "{").unwrap();
        let e = read_record(home.path(), "x").unwrap_err();
        assert!(
            matches!(&e, RecordError::Invalid { path, .. } if path == &record_path(home.path(), "x")),
            "{e:?}"
        );
        assert!(e.to_string().contains("x.json"), "{e}");
        remove_record(home.path(), "x").unwrap();
        remove_record(home.path(), "x").unwrap();
        assert!(matches!(read_record(home.path(), "x"), Ok(None)));
        fs::create_dir_all(record_path(home.path(), "d").join("inside")).unwrap();
        let e = remove_record(home.path(), "d").unwrap_err();
        assert!(matches!(&e, RecordError::Delete { .. }), "{e:?}");
        assert!(matches!(
            read_record(home.path(), "d"),
            Err(RecordError::Read { .. })
        ));
    }

    #[test]
    fn classifies_sources() {
        let cwd = Path::new("/w");
        for git in [
            "https://example.com/x",
            "ssh://h/x",
            "git://h/x",
            "file:///tmp/x",
            "git@github.com:me/x",
            "me/x.git",
        ] {
            assert_eq!(classify(git, cwd), Ok(Origin::Git(git.into())), "{git}");
        }
        assert_eq!(
            classify("./ext", cwd),
            Ok(Origin::Local(PathBuf::from("/w/ext")))
        );
        assert_eq!(classify(".", cwd), Ok(Origin::Local(PathBuf::from("/w"))));
        assert_eq!(
            classify("a:b/c", cwd),
            Ok(Origin::Local(PathBuf::from("/w/a:b/c")))
        );
        assert!(classify("http://x/y", cwd).unwrap_err().contains("https"));
    }

    #[test]
    fn files_named_by_exec_and_args_are_required() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        fs::create_dir_all(src.join("target/release")).unwrap();
        fs::write(src.join("target/release/data.txt"), "d").unwrap();
        fs::write(
            src.join(MANIFEST_FILE),
            r#"{"name":"x","exec":"./run","args":["--flag","target/release/data.txt","missing.txt"]}"#,
        )
        .unwrap();
        fs::write(src.join("run"), "#!/bin/sh\n").unwrap();
        let m = manifest::load(src).unwrap();
        let required = required_paths(&m, src);
        assert!(required.contains(&PathBuf::from("run")), "{required:?}");
        assert!(
            required.contains(&PathBuf::from("target/release/data.txt")),
            "{required:?}"
        );
        assert!(!required.contains(&PathBuf::from("missing.txt")));
        assert!(!required.contains(&PathBuf::from("--flag")));

        // The excluded build directory is still copied for that file.
        let dst = tempfile::tempdir().unwrap();
        let plan = Plan {
            exclude: vec![PathBuf::from("target")],
            required,
            skip: None,
            max_bytes: u64::MAX,
        };
        let mut warnings = Vec::new();
        copy::copy_tree(
            src,
            dst.path(),
            &plan,
            &crate::cancel::CancelToken::never(),
            &mut warnings,
        )
        .unwrap();
        assert!(dst.path().join("target/release/data.txt").is_file());
    }
}
