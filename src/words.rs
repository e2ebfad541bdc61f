//! How counts read in messages: `1 line`, `2 lines`. A leaf module, for
//! the CLI and the terminal alike.

/// `n` and `what`, with an `s` unless `n` is 1: `plural(2, "MCP server")`
/// is `2 MCP servers`. For nouns whose plural takes just an `s`.
pub fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::plural(1, "line"), "1 line");
        assert_eq!(super::plural(0, "skill"), "0 skills");
        assert_eq!(super::plural(2, "MCP server"), "2 MCP servers");
    }
}
