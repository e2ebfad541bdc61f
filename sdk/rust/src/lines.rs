//! Reading protocol lines: one frame per `\n`-terminated line, bounded.
//!
//! One splitter serves both ends of the protocol: [`LineBuffer`] takes
//! bytes one `read` at a time and hands out complete lines, which is what
//! the host's reader threads need (they `poll` first and must never block
//! in a read), and [`LineReader`] is the same splitter driven by a blocking
//! reader, which is what an extension needs.
//!
//! Invariants:
//! - lines are split on `\n` only; one trailing `\r` is stripped, and the
//!   limit does not count it;
//! - a line longer than the limit is never held whole: once the pending
//!   bytes pass it, they are dropped and counted up to the next `\n`, and
//!   the caller hears [`Piece::TooLong`] / [`Line::TooLong`] with the
//!   line's length (`\r` included); reading then goes on with the next line;
//! - the buffer grows with the pending line (by half again, so a big line
//!   costs about three copies of its bytes) and shrinks back after it;
//! - the end of input is [`Line::Eof`], not an error; a last line without a
//!   newline is still returned by [`LineReader`] ([`LineBuffer::finish`]).

use std::io::{self, Read};

/// The longest line either side accepts, newline excluded: 32 MiB, room for
/// a 16 MiB payload after JSON escaping. The host uses the same ceiling.
///
/// ```
/// assert_eq!(zut_ext::lines::MAX_LINE_BYTES, 32 << 20);
/// ```
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;

/// The smallest read; reads grow with the pending line up to [`READ_MAX`].
const READ_CHUNK: usize = 8 * 1024;
/// The most one read asks for: a pipe holds 64 KiB.
const READ_MAX: usize = 64 * 1024;

/// What [`LineBuffer::for_each`] and [`LineBuffer::finish`] hand out.
///
/// ```
/// use zut_ext::lines::{LineBuffer, Piece};
/// let mut b = LineBuffer::with_limit(3);
/// let mut input = &b"ok\ntoo long\n"[..];
/// let mut got = Vec::new();
/// while b.fill(&mut input).unwrap() {
///     b.for_each(|p| got.push(match p {
///         Piece::Line(l) => String::from_utf8_lossy(l).into_owned(),
///         Piece::TooLong(n) => format!("{n} bytes dropped"),
///     }));
/// }
/// assert_eq!(got, ["ok", "8 bytes dropped"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// One line, without its `\n` (and without a `\r` before it).
    Line(&'a [u8]),
    /// A line over the limit was dropped; it held this many bytes.
    TooLong(usize),
}

/// A byte stream split into lines, one `read` at a time: it never blocks
/// on its own, so a caller can `poll` before each [`LineBuffer::fill`].
///
/// ```
/// use zut_ext::lines::{LineBuffer, Piece};
/// let mut b = LineBuffer::new();
/// let mut lines = Vec::new();
/// for chunk in [&b"{\"type\":"[..], &b"\"ready\"}\r\n{"[..]] {
///     b.fill(&mut &chunk[..]).unwrap();
///     b.for_each(|p| if let Piece::Line(l) = p { lines.push(l.to_vec()) });
/// }
/// assert_eq!(lines, [br#"{"type":"ready"}"#.to_vec()]);
/// assert_eq!(b.finish(), Some(Piece::Line(b"{")));
/// ```
#[derive(Debug)]
pub struct LineBuffer {
    buf: Vec<u8>,
    /// Bytes of `buf` holding data.
    filled: usize,
    /// Bytes at the front of `buf` already known to hold no newline.
    scanned: usize,
    limit: usize,
    /// `Some(n)` while dropping an over-long line: `n` bytes so far.
    dropping: Option<usize>,
}

impl Default for LineBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl LineBuffer {
    /// A buffer with the protocol's limit, [`MAX_LINE_BYTES`].
    ///
    /// ```
    /// assert!(!zut_ext::lines::LineBuffer::new().over_limit());
    /// ```
    pub fn new() -> Self {
        Self::with_limit(MAX_LINE_BYTES)
    }

    /// A buffer with another limit (tests use small ones).
    ///
    /// ```
    /// let b = zut_ext::lines::LineBuffer::with_limit(16);
    /// # drop(b);
    /// ```
    pub fn with_limit(limit: usize) -> Self {
        LineBuffer {
            buf: Vec::new(),
            filled: 0,
            scanned: 0,
            limit,
            dropping: None,
        }
    }

    /// Does one `read` into the buffer: `Ok(false)` at the end of input,
    /// `Ok(true)` otherwise (also when a non-blocking reader has nothing
    /// yet). Interrupted reads are retried.
    ///
    /// ```
    /// let mut b = zut_ext::lines::LineBuffer::new();
    /// assert!(b.fill(&mut &b"x"[..]).unwrap());
    /// assert!(!b.fill(&mut &b""[..]).unwrap());
    /// ```
    pub fn fill(&mut self, r: &mut impl Read) -> io::Result<bool> {
        // Reads grow with the pending line (few reads for a big frame, a
        // small buffer for an idle peer) and never take more than two bytes
        // past the limit: a `\r` the limit does not count, and one byte
        // that proves the line too long.
        let cap = self.limit.saturating_add(2);
        let chunk = (self.filled / 8).clamp(READ_CHUNK, READ_MAX);
        let want = if self.dropping.is_some() {
            READ_MAX
        } else {
            chunk.min(cap - self.filled.min(cap)).max(1)
        };
        if self.buf.len() < self.filled + want {
            let grow = (self.filled / 2).max(want);
            self.buf.reserve_exact(self.filled + grow - self.buf.len());
            self.buf.resize(self.filled + grow, 0);
        }
        let end = self.buf.len().min(self.filled + want);
        loop {
            match r.read(&mut self.buf[self.filled..end]) {
                Ok(n) => {
                    self.filled += n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) => return Err(e),
            }
        }
    }

    /// Hands every complete line read so far to `f`, in order, and keeps
    /// the unfinished rest.
    ///
    /// ```
    /// use zut_ext::lines::{LineBuffer, Piece};
    /// let mut b = LineBuffer::new();
    /// b.fill(&mut &b"a\nb"[..]).unwrap();
    /// let mut n = 0;
    /// b.for_each(|p| { assert_eq!(p, Piece::Line(b"a")); n += 1 });
    /// assert_eq!(n, 1);
    /// ```
    pub fn for_each(&mut self, mut f: impl FnMut(Piece<'_>)) {
        let filled = self.filled;
        let mut start = 0;
        let mut from = self.scanned;
        while let Some(pos) = memchr::memchr(b'\n', &self.buf[from..filled]) {
            let end = from + pos;
            let raw = &self.buf[start..end];
            match self.dropping.take() {
                Some(n) => f(Piece::TooLong(n + raw.len())),
                None => {
                    let line = raw.strip_suffix(b"\r").unwrap_or(raw);
                    if line.len() > self.limit {
                        f(Piece::TooLong(raw.len()));
                    } else {
                        f(Piece::Line(line));
                    }
                }
            }
            start = end + 1;
            from = start;
        }
        let rest = filled - start;
        match &mut self.dropping {
            Some(n) => {
                *n += rest;
                self.filled = 0;
            }
            None if rest > self.limit.saturating_add(1) => {
                // Too long even if its last byte turns out to be a `\r`.
                self.dropping = Some(rest);
                self.filled = 0;
            }
            None => {
                if start > 0 {
                    self.buf.copy_within(start..filled, 0);
                }
                self.filled = rest;
            }
        }
        self.scanned = self.filled;
        // After a big line, give the memory back.
        if self.buf.capacity() > 4 * READ_MAX && self.filled < READ_CHUNK {
            self.buf.truncate(READ_CHUNK);
            self.buf.shrink_to(READ_CHUNK);
        }
    }

    /// Whether the pending line is already over the limit (its bytes are
    /// being dropped). A host that disconnects such a peer asks this after
    /// each [`LineBuffer::for_each`].
    ///
    /// ```
    /// let mut b = zut_ext::lines::LineBuffer::with_limit(2);
    /// b.fill(&mut &b"abcd"[..]).unwrap();
    /// b.for_each(|_| {});
    /// assert!(b.over_limit());
    /// ```
    pub fn over_limit(&self) -> bool {
        self.dropping.is_some()
    }

    /// At the end of input: the last line, which had no newline, if any.
    /// The buffer is empty afterwards.
    ///
    /// ```
    /// use zut_ext::lines::{LineBuffer, Piece};
    /// let mut b = LineBuffer::new();
    /// b.fill(&mut &b"tail\r"[..]).unwrap();
    /// b.for_each(|_| {});
    /// assert_eq!(b.finish(), Some(Piece::Line(b"tail")));
    /// assert_eq!(b.finish(), None);
    /// ```
    pub fn finish(&mut self) -> Option<Piece<'_>> {
        let filled = std::mem::take(&mut self.filled);
        self.scanned = 0;
        if let Some(n) = self.dropping.take() {
            return Some(Piece::TooLong(n + filled));
        }
        if filled == 0 {
            return None;
        }
        let raw = &self.buf[..filled];
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        Some(if line.len() > self.limit {
            Piece::TooLong(filled)
        } else {
            Piece::Line(line)
        })
    }
}

/// What one call to [`LineReader::next_line`] found.
///
/// ```
/// use zut_ext::lines::{Line, LineReader};
/// let mut r = LineReader::new(&b"a\n"[..]);
/// assert_eq!(r.next_line().unwrap(), Line::Data(b"a".to_vec()));
/// assert_eq!(r.next_line().unwrap(), Line::Eof);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// One line, without its `\n` (and without a `\r` before it).
    Data(Vec<u8>),
    /// A line longer than the limit was skipped; it held this many bytes
    /// (a `\r` before its newline included).
    TooLong(usize),
    /// The input ended.
    Eof,
}

impl From<Piece<'_>> for Line {
    fn from(p: Piece<'_>) -> Line {
        match p {
            Piece::Line(l) => Line::Data(l.to_vec()),
            Piece::TooLong(n) => Line::TooLong(n),
        }
    }
}

/// A [`LineBuffer`] driven by a blocking reader: one line per call.
///
/// ```
/// use zut_ext::lines::{Line, LineReader};
/// let mut r = LineReader::with_limit(&b"toolong\r\nok\r\n"[..], 4);
/// assert_eq!(r.next_line().unwrap(), Line::TooLong(8)); // `\r` counted
/// assert_eq!(r.next_line().unwrap(), Line::Data(b"ok".to_vec()));
/// ```
pub struct LineReader<R> {
    inner: R,
    buf: LineBuffer,
    /// Lines split off by the last fill and not handed out yet.
    ready: std::collections::VecDeque<Line>,
    eof: bool,
}

impl<R: Read> LineReader<R> {
    /// A reader with the protocol's limit, [`MAX_LINE_BYTES`].
    ///
    /// ```
    /// let r = zut_ext::lines::LineReader::new(std::io::stdin());
    /// # drop(r);
    /// ```
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE_BYTES)
    }

    /// A reader with another limit (tests use small ones).
    ///
    /// ```
    /// let r = zut_ext::lines::LineReader::with_limit(&b""[..], 16);
    /// # drop(r);
    /// ```
    pub fn with_limit(inner: R, limit: usize) -> Self {
        LineReader {
            inner,
            buf: LineBuffer::with_limit(limit),
            ready: std::collections::VecDeque::new(),
            eof: false,
        }
    }

    /// Reads the next line; see [`Line`].
    ///
    /// ```
    /// use zut_ext::lines::{Line, LineReader};
    /// let mut r = LineReader::new(&b"last line without newline"[..]);
    /// assert!(matches!(r.next_line().unwrap(), Line::Data(_)));
    /// ```
    pub fn next_line(&mut self) -> io::Result<Line> {
        loop {
            if let Some(line) = self.ready.pop_front() {
                return Ok(line);
            }
            if self.eof {
                return Ok(Line::Eof);
            }
            let ready = &mut self.ready;
            if self.buf.fill(&mut self.inner)? {
                self.buf.for_each(|p| ready.push_back(p.into()));
            } else {
                self.eof = true;
                if let Some(p) = self.buf.finish() {
                    ready.push_back(p.into());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `cap` bytes per read.
    struct Trickle<'a> {
        rest: &'a [u8],
        cap: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.cap.min(buf.len()).min(self.rest.len());
            buf[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            Ok(n)
        }
    }

    fn all(input: &[u8], limit: usize, cap: usize) -> Vec<Line> {
        let mut r = LineReader::with_limit(Trickle { rest: input, cap }, limit);
        let mut out = Vec::new();
        loop {
            let l = r.next_line().unwrap();
            let end = l == Line::Eof;
            out.push(l);
            if end {
                return out;
            }
        }
    }

    #[test]
    fn splits_on_newline_only_and_strips_one_cr() {
        let got = all(b"a\r\n\rb\r\r\n\nc", 100, 3);
        let want = [&b"a"[..], b"\rb\r", b"", b"c"]
            .iter()
            .map(|l| Line::Data(l.to_vec()))
            .chain([Line::Eof])
            .collect::<Vec<_>>();
        assert_eq!(got, want);
    }

    #[test]
    fn an_overlong_line_is_skipped_and_reading_goes_on() {
        for cap in [1, 2, 5, 64] {
            let got = all(b"12345\nabcd\nxyzxyzxyz", 4, cap);
            assert_eq!(
                got,
                vec![
                    Line::TooLong(5),
                    Line::Data(b"abcd".to_vec()),
                    Line::TooLong(9),
                    Line::Eof
                ],
                "buffer {cap}"
            );
        }
    }

    #[test]
    fn the_limit_does_not_count_the_carriage_return() {
        assert_eq!(all(b"abcd\r\n", 4, 2)[0], Line::Data(b"abcd".to_vec()));
        assert_eq!(all(b"abcde\n", 4, 2)[0], Line::TooLong(5));
        assert_eq!(all(b"abcde", 4, 2)[0], Line::TooLong(5));
    }

    #[test]
    fn a_big_line_is_assembled_and_memory_returned() {
        let big = vec![b'x'; 3 * READ_MAX + 17];
        let mut b = LineBuffer::new();
        let mut src: &[u8] = &big;
        let mut got = Vec::new();
        while b.fill(&mut src).unwrap() {
            b.for_each(|p| got.push(p.into()));
        }
        b.fill(&mut &b"\n"[..]).unwrap();
        b.for_each(|p| got.push(Line::from(p)));
        assert_eq!(got, [Line::Data(big)]);
        assert!(b.buf.capacity() <= 4 * READ_MAX);
    }

    #[test]
    fn an_over_long_line_is_never_buffered_past_the_limit() {
        let limit = 3 * READ_MAX;
        let mut b = LineBuffer::with_limit(limit);
        let chunk = vec![b'y'; READ_MAX];
        let mut fed = 0;
        let mut feed = |b: &mut LineBuffer| {
            let mut src = &chunk[..];
            b.fill(&mut src).unwrap();
            fed += READ_MAX - src.len();
            b.for_each(|_| panic!("no line yet"));
        };
        while !b.over_limit() {
            feed(&mut b);
            assert!(b.filled <= limit + 2);
        }
        // Dropping goes on, in small memory, until the newline.
        for _ in 0..10 {
            feed(&mut b);
            assert_eq!(b.filled, 0);
        }
        b.fill(&mut &b"\nnext\n"[..]).unwrap();
        let mut got = Vec::new();
        b.for_each(|p| got.push(Line::from(p)));
        assert_eq!(got, [Line::TooLong(fed), Line::Data(b"next".to_vec())]);
    }

    /// The lines of `bytes` by the module's rules, written the plain way.
    fn spec_lines(bytes: &[u8], limit: usize) -> Vec<Line> {
        let mut pieces: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        if pieces.last().is_some_and(|p| p.is_empty()) {
            pieces.pop(); // the input ended with a newline
        }
        pieces
            .into_iter()
            .map(|raw| {
                let line = raw.strip_suffix(b"\r").unwrap_or(raw);
                if line.len() > limit {
                    Line::TooLong(raw.len())
                } else {
                    Line::Data(line.to_vec())
                }
            })
            .chain([Line::Eof])
            .collect()
    }

    /// However the bytes are cut into reads and whatever the limit, the
    /// splitter agrees with the plain reading of the rules.
    #[test]
    fn agrees_with_the_rules_on_random_input() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let len = (next() % 64) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| match next() % 6 {
                    0 => b'\n',
                    1 => b'\r',
                    _ => b'a' + (next() % 3) as u8,
                })
                .collect();
            let limit = (next() % 8) as usize;
            let cap = 1 + (next() % 7) as usize;
            assert_eq!(
                all(&bytes, limit, cap),
                spec_lines(&bytes, limit),
                "{:?} limit {limit} reads of {cap}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
}
