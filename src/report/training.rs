//! What every format shows of a training step (`--training`): each layer's
//! backward pass and what it saves, the backward by operator type, the
//! optimizer's step, training memory and whether it fits the device.

use serde::Serialize;

use super::model_line::{group_digits, human_bytes};
use super::{CostReport, Grid, Scaler};
use crate::cost::training::{BackwardTotals, LayerBackward, Training};

/// A layer's `backward` in JSON: `null` when it computes no gradient.
#[derive(Serialize)]
pub(super) struct BackwardJ {
    flops: u64,
    mread: u64,
    mwrite: u64,
    mrw: u64,
    /// Bytes of activations kept from the forward for it.
    saves: u64,
    /// Inputs (positions) whose gradient it computes.
    grads: Vec<usize>,
    recomputed: bool,
}

pub(super) fn layer_j(b: Option<&LayerBackward>) -> Option<BackwardJ> {
    b.map(|b| BackwardJ {
        flops: b.flops,
        mread: b.mread,
        mwrite: b.mwrite,
        mrw: b.mread.saturating_add(b.mwrite),
        saves: b.saves,
        grads: b.grads.clone(),
        recomputed: b.recomputed,
    })
}

/// The backward of a set of layers (an operator type, the model).
#[derive(Serialize)]
pub(super) struct TotalsJ {
    layers: u64,
    flops: u64,
    mread: u64,
    mwrite: u64,
    mrw: u64,
    saves: u64,
}

pub(super) fn totals_j(t: &BackwardTotals) -> TotalsJ {
    TotalsJ {
        layers: t.layers,
        flops: t.flops,
        mread: t.mread,
        mwrite: t.mwrite,
        mrw: t.mread.saturating_add(t.mwrite),
        saves: t.saves,
    }
}

#[derive(Serialize)]
pub(super) struct OptimizerJ<'a> {
    name: &'a str,
    flops: u64,
    mread: u64,
    mwrite: u64,
    mrw: u64,
}

#[derive(Serialize)]
pub(super) struct MemoryJ<'a> {
    weights: u64,
    gradients: u64,
    optimizer_states: u64,
    saved_activations: u64,
    transient: u64,
    peak: u64,
    /// With a device whose memory the catalog gives.
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    capacity: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fits: Option<bool>,
    /// Capacity less the peak (negative: short by that much).
    #[serde(skip_serializing_if = "Option::is_none")]
    margin: Option<i128>,
}

/// The report's `training` object: what trains and what is not counted.
#[derive(Serialize)]
pub(super) struct TrainingJ<'a> {
    trainable_params: u64,
    frozen_params: u64,
    /// Counted from a trace's records of what the backward ran.
    recorded: bool,
    not_counted: Vec<NotCountedJ<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fit: Option<FitJ<'a>>,
}

#[derive(Serialize)]
pub(super) struct NotCountedJ<'a> {
    name: &'a str,
    op: &'a str,
    reason: &'a str,
}

#[derive(Serialize)]
pub(super) struct FitJ<'a> {
    dim: &'a str,
    /// The largest size whose step fits; `null` when not even 1 does.
    largest: Option<i64>,
}

pub(super) fn optimizer_j(t: &Training) -> Option<OptimizerJ<'_>> {
    t.optimizer.as_ref().map(|o| OptimizerJ {
        name: o.name,
        flops: o.flops,
        mread: o.mread,
        mwrite: o.mwrite,
        mrw: o.mread.saturating_add(o.mwrite),
    })
}

pub(super) fn memory_j(t: &Training) -> MemoryJ<'_> {
    let m = &t.memory;
    let fits = t.fits();
    MemoryJ {
        weights: m.weights,
        gradients: m.gradients,
        optimizer_states: m.optimizer_states,
        saved_activations: m.saved_activations,
        transient: m.transient,
        peak: m.peak,
        device: t.capacity.as_ref().map(|(d, _)| d.as_str()),
        capacity: t.capacity.as_ref().map(|(_, c)| *c),
        fits: fits.map(|f| f.0),
        margin: fits.map(|f| f.1),
    }
}

pub(super) fn training_j(t: &Training) -> TrainingJ<'_> {
    TrainingJ {
        trainable_params: t.trainable,
        frozen_params: t.frozen,
        recorded: t.recorded,
        not_counted: t
            .not_counted
            .iter()
            .map(|(name, op, reason)| NotCountedJ { name, op, reason })
            .collect(),
        fit: t.fit.as_ref().map(|(dim, largest)| FitJ {
            dim,
            largest: *largest,
        }),
    }
}

/// The layer table's training columns: backward FLOPs, backward bytes
/// (read and written) and the bytes each layer saves; the total row has
/// the totals.
pub(super) fn columns(
    grid: &mut Grid,
    report: &CostReport,
    s: &Scaler,
    shown: &[usize],
    csv: bool,
) {
    let Some(t) = &report.training else { return };
    let flops = super::Column::Flops;
    let bytes = super::Column::Mrw;
    let mut add = |header: &str, key: &str, cells: Vec<String>, total: String| {
        grid.header.push(header.into());
        grid.keys.push(key.into());
        grid.numeric.push(true);
        for (row, cell) in grid.rows.iter_mut().zip(cells) {
            row.push(cell);
        }
        if let Some(r) = grid.rows.last_mut() {
            r.push(total);
        }
    };
    let cell = |i: usize, f: &dyn Fn(&LayerBackward) -> u64, c| {
        t.layers.get(i).and_then(|b| b.as_ref()).map_or_else(
            // No gradient: an empty CSV field, a dash in a table.
            || if csv { String::new() } else { "-".to_string() },
            |b| s.value(f(b), c),
        )
    };
    let tt = &t.total;
    let h = |c| format!("Bwd {}", s.header(c));
    add(
        &h(flops),
        "backward_flops",
        shown
            .iter()
            .map(|&i| cell(i, &|b| b.flops, flops))
            .collect(),
        s.value(tt.flops, flops),
    );
    add(
        &h(bytes),
        "backward_mrw",
        shown
            .iter()
            .map(|&i| cell(i, &|b| b.mread.saturating_add(b.mwrite), bytes))
            .collect(),
        s.value(tt.mread.saturating_add(tt.mwrite), bytes),
    );
    add(
        &s.header(bytes).replace("MemR+W", "Saves"),
        "saves",
        shown
            .iter()
            .map(|&i| cell(i, &|b| b.saves, bytes))
            .collect(),
        // Each tensor once, however many layers keep it.
        s.value(t.memory.saved_activations, bytes),
    );
    // CSV has no paragraph under its table: the step's model-level figures
    // are columns of the total row alone.
    if csv {
        let m = &t.memory;
        let opt = t.optimizer.as_ref();
        for (key, v) in [
            ("optimizer_flops", opt.map(|o| o.flops)),
            (
                "optimizer_mrw",
                opt.map(|o| o.mread.saturating_add(o.mwrite)),
            ),
            ("weights_bytes", Some(m.weights)),
            ("gradients_bytes", Some(m.gradients)),
            ("optimizer_states_bytes", Some(m.optimizer_states)),
            ("saved_activations_bytes", Some(m.saved_activations)),
            ("transient_bytes", Some(m.transient)),
            ("peak_bytes", Some(m.peak)),
        ] {
            let cells = vec![String::new(); shown.len()];
            add(key, key, cells, v.map_or(String::new(), |v| v.to_string()));
        }
    }
}

/// The summary's training columns, by operator type.
pub(super) fn summary_columns(
    header: &mut Vec<String>,
    keys: &mut Vec<String>,
    rows: &mut [Vec<String>],
    report: &CostReport,
    s: &Scaler,
) {
    let Some(t) = &report.training else { return };
    header.extend([
        format!("Bwd {}", s.header(super::Column::Flops)),
        format!("Bwd {}", s.header(super::Column::Mrw)),
    ]);
    keys.extend(["backward_flops".to_string(), "backward_mrw".to_string()]);
    let totals = t.by_type.iter().chain([&t.total]);
    for (row, b) in rows.iter_mut().zip(totals) {
        row.push(s.value(b.flops, super::Column::Flops));
        row.push(s.value(b.mread.saturating_add(b.mwrite), super::Column::Mrw));
    }
}

/// The training paragraph of the human formats: the step's FLOPs, the
/// optimizer, memory, whether it fits, what is not counted.
pub(super) fn lines(report: &CostReport) -> Vec<String> {
    let Some(t) = &report.training else {
        return Vec::new();
    };
    let f = report.total.flops;
    let b = t.total.flops;
    let opt = t.optimizer.as_ref().map_or(0, |o| o.flops);
    let step = f.saturating_add(b).saturating_add(opt);
    let g = human_flops;
    let mut v = vec!["Training step:".to_string()];
    v.push(format!(
        "  FLOPs: forward {} + backward {}{} = {} ({:.2}x the forward)",
        g(f),
        g(b),
        t.optimizer.as_ref().map_or(String::new(), |o| format!(
            " + {} step {}",
            o.name,
            g(o.flops)
        )),
        g(step),
        if f > 0 { step as f64 / f as f64 } else { 0.0 },
    ));
    v.push(format!(
        "  parameters: {} train, {} frozen{}",
        group_digits(t.trainable),
        group_digits(t.frozen),
        if t.recorded {
            "; backward as the trace recorded it"
        } else {
            ""
        }
    ));
    let m = &t.memory;
    v.push(format!(
        "  memory: weights {} + gradients {} + optimizer states {} + saved activations {} + backward working set {} = peak {}",
        human_bytes(m.weights),
        human_bytes(m.gradients),
        human_bytes(m.optimizer_states),
        human_bytes(m.saved_activations),
        human_bytes(m.transient),
        human_bytes(m.peak)
    ));
    if let (Some((dev, cap)), Some((fits, margin))) = (&t.capacity, t.fits()) {
        let by = human_bytes(margin.unsigned_abs().min(u64::MAX as u128) as u64);
        v.push(if fits {
            format!("  fits {dev} ({}): {by} to spare", human_bytes(*cap))
        } else {
            format!("  does not fit {dev} ({}): {by} short", human_bytes(*cap))
        });
    }
    if let Some((dim, largest)) = &t.fit {
        v.push(match largest {
            Some(n) => format!("  largest {dim} that fits: {n}"),
            None => format!("  not even {dim}=1 fits"),
        });
    }
    if !t.not_counted.is_empty() {
        let names: Vec<String> = t
            .not_counted
            .iter()
            .take(5)
            .map(|(n, op, why)| format!("{n} ({op}: {why})"))
            .collect();
        let more = t.not_counted.len().saturating_sub(5);
        v.push(format!(
            "  not counted in training: {} layer(s): {}{}",
            t.not_counted.len(),
            names.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    v
}

/// FLOPs in the decimal unit that reads best: `3.64 GFLOPs`.
fn human_flops(n: u64) -> String {
    let mut v = n as f64;
    let mut p = 0;
    while v >= 1000.0 && p < 5 {
        v /= 1000.0;
        p += 1;
    }
    match p {
        0 => format!("{n} FLOPs"),
        _ => format!("{v:.2} {}FLOPs", ["", "K", "M", "G", "T", "P"][p]),
    }
}
