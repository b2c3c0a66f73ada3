//! The charts of the HTML page, as SVG: each operator type's share of the
//! work, every layer along the network, and the roofline.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{BINS, Colours, OTHER, WIDTH, bytes_text, esc, flops_text, human, op_of, time_text};
use crate::cost::{CostReport, LayerCost, Roofline};
use crate::ir::qualified;

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

pub(super) fn types(
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
    let mut measured: HashMap<String, f64> = HashMap::new();
    if let Some(m) = &report.measured {
        for g in &m.groups {
            *measured.entry(op_of(&report.layers[g.lead])).or_default() += g.seconds;
        }
    }
    let rows = 2 + usize::from(roofline.is_some()) + usize::from(report.measured.is_some());
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
    if report.measured.is_some() {
        let t: Vec<(String, f64)> = ops
            .iter()
            .map(|o| (o.clone(), measured.get(o).copied().unwrap_or(0.0)))
            .collect();
        let y = 10.0 + 45.0 * (rows - 1) as f64;
        share_bar(out, y, "Measured time", &t, colours, &|v| time_text(v, d));
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
    if report.measured.is_some() {
        head.push_str("<th class=\"n\">Measured</th><th class=\"n\">Measured %</th>");
    }
    if report.training.is_some() {
        head.push_str("<th class=\"n\">Bwd FLOPs</th><th class=\"n\">Bwd Bytes R+W</th>");
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
    let all_measured: f64 = measured.values().sum();
    for (i, (o, s)) in ops.iter().zip(&report.summary).enumerate() {
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
        if report.measured.is_some() {
            let t = measured.get(o).copied().unwrap_or(0.0);
            let _ = write!(
                out,
                "<td class=\"n\">{}</td><td class=\"n\">{}</td>",
                time_text(t, d),
                pct(t, all_measured)
            );
        }
        if let Some(b) = report.training.as_ref().and_then(|t| t.by_type.get(i)) {
            let _ = write!(
                out,
                "<td class=\"n\">{}</td><td class=\"n\">{}</td>",
                flops_text(b.flops, d),
                bytes_text(b.mread.saturating_add(b.mwrite), d)
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
            esc(&crate::error::cut(op, 20))
        );
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

pub(super) fn along(out: &mut String, report: &CostReport, colours: &Colours, d: usize) {
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

pub(super) fn roofline_chart(
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
            let work = t.work(l) as f64;
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
            esc(&human(t.work(l) as f64 / t.bound_s, 1000.0, d.min(2))),
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

/// Measured time against the bound, per kernel group of a profile: a point
/// above the diagonal ran slower than its roofline bound (all of them, on
/// real hardware); hover for its layers. With a calibrated device, the
/// predicted time of each group beside it.
pub(super) fn measured_chart(
    out: &mut String,
    report: &CostReport,
    r: &Roofline,
    colours: &Colours,
    d: usize,
) {
    let Some(m) = &report.measured else {
        return;
    };
    // (bound, measured, predicted, group) of every plottable group.
    let bounds = m.group_bounds(report, r);
    let points: Vec<(f64, f64, Option<f64>, usize)> = m
        .groups
        .iter()
        .enumerate()
        .filter_map(|(g, grp)| {
            let bound = bounds[g];
            let predicted: Option<f64> = grp
                .layers
                .iter()
                .map(|&i| r.layers[i].predicted_s)
                .sum::<Option<f64>>();
            (bound > 0.0 && grp.seconds > 0.0).then_some((bound, grp.seconds, predicted, g))
        })
        .collect();
    out.push_str("<section id=\"measured\">\n<h2>Measured against the bound</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">Each point is a kernel of the profile ({}): its roofline bound on {} across (its layers as one kernel: what it computes, and the bytes that cross its edge), its measured time up; the line is measured = bound.{}</p>",
        esc(&m.runtime),
        esc(&r.device.name),
        if r.predicts() {
            " Hollow points are the predicted times."
        } else {
            ""
        }
    );
    if points.is_empty() {
        out.push_str("<p class=\"note\">No kernel group has both a bound and a measured time.</p>\n</section>\n");
        return;
    }
    let lo = points
        .iter()
        .flat_map(|p| [p.0, p.1].into_iter().chain(p.2))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let hi = points
        .iter()
        .flat_map(|p| [p.0, p.1].into_iter().chain(p.2))
        .fold(0.0, f64::max);
    let (a, b) = decades(lo, hi);
    let (x0, y0, w, h) = (90.0, 20.0, WIDTH - 120.0, 420.0);
    let px = |v: f64| x0 + (v.log10() - a) / (b - a) * w;
    let py = |v: f64| y0 + h - (v.log10() - a) / (b - a) * h;
    let _ = writeln!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {:.0}\" role=\"img\" aria-label=\"Measured time against the roofline bound per kernel\">",
        h + 70.0
    );
    for e in a as i32..=b as i32 {
        let v = 10f64.powi(e);
        let _ = writeln!(
            out,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y0:.0}\" y2=\"{:.0}\" class=\"grid\"/><text x=\"{:.1}\" y=\"{:.0}\" class=\"tick\" text-anchor=\"middle\">{}</text>\
             <line x1=\"{x0:.0}\" x2=\"{:.0}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"grid\"/><text x=\"{:.0}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"end\">{}</text>",
            px(v),
            px(v),
            y0 + h,
            px(v),
            y0 + h + 16.0,
            esc(&time_text(v, 0)),
            x0 + w,
            py(v),
            py(v),
            x0 - 4.0,
            py(v) + 4.0,
            esc(&time_text(v, 0))
        );
    }
    let (lo_v, hi_v) = (10f64.powf(a), 10f64.powf(b));
    let _ = writeln!(
        out,
        "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" class=\"roof\"><title>measured = bound</title></line>\
         <text x=\"{:.0}\" y=\"{:.0}\" class=\"tick\" text-anchor=\"middle\">the kernel's roofline bound</text>\
         <text transform=\"translate(16 {:.0}) rotate(-90)\" class=\"tick\" text-anchor=\"middle\">measured time</text>",
        px(lo_v),
        py(lo_v),
        px(hi_v),
        py(hi_v),
        x0 + w / 2.0,
        y0 + h + 40.0,
        y0 + h / 2.0
    );
    for (bound, measured, predicted, g) in &points {
        let grp = &m.groups[*g];
        let lead = &report.layers[grp.lead];
        let colour = colours.of(&op_of(lead));
        let title = format!(
            "{} ({}{}): measured {}, bound {}{}",
            lead.name,
            op_of(lead),
            if grp.layers.len() > 1 {
                format!(" and {} fused layers", grp.layers.len() - 1)
            } else {
                String::new()
            },
            time_text(*measured, d),
            time_text(*bound, d),
            predicted.map_or(String::new(), |p| format!(
                ", predicted {}",
                time_text(p, d)
            ))
        );
        if let Some(p) = predicted.filter(|p| *p > 0.0) {
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"none\" stroke=\"{colour}\" class=\"pt\"><title>{}</title></circle>",
                px(*bound),
                py(p),
                esc(&title)
            );
        }
        let _ = writeln!(
            out,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{colour}\" class=\"pt\"><title>{}</title></circle>",
            px(*bound),
            py(*measured),
            esc(&title)
        );
    }
    out.push_str("</svg>\n</section>\n");
}
