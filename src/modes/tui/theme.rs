//! Colour themes for the terminal UI: the built-in `dark` and `light`
//! palettes, user themes from `$ZUT_HOME/themes/*.json` and theme files
//! shipped by extensions.
//!
//! A theme file overrides any subset of the colour roles (`fg`, `muted`,
//! `accent`, …), shared by both modes (top level or directly under
//! `colors`) or per mode (`colors.dark` / `colors.light`; a missing mode
//! borrows the other's overrides). Only colours are honoured; spinner and
//! syntax fields are accepted and ignored.
//!
//! Invariants: resolving never fails — an unreadable colour value is skipped
//! and the role keeps its base colour. With [`ColorDepth::None`] (`NO_COLOR`)
//! every role resolves to [`Color::Reset`], so nothing coloured is drawn; with
//! [`ColorDepth::Ansi16`] only the 16 named colours are emitted.

use ratatui::style::Color;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// How many colours the terminal can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorDepth {
    /// `NO_COLOR`: no colour at all.
    None,
    /// The 16 named colours.
    Ansi16,
    /// The xterm 256-colour palette.
    Xterm256,
    /// 24-bit RGB.
    TrueColor,
}

impl ColorDepth {
    /// Decides from `NO_COLOR`, `COLORTERM` and `TERM`.
    pub fn detect() -> ColorDepth {
        let var = |k: &str| std::env::var(k).ok();
        ColorDepth::from_vars(
            var("NO_COLOR").as_deref(),
            var("COLORTERM").as_deref(),
            var("TERM").as_deref(),
        )
    }

    /// The decision itself, from the variables' values.
    pub fn from_vars(no_color: Option<&str>, colorterm: Option<&str>, term: Option<&str>) -> Self {
        if no_color.is_some_and(|v| !v.is_empty()) {
            return ColorDepth::None;
        }
        let colorterm = colorterm.unwrap_or("").to_ascii_lowercase();
        let term = term.unwrap_or("").to_ascii_lowercase();
        // These names promise 16 colours; a COLORTERM inherited from an
        // outer terminal (tmux, screen, the console) does not change that.
        if sixteen_colour_term(&term) {
            return ColorDepth::Ansi16;
        }
        if colorterm == "truecolor" || colorterm == "24bit" || term.ends_with("-direct") {
            ColorDepth::TrueColor
        } else if term.contains("256color") {
            ColorDepth::Xterm256
        } else {
            ColorDepth::Ansi16
        }
    }
}

/// Whether `term` (lower-case) names a 16-colour terminal type.
fn sixteen_colour_term(term: &str) -> bool {
    matches!(
        term,
        "xterm" | "screen" | "linux" | "vt100" | "vt220" | "ansi" | "xterm-color" | "tmux"
    )
}

/// Whether the terminal type draws only ASCII reliably (the Linux
/// console's font has no box drawing beyond a few lines, no arrows).
pub fn ascii_only(term: Option<&str>) -> bool {
    matches!(term, Some("linux") | Some("vt100") | Some("vt220"))
}

/// A colour as a theme writes it, before the terminal's depth is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorSpec {
    /// An xterm-256 index.
    Index(u8),
    /// 24-bit colour.
    Rgb(u8, u8, u8),
    /// An SGR colour code (30–37, 90–97; background codes normalised).
    Ansi(u8),
}

impl ColorSpec {
    /// Reads any of the documented JSON forms; `None` for anything else.
    pub fn parse(v: &Value) -> Option<ColorSpec> {
        match v {
            Value::Number(n) => n
                .as_u64()
                .and_then(|i| u8::try_from(i).ok())
                .map(ColorSpec::Index),
            Value::String(s) => {
                let hex = s.trim().strip_prefix('#')?;
                if hex.len() != 6 || !hex.is_ascii() {
                    return None;
                }
                let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
                Some(ColorSpec::Rgb(byte(0)?, byte(2)?, byte(4)?))
            }
            Value::Object(o) => {
                let num = |k: &str| {
                    o.get(k)
                        .and_then(Value::as_u64)
                        .and_then(|i| u8::try_from(i).ok())
                };
                match o.get("mode").and_then(Value::as_str)? {
                    "256" => num("index").map(ColorSpec::Index),
                    "ansi" => num("index").map(ColorSpec::Ansi),
                    "rgb" => Some(ColorSpec::Rgb(num("r")?, num("g")?, num("b")?)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The colour to emit on a terminal of `depth`.
    pub fn resolve(self, depth: ColorDepth) -> Color {
        match (depth, self) {
            (ColorDepth::None, _) => Color::Reset,
            (_, ColorSpec::Ansi(code)) => named(ansi_index(code)),
            (ColorDepth::Ansi16, ColorSpec::Index(i)) if i < 16 => named(i),
            (ColorDepth::Ansi16, ColorSpec::Index(i)) => named(nearest(xterm_rgb(i), 0..16)),
            (ColorDepth::Ansi16, ColorSpec::Rgb(r, g, b)) => named(nearest((r, g, b), 0..16)),
            (ColorDepth::Xterm256, ColorSpec::Index(i)) => Color::Indexed(i),
            (ColorDepth::Xterm256, ColorSpec::Rgb(r, g, b)) => {
                Color::Indexed(nearest((r, g, b), 16..256))
            }
            (ColorDepth::TrueColor, ColorSpec::Index(i)) => {
                let (r, g, b) = xterm_rgb(i);
                Color::Rgb(r, g, b)
            }
            (ColorDepth::TrueColor, ColorSpec::Rgb(r, g, b)) => Color::Rgb(r, g, b),
        }
    }
}

/// SGR foreground/background codes to a palette index 0–15.
fn ansi_index(code: u8) -> u8 {
    match code {
        30..=37 => code - 30,
        40..=47 => code - 40,
        90..=97 => code - 90 + 8,
        100..=107 => code - 100 + 8,
        0..=15 => code,
        _ => 7,
    }
}

/// The 16 named colours by palette index.
fn named(i: u8) -> Color {
    const NAMED: [Color; 16] = [
        Color::Black,
        Color::Red,
        Color::Green,
        Color::Yellow,
        Color::Blue,
        Color::Magenta,
        Color::Cyan,
        Color::Gray,
        Color::DarkGray,
        Color::LightRed,
        Color::LightGreen,
        Color::LightYellow,
        Color::LightBlue,
        Color::LightMagenta,
        Color::LightCyan,
        Color::White,
    ];
    NAMED[usize::from(i % 16)]
}

/// The usual RGB value of an xterm-256 index.
fn xterm_rgb(i: u8) -> (u8, u8, u8) {
    const BASE: [(u8, u8, u8); 16] = [
        (0, 0, 0),
        (205, 0, 0),
        (0, 205, 0),
        (205, 205, 0),
        (0, 0, 238),
        (205, 0, 205),
        (0, 205, 205),
        (229, 229, 229),
        (127, 127, 127),
        (255, 0, 0),
        (0, 255, 0),
        (255, 255, 0),
        (92, 92, 255),
        (255, 0, 255),
        (0, 255, 255),
        (255, 255, 255),
    ];
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    match i {
        0..=15 => BASE[usize::from(i)],
        16..=231 => {
            let c = i - 16;
            (
                LEVELS[usize::from(c / 36)],
                LEVELS[usize::from((c / 6) % 6)],
                LEVELS[usize::from(c % 6)],
            )
        }
        _ => {
            let g = 8 + 10 * (i - 232);
            (g, g, g)
        }
    }
}

/// The palette index in `range` closest to `rgb`.
fn nearest(rgb: (u8, u8, u8), range: std::ops::Range<u16>) -> u8 {
    let dist = |(r, g, b): (u8, u8, u8)| {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).pow(2);
        d(r, rgb.0) + d(g, rgb.1) + d(b, rgb.2)
    };
    range
        .filter_map(|i| u8::try_from(i).ok())
        .min_by_key(|&i| dist(xterm_rgb(i)))
        .unwrap_or(7)
}

/// The colour roles a theme may set, in file-key order.
pub const ROLES: &[&str] = &[
    "fg",
    "muted",
    "accent",
    "background",
    "user",
    "user_bubble_bg",
    "user_bubble_fg",
    "assistant",
    "tool",
    "tool_out",
    "error",
    "warning",
    "spinner",
    "thinking_max",
    "selection_bg",
    "selection_fg",
];

/// Colours for every role, before resolution. `background` and the user
/// bubble background are optional: unset means the terminal's own.
#[derive(Debug, Clone, PartialEq)]
pub struct Palette {
    colors: [Option<ColorSpec>; ROLES.len()],
}

impl Palette {
    /// The built-in palette for a dark (`true`) or light background.
    pub fn builtin(dark: bool) -> Palette {
        use ColorSpec::Index as I;
        let c = if dark {
            [
                Some(I(253)),
                Some(I(244)),
                Some(I(111)),
                None,
                Some(I(180)),
                None,
                Some(I(223)),
                Some(I(117)),
                Some(I(114)),
                Some(I(245)),
                Some(I(203)),
                Some(I(214)),
                Some(I(183)),
                Some(I(177)),
                Some(I(24)),
                Some(I(231)),
            ]
        } else {
            [
                Some(I(236)),
                Some(I(244)),
                Some(I(25)),
                None,
                Some(I(130)),
                None,
                Some(I(94)),
                Some(I(31)),
                Some(I(28)),
                Some(I(242)),
                Some(I(160)),
                Some(I(166)),
                Some(I(97)),
                Some(I(90)),
                Some(I(153)),
                Some(I(16)),
            ]
        };
        Palette { colors: c }
    }

    /// The colour of `role`, if set.
    pub fn get(&self, role: &str) -> Option<ColorSpec> {
        let i = ROLES.iter().position(|r| *r == role)?;
        self.colors[i]
    }

    /// Applies every readable role override in `map`.
    fn apply(&mut self, map: &Map<String, Value>) {
        for (key, value) in map {
            let key = if key == "thinkingMax" {
                "thinking_max"
            } else {
                key.as_str()
            };
            if let (Some(i), Some(c)) = (
                ROLES.iter().position(|r| *r == key),
                ColorSpec::parse(value),
            ) {
                self.colors[i] = Some(c);
            }
        }
    }
}

/// A theme file, parsed but not yet applied to a base palette.
#[derive(Debug, Clone, PartialEq)]
pub struct ThemeFile {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
    shared: Map<String, Value>,
    dark: Option<Map<String, Value>>,
    light: Option<Map<String, Value>>,
}

/// Why a theme file was not offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThemeError(pub String);

impl std::fmt::Display for ThemeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl ThemeFile {
    /// Reads and parses one theme file (plain JSON, an object).
    pub fn load(path: &Path) -> Result<ThemeFile, ThemeError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ThemeError(format!("{}: {e}", path.display())))?;
        ThemeFile::parse(&text, path)
    }

    /// Parses theme JSON; `path` names it in errors and as a fallback name.
    pub fn parse(text: &str, path: &Path) -> Result<ThemeFile, ThemeError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| ThemeError(format!("{}: {e}", path.display())))?;
        let Value::Object(top) = value else {
            return Err(ThemeError(format!(
                "{}: a theme must be a JSON object",
                path.display()
            )));
        };
        let text_of = |k: &str| {
            top.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string()
        };
        let mut shared = top.clone();
        let mut dark = None;
        let mut light = None;
        if let Some(Value::Object(colors)) = top.get("colors") {
            for (k, v) in colors {
                match (k.as_str(), v) {
                    ("dark", Value::Object(m)) => dark = Some(m.clone()),
                    ("light", Value::Object(m)) => light = Some(m.clone()),
                    _ => {
                        shared.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        let name = match text_of("name") {
            n if n.is_empty() => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string()),
            n => n,
        };
        Ok(ThemeFile {
            name,
            description: text_of("description"),
            path: path.to_path_buf(),
            shared,
            dark,
            light,
        })
    }

    /// The palette for a dark or light terminal: the built-in one, then the
    /// shared overrides, then this mode's (or, if absent, the other mode's).
    pub fn palette(&self, dark_terminal: bool) -> Palette {
        let mut p = Palette::builtin(dark_terminal);
        p.apply(&self.shared);
        let (mine, other) = if dark_terminal {
            (&self.dark, &self.light)
        } else {
            (&self.light, &self.dark)
        };
        if let Some(m) = mine.as_ref().or(other.as_ref()) {
            p.apply(m);
        }
        p
    }
}

/// `$ZUT_HOME/themes/*.json`, sorted by file name; unparsable files are
/// skipped (and logged).
pub fn user_themes(zut_home: &Path) -> Vec<ThemeFile> {
    let dir = zut_home.join("themes");
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        Err(_) => return Vec::new(),
    };
    paths.sort();
    load_all(&paths)
}

/// Loads every file in `paths`, skipping (and logging) the broken ones.
pub fn load_all(paths: &[PathBuf]) -> Vec<ThemeFile> {
    paths
        .iter()
        .filter_map(|p| match ThemeFile::load(p) {
            Ok(t) => Some(t),
            Err(e) => {
                log::warn!("theme not offered: {e}");
                None
            }
        })
        .collect()
}

/// Whether the terminal background looks dark (`COLORFGBG` when set;
/// dark otherwise).
pub fn terminal_is_dark() -> bool {
    match std::env::var("COLORFGBG") {
        Ok(v) => match v
            .rsplit(';')
            .next()
            .and_then(|bg| bg.trim().parse::<u8>().ok())
        {
            Some(bg) => !(bg == 7 || bg >= 9),
            None => true,
        },
        Err(_) => true,
    }
}

/// Resolved colours, ready to draw with.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    /// The label shown in `/settings` (`dark`, `light`, or the file's name).
    pub name: String,
    pub depth: ColorDepth,
    pub fg: Color,
    pub muted: Color,
    pub accent: Color,
    pub user: Color,
    pub user_bubble_bg: Option<Color>,
    pub user_bubble_fg: Color,
    pub assistant: Color,
    pub tool: Color,
    pub tool_out: Color,
    pub error: Color,
    pub warning: Color,
    pub spinner: Color,
    pub selection_bg: Color,
    pub selection_fg: Color,
}

impl Theme {
    /// Resolves `palette` for a terminal of `depth`.
    pub fn new(name: &str, palette: &Palette, depth: ColorDepth) -> Theme {
        let get = |role: &str| {
            palette
                .get(role)
                .map(|c| c.resolve(depth))
                .unwrap_or(Color::Reset)
        };
        let opt = |role: &str| match depth {
            ColorDepth::None => None,
            _ => palette.get(role).map(|c| c.resolve(depth)),
        };
        Theme {
            name: name.to_string(),
            depth,
            fg: get("fg"),
            muted: get("muted"),
            accent: get("accent"),
            user: get("user"),
            user_bubble_bg: opt("user_bubble_bg"),
            user_bubble_fg: get("user_bubble_fg"),
            assistant: get("assistant"),
            tool: get("tool"),
            tool_out: get("tool_out"),
            error: get("error"),
            warning: get("warning"),
            spinner: get("spinner"),
            selection_bg: get("selection_bg"),
            selection_fg: get("selection_fg"),
        }
    }

    /// A built-in theme: `dark` or `light`.
    pub fn builtin(dark: bool, depth: ColorDepth) -> Theme {
        let name = if dark { "dark" } else { "light" };
        Theme::new(name, &Palette::builtin(dark), depth)
    }

    /// Whether colours are off (`NO_COLOR`).
    pub fn plain(&self) -> bool {
        self.depth == ColorDepth::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_color_wins_and_depth_follows_colorterm_then_term() {
        assert_eq!(
            ColorDepth::from_vars(Some("1"), Some("truecolor"), None),
            ColorDepth::None
        );
        assert_eq!(
            ColorDepth::from_vars(Some(""), Some("truecolor"), None),
            ColorDepth::TrueColor
        );
        assert_eq!(
            ColorDepth::from_vars(None, None, Some("xterm-direct")),
            ColorDepth::TrueColor
        );
        assert_eq!(
            ColorDepth::from_vars(None, None, Some("screen-256color")),
            ColorDepth::Xterm256
        );
        assert_eq!(
            ColorDepth::from_vars(None, None, Some("xterm")),
            ColorDepth::Ansi16
        );
        assert_eq!(ColorDepth::from_vars(None, None, None), ColorDepth::Ansi16);
    }

    #[test]
    fn every_documented_colour_form_parses() {
        assert_eq!(ColorSpec::parse(&json!(254)), Some(ColorSpec::Index(254)));
        assert_eq!(
            ColorSpec::parse(&json!("#42454b")),
            Some(ColorSpec::Rgb(0x42, 0x45, 0x4b))
        );
        assert_eq!(
            ColorSpec::parse(&json!({"mode":"256","index":254})),
            Some(ColorSpec::Index(254))
        );
        assert_eq!(
            ColorSpec::parse(&json!({"mode":"ansi","index":100})),
            Some(ColorSpec::Ansi(100))
        );
        assert_eq!(
            ColorSpec::parse(&json!({"mode":"rgb","r":66,"g":69,"b":75})),
            Some(ColorSpec::Rgb(66, 69, 75))
        );
        assert_eq!(ColorSpec::parse(&json!(256)), None);
        assert_eq!(ColorSpec::parse(&json!("#12")), None);
        assert_eq!(ColorSpec::parse(&json!({"mode":"hsl"})), None);
    }

    #[test]
    fn sixteen_colour_terminals_only_get_named_colours() {
        let named_only = |c: Color| !matches!(c, Color::Indexed(_) | Color::Rgb(..));
        for spec in [
            ColorSpec::Index(203),
            ColorSpec::Rgb(10, 200, 30),
            ColorSpec::Ansi(91),
            ColorSpec::Index(3),
        ] {
            assert!(named_only(spec.resolve(ColorDepth::Ansi16)), "{spec:?}");
        }
        assert_eq!(
            ColorSpec::Index(196).resolve(ColorDepth::Ansi16),
            Color::LightRed
        );
        assert_eq!(
            ColorSpec::Rgb(255, 0, 0).resolve(ColorDepth::Xterm256),
            Color::Indexed(196)
        );
        assert_eq!(
            ColorSpec::Index(16).resolve(ColorDepth::TrueColor),
            Color::Rgb(0, 0, 0)
        );
        assert_eq!(ColorSpec::Index(16).resolve(ColorDepth::None), Color::Reset);
    }

    #[test]
    fn theme_file_layers_shared_then_mode_then_other_mode() {
        let t = ThemeFile::parse(
            r#"{"name":"t","accent":1,"colors":{"muted":2,"dark":{"error":3},"spinner_frames":["a"]}}"#,
            Path::new("/x/t.json"),
        )
        .expect("parses");
        let dark = t.palette(true);
        assert_eq!(dark.get("accent"), Some(ColorSpec::Index(1)));
        assert_eq!(dark.get("muted"), Some(ColorSpec::Index(2)));
        assert_eq!(dark.get("error"), Some(ColorSpec::Index(3)));
        // No light overrides: the dark ones apply on top of the light base.
        let light = t.palette(false);
        assert_eq!(light.get("error"), Some(ColorSpec::Index(3)));
        assert_eq!(light.get("fg"), Palette::builtin(false).get("fg"));
        let unnamed = ThemeFile::parse("{}", Path::new("/x/plain.json")).expect("parses");
        assert_eq!(unnamed.name, "plain");
        assert!(ThemeFile::parse("[1]", Path::new("a.json")).is_err());
        assert!(ThemeFile::parse("{// no\n}", Path::new("a.json")).is_err());
    }

    #[test]
    fn user_themes_are_read_from_the_themes_folder_and_broken_ones_skipped() {
        let home = tempfile::tempdir().expect("tempdir");
        let dir = home.path().join("themes");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join("b.json"),
            r#"{"name":"bee","colors":{"accent":204}}"#,
        )
        .expect("write");
        std::fs::write(dir.join("a.json"), "{not json").expect("write");
        std::fs::write(dir.join("c.txt"), "{}").expect("write");
        let themes = user_themes(home.path());
        assert_eq!(themes.len(), 1);
        assert_eq!(themes[0].name, "bee");
        assert_eq!(
            themes[0].palette(true).get("accent"),
            Some(ColorSpec::Index(204))
        );
    }

    #[test]
    fn no_color_resolves_every_role_to_reset() {
        let t = Theme::builtin(true, ColorDepth::None);
        assert!(t.plain());
        assert_eq!(t.accent, Color::Reset);
        assert_eq!(t.user_bubble_bg, None);
    }
}
