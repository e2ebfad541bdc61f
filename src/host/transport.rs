//! The transport of one extension: its process, its two threads, its
//! request table. No host state lives here.
//!
//! - The **writer** thread owns the child's stdin and drains a bounded queue
//!   of pre-encoded frames (256 frames / 16 MiB); each write is bounded by
//!   the write deadline. Producers that find the queue full wait for room
//!   (backpressure) up to the write deadline: a healthy extension that reads
//!   slower than a burst arrives is never disconnected for it.
//! - The **reader** thread owns stdout, splits lines (at most
//!   [`MAX_FRAME_BYTES`]) and decodes frames. A reply completes its waiting
//!   call directly through the request table (the fast path: one channel
//!   hop each way); every other frame, every stray line, EOF and the exit
//!   go to the dispatcher's **inbox** as one [`Inbound`] message tagged with
//!   the instance's [`ExtId`]. When the dispatcher has not yet caught up
//!   with this extension's earlier messages, a reply takes the inbox too,
//!   so it can never overtake a frame the extension sent before it.
//! - The reader also owns the end of the child's life: it observes the exit
//!   through the child guard's pidfd ([`crate::proc::ExitWatch`]), escalates
//!   SIGTERM → SIGKILL to the group when a deadline passes, reaps the child
//!   through its guard and kills whatever is left of its process group.
//! - The peer is usually a process ([`Peer::Process`]). Unit tests run the
//!   dispatcher against peers on threads of this process talking over OS
//!   pipes ([`Peer::InMemory`]): the same two threads and the same framing,
//!   with nothing to signal or reap (their end is EOF).
//!
//! Locks, each a leaf (never held across another lock, a channel send or
//! I/O): `pending` (the request table), `gone` (the disconnect reason),
//! `closing` (the shutdown deadline), `child`, `threads`.

use super::deadlines::{Deadlines, MAX_FRAME_BYTES, QUEUE_BYTES, QUEUE_FRAMES};
use super::process::{self, Wake};
use crate::proc::{ChildGuard, ExitWatch};
use crossbeam_channel::{Receiver, Sender};
use rustix::event::PollFlags;
use rustix::process::Signal;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use zut_ext::lines::{LineBuffer, Piece};
use zut_ext::wire::{DecodeError, ExtFrame, HostFrame};

/// One extension instance: unique for the life of the host process. The
/// generation says which load (startup is 0, each `/reload-ext` adds one);
/// the dispatcher drops messages of instances it no longer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExtId {
    pub id: u64,
    pub generation: u64,
}

/// What a pending call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Tool,
    Command,
    Intercept,
}

/// The reply to one pending call: the frame, or why none will come.
pub type Reply = Result<ExtFrame, String>;

/// One message for the dispatcher's inbox.
#[derive(Debug)]
pub struct Inbound {
    pub ext: ExtId,
    pub msg: FromExt,
}

/// What an extension's threads report.
#[derive(Debug)]
pub enum FromExt {
    /// A decoded frame that is not a reply.
    Frame(ExtFrame),
    /// A reply that must not overtake earlier frames (slow path).
    Reply(CallKind, u64, ExtFrame),
    /// A reply nobody waits for (late, cancelled, unknown id).
    StrayReply {
        frame_type: &'static str,
        id: String,
    },
    /// A frame of a type this host does not know.
    UnknownType(String),
    /// A stdout line that is not a frame.
    Malformed { error: DecodeError, preview: String },
    /// Disconnected (once), with the reason; pending calls already failed.
    Disconnected(String),
    /// The process is gone and reaped (its status when known). Last message.
    Exited(Option<ExitStatus>),
}

const QUEUED: u8 = 0;
const WRITING: u8 = 1;
const WRITTEN: u8 = 2;
const WITHDRAWN: u8 = 3;

/// Delivery state of one queued frame.
pub struct Ticket {
    state: AtomicU8,
    done_tx: Sender<()>,
    done_rx: Receiver<()>,
}

/// What became of a frame whose caller gave up on it.
#[derive(Debug, PartialEq, Eq)]
pub enum Withdrawal {
    /// Still queued: removed, never written.
    Withdrawn,
    /// Fully written: the extension has it.
    Delivered,
    /// Its write began and did not finish in time: the stream is torn.
    Torn,
}

impl Ticket {
    fn new() -> Arc<Ticket> {
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        Arc::new(Ticket {
            state: AtomicU8::new(QUEUED),
            done_tx,
            done_rx,
        })
    }

    /// Withdraws the frame or waits up to `grace` for a begun write.
    pub fn withdraw(&self, grace: std::time::Duration) -> Withdrawal {
        match self
            .state
            .compare_exchange(QUEUED, WITHDRAWN, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => Withdrawal::Withdrawn,
            Err(WRITTEN) => Withdrawal::Delivered,
            Err(WITHDRAWN) => Withdrawal::Withdrawn,
            Err(_) => crossbeam_channel::select! {
                recv(self.done_rx) -> _ => if self.state.load(Ordering::SeqCst) == WRITTEN { Withdrawal::Delivered } else { Withdrawal::Torn },
                default(grace) => if self.state.load(Ordering::SeqCst) == WRITTEN { Withdrawal::Delivered } else { Withdrawal::Torn },
            },
        }
    }
}

/// What the writer thread receives.
enum ToWriter {
    Frame(Outgoing),
    Stop,
}

/// One encoded frame on its way to the writer.
struct Outgoing {
    bytes: Vec<u8>,
    ticket: Option<Arc<Ticket>>,
    /// Close stdin once this frame is written (`shutdown`).
    close_after: bool,
}

/// Why a frame could not be queued.
#[derive(Debug, PartialEq, Eq)]
pub enum SendError {
    /// The extension is gone (the reason).
    Disconnected(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Disconnected(r) => f.write_str(r),
        }
    }
}

/// Counts live host threads; tests assert it drops to zero.
pub type ThreadCount = Arc<AtomicUsize>;

struct ThreadGuard(ThreadCount);

impl Drop for ThreadGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The other end of a connection.
enum Peer {
    /// An extension process: its exit is watched, it is signalled past
    /// its deadlines, reaped, and its process group killed.
    Process(ChildGuard),
    /// A peer on a thread of this process (tests): it ends by closing its
    /// stdout; nothing to signal or reap.
    #[cfg_attr(not(test), allow(dead_code))]
    InMemory,
}

/// The peer's ends of an in-memory connection (blocking).
#[cfg(test)]
pub(crate) struct PeerEnds {
    /// What the host writes: the peer reads its frames here.
    pub stdin: File,
    /// What the host reads: the peer writes its frames here.
    pub stdout: File,
}

const READER_STACK: usize = 256 * 1024;
const WRITER_STACK: usize = 64 * 1024;

/// The live connection to one extension process, shared by its two
/// threads, the dispatcher and every caller holding the host handle.
pub struct Conn {
    pub ext: ExtId,
    pub name: String,
    pub log: PathBuf,
    /// The process id (`0` for an in-memory peer).
    pub pid: u32,
    deadlines: Deadlines,
    /// Unbounded channel; the spec's bounds are kept by the two counters,
    /// which lets the writer wait on this channel alone (the cheapest
    /// wake-up) and lets `Stop` always get through.
    queue: Sender<ToWriter>,
    queued_frames: AtomicUsize,
    queued_bytes: AtomicUsize,
    /// The writer signals here after each frame: producers waiting for
    /// room wake on it.
    room_tx: Sender<()>,
    room_rx: Receiver<()>,
    /// Closed (dropped) on disconnect: wakes producers waiting for room.
    gone_tx: Mutex<Option<Sender<()>>>,
    gone_rx: Receiver<()>,
    wake: Wake,
    /// `Some(reason)` once disconnected.
    gone: Mutex<Option<String>>,
    /// Set at shutdown: the shared deadline for this process to exit.
    closing: Mutex<Option<Instant>>,
    /// Its stdout ended before any shutdown began: whatever happens while
    /// its exit is awaited, the end is its own fault, not the shutdown's.
    ended_open: AtomicBool,
    /// The request table: call id → who waits for the reply.
    pending: Mutex<HashMap<u64, (CallKind, Sender<Reply>)>>,
    /// `None` for an in-memory peer: no process to signal or reap.
    /// Reaped only by the reader (or [`Conn::kill_now`] when the threads
    /// cannot start); its drop is then a no-op but for stray group members.
    child: Mutex<Option<ChildGuard>>,
    /// The guard's exit observer and group signaller, used without the
    /// lock; `None` for an in-memory peer.
    watch: Option<ExitWatch>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    inbox: Sender<Inbound>,
    /// Messages this connection put in the inbox, and how many the
    /// dispatcher has handled: equal means a reply may take the fast path.
    posted: AtomicU64,
    handled: AtomicU64,
    /// The extension advertised `tool_cancel` (set by the dispatcher).
    pub tool_cancel: AtomicBool,
    /// The dispatcher has handled this instance's last message (`Exited`).
    exited_seen: AtomicBool,
}

impl Conn {
    /// Wraps an already spawned process and starts its reader and writer.
    pub fn start(
        ext: ExtId,
        name: String,
        log: PathBuf,
        spawned: process::Spawned,
        deadlines: Deadlines,
        inbox: Sender<Inbound>,
        threads: ThreadCount,
    ) -> io::Result<Arc<Conn>> {
        let process::Spawned {
            guard,
            stdin,
            stdout,
        } = spawned;
        let to_peer = File::from(OwnedFd::from(stdin));
        let from_peer = File::from(OwnedFd::from(stdout));
        let peer = Peer::Process(guard);
        Conn::start_with(
            ext, name, log, peer, to_peer, from_peer, deadlines, inbox, threads,
        )
    }

    /// Starts a connection to a peer in this process: two pipes, the
    /// host's ends non-blocking as for a child. Returns the peer's ends
    /// (blocking) for the thread that plays the extension.
    #[cfg(test)]
    pub(crate) fn start_in_memory(
        ext: ExtId,
        name: String,
        log: PathBuf,
        deadlines: Deadlines,
        inbox: Sender<Inbound>,
        threads: ThreadCount,
    ) -> io::Result<(Arc<Conn>, PeerEnds)> {
        let (peer_stdin, to_peer) = process::pipe()?;
        let (from_peer, peer_stdout) = process::pipe()?;
        crate::proc::set_nonblocking(&to_peer)?;
        crate::proc::set_nonblocking(&from_peer)?;
        let conn = Conn::start_with(
            ext,
            name,
            log,
            Peer::InMemory,
            to_peer,
            from_peer,
            deadlines,
            inbox,
            threads,
        )?;
        Ok((
            conn,
            PeerEnds {
                stdin: peer_stdin,
                stdout: peer_stdout,
            },
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn start_with(
        ext: ExtId,
        name: String,
        log: PathBuf,
        peer: Peer,
        stdin: File,
        stdout: File,
        deadlines: Deadlines,
        inbox: Sender<Inbound>,
        threads: ThreadCount,
    ) -> io::Result<Arc<Conn>> {
        let (queue, queue_rx) = crossbeam_channel::unbounded();
        let (room_tx, room_rx) = crossbeam_channel::bounded(1);
        let (gone_tx, gone_rx) = crossbeam_channel::bounded(0);
        let child = match peer {
            Peer::Process(guard) => Some(guard),
            Peer::InMemory => None,
        };
        let conn = Arc::new(Conn {
            ext,
            pid: child.as_ref().map_or(0, ChildGuard::pid),
            watch: child.as_ref().map(ChildGuard::watch),
            name,
            log,
            deadlines,
            queue,
            queued_frames: AtomicUsize::new(0),
            queued_bytes: AtomicUsize::new(0),
            room_tx,
            room_rx,
            gone_tx: Mutex::new(Some(gone_tx)),
            gone_rx,
            wake: Wake::new()?,
            gone: Mutex::new(None),
            closing: Mutex::new(None),
            ended_open: AtomicBool::new(false),
            pending: Mutex::new(HashMap::new()),
            child: Mutex::new(child),
            threads: Mutex::new(Vec::new()),
            inbox,
            posted: AtomicU64::new(0),
            handled: AtomicU64::new(0),
            tool_cancel: AtomicBool::new(false),
            exited_seen: AtomicBool::new(false),
        });
        let name = &conn.name;
        let w = {
            let (conn, threads) = (conn.clone(), threads.clone());
            threads.fetch_add(1, Ordering::SeqCst);
            std::thread::Builder::new()
                .name(format!("zut-w-{name}"))
                .stack_size(WRITER_STACK)
                .spawn(move || {
                    let _g = ThreadGuard(threads);
                    conn.write_loop(stdin, queue_rx);
                })
        };
        let w = match w {
            Ok(h) => h,
            Err(e) => {
                threads.fetch_sub(1, Ordering::SeqCst);
                conn.kill_now();
                return Err(e);
            }
        };
        let r = {
            let (conn, threads) = (conn.clone(), threads.clone());
            threads.fetch_add(1, Ordering::SeqCst);
            std::thread::Builder::new()
                .name(format!("zut-r-{name}"))
                .stack_size(READER_STACK)
                .spawn(move || {
                    let _g = ThreadGuard(threads);
                    conn.read_loop(stdout);
                })
        };
        match r {
            Ok(r) => lock(&conn.threads).extend([w, r]),
            Err(e) => {
                threads.fetch_sub(1, Ordering::SeqCst);
                conn.mark_gone("cannot start its reader thread");
                conn.kill_now();
                let _ = w.join();
                return Err(e);
            }
        }
        Ok(conn)
    }

    /// Why it is disconnected, if it is.
    pub fn gone(&self) -> Option<String> {
        lock(&self.gone).clone()
    }

    /// Whether the extension can still be talked to.
    pub fn connected(&self) -> bool {
        lock(&self.gone).is_none()
    }

    /// Queues a frame, waiting for room while the extension makes progress.
    pub fn send(&self, frame: &HostFrame) -> Result<(), SendError> {
        self.send_bytes(frame, None, false)
    }

    /// Queues a frame only if there is room now (the dispatcher never waits
    /// on an extension); a full queue disconnects it.
    pub fn try_send(&self, frame: &HostFrame) -> Result<(), SendError> {
        self.send_bytes(frame, None, true)
    }

    /// Queues `shutdown` without waiting; stdin is closed once it is written.
    pub fn send_shutdown(&self) {
        if !self.connected() {
            return;
        }
        log::debug!("{} <- shutdown", self.name);
        let out = Outgoing {
            bytes: zut_ext::wire::encode_line(&HostFrame::Shutdown),
            ticket: None,
            close_after: true,
        };
        // Past the bounds on purpose: shutdown must always get through.
        self.queued_frames.fetch_add(1, Ordering::SeqCst);
        self.queued_bytes
            .fetch_add(out.bytes.len(), Ordering::SeqCst);
        let _ = self.queue.send(ToWriter::Frame(out));
    }

    /// Queues a frame with a ticket for later withdrawal.
    pub fn send_tracked(&self, frame: &HostFrame) -> Result<Arc<Ticket>, SendError> {
        let ticket = Ticket::new();
        self.send_bytes(frame, Some(ticket.clone()), false)?;
        Ok(ticket)
    }

    fn send_bytes(
        &self,
        frame: &HostFrame,
        ticket: Option<Arc<Ticket>>,
        no_wait: bool,
    ) -> Result<(), SendError> {
        if let Some(r) = self.gone() {
            return Err(SendError::Disconnected(r));
        }
        log::debug!("{} <- {}", self.name, host_frame_type(frame));
        let out = Outgoing {
            bytes: zut_ext::wire::encode_line(frame),
            ticket,
            close_after: false,
        };
        let len = out.bytes.len();
        let mut deadline = Instant::now() + self.deadlines.write;
        loop {
            let frames = self.queued_frames.load(Ordering::SeqCst);
            let bytes = self.queued_bytes.load(Ordering::SeqCst);
            // A single frame larger than the byte bound is allowed on an
            // empty queue, or it could never be sent at all.
            if frames < QUEUE_FRAMES && (bytes == 0 || bytes + len <= QUEUE_BYTES) {
                self.queued_frames.fetch_add(1, Ordering::SeqCst);
                self.queued_bytes.fetch_add(len, Ordering::SeqCst);
                if self.queue.send(ToWriter::Frame(out)).is_ok() {
                    return Ok(());
                }
                let r = self
                    .gone()
                    .unwrap_or_else(|| "disconnected: its stdin writer has stopped".into());
                return Err(SendError::Disconnected(r));
            }
            if let Some(r) = self.gone() {
                return Err(SendError::Disconnected(r));
            }
            let now = Instant::now();
            if no_wait || now >= deadline {
                let reason = format!(
                    "disconnected: the host->extension queue stayed full ({QUEUE_FRAMES} frames / {} MiB) for {} ms; the extension is not reading its stdin",
                    QUEUE_BYTES >> 20,
                    self.deadlines.write.as_millis()
                );
                self.disconnect(&reason);
                return Err(SendError::Disconnected(reason));
            }
            crossbeam_channel::select! {
                // The writer made progress: the extension is reading.
                recv(self.room_rx) -> _ => deadline = Instant::now() + self.deadlines.write,
                recv(self.gone_rx) -> _ => {}
                default(deadline - now) => {}
            }
        }
    }

    /// Tells the writer to stop after the frame it is writing, if any.
    fn stop_writer(&self) {
        let _ = self.queue.send(ToWriter::Stop);
        self.wake.wake();
    }

    /// Registers a pending call and returns its reply receiver.
    pub fn expect(&self, id: u64, kind: CallKind) -> Receiver<Reply> {
        // A tool call may hear any number of `tool_progress` frames before
        // its reply, and the reader must never block on a slow caller; the
        // caller drains them as they come and forgets the id when done.
        let (tx, rx) = match kind {
            CallKind::Tool => crossbeam_channel::unbounded(),
            _ => crossbeam_channel::bounded(1),
        };
        let gone = lock(&self.gone).clone();
        match gone {
            Some(r) => {
                let _ = tx.send(Err(format!("extension {} {r}", self.name)));
            }
            None => {
                lock(&self.pending).insert(id, (kind, tx));
                // A disconnect may have drained the table just before the
                // insert: fail the call now rather than let it wait.
                if let Some(r) = self.gone() {
                    if let Some((_, tx)) = lock(&self.pending).remove(&id) {
                        let _ = tx.send(Err(format!("extension {} {r}", self.name)));
                    }
                }
            }
        }
        rx
    }

    /// Forgets a pending call (timed out, cancelled).
    pub fn forget(&self, id: u64) {
        lock(&self.pending).remove(&id);
    }

    /// Delivers a reply frame to its pending call; false if nobody waits.
    pub fn resolve(&self, id: u64, kind: CallKind, frame: ExtFrame) -> bool {
        let waiter = {
            let mut pending = lock(&self.pending);
            match pending.get(&id) {
                // Progress keeps the call waiting: it is passed on, and the
                // entry stays for the reply.
                Some((k, tx)) if *k == kind && matches!(frame, ExtFrame::ToolProgress { .. }) => {
                    return tx.send(Ok(frame)).is_ok();
                }
                Some((k, _)) if *k == kind => pending.remove(&id),
                _ => None,
            }
        };
        // Sent after the lock is released: the woken caller takes it next.
        waiter.is_some_and(|(_, tx)| tx.send(Ok(frame)).is_ok())
    }

    /// The dispatcher saw the `Exited` message: nothing more will come.
    pub fn mark_exited_seen(&self) {
        self.exited_seen.store(true, Ordering::SeqCst);
    }

    /// Whether [`Conn::mark_exited_seen`] was called.
    pub fn exited_seen(&self) -> bool {
        self.exited_seen.load(Ordering::SeqCst)
    }

    /// The dispatcher handled one of this connection's inbox messages.
    pub fn handled_one(&self) {
        self.handled.fetch_add(1, Ordering::SeqCst);
    }

    /// Posts to the dispatcher's inbox; false when the dispatcher is gone.
    fn post(&self, msg: FromExt) -> bool {
        self.posted.fetch_add(1, Ordering::SeqCst);
        if self.inbox.send(Inbound { ext: self.ext, msg }).is_err() {
            // The dispatcher is gone (host dropped): nothing to tell.
            self.handled.fetch_add(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    fn mark_gone(&self, reason: &str) -> bool {
        let mut g = lock(&self.gone);
        if g.is_some() {
            return false;
        }
        *g = Some(reason.to_string());
        true
    }

    /// Disconnects once: fails every pending call at once, stops both
    /// threads, lets the reader end the process, and tells the dispatcher.
    /// Later calls do nothing. Callable from any thread.
    pub fn disconnect(&self, reason: &str) {
        if !self.mark_gone(reason) {
            return;
        }
        process::log_line(&self.log, reason);
        log::info!("extension {} {reason}", self.name);
        lock(&self.gone_tx).take();
        self.stop_writer();
        if !self.post(FromExt::Disconnected(reason.to_string())) {
            self.fail_pending();
        }
    }

    /// Fails every pending call with the disconnect reason. The dispatcher
    /// calls it once it has reported the disconnect, so a woken caller
    /// already sees the extension gone.
    pub fn fail_pending(&self) {
        let reason = self.gone().unwrap_or_else(|| "disconnected".into());
        let drained: Vec<_> = lock(&self.pending).drain().collect();
        for (_, (_, tx)) in drained {
            let _ = tx.send(Err(format!("extension {} {reason}", self.name)));
        }
    }

    /// Starts a graceful stop: the process must exit by `deadline`, after
    /// which the reader escalates to SIGTERM and SIGKILL.
    pub fn begin_close(&self, deadline: Instant) {
        *lock(&self.closing) = Some(deadline);
        self.wake.wake();
    }

    /// Whether a graceful stop has begun.
    pub fn closing(&self) -> bool {
        lock(&self.closing).is_some()
    }

    /// Whether its end is part of a shutdown: a stream that ended before
    /// the shutdown began is reported even when the exit it waited for
    /// came after.
    pub fn ended_by_shutdown(&self) -> bool {
        self.closing() && !self.ended_open.load(Ordering::SeqCst)
    }

    /// Joins both threads; call after [`Conn::begin_close`] or a disconnect.
    pub fn join(&self) {
        let handles: Vec<_> = lock(&self.threads).drain(..).collect();
        for h in handles {
            if let Err(panic) = h.join() {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                log::error!("a thread of extension {} panicked: {what}", self.name);
                process::log_line(&self.log, &format!("zut: a host thread panicked: {what}"));
            }
        }
    }

    /// Sends SIGKILL to the whole group right away (spawn failures).
    fn kill_now(&self) {
        if let Some(child) = lock(&self.child).as_mut() {
            child.kill_now();
        }
    }

    // ----- writer -----

    fn write_loop(&self, mut stdin: File, queue: Receiver<ToWriter>) {
        // A plain `recv` (not a `select!`) spins briefly before parking,
        // which saves a thread wake-up per frame under load. Stopping is a
        // message on the same channel; frames queued before a disconnect
        // are dropped by the `connected` check.
        while let Ok(ToWriter::Frame(out)) = queue.recv() {
            self.queued_frames.fetch_sub(1, Ordering::SeqCst);
            self.queued_bytes
                .fetch_sub(out.bytes.len(), Ordering::SeqCst);
            let _ = self.room_tx.try_send(());
            if !self.connected() {
                return;
            }
            if let Some(t) = &out.ticket {
                if t.state
                    .compare_exchange(QUEUED, WRITING, Ordering::SeqCst, Ordering::SeqCst)
                    .is_err()
                {
                    continue; // withdrawn while queued
                }
            }
            let result = self.write_frame(&mut stdin, &out.bytes);
            if let Some(t) = &out.ticket {
                if result.is_ok() {
                    t.state.store(WRITTEN, Ordering::SeqCst);
                }
                let _ = t.done_tx.try_send(());
            }
            match result {
                Ok(()) if out.close_after => return, // dropping stdin sends EOF
                Ok(()) => {}
                Err(Some(reason)) => return self.disconnect(&reason),
                Err(None) => return,
            }
        }
    }

    /// Writes one whole frame; `Err(None)` when told to stop, `Err(Some)`
    /// with the disconnect reason on failure or timeout.
    fn write_frame(&self, stdin: &mut File, mut buf: &[u8]) -> Result<(), Option<String>> {
        let deadline = Instant::now() + self.deadlines.write;
        while !buf.is_empty() {
            match stdin.write(buf) {
                Ok(0) => return Err(self.stdin_closed()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !self.connected() {
                        return Err(None);
                    }
                    // While closing, the wake pipe stays readable: stop
                    // watching it and honour the closing deadline instead.
                    let closing = *lock(&self.closing);
                    let until = closing.map_or(deadline, |c| c.min(deadline));
                    let wake = if closing.is_some() {
                        None
                    } else {
                        Some(&self.wake)
                    };
                    match process::wait_ready(stdin.as_fd(), PollFlags::OUT, wake, None, Some(until)) {
                        Ok(r) if r.io || r.woken => {}
                        Ok(_) if Instant::now() < until => {}
                        Ok(_) if closing.is_some() => return Err(None),
                        Ok(_) => {
                            return Err(Some(format!(
                                "disconnected: a frame write blocked for {} ms; the extension is not reading its stdin",
                                self.deadlines.write.as_millis()
                            )))
                        }
                        Err(e) => return Err(Some(format!("disconnected: write failed: {e}"))),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Err(self.stdin_closed()),
                Err(e) => return Err(Some(format!("disconnected: write failed: {e}"))),
            }
        }
        Ok(())
    }

    /// Its stdin is closed. Usually because it crashed: then the reader,
    /// which sees the exit, reports it with the exit status (`None` here
    /// stops the writer quietly). Only a process still running after the
    /// exit drain closed its stdin on purpose and is disconnected here.
    fn stdin_closed(&self) -> Option<String> {
        if lock(&self.child).is_none() {
            // In-memory: the reader reports the peer's end (EOF).
            return None;
        }
        let deadline = Instant::now() + self.deadlines.exit_drain;
        match self.watch.as_ref().and_then(|w| w.exited_by(deadline)) {
            Some(true) => None,
            _ => Some("disconnected: its stdin is closed".into()),
        }
    }

    // ----- reader -----

    fn read_loop(&self, mut stdout: File) {
        let watch = self.watch.clone();
        let pidfd = watch.as_ref().and_then(ExitWatch::fd);
        let mut lines = LineBuffer::with_limit(MAX_FRAME_BYTES);
        let mut exited_at: Option<Instant> = None;
        loop {
            if !self.connected() {
                break;
            }
            let closing = *lock(&self.closing);
            let drain = exited_at.map(|t| {
                t + self
                    .deadlines
                    .exit_drain
                    .min(std::time::Duration::from_millis(200))
            });
            let deadline = [closing, drain].into_iter().flatten().min();
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            let wake = if closing.is_some() {
                None
            } else {
                Some(&self.wake)
            };
            let watch_exit = if exited_at.is_some() { None } else { pidfd };
            let ready = match process::wait_ready(
                stdout.as_fd(),
                PollFlags::IN,
                wake,
                watch_exit,
                deadline,
            ) {
                Ok(r) => r,
                Err(e) => {
                    self.disconnect(&format!("disconnected: polling its stdout failed: {e}"));
                    break;
                }
            };
            if ready.exited {
                exited_at = Some(Instant::now());
            }
            if ready.io {
                match lines.fill(&mut stdout) {
                    Ok(true) => {}
                    Ok(false) => break, // EOF
                    Err(e) => {
                        self.disconnect(&format!("disconnected: reading its stdout failed: {e}"));
                        break;
                    }
                }
                // Lines after an over-long one are not read: the
                // extension is disconnected for it.
                let mut over = false;
                lines.for_each(|piece| match piece {
                    Piece::Line(line) if !over => self.on_line(line),
                    _ => over = true,
                });
                if over || lines.over_limit() {
                    let msg = format!(
                        "disconnected: it wrote a stdout line longer than the {} MiB frame limit",
                        MAX_FRAME_BYTES >> 20
                    );
                    self.disconnect(&msg);
                    break;
                }
            }
        }
        self.finish();
    }

    fn on_line(&self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match zut_ext::wire::decode_ext_frame(line) {
            Ok(ExtFrame::Unknown) => {
                let name = serde_json::from_slice::<serde_json::Value>(line)
                    .ok()
                    .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
                    .unwrap_or_default();
                log::debug!("{} -> {name} (unknown)", self.name);
                let _ = self.post(FromExt::UnknownType(name));
            }
            Ok(frame) => {
                log::debug!("{} -> {}", self.name, frame.type_name());
                self.on_frame(frame)
            }
            Err(error) => {
                let mut preview =
                    String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
                preview.retain(|c| !c.is_control());
                let _ = self.post(FromExt::Malformed { error, preview });
            }
        }
    }

    /// Replies complete their call here unless earlier messages of this
    /// extension still wait in the inbox; everything else is posted.
    fn on_frame(&self, frame: ExtFrame) {
        let (kind, id) = match &frame {
            ExtFrame::ToolResult { id, .. } => (CallKind::Tool, id),
            ExtFrame::CommandResponse { id, .. } => (CallKind::Command, id),
            ExtFrame::EventInterceptResponse { id, .. } => (CallKind::Intercept, id),
            ExtFrame::ToolProgress { id, .. } => (CallKind::Tool, id),
            _ => {
                let _ = self.post(FromExt::Frame(frame));
                return;
            }
        };
        let Ok(waiting) = id.parse::<u64>() else {
            let id = id.clone();
            let _ = self.post(FromExt::StrayReply {
                frame_type: frame.type_name(),
                id,
            });
            return;
        };
        let caught_up = self.posted.load(Ordering::SeqCst) == self.handled.load(Ordering::SeqCst);
        if !caught_up {
            let _ = self.post(FromExt::Reply(kind, waiting, frame));
            return;
        }
        let frame_type = frame.type_name();
        if !self.resolve(waiting, kind, frame) {
            let _ = self.post(FromExt::StrayReply {
                frame_type,
                id: waiting.to_string(),
            });
        }
    }

    /// Ends the process's life: waits for it to exit (until the closing
    /// deadline, or briefly after an EOF), escalates SIGTERM then SIGKILL,
    /// reaps it, and kills what is left of its process group.
    fn finish(&self) {
        let closing = *lock(&self.closing);
        if lock(&self.child).is_none() {
            // In-memory: the peer's end is its stdout closing; there is
            // no exit status, process or group.
            if closing.is_some() {
                self.disconnect("stopped at shutdown");
            } else {
                self.disconnect("closed its stdout");
            }
            self.stop_writer();
            let _ = self.post(FromExt::Exited(None));
            return;
        }
        if closing.is_none() && self.connected() {
            self.ended_open.store(true, Ordering::SeqCst);
        }
        let first_wait = match (closing, self.connected()) {
            (Some(d), _) => d,
            (None, true) => Instant::now() + self.deadlines.exit_drain,
            (None, false) => Instant::now(),
        };
        let mut status = self.wait_exit(first_wait);
        if self.connected() && closing.is_some() {
            let how = status.map_or_else(|| "still running".to_string(), process::describe_exit);
            self.disconnect(&format!("stopped at shutdown ({how})"));
        } else if self.connected() {
            let reason = match &status {
                Some(s) => format!("exited: {}", process::describe_exit(*s)),
                None => "closed its stdout".to_string(),
            };
            self.disconnect(&reason);
        }
        if status.is_none() {
            self.signal_group(Signal::TERM);
            status = self.wait_exit(Instant::now() + self.deadlines.kill_grace);
        }
        if status.is_none() {
            status = lock(&self.child).as_mut().and_then(ChildGuard::kill_now);
        }
        if self.watch.as_ref().is_some_and(ExitWatch::group_alive) {
            self.signal_group(Signal::KILL);
        }
        if let Some(s) = status {
            process::log_line(
                &self.log,
                &format!("{} ended: {}", self.name, process::describe_exit(s)),
            );
        }
        self.stop_writer();
        let _ = self.post(FromExt::Exited(status));
    }

    fn signal_group(&self, signal: Signal) {
        if let Some(watch) = &self.watch {
            watch.signal_group(signal);
        }
    }

    /// Waits for the child to exit until `deadline`; reaps it if it did.
    /// The wait itself happens without the `child` lock (on the pidfd);
    /// the lock is taken only to reap.
    fn wait_exit(&self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            if let Some(Ok(Some(s))) = lock(&self.child).as_mut().map(ChildGuard::try_wait) {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            match self.watch.as_ref().and_then(ExitWatch::fd) {
                Some(p) => {
                    let _ = process::wait_ready(p, PollFlags::IN, None, None, Some(deadline));
                }
                // Without a pidfd there is nothing to wait on: check often.
                None => {
                    std::thread::sleep(process::until(deadline).min(crate::proc::FALLBACK_POLL))
                }
            }
        }
    }
}

/// The wire `type` of a host frame, for tracing.
pub fn host_frame_type(frame: &HostFrame) -> &'static str {
    match frame {
        HostFrame::HelloAck { .. } => "hello_ack",
        HostFrame::CommandInvoked { .. } => "command_invoked",
        HostFrame::ToolCall { .. } => "tool_call",
        HostFrame::ToolCancel { .. } => "tool_cancel",
        HostFrame::Event(_) => "event",
        HostFrame::EventIntercept { .. } => "event_intercept",
        HostFrame::PanelKey { .. } => "panel_key",
        HostFrame::PanelClose { .. } => "panel_close",
        HostFrame::PanelResize { .. } => "panel_resize",
        HostFrame::Shutdown => "shutdown",
        HostFrame::Unknown => "unknown",
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
