//! Every deadline the host enforces, in one place.
//!
//! Each has the protocol's default and an environment override (listed in
//! zut(1), ENVIRONMENT) so tests can shorten it instead of sleeping. Values are read once per
//! [`Deadlines::from_env`] call, so a host built in a test sees the test's
//! settings.

use std::time::Duration;

/// The deadlines of one host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Spawn → `hello`. The reference host has none; without one a silent
    /// extension would hang startup forever.
    pub hello: Duration,
    /// `hello_ack` → `ready`; after it the extension is auto-readied with a
    /// warning that doctor shows.
    pub ready: Duration,
    /// Silence after `hello_ack` (or after its last frame) that readies an
    /// extension which sent no `ready`.
    pub idle_ready: Duration,
    /// `command_invoked` → `command_response`.
    pub command: Duration,
    /// `tool_call` → `tool_result` (not for interactive tools).
    pub tool: Duration,
    /// `event_intercept` → response, per extension; then "allow".
    pub intercept: Duration,
    /// `shutdown` written → exit, per extension: the grace starts once the
    /// frames queued before `shutdown` are written, so none is cut off.
    pub shutdown_grace: Duration,
    /// SIGTERM → SIGKILL.
    pub kill_grace: Duration,
    /// One blocked frame write → disconnect.
    pub write: Duration,
    /// A cancelled `tool_call` whose write has begun may finish within this,
    /// else the frame is torn and the extension is disconnected.
    pub torn_frame: Duration,
    /// stdout EOF before `hello` → wait this long for the exit status, and
    /// after the process exits, how long to keep draining stdout.
    pub exit_drain: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            hello: Duration::from_millis(10_000),
            ready: Duration::from_millis(3_000),
            idle_ready: Duration::from_millis(250),
            command: Duration::from_millis(30_000),
            tool: Duration::from_millis(60_000),
            intercept: Duration::from_millis(5_000),
            shutdown_grace: Duration::from_millis(2_000),
            kill_grace: Duration::from_millis(crate::proc::DEFAULT_KILL_GRACE_MS),
            write: Duration::from_millis(5_000),
            torn_frame: Duration::from_millis(250),
            exit_drain: Duration::from_millis(1_000),
        }
    }
}

impl Deadlines {
    /// Defaults overridden by `ZUT_*_TIMEOUT_MS` / `ZUT_*_GRACE_MS`.
    pub fn from_env() -> Self {
        let d = Deadlines::default();
        let ms = |var: &str, default: Duration| {
            std::env::var(var)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_millis)
                .unwrap_or(default)
        };
        Deadlines {
            hello: ms("ZUT_HELLO_TIMEOUT_MS", d.hello),
            ready: ms("ZUT_READY_TIMEOUT_MS", d.ready),
            idle_ready: d.idle_ready,
            command: ms("ZUT_COMMAND_TIMEOUT_MS", d.command),
            tool: ms("ZUT_TOOL_TIMEOUT_MS", d.tool),
            intercept: ms("ZUT_INTERCEPT_TIMEOUT_MS", d.intercept),
            shutdown_grace: ms("ZUT_SHUTDOWN_GRACE_MS", d.shutdown_grace),
            kill_grace: ms(crate::proc::KILL_GRACE_ENV, d.kill_grace),
            write: ms("ZUT_WRITE_TIMEOUT_MS", d.write),
            torn_frame: d.torn_frame,
            exit_drain: d.exit_drain.min(ms("ZUT_HELLO_TIMEOUT_MS", d.hello)),
        }
    }
}

/// After an extension's stdout ends, how long to wait for its exit before
/// failing what waits on it (at most the exit drain): a crashing process
/// closes stdout a moment before its exit status can be read, and the
/// status is what explains the failure. A process still running after it
/// closed its stdout on purpose and is disconnected for that.
pub const EXIT_SETTLE: Duration = Duration::from_millis(100);

/// After an extension's exit, how long its stdout is still drained (at
/// most the exit drain): what a grandchild holding it writes later is not
/// the extension's.
pub const EXIT_DRAINED: Duration = Duration::from_millis(200);

/// Largest stdout line accepted from an extension: the protocol's limit,
/// owned by the wire crate (32 MiB, room for a 16 MiB payload plus JSON
/// escaping). A longer line disconnects the extension; the reader never
/// buffers more than this.
pub const MAX_FRAME_BYTES: usize = zut_ext::lines::MAX_LINE_BYTES;

/// Host → extension queue bounds (spec): frames and bytes.
pub const QUEUE_FRAMES: usize = 256;
/// See [`QUEUE_FRAMES`].
pub const QUEUE_BYTES: usize = 16 * 1024 * 1024;
