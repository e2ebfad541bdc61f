//! The `grep` tool: search file contents with a Rust regex.
//!
//! Invariants: results are `path:LINE: text` lines sorted by path (the walk
//! visits directories in name order) and then by line; paths are relative
//! to the project directory when they are inside it. A directory search
//! skips `.git`, binary files, files over [`MAX_FILE_BYTES`] and whatever
//! the `.gitignore` files ignore (those of the searched directory, below it
//! and above it, matched by ripgrep's `ignore` crate); a file named
//! explicitly is searched even if ignored.
//! The output stops at [`MAX_MATCHES`] matches or about
//! [`MAX_OUTPUT_BYTES`] and then says so. Cancellation is checked between
//! files and between lines. No matches is a plain `no matches`, not an
//! error.

use super::common::{io_problem, looks_binary, read_prefix, resolve, Args, SNIFF_BYTES};
use super::{ToolContext, ToolOutput};
use crate::cancel::CancelToken;
use crate::provider::ToolDef;
use regex::bytes::Regex;
use serde_json::{json, Value};
use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::ops::ControlFlow;
use std::path::Path;

/// Most matches listed.
pub const MAX_MATCHES: usize = 200;
/// Roughly the most text returned.
pub const MAX_OUTPUT_BYTES: usize = 50 * 1024;
/// Matched lines are cut after this many characters.
pub const MAX_LINE_CHARS: usize = 300;
/// Larger files are skipped (and counted in a note).
pub const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// The definition advertised to the model.
pub fn definition() -> ToolDef {
    ToolDef {
        name: "grep".into(),
        description: format!(
            "Search file contents with a regular expression (Rust regex syntax, e.g. \
             `fn\\s+main`, `(?i)todo`), line by line. Searches the directory or file given by \
             path (default: the project directory), skipping .git, binary files and anything \
             .gitignore ignores. Prints `path:LINE: text` sorted by path and line, at most \
             {MAX_MATCHES} matches; matched lines over {MAX_LINE_CHARS} characters are cut."
        ),
        schema: json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression (Rust regex syntax) matched against each line"
                },
                "path": {
                    "type": "string",
                    "description": "Directory or file to search (default: the project directory)"
                }
            },
            "required": ["pattern"]
        }),
    }
}

/// Runs the tool.
pub fn run(args: &Value, ctx: &ToolContext, cancel: &CancelToken) -> ToolOutput {
    grep(args, ctx, cancel).unwrap_or_else(|err| err)
}

fn grep(args: &Value, ctx: &ToolContext, cancel: &CancelToken) -> Result<ToolOutput, ToolOutput> {
    let args = Args::new("grep", args)?;
    let pattern = args.string("pattern", "the regular expression to search for")?;
    let path = args.opt_string("path", "the directory or file to search")?;
    let regex = Regex::new(pattern).map_err(|e| args.error(format!("invalid regex: {e}")))?;
    let target = match path {
        Some(path) => resolve(ctx, path),
        None => ctx.cwd.clone(),
    };
    let meta = fs::metadata(&target).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => args.error(format!("path not found: {}", target.display())),
        _ => args.error(io_problem(&target, &e)),
    })?;

    let mut search = Search {
        regex: &regex,
        cwd: &ctx.cwd,
        cancel,
        out: String::new(),
        matches: 0,
        stop: None,
        skipped_large: 0,
    };
    if meta.is_dir() {
        // How the walk ended is recorded in `search.stop`.
        for entry in walker(&target) {
            let Ok(entry) = entry else { continue };
            let Some(kind) = entry.file_type() else {
                continue;
            };
            if entry.depth() > 0 && search.visit(entry.path(), kind).is_break() {
                break;
            }
        }
    } else {
        match search.file(&target) {
            Scan::Binary => {
                return Err(args.error(format!("{} is a binary file", target.display())))
            }
            Scan::Unreadable(e) => return Err(args.error(io_problem(&target, &e))),
            Scan::Searched | Scan::TooLarge => {}
        }
    }
    if matches!(search.stop, Some(Stop::Aborted)) {
        return Err(args.error("aborted"));
    }
    Ok(ToolOutput::text(search.report()))
}

/// The walk of a directory search: [`crate::walk::project_files`] (name
/// order, `.git` never entered, symlinks not followed, hidden files
/// included, `.gitignore` and `.git/info/exclude` applied whether or not
/// the directory is a repository, and no ignore file can block it).
fn walker(dir: &Path) -> ignore::Walk {
    crate::walk::project_files(dir)
}

/// Why a search ended early.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    Matches,
    Bytes,
    Aborted,
}

/// What happened to one file.
enum Scan {
    Searched,
    Binary,
    TooLarge,
    Unreadable(io::Error),
}

/// One search in progress and its results.
struct Search<'a> {
    regex: &'a Regex,
    cwd: &'a Path,
    cancel: &'a CancelToken,
    out: String,
    matches: usize,
    stop: Option<Stop>,
    skipped_large: usize,
}

impl Search<'_> {
    /// The walk's callback: searches regular files, stops when done.
    fn visit(&mut self, path: &Path, kind: fs::FileType) -> ControlFlow<()> {
        if self.cancel.is_cancelled() {
            self.stop = Some(Stop::Aborted);
        } else if kind.is_file() {
            self.file(path);
        }
        match self.stop {
            Some(_) => ControlFlow::Break(()),
            None => ControlFlow::Continue(()),
        }
    }

    /// Searches one file line by line.
    fn file(&mut self, path: &Path) -> Scan {
        // A FIFO named on the command line would block the open forever.
        let mut file = match crate::safe_fs::open_regular(path) {
            Ok(file) => file,
            Err(e) => return Scan::Unreadable(e),
        };
        if file.metadata().map_or(0, |m| m.len()) > MAX_FILE_BYTES {
            self.skipped_large += 1;
            return Scan::TooLarge;
        }
        let head = match read_prefix(&mut file, SNIFF_BYTES) {
            Ok(head) => head,
            Err(e) => return Scan::Unreadable(e),
        };
        if looks_binary(&head) {
            return Scan::Binary;
        }
        let name = self.display(path);
        let reader = BufReader::new(io::Cursor::new(head).chain(file));
        for (index, line) in reader.split(b'\n').enumerate() {
            let Ok(mut line) = line else {
                break;
            };
            if self.cancel.is_cancelled() {
                self.stop = Some(Stop::Aborted);
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if self.stop.is_none() && self.regex.is_match(&line) {
                self.add(&name, index + 1, &line);
            }
            if self.stop.is_some() {
                break;
            }
        }
        Scan::Searched
    }

    /// `path` relative to the project directory when inside it.
    fn display(&self, path: &Path) -> String {
        match path.strip_prefix(self.cwd) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            _ => path.display().to_string(),
        }
    }

    /// Records one match, unless a limit is reached.
    fn add(&mut self, name: &str, number: usize, line: &[u8]) {
        if self.matches == MAX_MATCHES {
            self.stop = Some(Stop::Matches);
            return;
        }
        let text = String::from_utf8_lossy(line);
        let text = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => format!("{} [... line cut]", &text[..cut]),
            None => text.into_owned(),
        };
        let entry = format!("{name}:{number}: {text}");
        if self.out.len() + entry.len() + 1 > MAX_OUTPUT_BYTES {
            self.stop = Some(Stop::Bytes);
            return;
        }
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out.push_str(&entry);
        self.matches += 1;
    }

    /// The result text: matches and notes, or `no matches`.
    fn report(self) -> String {
        let mut notes = Vec::new();
        match self.stop {
            Some(Stop::Matches) => notes.push(format!(
                "[stopped after {MAX_MATCHES} matches; narrow the pattern or the path to see the rest]"
            )),
            Some(Stop::Bytes) => notes.push(format!(
                "[stopped at the {} KiB output limit after {} matches; narrow the pattern or the path]",
                MAX_OUTPUT_BYTES / 1024,
                self.matches
            )),
            Some(Stop::Aborted) | None => {}
        }
        if self.skipped_large > 0 {
            notes.push(format!(
                "[skipped {} file{} over {} MiB]",
                self.skipped_large,
                if self.skipped_large == 1 { "" } else { "s" },
                MAX_FILE_BYTES / (1024 * 1024)
            ));
        }
        let body = if self.out.is_empty() {
            "no matches".to_string()
        } else {
            self.out
        };
        if notes.is_empty() {
            body
        } else {
            format!("{body}\n\n{}", notes.join("\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{context, text};
    use super::*;

    fn tree(root: &Path, files: &[(&str, &str)]) {
        for (path, content) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
        }
    }

    fn grep(ctx: &ToolContext, args: Value) -> ToolOutput {
        run(&args, ctx, &CancelToken::never())
    }

    fn found(ctx: &ToolContext, args: Value) -> String {
        let out = grep(ctx, args);
        assert!(!out.is_error, "unexpected error: {}", text(&out));
        text(&out)
    }

    #[test]
    fn lists_matches_sorted_by_path_then_line() {
        let (_dir, ctx) = context();
        tree(
            &ctx.cwd,
            &[
                ("b.txt", "foo\nbar\nfoooo\n"),
                ("a.txt", "nothing\nfoo here\n"),
                ("a/z.txt", "a foo\n"),
                ("c.txt", "Foo only\n"),
            ],
        );
        assert_eq!(
            found(&ctx, json!({"pattern": "fo+"})),
            "a/z.txt:1: a foo\na.txt:2: foo here\nb.txt:1: foo\nb.txt:3: foooo"
        );
        assert_eq!(
            found(&ctx, json!({"pattern": "(?i)^foo"})),
            "a.txt:2: foo here\nb.txt:1: foo\nb.txt:3: foooo\nc.txt:1: Foo only"
        );
    }

    #[test]
    fn path_narrows_to_a_directory_or_a_file() {
        let (_dir, ctx) = context();
        tree(
            &ctx.cwd,
            &[
                ("src/lib.rs", "fn main() {}\n"),
                ("main.rs", "fn main() {}\n"),
            ],
        );
        assert_eq!(
            found(&ctx, json!({"pattern": "main", "path": "src"})),
            "src/lib.rs:1: fn main() {}"
        );
        assert_eq!(
            found(&ctx, json!({"pattern": "main", "path": "./main.rs"})),
            "main.rs:1: fn main() {}"
        );
        let missing = grep(&ctx, json!({"pattern": "x", "path": "nope"}));
        assert!(missing.is_error);
        assert_eq!(
            text(&missing),
            format!("grep: path not found: {}", ctx.cwd.join("nope").display())
        );
    }

    #[test]
    fn gitignore_rules_are_respected() {
        let (_dir, ctx) = context();
        tree(
            &ctx.cwd,
            &[
                (".gitignore", "*.log\n!keep.log\nbuild/\n"),
                ("app.log", "needle\n"),
                ("keep.log", "needle\n"),
                ("build/out.txt", "needle\n"),
                ("src/.gitignore", "secret.txt\n!*.log\n"),
                ("src/secret.txt", "needle\n"),
                ("src/debug.log", "needle\n"),
                ("src/code.rs", "needle\n"),
                (".git/config", "needle\n"),
            ],
        );
        assert_eq!(
            found(&ctx, json!({"pattern": "needle"})),
            "keep.log:1: needle\nsrc/code.rs:1: needle\nsrc/debug.log:1: needle"
        );
        // Searching below the root still applies the root's rules.
        fs::write(ctx.cwd.join("src/.gitignore"), "").unwrap();
        assert_eq!(
            found(&ctx, json!({"pattern": "needle", "path": "src"})),
            "src/code.rs:1: needle\nsrc/secret.txt:1: needle"
        );
        // A file named explicitly is searched even if ignored.
        assert_eq!(
            found(&ctx, json!({"pattern": "needle", "path": "app.log"})),
            "app.log:1: needle"
        );
    }

    #[test]
    fn binary_files_are_skipped() {
        let (_dir, ctx) = context();
        tree(
            &ctx.cwd,
            &[("data.bin", "needle\0\x01\x02"), ("text.txt", "needle\n")],
        );
        assert_eq!(
            found(&ctx, json!({"pattern": "needle"})),
            "text.txt:1: needle"
        );
        let out = grep(&ctx, json!({"pattern": "needle", "path": "data.bin"}));
        assert!(out.is_error);
        assert!(text(&out).ends_with("data.bin is a binary file"));
    }

    #[test]
    fn invalid_regex_is_an_error_no_match_is_not() {
        let (_dir, ctx) = context();
        tree(&ctx.cwd, &[("a.txt", "hello\n")]);
        let out = grep(&ctx, json!({"pattern": "fn ("}));
        assert!(out.is_error);
        assert!(text(&out).starts_with("grep: invalid regex: "));
        assert!(text(&out).contains("unclosed group"));
        let out = grep(&ctx, json!({"pattern": "absent"}));
        assert!(!out.is_error);
        assert_eq!(text(&out), "no matches");
        let out = grep(&ctx, json!({"path": "."}));
        assert_eq!(
            text(&out),
            "grep: \"pattern\" is required: the regular expression to search for"
        );
    }

    #[test]
    fn crlf_lines_and_long_lines() {
        let (_dir, ctx) = context();
        let long = format!("key {}\n", "v".repeat(1000));
        tree(
            &ctx.cwd,
            &[("w.txt", "end\r\nnot end here\r\n"), ("long.txt", &long)],
        );
        assert_eq!(found(&ctx, json!({"pattern": "end$"})), "w.txt:1: end");
        let out = found(&ctx, json!({"pattern": "^key"}));
        assert!(out.starts_with("long.txt:1: key vvv"));
        assert!(out.ends_with("v [... line cut]"));
        assert!(out.len() < MAX_LINE_CHARS + 40);
    }

    #[test]
    fn output_is_capped_with_a_note() {
        let (_dir, ctx) = context();
        let many: String = (1..=300).map(|i| format!("match {i}\n")).collect();
        tree(&ctx.cwd, &[("many.txt", &many)]);
        let out = found(&ctx, json!({"pattern": "match"}));
        assert!(out.contains("many.txt:200: match 200\n\n[stopped after 200 matches"));
        assert!(!out.contains("match 201"));
        let wide: String = (1..=300)
            .map(|i| format!("{i} {}\n", "w".repeat(290)))
            .collect();
        tree(&ctx.cwd, &[("many.txt", &wide)]);
        let out = found(&ctx, json!({"pattern": "w"}));
        assert!(out.len() <= MAX_OUTPUT_BYTES + 200);
        assert!(out.contains("[stopped at the 50 KiB output limit after "));
    }

    #[test]
    fn cancellation_is_honoured() {
        let (_dir, ctx) = context();
        tree(&ctx.cwd, &[("a.txt", "x\n"), ("b.txt", "x\n")]);
        let (canceller, token) = crate::cancel::pair();
        canceller.cancel();
        let out = run(&json!({"pattern": "x"}), &ctx, &token);
        assert!(out.is_error);
        assert_eq!(text(&out), "grep: aborted");
    }

    #[test]
    fn fifos_never_block_a_search() {
        use super::super::common::testing::{mkfifo, within_deadline};
        let (_dir, ctx) = context();
        tree(&ctx.cwd, &[("sub/a.txt", "needle\n"), (".git/info/x", "")]);
        mkfifo(&ctx.cwd.join(".gitignore"));
        mkfifo(&ctx.cwd.join("sub/.gitignore"));
        mkfifo(&ctx.cwd.join(".git/info/exclude"));
        mkfifo(&ctx.cwd.join("named.fifo"));
        let c = ctx.clone();
        let out = within_deadline(move || grep(&c, json!({"pattern": "needle"})));
        assert_eq!(text(&out), "sub/a.txt:1: needle");
        let c = ctx.clone();
        let out = within_deadline(move || grep(&c, json!({"pattern": "x", "path": "named.fifo"})));
        assert!(out.is_error);
        assert!(text(&out).contains("FIFO"), "{}", text(&out));
    }
}
