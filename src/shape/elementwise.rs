//! Element-wise operators: unary maps, broadcasting binary arithmetic,
//! comparisons and logic, variadic reductions over inputs, Where, Cast.
//! Integer values fold through them, so shape arithmetic stays exact.

use super::ctx::{InferCtx, Result, broadcast, broadcast_all, err};
use super::fact::{Fact, MAX_VALUE_ELEMENTS, TensorValue};
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// Output 0 has input 0's type and shape (activations and other unary maps).
fn same(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    ctx.set(0, x.reshaped(x.shape.clone()));
    Ok(())
}

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

/// Identity-like ops pass the value through too.
fn identity(ctx: &mut InferCtx) -> Result<()> {
    let mut x = ctx.require(0)?.clone();
    if x.value.is_none() {
        x.value = ctx.value(0);
    }
    x.constant = None;
    ctx.set(0, x);
    Ok(())
}

/// Unary integer maps that fold (Neg, Abs, Sign...).
fn unary_fold(ctx: &mut InferCtx) -> Result<()> {
    same(ctx)?;
    let Some(v) = ctx.known_ints(0) else {
        return Ok(());
    };
    if !ctx.dtype(0).is_some_and(is_integer) {
        return Ok(());
    }
    let f: fn(i64) -> Option<i64> = match ctx.op {
        "Neg" => i64::checked_neg,
        "Abs" => i64::checked_abs,
        "Sign" => |x| Some(x.signum()),
        "Relu" => |x| Some(x.max(0)),
        _ => return Ok(()),
    };
    if let Some(out) = v
        .iter()
        .map(|&x| f(x).map(SymInt::Int))
        .collect::<Option<Vec<_>>>()
    {
        ctx.outputs[0].value = Some(TensorValue::Ints(out));
    }
    Ok(())
}

fn dropout(ctx: &mut InferCtx) -> Result<()> {
    identity(ctx)?;
    let shape = ctx.shape(0).cloned();
    ctx.set(1, Fact::tensor(Some(DType::Bool), shape));
    Ok(())
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
fn fold2(
    a: &[SymInt],
    b: &[SymInt],
    f: impl Fn(&SymInt, &SymInt) -> Option<SymInt>,
) -> Option<Vec<SymInt>> {
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
fn foldable(ctx: &InferCtx, out: &[Dim]) -> bool {
    out.len() <= 1 && (0..ctx.n_inputs()).all(|i| ctx.rank(i).is_some_and(|r| r <= 1))
}

fn binary_op(ctx: &InferCtx, x: &SymInt, y: &SymInt) -> Option<SymInt> {
    match ctx.op {
        "Add" => x.add(y).ok(),
        "Sub" => x.sub(y).ok(),
        "Mul" => x.mul(y).ok(),
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
        "Max" => Some(x.max_with(y)),
        "Min" => Some(x.min_with(y)),
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

fn cmp(x: &SymInt, y: &SymInt, f: fn(i64, i64) -> bool) -> Option<SymInt> {
    if x == y {
        // Equal symbolic values compare equal whatever they are.
        return Some(SymInt::Int(f(0, 0) as i64));
    }
    Some(SymInt::Int(f(x.as_int()?, y.as_int()?) as i64))
}

/// Broadcasting binary (and variadic) operators; `out_type` picks the result type.
fn broadcasting(ctx: &mut InferCtx, out_type: Option<DType>) -> Result<()> {
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
    if let Some(out) = &shape
        && foldable(ctx, out)
        && (0..ctx.n_inputs()).all(|i| ctx.dtype(i).is_some_and(is_integer))
    {
        let values: Option<Vec<Vec<SymInt>>> = (0..ctx.n_inputs()).map(|i| ctx.ints(i)).collect();
        if let Some(values) = values {
            let mut acc = values[0].clone();
            let mut ok = true;
            for v in &values[1..] {
                match fold2(&acc, v, |x, y| binary_op(ctx, x, y)) {
                    Some(r) => acc = r,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok && (values.len() > 1 || ctx.op == "Sum" || ctx.op == "Max" || ctx.op == "Min") {
                fact.value = Some(TensorValue::Ints(acc));
            }
        }
    }
    ctx.set(0, fact);
    Ok(())
}

fn arithmetic(ctx: &mut InferCtx) -> Result<()> {
    broadcasting(ctx, None)
}

fn compare(ctx: &mut InferCtx) -> Result<()> {
    broadcasting(ctx, Some(DType::Bool))
}

/// PRelu: the slope broadcasts to X; the result is X's shape and type.
fn prelu(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    if let (Some(a), Some(b)) = (ctx.shape(0), ctx.shape(1)) {
        broadcast(a, b)?;
    }
    ctx.set(0, x.reshaped(x.shape.clone()));
    Ok(())
}

fn mean(ctx: &mut InferCtx) -> Result<()> {
    broadcasting(ctx, None)?;
    ctx.outputs[0].value = None;
    Ok(())
}

fn where_op(ctx: &mut InferCtx) -> Result<()> {
    let shape = broadcast_all(&[ctx.shape(0), ctx.shape(1), ctx.shape(2)])?;
    let mut fact = Fact::tensor(ctx.dtype(1).or(ctx.dtype(2)), shape.clone());
    if let (Some(out), Some(c), Some(a), Some(b)) = (&shape, ctx.ints(0), ctx.ints(1), ctx.ints(2))
        && foldable(ctx, out)
    {
        let n = out.first().and_then(Dim::known).unwrap_or(1) as usize;
        let pick = |v: &Vec<SymInt>, i: usize| v.get(if v.len() == 1 { 0 } else { i }).cloned();
        let vals: Option<Vec<SymInt>> = (0..n)
            .map(|i| {
                let cond = pick(&c, i)?.as_int()?;
                if cond != 0 { pick(&a, i) } else { pick(&b, i) }
            })
            .collect();
        fact.value = vals.map(TensorValue::Ints);
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
    if let Some(t) = to {
        out.value = match (ctx.value(0), is_integer(t)) {
            (Some(TensorValue::Ints(v)), true) => Some(TensorValue::Ints(if t == DType::Bool {
                v.iter()
                    .map(|i| i.as_int().map(|i| SymInt::Int((i != 0) as i64)))
                    .collect::<Option<Vec<_>>>()
                    .unwrap_or_default()
            } else {
                v
            })),
            (Some(TensorValue::Floats(v)), true) => Some(TensorValue::Ints(
                v.iter().map(|f| SymInt::Int(f.trunc() as i64)).collect(),
            )),
            (Some(v), false) => v.as_floats().map(TensorValue::Floats),
            _ => None,
        };
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

/// Same-shape operators of the standard set.
const SAME: &[&str] = &[
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "BitwiseNot",
    "Ceil",
    "Celu",
    "Clip",
    "Cos",
    "Cosh",
    "Elu",
    "Erf",
    "Exp",
    "Floor",
    "Gelu",
    "HardSigmoid",
    "HardSwish",
    "Hardmax",
    "LeakyRelu",
    "Log",
    "LogSoftmax",
    "Mish",
    "Reciprocal",
    "Round",
    "Selu",
    "Shrink",
    "Sigmoid",
    "Sin",
    "Sinh",
    "Softmax",
    "Softplus",
    "Softsign",
    "Sqrt",
    "Tan",
    "Tanh",
    "ThresholdedRelu",
    "Swish",
];

const FOLD: &[&str] = &["Abs", "Neg", "Sign", "Relu"];
const ARITH: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Mod",
    "BitShift",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "Sum",
    "Max",
    "Min",
];
const COMPARE: &[&str] = &[
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
    let mut out: Vec<OpEntry> = Vec::new();
    for (list, f) in [
        (SAME, same as InferFn),
        (FOLD, unary_fold as InferFn),
        (ARITH, arithmetic as InferFn),
        (COMPARE, compare as InferFn),
    ] {
        out.extend(list.iter().map(|op| ("", *op, f)));
    }
    let single: [(&'static str, InferFn); 10] = [
        ("Identity", identity),
        ("Dropout", dropout),
        ("Not", same_bool),
        ("IsNaN", same_bool),
        ("IsInf", same_bool),
        ("PRelu", prelu),
        ("Mean", mean),
        ("Where", where_op),
        ("Cast", cast),
        ("CastLike", cast),
    ];
    out.extend(single.iter().map(|(op, f)| ("", *op, *f)));
    out
}
