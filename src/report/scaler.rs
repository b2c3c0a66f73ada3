//! Numbers as a report shows them: scaled to one unit prefix per kind of
//! figure (FLOPs and parameters by 1000, bytes by 1024), with the column
//! headers and CSV keys that name the unit.

use crate::cost::Totals;

use super::{COLUMN_NAMES, Column, PREFIXES, ReportOptions, Unit};

pub(super) struct Scaler {
    unit: Unit,
    pub(super) digits: usize,
    flops_power: usize,
    bytes_power: usize,
    params_power: usize,
    /// Scaled numbers already formatted, by (kind, value, total): a model's
    /// repeated blocks repeat their numbers, and formatting a float to fixed
    /// digits costs far more than a lookup.
    shown: std::cell::RefCell<rustc_hash::FxHashMap<(u8, u64, u64), String>>,
}

/// Formatted numbers a report keeps for reuse; past that it formats anew.
const SHOWN_LIMIT: usize = 1 << 16;

impl Scaler {
    pub(super) fn new(opts: &ReportOptions, total: &Totals) -> Self {
        // One prefix per kind: the total is each column's largest value.
        let bytes_max = total.mread.max(total.mwrite).max(total.mrw);
        Self {
            unit: opts.unit,
            digits: opts.digits,
            flops_power: opts.unit.power(total.flops, 1000),
            bytes_power: opts.unit.power(bytes_max, 1024),
            params_power: opts.unit.power(total.params, 1000),
            shown: Default::default(),
        }
    }

    /// `format(v, total)`, or its earlier result for the same arguments.
    fn reuse(&self, kind: u8, v: u64, total: u64, format: impl Fn() -> String) -> String {
        let key = (kind, v, total);
        if let Some(s) = self.shown.borrow().get(&key) {
            return s.clone();
        }
        let s = format();
        let mut shown = self.shown.borrow_mut();
        if shown.len() < SHOWN_LIMIT {
            shown.insert(key, s.clone());
        }
        s
    }

    pub(super) fn header(&self, c: Column) -> String {
        let bytes = |label: &str| format!("{label} ({}B)", bytes_prefix(self.bytes_power));
        match c {
            Column::Name => "Layer".into(),
            Column::Op => "Op".into(),
            Column::Flops => format!("{}FLOPs", PREFIXES[self.flops_power]),
            Column::Mread => bytes("MemRead"),
            Column::Mwrite => bytes("MemWrite"),
            Column::Mrw => bytes("MemR+W"),
            Column::Iops => format!("{}IOPs", PREFIXES[self.flops_power]),
            Column::Runs => "Runs".into(),
            Column::FlopsPct => "FLOPs %".into(),
            Column::MreadPct => "MemRead %".into(),
            Column::MwritePct => "MemWrite %".into(),
            Column::MrwPct => "MemR+W %".into(),
            Column::Inputs => "Inputs".into(),
            Column::Outputs => "Outputs".into(),
            Column::Attrs => "Attrs".into(),
            Column::Params if self.params_power == 0 => "Params".into(),
            Column::Params => format!("Params ({})", PREFIXES[self.params_power]),
            Column::Weights => bytes("Weights"),
            Column::Live => bytes("Live"),
        }
    }

    /// A column's CSV name: its `--columns` name, with the unit when the
    /// numbers are scaled (`flops_G`, `mread_MiB`).
    pub(super) fn key(&self, c: Column) -> String {
        let name = COLUMN_NAMES
            .iter()
            .find(|n| n.1 == c)
            .map_or("", |n| n.0)
            .to_string();
        let power = match c {
            Column::Flops | Column::Iops => self.flops_power,
            Column::Params => self.params_power,
            Column::Mread | Column::Mwrite | Column::Mrw | Column::Weights | Column::Live => {
                self.bytes_power
            }
            _ => 0,
        };
        if self.unit == Unit::None || power == 0 {
            name
        } else if matches!(c, Column::Flops | Column::Iops | Column::Params) {
            format!("{name}_{}", PREFIXES[power])
        } else {
            format!("{name}_{}B", bytes_prefix(power))
        }
    }

    pub(super) fn value(&self, v: u64, c: Column) -> String {
        let (kind, power, radix) = if matches!(c, Column::Flops | Column::Iops) {
            (1, self.flops_power, 1000f64)
        } else if c == Column::Params {
            (3, self.params_power, 1000f64)
        } else {
            (2, self.bytes_power, 1024f64)
        };
        if self.unit == Unit::None || power == 0 {
            return v.to_string();
        }
        self.reuse(kind, v, 0, || {
            format!("{:.*}", self.digits, v as f64 / radix.powi(power as i32))
        })
    }

    pub(super) fn percent(&self, v: u64, total: u64) -> String {
        if total == 0 {
            return format!("{:.*}", self.digits, 0.0);
        }
        self.reuse(0, v, total, || {
            format!("{:.*}", self.digits, 100.0 * v as f64 / total as f64)
        })
    }
}

fn bytes_prefix(power: usize) -> String {
    if power == 0 {
        String::new()
    } else {
        format!("{}i", PREFIXES[power])
    }
}
