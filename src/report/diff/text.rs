//! A diff as a table, Markdown or CSV: its two grids (by layer, by
//! operator type) made a row at a time as they are written.

use std::io::{self, Write};

use super::{Diff, DiffRow, FIGURES, Figure, Side, Sides};
use crate::cost::Totals;
use crate::report::lazy_grid::LazyGrid;
use crate::report::{Format, Parts, ReportOptions, Scaler, Unit, fit, text};

/// Writes the diff as a table, Markdown or CSV (`opts.format`).
pub(super) fn write(
    d: &Diff,
    sides: &Sides,
    opts: &ReportOptions,
    w: &mut dyn Write,
) -> io::Result<()> {
    if opts.format == Format::Csv {
        let mut opts = opts.clone();
        if opts.unit == Unit::Auto {
            opts.unit = Unit::None;
        }
        let s = scaler(d, &opts);
        let rows = match opts.parts {
            Parts::Summary => Rows::Summary,
            _ => Rows::Layers,
        };
        return grid(d, rows, &s).write_csv(w);
    }
    let s = scaler(d, opts);
    let mut grids = Vec::new();
    if opts.parts != Parts::Summary {
        grids.push(grid(d, Rows::Layers, &s));
    }
    if opts.parts != Parts::Layers {
        grids.push(grid(d, Rows::Summary, &s));
    }
    let md = opts.format != Format::Table;
    if !md {
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
    // A table's prose lines are wrapped to the width, line by line; its
    // tables' own lines, each starting with a border, never are.
    let width = if md { None } else { opts.width };
    let prose =
        |w: &mut dyn Write, text: &str| w.write_all(fit::wrap_prose(text, width).as_bytes());
    let mut head = String::new();
    for line in header_lines(d, sides) {
        let bullet = if md { "- " } else { "" };
        head.push_str(bullet);
        head.push_str(&text::shown(&line));
        head.push('\n');
    }
    head.push('\n');
    prose(w, &head)?;
    for g in &grids {
        if md {
            write!(w, "### {}\n\n", g.title)?;
            g.write_markdown(w)?;
            w.write_all(b"\n")?;
            continue;
        }
        prose(w, &format!("{}\n", fit::title(&g.title, opts.color)))?;
        let note = g.write_fitted(opts.width, opts.color, w)?;
        if let Some(note) = note {
            prose(w, &format!("{note}\n"))?;
        }
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// `A: model (options)` and `B: ...`, then the layers either side left
/// uncounted.
fn header_lines(d: &Diff, sides: &Sides) -> Vec<String> {
    let line = |side: &str, about: &[(String, String)]| {
        let model = about
            .iter()
            .find(|(k, _)| k == "model")
            .map_or("", |(_, v)| v.as_str());
        match crate::report::roofline::options_line(about) {
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
fn shown_figures<'d>(d: &'d Diff) -> impl Iterator<Item = &'static Figure> + 'd {
    FIGURES.iter().filter(|f| {
        f.key != "iops"
            || [d.total.a, d.total.b]
                .iter()
                .any(|t| t.is_some_and(|t| t.totals.iops > 0))
    })
}

/// The layers' or the types' grid, each row made from the diff when it is
/// asked for.
fn grid<'g>(d: &'g Diff, rows: Rows, s: &'g Scaler) -> LazyGrid<'g> {
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
    let len = match rows {
        Rows::Layers => d.layer_count(),
        Rows::Summary => d.summary.len() + 1,
    };
    let row = move |i: usize| match rows {
        Rows::Layers => cells(d, rows, s, &d.layer(i)),
        Rows::Summary => cells(d, rows, s, d.summary.get(i).unwrap_or(&d.total)),
    };
    LazyGrid {
        title: match rows {
            Rows::Layers => "Difference by layer (B − A)".into(),
            Rows::Summary => "Difference by operator type (B − A)".into(),
        },
        numeric: (0..header.len()).map(|i| i >= lead).collect(),
        header,
        keys,
        len,
        // The types' grid ends in the total; the layers' in a layer.
        total_row: rows == Rows::Summary,
        row: Box::new(row),
    }
}

/// A row's cells: its name (and a layer's op), then each figure of A, of
/// B, their difference and, for some, its percent; the bounds when timed.
fn cells(d: &Diff, rows: Rows, s: &Scaler, r: &DiffRow) -> Vec<String> {
    let mut cells = vec![r.name.to_string()];
    if rows == Rows::Layers {
        cells.push(r.op.to_string());
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
        cells.push(signed(delta * 1e6, s.digits));
        let a = r.a.and_then(|t| t.bound_s).unwrap_or(0.0);
        cells.push(percent(a, delta, s.digits));
    }
    cells
}

/// A change in percent of `a`: `new` when `a` is zero and something came.
fn percent(a: f64, delta: f64, digits: usize) -> String {
    if delta != 0.0 && a == 0.0 {
        "new".into()
    } else {
        signed(if delta == 0.0 { 0.0 } else { 100.0 * delta / a }, digits)
    }
}

/// A change at `digits` decimals with its sign, and none on a change that
/// rounds to zero (a difference of sums in floating point is seldom exactly
/// zero; `-0.000` would say something shrank).
fn signed(v: f64, digits: usize) -> String {
    let magnitude = format!("{:.*}", digits, v.abs());
    if magnitude.bytes().all(|b| b == b'0' || b == b'.') {
        magnitude
    } else if v < 0.0 {
        format!("-{magnitude}")
    } else {
        format!("+{magnitude}")
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;
    use crate::model::{EstimateOptions, Model};

    /// The text as it was made whole, each grid's rows all made first: the
    /// bytes the grids written a row at a time are held to.
    fn whole(d: &Diff, sides: &Sides, opts: &ReportOptions) -> String {
        if opts.format == Format::Csv {
            let mut opts = opts.clone();
            if opts.unit == Unit::Auto {
                opts.unit = Unit::None;
            }
            let s = scaler(d, &opts);
            let rows = match opts.parts {
                Parts::Summary => Rows::Summary,
                _ => Rows::Layers,
            };
            return crate::report::csv(&grid(d, rows, &s).to_grid());
        }
        let s = scaler(d, opts);
        let mut grids = Vec::new();
        if opts.parts != Parts::Summary {
            grids.push((grid(d, Rows::Layers, &s).to_grid(), false));
        }
        if opts.parts != Parts::Layers {
            grids.push((grid(d, Rows::Summary, &s).to_grid(), true));
        }
        if opts.format == Format::Table {
            for (g, _) in &mut grids {
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
        for (g, total_row) in &grids {
            if md {
                let _ = writeln!(out, "### {}\n\n{}", g.title, crate::report::markdown(g));
                continue;
            }
            let _ = writeln!(out, "{}", fit::title(&g.title, opts.color));
            let (t, dropped) = fit::fitted_rows(g, opts.width, opts.color, *total_row, false);
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

    /// A change that rounds to zero has no sign; others keep theirs.
    #[test]
    fn changes_that_round_to_zero_are_unsigned() {
        // -2e-10 µs, as a difference of two sums of layer times may be.
        assert_eq!(signed(-2e-10, 3), "0.000");
        assert_eq!(signed(4e-4, 3), "0.000");
        assert_eq!(signed(-6e-4, 3), "-0.001");
        assert_eq!(signed(1.25, 1), "+1.2");
        assert_eq!(signed(0.0, 2), "0.00");
        // 100 × -1e-9 / 2 = -5e-8 %.
        assert_eq!(percent(2.0, -1e-9, 3), "0.000");
        assert_eq!(percent(2.0, -1.0, 1), "-50.0");
        assert_eq!(percent(0.0, 3.0, 1), "new");
        assert_eq!(percent(0.0, 0.0, 1), "0.0");
    }

    /// Tables (at several widths, coloured or not), Markdown and CSV of
    /// diffs with rows of one side only, ops that differ and uncounted
    /// layers: the grids written a row at a time are the text made whole.
    #[test]
    fn grids_written_row_by_row_are_the_whole_text() {
        let root = env!("CARGO_MANIFEST_DIR");
        let estimate = |f: &str, device: Option<&str>| {
            let opts = EstimateOptions {
                device: device.map(str::to_string),
                ..EstimateOptions::default()
            };
            Model::open(&format!("{root}/{f}"))
                .unwrap()
                .estimate(&opts)
                .unwrap()
        };
        for ((a, da), (b, db)) in [
            (
                ("examples/onnx/light_squeezenet.onnx", Some("a100")),
                ("examples/onnx/light_bvlc_alexnet.onnx", Some("h100")),
            ),
            (
                ("tests/fixtures/exports/resnet18_int8.onnx", None),
                ("tests/fixtures/exports/fasterrcnn.onnx", None),
            ),
        ] {
            let (ea, eb) = (estimate(a, da), estimate(b, db));
            let sides = Sides {
                meta: (ea.meta.clone(), eb.meta.clone()),
                about: (ea.about.clone(), eb.about.clone()),
            };
            let d = super::super::diff(
                (&ea.report, ea.roofline.as_ref()),
                (&eb.report, eb.roofline.as_ref()),
            );
            let mut cases = vec![];
            for format in [Format::Md, Format::Csv] {
                for parts in [Parts::Both, Parts::Summary] {
                    cases.push((format, parts, None, false));
                }
            }
            for width in [None, Some(120), Some(80), Some(40), Some(20)] {
                for color in [false, true] {
                    cases.push((Format::Table, Parts::Both, width, color));
                }
            }
            for (format, parts, width, color) in cases {
                let opts = ReportOptions {
                    format,
                    parts,
                    width,
                    color,
                    ..ReportOptions::default()
                };
                let mut ours = Vec::new();
                write(&d, &sides, &opts, &mut ours).unwrap();
                assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    whole(&d, &sides, &opts),
                    "{a} {b} {format:?} {parts:?} {width:?} {color}"
                );
            }
        }
    }
}
