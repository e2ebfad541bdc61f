//! Cancellation that every wait can `select!` on.
//!
//! A [`Canceller`] owns the only sender of a channel that never carries a
//! message; cancelling drops it, which wakes every clone of the
//! [`CancelToken`] receiver at once. The flag lets hot loops check cheaply.

use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The side that cancels. Cloneable; cancelling is idempotent.
#[derive(Clone)]
pub struct Canceller {
    flag: Arc<AtomicBool>,
    tx: Arc<Mutex<Option<Sender<()>>>>,
}

/// The side that waits. Cheap to clone.
#[derive(Clone)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
    rx: Receiver<()>,
}

/// A new linked pair.
pub fn pair() -> (Canceller, CancelToken) {
    let (tx, rx) = crossbeam_channel::bounded(0);
    let flag = Arc::new(AtomicBool::new(false));
    (
        Canceller {
            flag: flag.clone(),
            tx: Arc::new(Mutex::new(Some(tx))),
        },
        CancelToken { flag, rx },
    )
}

impl Canceller {
    /// Wakes every waiter; later calls do nothing.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
    }

    /// Whether [`Canceller::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

impl CancelToken {
    /// A token that is never cancelled.
    pub fn never() -> Self {
        let (c, t) = pair();
        std::mem::forget(c);
        t
    }

    /// Whether cancellation happened.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// A receiver that becomes ready (disconnected) on cancellation; use it
    /// in `select!` as `recv(token.receiver()) -> _ => …`.
    pub fn receiver(&self) -> &Receiver<()> {
        &self.rx
    }

    /// Sleeps for `d` unless cancelled first; returns false if cancelled.
    pub fn sleep(&self, d: std::time::Duration) -> bool {
        crossbeam_channel::select! {
            recv(self.rx) -> _ => false,
            default(d) => !self.is_cancelled(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn cancel_wakes_all_waiters() {
        let (c, t) = pair();
        let t2 = t.clone();
        let h = std::thread::spawn(move || t2.sleep(Duration::from_secs(30)));
        c.cancel();
        assert!(!h.join().unwrap());
        assert!(t.is_cancelled());
        assert!(!t.sleep(Duration::from_secs(30)));
    }

    #[test]
    fn never_token_times_out() {
        assert!(CancelToken::never().sleep(Duration::from_millis(1)));
    }
}
