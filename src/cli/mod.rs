//! `zut ext …` subcommands.

use std::path::PathBuf;

/// What every subcommand needs to know.
pub struct CliContext {
    pub cwd: PathBuf,
    pub zut_home: PathBuf,
    pub ext_paths: Vec<PathBuf>,
    pub no_extensions: bool,
}

/// Runs `zut ext ARGS…`; returns the exit status.
pub fn run_ext(_args: &[String], _ctx: &CliContext) -> i32 {
    eprintln!("zut ext: not available in this build yet");
    2
}
