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
    let value = match (ctx.op, &x.value) {
        ("Not", Some(TensorValue::Ints(v))) => truths(v, true),
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
                .map(TensorValue::ints),
            _ => {
                let (x, y) = (a.as_floats()?, b.as_floats()?);
                p.iter()
                    .map(|&(c, i)| if c { x.get(i) } else { y.get(i) }.copied())
                    .collect::<Option<_>>()
                    .map(TensorValue::floats)
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
    // Each converted list is checked whole first, then made at its size in
    // one pass (a mask of a thousand entries is cast in every block).
    match (v, t) {
        (_, DType::String) | (TensorValue::Strings(_), _) => None,
        (TensorValue::Ints(v), DType::Bool) => truths(&v, false),
        (TensorValue::Floats(v), DType::Bool) => Some(TensorValue::ints(
            v.iter().map(|&f| SymInt::Int((f != 0.0) as i64)).collect(),
        )),
        (TensorValue::Floats(v), t) if is_integer(t) => {
            if !v.iter().all(|f| f.is_finite()) {
                return None;
            }
            Some(TensorValue::ints(
                v.iter().map(|f| SymInt::Int(f.trunc() as i64)).collect(),
            ))
        }
        // Integers stay exact (and symbolic) as floats: shape arithmetic
        // through Cast(float) -> Mul -> Floor -> Cast(int64) then folds.
        (TensorValue::Ints(v), _) => Some(TensorValue::Ints(v)),
        (TensorValue::Floats(v), _) => Some(TensorValue::Floats(v)),
    }
}

/// Each entry's truth as 0 or 1 (nonzero is true), negated with `not`
/// (Not, against a Cast to bool); `None` when an entry is symbolic, its
/// truth unknown here. Checked whole first, then made in one pass.
fn truths(v: &[SymInt], not: bool) -> Option<TensorValue> {
    if !v.iter().all(SymInt::is_known) {
        return None;
    }
    Some(TensorValue::ints(
        v.iter()
            .map(|i| SymInt::Int(((i.as_int() != Some(0)) != not) as i64))
            .collect(),
    ))
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

#[cfg(test)]
mod tests {
    use super::super::math::tests::*;
    use super::super::tensor::tests::{int, k, known_vals, one, run, scalar_i, vec_i};
    use crate::dim::SymInt;
    use crate::ir::DType;

    use crate::shape::{Fact, TensorValue};

    #[test]
    fn where_folds_floats_and_symbolic_ints() {
        let cond = Some(Fact::with_value(
            DType::Bool,
            vec![k(2)],
            TensorValue::ints(vec![SymInt::Int(1), SymInt::Int(0)]),
        ));
        let out = one(
            "Where",
            16,
            &[],
            vec![cond.clone(), floats(&[0.5, 1.5]), floats(&[2.5])],
        );
        assert_eq!(out.value, Some(TensorValue::floats(vec![0.5, 2.5])));
        let a = Some(Fact::ints_1d(vec![SymInt::sym("n"), SymInt::Int(4)]));
        let out = one("Where", 16, &[], vec![cond, a, vec_i(&[-1, -1])]);
        assert_eq!(
            out.value,
            Some(TensorValue::ints(vec![SymInt::sym("n"), SymInt::Int(-1)]))
        );
    }

    #[test]
    fn sizes_compare_greater_than_negative_numbers() {
        // Where(Equal(target, -1), 1, target): the Expand "-1 keeps" idiom.
        let target = Some(Fact::ints_1d(vec![SymInt::sym("b"), SymInt::Int(-1)]));
        let is_keep = one("Equal", 13, &[], vec![target.clone(), scalar_i(-1)]);
        assert_eq!(known_vals(&is_keep), vec![0, 1]);
        let out = one("Where", 16, &[], vec![Some(is_keep), scalar_i(1), target]);
        assert_eq!(
            out.value,
            Some(TensorValue::ints(vec![SymInt::sym("b"), SymInt::Int(1)]))
        );
        // b - 1 may be anything: no answer.
        let d = SymInt::sym("b").sub(&SymInt::Int(1)).unwrap();
        let out = one(
            "Less",
            13,
            &[],
            vec![Some(Fact::ints_1d(vec![d])), scalar_i(-1)],
        );
        assert_eq!(out.value, None);
    }

    #[test]
    fn cast_values() {
        // 0.5 is true as a bool, though it truncates to 0 as an integer.
        let b = one("Cast", 13, &[int("to", 9)], vec![floats(&[0.5, 0.0])]);
        assert_eq!(known_vals(&b), vec![1, 0]);
        let i = one("Cast", 13, &[int("to", 7)], vec![floats(&[-1.5, 2.9])]);
        assert_eq!(known_vals(&i), vec![-1, 2]);
        // Casting to string does not pretend to know the text.
        let t = one("Cast", 13, &[int("to", 8)], vec![vec_i(&[1])]);
        assert_eq!(t.value, None);
        assert!(run("Cast", 13, &[int("to", 999)], vec![vec_i(&[1])], 1).is_err());
    }

    #[test]
    fn comparisons_of_floats_give_booleans() {
        let out = one("Less", 13, &[], vec![floats(&[0.5, 3.0]), floats(&[1.0])]);
        assert_eq!(out.dtype, Some(DType::Bool));
        assert_eq!(known_vals(&out), vec![1, 0]);
    }
}
