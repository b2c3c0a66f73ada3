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
