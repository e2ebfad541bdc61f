//! `zut mcp serve`: zut as an MCP stdio server.
//!
//! It offers the built-in tools, every loaded extension's tools and every
//! MCP server's tools (`--tools a,b` restricts them), and runs each call
//! through the agent's own path ([`Agent::call_one`]): extension
//! interception, Claude Code hooks, and confirmation, which nobody can give
//! here, so bash/write/edit and confirm-needing MCP tools are refused with
//! an error naming `--yolo` unless zut was started with it.
//!
//! Shape: the main thread reads stdin and answers `initialize`, `ping` and
//! `tools/list` itself; calls go to one worker thread that owns the agent
//! and runs them in order. A `notifications/cancelled` for the running call
//! cancels it (no answer is sent for it); a queued one is dropped. Progress
//! of a call made with a `progressToken` goes back as
//! `notifications/progress`; when the tool set changes (a server finished
//! starting, an extension registered late) the client hears
//! `notifications/tools/list_changed`. stdin's end stops everything.

use super::client::SUPPORTED_VERSIONS;
use crate::agent::{self, Agent};
use crate::cancel::{self, CancelToken, Canceller};
use crate::events::{Event, EventSink};
use crate::host::{discovery, HostConfig, HostHandle};
use crate::provider::{Provider, ProviderError, Request, Response, StreamEvent};
use crossbeam_channel::Receiver;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zut_ext::lines::{Line, LineReader};
use zut_ext::wire::ContentBlock;

/// How often the tool set is compared with the one the client last saw.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// What `zut mcp serve` was asked for.
pub struct ServeOptions {
    pub cwd: PathBuf,
    pub zut_home: PathBuf,
    pub ext_paths: Vec<PathBuf>,
    pub no_extensions: bool,
    /// `--tools a,b`: only these.
    pub tools: Option<Vec<String>>,
    pub yolo: bool,
    pub no_mcp: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The serving process never asks a model.
struct NoModel;

impl Provider for NoModel {
    fn name(&self) -> &str {
        "none"
    }
    fn model(&self) -> &str {
        ""
    }
    fn complete(
        &mut self,
        _req: &Request<'_>,
        _on_event: &mut dyn FnMut(StreamEvent<'_>),
        _cancel: &CancelToken,
    ) -> Result<Response, ProviderError> {
        Err(ProviderError::Config(
            "zut mcp serve makes no model calls".into(),
        ))
    }
}

/// stdout, one JSON-RPC message per line, flushed.
#[derive(Clone)]
struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    fn send(&self, msg: &Value) {
        let mut o = lock(&self.0);
        let _ = writeln!(o, "{msg}");
        let _ = o.flush();
    }
}

/// The call the worker is running: its JSON-RPC id, progress token and
/// canceller.
#[derive(Default)]
struct Current {
    id: Option<Value>,
    call_id: String,
    token: Option<Value>,
    cancel: Option<Canceller>,
}

/// Turns the agent's `tool_progress` events for the running call into
/// `notifications/progress`; everything else is dropped.
struct ProgressSink {
    out: Out,
    current: Arc<Mutex<Current>>,
}

impl EventSink for ProgressSink {
    fn emit(&self, event: Event) {
        let Event::ToolProgress {
            id,
            message,
            progress,
            total,
            ..
        } = event
        else {
            return;
        };
        let cur = lock(&self.current);
        let Some(token) = cur.token.clone().filter(|_| cur.call_id == id) else {
            return;
        };
        drop(cur);
        let mut params = json!({"progressToken": token, "progress": progress.unwrap_or(0.0)});
        if let Some(t) = total {
            params["total"] = json!(t);
        }
        if let Some(m) = message {
            params["message"] = json!(m);
        }
        self.out
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}));
    }
}

struct Job {
    id: Value,
    name: String,
    args: Value,
    token: Option<Value>,
}

/// Runs the server until stdin ends; returns the exit status.
pub fn run(opts: ServeOptions) -> i32 {
    let out = Out(Arc::new(Mutex::new(std::io::stdout())));
    let (events, drained) = crossbeam_channel::unbounded::<Event>();
    let events: Arc<dyn EventSink> = Arc::new(events);
    let logger = std::thread::spawn(move || log_events(drained));
    let hub = super::hub::Hub::start(
        super::config::load(&super::config::Sources {
            cwd: opts.cwd.clone(),
            zut_home: opts.zut_home.clone(),
            files: Vec::new(),
            none: opts.no_mcp,
        }),
        &opts.cwd,
        &opts.zut_home,
        events.clone(),
    );
    let disc = discovery::Options {
        cwd: opts.cwd.clone(),
        zut_home: opts.zut_home.clone(),
        ext_paths: opts.ext_paths.clone(),
        no_extensions: opts.no_extensions,
    };
    let saved = crate::config::load(&opts.zut_home).unwrap_or_default();
    let config = HostConfig {
        zut_home: opts.zut_home.clone(),
        cwd: opts.cwd.clone(),
        provider: saved.provider.unwrap_or_default(),
        model: saved.model.unwrap_or_default(),
        deadlines: crate::host::deadlines::Deadlines::from_env(),
        interactive: false,
        search_path: None,
        skills: false,
        session: None,
    };
    let never = CancelToken::never();
    let host = match HostHandle::start(
        config,
        discovery::discover(&disc),
        Some(disc),
        events.clone(),
        &never,
    ) {
        Ok((h, _)) => h,
        Err(e) => {
            eprintln!("zut mcp serve: {e}");
            return 1;
        }
    };
    let current = Arc::new(Mutex::new(Current::default()));
    let sink: Arc<dyn EventSink> = Arc::new(ProgressSink {
        out: out.clone(),
        current: current.clone(),
    });
    let agent_opts = agent::Options {
        cwd: opts.cwd.clone(),
        max_steps: 1,
        yolo: opts.yolo,
        confirmer: None,
        hooks: Arc::new(crate::hooks::Hooks::load(
            &opts.cwd,
            &opts.zut_home,
            opts.yolo,
            false,
        )),
        mcp: hub.clone(),
    };
    let agent = Agent::new(
        Box::new(NoModel),
        host.clone(),
        sink,
        agent_opts,
        &opts.zut_home,
    );
    let catalog = Catalog {
        host: host.clone(),
        hub: hub.clone(),
        only: opts.tools.clone(),
    };
    let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
    let dropped: Arc<Mutex<HashSet<String>>> = Arc::default();
    let worker = {
        let (out, current, dropped, catalog) = (
            out.clone(),
            current.clone(),
            dropped.clone(),
            catalog.clone(),
        );
        std::thread::spawn(move || work(agent, queue, out, current, dropped, catalog))
    };
    let (stop_watch, stopped) = crossbeam_channel::bounded::<()>(0);
    let seen: Arc<Mutex<Option<Vec<String>>>> = Arc::default();
    let mut watcher = None;
    let mut reader = LineReader::new(std::io::stdin());
    loop {
        let line = match reader.next_line() {
            Ok(Line::Data(l)) => l,
            Ok(Line::TooLong(_)) => continue,
            Ok(Line::Eof) | Err(_) => break,
        };
        let Ok(msg) = serde_json::from_slice::<Value>(&line) else {
            out.send(&json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32700, "message": "not JSON"}}));
            continue;
        };
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let id = msg.get("id").cloned().filter(|v| !v.is_null());
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        match (method, id) {
            ("initialize", Some(id)) => {
                let asked = params.get("protocolVersion").and_then(Value::as_str);
                let version = asked
                    .filter(|v| SUPPORTED_VERSIONS.contains(v))
                    .unwrap_or(super::client::PROTOCOL_VERSION);
                out.send(&json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "zut", "version": env!("CARGO_PKG_VERSION")},
                }}));
            }
            ("notifications/initialized", None) if watcher.is_none() => {
                let (out, catalog, seen, stopped) =
                    (out.clone(), catalog.clone(), seen.clone(), stopped.clone());
                watcher = Some(std::thread::spawn(move || {
                    watch(out, catalog, seen, stopped)
                }));
            }
            ("ping", Some(id)) => out.send(&json!({"jsonrpc": "2.0", "id": id, "result": {}})),
            ("tools/list", Some(id)) => {
                hub.wait_ready(&never);
                let tools = catalog.list();
                *lock(&seen) = Some(tools.iter().map(|t| t.0.clone()).collect());
                let tools: Vec<Value> = tools
                    .into_iter()
                    .map(|(name, description, schema)| {
                        json!({"name": name, "description": description, "inputSchema": schema})
                    })
                    .collect();
                out.send(&json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}));
            }
            ("tools/call", Some(id)) => {
                let job = Job {
                    id,
                    name: params
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    args: params
                        .get("arguments")
                        .cloned()
                        .unwrap_or_else(|| json!({})),
                    token: params.pointer("/_meta/progressToken").cloned(),
                };
                let _ = jobs.send(job);
            }
            ("notifications/cancelled", None) => {
                let Some(target) = params.get("requestId").cloned() else {
                    continue;
                };
                let cur = lock(&current);
                if cur.id.as_ref() == Some(&target) {
                    if let Some(c) = &cur.cancel {
                        c.cancel();
                    }
                } else {
                    lock(&dropped).insert(target.to_string());
                }
            }
            (_, Some(id)) if !method.is_empty() => out.send(&json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("zut does not serve {method}")}})),
            _ => {}
        }
    }
    drop(jobs);
    if let Some(c) = &lock(&current).cancel {
        c.cancel();
    }
    let _ = worker.join();
    drop(stop_watch);
    if let Some(w) = watcher {
        let _ = w.join();
    }
    host.shutdown();
    hub.shutdown();
    drop(events);
    drop(host);
    let _ = logger.join();
    0
}

/// Load failures and warnings go to stderr, where an MCP client shows them.
fn log_events(rx: Receiver<Event>) {
    for e in rx {
        match e {
            Event::ExtError { extension, message } => {
                eprintln!("zut: {extension}: {message}")
            }
            Event::ExtWarning { extension, message } => {
                eprintln!("zut: warning: {extension}: {message}")
            }
            _ => {}
        }
    }
}

/// The tools offered, from the live host and hub.
#[derive(Clone)]
struct Catalog {
    host: HostHandle,
    hub: Arc<super::hub::Hub>,
    only: Option<Vec<String>>,
}

impl Catalog {
    /// `(name, description, schema)` of every tool offered now.
    fn list(&self) -> Vec<(String, String, Value)> {
        let mut all: Vec<(String, String, Value)> = agent::tools::definitions()
            .into_iter()
            .map(|d| (d.name, d.description, d.schema))
            .collect();
        all.extend(
            self.host
                .tools()
                .into_iter()
                .map(|t| (t.name, t.description, t.schema)),
        );
        all.extend(
            self.hub
                .tools()
                .into_iter()
                .map(|t| (t.tool.name, t.tool.description, t.tool.schema)),
        );
        if let Some(only) = &self.only {
            all.retain(|t| only.iter().any(|o| o == &t.0));
        }
        all
    }

    fn offers(&self, name: &str) -> bool {
        self.list().iter().any(|t| t.0 == name)
    }
}

/// Sends `list_changed` whenever the tool names differ from those the
/// client was last given.
fn watch(out: Out, catalog: Catalog, seen: Arc<Mutex<Option<Vec<String>>>>, stop: Receiver<()>) {
    loop {
        crossbeam_channel::select! {
            recv(stop) -> _ => return,
            default(WATCH_EVERY) => {}
        }
        let now: Vec<String> = catalog.list().into_iter().map(|t| t.0).collect();
        let mut s = lock(&seen);
        if s.as_ref().is_some_and(|old| *old != now) {
            *s = Some(now);
            drop(s);
            out.send(&json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
        }
    }
}

fn work(
    mut agent: Agent,
    queue: Receiver<Job>,
    out: Out,
    current: Arc<Mutex<Current>>,
    dropped: Arc<Mutex<HashSet<String>>>,
    catalog: Catalog,
) {
    let mut n: u64 = 0;
    for job in queue {
        if lock(&dropped).remove(&job.id.to_string()) {
            continue;
        }
        n += 1;
        let call_id = format!("mcp_serve_{n}");
        let (canceller, token) = cancel::pair();
        *lock(&current) = Current {
            id: Some(job.id.clone()),
            call_id: call_id.clone(),
            token: job.token.clone(),
            cancel: Some(canceller),
        };
        // A call may come before tools/list: servers still starting first.
        catalog.hub.wait_ready(&token);
        let (content, is_error) = if catalog.offers(&job.name) {
            let (o, _, _) = agent.call_one(&call_id, &job.name, job.args, &token);
            (o.content, o.is_error)
        } else {
            (
                vec![ContentBlock::text(format!(
                    "zut offers no tool {:?}; tools/list names them",
                    job.name
                ))],
                true,
            )
        };
        *lock(&current) = Current::default();
        // A cancelled request gets no answer (the client gave up on it).
        if token.is_cancelled() {
            continue;
        }
        let content: Vec<Value> = content.iter().map(to_mcp).collect();
        out.send(&json!({"jsonrpc": "2.0", "id": job.id,
            "result": {"content": content, "isError": is_error}}));
    }
}

/// A zut content block as MCP content.
fn to_mcp(b: &ContentBlock) -> Value {
    match b {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Image { mime_type, data } => {
            json!({"type": "image", "mimeType": mime_type, "data": data})
        }
        _ => json!({"type": "text", "text": "[content zut cannot show]"}),
    }
}
