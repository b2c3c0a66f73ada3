//! Resampling: Resize and Upsample, GridSample and AffineGrid.

use super::ctx::{InferCtx, Result, axis, dim, err, join};
use super::dims::{believable_rank, fresh_dims};
use super::fact::Fact;
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::Dim;

/// `floor(d * scale)`, symbolic when the scale is a simple fraction.
fn scaled_dim(ctx: &InferCtx, d: &Dim, scale: f64) -> Result<Dim> {
    if !scale.is_finite() || scale < 0.0 {
        return err(format!(
            "resize scale {scale} must be finite and non-negative"
        ));
    }
    match d {
        // In float64, as the reference implementation computes it.
        Dim::Known(n) => {
            let v = (*n as f64 * scale).floor();
            if v >= u64::MAX as f64 {
                return err("resized dimension overflows");
            }
            Ok(Dim::Known(v as u64))
        }
        Dim::Sym(s) => {
            // A float scale near p/q (2, 0.5, 1.5...) stays exact:
            // floor(s*p/q). A float just below p/q (0.7 as f32) floors
            // multiples of q one lower, which is floor((s*p - 1)/q).
            for q in 1..=16i64 {
                let exact = scale * q as f64;
                let p = exact.round();
                if (exact - p).abs() < 1e-6 * q as f64 && p < i64::MAX as f64 {
                    let mut n = s.mul(&SymInt::Int(p as i64))?;
                    if exact < p {
                        n = n.sub(&SymInt::Int(1))?;
                    }
                    return dim(&n.floor_div(q)?);
                }
            }
            Ok(ctx.fresh_dim("resize"))
        }
    }
}

/// Sizes under `keep_aspect_ratio_policy` not_larger / not_smaller: one
/// scale for every listed axis, the output rounded half up.
fn aspect_sizes(
    ctx: &InferCtx,
    in_shape: &[Dim],
    axes: &[usize],
    sizes: &[SymInt],
    larger: bool,
) -> Result<Vec<Option<Dim>>> {
    let ratios: Option<Vec<f64>> = axes
        .iter()
        .zip(sizes)
        .map(|(&a, s)| Some(s.as_int()? as f64 / in_shape.get(a)?.known()? as f64))
        .collect();
    let Some(ratios) = ratios else {
        return Ok(axes.iter().map(|_| Some(ctx.fresh_dim("resize"))).collect());
    };
    let pick = if larger { f64::max } else { f64::min };
    let scale = ratios.iter().copied().reduce(pick).unwrap_or(1.0);
    axes.iter()
        .map(|&a| {
            let n = in_shape.get(a).and_then(Dim::known).unwrap_or(0);
            let v = (scale * n as f64 + 0.5).floor();
            if !v.is_finite() || v < 0.0 {
                return err(format!("resize gives dimension {v}"));
            }
            Ok(Some(Dim::Known(v as u64)))
        })
        .collect()
}

/// Whether optional input `i` is given and not an empty placeholder.
fn given(ctx: &InferCtx, i: usize) -> bool {
    ctx.input(i)
        .is_some_and(|f| f.elements() != Some(SymInt::Int(0)))
}

/// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9): sizes when given,
/// else `floor(d * scale)`; axes (18+) select which dimensions the scales
/// or sizes refer to.
fn resize(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let Some(in_shape) = x.shape.clone() else {
        // Sizes for every axis (no axes, stretched) are the output shape
        // whatever the input's.
        let all = ctx.op == "Resize"
            && ctx.opset >= 11
            && given(ctx, 3)
            && !(ctx.opset >= 18 && ctx.has_attr("axes"))
            && ctx.attr_string_or("keep_aspect_ratio_policy", "stretch") == "stretch";
        let shape = match ctx.ints(3) {
            Some(sizes) if all => Some(sizes.iter().map(dim).collect::<Result<Vec<_>>>()?),
            _ => None,
        };
        ctx.set(0, Fact::tensor(x.dtype, shape));
        return Ok(());
    };
    let r = in_shape.len();
    let axes: Vec<usize> = match ctx.attr_ints("axes") {
        Some(a) if ctx.opset >= 18 => a.iter().map(|&a| axis(a, r)).collect::<Result<_>>()?,
        _ => (0..r).collect(),
    };
    // Where the scales live: an attribute (Upsample-7), input 1 (Upsample-9,
    // Resize-10) or input 2 (Resize-11+, with sizes as input 3).
    let (scales_at, sizes_at) = match (ctx.op, ctx.opset) {
        ("Upsample", ..=8) => (None, None),
        ("Upsample", _) | (_, ..=10) => (Some(1), None),
        _ => (Some(2), Some(3)),
    };
    let listed = |n: usize| -> Result<()> {
        if n != axes.len() {
            return err(format!(
                "{} has {n} entries for {} axes",
                if sizes_at.is_some_and(|i| given(ctx, i)) {
                    "sizes"
                } else {
                    "scales"
                },
                axes.len()
            ));
        }
        Ok(())
    };
    let new: Vec<Option<Dim>> = if let Some(i) = sizes_at.filter(|&i| given(ctx, i)) {
        match ctx.ints(i) {
            Some(sizes) => {
                listed(sizes.len())?;
                match ctx
                    .attr_string_or("keep_aspect_ratio_policy", "stretch")
                    .as_str()
                {
                    "not_larger" => aspect_sizes(ctx, &in_shape, &axes, &sizes, false)?,
                    "not_smaller" => aspect_sizes(ctx, &in_shape, &axes, &sizes, true)?,
                    _ => sizes
                        .iter()
                        .map(|s| dim(s).map(Some))
                        .collect::<Result<_>>()?,
                }
            }
            None => axes.iter().map(|_| None).collect(),
        }
    } else {
        let scales = match scales_at {
            None => ctx.attr_floats("scales"),
            Some(i) => ctx.floats(i),
        };
        match scales {
            Some(sc) => {
                listed(sc.len())?;
                axes.iter()
                    .zip(&sc)
                    .map(|(&a, &s)| match in_shape.get(a) {
                        Some(d) => scaled_dim(ctx, d, s).map(Some),
                        None => Ok(None),
                    })
                    .collect::<Result<_>>()?
            }
            None => axes.iter().map(|_| None).collect(),
        }
    };
    let mut out = in_shape;
    for (&a, d) in axes.iter().zip(new) {
        let d = d.unwrap_or_else(|| ctx.fresh_dim("resize"));
        if let Some(slot) = out.get_mut(a) {
            *slot = d;
        }
    }
    ctx.set(0, Fact::tensor(x.dtype, Some(out)));
    Ok(())
}

/// GridSample: `[N, C, *grid.shape[1:-1]]`.
fn grid_sample(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.require(0)?.dtype;
    let mut shape = None;
    if let (Some(x), Some(g)) = (ctx.shape(0), ctx.shape(1)) {
        if x.len() < 3 || g.len() != x.len() {
            return err(format!(
                "X [{}] and grid [{}] must have the same rank, 3 or more",
                join(x),
                join(g)
            ));
        }
        let spatial = x.len() - 2;
        if let Some(last) = g.last().and_then(Dim::known)
            && last != spatial as u64
        {
            return err(format!(
                "grid's last dimension is {last}, X has {spatial} spatial dimensions"
            ));
        }
        let mut s = x[..2].to_vec();
        s.extend_from_slice(&g[1..g.len() - 1]);
        shape = Some(s);
    }
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// AffineGrid: size `[N, C, H, W]` gives `[N, H, W, 2]`, `[N, C, D, H, W]`
/// gives `[N, D, H, W, 3]`.
fn affine_grid(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.require(0)?.dtype;
    let size = match ctx.ints(1) {
        Some(v) => Some(v.iter().map(dim).collect::<Result<Vec<_>>>()?),
        // The size's length still gives the rank.
        None => ctx
            .shape(1)
            .and_then(|s| s.first())
            .and_then(Dim::known)
            .and_then(believable_rank)
            .map(|n| fresh_dims(ctx, n, "grid")),
    };
    let shape = match size {
        None => None,
        Some(s) if s.len() == 4 || s.len() == 5 => {
            let mut out = vec![s[0].clone()];
            out.extend_from_slice(&s[2..]);
            out.push(Dim::Known(s.len() as u64 - 2));
            Some(out)
        }
        Some(s) => {
            return err(format!(
                "AffineGrid size has {} entries, not 4 or 5",
                s.len()
            ));
        }
    };
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 4] = [
        ("Resize", resize),
        ("Upsample", resize),
        ("GridSample", grid_sample),
        ("AffineGrid", affine_grid),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}
