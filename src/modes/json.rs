//! `--mode json`: every event as one compact JSON line on stdout, flushed
//! per event. A closed stdout (the reader went away) silences the sink
//! instead of failing the run.
//!
//! Lines are written with the JSON-lines modes' one stdout policy
//! ([`super::out`]): while nothing is cancelled a full queue holds the
//! loop back (the reader sets the pace, nothing is dropped); once the run
//! is interrupted, a stdout that stays blocked is abandoned after
//! [`STUCK_GRACE`] and zut still exits 130.

use super::out::LineWriter;
use crate::cancel::CancelToken;
use crate::events::Event;

pub use super::out::STUCK_GRACE;

/// Writes events to stdout.
pub struct JsonOut {
    out: LineWriter,
    failed: bool,
}

impl JsonOut {
    /// A sink whose waits give way to `cancel`.
    pub fn new(cancel: CancelToken) -> JsonOut {
        JsonOut {
            out: LineWriter::new(std::io::stdout(), cancel),
            failed: false,
        }
    }

    /// Waits until every queued line is written (see [`LineWriter::finish`]).
    pub fn finish(&mut self) {
        self.out.finish();
    }
}

impl super::Front for JsonOut {
    fn exit_code(&self) -> i32 {
        if self.failed {
            crate::core::EXIT_FAILURE
        } else {
            crate::core::EXIT_OK
        }
    }

    fn show(&mut self, event: &Event) {
        if matches!(event, Event::Error { .. }) {
            self.failed = true;
        }
        // `submit` asks the interactive editor to queue a prompt; there is
        // no editor here, so the protocol has this mode ignore it.
        if self.out.broken()
            || matches!(
                event,
                Event::ExtSubmit { .. }
                    | Event::ExtSubmitSlash { .. }
                    | Event::Idle
                    | Event::Loaded
                    | Event::Discovered { .. }
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
        self.out.send(line);
    }

    fn finish(&mut self) {
        JsonOut::finish(self);
    }
}
