//! Activations: same-shape element-wise functions (Relu, Sigmoid, Softmax...),
//! PRelu with its broadcast slope, and SwiGLU.

use super::ctx::{InferCtx, Result, broadcast};
use super::dims::{like_input, same_shape};
use super::fact::Fact;
use super::math::unary_fold;
use super::{InferFn, OpEntry};

/// SwiGLU: gate and value have identical shapes (no broadcasting).
fn swiglu(ctx: &mut InferCtx) -> Result<()> {
    let a = ctx.require(0)?.clone();
    let shape = match (&a.shape, ctx.shape(1)) {
        (Some(x), Some(y)) => Some(same_shape(x, y, "SwiGLU gate vs value")?),
        (s, o) => s.clone().or(o.cloned()),
    };
    ctx.set(0, Fact::tensor(a.dtype.or(ctx.dtype(1)), shape));
    Ok(())
}

/// PRelu: the slope broadcasts to X; the result is X's shape and type.
fn prelu(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    if let (Some(a), Some(b)) = (ctx.shape(0), ctx.shape(1)) {
        // Before opset 7 a 1-D slope of the channel count applies per
        // channel (axis 1), as PyTorch's old exports rely on.
        let per_channel = ctx.opset < 7 && b.len() == 1 && a.get(1) == b.first();
        if !per_channel {
            broadcast(a, b)?;
        }
    }
    ctx.set(0, x.reshaped(x.shape.clone()));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 21] = [
        ("Celu", like_input),
        ("Elu", like_input),
        ("Gelu", like_input),
        ("HardSigmoid", like_input),
        ("HardSwish", like_input),
        ("Hardmax", like_input),
        ("LeakyRelu", like_input),
        ("LogSoftmax", like_input),
        ("Mish", like_input),
        ("Selu", like_input),
        ("Shrink", like_input),
        ("Sigmoid", like_input),
        ("Softmax", like_input),
        ("Softplus", like_input),
        ("Softsign", like_input),
        ("Tanh", like_input),
        ("ThresholdedRelu", like_input),
        ("Swish", like_input),
        ("Relu", unary_fold),
        ("PRelu", prelu),
        ("SwiGLU", swiglu),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::conv::tests::*;
    use super::super::tensor::tests as tt;

    #[test]
    fn swiglu_shapes_must_match() {
        assert_eq!(
            shape0("SwiGLU", &[], vec![f32(&["B", "4"]), f32(&["3", "4"])]),
            d(&["3", "4"])
        );
        assert!(run("SwiGLU", &[], vec![f32(&["2", "4"]), f32(&["4"])]).is_err());
    }

    #[test]
    fn prelu_before_opset_7_takes_a_slope_per_channel() {
        // [2, 3, 4] with a slope of 3: per channel at opset 6, and not a
        // numpy broadcast ([3] against the last axis of 4) from opset 7.
        let x = || tt::f32(vec![tt::k(2), tt::k(3), tt::k(4)]);
        let out = tt::one("PRelu", 6, &[], vec![x(), tt::f32(vec![tt::k(3)])]);
        assert_eq!(out.shape, Some(vec![tt::k(2), tt::k(3), tt::k(4)]));
        assert!(tt::run("PRelu", 7, &[], vec![x(), tt::f32(vec![tt::k(3)])], 1).is_err());
        // A slope of 4 broadcasts at any opset.
        let out = tt::one("PRelu", 9, &[], vec![x(), tt::f32(vec![tt::k(4)])]);
        assert_eq!(out.shape, Some(vec![tt::k(2), tt::k(3), tt::k(4)]));
    }
}
