//! A rule's `time:` formula: the seconds one run of a layer takes on a
//! device, written by a pack for one engine as it writes FLOPs. It reads
//! the rule's own names (patterns, attributes, `let`s), whose values are
//! kept when the layer is costed ([`TimeInputs`]), and the figures of the
//! layer on the device ([`TIME_NAMES`]), bound when it is timed
//! ([`crate::cost::predict`]): a formula is never evaluated without a
//! device.

use std::fmt;
use std::sync::{Arc, LazyLock};

use evalexpr::Value;

use super::compile::{CostRule, Formula, What};
use super::eval::{Env, EvalError};
use super::lower;

/// The names a `time:` formula reads besides the rule's own, each with what
/// it is. DETAILS.md lists them from here.
pub const TIME_NAMES: &[(&str, &str)] = &[
    (
        "flops",
        "the layer's FLOPs, as its rule counts them (`--no-fma` counts a multiply-add as 2)",
    ),
    (
        "work",
        "the operations its compute time divides by the peak: FLOPs counted as the peak counts them (a multiply-add as 2 on a vendor's peak), plus IOPs",
    ),
    ("iops", "its integer operations"),
    ("mread", "bytes it reads"),
    ("mwrite", "bytes it writes"),
    (
        "calls",
        "kernel calls it makes (the rule's `calls:`, else 1)",
    ),
    (
        "peak",
        "the device's peak at the layer's precision (the precision it falls back to when it has none), operations per second",
    ),
    (
        "bandwidth",
        "the device's memory bandwidth, bytes per second",
    ),
    ("compute_s", "the roofline's compute time, `work / peak`"),
    (
        "memory_s",
        "the roofline's memory time, `(mread + mwrite) / bandwidth`",
    ),
    (
        "compute_eff",
        "on a calibrated device, the compute efficiency of the layer's time group (infinite for a group without a compute term, so that `compute_s / compute_eff` is 0); 1 on another device",
    ),
    ("memory_eff", "the same for memory"),
    (
        "kernel_s",
        "on a calibrated device, the group's fixed cost per kernel call in seconds; 0 on another device",
    ),
];

/// The figures [`TIME_NAMES`] bind for one run of a layer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeFigures {
    pub flops: u64,
    pub work: u64,
    pub iops: u64,
    pub mread: u64,
    pub mwrite: u64,
    pub calls: u64,
    pub peak: f64,
    pub bandwidth: f64,
    pub compute_s: f64,
    pub memory_s: f64,
    pub compute_eff: f64,
    pub memory_eff: f64,
    pub kernel_s: f64,
}

impl TimeFigures {
    /// The values in [`TIME_NAMES`] order.
    fn values(&self) -> [Value; 13] {
        let int = |n: u64| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
        [
            int(self.flops),
            int(self.work),
            int(self.iops),
            int(self.mread),
            int(self.mwrite),
            int(self.calls),
            Value::Float(self.peak),
            Value::Float(self.bandwidth),
            Value::Float(self.compute_s),
            Value::Float(self.memory_s),
            Value::Float(self.compute_eff),
            Value::Float(self.memory_eff),
            Value::Float(self.kernel_s),
        ]
    }
}

/// The evalexpr keys of [`TIME_NAMES`], in its order.
static KEYS: LazyLock<Vec<String>> = LazyLock::new(|| {
    TIME_NAMES
        .iter()
        .map(|(n, _)| lower::var_timing(n))
        .collect()
});

/// The rule's own keys a compiled time formula reads (every key it reads
/// but the figures').
pub(crate) fn rule_keys(f: &Formula) -> Vec<Arc<str>> {
    let mut keys: Vec<Arc<str>> = Vec::new();
    for id in f.code.iter_variable_identifiers() {
        if !KEYS.iter().any(|k| k == id) && !keys.iter().any(|k| &**k == id) {
            keys.push(Arc::from(id));
        }
    }
    keys
}

/// What a layer's evaluation keeps for its time formula: the formula, and
/// the values of the rule's names it reads. Shared by the layers of one
/// evaluation.
#[derive(Clone)]
pub struct TimeInputs {
    pub formula: Arc<Formula>,
    vars: Vec<(Arc<str>, Value)>,
}

impl PartialEq for TimeInputs {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.formula, &other.formula) && self.vars == other.vars
    }
}

impl fmt::Debug for TimeInputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeInputs")
            .field("formula", &self.formula.text)
            .field("origin", &self.formula.origin)
            .field("vars", &self.vars)
            .finish()
    }
}

impl CostRule {
    /// What the rule's time formula, if it has one, reads of an evaluation.
    pub(super) fn time_inputs(&self, env: &Env<'_>) -> Option<Arc<TimeInputs>> {
        let formula = self.time.as_ref()?;
        let vars = self
            .keys
            .time_reads
            .iter()
            .map(|k| {
                (
                    k.clone(),
                    env.vars.get(&**k).cloned().unwrap_or(Value::Empty),
                )
            })
            .collect();
        Some(Arc::new(TimeInputs {
            formula: formula.clone(),
            vars,
        }))
    }
}

impl TimeInputs {
    /// The seconds the formula gives for one run of the layer: a number at
    /// least 0 and finite, or an error at the formula.
    pub fn seconds(&self, figures: &TimeFigures) -> Result<f64, EvalError> {
        let mut env = Env::new();
        for (k, v) in &self.vars {
            env.set(k, v.clone());
        }
        for (k, v) in KEYS.iter().zip(figures.values()) {
            env.set(k, v);
        }
        let f = &self.formula;
        let fail = |message: String| EvalError::Formula {
            origin: f.origin.clone(),
            what: "time".into(),
            text: f.text.clone(),
            message,
        };
        let t = match f.eval(&env, What::Named("time"))? {
            Value::Float(t) => t,
            Value::Int(n) => n as f64,
            other => {
                return Err(fail(format!(
                    "a time must be a number of seconds, this is {}",
                    lower::describe(&other)
                )));
            }
        };
        if !t.is_finite() {
            return Err(fail(format!(
                "a time must be a finite number of seconds, this is {t}"
            )));
        }
        if t < 0.0 {
            return Err(fail(format!("a time cannot be negative ({t:e} s)")));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::RuleSet;

    /// No built-in rule binds a name the time formula reads: a pack can
    /// give any of them a `time:`.
    #[test]
    fn no_built_in_rule_binds_a_time_name() {
        let rules = RuleSet::builtin().unwrap();
        for r in rules.iter() {
            let mut names: Vec<&str> = r.attrs.iter().map(|a| a.name.as_str()).collect();
            names.extend(r.lets.iter().map(|(n, _)| n.as_str()));
            for p in r.inputs.iter().chain(&r.outputs) {
                names.push(&p.name);
                for d in p.dims.iter().flatten() {
                    if let crate::rules::ast::DimPat::Name(n) | crate::rules::ast::DimPat::Rest(n) =
                        d
                    {
                        names.push(n);
                    }
                }
            }
            for (t, _) in TIME_NAMES {
                assert!(!names.contains(t), "{} binds {t}", r.op);
            }
        }
    }
}
