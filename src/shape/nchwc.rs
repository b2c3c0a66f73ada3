//! onnxruntime's NCHWc operators (domain `com.microsoft.nchwc`), which its
//! CPU graph optimizer writes into a saved model at the ALL level: Conv and
//! the pools over channel-blocked tensors, an Upsample, and the reorders
//! into and out of that layout.
//!
//! A blocked tensor keeps a 4-d shape, `[N, C, H, W]`, with `C` padded up to
//! a multiple of the block: 8 channels on AVX2, 16 on AVX-512 and ARM64.
//! The file does not say which machine optimized it, but the convolutions'
//! weights were padded to its block. So where the block matters to a
//! ReorderInput (channels that are not a multiple of 16), its padded
//! channels are a size made up here that the convolution reading it
//! settles from its weights, for every use.

use super::conv::{fused_conv, nc_spatial};
use super::ctx::{InferCtx, Result, err, join};
use super::dims::overflow;
use super::fact::Fact;
use super::pooling::{global_pool, pool};
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::Dim;

const NCHWC: &str = "com.microsoft.nchwc";

/// The hint of the sizes ReorderInput makes up (`nchwc_channels_3`), which
/// a convolution may settle.
const PADDED: &str = "nchwc_channels";

/// The channel blocks onnxruntime's kernels use.
const BLOCKS: [u64; 2] = [8, 16];

/// ReorderInput: `[N, C, *S]` (or with `channels_last`, `[N, *S, C]`) into
/// `[N, C', *S]`, `C'` the channels padded to the block.
fn reorder_input(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    let Some(x) = ctx.shape(0).cloned() else {
        ctx.set(0, Fact::tensor(dtype, None));
        return Ok(());
    };
    if x.len() < 2 {
        return err(format!(
            "ReorderInput needs rank 2 or more, got [{}]",
            join(&x)
        ));
    }
    let last = ctx.attr_int_or("channels_last", 0) != 0;
    let (c, spatial) = match last {
        true => (&x[x.len() - 1], &x[1..x.len() - 1]),
        false => (&x[1], &x[2..]),
    };
    let padded = |c: u64, b: u64| c.div_ceil(b).checked_mul(b).ok_or_else(overflow);
    let channels = match c.known() {
        Some(c) => {
            let [small, large] = [padded(c, BLOCKS[0])?, padded(c, BLOCKS[1])?];
            match small == large {
                true => Dim::Known(small),
                false => ctx.fresh_dim(PADDED),
            }
        }
        None => ctx.fresh_dim(PADDED),
    };
    let mut out = vec![x[0].clone(), channels];
    out.extend(spatial.iter().cloned());
    ctx.set(0, Fact::tensor(dtype, Some(out)));
    Ok(())
}

/// ReorderOutput: a blocked `[N, C', *S]` into `channels` of its channels,
/// `[N, channels, *S]` (or `[N, *S, channels]`).
fn reorder_output(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    let channels = ctx.attr_int_or("channels", 0);
    let Ok(channels) = u64::try_from(channels) else {
        return err(format!(
            "ReorderOutput channels {channels} must be positive"
        ));
    };
    if channels == 0 {
        return err("ReorderOutput needs a positive `channels`");
    }
    let Some(x) = ctx.shape(0).cloned() else {
        ctx.set(0, Fact::tensor(dtype, None));
        return Ok(());
    };
    if x.len() < 2 {
        return err(format!(
            "ReorderOutput needs rank 2 or more, got [{}]",
            join(&x)
        ));
    }
    if let Some(c) = x[1].known()
        && channels > c
    {
        return err(format!(
            "ReorderOutput keeps {channels} channels of an input of {c}"
        ));
    }
    let mut out = vec![x[0].clone()];
    let last = ctx.attr_int_or("channels_last", 0) != 0;
    if !last {
        out.push(Dim::Known(channels));
    }
    out.extend(x[2..].iter().cloned());
    if last {
        out.push(Dim::Known(channels));
    }
    ctx.set(0, Fact::tensor(dtype, Some(out)));
    Ok(())
}

/// Conv: as FusedConv (its optional input 3, `Sum`, added to the output);
/// a padded channel count ReorderInput made up is what the weights read,
/// `W[1] * group`.
fn conv(ctx: &mut InferCtx) -> Result<()> {
    if let (Some(x), Some(cg)) = (
        ctx.shape(0).and_then(|x| x.get(1)),
        ctx.shape(1).and_then(|w| w.get(1)).and_then(Dim::known),
    ) && let Dim::Sym(s) = x
        && s.symbols().iter().all(|n| n.starts_with(PADDED))
    {
        let group = u64::try_from(ctx.attr_int_or("group", 1)).unwrap_or(0);
        let c = cg.checked_mul(group).ok_or_else(overflow)?;
        if c > 0 {
            ctx.learn(x, c, "NCHWc Conv input channels")?;
        }
    }
    fused_conv(ctx)
}

/// Upsample: each axis times its integer `scales` entry; without `scales`
/// the sizes are unknown, as in onnxruntime.
fn upsample(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    let (Some(x), Some(scales)) = (nc_spatial(ctx, 0)?, ctx.attr_ints("scales")) else {
        ctx.set(0, Fact::tensor(dtype, None));
        return Ok(());
    };
    if scales.len() != x.len() || scales.iter().any(|&s| s < 1) {
        return err(format!(
            "Upsample scales {scales:?} need one positive integer per axis of [{}]",
            join(&x)
        ));
    }
    let out = x
        .iter()
        .zip(&scales)
        .map(|(d, &s)| {
            let o = d.to_symint().mul(&SymInt::Int(s))?;
            Dim::from_symint(&o).ok_or_else(overflow)
        })
        .collect::<Result<Vec<_>>>()?;
    ctx.set(0, Fact::tensor(dtype, Some(out)));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 8] = [
        ("ReorderInput", reorder_input),
        ("ReorderOutput", reorder_output),
        ("Conv", conv),
        ("MaxPool", pool),
        ("AveragePool", pool),
        ("GlobalMaxPool", global_pool),
        ("GlobalAveragePool", global_pool),
        ("Upsample", upsample),
    ];
    table.iter().map(|(op, f)| (NCHWC, *op, *f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::conv::tests::{d, f32, int, ints, string};
    use super::NCHWC;
    use crate::ir::Dim;
    use crate::proto::AttributeProto;
    use crate::shape::Fact;

    fn run(op: &str, attrs: &[AttributeProto], inputs: Vec<Option<Fact>>) -> Vec<Dim> {
        try_run(op, attrs, inputs).expect("infers")
    }

    fn try_run(
        op: &str,
        attrs: &[AttributeProto],
        inputs: Vec<Option<Fact>>,
    ) -> Result<Vec<Dim>, String> {
        let out = crate::shape::ctx::run_op(NCHWC, op, 1, attrs, inputs, 1).map_err(|e| e.0)?;
        Ok(out[0].shape.clone().unwrap_or_default())
    }

    #[test]
    fn reorders_pad_to_the_block_and_back() {
        // 64 channels are a multiple of either block; channels last moves them.
        let out = run("ReorderInput", &[], vec![f32(&["N", "64", "7", "5"])]);
        assert_eq!(out, d(&["N", "64", "7", "5"]));
        let out = run(
            "ReorderInput",
            &[int("channels_last", 1)],
            vec![f32(&["1", "7", "5", "12"])],
        );
        // 12 pads to 16 whatever the block.
        assert_eq!(out, d(&["1", "16", "7", "5"]));
        // 24 is 24 on AVX2, 32 on AVX-512: a size the convolution settles.
        let out = run("ReorderInput", &[], vec![f32(&["1", "24", "7", "5"])]);
        assert!(matches!(&out[1], Dim::Sym(s) if s.to_string().starts_with("nchwc_channels")));
        let out = run(
            "ReorderOutput",
            &[int("channels", 24)],
            vec![f32(&["1", "32", "7", "5"])],
        );
        assert_eq!(out, d(&["1", "24", "7", "5"]));
        let out = run(
            "ReorderOutput",
            &[int("channels", 24), int("channels_last", 1)],
            vec![f32(&["1", "32", "7", "5"])],
        );
        assert_eq!(out, d(&["1", "7", "5", "24"]));
        for bad in [int("channels", 0), int("channels", 40)] {
            let r = try_run("ReorderOutput", &[bad], vec![f32(&["1", "32", "7", "5"])]);
            assert!(r.is_err(), "{r:?}");
        }
        assert!(try_run("ReorderInput", &[], vec![f32(&["8"])]).is_err());
    }

    #[test]
    fn conv_is_a_fused_conv_over_blocked_channels() {
        // Padded weights [32, 16, 3, 3]: 32 output channels, the Sum alike.
        let attrs = [ints("pads", &[1, 1, 1, 1]), string("activation", "Relu")];
        let inputs = vec![
            f32(&["1", "16", "8", "8"]),
            f32(&["32", "16", "3", "3"]),
            f32(&["32"]),
            f32(&["1", "32", "8", "8"]),
        ];
        assert_eq!(run("Conv", &attrs, inputs), d(&["1", "32", "8", "8"]));
        let inputs = vec![
            f32(&["1", "16", "8", "8"]),
            f32(&["32", "16", "3", "3"]),
            None,
            f32(&["1", "16", "8", "8"]),
        ];
        assert!(
            try_run("Conv", &attrs, inputs).is_err(),
            "Sum of another shape"
        );
        let attrs = [string("activation", "Gelu")];
        let inputs = vec![f32(&["1", "16", "8", "8"]), f32(&["32", "16", "1", "1"])];
        assert!(try_run("Conv", &attrs, inputs).is_err(), "no fused Gelu");
    }

    #[test]
    fn pools_and_upsample_keep_the_blocked_channels() {
        let x = || f32(&["1", "32", "8", "6"]);
        let out = run(
            "MaxPool",
            &[ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])],
            vec![x()],
        );
        assert_eq!(out, d(&["1", "32", "4", "3"]));
        assert_eq!(
            run("GlobalAveragePool", &[], vec![x()]),
            d(&["1", "32", "1", "1"])
        );
        let out = run("Upsample", &[ints("scales", &[1, 1, 2, 3])], vec![x()]);
        assert_eq!(out, d(&["1", "32", "16", "18"]));
        assert!(try_run("Upsample", &[ints("scales", &[1, 2, 3])], vec![x()]).is_err());
        assert!(try_run("Upsample", &[ints("scales", &[1, 1, 0, 2])], vec![x()]).is_err());
    }
}
