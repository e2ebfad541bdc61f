//! `zut skills [NAME]`: list every skill zut would offer in this project,
//! with where it comes from, or print one skill as the model would load it.
//!
//! It uses the same discovery as a run (user roots, then the skills of the
//! enabled extensions), without starting any extension. Skipped files and
//! refused extension paths are reported on stderr; the listing goes to
//! stdout. Exit status: 0, 1 for an unknown NAME, 2 for a usage error.

use super::CliContext;
use crate::host::discovery;
use crate::skills::{discover, listing, refusals, render};
use std::io::Write;

const USAGE: &str = "usage: zut skills [NAME]";

/// Runs `zut skills <args…>`; returns the exit status.
pub fn run(args: &[String], ctx: &CliContext, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut name: Option<&str> = None;
    for a in args {
        match a.as_str() {
            "-h" | "--help" | "help" if name.is_none() => {
                let _ = writeln!(
                    out,
                    "{USAGE}\n\nLists the skills zut finds for this project (name, description, source),\nor prints skill NAME as the model would load it."
                );
                return 0;
            }
            s if s.starts_with('-') || name.is_some() => {
                let _ = writeln!(err, "zut skills: unexpected argument {s:?}\n{USAGE}");
                return 2;
            }
            s => name = Some(s),
        }
    }
    let entries = discovery::discover(&discovery::Options {
        cwd: ctx.cwd.clone(),
        zut_home: ctx.zut_home.clone(),
        ext_paths: ctx.ext_paths.clone(),
        no_extensions: ctx.no_extensions,
    });
    let manifests = discovery::skill_bundles(&entries);
    for m in &manifests {
        for r in refusals(m) {
            let _ = writeln!(err, "zut: warning: extension {}: {r}", m.name);
        }
    }
    let home = crate::skills::home_dir();
    let set = discover(&ctx.cwd, &ctx.zut_home, home.as_deref(), &manifests);
    for w in &set.warnings {
        let _ = match &w.extension {
            Some(e) => writeln!(err, "zut: warning: extension {e}: {}", w.message),
            None => writeln!(err, "zut: warning: {}", w.message),
        };
    }
    let text = match name {
        None => listing(&set),
        Some(n) => match set.get(n) {
            Some(skill) => render(skill),
            None => {
                let _ = writeln!(err, "zut skills: {}", crate::skills::not_found(&set, n));
                return 1;
            }
        },
    };
    match writeln!(out, "{text}") {
        Ok(()) | Err(_) => 0,
    }
}
