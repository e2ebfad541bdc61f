//! `--mode json`: every event as one compact JSON line on stdout, flushed
//! per event. A closed stdout (the reader went away) silences the sink
//! instead of failing the run.

use crate::events::{Event, EventSink};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes events to stdout.
#[derive(Default)]
pub struct JsonSink {
    broken: AtomicBool,
}

impl EventSink for JsonSink {
    fn emit(&self, event: Event) {
        // `submit` asks the interactive editor to queue a prompt; there is
        // no editor here, so the protocol has this mode ignore it.
        if self.broken.load(Ordering::Relaxed)
            || matches!(
                event,
                Event::ExtSubmit { .. } | Event::ExtSubmitSlash { .. }
            )
        {
            return;
        }
        let mut line = match serde_json::to_vec(&event) {
            Ok(l) => l,
            Err(e) => {
                log::error!("cannot encode event: {e}");
                return;
            }
        };
        line.push(b'\n');
        let mut out = std::io::stdout().lock();
        if out.write_all(&line).and_then(|_| out.flush()).is_err() {
            self.broken.store(true, Ordering::Relaxed);
        }
    }
}
