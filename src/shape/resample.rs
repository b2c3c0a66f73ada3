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

#[cfg(test)]
mod tests {
    use super::super::indexing::tests::*;

    use crate::dim::SymInt;
    use crate::ir::{DType, Dim};

    use crate::shape::Fact;

    #[test]
    fn resize_scales_stay_symbolic_and_sizes_win_over_empty_scales() {
        let x = f32s(vec![sym("n"), k(3), sym("h"), k(5)]);
        // Resize-13: floor(h * 2) = 2h; floor(5 * 0.5) = 2.
        let out = run(
            "Resize",
            13,
            &[],
            vec![x.clone(), None, floats_value(&[1.0, 1.0, 2.0, 0.5])],
            1,
        )
        .unwrap();
        let two_h = Dim::Sym(SymInt::sym("h").mul(&SymInt::Int(2)).unwrap());
        assert_eq!(shape(&out[0]), vec![sym("n"), k(3), two_h, k(2)]);
        // Resize-10 keeps scales at input 1; 0.5 on a symbol is floor(h/2).
        let out = run(
            "Resize",
            10,
            &[],
            vec![x.clone(), floats_value(&[1.0, 1.0, 0.5, 1.0])],
            1,
        )
        .unwrap();
        let half_h = Dim::Sym(SymInt::sym("h").floor_div(2).unwrap());
        assert_eq!(shape(&out[0])[2], half_h);
        // Resize-11 with an empty scales placeholder: the sizes apply.
        let out = run(
            "Resize",
            11,
            &[],
            vec![
                x.clone(),
                None,
                floats_value(&[]),
                i64s(vec![k(4)], &[1, 3, 7, 9]),
            ],
            1,
        )
        .unwrap();
        assert_eq!(shape(&out[0]), vec![k(1), k(3), k(7), k(9)]);
        // Scales that do not match the rank are an error.
        assert!(run("Resize", 13, &[], vec![x, None, floats_value(&[2.0])], 1).is_err());
    }

    #[test]
    fn resize_sizes_give_the_shape_of_an_unknown_input() {
        let x = Some(Fact::tensor(Some(DType::Float32), None));
        let sizes = i64s(vec![k(4)], &[1, 3, 8, 8]);
        let out = run("Resize", 13, &[], vec![x.clone(), None, None, sizes], 1).unwrap();
        assert_eq!(shape(&out[0]), vec![k(1), k(3), k(8), k(8)]);
        // An empty sizes placeholder says nothing.
        let out = run(
            "Resize",
            13,
            &[],
            vec![x, None, None, i64s(vec![k(0)], &[])],
            1,
        )
        .unwrap();
        assert_eq!(out[0].shape, None);
    }

    #[test]
    fn resize_scale_just_below_a_fraction_floors_like_known_sizes() {
        // 0.7 as f32 is 0.69999998...: floor(10 * 0.7f32) = 6, not 7. The
        // symbolic form must agree when the symbol is 10.
        let scale = f64::from(0.7f32);
        let x = f32s(vec![sym("h")]);
        let out = run("Resize", 13, &[], vec![x, None, floats_value(&[scale])], 1).unwrap();
        let Dim::Sym(h) = &shape(&out[0])[0] else {
            panic!("symbolic expected")
        };
        let at = |v: i64| h.eval_with(&|_| Some(v)).unwrap();
        for v in [1, 5, 9, 10, 11, 20, 33] {
            assert_eq!(at(v), (v as f64 * scale).floor() as i64, "h = {v}");
        }
    }

    #[test]
    fn resize_axes_and_aspect_policy() {
        let x = f32s(vec![k(1), k(1), k(2), k(4)]);
        let sizes = i64s(vec![k(2)], &[1, 3]);
        // not_larger: scale = min(1/2, 3/4) = 0.5 -> [1, 2].
        let attrs = [
            ints("axes", &[2, 3]),
            string("keep_aspect_ratio_policy", "not_larger"),
        ];
        let out = run("Resize", 18, &attrs, vec![x.clone(), None, None, sizes], 1).unwrap();
        assert_eq!(shape(&out[0]), vec![k(1), k(1), k(1), k(2)]);
        // Upsample-7 keeps its scales in an attribute.
        let out = run(
            "Upsample",
            7,
            &[floats("scales", &[1.0, 1.0, 2.0, 3.0])],
            vec![x],
            1,
        )
        .unwrap();
        assert_eq!(shape(&out[0]), vec![k(1), k(1), k(4), k(12)]);
    }

    #[test]
    fn affine_grid_takes_a_symbolic_size() {
        // size from Shape: [N, 3, H, W] -> grid [N, H, W, 2].
        let size = Some(Fact::ints_1d(vec![
            SymInt::sym("N"),
            SymInt::Int(3),
            SymInt::sym("H"),
            SymInt::sym("W"),
        ]));
        let theta = f32s(vec![sym("N"), k(2), k(3)]);
        let out = run("AffineGrid", 20, &[], vec![theta, size], 1).unwrap();
        assert_eq!(shape(&out[0]), vec![sym("N"), sym("H"), sym("W"), k(2)]);
    }
}
