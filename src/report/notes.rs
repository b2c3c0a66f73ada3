//! The lines of the human formats under the tables: folded layers, sizes
//! taken at their bounds, If branches left out, fused groups.

use super::{Column, CostReport, Scaler};

/// The layers folded away at load time: a heading with their count and the
/// FLOPs they would have taken, then one line per layer that does
/// arithmetic (copies and constants built from shapes are only counted;
/// JSON and CSV list every one).
pub(super) fn folded_lines(report: &CostReport) -> Vec<String> {
    if report.folded.is_empty() {
        return Vec::new();
    }
    let flops: u64 = report.folded.iter().map(|l| l.flops).sum();
    let mut lines = vec![format!(
        "Folded at load time (all inputs constant; --no-fold counts them): {} layers, {flops} FLOPs",
        report.folded.len()
    )];
    lines.extend(
        report
            .folded
            .iter()
            .filter(|l| l.flops > 0 || l.iops > 0)
            .map(|l| {
                let iops = match l.iops {
                    0 => String::new(),
                    n => format!(", {n} IOPs"),
                };
                format!(
                    "{} ({}): {} FLOPs{iops}",
                    l.name,
                    crate::ir::qualified(&l.domain, &l.op),
                    l.flops
                )
            }),
    );
    lines
}

/// The data-dependent sizes costs took at their upper bounds, on one line.
pub(super) fn assumed_line(report: &CostReport) -> Option<String> {
    if report.assumed.is_empty() {
        return None;
    }
    let list: Vec<String> = report
        .assumed
        .iter()
        .map(|a| format!("{} = {} ({})", a.symbol, a.value, a.op))
        .collect();
    Some(format!(
        "Sizes only known at run time, taken at their upper bounds (--dim NAME=N sets them): {}",
        list.join(", ")
    ))
}

/// One line per If branch the totals leave out.
pub(super) fn skipped_lines(report: &CostReport, s: &Scaler) -> Vec<String> {
    report
        .skipped
        .iter()
        .map(|b| {
            let figures = if b.layers.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} layers, {} {}, {} {})",
                    b.layers.len(),
                    s.value(b.totals.flops, Column::Flops),
                    s.header(Column::Flops),
                    s.value(b.totals.mrw, Column::Mrw),
                    s.header(Column::Mrw),
                )
            };
            format!("{}/{}{figures}: {}", b.node, b.branch, b.reason)
        })
        .collect()
}

/// How many layers the pack's fusion patterns joined, and the traffic saved.
pub(super) fn fusion_line(report: &CostReport) -> Option<String> {
    if report.fusions.is_empty() {
        return None;
    }
    let layers: usize = report.fusions.iter().map(|g| g.members.len()).sum();
    let saved: u64 = report.fusions.iter().map(|g| g.saved_bytes).sum();
    let mut by_pattern: Vec<(String, usize)> = Vec::new();
    for g in &report.fusions {
        match by_pattern.iter_mut().find(|(p, _)| *p == g.pattern) {
            Some(e) => e.1 += 1,
            None => by_pattern.push((g.pattern.clone(), 1)),
        }
    }
    let list: Vec<String> = by_pattern
        .iter()
        .map(|(p, n)| format!("{p} x{n}"))
        .collect();
    Some(format!(
        "Fused: {} groups of {layers} layers ({}); {saved} bytes of intermediate traffic not counted",
        report.fusions.len(),
        list.join(", ")
    ))
}
