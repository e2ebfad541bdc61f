//! The size cap on what the model sees of one tool result.
//!
//! Built-in tools bound their own output (bash keeps a head and a tail of
//! about 50 KiB), but an extension or MCP server can answer with tens of
//! megabytes, which would go to the provider verbatim, cost a fortune and
//! overflow the context. Every result passes through [`cap`] before the
//! model, the transcript or the event stream see it.
//!
//! Invariants: text within the limit is untouched; a longer result keeps
//! its head (four fifths of the limit) and its tail, cut at character
//! boundaries, with one line in between that says how much was cut and
//! how to raise the limit; an image larger than [`MAX_IMAGE_DATA`] bytes
//! of base64 is replaced by a line saying so.

use zut_ext::wire::ContentBlock;

/// The default limit on a result's text, in bytes.
pub const DEFAULT_RESULT_BYTES: usize = 100 * 1024;
/// The environment variable that overrides the limit (bytes).
pub const RESULT_BYTES_ENV: &str = "ZUT_TOOL_RESULT_MAX_BYTES";
/// The `config.json` key that sets the limit (bytes).
pub const RESULT_BYTES_KEY: &str = "tool_result_max_bytes";
/// The largest image (base64 bytes) passed on to the model.
pub const MAX_IMAGE_DATA: usize = 8 * 1024 * 1024;

/// The limit in force: the environment, else `config.json`, else the
/// default. Zero or garbage means the default.
pub fn limit(zut_home: &std::path::Path) -> usize {
    let from_env = std::env::var(RESULT_BYTES_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok());
    let from_config = || {
        crate::config::load(zut_home)
            .ok()?
            .extra
            .get(RESULT_BYTES_KEY)?
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
    };
    from_env
        .or_else(from_config)
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_RESULT_BYTES)
}

/// The largest index `<= at` that is a character boundary of `s`.
fn floor_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `content` with its text cut to `max` bytes in all (see the module docs).
pub fn cap(content: Vec<ContentBlock>, max: usize) -> Vec<ContentBlock> {
    let total: usize = content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.len(),
            _ => 0,
        })
        .sum();
    let oversized_image = content.iter().any(|b| match b {
        ContentBlock::Image { data, .. } => data.len() > MAX_IMAGE_DATA,
        _ => false,
    });
    if total <= max && !oversized_image {
        return content;
    }
    let mut left = max;
    let mut out = Vec::with_capacity(content.len());
    for block in content {
        match block {
            ContentBlock::Text { text } if total > max => {
                if left == 0 {
                    continue;
                }
                if text.len() <= left {
                    left -= text.len();
                    out.push(ContentBlock::Text { text });
                    continue;
                }
                let head = floor_boundary(&text, left * 4 / 5);
                let tail_len = left - head;
                let tail = floor_boundary(&text, text.len() - tail_len);
                let tail = if tail < head { head } else { tail };
                let cut = tail - head;
                left = 0;
                out.push(ContentBlock::Text {
                    text: format!(
                        "{}\n[… {cut} bytes cut: the tool returned {total} bytes of text, over the {max}-byte limit (set {RESULT_BYTES_KEY} in config.json or {RESULT_BYTES_ENV} to change it) …]\n{}",
                        &text[..head],
                        &text[tail..]
                    ),
                });
            }
            ContentBlock::Image { data, mime_type } if data.len() > MAX_IMAGE_DATA => {
                out.push(ContentBlock::Text {
                    text: format!(
                        "[an image ({mime_type}, {} bytes of base64) was left out: over the {MAX_IMAGE_DATA}-byte limit for images]",
                        data.len()
                    ),
                });
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> ContentBlock {
        ContentBlock::Text { text: s.into() }
    }

    fn texts(blocks: &[ContentBlock]) -> String {
        blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => text.as_str(),
                _ => "<image>",
            })
            .collect::<Vec<_>>()
            .join("|")
    }

    #[test]
    fn results_within_the_limit_are_untouched() {
        let c = vec![text("abc"), text("def")];
        assert_eq!(cap(c.clone(), 6), c);
    }

    #[test]
    fn a_long_result_keeps_head_and_tail_and_says_what_was_cut() {
        let long = format!("{}{}", "h".repeat(1000), "t".repeat(1000));
        let out = texts(&cap(vec![text(&long)], 100));
        assert!(out.starts_with(&"h".repeat(80)), "{out}");
        assert!(out.ends_with(&"t".repeat(20)), "{out}");
        assert!(out.contains("1900 bytes cut"), "{out}");
        assert!(out.contains("2000 bytes of text"), "{out}");
        assert!(out.contains(RESULT_BYTES_KEY), "{out}");
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        let long = "é".repeat(1000);
        let out = texts(&cap(vec![text(&long)], 101));
        assert!(out.contains("bytes cut"));
    }

    #[test]
    fn later_blocks_past_the_limit_are_dropped() {
        let out = cap(
            vec![text(&"a".repeat(50)), text(&"b".repeat(200)), text("c")],
            100,
        );
        let joined = texts(&out);
        assert!(joined.starts_with(&"a".repeat(50)));
        assert!(!joined.ends_with("|c"), "{joined}");
    }

    #[test]
    fn huge_images_are_replaced_by_a_line() {
        let img = ContentBlock::Image {
            mime_type: "image/png".into(),
            data: "A".repeat(MAX_IMAGE_DATA + 1),
        };
        let out = texts(&cap(vec![img], 100));
        assert!(
            out.contains("image/png") && out.contains("left out"),
            "{out}"
        );
    }
}
