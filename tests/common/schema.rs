//! A JSON Schema validator for the subset c3's schemas (`schemas/`) use:
//! `type`, `enum`, `required`, `properties`, `additionalProperties`,
//! `items`, `minimum` and `$ref` (to `#/$defs/NAME` or another schema file).
//! Small on purpose: a full validator's dependency tree is far larger.

use serde_json::Value;

use super::cli::ROOT;

/// A schema file of `schemas/`, parsed.
pub fn load(file: &str) -> Value {
    let path = format!("{ROOT}/schemas/{file}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every place where `value` breaks the schema in `file`, as `PATH: why`.
pub fn errors(file: &str, value: &Value) -> Vec<String> {
    let root = load(file);
    let mut out = Vec::new();
    check(&root, &root, value, "$", &mut out);
    out
}

/// Fails the test, listing the first errors, unless `value` fits `file`.
pub fn assert_valid(file: &str, value: &Value) {
    let errors = errors(file, value);
    assert!(
        errors.is_empty(),
        "{} error(s) against {file}:\n{}",
        errors.len(),
        errors[..errors.len().min(20)].join("\n")
    );
}

fn type_fits(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        other => panic!("the validator does not know type {other}"),
    }
}

fn check(root: &Value, schema: &Value, v: &Value, at: &str, out: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        match r.strip_prefix("#/$defs/") {
            Some(name) => {
                let target = &root["$defs"][name];
                assert!(!target.is_null(), "no $defs/{name}");
                check(root, target, v, at, out);
            }
            None => {
                let other = load(r);
                check(&other, &other, v, at, out);
            }
        }
        return;
    }
    if let Some(t) = schema.get("type") {
        let fits = match t {
            Value::String(t) => type_fits(t, v),
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| type_fits(t, v)),
            _ => panic!("bad type in schema"),
        };
        if !fits {
            out.push(format!("{at}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(list) = schema.get("enum").and_then(Value::as_array)
        && !list.contains(v)
    {
        out.push(format!(
            "{at}: {v} is not one of {}",
            Value::from(list.clone())
        ));
    }
    if let (Some(min), Some(n)) = (schema.get("minimum").and_then(Value::as_f64), v.as_f64())
        && n < min
    {
        out.push(format!("{at}: {n} is below {min}"));
    }
    if let Value::Object(map) = v {
        for key in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !map.contains_key(key) {
                out.push(format!("{at}: '{key}' is required"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, item) in map {
            let here = format!("{at}.{k}");
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(root, s, item, &here, out),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        out.push(format!("{at}: '{k}' is not allowed"));
                    }
                    Some(s @ Value::Object(_)) => check(root, s, item, &here, out),
                    _ => {}
                },
            }
        }
    }
    if let (Value::Array(items), Some(s)) = (v, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check(root, s, item, &format!("{at}[{i}]"), out);
        }
    }
}
