//! From inferred facts to the IR: the [`ir::Graph`] the cost stage sees.

use super::order::NO_SLOT;
use super::*;

/// The element type and shape a fact is described by for the cost stage,
/// if it has them. A sequence or an optional is described by its element,
/// as the rules for them expect; they never count the container itself, so
/// one whose elements differ in shape stands as a scalar of its element
/// type.
fn described(f: &Fact) -> Option<(DType, &[Dim])> {
    match (f.dtype, &f.shape, &f.kind) {
        (Some(d), Some(s), ValueKind::Tensor | ValueKind::Sequence | ValueKind::Optional) => {
            Some((d, s))
        }
        (d, None, ValueKind::Sequence | ValueKind::Optional) => {
            Some((d.unwrap_or(DType::Float32), &[]))
        }
        _ => None,
    }
}

/// A node's tensors as the cost stage needs them: each of known element
/// type and shape ([`described`]), or the reason one is not. Constants
/// (initializers, values known at load time, what folded nodes produce)
/// count as weights for `--weights`; the name links producers to consumers
/// for fusion. A tensor the level made (one of its node outputs, converted
/// when its node was) is shared with it, name and dimensions, when it is
/// the same. `slots`: the list's slots, when the walk gave them.
///
/// The list is read, not consumed: a name or shape moved into its shared
/// form is copied all the same, and the list can then be freed by the
/// thread that made it ([`Spent`]).
fn tensors_of(
    list: &[Option<(String, Fact)>],
    slots: Option<&[u32]>,
    known: &Known,
) -> std::result::Result<ir::Tensors, String> {
    if let Some((name, _)) = list.iter().flatten().find(|(_, f)| described(f).is_none()) {
        return Err(format!("the shape of '{name}' is unknown"));
    }
    // Collected straight into the shared list: one allocation of its size.
    Ok(list
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let (name, f) = t.as_ref()?;
            let (dtype, shape) = described(f)?;
            let slot = slot_at(slots, k);
            // Unfolded (`--no-fold`), a value worked out at load time is
            // still made by its node when the model runs: an activation.
            let constant = f.constant.is_some()
                || (known.fold && f.value.is_some())
                || known.folded(name, slot);
            if let Some(t) = known
                .made(name, slot)
                .filter(|t| t.dtype == dtype && t.constant == constant && *t.shape == *shape)
            {
                return Some(t.clone());
            }
            Some(TensorFact {
                dtype,
                shape: known.shape(shape),
                constant,
                name: Some(name.as_str().into()),
                nonzeros: None,
            })
        })
        .collect())
}

/// What a level knows of the values its nodes read: which are made by
/// folded nodes, and the tensors its nodes made ([`Made`]); each by slot
/// where the walk gave one ([`Records::record`]), else by name.
struct Known<'a> {
    folded_names: &'a HashSet<String>,
    folded_slots: &'a [u64],
    made: Option<(&'a Made, &'a MadeBySlot)>,
    shapes: &'a Shapes,
    /// Nodes on constants fold away (not `--no-fold`).
    fold: bool,
}

/// The level's tensor sizes, each distinct list once: a graph has few
/// (a 111k-node one, some hundreds for 128k tensors), so its tensors share
/// them, and a report renders each once ([`crate::report`]).
type Shapes = RefCell<HashSet<Arc<[Dim]>>>;

impl Known<'_> {
    /// `dims`, shared with the level's other tensors of that size.
    fn shape(&self, dims: &[Dim]) -> Arc<[Dim]> {
        let mut shapes = self.shapes.borrow_mut();
        if let Some(s) = shapes.get(dims) {
            return Arc::clone(s);
        }
        let s: Arc<[Dim]> = dims.into();
        shapes.insert(Arc::clone(&s));
        s
    }

    fn folded(&self, name: &str, slot: u32) -> bool {
        match slot {
            NO_SLOT => self.folded_names.contains(name),
            s => bit(self.folded_slots, s),
        }
    }

    fn made(&self, name: &str, slot: u32) -> Option<&TensorFact> {
        let (by_name, by_slot) = self.made?;
        match slot {
            NO_SLOT => by_name.get(name),
            s => by_slot.get(&s),
        }
    }
}

/// The slot of the `k`-th value of a list, where the walk gave the list's
/// slots ([`NO_SLOT`]: by name).
fn slot_at(slots: Option<&[u32]>, k: usize) -> u32 {
    slots.map_or(NO_SLOT, |s| s[k])
}

/// Whether bit `i` of `bits` is set (those past its end are not).
fn bit(bits: &[u64], i: u32) -> bool {
    bits.get(i as usize / 64)
        .is_some_and(|w| w & (1 << (i % 64)) != 0)
}

/// Sets bit `i` of `bits`, growing it as needed.
fn set_bit(bits: &mut Vec<u64>, i: u32) {
    let word = i as usize / 64;
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << (i % 64);
}

/// An attribute as a rule reads it; graphs, tensors and types are not values
/// (rules never read them). The type is the declared one (or, in files that
/// leave it out, the field that is set), never a guess past it.
pub(super) fn attr_value(a: &AttributeProto) -> Option<AttrValue> {
    let s = |b: &bytes::Bytes| String::from_utf8_lossy(b).into_owned();
    Some(match crate::shape::ctx::attr_kind(a) {
        attr_type::FLOAT => AttrValue::Float(f64::from(a.f.unwrap_or(0.0))),
        attr_type::INT => AttrValue::Int(a.i.unwrap_or(0)),
        attr_type::STRING => AttrValue::Str(a.s.as_ref().map(s).unwrap_or_default()),
        attr_type::FLOATS => AttrValue::Floats(a.floats.iter().map(|&f| f64::from(f)).collect()),
        attr_type::INTS => AttrValue::Ints(a.ints.clone()),
        attr_type::STRINGS => AttrValue::Strs(a.strings.iter().map(s).collect()),
        _ => return None,
    })
}

impl InferredNode {
    /// Takes the names of `n`, the node this record was inferred from, left
    /// empty by inference when the caller gives them: its own, its op's and
    /// its attributes' (those [`attr_value`] reads).
    pub(super) fn take_names(&mut self, n: &mut NodeProto) {
        self.op = n.op_type.take().unwrap_or_default();
        self.name = n.name.take().unwrap_or_default();
        self.attrs = n
            .attribute
            .iter_mut()
            .filter_map(|a| {
                let value = attr_value(a)?;
                Some((a.name.take()?, value))
            })
            .collect();
    }
}

/// What recording a node leaves of it: its input and output lists, which
/// the walk's thread made and frees (a block freed by another thread costs
/// its maker a collection pass).
pub(super) type Spent = [Vec<Option<(String, Fact)>>; 2];

/// The tensors a level's nodes made so far, by name, as converted for the
/// cost graph: a reader's copy of one shares its name and dimensions
/// instead of allocating its own (two allocations a read; 10 MB of a
/// 111k-node graph). Each is let go after its last reader, when the walk
/// counts them ([`Records::let_go`]).
type Made = HashMap<std::sync::Arc<str>, TensorFact>;

/// [`Made`] by slot: the tensors of the outputs the walk keeps by slot
/// (a number hashed, not a name, and no name compared).
type MadeBySlot = HashMap<u32, TensorFact>;

/// Whether an engine folds the node away at load time: every input is a
/// constant (an initializer, a value known at load time, or what a folded
/// node produces, listed in `folded`), and its subgraphs (if any) hold
/// nothing that must run. Constness alone decides: never the size of a value.
pub(crate) fn folds(n: &InferredNode, folded: &HashSet<String>) -> bool {
    folds_with(n, folded, |_, name| folded.contains(name))
}

/// [`folds`], with `input_folded(k, name)` saying whether input `k`,
/// `name`, is what a folded node produces (subgraphs read what encloses
/// them by name, in `folded`).
fn folds_with(
    n: &InferredNode,
    folded: &HashSet<String>,
    input_folded: impl Fn(usize, &str) -> bool,
) -> bool {
    n.inputs.iter().enumerate().all(|(k, t)| match t {
        Some((name, f)) => f.value.is_some() || f.constant.is_some() || input_folded(k, name),
        None => true,
    }) && n.bodies.iter().all(|b| match &b.nodes {
        Ok(nodes) => {
            let mut inner = folded.clone();
            folding(nodes, &mut inner).into_iter().all(|f| f)
        }
        Err(_) => false,
    })
}

/// Which of `nodes` (in execution order) fold; what the folded ones
/// produce joins `folded`.
pub(crate) fn folding(nodes: &[InferredNode], folded: &mut HashSet<String>) -> Vec<bool> {
    nodes
        .iter()
        .map(|n| {
            let f = folds(n, folded);
            if f {
                folded.extend(n.outputs.iter().flatten().map(|(name, _)| name.clone()));
            }
            f
        })
        .collect()
}

/// The graph the cost stage sees. Nodes an engine folds at load time (all
/// inputs constant) are left out; nodes whose shapes are unknown are listed
/// as not analysed, with the reason. Consumes the inference result: nothing
/// is copied.
pub fn to_graph(inferred: Inferred) -> ir::Graph {
    to_graph_with(inferred, true)
}

/// [`to_graph`], or with `fold` false every node counted as executed, as
/// an eager framework runs it (`--no-fold`).
pub fn to_graph_with(inferred: Inferred, fold: bool) -> ir::Graph {
    let mut folded_names = HashSet::default();
    let mut graph = graph_of(
        inferred.nodes,
        inferred.outputs,
        "",
        &mut folded_names,
        fold,
    );
    graph.bounds = inferred.bounds;
    graph.input_symbols = inferred.input_symbols;
    graph.bound_symbols = inferred.bound_symbols;
    graph.settle(&inferred.learned);
    graph
}

/// One graph level: the main graph, or a subgraph whose node names get
/// `prefix` (`loop/body/`). `folded_names` holds what folded nodes produce,
/// here and in enclosing graphs.
pub(super) fn graph_of(
    nodes: Vec<InferredNode>,
    outputs: Vec<String>,
    prefix: &str,
    folded_names: &mut HashSet<String>,
    fold: bool,
) -> ir::Graph {
    let mut level = Level::new(std::mem::take(folded_names), fold, prefix);
    level.reserve(nodes.len());
    for n in nodes {
        level.push(n, None);
    }
    let (graph, names) = level.finish(outputs);
    *folded_names = names;
    graph
}

/// A graph level built a node at a time, in execution order, as inference
/// records them: the main graph's nodes become the cost stage's as they
/// come, so the two are never all held at once.
pub(crate) struct Level {
    /// What folded nodes produce, here and in enclosing graphs: by name,
    /// and those the walk keeps by slot as a set of slots.
    folded_names: HashSet<String>,
    folded_slots: Vec<u64>,
    /// What this level's nodes made, by name and by slot.
    made: Made,
    made_by_slot: MadeBySlot,
    shapes: Shapes,
    fold: bool,
    folded: usize,
    /// The nodes folded away and those that run, in order. Each list
    /// becomes the graph's, so each is given room for all of the level's
    /// nodes at once when their number is known ([`Records::reserve`]):
    /// neither is ever copied, and the room a list does not fill is never
    /// touched (address space, not memory).
    folded_nodes: Vec<ir::Node>,
    plain: Vec<ir::Node>,
    /// For the nodes in `plain` not analysed or with bodies (few): the
    /// node's place, why it is not analysed, its bodies and their runs.
    rest: Vec<Rest>,
    /// What goes before each node's name (`loop/body/`).
    prefix: String,
    /// Each list's nodes are named as they come: unnamed ones numbered
    /// by type in execution order, the folded apart from those that run
    /// (where the nodes are made, not in a pass over them all later).
    folded_namer: ir::Namer,
    plain_namer: ir::Namer,
}

/// Names `node` as `namer`'s next, `prefix` before the name.
fn named(namer: &mut ir::Namer, prefix: &str, node: &mut ir::Node) {
    namer.name(node);
    if !prefix.is_empty() {
        node.name = format!("{prefix}{}", node.name);
    }
}

/// What [`Level::finish`] still does with a node of `plain`: its place,
/// why it is not analysed, its bodies and their runs.
type Rest = (usize, Option<String>, Vec<InferredBody>, Option<Dim>);

/// A list grown in blocks of a fixed size: growing never copies what it
/// holds (a doubled list of a 111k-node graph's nodes leaves up to half of
/// its room empty, 10 MB), and it is moved out block by block, each freed
/// once moved, so list and result are never both whole.
pub(crate) struct Blocks<T> {
    full: Vec<Vec<T>>,
    /// The block being filled: it grows as any list does up to
    /// [`Blocks::SIZE`], so a small graph takes no more than it holds.
    last: Vec<T>,
}

impl<T> Default for Blocks<T> {
    fn default() -> Self {
        Blocks {
            full: Vec::new(),
            last: Vec::new(),
        }
    }
}

impl<T> Blocks<T> {
    const SIZE: usize = 1024;

    pub(crate) fn push(&mut self, item: T) {
        if self.last.len() == Self::SIZE {
            let next = Vec::with_capacity(Self::SIZE);
            self.full.push(std::mem::replace(&mut self.last, next));
        }
        self.last.push(item);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.full.len() * Self::SIZE + self.last.len()
    }

    /// The items in order, each block freed once its items are taken.
    pub(crate) fn into_items(self) -> impl Iterator<Item = T> {
        self.full.into_iter().chain([self.last]).flatten()
    }
}

impl Level {
    /// A level whose node names get `prefix`.
    pub(crate) fn new(folded_names: HashSet<String>, fold: bool, prefix: &str) -> Level {
        Level {
            folded_names,
            folded_slots: Vec::new(),
            made: Made::default(),
            made_by_slot: MadeBySlot::default(),
            shapes: Shapes::default(),
            fold,
            folded: 0,
            folded_nodes: Vec::new(),
            plain: Vec::new(),
            rest: Vec::new(),
            prefix: prefix.to_string(),
            folded_namer: ir::Namer::default(),
            plain_namer: ir::Namer::default(),
        }
    }

    /// What the level knows of the values its nodes read; `made`: with the
    /// tensors its nodes made.
    fn known(&self, made: bool) -> Known<'_> {
        Known {
            folded_names: &self.folded_names,
            folded_slots: &self.folded_slots,
            made: made.then_some((&self.made, &self.made_by_slot)),
            shapes: &self.shapes,
            fold: self.fold,
        }
    }

    /// Adds the next node: folded away (all inputs constant) or kept.
    /// Returns its value lists, read. `slots`: the slot of each of its
    /// inputs, then of each of its outputs ([`NO_SLOT`]: by name), when
    /// the walk gave them.
    pub(crate) fn push(&mut self, n: InferredNode, slots: Option<&[u32]>) -> Spent {
        let slots = slots.filter(|s| s.len() == n.inputs.len() + n.outputs.len());
        let (in_slots, out_slots) = match slots {
            Some(s) => {
                let (i, o) = s.split_at(n.inputs.len());
                (Some(i), Some(o))
            }
            None => (None, None),
        };
        // What folded nodes produce (weights built by ConstantOfShape, say)
        // is a constant of the model too.
        let folds_away = self.fold && {
            let known = self.known(false);
            folds_with(&n, &self.folded_names, |k, name| {
                known.folded(name, slot_at(in_slots, k))
            })
        };
        // A Constant is a weight written as a node, whichever attribute
        // holds its value (`value`, `value_floats`...): run unfolded too,
        // what reads it reads a weight.
        let constant_node = n.op == "Constant" && n.domain.is_empty();
        if folds_away || constant_node {
            for (k, o) in n.outputs.iter().enumerate() {
                let Some((name, _)) = o else { continue };
                match slot_at(out_slots, k) {
                    NO_SLOT => drop(self.folded_names.insert(name.clone())),
                    s => set_bit(&mut self.folded_slots, s),
                }
            }
        }
        let mut node = ir::Node {
            name: n.name,
            op: n.op,
            domain: n.domain,
            opset: n.opset,
            attrs: n.attrs,
            inputs: Default::default(),
            outputs: Default::default(),
            bodies: Vec::new(),
        };
        let reason = match (
            tensors_of(&n.inputs, in_slots, &self.known(true)),
            tensors_of(&n.outputs, out_slots, &self.known(false)),
        ) {
            (Ok(inputs), Ok(outputs)) => {
                for (k, t) in outputs.iter().enumerate() {
                    let Some(t) = t else { continue };
                    match (slot_at(out_slots, k), &t.name) {
                        (NO_SLOT, Some(name)) => drop(self.made.insert(name.clone(), t.clone())),
                        (NO_SLOT, None) => {}
                        (s, _) => drop(self.made_by_slot.insert(s, t.clone())),
                    }
                }
                node.inputs = inputs;
                node.outputs = outputs;
                None
            }
            (Err(reason), _) | (_, Err(reason)) => Some(reason),
        };
        let spent = [n.inputs, n.outputs];
        if folds_away {
            self.folded += 1;
            // A Constant's value is known above, and it would cost
            // nothing, as an initializer does not: no folded layer.
            if reason.is_none() && !constant_node {
                named(&mut self.folded_namer, &self.prefix, &mut node);
                self.folded_nodes.push(node);
            }
            return spent;
        }
        if reason.is_some() || !n.bodies.is_empty() {
            self.rest
                .push((self.plain.len(), reason, n.bodies, n.repeats));
        }
        named(&mut self.plain_namer, &self.prefix, &mut node);
        self.plain.push(node);
        spent
    }

    /// The level's graph, its nodes' bodies built; and what folded nodes
    /// produce, this level's included.
    pub(crate) fn finish(self, outputs: Vec<String>) -> (ir::Graph, HashSet<String>) {
        let Level {
            mut folded_names,
            made,
            fold,
            folded,
            folded_nodes,
            plain: mut nodes,
            rest,
            ..
        } = self;
        // Every reader has been converted.
        drop(made);
        let mut unanalysed = Vec::new();
        let mut reasons = Vec::new();
        for (at, reason, bodies, repeats) in rest {
            let node = &mut nodes[at];
            // If's branches are alternatives; other bodies run `repeats` times.
            let alternative = node.op == "If" && node.domain.is_empty();
            let repeats = repeats.unwrap_or(Dim::Known(1));
            node.bodies = bodies
                .into_iter()
                .map(|b| ir::Body {
                    trips: b
                        .trips
                        .into_iter()
                        .map(|nodes| {
                            let inner = format!("{}/{}/", node.name, b.attr);
                            graph_of(nodes, b.outputs.clone(), &inner, &mut folded_names, fold)
                        })
                        .collect(),
                    graph: b.nodes.map(|nodes| {
                        let inner = format!("{}/{}/", node.name, b.attr);
                        graph_of(nodes, b.outputs, &inner, &mut folded_names, fold)
                    }),
                    attr: b.attr,
                    inputs: b.inputs,
                    repeats: repeats.clone(),
                    alternative,
                })
                .collect();
            if let Some(r) = reason {
                reasons.push((at, r));
            }
        }
        // Nodes not analysed leave the list (rare: the list is rebuilt).
        if !reasons.is_empty() {
            let mut reasons = reasons.into_iter().peekable();
            let all = std::mem::take(&mut nodes);
            nodes.reserve(all.len() - reasons.len());
            for (i, node) in all.into_iter().enumerate() {
                match reasons.next_if(|(at, _)| *at == i) {
                    Some((_, r)) => unanalysed.push((node, r)),
                    None => nodes.push(node),
                }
            }
        }
        let graph = ir::Graph {
            folded,
            folded_nodes,
            outputs,
            nodes,
            unanalysed,
            ..ir::Graph::default()
        };
        (graph, folded_names)
    }
}

/// The cost stage's graph of the main graph ([`to_graph_with`] of
/// [`infer`]), each node converted as it is inferred: its inferred record
/// and its graph node are never all held at once. `taken`: as for
/// [`infer_taken`].
pub fn infer_graph(
    model: &OnnxModel,
    taken: Option<super::Taken>,
    opts: &InferOptions,
    fold: bool,
) -> Result<ir::Graph> {
    infer_graph_with(model, taken, opts, fold, None)
}

/// [`infer_graph`], the main graph's initializers taken out of the model
/// (its graph then holds none) and freed once their facts are made.
pub(crate) fn infer_graph_with(
    model: &OnnxModel,
    taken: Option<super::Taken>,
    opts: &InferOptions,
    fold: bool,
    initializers: Option<Vec<crate::proto::TensorProto>>,
) -> Result<ir::Graph> {
    let mut level = Level::new(HashSet::default(), fold, "");
    let inferred = infer_nodes(model, taken, opts, Some(&mut level), initializers)?;
    let (mut graph, _) = level.finish(inferred.outputs);
    graph.bounds = inferred.bounds;
    graph.input_symbols = inferred.input_symbols;
    graph.bound_symbols = inferred.bound_symbols;
    graph.settle(&inferred.learned);
    Ok(graph)
}

/// Where a walk puts the nodes it infers: a list, or a graph level built
/// as they come.
pub(super) trait Records: Send {
    fn reserve(&mut self, more: usize);
    /// Records `node`; returns what it did not keep of it. `slots`: the
    /// slots of its inputs, then of its outputs, as [`Level::push`] takes
    /// them, when the walk keeps its values by slot.
    fn record(&mut self, node: InferredNode, slots: Option<&[u32]>) -> Option<Spent>;
    /// `name`'s last reader has been recorded: nothing reads it again.
    /// `slot`: its slot, where its node's record was given it, else
    /// [`NO_SLOT`].
    fn let_go(&mut self, _name: &str, _slot: u32) {}
}

/// What a walk records, on its way to its [`Records`]: straight there, or,
/// for a large graph on two cores, in batches to a thread that records
/// them while the walk infers the next nodes (converting a node for the
/// cost stage is a fifth of a large graph's walk).
pub(super) enum Recorder<'r> {
    Here(Option<&'r mut dyn Records>),
    Ahead {
        batch: Batch,
        sender: std::sync::mpsc::SyncSender<Batch>,
        /// What the thread did not keep, coming back to be freed here.
        given_back: std::sync::mpsc::Receiver<Vec<Spent>>,
    },
}

/// Nodes recorded in order, then the values let go after them: a value is
/// let go after its last reader, so letting it go a few nodes later
/// changes nothing recorded.
#[derive(Default)]
pub(super) struct Batch {
    nodes: Vec<InferredNode>,
    /// Where each node's slots lie in `slots`, if it was given any.
    at: Vec<Option<(u32, u32)>>,
    slots: Vec<u32>,
    /// The names let go, end to end; `ends` holds where each ends, and
    /// `let_go` each one's slot.
    names: String,
    ends: Vec<usize>,
    let_go: Vec<u32>,
}

/// Nodes handed to the recording thread at a time.
const RECORD_BATCH: usize = 256;

impl<'r> Recorder<'r> {
    /// A recorder for a walk of `nodes` nodes; `threads` runs the
    /// recording thread, if there is one.
    pub(super) fn new<'s>(
        records: Option<&'r mut dyn Records>,
        nodes: usize,
        threads: &'s std::thread::Scope<'s, '_>,
    ) -> Recorder<'r>
    where
        'r: 's,
    {
        let records = match records {
            Some(r) if crate::threads::second_thread(nodes) => r,
            records => return Recorder::Here(records),
        };
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Batch>(4);
        let (spent, given_back) = std::sync::mpsc::channel();
        // A thread the system refuses leaves the records to this one.
        let started = crate::threads::spawn_with(
            crate::threads::helper(),
            threads,
            records,
            move |records| {
                for batch in receiver {
                    let mut left: Vec<Spent> = Vec::with_capacity(batch.nodes.len());
                    let slots = &batch.slots;
                    left.extend(batch.nodes.into_iter().zip(&batch.at).filter_map(
                        |(node, &at)| {
                            let given = at.map(|(a, b)| &slots[a as usize..b as usize]);
                            records.record(node, given)
                        },
                    ));
                    let mut start = 0;
                    for (&end, &slot) in batch.ends.iter().zip(&batch.let_go) {
                        records.let_go(&batch.names[start..end], slot);
                        start = end;
                    }
                    // The walk has ended when nobody takes them: freed here.
                    let _ = spent.send(left);
                }
            },
        );
        if let Err(records) = started {
            return Recorder::Here(Some(records));
        }
        Recorder::Ahead {
            batch: Batch {
                nodes: Vec::with_capacity(RECORD_BATCH),
                ..Batch::default()
            },
            sender,
            given_back,
        }
    }

    /// [`Records::record`], now or with the batch.
    pub(super) fn record(&mut self, node: InferredNode, slots: Option<&[u32]>) {
        match self {
            Recorder::Here(Some(r)) => drop(r.record(node, slots)),
            Recorder::Here(None) => {}
            Recorder::Ahead { batch, .. } => {
                // Within u32: slots hold a few per node.
                let at = slots.map(|s| {
                    let start = batch.slots.len() as u32;
                    batch.slots.extend_from_slice(s);
                    (start, batch.slots.len() as u32)
                });
                batch.at.push(at);
                batch.nodes.push(node);
                if batch.nodes.len() == RECORD_BATCH {
                    self.send(false);
                }
            }
        }
    }

    /// [`Records::let_go`], now or after the batch's nodes.
    pub(super) fn let_go(&mut self, name: &str, slot: u32) {
        match self {
            Recorder::Here(Some(r)) => r.let_go(name, slot),
            Recorder::Here(None) => {}
            Recorder::Ahead { batch, .. } => {
                // A value let go by slot is found without its name.
                if slot == NO_SLOT {
                    batch.names.push_str(name);
                }
                batch.ends.push(batch.names.len());
                batch.let_go.push(slot);
            }
        }
    }

    /// Hands the batch so far to the recording thread; unless it is the
    /// `last`, the next one has its room at once, as large as this one's
    /// (grown by doubling, each batch copied its nodes eight times).
    fn send(&mut self, last: bool) {
        if let Recorder::Ahead {
            batch,
            sender,
            given_back,
        } = self
        {
            let room = match last {
                true => Batch::default(),
                false => Batch {
                    nodes: Vec::with_capacity(RECORD_BATCH),
                    at: Vec::with_capacity(RECORD_BATCH),
                    slots: Vec::with_capacity(batch.slots.capacity()),
                    names: String::with_capacity(batch.names.capacity()),
                    ends: Vec::with_capacity(batch.ends.capacity()),
                    let_go: Vec::with_capacity(batch.let_go.capacity()),
                },
            };
            let full = std::mem::replace(batch, room);
            // Refused only when the thread has stopped, by a panic that
            // the scope's end passes on.
            let _ = sender.send(full);
            given_back.try_iter().for_each(drop);
        }
    }
}

impl Drop for Recorder<'_> {
    /// The last batch goes; the channel then closes and the thread ends.
    fn drop(&mut self) {
        self.send(true);
    }
}

impl Records for Vec<InferredNode> {
    fn reserve(&mut self, more: usize) {
        Vec::reserve(self, more);
    }
    fn record(&mut self, node: InferredNode, _: Option<&[u32]>) -> Option<Spent> {
        self.push(node);
        None
    }
}

#[cfg(test)]
impl Level {
    /// The names of the values the level still holds by name.
    pub(super) fn made_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.made.keys().map(|k| k.to_string()).collect();
        names.sort();
        names
    }
}

impl Records for Level {
    /// Room for `more` nodes in each list (see [`Level`]).
    fn reserve(&mut self, more: usize) {
        self.plain.reserve_exact(more);
        if self.fold {
            self.folded_nodes.reserve_exact(more);
        }
    }
    fn let_go(&mut self, name: &str, slot: u32) {
        match slot {
            NO_SLOT => drop(self.made.remove(name)),
            s => drop(self.made_by_slot.remove(&s)),
        }
    }
    /// The pass-through records of function calls define values, not
    /// layers: the graph never holds them.
    fn record(&mut self, node: InferredNode, slots: Option<&[u32]>) -> Option<Spent> {
        (node.op != FUNCTION_OUTPUTS).then(|| self.push(node, slots))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Relu reading `input` (`known` when its shape is) into `output`.
    fn relu(input: &str, known: bool, output: &str) -> InferredNode {
        let fact = |k: bool| {
            let shape = k.then(|| vec![Dim::Known(4)]);
            Fact::tensor(Some(DType::Float32), shape)
        };
        InferredNode {
            name: String::new(),
            op: "Relu".into(),
            domain: String::new(),
            opset: 17,
            attrs: Default::default(),
            inputs: vec![Some((input.into(), fact(known)))],
            outputs: vec![Some((output.into(), fact(known)))],
            has_shape_fn: true,
            bodies: Vec::new(),
            repeats: None,
        }
    }

    /// A level keeps the nodes that run in order, apart from those whose
    /// shapes are unknown (with the reason) and those that fold (every
    /// input constant); unnamed nodes are numbered among the nodes that
    /// run, the unanalysed included, and among the folded apart.
    #[test]
    fn a_level_sorts_its_nodes_without_copying_their_list() {
        let mut folded = HashSet::default();
        folded.insert("w".to_string());
        let mut level = Level::new(folded, true, "p/");
        level.reserve(6);
        for n in [
            relu("x", true, "a"),
            relu("w", true, "w1"),
            relu("a", false, "b"),
            relu("w1", true, "w2"),
            relu("b", false, "c"),
            relu("a", true, "d"),
        ] {
            level.push(n, None);
        }
        let (g, names) = level.finish(vec!["d".into()]);
        let listed = |nodes: &[ir::Node]| nodes.iter().map(|n| n.name.clone()).collect::<Vec<_>>();
        assert_eq!(listed(&g.nodes), ["p/Relu-1", "p/Relu-4"]);
        assert_eq!(listed(&g.folded_nodes), ["p/Relu-1", "p/Relu-2"]);
        assert_eq!(g.folded, 2);
        let unanalysed: Vec<_> = g
            .unanalysed
            .iter()
            .map(|(n, r)| (n.name.as_str(), r.as_str()))
            .collect();
        assert_eq!(
            unanalysed,
            [
                ("p/Relu-2", "the shape of 'a' is unknown"),
                ("p/Relu-3", "the shape of 'b' is unknown"),
            ]
        );
        // What the folded nodes made joins the constants.
        assert!(names.contains("w1") && names.contains("w2"));
        // The folded list was made the level's size at once, not copied
        // (the list of those that run was rebuilt without the unanalysed).
        assert!(g.folded_nodes.capacity() >= 6);
    }

    /// Tensors of a level with the same sizes share one list of them, made
    /// once; other sizes have their own. A report renders each list once.
    #[test]
    fn a_levels_tensors_of_one_size_share_it() {
        let mut level = Level::new(HashSet::default(), false, "");
        let mut wide = relu("a", true, "c");
        for side in [&mut wide.inputs, &mut wide.outputs] {
            side[0].as_mut().unwrap().1.shape = Some(vec![Dim::Known(8)]);
        }
        // x -> a -> b (all of size 4); a -> c (size 8).
        for n in [relu("x", true, "a"), relu("a", true, "b"), wide] {
            level.push(n, None);
        }
        let (g, _) = level.finish(vec!["b".into(), "c".into()]);
        let shape = |n: usize, output: bool| {
            let list = if output {
                &g.nodes[n].outputs
            } else {
                &g.nodes[n].inputs
            };
            list[0].as_ref().unwrap().shape.clone()
        };
        // The graph input x and the outputs a and b: three tensors, one list.
        assert!(Arc::ptr_eq(&shape(0, false), &shape(0, true)));
        assert!(Arc::ptr_eq(&shape(0, true), &shape(1, true)));
        assert_eq!(*shape(2, true), [Dim::Known(8)]);
        assert!(!Arc::ptr_eq(&shape(2, true), &shape(1, true)));
        assert_eq!(level_shapes(&g), 2);
    }

    /// How many distinct size lists a graph's nodes hold.
    fn level_shapes(g: &ir::Graph) -> usize {
        let mut seen = HashSet::default();
        for n in &g.nodes {
            for t in n.inputs.iter().chain(n.outputs.iter()).flatten() {
                seen.insert(Arc::as_ptr(&t.shape) as *const Dim as usize);
            }
        }
        seen.len()
    }

    #[test]
    fn blocks_keep_their_items_in_order_without_growing_past_a_block() {
        let mut list = Blocks::default();
        // Up to one block, the last block grows as a list does.
        for i in 0..3 {
            list.push(i);
        }
        assert_eq!((list.full.len(), list.last.capacity()), (0, 4));
        for i in 3..2500 {
            list.push(i);
        }
        // 2,500 = 2 x 1,024 + 452: two full blocks and one of room 1,024.
        assert_eq!(list.len(), 2500);
        assert_eq!(list.full.len(), 2);
        assert!(
            list.full
                .iter()
                .all(|b| b.len() == 1024 && b.capacity() == 1024)
        );
        assert_eq!((list.last.len(), list.last.capacity()), (452, 1024));
        assert!(list.into_items().eq(0..2500));
    }
}
