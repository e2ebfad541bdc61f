//! Leaving the terminal for a while and coming back: Ctrl+Z (suspend),
//! Ctrl+G (`$VISUAL`/`$EDITOR` on the prompt), and the kitty keyboard
//! protocol's enhancement flags (so Shift+Enter can be told from Enter).
//!
//! Invariants: while zut is away the terminal is exactly as a shell
//! expects it (raw mode off, main screen, flags popped), and the input
//! thread reads nothing (the editor owns the keyboard); coming back
//! enters the screen again and the next frame is drawn from scratch.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Whether the enhancement flags were pushed (and so must be popped).
static FLAGS_PUSHED: AtomicBool = AtomicBool::new(false);
/// Set while zut is away: the input thread must not read.
pub static INPUT_PAUSED: AtomicBool = AtomicBool::new(false);
/// Set by the input thread while it honours a pause.
pub static INPUT_IDLE: AtomicBool = AtomicBool::new(false);

/// Pushes the kitty keyboard protocol's "disambiguate" flag where the
/// terminal reports it (asked once, before the input thread reads).
pub fn push_keyboard_flags() {
    use crossterm::event::{KeyboardEnhancementFlags, PushKeyboardEnhancementFlags};
    if std::env::var_os("ZUT_NO_KITTY_KEYS").is_some() {
        return;
    }
    if !matches!(
        crossterm::terminal::supports_keyboard_enhancement(),
        Ok(true)
    ) {
        return;
    }
    if crossterm::execute!(
        std::io::stdout(),
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    )
    .is_ok()
    {
        FLAGS_PUSHED.store(true, Ordering::SeqCst);
    }
}

/// Pops the flags if they were pushed. Safe to call twice.
pub fn pop_keyboard_flags() {
    if FLAGS_PUSHED.swap(false, Ordering::SeqCst) {
        let _ = crossterm::execute!(
            std::io::stdout(),
            crossterm::event::PopKeyboardEnhancementFlags
        );
    }
}

/// Stops the input thread reading and waits (briefly) until it does.
fn pause_input() {
    INPUT_IDLE.store(false, Ordering::SeqCst);
    INPUT_PAUSED.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_millis(300);
    while !INPUT_IDLE.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn resume_input() {
    INPUT_PAUSED.store(false, Ordering::SeqCst);
}

/// Runs `away` with the terminal given back to the shell, then takes it
/// again.
fn away<T>(away: impl FnOnce() -> T) -> T {
    pause_input();
    let kitty = FLAGS_PUSHED.load(Ordering::SeqCst);
    super::restore_terminal();
    let out = away();
    let _ = crossterm::terminal::enable_raw_mode();
    let _ = crossterm::execute!(
        std::io::stdout(),
        crossterm::terminal::EnterAlternateScreen,
        crossterm::event::EnableBracketedPaste
    );
    if kitty {
        use crossterm::event::{KeyboardEnhancementFlags, PushKeyboardEnhancementFlags};
        if crossterm::execute!(
            std::io::stdout(),
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )
        .is_ok()
        {
            FLAGS_PUSHED.store(true, Ordering::SeqCst);
        }
    }
    resume_input();
    out
}

/// Ctrl+Z: stops the process the way a shell's job control expects, with
/// the terminal restored; returns once resumed (`fg`).
pub fn suspend() {
    away(|| {
        // SAFETY: raise has no memory-safety preconditions; SIGTSTP keeps
        // its default action (stop) since zut never handles it.
        unsafe {
            libc::raise(libc::SIGTSTP);
        }
    });
}

/// Ctrl+G: the prompt in `$VISUAL` (else `$EDITOR`, else `vi`); the text
/// it was saved with, or an error line to show.
pub fn edit_externally(text: &str) -> Result<String, String> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| {
            std::env::var("EDITOR")
                .ok()
                .filter(|v| !v.trim().is_empty())
        })
        .unwrap_or_else(|| "vi".to_string());
    let file = tempfile::Builder::new()
        .prefix("zut-prompt-")
        .suffix(".md")
        .tempfile()
        .map_err(|e| format!("cannot make a file for the editor: {e}"))?;
    std::fs::write(file.path(), text).map_err(|e| format!("cannot write the prompt: {e}"))?;
    let status = away(|| {
        // Through the shell, as every program honouring $EDITOR does, so
        // `EDITOR="code --wait"` works.
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("sh")
            .arg(file.path())
            .status()
    });
    match status {
        Ok(s) if s.success() => std::fs::read_to_string(file.path())
            .map(|t| t.strip_suffix('\n').unwrap_or(&t).to_string())
            .map_err(|e| format!("cannot read the prompt back: {e}")),
        Ok(s) => Err(format!("{editor} exited with {s}; the prompt is unchanged")),
        Err(e) => Err(format!("cannot start {editor}: {e}")),
    }
}
