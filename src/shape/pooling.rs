//! Pooling: MaxPool, AveragePool, LpPool, their global forms, MaxUnpool, and
//! the region-of-interest pools (RoiAlign, MaxRoiPool).

use super::conv::{Window, nc_spatial, window_dims};
use super::ctx::{InferCtx, Result, dim, err, join};
use super::fact::Fact;
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// MaxPool, AveragePool, LpPool: `[N, C, out...]`; MaxPool's optional
/// Indices output has the same shape, int64.
pub(super) fn pool(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    if !ctx.has_attr("kernel_shape") {
        return err(format!("{} needs kernel_shape", ctx.op));
    }
    let shape = match nc_spatial(ctx, 0)? {
        Some(x) => {
            let win = Window::read(ctx, x.len() - 2, Vec::new())?;
            let mut out = x[..2].to_vec();
            out.extend(window_dims(ctx, &win, &x[2..])?);
            Some(out)
        }
        None => None,
    };
    ctx.set(0, Fact::tensor(dtype, shape.clone()));
    ctx.set(1, Fact::tensor(Some(DType::Int64), shape));
    Ok(())
}

/// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: spatial sizes become 1.
pub(super) fn global_pool(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let shape = match &x.shape {
        Some(s) if s.len() < 2 => {
            return err(format!(
                "{} needs an input of rank 2 or more, got [{}]",
                ctx.op,
                join(s)
            ));
        }
        Some(s) => Some(
            s.iter()
                .enumerate()
                .map(|(i, d)| if i < 2 { d.clone() } else { Dim::Known(1) })
                .collect(),
        ),
        None => None,
    };
    ctx.set(0, x.reshaped(shape));
    Ok(())
}

/// MaxUnpool: `output_shape` (input 2) when given, else
/// `(in - 1) * s + k - pads` per axis.
fn max_unpool(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    let x = nc_spatial(ctx, 0)?;
    if ctx.input(2).is_some() {
        let shape = match (ctx.ints(2), &x) {
            (Some(v), _) => {
                if let Some(x) = &x
                    && v.len() != x.len()
                {
                    return err(format!(
                        "MaxUnpool output_shape has {} values for an input of rank {}",
                        v.len(),
                        x.len()
                    ));
                }
                Some(v.iter().map(dim).collect::<Result<Vec<_>>>()?)
            }
            // The sizes are data: keep N and C, the rest are run-time sizes.
            (None, Some(x)) => Some(
                x.iter()
                    .enumerate()
                    .map(|(i, d)| {
                        if i < 2 {
                            d.clone()
                        } else {
                            ctx.fresh_dim("unpool")
                        }
                    })
                    .collect(),
            ),
            (None, None) => None,
        };
        ctx.set(0, Fact::tensor(dtype, shape));
        return Ok(());
    }
    if !ctx.has_attr("kernel_shape") {
        return err("MaxUnpool needs kernel_shape");
    }
    let shape = match x {
        Some(x) => {
            let win = Window::read(ctx, x.len() - 2, Vec::new())?;
            let mut out = x[..2].to_vec();
            for (i, d) in x[2..].iter().enumerate() {
                // Unpooling is a transposed pooling without output padding.
                let o = win.transposed_dim(i, d, 0)?;
                out.push(o.unwrap_or_else(|| ctx.fresh_dim("unpool")));
            }
            Some(out)
        }
        None => None,
    };
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// RoiAlign and MaxRoiPool: `[num_rois, C, out_h, out_w]`.
fn roi_pool(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.require(0)?.dtype;
    let (h, w) = if ctx.op == "MaxRoiPool" {
        match ctx.attr_ints("pooled_shape").as_deref() {
            Some(&[h, w]) => (h, w),
            _ => return err("MaxRoiPool needs `pooled_shape` with two entries"),
        }
    } else {
        (
            ctx.attr_int_or("output_height", 1),
            ctx.attr_int_or("output_width", 1),
        )
    };
    let rois = ctx
        .shape(1)
        .and_then(|s| s.first())
        .or_else(|| ctx.shape(2).and_then(|s| s.first()))
        .cloned()
        .unwrap_or_else(|| ctx.fresh_dim("rois"));
    let c = match ctx.shape(0) {
        Some(s) if s.len() == 4 => s[1].clone(),
        Some(s) => return err(format!("X [{}] must have rank 4", join(s))),
        None => ctx.fresh_dim("channels"),
    };
    let shape = vec![rois, c, dim(&SymInt::Int(h))?, dim(&SymInt::Int(w))?];
    ctx.set(0, Fact::tensor(dtype, Some(shape)));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 9] = [
        ("MaxPool", pool),
        ("AveragePool", pool),
        ("LpPool", pool),
        ("GlobalAveragePool", global_pool),
        ("GlobalMaxPool", global_pool),
        ("GlobalLpPool", global_pool),
        ("MaxUnpool", max_unpool),
        ("RoiAlign", roi_pool),
        ("MaxRoiPool", roi_pool),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::conv::tests::*;
    use crate::dim::SymInt;
    use crate::ir::DType;

    use crate::shape::Fact;

    #[test]
    fn pool_ceil_mode_drops_a_window_starting_in_the_padding() {
        // ONNX's test_maxpool_2d_ceil_output_size_reduce_by_one: a 2x2 input,
        // kernel 1, stride 2: ceil(1 / 2) + 1 = 2 windows, but the second would
        // start past the input, so 1.
        let out = shape0(
            "MaxPool",
            &[
                ints("kernel_shape", &[1, 1]),
                ints("strides", &[2, 2]),
                int("ceil_mode", 1),
            ],
            vec![f32(&["1", "1", "2", "2"])],
        );
        assert_eq!(out, d(&["1", "1", "1", "1"]));
    }

    #[test]
    fn maxpool_indices_are_int64() {
        let out = run_at(
            "MaxPool",
            12,
            &[ints("kernel_shape", &[2, 2])],
            vec![f32(&["N", "C", "4", "4"])],
            2,
        )
        .unwrap();
        assert_eq!(out[1], Fact::new(DType::Int64, d(&["N", "C", "3", "3"])));
    }

    #[test]
    fn window_errors_do_not_panic() {
        let x = || vec![f32(&["1", "1", "4"])];
        // No kernel_shape.
        assert!(run("AveragePool", &[], x()).is_err());
        // Kernel larger than the input.
        assert!(run("AveragePool", &[ints("kernel_shape", &[5])], x()).is_err());
        // Wrong number of pads, negative pads, zero stride.
        for bad in [
            ints("pads", &[1]),
            ints("pads", &[-1, 0]),
            ints("strides", &[0]),
        ] {
            assert!(run("MaxPool", &[ints("kernel_shape", &[2]), bad], x()).is_err());
        }
        // Dilation that overflows 64 bits.
        let huge = [ints("kernel_shape", &[i64::MAX]), ints("dilations", &[4])];
        assert!(run("MaxPool", &huge, x()).is_err());
        // Rank too small for N, C, spatial.
        assert!(run("MaxPool", &[ints("kernel_shape", &[2])], vec![f32(&["4"])]).is_err());
    }

    #[test]
    fn global_pool_keeps_batch_and_channels() {
        let out = shape0("GlobalAveragePool", &[], vec![f32(&["N", "64", "H", "W"])]);
        assert_eq!(out, d(&["N", "64", "1", "1"]));
    }

    #[test]
    fn max_unpool_output_shape_folds_from_values() {
        let shape = Fact::ints_1d(vec![
            sym("N"),
            SymInt::Int(1),
            SymInt::Int(5),
            SymInt::Int(5),
        ]);
        let out = shape0(
            "MaxUnpool",
            &[ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])],
            vec![
                f32(&["N", "1", "2", "2"]),
                typed(DType::Int64, &["N", "1", "2", "2"]),
                Some(shape),
            ],
        );
        assert_eq!(out, d(&["N", "1", "5", "5"]));
        // Without output_shape: (2 - 1) * 2 + 2 = 4.
        let out = shape0(
            "MaxUnpool",
            &[ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])],
            vec![
                f32(&["N", "1", "2", "2"]),
                typed(DType::Int64, &["N", "1", "2", "2"]),
            ],
        );
        assert_eq!(out, d(&["N", "1", "4", "4"]));
    }
}
