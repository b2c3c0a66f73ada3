//! What the human formats and CSV show of measured and predicted time:
//! the layer table's columns, the summary's, and the profile paragraph.

use super::{CostReport, Format, Grid, ReportOptions, Roofline, Scaler, human_time};

/// The measured and predicted columns: each layer's measured time (on the
/// layer that shows its kernel group's time; `in NAME` on the others), the
/// group's bound as a share of it, and the predicted time.
pub(super) fn columns(
    grid: &mut Grid,
    report: &CostReport,
    opts: &ReportOptions,
    s: &Scaler,
    roofline: Option<&Roofline>,
    shown: &[usize],
) {
    let us = |v: f64| format!("{:.*}", s.digits, v * 1e6);
    let csv = opts.format == Format::Csv;
    let mut add = |header: &str, key: &str, numeric: bool, cells: Vec<String>, total: String| {
        grid.header.push(header.into());
        grid.keys.push(key.into());
        grid.numeric.push(numeric);
        for (row, cell) in grid.rows.iter_mut().zip(cells) {
            row.push(cell);
        }
        if let Some(t) = grid.rows.last_mut() {
            t.push(total);
        }
    };
    if let Some(m) = &report.measured {
        let cells = shown
            .iter()
            .map(|&i| match (m.layer_s(i), m.fused_into(i)) {
                (Some(t), _) => us(t),
                (None, Some(_)) if csv => String::new(),
                (None, Some(j)) => format!("in {}", report.layers[j].name),
                _ => "-".into(),
            })
            .collect();
        add(
            "Measured (µs)",
            "measured_us",
            true,
            cells,
            m.run_s.map_or(String::new(), us),
        );
        if csv {
            let cells = shown
                .iter()
                .map(|&i| {
                    m.fused_into(i)
                        .map_or(String::new(), |j| report.layers[j].name.clone())
                })
                .collect();
            add("Measured in", "measured_in", false, cells, String::new());
        }
        if let Some(r) = roofline {
            // Each kernel's own bound, as the one kernel it ran as.
            let bounds = m.group_bounds(report, r);
            let group_bound = |i: usize| -> Option<f64> {
                let k = m.layer_group.get(i).copied().flatten()? as usize;
                let g = &m.groups[k];
                (g.lead == i && g.seconds > 0.0).then(|| 100.0 * bounds[k] / g.seconds)
            };
            let pct = |v: f64| format!("{v:.1}");
            let cells = shown
                .iter()
                .map(|&i| group_bound(i).map_or(String::new(), pct))
                .collect();
            let total = m
                .run_s
                .filter(|t| *t > 0.0)
                .map_or(String::new(), |t| pct(100.0 * r.bound_s / t));
            add("Bound/Meas %", "bound_of_measured_pct", true, cells, total);
        }
    }
    if let Some(r) = roofline.filter(|r| r.predicts()) {
        // A layer its rule's `time:` formula predicted is marked (the
        // roofline paragraph says what the mark means); CSV says it in a
        // column of its own.
        let cells = shown
            .iter()
            .map(|&i| {
                let t = &r.layers[i];
                match (t.predicted_s, &t.by_rule) {
                    (Some(p), Some(_)) if !csv => format!("{} {BY_RULE}", us(p)),
                    (p, _) => p.map_or(String::new(), us),
                }
            })
            .collect();
        add(
            "Predicted (µs)",
            "predicted_us",
            true,
            cells,
            r.predicted_s.map_or(String::new(), us),
        );
        if csv && r.by_rules() > 0 {
            let cells = shown
                .iter()
                .map(|&i| r.layers[i].predicted_by().unwrap_or("").to_string())
                .collect();
            add("Predicted by", "predicted_by", false, cells, String::new());
        }
    }
}

/// The mark of a predicted time a rule's `time:` formula gave.
pub(crate) const BY_RULE: &str = "†";

/// The line under the roofline paragraph that says which layers a rule's
/// `time:` formula predicted: each formula (op and place) with its count.
pub(crate) fn by_rule_line(report: &CostReport, r: &Roofline) -> Option<String> {
    let mut by: Vec<(String, String, usize)> = Vec::new();
    for (l, t) in report.layers.iter().zip(&r.layers) {
        let Some(o) = &t.by_rule else { continue };
        let (op, at) = (crate::ir::qualified(&l.domain, &l.op), o.to_string());
        match by.iter_mut().find(|(p, a, _)| *p == op && *a == at) {
            Some(e) => e.2 += 1,
            None => by.push((op, at, 1)),
        }
    }
    if by.is_empty() {
        return None;
    }
    let list: Vec<String> = by
        .iter()
        .map(|(op, at, n)| format!("{op} ({at}) x{n}"))
        .collect();
    let rest = if r.predicted_s.is_some() {
        String::new()
    } else {
        "; the other layers have no prediction (the device has no time model), so no total".into()
    };
    Some(format!(
        "{BY_RULE} predicted by rules' time: formulas: {}{rest}",
        list.join(", ")
    ))
}

/// An operator type's measured time (the kernel groups its layers lead)
/// and predicted time, where the report has them.
pub(crate) fn by_type(
    report: &CostReport,
    roofline: Option<&Roofline>,
    domain: &str,
    op: &str,
) -> (Option<f64>, Option<f64>) {
    let of_type = |l: &crate::cost::LayerCost| {
        l.op == op
            && crate::ir::domain_lookup_key(&l.domain) == crate::ir::domain_lookup_key(domain)
    };
    let measured = report.measured.as_ref().map(|m| {
        m.groups
            .iter()
            .filter(|g| of_type(&report.layers[g.lead]))
            .map(|g| g.seconds)
            .fold(0.0, |a, b| a + b)
    });
    // The type's layers that have a predicted time, summed; none when
    // none of them has one.
    let predicted = roofline.filter(|r| r.predicts()).and_then(|r| {
        report
            .layers
            .iter()
            .zip(&r.layers)
            .filter(|(l, _)| of_type(l))
            .filter_map(|(_, t)| t.predicted_s)
            .reduce(|a, b| a + b)
    });
    (measured, predicted)
}

/// Kernels of a profile's list shown by name in the human formats; JSON
/// lists all.
const LISTED_KERNELS: usize = 8;

/// The profile paragraph: what ran it, the run's time and the kernels',
/// the share of kernel time joined, and what was not joined.
pub(super) fn profile_lines(report: &CostReport, digits: usize) -> Vec<String> {
    let Some(m) = &report.measured else {
        return Vec::new();
    };
    let t = |v: f64| human_time(v, digits);
    let pct = |v: f64| {
        if m.kernels_s > 0.0 {
            100.0 * v / m.kernels_s
        } else {
            0.0
        }
    };
    let mut what = vec![m.runtime.clone()];
    what.extend(m.provider.clone());
    if let Some(n) = m.threads {
        what.push(format!("{n} thread{}", if n == 1 { "" } else { "s" }));
    }
    let mut lines = vec![format!("Measured ({}, {}):", m.path, what.join(", "))];
    let runs = match m.dropped {
        0 => format!("{} run{}", m.runs, if m.runs == 1 { "" } else { "s" }),
        d => format!("{} runs, the first {d} dropped as warm-up", m.runs),
    };
    // TensorRT times layers, never a whole run: said so, not "not recorded".
    let run = match m.run_s {
        None if m.runtime == "tensorrt" => "no time of a whole run (TensorRT times layers)".into(),
        s => format!("the run {} (median)", s.map_or("not recorded".into(), t)),
    };
    lines.push(format!(
        "  {runs}; {run}, its {} kernels {}",
        m.kernels,
        t(m.kernels_s)
    ));
    lines.push(format!(
        "  {:.1}% of kernel time joined to {} kernel groups of layers ({} inserted kernels given to a neighbour), {:.1}% to layers c3 folds, {:.1}% to no layer",
        pct(m.joined_s()),
        m.groups.len(),
        m.inserted.len(),
        pct(m.folded_s()),
        pct(m.unjoined_s())
    ));
    if !m.unjoined.is_empty() {
        let mut by_time: Vec<&crate::cost::measured::Unjoined> = m.unjoined.iter().collect();
        by_time.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        let list: Vec<String> = by_time
            .iter()
            .take(LISTED_KERNELS)
            .map(|k| format!("{} ({}, {})", k.name, k.op, t(k.seconds)))
            .collect();
        let more = by_time.len().saturating_sub(LISTED_KERNELS);
        lines.push(format!(
            "  not joined: {}{}",
            list.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    if !m.without_kernel.is_empty() {
        let list: Vec<&str> = m
            .without_kernel
            .iter()
            .take(LISTED_KERNELS)
            .map(|&i| report.layers[i].name.as_str())
            .collect();
        let more = m.without_kernel.len().saturating_sub(LISTED_KERNELS);
        lines.push(format!(
            "  layers no kernel ran ({}): {}{}",
            m.without_kernel.len(),
            list.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    lines
}
