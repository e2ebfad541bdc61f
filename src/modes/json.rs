//! `--mode json`: every event as one compact JSON line on stdout, flushed
//! per event. A closed stdout (the reader went away) silences the sink
//! instead of failing the run.

use crate::events::Event;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes events to stdout.
#[derive(Default)]
pub struct JsonOut {
    broken: AtomicBool,
    failed: bool,
}

impl super::Front for JsonOut {
    fn exit_code(&self) -> i32 {
        if self.failed {
            super::EXIT_FAILURE
        } else {
            super::EXIT_OK
        }
    }

    fn show(&mut self, event: &Event) {
        if matches!(event, Event::Error { .. }) {
            self.failed = true;
        }
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
        let mut line = match serde_json::to_vec(event) {
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
