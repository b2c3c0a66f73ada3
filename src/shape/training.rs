//! The ai.onnx.preview.training operators: optimizer steps and Gradient.

use super::ctx::{InferCtx, Result, err};
use super::fact::Fact;
use super::{InferFn, OpEntry};

/// Adagrad, Momentum, Adam: inputs R, T, then groups of n tensors (X, G and
/// one or two state tensors); every output has the shape of its X.
fn optimizer(ctx: &mut InferCtx) -> Result<()> {
    let groups = if ctx.op == "Adam" { 4 } else { 3 };
    let rest = ctx.n_inputs().saturating_sub(2);
    if rest == 0 || !rest.is_multiple_of(groups) {
        return err(format!(
            "{} takes R, T and {groups} groups of tensors, not {} inputs",
            ctx.op,
            ctx.n_inputs()
        ));
    }
    let n = rest / groups;
    for j in 0..ctx.n_outputs() {
        // Output j updates X (or the state of) tensor j mod n.
        let f = ctx.input(2 + j % n).cloned().unwrap_or_else(Fact::unknown);
        ctx.set(j, f.reshaped(f.shape.clone()));
    }
    Ok(())
}

/// Gradient: output i is the gradient with respect to `xs[i]`, whose value
/// is input i, so it has that input's type and shape.
fn gradient(ctx: &mut InferCtx) -> Result<()> {
    if let Some(xs) = ctx.attr_strings("xs")
        && xs.len() < ctx.n_outputs()
    {
        return err(format!(
            "Gradient has {} outputs for {} tensors in xs",
            ctx.n_outputs(),
            xs.len()
        ));
    }
    for i in 0..ctx.n_outputs() {
        let f = ctx.input(i).cloned().unwrap_or_else(Fact::unknown);
        ctx.set(i, f.reshaped(f.shape.clone()));
    }
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 4] = [
        ("Adagrad", optimizer),
        ("Gradient", gradient),
        ("Momentum", optimizer),
        ("Adam", optimizer),
    ];
    table
        .iter()
        .map(|(op, f)| ("ai.onnx.preview.training", *op, *f))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::indexing::tests::*;
    use crate::shape::ctx::run_op as run_in;

    use crate::proto::AttributeProto;

    #[test]
    fn optimizers_copy_each_tensor_shape_and_check_input_count() {
        let r = f32s(vec![]);
        let t = i64s(vec![], &[0]);
        let x = f32s(vec![sym("p")]);
        let inputs = vec![r.clone(), t.clone(), x.clone(), x.clone(), x.clone()];
        let out = run_in("ai.onnx.preview.training", "Adagrad", 1, &[], inputs, 2).unwrap();
        assert_eq!(shape(&out[1]), vec![sym("p")]);
        // Adam needs four tensors per parameter.
        let inputs = vec![r, t, x.clone(), x.clone(), x];
        assert!(run_in("ai.onnx.preview.training", "Adam", 1, &[], inputs, 3).is_err());
    }

    #[test]
    fn gradient_outputs_take_their_xs_shapes() {
        let a = f32s(vec![sym("n"), k(3)]);
        let b = f32s(vec![k(3)]);
        let c = f32s(vec![k(7)]);
        let attrs = [AttributeProto {
            strings: vec![
                "A".as_bytes().to_vec().into(),
                "B".as_bytes().to_vec().into(),
            ],
            ..attr("xs")
        }];
        let out = run_in(
            "ai.onnx.preview.training",
            "Gradient",
            1,
            &attrs,
            vec![a, b, c],
            2,
        )
        .unwrap();
        assert_eq!(shape(&out[0]), vec![sym("n"), k(3)]);
        assert_eq!(shape(&out[1]), vec![k(3)]);
    }
}
