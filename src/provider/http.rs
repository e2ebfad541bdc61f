//! Streaming HTTP with retries and prompt cancellation, shared by the
//! `anthropic` and `openai` providers.
//!
//! One model call is one [`HttpClient::stream`]: POST a JSON body, then hand
//! the server-sent events of a 2xx answer to a provider-specific parser.
//!
//! How cancellation stays prompt: each attempt runs the blocking `ureq`
//! exchange (connect, send, read) on its own short-lived thread, which
//! forwards the body in pieces over a bounded channel. The caller's thread
//! reads those pieces through [`ResponseBody`], a `BufRead` whose every wait
//! is a `select!` on the piece channel, the cancel token and an idle
//! deadline. Abort therefore returns at once even when the server stalls
//! before or after its headers. An attempt that ends any other way than
//! with the whole body read (abort, idle timeout, a parse error) shuts its
//! `ureq` agent down, which closes the socket under the worker's blocked
//! read, so the worker ends at once too; the next attempt gets a fresh
//! agent. This is why zut uses `ureq` 3: version 2 has no way to interrupt
//! a read in progress (a worker waited out the socket timeout) and no
//! `NO_PROXY` support.
//!
//! The idle deadline (`ZUT_PROVIDER_IDLE_TIMEOUT_MS`, default 120 s) counts
//! from the last real event: SSE comment lines and Anthropic `ping` events
//! keep the connection alive but do not move it. Proxies come from the
//! environment ([`super::proxy`]); connecting is bounded by 10 s.
//!
//! Retries: at most [`MAX_RETRIES`] after the first attempt (4 tries), on
//! HTTP 408, 429, 500, 502, 503, 504, 529 and on connection failures, with
//! exponential backoff from `ZUT_RETRY_BASE_MS` (default 500 ms, doubling)
//! or the server's `Retry-After` seconds, capped at 30 s, slept through the
//! cancel token, each announced as [`StreamEvent::Retry`]. Never once a
//! delta reached the caller: the user has seen it.
//!
//! Invariants: nothing here panics on network input; every failure becomes
//! a one-line [`ProviderError`]; an abort always wins over any other error.

use super::sse::{SseEvent, SseReader};
use super::{ProviderError, Response, StreamEvent};
use crate::cancel::CancelToken;
use crossbeam_channel::{Receiver, Sender};
use serde_json::Value;
use std::io::{self, BufRead, Read};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connect timeout for one attempt.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Retries after the first attempt.
pub(crate) const MAX_RETRIES: u32 = 3;
/// Upper bound of one backoff sleep, `Retry-After` included.
pub(crate) const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);
/// Env override of the first backoff delay, in milliseconds.
pub(crate) const RETRY_BASE_ENV: &str = "ZUT_RETRY_BASE_MS";
/// Default first backoff delay.
pub(crate) const DEFAULT_RETRY_BASE_MS: u64 = 500;
/// Env override of the idle deadline (no bytes from the server), in ms.
pub(crate) const IDLE_TIMEOUT_ENV: &str = "ZUT_PROVIDER_IDLE_TIMEOUT_MS";
/// Default idle deadline.
pub(crate) const DEFAULT_IDLE_TIMEOUT_MS: u64 = 120_000;
/// Statuses worth another attempt.
const RETRY_STATUSES: [u16; 7] = [408, 429, 500, 502, 503, 504, 529];
/// How much of a model list is read.
const MAX_LIST_BODY: u64 = 8 * 1024 * 1024;
/// How much of an error body is read.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// How much of a non-JSON error body is shown.
const ERROR_SNIPPET_CHARS: usize = 200;
/// Pieces buffered between the worker and the reader.
const PIECE_QUEUE: usize = 32;
/// How long the end of a finished stream is waited for.
const DRAIN_WAIT: Duration = Duration::from_millis(250);

/// One POST to send (cloned cheaply for each attempt).
#[derive(Clone)]
pub(crate) struct Post {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Arc<Vec<u8>>,
}

impl Post {
    /// A JSON POST to `url` with `headers` (content type added here).
    pub(crate) fn json(
        url: String,
        mut headers: Vec<(&'static str, String)>,
        body: &Value,
    ) -> Self {
        headers.push(("content-type", "application/json".to_string()));
        headers.push(("accept", "text/event-stream".to_string()));
        Post {
            url,
            headers,
            body: Arc::new(body.to_string().into_bytes()),
        }
    }
}

/// Backoff schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    pub base: Duration,
    pub max_retries: u32,
    pub cap: Duration,
}

impl RetryPolicy {
    /// The default policy, base delay from `ZUT_RETRY_BASE_MS`.
    pub(crate) fn from_env() -> Self {
        RetryPolicy {
            base: env_duration(RETRY_BASE_ENV, DEFAULT_RETRY_BASE_MS),
            max_retries: MAX_RETRIES,
            cap: MAX_RETRY_DELAY,
        }
    }

    /// The sleep before retry number `retry` (0-based).
    pub(crate) fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let backoff = self.base.saturating_mul(1u32 << retry.min(16));
        retry_after.unwrap_or(backoff).min(self.cap)
    }
}

/// A duration in milliseconds from the environment, else the default.
fn env_duration(name: &str, default_ms: u64) -> Duration {
    let ms = match std::env::var(name) {
        Ok(v) => v.trim().parse::<u64>().unwrap_or_else(|_| {
            log::warn!("ignoring {name}={v:?}: not a number of milliseconds");
            default_ms
        }),
        Err(_) => default_ms,
    };
    Duration::from_millis(ms)
}

/// `Retry-After` in seconds (HTTP dates are ignored).
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(secs.min(3600.0)))
}

/// The API key for `provider`: `explicit` (`--api-key`), else the env
/// value, else `auth.json` under `home` (skipped when `home` is empty).
/// Empty strings count as absent.
pub(crate) fn resolve_key(
    explicit: Option<&str>,
    env_value: Option<String>,
    home: &std::path::Path,
    provider: &str,
) -> Result<Option<String>, ProviderError> {
    let given = explicit.map(str::to_string).or(env_value);
    if let Some(key) = given
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
    {
        return Ok(Some(key));
    }
    if home.as_os_str().is_empty() {
        return Ok(None);
    }
    crate::config::api_key(home, provider).map_err(|e| ProviderError::Config(e.to_string()))
}

/// The Config error for a missing key, saying every way to set one.
pub(crate) fn missing_key(
    label: &str,
    env: &str,
    provider: &str,
    home: &std::path::Path,
) -> ProviderError {
    let auth = if home.as_os_str().is_empty() {
        "$ZUT_HOME/auth.json".to_string()
    } else {
        crate::config::auth_path(home).display().to_string()
    };
    ProviderError::Config(format!(
        "no {label} API key: pass --api-key KEY, set {env}, or write {{\"{provider}\":{{\"api_key\":\"KEY\"}}}} to {auth}"
    ))
}

/// `given` (`--base-url`) or `default`, without trailing slashes; must be
/// an http(s) URL.
pub(crate) fn base_url(given: Option<&str>, default: &str) -> Result<String, ProviderError> {
    let url = given
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .unwrap_or(default);
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(ProviderError::Config(format!(
            "--base-url {url:?} must start with http:// or https://"
        )));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// Forwards text deltas to the caller and remembers that it did, which
/// forbids any retry from then on.
pub(crate) struct Sink<'a> {
    on_event: &'a mut dyn FnMut(StreamEvent<'_>),
    delivered: bool,
}

impl<'a> Sink<'a> {
    pub(crate) fn new(on_event: &'a mut dyn FnMut(StreamEvent<'_>)) -> Self {
        Sink {
            on_event,
            delivered: false,
        }
    }

    /// Delivers one text delta (empty ones are dropped).
    pub(crate) fn text(&mut self, delta: &str) {
        if !delta.is_empty() {
            self.delivered = true;
            (self.on_event)(StreamEvent::TextDelta(delta));
        }
    }

    /// Delivers one thinking delta (empty ones are dropped).
    pub(crate) fn thinking(&mut self, delta: &str) {
        if !delta.is_empty() {
            self.delivered = true;
            (self.on_event)(StreamEvent::ThinkingDelta(delta));
        }
    }

    /// Announces the attempt about to be made after a failure.
    fn retry(&mut self, attempt: u32, wait: Duration, reason: &str) {
        (self.on_event)(StreamEvent::Retry {
            attempt,
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            reason,
        });
    }
}

/// Converts a read error of the event stream into a provider error.
pub(crate) fn read_error(e: io::Error) -> ProviderError {
    ProviderError::Transport(e.to_string())
}

/// What turns a 2xx event stream into a finished result: reads events,
/// reports text through the [`Sink`].
pub(crate) trait ParseStream<T>:
    FnMut(&mut SseReader<&mut ResponseBody<'_>>, &mut Sink<'_>) -> Result<T, ProviderError>
{
}

impl<T, F> ParseStream<T> for F where
    F: FnMut(&mut SseReader<&mut ResponseBody<'_>>, &mut Sink<'_>) -> Result<T, ProviderError>
{
}

/// A blocking HTTP client for streamed model calls.
pub(crate) struct HttpClient {
    /// Replaced by a fresh one whenever an attempt had to shut it down.
    agent: Mutex<ureq::Agent>,
    /// The proxy every request goes through, from the environment.
    proxy: Option<ureq::Proxy>,
    retry: RetryPolicy,
    connect: Duration,
    idle: Duration,
}

/// Why one attempt failed, and whether another may follow.
struct Failure {
    error: ProviderError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn fatal(error: ProviderError) -> Self {
        Failure {
            error,
            retryable: false,
            retry_after: None,
        }
    }
}

/// One provider's parser of a streamed answer: fed each server-sent event
/// until it says the answer is complete, then asked for the response.
pub(crate) trait EventParser {
    /// Handles one event; `Ok(true)` when the stream is complete.
    fn handle(&mut self, event: &SseEvent, sink: &mut Sink<'_>) -> Result<bool, ProviderError>;
    /// The assembled answer.
    fn finish(self) -> Result<Response, ProviderError>;
}

impl HttpClient {
    /// Streams `post` through a fresh parser per attempt (see [`HttpClient::stream`]).
    pub(crate) fn stream_events<P: EventParser>(
        &self,
        post: &Post,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(StreamEvent<'_>),
        mut new_parser: impl FnMut() -> P,
    ) -> Result<Response, ProviderError> {
        self.stream(post, cancel, on_event, |sse, sink| {
            let mut parser = new_parser();
            while let Some(event) = sse.next_event().map_err(read_error)? {
                if event.event != "ping" {
                    sse.get_mut().touch();
                }
                if parser.handle(&event, sink)? {
                    break;
                }
            }
            parser.finish()
        })
    }

    /// A client for requests to `url` (which picks the proxy), with the
    /// configured timeouts (defaults where not), the env-tunable retry base
    /// and idle deadline (the environment wins over config).
    /// A proxy variable that is not a usable URL is a Config error.
    pub(crate) fn for_url(url: &str, timeouts: super::Timeouts) -> Result<Self, ProviderError> {
        let proxy = match super::proxy::proxy_for(url, &super::proxy::env_lookup) {
            Some(p) => Some(ureq::Proxy::new(&p).map_err(|e| {
                ProviderError::Config(format!(
                    "the proxy {p:?} from the environment is not usable: {e}"
                ))
            })?),
            None => None,
        };
        let default_idle = timeouts
            .idle
            .map_or(DEFAULT_IDLE_TIMEOUT_MS, |d| d.as_millis() as u64);
        let idle = env_duration(IDLE_TIMEOUT_ENV, default_idle);
        let connect = timeouts.connect.unwrap_or(CONNECT_TIMEOUT);
        Ok(Self::with(proxy, RetryPolicy::from_env(), connect, idle))
    }

    fn with(
        proxy: Option<ureq::Proxy>,
        retry: RetryPolicy,
        connect: Duration,
        idle: Duration,
    ) -> Self {
        let agent = Mutex::new(new_agent(proxy.clone(), connect, idle));
        HttpClient {
            agent,
            proxy,
            retry,
            connect,
            idle,
        }
    }

    /// The agent for the next attempt.
    fn agent(&self) -> ureq::Agent {
        match self.agent.lock() {
            Ok(a) => a.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// GETs `url` and parses the JSON answer (`GET /v1/models`); one
    /// attempt, bounded by the connect and idle deadlines.
    pub(crate) fn get_json(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
    ) -> Result<Value, ProviderError> {
        let mut request = self.agent().get(url);
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        let response = request
            .call()
            .map_err(|e| ProviderError::Transport(request_error(url, &e)))?;
        let status = response.status().as_u16();
        let text = response
            .into_body()
            .with_config()
            .limit(MAX_LIST_BODY)
            .read_to_string()
            .map_err(|e| ProviderError::Transport(one_line(&e.to_string())))?;
        if !(200..300).contains(&status) {
            return Err(ProviderError::Http {
                status,
                message: error_message(&text),
            });
        }
        serde_json::from_str(&text)
            .map_err(|e| ProviderError::Protocol(format!("the model list is not JSON: {e}")))
    }

    /// Shuts the agent down (interrupting its worker) and makes a new one.
    fn renew(&self, old: ureq::Agent) {
        old.shutdown();
        let fresh = new_agent(self.proxy.clone(), self.connect, self.idle);
        match self.agent.lock() {
            Ok(mut a) => *a = fresh,
            Err(poisoned) => *poisoned.into_inner() = fresh,
        }
    }

    /// POSTs `post` and feeds a 2xx event stream to `parse`, retrying
    /// transient failures as the module doc says. `parse` reports text
    /// through the [`Sink`] and returns the finished result.
    pub(crate) fn stream<T>(
        &self,
        post: &Post,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(StreamEvent<'_>),
        mut parse: impl ParseStream<T>,
    ) -> Result<T, ProviderError> {
        let mut sink = Sink::new(on_event);
        let mut retry = 0;
        loop {
            let failure = match self.attempt(post, cancel, &mut sink, &mut parse) {
                Ok(value) => return Ok(value),
                Err(f) => f,
            };
            if cancel.is_cancelled() {
                return Err(ProviderError::Aborted);
            }
            if !failure.retryable || sink.delivered || retry >= self.retry.max_retries {
                return Err(failure.error);
            }
            let delay = self.retry.delay(retry, failure.retry_after);
            sink.retry(retry + 2, delay, &failure.error.to_string());
            log::warn!(
                "{} failed ({}); retry {} of {} in {:?}",
                post.url,
                failure.error,
                retry + 1,
                self.retry.max_retries,
                delay
            );
            if !cancel.sleep(delay) {
                return Err(ProviderError::Aborted);
            }
            retry += 1;
        }
    }

    /// One attempt: send, check the status, parse the stream.
    fn attempt<T>(
        &self,
        post: &Post,
        cancel: &CancelToken,
        sink: &mut Sink<'_>,
        parse: &mut impl ParseStream<T>,
    ) -> Result<T, Failure> {
        if cancel.is_cancelled() {
            return Err(Failure::fatal(ProviderError::Aborted));
        }
        log::debug!("POST {}", post.url);
        let agent = self.agent();
        let rx = spawn_exchange(agent.clone(), post.clone()).map_err(Failure::fatal)?;
        let mut body = ResponseBody::new(rx, cancel, self.idle);
        let result = Self::read_answer(&mut body, sink, parse);
        if !body.clean {
            self.renew(agent);
        }
        result
    }

    fn read_answer<T>(
        body: &mut ResponseBody<'_>,
        sink: &mut Sink<'_>,
        parse: &mut impl ParseStream<T>,
    ) -> Result<T, Failure> {
        let head = body.head().map_err(|e| body.failure(read_error(e)))?;
        if !(200..300).contains(&head.status) {
            return Err(error_status(&head, body));
        }
        if head.content_type.starts_with("application/json") {
            return Err(Failure::fatal(unexpected_json(body)));
        }
        let result = parse(&mut SseReader::new(&mut *body), sink);
        let result = result.map_err(|e| body.failure(e));
        if result.is_ok() {
            // Drain what little may follow the last event (the chunked
            // terminator) so the connection can be reused.
            body.drain();
        }
        result
    }
}

/// The failure for a non-2xx answer, its body boiled down to one line.
fn error_status(head: &Head, body: &mut ResponseBody<'_>) -> Failure {
    let text = body.read_text(MAX_ERROR_BODY);
    Failure {
        error: ProviderError::Http {
            status: head.status,
            message: error_message(&text),
        },
        retryable: RETRY_STATUSES.contains(&head.status),
        retry_after: head.retry_after.as_deref().and_then(parse_retry_after),
    }
}

/// A 2xx answer that is JSON instead of an event stream: usually an error
/// object from a proxy, or a server that ignored `"stream": true`.
fn unexpected_json(body: &mut ResponseBody<'_>) -> ProviderError {
    let text = body.read_text(MAX_ERROR_BODY);
    match json_error_message(&text) {
        Some(message) => ProviderError::Model(message),
        None => ProviderError::Protocol(format!(
            "expected an event stream, got JSON: {}",
            snippet(&text)
        )),
    }
}

/// The message of an error body: `error.message` (Anthropic, OpenAI),
/// `error` as a string or top-level `message` (Ollama and other
/// compatibles), else the first 200 characters, always one line.
pub(crate) fn error_message(body: &str) -> String {
    json_error_message(body).unwrap_or_else(|| {
        let s = snippet(body);
        if s.is_empty() {
            "empty response body".to_string()
        } else {
            s
        }
    })
}

/// `error.message`, `error` (string) or `message` of a JSON error body,
/// followed by `error.code` in parentheses when that is a word the message
/// does not already say (OpenAI-compatible servers put the kind of error,
/// such as `context_length_exceeded`, only there).
pub(crate) fn json_error_message(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let message = match v.get("error") {
        Some(Value::Object(e)) => e.get("message").and_then(Value::as_str),
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    }
    .or_else(|| v.get("message").and_then(Value::as_str))?;
    let mut line = one_line(message);
    if line.is_empty() {
        return None;
    }
    let code = v
        .get("error")
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.contains(char::is_whitespace));
    if let Some(code) = code.filter(|c| !line.contains(c)) {
        line = format!("{line} ({})", snippet(code));
    }
    Some(line)
}

/// The first 200 characters of `text`, on one line.
fn snippet(text: &str) -> String {
    let line = one_line(text);
    match line.char_indices().nth(ERROR_SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Collapses every run of whitespace (newlines included) into one space.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Status line facts the reader needs.
#[derive(Debug, Clone)]
pub(crate) struct Head {
    pub status: u16,
    pub retry_after: Option<String>,
    pub content_type: String,
}

/// What the exchange thread sends.
enum Piece {
    Head(Head),
    Data(Vec<u8>),
    End,
    Failed { message: String, retryable: bool },
}

/// Starts the blocking exchange on its own thread.
fn spawn_exchange(agent: ureq::Agent, post: Post) -> Result<Receiver<Piece>, ProviderError> {
    let (tx, rx) = crossbeam_channel::bounded(PIECE_QUEUE);
    std::thread::Builder::new()
        .name("zut-http".to_string())
        .spawn(move || run_exchange(&agent, &post, &tx))
        .map_err(|e| ProviderError::Transport(format!("cannot start the HTTP thread: {e}")))?;
    Ok(rx)
}

/// A `ureq` agent with zut's settings: statuses are answers, not errors;
/// no redirects; connect bounded by `connect` ([`CONNECT_TIMEOUT`] unless
/// configured); a socket read bounded by the idle deadline as a backstop
/// (the caller's own deadline and [`ureq::Agent::shutdown`] normally end a
/// stalled worker first).
fn new_agent(proxy: Option<ureq::Proxy>, connect: Duration, idle: Duration) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(proxy)
        .timeout_connect(Some(connect))
        .timeout_per_read(Some(idle.saturating_add(Duration::from_secs(5))))
        .user_agent(concat!("zut/", env!("CARGO_PKG_VERSION")))
        .build();
    ureq::Agent::new_with_config(config)
}

/// Sends the request and forwards status, then body pieces, until the end,
/// an error, or the reader hanging up.
fn run_exchange(agent: &ureq::Agent, post: &Post, tx: &Sender<Piece>) {
    let mut request = agent.post(&post.url);
    for (name, value) in &post.headers {
        request = request.header(*name, value.as_str());
    }
    let response = match request.send(&post.body[..]) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Piece::Failed {
                retryable: error_is_retryable(&e),
                message: request_error(&post.url, &e),
            });
            return;
        }
    };
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let head = Head {
        status: response.status().as_u16(),
        retry_after: header("retry-after"),
        content_type: header("content-type")
            .unwrap_or_default()
            .to_ascii_lowercase(),
    };
    if tx.send(Piece::Head(head)).is_ok() {
        pump(response.into_body().into_reader(), tx);
    }
}

/// Copies the body into pieces.
fn pump(mut reader: impl Read, tx: &Sender<Piece>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let piece = match reader.read(&mut buf) {
            Ok(0) => Piece::End,
            Ok(n) => Piece::Data(buf[..n].to_vec()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => Piece::Failed {
                message: "no data from the provider before the idle timeout".to_string(),
                retryable: false,
            },
            Err(e) => Piece::Failed {
                message: format!("the stream ended early: {e}"),
                retryable: true,
            },
        };
        let last = !matches!(piece, Piece::Data(_));
        if tx.send(piece).is_err() || last {
            return;
        }
    }
}

/// A failed request on one line, naming where it went: `ureq`'s own text
/// (`io: Connection refused (os error 111)`) does not say which server
/// refused, and a wrong `--base-url` is the usual cause.
fn request_error(url: &str, e: &ureq::Error) -> String {
    // scheme://host:port, without the path (or any credentials in it).
    let origin = match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split('/').next().unwrap_or(rest);
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}")
        }
        None => url.to_string(),
    };
    let what = match e {
        ureq::Error::Io(io) => io.to_string(),
        other => other.to_string(),
    };
    one_line(&format!("{origin}: {what}"))
}

/// Connection-level failures that another attempt may cure.
fn error_is_retryable(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::ConnectionFailed | ureq::Error::ConnectProxyFailed(_) => true,
        ureq::Error::Timeout(t) => matches!(t, ureq::Timeout::Connect),
        ureq::Error::Io(io) => io.kind() != io::ErrorKind::TimedOut,
        _ => false,
    }
}

/// The response body as seen by the caller's thread: a `BufRead` whose
/// waits also end on cancellation or when the server goes idle.
pub(crate) struct ResponseBody<'c> {
    rx: Receiver<Piece>,
    cancel: &'c CancelToken,
    idle: Duration,
    /// When the server has been silent for too long; moved by [`Self::touch`].
    deadline: Instant,
    /// The whole body arrived: the connection is in a reusable state.
    clean: bool,
    chunk: Vec<u8>,
    pos: usize,
    ended: bool,
    /// Whether the last failure may be retried (`None`: no failure seen).
    failure_retryable: Option<bool>,
}

impl<'c> ResponseBody<'c> {
    fn new(rx: Receiver<Piece>, cancel: &'c CancelToken, idle: Duration) -> Self {
        ResponseBody {
            rx,
            cancel,
            idle,
            deadline: Instant::now() + idle,
            clean: false,
            chunk: Vec::new(),
            pos: 0,
            ended: false,
            failure_retryable: None,
        }
    }

    /// Real data arrived: the idle deadline starts again.
    pub(crate) fn touch(&mut self) {
        self.deadline = Instant::now() + self.idle;
    }

    /// Reads what is left of the body if it comes at once (the end of a
    /// chunked stream after its last event), so the connection stays usable.
    fn drain(&mut self) {
        let until = Instant::now() + DRAIN_WAIT;
        while !self.ended {
            self.pos = self.chunk.len();
            crossbeam_channel::select! {
                recv(self.rx) -> piece => match piece {
                    Ok(Piece::Data(data)) => self.chunk = data,
                    Ok(Piece::End) => {
                        self.ended = true;
                        self.clean = true;
                    }
                    _ => self.ended = true,
                },
                recv(self.cancel.receiver()) -> _ => return,
                default(until.saturating_duration_since(Instant::now())) => return,
            }
        }
    }

    /// Waits for the status line and headers.
    fn head(&mut self) -> io::Result<Head> {
        match self.next_piece()? {
            Piece::Head(head) => {
                self.touch();
                Ok(head)
            }
            _ => Err(self.fail("the HTTP exchange sent no status", false)),
        }
    }

    /// Classifies a parse or read error of this attempt.
    fn failure(&self, error: ProviderError) -> Failure {
        if self.cancel.is_cancelled() {
            return Failure::fatal(ProviderError::Aborted);
        }
        let retryable = match error {
            ProviderError::Transport(_) => self.failure_retryable.unwrap_or(true),
            _ => false,
        };
        Failure {
            error,
            retryable,
            retry_after: None,
        }
    }

    /// Up to `limit` bytes of the rest of the body, lossily decoded; a read
    /// error just ends the text.
    fn read_text(&mut self, limit: usize) -> String {
        let mut bytes = Vec::new();
        while bytes.len() < limit {
            let Ok(buf) = self.fill_buf() else { break };
            if buf.is_empty() {
                break;
            }
            let n = buf.len().min(limit - bytes.len());
            bytes.extend_from_slice(&buf[..n]);
            self.consume(n);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The next piece, or an error on cancel, idle timeout or a vanished
    /// worker.
    fn next_piece(&mut self) -> io::Result<Piece> {
        if self.cancel.is_cancelled() {
            return Err(io::Error::other("aborted"));
        }
        crossbeam_channel::select! {
            recv(self.rx) -> piece => match piece {
                Ok(Piece::Failed { message, retryable }) => Err(self.fail(&message, retryable)),
                Ok(piece) => Ok(piece),
                Err(_) => Err(self.fail("the HTTP exchange stopped unexpectedly", true)),
            },
            recv(self.cancel.receiver()) -> _ => Err(io::Error::other("aborted")),
            default(self.deadline.saturating_duration_since(Instant::now())) => {
                let secs = self.idle.as_secs_f64();
                Err(self.fail(&format!("no data from the provider for {secs} s"), false))
            }
        }
    }

    /// Records a failure and returns it as an I/O error.
    fn fail(&mut self, message: &str, retryable: bool) -> io::Error {
        self.failure_retryable = Some(retryable);
        self.ended = true;
        io::Error::other(message.to_string())
    }
}

impl Read for ResponseBody<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buf = self.fill_buf()?;
        let n = buf.len().min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ResponseBody<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos >= self.chunk.len() && !self.ended {
            match self.next_piece()? {
                Piece::Data(data) => {
                    self.chunk = data;
                    self.pos = 0;
                }
                Piece::End => {
                    self.ended = true;
                    self.clean = true;
                }
                Piece::Head(_) | Piece::Failed { .. } => {
                    return Err(self.fail("the HTTP exchange sent a second status", false))
                }
            }
        }
        Ok(&self.chunk[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.chunk.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Instant;

    fn policy(base_ms: u64) -> RetryPolicy {
        RetryPolicy {
            base: Duration::from_millis(base_ms),
            max_retries: MAX_RETRIES,
            cap: MAX_RETRY_DELAY,
        }
    }

    #[test]
    fn backoff_doubles_honours_retry_after_and_is_capped() {
        let p = policy(500);
        let ms = |d: Duration| d.as_millis();
        assert_eq!(ms(p.delay(0, None)), 500);
        assert_eq!(ms(p.delay(1, None)), 1000);
        assert_eq!(ms(p.delay(2, None)), 2000);
        assert_eq!(ms(p.delay(9, None)), 30_000);
        assert_eq!(ms(p.delay(0, Some(Duration::from_secs(7)))), 7000);
        assert_eq!(ms(p.delay(0, Some(Duration::from_secs(600)))), 30_000);
        assert_eq!(ms(policy(u64::MAX).delay(40, None)), 30_000);
    }

    #[test]
    fn retry_after_seconds_only() {
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("NaN"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("1e300"), Some(Duration::from_secs(3600)));
    }

    #[test]
    fn error_messages_are_one_line() {
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens:\n too big"}}"#;
        assert_eq!(error_message(anthropic), "max_tokens: too big");
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","code":null}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(r#"{"error":{"message":"Too big.","code":"context_length_exceeded"}}"#),
            "Too big. (context_length_exceeded)"
        );
        assert_eq!(
            error_message(r#"{"error":{"message":"code 502 upstream","code":502}}"#),
            "code 502 upstream"
        );
        assert_eq!(
            error_message(
                r#"{"error":{"message":"context_length_exceeded","code":"context_length_exceeded"}}"#
            ),
            "context_length_exceeded"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(
            error_message("<html>\n<b>502</b>\n</html>"),
            "<html> <b>502</b> </html>"
        );
        assert_eq!(error_message(""), "empty response body");
        let long = "é".repeat(500);
        assert_eq!(error_message(&long).chars().count(), 201);
    }

    /// Serves one connection: reads the request head, writes `reply`, then
    /// keeps the socket open without a word for `hold`.
    fn stalling_server(reply: &'static [u8], hold: Duration) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = listener.accept() {
                let mut buf = [0u8; 4096];
                let _ = io::Read::read(&mut s, &mut buf);
                let _ = s.write_all(reply);
                let _ = s.flush();
                std::thread::sleep(hold);
            }
        });
        url
    }

    fn client(idle_ms: u64) -> HttpClient {
        HttpClient::with(
            None,
            policy(1),
            CONNECT_TIMEOUT,
            Duration::from_millis(idle_ms),
        )
    }

    fn run(client: &HttpClient, url: String, cancel: &CancelToken) -> Result<(), ProviderError> {
        let post = Post::json(url, vec![], &Value::Null);
        client.stream(&post, cancel, &mut |_| {}, |sse, _| {
            while sse.next_event().map_err(read_error)?.is_some() {}
            Ok(())
        })
    }

    #[test]
    fn a_refused_connection_names_the_server_but_not_its_credentials() {
        // A port that was just free: nothing listens on it.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://user:secret@127.0.0.1:{port}/v1/messages");
        match run(&client(1000), url, &CancelToken::never()) {
            Err(ProviderError::Transport(m)) => {
                assert!(m.starts_with(&format!("http://127.0.0.1:{port}: ")), "{m}");
                assert!(m.to_lowercase().contains("refused"), "{m}");
                assert!(!m.contains("secret") && !m.contains("/v1/messages"), "{m}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn idle_stream_is_a_transport_error_without_retry() {
        let url = stalling_server(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: x\n\n",
            Duration::from_secs(3),
        );
        let err = run(&client(200), url, &CancelToken::never()).unwrap_err();
        match err {
            ProviderError::Transport(m) => assert!(m.contains("no data"), "{m}"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn abort_wins_while_waiting_for_headers() {
        let url = stalling_server(b"", Duration::from_secs(5));
        let (canceller, token) = crate::cancel::pair();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            canceller.cancel();
        });
        let started = Instant::now();
        let err = run(&client(60_000), url, &token).unwrap_err();
        assert_eq!(err, ProviderError::Aborted);
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    /// Serves one connection: `reply`, then `beat` every 20 ms; reports
    /// when the client closed the socket (a read returned 0 or failed).
    fn beating_server(
        reply: &'static [u8],
        beat: &'static [u8],
    ) -> (String, crossbeam_channel::Receiver<Instant>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let mut buf = [0u8; 4096];
            let _ = io::Read::read(&mut s, &mut buf);
            let _ = s.write_all(reply);
            let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(10) {
                match io::Read::read(&mut s, &mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
                if s.write_all(beat).and_then(|()| s.flush()).is_err() {
                    break;
                }
            }
            let _ = tx.send(Instant::now());
        });
        (url, rx)
    }

    const STREAM_HEAD: &[u8] =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\nevent: message_start\ndata: {}\n\n";

    #[test]
    fn comments_and_pings_do_not_hold_off_the_idle_deadline() {
        for beat in [
            &b": keep-alive\n\n"[..],
            b"event: ping\ndata: {\"type\":\"ping\"}\n\n",
        ] {
            let (url, _closed) = beating_server(STREAM_HEAD, beat);
            let started = Instant::now();
            let err = run(&client(300), url, &CancelToken::never()).unwrap_err();
            match err {
                ProviderError::Transport(m) => assert!(m.contains("no data"), "{m}"),
                other => panic!("unexpected {other:?}"),
            }
            assert!(started.elapsed() < Duration::from_secs(3));
        }
    }

    #[test]
    fn abort_mid_stream_returns_at_once_and_closes_the_connection() {
        // A silent server: only the shutdown can free the worker's read.
        let (url, closed) = beating_server(STREAM_HEAD, b"");
        let (canceller, token) = crate::cancel::pair();
        let c = client(60_000);
        let fired = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            canceller.cancel();
            Instant::now()
        });
        let err = run(&c, url, &token).unwrap_err();
        let returned = Instant::now();
        let fired = fired.join().unwrap();
        assert_eq!(err, ProviderError::Aborted);
        assert!(returned.duration_since(fired) < Duration::from_millis(200));
        // The worker let go of the socket: the server sees it closed.
        let at = closed
            .recv_timeout(Duration::from_secs(5))
            .expect("connection closed after the abort");
        assert!(
            at.duration_since(fired) < Duration::from_millis(500),
            "closed {:?} after the abort",
            at.duration_since(fired)
        );
    }
}
