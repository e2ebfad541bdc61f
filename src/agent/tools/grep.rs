use super::{ToolContext, ToolOutput};
use crate::cancel::CancelToken;
use crate::provider::ToolDef;
use serde_json::Value;

pub fn definition() -> ToolDef {
    ToolDef {
        name: "grep".into(),
        description: String::new(),
        schema: serde_json::json!({"type":"object"}),
    }
}

pub fn run(_args: &Value, _ctx: &ToolContext, _cancel: &CancelToken) -> ToolOutput {
    ToolOutput::error("grep: not implemented")
}
