//! Applying fusion patterns (defined in [`crate::rules::fusions`]) to costed
//! layers. A chain matches layers where each one consumes the previous one's
//! first output, and every tensor passed inside the chain is used by nothing
//! outside it. With named tensors (ONNX, or a trace that names them) the data
//! flow decides; in an anonymous trace, consecutive layers whose shapes
//! connect. The tensors passed inside a group are never written to memory nor
//! read back, so their traffic is removed from the layers.

use std::collections::{HashMap, HashSet};

use crate::cost::LayerCost;
use crate::ir::{Node, TensorFact};
use crate::rules::fusions::{Fusion, Fusions};

/// One matched group.
#[derive(Debug, Clone, PartialEq)]
pub struct FusedGroup {
    /// `conv_bn_relu#3`
    pub id: String,
    pub pattern: String,
    /// Indices into the layer list, in chain order.
    pub members: Vec<usize>,
    /// Bytes no longer written and read.
    pub saved_bytes: u64,
}

/// The bytes a tensor holds (none for a size not known).
pub(crate) fn bytes_of(t: &TensorFact) -> u64 {
    let mut n: u64 = 1;
    for d in t.shape.iter() {
        n = n.saturating_mul(d.known().unwrap_or(0));
    }
    n.saturating_mul(t.dtype.bits()).div_ceil(8)
}

/// Finds the fused groups among `nodes` (the costed layers, in order) and
/// removes the intermediate tensors' traffic from `layers`.
pub fn apply(
    fusions: &Fusions,
    nodes: &[&Node],
    layers: &mut [LayerCost],
    graph_outputs: &[String],
) -> Vec<FusedGroup> {
    if fusions.is_empty() {
        return Vec::new();
    }
    // Consumers of every named tensor.
    let mut consumers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        for t in n.inputs.iter().flatten() {
            if let Some(name) = &t.name {
                let list = consumers.entry(&**name).or_default();
                // Layers come in order: a repeat is always the last one.
                if list.last() != Some(&i) {
                    list.push(i);
                }
            }
        }
    }
    let first_output = |i: usize| nodes[i].outputs.first().and_then(Option::as_ref);
    // The layer that takes `i`'s first output next.
    let successor = |i: usize| -> Option<usize> {
        let out = first_output(i)?;
        match &out.name {
            Some(name) => consumers
                .get(&**name)?
                .iter()
                .copied()
                .filter(|&c| c > i)
                .min(),
            None => {
                let next = i + 1;
                let n = nodes.get(next)?;
                n.inputs
                    .iter()
                    .flatten()
                    .any(|t| t.shape == out.shape && t.dtype == out.dtype)
                    .then_some(next)
            }
        }
    };
    let mut patterns: Vec<&Fusion> = fusions.iter().collect();
    // Longer chains first, so Conv→BN→Relu wins over Conv→BN.
    patterns.sort_by_key(|p| std::cmp::Reverse(p.chain.len()));
    // Indexed by op: each layer tries only the patterns whose first step
    // accepts it, and each step's alternatives are a set.
    let steps: Vec<Vec<HashSet<&str>>> = patterns
        .iter()
        .map(|p| {
            p.chain
                .iter()
                .map(|s| s.iter().map(String::as_str).collect())
                .collect()
        })
        .collect();
    let mut by_first: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, p) in patterns.iter().enumerate() {
        for op in &p.chain[0] {
            let list = by_first.entry(op.as_str()).or_default();
            if list.last() != Some(&k) {
                list.push(k);
            }
        }
    }
    let graph_outputs: HashSet<&str> = graph_outputs.iter().map(String::as_str).collect();
    let mut taken = vec![false; nodes.len()];
    let mut groups: Vec<FusedGroup> = Vec::new();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for start in 0..nodes.len() {
        if taken[start] {
            continue;
        }
        let candidates = by_first
            .get(nodes[start].op.as_str())
            .map_or(&[][..], Vec::as_slice);
        'pattern: for &k in candidates {
            let p = patterns[k];
            let accepts = |step: &HashSet<&str>, i: usize| step.contains(nodes[i].op.as_str());
            let mut members = vec![start];
            let mut cur = start;
            for step in &steps[k][1..] {
                match successor(cur) {
                    Some(next) if !taken[next] && accepts(step, next) => {
                        members.push(next);
                        cur = next;
                    }
                    _ => continue 'pattern,
                }
            }
            // Tensors passed inside the group must not be needed outside it.
            for &m in &members[..members.len() - 1] {
                let Some(out) = first_output(m) else {
                    continue 'pattern;
                };
                if let Some(name) = &out.name {
                    if graph_outputs.contains(&**name) {
                        continue 'pattern;
                    }
                    let used = consumers.get(&**name).map_or(&[][..], Vec::as_slice);
                    if used.iter().any(|u| !members.contains(u)) {
                        continue 'pattern;
                    }
                }
            }
            // Drop the intermediate tensors' writes and reads.
            let mut saved = 0u64;
            for (k, &m) in members[..members.len() - 1].iter().enumerate() {
                let out = first_output(m).expect("checked above").clone();
                let b = bytes_of(&out);
                layers[m].mwrite = layers[m].mwrite.saturating_sub(b);
                saved = saved.saturating_add(b);
                let readers: Vec<usize> = match &out.name {
                    Some(name) => consumers.get(&**name).cloned().unwrap_or_default(),
                    None => vec![members[k + 1]],
                };
                for r in readers {
                    layers[r].mread = layers[r].mread.saturating_sub(b);
                    saved = saved.saturating_add(b);
                }
            }
            let n = counts.entry(p.name.as_str()).or_insert(0);
            *n += 1;
            let id = format!("{}#{}", p.name, n);
            for &m in &members {
                taken[m] = true;
                layers[m].fused = Some(id.clone());
            }
            groups.push(FusedGroup {
                id,
                pattern: p.name.clone(),
                members,
                saved_bytes: saved,
            });
            break;
        }
    }
    groups
}
