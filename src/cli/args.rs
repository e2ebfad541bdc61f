//! The `zut ext` command line, declared with argh like the rest of zut's
//! flags, and the split between zut's global flags and `ext`.
//!
//! Invariants:
//! - [`split_ext`] decides whether an invocation is `zut [global flags] ext
//!   …`: the first word that is neither a flag nor a flag's value must be
//!   exactly `ext`. Global flags that mean something to the management
//!   commands (`--ext`, `--no-extensions`/`--no-ext`, `--cwd`) are taken;
//!   any other global flag before `ext` is refused with a message, never
//!   read as a prompt;
//! - [`parse_ext`] accepts `--name=value` as well as `--name value`, the
//!   aliases `ls` and `rm`, and `help [command]`; usage errors come back as
//!   one message for the caller to print with exit status 2.

use argh::FromArgs;

#[derive(FromArgs, Debug, PartialEq)]
/// Manage zut extensions.
#[argh(
    help_triggers("-h", "--help", "help"),
    note = "Run \"zut ext <command> --help\" for a command's options; see also man zut-ext.",
    error_code(0, "success"),
    error_code(1, "the command failed; nothing was half done"),
    error_code(2, "usage error"),
    error_code(130, "interrupted; an install in progress was rolled back")
)]
pub(crate) struct ExtArgs {
    #[argh(subcommand)]
    pub command: Option<ExtCommand>,
}

/// One management command, each with its own arm in the router.
#[derive(FromArgs, Debug, PartialEq)]
#[argh(subcommand)]
pub(crate) enum ExtCommand {
    List(List),
    Install(Install),
    Update(Update),
    Remove(Remove),
    Enable(Enable),
    Disable(Disable),
    Logs(Logs),
    Doctor(Doctor),
    Trust(Trust),
    Untrust(Untrust),
    New(New),
    Test(Test),
}

#[derive(FromArgs, Debug, PartialEq)]
/// List extensions and whether zut will load them (alias: ls).
#[argh(
    subcommand,
    name = "list",
    help_triggers("-h", "--help", "help"),
    note = "In load order: --ext paths, project (<cwd>/.zut/extensions), then global ($ZUT_HOME/extensions), with name, version, status (enabled, disabled, shadowed, invalid), source, description and directory."
)]
pub(crate) struct List {
    /// print a JSON array of objects instead of the table
    #[argh(switch)]
    pub json: bool,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Copy or clone an extension into $ZUT_HOME/extensions/<name>.
#[argh(
    subcommand,
    note = "A local directory is copied whole except .git; a git URL (https://, ssh://, git://, file://, user@host:path, or ending in .git) is shallow-cloned with hooks and submodules off. The copy is validated (extension.json, an executable exec) before it is moved into place; on any failure nothing is installed. Nothing is built unless --build is given.",
    name = "install",
    help_triggers("-h", "--help", "help"),
    example = "zut ext install ./examples/extensions/hello-py",
    example = "zut ext install --build=cargo ./examples/extensions/rust-echo",
    example = "zut ext install --ref v1.2 https://github.com/me/zut-todo.git"
)]
pub(crate) struct Install {
    /// replace an installed extension of the same name
    #[argh(switch)]
    pub force: bool,
    /// build a local source first: go (go build -trimpath) or cargo (cargo
    /// build --release); the program goes into the installed copy only
    #[argh(option, arg_name = "go|cargo")]
    pub build: Option<String>,
    /// the branch or tag of a git URL to install (default: the remote's
    /// default branch); zut ext update follows it
    #[argh(option, long = "ref", arg_name = "branch|tag")]
    pub git_ref: Option<String>,
    /// a local extension directory or a git URL
    #[argh(positional, arg_name = "path|git-url")]
    pub source: String,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Update extensions installed from a git URL.
#[argh(
    subcommand,
    name = "update",
    help_triggers("-h", "--help", "help"),
    note = "Clones the URL (and --ref) that install recorded again into a staging directory; when its commit differs from the installed one, re-runs the recorded --build, validates the copy like install (same name, an executable exec) and swaps it in atomically. On any failure the installed copy stays exactly as it was. Enabled or disabled stays as it was. Without names, every extension installed from git is updated; one that fails does not stop the others.",
    example = "zut ext update todo",
    example = "zut ext update"
)]
pub(crate) struct Update {
    /// extensions to update (default: every one installed from git)
    #[argh(positional, arg_name = "name")]
    pub names: Vec<String>,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Delete an installed extension, without asking (alias: rm).
#[argh(
    subcommand,
    name = "remove",
    help_triggers("-h", "--help", "help"),
    note = "The global copy ($ZUT_HOME/extensions/<name>) is taken when there is one, else the project copy (<cwd>/.zut/extensions/<name>)."
)]
pub(crate) struct Remove {
    /// remove the project copy
    #[argh(switch)]
    pub project: bool,
    /// remove the global copy
    #[argh(switch)]
    pub global: bool,
    /// accepted for scripts that expect it; remove never asks anyway
    #[argh(switch, short = 'y')]
    pub yes: bool,
    /// the extension's directory or manifest name
    #[argh(positional)]
    pub name: String,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Re-enable a disabled extension.
#[argh(
    subcommand,
    name = "enable",
    help_triggers("-h", "--help", "help"),
    note = "Records the choice in $ZUT_HOME/config.json (the extension's own files are not touched); it wins over \"enabled\": false in its extension.json and takes effect the next time zut starts. When both a project and a global copy exist, the project copy (the one zut loads here) is changed."
)]
pub(crate) struct Enable {
    /// change the project copy
    #[argh(switch)]
    pub project: bool,
    /// change the global copy
    #[argh(switch)]
    pub global: bool,
    /// the extension's directory or manifest name
    #[argh(positional)]
    pub name: String,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Disable an extension without removing it.
#[argh(
    subcommand,
    name = "disable",
    help_triggers("-h", "--help", "help"),
    note = "Records the choice in $ZUT_HOME/config.json (the extension's own files are not touched); it survives zut ext update and takes effect the next time zut starts. When both a project and a global copy exist, the project copy (the one zut loads here) is changed."
)]
pub(crate) struct Disable {
    /// change the project copy
    #[argh(switch)]
    pub project: bool,
    /// change the global copy
    #[argh(switch)]
    pub global: bool,
    /// the extension's directory or manifest name
    #[argh(positional)]
    pub name: String,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Print an extension's stderr log ($ZUT_HOME/logs/ext-<name>.log).
#[argh(subcommand, name = "logs", help_triggers("-h", "--help", "help"))]
pub(crate) struct Logs {
    /// keep printing what is appended until interrupted (Ctrl+C)
    #[argh(switch, short = 'f')]
    pub follow: bool,
    /// the extension's name
    #[argh(positional)]
    pub name: String,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Diagnose loading, registration and conflicts.
#[argh(
    subcommand,
    name = "doctor",
    help_triggers("-h", "--help", "help"),
    note = "Runs the same discovery and startup as zut and reports manifest errors, disabled and shadowed extensions, load errors, ready or auto-ready, registered commands and tools, conflicts, warnings and log paths. With names, everything still starts but only those are reported. Exit status 0 when everything reported is healthy, 1 otherwise."
)]
pub(crate) struct Doctor {
    /// print the report as JSON
    #[argh(switch)]
    pub json: bool,
    /// extensions to report on (default: all)
    #[argh(positional, arg_name = "name")]
    pub names: Vec<String>,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Trust a project directory: its .zut/extensions may start.
#[argh(
    subcommand,
    name = "trust",
    help_triggers("-h", "--help", "help"),
    note = "Project extensions (<dir>/.zut/extensions) start only in directories you trusted; the choice is remembered in $ZUT_HOME/trust.json. ZUT_TRUST_ALL=1 trusts every directory."
)]
pub(crate) struct Trust {
    /// the project directory (default: the current one)
    #[argh(positional, arg_name = "dir")]
    pub dir: Option<String>,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Stop trusting a project directory.
#[argh(subcommand, name = "untrust", help_triggers("-h", "--help", "help"))]
pub(crate) struct Untrust {
    /// the project directory (default: the current one)
    #[argh(positional, arg_name = "dir")]
    pub dir: Option<String>,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Write a new, working extension to start from.
#[argh(
    subcommand,
    name = "new",
    help_triggers("-h", "--help", "help"),
    note = "Writes <dir>/<name> (default ./<name>): extension.json, the program, a README and a test script that runs \"zut ext test\". The extension registers the command /<name> and the tool <name>_echo. Nothing is downloaded: the Python and TypeScript SDKs are copied next to the program, the Rust SDK into <name>/zut-ext (building it needs serde and serde_json from crates.io or a warm cargo cache). javascript runs as written; typescript writes index.ts, built with \"npm install && npm run build\" (the typescript package). The target directory must not exist or be empty, and the name cannot start with '-'.",
    example = "zut ext new hi && zut --ext ./hi -p \"/hi there\"",
    example = "zut ext new --lang rust --dir ~/src fast"
)]
pub(crate) struct New {
    /// the language: python (default), typescript, javascript, rust or sh
    #[argh(option, arg_name = "rust|python|typescript|javascript|sh")]
    pub lang: Option<String>,
    /// the directory to create the extension in (default: the current one)
    #[argh(option, arg_name = "path")]
    pub dir: Option<String>,
    /// the extension's name (also its command and directory name)
    #[argh(positional)]
    pub name: String,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Start one extension alone and check it against the protocol.
#[argh(
    subcommand,
    name = "test",
    help_triggers("-h", "--help", "help"),
    note = "Checks the manifest, the start, hello and ready within their deadlines, the registrations, that every line on stdout is a frame, that each tool called with {} and each command invoked without arguments is answered (an error answer counts), that an unknown host frame and tool_cancel are tolerated, and that shutdown is acknowledged within the grace. One line per check: PASS, WARN or FAIL, a colon, and why. Deadlines follow the ZUT_*_TIMEOUT_MS variables. Exit status 0 when no check failed, 1 otherwise, 2 for a usage error.",
    example = "zut ext test ./my-extension"
)]
pub(crate) struct Test {
    /// print a JSON array of {check, status, reason} instead of lines
    #[argh(switch)]
    pub json: bool,
    /// the extension directory (the one holding extension.json)
    #[argh(positional, arg_name = "path")]
    pub path: String,
}

/// The subcommand names, for "did you mean" hints.
pub(crate) const NAMES: &[&str] = &[
    "list", "install", "update", "remove", "enable", "disable", "logs", "doctor", "trust",
    "untrust", "new", "test",
];

/// What [`parse_ext`] decided.
#[derive(Debug, PartialEq)]
pub(crate) enum Parsed {
    /// Run this command.
    Run(ExtCommand),
    /// Help was asked for: print it on stdout, exit 0.
    Help(String),
    /// `zut ext` alone: print the help on stderr, exit 2.
    Missing(String),
    /// A usage error (the message includes argh's usage hint): exit 2.
    Usage(String),
    /// Not a command: the caller suggests close names, exit 2.
    Unknown(String),
}

/// Parses the words after `zut ext`.
pub(crate) fn parse_ext(args: &[String]) -> Parsed {
    let mut words: Vec<String> = Vec::with_capacity(args.len());
    let mut ended = false;
    for (i, a) in args.iter().enumerate() {
        if ended {
            words.push(a.clone());
            continue;
        }
        if a == "--" {
            ended = true;
            words.push(a.clone());
            continue;
        }
        // argh takes `--build go`; the man page also promises `--build=go`.
        match a.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") && flag.len() > 2 => {
                words.push(flag.to_string());
                words.push(value.to_string());
            }
            _ if i == first_word(args) => words.push(
                match a.as_str() {
                    "ls" => "list",
                    "rm" => "remove",
                    other => other,
                }
                .to_string(),
            ),
            _ => words.push(a.clone()),
        }
    }
    let first = words.iter().find(|w| !w.starts_with('-'));
    if let Some(first) = first {
        if first != "help" && !NAMES.contains(&first.as_str()) {
            return Parsed::Unknown(first.clone());
        }
    }
    let strs: Vec<&str> = words.iter().map(String::as_str).collect();
    match ExtArgs::from_args(&["zut ext"], &strs) {
        Ok(ExtArgs {
            command: Some(command),
        }) => match check(&command) {
            Ok(()) => Parsed::Run(command),
            Err(m) => Parsed::Usage(m),
        },
        Ok(ExtArgs { command: None }) => {
            let help = match ExtArgs::from_args(&["zut ext"], &["--help"]) {
                Err(e) => e.output,
                Ok(_) => String::new(),
            };
            Parsed::Missing(help)
        }
        Err(early) => match early.status {
            Ok(()) => Parsed::Help(early.output),
            Err(()) => Parsed::Usage(early.output.trim_end().to_string()),
        },
    }
}

/// The subcommand named in `args` (after alias resolution), for messages.
pub(crate) fn subcommand_of(args: &[String]) -> &'static str {
    let word = args.get(first_word(args)).map(String::as_str);
    match word {
        Some("ls") => "list",
        Some("rm") => "remove",
        Some(w) => NAMES.iter().find(|n| **n == w).copied().unwrap_or(""),
        None => "",
    }
}

/// Index of the first word that is not a flag (the subcommand's place).
fn first_word(args: &[String]) -> usize {
    args.iter()
        .position(|a| !a.starts_with('-'))
        .unwrap_or(args.len())
}

/// Checks argh cannot express: exclusive flags, values that must not be
/// blank.
fn check(command: &ExtCommand) -> Result<(), String> {
    let both = match command {
        ExtCommand::Remove(r) => r.project && r.global,
        ExtCommand::Enable(e) => e.project && e.global,
        ExtCommand::Disable(d) => d.project && d.global,
        _ => false,
    };
    if both {
        return Err("--project and --global exclude each other".into());
    }
    if let ExtCommand::Install(i) = command {
        if i.build.as_deref().is_some_and(|b| b.trim().is_empty()) {
            return Err("option \"--build\" needs a value: go or cargo".into());
        }
        if let Some(r) = i.git_ref.as_deref() {
            if r.trim().is_empty() || r.starts_with('-') {
                return Err(format!(
                    "option \"--ref\" needs a branch or tag name, not {r:?}"
                ));
            }
        }
    }
    Ok(())
}

/// The management-relevant global flags given before `ext`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Globals {
    /// `--ext PATH` / `-e PATH`, in order, as given.
    pub ext_paths: Vec<String>,
    /// `--no-extensions` or `--no-ext`.
    pub no_extensions: bool,
    /// `--cwd DIR`.
    pub cwd: Option<String>,
    /// Which management command: `ext` (empty), `skills` or `sessions`.
    pub command: &'static str,
}

/// zut's global flags that take a value (both spellings where there are
/// two); every other global flag is a switch.
const VALUED: &[&str] = &[
    "--mode",
    "--ext",
    "-e",
    "--provider",
    "--model",
    "--base-url",
    "--api-key",
    "--script",
    "--script-log",
    "--cwd",
    "--session",
    "--max-steps",
    "--thinking",
    "--mcp-config",
];
const SWITCHES: &[&str] = &[
    "-p",
    "--print",
    "--no-extensions",
    "--no-ext",
    "--yolo",
    "--continue",
    "--no-session",
    "--no-cache",
    "--version",
    "--no-mcp",
];

/// Splits `zut [flags…] ext …`. `None`: not an `ext` invocation (a prompt,
/// `--help`, an unknown flag: the main parser deals with it). `Some(Err)`:
/// an `ext` invocation with a global flag that does not apply to it.
pub(crate) fn split_ext(args: &[String]) -> Option<Result<(Globals, &[String]), String>> {
    let mut globals = Globals::default();
    let mut refused: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if arg == "ext" || arg == "skills" || arg == "sessions" || arg == "hooks" || arg == "mcp" {
            globals.command = match arg {
                "skills" => "skills",
                "sessions" => "sessions",
                "hooks" => "hooks",
                "mcp" => "mcp",
                _ => "",
            };
            return Some(match refused {
                Some(flag) => Err(format!(
                    "{flag} does not apply to \"zut {arg}\"; give it without the flag{}",
                    if matches!(flag.as_str(), "-p" | "--print" | "--mode") {
                        " (to send the prompt \"ext\", write zut -p -- ext …)"
                    } else {
                        ""
                    }
                )),
                None => Ok((globals, &args[i + 1..])),
            });
        }
        if !arg.starts_with('-') || arg == "--" {
            return None;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg, None),
        };
        if VALUED.contains(&flag) {
            let value = match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    args.get(i)?.clone()
                }
            };
            match flag {
                "--ext" | "-e" => globals.ext_paths.push(value),
                "--cwd" => globals.cwd = Some(value),
                _ => {
                    refused.get_or_insert_with(|| flag.to_string());
                }
            }
        } else if SWITCHES.contains(&flag) && inline.is_none() {
            match flag {
                "--no-extensions" | "--no-ext" => globals.no_extensions = true,
                _ => {
                    refused.get_or_insert_with(|| flag.to_string());
                }
            }
        } else {
            return None;
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    fn p(args: &[&str]) -> Parsed {
        parse_ext(&v(args))
    }

    #[test]
    fn every_subcommand_and_its_flags() {
        assert_eq!(
            p(&["install", "--build=go", "--force", "./x"]),
            Parsed::Run(ExtCommand::Install(Install {
                force: true,
                build: Some("go".into()),
                git_ref: None,
                source: "./x".into()
            }))
        );
        assert!(matches!(
            p(&["install", "--ref=v2", "file:///r"]),
            Parsed::Run(ExtCommand::Install(Install { git_ref: Some(ref r), .. })) if r == "v2"
        ));
        assert!(matches!(
            p(&["update"]),
            Parsed::Run(ExtCommand::Update(Update { ref names })) if names.is_empty()
        ));
        assert!(matches!(
            p(&["update", "a", "b"]),
            Parsed::Run(ExtCommand::Update(Update { ref names })) if names.len() == 2
        ));
        assert_eq!(
            p(&["rm", "-y", "--project", "x"]),
            Parsed::Run(ExtCommand::Remove(Remove {
                project: true,
                global: false,
                yes: true,
                name: "x".into()
            }))
        );
        assert!(matches!(
            p(&["ls", "--json"]),
            Parsed::Run(ExtCommand::List(List { json: true }))
        ));
        assert!(matches!(
            p(&["logs", "-f", "w"]),
            Parsed::Run(ExtCommand::Logs(Logs { follow: true, .. }))
        ));
        assert!(matches!(
            p(&["doctor", "a", "b"]),
            Parsed::Run(ExtCommand::Doctor(Doctor { json: false, ref names })) if names.len() == 2
        ));
        assert!(matches!(
            p(&["enable", "x"]),
            Parsed::Run(ExtCommand::Enable(_))
        ));
        assert!(matches!(
            p(&["disable", "--global", "x"]),
            Parsed::Run(ExtCommand::Disable(_))
        ));
    }

    #[test]
    fn help_missing_and_errors() {
        assert!(matches!(p(&[]), Parsed::Missing(h) if h.contains("install")));
        assert!(matches!(p(&["help"]), Parsed::Help(h) if h.contains("doctor")));
        assert!(matches!(p(&["help", "install"]), Parsed::Help(h) if h.contains("--force")));
        assert!(matches!(p(&["logs", "--help"]), Parsed::Help(h) if h.contains("--follow")));
        assert_eq!(p(&["instal"]), Parsed::Unknown("instal".into()));
        assert!(matches!(p(&["install"]), Parsed::Usage(_)));
        assert!(matches!(p(&["install", "a", "b"]), Parsed::Usage(_)));
        assert!(matches!(p(&["list", "--bogus"]), Parsed::Usage(m) if m.contains("--bogus")));
        assert!(matches!(p(&["install", "--build="]), Parsed::Usage(_)));
        assert!(matches!(p(&["install", "--ref=", "u"]), Parsed::Usage(_)));
        assert_eq!(p(&["updat"]), Parsed::Unknown("updat".into()));
        assert!(matches!(
            p(&["enable", "--project", "--global", "x"]),
            Parsed::Usage(m) if m.contains("exclude")
        ));
    }

    #[test]
    fn globals_before_ext() {
        let args = v(&["--no-ext", "-e", "a", "--cwd=d", "ext", "list"]);
        let (g, rest) = split_ext(&args).unwrap().unwrap();
        assert_eq!(
            g,
            Globals {
                ext_paths: vec!["a".into()],
                no_extensions: true,
                cwd: Some("d".into()),
                command: "",
            }
        );
        assert_eq!(rest, ["list"]);
        let args = v(&["--yolo", "ext", "list"]);
        assert!(split_ext(&args).unwrap().unwrap_err().contains("--yolo"));
        let args = v(&["--provider", "openai", "ext"]);
        assert!(split_ext(&args)
            .unwrap()
            .unwrap_err()
            .contains("--provider"));
        assert_eq!(split_ext(&v(&["-p", "hello", "ext"])), None);
        assert_eq!(split_ext(&v(&["-p", "--", "ext"])), None);
        assert_eq!(split_ext(&v(&["--bogus", "ext"])), None);
        assert_eq!(split_ext(&v(&["ext list"])), None);
    }
}
