//! Reports of a [`CostReport`]: table, Markdown, CSV, JSON, HTML and Model
//! Explorer node data.
//!
//! The report only formats what the cost stage computed; it derives nothing
//! but sums' shares (%) and unit scaling.

pub mod batch;
pub mod catalog;
pub mod diff;
pub mod explain;
mod fit;
pub mod flags;
pub mod html;
mod json;
mod lazy_grid;
mod meta;
pub mod model_explorer;
mod model_line;
mod notes;
use notes::{assumed_line, folded_lines, fusion_line, skipped_lines};
mod pretty;
mod roofline;
mod rows;
mod scaler;
pub mod shapes;
pub mod text;
mod timing;
mod training;
pub mod tree;

use std::fmt::Write as _;
use std::str::FromStr;

use crate::cost::Roofline;
use crate::cost::{CostReport, Totals};
use crate::ir::TensorFact;
use crate::rules::value::show_value;

pub use fit::{ColorChoice, terminal_width};
pub use flags::ReportFlags;
pub use json::to_json;
pub use meta::{Meta, wrap as wrap_json};
use model_line::model_line;
pub use rows::{SortKey, layer_rows};
use scaler::Scaler;

/// The format of a cost report (`c3 estimate --format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    #[value(alias = "markdown")]
    Md,
    Csv,
    Json,
    /// A self-contained page with charts.
    Html,
    /// Model Explorer's node data.
    ModelExplorer,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "table" => Format::Table,
            "md" | "markdown" => Format::Md,
            "csv" => Format::Csv,
            "json" => Format::Json,
            "html" => Format::Html,
            "model-explorer" => Format::ModelExplorer,
            _ => {
                return Err(format!(
                    "unknown format '{s}' (table, md, csv, json, html, model-explorer)"
                ));
            }
        })
    }
}

/// Unit prefix for FLOPs (powers of 1000) and bytes (powers of 1024).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Unit {
    /// Per column, the largest prefix the column's largest value reaches.
    Auto,
    /// Exact integers.
    None,
    /// Thousands (FLOPs) or KiB (bytes).
    #[value(name = "K", alias = "k")]
    K,
    /// Millions, or MiB.
    #[value(name = "M")]
    M,
    /// Billions, or GiB.
    #[value(name = "G")]
    G,
    /// Trillions, or TiB.
    #[value(name = "T")]
    T,
}

/// The format of a listing: rules, devices, shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
}

impl FromStr for Unit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => Unit::Auto,
            "none" => Unit::None,
            "K" | "k" => Unit::K,
            "M" => Unit::M,
            "G" => Unit::G,
            "T" => Unit::T,
            _ => return Err(format!("unknown unit '{s}' (auto, none, K, M, G, T)")),
        })
    }
}

const PREFIXES: [&str; 5] = ["", "K", "M", "G", "T"];

impl Unit {
    /// The power of the radix this unit stands for, given the column's largest value.
    fn power(self, largest: u64, radix: u64) -> usize {
        match self {
            Unit::None => 0,
            Unit::K => 1,
            Unit::M => 2,
            Unit::G => 3,
            Unit::T => 4,
            Unit::Auto => {
                let mut p = 0;
                let mut v = largest;
                while v >= radix && p < 4 {
                    v /= radix;
                    p += 1;
                }
                p
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Name,
    Op,
    Flops,
    Mread,
    Mwrite,
    Mrw,
    /// Integer operations (quantized layers); shown when a layer has any.
    Iops,
    /// Runs per model run (a Loop body's layers); shown when one runs more than once.
    Runs,
    FlopsPct,
    MreadPct,
    MwritePct,
    MrwPct,
    Inputs,
    Outputs,
    /// The attributes the rule shows (`k`, `s`, `groups`...).
    Attrs,
    /// Elements of the parameters a layer reads; the total counts each
    /// distinct tensor once.
    Params,
    /// Their bytes.
    Weights,
    /// Activation bytes live while the layer runs; the total is the peak.
    Live,
}

const COLUMN_NAMES: &[(&str, Column)] = &[
    ("name", Column::Name),
    ("op", Column::Op),
    ("flops", Column::Flops),
    ("mread", Column::Mread),
    ("mwrite", Column::Mwrite),
    ("mrw", Column::Mrw),
    ("iops", Column::Iops),
    ("runs", Column::Runs),
    ("flops%", Column::FlopsPct),
    ("mread%", Column::MreadPct),
    ("mwrite%", Column::MwritePct),
    ("mrw%", Column::MrwPct),
    ("inputs", Column::Inputs),
    ("outputs", Column::Outputs),
    ("attrs", Column::Attrs),
    ("params", Column::Params),
    ("weights", Column::Weights),
    ("live", Column::Live),
];

pub const DEFAULT_COLUMNS: &[Column] = &[
    Column::Name,
    Column::Op,
    Column::Flops,
    Column::Mread,
    Column::Mwrite,
    Column::Mrw,
    Column::Params,
];

/// Parses `--columns`: a comma list of column names, or `default`, `percent`, `all`.
pub fn parse_columns(s: &str) -> Result<Vec<Column>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let group: Vec<Column> = match part {
            "default" => DEFAULT_COLUMNS.to_vec(),
            "percent" => {
                let mut v = DEFAULT_COLUMNS.to_vec();
                v.extend([
                    Column::FlopsPct,
                    Column::MreadPct,
                    Column::MwritePct,
                    Column::MrwPct,
                ]);
                v
            }
            "all" => COLUMN_NAMES.iter().map(|c| c.1).collect(),
            _ => vec![
                COLUMN_NAMES
                    .iter()
                    .find(|c| c.0 == part)
                    .map(|c| c.1)
                    .ok_or_else(|| {
                        let names: Vec<&str> = COLUMN_NAMES.iter().map(|c| c.0).collect();
                        let hint = crate::error::did_you_mean(part, names.iter().copied());
                        format!(
                            "unknown column '{part}'{hint} (one of {}, or default, percent, all)",
                            names.join(", ")
                        )
                    })?,
            ],
        };
        for c in group {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    if out.is_empty() {
        return Err("--columns names no column".into());
    }
    Ok(out)
}

/// Which parts of the report to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parts {
    Both,
    Layers,
    Summary,
}

impl Parts {
    /// The name reports' `meta.parts` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Parts::Both => "both",
            Parts::Layers => "layers",
            Parts::Summary => "summary",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ReportOptions {
    pub format: Format,
    pub unit: Unit,
    pub digits: usize,
    pub columns: Vec<Column>,
    pub parts: Parts,
    /// The model and the options in force, as (label, value): shown by the
    /// HTML page.
    pub about: Vec<(String, String)>,
    /// The figure Model Explorer's node data carries.
    pub metric: model_explorer::Metric,
    /// How Model Explorer knows the model's nodes.
    pub node_ids: model_explorer::NodeIds,
    /// JSON's `meta`: the model and the options in force.
    pub meta: Option<Meta>,
    /// Sort the layer rows by this figure, largest first.
    pub sort: Option<SortKey>,
    /// Show only the first N layer rows (after sorting).
    pub top: Option<usize>,
    /// The terminal's width in columns: the table is fitted to it.
    pub width: Option<usize>,
    /// Colour the table (a terminal that wants it).
    pub color: bool,
    /// Group the layers into a module tree this many levels deep
    /// (`--depth`).
    pub depth: Option<usize>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            format: Format::Table,
            unit: Unit::Auto,
            digits: 3,
            columns: DEFAULT_COLUMNS.to_vec(),
            parts: Parts::Both,
            about: Vec::new(),
            metric: model_explorer::Metric::default(),
            node_ids: model_explorer::NodeIds::default(),
            meta: None,
            sort: None,
            top: None,
            width: None,
            color: false,
            depth: None,
        }
    }
}

/// A rectangular table of text cells with a header.
struct Grid {
    title: String,
    header: Vec<String>,
    /// Machine names of the columns: CSV's header.
    keys: Vec<String>,
    /// Right-aligned (numeric) columns.
    numeric: Vec<bool>,
    rows: Vec<Vec<String>>,
}

/// Value of a metric column for a set of totals.
fn metric(t: &Totals, c: Column) -> u64 {
    match c {
        Column::Flops | Column::FlopsPct => t.flops,
        Column::Mread | Column::MreadPct => t.mread,
        Column::Mwrite | Column::MwritePct => t.mwrite,
        Column::Iops => t.iops,
        Column::Params => t.params,
        Column::Weights => t.weight_bytes,
        _ => t.mrw,
    }
}

fn shapes(list: &[Option<TensorFact>]) -> String {
    list.iter()
        .map(|t| t.as_ref().map_or("-".to_string(), TensorFact::shape_string))
        .collect::<Vec<_>>()
        .join(", ")
}

fn is_numeric(c: Column) -> bool {
    !matches!(
        c,
        Column::Name | Column::Op | Column::Inputs | Column::Outputs | Column::Attrs
    )
}

/// Rows a layer table has before half of them are formatted on a second
/// thread.
const SHARED_ROWS: usize = 8192;

fn layer_grid(
    report: &CostReport,
    opts: &ReportOptions,
    s: &Scaler,
    roofline: Option<&Roofline>,
) -> Grid {
    // Integer work is shown beside FLOPs whenever there is any.
    let mut cols = opts.columns.clone();
    if report.total.iops > 0 && !cols.contains(&Column::Iops) {
        let at = cols
            .iter()
            .position(|c| *c == Column::Flops)
            .map_or(cols.len(), |i| i + 1);
        cols.insert(at, Column::Iops);
    }
    if report.layers.iter().any(|l| l.runs != 1) && !cols.contains(&Column::Runs) {
        let at = cols
            .iter()
            .position(|c| *c == Column::Op)
            .map_or(cols.len(), |i| i + 1);
        cols.insert(at, Column::Runs);
    }
    let cols = &cols;
    let cell = |s: &Scaler,
                c: Column,
                name: &str,
                op: &str,
                t: &Totals,
                extra: Option<&crate::cost::LayerCost>| {
        match c {
            Column::Name => name.to_string(),
            Column::Op => op.to_string(),
            Column::Flops
            | Column::Mread
            | Column::Mwrite
            | Column::Mrw
            | Column::Iops
            | Column::Params
            | Column::Weights => s.value(metric(t, c), c),
            // A layer's live bytes; the total row's, the peak.
            Column::Live => s.value(extra.map_or(report.peak.bytes, |l| l.live_bytes), c),
            Column::FlopsPct | Column::MreadPct | Column::MwritePct | Column::MrwPct => {
                s.percent(metric(t, c), metric(&report.total, c))
            }
            Column::Runs => extra.map_or(String::new(), |l| l.runs.to_string()),
            Column::Inputs => extra.map_or(String::new(), |l| shapes(&l.inputs)),
            Column::Outputs => extra.map_or(String::new(), |l| shapes(&l.outputs)),
            Column::Attrs => extra.map_or(String::new(), |l| {
                l.attrs
                    .iter()
                    .map(|(k, v)| format!("{k}={}", show_value(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            }),
        }
    };
    let rows_of = |s: &Scaler, shown: &[usize]| -> Vec<Vec<String>> {
        let mut rows = Vec::with_capacity(shown.len() + 1);
        for &i in shown {
            let l = &report.layers[i];
            let t = Totals::of_layer(l);
            rows.push(
                cols.iter()
                    .map(|&c| cell(s, c, &l.name, &l.op, &t, Some(l)))
                    .collect(),
            );
        }
        rows
    };
    let shown = layer_rows(report, roofline, opts.sort, opts.top);
    // A long table's second half is formatted on a second thread, with a
    // Scaler of its own (same numbers: its cache only saves work).
    let mut rows = if shown.len() >= SHARED_ROWS && crate::threads::two_cores() {
        let (first, second) = shown.split_at(shown.len() / 2);
        let (mut rows, more) = crate::threads::both(
            || rows_of(s, first),
            || rows_of(&Scaler::new(opts, &report.total), second),
        );
        rows.extend(more);
        rows
    } else {
        rows_of(s, &shown)
    };
    rows.push(
        cols.iter()
            .map(|&c| cell(s, c, "total", "", &report.total, None))
            .collect(),
    );
    let mut grid = Grid {
        title: "Layers".into(),
        header: cols.iter().map(|&c| s.header(c)).collect(),
        keys: cols.iter().map(|&c| s.key(c)).collect(),
        numeric: cols.iter().map(|&c| is_numeric(c)).collect(),
        rows,
    };
    // CSV has no line below the table: the total row names the layer at
    // which the peak in its live cell occurs.
    if opts.format == Format::Csv && cols.contains(&Column::Live) {
        grid.header.push("Peak at".into());
        grid.keys.push("peak_at".into());
        grid.numeric.push(false);
        let last = grid.rows.len() - 1;
        for (i, row) in grid.rows.iter_mut().enumerate() {
            row.push(match (i == last, &report.peak.at) {
                (true, Some(at)) => at.clone(),
                _ => String::new(),
            });
        }
    }
    if !report.fusions.is_empty() {
        grid.header.push("Fused".into());
        grid.keys.push("fused".into());
        grid.numeric.push(false);
        for (row, &i) in grid.rows.iter_mut().zip(&shown) {
            row.push(report.layers[i].fused.clone().unwrap_or_default());
        }
        if let Some(total) = grid.rows.last_mut() {
            total.push(String::new());
        }
    }
    if let Some(r) = roofline {
        let us = |v: f64| format!("{:.*}", s.digits, v * 1e6);
        grid.header.extend(
            [
                "Compute (µs)",
                "Memory (µs)",
                "Bound (µs)",
                "Bound by",
                "FLOP/B",
            ]
            .map(String::from),
        );
        grid.keys.extend(
            [
                "compute_us",
                "memory_us",
                "bound_us",
                "bound",
                "flop_per_byte",
            ]
            .map(String::from),
        );
        grid.numeric.extend([true, true, true, false, true]);
        for (row, &i) in grid.rows.iter_mut().zip(&shown) {
            let t = &r.layers[i];
            row.extend([
                us(t.compute_s),
                us(t.memory_s),
                us(t.bound_s),
                t.bound.as_str().to_string(),
                t.intensity
                    .map_or("-".into(), |i| format!("{:.*}", s.digits, i)),
            ]);
        }
        if let Some(total) = grid.rows.last_mut() {
            total.extend([
                us(r.compute_s),
                us(r.memory_s),
                us(r.bound_s),
                String::new(),
                String::new(),
            ]);
        }
        // CSV has no paragraph below the table: each row names its peak.
        if opts.format == Format::Csv {
            grid.header.push("Precision".into());
            grid.keys.push("precision".into());
            grid.numeric.push(false);
            for (row, &i) in grid.rows.iter_mut().zip(&shown) {
                let t = &r.layers[i];
                row.push(if t.asked == t.precision {
                    t.precision.to_string()
                } else {
                    format!("{} (as {})", t.asked, t.precision)
                });
            }
            if let Some(total) = grid.rows.last_mut() {
                total.push(String::new());
            }
        }
    }
    timing::columns(&mut grid, report, opts, s, roofline, &shown);
    training::columns(&mut grid, report, s, &shown, opts.format == Format::Csv);
    grid
}

/// A time in the unit that reads best.
pub fn human_time(seconds: f64, digits: usize) -> String {
    let (v, unit) = if seconds >= 1.0 {
        (seconds, "s")
    } else if seconds >= 1e-3 {
        (seconds * 1e3, "ms")
    } else if seconds >= 1e-6 {
        (seconds * 1e6, "µs")
    } else {
        (seconds * 1e9, "ns")
    };
    format!("{v:.digits$} {unit}")
}

fn summary_grid(report: &CostReport, s: &Scaler, roofline: Option<&Roofline>) -> Grid {
    let mut metrics = vec![
        Column::Flops,
        Column::Mread,
        Column::Mwrite,
        Column::Mrw,
        Column::Params,
    ];
    if report.total.iops > 0 {
        metrics.insert(1, Column::Iops);
    }
    let pcts = [
        Column::FlopsPct,
        Column::MreadPct,
        Column::MwritePct,
        Column::MrwPct,
    ];
    let row = |op: String, t: &Totals| {
        let mut r = vec![op, t.layers.to_string()];
        r.extend(metrics.iter().map(|&c| s.value(metric(t, c), c)));
        r.extend(
            pcts.iter()
                .map(|&c| s.percent(metric(t, c), metric(&report.total, c))),
        );
        r
    };
    let mut rows: Vec<Vec<String>> = report
        .summary
        .iter()
        .map(|o| row(crate::ir::qualified(&o.domain, &o.op), &o.totals))
        .collect();
    rows.push(row("total".into(), &report.total));
    let mut header = vec!["Op".to_string(), "# Layers".to_string()];
    header.extend(metrics.iter().chain(&pcts).map(|&c| s.header(c)));
    let mut keys = vec!["op".to_string(), "layers".to_string()];
    keys.extend(metrics.iter().chain(&pcts).map(|&c| s.key(c)));
    // Measured time by type (the groups its layers lead) and its share of
    // the joined time, beside the share of FLOPs; predicted time.
    let times: Vec<(Option<f64>, Option<f64>)> = report
        .summary
        .iter()
        .map(|o| timing::by_type(report, roofline, &o.domain, &o.op))
        .collect();
    let us = |v: f64| format!("{:.*}", s.digits, v * 1e6);
    if let Some(m) = &report.measured {
        let joined = m.joined_s();
        header.extend(["Measured (µs)".to_string(), "Time %".to_string()]);
        keys.extend(["measured_us".to_string(), "time_pct".to_string()]);
        for (row, t) in rows.iter_mut().zip(&times) {
            let t = t.0.unwrap_or(0.0);
            row.push(us(t));
            row.push(if joined > 0.0 {
                format!("{:.*}", s.digits, 100.0 * t / joined)
            } else {
                String::new()
            });
        }
        if let Some(total) = rows.last_mut() {
            total.push(us(joined));
            total.push(format!("{:.*}", s.digits, 100.0));
        }
    }
    if roofline.is_some_and(|r| r.predicts()) {
        header.push("Predicted (µs)".into());
        keys.push("predicted_us".into());
        for (row, t) in rows.iter_mut().zip(&times) {
            row.push(t.1.map_or(String::new(), us));
        }
        if let Some(total) = rows.last_mut() {
            total.push(
                roofline
                    .and_then(|r| r.predicted_s)
                    .map_or(String::new(), us),
            );
        }
    }
    training::summary_columns(&mut header, &mut keys, &mut rows, report, s);
    Grid {
        title: "Summary by operator type".into(),
        keys,
        numeric: (0..header.len()).map(|i| i > 0).collect(),
        header,
        rows,
    }
}

fn unsupported_lines(report: &CostReport) -> Vec<String> {
    report
        .unsupported
        .iter()
        .map(|u| format!("{} ({})", u.name, crate::ir::qualified(&u.domain, &u.op)))
        .collect()
}

/// Renders the report in the chosen format, with roofline times if given.
/// [`render`]'s text written to `w`; JSON as it is made, with no copy of
/// the whole text in memory.
pub fn write(
    report: &CostReport,
    opts: &ReportOptions,
    roofline: Option<&Roofline>,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match opts.format {
        Format::Json => json::write(report, opts, roofline, w),
        _ => w.write_all(render(report, opts, roofline).as_bytes()),
    }
}

pub fn render(report: &CostReport, opts: &ReportOptions, roofline: Option<&Roofline>) -> String {
    match opts.format {
        Format::Json => return json::render(report, opts, roofline),
        Format::Html => {
            // The page lists `about`: add the peaks used and any fallback.
            let mut opts = opts.clone();
            for g in roofline.map(|r| r.peaks.as_slice()).unwrap_or_default() {
                let line = roofline::peak_line(g, opts.digits);
                opts.about.push(("timed at".into(), line));
            }
            return html::render(report, &opts, roofline);
        }
        Format::ModelExplorer => {
            return model_explorer::render(report, roofline, opts.metric, &opts.node_ids);
        }
        Format::Csv => return csv_report(report, opts, roofline),
        Format::Table | Format::Md => {}
    }
    let s = Scaler::new(opts, &report.total);
    let mut grids = Vec::new();
    if opts.parts != Parts::Summary {
        grids.push(layer_grid(report, opts, &s, roofline));
    }
    if opts.parts != Parts::Layers {
        grids.push(summary_grid(report, &s, roofline));
    }
    if let Some(depth) = opts.depth {
        grids.push(tree::grid(report, &s, depth, false));
    }
    let shown = layer_rows(report, roofline, opts.sort, opts.top).len();
    let rows_note = (opts.parts != Parts::Summary)
        .then(|| rows::rows_note(report.layers.len(), shown, opts.sort))
        .flatten();
    // Names from the model are text: no control character reaches a
    // terminal or breaks a line.
    let unsupported: Vec<String> = unsupported_lines(report)
        .iter()
        .map(|l| text::shown(l).into_owned())
        .collect();
    let skipped: Vec<String> = skipped_lines(report, &s)
        .iter()
        .map(|l| text::shown(l).into_owned())
        .collect();
    let options = roofline::options_line(&opts.about);
    let mut out = String::new();
    if opts.format == Format::Table {
        for (i, g) in grids.iter().enumerate() {
            let _ = writeln!(out, "{}", fit::title(&g.title, opts.color));
            let (t, dropped) = fit::fitted(g, opts.width, opts.color);
            let _ = writeln!(out, "{t}");
            if let Some(note) = dropped {
                let _ = writeln!(out, "{note}");
            }
            if i == 0
                && let Some(note) = &rows_note
            {
                let _ = writeln!(out, "{note}");
            }
            out.push('\n');
        }
        if !unsupported.is_empty() {
            let _ = writeln!(
                out,
                "Unsupported operators (not counted): {}",
                unsupported.len()
            );
            for u in &unsupported {
                let _ = writeln!(out, "  {u}");
            }
        }
        if !skipped.is_empty() {
            let _ = writeln!(out, "If branches not counted: {}", skipped.len());
            for b in &skipped {
                let _ = writeln!(out, "  {b}");
            }
        }
        for line in [
            Some(model_line(report)),
            assumed_line(report),
            fusion_line(report),
            options,
        ]
        .into_iter()
        .flatten()
        {
            let _ = writeln!(out, "{}", text::shown(&line));
        }
        for (i, line) in folded_lines(report).iter().enumerate() {
            let indent = if i == 0 { "" } else { "  " };
            let _ = writeln!(out, "{indent}{line}");
        }
        for line in roofline
            .map(|r| roofline::roofline_lines(r, opts.digits))
            .unwrap_or_default()
        {
            let _ = writeln!(out, "{line}");
        }
        if let Some(line) = roofline.and_then(|r| timing::by_rule_line(report, r)) {
            let _ = writeln!(out, "  {}", text::shown(&line));
        }
        for line in timing::profile_lines(report, opts.digits)
            .into_iter()
            .chain(training::lines(report))
        {
            let _ = writeln!(out, "{}", text::shown(&line));
        }
        let_go(grids);
        return fit::wrap_prose(&out, opts.width);
    }
    // The tables and a little prose around them, in one allocation (a
    // long table's report is megabytes: growing it copies them).
    out.reserve(grids.iter().map(markdown_room).sum::<usize>() + 4096);
    for (i, g) in grids.iter().enumerate() {
        let _ = write!(out, "### {}\n\n", g.title);
        markdown_into(&mut out, g);
        out.push('\n');
        if i == 0
            && let Some(note) = &rows_note
        {
            let _ = writeln!(out, "{note}\n");
        }
    }
    if !unsupported.is_empty() {
        let _ = writeln!(out, "### Unsupported operators (not counted)\n");
        for u in &unsupported {
            let _ = writeln!(out, "- {u}");
        }
    }
    if !skipped.is_empty() {
        let _ = writeln!(out, "### If branches not counted\n");
        for b in &skipped {
            let _ = writeln!(out, "- {b}");
        }
    }
    for line in [
        Some(model_line(report)),
        assumed_line(report),
        fusion_line(report),
        options,
    ]
    .into_iter()
    .flatten()
    {
        let _ = writeln!(out, "\n{}", text::shown(&line));
    }
    for (i, line) in folded_lines(report).iter().enumerate() {
        let _ = match i {
            0 => writeln!(out, "\n### {line}\n"),
            _ => writeln!(out, "- {line}"),
        };
    }
    if let Some(r) = roofline {
        let lines = roofline::roofline_lines(r, opts.digits);
        let _ = writeln!(out, "\n### {}\n", lines[0].trim_end_matches(':'));
        for line in &lines[1..] {
            let _ = writeln!(out, "- {}", line.trim());
        }
        if let Some(line) = timing::by_rule_line(report, r) {
            let _ = writeln!(out, "- {}", text::md_cell(&text::shown(&line)));
        }
    }
    for lines in [
        timing::profile_lines(report, opts.digits),
        training::lines(report),
    ] {
        if let Some((head, rest)) = lines.split_first() {
            let _ = writeln!(out, "\n### {}\n", text::shown(head.trim_end_matches(':')));
            for line in rest {
                let _ = writeln!(out, "- {}", text::md_cell(&text::shown(line.trim())));
            }
        }
    }
    let_go(grids);
    out
}

/// Lets go of a long table's cells (a few hundred thousand strings) as
/// the command lets go of the estimate: not waited for.
fn let_go(grids: Vec<Grid>) {
    if grids.iter().map(|g| g.rows.len()).sum::<usize>() >= SHARED_ROWS {
        crate::release(grids);
    }
}

/// CSV: exactly one table (the layers, the summary with `--summary`, the
/// module tree with `--depth`)
/// with machine column names; exact integers unless a unit is asked for.
fn csv_report(report: &CostReport, opts: &ReportOptions, roofline: Option<&Roofline>) -> String {
    let mut opts = opts.clone();
    if opts.unit == Unit::Auto {
        opts.unit = Unit::None;
    }
    let s = Scaler::new(&opts, &report.total);
    let g = if let Some(depth) = opts.depth {
        tree::grid(report, &s, depth, true)
    } else if opts.parts == Parts::Summary {
        summary_grid(report, &s, roofline)
    } else {
        layer_grid(report, &opts, &s, roofline)
    };
    csv(&g)
}

/// Appends `cell`, escaping the `|` that would end a Markdown table cell.
fn push_md_cell(out: &mut String, cell: &str) {
    out.push_str(&text::md_cell(cell));
}

fn markdown(g: &Grid) -> String {
    let mut out = String::with_capacity(markdown_room(g));
    markdown_into(&mut out, g);
    out
}

/// The room `g` takes as a Markdown table when no cell needs escaping:
/// each cell takes its text and ` | `, each row `|` and a line end, the
/// alignment row a few bytes a column.
fn markdown_room(g: &Grid) -> usize {
    let cells: usize = std::iter::once(&g.header)
        .chain(&g.rows)
        .map(|r| 2 + r.iter().map(|c| c.len() + 3).sum::<usize>())
        .sum();
    cells + 5 * g.numeric.len() + 2
}

/// Appends `g` as a Markdown table to `out` (the caller makes the room:
/// `render` for all its tables at once).
fn markdown_into(out: &mut String, g: &Grid) {
    markdown_line(out, &g.header);
    markdown_rule(out, &g.numeric);
    for row in &g.rows {
        markdown_line(out, row);
    }
}

/// One row of a Markdown table, its line end included.
fn markdown_line(out: &mut String, row: &[String]) {
    out.push('|');
    for c in row {
        out.push(' ');
        push_md_cell(out, c);
        out.push_str(" |");
    }
    out.push('\n');
}

/// The line under a Markdown table's header: numbers align right.
fn markdown_rule(out: &mut String, numeric: &[bool]) {
    out.push('|');
    for n in numeric {
        out.push_str(if *n { "---:|" } else { ":---|" });
    }
    out.push('\n');
}

fn csv_field(s: &str) -> String {
    let s = &*text::shown(s);
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv(g: &Grid) -> String {
    let mut out = String::with_capacity(48 * (g.rows.len() + 1) * g.header.len().max(1));
    for r in std::iter::once(&g.keys).chain(&g.rows) {
        csv_line(&mut out, r);
    }
    out
}

/// One CSV record, its line end included.
fn csv_line(out: &mut String, r: &[String]) {
    for (i, c) in r.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let c = &*text::shown(c);
        if c.contains([',', '"', '\n']) {
            out.push_str(&csv_field(c));
        } else {
            out.push_str(c);
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_reused_in_another_column_keeps_that_column_s_scale() {
        let opts = ReportOptions {
            unit: Unit::K,
            digits: 3,
            ..ReportOptions::default()
        };
        let s = Scaler::new(&opts, &Totals::default());
        for _ in 0..2 {
            // kFLOPs divide by 1000, KiB by 1024: 1,000,001 / 1024 = 976.5634765625.
            assert_eq!(s.value(1_000_001, Column::Flops), "1000.001");
            assert_eq!(s.value(1_000_001, Column::Mread), "976.563");
            assert_eq!(s.percent(1_000_001, 4_000_004), "25.000");
            assert_eq!(s.percent(1_000_001, 2_000_002), "50.000");
        }
    }
}
