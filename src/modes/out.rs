//! The one stdout policy of the JSON-lines modes (`--mode json` and
//! `--mode rpc`): lines go to a writer thread through a queue bounded in
//! lines and in bytes, so a mode's loop never sits in a `write` it cannot
//! leave.
//!
//! Invariants:
//! - the writer flushes per line and stops for good at the first failed
//!   write (the reader went away): [`LineWriter::broken`];
//! - [`LineWriter::send`] waits for room while the run is not interrupted
//!   (the reader sets the pace, nothing is lost); once it is, a stdout that
//!   makes no progress for [`STUCK_GRACE`] is abandoned and nothing more is
//!   written, so a signal ends the process whatever the reader does;
//! - [`LineWriter::offer`] never waits: a line that does not fit is handed
//!   back, for a mode that would rather drop it than stop serving (RPC's
//!   events: its loop must keep reading requests and signals, and memory
//!   must stay bounded when the client stops reading);
//! - at exit the writer thread may still be inside that `write`; it holds
//!   the stdout lock, which the runtime's own exit flush only tries.

use crate::cancel::CancelToken;
use crossbeam_channel::{Receiver, Sender};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Lines queued ahead of the writer thread.
pub const QUEUE_LINES: usize = 1024;

/// Bytes queued ahead of the writer thread (a line longer than this is
/// still accepted when the queue is empty).
pub const QUEUE_BYTES: usize = 16 * 1024 * 1024;

/// After an interrupt, how long stdout may make no progress before the
/// remaining lines are dropped.
pub const STUCK_GRACE: Duration = Duration::from_millis(500);

/// A line writer on its own thread.
pub struct LineWriter {
    tx: Option<Sender<Vec<u8>>>,
    /// The writer thread ended (queue closed and drained, or output broke).
    finished: Receiver<()>,
    broken: Arc<AtomicBool>,
    /// Bytes queued and not yet written.
    queued: Arc<AtomicUsize>,
    /// Output was given up after an interrupt.
    abandoned: bool,
    cancel: CancelToken,
}

impl LineWriter {
    /// A writer of `out` whose waits give way to `cancel`.
    pub fn new(out: impl Write + Send + 'static, cancel: CancelToken) -> LineWriter {
        let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(QUEUE_LINES);
        let (done_tx, finished) = crossbeam_channel::bounded::<()>(0);
        let broken = Arc::new(AtomicBool::new(false));
        let queued = Arc::new(AtomicUsize::new(0));
        let (flag, count) = (broken.clone(), queued.clone());
        let spawned = std::thread::Builder::new()
            .name("zut-stdout".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let _done = done_tx;
                let mut out = out;
                for line in rx {
                    let ok = out.write_all(&line).and_then(|_| out.flush()).is_ok();
                    count.fetch_sub(line.len(), Ordering::Relaxed);
                    if !ok {
                        flag.store(true, Ordering::Relaxed);
                        return;
                    }
                }
            });
        if let Err(e) = spawned {
            log::error!("cannot start the stdout writer: {e}");
            broken.store(true, Ordering::Relaxed);
        }
        LineWriter {
            tx: Some(tx),
            finished,
            broken,
            queued,
            abandoned: false,
            cancel,
        }
    }

    /// Nothing more can be written: the reader went away, or stdout was
    /// abandoned after an interrupt.
    pub fn broken(&self) -> bool {
        self.abandoned || self.broken.load(Ordering::Relaxed)
    }

    /// Queues `line` if it fits now; hands it back if not.
    pub fn offer(&mut self, line: Vec<u8>) -> Result<(), Vec<u8>> {
        let Some(tx) = &self.tx else { return Ok(()) };
        let queued = self.queued.load(Ordering::Relaxed);
        if queued > 0 && queued + line.len() > QUEUE_BYTES {
            return Err(line);
        }
        let len = line.len();
        match tx.try_send(line) {
            Ok(()) => {
                self.queued.fetch_add(len, Ordering::Relaxed);
                Ok(())
            }
            Err(crossbeam_channel::TrySendError::Full(line)) => Err(line),
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => Ok(()),
        }
    }

    /// Queues `line`, waiting for room as the module doc says (bounded by
    /// the line count alone: a response is never dropped for its size).
    pub fn send(&mut self, line: Vec<u8>) {
        let line = match self.offer(line) {
            Ok(()) => return,
            Err(line) => line,
        };
        let Some(tx) = self.tx.clone() else { return };
        let len = line.len();
        // Counted before it is in the queue: the writer may take it at once.
        self.queued.fetch_add(len, Ordering::Relaxed);
        if !self.cancel.is_cancelled() {
            // Full: wait for the reader, or for an interrupt. (Only this
            // rare path pays for the copy `select!` consumes.)
            crossbeam_channel::select! {
                send(tx, line.clone()) -> r => {
                    if r.is_err() {
                        self.queued.fetch_sub(len, Ordering::Relaxed);
                    }
                    return;
                }
                recv(self.cancel.receiver()) -> _ => {}
            }
        }
        if tx.send_timeout(line, STUCK_GRACE).is_err() {
            self.queued.fetch_sub(len, Ordering::Relaxed);
            self.abandon();
        }
    }

    fn abandon(&mut self) {
        log::warn!("stdout is not being read: dropping the remaining lines");
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
            log::warn!("stdout is not being read: leaving lines unwritten");
            self.abandoned = true;
        }
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A writer that blocks until told to go on, then keeps what it got.
    #[derive(Clone)]
    struct Gate {
        open: Receiver<()>,
        got: Arc<Mutex<Vec<u8>>>,
        /// Told each time a write starts.
        entered: Sender<()>,
    }

    impl Write for Gate {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let _ = self.entered.try_send(());
            let _ = self.open.recv();
            self.got.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn offers_stop_at_the_byte_budget_and_sends_give_up_after_an_interrupt() {
        let (go, open) = crossbeam_channel::unbounded();
        let got = Arc::new(Mutex::new(Vec::new()));
        let (canceller, token) = crate::cancel::pair();
        let (entered, writing) = crossbeam_channel::unbounded();
        let mut w = LineWriter::new(
            Gate {
                open,
                got: got.clone(),
                entered: entered.clone(),
            },
            token.clone(),
        );
        let big = vec![b'x'; QUEUE_BYTES / 4];
        w.offer(big.clone()).unwrap();
        writing.recv_timeout(Duration::from_secs(10)).unwrap();
        let mut taken = 1;
        while w.offer(big.clone()).is_ok() {
            taken += 1;
            assert!(taken < 16, "the budget never ran out");
        }
        // The writer holds one line; with it the budget's worth is queued.
        assert_eq!(taken, 4);
        drop(entered);
        // Small lines still fit the byte budget until the line cap.
        let (entered, writing) = crossbeam_channel::unbounded();
        let mut w = LineWriter::new(
            Gate {
                open: crossbeam_channel::never(),
                got,
                entered,
            },
            token,
        );
        // The writer holds the first line, inside its write, for good.
        w.offer(b"x\n".to_vec()).unwrap();
        writing.recv_timeout(Duration::from_secs(10)).unwrap();
        let mut small = 0;
        while w.offer(b"x\n".to_vec()).is_ok() {
            small += 1;
            assert!(small <= QUEUE_LINES, "the line cap never came");
        }
        assert_eq!(small, QUEUE_LINES);
        // A response waits while nothing is cancelled; after an interrupt
        // it gives up within the grace and nothing more is written.
        canceller.cancel();
        let t = std::time::Instant::now();
        w.send(b"last\n".to_vec());
        assert!(w.broken());
        assert!(t.elapsed() < STUCK_GRACE * 3, "{:?}", t.elapsed());
        drop(go);
    }

    #[test]
    fn everything_sent_is_written_in_order() {
        let (go, open) = crossbeam_channel::unbounded();
        for _ in 0..10_000 {
            go.send(()).unwrap();
        }
        let got = Arc::new(Mutex::new(Vec::new()));
        let (entered, _writing) = crossbeam_channel::unbounded();
        let mut w = LineWriter::new(
            Gate {
                open,
                got: got.clone(),
                entered,
            },
            CancelToken::never(),
        );
        for i in 0..3000 {
            w.send(format!("{i}\n").into_bytes());
        }
        w.finish();
        let text = String::from_utf8(got.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3000);
        assert_eq!(lines[2999], "2999");
    }
}
