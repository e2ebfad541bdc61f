//! The footer's cost line: tokens in and out, the cache's share of the
//! input, the price so far and how full the model's context window is.

use super::app::App;

/// Token use of the session so far, from `usage` events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageTotals {
    pub requests: u64,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// Sum of the known prices; `None` while no price was known.
    pub cost: Option<f64>,
    /// The newest request's whole input (its size in the context window).
    pub last_context: u64,
}

impl UsageTotals {
    pub fn add(&mut self, input: u64, output: u64, read: u64, write: u64, cost: Option<f64>) {
        self.requests += 1;
        self.input += input;
        self.output += output;
        self.cache_read += read;
        self.cache_write += write;
        if let Some(c) = cost.filter(|c| c.is_finite() && *c >= 0.0) {
            self.cost = Some(self.cost.unwrap_or(0.0) + c);
        }
        self.last_context = input + read + write + output;
    }
}

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

/// `1234` → `1.2k`, `40000` → `40k`, `2500000` → `2.5M`.
pub fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=9_999 => format!("{:.1}k", n as f64 / 1e3),
        10_000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// The context window of well-known models, in tokens.
pub fn context_window(model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    let table: &[(&str, u64)] = &[
        ("claude", 200_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-5", 400_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("gemini", 1_048_576),
        ("deepseek", 128_000),
        ("qwen", 131_072),
        ("llama", 128_000),
    ];
    table
        .iter()
        .find(|(p, _)| m.starts_with(p) || m.contains(&format!("/{p}")))
        .map(|(_, n)| *n)
}

impl App {
    /// `40k in · 2k out · 75% cached · $0.12 · ctx 21%`, or empty before
    /// the first `usage` event.
    pub(super) fn usage_text(&self) -> String {
        let u = &self.usage;
        if u.requests == 0 {
            return String::new();
        }
        let all_in = u.input + u.cache_read + u.cache_write;
        let mut parts = vec![format!("{} in · {} out", tokens(all_in), tokens(u.output))];
        if u.cache_read > 0 && all_in > 0 {
            parts.push(format!("{}% cached", u.cache_read * 100 / all_in));
        }
        if let Some(c) = u.cost {
            parts.push(format!("${c:.2}"));
        }
        if let Some(win) = context_window(&self.state.model) {
            parts.push(format!("ctx {}%", (u.last_context * 100 / win).min(999)));
        }
        parts.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_are_short() {
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(1234), "1.2k");
        assert_eq!(tokens(40_000), "40k");
        assert_eq!(tokens(2_500_000), "2.5M");
        assert_eq!(context_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(context_window("scripted-model"), None);
        assert_eq!(short_session("20261201-224531-28d1"), "224531-28d1");
        assert_eq!(short_session("0123456789abcdef"), "01234567");
    }
}
