//! Binding a tensor's dimensions to the names of a rule's pattern
//! (`X[N, C, *S]`), the first step of every evaluation.

use super::ast::{DimPat, TensorPat};
use super::eval::EvalError;
use super::value::show_value;
use evalexpr::Value;

pub(crate) fn bind_dims<'a>(
    p: &TensorPat,
    pat: &'a [DimPat],
    dims: &[Value],
    side: &str,
    bound: &mut Vec<(&'a str, Value)>,
) -> Result<(), EvalError> {
    let rest_at = pat.iter().position(|d| matches!(d, DimPat::Rest(_)));
    let fixed = pat.len() - rest_at.map_or(0, |_| 1);
    let ok_rank = match rest_at {
        Some(_) => dims.len() >= fixed,
        None => dims.len() == fixed,
    };
    if !ok_rank {
        let want = match rest_at {
            Some(_) => format!("at least {fixed}"),
            None => format!("{fixed}"),
        };
        return Err(EvalError::Binding(format!(
            "{side} {}: pattern {p} needs rank {want}, got rank {}",
            p.name,
            dims.len()
        )));
    }
    let tail = pat.len() - rest_at.map_or(pat.len(), |r| r + 1);
    let mut check = |name: &'a str, v: Value| -> Result<(), EvalError> {
        // A rule binds a handful of names: a list beats hashing them.
        match bound.iter().find(|(n, _)| *n == name).map(|(_, v)| v) {
            Some(prev) if *prev != v => Err(EvalError::Binding(format!(
                "{side} {}: '{name}' is {} here but {} elsewhere (pattern {p})",
                p.name,
                show_value(&v),
                show_value(prev)
            ))),
            Some(_) => Ok(()),
            None => {
                bound.push((name, v));
                Ok(())
            }
        }
    };
    for (i, d) in pat.iter().enumerate() {
        let at = match rest_at {
            Some(r) if i > r => dims.len() - (pat.len() - i),
            _ => i,
        };
        match d {
            DimPat::Fixed(n) => {
                if dims[at] != Value::Int(*n as i64) {
                    return Err(EvalError::Binding(format!(
                        "{side} {}: dimension {at} must be {n} (pattern {p}), got {}",
                        p.name,
                        show_value(&dims[at])
                    )));
                }
            }
            DimPat::Name(n) => check(n, dims[at].clone())?,
            DimPat::Rest(n) => {
                let end = dims.len() - tail;
                check(n, Value::Tuple(dims[i..end].to_vec()))?;
            }
        }
    }
    Ok(())
}
