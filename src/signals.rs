//! The one bridge from Unix signals to zut's threads.
//!
//! A [`SignalBridge`] owns a signal-hook iterator on a small thread and
//! calls its handler with each signal number; while it lives, the signals
//! it names no longer kill the process (every long-running step checks a
//! cancellation token or an input channel instead). Dropping it closes the
//! iterator and joins the thread, so the default actions are back.
//!
//! [`SignalBridge::cancel`] is the common use: SIGINT, SIGTERM and SIGHUP
//! cancel a [`Canceller`], and the mode runs its graceful shutdown.

use crate::cancel::Canceller;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};
use std::thread::JoinHandle;

/// The signals that end a run gracefully.
pub const ENDING: &[i32] = &[SIGINT, SIGTERM, SIGHUP];

/// Signals delivered to a handler on a thread of their own while alive.
pub struct SignalBridge {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl SignalBridge {
    /// Calls `on_signal` with every one of `signals` that arrives, until it
    /// returns false or the bridge is dropped.
    pub fn start(
        signals: &[i32],
        mut on_signal: impl FnMut(i32) -> bool + Send + 'static,
    ) -> std::io::Result<SignalBridge> {
        let mut iter = Signals::new(signals)?;
        let handle = iter.handle();
        let thread = std::thread::Builder::new()
            .name("zut-signals".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                for sig in iter.forever() {
                    log::info!("signal {sig}");
                    if !on_signal(sig) {
                        break;
                    }
                }
            })?;
        Ok(SignalBridge {
            handle,
            thread: Some(thread),
        })
    }

    /// SIGINT, SIGTERM and SIGHUP cancel `canceller`.
    pub fn cancel(canceller: Canceller) -> std::io::Result<SignalBridge> {
        SignalBridge::start(ENDING, move |_| {
            canceller.cancel();
            true
        })
    }
}

impl Drop for SignalBridge {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
