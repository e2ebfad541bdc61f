//! `zut ext doctor`: the same discovery and startup as zut itself, reported
//! instead of failed soft.
//!
//! Every extension is started exactly as a run would start it (so load
//! order, conflicts and deadlines are the real ones), then each discovered
//! directory gets a report: its status, its manifest facts, the full load
//! error (line breaks kept), ready or auto-ready, what it registered, the
//! skills it bundles, what was refused and why, warnings, and its log. Healthy means no errors, no
//! warnings and no conflicts; disabled and shadowed copies are choices, not
//! problems.

use super::suggest;
use super::{CliContext, Failure, Io, Outcome};
use crate::events::Collect;
use crate::host::deadlines::Deadlines;
use crate::host::discovery::{self, Status};
use crate::host::Phase;
use crate::host::{Host, HostConfig, Loaded, Outcome as LoadOutcome};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// One discovered directory, as doctor sees it.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub name: String,
    /// `ok`, `warning`, `error`, `disabled`, `shadowed`, `theme-only`.
    pub status: &'static str,
    pub source: &'static str,
    pub directory: String,
    pub version: String,
    pub executable: String,
    pub language: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// `ready`, `auto-ready`, or absent when not running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<&'static str>,
    /// Command names without the leading `/` (as in `ext_loaded`).
    pub commands: Vec<String>,
    pub tools: Vec<String>,
    /// Bundled skills; `NAME (shadowed by SOURCE)` when another wins.
    pub skills: Vec<String>,
    pub conflicts: Vec<String>,
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadowed_by: Option<String>,
}

impl Report {
    fn healthy(&self) -> bool {
        !matches!(self.status, "error" | "warning")
    }
}

/// Runs doctor for `names` (all when empty).
pub(crate) fn run(names: &[String], json: bool, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let entries = discovery::discover(&discovery::Options {
        cwd: ctx.cwd.clone(),
        zut_home: ctx.zut_home.clone(),
        ext_paths: ctx.ext_paths.clone(),
        no_extensions: ctx.no_extensions,
    });
    let mcp = crate::mcp::config::load(&crate::mcp::config::Sources {
        cwd: ctx.cwd.clone(),
        zut_home: ctx.zut_home.clone(),
        files: Vec::new(),
        none: false,
    });
    for (_, message) in &mcp.warnings {
        let _ = writeln!(io.err, "zut: warning: {message}");
    }
    let mcp_names: Vec<String> = mcp.servers.iter().map(|s| s.name.clone()).collect();
    if entries.is_empty() && mcp_names.is_empty() {
        let _ = writeln!(
            io.err,
            "no extensions installed\nhint: install one with \"zut ext install <path|git-url>\""
        );
        return Ok(());
    }
    for n in names {
        if !entries
            .iter()
            .any(|e| &e.name() == n || e.dir.file_name().is_some_and(|d| d == n.as_str()))
            && !mcp_names.iter().any(|m| is_server(n, m))
        {
            let known: Vec<String> = entries.iter().map(|e| e.name()).collect();
            return Err(Failure::Error(format!(
                "no extension named {n:?}{}",
                suggest::did_you_mean(&suggest::suggestions(n, known.iter().map(String::as_str)))
            )));
        }
    }
    let mut deadlines = Deadlines::from_env();
    deadlines.shutdown_grace = deadlines.shutdown_grace.min(Duration::from_millis(500));
    let saved = crate::config::load(&ctx.zut_home).unwrap_or_default();
    let config = HostConfig {
        zut_home: ctx.zut_home.clone(),
        cwd: ctx.cwd.clone(),
        provider: saved.provider.unwrap_or_default(),
        model: saved.model.unwrap_or_default(),
        deadlines,
        interactive: false,
        search_path: None,
        skills: true,
        session: None,
    };
    let _ = writeln!(io.err, "starting extensions…");
    // MCP servers start in the background while the extensions load.
    let hub = crate::mcp::hub::Hub::start(
        crate::mcp::config::Loaded {
            servers: mcp.servers,
            warnings: Vec::new(),
        },
        &ctx.cwd,
        &ctx.zut_home,
        Arc::new(crate::events::Discard),
    );
    let host = Host::start(config, Arc::new(Collect::default()), entries, &io.cancel);
    let skills = crate::skills::discover(
        &ctx.cwd,
        &ctx.zut_home,
        crate::skills::home_dir().as_deref(),
        &crate::host::discovery::skill_bundles(host.loaded().iter().map(|l| &l.entry)),
    );
    hub.wait_ready(&io.cancel);
    let servers = hub.status().into_iter().map(server_report);
    let reports: Vec<Report> = host
        .loaded()
        .iter()
        .map(|l| {
            let mut r = report(&host, l);
            add_skills(&mut r, l, &skills);
            r
        })
        .chain(servers)
        .filter(|r| {
            names.is_empty()
                || names.iter().any(|n| {
                    n == &r.name
                        || (!r.directory.is_empty() && r.directory.ends_with(&format!("/{n}")))
                        || r.name.strip_prefix("mcp:").is_some_and(|m| is_server(n, m))
                })
        })
        .collect();
    host.shutdown();
    hub.shutdown();
    if io.cancel.is_cancelled() {
        return Err(Failure::Interrupted);
    }
    let text = if json {
        render_json(&reports)
    } else {
        render_text(&reports)
    };
    io.out
        .write_all(text.as_bytes())
        .map_err(|_| Failure::StdoutClosed)?;
    if reports.iter().all(Report::healthy) {
        Ok(())
    } else {
        Err(Failure::Error(format!(
            "{} of {} extensions need attention",
            reports.iter().filter(|r| !r.healthy()).count(),
            reports.len()
        )))
    }
}

/// Whether the doctor argument `arg` names the MCP server `name`
/// (`NAME` or `mcp:NAME`).
fn is_server(arg: &str, name: &str) -> bool {
    arg == name || arg.strip_prefix("mcp:") == Some(name)
}

/// An MCP server's report: `mcp:NAME`, source `mcp`, its command, tools,
/// log and failure.
fn server_report(s: crate::mcp::hub::ServerStatus) -> Report {
    Report {
        name: crate::mcp::hub::participant(&s.name),
        status: match s.state {
            "ready" => "ok",
            _ => "error",
        },
        source: "mcp",
        directory: String::new(),
        version: s.version,
        executable: s.command,
        language: match s.protocol_version.as_str() {
            "" => "MCP".to_string(),
            v => format!("MCP {v}"),
        },
        log: Some(s.log.display().to_string()),
        ready: (s.state == "ready").then_some("ready"),
        commands: Vec::new(),
        tools: s.tools,
        skills: Vec::new(),
        conflicts: Vec::new(),
        warnings: Vec::new(),
        error: match s.state {
            "ready" => None,
            "starting" => Some("still starting after its startup timeout".to_string()),
            _ => Some(s.message),
        },
        shadowed_by: None,
    }
}

fn report(host: &Host, l: &Loaded) -> Report {
    let m = l.entry.manifest();
    let mut r = Report {
        name: l.entry.name(),
        status: "ok",
        source: l.entry.source.as_str(),
        directory: l.entry.dir.display().to_string(),
        version: m.map(|m| m.version.clone()).unwrap_or_default(),
        executable: m
            .and_then(|m| m.exec.as_ref())
            .map(|e| e.configured().to_string())
            .unwrap_or_default(),
        language: m.map(|m| m.language.clone()).unwrap_or_default(),
        log: None,
        ready: None,
        commands: Vec::new(),
        tools: Vec::new(),
        skills: Vec::new(),
        conflicts: Vec::new(),
        warnings: Vec::new(),
        error: None,
        shadowed_by: None,
    };
    match (&l.entry.status, &l.outcome) {
        (Status::Disabled(_), _) => r.status = "disabled",
        (Status::Untrusted { project, .. }, _) => {
            r.status = "untrusted";
            r.warnings.push(Status::untrusted_message(project));
        }
        (Status::Shadowed { by, .. }, _) => {
            r.status = "shadowed";
            r.shadowed_by = Some(by.display().to_string());
        }
        (_, LoadOutcome::ThemeOnly) => r.status = "theme-only",
        (_, LoadOutcome::Failed(message)) => {
            r.status = "error";
            r.error = Some(without_repeated_context(message));
            if let Some(m) = m {
                r.log = Some(
                    crate::paths::ext_log(&host_home(host), &m.name)
                        .display()
                        .to_string(),
                );
            }
        }
        (_, LoadOutcome::Started(ext)) => {
            r.log = Some(ext.log.display().to_string());
            r.warnings = ext.warnings.clone();
            r.conflicts = ext.conflicts.clone();
            r.commands = ext.commands.clone();
            r.tools = ext
                .tool_kinds
                .iter()
                .map(
                    |(name, deferred, interactive)| match (deferred, interactive) {
                        (true, _) => format!("{name} (deferred)"),
                        (_, true) => format!("{name} (interactive)"),
                        _ => name.clone(),
                    },
                )
                .collect();
            match ext.phase.clone() {
                Phase::Ready { auto } => r.ready = Some(if auto { "auto-ready" } else { "ready" }),
                Phase::Disconnected(reason) => {
                    r.status = "error";
                    r.error = Some(reason);
                }
                _ => {}
            }
            if r.status == "ok" && !(r.warnings.is_empty() && r.conflicts.is_empty()) {
                r.status = "warning";
            }
        }
        (_, LoadOutcome::Skipped) => {}
    }
    r
}

/// Lists the extension's bundled skills and adds its skill problems: the
/// refused `skills` paths (already among a started extension's warnings)
/// and skipped `SKILL.md` files.
fn add_skills(r: &mut Report, l: &Loaded, all: &crate::skills::SkillSet) {
    let Status::Load(m) = &l.entry.status else {
        return;
    };
    let own = crate::skills::bundled(&m.bundle());
    r.skills = own
        .skills
        .iter()
        .map(|s| match all.get(&s.name) {
            Some(w) if w.extension.as_deref() != Some(m.name.as_str()) => {
                format!("{} (shadowed by {})", s.name, w.source)
            }
            _ => s.name.clone(),
        })
        .collect();
    let mut problems: Vec<String> = own.warnings.into_iter().map(|w| w.message).collect();
    if !matches!(l.outcome, LoadOutcome::Started(_)) {
        problems.splice(0..0, crate::skills::refusals(&m.bundle()));
    }
    if problems.is_empty() {
        return;
    }
    r.warnings.extend(problems);
    if matches!(r.status, "ok" | "theme-only") {
        r.status = "warning";
    }
}

fn host_home(host: &Host) -> std::path::PathBuf {
    host.config().zut_home.clone()
}

/// The human report; multi-line messages keep their line breaks, indented.
pub fn render_text(reports: &[Report]) -> String {
    let mut s = String::from("zut extension doctor\n");
    for r in reports {
        s.push_str(&format!("\n{} [{}] {}\n", r.name, r.source, r.status));
        let mut field = |k: &str, v: &str| {
            if !v.is_empty() {
                s.push_str(&format!("  {k}: {}\n", indent(v)));
            }
        };
        field("directory", &r.directory);
        field("version", &r.version);
        field("executable", &r.executable);
        field("language", &r.language);
        field("log", r.log.as_deref().unwrap_or(""));
        field("ready", r.ready.unwrap_or(""));
        field("shadowed by", r.shadowed_by.as_deref().unwrap_or(""));
        field("error", r.error.as_deref().unwrap_or(""));
        if r.status == "disabled" {
            field(
                "note",
                &format!(
                    "disabled (by zut ext disable, or \"enabled\": false in its extension.json); enable it with: zut ext enable {}",
                    r.name
                ),
            );
        }
        if !r.commands.is_empty() {
            let slashed: Vec<String> = r.commands.iter().map(|c| format!("/{c}")).collect();
            field("commands", &slashed.join(" "));
        }
        if !r.tools.is_empty() {
            field("tools", &r.tools.join(" "));
        }
        if !r.skills.is_empty() {
            field("skills", &r.skills.join(", "));
        }
        for c in &r.conflicts {
            field("conflict", c);
        }
        for w in &r.warnings {
            field("warning", w);
        }
    }
    let count = |st: &str| reports.iter().filter(|r| r.status == st).count();
    // MCP servers are counted apart: "2 extensions" when none is installed
    // would contradict `zut ext list`.
    use crate::words::plural;
    let servers = reports.iter().filter(|r| r.source == "mcp").count();
    let exts = plural(reports.len() - servers, "extension");
    let who = match servers {
        0 => exts,
        n => format!("{exts} and {}", plural(n, "MCP server")),
    };
    s.push_str(&format!(
        "\n{who}: {} ok, {} with warnings, {} failed, {} disabled, {} shadowed, {} theme-only\n",
        count("ok"),
        count("warning"),
        count("error"),
        count("disabled"),
        count("shadowed"),
        count("theme-only")
    ));
    s
}

fn indent(v: &str) -> String {
    v.trim_end().replace('\n', "\n    ")
}

/// `{"healthy": bool, "extensions": [...]}`.
pub fn render_json(reports: &[Report]) -> String {
    let doc = serde_json::json!({
        "healthy": reports.iter().all(Report::healthy),
        "extensions": reports,
    });
    format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    )
}

/// A load failure as the host reports it carries the extension's context
/// block (name, directory, executable, log) for readers that see nothing
/// else; the doctor report has those fields already, so they go.
fn without_repeated_context(message: &str) -> String {
    let mut lines = message.lines();
    let first = lines.next().unwrap_or_default().to_string();
    let rest = lines.filter(|l| {
        let t = l.trim_start();
        !(t.starts_with("extension ") && !t.contains(':')
            || t.starts_with("directory: ")
            || t.starts_with("executable: ")
            || t.starts_with("log: ")
            || t.starts_with("language: "))
    });
    std::iter::once(first)
        .chain(rest.map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n")
}
