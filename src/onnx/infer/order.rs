//! The model's structure before inference: how many nodes it expands to,
//! the names each subgraph reads from outside, and an order that visits
//! every producer before its consumers.

use super::*;
use std::ops::Range;

use crate::onnx::{Encoded, Outline};

/// The main graph's nodes, taken out of the model by the caller: decoded,
/// or left encoded by the loader ([`crate::onnx::load_encoded`]). Either
/// way each is dropped once inferred.
pub enum Taken {
    Nodes(Vec<NodeProto>),
    Encoded(Encoded),
}

/// Taken nodes ready for ordering: left encoded, with their outline
/// (boxed, so that the two kinds stay of like size).
pub(super) enum Nodes {
    Decoded(Vec<NodeProto>),
    Encoded(Encoded, Box<Outline>),
}

impl Nodes {
    /// `taken`, outlined when left encoded; decoded all at once when a
    /// record is not plainly readable.
    pub(super) fn of(taken: Taken) -> std::result::Result<Nodes, String> {
        let mut e = match taken {
            Taken::Nodes(list) => return Ok(Nodes::Decoded(list)),
            Taken::Encoded(e) => e,
        };
        Ok(match e.outline()? {
            Some(o) => Nodes::Encoded(e, Box::new(o)),
            None => Nodes::Decoded(
                (0..e.len())
                    .map(|i| e.decode(i))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }

    pub(super) fn view(&self) -> View<'_> {
        match self {
            Nodes::Decoded(list) => View::Protos(list),
            Nodes::Encoded(e, o) => View::Outline(e, o),
        }
    }

    /// The nodes handed out in the running `order`; a large graph left
    /// encoded is decoded ahead on a second thread of `threads`, in
    /// batches, while this one infers.
    pub(super) fn queue<'s>(
        self,
        order: &'s [usize],
        threads: &'s std::thread::Scope<'s, '_>,
    ) -> Queue {
        match self {
            Nodes::Decoded(list) => Queue::Decoded(Box::new(in_running_order(list, order))),
            Nodes::Encoded(mut nodes, o) => {
                nodes.keep_room(&o);
                let whole = o.whole;
                if !crate::threads::second_thread(order.len()) {
                    return Queue::Encoded { nodes, whole };
                }
                let (batches, receiver) = std::sync::mpsc::sync_channel(4);
                // The walk hands the nodes back to be freed here, where
                // they were made (a free from another thread costs more).
                let (spent, given_back) = std::sync::mpsc::channel::<Vec<NodeProto>>();
                let ahead = move |(mut nodes, mut whole): (Encoded, Vec<_>)| {
                    for run in order.chunks(AHEAD_BATCH) {
                        let batch: Vec<_> =
                            run.iter().map(|&i| nodes.next(&mut whole, i)).collect();
                        let failed = batch.iter().any(Result::is_err);
                        // A closed queue: the walk stopped at an error.
                        if batches.send(batch).is_err() || failed {
                            return;
                        }
                        given_back.try_iter().for_each(drop);
                    }
                    drop(batches);
                    given_back.iter().for_each(drop);
                };
                // A thread the system refuses leaves each node to be
                // decoded in its turn.
                if let Err((nodes, whole)) = crate::threads::spawn_with(
                    crate::threads::helper(),
                    threads,
                    (nodes, whole),
                    ahead,
                ) {
                    return Queue::Encoded { nodes, whole };
                }
                Queue::Ahead {
                    batches: receiver,
                    batch: Vec::new().into_iter(),
                    spent,
                    done: Vec::with_capacity(AHEAD_BATCH),
                }
            }
        }
    }
}

/// Nodes decoded ahead are handed over this many at a time.
const AHEAD_BATCH: usize = 256;

/// Taken nodes handed out in running order.
pub(super) enum Queue {
    Decoded(Box<dyn Iterator<Item = NodeProto>>),
    /// Each decoded in its turn, but those already decoded whole.
    Encoded {
        nodes: Encoded,
        whole: Vec<(usize, NodeProto)>,
    },
    /// Decoded ahead on another thread.
    Ahead {
        batches: std::sync::mpsc::Receiver<Vec<std::result::Result<NodeProto, String>>>,
        batch: std::vec::IntoIter<std::result::Result<NodeProto, String>>,
        /// Inferred nodes going back to be freed, a batch at a time.
        spent: std::sync::mpsc::Sender<Vec<NodeProto>>,
        done: Vec<NodeProto>,
    },
}

impl Encoded {
    /// Node `i` in its turn: decoded, or taken from those decoded `whole`.
    fn next(
        &mut self,
        whole: &mut [(usize, NodeProto)],
        i: usize,
    ) -> std::result::Result<NodeProto, String> {
        match whole.binary_search_by_key(&i, |(k, _)| *k) {
            Ok(k) => {
                self.release(i);
                Ok(std::mem::take(&mut whole[k].1))
            }
            Err(_) => self.take(i),
        }
    }
}

impl Queue {
    /// Lets go of node `n`, inferred.
    pub(super) fn done(&mut self, n: NodeProto) {
        if let Queue::Ahead { spent, done, .. } = self {
            done.push(n);
            if done.len() == AHEAD_BATCH {
                // A closed channel (the decoder has stopped): the batch is
                // freed here instead. The next batch has its room at once
                // (growing it by doubling copied each node eight times).
                let full = std::mem::replace(done, Vec::with_capacity(AHEAD_BATCH));
                let _ = spent.send(full);
            }
        }
    }

    /// The next node, `i` in file order.
    pub(super) fn next(&mut self, i: usize) -> std::result::Result<NodeProto, String> {
        match self {
            Queue::Decoded(list) => Ok(list.next().unwrap_or_default()),
            Queue::Encoded { nodes, whole } => nodes.next(whole, i),
            Queue::Ahead { batches, batch, .. } => loop {
                if let Some(n) = batch.next() {
                    return n;
                }
                *batch = batches
                    .recv()
                    .map_err(|_| "the nodes' decoder stopped".to_string())?
                    .into_iter();
            },
        }
    }
}

/// A level's nodes as ordering reads them.
pub(super) enum View<'a> {
    Protos(&'a [NodeProto]),
    Outline(&'a Encoded, &'a Outline),
}

/// One of two iterators of the same items.
enum Either<A, B> {
    A(A),
    B(B),
}

impl<T, A: Iterator<Item = T>, B: Iterator<Item = T>> Iterator for Either<A, B> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        match self {
            Either::A(a) => a.next(),
            Either::B(b) => b.next(),
        }
    }
}

impl NodeList for View<'_> {
    fn count(&self) -> usize {
        match self {
            View::Protos(l) => l.len(),
            View::Outline(_, o) => o.len(),
        }
    }
    fn inputs(&self, i: usize) -> impl Iterator<Item = &str> {
        match self {
            View::Protos(l) => Either::A(l.inputs(i)),
            View::Outline(e, o) => Either::B(e.inputs(o, i)),
        }
    }
    fn outputs(&self, i: usize) -> impl Iterator<Item = &str> {
        match self {
            View::Protos(l) => Either::A(l.outputs(i)),
            View::Outline(e, o) => Either::B(e.outputs(o, i)),
        }
    }
    fn graphs(&self, i: usize) -> impl Iterator<Item = &GraphProto> {
        match self {
            View::Protos(l) => Either::A(l.graphs(i)),
            View::Outline(_, o) => Either::B(o.graphs(i)),
        }
    }
    fn op(&self, i: usize) -> (&str, &str) {
        match self {
            View::Protos(l) => l.op(i),
            View::Outline(e, o) => e.op(o, i),
        }
    }
    fn label(&self, i: usize) -> String {
        match self {
            View::Protos(l) => l.label(i),
            View::Outline(e, o) => {
                let (name, op) = e.label(o, i);
                labelled(name, op)
            }
        }
    }
    fn name(&self, i: usize) -> &str {
        match self {
            View::Protos(l) => l.name(i),
            View::Outline(e, o) => e.label(o, i).0,
        }
    }
}

/// A graph level's nodes as ordering reads them: decoded records, or the
/// outline of records left encoded ([`Outline`]).
pub(super) trait NodeList {
    fn count(&self) -> usize;
    fn inputs(&self, i: usize) -> impl Iterator<Item = &str>;
    fn outputs(&self, i: usize) -> impl Iterator<Item = &str>;
    /// The graphs node `i`'s attributes hold.
    fn graphs(&self, i: usize) -> impl Iterator<Item = &GraphProto>;
    /// Its op type and domain, as written.
    fn op(&self, i: usize) -> (&str, &str);
    /// Node `i` as an error names it.
    fn label(&self, i: usize) -> String;
    /// Its name, as written.
    fn name(&self, i: usize) -> &str;
}

impl NodeList for [NodeProto] {
    fn count(&self) -> usize {
        self.len()
    }
    fn inputs(&self, i: usize) -> impl Iterator<Item = &str> {
        self[i].input.iter().map(String::as_str)
    }
    fn outputs(&self, i: usize) -> impl Iterator<Item = &str> {
        self[i].output.iter().map(String::as_str)
    }
    fn graphs(&self, i: usize) -> impl Iterator<Item = &GraphProto> {
        self[i]
            .attribute
            .iter()
            .flat_map(|a| a.g.iter().map(|g| &**g).chain(&a.graphs))
    }
    fn op(&self, i: usize) -> (&str, &str) {
        let n = &self[i];
        (
            n.op_type.as_deref().unwrap_or(""),
            n.domain.as_deref().unwrap_or(""),
        )
    }
    fn label(&self, i: usize) -> String {
        node_label(&self[i])
    }
    fn name(&self, i: usize) -> &str {
        self[i].name.as_deref().unwrap_or("")
    }
}

pub(super) fn node_label(n: &NodeProto) -> String {
    labelled(
        n.name.as_deref().unwrap_or(""),
        n.op_type.as_deref().unwrap_or(""),
    )
}

fn labelled(name: &str, op: &str) -> String {
    if name.is_empty() {
        format!("a {op} node")
    } else {
        format!("node '{name}' ({op})")
    }
}

/// The value names a graph uses but does not define (it takes them from the
/// enclosing scope).
/// `work` counts the nodes looked at, toward the visit budget.
pub(super) fn free_names(g: &GraphProto, depth: usize, work: &Cell<u64>) -> HashSet<String> {
    work.set(work.get().saturating_add(g.node.len() as u64));
    let mut defined: HashSet<&str> = HashSet::default();
    for v in &g.input {
        defined.insert(v.name.as_deref().unwrap_or(""));
    }
    for t in &g.initializer {
        defined.insert(t.name.as_deref().unwrap_or(""));
    }
    for n in &g.node {
        for o in &n.output {
            defined.insert(o);
        }
    }
    let mut free = HashSet::default();
    for n in &g.node {
        let _ = node_uses(n, depth, work, |name, _| {
            if !name.is_empty() && !defined.contains(name) {
                free.insert(name.to_string());
            }
            Ok(())
        });
    }
    free
}

/// Calls `use_name(name, input)` with each name a node reads, its inputs
/// (`input` true, empty names included) then its subgraphs' free names,
/// borrowed (a copy per name per node was a third of the sort's work on a
/// large graph); stops at the first error.
pub(super) fn node_uses(
    n: &NodeProto,
    depth: usize,
    work: &Cell<u64>,
    use_name: impl FnMut(&str, bool) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    uses(std::slice::from_ref(n), 0, depth, work, use_name)
}

/// [`node_uses`] of node `i` of `nodes`.
fn uses(
    nodes: &(impl NodeList + ?Sized),
    i: usize,
    depth: usize,
    work: &Cell<u64>,
    mut use_name: impl FnMut(&str, bool) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    for name in nodes.inputs(i) {
        use_name(name, true)?;
    }
    if depth < MAX_GRAPH_DEPTH {
        for g in nodes.graphs(i) {
            for name in free_names(g, depth + 1, work) {
                use_name(&name, false)?;
            }
        }
    }
    Ok(())
}

/// How many times the graph's nodes read each node output (inputs and
/// subgraphs' captures, as [`node_uses`] lists them): the `k`-th output
/// of node `p` is `counts[starts[p] + k]`, its slot. And what each node's
/// inputs are, as slots: the walk of a large graph keeps its outputs'
/// facts by slot, never looking a name up ([`Slots`]).
#[derive(Default)]
pub(super) struct Readers {
    pub(super) starts: Vec<u32>,
    pub(super) counts: Vec<u32>,
    /// Node `i`'s inputs, in order, from `input_starts[i]`: the slot of
    /// each that a node of this graph makes, [`NO_SLOT`] for the others
    /// (an initializer, a graph input, an enclosing graph's value, none).
    pub(super) input_starts: Vec<u32>,
    pub(super) input_slots: Vec<u32>,
    /// The slots a subgraph reads by name, from outside.
    pub(super) captured: Vec<bool>,
}

/// An input no node of its graph makes.
pub(super) const NO_SLOT: u32 = u32::MAX;

impl Readers {
    /// The slots of node `i`'s inputs ([`Readers::input_slots`]).
    pub(super) fn inputs(&self, i: usize) -> &[u32] {
        let start = self.input_starts[i] as usize;
        let end = self
            .input_starts
            .get(i + 1)
            .map_or(self.input_slots.len(), |&e| e as usize);
        &self.input_slots[start..end]
    }
}

/// What reading a run of nodes found: whether they read only what nodes
/// before them make, and their inputs' slots ([`Readers`]).
struct Reads {
    in_order: bool,
    input_starts: Vec<u32>,
    input_slots: Vec<u32>,
    captured: Vec<u32>,
}

/// A graph's taken nodes in the running `order` (positions in `list`),
/// moved into blocks and handed out from them, each block freed as it
/// empties: the list does not stay whole (168 bytes a node) while the
/// records grow.
pub(super) fn in_running_order(
    mut list: Vec<NodeProto>,
    order: &[usize],
) -> impl Iterator<Item = NodeProto> + use<> {
    let mut blocks = super::graph::Blocks::default();
    for &i in order {
        blocks.push(std::mem::take(&mut list[i]));
    }
    blocks.into_items()
}

/// Node indices in an order where every value is defined before use: the
/// file's order wherever it is already valid (the ready node earliest in the
/// file goes first), so reports list layers as Netron and profilers do.
pub(super) fn topo_order(
    nodes: &(impl NodeList + Sync + ?Sized),
    scope: &Scope,
    depth: usize,
    work: &Cell<u64>,
) -> std::result::Result<(Vec<usize>, Readers), String> {
    order_of(nodes, producers(nodes), scope, depth, work)
}

/// The node that makes each value of a graph, by name: its index and its
/// output's slot, one slot an output (`readers.counts` has one each).
/// Made without the scope, so that a large graph's are made while its
/// initializers' facts are ([`order_of`] then checks the names against
/// the scope).
pub(super) struct Producers<'n> {
    producer: HashMap<&'n str, (u32, u32)>,
    readers: Readers,
    /// The first output (its slot, and the error) whose name an earlier
    /// output has: the table stops there.
    again: Option<(u32, String)>,
    /// The earliest output (slot, node, name) that makes a value of the
    /// scope again, when worked out beside the table ([`Producers::shadowing`]).
    shadowed: Option<Option<(u32, u32, String)>>,
}

impl Producers<'_> {
    /// Works out which output first makes again one of `names`, the
    /// names the scope will hold when the nodes are ordered: on the
    /// thread that made the table, while the other fills the scope.
    pub(super) fn shadowing<'a>(&mut self, names: impl Iterator<Item = &'a str>) {
        self.shadowed =
            Some(first_shadowed(&self.producer, names).map(|(s, i, n)| (s, i, n.to_owned())));
    }
}

/// The earliest output (slot, node, name) `producer` has of `names`.
fn first_shadowed<'a>(
    producer: &HashMap<&str, (u32, u32)>,
    names: impl Iterator<Item = &'a str>,
) -> Option<(u32, u32, &'a str)> {
    names
        .filter_map(|name| producer.get(name).map(|&(i, slot)| (slot, i, name)))
        .min()
}

pub(super) fn producers<'n>(nodes: &'n (impl NodeList + ?Sized)) -> Producers<'n> {
    let len = nodes.count();
    let mut readers = Readers {
        starts: Vec::with_capacity(len),
        counts: Vec::new(),
        input_starts: Vec::new(),
        input_slots: Vec::new(),
        captured: Vec::new(),
    };
    // One entry per output, node and slot as u32 (a file holds at most
    // MAX_MODEL_ITEMS names, checked before decoding): a table sized to
    // the outputs, not to a guess of two a node, is 3 MB instead of 9 for
    // a 111k-node graph.
    let outputs: usize = (0..len).map(|i| nodes.outputs(i).count()).sum();
    let mut producer: HashMap<&str, (u32, u32)> =
        HashMap::with_capacity_and_hasher(outputs, Default::default());
    for i in 0..len {
        let start = readers.counts.len();
        // Within u32: MAX_NODES nodes of MAX_NODE_IO outputs.
        readers.starts.push(start as u32);
        for (k, o) in nodes.outputs(i).enumerate() {
            readers.counts.push(0);
            if o.is_empty() {
                continue;
            }
            let slot = (start + k) as u32;
            if producer.insert(o, (i as u32, slot)).is_some() {
                let again = Some((slot, defined_twice(nodes, i, o)));
                return Producers {
                    producer,
                    readers,
                    again,
                    shadowed: None,
                };
            }
        }
    }
    Producers {
        producer,
        readers,
        again: None,
        shadowed: None,
    }
}

fn defined_twice(nodes: &(impl NodeList + ?Sized), i: usize, name: &str) -> String {
    format!(
        "value '{name}' is defined twice ({} defines it again)",
        nodes.label(i)
    )
}

/// [`topo_order`] from the graph's [`producers`]: a node output named as
/// a value of the scope (an initializer, a graph input) or as an earlier
/// output is an error naming the first such node, in file order.
pub(super) fn order_of<'n>(
    nodes: &'n (impl NodeList + Sync + ?Sized),
    made: Producers<'n>,
    scope: &Scope,
    depth: usize,
    work: &Cell<u64>,
) -> std::result::Result<(Vec<usize>, Readers), String> {
    let Producers {
        producer,
        mut readers,
        again,
        shadowed,
    } = made;
    // The scope's own values (the enclosing scopes' may be shadowed) that
    // a node makes again: the earliest, against the first repeat.
    let shadowed = match &shadowed {
        Some(s) => s.as_ref().map(|(slot, i, name)| (*slot, *i, name.as_str())),
        None => first_shadowed(&producer, scope.vars.names()),
    };
    match (shadowed, again) {
        (Some((slot, i, name)), again) if again.as_ref().is_none_or(|(s, _)| slot < *s) => {
            return Err(defined_twice(nodes, i as usize, name));
        }
        (_, Some((_, message))) => return Err(message),
        _ => {}
    }
    let len = nodes.count();
    // Most files list their nodes in an order that runs: then that order
    // is the answer (the earliest ready node is always the next one), found
    // without building the dependency lists.
    let work_before = work.get();
    // A large graph's nodes are read in two halves.
    let halves = crate::threads::second_thread(len).then_some(len / 2);
    let reads = count_reads(
        nodes,
        &producer,
        scope,
        depth,
        work,
        &mut readers.counts,
        halves,
    )?;
    readers.input_starts = reads.input_starts;
    readers.input_slots = reads.input_slots;
    readers.captured = vec![false; readers.counts.len()];
    for s in reads.captured {
        readers.captured[s as usize] = true;
    }
    if reads.in_order {
        return Ok(((0..len).collect(), readers));
    }
    // The subgraphs looked at above are looked at again: counted once.
    work.set(work_before);
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); len];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); len];
    for (i, deps) in deps.iter_mut().enumerate() {
        each_read(nodes, i, &producer, scope, depth, work, |p, _| {
            if let Some((p, _)) = p {
                deps.push(p);
                users[p].push(i);
            }
        })?;
    }
    let mut pending: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..len)
        .filter(|&i| pending[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(len);
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        order.push(i);
        for &u in &users[i] {
            pending[u] -= 1;
            if pending[u] == 0 {
                ready.push(std::cmp::Reverse(u));
            }
        }
    }
    if order.len() != len {
        let stuck = (0..len).find(|&i| pending[i] > 0).unwrap_or(0);
        return Err(format!(
            "the graph has a cycle through {}",
            nodes.label(stuck)
        ));
    }
    Ok((order, readers))
}

/// Counts each node output's readers into `counts` (one slot an output);
/// whether every node reads only outputs of nodes before it in the file,
/// and each node's inputs as slots. In one pass, or in two halves split at
/// `mid` on two threads, each counting apart: the sums, the answers and
/// the first error in file order are those of one pass.
fn count_reads(
    nodes: &(impl NodeList + Sync + ?Sized),
    producer: &HashMap<&str, (u32, u32)>,
    scope: &Scope,
    depth: usize,
    work: &Cell<u64>,
    counts: &mut [u32],
    mid: Option<usize>,
) -> std::result::Result<Reads, String> {
    let count = |range: Range<usize>, counts: &mut [u32], work: &Cell<u64>| {
        let mut reads = Reads {
            in_order: true,
            input_starts: Vec::with_capacity(range.len()),
            // Two inputs a node, most often.
            input_slots: Vec::with_capacity(2 * range.len()),
            captured: Vec::new(),
        };
        for i in range {
            reads.input_starts.push(reads.input_slots.len() as u32);
            each_read(nodes, i, producer, scope, depth, work, |made, input| {
                if let Some((p, slot)) = made {
                    reads.in_order &= p < i;
                    counts[slot] += 1;
                    if !input {
                        reads.captured.push(slot as u32);
                    }
                }
                if input {
                    reads
                        .input_slots
                        .push(made.map_or(NO_SLOT, |(_, slot)| slot as u32));
                }
            })?;
        }
        Ok(reads)
    };
    let len = nodes.count();
    let Some(mid) = mid else {
        return count(0..len, counts, work);
    };
    let slots = counts.len();
    let (first, (second, second_counts, second_work)) = crate::threads::both(
        || count(0..mid, counts, work),
        || {
            let work = Cell::new(0);
            let mut counts = vec![0u32; slots];
            let reads = count(mid..len, &mut counts, &work);
            (reads, counts, work.get())
        },
    );
    // The first half's error first, as one pass would have met it.
    let mut reads = first?;
    let second = second?;
    for (total, more) in counts.iter_mut().zip(second_counts) {
        *total += more;
    }
    work.set(work.get() + second_work);
    reads.in_order &= second.in_order;
    let before = reads.input_slots.len() as u32;
    reads
        .input_starts
        .extend(second.input_starts.iter().map(|s| s + before));
    reads.input_slots.extend(second.input_slots);
    reads.captured.extend(second.captured);
    Ok(reads)
}

/// Calls `read(made, input)` with each name node `i` reads ([`uses`]):
/// `made` is the node of this graph that makes it and its output slot of
/// all the graph's outputs, if one does; `input` says whether the name is
/// one of the node's inputs (an empty one included) or a subgraph's
/// capture. A value nothing makes, here or in an enclosing scope, is an
/// error naming its reader.
fn each_read(
    nodes: &(impl NodeList + ?Sized),
    i: usize,
    producer: &HashMap<&str, (u32, u32)>,
    scope: &Scope,
    depth: usize,
    work: &Cell<u64>,
    mut read: impl FnMut(Option<(usize, usize)>, bool),
) -> std::result::Result<(), String> {
    uses(nodes, i, depth, work, |name, input| {
        if name.is_empty() {
            read(None, input);
            return Ok(());
        }
        match producer.get(name) {
            Some(&(p, slot)) => {
                read(Some((p as usize, slot as usize)), input);
                Ok(())
            }
            None if scope.get(name).is_some() => {
                read(None, input);
                Ok(())
            }
            None => Err(format!(
                "{} reads '{name}', which nothing produces",
                nodes.label(i)
            )),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading a large graph's nodes in two halves counts what one pass
    /// counts: the readers of every output, whether the file's order runs,
    /// the subgraph work, and the first error in file order, wherever the
    /// split falls.
    #[test]
    fn reads_counted_in_halves_are_those_of_one_pass() {
        const N: usize = 6000;
        let chain = |i: usize| NodeProto {
            name: Some(format!("n{i}")),
            op_type: Some("Add".into()),
            // Node i reads the one before it, the one 50 before, and `w`.
            input: vec![
                if i == 0 {
                    "x".into()
                } else {
                    format!("v{}", i - 1)
                },
                if i < 50 {
                    "x".into()
                } else {
                    format!("v{}", i - 50)
                },
                "w".into(),
            ],
            output: vec![format!("v{i}"), String::new()],
            ..NodeProto::default()
        };
        let base: Vec<NodeProto> = (0..N).map(chain).collect();
        // A node with a body that reads `v10` from outside (work is
        // charged for the body's nodes).
        let with_body = |mut nodes: Vec<NodeProto>, at: usize| {
            nodes[at].attribute.push(AttributeProto {
                name: Some("then_branch".into()),
                g: Some(Box::new(GraphProto {
                    node: vec![NodeProto {
                        input: vec!["v10".into()],
                        output: vec!["inner".into()],
                        ..NodeProto::default()
                    }],
                    ..GraphProto::default()
                })),
                ..AttributeProto::default()
            });
            nodes
        };
        let reading = |mut nodes: Vec<NodeProto>, at: usize, name: &str| {
            nodes[at].input[2] = name.into();
            nodes
        };
        let cases: Vec<(&str, Vec<NodeProto>)> = vec![
            ("in file order", with_body(base.clone(), 4000)),
            // Node 4500 reads what node 5000 makes: the order must be made.
            (
                "out of order in the second half",
                reading(base.clone(), 4500, "v5000"),
            ),
            (
                "out of order in the first half",
                reading(base.clone(), 100, "v200"),
            ),
            (
                "an unknown value in the second half",
                reading(base.clone(), 5000, "nothing"),
            ),
            (
                "unknown values in both halves",
                reading(reading(base.clone(), 5000, "nothing"), 20, "none"),
            ),
        ];
        let mut vars = Vars::default();
        vars.insert("x".into(), crate::shape::Fact::unknown());
        vars.insert("w".into(), crate::shape::Fact::unknown());
        let scope = Scope { vars, parent: None };
        for (what, nodes) in &cases {
            let nodes = &nodes[..];
            let mut producer: HashMap<&str, (u32, u32)> = HashMap::default();
            for (i, n) in nodes.iter().enumerate() {
                producer.insert(&n.output[0], (i as u32, 2 * i as u32));
            }
            let run = |mid: Option<usize>| {
                let work = Cell::new(7);
                let mut counts = vec![0u32; 2 * N];
                let r = count_reads(nodes, &producer, &scope, 0, &work, &mut counts, mid)
                    .map(|r| (r.in_order, r.input_starts, r.input_slots, r.captured));
                (r, counts, work.get())
            };
            let one = run(None);
            for mid in [1, N / 2, 4999, N - 1] {
                let (answer, counts, work) = run(Some(mid));
                assert_eq!(answer, one.0, "{what}, split at {mid}");
                // After an error nothing else is used (one pass stops there).
                if answer.is_ok() {
                    assert!(counts == one.1, "{what}, split at {mid}: counts differ");
                    assert_eq!(work, one.2, "{what}, split at {mid}");
                }
            }
            match *what {
                "in file order" => {
                    let (in_order, starts, slots, captured) = one.0.clone().unwrap();
                    assert!(in_order);
                    // v10: read by node 11, by node 60, and by the body.
                    assert_eq!(one.1[20], 3);
                    // Node i's output 0 is slot 2i. Three inputs a node,
                    // each listed: node 11 reads v10, x and w (made by no
                    // node); node 60 reads v59, v10 and w.
                    assert_eq!(starts.len(), N);
                    assert_eq!(starts[11], 33);
                    assert_eq!(slots.len(), 3 * N);
                    assert_eq!(slots[33..36], [20, NO_SLOT, NO_SLOT]);
                    assert_eq!(slots[180..183], [118, 20, NO_SLOT]);
                    // The body reads v10 from outside.
                    assert_eq!(captured, [20]);
                    // The body's one node, on top of the 7 before.
                    assert_eq!(one.2, 8);
                }
                "an unknown value in the second half" => {
                    assert_eq!(
                        one.0,
                        Err("node 'n5000' (Add) reads 'nothing', which nothing produces".into())
                    );
                }
                "unknown values in both halves" => {
                    assert_eq!(
                        one.0,
                        Err("node 'n20' (Add) reads 'none', which nothing produces".into())
                    );
                }
                _ => assert_eq!(one.0.as_ref().map(|r| r.0), Ok(false), "{what}"),
            }
        }
    }

    /// A node output named like a value of the scope or like an earlier
    /// output is an error naming the first such node in file order,
    /// whichever kind comes first: the scope's names are checked against
    /// the producers after they are listed, not as they are.
    #[test]
    fn the_first_value_defined_twice_is_the_one_named() {
        let node = |name: &str, outputs: &[&str]| NodeProto {
            name: Some(name.into()),
            op_type: Some("Relu".into()),
            input: vec!["x".into()],
            output: outputs.iter().map(|o| o.to_string()).collect(),
            ..NodeProto::default()
        };
        let mut vars = Vars::default();
        vars.insert("x".into(), crate::shape::Fact::unknown());
        vars.insert("w".into(), crate::shape::Fact::unknown());
        let scope = Scope { vars, parent: None };
        let first_error = |nodes: &[NodeProto]| {
            topo_order(nodes, &scope, 0, &Cell::new(0))
                .err()
                .expect("refused")
        };
        // n1 makes `w`, an initializer, before n3 makes `a` again.
        let shadow_first = [
            node("n0", &["a"]),
            node("n1", &["b", "w"]),
            node("n2", &["c"]),
            node("n3", &["a"]),
        ];
        assert_eq!(
            first_error(&shadow_first),
            "value 'w' is defined twice (node 'n1' (Relu) defines it again)"
        );
        // n2 makes `a` again before n3 makes `x`, a graph input.
        let repeat_first = [
            node("n0", &["a"]),
            node("n1", &["b"]),
            node("n2", &["a"]),
            node("n3", &["x"]),
        ];
        assert_eq!(
            first_error(&repeat_first),
            "value 'a' is defined twice (node 'n2' (Relu) defines it again)"
        );
        // Within one node, its outputs in order: `w` before `a`, then `a`
        // before `w`.
        let one_node = [node("n0", &["a"]), node("n1", &["w", "a"])];
        assert_eq!(
            first_error(&one_node),
            "value 'w' is defined twice (node 'n1' (Relu) defines it again)"
        );
        let one_node = [node("n0", &["a"]), node("n1", &["a", "w"])];
        assert_eq!(
            first_error(&one_node),
            "value 'a' is defined twice (node 'n1' (Relu) defines it again)"
        );
        // Nothing named twice: ordered.
        let fine = [node("n0", &["a"]), node("n1", &["b"])];
        let (order, readers) = topo_order(&fine[..], &scope, 0, &Cell::new(0)).unwrap();
        assert_eq!(order, [0, 1]);
        assert_eq!(readers.starts, [0, 1]);
    }

    #[test]
    fn taken_nodes_are_handed_out_in_running_order() {
        let node = |i: usize| NodeProto {
            name: Some(format!("n{i}")),
            ..NodeProto::default()
        };
        // 2,500 nodes (three blocks) run in reverse file order.
        let list: Vec<NodeProto> = (0..2500).map(node).collect();
        let order: Vec<usize> = (0..2500).rev().collect();
        let names: Vec<String> = in_running_order(list, &order)
            .map(|n| n.name.unwrap())
            .collect();
        let expected: Vec<String> = order.iter().map(|i| format!("n{i}")).collect();
        assert_eq!(names, expected);
    }
}
