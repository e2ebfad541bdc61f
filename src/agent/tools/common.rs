//! Helpers shared by the built-in tools.
//!
//! - [`Args`] reads the model's JSON arguments; every problem becomes one
//!   `is_error` line naming the tool and the argument
//!   (`bash: "timeout" is required: a positive whole number of seconds`).
//! - [`resolve`] turns a path argument into a path: `~` is the home
//!   directory, relative paths are relative to the tool context's cwd.
//! - [`looks_binary`] is the one binary-file test (read and grep agree).
//! - [`atomic_write`] never leaves a half-written file behind.
//! - [`LineReader`] reads lines with bounded memory, however long they are.

use super::{ToolContext, ToolOutput};
use serde_json::{Map, Value};
use std::fmt::Display;
use std::fs;
use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};

/// How much of a file's start is sniffed for binary content.
pub const SNIFF_BYTES: usize = 8 * 1024;

/// The arguments of one tool call, with error messages that name the tool.
pub struct Args<'a> {
    tool: &'static str,
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// Fails unless `args` is a JSON object.
    pub fn new(tool: &'static str, args: &'a Value) -> Result<Self, ToolOutput> {
        match args {
            Value::Object(map) => Ok(Args { tool, map }),
            other => Err(ToolOutput::error(format!(
                "{tool}: arguments must be a JSON object, got {}",
                brief(other)
            ))),
        }
    }

    /// An error output `TOOL: message`.
    pub fn error(&self, message: impl Display) -> ToolOutput {
        ToolOutput::error(format!("{}: {message}", self.tool))
    }

    /// The value of `name`; `null` counts as absent.
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    fn missing(&self, name: &str, what: &str) -> ToolOutput {
        self.error(format!("\"{name}\" is required: {what}"))
    }

    fn wrong(&self, name: &str, what: &str, got: &Value) -> ToolOutput {
        self.error(format!("\"{name}\" must be {what}, got {}", brief(got)))
    }

    /// A required string; `purpose` says what it is for.
    pub fn string(&self, name: &str, purpose: &str) -> Result<&'a str, ToolOutput> {
        self.opt_string(name, purpose)?
            .ok_or_else(|| self.missing(name, purpose))
    }

    /// An optional string.
    pub fn opt_string(&self, name: &str, purpose: &str) -> Result<Option<&'a str>, ToolOutput> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong(name, &format!("a string ({purpose})"), other)),
        }
    }

    /// A required whole number ≥ 1; `what` describes it, e.g. "a positive
    /// whole number of seconds". `3.0` is accepted, `3.5`, `0`, `-1` and
    /// `"3"` are not.
    pub fn positive(&self, name: &str, what: &str) -> Result<u64, ToolOutput> {
        self.opt_positive(name, what)?
            .ok_or_else(|| self.missing(name, what))
    }

    /// An optional whole number ≥ 1.
    pub fn opt_positive(&self, name: &str, what: &str) -> Result<Option<u64>, ToolOutput> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        match positive_integer(value) {
            Some(n) => Ok(Some(n)),
            None => Err(self.wrong(name, what, value)),
        }
    }

    /// A required array; `purpose` says what it holds.
    pub fn array(&self, name: &str, purpose: &str) -> Result<&'a [Value], ToolOutput> {
        match self.get(name) {
            None => Err(self.missing(name, purpose)),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.wrong(name, &format!("an array ({purpose})"), other)),
        }
    }
}

/// `value` as a whole number ≥ 1, if it is one.
fn positive_integer(value: &Value) -> Option<u64> {
    if let Some(n) = value.as_u64() {
        return (n >= 1).then_some(n);
    }
    let f = value.as_f64()?;
    // Whole floats like 3.0 are fine; 2^53 keeps the conversion exact.
    (f >= 1.0 && f.fract() == 0.0 && f <= 9_007_199_254_740_992.0).then_some(f as u64)
}

/// A short rendering of a JSON value for error messages.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Resolves a path argument: `~` and `~/…` are under `$HOME`, absolute
/// paths stay, anything else is relative to `ctx.cwd`. `.` components are
/// dropped so messages show clean paths (`..` is kept: it may cross a
/// symlink).
pub fn resolve(ctx: &ToolContext, path: &str) -> PathBuf {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    let joined = match (path, path.strip_prefix("~/"), home) {
        ("~", _, Some(home)) => PathBuf::from(home),
        (_, Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => ctx.cwd.join(path),
    };
    joined.components().collect()
}

/// One line for a failed open/read of `path`.
pub fn io_problem(path: &Path, err: &io::Error) -> String {
    match err.kind() {
        io::ErrorKind::NotFound => format!("file not found: {}", path.display()),
        io::ErrorKind::PermissionDenied => format!("permission denied: {}", path.display()),
        _ => format!("cannot read {}: {err}", path.display()),
    }
}

/// Whether a file that starts with `sample` (its first [`SNIFF_BYTES`])
/// is binary: it holds a NUL byte, or it is not UTF-8 and at least a
/// third of it is invalid UTF-8 or control characters. A few stray
/// Latin-1 bytes in a text file do not make it binary.
pub fn looks_binary(sample: &[u8]) -> bool {
    if sample.contains(&0) {
        return true;
    }
    let mut odd = 0usize;
    let mut chunks = sample.utf8_chunks().peekable();
    let mut valid = true;
    while let Some(chunk) = chunks.next() {
        odd += chunk
            .valid()
            .chars()
            .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\x0c' | '\x1b'))
            .count();
        // An incomplete character at the very end is the sample's cut,
        // not bad data.
        let last = chunks.peek().is_none();
        let invalid = chunk.invalid().len();
        if invalid > 0 && !(last && sample.len() >= SNIFF_BYTES && invalid < 4) {
            valid = false;
            odd += invalid;
        }
    }
    !valid && odd * 3 >= sample.len()
}

/// Reads up to `max` bytes from `reader` (fewer only at end of file).
pub fn read_prefix(reader: &mut impl Read, max: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(max.min(64 * 1024));
    reader.take(max as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory is written, synced and renamed over the target. Missing
/// parent directories are created; an existing file keeps its permission
/// bits, a new one gets the usual `0666 & !umask`. A symlink is written
/// through (its target is replaced, the link stays).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;
    let existing = match fs::metadata(&target) {
        // Replacing a FIFO or a device node with a regular file would
        // report success while destroying what was there (as root,
        // `/dev/zero` itself).
        Ok(meta) if !meta.is_file() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("it is {}, not a regular file", crate::safe_fs::kind(&meta)),
            ))
        }
        Ok(meta) => Some(meta.permissions()),
        Err(_) => None,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".zut-write-")
        .suffix(".tmp")
        .permissions(new_file_permissions())
        .tempfile_in(&dir)?;
    if let Some(perms) = existing {
        tmp.as_file().set_permissions(perms)?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// `0666`; the umask applies when the file is created.
fn new_file_permissions() -> fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    fs::Permissions::from_mode(0o666)
}

/// Reads lines (split on `\n`) keeping at most `keep` bytes of each, so a
/// gigabyte-long line costs no more memory than a short one.
pub struct LineReader<R> {
    inner: R,
    keep: usize,
}

/// `fill_buf` retried on `Interrupted`. The loop only checks; the buffer
/// comes from a second call, which returns what the first one filled (a
/// borrow returned from inside the loop would not compile).
fn fill<R: BufRead>(inner: &mut R) -> io::Result<&[u8]> {
    loop {
        match inner.fill_buf() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(_) => break,
        }
    }
    inner.fill_buf()
}

/// One line from a [`LineReader`].
pub struct Line {
    /// The first bytes of the line, without the `\n`.
    pub bytes: Vec<u8>,
    /// The full length of the line without the `\n`.
    pub len: usize,
}

impl<R: BufRead> LineReader<R> {
    /// Reads from `inner`, keeping up to `keep` bytes of each line.
    pub fn new(inner: R, keep: usize) -> Self {
        LineReader { inner, keep }
    }

    /// The next line, or `None` at end of input.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut line = Line {
            bytes: Vec::new(),
            len: 0,
        };
        let mut any = false;
        loop {
            let buf = fill(&mut self.inner)?;
            if buf.is_empty() {
                return Ok(any.then_some(line));
            }
            any = true;
            let (part, used, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            let room = self.keep.saturating_sub(line.bytes.len());
            line.bytes.extend_from_slice(&part[..part.len().min(room)]);
            line.len += part.len();
            self.inner.consume(used);
            if done {
                return Ok(Some(line));
            }
        }
    }

    /// Counts the remaining lines without keeping any of them.
    pub fn count_rest(&mut self) -> io::Result<u64> {
        let mut count = 0u64;
        let mut open = false;
        loop {
            let buf = fill(&mut self.inner)?;
            if buf.is_empty() {
                return Ok(count + u64::from(open));
            }
            count += buf.iter().filter(|&&b| b == b'\n').count() as u64;
            open = buf.last() != Some(&b'\n');
            let used = buf.len();
            self.inner.consume(used);
        }
    }
}

/// Test helpers shared by the tools' unit tests.
#[cfg(test)]
pub mod testing {
    use super::super::{ToolContext, ToolOutput};
    use crate::provider::ContentBlock;

    /// The text blocks of `out`, joined by newlines.
    pub fn text(out: &ToolOutput) -> String {
        out.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A context rooted in a fresh temporary directory (kept alive by the
    /// returned guard).
    pub fn context() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let cwd = dir.path().to_path_buf();
        (dir, ToolContext { cwd })
    }

    /// Makes a FIFO (named pipe) at `path`.
    pub fn mkfifo(path: &std::path::Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    }

    /// Runs `f` on another thread and fails the test if it has not
    /// returned within 20 s (a blocking open of a FIFO never would).
    pub fn within_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || tx.send(f()));
        rx.recv_timeout(std::time::Duration::from_secs(20))
            .expect("the tool returns instead of blocking")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(out: ToolOutput) -> String {
        assert!(out.is_error);
        match &out.content[0] {
            zut_ext::wire::ContentBlock::Text { text } => text.clone(),
            other => panic!("unexpected block {other:?}"),
        }
    }

    #[test]
    fn positive_numbers_are_strict() {
        let args = json!({"a": 3, "b": 3.0, "c": 3.5, "d": 0, "e": -2, "f": "3", "g": null});
        let a = Args::new("t", &args).unwrap();
        assert_eq!(a.positive("a", "n").unwrap(), 3);
        assert_eq!(a.positive("b", "n").unwrap(), 3);
        for bad in ["c", "d", "e", "f"] {
            let err = message(a.positive(bad, "a positive whole number").unwrap_err());
            assert!(err.starts_with(&format!(
                "t: \"{bad}\" must be a positive whole number, got"
            )));
        }
        assert_eq!(
            message(
                a.positive("g", "a positive whole number of seconds")
                    .unwrap_err()
            ),
            "t: \"g\" is required: a positive whole number of seconds"
        );
        assert_eq!(a.opt_positive("missing", "n").unwrap(), None);
    }

    #[test]
    fn strings_and_non_objects() {
        let args = json!({"s": "x", "n": 1});
        let a = Args::new("t", &args).unwrap();
        assert_eq!(a.string("s", "p").unwrap(), "x");
        assert_eq!(
            message(a.string("n", "the file").unwrap_err()),
            "t: \"n\" must be a string (the file), got 1"
        );
        assert_eq!(
            message(a.string("z", "the file").unwrap_err()),
            "t: \"z\" is required: the file"
        );
        let err = message(Args::new("t", &json!([1])).err().unwrap());
        assert_eq!(err, "t: arguments must be a JSON object, got [1]");
    }

    #[test]
    fn resolves_relative_to_cwd() {
        let ctx = ToolContext {
            cwd: PathBuf::from("/project"),
        };
        assert_eq!(resolve(&ctx, "src/a.rs"), Path::new("/project/src/a.rs"));
        assert_eq!(resolve(&ctx, "/etc/x"), Path::new("/etc/x"));
        assert_eq!(resolve(&ctx, "."), Path::new("/project"));
        assert_eq!(resolve(&ctx, "./a/./b"), Path::new("/project/a/b"));
    }

    #[test]
    fn binary_sniffing() {
        assert!(!looks_binary(b"plain text\n\twith tabs\r\n"));
        assert!(!looks_binary("héllo wörld".as_bytes()));
        assert!(looks_binary(b"ab\0cd"));
        assert!(!looks_binary(b"caf\xe9 au lait, a Latin-1 text file"));
        assert!(looks_binary(&[0xff, 0xfe, 0x80, 0x81, 0x90, b'a', 0xc3]));
        // A multi-byte character cut by the sample's end is not binary.
        let mut sample = "é".repeat(SNIFF_BYTES / 2).into_bytes();
        sample.truncate(SNIFF_BYTES - 1);
        sample.push(0xc3);
        assert!(!looks_binary(&sample));
    }

    #[test]
    fn line_reader_bounds_memory_and_counts() {
        let text = format!("short\n{}\nlast", "x".repeat(100));
        let mut lines = LineReader::new(io::Cursor::new(text.as_bytes()), 10);
        let first = lines.next_line().unwrap().unwrap();
        assert_eq!((first.bytes.as_slice(), first.len), (&b"short"[..], 5));
        let long = lines.next_line().unwrap().unwrap();
        assert_eq!((long.bytes.len(), long.len), (10, 100));
        assert_eq!(lines.count_rest().unwrap(), 1);
        let mut lines = LineReader::new(io::Cursor::new(&b"a\nb\n"[..]), 10);
        assert_eq!(lines.count_rest().unwrap(), 2);
    }

    #[test]
    fn atomic_write_creates_dirs_and_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c.txt");
        atomic_write(&path, b"one").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
        atomic_write(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o751);
        let leftovers = fs::read_dir(path.parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file is left behind");
    }

    #[test]
    fn atomic_write_goes_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        let link = dir.path().join("link.txt");
        fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        atomic_write(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
    }
}
