//! The `edit` tool: exact text replacements in an existing file.
//!
//! Invariants: every `oldText` is located in the ORIGINAL file and must
//! occur there exactly once (overlapping occurrences count); the located
//! spans must not overlap; then all replacements are applied at once and
//! the file is written atomically. Any error leaves the file untouched.
//!
//! A file whose every line ends in CRLF is matched with LF line endings
//! (which is what `read` shows) and written back with CRLF, so the model
//! never has to reproduce `\r`. Files with mixed endings match exactly.

use super::common::{atomic_write, io_problem, resolve, Args};
use super::{ToolContext, ToolOutput};
use crate::provider::ToolDef;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The definition advertised to the model.
pub fn definition() -> ToolDef {
    ToolDef {
        name: "edit".into(),
        description: "Edit a file by replacing exact text. Each edit's oldText must occur \
                      exactly once in the original file: copy it exactly, whitespace and \
                      indentation included, with enough surrounding lines to make it unique. \
                      Edits are located in the original file, so they must not overlap and \
                      later edits do not see earlier replacements. Either all edits are \
                      applied or, on any error, none."
            .into(),
        schema: json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to edit, absolute or relative to the project directory"
                },
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "description": "Replacements, each matching exactly once in the original file",
                    "items": {
                        "type": "object",
                        "properties": {
                            "oldText": {
                                "type": "string",
                                "description": "Exact text to replace (non-empty, unique in the file)"
                            },
                            "newText": {
                                "type": "string",
                                "description": "Replacement text (empty to delete)"
                            }
                        },
                        "required": ["oldText", "newText"]
                    }
                }
            },
            "required": ["path", "edits"]
        }),
    }
}

/// Runs the tool.
pub fn run(args: &Value, ctx: &ToolContext) -> ToolOutput {
    edit(args, ctx).unwrap_or_else(|err| err)
}

/// One requested replacement.
struct Edit {
    old: String,
    new: String,
}

/// A located replacement: `edits[index]` covers `start..end` of the file.
struct Span {
    index: usize,
    start: usize,
    end: usize,
}

/// Checks the arguments and that every edit applies, without writing
/// (before a person is asked to approve an edit that would fail anyway).
pub fn check(args: &Value, ctx: &ToolContext) -> Result<(), ToolOutput> {
    prepare(&Args::new("edit", args)?, ctx).map(drop)
}

/// The file's path, its edited text and the number of edits.
fn prepare(args: &Args, ctx: &ToolContext) -> Result<(PathBuf, String, usize), ToolOutput> {
    let path = args.string("path", "the file to edit")?;
    let edits = parse_edits(args)?;
    let path = resolve(ctx, path);
    let original = read_text(args, &path)?;

    let crlf = is_crlf(&original);
    let content = if crlf {
        original.replace("\r\n", "\n")
    } else {
        original
    };
    let edits: Vec<Edit> = if crlf {
        edits
            .into_iter()
            .map(|e| Edit {
                old: e.old.replace("\r\n", "\n"),
                new: e.new.replace("\r\n", "\n"),
            })
            .collect()
    } else {
        edits
    };

    let spans = locate(args, &path, &content, &edits)?;
    let mut updated = apply(&content, &edits, &spans);
    if crlf {
        updated = updated.replace('\n', "\r\n");
    }
    Ok((path, updated, edits.len()))
}

fn edit(args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let args = Args::new("edit", args)?;
    let (path, updated, count) = prepare(&args, ctx)?;
    atomic_write(&path, updated.as_bytes())
        .map_err(|e| args.error(format!("cannot write {}: {e}", path.display())))?;
    Ok(ToolOutput::text(format!(
        "applied {count} edit{} to {}",
        if count == 1 { "" } else { "s" },
        path.display()
    )))
}

fn parse_edits(args: &Args) -> Result<Vec<Edit>, ToolOutput> {
    let items = args.array("edits", "a list of {\"oldText\", \"newText\"} replacements")?;
    if items.is_empty() {
        return Err(args.error("\"edits\" is empty: give at least one {\"oldText\", \"newText\"}"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |name: &str| item.get(name).and_then(Value::as_str);
            if !item.is_object() {
                return Err(args.error(format!(
                    "edits[{i}] must be an object with \"oldText\" and \"newText\""
                )));
            }
            let old = match field("oldText") {
                Some(old) if !old.is_empty() => old,
                _ => {
                    return Err(args.error(format!(
                        "edits[{i}].oldText must be a non-empty string: the exact text to replace"
                    )))
                }
            };
            let new = field("newText").ok_or_else(|| {
                args.error(format!(
                    "edits[{i}].newText must be a string (\"\" deletes the old text)"
                ))
            })?;
            Ok(Edit {
                old: old.to_string(),
                new: new.to_string(),
            })
        })
        .collect()
}

fn read_text(args: &Args, path: &Path) -> Result<String, ToolOutput> {
    if path.is_dir() {
        return Err(args.error(format!("{} is a directory", path.display())));
    }
    // Never a FIFO (blocks forever) or a device (`/dev/zero` never ends).
    let bytes = crate::safe_fs::read_regular(path).map_err(|e| args.error(io_problem(path, &e)))?;
    String::from_utf8(bytes).map_err(|_| {
        args.error(format!(
            "{} is not UTF-8 text and cannot be edited",
            path.display()
        ))
    })
}

/// Whether every line break in `text` is CRLF (and there is at least one).
fn is_crlf(text: &str) -> bool {
    let lf = text.matches('\n').count();
    lf > 0 && text.matches("\r\n").count() == lf
}

/// Finds each edit's single occurrence and checks the spans are disjoint.
fn locate(
    args: &Args,
    path: &Path,
    content: &str,
    edits: &[Edit],
) -> Result<Vec<Span>, ToolOutput> {
    let shown = path.display();
    let mut spans = Vec::with_capacity(edits.len());
    for (index, edit) in edits.iter().enumerate() {
        let found = occurrences(content, &edit.old);
        match found.as_slice() {
            [start] => spans.push(Span {
                index,
                start: *start,
                end: start + edit.old.len(),
            }),
            [] => {
                return Err(args.error(format!(
                    "edits[{index}].oldText was not found in {shown} (0 matches); it must \
                     match the file exactly, whitespace included: read the file again"
                )))
            }
            many => {
                return Err(args.error(format!(
                    "edits[{index}].oldText matches {} times in {shown}; include more \
                     surrounding text so that it matches exactly once",
                    many.len()
                )))
            }
        }
    }
    spans.sort_by_key(|s| s.start);
    for pair in spans.windows(2) {
        if pair[1].start < pair[0].end {
            let (a, b) = (
                pair[0].index.min(pair[1].index),
                pair[0].index.max(pair[1].index),
            );
            return Err(args.error(format!(
                "edits[{a}] and edits[{b}] overlap in {shown}; merge them into one edit"
            )));
        }
    }
    Ok(spans)
}

/// Byte offsets of every occurrence of `needle`, overlapping ones included.
fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = haystack[from..].find(needle) {
        let at = from + i;
        found.push(at);
        // Step one character, not one byte, to stay on a char boundary.
        from = at + haystack[at..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// Applies disjoint, sorted spans in one pass.
fn apply(content: &str, edits: &[Edit], spans: &[Span]) -> String {
    let mut out = String::with_capacity(content.len());
    let mut at = 0;
    for span in spans {
        out.push_str(&content[at..span.start]);
        out.push_str(&edits[span.index].new);
        at = span.end;
    }
    out.push_str(&content[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{context, text};
    use super::*;
    use std::fs;

    const ORIGINAL: &str =
        "fn main() {\n    let a = 1;\n    let b = 1;\n    println!(\"{a}{b}\");\n}\n";

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let (dir, ctx) = context();
        fs::write(ctx.cwd.join("main.rs"), ORIGINAL).unwrap();
        (dir, ctx)
    }

    fn edit_file(ctx: &ToolContext, edits: Value) -> ToolOutput {
        run(&json!({"path": "main.rs", "edits": edits}), ctx)
    }

    fn file(ctx: &ToolContext) -> String {
        fs::read_to_string(ctx.cwd.join("main.rs")).unwrap()
    }

    fn assert_error(out: &ToolOutput, expected_start: &str) {
        assert!(out.is_error, "expected an error, got: {}", text(out));
        assert!(
            text(out).starts_with(expected_start),
            "{:?} does not start with {expected_start:?}",
            text(out)
        );
    }

    #[test]
    fn applies_several_edits_against_the_original() {
        let (_dir, ctx) = setup();
        let out = edit_file(
            &ctx,
            json!([
                {"oldText": "let b = 1;", "newText": "let b = 2;"},
                {"oldText": "let a = 1;", "newText": "let a = 1; // a"},
                {"oldText": "fn main", "newText": "pub fn main"}
            ]),
        );
        assert!(!out.is_error, "{}", text(&out));
        assert_eq!(
            text(&out),
            format!("applied 3 edits to {}", ctx.cwd.join("main.rs").display())
        );
        assert_eq!(
            file(&ctx),
            "pub fn main() {\n    let a = 1; // a\n    let b = 2;\n    println!(\"{a}{b}\");\n}\n"
        );
    }

    #[test]
    fn zero_matches_is_an_error_naming_the_edit() {
        let (_dir, ctx) = setup();
        let out = edit_file(
            &ctx,
            json!([
                {"oldText": "let a = 1;", "newText": "x"},
                {"oldText": "let c = 1;", "newText": "y"}
            ]),
        );
        assert_error(&out, "edit: edits[1].oldText was not found in ");
        assert!(text(&out).contains("(0 matches)"));
        assert_eq!(file(&ctx), ORIGINAL, "nothing is written on error");
    }

    #[test]
    fn ambiguous_matches_are_an_error_with_the_count() {
        let (_dir, ctx) = setup();
        let out = edit_file(&ctx, json!([{"oldText": " = 1;", "newText": " = 2;"}]));
        assert_error(&out, "edit: edits[0].oldText matches 2 times in ");
        assert_eq!(file(&ctx), ORIGINAL);
        // Overlapping occurrences count too: "aa" occurs twice in "aaa".
        assert_eq!(occurrences("aaa", "aa"), [0, 1]);
        assert_eq!(occurrences("ééé", "éé"), [0, 2]);
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let (_dir, ctx) = setup();
        let out = edit_file(
            &ctx,
            json!([
                {"oldText": "let a = 1;\n    let b", "newText": "x"},
                {"oldText": "fn main() {\n    let a", "newText": "y"}
            ]),
        );
        assert_error(&out, "edit: edits[0] and edits[1] overlap in ");
        assert_eq!(file(&ctx), ORIGINAL);
        // Touching edits do not overlap.
        let out = edit_file(
            &ctx,
            json!([
                {"oldText": "fn main", "newText": "fn start"},
                {"oldText": "() {", "newText": "() -> () {"}
            ]),
        );
        assert!(!out.is_error, "{}", text(&out));
        assert!(file(&ctx).starts_with("fn start() -> () {\n"));
    }

    #[test]
    fn bad_edit_lists_are_refused() {
        let (_dir, ctx) = setup();
        let cases = [
            (json!([]), "edit: \"edits\" is empty"),
            (json!("x"), "edit: \"edits\" must be an array"),
            (
                json!([{"oldText": "", "newText": "x"}]),
                "edit: edits[0].oldText must be a non-empty string",
            ),
            (json!([{"newText": "x"}]), "edit: edits[0].oldText must be"),
            (
                json!([{"oldText": "fn", "newText": 1}]),
                "edit: edits[0].newText must be a string",
            ),
            (json!([7]), "edit: edits[0] must be an object"),
        ];
        for (edits, expected) in cases {
            assert_error(&edit_file(&ctx, edits), expected);
        }
        assert_error(
            &run(&json!({"edits": []}), &ctx),
            "edit: \"path\" is required",
        );
        assert_eq!(file(&ctx), ORIGINAL);
    }

    #[test]
    fn missing_and_non_text_files() {
        let (_dir, ctx) = context();
        let out = run(
            &json!({"path": "nope", "edits": [{"oldText": "a", "newText": "b"}]}),
            &ctx,
        );
        assert_error(&out, "edit: file not found: ");
        fs::write(ctx.cwd.join("bin"), b"\xff\xfe").unwrap();
        let out = run(
            &json!({"path": "bin", "edits": [{"oldText": "a", "newText": "b"}]}),
            &ctx,
        );
        assert!(text(&out).ends_with("is not UTF-8 text and cannot be edited"));
    }

    #[test]
    fn crlf_files_match_lf_text_and_keep_crlf() {
        let (_dir, ctx) = context();
        fs::write(ctx.cwd.join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
        let out = run(
            &json!({"path": "w.txt", "edits": [{"oldText": "one\ntwo", "newText": "1\n2"}]}),
            &ctx,
        );
        assert!(!out.is_error, "{}", text(&out));
        assert_eq!(
            fs::read_to_string(ctx.cwd.join("w.txt")).unwrap(),
            "1\r\n2\r\nthree\r\n"
        );
    }

    #[test]
    fn fifos_and_devices_are_refused_without_blocking() {
        use super::super::common::testing::{mkfifo, within_deadline};
        let (dir, ctx) = setup();
        mkfifo(&ctx.cwd.join("pipe"));
        for path in [
            ctx.cwd.join("pipe").display().to_string(),
            "/dev/zero".into(),
        ] {
            let ctx = ctx.clone();
            let out = within_deadline(move || {
                run(
                    &json!({"path": path, "edits": [{"oldText": "a", "newText": "b"}]}),
                    &ctx,
                )
            });
            assert!(out.is_error);
            assert!(text(&out).contains("not a regular file"), "{}", text(&out));
        }
        drop(dir);
    }
}
