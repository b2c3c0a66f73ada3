//! The flags' value parsers: a bad value is a clap error (exit 1) before
//! anything is read.

use super::Columns;
use crate::ir::{AttrValue, Dim, TensorFact};
use crate::report;

pub(super) fn split_kv(s: &str) -> std::result::Result<(&str, &str), String> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| "expected NAME=VALUE".to_string())
}

pub(super) fn parse_dim(s: &str) -> std::result::Result<(String, i64), String> {
    let (k, v) = split_kv(s)?;
    let n = v
        .parse()
        .ok()
        .filter(|n: &i64| *n >= 0)
        .ok_or_else(|| format!("{v} is not a non-negative integer"))?;
    Ok((k.to_string(), n))
}

pub(super) fn parse_input(s: &str) -> std::result::Result<(String, Vec<u64>), String> {
    let (k, v) = split_kv(s)?;
    let t = TensorFact::parse_text(v)?;
    Ok((
        k.to_string(),
        t.shape.iter().filter_map(Dim::known).collect(),
    ))
}

pub(super) fn parse_tensor(s: &str) -> std::result::Result<(String, TensorFact), String> {
    let (k, v) = split_kv(s)?;
    Ok((k.to_string(), TensorFact::parse_text(v)?))
}

pub(super) fn parse_attr_flag(s: &str) -> std::result::Result<(String, AttrValue), String> {
    let (k, v) = split_kv(s)?;
    Ok((k.to_string(), AttrValue::parse_text(v)))
}

pub(super) fn parse_columns(s: &str) -> std::result::Result<Columns, String> {
    report::parse_columns(s).map(Columns)
}

pub(super) fn parse_measured(s: &str) -> std::result::Result<f64, String> {
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
