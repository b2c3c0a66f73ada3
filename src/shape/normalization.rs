//! Normalization layers: batch, layer, group, instance, RMS, Lp, LRN and
//! mean-variance normalization.

use super::ctx::{InferCtx, Result, axis, dtype_code, err};
use super::dims::like_input;
use super::fact::Fact;
use super::microsoft::simplified_layer_norm;
use super::{InferFn, OpEntry};
use crate::ir::Dim;

/// BatchNormalization: Y is X; the statistics outputs (running mean and
/// variance at 14+, also the saved ones before) are per channel, shaped like
/// the mean input.
fn batch_norm(ctx: &mut InferCtx) -> Result<()> {
    like_input(ctx)?;
    let stat_shape = ctx
        .shape(3)
        .cloned()
        .or_else(|| ctx.shape(0).and_then(|s| s.get(1)).map(|c| vec![c.clone()]));
    let stat = Fact::tensor(ctx.dtype(3).or(ctx.dtype(0)), stat_shape);
    for i in 1..ctx.n_outputs() {
        ctx.set(i, stat.clone());
    }
    Ok(())
}

/// LayerNormalization: Y is X; Mean and InvStdDev keep the axes before
/// `axis` and are 1 after, typed by `stash_type`.
fn layer_norm(ctx: &mut InferCtx) -> Result<()> {
    like_input(ctx)?;
    let stash = dtype_code(ctx.attr_int_or("stash_type", 1))?;
    let shape = match ctx.shape(0) {
        Some(s) => {
            let a = axis(ctx.attr_int_or("axis", -1), s.len())?;
            Some(
                s.iter()
                    .enumerate()
                    .map(|(i, d)| if i < a { d.clone() } else { Dim::Known(1) })
                    .collect(),
            )
        }
        None => None,
    };
    let stat = Fact::tensor(Some(stash), shape);
    ctx.set(1, stat.clone());
    ctx.set(2, stat);
    Ok(())
}

/// GroupNormalization: Y is X; the channels must split into `num_groups`.
fn group_norm(ctx: &mut InferCtx) -> Result<()> {
    like_input(ctx)?;
    let groups = ctx.attr_int_or("num_groups", 1);
    let channels = ctx.shape(0).and_then(|s| s.get(1)).and_then(Dim::known);
    match (u64::try_from(groups), channels) {
        (Ok(0) | Err(_), _) => err(format!(
            "GroupNormalization num_groups {groups} must be positive"
        )),
        (Ok(g), Some(c)) if c % g != 0 => err(format!(
            "GroupNormalization: {c} channels do not split into {g} groups"
        )),
        _ => Ok(()),
    }
}

/// RMSNormalization: X's shape, the scale's type.
fn rms_norm(ctx: &mut InferCtx) -> Result<()> {
    like_input(ctx)?;
    if let Some(s) = ctx.shape(0) {
        axis(ctx.attr_int_or("axis", -1), s.len())?;
    }
    if let (Some(t), Some(o)) = (ctx.dtype(1), ctx.output_mut(0)) {
        o.dtype = Some(t);
    }
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 9] = [
        ("BatchNormalization", batch_norm),
        ("InstanceNormalization", like_input),
        ("LayerNormalization", layer_norm),
        ("GroupNormalization", group_norm),
        ("RMSNormalization", rms_norm),
        ("LpNormalization", like_input),
        ("MeanVarianceNormalization", like_input),
        ("LRN", like_input),
        // onnxruntime registers it in the default domain too.
        ("SimplifiedLayerNormalization", simplified_layer_norm),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::conv::tests::*;

    use crate::ir::DType;

    use crate::shape::Fact;

    #[test]
    fn layer_norm_statistics_shape_and_stash_type() {
        let out = run_at(
            "LayerNormalization",
            17,
            &[int("axis", -2), int("stash_type", 1)],
            vec![
                typed(DType::Float16, &["batch", "seq", "768"]),
                typed(DType::Float16, &["768"]),
            ],
            3,
        )
        .unwrap();
        assert_eq!(
            out[0],
            Fact::new(DType::Float16, d(&["batch", "seq", "768"]))
        );
        assert_eq!(out[1], Fact::new(DType::Float32, d(&["batch", "1", "1"])));
        assert_eq!(out[2], out[1]);
        assert!(
            run(
                "LayerNormalization",
                &[int("axis", 3)],
                vec![f32(&["2", "3"])]
            )
            .is_err()
        );
    }

    #[test]
    fn batch_norm_training_outputs_per_channel() {
        let c = || f32(&["3"]);
        let out = run_at(
            "BatchNormalization",
            15,
            &[int("training_mode", 1)],
            vec![f32(&["N", "3", "H", "W"]), c(), c(), c(), c()],
            3,
        )
        .unwrap();
        assert_eq!(out[0].shape, Some(d(&["N", "3", "H", "W"])));
        assert_eq!(out[2], Fact::new(DType::Float32, d(&["3"])));
    }

    #[test]
    fn group_norm_groups_must_divide_channels() {
        let x = || vec![f32(&["1", "6", "4"]), f32(&["6"]), f32(&["6"])];
        assert!(run("GroupNormalization", &[int("num_groups", 4)], x()).is_err());
        assert_eq!(
            shape0("GroupNormalization", &[int("num_groups", 3)], x()),
            d(&["1", "6", "4"])
        );
    }

    #[test]
    fn rms_norm_takes_the_scale_type() {
        let out = run_at(
            "RMSNormalization",
            23,
            &[],
            vec![f32(&["B", "8"]), typed(DType::Float16, &["8"])],
            1,
        )
        .unwrap();
        assert_eq!(out[0], Fact::new(DType::Float16, d(&["B", "8"])));
    }
}
