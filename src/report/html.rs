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

use super::ReportOptions;

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
    }
    layer_table(&mut out, report, roofline, d);
    notes(&mut out, report, d);
    out.push_str("</main>\n");
    layer_data(&mut out, report, roofline, d);
    let _ = write!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>\n");
    out
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
    }
    out.push_str("</div>\n</section>\n");
}

/// One 100% bar split by operator type.
fn share_bar(
    out: &mut String,
    y: f64,
    label: &str,
    parts: &[(String, f64)],
    colours: &Colours,
    show: &dyn Fn(f64) -> String,
) {
    let x0 = 150.0;
    let w = WIDTH - x0 - 10.0;
    let h = 30.0;
    let total: f64 = parts.iter().map(|p| p.1).sum();
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" class=\"lbl\" text-anchor=\"end\">{}</text>",
        x0 - 8.0,
        y + h / 2.0 + 4.0,
        esc(label)
    );
    if total <= 0.0 {
        let _ = writeln!(
            out,
            "<text x=\"{x0:.1}\" y=\"{:.1}\" class=\"lbl\">none</text>",
            y + h / 2.0 + 4.0
        );
        return;
    }
    // Types outside the palette are drawn as one "other" segment.
    let mut segs: Vec<(String, f64, &str)> = Vec::new();
    let mut other = 0.0;
    for (op, v) in parts {
        if colours.by_op.contains_key(op) {
            segs.push((op.clone(), *v, colours.of(op)));
        } else {
            other += v;
        }
    }
    segs.sort_by_key(|s| colours.by_op.get(&s.0).copied());
    if other > 0.0 {
        segs.push(("other types".into(), other, OTHER));
    }
    let mut x = x0;
    for (op, v, colour) in segs {
        if v <= 0.0 {
            continue;
        }
        let sw = w * v / total;
        let pct = 100.0 * v / total;
        let _ = write!(
            out,
            "<rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{sw:.2}\" height=\"{h:.1}\" fill=\"{colour}\"><title>{}: {pct:.1}% ({})</title></rect>",
            esc(&op),
            esc(&show(v))
        );
        if sw > 70.0 {
            let _ = write!(
                out,
                "<text x=\"{:.2}\" y=\"{:.1}\" class=\"in\">{} {pct:.0}%</text>",
                x + 4.0,
                y + h / 2.0 + 4.0,
                esc(&op)
            );
        }
        out.push('\n');
        x += sw;
    }
}

fn types(
    out: &mut String,
    report: &CostReport,
    roofline: Option<&Roofline>,
    colours: &Colours,
    d: usize,
) {
    out.push_str("<section id=\"types\">\n<h2>By operator type</h2>\n");
    let mut time: HashMap<String, f64> = HashMap::new();
    if let Some(r) = roofline {
        for (l, t) in report.layers.iter().zip(&r.layers) {
            *time.entry(op_of(l)).or_default() += t.bound_s;
        }
    }
    let rows = if roofline.is_some() { 3 } else { 2 };
    let legend_rows = colours.ranked.len().div_ceil(5) as f64;
    let height = 20.0 + 45.0 * rows as f64 + 22.0 * (legend_rows + 1.0);
    let _ = writeln!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" aria-label=\"Shares of FLOPs, bytes and time by operator type\">"
    );
    let ops: Vec<String> = report
        .summary
        .iter()
        .map(|s| qualified(&s.domain, &s.op))
        .collect();
    let flops: Vec<(String, f64)> = ops
        .iter()
        .zip(&report.summary)
        .map(|(o, s)| (o.clone(), s.totals.flops as f64))
        .collect();
    let bytes: Vec<(String, f64)> = ops
        .iter()
        .zip(&report.summary)
        .map(|(o, s)| (o.clone(), s.totals.mrw as f64))
        .collect();
    share_bar(out, 10.0, "FLOPs", &flops, colours, &|v| {
        human(v, 1000.0, d) + "FLOPs"
    });
    share_bar(out, 55.0, "Bytes read + written", &bytes, colours, &|v| {
        human(v, 1024.0, d) + "B"
    });
    if roofline.is_some() {
        let t: Vec<(String, f64)> = ops
            .iter()
            .map(|o| (o.clone(), time.get(o).copied().unwrap_or(0.0)))
            .collect();
        share_bar(out, 100.0, "Roofline time", &t, colours, &|v| {
            time_text(v, d)
        });
    }
    let mut entries: Vec<(&str, &str)> = colours
        .ranked
        .iter()
        .map(|o| (o.as_str(), colours.of(o)))
        .collect();
    if ops.len() > colours.ranked.len() {
        entries.push(("other types", OTHER));
    }
    legend(out, 20.0 + 45.0 * rows as f64, &entries);
    out.push_str("</svg>\n");
    // The same figures as a table, sortable by nothing but readable by all.
    let mut head = String::from(
        "<tr><th>Op</th><th class=\"n\"># layers</th><th class=\"n\">FLOPs</th><th class=\"n\">FLOPs %</th><th class=\"n\">Bytes R+W</th><th class=\"n\">Bytes %</th>",
    );
    if roofline.is_some() {
        head.push_str("<th class=\"n\">Time</th><th class=\"n\">Time %</th>");
    }
    head.push_str("</tr>");
    let _ = writeln!(
        out,
        "<div class=\"scroll\"><table class=\"grid\">\n<thead>{head}</thead>\n<tbody>"
    );
    let pct = |v: f64, t: f64| {
        if t > 0.0 {
            format!("{:.1}", 100.0 * v / t)
        } else {
            "0.0".into()
        }
    };
    let all_time: f64 = roofline.map_or(0.0, |r| r.bound_s);
    for (o, s) in ops.iter().zip(&report.summary) {
        let _ = write!(
            out,
            "<tr><td><span class=\"sw\" style=\"background:{}\"></span>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
            colours.of(o),
            esc(o),
            s.totals.layers,
            flops_text(s.totals.flops, d),
            pct(s.totals.flops as f64, report.total.flops as f64),
            bytes_text(s.totals.mrw, d),
            pct(s.totals.mrw as f64, report.total.mrw as f64),
        );
        if roofline.is_some() {
            let t = time.get(o).copied().unwrap_or(0.0);
            let _ = write!(
                out,
                "<td class=\"n\">{}</td><td class=\"n\">{}</td>",
                time_text(t, d),
                pct(t, all_time)
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n</section>\n");
}

fn legend(out: &mut String, y0: f64, entries: &[(&str, &str)]) {
    for (i, (op, colour)) in entries.iter().enumerate() {
        let x = 150.0 + (i % 5) as f64 * 160.0;
        let y = y0 + (i / 5) as f64 * 22.0;
        let _ = writeln!(
            out,
            "<rect x=\"{x:.0}\" y=\"{y:.0}\" width=\"12\" height=\"12\" fill=\"{colour}\"/><text x=\"{:.0}\" y=\"{:.0}\" class=\"lbl\">{}</text>",
            x + 17.0,
            y + 11.0,
            esc(&truncate(op, 20))
        );
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// Layers grouped into at most [`BINS`] consecutive runs.
struct Bin {
    first: usize,
    last: usize,
    flops: u64,
    bytes: u64,
    /// The heaviest layer's type gives the bar its colour.
    op_flops: String,
    op_bytes: String,
}

fn bins(layers: &[LayerCost]) -> Vec<Bin> {
    let per = layers.len().div_ceil(BINS).max(1);
    layers
        .chunks(per)
        .enumerate()
        .map(|(k, chunk)| {
            let by_flops = chunk.iter().max_by_key(|l| l.flops);
            let by_bytes = chunk.iter().max_by_key(|l| l.mrw());
            Bin {
                first: k * per,
                last: k * per + chunk.len() - 1,
                flops: chunk.iter().map(|l| l.flops).fold(0, u64::saturating_add),
                bytes: chunk.iter().map(|l| l.mrw()).fold(0, u64::saturating_add),
                op_flops: by_flops.map(op_of).unwrap_or_default(),
                op_bytes: by_bytes.map(op_of).unwrap_or_default(),
            }
        })
        .collect()
}

/// A vertical scale: value → height in 0..=1, and its tick labels.
struct Scale {
    log: bool,
    lo: f64,
    hi: f64,
}

impl Scale {
    fn new(values: impl Iterator<Item = u64> + Clone, log: bool) -> Self {
        let max = values.clone().max().unwrap_or(0) as f64;
        if log {
            let min = values.filter(|&v| v > 0).min().unwrap_or(1) as f64;
            let lo = min.log10().floor();
            let hi = max.max(1.0).log10().ceil().max(lo + 1.0);
            Scale { log, lo, hi }
        } else {
            Scale {
                log,
                lo: 0.0,
                hi: max.max(1.0),
            }
        }
    }

    fn frac(&self, v: u64) -> f64 {
        if v == 0 {
            return 0.0;
        }
        let x = if self.log {
            (v as f64).log10()
        } else {
            v as f64
        };
        ((x - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
    }

    /// (fraction, value) pairs for the axis.
    fn ticks(&self) -> Vec<(f64, f64)> {
        if self.log {
            let n = (self.hi - self.lo).round() as i32;
            let step = (n / 4).max(1);
            (0..=n)
                .step_by(step as usize)
                .map(|i| (i as f64 / n as f64, 10f64.powi(self.lo as i32 + i)))
                .collect()
        } else {
            (0..=4)
                .map(|i| (i as f64 / 4.0, self.hi * i as f64 / 4.0))
                .collect()
        }
    }
}

/// One panel of the chart along the network.
#[allow(clippy::too_many_arguments)]
fn along_panel(
    out: &mut String,
    y0: f64,
    h: f64,
    label: &str,
    bins: &[Bin],
    pick: &dyn Fn(&Bin) -> (u64, &str),
    scale: &Scale,
    colours: &Colours,
    show: &dyn Fn(f64) -> String,
    per: usize,
) {
    let x0 = 80.0;
    let w = WIDTH - x0 - 10.0;
    let _ = writeln!(
        out,
        "<text x=\"{x0:.0}\" y=\"{:.0}\" class=\"lbl\">{}</text>",
        y0 - 6.0,
        esc(label)
    );
    for (f, v) in scale.ticks() {
        let y = y0 + h - f * h;
        let _ = writeln!(
            out,
            "<line x1=\"{x0:.0}\" x2=\"{:.0}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"grid\"/><text x=\"{:.0}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"end\">{}</text>",
            x0 + w,
            x0 - 4.0,
            y + 4.0,
            esc(&show(v))
        );
    }
    let bw = w / bins.len().max(1) as f64;
    for (i, b) in bins.iter().enumerate() {
        let (v, op) = pick(b);
        let f = scale.frac(v);
        if f <= 0.0 {
            continue;
        }
        let bh = f * h;
        let which = if per == 1 {
            format!("layer {}", b.first + 1)
        } else {
            format!("layers {}–{}", b.first + 1, b.last + 1)
        };
        let _ = writeln!(
            out,
            "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{bh:.2}\" fill=\"{}\"><title>{which}: {} (heaviest: {})</title></rect>",
            x0 + i as f64 * bw,
            y0 + h - bh,
            (bw - if bw > 3.0 { 1.0 } else { 0.0 }).max(0.5),
            colours.of(op),
            esc(&show(v as f64)),
            esc(op)
        );
    }
}

fn along_svg(out: &mut String, bins: &[Bin], log: bool, colours: &Colours, d: usize, per: usize) {
    let h = 150.0;
    let height = 2.0 * h + 90.0;
    let _ = writeln!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" aria-label=\"FLOPs and bytes of every layer along the network\">"
    );
    let fs = Scale::new(bins.iter().map(|b| b.flops), log);
    let bs = Scale::new(bins.iter().map(|b| b.bytes), log);
    along_panel(
        out,
        25.0,
        h,
        "FLOPs",
        bins,
        &|b| (b.flops, b.op_flops.as_str()),
        &fs,
        colours,
        &|v| human(v, 1000.0, d.min(1)),
        per,
    );
    along_panel(
        out,
        h + 60.0,
        h,
        "Bytes read + written",
        bins,
        &|b| (b.bytes, b.op_bytes.as_str()),
        &bs,
        colours,
        &|v| human(v, 1024.0, d.min(1)) + "B",
        per,
    );
    let _ = writeln!(
        out,
        "<text x=\"{:.0}\" y=\"{:.0}\" class=\"tick\" text-anchor=\"middle\">layer, in execution order{}</text>\n</svg>",
        WIDTH / 2.0,
        height - 8.0,
        if per > 1 {
            format!(" (each bar sums {per} layers)")
        } else {
            String::new()
        }
    );
}

fn along(out: &mut String, report: &CostReport, colours: &Colours, d: usize) {
    if report.layers.is_empty() {
        return;
    }
    let per = report.layers.len().div_ceil(BINS).max(1);
    let bins = bins(&report.layers);
    out.push_str(
        "<section id=\"along\">\n<h2>Along the network</h2>\n<div class=\"scale\">\n\
         <input type=\"radio\" name=\"scale\" id=\"scale-lin\" checked><label for=\"scale-lin\">linear</label>\n\
         <input type=\"radio\" name=\"scale\" id=\"scale-log\"><label for=\"scale-log\">log</label>\n<div class=\"lin\">\n",
    );
    along_svg(out, &bins, false, colours, d, per);
    out.push_str("</div>\n<div class=\"log\">\n");
    along_svg(out, &bins, true, colours, d, per);
    out.push_str("</div>\n</div>\n</section>\n");
}

/// A log-log axis range covering `lo..hi`, in whole decades.
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let a = lo.log10().floor();
    let b = hi.log10().ceil();
    (a, if b > a { b } else { a + 1.0 })
}

fn roofline_chart(
    out: &mut String,
    report: &CostReport,
    r: &Roofline,
    colours: &Colours,
    d: usize,
) {
    let bw = r.device.bandwidth;
    // (intensity, attainable FLOP/s, layer index) of every plottable layer.
    let points: Vec<(f64, f64, usize)> = report
        .layers
        .iter()
        .zip(&r.layers)
        .enumerate()
        .filter_map(|(i, (l, t))| {
            let ai = t.intensity.filter(|a| *a > 0.0 && a.is_finite())?;
            let work = l.flops as f64 + l.iops as f64;
            (t.bound_s > 0.0).then(|| (ai, work / t.bound_s, i))
        })
        .collect();
    let peaks: Vec<(&String, f64)> = r.device.peak.iter().map(|(k, v)| (k, *v)).collect();
    let max_peak = peaks.iter().map(|p| p.1).fold(0.0, f64::max);
    let min_peak = peaks.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let ai_lo = points
        .iter()
        .map(|p| p.0)
        .fold(min_peak / bw / 10.0, f64::min);
    let ai_hi = points
        .iter()
        .map(|p| p.0)
        .fold(max_peak / bw * 10.0, f64::max);
    let perf_lo = points.iter().map(|p| p.1).fold(min_peak / 100.0, f64::min);
    let (xa, xb) = decades(ai_lo, ai_hi);
    let (ya, yb) = decades(perf_lo, max_peak);
    let (x0, y0, w, h) = (90.0, 20.0, WIDTH - 100.0 - 140.0, 420.0);
    let px = |ai: f64| x0 + (ai.log10() - xa) / (xb - xa) * w;
    let py = |p: f64| y0 + h - (p.log10() - ya) / (yb - ya) * h;
    out.push_str("<section id=\"roofline\">\n<h2>Roofline</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">{}: memory bandwidth {}/s; each point is a layer at its arithmetic intensity and the throughput its time bound allows (hover for its name).</p>",
        esc(&r.device.name),
        esc(&human(bw, 1000.0, 2)) + "B"
    );
    let _ = writeln!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {:.0}\" role=\"img\" aria-label=\"Roofline of the layers on {}\">",
        h + 70.0,
        esc(&r.device.name)
    );
    // Decade grid and labels.
    for e in xa as i32..=xb as i32 {
        let x = px(10f64.powi(e));
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0:.0}\" y2=\"{:.0}\" class=\"grid\"/><text x=\"{x:.1}\" y=\"{:.0}\" class=\"tick\" text-anchor=\"middle\">{}</text>",
            y0 + h,
            y0 + h + 16.0,
            esc(&human(10f64.powi(e), 1000.0, 0))
        );
    }
    for e in ya as i32..=yb as i32 {
        let y = py(10f64.powi(e));
        let _ = writeln!(
            out,
            "<line x1=\"{x0:.0}\" x2=\"{:.0}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"grid\"/><text x=\"{:.0}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"end\">{}</text>",
            x0 + w,
            x0 - 4.0,
            y + 4.0,
            esc(&human(10f64.powi(e), 1000.0, 0))
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.0}\" y=\"{:.0}\" class=\"tick\" text-anchor=\"middle\">arithmetic intensity (FLOP per byte)</text>\
         <text transform=\"translate(16 {:.0}) rotate(-90)\" class=\"tick\" text-anchor=\"middle\">attainable FLOP/s</text>",
        x0 + w / 2.0,
        y0 + h + 40.0,
        y0 + h / 2.0
    );
    // The bandwidth roof, up to the highest compute roof, then one flat roof
    // per precision from its ridge point on.
    let x_left = 10f64.powf(xa).max(10f64.powf(ya) / bw);
    let ridge_top = max_peak / bw;
    let _ = writeln!(
        out,
        "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" class=\"roof\"><title>memory bandwidth {}B/s</title></line>",
        px(x_left),
        py(bw * x_left),
        px(ridge_top),
        py(max_peak),
        esc(&human(bw, 1000.0, 2))
    );
    // Precisions that share a peak share a roof and a label.
    let mut roofs: Vec<(f64, Vec<&str>)> = Vec::new();
    for (p, v) in &peaks {
        match roofs.iter_mut().find(|r| r.0 == *v) {
            Some(r) => r.1.push(p.as_str()),
            None => roofs.push((*v, vec![p.as_str()])),
        }
    }
    for (v, names) in &roofs {
        let ridge = v / bw;
        let label = format!("{} {}FLOP/s", names.join(", "), human(*v, 1000.0, 1));
        let _ = writeln!(
            out,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" class=\"roof\"><title>{} peak</title></line><text x=\"{:.1}\" y=\"{:.1}\" class=\"tick\">{}</text>",
            px(ridge),
            py(*v),
            x0 + w,
            py(*v),
            esc(&label),
            x0 + w + 4.0,
            py(*v) + 4.0,
            esc(&label)
        );
    }
    // Points on the same pixel and of the same type are drawn once.
    let mut merged: Vec<(i64, i64, &'static str, Vec<usize>)> = Vec::new();
    let mut at: HashMap<(i64, i64, &'static str), usize> = HashMap::new();
    for (ai, perf, i) in &points {
        let key = (
            (px(*ai) * 2.0).round() as i64,
            (py(*perf) * 2.0).round() as i64,
            colours.of(&op_of(&report.layers[*i])),
        );
        match at.get(&key) {
            Some(&k) => merged[k].3.push(*i),
            None => {
                at.insert(key, merged.len());
                merged.push((key.0, key.1, key.2, vec![*i]));
            }
        }
    }
    for (x2, y2, colour, members) in &merged {
        let l = &report.layers[members[0]];
        let t = &r.layers[members[0]];
        let more = if members.len() > 1 {
            format!(" and {} more layers here", members.len() - 1)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{colour}\" class=\"pt\"><title>{} ({}): {:.2} FLOP/B, {}FLOP/s, {}, {}-bound{more}</title></circle>",
            *x2 as f64 / 2.0,
            *y2 as f64 / 2.0,
            esc(&l.name),
            esc(&op_of(l)),
            t.intensity.unwrap_or(0.0),
            esc(&human(
                (l.flops as f64 + l.iops as f64) / t.bound_s,
                1000.0,
                d.min(2)
            )),
            esc(&time_text(t.bound_s, d)),
            t.bound.as_str()
        );
    }
    out.push_str("</svg>\n");
    let unplotted = report.layers.len() - points.len();
    if unplotted > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{unplotted} {} with no FLOPs or no bytes {} not on the log-log chart.</p>",
            if unplotted == 1 { "layer" } else { "layers" },
            if unplotted == 1 { "is" } else { "are" }
        );
    }
    out.push_str("</section>\n");
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
    c
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
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n</noscript>\n</section>\n");
}

fn notes(out: &mut String, report: &CostReport, d: usize) {
    out.push_str("<section id=\"notes\">\n");
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
/// bound, intensity]`, the last three only with a device.
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
            if let Some(t) = roofline.and_then(|r| r.layers.get(i)) {
                row.push(json!(t.bound_s.is_finite().then_some(t.bound_s)));
                row.push(json!(t.bound.as_str()));
                row.push(json!(t.intensity.filter(|a| a.is_finite())));
            }
            Value::Array(row)
        })
        .collect();
    let doc = json!({
        "digits": digits,
        "device": roofline.is_some(),
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
