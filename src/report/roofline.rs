//! The roofline paragraph of the human formats: the device, the peak each
//! group of layers was timed at (and any precision that fell back to
//! another), and the summed times.

use crate::cost::{PeakGroup, Roofline};

use super::human_time;

/// A peak in tera-operations per second with three significant digits.
fn tera(peak: f64) -> String {
    let t = peak / 1e12;
    let digits = if t >= 100.0 {
        0
    } else if t >= 10.0 {
        1
    } else if t >= 1.0 {
        2
    } else {
        3
    };
    format!("{t:.digits$}")
}

/// `TFLOP/s` for floating-point precisions, `TOP/s` for integer ones.
fn per_second(precision: &str) -> &'static str {
    if precision.starts_with("int") {
        "TOP/s"
    } else {
        "TFLOP/s"
    }
}

/// One line per peak used: `fp16 peak 0.166 TFLOP/s: 53 layers, compute 1.2 ms`.
pub fn peak_line(g: &PeakGroup, digits: usize) -> String {
    let peak = format!("{} {}", tera(g.peak), per_second(g.used));
    let what = format!(
        "{} layer{}, compute {}",
        g.layers,
        if g.layers == 1 { "" } else { "s" },
        human_time(g.compute_s, digits)
    );
    if g.fell_back() {
        format!(
            "{} layers timed at the {} peak {peak} (the device has no {} peak): {what}",
            g.asked, g.used, g.asked
        )
    } else {
        format!("{} peak {peak}: {what}", g.used)
    }
}

/// A count of operations with a prefix of 1000 (`8.206 G`).
fn operations(v: f64) -> String {
    let (div, unit) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")]
        .into_iter()
        .find(|(d, _)| v >= *d)
        .unwrap_or((1.0, ""));
    format!("{:.3} {unit}", v / div)
}

/// The roofline paragraph printed after the tables.
pub fn roofline_lines(r: &Roofline, digits: usize) -> Vec<String> {
    let t = |v: f64| human_time(v, digits);
    let d = &r.device;
    let mut lines = vec![format!(
        "Roofline on {} (memory {:.1} GB/s; {}):",
        d.name,
        d.bandwidth / 1e9,
        d.peak_counts.describe()
    )];
    for g in &r.peaks {
        lines.push(format!("  {}", peak_line(g, digits)));
    }
    lines.extend([
        format!(
            "  compute {} (of {} operations as the peaks count them), memory {}",
            t(r.compute_s),
            operations(r.work as f64),
            t(r.memory_s)
        ),
        format!(
            "  sum of per-layer bounds {}; additive estimate (all compute + all memory) {}",
            t(r.bound_s),
            t(r.additive_s)
        ),
    ]);
    if let (Some(m), Some(eb), Some(ea)) = (
        r.measured_s,
        r.efficiency(r.bound_s),
        r.efficiency(r.additive_s),
    ) {
        lines.push(format!(
            "  measured {}: the bound is {:.1}% of it, the additive estimate {:.1}%",
            t(m),
            100.0 * eb,
            100.0 * ea
        ));
    }
    if let Some(p) = r.predicted_s {
        let range = r.predicted_range.map_or(String::new(), |(lo, hi)| {
            format!(" (range {} to {})", t(lo), t(hi))
        });
        let against = r
            .measured_s
            .filter(|m| *m > 0.0)
            .map_or(String::new(), |m| {
                format!("; measured {}: {:+.1}%", t(m), 100.0 * (p / m - 1.0))
            });
        let from = r
            .device
            .calibration
            .as_ref()
            .and_then(|c| c.runtime.clone())
            .map_or(String::new(), |rt| format!(", calibrated on {rt}"));
        lines.push(format!("  predicted {}{range}{from}{against}", t(p)));
    }
    lines
}

/// The options in force on one line (`Options: fma on (...); attention
/// masked; ...`), the model left out; `None` when none are known.
pub fn options_line(about: &[(String, String)]) -> Option<String> {
    let parts: Vec<String> = about
        .iter()
        .filter(|(k, _)| k != "model")
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    (!parts.is_empty()).then(|| format!("Options: {}", parts.join("; ")))
}
