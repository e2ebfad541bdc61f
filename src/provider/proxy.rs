//! Which proxy, if any, a provider URL goes through, from the environment.
//!
//! The usual conventions of curl and most command-line tools: an `https://`
//! URL uses `https_proxy` / `HTTPS_PROXY`, an `http://` URL `http_proxy` /
//! `HTTP_PROXY`, and either falls back to `all_proxy` / `ALL_PROXY`; the
//! lower-case spelling wins when both are set. `no_proxy` / `NO_PROXY` is a
//! comma- (or space-) separated list of hosts that go direct: `*` for all,
//! `example.com` or `.example.com` for that domain and every subdomain,
//! `host:port` for one port only, IP addresses literally. A proxy URL
//! without a scheme is taken as `http://`.
//!
//! The choice is made once per provider (its base URL is fixed) and handed
//! to `ureq`, which tunnels every request through the proxy with `CONNECT`
//! (plain `http://` targets too).

/// Looks a variable up; empty values count as unset.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment as a [`Lookup`].
pub(crate) fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The proxy URL for `url`, or `None` to connect directly.
pub(crate) fn proxy_for(url: &str, env: Lookup<'_>) -> Option<String> {
    let get = |lower: &str| {
        [lower.to_string(), lower.to_ascii_uppercase()]
            .iter()
            .filter_map(|n| env(n))
            .map(|v| v.trim().to_string())
            .find(|v| !v.is_empty())
    };
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let proxy = match scheme.as_str() {
        "https" => get("https_proxy"),
        "http" => get("http_proxy"),
        _ => None,
    }
    .or_else(|| get("all_proxy"))?;
    let (host, port) = host_port(rest, &scheme)?;
    if let Some(list) = get("no_proxy") {
        if bypassed(&host, port, &list) {
            return None;
        }
    }
    Some(if proxy.contains("://") {
        proxy
    } else {
        format!("http://{proxy}")
    })
}

/// Host (lower case, IPv6 without brackets) and port of the authority
/// that starts `rest` (the URL after `scheme://`).
fn host_port(rest: &str, scheme: &str) -> Option<(String, u16)> {
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let default = if scheme == "https" { 443 } else { 80 };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => default,
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// Whether `host:port` matches an entry of the `no_proxy` list.
fn bypassed(host: &str, port: u16, list: &str) -> bool {
    list.split([',', ' ', '\t'])
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| matches_entry(host, port, &entry.to_ascii_lowercase()))
}

fn matches_entry(host: &str, port: u16, entry: &str) -> bool {
    if entry == "*" {
        return true;
    }
    let (pattern, want_port) = split_entry_port(entry);
    if want_port.is_some_and(|p| p != port) {
        return false;
    }
    let pattern = pattern.trim_start_matches('*').trim_start_matches('.');
    if pattern.is_empty() {
        return false;
    }
    host == pattern
        || host
            .strip_suffix(pattern)
            .is_some_and(|head| head.ends_with('.'))
}

/// `host:port` → (`host`, port); IPv6 entries in brackets may carry a port,
/// bare IPv6 ones never do.
fn split_entry_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(v6) = entry.strip_prefix('[') {
        if let Some((host, after)) = v6.split_once(']') {
            return (host, after.strip_prefix(':').and_then(|p| p.parse().ok()));
        }
    }
    if entry.matches(':').count() == 1 {
        if let Some((h, p)) = entry.split_once(':') {
            if let Ok(p) = p.parse() {
                return (h, Some(p));
            }
        }
    }
    (entry, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)], url: &str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        proxy_for(url, &|n| map.get(n).cloned())
    }

    #[test]
    fn scheme_picks_the_variable_lower_case_first() {
        let vars = [
            ("HTTPS_PROXY", "http://upper:1"),
            ("https_proxy", "http://lower:2"),
            ("HTTP_PROXY", "plain:3"),
        ];
        assert_eq!(
            with(&vars, "https://api.x.com/v1").as_deref(),
            Some("http://lower:2")
        );
        assert_eq!(
            with(&vars, "http://api.x.com").as_deref(),
            Some("http://plain:3")
        );
        assert_eq!(with(&[("HTTP_PROXY", "p:1")], "https://a.com"), None);
        assert_eq!(
            with(&[("ALL_PROXY", "socks5://s:1")], "https://a.com").as_deref(),
            Some("socks5://s:1")
        );
        assert_eq!(with(&[("https_proxy", "  ")], "https://a.com"), None);
    }

    #[test]
    fn no_proxy_lists_domains_ports_and_star() {
        let p = |no: &str, url: &str| with(&[("ALL_PROXY", "http://p:1"), ("NO_PROXY", no)], url);
        assert_eq!(p("localhost, example.com", "https://example.com/x"), None);
        assert_eq!(p("example.com", "https://api.Example.com/x"), None);
        assert_eq!(p(".example.com", "https://api.example.com"), None);
        assert_eq!(p("*.example.com", "https://example.com"), None);
        assert!(p("example.com", "https://notexample.com").is_some());
        assert_eq!(p("*", "http://anything:9"), None);
        assert_eq!(p("127.0.0.1:8080", "http://127.0.0.1:8080/v1"), None);
        assert!(p("127.0.0.1:8080", "http://127.0.0.1:9090/v1").is_some());
        assert_eq!(p("::1", "http://[::1]:80/"), None);
        assert_eq!(p("[::1]:81", "http://[::1]:81/"), None);
        assert!(p("", "http://a").is_some());
        let lower = with(
            &[("ALL_PROXY", "http://p:1"), ("no_proxy", "a.com")],
            "https://a.com",
        );
        assert_eq!(lower, None);
    }
}
