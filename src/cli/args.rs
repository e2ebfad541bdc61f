//! A small argument parser for the `zut ext` subcommands.
//!
//! Each subcommand declares its options as [`Opt`]s; [`parse`] accepts
//! `--name`, `--name=value`, `--name value`, short aliases (`-f`), `--` to
//! end options, and `-h`/`--help` anywhere. Errors are one line, naming the
//! option; the caller adds the usage line.

/// One option a subcommand accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opt {
    /// Spellings, the first one canonical (`["--follow", "-f"]`).
    pub names: &'static [&'static str],
    /// Whether it takes a value (`--build=go` or `--build go`).
    pub takes_value: bool,
}

/// Parsed arguments.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    /// `-h` or `--help` was given.
    pub help: bool,
    /// Canonical names of the switches given.
    switches: Vec<&'static str>,
    /// Canonical names and values of the valued options given.
    values: Vec<(&'static str, String)>,
    /// Everything else, in order.
    pub positionals: Vec<String>,
}

impl Parsed {
    /// Whether the switch with canonical name `name` was given.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.switches.contains(&name)
    }

    /// The value of the option with canonical name `name`.
    pub(crate) fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses `args` against `opts`.
pub(crate) fn parse(args: &[String], opts: &[Opt]) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            parsed.positionals.extend(iter.by_ref().cloned());
            break;
        }
        if arg == "-h" || arg == "--help" {
            parsed.help = true;
            continue;
        }
        if !arg.starts_with('-') || arg == "-" {
            parsed.positionals.push(arg.clone());
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let opt = opts
            .iter()
            .find(|o| o.names.contains(&flag))
            .ok_or_else(|| format!("unknown option \"{flag}\""))?;
        let canonical = opt.names[0];
        if !opt.takes_value {
            if inline.is_some() {
                return Err(format!("option \"{canonical}\" takes no value"));
            }
            if !parsed.has(canonical) {
                parsed.switches.push(canonical);
            }
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => iter
                .next()
                .cloned()
                .ok_or_else(|| format!("option \"{canonical}\" needs a value"))?,
        };
        if value.trim().is_empty() {
            return Err(format!("option \"{canonical}\" needs a value"));
        }
        if parsed.value(canonical).is_some() {
            return Err(format!("option \"{canonical}\" given more than once"));
        }
        parsed.values.push((canonical, value));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[
        Opt {
            names: &["--follow", "-f"],
            takes_value: false,
        },
        Opt {
            names: &["--build"],
            takes_value: true,
        },
    ];

    fn p(args: &[&str]) -> Result<Parsed, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse(&args, OPTS)
    }

    #[test]
    fn forms() {
        let a = p(&["x", "-f", "--build=go"]).unwrap();
        assert!(a.has("--follow"));
        assert_eq!(a.value("--build"), Some("go"));
        assert_eq!(a.positionals, ["x"]);
        let b = p(&["--build", "cargo", "--", "-weird"]).unwrap();
        assert_eq!(b.value("--build"), Some("cargo"));
        assert_eq!(b.positionals, ["-weird"]);
        assert!(p(&["x", "--help"]).unwrap().help);
    }

    #[test]
    fn errors_name_the_option() {
        assert!(p(&["--nope"]).unwrap_err().contains("--nope"));
        assert!(p(&["--build"]).unwrap_err().contains("needs a value"));
        assert!(p(&["--build="]).unwrap_err().contains("needs a value"));
        assert!(p(&["--build=go", "--build", "go"])
            .unwrap_err()
            .contains("more than once"));
        assert!(p(&["--follow=yes"]).unwrap_err().contains("takes no value"));
    }
}
