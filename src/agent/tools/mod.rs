//! Built-in tools: `read`, `write`, `edit`, `bash`, `grep`.
//!
//! Each tool takes the model's JSON arguments (shapes in DESIGN §4) and
//! returns a [`ToolOutput`]; a bad argument or a failure is an `is_error`
//! output with one clear line for the model, never a panic. Tools that can
//! run long (`bash`, `grep`) honour the cancel token.

use crate::cancel::CancelToken;
use crate::provider::{ContentBlock, ToolDef};
use serde_json::Value;
use std::path::PathBuf;

pub mod bash;
mod common;
pub mod edit;
pub mod grep;
pub mod read;
pub mod write;

/// Where tools run.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The project directory; relative paths resolve against it.
    pub cwd: PathBuf,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: Vec<ContentBlock>,
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            is_error: false,
        }
    }

    /// A failed result with a one-line reason.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            is_error: true,
        }
    }
}

/// Names of the built-in tools this build implements.
pub const BUILTIN_NAMES: &[&str] = &["read", "write", "edit", "bash", "grep"];

/// Definitions advertised to the model.
pub fn definitions() -> Vec<ToolDef> {
    vec![
        read::definition(),
        write::definition(),
        edit::definition(),
        bash::definition(),
        grep::definition(),
    ]
}

/// Runs a built-in tool; `None` when `name` is not one.
pub fn run(
    name: &str,
    args: &Value,
    ctx: &ToolContext,
    cancel: &CancelToken,
) -> Option<ToolOutput> {
    Some(match name {
        "read" => read::run(args, ctx),
        "write" => write::run(args, ctx),
        "edit" => edit::run(args, ctx),
        "bash" => bash::run(args, ctx, cancel),
        "grep" => grep::run(args, ctx, cancel),
        _ => return None,
    })
}
