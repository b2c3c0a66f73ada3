//! Shape inference: what each operator's outputs look like (element type,
//! shape, and for small integer tensors the values), from its inputs and
//! attributes.
//!
//! Each operator family lives in its own file and lists its operators in an
//! `OPS` table; [`registry`] gathers the tables. An operator's shape logic is
//! found by name in exactly one place.

pub mod ctx;
pub mod fact;

mod attention;
mod control;
mod elementwise;
mod indexing;
mod microsoft;
mod nn;
mod reduce;
mod tensor;

pub use ctx::{InferCtx, ShapeError};
pub use fact::{Fact, TensorValue, ValueKind};

use std::collections::HashMap;
use std::sync::OnceLock;

/// A shape function: reads the context's inputs and attributes, sets its outputs.
pub type InferFn = fn(&mut InferCtx) -> Result<(), ShapeError>;

/// One registered operator: domain (`""` for ai.onnx), name, shape function.
pub type OpEntry = (&'static str, &'static str, InferFn);

/// Every family's operators.
fn tables() -> Vec<Vec<OpEntry>> {
    vec![
        elementwise::ops(),
        tensor::ops(),
        indexing::ops(),
        nn::ops(),
        reduce::ops(),
        attention::ops(),
        microsoft::ops(),
        control::ops(),
    ]
}

/// The shape function for an operator, if c3 has one.
pub fn registry(domain: &str, op: &str) -> Option<InferFn> {
    static MAP: OnceLock<HashMap<(&'static str, &'static str), InferFn>> = OnceLock::new();
    let map = MAP.get_or_init(|| {
        let mut m = HashMap::new();
        for table in tables() {
            for (d, o, f) in table {
                m.insert((d, o), f);
            }
        }
        m
    });
    let domain = crate::ir::domain_key(domain);
    map.get(&(domain, op)).copied()
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
