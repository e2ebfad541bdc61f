//! Checking a tool's arguments against its JSON Schema before the handler
//! runs, so a model's mistake comes back as an error result naming the
//! field instead of reaching the handler.
//!
//! The subset checked is what tool schemas use: `type`, `properties`,
//! `required`, `items`, `enum`, `anyOf` and object-valued
//! `additionalProperties`; every other keyword is ignored (accepted). The
//! messages are the same in every zut SDK, e.g. `missing required field
//! "city"` or `field "days" must be integer, got string`.

use serde_json::Value;

/// The first way `value` breaks `schema`, or `None` when it fits.
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type":"object","properties":{"days":{"type":"integer"}},"required":["days"]});
/// assert_eq!(zut_ext::check_args(&schema, &json!({"days": 2})), None);
/// assert_eq!(zut_ext::check_args(&schema, &json!({})).unwrap(), r#"missing required field "days""#);
/// assert_eq!(zut_ext::check_args(&schema, &json!({"days": "2"})).unwrap(),
///            r#"field "days" must be integer, got string"#);
/// ```
pub fn check_args(schema: &Value, value: &Value) -> Option<String> {
    check(schema, value, "")
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn place(path: &str) -> String {
    if path.is_empty() {
        "arguments".to_string()
    } else {
        format!("field \"{path}\"")
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn check(schema: &Value, v: &Value, path: &str) -> Option<String> {
    // A schema that is not an object constrains nothing.
    let schema = schema.as_object()?;
    if let Some(Value::Array(alts)) = schema.get("anyOf") {
        if alts.iter().all(|s| check(s, v, path).is_some()) {
            return Some(format!(
                "{} matches none of the allowed shapes",
                place(path)
            ));
        }
        return None;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        if !allowed.contains(v) {
            let list: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
            return Some(format!(
                "{} must be one of {}",
                place(path),
                list.join(", ")
            ));
        }
    }
    let k = kind(v);
    if let Some(Value::String(want)) = schema.get("type") {
        let ok = k == want || (want == "number" && k == "integer");
        if !ok {
            return Some(format!("{} must be {want}, got {k}", place(path)));
        }
    }
    if let Value::Object(o) = v {
        let required: Vec<&str> = match schema.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for name in &required {
            if !o.contains_key(*name) {
                return Some(format!("missing required field \"{}\"", join(path, name)));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        if let Some(props) = props {
            for (name, sub) in props {
                match o.get(name) {
                    None => {}
                    Some(Value::Null) if !required.contains(&name.as_str()) => {}
                    Some(x) => {
                        if let Some(e) = check(sub, x, &join(path, name)) {
                            return Some(e);
                        }
                    }
                }
            }
        }
        if let Some(extra @ Value::Object(_)) = schema.get("additionalProperties") {
            for (name, x) in o {
                if props.is_some_and(|p| p.contains_key(name)) {
                    continue;
                }
                if let Some(e) = check(extra, x, &join(path, name)) {
                    return Some(e);
                }
            }
        }
    }
    if let (Value::Array(items), Some(sub)) = (v, schema.get("items")) {
        for (i, x) in items.iter().enumerate() {
            if let Some(e) = check(sub, x, &format!("{path}[{i}]")) {
                return Some(e);
            }
        }
    }
    None
}
