//! The one sanitizer for untrusted text on its way to a terminal.
//!
//! Extensions, models and log files can hold bytes that a terminal acts on:
//! escape sequences that move the cursor, retitle the window, write the
//! clipboard (OSC 52), hide a link target (OSC 8), or start a device control
//! string. Everything that reaches a terminal from such a source goes
//! through this module, which removes:
//!
//! - escape sequences: CSI (`ESC [` … final byte), the string sequences OSC,
//!   DCS, SOS, PM and APC (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _` up to
//!   BEL or the string terminator), and the short `ESC` forms (`ESC ( B`,
//!   `ESC # 8`, `ESC c` …);
//! - their 8-bit C1 forms (U+009B CSI, U+009D OSC, U+0090 DCS, U+0098 SOS,
//!   U+009E PM, U+009F APC) together with what follows them, and every
//!   other C1 control (U+0080–U+009F);
//! - C0 controls (NUL, BS, CR, BEL, …) and DEL, except newline and tab.
//!
//! Invariants: the output is valid UTF-8 and contains no byte below 0x20
//! other than `\n` and `\t`, no 0x7f and no C1 character; text without any
//! of these is returned unchanged (and not copied). CAN and SUB abort a
//! sequence, as on a real terminal; an unterminated string sequence
//! swallows the rest of its input. [`Sanitizer`] keeps its state between
//! calls, so a sequence or a UTF-8 character split across two reads (as in
//! `zut ext logs -f`) is still handled; invalid UTF-8 in a byte stream
//! becomes U+FFFD.
//!
//! Whether to sanitize at all is the caller's choice: bytes going into a
//! pipe or a file are left intact ([`for_output`]).

use std::borrow::Cow;

const BEL: char = '\u{7}';
const ESC: char = '\u{1b}';
const CAN: char = '\u{18}';
const SUB: char = '\u{1a}';
/// The 8-bit string terminator.
const ST8: char = '\u{9c}';

/// Where the machine is inside a control sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Text,
    /// After ESC.
    Escape,
    /// After ESC and one or more intermediate bytes (0x20–0x2f).
    EscIntermediate,
    /// Inside a CSI sequence, until a final byte (0x40–0x7e).
    Csi,
    /// Inside an OSC/DCS/SOS/PM/APC string, until BEL or ST.
    Str,
    /// After ESC inside such a string.
    StrEscape,
}

/// A streaming sanitizer: feed it text or bytes in pieces.
#[derive(Debug, Default)]
pub struct Sanitizer {
    state: State,
    /// The start of a UTF-8 character cut off at the end of the last chunk.
    partial: Vec<u8>,
}

impl Sanitizer {
    /// Appends the printable part of `input` to `out`.
    pub fn push_str(&mut self, input: &str, out: &mut String) {
        for c in input.chars() {
            self.feed(c, out);
        }
    }

    /// Appends the printable part of `input`, a piece of a byte stream, to
    /// `out` as UTF-8. Invalid UTF-8 becomes U+FFFD; a character cut at the
    /// end of `input` is completed by the next call (or [`Sanitizer::finish`]).
    pub fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut text = String::new();
        let joined;
        let mut rest: &[u8] = if self.partial.is_empty() {
            input
        } else {
            let mut j = std::mem::take(&mut self.partial);
            j.extend_from_slice(input);
            joined = j;
            &joined
        };
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    self.push_str(s, &mut text);
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    // Safe: from_utf8 said these bytes are valid.
                    self.push_str(std::str::from_utf8(good).unwrap_or_default(), &mut text);
                    match e.error_len() {
                        Some(n) => {
                            self.feed(char::REPLACEMENT_CHARACTER, &mut text);
                            rest = &bad[n..];
                        }
                        None => {
                            self.partial = bad.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        out.extend_from_slice(text.as_bytes());
    }

    /// Ends the stream: a character left incomplete becomes U+FFFD.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if !std::mem::take(&mut self.partial).is_empty() {
            let mut text = String::new();
            self.feed(char::REPLACEMENT_CHARACTER, &mut text);
            out.extend_from_slice(text.as_bytes());
        }
    }

    fn feed(&mut self, c: char, out: &mut String) {
        self.state = match self.state {
            State::Text => text(c, out),
            State::Escape => match c {
                '[' => State::Csi,
                ']' | 'P' | 'X' | '^' | '_' => State::Str,
                '\u{20}'..='\u{2f}' => State::EscIntermediate,
                // Any final byte ends the short form; a control aborts it.
                '\u{30}'..='\u{7e}' => State::Text,
                _ => text(c, out),
            },
            State::EscIntermediate => match c {
                '\u{20}'..='\u{2f}' => State::EscIntermediate,
                '\u{30}'..='\u{7e}' => State::Text,
                _ => text(c, out),
            },
            State::Csi => match c {
                '\u{20}'..='\u{3f}' => State::Csi,
                '\u{40}'..='\u{7e}' => State::Text,
                // Anything else cuts the sequence short and is itself
                // treated as text (a newline survives, ESC starts anew).
                _ => text(c, out),
            },
            State::Str => match c {
                BEL | ST8 | CAN | SUB => State::Text,
                ESC => State::StrEscape,
                _ => State::Str,
            },
            State::StrEscape => match c {
                '\\' => State::Text,
                // ESC followed by anything else ends the string and starts
                // a new sequence, as terminals do.
                _ => {
                    self.state = State::Escape;
                    return self.feed(c, out);
                }
            },
        };
    }
}

/// The state after `c` in text; appends `c` when printable.
fn text(c: char, out: &mut String) -> State {
    match c {
        ESC => State::Escape,
        '\u{9b}' => State::Csi,
        '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => State::Str,
        '\n' | '\t' => {
            out.push(c);
            State::Text
        }
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => State::Text,
        _ => {
            out.push(c);
            State::Text
        }
    }
}

/// True when `text` has nothing to remove.
fn is_clean(text: &str) -> bool {
    // C1 characters are encoded as 0xc2 0x80..=0x9f.
    let bytes = text.as_bytes();
    !bytes.iter().enumerate().any(|(i, &b)| {
        (b < 0x20 && b != b'\n' && b != b'\t')
            || b == 0x7f
            || (b == 0xc2 && bytes.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)))
    })
}

/// `text` without control sequences and control characters other than
/// newline and tab; borrowed when there was nothing to remove.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if is_clean(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    Sanitizer::default().push_str(text, &mut out);
    Cow::Owned(out)
}

/// `bytes` (a log, possibly not UTF-8) as sanitized UTF-8; borrowed when
/// the bytes were valid UTF-8 with nothing to remove.
pub fn sanitize_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    if std::str::from_utf8(bytes).is_ok_and(is_clean) {
        return Cow::Borrowed(bytes);
    }
    let mut s = Sanitizer::default();
    let mut out = Vec::with_capacity(bytes.len());
    s.push(bytes, &mut out);
    s.finish(&mut out);
    Cow::Owned(out)
}

/// `text` as it should be written to an output: sanitized for a terminal,
/// byte for byte for a pipe or a file (a program reading zut's output gets
/// exactly what the model or the extension produced).
pub fn for_output(text: &str, is_terminal: bool) -> Cow<'_, str> {
    if is_terminal {
        sanitize(text)
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> String {
        sanitize(text).into_owned()
    }

    /// Every character that must never come out.
    fn forbidden(c: char) -> bool {
        (c < ' ' && c != '\n' && c != '\t') || ('\u{7f}'..='\u{9f}').contains(&c)
    }

    #[test]
    fn plain_text_is_borrowed() {
        for t in [
            "",
            "hello",
            "tab\tand\nnewline",
            "é ü 日本 🦀",
            "\u{a0}\u{ff}",
        ] {
            assert!(matches!(sanitize(t), Cow::Borrowed(_)), "{t:?}");
            assert!(matches!(sanitize_bytes(t.as_bytes()), Cow::Borrowed(_)));
        }
    }

    #[test]
    fn every_single_control_character() {
        for c in ('\u{0}'..='\u{a0}').filter(|&c| c != ESC) {
            let got = s(&format!("a{c}b"));
            let want = if c == '\n' || c == '\t' || !forbidden(c) {
                format!("a{c}b")
            } else if ['\u{9b}', '\u{90}', '\u{98}', '\u{9d}', '\u{9e}', '\u{9f}'].contains(&c) {
                // An 8-bit introducer: what follows belongs to the sequence.
                continue;
            } else {
                "ab".into()
            };
            assert_eq!(got, want, "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn csi_sequences() {
        assert_eq!(s("a\x1b[31mred\x1b[0m b"), "ared b");
        assert_eq!(s("x\x1b[2J\x1b[Hy"), "xy");
        assert_eq!(s("x\x1b[?1049hy"), "xy");
        assert_eq!(s("x\x1b[38;5;196mz"), "xz");
        assert_eq!(s("x\x1b[ qz"), "xz"); // intermediate byte
        assert_eq!(s("x\u{9b}31mz"), "xz"); // 8-bit CSI
        assert_eq!(s("x\x1b[31\ny"), "x\ny"); // cut short by a newline
        assert_eq!(s("x\x1b[31\x1b[0my"), "xy"); // cut short by ESC
        assert_eq!(s("x\x1b[31\x18y"), "xy"); // CAN aborts
        assert_eq!(s("x\x1b["), "x");
    }

    #[test]
    fn string_sequences() {
        assert_eq!(s("x\x1b]0;title\x07y"), "xy");
        assert_eq!(s("x\x1b]52;c;ZXZpbA==\x07y"), "xy"); // clipboard write
        assert_eq!(s("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\"), "link");
        assert_eq!(s("x\x1bPq#0;2;0;0;0\x1b\\y"), "xy"); // DCS (sixel)
        assert_eq!(s("x\x1b_apc\x1b\\y"), "xy");
        assert_eq!(s("x\x1b^pm\x1b\\y"), "xy");
        assert_eq!(s("x\x1bXsos\x1b\\y"), "xy");
        assert_eq!(s("x\u{9d}0;t\u{9c}y"), "xy"); // 8-bit OSC and ST
        assert_eq!(s("x\u{90}dcs\x07y"), "xy");
        assert_eq!(s("x\u{9f}apc\u{9c}y"), "xy");
        assert_eq!(s("x\u{9e}pm\u{9c}y"), "xy");
        assert_eq!(s("x\u{98}sos\u{9c}y"), "xy");
        assert_eq!(s("x\x1b]0;a\nb\x07y"), "xy"); // newline inside is eaten
        assert_eq!(s("x\x1b]0;t\x1b[1my"), "xy"); // ESC ends it, CSI removed
        assert_eq!(s("x\x1b]0;unterminated"), "x");
        assert_eq!(s("x\x1b]0;t\x1ay"), "xy"); // SUB aborts
    }

    #[test]
    fn short_escape_forms() {
        assert_eq!(s("x\x1b(By"), "xy");
        assert_eq!(s("x\x1b#8y"), "xy");
        assert_eq!(s("x\x1bcy"), "xy");
        assert_eq!(s("x\x1b7\x1b8y"), "xy");
        assert_eq!(s("x\x1b\ny"), "x\ny");
        assert_eq!(s("x\x1b"), "x");
        assert_eq!(s("x\x1b\x1b[1my"), "xy");
    }

    #[test]
    fn c0_and_del() {
        assert_eq!(s("bell\x07\r\nok\tz"), "bell\nok\tz");
        assert_eq!(s("a\x08\x08b\0c\x7fd\x0c\x0be"), "abcde");
        assert_eq!(s("évil\x08\x08\x08\x08good"), "évilgood");
    }

    #[test]
    fn bytes_split_anywhere_give_the_same_result() {
        let input = "pré\x1b[31mrouge\x1b]8;;u\x1b\\lien 日本\u{9b}1m🦀\r\n".as_bytes();
        let whole = sanitize_bytes(input).into_owned();
        assert_eq!(
            String::from_utf8(whole.clone()).unwrap(),
            "prérougelien 日本🦀\n"
        );
        for cut in 0..=input.len() {
            let mut san = Sanitizer::default();
            let mut out = Vec::new();
            san.push(&input[..cut], &mut out);
            san.push(&input[cut..], &mut out);
            san.finish(&mut out);
            assert_eq!(out, whole, "cut at {cut}");
        }
    }

    #[test]
    fn invalid_utf8_becomes_replacement() {
        assert_eq!(&*sanitize_bytes(b"a\xffb"), "a\u{fffd}b".as_bytes());
        // A lone 0x9b byte is not a CSI in UTF-8; it is simply invalid.
        assert_eq!(&*sanitize_bytes(b"a\x9b31mb"), "a\u{fffd}31mb".as_bytes());
        assert_eq!(&*sanitize_bytes(b"a\xe6\x97"), "a\u{fffd}".as_bytes());
        let mut san = Sanitizer::default();
        let mut out = Vec::new();
        san.push(b"a\xe6", &mut out);
        assert_eq!(out, b"a");
        san.push(b"\x97\xa5", &mut out);
        assert_eq!(out, "a日".as_bytes());
    }

    #[test]
    fn output_never_holds_a_control() {
        // Every pair of characters from an alphabet rich in introducers,
        // prefixed and suffixed: the invariant holds whatever the mix.
        let alphabet = [
            ESC, '[', ']', 'P', '\\', BEL, '\n', '\t', '\r', '\u{9b}', '\u{9c}', '\u{9d}', 'm',
            ';', '0', 'a', '\u{0}', '\u{7f}', '\u{85}', CAN, 'é',
        ];
        for a in alphabet {
            for b in alphabet {
                for c in alphabet {
                    let input: String = [a, b, c, 'z'].iter().collect();
                    let out = s(&input);
                    assert!(!out.chars().any(forbidden), "{input:?} -> {out:?}");
                }
            }
        }
    }

    #[test]
    fn output_choice() {
        assert_eq!(for_output("a\x1b[1mb", false), "a\x1b[1mb");
        assert_eq!(for_output("a\x1b[1mb", true), "ab");
    }
}
