//! The cost stage: applies the rule set to every node of a graph, then the
//! pack's fusion patterns ([`fusion`]); [`roofline`](mod@roofline) turns a report into
//! times on a device.

mod ends;
pub mod fusion;
pub mod measured;
pub mod memory;
pub mod predict;
pub mod roofline;
pub mod training;
pub mod weights;

use evalexpr::Value;

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::ir::{AHEAD, Assumed, Dim, Graph, Node, Tensors, prefetch};
use crate::rules::rule::BranchChoice;
use crate::rules::{CostRule, CountOptions, EvalError, RuleSet};
use fusion::FusedGroup;
pub use roofline::{Bound, LayerTime, PeakGroup, Roofline, parse_duration, roofline};

/// The cost of one layer.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerCost {
    pub name: String,
    pub op: String,
    pub domain: String,
    pub flops: u64,
    /// FLOPs with a multiply-add counted as two, the convention of device
    /// peaks (counted with [`CountOptions::timing`]; `flops` otherwise).
    pub work: u64,
    /// The rule's kernel class (`depthwise`), with timing.
    pub class: Option<std::sync::Arc<str>>,
    /// The rule's category (`Connection`), with timing.
    pub category: Option<std::sync::Arc<str>>,
    /// Kernel calls a run of the layer makes (1 unless its rule says; see
    /// [`crate::rules::rule::CostRule::calls`]).
    pub calls: u64,
    /// With timing: the layer that writes this layer's first input that is
    /// not a constant (its index in the report's layers).
    pub input_from: Option<u32>,
    /// Bytes read.
    pub mread: u64,
    /// Bytes written.
    pub mwrite: u64,
    /// Integer operations (quantized arithmetic), kept apart from FLOPs.
    pub iops: u64,
    /// The node's lists, shared with it.
    pub inputs: Tensors,
    pub outputs: Tensors,
    /// The attributes the rule shows (`k`, `s`, `groups`...), shared with
    /// the other layers of the same evaluation.
    pub attrs: crate::rules::eval::Params,
    /// Elements of the parameters (weight tensors) the layer reads, each
    /// once: see [`weights`].
    pub params: u64,
    /// Their bytes.
    pub weight_bytes: u64,
    /// Activation bytes live while the layer runs: see [`memory`].
    pub live_bytes: u64,
    /// The fused group this layer belongs to (`conv_bn_relu#3`), if any.
    pub fused: Option<String>,
    /// How many times the layer runs per run of the model (a Loop body's
    /// layers run once per iteration); the figures above include them all.
    pub runs: u64,
    /// With timing, when its rule has a `time:` formula: what the formula
    /// reads of the rule's evaluation (of the first trip, for a loop
    /// costed trip by trip), for [`predict`] on a device.
    pub time: Option<std::sync::Arc<crate::rules::time_formula::TimeInputs>>,
}

impl LayerCost {
    /// Where its tensor lists lie, for [`prefetch`].
    pub(crate) fn ahead(&self) -> [*const u8; 2] {
        [self.inputs.as_ptr().cast(), self.outputs.as_ptr().cast()]
    }

    /// Bytes read plus bytes written.
    pub fn mrw(&self) -> u64 {
        // Cannot overflow: the totals check the same sums.
        self.mread.saturating_add(self.mwrite)
    }
}

/// A layer that is not counted (no rule, or shapes unknown): listed, never
/// counted as zero silently.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported {
    pub name: String,
    pub op: String,
    pub domain: String,
    pub reason: String,
}

/// The reason given for an operator without a rule.
pub const NO_RULE: &str = "no cost rule";

/// Sums over a set of layers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    pub layers: u64,
    pub flops: u64,
    /// See [`LayerCost::work`].
    pub work: u64,
    pub mread: u64,
    pub mwrite: u64,
    pub mrw: u64,
    pub iops: u64,
    /// Elements of the distinct parameters the layers read (a tensor
    /// shared by several layers counted once): set by `weights::tally`,
    /// not by summing.
    pub params: u64,
    /// Their bytes.
    pub weight_bytes: u64,
}

impl Totals {
    /// One layer's figures, as the totals of a set of one.
    pub fn of_layer(l: &LayerCost) -> Totals {
        Totals {
            layers: 1,
            flops: l.flops,
            work: l.work,
            mread: l.mread,
            mwrite: l.mwrite,
            mrw: l.mrw(),
            iops: l.iops,
            params: l.params,
            weight_bytes: l.weight_bytes,
        }
    }

    fn add(&mut self, l: &LayerCost) -> Result<()> {
        let overflow = || Error::Layer {
            layer: l.name.clone(),
            op: l.op.clone(),
            message: "totals overflow 64 bits".into(),
        };
        self.layers += 1;
        self.flops = self.flops.checked_add(l.flops).ok_or_else(overflow)?;
        self.work = self.work.checked_add(l.work).ok_or_else(overflow)?;
        self.mread = self.mread.checked_add(l.mread).ok_or_else(overflow)?;
        self.mwrite = self.mwrite.checked_add(l.mwrite).ok_or_else(overflow)?;
        self.mrw = self.mread.checked_add(self.mwrite).ok_or_else(overflow)?;
        self.iops = self.iops.checked_add(l.iops).ok_or_else(overflow)?;
        Ok(())
    }
}

/// The summary row of one operator type.
#[derive(Debug, Clone, PartialEq)]
pub struct OpSummary {
    pub op: String,
    pub domain: String,
    pub totals: Totals,
}

/// An If branch the totals leave out (`--if-branch`), with its layers.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedBranch {
    /// The If layer's name.
    pub node: String,
    /// `then_branch` or `else_branch`.
    pub branch: String,
    /// Why it is not counted.
    pub reason: String,
    pub totals: Totals,
    pub layers: Vec<LayerCost>,
}

/// Everything the reports show.
#[derive(Debug, Clone, PartialEq)]
pub struct CostReport {
    /// Every counted layer, in execution order; a subgraph's layers follow
    /// the node that runs them, their figures multiplied by its trip count.
    pub layers: Vec<LayerCost>,
    /// Per operator type, in the order each type first appears.
    pub summary: Vec<OpSummary>,
    pub total: Totals,
    pub unsupported: Vec<Unsupported>,
    /// Groups of layers fused by the pack's patterns.
    pub fusions: Vec<fusion::FusedGroup>,
    /// If branches not counted in the totals.
    pub skipped: Vec<SkippedBranch>,
    /// Data-dependent sizes taken at their upper bounds.
    pub assumed: Vec<Assumed>,
    /// Layers folded away at load time (every input a constant), with the
    /// cost they would have had; not in the totals.
    pub folded: Vec<LayerCost>,
    /// The most activation bytes live at once, and where.
    pub peak: memory::Peak,
    /// A runtime's profile joined to the layers (`--profile`).
    pub measured: Option<measured::Measured>,
    /// The backward pass, the optimizer's step and training memory
    /// (`--training`).
    pub training: Option<training::Training>,
    /// Elements and bytes of the constants a trace marks as buffers (state,
    /// not parameters: BatchNorm's running statistics), each once; the
    /// totals' `params` leave them out.
    pub buffers: (u64, u64),
}

impl CostReport {
    /// The layers no rule counted, as `op (n)` by op; `None` when a rule
    /// counted every layer.
    pub fn unsupported_by_op(&self) -> Option<String> {
        if self.unsupported.is_empty() {
            return None;
        }
        let mut by_op = std::collections::BTreeMap::<String, usize>::new();
        for u in &self.unsupported {
            *by_op
                .entry(crate::ir::qualified(&u.domain, &u.op))
                .or_default() += 1;
        }
        let ops: Vec<String> = by_op.iter().map(|(op, n)| format!("{op} ({n})")).collect();
        Some(ops.join(", "))
    }
}

/// What the walk over nested graphs collects besides the layers.
struct Collected {
    unsupported: Vec<Unsupported>,
    skipped: Vec<SkippedBranch>,
}

/// Applies the rules to every node, in order; subgraphs (If branches, Loop
/// and Scan bodies) are costed where their node stands.
pub fn estimate(graph: &Graph, rules: &RuleSet, opts: CountOptions) -> Result<CostReport> {
    // What folded nodes make, wanted only once layers are costed: made by
    // whichever thread wants it first (on two threads, the main level's
    // thread as it ends its layers, while the other costs the folded ones).
    let producers = std::sync::OnceLock::new();
    let producers = || producers.get_or_init(|| weights::producers(graph));
    let folded = || -> Result<Vec<LayerCost>> {
        let mut folded = folded_costs(graph, rules, opts)?;
        weights::tally_layers(producers(), &mut folded);
        Ok(folded)
    };
    // The folded layers are costed on a second thread when there are many;
    // so are the live bytes, when no branch can be left out (no subgraph),
    // and the list of what makes each tensor the weights are tallied by.
    let flat = || graph.nodes.iter().all(|n| n.bodies.is_empty());
    let many = |nodes: &[crate::ir::Node]| nodes.len() >= SHARED_FROM;
    // The core count is read last: asking it costs a dozen system calls
    // (the cgroup's quota), which a small model does not need.
    if (many(&graph.folded_nodes) || many(&graph.nodes) && flat()) && crate::threads::two_cores() {
        let flat = flat();
        // A large flat level with no pattern to fuse is costed from both
        // ends: the second thread takes nodes from the back once its folded
        // layers are costed ([`ends`]).
        let ends = (flat && many(&graph.nodes) && rules.fusions.is_empty())
            .then(|| ends::Ends::new(graph.nodes.len()))
            .flatten();
        let (to_front, back) = std::sync::mpsc::channel();
        let (main, (folded, rows)) = crate::threads::both(
            || {
                match &ends {
                    Some(ends) => ends::from_front(graph, rules, opts, ends, &back),
                    None => level_costs(graph, rules, opts),
                }
                .and_then(|main| {
                    let mut report = finish(graph, producers(), main, Vec::new())?;
                    // With subgraphs, the live bytes are worked out here
                    // while the other thread may still cost folded layers.
                    if !flat {
                        report.peak = memory::apply(graph, &report.skipped, &mut report.layers)?;
                    }
                    Ok(report)
                })
            },
            || {
                let folded = folded();
                if let Some(ends) = &ends {
                    ends::from_back(graph, rules, opts, ends, to_front, usize::MAX);
                }
                (folded, flat.then(|| memory::rows(graph, &[])))
            },
        );
        let mut report = main?;
        if let Some(rows) = rows {
            report.peak = memory::assign(&rows?, &mut report.layers);
        }
        report.folded = folded?;
        if opts.timing {
            link_inputs(&mut report.layers);
        }
        return Ok(report);
    }
    let main = level_costs(graph, rules, opts)?;
    let mut report = finish(graph, producers(), main, folded()?)?;
    report.peak = memory::apply(graph, &report.skipped, &mut report.layers)?;
    if opts.timing {
        link_inputs(&mut report.layers);
    }
    Ok(report)
}

/// Sets each layer's [`LayerCost::input_from`]: the layer that writes its
/// first input that is not a constant (the first to write a name, where
/// subgraphs reuse names).
fn link_inputs(layers: &mut [LayerCost]) {
    let mut made: FxHashMap<std::sync::Arc<str>, u32> = FxHashMap::default();
    for (i, l) in layers.iter().enumerate() {
        for t in l.outputs.iter().flatten() {
            if let Some(n) = &t.name {
                made.entry(n.clone()).or_insert(i as u32);
            }
        }
    }
    for (i, l) in layers.iter_mut().enumerate() {
        l.input_from = l
            .inputs
            .iter()
            .flatten()
            .filter(|t| !t.constant)
            .find_map(|t| t.name.as_ref().and_then(|n| made.get(n)).copied())
            .filter(|&p| p as usize != i);
    }
}

/// Graphs with fewer main or folded nodes than this are costed on one
/// thread: a second one would cost more than it takes over.
const SHARED_FROM: usize = 1024;

/// The main level's layers, fused groups and what the walk collected.
fn level_costs(
    graph: &Graph,
    rules: &RuleSet,
    opts: CountOptions,
) -> Result<(Vec<LayerCost>, Vec<FusedGroup>, Collected)> {
    let mut acc = Collected {
        unsupported: Vec::new(),
        skipped: Vec::new(),
    };
    let (layers, fusions) = cost_graph(graph, rules, opts, &mut acc)?;
    Ok((layers, fusions, acc))
}

/// The report of [`estimate`] from the main level's costs and the folded
/// ones, all but the live bytes.
fn finish(
    graph: &Graph,
    producers: &weights::Producers<'_>,
    (mut layers, mut fusions, acc): (Vec<LayerCost>, Vec<FusedGroup>, Collected),
    folded: Vec<LayerCost>,
) -> Result<CostReport> {
    number_groups(&mut fusions, &mut layers);
    let total = totals_of(&layers)?;
    let mut summary: Vec<OpSummary> = Vec::new();
    // Each layer's row, for the weights' tally.
    let mut rows = Vec::with_capacity(layers.len());
    for l in &layers {
        let row = match summary.iter_mut().position(|s| {
            s.op == l.op
                && crate::ir::domain_lookup_key(&s.domain)
                    == crate::ir::domain_lookup_key(&l.domain)
        }) {
            Some(i) => i,
            None => {
                summary.push(OpSummary {
                    op: l.op.clone(),
                    domain: l.domain.clone(),
                    totals: Totals::default(),
                });
                summary.len() - 1
            }
        };
        summary[row].totals.add(l)?;
        // Within u32: one row an operator type.
        rows.push(row as u32);
    }
    let mut report = CostReport {
        layers,
        summary,
        total,
        unsupported: acc.unsupported,
        fusions,
        skipped: acc.skipped,
        assumed: graph.assumed.clone(),
        folded,
        peak: memory::Peak::default(),
        measured: None,
        training: None,
        buffers: (0, 0),
    };
    weights::tally(producers, &mut report, &rows)?;
    weights::set_buffers(&graph.buffers, &mut report);
    Ok(report)
}

/// What the folded layers would have cost, had they run (those c3 has a
/// rule for).
/// A folded layer whose sizes stay unknown (a symbol nothing binds) is
/// left out of the list: it never runs.
fn folded_costs(graph: &Graph, rules: &RuleSet, opts: CountOptions) -> Result<Vec<LayerCost>> {
    let mut layers = Vec::with_capacity(graph.folded_nodes.len());
    for (i, node) in graph.folded_nodes.iter().enumerate() {
        prefetch(graph.folded_nodes.get(i + AHEAD).map(Node::ahead));
        // Most are a node alone (no subgraph, nothing to fuse): costed as
        // `cost_level` costs it, without a level of their own.
        if node.bodies.is_empty() && rules.fusions.is_empty() {
            if let Ok(rule) = rule_of(rules, node)
                && let Ok(layer) = cost_of(node, rule, opts)
            {
                layers.push(layer);
            }
            continue;
        }
        let mut acc = Collected {
            unsupported: Vec::new(),
            skipped: Vec::new(),
        };
        let one = Level {
            nodes: std::slice::from_ref(node),
            outputs: &graph.outputs,
            unanalysed: &[],
        };
        if let Ok((costed, _)) = cost_level(one, rules, opts, &mut acc) {
            layers.extend(costed);
        }
    }
    Ok(layers)
}

fn totals_of(layers: &[LayerCost]) -> Result<Totals> {
    let mut t = Totals::default();
    for l in layers {
        t.add(l)?;
    }
    Ok(t)
}

/// Gives fused groups their final ids (`pattern#n`, n counting per pattern
/// in execution order), whichever graph level matched them.
fn number_groups(groups: &mut [FusedGroup], layers: &mut [LayerCost]) {
    groups.sort_by_key(|g| g.members.first().copied());
    let mut counts: FxHashMap<String, usize> = FxHashMap::default();
    for g in groups {
        let n = counts.entry(g.pattern.clone()).or_insert(0);
        *n += 1;
        g.id = format!("{}#{}", g.pattern, n);
        for &m in &g.members {
            layers[m].fused = Some(g.id.clone());
        }
    }
}

/// The layers of one graph level, each node followed by its subgraphs'
/// layers; fused groups index into the returned list.
fn cost_graph(
    graph: &Graph,
    rules: &RuleSet,
    opts: CountOptions,
    acc: &mut Collected,
) -> Result<(Vec<LayerCost>, Vec<FusedGroup>)> {
    let level = Level {
        nodes: &graph.nodes,
        outputs: &graph.outputs,
        unanalysed: &graph.unanalysed,
    };
    cost_level(level, rules, opts, acc)
}

/// What [`cost_graph`] reads of a graph level: a folded node is costed as
/// a level of its own, borrowed, not copied into a graph.
#[derive(Clone, Copy)]
struct Level<'a> {
    nodes: &'a [Node],
    outputs: &'a [String],
    unanalysed: &'a [(Node, String)],
}

fn cost_level(
    graph: Level<'_>,
    rules: &RuleSet,
    opts: CountOptions,
    acc: &mut Collected,
) -> Result<(Vec<LayerCost>, Vec<FusedGroup>)> {
    let mut own = Vec::with_capacity(graph.nodes.len());
    // The nodes of `own`, for fusion, when there is any to apply (a rule
    // pack's); otherwise never listed (a folded node is costed as a level
    // of its own: 63k of them in a 111k-node graph).
    let fusing = !rules.fusions.is_empty();
    let mut own_nodes = Vec::with_capacity(if fusing { graph.nodes.len() } else { 0 });
    // Per costed node with subgraphs: its position in `own`, and the layers
    // and groups its counted subgraphs add.
    let mut nested: Vec<(usize, Vec<LayerCost>, Vec<FusedGroup>)> = Vec::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        prefetch(graph.nodes.get(i + AHEAD).map(Node::ahead));
        let rule = match rule_of(rules, node) {
            Ok(rule) => rule,
            Err(reason) => {
                acc.unsupported.push(unsupported(node, reason.to_string()));
                continue;
            }
        };
        // Subgraphs that run an unknown number of times, or whose sizes change
        // at run time, cannot be counted: the node is listed instead.
        let unknown = unbound_in_bodies(node);
        if !unknown.is_empty() {
            let flags: Vec<String> = unknown.iter().map(|n| format!("--dim {n}=N")).collect();
            acc.unsupported.push(unsupported(
                node,
                format!(
                    "its subgraphs run a number of times or on sizes only known at run time ({}); bind them with {}",
                    unknown.join(", "),
                    flags.join(" ")
                ),
            ));
            continue;
        }
        let mut layer = cost_of(node, rule, opts)?;
        if !node.bodies.is_empty() {
            let (layers, groups) = cost_bodies(node, &mut layer, rules, opts, acc)?;
            nested.push((own.len(), layers, groups));
        }
        own.push(layer);
        if fusing {
            own_nodes.push(node);
        }
    }
    let own_groups = if fusing {
        // Values a subgraph reads from this level must be written, fused or not.
        let mut keep = graph.outputs.to_vec();
        for node in graph.nodes.iter().filter(|n| !n.bodies.is_empty()) {
            captured_names(node, &mut keep);
        }
        fusion::apply(&rules.fusions, &own_nodes, &mut own, &keep)
    } else {
        Vec::new()
    };
    unanalysed(graph.unanalysed, rules, &mut acc.unsupported);
    if nested.is_empty() {
        return Ok((own, own_groups));
    }
    // Splice each node's subgraph layers in after it.
    let mut at = Vec::with_capacity(own.len());
    let mut layers = Vec::with_capacity(own.len());
    let mut groups = Vec::new();
    let mut nested = nested.into_iter().peekable();
    for (i, l) in own.into_iter().enumerate() {
        at.push(layers.len());
        layers.push(l);
        if let Some((_, inner, inner_groups)) = nested.next_if(|(j, _, _)| *j == i) {
            let offset = layers.len();
            groups.extend(inner_groups.into_iter().map(|mut g| {
                g.members.iter_mut().for_each(|m| *m += offset);
                g
            }));
            layers.extend(inner);
        }
    }
    groups.extend(own_groups.into_iter().map(|mut g| {
        g.members.iter_mut().for_each(|m| *m = at[*m]);
        g
    }));
    Ok((layers, groups))
}

/// `node`, listed as not costed for `reason`.
fn unsupported(node: &Node, reason: String) -> Unsupported {
    Unsupported {
        name: node.name.clone(),
        op: node.op.clone(),
        domain: node.domain.clone(),
        reason,
    }
}

/// Lists the nodes inference could not analyse, each with why.
fn unanalysed(nodes: &[(Node, String)], rules: &RuleSet, out: &mut Vec<Unsupported>) {
    for (node, reason) in nodes {
        let reason = match rules.get(&node.domain, &node.op) {
            None => format!("{NO_RULE}; {reason}"),
            Some(_) => reason.clone(),
        };
        out.push(unsupported(node, reason));
    }
}

/// A node without subgraphs costed as [`cost_level`] costs it: its layer,
/// or `None` when it has no rule (then listed in `out`).
fn cost_plain(
    node: &Node,
    rules: &RuleSet,
    opts: CountOptions,
    out: &mut Vec<Unsupported>,
) -> Result<Option<LayerCost>> {
    match rule_of(rules, node) {
        Ok(rule) => cost_of(node, rule, opts).map(Some),
        Err(reason) => {
            out.push(unsupported(node, reason.to_string()));
            Ok(None)
        }
    }
}

/// The symbols left in a node's subgraphs: their run counts and their
/// tensors' sizes, nested subgraphs included.
fn unbound_in_bodies(node: &Node) -> Vec<String> {
    let mut found = std::collections::BTreeSet::new();
    let mut add = |d: &Dim| {
        if let Dim::Sym(s) = d {
            found.extend(s.symbols());
        }
    };
    for b in &node.bodies {
        add(&b.repeats);
        let Ok(g) = &b.graph else { continue };
        g.for_each_node(&mut |n| {
            for t in n.inputs.iter().chain(n.outputs.iter()).flatten() {
                t.shape.iter().for_each(&mut add);
            }
            n.bodies.iter().for_each(|b| add(&b.repeats));
        });
    }
    found.into_iter().collect()
}

/// Names a node's subgraphs read from enclosing graphs (and their own, which
/// do no harm here).
fn captured_names(node: &Node, out: &mut Vec<String>) {
    for b in &node.bodies {
        let Ok(g) = &b.graph else { continue };
        g.for_each_node(&mut |n| {
            out.extend(
                n.inputs
                    .iter()
                    .flatten()
                    .filter_map(|t| t.name.as_deref().map(str::to_string)),
            );
        });
    }
}

/// One subgraph's layers, all its runs included.
struct BodyCost<'a> {
    attr: &'a str,
    alternative: bool,
    runs: u64,
    layers: Vec<LayerCost>,
    groups: Vec<FusedGroup>,
    totals: Totals,
}

/// Costs a node's subgraphs: each body's layers times its trip count; of
/// alternative branches, the one `opts.branch` picks, the others reported
/// in `acc.skipped`. Adds what it decided to the node's attrs.
fn cost_bodies(
    node: &Node,
    layer: &mut LayerCost,
    rules: &RuleSet,
    opts: CountOptions,
    acc: &mut Collected,
) -> Result<(Vec<LayerCost>, Vec<FusedGroup>)> {
    let layer_error = |message: String| Error::Layer {
        layer: node.name.clone(),
        op: node.op.clone(),
        message,
    };
    let mut bodies = Vec::new();
    for b in &node.bodies {
        let g = match &b.graph {
            Ok(g) => g,
            Err(reason) => {
                acc.skipped.push(SkippedBranch {
                    node: node.name.clone(),
                    branch: b.attr.clone(),
                    reason: reason.clone(),
                    totals: Totals::default(),
                    layers: Vec::new(),
                });
                continue;
            }
        };
        // Symbolic counts were ruled out by `unbound_in_bodies`.
        let runs = b.repeats.known().unwrap_or(0);
        let (layers, groups) = match trip_by_trip(b, rules, opts, acc)? {
            Some(summed) => summed,
            None => {
                let (mut layers, mut groups) = cost_graph(g, rules, opts, acc)?;
                for l in &mut layers {
                    repeat(l, runs).ok_or_else(|| {
                        layer_error(format!(
                            "layer {} run {runs} times overflows 64 bits",
                            l.name
                        ))
                    })?;
                }
                for g in &mut groups {
                    g.saved_bytes = g.saved_bytes.saturating_mul(runs);
                }
                (layers, groups)
            }
        };
        let totals = totals_of(&layers)?;
        bodies.push(BodyCost {
            attr: &b.attr,
            alternative: b.alternative,
            runs,
            layers,
            groups,
            totals,
        });
    }
    let chosen = pick(&bodies, opts.branch);
    let counted = chosen.map_or("", |i| bodies[i].attr);
    let mut layers = Vec::new();
    let mut groups = Vec::new();
    for (i, b) in bodies.into_iter().enumerate() {
        if b.alternative && Some(i) != chosen {
            acc.skipped.push(SkippedBranch {
                node: node.name.clone(),
                branch: b.attr.to_string(),
                reason: format!(
                    "{counted} is counted instead (--if-branch {})",
                    opts.branch.name()
                ),
                totals: b.totals,
                layers: b.layers,
            });
            continue;
        }
        let param = if b.alternative {
            ("branch".to_string(), Value::String(b.attr.to_string()))
        } else {
            (
                format!("{}_runs", b.attr),
                Value::Int(i64::try_from(b.runs).unwrap_or(i64::MAX)),
            )
        };
        layer.attrs = layer.attrs.iter().cloned().chain([param]).collect();
        let offset = layers.len();
        groups.extend(b.groups.into_iter().map(|mut g| {
            g.members.iter_mut().for_each(|m| *m += offset);
            g
        }));
        layers.extend(b.layers);
    }
    Ok((layers, groups))
}

/// Of the alternative bodies (If's branches), the index of the one to count.
fn pick(bodies: &[BodyCost], choice: BranchChoice) -> Option<usize> {
    let alternatives = bodies.iter().enumerate().filter(|(_, b)| b.alternative);
    // Work first (float and integer), bytes to break ties.
    let work = |b: &BodyCost| (b.totals.flops.saturating_add(b.totals.iops), b.totals.mrw);
    let named = |attr: &str| bodies.iter().position(|b| b.alternative && b.attr == attr);
    match choice {
        BranchChoice::Larger => alternatives.max_by_key(|(_, b)| work(b)).map(|(i, _)| i),
        BranchChoice::Smaller => alternatives.min_by_key(|(_, b)| work(b)).map(|(i, _)| i),
        // The named branch when it was inferred, else the one that was.
        BranchChoice::Then => named("then_branch").or_else(|| named("else_branch")),
        BranchChoice::Else => named("else_branch").or_else(|| named("then_branch")),
    }
}

/// Multiplies a layer's figures by how many times it runs.
/// A loop run trip by trip: each trip costed on its own sizes and the
/// trips summed layer by layer (a layer's `runs` is the number of trips).
/// `None` when the body was not run so, or when its trips do not have the
/// same layers (then the last trip stands for all, as for other loops).
fn trip_by_trip(
    b: &crate::ir::Body,
    rules: &RuleSet,
    opts: CountOptions,
    acc: &mut Collected,
) -> Result<Option<(Vec<LayerCost>, Vec<FusedGroup>)>> {
    let Some((first, rest)) = b.trips.split_first() else {
        return Ok(None);
    };
    // What a trip leaves uncounted is listed once, from the last trip.
    let mut scratch = Collected {
        unsupported: Vec::new(),
        skipped: Vec::new(),
    };
    let (mut layers, mut groups) = cost_graph(first, rules, opts, &mut scratch)?;
    for trip in rest {
        let (more, more_groups) = cost_graph(trip, rules, opts, &mut scratch)?;
        let same = more.len() == layers.len()
            && more.iter().zip(&layers).all(|(m, l)| m.name == l.name)
            && more_groups.len() == groups.len();
        if !same {
            return Ok(None);
        }
        for (l, m) in layers.iter_mut().zip(&more) {
            let sum = (|| {
                l.flops = l.flops.checked_add(m.flops)?;
                l.work = l.work.checked_add(m.work)?;
                l.iops = l.iops.checked_add(m.iops)?;
                l.mread = l.mread.checked_add(m.mread)?;
                l.mwrite = l.mwrite.checked_add(m.mwrite)?;
                l.runs = l.runs.checked_add(m.runs)?;
                // The most live bytes of any trip: each trip reuses the
                // memory of the one before.
                l.live_bytes = l.live_bytes.max(m.live_bytes);
                Some(())
            })();
            sum.ok_or_else(|| Error::Layer {
                layer: l.name.clone(),
                op: l.op.clone(),
                message: "the sum of its trips overflows 64 bits".into(),
            })?;
        }
        for (g, m) in groups.iter_mut().zip(&more_groups) {
            g.saved_bytes = g.saved_bytes.saturating_add(m.saved_bytes);
        }
    }
    let last = b.trips.last().unwrap_or(first);
    let mut last_acc = Collected {
        unsupported: Vec::new(),
        skipped: Vec::new(),
    };
    cost_graph(last, rules, opts, &mut last_acc)?;
    acc.unsupported.extend(last_acc.unsupported);
    acc.skipped.extend(last_acc.skipped);
    Ok(Some((layers, groups)))
}

fn repeat(l: &mut LayerCost, runs: u64) -> Option<()> {
    l.flops = l.flops.checked_mul(runs)?;
    l.work = l.work.checked_mul(runs)?;
    l.iops = l.iops.checked_mul(runs)?;
    l.mread = l.mread.checked_mul(runs)?;
    l.mwrite = l.mwrite.checked_mul(runs)?;
    l.runs = l.runs.checked_mul(runs)?;
    Some(())
}

/// The rule that costs `node`, or why none does: no rule for its op, or a
/// rule that declares the op unsupported.
fn rule_of<'r>(rules: &'r RuleSet, node: &Node) -> std::result::Result<&'r CostRule, &'r str> {
    let rule = rules.get(&node.domain, &node.op).ok_or(NO_RULE)?;
    match &rule.unsupported {
        Some(reason) => Err(reason),
        None => Ok(rule),
    }
}

/// A rule's failure on `node` as the error c3 reports: where the formula
/// was written, or what did not bind, with the layer.
fn eval_error(node: &Node, e: EvalError) -> Error {
    layer_error(&node.name, &node.op, e)
}

/// A rule's failure on the layer `layer` of op `op` (costing it, or timing
/// it with the rule's `time:` formula) as the error c3 reports.
pub(crate) fn layer_error(layer: &str, op: &str, e: EvalError) -> Error {
    match e {
        EvalError::Formula {
            origin,
            what,
            text,
            message,
        } => Error::Formula {
            origin: origin.to_string(),
            message: format!("{message} in {what} `{text}`"),
            layer: layer.to_string(),
            op: op.to_string(),
        },
        EvalError::Binding(message) => Error::Layer {
            layer: layer.to_string(),
            op: op.to_string(),
            message,
        },
    }
}

fn cost_of(node: &Node, rule: &CostRule, opts: CountOptions) -> Result<LayerCost> {
    let ev = rule.evaluate(node, opts).map_err(|e| eval_error(node, e))?;
    Ok(LayerCost {
        name: node.name.clone(),
        op: node.op.clone(),
        domain: node.domain.clone(),
        flops: ev.flops,
        work: ev.work,
        class: ev.class,
        category: opts
            .timing
            .then(|| std::sync::Arc::from(rule.category.as_str())),
        input_from: None,
        calls: ev.calls,
        mread: ev.mread,
        mwrite: ev.mwrite,
        iops: ev.iops,
        inputs: node.inputs.clone(),
        outputs: node.outputs.clone(),
        attrs: ev.params,
        params: 0,
        weight_bytes: 0,
        live_bytes: 0,
        fused: None,
        runs: 1,
        time: ev.time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph of 1,500 layers of three ops on 1 x i (i = 1..=1500),
    /// layer i a Relu when i is a multiple of 3.
    fn fifteen_hundred_layers() -> Graph {
        let layer = |i: usize| {
            format!(
                r#"{{"op": "{}", "inputs": [{{"shape": [1, {i}]}}], "outputs": [{{"shape": [1, {i}]}}]}}"#,
                ["Relu", "Sigmoid", "Neg"][i % 3]
            )
        };
        let layers: Vec<String> = (1..=1500).map(layer).collect();
        let trace = format!(r#"{{"layers": [{}]}}"#, layers.join(","));
        crate::trace::parse_trace(trace.as_bytes(), "inline").unwrap()
    }

    /// `graph`'s report as worked out on one thread.
    fn on_one_thread(graph: &Graph, rules: &RuleSet, opts: CountOptions) -> CostReport {
        let producers = weights::producers(graph);
        let mut folded = folded_costs(graph, rules, opts).unwrap();
        weights::tally_layers(&producers, &mut folded);
        let main = level_costs(graph, rules, opts).unwrap();
        let mut report = finish(graph, &producers, main, folded).unwrap();
        report.peak = memory::apply(graph, &[], &mut report.layers).unwrap();
        report
    }

    /// With more than a thousand folded layers, their costs are worked out
    /// on a second thread: the report must be the one worked out on one.
    #[test]
    fn folded_layers_costed_beside_the_main_level_give_the_same_report() {
        let mut graph = fifteen_hundred_layers();
        graph.folded_nodes = graph.nodes.iter().rev().cloned().collect();
        let rules = RuleSet::builtin().unwrap();
        let opts = CountOptions::default();
        let report = estimate(&graph, &rules, opts).unwrap();
        assert_eq!(report, on_one_thread(&graph, &rules, opts));
        // The folded list holds all 1,500 layers, last first: layer 1,500
        // is a Relu on 1 x 1500, one max per element.
        assert_eq!(report.folded.len(), 1500);
        assert_eq!(report.folded[0].name, report.layers[1499].name);
        assert_eq!(report.folded[0].flops, 1500);
    }

    /// More than a thousand main-level layers and none folded: the live
    /// bytes and what makes each tensor are worked out on a second thread,
    /// for the report worked out on one.
    #[test]
    fn a_large_flat_graph_costed_on_two_threads_gives_the_same_report() {
        let graph = fifteen_hundred_layers();
        assert!(graph.folded_nodes.is_empty());
        let rules = RuleSet::builtin().unwrap();
        let opts = CountOptions::default();
        let report = estimate(&graph, &rules, opts).unwrap();
        assert_eq!(report, on_one_thread(&graph, &rules, opts));
        // Layer 1,500 is a Relu on 1 x 1500: 1,500 flops. The layers do not
        // chain (each reads an input of its own), so at most one input and
        // its output are live at once: the peak is layer 1,500's, 2 x 1,500
        // float32 values, 12,000 bytes.
        assert_eq!(report.layers[1499].flops, 1500);
        assert_eq!(report.peak.bytes, 12_000);
    }

    /// Layers of the same evaluation (the same op, shapes and attributes)
    /// share the attributes the rule shows rather than copying them; a
    /// layer of another evaluation has its own.
    #[test]
    fn layers_of_one_evaluation_share_their_attributes() {
        let softmax = |axis: i64, d: u64| {
            format!(
                r#"{{"op": "Softmax", "attrs": {{"axis": {axis}}}, "inputs": [{{"shape": [2, {d}]}}], "outputs": [{{"shape": [2, {d}]}}]}}"#
            )
        };
        let trace = format!(
            r#"{{"layers": [{}, {}, {}]}}"#,
            softmax(1, 8),
            softmax(1, 8),
            softmax(0, 8)
        );
        let graph = crate::trace::parse_trace(trace.as_bytes(), "inline").unwrap();
        let rules = RuleSet::builtin().unwrap();
        let report = estimate(&graph, &rules, CountOptions::default()).unwrap();
        let [a, b, c] = &report.layers[..] else {
            panic!("three layers")
        };
        assert_eq!(a.attrs[..], [("axis".to_string(), Value::Int(1))]);
        assert!(std::sync::Arc::ptr_eq(&a.attrs, &b.attrs));
        assert_eq!(c.attrs[..], [("axis".to_string(), Value::Int(0))]);
        assert!(!std::sync::Arc::ptr_eq(&a.attrs, &c.attrs));
        // Softmax over axis 1 of 2 x 8: 2 * 16 + 16 / 8 * (8 - 1) = 46.
        assert_eq!(a.flops, 46);
    }
}
