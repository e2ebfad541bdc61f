//! One running extension: its process, its two threads and its state.
//!
//! The **writer** thread owns the child's stdin and drains a bounded queue
//! of pre-encoded frames (256 frames / 16 MiB), each write bounded by the
//! write deadline. The **reader** thread owns stdout, splits lines (at most
//! [`MAX_FRAME_BYTES`]), decodes frames and hands them to the host's
//! dispatch; it also owns the end of the child's life: it observes the exit
//! through the pidfd, escalates SIGTERM → SIGKILL when a deadline passes,
//! reaps the child and kills whatever is left of its process group.
//!
//! A [`Ticket`] rides with a queued `tool_call` so an abandoned call can be
//! withdrawn while still queued, or given the torn-frame allowance if its
//! write has begun.

use super::deadlines::{Deadlines, MAX_FRAME_BYTES, QUEUE_BYTES, QUEUE_FRAMES};
use super::discovery::Source;
use super::process::{self, Wake};
use crossbeam_channel::{Receiver, Sender};
use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use zut_ext::wire::{ExtFrame, HostFrame};

/// Where an extension is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    AwaitingHello,
    Registering,
    /// `auto` when the ready deadline passed without a `ready` frame.
    Ready {
        auto: bool,
    },
    /// Gone for good, with the reason.
    Disconnected(String),
}

/// What a pending call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Tool,
    Command,
    Intercept,
}

/// The reply channel of one pending call: the frame, or why none will come.
pub type Reply = Result<ExtFrame, String>;

/// A registration buffered during loading, committed in load order.
#[derive(Debug, Clone)]
pub enum Registration {
    Command {
        name: String,
        description: String,
    },
    Tool {
        name: String,
        description: String,
        schema: serde_json::Value,
        deferred: bool,
        interactive: bool,
    },
}

/// Lifecycle notices to whoever is waiting on extensions (loader, shutdown).
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    Hello {
        ext: u64,
        result: Result<(), String>,
    },
    Ready {
        ext: u64,
    },
    Exited {
        ext: u64,
    },
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
pub struct Outgoing {
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
    /// The queue bound was hit: the extension has been disconnected.
    Overflow(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Disconnected(r) | SendError::Overflow(r) => f.write_str(r),
        }
    }
}

/// Counters of stdout lines that were not frames, per kind, for doctor.
#[derive(Debug, Default, Clone)]
pub struct Noise {
    pub counts: HashMap<&'static str, u64>,
}

/// Static facts about an extension instance.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Unique per host process; frames of a replaced instance are ignored.
    pub id: u64,
    /// Position in load order.
    pub order: usize,
    pub name: String,
    pub dir: PathBuf,
    pub source: Source,
    pub exec: String,
    pub language: String,
    pub log: PathBuf,
}

impl Identity {
    /// The diagnostic block every load error carries.
    pub fn describe(&self) -> String {
        let language = if self.language.is_empty() {
            "(not declared)"
        } else {
            &self.language
        };
        format!(
            "extension {}\n  directory: {}\n  executable: {}\n  language: {}\n  log: {}",
            self.name,
            self.dir.display(),
            self.exec,
            language,
            self.log.display()
        )
    }
}

/// A running (or finished) extension process.
pub struct Ext {
    pub ident: Identity,
    pub pid: u32,
    deadlines: Deadlines,
    phase: Mutex<Phase>,
    pub version: Mutex<String>,
    pub tool_cancel: AtomicBool,
    /// Unbounded channel; the spec's bounds are enforced by the two
    /// counters, which lets the writer wait on this channel alone (the
    /// cheapest wake-up) and lets `Stop` always get through.
    queue: Sender<ToWriter>,
    queued_frames: AtomicUsize,
    queued_bytes: AtomicUsize,
    wake: Wake,
    /// Set at shutdown: the shared deadline for this process to exit.
    closing: Mutex<Option<Instant>>,
    pending: Mutex<HashMap<u64, (CallKind, Sender<Reply>)>>,
    child: Mutex<Child>,
    pub exit: Mutex<Option<ExitStatus>>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// `Some` while loading: registrations wait here to be committed in order.
    pub staged: Mutex<Option<Vec<Registration>>>,
    pub events: Mutex<HashSet<String>>,
    pub intercepts: Mutex<HashSet<String>>,
    /// Warnings (stray output, auto-ready…), for doctor.
    pub warnings: Mutex<Vec<String>>,
    /// Refused registrations (conflicts, reserved names), for doctor.
    pub conflicts: Mutex<Vec<String>>,
    /// `Some` until `ext_loaded` is reported: events the extension causes
    /// meanwhile wait here, so the stream stays in load order. Warnings and
    /// conflicts are pushed under this lock too, so each is reported once.
    pub held: Mutex<Option<Vec<crate::events::Event>>>,
    pub noise: Mutex<Noise>,
    pub shutdown_acked: AtomicBool,
}

/// What the reader hands to the host for every decoded frame or incident.
pub trait Dispatch: Send + Sync + 'static {
    /// A decoded frame from `ext`.
    fn frame(&self, ext: &Arc<Ext>, frame: ExtFrame);
    /// A stdout line that could not be decoded; `preview` is its start.
    fn malformed(&self, ext: &Arc<Ext>, error: zut_ext::wire::DecodeError, preview: String);
    /// `ext` was disconnected (once), with the reason.
    fn disconnected(&self, ext: &Arc<Ext>, reason: &str);
    /// The process is gone and reaped.
    fn exited(&self, ext: &Arc<Ext>);
}

/// Counts live host threads; tests assert it drops to zero.
pub type ThreadCount = Arc<AtomicUsize>;

struct ThreadGuard(ThreadCount);

impl Drop for ThreadGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

const READER_STACK: usize = 256 * 1024;
const WRITER_STACK: usize = 64 * 1024;
const READ_CHUNK: usize = 8 * 1024;

impl Ext {
    /// Builds the extension around an already spawned process and starts its
    /// reader and writer threads.
    pub fn start(
        ident: Identity,
        spawned: process::Spawned,
        deadlines: Deadlines,
        dispatch: Arc<dyn Dispatch>,
        threads: ThreadCount,
    ) -> io::Result<Arc<Ext>> {
        let (queue, queue_rx) = crossbeam_channel::unbounded();
        let process::Spawned {
            child,
            stdin,
            stdout,
            pidfd,
        } = spawned;
        let ext = Arc::new(Ext {
            pid: child.id(),
            ident,
            deadlines,
            phase: Mutex::new(Phase::AwaitingHello),
            version: Mutex::new(String::new()),
            tool_cancel: AtomicBool::new(false),
            queue,
            queued_frames: AtomicUsize::new(0),
            queued_bytes: AtomicUsize::new(0),
            wake: Wake::new()?,
            closing: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            child: Mutex::new(child),
            exit: Mutex::new(None),
            threads: Mutex::new(Vec::new()),
            staged: Mutex::new(Some(Vec::new())),
            events: Mutex::new(HashSet::new()),
            intercepts: Mutex::new(HashSet::new()),
            warnings: Mutex::new(Vec::new()),
            conflicts: Mutex::new(Vec::new()),
            held: Mutex::new(Some(Vec::new())),
            noise: Mutex::new(Noise::default()),
            shutdown_acked: AtomicBool::new(false),
        });
        let name = &ext.ident.name;
        let w = {
            let (ext, threads, dispatch) = (ext.clone(), threads.clone(), dispatch.clone());
            threads.fetch_add(1, Ordering::SeqCst);
            std::thread::Builder::new()
                .name(format!("zut-w-{name}"))
                .stack_size(WRITER_STACK)
                .spawn(move || {
                    let _g = ThreadGuard(threads);
                    ext.write_loop(stdin, queue_rx, &*dispatch);
                })
        };
        let w = match w {
            Ok(h) => h,
            Err(e) => {
                threads.fetch_sub(1, Ordering::SeqCst);
                ext.kill_now();
                return Err(e);
            }
        };
        let r = {
            let (ext, threads) = (ext.clone(), threads.clone());
            threads.fetch_add(1, Ordering::SeqCst);
            std::thread::Builder::new()
                .name(format!("zut-r-{name}"))
                .stack_size(READER_STACK)
                .spawn(move || {
                    let _g = ThreadGuard(threads);
                    ext.read_loop(stdout, pidfd, &*dispatch);
                })
        };
        match r {
            Ok(r) => ext
                .threads
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend([w, r]),
            Err(e) => {
                threads.fetch_sub(1, Ordering::SeqCst);
                ext.stop_writer();
                ext.kill_now();
                let _ = w.join();
                return Err(e);
            }
        }
        Ok(ext)
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        lock(&self.phase).clone()
    }

    /// Moves to `phase` unless disconnected; returns whether it changed.
    pub fn set_phase(&self, phase: Phase) -> bool {
        let mut p = lock(&self.phase);
        if matches!(*p, Phase::Disconnected(_)) {
            return false;
        }
        *p = phase;
        true
    }

    /// Whether the extension can still be talked to.
    pub fn connected(&self) -> bool {
        !matches!(*lock(&self.phase), Phase::Disconnected(_))
    }

    /// Queues a frame. Overflowing the bound disconnects the extension.
    pub fn send(
        &self,
        frame: &HostFrame,
        dispatch: &dyn Dispatch,
        me: &Arc<Ext>,
    ) -> Result<(), SendError> {
        self.send_bytes(zut_ext::wire::encode_line(frame), None, false, dispatch, me)
    }

    /// Queues `shutdown`; stdin is closed once it is written.
    pub fn send_shutdown(&self, dispatch: &dyn Dispatch, me: &Arc<Ext>) -> Result<(), SendError> {
        self.send_bytes(
            zut_ext::wire::encode_line(&HostFrame::Shutdown),
            None,
            true,
            dispatch,
            me,
        )
    }

    /// Queues a frame with a ticket for later withdrawal.
    pub fn send_tracked(
        &self,
        frame: &HostFrame,
        dispatch: &dyn Dispatch,
        me: &Arc<Ext>,
    ) -> Result<Arc<Ticket>, SendError> {
        let ticket = Ticket::new();
        self.send_bytes(
            zut_ext::wire::encode_line(frame),
            Some(ticket.clone()),
            false,
            dispatch,
            me,
        )?;
        Ok(ticket)
    }

    fn send_bytes(
        &self,
        bytes: Vec<u8>,
        ticket: Option<Arc<Ticket>>,
        close_after: bool,
        dispatch: &dyn Dispatch,
        me: &Arc<Ext>,
    ) -> Result<(), SendError> {
        if let Phase::Disconnected(r) = self.phase() {
            return Err(SendError::Disconnected(r));
        }
        let len = bytes.len();
        let frames = self.queued_frames.fetch_add(1, Ordering::SeqCst);
        let before = self.queued_bytes.fetch_add(len, Ordering::SeqCst);
        // A single frame larger than the byte bound is allowed on an empty
        // queue, or it could never be sent at all.
        let overflow = frames >= QUEUE_FRAMES || (before > 0 && before + len > QUEUE_BYTES);
        let sent = !overflow
            && self
                .queue
                .send(ToWriter::Frame(Outgoing {
                    bytes,
                    ticket,
                    close_after,
                }))
                .is_ok();
        if sent {
            return Ok(());
        }
        self.queued_frames.fetch_sub(1, Ordering::SeqCst);
        self.queued_bytes.fetch_sub(len, Ordering::SeqCst);
        let reason = if overflow {
            format!(
                "disconnected: the host->extension queue overflowed ({QUEUE_FRAMES} frames / {} MiB); the extension is not reading its stdin",
                QUEUE_BYTES >> 20
            )
        } else {
            "disconnected: its stdin writer has stopped".to_string()
        };
        self.disconnect(&reason, dispatch, me);
        Err(SendError::Overflow(reason))
    }

    /// Tells the writer to stop after the frame it is writing, if any.
    fn stop_writer(&self) {
        let _ = self.queue.send(ToWriter::Stop);
    }

    /// Registers a pending call and returns its reply receiver.
    pub fn expect(&self, id: u64, kind: CallKind) -> Receiver<Reply> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        if let Phase::Disconnected(r) = self.phase() {
            let _ = tx.send(Err(r));
        } else {
            lock(&self.pending).insert(id, (kind, tx));
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
                Some((k, _)) if *k == kind => pending.remove(&id),
                _ => None,
            }
        };
        // Sent after the lock is released: the woken caller takes it next.
        waiter.is_some_and(|(_, tx)| tx.send(Ok(frame)).is_ok())
    }

    /// Disconnects once: fails every pending call at once, stops both
    /// threads and lets the reader end the process. Later calls do nothing.
    pub fn disconnect(&self, reason: &str, dispatch: &dyn Dispatch, me: &Arc<Ext>) {
        {
            let mut p = lock(&self.phase);
            if matches!(*p, Phase::Disconnected(_)) {
                return;
            }
            *p = Phase::Disconnected(reason.to_string());
        }
        process::log_line(&self.ident.log, reason);
        // Registry and event stream first, so a caller woken below already
        // sees the extension gone.
        dispatch.disconnected(me, reason);
        for (_, (_, tx)) in lock(&self.pending).drain() {
            let _ = tx.send(Err(format!("extension {} {reason}", self.ident.name)));
        }
        self.stop_writer();
        self.wake.wake();
    }

    /// Starts a graceful stop: the process must exit by `deadline`, after
    /// which the reader escalates to SIGTERM and SIGKILL.
    pub fn begin_close(&self, deadline: Instant) {
        *lock(&self.closing) = Some(deadline);
        self.wake.wake();
    }

    /// Joins both threads; call after [`Ext::begin_close`] or a disconnect.
    pub fn join(&self) {
        let handles: Vec<_> = lock(&self.threads).drain(..).collect();
        for h in handles {
            let _ = h.join();
        }
    }

    /// Whether a graceful stop has begun.
    pub fn closing(&self) -> bool {
        lock(&self.closing).is_some()
    }

    /// Sends SIGKILL to the whole group right away (spawn failures).
    fn kill_now(&self) {
        process::kill_group(self.pid, libc::SIGKILL);
        let _ = lock(&self.child).wait();
    }

    // ----- writer -----

    fn write_loop(
        self: &Arc<Self>,
        mut stdin: ChildStdin,
        queue: Receiver<ToWriter>,
        dispatch: &dyn Dispatch,
    ) {
        // A plain `recv` (not a `select!`) spins briefly before parking,
        // which saves a thread wake-up per frame under load. Stopping is a
        // message on the same channel; frames queued before a disconnect
        // are dropped by the `connected` check.
        while let Ok(ToWriter::Frame(out)) = queue.recv() {
            self.queued_frames.fetch_sub(1, Ordering::SeqCst);
            self.queued_bytes
                .fetch_sub(out.bytes.len(), Ordering::SeqCst);
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
                Err(Some(reason)) => return self.disconnect(&reason, dispatch, self),
                Err(None) => return,
            }
        }
    }

    /// Writes one whole frame; `Err(None)` when told to stop, `Err(Some)`
    /// with the disconnect reason on failure or timeout.
    fn write_frame(&self, stdin: &mut ChildStdin, mut buf: &[u8]) -> Result<(), Option<String>> {
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
                    match process::wait_ready(stdin.as_raw_fd(), libc::POLLOUT, wake, None, Some(until)) {
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
    /// which sees the exit, reports it with the exit status (`Ok(None)`
    /// here stops the writer quietly). Only a process still running after
    /// the exit drain closed its stdin on purpose and is disconnected here.
    fn stdin_closed(&self) -> Option<String> {
        let deadline = Instant::now() + self.deadlines.exit_drain;
        match process::exited_by(self.pid, deadline) {
            Some(true) => None,
            _ => Some("disconnected: its stdin is closed".into()),
        }
    }

    // ----- reader -----

    fn read_loop(
        self: &Arc<Self>,
        mut stdout: ChildStdout,
        pidfd: Option<OwnedFd>,
        dispatch: &dyn Dispatch,
    ) {
        let fd = stdout.as_raw_fd();
        let pidfd = pidfd.as_ref().map(|f| f.as_raw_fd());
        let mut lines = LineBuffer::default();
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
            let ready = match process::wait_ready(fd, libc::POLLIN, wake, watch_exit, deadline) {
                Ok(r) => r,
                Err(e) => {
                    self.disconnect(
                        &format!("disconnected: polling its stdout failed: {e}"),
                        dispatch,
                        self,
                    );
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
                        self.disconnect(
                            &format!("disconnected: reading its stdout failed: {e}"),
                            dispatch,
                            self,
                        );
                        break;
                    }
                }
                let over = lines.for_each_line(|line| self.on_line(line, dispatch));
                if over {
                    let msg = format!(
                        "disconnected: it wrote a stdout line longer than the {} MiB frame limit",
                        MAX_FRAME_BYTES >> 20
                    );
                    self.disconnect(&msg, dispatch, self);
                    break;
                }
            }
        }
        self.finish(pidfd, dispatch);
    }

    fn on_line(self: &Arc<Self>, line: &[u8], dispatch: &dyn Dispatch) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match zut_ext::wire::decode_ext_frame(line) {
            Ok(ExtFrame::Unknown) if self.phase() != Phase::AwaitingHello => {
                let name = serde_json::from_slice::<serde_json::Value>(line)
                    .ok()
                    .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
                    .unwrap_or_default();
                process::log_line(
                    &self.ident.log,
                    &format!("frame of unknown type {name:?} ignored"),
                );
            }
            Ok(frame) => dispatch.frame(self, frame),
            Err(e) => {
                let mut preview =
                    String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
                preview.retain(|c| !c.is_control());
                dispatch.malformed(self, e, preview);
            }
        }
    }

    /// Ends the process's life: waits for it to exit (until the closing
    /// deadline, or briefly after an EOF), escalates SIGTERM then SIGKILL,
    /// reaps it, and kills what is left of its process group.
    fn finish(self: &Arc<Self>, pidfd: Option<std::os::fd::RawFd>, dispatch: &dyn Dispatch) {
        let closing = *lock(&self.closing);
        let first_wait = match (closing, self.connected()) {
            (Some(d), _) => d,
            (None, true) => Instant::now() + self.deadlines.exit_drain,
            (None, false) => Instant::now(),
        };
        let mut status = self.wait_exit(pidfd, first_wait);
        if self.connected() && closing.is_some() {
            let how = status.map_or_else(|| "still running".to_string(), process::describe_exit);
            self.disconnect(&format!("stopped at shutdown ({how})"), dispatch, self);
        } else if self.connected() {
            let reason = match (&status, self.phase()) {
                (Some(s), Phase::AwaitingHello) => {
                    format!("exited before hello: {}", process::describe_exit(*s))
                }
                (None, Phase::AwaitingHello) => {
                    "closed its stdout before hello without exiting".to_string()
                }
                (Some(s), _) => format!("exited: {}", process::describe_exit(*s)),
                (None, _) => "closed its stdout".to_string(),
            };
            self.disconnect(&reason, dispatch, self);
        }
        if status.is_none() {
            process::kill_group(self.pid, libc::SIGTERM);
            status = self.wait_exit(pidfd, Instant::now() + self.deadlines.kill_grace);
        }
        if status.is_none() {
            process::kill_group(self.pid, libc::SIGKILL);
            status = lock(&self.child).wait().ok();
        }
        if process::group_alive(self.pid) {
            process::kill_group(self.pid, libc::SIGKILL);
        }
        if let Some(s) = status {
            process::log_line(
                &self.ident.log,
                &format!("{} ended: {}", self.ident.name, process::describe_exit(s)),
            );
        }
        *lock(&self.exit) = status;
        self.stop_writer();
        dispatch.exited(self);
    }

    /// Waits for the child to exit until `deadline`; reaps it if it did.
    fn wait_exit(
        &self,
        pidfd: Option<std::os::fd::RawFd>,
        deadline: Instant,
    ) -> Option<ExitStatus> {
        loop {
            if let Some(s) = process::try_reap(&mut lock(&self.child)) {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            match pidfd {
                Some(p) => {
                    let _ = process::wait_ready(p, libc::POLLIN, None, None, Some(deadline));
                }
                // Without a pidfd there is nothing to wait on: check often.
                None => std::thread::sleep(
                    process::until(deadline).min(std::time::Duration::from_millis(10)),
                ),
            }
        }
    }
}

/// Accumulates stdout bytes and yields complete lines, never holding more
/// than [`MAX_FRAME_BYTES`] of one line.
///
/// `buf[..filled]` is data; the rest is zeroed spare kept between reads, so
/// memory is zeroed once, not on every read. A long line grows the buffer
/// by an eighth at a time (not by doubling), so a 16 MiB frame costs about
/// 18 MiB here rather than 32.
#[derive(Default)]
struct LineBuffer {
    buf: Vec<u8>,
    filled: usize,
    /// Bytes at the front already known to contain no newline.
    scanned: usize,
}

/// The most one read asks for: a pipe holds 64 KiB.
const READ_MAX: usize = 64 * 1024;

impl LineBuffer {
    /// Reads what is available; `Ok(false)` on EOF.
    fn fill(&mut self, r: &mut impl Read) -> io::Result<bool> {
        // Reads grow with the pending line (few reads for a big frame, a
        // small buffer for an idle extension), and never go past one byte
        // over the limit: that byte is the proof.
        let chunk = (self.filled / 8).clamp(READ_CHUNK, READ_MAX);
        let want = chunk.min(MAX_FRAME_BYTES + 1 - self.filled.min(MAX_FRAME_BYTES));
        if self.buf.len() < self.filled + want {
            let grow = (self.filled / 8).max(want);
            self.buf.reserve_exact(self.filled + grow - self.buf.len());
            self.buf.resize(self.filled + grow, 0);
        }
        let end = self.buf.len().min(self.filled + want);
        loop {
            match r.read(&mut self.buf[self.filled..end]) {
                Ok(n) => {
                    self.filled += n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) => return Err(e),
            }
        }
    }

    /// Calls `f` for each complete line (without `\n` and one trailing
    /// `\r`); returns true if the unfinished line is over the limit.
    fn for_each_line(&mut self, mut f: impl FnMut(&[u8])) -> bool {
        let mut start = 0;
        let mut from = self.scanned;
        let filled = self.filled;
        while let Some(pos) = self.buf[from..filled].iter().position(|&b| b == b'\n') {
            let end = from + pos;
            let line = &self.buf[start..end];
            if line.len() > MAX_FRAME_BYTES {
                return true;
            }
            f(line.strip_suffix(b"\r").unwrap_or(line));
            start = end + 1;
            from = start;
        }
        if start > 0 {
            self.buf.copy_within(start..filled, 0);
            self.filled = filled - start;
        }
        self.scanned = self.filled;
        if self.filled > MAX_FRAME_BYTES {
            return true;
        }
        // After a big frame, give the memory back.
        if self.buf.capacity() > 4 * READ_MAX && self.filled < READ_CHUNK {
            self.buf.truncate(READ_CHUNK);
            self.buf.shrink_to(READ_CHUNK);
        }
        false
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[&[u8]]) -> (Vec<Vec<u8>>, bool) {
        let mut lb = LineBuffer::default();
        let mut out = Vec::new();
        let mut over = false;
        for c in chunks {
            lb.fill(&mut &c[..]).unwrap();
            over |= lb.for_each_line(|l| out.push(l.to_vec()));
        }
        (out, over)
    }

    #[test]
    fn splits_lines_across_reads() {
        let (lines, over) = lines_of(&[b"ab", b"c\r\nde", b"f\n\ng", b"h\n"]);
        assert_eq!(
            lines,
            [
                b"abc".to_vec(),
                b"def".to_vec(),
                b"".to_vec(),
                b"gh".to_vec()
            ]
        );
        assert!(!over);
    }

    #[test]
    fn a_big_line_is_assembled_and_memory_returned() {
        let big = vec![b'x'; 3 * READ_MAX + 17];
        let mut lb = LineBuffer::default();
        let mut src: &[u8] = &big;
        let mut got = Vec::new();
        while lb.fill(&mut src).unwrap() {
            lb.for_each_line(|l| got.push(l.len()));
        }
        lb.fill(&mut &b"\n"[..]).unwrap();
        lb.for_each_line(|l| got.push(l.len()));
        assert_eq!(got, [3 * READ_MAX + 17]);
        assert!(lb.buf.capacity() <= 4 * READ_MAX);
    }

    #[test]
    fn the_limit_is_enforced_without_buffering_past_it() {
        let mut lb = LineBuffer::default();
        let chunk = vec![b'y'; READ_MAX];
        let mut over = false;
        while !over {
            lb.fill(&mut &chunk[..]).unwrap();
            over = lb.for_each_line(|_| panic!("no line"));
            assert!(lb.filled <= MAX_FRAME_BYTES + 1);
        }
        assert!(lb.filled > MAX_FRAME_BYTES);
    }

    /// Fuzz target (see `crate::fuzz`): whatever the bytes and however
    /// they are cut into reads, the lines are exactly the `\n`-separated
    /// pieces with one trailing `\r` removed, and nothing is over the limit.
    #[test]
    fn fuzz_line_reader() {
        let seeds: &[&[u8]] = &[
            b"{\"type\":\"hello\"}\n{\"type\":\"ready\"}\n",
            b"a\r\nb\r\r\n\n\nc",
            b"\n\n\r\n",
        ];
        let mut rng = crate::fuzz::Rng::new(11);
        crate::fuzz::run("line-reader", seeds, 20_000, |bytes| {
            let pieces = crate::fuzz::chunks(&mut rng, bytes);
            let mut lb = LineBuffer::default();
            let mut got = Vec::new();
            let mut over = false;
            for piece in pieces {
                let mut src = piece;
                while lb.fill(&mut src).unwrap() {
                    over |= lb.for_each_line(|l| got.push(l.to_vec()));
                }
            }
            let mut want: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            want.pop(); // the unfinished last piece
            for l in &mut want {
                if l.last() == Some(&b'\r') {
                    l.pop();
                }
            }
            assert!(!over);
            assert_eq!(got, want);
        });
    }
}
