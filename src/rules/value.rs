//! Rule values (evalexpr's `Value`) as people and JSON read them: used by
//! rule errors, `c3 explain` and every report format.

use evalexpr::Value;

/// A value as people read it: `3`, `[3, 3]`, `"linear"`, `none`.
pub fn show_value(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Boolean(b) => b.to_string(),
        Value::Empty => "none".to_string(),
        Value::Tuple(items) => {
            let inner: Vec<String> = items.iter().map(show_value).collect();
            format!("[{}]", inner.join(", "))
        }
    }
}

/// A value as JSON (for `--format json` and params).
pub fn value_to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Int(i) => serde_json::Value::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Boolean(b) => serde_json::Value::Bool(*b),
        Value::Empty => serde_json::Value::Null,
        Value::Tuple(items) => serde_json::Value::Array(items.iter().map(value_to_json).collect()),
    }
}
