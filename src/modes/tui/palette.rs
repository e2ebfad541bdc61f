//! 16-colour output for terminals that promise no more (`TERM=xterm`,
//! `screen`, `linux`): the terminal library writes even the 16 named
//! colours as 256-colour sequences (`ESC[38;5;1m`), which such terminals
//! may not understand. [`Sgr16`] rewrites them, a frame at a time, into
//! the classic codes (`ESC[31m`, bright ones `ESC[91m`).
//!
//! Invariant: bytes pass through unchanged except whole `ESC[38;5;Nm` /
//! `ESC[48;5;Nm` sequences with N < 16; the frame is held until flush, so
//! a sequence split across writes is still seen whole.

use std::io::Write;

/// A writer that rewrites 16-colour SGR sequences on flush (when on).
pub struct Sgr16<W: Write> {
    inner: W,
    buf: Vec<u8>,
    on: bool,
}

impl<W: Write> Sgr16<W> {
    pub fn new(inner: W, on: bool) -> Sgr16<W> {
        Sgr16 {
            inner,
            buf: Vec::new(),
            on,
        }
    }
}

impl<W: Write> Write for Sgr16<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if !self.on {
            return self.inner.write(data);
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.on && !self.buf.is_empty() {
            let out = rewrite(&self.buf);
            self.buf.clear();
            self.inner.write_all(&out)?;
        }
        self.inner.flush()
    }
}

/// `data` with every `ESC[38;5;Nm` / `ESC[48;5;Nm` (N < 16) in the classic
/// form.
pub fn rewrite(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        if data[i] == 0x1b && data.get(i + 1) == Some(&b'[') {
            let start = i + 2;
            let end = data[start..]
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b';'))
                .map(|p| start + p);
            if let Some(end) = end {
                if data[end] == b'm' {
                    if let Some(code) = classic(&data[start..end]) {
                        out.extend_from_slice(format!("\x1b[{code}m").as_bytes());
                        i = end + 1;
                        continue;
                    }
                }
            }
        }
        out.push(data[i]);
        i += 1;
    }
    out
}

/// The parameters with every `38;5;N` / `48;5;N` (N < 16) replaced;
/// `None` when there is none.
fn classic(params: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(params).ok()?;
    let p: Vec<&str> = s.split(';').collect();
    let mut out: Vec<String> = Vec::new();
    let mut changed = false;
    let mut i = 0;
    while i < p.len() {
        if (p[i] == "38" || p[i] == "48") && p.get(i + 1) == Some(&"5") {
            if let Some(n) = p.get(i + 2).and_then(|n| n.parse::<u8>().ok()) {
                if n < 16 {
                    let base = if p[i] == "38" { 30 } else { 40 };
                    let code = if n < 8 { base + n } else { base + 60 + n - 8 };
                    out.push(code.to_string());
                    changed = true;
                    i += 3;
                    continue;
                }
            }
            // Another extended colour: its three parameters stay together.
            out.extend(p[i..(i + 3).min(p.len())].iter().map(|s| s.to_string()));
            i += 3;
            continue;
        }
        out.push(p[i].to_string());
        i += 1;
    }
    changed.then(|| out.join(";"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_colours_become_classic_codes_and_the_rest_passes() {
        assert_eq!(
            rewrite(b"a\x1b[38;5;1mred\x1b[48;5;12mx\x1b[38;5;200my\x1b[38;5;8;49m\x1b[0m"),
            b"a\x1b[31mred\x1b[104mx\x1b[38;5;200my\x1b[90;49m\x1b[0m".to_vec()
        );
        let mut w = Sgr16::new(Vec::new(), true);
        w.write_all(b"\x1b[38;").unwrap();
        w.write_all(b"5;8m.").unwrap();
        w.flush().unwrap();
        assert_eq!(w.inner, b"\x1b[90m.".to_vec());
    }
}
