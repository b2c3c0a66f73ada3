//! A table whose rows are made when they are written, as often as they are
//! asked for: a long one (a diff of two 100,000-layer models) is written as
//! Markdown, CSV or a fitted table without its cells ever all in memory.
//! The bytes are those of the same [`Grid`] written whole.

use std::io::{self, Write};

use comfy_table::{ColumnConstraint, Width};

use super::Grid;
use super::fit::{Fit, width_of};

/// Rows a piece of a long table holds: a few hundred kilobytes of cells.
const PIECE: usize = 1024;

/// A [`Grid`] whose rows `row` makes, by index, on demand.
pub(super) struct LazyGrid<'a> {
    pub title: String,
    pub header: Vec<String>,
    /// Machine names of the columns: CSV's header.
    pub keys: Vec<String>,
    /// Right-aligned (numeric) columns.
    pub numeric: Vec<bool>,
    /// The number of rows.
    pub len: usize,
    /// The last row is a total (bold in a coloured table).
    pub total_row: bool,
    pub row: Box<dyn Fn(usize) -> Vec<String> + 'a>,
}

impl LazyGrid<'_> {
    fn rows(&self) -> impl Iterator<Item = Vec<String>> + '_ {
        (0..self.len).map(|i| (self.row)(i))
    }

    /// The grid whole, its rows made once: what the tests compare with,
    /// and the rare table [`LazyGrid::write_fitted`] cannot write in
    /// pieces.
    pub(super) fn to_grid(&self) -> Grid {
        Grid {
            title: self.title.clone(),
            header: self.header.clone(),
            keys: self.keys.clone(),
            numeric: self.numeric.clone(),
            rows: self.rows().collect(),
        }
    }

    /// As [`super::markdown`] writes it.
    pub(super) fn write_markdown(&self, w: &mut dyn Write) -> io::Result<()> {
        let mut line = String::new();
        super::markdown_line(&mut line, &self.header);
        super::markdown_rule(&mut line, &self.numeric);
        w.write_all(line.as_bytes())?;
        for r in self.rows() {
            line.clear();
            super::markdown_line(&mut line, &r);
            w.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    /// As [`super::csv`] writes it.
    pub(super) fn write_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        let mut line = String::new();
        super::csv_line(&mut line, &self.keys);
        w.write_all(line.as_bytes())?;
        for r in self.rows() {
            line.clear();
            super::csv_line(&mut line, &r);
            w.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    /// The table [`super::fit::fitted`] makes of the grid, each line ending
    /// in a line break, written a piece of [`PIECE`] rows at a time; returns
    /// the note saying what fitting it took. The rows are made three times:
    /// for the widths fitting decides by, for the widths comfy-table gives
    /// the columns it keeps, and to be written.
    pub(super) fn write_fitted(
        &self,
        width: Option<usize>,
        color: bool,
        w: &mut dyn Write,
    ) -> io::Result<Option<String>> {
        let mut widths: Vec<usize> = self.header.iter().map(|h| width_of(h)).collect();
        for r in self.rows() {
            for (c, w) in widths.iter_mut().enumerate() {
                *w = (*w).max(r.get(c).map_or(0, |s| width_of(s)));
            }
        }
        let fit = Fit::new(&self.header, &self.numeric, widths, width, false);
        let Some(fixed) = self.column_widths(&fit, width) else {
            // Widths comfy-table's layout did not show: the table whole.
            let (t, _) =
                super::fit::fitted_rows(&self.to_grid(), width, color, self.total_row, false);
            writeln!(w, "{t}")?;
            return Ok(fit.note);
        };
        let last = self.len.saturating_sub(1);
        let pieces = self.len.div_ceil(PIECE).max(1);
        for p in 0..pieces {
            let at = p * PIECE;
            let mut t = fit.table(color, (p == 0).then_some(self.header.as_slice()));
            for i in at..(at + PIECE).min(self.len) {
                t.add_row(fit.cells(&(self.row)(i), color && self.total_row && i == last));
            }
            fit.arrange(&mut t, &self.numeric, width, Some(&fixed));
            let lines: Vec<String> = t.lines().collect();
            // A piece's own top border goes but the first's, its bottom
            // border but the last's: the lines between are the whole
            // table's, the columns' widths being the same.
            let from = usize::from(p > 0);
            let to = lines.len() - usize::from(p + 1 < pieces);
            for line in lines.get(from..to).unwrap_or_default() {
                w.write_all(line.as_bytes())?;
                w.write_all(b"\n")?;
            }
        }
        Ok(fit.note)
    }

    /// The content width comfy-table gives each kept column of the whole
    /// table: its widest cell's, or, when cells wrap, what its layout
    /// makes of those widths and of the wrapping columns' cells (a probe
    /// table of the header and each such column's distinct texts). `None`
    /// when the probe's top border cannot be read.
    fn column_widths(&self, fit: &Fit, width: Option<usize>) -> Option<Vec<u16>> {
        let wraps = |i: usize, c: usize| fit.wrap && i > 0 && !self.numeric[c];
        let mut widest = vec![0u16; fit.keep.len()];
        let mut texts: Vec<std::collections::BTreeSet<String>> =
            vec![Default::default(); widest.len()];
        for at in (0..self.len.max(1)).step_by(PIECE) {
            let mut t = fit.table(false, Some(&self.header));
            for i in at..(at + PIECE).min(self.len) {
                let cells = fit.cells(&(self.row)(i), false);
                for (k, cell) in cells.iter().enumerate() {
                    if wraps(k, fit.keep[k]) {
                        texts[k].insert(cell.content());
                    }
                }
                t.add_row(cells);
            }
            for (w, m) in widest.iter_mut().zip(t.column_max_content_widths()) {
                *w = (*w).max(m);
            }
        }
        if !fit.wrap {
            return Some(widest);
        }
        let mut probe = fit.table(false, Some(&self.header));
        let deepest = texts.iter().map(|t| t.len()).max().unwrap_or(0);
        let mut columns: Vec<_> = texts.into_iter().map(|t| t.into_iter()).collect();
        for _ in 0..deepest {
            probe.add_row(columns.iter_mut().map(|c| c.next().unwrap_or_default()));
        }
        fit.arrange(&mut probe, &self.numeric, width, None);
        // The columns that keep their width keep it as measured here.
        for (i, &c) in fit.keep.iter().enumerate() {
            if !wraps(i, c)
                && let Some(col) = probe.column_mut(i)
            {
                let padded = widest[i].saturating_add(col.padding_width());
                col.set_constraint(ColumnConstraint::Absolute(Width::Fixed(padded)));
            }
        }
        let top = probe.lines().next()?;
        // `┌──┬───┐`: each column's content and its padding of two.
        let inner = top.strip_prefix('┌')?.strip_suffix('┐')?;
        let found: Vec<u16> = inner
            .split('┬')
            .map(|s| u16::try_from(s.chars().count()).ok()?.checked_sub(2))
            .collect::<Option<_>>()?;
        (found.len() == widest.len()).then_some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grid of `n` rows: names (some long, some wide characters), ops
    /// (some long enough to wrap), and numbers; headers of two lines.
    fn grid(n: usize) -> Grid {
        let ops = [
            "Relu",
            "com.microsoft::FastGelu→Gelu",
            "MatMul",
            "Sigmoid→Tanh",
        ];
        let rows = (0..n)
            .map(|i| {
                let name = match i % 5 {
                    0 => format!("model/block{}/layer{i}/with/a/long/path/to/it", i / 7),
                    1 => format!("层{i}/激活"),
                    2 => format!("emoji😀{i}|pipe,comma\"quote"),
                    3 => format!("tab\tand\nnewline{i}"),
                    _ => format!("l{i}"),
                };
                vec![
                    name,
                    ops[(i * 7 / 3) % ops.len()].to_string(),
                    format!("{}", i * 37 % 1000),
                    format!("-{}.{:03}", i % 13, i % 1000),
                    if i % 11 == 0 {
                        "new".into()
                    } else {
                        "+1.5".into()
                    },
                ]
            })
            .collect();
        Grid {
            title: "T".into(),
            header: ["Layer", "Op", "FLOPs A", "MemR+W Δ\n(MiB)", "Live Δ%"]
                .map(String::from)
                .to_vec(),
            keys: ["name", "op", "flops_a", "mrw_delta", "live_pct"]
                .map(String::from)
                .to_vec(),
            numeric: vec![false, false, true, true, true],
            rows,
        }
    }

    fn lazy(g: &Grid) -> LazyGrid<'_> {
        LazyGrid {
            title: g.title.clone(),
            header: g.header.clone(),
            keys: g.keys.clone(),
            numeric: g.numeric.clone(),
            len: g.rows.len(),
            total_row: true,
            row: Box::new(|i| g.rows[i].clone()),
        }
    }

    fn text(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Pieces of a table, fitted to any width (columns left out, names
    /// shortened, cells wrapped) or to none, coloured or not, are the
    /// bytes of the table made whole; so are Markdown and CSV.
    #[test]
    fn a_table_written_in_pieces_is_the_whole_table() {
        for n in [0, 1, 7, PIECE, 2 * PIECE + 3] {
            let g = grid(n);
            let l = lazy(&g);
            for width in [
                None,
                Some(200),
                Some(80),
                Some(60),
                Some(40),
                Some(25),
                Some(8),
            ] {
                for color in [false, true] {
                    let (whole, note) = super::super::fit::fitted(&g, width, color);
                    let mut got = None;
                    let pieces = text(|w| {
                        got = l.write_fitted(width, color, w)?;
                        Ok(())
                    });
                    assert_eq!(pieces, format!("{whole}\n"), "{n} rows, {width:?}, {color}");
                    assert_eq!(got, note, "{n} rows, {width:?}");
                }
            }
            assert_eq!(text(|w| l.write_markdown(w)), super::super::markdown(&g));
            assert_eq!(text(|w| l.write_csv(w)), super::super::csv(&g));
        }
    }

    /// Narrow widths wrap the ops: the wrapped layout is the one tested.
    #[test]
    fn narrow_widths_wrap_cells() {
        let g = grid(3 * PIECE);
        let note = text(|w| {
            let note = lazy(&g).write_fitted(Some(40), false, w)?;
            w.write_all(note.unwrap_or_default().as_bytes())
        });
        assert!(note.contains("wrapped cells"), "{note}");
        assert!(note.contains("shortened long names"));
    }
}
