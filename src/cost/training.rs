//! Training (`--training`): each layer's backward pass, the optimizer's
//! step and the memory a training step holds.
//!
//! Which gradients a step computes follows the graph: a floating weight
//! trains unless `--freeze` names it or a layer that reads it; a tensor
//! needs a gradient when a weight that trains lies upstream of it. Graph
//! inputs get none, so the first layer computes its weights' gradients
//! and not its input's. A layer computes the gradient of each input that
//! needs one, with its rule's `backward:` formulas or, without them, its
//! category's default ([`DEFAULTS`]); a layer whose rule has neither is
//! listed as not counted in training.
//!
//! A trace whose records say what the backward ran (`backward_of`, from
//! `c3.torch` with `training=True`) is counted from those records instead:
//! each layer's backward is the sum of its records.

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ir::{DType, Graph, Node, TensorFact, is_float};
use crate::rules::{CostRule, CountOptions, RuleSet};

use super::weights::size_of;
use super::{CostReport, LayerCost};

/// What `--training` was asked with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrainingOptions {
    /// Glob patterns (`*`, `?`) of weights, or of layers whose weights,
    /// that do not train.
    pub freeze: Vec<String>,
    /// The optimizer whose step is counted.
    pub optimizer: Option<Optimizer>,
    /// The type of the optimizer's master copy of the weights (mixed
    /// precision: `--weights bf16 --master-weights fp32`).
    pub master_weights: Option<DType>,
    /// Glob patterns of the blocks whose activations are recomputed in
    /// the backward instead of kept (activation checkpointing).
    pub recompute: Vec<String>,
    /// `--fit DIM`: find the largest size of DIM whose step fits the
    /// device's memory.
    pub fit: Option<String>,
}

/// The optimizers whose step c3 counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimizer {
    Sgd,
    Momentum,
    Adam,
    AdamW,
}

/// One optimizer's step per trainable parameter: its state tensors and
/// FLOPs with and without FMA. The documentation's table is made from it.
pub struct OptimizerDef {
    pub optimizer: Optimizer,
    pub name: &'static str,
    /// Tensors of the weight's size it keeps (momentum; Adam's m and v).
    pub states: u64,
    /// FLOPs per parameter with a multiply-add counted as one, and as two.
    pub flops_fma: u64,
    pub flops: u64,
    /// The update, for DETAILS.md.
    pub doc: &'static str,
}

pub const OPTIMIZERS: &[OptimizerDef] = &[
    OptimizerDef {
        optimizer: Optimizer::Sgd,
        name: "sgd",
        states: 0,
        flops_fma: 1,
        flops: 2,
        doc: "$p \\leftarrow p - \\eta g$: one multiply-add",
    },
    OptimizerDef {
        optimizer: Optimizer::Momentum,
        name: "momentum",
        states: 1,
        flops_fma: 2,
        flops: 4,
        doc: "$v \\leftarrow \\mu v + g$, $p \\leftarrow p - \\eta v$: two multiply-adds",
    },
    OptimizerDef {
        optimizer: Optimizer::Adam,
        name: "adam",
        states: 2,
        flops_fma: 9,
        flops: 12,
        doc: "$m \\leftarrow \\beta_1 m + (1 - \\beta_1) g$ (a multiply and a multiply-add), \
              $v \\leftarrow \\beta_2 v + (1 - \\beta_2) g^2$ (two multiplies and a multiply-add), \
              $p \\leftarrow p - \\eta\\, m / (\\sqrt{v} + \\epsilon)$ (a square root, an add, a \
              divide and a multiply-add); the bias corrections are scalars folded into \
              $\\eta$ and $\\epsilon$ once a step",
    },
    OptimizerDef {
        optimizer: Optimizer::AdamW,
        name: "adamw",
        states: 2,
        flops_fma: 10,
        flops: 14,
        doc: "Adam's step and the decoupled weight decay $p \\leftarrow p - \\eta \\lambda p$ \
              (one multiply-add)",
    },
];

impl Optimizer {
    pub fn def(self) -> &'static OptimizerDef {
        OPTIMIZERS
            .iter()
            .find(|d| d.optimizer == self)
            .unwrap_or(&OPTIMIZERS[0])
    }

    pub fn parse(s: &str) -> Option<Optimizer> {
        OPTIMIZERS
            .iter()
            .find(|d| d.name.eq_ignore_ascii_case(s))
            .map(|d| d.optimizer)
    }
}

impl std::str::FromStr for Optimizer {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Optimizer::parse(s).ok_or_else(|| {
            let names: Vec<&str> = OPTIMIZERS.iter().map(|d| d.name).collect();
            format!("unknown optimizer '{s}' (one of {})", names.join(", "))
        })
    }
}

/// How a category's layers are differentiated when their rule has no
/// `backward:` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultKind {
    /// Elementwise: the derivative at each output element times its
    /// gradient.
    Pointwise,
    /// Data movement: the gradient moved back (a view's is free).
    Movement,
    /// Indexing: the output's gradient added back where it was read from.
    Gather,
    /// Everything else that computes: a product of the forward's size.
    Product,
}

/// The default of each category; a category not listed has none (its
/// layers that need a gradient are listed as not counted in training).
pub const DEFAULTS: &[(&str, DefaultKind)] = &[
    ("Activation", DefaultKind::Pointwise),
    ("Math", DefaultKind::Pointwise),
    ("Logic", DefaultKind::Pointwise),
    ("Tensor", DefaultKind::Movement),
    ("Indexing", DefaultKind::Gather),
    ("Connection", DefaultKind::Product),
    ("Normalization", DefaultKind::Product),
    ("Pooling", DefaultKind::Product),
    ("Reduction", DefaultKind::Product),
    ("Attention", DefaultKind::Product),
    ("Loss", DefaultKind::Product),
    ("Recurrent", DefaultKind::Product),
    ("Resample", DefaultKind::Product),
    ("Signal", DefaultKind::Product),
];

impl DefaultKind {
    /// The formulas of the default, for DETAILS.md and `c3 explain`:
    /// (FLOPs, bytes read, bytes written, saves) of the gradient of one
    /// input $X_i$, where $F$ is the forward's FLOPs and $dY$ the
    /// gradient of the outputs.
    pub fn formulas(self) -> [&'static str; 4] {
        match self {
            DefaultKind::Pointwise => [
                "F + |dY| + max(|dY| - |X_i|, 0)",
                "|dY| + |saved|",
                "|X_i|",
                "the floating inputs",
            ],
            DefaultKind::Movement => [
                "max(|dY| - |X_i|, 0)",
                "|dY| (0 for a view)",
                "|X_i| (0 for a view)",
                "nothing",
            ],
            DefaultKind::Gather => ["|dY|", "|dY| + |indices|", "|X_i|", "the indices"],
            DefaultKind::Product => ["F", "|dY| + |inputs|", "|X_i|", "the floating inputs"],
        }
    }

    pub fn of(category: &str) -> Option<DefaultKind> {
        DEFAULTS
            .iter()
            .find(|(c, _)| *c == category)
            .map(|(_, k)| *k)
    }
}

/// A layer's backward pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LayerBackward {
    pub flops: u64,
    pub mread: u64,
    pub mwrite: u64,
    /// Bytes of the activations it keeps from the forward for its backward.
    pub saves: u64,
    /// The inputs (positions) whose gradient it computes.
    pub grads: Vec<usize>,
    /// Its block is recomputed: the backward runs its forward again.
    pub recomputed: bool,
}

/// Sums of the backward over a set of layers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackwardTotals {
    pub layers: u64,
    pub flops: u64,
    pub mread: u64,
    pub mwrite: u64,
    pub saves: u64,
}

/// The optimizer's step over every trainable parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptimizerCost {
    pub name: &'static str,
    pub flops: u64,
    pub mread: u64,
    pub mwrite: u64,
}

/// What a training step holds, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrainingMemory {
    pub weights: u64,
    pub gradients: u64,
    pub optimizer_states: u64,
    pub saved_activations: u64,
    /// The largest working set of one layer's backward (the gradient it
    /// reads, the gradients it writes, and a recomputed block's
    /// activations).
    pub transient: u64,
    pub peak: u64,
}

/// The training figures of a report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Training {
    /// By layer (the report's order): `None` when the layer computes no
    /// gradient.
    pub layers: Vec<Option<LayerBackward>>,
    /// By operator type, in the order of the report's summary.
    pub by_type: Vec<BackwardTotals>,
    pub total: BackwardTotals,
    /// Layers that need a gradient and that no rule counts: (name, op,
    /// why).
    pub not_counted: Vec<(String, String, String)>,
    /// Elements of the weights that train, and of those that do not.
    pub trainable: u64,
    pub frozen: u64,
    pub optimizer: Option<OptimizerCost>,
    pub memory: TrainingMemory,
    /// Counted from the records of a trace (what the backward ran), not
    /// from the rules.
    pub recorded: bool,
    pub options: TrainingOptions,
    /// With `--device`: its catalog key and memory in bytes, where the
    /// catalog gives it.
    pub capacity: Option<(String, u64)>,
    /// With `--fit DIM`: the dimension and the largest size of it whose
    /// step fits (`None` inside: not even 1).
    pub fit: Option<(String, Option<i64>)>,
}

impl Training {
    /// Whether the step fits the device's memory, and the margin (bytes
    /// left, negative when it does not fit).
    pub fn fits(&self) -> Option<(bool, i128)> {
        let (_, cap) = self.capacity.as_ref()?;
        let margin = *cap as i128 - self.memory.peak as i128;
        Some((margin >= 0, margin))
    }
}

/// A `*`/`?` glob, matched in linear space and O(pattern × text) time.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

fn any_glob(patterns: &[String], text: &str) -> bool {
    patterns.iter().any(|p| glob(p, text))
}

/// The block of a layer named `name` under `--recompute`: the shortest
/// prefix of its name, cut where a `/` or `.` follows, that a pattern
/// matches (the name itself included).
fn block_of<'n>(patterns: &[String], name: &'n str) -> Option<&'n str> {
    let cuts = name
        .char_indices()
        .filter(|(_, c)| matches!(c, '/' | '.'))
        .map(|(i, _)| i)
        .chain([name.len()]);
    cuts.map(|i| &name[..i])
        .filter(|p| !p.is_empty())
        .find(|p| any_glob(patterns, p))
}

fn bytes(t: &TensorFact) -> u64 {
    size_of(t).map_or(0, |(_, b)| b)
}

fn elements(t: &TensorFact) -> u64 {
    size_of(t).map_or(0, |(n, _)| n)
}

fn overflow(what: &str) -> Error {
    Error::Usage(format!("the training {what} overflows 64 bits"))
}

fn add(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_add(b).ok_or_else(|| overflow(what))
}

/// The gradients a layer's outputs carry: its floating outputs.
fn output_grads(outputs: &[Option<TensorFact>]) -> impl Iterator<Item = &TensorFact> {
    outputs.iter().flatten().filter(|t| is_float(t.dtype))
}

/// A category default's cost of the gradients at `grads`, and the bytes it
/// saves.
fn default_backward(
    kind: DefaultKind,
    layer: &LayerCost,
    inputs: &[Option<TensorFact>],
    outputs: &[Option<TensorFact>],
    grads: &[usize],
) -> Result<(u64, u64, u64, Vec<usize>)> {
    let dy: u64 = output_grads(outputs).map(elements).sum();
    let dy_bytes: u64 = output_grads(outputs).map(bytes).sum();
    let saved: Vec<usize> = match kind {
        DefaultKind::Pointwise | DefaultKind::Product => inputs
            .iter()
            .enumerate()
            .filter(|(_, t)| t.as_ref().is_some_and(|t| is_float(t.dtype)))
            .map(|(i, _)| i)
            .collect(),
        DefaultKind::Gather => inputs
            .iter()
            .enumerate()
            .filter(|(_, t)| t.as_ref().is_some_and(|t| !is_float(t.dtype)))
            .map(|(i, _)| i)
            .collect(),
        DefaultKind::Movement => Vec::new(),
    };
    let saved_bytes: u64 = saved
        .iter()
        .filter_map(|&i| inputs[i].as_ref())
        .map(bytes)
        .sum();
    let view = layer.mread == 0 && layer.mwrite == 0;
    let (mut f, mut r, mut w) = (0u64, 0u64, 0u64);
    for &i in grads {
        let Some(x) = &inputs[i] else { continue };
        let (xn, xb) = (elements(x), bytes(x));
        let reduce = dy.saturating_sub(xn);
        let (gf, gr, gw) = match kind {
            DefaultKind::Pointwise => (
                layer
                    .flops
                    .checked_add(dy)
                    .and_then(|v| v.checked_add(reduce)),
                Some(dy_bytes.saturating_add(saved_bytes)),
                xb,
            ),
            DefaultKind::Movement if view => (Some(0), Some(0), 0),
            DefaultKind::Movement => (Some(reduce), Some(dy_bytes), xb),
            DefaultKind::Gather => (Some(dy), Some(dy_bytes.saturating_add(saved_bytes)), xb),
            DefaultKind::Product => {
                let all: u64 = inputs.iter().flatten().map(bytes).sum();
                (Some(layer.flops), Some(dy_bytes.saturating_add(all)), xb)
            }
        };
        f = add(f, gf.ok_or_else(|| overflow("FLOPs"))?, "FLOPs")?;
        r = add(r, gr.unwrap_or(u64::MAX), "bytes")?;
        w = add(w, gw, "bytes")?;
    }
    Ok((f, r, w, saved))
}

/// The nodes of the graph by name, each name's nodes in order, to find a
/// layer's node (a name met twice is taken in turn).
struct NodesByName<'g> {
    nodes: FxHashMap<&'g str, (Vec<usize>, usize)>,
}

impl<'g> NodesByName<'g> {
    fn new(graph: &'g Graph) -> Self {
        let mut nodes: FxHashMap<&str, (Vec<usize>, usize)> = FxHashMap::default();
        for (i, n) in graph.nodes.iter().enumerate() {
            nodes.entry(n.name.as_str()).or_default().0.push(i);
        }
        NodesByName { nodes }
    }

    fn next(&mut self, name: &str) -> Option<usize> {
        let (list, at) = self.nodes.get_mut(name)?;
        let i = *list.get(*at)?;
        *at += 1;
        Some(i)
    }
}

/// A layer's tensors that need a gradient, by position.
fn needing(
    layer: &LayerCost,
    needs: &FxHashSet<Arc<str>>,
    any_upstream: bool,
    frozen: &dyn Fn(&TensorFact, &str) -> bool,
) -> Vec<usize> {
    layer
        .inputs
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            let Some(t) = t else { return false };
            if !is_float(t.dtype) {
                return false;
            }
            if t.constant {
                // A one-element constant is the exporter's (GELU's 0.5, an
                // epsilon), not a weight.
                return elements(t) > 1 && !frozen(t, &layer.name);
            }
            match &t.name {
                Some(n) => needs.contains(n),
                // An unnamed tensor (a hand-written trace): it needs one
                // once anything upstream does.
                None => any_upstream,
            }
        })
        .map(|(i, _)| i)
        .collect()
}

/// The backward of one node for the gradients at `grads`: from the rule's
/// section or its category's default; `Err(reason)` when neither counts
/// it. Returns (flops, mread, mwrite, saved positions in inputs then
/// outputs, whether outputs carry a gradient, the inputs given one).
type Counted = (u64, u64, u64, Vec<usize>, bool, Vec<usize>);

fn backward_of(
    rule: &CostRule,
    node: &Node,
    layer: &LayerCost,
    count: CountOptions,
    grads: &[usize],
) -> Result<std::result::Result<Counted, String>> {
    if let Some(b) = &rule.backward {
        let ev = rule
            .evaluate_backward(node, count, grads)
            .map_err(|e| super::eval_error(node, e))?
            .unwrap_or_default();
        // Positions of patterns, to tensors of the node: a variadic
        // pattern (the last) stands for the rest of its side.
        let ni = rule.inputs.len();
        let mut saved = Vec::new();
        for &slot in &b.saves {
            let (side, pats, base, at) = if slot < ni {
                (&node.inputs, &rule.inputs, 0, slot)
            } else {
                (&node.outputs, &rule.outputs, node.inputs.len(), slot - ni)
            };
            let upto = if pats.get(at).is_some_and(|p| p.variadic) {
                side.len()
            } else {
                (at + 1).min(side.len())
            };
            saved.extend((at..upto).map(|i| base + i));
        }
        return Ok(Ok((
            ev.flops,
            ev.mread,
            ev.mwrite,
            saved,
            !b.grads.is_empty(),
            ev.grads,
        )));
    }
    let Some(kind) = DefaultKind::of(&rule.category) else {
        return Ok(Err(format!(
            "no backward rule, and category {} has no default",
            rule.category
        )));
    };
    let (f, r, w, saved) = default_backward(kind, layer, &node.inputs, &node.outputs, grads)?;
    Ok(Ok((f, r, w, saved, true, grads.to_vec())))
}

/// Works out the training figures of `report`, whose layers `graph`'s
/// nodes are.
pub fn apply(
    graph: &Graph,
    rules: &RuleSet,
    report: &CostReport,
    count: CountOptions,
    opts: &TrainingOptions,
) -> Result<Training> {
    // A buffer (a trace's state, not a parameter) never trains.
    let buffer = |t: &TensorFact| {
        t.name.as_deref().is_some_and(|n| {
            graph
                .buffers
                .binary_search_by(|b| b.as_str().cmp(n))
                .is_ok()
        })
    };
    let frozen = |t: &TensorFact, layer: &str| {
        buffer(t)
            || any_glob(&opts.freeze, layer)
            || t.name.as_deref().is_some_and(|n| any_glob(&opts.freeze, n))
    };
    let mut by_name = NodesByName::new(graph);
    let mut needs: FxHashSet<Arc<str>> = FxHashSet::default();
    let mut any_upstream = false;
    let mut out = Training {
        layers: vec![None; report.layers.len()],
        options: opts.clone(),
        ..Training::default()
    };
    let mut node_layer: FxHashMap<usize, usize> = FxHashMap::default();
    // What each layer saves, by tensor (name, or the layer's own slot).
    let mut saved: Vec<Vec<&TensorFact>> = vec![Vec::new(); report.layers.len()];
    for (li, layer) in report.layers.iter().enumerate() {
        let node_index = by_name.next(&layer.name);
        if let Some(n) = node_index {
            node_layer.insert(n, li);
        }
        let grads = needing(layer, &needs, any_upstream, &frozen);
        if grads.is_empty() {
            continue;
        }
        let mark = |needs: &mut FxHashSet<Arc<str>>| {
            for t in output_grads(&layer.outputs) {
                if let Some(n) = &t.name {
                    needs.insert(n.clone());
                }
            }
        };
        let (Some(n), Some(rule)) = (
            node_index.map(|i| &graph.nodes[i]),
            rules.get(&layer.domain, &layer.op),
        ) else {
            out.not_counted.push((
                layer.name.clone(),
                layer.op.clone(),
                "inside a subgraph, which training does not count".into(),
            ));
            mark(&mut needs);
            any_upstream = true;
            continue;
        };
        match backward_of(rule, n, layer, count, &grads)? {
            Err(why) => {
                out.not_counted
                    .push((layer.name.clone(), layer.op.clone(), why));
                mark(&mut needs);
                any_upstream = true;
            }
            Ok((flops, mread, mwrite, slots, flows, grads)) => {
                if flows {
                    mark(&mut needs);
                    any_upstream = true;
                }
                let all: Vec<&Option<TensorFact>> =
                    n.inputs.iter().chain(n.outputs.iter()).collect();
                saved[li] = slots
                    .iter()
                    .filter_map(|&s| all.get(s).and_then(|t| t.as_ref()))
                    .filter(|t| !t.constant)
                    .collect();
                out.layers[li] = Some(LayerBackward {
                    flops,
                    mread,
                    mwrite,
                    saves: saved[li].iter().map(|t| bytes(t)).sum(),
                    grads,
                    recomputed: false,
                });
            }
        }
    }
    if graph.backward.is_empty() {
        gradient_sums(report, &mut out)?;
    } else {
        recorded(graph, rules, count, &node_layer, &mut out)?;
    }
    recompute(report, opts, &mut out, &mut saved)?;
    totals(report, &mut out)?;
    memory(report, count, opts, &mut out, &saved)?;
    Ok(out)
}

/// A tensor read by several layers that each give it a gradient gets the
/// sum of those gradients: $k - 1$ additions for $k$ readers, each as an
/// Add counts it (its elements; both operands read, the sum written),
/// charged to the layer that writes the tensor.
fn gradient_sums(report: &CostReport, out: &mut Training) -> Result<()> {
    let mut producer: FxHashMap<&str, usize> = FxHashMap::default();
    let mut readers: FxHashMap<&str, (u64, &TensorFact)> = FxHashMap::default();
    for (li, (l, b)) in report.layers.iter().zip(&out.layers).enumerate() {
        if let Some(b) = b {
            for &g in &b.grads {
                let Some(t) = l.inputs.get(g).and_then(|t| t.as_ref()) else {
                    continue;
                };
                if let (false, Some(n)) = (t.constant, t.name.as_deref()) {
                    readers.entry(n).or_insert((0, t)).0 += 1;
                }
            }
        }
        for t in l.outputs.iter().flatten() {
            if let Some(n) = t.name.as_deref() {
                producer.entry(n).or_insert(li);
            }
        }
    }
    for (name, (k, t)) in readers {
        let Some(&p) = producer.get(name).filter(|_| k > 1) else {
            continue;
        };
        let Some(b) = out.layers[p].as_mut() else {
            continue;
        };
        let adds = k - 1;
        let (n, by) = (elements(t), bytes(t));
        let mul = |a: u64, b: u64| a.checked_mul(b).ok_or_else(|| overflow("FLOPs"));
        b.flops = add(b.flops, mul(adds, n)?, "FLOPs")?;
        b.mread = add(b.mread, mul(mul(adds, 2)?, by)?, "bytes")?;
        b.mwrite = add(b.mwrite, mul(adds, by)?, "bytes")?;
    }
    Ok(())
}

/// A trace's backward records replace the derived backward: each layer's
/// is the sum of its records.
fn recorded(
    graph: &Graph,
    rules: &RuleSet,
    count: CountOptions,
    node_layer: &FxHashMap<usize, usize>,
    out: &mut Training,
) -> Result<()> {
    out.recorded = true;
    let mut sums: FxHashMap<usize, (u64, u64, u64, Vec<usize>)> = FxHashMap::default();
    for r in &graph.backward {
        let Some(&li) = node_layer.get(&r.of) else {
            continue; // a record of a layer no rule counts: listed with it
        };
        let node = &r.node;
        let Some(rule) = rules.get(&node.domain, &node.op) else {
            out.not_counted
                .push((node.name.clone(), node.op.clone(), "no cost rule".into()));
            continue;
        };
        let forward = super::cost_of(node, rule, count)?;
        let (f, rd, w, grads) = match &r.grads {
            None => (forward.flops, forward.mread, forward.mwrite, Vec::new()),
            Some(grads) => match backward_of(rule, node, &forward, count, grads)? {
                Ok((f, rd, w, _, _, counted)) => (f, rd, w, counted),
                Err(why) => {
                    out.not_counted
                        .push((node.name.clone(), node.op.clone(), why));
                    continue;
                }
            },
        };
        let e = sums.entry(li).or_default();
        e.0 = add(e.0, f, "FLOPs")?;
        e.1 = add(e.1, rd, "bytes")?;
        e.2 = add(e.2, w, "bytes")?;
        for g in grads {
            if !e.3.contains(&g) {
                e.3.push(g);
            }
        }
    }
    for (li, slot) in out.layers.iter_mut().enumerate() {
        let saves = slot.as_ref().map_or(0, |b| b.saves);
        *slot = sums
            .remove(&li)
            .map(|(flops, mread, mwrite, grads)| LayerBackward {
                flops,
                mread,
                mwrite,
                saves,
                grads,
                recomputed: false,
            });
    }
    Ok(())
}

/// `--recompute`: a block's layers keep nothing but the block's inputs,
/// and their backward runs their forward again.
fn recompute(
    report: &CostReport,
    opts: &TrainingOptions,
    out: &mut Training,
    saved: &mut [Vec<&TensorFact>],
) -> Result<()> {
    if opts.recompute.is_empty() {
        return Ok(());
    }
    let blocks: Vec<Option<&str>> = report
        .layers
        .iter()
        .map(|l| block_of(&opts.recompute, &l.name))
        .collect();
    // What each block makes, to tell its inputs from its own activations.
    let mut made: FxHashMap<&str, FxHashSet<&str>> = FxHashMap::default();
    for (l, b) in report.layers.iter().zip(&blocks) {
        if let Some(b) = b {
            let set = made.entry(b).or_default();
            for t in l.outputs.iter().flatten() {
                if let Some(n) = &t.name {
                    set.insert(n);
                }
            }
        }
    }
    let mut own: FxHashMap<&str, u64> = FxHashMap::default();
    for (li, l) in report.layers.iter().enumerate() {
        let (Some(b), Some(bw)) = (blocks[li], out.layers[li].as_mut()) else {
            continue;
        };
        bw.recomputed = true;
        bw.flops = add(bw.flops, l.flops, "FLOPs")?;
        bw.mread = add(bw.mread, l.mread, "bytes")?;
        bw.mwrite = add(bw.mwrite, l.mwrite, "bytes")?;
        let Some(inside) = made.get(b) else { continue };
        let (kept, dropped): (Vec<&TensorFact>, Vec<&TensorFact>) = saved[li]
            .iter()
            .partition(|t| t.name.as_deref().is_some_and(|n| !inside.contains(n)));
        *own.entry(b).or_default() += dropped.iter().map(|t| bytes(t)).sum::<u64>();
        saved[li] = kept;
        bw.saves = saved[li].iter().map(|t| bytes(t)).sum();
    }
    out.memory.transient = own.values().copied().max().unwrap_or(0);
    Ok(())
}

fn totals(report: &CostReport, out: &mut Training) -> Result<()> {
    let mut by: FxHashMap<(&str, &str), BackwardTotals> = FxHashMap::default();
    let mut total = BackwardTotals::default();
    for (l, b) in report.layers.iter().zip(&out.layers) {
        let Some(b) = b else { continue };
        for t in [by.entry((&l.domain, &l.op)).or_default(), &mut total] {
            t.layers += 1;
            t.flops = add(t.flops, b.flops, "FLOPs")?;
            t.mread = add(t.mread, b.mread, "bytes")?;
            t.mwrite = add(t.mwrite, b.mwrite, "bytes")?;
            t.saves = add(t.saves, b.saves, "bytes")?;
        }
    }
    out.by_type = report
        .summary
        .iter()
        .map(|s| {
            by.get(&(s.domain.as_str(), s.op.as_str()))
                .copied()
                .unwrap_or_default()
        })
        .collect();
    out.total = total;
    Ok(())
}

/// Weights, gradients, optimizer states, saved activations and the peak.
fn memory(
    report: &CostReport,
    count: CountOptions,
    opts: &TrainingOptions,
    out: &mut Training,
    saved: &[Vec<&TensorFact>],
) -> Result<()> {
    // Every distinct floating weight once, trainable or not.
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    let (mut grad_bytes, mut trainable, mut frozen_n) = (0u64, 0u64, 0u64);
    let mut trainable_bits: Vec<(u64, u64)> = Vec::new();
    for (l, b) in report.layers.iter().zip(&out.layers) {
        for (i, t) in l.inputs.iter().enumerate() {
            let Some(t) = t.as_ref().filter(|t| t.constant && is_float(t.dtype)) else {
                continue;
            };
            if let Some(n) = t.name.as_deref()
                && !seen.insert(n)
            {
                continue;
            }
            let n = elements(t);
            if b.as_ref().is_some_and(|b| b.grads.contains(&i)) {
                trainable = add(trainable, n, "parameters")?;
                grad_bytes = add(grad_bytes, bytes(t), "bytes")?;
                trainable_bits.push((n, t.dtype.bits()));
            } else {
                frozen_n = add(frozen_n, n, "parameters")?;
            }
        }
    }
    out.trainable = trainable;
    out.frozen = frozen_n;
    let master_bits = opts.master_weights.map(DType::bits);
    let def = opts.optimizer.map(Optimizer::def);
    let mut states = 0u64;
    let (mut f, mut r, mut w) = (0u64, 0u64, 0u64);
    for &(n, bits) in &trainable_bits {
        let state_bits = master_bits.unwrap_or(bits);
        let by = |bits: u64, k: u64| {
            n.checked_mul(bits)
                .and_then(|v| v.checked_mul(k))
                .map(|v| v.div_ceil(8))
                .ok_or_else(|| overflow("bytes"))
        };
        let k = def.map_or(0, |d| d.states);
        let master = master_bits.map_or(Ok(0), |m| by(m, 1))?;
        states = add(states, add(by(state_bits, k)?, master, "bytes")?, "bytes")?;
        if let Some(d) = def {
            let per = if count.fma { d.flops_fma } else { d.flops };
            f = add(
                f,
                n.checked_mul(per).ok_or_else(|| overflow("FLOPs"))?,
                "FLOPs",
            )?;
            // Reads the weight (its master copy when kept), its gradient
            // and the states; writes the weight and the states, and the
            // working copy from the master.
            let p = by(master_bits.unwrap_or(bits), 1)?;
            let g = by(bits, 1)?;
            let s = by(state_bits, k)?;
            r = add(r, add(add(p, g, "bytes")?, s, "bytes")?, "bytes")?;
            let copy = if master_bits.is_some() {
                by(bits, 1)?
            } else {
                0
            };
            w = add(w, add(add(p, s, "bytes")?, copy, "bytes")?, "bytes")?;
        }
    }
    out.optimizer = def.map(|d| OptimizerCost {
        name: d.name,
        flops: f,
        mread: r,
        mwrite: w,
    });
    // Saved activations: each tensor once (by name), however many layers
    // keep it.
    let mut kept: FxHashSet<&str> = FxHashSet::default();
    let mut saved_bytes = 0u64;
    for list in saved {
        for t in list {
            if let Some(n) = t.name.as_deref()
                && !kept.insert(n)
            {
                continue;
            }
            saved_bytes = add(saved_bytes, bytes(t), "bytes")?;
        }
    }
    // A layer's backward holds the gradient it reads and those it writes.
    let mut working = 0u64;
    for (l, b) in report.layers.iter().zip(&out.layers) {
        let Some(b) = b else { continue };
        let dy: u64 = output_grads(&l.outputs).map(bytes).sum();
        let dx: u64 = b
            .grads
            .iter()
            .filter_map(|&i| l.inputs.get(i).and_then(|t| t.as_ref()))
            .filter(|t| !t.constant)
            .map(bytes)
            .sum();
        working = working.max(dy.saturating_add(dx));
    }
    let m = &mut out.memory;
    m.weights = report.total.weight_bytes;
    m.gradients = grad_bytes;
    m.optimizer_states = states;
    m.saved_activations = saved_bytes;
    m.transient = add(m.transient, working, "bytes")?;
    m.peak = [
        m.gradients,
        m.optimizer_states,
        m.saved_activations,
        m.transient,
    ]
    .into_iter()
    .try_fold(m.weights, |a, b| a.checked_add(b))
    .ok_or_else(|| overflow("memory"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_a_shell_does() {
        assert!(glob("layer1.*", "layer1.0.conv1"));
        assert!(glob("*conv?", "/layer1/conv1"));
        assert!(!glob("layer1.*", "layer10"));
        assert!(glob("*", ""));
        assert!(!glob("a*b", "acbc"));
        // Many stars on a long name stay quick: O(pattern × text).
        let name = "a".repeat(2000);
        assert!(!glob(&"*a".repeat(100).replace("*a*a", "*a*b"), &name));
    }

    #[test]
    fn a_block_is_the_shortest_prefix_a_pattern_matches() {
        let p = vec!["/layer*/layer*.?".to_string()];
        assert_eq!(
            block_of(&p, "/layer1/layer1.0/conv1/Conv"),
            Some("/layer1/layer1.0")
        );
        assert_eq!(block_of(&p, "/conv1/Conv"), None);
        let p = vec!["layer1.*".to_string()];
        assert_eq!(block_of(&p, "layer1.0.conv1"), Some("layer1.0"));
    }
}
