//! Tool names the model sees: `mcp__<server>__<tool>`, characters outside
//! `[A-Za-z0-9_-]` replaced by `_`; a name over 64 characters becomes its
//! first 55, `_`, and 8 hex digits of a hash of the full (unsanitised)
//! name, so distinct long names stay distinct and the same name maps the
//! same way on every run (FNV-1a, 32 bits: no per-process seed).

/// The longest name providers accept.
pub const MAX_NAME: usize = 64;
/// Characters kept before the hash.
pub const CUT: usize = 55;

/// The name zut offers for `tool` of `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("mcp__{server}__{tool}");
    let clean: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_NAME {
        return clean;
    }
    format!("{}_{:08x}", &clean[..CUT], fnv1a(full.as_bytes()))
}

/// 32-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitised_and_hashed_names() {
        assert_eq!(
            tool_name("time", "get_current_time"),
            "mcp__time__get_current_time"
        );
        assert_eq!(tool_name("fs", "read.file v2"), "mcp__fs__read_file_v2");
        let long = tool_name("srv", &"x".repeat(80));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__srv__xxxx"));
        assert_eq!(&long[55..56], "_");
        assert!(long[56..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(long, tool_name("srv", &"x".repeat(81)));
        assert_eq!(fnv1a(b"a"), 0xe40c292c);
    }
}
