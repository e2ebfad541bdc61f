//! The lobby: one thread reads the extensions of a load while they start,
//! and gives each its own reader thread once the load is over.
//!
//! Why: starting many extensions at once is bound by CPU (the children's
//! exec and start-up), and a thread costs about 50 µs of it to start and
//! end, as much as the rest of the host's work for an extension. While a
//! load runs no call can reach an extension (its registrations are
//! committed only when the load is over), so its stdout needs nothing but
//! reading: one thread waiting on all of them through one epoll does that
//! with the reader's own framing and posts ([`Waiting::read`]), and the
//! reader threads start after the extensions are ready instead of before.
//!
//! Invariants:
//! - every extension given to a lobby gets its reader thread, exactly once:
//!   at once when anything but whole lines happens (end of file, a read
//!   error, a line over the limit, the child's exit, the connection
//!   closing or its `shutdown` written), and all the others when the
//!   dispatcher releases the lobby ([`Lobby::release`]) or drops it;
//! - the lobby never decides anything: what it reads goes to the
//!   dispatcher's inbox exactly as a reader would post it, and every end
//!   is handled by the reader it hands over to;
//! - it waits without a deadline: a deadline of the handshake is the
//!   dispatcher's, which closes the connection, and that wakes the lobby;
//! - it reads at most one chunk from an extension before it looks at the
//!   next, so one that floods delays the others by a read at most;
//! - where epoll or the lobby's thread is not to be had (systems other
//!   than Linux, a failed set-up), each extension's reader starts at once,
//!   as it would without a lobby.

use super::transport::{ThreadCount, Waiting};
use crate::proc::Wake;
use std::thread::JoinHandle;

/// A load's extensions while they start: read by one thread, then each
/// given its reader.
pub struct Lobby {
    /// Its thread, and the wake that, fired once and for good, makes it
    /// hand every extension to its reader and end. `None`: no thread.
    running: Option<(Wake, JoinHandle<()>)>,
}

impl Lobby {
    /// Starts reading `waiting` on one thread. Fewer than two extensions
    /// gain nothing from it: each then gets its reader at once, as does
    /// every extension when the lobby cannot be set up.
    pub fn open(waiting: Vec<Waiting>, threads: &ThreadCount) -> Lobby {
        if waiting.len() < 2 {
            start_readers(waiting);
            return Lobby::closed();
        }
        room::open(waiting, threads)
    }

    /// No thread: every extension already has its reader.
    fn closed() -> Lobby {
        Lobby { running: None }
    }

    /// The load is over: every extension still here gets its reader now.
    /// Does not wait for that ([`Lobby::finish`] does).
    pub fn release(&self) {
        if let Some((release, _)) = &self.running {
            release.wake();
        }
    }

    /// Whether its thread has ended (every extension has its reader).
    pub fn is_finished(&self) -> bool {
        self.running.as_ref().is_none_or(|(_, t)| t.is_finished())
    }

    /// Releases and waits until every extension has its reader.
    pub fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        if let Some((release, t)) = self.running.take() {
            release.wake();
            if t.join().is_err() {
                log::error!("the extensions' lobby thread panicked");
            }
        }
    }
}

impl Drop for Lobby {
    fn drop(&mut self) {
        self.end();
    }
}

/// Gives each extension its reader thread; one that cannot start has
/// already closed its connection, which the dispatcher reports.
fn start_readers(waiting: impl IntoIterator<Item = Waiting>) {
    for w in waiting {
        if let Err(e) = w.start_reader() {
            log::warn!("cannot start an extension's reader thread: {e}");
        }
    }
}

/// Where there is no epoll: every extension gets its reader at once.
#[cfg(not(target_os = "linux"))]
mod room {
    use super::*;

    pub(super) fn open(waiting: Vec<Waiting>, _threads: &ThreadCount) -> Lobby {
        start_readers(waiting);
        Lobby::closed()
    }
}

/// The lobby's thread and the epoll it waits on.
#[cfg(target_os = "linux")]
mod room {
    use super::*;
    use crate::host::transport::spawn_counted;
    use rustix::event::epoll;
    use std::os::fd::OwnedFd;
    use std::sync::{Arc, Mutex};

    /// The lobby's own wake-up in the epoll data. An extension's
    /// descriptors carry its index shifted left by one, with the low bit
    /// saying which: [`STDOUT`], or one of its [`SIGNAL`]s (exit, close).
    const RELEASE: u64 = u64::MAX;
    const STDOUT: u64 = 0;
    const SIGNAL: u64 = 1;

    /// Sets up the epoll and starts the thread; on any failure every
    /// extension gets its reader at once.
    pub(super) fn open(waiting: Vec<Waiting>, threads: &ThreadCount) -> Lobby {
        let set_up = Wake::new().and_then(|release| {
            let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
            epoll::add(
                &epoll,
                release.fd(),
                epoll::EventData::new_u64(RELEASE),
                epoll::EventFlags::IN,
            )?;
            Ok((release, epoll))
        });
        let (release, epoll) = match set_up {
            Ok(r) => r,
            Err(e) => {
                log::warn!("extensions start without a lobby: {e}");
                start_readers(waiting);
                return Lobby::closed();
            }
        };
        // Taken by the thread when it starts, and back here when it
        // cannot start, so no extension is left without a reader.
        let slot = Arc::new(Mutex::new(Some(waiting)));
        let theirs = slot.clone();
        let started = spawn_counted(threads, "zut-lobby".into(), 64 * 1024, move || {
            let waiting = theirs.lock().unwrap_or_else(|p| p.into_inner()).take();
            let mut room = Room::new(epoll, waiting.unwrap_or_default());
            room.run();
            // Dropping the room, here or unwinding from a panic, gives
            // every extension still in it its reader.
        });
        match started {
            Ok(thread) => Lobby {
                running: Some((release, thread)),
            },
            Err(e) => {
                log::warn!("extensions start without a lobby: {e}");
                let waiting = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
                start_readers(waiting.unwrap_or_default());
                Lobby::closed()
            }
        }
    }

    /// The lobby's thread: the extensions not yet handed over, by index.
    /// Dropping it (when released, or unwinding from a panic) gives each
    /// one left its reader, so none is ever left unread.
    struct Room {
        epoll: OwnedFd,
        waiting: Vec<Option<Waiting>>,
    }

    impl Room {
        /// Registers every extension's descriptors; one that cannot be
        /// watched gets its reader at once.
        fn new(epoll: OwnedFd, waiting: Vec<Waiting>) -> Room {
            let mut room = Room {
                epoll,
                waiting: Vec::with_capacity(waiting.len()),
            };
            for (i, w) in waiting.into_iter().enumerate() {
                let watch = |fd, kind| {
                    let data = epoll::EventData::new_u64((i as u64) << 1 | kind);
                    epoll::add(&room.epoll, fd, data, epoll::EventFlags::IN)
                };
                let watched = watch(w.stdout(), STDOUT)
                    .and_then(|()| w.signals().try_for_each(|fd| watch(fd, SIGNAL)));
                room.waiting.push(Some(w));
                if let Err(e) = watched {
                    log::warn!("an extension starts without the lobby: {e}");
                    room.hand_over(i);
                }
            }
            room
        }

        /// Reads until released, until nobody is left, or until it cannot
        /// wait; dropping the room then gives everyone left a reader.
        fn run(&mut self) {
            let mut events: Vec<epoll::Event> = Vec::with_capacity(64);
            while self.waiting.iter().any(Option::is_some) {
                events.clear();
                if let Err(e) = epoll::wait(
                    &self.epoll,
                    rustix::buffer::spare_capacity(&mut events),
                    None,
                ) {
                    if e == rustix::io::Errno::INTR {
                        continue;
                    }
                    log::warn!("the extensions' lobby stops waiting: {e}");
                    break;
                }
                for ev in &events {
                    let data = ev.data.u64();
                    if data == RELEASE {
                        return;
                    }
                    let i = (data >> 1) as usize;
                    let Some(w) = self.waiting.get_mut(i).and_then(Option::as_mut) else {
                        continue;
                    };
                    // Output is read here; anything else (an exit, a close,
                    // a shutdown, an end met reading) is the reader's.
                    if data & 1 == SIGNAL || !w.read() {
                        self.hand_over(i);
                    }
                }
            }
        }

        /// Gives extension `i` its reader thread now, its descriptors out
        /// of the epoll set first (those never added are simply not found).
        fn hand_over(&mut self, i: usize) {
            let Some(w) = self.waiting[i].take() else {
                return;
            };
            for fd in std::iter::once(w.stdout()).chain(w.signals()) {
                let _ = epoll::delete(&self.epoll, fd);
            }
            start_readers([w]);
        }
    }

    impl Drop for Room {
        fn drop(&mut self) {
            start_readers(std::mem::take(&mut self.waiting).into_iter().flatten());
        }
    }
}

#[cfg(test)]
mod tests {
    //! The lobby against in-memory peers (pipes to threads of this
    //! process), with the inbox and the live-thread count watched
    //! directly: who reads when is exact, nothing sleeps.
    use super::*;
    use crate::host::deadlines::Deadlines;
    use crate::host::transport::{Conn, ExtId, FromExt, Inbound, PeerEnds};
    use crossbeam_channel::Receiver;
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    use zut_ext::wire::ExtFrame;

    struct Setup {
        _dir: tempfile::TempDir,
        conns: Vec<Arc<Conn>>,
        peers: Vec<PeerEnds>,
        inbox: Receiver<Inbound>,
        threads: ThreadCount,
        waiting: Vec<Waiting>,
    }

    /// `n` connections whose stdout waits for a lobby.
    fn setup(n: u64) -> Setup {
        let dir = tempfile::tempdir().expect("temp dir");
        let (tx, inbox) = crossbeam_channel::unbounded();
        let threads: ThreadCount = Arc::new(AtomicUsize::new(0));
        let (mut conns, mut peers, mut waiting) = (Vec::new(), Vec::new(), Vec::new());
        for id in 0..n {
            let (conn, ends) = Conn::start_in_memory(
                ExtId { id, generation: 0 },
                format!("ext{id}"),
                (dir.path().join(format!("ext{id}.log")), None),
                Deadlines::default(),
                tx.clone(),
                threads.clone(),
                &mut waiting,
            )
            .expect("connection");
            conns.push(conn);
            peers.push(ends);
        }
        Setup {
            _dir: dir,
            conns,
            peers,
            inbox,
            threads,
            waiting,
        }
    }

    impl Setup {
        /// Joins every reader (the peers are gone) and checks that no
        /// thread is left.
        fn all_ended(self) {
            for c in &self.conns {
                c.join();
            }
            assert_eq!(self.threads.load(Ordering::SeqCst), 0);
        }
    }

    /// The next inbox message, within a generous deadline.
    fn next(inbox: &Receiver<Inbound>) -> Inbound {
        inbox
            .recv_timeout(Duration::from_secs(10))
            .expect("an inbox message in time")
    }

    fn say(peer: &mut PeerEnds, line: &str) {
        writeln!(peer.stdout, "{line}").expect("peer write");
    }

    #[test]
    fn it_reads_every_extension_then_gives_each_its_reader_when_released() {
        let mut s = setup(3);
        assert_eq!(
            s.threads.load(Ordering::SeqCst),
            0,
            "no reader before the lobby"
        );
        let lobby = Lobby::open(std::mem::take(&mut s.waiting), &s.threads);
        for (i, peer) in s.peers.iter_mut().enumerate() {
            say(peer, r#"{"type":"ready"}"#);
            let m = next(&s.inbox);
            assert_eq!(m.ext.id, i as u64);
            assert!(
                matches!(m.msg, FromExt::Frame(ExtFrame::Ready)),
                "{:?}",
                m.msg
            );
        }
        // Three extensions read, and one thread so far: the lobby's.
        assert_eq!(s.threads.load(Ordering::SeqCst), 1);
        lobby.finish();
        assert_eq!(
            s.threads.load(Ordering::SeqCst),
            3,
            "a reader each, no lobby"
        );
        // A line split across the hand-over arrives whole.
        write!(s.peers[1].stdout, r#"{{"type":"notify","#).expect("write");
        say(&mut s.peers[1], r#""message":"hi"}"#);
        let m = next(&s.inbox);
        assert_eq!(m.ext.id, 1);
        assert!(
            matches!(m.msg, FromExt::Frame(ExtFrame::Notify { .. })),
            "{:?}",
            m.msg
        );
        s.peers.clear();
        s.all_ended();
    }

    #[test]
    fn an_end_in_the_lobby_goes_to_the_reader_at_once_and_the_lobby_ends_with_the_last() {
        let mut s = setup(2);
        let mut lobby = Lobby::open(std::mem::take(&mut s.waiting), &s.threads);
        // Half a line, then the end of the stream: the reader reports the
        // close and the exit without the lobby being released.
        write!(s.peers[0].stdout, r#"{{"type":"no"#).expect("write");
        let first = s.peers.remove(0);
        drop(first);
        let mut seen = Vec::new();
        while !matches!(seen.last(), Some(FromExt::Exited(_))) {
            let m = next(&s.inbox);
            assert_eq!(m.ext.id, 0);
            seen.push(m.msg);
        }
        assert!(
            matches!(&seen[0], FromExt::Disconnected { reason, by_shutdown: false } if reason == "closed its stdout"),
            "{seen:?}"
        );
        assert!(!lobby.is_finished(), "the other extension is still read");
        // The dispatcher closing the other one hands it over too, and the
        // lobby, with nobody left, ends by itself.
        s.conns[1].disconnect("disconnected: no hello within 5000 ms");
        loop {
            if let FromExt::Exited(_) = next(&s.inbox).msg {
                break;
            }
        }
        // Not released: it must end by itself (a bounded wait, so a
        // lobby that waits on fails instead of hanging the test).
        let (_release, thread) = lobby.running.take().expect("a lobby thread");
        let (done_tx, done) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || done_tx.send(thread.join().is_ok()));
        assert_eq!(done.recv_timeout(Duration::from_secs(10)), Ok(true));
        s.all_ended();
    }

    #[test]
    fn one_extension_gets_its_reader_at_once() {
        let mut s = setup(1);
        let lobby = Lobby::open(std::mem::take(&mut s.waiting), &s.threads);
        assert!(lobby.is_finished(), "no lobby thread for one extension");
        assert_eq!(s.threads.load(Ordering::SeqCst), 1);
        s.peers.clear();
        s.all_ended();
    }
}
