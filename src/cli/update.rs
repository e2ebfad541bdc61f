//! `zut ext update [name…]`: bring extensions installed from a git URL up
//! to date with what that URL (and `--ref`) holds now.
//!
//! What install recorded ([`Record`], `$ZUT_HOME/installs/<name>.json`)
//! says where an extension came from. An update clones the recorded URL
//! again into a hidden staging directory; when the clone's commit is the
//! installed one, that is all ("already up to date"). Otherwise the
//! recorded `--build` runs in the clone, the copy is validated as install
//! validates it, its manifest must still name the same extension, and
//! install's swap moves it into place.
//!
//! Invariants:
//! - on any failure or interruption the installed copy stays exactly as it
//!   was and no staging directory is left (install's [`TempDir`]s and
//!   [`install::commit`]'s put-back);
//! - an error names the extension and the step that failed;
//! - only the extension's directory and its install record change: the
//!   enabled/disabled choice lives in `config.json` by name and carries
//!   over; global extensions need no trust (`crate::trust` is per project
//!   directory), so there is no approval to renew or revoke.

use super::install::{self, Origin, Record};
use super::{builder::Builder, CliContext, Failure, Io, Outcome};
use std::path::Path;

/// What one update did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Updated {
    /// The clone has the installed commit.
    UpToDate,
    /// A new copy was swapped in.
    Changed,
}

/// The record that lets `name` (installed at `dir`) be updated, or the
/// error that says why it cannot be.
pub(crate) fn git_record(home: &Path, name: &str, dir: &Path) -> Outcome<Record> {
    match install::read_record(home, name)? {
        Some(r @ Record::Git { .. }) => Ok(r),
        Some(Record::Local { path, build }) => {
            let build = build.map(|b| format!(" --build={b}")).unwrap_or_default();
            Err(format!(
                "{name} was installed from the local directory {}, which zut does not track; reinstall it with zut ext install --force{build} {}",
                path.display(),
                path.display()
            )
            .into())
        }
        None => {
            let how = if dir.join(".git").exists() {
                "it is a git clone, but zut has no record of its URL (it was installed by hand or by an older zut); install it once more with zut ext install --force <git-url>, after which zut ext update works"
            } else {
                "zut has no record of where it came from (it was installed by hand or by an older zut); reinstall it with zut ext install --force <path|git-url>"
            };
            Err(format!("{name} cannot be updated: {how}").into())
        }
    }
}

/// Updates the global extension `name` at `dir` from `record`.
pub(crate) fn update(
    name: &str,
    dir: &Path,
    record: &Record,
    ctx: &CliContext,
    io: &mut Io<'_>,
) -> Outcome<Updated> {
    let Record::Git {
        url,
        git_ref,
        build,
        ..
    } = record
    else {
        return Err(format!("{name} was not installed from git").into());
    };
    let step = |what: &'static str| {
        move |f: Failure| match f {
            Failure::Error(m) => Failure::Error(format!(
                "{name}: {what} failed, the installed copy is unchanged: {m}"
            )),
            other => other,
        }
    };
    let build = build
        .as_deref()
        .map(Builder::parse)
        .transpose()
        .map_err(|e| {
            Failure::Error(format!(
                "{name}: its install record has an unknown build: {e}"
            ))
        })?;
    let root = crate::paths::global_extensions(&ctx.zut_home);
    let old_commit = install::head_commit(dir, io);
    let old_version = crate::host::manifest::load(dir)
        .map(|m| m.version)
        .unwrap_or_default();
    let at = git_ref
        .as_deref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let _ = writeln!(io.err, "updating {name} from {url}{at}…");
    let staging = tempfile::Builder::new()
        .prefix(install::STAGING_PREFIX)
        .tempdir_in(&root)
        .map_err(|e| {
            format!(
                "{name}: cannot create a staging directory in {}: {e}",
                root.display()
            )
        })?;
    install::stage_git(url, git_ref.as_deref(), staging.path(), io).map_err(step("the clone"))?;
    let new_commit = install::head_commit(staging.path(), io);
    if new_commit.is_some() && new_commit == old_commit {
        let _ = writeln!(
            io.err,
            "{name} is already up to date ({})",
            short(new_commit.as_deref())
        );
        return Ok(Updated::UpToDate);
    }
    if let Some(b) = build {
        install::build_clone(b, url, &root, staging.path(), io).map_err(step("the build"))?;
    }
    let mut warnings = Vec::new();
    let checked =
        install::validate_staged(staging.path(), &Origin::Git(url.clone()), &mut warnings);
    for w in &warnings {
        let _ = writeln!(io.err, "zut ext update: warning: {w}");
    }
    let m = checked.map_err(step("the check of the new version"))?;
    if m.name != name {
        return Err(format!(
            "{name}: the new version's manifest names the extension \"{}\" instead; the installed copy is unchanged (install it under its new name with zut ext install {url})",
            m.name
        )
        .into());
    }
    if io.cancel.is_cancelled() {
        return Err(Failure::Interrupted);
    }
    if let Some(w) = install::commit(staging, dir, true, &root, name).map_err(step("the swap"))? {
        let _ = writeln!(io.err, "zut ext update: warning: {w}");
    }
    let updated = Record::Git {
        url: url.clone(),
        git_ref: git_ref.clone(),
        build: build.map(|b| b.tool().to_string()),
        commit: new_commit.clone(),
    };
    if let Err(e) = install::write_record(&ctx.zut_home, name, &updated) {
        let _ = writeln!(io.err, "zut ext update: warning: {e}");
    }
    let version = if old_version != m.version {
        format!(
            ", version {} -> {}",
            shown_version(&old_version),
            shown_version(&m.version)
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        io.err,
        "updated {name}: {} -> {}{version}",
        short(old_commit.as_deref()),
        short(new_commit.as_deref())
    );
    Ok(Updated::Changed)
}

/// A commit as people read it: its first 12 hex digits.
fn short(commit: Option<&str>) -> String {
    match commit {
        Some(c) => c.chars().take(12).collect(),
        None => "an unknown commit".into(),
    }
}

fn shown_version(v: &str) -> String {
    if v.is_empty() {
        "(none)".into()
    } else {
        super::term::clean_cell(v)
    }
}
