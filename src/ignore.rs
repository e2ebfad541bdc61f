//! A small `.gitignore` matcher and an ignore-aware directory walk.
//!
//! Used by the `grep` tool and by `zut ext install` (to leave out what the
//! extension's repository ignores). It follows gitignore(5):
//!
//! - blank lines and `#` comments are skipped; `\#` and `\!` are literal;
//!   unescaped trailing spaces are dropped;
//! - `!` re-includes what an earlier rule excluded; the last matching rule
//!   of a file wins, and a deeper `.gitignore` wins over a shallower one;
//! - a trailing `/` matches directories only;
//! - a `/` at the start or in the middle anchors the pattern to the
//!   directory of its `.gitignore`; otherwise it matches a name at any depth;
//! - `*` and `?` never match `/`; `[a-z]`, `[!a-z]`, `[^a-z]` are classes;
//!   `**/` matches any number of leading directories, `/**` everything
//!   inside, `/**/` zero or more directories.
//!
//! Like git, nothing inside an ignored directory can be re-included: the
//! walk never enters ignored directories. The matcher never fails: an odd
//! pattern (an unclosed `[`) is read literally, an unreadable `.gitignore`
//! counts as empty.

use std::fs;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// One piece of a compiled glob.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// This exact character.
    Char(char),
    /// `?`: one character other than `/`.
    AnyChar,
    /// `*`: any run of characters other than `/`.
    Star,
    /// A trailing `**`: anything, `/` included.
    Globstar,
    /// `**/`: nothing, or any run of whole directories (`a/b/`).
    Dirs,
    /// `[...]`: one character (not `/`) in (or, negated, not in) the ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// One line of a `.gitignore`.
#[derive(Debug, Clone)]
struct Rule {
    tokens: Vec<Token>,
    negated: bool,
    dir_only: bool,
    /// Matches the whole path relative to the file's directory rather than
    /// the last path component.
    anchored: bool,
}

/// The rules of one `.gitignore` (or `.git/info/exclude`) file.
#[derive(Debug, Clone)]
pub struct IgnoreFile {
    dir: PathBuf,
    rules: Vec<Rule>,
}

impl IgnoreFile {
    /// Parses `text` as the ignore file of directory `dir`; paths given to
    /// [`IgnoreFile::decide`] are matched relative to `dir`.
    pub fn parse(dir: impl Into<PathBuf>, text: &str) -> Self {
        IgnoreFile {
            dir: dir.into(),
            rules: text.lines().filter_map(parse_rule).collect(),
        }
    }

    /// Reads `file` as the ignore rules of `dir`; `None` when it cannot be
    /// read (usually: it does not exist).
    pub fn load(dir: &Path, file: &Path) -> Option<Self> {
        let bytes = fs::read(file).ok()?;
        Some(IgnoreFile::parse(dir, &String::from_utf8_lossy(&bytes)))
    }

    /// Whether this file has no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `Some(true)` if the last rule matching `path` ignores it,
    /// `Some(false)` if it is a `!` rule, `None` if no rule matches or
    /// `path` is not under this file's directory.
    pub fn decide(&self, path: &Path, is_dir: bool) -> Option<bool> {
        let rel = path.strip_prefix(&self.dir).ok()?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let name: Vec<char> = parts.last()?.chars().collect();
        let full: Vec<char> = parts.join("/").chars().collect();
        self.rules
            .iter()
            .rev()
            .find(|rule| {
                (is_dir || !rule.dir_only)
                    && glob_match(&rule.tokens, if rule.anchored { &full } else { &name })
            })
            .map(|rule| !rule.negated)
    }
}

/// The ignore files in force for one directory of a walk: the deepest file
/// is consulted first.
#[derive(Debug, Clone, Default)]
pub struct Ignore {
    files: Vec<IgnoreFile>,
}

impl Ignore {
    /// No rules at all.
    pub fn new() -> Self {
        Ignore::default()
    }

    /// The rules that apply to the contents of `dir` when `top` is the root
    /// of the tree (the repository root, say): `top/.git/info/exclude`, then
    /// the `.gitignore` of `top` and of every directory down to `dir`
    /// inclusive. A `dir` outside `top` gets only its own `.gitignore`.
    pub fn for_dir(top: &Path, dir: &Path) -> Self {
        let mut ignore = Ignore::above(top, dir);
        ignore.push_dir(dir);
        ignore
    }

    /// Like [`Ignore::for_dir`] without `dir`'s own `.gitignore`.
    fn above(top: &Path, dir: &Path) -> Self {
        let mut ignore = Ignore::new();
        let Ok(rel) = dir.strip_prefix(top) else {
            return ignore;
        };
        let exclude = top.join(".git").join("info").join("exclude");
        if let Some(file) = IgnoreFile::load(top, &exclude) {
            ignore.push(file);
        }
        let mut current = top.to_path_buf();
        for part in rel.components() {
            ignore.push_dir(&current);
            current.push(part);
        }
        ignore
    }

    /// Adds the rules of `file`, taking precedence over those already here.
    pub fn push(&mut self, file: IgnoreFile) {
        self.files.push(file);
    }

    /// Adds `dir/.gitignore` if it exists and has rules; returns whether
    /// something was added (and so must be [`Ignore::pop`]ped later).
    pub fn push_dir(&mut self, dir: &Path) -> bool {
        match IgnoreFile::load(dir, &dir.join(".gitignore")) {
            Some(file) if !file.is_empty() => {
                self.files.push(file);
                true
            }
            _ => false,
        }
    }

    /// Drops the most recently added file.
    pub fn pop(&mut self) {
        self.files.pop();
    }

    /// Whether `path` (a file or, with `is_dir`, a directory) is ignored by
    /// the rules here. Only the path itself is tested, not its parents.
    pub fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        self.files
            .iter()
            .rev()
            .find_map(|file| file.decide(path, is_dir))
            .unwrap_or(false)
    }
}

/// Visits the files under `dir` that are not ignored, in path order (each
/// directory's entries sorted by name). `top` is the root of the tree whose
/// ignore files also apply (see [`Ignore::for_dir`]); pass `dir` itself
/// when only files inside it count. `.git` entries are always skipped,
/// directories are entered but not visited, symlinks are visited but never
/// followed. `visit` gets the path and its type, and can stop the walk.
pub fn walk(
    top: &Path,
    dir: &Path,
    visit: &mut dyn FnMut(&Path, fs::FileType) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut ignore = Ignore::above(top, dir);
    walk_dir(dir, &mut ignore, visit)
}

fn walk_dir(
    dir: &Path,
    ignore: &mut Ignore,
    visit: &mut dyn FnMut(&Path, fs::FileType) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            log::debug!("walk: cannot list {}: {e}", dir.display());
            return ControlFlow::Continue(());
        }
    };
    let mut entries: Vec<(PathBuf, fs::FileType)> = entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            Some((entry.path(), entry.file_type().ok()?))
        })
        .filter(|(path, _)| path.file_name().is_some_and(|name| name != ".git"))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let pushed = ignore.push_dir(dir);
    let mut flow = ControlFlow::Continue(());
    for (path, kind) in entries {
        if ignore.is_ignored(&path, kind.is_dir()) {
            continue;
        }
        flow = if kind.is_dir() {
            walk_dir(&path, ignore, visit)
        } else {
            visit(&path, kind)
        };
        if flow.is_break() {
            break;
        }
    }
    if pushed {
        ignore.pop();
    }
    flow
}

/// Longer `.gitignore` lines are skipped: no real path is that long, and
/// an untrusted file must not make matching expensive.
const MAX_PATTERN_CHARS: usize = 4096;

/// Parses one `.gitignore` line; `None` for blanks, comments, overlong
/// lines and patterns that can match nothing.
fn parse_rule(line: &str) -> Option<Rule> {
    if line.len() > MAX_PATTERN_CHARS {
        return None;
    }
    let line = trim_trailing_spaces(line.strip_suffix('\r').unwrap_or(line));
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (negated, line) = match line.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let (dir_only, line) = match line.strip_suffix('/') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let anchored = line.contains('/');
    let line = line.strip_prefix('/').unwrap_or(line);
    if line.is_empty() {
        return None;
    }
    Some(Rule {
        tokens: compile(line)?,
        negated,
        dir_only,
        anchored,
    })
}

/// Drops trailing spaces unless escaped with a backslash.
fn trim_trailing_spaces(line: &str) -> &str {
    let mut end = line.len();
    while line[..end].ends_with(' ') && !line[..end - 1].ends_with('\\') {
        end -= 1;
    }
    &line[..end]
}

/// Compiles a glob; `None` if it ends in a lone backslash (git ignores
/// such a pattern).
fn compile(pattern: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                tokens.push(Token::Char(*chars.get(i + 1)?));
                i += 2;
            }
            '?' => {
                tokens.push(Token::AnyChar);
                i += 1;
            }
            '*' => i = compile_stars(&chars, i, &mut tokens),
            '[' => match compile_class(&chars, i) {
                Some((token, next)) => {
                    tokens.push(token);
                    i = next;
                }
                None => {
                    tokens.push(Token::Char('['));
                    i += 1;
                }
            },
            c => {
                tokens.push(Token::Char(c));
                i += 1;
            }
        }
    }
    Some(tokens)
}

/// Compiles the run of `*` starting at `start`; returns the next index.
fn compile_stars(chars: &[char], start: usize, tokens: &mut Vec<Token>) -> usize {
    let mut end = start;
    while chars.get(end) == Some(&'*') {
        end += 1;
    }
    let whole_component = start == 0 || chars[start - 1] == '/';
    if end - start >= 2 && whole_component {
        match chars.get(end) {
            None => {
                tokens.push(Token::Globstar);
                return end;
            }
            Some('/') => {
                tokens.push(Token::Dirs);
                return end + 1;
            }
            Some(_) => {}
        }
    }
    tokens.push(Token::Star);
    end
}

/// Compiles the class opening at `start` (a `[`); `None` if unclosed.
fn compile_class(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let mut i = start + 1;
    let negated = matches!(chars.get(i), Some('!') | Some('^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let mut c = *chars.get(i)?;
        if c == ']' && !first {
            return Some((Token::Class { negated, ranges }, i + 1));
        }
        first = false;
        if c == '\\' {
            i += 1;
            c = *chars.get(i)?;
        }
        let range_end = match (chars.get(i + 1), chars.get(i + 2)) {
            (Some('-'), Some(&end)) if end != ']' => Some(end),
            _ => None,
        };
        match range_end {
            Some(end) => {
                ranges.push((c, end));
                i += 3;
            }
            None => {
                ranges.push((c, c));
                i += 1;
            }
        }
    }
}

/// Whether `tokens` match all of `text`. A dynamic programme over the
/// tokens: `reach[i]` says whether the tokens so far can match `text[..i]`.
/// Costs tokens × length steps, no recursion, whatever the stars.
fn glob_match(tokens: &[Token], text: &[char]) -> bool {
    let mut reach = vec![false; text.len() + 1];
    reach[0] = true;
    for token in tokens {
        reach = step(token, text, &reach);
        if !reach.contains(&true) {
            return false;
        }
    }
    reach[text.len()]
}

/// Where one more token can get to from the positions in `reach`.
fn step(token: &Token, text: &[char], reach: &[bool]) -> Vec<bool> {
    let mut next = vec![false; reach.len()];
    match token {
        Token::Char(_) | Token::AnyChar | Token::Class { .. } => {
            for (i, &c) in text.iter().enumerate() {
                next[i + 1] = reach[i] && single_matches(token, c);
            }
        }
        Token::Star => {
            // Reachable, then any run of non-`/` characters.
            let mut open = false;
            for i in 0..reach.len() {
                open = reach[i] || (open && text[i - 1] != '/');
                next[i] = open;
            }
        }
        Token::Globstar => {
            let mut open = false;
            for i in 0..reach.len() {
                open = open || reach[i];
                next[i] = open;
            }
        }
        Token::Dirs => {
            // Nothing, or anything ending just after a `/`.
            let mut before = false;
            for i in 0..reach.len() {
                next[i] = reach[i] || (before && text[i - 1] == '/');
                before = before || reach[i];
            }
        }
    }
    next
}

/// Whether a one-character token matches `c` (never a `/`).
fn single_matches(token: &Token, c: char) -> bool {
    match token {
        Token::Char(expected) => *expected == c,
        Token::AnyChar => c != '/',
        Token::Class { negated, ranges } => {
            c != '/' && ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
        }
        Token::Star | Token::Globstar | Token::Dirs => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the single pattern `pattern` ignores `path` (relative).
    fn ignored(pattern: &str, path: &str, is_dir: bool) -> bool {
        let file = IgnoreFile::parse("/r", pattern);
        file.decide(&Path::new("/r").join(path), is_dir) == Some(true)
    }

    #[test]
    fn plain_names_match_at_any_depth() {
        assert!(ignored("foo.txt", "foo.txt", false));
        assert!(ignored("foo.txt", "a/b/foo.txt", false));
        assert!(!ignored("foo.txt", "foo.txt.bak", false));
        assert!(ignored("target", "x/target", true));
    }

    #[test]
    fn stars_question_marks_and_classes() {
        assert!(ignored("*.log", "deep/dir/x.log", false));
        assert!(!ignored("*.log", "x.logs", false));
        assert!(ignored("file?.rs", "file1.rs", false));
        assert!(!ignored("file?.rs", "file10.rs", false));
        assert!(ignored("[abc].md", "b.md", false));
        assert!(!ignored("[abc].md", "d.md", false));
        assert!(ignored("[a-c]x", "bx", false));
        assert!(ignored("[!a-c]x", "dx", false));
        assert!(!ignored("[^a-c]x", "ax", false));
        assert!(ignored("[]]", "]", false));
        assert!(ignored("[ab", "[ab", false), "an unclosed class is literal");
    }

    #[test]
    fn star_does_not_cross_slashes_but_globstars_do() {
        assert!(!ignored("a/*.rs", "a/b/c.rs", false));
        assert!(ignored("a/*.rs", "a/c.rs", false));
        assert!(ignored("**/foo", "foo", false));
        assert!(ignored("**/foo", "x/y/foo", false));
        assert!(ignored("**/foo/bar", "x/foo/bar", false));
        assert!(ignored("abc/**", "abc/x/y", false));
        assert!(!ignored("abc/**", "abc", true));
        assert!(ignored("a/**/b", "a/b", false));
        assert!(ignored("a/**/b", "a/x/y/b", false));
        assert!(!ignored("a/**/b", "a/xb", false));
        assert!(ignored("a**b", "axxb", false), "other ** is a plain star");
        assert!(!ignored("a**b", "ax/xb", false));
    }

    #[test]
    fn anchoring_and_directory_only() {
        assert!(ignored("/build", "build", true));
        assert!(!ignored("/build", "sub/build", true));
        assert!(ignored("doc/*.txt", "doc/a.txt", false));
        assert!(!ignored("doc/*.txt", "x/doc/a.txt", false));
        assert!(ignored("out/", "out", true));
        assert!(ignored("out/", "a/out", true));
        assert!(!ignored("out/", "out", false));
    }

    #[test]
    fn comments_escapes_and_spaces() {
        assert!(!ignored("# foo", "# foo", false));
        assert!(ignored("\\#foo", "#foo", false));
        assert!(ignored("\\!important", "!important", false));
        assert!(ignored("trail   ", "trail", false));
        assert!(ignored("space\\ ", "space ", false));
        assert!(ignored("crlf\r", "crlf", false));
        assert!(IgnoreFile::parse("/r", "\n# only a comment\n   \n/\n").is_empty());
    }

    #[test]
    fn last_rule_wins_and_negation_reincludes() {
        let file = IgnoreFile::parse("/r", "*.log\n!keep.log\n");
        assert_eq!(file.decide(Path::new("/r/a.log"), false), Some(true));
        assert_eq!(file.decide(Path::new("/r/keep.log"), false), Some(false));
        assert_eq!(file.decide(Path::new("/r/a.txt"), false), None);
        assert_eq!(file.decide(Path::new("/elsewhere/a.log"), false), None);
        let file = IgnoreFile::parse("/r", "!keep.log\n*.log\n");
        assert_eq!(file.decide(Path::new("/r/keep.log"), false), Some(true));
    }

    #[test]
    fn deeper_files_take_precedence() {
        let mut ignore = Ignore::new();
        ignore.push(IgnoreFile::parse("/r", "*.gen\n"));
        ignore.push(IgnoreFile::parse("/r/sub", "!*.gen\n/local\n"));
        assert!(ignore.is_ignored(Path::new("/r/a.gen"), false));
        assert!(!ignore.is_ignored(Path::new("/r/sub/a.gen"), false));
        assert!(ignore.is_ignored(Path::new("/r/sub/local"), false));
        assert!(!ignore.is_ignored(Path::new("/r/local"), false));
    }

    #[test]
    fn pathological_patterns_stay_fast() {
        let pattern = "*a*a*a*a*a*a*a*a*a*a*a*a*b";
        let name = "a".repeat(200);
        assert!(!ignored(pattern, &name, false));
        let deep = "a/".repeat(2000) + "b";
        assert!(ignored("**/**/**/**/b", &deep, false));
        let overlong = format!("x{}", "*".repeat(MAX_PATTERN_CHARS));
        assert!(
            !ignored(&overlong, "x", false),
            "overlong lines are skipped"
        );
        assert!(ignored(&overlong[..MAX_PATTERN_CHARS], "x", false));
    }

    fn files_under(top: &Path, dir: &Path) -> Vec<String> {
        let mut seen = Vec::new();
        let _ = walk(top, dir, &mut |path, _| {
            let rel = path.strip_prefix(top).unwrap_or(path);
            seen.push(rel.to_string_lossy().into_owned());
            ControlFlow::Continue(())
        });
        seen
    }

    fn make_tree(root: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
    }

    #[test]
    fn walk_honours_nested_gitignores_in_sorted_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        make_tree(
            root,
            &[
                (".gitignore", "*.log\n/build/\nsecret*\n"),
                ("a.txt", ""),
                ("a.log", ""),
                ("build/out.txt", ""),
                ("src/build/kept.txt", ""),
                ("src/.gitignore", "!keep.log\ngen/\n"),
                ("src/keep.log", ""),
                ("src/drop.log", ""),
                ("src/gen/x.rs", ""),
                ("src/main.rs", ""),
                ("secret.key", ""),
                (".git/HEAD", ""),
                (".hidden", ""),
            ],
        );
        assert_eq!(
            files_under(root, root),
            [
                ".gitignore",
                ".hidden",
                "a.txt",
                "src/.gitignore",
                "src/build/kept.txt",
                "src/keep.log",
                "src/main.rs"
            ]
        );
        // Starting below the top still applies the top's rules, once.
        assert_eq!(
            files_under(root, &root.join("src")),
            [
                "src/.gitignore",
                "src/build/kept.txt",
                "src/keep.log",
                "src/main.rs"
            ]
        );
    }

    #[test]
    fn walk_can_stop_early_and_reads_git_info_exclude() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        make_tree(
            root,
            &[
                (".git/info/exclude", "b.txt\n"),
                ("a.txt", ""),
                ("b.txt", ""),
                ("c.txt", ""),
            ],
        );
        assert_eq!(files_under(root, root), ["a.txt", "c.txt"]);
        let mut count = 0;
        let flow = walk(root, root, &mut |_, _| {
            count += 1;
            ControlFlow::Break(())
        });
        assert!(flow.is_break());
        assert_eq!(count, 1);
    }
}
