//! Random generators: RandomNormal/Uniform, their -Like forms, Bernoulli and
//! Multinomial. Only shapes and types: the values are never known.

use super::ctx::{InferCtx, Result, ShapeError, dim, err, join};
use super::fact::Fact;
use super::indexing::{dtype_attr, same_shape_as};
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::DType;

/// RandomNormal/RandomUniform: shape and type from attributes.
fn random(ctx: &mut InferCtx) -> Result<()> {
    let dtype = dtype_attr(ctx, "dtype", Some(DType::Float32))?;
    let shape = ctx
        .attr_ints("shape")
        .ok_or_else(|| ShapeError(format!("{} needs `shape`", ctx.op)))?;
    let shape = shape
        .iter()
        .map(|&d| dim(&SymInt::Int(d)))
        .collect::<Result<Vec<_>>>()?;
    ctx.set(0, Fact::tensor(dtype, Some(shape)));
    Ok(())
}

/// RandomNormalLike, RandomUniformLike, Bernoulli: the input's shape; the
/// `dtype` attribute's type, else the input's.
fn random_like(ctx: &mut InferCtx) -> Result<()> {
    let dtype = dtype_attr(ctx, "dtype", ctx.require(0)?.dtype)?;
    same_shape_as(ctx, dtype)
}

/// Multinomial: `[batch, sample_size]` of `dtype` (int32 by default).
fn multinomial(ctx: &mut InferCtx) -> Result<()> {
    let dtype = dtype_attr(ctx, "dtype", Some(DType::Int32))?;
    let batch = match ctx.shape(0) {
        Some(s) if s.len() == 2 => s[0].clone(),
        Some(s) => {
            return err(format!(
                "Multinomial input [{}] must be [batch, classes]",
                join(s)
            ));
        }
        None => ctx.fresh_dim("batch"),
    };
    let n = dim(&SymInt::Int(ctx.attr_int_or("sample_size", 1)))?;
    ctx.set(0, Fact::tensor(dtype, Some(vec![batch, n])));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 6] = [
        ("RandomNormal", random),
        ("RandomUniform", random),
        ("RandomNormalLike", random_like),
        ("RandomUniformLike", random_like),
        ("Bernoulli", random_like),
        ("Multinomial", multinomial),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}
