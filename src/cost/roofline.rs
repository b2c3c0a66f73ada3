//! Roofline time bounds. For each layer, compute time is its work over the
//! device's peak for the layer's precision (the work counted as the peak
//! counts it: a multiply-add as two operations, whatever `--no-fma` says),
//! memory time is bytes over bandwidth, and the roofline bound is the larger.

use crate::cost::CostReport;
use crate::ir::DType;
use crate::rules::devices::{Device, PeakCounts, precision_of};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Compute,
    Memory,
    /// A layer with no work (no operations, no bytes moved): no bound.
    None,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
            Bound::None => "none",
        }
    }
}

/// One layer's times, in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerTime {
    /// The precision whose peak was used.
    pub precision: &'static str,
    /// The precision the layer's type asked for; differs from `precision`
    /// when the device has no peak for it.
    pub asked: &'static str,
    /// The peak used, operations per second.
    pub peak: f64,
    pub compute_s: f64,
    pub memory_s: f64,
    pub bound_s: f64,
    pub bound: Bound,
    /// Operations per byte moved, counted as the device's peaks count them;
    /// `None` when the layer moves no bytes.
    pub intensity: Option<f64>,
    /// The predicted time (by the rule's `time:` formula, or on a
    /// calibrated device), and on a calibrated device the index of the time
    /// group whose figures it took (in the device's `time.groups`).
    pub predicted_s: Option<f64>,
    pub group: Option<usize>,
    /// Where the rule's `time:` formula that gave `predicted_s` is
    /// written; `None` when the device's time model gave it.
    pub by_rule: Option<crate::rules::Origin>,
    /// The layer's floating-point operations as the peak counts them.
    pub counted: u64,
}

/// Times of every layer on one device, and their sums.
#[derive(Debug, Clone, PartialEq)]
pub struct Roofline {
    pub device: Device,
    pub layers: Vec<LayerTime>,
    /// All compute time.
    pub compute_s: f64,
    /// All memory time.
    pub memory_s: f64,
    /// Sum of the per-layer bounds.
    pub bound_s: f64,
    /// The original article's estimate: all compute time plus all memory time.
    pub additive_s: f64,
    /// A measured latency to compare with, if given.
    pub measured_s: Option<f64>,
    /// The peaks the layers were timed at, one group per (asked, used)
    /// precision, in the order they first appear.
    pub peaks: Vec<PeakGroup>,
    /// The operations the compute times divide by the peaks, counted as
    /// the device's peaks count them.
    pub work: u64,
    /// The predicted total, when every layer has a predicted time (on a
    /// calibrated device, or with a `time:` formula for each), and the
    /// range the calibration's residuals give it (low, high), when the
    /// time model alone predicted it.
    pub predicted_s: Option<f64>,
    pub predicted_range: Option<(f64, f64)>,
}

/// Layers timed at one peak.
#[derive(Debug, Clone, PartialEq)]
pub struct PeakGroup {
    /// The precision the layers' types asked for.
    pub asked: &'static str,
    /// The precision whose peak was used (the device's fallback when it has
    /// none for `asked`).
    pub used: &'static str,
    /// Operations per second.
    pub peak: f64,
    pub layers: usize,
    /// The group's compute time.
    pub compute_s: f64,
}

impl LayerTime {
    /// What predicted the layer's time: `rule` (its rule's `time:`
    /// formula) or `model` (the device's time model); `None` when nothing
    /// did.
    pub fn predicted_by(&self) -> Option<&'static str> {
        match (&self.by_rule, self.predicted_s) {
            (Some(_), _) => Some("rule"),
            (None, Some(_)) => Some("model"),
            (None, None) => None,
        }
    }

    /// The operations the layer's compute time divides by the peak: its
    /// work (or its FLOPs, on a device whose peaks count them so) and IOPs.
    pub fn work(&self, l: &crate::cost::LayerCost) -> u64 {
        self.counted.saturating_add(l.iops)
    }
}

impl PeakGroup {
    /// Whether the device had no peak for the asked precision.
    pub fn fell_back(&self) -> bool {
        self.asked != self.used
    }
}

impl Roofline {
    /// How close a measured latency is to a bound (bound / measured).
    pub fn efficiency(&self, estimate_s: f64) -> Option<f64> {
        self.measured_s.filter(|m| *m > 0.0).map(|m| estimate_s / m)
    }

    /// Whether the reports show predicted times: the device is calibrated,
    /// or some layer's rule has a `time:` formula.
    pub fn predicts(&self) -> bool {
        self.predicted_s.is_some() || self.layers.iter().any(|t| t.predicted_s.is_some())
    }

    /// The layers a rule's `time:` formula predicted.
    pub fn by_rules(&self) -> usize {
        self.layers.iter().filter(|t| t.by_rule.is_some()).count()
    }
}

/// Roofline times of every layer of a report on a device, and the
/// predicted times; `Err` when a rule's `time:` formula fails on a layer.
pub fn roofline(
    report: &CostReport,
    device: &Device,
    measured_s: Option<f64>,
) -> crate::error::Result<Roofline> {
    let mut layers = Vec::with_capacity(report.layers.len());
    let (mut compute_s, mut memory_s, mut bound_s) = (0.0, 0.0, 0.0);
    let mut peaks: Vec<PeakGroup> = Vec::new();
    let mut total_work: u64 = 0;
    for l in &report.layers {
        let dtype = l
            .inputs
            .iter()
            .flatten()
            .next()
            .map_or(DType::Float32, |t| t.dtype);
        let asked = precision_of(dtype);
        let (peak, precision) = device.peak_for(asked);
        // Integer operations run at the same precision's peak (a quantized
        // layer's inputs are integers, so that is its integer peak). The
        // work is counted as the peak counts it.
        let work = match device.peak_counts {
            PeakCounts::MultiplyAddAsTwo => l.work,
            PeakCounts::Reported => l.flops,
        };
        total_work = total_work.saturating_add(work).saturating_add(l.iops);
        let c = (work as f64 + l.iops as f64) / peak;
        let m = l.mrw() as f64 / device.bandwidth;
        let (b, bound) = if l.flops == 0 && l.iops == 0 && l.mrw() == 0 {
            (0.0, Bound::None)
        } else if c >= m {
            (c, Bound::Compute)
        } else {
            (m, Bound::Memory)
        };
        match peaks
            .iter_mut()
            .find(|g| g.asked == asked && g.used == precision)
        {
            Some(g) => {
                g.layers += 1;
                g.compute_s += c;
            }
            None => peaks.push(PeakGroup {
                asked,
                used: precision,
                peak,
                layers: 1,
                compute_s: c,
            }),
        }
        compute_s += c;
        memory_s += m;
        bound_s += b;
        layers.push(LayerTime {
            precision,
            asked,
            peak,
            compute_s: c,
            memory_s: m,
            bound_s: b,
            bound,
            intensity: (l.mrw() > 0).then(|| (work as f64 + l.iops as f64) / l.mrw() as f64),
            predicted_s: None,
            group: None,
            by_rule: None,
            counted: work,
        });
    }
    let predictions = super::predict::predict(report, device, &layers)?;
    let mut total = Some(0.0);
    for (t, p) in layers.iter_mut().zip(predictions) {
        match p {
            Some(p) => {
                t.predicted_s = Some(p.seconds);
                t.group = p.group;
                t.by_rule = p.by_rule;
                total = total.map(|s| s + p.seconds);
            }
            None => total = None,
        }
    }
    // No layer of an empty report needs a model; none of a calibrated
    // device's lacks one.
    let predicted_s = total.filter(|_| device.time.is_some() || !layers.is_empty());
    // The calibration's range is the time model's: it says nothing of a
    // pack's time formulas.
    let by_rule = layers.iter().any(|t| t.by_rule.is_some());
    let predicted_range = device
        .time
        .as_ref()
        .and_then(|m| m.range)
        .filter(|_| !by_rule)
        .zip(predicted_s)
        .map(|((lo, hi), total)| (total / (1.0 + hi), total / (1.0 + lo)));
    Ok(Roofline {
        device: device.clone(),
        layers,
        compute_s,
        memory_s,
        bound_s,
        additive_s: compute_s + memory_s,
        measured_s,
        peaks,
        work: total_work,
        predicted_s,
        predicted_range,
    })
}

/// Parses a duration: `2.4ms`, `850us`, `850µs`, `0.0024s`, `1200ns`.
pub fn parse_duration(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_alphabetic() || c == 'µ')?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let scale = match unit.trim() {
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        _ => return None,
    };
    (v.is_finite() && v > 0.0).then_some(v * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2.4ms"), Some(2.4e-3));
        assert_eq!(parse_duration("850 us"), Some(850e-6));
        assert_eq!(parse_duration("850µs"), Some(850e-6));
        assert_eq!(parse_duration("1s"), Some(1.0));
        assert_eq!(parse_duration("2.4"), None);
        assert_eq!(parse_duration("-1ms"), None);
    }
}
