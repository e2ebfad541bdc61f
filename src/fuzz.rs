//! A deterministic fuzzing harness for the parsers that read untrusted
//! bytes, run as ordinary tests on the stable toolchain.
//!
//! Each target is one function: seed inputs, a number of cases, and a
//! check that runs on every mutated input ([`run`]). Inputs come from a
//! fixed-seed xorshift generator mutating the seeds (bit flips, interesting
//! bytes, inserted JSON tokens, deleted and duplicated ranges, splices,
//! truncation), so a failure reproduces exactly; the failing case's number
//! and input are printed. A target stops early after [`TIME_BUDGET`] so a
//! loaded machine slows the suite down by a bounded amount.
//!
//! Targets here: the wire frame decoder, the line splitter host and SDK
//! share, the manifest parser, the SSE parser, the SKILL.md reader and the
//! session loader. To add one: write a `#[test]` calling [`run`].

use std::time::{Duration, Instant};

/// How long one target may run before it stops early.
pub(crate) const TIME_BUDGET: Duration = Duration::from_secs(2);

/// A xorshift64* generator: small, fast, and the same sequence everywhere.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes parsers treat specially.
const INTERESTING: &[u8] = b"{}[]\":,\\\n\r\t \x00\x1b\xff\xc3\xe2-0e.";

/// Fragments that push a JSON or SSE parser into its corners.
const TOKENS: &[&str] = &[
    "\"type\":",
    "\"hello\"",
    "\"tool_result\"",
    "\"register_tool\"",
    "\"content\":[{\"type\":\"image\",\"data\":\"!!\"}]",
    "null",
    "true",
    "1e999",
    "-0",
    "18446744073709551616",
    "\"\\ud800\"",
    "\"\\u0000\"",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":",
    "data: ",
    "event: ",
    ": keep-alive\n",
    "\r\n\r\n",
    "\n\n",
    "\u{feff}",
    "../../",
    "/bin/sh",
    "\"exec\":\"./x\"",
];

/// One mutation of `input` (or a splice with `other`).
pub(crate) fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = v.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => {
                let i = rng.below(len + 1);
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                v.splice(i..i, t.iter().copied());
            }
            3 if len > 0 => {
                let a = rng.below(len);
                let b = (a + rng.below(16) + 1).min(len);
                v.drain(a..b);
            }
            4 if len > 0 => {
                let a = rng.below(len);
                let b = (a + rng.below(32) + 1).min(len);
                let piece: Vec<u8> = v[a..b].to_vec();
                let at = rng.below(len + 1);
                v.splice(at..at, piece);
            }
            5 if !other.is_empty() => {
                let cut = rng.below(len + 1);
                let from = rng.below(other.len());
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            6 if len > 0 => v.truncate(rng.below(len)),
            _ => {
                let i = rng.below(len + 1);
                v.insert(i, rng.next() as u8);
            }
        }
    }
    v
}

/// Runs `check` on every seed and then on up to `cases` mutated inputs
/// (stopping early after [`TIME_BUDGET`]). A panic in `check` is reported
/// with the case number and the input, then re-raised.
pub(crate) fn run(name: &str, seeds: &[&[u8]], cases: usize, mut check: impl FnMut(&[u8])) {
    let start = Instant::now();
    let mut rng = Rng::new(0x5eed ^ name.len() as u64);
    let mut corpus: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_vec()).collect();
    let mut ran = 0;
    for i in 0..seeds.len() + cases {
        let input = match seeds.get(i) {
            Some(s) => s.to_vec(),
            None => {
                let a = &corpus[rng.below(corpus.len())];
                let b = &corpus[rng.below(corpus.len())];
                mutate(&mut rng, a, b)
            }
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&input)));
        if let Err(panic) = outcome {
            eprintln!(
                "fuzz target {name}: case {i} failed on input {:?}",
                String::from_utf8_lossy(&input)
            );
            std::panic::resume_unwind(panic);
        }
        // Keep some inputs as new parents, so mutations compound.
        if i >= seeds.len() && rng.below(8) == 0 && corpus.len() < 256 && input.len() < 4096 {
            corpus.push(input);
        }
        ran += 1;
        if start.elapsed() > TIME_BUDGET {
            break;
        }
    }
    eprintln!("fuzz target {name}: {ran} cases in {:?}", start.elapsed());
}

/// Splits `input` into pieces of random sizes (for streaming parsers).
pub(crate) fn chunks<'a>(rng: &mut Rng, input: &'a [u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let n = (rng.below(8) + 1).min(rest.len());
        let (a, b) = rest.split_at(n);
        out.push(a);
        rest = b;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::sse::{SseEvent, SseReader};
    use std::io::{BufRead, Read};
    use zut_ext::wire::{decode_ext_frame, DecodeError};

    #[test]
    fn fuzz_wire_frame_decoder() {
        let seeds: &[&[u8]] = &[
            br#"{"type":"hello","protocol_version":2,"name":"w","version":"1","capabilities":["commands"]}"#,
            br#"{"type":"register_tool","name":"t","description":"d","schema":{"type":"object"}}"#,
            br#"{"type":"tool_result","id":"1","content":[{"type":"text","text":"x"},{"type":"image","mime_type":"image/png","data":"aGk="}],"is_error":false}"#,
            br#"{"type":"command_response","id":"2","action":"display","display":"hi"}"#,
            br#"{"type":"event_intercept_response","id":"3","block":true,"reason":"no","modified_args":{"a":1}}"#,
            br#"{"type":"notify","level":"warn","message":"m"}"#,
            br#"{"type":"future_frame","x":1}"#,
            b"not json at all",
        ];
        run("wire", seeds, 50_000, |line| {
            let result = decode_ext_frame(line);
            match std::str::from_utf8(line) {
                Err(_) => assert!(matches!(result, Err(DecodeError::InvalidUtf8))),
                Ok(text) if !text.trim_start().starts_with('{') => {
                    assert!(matches!(result, Err(DecodeError::NotAnObject(_))))
                }
                Ok(_) => {
                    if let Ok(frame) = &result {
                        // A decoded frame always has a wire name.
                        assert!(!frame.type_name().is_empty());
                    }
                }
            }
        });
    }

    /// Whatever the bytes and however they are cut into reads, the lines
    /// are exactly the `\n`-separated pieces with one trailing `\r`
    /// removed, the unfinished rest is what `finish` returns, and with the
    /// protocol's limit nothing here is over it.
    #[test]
    fn fuzz_line_splitter() {
        use zut_ext::lines::{LineBuffer, Piece};
        let seeds: &[&[u8]] = &[
            b"{\"type\":\"hello\"}\n{\"type\":\"ready\"}\n",
            b"a\r\nb\r\r\n\n\nc",
            b"\n\n\r\n",
        ];
        let mut rng = Rng::new(11);
        run("line-splitter", seeds, 20_000, |bytes| {
            let mut b = LineBuffer::new();
            let mut got = Vec::new();
            for piece in chunks(&mut rng, bytes) {
                let mut src = piece;
                while b.fill(&mut src).unwrap() {
                    b.for_each(|p| match p {
                        Piece::Line(l) => got.push(l.to_vec()),
                        Piece::TooLong(n) => panic!("{n} bytes over the limit"),
                    });
                }
            }
            assert!(!b.over_limit());
            let rest = match b.finish() {
                Some(Piece::Line(l)) => Some(l.to_vec()),
                None => None,
                Some(Piece::TooLong(n)) => panic!("{n} bytes over the limit"),
            };
            let mut want: Vec<Vec<u8>> = bytes.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
            let last = want.pop().filter(|l| !l.is_empty());
            for l in &mut want {
                if l.last() == Some(&b'\r') {
                    l.pop();
                }
            }
            assert_eq!(got, want);
            let last = last.map(|mut l| {
                if l.last() == Some(&b'\r') {
                    l.pop();
                }
                l
            });
            assert_eq!(rest, last);
        });
    }

    #[test]
    fn fuzz_manifest_parser() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("run"), "#!/bin/sh\n").unwrap();
        let seeds: &[&[u8]] = &[
            br#"{"name":"weather","version":"1.0.0","exec":"./run","args":["--a"],"language":"go","description":"d","skills":["skills"],"enabled":true}"#,
            br#"{"name":"n","exec":"python3","args":["x.py"],"enabled":false}"#,
            br#"{"name":"n","exec":"../../bin/sh"}"#,
            br#"{"name":"n"}"#,
        ];
        run(
            "manifest",
            seeds,
            20_000,
            |bytes| match crate::host::manifest::parse(dir.path(), bytes) {
                Ok(m) => {
                    assert!(crate::host::manifest::check_name(&m.name).is_ok());
                    if let Some(crate::host::manifest::Exec::Relative { path, .. }) = &m.exec {
                        assert!(path.starts_with(dir.path()), "{path:?}");
                    }
                }
                Err(e) => assert!(e.to_string().contains(&dir.path().display().to_string())),
            },
        );
    }

    /// A reader that hands out its bytes in the given pieces.
    struct Pieces<'a> {
        pieces: Vec<&'a [u8]>,
        at: usize,
    }

    impl Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some(p) = self.pieces.get(self.at) else {
                return Ok(0);
            };
            let n = p.len().min(buf.len());
            buf[..n].copy_from_slice(&p[..n]);
            if n == p.len() {
                self.at += 1;
            } else {
                self.pieces[self.at] = &p[n..];
            }
            Ok(n)
        }
    }

    fn events(reader: impl BufRead) -> Vec<SseEvent> {
        let mut sse = SseReader::new(reader);
        let mut out = Vec::new();
        while let Some(ev) = sse.next_event().expect("only over-long lines are errors") {
            out.push(ev);
        }
        out
    }

    #[test]
    fn fuzz_sse_parser() {
        let seeds: &[&[u8]] = &[
            b"event: message_start\ndata: {\"a\":1}\n\ndata: x\ndata: y\n\n",
            b": ping\r\n\r\nevent:delta\r\ndata:{}\r\n\r\n",
            b"\xef\xbb\xbfdata: bom\r\rdata: cr\n\nid: 1\nretry: 5\n\n",
            b"data: [DONE]",
        ];
        let mut rng = Rng::new(7);
        run("sse", seeds, 20_000, |bytes| {
            let whole = events(std::io::Cursor::new(bytes));
            // However the bytes arrive, the events are the same.
            let split = Pieces {
                pieces: chunks(&mut rng, bytes),
                at: 0,
            };
            let small = std::io::BufReader::with_capacity(3, split);
            assert_eq!(events(small), whole);
            for ev in &whole {
                assert!(!ev.event.is_empty());
            }
        });
    }

    #[test]
    fn fuzz_skill_md_reader() {
        let seeds: &[&[u8]] = &[
            b"---\nname: deploy\ndescription: Ship it.\nallowed-tools: [bash, read]\n---\nSteps:\n1. build\n",
            b"\xef\xbb\xbf\n---\nname: \"quoted: name\"\ndescription: >\n  folded\n  text\ndisable-model-invocation: true\n---\n",
            b"---\ndescription: |\n  literal\n  block\npermissions:\n  - net\n---\nbody",
            b"no frontmatter at all\n",
            b"---\nname: [unclosed\n",
        ];
        run("skill-md", seeds, 20_000, |bytes| {
            let Ok(text) = std::str::from_utf8(bytes) else {
                return; // the reader refuses non-UTF-8 before parsing
            };
            if let Ok(doc) = crate::skills::frontmatter::parse(text) {
                // Whatever was parsed, the body is part of the input (as
                // written without frontmatter, else with CRLF read as LF).
                let lf = text.replace("\r\n", "\n");
                let body = doc.body.as_str();
                assert!(text.contains(body) || lf.contains(body), "{body:?}");
            }
        });
    }

    #[test]
    fn fuzz_session_loader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let seeds: &[&[u8]] = &[
            br#"{"type":"session","version":1,"id":"20261130-101010-abcd","cwd":"/p","created":"2026-11-30T10:10:10Z"}
{"type":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}
{"type":"extension_state","extension":"todo","state":{"items":[1,2]}}
{"type":"compaction","summary":"earlier","kept":1}
{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"yo"}]}}
"#,
            br#"{"type":"session","version":1,"id":"x","parent_id":"y","fork_point":3,"cwd":"/p","created":"2026-11-30T10:10:10Z"}
{"type":"future_row","x":1}
{"type":"extension_state","extension":"a","state":null}
{"type":"message","message":{"role":"tool","content":[]}"#,
        ];
        run("session", seeds, 5_000, |bytes| {
            std::fs::write(&path, bytes).unwrap();
            if let Ok(s) = crate::session::Session::load(&path) {
                // A loaded session answers its questions without panicking.
                let _ = (s.id(), s.parent_id(), s.fork_point(), s.warning());
                assert!(s.messages().len() <= bytes.len());
            }
        });
    }

    #[test]
    fn the_generator_is_deterministic() {
        let (mut a, mut b) = (Rng::new(42), Rng::new(42));
        let xs: Vec<u64> = (0..5).map(|_| a.next()).collect();
        assert_eq!(xs, (0..5).map(|_| b.next()).collect::<Vec<_>>());
        assert_eq!(
            mutate(&mut Rng::new(1), b"abc", b""),
            mutate(&mut Rng::new(1), b"abc", b"")
        );
    }
}
