//! Two cost reports side by side (`c3 diff A B`): per layer (matched by
//! name), per operator type and in total, each figure of A, of B and their
//! difference B − A. The counts compared are the [`FIGURES`] list over a
//! row's [`Side`]: a new count is one line there. The roofline bound, a time
//! in seconds, follows them when both sides were timed on a device.

use std::fmt::Write;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value, json};

use super::{Column, Format, Grid, Meta, Parts, ReportOptions, Scaler, Unit, fit, text};
use crate::cost::roofline::Roofline;
use crate::cost::{CostReport, LayerCost, Totals};
use crate::ir::qualified;

/// One side's figures of a row: its counts, the most activation bytes live
/// at once while its layers run (a layer's live bytes; a type's largest; the
/// model's peak) and, when timed on a device, the sum of its layers'
/// roofline bounds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Side {
    pub totals: Totals,
    pub live: u64,
    pub bound_s: Option<f64>,
}

/// One figure a diff compares.
pub struct Figure {
    /// Its JSON key (as in the estimate's `total`) and CSV name.
    pub key: &'static str,
    /// Its name in table headers.
    pub name: &'static str,
    /// The report column that scales and heads it (`None`: a plain count).
    pub column: Option<Column>,
    /// Whether tables show its change in percent.
    pub percent: bool,
    /// Reads it from one side of a row.
    pub of: fn(&Side) -> u64,
}

/// The figures of [`Totals`] a diff compares, in the order shown.
pub const FIGURES: &[Figure] = &[
    Figure {
        key: "layers",
        name: "# Layers",
        column: None,
        percent: false,
        of: |s| s.totals.layers,
    },
    Figure {
        key: "flops",
        name: "FLOPs",
        column: Some(Column::Flops),
        percent: true,
        of: |s| s.totals.flops,
    },
    Figure {
        key: "iops",
        name: "IOPs",
        column: Some(Column::Iops),
        percent: false,
        of: |s| s.totals.iops,
    },
    Figure {
        key: "mread",
        name: "MemRead",
        column: Some(Column::Mread),
        percent: false,
        of: |s| s.totals.mread,
    },
    Figure {
        key: "mwrite",
        name: "MemWrite",
        column: Some(Column::Mwrite),
        percent: false,
        of: |s| s.totals.mwrite,
    },
    Figure {
        key: "mrw",
        name: "MemR+W",
        column: Some(Column::Mrw),
        percent: true,
        of: |s| s.totals.mrw,
    },
    Figure {
        key: "params",
        name: "Params",
        column: Some(Column::Params),
        percent: false,
        of: |s| s.totals.params,
    },
    Figure {
        key: "weight_bytes",
        name: "Weights",
        column: Some(Column::Weights),
        percent: false,
        of: |s| s.totals.weight_bytes,
    },
    Figure {
        key: "peak_activation_bytes",
        name: "Live",
        column: Some(Column::Live),
        percent: true,
        of: |s| s.live,
    },
];

/// One row of a diff: a layer, an operator type or the total, with its
/// figures in A and in B (`None` where that side has no such row).
#[derive(Debug, Clone, PartialEq)]
pub struct DiffRow {
    /// The layer's name; the operator type for summary rows; `total`.
    pub name: String,
    /// The layer's operator (`A→B` when the two differ); empty otherwise.
    pub op: String,
    pub a: Option<Side>,
    pub b: Option<Side>,
}

impl DiffRow {
    /// B − A of a figure, a missing side counting as zero.
    pub fn delta(&self, f: &Figure) -> i128 {
        let v = |t: &Option<Side>| t.as_ref().map_or(0, |t| i128::from((f.of)(t)));
        v(&self.b) - v(&self.a)
    }

    /// Whether B differs from A in any figure, its bound included, or one
    /// side is missing.
    pub fn differs(&self) -> bool {
        self.a.is_none()
            || self.b.is_none()
            || FIGURES.iter().any(|f| self.delta(f) != 0)
            || self.delta_s().is_some_and(|d| d != 0.0)
    }

    /// B − A of the roofline bound, a missing side counting as zero;
    /// `None` when the sides were not timed.
    pub fn delta_s(&self) -> Option<f64> {
        let v = |t: &Option<Side>| t.as_ref().map_or(Some(0.0), |t| t.bound_s);
        Some(v(&self.b)? - v(&self.a)?)
    }
}

impl Diff {
    /// Keeps only the rows that differ (`c3 diff --changed`); the total
    /// stays.
    pub fn only_changed(&mut self) {
        self.layers.retain(DiffRow::differs);
        self.summary.retain(DiffRow::differs);
    }
}

/// Two reports compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    /// Every layer of A in A's order, each beside the layer of B of the
    /// same name (the n-th of a repeated name beside B's n-th); then the
    /// layers only B has, in B's order.
    pub layers: Vec<DiffRow>,
    /// Per operator type: A's types in A's order, then those only B has.
    pub summary: Vec<DiffRow>,
    pub total: DiffRow,
    /// Layers no rule counted, in A and in B.
    pub unsupported: (usize, usize),
    /// Whether both sides were timed on a device (rows carry `bound_s`).
    pub timed: bool,
    /// The layer at which each side's activation memory peaks.
    pub peak_at: (Option<String>, Option<String>),
}

/// One side of a diff: a cost report and its roofline times, if any.
pub type Report<'a> = (&'a CostReport, Option<&'a Roofline>);

/// The n-th layer's figures as a side of its own.
fn layer_side((r, t): Report, n: usize) -> Side {
    let l: &LayerCost = &r.layers[n];
    Side {
        totals: Totals::of_layer(l),
        live: l.live_bytes,
        bound_s: t.map(|t| t.layers[n].bound_s),
    }
}

/// Each operator type's figures: its totals, its layers' largest live
/// bytes and the sum of their bounds.
fn type_sides((r, t): Report) -> Vec<(String, Side)> {
    let mut by_type: FxHashMap<(&str, &str), (u64, f64)> = FxHashMap::default();
    for (n, l) in r.layers.iter().enumerate() {
        let e = by_type
            .entry((l.domain.as_str(), l.op.as_str()))
            .or_default();
        e.0 = e.0.max(l.live_bytes);
        e.1 += t.map_or(0.0, |t| t.layers[n].bound_s);
    }
    r.summary
        .iter()
        .map(|s| {
            let (live, bound) = by_type
                .get(&(s.domain.as_str(), s.op.as_str()))
                .copied()
                .unwrap_or_default();
            let side = Side {
                totals: s.totals,
                live,
                bound_s: t.map(|_| bound),
            };
            (qualified(&s.domain, &s.op), side)
        })
        .collect()
}

/// Compares two cost reports (each with its roofline times, if any).
pub fn diff(a: Report, b: Report) -> Diff {
    let timed = a.1.is_some() && b.1.is_some();
    // Rows carry times only when both sides have them.
    let (a, b) = if timed {
        (a, b)
    } else {
        ((a.0, None), (b.0, None))
    };
    let (ra, rb) = (a.0, b.0);
    // B's layers by name, each name's occurrences in order.
    let mut by_name: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
    for (i, l) in rb.layers.iter().enumerate().rev() {
        by_name.entry(l.name.as_str()).or_default().push(i);
    }
    let mut used = vec![false; rb.layers.len()];
    let mut layers = Vec::with_capacity(ra.layers.len().max(rb.layers.len()));
    for (n, la) in ra.layers.iter().enumerate() {
        let lb = by_name.get_mut(la.name.as_str()).and_then(Vec::pop);
        let op_a = qualified(&la.domain, &la.op);
        let op = match lb.map(|i| &rb.layers[i]) {
            Some(lb) if (lb.domain.as_str(), lb.op.as_str()) != (&la.domain, &la.op) => {
                format!("{op_a}→{}", qualified(&lb.domain, &lb.op))
            }
            _ => op_a,
        };
        if let Some(i) = lb {
            used[i] = true;
        }
        layers.push(DiffRow {
            name: la.name.clone(),
            op,
            a: Some(layer_side(a, n)),
            b: lb.map(|i| layer_side(b, i)),
        });
    }
    for (i, (lb, _)) in rb.layers.iter().zip(&used).enumerate() {
        if used[i] {
            continue;
        }
        layers.push(DiffRow {
            name: lb.name.clone(),
            op: qualified(&lb.domain, &lb.op),
            a: None,
            b: Some(layer_side(b, i)),
        });
    }
    let mut summary: Vec<DiffRow> = type_sides(a)
        .into_iter()
        .map(|(name, side)| DiffRow {
            name,
            op: String::new(),
            a: Some(side),
            b: None,
        })
        .collect();
    for (name, side) in type_sides(b) {
        match summary.iter_mut().find(|r| r.name == name) {
            Some(r) => r.b = Some(side),
            None => summary.push(DiffRow {
                name,
                op: String::new(),
                a: None,
                b: Some(side),
            }),
        }
    }
    let total = |(r, t): Report| Side {
        totals: r.total,
        live: r.peak.bytes,
        bound_s: t.map(|t| t.bound_s),
    };
    Diff {
        layers,
        summary,
        total: DiffRow {
            name: "total".into(),
            op: String::new(),
            a: Some(total(a)),
            b: Some(total(b)),
        },
        unsupported: (ra.unsupported.len(), rb.unsupported.len()),
        timed,
        peak_at: (ra.peak.at.clone(), rb.peak.at.clone()),
    }
}

/// A side's model and options as (label, value).
pub type About = Vec<(String, String)>;

/// What the two sides were: each one's meta (JSON) and its model and
/// options (the human formats' header).
#[derive(Debug, Clone, Default)]
pub struct Sides {
    pub meta: (Meta, Meta),
    pub about: (About, About),
}

/// Renders a diff in `opts.format` (table, md, csv or json); `opts.parts`
/// picks the layers, the summary or both (CSV: the layers, or the summary
/// with `--summary`).
pub fn render(d: &Diff, sides: &Sides, opts: &ReportOptions) -> String {
    match opts.format {
        Format::Json => return json(d, sides, opts.parts),
        Format::Csv => {
            let mut opts = opts.clone();
            if opts.unit == Unit::Auto {
                opts.unit = Unit::None;
            }
            let s = scaler(d, &opts);
            let rows = match opts.parts {
                Parts::Summary => Rows::Summary,
                _ => Rows::Layers,
            };
            return super::csv(&grid(d, rows, &s));
        }
        _ => {}
    }
    let s = scaler(d, opts);
    let mut grids = Vec::new();
    if opts.parts != Parts::Summary {
        grids.push(grid(d, Rows::Layers, &s));
    }
    if opts.parts != Parts::Layers {
        grids.push(grid(d, Rows::Summary, &s));
    }
    if opts.format == Format::Table {
        // Narrower columns: a header's unit on a line of its own.
        for g in &mut grids {
            for h in &mut g.header {
                if let Some((name, rest)) = h.split_once(" (")
                    && let Some((unit, side)) = rest.split_once(") ")
                {
                    *h = format!("{name} {side}\n({unit})");
                }
            }
        }
    }
    let mut out = String::new();
    let md = opts.format != Format::Table;
    for line in header_lines(d, sides) {
        let bullet = if md { "- " } else { "" };
        let _ = writeln!(out, "{bullet}{}", text::shown(&line));
    }
    out.push('\n');
    for g in &grids {
        if md {
            let _ = writeln!(out, "### {}\n\n{}", g.title, super::markdown(g));
            continue;
        }
        let _ = writeln!(out, "{}", fit::title(&g.title, opts.color));
        let (t, dropped) = fit::fitted(g, opts.width, opts.color);
        let _ = writeln!(out, "{t}");
        if let Some(note) = dropped {
            let _ = writeln!(out, "{note}");
        }
        out.push('\n');
    }
    if md {
        out
    } else {
        fit::wrap_prose(&out, opts.width)
    }
}

/// `A: model (options)` and `B: ...`, then the layers either side left
/// uncounted.
fn header_lines(d: &Diff, sides: &Sides) -> Vec<String> {
    let line = |side: &str, about: &[(String, String)]| {
        let model = about
            .iter()
            .find(|(k, _)| k == "model")
            .map_or("", |(_, v)| v.as_str());
        match super::roofline::options_line(about) {
            Some(o) => format!("{side}: {model}. {o}"),
            None => format!("{side}: {model}"),
        }
    };
    let mut lines = vec![line("A", &sides.about.0), line("B", &sides.about.1)];
    for (side, n) in [("A", d.unsupported.0), ("B", d.unsupported.1)] {
        if n > 0 {
            lines.push(format!(
                "{side}: {n} layer(s) not counted (no rule or unknown shapes)"
            ));
        }
    }
    lines
}

/// One prefix per kind of figure, from the larger side's totals.
fn scaler(d: &Diff, opts: &ReportOptions) -> Scaler {
    let side = |t: &Option<Side>| t.map(|s| s.totals).unwrap_or_default();
    let (a, b) = (side(&d.total.a), side(&d.total.b));
    let larger = Totals {
        layers: a.layers.max(b.layers),
        flops: a.flops.max(b.flops),
        work: a.work.max(b.work),
        mread: a.mread.max(b.mread),
        mwrite: a.mwrite.max(b.mwrite),
        mrw: a.mrw.max(b.mrw),
        iops: a.iops.max(b.iops),
        params: a.params.max(b.params),
        weight_bytes: a.weight_bytes.max(b.weight_bytes),
    };
    Scaler::new(opts, &larger)
}

#[derive(Clone, Copy, PartialEq)]
enum Rows {
    Layers,
    Summary,
}

/// The figures shown: integer work only when either side has some.
fn shown_figures(d: &Diff) -> impl Iterator<Item = &'static Figure> + '_ {
    FIGURES.iter().filter(|f| {
        f.key != "iops"
            || [d.total.a, d.total.b]
                .iter()
                .any(|t| t.is_some_and(|t| t.totals.iops > 0))
    })
}

fn grid(d: &Diff, rows: Rows, s: &Scaler) -> Grid {
    let (header, keys): (&[&str], &[&str]) = match rows {
        Rows::Layers => (&["Layer", "Op"], &["name", "op"]),
        Rows::Summary => (&["Op"], &["op"]),
    };
    let mut header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    let lead = header.len();
    for f in shown_figures(d).filter(|f| rows == Rows::Summary || f.key != "layers") {
        let (head, key) = match f.column {
            Some(c) => (s.header(c), s.key(c)),
            None => (f.name.to_string(), f.key.to_string()),
        };
        for side in ["A", "B", "Δ"] {
            header.push(format!("{head} {side}"));
        }
        for side in ["a", "b", "delta"] {
            keys.push(format!("{key}_{side}"));
        }
        if f.percent {
            header.push(format!("{} Δ%", f.name));
            keys.push(format!("{}_delta_pct", f.key));
        }
    }
    if d.timed {
        for side in ["A", "B", "Δ"] {
            header.push(format!("Bound (µs) {side}"));
        }
        header.push("Bound Δ%".into());
        for side in ["a", "b", "delta"] {
            keys.push(format!("bound_us_{side}"));
        }
        keys.push("bound_delta_pct".into());
    }
    let list: Vec<&DiffRow> = match rows {
        Rows::Layers => d.layers.iter().collect(),
        Rows::Summary => d.summary.iter().chain([&d.total]).collect(),
    };
    let cells = |r: &DiffRow| {
        let mut cells = vec![r.name.clone()];
        if rows == Rows::Layers {
            cells.push(r.op.clone());
        }
        for f in shown_figures(d).filter(|f| rows == Rows::Summary || f.key != "layers") {
            let value = |v: u64| match f.column {
                Some(c) => s.value(v, c),
                None => v.to_string(),
            };
            for t in [&r.a, &r.b] {
                cells.push(t.as_ref().map_or("-".into(), |t| value((f.of)(t))));
            }
            let delta = r.delta(f);
            let magnitude = value(u64::try_from(delta.unsigned_abs()).unwrap_or(u64::MAX));
            cells.push(match delta {
                0 => magnitude,
                d if d < 0 => format!("-{magnitude}"),
                _ => format!("+{magnitude}"),
            });
            if f.percent {
                let a = r.a.as_ref().map_or(0, |t| (f.of)(t));
                cells.push(percent(a as f64, delta as f64, s.digits));
            }
        }
        if d.timed {
            let us = |v: f64| format!("{:.*}", s.digits, v * 1e6);
            for t in [&r.a, &r.b] {
                cells.push(t.and_then(|t| t.bound_s).map_or("-".into(), us));
            }
            let delta = r.delta_s().unwrap_or(0.0);
            cells.push(if delta > 0.0 {
                format!("+{}", us(delta))
            } else {
                us(delta)
            });
            let a = r.a.and_then(|t| t.bound_s).unwrap_or(0.0);
            cells.push(percent(a, delta, s.digits));
        }
        cells
    };
    Grid {
        title: match rows {
            Rows::Layers => "Difference by layer (B − A)".into(),
            Rows::Summary => "Difference by operator type (B − A)".into(),
        },
        numeric: (0..header.len()).map(|i| i >= lead).collect(),
        header,
        keys,
        rows: list.into_iter().map(cells).collect(),
    }
}

/// A change in percent of `a`: `new` when `a` is zero and something came.
fn percent(a: f64, delta: f64, digits: usize) -> String {
    if delta == 0.0 {
        format!("{:.*}", digits, 0.0)
    } else if a == 0.0 {
        "new".into()
    } else {
        format!("{:+.*}", digits, 100.0 * delta / a)
    }
}

/// `{"a": {figures}, "b": ..., "delta": ...}` of one row; a missing side is
/// `null`. Timed rows carry `bound_s` (seconds) among the figures.
fn row_json(r: &DiffRow) -> Map<String, Value> {
    let side = |t: &Option<Side>| match t {
        None => Value::Null,
        Some(t) => {
            let mut m: Map<_, _> = FIGURES
                .iter()
                .map(|f| (f.key.to_string(), json!((f.of)(t))))
                .collect();
            if let Some(b) = t.bound_s {
                m.insert("bound_s".into(), json!(b));
            }
            m.into()
        }
    };
    let mut delta: Map<String, Value> = FIGURES
        .iter()
        .map(|f| {
            let d = r.delta(f);
            // Within ±2^64: i64 holds every difference a real model has;
            // a larger one is written as a float.
            let v = i64::try_from(d).map_or_else(|_| json!(d as f64), |d| json!(d));
            (f.key.to_string(), v)
        })
        .collect();
    if let Some(d) = r.delta_s() {
        delta.insert("bound_s".into(), json!(d));
    }
    let mut m = Map::new();
    m.insert("a".into(), side(&r.a));
    m.insert("b".into(), side(&r.b));
    m.insert("delta".into(), delta.into());
    m
}

/// The diff as JSON: `meta` (with the parts shown), `a` and `b` (each
/// side's model and options, as an estimate's `meta`), `total`, and the
/// `summary` and `layers` asked for.
fn json(d: &Diff, sides: &Sides, parts: Parts) -> String {
    let mut meta = Meta::default();
    meta.set(
        "parts",
        match parts {
            Parts::Both => "both",
            Parts::Layers => "layers",
            Parts::Summary => "summary",
        },
    );
    let mut doc = Map::new();
    let to_value = |m: &Meta| serde_json::to_value(m).unwrap_or(Value::Null);
    doc.insert("meta".into(), to_value(&meta));
    doc.insert("a".into(), to_value(&sides.meta.0));
    doc.insert("b".into(), to_value(&sides.meta.1));
    let mut total = row_json(&d.total);
    for (side, at) in [("a", &d.peak_at.0), ("b", &d.peak_at.1)] {
        if let Some(Value::Object(m)) = total.get_mut(side) {
            m.insert("peak_at".into(), json!(at));
        }
    }
    doc.insert("total".into(), total.into());
    if parts != Parts::Layers {
        let rows = d.summary.iter().map(|r| {
            let mut m = Map::new();
            m.insert("op".into(), r.name.clone().into());
            m.extend(row_json(r));
            Value::from(m)
        });
        doc.insert("summary".into(), rows.collect::<Vec<_>>().into());
    }
    if parts != Parts::Summary {
        let rows = d.layers.iter().map(|r| {
            let mut m = Map::new();
            m.insert("name".into(), r.name.clone().into());
            m.insert("op".into(), r.op.clone().into());
            m.extend(row_json(r));
            Value::from(m)
        });
        doc.insert("layers".into(), rows.collect::<Vec<_>>().into());
    }
    serde_json::to_string_pretty(&Value::from(doc)).expect("JSON values always serialize") + "\n"
}
