//! Parsers of the command line's values (`--dim batch=8`, `--input
//! x=1x3x224x224`, `--measured 2.4ms`): a bad value is a one-line message,
//! which the command line reports as a usage error before anything is read.

use crate::ir::{AttrValue, Dim, TensorFact};

pub fn split_kv(s: &str) -> std::result::Result<(&str, &str), String> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| "expected NAME=VALUE".to_string())
}

pub fn parse_dim(s: &str) -> std::result::Result<(String, i64), String> {
    let (k, v) = split_kv(s)?;
    let n = v
        .parse()
        .ok()
        .filter(|n: &i64| *n >= 0)
        .ok_or_else(|| format!("{v} is not a non-negative integer"))?;
    Ok((k.to_string(), n))
}

pub fn parse_input(s: &str) -> std::result::Result<(String, Vec<u64>), String> {
    let (k, v) = split_kv(s)?;
    let t = TensorFact::parse_text(v)?;
    Ok((
        k.to_string(),
        t.shape.iter().filter_map(Dim::known).collect(),
    ))
}

pub fn parse_tensor(s: &str) -> std::result::Result<(String, TensorFact), String> {
    let (k, v) = split_kv(s)?;
    Ok((k.to_string(), TensorFact::parse_text(v)?))
}

pub fn parse_attr_flag(s: &str) -> std::result::Result<(String, AttrValue), String> {
    let (k, v) = split_kv(s)?;
    Ok((k.to_string(), AttrValue::parse_text(v)))
}

pub fn parse_measured(s: &str) -> std::result::Result<f64, String> {
    use crate::ir::{MAX_MEASURED_S, MIN_MEASURED_S};
    let t = crate::cost::parse_duration(s)
        .ok_or_else(|| "expected a duration like 2.4ms or 850us".to_string())?;
    if !(MIN_MEASURED_S..=MAX_MEASURED_S).contains(&t) {
        return Err(format!(
            "{t:e} s is outside the plausible range of {MIN_MEASURED_S:e} s (MIN_MEASURED_S) to {MAX_MEASURED_S:e} s (MAX_MEASURED_S)"
        ));
    }
    Ok(t)
}
