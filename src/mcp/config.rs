//! Which MCP servers to start: `.mcp.json` in the project (Claude Code's
//! file, trust-gated like `.zut/extensions`), `$ZUT_HOME/mcp.json`, and
//! `--mcp-config FILE` for one run.
//!
//! Shape: `{"mcpServers":{"NAME":{"command","args","env","cwd", zut's keys}}}`.
//! `${VAR}` and `${VAR:-default}` are expanded in `command`, `args` and
//! `env`. Entries with a `url` or a `type` other than `stdio` are skipped
//! with a warning. Later sources do not replace earlier ones: the first
//! definition of a name wins (flags, then project, then global).

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default startup deadline (spawn → `tools/list` answered).
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;
/// Overrides [`DEFAULT_STARTUP_TIMEOUT_MS`] for every server without its own key.
pub const STARTUP_TIMEOUT_ENV: &str = "ZUT_MCP_STARTUP_TIMEOUT_MS";

/// One server to start, validated and expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Working directory (default: the project directory).
    pub cwd: Option<PathBuf>,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    pub enabled: bool,
    pub deferred: bool,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Vec<String>,
    /// Calls ask for confirmation unless the tool is read-only.
    pub confirm: bool,
    /// `project`, `global` or `flag`, and the file it came from.
    pub origin: String,
    pub file: PathBuf,
}

/// The servers of every source, and what was skipped and why.
#[derive(Debug, Default)]
pub struct Loaded {
    pub servers: Vec<ServerSpec>,
    /// `(server or file, message)`: skipped entries, unreadable files, an
    /// untrusted project.
    pub warnings: Vec<(String, String)>,
}

/// Where to look.
#[derive(Debug, Clone)]
pub struct Sources {
    pub cwd: PathBuf,
    pub zut_home: PathBuf,
    /// `--mcp-config FILE`, absolute.
    pub files: Vec<PathBuf>,
    /// `--no-mcp`: nothing at all.
    pub none: bool,
}

/// The project's `.mcp.json`.
pub fn project_file(cwd: &Path) -> PathBuf {
    cwd.join(".mcp.json")
}

/// `$ZUT_HOME/mcp.json`.
pub fn global_file(home: &Path) -> PathBuf {
    home.join("mcp.json")
}

/// Reads every source in order (flags, project, global).
pub fn load(src: &Sources) -> Loaded {
    let mut out = Loaded::default();
    if src.none {
        return out;
    }
    let tool_default = Duration::from_millis(env_ms("ZUT_TOOL_TIMEOUT_MS").unwrap_or(60_000));
    let startup_default =
        Duration::from_millis(env_ms(STARTUP_TIMEOUT_ENV).unwrap_or(DEFAULT_STARTUP_TIMEOUT_MS));
    let defaults = (startup_default, tool_default);
    for f in &src.files {
        read_into(&mut out, f, "flag", &src.cwd, defaults, true);
    }
    let project = project_file(&src.cwd);
    if project.is_file() {
        if crate::trust::trust_all() || crate::trust::is_trusted(&src.zut_home, &src.cwd) {
            read_into(&mut out, &project, "project", &src.cwd, defaults, false);
        } else {
            out.warnings.push((
                project.display().to_string(),
                format!(
                    "the MCP servers of {} were not started: this project is not trusted; run zut ext trust {} to allow it",
                    project.display(),
                    src.cwd.display()
                ),
            ));
        }
    }
    read_into(
        &mut out,
        &global_file(&src.zut_home),
        "global",
        &src.cwd,
        defaults,
        false,
    );
    out
}

fn env_ms(var: &str) -> Option<u64> {
    std::env::var(var).ok().and_then(|v| v.trim().parse().ok())
}

/// Reads one file; a missing file is nothing unless it was named.
fn read_into(
    out: &mut Loaded,
    file: &Path,
    origin: &str,
    cwd: &Path,
    defaults: (Duration, Duration),
    named: bool,
) {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        // A home below a regular file has no mcp.json either.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) && !named =>
        {
            return
        }
        Err(e) => {
            out.warnings.push((
                file.display().to_string(),
                format!("cannot read {}: {e}", file.display()),
            ));
            return;
        }
    };
    let doc: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            out.warnings.push((
                file.display().to_string(),
                format!("{} is not valid JSON: {e}", file.display()),
            ));
            return;
        }
    };
    let Some(servers) = doc.get("mcpServers").and_then(Value::as_object) else {
        if doc.get("mcpServers").is_some() {
            out.warnings.push((
                file.display().to_string(),
                format!("{}: mcpServers must be an object", file.display()),
            ));
        }
        return;
    };
    for (name, entry) in servers {
        if out.servers.iter().any(|s| &s.name == name) {
            continue;
        }
        match parse_entry(name, entry, origin, file, cwd, defaults) {
            Ok(Some(spec)) => out.servers.push(spec),
            Ok(None) => {}
            Err(why) => out.warnings.push((name.clone(), why)),
        }
    }
}

/// One entry; `Ok(None)` for `enabled:false`.
pub fn parse_entry(
    name: &str,
    entry: &Value,
    origin: &str,
    file: &Path,
    cwd: &Path,
    defaults: (Duration, Duration),
) -> Result<Option<ServerSpec>, String> {
    let where_ = format!("MCP server {name:?} in {}", file.display());
    let Some(obj) = entry.as_object() else {
        return Err(format!("{where_} is not an object: skipped"));
    };
    if obj.contains_key("url")
        || obj
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "stdio")
    {
        return Err(format!(
            "{where_} was skipped: only stdio servers (a command) are supported, not url or type {:?}",
            obj.get("type").and_then(Value::as_str).unwrap_or("http")
        ));
    }
    if !valid_name(name) {
        return Err(format!(
            "{where_} was skipped: a server name is letters, digits, '_' and '-'"
        ));
    }
    let command = match obj.get("command").and_then(Value::as_str) {
        Some(c) if !c.trim().is_empty() => expand(c),
        _ => return Err(format!("{where_} was skipped: it has no command")),
    };
    let args = match obj.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => {
            let mut v = Vec::new();
            for x in a {
                match x.as_str() {
                    Some(s) => v.push(expand(s)),
                    None => return Err(format!("{where_} was skipped: args must be strings")),
                }
            }
            v
        }
        Some(_) => return Err(format!("{where_} was skipped: args must be an array")),
    };
    let mut env = BTreeMap::new();
    if let Some(e) = obj.get("env") {
        let Some(m) = e.as_object() else {
            return Err(format!("{where_} was skipped: env must be an object"));
        };
        for (k, v) in m {
            let v = match v {
                Value::String(s) => expand(s),
                Value::Null => continue,
                other => other.to_string(),
            };
            env.insert(k.clone(), v);
        }
    }
    let base = file.parent().unwrap_or(cwd);
    let dir = obj
        .get("cwd")
        .and_then(Value::as_str)
        .map(|d| base.join(expand(d)));
    let ms = |k: &str, d: Duration| {
        obj.get(k)
            .and_then(Value::as_u64)
            .map(Duration::from_millis)
            .unwrap_or(d)
    };
    let flag = |k: &str, d: bool| obj.get(k).and_then(Value::as_bool).unwrap_or(d);
    let list = |k: &str| -> Option<Vec<String>> {
        obj.get(k).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
    };
    if !flag("enabled", true) {
        return Ok(None);
    }
    Ok(Some(ServerSpec {
        name: name.to_string(),
        command,
        args,
        env,
        cwd: dir,
        startup_timeout: ms("startup_timeout_ms", defaults.0),
        tool_timeout: ms("tool_timeout_ms", defaults.1),
        enabled: true,
        deferred: flag("deferred", true),
        enabled_tools: list("enabled_tools"),
        disabled_tools: list("disabled_tools").unwrap_or_default(),
        confirm: flag("confirm", true),
        origin: origin.to_string(),
        file: file.to_path_buf(),
    }))
}

/// Server names become part of tool names and log file names.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `${VAR}` and `${VAR:-default}` from the environment; an unset `${VAR}`
/// becomes empty; text without `${` is returned as is.
pub fn expand(s: &str) -> String {
    expand_with(s, &|k| std::env::var(k).ok())
}

/// [`expand`] with another lookup (tests).
pub fn expand_with(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[at..]);
            return out;
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (lookup(var).filter(|v| !v.is_empty()), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {}
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Why a config file could not be read or written back; each names the
/// path at fault.
#[derive(Debug)]
pub enum ConfigFileError {
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    InvalidJson {
        file: PathBuf,
        source: serde_json::Error,
    },
    /// Valid JSON, but not an object.
    NotAnObject(PathBuf),
    Encode(serde_json::Error),
    /// The directory to hold the file could not be created.
    CreateDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// Writing the file (or its temporary copy, `file`) failed.
    Write {
        file: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for ConfigFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigFileError::Read { file, source } => {
                write!(f, "cannot read {}: {source}", file.display())
            }
            ConfigFileError::InvalidJson { file, source } => {
                write!(f, "{} is not valid JSON: {source}", file.display())
            }
            ConfigFileError::NotAnObject(file) => {
                write!(f, "{} is not a JSON object", file.display())
            }
            ConfigFileError::Encode(e) => write!(f, "{e}"),
            ConfigFileError::CreateDir { dir, source } => {
                write!(f, "cannot create {}: {source}", dir.display())
            }
            ConfigFileError::Write { file, source } => {
                write!(f, "cannot write {}: {source}", file.display())
            }
        }
    }
}

impl std::error::Error for ConfigFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigFileError::Read { source, .. }
            | ConfigFileError::CreateDir { source, .. }
            | ConfigFileError::Write { source, .. } => Some(source),
            ConfigFileError::InvalidJson { source, .. } | ConfigFileError::Encode(source) => {
                Some(source)
            }
            ConfigFileError::NotAnObject(_) => None,
        }
    }
}

/// The raw document of a config file, or an empty one when it is missing.
pub fn read_doc(file: &Path) -> Result<Map<String, Value>, ConfigFileError> {
    let owned = || file.to_path_buf();
    match std::fs::read_to_string(file) {
        Ok(t) => match serde_json::from_str::<Value>(&t) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(ConfigFileError::NotAnObject(owned())),
            Err(source) => Err(ConfigFileError::InvalidJson {
                file: owned(),
                source,
            }),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(source) => Err(ConfigFileError::Read {
            file: owned(),
            source,
        }),
    }
}

/// Writes a config document back (pretty, key order kept), atomically.
pub fn write_doc(file: &Path, doc: &Map<String, Value>) -> Result<(), ConfigFileError> {
    let mut text = serde_json::to_string_pretty(doc).map_err(ConfigFileError::Encode)?;
    text.push('\n');
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|source| ConfigFileError::CreateDir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let tmp = dir.join(format!(
        ".{}.tmp",
        file.file_name().and_then(|n| n.to_str()).unwrap_or("mcp")
    ));
    std::fs::write(&tmp, text).map_err(|source| ConfigFileError::Write {
        file: tmp.clone(),
        source,
    })?;
    std::fs::rename(&tmp, file).map_err(|source| ConfigFileError::Write {
        file: file.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expansion_of_set_unset_and_default_variables() {
        let look = |k: &str| (k == "A").then(|| "x".to_string());
        assert_eq!(expand_with("${A}/b", &look), "x/b");
        assert_eq!(expand_with("${B:-dflt}", &look), "dflt");
        assert_eq!(expand_with("${A:-dflt}", &look), "x");
        assert_eq!(expand_with("<${B}>", &look), "<>");
        assert_eq!(expand_with("${open", &look), "${open");
    }

    #[test]
    fn config_files_fail_typed_naming_the_path() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("mcp.json");
        assert!(read_doc(&file).unwrap().is_empty(), "missing is empty");
        std::fs::write(&file, "[1]").unwrap();
        let e = read_doc(&file).unwrap_err();
        assert!(matches!(&e, ConfigFileError::NotAnObject(p) if p == &file));
        assert_eq!(
            e.to_string(),
            format!("{} is not a JSON object", file.display())
        );
        std::fs::write(&file, "{").unwrap();
        assert!(matches!(
            read_doc(&file),
            Err(ConfigFileError::InvalidJson { .. })
        ));
        let mut doc = Map::new();
        doc.insert("mcpServers".into(), Value::Object(Map::new()));
        write_doc(&file, &doc).unwrap();
        assert_eq!(read_doc(&file).unwrap(), doc);
        let below_a_file = file.join("sub").join("mcp.json");
        let e = write_doc(&below_a_file, &doc).unwrap_err();
        assert!(matches!(&e, ConfigFileError::CreateDir { dir, .. } if dir == &file.join("sub")));
        assert!(e
            .to_string()
            .starts_with(&format!("cannot create {}: ", file.join("sub").display())));
    }

    #[test]
    fn url_and_http_entries_are_skipped_with_a_reason() {
        let d = (Duration::from_secs(1), Duration::from_secs(1));
        let f = Path::new("/p/.mcp.json");
        let e = parse_entry("w", &json!({"url":"http://x"}), "project", f, f, d).unwrap_err();
        assert!(e.contains("\"w\"") && e.contains("skipped"), "{e}");
        let e = parse_entry("w", &json!({"type":"sse","command":"x"}), "p", f, f, d).unwrap_err();
        assert!(e.contains("sse"), "{e}");
        let ok = parse_entry(
            "w",
            &json!({"type":"stdio","command":"x","args":["a"],"deferred":false,"confirm":false,"tool_timeout_ms":5}),
            "p",
            f,
            f,
            d,
        )
        .unwrap()
        .unwrap();
        assert!(!ok.deferred && !ok.confirm);
        assert_eq!(ok.tool_timeout, Duration::from_millis(5));
        assert!(
            parse_entry("w", &json!({"command":"x","enabled":false}), "p", f, f, d)
                .unwrap()
                .is_none()
        );
    }
}
