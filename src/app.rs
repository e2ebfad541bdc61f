//! The command line: flags (documented in zut(1)), logging, signals, mode selection.
//! `main` only maps [`main`]'s result to the process exit status.

use crate::cancel;
use crate::core::boot::{Mode, Run, SessionChoice};
use crate::core::{EXIT_OK, EXIT_USAGE};
use crate::host::{deadlines::Deadlines, discovery, HostConfig};
use crate::modes;
use argh::FromArgs;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;

#[derive(FromArgs, Debug)]
/// zut: a terminal coding agent built around extensions.
///
/// Without -p, zut opens its terminal UI; use -p for print mode, --mode
/// json for the event stream, or --mode rpc to drive zut from a program.
/// `zut ext` lists the extension management commands; `zut mcp` configures
/// MCP servers (`zut mcp serve` serves zut's tools over MCP); `zut skills` lists
/// the skills zut finds for this project; `zut hooks [--json]` lists the
/// Claude Code hooks it runs here; `zut sessions` lists this
/// project's sessions; `zut models [--json]` lists the provider's models
/// (it takes --provider, --base-url, --api-key).
#[argh(
    help_triggers("-h", "--help"),
    example = "git diff | zut -p \"review this change\"",
    example = "zut --ext ./my-extension -p \"/mycommand args\"",
    example = "zut --provider openai --base-url http://localhost:11434/v1 --model qwen2.5-coder -p hi",
    note = "Exit status: 0 ok, 1 runtime failure (provider error, failed command, blocked turn), 2 usage error, 130 interrupted.",
    note = "State lives in $ZUT_HOME (default $XDG_STATE_HOME/zut or ~/.local/state/zut): config.json, auth.json, logs/. See man zut, man zut-ext, man zut-extensions, man zut-rpc."
)]
struct Cli {
    /// print mode: run PROMPT (plus piped stdin), print only the final answer
    #[argh(switch, short = 'p')]
    print: bool,
    /// front end: json (event stream on stdout) or rpc (JSON-lines requests)
    #[argh(option)]
    mode: Option<String>,
    /// load the extension directory at PATH for this run (repeatable; wins over installed ones)
    #[argh(option, short = 'e', arg_name = "PATH")]
    ext: Vec<String>,
    /// skip discovery of installed and project extensions (--ext still loads)
    #[argh(switch)]
    no_extensions: bool,
    /// same as --no-extensions
    #[argh(switch)]
    no_ext: bool,
    /// model provider: anthropic, openai (any OpenAI-compatible server) or script
    #[argh(option)]
    provider: Option<String>,
    /// model name
    #[argh(option)]
    model: Option<String>,
    /// provider API root (anthropic: before /v1/messages; openai: including /v1)
    #[argh(option)]
    base_url: Option<String>,
    /// provider API key (else ANTHROPIC_API_KEY / OPENAI_API_KEY / $ZUT_HOME/auth.json)
    #[argh(option)]
    api_key: Option<String>,
    /// the scripted provider's JSON-lines script
    #[argh(option, arg_name = "FILE")]
    script: Option<String>,
    /// no Anthropic prompt-cache breakpoints (config "cache": false)
    #[argh(switch)]
    no_cache: bool,
    /// how hard the model may think: off, low, medium or high (config "thinking")
    #[argh(option, arg_name = "LEVEL")]
    thinking: Option<String>,
    /// append every request the scripted provider receives to FILE
    #[argh(option, arg_name = "FILE")]
    script_log: Option<String>,
    /// project directory (default: the current directory)
    #[argh(option, arg_name = "DIR")]
    cwd: Option<String>,
    /// run bash, write and edit without asking for confirmation
    #[argh(switch)]
    yolo: bool,
    /// resume the latest session for this directory
    #[argh(switch, long = "continue")]
    continue_session: bool,
    /// resume session ID
    #[argh(option, arg_name = "ID")]
    session: Option<String>,
    /// keep no session
    #[argh(switch)]
    no_session: bool,
    /// no skill discovery, no skill tool, no /skill: commands
    #[argh(switch)]
    no_skills: bool,
    /// do not run Claude Code hooks from .claude/settings.json and $ZUT_HOME/settings.json (man zut-hooks)
    #[argh(switch)]
    no_hooks: bool,
    /// also start the MCP servers of FILE, Claude Code's .mcp.json shape (repeatable; man zut-mcp)
    #[argh(option, arg_name = "FILE")]
    mcp_config: Vec<String>,
    /// start no MCP servers (.mcp.json, $ZUT_HOME/mcp.json, --mcp-config)
    #[argh(switch)]
    no_mcp: bool,
    /// cap model calls per prompt (default 50; at least 1)
    #[argh(option, arg_name = "N")]
    max_steps: Option<u32>,
    /// print the version and exit
    #[argh(switch)]
    version: bool,
    /// the prompt; a prompt starting with / runs that slash command
    #[argh(positional, arg_name = "PROMPT")]
    prompt: Vec<String>,
}

const DEFAULT_MAX_STEPS: u32 = 50;

/// Runs zut with the process arguments; returns the exit status.
///
/// zut adopts its orphaned descendants for the whole run and, on the way
/// out, ends those still alive: an extension's grandchild that escaped
/// its process group with `setsid()` does not outlive zut.
pub fn main() -> i32 {
    crate::proc::become_subreaper();
    raise_open_file_limit();
    let code = main_inner();
    let grace = crate::host::deadlines::Deadlines::from_env().kill_grace;
    let ended = crate::proc::end_adopted(grace);
    if ended > 0 {
        log::info!("ended {ended} escaped extension process(es) on exit");
    }
    code
}

/// Each extension costs a handful of descriptors (pipes, a pidfd, its
/// log): the default soft limit of 1024 runs out near 250 extensions.
/// Raise it to the hard limit, as Go programs do at start.
fn raise_open_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            log::debug!("cannot raise the open-file limit: {e}");
        }
    }
}

fn main_inner() -> i32 {
    let args: Vec<String> = std::env::args().collect();
    let zut_home = crate::paths::zut_home();
    init_logging(&zut_home);
    if let Some(code) = try_ext(&args[1..], &zut_home) {
        return code;
    }
    if let Some((rest, json)) = crate::provider::models::split_cli(&args[1..]) {
        return models_command(&rest, json, &zut_home);
    }
    let strs: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let cli = match Cli::from_args(&["zut"], &strs) {
        Ok(cli) => cli,
        Err(early) => {
            return match early.status {
                Ok(()) => {
                    println!("{}", early.output);
                    EXIT_OK
                }
                Err(()) => {
                    eprintln!("{}{}", early.output.trim_end(), flag_hint(&early.output));
                    eprintln!("Run zut --help for usage.");
                    EXIT_USAGE
                }
            };
        }
    };
    if cli.version {
        println!("zut {}", env!("CARGO_PKG_VERSION"));
        return EXIT_OK;
    }
    match run(cli, zut_home) {
        Ok(code) => code,
        Err(usage) => {
            eprintln!("zut: {usage}");
            EXIT_USAGE
        }
    }
}

/// `; did you mean "--provider"?` for argh's "Unrecognized argument:
/// --provder", from the flags `zut --help` lists (so it never disagrees).
fn flag_hint(error: &str) -> String {
    let Some(typed) = error
        .lines()
        .find_map(|l| l.trim().strip_prefix("Unrecognized argument:"))
        .map(str::trim)
        .filter(|t| t.starts_with("--"))
    else {
        return String::new();
    };
    let help = match Cli::from_args(&["zut"], &["--help"]) {
        Err(e) => e.output,
        Ok(_) => return String::new(),
    };
    let flags: Vec<&str> = help
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .collect();
    crate::cli::suggest::did_you_mean(&crate::cli::suggest::suggestions(typed, flags))
}

/// Why a run could not start; every one is reported as `zut: MESSAGE`
/// with the usage exit code.
#[derive(Debug)]
enum StartError {
    /// Flags that do not fit together or name nothing usable (the message).
    Usage(String),
    CurrentDir(std::io::Error),
    /// `--cwd DIR` could not be resolved.
    Cwd {
        dir: String,
        source: std::io::Error,
    },
    Stdin(std::io::Error),
    Signals(std::io::Error),
    /// `config.json` could not be read.
    Config(crate::config::ConfigError),
    /// `--thinking` names no level.
    Thinking(crate::provider::UnknownThinking),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Usage(m) => f.write_str(m),
            StartError::CurrentDir(e) => write!(f, "cannot read the current directory: {e}"),
            StartError::Cwd { dir, source } => write!(f, "--cwd {dir}: {source}"),
            StartError::Stdin(e) => write!(f, "cannot read standard input: {e}"),
            StartError::Signals(e) => write!(f, "cannot watch signals: {e}"),
            StartError::Config(e) => write!(f, "{e}"),
            StartError::Thinking(e) => write!(f, "--thinking: {e}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Usage(_) => None,
            StartError::CurrentDir(e) | StartError::Stdin(e) | StartError::Signals(e) => Some(e),
            StartError::Cwd { source, .. } => Some(source),
            StartError::Config(e) => Some(e),
            StartError::Thinking(e) => Some(e),
        }
    }
}

impl From<String> for StartError {
    fn from(m: String) -> Self {
        StartError::Usage(m)
    }
}

impl From<&str> for StartError {
    fn from(m: &str) -> Self {
        StartError::Usage(m.to_string())
    }
}

/// zut's subcommands, for the hint of [`mistyped_command`].
const SUBCOMMANDS: &[&str] = &["ext", "mcp", "skills", "hooks", "sessions", "models"];

/// `zut sesions` starts no terminal with the prompt "sesions": a lone
/// word close to a subcommand (and not one, or it would have run) is
/// taken for a typo. `-p WORD` still sends it as a prompt.
fn mistyped_command(prompt: &[String]) -> Option<String> {
    let [word] = prompt else { return None };
    if word.contains(char::is_whitespace) {
        return None;
    }
    let close = crate::suggest::suggestions(word, SUBCOMMANDS.iter().copied());
    (!close.is_empty()).then(|| {
        format!(
            "{word:?} is not a zut command{} (to send it to the model: zut -p {word})",
            crate::suggest::did_you_mean(&close)
        )
    })
}

fn run(cli: Cli, zut_home: PathBuf) -> Result<i32, StartError> {
    if cli.max_steps == Some(0) {
        return Err("--max-steps must be at least 1".into());
    }
    // RPC mode shares the setup below but runs its own loop on stdin.
    let rpc = cli.mode.as_deref() == Some("rpc");
    let mode = match (cli.print, cli.mode.as_deref()) {
        (_, Some("json")) => Mode::Json,
        (_, Some("print")) | (true, None) => Mode::Print,
        (true, Some("rpc")) => return Err("-p cannot be combined with --mode rpc".into()),
        (false, Some("rpc")) if !cli.prompt.is_empty() => {
            return Err(
                "--mode rpc takes no PROMPT: send prompt requests on standard input (man zut-rpc)"
                    .into(),
            )
        }
        (false, Some("rpc")) => Mode::Json,
        (false, None) => {
            if let Some(hint) = mistyped_command(&cli.prompt) {
                return Err(hint.into());
            }
            if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
                return Err("the interactive terminal needs a terminal on stdin and stdout; use -p PROMPT (print mode) or --mode json in a pipeline".into());
            }
            Mode::Interactive
        }
        (_, Some(other)) => {
            return Err(StartError::Usage(format!(
                "unknown --mode {other:?}: use json or rpc (or -p for print mode)"
            )))
        }
    };
    let session = match (cli.no_session, cli.continue_session, &cli.session) {
        (true, false, None) => SessionChoice::None,
        (false, true, None) => SessionChoice::Continue,
        (false, false, Some(id)) => SessionChoice::Resume(id.clone()),
        (false, false, None) => SessionChoice::New,
        _ => {
            return Err(
                "--no-session, --continue and --session exclude each other: give one".into(),
            )
        }
    };
    // Paths given on the command line (--ext, --script, --script-log) are
    // relative to where zut was started, like any command's arguments;
    // --cwd only says which project the agent works on.
    let here = std::env::current_dir().map_err(StartError::CurrentDir)?;
    let cwd = match &cli.cwd {
        Some(d) => std::fs::canonicalize(here.join(d)).map_err(|source| StartError::Cwd {
            dir: d.clone(),
            source,
        })?,
        None => here.clone(),
    };
    let mut prompt = (!cli.prompt.is_empty()).then(|| cli.prompt.join(" "));
    let stdin = std::io::stdin();
    if !rpc && !stdin.is_terminal() && mode != Mode::Interactive {
        let mut piped = String::new();
        if let Err(e) = stdin.lock().read_to_string(&mut piped) {
            return Err(StartError::Stdin(e));
        }
        if !piped.trim().is_empty() {
            prompt = Some(match prompt {
                Some(p) => format!("{p}\n\n{}", piped.trim_end()),
                None => piped.trim_end().to_string(),
            });
        }
    }
    if mode == Mode::Print && prompt.is_none() {
        return Err("-p needs a PROMPT (or text on standard input)".into());
    }
    let (provider, remember) = resolve_provider(&cli, &here, &zut_home)?;
    let asks_the_model = prompt
        .as_deref()
        .is_some_and(|p| !p.trim().starts_with('/'));
    let host = HostConfig {
        zut_home: zut_home.clone(),
        cwd: cwd.clone(),
        provider: provider.provider.clone(),
        model: provider
            .model
            .clone()
            .unwrap_or_else(|| default_model(&provider.provider).to_string()),
        deadlines: Deadlines::from_env(),
        interactive: mode == Mode::Interactive,
        search_path: None,
        skills: !cli.no_skills,
        session: None,
    };
    for p in &cli.ext {
        let dir = here.join(p);
        if !dir.is_dir() {
            return Err(StartError::Usage(format!("--ext {p}: no such directory")));
        }
        if !dir.join("extension.json").exists() {
            return Err(StartError::Usage(format!(
                "--ext {p}: {} has no extension.json (zut ext new NAME writes a working one)",
                dir.display()
            )));
        }
    }
    let discovery = discovery::Options {
        cwd: cwd.clone(),
        zut_home: zut_home.clone(),
        ext_paths: cli.ext.iter().map(|p| here.join(p)).collect(),
        no_extensions: cli.no_extensions || cli.no_ext,
    };
    let run = Run {
        mode,
        prompt,
        host,
        discovery,
        provider,
        max_steps: cli.max_steps.unwrap_or(DEFAULT_MAX_STEPS),
        yolo: cli.yolo,
        no_skills: cli.no_skills,
        session,
        no_hooks: cli.no_hooks,
        mcp: crate::mcp::config::Sources {
            cwd: cwd.clone(),
            zut_home: zut_home.clone(),
            files: cli.mcp_config.iter().map(|p| here.join(p)).collect(),
            none: cli.no_mcp,
        },
    };
    let code = if mode == Mode::Interactive {
        // The terminal UI reads Ctrl+C as a key and watches SIGTERM and
        // SIGHUP itself, restoring the terminal before it exits.
        modes::run_interactive(run)
    } else {
        let (canceller, token) = cancel::pair();
        // SIGINT, SIGTERM and SIGHUP cancel the current work; the mode
        // then runs the normal graceful shutdown and zut exits 130.
        let signals =
            crate::signals::SignalBridge::cancel(canceller).map_err(StartError::Signals)?;
        let code = if rpc {
            modes::rpc::run(run, &token)
        } else {
            modes::run_once(run, &token)
        };
        drop(signals);
        code
    };
    // Remembered only once it worked: a prompt that ended well got at least
    // one good provider response (slash commands may not ask the model).
    // Only the three keys change, in the file as it is now: what other
    // zut processes wrote during this run stays.
    if let Some(next) = remember.filter(|_| code == EXIT_OK && asks_the_model) {
        let changed = crate::config::update(&zut_home, |c| {
            c.provider = next.provider;
            c.model = next.model;
            c.base_url = next.base_url;
            true
        });
        if let Err(e) = changed {
            log::warn!("cannot remember the provider: {e}");
        }
    }
    Ok(code)
}

/// Flags win; then `config.json` (the last provider used); then whichever
/// API key is in the environment. With none of them the provider stays
/// empty and the first model call explains how to configure one. An
/// explicitly chosen HTTP provider comes back as the `config.json` to
/// write once the run has worked. An unknown provider name is a usage
/// error; one read from `config.json` says so.
fn resolve_provider(
    cli: &Cli,
    here: &std::path::Path,
    zut_home: &std::path::Path,
) -> Result<(crate::provider::Settings, Option<crate::config::Config>), StartError> {
    let known = crate::provider::NAMES;
    if let Some(p) = cli.provider.as_deref().filter(|p| !known.contains(p)) {
        return Err(StartError::Usage(format!(
            "unknown --provider {p:?}: use one of {}",
            known.join(", ")
        )));
    }
    // `--script` is the scripted provider's: alone it picks it.
    let flag_provider = match (cli.provider.as_deref(), &cli.script) {
        (None, Some(_)) => Some("script".to_string()),
        (Some(p), Some(_)) if p != "script" => {
            return Err(StartError::Usage(format!(
                "--script is for the scripted provider, not --provider {p}: drop --provider or pass --provider script"
            )))
        }
        (p, _) => p.map(str::to_string),
    };
    let saved = crate::config::load(zut_home).map_err(StartError::Config)?;
    if flag_provider.is_none() {
        if let Some(p) = saved.provider.as_deref().filter(|p| !known.contains(p)) {
            return Err(StartError::Usage(format!(
                "{} names an unknown provider {p:?}: use one of {}; fix the file, or pass --provider",
                crate::config::config_path(zut_home).display(),
                known.join(", ")
            )));
        }
    }
    let from_env = || {
        [
            ("anthropic", crate::provider::anthropic::KEY_ENV),
            ("openai", crate::provider::openai::KEY_ENV),
        ]
        .into_iter()
        .find(|(_, var)| std::env::var_os(var).is_some_and(|v| !v.is_empty()))
        .map(|(p, _)| p.to_string())
    };
    let provider = flag_provider
        .clone()
        .or_else(|| saved.provider.clone())
        .or_else(from_env)
        .unwrap_or_default();
    let same = saved.provider.as_deref() == Some(provider.as_str());
    let model = cli
        .model
        .clone()
        .or_else(|| saved.model.clone().filter(|_| same));
    let base_url = cli
        .base_url
        .clone()
        .or_else(|| saved.base_url.clone().filter(|_| same));
    let remember = (cli.provider.is_some()
        && provider != "script"
        && (!same || cli.model.is_some() || cli.base_url.is_some()))
    .then(|| {
        let mut next = saved.clone();
        next.provider = Some(provider.clone());
        next.model = model.clone();
        next.base_url = base_url.clone();
        next
    });
    let mut settings = crate::provider::Settings {
        provider,
        model,
        base_url,
        api_key: cli.api_key.clone(),
        script: cli.script.as_ref().map(|s| here.join(s)),
        script_log: cli.script_log.as_ref().map(|s| here.join(s)),
        zut_home: zut_home.to_path_buf(),
        ..Default::default()
    };
    crate::provider::apply_options(
        &mut settings,
        &saved.extra,
        cli.no_cache,
        cli.thinking.as_deref(),
    )
    .map_err(StartError::Thinking)?;
    Ok((settings, remember))
}

/// `zut models [--json]` with the provider flags in `rest`.
fn models_command(rest: &[String], json: bool, zut_home: &std::path::Path) -> i32 {
    let strs: Vec<&str> = rest.iter().map(String::as_str).collect();
    let cli = match Cli::from_args(&["zut"], &strs) {
        Ok(cli) => cli,
        Err(early) => {
            eprintln!("{}", early.output.trim_end());
            return EXIT_USAGE;
        }
    };
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    match resolve_provider(&cli, &here, zut_home) {
        Ok((settings, _)) => crate::provider::models::print(&settings, json),
        Err(e) => {
            eprintln!("zut: {e}");
            EXIT_USAGE
        }
    }
}

fn default_model(provider: &str) -> &'static str {
    match provider {
        "anthropic" => crate::provider::anthropic::DEFAULT_MODEL,
        "openai" => crate::provider::openai::DEFAULT_MODEL,
        _ => "",
    }
}

/// `zut [--ext PATH]… [--no-extensions] [--cwd DIR] ext|skills …`: runs
/// the management command and returns its status; `None` when the
/// arguments are not an `ext` or `skills` invocation.
fn try_ext(args: &[String], zut_home: &std::path::Path) -> Option<i32> {
    let (globals, rest) = match crate::cli::split_ext(args)? {
        Ok(split) => split,
        Err(usage) => {
            eprintln!("zut: {usage}");
            return Some(EXIT_USAGE);
        }
    };
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    // --ext paths are relative to where zut starts, like in a normal run.
    let ctx = crate::cli::CliContext {
        cwd: match &globals.cwd {
            Some(d) => discovery::absolute(&here, std::path::Path::new(d)),
            None => here.clone(),
        },
        zut_home: zut_home.to_path_buf(),
        ext_paths: globals
            .ext_paths
            .iter()
            .map(|p| discovery::absolute(&here, std::path::Path::new(p)))
            .collect(),
        no_extensions: globals.no_extensions,
    };
    if globals.command == "sessions" {
        return Some(crate::cli::sessions::run(rest, &ctx));
    }
    if globals.command == "hooks" {
        return Some(crate::cli::hooks::run(
            rest,
            &ctx,
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        ));
    }
    if globals.command == "mcp" {
        return Some(crate::cli::mcp::run(
            rest,
            &ctx,
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        ));
    }
    if globals.command == "skills" {
        return Some(crate::cli::skills::run(
            rest,
            &ctx,
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        ));
    }
    Some(crate::cli::run_ext(rest, &ctx))
}

/// `$ZUT_HOME/logs/zut.log`, level from `ZUT_LOG` (default info). Logging
/// is best effort: a read-only home must not stop zut.
fn init_logging(zut_home: &std::path::Path) {
    let dir = crate::paths::logs_dir(zut_home);
    let Ok(()) = crate::paths::create_private_dir(&dir) else {
        return;
    };
    let Ok(file) = std::os::unix::fs::OpenOptionsExt::mode(
        std::fs::OpenOptions::new().create(true).append(true),
        0o600,
    )
    .open(dir.join("zut.log")) else {
        return;
    };
    let level = match std::env::var("ZUT_LOG")
        .unwrap_or_default()
        .to_ascii_lowercase()
        .as_str()
    {
        "trace" => log::LevelFilter::Trace,
        "debug" => log::LevelFilter::Debug,
        "warn" => log::LevelFilter::Warn,
        "error" => log::LevelFilter::Error,
        "off" => log::LevelFilter::Off,
        _ => log::LevelFilter::Info,
    };
    let _ = simplelog::WriteLogger::init(level, simplelog::Config::default(), file);
}
