//! Skills: reusable instructions written as `SKILL.md` files, offered to
//! the model by name and description and loaded in full on demand.
//!
//! [`discover`] is the one function that computes the skill set, from the
//! project directory, `$ZUT_HOME`, the user's home and the manifests of the
//! loaded extensions; startup, `/reload-ext` and `zut skills` all call it.
//! Roots, first name wins:
//! `<cwd>/.zut/skills`, `$ZUT_HOME/skills`, `<cwd>/.claude/skills`,
//! `~/.claude/skills`, `<cwd>/.agents/skills`, `~/.agents/skills` (each
//! scanned recursively for `<dir>/SKILL.md`), then the skills bundled by
//! extensions in load order.
//!
//! Safety invariant for bundled skills: a manifest `skills` path is used
//! only when it resolves, symlinks included, inside the extension
//! directory, and every `SKILL.md` and skill directory found under it is
//! checked the same way *before* it is read. Nothing outside an extension
//! directory is ever opened on its behalf; [`refusals`] lists what was
//! refused, for an `ext_warning` and for `zut ext doctor`.
//!
//! Files that cannot be read as skills are skipped with a [`Warning`] that
//! names the file; they never stop zut.

pub mod frontmatter;

use crate::events::{Event, EventSink};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The skills an extension bundles, as its manifest declares them: what
/// skills need of an extension, and nothing of how it runs.
#[derive(Debug, Clone, Copy)]
pub struct Bundle<'a> {
    pub name: &'a str,
    /// The extension directory.
    pub dir: &'a Path,
    /// The manifest's `skills` entries, relative to `dir`.
    pub skills: &'a [String],
}

/// The skill file name.
pub const SKILL_FILE: &str = "SKILL.md";
/// Larger `SKILL.md` files are skipped: a skill is meant to be read whole
/// by a model.
pub const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// How deep the user roots are scanned for nested skills.
const MAX_DEPTH: usize = 8;

/// One discovered skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The frontmatter `name`, else the directory name.
    pub name: String,
    /// One-line summary; empty when the file has none.
    pub description: String,
    pub body: String,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    /// The directory holding it (relative references in the body start here).
    pub dir: PathBuf,
    /// Where it came from: the root directory, or `extension NAME`.
    pub source: String,
    /// The bundling extension, for bundled skills.
    pub extension: Option<String>,
    /// For nested user skills: the directory path relative to the root
    /// (`backend/golang`), also accepted as a name.
    pub alias: Option<String>,
    /// False with `disable-model-invocation: true`.
    pub model_invocable: bool,
    /// Informational, shown to the model with the body.
    pub allowed_tools: Vec<String>,
    /// Informational, shown to the model with the body.
    pub permissions: Vec<(String, Vec<String>)>,
}

impl Skill {
    /// The description, or a placeholder when there is none.
    pub fn summary(&self) -> &str {
        let first = self.description.lines().next().unwrap_or("").trim();
        if first.is_empty() {
            "(no description)"
        } else {
            first
        }
    }
}

/// Why a `SKILL.md` was skipped, or a manifest `skills` entry refused.
#[derive(Debug)]
pub enum SkillError {
    /// The file could not be opened (missing, not a regular file) or read.
    Unreadable {
        file: PathBuf,
        source: std::io::Error,
    },
    /// Over [`MAX_SKILL_BYTES`].
    TooLarge {
        file: PathBuf,
        size: u64,
    },
    NotUtf8 {
        file: PathBuf,
    },
    /// The frontmatter could not be read.
    Frontmatter {
        file: PathBuf,
        source: frontmatter::Error,
    },
    /// The name is unusable in `/skill:NAME`.
    BadName {
        file: PathBuf,
        name: String,
        problem: NameProblem,
    },
    /// A manifest `skills` entry that is empty or absolute.
    NotRelative {
        declared: String,
    },
    /// A manifest `skills` entry that climbs out with `..` (or names the
    /// extension directory itself).
    Escapes {
        declared: String,
    },
    /// The extension directory could not be resolved; `declared` is the
    /// entry being checked, if any.
    ExtensionDir {
        declared: Option<String>,
        source: std::io::Error,
    },
    Missing {
        declared: String,
    },
    /// The entry could not be resolved for another reason.
    Unresolvable {
        declared: String,
        source: std::io::Error,
    },
    /// The entry resolves outside the extension directory.
    SymlinkEscape {
        declared: String,
    },
    NotADirectory {
        declared: String,
    },
    /// A skill directory or `SKILL.md` under the entry (`path`, relative to
    /// the extension directory when inside it) is not safe to read.
    Unsafe {
        declared: String,
        path: PathBuf,
        why: Unsafe,
    },
}

/// What is wrong with a skill name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameProblem {
    /// Empty or over 128 characters.
    Length,
    /// A space, slash or control character.
    Characters,
}

/// Why a path under a bundled skills directory is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsafe {
    /// It resolves outside the extension directory.
    Symlink,
    /// It cannot be resolved.
    Dangling,
}

impl std::fmt::Display for Unsafe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unsafe::Symlink => "escapes the extension directory through a symlink",
            Unsafe::Dangling => "cannot be resolved (a dangling symlink?)",
        })
    }
}

impl std::fmt::Display for SkillError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use SkillError::*;
        let skipped = |f: &mut std::fmt::Formatter<'_>, file: &Path| {
            write!(f, "skipped skill file {}: ", file.display())
        };
        match self {
            Unreadable { file, source } => {
                skipped(f, file)?;
                write!(f, "{source}")
            }
            TooLarge { file, size } => {
                skipped(f, file)?;
                write!(
                    f,
                    "{size} bytes is more than the {MAX_SKILL_BYTES} a skill may have"
                )
            }
            NotUtf8 { file } => {
                skipped(f, file)?;
                write!(f, "not UTF-8 text")
            }
            Frontmatter { file, source } => {
                skipped(f, file)?;
                write!(f, "{source}")
            }
            BadName {
                file,
                name,
                problem,
            } => {
                skipped(f, file)?;
                match problem {
                    NameProblem::Length => {
                        write!(f, "skill name {name:?} must be 1 to 128 characters")
                    }
                    NameProblem::Characters => write!(
                        f,
                        "skill name {name:?} contains a space, slash or control character; set a plain name: in its frontmatter"
                    ),
                }
            }
            NotRelative { declared } => write!(
                f,
                "skills path {declared:?} must be a directory relative to the extension directory"
            ),
            Escapes { declared } => {
                write!(
                    f,
                    "skills path {declared:?} escapes the extension directory"
                )
            }
            ExtensionDir {
                declared: Some(declared),
                source,
            } => write!(
                f,
                "skills path {declared:?}: cannot resolve the extension directory: {source}"
            ),
            ExtensionDir {
                declared: None,
                source,
            } => write!(
                f,
                "skills: cannot resolve the extension directory: {source}"
            ),
            Missing { declared } => write!(f, "skills path {declared:?} does not exist"),
            Unresolvable { declared, source } => {
                write!(f, "skills path {declared:?}: {source}")
            }
            SymlinkEscape { declared } => write!(
                f,
                "skills path {declared:?} escapes the extension directory through a symlink"
            ),
            NotADirectory { declared } => {
                write!(f, "skills path {declared:?} is not a directory")
            }
            Unsafe {
                declared,
                path,
                why,
            } => write!(f, "skills path {declared:?}: {} {why}", path.display()),
        }
    }
}

impl std::error::Error for SkillError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SkillError::Unreadable { source, .. }
            | SkillError::ExtensionDir { source, .. }
            | SkillError::Unresolvable { source, .. } => Some(source),
            SkillError::Frontmatter { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A file that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The bundling extension, when the file belongs to one.
    pub extension: Option<String>,
    pub message: String,
}

/// Every usable skill, first of each name, in precedence order.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    pub skills: Vec<Skill>,
    /// Unreadable or malformed skill files (refused extension paths are
    /// reported by [`refusals`] instead).
    pub warnings: Vec<Warning>,
}

impl SkillSet {
    /// By name, then by nested alias.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        let name = name.trim();
        self.skills.iter().find(|s| s.name == name).or_else(|| {
            self.skills
                .iter()
                .find(|s| s.alias.as_deref() == Some(name))
        })
    }

    /// The skills the model is told about.
    pub fn model_visible(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| s.model_invocable)
    }

    /// Whether the model has anything to load (and so gets the `skill` tool).
    pub fn offers_model_skills(&self) -> bool {
        self.model_visible().next().is_some()
    }
}

/// The user skill roots in precedence order (`home` is the user's home
/// directory, when known). Duplicate directories are listed once.
pub fn user_roots(cwd: &Path, zut_home: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut roots = vec![cwd.join(".zut/skills"), zut_home.join("skills")];
    for compat in [".claude/skills", ".agents/skills"] {
        roots.push(cwd.join(compat));
        if let Some(h) = home {
            roots.push(h.join(compat));
        }
    }
    let mut seen = HashSet::new();
    roots.retain(|r| seen.insert(r.canonicalize().unwrap_or_else(|_| r.clone())));
    roots
}

/// Computes the skill set: user roots first, then the skills bundled by
/// `extensions` (the enabled ones, in load order); first name wins.
pub fn discover(
    cwd: &Path,
    zut_home: &Path,
    home: Option<&Path>,
    extensions: &[Bundle],
) -> SkillSet {
    let mut set = SkillSet::default();
    let mut candidates = Vec::new();
    for root in user_roots(cwd, zut_home, home) {
        let mut visited = HashSet::new();
        scan_user_root(&root, &root, 0, &mut visited, &mut candidates);
    }
    for m in extensions {
        candidates.extend(layout(m).0);
    }
    for c in candidates {
        match load(&c) {
            Ok(skill) => {
                if !set.skills.iter().any(|s| s.name == skill.name) {
                    set.skills.push(skill);
                }
            }
            Err(e) => {
                log::warn!("{e}");
                set.warnings.push(Warning {
                    extension: c.extension.clone(),
                    message: e.to_string(),
                });
            }
        }
    }
    set
}

/// The skills one extension bundles (each first of its name within the
/// extension, whatever other sources offer), with its skipped files.
pub fn bundled(m: &Bundle) -> SkillSet {
    let mut set = SkillSet::default();
    for c in layout(m).0 {
        match load(&c) {
            Ok(s) if !set.skills.iter().any(|o| o.name == s.name) => set.skills.push(s),
            Ok(_) => {}
            Err(e) => set.warnings.push(Warning {
                extension: c.extension,
                message: e.to_string(),
            }),
        }
    }
    set
}

/// The user's home directory (`$HOME`), when set.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// A `SKILL.md` to read.
#[derive(Debug, Clone)]
struct Candidate {
    file: PathBuf,
    dir: PathBuf,
    fallback: String,
    alias: Option<String>,
    source: String,
    extension: Option<String>,
}

/// Depth-first, directories in name order; hidden directories skipped;
/// symlinked directories followed once (the user's own files).
fn scan_user_root(
    root: &Path,
    dir: &Path,
    depth: usize,
    visited: &mut HashSet<PathBuf>,
    out: &mut Vec<Candidate>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(real) = dir.canonicalize() else { return };
    if !visited.insert(real) {
        return;
    }
    for child in crate::walk::list_dirs(dir) {
        let file = child.join(SKILL_FILE);
        // Anything but a directory is a candidate: a FIFO or device named
        // SKILL.md is refused by `load` with a warning, not passed over.
        if std::fs::metadata(&file).is_ok_and(|m| !m.is_dir()) {
            let rel = child.strip_prefix(root).unwrap_or(&child);
            let alias = rel.to_string_lossy().replace('\\', "/");
            out.push(Candidate {
                fallback: base_name(&child),
                alias: (rel.components().count() > 1).then_some(alias),
                file,
                dir: child.clone(),
                source: root.display().to_string(),
                extension: None,
            });
        }
        scan_user_root(root, &child, depth + 1, visited, out);
    }
}

fn base_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What an extension's manifest `skills` entries were refused for (empty,
/// absolute, `..`, missing, a symlinked directory or `SKILL.md` that leads
/// outside the extension directory), as messages. Reads metadata only.
pub fn refusals(m: &Bundle) -> Vec<String> {
    refused(m).iter().map(ToString::to_string).collect()
}

/// [`refusals`], typed.
pub fn refused(m: &Bundle) -> Vec<SkillError> {
    layout(m).1
}

/// Resolves one manifest `skills` entry to a directory inside the
/// extension: refused when empty, absolute, climbing out with `..`, naming
/// the extension directory itself, missing, not a directory, or resolving
/// (through a symlink anywhere on the way) outside the symlink-resolved
/// extension directory. Only metadata is consulted, never file contents.
/// The result is the canonical path.
pub fn resolve_skill_dir(dir: &Path, declared: &str) -> Result<PathBuf, SkillError> {
    let named = || declared.to_string();
    let rel = Path::new(declared.trim());
    if declared.trim().is_empty() || rel.is_absolute() {
        return Err(SkillError::NotRelative { declared: named() });
    }
    let inside = match crate::safe_fs::lexically_inside(rel) {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => return Err(SkillError::Escapes { declared: named() }),
    };
    let root = dir
        .canonicalize()
        .map_err(|source| SkillError::ExtensionDir {
            declared: Some(named()),
            source,
        })?;
    let real = dir
        .join(&inside)
        .canonicalize()
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => SkillError::Missing { declared: named() },
            _ => SkillError::Unresolvable {
                declared: named(),
                source,
            },
        })?;
    if !real.starts_with(&root) {
        return Err(SkillError::SymlinkEscape { declared: named() });
    }
    if !real.is_dir() {
        return Err(SkillError::NotADirectory { declared: named() });
    }
    Ok(real)
}

/// The bundled `SKILL.md` files of `m` that are safe to read, and the
/// refusals. Every path is checked against the symlink-resolved extension
/// directory before anything under it is used.
fn layout(m: &Bundle) -> (Vec<Candidate>, Vec<SkillError>) {
    let mut found = Vec::new();
    let mut refused = Vec::new();
    if m.skills.is_empty() {
        return (found, refused);
    }
    let root = match m.dir.canonicalize() {
        Ok(r) => r,
        Err(source) => {
            refused.push(SkillError::ExtensionDir {
                declared: None,
                source,
            });
            return (found, refused);
        }
    };
    let source = format!("extension {}", m.name);
    let mut push = |dir: PathBuf, file: PathBuf| {
        found.push(Candidate {
            fallback: base_name(&dir),
            alias: None,
            file,
            dir,
            source: source.clone(),
            extension: Some(m.name.to_string()),
        })
    };
    for declared in m.skills {
        let dir = match resolve_skill_dir(m.dir, declared) {
            Ok(d) => d,
            Err(e) => {
                refused.push(e);
                continue;
            }
        };
        let refuse = |p: &Path, why: Unsafe| SkillError::Unsafe {
            declared: declared.clone(),
            path: p.strip_prefix(&root).unwrap_or(p).to_path_buf(),
            why,
        };
        let direct = dir.join(SKILL_FILE);
        if direct.symlink_metadata().is_ok() {
            match inside(&root, &direct) {
                Ok(file) if !file.is_dir() => push(dir.clone(), file),
                Ok(_) => {}
                Err(why) => refused.push(refuse(&direct, why)),
            }
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .collect();
        children.sort();
        for child in children {
            let child_dir = match inside(&root, &child) {
                Ok(d) if d.is_dir() => d,
                Ok(_) => continue,
                Err(why) => {
                    refused.push(refuse(&child, why));
                    continue;
                }
            };
            let file = child_dir.join(SKILL_FILE);
            if file.symlink_metadata().is_err() {
                continue;
            }
            match inside(&root, &file) {
                Ok(f) if !f.is_dir() => push(child_dir, f),
                Ok(_) => {}
                Err(why) => refused.push(refuse(&child.join(SKILL_FILE), why)),
            }
        }
    }
    (found, refused)
}

/// `p` resolved, when that stays under `root`; else why not.
fn inside(root: &Path, p: &Path) -> Result<PathBuf, Unsafe> {
    match p.canonicalize() {
        Ok(real) if real.starts_with(root) => Ok(real),
        Ok(_) => Err(Unsafe::Symlink),
        Err(_) => Err(Unsafe::Dangling),
    }
}

/// Reads and parses one candidate; the error names the file.
fn load(c: &Candidate) -> Result<Skill, SkillError> {
    let file = || c.file.clone();
    let unreadable = |source| SkillError::Unreadable {
        file: file(),
        source,
    };
    // Opened without blocking: a FIFO or a device is refused, by name.
    let handle = crate::safe_fs::open_regular(&c.file).map_err(unreadable)?;
    let size = handle.metadata().map_err(unreadable)?.len();
    if size > MAX_SKILL_BYTES {
        return Err(SkillError::TooLarge { file: file(), size });
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(handle, MAX_SKILL_BYTES),
        &mut bytes,
    )
    .map_err(unreadable)?;
    let text = String::from_utf8(bytes).map_err(|_| SkillError::NotUtf8 { file: file() })?;
    let doc = frontmatter::parse(&text).map_err(|source| SkillError::Frontmatter {
        file: file(),
        source,
    })?;
    let name = match doc.name {
        Some(n) if !n.trim().is_empty() => n.trim().to_string(),
        _ => c.fallback.clone(),
    };
    check_name(&name).map_err(|problem| SkillError::BadName {
        file: file(),
        name: name.clone(),
        problem,
    })?;
    Ok(Skill {
        name,
        description: doc.description.unwrap_or_default().trim().to_string(),
        body: doc.body,
        path: c.file.clone(),
        dir: c.dir.clone(),
        source: c.source.clone(),
        extension: c.extension.clone(),
        alias: c.alias.clone(),
        model_invocable: !doc.disable_model_invocation,
        allowed_tools: doc.allowed_tools,
        permissions: doc.permissions,
    })
}

/// A name must work in `/skill:NAME args`: no spaces, slashes or controls.
fn check_name(name: &str) -> Result<(), NameProblem> {
    if name.is_empty() || name.chars().count() > 128 {
        return Err(NameProblem::Length);
    }
    if name
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '/' || c == '\\')
    {
        return Err(NameProblem::Characters);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// What the model and the user see.

/// The system-prompt lines for the model-invocable skills; `None` when
/// there are none.
pub fn prompt_section(set: &SkillSet) -> Option<String> {
    if !set.offers_model_skills() {
        return None;
    }
    let mut s = String::from(
        "Skills (when a request matches one, call the `skill` tool with its name to load its full instructions):\n",
    );
    for skill in set.model_visible() {
        s.push_str(&format!("- {}: {}\n", skill.name, skill.summary()));
    }
    Some(s)
}

/// The header every rendering of a skill starts with.
fn header(skill: &Skill) -> String {
    let description = match skill.description.trim() {
        "" => skill.summary(),
        d => d,
    };
    let mut s = format!("# Skill: {}\n\n{description}\n", skill.name);
    if !skill.allowed_tools.is_empty() {
        s.push_str(&format!(
            "\nAllowed tools: {}\n",
            skill.allowed_tools.join(", ")
        ));
    }
    if !skill.permissions.is_empty() {
        s.push_str("\nPermissions:\n");
        for (tool, patterns) in &skill.permissions {
            s.push_str(&format!("- {tool}: {}\n", patterns.join(", ")));
        }
    }
    s.push_str(&format!("\nSkill directory: {}\n", skill.dir.display()));
    s
}

/// What the `skill` tool returns: header, then the body.
pub fn render(skill: &Skill) -> String {
    format!("{}\n---\n\n{}", header(skill), skill.body)
}

/// The user message `/skill:NAME request` expands to.
pub fn expand(skill: &Skill, request: &str) -> String {
    let mut s = format!(
        "Apply the skill below to this request and follow its instructions.\n\n{}\n---\n\n{}",
        header(skill),
        skill.body
    );
    let request = request.trim();
    if !request.is_empty() {
        s.push_str(&format!("\n\n---\n\nUser request:\n{request}"));
    }
    s
}

/// One line per skill: name, source, description, and whether the model
/// sees it.
pub fn listing(set: &SkillSet) -> String {
    if set.skills.is_empty() {
        return "no skills found".into();
    }
    let width = set.skills.iter().map(|s| s.name.len()).max().unwrap_or(0);
    set.skills
        .iter()
        .map(|s| {
            let hidden = if s.model_invocable {
                ""
            } else {
                " [only via /skill:]"
            };
            format!(
                "{:width$}  {}{hidden}\n{:width$}  from {}",
                s.name,
                s.summary(),
                "",
                s.source
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------
// Front-end glue (small so the modes can move it).

/// A slash command that belongs to skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    /// `/skills`: text to show.
    Display { name: String, text: String },
    /// `/skill:NAME request`: a user message to run as a prompt.
    Prompt { name: String, text: String },
    /// Unknown skill, or skills are off.
    Error(String),
}

/// Handles `line` (without its leading `/`) when it is `skills` or
/// `skill:NAME …`; `None` for any other command. `set` is `None` with
/// `--no-skills`.
pub fn slash(line: &str, set: Option<&SkillSet>) -> Option<Slash> {
    let (word, args) = line
        .trim()
        .split_once(char::is_whitespace)
        .unwrap_or((line.trim(), ""));
    let lower = word.to_ascii_lowercase();
    let wanted = if lower == "skills" {
        None
    } else if lower.starts_with("skill:") {
        Some(&word["skill:".len()..])
    } else {
        return None;
    };
    let Some(set) = set else {
        return Some(Slash::Error(format!(
            "/{word}: skills are turned off for this run (--no-skills)"
        )));
    };
    let Some(name) = wanted else {
        return Some(Slash::Display {
            name: "skills".into(),
            text: listing(set),
        });
    };
    if name.is_empty() {
        return Some(Slash::Error(
            "usage: /skill:NAME [request] (run /skills to list them)".into(),
        ));
    }
    Some(match set.get(name) {
        Some(skill) => Slash::Prompt {
            name: format!("skill:{}", skill.name),
            text: expand(skill, args),
        },
        None => Slash::Error(not_found(set, name)),
    })
}

/// `no skill named …`, with close names suggested.
pub fn not_found(set: &SkillSet, name: &str) -> String {
    let names = set.skills.iter().map(|s| s.name.as_str());
    format!(
        "no skill named {name:?}{} (run /skills or zut skills to list them)",
        crate::suggest::did_you_mean(&crate::suggest::suggestions(name, names))
    )
}

/// Reports skipped skill files: as `ext_warning` when an extension bundles
/// the file, else on stderr (print and JSON modes keep stdout for output).
pub fn report_warnings(set: &SkillSet, sink: &dyn EventSink) {
    for w in &set.warnings {
        match &w.extension {
            Some(ext) => sink.emit(Event::ExtWarning {
                extension: ext.clone(),
                message: w.message.clone(),
            }),
            None => eprintln!("zut: warning: {}", crate::sanitize::sanitize(&w.message)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_paths_stay_inside() {
        let t = tempfile::tempdir().unwrap();
        let ext = t.path().join("ext");
        let outside = t.path().join("outside");
        std::fs::create_dir_all(ext.join("skills/a")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, ext.join("out")).unwrap();
        std::os::unix::fs::symlink("skills", ext.join("alias")).unwrap();
        std::fs::write(ext.join("file"), "").unwrap();
        let real = ext.canonicalize().unwrap();
        assert_eq!(
            resolve_skill_dir(&ext, "skills").unwrap(),
            real.join("skills")
        );
        assert_eq!(
            resolve_skill_dir(&ext, "./skills/a/../a").unwrap(),
            real.join("skills/a")
        );
        assert_eq!(
            resolve_skill_dir(&ext, "alias").unwrap(),
            real.join("skills")
        );
        for (p, needle) in [
            ("", "relative"),
            ("  ", "relative"),
            ("/etc", "relative"),
            ("..", "escapes"),
            ("../outside", "escapes"),
            ("skills/../..", "escapes"),
            (".", "escapes"),
            ("out", "through a symlink"),
            ("missing", "does not exist"),
            ("file", "not a directory"),
        ] {
            let e = resolve_skill_dir(&ext, p).unwrap_err().to_string();
            assert!(e.contains(needle), "{p:?}: {e}");
        }
    }

    fn skill(root: &Path, rel: &str, text: &str) -> PathBuf {
        let d = root.join(rel);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(SKILL_FILE), text).unwrap();
        d
    }

    fn fm(name: &str, desc: &str) -> String {
        format!("---\nname: {name}\ndescription: {desc}\n---\nbody of {name} {desc}\n")
    }

    #[test]
    fn user_roots_nested_precedence_and_aliases() {
        let t = tempfile::tempdir().unwrap();
        let (cwd, zh, home) = (t.path().join("p"), t.path().join("z"), t.path().join("h"));
        skill(&cwd.join(".agents/skills"), "a", &fm("a", "agents-project"));
        skill(&home.join(".claude/skills"), "a", &fm("a", "claude-home"));
        skill(
            &home.join(".agents/skills"),
            "group/sub/deep",
            "---\ndescription: nested\n---\nx",
        );
        skill(&zh.join("skills"), "b", "no frontmatter");
        skill(&cwd.join(".zut/skills"), "bad", "---\nname: x\n");
        let set = discover(&cwd, &zh, Some(&home), &[]);
        let names: Vec<&str> = set.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["b", "a", "deep"]);
        assert_eq!(set.get("a").unwrap().description, "claude-home");
        assert_eq!(set.get("b").unwrap().summary(), "(no description)");
        assert_eq!(set.get("group/sub/deep").unwrap().name, "deep");
        assert_eq!(set.warnings.len(), 1);
        assert!(
            set.warnings[0].message.contains("bad/SKILL.md"),
            "{:?}",
            set.warnings
        );
        assert!(set.warnings[0].message.contains("never closed"));
    }

    #[test]
    fn rendering() {
        let s = Skill {
            name: "n".into(),
            description: "d".into(),
            body: "B".into(),
            path: "/s/n/SKILL.md".into(),
            dir: "/s/n".into(),
            source: "/s".into(),
            extension: None,
            alias: None,
            model_invocable: true,
            allowed_tools: vec!["read".into()],
            permissions: vec![("bash".into(), vec!["git *".into()])],
        };
        let r = render(&s);
        assert!(r.starts_with("# Skill: n\n\nd\n"), "{r}");
        assert!(r.contains("Allowed tools: read"));
        assert!(r.contains("- bash: git *"));
        assert!(r.ends_with("\n---\n\nB"), "{r}");
        let e = expand(&s, "  do it ");
        assert!(e.contains("Skill directory: /s/n"));
        assert!(e.ends_with("User request:\ndo it"), "{e}");
        assert!(!expand(&s, "").contains("User request"));
        let hidden = Skill {
            model_invocable: false,
            name: "h".into(),
            ..s.clone()
        };
        let set = SkillSet {
            skills: vec![s, hidden],
            warnings: vec![],
        };
        let p = prompt_section(&set).unwrap();
        assert!(p.contains("- n: d\n") && !p.contains("- h:"), "{p}");
        assert!(p.lines().next().unwrap().contains("skill"));
        assert!(matches!(
            slash("skill:n go", Some(&set)),
            Some(Slash::Prompt { .. })
        ));
        assert!(matches!(
            slash("Skills", Some(&set)),
            Some(Slash::Display { .. })
        ));
        assert!(
            matches!(slash("skill:zz", Some(&set)), Some(Slash::Error(e)) if e.contains("no skill named"))
        );
        assert!(
            matches!(slash("skills", None), Some(Slash::Error(e)) if e.contains("--no-skills"))
        );
        assert_eq!(slash("weather x", Some(&set)), None);
    }

    #[test]
    fn skipped_files_and_refused_paths_are_typed_and_keep_their_text() {
        let t = tempfile::tempdir().unwrap();
        let ext = t.path().join("ext");
        let big = skill(&ext, "skills/big", "");
        std::fs::write(
            big.join(SKILL_FILE),
            vec![b'x'; MAX_SKILL_BYTES as usize + 1],
        )
        .unwrap();
        let bin = skill(&ext, "skills/bin", "");
        std::fs::write(bin.join(SKILL_FILE), [0xff, 0xfe]).unwrap();
        skill(&ext, "skills/spaced", "---\nname: a b\n---\n");
        std::os::unix::fs::symlink(t.path(), ext.join("skills/out")).unwrap();
        let declared = ["skills".to_string(), "../x".to_string()];
        let m = Bundle {
            name: "e",
            dir: &ext,
            skills: &declared,
        };
        let refused = refused(&m);
        assert!(
            matches!(&refused[..], [
                SkillError::Unsafe { declared, path, why: Unsafe::Symlink },
                SkillError::Escapes { .. },
            ] if declared == "skills" && path == Path::new("skills/out")),
            "{refused:?}"
        );
        assert_eq!(
            refusals(&m),
            [
                "skills path \"skills\": skills/out escapes the extension directory through a symlink",
                "skills path \"../x\" escapes the extension directory",
            ]
        );
        let candidates = layout(&m).0;
        let errors: Vec<SkillError> = candidates.iter().filter_map(|c| load(c).err()).collect();
        assert!(
            matches!(&errors[..], [
                SkillError::TooLarge { size, .. },
                SkillError::NotUtf8 { .. },
                SkillError::BadName { problem: NameProblem::Characters, .. },
            ] if *size == MAX_SKILL_BYTES + 1),
            "{errors:?}"
        );
        let file = |d: &str| ext.canonicalize().unwrap().join(d).join(SKILL_FILE);
        let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                format!(
                    "skipped skill file {}: {} bytes is more than the {MAX_SKILL_BYTES} a skill may have",
                    file("skills/big").display(),
                    MAX_SKILL_BYTES + 1
                ),
                format!("skipped skill file {}: not UTF-8 text", file("skills/bin").display()),
                format!(
                    "skipped skill file {}: skill name \"a b\" contains a space, slash or control character; set a plain name: in its frontmatter",
                    file("skills/spaced").display()
                ),
            ]
        );
    }

    #[test]
    fn names_must_be_plain() {
        assert!(check_name("code-review").is_ok());
        assert_eq!(check_name("a b"), Err(NameProblem::Characters));
        assert_eq!(check_name("a/b"), Err(NameProblem::Characters));
        assert_eq!(check_name(""), Err(NameProblem::Length));
    }
}
