//! Context from the keyboard: `@path` mentions in a prompt.
//!
//! A mention is `@` at the start of the prompt or after whitespace,
//! followed by a path relative to the project (or absolute inside it).
//! When the prompt is sent, [`expand`] appends one block per mentioned
//! file to the prompt as typed; the expanded prompt is what the model gets
//! and what the session keeps. [`split_attachments`] turns an expanded
//! prompt back into the typed text plus one header line per file, which
//! is what the transcript shows. [`candidates`] serves Tab completion over
//! the project's files as git sees them (`.gitignore` respected, through
//! the FIFO-safe walker of [`crate::walk`]).
//!
//! The block of one file:
//!
//! ````text
//! [attached: src/main.rs (42 lines)]
//! ```rs
//! …the file's text…
//! ```
//! ````
//!
//! Invariants: a file is read only through [`crate::safe_fs::open_regular`]
//! (never blocks on a FIFO or a device); what is attached is a regular,
//! text (UTF-8, no NUL) file whose real path is inside the project; at most
//! [`MAX_BYTES`] and [`MAX_LINES`] of one file are attached, with a
//! `[cut: N more lines]` line after the block when more exist; the fence is
//! longer than any run of backticks in the text; a mention that names
//! nothing existing is left alone silently (a decorator, an e-mail
//! handle), while an existing path that cannot be attached (a directory,
//! a binary, a FIFO, a place outside the project) gets a note for the
//! person and stays in the prompt as typed.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes of one file attached.
pub const MAX_BYTES: usize = 100 * 1024;
/// The most lines of one file attached.
pub const MAX_LINES: usize = 2000;
/// The most files attached to one prompt.
pub const MAX_FILES: usize = 20;
/// Past the attached part, how many bytes are read to count the lines cut.
const COUNT_LIMIT: u64 = 64 * 1024 * 1024;
/// The most entries of the project walked for one completion.
pub const WALK_MAX: usize = 50_000;
/// The first line of every attached block.
const HEADER: &str = "[attached: ";

/// One file attached to a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Attached {
    /// As typed after the `@`.
    pub path: String,
    /// Lines attached.
    pub lines: usize,
    /// Lines left out ([`MAX_LINES`], [`MAX_BYTES`]).
    pub cut: usize,
}

/// A prompt with its mentions expanded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Expanded {
    /// What the model gets: the prompt as typed, then the blocks.
    pub text: String,
    pub attached: Vec<Attached>,
    /// For the person: mentions that name something that cannot be
    /// attached, and why (`@src: it is a directory`).
    pub refused: Vec<String>,
}

/// The `@` mentions of `text`: the byte range of each (the `@`
/// included) and the path after the `@`.
pub fn mentions(text: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    let mut out = Vec::new();
    let mut prev_space = true;
    for (i, c) in text.char_indices() {
        if c == '@' && prev_space {
            let rest = &text[i + 1..];
            let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
            if len > 0 {
                out.push((i..i + 1 + len, &rest[..len]));
            }
        }
        prev_space = c.is_whitespace();
    }
    out
}

/// Why a path cannot be attached, or the file's real path.
enum Resolved {
    /// Nothing by that name: not a mention of a file.
    Missing,
    Refused(String),
    File(PathBuf),
}

/// Resolves a mentioned path against the project (see the module
/// invariants). Trailing punctuation (`@a.rs,`) is dropped when the path
/// as written names nothing.
fn resolve<'a>(project: &Path, path: &'a str) -> (&'a str, Resolved) {
    let first = resolve_exact(project, path);
    if !matches!(first, Resolved::Missing) {
        return (path, first);
    }
    let trimmed = path.trim_end_matches(|c: char| ".,;:!?)]}'\"".contains(c));
    if trimmed.is_empty() || trimmed == path {
        return (path, first);
    }
    (trimmed, resolve_exact(project, trimmed))
}

fn resolve_exact(project: &Path, path: &str) -> Resolved {
    let full = project.join(path);
    // Follows symlinks without opening anything.
    let meta = match std::fs::metadata(&full) {
        Ok(m) => m,
        Err(_) => return Resolved::Missing,
    };
    let (Ok(real), Ok(root)) = (full.canonicalize(), project.canonicalize()) else {
        return Resolved::Missing;
    };
    if !real.starts_with(&root) {
        return Resolved::Refused("it is outside the project".into());
    }
    if !meta.is_file() {
        return Resolved::Refused(format!("it is {}, not a file", crate::safe_fs::kind(&meta)));
    }
    Resolved::File(real)
}

/// The attachable text of `file`: the kept text, the lines kept, the
/// lines cut, and whether the count of cut lines stopped early.
fn read_text(file: &Path) -> Result<(String, usize, usize, bool), String> {
    let mut f = crate::safe_fs::open_regular(file).map_err(|e| e.to_string())?;
    let mut head = Vec::new();
    (&mut f)
        .take(MAX_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| e.to_string())?;
    // The rest only counted: its newlines, its size, its last byte.
    let (mut more_nl, mut more_bytes, mut last) = (0usize, 0u64, head.last().copied());
    let mut buf = vec![0u8; 64 * 1024];
    let mut rest = (&mut f).take(COUNT_LIMIT);
    loop {
        match rest.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                more_nl += buf[..n].iter().filter(|&&b| b == b'\n').count();
                more_bytes += n as u64;
                last = Some(buf[n - 1]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let partial_count = more_bytes == COUNT_LIMIT;
    if head.contains(&0) {
        return Err("it is a binary file".into());
    }
    let text = match std::str::from_utf8(&head) {
        Ok(t) => t,
        // Cut inside a character at the byte cap: keep what is whole.
        Err(e) if e.error_len().is_none() && more_bytes > 0 => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return Err("it is not UTF-8 text".into()),
    };
    let newlines = head.iter().filter(|&&b| b == b'\n').count() + more_nl;
    let total = newlines + usize::from(last.is_some_and(|b| b != b'\n'));
    let mut kept: Vec<&str> = text.split_inclusive('\n').take(MAX_LINES).collect();
    // A line cut by the byte cap is dropped, unless it is the only one.
    if more_bytes > 0 && kept.len() > 1 && kept.last().is_some_and(|l| !l.ends_with('\n')) {
        kept.pop();
    }
    let shown = kept.len();
    Ok((
        kept.concat(),
        shown,
        total.saturating_sub(shown),
        partial_count,
    ))
}

/// A fence longer than any run of backticks in `text` (at least three).
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

/// One file's block (see the module docs).
fn block(path: &str, file: &Path, text: &str, shown: usize, cut: usize, partial: bool) -> String {
    let lines = if cut > 0 {
        format!(
            "{shown} of {}{} lines",
            shown + cut,
            if partial { "+" } else { "" }
        )
    } else {
        crate::words::plural(shown, "line")
    };
    let fence = fence_for(text);
    let lang = file
        .extension()
        .and_then(|e| e.to_str())
        .filter(|e| e.chars().all(|c| c.is_ascii_alphanumeric()))
        .unwrap_or("");
    let mut out = format!("{HEADER}{path} ({lines})]\n{fence}{lang}\n{text}");
    if !text.is_empty() && !text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    if cut > 0 {
        let more = if partial { "at least " } else { "" };
        out.push_str(&format!(
            "\n[cut: {more}{}]",
            crate::words::plural(cut, "more line")
        ));
    }
    out
}

/// `text` with the files it mentions attached (see the module docs).
pub fn expand(text: &str, project: &Path) -> Expanded {
    let mut out = Expanded::default();
    let mut blocks = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for (_, mention) in mentions(text) {
        let (path, resolved) = resolve(project, mention);
        let file = match resolved {
            Resolved::Missing => continue,
            Resolved::Refused(why) => {
                out.refused.push(format!("@{path}: {why}"));
                continue;
            }
            Resolved::File(f) => f,
        };
        if seen.contains(&file) {
            continue;
        }
        if seen.len() == MAX_FILES {
            out.refused.push(format!(
                "@{path}: at most {MAX_FILES} files are attached to one prompt"
            ));
            continue;
        }
        match read_text(&file) {
            Ok((body, shown, cut, partial)) => {
                blocks.push(block(path, &file, &body, shown, cut, partial));
                out.attached.push(Attached {
                    path: path.to_string(),
                    lines: shown,
                    cut,
                });
                seen.push(file);
            }
            Err(why) => out.refused.push(format!("@{path}: {why}")),
        }
    }
    out.text = if blocks.is_empty() {
        text.to_string()
    } else {
        format!("{}\n\n{}", text.trim_end(), blocks.join("\n\n"))
    };
    out
}

/// An expanded prompt as the transcript shows it: the text as typed and
/// each block's header line (with its cut note). A text without blocks
/// comes back whole with no headers.
pub fn split_attachments(text: &str) -> (&str, Vec<String>) {
    let mut from = 0;
    while let Some(i) = text[from..].find(&format!("\n\n{HEADER}")) {
        let at = from + i;
        if let Some(headers) = parse_blocks(&text[at + 2..]) {
            return (&text[..at], headers);
        }
        from = at + 2;
    }
    (text, Vec::new())
}

/// The header lines of `s` when it is nothing but blocks made by
/// [`expand`].
fn parse_blocks(s: &str) -> Option<Vec<String>> {
    let mut lines = s.split('\n').peekable();
    let mut headers = Vec::new();
    loop {
        let header = lines.next()?;
        if !(header.starts_with(HEADER) && header.ends_with(']')) {
            return None;
        }
        let open = lines.next()?;
        let ticks = open.chars().take_while(|&c| c == '`').count();
        if ticks < 3 {
            return None;
        }
        let fence = &open[..ticks];
        loop {
            if lines.next()? == fence {
                break;
            }
        }
        let mut shown = header.to_string();
        if let Some(cut) = lines.peek().filter(|l| l.starts_with("[cut: ")) {
            shown.push(' ');
            shown.push_str(cut);
            lines.next();
        }
        headers.push(shown);
        match lines.next() {
            None => return Some(headers),
            Some("") => {}
            Some(_) => return None,
        }
    }
}

/// The project's files (as git sees them) that complete `partial`: those
/// whose relative path starts with it, else those whose path contains it
/// (any case). Sorted; at most [`WALK_MAX`] entries of the tree are seen.
pub fn candidates(project: &Path, partial: &str) -> Vec<String> {
    let mut files = Vec::new();
    for entry in crate::walk::project_files(project)
        .filter_map(Result::ok)
        .take(WALK_MAX)
    {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(project) else {
            continue;
        };
        files.push(rel.to_string_lossy().into_owned());
    }
    files.sort();
    let prefixed: Vec<String> = files
        .iter()
        .filter(|f| f.starts_with(partial))
        .cloned()
        .collect();
    if !prefixed.is_empty() {
        return prefixed;
    }
    let needle = partial.to_lowercase();
    files
        .into_iter()
        .filter(|f| f.to_lowercase().contains(&needle))
        .collect()
}

/// The longest common prefix of `items` (cut at a character boundary).
pub fn common_prefix(items: &[String]) -> &str {
    let Some(first) = items.first() else {
        return "";
    };
    let mut end = first.len();
    for s in &items[1..] {
        end = first
            .char_indices()
            .zip(s.chars())
            .find(|((_, a), b)| a != b)
            .map_or(end.min(s.len()), |((i, _), _)| i)
            .min(end);
    }
    while !first.is_char_boundary(end) {
        end -= 1;
    }
    &first[..end]
}

/// The mention the cursor (a byte offset) is at the end of: the byte
/// where its `@` is and the path typed so far.
pub fn mention_at(text: &str, cursor: usize) -> Option<(usize, &str)> {
    let before = text.get(..cursor)?;
    let start = before.rfind(char::is_whitespace).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    word.strip_prefix('@').map(|p| (start, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn project() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir_all(t.path().join("src")).unwrap();
        fs::write(t.path().join("src/main.rs"), "fn main() {}\n").unwrap();
        fs::write(t.path().join("notes.txt"), "one\ntwo\nthree").unwrap();
        t
    }

    #[test]
    fn mentions_start_at_whitespace_only() {
        let m: Vec<&str> = mentions("@a see @b/c.rs, mail x@y.z and @ alone")
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        assert_eq!(m, ["a", "b/c.rs,"]);
    }

    #[test]
    fn a_file_is_attached_after_the_prompt_in_a_fenced_block() {
        let t = project();
        let e = expand("explain @src/main.rs please", t.path());
        assert_eq!(
            e.text,
            "explain @src/main.rs please\n\n[attached: src/main.rs (1 line)]\n```rs\nfn main() {}\n```"
        );
        assert_eq!(
            e.attached,
            [Attached {
                path: "src/main.rs".into(),
                lines: 1,
                cut: 0
            }]
        );
        assert!(e.refused.is_empty());
    }

    #[test]
    fn trailing_punctuation_and_a_repeated_file_and_a_missing_one() {
        let t = project();
        let e = expand("@notes.txt, and @notes.txt? or @decorator", t.path());
        assert_eq!(e.attached.len(), 1);
        assert_eq!(e.attached[0].path, "notes.txt");
        assert_eq!(e.attached[0].lines, 3);
        assert!(
            e.text.ends_with("```txt\none\ntwo\nthree\n```"),
            "{}",
            e.text
        );
        assert!(e.refused.is_empty(), "{:?}", e.refused);
        // Nothing mentioned: the text unchanged.
        assert_eq!(expand("hi @nobody", t.path()).text, "hi @nobody");
    }

    #[test]
    fn long_files_are_cut_with_a_note() {
        let t = project();
        let body: String = (0..MAX_LINES + 5).map(|i| format!("line {i}\n")).collect();
        fs::write(t.path().join("long.txt"), &body).unwrap();
        let e = expand("@long.txt", t.path());
        assert_eq!(e.attached[0].lines, MAX_LINES);
        assert_eq!(e.attached[0].cut, 5);
        assert!(
            e.text.ends_with("```\n[cut: 5 more lines]"),
            "{}",
            &e.text[e.text.len() - 60..]
        );
        assert!(e
            .text
            .contains(&format!("({MAX_LINES} of {} lines)", MAX_LINES + 5)));
        // The byte cap: whole lines only.
        let wide: String = (0..400).map(|i| format!("{i:0>500}\n")).collect();
        fs::write(t.path().join("wide.txt"), &wide).unwrap();
        let e = expand("@wide.txt", t.path());
        let kept = MAX_BYTES / 501;
        assert_eq!(e.attached[0].lines, kept);
        assert_eq!(e.attached[0].cut, 400 - kept);
    }

    #[test]
    fn directories_binaries_fifos_and_outside_paths_are_refused_with_a_note() {
        let t = project();
        fs::write(t.path().join("blob.bin"), b"ab\0cd").unwrap();
        let fifo = t.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), t.path().join("link"))
            .unwrap();
        let abs = outside.path().join("secret.txt");
        let typed = format!("@src @blob.bin @pipe @link @../x @{}", abs.display());
        let e = expand(&typed, t.path());
        assert_eq!(e.text, typed, "nothing attached");
        assert_eq!(
            e.refused,
            [
                "@src: it is a directory, not a file".to_string(),
                "@blob.bin: it is a binary file".into(),
                "@pipe: it is a FIFO (named pipe), not a file".into(),
                "@link: it is outside the project".into(),
                format!("@{}: it is outside the project", abs.display()),
            ]
        );
    }

    #[test]
    fn the_transcript_shows_the_prompt_and_the_headers() {
        let t = project();
        let body: String = (0..MAX_LINES + 2).map(|i| format!("{i}\n")).collect();
        fs::write(t.path().join("long.txt"), body).unwrap();
        fs::write(t.path().join("ticks.md"), "```\ncode\n```\n").unwrap();
        let e = expand("look @notes.txt @ticks.md @long.txt", t.path());
        let (typed, headers) = split_attachments(&e.text);
        assert_eq!(typed, "look @notes.txt @ticks.md @long.txt");
        assert_eq!(
            headers,
            [
                "[attached: notes.txt (3 lines)]".to_string(),
                "[attached: ticks.md (3 lines)]".into(),
                format!(
                    "[attached: long.txt ({MAX_LINES} of {} lines)] [cut: 2 more lines]",
                    MAX_LINES + 2
                ),
            ]
        );
        assert!(e.text.contains("````md\n```\ncode\n```\n````"));
        // Text that merely looks like a header is left whole.
        let odd = "a\n\n[attached: x]\nnot a fence";
        assert_eq!(split_attachments(odd), (odd, Vec::new()));
    }

    #[test]
    fn candidates_respect_gitignore_and_prefer_prefixes() {
        let t = project();
        fs::create_dir_all(t.path().join(".git")).unwrap();
        fs::create_dir_all(t.path().join("target")).unwrap();
        fs::write(t.path().join(".gitignore"), "target/\n*.log\n").unwrap();
        fs::write(t.path().join("target/main.o"), "x").unwrap();
        fs::write(t.path().join("main.log"), "x").unwrap();
        fs::write(t.path().join("src/lib.rs"), "x").unwrap();
        assert_eq!(candidates(t.path(), "src/"), ["src/lib.rs", "src/main.rs"]);
        assert_eq!(candidates(t.path(), "MAIN"), ["src/main.rs"]);
        assert_eq!(common_prefix(&candidates(t.path(), "s")), "src/");
    }

    #[test]
    fn the_mention_under_the_cursor() {
        assert_eq!(mention_at("see @src/ma", 11), Some((4, "src/ma")));
        assert_eq!(mention_at("@", 1), Some((0, "")));
        assert_eq!(mention_at("see src", 7), None);
        assert_eq!(mention_at("é @x", 5), Some((3, "x")));
    }
}
