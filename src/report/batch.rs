//! Several models at once (`c3 estimate A B C...`, or a folder): one row
//! of totals per model, a model that failed reported on its row.

use std::fmt::Write;

use serde_json::json;

use super::diff::{FIGURES, Side};
use super::{Format, Grid, ReportOptions, Scaler, Unit, fit};
use crate::cost::Totals;

/// One model of a batch.
#[derive(Debug, Clone)]
pub struct BatchRow {
    /// The model's path as given (or as found in a folder).
    pub model: String,
    /// Its figures, or its error as one line with its exit code.
    pub outcome: Result<BatchFigures, (String, i32)>,
}

/// What a batch keeps of one model's estimate.
#[derive(Debug, Clone)]
pub struct BatchFigures {
    /// The totals, the peak of live activation bytes and, with a device,
    /// the roofline bound.
    pub total: Side,
    /// Layers no rule counted.
    pub unsupported: usize,
    /// The model's whole estimate as JSON (what `c3 estimate MODEL
    /// --format json` prints), when the format is JSON.
    pub json: Option<String>,
}

/// Renders a batch: a table of one totals row per model (table, md, csv),
/// or JSON `{"models": [...]}` holding each model's estimate JSON (a
/// failed model: `{"model", "error", "exit_code"}`).
pub fn render(rows: &[BatchRow], opts: &ReportOptions) -> String {
    if opts.format == Format::Json {
        return json(rows);
    }
    let mut opts = opts.clone();
    if opts.format == Format::Csv && opts.unit == Unit::Auto {
        opts.unit = Unit::None;
    }
    let g = grid(rows, &opts);
    match opts.format {
        Format::Csv => super::csv(&g),
        Format::Table => {
            let mut out = String::new();
            let _ = writeln!(out, "{}", fit::title(&g.title, opts.color));
            let (t, note) = fit::fitted(&g, opts.width, opts.color);
            let _ = writeln!(out, "{t}");
            if let Some(note) = note {
                let _ = writeln!(out, "{note}");
            }
            fit::wrap_prose(&out, opts.width)
        }
        _ => format!("### {}\n\n{}", g.title, super::markdown(&g)),
    }
}

fn grid(rows: &[BatchRow], opts: &ReportOptions) -> Grid {
    let ok = || rows.iter().filter_map(|r| r.outcome.as_ref().ok());
    let mut larger = Totals::default();
    for f in ok() {
        let t = &f.total.totals;
        larger.flops = larger.flops.max(t.flops);
        larger.iops = larger.iops.max(t.iops);
        larger.mread = larger.mread.max(t.mread);
        larger.mwrite = larger.mwrite.max(t.mwrite);
        larger.mrw = larger.mrw.max(t.mrw);
        larger.params = larger.params.max(t.params);
    }
    let timed = ok().any(|f| f.total.bound_s.is_some());
    let s = Scaler::new(opts, &larger);
    let figures: Vec<_> = FIGURES
        .iter()
        .filter(|f| f.key != "iops" || larger.iops > 0)
        .collect();
    let mut header = vec!["Model".to_string()];
    let mut keys = vec!["model".to_string()];
    for f in &figures {
        header.push(f.column.map_or(f.name.to_string(), |c| s.header(c)));
        keys.push(f.column.map_or(f.key.to_string(), |c| s.key(c)));
    }
    if timed {
        header.push("Bound (µs)".into());
        keys.push("bound_us".into());
    }
    header.push("Note".into());
    keys.push("note".into());
    let missing = if opts.format == Format::Csv { "" } else { "-" };
    let cells = |r: &BatchRow| {
        let mut cells = vec![r.model.clone()];
        match &r.outcome {
            Ok(b) => {
                for f in &figures {
                    let v = (f.of)(&b.total);
                    cells.push(f.column.map_or(v.to_string(), |c| s.value(v, c)));
                }
                if timed {
                    cells.push(
                        b.total
                            .bound_s
                            .map_or(missing.to_string(), |t| format!("{:.*}", s.digits, t * 1e6)),
                    );
                }
                cells.push(match b.unsupported {
                    0 => String::new(),
                    n => format!("{n} layer(s) not counted"),
                });
            }
            Err((e, _)) => {
                let blank = figures.len() + usize::from(timed);
                cells.extend((0..blank).map(|_| missing.to_string()));
                cells.push(format!("error: {e}"));
            }
        }
        cells
    };
    let last = header.len() - 1;
    Grid {
        title: format!("Totals of {} model(s)", rows.len()),
        numeric: (0..header.len()).map(|i| i > 0 && i < last).collect(),
        header,
        keys,
        rows: rows.iter().map(cells).collect(),
    }
}

fn json(rows: &[BatchRow]) -> String {
    let mut out = String::from("{\n\"models\": [\n");
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        match &r.outcome {
            Ok(b) => out.push_str(b.json.as_deref().unwrap_or("null").trim_end()),
            Err((e, code)) => {
                let v = json!({"model": r.model, "error": e, "exit_code": code});
                out.push_str(&serde_json::to_string_pretty(&v).unwrap_or_default());
            }
        }
    }
    out.push_str("\n]\n}\n");
    out
}
