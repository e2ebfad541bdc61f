//! The subset of `.gitignore` that `zut ext install` honours: the source's
//! root `.gitignore` only (nested `.gitignore` files, `.git/info/exclude`
//! and global excludes are not read).
//!
//! Supported, with git's meaning: blank lines and `#` comments, `\#` and
//! `\!` escapes, trailing-space trimming, `!` negation (last match wins),
//! a trailing `/` for directories only, patterns with a leading or inner
//! `/` anchored at the root and others matched against the name at any
//! depth, `*`, `?`, `[…]` classes (`!`/`^` negation, ranges) and `**`
//! (`**/x`, `x/**`, `a/**/b`). A file inside an excluded directory cannot
//! be re-included, because the copy never descends into it. Kept small and
//! isolated so a shared implementation can replace it.

use std::path::Path;

/// One pattern line.
#[derive(Debug, Clone)]
struct Rule {
    glob: Vec<char>,
    negate: bool,
    dir_only: bool,
    anchored: bool,
}

/// A parsed root `.gitignore`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ignore {
    rules: Vec<Rule>,
}

impl Ignore {
    /// Reads `<root>/.gitignore`; no file means nothing is ignored.
    pub(crate) fn load(root: &Path) -> Result<Self, String> {
        let path = root.join(".gitignore");
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Self::parse(&String::from_utf8_lossy(&bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Parses the text of a `.gitignore`.
    pub(crate) fn parse(text: &str) -> Self {
        Ignore {
            rules: text.lines().filter_map(parse_line).collect(),
        }
    }

    /// Whether `rel` ('/'-separated, relative to the root) is excluded.
    pub(crate) fn is_ignored(&self, rel: &str, is_dir: bool) -> bool {
        let base = rel.rsplit('/').next().unwrap_or(rel);
        let mut ignored = false;
        for rule in &self.rules {
            if rule.dir_only && !is_dir {
                continue;
            }
            let subject: Vec<char> = if rule.anchored { rel } else { base }.chars().collect();
            if glob(&rule.glob, &subject) {
                ignored = !rule.negate;
            }
        }
        ignored
    }
}

fn parse_line(line: &str) -> Option<Rule> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut pat = trim_trailing_spaces(line);
    let negate = pat.starts_with('!');
    if negate {
        pat = &pat[1..];
    }
    let dir_only = pat.ends_with('/') && !pat.ends_with("\\/");
    let pat = pat.strip_suffix('/').filter(|_| dir_only).unwrap_or(pat);
    let anchored = pat.contains('/');
    let pat = pat.strip_prefix('/').unwrap_or(pat);
    if pat.is_empty() {
        return None;
    }
    Some(Rule {
        glob: pat.chars().collect(),
        negate,
        dir_only,
        anchored,
    })
}

/// Drops trailing spaces unless the last one is escaped with a backslash.
fn trim_trailing_spaces(line: &str) -> &str {
    let mut end = line.len();
    while end > 0 && line.as_bytes()[end - 1] == b' ' {
        if end >= 2 && line.as_bytes()[end - 2] == b'\\' {
            break;
        }
        end -= 1;
    }
    &line[..end]
}

/// Matches a gitignore glob against a path; `*`, `?` and classes never
/// match `/`.
fn glob(p: &[char], s: &[char]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some('*') if p.get(1) == Some(&'*') => double_star(p, s),
        Some('*') => {
            let run = s.iter().take_while(|c| **c != '/').count();
            (0..=run).any(|i| glob(&p[1..], &s[i..]))
        }
        Some('?') => s.first().is_some_and(|c| *c != '/') && glob(&p[1..], &s[1..]),
        Some('[') => match class(&p[1..], s.first().copied()) {
            Some((true, rest)) => glob(rest, &s[1..]),
            Some((false, _)) => false,
            None => s.first() == Some(&'[') && glob(&p[1..], &s[1..]),
        },
        Some('\\') if p.len() > 1 => s.first() == Some(&p[1]) && glob(&p[2..], &s[1..]),
        Some(c) => s.first() == Some(c) && glob(&p[1..], &s[1..]),
    }
}

/// `**` at the start of `p`: `**/` matches zero or more directories, a
/// final `**` matches everything; elsewhere it behaves like `*`.
fn double_star(p: &[char], s: &[char]) -> bool {
    let rest = &p[2..];
    if rest.is_empty() {
        return true;
    }
    if rest[0] == '/' {
        let after = &rest[1..];
        return glob(after, s)
            || s.iter()
                .enumerate()
                .any(|(i, c)| *c == '/' && glob(after, &s[i + 1..]));
    }
    glob(&p[1..], s)
}

/// Matches `c` against the class body after `[`; returns whether it
/// matched and the pattern after `]`, or `None` if the class is unclosed.
fn class(p: &[char], c: Option<char>) -> Option<(bool, &[char])> {
    let (negate, mut i) = match p.first() {
        Some('!') | Some('^') => (true, 1),
        _ => (false, 0),
    };
    let mut matched = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            let hit = c.is_some_and(|c| c != '/') && matched != negate;
            return Some((hit, &p[i + 1..]));
        }
        first = false;
        let lo = p[i];
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            matched |= c.is_some_and(|c| lo <= c && c <= p[i + 2]);
            i += 3;
        } else {
            matched |= c == Some(lo);
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basics() {
        let ig = Ignore::parse("# comment\n\n*.o\n/build\ntarget/\n!keep.o\nlogs/**\n");
        assert!(ig.is_ignored("a.o", false));
        assert!(ig.is_ignored("src/deep/a.o", false));
        assert!(!ig.is_ignored("keep.o", false));
        assert!(ig.is_ignored("build", true));
        assert!(!ig.is_ignored("src/build", true));
        assert!(ig.is_ignored("target", true));
        assert!(ig.is_ignored("sub/target", true));
        assert!(!ig.is_ignored("target", false));
        assert!(ig.is_ignored("logs/x/y.txt", false));
        assert!(!ig.is_ignored("logs", true));
        assert!(!ig.is_ignored("main.go", false));
    }

    #[test]
    fn globs() {
        let ig = Ignore::parse("**/gen\na/**/b\nfoo?.[ch]\n[!x]y\n\\#lit\n\\!bang\ntrail\\ \n");
        assert!(ig.is_ignored("gen", true));
        assert!(ig.is_ignored("x/y/gen", false));
        assert!(ig.is_ignored("a/b", false));
        assert!(ig.is_ignored("a/x/y/b", false));
        assert!(!ig.is_ignored("a/x/c", false));
        assert!(ig.is_ignored("foo1.c", false));
        assert!(ig.is_ignored("dir/foo2.h", false));
        assert!(!ig.is_ignored("foo12.c", false));
        assert!(ig.is_ignored("ay", false));
        assert!(!ig.is_ignored("xy", false));
        assert!(ig.is_ignored("#lit", false));
        assert!(ig.is_ignored("!bang", false));
        assert!(ig.is_ignored("trail ", false));
        assert!(!Ignore::parse("a*b").is_ignored("a/b", false));
        assert!(Ignore::parse("[a-c]").is_ignored("b", false));
        assert!(Ignore::parse("[").is_ignored("[", false));
    }
}
