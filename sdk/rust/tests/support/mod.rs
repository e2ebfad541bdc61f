//! Test support shared by the SDK's integration tests: an in-memory pipe
//! and a [`Session`] that runs an [`Extension`] over two of them, playing
//! the host's side.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc;
use std::time::Duration;
use zut_ext::Extension;

pub mod pipe {
    //! An in-memory byte pipe: the writer's chunks come out of the reader
    //! in order; dropping the writer is the end of input.
    use std::io::{self, Read, Write};
    use std::sync::mpsc;

    pub struct Writer(mpsc::Sender<Vec<u8>>);
    pub struct Reader {
        rx: mpsc::Receiver<Vec<u8>>,
        chunk: Vec<u8>,
        at: usize,
    }

    pub fn pipe() -> (Writer, Reader) {
        let (tx, rx) = mpsc::channel();
        let reader = Reader {
            rx,
            chunk: Vec::new(),
            at: 0,
        };
        (Writer(tx), reader)
    }

    impl Write for Writer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .send(buf.to_vec())
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "reader gone"))?;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Read for Reader {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            while self.at == self.chunk.len() {
                match self.rx.recv() {
                    Ok(chunk) => {
                        self.chunk = chunk;
                        self.at = 0;
                    }
                    Err(_) => return Ok(0),
                }
            }
            let n = buf.len().min(self.chunk.len() - self.at);
            buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }
}

/// How long a test waits for a frame the extension should write.
pub const WAIT: Duration = Duration::from_secs(10);

/// A running extension and the host's end of its pipes.
pub struct Session {
    to_ext: Option<pipe::Writer>,
    frames: mpsc::Receiver<Value>,
    done: mpsc::Receiver<Result<(), String>>,
}

impl Session {
    /// Starts `ext` on a thread; nothing is sent yet.
    pub fn start(mut ext: Extension) -> Session {
        let (to_ext, ext_in) = pipe::pipe();
        let (ext_out, from_ext) = pipe::pipe();
        let (done_tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done_tx.send(ext.run_with(ext_in, ext_out).map_err(|e| e.to_string()));
        });
        let (frames_tx, frames) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(from_ext).lines() {
                let v: Value = serde_json::from_str(&line.expect("utf-8")).expect("JSON line");
                if frames_tx.send(v).is_err() {
                    return;
                }
            }
        });
        Session {
            to_ext: Some(to_ext),
            frames,
            done,
        }
    }

    /// Starts `ext` and completes the handshake, returning the frames it
    /// wrote up to and including `ready`.
    pub fn ready(ext: Extension) -> (Session, Vec<Value>) {
        let mut s = Session::start(ext);
        s.send(&serde_json::json!({"type":"hello_ack","protocol_version":2,"cwd":"/proj","data_dir":"/d"}));
        let mut seen = Vec::new();
        loop {
            let f = s.next();
            let ready = f["type"] == "ready";
            seen.push(f);
            if ready {
                return (s, seen);
            }
        }
    }

    /// Writes one host frame.
    pub fn send(&mut self, frame: &Value) {
        let mut line = serde_json::to_vec(frame).unwrap();
        line.push(b'\n');
        self.to_ext
            .as_mut()
            .expect("input open")
            .write_all(&line)
            .expect("extension reads");
    }

    /// Writes one raw line (for malformed input).
    pub fn send_raw(&mut self, line: &str) {
        let w = self.to_ext.as_mut().expect("input open");
        w.write_all(line.as_bytes()).unwrap();
        w.write_all(b"\n").unwrap();
    }

    /// The next frame the extension writes.
    pub fn next(&self) -> Value {
        self.frames
            .recv_timeout(WAIT)
            .expect("the extension wrote a frame in time")
    }

    /// The next frame of type `t`, skipping others.
    pub fn next_of(&self, t: &str) -> Value {
        loop {
            let f = self.next();
            if f["type"] == t {
                return f;
            }
        }
    }

    /// Closes the extension's input.
    pub fn close_input(&mut self) {
        self.to_ext = None;
    }

    /// Waits for `run_with` to return.
    pub fn finish(&self) -> Result<(), String> {
        self.done
            .recv_timeout(WAIT)
            .expect("run_with returned in time")
    }

    /// Everything still written until the output closes (call after finish).
    pub fn rest(&self) -> Vec<Value> {
        self.frames.iter().collect()
    }
}
