//! The session's short id, as the footer and file names show it. The
//! footer's cost pieces (tokens in and out, the cache's share, the price,
//! the context use) are the provider's own wording
//! ([`crate::provider::usage`]); the footer drops the least needed
//! pieces first when they do not fit.

/// A session id short enough for the footer and file names: without the
/// date of a `YYYYMMDD-HHMMSS-xxxx` id, else its first 8 characters.
pub fn short_session(id: &str) -> String {
    let id = super::text::strip_controls(id);
    match id.split_once('-') {
        Some((date, rest))
            if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) && !rest.is_empty() =>
        {
            rest.to_string()
        }
        _ => id.chars().take(8).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_are_short() {
        use crate::provider::usage::short_count;
        assert_eq!(short_count(999), "999");
        assert_eq!(short_count(1234), "1.2k");
        assert_eq!(short_count(40_000), "40k");
        assert_eq!(short_count(2_500_000), "2.5M");
        assert_eq!(short_session("20261201-224531-28d1"), "224531-28d1");
        assert_eq!(short_session("0123456789abcdef"), "01234567");
    }
}
