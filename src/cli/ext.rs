//! The `zut ext` router and the small subcommands (`list`, `remove`,
//! `enable`, `disable`, `logs`, `doctor`); `install` lives in its own module.
//!
//! Every subcommand is a [`Command`] row: name, usage, help, options and a
//! function. The router parses the options, answers `--help`, runs the
//! function and turns its [`Failure`] into one stderr line and an exit
//! code. Help goes to stdout (it is what was asked for).
//!
//! Name lookup for `remove`/`enable`/`disable`: an installed extension is
//! found by directory name, else by manifest name, in the project
//! (`<cwd>/.zut/extensions`) and global (`$ZUT_HOME/extensions`) scopes.
//! When both have one, `remove` takes the global copy and `enable` /
//! `disable` the project copy (the one zut loads in this directory), and a
//! note names the other; `--project` / `--global` choose explicitly.

use super::args::{self, Opt, Parsed};
use super::edit::{self, Change};
use super::install::{self, Request};
use super::{builder::Builder, list, logs, suggest};
use super::{CliContext, Failure, Io, Outcome};
use crate::host::discovery::{self, Entry, Options, Source};
use crate::host::manifest::{self, MANIFEST_FILE};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// One subcommand.
struct Command {
    name: &'static str,
    alias: Option<&'static str>,
    usage: &'static str,
    summary: &'static str,
    help: &'static str,
    opts: &'static [Opt],
    run: fn(&Parsed, &CliContext, &mut Io<'_>) -> Outcome,
}

const JSON: Opt = Opt {
    names: &["--json"],
    takes_value: false,
};
const SCOPE: [Opt; 2] = [
    Opt {
        names: &["--project"],
        takes_value: false,
    },
    Opt {
        names: &["--global"],
        takes_value: false,
    },
];

const COMMANDS: &[Command] = &[
    Command {
        name: "list",
        alias: Some("ls"),
        usage: "zut ext list [--json]",
        summary: "list extensions and whether zut will load them (alias: ls)",
        help: "\
Lists every extension zut finds, in load order: --ext paths, then project
(<cwd>/.zut/extensions), then global ($ZUT_HOME/extensions). Each row shows
name, version, status (enabled, disabled, shadowed by a higher-priority
copy of the same name, invalid), source, description and directory.

options:
  --json      print a JSON array of objects instead of the table
  -h, --help  show this help",
        opts: &[JSON],
        run: run_list,
    },
    Command {
        name: "install",
        alias: None,
        usage: "zut ext install [--force] [--build=go|cargo] <path|git-url>",
        summary: "copy or clone an extension into $ZUT_HOME/extensions",
        help: "\
Installs an extension into $ZUT_HOME/extensions/<name>, where <name> is the
manifest's name. A local directory is copied (without .git, honouring its
root .gitignore except for the manifest, the executable, skills and
themes); a git URL (https://, ssh://, git://, file://, user@host:path, or
ending in .git) is shallow-cloned with hooks and submodules off. The copy
is validated (extension.json, an executable exec) before it is moved into
place; on any failure nothing is installed. Nothing is built unless
--build is given.

options:
  --force              replace an installed extension of the same name
  --build=go|cargo     build a local source first: go build -trimpath, or
                       cargo build --release; the manifest's relative exec
                       is written into the installed copy, the source is
                       left untouched
  -h, --help           show this help",
        opts: &[
            Opt {
                names: &["--force"],
                takes_value: false,
            },
            Opt {
                names: &["--build"],
                takes_value: true,
            },
        ],
        run: run_install,
    },
    Command {
        name: "remove",
        alias: Some("rm"),
        usage: "zut ext remove [--project|--global] <name>",
        summary: "delete an installed extension (alias: rm)",
        help: "\
Deletes an installed extension's directory, without asking. The global copy
($ZUT_HOME/extensions/<name>) is taken when there is one, else the project
copy (<cwd>/.zut/extensions/<name>).

options:
  --project   remove the project copy
  --global    remove the global copy
  -h, --help  show this help",
        opts: &SCOPE,
        run: run_remove,
    },
    Command {
        name: "enable",
        alias: None,
        usage: "zut ext enable [--project|--global] <name>",
        summary: "re-enable a disabled extension",
        help: "\
Sets \"enabled\": true in the extension's extension.json, changing nothing
else in the file. Takes effect the next time zut starts (or on
/reload-ext). When both a project and a global copy exist, the project copy
(the one zut loads here) is changed.

options:
  --project   change the project copy
  --global    change the global copy
  -h, --help  show this help",
        opts: &SCOPE,
        run: run_enable,
    },
    Command {
        name: "disable",
        alias: None,
        usage: "zut ext disable [--project|--global] <name>",
        summary: "disable an extension without removing it",
        help: "\
Sets \"enabled\": false in the extension's extension.json, changing nothing
else in the file. Takes effect the next time zut starts (or on
/reload-ext). When both a project and a global copy exist, the project copy
(the one zut loads here) is changed.

options:
  --project   change the project copy
  --global    change the global copy
  -h, --help  show this help",
        opts: &SCOPE,
        run: run_disable,
    },
    Command {
        name: "logs",
        alias: None,
        usage: "zut ext logs [-f|--follow] <name>",
        summary: "print an extension's stderr log",
        help: "\
Prints $ZUT_HOME/logs/ext-<name>.log, where zut appends the extension's
stderr and its own notes about it.

options:
  -f, --follow  keep printing what is appended until interrupted (Ctrl+C)
  -h, --help    show this help",
        opts: &[Opt {
            names: &["--follow", "-f"],
            takes_value: false,
        }],
        run: run_logs,
    },
    Command {
        name: "trust",
        alias: None,
        usage: "zut ext trust [DIR]",
        summary: "let the project extensions of DIR start (default: here)",
        help: "\
Project extensions (DIR/.zut/extensions) start only in a directory you
trusted; elsewhere zut skips them with a warning. This command records DIR
(default: the project directory) in $ZUT_HOME/trust.json. Trust is for that
exact directory, not its subdirectories. ZUT_TRUST_ALL=1 trusts every
directory.

options:
  -h, --help  show this help",
        opts: &[],
        run: run_trust,
    },
    Command {
        name: "untrust",
        alias: None,
        usage: "zut ext untrust [DIR]",
        summary: "stop the project extensions of DIR from starting",
        help: "\
Removes DIR (default: the project directory) from $ZUT_HOME/trust.json:
its project extensions no longer start.

options:
  -h, --help  show this help",
        opts: &[],
        run: run_untrust,
    },
    Command {
        name: "doctor",
        alias: None,
        usage: "zut ext doctor [--json] [NAME...]",
        summary: "diagnose loading, registration and conflicts",
        help: "\
Runs the same discovery and startup as zut and reports what happened:
manifest errors, disabled and shadowed extensions, load errors, ready or
auto-ready, registered commands and tools, conflicts, warnings and log
paths. With NAMEs, everything still starts (conflicts depend on it) but
only those are reported. Exit status 0 when everything is healthy (no
error, warning or conflict), 1 otherwise.

options:
  --json      print the report as JSON
  -h, --help  show this help",
        opts: &[JSON],
        run: run_doctor,
    },
];

/// Runs `zut ext <args…>`; returns the exit code.
pub(crate) fn dispatch(args: &[String], ctx: &CliContext, io: &mut Io<'_>) -> i32 {
    let Some(first) = args.first() else {
        let _ = io.out.write_all(overview().as_bytes());
        return 0;
    };
    if matches!(first.as_str(), "help" | "-h" | "--help") {
        return match args.get(1) {
            None => {
                let _ = io.out.write_all(overview().as_bytes());
                0
            }
            Some(sub) => match find(sub) {
                Some(cmd) => {
                    let _ = writeln!(io.out, "usage: {}\n\n{}", cmd.usage, cmd.help);
                    0
                }
                None => unknown(sub, io),
            },
        };
    }
    let Some(cmd) = find(first) else {
        return unknown(first, io);
    };
    let result = match args::parse(&args[1..], cmd.opts) {
        Err(m) => Err(Failure::Usage(m)),
        Ok(p) if p.help => {
            let _ = writeln!(io.out, "usage: {}\n\n{}", cmd.usage, cmd.help);
            Ok(())
        }
        Ok(p) => (cmd.run)(&p, ctx, io),
    };
    finish(cmd, result, io)
}

fn find(name: &str) -> Option<&'static Command> {
    COMMANDS
        .iter()
        .find(|c| c.name == name || c.alias == Some(name))
}

fn overview() -> String {
    let mut s =
        String::from("usage: zut ext <command> [options]\n\nManage zut extensions.\n\ncommands:\n");
    for c in COMMANDS {
        s.push_str(&format!("  {:<9}{}\n", c.name, c.summary));
    }
    s.push_str("  help     show help for a command (zut ext help <command>)\n\n");
    s.push_str("Run \"zut ext <command> --help\" for a command's options; see also man zut-ext.\n");
    s
}

fn unknown(sub: &str, io: &mut Io<'_>) -> i32 {
    let names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
    let mut hint = suggest::did_you_mean(&suggest::suggestions(sub, names));
    if hint.is_empty() {
        hint = "; run \"zut ext help\" for the list".into();
    }
    let _ = writeln!(io.err, "zut ext: unknown subcommand \"{sub}\"{hint}");
    2
}

fn finish(cmd: &Command, result: Outcome, io: &mut Io<'_>) -> i32 {
    match result {
        Ok(()) | Err(Failure::StdoutClosed) => 0,
        Err(Failure::Usage(m)) => {
            let _ = writeln!(io.err, "zut ext {}: {m}\nusage: {}", cmd.name, cmd.usage);
            2
        }
        Err(Failure::Error(m)) => {
            let _ = writeln!(io.err, "zut ext {}: {m}", cmd.name);
            1
        }
        Err(Failure::Interrupted) => {
            let _ = writeln!(
                io.err,
                "zut ext {}: interrupted; nothing was changed",
                cmd.name
            );
            130
        }
    }
}

/// The one positional argument a command takes.
fn one_positional<'a>(p: &'a Parsed, what: &str) -> Outcome<&'a str> {
    match p.positionals.as_slice() {
        [one] => Ok(one),
        [] => Err(Failure::Usage(format!("missing {what}"))),
        [_, extra, ..] => Err(Failure::Usage(format!(
            "unexpected argument \"{extra}\" (only one {what} is taken)"
        ))),
    }
}

fn no_positionals(p: &Parsed) -> Outcome {
    match p.positionals.first() {
        None => Ok(()),
        Some(extra) => Err(Failure::Usage(format!("unexpected argument \"{extra}\""))),
    }
}

fn run_list(p: &Parsed, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    no_positionals(p)?;
    let entries = discovery::discover(&Options {
        cwd: ctx.cwd.clone(),
        zut_home: ctx.zut_home.clone(),
        ext_paths: ctx.ext_paths.clone(),
        no_extensions: ctx.no_extensions,
    });
    let rows = list::rows(&entries);
    if let Some(project) = entries.iter().find_map(|e| match &e.status {
        discovery::Status::Untrusted { project, .. } => Some(project),
        _ => None,
    }) {
        let _ = writeln!(
            io.err,
            "note: project extensions in {0} are not trusted and will not start; run \"zut ext trust {0}\" to allow them",
            project.display()
        );
    }
    let text = if p.has("--json") {
        list::render_json(&rows)
    } else if rows.is_empty() {
        let _ = writeln!(
            io.err,
            "no extensions installed\nhint: install one with \"zut ext install <path|git-url>\", or try one for a single run with \"zut --ext <dir>\""
        );
        return Ok(());
    } else {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        list::render_table(&rows, io.color, home.as_deref())
    };
    io.out
        .write_all(text.as_bytes())
        .map_err(logs::stdout_error)
}

/// At most one positional argument: the directory for `trust`/`untrust`.
fn optional_dir(p: &Parsed) -> Outcome<Option<&Path>> {
    match p.positionals.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(Path::new(one))),
        [_, extra, ..] => Err(Failure::Usage(format!(
            "unexpected argument \"{extra}\" (only one directory is taken)"
        ))),
    }
}

fn run_trust(p: &Parsed, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    super::trust::run_trust(optional_dir(p)?, ctx, io)
}

fn run_untrust(p: &Parsed, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    super::trust::run_untrust(optional_dir(p)?, ctx, io)
}

fn run_install(p: &Parsed, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let source = one_positional(p, "<path|git-url>")?;
    let build = p
        .value("--build")
        .map(Builder::parse)
        .transpose()
        .map_err(Failure::Usage)?;
    let req = Request {
        source: source.to_string(),
        force: p.has("--force"),
        build,
    };
    install::install(&req, ctx, io)
}

fn run_logs(p: &Parsed, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let name = one_positional(p, "extension name")?;
    logs::logs(name, p.has("--follow"), &ctx.zut_home, io)
}

fn run_doctor(p: &Parsed, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    super::doctor::run(&p.positionals, p.has("--json"), ctx, io)
}

/// An installed extension directory that a name refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    source: Source,
    dir: PathBuf,
}

/// Installed extensions (project, then global), ignoring `--ext` and
/// `--no-extensions`: management commands act on what is installed.
fn installed(ctx: &CliContext) -> Vec<Entry> {
    discovery::discover(&Options {
        cwd: ctx.cwd.clone(),
        zut_home: ctx.zut_home.clone(),
        ext_paths: Vec::new(),
        no_extensions: false,
    })
}

/// Finds `name` by directory, else manifest name, in each scope.
fn targets(name: &str, ctx: &CliContext, entries: &[Entry]) -> Vec<Target> {
    let plain = manifest::check_name(name).is_ok();
    let scopes = [
        (Source::Project, crate::paths::project_extensions(&ctx.cwd)),
        (
            Source::Global,
            crate::paths::global_extensions(&ctx.zut_home),
        ),
    ];
    let mut out = Vec::new();
    for (source, root) in scopes {
        let direct = root.join(name);
        if plain && direct.symlink_metadata().is_ok() {
            out.push(Target {
                source,
                dir: direct,
            });
        } else if let Some(e) = entries
            .iter()
            .find(|e| e.source == source && e.manifest().is_some_and(|m| m.name == name))
        {
            out.push(Target {
                source,
                dir: e.dir.clone(),
            });
        }
    }
    out
}

/// Picks the target for `name`: the `--project`/`--global` one if asked,
/// else `prefer` when both scopes have one (the other is returned too).
fn choose(
    name: &str,
    p: &Parsed,
    ctx: &CliContext,
    prefer: Source,
) -> Outcome<(Target, Option<Target>)> {
    let wanted = match (p.has("--project"), p.has("--global")) {
        (true, true) => {
            return Err(Failure::Usage(
                "--project and --global exclude each other".into(),
            ))
        }
        (true, false) => Some(Source::Project),
        (false, true) => Some(Source::Global),
        (false, false) => None,
    };
    let entries = installed(ctx);
    let mut found = targets(name, ctx, &entries);
    if let Some(scope) = wanted {
        found.retain(|t| t.source == scope);
    }
    if found.is_empty() {
        return Err(not_found(name, wanted, &entries).into());
    }
    if found.len() == 1 {
        return Ok((found.remove(0), None));
    }
    let i = found.iter().position(|t| t.source == prefer).unwrap_or(0);
    let chosen = found.remove(i);
    Ok((chosen, found.pop()))
}

fn not_found(name: &str, scope: Option<Source>, entries: &[Entry]) -> String {
    let mut names: Vec<String> = Vec::new();
    for e in entries {
        names.push(e.name());
        if let Some(dir) = e.dir.file_name() {
            names.push(dir.to_string_lossy().into_owned());
        }
    }
    let mut hint = suggest::did_you_mean(&suggest::suggestions(
        name,
        names.iter().map(String::as_str),
    ));
    if hint.is_empty() {
        hint = "; run \"zut ext list\" to see what is installed".into();
    }
    let which = match scope {
        Some(s) => format!("{} ", s.as_str()),
        None => String::new(),
    };
    format!("no installed {which}extension named \"{name}\"{hint}")
}

fn other_note(other: &Option<Target>, verb: &str, flag: &str, io: &mut Io<'_>) {
    if let Some(o) = other {
        let _ = writeln!(
            io.err,
            "note: a {} copy also exists at {}; {verb} it with {flag}",
            o.source.as_str(),
            o.dir.display()
        );
    }
}

fn run_remove(p: &Parsed, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let name = one_positional(p, "extension name")?;
    let (target, other) = choose(name, p, ctx, Source::Global)?;
    let dir = &target.dir;
    let link = fs::symlink_metadata(dir)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false);
    let root = dir.parent().unwrap_or(Path::new("."));
    // Move it out of sight first, so that a deletion failing half-way never
    // leaves a half extension that discovery would try to load.
    let trash = tempfile::Builder::new()
        .prefix(".zut-extension-remove-")
        .tempdir_in(root)
        .map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
    fs::rename(dir, trash.path().join(name))
        .map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
    let trash_path = trash.path().to_path_buf();
    if let Err(e) = trash.close() {
        let _ = writeln!(
            io.err,
            "zut ext remove: warning: could not delete everything ({e}); remove {} by hand",
            trash_path.display()
        );
    }
    let what = if link {
        " (a symlink; what it pointed to was left alone)"
    } else {
        ""
    };
    let _ = writeln!(io.err, "removed {}{what}", dir.display());
    let flag = if other.as_ref().is_some_and(|o| o.source == Source::Project) {
        "--project"
    } else {
        "--global"
    };
    other_note(&other, "remove", flag, io);
    Ok(())
}

fn run_enable(p: &Parsed, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    set_enabled(p, ctx, io, true)
}

fn run_disable(p: &Parsed, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    set_enabled(p, ctx, io, false)
}

fn set_enabled(p: &Parsed, ctx: &CliContext, io: &mut Io<'_>, enabled: bool) -> Outcome {
    let name = one_positional(p, "extension name")?;
    let (target, other) = choose(name, p, ctx, Source::Project)?;
    let word = if enabled { "enabled" } else { "disabled" };
    let path = target.dir.join(MANIFEST_FILE);
    let real =
        fs::canonicalize(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text =
        fs::read_to_string(&real).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match edit::set_enabled(&text, enabled).map_err(|m| format!("{} {m}", path.display()))? {
        Change::Unchanged => {
            let _ = writeln!(
                io.err,
                "{word} {name} (it already was, in {})",
                path.display()
            );
        }
        Change::Rewritten(new) => {
            write_atomically(&real, &new)?;
            let _ = writeln!(
                io.err,
                "{word} {name} in {}; takes effect the next time zut starts (or on /reload-ext)",
                path.display()
            );
        }
    }
    let flag = match other.as_ref().map(|o| o.source) {
        Some(Source::Global) => "--global",
        _ => "--project",
    };
    other_note(&other, if enabled { "enable" } else { "disable" }, flag, io);
    Ok(())
}

/// Replaces `path` with `text` through a temporary file in the same
/// directory, keeping the file's permissions.
fn write_atomically(path: &Path, text: &str) -> Outcome {
    let dir = path.parent().unwrap_or(Path::new("."));
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let perms = fs::metadata(path).map_err(fail)?.permissions();
    let mut tmp = tempfile::Builder::new()
        .prefix(".extension.json.")
        .tempfile_in(dir)
        .map_err(fail)?;
    tmp.write_all(text.as_bytes()).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    fs::set_permissions(tmp.path(), perms).map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}
