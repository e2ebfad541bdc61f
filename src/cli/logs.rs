//! `zut ext logs <name> [-f|--follow]`: print an extension's stderr log,
//! and with `--follow` keep printing what is appended, like `tail -F`.
//!
//! Following polls the file every [`FOLLOW_POLL`] (a cancellable wait, so
//! SIGINT ends it at once); a file that shrinks was truncated and is read
//! again from the start, a file replaced under the same path (rotated,
//! recreated by the next zut start) is reopened. When stdout is a terminal
//! the bytes are stripped of control sequences: the log is written by the
//! extension and is untrusted.

use super::{Failure, Io, Outcome};
use crate::host::manifest;
use crate::sanitize::Sanitizer;
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

/// How often `--follow` looks for new bytes.
pub(crate) const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Prints the log of `name`; follows it when `follow`.
pub(crate) fn logs(name: &str, follow: bool, zut_home: &Path, io: &mut Io<'_>) -> Outcome {
    manifest::check_name(name)
        .map_err(|m| Failure::Usage(format!("invalid extension name: {m}")))?;
    let path = crate::paths::ext_log(zut_home, name);
    let mut file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(format!(
                "no log for \"{name}\" at {}; zut writes it when it starts the extension",
                path.display()
            )
            .into())
        }
        Err(e) => return Err(format!("cannot read {}: {e}", path.display()).into()),
    };
    let mut printer = Printer {
        sanitizer: io.out_is_tty.then(Sanitizer::default),
    };
    let mut pos = printer.copy_rest(&mut file, io)?;
    if !follow {
        return printer.finish(io);
    }
    let mut ino = file.metadata().map(|m| m.ino()).unwrap_or(0);
    while io.cancel.sleep(FOLLOW_POLL) {
        if let Ok(meta) = std::fs::metadata(&path) {
            if meta.ino() != ino {
                if let Ok(f) = File::open(&path) {
                    let _ = writeln!(
                        io.err,
                        "zut ext logs: {} was replaced; following the new file",
                        path.display()
                    );
                    file = f;
                    ino = meta.ino();
                    pos = 0;
                }
            }
        }
        let len = file.metadata().map(|m| m.len()).unwrap_or(pos);
        if len < pos {
            let _ = writeln!(io.err, "zut ext logs: {} was truncated", path.display());
            pos = 0;
        }
        if len != pos {
            file.seek(SeekFrom::Start(pos))
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            pos += printer.copy_rest(&mut file, io)?;
        }
    }
    Ok(())
}

/// Copies bytes to stdout, sanitised when it is a terminal.
struct Printer {
    sanitizer: Option<Sanitizer>,
}

impl Printer {
    /// Copies from the current position to the end; returns the count read.
    fn copy_rest(&mut self, file: &mut File, io: &mut Io<'_>) -> Outcome<u64> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut clean = Vec::new();
        let mut total = 0u64;
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("cannot read the log: {e}").into()),
            };
            total += n as u64;
            let bytes = match &mut self.sanitizer {
                Some(s) => {
                    clean.clear();
                    s.push(&buf[..n], &mut clean);
                    &clean[..]
                }
                None => &buf[..n],
            };
            write_out(io, bytes)?;
        }
        io.out.flush().map_err(stdout_error)?;
        Ok(total)
    }
}

impl Printer {
    /// The log ended: a character cut off at its very end is shown as such.
    fn finish(&mut self, io: &mut Io<'_>) -> Outcome {
        let mut rest = Vec::new();
        if let Some(s) = &mut self.sanitizer {
            s.finish(&mut rest);
        }
        write_out(io, &rest)?;
        io.out.flush().map_err(stdout_error)
    }
}

fn write_out(io: &mut Io<'_>, bytes: &[u8]) -> Outcome {
    io.out.write_all(bytes).map_err(stdout_error)
}

/// A closed pipe (`zut ext logs x | head`) ends the command quietly.
pub(crate) fn stdout_error(e: std::io::Error) -> Failure {
    if e.kind() == ErrorKind::BrokenPipe {
        Failure::StdoutClosed
    } else {
        Failure::Error(format!("cannot write to stdout: {e}"))
    }
}
