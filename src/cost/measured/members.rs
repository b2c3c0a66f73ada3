//! Kernels that say what they ran (TensorRT's layers name their ONNX nodes,
//! [`crate::profile::Members`]): each is given exactly the layers it
//! names, before any guess from its name or position. A member that is no
//! layer (a weight, a tensor TensorRT made) is passed over; a region of a
//! Myelin kernel takes the layers between its two ends in the report's
//! (the graph's) order that no other kernel names.

use rustc_hash::FxHashMap;

use super::{Anchor, Names};
use crate::cost::CostReport;
use crate::profile::Kernel;

/// Per kernel, the layers it says it ran, its lead first (empty: it says
/// none, or none is a layer); and whether it ran only folded layers.
pub(super) struct Ran {
    pub layers: Vec<Vec<usize>>,
    pub folded: Vec<Option<usize>>,
}

impl Ran {
    pub(super) fn new(report: &CostReport, names: &Names, kernels: &[Kernel]) -> Ran {
        let n = report.layers.len();
        let mut layers: Vec<Vec<usize>> = vec![Vec::new(); kernels.len()];
        let mut folded = vec![None; kernels.len()];
        let mut named = vec![false; n];
        for (k, kernel) in kernels.iter().enumerate() {
            for m in &kernel.members.names {
                match member(names, m) {
                    Some(Anchor::Main(i) | Anchor::End(i)) if !layers[k].contains(&i) => {
                        layers[k].push(i);
                        named[i] = true;
                    }
                    Some(Anchor::Folded(f)) => {
                        folded[k] = folded[k].or(Some(f));
                    }
                    _ => {}
                }
            }
        }
        for (k, kernel) in kernels.iter().enumerate() {
            let Some((a, b)) = &kernel.members.range else {
                continue;
            };
            let at = |s: &str| match member(names, s) {
                Some(Anchor::Main(i) | Anchor::End(i)) => Some(i),
                _ => None,
            };
            let (Some(a), Some(b)) = (at(a), at(b)) else {
                continue;
            };
            let (lo, hi) = (a.min(b), a.max(b));
            for (i, taken) in named.iter().enumerate().take(hi + 1).skip(lo) {
                if !taken {
                    layers[k].push(i);
                }
            }
        }
        // The kernel's first layer in the graph leads until work decides.
        for l in &mut layers {
            l.sort_unstable();
        }
        Ran { layers, folded }
    }

    /// The anchor of a kernel from its members, if they name a layer (or
    /// only folded ones).
    pub(super) fn anchor(&self, k: usize) -> Option<Anchor> {
        match self.layers[k].first() {
            Some(&i) => Some(Anchor::Main(i)),
            None => self.folded[k].map(Anchor::Folded),
        }
    }
}

/// The layer (or folded layer) a member names: by its name, or, for
/// `node_of_<tensor>`, the name TensorRT's ONNX parser gives a node that
/// has none (after its first output), by the layer that writes the tensor.
fn member(names: &Names, m: &str) -> Option<Anchor> {
    names.exact(m).or_else(|| {
        let output = m.strip_prefix("node_of_")?;
        match names.outputs.get(output) {
            Some(&i) => Some(Anchor::Main(i)),
            None => names.folded.get(output).map(|&f| Anchor::Folded(f)),
        }
    })
}

/// The kernel an inserted kernel serves (by the served one's name, or a
/// member's), for each kernel that serves one by name.
pub(super) fn served(kernels: &[Kernel]) -> Vec<Option<usize>> {
    if kernels.iter().all(|k| k.members.serves.is_none()) {
        return vec![None; kernels.len()];
    }
    let mut by_name: FxHashMap<&str, usize> = FxHashMap::default();
    for (k, kernel) in kernels.iter().enumerate() {
        if kernel.members.serves.is_none() {
            by_name.entry(kernel.name.as_str()).or_insert(k);
        }
    }
    let mut by_member: FxHashMap<&str, usize> = FxHashMap::default();
    for (k, kernel) in kernels.iter().enumerate() {
        for m in &kernel.members.names {
            by_member.entry(m.as_str()).or_insert(k);
        }
    }
    kernels
        .iter()
        .map(|k| {
            let target = k.members.serves.as_deref()?;
            by_name
                .get(target)
                .or_else(|| by_member.get(target))
                .copied()
        })
        .collect()
}

/// A kernel's operator: its own where the runtime named one, else that of
/// the first layer it ran.
pub(super) fn op_of(report: &CostReport, kernel: &Kernel, layers: &[usize]) -> String {
    match layers.first() {
        Some(&i) if kernel.op.is_empty() => report.layers[i].op.clone(),
        _ => kernel.op.clone(),
    }
}
