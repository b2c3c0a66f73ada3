//! Signal processing: DFT, STFT, the window generators and MelWeightMatrix.

use super::ctx::{InferCtx, Result, axis, err, join};
use super::fact::Fact;
use super::indexing::{dim_or_fresh, dtype_attr, scalar};
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// DFT (17: axis attribute; 20: axis input, default -2): the axis becomes
/// the transform length (halved plus one for a one-sided forward
/// transform); the last dimension is 2 (complex), or 1 for an inverse
/// one-sided transform (real).
fn dft(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.require(0)?.dtype;
    let Some(s) = ctx.shape(0).cloned() else {
        ctx.set(0, Fact::tensor(dtype, None));
        return Ok(());
    };
    let r = s.len();
    if r < 2 {
        return err(format!("DFT input [{}] needs rank 2 or more", join(&s)));
    }
    let a = if ctx.opset >= 20 {
        match ctx.input(2) {
            // `None`: an axis known only at run time.
            Some(_) => scalar(ctx, 2).and_then(|a| a.as_int()),
            None => Some(-2),
        }
    } else {
        Some(ctx.attr_int_or("axis", 1))
    };
    let Some(a) = a else {
        ctx.set(0, Fact::tensor(dtype, None));
        return Ok(());
    };
    // The last dimension holds real/imaginary parts and is no signal axis.
    let a = axis(a, r)?;
    if a == r - 1 {
        return err("DFT axis cannot be the last (complex) dimension");
    }
    let inverse = ctx.attr_int_or("inverse", 0) != 0;
    let onesided = ctx.attr_int_or("onesided", 0) != 0;
    let n = if ctx.input(1).is_some() {
        scalar(ctx, 1)
    } else if onesided && inverse {
        // IRFFT restores the full signal from its one-sided spectrum.
        Some(
            s[a].to_symint()
                .sub(&SymInt::Int(1))?
                .mul(&SymInt::Int(2))?,
        )
    } else {
        Some(s[a].to_symint())
    };
    let n = match n {
        Some(n) if onesided && !inverse => Some(n.floor_div(2)?.add(&SymInt::Int(1))?),
        n => n,
    };
    let mut out = s;
    out[a] = dim_or_fresh(ctx, n.as_ref(), "dft")?;
    out[r - 1] = Dim::Known(if onesided && inverse { 1 } else { 2 });
    ctx.set(0, Fact::tensor(dtype, Some(out)));
    Ok(())
}

/// STFT: `[batch, frames, bins, 2]` with `frames = (len - frame_length) /
/// frame_step + 1` and `bins = frame_length / 2 + 1` when one-sided.
fn stft(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.require(0)?.dtype;
    let Some(s) = ctx.shape(0).cloned() else {
        ctx.set(0, Fact::tensor(dtype, None));
        return Ok(());
    };
    let [batch, len, _] = s.as_slice() else {
        return err(format!("STFT signal [{}] must have rank 3", join(&s)));
    };
    let step = scalar(ctx, 1).and_then(|v| v.as_int());
    if step.is_some_and(|v| v <= 0) {
        return err("STFT frame_step must be positive");
    }
    let frame = match ctx.input(3) {
        Some(_) => scalar(ctx, 3),
        None => ctx.shape(2).and_then(|w| w.first()).map(Dim::to_symint),
    };
    let frames = match (&frame, step) {
        (Some(f), Some(k)) => Some(len.to_symint().sub(f)?.floor_div(k)?.add(&SymInt::Int(1))?),
        _ => None,
    };
    let bins = match &frame {
        Some(f) if ctx.attr_int_or("onesided", 1) != 0 => {
            Some(f.floor_div(2)?.add(&SymInt::Int(1))?)
        }
        f => f.clone(),
    };
    let out = vec![
        batch.clone(),
        dim_or_fresh(ctx, frames.as_ref(), "frames")?,
        dim_or_fresh(ctx, bins.as_ref(), "bins")?,
        Dim::Known(2),
    ];
    ctx.set(0, Fact::tensor(dtype, Some(out)));
    Ok(())
}

/// Blackman/Hamming/Hann windows: `[size]` of `output_datatype`.
fn window(ctx: &mut InferCtx) -> Result<()> {
    let dtype = dtype_attr(ctx, "output_datatype", Some(DType::Float32))?;
    let n = dim_or_fresh(ctx, scalar(ctx, 0).as_ref(), "window")?;
    ctx.set(0, Fact::tensor(dtype, Some(vec![n])));
    Ok(())
}

/// MelWeightMatrix: `[dft_length / 2 + 1, num_mel_bins]`.
fn mel_weight_matrix(ctx: &mut InferCtx) -> Result<()> {
    let dtype = dtype_attr(ctx, "output_datatype", Some(DType::Float32))?;
    let bins = match scalar(ctx, 1) {
        Some(n) => Some(n.floor_div(2)?.add(&SymInt::Int(1))?),
        None => None,
    };
    let shape = vec![
        dim_or_fresh(ctx, bins.as_ref(), "bins")?,
        dim_or_fresh(ctx, scalar(ctx, 0).as_ref(), "mel")?,
    ];
    ctx.set(0, Fact::tensor(dtype, Some(shape)));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 6] = [
        ("DFT", dft),
        ("STFT", stft),
        ("BlackmanWindow", window),
        ("HammingWindow", window),
        ("HannWindow", window),
        ("MelWeightMatrix", mel_weight_matrix),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::indexing::tests::*;

    use crate::dim::SymInt;
    use crate::ir::Dim;

    #[test]
    fn dft_default_axis_and_symbolic_one_sided_length() {
        // Opset 20 without an axis input: axis -2, the signal axis n.
        let x = f32s(vec![sym("b"), sym("n"), k(1)]);
        let out = run("DFT", 20, &[int("onesided", 1)], vec![x.clone()], 1).unwrap();
        let bins = SymInt::sym("n")
            .floor_div(2)
            .unwrap()
            .add(&SymInt::Int(1))
            .unwrap();
        assert_eq!(shape(&out[0]), vec![sym("b"), Dim::Sym(bins), k(2)]);
        // The last (complex) dimension is not a valid axis.
        assert!(run("DFT", 17, &[int("axis", 2)], vec![x], 1).is_err());
    }

    #[test]
    fn stft_frames_follow_a_symbolic_signal_length() {
        let signal = f32s(vec![k(1), sym("L"), k(1)]);
        let step = i64s(vec![], &[4]);
        let len = i64s(vec![], &[16]);
        let out = run("STFT", 17, &[], vec![signal, step, None, len], 1).unwrap();
        let frames = SymInt::sym("L")
            .sub(&SymInt::Int(16))
            .unwrap()
            .floor_div(4)
            .unwrap()
            .add(&SymInt::Int(1))
            .unwrap();
        assert_eq!(shape(&out[0]), vec![k(1), Dim::Sym(frames), k(9), k(2)]);
    }
}
