//! Predicted time on a calibrated device: each layer timed by its group of
//! the device's time model ([`crate::rules::time`]) from its roofline times;
//! a layer the runtime runs inside the kernel of the layer its input comes
//! from is timed by the fused group (no kernel cost of its own).

use std::borrow::Cow;

use super::{CostReport, LayerCost};
use crate::rules::time::{LayerKind, TimeModel};

/// A layer's op as time groups name it (`Conv`, `com.microsoft::Attention`).
pub fn op_of(l: &LayerCost) -> Cow<'_, str> {
    if l.domain.is_empty() {
        Cow::Borrowed(l.op.as_str())
    } else {
        Cow::Owned(crate::ir::qualified(&l.domain, &l.op))
    }
}

/// What each layer is, for the time model.
fn kinds(report: &CostReport) -> Vec<(Cow<'_, str>, Option<&str>, &str)> {
    report
        .layers
        .iter()
        .map(|l| {
            (
                op_of(l),
                l.class.as_deref(),
                l.category.as_deref().unwrap_or(""),
            )
        })
        .collect()
}

fn view<'a>(k: &'a (Cow<'_, str>, Option<&'a str>, &'a str)) -> LayerKind<'a> {
    LayerKind {
        op: &k.0,
        class: k.1,
        category: k.2,
    }
}

/// Per layer: whether the time model runs it inside the kernel of the
/// layer its input comes from.
pub fn fused(report: &CostReport, model: &TimeModel) -> Vec<bool> {
    let kinds = kinds(report);
    report
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            l.input_from
                .is_some_and(|p| model.is_fused(&view(&kinds[i]), &view(&kinds[p as usize])))
        })
        .collect()
}

/// Each layer's predicted time and the index of the group that timed it,
/// from its roofline times `(compute_s, memory_s)`.
pub fn predict(report: &CostReport, model: &TimeModel, times: &[(f64, f64)]) -> Vec<(f64, usize)> {
    let kinds = kinds(report);
    let fused = fused(report, model);
    report
        .layers
        .iter()
        .enumerate()
        .zip(times)
        .map(|((i, l), &(c, m))| {
            let g = model.group(&view(&kinds[i]), fused[i]);
            let at = model
                .groups
                .iter()
                .position(|x| std::ptr::eq(x, g))
                .unwrap_or(0);
            // A layer run several times (a loop body's), or that calls its
            // kernel several times (a batched matrix product), pays the
            // kernel cost each time; its roofline times are those of all.
            let kernels = l.runs.max(1).saturating_mul(l.calls.max(1));
            let extra = g.kernel_s * (kernels - 1) as f64;
            (g.time(c, m) + extra, at)
        })
        .collect()
}
