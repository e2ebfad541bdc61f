//! A small JSON Schema checker for `sdk/protocol.schema.json`.
//!
//! It understands exactly the keywords that schema uses (`$ref` to local
//! `$defs`, `oneOf`, `anyOf`, `type`, `const`, `enum`, `required`,
//! `properties`, `items`, `minimum`) and fails loudly on any other keyword,
//! so the schema cannot quietly grow a rule nobody checks. Unknown
//! properties in a checked value are allowed, as the protocol says.
//!
//! `partial` mode skips `required` and lets the string `"<any>"` stand for
//! any value: it checks the field types of a conversation's expectation
//! patterns, which name only the fields they care about.

use serde_json::Value;

/// Keywords that carry no rule.
const ANNOTATIONS: &[&str] = &["$schema", "$id", "$defs", "title", "description"];

pub struct Checker {
    root: Value,
}

impl Checker {
    pub fn new(root: Value) -> Checker {
        Checker { root }
    }

    /// The schema under `#/$defs/<name>`.
    pub fn def(&self, name: &str) -> &Value {
        self.root
            .pointer(&format!("/$defs/{name}"))
            .unwrap_or_else(|| panic!("schema has no $defs/{name}"))
    }

    /// Checks `value` against the definition `name`; the error says where.
    pub fn check(&self, name: &str, value: &Value, partial: bool) -> Result<(), String> {
        self.check_at(self.def(name), value, partial, "$")
    }

    fn check_at(&self, schema: &Value, v: &Value, partial: bool, at: &str) -> Result<(), String> {
        if partial && v.as_str() == Some("<any>") {
            return Ok(());
        }
        let obj = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return Err(format!("{at}: nothing is allowed here")),
            Value::Object(o) => o,
            other => panic!("schema node is not an object: {other}"),
        };
        for (key, rule) in obj {
            match key.as_str() {
                k if ANNOTATIONS.contains(&k) => {}
                "$ref" => {
                    let name = rule
                        .as_str()
                        .and_then(|r| r.strip_prefix("#/$defs/"))
                        .unwrap_or_else(|| panic!("unsupported $ref {rule}"));
                    self.check_at(self.def(name), v, partial, at)?;
                }
                "oneOf" | "anyOf" => {
                    let branches = rule.as_array().expect("oneOf/anyOf is an array");
                    let errors: Vec<String> = branches
                        .iter()
                        .filter_map(|b| self.check_at(b, v, partial, at).err())
                        .collect();
                    let matched = branches.len() - errors.len();
                    let ok = if key == "oneOf" {
                        matched == 1
                    } else {
                        matched >= 1
                    };
                    if !ok {
                        return Err(if matched == 0 {
                            let best = errors.iter().max_by_key(|e| e.len()).cloned();
                            format!("{at}: matches no branch of {key} (longest error: {best:?})")
                        } else {
                            format!("{at}: matches {matched} branches of oneOf")
                        });
                    }
                }
                "type" => {
                    let want = rule.as_str().expect("type is one string");
                    let ok = match want {
                        "object" => v.is_object(),
                        "array" => v.is_array(),
                        "string" => v.is_string(),
                        "boolean" => v.is_boolean(),
                        "integer" => v.is_i64() || v.is_u64(),
                        "number" => v.is_number(),
                        "null" => v.is_null(),
                        other => panic!("unsupported type {other}"),
                    };
                    if !ok {
                        return Err(format!("{at}: expected {want}, got {v}"));
                    }
                }
                "const" => {
                    if v != rule {
                        return Err(format!("{at}: expected {rule}, got {v}"));
                    }
                }
                "enum" => {
                    let options = rule.as_array().expect("enum is an array");
                    if !options.contains(v) {
                        return Err(format!("{at}: {v} is not one of {rule}"));
                    }
                }
                "minimum" => {
                    let min = rule.as_f64().expect("minimum is a number");
                    if v.as_f64().is_some_and(|n| n < min) {
                        return Err(format!("{at}: {v} is below {min}"));
                    }
                }
                "required" => {
                    if partial {
                        continue;
                    }
                    if let Some(o) = v.as_object() {
                        for name in rule.as_array().expect("required is an array") {
                            let name = name.as_str().expect("required names are strings");
                            if !o.contains_key(name) {
                                return Err(format!("{at}: missing required field {name:?}"));
                            }
                        }
                    }
                }
                "properties" => {
                    if let Some(o) = v.as_object() {
                        for (name, sub) in rule.as_object().expect("properties is an object") {
                            if let Some(field) = o.get(name) {
                                self.check_at(sub, field, partial, &format!("{at}.{name}"))?;
                            }
                        }
                    }
                }
                "items" => {
                    if let Some(a) = v.as_array() {
                        for (i, item) in a.iter().enumerate() {
                            self.check_at(rule, item, partial, &format!("{at}[{i}]"))?;
                        }
                    }
                }
                other => panic!("the checker does not know the schema keyword {other:?}"),
            }
        }
        Ok(())
    }

    /// The `type` constants of every frame under a direction's `oneOf`.
    pub fn frame_types(&self, direction: &str) -> Vec<String> {
        self.def(direction)["oneOf"]
            .as_array()
            .expect("direction is a oneOf")
            .iter()
            .map(|r| {
                let name = r["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/"));
                let def = self.def(name.expect("oneOf entries are $refs"));
                def["properties"]["type"]["const"]
                    .as_str()
                    .expect("every frame pins its type")
                    .to_string()
            })
            .collect()
    }
}
