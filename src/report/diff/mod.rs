//! Two cost reports side by side (`c3 diff A B`): per layer (matched by
//! name), per operator type and in total, each figure of A, of B and their
//! difference B − A. The counts compared are the [`FIGURES`] list over a
//! row's [`Side`]: a new count is one line there. The roofline bound, a time
//! in seconds, follows them when both sides were timed on a device.
//!
//! A layer's row is made from the two reports when it is written, not
//! kept: a diff of two large models holds little more than the reports.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use super::{Column, Meta, ReportOptions};
use crate::cost::roofline::Roofline;
use crate::cost::{CostReport, LayerCost, Totals};
use crate::ir::qualified;

mod json;
mod text;

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
pub struct DiffRow<'a> {
    /// The layer's name; the operator type for summary rows; `total`.
    pub name: Cow<'a, str>,
    /// The layer's operator (`A→B` when the two differ); empty otherwise.
    pub op: Cow<'a, str>,
    pub a: Option<Side>,
    pub b: Option<Side>,
}

impl DiffRow<'_> {
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

/// Two reports compared.
pub struct Diff<'a> {
    /// A and B, each with its roofline times only when both were timed.
    a: Report<'a>,
    b: Report<'a>,
    /// The layers compared, as indices into A's and B's: every layer of A
    /// in A's order, each beside the layer of B of the same name (the n-th
    /// of a repeated name beside B's n-th); then the layers only B has, in
    /// B's order.
    pairs: Vec<(Option<usize>, Option<usize>)>,
    /// Per operator type: A's types in A's order, then those only B has.
    pub summary: Vec<DiffRow<'a>>,
    pub total: DiffRow<'a>,
    /// Layers no rule counted, in A and in B.
    pub unsupported: (usize, usize),
    /// Whether both sides were timed on a device (rows carry `bound_s`).
    pub timed: bool,
    /// The layer at which each side's activation memory peaks.
    pub peak_at: (Option<&'a str>, Option<&'a str>),
}

impl<'a> Diff<'a> {
    /// The number of layer rows.
    pub fn layer_count(&self) -> usize {
        self.pairs.len()
    }

    /// The n-th layer row.
    pub fn layer(&self, n: usize) -> DiffRow<'a> {
        layer_row(self.a, self.b, self.pairs[n])
    }

    /// The layer rows in order.
    pub fn layers(&self) -> impl ExactSizeIterator<Item = DiffRow<'a>> + '_ {
        self.pairs.iter().map(|&p| layer_row(self.a, self.b, p))
    }

    /// Keeps only the rows that differ (`c3 diff --changed`); the total
    /// stays.
    pub fn only_changed(&mut self) {
        let (a, b) = (self.a, self.b);
        self.pairs.retain(|&p| layer_row(a, b, p).differs());
        self.summary.retain(DiffRow::differs);
    }
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

/// A layer's operator as rows show it, borrowed when it has no domain.
fn op_of(l: &LayerCost) -> Cow<'_, str> {
    if l.domain.is_empty() {
        Cow::Borrowed(&l.op)
    } else {
        Cow::Owned(qualified(&l.domain, &l.op))
    }
}

/// The row of A's layer `ia` beside B's layer `ib`.
fn layer_row<'a>(
    a: Report<'a>,
    b: Report<'a>,
    (ia, ib): (Option<usize>, Option<usize>),
) -> DiffRow<'a> {
    let la = ia.map(|i| &a.0.layers[i]);
    let lb = ib.map(|i| &b.0.layers[i]);
    let op = match (la, lb) {
        (Some(x), Some(y)) if (x.domain.as_str(), x.op.as_str()) != (&y.domain, &y.op) => {
            Cow::Owned(format!("{}→{}", op_of(x), op_of(y)))
        }
        (Some(l), _) | (None, Some(l)) => op_of(l),
        (None, None) => Cow::Borrowed(""),
    };
    DiffRow {
        name: Cow::Borrowed(la.or(lb).map_or("", |l| l.name.as_str())),
        op,
        a: ia.map(|i| layer_side(a, i)),
        b: ib.map(|i| layer_side(b, i)),
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
pub fn diff<'a>(a: Report<'a>, b: Report<'a>) -> Diff<'a> {
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
    let mut pairs = Vec::with_capacity(ra.layers.len().max(rb.layers.len()));
    for (n, la) in ra.layers.iter().enumerate() {
        let lb = by_name.get_mut(la.name.as_str()).and_then(Vec::pop);
        if let Some(i) = lb {
            used[i] = true;
        }
        pairs.push((Some(n), lb));
    }
    drop(by_name);
    pairs.extend(
        (0..rb.layers.len())
            .filter(|&i| !used[i])
            .map(|i| (None, Some(i))),
    );
    let mut summary: Vec<DiffRow> = type_sides(a)
        .into_iter()
        .map(|(name, side)| DiffRow {
            name: name.into(),
            op: Cow::Borrowed(""),
            a: Some(side),
            b: None,
        })
        .collect();
    for (name, side) in type_sides(b) {
        match summary.iter_mut().find(|r| r.name == name) {
            Some(r) => r.b = Some(side),
            None => summary.push(DiffRow {
                name: name.into(),
                op: Cow::Borrowed(""),
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
        a,
        b,
        pairs,
        summary,
        total: DiffRow {
            name: "total".into(),
            op: Cow::Borrowed(""),
            a: Some(total(a)),
            b: Some(total(b)),
        },
        unsupported: (ra.unsupported.len(), rb.unsupported.len()),
        timed,
        peak_at: (ra.peak.at.as_deref(), rb.peak.at.as_deref()),
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

/// Writes a diff in `opts.format` (table, md, csv or json) to `w` as it is
/// made; `opts.parts` picks the layers, the summary or both (CSV: the
/// layers, or the summary with `--summary`).
pub fn write(
    d: &Diff,
    sides: &Sides,
    opts: &ReportOptions,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match opts.format {
        super::Format::Json => json::write(d, sides, opts.parts, w),
        _ => text::write(d, sides, opts, w),
    }
}

/// [`write()`]'s text.
pub fn render(d: &Diff, sides: &Sides, opts: &ReportOptions) -> String {
    let mut out = Vec::new();
    write(d, sides, opts, &mut out).expect("writing to memory cannot fail");
    // Every piece written is a Rust string.
    String::from_utf8(out).expect("a diff is UTF-8")
}
