//! Benchmark: the interactive terminal's drawing (issue "terminal UI").
//!
//! (a) Render time of one frame at 100×30 with a 1,000-message transcript
//!     (500 prompts, 500 answers of a few wrapped rows, 100 tool calls),
//!     against an empty screen rendered in the same run.
//! (b) Event-to-screen latency while 10,000 `ext_notify` events per second
//!     arrive for two seconds: the real UI loop (`drive`) runs on a test
//!     backend that, at every flush, reads the newest note on the screen;
//!     an event's latency is the time from its send to the first flush
//!     that shows it (or a newer one). Shown against the empty-screen
//!     render time.
//!
//! (c) The same 1,000-message transcript as markdown with headings, lists
//!     and a highlighted code block per answer, against the same text
//!     without markup, one frame each (after the first, as in use).
//! (d) Streaming a 2,000-line markdown answer in 10,000 deltas, a frame
//!     drawn every 10 deltas, against the same answer as plain text (seven
//!     runs of each, interleaved, medians compared).
//!
//! (e) Key-to-screen while typing into a 5,000-line prompt: one key
//!     press handled and the frame drawn, at 100×30.
//!
//! (f) First frame: from the start of the one boot (session, host, MCP)
//!     through the engine to the first frame drawn, with 20 extensions of
//!     which one never sends `ready` (19 tiny Rust ones), against the same
//!     with none (eleven of each, interleaved, medians compared).
//!
//! Run: `cargo bench --bench tui` (or `-- render` / `-- latency` /
//! `-- markdown` / `-- stream` / `-- typing` / `-- first`).

mod common;

use common::*;
use crossbeam_channel::unbounded;
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::Terminal;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zut::agent::Decision;
use zut::core::frontend::{Change, Core, CoreState, Submitted};
use zut::events::Event;
use zut::modes::tui::theme::ColorDepth;
use zut::modes::tui::{drive, App, AppConfig, Input, Then};

/// A core that does nothing: only the UI is measured.
struct Idle;

impl Core for Idle {
    fn prompt(&self, _: String) -> Submitted {
        Submitted::Started
    }
    fn command(&self, _: String) -> Submitted {
        Submitted::Started
    }
    fn shell(&self, _: String) -> Submitted {
        Submitted::Started
    }
    fn abort(&self, _: bool) {}
    fn confirm(&self, _: u64, _: Decision) {}
    fn panel_key(&self, _: &str, _: &str, _: &str, _: Option<String>) {}
    fn panel_close(&self, _: &str, _: &str) {}
    fn change(&self, _: Change) {}
    fn list_sessions(&self) {}
    fn settled(&self) -> crossbeam_channel::Receiver<()> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let _ = tx.send(());
        rx
    }
    fn state(&self) -> CoreState {
        CoreState {
            provider: "script".into(),
            model: "bench".into(),
            ..CoreState::default()
        }
    }
    fn shutdown(&self) {}
}

/// Time from boot to the first frame drawn, over `dirs` as `--ext` paths.
fn first_frame(sb: &Sandbox, dirs: &[std::path::PathBuf]) -> Duration {
    use zut::core::boot::{boot, Mode, Run, SessionChoice};
    let mut host = sb.config(zut::host::deadlines::Deadlines::default());
    host.interactive = true;
    let run = Run {
        mode: Mode::Interactive,
        prompt: None,
        host,
        discovery: zut::host::discovery::Options {
            cwd: sb.cwd(),
            zut_home: sb.home(),
            ext_paths: dirs.to_vec(),
            no_extensions: true,
        },
        provider: zut::provider::Settings {
            provider: "script".into(),
            zut_home: sb.home(),
            ..Default::default()
        },
        max_steps: 10,
        yolo: false,
        no_skills: true,
        session: SessionChoice::None,
        no_hooks: true,
        mcp: zut::mcp::config::Sources {
            cwd: sb.cwd(),
            zut_home: sb.home(),
            files: Vec::new(),
            none: true,
        },
    };
    let front = zut::commands::Mode::Terminal;
    let (tx, _rx) = unbounded::<Event>();
    let start = Instant::now();
    let booted = match boot(&run, front, &tx, &zut::cancel::CancelToken::never()) {
        Ok(b) => b,
        Err(code) => panic!("boot failed with {code}"),
    };
    let engine = booted.engine(&run, tx, front, true);
    let mut app = App::new(
        AppConfig {
            depth: ColorDepth::TrueColor,
            ..AppConfig::default()
        },
        Instant::now(),
    );
    app.set_state(engine.state(), Then::Rebuild);
    let mut t = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    t.draw(|f| app.draw(f)).expect("draw");
    let took = start.elapsed();
    engine.shutdown();
    took
}

fn new_app() -> App {
    let mut app = App::new(
        AppConfig {
            depth: ColorDepth::TrueColor,
            ..AppConfig::default()
        },
        Instant::now(),
    );
    app.set_state(Idle.state(), Then::Nothing);
    app
}

fn long_app() -> App {
    let mut app = new_app();
    for i in 0..500 {
        app.on_event(Event::UserMessage {
            text: format!("question number {i}: what does this function do and why?"),
        });
        for w in 0..40 {
            app.on_event(Event::TextDelta {
                delta: format!("word{w} "),
            });
        }
        if i % 5 == 0 {
            app.on_event(Event::ToolCall {
                id: format!("c{i}"),
                name: "read".into(),
                args: serde_json::json!({"path": "src/main.rs"}),
            });
        }
        app.on_event(Event::Done);
    }
    app
}

/// An answer with markup (`md`) or the same words without it.
fn answer_text(i: usize, md: bool) -> String {
    if md {
        format!(
            "## Answer {i}\n\nThe function **parses** the `input` and *returns* a value:\n\n- first step\n- second step\n\n```rust\nfn parse(s: &str) -> Option<u32> {{\n    s.trim().parse().ok()\n}}\n```\n"
        )
    } else {
        format!(
            "Answer {i}\n\nThe function parses the input and returns a value:\n\nfirst step\nsecond step\n\nfn parse(s: &str) -> Option<u32> {{\n    s.trim().parse().ok()\n}}\n"
        )
    }
}

fn transcript_app(md: bool) -> App {
    let mut app = new_app();
    for i in 0..500 {
        app.on_event(Event::UserMessage {
            text: format!("question number {i}: what does this function do?"),
        });
        app.on_event(Event::TextDelta {
            delta: answer_text(i, md),
        });
        app.on_event(Event::Done);
    }
    app
}

/// Total time to stream `text` in `chunks` deltas, drawing every 10.
fn stream(text: &str, chunks: usize) -> Duration {
    let mut app = new_app();
    let mut t = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    app.on_event(Event::UserMessage { text: "go".into() });
    let chars: Vec<char> = text.chars().collect();
    let per = chars.len().div_ceil(chunks);
    let start = Instant::now();
    for (n, piece) in chars.chunks(per).enumerate() {
        app.on_event(Event::TextDelta {
            delta: piece.iter().collect(),
        });
        if n % 10 == 0 {
            t.draw(|f| app.draw(f)).expect("draw");
        }
    }
    app.on_event(Event::Done);
    t.draw(|f| app.draw(f)).expect("draw");
    start.elapsed()
}

/// One key press into a 5,000-line prompt and the frame that shows it.
fn typing() -> Samples {
    let mut app = new_app();
    let text: String = (0..5_000)
        .map(|i| format!("line {i} of a long prompt pasted to be edited\n"))
        .collect();
    // An extension's `insert` puts text in the editor as it is (a paste
    // would fold it).
    app.on_event(Event::CommandResult {
        name: "bench".into(),
        action: "insert".into(),
        text,
    });
    let mut t = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    let mut n = 0u32;
    Samples::time(50, 1000, || {
        n += 1;
        let c = if n.is_multiple_of(20) { ' ' } else { 'x' };
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        t.draw(|f| app.draw(f)).expect("draw");
    })
}

/// Median and p99 of one frame's draw.
fn render(app: &App) -> Samples {
    let mut t = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    Samples::time(50, 1000, || {
        t.draw(|f| app.draw(f)).expect("draw");
    })
}

/// A test backend that notes, at every flush, the newest note on screen.
struct Watching {
    inner: TestBackend,
    seen: Arc<Mutex<Vec<(u64, Instant)>>>,
}

impl Watching {
    fn newest(&self) -> Option<u64> {
        let buf = self.inner.buffer();
        for y in (0..buf.area.height).rev() {
            let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
            if let Some(at) = row.find("[flood] n") {
                let digits: String = row[at + 9..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                if let Ok(n) = digits.parse() {
                    return Some(n);
                }
            }
        }
        None
    }
}

impl Backend for Watching {
    fn draw<'a, I: Iterator<Item = (u16, u16, &'a Cell)>>(&mut self, content: I) -> io::Result<()> {
        self.inner.draw(content)
    }
    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }
    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }
    fn get_cursor_position(&mut self) -> io::Result<Position> {
        self.inner.get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, p: P) -> io::Result<()> {
        self.inner.set_cursor_position(p)
    }
    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()
    }
    fn clear_region(&mut self, t: ClearType) -> io::Result<()> {
        self.inner.clear_region(t)
    }
    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }
    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()?;
        if let Some(n) = self.newest() {
            if let Ok(mut s) = self.seen.lock() {
                s.push((n, Instant::now()));
            }
        }
        Ok(())
    }
}

/// Per-event latency under a 10,000 events/s flood for `secs` seconds.
fn flood_latency(rate: u64, secs: u64) -> Samples {
    let (ev_tx, ev_rx) = unbounded();
    let (in_tx, in_rx) = unbounded();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let backend = Watching {
        inner: TestBackend::new(100, 30),
        seen: seen.clone(),
    };
    let ui = std::thread::spawn(move || {
        let mut t = Terminal::new(backend).expect("terminal");
        let mut app = new_app();
        drive(
            &mut t,
            &mut app,
            &Idle,
            &ev_rx,
            &in_rx,
            &mut || {},
            &mut |_: &App| {},
        )
    });
    let total = rate * secs;
    let per_ms = rate / 1000;
    let mut sent = Vec::with_capacity(total as usize);
    let start = Instant::now();
    for i in 0..total {
        if i % per_ms == 0 {
            let due = start + Duration::from_millis(i / per_ms);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        sent.push(Instant::now());
        ev_tx
            .send(Event::ExtNotify {
                extension: "flood".into(),
                level: "info".into(),
                message: format!("n{i}"),
            })
            .expect("send");
    }
    // Let the last frame land, then quit.
    std::thread::sleep(Duration::from_millis(100));
    in_tx
        .send(Input::Term(TermEvent::Key(KeyEvent::new(
            KeyCode::Char('d'),
            KeyModifiers::CONTROL,
        ))))
        .expect("send");
    ui.join().expect("ui thread");
    let seen = seen.lock().expect("lock").clone();
    let mut out = Samples::new();
    let mut j = 0;
    for (i, t) in sent.iter().enumerate() {
        while j < seen.len() && seen[j].0 < i as u64 {
            j += 1;
        }
        if let Some((_, shown)) = seen.get(j) {
            out.push(shown.saturating_duration_since(*t));
        }
    }
    out
}

fn main() {
    let mut report = Report::new(
        "tui",
        "terminal UI render time and event-to-screen latency",
        &[
            "frames drawn on ratatui's TestBackend at 100x30 (truecolor theme);",
            "baseline: an empty screen drawn the same way in the same run",
        ],
    );
    let empty = render(&new_app());
    report.section("render");
    report.line("empty screen, one frame", empty.summary());
    if selected("render") {
        let app = long_app();
        let long = render(&app);
        report.line("1,000-message transcript, one frame", long.summary());
        report.line(
            "ratio to empty (median)",
            format!("{:.2}x", ratio(long.median(), empty.median())),
        );
        report.line(
            "p99 (scheduler noise on a shared machine)",
            fmt(long.quantile(0.99)),
        );
        let p90 = long.p90();
        report.goal(
            p90 <= Duration::from_millis(4),
            "1,000 messages render in <= 4 ms (p90)",
            fmt(p90),
        );
    }
    if selected("markdown") {
        report.section("markdown transcript");
        let plain = render(&transcript_app(false));
        let md = render(&transcript_app(true));
        report.line("1,000 messages, plain text, one frame", plain.summary());
        report.line("1,000 messages, markdown + code, one frame", md.summary());
        let r = ratio(md.p90(), plain.p90());
        report.goal(
            md.p90() <= Duration::from_millis(4),
            "markdown transcript renders in <= 4 ms (p90)",
            fmt(md.p90()),
        );
        report.goal(r <= 1.5, "markdown <= 1.5x plain (p90)", format!("{r:.2}x"));
    }
    if selected("stream") {
        report.section("streaming a 2,000-line answer in 10,000 deltas");
        let md: String = (0..155).map(|i| answer_text(i, true)).collect();
        let plain: String = (0..155).map(|i| answer_text(i, false)).collect();
        let lines = md.lines().count();
        // Seven runs of each, interleaved; the medians are compared (one
        // run is ~100 ms, and a single pair moves by ±20 % on a busy box).
        let (mut tp, mut tm) = (Samples::new(), Samples::new());
        for _ in 0..7 {
            tp.push(stream(&plain, 10_000));
            tm.push(stream(&md, 10_000));
        }
        report.line("markdown lines", lines);
        report.line("plain text", tp.summary());
        report.line("markdown", tm.summary());
        let r = ratio(tm.median(), tp.median());
        report.goal(
            r <= 1.5,
            "markdown streaming <= 1.5x plain",
            format!("{r:.2}x"),
        );
    }
    if selected("latency") {
        report.section("latency under 10,000 notify events/s for 2 s");
        let lat = flood_latency(10_000, 2);
        report.line("events measured", lat.len());
        report.line("event to screen", lat.summary());
        let p99 = lat.quantile(0.99);
        report.line(
            "p99 / empty-screen render",
            format!("{:.1}x", ratio(p99, empty.median())),
        );
        report.goal(
            lat.len() >= 19_000 && p99 <= Duration::from_millis(16),
            "p99 event-to-screen <= 16 ms",
            fmt(p99),
        );
    }
    if selected("first") {
        report.section("first frame, 20 extensions of which one never sends ready");
        let sb = Sandbox::new();
        let mut dirs: Vec<std::path::PathBuf> = (0..19)
            .map(|i| echo_ext(&sb, &format!("echo-{i:02}"), false))
            .collect();
        let script = fixtures().join("no-ready.sh").display().to_string();
        dirs.push(sb.ext("never-ready", "sh", &[script, "never-ready".into()]));
        let (mut none, mut twenty) = (Samples::new(), Samples::new());
        // One of each first, unmeasured: page cache and lazy statics.
        first_frame(&sb, &[]);
        first_frame(&sb, &dirs);
        for _ in 0..11 {
            none.push(first_frame(&sb, &[]));
            twenty.push(first_frame(&sb, &dirs));
        }
        report.line("no extensions", none.summary());
        report.line("20 extensions, one never ready", twenty.summary());
        let r = ratio(twenty.median(), none.median());
        report.goal(
            r <= 1.2,
            "first frame with 20 extensions <= 1.2x with none",
            format!("{r:.2}x"),
        );
    }
    if selected("typing") {
        report.section("typing into a 5,000-line prompt");
        let keys = typing();
        report.line("key to screen", keys.summary());
        let p99 = keys.quantile(0.99);
        report.goal(
            p99 <= Duration::from_millis(16),
            "p99 key-to-screen <= 16 ms",
            fmt(p99),
        );
    }
    report.finish();
}
