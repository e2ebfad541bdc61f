//! `zut hooks [--json]`: the Claude Code hooks zut would run in this
//! project, from the same four settings files a run reads, in the same
//! order, with each file's trust state and the handlers zut skips.
//!
//! Invariants:
//! - the listing (or the one JSON document of `--json`) is on stdout;
//!   every settings warning is one `zut: warning:` line on stderr, naming
//!   the file and the JSON path of the entry;
//! - an untrusted project file is read and listed, marked as not run, and
//!   nothing in it is executed;
//! - a command that appears again (same event, another group or file) is
//!   marked as a duplicate, because a run starts it once.
//!
//! Exit status: 0, or 2 for a usage error.

use super::CliContext;
use crate::hooks::settings::{inspect, SourceReport, EVENTS};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::io::Write;

const USAGE: &str = "usage: zut hooks [--json]";

/// Runs `zut hooks <args…>`; returns the exit status.
pub fn run(args: &[String], ctx: &CliContext, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut as_json = false;
    for a in args {
        match a.as_str() {
            "--json" => as_json = true,
            "-h" | "--help" | "help" => {
                let _ = writeln!(
                    out,
                    "{USAGE}\n\nLists the Claude Code hooks zut runs in this project: source file,\nevent, matcher and command, the project files' trust, and skipped handlers."
                );
                return 0;
            }
            other => {
                let _ = writeln!(err, "zut hooks: unexpected argument {other:?}\n{USAGE}");
                return 2;
            }
        }
    }
    let reports = inspect(&ctx.cwd, &ctx.zut_home);
    for r in &reports {
        for w in &r.set.warnings {
            let _ = writeln!(err, "zut: warning: {}", crate::sanitize::sanitize(w));
        }
    }
    let text = if as_json {
        document(&reports, ctx).to_string()
    } else {
        listing(&reports, ctx)
    };
    // A closed stdout (`zut hooks | head`) is not an error.
    let _ = writeln!(out, "{text}");
    0
}

/// Whether each handler of `reports` runs, and whether it is a duplicate,
/// in order: it does not run when untrusted, of an event zut never fires,
/// or a command already seen for the same event.
fn runs(reports: &[SourceReport]) -> Vec<Vec<(bool, bool)>> {
    let mut seen: HashSet<(String, String)> = HashSet::new();
    reports
        .iter()
        .map(|r| {
            r.set
                .handlers
                .iter()
                .map(|h| {
                    let duplicate = r.trusted && !seen.insert((h.event.clone(), h.command.clone()));
                    let fires = EVENTS.contains(&h.event.as_str());
                    (r.trusted && fires && !duplicate, duplicate)
                })
                .collect()
        })
        .collect()
}

fn trust_note(r: &SourceReport, ctx: &CliContext) -> String {
    match (r.exists, r.project, r.trusted) {
        (false, _, _) => "absent".into(),
        (true, false, _) => "user".into(),
        (true, true, true) => "project, trusted".into(),
        (true, true, false) => format!(
            "project, not trusted, not run; zut ext trust {} allows it",
            ctx.cwd.display()
        ),
    }
}

/// The text listing: one block per settings file that exists.
fn listing(reports: &[SourceReport], ctx: &CliContext) -> String {
    let runs = runs(reports);
    let mut lines = Vec::new();
    for (r, runs) in reports.iter().zip(&runs) {
        if !r.exists {
            continue;
        }
        lines.push(format!("{} ({})", r.path.display(), trust_note(r, ctx)));
        for (h, (_, duplicate)) in r.set.handlers.iter().zip(runs) {
            let matcher = if h.matcher_text.is_empty() {
                "*"
            } else {
                &h.matcher_text
            };
            let mut extra = format!("timeout {} s", h.timeout.as_secs_f64());
            if h.block_on_failure {
                extra.push_str(", onFailure block");
            }
            if !EVENTS.contains(&h.event.as_str()) {
                extra.push_str(", never fires in zut");
            }
            if *duplicate {
                extra.push_str(", duplicate: runs once");
            }
            lines.push(format!(
                "  {:<18} {:<16} {}  ({extra})",
                h.event,
                matcher,
                crate::sanitize::sanitize(&h.command)
            ));
        }
        for s in &r.set.skipped {
            lines.push(format!(
                "  {:<18} skipped: {} handler at {}",
                s.event, s.kind, s.path
            ));
        }
        if r.set.handlers.is_empty() && r.set.skipped.is_empty() {
            lines.push("  (no hooks)".into());
        }
    }
    if lines.is_empty() {
        return "no hooks: none of ~/.claude/settings.json, .claude/settings.json, .claude/settings.local.json, $ZUT_HOME/settings.json has any".into();
    }
    lines.join("\n")
}

/// The `--json` document: `hooks` (the entries), `sources` (every file,
/// with trust), `skipped` (handlers of other types), `warnings`.
fn document(reports: &[SourceReport], ctx: &CliContext) -> Value {
    let runs = runs(reports);
    let mut hooks = Vec::new();
    for (r, runs) in reports.iter().zip(&runs) {
        for (h, (run, duplicate)) in r.set.handlers.iter().zip(runs) {
            hooks.push(json!({
                "source": r.path.display().to_string(),
                "event": h.event,
                "matcher": h.matcher_text,
                "command": h.command,
                "timeout": h.timeout.as_secs_f64(),
                "onFailure": h.block_on_failure.then_some("block"),
                "runs": run,
                "duplicate": duplicate,
            }));
        }
    }
    let sources: Vec<Value> = reports
        .iter()
        .map(|r| {
            json!({
                "path": r.path.display().to_string(),
                "exists": r.exists,
                "project": r.project,
                "trusted": r.trusted,
            })
        })
        .collect();
    let skipped: Vec<Value> = reports
        .iter()
        .flat_map(|r| &r.set.skipped)
        .map(|s| {
            json!({
                "source": s.source.display().to_string(),
                "path": s.path,
                "event": s.event,
                "type": s.kind,
            })
        })
        .collect();
    let warnings: Vec<&String> = reports.iter().flat_map(|r| &r.set.warnings).collect();
    json!({
        "project": ctx.cwd.display().to_string(),
        "hooks": hooks,
        "sources": sources,
        "skipped": skipped,
        "warnings": warnings,
    })
}
