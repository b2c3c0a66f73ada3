//! A look at a model's protobuf wire format before it is decoded: decoding
//! allocates every record, so a file of millions of tiny records (nodes,
//! initializers, value_info entries, dimensions, names, strings) must be
//! refused by counting them first. Only messages that hold records are
//! entered; weights and other payloads are skipped by their length. Every
//! limit here is a named constant in [`crate::ir`] and docs/limits.md.

use super::encoded::Blocks;

use crate::ir::{
    DECODE_BASE_BYTES, DECODE_BYTES_PER_BYTE, MAX_ATTRIBUTE_VALUES, MAX_DECLARED_DIMS,
    MAX_MESSAGE_DEPTH, MAX_MODEL_ITEMS, MAX_NODE_ATTRIBUTES, MAX_NODE_IO, MAX_NODES,
    MAX_STRING_ELEMENTS, MAX_TENSORS, MAX_VALUE_INFOS, VALUE_RECORDS_BASE, VALUE_RECORDS_PER_NAME,
};

/// A varint read as prost reads it, moving `b` past it; a one-byte varint
/// (most keys and lengths) without a call.
#[inline(always)]
fn decode_varint(b: &mut &[u8]) -> Result<u64, prost::DecodeError> {
    match b.first() {
        Some(&first) if first < 0x80 => {
            *b = &b[1..];
            Ok(u64::from(first))
        }
        _ => prost::encoding::decode_varint(b),
    }
}

/// The messages that hold records.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Model,
    Graph,
    Node,
    Attribute,
    Function,
    Tensor,
    Sparse,
    ValueInfo,
    Type,
    TensorType,
    Shape,
    /// `TypeProto.Sequence` / `Optional` (field 1) and `Map` (field 2).
    Elem,
    Map,
}

/// How a field is counted.
enum Field {
    /// A message to enter.
    Enter(Kind),
    /// A repeated string or bytes entry.
    Name,
    /// A repeated message c3 decodes but never enters (opset imports).
    Item,
    /// A repeated varint number (packed or not).
    Varints,
    /// A repeated 4-byte number (packed or not).
    Fixed32,
    /// Anything else: skipped.
    Skip,
}

fn field(kind: Kind, f: u64) -> Field {
    use Field::*;
    use Kind::*;
    match (kind, f) {
        (Model, 7) => Enter(Graph),
        (Model, 8) | (Function, 9) => Item,
        (Model, 25) => Enter(Function),
        (Graph, 1) | (Function, 7) => Enter(Node),
        (Graph, 5 | 15) => Enter(if f == 5 { Tensor } else { Sparse }),
        (Graph, 11..=13) => Enter(ValueInfo),
        (Node, 1 | 2) | (Function, 4..=6) => Name,
        (Node, 5) | (Function, 11) => Enter(Attribute),
        (Attribute, 5 | 10) => Enter(Tensor),
        (Attribute, 6 | 11) => Enter(Graph),
        (Attribute, 22) => Enter(Sparse),
        (Attribute, 14) => Enter(Type),
        (Attribute, 7) => Fixed32,
        (Attribute, 8) => Varints,
        (Attribute, 9) => Name,
        (Tensor, 1) | (Sparse, 3) => Varints,
        (Tensor, 6) => Name,
        (Sparse, 1 | 2) => Enter(Tensor),
        (ValueInfo, 2) | (Elem, 1) | (Map, 2) => Enter(Type),
        (Type, 1 | 8) => Enter(TensorType),
        (Type, 4 | 9) => Enter(Elem),
        (Type, 5) => Enter(Map),
        (TensorType, 2) => Enter(Shape),
        (Shape, 1) => Skip, // counted as a dimension below
        _ => Skip,
    }
}

/// Totals over the whole model.
#[derive(Clone, Copy, Default)]
pub(super) struct Totals<'a> {
    /// The main graph's node records when the skim set them aside
    /// ([`super::read::skim_aside_then`]): counted where the main graph is
    /// entered, before its other fields, where a writer puts them.
    aside: Option<&'a Blocks>,
    nodes: usize,
    /// Records of the main graph's own node and initializer lists.
    main: MainGraph,
    tensors: usize,
    value_infos: usize,
    /// Records of graphs that describe values (initializers, inputs,
    /// outputs, value_info), and the names nodes read and write.
    value_records: usize,
    node_names: usize,
    dims: usize,
    strings: usize,
    items: usize,
    /// What decoding allocates, estimated from the records' sizes.
    decoded: usize,
}

/// The main graph's node records' share of the totals, counted on their
/// own ([`count_node`]) while the skim reads on.
pub(super) type Counted = Totals<'static>;

impl Totals<'_> {
    /// The main graph's list sizes counted so far.
    pub(super) fn main(&self) -> MainGraph {
        self.main
    }

    /// Whether the records of values counted so far could be within their
    /// limit once `aside` more bytes of node records are counted (each name
    /// takes two bytes at least): when not, the model is refused once they
    /// are, and need not be decoded before.
    pub(super) fn values_may_fit(&self, aside: usize) -> bool {
        let names = self.node_names.saturating_add(aside / 2);
        self.value_records
            <= VALUE_RECORDS_BASE.saturating_add(names.saturating_mul(VALUE_RECORDS_PER_NAME))
    }

    /// Adds counts made apart (by [`count_node`]).
    fn absorb(&mut self, c: &Counted) {
        self.nodes += c.nodes;
        self.main.nodes += c.main.nodes;
        self.main.initializers += c.main.initializers;
        self.tensors += c.tensors;
        self.value_infos += c.value_infos;
        self.value_records += c.value_records;
        self.node_names += c.node_names;
        self.dims += c.dims;
        self.strings += c.strings;
        self.items += c.items;
        self.decoded += c.decoded;
    }
}

/// Bytes a decoded record of `kind` takes (its struct; names and lists are
/// added where they are counted).
fn record_size(kind: Kind) -> usize {
    use crate::proto::*;
    use std::mem::size_of;
    match kind {
        Kind::Model => size_of::<ModelProto>(),
        Kind::Graph => size_of::<GraphProto>(),
        Kind::Node => size_of::<NodeProto>(),
        Kind::Attribute => size_of::<AttributeProto>(),
        Kind::Function => size_of::<FunctionProto>(),
        Kind::Tensor => size_of::<TensorProto>(),
        Kind::Sparse => size_of::<SparseTensorProto>(),
        Kind::ValueInfo => size_of::<ValueInfoProto>(),
        Kind::Type => size_of::<TypeProto>(),
        Kind::TensorType => size_of::<TensorTypeProto>(),
        Kind::Shape => size_of::<TensorShapeProto>(),
        Kind::Elem => size_of::<ElemTypeProto>(),
        Kind::Map => size_of::<MapTypeProto>(),
    }
}

/// How many records the main graph's node and initializer lists hold, as
/// [`check`] counted them: the decoder's lists can be made that size at
/// once instead of doubling (and copying) their way to it.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct MainGraph {
    pub nodes: usize,
    pub initializers: usize,
}

/// Checks every count of a serialized model against its limit, before it
/// is decoded. Malformed bytes end the look where they start: the decoder
/// reports them. `file_len` is the size of the file `bytes` were read from
/// (the decoding budget grows with it; `bytes` may have its large tensor
/// payloads left out).
pub fn check(bytes: &[u8], aside: Option<&Blocks>, file_len: usize) -> Result<MainGraph, String> {
    let mut t = Totals {
        aside,
        ..Totals::default()
    };
    scan(bytes, Kind::Model, 0, &mut t)?;
    // A model whose graph the look never entered.
    main_nodes(&mut t)?;
    within_limits(&t, file_len)?;
    values_within_limits(&t)
}

/// What [`check`] counts of a copy whose main graph's node records were
/// set aside ([`super::read::skim_aside_then`]), those records left out; `None`
/// when the copy alone has a fault or breaks a limit. [`check_counted`]
/// then adds the records.
pub(super) fn count_copy(bytes: &[u8], file_len: usize) -> Option<Counted> {
    let mut t = Counted::default();
    scan(bytes, Kind::Model, 0, &mut t).ok()?;
    within_limits(&t, file_len).ok()?;
    Some(t)
}

/// [`check`] of a copy [`count_copy`] counted, with its main graph's node
/// records (`aside`): the same answer, as the counts add up and the
/// copy's own scan found no fault.
pub(super) fn check_counted(
    copy: Counted,
    aside: Option<&Blocks>,
    file_len: usize,
) -> Result<MainGraph, String> {
    let mut t: Totals<'_> = copy;
    t.aside = aside;
    main_nodes(&mut t)?;
    within_limits(&t, file_len)?;
    values_within_limits(&t)
}

/// The records that describe values against the names nodes read and
/// write: a graph's values are its nodes', so a file of a million unused
/// initializers or value_info entries beside one node (a gigabyte once
/// decoded and inferred) is refused before it is decoded. Only on the
/// whole model's totals (a copy without its node records has no names).
fn values_within_limits(t: &Totals<'_>) -> Result<MainGraph, String> {
    let allowed =
        VALUE_RECORDS_BASE.saturating_add(t.node_names.saturating_mul(VALUE_RECORDS_PER_NAME));
    if t.value_records > allowed {
        return Err(format!(
            "the model holds {} initializers, graph inputs, outputs and value_info entries for {} names its nodes read and write, which exceeds the limit of {allowed} entries ({VALUE_RECORDS_BASE} + {VALUE_RECORDS_PER_NAME} per name: VALUE_RECORDS_BASE, VALUE_RECORDS_PER_NAME)",
            t.value_records, t.node_names
        ));
    }
    Ok(t.main)
}

/// Each total against its limit: the first broken, or the main graph's
/// list sizes.
fn within_limits(t: &Totals<'_>, file_len: usize) -> Result<MainGraph, String> {
    let over = |what: &str, n: usize, limit: usize, name: &str| {
        let unit = what.split([' ', ',']).next().unwrap_or(what);
        let unit = if unit == "graph" { "entries" } else { unit };
        Err(format!(
            "the model holds {n} {what}, which exceeds the limit of {limit} {unit} ({name})"
        ))
    };
    if t.nodes > MAX_NODES {
        return over(
            "nodes (main graph, subgraphs and functions together)",
            t.nodes,
            MAX_NODES,
            "MAX_NODES",
        );
    }
    if t.tensors > MAX_TENSORS {
        return over(
            "tensors (initializers and attribute tensors together)",
            t.tensors,
            MAX_TENSORS,
            "MAX_TENSORS",
        );
    }
    if t.value_infos > MAX_VALUE_INFOS {
        return over(
            "graph inputs, outputs and value_info entries",
            t.value_infos,
            MAX_VALUE_INFOS,
            "MAX_VALUE_INFOS",
        );
    }
    if t.dims > MAX_DECLARED_DIMS {
        return over(
            "declared dimensions",
            t.dims,
            MAX_DECLARED_DIMS,
            "MAX_DECLARED_DIMS",
        );
    }
    if t.strings > MAX_STRING_ELEMENTS {
        return over(
            "string tensor elements",
            t.strings,
            MAX_STRING_ELEMENTS,
            "MAX_STRING_ELEMENTS",
        );
    }
    if t.items > MAX_MODEL_ITEMS {
        return over(
            "records (messages, names and list entries together)",
            t.items,
            MAX_MODEL_ITEMS,
            "MAX_MODEL_ITEMS",
        );
    }
    let budget = DECODE_BASE_BYTES.saturating_add(file_len.saturating_mul(DECODE_BYTES_PER_BYTE));
    if t.decoded > budget {
        return Err(format!(
            "decoding the model's {} records would take about {} MB, more than the limit of {} MB ({DECODE_BASE_BYTES} bytes + {DECODE_BYTES_PER_BYTE} per byte of the file: DECODE_BASE_BYTES, DECODE_BYTES_PER_BYTE)",
            t.items,
            t.decoded >> 20,
            budget >> 20
        ));
    }
    Ok(t.main)
}

/// Elements of a packed run of varints.
fn varints_in(b: &[u8]) -> usize {
    b.iter().filter(|&&x| x & 0x80 == 0).count()
}

/// The first string field `f` of a message, for naming it in an error.
fn string_field(b: &[u8], f: u64) -> String {
    fields(b)
        .map_while(|field| field)
        .find(|w| w.number == f && w.kind == 2)
        .map(|w| String::from_utf8_lossy(&w.payload[..w.payload.len().min(200)]).into_owned())
        .unwrap_or_default()
}

/// One field of a message: its number and its value's bytes (a varint's or
/// a fixed number's bytes, or a length-delimited payload).
pub(super) struct WireField<'a> {
    pub(super) number: u64,
    /// 0 varint, 1 fixed 64-bit, 2 length-delimited, 5 fixed 32-bit.
    pub(super) kind: u64,
    pub(super) payload: &'a [u8],
}

/// The fields of a message in order; `None` at anything a plain reader
/// does not take (groups, truncated bytes): the caller leaves such a
/// message to the decoder, which names the fault.
pub(super) fn fields(msg: &[u8]) -> Fields<'_> {
    Fields { msg, at: 0 }
}

pub(super) struct Fields<'a> {
    msg: &'a [u8],
    /// Where the next field starts; past the end once one failed.
    at: usize,
}

impl<'a> Fields<'a> {
    /// The varint at `at`, moving past it (most keys and lengths are one
    /// byte).
    #[inline(always)]
    fn varint(&mut self) -> Option<u64> {
        let mut rest = self.msg.get(self.at..)?;
        let before = rest.len();
        let v = decode_varint(&mut rest).ok()?;
        self.at += before - rest.len();
        Some(v)
    }

    #[inline(always)]
    fn field(&mut self) -> Option<WireField<'a>> {
        let key = self.varint()?;
        let payload_start;
        match key & 7 {
            0 => {
                payload_start = self.at;
                self.varint()?;
            }
            1 | 5 => {
                payload_start = self.at;
                self.at += if key & 7 == 1 { 8 } else { 4 };
            }
            2 => {
                let len = usize::try_from(self.varint()?).ok()?;
                payload_start = self.at;
                self.at = self.at.checked_add(len)?;
            }
            _ => return None,
        }
        let payload = self.msg.get(payload_start..self.at)?;
        Some(WireField {
            number: key >> 3,
            kind: key & 7,
            payload,
        })
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Option<WireField<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.msg.len() {
            return None;
        }
        let f = self.field();
        if f.is_none() {
            self.at = usize::MAX;
        }
        Some(f)
    }
}

/// Counts the main graph's node records set aside, once (or adds what was
/// counted of them while the skim read on).
fn main_nodes(t: &mut Totals) -> Result<(), String> {
    let Some(blocks) = t.aside.take() else {
        return Ok(());
    };
    if let Some(counted) = blocks.counted() {
        t.absorb(counted.as_ref().map_err(String::clone)?);
        return Ok(());
    }
    for record in blocks.records() {
        count_node(record, t)?;
    }
    Ok(())
}

/// Counts one of the main graph's node records (without its key and
/// length) into `t`.
pub(super) fn count_node(record: &[u8], t: &mut Totals) -> Result<(), String> {
    enter(t, Kind::Graph, 1, Kind::Node, 1);
    scan(record, Kind::Node, 2, t)
}

/// Counts a message of kind `child` in field `f` of a `kind` message at
/// `depth`, before its own fields are.
fn enter(t: &mut Totals, kind: Kind, depth: usize, child: Kind, f: u64) {
    t.items += 1;
    t.decoded += record_size(child);
    // The model's graph is entered at depth 1.
    if kind == Kind::Graph && depth == 1 {
        match child {
            Kind::Node => t.main.nodes += 1,
            Kind::Tensor if f == 5 => t.main.initializers += 1,
            _ => {}
        }
    }
    match child {
        Kind::Node => t.nodes += 1,
        Kind::Tensor | Kind::Sparse if kind != Kind::Sparse => t.tensors += 1,
        Kind::ValueInfo => t.value_infos += 1,
        _ => {}
    }
    if kind == Kind::Graph && matches!(child, Kind::Tensor | Kind::Sparse | Kind::ValueInfo) {
        t.value_records += 1;
    }
}

fn scan(mut b: &[u8], kind: Kind, depth: usize, t: &mut Totals) -> Result<(), String> {
    // Deeper files are refused by the decoder's own limit.
    if depth > MAX_MESSAGE_DEPTH {
        return Ok(());
    }
    let whole = b;
    // Per message: names (node inputs and outputs), attributes, list
    // values (attribute values, tensor dimensions), shape dimensions.
    let (mut names, mut attrs, mut values, mut dims) = (0usize, 0usize, 0usize, 0usize);
    while !b.is_empty() {
        let Ok(tag) = decode_varint(&mut b) else {
            break;
        };
        let f = tag >> 3;
        let how = field(kind, f);
        let skip = match tag & 7 {
            0 => {
                if decode_varint(&mut b).is_err() {
                    break;
                }
                if matches!(how, Field::Varints) {
                    values += 1;
                }
                0
            }
            1 => 8,
            5 => {
                if matches!(how, Field::Fixed32) {
                    values += 1;
                }
                4
            }
            2 => {
                let Some(len) = decode_varint(&mut b)
                    .ok()
                    .and_then(|l| usize::try_from(l).ok())
                    .filter(|&l| l <= b.len())
                else {
                    break;
                };
                let (payload, rest) = b.split_at(len);
                match how {
                    Field::Enter(child) => {
                        enter(t, kind, depth, child, f);
                        if child == Kind::Attribute {
                            attrs += 1;
                        }
                        if matches!(kind, Kind::Attribute) && matches!(f, 10 | 11) {
                            values += 1;
                        }
                        if kind == Kind::Model && child == Kind::Graph {
                            main_nodes(t)?;
                        }
                        scan(payload, child, depth + 1, t)?;
                    }
                    Field::Name => {
                        t.items += 1;
                        t.decoded += 24 + len;
                        match kind {
                            Kind::Tensor => t.strings += 1,
                            Kind::Attribute => values += 1,
                            Kind::Node => {
                                names += 1;
                                t.node_names += 1;
                            }
                            _ => names += 1,
                        }
                    }
                    Field::Item => {
                        t.items += 1;
                        t.decoded += std::mem::size_of::<crate::proto::OperatorSetIdProto>() + len;
                    }
                    Field::Varints => values += varints_in(payload),
                    Field::Fixed32 => values += payload.len() / 4,
                    Field::Skip => {
                        if kind == Kind::Shape && f == 1 {
                            dims += 1;
                            t.items += 1;
                            t.decoded += std::mem::size_of::<crate::proto::Dimension>() + len;
                        }
                    }
                }
                b = rest;
                0
            }
            // Groups (deprecated, not in ONNX) and invalid wire types.
            _ => break,
        };
        if skip > b.len() {
            break;
        }
        b = &b[skip..];
    }
    t.items += values;
    t.decoded += 8 * values;
    t.dims += dims;
    let named = |what: String| match kind {
        Kind::Node => {
            let name = string_field(whole, 3);
            let op = string_field(whole, 4);
            format!("node '{name}' ({op}) has {what}")
        }
        Kind::Attribute => format!("attribute '{}' has {what}", string_field(whole, 1)),
        Kind::Tensor => format!("tensor '{}' has {what}", string_field(whole, 8)),
        Kind::Function => format!("function '{}' has {what}", string_field(whole, 1)),
        _ => format!("a message has {what}"),
    };
    if names > MAX_NODE_IO {
        return Err(named(format!(
            "{names} input and output names, which exceeds the limit of {MAX_NODE_IO} (MAX_NODE_IO)"
        )));
    }
    if attrs > MAX_NODE_ATTRIBUTES {
        return Err(named(format!(
            "{attrs} attributes, which exceeds the limit of {MAX_NODE_ATTRIBUTES} (MAX_NODE_ATTRIBUTES)"
        )));
    }
    match kind {
        Kind::Attribute if values > MAX_ATTRIBUTE_VALUES => Err(named(format!(
            "{values} values, which exceeds the limit of {MAX_ATTRIBUTE_VALUES} (MAX_ATTRIBUTE_VALUES)"
        ))),
        // Ranks (of tensors and declared shapes) are checked once decoded,
        // where the value's name is known: what they cost is bounded by the
        // totals above.
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto};
    use prost::Message;

    #[test]
    fn counts_nodes_in_graphs_subgraphs_and_functions() {
        let leaf = NodeProto {
            op_type: Some("Relu".into()),
            ..Default::default()
        };
        let sub = GraphProto {
            node: vec![leaf.clone(), leaf.clone()],
            ..Default::default()
        };
        let with_sub = NodeProto {
            attribute: vec![AttributeProto {
                g: Some(Box::new(sub.clone())),
                graphs: vec![sub],
                ..Default::default()
            }],
            ..leaf.clone()
        };
        let m = ModelProto {
            graph: Some(GraphProto {
                node: vec![leaf.clone(), with_sub],
                ..Default::default()
            }),
            functions: vec![FunctionProto {
                node: vec![leaf.clone(), leaf.clone(), leaf],
                ..Default::default()
            }],
            ..Default::default()
        };
        // 2 in the main graph, 2 x 2 in its subgraphs, 3 in the function.
        let mut t = Totals::default();
        scan(&m.encode_to_vec(), Kind::Model, 0, &mut t).unwrap();
        assert_eq!(t.nodes, 9);
        // The main graph's own list: its 2 nodes, none of the others.
        assert_eq!(
            t.main,
            MainGraph {
                nodes: 2,
                initializers: 0
            }
        );
        // Initializers of the main graph are counted; a subgraph's and an
        // attribute's tensor are not.
        let tensor = crate::proto::TensorProto::default;
        let mut m = m;
        let g = m.graph.as_mut().unwrap();
        g.initializer = vec![tensor(), tensor(), tensor()];
        g.node[1].attribute[0].g.as_mut().unwrap().initializer = vec![tensor()];
        g.node[1].attribute[0].t = Some(Box::new(tensor()));
        let main = check(&m.encode_to_vec(), None, 1 << 20).unwrap();
        assert_eq!(
            main,
            MainGraph {
                nodes: 2,
                initializers: 3
            }
        );
        // Garbage ends the look without a panic.
        assert!(check(&[0x3a, 0xff, 0xff, 0xff], None, 4).is_ok());
        assert!(check(&[0x3b, 0x0a, 0x00], None, 3).is_ok());
    }
}
