//! Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, and
//! the integer convolutions and matrix products (shaped like their float forms);
//! onnxruntime's com.microsoft quantized operators (QLinearAdd, QGemm...), which
//! its quantizer writes in the QOperator format, each shaped like its float form.

use super::conv::conv;
use super::ctx::{InferCtx, Result, axis, broadcast_all, dim, dtype_code, err, join};
use super::dims::{same_shape, same_size};
use super::fact::Fact;
use super::matmul::matmul;
use super::pooling::{global_pool, pool};
use super::reduction::reduce;
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
pub(super) fn quantize(ctx: &mut InferCtx) -> Result<()> {
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
pub(super) fn dequantize(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let dtype = match ctx.attr_int_or("output_dtype", 0) {
        0 if ctx.opset >= 19 || ctx.domain == MS => ctx.dtype(1),
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

const MS: &str = "com.microsoft";

/// QLinearAdd, QLinearMul: A and B broadcast (A, A_scale, A_zp, B, ...).
fn qlinear_binary(ctx: &mut InferCtx) -> Result<()> {
    let shape = broadcast_all(&[ctx.shape(0), ctx.shape(3)])?;
    ctx.set(0, Fact::tensor(ctx.dtype(0), shape));
    Ok(())
}

/// QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax: X's type and shape.
fn qlinear_unary(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    ctx.set(0, x.reshaped(x.shape.clone()));
    Ok(())
}

/// QLinearGlobalAveragePool, QLinearAveragePool: as their float forms, on
/// NCHW data or, with `channels_last`, NHWC (transposed in and out).
fn qlinear_pool(ctx: &mut InferCtx) -> Result<()> {
    let channels_last = ctx.attr_int_or("channels_last", 0) != 0;
    let shape = ctx.shape(0).cloned();
    if channels_last
        && let Some(s) = &shape
        && s.len() >= 3
    {
        // The float form's view: N, C, spatial...
        let mut nchw = vec![s[0].clone(), s[s.len() - 1].clone()];
        nchw.extend(s[1..s.len() - 1].iter().cloned());
        let y = pooled(ctx, Some(nchw))?;
        let y = y.map(|y| {
            let mut nhwc = vec![y[0].clone()];
            nhwc.extend(y[2..].iter().cloned());
            nhwc.push(y[1].clone());
            nhwc
        });
        ctx.set(0, Fact::tensor(ctx.dtype(0), y));
        return Ok(());
    }
    if ctx.op == "QLinearGlobalAveragePool" {
        global_pool(ctx)
    } else {
        pool(ctx)
    }
}

/// The float form's output shape for an NCHW input shape.
fn pooled(ctx: &mut InferCtx, nchw: Option<Vec<Dim>>) -> Result<Option<Vec<Dim>>> {
    let x = Fact::tensor(ctx.dtype(0), nchw);
    let op = if ctx.op == "QLinearGlobalAveragePool" {
        "GlobalAveragePool"
    } else {
        "AveragePool"
    };
    let out = ctx.run_like(op, vec![Some(x)], 1)?;
    Ok(out.into_iter().next().and_then(|f| f.shape))
}

/// QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point)
/// per input, joined along `axis` as Concat does.
fn qlinear_concat(ctx: &mut InferCtx) -> Result<()> {
    let xs: Vec<Option<Fact>> = (2..ctx.n_inputs())
        .step_by(3)
        .map(|i| ctx.input(i).cloned())
        .collect();
    if xs.is_empty() {
        return err("QLinearConcat needs at least one input");
    }
    let out = ctx.run_like("Concat", xs, 1)?;
    let f = out.into_iter().next().unwrap_or_else(Fact::unknown);
    ctx.set(0, f.reshaped(f.shape.clone()));
    Ok(())
}

/// QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C?, y_scale?, y_zp?: Gemm's
/// [M, N], quantized (y_zp's type) when y_scale is given, else float.
fn qgemm(ctx: &mut InferCtx) -> Result<()> {
    let inputs = vec![ctx.input(0).cloned(), ctx.input(3).cloned()];
    let out = ctx.run_like("Gemm", inputs, 1)?;
    let shape = out.into_iter().next().and_then(|f| f.shape);
    let dtype = match (ctx.input(7), ctx.input(8)) {
        (None, _) => Some(DType::Float32),
        (Some(_), Some(z)) => z.dtype,
        (Some(_), None) => ctx.dtype(0),
    };
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// QLinearReduceMean: ReduceMean's shape (axes an attribute) in x's type.
fn qlinear_reduce(ctx: &mut InferCtx) -> Result<()> {
    reduce(ctx)?;
    if let Some(o) = ctx.output_mut(0) {
        o.value = None;
    }
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let ms: [(&'static str, InferFn); 11] = [
        ("QLinearAdd", qlinear_binary),
        ("QLinearMul", qlinear_binary),
        ("QLinearSigmoid", qlinear_unary),
        ("QLinearLeakyRelu", qlinear_unary),
        ("QLinearSoftmax", qlinear_unary),
        ("QLinearGlobalAveragePool", qlinear_pool),
        ("QLinearAveragePool", qlinear_pool),
        ("QLinearConcat", qlinear_concat),
        ("QLinearReduceMean", qlinear_reduce),
        ("QGemm", qgemm),
        ("QLinearWhere", qlinear_where),
    ];
    let table: [(&'static str, InferFn); 7] = [
        ("QuantizeLinear", quantize),
        ("DequantizeLinear", dequantize),
        ("DynamicQuantizeLinear", dynamic_quantize),
        ("ConvInteger", conv),
        ("QLinearConv", conv),
        ("MatMulInteger", matmul),
        ("QLinearMatMul", matmul),
    ];
    table
        .iter()
        .map(|(op, f)| ("", *op, *f))
        .chain(ms.iter().map(|(op, f)| (MS, *op, *f)))
        .collect()
}

/// QLinearWhere: condition, X, x_scale, x_zp, Y, y_scale, y_zp, z_scale,
/// z_zp: the three broadcast, in X's type.
fn qlinear_where(ctx: &mut InferCtx) -> Result<()> {
    let shape = broadcast_all(&[ctx.shape(0), ctx.shape(1), ctx.shape(4)])?;
    ctx.set(0, Fact::tensor(ctx.dtype(1), shape));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::conv::tests::*;

    use crate::ir::DType;
    use crate::proto::AttributeProto;
    use crate::shape::Fact;

    #[test]
    fn conv_integer_and_qlinear_types() {
        let out = run(
            "ConvInteger",
            &[],
            vec![
                typed(DType::Uint8, &["1", "1", "5", "5"]),
                typed(DType::Uint8, &["2", "1", "3", "3"]),
            ],
        )
        .unwrap();
        assert_eq!(out[0], Fact::new(DType::Int32, d(&["1", "2", "3", "3"])));
        // QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp; typed by y_zp.
        let scalar = |t| typed(t, &[]);
        let out = run(
            "QLinearConv",
            &[],
            vec![
                typed(DType::Int8, &["1", "1", "5", "5"]),
                scalar(DType::Float32),
                scalar(DType::Int8),
                typed(DType::Int8, &["2", "1", "3", "3"]),
                scalar(DType::Float32),
                scalar(DType::Int8),
                scalar(DType::Float32),
                scalar(DType::Int8),
            ],
        )
        .unwrap();
        assert_eq!(out[0], Fact::new(DType::Int8, d(&["1", "2", "3", "3"])));
    }

    #[test]
    fn quantize_output_types() {
        let q = |attrs: &[AttributeProto], zp: Option<Fact>| {
            let mut inputs = vec![f32(&["N", "4"]), f32(&[])];
            inputs.extend(zp.map(Some));
            run("QuantizeLinear", attrs, inputs).map(|o| o[0].dtype)
        };
        assert_eq!(q(&[], None), Ok(Some(DType::Uint8)));
        assert_eq!(
            q(&[], Some(Fact::new(DType::Int8, vec![]))),
            Ok(Some(DType::Int8))
        );
        assert_eq!(q(&[int("output_dtype", 22)], None), Ok(Some(DType::Int4)));
        assert!(
            q(
                &[int("output_dtype", 22)],
                Some(Fact::new(DType::Int8, vec![]))
            )
            .is_err()
        );
        // Blocked: 4 columns in blocks of 2 need 2 scales per row, not 3.
        let blocked = [int("axis", 1), int("block_size", 2)];
        let r = run(
            "QuantizeLinear",
            &blocked,
            vec![f32(&["3", "4"]), f32(&["3", "3"])],
        );
        assert!(r.is_err());
        let r = run(
            "QuantizeLinear",
            &blocked,
            vec![f32(&["3", "4"]), f32(&["3", "2"])],
        );
        assert_eq!(r.unwrap()[0].shape, Some(d(&["3", "4"])));
    }

    #[test]
    fn dequantize_output_type_by_opset() {
        let x = || vec![typed(DType::Int8, &["5"]), typed(DType::Float16, &[])];
        let t = |opset| run_at("DequantizeLinear", opset, &[], x(), 1).unwrap()[0].dtype;
        assert_eq!(t(13), Some(DType::Float32));
        assert_eq!(t(21), Some(DType::Float16));
        let out = run_at("DequantizeLinear", 23, &[int("output_dtype", 1)], x(), 1).unwrap();
        assert_eq!(out[0].dtype, Some(DType::Float32));
    }

    #[test]
    fn dynamic_quantize_outputs() {
        let out = run_at("DynamicQuantizeLinear", 11, &[], vec![f32(&["N", "3"])], 3).unwrap();
        assert_eq!(out[0], Fact::new(DType::Uint8, d(&["N", "3"])));
        assert_eq!(out[1], Fact::new(DType::Float32, vec![]));
        assert_eq!(out[2], Fact::new(DType::Uint8, vec![]));
    }
}
