//! The extension host: starts extensions, routes their frames, answers the
//! agent's calls, and stops them.
//!
//! Shape, in one reading:
//! - [`transport`]: per extension, a writer and a reader thread and a
//!   request table. Every frame that is not a reply, every stray line, EOF
//!   and the exit go to one **inbox**, tagged with the instance and its
//!   generation. While a load runs, one `lobby` thread reads all of its
//!   extensions instead, and each gets its reader when the load is over.
//! - `dispatcher`: one thread that owns all host state (phases,
//!   registrations, subscriptions, warnings, load order, the registry, the
//!   session identity) and runs one `select!` over the urgent lane, the
//!   command channel, the inbox and the nearest deadline. After every change
//!   it publishes an immutable [`View`].
//! - [`HostHandle`]: `'static` and `Clone`, the only way in. A call reads
//!   the current [`View`], queues its frame on the extension's connection
//!   and waits in a `select!` against its deadline and the cancel token; the
//!   reader completes it straight from the request table.
//!
//! The path of a `tool_call`: `HostHandle::call_tool` → route from the
//! view → `Conn::expect` (request table) → `Conn::send_tracked` (written
//! straight into the pipe, or queued for the writer thread once the pipe
//! has been full) → extension → reader thread reads
//! `tool_result` → `Conn::resolve` → the caller's `select!` wakes.
//!
//! Front ends hear host events (`ext_loaded`, notes, status, panels…) on the
//! [`Event`](crate::events::Event) sink given at start; no callback runs on a foreign thread.

pub mod deadlines;
pub mod discovery;
mod dispatcher;
#[cfg(test)]
mod dispatcher_tests;
mod handle;
#[cfg(test)]
mod in_memory;
pub mod intercept;
mod lobby;
pub mod manifest;
pub mod process;
pub mod registry;
pub mod transport;

pub use handle::{
    CommandError, CommandReply, Host, HostHandle, Loading, Progress, StartError, Starting,
    StartingNames, ToolReply, PROGRESS_CAP,
};
pub use intercept::{
    bound_context, Confirm, ToolCallVerdict, ToolResultSeen, ToolResultVerdict, TurnStartVerdict,
    UserMessageVerdict, CONTEXT_CAP,
};

use crate::cancel::CancelToken;
use crate::events::EventSink;
use crossbeam_channel::{Receiver, Sender};
use deadlines::Deadlines;
use discovery::Entry;
use dispatcher::{Channels, Command, Dispatcher, Urgent};
use registry::{CommandEntry, Registry, ToolEntry};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use transport::{CallKind, Conn, Reply, ThreadCount, Withdrawal};
use zut_ext::wire::{ContentBlock, EventPayload, ExtFrame, HostFrame, Panel, SessionInfo};

/// The zut version reported in `hello_ack`.
pub const ZUT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the host tells extensions and how it behaves.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub zut_home: PathBuf,
    /// The user's project directory (`hello_ack.cwd`).
    pub cwd: PathBuf,
    pub provider: String,
    pub model: String,
    pub deadlines: Deadlines,
    /// Whether a person is at an interactive terminal (interactive tools
    /// are refused otherwise).
    pub interactive: bool,
    /// Where bare launchers (`python3`, `node`) are looked up; `None`: the
    /// process's `PATH`.
    pub search_path: Option<std::ffi::OsString>,
    /// Discover skills (off with `--no-skills`): user roots and the ones
    /// loaded extensions bundle, recomputed on every load.
    pub skills: bool,
    /// The session at start (`hello_ack.session`); later ones come through
    /// [`HostHandle::set_session`].
    pub session: Option<SessionInfo>,
}

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

/// A snapshot of one extension, for doctor, `/ext` and tests.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtReport {
    /// Instance id (unique per host process).
    pub id: u64,
    pub name: String,
    /// `flag`, `project` or `global`.
    pub source: String,
    pub pid: Option<u32>,
    pub log: PathBuf,
    pub version: String,
    pub phase: Phase,
    pub warnings: Vec<String>,
    /// Refused registrations.
    pub conflicts: Vec<String>,
    /// Stray stdout lines by kind.
    pub noise: HashMap<&'static str, u64>,
    pub commands: Vec<String>,
    pub tools: Vec<String>,
    /// `(name, deferred, interactive)` of each registered tool.
    pub tool_kinds: Vec<(String, bool, bool)>,
    /// How the process ended, once it has.
    pub exit: Option<std::process::ExitStatus>,
    /// Load failure, if any.
    pub error: Option<String>,
    /// It answered `shutdown` with `shutdown_ack`.
    pub shutdown_acked: bool,
}

/// What became of one discovered directory.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Disabled or shadowed: not started.
    Skipped,
    /// Theme-only: nothing to start.
    ThemeOnly,
    /// Could not be loaded; the full diagnostic.
    Failed(String),
    /// Started (it may have died since: see its phase).
    Started(Box<ExtReport>),
}

/// One discovered directory and its outcome.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub entry: Entry,
    pub outcome: Outcome,
}

/// The result of a load (startup or reload), in load order.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    pub generation: u64,
    pub loaded: Vec<Loaded>,
}

/// Where the host's events go: a front end's channel (a `Sender<Event>`
/// is a sink), or (doctor, benchmarks, tests) a sink called on the
/// dispatcher thread, which keeps host events and the replies they precede
/// in one order. Delivery never fails the host: a front end that stopped
/// listening only stops seeing events.
pub type EventOut = Arc<dyn EventSink>;

/// What callers read on their own threads: routes and subscriptions of
/// the extensions that are loaded and connected. Published whole by the
/// dispatcher after each change; never mutated.
#[derive(Default)]
pub struct View {
    pub generation: u64,
    pub registry: Registry,
    pub exts: Vec<ViewExt>,
    pub deadlines: Deadlines,
    /// The skills of this load (`None` with `--no-skills`).
    pub skills: Option<Arc<crate::skills::SkillSet>>,
    /// Said after "no command /x" or "unknown tool x" when extensions of
    /// this load are disabled ([`discovery::disabled_hint`]).
    pub disabled_hint: Option<String>,
}

/// One loaded extension in a [`View`].
pub struct ViewExt {
    pub conn: Arc<Conn>,
    pub id: u64,
    pub name: String,
    pub events: Vec<String>,
    pub intercepts: Vec<String>,
}

impl View {
    fn ext(&self, id: u64) -> Option<&ViewExt> {
        self.exts.iter().find(|e| e.id == id)
    }
}
