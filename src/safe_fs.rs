//! Opening files that someone else may have prepared.
//!
//! An extension directory, a cloned repository or `$ZUT_HOME` can hold a
//! FIFO, a socket or a device where zut expects a file. Opening a FIFO for
//! reading blocks until a writer appears, which is forever: zut would hang
//! at startup. Everything zut reads from such places goes through
//! [`read_regular`], which refuses anything that is not a regular file.
//!
//! Invariants: the file is opened with `O_NONBLOCK` (so opening a FIFO
//! returns at once) and its type is checked on the open descriptor (so a
//! file swapped between a check and the open is still caught); a symlink
//! to a regular file is followed and accepted; the error for a refused
//! file says what kind of file it is.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// What kind of non-regular file `meta` describes, for messages.
pub fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// The error for a file that is not regular.
fn refused(meta: &Metadata) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {}, not a regular file", kind(meta)),
    )
}

/// Opens `path` for reading if it is a regular file (after following
/// symlinks); never blocks on a FIFO or a device.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(refused(&meta));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused(&meta));
    }
    Ok(file)
}

/// The contents of `path` if it is a regular file.
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The contents of `path` as UTF-8 if it is a regular file.
pub fn read_regular_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read_regular(path)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not valid UTF-8"))
}

/// Normalises `rel` without touching the disk; `None` if `..` climbs out.
pub fn lexically_inside(rel: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in rel.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(p) => out.push(p),
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn only_regular_files_are_read() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("f");
        std::fs::write(&file, "data").unwrap();
        assert_eq!(read_regular(&file).unwrap(), b"data");
        std::os::unix::fs::symlink(&file, t.path().join("link")).unwrap();
        assert_eq!(read_regular(&t.path().join("link")).unwrap(), b"data");

        let fifo = t.path().join("fifo");
        mkfifo(&fifo);
        let e = read_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        std::os::unix::fs::symlink(&fifo, t.path().join("to-fifo")).unwrap();
        assert!(read_regular(&t.path().join("to-fifo")).is_err());
        let e = read_regular(t.path()).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = read_regular(Path::new("/dev/null")).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let missing = read_regular(&t.path().join("missing")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
