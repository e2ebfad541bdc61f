//! `zut mcp …`: the MCP server configuration commands.
//!
//! - `add [--global] NAME [-e KEY=VALUE]… -- COMMAND [ARG…]` writes an entry
//!   into the project's `.mcp.json` (or `$ZUT_HOME/mcp.json`), keeping the
//!   file's other keys and their order;
//! - `list [--json]` and `get NAME` read the files and start nothing;
//! - `remove [--global] NAME` deletes an entry;
//! - `doctor [NAME] [--json]` starts each server as a run would (trust
//!   included), runs the handshake and lists its tools, then stops it.
//!
//! Data goes to stdout, messages to stderr. Exit status: 0, 1 for a failure
//! (an unknown NAME, a server that does not start), 2 for a usage error.

use super::CliContext;
use crate::mcp::client::{log_path, Client, McpError};
use crate::mcp::config::{self, Sources};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::PathBuf;

const USAGE: &str = "usage: zut mcp add [--global] NAME [-e KEY=VALUE]... -- COMMAND [ARG...]
       zut mcp list [--json]
       zut mcp get NAME
       zut mcp remove [--global] NAME
       zut mcp doctor [NAME] [--json]
       zut [--ext PATH]... mcp serve [--tools A,B] [--yolo] [--no-mcp]";

/// The subcommands, for `--help` after one and for did-you-mean.
const SUBCOMMANDS: [&str; 7] = ["add", "list", "get", "remove", "rm", "doctor", "serve"];

/// Runs `zut mcp <args…>`; returns the exit status.
pub fn run(args: &[String], ctx: &CliContext, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let (sub, rest) = match args.split_first() {
        Some((s, r)) => (s.as_str(), r),
        None => ("help", &[][..]),
    };
    // `zut mcp add --help` asks for the help, not for a server named so;
    // what follows `--` is the server's own command line.
    let wants_help = rest
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "-h" || a == "--help");
    let sub = if wants_help && SUBCOMMANDS.contains(&sub) {
        "help"
    } else {
        sub
    };
    let result = match sub {
        "-h" | "--help" | "help" => {
            let _ = writeln!(out, "{USAGE}\n\nMCP servers come from .mcp.json in the project (trusted projects only),\n$ZUT_HOME/mcp.json and --mcp-config FILE. See man zut-mcp.");
            return 0;
        }
        "add" => add(rest, ctx, err),
        "list" => list(rest, ctx, out),
        "get" => get(rest, ctx, out),
        "remove" | "rm" => remove(rest, ctx, err),
        "doctor" => doctor(rest, ctx, out, err),
        "serve" => serve(rest, ctx),
        other => {
            let hint =
                crate::suggest::did_you_mean(&crate::suggest::suggestions(other, SUBCOMMANDS));
            let _ = writeln!(err, "zut mcp: unknown subcommand {other:?}{hint}\n{USAGE}");
            return 2;
        }
    };
    match result {
        Ok(code) => code,
        Err(Fail::Usage(m)) => {
            let _ = writeln!(err, "zut mcp {sub}: {m}\n{USAGE}");
            2
        }
        Err(Fail::Error(m)) => {
            let _ = writeln!(err, "zut mcp {sub}: {m}");
            1
        }
    }
}

enum Fail {
    Usage(String),
    Error(String),
}

type Outcome = Result<i32, Fail>;

fn serve(args: &[String], ctx: &CliContext) -> Outcome {
    let mut opts = crate::mcp::serve::ServeOptions {
        cwd: ctx.cwd.clone(),
        zut_home: ctx.zut_home.clone(),
        ext_paths: ctx.ext_paths.clone(),
        no_extensions: ctx.no_extensions,
        tools: None,
        yolo: false,
        no_mcp: false,
    };
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--yolo" => opts.yolo = true,
            "--no-mcp" => opts.no_mcp = true,
            "--tools" => {
                i += 1;
                let list = args
                    .get(i)
                    .ok_or_else(|| Fail::Usage("--tools needs a list: --tools read,grep".into()))?;
                opts.tools = Some(
                    list.split(',')
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(str::to_string)
                        .collect(),
                );
            }
            s => return Err(Fail::Usage(format!("unexpected argument {s:?}"))),
        }
        i += 1;
    }
    Ok(crate::mcp::serve::run(opts))
}

fn file_for(global: bool, ctx: &CliContext) -> PathBuf {
    if global {
        config::global_file(&ctx.zut_home)
    } else {
        config::project_file(&ctx.cwd)
    }
}

fn add(args: &[String], ctx: &CliContext, err: &mut dyn Write) -> Outcome {
    let mut global = false;
    let mut name: Option<&str> = None;
    let mut env = Map::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--global" | "-g" => global = true,
            "-e" | "--env" => {
                i += 1;
                let kv = args
                    .get(i)
                    .ok_or_else(|| Fail::Usage(format!("{a} needs KEY=VALUE")))?;
                let (k, v) = kv
                    .split_once('=')
                    .filter(|(k, _)| !k.is_empty())
                    .ok_or_else(|| Fail::Usage(format!("{a} {kv:?}: expected KEY=VALUE")))?;
                env.insert(k.to_string(), Value::from(v));
            }
            "--" => {
                i += 1;
                break;
            }
            s if s.starts_with('-') => return Err(Fail::Usage(format!("unknown option {s:?}"))),
            s if name.is_none() => name = Some(s),
            // Without `--` the first word after NAME starts the command.
            _ => break,
        }
        i += 1;
    }
    let name = name.ok_or_else(|| Fail::Usage("a server NAME is needed".into()))?;
    if !config::valid_name(name) {
        return Err(Fail::Usage(format!(
            "{name:?} is not a valid server name: letters, digits, '_' and '-', at most 64"
        )));
    }
    let Some((command, cargs)) = args[i.min(args.len())..].split_first() else {
        return Err(Fail::Usage(
            "the server's COMMAND is missing (after --)".into(),
        ));
    };
    let file = file_for(global, ctx);
    let mut doc = config::read_doc(&file).map_err(|e| Fail::Error(e.to_string()))?;
    let servers = doc
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(servers) = servers.as_object_mut() else {
        return Err(Fail::Error(format!(
            "{}: mcpServers is not an object",
            file.display()
        )));
    };
    if servers.contains_key(name) {
        return Err(Fail::Error(format!(
            "{} already has a server {name:?}; run zut mcp remove {name}{} first",
            file.display(),
            if global { " --global" } else { "" }
        )));
    }
    let mut entry = json!({"command": command, "args": cargs});
    if !env.is_empty() {
        entry["env"] = Value::Object(env);
    }
    servers.insert(name.to_string(), entry);
    config::write_doc(&file, &doc).map_err(|e| Fail::Error(e.to_string()))?;
    let _ = writeln!(err, "added MCP server {name} to {}", file.display());
    let trusted = crate::trust::trust_all() || crate::trust::is_trusted(&ctx.zut_home, &ctx.cwd);
    if !global && !trusted {
        let _ = writeln!(
            err,
            "this project is not trusted: its .mcp.json starts only after zut ext trust {}",
            ctx.cwd.display()
        );
    }
    Ok(0)
}

/// One configured entry as the files hold it (unexpanded, nothing started).
struct Listed {
    name: String,
    source: &'static str,
    file: PathBuf,
    entry: Value,
    /// Why a run would not start it (untrusted, disabled, skipped).
    note: Option<String>,
}

fn listed(ctx: &CliContext) -> Result<Vec<Listed>, Fail> {
    let mut all: Vec<Listed> = Vec::new();
    let trusted = crate::trust::trust_all() || crate::trust::is_trusted(&ctx.zut_home, &ctx.cwd);
    let sources = [
        ("project", config::project_file(&ctx.cwd)),
        ("global", config::global_file(&ctx.zut_home)),
    ];
    for (source, file) in sources {
        let doc = config::read_doc(&file).map_err(|e| Fail::Error(e.to_string()))?;
        let Some(servers) = doc.get("mcpServers").and_then(Value::as_object) else {
            continue;
        };
        for (name, entry) in servers {
            let shadowed = all.iter().any(|l| &l.name == name);
            let d = (std::time::Duration::ZERO, std::time::Duration::ZERO);
            let note = match config::parse_entry(name, entry, source, &file, &ctx.cwd, d) {
                Err(why) => Some(why),
                Ok(None) => Some("disabled (enabled: false)".to_string()),
                Ok(Some(_)) if shadowed => Some("shadowed by the project's entry".to_string()),
                Ok(Some(_)) if source == "project" && !trusted => Some(format!(
                    "not started: the project is not trusted (zut ext trust {})",
                    ctx.cwd.display()
                )),
                Ok(Some(_)) => None,
            };
            all.push(Listed {
                name: name.clone(),
                source,
                file: file.clone(),
                entry: entry.clone(),
                note,
            });
        }
    }
    Ok(all)
}

fn command_line(entry: &Value) -> String {
    let mut words = vec![entry
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()];
    for a in entry
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        words.push(
            a.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| a.to_string()),
        );
    }
    words
        .iter()
        .map(|w| {
            if w.is_empty() || w.contains(char::is_whitespace) {
                format!("{w:?}")
            } else {
                w.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn env_keys(entry: &Value) -> Vec<String> {
    entry
        .get("env")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

fn list(args: &[String], ctx: &CliContext, out: &mut dyn Write) -> Outcome {
    let json = match args {
        [] => false,
        [j] if j == "--json" => true,
        _ => return Err(Fail::Usage("list takes only --json".into())),
    };
    let all = listed(ctx)?;
    if json {
        let servers: Vec<Value> = all
            .iter()
            .map(|l| {
                json!({
                    "name": l.name,
                    "source": l.source,
                    "file": l.file.display().to_string(),
                    "command": l.entry.get("command").cloned().unwrap_or(Value::Null),
                    "args": l.entry.get("args").cloned().unwrap_or(json!([])),
                    "env": env_keys(&l.entry),
                    "starts": l.note.is_none(),
                    "note": l.note,
                })
            })
            .collect();
        let _ = writeln!(out, "{}", json!({"servers": servers}));
        return Ok(0);
    }
    if all.is_empty() {
        let _ = writeln!(
            out,
            "no MCP servers configured (zut mcp add NAME -- COMMAND adds one)"
        );
        return Ok(0);
    }
    for l in &all {
        let _ = write!(out, "{}  {}  {}", l.name, l.source, command_line(&l.entry));
        let _ = match &l.note {
            Some(n) => writeln!(out, "  ({n})"),
            None => writeln!(out),
        };
    }
    Ok(0)
}

fn one_name<'a>(args: &'a [String], what: &str) -> Result<(&'a str, bool), Fail> {
    let mut global = false;
    let mut name = None;
    for a in args {
        match a.as_str() {
            "--global" | "-g" => global = true,
            s if s.starts_with('-') => return Err(Fail::Usage(format!("unknown option {s:?}"))),
            s if name.is_none() => name = Some(s),
            s => return Err(Fail::Usage(format!("unexpected argument {s:?}"))),
        }
    }
    name.map(|n| (n, global))
        .ok_or_else(|| Fail::Usage(format!("{what} needs a server NAME")))
}

fn unknown(name: &str, ctx: &CliContext) -> Fail {
    Fail::Error(format!(
        "no MCP server named {name:?} in {} or {}; zut mcp list shows them",
        config::project_file(&ctx.cwd).display(),
        config::global_file(&ctx.zut_home).display()
    ))
}

fn get(args: &[String], ctx: &CliContext, out: &mut dyn Write) -> Outcome {
    let (name, _) = one_name(args, "get")?;
    let all = listed(ctx)?;
    let Some(l) = all.iter().find(|l| l.name == name) else {
        return Err(unknown(name, ctx));
    };
    let _ = writeln!(out, "{}", l.name);
    let _ = writeln!(out, "  source: {} ({})", l.source, l.file.display());
    let _ = writeln!(out, "  command: {}", command_line(&l.entry));
    let keys = env_keys(&l.entry);
    if !keys.is_empty() {
        let _ = writeln!(out, "  env: {}", keys.join(", "));
    }
    for key in [
        "cwd",
        "startup_timeout_ms",
        "tool_timeout_ms",
        "enabled",
        "deferred",
        "enabled_tools",
        "disabled_tools",
        "confirm",
    ] {
        if let Some(v) = l.entry.get(key) {
            let _ = writeln!(out, "  {key}: {v}");
        }
    }
    let _ = writeln!(out, "  log: {}", log_path(&ctx.zut_home, name).display());
    if let Some(n) = &l.note {
        let _ = writeln!(out, "  note: {n}");
    }
    Ok(0)
}

fn remove(args: &[String], ctx: &CliContext, err: &mut dyn Write) -> Outcome {
    let (name, global) = one_name(args, "remove")?;
    let files: Vec<PathBuf> = if global {
        vec![file_for(true, ctx)]
    } else {
        vec![file_for(false, ctx), file_for(true, ctx)]
    };
    for file in files {
        let mut doc = config::read_doc(&file).map_err(|e| Fail::Error(e.to_string()))?;
        let removed = doc
            .get_mut("mcpServers")
            .and_then(Value::as_object_mut)
            .and_then(|m| m.shift_remove(name))
            .is_some();
        if removed {
            config::write_doc(&file, &doc).map_err(|e| Fail::Error(e.to_string()))?;
            let _ = writeln!(err, "removed MCP server {name} from {}", file.display());
            return Ok(0);
        }
    }
    Err(unknown(name, ctx))
}

fn doctor(args: &[String], ctx: &CliContext, out: &mut dyn Write, err: &mut dyn Write) -> Outcome {
    let mut json = false;
    let mut only: Option<&str> = None;
    for a in args {
        match a.as_str() {
            "--json" => json = true,
            s if s.starts_with('-') => return Err(Fail::Usage(format!("unknown option {s:?}"))),
            s if only.is_none() => only = Some(s),
            s => return Err(Fail::Usage(format!("unexpected argument {s:?}"))),
        }
    }
    let loaded = config::load(&Sources {
        cwd: ctx.cwd.clone(),
        zut_home: ctx.zut_home.clone(),
        files: Vec::new(),
        none: false,
    });
    for (what, message) in &loaded.warnings {
        if only.is_none_or(|n| n == what) {
            let _ = writeln!(err, "zut: warning: {message}");
        }
    }
    let specs: Vec<_> = loaded
        .servers
        .into_iter()
        .filter(|s| only.is_none_or(|n| n == s.name))
        .collect();
    if let Some(n) = only.filter(|_| specs.is_empty()) {
        return Err(unknown(n, ctx));
    }
    let results: Vec<(String, Result<Client, McpError>)> = std::thread::scope(|s| {
        let handles: Vec<_> = specs
            .iter()
            .map(|spec| {
                s.spawn(move || {
                    (
                        spec.name.clone(),
                        Client::start(spec, &ctx.cwd, &ctx.zut_home, None),
                    )
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut failed = false;
    let mut docs = Vec::new();
    for (name, r) in &results {
        let log = log_path(&ctx.zut_home, name);
        match r {
            Ok(c) => {
                let info = c.info();
                let tools: Vec<String> = c.tools().iter().map(|t| t.name.clone()).collect();
                if json {
                    docs.push(
                        json!({"name": name, "ok": true, "protocol_version": info.protocol_version,
                        "server": {"name": info.name, "version": info.version},
                        "tools": tools, "log": log.display().to_string()}),
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "{name}: ok, protocol {}, {} tool(s), server {} {}\n  log: {}",
                        info.protocol_version,
                        tools.len(),
                        info.name,
                        info.version,
                        log.display()
                    );
                    for t in &tools {
                        let _ = writeln!(out, "  {t}");
                    }
                }
            }
            Err(e) => {
                failed = true;
                if json {
                    docs.push(json!({"name": name, "ok": false, "error": e.to_string(), "log": log.display().to_string()}));
                } else {
                    let _ = writeln!(out, "{name}: failed: {e}\n  log: {}", log.display());
                }
            }
        }
    }
    for (_, r) in results {
        if let Ok(c) = r {
            c.shutdown(std::time::Duration::from_millis(500));
        }
    }
    if json {
        let _ = writeln!(out, "{}", json!({"servers": docs}));
    } else if docs.is_empty() && specs.is_empty() {
        let _ = writeln!(out, "no MCP servers to check");
    }
    Ok(if failed { 1 } else { 0 })
}
