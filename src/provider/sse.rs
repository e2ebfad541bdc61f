//! Incremental server-sent-events parser shared by the HTTP providers.
//!
//! [`SseReader`] pulls bytes from any [`BufRead`] and yields one [`SseEvent`]
//! (event name, data) per blank-line-terminated block, following the
//! WHATWG event-stream rules that matter for model APIs:
//!
//! - lines end in `\n`, `\r\n` or a lone `\r`, and may arrive split across
//!   any number of reads (the parser keeps its partial line between calls,
//!   so a read error such as an abort leaves it resumable);
//! - `data:` lines of one event are joined with `\n`;
//! - lines starting with `:` are comments (keep-alives) and are skipped;
//! - `event:` names the event (default `message`); `id:` and `retry:` are
//!   ignored; one space after the colon is dropped;
//! - a block without `data:` lines dispatches nothing.
//!
//! Invariants: never panics on any input; invalid UTF-8 is replaced, not
//! fatal; a single line longer than [`MAX_LINE`] is an `InvalidData` error,
//! so a hostile stream cannot exhaust memory. At end of input a pending
//! event that lacks its final blank line is still delivered (servers often
//! omit it before closing).

use std::io::{self, BufRead};

/// The longest line accepted, in bytes.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or `message` when absent.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Reads [`SseEvent`]s from a byte stream.
pub struct SseReader<R> {
    inner: R,
    /// Bytes of the line being assembled.
    line: Vec<u8>,
    /// The previous line ended in `\r`: a following `\n` belongs to it.
    skip_lf: bool,
    /// Still at the very start of the stream (a UTF-8 BOM is dropped there).
    at_start: bool,
    event: Option<String>,
    data: Option<String>,
    eof: bool,
}

impl<R: BufRead> SseReader<R> {
    /// Wraps a reader positioned at the start of an event stream.
    pub fn new(inner: R) -> Self {
        SseReader {
            inner,
            line: Vec::new(),
            skip_lf: false,
            at_start: true,
            event: None,
            data: None,
            eof: false,
        }
    }

    /// The underlying reader (to move its idle deadline on real data).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The next event, or `None` once the stream has ended.
    pub fn next_event(&mut self) -> io::Result<Option<SseEvent>> {
        while !self.eof {
            match self.next_line()? {
                Some(line) => {
                    if let Some(ev) = self.process_line(&line) {
                        return Ok(Some(ev));
                    }
                }
                None => {
                    self.eof = true;
                    return Ok(self.dispatch());
                }
            }
        }
        Ok(None)
    }

    /// One complete line without its terminator; `None` at end of input
    /// (a final unterminated line is returned first).
    fn next_line(&mut self) -> io::Result<Option<String>> {
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                if self.line.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(self.take_line()));
            }
            if self.skip_lf {
                self.skip_lf = false;
                if buf[0] == b'\n' {
                    self.inner.consume(1);
                    continue;
                }
            }
            match buf.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(i) => {
                    let cr = buf[i] == b'\r';
                    self.line.extend_from_slice(&buf[..i]);
                    self.inner.consume(i + 1);
                    self.skip_lf = cr;
                    return Ok(Some(self.take_line()));
                }
                None => {
                    let n = buf.len();
                    self.line.extend_from_slice(buf);
                    self.inner.consume(n);
                    if self.line.len() > MAX_LINE {
                        self.line.clear();
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("event-stream line longer than {MAX_LINE} bytes"),
                        ));
                    }
                }
            }
        }
    }

    fn take_line(&mut self) -> String {
        let mut bytes = std::mem::take(&mut self.line);
        if self.at_start {
            self.at_start = false;
            if bytes.starts_with(b"\xEF\xBB\xBF") {
                bytes.drain(..3);
            }
        }
        match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }

    /// Applies one line; returns an event when the line ends a block.
    fn process_line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                let data = self.data.get_or_insert_with(String::new);
                data.push_str(value);
                data.push('\n');
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let mut data = self.data.take()?;
        data.pop(); // the '\n' appended after the last data line
        Some(SseEvent {
            event: event
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "message".to_string()),
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};

    /// A reader that hands out at most `n` bytes per read, like a socket
    /// delivering a stream in small TCP segments.
    struct Trickle<'a> {
        data: &'a [u8],
        n: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let k = self.n.min(buf.len()).min(self.data.len());
            buf[..k].copy_from_slice(&self.data[..k]);
            self.data = &self.data[k..];
            Ok(k)
        }
    }

    fn parse_with(input: &[u8], chunk: usize) -> Vec<(String, String)> {
        let reader = BufReader::with_capacity(
            chunk.max(1),
            Trickle {
                data: input,
                n: chunk,
            },
        );
        let mut sse = SseReader::new(reader);
        let mut out = Vec::new();
        while let Some(ev) = sse.next_event().expect("no io error") {
            out.push((ev.event, ev.data));
        }
        out
    }

    fn parse(input: &str) -> Vec<(String, String)> {
        parse_with(input.as_bytes(), 4096)
    }

    fn pair(e: &str, d: &str) -> (String, String) {
        (e.to_string(), d.to_string())
    }

    #[test]
    fn named_events_and_default_name() {
        let got = parse("event: ping\ndata: {}\n\ndata: hello\n\n");
        assert_eq!(got, vec![pair("ping", "{}"), pair("message", "hello")]);
    }

    #[test]
    fn same_result_for_every_split_point() {
        let input = "event: a\r\ndata: one\r\n\r\n: keep-alive\r\n\r\nevent: b\ndata: two\ndata: three\n\ndata:x\r\r";
        let want = vec![
            pair("a", "one"),
            pair("b", "two\nthree"),
            pair("message", "x"),
        ];
        for chunk in 1..=input.len() {
            assert_eq!(parse_with(input.as_bytes(), chunk), want, "chunk {chunk}");
        }
    }

    #[test]
    fn multi_line_data_keeps_empty_lines() {
        assert_eq!(parse("data:\ndata: x\n\n"), vec![pair("message", "\nx")]);
        assert_eq!(parse("data\n\n"), vec![pair("message", "")]);
    }

    #[test]
    fn only_one_leading_space_is_dropped() {
        assert_eq!(parse("data:  two\n\n"), vec![pair("message", " two")]);
    }

    #[test]
    fn comments_ids_and_blocks_without_data_dispatch_nothing() {
        let got = parse(": comment\nid: 7\nretry: 100\n\nevent: lonely\n\ndata: z\n\n");
        assert_eq!(got, vec![pair("message", "z")]);
    }

    #[test]
    fn event_name_does_not_leak_into_the_next_block() {
        let got = parse("event: first\ndata: 1\n\ndata: 2\n\n");
        assert_eq!(got, vec![pair("first", "1"), pair("message", "2")]);
    }

    #[test]
    fn pending_event_is_delivered_at_end_of_input() {
        assert_eq!(parse("data: [DONE]"), vec![pair("message", "[DONE]")]);
        assert_eq!(parse("data: [DONE]\n"), vec![pair("message", "[DONE]")]);
    }

    #[test]
    fn bom_and_invalid_utf8_are_harmless() {
        let got = parse_with(b"\xEF\xBB\xBFdata: a\xFFb\n\n", 3);
        assert_eq!(got, vec![pair("message", "a\u{FFFD}b")]);
    }

    #[test]
    fn read_errors_leave_the_parser_resumable() {
        /// Fails once in the middle of a line, then continues.
        struct Hiccup {
            parts: Vec<&'static [u8]>,
        }
        impl Read for Hiccup {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.parts.is_empty() {
                    return Ok(0);
                }
                let p = self.parts.remove(0);
                if p.is_empty() {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "slow"));
                }
                buf[..p.len()].copy_from_slice(p);
                Ok(p.len())
            }
        }
        let r = BufReader::new(Hiccup {
            parts: vec![b"data: he", b"", b"llo\n\n"],
        });
        let mut sse = SseReader::new(r);
        assert!(sse.next_event().is_err());
        let ev = sse.next_event().unwrap().unwrap();
        assert_eq!(ev.data, "hello");
        assert!(sse.next_event().unwrap().is_none());
    }
}
