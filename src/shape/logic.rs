//! Comparisons, boolean logic, Where and Cast: broadcasting like the
//! arithmetic of `math.rs`, with boolean or converted outputs.

use super::ctx::{InferCtx, Result, broadcast_all};
use super::fact::{Fact, TensorValue};
use super::math::{broadcasting, foldable, is_integer};
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// Same shape, boolean result (IsNaN, IsInf, Not).
fn same_bool(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?;
    let shape = x.shape.clone();
    let value = match (ctx.op, x.value.clone()) {
        ("Not", Some(TensorValue::Ints(v))) => Some(TensorValue::Ints(
            v.iter()
                .map(|i| i.as_int().map(|i| SymInt::Int((i == 0) as i64)))
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default(),
        ))
        .filter(|t| !t.is_empty() || v.is_empty()),
        _ => None,
    };
    ctx.set(
        0,
        Fact {
            value,
            ..Fact::tensor(Some(DType::Bool), shape)
        },
    );
    Ok(())
}

fn compare(ctx: &mut InferCtx) -> Result<()> {
    broadcasting(ctx, Some(DType::Bool))
}

fn where_op(ctx: &mut InferCtx) -> Result<()> {
    let shape = broadcast_all(&[ctx.shape(0), ctx.shape(1), ctx.shape(2)])?;
    let mut fact = Fact::tensor(ctx.dtype(1).or(ctx.dtype(2)), shape.clone());
    if let Some(out) = &shape
        && foldable(ctx, out)
        && let (Some(c), Some(a), Some(b)) = (ctx.known_ints(0), ctx.value(1), ctx.value(2))
    {
        // Pick from the two branches as they are (integral or not).
        let picks: Option<Vec<(bool, usize)>> = match out.first().map(Dim::known) {
            None => Some(1),
            Some(Some(n)) => usize::try_from(n).ok(),
            Some(None) => None,
        }
        .and_then(|n| {
            let at = |len: usize, i: usize| match len {
                1 => Some(0),
                l if l == n => Some(i),
                _ => None,
            };
            (0..n)
                .map(|i| {
                    let cond = *c.get(at(c.len(), i)?)? != 0;
                    let len = if cond { a.len() } else { b.len() };
                    Some((cond, at(len, i)?))
                })
                .collect()
        });
        fact.value = picks.and_then(|p| match (&a, &b) {
            (TensorValue::Ints(x), TensorValue::Ints(y)) => p
                .iter()
                .map(|&(c, i)| if c { x.get(i) } else { y.get(i) }.cloned())
                .collect::<Option<_>>()
                .map(TensorValue::Ints),
            _ => {
                let (x, y) = (a.as_floats()?, b.as_floats()?);
                p.iter()
                    .map(|&(c, i)| if c { x.get(i) } else { y.get(i) }.copied())
                    .collect::<Option<_>>()
                    .map(TensorValue::Floats)
            }
        });
    }
    ctx.set(0, fact);
    Ok(())
}

fn cast(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let to = match ctx.op {
        "CastLike" => ctx.dtype(1),
        _ => {
            let code = ctx
                .attr_int("to")
                .ok_or_else(|| super::ShapeError("Cast needs `to`".into()))?;
            Some(
                DType::from_onnx_code(code as i32)
                    .ok_or_else(|| super::ShapeError(format!("Cast to unknown type {code}")))?,
            )
        }
    };
    let mut out = Fact::tensor(to, x.shape.clone());
    if let (Some(t), Some(v)) = (to, ctx.value(0)) {
        out.value = cast_value(v, t);
        if out
            .value
            .as_ref()
            .is_some_and(|v| v.is_empty() && x.elements().and_then(|n| n.as_int()) != Some(0))
        {
            out.value = None;
        }
    }
    ctx.set(0, out);
    Ok(())
}

/// Converts small data to element type `t`; `None` where it cannot be
/// done exactly (strings, symbolic values to non-integers...).
fn cast_value(v: TensorValue, t: DType) -> Option<TensorValue> {
    let ints = |v: Vec<i64>| Some(TensorValue::Ints(v.into_iter().map(SymInt::Int).collect()));
    match (v, t) {
        (_, DType::String) | (TensorValue::Strings(_), _) => None,
        (TensorValue::Ints(v), DType::Bool) => ints(
            v.iter()
                .map(|i| i.as_int().map(|i| (i != 0) as i64))
                .collect::<Option<_>>()?,
        ),
        (TensorValue::Floats(v), DType::Bool) => {
            ints(v.iter().map(|&f| (f != 0.0) as i64).collect())
        }
        (TensorValue::Floats(v), t) if is_integer(t) => ints(
            v.iter()
                .map(|f| f.is_finite().then(|| f.trunc() as i64))
                .collect::<Option<_>>()?,
        ),
        // Integers stay exact (and symbolic) as floats: shape arithmetic
        // through Cast(float) -> Mul -> Floor -> Cast(int64) then folds.
        (TensorValue::Ints(v), _) => Some(TensorValue::Ints(v)),
        (TensorValue::Floats(v), _) => Some(TensorValue::Floats(v)),
    }
}

pub(super) const COMPARE: &[&str] = &[
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
];

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 14] = [
        ("Equal", compare),
        ("Less", compare),
        ("Greater", compare),
        ("LessOrEqual", compare),
        ("GreaterOrEqual", compare),
        ("And", compare),
        ("Or", compare),
        ("Xor", compare),
        ("Not", same_bool),
        ("IsNaN", same_bool),
        ("IsInf", same_bool),
        ("Where", where_op),
        ("Cast", cast),
        ("CastLike", cast),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}
