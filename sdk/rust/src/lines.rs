//! Reading protocol lines: one frame per `\n`-terminated line, bounded.
//!
//! Invariants:
//! - lines are split on `\n` only; one trailing `\r` is stripped;
//! - a line longer than [`MAX_LINE_BYTES`] is never held in memory: its bytes
//!   are skipped up to the next `\n` and the caller hears [`Line::TooLong`],
//!   after which reading continues with the next line;
//! - the end of input is [`Line::Eof`], not an error; a last line without a
//!   newline is still returned.

use std::io::{self, BufRead};

/// The longest line either side accepts, newline excluded: 32 MiB, room for
/// a 16 MiB payload after JSON escaping. The host uses the same ceiling.
///
/// ```
/// assert_eq!(zut_ext::lines::MAX_LINE_BYTES, 32 << 20);
/// ```
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;

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

/// Splits a byte stream into protocol lines with a length limit.
///
/// ```
/// use zut_ext::lines::{Line, LineReader};
/// let mut r = LineReader::with_limit(&b"toolong\r\nok\r\n"[..], 4);
/// assert_eq!(r.next_line().unwrap(), Line::TooLong(8)); // `\r` counted
/// assert_eq!(r.next_line().unwrap(), Line::Data(b"ok".to_vec()));
/// ```
pub struct LineReader<R> {
    inner: R,
    limit: usize,
}

impl<R: BufRead> LineReader<R> {
    /// A reader with the protocol's limit, [`MAX_LINE_BYTES`].
    ///
    /// ```
    /// let r = zut_ext::lines::LineReader::new(std::io::stdin().lock());
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
        LineReader { inner, limit }
    }

    /// Reads the next line; see [`Line`].
    ///
    /// ```
    /// use zut_ext::lines::{Line, LineReader};
    /// let mut r = LineReader::new(&b"last line without newline"[..]);
    /// assert!(matches!(r.next_line().unwrap(), Line::Data(_)));
    /// ```
    pub fn next_line(&mut self) -> io::Result<Line> {
        let mut line = Vec::new();
        let mut skipped = 0usize;
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(match (skipped, line.is_empty()) {
                    (0, true) => Line::Eof,
                    (0, false) => Line::Data(strip_cr(line)),
                    (n, _) => Line::TooLong(n),
                });
            }
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            if skipped > 0 || line.len() + chunk.len() > self.limit + 1 {
                // `+ 1` leaves room for a `\r` the limit does not count.
                skipped += line.len() + chunk.len();
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
            let used = done.unwrap_or(buf.len());
            self.inner.consume(used);
            if done.is_some() {
                let line = strip_cr(line);
                return Ok(if skipped > 0 || line.len() > self.limit {
                    Line::TooLong(skipped.max(line.len()))
                } else {
                    Line::Data(line)
                });
            }
        }
    }
}

fn strip_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    fn all(input: &[u8], limit: usize, cap: usize) -> Vec<Line> {
        let mut r = LineReader::with_limit(BufReader::with_capacity(cap, input), limit);
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
    }
}
