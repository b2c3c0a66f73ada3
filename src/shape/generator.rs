//! Generators: Constant, ConstantOfShape, Range and EyeLike.

use super::ctx::{InferCtx, Result, ShapeError, dim, dtype_code, err};
use super::dims::{fresh_dims, out_fact, product, repeat_first, shape_len, to_dim};
use super::fact::{Fact, MAX_VALUE_ELEMENTS, TensorValue};
use super::math::{integral, is_integer, non_negative};
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// Constant: one of its value attributes gives type, shape and data.
fn constant(ctx: &mut InferCtx) -> Result<()> {
    let ints = |v: Vec<i64>| TensorValue::ints(v.into_iter().map(SymInt::Int).collect());
    let vector = |n: usize| vec![Dim::Known(n as u64)];
    let fact = if let Some(t) = ctx.attr_tensor("value") {
        let mut f = ctx.tensors.fact_of(t)?;
        let small = f
            .elements()
            .and_then(|n| n.as_int())
            .is_some_and(|n| usize::try_from(n).is_ok_and(|n| n <= MAX_VALUE_ELEMENTS));
        if small && let Some(c) = &f.constant {
            f.value = c.load().ok();
        }
        f
    } else if let Some(s) = ctx
        .attr("sparse_value")
        .and_then(|a| a.sparse_tensor.as_ref())
    {
        let dtype = match &s.values {
            Some(v) => ctx.tensors.fact_of(v)?.dtype,
            None => None,
        };
        let shape = s
            .dims
            .iter()
            .map(|&d| to_dim(&SymInt::Int(d), "sparse dimension"))
            .collect::<Result<Vec<_>>>()?;
        Fact::tensor(dtype, Some(shape))
    } else if let Some(v) = ctx.attr_float("value_float") {
        Fact::with_value(DType::Float32, vec![], TensorValue::floats(vec![v]))
    } else if let Some(v) = ctx.attr_floats("value_floats") {
        Fact::with_value(DType::Float32, vector(v.len()), TensorValue::floats(v))
    } else if let Some(v) = ctx.attr_int("value_int") {
        Fact::with_value(DType::Int64, vec![], ints(vec![v]))
    } else if let Some(v) = ctx.attr_ints("value_ints") {
        Fact::with_value(DType::Int64, vector(v.len()), ints(v))
    } else if let Some(v) = ctx.attr_string("value_string") {
        Fact::with_value(DType::String, vec![], TensorValue::strings(vec![v]))
    } else if let Some(v) = ctx.attr_strings("value_strings") {
        Fact::with_value(DType::String, vector(v.len()), TensorValue::strings(v))
    } else {
        return err("Constant has no value attribute");
    };
    ctx.set(0, fact);
    Ok(())
}

/// ConstantOfShape: the shape is input 0's data; type and fill from `value`.
fn constant_of_shape(ctx: &mut InferCtx) -> Result<()> {
    let (dtype, fill) = match ctx.attr_tensor("value") {
        Some(t) => {
            let f = ctx.tensors.fact_of(t)?;
            let fill = f.constant.as_ref().and_then(|c| c.load().ok());
            (f.dtype, fill)
        }
        None => (Some(DType::Float32), Some(TensorValue::floats(vec![0.0]))),
    };
    let shape = match ctx.ints(0) {
        Some(v) => Some(
            v.iter()
                .map(|d| to_dim(d, "ConstantOfShape dimension"))
                .collect::<Result<Vec<_>>>()?,
        ),
        None => shape_len(ctx, 0).map(|n| fresh_dims(ctx, n, "constant_of_shape")),
    };
    let value = shape.as_ref().and_then(|s| {
        let n = usize::try_from(ctx.folded(product(s))?.as_int()?).ok()?;
        if n > MAX_VALUE_ELEMENTS {
            return None;
        }
        repeat_first(fill.as_ref()?, n)
    });
    ctx.set(0, out_fact(dtype, shape, value));
    Ok(())
}

/// Range(start, limit, delta): max(ceil((limit - start) / delta), 0) elements.
fn range(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0).or(ctx.dtype(1)).or(ctx.dtype(2));
    let float = !dtype.is_some_and(is_integer);
    let scalar = |i: usize| ctx.value(i).filter(|v| v.len() == 1);
    let (mut len, mut value) = (None, None);
    if let (Some(s), Some(l), Some(d)) = (scalar(0), scalar(1), scalar(2)) {
        let whole = |v: &TensorValue| integral(v, float).and_then(|v| v.first().cloned());
        let real = |v: &TensorValue| v.as_floats().and_then(|v| v.first().copied());
        if let (Some(s), Some(l), Some(d)) = (whole(&s), whole(&l), whole(&d)) {
            // Whole-number bounds (of any type) count exactly, symbols included.
            len = range_len(&s, &l, &d)?;
            value = len
                .as_ref()
                .and_then(SymInt::as_int)
                .filter(|&n| usize::try_from(n).is_ok_and(|n| n <= MAX_VALUE_ELEMENTS))
                .and_then(|n| {
                    // Made at its size: collected through `Option`, the list
                    // grew by doubling, copied at each step.
                    let mut v = Vec::with_capacity(n as usize);
                    if let (SymInt::Int(s), SymInt::Int(d)) = (&s, &d) {
                        // Known bounds (most are): s + k * d in plain
                        // integers, a Range of thousands at a time.
                        let mut x = *s;
                        for k in 0..n {
                            if k > 0 {
                                x = x.checked_add(*d)?;
                            }
                            v.push(SymInt::Int(x));
                        }
                        return Some(v);
                    }
                    for k in 0..n {
                        v.push(d.mul(&SymInt::Int(k)).and_then(|x| x.add(&s)).ok()?);
                    }
                    Some(v)
                })
                .map(TensorValue::ints);
        } else if let (true, Some(s), Some(l), Some(d)) = (float, real(&s), real(&l), real(&d)) {
            if d == 0.0 {
                return err("Range delta is 0");
            }
            let n = ((l - s) / d).ceil().max(0.0);
            if n.is_finite() && n < 1e15 {
                len = Some(SymInt::Int(n as i64));
                if (n as usize) <= MAX_VALUE_ELEMENTS {
                    value = Some(TensorValue::floats(
                        (0..n as usize).map(|k| s + k as f64 * d).collect(),
                    ));
                }
            }
        }
    }
    let n = match len {
        Some(n) => dim(&n)?,
        None => ctx.fresh_dim("range"),
    };
    ctx.set(0, out_fact(dtype, Some(vec![n]), value));
    Ok(())
}

/// The element count of an integer Range, symbolic when the bounds are.
fn range_len(s: &SymInt, l: &SymInt, d: &SymInt) -> Result<Option<SymInt>> {
    let Some(step) = d.as_int() else {
        return Ok(None);
    };
    if step == 0 {
        return err("Range delta is 0");
    }
    let diff = l.sub(s)?;
    if let Some(n) = diff.as_int() {
        // ceil(n / step) for either sign of step, in i128 against overflow.
        let (n, k) = (n as i128, step as i128);
        let q = n / k + i128::from(n % k != 0 && (n < 0) == (k < 0));
        let q =
            SymInt::Int(i64::try_from(q).map_err(|_| ShapeError("Range size overflows".into()))?);
        return Ok(Some(q.max_with(&SymInt::Int(0))?));
    }
    // Count along a positive span: ceil(diff / step) = ceil(-diff / -step).
    let (span, k) = if step > 0 {
        (diff, step)
    } else {
        (
            diff.neg()?,
            step.checked_neg()
                .ok_or_else(|| ShapeError("Range delta overflows".into()))?,
        )
    };
    let n = span.ceil_div(k)?;
    // A span made only of sizes is never negative, so it needs no clamp:
    // Range(0, seq, 1) is `seq`.
    if non_negative(&span) {
        Ok(Some(n))
    } else {
        Ok(Some(n.max_with(&SymInt::Int(0))?))
    }
}

/// EyeLike: the input's 2-D shape; type from `dtype` or the input.
fn eye_like(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    if let Some(r) = x.rank()
        && r != 2
    {
        return err(format!("EyeLike needs a 2-D input, got rank {r}"));
    }
    let dtype = match ctx.attr_int("dtype") {
        Some(c) => Some(dtype_code(c)?),
        None => x.dtype,
    };
    ctx.set(0, Fact::tensor(dtype, x.shape.clone()));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 4] = [
        ("Constant", constant),
        ("ConstantOfShape", constant_of_shape),
        ("Range", range),
        ("EyeLike", eye_like),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::tensor::tests::*;
    use crate::dim::SymInt;
    use crate::ir::DType;

    use crate::shape::{Fact, TensorValue};

    #[test]
    fn range_counts_symbolically() {
        // Float bounds that are whole numbers count exactly too.
        let half = Some(Fact::with_value(
            DType::Float32,
            vec![],
            TensorValue::floats(vec![0.5]),
        ));
        let out = one(
            "Range",
            11,
            &[],
            vec![
                Some(Fact::with_value(
                    DType::Float32,
                    vec![],
                    TensorValue::floats(vec![0.0]),
                )),
                Some(Fact::with_value(
                    DType::Float32,
                    vec![],
                    TensorValue::floats(vec![2.0]),
                )),
                half,
            ],
        );
        assert_eq!(out.shape, Some(vec![k(4)]));
        assert_eq!(
            out.value,
            Some(TensorValue::floats(vec![0.0, 0.5, 1.0, 1.5]))
        );
        let seq = Some(Fact::with_value(
            DType::Int64,
            vec![],
            TensorValue::ints(vec![SymInt::sym("seq")]),
        ));
        let out = one("Range", 11, &[], vec![scalar_i(0), seq, scalar_i(1)]);
        assert_eq!(out.shape, Some(vec![s("seq")]));
        let out = one(
            "Range",
            11,
            &[],
            vec![scalar_i(10), scalar_i(6), scalar_i(-3)],
        );
        assert_eq!(out.shape, Some(vec![k(2)]));
        assert_eq!(known_vals(&out), vec![10, 7]);
        // An empty range, not a negative size.
        let out = one(
            "Range",
            11,
            &[],
            vec![scalar_i(5), scalar_i(1), scalar_i(1)],
        );
        assert_eq!(out.shape, Some(vec![k(0)]));
    }

    /// Known integer bounds take a path of plain integers: each entry is
    /// start + k * delta, either way, to the last below the limit, and near
    /// the ends of 64 bits as anywhere (start + k * delta stays between
    /// start and limit).
    #[test]
    fn range_of_known_integers_is_start_plus_k_deltas() {
        let range = |s: i64, l: i64, d: i64| {
            let out = one(
                "Range",
                11,
                &[],
                vec![scalar_i(s), scalar_i(l), scalar_i(d)],
            );
            known_vals(&out)
        };
        // ceil((9 - -3) / 4) = 3 entries; ceil((-7 - 5) / -3) = 4.
        assert_eq!(range(-3, 9, 4), vec![-3, 1, 5]);
        assert_eq!(range(5, -7, -3), vec![5, 2, -1, -4]);
        // ceil(10 / 3) = 4 entries, the last 1 below i64::MAX.
        let max = i64::MAX;
        assert_eq!(
            range(max - 10, max, 3),
            vec![max - 10, max - 7, max - 4, max - 1]
        );
        let min = i64::MIN;
        assert_eq!(range(min + 5, min, -2), vec![min + 5, min + 3, min + 1]);
        // 4,096 entries (the most a value holds): 0, 7, ..., 7 * 4095.
        let long = range(0, 7 * 4096, 7);
        assert_eq!((long.len(), long[4095]), (4096, 28_665));
    }

    #[test]
    fn constant_scalar_and_list_attributes() {
        let out = one("Constant", 13, &[ints("value_ints", &[3, 4])], vec![]);
        assert_eq!(out.shape, Some(vec![k(2)]));
        assert_eq!(known_vals(&out), vec![3, 4]);
        let out = one("Constant", 13, &[int("value_int", 5)], vec![]);
        assert_eq!((out.dtype, out.shape), (Some(DType::Int64), Some(vec![])));
        assert!(run("Constant", 13, &[], vec![], 1).is_err());
    }
}
