//! Shape inference: what each operator's outputs look like (element type,
//! shape, and for small integer tensors the values), from its inputs and
//! attributes.
//!
//! Each operator family lives in its own file and lists its operators in an
//! `ops()` table; [`FAMILIES`] names the families (each has its cost rules in
//! `rules/<family>.yaml`) and [`registry`] gathers the tables. An operator's
//! shape logic is found by name in exactly one place.

pub mod ctx;
pub mod fact;

pub mod dims;

mod activation;
mod attention;
mod control;
mod conv;
mod generator;
mod indexing;
mod logic;
mod loss;
mod math;
mod matmul;
mod microsoft;
mod ml;
mod nchwc;
mod normalization;
mod pooling;
mod quantization;
mod random;
mod recurrent;
mod reduction;
mod resample;
mod sequence;
mod signal;
mod strings;
mod tensor;
mod training;

pub use ctx::{InferCtx, ShapeError};
pub use fact::{Fact, TensorValue, ValueKind};

use rustc_hash::FxHashMap as HashMap;
use std::sync::OnceLock;

/// A shape function: reads the context's inputs and attributes, sets its outputs.
pub type InferFn = fn(&mut InferCtx) -> Result<(), ShapeError>;

/// One registered operator: domain (`""` for ai.onnx), name, shape function.
pub type OpEntry = (&'static str, &'static str, InferFn);

/// A family's table of operators.
pub type FamilyOps = fn() -> Vec<OpEntry>;

/// The operator families: each is `src/shape/<family>.rs` (its shape
/// functions, listed by `ops()`) and `rules/<family>.yaml` (its cost rules),
/// the same operators on both sides.
pub const FAMILIES: &[(&str, FamilyOps)] = &[
    ("activation", activation::ops),
    ("math", math::ops),
    ("logic", logic::ops),
    ("conv", conv::ops),
    ("matmul", matmul::ops),
    ("pooling", pooling::ops),
    ("normalization", normalization::ops),
    ("quantization", quantization::ops),
    ("loss", loss::ops),
    ("reduction", reduction::ops),
    ("recurrent", recurrent::ops),
    ("attention", attention::ops),
    ("microsoft", microsoft::ops),
    ("nchwc", nchwc::ops),
    ("tensor", tensor::ops),
    ("generator", generator::ops),
    ("indexing", indexing::ops),
    ("sequence", sequence::ops),
    ("resample", resample::ops),
    ("signal", signal::ops),
    ("random", random::ops),
    ("strings", strings::ops),
    ("control", control::ops),
    ("ml", ml::ops),
    ("training", training::ops),
];

/// Every family's operators.
fn tables() -> Vec<Vec<OpEntry>> {
    FAMILIES.iter().map(|(_, ops)| ops()).collect()
}

/// The family of an operator's shape function, if c3 has one.
pub fn family_of(domain: &str, op: &str) -> Option<&'static str> {
    let domain = crate::ir::domain_key(domain);
    FAMILIES.iter().find_map(|(name, ops)| {
        ops()
            .iter()
            .any(|(d, o, _)| *d == domain && *o == op)
            .then_some(*name)
    })
}

/// The shape function for an operator, if c3 has one.
pub fn registry(domain: &str, op: &str) -> Option<InferFn> {
    static MAP: OnceLock<HashMap<(&'static str, &'static str), InferFn>> = OnceLock::new();
    let map = MAP.get_or_init(|| {
        let mut m = HashMap::default();
        for table in tables() {
            for (d, o, f) in table {
                m.insert((crate::ir::domain_lookup_key(d), o), f);
            }
        }
        m
    });
    map.get(&(crate::ir::domain_lookup_key(domain), op))
        .copied()
}

/// Every registered (domain, op), sorted.
pub fn supported_ops() -> Vec<(&'static str, &'static str)> {
    let mut v: Vec<_> = tables()
        .into_iter()
        .flat_map(|t| t.into_iter().map(|(d, o, _)| (d, o)))
        .collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operator_has_its_rule_and_its_shape_function_in_one_family() {
        use crate::rules::{BUILTIN_RULES, blocks::scan_blocks};
        use std::collections::BTreeMap;
        // (domain, op) -> the family of the rule file that defines it.
        let mut rule_family = BTreeMap::new();
        for (path, text) in BUILTIN_RULES {
            let stem = path
                .strip_prefix("rules/")
                .and_then(|p| p.strip_suffix(".yaml"))
                .unwrap_or(path);
            for b in scan_blocks(text) {
                rule_family.insert((crate::ir::domain_key(b.domain), b.op), stem);
            }
        }
        let shape_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/shape");
        let mut apart = Vec::new();
        for (family, ops) in FAMILIES {
            let rules = format!("rules/{family}.yaml");
            assert!(
                BUILTIN_RULES.iter().any(|(p, _)| *p == rules),
                "family {family} has no {rules}"
            );
            assert!(
                shape_dir.join(format!("{family}.rs")).is_file(),
                "family {family} has no src/shape/{family}.rs"
            );
            assert!(!ops().is_empty(), "family {family} has no operators");
            for (d, o, _) in ops() {
                match rule_family.get(&(d, o)) {
                    Some(f) if f == family => {}
                    f => apart.push(format!("{d}::{o}: shape in {family}, rule in {f:?}")),
                }
            }
        }
        for ((d, o), f) in &rule_family {
            assert!(
                FAMILIES.iter().any(|(name, _)| name == f),
                "rules/{f}.yaml is no family"
            );
            if family_of(d, o).is_none() {
                apart.push(format!("{d}::{o}: rule in {f}, no shape function"));
            }
        }
        assert!(apart.is_empty(), "{}", apart.join("\n"));
        // 277 operators, each on both sides.
        assert_eq!(rule_family.len(), supported_ops().len());
        assert_eq!(rule_family.len(), 277);
    }

    #[test]
    fn no_operator_is_registered_twice() {
        // The registry keeps the last entry; a second one would silently
        // replace another family's shape function.
        let mut seen = std::collections::BTreeMap::new();
        for table in tables() {
            for (d, o, _) in table {
                *seen.entry((d, o)).or_insert(0) += 1;
            }
        }
        let twice: Vec<_> = seen
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(k, _)| k)
            .collect();
        assert!(twice.is_empty(), "registered twice: {twice:?}");
        assert!(supported_ops().len() > 200, "{} ops", supported_ops().len());
    }
}
