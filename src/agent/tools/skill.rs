//! The `skill` tool: the model loads the full instructions of a skill the
//! system prompt lists, by name.
//!
//! Unlike the other built-ins it reads nothing from disk: the skill set was
//! read (and, for bundled skills, checked to stay inside the extension
//! directory) when the run started, so a call can only return what zut
//! already chose to offer. Skills marked `disable-model-invocation` are not
//! offered and not returned: only a person runs them, with `/skill:NAME`.

use super::common::Args;
use super::ToolOutput;
use crate::provider::ToolDef;
use crate::skills::SkillSet;
use serde_json::{json, Value};

/// The definition advertised to the model (only when it has skills).
pub fn definition() -> ToolDef {
    ToolDef {
        name: "skill".into(),
        description: "Load the full instructions of one of the skills listed in the system \
                      prompt. Call it with the skill's name when a request matches the skill's \
                      description, then follow what it returns."
            .into(),
        schema: json!({
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "The skill's name, exactly as listed in the system prompt"
                }
            },
            "required": ["name"]
        }),
    }
}

/// Runs the tool against the run's skill set.
pub fn run(args: &Value, skills: &SkillSet) -> ToolOutput {
    let args = match Args::new("skill", args) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let name = match args.string("name", "the skill to load") {
        Ok(n) => n.trim(),
        Err(e) => return e,
    };
    if name.is_empty() {
        return args.error("\"name\" is empty: pass a skill name from the system prompt");
    }
    match skills.get(name) {
        Some(s) if s.model_invocable => ToolOutput::text(crate::skills::render(s)),
        Some(s) => args.error(format!(
            "skill {:?} is reserved for the user (it sets disable-model-invocation)",
            s.name
        )),
        None => {
            let offered: Vec<&str> = skills.model_visible().map(|s| s.name.as_str()).collect();
            args.error(format!(
                "no skill named {name:?}; available: {}",
                offered.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tools::common::testing::text;

    fn set() -> SkillSet {
        let base = crate::skills::Skill {
            name: "review".into(),
            description: "Review a diff".into(),
            body: "Step 1".into(),
            path: "/s/review/SKILL.md".into(),
            dir: "/s/review".into(),
            source: "/s".into(),
            extension: None,
            alias: None,
            model_invocable: true,
            allowed_tools: vec![],
            permissions: vec![],
        };
        let hidden = crate::skills::Skill {
            name: "deploy".into(),
            model_invocable: false,
            ..base.clone()
        };
        SkillSet {
            skills: vec![base, hidden],
            warnings: vec![],
        }
    }

    #[test]
    fn loads_by_name_and_refuses_the_rest() {
        let s = set();
        let out = run(&json!({"name": " review "}), &s);
        assert!(!out.is_error);
        assert_eq!(
            text(&out),
            "# Skill: review\n\nReview a diff\n\nSkill directory: /s/review\n\n---\n\nStep 1"
        );
        for (args, needle) in [
            (json!({"name": "deploy"}), "reserved for the user"),
            (
                json!({"name": "nope"}),
                "no skill named \"nope\"; available: review",
            ),
            (json!({}), "\"name\" is required"),
            (json!({"name": ""}), "empty"),
            (json!({"name": 3}), "must be a string"),
            (json!(null), "arguments must be a JSON object"),
        ] {
            let out = run(&args, &s);
            assert!(out.is_error, "{args}");
            assert!(text(&out).starts_with("skill: "), "{args}");
            assert!(text(&out).contains(needle), "{args}: {}", text(&out));
        }
    }
}
