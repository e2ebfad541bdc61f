//! The interactive terminal UI (`zut` with no `-p`/`--mode`).
//!
//! Shape: one UI thread owns the terminal and runs one `select!` over
//! terminal input (read by its own thread, with SIGTERM/SIGHUP folded into
//! the same channel) and the core's [`Event`] channel, with a timeout that
//! comes due when the next frame may be drawn. Input and events only change
//! the [`App`] and yield [`Intent`]s, which [`drive`] executes against the
//! [`Core`]; drawing happens only when something changed and at most once
//! per [`FRAME`]: a change right after a frame waits for the rest of that
//! frame, never for a whole tick, so the screen lags an event by at most
//! one frame. Events are drained in
//! batches (up to [`EVENT_BATCH`]) before a render, so a flood of events
//! never freezes the screen.
//!
//! Invariants: the terminal is restored (raw mode off, main screen,
//! bracketed paste off, cursor shown) when [`run`] returns, on panic and on
//! SIGTERM/SIGHUP; nothing is ever logged to the terminal; the UI thread
//! never waits on an extension (every [`Core`] method returns at once).

mod app;
mod approve;
mod context;
mod draw;
mod editor;
mod export;
mod footer;
mod highlight;
mod history;
mod keys;
mod layout;
mod markdown;
mod palette;
mod scroll;
mod term;
pub mod text;
pub mod theme;

pub use app::{App, AppConfig, Entry, Intent, Note, Then, ToolState, RELOAD_STATUS_TTL};
pub use text::strip_controls;

use crate::core::frontend::Core;
use crate::events::Event;
use crossbeam_channel::{never, select, unbounded, Receiver, Sender};
use crossterm::event::{self as term_event, Event as TermEvent};
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::Terminal;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shortest gap between two renders (100 frames/s at most).
pub const FRAME: Duration = Duration::from_millis(10);
/// How often an idle loop wakes to expire the temporary status.
const IDLE_WAKE: Duration = Duration::from_millis(100);
/// At most this many events are handled between two looks at the clock.
pub const EVENT_BATCH: usize = 2048;

/// What the terminal UI is started with.
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    /// `$ZUT_HOME`: user themes and saved settings live there.
    pub zut_home: PathBuf,
    /// The project directory: the prompt history is kept per project.
    pub project: PathBuf,
}

/// Something the UI thread hears besides core events.
#[derive(Debug, Clone)]
pub enum Input {
    Term(TermEvent),
    /// SIGTERM, SIGHUP, SIGINT or SIGQUIT arrived.
    Signal(i32),
}

/// Runs the interactive terminal until the person quits; returns the exit
/// status (0 on a normal quit, 128 + signal number on SIGTERM/SIGHUP).
pub fn run(core: Arc<dyn Core>, events: Receiver<Event>, opts: TuiOptions) -> i32 {
    let (input_tx, input_rx) = unbounded();
    // SIGTERM, SIGHUP and an external SIGINT or SIGQUIT (raw mode means
    // the keyboard sends neither) become input, so the loop restores the
    // terminal.
    let signal_tx = input_tx.clone();
    let on_signal = move |sig| signal_tx.send(Input::Signal(sig)).is_ok();
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let signals =
        match crate::signals::SignalBridge::start(&[SIGTERM, SIGHUP, SIGINT, SIGQUIT], on_signal) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("zut: cannot watch signals: {e}");
                return 1;
            }
        };
    install_panic_hook();
    let guard = match TerminalGuard::enter() {
        Ok(g) => g,
        Err(e) => {
            restore_terminal();
            drop(signals);
            eprintln!("zut: cannot set up the terminal: {e}");
            return 1;
        }
    };
    let reader = InputThread::start(input_tx);
    let sixteen = theme::ColorDepth::detect() == theme::ColorDepth::Ansi16;
    let out = palette::Sgr16::new(std::io::stdout(), sixteen);
    let mut terminal = match Terminal::new(CrosstermBackend::new(out)) {
        Ok(t) => t,
        Err(e) => {
            drop(guard);
            reader.stop();
            drop(signals);
            eprintln!("zut: cannot set up the terminal: {e}");
            return 1;
        }
    };
    let mut app = App::new(app_config(&opts), Instant::now());
    app.set_terminal_out(Box::new(|bytes: &[u8]| {
        let mut out = std::io::stdout();
        let _ = out.write_all(bytes);
        let _ = out.flush();
    }));
    if app.mouse() {
        let mut out = std::io::stdout();
        let _ = out.write_all(&mouse_capture(true));
        let _ = out.flush();
    }
    app.set_real_terminal();
    let settings_home = opts.zut_home.clone();
    let mut bell = || {
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\x07");
        let _ = out.flush();
    };
    let code = drive(
        &mut terminal,
        &mut app,
        core.as_ref(),
        &events,
        &input_rx,
        &mut bell,
        &mut |app: &App| save_settings(&settings_home, app),
    );
    drop(terminal);
    drop(guard);
    reader.stop();
    drop(signals);
    code
}

/// The app's start-up configuration from the environment and `opts`.
fn app_config(opts: &TuiOptions) -> AppConfig {
    // Extensions' themes arrive later, with `Event::Discovered`.
    let themes = theme::user_themes(&opts.zut_home);
    let saved = crate::config::load(&opts.zut_home)
        .ok()
        .and_then(|c| c.extra.get("tui").cloned())
        .unwrap_or_default();
    AppConfig {
        depth: theme::ColorDepth::detect(),
        dark_terminal: theme::terminal_is_dark(),
        themes,
        theme: saved
            .get("theme")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        alerts: saved
            .get("alerts")
            .and_then(|v| v.as_bool())
            .unwrap_or(true),
        mouse: saved.get("mouse").and_then(|v| v.as_bool()).unwrap_or(true),
        ascii: theme::ascii_only(std::env::var("TERM").ok().as_deref()),
        history: Some((
            opts.zut_home.join("history.jsonl"),
            opts.project.display().to_string(),
        )),
        project: Some(opts.project.clone()),
    }
}

/// Stores the alerts switch and the theme under `tui` in `config.json`.
fn save_settings(zut_home: &std::path::Path, app: &App) {
    let tui = serde_json::json!({"alerts": app.alerts(), "theme": app.theme_name(), "mouse": app.mouse()});
    let saved = crate::config::update(zut_home, |config| {
        config.extra.insert("tui".into(), tui);
        true
    });
    if let Err(e) = saved {
        log::warn!("settings not saved: {e}");
    }
}

/// The UI loop over any backend (the real terminal, or a test backend).
/// Returns the exit status once an [`Intent::Quit`] or a signal arrives,
/// or the input channel closes (0).
pub fn drive<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    core: &dyn Core,
    events: &Receiver<Event>,
    input: &Receiver<Input>,
    bell: &mut dyn FnMut(),
    save: &mut dyn FnMut(&App),
) -> i32 {
    let mut events = events.clone();
    let mut input = input.clone();
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;
    let _ = app.set_state(core.state(), Then::Rebuild);
    loop {
        let mut intents = Vec::new();
        let wait = match (dirty, last_draw) {
            (false, _) => IDLE_WAKE,
            (true, None) => Duration::ZERO,
            (true, Some(t)) => (t + FRAME).saturating_duration_since(Instant::now()),
        };
        select! {
            recv(input) -> msg => match msg {
                Ok(Input::Term(ev)) => {
                    intents = on_terminal(app, ev);
                    dirty = true;
                }
                Ok(Input::Signal(sig)) => {
                    core.shutdown();
                    return 128 + sig;
                }
                Err(_) => input = never(),
            },
            recv(events) -> msg => match msg {
                Ok(ev) => {
                    intents = app.on_event(ev);
                    for _ in 1..EVENT_BATCH {
                        match events.try_recv() {
                            Ok(ev) => intents.extend(app.on_event(ev)),
                            Err(_) => break,
                        }
                    }
                    dirty = true;
                }
                Err(_) => events = never(),
            },
            default(wait) => {}
        }
        if let Some(code) = execute(app, core, intents, bell, save) {
            core.shutdown();
            return code;
        }
        let now = Instant::now();
        dirty |= app.tick(now);
        if app.take_redraw_all() {
            let _ = terminal.clear();
            dirty = true;
        }
        if dirty && last_draw.is_none_or(|t| now.duration_since(t) >= FRAME) {
            if let Err(e) = terminal.draw(|f| app.draw(f)) {
                // Nothing can be shown any more: end as on a hang-up rather
                // than retrying forever.
                log::warn!("terminal draw failed: {e}");
                core.shutdown();
                return 128 + libc::SIGHUP;
            }
            dirty = false;
            last_draw = Some(now);
        }
    }
}

/// Hands a terminal event to the app.
fn on_terminal(app: &mut App, ev: TermEvent) -> Vec<Intent> {
    match ev {
        TermEvent::Key(k) => app.on_key(k),
        TermEvent::Paste(text) => app.on_paste(&text),
        TermEvent::Mouse(m) => {
            app.on_mouse(m);
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Runs intents (and the ones they lead to) against the core; `Some(code)`
/// when the UI should quit.
fn execute(
    app: &mut App,
    core: &dyn Core,
    intents: Vec<Intent>,
    bell: &mut dyn FnMut(),
    save: &mut dyn FnMut(&App),
) -> Option<i32> {
    let mut queue: std::collections::VecDeque<Intent> = intents.into();
    let mut refreshed = false;
    while let Some(intent) = queue.pop_front() {
        match intent {
            Intent::Prompt(text) => {
                let s = core.prompt(text.clone());
                app.on_submitted(&text, s);
            }
            Intent::Shell(command) => {
                let s = core.shell(command.clone());
                app.on_shell_submitted(&command, s);
            }
            Intent::Command(line) => {
                if !core.command_now(&line) {
                    let _ = core.command(line);
                }
            }
            Intent::Abort => core.abort(false),
            Intent::AbortAll => core.abort(true),
            Intent::TakeBackQueued => {
                core.withdraw_last();
            }
            Intent::Suspend => {
                if app.on_real_terminal() {
                    term::suspend();
                    app.redraw_all();
                }
            }
            Intent::EditExternally => {
                if app.on_real_terminal() {
                    let r = term::edit_externally(app.editor_text());
                    app.edited_externally(r);
                    app.redraw_all();
                }
            }
            Intent::Confirm(id, d) => core.confirm(id, d),
            Intent::PanelKey {
                extension,
                panel_id,
                key,
                text,
            } => core.panel_key(&extension, &panel_id, &key, text),
            Intent::PanelClose {
                extension,
                panel_id,
            } => core.panel_close(&extension, &panel_id),
            Intent::Change(change) => core.change(change),
            // One plain refresh per batch is enough.
            Intent::Refresh(Then::Nothing) if refreshed => {}
            // The pickers need the session list: asked for, and opened
            // when the core's `sessions` event answers.
            Intent::Refresh(then @ (Then::PickTree | Then::PickResume)) => {
                queue.extend(app.set_state(core.state(), Then::Nothing));
                app.awaiting_sessions = Some(then);
                core.list_sessions();
            }
            Intent::Refresh(then) => {
                refreshed = true;
                queue.extend(app.set_state(core.state(), then));
            }
            Intent::SaveSettings => save(app),
            Intent::Bell => bell(),
            Intent::Terminal(bytes) => {
                if let Some(out) = &mut app.terminal_out {
                    out(&bytes);
                }
            }
            Intent::Quit(code) => return Some(code),
        }
    }
    None
}

/// Raw mode, the alternate screen and bracketed paste for as long as it
/// lives.
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> std::io::Result<TerminalGuard> {
        crossterm::terminal::enable_raw_mode()?;
        let guard = TerminalGuard;
        crossterm::execute!(
            std::io::stdout(),
            crossterm::terminal::EnterAlternateScreen,
            crossterm::event::EnableBracketedPaste
        )?;
        term::push_keyboard_flags();
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Puts the terminal back the way a shell expects it. Safe to call twice.
pub fn restore_terminal() {
    term::pop_keyboard_flags();
    let _ = crossterm::execute!(
        std::io::stdout(),
        crossterm::event::DisableBracketedPaste,
        crossterm::event::DisableMouseCapture,
        crossterm::terminal::LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = crossterm::terminal::disable_raw_mode();
}

/// The sequence that turns mouse capture (wheel scrolling) on or off.
pub fn mouse_capture(on: bool) -> Vec<u8> {
    use crossterm::Command;
    let mut s = String::new();
    let _ = if on {
        crossterm::event::EnableMouseCapture.write_ansi(&mut s)
    } else {
        crossterm::event::DisableMouseCapture.write_ansi(&mut s)
    };
    s.into_bytes()
}

/// Restores the terminal before the default panic report is printed, so
/// the report is readable and the shell usable.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        previous(info);
    }));
}

/// Reads terminal events on its own thread, polling so it can be stopped.
struct InputThread {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl InputThread {
    fn start(tx: Sender<Input>) -> InputThread {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            // A terminal that went away (its pty closed) makes poll return
            // at once with nothing to read, forever: many such returns in a
            // row mean a hang-up, not a quiet keyboard.
            let mut instant_returns = 0u32;
            while !flag.load(Ordering::Relaxed) {
                // Away (Ctrl+G, Ctrl+Z): the keyboard is someone else's.
                if term::INPUT_PAUSED.load(Ordering::SeqCst) {
                    term::INPUT_IDLE.store(true, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(10));
                    instant_returns = 0;
                    continue;
                }
                let asked = std::time::Instant::now();
                match term_event::poll(Duration::from_millis(50)) {
                    Ok(false) => {
                        if asked.elapsed() < Duration::from_millis(5) {
                            instant_returns += 1;
                            if instant_returns > 200 {
                                log::warn!("the terminal is gone");
                                let _ = tx.send(Input::Signal(libc::SIGHUP));
                                break;
                            }
                        } else {
                            instant_returns = 0;
                        }
                        continue;
                    }
                    Ok(true) => match term_event::read() {
                        Ok(ev) => {
                            if tx.send(Input::Term(ev)).is_err() {
                                break;
                            }
                        }
                        Err(e) => {
                            // The terminal is gone (closed pty, ssh hang-up):
                            // the same as SIGHUP.
                            log::warn!("terminal input failed: {e}");
                            let _ = tx.send(Input::Signal(libc::SIGHUP));
                            break;
                        }
                    },
                    Err(e) => {
                        log::warn!("terminal input failed: {e}");
                        let _ = tx.send(Input::Signal(libc::SIGHUP));
                        break;
                    }
                }
            }
        });
        InputThread { stop, handle }
    }

    /// Asks the thread to stop. It is not joined: after a hang-up the
    /// terminal library can stay inside its read on the dead pty, and
    /// quitting must never wait on it; the process exits right after.
    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        drop(self.handle);
    }
}

#[cfg(test)]
mod reading_tests;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_context;
#[cfg(test)]
mod tests_typing;
