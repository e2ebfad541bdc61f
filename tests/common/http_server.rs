//! A tiny scripted HTTP/1.1 server for provider tests.
//!
//! One thread on `127.0.0.1:0` answers each connection with the next
//! [`Reply`] of its script and records the request (method, path, headers,
//! body). Event-stream bodies go out in deliberately uneven pieces, each its
//! own HTTP chunk, flushed with `TCP_NODELAY` and short pauses, so the client
//! sees lines and events split across reads. After the script runs out every
//! request gets a 500 naming the problem. Stalling replies hold the socket
//! open until the server is dropped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, Once};
use std::thread::JoinHandle;
use std::time::Duration;

/// Makes provider retries sleep ~1 ms. Every test calls it before building
/// a provider; `Once` keeps the single `set_var` ahead of any reader.
pub fn fast_retries() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| std::env::set_var("ZUT_RETRY_BASE_MS", "1"));
}

/// How a reply's body is delivered.
#[derive(Clone)]
enum Body {
    /// `content-length` body in one write.
    Fixed(Vec<u8>),
    /// Chunked, split into uneven pieces; `finish` writes the final chunk.
    Chunked { data: Vec<u8>, finish: bool },
    /// Chunked pieces, then silence until the server is dropped.
    Stall(Vec<u8>),
    /// No status line at all: silence until the server is dropped.
    Silent,
    /// Chunked pieces, then `beat` every `every` until the server is
    /// dropped: a connection kept alive without any real data.
    KeepAlive {
        data: Vec<u8>,
        beat: Vec<u8>,
        every: Duration,
    },
}

/// One scripted response.
#[derive(Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
}

impl Reply {
    /// `200` with an event stream (chunked, split) ending cleanly.
    pub fn sse(body: &str) -> Reply {
        Reply::stream(Body::Chunked {
            data: body.as_bytes().to_vec(),
            finish: true,
        })
    }

    /// `200` event stream whose connection drops after `body`, mid-chunked
    /// encoding (no final chunk).
    pub fn sse_cut(body: &str) -> Reply {
        Reply::stream(Body::Chunked {
            data: body.as_bytes().to_vec(),
            finish: false,
        })
    }

    /// `200` event stream that sends `body` and then stalls.
    pub fn sse_stall(body: &str) -> Reply {
        Reply::stream(Body::Stall(body.as_bytes().to_vec()))
    }

    /// `200` event stream that sends `body`, then `beat` (an SSE comment
    /// or a `ping` event) every `every_ms` and nothing else.
    pub fn sse_keepalive(body: &str, beat: &str, every_ms: u64) -> Reply {
        Reply::stream(Body::KeepAlive {
            data: body.as_bytes().to_vec(),
            beat: beat.as_bytes().to_vec(),
            every: Duration::from_millis(every_ms),
        })
    }

    /// Accepts the request and never answers.
    pub fn silent() -> Reply {
        Reply {
            status: 0,
            headers: Vec::new(),
            body: Body::Silent,
        }
    }

    /// A JSON body with `status`.
    pub fn json(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Body::Fixed(body.as_bytes().to_vec()),
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn stream(body: Body) -> Reply {
        Reply {
            status: 200,
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("cache-control".into(), "no-cache".into()),
            ],
            body,
        }
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The value of a header (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }
}

/// The running server; dropping it ends stalls and the thread.
pub struct TestServer {
    url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    release: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Starts serving `replies` in order.
    pub fn start(replies: Vec<Reply>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (release, released) = mpsc::channel();
        let thread = {
            let requests = requests.clone();
            let stop = stop.clone();
            std::thread::spawn(move || serve(listener, replies, requests, stop, released))
        };
        TestServer {
            url,
            requests,
            stop,
            release: Some(release),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.release.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(
    listener: TcpListener,
    replies: Vec<Reply>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    released: mpsc::Receiver<()>,
) {
    let mut script = replies.into_iter();
    while !stop.load(Ordering::SeqCst) {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
        };
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = stream.set_nodelay(true);
        let mut reader = BufReader::new(stream);
        let Some(request) = read_request(&mut reader) else {
            continue;
        };
        requests.lock().unwrap().push(request);
        let reply = script.next().unwrap_or_else(|| {
            Reply::json(
                500,
                r#"{"error":{"message":"test server: no scripted reply left"}}"#,
            )
        });
        let _ = write_reply(reader.get_mut(), &reply, &released);
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let len = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

fn write_reply(
    s: &mut TcpStream,
    reply: &Reply,
    released: &mpsc::Receiver<()>,
) -> std::io::Result<()> {
    if let Body::Silent = reply.body {
        hold(released);
        return Ok(());
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("connection: close\r\n");
    match &reply.body {
        Body::Fixed(data) => {
            head.push_str(&format!("content-length: {}\r\n\r\n", data.len()));
            s.write_all(head.as_bytes())?;
            s.write_all(data)?;
        }
        Body::Chunked { data, finish } => {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            s.write_all(head.as_bytes())?;
            write_pieces(s, data)?;
            if *finish {
                s.write_all(b"0\r\n\r\n")?;
            }
        }
        Body::Stall(data) => {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            s.write_all(head.as_bytes())?;
            write_pieces(s, data)?;
            hold(released);
        }
        Body::KeepAlive { data, beat, every } => {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            s.write_all(head.as_bytes())?;
            write_pieces(s, data)?;
            while let Err(mpsc::RecvTimeoutError::Timeout) = released.recv_timeout(*every) {
                s.write_all(format!("{:x}\r\n", beat.len()).as_bytes())?;
                s.write_all(beat)?;
                s.write_all(b"\r\n")?;
                s.flush()?;
            }
        }
        Body::Silent => {}
    }
    s.flush()?;
    let _ = s.shutdown(std::net::Shutdown::Both);
    Ok(())
}

/// Writes `data` as HTTP chunks of uneven sizes (1 to 64 bytes), pausing
/// now and then so the pieces reach the client as separate reads.
fn write_pieces(s: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    const SIZES: [usize; 7] = [1, 7, 3, 13, 29, 2, 64];
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let n = SIZES[i % SIZES.len()].min(rest.len());
        let (piece, tail) = rest.split_at(n);
        s.write_all(format!("{n:x}\r\n").as_bytes())?;
        s.write_all(piece)?;
        s.write_all(b"\r\n")?;
        s.flush()?;
        if i % 5 == 4 {
            std::thread::sleep(Duration::from_millis(1));
        }
        rest = tail;
        i += 1;
    }
    Ok(())
}

/// Waits until the server is dropped (or 20 s pass).
fn hold(released: &mpsc::Receiver<()>) {
    let _ = released.recv_timeout(Duration::from_secs(20));
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// A small HTTP proxy on `127.0.0.1:0` that speaks `CONNECT` (what zut's
/// client uses for every proxied request), tunnels to the target and
/// records each `CONNECT` target and the first bytes sent through the
/// tunnel (plain HTTP for an `http://` target, so the request line shows).
pub struct TestProxy {
    url: String,
    seen: Arc<Mutex<Vec<(String, String)>>>,
    connects: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl TestProxy {
    pub fn start() -> TestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        listener.set_nonblocking(true).expect("nonblocking proxy");
        let url = format!("http://{}", listener.local_addr().expect("proxy addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connects = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let seen = seen.clone();
            let connects = connects.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((s, _)) => {
                            let seen = seen.clone();
                            let connects = connects.clone();
                            std::thread::spawn(move || tunnel(s, &seen, &connects));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(2)),
                    }
                }
            });
        }
        TestProxy {
            url,
            seen,
            connects,
            stop,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// (CONNECT target, first line through the tunnel) per connection.
    pub fn seen(&self) -> Vec<(String, String)> {
        self.seen.lock().unwrap().clone()
    }

    /// Every `CONNECT` target asked for, as soon as it was asked (also
    /// when the tunnel could not be made, or carried TLS).
    pub fn connects(&self) -> Vec<String> {
        self.connects.lock().unwrap().clone()
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn tunnel(client: TcpStream, seen: &Mutex<Vec<(String, String)>>, connects: &Mutex<Vec<String>>) {
    let _ = client.set_nonblocking(false);
    let _ = client.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(client);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    if parts.next() != Some("CONNECT") {
        let _ = reader
            .get_mut()
            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n");
        return;
    }
    let target = parts.next().unwrap_or_default().to_string();
    connects.lock().unwrap().push(target.clone());
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
    }
    let Ok(upstream) = TcpStream::connect(&target) else {
        let _ = reader
            .get_mut()
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
        return;
    };
    let _ = reader
        .get_mut()
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n");
    let mut first = String::new();
    let _ = reader.read_line(&mut first);
    seen.lock()
        .unwrap()
        .push((target, first.trim_end().to_string()));
    let mut up_write = upstream.try_clone().expect("clone upstream");
    let _ = up_write.write_all(first.as_bytes());
    let _ = up_write.write_all(reader.buffer());
    let client = reader.into_inner();
    let mut client_read = client.try_clone().expect("clone client");
    let mut client_write = client;
    let mut up_read = upstream;
    let forward = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_read, &mut up_write);
        let _ = up_write.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut up_read, &mut client_write);
    let _ = client_write.shutdown(std::net::Shutdown::Both);
    let _ = forward.join();
}
