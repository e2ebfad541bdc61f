//! The terminal UI's state and its update functions.
//!
//! [`App::on_key`], [`App::on_paste`] and [`App::on_event`] change the state
//! and return [`Intent`]s (call the core, ring the bell, quit) that the loop
//! executes; they never touch the terminal or the core. Drawing
//! (`draw.rs`) only reads.
//!
//! Invariants: every string that came from an extension, a tool or the
//! model is passed through [`strip_controls`] when it enters the state, so
//! drawing never sees a control sequence; the panel slot holds at most one
//! panel; confirmations are answered in the order they were asked.

use super::editor::Editor;
use super::keys::Typing;
use super::text::strip_controls;
use super::theme::{ColorDepth, Theme, ThemeFile};
use crate::agent::{content_text, Decision};
use crate::commands;
use crate::core::frontend::{Change, CoreState, Submitted};
use crate::events::Event;
use crate::provider::{Block, Message, Role};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};
use zut_ext::wire::Panel;

/// How long the status line reporting a reload stays.
pub const RELOAD_STATUS_TTL: Duration = Duration::from_secs(5);

/// Persistent chrome bounds, marker row included.
pub const WIDGET_ROWS: usize = 12;
pub const STATUS_ROWS: usize = 6;
/// At most this many notes are kept (the oldest go first).
pub const NOTES_MAX: usize = 200;

/// Something the loop does for the app.
#[derive(Debug, Clone, PartialEq)]
pub enum Intent {
    /// `Core::prompt`; the answer comes back through [`App::on_submitted`].
    Prompt(String),
    /// `Core::command` with a whole slash line.
    Command(String),
    /// `Core::shell` with the command typed after `!`.
    Shell(String),
    Abort,
    Confirm(u64, Decision),
    PanelKey {
        extension: String,
        panel_id: String,
        key: String,
        text: Option<String>,
    },
    PanelClose {
        extension: String,
        panel_id: String,
    },
    /// `Core::change`.
    Change(Change),
    /// Fetch `Core::state()` and hand it to [`App::set_state`] with this
    /// follow-up.
    Refresh(Then),
    /// Persist the settings (alerts, theme).
    SaveSettings,
    /// One terminal bell.
    Bell,
    /// Bytes for the terminal itself (OSC 52 clipboard, mouse capture).
    Terminal(Vec<u8>),
    /// Shut the core down and leave with this exit status.
    Quit(i32),
    /// Ctrl+G: the prompt in `$VISUAL`/`$EDITOR`, back via
    /// [`App::edited_externally`].
    EditExternally,
    /// Ctrl+Z: stop until resumed, the terminal restored meanwhile.
    Suspend,
    /// Withdraw the last queued prompt from the core (Up took it back).
    TakeBackQueued,
    /// Abort the turn and drop every queued prompt (they went back into
    /// the editor).
    AbortAll,
}

/// What to do once a fresh core state arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    Nothing,
    /// Redraw the transcript from the state's messages (after a switch).
    Rebuild,
    ShowExt,
    ShowSkills,
    PickTree,
    PickResume,
}

/// One row of the scrolling chat.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    User(String),
    Assistant {
        text: String,
        /// Still receiving `text_delta`s.
        open: bool,
        /// Why an interceptor withheld it.
        blocked: Option<String>,
    },
    Tool {
        id: String,
        name: String,
        extension: Option<String>,
        args: String,
        state: ToolState,
    },
    /// The model's streamed reasoning: dimmed while it streams, folded to
    /// one line after the step (Ctrl+O unfolds).
    Thinking(String),
    /// A muted line of the UI's own (aborted, session switched, …).
    Info(String),
    Error(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolState {
    /// With the last `tool_progress` report, if any (empty: none yet).
    Running(String),
    Done {
        is_error: bool,
        output: String,
    },
    /// Refused by an interceptor: "by EXTENSION: reason".
    Blocked(String),
}

/// A one-shot note under the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub owner: String,
    pub level: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StatusItem {
    pub level: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Widget {
    pub title: String,
    pub lines: Vec<String>,
    /// `above_input` (also for empty and unknown), `right_bar` or
    /// `below_input`.
    pub position: String,
}

/// The panel in the one slot and the extension that owns it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenPanel {
    pub extension: String,
    pub panel: Panel,
}

/// A pending tool confirmation.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirmation {
    pub request_id: u64,
    /// The call it asks about: its tool line says it waits for an answer.
    pub tool_id: String,
    pub tool_name: String,
    pub preview: String,
    /// Its diff, whole command or arguments, scope and scroll position.
    pub detail: super::approve::Detail,
}

/// The one-line temporary status above the editor.
#[derive(Debug, Clone, PartialEq)]
pub struct Flash {
    pub text: String,
    pub level: String,
    /// When it goes away by itself, if it does.
    pub until: Option<Instant>,
}

/// An informational block (help, extensions, skills), dismissed by Esc.
#[derive(Debug, Clone, PartialEq)]
pub struct Sheet {
    pub title: String,
    pub lines: Vec<String>,
}

/// A list to choose from with the arrows.
#[derive(Debug, Clone, PartialEq)]
pub struct Picker {
    pub title: String,
    pub items: Vec<PickItem>,
    pub selected: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PickItem {
    pub label: String,
    pub detail: String,
    pub action: PickAction,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PickAction {
    Switch(String),
    ToggleAlerts,
    ToggleMouse,
    ChooseTheme,
    /// Index into the theme list (0 dark, 1 light, then files).
    Theme(usize),
}

/// One entry of the `/` menu.
#[derive(Debug, Clone, PartialEq)]
pub struct MenuItem {
    pub name: String,
    pub description: String,
}

/// The keys, for `/help`.
const HELP: &[&str] = &[
    "Enter              send (queued behind a running turn)",
    "Alt+Enter, Ctrl+J  new line (Shift+Enter where the terminal reports it)",
    "Up / Down          move between lines; history on the first/last line",
    "/                  command menu; Tab completes, Up/Down choose",
    "@path              attach a project file to the prompt (Tab completes; capped, cut files say so)",
    "!command           run a shell command without the model (asks as bash does unless --yolo);",
    "                   its output goes to the model with the next prompt (terminal only)",
    "Esc                close dialog/panel/notes first, else abort the turn (queue back to editor)",
    "Ctrl+O             expand or collapse the last turn's tool results",
    "PageUp / PageDown  scroll the chat by a screen; mouse wheel scrolls too",
    "Home / End         top / bottom of the chat (Ctrl+Home/End while typing)",
    "Ctrl+A/E/B/F       line start/end, character back/forward",
    "Alt+B/F, Ctrl+←/→  word back/forward",
    "Ctrl+U/K/W, Alt+Backspace/D  kill to start/end, word before/after",
    "Ctrl+Y, Ctrl+_     put back the last kill, undo",
    "Ctrl+R             search the history (again: older; Esc cancels)",
    "Up on empty        take the last queued prompt back (during a turn)",
    "Ctrl+G, Ctrl+Z     edit in $VISUAL/$EDITOR, suspend",
    "Ctrl+C twice, Ctrl+D on an empty editor, /quit: leave",
    "In a confirmation: y allow once, a always (the scope it names), n or Esc deny;",
    "                   PgUp/PgDn and arrows scroll a long diff or command",
];

/// What the app is started with.
#[derive(Debug, Clone)]
pub struct AppConfig {
    pub depth: ColorDepth,
    pub dark_terminal: bool,
    /// User and extension theme files, in menu order.
    pub themes: Vec<ThemeFile>,
    /// Theme to start with: `dark`, `light` or a file theme's name.
    pub theme: Option<String>,
    pub alerts: bool,
    /// Mouse capture for wheel scrolling (off: the terminal selects text).
    pub mouse: bool,
    /// Where the prompt history is kept, and under which project; `None`:
    /// only for this run.
    pub history: Option<(std::path::PathBuf, String)>,
    /// Box drawing and symbols in ASCII (`TERM=linux`).
    pub ascii: bool,
    /// The project directory: `@path` completes and attaches its files;
    /// `None`: mentions stay plain text.
    pub project: Option<std::path::PathBuf>,
}

impl Default for AppConfig {
    fn default() -> Self {
        AppConfig {
            depth: ColorDepth::Xterm256,
            dark_terminal: true,
            themes: Vec::new(),
            theme: None,
            alerts: true,
            mouse: true,
            history: None,
            ascii: false,
            project: None,
        }
    }
}

/// Where the bytes of [`Intent::Terminal`] go.
pub type TerminalOut = Box<dyn FnMut(&[u8])>;

/// Everything the terminal UI shows.
pub struct App {
    pub(super) now: Instant,
    pub(super) state: CoreState,
    /// The session picker waiting for the core's `sessions` answer.
    pub(super) awaiting_sessions: Option<Then>,
    pub(super) session_id: String,
    pub(super) busy: bool,
    pub(super) chat: Vec<Entry>,
    pub(super) load_errors: Vec<String>,
    pub(super) notes: Vec<Note>,
    pub(super) statuses: BTreeMap<(String, String), StatusItem>,
    pub(super) widgets: BTreeMap<(String, String), Widget>,
    pub(super) queued: Vec<String>,
    pub(super) panel: Option<OpenPanel>,
    pub(super) confirmations: VecDeque<Confirmation>,
    pub(super) flash: Option<Flash>,
    pub(super) sheet: Option<Sheet>,
    pub(super) picker: Option<Picker>,
    pub(super) editor: Editor,
    pub(super) menu_selected: usize,
    /// The editor text for which the menu was dismissed with Esc.
    pub(super) menu_dismissed: Option<String>,
    pub(super) expand_tools: bool,
    /// Where the chat view is (following the bottom, or held).
    pub(super) scroll: super::scroll::Scroll,
    /// The chat's width and height at the last frame (for paging).
    pub(super) chat_view: std::cell::Cell<(usize, usize)>,
    /// Rendered markdown of assistant entries, by chat index.
    /// The front question last drawn whole, and its body's height.
    pub(super) confirm_drawn: std::cell::Cell<Option<u64>>,
    pub(super) confirm_page: std::cell::Cell<usize>,
    /// Arguments (and the change of a write/edit) of each call, by id.
    pub(super) calls: std::collections::HashMap<String, super::approve::Detail>,
    /// While drawing bottom-up: how many rows of an answer are needed.
    pub(super) row_limit: std::cell::Cell<usize>,
    pub(super) md: std::cell::RefCell<std::collections::HashMap<usize, super::markdown::MdCache>>,
    pub(super) ctrl_c_armed: bool,
    pub(super) alerts: bool,
    pub(super) mouse: bool,
    /// Token use and cost of this session so far, for the footer.
    pub(super) usage: crate::provider::usage::Totals,
    /// Where [`Intent::Terminal`] bytes go (the real terminal only).
    pub(super) terminal_out: Option<TerminalOut>,
    pub(super) theme: Theme,
    pub(super) theme_files: Vec<ThemeFile>,
    /// The saved theme, while no theme file of that name is known yet
    /// (an extension's, before its discovery): applied when it arrives,
    /// and what is saved meanwhile.
    pending_theme: Option<String>,
    pub(super) depth: ColorDepth,
    pub(super) dark_terminal: bool,
    /// The last `ext_display` text, so the `command_result` that follows
    /// it does not show it twice.
    last_display: Option<String>,
    /// Ctrl+R search and the editor's other state.
    pub(super) typing: Typing,
    /// Where `@path` mentions are looked up.
    pub(super) project: Option<std::path::PathBuf>,
}

impl App {
    pub fn new(config: AppConfig, now: Instant) -> App {
        let mut app = App {
            now,
            state: CoreState::default(),
            awaiting_sessions: None,
            session_id: String::new(),
            busy: false,
            chat: Vec::new(),
            load_errors: Vec::new(),
            notes: Vec::new(),
            statuses: BTreeMap::new(),
            widgets: BTreeMap::new(),
            queued: Vec::new(),
            panel: None,
            confirmations: VecDeque::new(),
            flash: None,
            sheet: None,
            picker: None,
            editor: match config.history {
                Some((file, project)) => {
                    Editor::with_history(super::history::History::load(file, project))
                }
                None => Editor::default(),
            },
            menu_selected: 0,
            menu_dismissed: None,
            expand_tools: false,
            scroll: Default::default(),
            chat_view: Default::default(),
            md: Default::default(),
            row_limit: std::cell::Cell::new(usize::MAX),
            confirm_drawn: Default::default(),
            confirm_page: Default::default(),
            calls: Default::default(),
            ctrl_c_armed: false,
            alerts: config.alerts,
            mouse: config.mouse,
            usage: Default::default(),
            terminal_out: None,
            theme: Theme::builtin(config.dark_terminal, config.depth),
            theme_files: config.themes,
            pending_theme: None,
            depth: config.depth,
            dark_terminal: config.dark_terminal,
            last_display: None,
            typing: Typing {
                ascii: config.ascii,
                ..Typing::default()
            },
            project: config.project,
        };
        if let Some(name) = config.theme {
            match app.theme_names().iter().position(|n| *n == name) {
                Some(i) => app.apply_theme(i),
                None => app.pending_theme = Some(name),
            }
        }
        app
    }

    // ----- read access (tests, the loop) -----

    /// The editor's text.
    pub fn editor_text(&self) -> &str {
        self.editor.text()
    }

    pub fn alerts(&self) -> bool {
        self.alerts
    }

    /// Whether the mouse wheel is captured.
    pub fn mouse(&self) -> bool {
        self.mouse
    }

    /// Where terminal bytes (clipboard, mouse capture) are written.
    pub fn set_terminal_out(&mut self, out: TerminalOut) {
        self.terminal_out = Some(out);
    }

    /// The theme's label (`dark`, `light` or a file theme's name); the
    /// saved one while it waits for its extension's discovery.
    pub fn theme_name(&self) -> &str {
        self.pending_theme.as_deref().unwrap_or(&self.theme.name)
    }

    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    pub fn panel(&self) -> Option<&OpenPanel> {
        self.panel.as_ref()
    }

    pub fn chat(&self) -> &[Entry] {
        &self.chat
    }

    pub fn load_errors(&self) -> &[String] {
        &self.load_errors
    }

    pub fn flash(&self) -> Option<&Flash> {
        self.flash.as_ref()
    }

    // ----- time -----

    /// Advances the clock; expires the temporary status. True when
    /// something visible changed.
    pub fn tick(&mut self, now: Instant) -> bool {
        self.now = now;
        match &self.flash {
            Some(Flash { until: Some(t), .. }) if *t <= now => {
                self.flash = None;
                true
            }
            _ => false,
        }
    }

    /// A fresh core snapshot, and what to do with it.
    pub fn set_state(&mut self, state: CoreState, then: Then) -> Vec<Intent> {
        if let Some(s) = &state.session {
            self.session_id = s.id.clone();
        }
        self.busy = self.busy || state.busy;
        self.state = state;
        // Tools registered late (an MCP server still starting when a
        // session was resumed) get their source shown once they are known.
        for entry in &mut self.chat {
            if let Entry::Tool {
                name, extension, ..
            } = entry
            {
                if extension.is_none() {
                    *extension = tool_source(&self.state, name);
                }
            }
        }
        match then {
            Then::Nothing => {}
            Then::Rebuild => self.rebuild_chat(),
            Then::ShowExt => self.sheet = Some(self.ext_sheet()),
            Then::ShowSkills => self.sheet = Some(self.skills_sheet()),
            Then::PickTree => self.open_session_picker(true),
            Then::PickResume => self.open_session_picker(false),
        }
        Vec::new()
    }

    /// What became of a prompt handed to the core.
    pub fn on_submitted(&mut self, text: &str, submitted: Submitted) {
        match submitted {
            Submitted::Started => self.busy = true,
            Submitted::Queued { .. } => self.push_queued(super::context::split_attachments(text).0),
        }
    }

    /// What became of a `!command` handed to the core.
    pub fn on_shell_submitted(&mut self, command: &str, submitted: Submitted) {
        match submitted {
            Submitted::Started => self.busy = true,
            Submitted::Queued { .. } => self.set_flash(
                format!("!{} runs after the turn", strip_controls(command)),
                "info",
                Some(RELOAD_STATUS_TTL),
            ),
        }
    }

    fn push_queued(&mut self, text: &str) {
        let text = strip_controls(text);
        if self.queued.last() != Some(&text) {
            self.queued.push(text);
        }
    }

    pub(super) fn set_flash(
        &mut self,
        text: impl Into<String>,
        level: &str,
        ttl: Option<Duration>,
    ) {
        self.flash = Some(Flash {
            text: text.into(),
            level: level.to_string(),
            until: ttl.map(|d| self.now + d),
        });
    }

    // ----- events -----

    /// One event from the core, handed to the handler of its concern.
    pub fn on_event(&mut self, event: Event) -> Vec<Intent> {
        let mut out = Vec::new();
        // Only the event right after an `ext_display` can repeat it.
        let last_display = self.last_display.take();
        match event {
            e @ (Event::UserMessage { .. }
            | Event::TurnStart { .. }
            | Event::TurnBlocked { .. }
            | Event::ThinkingDelta { .. }
            | Event::Usage { .. }
            | Event::TextDelta { .. }
            | Event::PromptBlocked { .. }
            | Event::PromptContinued { .. }
            | Event::AssistantMessage { .. }
            | Event::TurnEnd { .. }
            | Event::Queued { .. }
            | Event::Retry { .. }
            | Event::Error { .. }
            | Event::Idle
            | Event::Done) => self.on_turn_event(e, &mut out),
            e @ (Event::ToolCall { .. }
            | Event::ToolBlocked { .. }
            | Event::ToolProgress { .. }
            | Event::ToolResult { .. }
            | Event::ConfirmationRequested { .. }) => self.on_tool_event(e, &mut out),
            e @ (Event::ExtLoaded { .. }
            | Event::ExtToolsChanged { .. }
            | Event::ExtError { .. }
            | Event::ExtWarning { .. }
            | Event::CommandResult { .. }
            | Event::ExtNotify { .. }
            | Event::Hook { .. }
            | Event::ExtDisplay { .. }
            | Event::ExtAlert { .. }
            | Event::ExtClearNotes { .. }
            | Event::ExtStatus { .. }
            | Event::ExtWidget { .. }
            | Event::ExtWidgetClear { .. }
            | Event::ExtChromeClear { .. }
            | Event::ExtSubmit { .. }
            | Event::ExtSubmitSlash { .. }
            | Event::ExtOpenPanel { .. }
            | Event::ExtPanelRender { .. }
            | Event::ExtPanelClose { .. }) => self.on_chrome_event(e, &mut out, last_display),
            e @ (Event::Session { .. }
            | Event::Reload { .. }
            | Event::Sessions { .. }
            | Event::Loaded
            | Event::Discovered { .. }) => self.on_session_event(e, &mut out),
        }
        out
    }

    /// The turn: prompts, the streamed answer, thinking, usage, the end.
    fn on_turn_event(&mut self, event: Event, out: &mut Vec<Intent>) {
        match event {
            Event::UserMessage { text } => {
                let text = shown_prompt(&strip_controls(&text));
                let typed = text.split("\n[attached: ").next().unwrap_or_default();
                if let Some(i) = self.queued.iter().position(|q| q == typed) {
                    self.queued.remove(i);
                }
                self.notes.clear();
                self.close_assistant();
                self.chat.push(Entry::User(text));
                self.busy = true;
                self.scroll = super::scroll::Scroll::Bottom;
            }
            Event::TurnStart { .. } => self.busy = true,
            Event::TurnBlocked { reason } => {
                self.chat.push(Entry::Error(format!(
                    "turn blocked: {}",
                    strip_controls(&reason)
                )));
            }
            Event::ThinkingDelta { delta } => {
                let delta = strip_controls(&delta);
                match self.chat.last_mut() {
                    Some(Entry::Thinking(t)) => t.push_str(&delta),
                    _ => {
                        self.close_assistant();
                        self.chat.push(Entry::Thinking(delta));
                    }
                }
            }
            e @ Event::Usage { .. } => crate::provider::usage::count(&e, &mut self.usage),
            Event::TextDelta { delta } => {
                let delta = strip_controls(&delta);
                match self.chat.last_mut() {
                    Some(Entry::Assistant {
                        text, open: true, ..
                    }) => text.push_str(&delta),
                    _ => self.chat.push(Entry::Assistant {
                        text: delta,
                        open: true,
                        blocked: None,
                    }),
                }
            }
            Event::PromptBlocked { .. } => {}
            Event::PromptContinued { extension, reason } => {
                self.close_assistant();
                self.chat.push(Entry::User(continued(&extension, &reason)));
            }
            Event::AssistantMessage {
                text,
                blocked,
                reason,
            } => {
                let text = strip_controls(&text);
                let blocked = blocked.then(|| strip_controls(&reason));
                let open = self
                    .chat
                    .iter_mut()
                    .rev()
                    .take_while(|e| !matches!(e, Entry::User(_)))
                    .find(|e| matches!(e, Entry::Assistant { open: true, .. }));
                match open {
                    Some(Entry::Assistant {
                        text: t,
                        open,
                        blocked: b,
                    }) => {
                        *t = text;
                        *open = false;
                        *b = blocked;
                    }
                    _ if !text.is_empty() || blocked.is_some() => {
                        self.chat.push(Entry::Assistant {
                            text,
                            open: false,
                            blocked,
                        })
                    }
                    _ => {}
                }
            }
            Event::TurnEnd { stop, error } => {
                self.close_assistant();
                if !error.is_empty() {
                    self.chat.push(Entry::Error(strip_controls(&error)));
                } else if stop == "aborted" {
                    self.chat.push(Entry::Info("turn aborted".into()));
                } else if stop == "max_steps" {
                    self.chat
                        .push(Entry::Info("stopped: the step limit was reached".into()));
                }
            }
            Event::Queued { text, .. } => self.push_queued(&text),
            // Thinking, usage and retries are drawn by the terminal's own
            // helpers (the footer reads the totals from the core's state).
            Event::Retry {
                attempt,
                wait_ms,
                reason,
            } => {
                let text = format!(
                    "provider: {reason}; trying again (attempt {attempt}) in {:.1} s",
                    wait_ms as f64 / 1000.0
                );
                self.set_flash(text, "warn", None);
            }
            Event::Error { message } => self.chat.push(Entry::Error(strip_controls(&message))),
            Event::Idle => {
                self.busy = false;
                out.push(Intent::Refresh(Then::Nothing));
            }
            Event::Done => {
                self.close_assistant();
                self.busy = false;
                self.queued.clear();
                out.push(Intent::Refresh(Then::Nothing));
            }
            other => debug_assert!(false, "{other:?} is not a turn event"),
        }
    }

    /// Tool calls: their lines, progress, results and confirmations.
    fn on_tool_event(&mut self, event: Event, out: &mut Vec<Intent>) {
        match event {
            Event::ToolCall { id, name, args } => {
                self.close_assistant();
                self.note_call(&id, &name, &args);
                self.chat.push(Entry::Tool {
                    id,
                    extension: tool_source(&self.state, &name),
                    name: strip_controls(&name),
                    args: args_line(&args),
                    state: ToolState::Running(String::new()),
                });
            }
            Event::ToolBlocked {
                id,
                name,
                reason,
                extension,
                args,
            } => {
                let by = crate::hooks::shown_blocker(&extension);
                let blocked = ToolState::Blocked(strip_controls(&format!("by {by}: {reason}")));
                match self.tool_state(&id) {
                    Some(state) => *state = blocked,
                    // A call refused by an interceptor never gets its
                    // tool_call event: it is shown from the block alone.
                    None => {
                        self.close_assistant();
                        self.chat.push(Entry::Tool {
                            id,
                            name: strip_controls(&name),
                            extension: None,
                            args: args_line(&args),
                            state: blocked,
                        });
                    }
                }
            }
            Event::ToolProgress {
                id,
                message,
                progress,
                total,
                ..
            } => {
                if let Some(ToolState::Running(line)) = self.tool_state(&id) {
                    *line = strip_controls(&progress_text(message.as_deref(), progress, total));
                }
            }
            // The engine reports the refused prompt as the turn's error.
            Event::ToolResult {
                id,
                is_error,
                content,
                extension,
                ..
            } => {
                let output = strip_controls(&content_text(&content));
                for e in self.chat.iter_mut().rev() {
                    if let Entry::Tool {
                        id: tid,
                        extension: ext,
                        state,
                        ..
                    } = e
                    {
                        if *tid == id {
                            // A refused call's error result repeats the
                            // reason the block already shows, with who.
                            if matches!(state, ToolState::Blocked(_)) {
                                break;
                            }
                            if let Some(x) = &extension {
                                *ext = Some(strip_controls(x));
                            }
                            *state = ToolState::Done { is_error, output };
                            break;
                        }
                    }
                }
            }
            Event::ConfirmationRequested {
                request_id,
                tool_id,
                tool_name,
                preview,
            } => {
                let detail = self.calls.get(&tool_id).cloned().unwrap_or_default();
                let detail = super::approve::Detail::new(&tool_name, detail.args, detail.diff);
                self.confirmations.push_back(Confirmation {
                    request_id,
                    tool_id: tool_id.clone(),
                    tool_name: strip_controls(&tool_name),
                    preview: strip_controls(&preview),
                    detail,
                });
                if self.alerts {
                    out.push(Intent::Bell);
                }
            }
            other => debug_assert!(false, "{other:?} is not a tool event"),
        }
    }

    /// Extensions' chrome: load reports, notes, status, widgets, panels.
    fn on_chrome_event(
        &mut self,
        event: Event,
        out: &mut Vec<Intent>,
        last_display: Option<String>,
    ) {
        match event {
            Event::ExtLoaded { .. } | Event::ExtToolsChanged { .. } => {
                out.push(Intent::Refresh(Then::Nothing))
            }
            Event::ExtError { extension, message } => {
                self.push_load_error(&extension, &message);
                out.push(Intent::Refresh(Then::Nothing));
            }
            Event::ExtWarning { extension, message } => {
                self.add_notes(&extension, "warn", &message);
            }
            Event::CommandResult { name, action, text } => match action.as_str() {
                "insert" => self.editor.insert_str(&text),
                "display" if last_display.as_deref() != Some(text.as_str()) => {
                    self.add_notes(&name, "info", &text);
                }
                _ => {}
            },
            Event::ExtNotify {
                extension,
                level,
                message,
            } => {
                self.add_notes(&extension, &level, &message);
            }
            Event::Hook {
                event,
                outcome,
                reason,
                system_message,
                command,
                ..
            } => {
                if !system_message.is_empty() {
                    self.add_notes("hook", "info", &system_message);
                }
                match outcome.as_str() {
                    "error" | "timeout" => self.add_notes(
                        "hook",
                        "warning",
                        &format!(
                            "{}: {outcome}: {reason}",
                            crate::hooks::shown_command(&command)
                        ),
                    ),
                    // The reason goes to the model as a user message: the
                    // transcript shows it where it goes, as an extension's
                    // continuation does. Without one the agent stops.
                    "block" if event == "Stop" && !reason.trim().is_empty() => {
                        self.close_assistant();
                        self.chat.push(Entry::User(continued(
                            crate::hooks::CONTINUED_BY,
                            reason.trim(),
                        )));
                    }
                    "block" if event == "Stop" => {}
                    "block" => {
                        if let Some(text) = crate::hooks::shown_block(&event, &command, &reason) {
                            self.add_notes("hook", "warning", &text);
                        }
                    }
                    _ => {}
                }
            }
            Event::ExtDisplay { extension, text } => {
                self.add_notes(&extension, "info", &text);
                self.last_display = Some(text);
            }
            Event::ExtAlert { kind, .. } => {
                if kind == "bell" && self.alerts {
                    out.push(Intent::Bell);
                }
            }
            Event::ExtClearNotes { extension } => {
                let owner = strip_controls(&extension);
                self.notes.retain(|n| n.owner != owner);
            }
            Event::ExtStatus {
                extension,
                key,
                level,
                text,
            } => {
                if extension.is_empty() || key.is_empty() {
                    return;
                }
                let k = (strip_controls(&extension), strip_controls(&key));
                if text.trim().is_empty() {
                    self.statuses.remove(&k);
                } else {
                    self.statuses.insert(
                        k,
                        StatusItem {
                            level,
                            text: strip_controls(&text),
                        },
                    );
                }
            }
            Event::ExtWidget {
                extension,
                id,
                title,
                lines,
                position,
            } => {
                if extension.is_empty() || id.is_empty() {
                    return;
                }
                self.widgets.insert(
                    (strip_controls(&extension), strip_controls(&id)),
                    Widget {
                        title: strip_controls(&title),
                        lines: lines.iter().map(|l| strip_controls(l)).collect(),
                        position: strip_controls(&position),
                    },
                );
            }
            Event::ExtWidgetClear { extension, id } => {
                self.widgets
                    .remove(&(strip_controls(&extension), strip_controls(&id)));
            }
            Event::ExtChromeClear { extension } => {
                let ext = strip_controls(&extension);
                self.widgets.retain(|(e, _), _| *e != ext);
                self.statuses.retain(|(e, _), _| *e != ext);
                if self
                    .panel
                    .as_ref()
                    .is_some_and(|p| p.extension == extension)
                {
                    self.panel = None;
                }
            }
            Event::ExtSubmit { text, .. } => {
                if !text.trim().is_empty() {
                    out.push(Intent::Prompt(text));
                }
            }
            Event::ExtSubmitSlash { text, .. } => {
                let t = text.trim();
                if !t.is_empty() {
                    let line = if t.starts_with('/') {
                        t.to_string()
                    } else {
                        format!("/{t}")
                    };
                    out.extend(self.run_slash(&line));
                }
            }
            Event::ExtOpenPanel { extension, panel } => {
                self.panel = Some(OpenPanel {
                    extension,
                    panel: clean_panel(panel),
                });
            }
            Event::ExtPanelRender { extension, panel } => {
                if let Some(open) = &mut self.panel {
                    if open.extension == extension && open.panel.id == panel.id {
                        let p = clean_panel(panel);
                        if !p.title.is_empty() {
                            open.panel.title = p.title;
                        }
                        open.panel.lines = p.lines;
                        open.panel.footer = p.footer;
                    }
                }
            }
            Event::ExtPanelClose {
                extension,
                panel_id,
            } => {
                if self
                    .panel
                    .as_ref()
                    .is_some_and(|p| p.extension == extension && p.panel.id == panel_id)
                {
                    self.panel = None;
                }
            }
            other => debug_assert!(false, "{other:?} is not a chrome event"),
        }
    }

    /// Sessions, reloads and the end of the first load.
    fn on_session_event(&mut self, event: Event, out: &mut Vec<Intent>) {
        match event {
            Event::Loaded => out.push(Intent::Refresh(Then::Nothing)),
            Event::Discovered { themes } => {
                self.add_themes(super::theme::load_all(&themes));
                out.push(Intent::Refresh(Then::Nothing));
            }
            Event::Session { id, reason, .. } => {
                let id = strip_controls(&id);
                // Notes belong to the session they were given in: a switch
                // to another one drops them, but the start's announcement
                // (warnings of the load came before it) and a compaction
                // keep them.
                if !self.session_id.is_empty() && id != self.session_id {
                    self.notes.clear();
                }
                self.session_id = id;
                self.panel = None;
                let then = match reason.as_str() {
                    "new" | "resume" | "fork" | "switch" => Then::Rebuild,
                    _ => Then::Nothing,
                };
                match reason.as_str() {
                    "compact" => self
                        .chat
                        .push(Entry::Info("older history was summarised".into())),
                    // The transcript is rebuilt from the branch: the
                    // news goes to the status line.
                    "fork" => self.set_flash(
                        format!("forked: now in session {}", self.session_id),
                        "success",
                        Some(RELOAD_STATUS_TTL),
                    ),
                    _ => {}
                }
                out.push(Intent::Refresh(then));
            }
            Event::Reload {
                stopped,
                loaded,
                ready,
                errors,
            } => {
                let mut text =
                    format!("reloaded: {stopped} stopped, {loaded} loaded ({ready} ready)");
                if errors.is_empty() {
                    self.load_errors.clear();
                    self.set_flash(text, "success", Some(RELOAD_STATUS_TTL));
                } else {
                    let all: Vec<String> = errors
                        .iter()
                        .map(|e| {
                            format!(
                                "{}: {}",
                                strip_controls(&e.extension),
                                strip_controls(&e.message)
                            )
                        })
                        .collect();
                    text.push_str(&format!(", {} error(s): {}", all.len(), all.join("; ")));
                    for e in &errors {
                        self.push_load_error(&e.extension, &e.message);
                    }
                    self.set_flash(text.replace('\n', " "), "error", Some(RELOAD_STATUS_TTL));
                }
                out.push(Intent::Refresh(Then::Nothing));
            }
            Event::Sessions { sessions } => {
                self.state.sessions = sessions;
                if let Some(then) = self.awaiting_sessions.take() {
                    out.extend(self.set_state(self.state.clone(), then));
                }
            }
            other => debug_assert!(false, "{other:?} is not a session event"),
        }
    }

    /// Lists a load error once, with how to stop seeing it at every
    /// start (as print mode says it).
    fn push_load_error(&mut self, extension: &str, message: &str) {
        let name = strip_controls(extension);
        let flag = self
            .state
            .extensions
            .iter()
            .any(|e| e.name == extension && e.source == "flag");
        let silence = if flag {
            "to stop loading it, leave out its --ext".to_string()
        } else {
            format!("to stop loading it: zut ext disable {name}")
        };
        let e = format!("{name}: {}\n{silence}", strip_controls(message));
        if !self.load_errors.contains(&e) {
            self.load_errors.push(e);
        }
    }

    fn tool_state(&mut self, id: &str) -> Option<&mut ToolState> {
        self.chat.iter_mut().rev().find_map(|e| match e {
            Entry::Tool { id: tid, state, .. } if tid == id => Some(state),
            _ => None,
        })
    }

    fn close_assistant(&mut self) {
        if let Some(Entry::Assistant { open, .. }) = self.chat.last_mut() {
            *open = false;
        }
    }

    /// Adds one note per line of `message`; an empty message adds none.
    fn add_notes(&mut self, owner: &str, level: &str, message: &str) {
        let message = strip_controls(message);
        if message.trim().is_empty() {
            return;
        }
        let owner = strip_controls(owner);
        let lines: Vec<&str> = message.split('\n').collect();
        for line in &lines[lines.len().saturating_sub(NOTES_MAX)..] {
            self.notes.push(Note {
                owner: owner.clone(),
                level: level.to_string(),
                text: line.to_string(),
            });
        }
        if self.notes.len() > NOTES_MAX {
            let extra = self.notes.len() - NOTES_MAX;
            self.notes.drain(..extra);
        }
        if self.flash.as_ref().is_some_and(|f| f.until.is_none()) {
            self.flash = None;
        }
    }

    /// Rebuilds the chat from the core's transcript (after a switch).
    fn rebuild_chat(&mut self) {
        self.chat = transcript_entries(&self.state.messages.read(), &self.state);
        self.scroll = super::scroll::Scroll::Bottom;
    }

    // ----- keys -----

    /// A pasted block of text (bracketed paste).
    pub fn on_paste(&mut self, text: &str) -> Vec<Intent> {
        if !self.confirmations.is_empty() || self.picker.is_some() {
            return Vec::new();
        }
        if let Some(p) = &self.panel {
            // One frame with the whole text: an owner that handles keys
            // concurrently must not see a pasted secret out of order.
            let text: String = strip_controls(text)
                .chars()
                .filter(|c| !c.is_control())
                .take(4096)
                .collect();
            if text.is_empty() {
                return Vec::new();
            }
            return vec![Intent::PanelKey {
                extension: p.extension.clone(),
                panel_id: p.panel.id.clone(),
                key: "rune".into(),
                text: Some(text),
            }];
        }
        self.typing.search = None;
        self.editor.paste(text);
        Vec::new()
    }

    /// One key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let is_ctrl_c = ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('C'));

        // Ctrl+C: close what is open, else arm; twice quits.
        if is_ctrl_c {
            if let Some(c) = self.confirmations.pop_front() {
                return vec![Intent::Confirm(c.request_id, Decision::Deny)];
            }
            if let Some(p) = self.panel.take() {
                return vec![Intent::PanelClose {
                    extension: p.extension,
                    panel_id: p.panel.id,
                }];
            }
            if self.picker.take().is_some() {
                return Vec::new();
            }
            if self.ctrl_c_armed {
                return vec![Intent::Quit(0)];
            }
            self.ctrl_c_armed = true;
            self.editor.clear();
            self.set_flash("press Ctrl+C again to quit", "warn", None);
            return Vec::new();
        }
        if self.ctrl_c_armed {
            self.ctrl_c_armed = false;
            if self
                .flash
                .as_ref()
                .is_some_and(|f| f.text.starts_with("press Ctrl+C"))
            {
                self.flash = None;
            }
        }

        // The confirmation dialog is modal.
        if self.confirmation_scroll(key.code) {
            return Vec::new();
        }
        if let Some(c) = self.confirmations.front() {
            // Never an answer to a question the person could not see whole.
            if !self.confirmation_visible() {
                return Vec::new();
            }
            let decision = match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => Decision::Allow,
                KeyCode::Char('a') | KeyCode::Char('A') => Decision::Always,
                KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => Decision::Deny,
                _ => return Vec::new(),
            };
            let id = c.request_id;
            self.confirmations.pop_front();
            return vec![Intent::Confirm(id, decision)];
        }

        // A panel takes every key; Esc closes it.
        if let Some(p) = &self.panel {
            if key.code == KeyCode::Esc {
                let p = self.panel.take().expect("checked above");
                return vec![Intent::PanelClose {
                    extension: p.extension,
                    panel_id: p.panel.id,
                }];
            }
            let (name, text) = panel_key_name(&key);
            return vec![Intent::PanelKey {
                extension: p.extension.clone(),
                panel_id: p.panel.id.clone(),
                key: name.into(),
                text,
            }];
        }

        if self.picker.is_some() {
            return self.picker_key(key);
        }

        if let Some(out) = self.typing_key(&key) {
            return out;
        }
        let menu_len = self.menu().len();
        match key.code {
            KeyCode::Esc => {
                if menu_len > 0 {
                    self.menu_dismissed = Some(self.editor.text().to_string());
                } else if !self.notes.is_empty() || self.sheet.is_some() {
                    self.notes.clear();
                    self.sheet = None;
                } else if self.busy {
                    return self.abort_and_take_back();
                } else {
                    self.flash = None;
                }
            }
            KeyCode::Enter if alt || shift => self.editor.newline(),
            KeyCode::Char('j') if ctrl => self.editor.newline(),
            KeyCode::Enter => {
                if menu_len > 0 {
                    let items = self.menu();
                    let sel = &items[self.menu_selected.min(menu_len - 1)];
                    self.editor.set_text(&format!("/{}", sel.name));
                }
                return self.submit();
            }
            KeyCode::Tab => {
                if menu_len > 0 {
                    let items = self.menu();
                    let sel = &items[self.menu_selected.min(menu_len - 1)];
                    self.editor.set_text(&format!("/{} ", sel.name));
                    self.menu_selected = 0;
                } else {
                    self.complete_mention();
                }
            }
            KeyCode::Up if menu_len > 0 => {
                self.menu_selected = (self.menu_selected + menu_len - 1) % menu_len;
            }
            KeyCode::Down if menu_len > 0 => {
                self.menu_selected = (self.menu_selected + 1) % menu_len;
            }
            // The editor moves the cursor first; at its edge, history.
            KeyCode::Up if !self.editor.up() => {
                self.editor.history_prev();
            }
            KeyCode::Down if !self.editor.down() => {
                self.editor.history_next();
            }
            KeyCode::Up | KeyCode::Down => {}
            KeyCode::PageUp => self.scroll_page(true),
            KeyCode::PageDown => self.scroll_page(false),
            KeyCode::Home if ctrl || self.editor.is_empty() => self.scroll_home(),
            KeyCode::End if ctrl || self.editor.is_empty() => self.scroll_end(),
            KeyCode::Char('o') if ctrl => self.expand_tools = !self.expand_tools,
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    return vec![Intent::Quit(0)];
                }
                self.editor.delete();
            }
            KeyCode::Char(_) if ctrl || alt => {}
            KeyCode::Char(c) => {
                self.editor.insert_char(c);
                self.menu_selected = 0;
            }
            KeyCode::Backspace => {
                self.editor.backspace();
                self.menu_selected = 0;
            }
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            _ => {}
        }
        Vec::new()
    }

    /// The `/` menu for the editor's current text: open while the text is
    /// `/` plus a command-name prefix, unless dismissed for this text.
    pub fn menu(&self) -> Vec<MenuItem> {
        let text = self.editor.text();
        let Some(prefix) = text.strip_prefix('/') else {
            return Vec::new();
        };
        if prefix.contains(char::is_whitespace) || self.menu_dismissed.as_deref() == Some(text) {
            return Vec::new();
        }
        let prefix = prefix.to_lowercase();
        let builtins = commands::available(commands::Mode::Terminal).map(|b| MenuItem {
            name: b.name.to_string(),
            description: b.description.to_string(),
        });
        let commands = self.state.commands.iter().map(|c| MenuItem {
            name: strip_controls(&c.name),
            description: strip_controls(&c.description),
        });
        let skills = self.state.skills.iter().map(|s| MenuItem {
            name: format!("skill:{}", strip_controls(&s.name)),
            description: strip_controls(&s.description),
        });
        builtins
            .chain(commands)
            .chain(skills)
            .filter(|m| m.name.to_lowercase().starts_with(&prefix))
            .collect()
    }

    fn picker_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        let Some(p) = &mut self.picker else {
            return Vec::new();
        };
        let n = p.items.len();
        match key.code {
            KeyCode::Esc => self.picker = None,
            KeyCode::Up if n > 0 => p.selected = (p.selected + n - 1) % n,
            KeyCode::Down if n > 0 => p.selected = (p.selected + 1) % n,
            KeyCode::Enter if n > 0 => {
                let action = p.items[p.selected.min(n - 1)].action.clone();
                self.picker = None;
                return self.pick(action);
            }
            _ => {}
        }
        Vec::new()
    }

    fn pick(&mut self, action: PickAction) -> Vec<Intent> {
        match action {
            PickAction::Switch(id) => vec![Intent::Change(Change::Switch(id))],
            PickAction::ToggleAlerts => {
                self.alerts = !self.alerts;
                self.open_settings();
                vec![Intent::SaveSettings]
            }
            PickAction::ToggleMouse => {
                self.mouse = !self.mouse;
                self.open_settings();
                if let Some(p) = &mut self.picker {
                    p.selected = 2;
                }
                vec![
                    Intent::SaveSettings,
                    Intent::Terminal(super::mouse_capture(self.mouse)),
                ]
            }
            PickAction::ChooseTheme => {
                let items = self
                    .theme_names()
                    .into_iter()
                    .enumerate()
                    .map(|(i, name)| PickItem {
                        detail: match i {
                            0 | 1 => "built in".into(),
                            _ => self.theme_files[i - 2].path.display().to_string(),
                        },
                        label: name,
                        action: PickAction::Theme(i),
                    })
                    .collect::<Vec<_>>();
                let selected = self
                    .theme_names()
                    .iter()
                    .position(|n| *n == self.theme.name)
                    .unwrap_or(0);
                self.picker = Some(Picker {
                    title: "colour theme".into(),
                    items,
                    selected,
                });
                Vec::new()
            }
            PickAction::Theme(i) => {
                self.pending_theme = None;
                self.apply_theme(i);
                vec![Intent::SaveSettings]
            }
        }
    }

    /// `dark`, `light`, then every theme file's name.
    pub fn theme_names(&self) -> Vec<String> {
        ["dark", "light"]
            .iter()
            .map(|s| s.to_string())
            .chain(self.theme_files.iter().map(|t| strip_controls(&t.name)))
            .collect()
    }

    /// Offers the themes of extensions discovered after the first frame,
    /// and applies the saved one if it is among them.
    pub fn add_themes(&mut self, files: Vec<ThemeFile>) {
        self.theme_files.extend(files);
        if let Some(name) = self.pending_theme.take() {
            match self.theme_names().iter().position(|n| *n == name) {
                Some(i) => self.apply_theme(i),
                None => self.pending_theme = Some(name),
            }
        }
    }

    fn apply_theme(&mut self, i: usize) {
        self.theme = match i {
            0 => Theme::builtin(true, self.depth),
            1 => Theme::builtin(false, self.depth),
            _ => match self.theme_files.get(i - 2) {
                Some(t) => Theme::new(
                    &strip_controls(&t.name),
                    &t.palette(self.dark_terminal),
                    self.depth,
                ),
                None => return,
            },
        };
    }

    fn open_settings(&mut self) {
        self.picker = Some(Picker {
            title: "settings".into(),
            items: vec![
                PickItem {
                    label: format!(
                        "terminal alerts: {}",
                        if self.alerts { "on" } else { "off" }
                    ),
                    detail: "bell for extension alerts and confirmations".into(),
                    action: PickAction::ToggleAlerts,
                },
                PickItem {
                    label: format!("colour theme: {}", self.theme.name),
                    detail: "choose…".into(),
                    action: PickAction::ChooseTheme,
                },
                PickItem {
                    label: format!("mouse wheel: {}", if self.mouse { "on" } else { "off" }),
                    detail: "off lets the terminal select text with the mouse".into(),
                    action: PickAction::ToggleMouse,
                },
            ],
            selected: 0,
        });
    }

    fn open_session_picker(&mut self, tree: bool) {
        let sessions = &self.state.sessions;
        let mut items = Vec::new();
        if tree {
            // The family of the active session: from its root down.
            let by_id = |id: &str| sessions.iter().find(|s| s.id == id);
            let mut root = self.session_id.clone();
            let mut guard = 0;
            while let Some(p) = by_id(&root).and_then(|s| s.parent_id.clone()) {
                if by_id(&p).is_none() || guard > sessions.len() {
                    break;
                }
                root = p;
                guard += 1;
            }
            let mut stack = vec![(root, 0usize)];
            let mut seen = std::collections::HashSet::new();
            while let Some((id, depth)) = stack.pop() {
                if !seen.insert(id.clone()) {
                    continue;
                }
                if let Some(s) = by_id(&id) {
                    let mark = current_mark(&s.id, &self.session_id);
                    let at = s.fork_point.map(|f| format!(" @{f}")).unwrap_or_default();
                    items.push(PickItem {
                        label: format!("{}{mark}{}{at}", "  ".repeat(depth), strip_controls(&s.id)),
                        detail: strip_controls(&s.title),
                        action: PickAction::Switch(s.id.clone()),
                    });
                }
                let mut kids: Vec<_> = sessions
                    .iter()
                    .filter(|c| c.parent_id.as_deref() == Some(id.as_str()))
                    .map(|c| (c.id.clone(), depth + 1))
                    .collect();
                kids.reverse();
                stack.extend(kids);
            }
        } else {
            for s in sessions {
                items.push(PickItem {
                    label: format!(
                        "{}{} {}",
                        current_mark(&s.id, &self.session_id),
                        strip_controls(&s.id),
                        strip_controls(&s.updated)
                    ),
                    detail: strip_controls(&s.title),
                    action: PickAction::Switch(s.id.clone()),
                });
            }
        }
        if items.is_empty() {
            self.set_flash(
                if tree {
                    "no branches to show"
                } else {
                    "no earlier sessions"
                },
                "info",
                Some(RELOAD_STATUS_TTL),
            );
            return;
        }
        let selected = items
            .iter()
            .position(|i| i.action == PickAction::Switch(self.session_id.clone()))
            .unwrap_or(0);
        self.picker = Some(Picker {
            title: if tree {
                "branches".into()
            } else {
                "resume a session".into()
            },
            items,
            selected,
        });
    }

    // ----- submitting -----

    /// Enter: a slash command, or a prompt for the model.
    fn submit(&mut self) -> Vec<Intent> {
        if self.editor.text().trim().is_empty() {
            return Vec::new();
        }
        let text = self.editor.take();
        self.menu_selected = 0;
        self.menu_dismissed = None;
        self.scroll = super::scroll::Scroll::Bottom;
        let trimmed = text.trim();
        if trimmed.starts_with('/') && !trimmed.starts_with("//") {
            return self.run_slash(trimmed);
        }
        self.sheet = None;
        if let Some(command) = trimmed.strip_prefix('!') {
            let command = command.trim();
            if command.is_empty() {
                self.set_flash(
                    "type a shell command after !",
                    "error",
                    Some(RELOAD_STATUS_TTL),
                );
                return Vec::new();
            }
            return vec![Intent::Shell(command.to_string())];
        }
        self.notes.clear();
        vec![Intent::Prompt(self.attach(text))]
    }

    /// The prompt with the files it mentions attached; what could not be
    /// attached is said in the chat.
    fn attach(&mut self, text: String) -> String {
        let Some(project) = &self.project else {
            return text;
        };
        let expanded = super::context::expand(&text, project);
        for why in expanded.refused {
            self.chat.push(Entry::Info(format!(
                "not attached: {}",
                strip_controls(&why)
            )));
        }
        expanded.text
    }

    /// Tab after `@path`: a single matching project file completes it,
    /// several complete their common part and are listed, none says so.
    fn complete_mention(&mut self) {
        let Some(project) = self.project.clone() else {
            return;
        };
        let text = self.editor.text().to_string();
        let Some((start, partial)) = super::context::mention_at(&text, self.editor.cursor()) else {
            return;
        };
        let end = start + 1 + partial.len();
        let found = super::context::candidates(&project, partial);
        match found.as_slice() {
            [] => self.set_flash(
                format!("no project file matches @{}", strip_controls(partial)),
                "warn",
                Some(RELOAD_STATUS_TTL),
            ),
            [one] => {
                self.editor.replace(start..end, &format!("@{one} "));
                self.sheet = None;
            }
            many => {
                let common = super::context::common_prefix(many);
                if common.len() > partial.len() && common.starts_with(partial) {
                    self.editor.replace(start..end, &format!("@{common}"));
                }
                const SHOWN: usize = 15;
                let mut lines: Vec<String> =
                    many.iter().take(SHOWN).map(|f| strip_controls(f)).collect();
                if many.len() > SHOWN {
                    lines.push(format!("… and {} more", many.len() - SHOWN));
                }
                self.sheet = Some(Sheet {
                    title: format!("{} files match @{}", many.len(), strip_controls(partial)),
                    lines,
                });
            }
        }
    }

    /// A slash line typed by the person or sent by an extension.
    fn run_slash(&mut self, line: &str) -> Vec<Intent> {
        let body = line.trim_start_matches('/');
        let (name, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let args = args.trim();
        let arg = (!args.is_empty()).then(|| args.to_string());
        // The table names the built-ins; the ones the terminal does not
        // run itself (and extension commands) go to the core.
        match commands::find(name).map_or("", |b| b.name) {
            "help" => self.sheet = Some(self.help_sheet()),
            "clear" => {
                self.chat.clear();
                self.notes.clear();
                self.load_errors.clear();
                self.sheet = None;
                self.flash = None;
                self.scroll = super::scroll::Scroll::Bottom;
            }
            "quit" => return vec![Intent::Quit(0)],
            "ext" => return vec![Intent::Refresh(Then::ShowExt)],
            "skills" => return vec![Intent::Refresh(Then::ShowSkills)],
            "tree" => return vec![Intent::Refresh(Then::PickTree)],
            "resume" if arg.is_none() => return vec![Intent::Refresh(Then::PickResume)],
            "model" => match arg {
                Some(_) => return self.change(name, args),
                None => {
                    let text = format!(
                        "model: {} ({}); /model NAME to change it",
                        strip_controls(&self.state.model),
                        strip_controls(&self.state.provider)
                    );
                    self.set_flash(text, "info", Some(RELOAD_STATUS_TTL));
                }
            },
            "reload-ext" | "new" | "fork" | "resume" | "compact" => return self.change(name, args),
            "settings" => self.open_settings(),
            "copy" => return self.copy_command(arg.as_deref()),
            "export" => self.export_command(arg.as_deref()),
            _ => {
                return vec![Intent::Command(line.to_string())];
            }
        }
        Vec::new()
    }

    /// A built-in that changes extensions, session or model, parsed as
    /// every mode parses it.
    fn change(&mut self, name: &str, args: &str) -> Vec<Intent> {
        match Change::from_slash(name, args) {
            Some(Ok(change)) => {
                match &change {
                    Change::Reload => self.set_flash("reloading extensions…", "info", None),
                    Change::SetModel(m) => {
                        self.set_flash(format!("model: {m}"), "success", Some(RELOAD_STATUS_TTL));
                        self.state.model = m.clone();
                    }
                    _ => {}
                }
                vec![Intent::Change(change)]
            }
            Some(Err(message)) => {
                self.set_flash(message, "error", Some(RELOAD_STATUS_TTL));
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    fn help_sheet(&self) -> Sheet {
        let mut lines: Vec<String> = HELP.iter().map(|s| s.to_string()).collect();
        lines.push(String::new());
        for b in commands::available(commands::Mode::Terminal) {
            lines.push(format!("/{:<12} {}", b.name, b.description));
        }
        lines.push(format!("/{:<12} {}", "skill:NAME", "run a skill"));
        for c in &self.state.commands {
            lines.push(format!(
                "/{:<12} {} [{}]",
                strip_controls(&c.name),
                strip_controls(&c.description),
                strip_controls(&c.extension)
            ));
        }
        Sheet {
            title: "help".into(),
            lines,
        }
    }

    fn ext_sheet(&self) -> Sheet {
        let mut lines = Vec::new();
        for e in &self.state.extensions {
            let status = match (&e.error, e.running) {
                (Some(err), _) => format!("error: {}", strip_controls(err)),
                (None, true) => "running".into(),
                (None, false) => "stopped".into(),
            };
            lines.push(format!(
                "{} {} ({}) — {status}",
                strip_controls(&e.name),
                strip_controls(&e.version),
                strip_controls(&e.source)
            ));
            if !e.commands.is_empty() {
                lines.push(format!(
                    "  commands: {}",
                    strip_controls(&e.commands.join(", "))
                ));
            }
            if !e.tools.is_empty() {
                lines.push(format!("  tools: {}", strip_controls(&e.tools.join(", "))));
            }
        }
        if lines.is_empty() {
            lines.push("no extensions loaded".into());
        }
        Sheet {
            title: "extensions".into(),
            lines,
        }
    }

    fn skills_sheet(&self) -> Sheet {
        let mut lines: Vec<String> = self
            .state
            .skills
            .iter()
            .map(|s| {
                format!(
                    "{} — {} ({})",
                    strip_controls(&s.name),
                    strip_controls(&s.description),
                    strip_controls(&s.source)
                )
            })
            .collect();
        if lines.is_empty() {
            lines.push("no skills found".into());
        }
        Sheet {
            title: "skills".into(),
            lines,
        }
    }
}

/// The first 8 characters of an id.
/// The mark of the current session in the session lists: ids are shown
/// whole (a day's sessions share their first 15 characters).
fn current_mark(id: &str, current: &str) -> &'static str {
    if id == current {
        "● "
    } else {
        "  "
    }
}

/// A panel with every text field stripped of control sequences.
fn clean_panel(p: Panel) -> Panel {
    Panel {
        id: p.id,
        title: strip_controls(&p.title),
        lines: p.lines.iter().map(|l| strip_controls(l)).collect(),
        footer: strip_controls(&p.footer),
    }
}

/// A user message nobody typed, as the transcript shows it: `[from] text`,
/// `from` being the extension (or `hook`) that kept the prompt going.
fn continued(from: &str, text: &str) -> String {
    format!("[{}] {}", strip_controls(from), strip_controls(text))
}

/// A prompt as the transcript shows it: attached files as their header
/// lines only (`context`).
fn shown_prompt(text: &str) -> String {
    let (typed, headers) = super::context::split_attachments(text);
    let mut out = typed.to_string();
    for h in headers {
        out.push('\n');
        out.push_str(&h);
    }
    out
}

/// Chat entries for a stored transcript.
fn transcript_entries(messages: &[Message], state: &CoreState) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for m in messages {
        for b in &m.content {
            match (m.role, b) {
                (Role::User, Block::Text { text }) => out.push(Entry::User(match &m.from {
                    // As it was shown live: who kept the prompt going.
                    Some(from) => continued(from, text),
                    None => shown_prompt(&strip_controls(text)),
                })),
                (Role::Assistant, Block::Text { text }) => out.push(Entry::Assistant {
                    text: strip_controls(text),
                    open: false,
                    blocked: None,
                }),
                (_, Block::ToolCall { id, name, args }) => out.push(Entry::Tool {
                    id: id.clone(),
                    name: strip_controls(name),
                    extension: tool_source(state, name),
                    args: args_line(args),
                    state: ToolState::Running(String::new()),
                }),
                (
                    _,
                    Block::ToolResult {
                        call_id,
                        is_error,
                        content,
                    },
                ) => {
                    let output = strip_controls(&content_text(content));
                    if let Some(Entry::Tool { state, .. }) = out
                        .iter_mut()
                        .rev()
                        .find(|e| matches!(e, Entry::Tool { id, .. } if id == call_id))
                    {
                        *state = ToolState::Done {
                            is_error: *is_error,
                            output,
                        };
                    }
                }
                (_, Block::Image { .. })
                | (_, Block::Thinking { .. })
                | (_, Block::RedactedThinking { .. }) => {}
            }
        }
    }
    out
}

/// The spec's key name for a key pressed while a panel is open, and the
/// text for `rune`.
pub fn panel_key_name(key: &KeyEvent) -> (&'static str, Option<String>) {
    let ctrl_or_alt = key
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
    let name = match key.code {
        KeyCode::Up => "up",
        KeyCode::Down => "down",
        KeyCode::Left => "left",
        KeyCode::Right => "right",
        KeyCode::Enter => "enter",
        KeyCode::Tab => "tab",
        KeyCode::Backspace => "backspace",
        KeyCode::Delete => "delete",
        KeyCode::Home => "home",
        KeyCode::End => "end",
        KeyCode::PageUp => "pageup",
        KeyCode::PageDown => "pagedown",
        KeyCode::Esc => "esc",
        KeyCode::Char(c) if !ctrl_or_alt && !c.is_control() => {
            return ("rune", Some(c.to_string()))
        }
        _ => "unknown",
    };
    (name, None)
}

/// A `tool_progress` report as one short line: the message, then how far
/// (`3/10` or a percentage when the total is known, else the count).
pub fn progress_text(message: Option<&str>, progress: Option<f64>, total: Option<f64>) -> String {
    let amount = match (progress, total) {
        (Some(p), Some(t)) if t > 0.0 => format!("{:.0}%", (p / t * 100.0).clamp(0.0, 100.0)),
        (Some(p), _) => format!("{p}"),
        _ => String::new(),
    };
    match (
        message.map(str::trim).filter(|m| !m.is_empty()),
        amount.is_empty(),
    ) {
        (Some(m), true) => m.to_string(),
        (Some(m), false) => format!("{m} ({amount})"),
        (None, _) => amount,
    }
}

/// Who provides the tool `name` (an extension, `mcp:SERVER`), sanitised
/// for the screen; `None` for built-ins and tools not registered (now).
fn tool_source(state: &CoreState, name: &str) -> Option<String> {
    state
        .tools
        .iter()
        .find(|t| t.name == name)
        .and_then(|t| t.extension.as_deref())
        .map(strip_controls)
}

/// A call's arguments on its line: compact JSON on one line, nothing for
/// none; control characters stripped.
fn args_line(args: &serde_json::Value) -> String {
    match args {
        serde_json::Value::Object(m) if m.is_empty() => String::new(),
        serde_json::Value::Null => String::new(),
        v => strip_controls(&v.to_string()).replace('\n', " "),
    }
}
