//! The `zut ext` router and the small subcommands (`list`, `remove`,
//! `enable`, `disable`, `logs`, `doctor`); `install`, `new` and `test`
//! (`conformance`) live in their own modules.
//!
//! The command line is declared in [`super::args`] (argh); the router
//! answers `--help` (on stdout: it is what was asked for), has one match
//! arm per subcommand, and turns a [`Failure`] into one stderr line and an
//! exit code. `zut ext` alone prints the help on stderr and exits 2.
//!
//! Name lookup for `remove`/`enable`/`disable`: an installed extension is
//! found by directory name, else by manifest name, in the project
//! (`<cwd>/.zut/extensions`) and global (`$ZUT_HOME/extensions`) scopes.
//! When both have one, `remove` takes the global copy and `enable` /
//! `disable` the project copy (the one zut loads in this directory), and a
//! note names the other; `--project` / `--global` choose explicitly.
//! `update` takes global extensions only (what install put there).
//!
//! `enable` / `disable` record the choice in `$ZUT_HOME/config.json`
//! (see [`crate::config::ExtensionKey`]), never in the extension's files,
//! so a git clone stays clean for `update`; `remove` forgets the choice and
//! the install record.

use super::args::{self, ExtCommand, Parsed};
use super::install::{self, Request};
use super::{builder::Builder, list, logs, new, suggest, update};
use super::{CliContext, Failure, Io, Outcome};
use crate::host::discovery::{self, Entry, Options, Source};
use crate::host::manifest;
use std::fs;
use std::path::{Path, PathBuf};

/// Runs `zut ext <args…>`; returns the exit code.
pub(crate) fn dispatch(args: &[String], ctx: &CliContext, io: &mut Io<'_>) -> i32 {
    let command = match args::parse_ext(args) {
        Parsed::Run(command) => command,
        Parsed::Help(text) => {
            let _ = writeln!(io.out, "{}", text.trim_end());
            return 0;
        }
        Parsed::Missing(help) => {
            let _ = writeln!(io.err, "{}", help.trim_end());
            let _ = writeln!(io.err, "zut ext: missing command");
            return 2;
        }
        Parsed::Usage(message) => {
            let sub = args::subcommand_of(args);
            let _ = writeln!(
                io.err,
                "zut ext {sub}: {}\nrun \"zut ext {sub} --help\" for usage",
                message.trim_end().replace('\n', "\n  ")
            );
            return 2;
        }
        Parsed::Unknown(sub) => return unknown(&sub, io),
    };
    // One arm per subcommand.
    let (name, result) = match &command {
        ExtCommand::List(c) => ("list", run_list(c.json, ctx, io)),
        ExtCommand::Install(c) => ("install", run_install(c, ctx, io)),
        ExtCommand::Update(c) => ("update", run_update(&c.names, ctx, io)),
        ExtCommand::Remove(c) => (
            "remove",
            run_remove(&c.name, scope(c.project, c.global), ctx, io),
        ),
        ExtCommand::Enable(c) => (
            "enable",
            set_enabled(&c.name, scope(c.project, c.global), ctx, io, true),
        ),
        ExtCommand::Disable(c) => (
            "disable",
            set_enabled(&c.name, scope(c.project, c.global), ctx, io, false),
        ),
        ExtCommand::Logs(c) => ("logs", logs::logs(&c.name, c.follow, &ctx.zut_home, io)),
        ExtCommand::Doctor(c) => ("doctor", super::doctor::run(&c.names, c.json, ctx, io)),
        ExtCommand::Trust(c) => (
            "trust",
            super::trust::run_trust(c.dir.as_deref().map(Path::new), ctx, io),
        ),
        ExtCommand::Untrust(c) => (
            "untrust",
            super::trust::run_untrust(c.dir.as_deref().map(Path::new), ctx, io),
        ),
        ExtCommand::New(c) => ("new", run_new(c, ctx, io)),
        ExtCommand::Test(c) => (
            "test",
            super::conformance::run(&c.path, c.json, &ctx.cwd, io),
        ),
    };
    finish(name, result, io)
}

/// `--project` / `--global` (the parser refuses both at once).
fn scope(project: bool, global: bool) -> Option<Source> {
    match (project, global) {
        (true, _) => Some(Source::Project),
        (_, true) => Some(Source::Global),
        _ => None,
    }
}

fn unknown(sub: &str, io: &mut Io<'_>) -> i32 {
    let mut hint = suggest::did_you_mean(&suggest::suggestions(sub, args::NAMES.iter().copied()));
    if hint.is_empty() {
        hint = "; run \"zut ext help\" for the list".into();
    }
    let _ = writeln!(io.err, "zut ext: unknown subcommand \"{sub}\"{hint}");
    2
}

fn finish(name: &str, result: Outcome, io: &mut Io<'_>) -> i32 {
    match result {
        Ok(()) | Err(Failure::StdoutClosed) => 0,
        Err(Failure::Usage(m)) => {
            let _ = writeln!(
                io.err,
                "zut ext {name}: {m}\nrun \"zut ext {name} --help\" for usage"
            );
            2
        }
        Err(Failure::Error(m)) => {
            let _ = writeln!(io.err, "zut ext {name}: {m}");
            1
        }
        Err(Failure::Interrupted) => {
            let _ = writeln!(io.err, "zut ext {name}: interrupted; nothing was changed");
            130
        }
    }
}

fn run_list(json: bool, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    // What is installed, whatever `--no-extensions` says (it shapes a
    // run, not the listing), plus the `--ext` directories named for it.
    let entries = discovery::discover(&Options {
        cwd: ctx.cwd.clone(),
        zut_home: ctx.zut_home.clone(),
        ext_paths: ctx.ext_paths.clone(),
        no_extensions: false,
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
    if !json {
        mcp_note(ctx, io);
    }
    let text = if json {
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

/// MCP servers load beside extensions but are listed by `zut mcp list`:
/// one line on stderr says how many would start, so a user looking here
/// for everything that loads is pointed there.
fn mcp_note(ctx: &CliContext, io: &mut Io<'_>) {
    let loaded = crate::mcp::config::load(&crate::mcp::config::Sources {
        cwd: ctx.cwd.clone(),
        zut_home: ctx.zut_home.clone(),
        files: Vec::new(),
        none: false,
    });
    // Disabled and untrusted entries are not among the servers.
    let n = loaded.servers.len();
    if n > 0 {
        let _ = writeln!(
            io.err,
            "note: {} also start{} with zut; see zut mcp list",
            crate::words::plural(n, "MCP server"),
            if n == 1 { "s" } else { "" }
        );
    }
}

fn run_install(c: &args::Install, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let build = c
        .build
        .as_deref()
        .map(Builder::parse)
        .transpose()
        .map_err(Failure::Usage)?;
    let req = Request {
        source: c.source.clone(),
        force: c.force,
        build,
        git_ref: c.git_ref.clone(),
    };
    install::install(&req, ctx, io)
}

/// `zut ext update [name…]`: the named extensions, else every global one
/// installed from git. With several, one failing does not stop the rest.
fn run_update(names: &[String], ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let mut jobs: Vec<(String, PathBuf, Outcome<install::Record>)> = Vec::new();
    if names.is_empty() {
        for e in installed(ctx) {
            if e.source != Source::Global {
                continue;
            }
            let Some(dir_name) = e.dir.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                continue;
            };
            match install::read_record(&ctx.zut_home, &dir_name) {
                Ok(Some(install::Record::Local { .. })) => {}
                Ok(None) if !e.dir.join(".git").exists() => {}
                Ok(_) | Err(_) => {
                    let record = update::git_record(&ctx.zut_home, &dir_name, &e.dir);
                    jobs.push((dir_name, e.dir, record));
                }
            }
        }
        if jobs.is_empty() {
            let _ = writeln!(
                io.err,
                "no extensions installed from git; nothing to update"
            );
            return Ok(());
        }
    } else {
        for name in names {
            let (target, _) = choose(name, None, ctx, Source::Global)?;
            if target.source == Source::Project {
                return Err(format!(
                    "{name} is a project extension ({}); zut ext update updates what zut ext install put in {}",
                    target.dir.display(),
                    crate::paths::global_extensions(&ctx.zut_home).display()
                )
                .into());
            }
            let dir_name = target
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| name.clone());
            let record = update::git_record(&ctx.zut_home, &dir_name, &target.dir);
            jobs.push((dir_name, target.dir, record));
        }
    }
    let single = jobs.len() == 1;
    let total = jobs.len();
    let mut failed = Vec::new();
    for (name, dir, record) in jobs {
        let result = record.and_then(|r| update::update(&name, &dir, &r, ctx, io));
        match result {
            Ok(_) => {}
            Err(Failure::Error(m)) if !single => {
                let _ = writeln!(io.err, "zut ext update: {m}");
                failed.push(name);
            }
            Err(other) => return Err(other),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {total} updates failed ({}); the others went through",
            failed.len(),
            failed.join(", ")
        )
        .into())
    }
}

fn run_new(c: &args::New, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let lang = match c.lang.as_deref() {
        None => new::Lang::Python,
        Some(l) => new::Lang::parse(l).map_err(Failure::Usage)?,
    };
    new::run(&c.name, lang, c.dir.as_deref(), &ctx.cwd, io)
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
    wanted: Option<Source>,
    ctx: &CliContext,
    prefer: Source,
) -> Outcome<(Target, Option<Target>)> {
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

fn run_remove(name: &str, wanted: Option<Source>, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let (target, other) = choose(name, wanted, ctx, Source::Global)?;
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
    // What zut remembered about it goes too: a later install of the same
    // name starts afresh.
    let mut forget = Vec::new();
    if target.source == Source::Global {
        forget
            .push(install::remove_record(&ctx.zut_home, &dir_name(dir)).map_err(|e| e.to_string()));
    }
    if let Some(key) = discovery::state_key(target.source, dir) {
        forget.push(
            crate::config::set_extension_enabled(&ctx.zut_home, &key, None)
                .map_err(|e| e.to_string()),
        );
    }
    for e in forget.into_iter().filter_map(Result::err) {
        let _ = writeln!(io.err, "zut ext remove: warning: {e}");
    }
    let _ = writeln!(io.err, "removed {}{what}", dir.display());
    let flag = if other.as_ref().is_some_and(|o| o.source == Source::Project) {
        "--project"
    } else {
        "--global"
    };
    other_note(&other, "remove", flag, io);
    Ok(())
}

fn set_enabled(
    name: &str,
    wanted: Option<Source>,
    ctx: &CliContext,
    io: &mut Io<'_>,
    enabled: bool,
) -> Outcome {
    let (target, other) = choose(name, wanted, ctx, Source::Project)?;
    let word = if enabled { "enabled" } else { "disabled" };
    let key = discovery::state_key(target.source, &target.dir)
        .ok_or_else(|| format!("{} has no directory name", target.dir.display()))?;
    let file = crate::config::config_path(&ctx.zut_home);
    let choices = crate::config::extensions_enabled(&ctx.zut_home).map_err(|e| e.to_string())?;
    // What zut does today: the recorded choice, else the manifest's key
    // (an unreadable manifest counts as enabled; the extension is invalid
    // either way until it is fixed).
    let by_manifest = manifest::load(&target.dir).map_or(true, |m| m.enabled);
    let before = choices.get(&key).unwrap_or(by_manifest);
    // The user's latest word is recorded even when nothing changes, so it
    // also outlasts a later manifest that says otherwise.
    crate::config::set_extension_enabled(&ctx.zut_home, &key, Some(enabled))
        .map_err(|e| e.to_string())?;
    let shown = target.dir.display();
    if before == enabled {
        let _ = writeln!(io.err, "{word} {name} (it already was: {shown})");
    } else {
        let _ = writeln!(
            io.err,
            "{word} {name} ({shown}, recorded in {}); takes effect the next time zut starts",
            file.display()
        );
    }
    let flag = match other.as_ref().map(|o| o.source) {
        Some(Source::Global) => "--global",
        _ => "--project",
    };
    other_note(&other, if enabled { "enable" } else { "disable" }, flag, io);
    Ok(())
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
