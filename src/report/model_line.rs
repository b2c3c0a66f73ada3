//! The line under a report's tables that gives the model-level figures:
//! its parameters (each distinct weight tensor once) with their bytes, and
//! the peak of live activation bytes with the layer where it occurs.

use crate::cost::CostReport;

use super::PREFIXES;

/// The model-level figures: parameters (each distinct tensor once) with
/// their bytes, and the peak of live activation bytes with its layer.
pub(super) fn model_line(report: &CostReport) -> String {
    let t = &report.total;
    let peak = &report.peak;
    let at = peak
        .at
        .as_ref()
        .map_or(String::new(), |l| format!(" at {l}"));
    let buffers = match report.buffers {
        (0, _) => String::new(),
        (n, b) => format!(", buffers {} ({})", group_digits(n), human_bytes(b)),
    };
    format!(
        "Parameters: {} ({} of weights){buffers}; peak activation memory: {}{at}",
        group_digits(t.params),
        human_bytes(t.weight_bytes),
        human_bytes(peak.bytes)
    )
}

/// An integer with thousands separators: `25,557,032`.
pub(super) fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in the binary unit that reads best, exact below 1 KiB.
pub(super) fn human_bytes(n: u64) -> String {
    let mut v = n as f64;
    let mut p = 0;
    while v >= 1024.0 && p < 4 {
        v /= 1024.0;
        p += 1;
    }
    match p {
        0 => format!("{n} B"),
        _ => format!("{v:.2} {}iB", PREFIXES[p]),
    }
}
