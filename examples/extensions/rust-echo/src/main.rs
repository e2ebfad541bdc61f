//! `rust-echo`: a complete zut extension in a page, written directly with
//! the wire types of `zut_ext::wire` (no SDK layer).
//!
//! - command `/echo ARGS` displays ARGS;
//! - tool `rust_echo` returns its `text` argument as one text block (repeated
//!   `repeat` times when that optional count is given, which lets benchmarks
//!   ask for a large result with a small call);
//! - with `--intercept` it subscribes to `tool_call` interception and allows
//!   every call unchanged.
//!
//! Usage: `zut-example-echo [NAME] [--intercept]`; NAME (default
//! `rust-echo`) is what `hello` announces, so it must match the `name` of
//! the `extension.json` that starts it.
//!
//! Protocol shape: `hello` first; after `hello_ack` the registrations and
//! `ready`; then one reply per request until `shutdown` (acknowledged) or
//! the end of stdin. Frames are read line by line from a buffered stdin and
//! each reply is flushed as soon as it is written, so the host never waits
//! on a half-buffered frame.

use serde_json::{json, Value};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;
use zut_ext::wire::{decode_host_frame, encode_line, ContentBlock, ExtFrame, HostFrame};

/// The extension protocol major this extension speaks.
const PROTOCOL_VERSION: u32 = zut_ext::wire::PROTOCOL_VERSION;

/// Settings from the command line.
struct Options {
    name: String,
    intercept: bool,
}

impl Options {
    fn from_args() -> Options {
        let mut opts = Options {
            name: "rust-echo".to_string(),
            intercept: false,
        };
        for arg in std::env::args().skip(1) {
            if arg == "--intercept" {
                opts.intercept = true;
            } else {
                opts.name = arg;
            }
        }
        opts
    }
}

/// Writes one frame as one line and flushes it.
fn send(out: &mut impl Write, frame: &ExtFrame) -> io::Result<()> {
    out.write_all(&encode_line(frame))?;
    out.flush()
}

/// The registrations sent after `hello_ack`, `ready` last.
fn registrations(opts: &Options) -> Vec<ExtFrame> {
    let mut frames = vec![
        ExtFrame::RegisterCommand {
            name: "echo".into(),
            description: "display the arguments".into(),
        },
        ExtFrame::RegisterTool {
            name: "rust_echo".into(),
            description: "Return `text` unchanged (repeated `repeat` times if given).".into(),
            schema: Some(json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "repeat": {"type": "integer", "minimum": 1}
                },
                "required": ["text"]
            })),
            deferred: false,
            interactive: false,
        },
    ];
    if opts.intercept {
        frames.push(ExtFrame::Subscribe {
            events: Vec::new(),
            intercept: vec!["tool_call".into(), "tool_result".into()],
        });
    }
    frames.push(ExtFrame::Ready);
    frames
}

/// The `rust_echo` tool: `text`, `repeat` times (default once).
fn echo_tool(id: String, args: &Value) -> ExtFrame {
    let text = args.get("text").and_then(Value::as_str);
    let repeat = args.get("repeat").and_then(Value::as_u64).unwrap_or(1);
    let (content, is_error) = match (text, usize::try_from(repeat)) {
        (Some(text), Ok(n)) if n >= 1 => (text.repeat(n), false),
        (None, _) => (
            "rust_echo needs a string argument \"text\"".to_string(),
            true,
        ),
        _ => ("\"repeat\" must be a positive count".to_string(), true),
    };
    ExtFrame::ToolResult {
        id,
        content: vec![ContentBlock::text(content)],
        is_error,
        activate_tools: Vec::new(),
        details: None,
    }
}

/// Optional arguments for benchmarks: `sleep_ms` before answering, with a
/// `tool_progress` frame every `progress_ms` meanwhile.
fn work(id: &str, args: &Value, out: &mut impl Write) -> io::Result<()> {
    let ms = |k: &str| args.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (total, every) = (ms("sleep_ms"), ms("progress_ms"));
    if total == 0 {
        return Ok(());
    }
    let end = std::time::Instant::now() + std::time::Duration::from_millis(total);
    let mut done = 0u64;
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        let step = match every {
            0 => left,
            n => left.min(std::time::Duration::from_millis(n)),
        };
        std::thread::sleep(step);
        if every > 0 && std::time::Instant::now() < end {
            done += every;
            let frame = zut_ext::additions::AddedFrame::ToolProgress {
                id: id.to_string(),
                message: None,
                progress: zut_ext::additions::number(done as f64),
                total: zut_ext::additions::number(total as f64),
            };
            out.write_all(&zut_ext::wire::encode_line(&frame))?;
            out.flush()?;
        }
    }
    Ok(())
}

/// What to answer to one host frame; `Ok(false)` ends the extension.
fn handle(frame: HostFrame, opts: &Options, out: &mut impl Write) -> io::Result<bool> {
    match frame {
        HostFrame::HelloAck {
            protocol_version, ..
        } => {
            if protocol_version != PROTOCOL_VERSION {
                return Err(io::Error::other(format!(
                    "the host speaks protocol {protocol_version}, this extension {PROTOCOL_VERSION}"
                )));
            }
            // One write for the whole announcement: the host reads it in
            // one wake-up instead of one per frame.
            for frame in registrations(opts) {
                out.write_all(&encode_line(&frame))?;
            }
            out.flush()?;
        }
        HostFrame::CommandInvoked { id, args, .. } => send(
            out,
            &ExtFrame::CommandResponse {
                id,
                action: "display".into(),
                prompt: String::new(),
                insert: String::new(),
                display: args,
                open_panel: None,
                error: String::new(),
            },
        )?,
        HostFrame::ToolCall { id, args, .. } => {
            work(&id, &args, out)?;
            send(out, &echo_tool(id, &args))?
        }
        // Every field left at its default: allow, unchanged.
        HostFrame::EventIntercept { id, .. } => send(
            out,
            &ExtFrame::EventInterceptResponse {
                id,
                block: false,
                reason: String::new(),
                modified_args: None,
                replace_text: String::new(),
                context: String::new(),
                replace_content: None,
                decision: String::new(),
            },
        )?,
        HostFrame::Shutdown => {
            send(out, &ExtFrame::ShutdownAck)?;
            return Ok(false);
        }
        // Events, cancellations and panel frames need no answer here.
        _ => {}
    }
    Ok(true)
}

fn run(opts: &Options) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    send(
        &mut out,
        &ExtFrame::Hello {
            protocol_version: PROTOCOL_VERSION,
            name: opts.name.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            capabilities: vec!["commands".into(), "tools".into()],
        },
    )?;
    let mut input = BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(()); // EOF: the host is gone
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.is_empty() {
            continue;
        }
        match decode_host_frame(text) {
            Ok(frame) => {
                if !handle(frame, opts, &mut out)? {
                    return Ok(());
                }
            }
            // stderr is the extension's log; a bad line is skipped.
            Err(e) => eprintln!("{}: skipped a host line: {e}", opts.name),
        }
    }
}

fn main() -> ExitCode {
    let opts = Options::from_args();
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        // The host closing our stdout is an ordinary end.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}: {e}", opts.name);
            ExitCode::FAILURE
        }
    }
}
