//! The built-in slash commands: the one table every part of zut reads.
//!
//! The registry refuses an extension command whose name (or alias) is here,
//! whatever the mode; the engine runs the ones it implements and refuses
//! the others with the mode that has them; RPC `list_commands`, `/help` and
//! the terminal's `/` menu list [`available`] for their mode. A command is
//! listed in a mode exactly when it works there.
//!
//! `skill:NAME` is not in the table: it is a prefix, served by the skills
//! module, and no extension command can contain a colon-prefixed `skill:`
//! name that the registry would accept anyway (see [`is_reserved`]).

/// Where a command runs. `Print` stands for both `-p` and `--mode json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `-p` and `--mode json`: one prompt or command, then exit.
    Print,
    /// `--mode rpc`: a program sends `command` requests.
    Rpc,
    /// The interactive terminal.
    Terminal,
}

impl Mode {
    fn bit(self) -> u8 {
        match self {
            Mode::Print => 1,
            Mode::Rpc => 2,
            Mode::Terminal => 4,
        }
    }

    /// How the mode is named in messages.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Print => "print and JSON modes",
            Mode::Rpc => "RPC mode",
            Mode::Terminal => "the interactive terminal",
        }
    }
}

const PRINT: u8 = 1;
const RPC: u8 = 2;
const TERMINAL: u8 = 4;
const EVERYWHERE: u8 = PRINT | RPC | TERMINAL;

/// One built-in command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The name typed after `/` (lower case).
    pub name: &'static str,
    /// Other names for the same command.
    pub aliases: &'static [&'static str],
    /// What it does, for menus and `/help`.
    pub description: &'static str,
    modes: u8,
}

impl Builtin {
    /// Whether the command works in `mode`.
    pub fn works_in(&self, mode: Mode) -> bool {
        self.modes & mode.bit() != 0
    }

    /// Where it works, for "only in …" messages.
    pub fn where_it_works(&self) -> String {
        let names: Vec<&str> = [Mode::Terminal, Mode::Print, Mode::Rpc]
            .into_iter()
            .filter(|m| self.works_in(*m))
            .map(Mode::label)
            .collect();
        names.join(" and ")
    }
}

/// Every built-in command, in the order menus show them.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "help",
        aliases: &[],
        description: "keys and commands",
        modes: EVERYWHERE,
    },
    Builtin {
        name: "clear",
        aliases: &[],
        description: "clear the screen, notes and load errors",
        modes: TERMINAL,
    },
    Builtin {
        name: "reload-ext",
        aliases: &[],
        description: "restart every extension",
        modes: EVERYWHERE,
    },
    Builtin {
        name: "ext",
        aliases: &[],
        description: "extensions, their commands, tools and status",
        modes: TERMINAL,
    },
    Builtin {
        name: "new",
        aliases: &[],
        description: "start a fresh session",
        modes: EVERYWHERE,
    },
    Builtin {
        name: "fork",
        aliases: &[],
        description: "branch the session here (or at message N)",
        modes: EVERYWHERE,
    },
    Builtin {
        name: "tree",
        aliases: &[],
        description: "branches of this session; pick one to switch",
        modes: TERMINAL,
    },
    Builtin {
        name: "resume",
        aliases: &[],
        description: "resume an earlier session (/resume ID)",
        modes: EVERYWHERE,
    },
    Builtin {
        name: "switch",
        aliases: &[],
        description: "switch to a session or branch of this project (/switch ID)",
        modes: EVERYWHERE,
    },
    Builtin {
        name: "compact",
        aliases: &[],
        description: "summarise older history",
        modes: EVERYWHERE,
    },
    Builtin {
        name: "model",
        aliases: &[],
        description: "show or set the model (/model NAME)",
        modes: EVERYWHERE,
    },
    Builtin {
        name: "settings",
        aliases: &[],
        description: "alerts on/off, colour theme",
        modes: TERMINAL,
    },
    Builtin {
        name: "skills",
        aliases: &[],
        description: "list the skills the model can use",
        modes: EVERYWHERE,
    },
    Builtin {
        name: "copy",
        aliases: &[],
        description: "copy the last answer (/copy N: its N-th code block)",
        modes: TERMINAL,
    },
    Builtin {
        name: "export",
        aliases: &[],
        description: "write the session as markdown (/export [FILE])",
        modes: TERMINAL,
    },
    Builtin {
        name: "quit",
        aliases: &["exit"],
        description: "leave zut",
        modes: TERMINAL,
    },
];

/// The built-in `name` (any case, aliases included).
pub fn find(name: &str) -> Option<&'static Builtin> {
    let lower = name.to_lowercase();
    BUILTINS
        .iter()
        .find(|b| b.name == lower || b.aliases.contains(&lower.as_str()))
}

/// Whether an extension may not register `name`: a built-in of any mode
/// (an extension's command must mean the same everywhere), or the
/// `skill:` prefix the skills own.
pub fn is_reserved(name: &str) -> bool {
    find(name).is_some() || name.to_lowercase().starts_with("skill:")
}

/// The built-ins that work in `mode`, in table order.
pub fn available(mode: Mode) -> impl Iterator<Item = &'static Builtin> {
    BUILTINS.iter().filter(move |b| b.works_in(mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_and_alias_is_unique_and_lower_case() {
        let mut seen = std::collections::HashSet::new();
        for b in BUILTINS {
            for n in std::iter::once(&b.name).chain(b.aliases) {
                assert_eq!(*n, n.to_lowercase());
                assert!(seen.insert(*n), "{n} twice");
            }
            assert!(b.modes != 0, "{} works nowhere", b.name);
        }
    }

    #[test]
    fn lookups_ignore_case_and_know_aliases() {
        assert_eq!(find("Exit").map(|b| b.name), Some("quit"));
        assert_eq!(find("SWITCH").map(|b| b.name), Some("switch"));
        assert!(find("cd").is_none());
        assert!(is_reserved("ext"));
        assert!(is_reserved("Skill:deploy"));
        assert!(!is_reserved("weather"));
    }

    #[test]
    fn each_mode_lists_what_it_runs() {
        let print: Vec<&str> = available(Mode::Print).map(|b| b.name).collect();
        assert!(print.contains(&"help") && print.contains(&"model"));
        assert!(!print.contains(&"tree") && !print.contains(&"quit"));
        let terminal: Vec<&str> = available(Mode::Terminal).map(|b| b.name).collect();
        assert_eq!(terminal.len(), BUILTINS.len());
        assert_eq!(
            find("tree").unwrap().where_it_works(),
            "the interactive terminal"
        );
    }
}
