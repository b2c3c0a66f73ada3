//! Predicted time: a layer whose rule has a `time:` formula is timed by it
//! ([`crate::rules::time_formula`]), on any device; on a calibrated device,
//! every other layer by its group of the device's time model
//! ([`crate::rules::time`]) from its roofline times. A layer the runtime
//! runs inside the kernel of the layer its input comes from is timed by the
//! fused group (no kernel cost of its own).

use std::borrow::Cow;

use super::{CostReport, LayerCost, LayerTime};
use crate::error::Result;
use crate::rules::Origin;
use crate::rules::devices::Device;
use crate::rules::time::{LayerKind, TimeGroup, TimeModel};
use crate::rules::time_formula::TimeFigures;

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

/// A layer's predicted time, the time group whose figures it took (on a
/// calibrated device) and, when its rule's `time:` formula gave it, where
/// that formula is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub seconds: f64,
    pub group: Option<usize>,
    pub by_rule: Option<Origin>,
}

/// Each layer's predicted time, by precedence: its rule's `time:` formula,
/// else the device's time model, else none. `times` are the layers'
/// roofline times on `device`.
pub fn predict(
    report: &CostReport,
    device: &Device,
    times: &[LayerTime],
) -> Result<Vec<Option<Prediction>>> {
    let model = device.time.as_ref();
    // Without a time model, only the layers with a formula need a look.
    let kinds = model.map(|_| kinds(report));
    let fused = model.map(|m| fused(report, m));
    let mut out = Vec::with_capacity(report.layers.len());
    for ((i, l), t) in report.layers.iter().enumerate().zip(times) {
        let group = model.zip(kinds.as_ref()).map(|(m, kinds)| {
            let g = m.group(&view(&kinds[i]), fused.as_ref().is_some_and(|f| f[i]));
            let at = m
                .groups
                .iter()
                .position(|x| std::ptr::eq(x, g))
                .unwrap_or(0);
            (g, at)
        });
        // A layer run several times (a loop body's), or that calls its
        // kernel several times (a batched matrix product), pays the
        // kernel cost each time; its roofline times are those of all.
        let runs = l.runs.max(1);
        let p = match (&l.time, group) {
            (Some(inputs), g) => {
                let figures = per_run(l, t, device, g.map(|(g, _)| g), runs);
                let one = inputs
                    .seconds(&figures)
                    .map_err(|e| super::layer_error(&l.name, &l.op, e))?;
                Some(Prediction {
                    seconds: one * runs as f64,
                    group: g.map(|(_, at)| at),
                    by_rule: Some(inputs.formula.origin.clone()),
                })
            }
            (None, Some((g, at))) => {
                let kernels = runs.saturating_mul(l.calls.max(1));
                let extra = g.kernel_s * (kernels - 1) as f64;
                Some(Prediction {
                    seconds: g.time(t.compute_s, t.memory_s) + extra,
                    group: Some(at),
                    by_rule: None,
                })
            }
            (None, None) => None,
        };
        out.push(p);
    }
    Ok(out)
}

/// What a time formula reads of one run of a layer: its figures, its
/// roofline times, and its time group's efficiencies (1, 1 and no kernel
/// cost on a device without a time model).
fn per_run(
    l: &LayerCost,
    t: &LayerTime,
    device: &Device,
    group: Option<&TimeGroup>,
    runs: u64,
) -> TimeFigures {
    let eff = |e: Option<f64>| e.unwrap_or(f64::INFINITY);
    TimeFigures {
        flops: l.flops / runs,
        work: t.work(l) / runs,
        iops: l.iops / runs,
        mread: l.mread / runs,
        mwrite: l.mwrite / runs,
        calls: l.calls,
        peak: t.peak,
        bandwidth: device.bandwidth,
        compute_s: t.compute_s / runs as f64,
        memory_s: t.memory_s / runs as f64,
        compute_eff: group.map_or(1.0, |g| eff(g.compute)),
        memory_eff: group.map_or(1.0, |g| eff(g.memory)),
        kernel_s: group.map_or(0.0, |g| g.kernel_s),
    }
}
