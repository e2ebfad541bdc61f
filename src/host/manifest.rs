//! `extension.json`: parse a tolerant raw manifest, then validate it into a
//! [`Manifest`] whose paths are resolved and proven to stay inside the
//! extension directory.
//!
//! Every error names the extension directory and the offending field, so a
//! user can fix the file without reading code. Unknown fields are ignored
//! (manifests grow additively).

use serde_json::{Map, Value};
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The manifest file name inside an extension directory.
pub const MANIFEST_FILE: &str = "extension.json";

/// How to start an extension's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exec {
    /// A file inside the extension directory (`./hello`). `path` is absolute.
    Relative { configured: String, path: PathBuf },
    /// A launcher looked up on PATH when zut starts (`node`, `python3`).
    Launcher { configured: String },
}

impl Exec {
    /// The `exec` value as written in the manifest.
    pub fn configured(&self) -> &str {
        match self {
            Exec::Relative { configured, .. } | Exec::Launcher { configured } => configured,
        }
    }
}

/// A validated manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The extension directory (absolute, not symlink-resolved).
    pub dir: PathBuf,
    pub name: String,
    pub version: String,
    /// `None` only for theme-only extensions.
    pub exec: Option<Exec>,
    pub args: Vec<String>,
    pub language: String,
    pub description: String,
    pub skills: Vec<String>,
    pub enabled: bool,
    /// Theme files present (`theme.json`, `themes/theme.json`).
    pub themes: Vec<PathBuf>,
}

impl Manifest {
    /// True when there is no process to start.
    pub fn theme_only(&self) -> bool {
        self.exec.is_none()
    }
}

/// What is wrong with a manifest.
#[derive(Debug, Clone)]
pub struct ManifestError {
    pub dir: PathBuf,
    /// The field at fault, when there is one.
    pub field: Option<&'static str>,
    pub problem: Problem,
}

/// What is wrong with a manifest, or with one of its fields.
#[derive(Debug, Clone)]
pub enum Problem {
    /// There is no `extension.json`.
    Missing,
    /// It exists but could not be read (shared, so a discovery result can
    /// be cloned).
    Unreadable(Arc<std::io::Error>),
    InvalidJson(Arc<serde_json::Error>),
    NotAnObject,
    NotAString,
    NotAStringList,
    NotABool,
    /// `exec` is empty and there is no theme.
    ExecRequired,
    /// The `name` is unusable.
    Name(NameProblem),
    /// `exec` is an absolute path (the manifest's value).
    ExecAbsolute(String),
    /// `exec` climbs out of the extension directory.
    ExecOutside(String),
    /// `exec` leads out of the extension directory through a symlink, to
    /// `real`.
    ExecSymlink {
        exec: String,
        real: PathBuf,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Missing => {
                f.write_str("missing (every extension directory needs an extension.json)")
            }
            Problem::Unreadable(e) => write!(f, "cannot read: {e}"),
            Problem::InvalidJson(e) => write!(f, "invalid JSON: {e}"),
            Problem::NotAnObject => f.write_str("must be a JSON object"),
            Problem::NotAString => f.write_str("must be a string"),
            Problem::NotAStringList => f.write_str("must be an array of strings"),
            Problem::NotABool => f.write_str("must be true or false"),
            Problem::ExecRequired => f.write_str(
                "is required (only theme-only extensions with a theme.json may omit it)",
            ),
            Problem::Name(p) => write!(f, "{p}"),
            Problem::ExecAbsolute(exec) => write!(
                f,
                "{exec:?} is an absolute path; use a path inside the extension directory (\"./{}\") or a launcher name on PATH (\"python3\")",
                Path::new(exec)
                    .file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default()
            ),
            Problem::ExecOutside(exec) => {
                write!(f, "{exec:?} points outside the extension directory")
            }
            Problem::ExecSymlink { exec, real } => write!(
                f,
                "{exec:?} resolves outside the extension directory through a symlink ({})",
                real.display()
            ),
        }
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let manifest = self.dir.join(MANIFEST_FILE);
        match self.field {
            Some(field) => write!(
                f,
                "{}: field \"{field}\": {}",
                manifest.display(),
                self.problem
            ),
            None => write!(f, "{}: {}", manifest.display(), self.problem),
        }
    }
}

impl std::error::Error for ManifestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.problem {
            Problem::Unreadable(e) => Some(&**e),
            Problem::InvalidJson(e) => Some(&**e),
            _ => None,
        }
    }
}

/// Why a name cannot be an extension's (a directory and log file name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameProblem {
    Empty,
    /// Leading or trailing whitespace (the name).
    Whitespace(String),
    /// A `/`, `\\`, control character or leading `.` (the name).
    NotPlain(String),
}

impl fmt::Display for NameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameProblem::Empty => f.write_str("is required"),
            NameProblem::Whitespace(name) => {
                write!(f, "{name:?} has leading or trailing whitespace")
            }
            NameProblem::NotPlain(name) => write!(
                f,
                "{name:?} is not a plain name (no '/', '\\', control characters or leading '.')"
            ),
        }
    }
}

impl std::error::Error for NameProblem {}

/// A launcher that is not on the search path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotOnPath {
    pub name: String,
    /// The search path looked through.
    pub search: OsString,
}

impl fmt::Display for NotOnPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "launcher {:?} not found on PATH ({})",
            self.name,
            self.search.to_string_lossy()
        )
    }
}

impl std::error::Error for NotOnPath {}

/// Reads and validates `<dir>/extension.json`.
pub fn load(dir: &Path) -> Result<Manifest, ManifestError> {
    let err = |problem| ManifestError {
        dir: dir.to_path_buf(),
        field: None,
        problem,
    };
    let path = dir.join(MANIFEST_FILE);
    let bytes = crate::safe_fs::read_regular(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => err(Problem::Missing),
        _ => err(Problem::Unreadable(Arc::new(e))),
    })?;
    parse(dir, &bytes)
}

/// Parses and validates the bytes of `<dir>/extension.json`.
pub fn parse(dir: &Path, bytes: &[u8]) -> Result<Manifest, ManifestError> {
    let err = |problem| ManifestError {
        dir: dir.to_path_buf(),
        field: None,
        problem,
    };
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| err(Problem::InvalidJson(Arc::new(e))))?;
    let Value::Object(obj) = value else {
        return Err(err(Problem::NotAnObject));
    };
    validate(dir, &obj)
}

/// Validates an already parsed manifest object.
pub fn validate(dir: &Path, obj: &Map<String, Value>) -> Result<Manifest, ManifestError> {
    let err = |field: &'static str, problem| ManifestError {
        dir: dir.to_path_buf(),
        field: Some(field),
        problem,
    };
    let name = string_field(obj, "name").map_err(|m| err("name", m))?;
    check_name(&name).map_err(|m| err("name", Problem::Name(m)))?;
    let version = string_field(obj, "version").map_err(|m| err("version", m))?;
    let exec_raw = string_field(obj, "exec").map_err(|m| err("exec", m))?;
    let args = string_list(obj, "args").map_err(|m| err("args", m))?;
    let language = string_field(obj, "language").map_err(|m| err("language", m))?;
    let description = string_field(obj, "description").map_err(|m| err("description", m))?;
    let skills = string_list(obj, "skills").map_err(|m| err("skills", m))?;
    let enabled = match obj.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(err("enabled", Problem::NotABool)),
    };
    let themes = theme_files(dir);
    let exec = if exec_raw.trim().is_empty() {
        if themes.is_empty() {
            return Err(err("exec", Problem::ExecRequired));
        }
        None
    } else {
        Some(resolve_exec(dir, &exec_raw).map_err(|m| err("exec", m))?)
    };
    Ok(Manifest {
        dir: dir.to_path_buf(),
        name,
        version,
        exec,
        args,
        language,
        description,
        skills,
        enabled,
        themes,
    })
}

/// A name must be usable as a directory and log file name.
pub fn check_name(name: &str) -> Result<(), NameProblem> {
    if name.is_empty() {
        return Err(NameProblem::Empty);
    }
    if name.trim() != name {
        return Err(NameProblem::Whitespace(name.to_string()));
    }
    if name.starts_with('.') || name.contains(['/', '\\']) || name.chars().any(char::is_control) {
        return Err(NameProblem::NotPlain(name.to_string()));
    }
    Ok(())
}

fn string_field(obj: &Map<String, Value>, key: &str) -> Result<String, Problem> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(Problem::NotAString),
    }
}

fn string_list(obj: &Map<String, Value>, key: &str) -> Result<Vec<String>, Problem> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or(Problem::NotAStringList)
            })
            .collect(),
        Some(_) => Err(Problem::NotAStringList),
    }
}

fn theme_files(dir: &Path) -> Vec<PathBuf> {
    [
        dir.join("theme.json"),
        dir.join("themes").join("theme.json"),
    ]
    .into_iter()
    .filter(|p| p.is_file())
    .collect()
}

/// Resolves `exec`: a path with a separator must stay inside `dir` (also
/// through symlinks); a bare name is a launcher looked up on PATH at spawn.
fn resolve_exec(dir: &Path, exec: &str) -> Result<Exec, Problem> {
    let configured = exec.to_string();
    if !exec.contains('/') && !exec.contains('\\') && exec != "." && exec != ".." {
        return Ok(Exec::Launcher { configured });
    }
    let rel = Path::new(exec);
    if rel.is_absolute() {
        return Err(Problem::ExecAbsolute(configured));
    }
    let inside = crate::safe_fs::lexically_inside(rel)
        .ok_or_else(|| Problem::ExecOutside(configured.clone()))?;
    let path = dir.join(inside);
    if let (Ok(real_dir), Ok(real)) = (dir.canonicalize(), path.canonicalize()) {
        if !real.starts_with(&real_dir) {
            return Err(Problem::ExecSymlink {
                exec: configured,
                real,
            });
        }
    }
    Ok(Exec::Relative { configured, path })
}

impl Manifest {
    /// What the skills module needs of this extension.
    pub fn bundle(&self) -> crate::skills::Bundle<'_> {
        crate::skills::Bundle {
            name: &self.name,
            dir: &self.dir,
            skills: &self.skills,
        }
    }
}

/// Looks `name` up on `search` (default: `PATH`); the error names the
/// directories searched.
pub fn find_on_path(name: &str, search: Option<&std::ffi::OsStr>) -> Result<PathBuf, NotOnPath> {
    let path = search
        .map(ToOwned::to_owned)
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(name);
        if is_executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(NotOnPath {
        name: name.to_string(),
        search: path,
    })
}

/// Why a manifest's `exec` cannot be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecProblem {
    /// A relative `exec` names a directory.
    Directory(PathBuf),
    /// A relative `exec` names nothing.
    Missing(PathBuf),
    /// A relative `exec` names something that is neither a file nor a
    /// directory (a FIFO, a device).
    NotAFile(PathBuf),
    /// A relative `exec` names a file without an execute bit.
    NotExecutable(PathBuf),
    /// A launcher name is not on the search path.
    NotOnPath(NotOnPath),
}

impl std::fmt::Display for ExecProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecProblem::Directory(p) => write!(
                f,
                "executable {} is a directory, not a program; point \"exec\" at the file to run",
                p.display()
            ),
            ExecProblem::Missing(p) => write!(f, "executable {} does not exist", p.display()),
            ExecProblem::NotAFile(p) => {
                write!(f, "executable {} is not a regular file", p.display())
            }
            ExecProblem::NotExecutable(p) => {
                write!(
                    f,
                    "executable {} is not executable (chmod +x it)",
                    p.display()
                )
            }
            ExecProblem::NotOnPath(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for ExecProblem {}

impl Exec {
    /// The program to start: a relative `exec` checked on disk, a launcher
    /// found on `search` (default: `PATH`). The one check of an `exec`
    /// before a start.
    pub fn program(&self, search: Option<&std::ffi::OsStr>) -> Result<PathBuf, ExecProblem> {
        match self {
            Exec::Relative { path, .. } => {
                check_program(path)?;
                Ok(path.clone())
            }
            Exec::Launcher { configured } => {
                find_on_path(configured, search).map_err(ExecProblem::NotOnPath)
            }
        }
    }
}

/// Whether `path` is a program zut can start: a regular file with an
/// execute bit.
pub fn check_program(path: &Path) -> Result<(), ExecProblem> {
    use std::os::unix::fs::PermissionsExt;
    let owned = || path.to_path_buf();
    // One stat answers every question.
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(ExecProblem::Directory(owned())),
        Ok(m) if !m.is_file() => Err(ExecProblem::NotAFile(owned())),
        Ok(m) if m.permissions().mode() & 0o111 != 0 => Ok(()),
        Ok(_) => Err(ExecProblem::NotExecutable(owned())),
        Err(_) => Err(ExecProblem::Missing(owned())),
    }
}

/// A regular file with an execute bit.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_checked_once_with_the_reason() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let problem = check_program(&file).unwrap_err();
        assert_eq!(problem, ExecProblem::NotExecutable(file.clone()));
        assert!(problem.to_string().contains("chmod +x"), "{problem}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(check_program(&file), Ok(()));
        assert!(matches!(
            check_program(dir.path()),
            Err(ExecProblem::Directory(_))
        ));
        let gone = dir.path().join("gone");
        assert!(check_program(&gone)
            .unwrap_err()
            .to_string()
            .ends_with("does not exist"));
        let launcher = Exec::Launcher {
            configured: "no-such-launcher-zut".into(),
        };
        let e = launcher.program(Some(dir.path().as_os_str())).unwrap_err();
        assert!(matches!(e, ExecProblem::NotOnPath(_)), "{e}");
    }

    fn write(dir: &Path, json: &str) {
        std::fs::write(dir.join(MANIFEST_FILE), json).unwrap();
    }

    #[test]
    fn full_manifest_parses() {
        let t = tempfile::tempdir().unwrap();
        write(
            t.path(),
            r#"{"name":"weather","version":"1.0.0","exec":"./bin/weather","args":["--mode","daemon"],
                "language":"go","description":"d","skills":["skills"],"future":1}"#,
        );
        let m = load(t.path()).unwrap();
        assert_eq!(m.name, "weather");
        assert!(m.enabled);
        assert_eq!(m.args, ["--mode", "daemon"]);
        assert_eq!(
            m.exec,
            Some(Exec::Relative {
                configured: "./bin/weather".into(),
                path: t.path().join("bin/weather")
            })
        );
    }

    #[test]
    fn launcher_and_theme_only() {
        let t = tempfile::tempdir().unwrap();
        write(
            t.path(),
            r#"{"name":"n","exec":"node","args":["index.js"],"enabled":false}"#,
        );
        let m = load(t.path()).unwrap();
        assert_eq!(
            m.exec,
            Some(Exec::Launcher {
                configured: "node".into()
            })
        );
        assert!(!m.enabled);
        write(t.path(), r#"{"name":"n"}"#);
        assert_eq!(load(t.path()).unwrap_err().field, Some("exec"));
        std::fs::create_dir(t.path().join("themes")).unwrap();
        std::fs::write(t.path().join("themes/theme.json"), "{}").unwrap();
        assert!(load(t.path()).unwrap().theme_only());
    }

    #[test]
    fn errors_name_directory_and_field() {
        let t = tempfile::tempdir().unwrap();
        for (json, field) in [
            (r#"{"exec":"./x"}"#, "name"),
            (r#"{"name":"../evil","exec":"./x"}"#, "name"),
            (r#"{"name":" pad","exec":"./x"}"#, "name"),
            (r#"{"name":"n","exec":"../../bin/sh"}"#, "exec"),
            (r#"{"name":"n","exec":"/bin/sh"}"#, "exec"),
            (r#"{"name":"n","exec":"./x","args":"--a"}"#, "args"),
            (r#"{"name":"n","exec":"./x","enabled":"yes"}"#, "enabled"),
            (r#"{"name":5,"exec":"./x"}"#, "name"),
        ] {
            write(t.path(), json);
            let e = load(t.path()).unwrap_err();
            assert_eq!(e.field, Some(field), "{json}");
            assert!(
                e.to_string().contains(&t.path().display().to_string()),
                "{e}"
            );
        }
        write(t.path(), r#"{"name":"../evil","exec":"./x"}"#);
        assert!(matches!(
            load(t.path()).unwrap_err().problem,
            Problem::Name(NameProblem::NotPlain(n)) if n == "../evil"
        ));
        write(t.path(), r#"{"name":"n","exec":"/bin/sh"}"#);
        assert_eq!(
            load(t.path()).unwrap_err().to_string(),
            format!(
                "{}: field \"exec\": \"/bin/sh\" is an absolute path; use a path inside the extension directory (\"./sh\") or a launcher name on PATH (\"python3\")",
                t.path().join(MANIFEST_FILE).display()
            )
        );
        write(t.path(), "{not json");
        assert!(load(t.path())
            .unwrap_err()
            .to_string()
            .contains("invalid JSON"));
        std::fs::remove_file(t.path().join(MANIFEST_FILE)).unwrap();
        assert!(load(t.path()).unwrap_err().to_string().contains("missing"));
    }

    #[test]
    fn symlink_escape_is_refused() {
        let t = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/bin/sh", t.path().join("run")).unwrap();
        write(t.path(), r#"{"name":"n","exec":"./run"}"#);
        let e = load(t.path()).unwrap_err();
        assert!(
            matches!(&e.problem, Problem::ExecSymlink { exec, .. } if exec == "./run"),
            "{e}"
        );
        assert!(e.to_string().contains("symlink"), "{e}");
    }

    #[test]
    fn path_lookup_names_the_path() {
        assert!(find_on_path("sh", None).is_ok());
        let e = find_on_path(
            "zut-no-such-launcher",
            Some("/nonexistent-a:/nonexistent-b".as_ref()),
        )
        .unwrap_err();
        assert_eq!(e.name, "zut-no-such-launcher");
        assert_eq!(
            e.to_string(),
            "launcher \"zut-no-such-launcher\" not found on PATH (/nonexistent-a:/nonexistent-b)"
        );
    }
}
