//! Token usage, what it costs, and how full the model's context is.
//!
//! Every provider request reports a [`Usage`] (uncached input, output,
//! cache reads and cache writes, counted separately). [`Pricing`] turns it
//! into dollars with a built-in table of well-known models ([`BUILT_IN`],
//! list prices in USD per million tokens) that config `models` overrides
//! per name; a model the table does not know has no price (`cost_usd`
//! null) rather than a guessed one. [`Totals`] adds up a session and is
//! what the terminal footer reads: tokens in and out, the cache share,
//! cost, and context use in % of the window.
//!
//! Names match exactly first, then by the longest known prefix, so dated
//! ids (`claude-sonnet-4-5-20250929`, `gpt-4.1-2025-04-14`) find their
//! family's row.

use super::Usage;
use serde::Serialize;
use serde_json::Value;

/// Context window and prices of one model (USD per million tokens).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModelInfo {
    /// Context window in tokens (0: unknown).
    pub context: u64,
    pub input_per_mtok: Option<f64>,
    pub output_per_mtok: Option<f64>,
    pub cache_read_per_mtok: Option<f64>,
    pub cache_write_per_mtok: Option<f64>,
}

const fn row(
    name: &'static str,
    context: u64,
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
) -> (&'static str, ModelInfo) {
    (
        name,
        ModelInfo {
            context,
            input_per_mtok: Some(input),
            output_per_mtok: Some(output),
            cache_read_per_mtok: Some(cache_read),
            cache_write_per_mtok: Some(cache_write),
        },
    )
}

/// List prices of well-known current models. Anthropic's cache writes are
/// the 5-minute ones (1.25× input); OpenAI charges no extra for writing
/// its automatic cache, so its write price is the input price.
pub const BUILT_IN: &[(&str, ModelInfo)] = &[
    row("claude-opus-4-8", 200_000, 5.0, 25.0, 0.5, 6.25),
    row("claude-opus-4-7", 200_000, 5.0, 25.0, 0.5, 6.25),
    row("claude-opus-4-6", 200_000, 5.0, 25.0, 0.5, 6.25),
    row("claude-opus-4-5", 200_000, 5.0, 25.0, 0.5, 6.25),
    row("claude-opus-4-1", 200_000, 15.0, 75.0, 1.5, 18.75),
    row("claude-opus-4", 200_000, 15.0, 75.0, 1.5, 18.75),
    row("claude-sonnet-4", 200_000, 3.0, 15.0, 0.3, 3.75),
    row("claude-3-7-sonnet", 200_000, 3.0, 15.0, 0.3, 3.75),
    row("claude-haiku-4-5", 200_000, 1.0, 5.0, 0.1, 1.25),
    row("claude-3-5-haiku", 200_000, 0.8, 4.0, 0.08, 1.0),
    row("gpt-5", 400_000, 1.25, 10.0, 0.125, 1.25),
    row("gpt-5-mini", 400_000, 0.25, 2.0, 0.025, 0.25),
    row("gpt-5-nano", 400_000, 0.05, 0.4, 0.005, 0.05),
    row("gpt-4.1", 1_047_576, 2.0, 8.0, 0.5, 2.0),
    row("gpt-4.1-mini", 1_047_576, 0.4, 1.6, 0.1, 0.4),
    row("gpt-4.1-nano", 1_047_576, 0.1, 0.4, 0.025, 0.1),
    row("gpt-4o", 128_000, 2.5, 10.0, 1.25, 2.5),
    row("gpt-4o-mini", 128_000, 0.15, 0.6, 0.075, 0.15),
    row("o1", 200_000, 15.0, 60.0, 7.5, 15.0),
    row("o3", 200_000, 2.0, 8.0, 0.5, 2.0),
    row("o3-mini", 200_000, 1.1, 4.4, 0.55, 1.1),
    row("o4-mini", 200_000, 1.1, 4.4, 0.275, 1.1),
];

/// The built-in table plus config `models` overrides.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pricing {
    overrides: Vec<(String, ModelInfo)>,
}

impl Pricing {
    /// Reads config `models: {NAME: {context, input_per_mtok, …}}`; fields
    /// left out keep the built-in row's value. Returns the warnings for
    /// entries that are not objects or carry non-numeric values.
    pub fn from_config(models: Option<&Value>) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let mut overrides = Vec::new();
        let Some(models) = models else {
            return (Pricing::default(), warnings);
        };
        let Some(map) = models.as_object() else {
            warnings.push("config \"models\" must be an object of model names".into());
            return (Pricing::default(), warnings);
        };
        for (name, entry) in map {
            let Some(fields) = entry.as_object() else {
                warnings.push(format!("config models.{name} must be an object"));
                continue;
            };
            let mut info = lookup(&[], name).unwrap_or_default();
            for (key, value) in fields {
                let Some(n) = value.as_f64().filter(|n| n.is_finite() && *n >= 0.0) else {
                    warnings.push(format!(
                        "config models.{name}.{key} must be a non-negative number"
                    ));
                    continue;
                };
                match key.as_str() {
                    "context" => info.context = n as u64,
                    "input_per_mtok" => info.input_per_mtok = Some(n),
                    "output_per_mtok" => info.output_per_mtok = Some(n),
                    "cache_read_per_mtok" => info.cache_read_per_mtok = Some(n),
                    "cache_write_per_mtok" => info.cache_write_per_mtok = Some(n),
                    _ => warnings.push(format!("config models.{name}: unknown key {key:?}")),
                }
            }
            overrides.push((name.clone(), info));
        }
        (Pricing { overrides }, warnings)
    }

    /// What is known of `model`, overrides first.
    pub fn info(&self, model: &str) -> Option<ModelInfo> {
        lookup(&self.overrides, model)
    }

    /// The cost of one request, `None` when a needed price is unknown.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        let info = self.info(model)?;
        cost(&info, usage)
    }
}

/// Exact name first (overrides, then built-in), then the longest prefix.
fn lookup(overrides: &[(String, ModelInfo)], model: &str) -> Option<ModelInfo> {
    let model = model.trim();
    let rows = overrides
        .iter()
        .map(|(n, i)| (n.as_str(), *i))
        .chain(BUILT_IN.iter().map(|(n, i)| (*n, *i)));
    let mut best: Option<(usize, bool, ModelInfo)> = None;
    for (name, info) in rows {
        let exact = name == model;
        if !(exact || model.starts_with(name)) {
            continue;
        }
        let better = match best {
            None => true,
            Some((len, was_exact, _)) => {
                (exact && !was_exact) || (exact == was_exact && name.len() > len)
            }
        };
        if better {
            best = Some((name.len(), exact, info));
        }
    }
    best.map(|(_, _, info)| info)
}

/// Prices all four counts; a count of zero needs no price.
pub fn cost(info: &ModelInfo, usage: &Usage) -> Option<f64> {
    let part = |tokens: u64, price: Option<f64>| -> Option<f64> {
        if tokens == 0 {
            return Some(0.0);
        }
        Some(tokens as f64 * price? / 1_000_000.0)
    };
    Some(
        part(usage.input_tokens, info.input_per_mtok)?
            + part(usage.output_tokens, info.output_per_mtok)?
            + part(usage.cache_read_tokens, info.cache_read_per_mtok)?
            + part(usage.cache_write_tokens, info.cache_write_per_mtok)?,
    )
}

/// A session's usage so far (RPC `get_state.usage`, the terminal footer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Totals {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// `None` once any request's price was unknown (and before the first).
    pub cost_usd: Option<f64>,
    /// Provider requests counted.
    pub requests: u64,
    /// Prompt size of the latest request (input + cache reads and writes).
    pub context_tokens: u64,
    /// The model's context window (0: unknown).
    pub context_window: u64,
}

impl Totals {
    /// Adds one request's usage and cost.
    pub fn add(&mut self, usage: &Usage, cost: Option<f64>, context_window: u64) {
        self.cost_usd = match (self.requests, self.cost_usd, cost) {
            (0, _, c) => c,
            (_, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.requests += 1;
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        self.cache_read_tokens += usage.cache_read_tokens;
        self.cache_write_tokens += usage.cache_write_tokens;
        self.context_tokens = usage.prompt_tokens();
        self.context_window = context_window;
    }

    /// All prompt tokens sent, cached or not.
    pub fn tokens_in(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// The share of prompt tokens read from the cache, 0.0–1.0.
    pub fn cache_share(&self) -> f64 {
        match self.tokens_in() {
            0 => 0.0,
            n => self.cache_read_tokens as f64 / n as f64,
        }
    }

    /// Context use of the latest request in % of the window, if known.
    pub fn context_percent(&self) -> Option<f64> {
        (self.context_window > 0)
            .then(|| self.context_tokens as f64 * 100.0 / self.context_window as f64)
    }

    /// The footer's pieces (`40k in (75% cached)`, `2k out`, `$6.00`,
    /// `21% ctx`) in two groups by how long a narrow footer keeps them:
    /// `[tokens in, tokens out]` (dropped first), then `[cost, context
    /// use]`.
    pub fn footer_parts(&self) -> [Vec<String>; 2] {
        let mut parts = Vec::new();
        let cache = match self.cache_read_tokens {
            0 => String::new(),
            _ => format!(" ({:.0}% cached)", self.cache_share() * 100.0),
        };
        parts.push(format!("{} in{cache}", short_count(self.tokens_in())));
        parts.push(format!("{} out", short_count(self.output_tokens)));
        let mut kept = Vec::new();
        if let Some(c) = self.cost_usd {
            kept.push(format!("${c:.2}"));
        }
        if let Some(p) = self.context_percent() {
            kept.push(format!("{p:.0}% ctx"));
        }
        [parts, kept]
    }
}

/// The front-end event for a provider stream event.
pub fn stream_event(e: super::StreamEvent<'_>) -> crate::events::Event {
    use crate::events::Event;
    match e {
        super::StreamEvent::TextDelta(d) => Event::TextDelta {
            delta: d.to_string(),
        },
        super::StreamEvent::ThinkingDelta(d) => Event::ThinkingDelta {
            delta: d.to_string(),
        },
        super::StreamEvent::Retry {
            attempt,
            wait_ms,
            reason,
        } => Event::Retry {
            attempt,
            wait_ms,
            reason: reason.to_string(),
        },
    }
}

/// The `usage` event of one finished request, priced for its model.
pub fn usage_event(provider: &dyn super::Provider, usage: &Usage) -> crate::events::Event {
    let info = provider.model_info();
    crate::events::Event::Usage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        cost_usd: info.as_ref().and_then(|i| cost(i, usage)),
        context_window: info.map_or(0, |i| i.context),
    }
}

/// Adds a `usage` event to the session totals (other events: nothing).
pub fn count(event: &crate::events::Event, totals: &mut Totals) {
    if let crate::events::Event::Usage {
        input_tokens,
        output_tokens,
        cache_read_tokens,
        cache_write_tokens,
        cost_usd,
        context_window,
    } = event
    {
        let usage = Usage {
            input_tokens: *input_tokens,
            output_tokens: *output_tokens,
            cache_read_tokens: *cache_read_tokens,
            cache_write_tokens: *cache_write_tokens,
        };
        totals.add(&usage, *cost_usd, *context_window);
    }
}

/// RPC `get_state.usage`: the totals under the `usage` event's names.
pub fn state_json(t: &Totals) -> Value {
    serde_json::json!({
        "input_tokens": t.input_tokens,
        "output_tokens": t.output_tokens,
        "cache_read_tokens": t.cache_read_tokens,
        "cache_write_tokens": t.cache_write_tokens,
        "cost_usd": t.cost_usd,
        "requests": t.requests,
        "context_tokens": t.context_tokens,
        "context_window": t.context_window,
    })
}

/// `950`, `40k`, `1.2M`.
pub fn short_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=9_999 => format!("{:.1}k", n as f64 / 1e3),
        10_000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn usage(i: u64, o: u64, r: u64, w: u64) -> Usage {
        Usage {
            input_tokens: i,
            output_tokens: o,
            cache_read_tokens: r,
            cache_write_tokens: w,
        }
    }

    #[test]
    fn dated_ids_find_their_family_and_exact_wins() {
        let p = Pricing::default();
        let sonnet = p.info("claude-sonnet-4-5-20250929").unwrap();
        assert_eq!(sonnet.input_per_mtok, Some(3.0));
        assert_eq!(
            p.info("gpt-4.1-mini-2025-04-14").unwrap().input_per_mtok,
            Some(0.4)
        );
        assert_eq!(p.info("gpt-4o").unwrap().context, 128_000);
        assert_eq!(
            p.info("claude-opus-4-1-2025").unwrap().output_per_mtok,
            Some(75.0)
        );
        assert_eq!(p.info("llama3"), None);
    }

    #[test]
    fn cost_prices_all_four_counts() {
        let (p, warnings) = Pricing::from_config(Some(&json!({
            "my-model": {"context": 1000, "input_per_mtok": 2, "output_per_mtok": 10,
                         "cache_read_per_mtok": 0.5, "cache_write_per_mtok": 4}
        })));
        assert!(warnings.is_empty(), "{warnings:?}");
        let c = p
            .cost("my-model", &usage(1_000_000, 100_000, 2_000_000, 250_000))
            .unwrap();
        assert!((c - (2.0 + 1.0 + 1.0 + 1.0)).abs() < 1e-9, "{c}");
        assert_eq!(p.cost("unknown", &usage(1, 1, 0, 0)), None);
        // An override keeps the built-in fields it does not name.
        let (p, _) = Pricing::from_config(Some(&json!({"gpt-4o": {"input_per_mtok": 1}})));
        let info = p.info("gpt-4o-2024-08-06").unwrap();
        assert_eq!(
            (info.input_per_mtok, info.output_per_mtok),
            (Some(1.0), Some(10.0))
        );
        let (_, warnings) = Pricing::from_config(Some(&json!({"x": {"context": "big"}, "y": 3})));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
    }

    #[test]
    fn totals_add_up_and_an_unknown_price_makes_cost_unknown() {
        let mut t = Totals::default();
        t.add(&usage(1000, 200, 3000, 0), Some(0.5), 10_000);
        t.add(&usage(100, 50, 3900, 100), Some(0.25), 10_000);
        assert_eq!(t.tokens_in(), 8100);
        assert_eq!(t.context_tokens, 4100);
        assert_eq!(t.cost_usd, Some(0.75));
        assert_eq!(t.context_percent(), Some(41.0));
        assert_eq!(
            t.footer_parts(),
            [
                vec!["8.1k in (85% cached)".to_string(), "250 out".into()],
                vec!["$0.75".to_string(), "41% ctx".into()]
            ]
        );
        t.add(&usage(1, 1, 0, 0), None, 0);
        assert_eq!(t.cost_usd, None);
        assert_eq!(t.context_percent(), None);
    }
}
