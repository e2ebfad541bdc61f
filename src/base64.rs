//! Standard base64 (RFC 4648, `+/` alphabet, `=` padding).
//!
//! Small on purpose: the host needs it for image blocks (the `read` tool,
//! provider payloads) and nowhere near hot paths. [`encode`] always pads;
//! [`decode`] accepts padded or unpadded input, skips ASCII whitespace (line
//! breaks in pasted data) and rejects anything else that is not in the
//! alphabet, so bad data is an error, never a panic.

use std::fmt;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes `input` as padded standard base64.
pub fn encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b0 = chunk[0] as u32;
        let b1 = chunk.get(1).copied().unwrap_or(0) as u32;
        let b2 = chunk.get(2).copied().unwrap_or(0) as u32;
        let n = (b0 << 16) | (b1 << 8) | b2;
        let sextet = |shift: u32| ALPHABET[((n >> shift) & 63) as usize] as char;
        out.push(sextet(18));
        out.push(sextet(12));
        out.push(if chunk.len() > 1 { sextet(6) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(0) } else { '=' });
    }
    out
}

/// Why [`decode`] refused its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset in the input where the problem was found.
    pub position: usize,
    /// What was wrong there.
    pub reason: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid base64 at byte {}: {}",
            self.position, self.reason
        )
    }
}

impl std::error::Error for DecodeError {}

/// Decodes standard base64, padded or not, ignoring ASCII whitespace.
pub fn decode(input: &str) -> Result<Vec<u8>, DecodeError> {
    let mut sextets = Vec::with_capacity(input.len());
    let mut padding = 0usize;
    for (position, byte) in input.bytes().enumerate() {
        if byte.is_ascii_whitespace() {
            continue;
        }
        let err = |reason| DecodeError { position, reason };
        if byte == b'=' {
            padding += 1;
            if padding > 2 {
                return Err(err("too much padding"));
            }
            continue;
        }
        if padding > 0 {
            return Err(err("data after padding"));
        }
        sextets.push(sextet_value(byte).ok_or_else(|| err("not a base64 character"))?);
    }
    let end = DecodeError {
        position: input.len(),
        reason: "truncated input",
    };
    if sextets.len() % 4 == 1 || (padding > 0 && (sextets.len() + padding) % 4 != 0) {
        return Err(end);
    }
    Ok(sextets_to_bytes(&sextets))
}

fn sextet_value(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Packs groups of four sextets into three bytes; a final group of two or
/// three sextets yields one or two bytes.
fn sextets_to_bytes(sextets: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(sextets.len() / 4 * 3 + 2);
    for group in sextets.chunks(4) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &s)| n | (s as u32) << (18 - 6 * i));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..group.len() - 1]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors_round_trip() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, coded) in cases {
            assert_eq!(encode(plain.as_bytes()), coded);
            assert_eq!(decode(coded).unwrap(), plain.as_bytes());
        }
    }

    #[test]
    fn all_byte_values_round_trip() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let coded = encode(&data);
        assert!(coded.contains('+') && coded.contains('/'));
        assert_eq!(decode(&coded).unwrap(), data);
    }

    #[test]
    fn decode_is_lenient_about_padding_and_whitespace() {
        assert_eq!(decode("Zm8").unwrap(), b"fo");
        assert_eq!(decode("Zm9v\nYmFy\r\n").unwrap(), b"foobar");
    }

    #[test]
    fn decode_rejects_garbage() {
        assert_eq!(decode("Zm9v!").unwrap_err().position, 4);
        assert_eq!(decode("Zg==Zg").unwrap_err().reason, "data after padding");
        assert_eq!(decode("Zg===").unwrap_err().reason, "too much padding");
        assert_eq!(decode("Z").unwrap_err().reason, "truncated input");
        assert_eq!(decode("Zm9=").unwrap(), b"fo");
        assert!(decode("Zm=").is_err());
        assert!(decode("Zm9vY")
            .unwrap_err()
            .to_string()
            .contains("truncated"));
    }
}
