//! The `read` tool: a file's text, a page at a time, or an image.
//!
//! Invariants: the output never exceeds [`DEFAULT_LIMIT`] lines or about
//! [`MAX_OUTPUT_BYTES`], and when it stops early it says which lines were
//! shown and which `offset` continues; lines longer than [`MAX_LINE_CHARS`]
//! are cut with a marker; memory stays bounded whatever the file (lines are
//! streamed, images are size-checked before they are read). Binary files,
//! directories and special files are refused with an error naming them.
//! Line text is shown exactly, except that the `\r` of a CRLF line ending
//! is dropped (`edit` accepts LF-only `oldText` for CRLF files).

use super::common::{
    io_problem, looks_binary, read_prefix, resolve, Args, LineReader, SNIFF_BYTES,
};
use super::{ToolContext, ToolOutput};
use crate::provider::{ContentBlock, ToolDef};
use base64::Engine as _;
use serde_json::{json, Value};
use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::Path;

/// Lines shown when the model gives no `limit`.
pub const DEFAULT_LIMIT: u64 = 2000;
/// Roughly the most text one call returns.
pub const MAX_OUTPUT_BYTES: usize = 50 * 1024;
/// Longer lines are cut.
pub const MAX_LINE_CHARS: usize = 2000;
/// Largest image returned as an image block.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// The definition advertised to the model.
pub fn definition() -> ToolDef {
    ToolDef {
        name: "read".into(),
        description: format!(
            "Read a file. Text is returned as it is in the file, at most {DEFAULT_LIMIT} lines \
             or {} KiB per call; when more remains, the output ends with a note giving the \
             offset to continue from. Use offset (1-based line number) and limit (number of \
             lines) to read part of a large file. Lines over {MAX_LINE_CHARS} characters are \
             cut. PNG, JPEG, GIF and WebP images up to {} MiB are returned as images. \
             Directories and binary files are refused: use bash (ls) or grep for those.",
            MAX_OUTPUT_BYTES / 1024,
            MAX_IMAGE_BYTES / (1024 * 1024)
        ),
        schema: json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to read, absolute or relative to the project directory"
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Line number to start at (1 is the first line; default 1)"
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": format!("Maximum number of lines to return (default {DEFAULT_LIMIT})")
                }
            },
            "required": ["path"]
        }),
    }
}

/// Runs the tool.
pub fn run(args: &Value, ctx: &ToolContext) -> ToolOutput {
    read(args, ctx).unwrap_or_else(|err| err)
}

fn read(args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let args = Args::new("read", args)?;
    let path = args.string("path", "the file to read")?;
    let offset = args
        .opt_positive("offset", "a line number, 1 or more (the first line is 1)")?
        .unwrap_or(1);
    let limit = args
        .opt_positive("limit", "a positive whole number of lines")?
        .unwrap_or(DEFAULT_LIMIT);
    let path = resolve(ctx, path);
    let shown = path.display();

    let meta = fs::metadata(&path).map_err(|e| args.error(io_problem(&path, &e)))?;
    if meta.is_dir() {
        return Err(args.error(format!(
            "{shown} is a directory, not a file; list it with bash (ls) or search it with grep"
        )));
    }
    if !meta.is_file() {
        return Err(args.error(format!("{shown} is not a regular file")));
    }
    let mut file = File::open(&path).map_err(|e| args.error(io_problem(&path, &e)))?;
    let head =
        read_prefix(&mut file, SNIFF_BYTES).map_err(|e| args.error(io_problem(&path, &e)))?;

    if let Some(mime) = image_type(&head) {
        return read_image(&args, &path, mime, meta.len(), head, file);
    }
    if head.is_empty() {
        return Ok(ToolOutput::text(format!("{shown} is empty (0 bytes)")));
    }
    if looks_binary(&head) {
        return Err(args.error(format!(
            "{shown} is a binary file ({} bytes) and cannot be shown as text",
            meta.len()
        )));
    }
    let reader = BufReader::new(io::Cursor::new(head).chain(file));
    let page = read_page(reader, offset, limit).map_err(|e| args.error(io_problem(&path, &e)))?;
    render(&args, &path, offset, page)
}

/// The image type of a file that starts with `head`, by magic bytes.
fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

fn read_image(
    args: &Args,
    path: &Path,
    mime: &str,
    size: u64,
    head: Vec<u8>,
    mut file: File,
) -> Result<ToolOutput, ToolOutput> {
    let shown = path.display();
    if size > MAX_IMAGE_BYTES {
        return Err(args.error(format!(
            "{shown} is a {mime} image of {size} bytes, over the {} MiB limit",
            MAX_IMAGE_BYTES / (1024 * 1024)
        )));
    }
    let mut data = head;
    // The size check above bounds this; `take` guards a file that grows.
    (&mut file)
        .take(MAX_IMAGE_BYTES + 1 - data.len() as u64)
        .read_to_end(&mut data)
        .map_err(|e| args.error(io_problem(path, &e)))?;
    if data.len() as u64 > MAX_IMAGE_BYTES {
        return Err(args.error(format!(
            "{shown} grew over the image size limit while reading"
        )));
    }
    Ok(ToolOutput {
        content: vec![
            ContentBlock::text(format!(
                "Read image file {shown} [{mime}, {} bytes]",
                data.len()
            )),
            ContentBlock::Image {
                mime_type: mime.to_string(),
                data: base64::engine::general_purpose::STANDARD.encode(&data),
            },
        ],
        is_error: false,
    })
}

/// The lines of one call and where they sit in the file.
struct Page {
    text: String,
    /// Number of the last line shown (`offset - 1` if none).
    last: u64,
    /// Lines in the whole file.
    total: u64,
    /// Whether the byte budget, rather than `limit`, ended the page.
    hit_byte_cap: bool,
}

/// Streams the file: skips to `offset`, keeps up to `limit` lines within
/// the byte budget, then counts the rest.
fn read_page(reader: impl io::BufRead, offset: u64, limit: u64) -> io::Result<Page> {
    // Enough bytes for MAX_LINE_CHARS characters of any width.
    let mut lines = LineReader::new(reader, MAX_LINE_CHARS * 4);
    let mut page = Page {
        text: String::new(),
        last: offset - 1,
        total: 0,
        hit_byte_cap: false,
    };
    let mut number = 0u64;
    let mut shown = 0u64;
    while shown < limit {
        let Some(line) = lines.next_line()? else {
            break;
        };
        number += 1;
        if number < offset {
            continue;
        }
        let text = display_line(&line.bytes);
        if shown > 0 {
            if page.text.len() + 1 + text.len() > MAX_OUTPUT_BYTES {
                page.hit_byte_cap = true;
                break;
            }
            page.text.push('\n');
        }
        page.text.push_str(&text);
        shown += 1;
        page.last = number;
    }
    page.total = number + lines.count_rest()?;
    Ok(page)
}

/// One line as shown: lossy UTF-8, no CRLF `\r`, cut after
/// [`MAX_LINE_CHARS`] characters with a marker. `kept` holds at least that
/// many characters whenever the line is longer.
fn display_line(kept: &[u8]) -> String {
    let kept = kept.strip_suffix(b"\r").unwrap_or(kept);
    let text = String::from_utf8_lossy(kept);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!(
            "{} [... line cut at {MAX_LINE_CHARS} characters]",
            &text[..cut]
        ),
        None => text.into_owned(),
    }
}

fn render(args: &Args, path: &Path, offset: u64, page: Page) -> Result<ToolOutput, ToolOutput> {
    let shown = path.display();
    if page.last < offset {
        return Err(args.error(format!(
            "offset {offset} is past the end of {shown}, which has {} line{}",
            page.total,
            if page.total == 1 { "" } else { "s" }
        )));
    }
    if page.last >= page.total {
        return Ok(ToolOutput::text(page.text));
    }
    let why = if page.hit_byte_cap {
        format!(" (output limit of {} KiB reached)", MAX_OUTPUT_BYTES / 1024)
    } else {
        String::new()
    };
    Ok(ToolOutput::text(format!(
        "{}\n\n[Showing lines {offset}-{} of {}{why}. Use offset={} to continue.]",
        page.text,
        page.last,
        page.total,
        page.last + 1
    )))
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{context, text};
    use super::*;
    use std::fs;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line{i}\n")).collect()
    }

    fn ok(out: ToolOutput) -> String {
        assert!(!out.is_error, "unexpected error: {}", text(&out));
        text(&out)
    }

    fn err(out: ToolOutput) -> String {
        assert!(out.is_error, "expected an error, got: {}", text(&out));
        text(&out)
    }

    #[test]
    fn whole_small_file_is_returned_verbatim() {
        let (_dir, ctx) = context();
        fs::write(ctx.cwd.join("a.txt"), "one\n  two\r\nthree").unwrap();
        let out = ok(run(&json!({"path": "a.txt"}), &ctx));
        assert_eq!(out, "one\n  two\nthree");
    }

    #[test]
    fn offset_and_limit_select_lines_and_say_how_to_continue() {
        let (_dir, ctx) = context();
        fs::write(ctx.cwd.join("a.txt"), numbered(10)).unwrap();
        let out = ok(run(
            &json!({"path": "a.txt", "offset": 3, "limit": 2}),
            &ctx,
        ));
        assert_eq!(
            out,
            "line3\nline4\n\n[Showing lines 3-4 of 10. Use offset=5 to continue.]"
        );
        let out = ok(run(&json!({"path": "a.txt", "offset": 9}), &ctx));
        assert_eq!(out, "line9\nline10");
    }

    #[test]
    fn offset_past_the_end_is_an_error() {
        let (_dir, ctx) = context();
        fs::write(ctx.cwd.join("a.txt"), numbered(10)).unwrap();
        let out = err(run(&json!({"path": "a.txt", "offset": 11}), &ctx));
        assert_eq!(
            out,
            format!(
                "read: offset 11 is past the end of {}, which has 10 lines",
                ctx.cwd.join("a.txt").display()
            )
        );
    }

    #[test]
    fn default_limit_pages_long_files() {
        let (_dir, ctx) = context();
        fs::write(ctx.cwd.join("a.txt"), numbered(2500)).unwrap();
        let out = ok(run(&json!({"path": "a.txt"}), &ctx));
        assert!(out.starts_with("line1\nline2\n"));
        assert!(out.contains("\nline2000\n"));
        assert!(!out.contains("line2001"));
        assert!(out.ends_with("[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"));
    }

    #[test]
    fn output_is_capped_by_bytes() {
        let (_dir, ctx) = context();
        let line = "x".repeat(1000);
        fs::write(ctx.cwd.join("a.txt"), format!("{line}\n").repeat(100)).unwrap();
        let out = ok(run(&json!({"path": "a.txt"}), &ctx));
        assert!(out.len() < MAX_OUTPUT_BYTES + 200);
        assert!(out.ends_with(
            "[Showing lines 1-51 of 100 (output limit of 50 KiB reached). Use offset=52 to continue.]"
        ));
    }

    #[test]
    fn long_lines_are_cut_with_a_marker() {
        let (_dir, ctx) = context();
        fs::write(
            ctx.cwd.join("a.txt"),
            format!("{}\nshort\n", "é".repeat(100_000)),
        )
        .unwrap();
        let out = ok(run(&json!({"path": "a.txt"}), &ctx));
        let first = out.lines().next().unwrap();
        assert!(first.starts_with(&"é".repeat(MAX_LINE_CHARS)));
        assert!(first.ends_with("[... line cut at 2000 characters]"));
        assert!(out.ends_with("\nshort"));
    }

    #[test]
    fn binary_files_are_refused_with_name_and_size() {
        let (_dir, ctx) = context();
        fs::write(ctx.cwd.join("blob.bin"), b"abc\0def").unwrap();
        let out = err(run(&json!({"path": "blob.bin"}), &ctx));
        assert_eq!(
            out,
            format!(
                "read: {} is a binary file (7 bytes) and cannot be shown as text",
                ctx.cwd.join("blob.bin").display()
            )
        );
    }

    #[test]
    fn images_come_back_as_image_blocks() {
        let (_dir, ctx) = context();
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-rest-of-it".to_vec();
        fs::write(ctx.cwd.join("pic.png"), &png).unwrap();
        let out = run(&json!({"path": "pic.png"}), &ctx);
        assert!(!out.is_error);
        assert!(text(&out).ends_with(&format!("[image/png, {} bytes]", png.len())));
        match &out.content[1] {
            ContentBlock::Image { mime_type, data } => {
                assert_eq!(mime_type, "image/png");
                assert_eq!(
                    base64::engine::general_purpose::STANDARD
                        .decode(data)
                        .unwrap(),
                    png
                );
            }
            other => panic!("expected an image block, got {other:?}"),
        }
        fs::write(ctx.cwd.join("x.webp"), b"RIFF\x10\0\0\0WEBPVP8 ").unwrap();
        let out = run(&json!({"path": "x.webp"}), &ctx);
        assert!(
            matches!(&out.content[1], ContentBlock::Image { mime_type, .. } if mime_type == "image/webp")
        );
    }

    #[test]
    fn oversized_images_are_refused() {
        let (_dir, ctx) = context();
        let path = ctx.cwd.join("big.gif");
        fs::write(&path, b"GIF89a").unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(MAX_IMAGE_BYTES + 1)
            .unwrap();
        let out = err(run(&json!({"path": "big.gif"}), &ctx));
        assert!(out.contains("image/gif image of 5242881 bytes, over the 5 MiB limit"));
    }

    #[test]
    fn directories_missing_and_empty_files() {
        let (_dir, ctx) = context();
        fs::create_dir(ctx.cwd.join("sub")).unwrap();
        fs::write(ctx.cwd.join("empty"), "").unwrap();
        assert!(err(run(&json!({"path": "sub"}), &ctx)).contains("is a directory"));
        let missing = err(run(&json!({"path": "nope.txt"}), &ctx));
        assert_eq!(
            missing,
            format!(
                "read: file not found: {}",
                ctx.cwd.join("nope.txt").display()
            )
        );
        assert!(ok(run(&json!({"path": "empty"}), &ctx)).ends_with("empty is empty (0 bytes)"));
    }

    #[test]
    fn bad_arguments_name_the_argument() {
        let (_dir, ctx) = context();
        assert_eq!(
            err(run(&json!({}), &ctx)),
            "read: \"path\" is required: the file to read"
        );
        assert_eq!(
            err(run(&json!({"path": "a", "offset": 0}), &ctx)),
            "read: \"offset\" must be a line number, 1 or more (the first line is 1), got 0"
        );
        assert!(err(run(&json!({"path": "a", "limit": "5"}), &ctx)).starts_with("read: \"limit\""));
    }
}
