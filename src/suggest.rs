//! "Did you mean …?" for names that do not exist (extensions, skills,
//! subcommands). A leaf module: the CLI and the skills both use it.
//!
//! A candidate is close when its edit distance (Levenshtein, on characters,
//! case-insensitive) is at most a third of the typed name's length (at
//! least 1), or when one name contains the other. At most three are
//! offered, closest first.

/// How many suggestions are offered at most.
const MAX_SUGGESTIONS: usize = 3;

/// Edit distance between `a` and `b` (insertions, deletions, substitutions).
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidates close to `name`, closest first, without duplicates.
pub fn suggestions<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let typed = name.to_lowercase();
    let limit = typed.chars().count().div_ceil(3).max(1);
    let mut scored: Vec<(usize, String)> = Vec::new();
    for c in candidates {
        let lower = c.to_lowercase();
        if c == name || scored.iter().any(|(_, s)| s == c) {
            continue;
        }
        let d = levenshtein(&typed, &lower);
        let contains = typed.len() >= 3 && (lower.contains(&typed) || typed.contains(&lower));
        if d <= limit || contains {
            scored.push((d, c.to_string()));
        }
    }
    scored.sort();
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, s)| s)
        .collect()
}

/// `; did you mean "a" or "b"?` or the empty string.
pub fn did_you_mean(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!("; did you mean \"{one}\"?"),
        [init @ .., last] => format!(
            "; did you mean {} or \"{last}\"?",
            init.iter()
                .map(|s| format!("\"{s}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("wether", "weather"), 1);
        assert_eq!(levenshtein("ü", "u"), 1);
    }

    #[test]
    fn close_names_first() {
        let installed = ["weather", "hello-py", "guard", "todo", "Weather2"];
        assert_eq!(suggestions("wether", installed), ["weather", "Weather2"]);
        assert_eq!(suggestions("hello", installed), ["hello-py"]);
        assert_eq!(suggestions("xyz", installed), Vec::<String>::new());
        assert_eq!(suggestions("tod", installed), ["todo"]);
        assert_eq!(did_you_mean(&[]), "");
        assert_eq!(
            did_you_mean(&["a".into(), "b".into(), "c".into()]),
            "; did you mean \"a\", \"b\" or \"c\"?"
        );
    }
}
