//! `zut ext install --build=go|cargo`: build a local source tree and put
//! the executable the manifest declares into the staging directory.
//!
//! Invariants: builds run only when asked for, only for local sources, and
//! only for an extension-relative `exec` (a launcher or a theme-only
//! extension has nothing to build). The source tree is left as it was: Go
//! writes its output straight into the staging directory; cargo builds into
//! a scratch target directory (removed afterwards) and a `Cargo.lock` that
//! the build creates in the source is deleted again. A failed build's error
//! carries the last lines of its stderr.

use super::process;
use super::{Failure, Io, Outcome};
use crate::host::manifest::{self, Exec, Manifest};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A supported builder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builder {
    Go,
    Cargo,
}

impl Builder {
    /// Parses `--build`'s value (`go`, `cargo`; case and spaces ignored).
    pub(crate) fn parse(value: &str) -> Result<Self, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "go" => Ok(Builder::Go),
            "cargo" => Ok(Builder::Cargo),
            other => Err(format!(
                "unsupported builder \"{other}\" for --build; use --build=go or --build=cargo"
            )),
        }
    }

    /// The tool's name as typed (`go`, `cargo`).
    pub(crate) fn tool(self) -> &'static str {
        match self {
            Builder::Go => "go",
            Builder::Cargo => "cargo",
        }
    }
}

/// Checks, before anything is copied, that `m` can be built with `b` and
/// that the toolchain is there; returns the tool and the executable's path
/// relative to the extension directory.
pub(crate) fn preflight(b: Builder, m: &Manifest, src: &Path) -> Outcome<(PathBuf, PathBuf)> {
    let flag = format!("--build={}", b.tool());
    let rel = match &m.exec {
        None => {
            return Err(format!(
                "{flag}: {} is theme-only (no \"exec\"), there is nothing to build; install it without {flag}",
                m.name
            )
            .into())
        }
        Some(Exec::Launcher { configured }) => {
            return Err(format!(
                "{flag} needs an extension-relative \"exec\" such as \"./{}\", but {configured:?} is a launcher from PATH, so there is nothing to build; install it without {flag}",
                m.name
            )
            .into())
        }
        Some(Exec::Relative { configured, .. }) => crate::safe_fs::lexically_inside(Path::new(configured))
            .ok_or_else(|| format!("{flag}: exec {configured:?} points outside the extension"))?,
    };
    if b == Builder::Cargo && !src.join("Cargo.toml").is_file() {
        return Err(format!(
            "--build=cargo needs a Cargo.toml in {}; is this a Rust extension?",
            src.display()
        )
        .into());
    }
    let tool = manifest::find_on_path(b.tool(), None).map_err(|_| {
        format!(
            "{} is not installed or not on PATH; install it, or build the extension yourself and install without {flag}",
            b.tool()
        )
    })?;
    Ok((tool, rel))
}

/// What a build needs to know.
pub(crate) struct Job<'a> {
    pub builder: Builder,
    /// From [`preflight`].
    pub tool: PathBuf,
    /// The source directory (absolute).
    pub src: &'a Path,
    /// The extension's name, for the progress line.
    pub name: &'a str,
    /// Where the executable must end up: `<staging>/<exec>`.
    pub out: PathBuf,
    /// A directory for scratch files (cargo's target directory).
    pub scratch_root: &'a Path,
}

/// Runs the build; on success the executable is at `job.out`.
pub(crate) fn build(job: &Job<'_>, io: &mut Io<'_>) -> Outcome {
    let _ = writeln!(io.err, "building {} with {}…", job.name, job.builder.tool());
    if let Some(parent) = job.out.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    match job.builder {
        Builder::Go => go(job, io),
        Builder::Cargo => cargo(job, io),
    }
}

fn go(job: &Job<'_>, io: &mut Io<'_>) -> Outcome {
    let mut cmd = Command::new(&job.tool);
    cmd.args(["build", "-trimpath", "-o"])
        .arg(&job.out)
        .arg(".")
        .current_dir(job.src);
    run_build(&mut cmd, job, io)
}

fn cargo(job: &Job<'_>, io: &mut Io<'_>) -> Outcome {
    let target = tempfile::Builder::new()
        .prefix(".zut-extension-build-")
        .tempdir_in(job.scratch_root)
        .map_err(|e| format!("cannot create a build directory: {e}"))?;
    let lock = job.src.join("Cargo.lock");
    let had_lock = lock.exists();
    let mut cmd = Command::new(&job.tool);
    cmd.args(["build", "--release", "--color", "never", "--manifest-path"])
        .arg(job.src.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target.path())
        .current_dir(job.src);
    let result = run_build(&mut cmd, job, io);
    if !had_lock {
        let _ = fs::remove_file(&lock);
    }
    result?;
    let built = cargo_binary(job, &target.path().join("release"))?;
    fs::copy(&built, &job.out).map_err(|e| {
        format!(
            "cannot copy {} to {}: {e}",
            built.display(),
            job.out.display()
        )
    })?;
    super::copy::set_mode(&job.out, 0o755)
}

/// The built binary: named like the exec file, else like the package.
fn cargo_binary(job: &Job<'_>, release: &Path) -> Outcome<PathBuf> {
    let mut names: Vec<String> = job
        .out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .into_iter()
        .collect();
    let toml = fs::read_to_string(job.src.join("Cargo.toml")).unwrap_or_default();
    names.extend(package_name(&toml));
    names
        .iter()
        .map(|n| release.join(n))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "cargo built no binary named {}; name the [[bin]] or the package like the manifest's exec",
                names
                    .iter()
                    .map(|n| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
            .into()
        })
}

/// `name` from the `[package]` table of a Cargo.toml (simple form only).
pub(crate) fn package_name(toml: &str) -> Option<String> {
    let mut in_package = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if !in_package {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() == "name" {
            let v = value.split('#').next().unwrap_or("").trim();
            return v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .map(str::to_string);
        }
    }
    None
}

fn run_build(cmd: &mut Command, job: &Job<'_>, io: &mut Io<'_>) -> Outcome {
    let what = format!("{} build", job.builder.tool());
    let done = process::run(cmd, &what, &io.cancel)?;
    if done.status.success() {
        return Ok(());
    }
    let mut msg = format!(
        "{what} of {} failed ({}); nothing was installed",
        job.src.display(),
        done.status
    );
    if !done.tail.is_empty() {
        msg.push_str(&format!(
            "; last lines of its output:\n{}",
            done.tail.join("\n")
        ));
    }
    Err(Failure::Error(msg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names() {
        let toml = "[workspace]\nname = \"no\"\n[package]\nversion = \"1\"\nname = \"hello\" # c\n[dependencies]\nname = \"x\"\n";
        assert_eq!(package_name(toml), Some("hello".into()));
        assert_eq!(package_name("[lib]\nname = \"x\""), None);
    }

    #[test]
    fn builder_names() {
        assert_eq!(Builder::parse(" Go "), Ok(Builder::Go));
        assert_eq!(Builder::parse("cargo"), Ok(Builder::Cargo));
        assert!(Builder::parse("make").unwrap_err().contains("make"));
    }
}
