//! The `write` tool: create or replace a whole file.
//!
//! Invariants: the target is replaced atomically (a reader sees the old or
//! the new content, never a mix), missing parent directories are created,
//! an existing file keeps its permission bits, and a directory at the path
//! is refused rather than touched.

use super::common::{atomic_write, resolve, Args};
use super::{ToolContext, ToolOutput};
use crate::provider::ToolDef;
use serde_json::{json, Value};
use std::path::PathBuf;

/// The definition advertised to the model.
pub fn definition() -> ToolDef {
    ToolDef {
        name: "write".into(),
        description: "Write a file with the given content, replacing it if it exists. Parent \
                      directories are created. The write is atomic and an existing file keeps \
                      its permissions. Prefer edit for changing part of an existing file."
            .into(),
        schema: json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to write, absolute or relative to the project directory"
                },
                "content": {
                    "type": "string",
                    "description": "The complete new content of the file"
                }
            },
            "required": ["path", "content"]
        }),
    }
}

/// Runs the tool.
pub fn run(args: &Value, ctx: &ToolContext) -> ToolOutput {
    write(args, ctx).unwrap_or_else(|err| err)
}

/// Checks the arguments without writing (before a person is asked to
/// approve a write that would fail anyway).
pub fn check(args: &Value, ctx: &ToolContext) -> Result<(), ToolOutput> {
    parse(&Args::new("write", args)?, ctx).map(drop)
}

/// The target path and the content, validated.
fn parse<'a>(args: &Args<'a>, ctx: &ToolContext) -> Result<(PathBuf, &'a str), ToolOutput> {
    let path = args.string("path", "the file to write")?;
    let content = args.string("content", "the complete new content of the file")?;
    let path = resolve(ctx, path);
    if path.is_dir() {
        return Err(args.error(format!("{} is a directory", path.display())));
    }
    Ok((path, content))
}

fn write(args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let args = Args::new("write", args)?;
    let (path, content) = parse(&args, ctx)?;
    atomic_write(&path, content.as_bytes())
        .map_err(|e| args.error(format!("cannot write {}: {e}", path.display())))?;
    Ok(ToolOutput::text(format!(
        "wrote {} bytes to {}",
        content.len(),
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{context, text};
    use super::*;
    use std::fs;

    #[test]
    fn creates_parent_directories_and_reports_bytes() {
        let (_dir, ctx) = context();
        let out = run(&json!({"path": "a/b/new.txt", "content": "héllo\n"}), &ctx);
        assert!(!out.is_error);
        let path = ctx.cwd.join("a/b/new.txt");
        assert_eq!(text(&out), format!("wrote 7 bytes to {}", path.display()));
        assert_eq!(fs::read_to_string(path).unwrap(), "héllo\n");
    }

    #[test]
    fn replaces_existing_files_keeping_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, ctx) = context();
        let path = ctx.cwd.join("run.sh");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        let out = run(&json!({"path": path.to_str(), "content": ""}), &ctx);
        assert!(!out.is_error, "{}", text(&out));
        assert_eq!(fs::read_to_string(&path).unwrap(), "");
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[test]
    fn refuses_directories_and_bad_arguments() {
        let (_dir, ctx) = context();
        fs::create_dir(ctx.cwd.join("d")).unwrap();
        let out = run(&json!({"path": "d", "content": "x"}), &ctx);
        assert!(out.is_error);
        assert!(text(&out).ends_with("d is a directory"));
        let out = run(&json!({"path": "f"}), &ctx);
        assert_eq!(
            text(&out),
            "write: \"content\" is required: the complete new content of the file"
        );
        let out = run(&json!({"path": "f", "content": 5}), &ctx);
        assert!(out.is_error);
        assert!(!ctx.cwd.join("f").exists());
    }

    #[test]
    fn a_file_in_the_way_of_a_directory_is_an_error() {
        let (_dir, ctx) = context();
        fs::write(ctx.cwd.join("file"), "x").unwrap();
        let out = run(&json!({"path": "file/inner.txt", "content": "x"}), &ctx);
        assert!(out.is_error);
        assert!(text(&out).starts_with("write: cannot write "));
    }

    #[test]
    fn fifos_and_devices_are_never_replaced() {
        use super::super::common::testing::{mkfifo, within_deadline};
        use std::os::unix::fs::FileTypeExt;
        let (_dir, ctx) = context();
        let pipe = ctx.cwd.join("pipe");
        mkfifo(&pipe);
        let path = pipe.display().to_string();
        let c = ctx.clone();
        let out = within_deadline(move || run(&json!({"path": path, "content": "x"}), &c));
        assert!(out.is_error, "{}", text(&out));
        assert!(text(&out).contains("FIFO"), "{}", text(&out));
        assert!(fs::symlink_metadata(&pipe).unwrap().file_type().is_fifo());
        let out = run(&json!({"path": "/dev/null", "content": "x"}), &ctx);
        assert!(out.is_error);
        assert!(text(&out).contains("a device"), "{}", text(&out));
        assert!(fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }
}
