//! `c3 annotate`: a copy of a model with its costs on the nodes, for Netron.
//!
//! Every costed node, in the main graph or in a body, gets `metadata_props` entries
//! (`c3.flops`, `c3.mread`, `c3.mwrite`; with a profile `c3.measured_s`,
//! on a calibrated device or by a rule's `time:` formula `c3.predicted_s`
//! with `c3.predicted_by`, `rule` or `model`, and for a formula's
//! `c3.time_formula`, where it is written; and with a device `c3.bound_s`,
//! `c3.bound`); the model gets the totals; the graph gets the inferred shapes
//! in `value_info`. The file is rewritten on the protobuf wire format, not
//! re-encoded: protobuf merges repeated fields by concatenation, so each
//! node's new entries are appended inside that node's own bytes and only the
//! length prefixes of the nodes and the graph change; the shapes are
//! appended inside the graph. Every other byte, weights included, is copied
//! as it was. Nodes inside If/Loop/Scan bodies, at any depth, get theirs
//! the same way: the attribute and graph that hold them are rewritten, and
//! only their length prefixes change.

use std::collections::{HashMap, HashSet, VecDeque};

use prost::encoding::decode_varint;

use crate::cost::CostReport;
use crate::cost::Roofline;
use crate::error::{Error, Result};
use crate::onnx::OnnxModel;
use crate::onnx::infer::{Inferred, InferredNode};
use crate::onnx::write::{put_len, put_prefix};
use crate::proto::NodeProto;

/// Metadata keys c3 writes start with this; annotating an annotated model
/// replaces them instead of adding a second set.
pub const PREFIX: &str = "c3.";

/// ModelProto.graph
const MODEL_GRAPH: u64 = 7;
/// ModelProto.metadata_props
const MODEL_METADATA: u64 = 14;
/// GraphProto.node
const GRAPH_NODE: u64 = 1;
/// NodeProto.attribute
const NODE_ATTRIBUTE: u64 = 5;
/// NodeProto.metadata_props
const NODE_METADATA: u64 = 9;
/// AttributeProto.name
const ATTR_NAME: u64 = 1;
/// AttributeProto.g
const ATTR_GRAPH: u64 = 6;
/// StringStringEntryProto.key and .value
const ENTRY_KEY: u64 = 1;
const ENTRY_VALUE: u64 = 2;

/// What `annotate` wrote, for the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotated {
    pub bytes: Vec<u8>,
    /// Nodes that got costs, those inside bodies included.
    pub nodes: usize,
    /// Inferred shapes added to value_info.
    pub value_info: usize,
}

/// The annotated copy as pieces to write one after the other: what c3
/// changed, and between those the model's own bytes where they are kept as
/// they were (its weights), borrowed from the mapped file rather than
/// copied into a second model in memory.
pub(crate) struct Pieces<'m> {
    pub pieces: Vec<std::borrow::Cow<'m, [u8]>>,
    /// Nodes that got costs, those inside bodies included.
    pub nodes: usize,
    /// Inferred shapes added to value_info.
    pub value_info: usize,
}

impl Pieces<'_> {
    /// The copy's pieces, in order.
    pub(crate) fn slices(&self) -> Vec<&[u8]> {
        self.pieces.iter().map(|p| &p[..]).collect()
    }

    /// The copy in one buffer.
    pub(crate) fn joined(self) -> Annotated {
        Annotated {
            bytes: self.pieces.concat(),
            nodes: self.nodes,
            value_info: self.value_info,
        }
    }
}

/// Where a graph's rewritten fields go: a buffer (a body, rewritten whole),
/// or the main graph's pieces.
trait Sink<'a> {
    /// A field kept as it was: tag, length and payload.
    fn kept(&mut self, raw: &'a [u8]);
    /// The buffer new bytes are appended to.
    fn made(&mut self) -> &mut Vec<u8>;
}

impl<'a> Sink<'a> for Vec<u8> {
    fn kept(&mut self, raw: &'a [u8]) {
        self.extend_from_slice(raw);
    }
    fn made(&mut self) -> &mut Vec<u8> {
        self
    }
}

/// The main graph's bytes as pieces: what is made, gathered in a buffer,
/// and a kept field of [`KEPT_APART`] bytes or more borrowed on its own.
struct Gathered<'a> {
    pieces: Vec<std::borrow::Cow<'a, [u8]>>,
    open: Vec<u8>,
}

/// Fields kept as they were from this size on are not copied ([`Gathered`]).
const KEPT_APART: usize = 4096;

impl<'a> Sink<'a> for Gathered<'a> {
    fn kept(&mut self, raw: &'a [u8]) {
        if raw.len() < KEPT_APART {
            self.open.extend_from_slice(raw);
        } else {
            if !self.open.is_empty() {
                self.pieces.push(std::mem::take(&mut self.open).into());
            }
            self.pieces.push(raw.into());
        }
    }
    fn made(&mut self) -> &mut Vec<u8> {
        &mut self.open
    }
}

impl<'a> Gathered<'a> {
    /// The pieces, the last one gathered included, and their length.
    fn finish(mut self) -> (Vec<std::borrow::Cow<'a, [u8]>>, usize) {
        if !self.open.is_empty() {
            self.pieces.push(self.open.into());
        }
        let len = self.pieces.iter().map(|p| p.len()).sum();
        (self.pieces, len)
    }
}

/// Where an ONNX node sits: one step per graph level, each the graph
/// attribute that holds the level (empty for the main graph) and the
/// node's index in it. `[("", 3), ("body", 1)]` is the second node of the
/// `body` of the main graph's fourth node.
pub type NodePath = Vec<(String, usize)>;

/// For every layer, in order: its name in the report and the ONNX node it
/// comes from, in the main graph or inside If/Loop/Scan bodies at any
/// depth. A call of a model-local function is expanded into several
/// layers, all of which come from the call. `fold` is the estimate's
/// (false with `--no-fold`): it decides which nodes the report numbers.
pub fn layer_sources(
    model: &OnnxModel,
    inferred: &Inferred,
    fold: bool,
) -> Vec<(String, NodePath)> {
    let Some(graph) = model.model.graph.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut folded = rustc_hash::FxHashSet::default();
    let level = Level {
        protos: Some(&graph.node),
        at: Vec::new(),
        attr: String::new(),
        prefix: String::new(),
    };
    sources_in(&level, &inferred.nodes, &mut folded, fold, &mut out);
    out
}

/// One graph level as the cost stage names it.
struct Level<'a> {
    /// The level's ONNX nodes; `None` where the owner is no node of the
    /// file (a function call's body): its layers have no node to carry them.
    protos: Option<&'a [NodeProto]>,
    /// The path of the node that owns the level (empty for the main graph).
    at: NodePath,
    /// The graph attribute of the owner that holds the level.
    attr: String,
    /// What the level's layer names start with (`Loop-1/body/`).
    prefix: String,
}

/// The layers of one level and of the bodies under it, named as
/// `infer::graph::graph_of` names them: the folded nodes left out (what
/// they produce joins `folded`, seen by the levels below), the others
/// numbered per op type in execution order, behind the level's prefix.
fn sources_in(
    level: &Level<'_>,
    nodes: &[InferredNode],
    folded: &mut rustc_hash::FxHashSet<String>,
    fold: bool,
    out: &mut Vec<(String, NodePath)>,
) {
    let mut by_output: HashMap<&str, usize> = HashMap::new();
    let mut by_tag: HashMap<String, usize> = HashMap::new();
    for (i, n) in level.protos.unwrap_or_default().iter().enumerate() {
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            by_output.entry(o.as_str()).or_insert(i);
        }
        // A function call's layers carry the call's name (or its first
        // output) and a slash before their own names and outputs.
        let tag = n
            .name
            .clone()
            .filter(|s| !s.is_empty())
            .or_else(|| n.output.iter().find(|o| !o.is_empty()).cloned());
        if let Some(t) = tag {
            by_tag.entry(format!("{t}/")).or_insert(i);
        }
    }
    // The node itself (its index, and whether its outputs are its own)
    // or, for a layer of a function call, the call.
    let source = |n: &InferredNode| -> Option<(usize, bool)> {
        let outputs = n.outputs.iter().flatten().map(|(name, _)| name.as_str());
        for o in outputs.clone() {
            if let Some(&i) = by_output.get(o) {
                return Some((i, true));
            }
        }
        let first = outputs.clone().next()?;
        first
            .match_indices('/')
            .find_map(|(at, _)| by_tag.get(&first[..=at]).map(|&i| (i, false)))
    };
    let folding = if fold {
        crate::onnx::infer::graph::folding(nodes, folded)
    } else {
        vec![false; nodes.len()]
    };
    let kept: Vec<&InferredNode> = nodes
        .iter()
        .zip(folding)
        .filter(|(_, f)| !f)
        .map(|(n, _)| n)
        .collect();
    let mut named: Vec<crate::ir::Node> = kept
        .iter()
        .map(|n| crate::ir::Node {
            name: n.name.clone(),
            op: n.op.clone(),
            domain: String::new(),
            opset: 0,
            attrs: Default::default(),
            inputs: Default::default(),
            outputs: Default::default(),
            bodies: Vec::new(),
        })
        .collect();
    crate::ir::name_unnamed(&mut named);
    for (n, named) in kept.into_iter().zip(named) {
        let name = format!("{}{}", level.prefix, named.name);
        let found = source(n);
        let path = found.map(|(i, _)| {
            let mut p = level.at.clone();
            p.push((level.attr.clone(), i));
            p
        });
        if let Some(p) = &path {
            out.push((name.clone(), p.clone()));
        }
        for b in &n.bodies {
            let Ok(inner) = &b.nodes else { continue };
            // The body's ONNX graph, when the layer is the node itself.
            let protos = match (found, &path) {
                (Some((i, true)), Some(_)) => level.protos.and_then(|ps| {
                    ps[i]
                        .attribute
                        .iter()
                        .find(|a| a.name.as_deref() == Some(b.attr.as_str()))
                        .and_then(|a| a.g.as_deref())
                        .map(|g| g.node.as_slice())
                }),
                _ => None,
            };
            let sub = Level {
                protos,
                at: path.clone().unwrap_or_default(),
                attr: b.attr.clone(),
                prefix: format!("{name}/{}/", b.attr),
            };
            sources_in(&sub, inner, folded, fold, out);
        }
    }
}

/// One node's figures: the sums over the layers that come from it.
#[derive(Debug, Clone, Default, PartialEq)]
struct NodeCost {
    flops: u64,
    mread: u64,
    mwrite: u64,
    compute_s: f64,
    memory_s: f64,
    bound_s: f64,
    /// With a profile: the time of the kernel groups its layers show.
    measured_s: Option<f64>,
    /// On a calibrated device, or by a rule's `time:` formula.
    predicted_s: Option<f64>,
    /// What predicted it ([`crate::cost::LayerTime::predicted_by`]; both,
    /// `rule, model`, for a node whose layers differ), and where the
    /// formulas that did are written.
    predicted_by: Vec<&'static str>,
    time_formulas: Vec<String>,
}

/// The costs of each ONNX node, by where it sits.
fn node_costs(
    sources: &[(String, NodePath)],
    report: &CostReport,
    roofline: Option<&Roofline>,
) -> Result<HashMap<NodePath, NodeCost>> {
    let mut layers: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (i, l) in report.layers.iter().enumerate() {
        layers.entry(l.name.as_str()).or_default().push_back(i);
    }
    let mut out: HashMap<NodePath, NodeCost> = HashMap::new();
    for (name, node) in sources {
        let Some(i) = layers.get_mut(name.as_str()).and_then(VecDeque::pop_front) else {
            // Not costed: unsupported, or not analysed.
            continue;
        };
        let l = &report.layers[i];
        let c = out.entry(node.clone()).or_default();
        let overflow = || Error::Layer {
            layer: l.name.clone(),
            op: l.op.clone(),
            message: "node totals overflow 64 bits".into(),
        };
        c.flops = c.flops.checked_add(l.flops).ok_or_else(overflow)?;
        c.mread = c.mread.checked_add(l.mread).ok_or_else(overflow)?;
        c.mwrite = c.mwrite.checked_add(l.mwrite).ok_or_else(overflow)?;
        if let Some(t) = roofline.and_then(|r| r.layers.get(i)) {
            c.compute_s += t.compute_s;
            c.memory_s += t.memory_s;
            c.bound_s += t.bound_s;
            if let Some(p) = t.predicted_s {
                *c.predicted_s.get_or_insert(0.0) += p;
            }
            if let Some(by) = t.predicted_by().filter(|b| !c.predicted_by.contains(b)) {
                c.predicted_by.push(by);
            }
            if let Some(o) = t.by_rule.as_ref().map(ToString::to_string)
                && !c.time_formulas.contains(&o)
            {
                c.time_formulas.push(o);
            }
        }
        if let Some(m) = report.measured.as_ref().and_then(|m| m.layer_s(i)) {
            *c.measured_s.get_or_insert(0.0) += m;
        }
    }
    Ok(out)
}

/// A time in seconds as metadata: shortest text that reads back the same.
fn seconds(v: f64) -> String {
    format!("{v:e}")
}

fn bound_of(compute_s: f64, memory_s: f64) -> &'static str {
    if compute_s >= memory_s {
        "compute"
    } else {
        "memory"
    }
}

/// The metadata entries of one node.
fn node_entries(c: &NodeCost, device: bool) -> Vec<(String, String)> {
    let mut e = vec![
        (format!("{PREFIX}flops"), c.flops.to_string()),
        (format!("{PREFIX}mread"), c.mread.to_string()),
        (format!("{PREFIX}mwrite"), c.mwrite.to_string()),
    ];
    if device {
        e.push((format!("{PREFIX}bound_s"), seconds(c.bound_s)));
        e.push((
            format!("{PREFIX}bound"),
            bound_of(c.compute_s, c.memory_s).to_string(),
        ));
    }
    for (name, v) in [("measured_s", c.measured_s), ("predicted_s", c.predicted_s)] {
        if let Some(v) = v {
            e.push((format!("{PREFIX}{name}"), seconds(v)));
        }
    }
    for (name, list) in [
        ("predicted_by", c.predicted_by.join(", ")),
        ("time_formula", c.time_formulas.join(", ")),
    ] {
        if !list.is_empty() {
            e.push((format!("{PREFIX}{name}"), list));
        }
    }
    e
}

/// The model's metadata entries: the totals.
fn model_entries(report: &CostReport, roofline: Option<&Roofline>) -> Vec<(String, String)> {
    let t = &report.total;
    let mut e = vec![
        (format!("{PREFIX}flops"), t.flops.to_string()),
        (format!("{PREFIX}mread"), t.mread.to_string()),
        (format!("{PREFIX}mwrite"), t.mwrite.to_string()),
        (format!("{PREFIX}mrw"), t.mrw.to_string()),
        (format!("{PREFIX}layers"), t.layers.to_string()),
        (
            format!("{PREFIX}unsupported"),
            report.unsupported.len().to_string(),
        ),
    ];
    if let Some(r) = roofline {
        e.push((format!("{PREFIX}device"), r.device.key.clone()));
        e.push((format!("{PREFIX}bound_s"), seconds(r.bound_s)));
        e.push((format!("{PREFIX}compute_s"), seconds(r.compute_s)));
        e.push((format!("{PREFIX}memory_s"), seconds(r.memory_s)));
        if let Some(p) = r.predicted_s {
            e.push((format!("{PREFIX}predicted_s"), seconds(p)));
        }
    }
    if let Some(run) = report.measured.as_ref().and_then(|m| m.run_s) {
        e.push((format!("{PREFIX}measured_s"), seconds(run)));
    }
    e
}

/// Appends a `StringStringEntryProto` as field `field`.
fn put_entry(out: &mut Vec<u8>, field: u64, key: &str, value: &str) {
    let mut e = Vec::with_capacity(key.len() + value.len() + 4);
    put_len(&mut e, ENTRY_KEY, key.as_bytes());
    put_len(&mut e, ENTRY_VALUE, value.as_bytes());
    put_len(out, field, &e);
}

/// One field of a message on the wire.
struct Field<'a> {
    number: u64,
    /// The whole field: tag, length and payload.
    raw: &'a [u8],
    /// A length-delimited field's payload.
    payload: Option<&'a [u8]>,
}

/// The fields of a message, in order; `None` where the bytes are malformed.
/// A group (wire types 3 and 4, from proto2) is one field from its start to
/// its end, with no payload: ONNX defines none, so it is a field a newer
/// writer added, kept as it is, as protobuf keeps unknown fields.
fn fields(mut b: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let start = b;
        let tag = decode_varint(&mut b).ok()?;
        let mut payload = None;
        let skip = match tag & 7 {
            0 => {
                decode_varint(&mut b).ok()?;
                0
            }
            1 => 8,
            5 => 4,
            2 => {
                let len = usize::try_from(decode_varint(&mut b).ok()?).ok()?;
                payload = Some(b.get(..len)?);
                len
            }
            3 => {
                past_group(&mut b, tag >> 3)?;
                0
            }
            // An end with no start, wire types 6 and 7: malformed.
            _ => return None,
        };
        b = b.get(skip..)?;
        let used = start.len() - b.len();
        out.push(Field {
            number: tag >> 3,
            raw: &start[..used],
            payload,
        });
    }
    Some(out)
}

/// Moves `b` past the fields of a group and its end, its start (field
/// `number`) read. Groups nested in it are walked in the same loop, not by
/// recursion, and as deep as the decoder allows messages to nest: the
/// model was decoded before it is walked, so this refuses nothing the
/// decoder took.
fn past_group(b: &mut &[u8], number: u64) -> Option<()> {
    // The field numbers of the groups open, the innermost last.
    let mut open = vec![number];
    while let Some(&inner) = open.last() {
        let tag = decode_varint(b).ok()?;
        let skip = match tag & 7 {
            0 => {
                decode_varint(b).ok()?;
                0
            }
            1 => 8,
            5 => 4,
            2 => usize::try_from(decode_varint(b).ok()?).ok()?,
            3 if open.len() < crate::ir::MAX_MESSAGE_DEPTH => {
                open.push(tag >> 3);
                0
            }
            // An end that closes the innermost group; another is malformed.
            4 if tag >> 3 == inner => {
                open.pop();
                0
            }
            _ => return None,
        };
        *b = b.get(skip..)?;
    }
    Some(())
}

/// Whether a `StringStringEntryProto` has a key c3 writes.
fn is_ours(entry: &[u8]) -> bool {
    fields(entry).is_some_and(|fs| {
        fs.iter().any(|f| {
            f.number == ENTRY_KEY && f.payload.is_some_and(|k| k.starts_with(PREFIX.as_bytes()))
        })
    })
}

fn malformed(model: &OnnxModel) -> Error {
    Error::Input {
        path: model.path.clone(),
        message: "the protobuf bytes cannot be walked field by field".into(),
    }
}

/// What the rewrite of a graph needs: each costed node's entries, and the
/// nodes whose bodies hold costed nodes.
struct Rewrite {
    costs: HashMap<NodePath, NodeCost>,
    /// Every path that is a strict prefix of a costed node's path.
    owners: HashSet<NodePath>,
    device: bool,
}

impl Rewrite {
    /// The node fields of one graph field appended to `out`, each rewritten;
    /// `next` numbers the nodes on across the graph fields of one graph.
    fn graph<'a>(
        &self,
        graph: &'a [u8],
        at: &NodePath,
        attr: &str,
        next: &mut usize,
        out: &mut impl Sink<'a>,
    ) -> Option<()> {
        for f in fields(graph)? {
            match (f.number, f.payload) {
                (GRAPH_NODE, Some(node)) => {
                    let mut path = at.clone();
                    path.push((attr.to_string(), *next));
                    *next += 1;
                    put_len(out.made(), GRAPH_NODE, &self.node(node, &path)?);
                }
                _ => out.kept(f.raw),
            }
        }
        Some(())
    }

    /// A node's bytes with its earlier c3 entries left out and its own
    /// added; the graphs of its attributes rewritten where they hold costed
    /// nodes.
    fn node(&self, node: &[u8], path: &NodePath) -> Option<Vec<u8>> {
        let entries = self
            .costs
            .get(path)
            .map(|c| node_entries(c, self.device))
            .unwrap_or_default();
        let owner = self.owners.contains(path);
        let mut out = Vec::with_capacity(node.len() + 48 * entries.len());
        for f in fields(node)? {
            match (f.number, f.payload) {
                (NODE_METADATA, Some(e)) if is_ours(e) => {}
                (NODE_ATTRIBUTE, Some(a)) if owner => {
                    put_len(&mut out, NODE_ATTRIBUTE, &self.attribute(a, path)?);
                }
                _ => out.extend_from_slice(f.raw),
            }
        }
        for (k, v) in &entries {
            put_entry(&mut out, NODE_METADATA, k, v);
        }
        Some(out)
    }

    /// An attribute's bytes with its graph (if any) rewritten; its name may
    /// come after the graph on the wire.
    fn attribute(&self, attr: &[u8], owner: &NodePath) -> Option<Vec<u8>> {
        let fs = fields(attr)?;
        let name = fs
            .iter()
            .filter(|f| f.number == ATTR_NAME)
            .filter_map(|f| f.payload)
            .next_back()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        let mut out = Vec::with_capacity(attr.len() + 256);
        let mut next = 0;
        for f in fs {
            match (f.number, f.payload) {
                (ATTR_GRAPH, Some(g)) => {
                    let mut body = Vec::with_capacity(g.len() + 256);
                    self.graph(g, owner, &name, &mut next, &mut body)?;
                    put_len(&mut out, ATTR_GRAPH, &body);
                }
                _ => out.extend_from_slice(f.raw),
            }
        }
        Some(out)
    }
}

/// The annotated copy of `model`: `inferred` is its shape inference (with
/// every value), `report` and `roofline` the costs of the same model, `fold`
/// false where they were made with `--no-fold`.
pub fn annotate(
    model: &OnnxModel,
    inferred: &Inferred,
    report: &CostReport,
    roofline: Option<&Roofline>,
    fold: bool,
) -> Result<Annotated> {
    let sources = layer_sources(model, inferred, fold);
    let infos = super::write::value_info_fields(model, inferred);
    pieces(model, &sources, infos, report, roofline).map(Pieces::joined)
}

/// [`annotate`]'s copy as pieces to write one after the other, from what it
/// takes of the inference: each layer's node ([`layer_sources`]) and the
/// value_info fields with their count.
pub(crate) fn pieces<'m>(
    model: &'m OnnxModel,
    sources: &[(String, NodePath)],
    (infos, value_info): (Vec<u8>, usize),
    report: &CostReport,
    roofline: Option<&Roofline>,
) -> Result<Pieces<'m>> {
    let costs = node_costs(sources, report, roofline)?;
    let owners = costs
        .keys()
        .flat_map(|p| (1..p.len()).map(|k| p[..k].to_vec()))
        .collect();
    let nodes = costs.len();
    let rewrite = Rewrite {
        costs,
        owners,
        device: roofline.is_some(),
    };
    let bytes: &[u8] = &model.bytes;
    // c3's mark first (an earlier one is left out below, as each of c3's
    // entries is), the model's fields before its (first) graph, the graph,
    // the rest.
    let mut head = crate::output::mark::onnx_mark();
    head.reserve(1024);
    let mut graph: Option<Gathered> = None;
    let mut tail = Vec::with_capacity(1024);
    // Node indices run on across every graph field: protobuf merges them.
    let mut node_index = 0usize;
    for f in fields(bytes).ok_or_else(|| malformed(model))? {
        match (f.number, f.payload) {
            (MODEL_GRAPH, Some(g)) => {
                // Several graph fields (as `c3 shapes -o` writes) are one
                // graph to protobuf, but some readers (Netron) keep only
                // the last: write their fields as one graph.
                let out = graph.get_or_insert_with(|| Gathered {
                    pieces: Vec::new(),
                    open: Vec::with_capacity(128 * nodes),
                });
                rewrite
                    .graph(g, &Vec::new(), "", &mut node_index, out)
                    .ok_or_else(|| malformed(model))?;
            }
            (MODEL_METADATA, Some(entry)) if is_ours(entry) => {}
            _ if graph.is_none() => head.extend_from_slice(f.raw),
            _ => tail.extend_from_slice(f.raw),
        }
    }
    let (graph, graph_len) = graph.map_or((Vec::new(), 0), Gathered::finish);
    // The graph's length prefix, then its pieces and the shapes after them.
    put_prefix(&mut head, MODEL_GRAPH, graph_len + infos.len());
    for (k, v) in model_entries(report, roofline) {
        put_entry(&mut tail, MODEL_METADATA, &k, &v);
    }
    let mut pieces = vec![head.into()];
    pieces.extend(graph);
    pieces.push(infos.into());
    pieces.push(tail.into());
    Ok(Pieces {
        pieces,
        nodes,
        value_info,
    })
}

/// The ONNX node at `path`, with the graph id Model Explorer's ONNX adapter
/// gives the graph that holds it: `None` for the main graph; a body of a
/// main-graph node is `<owner id>/<attribute>` as the adapter names it, and
/// a body deeper down is named by the same rule behind its owner's graph
/// (`<graph id>/<owner id>/<attribute>`), so that no two bodies share an id.
fn node_at<'a>(main: &'a [NodeProto], path: &NodePath) -> Option<(&'a NodeProto, Option<String>)> {
    let mut nodes = main;
    let mut graph: Option<String> = None;
    let mut owner: Option<(&NodeProto, usize)> = None;
    for (attr, i) in path {
        if let Some((o, at)) = owner {
            let g = o
                .attribute
                .iter()
                .find(|a| a.name.as_deref() == Some(attr.as_str()))
                .and_then(|a| a.g.as_deref())?;
            let id = format!("{}/{attr}", node_id(o, at));
            graph = Some(match graph {
                None => id,
                Some(outer) => format!("{outer}/{id}"),
            });
            nodes = &g.node;
        }
        owner = Some((nodes.get(*i)?, *i));
    }
    owner.map(|(n, _)| (n, graph))
}

/// A node's id as the ONNX adapter gives it: its name, `<node_I>` for the
/// I-th node of its graph when unnamed.
fn node_id(node: &NodeProto, index: usize) -> String {
    match node.name.as_deref() {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => format!("<node_{index}>"),
    }
}

/// How Model Explorer may know each layer, by layer name: the id of the
/// graph that holds its ONNX node (`None`: the main graph), then the node's
/// id as the ONNX adapter gives it and the node's first output tensor name.
pub fn node_keys(
    model: &OnnxModel,
    inferred: &Inferred,
    fold: bool,
) -> HashMap<String, (Option<String>, Vec<String>)> {
    let Some(graph) = model.model.graph.as_ref() else {
        return HashMap::new();
    };
    let mut out = HashMap::new();
    for (layer, path) in layer_sources(model, inferred, fold) {
        let Some((node, in_graph)) = node_at(&graph.node, &path) else {
            continue;
        };
        let index = path.last().map_or(0, |(_, i)| *i);
        let mut keys = vec![node_id(node, index)];
        if let Some(o) = node.output.iter().find(|o| !o.is_empty())
            && *o != keys[0]
        {
            keys.push(o.clone());
        }
        out.entry(layer).or_insert((in_graph, keys));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_keeps_its_fields_and_loses_only_earlier_c3_entries() {
        let mut node = Vec::new();
        put_len(&mut node, 4, b"Conv"); // op_type
        put_entry(&mut node, NODE_METADATA, "author", "me");
        put_entry(&mut node, NODE_METADATA, "c3.flops", "1");
        let path: NodePath = vec![(String::new(), 0)];
        let rewrite = Rewrite {
            costs: HashMap::from([(
                path.clone(),
                NodeCost {
                    flops: 2,
                    ..Default::default()
                },
            )]),
            owners: HashSet::new(),
            device: false,
        };
        let got = rewrite.node(&node, &path).unwrap();
        let mut want = Vec::new();
        put_len(&mut want, 4, b"Conv");
        put_entry(&mut want, NODE_METADATA, "author", "me");
        put_entry(&mut want, NODE_METADATA, "c3.flops", "2");
        put_entry(&mut want, NODE_METADATA, "c3.mread", "0");
        put_entry(&mut want, NODE_METADATA, "c3.mwrite", "0");
        assert_eq!(got, want);
    }

    /// A MatMul by a 64 KB weight, annotated twice (the second time over the
    /// first copy): the weight's field is a piece borrowed from the model's
    /// own bytes, not copied, and the pieces written one after the other
    /// are the bytes [`annotate`] joins, which decode to the model with its
    /// costs and shapes, c3's first entries replaced.
    #[test]
    fn kept_weights_are_borrowed_from_the_model_bytes() {
        use crate::onnx::build::{FLOAT, graph, model, node, sized_value, zeros};
        use crate::proto::ModelProto;
        use prost::Message;
        let mut g = graph(
            vec![sized_value("x", FLOAT, &[1, 128])],
            vec![
                node("MatMul", &["x", "w"], &["y"]),
                node("Relu", &["y"], &["z"]),
            ],
            vec![sized_value("z", FLOAT, &[1, 128])],
        );
        g.initializer.push(zeros("w", &[128, 128]));
        let mut bytes = model(g, 17).encode_to_vec();
        for round in 0..2 {
            let m = crate::Model::from_bytes(bytes.clone(), "m.onnx").unwrap();
            let opts = crate::EstimateOptions::default();
            let joined = m.annotate(&opts).unwrap();
            let report = m.estimate(&opts).unwrap().report;
            let onnx = crate::onnx::from_bytes(bytes.clone().into(), "m.onnx").unwrap();
            let inferred = crate::onnx::infer::infer(&onnx, &Default::default()).unwrap();
            let sources = layer_sources(&onnx, &inferred, true);
            let infos = crate::onnx::write::value_info_fields(&onnx, &inferred);
            let pieces = pieces(&onnx, &sources, infos, &report, None).unwrap();
            let own = onnx.bytes.as_ptr_range();
            let borrowed: Vec<usize> = pieces
                .pieces
                .iter()
                .filter(|p| matches!(p, std::borrow::Cow::Borrowed(_)))
                .inspect(|p| assert!(own.contains(&p.as_ptr()), "round {round}"))
                .map(|p| p.len())
                .collect();
            // The weight's field: a tag, a three-byte length and a record
            // of 65,536 bytes of data, its name, type and two dimensions.
            assert_eq!(borrowed.len(), 1, "round {round}");
            assert!(borrowed[0] > 128 * 128 * 4, "{borrowed:?}");
            let written = pieces.slices().concat();
            assert!(written == joined.bytes, "round {round}");
            // From the model's file, into a file: the borrowed piece is
            // copied file to file by the kernel (on Linux), and the copy is
            // the same; so is `shapes -o`'s, the whole model copied so.
            let dir = std::env::temp_dir().join(format!("c3-annotate-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let (model_path, copy_path) = (dir.join("m.onnx"), dir.join("copy.onnx"));
            std::fs::write(&model_path, &bytes).unwrap();
            let (model_path, copy_path) =
                (model_path.to_str().unwrap(), copy_path.to_str().unwrap());
            let out = crate::output::Output::check(copy_path, crate::output::Kind::Onnx, true, &[])
                .unwrap();
            let linux = |n: usize| if cfg!(target_os = "linux") { n } else { 0 };
            crate::output::COPIED.with(|c| c.set(0));
            let from_file = crate::Model::open(model_path).unwrap();
            assert_eq!(from_file.annotate_to(&opts, &out).unwrap(), (2, 1 - round));
            assert!(std::fs::read(copy_path).unwrap() == joined.bytes);
            assert_eq!(crate::output::COPIED.with(|c| c.get()), linux(borrowed[0]));
            crate::output::COPIED.with(|c| c.set(0));
            let shapes = crate::Model::open_onnx(model_path)
                .unwrap()
                .shapes(&Default::default(), &Default::default())
                .unwrap();
            shapes.write_model_to(&out).unwrap();
            assert!(std::fs::read(copy_path).unwrap() == shapes.model_bytes().0);
            // All but c3's mark, which an annotated model starts with.
            let kept = bytes.len() - crate::output::mark::onnx_mark_len(&bytes);
            assert_eq!(crate::output::COPIED.with(|c| c.get()), linux(kept));
            std::fs::remove_dir_all(&dir).unwrap();
            // The second round's model declares `y` already.
            assert_eq!((joined.nodes, joined.value_info), (2, 1 - round));
            // Each node's c3.flops entries, walked on the wire (c3's
            // NodeProto leaves metadata_props out).
            let payload = |b: &[u8], n: u64| -> Vec<Vec<u8>> {
                fields(b)
                    .unwrap()
                    .iter()
                    .filter(|f| f.number == n)
                    .map(|f| f.payload.unwrap().to_vec())
                    .collect()
            };
            let graphs = payload(&written, MODEL_GRAPH);
            assert_eq!(graphs.len(), 1);
            let flops: Vec<Vec<String>> = payload(&graphs[0], GRAPH_NODE)
                .iter()
                .map(|node| {
                    payload(node, NODE_METADATA)
                        .iter()
                        .filter(|e| payload(e, ENTRY_KEY) == [b"c3.flops".to_vec()])
                        .map(|e| String::from_utf8(payload(e, ENTRY_VALUE).remove(0)).unwrap())
                        .collect()
                })
                .collect();
            // MatMul 1x128 by 128x128: 128 * 128 = 16,384 multiply-adds,
            // one FLOP each with fused multiply-adds (the default); Relu
            // one a value. One entry each: the first round's are replaced.
            assert_eq!(flops, [["16384"], ["128"]], "round {round}");
            let back = ModelProto::decode(&written[..]).unwrap().graph.unwrap();
            let infos: Vec<_> = back
                .value_info
                .iter()
                .map(|v| v.name.clone().unwrap())
                .collect();
            assert_eq!(infos, ["y"], "round {round}");
            bytes = written;
        }
    }

    #[test]
    fn malformed_bytes_are_refused_not_walked() {
        // A length of 0x7f bytes with 1 byte left.
        assert!(fields(&[0x0a, 0x7f, 0x00]).is_none());
        // A group that never ends, an end with no start, an end that
        // closes another group than the innermost.
        assert!(fields(&[0x0b]).is_none());
        assert!(fields(&[0x0c]).is_none());
        assert!(fields(&[0x0b, 0x13, 0x0c, 0x14]).is_none());
        // Groups nested deeper than the decoder lets messages nest.
        let deep = crate::ir::MAX_MESSAGE_DEPTH + 1;
        let mut b = vec![0x0b; deep];
        b.extend(vec![0x0c; deep]);
        assert!(fields(&b).is_none());
    }

    /// A group (field 100, holding a varint, a string, a fixed 32-bit
    /// number and a group of its own) is one field, its bytes as they were,
    /// between the fields around it.
    #[test]
    fn a_group_is_one_field_kept_whole() {
        let mut group = vec![0xa3, 0x06]; // field 100, start
        group.extend([0x08, 0x05]); // 1: 5
        group.extend([0x12, 0x03, b'a', b'b', b'c']); // 2: "abc"
        group.extend([0x3b, 0x0d, 1, 2, 3, 4, 0x3c]); // 7 { 1: fixed32 }
        group.extend([0xa4, 0x06]); // field 100, end
        let mut msg = Vec::new();
        put_len(&mut msg, 4, b"Relu");
        msg.extend_from_slice(&group);
        put_len(&mut msg, 3, b"r");
        let fs = fields(&msg).unwrap();
        let got: Vec<(u64, &[u8], bool)> = fs
            .iter()
            .map(|f| (f.number, f.raw, f.payload.is_some()))
            .collect();
        assert_eq!(
            got,
            [
                (4, &msg[..6], true),
                (100, &group[..], false),
                (3, &msg[6 + group.len()..], true)
            ]
        );
        // A node with it gets its entries after it, the group unchanged.
        let path: NodePath = vec![(String::new(), 0)];
        let rewrite = Rewrite {
            costs: HashMap::from([(path.clone(), NodeCost::default())]),
            owners: HashSet::new(),
            device: false,
        };
        let got = rewrite.node(&msg, &path).unwrap();
        assert_eq!(&got[..msg.len()], &msg[..]);
    }
}
