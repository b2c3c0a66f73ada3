//! Walks a loaded model in topological order and infers every value's fact,
//! then hands the cost stage an [`ir::Graph`].

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

use super::proto::{
    AttributeProto, FunctionProto, GraphProto, NodeProto, TensorProto, TypeProto, attr_type,
};
use super::{MAX_GRAPH_DEPTH, OnnxModel, domain_key};
use graph::{Recorder, Records, attr_value};
pub use graph::{infer_graph, to_graph, to_graph_with};
pub use order::Taken;
use order::{NO_SLOT, NodeList, Nodes, View, node_label, order_of, producers, topo_order};

mod constants;
mod function;
pub use function::{EXPANDED_NODE_BYTES, EXPANSION_BASE_BYTES, EXPANSION_BYTES_PER_BYTE};
mod given;
pub(crate) mod graph;
mod order;
mod scope;
use crate::error::{Error, Result};
use crate::ir::{self, AttrValue, DType, Dim, TensorFact};
use crate::shape::ctx::{SubgraphInfer, Symbols, TensorDecoder};
use crate::shape::{Fact, InferCtx, ShapeError, ValueKind, registry};
use constants::{Loads, tensor_fact};
use scope::{Kept, Scope, Slots, Vars, take_listed};

/// Caller-supplied facts: symbol bindings and input shape overrides.
#[derive(Debug, Clone, Default)]
pub struct InferOptions {
    /// `--dim name=value`
    pub dims: BTreeMap<String, i64>,
    /// `--input name=shape`
    pub inputs: BTreeMap<String, Vec<u64>>,
    /// Leave [`Inferred::values`] empty (costing needs only the nodes).
    pub nodes_only: bool,
    /// Leave [`Inferred::nodes`] empty (listing shapes needs only the
    /// values).
    pub values_only: bool,
}

/// One node after inference.
#[derive(Debug, Clone)]
pub struct InferredNode {
    pub name: String,
    pub op: String,
    pub domain: String,
    pub opset: i64,
    pub attrs: ir::Attrs,
    /// (value name, fact); `None` for an absent optional input.
    pub inputs: Vec<Option<(String, Fact)>>,
    pub outputs: Vec<Option<(String, Fact)>>,
    /// Whether c3 has shape logic for the op.
    pub has_shape_fn: bool,
    /// The subgraphs inference ran (If branches, Loop and Scan bodies), in
    /// the node's attribute order.
    pub bodies: Vec<InferredBody>,
    /// How many times the bodies run per run of the node (Loop's trip
    /// count, Scan's sequence length); `None`: once.
    pub repeats: Option<Dim>,
}

/// One subgraph of a node, as inference last ran it: a loop body's last run
/// is the one that covers every iteration.
#[derive(Debug, Clone)]
pub struct InferredBody {
    /// The graph attribute: `then_branch`, `else_branch`, `body`.
    pub attr: String,
    /// The body's nodes, or why it could not be inferred (an If branch
    /// that cannot run on these shapes).
    pub nodes: std::result::Result<Vec<InferredNode>, String>,
    /// The body's output names.
    pub outputs: Vec<String>,
    /// The body's input names (what its node gives it each run).
    pub inputs: Vec<String>,
    /// A loop run trip by trip (one filling a sequence): each trip's nodes,
    /// in order, each with its own sizes; empty otherwise.
    pub trips: Vec<Vec<InferredNode>>,
}

/// The result of inference over the main graph.
#[derive(Default)]
pub struct Inferred {
    /// Every value of the main graph, in definition order.
    pub values: Vec<(String, Fact)>,
    pub nodes: Vec<InferredNode>,
    /// The main graph's output names.
    pub outputs: Vec<String>,
    /// Upper bounds of the data-dependent sizes inference made up.
    pub bounds: BTreeMap<String, ir::Bound>,
    /// The symbols in the graph inputs' shapes (`batch`, `x_dim0`).
    pub input_symbols: Vec<String>,
    /// Symbols inference made up under a name `--dim` bound, so took as
    /// that value (`iterations_1`, `nms_2`).
    pub bound_symbols: Vec<String>,
    /// Symbols inference made up and a later node settled, with their
    /// values (already given to [`Inferred::values`]; the graph made from
    /// the nodes settles them, [`ir::Graph::settle`]).
    pub learned: BTreeMap<String, i64>,
}

/// The op of the pass-through record that defines a function call's
/// outputs in the caller's scope; never costed.
const FUNCTION_OUTPUTS: &str = "__function_outputs__";

/// Node inferences per model, counting every run of a subgraph: loop bodies
/// run up to three times where carried shapes change, so nested loops could
/// otherwise take time exponential in their depth. The budget is this many
/// visits plus [`NODE_VISITS_PER_NODE`] per node of the expanded model.
pub const NODE_VISITS_BASE: u64 = 50_000;
/// Visits allowed per node of the expanded model, on top of [`NODE_VISITS_BASE`].
pub const NODE_VISITS_PER_NODE: u64 = 16;

type Functions<'m> = HashMap<(String, String), &'m FunctionProto>;

struct Walker<'m> {
    model: &'m OnnxModel,
    functions: Functions<'m>,
    opts: &'m InferOptions,
    symbols: Symbols,
    /// Nodes inferred so far, subgraph runs included (bounded by `max_visits`).
    visits: Cell<u64>,
    /// The visit budget: [`NODE_VISITS_BASE`] plus [`NODE_VISITS_PER_NODE`]
    /// per node of the expanded model.
    max_visits: u64,
    /// The first limit the model ran into (or the first constant whose data
    /// cannot be read). Kept here so that no caller (an If that falls back
    /// on its other branch) can swallow it.
    limit: RefCell<Option<String>>,
    /// The constants' folder, and their data that could not be read, as
    /// [`constants::LazyTensor`] reports it.
    loads: Arc<Loads>,
    /// The main graph's initializers, when the caller took them out of the
    /// model: the walk makes their facts, then frees them at once.
    initializers: RefCell<Option<Vec<crate::proto::TensorProto>>>,
}

/// What a node's record carries of the node's names ([`Walker::infer_node`]).
#[derive(Clone, Copy, PartialEq)]
enum Names {
    /// Copies of them all.
    Copied,
    /// Its values' names; the node's own, its op's and its attributes'
    /// are left to the caller to give ([`InferredNode::take_names`]).
    Given,
    /// Its outputs' names alone: nothing keeps the record (a listing's
    /// walk reads its outputs, then drops it).
    Outputs,
}

impl<'m> Walker<'m> {
    /// Counts `n` more node visits; an error past the budget.
    fn charge(&self, n: u64) -> std::result::Result<(), String> {
        let visits = self.visits.get().saturating_add(n);
        self.visits.set(visits);
        if visits > self.max_visits {
            return Err(self.over_limit(format!(
                "inference exceeds the limit of {} node visits ({NODE_VISITS_BASE} + {NODE_VISITS_PER_NODE} per node): nested loops re-infer their bodies too often",
                self.max_visits
            )));
        }
        Ok(())
    }

    /// Records that a limit was hit; returns the message.
    fn over_limit(&self, message: String) -> String {
        self.limit
            .borrow_mut()
            .get_or_insert_with(|| message.clone());
        message
    }

    fn declared(&self, t: Option<&TypeProto>, top: bool, name: &str) -> Fact {
        let Some(t) = t else { return Fact::unknown() };
        let (kind, tt) = if let Some(tt) = &t.tensor_type {
            (ValueKind::Tensor, Some(tt))
        } else if let Some(s) = &t.sequence_type {
            (
                ValueKind::Sequence,
                s.elem_type.as_ref().and_then(|e| e.tensor_type.as_ref()),
            )
        } else if let Some(o) = &t.optional_type {
            (
                ValueKind::Optional,
                o.elem_type.as_ref().and_then(|e| e.tensor_type.as_ref()),
            )
        } else if let Some(m) = &t.map_type {
            // A map is described by its value type (DictVectorizer's output has it).
            (
                ValueKind::Map,
                m.value_type.as_ref().and_then(|v| v.tensor_type.as_ref()),
            )
        } else if let Some(st) = &t.sparse_tensor_type {
            (ValueKind::Tensor, Some(st))
        } else {
            (ValueKind::Tensor, None)
        };
        let dtype = tt
            .and_then(|tt| tt.elem_type)
            .and_then(DType::from_onnx_code);
        let shape = tt.and_then(|tt| tt.shape.as_ref()).map(|s| {
            s.dim
                .iter()
                .enumerate()
                .map(|(i, d)| match (d.dim_value, d.dim_param.as_deref()) {
                    (Some(v), _) if v >= 0 => Dim::Known(v as u64),
                    // "?" is how some exporters write "no name".
                    // Bound names take their values everywhere: a declared
                    // output shape used as a fallback too.
                    (None, Some(p)) if !p.is_empty() && p != "?" => match self.opts.dims.get(p) {
                        Some(&v) => Dim::Known(v as u64),
                        _ => Dim::symbol(p),
                    },
                    // A graph input's unnamed (or -1) dimension gets a name
                    // the user can bind: `x_dim0`.
                    _ if top => {
                        let p = format!("{name}_dim{i}");
                        match self.opts.dims.get(&p) {
                            Some(&v) => Dim::Known(v as u64),
                            None => Dim::symbol(p),
                        }
                    }
                    _ => self.symbols.fresh("unk"),
                })
                .collect::<Vec<_>>()
        });
        let shape = match (top, self.opts.inputs.get(name)) {
            (true, Some(dims)) => Some(dims.iter().map(|&d| Dim::Known(d)).collect()),
            _ => shape,
        };
        Fact {
            kind,
            ..Fact::tensor(dtype, shape)
        }
    }

    /// Infers a graph's nodes into `scope`; records nodes when `record` is set.
    /// `taken` holds the graph's nodes when the caller took them out of `g`:
    /// each is then dropped once inferred, so a large model's records do
    /// not outlive their use.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        g: &GraphProto,
        taken: Option<Nodes>,
        scope: &mut Scope,
        depth: usize,
        opsets: &BTreeMap<String, i64>,
        mut record: Option<&mut dyn Records>,
        values: Option<&mut Vec<(String, Fact)>>,
    ) -> std::result::Result<(), String> {
        if depth > MAX_GRAPH_DEPTH {
            return Err(self.over_limit(format!(
                "subgraphs nest deeper than the limit of {MAX_GRAPH_DEPTH} levels"
            )));
        }
        let nodes = taken.as_ref().map_or(View::Protos(&g.node), Nodes::view);
        // The main graph's initializers, when taken out of the model, are
        // freed once their facts are made (a convnet's 100k records are 33
        // MB, which the rest of the walk then reuses).
        let owned = match depth {
            0 => self.initializers.borrow_mut().take(),
            _ => None,
        };
        let init_list: &[crate::proto::TensorProto] = owned.as_deref().unwrap_or(&g.initializer);
        scope.vars.reserve(init_list.len());
        if let Some(r) = record.as_deref_mut() {
            r.reserve(nodes.count());
        }
        // Value names in definition order, only when the caller lists values.
        let listing = values.is_some();
        // Each with where the scope keeps its fact; room for the
        // initializers and a value a node, made once (most nodes make one).
        let mut order_names: Vec<(String, Kept)> = match listing {
            true => Vec::with_capacity(init_list.len() + nodes.count()),
            false => Vec::new(),
        };
        let initializers = |scope: &mut Scope, order_names: &mut Vec<(String, Kept)>| {
            for t in init_list {
                let name = t.name.clone().unwrap_or_default();
                let f = tensor_fact(t, &self.loads)
                    .map_err(|m| format!("initializer '{name}': {m}"))?;
                match listing {
                    true => {
                        let at = scope.vars.set(name.clone(), f).0;
                        order_names.push((name, Kept::Var(at)));
                    }
                    false => drop(scope.vars.insert(name, f)),
                }
            }
            Ok::<(), String>(())
        };
        // A large graph's producers are listed on a second thread while
        // its initializers' facts are made (5 and 4.5 ms on a 111k-node
        // graph, one after the other before).
        let (inits, made) = if crate::threads::second_thread(nodes.count()) {
            // The names the scope will hold once the initializers are in
            // it, for the producers' thread to look up (100k on a convnet
            // of 100k weights): those it has now (the graph's inputs),
            // copied, as this thread adds to it meanwhile.
            let before: Vec<String> = scope.vars.names().map(str::to_owned).collect();
            crate::threads::both(
                || initializers(scope, &mut order_names),
                || {
                    let mut made = producers(&nodes);
                    let names = init_list.iter().map(|t| t.name.as_deref().unwrap_or(""));
                    made.shadowing(before.iter().map(String::as_str).chain(names));
                    made
                },
            )
        } else {
            (initializers(scope, &mut order_names), producers(&nodes))
        };
        drop(owned);
        inits?;
        let declared: HashMap<&str, &TypeProto> = g
            .value_info
            .iter()
            .chain(&g.output)
            .filter_map(|v| Some((v.name.as_deref()?, v.r#type.as_ref()?)))
            .collect();
        let (order, readers) = order_of(&nodes, made, scope, depth, &self.visits)?;
        // Estimating (nodes taken, no value listed): each node output's fact
        // is let go after its last reader, so the scope does not hold every
        // shape and constant of the graph at its end; the outputs' facts
        // are then kept by slot ([`Slots`]).
        let counted = taken.is_some() && !listing;
        self.charge(0)?;
        // Listing the values of a main graph taken from the model (`c3
        // shapes`), its nodes' outputs are kept by slot too, to the end;
        // with model-local functions they go by name, as a call's inner
        // values do (one place for a name however it is defined).
        let recorded = record.is_some();
        let kept_to_end = taken.is_some() && listing && !recorded && self.functions.is_empty();
        let mut slots = Slots::new(readers, counted || kept_to_end, kept_to_end, scope);
        std::thread::scope(|threads| {
            let mut queue = taken.map(|t| t.queue(&order, threads));
            let mut records = Recorder::new(record, order.len(), threads);
            let mut slot_list = Vec::new();
            for &i in &order {
                let mut owned = match &mut queue {
                    Some(taken) => Some(taken.next(i)?),
                    None => None,
                };
                let n = owned.as_ref().unwrap_or_else(|| &g.node[i]);
                let facts = slots
                    .inputs(i, n, scope)
                    .map_err(|m| format!("{}: {m}", node_label(n)))?;
                // A node taken from the model gives its record its names
                // (its own, its op's, its attributes'), not copies of them;
                // a record nothing keeps (a listing's) takes none but its
                // outputs'.
                let names = match (owned.is_some(), recorded) {
                    (false, _) => Names::Copied,
                    (true, true) => Names::Given,
                    (true, false) => Names::Outputs,
                };
                let (mut rec, own) = self
                    .infer_node(n, facts, scope, depth, opsets, &declared, "", names)
                    .map_err(|m| format!("{}: {m}", node_label(n)))?;
                // A record nothing keeps gives its outputs' facts and names
                // up rather than copies of them.
                let give_up = names == Names::Outputs;
                for r in &mut rec {
                    for (k, o) in r.outputs.iter_mut().enumerate() {
                        let Some((name, f)) = o else { continue };
                        let f = match give_up {
                            true => std::mem::replace(f, Fact::unknown()),
                            false => f.clone(),
                        };
                        let at = slots.define(i, n, k, name, f, scope);
                        if listing {
                            let name = match give_up {
                                true => std::mem::take(name),
                                false => name.clone(),
                            };
                            order_names.push((name, at));
                        }
                    }
                }
                if let (Some(n), [r]) = (&mut owned, &mut rec[..])
                    && names == Names::Given
                    && own
                {
                    r.take_names(n);
                }
                let n = owned.as_ref().unwrap_or_else(|| &g.node[i]);
                // The node's own record goes with its values' slots.
                let given = (own && slots.list(i, n, &mut slot_list)).then_some(&slot_list[..]);
                // An expansion's values are named inside it (the call's
                // prefix) and read by nothing after it: let go once it is
                // recorded, the level holds one call's at a time.
                let inner: Vec<String> = match own {
                    true => Vec::new(),
                    false => rec
                        .iter()
                        .filter(|r| r.op != FUNCTION_OUTPUTS)
                        .flat_map(|r| r.outputs.iter().flatten().map(|(name, _)| name.clone()))
                        .collect(),
                };
                for r in rec {
                    records.record(r, given);
                }
                for name in &inner {
                    records.let_go(name, NO_SLOT);
                }
                if counted {
                    slots.count_down(i, n, depth, scope, |name, slot| records.let_go(name, slot));
                }
                if let (Some(q), Some(n)) = (&mut queue, owned) {
                    q.done(n);
                }
            }
            Ok::<(), String>(())
        })?;
        if let Some(values) = values {
            values.extend(take_listed(&mut scope.vars, &mut slots, order_names));
        }
        Ok(())
    }

    /// Infers one node; a call of a model-local function expands into the
    /// function's nodes, each returned as its own record. True with the
    /// node's own record, false with an expansion's.
    #[allow(clippy::too_many_arguments)]
    fn infer_node(
        &self,
        n: &NodeProto,
        facts: Option<Vec<Option<Fact>>>,
        scope: &Scope,
        depth: usize,
        opsets: &BTreeMap<String, i64>,
        declared: &HashMap<&str, &TypeProto>,
        prefix: &str,
        names: Names,
    ) -> std::result::Result<(Vec<InferredNode>, bool), String> {
        self.charge(1)?;
        let give = names != Names::Copied;
        let op = n.op_type.as_deref().unwrap_or("");
        let domain = domain_key(n.domain.as_deref().unwrap_or("")).to_string();
        let opset = crate::ir::imported_opset(opsets, &domain).unwrap_or(1);
        // One copy of each input's fact (the caller's, when it has them):
        // it goes to the shape function and comes back for the node's record.
        let facts: Vec<Option<Fact>> = facts.unwrap_or_else(|| {
            n.input
                .iter()
                .map(|name| {
                    (!name.is_empty())
                        .then(|| scope.get(name).cloned().unwrap_or_else(Fact::unknown))
                })
                .collect()
        });
        let pair = |facts: Vec<Option<Fact>>, named: bool| -> Vec<Option<(String, Fact)>> {
            n.input
                .iter()
                .zip(facts)
                .map(|(name, f)| {
                    f.map(|f| match named {
                        true => (name.clone(), f),
                        false => (String::new(), f),
                    })
                })
                .collect()
        };
        let infer = registry(&domain, op);
        if infer.is_none()
            && let Some(f) = self.functions.get(&(domain.clone(), op.to_owned()))
        {
            return Ok((
                self.expand(n, f, &pair(facts, true), scope, depth, prefix)?,
                false,
            ));
        }
        let mut outputs: Vec<Fact>;
        let facts_back: Vec<Option<Fact>>;
        let mut bodies = Vec::new();
        let mut repeats = None;
        if let Some(infer) = infer {
            let sub = SubWalker {
                walker: self,
                scope,
                depth,
                opsets,
                runs: RefCell::new(Vec::new()),
                trips: RefCell::new(Vec::new()),
            };
            let mut ctx = InferCtx::new(
                op,
                &domain,
                opset,
                &n.attribute,
                facts,
                n.output.len(),
                &sub,
                &sub,
                &self.symbols,
            );
            let inferred = infer(&mut ctx).map_err(|e| e.0);
            let unreadable = self.loads.take_unreadable();
            if let Some(m) = unreadable {
                // The walk adds the node's label to what is returned.
                self.over_limit(format!("{}: {m}", node_label(n)));
                return Err(m);
            }
            // A wrong attribute type (or a value past the dimension limits)
            // outranks what the shape function made of it; recorded so that
            // no If falling back can swallow it.
            if let Some(m) = ctx.node_error() {
                self.over_limit(format!("{}: {m}", node_label(n)));
                return Err(m);
            }
            inferred?;
            let (back, out, times) = ctx.into_parts();
            facts_back = back;
            outputs = out;
            repeats = times;
            bodies = sub.bodies(n);
        } else {
            facts_back = facts;
            outputs = vec![Fact::unknown(); n.output.len()];
        }
        let inputs = pair(facts_back, names != Names::Outputs);
        // Where inference knows less than the model declares, take the declaration.
        for (o, name) in outputs.iter_mut().zip(&n.output) {
            if let Some(t) = declared.get(name.as_str()) {
                o.refine(self.declared(Some(t), false, name));
            }
        }
        // Names the caller gives (`give`) are left empty here.
        let name = match n.name.as_deref() {
            _ if give => String::new(),
            Some(s) if !s.is_empty() && prefix.is_empty() => s.to_owned(),
            Some(s) if !s.is_empty() => [prefix, s].concat(),
            _ => String::new(),
        };
        Ok((
            vec![InferredNode {
                name,
                op: if give { String::new() } else { op.to_owned() },
                domain,
                opset,
                attrs: match give {
                    true => ir::Attrs::default(),
                    false => n
                        .attribute
                        .iter()
                        .filter_map(|a| Some((a.name.clone()?, attr_value(a)?)))
                        .collect(),
                },
                inputs,
                outputs: n
                    .output
                    .iter()
                    .zip(outputs)
                    .map(|(name, f)| (!name.is_empty()).then(|| (name.clone(), f)))
                    .collect(),
                has_shape_fn: infer.is_some(),
                bodies,
                repeats,
            }],
            true,
        ))
    }
}

struct SubWalker<'a, 'm> {
    walker: &'a Walker<'m>,
    scope: &'a Scope<'a>,
    depth: usize,
    /// Opset versions where the node stands (a function imports its own).
    opsets: &'a BTreeMap<String, i64>,
    /// Each subgraph's last run: its nodes, or why it failed.
    runs: RefCell<Vec<BodyRun>>,
    /// Loops run trip by trip: each trip's nodes, per body; `true` once
    /// the trips are over and kept.
    trips: RefCell<Vec<BodyTrips>>,
}

type BodyTrips = (*const GraphProto, bool, Vec<Vec<InferredNode>>);

type BodyRun = (
    *const GraphProto,
    std::result::Result<Vec<InferredNode>, String>,
);

impl SubWalker<'_, '_> {
    /// The recorded runs, named by the attributes of `n` that hold them.
    fn bodies(self, n: &NodeProto) -> Vec<InferredBody> {
        let mut runs = self.runs.into_inner();
        let mut out = Vec::new();
        for a in &n.attribute {
            let Some(g) = a.g.as_deref() else { continue };
            let Some(i) = runs.iter().position(|(p, _)| std::ptr::eq(*p, g)) else {
                continue;
            };
            let (_, nodes) = runs.swap_remove(i);
            let trips = self
                .trips
                .borrow_mut()
                .iter_mut()
                .find(|(p, kept, _)| *kept && std::ptr::eq(*p, g))
                .map(|(_, _, t)| std::mem::take(t))
                .unwrap_or_default();
            out.push(InferredBody {
                attr: a.name.clone().unwrap_or_default(),
                nodes,
                trips,
                outputs: g.output.iter().filter_map(|o| o.name.clone()).collect(),
                inputs: g.input.iter().filter_map(|i| i.name.clone()).collect(),
            });
        }
        out
    }
}

impl SubgraphInfer for SubWalker<'_, '_> {
    fn start_trips(&self, g: &GraphProto) {
        let mut trips = self.trips.borrow_mut();
        trips.retain(|(p, _, _)| !std::ptr::eq(*p, g));
        trips.push((g, false, Vec::new()));
    }

    fn end_trips(&self, g: &GraphProto, keep: bool) {
        let mut trips = self.trips.borrow_mut();
        trips.retain(|(p, kept, _)| !(std::ptr::eq(*p, g) && (*kept || !keep)));
        if let Some(t) = trips.iter_mut().find(|(p, _, _)| std::ptr::eq(*p, g)) {
            t.1 = true;
        }
    }

    fn infer(&self, g: &GraphProto, inputs: &[Fact]) -> std::result::Result<Vec<Fact>, ShapeError> {
        let mut scope = Scope {
            vars: Vars::default(),
            parent: Some(self.scope),
        };
        for (i, v) in g.input.iter().enumerate() {
            let name = v.name.clone().unwrap_or_default();
            let declared = self.walker.declared(v.r#type.as_ref(), false, &name);
            let mut fact = inputs.get(i).cloned().unwrap_or_else(Fact::unknown);
            fact.refine(declared);
            scope.vars.insert(name, fact);
        }
        let mut nodes = Vec::new();
        let walked = self.walker.walk(
            g,
            None,
            &mut scope,
            self.depth + 1,
            self.opsets,
            Some(&mut nodes),
            None,
        );
        // The last run of a graph is the one its node keeps for costing.
        let mut runs = self.runs.borrow_mut();
        runs.retain(|(p, _)| !std::ptr::eq(*p, g));
        match walked {
            Ok(()) => {
                nodes.retain(|n| n.op != FUNCTION_OUTPUTS);
                if let Some((_, _, trips)) = self
                    .trips
                    .borrow_mut()
                    .iter_mut()
                    .find(|(p, kept, _)| !*kept && std::ptr::eq(*p, g))
                {
                    trips.push(nodes.clone());
                }
                runs.push((g, Ok(nodes)));
            }
            Err(m) => {
                runs.push((g, Err(m.clone())));
                return Err(ShapeError(m));
            }
        }
        drop(runs);
        Ok(g.output
            .iter()
            .map(|o| {
                let name = o.name.as_deref().unwrap_or("");
                let declared = self.walker.declared(o.r#type.as_ref(), false, name);
                match scope.get(name) {
                    Some(f) => {
                        let mut f = f.clone();
                        f.refine(declared);
                        f
                    }
                    None => declared,
                }
            })
            .collect())
    }
}

impl TensorDecoder for SubWalker<'_, '_> {
    fn fact_of(&self, t: &TensorProto) -> std::result::Result<Fact, ShapeError> {
        tensor_fact(t, &self.walker.loads).map_err(ShapeError)
    }
}

/// Infers every value of the model's main graph.
pub fn infer(model: &OnnxModel, opts: &InferOptions) -> Result<Inferred> {
    infer_nodes(model, None, opts, None, None)
}

/// [`infer`] over the main graph's nodes taken out of `model` (its graph
/// then holds none), decoded or still encoded: each is dropped once
/// inferred, which keeps a large model's peak memory to one copy of its
/// nodes, decoded or inferred.
pub fn infer_taken(model: &OnnxModel, taken: Taken, opts: &InferOptions) -> Result<Inferred> {
    infer_nodes(model, Some(taken), opts, None, None)
}

/// [`infer`]; with `level`, the main graph's nodes go there as they are
/// inferred instead of into [`Inferred::nodes`].
fn infer_nodes(
    model: &OnnxModel,
    taken: Option<Taken>,
    opts: &InferOptions,
    level: Option<&mut graph::Level>,
    initializers: Option<Vec<crate::proto::TensorProto>>,
) -> Result<Inferred> {
    let bad = |m: String| Error::Input {
        path: model.path.clone(),
        message: m,
    };
    let g = model
        .model
        .graph
        .as_ref()
        .expect("loader checked the graph");
    let functions: Functions = model
        .model
        .functions
        .iter()
        .map(|f| {
            (
                (
                    domain_key(f.domain.as_deref().unwrap_or("")).to_string(),
                    f.name.clone().unwrap_or_default(),
                ),
                f,
            )
        })
        .collect();
    let taken = taken.map(Nodes::of).transpose().map_err(bad)?;
    let nodes = taken.as_ref().map_or(View::Protos(&g.node), Nodes::view);
    let expansion = function::expansion(&nodes, &functions).map_err(bad)?;
    let expanded = expansion.nodes;
    if expanded > super::MAX_NODES as u64 {
        return Err(bad(format!(
            "functions expand the model to {expanded} nodes, which exceeds the limit of {} nodes",
            super::MAX_NODES
        )));
    }
    if !functions.is_empty() {
        let made = expanded
            .saturating_mul(EXPANDED_NODE_BYTES)
            .saturating_add(expansion.name_bytes);
        let file = model.bytes.len() as u64;
        let budget =
            EXPANSION_BASE_BYTES.saturating_add(file.saturating_mul(EXPANSION_BYTES_PER_BYTE));
        if made > budget {
            return Err(bad(format!(
                "functions expand the model to {expanded} nodes and {} bytes of names, about {} MB, more than the limit of {} MB for this file ({EXPANSION_BASE_BYTES} bytes + {EXPANSION_BYTES_PER_BYTE} per byte of the file, a node counting {EXPANDED_NODE_BYTES}: EXPANSION_BASE_BYTES, EXPANSION_BYTES_PER_BYTE)",
                expansion.name_bytes,
                made >> 20,
                budget >> 20
            )));
        }
    }
    // An input's given shape binds the names its declared shape has there,
    // for every other use of them (`--input x=2x256` on `[batch, 256]` is
    // `--dim batch=2` too).
    let bound;
    let opts = match opts.inputs.is_empty() {
        true => opts,
        false => {
            let dims = given::bindings(g, &opts.dims, &opts.inputs).map_err(Error::Usage)?;
            bound = InferOptions {
                dims,
                ..opts.clone()
            };
            &bound
        }
    };
    let walker = Walker {
        model,
        functions,
        opts,
        symbols: Symbols::with_bindings(opts.dims.clone()),
        visits: Cell::new(0),
        max_visits: NODE_VISITS_BASE.saturating_add(NODE_VISITS_PER_NODE.saturating_mul(expanded)),
        limit: RefCell::new(None),
        loads: Arc::new(Loads::new(model.dir.clone())),
        initializers: RefCell::new(None),
    };
    let init_list = initializers.as_deref().unwrap_or(&g.initializer);
    // The graph inputs that are initializers (IR < 4 lists the initializers
    // among the inputs too), found from the inputs' names: a model of 100k
    // weights and one input filed every weight's name to ask of one.
    let input_names: HashSet<&str> = g.input.iter().filter_map(|v| v.name.as_deref()).collect();
    let listed: HashSet<&str> = init_list
        .iter()
        .filter_map(|t| t.name.as_deref())
        .filter(|n| input_names.contains(n))
        .collect();
    // The inputs a run feeds: IR < 4 lists the initializers among them too.
    let fed: Vec<&str> = g
        .input
        .iter()
        .filter_map(|v| v.name.as_deref())
        .filter(|n| !listed.contains(n))
        .collect();
    for name in opts.inputs.keys() {
        if !fed.contains(&name.as_str()) {
            return Err(Error::Usage(format!(
                "--input {name}: the model has no input of that name (inputs: {})",
                fed.join(", ")
            )));
        }
    }
    let mut scope = Scope {
        vars: Vars::default(),
        parent: None,
    };
    let mut values = Vec::new();
    let mut input_symbols = std::collections::BTreeSet::new();
    for v in &g.input {
        let name = v.name.clone().unwrap_or_default();
        if listed.contains(name.as_str()) {
            continue; // an initializer listed as input (IR < 4) is a constant
        }
        let f = walker.declared(v.r#type.as_ref(), true, &name);
        for d in f.shape.iter().flatten() {
            if let Dim::Sym(s) = d {
                input_symbols.extend(s.symbols());
            }
        }
        if scope.vars.insert(name.clone(), f.clone()).is_some() {
            return Err(bad(format!("graph input '{name}' is declared twice")));
        }
        values.push((name, f));
    }
    // Given to the walk once the inputs no longer read their names.
    drop(listed);
    *walker.initializers.borrow_mut() = initializers;
    let mut nodes = Vec::new();
    let records: Option<&mut dyn Records> = match level {
        Some(level) => Some(level),
        None => (!opts.values_only).then_some(&mut nodes),
    };
    walker
        .walk(
            g,
            taken,
            &mut scope,
            0,
            &model.opsets,
            records,
            (!opts.nodes_only).then_some(&mut values),
        )
        .map_err(bad)?;
    if let Some(m) = walker.limit.take() {
        return Err(bad(m));
    }
    nodes.retain(|n| n.op != FUNCTION_OUTPUTS);
    let outputs = g.output.iter().filter_map(|o| o.name.clone()).collect();
    let bound_symbols = walker.symbols.used_bindings();
    let learned = walker.symbols.take_learned();
    if !learned.is_empty() {
        for (_, f) in &mut values {
            for d in f.shape.iter_mut().flatten() {
                *d = d.bind(&learned);
            }
        }
    }
    Ok(Inferred {
        values,
        nodes,
        outputs,
        bound_symbols,
        learned,
        bounds: walker.symbols.into_bounds(),
        input_symbols: input_symbols.into_iter().collect(),
    })
}

/// Small in-memory models for unit tests (here and in the shape families).
#[cfg(test)]
pub(crate) mod test_model {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use bytes::Bytes;

    use crate::onnx::OnnxModel;
    use crate::onnx::build;
    use crate::proto::{AttributeProto, GraphProto, NodeProto};
    use crate::shape::Fact;

    pub use crate::onnx::build::{
        graph, graph_attr, int, int64s, ints, seq_type, tensor_type, untyped, value, zeros,
    };

    /// A node with attributes (the shared builder's [`build::node_with`]).
    pub fn node(
        op: &str,
        inputs: &[&str],
        outputs: &[&str],
        attrs: Vec<AttributeProto>,
    ) -> NodeProto {
        build::node_with(op, inputs, outputs, attrs)
    }

    /// A model of `g` at ai.onnx `opset`, never written to disk nor checked
    /// by the loader (inference meets it as it is).
    pub fn model(g: GraphProto, opset: i64) -> OnnxModel {
        OnnxModel {
            path: "test.onnx".into(),
            dir: PathBuf::from("."),
            model: build::model(g, opset),
            opsets: BTreeMap::from([(String::new(), opset)]),
            bytes: Bytes::new(),
            file: None,
        }
    }

    /// Infers `m` and returns the fact of value `name`.
    pub fn fact(m: &OnnxModel, name: &str) -> Result<Fact, String> {
        let inferred =
            super::infer(m, &super::InferOptions::default()).map_err(|e| e.to_string())?;
        inferred
            .values
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f)
            .ok_or_else(|| format!("{name} was not inferred"))
    }

    /// The fact of value `name`, printed.
    pub fn fact_of(m: &OnnxModel, name: &str) -> Result<String, String> {
        fact(m, name).map(|f| f.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::test_model::*;
    use crate::onnx::MAX_GRAPH_DEPTH;
    use crate::proto::{FunctionProto, GraphProto, OperatorSetIdProto};

    const FLOAT: i32 = 1;
    const BOOL: i32 = 9;

    /// `depth` Ifs, each in the then-branch of the one before; the innermost
    /// branch returns the outer-scope `x`.
    fn nested_ifs(depth: usize) -> GraphProto {
        let mut body = graph(
            vec![],
            vec![node("Identity", &["x"], &["y0"], vec![])],
            vec![untyped("y0")],
        );
        for level in 1..=depth {
            let out = format!("y{level}");
            let other = graph(
                vec![],
                vec![node("Identity", &["x"], &["e"], vec![])],
                vec![untyped("e")],
            );
            body = graph(
                vec![],
                vec![node(
                    "If",
                    &["cond"],
                    &[out.as_str()],
                    vec![
                        graph_attr("then_branch", body),
                        graph_attr("else_branch", other),
                    ],
                )],
                vec![untyped(&out)],
            );
        }
        let mut main = body;
        main.input = vec![
            value("x", tensor_type(FLOAT, &["batch", "3"])),
            value("cond", tensor_type(BOOL, &[])),
        ];
        main
    }

    #[test]
    fn nesting_at_the_limit_is_inferred() {
        // The main graph is level 0; its If's branches are level 1, and so on.
        let m = model(nested_ifs(MAX_GRAPH_DEPTH), 16);
        let out = format!("y{MAX_GRAPH_DEPTH}");
        assert_eq!(fact_of(&m, &out).unwrap(), "float32[batch, 3]");
    }

    #[test]
    fn nesting_beyond_the_limit_is_an_error_not_a_stack_overflow() {
        let m = model(nested_ifs(MAX_GRAPH_DEPTH + 1), 16);
        let e = fact_of(&m, "y1").unwrap_err();
        assert!(e.contains("nest deeper than"), "{e}");
        // Far beyond: still an error, found before any deep recursion.
        let m = model(nested_ifs(10 * MAX_GRAPH_DEPTH), 16);
        let e = fact_of(&m, "y1").unwrap_err();
        assert!(e.contains("nest deeper than"), "{e}");
        // Loops likewise.
        let m = model(nested_loops(MAX_GRAPH_DEPTH + 1), 16);
        let e = fact_of(&m, "y").unwrap_err();
        assert!(e.contains("nest deeper than"), "{e}");
    }

    /// `depth` Loops, each in the body of the one before, each carrying a
    /// value whose shape changes every iteration (a second body pass each).
    fn nested_loops(depth: usize) -> GraphProto {
        let mut body = graph(
            vec![
                value("i", tensor_type(7, &[])),
                value("c", tensor_type(BOOL, &[])),
                untyped("v"),
            ],
            vec![
                node("Identity", &["c"], &["c_out"], vec![]),
                node("Concat", &["v", "v"], &["v_out"], vec![int("axis", 0)]),
            ],
            vec![untyped("c_out"), untyped("v_out")],
        );
        for _ in 0..depth {
            body = graph(
                vec![
                    value("i", tensor_type(7, &[])),
                    value("c", tensor_type(BOOL, &[])),
                    untyped("v"),
                ],
                vec![
                    node("Identity", &["c"], &["c_out"], vec![]),
                    node(
                        "Loop",
                        &["", "c", "v"],
                        &["v_out"],
                        vec![graph_attr("body", body)],
                    ),
                ],
                vec![untyped("c_out"), untyped("v_out")],
            );
        }
        graph(
            vec![
                value("x", tensor_type(FLOAT, &["4"])),
                value("cond", tensor_type(BOOL, &[])),
            ],
            vec![node(
                "Loop",
                &["", "cond", "x"],
                &["y"],
                vec![graph_attr("body", body)],
            )],
            vec![untyped("y")],
        )
    }

    #[test]
    fn nested_loops_cannot_blow_up_the_work() {
        // Each level may run its body twice: 2^60 body runs without a budget.
        // The bodies change shapes (Concat doubles `v`), so the budget ends
        // the walk with an error once the visits pass it. The expanded model
        // holds 60 levels of 2 nodes, 2 innermost nodes and the outer Loop:
        // 60 * 2 + 2 + 1 = 123 nodes, a budget of 50_000 + 16 * 123 = 51_968.
        let m = model(nested_loops(60), 16);
        let e = fact_of(&m, "y").unwrap_err();
        let nodes = 60 * 2 + 2 + 1;
        let budget = super::NODE_VISITS_BASE + super::NODE_VISITS_PER_NODE * nodes;
        assert!(
            e.contains(&format!("exceeds the limit of {budget} node visits")),
            "{e}"
        );
    }

    #[test]
    fn declarations_fill_in_what_inference_lacks() {
        let mut g = graph(
            vec![value("x", tensor_type(FLOAT, &["n"]))],
            vec![
                // No shape logic: the declared kind and type are taken whole.
                node("Mystery", &["x"], &["m"], vec![]),
                // Inferred [n]; the model declares [5]: the known size wins.
                node("Identity", &["x"], &["y"], vec![]),
                // A declaration that contradicts a known size is ignored.
                node("Identity", &["y"], &["z"], vec![]),
            ],
            vec![untyped("m"), untyped("z")],
        );
        g.value_info = vec![
            value("m", seq_type(tensor_type(FLOAT, &["2"]))),
            value("y", tensor_type(FLOAT, &["5"])),
            value("z", tensor_type(FLOAT, &["6"])),
        ];
        let m = model(g, 16);
        assert_eq!(fact_of(&m, "m").unwrap(), "seq float32[2]");
        assert_eq!(fact_of(&m, "y").unwrap(), "float32[5]");
        assert_eq!(fact_of(&m, "z").unwrap(), "float32[5]");
    }

    /// A large graph lists its producers on a second thread, which looks
    /// there for outputs named like the scope's values (its input, its
    /// initializers) while this one fills the scope: the first value
    /// defined twice in file order is the one named, an output like the
    /// scope's or a repeated output, as when one thread does both.
    #[test]
    fn a_large_graph_names_the_first_value_defined_twice() {
        let n = crate::threads::SECOND_THREAD_FROM + 100;
        // A chain of Relus from `x`; node k also makes `extra[k]`.
        let refused = |extra: &[(usize, &str)]| {
            let nodes = (0..n)
                .map(|i| {
                    let input = if i == 0 {
                        "x".to_string()
                    } else {
                        format!("v{}", i - 1)
                    };
                    let mut outputs = vec![format!("v{i}")];
                    outputs.extend(
                        extra
                            .iter()
                            .filter(|(k, _)| *k == i)
                            .map(|(_, o)| o.to_string()),
                    );
                    let outputs: Vec<&str> = outputs.iter().map(String::as_str).collect();
                    let mut r = node("Relu", &[&input], &outputs, vec![]);
                    r.name = Some(format!("n{i}"));
                    r
                })
                .collect();
            let mut g = graph(
                vec![value("x", tensor_type(FLOAT, &["2"]))],
                nodes,
                vec![untyped(&format!("v{}", n - 1))],
            );
            g.initializer.push(zeros("w", &[1]));
            let opts = super::InferOptions::default();
            super::infer_nodes(&model(g, 17), None, &opts, None, None)
                .err()
                .expect("refused")
                .to_string()
        };
        let twice = |value: &str, node: usize| {
            format!("value '{value}' is defined twice (node 'n{node}' (Relu) defines it again)")
        };
        // The initializer made again before an output is repeated, and after.
        let e = refused(&[(4000, "w"), (4050, "v10")]);
        assert!(e.contains(&twice("w", 4000)), "{e}");
        let e = refused(&[(4050, "w"), (4000, "v10")]);
        assert!(e.contains(&twice("v10", 4000)), "{e}");
        // The graph's input made again, late in the second half.
        let e = refused(&[(n - 5, "x")]);
        assert!(e.contains(&twice("x", n - 5)), "{e}");
        // The earliest of two outputs like the scope's.
        let e = refused(&[(4090, "x"), (30, "w")]);
        assert!(e.contains(&twice("w", 30)), "{e}");
    }

    /// Listing the values of nodes taken from the model keeps their facts
    /// by slot (to the end, nothing let go) and by name where a branch
    /// reads one from outside or a model-local function is called: either
    /// way the list is a full walk's, name for name and fact for fact.
    #[test]
    fn a_listing_of_taken_nodes_is_a_full_walks() {
        let branch = |name: &str, reads: &str| {
            graph(
                vec![],
                vec![node("Identity", &[reads], &[name], vec![])],
                vec![untyped(name)],
            )
        };
        // a = x + w; b = Relu(a); c = cond ? a : b (a read by name from
        // inside the branch); d = a * c, read twice; s = Shape(d).
        let nodes = vec![
            node("Add", &["x", "w"], &["a"], vec![]),
            node("Relu", &["a"], &["b"], vec![]),
            node(
                "If",
                &["cond"],
                &["c"],
                vec![
                    graph_attr("then_branch", branch("t", "a")),
                    graph_attr("else_branch", branch("e", "b")),
                ],
            ),
            node("Mul", &["a", "c"], &["d"], vec![]),
            node("Shape", &["d"], &["s"], vec![]),
            node("Add", &["d", "d"], &["dd"], vec![]),
        ];
        let mut g = graph(
            vec![
                value("x", tensor_type(FLOAT, &["n", "2"])),
                value("cond", tensor_type(BOOL, &[])),
            ],
            nodes,
            vec![untyped("dd"), untyped("s")],
        );
        g.initializer.push(zeros("w", &[2]));
        let listing = super::InferOptions {
            values_only: true,
            ..Default::default()
        };
        let lists = |mut m: crate::onnx::OnnxModel| {
            let full = super::infer(&m, &super::InferOptions::default()).unwrap();
            let taken = std::mem::take(&mut m.model.graph.as_mut().unwrap().node);
            let listed = super::infer_taken(&m, super::Taken::Nodes(taken), &listing).unwrap();
            assert_eq!(listed.values, full.values);
            listed
                .values
                .iter()
                .map(|(n, f)| format!("{n} {f}"))
                .collect::<Vec<_>>()
        };
        let plain = [
            "x float32[n, 2]",
            "cond bool[]",
            "w float32[2]",
            "a float32[n, 2]",
            "b float32[n, 2]",
            "c float32[n, 2]",
            "d float32[n, 2]",
            "s int64[2]",
            "dd float32[n, 2]",
        ];
        assert_eq!(lists(model(g.clone(), 17)), plain);
        // With a model-local function, called last: its inner values are
        // listed under the call's name, and every value goes by name.
        let f = FunctionProto {
            name: Some("F".into()),
            domain: Some("local".into()),
            input: vec!["i".into()],
            output: vec!["o".into()],
            node: vec![node("Neg", &["i"], &["o"], vec![])],
            opset_import: vec![OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(17),
            }],
            ..Default::default()
        };
        let mut call = node("F", &["dd"], &["z"], vec![]);
        call.name = Some("call".into());
        call.domain = Some("local".into());
        g.node.push(call);
        let mut m = model(g, 17);
        m.model.functions.push(f);
        m.opsets.insert("local".into(), 1);
        let listed = lists(m);
        assert_eq!(listed[..plain.len()], plain);
        assert_eq!(
            listed[plain.len()..],
            ["call/o float32[n, 2]", "z float32[n, 2]"]
        );
    }

    /// The values named inside a call's expansion are read by nothing
    /// after it: once recorded, the level lets them go, and holds one
    /// call's at a time rather than every call's.
    #[test]
    fn an_expansions_values_are_let_go_once_recorded() {
        // F(a) = Relu(Neg(a)): its values are `n` and `r`, called as
        // `c1/n`, `c1/r`, then `c2/n`, `c2/r`.
        let f = FunctionProto {
            name: Some("F".into()),
            domain: Some("local".into()),
            input: vec!["a".into()],
            output: vec!["r".into()],
            node: vec![
                node("Neg", &["a"], &["n"], vec![]),
                node("Relu", &["n"], &["r"], vec![]),
            ],
            opset_import: vec![OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(17),
            }],
            ..Default::default()
        };
        let call = |name: &str, input: &str, output: &str| {
            let mut c = node("F", &[input], &[output], vec![]);
            c.name = Some(name.into());
            c.domain = Some("local".into());
            c
        };
        let g = graph(
            vec![value("x", tensor_type(FLOAT, &["2"]))],
            vec![call("c1", "x", "y"), call("c2", "y", "z")],
            vec![untyped("z")],
        );
        let mut m = model(g, 17);
        m.model.functions.push(f);
        m.opsets.insert("local".into(), 1);
        let opts = super::InferOptions {
            nodes_only: true,
            ..Default::default()
        };
        let mut level = super::graph::Level::new(super::HashSet::default(), true, "");
        super::infer_nodes(&m, None, &opts, Some(&mut level), None).unwrap();
        let left: Vec<String> = level
            .made_names()
            .into_iter()
            .filter(|n| n.contains('/'))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // The expansion's layers are there all the same: two Negs, two
        // Relus.
        let (graph, _) = level.finish(Vec::new());
        let ops: Vec<&str> = graph.nodes.iter().map(|n| n.op.as_str()).collect();
        assert_eq!(ops, ["Neg", "Relu", "Neg", "Relu"]);
    }

    #[test]
    fn function_bodies_use_their_own_opset_and_caller_attributes() {
        use crate::proto::AttributeProto;
        // f(a) = If(c) { Identity(a) } else { Identity(a) }: the branches read
        // the function's formal input, which expansion renames.
        let branch = |name: &str| {
            graph(
                vec![],
                vec![node("Identity", &["a"], &[name], vec![])],
                vec![untyped(name)],
            )
        };
        let f = FunctionProto {
            name: Some("F".into()),
            domain: Some("local".into()),
            input: vec!["a".into(), "c".into()],
            output: vec!["r".into()],
            node: vec![node(
                "If",
                &["c"],
                &["r"],
                vec![
                    graph_attr("then_branch", branch("t")),
                    graph_attr("else_branch", branch("e")),
                ],
            )],
            opset_import: vec![OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(13),
            }],
            ..Default::default()
        };
        let mut call = node("F", &["x", "cond"], &["y"], vec![]);
        call.domain = Some("local".into());
        let mut call2 = node("F", &["y", "cond"], &["z"], vec![]);
        call2.domain = Some("local".into());
        let g = graph(
            vec![
                value("x", tensor_type(FLOAT, &["n", "2"])),
                value("cond", tensor_type(BOOL, &[])),
            ],
            vec![call, call2],
            vec![untyped("z")],
        );
        let mut m = model(g, 16);
        m.model.functions.push(f);
        m.opsets.insert("local".into(), 1);
        assert_eq!(fact_of(&m, "z").unwrap(), "float32[n, 2]");
        let inferred = super::infer(&m, &super::InferOptions::default()).unwrap();
        let ifs: Vec<_> = inferred.nodes.iter().filter(|n| n.op == "If").collect();
        assert_eq!(ifs.len(), 2);
        assert!(
            ifs.iter().all(|n| n.opset == 13),
            "the function imports opset 13"
        );
        // With the nodes taken, as an estimate takes them, the main graph's
        // values are kept by slot: the first call's output, defined by its
        // last record, still reaches the second call, and the graph is the
        // one built with every value by name.
        let opts = super::InferOptions {
            nodes_only: true,
            ..Default::default()
        };
        let by_name = super::infer_graph(&m, None, &opts, true).unwrap();
        let mut bare = model(m.model.graph.clone().unwrap(), 16);
        bare.model.functions = m.model.functions.clone();
        bare.opsets = m.opsets.clone();
        let nodes = std::mem::take(&mut bare.model.graph.as_mut().unwrap().node);
        let by_slot =
            super::infer_graph(&bare, Some(super::Taken::Nodes(nodes)), &opts, true).unwrap();
        assert_eq!(by_slot, by_name);
        // The second If reads y, float32[n, 2].
        let second = &by_slot.nodes[1];
        assert_eq!(second.op, "If");
        let shape = &second.outputs[0].as_ref().unwrap().shape;
        assert_eq!(shape.len(), 2);
        assert_eq!(shape[1], crate::ir::Dim::Known(2));
        // An attribute that refers to the caller's takes the caller's value.
        let mut g2 = m.model.graph.clone().unwrap();
        g2.node = vec![node("G", &["x"], &["z"], vec![int("axis", 1)])];
        g2.node[0].domain = Some("local".into());
        let gfun = FunctionProto {
            name: Some("G".into()),
            domain: Some("local".into()),
            input: vec!["a".into()],
            output: vec!["r".into()],
            node: vec![node(
                "Concat",
                &["a", "a"],
                &["r"],
                vec![AttributeProto {
                    name: Some("axis".into()),
                    ref_attr_name: Some("axis".into()),
                    ..Default::default()
                }],
            )],
            ..Default::default()
        };
        let mut m2 = model(g2.clone(), 16);
        m2.model.functions.push(gfun);
        m2.opsets.insert("local".into(), 1);
        let inferred = super::infer(&m2, &super::InferOptions::default()).unwrap();
        let concat = inferred.nodes.iter().find(|n| n.op == "Concat").unwrap();
        assert_eq!(
            concat.attrs.get("axis"),
            Some(&crate::ir::AttrValue::Int(1))
        );
        // A formal input the call leaves out is absent inside the body.
        let mut g3 = g2;
        g3.node = vec![node("H", &["x"], &["z"], vec![])];
        g3.node[0].domain = Some("local".into());
        let hfun = FunctionProto {
            name: Some("H".into()),
            domain: Some("local".into()),
            input: vec!["a".into(), "b".into()],
            output: vec!["r".into()],
            node: vec![
                node("Identity", &["a"], &["r"], vec![]),
                node("Mystery", &["a", "b"], &["q"], vec![]),
            ],
            ..Default::default()
        };
        let mut m3 = model(g3, 16);
        m3.model.functions.push(hfun);
        m3.opsets.insert("local".into(), 1);
        assert_eq!(fact_of(&m3, "z").unwrap(), "float32[n, 2]");
        let inferred = super::infer(&m3, &super::InferOptions::default()).unwrap();
        let mystery = inferred.nodes.iter().find(|n| n.op == "Mystery").unwrap();
        assert!(mystery.inputs[1].is_none());
    }
}
