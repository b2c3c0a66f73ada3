//! Which layer rows a report shows, and in what order: the model's order by
//! default, or sorted by a figure (`--sort`) and cut to the first N (`--top`).
//! Totals always count every layer.

use crate::cost::{CostReport, Roofline};

/// A figure the layer rows can be sorted by, largest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SortKey {
    Flops,
    Iops,
    Mread,
    Mwrite,
    Mrw,
    /// Elements of the weights a layer reads.
    Params,
    /// Activation bytes live while a layer runs.
    Live,
    #[value(name = "compute_s")]
    ComputeS,
    #[value(name = "memory_s")]
    MemoryS,
    #[value(name = "bound_s")]
    BoundS,
    /// FLOPs per byte moved.
    Intensity,
    /// Measured time (needs --profile).
    #[value(name = "measured_s")]
    MeasuredS,
    /// Predicted time (needs a calibrated --device).
    #[value(name = "predicted_s")]
    PredictedS,
}

impl SortKey {
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Flops => "flops",
            SortKey::Iops => "iops",
            SortKey::Mread => "mread",
            SortKey::Mwrite => "mwrite",
            SortKey::Mrw => "mrw",
            SortKey::Params => "params",
            SortKey::Live => "live",
            SortKey::ComputeS => "compute_s",
            SortKey::MemoryS => "memory_s",
            SortKey::BoundS => "bound_s",
            SortKey::Intensity => "intensity",
            SortKey::MeasuredS => "measured_s",
            SortKey::PredictedS => "predicted_s",
        }
    }

    /// Whether sorting by this key needs roofline times (`--device`).
    pub fn needs_device(self) -> bool {
        matches!(
            self,
            SortKey::ComputeS
                | SortKey::MemoryS
                | SortKey::BoundS
                | SortKey::Intensity
                | SortKey::PredictedS
        )
    }
}

/// The layers' indices to show, in the order to show them.
pub fn layer_rows(
    report: &CostReport,
    roofline: Option<&Roofline>,
    sort: Option<SortKey>,
    top: Option<usize>,
) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..report.layers.len()).collect();
    if let Some(key) = sort {
        let value = |i: usize| -> f64 {
            let l = &report.layers[i];
            let t = roofline.and_then(|r| r.layers.get(i));
            match key {
                SortKey::Flops => l.flops as f64,
                SortKey::Iops => l.iops as f64,
                SortKey::Mread => l.mread as f64,
                SortKey::Mwrite => l.mwrite as f64,
                SortKey::Mrw => l.mrw() as f64,
                SortKey::Params => l.params as f64,
                SortKey::Live => l.live_bytes as f64,
                SortKey::ComputeS => t.map_or(0.0, |t| t.compute_s),
                SortKey::MemoryS => t.map_or(0.0, |t| t.memory_s),
                SortKey::BoundS => t.map_or(0.0, |t| t.bound_s),
                SortKey::Intensity => t.and_then(|t| t.intensity).unwrap_or(0.0),
                SortKey::MeasuredS => report
                    .measured
                    .as_ref()
                    .and_then(|m| m.layer_s(i))
                    .unwrap_or(0.0),
                SortKey::PredictedS => t.and_then(|t| t.predicted_s).unwrap_or(0.0),
            }
        };
        // Stable: equal figures keep the model's order.
        rows.sort_by(|&a, &b| value(b).total_cmp(&value(a)));
    }
    if let Some(n) = top {
        rows.truncate(n);
    }
    rows
}

/// The line saying rows were cut or sorted, if they were.
pub fn rows_note(total: usize, shown: usize, sort: Option<SortKey>) -> Option<String> {
    let by = sort.map_or(String::new(), |k| format!(", largest {} first", k.name()));
    if shown < total {
        Some(format!(
            "Showing {shown} of {total} layers{by}; the total counts all {total}."
        ))
    } else {
        sort.map(|k| format!("Layers sorted by {}, largest first.", k.name()))
    }
}
