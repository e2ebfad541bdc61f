//! `zut ext trust [DIR]` and `zut ext untrust [DIR]`: allow or forbid what
//! DIR (default: the project directory) brings to start: its project
//! extensions, its `.mcp.json` servers and its `.claude` hooks.
//!
//! The store and its rules live in [`crate::trust`]; this module only turns
//! a command line into a change and one message on stderr. Both commands
//! are idempotent: trusting a trusted directory or untrusting an untrusted
//! one succeeds and says so.

use super::{CliContext, Failure, Io, Outcome};
use crate::host::discovery::absolute;
use std::path::Path;

/// `zut ext trust [DIR]`; returns the exit code (0 ok, 1 failure).
pub fn trust(dir: Option<&Path>, ctx: &CliContext, io: &mut Io<'_>) -> i32 {
    exit_code("trust", run_trust(dir, ctx, io), io)
}

/// `zut ext untrust [DIR]`; returns the exit code (0 ok, 1 failure).
pub fn untrust(dir: Option<&Path>, ctx: &CliContext, io: &mut Io<'_>) -> i32 {
    exit_code("untrust", run_untrust(dir, ctx, io), io)
}

/// Trusts `dir` (relative to the project directory), printing what changed.
pub(crate) fn run_trust(dir: Option<&Path>, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let target = absolute(&ctx.cwd, dir.unwrap_or(Path::new(".")));
    let (real, new) = crate::trust::add(&ctx.zut_home, &target)?;
    let exts = crate::paths::project_extensions(&real);
    let _ = if new {
        writeln!(
            io.err,
            "trusted {}: its project extensions ({}), the MCP servers of its \
             .mcp.json and the Claude Code hooks of its .claude/settings.json \
             will start",
            real.display(),
            exts.display()
        )
    } else {
        writeln!(io.err, "{} is already trusted", real.display())
    };
    Ok(())
}

/// Withdraws trust from `dir`, printing what changed.
pub(crate) fn run_untrust(dir: Option<&Path>, ctx: &CliContext, io: &mut Io<'_>) -> Outcome {
    let target = absolute(&ctx.cwd, dir.unwrap_or(Path::new(".")));
    let (real, was) = crate::trust::remove(&ctx.zut_home, &target)?;
    let _ = if was {
        writeln!(
            io.err,
            "no longer trusted: {}; its project extensions, .mcp.json servers \
             and .claude hooks will not start",
            real.display()
        )
    } else {
        writeln!(io.err, "{} was not trusted", real.display())
    };
    Ok(())
}

fn exit_code(name: &str, result: Outcome, io: &mut Io<'_>) -> i32 {
    match result {
        Ok(()) | Err(Failure::StdoutClosed) => 0,
        Err(Failure::Usage(m)) => {
            let _ = writeln!(io.err, "zut ext {name}: {m}");
            2
        }
        Err(Failure::Error(m)) => {
            let _ = writeln!(io.err, "zut ext {name}: {m}");
            1
        }
        Err(Failure::Interrupted) => 130,
    }
}
