//! Reductions (Reduce*, ArgMax/ArgMin) and the running CumSum/CumProd.
//! Integer reductions of small known values fold, so shape arithmetic such as
//! `ReduceProd(Shape(x))` stays exact.

use super::ctx::{InferCtx, Result, ShapeError, axis, err};
use super::dims::like_input;
use super::fact::{Fact, MAX_VALUE_ELEMENTS, TensorValue};
use super::math::is_integer;
use super::{InferFn, OpEntry};
use crate::dim::{Overflow, SymInt};
use crate::ir::{DType, Dim};

/// The axes a reduction was given.
enum Axes {
    Known(Vec<i64>),
    /// Axes held by a tensor whose values are unknown; its length when known.
    Unknown(Option<usize>),
}

/// The opset in which `axes` moved from an attribute to input 2.
fn axes_input_since(op: &str) -> i64 {
    if op == "ReduceSum" { 13 } else { 18 }
}

fn reduce_axes(ctx: &InferCtx) -> Axes {
    if ctx.opset < axes_input_since(ctx.op) {
        return Axes::Known(ctx.attr_ints("axes").unwrap_or_default());
    }
    if ctx.input(1).is_none() {
        return Axes::Known(Vec::new());
    }
    if let Some(v) = ctx.known_ints(1) {
        return Axes::Known(v);
    }
    let len = ctx
        .shape(1)
        .and_then(|s| s.first())
        .and_then(Dim::known)
        .and_then(|n| usize::try_from(n).ok());
    match len {
        Some(0) => Axes::Known(Vec::new()),
        n => Axes::Unknown(n),
    }
}

/// Reduce*: the reduced axes become 1 (keepdims) or disappear.
pub(super) fn reduce(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let keepdims = ctx.attr_int_or("keepdims", 1) != 0;
    let noop = ctx.attr_int_or("noop_with_empty_axes", 0) != 0;
    let axes = reduce_axes(ctx);
    if matches!(&axes, Axes::Known(a) if a.is_empty()) && noop {
        // No axes and noop_with_empty_axes: the identity.
        let value = ctx.value(0);
        ctx.set(
            0,
            Fact {
                value,
                ..x.reshaped(x.shape.clone())
            },
        );
        return Ok(());
    }
    let shape = match (&axes, &x.shape) {
        // Every axis reduced without keepdims is a scalar whatever the rank.
        (Axes::Known(a), None) if a.is_empty() && !keepdims => Some(Vec::new()),
        (_, None) => None,
        (Axes::Known(a), Some(s)) => {
            let reduced = reduced_mask(a, s.len())?;
            let out = s
                .iter()
                .zip(&reduced)
                .filter_map(|(d, &r)| match (r, keepdims) {
                    (false, _) => Some(d.clone()),
                    (true, true) => Some(Dim::Known(1)),
                    (true, false) => None,
                })
                .collect();
            ctx.set(0, x.reshaped(Some(out)));
            fold_reduce(ctx, s, &reduced);
            return Ok(());
        }
        // Which axes are reduced is data-dependent: each size is unknown.
        (Axes::Unknown(_), Some(s)) if keepdims => Some(
            s.iter()
                .map(|d| match d {
                    Dim::Known(1) => Dim::Known(1),
                    _ => ctx.fresh_dim("reduced"),
                })
                .collect(),
        ),
        (Axes::Unknown(Some(n)), Some(s)) => {
            let kept = s.len().checked_sub(*n).ok_or_else(|| {
                ShapeError(format!(
                    "{n} axes cannot be reduced from a rank-{} input",
                    s.len()
                ))
            })?;
            Some((0..kept).map(|_| ctx.fresh_dim("reduced")).collect())
        }
        (Axes::Unknown(None), Some(_)) => None,
    };
    ctx.set(0, x.reshaped(shape));
    Ok(())
}

/// Which of `rank` axes are reduced; no axes means all of them.
fn reduced_mask(axes: &[i64], rank: usize) -> Result<Vec<bool>> {
    if axes.is_empty() {
        return Ok(vec![true; rank]);
    }
    let mut mask = vec![false; rank];
    for &a in axes {
        let i = axis(a, rank)?;
        if mask[i] {
            return err(format!("axis {a} is reduced twice"));
        }
        mask[i] = true;
    }
    Ok(mask)
}

/// Folds ReduceSum/Prod/Max/Min of a small known tensor whose values are
/// exact integers: integer tensors, and float tensors carrying integers
/// (`ReduceMax(Cast(Shape(x), FLOAT))`, how detectors pad image batches to
/// their largest size), which fold the same way.
fn fold_reduce(ctx: &mut InferCtx, shape: &[Dim], reduced: &[bool]) {
    let exact = match ctx.value(0) {
        Some(TensorValue::Ints(_)) => true,
        Some(TensorValue::Floats(v)) => {
            ctx.dtype(0).is_some_and(is_integer)
                || v.iter().all(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
        }
        _ => false,
    };
    if !exact {
        return;
    }
    let op: fn(&SymInt, &SymInt) -> std::result::Result<SymInt, Overflow> = match ctx.op {
        "ReduceSum" => SymInt::add,
        "ReduceProd" => SymInt::mul,
        "ReduceMax" => SymInt::max_with,
        "ReduceMin" => SymInt::min_with,
        _ => return,
    };
    // The value of an empty reduction; Max/Min of nothing is not an integer.
    let empty = match ctx.op {
        "ReduceSum" => Some(SymInt::Int(0)),
        "ReduceProd" => Some(SymInt::Int(1)),
        _ => None,
    };
    let dims: Option<Vec<usize>> = shape
        .iter()
        .map(|d| d.known().and_then(|n| usize::try_from(n).ok()))
        .collect();
    let (Some(dims), Some(values)) = (dims, ctx.ints(0)) else {
        return;
    };
    // A value past the dimension limits is the node's error (`folded`).
    let folded = reduce_values(&dims, reduced, &values, |a, b| ctx.folded(op(a, b)), empty);
    if let (Some(v), Some(o)) = (folded, ctx.output_mut(0)) {
        o.value = Some(TensorValue::ints(v));
    }
}

/// Reduces row-major `values` of shape `dims` over the `reduced` axes.
fn reduce_values(
    dims: &[usize],
    reduced: &[bool],
    values: &[SymInt],
    combine: impl Fn(&SymInt, &SymInt) -> Option<SymInt>,
    empty: Option<SymInt>,
) -> Option<Vec<SymInt>> {
    let count = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
    let out_dims: Vec<usize> = dims
        .iter()
        .zip(reduced)
        .map(|(&d, &r)| if r { 1 } else { d })
        .collect();
    let out_count = out_dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
    if count != values.len() || out_count > MAX_VALUE_ELEMENTS {
        return None;
    }
    let mut acc: Vec<Option<SymInt>> = vec![None; out_count];
    for (flat, v) in values.iter().enumerate() {
        // Row-major coordinates of `flat`; reduced axes map to 0 in the output.
        let (mut rest, mut out, mut stride) = (flat, 0, 1);
        for i in (0..dims.len()).rev() {
            let c = rest % dims[i];
            rest /= dims[i];
            if !reduced[i] {
                out += c * stride;
            }
            stride *= out_dims[i];
        }
        let slot = acc.get_mut(out)?;
        *slot = Some(match slot.take() {
            None => v.clone(),
            Some(a) => combine(&a, v)?,
        });
    }
    acc.into_iter()
        .map(|a| a.or_else(|| empty.clone()))
        .collect()
}

/// ArgMax/ArgMin: int64 indices, the axis kept as 1 or dropped.
fn arg_reduce(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?;
    let keepdims = ctx.attr_int_or("keepdims", 1) != 0;
    let shape = match &x.shape {
        Some(s) => {
            let a = axis(ctx.attr_int_or("axis", 0), s.len())?;
            let mut out = s.clone();
            if keepdims {
                out[a] = Dim::Known(1);
            } else {
                out.remove(a);
            }
            Some(out)
        }
        None => None,
    };
    ctx.set(0, Fact::tensor(Some(DType::Int64), shape));
    Ok(())
}

const REDUCE: &[&str] = &[
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
];

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let mut out: Vec<OpEntry> = REDUCE
        .iter()
        .map(|op| ("", *op, reduce as InferFn))
        .collect();
    out.extend([
        ("", "ArgMax", arg_reduce as InferFn),
        ("", "ArgMin", arg_reduce),
        // A running sum or product keeps its input's shape.
        ("", "CumSum", like_input),
        ("", "CumProd", like_input),
    ]);
    out
}

/// Helpers for the unit tests of this family's files.
#[cfg(test)]
pub(super) mod testing {
    use crate::ir::{DType, Dim};
    use crate::proto::AttributeProto;
    use crate::shape::{Fact, TensorValue};

    /// Dims from "batch,3,seq": numbers are known, names are symbols.
    pub fn dims(spec: &str) -> Vec<Dim> {
        spec.split(',')
            .filter(|s| !s.is_empty())
            .map(|s| match s.trim().parse::<u64>() {
                Ok(n) => Dim::Known(n),
                Err(_) => Dim::symbol(s.trim()),
            })
            .collect()
    }

    pub fn t(dtype: DType, spec: &str) -> Option<Fact> {
        Some(Fact::new(dtype, dims(spec)))
    }

    pub fn f32(spec: &str) -> Option<Fact> {
        t(DType::Float32, spec)
    }

    /// A 1-D int64 tensor with known values.
    pub fn ints(v: &[i64]) -> Option<Fact> {
        Some(Fact::ints_1d(v.iter().map(|&i| i.into()).collect()))
    }

    /// An int64 tensor of the given shape holding `v`.
    pub fn int_tensor(spec: &str, v: &[i64]) -> Option<Fact> {
        Some(Fact::with_value(
            DType::Int64,
            dims(spec),
            TensorValue::ints(v.iter().map(|&i| i.into()).collect()),
        ))
    }

    fn named(name: &str) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            ..Default::default()
        }
    }

    pub fn ai(name: &str, v: i64) -> AttributeProto {
        AttributeProto {
            i: Some(v),
            ..named(name)
        }
    }

    pub fn aints(name: &str, v: &[i64]) -> AttributeProto {
        AttributeProto {
            ints: v.to_vec(),
            ..named(name)
        }
    }

    pub fn astr(name: &str, v: &str) -> AttributeProto {
        AttributeProto {
            s: Some(v.as_bytes().to_vec().into()),
            ..named(name)
        }
    }

    /// Runs the registered shape function of `domain::op`.
    pub use crate::shape::ctx::run_op as run;

    /// The shapes of `facts`, as "a,b;c" strings ("?" for an unknown rank).
    pub fn shapes(facts: &[Fact]) -> String {
        facts
            .iter()
            .map(|f| match &f.shape {
                Some(s) => s.iter().map(Dim::to_string).collect::<Vec<_>>().join(","),
                None => "?".into(),
            })
            .collect::<Vec<_>>()
            .join(";")
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::testing::*;
    use crate::ir::DType;
    use crate::shape::TensorValue;

    pub(in crate::shape) fn reduce(
        op: &str,
        opset: i64,
        attrs: &[crate::proto::AttributeProto],
        x: Option<crate::shape::Fact>,
        axes: Option<crate::shape::Fact>,
    ) -> String {
        let mut inputs = vec![x];
        if axes.is_some() {
            inputs.push(axes);
        }
        shapes(&run("", op, opset, attrs, inputs, 1).unwrap())
    }

    #[test]
    fn reduce_axes_attribute_before_18_and_input_after() {
        // ReduceMean-13 takes axes as an attribute, ReduceMean-18 as input 2.
        let old = reduce(
            "ReduceMean",
            13,
            &[aints("axes", &[1])],
            f32("batch,3,4"),
            None,
        );
        assert_eq!(old, "batch,1,4");
        let new = reduce(
            "ReduceMean",
            18,
            &[ai("keepdims", 0)],
            f32("batch,3,4"),
            ints(&[-1]),
        );
        assert_eq!(new, "batch,3");
        // ReduceSum moved at 13: an attribute there is not read.
        let sum = reduce("ReduceSum", 13, &[aints("axes", &[1])], f32("2,3"), None);
        assert_eq!(sum, "1,1", "no axes input means every axis");
    }

    #[test]
    fn reduce_all_axes_without_keepdims_is_a_scalar_even_of_unknown_rank() {
        let out = run(
            "",
            "ReduceMax",
            13,
            &[ai("keepdims", 0)],
            vec![Some(crate::shape::Fact::tensor(Some(DType::Float32), None))],
            1,
        )
        .unwrap();
        assert_eq!(shapes(&out), "");
    }

    #[test]
    fn reduce_noop_with_empty_axes_is_identity() {
        let out = reduce(
            "ReduceSum",
            13,
            &[ai("noop_with_empty_axes", 1)],
            f32("batch,5"),
            ints(&[]),
        );
        assert_eq!(out, "batch,5");
    }

    #[test]
    fn reduce_unknown_axes_keeps_rank_with_fresh_sizes() {
        // Axes computed at run time: keepdims keeps the rank, sizes unknown
        // (a known 1 stays 1 whichever axes are reduced).
        let axes = Some(crate::shape::Fact::new(DType::Int64, dims("2")));
        let out = reduce("ReduceSum", 13, &[], f32("1,3,4"), axes.clone());
        assert_eq!(out, "1,reduced_1,reduced_2");
        let out = reduce("ReduceSum", 13, &[ai("keepdims", 0)], f32("1,3,4"), axes);
        assert_eq!(out, "reduced_1");
    }

    #[test]
    fn reduce_errors_on_bad_axes() {
        let e = run("", "ReduceSum", 13, &[], vec![f32("2,3"), ints(&[2])], 1).unwrap_err();
        assert!(e.0.contains("out of range"), "{e}");
        let e = run(
            "",
            "ReduceSum",
            13,
            &[],
            vec![f32("2,3"), ints(&[1, -1])],
            1,
        )
        .unwrap_err();
        assert!(e.0.contains("twice"), "{e}");
    }

    #[test]
    fn reduce_prod_and_sum_fold_shape_values() {
        // ReduceProd(Shape(x)) is the element count, symbolic parts included.
        let shape = Some(crate::shape::Fact::ints_1d(vec![
            crate::dim::SymInt::sym("batch"),
            3.into(),
            4.into(),
        ]));
        let out = run("", "ReduceProd", 18, &[ai("keepdims", 0)], vec![shape], 1).unwrap();
        let want = crate::dim::SymInt::sym("batch").mul(&12.into()).unwrap();
        assert_eq!(out[0].value, Some(TensorValue::ints(vec![want])));
        // A 2x3 matrix summed over its rows: [[1,2,3],[4,5,6]] -> [5,7,9].
        let m = int_tensor("2,3", &[1, 2, 3, 4, 5, 6]);
        let out = run(
            "",
            "ReduceSum",
            13,
            &[ai("keepdims", 0)],
            vec![m.clone(), ints(&[0])],
            1,
        )
        .unwrap();
        assert_eq!(
            out[0].value,
            Some(TensorValue::ints(vec![5.into(), 7.into(), 9.into()]))
        );
        let out = run("", "ReduceMax", 18, &[], vec![m, ints(&[1])], 1).unwrap();
        assert_eq!(shapes(&out), "2,1");
        assert_eq!(
            out[0].value,
            Some(TensorValue::ints(vec![3.into(), 6.into()]))
        );
        // Float reductions of unknown data carry no value.
        let out = run("", "ReduceSum", 13, &[], vec![f32("3")], 1).unwrap();
        assert_eq!(out[0].value, None);
    }

    #[test]
    fn arg_max_is_int64_and_drops_or_keeps_the_axis() {
        let out = run("", "ArgMax", 13, &[ai("axis", -1)], vec![f32("batch,7")], 1).unwrap();
        assert_eq!(
            (shapes(&out), out[0].dtype),
            ("batch,1".into(), Some(DType::Int64))
        );
        let out = run(
            "",
            "ArgMin",
            13,
            &[ai("keepdims", 0)],
            vec![f32("batch,7")],
            1,
        )
        .unwrap();
        assert_eq!(shapes(&out), "7");
        assert!(run("", "ArgMin", 13, &[ai("axis", 2)], vec![f32("2,7")], 1).is_err());
    }
}
