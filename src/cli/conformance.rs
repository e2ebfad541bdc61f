//! `zut ext test PATH`: starts one extension alone and checks it against
//! the protocol, one verdict per check.
//!
//! The extension is driven directly over its pipes with the shared wire
//! types rather than through the host, so each check can say exactly what
//! was sent, what came back and when. The order: manifest, start, `hello`,
//! `ready`, registrations, one `tool_call` with `{}` per tool, one
//! `command_invoked` without arguments per command, one `event_intercept`
//! per subscribed intercept (each must be answered within the intercept
//! deadline), one `event` of each subscribed kind, an unknown host frame
//! followed by a request, `tool_cancel` for an unknown id followed by a
//! request (when advertised), registrations that came after `ready`,
//! `shutdown`, the exit, and last what was seen on stdout that was not a
//! frame.
//!
//! It plays a host with the protocol additions: `hello_ack.features`
//! lists them, `tool_progress` frames for a running call are checked (their
//! id must be that call's, and each restarts the call's deadline as zut
//! does, up to ten times the tool timeout), and a registration after
//! `ready` is only a warning when zut would refuse it.
//!
//! Invariants:
//! - every wait has a deadline from [`Deadlines::from_env`], so the
//!   `ZUT_*_TIMEOUT_MS` variables shorten a run exactly as they shorten zut;
//! - a check that fails because the process is gone says so once (in
//!   `exit`); the requests it could no longer answer are not each failed;
//! - the child runs in its own process group and is killed (group and all)
//!   when the run ends, whatever happened; its stderr goes to a temporary
//!   file whose last line explains an early exit;
//! - an interactive tool is never left waiting: it is called, then cancelled
//!   with `tool_cancel`, or skipped with a warning when the extension did
//!   not advertise that capability;
//! - no verdict is vacuous: the stdout check passes only when lines were
//!   read and every one of them was a frame; a line that is not a frame is
//!   a warning, as zut skips it with a warning (before `hello` too).

use super::{Failure, Io, Outcome};
use crate::host::deadlines::Deadlines;
use crate::host::manifest::{self, Manifest};
use crate::host::registry::{check_content, CommandEntry, Registry, ToolEntry};
use crate::proc::{ChildGuard, ExitWatch};
use crossbeam_channel::{after, select, unbounded, Receiver, Sender};
use rustix::process::Signal;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write as _};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use zut_ext::additions::AddedFrame;
use zut_ext::lines::{Line, LineReader};
use zut_ext::wire::{
    self, ExtFrame, HostFrame, CAP_TOOL_CANCEL, INTERCEPTABLE_EVENTS, KNOWN_EVENTS,
    PROTOCOL_VERSION,
};

/// Intercepts of the protocol additions (beyond the wire's base list).
use zut_ext::wire::ADDED_INTERCEPTABLE_EVENTS as ADDED_INTERCEPTS;

/// Events of the protocol additions a host may send.
const ADDED_EVENTS: &[&str] = &["user_message", "tool_result", "agent_end"];

/// The features `hello_ack` announces: what this zut's host supports.
const FEATURES: &[&str] = &["late_registration", "tool_progress"];

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Pass,
    Warn,
    Fail,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    pub check: String,
    pub status: Status,
    pub reason: String,
}

/// Collects the verdicts and, in text mode, prints each as it is reached.
struct Report<'a, 'b> {
    checks: Vec<Check>,
    io: &'a mut Io<'b>,
    stream: bool,
}

impl Report<'_, '_> {
    fn add(&mut self, check: impl Into<String>, status: Status, reason: impl Into<String>) {
        let c = Check {
            check: check.into(),
            status,
            reason: reason.into(),
        };
        if self.stream {
            let _ = writeln!(
                self.io.out,
                "{} {}: {}",
                c.status.as_str(),
                c.check,
                c.reason
            );
            let _ = self.io.out.flush();
        }
        self.checks.push(c);
    }
    fn pass(&mut self, check: impl Into<String>, reason: impl Into<String>) {
        self.add(check, Status::Pass, reason);
    }
    fn warn(&mut self, check: impl Into<String>, reason: impl Into<String>) {
        self.add(check, Status::Warn, reason);
    }
    fn fail(&mut self, check: impl Into<String>, reason: impl Into<String>) {
        self.add(check, Status::Fail, reason);
    }
}

/// Runs `zut ext test`; fails (exit 1) when a check failed.
pub(crate) fn run(path: &str, json: bool, cwd: &Path, io: &mut Io<'_>) -> Outcome {
    let dir = {
        let p = Path::new(path);
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            cwd.join(p)
        };
        if p.file_name().is_some_and(|n| n == manifest::MANIFEST_FILE) && p.is_file() {
            p.parent().map(Path::to_path_buf).unwrap_or(p)
        } else {
            p
        }
    };
    let mut report = Report {
        checks: Vec::new(),
        io,
        stream: !json,
    };
    check_extension(&dir, cwd, Deadlines::from_env(), &mut report);
    let Report { checks, io, .. } = report;
    if json {
        let rows: Vec<Value> = checks
            .iter()
            .map(|c| json!({"check": c.check, "status": c.status.as_str(), "reason": c.reason}))
            .collect();
        let text = serde_json::to_string_pretty(&Value::Array(rows)).unwrap_or_default();
        let _ = writeln!(io.out, "{text}");
    }
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    let warned = checks.iter().filter(|c| c.status == Status::Warn).count();
    if failed > 0 {
        return Err(Failure::Error(format!(
            "{failed} of {} checks failed",
            checks.len()
        )));
    }
    let _ = writeln!(
        io.err,
        "all {} checks passed{}",
        checks.len(),
        match warned {
            0 => String::new(),
            1 => " (1 warning)".into(),
            n => format!(" ({n} warnings)"),
        }
    );
    Ok(())
}

/// Every check, in order, for the extension in `dir`.
fn check_extension(dir: &Path, cwd: &Path, deadlines: Deadlines, r: &mut Report<'_, '_>) {
    let m = match manifest::load(dir) {
        Ok(m) => m,
        Err(e) => return r.fail("manifest", e.to_string()),
    };
    let Some(exec) = &m.exec else {
        r.pass("manifest", format!("{} {} (theme only)", m.name, m.version));
        return r.pass("start", "theme-only extension: there is no process to test");
    };
    if m.enabled {
        r.pass(
            "manifest",
            format!("name {}, exec {}", m.name, exec.configured()),
        );
    } else {
        r.warn(
            "manifest",
            format!(
                "\"enabled\" is false, so zut will not start {}; testing it anyway",
                m.name
            ),
        );
    }
    let program = match exec.program(None) {
        Ok(p) => p,
        Err(e) => return r.fail("start", e.to_string()),
    };
    let mut child = match Child::spawn(&program, &m) {
        Ok(c) => c,
        Err(e) => return r.fail("start", format!("cannot start {}: {e}", program.display())),
    };
    r.pass("start", format!("pid {}", child.pid));
    let mut session = Session {
        child: &mut child,
        m: &m,
        d: deadlines,
        registry: Registry::default(),
        capabilities: Vec::new(),
        problems: BTreeMap::new(),
        unknown_types: BTreeMap::new(),
        next_id: 0,
        gone_during: None,
        pending_registrations: Vec::new(),
        lines_seen: 0,
        events: Vec::new(),
        intercepts: Vec::new(),
        running: None,
        progress: Vec::new(),
        stray_progress: Vec::new(),
        late: Vec::new(),
        ready_seen: false,
    };
    session.run(cwd, r);
    // Whatever stdout said, shutdown included.
    session.report_stdout(r);
}

/// The extension process: reader, writer and waiter threads feeding one
/// channel of [`Ev`].
struct Child {
    pid: u32,
    /// Signals the extension's process group; the waiter thread owns the
    /// guard itself and reaps the child.
    watch: ExitWatch,
    events: Receiver<Ev>,
    input: Option<Sender<Vec<u8>>>,
    stderr: tempfile::NamedTempFile,
    status: Option<ExitStatus>,
    eof: bool,
}

/// What the threads report.
enum Ev {
    Line(Vec<u8>),
    TooLong(usize),
    Eof,
    Exited(ExitStatus),
    /// Writing to stdin failed: the extension stopped reading.
    WriteFailed,
}

impl Child {
    fn spawn(program: &Path, m: &Manifest) -> std::io::Result<Child> {
        let stderr = tempfile::Builder::new()
            .prefix(".zut-ext-test-")
            .tempfile()?;
        let mut child = ChildGuard::spawn(
            std::process::Command::new(program)
                .args(&m.args)
                .current_dir(&m.dir)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::from(stderr.reopen()?)),
        )?;
        let (tx, events) = unbounded();
        let (input, input_rx) = unbounded::<Vec<u8>>();
        // On an error below, dropping the guard kills and reaps the child.
        let (Some(mut stdin), Some(stdout)) = (child.take_stdin(), child.take_stdout()) else {
            return Err(std::io::Error::other("child pipes missing"));
        };
        let pid = child.pid();
        let watch = child.watch();
        let t = tx.clone();
        std::thread::Builder::new()
            .name("ext-test-read".into())
            .spawn(move || {
                let mut lines = LineReader::new(BufReader::new(stdout));
                loop {
                    let ev = match lines.next_line() {
                        Ok(Line::Data(l)) => Ev::Line(l),
                        Ok(Line::TooLong(n)) => Ev::TooLong(n),
                        Ok(Line::Eof) | Err(_) => {
                            let _ = t.send(Ev::Eof);
                            return;
                        }
                    };
                    if t.send(ev).is_err() {
                        return;
                    }
                }
            })?;
        let t = tx.clone();
        std::thread::Builder::new()
            .name("ext-test-write".into())
            .spawn(move || {
                for bytes in input_rx {
                    if stdin
                        .write_all(&bytes)
                        .and_then(|()| stdin.flush())
                        .is_err()
                    {
                        let _ = t.send(Ev::WriteFailed);
                        return;
                    }
                }
                // Dropping stdin here closes the extension's input.
            })?;
        std::thread::Builder::new()
            .name("ext-test-wait".into())
            .spawn(move || {
                if let Ok(status) = child.wait() {
                    let _ = tx.send(Ev::Exited(status));
                }
            })?;
        Ok(Child {
            pid,
            watch,
            events,
            input: Some(input),
            stderr,
            status: None,
            eof: false,
        })
    }

    fn send(&self, frame: &HostFrame) {
        self.send_raw(wire::encode_line(frame));
    }

    fn send_value(&self, frame: &Value) {
        self.send_raw(wire::encode_line(frame));
    }

    fn send_raw(&self, bytes: Vec<u8>) {
        if let Some(input) = &self.input {
            let _ = input.send(bytes);
        }
    }

    /// Closes the extension's stdin (after the queued frames).
    fn close_input(&mut self) {
        self.input = None;
    }

    fn signal(&self, signal: Signal) {
        if self.status.is_none() {
            self.watch.signal_group(signal);
        }
    }

    /// The last non-empty line the extension wrote on stderr, if any.
    fn stderr_tail(&self) -> Option<String> {
        let mut text = String::new();
        let mut f = self.stderr.reopen().ok()?;
        let len = f.metadata().ok()?.len();
        let mut buf = Vec::new();
        use std::io::Seek as _;
        f.seek(std::io::SeekFrom::Start(len.saturating_sub(4096)))
            .ok()?;
        f.read_to_end(&mut buf).ok()?;
        text.push_str(&String::from_utf8_lossy(&buf));
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| shorten(l.trim(), 200))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.input = None;
        self.signal(Signal::KILL);
    }
}

/// What waiting for a frame ended with. Short-lived and moved once, so
/// the frame is not boxed.
#[allow(clippy::large_enum_variant)]
enum Waited {
    Frame(ExtFrame),
    Timeout,
    /// The process exited or closed stdout.
    Gone,
}

/// One run against one extension.
struct Session<'c> {
    child: &'c mut Child,
    m: &'c Manifest,
    d: Deadlines,
    registry: Registry,
    capabilities: Vec<String>,
    /// Lines that were not frames, by kind: count and the first line.
    problems: BTreeMap<&'static str, (usize, String)>,
    /// Frames of a type this zut does not know: count and the first line.
    unknown_types: BTreeMap<String, (usize, String)>,
    next_id: u64,
    /// The check during which the process went away.
    gone_during: Option<String>,
    /// Registration frames not yet checked, in arrival order.
    pending_registrations: Vec<ExtFrame>,
    /// Lines read from stdout, frames or not.
    lines_seen: usize,
    /// Subscribed events and intercepts, in order, without repeats.
    events: Vec<String>,
    intercepts: Vec<String>,
    /// The id of the tool call waiting for its result.
    running: Option<String>,
    /// When each `tool_progress` for the running call arrived.
    progress: Vec<Instant>,
    /// `tool_progress` frames naming no running call: their ids.
    stray_progress: Vec<String>,
    /// Registrations and unregistrations after `ready`, in order.
    late: Vec<Late>,
    ready_seen: bool,
}

/// A registration change the extension made after `ready`.
enum Late {
    Frame(Box<ExtFrame>),
    UnregisterTool(String),
    UnregisterCommand(String),
}

impl Session<'_> {
    fn run(&mut self, cwd: &Path, r: &mut Report<'_, '_>) {
        if !self.hello(r) {
            return;
        }
        let ack = serde_json::to_value(HostFrame::HelloAck {
            protocol_version: PROTOCOL_VERSION,
            zut_version: env!("CARGO_PKG_VERSION").into(),
            provider: String::new(),
            model: String::new(),
            cwd: cwd.display().to_string(),
            extension_dir: self.m.dir.display().to_string(),
            data_dir: self.m.dir.display().to_string(),
            session: None,
            features: FEATURES.iter().map(|f| f.to_string()).collect(),
        })
        .unwrap_or_default();
        self.child.send_value(&ack);
        self.ready(r);
        self.registrations(r);
        self.ready_seen = true;
        let tools: Vec<ToolEntry> = self.registry.tools().cloned().collect();
        let commands: Vec<CommandEntry> = self.registry.commands().cloned().collect();
        for t in &tools {
            self.call_tool(t, r);
        }
        for c in &commands {
            self.invoke(c, r);
        }
        self.intercepts(r);
        self.events(&tools, &commands, r);
        self.unknown_frame(&tools, &commands, r);
        self.tool_cancel(&tools, &commands, r);
        self.late_registrations(r);
        self.shutdown(r);
    }

    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("zut-ext-test-{}", self.next_id)
    }

    fn alive(&self) -> bool {
        self.gone_during.is_none()
    }

    /// Waits for the next frame `want` accepts; the others are observed
    /// (registrations recorded, unknown types noted) and passed over.
    fn wait_for(&mut self, deadline: Instant, mut want: impl FnMut(&ExtFrame) -> bool) -> Waited {
        loop {
            if self.child.eof || self.child.status.is_some() {
                // Drain what is already buffered before calling it gone.
                let drain = Instant::now() + Duration::from_millis(200);
                match self.next_event(drain.min(deadline.max(Instant::now()))) {
                    Some(Ev::Line(line)) => {
                        if let Some(f) = self.frame(&line) {
                            if want(&f) {
                                return Waited::Frame(f);
                            }
                        }
                        continue;
                    }
                    Some(other) => {
                        self.note(other);
                        if self.child.eof && self.child.status.is_some() {
                            return Waited::Gone;
                        }
                        continue;
                    }
                    None => return Waited::Gone,
                }
            }
            match self.next_event(deadline) {
                None => return Waited::Timeout,
                Some(Ev::Line(line)) => {
                    if let Some(f) = self.frame(&line) {
                        if want(&f) {
                            return Waited::Frame(f);
                        }
                    }
                }
                Some(ev) => self.note(ev),
            }
        }
    }

    fn next_event(&mut self, deadline: Instant) -> Option<Ev> {
        let wait = deadline.saturating_duration_since(Instant::now());
        select! {
            recv(self.child.events) -> ev => ev.ok(),
            recv(after(wait)) -> _ => None,
        }
    }

    /// Records what a non-line event says about the process.
    fn note(&mut self, ev: Ev) {
        match ev {
            Ev::Line(_) => {}
            Ev::TooLong(n) => {
                self.problem("a line longer than the 32 MiB limit", format!("{n} bytes"))
            }
            Ev::Eof => self.child.eof = true,
            Ev::Exited(s) => self.child.status = Some(s),
            // The process stopped reading; its exit tells the rest.
            Ev::WriteFailed => self.child.close_input(),
        }
    }

    fn problem(&mut self, kind: &'static str, line: String) {
        let e = self.problems.entry(kind).or_insert((0, line));
        e.0 += 1;
    }

    /// Decodes a line; what is not a frame is recorded as a problem.
    fn frame(&mut self, line: &[u8]) -> Option<ExtFrame> {
        self.lines_seen += 1;
        let shown = || shorten(&String::from_utf8_lossy(line), 120);
        match wire::decode_ext_frame(line) {
            // The additions the host's wire types know too are judged by
            // the SDK-side decoder, which checks their every field.
            Ok(
                ExtFrame::Unknown
                | ExtFrame::ToolProgress { .. }
                | ExtFrame::UnregisterTool { .. }
                | ExtFrame::UnregisterCommand { .. },
            ) if self.added(line) => None,
            Ok(ExtFrame::Unknown) => {
                let t = serde_json::from_slice::<Value>(line)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_default();
                let e = self.unknown_types.entry(t).or_insert((0, shown()));
                e.0 += 1;
                None
            }
            Ok(f) => {
                self.observe(&f);
                Some(f)
            }
            Err(wire::DecodeError::InvalidUtf8) => {
                self.problem("a line that is not UTF-8", shown());
                None
            }
            Err(wire::DecodeError::NotAnObject(_)) if line.iter().all(u8::is_ascii_whitespace) => {
                self.problem("an empty line", String::new());
                None
            }
            Err(wire::DecodeError::NotAnObject(_)) => {
                self.problem("a line that is not a JSON object", shown());
                None
            }
            Err(wire::DecodeError::BadFrame { frame_type, error }) => {
                self.problem(
                    "a malformed frame",
                    format!("{} ({frame_type}: {error})", shown()),
                );
                None
            }
        }
    }

    /// Registrations are recorded whenever they come: before `ready` for
    /// the registrations check, after it as late registrations.
    fn observe(&mut self, f: &ExtFrame) {
        match f {
            ExtFrame::RegisterCommand { .. }
            | ExtFrame::RegisterTool { .. }
            | ExtFrame::Subscribe { .. } => {
                if self.ready_seen {
                    self.late.push(Late::Frame(Box::new(f.clone())));
                } else {
                    self.pending_registrations.push(f.clone());
                }
            }
            _ => {}
        }
    }

    /// A frame of the protocol additions (`tool_progress`,
    /// `unregister_*`): recorded; false when the line is none of them.
    fn added(&mut self, line: &[u8]) -> bool {
        let frame = match serde_json::from_slice::<AddedFrame>(line) {
            Ok(f) => f,
            Err(e) => {
                let t = frame_type(line);
                if ["tool_progress", "unregister_tool", "unregister_command"].contains(&t.as_str())
                {
                    let shown = shorten(&String::from_utf8_lossy(line), 120);
                    self.problem("a malformed frame", format!("{shown} ({t}: {e})"));
                    return true;
                }
                return false;
            }
        };
        match frame {
            AddedFrame::ToolProgress { id, .. } => {
                if self.running.as_deref() == Some(id.as_str()) {
                    self.progress.push(Instant::now());
                } else {
                    self.stray_progress.push(id);
                }
            }
            AddedFrame::UnregisterTool { name } => self.late.push(Late::UnregisterTool(name)),
            AddedFrame::UnregisterCommand { name } => self.late.push(Late::UnregisterCommand(name)),
        }
        true
    }
}

/// `s` cut to `max` characters, with a marker when cut.
fn shorten(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().count() > max {
        out.push('…');
    }
    out
}

impl Session<'_> {
    /// `hello` first, within the hello deadline, protocol 2, manifest name.
    fn hello(&mut self, r: &mut Report<'_, '_>) -> bool {
        let started = Instant::now();
        let deadline = started + self.d.hello;
        let first = loop {
            match self.next_event(deadline) {
                None => {
                    r.fail(
                        "hello",
                        format!(
                            "no line on stdout within {} ms (the hello deadline, ZUT_HELLO_TIMEOUT_MS){}",
                            self.d.hello.as_millis(),
                            self.stderr_note()
                        ),
                    );
                    return false;
                }
                Some(Ev::Line(line)) => {
                    self.lines_seen += 1;
                    match wire::decode_ext_frame(&line) {
                        // Not a frame at all (a banner, a stray print): zut
                        // skips it with a warning, before hello too.
                        Err(wire::DecodeError::NotAnObject(_))
                        | Err(wire::DecodeError::InvalidUtf8) => {
                            self.lines_seen -= 1;
                            let _ = self.frame(&line);
                        }
                        _ => break line,
                    }
                }
                Some(ev @ (Ev::Eof | Ev::Exited(_))) => {
                    self.note(ev);
                    let status = self.exit_status(Duration::from_millis(1000));
                    r.fail(
                        "hello",
                        format!("{} before sending hello{}", status, self.stderr_note()),
                    );
                    return false;
                }
                Some(ev) => self.note(ev),
            }
        };
        let shown = shorten(&String::from_utf8_lossy(&first), 120);
        let frame = match wire::decode_ext_frame(&first) {
            Ok(f) => f,
            Err(e) => {
                r.fail(
                    "hello",
                    format!("the first line on stdout is not a frame ({e}): {shown}"),
                );
                return false;
            }
        };
        let ExtFrame::Hello {
            protocol_version,
            name,
            capabilities,
            ..
        } = frame
        else {
            r.fail(
                "hello",
                format!(
                    "the first frame is {}, but hello must come before anything else: {shown}",
                    frame_type(&first)
                ),
            );
            return false;
        };
        if protocol_version != PROTOCOL_VERSION {
            r.fail(
                "hello",
                format!("protocol_version is {protocol_version}; zut speaks {PROTOCOL_VERSION}"),
            );
            return false;
        }
        if name != self.m.name {
            r.fail(
                "hello",
                format!(
                    "hello names {name:?} but extension.json names {:?}; they must match",
                    self.m.name
                ),
            );
            return false;
        }
        let caps = if capabilities.is_empty() {
            "none".to_string()
        } else {
            capabilities.join(", ")
        };
        r.pass(
            "hello",
            format!(
                "in {} ms: protocol {PROTOCOL_VERSION}, name {name}, capabilities {caps}",
                started.elapsed().as_millis()
            ),
        );
        self.capabilities = capabilities;
        true
    }

    /// `ready` within the ready deadline after `hello_ack`.
    fn ready(&mut self, r: &mut Report<'_, '_>) {
        let started = Instant::now();
        match self.wait_for(started + self.d.ready, |f| matches!(f, ExtFrame::Ready)) {
            Waited::Frame(_) => r.pass("ready", format!("in {} ms", started.elapsed().as_millis())),
            Waited::Timeout => r.warn(
                "ready",
                format!(
                    "no ready frame within {} ms (ZUT_READY_TIMEOUT_MS); zut auto-readies it then, but tools registered later may miss the model's first request; send ready after the last registration",
                    self.d.ready.as_millis()
                ),
            ),
            Waited::Gone => {
                r.fail("ready", "the process went away before ready");
                self.gone_during = Some("startup".into());
            }
        }
    }

    /// Every registration seen so far, checked by zut's own rules.
    fn registrations(&mut self, r: &mut Report<'_, '_>) {
        let mut refused = 0;
        for f in std::mem::take(&mut self.pending_registrations) {
            let result = match f {
                ExtFrame::RegisterCommand { name, description } => {
                    self.registry.add_command(CommandEntry {
                        name,
                        description,
                        ext: 1,
                        extension: self.m.name.clone(),
                    })
                }
                ExtFrame::RegisterTool {
                    name,
                    description,
                    schema,
                    deferred,
                    interactive,
                } => self.registry.add_tool(ToolEntry {
                    name,
                    description,
                    schema: schema.unwrap_or(Value::Null),
                    deferred,
                    interactive,
                    ext: 1,
                    extension: self.m.name.clone(),
                }),
                ExtFrame::Subscribe { events, intercept } => {
                    self.subscribe(&events, &intercept);
                    for e in events.iter().filter(|e| !known_event(e)) {
                        r.warn(
                            "registrations",
                            format!("subscribe: zut sends no event {e:?}"),
                        );
                    }
                    for e in intercept.iter().filter(|e| !interceptable(e)) {
                        let all: Vec<&str> = (INTERCEPTABLE_EVENTS.iter())
                            .chain(ADDED_INTERCEPTS)
                            .copied()
                            .collect();
                        r.warn(
                            "registrations",
                            format!(
                                "subscribe: {e:?} cannot be intercepted (only {}); zut ignores it",
                                all.join(", ")
                            ),
                        );
                    }
                    Ok(())
                }
                _ => Ok(()),
            };
            if let Err(why) = result {
                refused += 1;
                r.fail("registrations", why.to_string());
            }
        }
        let commands: Vec<String> = self
            .registry
            .commands()
            .map(|c| format!("/{}", c.name))
            .collect();
        let tools: Vec<String> = self.registry.tools().map(|t| t.name.clone()).collect();
        let list = |v: &[String]| {
            if v.is_empty() {
                String::new()
            } else {
                format!(" ({})", v.join(", "))
            }
        };
        let summary = format!(
            "{} command{}{}, {} tool{}{}",
            commands.len(),
            if commands.len() == 1 { "" } else { "s" },
            list(&commands),
            tools.len(),
            if tools.len() == 1 { "" } else { "s" },
            list(&tools),
        );
        if refused > 0 {
            return;
        }
        if commands.is_empty() && tools.is_empty() {
            r.warn("registrations", "no commands and no tools registered");
        } else {
            r.pass("registrations", summary);
        }
    }

    /// Calls one tool with `{}`; an interactive one is cancelled at once.
    fn call_tool(&mut self, t: &ToolEntry, r: &mut Report<'_, '_>) {
        let check = format!("tool {}", t.name);
        if !self.alive() {
            return;
        }
        let id = self.id();
        if t.interactive {
            if !self.has_tool_cancel() {
                return r.warn(
                    check,
                    "interactive, and tool_cancel is not advertised in hello: not called (zut could never stop it)",
                );
            }
            self.child.send(&HostFrame::ToolCall {
                id: id.clone(),
                name: t.name.clone(),
                args: json!({}),
            });
            self.child.send(&HostFrame::ToolCancel { id });
            return r.pass(
                check,
                "interactive: called with {}, then cancelled with tool_cancel",
            );
        }
        self.child.send(&HostFrame::ToolCall {
            id: id.clone(),
            name: t.name.clone(),
            args: json!({}),
        });
        let started = Instant::now();
        self.running = Some(id.clone());
        self.progress.clear();
        // Each tool_progress restarts the deadline, as zut does, never
        // past ten times the tool timeout from the call.
        let cap = started + self.d.tool * 10;
        let waited = loop {
            let last = self.progress.last().copied().unwrap_or(started);
            let deadline = (last + self.d.tool).min(cap);
            let w = self.wait_for(
                deadline,
                |f| matches!(f, ExtFrame::ToolResult { id: got, .. } if *got == id),
            );
            let moved = self.progress.last().is_some_and(|p| *p > last);
            if matches!(w, Waited::Timeout) && moved && Instant::now() < cap {
                continue;
            }
            break w;
        };
        self.running = None;
        let progress = match self.progress.len() {
            0 => String::new(),
            1 => " after 1 tool_progress frame".to_string(),
            n => format!(" after {n} tool_progress frames"),
        };
        match waited {
            Waited::Frame(ExtFrame::ToolResult {
                content, is_error, ..
            }) => {
                if let Err(why) = check_content(&content) {
                    return r.fail(check, why.to_string());
                }
                let ms = format!("{}{progress}", started.elapsed().as_millis());
                if is_error {
                    let text = content
                        .iter()
                        .find_map(|b| match b {
                            wire::ContentBlock::Text { text } => Some(shorten(text, 80)),
                            _ => None,
                        })
                        .unwrap_or_default();
                    r.pass(check, format!("answered {{}} in {ms} ms with an error result: {text}"));
                } else {
                    r.pass(check, format!("answered {{}} in {ms} ms"));
                }
            }
            Waited::Frame(_) => {}
            Waited::Timeout if !self.progress.is_empty() => r.fail(
                check,
                format!(
                    "no tool_result within {} ms of the last of {} tool_progress frames (ZUT_TOOL_TIMEOUT_MS, at most ten times it in all)",
                    self.d.tool.as_millis(),
                    self.progress.len()
                ),
            ),
            Waited::Timeout => r.fail(
                check,
                format!(
                    "no tool_result within {} ms (ZUT_TOOL_TIMEOUT_MS) for a call with {{}}; an error result would do",
                    self.d.tool.as_millis()
                ),
            ),
            Waited::Gone => {
                r.fail(check, "the process went away during the call (see exit)");
                self.gone_during = Some(format!("the call to tool {}", t.name));
            }
        }
    }

    /// Invokes one command without arguments.
    fn invoke(&mut self, c: &CommandEntry, r: &mut Report<'_, '_>) {
        let check = format!("command /{}", c.name);
        if !self.alive() {
            return;
        }
        let started = Instant::now();
        match self.request_command(c) {
            Ok(Some(error)) => r.pass(
                check,
                format!(
                    "answered in {} ms with an error: {}",
                    started.elapsed().as_millis(),
                    shorten(&error, 80)
                ),
            ),
            Ok(None) => r.pass(
                check,
                format!("answered in {} ms", started.elapsed().as_millis()),
            ),
            Err(Waited::Gone) => {
                r.fail(check, "the process went away during the command (see exit)");
                self.gone_during = Some(format!("the command /{}", c.name));
            }
            Err(_) => r.fail(
                check,
                format!(
                    "no command_response within {} ms (ZUT_COMMAND_TIMEOUT_MS)",
                    self.d.command.as_millis()
                ),
            ),
        }
    }

    /// Sends `command_invoked` without args; `Ok(error text)` on an answer.
    #[allow(clippy::result_large_err)] // see `Waited`
    fn request_command(&mut self, c: &CommandEntry) -> Result<Option<String>, Waited> {
        let id = self.id();
        self.child.send(&HostFrame::CommandInvoked {
            id: id.clone(),
            name: c.name.clone(),
            args: String::new(),
        });
        let deadline = Instant::now() + self.d.command;
        match self.wait_for(
            deadline,
            |f| matches!(f, ExtFrame::CommandResponse { id: got, .. } if *got == id),
        ) {
            Waited::Frame(ExtFrame::CommandResponse { error, .. }) => {
                Ok((!error.is_empty()).then_some(error))
            }
            other => Err(other),
        }
    }

    /// A request to prove the extension still answers: the first command,
    /// else the first tool that is not interactive.
    fn probe(&mut self, tools: &[ToolEntry], commands: &[CommandEntry]) -> Result<String, String> {
        if let Some(c) = commands.first() {
            return match self.request_command(c) {
                Ok(_) => Ok(format!("/{} still answered", c.name)),
                Err(Waited::Gone) => {
                    Err(format!("the process went away; /{} got no answer", c.name))
                }
                Err(_) => Err(format!(
                    "/{} got no answer within {} ms",
                    c.name,
                    self.d.command.as_millis()
                )),
            };
        }
        if let Some(t) = tools.iter().find(|t| !t.interactive) {
            let id = self.id();
            self.child.send(&HostFrame::ToolCall {
                id: id.clone(),
                name: t.name.clone(),
                args: json!({}),
            });
            let deadline = Instant::now() + self.d.tool;
            return match self.wait_for(
                deadline,
                |f| matches!(f, ExtFrame::ToolResult { id: got, .. } if *got == id),
            ) {
                Waited::Frame(_) => Ok(format!("tool {} still answered", t.name)),
                Waited::Gone => Err(format!(
                    "the process went away; tool {} got no answer",
                    t.name
                )),
                Waited::Timeout => Err(format!(
                    "tool {} got no answer within {} ms",
                    t.name,
                    self.d.tool.as_millis()
                )),
            };
        }
        Ok("nothing registered to ask; shutdown checks the rest".into())
    }

    /// Records one `subscribe` (repeats merge, as in zut).
    fn subscribe(&mut self, events: &[String], intercept: &[String]) {
        for e in events {
            if !self.events.contains(e) {
                self.events.push(e.clone());
            }
        }
        for e in intercept {
            if interceptable(e) && !self.intercepts.contains(e) {
                self.intercepts.push(e.clone());
            }
        }
    }

    /// One `event_intercept` per subscribed intercept, each answered
    /// within the intercept deadline (zut waits that long on every model
    /// request, then goes on without the answer).
    fn intercepts(&mut self, r: &mut Report<'_, '_>) {
        for kind in self.intercepts.clone() {
            if !self.alive() {
                return;
            }
            let check = format!("intercept {kind}");
            let id = self.id();
            let mut frame = sample_payload(&kind);
            frame["type"] = json!("event_intercept");
            frame["id"] = json!(id);
            self.child.send_value(&frame);
            let started = Instant::now();
            match self.wait_for(
                started + self.d.intercept,
                |f| matches!(f, ExtFrame::EventInterceptResponse { id: got, .. } if *got == id),
            ) {
                Waited::Frame(ExtFrame::EventInterceptResponse { block, .. }) => r.pass(
                    check,
                    format!(
                        "answered in {} ms{}",
                        started.elapsed().as_millis(),
                        if block { " (block)" } else { "" }
                    ),
                ),
                Waited::Frame(_) => {}
                Waited::Timeout => r.fail(
                    check,
                    format!(
                        "no event_intercept_response within {} ms (ZUT_INTERCEPT_TIMEOUT_MS); zut would wait that long on every model request and then skip it",
                        self.d.intercept.as_millis()
                    ),
                ),
                Waited::Gone => {
                    r.fail(check, "the process went away (see exit)");
                    self.gone_during = Some(format!("the {kind} intercept"));
                }
            }
        }
    }

    /// One `event` of each subscribed kind, then a request to show the
    /// extension took them in its stride.
    fn events(&mut self, tools: &[ToolEntry], commands: &[CommandEntry], r: &mut Report<'_, '_>) {
        let sent: Vec<String> = self
            .events
            .iter()
            .filter(|e| known_event(e))
            .cloned()
            .collect();
        if sent.is_empty() || !self.alive() {
            return;
        }
        for kind in &sent {
            let mut frame = sample_payload(kind);
            frame["type"] = json!("event");
            self.child.send_value(&frame);
        }
        match self.probe(tools, commands) {
            Ok(how) => r.pass("events", format!("sent {}; {how}", sent.join(", "))),
            Err(why) => {
                if self.child.eof || self.child.status.is_some() {
                    self.gone_during = Some("the subscribed events".into());
                }
                r.fail("events", format!("after {}: {why}", sent.join(", ")));
            }
        }
    }

    /// Registrations that came after `ready`: zut takes them (late
    /// registration), so only one it would refuse is a warning.
    fn late_registrations(&mut self, r: &mut Report<'_, '_>) {
        // Whatever is already buffered.
        while let Some(ev) = self.next_event(Instant::now()) {
            match ev {
                Ev::Line(line) => {
                    let _ = self.frame(&line);
                }
                ev => self.note(ev),
            }
        }
        let mut taken = Vec::new();
        let mut fine = Vec::new();
        for late in std::mem::take(&mut self.late) {
            let late = match late {
                Late::Frame(f) => Err(*f),
                other => Ok(other),
            };
            match late {
                Err(ExtFrame::RegisterCommand { name, description }) => {
                    let shown = format!("/{name}");
                    match self.registry.add_command(CommandEntry {
                        name,
                        description,
                        ext: 1,
                        extension: self.m.name.clone(),
                    }) {
                        Ok(()) => fine.push(shown),
                        Err(why) => taken.push(why),
                    }
                }
                Err(ExtFrame::RegisterTool {
                    name,
                    description,
                    schema,
                    deferred,
                    interactive,
                }) => {
                    let shown = name.clone();
                    match self.registry.add_tool(ToolEntry {
                        name,
                        description,
                        schema: schema.unwrap_or(Value::Null),
                        deferred,
                        interactive,
                        ext: 1,
                        extension: self.m.name.clone(),
                    }) {
                        Ok(()) => fine.push(shown),
                        Err(why) => taken.push(why),
                    }
                }
                Err(ExtFrame::Subscribe { events, intercept }) => {
                    self.subscribe(&events, &intercept);
                    fine.push("subscribe".into());
                }
                Err(_) | Ok(Late::Frame(_)) => {}
                Ok(Late::UnregisterTool(name)) => fine.push(format!("unregister {name}")),
                Ok(Late::UnregisterCommand(name)) => fine.push(format!("unregister /{name}")),
            }
        }
        for why in taken {
            r.warn(
                "late registration",
                format!("after ready: {why}; zut refuses it with a warning"),
            );
        }
        if !fine.is_empty() {
            r.pass(
                "late registration",
                format!("after ready: {}; zut takes these", fine.join(", ")),
            );
        }
        if !self.stray_progress.is_empty() {
            let ids = std::mem::take(&mut self.stray_progress);
            r.fail(
                "tool progress",
                format!(
                    "{} tool_progress frame{} named no running call ({}); the id must be the tool_call's",
                    ids.len(),
                    if ids.len() == 1 { "" } else { "s" },
                    shorten(&ids.join(", "), 120)
                ),
            );
        }
    }

    /// A host frame of a type the extension cannot know must be ignored.
    fn unknown_frame(
        &mut self,
        tools: &[ToolEntry],
        commands: &[CommandEntry],
        r: &mut Report<'_, '_>,
    ) {
        if !self.alive() {
            return;
        }
        let mut frame =
            br#"{"type":"zut_ext_test_unknown","note":"a frame type from a newer zut; ignore it"}"#
                .to_vec();
        frame.push(b'\n');
        self.child.send_raw(frame);
        match self.probe(tools, commands) {
            Ok(how) => r.pass("unknown frame", format!("ignored; {how}")),
            Err(why) => {
                if !self.child.eof && self.child.status.is_none() {
                    r.fail("unknown frame", why);
                } else {
                    r.fail("unknown frame", format!("not tolerated: {why}"));
                    self.gone_during = Some("an unknown host frame".into());
                }
            }
        }
    }

    fn has_tool_cancel(&self) -> bool {
        self.capabilities.iter().any(|c| c == CAP_TOOL_CANCEL)
    }

    /// With `tool_cancel` advertised, one for an unknown id is ignored.
    fn tool_cancel(
        &mut self,
        tools: &[ToolEntry],
        commands: &[CommandEntry],
        r: &mut Report<'_, '_>,
    ) {
        if !self.alive() || !self.has_tool_cancel() {
            return;
        }
        self.child.send(&HostFrame::ToolCancel {
            id: "zut-ext-test-never-called".into(),
        });
        match self.probe(tools, commands) {
            Ok(how) => r.pass(
                "tool_cancel",
                format!("one for an unknown id was ignored; {how}"),
            ),
            Err(why) => {
                if self.child.eof || self.child.status.is_some() {
                    self.gone_during = Some("tool_cancel for an unknown id".into());
                }
                r.fail(
                    "tool_cancel",
                    format!("one for an unknown id was not tolerated: {why}"),
                );
            }
        }
    }

    /// `shutdown`, then stdin closed: `shutdown_ack` and an exit within the
    /// grace; a holdout gets SIGTERM, then SIGKILL.
    fn shutdown(&mut self, r: &mut Report<'_, '_>) {
        if let Some(during) = self.gone_during.clone() {
            let status = self.exit_status(self.d.shutdown_grace);
            return r.fail(
                "exit",
                format!(
                    "{status} during {during}, before shutdown{}",
                    self.stderr_note()
                ),
            );
        }
        let started = Instant::now();
        let deadline = started + self.d.shutdown_grace;
        self.child.send(&HostFrame::Shutdown);
        self.child.close_input();
        match self.wait_for(deadline, |f| matches!(f, ExtFrame::ShutdownAck)) {
            Waited::Frame(_) => {
                r.pass(
                    "shutdown",
                    format!("acknowledged in {} ms", started.elapsed().as_millis()),
                );
            }
            Waited::Gone => {
                r.warn("shutdown", "exited without sending shutdown_ack first");
            }
            Waited::Timeout => {
                r.fail(
                    "shutdown",
                    format!(
                        "no shutdown_ack within {} ms (ZUT_SHUTDOWN_GRACE_MS)",
                        self.d.shutdown_grace.as_millis()
                    ),
                );
            }
        }
        // What is left of the grace for the exit itself.
        if self.wait_exit(deadline) {
            return self.exit_verdict(r);
        }
        self.child.signal(Signal::TERM);
        if self.wait_exit(Instant::now() + self.d.kill_grace) {
            return r.fail(
                "exit",
                format!(
                    "still running {} ms after shutdown; it stopped on SIGTERM",
                    self.d.shutdown_grace.as_millis()
                ),
            );
        }
        self.child.signal(Signal::KILL);
        let _ = self.wait_exit(Instant::now() + Duration::from_millis(1000));
        r.fail(
            "exit",
            format!(
                "still running {} ms after shutdown and {} ms after SIGTERM; killed",
                self.d.shutdown_grace.as_millis(),
                self.d.kill_grace.as_millis()
            ),
        );
    }

    fn exit_verdict(&mut self, r: &mut Report<'_, '_>) {
        match self.child.status {
            Some(s) if s.success() => r.pass("exit", "exit status 0"),
            Some(s) => r.warn(
                "exit",
                format!("{} after shutdown{}", describe(s), self.stderr_note()),
            ),
            None => {}
        }
    }

    /// Waits (reading stdout meanwhile) until the process has exited.
    fn wait_exit(&mut self, deadline: Instant) -> bool {
        while self.child.status.is_none() {
            match self.next_event(deadline) {
                None => return false,
                Some(Ev::Line(line)) => {
                    let _ = self.frame(&line);
                }
                Some(ev) => self.note(ev),
            }
        }
        true
    }

    /// How the process ended, waiting up to `wait` for it; killed after.
    fn exit_status(&mut self, wait: Duration) -> String {
        if !self.wait_exit(Instant::now() + wait) {
            self.child.signal(Signal::KILL);
            if !self.wait_exit(Instant::now() + Duration::from_millis(1000)) {
                return "closed stdout but kept running".into();
            }
            return "closed stdout but kept running (killed)".into();
        }
        match self.child.status {
            Some(s) => format!("exited ({})", describe(s)),
            None => "exited".into(),
        }
    }

    fn stderr_note(&self) -> String {
        match self.child.stderr_tail() {
            Some(line) => format!("; its stderr ends with: {line}"),
            None => String::new(),
        }
    }

    /// One verdict for everything on stdout that was not a known frame.
    fn report_stdout(&mut self, r: &mut Report<'_, '_>) {
        // Whatever is still buffered.
        while let Some(ev) = self.next_event(Instant::now()) {
            match ev {
                Ev::Line(line) => {
                    let _ = self.frame(&line);
                }
                ev => self.note(ev),
            }
        }
        if self.problems.is_empty() && self.unknown_types.is_empty() {
            if self.lines_seen > 0 {
                r.pass(
                    "stdout",
                    format!(
                        "all {} line{} were frames",
                        self.lines_seen,
                        if self.lines_seen == 1 { "" } else { "s" }
                    ),
                );
            }
            return;
        }
        for (kind, (count, first)) in &self.problems {
            let times = if *count == 1 {
                String::new()
            } else {
                format!(" ({count} lines)")
            };
            // zut skips a line that is not a frame with a warning and the
            // extension stays connected; a malformed frame of a known type
            // or an over-long line costs more.
            let skipped = matches!(
                *kind,
                "a line that is not UTF-8" | "an empty line" | "a line that is not a JSON object"
            );
            let why = format!("{kind}{times}; stdout is for frames only, log to stderr: {first}");
            if skipped {
                r.warn("stdout", format!("{why} (zut skips it with a warning)"));
            } else {
                r.fail("stdout", why);
            }
        }
        for (t, (count, first)) in &self.unknown_types {
            let times = if *count == 1 {
                String::new()
            } else {
                format!(" ({count} times)")
            };
            r.warn(
                "stdout",
                format!("frame type {t:?} is unknown to zut, which ignores it{times}: {first}"),
            );
        }
    }
}

/// Whether zut sends events named `e`.
fn known_event(e: &str) -> bool {
    KNOWN_EVENTS.contains(&e) || ADDED_EVENTS.contains(&e)
}

/// Whether zut lets extensions intercept `e`.
fn interceptable(e: &str) -> bool {
    INTERCEPTABLE_EVENTS.contains(&e) || ADDED_INTERCEPTS.contains(&e)
}

/// A plausible payload of event `kind` (without `type` and `id`).
fn sample_payload(kind: &str) -> Value {
    let session = json!({"id": "zut-ext-test-session", "cwd": "/"});
    let mut v = match kind {
        "turn_start" => json!({"step": 1}),
        "turn_end" => json!({"stop": "end_turn"}),
        "tool_call" => {
            json!({"tool_id": "call_1", "tool_name": "bash", "tool_args": {"command": "ls", "timeout": 5}})
        }
        "tool_confirmation_requested" => {
            json!({"tool_id": "call_1", "tool_name": "bash", "tool_args": {"command": "ls", "timeout": 5}, "tool_preview": "ls"})
        }
        "assistant_message" => json!({"text": "zut ext test: an assistant message"}),
        "user_message" => json!({"text": "zut ext test: a prompt"}),
        "tool_result" => {
            json!({"tool_id": "call_1", "tool_name": "read", "tool_args": {"path": "README.md"}, "is_error": false, "content": [{"type": "text", "text": "zut ext test: a result"}]})
        }
        "agent_end" => json!({"text": "zut ext test: a final answer", "steps": 1, "continued": 0}),
        k if k.starts_with("session_") => json!({"session": session, "state": null}),
        _ => json!({}),
    };
    v["event"] = json!(kind);
    v
}

/// The `type` of a frame line, for messages.
fn frame_type(line: &[u8]) -> String {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| "untyped".into())
}

/// "exit status N" or "signal N".
fn describe(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => s.to_string(),
    }
}
