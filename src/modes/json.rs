//! `--mode json`: every event as one compact JSON line on stdout, flushed
//! per event. A closed stdout (the reader went away) silences the sink
//! instead of failing the run.
//!
//! Lines are written by a writer thread fed through a bounded queue, so
//! the front end's loop never sits in a `write` it cannot leave: while
//! nothing is cancelled a full queue holds the loop back (the reader sets
//! the pace, nothing is dropped); once the run is interrupted, a stdout
//! that stays blocked is abandoned after [`STUCK_GRACE`] and zut still
//! exits 130. At exit the writer thread may still be inside that `write`;
//! it holds the stdout lock, which the runtime's own exit flush only tries.

use crate::cancel::CancelToken;
use crate::events::Event;
use crossbeam_channel::{Receiver, Sender};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Lines queued ahead of the writer thread.
const QUEUE_LINES: usize = 1024;

/// After an interrupt, how long stdout may make no progress before the
/// remaining lines are dropped.
pub const STUCK_GRACE: Duration = Duration::from_millis(1000);

/// Writes events to stdout.
pub struct JsonOut {
    tx: Option<Sender<Vec<u8>>>,
    /// The writer thread ended (queue closed and drained, or stdout broke).
    finished: Receiver<()>,
    broken: Arc<AtomicBool>,
    /// Output was given up after an interrupt.
    abandoned: bool,
    cancel: CancelToken,
    failed: bool,
}

impl JsonOut {
    /// A sink whose waits give way to `cancel`.
    pub fn new(cancel: CancelToken) -> JsonOut {
        let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(QUEUE_LINES);
        let (done_tx, finished) = crossbeam_channel::bounded::<()>(0);
        let broken = Arc::new(AtomicBool::new(false));
        let flag = broken.clone();
        let spawned = std::thread::Builder::new()
            .name("zut-json-out".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let _done = done_tx;
                for line in rx {
                    let mut out = std::io::stdout().lock();
                    if out.write_all(&line).and_then(|_| out.flush()).is_err() {
                        flag.store(true, Ordering::Relaxed);
                        return;
                    }
                }
            });
        if let Err(e) = spawned {
            log::error!("cannot start the json writer: {e}");
            broken.store(true, Ordering::Relaxed);
        }
        JsonOut {
            tx: Some(tx),
            finished,
            broken,
            abandoned: false,
            cancel,
            failed: false,
        }
    }

    fn queue(&mut self, line: Vec<u8>) {
        let Some(tx) = &self.tx else { return };
        let line = match tx.try_send(line) {
            Ok(()) => return,
            Err(crossbeam_channel::TrySendError::Full(line)) => line,
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => return,
        };
        if !self.cancel.is_cancelled() {
            // The queue is full: wait for the reader, or for an interrupt.
            // (Only this rare path pays for the copy `select!` consumes.)
            crossbeam_channel::select! {
                send(tx, line.clone()) -> _ => return,
                recv(self.cancel.receiver()) -> _ => {}
            }
        }
        if tx.send_timeout(line, STUCK_GRACE).is_err() {
            self.abandon();
        }
    }

    fn abandon(&mut self) {
        log::warn!("stdout is not being read: dropping the remaining json events");
        self.abandoned = true;
        self.tx = None;
    }

    /// Waits until every queued line is written: for as long as it takes
    /// while the run is not interrupted, at most [`STUCK_GRACE`] after.
    pub fn finish(&mut self) {
        let Some(tx) = self.tx.take() else { return };
        drop(tx);
        if !self.cancel.is_cancelled() {
            crossbeam_channel::select! {
                recv(self.finished) -> _ => return,
                recv(self.cancel.receiver()) -> _ => {}
            }
        }
        if self
            .finished
            .recv_timeout(STUCK_GRACE)
            .is_err_and(|e| e.is_timeout())
        {
            log::warn!("stdout is not being read: leaving json events unwritten");
            self.abandoned = true;
        }
    }
}

impl Drop for JsonOut {
    fn drop(&mut self) {
        self.finish();
    }
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
            || self.abandoned
            || matches!(
                event,
                Event::ExtSubmit { .. } | Event::ExtSubmitSlash { .. } | Event::Idle
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
        self.queue(line);
    }

    fn finish(&mut self) {
        JsonOut::finish(self);
    }
}
