//! Sessions: conversation branches stored as JSON lines, one file each.
//!
//! Layout: `$ZUT_HOME/sessions/<cwd-key>/<id>.jsonl`, where `<cwd-key>` is
//! the project directory made file-safe plus a stable hash ([`cwd_key`]).
//! A file starts with a `session` header row; every later row is appended
//! as it happens: `message`, `extension_state`, `compaction` (see
//! [`row`] and the SESSIONS section of zut(1)).
//!
//! Invariants:
//! - a row reaches the file as one `write` of one whole line, so a crash
//!   can only tear the last row; no fsync per row;
//! - loading never loses a session to a bad row: torn or undecodable rows
//!   are skipped and counted into one [`LoadWarning`] for the file, and
//!   row types this version does not know are skipped silently;
//! - what a [`Session`] holds in memory is always what replaying its file
//!   gives (fork reloads the file it wrote rather than building the branch
//!   by hand);
//! - extension state is capped at [`STATE_LIMIT`] bytes of compact JSON; a
//!   refused state changes nothing, in memory or on disk;
//! - one process writes a session at a time: a session opened for writing
//!   holds an exclusive `flock` on its file for as long as it is open, and
//!   a second opener gets [`SessionError::Busy`] (the front ends then fork
//!   it); read-only views ([`Store::read`]) take no lock;
//! - a transcript is repaired on load ([`repair`]): a call without a
//!   result gets a synthetic error result, a result without a call is
//!   dropped, with one warning; a repair at the end of the file is
//!   written back as a row so the file says what memory holds;
//! - files are read a row at a time (a 1 GB session never costs 1 GB at
//!   once for listing, and loading holds one row besides the messages),
//!   never through a symlink, and created 0600 in directories created 0700;
//! - the messages are held once: [`Session::transcript`] hands out the
//!   list itself ([`Transcript`]), which the engine's agent then appends to
//!   while the session only writes the rows ([`Session::record_message`]),
//!   so a resumed session costs its messages once, not once per holder.

pub mod clock;
pub mod repair;
pub mod row;

use crate::provider::{Block, Message, Role};
use crate::transcript::Transcript;
use row::{Header, Peek, RowIn, RowOut};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The largest extension state accepted, in bytes of compact JSON (256 KiB).
pub const STATE_LIMIT: usize = 256 * 1024;

/// What the summary message of a compaction starts with; the model's
/// summary follows.
pub const SUMMARY_PREFIX: &str = "Summary of the earlier conversation:\n\n";

/// The user message that stands in for compacted history.
pub fn summary_message(summary: &str) -> Message {
    Message::user_text(format!("{SUMMARY_PREFIX}{summary}"))
}

// ----- errors -----

/// Why a session could not be created, opened, written or changed.
#[derive(Debug)]
pub enum SessionError {
    /// Reading or writing a session file or directory failed.
    Io { path: PathBuf, error: io::Error },
    /// No session with this id in this project (or not a valid id).
    Unknown { id: String },
    /// A partial id that more than one session's id starts or ends with.
    Ambiguous { id: String, matches: Vec<String> },
    /// The file's first row is not a session header.
    NotSession { path: PathBuf },
    /// A fork point past the end of the transcript.
    ForkOutOfRange { at: usize, len: usize },
    /// Compaction needs history before the last user turn.
    NothingToCompact,
    /// Another zut process has this session open for writing.
    Busy { path: PathBuf },
    /// The session file is a symbolic link, which zut never follows.
    Symlink { path: PathBuf },
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            SessionError::Unknown { id } => write!(f, "no session {id:?} for this project"),
            SessionError::Ambiguous { id, matches } => {
                let shown = matches.iter().take(3).cloned().collect::<Vec<_>>();
                let more = if matches.len() > 3 { ", …" } else { "" };
                write!(
                    f,
                    "{id:?} matches {} sessions ({}{more}); give more of its id",
                    matches.len(),
                    shown.join(", ")
                )
            }
            SessionError::NotSession { path } => write!(
                f,
                "{} is not a session file: its first row is not a session header",
                path.display()
            ),
            SessionError::ForkOutOfRange { at, len } => write!(
                f,
                "cannot fork at message {at}: the session has {len} messages"
            ),
            SessionError::NothingToCompact => {
                write!(
                    f,
                    "nothing to compact: no history before the last user turn"
                )
            }
            SessionError::Busy { path } => {
                write!(f, "{} is open in another zut process", path.display())
            }
            SessionError::Symlink { path } => write!(
                f,
                "{} is a symbolic link; zut does not follow links to session files",
                path.display()
            ),
        }
    }
}

impl std::error::Error for SessionError {}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> SessionError + '_ {
    move |error| SessionError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Why an extension state was not recorded.
#[derive(Debug)]
pub enum StateError {
    /// Over [`STATE_LIMIT`]: nothing was changed.
    TooLarge { extension: String, bytes: usize },
    /// The extension name is empty: nothing was changed.
    NoName,
    /// Kept in memory, but the row may not have reached the file.
    Write(SessionError),
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::TooLarge { extension, bytes } => write!(
                f,
                "state of extension {extension} not saved: {bytes} bytes of JSON, over the {STATE_LIMIT}-byte limit"
            ),
            StateError::NoName => write!(f, "extension state needs an extension name"),
            StateError::Write(e) => write!(f, "extension state not written: {e}"),
        }
    }
}

impl std::error::Error for StateError {}

/// Rows skipped while loading one file (torn by a crash, or damaged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadWarning {
    pub path: PathBuf,
    pub skipped: usize,
    /// Tool calls without a result, given an error result.
    pub dangling: usize,
    /// Tool results without a call, dropped.
    pub orphans: usize,
}

impl fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural =
            |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
        let mut parts = Vec::new();
        if self.skipped > 0 {
            parts.push(format!(
                "skipped {} unreadable {}",
                self.skipped,
                plural(self.skipped, "row", "rows")
            ));
        }
        if self.dangling > 0 {
            parts.push(format!(
                "{} interrupted tool {} given an error result",
                self.dangling,
                plural(self.dangling, "call", "calls")
            ));
        }
        if self.orphans > 0 {
            parts.push(format!(
                "dropped {} tool {} without a call",
                self.orphans,
                plural(self.orphans, "result", "results")
            ));
        }
        write!(
            f,
            "session file {}: {}",
            self.path.display(),
            parts.join("; ")
        )
    }
}

// ----- the store: one project's directory of sessions -----

/// The sessions of one project directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    cwd: PathBuf,
}

/// One session as listed: enough to pick it without loading it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub id: String,
    pub parent_id: Option<String>,
    pub fork_point: Option<usize>,
    /// RFC 3339, UTC.
    pub created: String,
    /// The file's modification time, RFC 3339, UTC.
    pub updated: String,
    /// The first user prompt, on one line, shortened.
    pub title: String,
    /// Messages in the transcript (after compactions).
    pub messages: usize,
    pub path: PathBuf,
    #[serde(skip)]
    modified: SystemTime,
}

impl Store {
    /// The store of project `cwd` under `$ZUT_HOME` = `home`. `cwd` is made
    /// absolute and resolved (best effort) so every spelling of a
    /// directory finds the same sessions. Nothing is created yet.
    pub fn new(home: &Path, cwd: &Path) -> Store {
        let abs = if cwd.is_absolute() {
            cwd.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|d| d.join(cwd))
                .unwrap_or_else(|_| cwd.to_path_buf())
        };
        let cwd = fs::canonicalize(&abs).unwrap_or(abs);
        Store {
            dir: home.join("sessions").join(cwd_key(&cwd)),
            cwd,
        }
    }

    /// `$ZUT_HOME/sessions/<cwd-key>`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The project directory, absolute.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The file of session `id`, if `id` is a valid id.
    pub fn path_of(&self, id: &str) -> Option<PathBuf> {
        valid_id(id).then(|| self.dir.join(format!("{id}.jsonl")))
    }

    /// The full id that `id` names: itself when that session exists, else
    /// the one session whose id ends or starts with it (at least
    /// [`MIN_PARTIAL_ID`] characters), so the short id the terminal shows
    /// (`171141-2f8f`), its last part (`2f8f`) or a date prefix work
    /// wherever an id is asked for.
    pub fn resolve(&self, id: &str) -> Result<String, SessionError> {
        let unknown = || SessionError::Unknown { id: id.to_string() };
        let path = self.path_of(id).ok_or_else(unknown)?;
        if path.is_file() || id.len() < MIN_PARTIAL_ID {
            return Ok(id.to_string());
        }
        let mut matches: Vec<String> = self
            .files()
            .into_iter()
            .map(|(full, _)| full)
            .filter(|full| full.ends_with(id) || full.starts_with(id))
            .collect();
        match matches.len() {
            0 => Ok(id.to_string()),
            1 => Ok(matches.remove(0)),
            _ => {
                // Newest first, as `zut sessions` lists them.
                matches.sort_unstable_by(|a, b| b.cmp(a));
                Err(SessionError::Ambiguous {
                    id: id.to_string(),
                    matches,
                })
            }
        }
    }

    /// Starts a new, empty session: its file holds the header.
    pub fn create(&self) -> Result<Session, SessionError> {
        let cwd = self.cwd.to_string_lossy().into_owned();
        create_file(&self.dir, None, None, cwd, |_| Ok(()))
    }

    /// Loads session `id`. Skipped rows are reported by
    /// [`Session::warning`].
    pub fn open(&self, id: &str) -> Result<Session, SessionError> {
        let unknown = || SessionError::Unknown { id: id.to_string() };
        let path = self.path_of(&self.resolve(id)?).ok_or_else(unknown)?;
        match Session::load(&path) {
            Err(SessionError::Io { error, .. }) if error.kind() == io::ErrorKind::NotFound => {
                Err(unknown())
            }
            other => other,
        }
    }

    /// Session `id` as a read-only view: no lock is taken, so it can be
    /// read while another process has it open; it must not be written.
    pub fn read(&self, id: &str) -> Result<Session, SessionError> {
        let unknown = || SessionError::Unknown { id: id.to_string() };
        let path = self.path_of(&self.resolve(id)?).ok_or_else(unknown)?;
        match Session::load_as(&path, Access::ReadOnly) {
            Err(SessionError::Io { error, .. }) if error.kind() == io::ErrorKind::NotFound => {
                Err(unknown())
            }
            other => other,
        }
    }

    /// The id of the most recently written session, if any.
    pub fn latest(&self) -> Option<String> {
        self.files()
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)))
            .map(|(id, _)| id)
    }

    /// Every session of this project, most recently written first.
    /// Files that cannot be read are left out.
    pub fn list(&self) -> Vec<Summary> {
        let mut out: Vec<Summary> = self
            .files()
            .into_iter()
            .filter_map(|(id, modified)| summarize(&self.dir.join(format!("{id}.jsonl")), modified))
            .collect();
        out.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| b.id.cmp(&a.id)));
        out
    }

    /// Removes session `id`'s file and returns its full id. Branches
    /// forked from it keep their own copies and stay.
    pub fn delete(&self, id: &str) -> Result<String, SessionError> {
        let full = self.resolve(id)?;
        let path = self
            .path_of(&full)
            .ok_or_else(|| SessionError::Unknown { id: id.into() })?;
        fs::remove_file(&path).map(|()| full).map_err(|error| {
            if error.kind() == io::ErrorKind::NotFound {
                SessionError::Unknown { id: id.into() }
            } else {
                SessionError::Io { path, error }
            }
        })
    }

    /// `(id, mtime)` of every `*.jsonl` with a valid id.
    fn files(&self) -> Vec<(String, SystemTime)> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| {
                let e = e.ok()?;
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".jsonl")?;
                let meta = e.metadata().ok()?;
                (valid_id(id) && meta.is_file()).then(|| {
                    (
                        id.to_string(),
                        meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    )
                })
            })
            .collect()
    }
}

/// A stable, file-safe, readable directory name for project `cwd`: the
/// path's last 48 characters with everything but `[A-Za-z0-9._]` turned
/// into `-`, then `-` and 8 hex digits of a hash of the whole path (so
/// `/a/b-c` and `/a-b/c` differ).
pub fn cwd_key(cwd: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut readable = String::new();
    for c in cwd.to_string_lossy().chars() {
        let c = if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            c
        } else {
            '-'
        };
        if !(c == '-' && readable.ends_with('-')) {
            readable.push(c);
        }
    }
    let readable = readable.trim_matches(|c| c == '-' || c == '.');
    let readable = &readable[readable.len().saturating_sub(48)..];
    let readable = readable.trim_start_matches(['-', '.']);
    let mut h = clock::Fnv::new();
    h.write(cwd.as_os_str().as_bytes());
    let name = if readable.is_empty() {
        "root"
    } else {
        readable
    };
    format!("{name}-{:08x}", h.finish() as u32)
}

/// Ids name files: letters, digits, `-` and `_` only, at most 128.
/// The fewest characters of an id that [`Store::resolve`] completes: fewer
/// would let `zut sessions rm 2` pick a session by one digit.
pub const MIN_PARTIAL_ID: usize = 4;

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Writes a new session file in `dir` (header, then `body`'s rows) and
/// loads it back. The name is claimed with `create_new`, so two zut
/// processes starting in the same second never share a file.
fn create_file(
    dir: &Path,
    parent_id: Option<String>,
    fork_point: Option<usize>,
    cwd: String,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), SessionError>,
) -> Result<Session, SessionError> {
    crate::paths::create_private_dir(dir).map_err(io_at(dir))?;
    let now = SystemTime::now();
    let mut attempt = 0;
    let (id, path, file) = loop {
        let id = clock::session_id(now, attempt);
        let path = dir.join(format!("{id}.jsonl"));
        match OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => break (id, path, file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 64 => attempt += 1,
            Err(e) => return Err(io_at(&path)(e)),
        }
    };
    let header = Header {
        id,
        parent_id,
        cwd,
        fork_point,
        created: clock::rfc3339(clock::unix_seconds(now)),
    };
    let mut bytes = Vec::new();
    row::encode(&RowOut::Session(&header), &mut bytes);
    let written = body(&mut bytes).and_then(|()| {
        let mut file = file;
        file.write_all(&bytes).map_err(io_at(&path))?;
        file.flush().map_err(io_at(&path))
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&path);
        return Err(e);
    }
    Session::load(&path)
}

/// Lists one file without decoding its messages.
fn summarize(path: &Path, modified: SystemTime) -> Option<Summary> {
    let file = open_session_file(path, Access::ReadOnly).ok()?;
    let mut lines = Rows::new(file);
    let Ok(RowIn::Session(header)) = serde_json::from_slice(lines.next()?.ok()?) else {
        return None;
    };
    let mut messages = 0usize;
    let mut title = None;
    while let Some(Ok(line)) = lines.next() {
        let Ok(peek) = serde_json::from_slice::<Peek>(line) else {
            continue;
        };
        match (peek.kind.as_str(), peek.kept) {
            ("message", _) => {
                messages += 1;
                if title.is_none() {
                    if let Ok(RowIn::Message { message, .. }) = serde_json::from_slice(line) {
                        title = prompt_text(&message).map(|t| one_line(&t, 100));
                    }
                }
            }
            ("compaction", Some(kept)) if kept <= messages => messages = messages - kept + 1,
            _ => {}
        }
    }
    Some(Summary {
        id: header.id,
        parent_id: header.parent_id,
        fork_point: header.fork_point,
        created: header.created,
        updated: clock::rfc3339(clock::unix_seconds(modified)),
        title: title.unwrap_or_default(),
        messages,
        path: path.to_path_buf(),
        modified,
    })
}

/// The text of a user prompt (a user message that is not tool results).
pub fn prompt_text(m: &Message) -> Option<String> {
    if m.role != Role::User
        || m.content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
    {
        return None;
    }
    let text: Vec<&str> = m
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    Some(text.join("\n"))
}

/// `s` on one line (whitespace runs become one space), at most `max`
/// characters, an ellipsis marking a cut.
pub fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

// ----- one session -----

/// One state row since the last compaction, with the message count at the
/// moment it was written (for state-at-fork).
#[derive(Debug, Clone)]
struct StateEntry {
    messages: usize,
    extension: String,
    state: Value,
}

/// An open session branch: its transcript and extension states in memory,
/// its file open for appending.
#[derive(Debug)]
pub struct Session {
    header: Header,
    path: PathBuf,
    file: File,
    /// The file does not end in a newline (torn last row, failed write):
    /// the next row starts with one so it is not glued to the fragment.
    torn_tail: bool,
    /// The branch's messages, shared with whoever takes
    /// [`Session::transcript`] (the agent appends to it then).
    messages: Transcript,
    states: BTreeMap<String, Value>,
    /// States as of the last compaction (empty before any): where
    /// state-at-fork starts.
    base_states: BTreeMap<String, Value>,
    /// State rows since the last compaction.
    state_log: Vec<StateEntry>,
    /// Rows after the header, read or written.
    rows: usize,
    warning: Option<LoadWarning>,
}

impl Session {
    /// Loads a session file for writing (see the module invariants).
    pub fn load(path: &Path) -> Result<Session, SessionError> {
        Session::load_as(path, Access::Write)
    }

    fn load_as(path: &Path, access: Access) -> Result<Session, SessionError> {
        let file = open_session_file(path, access)?;
        let reader = file.try_clone().map_err(io_at(path))?;
        let mut lines = Rows::new(reader);
        let header = match lines
            .next()
            .transpose()
            .map_err(io_at(path))?
            .map(serde_json::from_slice::<RowIn>)
        {
            Some(Ok(RowIn::Session(h))) => h,
            _ => {
                return Err(SessionError::NotSession {
                    path: path.to_path_buf(),
                })
            }
        };
        let mut s = Session {
            header,
            path: path.to_path_buf(),
            file,
            torn_tail: false,
            messages: Transcript::default(),
            states: BTreeMap::new(),
            base_states: BTreeMap::new(),
            state_log: Vec::new(),
            rows: 0,
            warning: None,
        };
        let mut skipped = 0;
        while let Some(line) = lines.next() {
            let line = line.map_err(io_at(path))?;
            s.rows += 1;
            let ok = match serde_json::from_slice::<RowIn>(line) {
                Ok(RowIn::Message {
                    mut message,
                    extension,
                }) => {
                    message.from = extension;
                    s.messages.write().push(message);
                    true
                }
                Ok(RowIn::ExtensionState { extension, state }) => {
                    s.apply_state(extension, state);
                    true
                }
                Ok(RowIn::Compaction { summary, kept }) => s.apply_compaction(&summary, kept),
                Ok(RowIn::Unknown) => true,
                // A second header (two files concatenated) carries nothing.
                Ok(RowIn::Session(_)) => true,
                Err(_) => false,
            };
            if !ok {
                skipped += 1;
            }
        }
        s.torn_tail = lines.torn_tail;
        let repairs = repair::repair(&mut s.messages.write());
        for &at in &repairs.inserted {
            for e in s.state_log.iter_mut().filter(|e| e.messages > at) {
                e.messages += 1;
            }
        }
        if let (Some(at), Access::Write) = (repairs.appended, access) {
            // The file ends with the dangling call: the repair belongs
            // right there, so write it and the file says what memory holds.
            let message = s.messages.read()[at].clone();
            let _ = s.write_row(&RowOut::message(&message));
        }
        if skipped > 0 || repairs.any() {
            s.warning = Some(LoadWarning {
                path: path.to_path_buf(),
                skipped,
                dangling: repairs.dangling,
                orphans: repairs.orphans,
            });
        }
        Ok(s)
    }

    pub fn id(&self) -> &str {
        &self.header.id
    }

    pub fn parent_id(&self) -> Option<&str> {
        self.header.parent_id.as_deref()
    }

    pub fn fork_point(&self) -> Option<usize> {
        self.header.fork_point
    }

    /// The project directory, as recorded in the header.
    pub fn cwd(&self) -> &str {
        &self.header.cwd
    }

    /// RFC 3339, UTC.
    pub fn created(&self) -> &str {
        &self.header.created
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rows skipped on load, if any: one warning for the file.
    pub fn warning(&self) -> Option<&LoadWarning> {
        self.warning.as_ref()
    }

    /// The identity extensions see (`hello_ack.session`, session events)
    /// and the JSON stream's `session` event carries.
    pub fn info(&self) -> zut_ext::wire::SessionInfo {
        zut_ext::wire::SessionInfo {
            id: self.header.id.clone(),
            parent_id: self.header.parent_id.clone().unwrap_or_default(),
            path: self.path.to_string_lossy().into_owned(),
            cwd: self.header.cwd.clone(),
            fork_point: self.header.fork_point.unwrap_or(0) as u64,
        }
    }

    /// The transcript of this branch, read under its lock: drop the
    /// guard before anything appends to the session.
    pub fn messages(&self) -> std::sync::RwLockReadGuard<'_, Vec<Message>> {
        self.messages.read()
    }

    /// The transcript itself, shared, not copied: the one list an agent
    /// sends and appends to, the engine's view, and this session's. Whoever
    /// takes it appends the messages itself and records each with
    /// [`Session::record_message`].
    pub fn transcript(&self) -> Transcript {
        self.messages.clone()
    }

    /// Every extension's current state (cleared ones are absent).
    pub fn states(&self) -> &BTreeMap<String, Value> {
        &self.states
    }

    /// Whether nothing but the header was ever recorded.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Removes the file of a session nothing was recorded in (a run that
    /// never got to a prompt), so such runs leave no clutter.
    pub fn discard_if_empty(self) -> Result<bool, SessionError> {
        if !self.is_empty() {
            return Ok(false);
        }
        fs::remove_file(&self.path).map_err(io_at(&self.path))?;
        Ok(true)
    }

    /// Appends a message. It is in the transcript even when the write
    /// fails; the error says the file may lack it.
    pub fn append_message(&mut self, message: &Message) -> Result<(), SessionError> {
        let written = self.record_message(message);
        self.messages.push(message.clone());
        written
    }

    /// Writes `message`'s row (with who added it, [`Message::from`])
    /// without adding it to the transcript: for a caller that appends it
    /// to the shared [`Session::transcript`] itself (right after, before
    /// any state or compaction of this session).
    pub fn record_message(&mut self, message: &Message) -> Result<(), SessionError> {
        self.write_row(&RowOut::message(message))
    }

    /// Records `state` as extension `extension`'s state (`null` clears).
    /// Over [`STATE_LIMIT`] bytes of compact JSON it is refused and the
    /// previous state stays.
    pub fn set_state(&mut self, extension: &str, state: Value) -> Result<(), StateError> {
        if extension.trim().is_empty() {
            return Err(StateError::NoName);
        }
        let bytes = serde_json::to_vec(&state).map(|v| v.len()).unwrap_or(0);
        if bytes > STATE_LIMIT {
            return Err(StateError::TooLarge {
                extension: extension.to_string(),
                bytes,
            });
        }
        let written = self.write_row(&RowOut::ExtensionState {
            extension,
            state: &state,
        });
        self.apply_state(extension.to_string(), state);
        written.map_err(StateError::Write)
    }

    /// Where [`compact`](Self::compact) would cut: the index of the last
    /// user prompt, if there is history before it.
    pub fn compact_point(&self) -> Option<usize> {
        let last = self
            .messages
            .read()
            .iter()
            .rposition(|m| prompt_text(m).is_some())?;
        (last > 0).then_some(last)
    }

    /// Replaces the history before the last user prompt with one summary
    /// message ([`summary_message`]) and records a `compaction` row.
    pub fn compact(&mut self, summary: String) -> Result<(), SessionError> {
        self.compact_with_reason(summary, "manual")
    }

    /// [`Session::compact`] with the row's `reason`: `manual` (`/compact`)
    /// or `auto` (the context was nearly full).
    pub fn compact_with_reason(
        &mut self,
        summary: String,
        reason: &str,
    ) -> Result<(), SessionError> {
        let kept = self.compact_point().ok_or(SessionError::NothingToCompact)?;
        self.write_row(&RowOut::Compaction {
            summary: &summary,
            kept,
            reason,
        })?;
        self.apply_compaction(&summary, kept);
        Ok(())
    }

    /// Starts a new branch holding messages `0..at` (default: all) and each
    /// extension's state as of that point, and returns it; this session is
    /// unchanged. A point right between a tool call and its results moves
    /// past the results, so the pair stays whole.
    pub fn fork(&self, at: Option<usize>) -> Result<Session, SessionError> {
        let all = self.messages.read();
        let len = all.len();
        let mut n = at.unwrap_or(len);
        if n > len {
            return Err(SessionError::ForkOutOfRange { at: n, len });
        }
        if n > 0 && n < len && has_tool_calls(&all[n - 1]) && has_tool_results(&all[n]) {
            n += 1;
        }
        let states = self.states_at(n);
        let messages = &all[..n];
        create_file(
            self.path.parent().unwrap_or(Path::new(".")),
            Some(self.header.id.clone()),
            Some(n),
            self.header.cwd.clone(),
            |out| {
                for message in messages {
                    row::encode(&RowOut::message(message), out);
                }
                for (extension, state) in &states {
                    row::encode(&RowOut::ExtensionState { extension, state }, out);
                }
                Ok(())
            },
        )
    }

    /// Each extension's state as of message count `n`.
    fn states_at(&self, n: usize) -> BTreeMap<String, Value> {
        let mut states = self.base_states.clone();
        for e in self.state_log.iter().take_while(|e| e.messages <= n) {
            set_or_clear(&mut states, e.extension.clone(), e.state.clone());
        }
        states
    }

    fn apply_state(&mut self, extension: String, state: Value) {
        self.state_log.push(StateEntry {
            messages: self.messages.len(),
            extension: extension.clone(),
            state: state.clone(),
        });
        set_or_clear(&mut self.states, extension, state);
    }

    /// Replays a compaction; false (and nothing changed) when `kept` does
    /// not fit this transcript.
    fn apply_compaction(&mut self, summary: &str, kept: usize) -> bool {
        {
            let mut messages = self.messages.write();
            if kept > messages.len() {
                return false;
            }
            messages.splice(..kept, [summary_message(summary)]);
        }
        self.base_states = self.states.clone();
        self.state_log.clear();
        true
    }

    /// Writes one row as one line in one write. After a failure the file
    /// may end in a fragment, so the next row starts on a fresh line.
    fn write_row(&mut self, row: &RowOut<'_>) -> Result<(), SessionError> {
        let mut line = Vec::with_capacity(256);
        if self.torn_tail {
            line.push(b'\n');
        }
        row::encode(row, &mut line);
        let written = self.file.write_all(&line).and_then(|()| self.file.flush());
        self.torn_tail = written.is_err();
        self.rows += 1;
        written.map_err(io_at(&self.path))
    }
}

fn set_or_clear(states: &mut BTreeMap<String, Value>, extension: String, state: Value) {
    if state.is_null() {
        states.remove(&extension);
    } else {
        states.insert(extension, state);
    }
}

fn has_tool_calls(m: &Message) -> bool {
    m.role == Role::Assistant
        && m.content
            .iter()
            .any(|b| matches!(b, Block::ToolCall { .. }))
}

fn has_tool_results(m: &Message) -> bool {
    m.role == Role::User
        && m.content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
}

/// How a session file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// For appending, under an exclusive lock.
    Write,
    /// To read only, without a lock.
    ReadOnly,
}

/// Opens a session file: never through a symlink, never blocking on a
/// FIFO, regular files only; for writing under an exclusive `flock`.
fn open_session_file(path: &Path, access: Access) -> Result<File, SessionError> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    if access == Access::Write {
        options.append(true);
    }
    let file = options.open(path).map_err(|error| {
        if error.raw_os_error() == Some(libc::ELOOP) {
            SessionError::Symlink {
                path: path.to_path_buf(),
            }
        } else {
            SessionError::Io {
                path: path.to_path_buf(),
                error,
            }
        }
    })?;
    let meta = file.metadata().map_err(io_at(path))?;
    if !meta.is_file() {
        return Err(SessionError::Io {
            path: path.to_path_buf(),
            error: io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("it is {}, not a regular file", crate::safe_fs::kind(&meta)),
            ),
        });
    }
    if access == Access::Write {
        use rustix::fs::{flock, FlockOperation};
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(SessionError::Busy {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => log::warn!("cannot lock session file {}: {e}", path.display()),
        }
    }
    Ok(file)
}

/// The non-blank rows of a session file, one at a time (a row is held
/// only while it is looked at).
struct Rows<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
    /// The file did not end in a newline.
    torn_tail: bool,
}

impl<R: io::Read> Rows<R> {
    fn new(reader: R) -> Self {
        Rows {
            reader: BufReader::with_capacity(64 * 1024, reader),
            buf: Vec::new(),
            torn_tail: false,
        }
    }

    /// The next non-blank row (without its newline).
    #[allow(clippy::should_implement_trait)]
    fn next(&mut self) -> Option<io::Result<&[u8]>> {
        loop {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(e)),
            }
            self.torn_tail = self.buf.last() != Some(&b'\n');
            if !self.buf.trim_ascii().is_empty() {
                let end = self.buf.len() - usize::from(!self.torn_tail);
                return Some(Ok(&self.buf[..end]));
            }
        }
    }
}

#[cfg(test)]
mod tests;
