//! The table format on a terminal: fitted to its width (columns of least
//! interest left out with a note, long names shortened, and only then cells
//! wrapped), with modest colour when the terminal wants it.

use comfy_table::{
    Attribute, Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table, Width, presets,
};

use super::Grid;

/// Columns a narrow terminal leaves out, first to last (matched by the start
/// of their header). Names, ops, FLOPs, total traffic, the bound and the
/// measured and predicted times stay.
const DROP_ORDER: &[&str] = &[
    "Attrs",
    "Inputs",
    "Outputs",
    "Weights",
    "MemRead %",
    "MemWrite %",
    "FLOP/B",
    "Compute (",
    "Memory (",
    "MemRead",
    "MemWrite",
    "Params",
    "Live",
    "MemR+W Δ%",
    "FLOPs Δ%",
    "Runs",
    "Fused",
    "Bound by",
    "Bound/Meas",
    "FLOPs %",
    "MemR+W %",
    "IOPs",
    "Saves",
    "Bwd MemR+W",
    "# Layers",
    // The device catalog: the rarer precisions first.
    "INT8",
    "FP8",
    "BF16",
    "FP16",
    // A diff's A and B figures before its names are shortened (`*`: the
    // header contains the rest): the differences stay.
    "*FLOPs A",
    "*MemR+W A",
    "*FLOPs B",
    "*MemR+W B",
];

/// The shortest a shortened name gets.
const MIN_NAME: usize = 12;

/// The narrowest a wrapped text column other than the names gets.
const MIN_TEXT: usize = 10;

/// A cell's width: its widest line.
pub(super) fn width_of(s: &str) -> usize {
    s.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// The width a table of these columns takes: each cell padded by one space
/// on each side, and a border between and around columns.
fn table_width(widths: &[usize]) -> usize {
    widths.iter().map(|w| w + 3).sum::<usize>() + 1
}

/// `…` and the end of `s`, `max` characters in all (a path's last parts say
/// most about a layer).
fn shorten(s: &str, max: usize) -> String {
    let n = width_of(s);
    if n <= max {
        return s.to_string();
    }
    let tail: String = s.chars().skip(n - (max - 1)).collect();
    format!("…{tail}")
}

/// The grid's title, bold when colouring.
pub(super) fn title(text: &str, color: bool) -> String {
    if color {
        format!("\x1b[1m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// The grid as a table no wider than `width` (when given), and the note
/// saying what was left out or shortened to fit.
pub(super) fn fitted(g: &Grid, width: Option<usize>, color: bool) -> (String, Option<String>) {
    fitted_rows(g, width, color, true, false)
}

/// [`fitted`], the last row a total (bold) or not; `wrap_first`: text
/// columns wrap before any column is left out (a catalog, whose every
/// figure matters, rather than a layer table's optional columns).
pub(super) fn fitted_rows(
    g: &Grid,
    width: Option<usize>,
    color: bool,
    total_row: bool,
    wrap_first: bool,
) -> (String, Option<String>) {
    let widths: Vec<usize> = (0..g.header.len())
        .map(|c| {
            g.rows
                .iter()
                .map(|r| r.get(c).map_or(0, |s| width_of(s)))
                .chain([width_of(&g.header[c])])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let fit = Fit::new(&g.header, &g.numeric, widths, width, wrap_first);
    let mut t = fit.table(color, Some(&g.header));
    let last = g.rows.len().saturating_sub(1);
    for (i, r) in g.rows.iter().enumerate() {
        t.add_row(fit.cells(r, color && total_row && i == last));
    }
    fit.arrange(&mut t, &g.numeric, width, None);
    (t.to_string(), fit.note)
}

/// What fitting a table to a width decided: the columns kept, the first
/// column's shortened width, whether cells wrap, and the note saying so.
pub(super) struct Fit {
    /// The columns shown, by index in the grid.
    pub(super) keep: Vec<usize>,
    /// Each column's width in characters (the first one's as shortened).
    widths: Vec<usize>,
    /// The names' width when they are shortened with `…`.
    name_max: Option<usize>,
    /// Whether text cells wrap (comfy-table arranges the columns).
    pub(super) wrap: bool,
    pub(super) note: Option<String>,
}

impl Fit {
    /// The fitting of columns of `widths` characters (each column's widest
    /// cell, its header included) to `width`.
    pub(super) fn new(
        header: &[String],
        numeric: &[bool],
        mut widths: Vec<usize>,
        width: Option<usize>,
        wrap_first: bool,
    ) -> Fit {
        let mut keep: Vec<usize> = (0..header.len()).collect();
        let mut notes = Vec::new();
        let mut name_max = None;
        let now = |keep: &[usize], widths: &[usize]| {
            table_width(&keep.iter().map(|&c| widths[c]).collect::<Vec<_>>())
        };
        if let Some(limit) = width {
            let give = |keep: &[usize], widths: &[usize]| {
                keep.iter()
                    .skip(1)
                    .filter(|&&c| !numeric[c])
                    .map(|&c| widths[c].saturating_sub(MIN_TEXT))
                    .sum::<usize>()
            };
            let mut dropped = Vec::new();
            for prefix in DROP_ORDER {
                let spare = if wrap_first { give(&keep, &widths) } else { 0 };
                if now(&keep, &widths).saturating_sub(spare) <= limit {
                    break;
                }
                keep.retain(|&c| {
                    let out = match prefix.strip_prefix('*') {
                        Some(part) => header[c].contains(part),
                        None => header[c].starts_with(prefix),
                    };
                    if out {
                        dropped.push(header[c].replace('\n', " "));
                    }
                    !out
                });
            }
            if !dropped.is_empty() {
                notes.push(format!("left out {}", dropped.join(", ")));
            }
            // Then the text columns other than the names give way (wrapped to
            // as little as MIN_TEXT each); only when that is not enough is the
            // first column (layer or op names) shortened.
            let over = now(&keep, &widths)
                .saturating_sub(limit)
                .saturating_sub(give(&keep, &widths));
            if over > 0 && keep.first() == Some(&0) && !numeric[0] && widths[0] > MIN_NAME {
                let max = widths[0].saturating_sub(over).max(MIN_NAME);
                widths[0] = max;
                name_max = Some(max);
                notes.push("shortened long names with …".into());
            }
        }
        // Still too wide: comfy-table wraps cells rather than the terminal
        // every row.
        let wrap = width.is_some_and(|limit| now(&keep, &widths) > limit);
        if wrap {
            notes.push("wrapped cells".into());
        }
        let note = (!notes.is_empty()).then(|| {
            format!(
                "To fit {} columns: {} (--format md or a wider terminal shows all).",
                width.unwrap_or(0),
                notes.join("; ")
            )
        });
        Fit {
            keep,
            widths,
            name_max,
            wrap,
            note,
        }
    }

    /// An empty table in c3's style, with the kept columns of `header`
    /// when given (bold when colouring): a long table's later pieces have
    /// none.
    pub(super) fn table(&self, color: bool, header: Option<&[String]>) -> Table {
        let mut t = Table::new();
        t.load_style(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled);
        if color {
            t.enforce_styling();
        }
        if let Some(h) = header {
            t.set_header(self.keep.iter().map(|&c| cell(&h[c], color)));
        }
        t
    }

    /// A row's kept cells, as shown (names shortened when they must be),
    /// bold when `bold`.
    pub(super) fn cells(&self, r: &[String], bold: bool) -> Vec<Cell> {
        self.keep
            .iter()
            .map(|&c| {
                let text = &*super::text::shown(r.get(c).map_or("", String::as_str));
                match self.name_max {
                    Some(max) if c == 0 => cell(&shorten(text, max), bold),
                    _ => cell(text, bold),
                }
            })
            .collect()
    }

    /// Aligns the numbers right and, when cells wrap, lets comfy-table
    /// arrange the columns in `width`; `fixed`: each kept column's content
    /// width, set rather than measured from the rows the table holds.
    pub(super) fn arrange(
        &self,
        t: &mut Table,
        numeric: &[bool],
        width: Option<usize>,
        fixed: Option<&[u16]>,
    ) {
        for (i, &c) in self.keep.iter().enumerate() {
            if numeric[c]
                && let Some(col) = t.column_mut(i)
            {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        if let Some(fixed) = fixed {
            for (i, w) in fixed.iter().enumerate() {
                if let Some(col) = t.column_mut(i) {
                    // The width is the content's and the padding's.
                    let padded = w.saturating_add(col.padding_width());
                    col.set_constraint(ColumnConstraint::Absolute(Width::Fixed(padded)));
                }
            }
            return;
        }
        if let Some(limit) = width
            && self.wrap
        {
            t.set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(u16::try_from(limit).unwrap_or(u16::MAX));
            // Names and numbers keep their width: the other text wraps, to no
            // narrower than MIN_TEXT (or its own width, when less).
            for (i, &c) in self.keep.iter().enumerate() {
                let Some(col) = t.column_mut(i) else { continue };
                if i == 0 || numeric[c] {
                    col.set_constraint(ColumnConstraint::ContentWidth);
                } else {
                    let least = u16::try_from(self.widths[c].min(MIN_TEXT)).unwrap_or(u16::MAX);
                    col.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(least)));
                }
            }
        }
    }
}

/// A cell of `text`, bold when `bold`.
fn cell(text: &str, bold: bool) -> Cell {
    let c = Cell::new(text);
    if bold {
        c.add_attribute(Attribute::Bold)
    } else {
        c
    }
}

/// `--color`: when the table is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour output going to a terminal (`terminal`) or not.
    pub fn wanted(self, terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// The width to fit the table to: the terminal's when output goes to one,
/// else `COLUMNS` when set, else none (a file takes any width).
pub fn terminal_width(terminal: bool) -> Option<usize> {
    if terminal && let Some(w) = Table::new().width() {
        return Some(usize::from(w));
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|&w: &usize| w > 0)
}

/// Wraps the prose lines of a table report (notes, the roofline paragraph)
/// at spaces to `width` columns, continuations indented two more spaces;
/// the tables' own lines are left as they are.
pub(super) fn wrap_prose(text: &str, width: Option<usize>) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let boxed = body.starts_with(['│', '┌', '└', '╞', '├', '\x1b']);
        if boxed || width_of(body) <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.len() - body.trim_start().len();
        let more = " ".repeat(indent + 2);
        let mut current = body[..indent].to_string();
        let mut empty = true;
        for word in body[indent..].split(' ') {
            let room = width_of(&current) + 1 + width_of(word);
            if !empty && room > width {
                out.push_str(&current);
                out.push('\n');
                current = more.clone();
                empty = true;
            }
            if !empty {
                current.push(' ');
            }
            current.push_str(word);
            empty = false;
        }
        out.push_str(&current);
        out.push('\n');
    }
    out
}
