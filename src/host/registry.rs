//! Commands and tools registered by extensions.
//!
//! Rules (spec "Registration"): command names match case-insensitively and
//! keep the first registration's spelling; the first registration of a name
//! wins, in load order; the names of zut's built-in commands
//! ([`crate::commands`], every mode's) and reserved tool names can never be
//! claimed. A refused registration is returned as a
//! reason the caller logs in the extension's own log and reports.
//!
//! Caps keep one extension from flooding the model's context or zut's
//! memory: a tool description is at most [`MAX_TOOL_DESCRIPTION_BYTES`],
//! an extension registers at most [`MAX_TOOLS_PER_EXTENSION`] tools, and
//! an image it returns must carry valid base64 ([`check_content`]).

use serde_json::Value;
use std::collections::HashMap;
use zut_ext::wire::{ContentBlock, RESERVED_TOOL_NAMES};

/// The longest tool description accepted (it goes to the model with every
/// request).
pub const MAX_TOOL_DESCRIPTION_BYTES: usize = 16 * 1024;

/// The most tools one extension may register.
pub const MAX_TOOLS_PER_EXTENSION: usize = 128;

/// An active command.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandEntry {
    /// Canonical spelling (the first registration's).
    pub name: String,
    pub description: String,
    /// Instance id of the owning extension.
    pub ext: u64,
    pub extension: String,
}

/// An active extension tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    pub name: String,
    pub description: String,
    pub schema: Value,
    pub deferred: bool,
    pub interactive: bool,
    pub ext: u64,
    pub extension: String,
}

/// The active registrations of every extension.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    commands: HashMap<String, CommandEntry>,
    command_order: Vec<String>,
    tools: HashMap<String, ToolEntry>,
    tool_order: Vec<String>,
    /// Commands (`/name`, lower-cased) and tools of extensions that died:
    /// their owner and why, so a late call gets a clear error.
    gone: HashMap<String, (String, String)>,
}

impl Registry {
    /// Adds a command, or says why it was refused.
    pub fn add_command(&mut self, entry: CommandEntry) -> Result<(), Refused> {
        let key = entry.name.to_lowercase();
        let refused = |why| Err(Refused::Command(entry.name.clone(), why));
        if entry.name.trim().is_empty() || entry.name.contains(char::is_whitespace) {
            return refused(Why::BadName);
        }
        if crate::commands::is_reserved(&key) {
            return refused(Why::BuiltIn);
        }
        if let Some(existing) = self.commands.get(&key) {
            return refused(Why::Taken {
                by: Owner::of(existing.ext, &existing.extension, entry.ext),
                as_name: (existing.name != entry.name).then(|| existing.name.clone()),
            });
        }
        self.command_order.push(key.clone());
        self.commands.insert(key, entry);
        Ok(())
    }

    /// Adds a tool, or says why it was refused.
    pub fn add_tool(&mut self, mut entry: ToolEntry) -> Result<(), Refused> {
        let name = entry.name.as_str();
        let refused = |why| Err(Refused::Tool(name.to_string(), why));
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return refused(Why::BadName);
        }
        if RESERVED_TOOL_NAMES.contains(&name) {
            return refused(Why::BuiltIn);
        }
        match &entry.schema {
            Value::Null => entry.schema = serde_json::json!({"type": "object", "properties": {}}),
            Value::Object(_) => {}
            _ => return refused(Why::SchemaNotObject),
        }
        if entry.description.len() > MAX_TOOL_DESCRIPTION_BYTES {
            return refused(Why::LongDescription {
                bytes: entry.description.len(),
            });
        }
        if let Some(existing) = self.tools.get(name) {
            return refused(Why::Taken {
                by: Owner::of(existing.ext, &existing.extension, entry.ext),
                as_name: None,
            });
        }
        let owned = self.tools.values().filter(|t| t.ext == entry.ext).count();
        if owned >= MAX_TOOLS_PER_EXTENSION {
            return refused(Why::TooManyTools);
        }
        self.tool_order.push(entry.name.clone());
        self.tools.insert(entry.name.clone(), entry);
        Ok(())
    }

    /// The command `name` (case-insensitive).
    pub fn command(&self, name: &str) -> Option<&CommandEntry> {
        self.commands.get(&name.to_lowercase())
    }

    /// The tool `name` (exact).
    pub fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.get(name)
    }

    /// Why command `name` is unavailable, if a dead extension owned it.
    pub fn gone_command(&self, name: &str) -> Option<String> {
        self.gone
            .get(&format!("/{}", name.to_lowercase()))
            .map(|(ext, why)| {
                format!("/{name} belongs to extension {ext}, which is not running ({why})")
            })
    }

    /// Why tool `name` is unavailable, if a dead extension owned it.
    pub fn gone_tool(&self, name: &str) -> Option<String> {
        self.gone.get(name).map(|(ext, why)| {
            format!("tool {name} belongs to extension {ext}, which is not running ({why})")
        })
    }

    /// Active commands in registration order.
    pub fn commands(&self) -> impl Iterator<Item = &CommandEntry> {
        self.command_order
            .iter()
            .filter_map(|k| self.commands.get(k))
    }

    /// Active tools in registration order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolEntry> {
        self.tool_order.iter().filter_map(|k| self.tools.get(k))
    }

    /// Withdraws tool `name` if extension instance `ext` owns it.
    pub fn remove_tool(&mut self, ext: u64, name: &str) -> bool {
        if self.tools.get(name).is_none_or(|t| t.ext != ext) {
            return false;
        }
        self.tools.remove(name);
        self.tool_order.retain(|k| k != name);
        true
    }

    /// Withdraws command `name` (case-insensitive) if extension instance
    /// `ext` owns it.
    pub fn remove_command(&mut self, ext: u64, name: &str) -> bool {
        let key = name.to_lowercase();
        if self.commands.get(&key).is_none_or(|c| c.ext != ext) {
            return false;
        }
        self.commands.remove(&key);
        self.command_order.retain(|k| *k != key);
        true
    }

    /// Drops everything extension instance `ext` registered.
    pub fn remove_extension(&mut self, ext: u64, reason: &str) {
        for c in self.commands.values().filter(|c| c.ext == ext) {
            self.gone.insert(
                format!("/{}", c.name.to_lowercase()),
                (c.extension.clone(), reason.to_string()),
            );
        }
        for t in self.tools.values().filter(|t| t.ext == ext) {
            self.gone
                .insert(t.name.clone(), (t.extension.clone(), reason.to_string()));
        }
        self.commands.retain(|_, c| c.ext != ext);
        self.tools.retain(|_, t| t.ext != ext);
        let (commands, tools) = (&self.commands, &self.tools);
        self.command_order.retain(|k| commands.contains_key(k));
        self.tool_order.retain(|k| tools.contains_key(k));
    }
}

/// A registration the registry refused: the command or tool name as sent,
/// and why. Shown in the extension's log, `zut ext doctor` and warnings.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    Command(String, Why),
    Tool(String, Why),
}

/// Why a registration was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// Empty, or with spaces (commands); outside 1-64 of `A-Z a-z 0-9 _ -`
    /// (tools).
    BadName,
    /// A built-in command, or a tool name zut keeps for itself.
    BuiltIn,
    /// Already registered; `as_name` is the spelling of the command that
    /// holds the name when it differs only in case.
    Taken {
        by: Owner,
        as_name: Option<String>,
    },
    SchemaNotObject,
    LongDescription {
        bytes: usize,
    },
    TooManyTools,
}

/// Who already holds a name.
#[derive(Debug, Clone, PartialEq)]
pub enum Owner {
    ThisExtension,
    Extension(String),
}

impl Owner {
    fn of(holder: u64, holder_name: &str, asking: u64) -> Owner {
        if holder == asking {
            Owner::ThisExtension
        } else {
            Owner::Extension(holder_name.to_string())
        }
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::ThisExtension => f.write_str("this extension"),
            Owner::Extension(name) => write!(f, "extension {name}"),
        }
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (command, name, why) = match self {
            Refused::Command(name, why) => (true, name, why),
            Refused::Tool(name, why) => (false, name, why),
        };
        // A bad name is quoted, since it may be empty or hold spaces.
        match (command, why) {
            (true, Why::BadName) => write!(f, "command {name:?} refused: ")?,
            (false, Why::BadName) => write!(f, "tool {name:?} refused: ")?,
            (true, _) => write!(f, "command /{name} refused: ")?,
            (false, _) => write!(f, "tool {name} refused: ")?,
        }
        match why {
            Why::BadName if command => f.write_str("names cannot be empty or contain spaces"),
            Why::BadName => f.write_str("names must be 1-64 characters of A-Z a-z 0-9 _ -"),
            Why::BuiltIn if command => f.write_str("it is a built-in zut command"),
            Why::BuiltIn => f.write_str("the name is reserved by zut"),
            Why::Taken { by, as_name } => {
                write!(f, "already registered by {by}")?;
                match as_name {
                    Some(held) => write!(f, " (as /{held}; names match case-insensitively)"),
                    None => Ok(()),
                }
            }
            Why::SchemaNotObject => f.write_str("schema must be a JSON object"),
            Why::LongDescription { bytes } => write!(
                f,
                "its description is {bytes} bytes, more than the {} KiB limit",
                MAX_TOOL_DESCRIPTION_BYTES / 1024
            ),
            Why::TooManyTools => write!(
                f,
                "an extension may register at most {MAX_TOOLS_PER_EXTENSION} tools"
            ),
        }
    }
}

impl std::error::Error for Refused {}

/// A tool result the host cannot pass on: an image whose data is not valid
/// base64. Says which block (counted from 1) and why, for the error result.
#[derive(Debug)]
pub struct BadContent {
    pub block: usize,
    pub error: base64::DecodeError,
}

impl std::fmt::Display for BadContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "it returned an image (content block {}) whose data is not valid base64: {}",
            self.block, self.error
        )
    }
}

impl std::error::Error for BadContent {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Checks what a tool returned: every image must carry valid base64.
pub fn check_content(content: &[ContentBlock]) -> Result<(), BadContent> {
    for (i, block) in content.iter().enumerate() {
        if let ContentBlock::Image { data, .. } = block {
            if let Err(error) =
                base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data)
            {
                return Err(BadContent {
                    block: i + 1,
                    error,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(name: &str, ext: u64) -> CommandEntry {
        CommandEntry {
            name: name.into(),
            description: String::new(),
            ext,
            extension: format!("e{ext}"),
        }
    }

    fn tool(name: &str, ext: u64) -> ToolEntry {
        ToolEntry {
            name: name.into(),
            description: String::new(),
            schema: Value::Null,
            deferred: false,
            interactive: false,
            ext,
            extension: format!("e{ext}"),
        }
    }

    #[test]
    fn commands_are_case_insensitive_first_wins() {
        let mut r = Registry::default();
        r.add_command(cmd("Ping", 1)).unwrap();
        let e = r.add_command(cmd("PING", 2)).unwrap_err();
        assert_eq!(
            e,
            Refused::Command(
                "PING".into(),
                Why::Taken {
                    by: Owner::Extension("e1".into()),
                    as_name: Some("Ping".into())
                }
            )
        );
        assert_eq!(
            e.to_string(),
            "command /PING refused: already registered by extension e1 (as /Ping; names match case-insensitively)"
        );
        assert_eq!(
            r.add_command(cmd("ping", 1)).unwrap_err().to_string(),
            "command /ping refused: already registered by this extension (as /Ping; names match case-insensitively)"
        );
        assert_eq!(r.command("pInG").unwrap().name, "Ping");
        assert_eq!(
            r.add_command(cmd("Reload-Ext", 1)).unwrap_err().to_string(),
            "command /Reload-Ext refused: it is a built-in zut command"
        );
        assert_eq!(
            r.add_command(cmd("two words", 1)).unwrap_err().to_string(),
            "command \"two words\" refused: names cannot be empty or contain spaces"
        );
        r.remove_extension(1, "exited");
        assert!(r.command("ping").is_none());
        assert_eq!(
            r.gone_command("PING").unwrap(),
            "/PING belongs to extension e1, which is not running (exited)"
        );
        r.add_command(cmd("ping", 2)).unwrap();
    }

    #[test]
    fn tools_reserved_and_duplicates() {
        let mut r = Registry::default();
        for name in ["read", "grep", "python", "web_search", "plan", "skill"] {
            assert_eq!(
                r.add_tool(tool(name, 1)).unwrap_err().to_string(),
                format!("tool {name} refused: the name is reserved by zut")
            );
        }
        assert_eq!(
            r.add_tool(tool("bad name", 1)).unwrap_err().to_string(),
            "tool \"bad name\" refused: names must be 1-64 characters of A-Z a-z 0-9 _ -"
        );
        r.add_tool(tool("weather", 1)).unwrap();
        assert_eq!(
            r.add_tool(tool("weather", 2)).unwrap_err().to_string(),
            "tool weather refused: already registered by extension e1"
        );
        assert_eq!(r.tool("weather").unwrap().schema["type"], "object");
        let mut t = tool("x", 1);
        t.schema = Value::from(3);
        assert_eq!(
            r.add_tool(t).unwrap_err().to_string(),
            "tool x refused: schema must be a JSON object"
        );
        assert_eq!(
            r.tools().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["weather"]
        );
    }

    #[test]
    fn caps_on_descriptions_tool_count_and_images() {
        let mut r = Registry::default();
        let mut long = tool("long", 1);
        long.description = "x".repeat(MAX_TOOL_DESCRIPTION_BYTES + 1);
        assert_eq!(
            r.add_tool(long).unwrap_err().to_string(),
            "tool long refused: its description is 16385 bytes, more than the 16 KiB limit"
        );
        let mut edge = tool("edge", 1);
        edge.description = "x".repeat(MAX_TOOL_DESCRIPTION_BYTES);
        r.add_tool(edge).unwrap();
        for i in 1..MAX_TOOLS_PER_EXTENSION {
            r.add_tool(tool(&format!("t{i}"), 1)).unwrap();
        }
        assert_eq!(
            r.add_tool(tool("one_more", 1)).unwrap_err().to_string(),
            "tool one_more refused: an extension may register at most 128 tools"
        );
        r.add_tool(tool("other", 2)).unwrap();
        r.remove_extension(1, "exited");
        r.add_tool(tool("again", 2)).unwrap();

        let image = |data: &str| ContentBlock::Image {
            mime_type: "image/png".into(),
            data: data.into(),
        };
        assert!(check_content(&[ContentBlock::text("a"), image("aGk=")]).is_ok());
        let e = check_content(&[ContentBlock::text("a"), image("not base64!")]).unwrap_err();
        assert_eq!(e.block, 2);
        assert!(
            e.to_string().starts_with(
                "it returned an image (content block 2) whose data is not valid base64: "
            ),
            "{e}"
        );
    }
}
