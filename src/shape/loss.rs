//! Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

use super::ctx::{InferCtx, Result, err, join};
use super::dims::same_shape;
use super::fact::Fact;
use super::{InferFn, OpEntry};

/// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: scores `[N, C, d...]`
/// and labels `[N, d...]` give a loss per label (`none`) or a scalar;
/// SoftmaxCrossEntropyLoss's optional log_prob is shaped like the scores.
fn loss(ctx: &mut InferCtx) -> Result<()> {
    let scores = ctx.require(0)?.clone();
    let labels = ctx.shape(1).cloned();
    // The labels are the scores without the class axis.
    let per_label = match (&scores.shape, &labels) {
        (Some(s), Some(l)) => {
            if s.len() < 2 {
                return err(format!("{} scores [{}] need a class axis", ctx.op, join(s)));
            }
            let mut without_c = s.clone();
            without_c.remove(1);
            Some(same_shape(
                &without_c,
                l,
                &format!("{} scores without the class axis vs labels", ctx.op),
            )?)
        }
        (Some(s), None) if s.len() >= 2 => {
            let mut without_c = s.clone();
            without_c.remove(1);
            Some(without_c)
        }
        (_, l) => l.clone(),
    };
    let shape = match ctx.attr_string_or("reduction", "mean").as_str() {
        "none" => per_label,
        "mean" | "sum" => Some(Vec::new()),
        other => return err(format!("{} has unknown reduction {other:?}", ctx.op)),
    };
    ctx.set(0, Fact::tensor(scores.dtype, shape));
    ctx.set(1, scores.reshaped(scores.shape.clone()));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 2] = [
        ("SoftmaxCrossEntropyLoss", loss),
        ("NegativeLogLikelihoodLoss", loss),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::conv::tests::*;

    use crate::ir::DType;

    #[test]
    fn losses_by_reduction() {
        let inputs = || vec![f32(&["N", "5", "d"]), typed(DType::Int64, &["N", "d"])];
        let none = run_at(
            "SoftmaxCrossEntropyLoss",
            13,
            &[string("reduction", "none")],
            inputs(),
            2,
        )
        .unwrap();
        assert_eq!(none[0].shape, Some(d(&["N", "d"])));
        assert_eq!(none[1].shape, Some(d(&["N", "5", "d"])));
        let mean = run("NegativeLogLikelihoodLoss", &[], inputs()).unwrap();
        assert_eq!(mean[0].shape, Some(vec![]));
        let bad = vec![f32(&["2", "5", "3"]), typed(DType::Int64, &["2", "4"])];
        assert!(run("NegativeLogLikelihoodLoss", &[], bad).is_err());
        let r = run(
            "NegativeLogLikelihoodLoss",
            &[string("reduction", "avg")],
            inputs(),
        );
        assert!(r.is_err());
    }
}
