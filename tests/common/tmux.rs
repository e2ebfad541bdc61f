//! The terminal tests' one tmux driver: a detached session on a private
//! server socket, typed into with `send-keys` and read with
//! `capture-pane`, killed on drop. Each test file builds the shell line
//! that starts zut its own way and hands it to [`Pane::launch`].

#![allow(dead_code)]

use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a wait for the screen may take.
pub const DEADLINE: Duration = Duration::from_secs(15);

/// `s` quoted for `sh`.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// One tmux server with one session, `zut`, running a shell line.
pub struct Pane {
    socket: String,
}

impl Pane {
    /// Starts `line` under `sh -c` in a detached `width`×`height` session.
    pub fn launch(prefix: &str, (width, height): (u16, u16), line: &str) -> Pane {
        static N: AtomicUsize = AtomicUsize::new(0);
        let pane = Pane {
            socket: format!(
                "zut-{prefix}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            ),
        };
        let (w, h) = (width.to_string(), height.to_string());
        let out = pane.tmux(&[
            "new-session",
            "-d",
            "-x",
            &w,
            "-y",
            &h,
            "-s",
            "zut",
            "sh",
            "-c",
            line,
        ]);
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pane
    }

    /// Runs a tmux command against this server.
    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux (apt-get install -y tmux)")
    }

    /// Types text literally.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "zut", "-l", text]);
    }

    /// Sends named keys (`Enter`, `Escape`, `Down`, `C-d`, …).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "zut"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// A bracketed paste of `text`.
    pub fn paste(&self, text: &str) {
        self.tmux(&["set-buffer", "-b", "p", text]);
        self.tmux(&["paste-buffer", "-p", "-b", "p", "-t", "zut"]);
    }

    /// The screen, with extra `capture-pane` flags (`-e` for colour).
    pub fn capture_with(&self, extra: &[&str]) -> String {
        let mut args = vec!["capture-pane", "-p", "-t", "zut"];
        args.extend_from_slice(extra);
        String::from_utf8_lossy(&self.tmux(&args).stdout).into_owned()
    }

    /// The screen as text.
    pub fn capture(&self) -> String {
        self.capture_with(&[])
    }

    /// Polls the screen until `ok` holds; panics with the screen naming
    /// `what` after [`DEADLINE`].
    pub fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + DEADLINE;
        loop {
            let pane = self.capture();
            if ok(&pane) {
                return pane;
            }
            if Instant::now() > end {
                panic!("{what} within {DEADLINE:?}; the pane:\n{pane}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `text` is on the screen.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_until(&format!("{text:?} did not appear"), |p| p.contains(text))
    }

    /// Waits until `text` is gone from the screen.
    pub fn wait_gone(&self, text: &str) -> String {
        self.wait_until(&format!("{text:?} still shown"), |p| !p.contains(text))
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}
