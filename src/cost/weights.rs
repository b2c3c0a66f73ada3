//! Parameters: the weight tensors a layer reads, counted in elements and
//! bytes. A parameter is a constant of the model (an initializer, a value
//! folded at load time, a trace tensor marked `"const": true`) of a
//! floating-point type or a quantized-weight type (integers of 8 bits or
//! fewer); in a layer that reads a quantized weight, its 32-bit integer
//! constants (a quantized bias) too. Other integer constants are shapes,
//! axes and indices, not parameters.
//!
//! The totals count each distinct tensor once (by its name; a tensor with
//! no name is its own), so a weight shared by several layers is counted
//! once; the summary row of an operator type does the same over its layers.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{Error, Result};
use crate::ir::{AHEAD, DType, Dim, Graph, Node, TensorFact, is_float, prefetch, prefetch_names};

use super::{CostReport, LayerCost};

/// Whether a constant of this type is a quantized weight (or its zero point).
fn is_quantized(t: DType) -> bool {
    matches!(
        t,
        DType::Int8 | DType::Uint8 | DType::Int4 | DType::Uint4 | DType::Int2 | DType::Uint2
    )
}

/// Whether a constant of this type holds real numbers (`is_float` and the
/// micro-scaling formats).
fn is_real(t: DType) -> bool {
    is_float(t) || matches!(t, DType::Float4E2M1 | DType::Float8E8M0)
}

/// The parameters among a layer's inputs, each tensor once.
pub fn parameters(inputs: &[Option<TensorFact>]) -> Vec<&TensorFact> {
    let constants = || inputs.iter().flatten().filter(|t| t.constant);
    let quantized = constants().any(|t| is_quantized(t.dtype));
    let mut list: Vec<&TensorFact> = constants()
        .filter(|t| {
            is_real(t.dtype) || is_quantized(t.dtype) || (quantized && t.dtype == DType::Int32)
        })
        .collect();
    first_of_each_name(&mut list);
    list
}

/// Keeps the first tensor of each name (and every unnamed one), in order.
/// A layer's list is short: compared in place, unless it is long.
fn first_of_each_name(list: &mut Vec<&TensorFact>) {
    if list.len() > 16 {
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        list.retain(|t| t.name.as_deref().is_none_or(|n| seen.insert(n)));
        return;
    }
    let mut kept = 0;
    for i in 0..list.len() {
        let t = list[i];
        let again = t
            .name
            .as_deref()
            .is_some_and(|n| list[..kept].iter().any(|k| k.name.as_deref() == Some(n)));
        if !again {
            list[kept] = t;
            kept += 1;
        }
    }
    list.truncate(kept);
}

/// A tensor's elements and bytes (`elements × bits / 8`, rounded up);
/// `None` when a size is unknown or too large.
pub fn size_of(t: &TensorFact) -> Option<(u64, u64)> {
    let mut n: u64 = 1;
    for d in t.shape.iter() {
        n = n.checked_mul(d.known()?)?;
    }
    let bytes = n.checked_mul(t.dtype.bits())?.div_ceil(8);
    Some((n, bytes))
}

/// The error for a tensor whose size cannot be counted: the symbol that
/// is left, and the flag that binds it.
pub fn size_error(node: &str, op: &str, t: &TensorFact) -> Error {
    let symbols: Vec<String> = t
        .shape
        .iter()
        .filter_map(|d| match d {
            Dim::Sym(s) => Some(s.symbols()),
            Dim::Known(_) => None,
        })
        .flatten()
        .collect();
    let message = if symbols.is_empty() {
        format!("the size of '{}' overflows 64 bits", t.shape_string())
    } else {
        let flags: Vec<String> = symbols.iter().map(|s| format!("--dim {s}=N")).collect();
        format!(
            "the size of '{}' is unknown; bind it with {}",
            t.shape_string(),
            flags.join(" ")
        )
    };
    Error::Layer {
        layer: node.to_string(),
        op: op.to_string(),
        message,
    }
}

/// The constants folded nodes produce, by name, with the node: a constant
/// made at load time from parameters (a Cast, a Transpose, a Gather of an
/// initializer) counts as the parameters it is made from.
pub(super) type Producers<'a> = FxHashMap<&'a str, &'a Node>;

fn folded_producers<'a>(graph: &'a Graph, out: &mut Producers<'a>) {
    let nodes = &graph.folded_nodes;
    for (i, n) in nodes.iter().enumerate() {
        prefetch(nodes.get(i + AHEAD).map(Node::ahead));
        // The names the outputs are filed by, once their lists have come.
        if let Some(soon) = nodes.get(i + AHEAD / 2) {
            prefetch_names(soon.outputs.iter().flatten());
        }
        for t in n.outputs.iter().flatten() {
            if let Some(name) = &t.name {
                out.entry(name).or_insert(n);
            }
        }
    }
    for n in graph
        .nodes
        .iter()
        .chain(graph.unanalysed.iter().map(|(n, _)| n))
    {
        for b in &n.bodies {
            if let Ok(g) = &b.graph {
                folded_producers(g, out);
            }
        }
    }
}

/// The parameters a layer's parameter input stands for: itself, or, when a
/// folded node made it from parameters, those (recursively). One made from
/// no parameter (a Constant, a ConstantOfShape) is a parameter itself.
fn sources<'a>(
    t: &'a TensorFact,
    producers: &Producers<'a>,
    seen: &mut FxHashSet<&'a str>,
    out: &mut Vec<&'a TensorFact>,
) {
    let Some(node) = t.name.as_deref().and_then(|n| producers.get(n)) else {
        out.push(t);
        return;
    };
    let inputs = parameters(&node.inputs);
    if inputs.is_empty() {
        out.push(t);
        return;
    }
    for input in inputs {
        if let Some(name) = input.name.as_deref()
            && !seen.insert(name)
        {
            continue;
        }
        sources(input, producers, seen, out);
    }
}

/// A parameter as the tally counts it: its name with the name's hash (made
/// once, where the name was just read: the tally's threads then pick and
/// file names by the hash, and compare the names only when two hashes are
/// equal), and its elements and bytes.
#[derive(Clone, Copy)]
struct Counted<'a> {
    name: Option<Hashed<'a>>,
    size: (u64, u64),
}

impl<'a> Counted<'a> {
    /// `None` when `t`'s size is unknown or does not fit 64 bits.
    fn of(t: &'a TensorFact) -> Option<Counted<'a>> {
        use std::hash::BuildHasher;
        Some(Counted {
            name: t.name.as_deref().map(|name| Hashed {
                hash: rustc_hash::FxBuildHasher.hash_one(name),
                name,
            }),
            size: size_of(t)?,
        })
    }
}

/// Two counts of elements and bytes added, each at most `u64::MAX`.
fn plus((p, b): (u64, u64), (q, c): (u64, u64)) -> (u64, u64) {
    (p.saturating_add(q), b.saturating_add(c))
}

/// A name filed by the hash it came with.
#[derive(Clone, Copy, Eq)]
struct Hashed<'a> {
    hash: u64,
    name: &'a str,
}

impl PartialEq for Hashed<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.name == other.name
    }
}

impl std::hash::Hash for Hashed<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Distinct parameters by name (unnamed ones each count), in all and by
/// operator type: each name is filed once, with the first type that read
/// it, and another type that reads it apart (a weight shared across types
/// is rare). One look-up a parameter, where a set for the totals and one
/// per type took two.
#[derive(Default)]
struct Tally<'a> {
    first: FxHashMap<Hashed<'a>, u32>,
    again: FxHashSet<(Hashed<'a>, u32)>,
    /// Elements and bytes, in all and by type.
    total: (u64, u64),
    rows: Vec<(u64, u64)>,
}

impl<'a> Tally<'a> {
    /// Counts `t` in the totals and in type `row`'s, unless each has it.
    fn add(&mut self, t: Counted<'a>, row: u32) {
        let (in_total, in_row) = match t.name {
            None => (true, true),
            Some(name) => match self.first.entry(name) {
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(row);
                    (true, true)
                }
                std::collections::hash_map::Entry::Occupied(e) => {
                    (false, *e.get() != row && self.again.insert((name, row)))
                }
            },
        };
        if in_total {
            self.total = plus(self.total, t.size);
        }
        if in_row {
            let r = &mut self.rows[row as usize];
            *r = plus(*r, t.size);
        }
    }
}

/// The parameters behind a layer's inputs, each once.
fn layer_sources<'a>(
    inputs: &'a [Option<TensorFact>],
    producers: &Producers<'a>,
) -> Vec<&'a TensorFact> {
    let mut seen = FxHashSet::default();
    let mut out = Vec::new();
    for t in parameters(inputs) {
        sources(t, producers, &mut seen, &mut out);
    }
    first_of_each_name(&mut out);
    out
}

/// The constants folded nodes produce, for [`tally`] and [`tally_layers`].
pub(super) fn producers(graph: &Graph) -> Producers<'_> {
    let mut producers =
        Producers::with_capacity_and_hasher(graph.folded_nodes.len(), Default::default());
    folded_producers(graph, &mut producers);
    producers
}

/// Each layer's parameters, end to end (as [`layer_sources`] gives them),
/// each size known and within 64 bits, with their sums.
#[derive(Default)]
struct Sources<'a> {
    facts: Vec<Counted<'a>>,
    /// Where each layer's list ends in `facts`.
    ends: Vec<usize>,
    own: Vec<(u64, u64)>,
}

impl<'a> Sources<'a> {
    /// `layers`' sources; the first layer with a size that cannot be
    /// counted is the error.
    fn of(layers: &'a [LayerCost], producers: &Producers<'a>) -> Result<Sources<'a>> {
        let mut s = Sources {
            facts: Vec::with_capacity(layers.len()),
            ends: Vec::with_capacity(layers.len()),
            own: Vec::with_capacity(layers.len()),
        };
        for (i, l) in layers.iter().enumerate() {
            prefetch(layers.get(i + AHEAD).map(LayerCost::ahead));
            // The names a layer's constants are looked up by, once its
            // lists (asked for above) have come.
            if let Some(soon) = layers.get(i + AHEAD / 2) {
                prefetch_names(soon.inputs.iter().flatten().filter(|t| t.constant));
            }
            let start = s.facts.len();
            for t in layer_sources(&l.inputs, producers) {
                let counted = Counted::of(t).ok_or_else(|| size_error(&l.name, &l.op, t))?;
                s.facts.push(counted);
            }
            let sizes = s.facts[start..].iter().map(|t| t.size);
            s.own.push(sizes.fold((0, 0), plus));
            s.ends.push(s.facts.len());
        }
        Ok(s)
    }

    fn lists(&self) -> impl Iterator<Item = &[Counted<'a>]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(a, &b)| &self.facts[a..b])
    }
}

/// Layers from which [`tally`] shares its work with a second thread.
const SHARED_FROM: usize = 4096;

/// Sets every layer's parameters, and those of the total and of each
/// summary row: the distinct tensors their layers read. `rows`: each
/// layer's summary row. The skipped branches' layers get their own
/// ([`tally_layers`]); the folded ones are left to the caller.
pub(super) fn tally(
    producers: &Producers<'_>,
    report: &mut CostReport,
    rows: &[u32],
) -> Result<()> {
    let shared = report.layers.len() >= SHARED_FROM && crate::threads::two_cores();
    tally_with(producers, report, rows, shared)
}

/// [`tally`], on two threads when `shared`: each finds the sources of half
/// the layers, then each counts the names of one half of the names (by
/// their hash; unnamed tensors on the first), all the layers in order. A
/// name is counted by one thread only, so the two counts add up to the
/// count of one thread that did it all.
fn tally_with(
    producers: &Producers<'_>,
    report: &mut CostReport,
    rows: &[u32],
    shared: bool,
) -> Result<()> {
    let layers = &report.layers;
    let (front, back) = match shared {
        true => {
            let (front, back) = layers.split_at(layers.len() / 2);
            crate::threads::both(
                || Sources::of(front, producers),
                || Sources::of(back, producers),
            )
        }
        false => (Sources::of(layers, producers), Ok(Sources::default())),
    };
    let (front, back) = (front?, back?);
    let count = |part: Option<u64>| {
        let mut tally = Tally {
            rows: vec![(0, 0); report.summary.len()],
            ..Tally::default()
        };
        // Most layers read a weight or two: room for one each at once,
        // where growing from nothing rehashed every name many times over.
        tally
            .first
            .reserve(layers.len() / if part.is_some() { 2 } else { 1 });
        // The hash's top bit picks the thread (the table uses the low).
        let ours = |t: &Counted| match (part, t.name) {
            (None, _) => true,
            (Some(p), None) => p == 0,
            (Some(p), Some(name)) => name.hash >> 63 == p,
        };
        for (list, &row) in front.lists().chain(back.lists()).zip(rows) {
            for &t in list {
                if ours(&t) {
                    tally.add(t, row);
                }
            }
        }
        (tally.total, tally.rows)
    };
    let ((total, mut sums), (total_b, sums_b)) = match shared {
        true => crate::threads::both(|| count(Some(0)), || count(Some(1))),
        false => (count(None), Default::default()),
    };
    let total = plus(total, total_b);
    for (s, b) in sums.iter_mut().zip(sums_b) {
        *s = plus(*s, b);
    }
    let own = front.own.into_iter().chain(back.own);
    for (l, (params, bytes)) in report.layers.iter_mut().zip(own) {
        l.params = params;
        l.weight_bytes = bytes;
    }
    for (s, (params, bytes)) in report.summary.iter_mut().zip(sums) {
        s.totals.params = params;
        s.totals.weight_bytes = bytes;
    }
    (report.total.params, report.total.weight_bytes) = total;
    for b in &mut report.skipped {
        tally_layers(producers, &mut b.layers);
    }
    Ok(())
}

/// Gives layers that are not in the totals (folded, skipped) their own
/// parameters.
pub(super) fn tally_layers(producers: &Producers<'_>, layers: &mut [LayerCost]) {
    for i in 0..layers.len() {
        prefetch(layers.get(i + AHEAD).map(LayerCost::ahead));
        let l = &mut layers[i];
        (l.params, l.weight_bytes) = own(&layer_sources(&l.inputs, producers));
    }
}

/// Moves the constants named in `buffers` (a trace's buffers) out of the
/// total's parameters into [`CostReport::buffers`], each once.
pub(super) fn set_buffers(buffers: &[String], report: &mut CostReport) {
    if buffers.is_empty() {
        return;
    }
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    let (mut n, mut b) = (0u64, 0u64);
    for l in &report.layers {
        for t in parameters(&l.inputs) {
            if let Some(name) = t.name.as_deref()
                && buffers.binary_search_by(|x| x.as_str().cmp(name)).is_ok()
                && seen.insert(name)
                && let Some((e, by)) = size_of(t)
            {
                n = n.saturating_add(e);
                b = b.saturating_add(by);
            }
        }
    }
    report.buffers = (n, b);
    report.total.params = report.total.params.saturating_sub(n);
    report.total.weight_bytes = report.total.weight_bytes.saturating_sub(b);
}

/// A layer's parameters and their bytes: its sources are distinct already.
fn own(list: &[&TensorFact]) -> (u64, u64) {
    list.iter()
        .map(|t| size_of(t).unwrap_or_default())
        .fold((0, 0), plus)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: Option<&str>, n: u64) -> TensorFact {
        TensorFact {
            name: name.map(Into::into),
            ..TensorFact::new(DType::Float32, vec![Dim::Known(n)])
        }
    }

    /// A name counts once in the totals and once in each type's row that
    /// reads it; an unnamed tensor counts every time. Float32: 4 bytes an
    /// element.
    #[test]
    fn a_tally_counts_each_name_once_in_all_and_once_a_type() {
        let (w, v, a, b) = (
            named(Some("w"), 4),
            named(Some("v"), 3),
            named(None, 2),
            named(None, 2),
        );
        let mut t = Tally {
            rows: vec![(0, 0); 2],
            ..Tally::default()
        };
        for (fact, row) in [
            (&w, 0),
            (&v, 0),
            (&w, 0),
            (&w, 1),
            (&w, 1),
            (&a, 1),
            (&b, 0),
        ] {
            t.add(Counted::of(fact).unwrap(), row);
        }
        // All: w 4 + v 3 + two unnamed 2 each.
        assert_eq!(t.total, (11, 44));
        // Type 0: w 4 + v 3 + b 2; type 1: w 4 (again, its own) + a 2.
        assert_eq!(t.rows, [(9, 36), (6, 24)]);
    }

    /// Each layer's summary row, as `finish` numbers them.
    fn rows_of(report: &CostReport) -> Vec<u32> {
        let key = |op: &str, domain: &str| {
            (
                op.to_string(),
                crate::ir::domain_lookup_key(domain).to_string(),
            )
        };
        let keys: Vec<_> = report
            .summary
            .iter()
            .map(|s| key(&s.op, &s.domain))
            .collect();
        report
            .layers
            .iter()
            .map(|l| {
                keys.iter()
                    .position(|k| *k == key(&l.op, &l.domain))
                    .unwrap() as u32
            })
            .collect()
    }

    /// The tally on two threads (half the layers' sources each, then half
    /// the names each) is the tally on one: every layer's parameters, each
    /// type's and the total. 5,000 layers of three types add a constant:
    /// even layer i the weight `w(i/2 mod 700)` (each read by several
    /// layers of each type), odd layers an unnamed one of one element.
    #[test]
    fn a_tally_on_two_threads_is_the_tally_on_one() {
        let n = 5000;
        let layer = |i: usize| {
            let op = ["Add", "Mul", "Sub"][i % 3];
            // w(k) has k mod 7 + 1 elements.
            let (d, name) = match i % 2 {
                0 => (
                    i / 2 % 700 % 7 + 1,
                    format!(r#", "name": "w{}""#, i / 2 % 700),
                ),
                _ => (1, String::new()),
            };
            format!(
                r#"{{"op": "{op}", "inputs": [{{"shape": [1, {d}]}}, {{"shape": [{d}], "const": true{name}}}], "outputs": [{{"shape": [1, {d}]}}]}}"#
            )
        };
        let layers: Vec<String> = (0..n).map(layer).collect();
        let trace = format!(r#"{{"layers": [{}]}}"#, layers.join(","));
        let graph = crate::trace::parse_trace(trace.as_bytes(), "inline").unwrap();
        let rules = crate::rules::RuleSet::builtin().unwrap();
        let report = super::super::estimate(&graph, &rules, Default::default()).unwrap();
        let producers = producers(&graph);
        let rows = rows_of(&report);
        for shared in [false, true] {
            let mut again = report.clone();
            for l in &mut again.layers {
                (l.params, l.weight_bytes) = (0, 0);
            }
            (again.total.params, again.total.weight_bytes) = (0, 0);
            for s in &mut again.summary {
                (s.totals.params, s.totals.weight_bytes) = (0, 0);
            }
            tally_with(&producers, &mut again, &rows, shared).unwrap();
            assert!(again == report, "shared: {shared}");
        }
        // The weights, 100 of each size 1..=7: 2,800 elements; the unnamed
        // constants: 2,500. Float32, 4 bytes each.
        assert_eq!(report.total.params, 2800 + 2500);
        assert_eq!(report.total.weight_bytes, 4 * 5300);
        // Add (i = 0 mod 3) reads every weight (its even layers, i = 6m,
        // read w(3m mod 700), and 3 and 700 are coprime) and the unnamed
        // constants of i = 3 mod 6: 3, 9, ..., 4995, 833 of them.
        assert_eq!(report.summary[0].op, "Add");
        assert_eq!(report.summary[0].totals.params, 2800 + 833);
        // Layer 8 reads w4 (5 elements), layer 9 an unnamed one.
        assert_eq!((report.layers[8].params, report.layers[9].params), (5, 1));
    }

    #[test]
    fn the_first_tensor_of_each_name_is_kept_in_order() {
        // Short lists are compared in place, long ones through a set: the
        // same answer either way. Sizes tell the copies apart.
        for len in [5, 40] {
            let facts: Vec<TensorFact> = (0..len as u64)
                .map(|i| match i % 5 {
                    // w0, w1, w0 again, an unnamed one, w1 again.
                    0 | 2 => named(Some("w0"), i),
                    1 | 4 => named(Some("w1"), i),
                    _ => named(None, i),
                })
                .collect();
            let mut list: Vec<&TensorFact> = facts.iter().collect();
            first_of_each_name(&mut list);
            let kept: Vec<u64> = list.iter().map(|t| t.shape[0].known().unwrap()).collect();
            // w0 (0), w1 (1), then every unnamed one (3, 8, 13, ...).
            let mut want = vec![0, 1];
            want.extend((0..len as u64).filter(|i| i % 5 == 3));
            assert_eq!(kept, want, "{len} tensors");
        }
    }
}
