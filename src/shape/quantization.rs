//! Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, and
//! the integer convolutions and matrix products (shaped like their float forms).

use super::conv::conv;
use super::ctx::{InferCtx, Result, axis, dim, dtype_code, err, join};
use super::dims::{same_shape, same_size};
use super::fact::Fact;
use super::matmul::matmul;
use super::{InferFn, OpEntry};
use crate::ir::{DType, Dim};

/// Checks the scale's shape against the input (a scalar, a 1-D per-axis
/// vector, or the input's shape blocked along `axis`) and the zero point's
/// against the scale.
fn check_quant_params(ctx: &InferCtx, x: &[Dim]) -> Result<()> {
    let Some(s) = ctx.shape(1) else {
        return Ok(());
    };
    // A scalar or a single value (`[]`, `[1]`: models mix them) is per-tensor.
    let single = |s: &[Dim]| s.iter().all(|d| *d == Dim::Known(1));
    if let Some(z) = ctx.shape(2)
        && !(single(s) && single(z))
    {
        same_shape(s, z, &format!("{} scale vs zero point", ctx.op))?;
    }
    if single(s) {
        return Ok(());
    }
    let block = ctx.attr_int_or("block_size", 0);
    // An axis that does not fit (a 1-D x with the default axis 1) means per-tensor.
    let Ok(a) = axis(ctx.attr_int_or("axis", 1), x.len()) else {
        return Ok(());
    };
    let what = format!("{} scale vs x", ctx.op);
    if block > 0 {
        if s.len() != x.len() {
            return err(format!(
                "{what}: blocked scale [{}] must have x's rank [{}]",
                join(s),
                join(x)
            ));
        }
        for (i, (sd, xd)) in s.iter().zip(x).enumerate() {
            if i == a {
                let blocks = dim(&xd.to_symint().ceil_div(block)?)?;
                same_size(sd, &blocks, &format!("{what} blocks of {block}"))?;
            } else {
                same_size(sd, xd, &what)?;
            }
        }
    } else if s.len() == 1 {
        same_size(&s[0], &x[a], &format!("{what} along axis {a}"))?;
    }
    Ok(())
}

/// QuantizeLinear: x's shape; the type from `output_dtype`, else the zero
/// point's, else uint8.
fn quantize(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let zp_type = ctx.input(2).map(|f| f.dtype);
    let dtype = match ctx.attr_int_or("output_dtype", 0) {
        0 => zp_type.unwrap_or(Some(DType::Uint8)),
        code => {
            let t = dtype_code(code)?;
            if let Some(Some(z)) = zp_type
                && z != t
            {
                return err(format!(
                    "QuantizeLinear output_dtype {t} differs from the zero point's {z}"
                ));
            }
            Some(t)
        }
    };
    if let Some(s) = &x.shape
        && ctx.opset >= 13
    {
        check_quant_params(ctx, s)?;
    }
    ctx.set(0, Fact::tensor(dtype, x.shape));
    Ok(())
}

/// DequantizeLinear: x's shape; float32 before 19, then the scale's type
/// unless `output_dtype` says otherwise.
fn dequantize(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let dtype = match ctx.attr_int_or("output_dtype", 0) {
        0 if ctx.opset >= 19 => ctx.dtype(1),
        0 => Some(DType::Float32),
        code => Some(dtype_code(code)?),
    };
    if let Some(s) = &x.shape
        && ctx.opset >= 13
    {
        check_quant_params(ctx, s)?;
    }
    ctx.set(0, Fact::tensor(dtype, x.shape));
    Ok(())
}

/// DynamicQuantizeLinear: uint8 data of x's shape, scalar scale and zero point.
fn dynamic_quantize(ctx: &mut InferCtx) -> Result<()> {
    let shape = ctx.require(0)?.shape.clone();
    ctx.set(0, Fact::tensor(Some(DType::Uint8), shape));
    ctx.set(1, Fact::new(DType::Float32, Vec::new()));
    ctx.set(2, Fact::new(DType::Uint8, Vec::new()));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 7] = [
        ("QuantizeLinear", quantize),
        ("DequantizeLinear", dequantize),
        ("DynamicQuantizeLinear", dynamic_quantize),
        ("ConvInteger", conv),
        ("QLinearConv", conv),
        ("MatMulInteger", matmul),
        ("QLinearMatMul", matmul),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}
