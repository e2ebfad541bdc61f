//! The transport of one extension: its process, its reader and writer
//! threads, its request table. It frames, queues and correlates, and it
//! *reports* what happens on the pipes; the dispatcher *decides* what that
//! means (phases, what the user is told, when waiting calls fail).
//!
//! - **Writing** starts direct: while the pipe to the child's stdin takes
//!   each frame whole (it is non-blocking, so this cannot wait), the
//!   sender writes it there itself, under the state lock so frames keep
//!   their order. Most extensions never fill their 64 KiB pipe, so they
//!   never need a writer thread, and a start-up or a call costs no thread
//!   wake-up. The first frame the pipe does not take whole starts the
//!   **writer** thread with what is left of it; from then on the writer
//!   owns stdin and drains a bounded queue of pre-encoded frames (256
//!   frames / 16 MiB), each write bounded by the write deadline. Producers
//!   on the agent's threads that find the queue full wait for room
//!   (backpressure) up to the write deadline: a healthy extension that
//!   reads slower than a burst arrives is never disconnected for it.
//!   Nothing that must not wait does: the dispatcher queues with
//!   [`Conn::try_send`] (a full queue disconnects) and the terminal with
//!   [`Conn::offer`] (a full queue drops the frame and warns).
//! - The **reader** thread owns stdout from the end of the load on (until
//!   then the load's lobby reads it with the same code: a [`Waiting`]
//!   stdout, see `super::lobby`), splits lines (at most
//!   [`MAX_FRAME_BYTES`]) and decodes frames. A reply completes its waiting
//!   call directly through the request table (the fast path: one channel
//!   hop each way); every other frame, every stray line, the end of the
//!   stream and the exit go to the dispatcher's **inbox** as one
//!   [`Inbound`] message tagged with the instance's [`ExtId`]. When the
//!   dispatcher has not yet caught up with this extension's earlier
//!   messages, a reply takes the inbox too, so it can never overtake a
//!   frame the extension sent before it.
//! - The reader also owns the child (its [`ChildGuard`] lives on the
//!   reader's stack): it observes the exit through the guard's pidfd
//!   ([`crate::proc::ExitWatch`]), escalates SIGTERM → SIGKILL to the group
//!   when a deadline passes, reaps the child and kills whatever is left of
//!   its process group. No lock is held while it waits.
//! - **Shutdown**: [`Conn::shutdown`] queues `shutdown` behind whatever is
//!   already queued; the shutdown grace starts when the writer has written
//!   it, so every frame queued before it reaches the extension (each write
//!   still bounded by the write deadline).
//! - When stdout ends the connection is closed at once (after a moment for
//!   a crashing process's exit status to become visible), so calls waiting
//!   on it fail then, not at a deadline.
//! - The peer is usually a process (`Peer::Process`). Unit tests run the
//!   dispatcher against peers on threads of this process talking over OS
//!   pipes (`Peer::InMemory`): the same threads and the same framing,
//!   with nothing to signal or reap (their end is EOF).
//!
//! State: what only one thread touches lives in that thread (the pipes,
//! the line buffer, the child guard, whether the stream ended before a
//! shutdown). The rest is one `Mutex<State>`, a leaf lock never held
//! across a wait, with one condition variable for producers waiting for
//! room. It is held across the non-blocking direct write of one frame and,
//! once, across starting the writer thread and handing it the rest of that
//! frame: both are bounded and keep the frames in order. The only other
//! shared field is the write-once `tool_cancel` flag, read lock-free on
//! every cancellation.

use super::deadlines::{
    Deadlines, EXIT_DRAINED, EXIT_SETTLE, MAX_FRAME_BYTES, QUEUE_BYTES, QUEUE_FRAMES,
};
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
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
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
    /// The connection closed (once), with the reason; `by_shutdown` when
    /// its end came after a shutdown began (an end that came before is the
    /// extension's own, even if its exit is seen later). Waiting calls
    /// still wait: the dispatcher fails them once it has recorded this.
    Disconnected { reason: String, by_shutdown: bool },
    /// A frame the terminal sent (`panel_key`, `panel_close`) was dropped:
    /// the extension's queue was full. Its wire type.
    Dropped(&'static str),
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

/// Starts a host thread counted in `threads` while it lives. If it cannot
/// start, `f` is dropped unrun (with whatever it owns) and the count is
/// restored.
pub(super) fn spawn_counted(
    threads: &ThreadCount,
    name: String,
    stack: usize,
    f: impl FnOnce() + Send + 'static,
) -> io::Result<std::thread::JoinHandle<()>> {
    threads.fetch_add(1, Ordering::SeqCst);
    let guard = ThreadGuard(threads.clone());
    std::thread::Builder::new()
        .name(name)
        .stack_size(stack)
        .spawn(move || {
            let _g = guard;
            f();
        })
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

/// Where a shutdown stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shutdown {
    /// None asked for.
    No,
    /// `shutdown` is queued behind earlier frames; its grace has not begun.
    Queued,
    /// `shutdown` is written: the process must exit by this instant.
    Written(Instant),
}

/// Everything more than one thread touches (behind [`Conn::state`]).
struct State {
    /// `Some(reason)` once the connection is closed.
    gone: Option<String>,
    shutdown: Shutdown,
    /// The request table: call id → who waits for the reply.
    pending: HashMap<u64, (CallKind, Sender<Reply>)>,
    /// Frames and bytes in the writer's queue (the spec's bounds).
    queued_frames: usize,
    queued_bytes: usize,
    /// Frames the writer has taken off the queue: a producer waiting for
    /// room sees the extension make progress when it changes.
    taken: u64,
    /// Producers waiting on [`Conn::room`]; the writer signals only then.
    waiting: usize,
    /// Messages this connection put in the inbox, and how many the
    /// dispatcher has handled: equal means a reply may take the fast path.
    posted: u64,
    handled: u64,
    /// The dispatcher has handled this instance's last message (`Exited`).
    exited_seen: bool,
    /// Who writes the child's stdin now.
    writer: Writer,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Who writes the child's stdin.
enum Writer {
    /// No writer thread yet: a sender writes its frame straight into the
    /// pipe (non-blocking, so it cannot wait), holding the state lock so
    /// that frames keep their order. The receiving end of the queue waits
    /// here for the thread that will drain it.
    Direct {
        stdin: File,
        queue: Receiver<ToWriter>,
    },
    /// The writer thread owns stdin and drains the queue.
    Thread,
    /// Stdin is closed (the connection ended before a thread was needed,
    /// or `shutdown` was written directly).
    Closed,
}

/// The live connection to one extension process, shared by its two
/// threads, the dispatcher and every caller holding the host handle.
pub struct Conn {
    pub ext: ExtId,
    pub name: String,
    pub log: PathBuf,
    /// The log, open for appending (`None`: it could not be opened, and
    /// [`Conn::log_line`] tries the path).
    log_file: Option<File>,
    /// The process id (`0` for an in-memory peer).
    pub pid: u32,
    deadlines: Deadlines,
    /// Unbounded channel; the spec's bounds are kept in [`State`], which
    /// lets the writer wait on this channel alone (the cheapest wake-up)
    /// and lets `Stop` and `shutdown` always get through. Used once the
    /// writer thread runs ([`Writer::Thread`]).
    queue: Sender<ToWriter>,
    /// This connection, for the writer thread started on demand.
    me: std::sync::Weak<Conn>,
    /// The host's live-thread count, for that thread.
    threads: ThreadCount,
    /// Fired (for good) when the connection closes or `shutdown` has been
    /// written: wakes both threads out of their polls.
    wake: Wake,
    /// The child's exit observer and group signaller (the guard itself is
    /// the reader's); `None` for an in-memory peer.
    watch: Option<ExitWatch>,
    inbox: Sender<Inbound>,
    state: Mutex<State>,
    /// Signalled when the writer takes a frame or the connection closes.
    room: Condvar,
    /// The extension advertised `tool_cancel` (set once by the dispatcher
    /// at `hello`).
    pub tool_cancel: AtomicBool,
}

/// How the reader's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Stdout reached EOF; `during_shutdown`: a shutdown had begun then.
    Eof { during_shutdown: bool },
    /// The process exited and its stdout has been drained.
    Exited { during_shutdown: bool },
    /// The shutdown grace ran out.
    Grace,
    /// The connection was closed (by either thread or the dispatcher).
    Closed,
}

impl Conn {
    /// Wraps an already spawned process. Its stdout goes to `waiting`, for
    /// a `Lobby` (`host::lobby`) to read until the load is over or to give
    /// it its reader at once.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        ext: ExtId,
        name: String,
        log: (PathBuf, Option<File>),
        spawned: process::Spawned,
        deadlines: Deadlines,
        inbox: Sender<Inbound>,
        threads: ThreadCount,
        waiting: &mut Vec<Waiting>,
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
            ext, name, log, peer, to_peer, from_peer, deadlines, inbox, threads, waiting,
        )
    }

    /// Starts a connection to a peer in this process: two pipes, the
    /// host's ends non-blocking as for a child; its stdout goes to
    /// `waiting`, as [`Conn::start`]'s. Returns the peer's ends (blocking)
    /// for the thread that plays the extension.
    #[cfg(test)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_in_memory(
        ext: ExtId,
        name: String,
        log: (PathBuf, Option<File>),
        deadlines: Deadlines,
        inbox: Sender<Inbound>,
        threads: ThreadCount,
        waiting: &mut Vec<Waiting>,
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
            waiting,
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
        (log, log_file): (PathBuf, Option<File>),
        peer: Peer,
        stdin: File,
        stdout: File,
        deadlines: Deadlines,
        inbox: Sender<Inbound>,
        threads: ThreadCount,
        waiting: &mut Vec<Waiting>,
    ) -> io::Result<Arc<Conn>> {
        let (queue, queue_rx) = crossbeam_channel::unbounded();
        let mut child = match peer {
            Peer::Process(guard) => Some(guard),
            Peer::InMemory => None,
        };
        let wake = match Wake::new() {
            Ok(w) => w,
            Err(e) => {
                if let Some(c) = child.as_mut() {
                    c.kill_now();
                }
                return Err(e);
            }
        };
        let conn = Arc::new_cyclic(|me| Conn {
            ext,
            pid: child.as_ref().map_or(0, ChildGuard::pid),
            watch: child.as_ref().map(ChildGuard::watch),
            name,
            log,
            log_file,
            deadlines,
            queue,
            me: me.clone(),
            threads: threads.clone(),
            wake,
            inbox,
            state: Mutex::new(State {
                gone: None,
                shutdown: Shutdown::No,
                pending: HashMap::new(),
                queued_frames: 0,
                queued_bytes: 0,
                taken: 0,
                waiting: 0,
                posted: 0,
                handled: 0,
                exited_seen: false,
                writer: Writer::Direct {
                    stdin,
                    queue: queue_rx,
                },
                threads: Vec::new(),
            }),
            room: Condvar::new(),
            tool_cancel: AtomicBool::new(false),
        });
        waiting.push(Waiting {
            conn: conn.clone(),
            stdout,
            child,
            lines: LineBuffer::with_limit(MAX_FRAME_BYTES),
            ended: None,
        });
        Ok(conn)
    }

    /// Appends one `[zut] `-prefixed line to its log; best effort.
    pub fn log_line(&self, line: &str) {
        self.log_lines(&[line]);
    }

    /// Appends lines to its log, in one write.
    pub fn log_lines(&self, lines: &[&str]) {
        match &self.log_file {
            Some(f) => process::append_lines(f, lines),
            None => process::log_lines(&self.log, lines),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Why it is disconnected, if it is.
    pub fn gone(&self) -> Option<String> {
        self.lock().gone.clone()
    }

    /// Whether the extension can still be talked to.
    pub fn connected(&self) -> bool {
        self.lock().gone.is_none()
    }

    /// Queues a frame, waiting for room while the extension makes progress.
    pub fn send(&self, frame: &HostFrame) -> Result<(), SendError> {
        self.send_bytes(frame, None, Full::Wait)
    }

    /// Queues a frame only if there is room now (the dispatcher never waits
    /// on an extension); a full queue disconnects it.
    pub fn try_send(&self, frame: &HostFrame) -> Result<(), SendError> {
        self.send_bytes(frame, None, Full::Disconnect)
    }

    /// Queues a frame the terminal sends (a panel key): never waits. A full
    /// queue drops the frame, and the dispatcher warns about the extension.
    pub fn offer(&self, frame: &HostFrame) {
        let _ = self.send_bytes(frame, None, Full::Drop);
    }

    /// Queues a frame with a ticket for later withdrawal.
    pub fn send_tracked(&self, frame: &HostFrame) -> Result<Arc<Ticket>, SendError> {
        let ticket = Ticket::new();
        self.send_bytes(frame, Some(ticket.clone()), Full::Wait)?;
        Ok(ticket)
    }

    /// Begins a graceful stop: queues `shutdown` behind what is queued
    /// (past the bounds on purpose: it must always get through). Its
    /// grace starts once it is written; then stdin is closed, and past the
    /// grace the reader escalates to SIGTERM and SIGKILL.
    pub fn shutdown(&self) {
        let bytes = zut_ext::wire::encode_line(&HostFrame::Shutdown);
        {
            let mut s = self.lock();
            if s.shutdown != Shutdown::No {
                return;
            }
            s.shutdown = Shutdown::Queued;
            if s.gone.is_some() {
                return;
            }
            log::debug!("{} <- shutdown", self.name);
            let out = Outgoing {
                bytes,
                ticket: None,
                close_after: true,
            };
            match self.write_direct(&mut s, out) {
                Direct::Written => {
                    // Closing stdin is the extension's EOF; the grace
                    // starts now that it can read `shutdown`.
                    s.writer = Writer::Closed;
                    s.shutdown = Shutdown::Written(Instant::now() + self.deadlines.shutdown_grace);
                    drop(s);
                    self.wake.wake();
                }
                Direct::HandedOver => {}
                Direct::Failed(reason) => {
                    drop(s);
                    self.disconnect(&reason);
                }
                Direct::Queue(out) => {
                    // Queued past the bounds on purpose: it must always
                    // get through.
                    s.queued_frames += 1;
                    s.queued_bytes += out.bytes.len();
                    let _ = self.queue.send(ToWriter::Frame(out));
                }
            }
        }
    }

    fn send_bytes(
        &self,
        frame: &HostFrame,
        ticket: Option<Arc<Ticket>>,
        full: Full,
    ) -> Result<(), SendError> {
        log::debug!("{} <- {}", self.name, host_frame_type(frame));
        let out = Outgoing {
            bytes: zut_ext::wire::encode_line(frame),
            ticket,
            close_after: false,
        };
        let mut s = self.lock();
        if let Some(r) = &s.gone {
            return Err(SendError::Disconnected(r.clone()));
        }
        let out = match self.write_direct(&mut s, out) {
            Direct::Written | Direct::HandedOver => return Ok(()),
            Direct::Failed(reason) => {
                drop(s);
                self.disconnect(&reason);
                return Err(SendError::Disconnected(reason));
            }
            Direct::Queue(out) => out,
        };
        let len = out.bytes.len();
        let mut deadline = Instant::now() + self.deadlines.write;
        let mut taken = s.taken;
        loop {
            if let Some(r) = &s.gone {
                return Err(SendError::Disconnected(r.clone()));
            }
            // A single frame larger than the byte bound is allowed on an
            // empty queue, or it could never be sent at all.
            if s.queued_frames < QUEUE_FRAMES
                && (s.queued_bytes == 0 || s.queued_bytes + len <= QUEUE_BYTES)
            {
                s.queued_frames += 1;
                s.queued_bytes += len;
                drop(s);
                if self.queue.send(ToWriter::Frame(out)).is_ok() {
                    return Ok(());
                }
                let r = self
                    .gone()
                    .unwrap_or_else(|| "disconnected: its stdin writer has stopped".into());
                return Err(SendError::Disconnected(r));
            }
            if s.taken != taken {
                // The writer made progress: the extension is reading.
                taken = s.taken;
                deadline = Instant::now() + self.deadlines.write;
            }
            let now = Instant::now();
            let stuck = now >= deadline || full != Full::Wait;
            if stuck && full == Full::Drop {
                drop(s);
                let what = host_frame_type(frame);
                log::warn!(
                    "extension {}: its queue is full; a {what} frame was dropped",
                    self.name
                );
                self.post(FromExt::Dropped(what));
                return Err(SendError::Disconnected(format!(
                    "its queue is full; the {what} frame was dropped"
                )));
            }
            if stuck {
                drop(s);
                let reason = format!(
                    "disconnected: the host->extension queue stayed full ({QUEUE_FRAMES} frames / {} MiB) for {} ms; the extension is not reading its stdin",
                    QUEUE_BYTES >> 20,
                    self.deadlines.write.as_millis()
                );
                self.disconnect(&reason);
                return Err(SendError::Disconnected(reason));
            }
            s.waiting += 1;
            s = self
                .room
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            s.waiting -= 1;
        }
    }

    /// Tells the writer to stop after the frame it is writing, if any;
    /// without a writer thread, closes stdin.
    fn stop_writer(&self) {
        let closed = {
            let mut s = self.lock();
            match s.writer {
                Writer::Thread => None,
                _ => Some(std::mem::replace(&mut s.writer, Writer::Closed)),
            }
        };
        drop(closed);
        let _ = self.queue.send(ToWriter::Stop);
        self.wake.wake();
    }

    /// Without a writer thread, writes `out` straight into the pipe, as
    /// far as the pipe takes it now. A frame the pipe does not take whole
    /// (full pipe, partial write, or an error the writer has the words
    /// for) goes to a writer thread started here with what is left of it,
    /// ahead of anything queued later; from then on frames are queued
    /// (`Queue`: the caller queues it within the bounds).
    fn write_direct(&self, s: &mut MutexGuard<'_, State>, mut out: Outgoing) -> Direct {
        let Writer::Direct { stdin, .. } = &mut s.writer else {
            return Direct::Queue(out);
        };
        let n = write_now(stdin, &out.bytes);
        if n == out.bytes.len() {
            s.taken += 1;
            if let Some(t) = &out.ticket {
                t.state.store(WRITTEN, Ordering::SeqCst);
                let _ = t.done_tx.try_send(());
            }
            return Direct::Written;
        }
        if n > 0 {
            // Begun: a withdrawal can no longer take it back.
            out.bytes.drain(..n);
            if let Some(t) = &out.ticket {
                t.state.store(WRITING, Ordering::SeqCst);
            }
        }
        if let Err(e) = self.start_writer(s) {
            return Direct::Failed(format!(
                "disconnected: cannot start its stdin writer thread: {e}"
            ));
        }
        // Sent under the lock: nothing queued later can overtake it. The
        // queue was empty, so the bounds have room for it.
        s.queued_frames += 1;
        s.queued_bytes += out.bytes.len();
        let _ = self.queue.send(ToWriter::Frame(out));
        Direct::HandedOver
    }

    /// Starts the writer thread on the stdin and queue kept in `s`. The
    /// lock is held across the thread's creation (no wait): the thread
    /// starts with nothing to do until the lock is released.
    fn start_writer(&self, s: &mut State) -> io::Result<()> {
        let Writer::Direct { stdin, queue } = std::mem::replace(&mut s.writer, Writer::Thread)
        else {
            return Ok(());
        };
        let Some(conn) = self.me.upgrade() else {
            s.writer = Writer::Closed;
            return Err(io::Error::other("the connection is being dropped"));
        };
        let started = spawn_counted(
            &self.threads,
            format!("zut-w-{}", self.name),
            WRITER_STACK,
            move || conn.write_loop(stdin, queue),
        );
        match started {
            Ok(h) => {
                s.threads.push(h);
                Ok(())
            }
            Err(e) => {
                s.writer = Writer::Closed;
                Err(e)
            }
        }
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
        let gone = {
            let mut s = self.lock();
            match &s.gone {
                Some(r) => Some(r.clone()),
                None => {
                    s.pending.insert(id, (kind, tx.clone()));
                    None
                }
            }
        };
        if let Some(r) = gone {
            let _ = tx.send(Err(format!("extension {} {r}", self.name)));
        }
        rx
    }

    /// Forgets a pending call (timed out, cancelled).
    pub fn forget(&self, id: u64) {
        self.lock().pending.remove(&id);
    }

    /// Delivers a reply frame to its pending call; false if nobody waits.
    pub fn resolve(&self, id: u64, kind: CallKind, frame: ExtFrame) -> bool {
        match self.route(id, kind, frame, false) {
            Routed::To(tx, frame) => tx.send(Ok(frame)).is_ok(),
            Routed::Nobody | Routed::Behind(_) => false,
        }
    }

    /// Finds who waits for a reply, in one look at the table. With
    /// `in_order`, only when the dispatcher has handled every earlier
    /// message of this extension (else the frame comes back as `Behind`).
    /// The reply is sent by the caller of this, after the lock is
    /// released: the woken caller takes it next.
    fn route(&self, id: u64, kind: CallKind, frame: ExtFrame, in_order: bool) -> Routed {
        let mut s = self.lock();
        if in_order && s.posted != s.handled {
            return Routed::Behind(frame);
        }
        match s.pending.get(&id) {
            // Progress keeps the call waiting: it is passed on, and the
            // entry stays for the reply.
            Some((k, tx)) if *k == kind && matches!(frame, ExtFrame::ToolProgress { .. }) => {
                Routed::To(tx.clone(), frame)
            }
            Some((k, _)) if *k == kind => match s.pending.remove(&id) {
                Some((_, tx)) => Routed::To(tx, frame),
                None => Routed::Nobody,
            },
            _ => Routed::Nobody,
        }
    }

    /// The dispatcher saw the `Exited` message: nothing more will come.
    pub fn mark_exited_seen(&self) {
        self.lock().exited_seen = true;
    }

    /// Whether [`Conn::mark_exited_seen`] was called.
    pub fn exited_seen(&self) -> bool {
        self.lock().exited_seen
    }

    /// The dispatcher handled one of this connection's inbox messages.
    pub fn handled_one(&self) {
        self.lock().handled += 1;
    }

    /// Posts to the dispatcher's inbox; false when the dispatcher is gone.
    fn post(&self, msg: FromExt) -> bool {
        self.lock().posted += 1;
        if self.inbox.send(Inbound { ext: self.ext, msg }).is_err() {
            // The dispatcher is gone (host dropped): nothing to tell.
            self.lock().handled += 1;
            return false;
        }
        true
    }

    /// Closes the connection (the dispatcher's decision, a caller's, or
    /// a failure one of its threads met); later calls do nothing. Queueing
    /// fails from now on, both threads stop, the reader ends the process,
    /// and the dispatcher is told, which then fails the waiting calls.
    /// Callable from any thread.
    pub fn disconnect(&self, reason: &str) {
        self.close(reason, None);
    }

    /// [`Conn::disconnect`]; `by_shutdown` says whether the end belongs to
    /// a shutdown (`None`: whether one has begun now).
    fn close(&self, reason: &str, by_shutdown: Option<bool>) {
        let by_shutdown = {
            let mut s = self.lock();
            if s.gone.is_some() {
                return;
            }
            s.gone = Some(reason.to_string());
            by_shutdown.unwrap_or(s.shutdown != Shutdown::No)
        };
        self.room.notify_all();
        self.log_line(reason);
        log::info!("extension {} {reason}", self.name);
        self.stop_writer();
        let told = self.post(FromExt::Disconnected {
            reason: reason.to_string(),
            by_shutdown,
        });
        if !told {
            self.fail_pending();
        }
    }

    /// Fails every pending call with the disconnect reason. The dispatcher
    /// calls it once it has reported the disconnect, so a woken caller
    /// already sees the extension gone.
    pub fn fail_pending(&self) {
        let (reason, drained) = {
            let mut s = self.lock();
            let reason = s.gone.clone().unwrap_or_else(|| "disconnected".into());
            let drained: Vec<_> = s.pending.drain().map(|(_, (_, tx))| tx).collect();
            (reason, drained)
        };
        for tx in drained {
            let _ = tx.send(Err(format!("extension {} {reason}", self.name)));
        }
    }

    /// Joins its threads; call after [`Conn::shutdown`] or a disconnect.
    pub fn join(&self) {
        let handles: Vec<_> = self.lock().threads.drain(..).collect();
        self.join_all(handles);
    }

    /// Joins its threads if every one has ended (it never waits); true
    /// when none is left. The dispatcher drops finished connections with
    /// it, so a session of many reloads does not keep every old
    /// connection's descriptors and thread stacks.
    pub fn join_if_finished(&self) -> bool {
        let handles: Vec<_> = {
            let mut s = self.lock();
            if !s.threads.iter().all(std::thread::JoinHandle::is_finished) {
                return false;
            }
            s.threads.drain(..).collect()
        };
        self.join_all(handles);
        true
    }

    fn join_all(&self, handles: Vec<std::thread::JoinHandle<()>>) {
        for h in handles {
            if let Err(panic) = h.join() {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                log::error!("a thread of extension {} panicked: {what}", self.name);
                self.log_line(&format!("zut: a host thread panicked: {what}"));
            }
        }
    }

    // ----- writer -----

    fn write_loop(&self, mut stdin: File, queue: Receiver<ToWriter>) {
        // A plain `recv` (not a `select!`) spins briefly before parking,
        // which saves a thread wake-up per frame under load. Stopping is a
        // message on the same channel; frames queued before a disconnect
        // are dropped by the `gone` check.
        while let Ok(ToWriter::Frame(out)) = queue.recv() {
            {
                let mut s = self.lock();
                s.queued_frames -= 1;
                s.queued_bytes -= out.bytes.len();
                s.taken += 1;
                if s.waiting > 0 {
                    self.room.notify_all();
                }
                if s.gone.is_some() {
                    return;
                }
            }
            if let Some(t) = &out.ticket {
                // `WRITING` already: its first bytes were written directly.
                if let Err(WITHDRAWN) =
                    t.state
                        .compare_exchange(QUEUED, WRITING, Ordering::SeqCst, Ordering::SeqCst)
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
                Ok(()) if out.close_after => {
                    // The grace starts now that the extension can read it.
                    self.lock().shutdown =
                        Shutdown::Written(Instant::now() + self.deadlines.shutdown_grace);
                    self.wake.wake();
                    return; // dropping stdin sends EOF
                }
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
                    match process::wait_ready(
                        stdin.as_fd(),
                        PollFlags::OUT,
                        Some(&self.wake),
                        None,
                        Some(deadline),
                    ) {
                        // The wake fires for good only when the connection
                        // closes (or after `shutdown`, the last frame).
                        Ok(r) if r.woken => return Err(None),
                        Ok(r) if r.io => {}
                        Ok(_) if Instant::now() < deadline => {}
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
        // In-memory: the reader reports the peer's end (EOF).
        let watch = self.watch.as_ref()?;
        let deadline = Instant::now() + self.deadlines.exit_drain;
        match watch.exited_by(deadline) {
            Some(true) => None,
            _ => Some("disconnected: its stdin is closed".into()),
        }
    }

    // ----- reader -----

    /// The reader thread: reads stdout until the connection ends, then
    /// ends the process ([`Conn::finish`]). It starts from what the lobby
    /// read before it, if anything (`lines`, and `ended` when the lobby
    /// already met the end).
    fn read_loop(
        &self,
        mut stdout: File,
        child: Option<ChildGuard>,
        mut lines: LineBuffer,
        ended: Option<End>,
    ) {
        let end = match ended {
            Some(end) => end,
            None => self.read_until_end(&mut stdout, &mut lines),
        };
        match child {
            Some(child) => self.finish(end, child),
            None => self.finish_in_memory(end),
        }
    }

    /// Reads and handles stdout until the connection ends (and how).
    fn read_until_end(&self, stdout: &mut File, lines: &mut LineBuffer) -> End {
        let pidfd = self.watch.as_ref().and_then(ExitWatch::fd);
        let mut exited_at: Option<Instant> = None;
        loop {
            let (gone, shutdown) = {
                let s = self.lock();
                (s.gone.is_some(), s.shutdown)
            };
            if gone {
                break End::Closed;
            }
            let during_shutdown = shutdown != Shutdown::No;
            let grace = match shutdown {
                Shutdown::Written(by) => Some(by),
                _ => None,
            };
            let drain = exited_at.map(|t| t + self.deadlines.exit_drain.min(EXIT_DRAINED));
            let now = Instant::now();
            if drain.is_some_and(|d| now >= d) {
                break End::Exited { during_shutdown };
            }
            if grace.is_some_and(|d| now >= d) {
                break End::Grace;
            }
            let deadline = [grace, drain].into_iter().flatten().min();
            // Once `shutdown` is written the wake pipe stays readable:
            // stop watching it and honour the grace instead.
            let wake = if grace.is_some() {
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
                    break End::Closed;
                }
            };
            if ready.exited {
                exited_at = Some(Instant::now());
            }
            if ready.io {
                if let Some(end) = self.read_some(stdout, lines) {
                    break end;
                }
            }
        }
    }

    /// One read from stdout, and every whole line it completes handled;
    /// `Some` when that ends the connection (end of file, a read error,
    /// a line over the frame limit).
    fn read_some(&self, stdout: &mut File, lines: &mut LineBuffer) -> Option<End> {
        match lines.fill(stdout) {
            Ok(true) => {}
            Ok(false) => {
                let during_shutdown = self.lock().shutdown != Shutdown::No;
                return Some(End::Eof { during_shutdown });
            }
            Err(e) => {
                self.disconnect(&format!("disconnected: reading its stdout failed: {e}"));
                return Some(End::Closed);
            }
        }
        // Lines after an over-long one are not read: the extension is
        // disconnected for it.
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
            return Some(End::Closed);
        }
        None
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
        let frame_type = frame.type_name();
        match self.route(waiting, kind, frame, true) {
            Routed::To(tx, frame) => {
                if tx.send(Ok(frame)).is_err() {
                    let _ = self.post(FromExt::StrayReply {
                        frame_type,
                        id: waiting.to_string(),
                    });
                }
            }
            Routed::Behind(frame) => {
                let _ = self.post(FromExt::Reply(kind, waiting, frame));
            }
            Routed::Nobody => {
                let _ = self.post(FromExt::StrayReply {
                    frame_type,
                    id: waiting.to_string(),
                });
            }
        }
    }

    /// The end of an in-memory peer: its stdout closing; there is no exit
    /// status, process or group.
    fn finish_in_memory(&self, end: End) {
        match end {
            End::Eof {
                during_shutdown: false,
            } => self.close("closed its stdout", Some(false)),
            _ => self.close("stopped at shutdown", Some(true)),
        }
        self.stop_writer();
        let _ = self.post(FromExt::Exited(None));
    }

    /// Ends the process's life: after an EOF outside a shutdown it closes
    /// the connection at once (with the exit status if the exit follows
    /// within [`EXIT_SETTLE`]); during a shutdown it waits for the exit
    /// until the grace ends. Then it escalates SIGTERM and SIGKILL, reaps
    /// the child and kills what is left of its process group.
    fn finish(&self, end: End, mut child: ChildGuard) {
        let now = Instant::now();
        let grace = match self.lock().shutdown {
            Shutdown::Written(by) => Some(by),
            // Not written yet: the writer may still be delivering; the
            // process gets the usual drain to exit by itself.
            Shutdown::Queued => Some(now + self.deadlines.exit_drain),
            Shutdown::No => None,
        };
        let (mut status, by_shutdown) = match end {
            End::Eof {
                during_shutdown: false,
            } => {
                // A crash closes stdout a moment before its exit shows.
                let settle = now + self.deadlines.exit_drain.min(EXIT_SETTLE);
                (self.wait_exit(&mut child, settle), false)
            }
            End::Eof {
                during_shutdown: true,
            }
            | End::Exited {
                during_shutdown: true,
            } => (self.wait_exit(&mut child, grace.unwrap_or(now)), true),
            End::Exited {
                during_shutdown: false,
            } => (self.wait_exit(&mut child, now), false),
            End::Grace => (self.wait_exit(&mut child, now), true),
            End::Closed => (self.wait_exit(&mut child, now), true),
        };
        let reason = match (status, by_shutdown) {
            (Some(s), false) => format!("exited: {}", process::describe_exit(s)),
            (None, false) => "closed its stdout".to_string(),
            (Some(s), true) => format!("stopped at shutdown ({})", process::describe_exit(s)),
            (None, true) => "stopped at shutdown (still running)".to_string(),
        };
        // A no-op when already closed (`End::Closed`).
        self.close(&reason, Some(by_shutdown));
        if status.is_none()
            && matches!(
                end,
                End::Eof {
                    during_shutdown: false
                }
            )
        {
            // It closed its stdout but runs on: the rest of the drain to
            // exit by itself.
            status = self.wait_exit(&mut child, now + self.deadlines.exit_drain);
        }
        if status.is_none() {
            self.signal_group(Signal::TERM);
            status = self.wait_exit(&mut child, Instant::now() + self.deadlines.kill_grace);
        }
        if status.is_none() {
            status = child.kill_now();
        }
        if self.watch.as_ref().is_some_and(ExitWatch::group_alive) {
            self.signal_group(Signal::KILL);
        }
        if let Some(s) = status {
            self.log_line(&format!(
                "{} ended: {}",
                self.name,
                process::describe_exit(s)
            ));
        }
        self.stop_writer();
        let _ = self.post(FromExt::Exited(status));
    }

    fn signal_group(&self, signal: Signal) {
        if let Some(watch) = &self.watch {
            watch.signal_group(signal);
        }
    }

    /// Waits for the child to exit until `deadline` (on its pidfd); reaps
    /// it if it did.
    fn wait_exit(&self, child: &mut ChildGuard, deadline: Instant) -> Option<ExitStatus> {
        loop {
            if let Ok(Some(s)) = child.try_wait() {
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

/// An extension's stdout with nobody reading it yet: its reader thread is
/// still to start, and meanwhile a `Lobby` (`host::lobby`) may read it.
/// Whoever holds it reads with the reader's own framing, and hands it to
/// its reader thread with everything read so far.
pub struct Waiting {
    conn: Arc<Conn>,
    stdout: File,
    /// The child (its guard is the reader's); `None` for an in-memory peer.
    child: Option<ChildGuard>,
    /// What was read and not yet a whole line.
    lines: LineBuffer,
    /// How the connection ended, when that was met before the reader.
    ended: Option<End>,
}

impl Waiting {
    /// Its stdout, to wait for.
    pub fn stdout(&self) -> std::os::fd::BorrowedFd<'_> {
        self.stdout.as_fd()
    }

    /// What else must bring its reader thread at once: the pidfd that
    /// reports the child's exit, and the connection's wake, which fires
    /// when it closes or `shutdown` is written. Both stay readable.
    pub fn signals(&self) -> impl Iterator<Item = std::os::fd::BorrowedFd<'_>> {
        let exit = self.conn.watch.as_ref().and_then(ExitWatch::fd);
        exit.into_iter().chain(std::iter::once(self.conn.wake.fd()))
    }

    /// One read and the frames it completes, handled as the reader
    /// handles them; false once that ended the connection (the reader
    /// then only ends the process).
    pub fn read(&mut self) -> bool {
        self.ended = self.conn.read_some(&mut self.stdout, &mut self.lines);
        self.ended.is_none()
    }

    /// Starts its reader thread. If the thread cannot start, the
    /// connection is closed and the child, whose guard goes with the
    /// failed closure, is killed and reaped.
    pub fn start_reader(self) -> io::Result<()> {
        let Waiting {
            conn,
            stdout,
            child,
            lines,
            ended,
        } = self;
        // The lock is held across the thread's creation (no wait), so the
        // handle is in place before the reader can end and be joined. The
        // child waits in a cell the thread empties: if the thread cannot
        // start, it comes back and is killed and reaped after the lock.
        let cell = Arc::new(Mutex::new(Some((stdout, child, lines))));
        let (theirs, reader) = (cell.clone(), conn.clone());
        let mut s = conn.lock();
        let r = spawn_counted(
            &conn.threads,
            format!("zut-r-{}", conn.name),
            READER_STACK,
            move || {
                if let Some((stdout, child, lines)) = lock(&theirs).take() {
                    reader.read_loop(stdout, child, lines, ended);
                }
            },
        );
        match r {
            Ok(r) => {
                s.threads.push(r);
                Ok(())
            }
            Err(e) => {
                drop(s);
                drop(lock(&cell).take());
                conn.close("cannot start its reader thread", Some(false));
                Err(e)
            }
        }
    }
}

/// What became of a frame offered to [`Conn::write_direct`].
enum Direct {
    /// Written whole into the pipe.
    Written,
    /// What is left of it went to the writer thread started for it.
    HandedOver,
    /// The writer thread runs: the frame is for its queue.
    Queue(Outgoing),
    /// The writer thread could not start: the disconnect reason.
    Failed(String),
}

/// Writes what the non-blocking `stdin` takes now; the count written. A
/// full pipe or an error ends it early: the writer thread, which can wait
/// and has the words for each failure, takes over from there.
fn write_now(stdin: &mut File, mut buf: &[u8]) -> usize {
    let total = buf.len();
    while !buf.is_empty() {
        match stdin.write(buf) {
            Ok(0) => break,
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    total - buf.len()
}

/// What a producer does when the queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Full {
    /// Wait for room while the extension makes progress (backpressure).
    Wait,
    /// Disconnect it now (the dispatcher never waits).
    Disconnect,
    /// Drop the frame with a warning (the terminal never waits).
    Drop,
}

/// Who waits for a reply.
enum Routed {
    To(Sender<Reply>, ExtFrame),
    Nobody,
    /// Earlier messages of the extension are still in the inbox.
    Behind(ExtFrame),
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
