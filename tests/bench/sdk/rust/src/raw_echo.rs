//! Benchmark baseline: tool `echo` returning its args as compact JSON text,
//! written directly on the wire types with one buffered reader and writer
//! and no threads: the least an extension can do per call.

use std::io::{self, BufRead, Write};
use zut_ext::wire::{decode_host_frame, encode_into, ContentBlock, ExtFrame, HostFrame};

fn main() -> io::Result<()> {
    let stdin = io::stdin().lock();
    let mut out = io::stdout().lock();
    let mut buf = Vec::with_capacity(4096);
    let mut send = |out: &mut io::StdoutLock, frame: &ExtFrame| -> io::Result<()> {
        buf.clear();
        encode_into(frame, &mut buf);
        out.write_all(&buf)?;
        out.flush()
    };
    send(
        &mut out,
        &ExtFrame::Hello {
            protocol_version: 2,
            name: "raw-echo".into(),
            version: "0.1.0".into(),
            capabilities: vec!["tools".into()],
        },
    )?;
    for line in stdin.split(b'\n') {
        match decode_host_frame(&line?) {
            Ok(HostFrame::HelloAck { .. }) => {
                send(
                    &mut out,
                    &ExtFrame::RegisterTool {
                        name: "echo".into(),
                        description: "Return the args as JSON text.".into(),
                        schema: Some(serde_json::json!({"type": "object"})),
                        deferred: false,
                        interactive: false,
                    },
                )?;
                send(&mut out, &ExtFrame::Ready)?;
            }
            Ok(HostFrame::ToolCall { id, args, .. }) => send(
                &mut out,
                &ExtFrame::ToolResult {
                    id,
                    content: vec![ContentBlock::text(args.to_string())],
                    is_error: false,
                    activate_tools: vec![],
                    details: None,
                },
            )?,
            Ok(HostFrame::Shutdown) => {
                send(&mut out, &ExtFrame::ShutdownAck)?;
                return Ok(());
            }
            _ => {}
        }
    }
    Ok(())
}
