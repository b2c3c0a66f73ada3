//! Dimension helpers shared by the operator families.

use super::ctx::{InferCtx, Result, ShapeError, err, join};
use crate::dim::SymInt;
use crate::ir::Dim;

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
pub(super) fn same(a: &Option<Dim>, b: &Option<Dim>, what: &str) -> Result<()> {
    match (a, b) {
        (Some(Dim::Known(x)), Some(Dim::Known(y))) if x != y => {
            err(format!("{what} differ: {x} and {y}"))
        }
        _ => Ok(()),
    }
}
