//! Two cost reports side by side (`c3 diff A B`): per layer (matched by
//! name), per operator type and in total, each figure of A, of B and their
//! difference B − A. The figures compared are the [`FIGURES`] list over
//! [`Totals`]: a new figure of the totals is one line there.

use std::fmt::Write;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value, json};

use super::{Column, Format, Grid, Meta, Parts, ReportOptions, Scaler, Unit, fit, text};
use crate::cost::{CostReport, LayerCost, Totals};
use crate::ir::qualified;

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
    /// Reads it from a set of totals.
    pub of: fn(&Totals) -> u64,
}

/// The figures of [`Totals`] a diff compares, in the order shown.
pub const FIGURES: &[Figure] = &[
    Figure {
        key: "layers",
        name: "# Layers",
        column: None,
        percent: false,
        of: |t| t.layers,
    },
    Figure {
        key: "flops",
        name: "FLOPs",
        column: Some(Column::Flops),
        percent: true,
        of: |t| t.flops,
    },
    Figure {
        key: "iops",
        name: "IOPs",
        column: Some(Column::Iops),
        percent: false,
        of: |t| t.iops,
    },
    Figure {
        key: "mread",
        name: "MemRead",
        column: Some(Column::Mread),
        percent: false,
        of: |t| t.mread,
    },
    Figure {
        key: "mwrite",
        name: "MemWrite",
        column: Some(Column::Mwrite),
        percent: false,
        of: |t| t.mwrite,
    },
    Figure {
        key: "mrw",
        name: "MemR+W",
        column: Some(Column::Mrw),
        percent: true,
        of: |t| t.mrw,
    },
    Figure {
        key: "params",
        name: "Params",
        column: Some(Column::Params),
        percent: false,
        of: |t| t.params,
    },
    Figure {
        key: "weight_bytes",
        name: "Weights",
        column: Some(Column::Weights),
        percent: false,
        of: |t| t.weight_bytes,
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
    pub a: Option<Totals>,
    pub b: Option<Totals>,
}

impl DiffRow {
    /// B − A of a figure, a missing side counting as zero.
    pub fn delta(&self, f: &Figure) -> i128 {
        let v = |t: &Option<Totals>| t.as_ref().map_or(0, |t| i128::from((f.of)(t)));
        v(&self.b) - v(&self.a)
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
}

/// One layer's figures as totals over that one layer.
fn layer_totals(l: &LayerCost) -> Totals {
    Totals {
        layers: 1,
        flops: l.flops,
        mread: l.mread,
        mwrite: l.mwrite,
        mrw: l.mrw(),
        iops: l.iops,
        params: l.params,
        weight_bytes: l.weight_bytes,
    }
}

/// Compares two cost reports.
pub fn diff(a: &CostReport, b: &CostReport) -> Diff {
    // B's layers by name, each name's occurrences in order.
    let mut by_name: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
    for (i, l) in b.layers.iter().enumerate().rev() {
        by_name.entry(l.name.as_str()).or_default().push(i);
    }
    let mut used = vec![false; b.layers.len()];
    let mut layers = Vec::with_capacity(a.layers.len().max(b.layers.len()));
    for la in &a.layers {
        let lb = by_name.get_mut(la.name.as_str()).and_then(Vec::pop);
        let op_a = qualified(&la.domain, &la.op);
        let op = match lb.map(|i| &b.layers[i]) {
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
            a: Some(layer_totals(la)),
            b: lb.map(|i| layer_totals(&b.layers[i])),
        });
    }
    for (lb, _) in b.layers.iter().zip(&used).filter(|(_, u)| !**u) {
        layers.push(DiffRow {
            name: lb.name.clone(),
            op: qualified(&lb.domain, &lb.op),
            a: None,
            b: Some(layer_totals(lb)),
        });
    }
    let mut summary: Vec<DiffRow> = a
        .summary
        .iter()
        .map(|s| DiffRow {
            name: qualified(&s.domain, &s.op),
            op: String::new(),
            a: Some(s.totals),
            b: None,
        })
        .collect();
    for s in &b.summary {
        let name = qualified(&s.domain, &s.op);
        match summary.iter_mut().find(|r| r.name == name) {
            Some(r) => r.b = Some(s.totals),
            None => summary.push(DiffRow {
                name,
                op: String::new(),
                a: None,
                b: Some(s.totals),
            }),
        }
    }
    Diff {
        layers,
        summary,
        total: DiffRow {
            name: "total".into(),
            op: String::new(),
            a: Some(a.total),
            b: Some(b.total),
        },
        unsupported: (a.unsupported.len(), b.unsupported.len()),
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
    let side = |t: &Option<Totals>| t.unwrap_or_default();
    let (a, b) = (side(&d.total.a), side(&d.total.b));
    let larger = Totals {
        layers: a.layers.max(b.layers),
        flops: a.flops.max(b.flops),
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
                .any(|t| t.is_some_and(|t| t.iops > 0))
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
                cells.push(match (a, delta) {
                    (_, 0) => format!("{:.*}", s.digits, 0.0),
                    (0, _) => "new".into(),
                    (a, d) => format!("{:+.*}", s.digits, 100.0 * d as f64 / a as f64),
                });
            }
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

/// `{"a": {figures}, "b": ..., "delta": ...}` of one row; a missing side is
/// `null`.
fn row_json(r: &DiffRow) -> Map<String, Value> {
    let side = |t: &Option<Totals>| match t {
        None => Value::Null,
        Some(t) => FIGURES
            .iter()
            .map(|f| (f.key.to_string(), json!((f.of)(t))))
            .collect::<Map<_, _>>()
            .into(),
    };
    let delta: Map<String, Value> = FIGURES
        .iter()
        .map(|f| {
            let d = r.delta(f);
            // Within ±2^64: i64 holds every difference a real model has;
            // a larger one is written as a float.
            let v = i64::try_from(d).map_or_else(|_| json!(d as f64), |d| json!(d));
            (f.key.to_string(), v)
        })
        .collect();
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
    doc.insert("total".into(), row_json(&d.total).into());
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
