//! `zut sessions [list]`, `zut sessions show ID`, `zut sessions rm ID`:
//! the sessions of the project directory (`--cwd`, default the current one).
//!
//! Data (the table, a transcript) goes to stdout; warnings and errors go to
//! stderr. Exit codes: 0 ok, 1 failure (unknown id, unreadable file), 2
//! usage error. Text taken from session files is printed with control
//! characters replaced, so a transcript cannot drive the terminal.

use super::CliContext;
use crate::provider::{Block, Message, Role};
use crate::session::{clock, one_line, SessionError, Store, Summary};
use argh::FromArgs;
use std::io::Write;
use zut_ext::wire::ContentBlock;

#[derive(FromArgs, Debug)]
/// List, show or remove the sessions of this project directory.
#[argh(
    help_triggers("-h", "--help"),
    example = "zut sessions",
    example = "zut sessions show 20240501-120304-ab12",
    note = "Sessions live in $ZUT_HOME/sessions/<project key>/<id>.jsonl; resume one with zut --session ID or the latest with zut --continue."
)]
struct Args {
    #[argh(subcommand)]
    sub: Option<Sub>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Sub {
    List(ListArgs),
    Show(ShowArgs),
    Rm(RmArgs),
}

#[derive(FromArgs, Debug)]
/// List this project's sessions, most recently written first (the default).
#[argh(subcommand, name = "list")]
struct ListArgs {}

#[derive(FromArgs, Debug)]
/// Print one session as readable text.
#[argh(subcommand, name = "show")]
struct ShowArgs {
    /// the session id, or a unique part of it (the footer's short id)
    #[argh(positional)]
    id: String,
}

#[derive(FromArgs, Debug)]
/// Remove one session's file (branches forked from it stay).
#[argh(subcommand, name = "rm")]
struct RmArgs {
    /// the session id, or a unique part of it (the footer's short id)
    #[argh(positional)]
    id: String,
}

/// Runs `zut sessions <args…>` on the real stdout/stderr; returns the exit code.
pub fn run(args: &[String], ctx: &CliContext) -> i32 {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let code = run_io(args, ctx, &mut out, &mut std::io::stderr());
    let _ = out.flush();
    code
}

/// Runs `zut sessions <args…>` writing to `out` and `err`.
pub fn run_io(args: &[String], ctx: &CliContext, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let strs: Vec<&str> = args.iter().map(String::as_str).collect();
    let parsed = match Args::from_args(&["zut sessions"], &strs) {
        Ok(a) => a,
        Err(early) => {
            return match early.status {
                Ok(()) => {
                    let _ = writeln!(out, "{}", early.output);
                    0
                }
                Err(()) => {
                    let _ = writeln!(err, "{}", early.output.trim_end());
                    let _ = writeln!(err, "Run zut sessions --help for usage.");
                    2
                }
            };
        }
    };
    let store = Store::new(&ctx.zut_home, &ctx.cwd);
    let result = match parsed.sub {
        None | Some(Sub::List(_)) => list(&store, out, err),
        Some(Sub::Show(a)) => show(&store, &a.id, out, err),
        Some(Sub::Rm(a)) => store.delete(&a.id).map(|full| {
            let _ = writeln!(err, "removed session {full}");
        }),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "zut sessions: {e}");
            1
        }
    }
}

fn list(store: &Store, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), SessionError> {
    let sessions = store.list();
    if sessions.is_empty() {
        let _ = writeln!(err, "no sessions for {}", store.cwd().display());
        return Ok(());
    }
    let parents: Vec<String> = sessions.iter().map(parent_label).collect();
    let pw = parents.iter().map(|p| p.len()).max().unwrap_or(0).max(6);
    let iw = sessions
        .iter()
        .map(|s| s.id.len())
        .max()
        .unwrap_or(0)
        .max(2);
    let _ = writeln!(
        out,
        "{:iw$}  {:16}  {:>8}  {:pw$}  PROMPT",
        "ID", "UPDATED", "MESSAGES", "PARENT"
    );
    for (s, parent) in sessions.iter().zip(&parents) {
        let _ = writeln!(
            out,
            "{:iw$}  {:16}  {:>8}  {:pw$}  {}",
            s.id,
            local_time(&s.updated),
            s.messages,
            parent,
            clean(&one_line(&s.title, 60)),
        );
    }
    Ok(())
}

/// `ID@N` for a branch, `-` for a root session.
fn parent_label(s: &Summary) -> String {
    match (&s.parent_id, s.fork_point) {
        (Some(p), Some(n)) => format!("{p}@{n}"),
        (Some(p), None) => p.clone(),
        _ => "-".into(),
    }
}

/// `2024-05-01 14:03` in local time, from what the store writes (UTC).
fn local_time(rfc3339: &str) -> String {
    match clock::parse_rfc3339(rfc3339) {
        Some(secs) => {
            let c = clock::local(secs);
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}",
                c.year, c.month, c.day, c.hour, c.minute
            )
        }
        None => clean(rfc3339),
    }
}

fn show(
    store: &Store,
    id: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), SessionError> {
    let s = store.read(id)?;
    if let Some(w) = s.warning() {
        let _ = writeln!(err, "warning: {w}");
    }
    let _ = writeln!(out, "session {}", s.id());
    if let Some(p) = s.parent_id() {
        let at = s
            .fork_point()
            .map(|n| format!(" at message {n}"))
            .unwrap_or_default();
        let _ = writeln!(out, "parent  {}{at}", clean(p));
    }
    let _ = writeln!(out, "cwd     {}", clean(s.cwd()));
    let _ = writeln!(out, "created {}", local_time(s.created()));
    let _ = writeln!(out, "file    {}", s.path().display());
    for (i, m) in s.messages().iter().enumerate() {
        let _ = writeln!(out);
        for line in message_lines(i, m) {
            let _ = writeln!(out, "{line}");
        }
    }
    if !s.states().is_empty() {
        let _ = writeln!(out);
    }
    for (ext, state) in s.states() {
        let json = state.to_string();
        let _ = writeln!(
            out,
            "state {}: {} ({} bytes)",
            clean(ext),
            clean(&one_line(&json, 80)),
            json.len()
        );
    }
    Ok(())
}

/// A message as lines: `[i] user:` / `[i] assistant:` / `[i] tool results:`
/// then its text (indented), `→ tool(args) [id]` per call and
/// `← [id] first line … (n lines)` per result.
fn message_lines(i: usize, m: &Message) -> Vec<String> {
    let results = m
        .content
        .iter()
        .any(|b| matches!(b, Block::ToolResult { .. }));
    let who = match m.role {
        Role::User if results => "tool results",
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let mut lines = vec![format!("[{i}] {who}:")];
    for b in &m.content {
        match b {
            Block::Text { text } => {
                for l in clean(text).lines() {
                    lines.push(format!("  {l}"));
                }
            }
            Block::Thinking { thinking, .. } => {
                lines.push(format!("  [thinking: {}]", clean(&one_line(thinking, 100))));
            }
            Block::RedactedThinking { .. } => lines.push("  [redacted thinking]".into()),
            Block::Image { mime_type, data } => {
                lines.push(format!(
                    "  [image {} ({} bytes base64)]",
                    clean(mime_type),
                    data.len()
                ));
            }
            Block::ToolCall { id, name, args } => lines.push(format!(
                "  → {}({}) [{}]",
                clean(name),
                clean(&one_line(&args.to_string(), 100)),
                clean(id)
            )),
            Block::ToolResult {
                call_id,
                is_error,
                content,
            } => {
                let text: Vec<String> = content
                    .iter()
                    .map(|c| match c {
                        ContentBlock::Text { text } => text.clone(),
                        ContentBlock::Image { mime_type, .. } => format!("[image {mime_type}]"),
                        ContentBlock::Unknown => "[unknown block]".into(),
                    })
                    .collect();
                let text = text.join("\n");
                let n = text.lines().count();
                let more = if n > 1 {
                    format!(" … ({n} lines)")
                } else {
                    String::new()
                };
                let error = if *is_error { " error:" } else { "" };
                let first = text.lines().next().unwrap_or("");
                lines.push(format!(
                    "  ← [{}]{error} {}{more}",
                    clean(call_id),
                    clean(&one_line(first, 100))
                ));
            }
        }
    }
    lines
}

/// Control characters other than newline and tab become U+FFFD.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}
