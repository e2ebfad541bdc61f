//! Matchers: missing, `""` or `*` match everything; letters, digits, `_`
//! and `|` are a list of exact names; anything else is a regular expression
//! matched against the whole name.

/// A compiled matcher.
#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    Names(Vec<String>),
    Regex(regex::Regex),
}

impl Matcher {
    /// Compiles `text`; an invalid regular expression is an error.
    pub fn parse(text: Option<&str>) -> Result<Matcher, String> {
        let t = text.unwrap_or("").trim();
        if t.is_empty() || t == "*" {
            return Ok(Matcher::All);
        }
        if t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            return Ok(Matcher::Names(
                t.split('|')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            ));
        }
        regex::Regex::new(&format!("^(?:{t})$"))
            .map(Matcher::Regex)
            .map_err(|e| {
                // The regex crate's message spans lines (pattern, caret,
                // error); its last line says what is wrong.
                let text = e.to_string();
                let last = text.lines().last().unwrap_or("").trim();
                let why = last.strip_prefix("error: ").unwrap_or(last);
                format!("invalid matcher {t:?}: {why}")
            })
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(n) => n.iter().any(|x| x == name),
            Matcher::Regex(r) => r.is_match(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms() {
        assert!(Matcher::parse(None).unwrap().matches("Bash"));
        assert!(Matcher::parse(Some("*")).unwrap().matches("x"));
        let list = Matcher::parse(Some("Edit|Write")).unwrap();
        assert!(list.matches("Write") && !list.matches("MultiEdit"));
        let re = Matcher::parse(Some("mcp__.*")).unwrap();
        assert!(re.matches("mcp__fs__read") && !re.matches("xmcp__a"));
        let re = Matcher::parse(Some(".*Edit")).unwrap();
        assert!(re.matches("MultiEdit") && !re.matches("Edits"));
        assert!(Matcher::parse(Some("(")).is_err());
    }
}
