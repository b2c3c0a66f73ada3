//! Element-wise math: unary maps, broadcasting binary arithmetic, variadic
//! operators over inputs (Sum, Max, Min, Mean), and Det. Integer values fold
//! through them, so shape arithmetic stays exact.

use super::ctx::{InferCtx, Result, broadcast_all, err, join};
use super::dims::like_input;
use super::fact::{Fact, MAX_VALUE_ELEMENTS, TensorValue};
use super::logic::COMPARE;
use super::tensor::unify;
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// Unary maps that fold (Neg, Abs, Floor, Sqrt...): integral values stay
/// exact (and symbolic) where the map keeps them integral, others fold as
/// floats for floating-point inputs.
pub(super) fn unary_fold(ctx: &mut InferCtx) -> Result<()> {
    like_input(ctx)?;
    let Some(v) = ctx.value(0) else {
        return Ok(());
    };
    let float = !ctx.dtype(0).is_some_and(is_integer);
    let exact: Option<fn(&SymInt) -> Option<SymInt>> = match ctx.op {
        "Neg" => Some(|x| x.neg().ok()),
        "Abs" => Some(|x| x.as_int()?.checked_abs().map(SymInt::Int)),
        "Sign" => Some(|x| Some(SymInt::Int(x.as_int()?.signum()))),
        "Relu" => Some(|x| Some(SymInt::Int(x.as_int()?.max(0)))),
        // Rounding an integer changes nothing.
        "Floor" | "Ceil" | "Round" => Some(|x| Some(x.clone())),
        _ => None,
    };
    if let (Some(f), Some(xs)) = (exact, integral(&v, float))
        && let Some(out) = xs.iter().map(f).collect::<Option<Vec<_>>>()
    {
        if let Some(o) = ctx.output_mut(0) {
            o.value = Some(TensorValue::ints(out));
        }
        return Ok(());
    }
    if !float {
        return Ok(());
    }
    let g: fn(f64) -> f64 = match ctx.op {
        "Neg" => |x| -x,
        "Abs" => f64::abs,
        "Sign" => |x| if x == 0.0 { 0.0 } else { x.signum() },
        "Relu" => |x| x.max(0.0),
        "Floor" => f64::floor,
        "Ceil" => f64::ceil,
        "Round" => f64::round_ties_even,
        "Sqrt" => f64::sqrt,
        "Reciprocal" => |x| 1.0 / x,
        "Exp" => f64::exp,
        "Log" => f64::ln,
        _ => return Ok(()),
    };
    if let (Some(xs), Some(o)) = (v.as_floats(), ctx.output_mut(0)) {
        o.value = Some(TensorValue::floats(xs.into_iter().map(g).collect()));
    }
    Ok(())
}

/// Largest integer every float up to it represents exactly (2^53).
const EXACT_F64: f64 = 9_007_199_254_740_992.0;

/// The values as exact integers: integer data, or (for a floating-point
/// tensor) floats that are whole numbers.
pub(super) fn integral(v: &TensorValue, float: bool) -> Option<Vec<SymInt>> {
    match v {
        TensorValue::Ints(x) => Some(x.to_vec()),
        TensorValue::Floats(x) if float => x
            .iter()
            .map(|f| (f.fract() == 0.0 && f.abs() < EXACT_F64).then_some(SymInt::Int(*f as i64)))
            .collect(),
        _ => None,
    }
}

pub fn is_integer(t: DType) -> bool {
    matches!(
        t,
        DType::Int8
            | DType::Int16
            | DType::Int32
            | DType::Int64
            | DType::Uint8
            | DType::Uint16
            | DType::Uint32
            | DType::Uint64
            | DType::Bool
            | DType::Int4
            | DType::Uint4
            | DType::Int2
            | DType::Uint2
    )
}

/// Applies `f` element-wise with broadcasting to two small integer values.
fn fold2<T>(a: &[T], b: &[T], f: impl Fn(&T, &T) -> Option<T>) -> Option<Vec<T>> {
    let n = a.len().max(b.len());
    if n > MAX_VALUE_ELEMENTS || (a.len() != n && a.len() != 1) || (b.len() != n && b.len() != 1) {
        return None;
    }
    (0..n)
        .map(|i| {
            let x = &a[if a.len() == 1 { 0 } else { i }];
            let y = &b[if b.len() == 1 { 0 } else { i }];
            f(x, y)
        })
        .collect()
}

/// Only values whose broadcast is a plain 1-D (or scalar) zip fold.
pub(super) fn foldable(ctx: &InferCtx, out: &[Dim]) -> bool {
    out.len() <= 1 && (0..ctx.n_inputs()).all(|i| ctx.rank(i).is_some_and(|r| r <= 1))
}

/// One exact step of a binary operator on integral values; for
/// floating-point tensors (`float`) Div must be exact and Mod does not apply.
fn binary_op(ctx: &InferCtx, x: &SymInt, y: &SymInt, float: bool) -> Option<SymInt> {
    match ctx.op {
        "Add" | "Sum" => ctx.folded(x.add(y)),
        "Sub" => ctx.folded(x.sub(y)),
        "Mul" => ctx.folded(x.mul(y)),
        "Div" if float => x.exact_div(y),
        "Mod" if float => None,
        "Pow" => {
            let e = u32::try_from(y.as_int()?).ok()?;
            x.as_int()?.checked_pow(e).map(SymInt::Int)
        }
        "Div" => match y.as_int() {
            Some(0) => None,
            // Integer division truncates toward zero, like C.
            Some(d) => match x.as_int() {
                Some(n) => n.checked_div(d).map(SymInt::Int),
                None if d > 0 => x.exact_div(y),
                None => None,
            },
            None => x.exact_div(y),
        },
        "Mod" => match (x.as_int(), y.as_int()) {
            (Some(a), Some(b)) if b != 0 => {
                // fmod = 1 keeps the dividend's sign (C); 0 the divisor's (Python).
                let r = a.checked_rem(b)?;
                let python = r != 0 && (r < 0) != (b < 0) && ctx.attr_int_or("fmod", 0) == 0;
                Some(SymInt::Int(if python { r + b } else { r }))
            }
            _ => None,
        },
        "Max" => ctx.folded(x.max_with(y)),
        "Min" => ctx.folded(x.min_with(y)),
        "Equal" => cmp(x, y, |a, b| a == b),
        "Less" => cmp(x, y, |a, b| a < b),
        "Greater" => cmp(x, y, |a, b| a > b),
        "LessOrEqual" => cmp(x, y, |a, b| a <= b),
        "GreaterOrEqual" => cmp(x, y, |a, b| a >= b),
        "And" => Some(SymInt::Int((x.as_int()? != 0 && y.as_int()? != 0) as i64)),
        "Or" => Some(SymInt::Int((x.as_int()? != 0 || y.as_int()? != 0) as i64)),
        "Xor" => Some(SymInt::Int(
            ((x.as_int()? != 0) != (y.as_int()? != 0)) as i64,
        )),
        _ => None,
    }
}

/// One step of a binary operator on floating-point values; comparisons give 0 or 1.
fn float_op(op: &str, x: f64, y: f64) -> Option<f64> {
    let b = |c: bool| if c { 1.0 } else { 0.0 };
    Some(match op {
        "Add" | "Sum" => x + y,
        "Sub" => x - y,
        "Mul" => x * y,
        "Div" => x / y,
        "Pow" => x.powf(y),
        // Floating-point Mod is fmod: the dividend's sign.
        "Mod" => x % y,
        "Max" => x.max(y),
        "Min" => x.min(y),
        "Equal" => b(x == y),
        "Less" => b(x < y),
        "Greater" => b(x > y),
        "LessOrEqual" => b(x <= y),
        "GreaterOrEqual" => b(x >= y),
        _ => return None,
    })
}

fn cmp(x: &SymInt, y: &SymInt, f: fn(i64, i64) -> bool) -> Option<SymInt> {
    if x == y {
        // Equal symbolic values compare equal whatever they are.
        return Some(SymInt::Int(f(0, 0) as i64));
    }
    let (a, b) = match (x.as_int(), y.as_int()) {
        (Some(a), Some(b)) => (a, b),
        // A size is never negative, so it is greater than a negative number:
        // Equal(Shape(x)[i], -1) is false (the "-1 means keep" idiom).
        (None, Some(b)) if b < 0 && non_negative(x) => (1, 0),
        (Some(a), None) if a < 0 && non_negative(y) => (0, 1),
        _ => return None,
    };
    Some(SymInt::Int(f(a, b) as i64))
}

/// Whether a value is surely >= 0.
pub(super) fn non_negative(v: &SymInt) -> bool {
    v.is_non_negative()
}

/// Broadcasting binary (and variadic) operators; `out_type` picks the result type.
pub(super) fn broadcasting(ctx: &mut InferCtx, out_type: Option<DType>) -> Result<()> {
    let shapes: Vec<Option<&Vec<Dim>>> = (0..ctx.n_inputs())
        .filter(|&i| ctx.input(i).is_some())
        .map(|i| ctx.shape(i))
        .collect();
    if shapes.is_empty() {
        return err("needs at least one input");
    }
    let shape = broadcast_all(&shapes)?;
    let dtype = out_type.or_else(|| ctx.dtype(0));
    let mut fact = Fact::tensor(dtype, shape.clone());
    let variadic = matches!(ctx.op, "Sum" | "Max" | "Min");
    if let Some(out) = &shape
        && foldable(ctx, out)
        && (ctx.n_inputs() > 1 || variadic)
    {
        let values: Option<Vec<TensorValue>> = (0..ctx.n_inputs()).map(|i| ctx.value(i)).collect();
        let float = (0..ctx.n_inputs()).any(|i| !ctx.dtype(i).is_some_and(is_integer));
        fact.value = values.and_then(|v| fold_values(ctx, &v, float));
    }
    ctx.set(0, fact);
    Ok(())
}

/// Folds a broadcasting operator over small values: exactly (symbolic
/// entries kept) while every value is integral, else as floats for
/// floating-point tensors.
fn fold_values(ctx: &InferCtx, values: &[TensorValue], float: bool) -> Option<TensorValue> {
    let exact = || {
        let ints: Vec<Vec<SymInt>> = values
            .iter()
            .map(|v| integral(v, float))
            .collect::<Option<_>>()?;
        let mut acc = ints.first()?.clone();
        for v in &ints[1..] {
            acc = fold2(&acc, v, |x, y| binary_op(ctx, x, y, float))?;
        }
        Some(TensorValue::ints(acc))
    };
    if let Some(v) = exact() {
        return Some(v);
    }
    if !float {
        return None;
    }
    let floats: Vec<Vec<f64>> = values
        .iter()
        .map(TensorValue::as_floats)
        .collect::<Option<_>>()?;
    let mut acc = floats.first()?.clone();
    for v in &floats[1..] {
        acc = fold2(&acc, v, |x, y| float_op(ctx.op, *x, *y))?;
    }
    if COMPARE.contains(&ctx.op) {
        Some(TensorValue::ints(
            acc.iter().map(|&f| SymInt::Int(f as i64)).collect(),
        ))
    } else {
        Some(TensorValue::floats(acc))
    }
}

fn arithmetic(ctx: &mut InferCtx) -> Result<()> {
    broadcasting(ctx, None)
}

fn mean(ctx: &mut InferCtx) -> Result<()> {
    broadcasting(ctx, None)?;
    if let Some(o) = ctx.output_mut(0) {
        o.value = None;
    }
    Ok(())
}

fn det(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let shape = match &x.shape {
        None => None,
        Some(s) if s.len() < 2 => return err(format!("Det needs rank >= 2, got [{}]", join(s))),
        Some(s) => {
            let n = s.len();
            unify(&s[n - 2], &s[n - 1], "Det of a non-square matrix")?;
            Some(s[..n - 2].to_vec())
        }
    };
    ctx.set(0, Fact::tensor(x.dtype, shape));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 39] = [
        ("Acos", like_input),
        ("Acosh", like_input),
        ("Asin", like_input),
        ("Asinh", like_input),
        ("Atan", like_input),
        ("Atanh", like_input),
        ("BitwiseNot", like_input),
        ("Clip", like_input),
        ("Cos", like_input),
        ("Cosh", like_input),
        ("Erf", like_input),
        ("Sin", like_input),
        ("Sinh", like_input),
        ("Tan", like_input),
        ("Abs", unary_fold),
        ("Neg", unary_fold),
        ("Sign", unary_fold),
        ("Floor", unary_fold),
        ("Ceil", unary_fold),
        ("Round", unary_fold),
        ("Sqrt", unary_fold),
        ("Reciprocal", unary_fold),
        ("Exp", unary_fold),
        ("Log", unary_fold),
        ("Add", arithmetic),
        ("Sub", arithmetic),
        ("Mul", arithmetic),
        ("Div", arithmetic),
        ("Pow", arithmetic),
        ("Mod", arithmetic),
        ("BitShift", arithmetic),
        ("BitwiseAnd", arithmetic),
        ("BitwiseOr", arithmetic),
        ("BitwiseXor", arithmetic),
        ("Sum", arithmetic),
        ("Max", arithmetic),
        ("Min", arithmetic),
        ("Mean", mean),
        ("Det", det),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tensor::tests::{f32, int, k, known_vals, one, s, scalar_i, vec_i};
    use super::*;

    pub(in crate::shape) fn floats(v: &[f64]) -> Option<Fact> {
        Some(Fact::with_value(
            DType::Float32,
            vec![Dim::Known(v.len() as u64)],
            TensorValue::floats(v.to_vec()),
        ))
    }

    #[test]
    fn shape_math_through_floats_stays_exact_and_symbolic() {
        // An upsampling exporter's sizes: Cast(Shape(x), float) * 2.0, Floor, Cast(int64).
        let shape = one("Shape", 13, &[], vec![f32(vec![s("b"), k(3), s("h")])]);
        let as_float = one("Cast", 13, &[int("to", 1)], vec![Some(shape)]);
        let scaled = one(
            "Mul",
            13,
            &[],
            vec![Some(as_float), floats(&[1.0, 1.0, 2.0])],
        );
        let floored = one("Floor", 13, &[], vec![Some(scaled)]);
        let sizes = one("Cast", 13, &[int("to", 7)], vec![Some(floored)]);
        let h2 = SymInt::sym("h").mul(&SymInt::Int(2)).unwrap();
        assert_eq!(
            sizes.value,
            Some(TensorValue::ints(vec![
                SymInt::sym("b"),
                SymInt::Int(3),
                h2
            ]))
        );
        // 7 / 2 as floats is 3.5: no longer integral, folded as a float.
        let half = one("Div", 13, &[], vec![floats(&[7.0]), floats(&[2.0])]);
        assert_eq!(half.value, Some(TensorValue::floats(vec![3.5])));
        let up = one("Ceil", 13, &[], vec![Some(half)]);
        assert_eq!(up.value, Some(TensorValue::floats(vec![4.0])));
    }

    #[test]
    fn integer_division_truncates_and_pow_folds() {
        let q = one("Div", 13, &[], vec![vec_i(&[-7, 7]), vec_i(&[2])]);
        assert_eq!(known_vals(&q), vec![-3, 3]);
        let p = one("Pow", 15, &[], vec![vec_i(&[3]), scalar_i(2)]);
        assert_eq!(known_vals(&p), vec![9]);
        // A symbolic value over a non-dividing float stays unknown, not guessed.
        let n = Fact::with_value(
            DType::Float32,
            vec![k(1)],
            TensorValue::ints(vec![SymInt::sym("n")]),
        );
        let out = one("Div", 13, &[], vec![Some(n), floats(&[3.0])]);
        assert_eq!(out.value, None);
    }
}
