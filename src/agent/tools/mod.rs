//! Built-in tools: `read`, `write`, `edit`, `bash`, `grep`, and `skill`
//! (offered by the agent only when the run has skills for the model, see
//! [`skill`]).
//!
//! Each tool takes the model's JSON arguments (shapes in zut(1), BUILT-IN TOOLS) and
//! returns a [`ToolOutput`]; a bad argument or a failure is an `is_error`
//! output with one clear line for the model, never a panic. Tools that can
//! run long (`bash`, `grep`) honour the cancel token. Relative paths resolve
//! against [`ToolContext::cwd`]. Argument parsing, path resolution, binary
//! detection and atomic writes are shared through the private `common`
//! module so that every tool reports problems the same way.

use crate::cancel::CancelToken;
use crate::provider::{ContentBlock, ToolDef};
use serde_json::Value;
use std::path::PathBuf;

pub mod bash;
mod common;
pub mod edit;
pub mod grep;
pub mod read;
pub mod skill;
pub mod tool_search;
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

/// Checks a confirmed built-in's arguments without running it, so that no
/// one is asked to approve a call that can only fail; `Ok` for others.
pub fn check(name: &str, args: &Value, ctx: &ToolContext) -> Result<(), ToolOutput> {
    match name {
        "bash" => bash::check(args),
        "write" => write::check(args, ctx),
        "edit" => edit::check(args, ctx),
        _ => Ok(()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_definition_is_a_described_object_schema() {
        let defs = definitions();
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, BUILTIN_NAMES);
        for def in &defs {
            assert!(
                def.description.len() > 40,
                "{} needs a description",
                def.name
            );
            assert_eq!(def.schema["type"], "object", "{}", def.name);
            let properties = def.schema["properties"].as_object().expect("properties");
            let required = def.schema["required"].as_array().expect("required");
            assert!(!required.is_empty(), "{}", def.name);
            for name in required {
                let name = name.as_str().expect("a name");
                assert!(properties.contains_key(name), "{}: {name}", def.name);
            }
            for (name, property) in properties {
                assert!(property["description"].is_string(), "{}.{name}", def.name);
            }
        }
    }

    #[test]
    fn run_dispatches_builtins_only() {
        let ctx = ToolContext {
            cwd: std::env::temp_dir(),
        };
        let never = CancelToken::never();
        assert!(run("nope", &serde_json::json!({}), &ctx, &never).is_none());
        for name in BUILTIN_NAMES {
            let out = run(name, &serde_json::json!(null), &ctx, &never).expect("a builtin");
            assert!(out.is_error);
            assert_eq!(
                out.content,
                vec![ContentBlock::text(format!(
                    "{name}: arguments must be a JSON object, got null"
                ))]
            );
        }
    }
}
