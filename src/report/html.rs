//! `--format html`: one self-contained page with the report's tables and
//! charts.
//!
//! Nothing is fetched: the style sheet and the script are inlined, the
//! charts are SVG written here. Without JavaScript the page still shows
//! every table (the layer table in full, inside `<noscript>`); with it, the
//! layer table is drawn a page at a time from a compact JSON array, so a
//! 100,000-layer model stays responsive and the browser never builds
//! 100,000 rows. The charts bin layers to the plot's width and merge
//! roofline points that fall on the same pixel, so their size does not grow
//! with the model.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::cost::Roofline;
use crate::cost::{CostReport, LayerCost};
use crate::rules::rule::qualified;

use super::timing::BY_RULE;

use super::ReportOptions;

mod charts;

use charts::{along, measured_chart, roofline_chart, types};

const STYLE: &str = include_str!("html/style.css");
const SCRIPT: &str = include_str!("html/table.js");

/// Colours of the heaviest operator types, in rank order; the rest share
/// [`OTHER`]. Mid tones, readable on the light and the dark theme.
const PALETTE: [&str; 10] = [
    "#3b7dd8", "#e8833a", "#3fa672", "#d64b4b", "#8c6bc8", "#c7a02e", "#2fa3b5", "#d16aa6",
    "#7f8c3a", "#a0522d",
];
const OTHER: &str = "#8a8f98";

/// Plot sizes in SVG user units (the SVGs scale to the page's width).
const WIDTH: f64 = 960.0;
/// Bins of the chart along the network at most.
const BINS: usize = 480;

/// Text escaped for HTML content and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A count with the largest prefix it reaches (1000-based for FLOPs, 1024
/// for bytes), and a space before where a unit goes.
fn human(v: f64, radix: f64, digits: usize) -> String {
    let prefixes = if radix == 1024.0 {
        ["", "Ki", "Mi", "Gi", "Ti", "Pi"]
    } else {
        ["", "K", "M", "G", "T", "P"]
    };
    let mut p = 0;
    let mut x = v;
    while x.abs() >= radix && p + 1 < prefixes.len() {
        x /= radix;
        p += 1;
    }
    if p == 0 {
        format!("{v} ")
    } else {
        format!("{x:.digits$} {}", prefixes[p])
    }
}

fn flops_text(v: u64, digits: usize) -> String {
    human(v as f64, 1000.0, digits).trim_end().to_string()
}

fn bytes_text(v: u64, digits: usize) -> String {
    format!("{}B", human(v as f64, 1024.0, digits))
}

fn time_text(s: f64, digits: usize) -> String {
    super::human_time(s, digits)
}

/// The layer's operator type as the report names it.
fn op_of(l: &LayerCost) -> String {
    qualified(&l.domain, &l.op)
}

/// Colours by operator type: the heaviest types (by FLOPs, then bytes) get
/// the palette, in order.
struct Colours {
    by_op: HashMap<String, usize>,
    /// Types in palette order, for the legend.
    ranked: Vec<String>,
}

impl Colours {
    fn new(report: &CostReport) -> Self {
        let mut types: Vec<(String, u64, u64)> = report
            .summary
            .iter()
            .map(|s| (qualified(&s.domain, &s.op), s.totals.flops, s.totals.mrw))
            .collect();
        types.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)));
        let ranked: Vec<String> = types.into_iter().take(PALETTE.len()).map(|t| t.0).collect();
        let by_op = ranked
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i))
            .collect();
        Colours { by_op, ranked }
    }

    fn of(&self, op: &str) -> &'static str {
        self.by_op.get(op).map_or(OTHER, |&i| PALETTE[i])
    }
}

/// Renders the page. `opts.about` names the model and the options in force.
pub fn render(report: &CostReport, opts: &ReportOptions, roofline: Option<&Roofline>) -> String {
    let d = opts.digits;
    let colours = Colours::new(report);
    let title = opts
        .about
        .iter()
        .find(|(k, _)| k == "model")
        .map_or("model".to_string(), |(_, v)| v.clone());
    let mut out = String::with_capacity(4096 + 256 * report.layers.len());
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"generator\" content=\"c3\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>c3: {}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <h1>Cost of <span class=\"model\">{}</span></h1>\n",
        esc(&title),
        esc(&title)
    );
    about(&mut out, opts);
    totals(&mut out, report, roofline, d);
    types(&mut out, report, roofline, &colours, d);
    along(&mut out, report, &colours, d);
    if let Some(r) = roofline {
        roofline_chart(&mut out, report, r, &colours, d);
        measured_chart(&mut out, report, r, &colours, d);
    }
    layer_table(&mut out, report, roofline, d);
    if let Some(depth) = opts.depth {
        module_tree(&mut out, report, depth, d);
    }
    notes(&mut out, report, d);
    out.push_str("</main>\n");
    layer_data(&mut out, report, roofline, d);
    let _ = write!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

/// `--depth`: the module tree, each node indented by its level.
fn module_tree(out: &mut String, report: &CostReport, depth: usize, d: usize) {
    let _ = writeln!(
        out,
        "<section id=\"tree\">\n<h2>Module tree <span class=\"count\">depth {depth}</span></h2>\n<div class=\"scroll\"><table class=\"grid\">\n<thead><tr><th>Module</th><th class=\"n\">Layers</th><th class=\"n\">FLOPs</th><th class=\"n\">Read+Written</th><th class=\"n\">FLOPs %</th></tr></thead>\n<tbody>"
    );
    let total = report.total.flops.max(1) as f64;
    for n in super::tree::tree(report, depth) {
        let last = n.path.rsplit('/').next().unwrap_or(&n.path);
        let _ = writeln!(
            out,
            "<tr><td style=\"padding-left: {}em\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}</td></tr>",
            n.level - 1,
            esc(last),
            n.layers,
            flops_text(n.flops, d),
            bytes_text(n.mread.saturating_add(n.mwrite), d),
            100.0 * n.flops as f64 / total
        );
    }
    out.push_str("</tbody>\n</table></div>\n</section>\n");
}

fn about(out: &mut String, opts: &ReportOptions) {
    if opts.about.is_empty() {
        return;
    }
    out.push_str(
        "<section id=\"about\">\n<h2>Options in force</h2>\n<table class=\"kv\">\n<tbody>\n",
    );
    for (k, v) in &opts.about {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

fn card(out: &mut String, label: &str, value: &str, note: &str) {
    let _ = writeln!(
        out,
        "<div class=\"card\"><div class=\"label\">{}</div><div class=\"value\">{}</div><div class=\"note\">{}</div></div>",
        esc(label),
        esc(value),
        esc(note)
    );
}

fn totals(out: &mut String, report: &CostReport, roofline: Option<&Roofline>, d: usize) {
    let t = &report.total;
    out.push_str("<section id=\"totals\">\n<h2>Totals</h2>\n<div class=\"cards\">\n");
    card(
        out,
        "FLOPs",
        &flops_text(t.flops, d),
        &format!("{} exactly", t.flops),
    );
    if t.iops > 0 {
        card(
            out,
            "Integer ops",
            &flops_text(t.iops, d),
            &format!("{} exactly", t.iops),
        );
    }
    card(
        out,
        "Memory read",
        &bytes_text(t.mread, d),
        &format!("{} bytes", t.mread),
    );
    card(
        out,
        "Memory written",
        &bytes_text(t.mwrite, d),
        &format!("{} bytes", t.mwrite),
    );
    card(
        out,
        "Layers counted",
        &t.layers.to_string(),
        &format!("{} not counted", report.unsupported.len()),
    );
    card(
        out,
        "Parameters",
        &flops_text(t.params, d),
        &format!("{} of weights", bytes_text(t.weight_bytes, d)),
    );
    card(
        out,
        "Peak activations",
        &bytes_text(report.peak.bytes, d),
        &report
            .peak
            .at
            .as_ref()
            .map_or(String::new(), |l| format!("at {l}")),
    );
    if let Some(r) = roofline {
        card(
            out,
            "Roofline bound",
            &time_text(r.bound_s, d),
            &format!("on {}", r.device.name),
        );
        card(
            out,
            "Compute / memory",
            &format!(
                "{} / {}",
                time_text(r.compute_s, d),
                time_text(r.memory_s, d)
            ),
            &format!("additive {}", time_text(r.additive_s, d)),
        );
        if let (Some(m), Some(e)) = (r.measured_s, r.efficiency(r.bound_s)) {
            card(
                out,
                "Measured",
                &time_text(m, d),
                &format!("bound is {:.1}% of it", 100.0 * e),
            );
        }
        if r.predicts() {
            let range = r.predicted_range.map_or(String::new(), |(lo, hi)| {
                format!("range {} to {}", time_text(lo, d), time_text(hi, d))
            });
            // Layers a rule's `time:` formula predicted are said; without a
            // time model for the others there is no total.
            let sub = match r.by_rules() {
                0 => range,
                n => format!(
                    "{n} layer{} by rules' time: formulas {BY_RULE}",
                    if n == 1 { "" } else { "s" }
                ),
            };
            let total = r.predicted_s.map_or("no total".into(), |p| time_text(p, d));
            card(out, "Predicted", &total, &sub);
        }
    } else if let Some(m) = &report.measured
        && let Some(run) = m.run_s
    {
        card(
            out,
            "Measured",
            &time_text(run, d),
            &format!("kernels {}", time_text(m.kernels_s, d)),
        );
    } else if let Some(m) = &report.measured
        && m.runtime == "tensorrt"
    {
        // TensorRT times layers only: their sum stands for the run.
        card(
            out,
            "Measured",
            &time_text(m.kernels_s, d),
            "layers summed (TensorRT times no whole run)",
        );
    }
    if let Some(m) = &report.measured {
        card(
            out,
            "Kernel time joined",
            &format!("{:.1}%", 100.0 * m.joined_share()),
            &format!("{} kernels of {}", m.kernels, m.runtime),
        );
    }
    out.push_str("</div>\n</section>\n");
}

/// The layer table's header cells: (label, numeric).
fn columns(report: &CostReport, roofline: Option<&Roofline>) -> Vec<(&'static str, bool)> {
    let mut c = vec![
        ("#", true),
        ("Layer", false),
        ("Op", false),
        ("FLOPs", true),
    ];
    if report.total.iops > 0 {
        c.push(("IOPs", true));
    }
    c.extend([("Read", true), ("Written", true), ("Read+Written", true)]);
    if roofline.is_some() {
        c.extend([("Bound", true), ("Bound by", false), ("FLOP/B", true)]);
    }
    if !report.fusions.is_empty() {
        c.push(("Fused", false));
    }
    if report.layers.iter().any(|l| l.runs != 1) {
        c.push(("Runs", true));
    }
    if report.measured.is_some() {
        c.push(("Measured", true));
    }
    if roofline.is_some_and(|r| r.predicts()) {
        c.push(("Predicted", true));
    }
    if report.training.is_some() {
        c.extend([
            ("Bwd FLOPs", true),
            ("Bwd Read+Written", true),
            ("Saves", true),
        ]);
    }
    c
}

/// A layer's measured time as the tables show it: its kernel group's time,
/// `in NAME` for a layer fused into another's kernel, `-` with no kernel.
fn measured_text(report: &CostReport, i: usize, d: usize) -> Option<String> {
    let m = report.measured.as_ref()?;
    Some(match (m.layer_s(i), m.fused_into(i)) {
        (Some(t), _) => time_text(t, d),
        (None, Some(j)) => format!("in {}", report.layers[j].name),
        _ => "-".into(),
    })
}

fn layer_table(out: &mut String, report: &CostReport, roofline: Option<&Roofline>, d: usize) {
    let cols = columns(report, roofline);
    let _ = writeln!(
        out,
        "<section id=\"layers\">\n<h2>Layers <span class=\"count\">{}</span></h2>\n\
         <div id=\"table-controls\" class=\"js\" hidden>\n\
         <input type=\"search\" id=\"filter\" placeholder=\"Filter by layer or op (e.g. conv)\" aria-label=\"Filter layers\">\n\
         <button type=\"button\" id=\"first\">«</button><button type=\"button\" id=\"prev\">‹</button>\n\
         <span id=\"range\"></span>\n\
         <button type=\"button\" id=\"next\">›</button><button type=\"button\" id=\"last\">»</button>\n\
         </div>\n<div class=\"scroll\" id=\"table-js\" hidden></div>\n<noscript>\n<div class=\"scroll\"><table class=\"grid\">\n<thead><tr>",
        report.layers.len()
    );
    for (label, numeric) in &cols {
        let _ = write!(
            out,
            "<th{}>{}</th>",
            if *numeric { " class=\"n\"" } else { "" },
            label
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let runs = report.layers.iter().any(|l| l.runs != 1);
    for (i, l) in report.layers.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>",
            i + 1,
            esc(&l.name),
            esc(&op_of(l)),
            flops_text(l.flops, d)
        );
        if report.total.iops > 0 {
            let _ = write!(out, "<td class=\"n\">{}</td>", flops_text(l.iops, d));
        }
        let _ = write!(
            out,
            "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
            bytes_text(l.mread, d),
            bytes_text(l.mwrite, d),
            bytes_text(l.mrw(), d)
        );
        if let Some(t) = roofline.and_then(|r| r.layers.get(i)) {
            let _ = write!(
                out,
                "<td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td>",
                time_text(t.bound_s, d),
                t.bound.as_str(),
                t.intensity.map_or("-".into(), |a| format!("{a:.2}"))
            );
        }
        if !report.fusions.is_empty() {
            let _ = write!(out, "<td>{}</td>", esc(l.fused.as_deref().unwrap_or("")));
        }
        if runs {
            let _ = write!(out, "<td class=\"n\">{}</td>", l.runs);
        }
        if let Some(m) = measured_text(report, i, d) {
            let _ = write!(out, "<td class=\"n\">{}</td>", esc(&m));
        }
        if let Some(r) = roofline.filter(|r| r.predicts()) {
            let t = &r.layers[i];
            let p = t.predicted_s.map_or("-".into(), |t| time_text(t, d));
            // The mark of a rule's `time:` formula names where it is written.
            let mark = t.by_rule.as_ref().map_or(String::new(), |o| {
                format!(
                    " <span title=\"time: {}\">{BY_RULE}</span>",
                    esc(&o.to_string())
                )
            });
            let _ = write!(out, "<td class=\"n\">{p}{mark}</td>");
        }
        if let Some(t) = &report.training {
            match t.layers.get(i).and_then(|b| b.as_ref()) {
                Some(b) => {
                    let _ = write!(
                        out,
                        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                        flops_text(b.flops, d),
                        bytes_text(b.mread.saturating_add(b.mwrite), d),
                        bytes_text(b.saves, d)
                    );
                }
                None => out
                    .push_str("<td class=\"n\">-</td><td class=\"n\">-</td><td class=\"n\">-</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n</noscript>\n</section>\n");
}

fn notes(out: &mut String, report: &CostReport, d: usize) {
    out.push_str("<section id=\"notes\">\n");
    let training = super::training::lines(report);
    if let Some((head, rest)) = training.split_first() {
        let _ = writeln!(out, "<h2>{}</h2>\n<ul>", esc(head.trim_end_matches(':')));
        for line in rest {
            let _ = writeln!(out, "<li>{}</li>", esc(line.trim()));
        }
        out.push_str("</ul>\n");
    }
    let _ = writeln!(
        out,
        "<h2>Unsupported layers <span class=\"count\">{}</span></h2>",
        report.unsupported.len()
    );
    if report.unsupported.is_empty() {
        out.push_str("<p class=\"note\">None: every layer is counted.</p>\n");
    } else {
        out.push_str("<div class=\"scroll\"><table class=\"grid\">\n<thead><tr><th>Layer</th><th>Op</th><th>Why not counted</th></tr></thead>\n<tbody>\n");
        for u in &report.unsupported {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&u.name),
                esc(&qualified(&u.domain, &u.op)),
                esc(&u.reason)
            );
        }
        out.push_str("</tbody>\n</table></div>\n");
    }
    if !report.assumed.is_empty() {
        out.push_str("<h2>Assumed sizes</h2>\n<p class=\"note\">Sizes only known at run time, taken at their upper bounds (<code>--dim NAME=N</code> sets them).</p>\n<table class=\"grid\">\n<thead><tr><th>Size</th><th class=\"n\">Value</th><th>Op</th></tr></thead>\n<tbody>\n");
        for a in &report.assumed {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
                esc(&a.symbol),
                a.value,
                esc(&a.op)
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }
    if !report.fusions.is_empty() {
        let saved: u64 = report.fusions.iter().map(|g| g.saved_bytes).sum();
        let _ = writeln!(
            out,
            "<h2>Fused groups <span class=\"count\">{}</span></h2>\n<p class=\"note\">{} of intermediate traffic not counted.</p>\n<div class=\"scroll\"><table class=\"grid\">\n<thead><tr><th>Group</th><th>Layers</th><th class=\"n\">Bytes saved</th></tr></thead>\n<tbody>",
            report.fusions.len(),
            bytes_text(saved, d)
        );
        for g in &report.fusions {
            let names: Vec<String> = g
                .members
                .iter()
                .filter_map(|&i| report.layers.get(i))
                .map(|l| esc(&l.name))
                .collect();
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
                esc(&g.id),
                names.join(", "),
                bytes_text(g.saved_bytes, d)
            );
        }
        out.push_str("</tbody>\n</table></div>\n");
    }
    if !report.skipped.is_empty() {
        let _ = writeln!(
            out,
            "<h2>If branches not counted <span class=\"count\">{}</span></h2>\n<div class=\"scroll\"><table class=\"grid\">\n<thead><tr><th>Branch</th><th class=\"n\">Layers</th><th class=\"n\">FLOPs</th><th class=\"n\">Bytes R+W</th><th>Why</th></tr></thead>\n<tbody>",
            report.skipped.len()
        );
        for b in &report.skipped {
            let _ = writeln!(
                out,
                "<tr><td>{}/{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
                esc(&b.node),
                esc(&b.branch),
                b.layers.len(),
                flops_text(b.totals.flops, d),
                bytes_text(b.totals.mrw, d),
                esc(&b.reason)
            );
        }
        out.push_str("</tbody>\n</table></div>\n");
    }
    out.push_str("</section>\n");
}

/// The layers as one compact JSON array the script pages through: per
/// layer `[name, op, flops, iops, mread, mwrite, runs, fused, bound_s,
/// bound, intensity, measured_s, measured_in, predicted_s, backward_flops,
/// backward_bytes, saves, time_formula]`, the bound's three only with a
/// device (`null` without), the measured two with a profile, the predicted
/// time where the layer has one, the backward's three with training, and
/// where the rule's `time:` formula that predicted it is written.
fn layer_data(out: &mut String, report: &CostReport, roofline: Option<&Roofline>, digits: usize) {
    use serde_json::{Value, json};
    let rows: Vec<Value> = report
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut row = vec![
                json!(l.name),
                json!(op_of(l)),
                json!(l.flops),
                json!(l.iops),
                json!(l.mread),
                json!(l.mwrite),
                json!(l.runs),
                json!(l.fused),
            ];
            match roofline.and_then(|r| r.layers.get(i)) {
                Some(t) => {
                    row.push(json!(t.bound_s.is_finite().then_some(t.bound_s)));
                    row.push(json!(t.bound.as_str()));
                    row.push(json!(t.intensity.filter(|a| a.is_finite())));
                }
                None => row.extend([Value::Null, Value::Null, Value::Null]),
            }
            let m = report.measured.as_ref();
            row.push(json!(m.and_then(|m| m.layer_s(i))));
            row.push(json!(
                m.and_then(|m| m.fused_into(i))
                    .map(|j| report.layers[j].name.as_str())
            ));
            row.push(json!(
                roofline
                    .and_then(|r| r.layers.get(i))
                    .and_then(|t| t.predicted_s)
            ));
            let b = report
                .training
                .as_ref()
                .and_then(|t| t.layers.get(i))
                .and_then(|b| b.as_ref());
            row.push(json!(b.map(|b| b.flops)));
            row.push(json!(b.map(|b| b.mread.saturating_add(b.mwrite))));
            row.push(json!(b.map(|b| b.saves)));
            row.push(json!(
                roofline
                    .and_then(|r| r.layers.get(i))
                    .and_then(|t| t.by_rule.as_ref())
                    .map(|o| o.to_string())
            ));
            Value::Array(row)
        })
        .collect();
    let doc = json!({
        "digits": digits,
        "device": roofline.is_some(),
        "measured": report.measured.is_some(),
        "predicted": roofline.is_some_and(|r| r.predicts()),
        "training": report.training.is_some(),
        "iops": report.total.iops > 0,
        "fused": !report.fusions.is_empty(),
        "runs": report.layers.iter().any(|l| l.runs != 1),
        "layers": rows,
    });
    let text = serde_json::to_string(&doc).expect("JSON values always serialize");
    // `<` only occurs inside JSON strings, where `\u003c` reads the same:
    // no `</script>` in a layer name can end the element early.
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"c3-layers\">{}</script>",
        text.replace('<', "\\u003c")
    );
}
