//! Activation memory: the bytes of the tensors live while each node runs,
//! and the peak over the model.
//!
//! A tensor is live from the start of the node that produces it (a graph
//! input, or a value a subgraph's node gives its body, from the start) to
//! the end of its last consumer (a graph output to the end). Constants
//! (initializers, folded values) are weights, not activations. Nodes
//! without a rule run all the same and count; nodes whose shapes are
//! unknown do not. A tensor with no name (in a trace that names none)
//! cannot be linked to its producer or consumers: it is live during the
//! layers that list it only.
//!
//! A subgraph (an If branch, a Loop or Scan body) runs inside its node:
//! each of its layers has the node's live bytes plus the body's own, the
//! body's inputs live from its start and its outputs to its end, the
//! values it reads from the enclosing graph counted there (kept live up to
//! the node). A body's peak is not multiplied by its runs (each run reuses
//! the memory); an If branch the totals leave out is left out here too.

use std::collections::HashSet;

use rustc_hash::FxHashMap;

use crate::error::Result;
use crate::ir::{AHEAD, Dim, Graph, Node, TensorFact, prefetch};

use super::weights::{size_error, size_of};
use super::{LayerCost, SkippedBranch};

/// The most activation bytes live at once, and the layer where that
/// happens first (`None` for a model with no layer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peak {
    pub bytes: u64,
    pub at: Option<String>,
}

/// One node in model order (bodies after their node) with its live bytes.
pub(super) struct Row<'a> {
    name: &'a str,
    op: &'a str,
    live: u64,
}

/// Computes every node's live bytes, gives the costed layers theirs, and
/// returns the peak.
pub fn apply(graph: &Graph, skipped: &[SkippedBranch], layers: &mut [LayerCost]) -> Result<Peak> {
    Ok(assign(&rows(graph, skipped)?, layers))
}

/// Every node's live bytes, the branches in `skipped` left out.
pub(super) fn rows<'a>(graph: &'a Graph, skipped: &[SkippedBranch]) -> Result<Vec<Row<'a>>> {
    let skip: HashSet<(&str, &str)> = skipped
        .iter()
        .map(|b| (b.node.as_str(), b.branch.as_str()))
        .collect();
    walk(graph, 0, &HashSet::new(), &skip)
}

/// Gives the costed layers their rows' live bytes; returns the peak.
pub(super) fn assign(rows: &[Row<'_>], layers: &mut [LayerCost]) -> Peak {
    // The costed layers are the rows in the same order, less the nodes
    // with no rule.
    let mut at = 0;
    for l in layers.iter_mut() {
        while let Some(r) = rows.get(at) {
            at += 1;
            if r.name == l.name && r.op == l.op {
                l.live_bytes = r.live;
                break;
            }
        }
    }
    let mut peak: Option<&Row> = None;
    for r in rows {
        if peak.is_none_or(|p| r.live > p.live) {
            peak = Some(r);
        }
    }
    peak.map_or_else(Peak::default, |r| Peak {
        bytes: r.live,
        at: Some(r.name.to_string()),
    })
}

/// A tensor's lifetime at one graph level: node indices, both inclusive.
struct Life {
    bytes: u64,
    first: usize,
    last: usize,
}

/// The bytes of an activation (saturated past 64 bits: a layer no rule
/// counts may hold any size), or the error naming the symbol left.
fn bytes_of(node: &Node, t: &TensorFact) -> Result<u64> {
    if t.shape.iter().any(|d| d.known().is_none()) {
        return Err(size_error(&node.name, &node.op, t));
    }
    Ok(size_of(t).map_or(u64::MAX, |(_, b)| b))
}

/// The rows of one graph level, `base` bytes live around it; `outer` names
/// the values of enclosing graphs (counted there).
fn walk<'a>(
    graph: &'a Graph,
    base: u64,
    outer: &HashSet<String>,
    skip: &HashSet<(&str, &str)>,
) -> Result<Vec<Row<'a>>> {
    let n = graph.nodes.len();
    // About one value a node (grown by doubling, the table of a 111k-node
    // graph was copied 15 times on its way to 5 MB).
    let mut lives: FxHashMap<&str, Life> =
        FxHashMap::with_capacity_and_hasher(n, Default::default());
    // Bytes live at one node only (tensors with no name).
    let mut only = vec![0u64; n];
    for (i, node) in graph.nodes.iter().enumerate() {
        prefetch(graph.nodes.get(i + AHEAD).map(Node::ahead));
        for t in node.outputs.iter().flatten().filter(|t| !t.constant) {
            let bytes = bytes_of(node, t)?;
            match &t.name {
                None => only[i] = only[i].saturating_add(bytes),
                Some(name) => {
                    lives.entry(name).or_insert(Life {
                        bytes,
                        first: i,
                        last: i,
                    });
                }
            }
        }
        let produced_inside = produced_in_bodies(node);
        // What the node's bodies read from this level stays live up to it.
        let read = node.inputs.iter().flatten().chain(captured(node));
        for t in read.filter(|t| !t.constant) {
            let Some(name) = &t.name else {
                only[i] = only[i].saturating_add(bytes_of(node, t)?);
                continue;
            };
            if let Some(life) = lives.get_mut(&**name) {
                life.last = life.last.max(i);
            } else if !outer.contains(&**name) && !produced_inside.contains(&**name) {
                // Produced by no node here: an input of the graph.
                let bytes = bytes_of(node, t)?;
                lives.insert(
                    name,
                    Life {
                        bytes,
                        first: 0,
                        last: i,
                    },
                );
            }
        }
    }
    for name in &graph.outputs {
        if let Some(life) = lives.get_mut(name.as_str()) {
            life.last = n.saturating_sub(1);
        }
    }
    // Bytes starting at each node, and ending after it.
    let mut starts = vec![0u128; n];
    let mut ends = vec![0u128; n];
    for life in lives.values() {
        starts[life.first] += u128::from(life.bytes);
        ends[life.last] += u128::from(life.bytes);
    }
    let mut inner_outer: Option<HashSet<String>> = None;
    let mut rows = Vec::with_capacity(n);
    let mut live: u128 = 0;
    for (i, node) in graph.nodes.iter().enumerate() {
        live += starts[i];
        let here = u64::try_from(live + u128::from(only[i]) + u128::from(base)).unwrap_or(u64::MAX);
        live -= ends[i];
        rows.push(Row {
            name: &node.name,
            op: &node.op,
            live: here,
        });
        for b in &node.bodies {
            let Ok(g) = &b.graph else { continue };
            if skip.contains(&(node.name.as_str(), b.attr.as_str()))
                || b.repeats == Dim::Known(0)
                || !unbound(g).is_empty()
            {
                continue;
            }
            let names = inner_outer.get_or_insert_with(|| {
                let mut all = outer.clone();
                all.extend(lives.keys().map(|k| k.to_string()));
                all
            });
            rows.extend(walk(g, here, names, skip)?);
        }
    }
    Ok(rows)
}

/// The named tensors a node's subgraphs read, nested ones included (those
/// the subgraphs make themselves are left out by the caller).
fn captured(node: &Node) -> Vec<&TensorFact> {
    let mut out = Vec::new();
    for b in &node.bodies {
        let Ok(g) = &b.graph else { continue };
        each_node(g, &mut |n| {
            out.extend(n.inputs.iter().flatten().filter(|t| t.name.is_some()));
        });
    }
    out
}

/// The names of what a node's subgraphs produce, and of their own inputs:
/// everything they read that is not from an enclosing graph.
fn produced_in_bodies(node: &Node) -> HashSet<&str> {
    let mut out = HashSet::new();
    for b in &node.bodies {
        out.extend(b.inputs.iter().map(String::as_str));
        let Ok(g) = &b.graph else { continue };
        each_node(g, &mut |n| {
            out.extend(n.outputs.iter().flatten().filter_map(|t| t.name.as_deref()));
            for b in &n.bodies {
                out.extend(b.inputs.iter().map(String::as_str));
            }
        });
    }
    out
}

/// Symbols left in a body (its node is then listed as unsupported, and
/// its body adds nothing).
fn unbound(g: &Graph) -> Vec<String> {
    g.symbols().into_iter().collect()
}

/// Every node of a graph and of its subgraphs, borrowed for the graph's
/// lifetime.
fn each_node<'a>(g: &'a Graph, f: &mut dyn FnMut(&'a Node)) {
    for n in g.nodes.iter().chain(g.unanalysed.iter().map(|(n, _)| n)) {
        f(n);
        for b in &n.bodies {
            if let Ok(g) = &b.graph {
                each_node(g, f);
            }
        }
    }
}
