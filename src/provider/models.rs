//! `zut models` and `/model`: the provider's model list, and remembering
//! the model chosen.
//!
//! Both APIs answer `GET /v1/models` with `{"data":[{"id":…},…]}`
//! (Anthropic adds `display_name`, paging fields; OpenAI `object`,
//! `owned_by`); only the ids matter here, in the server's order. Ollama's
//! OpenAI-compatible endpoint answers the same shape.

use super::{ProviderError, Settings};
use serde_json::Value;

/// The model ids of a list answer; entries without an id are skipped.
pub fn ids(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .or_else(|| list["models"].as_array())
        .map(|data| {
            data.iter()
                .filter_map(|m| m["id"].as_str().or_else(|| m["name"].as_str()))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `/model`'s answer: one id a line, the current one marked, and how to
/// switch.
pub fn listing(ids: &[String], current: &str) -> String {
    let mut out: Vec<String> = ids
        .iter()
        .map(|id| {
            let mark = if id == current { "* " } else { "  " };
            format!("{mark}{id}")
        })
        .collect();
    if out.is_empty() {
        out.push("the provider listed no models".into());
    }
    out.push("switch with /model NAME".into());
    out.join("\n")
}

/// The models of the configured provider.
pub fn list(settings: &Settings) -> Result<Vec<String>, ProviderError> {
    super::create(settings)?.list_models()
}

/// `zut [provider flags] models [--json] [provider flags]`: the flags
/// without `models` and `--json`, and whether `--json` was given; `None`
/// when the first word that is not a flag (or a flag's value) is not
/// `models`, or when a mode flag makes it a prompt (`zut -p models`).
pub fn split_cli(args: &[String]) -> Option<(Vec<String>, bool)> {
    const VALUED: &[&str] = &["--provider", "--model", "--base-url", "--api-key", "--cwd"];
    let mut rest = Vec::new();
    let mut json = false;
    let mut seen = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let flag = a.split_once('=').map_or(a, |(f, _)| f);
        if a == "models" && !seen {
            seen = true;
        } else if a == "--json" {
            json = true;
        } else if VALUED.contains(&flag) {
            rest.push(a.to_string());
            if !a.contains('=') {
                i += 1;
                rest.push(args.get(i)?.clone());
            }
        } else if a.starts_with('-') && !matches!(a, "-p" | "--print" | "--mode") {
            rest.push(a.to_string());
        } else {
            return None;
        }
        i += 1;
    }
    seen.then_some((rest, json))
}

/// Prints the list (one id per line, or one JSON document) and returns
/// the exit status.
pub fn print(settings: &Settings, json: bool) -> i32 {
    match list(settings) {
        Ok(ids) if json => {
            let doc = serde_json::json!({"provider": settings.provider, "models": ids});
            println!("{doc}");
            0
        }
        Ok(ids) => {
            for id in ids {
                println!("{}", crate::sanitize::sanitize(&id));
            }
            0
        }
        Err(e) => {
            eprintln!("zut models: {e}");
            1
        }
    }
}

/// Remembers `model` for `provider` in `config.json` (as `--model` is):
/// only when the saved provider is this one; `script` never.
pub fn remember(home: &std::path::Path, provider: &str, model: &str) {
    if provider == "script" || provider.is_empty() {
        return;
    }
    let changed = crate::config::update(home, |saved| {
        if saved.provider.as_deref() != Some(provider) || saved.model.as_deref() == Some(model) {
            return false;
        }
        saved.model = Some(model.to_string());
        true
    });
    if let Err(e) = changed {
        log::warn!("cannot remember the model: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn both_shapes_give_ids_in_order() {
        let anthropic = json!({"data":[{"type":"model","id":"claude-opus-4-5","display_name":"Opus"},
            {"type":"model","id":"claude-haiku-4-5"}],"has_more":false});
        assert_eq!(ids(&anthropic), ["claude-opus-4-5", "claude-haiku-4-5"]);
        let openai =
            json!({"object":"list","data":[{"id":"gpt-4.1","object":"model"},{"object":"model"}]});
        assert_eq!(ids(&openai), ["gpt-4.1"]);
        assert!(ids(&json!({"error":"x"})).is_empty());
    }

    #[test]
    fn the_command_line_split() {
        assert_eq!(
            split_cli(&v(&["--provider", "openai", "models", "--json"])),
            Some((v(&["--provider", "openai"]), true))
        );
        assert_eq!(
            split_cli(&v(&["models", "--base-url=http://x"])),
            Some((v(&["--base-url=http://x"]), false))
        );
        assert_eq!(split_cli(&v(&["-p", "models"])), None);
        assert_eq!(split_cli(&v(&["hello", "models"])), None);
        assert_eq!(split_cli(&v(&["--json", "models"])), Some((v(&[]), true)));
        assert_eq!(split_cli(&v(&["--provider"])), None);
    }
}
