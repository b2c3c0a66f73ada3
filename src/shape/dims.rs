//! Helpers shared by the operator families: dimension arithmetic, reading
//! integer parameters from attributes or inputs, and folding known values.

use super::ctx::{InferCtx, Result, ShapeError, axis, err, join};
use super::fact::{Fact, MAX_VALUE_ELEMENTS, TensorValue};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// Output 0 is input 0 as it is: type, shape and any known value.
pub(super) fn like_input(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    ctx.set(0, x.reshaped(x.shape.clone()));
    Ok(())
}

/// The framework's overflow error, for plain `i64` arithmetic on attributes.
pub(super) fn overflow() -> ShapeError {
    crate::dim::Overflow.into()
}

/// Two sizes that must be equal: `None` when they are known and differ;
/// otherwise the better known one (a symbol against a number is the number).
pub(super) fn unify(a: &Dim, b: &Dim) -> Option<Dim> {
    match (a, b) {
        (Dim::Known(x), Dim::Known(y)) => (x == y).then(|| a.clone()),
        (Dim::Sym(_), Dim::Known(_)) => Some(b.clone()),
        _ => Some(a.clone()),
    }
}

/// Checks that two sizes can be equal, naming what they are.
pub(super) fn same_size(a: &Dim, b: &Dim, what: &str) -> Result<Dim> {
    unify(a, b).ok_or_else(|| ShapeError(format!("{what}: {a} does not match {b}")))
}

/// Shapes that must be identical, dimension by dimension.
pub(super) fn same_shape(a: &[Dim], b: &[Dim], what: &str) -> Result<Vec<Dim>> {
    if a.len() != b.len() {
        return err(format!(
            "{what}: shapes [{}] and [{}] differ in rank",
            join(a),
            join(b)
        ));
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| same_size(x, y, what))
        .collect()
}

/// A dimension divided by a known count, when it divides exactly.
pub(super) fn div_dim(d: &Dim, k: i64, what: &str) -> Result<Option<Dim>> {
    if k <= 0 {
        return err(format!("{what} must be positive, got {k}"));
    }
    match d {
        Dim::Known(n) if n % k as u64 != 0 => err(format!("{what}: {n} is not a multiple of {k}")),
        Dim::Known(n) => Ok(Some(Dim::Known(n / k as u64))),
        Dim::Sym(s) => Ok(s
            .exact_div(&SymInt::Int(k))
            .and_then(|q| Dim::from_symint(&q))),
    }
}

/// `a * b` as a dimension.
pub(super) fn mul_dim(a: &Dim, b: &Dim) -> Result<Dim> {
    super::ctx::dim(&a.to_symint().mul(&b.to_symint())?)
}

/// `a + b` as a dimension.
pub(super) fn add_dim(a: &Dim, b: &Dim) -> Result<Dim> {
    super::ctx::dim(&a.to_symint().add(&b.to_symint())?)
}

/// Dimension `i` of input `input`, when its shape is known.
pub(super) fn dim_of(ctx: &InferCtx, input: usize, i: usize) -> Option<Dim> {
    ctx.shape(input).and_then(|s| s.get(i)).cloned()
}

/// A shape of which every dimension is known (possibly symbolic).
pub(super) fn all(dims: &[Option<Dim>]) -> Option<Vec<Dim>> {
    dims.iter().cloned().collect()
}

/// Errors when two known sizes that must agree differ.
pub(super) fn sizes_agree(a: &Option<Dim>, b: &Option<Dim>, what: &str) -> Result<()> {
    match (a, b) {
        (Some(Dim::Known(x)), Some(Dim::Known(y))) if x != y => {
            err(format!("{what} differ: {x} and {y}"))
        }
        _ => Ok(()),
    }
}

/// A parameter that moved from an attribute to an input at some opset: it is
/// absent (use the default), present with unknown data, or known.
pub(super) enum Param<T> {
    Absent,
    Unknown,
    Known(T),
}

/// Integer parameter `attr` before opset `since`, input `input` from then on.
pub(super) fn ints_param(
    ctx: &InferCtx,
    attr: &str,
    input: usize,
    since: i64,
) -> Param<Vec<SymInt>> {
    if ctx.opset < since {
        return match ctx.attr_ints(attr) {
            Some(v) => Param::Known(v.into_iter().map(SymInt::Int).collect()),
            None => Param::Absent,
        };
    }
    if ctx.input(input).is_none() {
        return Param::Absent;
    }
    match ctx.ints(input) {
        Some(v) => Param::Known(v),
        None => Param::Unknown,
    }
}

/// Like [`ints_param`] but every entry must be a known number.
pub(super) fn known_param(ctx: &InferCtx, attr: &str, input: usize, since: i64) -> Param<Vec<i64>> {
    // From an input: its value read straight as known numbers, not copied
    // as [`ints_param`]'s list first (Unsqueeze's axes, Slice's bounds).
    if ctx.opset >= since && ctx.input(input).is_some() {
        return match ctx.value(input).and_then(|v| v.as_known_ints()) {
            Some(k) => Param::Known(k),
            None => Param::Unknown,
        };
    }
    match ints_param(ctx, attr, input, since) {
        Param::Absent => Param::Absent,
        Param::Unknown => Param::Unknown,
        Param::Known(v) => match v.iter().map(SymInt::as_int).collect() {
            Some(k) => Param::Known(k),
            None => Param::Unknown,
        },
    }
}

/// Normalizes a list of axes, rejecting repeats.
pub(super) fn axes_of(axes: &[i64], rank: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = axis(a, rank)?;
        if out.contains(&n) {
            return err(format!("axis {a} is repeated"));
        }
        out.push(n);
    }
    Ok(out)
}

/// `n` fresh dimensions (sizes only known at run time).
pub(super) fn fresh_dims(ctx: &InferCtx, n: usize, hint: &str) -> Vec<Dim> {
    (0..n).map(|_| ctx.fresh_dim(hint)).collect()
}

/// The length of input `i`, a 1-D shape vector whose data is unknown: the
/// rank it gives. Ranks past the limit count as unknown.
pub(super) fn shape_len(ctx: &InferCtx, i: usize) -> Option<usize> {
    match ctx.shape(i)?.as_slice() {
        [n] => usize::try_from(n.known()?)
            .ok()
            .filter(|&n| n <= crate::ir::MAX_RANK),
        _ => None,
    }
}

/// The product of some dimensions.
pub(super) fn product<'a>(
    dims: impl IntoIterator<Item = &'a Dim>,
) -> std::result::Result<SymInt, crate::dim::Overflow> {
    let mut n = SymInt::Int(1);
    for d in dims {
        n = n.mul(&d.to_symint())?;
    }
    Ok(n)
}

pub(super) fn known_usize(shape: &[Dim]) -> Option<Vec<usize>> {
    shape
        .iter()
        .map(|d| d.known().and_then(|n| usize::try_from(n).ok()))
        .collect()
}

/// Input `i`'s data with its fully known dimensions, when both are known.
pub(super) fn dense(ctx: &InferCtx, i: usize) -> Option<(Vec<usize>, TensorValue)> {
    let dims = known_usize(ctx.shape(i)?)?;
    let v = ctx.value(i)?;
    let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
    (v.len() == n).then_some((dims, v))
}

/// Row-major strides of `dims`.
pub(super) fn strides<T: Extent>(dims: &[T]) -> Vec<T> {
    let mut s = vec![T::ONE; dims.len()];
    for k in (0..dims.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1].times(dims[k + 1]);
    }
    s
}

/// An element count or offset: `usize` for positions in folded data, `u64`
/// for sizes read from shapes. Products saturate (folded data is far below
/// the limit, so they never do in practice).
pub(super) trait Extent: Copy {
    const ONE: Self;
    fn times(self, other: Self) -> Self;
}

impl Extent for usize {
    const ONE: Self = 1;
    fn times(self, other: Self) -> Self {
        self.saturating_mul(other)
    }
}

impl Extent for u64 {
    const ONE: Self = 1;
    fn times(self, other: Self) -> Self {
        self.saturating_mul(other)
    }
}

/// The product of known sizes, `None` on overflow.
pub(super) fn count(dims: &[u64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

/// A rank read from a tensor's length, if believable: ranks beyond the limit
/// are not (a hostile model must not make us allocate billions of symbols).
pub(super) fn believable_rank(n: u64) -> Option<usize> {
    (n <= crate::ir::MAX_RANK as u64).then_some(n as usize)
}

/// For every multi-index of `dims` (row-major), the source position `f`
/// gives; `None` when the output is too big to carry or `f` fails.
pub(super) fn index_map(
    dims: &[usize],
    mut f: impl FnMut(&[usize]) -> Option<usize>,
) -> Option<Vec<usize>> {
    let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
    if n > MAX_VALUE_ELEMENTS {
        return None;
    }
    let mut idx = vec![0usize; dims.len()];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(f(&idx)?);
        for k in (0..dims.len()).rev() {
            idx[k] += 1;
            if idx[k] < dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    Some(out)
}

/// The entries of `v` at `pos`.
pub(super) fn take(v: &TensorValue, pos: &[usize]) -> Option<TensorValue> {
    fn pick<T: Clone>(x: &[T], pos: &[usize]) -> Option<Vec<T>> {
        // Every place is checked first, so that the copy is made at its
        // size in one pass (collected through `Option`, it grew by
        // doubling; pushed, it checked its room at every entry).
        if pos.iter().any(|&p| p >= x.len()) {
            return None;
        }
        Some(pos.iter().map(|&p| x[p].clone()).collect())
    }
    Some(match v {
        TensorValue::Ints(x) => TensorValue::ints(pick(x, pos)?),
        TensorValue::Floats(x) => TensorValue::floats(pick(x, pos)?),
        TensorValue::Strings(x) => TensorValue::strings(pick(x, pos)?),
    })
}

/// `n` copies of the first entry of `v`: `take(v, &[0; n])` without the
/// positions (ConstantOfShape fills up to `MAX_VALUE_ELEMENTS` this way,
/// each bias of a weight-stripped model).
pub(super) fn repeat_first(v: &TensorValue, n: usize) -> Option<TensorValue> {
    fn copies<T: Clone>(x: &[T], n: usize) -> Option<Vec<T>> {
        if n == 0 {
            return Some(Vec::new());
        }
        Some(vec![x.first()?.clone(); n])
    }
    Some(match v {
        TensorValue::Ints(x) => TensorValue::ints(copies(x, n)?),
        TensorValue::Floats(x) => TensorValue::floats(copies(x, n)?),
        TensorValue::Strings(x) => TensorValue::strings(copies(x, n)?),
    })
}

/// Input 0's data (when known) read along a grid: output multi-index `o`
/// reads the input at `first + o[k] * step` on each axis `k`, `grid[k]`
/// being `(first, step)` (as [`fold_map`] with that map gives, a place
/// worked out as one sum rather than an index per axis). `None` when a
/// place falls outside the input.
pub(super) fn grid_take(ctx: &InferCtx, out: &[Dim], grid: &[(i64, i64)]) -> Option<TensorValue> {
    let (in_dims, v) = dense(ctx, 0)?;
    let out_dims = known_usize(out)?;
    if grid.len() != in_dims.len() || out_dims.len() != in_dims.len() {
        return None;
    }
    // In i128, where no product of 64-bit numbers overflows.
    let st = strides(&in_dims);
    let first: i128 = grid
        .iter()
        .zip(&st)
        .map(|(&(f, _), &s)| f as i128 * s as i128)
        .sum();
    let step: Vec<i128> = grid
        .iter()
        .zip(&st)
        .map(|(&(_, d), &s)| d as i128 * s as i128)
        .collect();
    take(&v, &grid_places(&out_dims, first, &step)?)
}

/// The places `first + Σ o[k] * step[k]` of every multi-index `o` of
/// `dims`, in row-major order: what [`index_map`] gives with that sum,
/// kept as a running total that each step of the index moves (a slice of
/// a causal mask, a thousand entries, a dozen instructions an entry
/// rather than a hundred). `None` when the output is too big to carry or
/// a place is not a position (negative).
fn grid_places(dims: &[usize], first: i128, step: &[i128]) -> Option<Vec<usize>> {
    let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
    if n > MAX_VALUE_ELEMENTS {
        return None;
    }
    let mut idx = vec![0usize; dims.len()];
    let mut at = first;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(usize::try_from(at).ok()?);
        for k in (0..dims.len()).rev() {
            idx[k] += 1;
            at += step[k];
            if idx[k] < dims[k] {
                break;
            }
            // Axis k wraps to 0: its steps are taken back.
            at -= step[k] * dims[k] as i128;
            idx[k] = 0;
        }
    }
    Some(out)
}

/// Rearranges input 0's data (when known) by a map from output multi-index
/// to input multi-index; `out` must be fully known.
pub(super) fn fold_map(
    ctx: &InferCtx,
    out: &[Dim],
    f: impl Fn(&[usize], &mut [usize]) -> Option<()>,
) -> Option<TensorValue> {
    let (in_dims, v) = dense(ctx, 0)?;
    let out_dims = known_usize(out)?;
    let st = strides(&in_dims);
    let mut src = vec![0usize; in_dims.len()];
    let pos = index_map(&out_dims, |o| {
        f(o, &mut src)?;
        Some(src.iter().zip(&st).map(|(i, s)| i * s).sum())
    })?;
    take(&v, &pos)
}

/// A fact for output data of `dtype`/`shape` with an optional folded value.
pub(super) fn out_fact(
    dtype: Option<DType>,
    shape: Option<Vec<Dim>>,
    value: Option<TensorValue>,
) -> Fact {
    Fact {
        value,
        ..Fact::tensor(dtype, shape)
    }
}

/// Input 0's data, when small, for ops that only change the shape.
pub(super) fn same_data(ctx: &InferCtx, shape: &Option<Vec<Dim>>) -> Option<TensorValue> {
    let v = ctx.value(0)?;
    let n = ctx.folded(product(shape.as_ref()?))?.as_int()?;
    (usize::try_from(n).ok() == Some(v.len())).then_some(v)
}

pub(super) fn to_dim(v: &SymInt, what: &str) -> Result<Dim> {
    Dim::from_symint(v).ok_or_else(|| ShapeError(format!("{what} {v} is negative")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ConstantOfShape's fill: the same value `take` gives at `n` zeros,
    /// for each kind of value, an empty one included (no entry to copy).
    #[test]
    fn repeat_first_is_take_at_zeros() {
        let values = [
            TensorValue::ints(vec![SymInt::from(7), SymInt::from(9)]),
            TensorValue::floats(vec![0.5]),
            TensorValue::strings(vec!["a".into()]),
            TensorValue::floats(Vec::new()),
        ];
        for v in &values {
            for n in [0, 1, 3, 4096] {
                assert_eq!(repeat_first(v, n), take(v, &vec![0; n]), "{v:?} x {n}");
            }
        }
        assert_eq!(
            repeat_first(&values[1], 3),
            Some(TensorValue::floats(vec![0.5; 3]))
        );
    }

    /// A grid's places, kept as a running total, are the sums worked out
    /// anew at every index: forward and backward steps, an axis of one, a
    /// scalar, an empty axis; and none where a place falls below 0.
    #[test]
    fn grid_places_are_the_sums_at_every_index() {
        let sums = |dims: &[usize], first: i128, step: &[i128]| {
            index_map(dims, |o| {
                let at = o
                    .iter()
                    .zip(step)
                    .fold(first, |a, (&i, &d)| a + i as i128 * d);
                usize::try_from(at).ok()
            })
        };
        let cases: [(&[usize], i128, &[i128]); 6] = [
            // A [4, 6] input read backwards on axis 1 from column 5, every
            // other row: first 5, steps 2 rows (12) and -1.
            (&[2, 6], 5, &[12, -1]),
            (&[2, 3, 4], 100, &[-40, 12, 2]),
            (&[1, 1, 3, 3], 0, &[1024, 1024, 32, 1]),
            (&[], 7, &[]),
            (&[3, 0, 2], 0, &[5, 1, 1]),
            // Backwards from 1: the third place would be -1.
            (&[3], 1, &[-1]),
        ];
        for (dims, first, step) in cases {
            assert_eq!(
                grid_places(dims, first, step),
                sums(dims, first, step),
                "{dims:?}"
            );
        }
        // 5 - 1·4 = 1, then 5 - 2·4 < 0.
        assert_eq!(grid_places(&[2], 5, &[-4]), Some(vec![5, 1]));
        assert_eq!(grid_places(&[3], 5, &[-4]), None);
        assert_eq!(
            grid_places(&[2, 4], 1, &[4, 1]),
            Some(vec![1, 2, 3, 4, 5, 6, 7, 8])
        );
        assert_eq!(grid_places(&[MAX_VALUE_ELEMENTS + 1], 0, &[1]), None);
    }
}
