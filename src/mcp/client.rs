//! One MCP stdio server: its process, its JSON-RPC 2.0 connection, its tools.
//!
//! Shape: the child runs under a [`ChildGuard`] (own process group, SIGTERM
//! then SIGKILL, reaped on drop) with stderr appended to
//! `$ZUT_HOME/logs/mcp-NAME.log`. One reader thread splits stdout into
//! lines and routes them: answers to the request table, progress to the
//! call that asked for it, server requests answered at once (`ping` → `{}`,
//! `roots/list` → the project directory, anything else → -32601). One
//! writer thread owns stdin and flushes one message per line; dropping its
//! queue closes stdin.
//!
//! Invariants:
//! - every wait has a deadline: the handshake the server's startup timeout,
//!   a `tools/call` its tool timeout, restarted by each progress
//!   notification but never past ten times the timeout after it was sent;
//! - a request given up on (timeout, cancel) is removed from the table and
//!   the server hears `notifications/cancelled`; its late answer finds no
//!   entry and is dropped;
//! - the moment stdout ends every pending request fails at once, with the
//!   exit status and the tail of stderr;
//! - before `initialize` is answered a stdout line that is not JSON-RPC
//!   fails the start, naming the line; afterwards such lines are logged and
//!   skipped.

use super::config::ServerSpec;
use crate::cancel::CancelToken;
use crate::host::process::{describe_exit, log_line, open_log};
use crate::proc::ChildGuard;
use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zut_ext::lines::{Line, LineReader};

/// The protocol version zut asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// Versions zut accepts in a server's `initialize` answer, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The most tools one server may offer; the rest are left out with a log line.
pub const MAX_TOOLS: usize = 1024;
/// A progress notification restarts a call's deadline, up to this many
/// tool timeouts after the call was sent (the same cap as extensions').
pub use crate::host::PROGRESS_CAP;
/// After stdout ends, how long to wait for the exit status to report it.
const EXIT_WAIT: Duration = Duration::from_millis(500);
/// After the server is stopped, how long its reader and writer threads may
/// take to see their pipes close.
const THREAD_EXIT: Duration = Duration::from_secs(1);
/// Messages queued for the writer before a send waits.
const WRITE_QUEUE: usize = 256;

/// One tool a server offers, under the name the model sees.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// `mcp__<server>__<tool>`, sanitised ([`super::naming`]).
    pub name: String,
    /// The server's own name for it.
    pub remote: String,
    pub description: String,
    /// The tool's `inputSchema`.
    pub schema: Value,
    /// `annotations.readOnlyHint`.
    pub read_only: bool,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    /// No answer within the deadline.
    Timeout(Duration),
    Cancelled,
    /// The server is gone (exit, closed stdout, protocol violation).
    Closed(Closed),
    /// `initialize` was answered with a protocol version zut does not speak.
    Version(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Rpc(e) => write!(f, "error {}: {}", e.code, e.message),
            CallError::Timeout(d) => write!(f, "no answer within {} ms", d.as_millis()),
            CallError::Cancelled => write!(f, "cancelled"),
            CallError::Closed(why) => write!(f, "{why}"),
            CallError::Version(v) => write!(
                f,
                "it answered initialize with protocol version {v:?}; zut speaks {}",
                SUPPORTED_VERSIONS.join(", ")
            ),
        }
    }
}

impl std::error::Error for CallError {}

/// Why the connection to a server ended, or why a message could not be sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Closed {
    /// stdout ended and the server exited, with this status (as described
    /// by [`describe_exit`]).
    Exited(String),
    /// stdout ended and no exit status came soon after.
    Eof,
    /// A stdout line of this many bytes, over the limit.
    TooLong(usize),
    /// A stdout line that is not JSON-RPC before `initialize` was answered
    /// (its first 200 characters, sanitised).
    NotJsonRpc(String),
    /// zut stopped the server.
    ShutDown,
    /// The connection is closed and no reason was recorded yet.
    Unknown,
    /// The writer did not take a message within its deadline; the reason
    /// the connection is gone, if known.
    Stdin(Box<Closed>),
}

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Closed::Exited(status) => write!(f, "it exited ({status})"),
            Closed::Eof => write!(f, "it closed its stdout"),
            Closed::TooLong(n) => write!(f, "it sent a {n}-byte line, over the limit"),
            Closed::NotJsonRpc(line) => write!(
                f,
                "it printed a line that is not JSON-RPC before answering initialize: {line:?}"
            ),
            Closed::ShutDown => write!(f, "it was shut down"),
            Closed::Unknown => write!(f, "the connection is closed"),
            Closed::Stdin(why) => write!(f, "its stdin does not accept input: {why}"),
        }
    }
}

/// Why a server could not be started ([`Client::launch`],
/// [`Client::initialize`]).
#[derive(Debug)]
pub enum McpError {
    /// The log could not be opened or the process not spawned.
    Spawn {
        server: String,
        command: String,
        args: Vec<String>,
        source: std::io::Error,
    },
    /// A reader thread could not be started.
    Thread {
        server: String,
        source: std::io::Error,
    },
    /// The handshake or the first `tools/list` failed; the server was
    /// stopped.
    Start {
        server: String,
        cause: CallError,
        /// The startup timeout, which a [`CallError::Timeout`] is reported as.
        startup_timeout: Duration,
        /// The tail of the server's stderr ([`stderr_tail`]), a block to
        /// append, or empty.
        stderr: String,
    },
}

impl McpError {
    /// The server the error is about.
    pub fn server(&self) -> &str {
        match self {
            McpError::Spawn { server, .. }
            | McpError::Thread { server, .. }
            | McpError::Start { server, .. } => server,
        }
    }
}

impl std::fmt::Display for McpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpError::Spawn {
                server,
                command,
                args,
                source,
            } => write!(
                f,
                "MCP server {server} could not be started ({command} {}): {source}",
                args.join(" ")
            ),
            McpError::Thread { server, source } => {
                write!(f, "MCP server {server}: cannot start a thread: {source}")
            }
            McpError::Start {
                server,
                cause,
                startup_timeout,
                stderr,
            } => {
                write!(f, "MCP server {server} failed to start: ")?;
                match cause {
                    CallError::Timeout(_) => write!(
                        f,
                        "did not finish starting (initialize and tools/list) within {} ms",
                        startup_timeout.as_millis()
                    )?,
                    other => write!(f, "{other}")?,
                }
                write!(f, "{stderr}")
            }
        }
    }
}

impl std::error::Error for McpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            McpError::Spawn { source, .. } | McpError::Thread { source, .. } => Some(source),
            McpError::Start { cause, .. } => Some(cause),
        }
    }
}

/// One `notifications/progress` of a running call: the same report an
/// extension's `tool_progress` gives.
pub use crate::host::Progress;

/// What the reader hands a waiting request.
enum Reply {
    Done(Result<Value, RpcError>),
    Progress(Progress),
}

/// Called (on the reader thread) with the new tools after a re-list.
pub type OnChange = Arc<dyn Fn(&[Tool]) + Send + Sync>;

/// State the reader, the writer and callers share.
struct Shared {
    name: String,
    spec: ServerSpec,
    log: PathBuf,
    project: PathBuf,
    pending: Mutex<HashMap<u64, Sender<Reply>>>,
    next_id: AtomicU64,
    /// The writer's queue; `None` once stdin is closed.
    out: Mutex<Option<Sender<String>>>,
    /// Why the connection ended, once it has.
    dead: Mutex<Option<Closed>>,
    /// `initialize` was answered: stray stdout lines are skipped from now on.
    initialized: AtomicBool,
    tools: Mutex<Arc<Vec<Tool>>>,
    on_change: Mutex<Option<OnChange>>,
    /// The child, until shutdown takes it (the reader borrows it for the
    /// exit status).
    child: Mutex<Option<ChildGuard>>,
    /// A `list_changed` re-list in progress.
    relist: Mutex<Option<Relist>>,
}

/// A re-list driven by the reader: each page's answer is handled where it
/// is read, so the new tools are in place before any later answer (a call
/// the model made after the change) is delivered.
struct Relist {
    /// The id of the `tools/list` page request awaited.
    id: u64,
    tools: Vec<Tool>,
    pages: usize,
    started: Instant,
    /// Another `list_changed` came meanwhile: list again when done.
    again: bool,
}

/// What the server said about itself in its `initialize` answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerInfo {
    /// The protocol version it answered with.
    pub protocol_version: String,
    /// `serverInfo.name` and `.version`.
    pub name: String,
    pub version: String,
}

/// A started server (initialised once [`Client::initialize`] returned `Ok`).
pub struct Client {
    shared: Arc<Shared>,
    info: Mutex<ServerInfo>,
    reader: Mutex<Option<std::thread::JoinHandle<()>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Disconnects once both threads have ended.
    threads_done: Receiver<()>,
    /// Handed to the reader thread when it starts.
    reader_alive: Mutex<Option<Sender<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The log file of server `name`.
pub fn log_path(zut_home: &Path, name: &str) -> PathBuf {
    crate::paths::logs_dir(zut_home).join(format!("mcp-{name}.log"))
}

impl Client {
    /// [`Client::launch`] and [`Client::initialize`]: a server ready to call.
    pub fn start(
        spec: &ServerSpec,
        project: &Path,
        zut_home: &Path,
        on_change: Option<OnChange>,
    ) -> Result<Client, McpError> {
        let client = Client::launch(spec, project, zut_home, on_change)?;
        client.initialize()?;
        Ok(client)
    }

    /// Spawns the server and its reader and writer threads.
    pub fn launch(
        spec: &ServerSpec,
        project: &Path,
        zut_home: &Path,
        on_change: Option<OnChange>,
    ) -> Result<Client, McpError> {
        let log = log_path(zut_home, &spec.name);
        let (client, stdout) =
            Self::spawn(spec, project, &log).map_err(|source| McpError::Spawn {
                server: spec.name.clone(),
                command: spec.command.clone(),
                args: spec.args.clone(),
                source,
            })?;
        *lock(&client.shared.on_change) = on_change;
        let shared = client.shared.clone();
        let alive = lock(&client.reader_alive).take();
        let reader = std::thread::Builder::new()
            .name(format!("mcp-read-{}", spec.name))
            .spawn(move || {
                read_loop(shared, stdout);
                drop(alive);
            })
            .map_err(|source| McpError::Thread {
                server: spec.name.clone(),
                source,
            })?;
        *lock(&client.reader) = Some(reader);
        Ok(client)
    }

    /// Runs the handshake and lists the tools within the startup timeout
    /// (counted from now). The error names the server and says what went
    /// wrong, with the tail of its stderr; the server is then stopped.
    pub fn initialize(&self) -> Result<(), McpError> {
        let deadline = Instant::now() + self.shared.spec.startup_timeout;
        self.handshake(deadline).map_err(|cause| {
            let e = McpError::Start {
                server: self.shared.name.clone(),
                cause,
                startup_timeout: self.shared.spec.startup_timeout,
                stderr: stderr_tail(&self.shared.log),
            };
            self.shutdown(Duration::ZERO);
            e
        })
    }

    fn spawn(
        spec: &ServerSpec,
        project: &Path,
        log: &Path,
    ) -> std::io::Result<(Client, std::process::ChildStdout)> {
        let stderr = open_log(log, &spec.name, "mcp")?;
        let mut cmd = Command::new(&spec.command);
        cmd.args(&spec.args)
            .envs(&spec.env)
            .current_dir(spec.cwd.as_deref().unwrap_or(project))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr));
        let mut guard = ChildGuard::spawn(&mut cmd)?;
        let (Some(stdin), Some(stdout)) = (guard.take_stdin(), guard.take_stdout()) else {
            return Err(std::io::Error::other("child pipes missing"));
        };
        let (tx, rx) = crossbeam_channel::bounded::<String>(WRITE_QUEUE);
        let shared = Arc::new(Shared {
            name: spec.name.clone(),
            spec: spec.clone(),
            log: log.to_path_buf(),
            project: project.to_path_buf(),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            out: Mutex::new(Some(tx)),
            dead: Mutex::new(None),
            initialized: AtomicBool::new(false),
            tools: Mutex::new(Arc::new(Vec::new())),
            on_change: Mutex::new(None),
            child: Mutex::new(Some(guard)),
            relist: Mutex::new(None),
        });
        let wshared = shared.clone();
        let (alive, threads_done) = crossbeam_channel::bounded::<()>(0);
        let walive = alive.clone();
        let writer = std::thread::Builder::new()
            .name(format!("mcp-write-{}", spec.name))
            .spawn(move || {
                write_loop(wshared, stdin, rx);
                drop(walive);
            })?;
        Ok((
            Client {
                shared,
                info: Mutex::new(ServerInfo::default()),
                reader: Mutex::new(None),
                writer: Mutex::new(Some(writer)),
                threads_done,
                reader_alive: Mutex::new(Some(alive)),
            },
            stdout,
        ))
    }

    /// `initialize` → `notifications/initialized` → `tools/list`.
    fn handshake(&self, deadline: Instant) -> Result<(), CallError> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"roots": {"listChanged": false}},
            "clientInfo": {"name": "zut", "version": env!("CARGO_PKG_VERSION")},
        });
        let none = CancelToken::never();
        let init = self
            .shared
            .request("initialize", params, deadline, None, &none, &mut |_| {})?;
        let version = init
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Err(CallError::Version(version.to_string()));
        }
        let info = init.get("serverInfo").unwrap_or(&Value::Null);
        let field = |k: &str| {
            info.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        *lock(&self.info) = ServerInfo {
            protocol_version: version.to_string(),
            name: field("name"),
            version: field("version"),
        };
        self.shared.initialized.store(true, Ordering::SeqCst);
        self.shared
            .notify("notifications/initialized", json!({}))
            .map_err(CallError::Closed)?;
        let tools = self.shared.list_tools(deadline)?;
        *lock(&self.shared.tools) = Arc::new(tools);
        Ok(())
    }

    /// What the server said about itself (empty before `initialize`).
    pub fn info(&self) -> ServerInfo {
        lock(&self.info).clone()
    }

    /// The server's name in the config.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The tools offered now (after the last re-list).
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        lock(&self.shared.tools).clone()
    }

    /// Why the connection ended, if it has.
    pub fn gone(&self) -> Option<Closed> {
        lock(&self.shared.dead).clone()
    }

    /// The server's stderr log.
    pub fn log(&self) -> &Path {
        &self.shared.log
    }

    /// `tools/call` of the server's tool `remote`, with a progress token;
    /// `progress` hears each progress notification. The deadline is the
    /// server's tool timeout, restarted by progress up to [`PROGRESS_CAP`]
    /// timeouts after sending.
    pub fn call(
        &self,
        remote: &str,
        args: &Value,
        cancel: &CancelToken,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Value, CallError> {
        let timeout = self.shared.spec.tool_timeout;
        let params = json!({"name": remote, "arguments": args});
        self.shared.request(
            "tools/call",
            params,
            Instant::now() + timeout,
            Some(timeout),
            cancel,
            progress,
        )
    }

    /// Closes stdin, waits up to `grace` for the server to exit, then
    /// SIGTERM, the kill grace and SIGKILL to its group; reaps it and joins
    /// both threads (unless one is still blocked `THREAD_EXIT` (1 s) later, on
    /// a pipe a process outside the group keeps open: it is left behind).
    pub fn shutdown(&self, grace: Duration) {
        lock(&self.shared.out).take();
        let child = lock(&self.shared.child).take();
        if let Some(mut child) = child {
            let exited = child
                .wait_until(Some(Instant::now() + grace))
                .ok()
                .flatten();
            if exited.is_none() {
                child.terminate(crate::proc::kill_grace_from_env());
            }
            drop(child);
        }
        lock(&self.reader_alive).take();
        let ended = matches!(
            self.threads_done.recv_timeout(THREAD_EXIT),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        );
        let threads = [lock(&self.writer).take(), lock(&self.reader).take()];
        if ended {
            for t in threads.into_iter().flatten() {
                let _ = t.join();
            }
        } else {
            log::warn!(
                "MCP server {}: its pipes stay open after it was stopped; not waiting for them",
                self.shared.name
            );
        }
        lock(&self.shared.dead).get_or_insert(Closed::ShutDown);
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.shutdown(Duration::ZERO);
    }
}

impl Shared {
    fn send_line(&self, msg: &Value) -> Result<(), Closed> {
        let tx = lock(&self.out).clone();
        let Some(tx) = tx else {
            return Err(self.gone_reason());
        };
        tx.send_timeout(msg.to_string(), Duration::from_secs(5))
            .map_err(|_| Closed::Stdin(Box::new(self.gone_reason())))
    }

    fn gone_reason(&self) -> Closed {
        lock(&self.dead).clone().unwrap_or(Closed::Unknown)
    }

    fn notify(&self, method: &str, params: Value) -> Result<(), Closed> {
        self.send_line(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Sends a request and waits for its answer. `restart` is the tool
    /// timeout a progress notification restarts the deadline by.
    fn request(
        &self,
        method: &str,
        mut params: Value,
        deadline: Instant,
        restart: Option<Duration>,
        cancel: &CancelToken,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Value, CallError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = crossbeam_channel::unbounded();
        if restart.is_some() {
            params["_meta"] = json!({"progressToken": id});
        }
        lock(&self.pending).insert(id, tx);
        if let Some(why) = lock(&self.dead).clone() {
            lock(&self.pending).remove(&id);
            return Err(CallError::Closed(why));
        }
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(why) = self.send_line(&msg) {
            lock(&self.pending).remove(&id);
            return Err(CallError::Closed(why));
        }
        let sent = Instant::now();
        let cap = restart.map(|t| sent + t * PROGRESS_CAP);
        let result = self.wait(&rx, deadline, restart, cap, cancel, progress);
        if lock(&self.pending).remove(&id).is_some() {
            if let Err(e @ (CallError::Timeout(_) | CallError::Cancelled)) = &result {
                let reason = match e {
                    CallError::Cancelled => "the user aborted the call",
                    _ => "zut stopped waiting: timeout",
                };
                let _ = self.notify(
                    "notifications/cancelled",
                    json!({"requestId": id, "reason": reason}),
                );
            }
        }
        result
    }

    fn wait(
        &self,
        rx: &Receiver<Reply>,
        mut deadline: Instant,
        restart: Option<Duration>,
        cap: Option<Instant>,
        cancel: &CancelToken,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Value, CallError> {
        let started = Instant::now();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            crossbeam_channel::select! {
                recv(rx) -> m => match m {
                    Ok(Reply::Done(r)) => return r.map_err(CallError::Rpc),
                    Ok(Reply::Progress(p)) => {
                        progress(p);
                        if let (Some(t), Some(cap)) = (restart, cap) {
                            deadline = (Instant::now() + t).min(cap);
                        }
                    }
                    Err(_) => return Err(CallError::Closed(self.gone_reason())),
                },
                recv(cancel.receiver()) -> _ => return Err(CallError::Cancelled),
                default(left) => {
                    return Err(CallError::Timeout(deadline.saturating_duration_since(started)))
                }
            }
        }
    }

    /// `tools/list`, following `nextCursor`, filtered by the server's
    /// `enabled_tools` / `disabled_tools` and capped at [`MAX_TOOLS`].
    fn list_tools(&self, deadline: Instant) -> Result<Vec<Tool>, CallError> {
        let none = CancelToken::never();
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        // A server that hands back the same cursor for ever ends here.
        for _ in 0..MAX_TOOLS {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request("tools/list", params, deadline, None, &none, &mut |_| {})?;
            cursor = self.page_tools(&page, &mut tools);
            if cursor.is_none() {
                break;
            }
        }
        self.cap_tools(&mut tools);
        Ok(tools)
    }

    /// Adds one `tools/list` page's tools; the next cursor, if any.
    fn page_tools(&self, page: &Value, tools: &mut Vec<Tool>) -> Option<String> {
        for t in page
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(tool) = self.tool_of(t) {
                tools.push(tool);
            }
        }
        page.get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
    }

    fn cap_tools(&self, tools: &mut Vec<Tool>) {
        if tools.len() > MAX_TOOLS {
            log_line(
                &self.log,
                &format!(
                    "{} tools offered; only the first {MAX_TOOLS} are used",
                    tools.len()
                ),
            );
            tools.truncate(MAX_TOOLS);
        }
    }

    fn tool_of(&self, t: &Value) -> Option<Tool> {
        let remote = t.get("name").and_then(Value::as_str)?;
        let spec = &self.spec;
        if spec
            .enabled_tools
            .as_ref()
            .is_some_and(|on| !on.iter().any(|n| n == remote))
            || spec.disabled_tools.iter().any(|n| n == remote)
        {
            return None;
        }
        let description = t
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let schema = t
            .get("inputSchema")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({"type": "object"}));
        let read_only = t
            .pointer("/annotations/readOnlyHint")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Some(Tool {
            name: super::naming::tool_name(&self.name, remote),
            remote: remote.to_string(),
            description,
            schema,
            read_only,
        })
    }

    /// Handles one stdout line; `Err` ends the connection with that reason.
    fn handle_line(self: &Arc<Self>, line: &[u8]) -> Result<(), Closed> {
        let msg = serde_json::from_slice::<Value>(line)
            .ok()
            .filter(|v| v.get("jsonrpc").and_then(Value::as_str) == Some("2.0"));
        let Some(msg) = msg else {
            let text = String::from_utf8_lossy(line);
            let shown: String = text.chars().take(200).collect();
            if !self.initialized.load(Ordering::SeqCst) {
                return Err(Closed::NotJsonRpc(
                    crate::sanitize::sanitize(&shown).into_owned(),
                ));
            }
            log_line(
                &self.log,
                &format!("skipped a stdout line that is not JSON-RPC: {shown}"),
            );
            return Ok(());
        };
        let method = msg.get("method").and_then(Value::as_str);
        match (method, msg.get("id")) {
            (Some(m), Some(id)) if !id.is_null() => self.answer_request(m, id.clone(), &msg),
            (Some(m), _) => self.notification(m, msg.get("params").unwrap_or(&Value::Null)),
            (None, Some(id)) => self.response(id, &msg),
            (None, None) => {}
        }
        Ok(())
    }

    fn response(&self, id: &Value, msg: &Value) {
        let Some(id) = id.as_u64() else {
            return;
        };
        let result = match msg.get("error") {
            Some(e) => Err(RpcError {
                code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            }),
            None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
        };
        // The first answer is initialize's: from here on stray stdout lines
        // are skipped, also one read before the handshake thread wakes.
        self.initialized.store(true, Ordering::SeqCst);
        if self.relist_page(id, &result) {
            return;
        }
        // Unknown or abandoned ids (a late answer after cancel) are dropped.
        if let Some(tx) = lock(&self.pending).remove(&id) {
            let _ = tx.send(Reply::Done(result));
        }
    }

    fn answer_request(&self, method: &str, id: Value, _msg: &Value) {
        let reply = match method {
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "roots/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": [{
                "uri": format!("file://{}", self.project.display()),
                "name": self.project.file_name().and_then(|n| n.to_str()).unwrap_or("project"),
            }]}}),
            other => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32601, "message": format!("zut does not support {other}")
            }}),
        };
        let _ = self.send_line(&reply);
    }

    fn notification(self: &Arc<Self>, method: &str, params: &Value) {
        match method {
            "notifications/progress" => {
                let Some(token) = params.get("progressToken").and_then(Value::as_u64) else {
                    return;
                };
                let p = Progress {
                    message: params
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    progress: params.get("progress").and_then(Value::as_f64),
                    total: params.get("total").and_then(Value::as_f64),
                };
                if let Some(tx) = lock(&self.pending).get(&token) {
                    let _ = tx.send(Reply::Progress(p));
                }
            }
            "notifications/message" => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info");
                let data = match params.get("data") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                log_line(&self.log, &format!("server log ({level}): {data}"));
            }
            "notifications/tools/list_changed" => self.relist(),
            _ => {}
        }
    }

    /// Starts a re-list after `list_changed` (or notes that another is
    /// needed when one is running and not stale).
    fn relist(&self) {
        let mut r = lock(&self.relist);
        if let Some(cur) = r.as_mut() {
            if cur.started.elapsed() < self.spec.startup_timeout {
                cur.again = true;
                return;
            }
        }
        *r = self.send_list_page(None).map(|id| Relist {
            id,
            tools: Vec::new(),
            pages: 1,
            started: Instant::now(),
            again: false,
        });
    }

    /// Sends one `tools/list` page request whose answer the reader handles.
    fn send_list_page(&self, cursor: Option<&str>) -> Option<u64> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let params = match cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
        match self.send_line(&msg) {
            Ok(()) => Some(id),
            Err(e) => {
                log_line(&self.log, &format!("re-listing tools failed: {e}"));
                None
            }
        }
    }

    /// Handles the answer `id` if it is the re-list's page; true if it was.
    fn relist_page(&self, id: u64, result: &Result<Value, RpcError>) -> bool {
        let mut r = lock(&self.relist);
        let Some(mut cur) = r.take_if(|c| c.id == id) else {
            return false;
        };
        let page = match result {
            Ok(p) => p,
            Err(e) => {
                log_line(
                    &self.log,
                    &format!("re-listing tools failed: error {}: {}", e.code, e.message),
                );
                return true;
            }
        };
        if let Some(cursor) = self.page_tools(page, &mut cur.tools) {
            if cur.pages < MAX_TOOLS {
                if let Some(next) = self.send_list_page(Some(&cursor)) {
                    cur.id = next;
                    cur.pages += 1;
                    *r = Some(cur);
                }
                return true;
            }
        }
        drop(r);
        let mut tools = cur.tools;
        self.cap_tools(&mut tools);
        let tools = Arc::new(tools);
        *lock(&self.tools) = tools.clone();
        let cb = lock(&self.on_change).clone();
        if let Some(cb) = cb {
            cb(&tools);
        }
        if cur.again {
            self.relist();
        }
        true
    }

    /// stdout ended or a fatal line: record why and fail every request.
    fn close(&self, why: Closed) {
        lock(&self.dead).get_or_insert(why);
        lock(&self.pending).clear();
    }

    /// The exit status, if the child exits soon after its stdout closed.
    fn exit_status(&self) -> Option<String> {
        let mut child = lock(&self.child);
        let status = child
            .as_mut()?
            .wait_until(Some(Instant::now() + EXIT_WAIT))
            .ok()
            .flatten()?;
        Some(describe_exit(status))
    }
}

fn read_loop(shared: Arc<Shared>, stdout: std::process::ChildStdout) {
    let mut reader = LineReader::new(stdout);
    loop {
        match reader.next_line() {
            Ok(Line::Data(l)) => {
                if let Err(why) = shared.handle_line(&l) {
                    shared.close(why);
                    if let Some(c) = lock(&shared.child).as_ref() {
                        c.signal_group(rustix::process::Signal::KILL);
                    }
                    return;
                }
            }
            Ok(Line::TooLong(n)) => {
                shared.close(Closed::TooLong(n));
                return;
            }
            Ok(Line::Eof) | Err(_) => {
                let why = match shared.exit_status() {
                    Some(s) => Closed::Exited(s),
                    None => Closed::Eof,
                };
                shared.close(why);
                return;
            }
        }
    }
}

fn write_loop(shared: Arc<Shared>, mut stdin: std::process::ChildStdin, rx: Receiver<String>) {
    for line in rx {
        let ok = stdin
            .write_all(line.as_bytes())
            .and_then(|_| stdin.write_all(b"\n"))
            .and_then(|_| stdin.flush());
        if let Err(e) = ok {
            log_line(&shared.log, &format!("writing to the server failed: {e}"));
            return;
        }
    }
}

/// The last lines of this run's stderr, as a block to append to an error.
pub use crate::host::process::stderr_tail;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn spec(name: &str, command: &str, args: &[&str], startup_ms: u64) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            cwd: None,
            startup_timeout: Duration::from_millis(startup_ms),
            tool_timeout: Duration::from_secs(5),
            enabled: true,
            deferred: false,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            confirm: false,
            origin: "flag".into(),
            file: PathBuf::new(),
        }
    }

    fn start(s: &ServerSpec) -> McpError {
        let home = tempfile::tempdir().unwrap();
        match Client::start(s, home.path(), home.path(), None) {
            Ok(_) => panic!("{} started", s.name),
            Err(e) => e,
        }
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_carrying_the_io_error() {
        let e = start(&spec("gone", "/nonexistent/zut-mcp", &["-x"], 5000));
        let McpError::Spawn { server, source, .. } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(server, "gone");
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        assert!(std::error::Error::source(&e).is_some());
        assert!(e
            .to_string()
            .starts_with("MCP server gone could not be started (/nonexistent/zut-mcp -x): "));
    }

    #[test]
    fn a_server_that_exits_is_closed_with_its_status() {
        let e = start(&spec("quits", "sh", &["-c", "exit 3"], 5000));
        let McpError::Start { cause, .. } = &e else {
            panic!("{e:?}");
        };
        match cause {
            CallError::Closed(Closed::Exited(status)) => assert!(status.contains('3'), "{status}"),
            other => panic!("{other:?}"),
        }
        assert!(e
            .to_string()
            .starts_with("MCP server quits failed to start: it exited ("));
    }

    #[test]
    fn a_line_that_is_not_json_rpc_is_a_protocol_error_naming_it() {
        let e = start(&spec(
            "noisy",
            "sh",
            &["-c", "echo hello; exec sleep 5"],
            5000,
        ));
        let McpError::Start { cause, .. } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(
            cause,
            &CallError::Closed(Closed::NotJsonRpc("hello".into()))
        );
        assert_eq!(
            e.to_string(),
            "MCP server noisy failed to start: it printed a line that is not JSON-RPC \
             before answering initialize: \"hello\""
        );
    }

    #[test]
    fn a_silent_server_times_out_and_is_reported_with_the_startup_timeout() {
        let e = start(&spec("mute", "sleep", &["5"], 200));
        let McpError::Start { cause, .. } = &e else {
            panic!("{e:?}");
        };
        assert!(matches!(cause, CallError::Timeout(_)), "{cause:?}");
        assert_eq!(
            e.to_string(),
            "MCP server mute failed to start: did not finish starting \
             (initialize and tools/list) within 200 ms"
        );
    }

    #[test]
    fn messages_keep_their_text() {
        let cases: Vec<(CallError, &str)> = vec![
            (
                CallError::Rpc(RpcError {
                    code: -32602,
                    message: "bad".into(),
                }),
                "error -32602: bad",
            ),
            (
                CallError::Timeout(Duration::from_millis(1500)),
                "no answer within 1500 ms",
            ),
            (CallError::Cancelled, "cancelled"),
            (
                CallError::Version("1999-01-01".into()),
                "it answered initialize with protocol version \"1999-01-01\"; \
                 zut speaks 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05",
            ),
            (CallError::Closed(Closed::Eof), "it closed its stdout"),
            (
                CallError::Closed(Closed::TooLong(9)),
                "it sent a 9-byte line, over the limit",
            ),
            (CallError::Closed(Closed::ShutDown), "it was shut down"),
            (
                CallError::Closed(Closed::Stdin(Box::new(Closed::Unknown))),
                "its stdin does not accept input: the connection is closed",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
    }
}
