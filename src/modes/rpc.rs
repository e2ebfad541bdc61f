//! `--mode rpc`: a long-running process that a program drives with JSON
//! lines on stdin and reads JSON lines from on stdout (man zut-rpc(7)).
//!
//! Shape: stdin is read on its own thread, split into lines by the wire
//! crate's [`LineReader`] (the one splitter of host and SDK), parsed and
//! sent over a channel; closing the channel is end of input. The mode's one
//! loop `select!`s over those requests, the engine's [`Event`] channel and
//! the signal token, and writes stdout through the JSON-lines modes' one
//! [`LineWriter`]: a response waits for the client to have room (a signal
//! still ends the wait), an event that does not fit is dropped and counted,
//! so a client that stops reading holds neither the loop nor memory.
//!
//! Invariants:
//! - every request line gets exactly one `response` line, which describes
//!   the state after the request: a query or a prompt is answered before
//!   any event it causes (the engine only enqueues on this thread, so its
//!   events reach the channel after the call returns); a change (`clear`,
//!   `fork`, `switch`, `compact`, `set_model`, `reload_extensions`) is
//!   answered once it took effect, after the events it caused
//!   ([`Core::settled`]), and the requests after it wait for that answer,
//!   except `abort`, `confirm` and `ping`, which act at once;
//! - a line that is not a JSON object gets a response with `id: null` and
//!   the process keeps serving;
//! - with `ZUT_RPC_TOKEN` set, nothing but the failed response is written
//!   until a `hello` carrying that token arrived; the first line being
//!   anything else ends the process with status 1. Events raised before
//!   then wait in a bounded queue and follow the `hello` response;
//! - end of input shuts the engine down gracefully (extensions stopped,
//!   their last events written) and exits 0; a signal does the same and
//!   exits 130.

use super::out::LineWriter;
use crate::agent::Decision;
use crate::cancel::CancelToken;
use crate::core::boot::Run;
use crate::core::engine::Engine;
use crate::core::frontend::{Change, Core, CoreState, Submitted, ToolSummary};
use crate::core::{EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK};
use crate::events::Event;
use crossbeam_channel::{Receiver, Sender};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::sync::Arc;
use zut_ext::lines::{Line, LineReader};

/// The major version of the request/response schema (`hello` says it).
pub const PROTOCOL_VERSION: u32 = 1;
/// The environment variable holding the token a client must present.
pub const TOKEN_ENV: &str = "ZUT_RPC_TOKEN";
/// The longest request line accepted; a longer one is answered with a
/// failure and skipped (prompts with pasted files fit comfortably).
pub const MAX_LINE_BYTES: usize = zut_ext::lines::MAX_LINE_BYTES;
/// Events kept while waiting for the token; later ones are dropped (and
/// the count logged) so an unauthenticated client cannot grow memory.
pub const HELD_EVENTS: usize = 1000;

/// One line from the client, framed and parsed on the reader thread.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A JSON object.
    Request(Map<String, Value>),
    /// Anything else, with why it is not a request.
    Bad(String),
}

/// Starts the stdin reader thread; the returned channel closes at end of
/// input (or a read error, which is logged).
pub fn spawn_reader(input: impl std::io::Read + Send + 'static) -> Receiver<Input> {
    let (tx, rx) = crossbeam_channel::unbounded();
    let spawned = std::thread::Builder::new()
        .name("zut-rpc-stdin".into())
        .spawn(move || read_lines(input, &tx));
    if let Err(e) = spawned {
        log::error!("cannot start the stdin reader: {e}");
    }
    rx
}

/// Splits `input` into lines with the wire crate's [`LineReader`] (at most
/// [`MAX_LINE_BYTES`]) and sends each non-blank one, parsed. Returns at end
/// of input or when nobody listens.
pub fn read_lines(input: impl std::io::Read, tx: &Sender<Input>) {
    let mut reader = LineReader::with_limit(input, MAX_LINE_BYTES);
    loop {
        let input = match reader.next_line() {
            Ok(Line::Eof) => return,
            Ok(Line::Data(line)) if line.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(Line::Data(line)) => parse_line(&line),
            Ok(Line::TooLong(_)) => Input::Bad(format!(
                "request line longer than {MAX_LINE_BYTES} bytes; it was skipped"
            )),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                log::warn!("rpc: cannot read standard input: {e}");
                return;
            }
        };
        if tx.send(input).is_err() {
            return;
        }
    }
}

/// One line as an [`Input`].
fn parse_line(line: &[u8]) -> Input {
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(m)) => Input::Request(m),
        Ok(_) => Input::Bad("a request must be a JSON object".into()),
        Err(e) => Input::Bad(format!("not a JSON object: {e}")),
    }
}

/// A request, validated.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Hello {
        token: Option<String>,
    },
    Prompt {
        message: String,
    },
    Command {
        text: String,
    },
    Abort {
        drop_queued: bool,
    },
    GetState,
    GetMessages,
    ListCommands,
    ListTools,
    /// `clear`, `fork`, `switch`, `compact`, `set_model`,
    /// `reload_extensions`: answered once the change took effect.
    Change(Change),
    Confirm {
        request_id: u64,
        decision: Decision,
    },
    Ping,
}

/// Every request type, for the "unknown type" message.
pub const REQUEST_TYPES: &[&str] = &[
    "hello",
    "prompt",
    "command",
    "abort",
    "get_state",
    "get_messages",
    "list_commands",
    "list_tools",
    "clear",
    "fork",
    "switch",
    "compact",
    "set_model",
    "reload_extensions",
    "confirm",
    "ping",
];

/// A required non-empty string field.
fn text(m: &Map<String, Value>, field: &str) -> Result<String, String> {
    match m.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(format!("\"{field}\" is empty")),
        Some(_) => Err(format!("\"{field}\" must be a string")),
        None => Err(format!("\"{field}\" is missing")),
    }
}

/// An optional string field (null counts as absent).
fn opt_text(m: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match m.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("\"{field}\" must be a string")),
    }
}

/// Parses the body of a request of type `kind`.
pub fn parse(kind: &str, m: &Map<String, Value>) -> Result<Request, String> {
    Ok(match kind {
        "hello" => Request::Hello {
            token: opt_text(m, "token")?,
        },
        "prompt" => Request::Prompt {
            message: text(m, "message")?,
        },
        "command" => Request::Command {
            text: text(m, "text")?,
        },
        "abort" => Request::Abort {
            drop_queued: match m.get("drop_queued") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err("\"drop_queued\" must be true or false".into()),
            },
        },
        "get_state" => Request::GetState,
        "get_messages" => Request::GetMessages,
        "list_commands" => Request::ListCommands,
        "list_tools" => Request::ListTools,
        "clear" => Request::Change(Change::NewSession),
        "fork" => Request::Change(Change::Fork(match m.get("at") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or("\"at\" must be a message index (a whole number ≥ 0)")?,
            ),
        })),
        "switch" => Request::Change(Change::Switch(text(m, "session")?)),
        "compact" => Request::Change(Change::Compact(
            opt_text(m, "instructions")?.filter(|s| !s.trim().is_empty()),
        )),
        "set_model" => Request::Change(Change::SetModel(text(m, "model")?)),
        "reload_extensions" => Request::Change(Change::Reload),
        "confirm" => Request::Confirm {
            request_id: m
                .get("request_id")
                .and_then(Value::as_u64)
                .ok_or("\"request_id\" must be the number from confirmation_requested")?,
            decision: match m.get("decision").and_then(Value::as_str) {
                Some("allow") => Decision::Allow,
                Some("always") => Decision::Always,
                Some("deny") => Decision::Deny,
                _ => return Err("\"decision\" must be \"allow\", \"always\" or \"deny\"".into()),
            },
        },
        "ping" => Request::Ping,
        other => {
            return Err(format!(
                "unknown request type {other:?}; known: {}",
                REQUEST_TYPES.join(", ")
            ))
        }
    })
}

/// The one reply to a request.
#[derive(Debug, Serialize)]
pub struct Response {
    #[serde(rename = "type")]
    kind: &'static str,
    pub id: Value,
    /// The request's `type`, or null when it had none.
    pub command: Value,
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Response {
    pub fn ok(id: Value, command: &str, data: Value) -> Response {
        Response {
            kind: "response",
            id,
            command: command.into(),
            success: true,
            data: Some(data),
            error: None,
        }
    }

    pub fn fail(id: Value, command: Value, error: impl Into<String>) -> Response {
        Response {
            kind: "response",
            id,
            command,
            success: false,
            data: None,
            error: Some(error.into()),
        }
    }
}

/// What the loop does after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Serve,
    /// The token check failed: stop with status 1.
    Refused,
}

/// The server side of one connection: answers requests through the core
/// and writes events, holding them back until the client authenticated.
struct Server<'a> {
    /// Responses wait for room; events that do not fit are dropped.
    out: LineWriter,
    /// Events dropped since the client last had room for one.
    out_dropped: usize,
    core: &'a dyn Core,
    token: Option<String>,
    authed: bool,
    held: VecDeque<Event>,
    dropped: usize,
    /// Confirmations asked and not answered in the running job.
    waiting: HashSet<u64>,
    /// The last `list_tools` answer, encoded, and the tool list it encodes.
    tools_answer: Option<(Arc<[ToolSummary]>, Vec<u8>)>,
    /// A change request whose response waits until it took effect: the
    /// core's signal, the request's id and type, the response data.
    changing: Option<(Receiver<()>, Value, String, Vec<u8>)>,
    /// Requests that came while a change was taking effect, in order.
    later: VecDeque<Input>,
}

impl<'a> Server<'a> {
    fn new(out: LineWriter, core: &'a dyn Core, token: Option<String>) -> Self {
        Server {
            out,
            out_dropped: 0,
            core,
            authed: token.is_none(),
            token,
            held: VecDeque::new(),
            dropped: 0,
            waiting: HashSet::new(),
            tools_answer: None,
            changing: None,
            later: VecDeque::new(),
        }
    }

    fn write(&mut self, value: &impl Serialize) {
        match serde_json::to_vec(value) {
            Ok(mut line) => {
                line.push(b'\n');
                self.write_line(line);
            }
            Err(e) => log::error!("rpc: cannot encode a line: {e}"),
        }
    }

    /// A success response around `data`, already encoded: answers such as
    /// `list_tools` are serialised once, straight from their types.
    fn write_ok(&mut self, id: &Value, kind: &str, data: &[u8]) {
        match ok_line(id, kind, data) {
            Ok(line) => self.write_line(line),
            Err(e) => log::error!("rpc: cannot encode a response: {e}"),
        }
    }

    /// Hands a finished line to the writer (moved, not copied: a
    /// transcript can be large).
    fn write_line(&mut self, line: Vec<u8>) {
        self.out.send(line);
    }

    /// An event line: written if the client has room for it, else dropped
    /// and counted (the loop keeps serving, memory stays bounded); the
    /// count is reported as a warning once there is room again.
    fn write_event(&mut self, event: &Event) {
        let encode = |e: &Event| {
            let mut line = serde_json::to_vec(e).ok()?;
            line.push(b'\n');
            Some(line)
        };
        if self.out_dropped > 0 {
            let note = Event::ExtWarning {
                extension: "zut".into(),
                message: format!(
                    "{} events were dropped: the client did not read standard output",
                    self.out_dropped
                ),
            };
            match encode(&note).map(|l| self.out.offer(l)) {
                Some(Err(_)) => {
                    self.out_dropped += 1;
                    return;
                }
                _ => {
                    log::warn!(
                        "rpc: {} events dropped (client not reading)",
                        self.out_dropped
                    );
                    self.out_dropped = 0;
                }
            }
        }
        let Some(line) = encode(event) else {
            log::error!("rpc: cannot encode an event");
            return;
        };
        if self.out.offer(line).is_err() {
            self.out_dropped += 1;
        }
    }

    /// One event from the engine: written, held until authentication, or
    /// dropped when it asks for an interactive editor.
    fn event(&mut self, event: Event) {
        match &event {
            // Both ask the interactive editor to queue text; there is none.
            // `idle` is for screens; a client learns it from the response.
            Event::ExtSubmit { .. }
            | Event::ExtSubmitSlash { .. }
            | Event::Idle
            | Event::Loaded
            | Event::Discovered { .. } => return,
            Event::ConfirmationRequested { request_id, .. } => {
                self.waiting.insert(*request_id);
            }
            // A job ended: whatever it asked can no longer be answered.
            Event::Done => self.waiting.clear(),
            _ => {}
        }
        if self.authed {
            self.write_event(&event);
        } else if self.held.len() < HELD_EVENTS {
            self.held.push_back(event);
        } else {
            self.dropped += 1;
        }
    }

    /// The signal of the change waiting to take effect, if any.
    fn change_signal(&self) -> Option<Receiver<()>> {
        self.changing.as_ref().map(|(rx, ..)| rx.clone())
    }

    /// The change took effect (its events are written): its response, then
    /// the requests that waited for it, until one is a change again.
    fn settle(&mut self) -> Flow {
        if let Some((_, id, kind, data)) = self.changing.take() {
            self.write_ok(&id, &kind, &data);
        }
        while self.changing.is_none() {
            let Some(input) = self.later.pop_front() else {
                break;
            };
            if self.input(input) == Flow::Refused {
                return Flow::Refused;
            }
        }
        Flow::Serve
    }

    /// One input line: answered, and maybe the end of the connection.
    /// While a change is taking effect, requests wait behind it, except
    /// those that must act at once (`abort`, `confirm`, `ping`).
    fn input(&mut self, input: Input) -> Flow {
        if self.changing.is_some() {
            let urgent = matches!(&input, Input::Request(m)
                if matches!(m.get("type").and_then(Value::as_str), Some("abort" | "confirm" | "ping")));
            if !urgent {
                self.later.push_back(input);
                return Flow::Serve;
            }
        }
        let (id, kind, body) = match input {
            Input::Bad(why) => {
                self.write(&Response::fail(Value::Null, Value::Null, why));
                return self.refuse_unless_authed();
            }
            Input::Request(m) => {
                let id = m.get("id").cloned().unwrap_or(Value::Null);
                match m.get("type") {
                    Some(Value::String(kind)) => (id, kind.clone(), m),
                    _ => {
                        let r = Response::fail(id, Value::Null, "request has no \"type\" string");
                        self.write(&r);
                        return self.refuse_unless_authed();
                    }
                }
            }
        };
        let request = match parse(&kind, &body) {
            Ok(r) => r,
            Err(e) => {
                self.write(&Response::fail(id, kind.as_str().into(), e));
                return self.refuse_unless_authed();
            }
        };
        if !self.authed && !matches!(request, Request::Hello { .. }) {
            let r = Response::fail(
                id,
                kind.as_str().into(),
                format!("not authenticated: the first request must be hello with the token from {TOKEN_ENV}"),
            );
            self.write(&r);
            return Flow::Refused;
        }
        let changes = matches!(request, Request::Change(_));
        let success = match self.answer(request) {
            Ok(data) if changes => {
                // Answered once it took effect (a read that follows sees it).
                self.changing = Some((self.core.settled(), id, kind.clone(), data));
                true
            }
            Ok(data) => {
                self.write_ok(&id, &kind, &data);
                true
            }
            Err(e) => {
                self.write(&Response::fail(id, kind.as_str().into(), e));
                false
            }
        };
        if kind == "hello" && !self.authed {
            if !success {
                return Flow::Refused;
            }
            self.authed = true;
            self.flush_held();
        }
        Flow::Serve
    }

    fn refuse_unless_authed(&self) -> Flow {
        if self.authed {
            Flow::Serve
        } else {
            Flow::Refused
        }
    }

    /// The held events after the `hello` response, then, when some did not
    /// fit, one `ext_warning` of `zut` saying how many were dropped (the
    /// response's `dropped_events` says the same).
    fn flush_held(&mut self) {
        while let Some(e) = self.held.pop_front() {
            self.write_event(&e);
        }
        if self.dropped > 0 {
            log::warn!(
                "rpc: {} events raised before authentication were dropped (only {HELD_EVENTS} are kept)",
                self.dropped
            );
            let note = Event::ExtWarning {
                extension: "zut".into(),
                message: format!(
                    "{} events raised before hello were dropped: only the first {HELD_EVENTS} are kept",
                    self.dropped
                ),
            };
            self.dropped = 0;
            self.write_event(&note);
        }
    }

    /// Whether events are held back until `hello` (the token gate).
    fn holding(&self) -> bool {
        !self.authed
    }

    /// Runs one request; `Ok` is the response's data, encoded.
    fn answer(&mut self, request: Request) -> Result<Vec<u8>, String> {
        let core = self.core;
        let value = match request {
            Request::Hello { token } => {
                if let Some(expected) = &self.token {
                    let given = token.unwrap_or_default();
                    if !same_secret(expected.as_bytes(), given.as_bytes()) {
                        return Err(format!("wrong or missing token (see {TOKEN_ENV})"));
                    }
                }
                let s = core.state();
                json!({
                    "protocol_version": PROTOCOL_VERSION,
                    "version": env!("CARGO_PKG_VERSION"),
                    "provider": s.provider,
                    "model": s.model,
                    "dropped_events": if self.authed { 0 } else { self.dropped },
                })
            }
            Request::Prompt { message } => submitted(core.prompt(message)),
            Request::Command { text } => {
                let line = if text.trim_start().starts_with('/') {
                    text.trim_start().to_string()
                } else {
                    format!("/{}", text.trim_start())
                };
                submitted(core.command(line))
            }
            Request::Abort { drop_queued } => {
                let busy = core.state().busy;
                core.abort(drop_queued);
                json!({ "was_busy": busy })
            }
            Request::GetState => state_data(&core.state()),
            Request::GetMessages => return Ok(field("messages", &core.state().messages)),
            Request::ListCommands => {
                let mut list: Vec<Value> = crate::commands::available(crate::commands::Mode::Rpc)
                    .map(|b| json!({"name": b.name, "description": b.description, "extension": null}))
                    .collect();
                list.extend(core.commands().iter().map(|c| {
                    json!({"name": c.name, "description": c.description, "extension": c.extension})
                }));
                return Ok(field("commands", &list));
            }
            Request::ListTools => {
                let tools = core.tools();
                match &self.tools_answer {
                    Some((seen, data)) if Arc::ptr_eq(seen, &tools) => return Ok(data.clone()),
                    _ => {}
                }
                let data = field("tools", &&tools[..]);
                self.tools_answer = Some((tools, data.clone()));
                return Ok(data);
            }
            Request::Change(change) => {
                core.change(change);
                json!({})
            }
            Request::Confirm {
                request_id,
                decision,
            } => {
                if !self.waiting.remove(&request_id) {
                    return Err(format!(
                        "no confirmation {request_id} is waiting (already answered, or its turn ended)"
                    ));
                }
                core.confirm(request_id, decision);
                json!({})
            }
            Request::Ping => return Ok(br#"{"pong":true}"#.to_vec()),
        };
        Ok(encoded(&value))
    }
}

/// The line of a success response whose data is already encoded: the
/// same bytes as serialising [`Response::ok`], newline included.
fn ok_line(id: &Value, kind: &str, data: &[u8]) -> serde_json::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(data.len() + 96);
    line.extend_from_slice(br#"{"type":"response","id":"#);
    serde_json::to_writer(&mut line, id)?;
    line.extend_from_slice(br#","command":"#);
    serde_json::to_writer(&mut line, kind)?;
    line.extend_from_slice(br#","success":true,"data":"#);
    line.extend_from_slice(data);
    line.extend_from_slice(b"}\n");
    Ok(line)
}

/// `{"name": value}`, encoded without an intermediate [`Value`].
fn field(name: &str, value: &impl Serialize) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    let encoded = serde_json::to_writer(&mut out, name).and_then(|_| {
        out.push(b':');
        serde_json::to_writer(&mut out, value)
    });
    if let Err(e) = encoded {
        log::error!("rpc: cannot encode {name}: {e}");
        return b"{}".to_vec();
    }
    out.push(b'}');
    out
}

/// A [`Value`], encoded (it cannot fail).
fn encoded(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec())
}

/// The data of a `prompt` or `command` response.
fn submitted(s: Submitted) -> Value {
    match s {
        Submitted::Started => json!({ "queued": false }),
        Submitted::Queued { position } => json!({ "queued": true, "position": position }),
    }
}

/// The data of a `get_state` response.
fn state_data(s: &CoreState) -> Value {
    json!({
        "session": s.session,
        "provider": s.provider,
        "model": s.model,
        "busy": s.busy,
        "queued": s.queued,
        "message_count": s.messages.len(),
        "extensions": s.extensions,
        "usage": crate::provider::usage::state_json(&s.usage),
    })
}

/// Compares secrets in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Runs RPC mode on stdin/stdout until end of input or a signal; returns
/// the exit status.
pub fn run(run: Run, cancel: &CancelToken) -> i32 {
    let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
    let requests = spawn_reader(std::io::stdin());
    serve(run, requests, std::io::stdout(), token, cancel)
}

/// The loop of RPC mode over any request channel and output.
pub fn serve(
    run: Run,
    requests: Receiver<Input>,
    out: impl Write + Send + 'static,
    token: Option<String>,
    cancel: &CancelToken,
) -> i32 {
    let (tx, events) = crossbeam_channel::unbounded::<Event>();
    let front = crate::commands::Mode::Rpc;
    let engine: Arc<Engine> = match crate::core::boot::boot(&run, front, &tx, cancel) {
        Ok(booted) => booted.engine(&run, tx, front, !run.yolo),
        Err(code) => return code,
    };
    let mut server = Server::new(LineWriter::new(out, cancel.clone()), engine.as_ref(), token);
    let mut code = EXIT_OK;
    let nothing = crossbeam_channel::never();
    loop {
        let change = server.change_signal();
        crossbeam_channel::select! {
            recv(change.as_ref().unwrap_or(&nothing)) -> _ => {
                // The core sent the change's events before the signal.
                for e in events.try_iter() {
                    server.event(e);
                }
                if server.settle() == Flow::Refused {
                    code = EXIT_FAILURE;
                    break;
                }
            }
            recv(requests) -> r => match r {
                Ok(input) => {
                    if server.holding() {
                        // What was raised before the hello line is held
                        // (or counted as dropped) before it is answered.
                        for e in events.try_iter() {
                            server.event(e);
                        }
                    }
                    if server.input(input) == Flow::Refused {
                        code = EXIT_FAILURE;
                        break;
                    }
                }
                // End of input: the client is done with us.
                Err(_) => break,
            },
            recv(events) -> e => {
                if let Ok(e) = e {
                    server.event(e);
                }
            }
            recv(cancel.receiver()) -> _ => {
                code = EXIT_INTERRUPTED;
                break;
            }
        }
    }
    engine.shutdown();
    // What the extensions said on their way out, unless the client never
    // authenticated.
    for e in events.try_iter() {
        server.event(e);
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<Input> {
        let (tx, rx) = crossbeam_channel::unbounded();
        read_lines(input, &tx);
        drop(tx);
        rx.iter().collect()
    }

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn the_reader_frames_on_newlines_strips_cr_and_skips_blank_lines() {
        let got = lines(b"{\"type\":\"ping\"}\r\n\n  \n{\"type\":\"ping\",\"id\":2}");
        assert_eq!(
            got,
            vec![
                Input::Request(obj(json!({"type": "ping"}))),
                Input::Request(obj(json!({"type": "ping", "id": 2}))),
            ]
        );
    }

    #[test]
    fn lines_that_are_not_objects_are_reported_not_fatal() {
        let got = lines(b"[1,2]\nnot json\n\xff\xfe\n{\"type\":\"ping\"}\n");
        assert_eq!(got.len(), 4);
        assert!(matches!(&got[0], Input::Bad(m) if m.contains("JSON object")));
        assert!(matches!(&got[1], Input::Bad(_)));
        assert!(matches!(&got[2], Input::Bad(_)));
        assert!(matches!(&got[3], Input::Request(_)));
    }

    #[test]
    fn an_overlong_line_is_skipped_up_to_its_newline() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.extend_from_slice(b"\n{\"type\":\"ping\"}\n");
        let got = lines(&input);
        assert_eq!(got.len(), 2);
        assert!(matches!(&got[0], Input::Bad(m) if m.contains("longer than")));
        assert_eq!(got[1], Input::Request(obj(json!({"type": "ping"}))));
    }

    #[test]
    fn requests_are_validated_field_by_field() {
        let p = |v: Value| {
            let m = obj(v);
            let kind = m["type"].as_str().unwrap().to_string();
            parse(&kind, &m)
        };
        assert_eq!(
            p(json!({"type": "prompt", "message": "hi"})),
            Ok(Request::Prompt {
                message: "hi".into()
            })
        );
        assert!(p(json!({"type": "prompt"}))
            .unwrap_err()
            .contains("\"message\" is missing"));
        assert!(p(json!({"type": "prompt", "message": 3})).is_err());
        assert_eq!(
            p(json!({"type": "abort", "drop_queued": true})),
            Ok(Request::Abort { drop_queued: true })
        );
        assert_eq!(
            p(json!({"type": "confirm", "request_id": 7, "decision": "always"})),
            Ok(Request::Confirm {
                request_id: 7,
                decision: Decision::Always
            })
        );
        assert!(p(json!({"type": "confirm", "request_id": 7, "decision": "maybe"})).is_err());
        assert!(p(json!({"type": "switch"})).is_err());
        assert_eq!(
            p(json!({"type": "fork", "at": 2})),
            Ok(Request::Change(Change::Fork(Some(2))))
        );
        assert_eq!(
            p(json!({"type": "compact", "instructions": " "})),
            Ok(Request::Change(Change::Compact(None)))
        );
        let unknown = p(json!({"type": "dance"})).unwrap_err();
        assert!(
            unknown.contains("\"dance\"") && unknown.contains("ping"),
            "{unknown}"
        );
    }

    #[test]
    fn responses_have_the_documented_shape() {
        let ok = serde_json::to_string(&Response::ok(json!("1"), "ping", json!({"pong": true})))
            .unwrap();
        assert_eq!(
            ok,
            r#"{"type":"response","id":"1","command":"ping","success":true,"data":{"pong":true}}"#
        );
        let data = json!({"tools": [{"name": "t\"x", "extension": null}]});
        let id = json!({"n": [1, "two"]});
        let mut expected =
            serde_json::to_vec(&Response::ok(id.clone(), "list_tools", data.clone())).unwrap();
        expected.push(b'\n');
        let spliced = ok_line(&id, "list_tools", &encoded(&data)).unwrap();
        assert_eq!(
            String::from_utf8(spliced).unwrap(),
            String::from_utf8(expected).unwrap()
        );
        assert_eq!(
            field("tools", &vec!["a", "b"]),
            br#"{"tools":["a","b"]}"#.to_vec()
        );
        let bad = serde_json::to_string(&Response::fail(Value::Null, Value::Null, "no")).unwrap();
        assert_eq!(
            bad,
            r#"{"type":"response","id":null,"command":null,"success":false,"error":"no"}"#
        );
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"ab"));
        assert!(!same_secret(b"", b"a"));
    }
}
