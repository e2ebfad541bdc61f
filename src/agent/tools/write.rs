use super::{ToolContext, ToolOutput};
use crate::provider::ToolDef;
use serde_json::Value;

pub fn definition() -> ToolDef {
    ToolDef {
        name: "write".into(),
        description: String::new(),
        schema: serde_json::json!({"type":"object"}),
    }
}

pub fn run(_args: &Value, _ctx: &ToolContext) -> ToolOutput {
    ToolOutput::error("write: not implemented")
}
