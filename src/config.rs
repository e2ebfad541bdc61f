//! `config.json` and `auth.json` under `$ZUT_HOME` (see zut(1), FILES).
//!
//! `config.json` holds the defaults the command line can override:
//! `{"provider":…,"model":…,"base_url":…}`, every key optional. Keys this
//! version does not know are kept in [`Config::extra`] and written back on
//! save, so an older zut never erases a newer one's settings.
//!
//! `auth.json` holds API keys per provider:
//! `{"anthropic":{"api_key":"…"},"openai":{"api_key":"…"}}`; a plain string
//! (`{"openai":"sk-…"}`) is accepted too. It is written with mode 0600.
//!
//! `config.json` also records `zut ext enable|disable` choices under
//! [`EXTENSIONS_ENABLED_KEY`], so that enabling or disabling an extension
//! never edits the extension's own files.
//!
//! Invariants: a missing file means defaults; a corrupt file is an error
//! naming its path, never silently replaced; writes are atomic (temporary
//! file in the same directory, then rename), so a crash leaves either the
//! old or the new file.
//!
//! Several zut processes change `config.json` (`zut ext enable|disable`,
//! `/model`, the terminal's theme, the provider a run remembers): every
//! change is a read-modify-write ([`update`], [`set_extension_enabled`])
//! under an exclusive `flock` on `config.json.lock` beside it (created
//! 0600, never removed, so every process locks the same file), so two at
//! once never lose one's change. The lock is waited for at most
//! [`LOCK_WAIT`] (`ZUT_CONFIG_LOCK_MS` sets another, in milliseconds);
//! then the change fails with an error naming the lock file. Readers take
//! no lock: the rename makes every read see a whole file.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A failure reading or writing one of the files, one line naming the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// The contents of `config.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// `anthropic`, `openai` or `script`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Keys this version does not know, preserved on save.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `$ZUT_HOME/config.json`.
pub fn config_path(home: &Path) -> PathBuf {
    home.join("config.json")
}

/// `$ZUT_HOME/auth.json`.
pub fn auth_path(home: &Path) -> PathBuf {
    home.join("auth.json")
}

/// Reads `config.json`; a missing file gives the defaults.
pub fn load(home: &Path) -> Result<Config, ConfigError> {
    let path = config_path(home);
    match read_optional(&path)? {
        None => Ok(Config::default()),
        Some(text) => serde_json::from_str(&text).map_err(|e| parse_error(&path, &e)),
    }
}

/// Writes `config.json` atomically, creating `$ZUT_HOME` if needed. It
/// replaces the whole file: to change some keys, use [`update`], which
/// cannot lose another process's change.
pub fn save(home: &Path, config: &Config) -> Result<(), ConfigError> {
    let _lock = ConfigLock::take(home)?;
    save_unlocked(home, config)
}

fn save_unlocked(home: &Path, config: &Config) -> Result<(), ConfigError> {
    let path = config_path(home);
    let text = pretty(&path, config)?;
    write_atomic(&path, text.as_bytes(), 0o644)
}

/// Changes `config.json` in one read-modify-write under the lock (see the
/// module doc): `change` gets the file as it is now and says whether it
/// changed anything; only then is the file written. A corrupt file is an
/// error and is left as it was.
pub fn update(home: &Path, change: impl FnOnce(&mut Config) -> bool) -> Result<(), ConfigError> {
    let _lock = ConfigLock::take(home)?;
    let mut config = load(home)?;
    if change(&mut config) {
        save_unlocked(home, &config)?;
    }
    Ok(())
}

/// The longest a change of `config.json` waits for another process's.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// `$ZUT_HOME/config.json.lock`.
pub fn lock_path(home: &Path) -> PathBuf {
    home.join("config.json.lock")
}

/// An exclusive `flock` on `config.json.lock`, held until dropped (closing
/// the file releases it, also when the process dies).
struct ConfigLock {
    _file: std::fs::File,
}

impl ConfigLock {
    fn take(home: &Path) -> Result<ConfigLock, ConfigError> {
        use rustix::fs::{flock, FlockOperation};
        use std::os::unix::fs::OpenOptionsExt;
        let path = lock_path(home);
        let fail = |e: &dyn std::fmt::Display| {
            ConfigError(format!(
                "cannot lock {} to change {}: {e}",
                path.display(),
                config_path(home).display()
            ))
        };
        crate::paths::create_private_dir(home).map_err(|e| fail(&e))?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| fail(&e))?;
        let wait = std::env::var("ZUT_CONFIG_LOCK_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(LOCK_WAIT, std::time::Duration::from_millis);
        let deadline = std::time::Instant::now() + wait;
        // flock has no timeout: try, then back off (1 ms doubling to 50 ms)
        // until the deadline.
        let mut pause = std::time::Duration::from_millis(1);
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(ConfigLock { _file: file }),
                Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(fail(&e)),
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return Err(fail(&format_args!(
                    "another zut process has held it for {} ms (a lock ends with its process, so try again when that zut is done)",
                    wait.as_millis()
                )));
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(std::time::Duration::from_millis(50));
        }
    }
}

/// The key of `config.json` that holds what `zut ext enable|disable` chose:
/// `{"global": {"<dir name>": bool}, "project": {"<abs dir>": bool}}`.
pub const EXTENSIONS_ENABLED_KEY: &str = "extensions_enabled";

/// Which installed extension an enabled/disabled choice is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ExtensionKey {
    /// `$ZUT_HOME/extensions/<name>`, by its directory name (which the
    /// install and update of `<name>` keep), wherever `$ZUT_HOME` moves.
    Global(String),
    /// A project extension, by its absolute directory (the project
    /// directory with symbolic links resolved, `.zut/extensions/<name>`):
    /// disabling `foo` in one project touches neither another project's
    /// `foo` nor the global one.
    Project(PathBuf),
}

/// The choices recorded under [`EXTENSIONS_ENABLED_KEY`]. An extension
/// without one follows its manifest's `enabled`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtensionsEnabled {
    pub choices: std::collections::HashMap<ExtensionKey, bool>,
}

impl ExtensionsEnabled {
    /// The recorded choice for `key`, if any.
    pub fn get(&self, key: &ExtensionKey) -> Option<bool> {
        self.choices.get(key).copied()
    }
}

/// Reads the enabled/disabled choices from `config.json`; a missing file
/// or key means none. A malformed value is an error naming the file.
pub fn extensions_enabled(home: &Path) -> Result<ExtensionsEnabled, ConfigError> {
    let path = config_path(home);
    let root = load_object(&path)?;
    let mut out = ExtensionsEnabled::default();
    let Some(value) = root.get(EXTENSIONS_ENABLED_KEY) else {
        return Ok(out);
    };
    let bad = |what: &str| {
        ConfigError(format!(
            "{}: \"{EXTENSIONS_ENABLED_KEY}\" {what} (fix or delete the key)",
            path.display()
        ))
    };
    let Value::Object(scopes) = value else {
        return Err(bad(
            "must be an object with \"global\" and \"project\" objects",
        ));
    };
    for (scope, entries) in scopes {
        let Value::Object(entries) = entries else {
            return Err(bad(&format!("has \"{scope}\" that is not an object")));
        };
        for (name, enabled) in entries {
            let Value::Bool(enabled) = enabled else {
                return Err(bad(&format!(
                    "has \"{scope}\": {{\"{name}\": …}} that is not true or false"
                )));
            };
            let key = match scope.as_str() {
                "global" => ExtensionKey::Global(name.clone()),
                "project" => ExtensionKey::Project(PathBuf::from(name)),
                // A newer zut's scope: kept on save, ignored here.
                _ => continue,
            };
            out.choices.insert(key, *enabled);
        }
    }
    Ok(out)
}

/// Records (`Some`) or forgets (`None`) the enabled/disabled choice for
/// `key` in `config.json`: read, change that one entry, write atomically
/// (mode 0600), every other key and its order kept, all under the lock
/// (see the module doc). A corrupt file is an error and is left as it was.
pub fn set_extension_enabled(
    home: &Path,
    key: &ExtensionKey,
    enabled: Option<bool>,
) -> Result<(), ConfigError> {
    let _lock = ConfigLock::take(home)?;
    let path = config_path(home);
    let mut root = load_object(&path)?;
    // Validates what is there before changing it.
    extensions_enabled(home)?;
    let (scope, name) = match key {
        ExtensionKey::Global(n) => ("global", n.clone()),
        ExtensionKey::Project(p) => ("project", p.to_string_lossy().into_owned()),
    };
    let state = root
        .entry(EXTENSIONS_ENABLED_KEY.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(scopes) = state else {
        unreachable!("validated above");
    };
    let entries = scopes
        .entry(scope.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(entries) = entries else {
        unreachable!("validated above");
    };
    match enabled {
        Some(b) => {
            entries.insert(name, Value::Bool(b));
        }
        None => {
            entries.shift_remove(&name);
        }
    }
    if entries.is_empty() {
        scopes.shift_remove(scope);
    }
    if scopes.is_empty() {
        root.shift_remove(EXTENSIONS_ENABLED_KEY);
    }
    let text = pretty(&path, &root)?;
    write_atomic(&path, text.as_bytes(), 0o600)
}

/// `config.json` as its top-level object; missing file = empty.
fn load_object(path: &Path) -> Result<Map<String, Value>, ConfigError> {
    match read_optional(path)? {
        None => Ok(Map::new()),
        Some(text) => match serde_json::from_str(&text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(ConfigError(format!(
                "{} is not valid: it must be a JSON object (fix or delete the file)",
                path.display()
            ))),
            Err(e) => Err(parse_error(path, &e)),
        },
    }
}

/// The API key `auth.json` holds for `provider`, if any. A missing file or
/// entry, or an empty key, is `None`.
pub fn api_key(home: &Path, provider: &str) -> Result<Option<String>, ConfigError> {
    let path = auth_path(home);
    let auth = load_auth(&path)?;
    match auth.get(provider) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(key)) => Ok(non_empty(key)),
        Some(Value::Object(entry)) => match entry.get("api_key") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(key)) => Ok(non_empty(key)),
            Some(_) => Err(bad_auth_entry(&path, provider)),
        },
        Some(_) => Err(bad_auth_entry(&path, provider)),
    }
}

/// Stores `key` for `provider` in `auth.json` (mode 0600), keeping every
/// other entry and any other fields of this provider's entry.
pub fn save_api_key(home: &Path, provider: &str, key: &str) -> Result<(), ConfigError> {
    let path = auth_path(home);
    let mut auth = load_auth(&path)?;
    let entry = auth
        .entry(provider.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(fields) = entry {
        fields.insert("api_key".to_string(), Value::String(key.to_string()));
    }
    let text = pretty(&path, &auth)?;
    write_atomic(&path, text.as_bytes(), 0o600)
}

/// Parses `auth.json` into its top-level object; missing file = empty.
/// A file other users can read gets one warning on stderr per process.
fn load_auth(path: &Path) -> Result<Map<String, Value>, ConfigError> {
    if let Some(warning) = exposed_warning(path) {
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            log::warn!("{warning}");
            eprintln!("{warning}");
        });
    }
    match read_optional(path)? {
        None => Ok(Map::new()),
        Some(text) => serde_json::from_str(&text).map_err(|e| parse_error(path, &e)),
    }
}

/// The warning for a secrets file every user can read, if `path` is one.
pub fn exposed_warning(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode();
    (mode & 0o004 != 0).then(|| {
        format!(
            "zut: warning: {} is readable by every user of this machine and holds API keys; run: chmod 600 {}",
            path.display(),
            path.display()
        )
    })
}

fn non_empty(key: &str) -> Option<String> {
    let key = key.trim();
    (!key.is_empty()).then(|| key.to_string())
}

fn bad_auth_entry(path: &Path, provider: &str) -> ConfigError {
    ConfigError(format!(
        "{}: \"{provider}\" must be {{\"api_key\": \"KEY\"}} or a string",
        path.display()
    ))
}

/// The file's text, or `None` when it does not exist (also when a
/// component of its directory is not a directory: nothing is there).
fn read_optional(path: &Path) -> Result<Option<String>, ConfigError> {
    match crate::safe_fs::read_regular_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Ok(None),
        Err(e) => Err(ConfigError(format!("cannot read {}: {e}", path.display()))),
    }
}

fn parse_error(path: &Path, e: &serde_json::Error) -> ConfigError {
    ConfigError(format!(
        "{} is not valid: {e} (fix or delete the file)",
        path.display()
    ))
}

fn pretty(path: &Path, value: &impl Serialize) -> Result<String, ConfigError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| ConfigError(format!("cannot encode {}: {e}", path.display())))?;
    text.push('\n');
    Ok(text)
}

/// Replaces `path` with `bytes` atomically; the file ends with `mode` on
/// Unix (set before the rename, so a secret is never briefly readable).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), ConfigError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        ConfigError(format!("cannot {what} {}: {e}", path.display()))
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    crate::paths::create_private_dir(dir).map_err(|e| fail("create the directory for", &e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail("write", &e))?;
    set_mode(tmp.as_file(), mode).map_err(|e| fail("set permissions of", &e))?;
    tmp.write_all(bytes).map_err(|e| fail("write", &e))?;
    tmp.as_file().sync_all().map_err(|e| fail("write", &e))?;
    tmp.persist(path).map_err(|e| fail("replace", &e.error))?;
    Ok(())
}

#[cfg(unix)]
fn set_mode(file: &std::fs::File, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &std::fs::File, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_mean_defaults() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).unwrap(), Config::default());
        assert_eq!(api_key(dir.path(), "openai").unwrap(), None);
    }

    #[test]
    fn save_creates_home_and_keeps_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("nested/home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            config_path(&home),
            r#"{"model":"m1","theme":{"name":"dark"},"provider":null}"#,
        )
        .unwrap();
        let mut cfg = load(&home).unwrap();
        assert_eq!(cfg.model.as_deref(), Some("m1"));
        assert_eq!(cfg.provider, None);
        cfg.provider = Some("openai".into());
        save(&home, &cfg).unwrap();
        let raw: Value =
            serde_json::from_str(&std::fs::read_to_string(config_path(&home)).unwrap()).unwrap();
        assert_eq!(
            raw,
            serde_json::json!({"provider":"openai","model":"m1","theme":{"name":"dark"}})
        );

        let fresh = dir.path().join("does/not/exist");
        save(&fresh, &Config::default()).unwrap();
        assert!(config_path(&fresh).exists());
    }

    #[test]
    fn corrupt_files_are_errors_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(config_path(dir.path()), "{not json").unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("config.json"), "{err}");
        std::fs::write(config_path(dir.path()), r#"{"model":5}"#).unwrap();
        assert!(load(dir.path()).is_err());

        std::fs::write(auth_path(dir.path()), "[1,2]").unwrap();
        let err = api_key(dir.path(), "openai").unwrap_err().to_string();
        assert!(err.contains("auth.json"), "{err}");
        // A corrupt auth.json is never overwritten.
        assert!(save_api_key(dir.path(), "openai", "k").is_err());
        assert_eq!(
            std::fs::read_to_string(auth_path(dir.path())).unwrap(),
            "[1,2]"
        );
    }

    #[test]
    fn extension_choices_round_trip_and_keep_other_keys() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        std::fs::write(
            config_path(home),
            r#"{"provider":"openai","model":"m","theme":{"name":"dark"}}"#,
        )
        .unwrap();
        let foo = ExtensionKey::Global("foo".into());
        let bar = ExtensionKey::Project(PathBuf::from("/p/.zut/extensions/bar"));
        set_extension_enabled(home, &foo, Some(false)).unwrap();
        set_extension_enabled(home, &bar, Some(true)).unwrap();
        let got = extensions_enabled(home).unwrap();
        assert_eq!(got.get(&foo), Some(false));
        assert_eq!(got.get(&bar), Some(true));
        assert_eq!(got.get(&ExtensionKey::Global("bar".into())), None);
        let raw: Value =
            serde_json::from_str(&std::fs::read_to_string(config_path(home)).unwrap()).unwrap();
        assert_eq!(
            raw,
            serde_json::json!({"provider":"openai","model":"m","theme":{"name":"dark"},
                "extensions_enabled":{"global":{"foo":false},"project":{"/p/.zut/extensions/bar":true}}})
        );
        // Forgetting both removes the key altogether.
        set_extension_enabled(home, &foo, None).unwrap();
        set_extension_enabled(home, &bar, None).unwrap();
        let raw: Value =
            serde_json::from_str(&std::fs::read_to_string(config_path(home)).unwrap()).unwrap();
        assert_eq!(
            raw,
            serde_json::json!({"provider":"openai","model":"m","theme":{"name":"dark"}})
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(config_path(home))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn malformed_extension_choices_are_errors_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let key = ExtensionKey::Global("foo".into());
        for text in [
            r#"{"extensions_enabled":{"global":{"foo":"no"}}}"#,
            r#"{"extensions_enabled":[]}"#,
            "[1]",
            "{oops",
        ] {
            std::fs::write(config_path(home), text).unwrap();
            let e = extensions_enabled(home).unwrap_err().to_string();
            assert!(e.contains("config.json"), "{text}: {e}");
            assert!(set_extension_enabled(home, &key, Some(false)).is_err());
            assert_eq!(std::fs::read_to_string(config_path(home)).unwrap(), text);
        }
    }

    #[test]
    fn auth_accepts_both_shapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            auth_path(dir.path()),
            r#"{"anthropic":{"api_key":"sk-ant"},"openai":"sk-oa","other":{"api_key":""},"bad":3}"#,
        )
        .unwrap();
        let key = |p| api_key(dir.path(), p);
        assert_eq!(key("anthropic").unwrap().as_deref(), Some("sk-ant"));
        assert_eq!(key("openai").unwrap().as_deref(), Some("sk-oa"));
        assert_eq!(key("other").unwrap(), None);
        assert_eq!(key("missing").unwrap(), None);
        assert!(key("bad").unwrap_err().to_string().contains("\"bad\""));
    }

    #[test]
    fn save_api_key_merges_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            auth_path(dir.path()),
            r#"{"openai":{"api_key":"old","org":"o1"},"anthropic":"a"}"#,
        )
        .unwrap();
        save_api_key(dir.path(), "openai", "new").unwrap();
        let raw: Value =
            serde_json::from_str(&std::fs::read_to_string(auth_path(dir.path())).unwrap()).unwrap();
        assert_eq!(
            raw,
            serde_json::json!({"openai":{"api_key":"new","org":"o1"},"anthropic":"a"})
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(auth_path(dir.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
