//! `c3 annotate`: a copy of a model with its costs on the nodes, for Netron.
//!
//! Every costed node of the main graph gets `metadata_props` entries
//! (`c3.flops`, `c3.mread`, `c3.mwrite`, and with a device `c3.bound_s`,
//! `c3.bound`); the model gets the totals; the graph gets the inferred shapes
//! in `value_info`. The file is rewritten on the protobuf wire format, not
//! re-encoded: protobuf merges repeated fields by concatenation, so each
//! node's new entries are appended inside that node's own bytes and only the
//! length prefixes of the nodes and the graph change; the shapes are
//! appended inside the graph. Every other byte, weights included, is copied
//! as it was. Nodes inside If/Loop/Scan bodies
//! are left as they are (their layers are costed, but not written back).

use std::collections::{HashMap, VecDeque};

use prost::Message;
use prost::encoding::{decode_varint, encode_varint};

use crate::cost::CostReport;
use crate::cost::Roofline;
use crate::error::{Error, Result};
use crate::onnx::OnnxModel;
use crate::onnx::infer::{Inferred, InferredNode};

/// Metadata keys c3 writes start with this; annotating an annotated model
/// replaces them instead of adding a second set.
pub const PREFIX: &str = "c3.";

/// ModelProto.graph
const MODEL_GRAPH: u64 = 7;
/// ModelProto.metadata_props
const MODEL_METADATA: u64 = 14;
/// GraphProto.node
const GRAPH_NODE: u64 = 1;
/// GraphProto.value_info
const GRAPH_VALUE_INFO: u64 = 13;
/// NodeProto.metadata_props
const NODE_METADATA: u64 = 9;
/// StringStringEntryProto.key and .value
const ENTRY_KEY: u64 = 1;
const ENTRY_VALUE: u64 = 2;
const LEN: u64 = 2;

/// What `annotate` wrote, for the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotated {
    pub bytes: Vec<u8>,
    /// Nodes of the main graph that got costs.
    pub nodes: usize,
    /// Inferred shapes added to value_info.
    pub value_info: usize,
}

/// For every layer of the main graph, in order: its name in the report and
/// the index of the ONNX node it comes from. A call of a model-local function
/// is expanded into several layers, all of which come from the call.
pub fn layer_sources(model: &OnnxModel, inferred: &Inferred) -> Vec<(String, usize)> {
    let Some(graph) = model.model.graph.as_ref() else {
        return Vec::new();
    };
    let mut by_output: HashMap<&str, usize> = HashMap::new();
    let mut by_tag: HashMap<String, usize> = HashMap::new();
    for (i, n) in graph.node.iter().enumerate() {
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
    let source = |n: &InferredNode| -> Option<usize> {
        let outputs = n.outputs.iter().flatten().map(|(name, _)| name.as_str());
        for o in outputs.clone() {
            if let Some(&i) = by_output.get(o) {
                return Some(i);
            }
        }
        let first = outputs.clone().next()?;
        first
            .match_indices('/')
            .find_map(|(at, _)| by_tag.get(&first[..=at]).copied())
    };
    // The names the report gives: the node's own, or `OpType-N` counted
    // over the layers that are not folded away, as the cost stage does.
    let mut folded = Default::default();
    let folding = crate::onnx::infer::graph::folding(&inferred.nodes, &mut folded);
    let kept: Vec<&InferredNode> = inferred
        .nodes
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
            inputs: Vec::new(),
            outputs: Vec::new(),
            bodies: Vec::new(),
        })
        .collect();
    crate::ir::name_unnamed(&mut named);
    kept.iter()
        .zip(named)
        .filter_map(|(n, named)| source(n).map(|i| (named.name, i)))
        .collect()
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
}

/// The costs of each ONNX node of the main graph, by node index.
fn node_costs(
    sources: &[(String, usize)],
    report: &CostReport,
    roofline: Option<&Roofline>,
) -> Result<HashMap<usize, NodeCost>> {
    let mut layers: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (i, l) in report.layers.iter().enumerate() {
        layers.entry(l.name.as_str()).or_default().push_back(i);
    }
    let mut out: HashMap<usize, NodeCost> = HashMap::new();
    for (name, node) in sources {
        let Some(i) = layers.get_mut(name.as_str()).and_then(VecDeque::pop_front) else {
            // Not costed: unsupported, or not analysed.
            continue;
        };
        let l = &report.layers[i];
        let c = out.entry(*node).or_default();
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
    }
    e
}

/// Appends a length-delimited field.
fn put_len(out: &mut Vec<u8>, field: u64, payload: &[u8]) {
    encode_varint((field << 3) | LEN, out);
    encode_varint(payload.len() as u64, out);
    out.extend_from_slice(payload);
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

/// A node's bytes with its earlier c3 entries left out and `entries` added.
fn node_bytes(node: &[u8], entries: &[(String, String)]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(node.len() + 48 * entries.len());
    for f in fields(node)? {
        if f.number == NODE_METADATA && f.payload.is_some_and(is_ours) {
            continue;
        }
        out.extend_from_slice(f.raw);
    }
    for (k, v) in entries {
        put_entry(&mut out, NODE_METADATA, k, v);
    }
    Some(out)
}

/// The annotated copy of `model`: `inferred` is its shape inference (with
/// every value), `report` and `roofline` the costs of the same model.
pub fn annotate(
    model: &OnnxModel,
    inferred: &Inferred,
    report: &CostReport,
    roofline: Option<&Roofline>,
) -> Result<Annotated> {
    let sources = layer_sources(model, inferred);
    let costs = node_costs(&sources, report, roofline)?;
    let bytes: &[u8] = &model.bytes;
    // The model's fields before its (first) graph, the graph, the rest.
    let mut head = Vec::with_capacity(1024);
    let mut graph_out: Option<Vec<u8>> = None;
    let mut tail = Vec::with_capacity(1024);
    // Node indices run on across every graph field: protobuf merges them.
    let mut node_index = 0usize;
    for f in fields(bytes).ok_or_else(|| malformed(model))? {
        match (f.number, f.payload) {
            (MODEL_GRAPH, Some(graph)) => {
                // Several graph fields (as `c3 shapes -o` writes) are one
                // graph to protobuf, but some readers (Netron) keep only
                // the last: write their fields as one graph.
                let g = graph_out
                    .get_or_insert_with(|| Vec::with_capacity(bytes.len() + 128 * costs.len()));
                for gf in fields(graph).ok_or_else(|| malformed(model))? {
                    match (gf.number, gf.payload) {
                        (GRAPH_NODE, Some(node)) => {
                            let entries = costs
                                .get(&node_index)
                                .map(|c| node_entries(c, roofline.is_some()))
                                .unwrap_or_default();
                            let nb = node_bytes(node, &entries).ok_or_else(|| malformed(model))?;
                            put_len(g, GRAPH_NODE, &nb);
                            node_index += 1;
                        }
                        _ => g.extend_from_slice(gf.raw),
                    }
                }
            }
            (MODEL_METADATA, Some(entry)) if is_ours(entry) => {}
            _ if graph_out.is_none() => head.extend_from_slice(f.raw),
            _ => tail.extend_from_slice(f.raw),
        }
    }
    let infos = super::write::inferred_value_info(model, inferred);
    let mut g = graph_out.unwrap_or_default();
    for v in &infos {
        put_len(&mut g, GRAPH_VALUE_INFO, &v.encode_to_vec());
    }
    let mut out = head;
    out.reserve(g.len() + tail.len() + 512);
    put_len(&mut out, MODEL_GRAPH, &g);
    out.extend_from_slice(&tail);
    for (k, v) in model_entries(report, roofline) {
        put_entry(&mut out, MODEL_METADATA, &k, &v);
    }
    Ok(Annotated {
        bytes: out,
        nodes: costs.len(),
        value_info: infos.len(),
    })
}

/// The keys Model Explorer may know each layer of the main graph by, by
/// layer name: its ONNX node's id as the ONNX adapter gives it (the node's
/// name, `<node_I>` for the I-th node when unnamed), then the node's first
/// output tensor name.
pub fn node_keys(model: &OnnxModel, inferred: &Inferred) -> HashMap<String, Vec<String>> {
    let Some(graph) = model.model.graph.as_ref() else {
        return HashMap::new();
    };
    let mut out = HashMap::new();
    for (layer, i) in layer_sources(model, inferred) {
        let node = &graph.node[i];
        let mut keys = vec![match node.name.as_deref() {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => format!("<node_{i}>"),
        }];
        if let Some(o) = node.output.iter().find(|o| !o.is_empty())
            && *o != keys[0]
        {
            keys.push(o.clone());
        }
        out.entry(layer).or_insert(keys);
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
        let entries = vec![("c3.flops".to_string(), "2".to_string())];
        let got = node_bytes(&node, &entries).unwrap();
        let mut want = Vec::new();
        put_len(&mut want, 4, b"Conv");
        put_entry(&mut want, NODE_METADATA, "author", "me");
        put_entry(&mut want, NODE_METADATA, "c3.flops", "2");
        assert_eq!(got, want);
    }

    #[test]
    fn malformed_bytes_are_refused_not_walked() {
        // A length of 0x7f bytes with 1 byte left.
        assert!(fields(&[0x0a, 0x7f, 0x00]).is_none());
        // Wire type 3 (a group) is not ONNX.
        assert!(fields(&[0x0b]).is_none());
    }
}
