//! ONNX protobuf messages, shared by the loader ([`crate::onnx`]) and shape
//! inference ([`crate::shape`]), which reads attributes and subgraphs from them.
//!
//! The subset of ONNX's protobuf schema c3 reads, with field numbers from
//! `onnx/onnx.proto` (IR version 11). Fields c3 does not need are left out and
//! skipped by the decoder.
//!
//! Tensor payloads are kept as `Bytes`: `raw_data`, and the packed numeric
//! fields too (a packed repeated field is one length-delimited blob on the
//! wire, so it can be held as bytes and decoded only when a value is
//! needed). Large ones are slices of the memory-mapped file, never copied;
//! small ones are copied out of the records read from it (see
//! `onnx::read`), or are slices of a model given as bytes.

use bytes::Bytes;

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    #[prost(int64, optional, tag = "1")]
    pub ir_version: Option<i64>,
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    #[prost(string, optional, tag = "2")]
    pub producer_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub producer_version: Option<String>,
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    #[prost(message, repeated, tag = "25")]
    pub functions: Vec<FunctionProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    #[prost(string, optional, tag = "1")]
    pub domain: Option<String>,
    #[prost(int64, optional, tag = "2")]
    pub version: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    #[prost(message, repeated, tag = "15")]
    pub sparse_initializer: Vec<SparseTensorProto>,
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
}

/// A node: `input` (1), `output` (2), `name` (3), `op_type` (4),
/// `attribute` (5), `domain` (7), `overload` (8). Decoded by hand (the
/// fields as prost's derive would, in the same order, errors named the
/// same way) for one reason: its lists grow to fit. prost's derive
/// grows each from room for four, and a large graph's nodes are most of
/// its memory (an attribute is 264 bytes: four of them for one).
#[derive(Clone, PartialEq, Default, Debug)]
pub struct NodeProto {
    pub input: Vec<String>,
    pub output: Vec<String>,
    pub name: Option<String>,
    pub op_type: Option<String>,
    pub domain: Option<String>,
    pub overload: Option<String>,
    pub attribute: Vec<AttributeProto>,
}

/// Decodes one element with `merge` and appends it, growing `list` by
/// half (at least one) when it is full: lists of one to three elements,
/// most of a node's, are then exactly their size.
fn push_grown<T: Default>(
    list: &mut Vec<T>,
    merge: impl FnOnce(&mut T) -> Result<(), prost::DecodeError>,
) -> Result<(), prost::DecodeError> {
    let mut v = T::default();
    merge(&mut v)?;
    if list.len() == list.capacity() {
        list.reserve_exact((list.len() / 2).max(1));
    }
    list.push(v);
    Ok(())
}

/// prost's `string::merge`, but a string that lies whole in the buffer's
/// current chunk (every node's, decoded from a record in memory) is copied
/// into a string of its size at once: prost reserves, then copies through
/// its generic buffer calls, which were half of decoding a node's names.
/// Anything else (another wire type, a length past the chunk, bytes that
/// are not UTF-8) is left to prost, which reads it or reports it as ever.
fn merge_str(
    wire_type: prost::encoding::WireType,
    value: &mut String,
    buf: &mut impl bytes::Buf,
    ctx: prost::encoding::DecodeContext,
) -> Result<(), prost::DecodeError> {
    if wire_type == prost::encoding::WireType::LengthDelimited
        && let Some((at, len)) = length_prefix(buf.chunk())
        && let Some(text) = buf.chunk()[at..].get(..len).and_then(utf8)
    {
        *value = text.to_owned();
        buf.advance(at + len);
        return Ok(());
    }
    prost::encoding::string::merge(wire_type, value, buf, ctx)
}

/// `bytes` as text if they are UTF-8. ASCII (every name in the models
/// seen) is recognised a word at a time; the general check goes a byte at
/// a time over short unaligned strings like these, four times as long.
fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: ASCII bytes are UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).ok()
}

/// A length prefix at the start of `bytes`, read as prost reads it: where
/// what it measures starts, and its length. `None` where prost's read
/// fails (the caller then leaves the field to prost, which reports it).
fn length_prefix(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut rest = bytes;
    let len = prost::encoding::decode_varint(&mut rest).ok()?;
    Some((bytes.len() - rest.len(), usize::try_from(len).ok()?))
}

impl prost::Message for NodeProto {
    fn encode_raw(&self, buf: &mut impl bytes::BufMut) {
        use prost::encoding::{message, string};
        string::encode_repeated(1, &self.input, buf);
        string::encode_repeated(2, &self.output, buf);
        if let Some(v) = &self.name {
            string::encode(3, v, buf);
        }
        if let Some(v) = &self.op_type {
            string::encode(4, v, buf);
        }
        message::encode_repeated(5, &self.attribute, buf);
        if let Some(v) = &self.domain {
            string::encode(7, v, buf);
        }
        if let Some(v) = &self.overload {
            string::encode(8, v, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        use prost::encoding::{message, skip_field};
        let named = |field: &'static str| {
            move |mut e: prost::DecodeError| {
                e.push("NodeProto", field);
                e
            }
        };
        let optional = |v: &mut Option<String>, buf: &mut _| {
            merge_str(
                wire_type,
                v.get_or_insert_with(String::new),
                buf,
                ctx.clone(),
            )
        };
        match tag {
            1 => push_grown(&mut self.input, |v| merge_str(wire_type, v, buf, ctx))
                .map_err(named("input")),
            2 => push_grown(&mut self.output, |v| merge_str(wire_type, v, buf, ctx))
                .map_err(named("output")),
            3 => optional(&mut self.name, buf).map_err(named("name")),
            4 => optional(&mut self.op_type, buf).map_err(named("op_type")),
            5 => push_grown(&mut self.attribute, |v| {
                message::merge(wire_type, v, buf, ctx)
            })
            .map_err(named("attribute")),
            7 => optional(&mut self.domain, buf).map_err(named("domain")),
            8 => optional(&mut self.overload, buf).map_err(named("overload")),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        use prost::encoding::{message, string};
        let opt =
            |tag: u32, v: &Option<String>| v.as_ref().map_or(0, |v| string::encoded_len(tag, v));
        string::encoded_len_repeated(1, &self.input)
            + string::encoded_len_repeated(2, &self.output)
            + opt(3, &self.name)
            + opt(4, &self.op_type)
            + message::encoded_len_repeated(5, &self.attribute)
            + opt(7, &self.domain)
            + opt(8, &self.overload)
    }

    fn clear(&mut self) {
        *self = NodeProto::default();
    }
}

/// `AttributeProto.AttributeType`.
pub mod attr_type {
    pub const FLOAT: i32 = 1;
    pub const INT: i32 = 2;
    pub const STRING: i32 = 3;
    pub const TENSOR: i32 = 4;
    pub const GRAPH: i32 = 5;
    pub const FLOATS: i32 = 6;
    pub const INTS: i32 = 7;
    pub const STRINGS: i32 = 8;
    pub const TENSORS: i32 = 9;
    pub const GRAPHS: i32 = 10;
    pub const SPARSE_TENSOR: i32 = 11;
    pub const TYPE_PROTO: i32 = 13;
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// Set in function bodies: the attribute takes the caller's value of this name.
    #[prost(string, optional, tag = "21")]
    pub ref_attr_name: Option<String>,
    #[prost(int32, optional, tag = "20")]
    pub r#type: Option<i32>,
    #[prost(float, optional, tag = "2")]
    pub f: Option<f32>,
    #[prost(int64, optional, tag = "3")]
    pub i: Option<i64>,
    #[prost(bytes = "bytes", optional, tag = "4")]
    pub s: Option<Bytes>,
    // Boxed: inline, these three made every attribute 1.2 KB (an int
    // attribute included), a fifth of a large model's memory.
    #[prost(message, optional, boxed, tag = "5")]
    pub t: Option<Box<TensorProto>>,
    #[prost(message, optional, boxed, tag = "6")]
    pub g: Option<Box<GraphProto>>,
    #[prost(message, optional, boxed, tag = "22")]
    pub sparse_tensor: Option<Box<SparseTensorProto>>,
    #[prost(message, optional, boxed, tag = "14")]
    pub tp: Option<Box<TypeProto>>,
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
    #[prost(bytes = "bytes", repeated, tag = "9")]
    pub strings: Vec<Bytes>,
    #[prost(message, repeated, tag = "10")]
    pub tensors: Vec<TensorProto>,
    #[prost(message, repeated, tag = "11")]
    pub graphs: Vec<GraphProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    #[prost(int32, optional, tag = "2")]
    pub data_type: Option<i32>,
    /// Packed `repeated float`, kept undecoded.
    #[prost(bytes = "bytes", optional, tag = "4")]
    pub float_data: Option<Bytes>,
    /// Packed `repeated int32` (varints), kept undecoded.
    #[prost(bytes = "bytes", optional, tag = "5")]
    pub int32_data: Option<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "6")]
    pub string_data: Vec<Bytes>,
    /// Packed `repeated int64` (varints), kept undecoded.
    #[prost(bytes = "bytes", optional, tag = "7")]
    pub int64_data: Option<Bytes>,
    #[prost(string, optional, tag = "8")]
    pub name: Option<String>,
    #[prost(bytes = "bytes", optional, tag = "9")]
    pub raw_data: Option<Bytes>,
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    /// 1 = EXTERNAL.
    #[prost(int32, optional, tag = "14")]
    pub data_location: Option<i32>,
    /// Packed `repeated double`, kept undecoded.
    #[prost(bytes = "bytes", optional, tag = "10")]
    pub double_data: Option<Bytes>,
    /// Packed `repeated uint64` (varints), kept undecoded.
    #[prost(bytes = "bytes", optional, tag = "11")]
    pub uint64_data: Option<Bytes>,
    /// Payloads the file reader left in the file (not an ONNX field: the
    /// reader writes it, drops any the file holds, and the loader turns
    /// each into its field's bytes; see `onnx::read`).
    #[prost(message, repeated, tag = "536870911")]
    pub stored: Vec<StoredPayload>,
}

/// Where a tensor payload left in the model file lies.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StoredPayload {
    /// The TensorProto field: 4 (float_data), 9 (raw_data), 10 (double_data).
    #[prost(uint32, optional, tag = "1")]
    pub field: Option<u32>,
    #[prost(uint64, optional, tag = "2")]
    pub offset: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub length: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SparseTensorProto {
    #[prost(message, optional, tag = "1")]
    pub values: Option<TensorProto>,
    #[prost(message, optional, tag = "2")]
    pub indices: Option<TensorProto>,
    #[prost(int64, repeated, tag = "3")]
    pub dims: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    #[prost(int64, optional, tag = "1")]
    pub dim_value: Option<i64>,
    #[prost(string, optional, tag = "2")]
    pub dim_param: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TensorTypeProto>,
    #[prost(message, optional, boxed, tag = "4")]
    pub sequence_type: Option<Box<ElemTypeProto>>,
    #[prost(message, optional, boxed, tag = "5")]
    pub map_type: Option<Box<MapTypeProto>>,
    #[prost(message, optional, boxed, tag = "9")]
    pub optional_type: Option<Box<ElemTypeProto>>,
    #[prost(message, optional, tag = "8")]
    pub sparse_tensor_type: Option<TensorTypeProto>,
}

/// `TypeProto.Tensor` and `TypeProto.SparseTensor` share this layout.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorTypeProto {
    #[prost(int32, optional, tag = "1")]
    pub elem_type: Option<i32>,
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// `TypeProto.Sequence` and `TypeProto.Optional` share this layout.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ElemTypeProto {
    #[prost(message, optional, tag = "1")]
    pub elem_type: Option<TypeProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MapTypeProto {
    #[prost(int32, optional, tag = "1")]
    pub key_type: Option<i32>,
    #[prost(message, optional, tag = "2")]
    pub value_type: Option<TypeProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FunctionProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, repeated, tag = "4")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    pub output: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    pub attribute: Vec<String>,
    #[prost(message, repeated, tag = "11")]
    pub attribute_proto: Vec<AttributeProto>,
    #[prost(message, repeated, tag = "7")]
    pub node: Vec<NodeProto>,
    #[prost(message, repeated, tag = "9")]
    pub opset_import: Vec<OperatorSetIdProto>,
    #[prost(string, optional, tag = "10")]
    pub domain: Option<String>,
    #[prost(string, optional, tag = "13")]
    pub overload: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// What prost's derive makes of NodeProto's fields: the hand-written
    /// decoder must read and write the same bytes.
    #[derive(Clone, PartialEq, prost::Message)]
    struct DerivedNode {
        #[prost(string, repeated, tag = "1")]
        input: Vec<String>,
        #[prost(string, repeated, tag = "2")]
        output: Vec<String>,
        #[prost(string, optional, tag = "3")]
        name: Option<String>,
        #[prost(string, optional, tag = "4")]
        op_type: Option<String>,
        #[prost(string, optional, tag = "7")]
        domain: Option<String>,
        #[prost(string, optional, tag = "8")]
        overload: Option<String>,
        #[prost(message, repeated, tag = "5")]
        attribute: Vec<AttributeProto>,
    }

    fn attribute(name: &str, i: i64) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            r#type: Some(attr_type::INT),
            i: Some(i),
            ..AttributeProto::default()
        }
    }

    #[test]
    fn a_node_reads_and_writes_as_the_derived_message_does() {
        let derived = DerivedNode {
            input: vec!["x".into(), "".into(), "w".into()],
            output: vec!["y".into()],
            name: Some("conv".into()),
            op_type: Some("Conv".into()),
            domain: Some("ai.onnx".into()),
            overload: Some("v2".into()),
            attribute: vec![attribute("group", 2), attribute("axis", -1)],
        };
        let bytes = derived.encode_to_vec();
        let node = NodeProto::decode(bytes.as_slice()).unwrap();
        assert_eq!(node.input, derived.input);
        assert_eq!(node.output, derived.output);
        assert_eq!(node.name.as_deref(), Some("conv"));
        assert_eq!(node.op_type.as_deref(), Some("Conv"));
        assert_eq!(node.domain.as_deref(), Some("ai.onnx"));
        assert_eq!(node.overload.as_deref(), Some("v2"));
        assert_eq!(node.attribute, derived.attribute);
        // Written back, byte for byte; the length prost computes agrees.
        assert_eq!(node.encode_to_vec(), bytes);
        assert_eq!(node.encoded_len(), bytes.len());
        // Each list holds its elements and no more: 3 inputs, 1 output,
        // 2 attributes (prost's derive reserves 4 of each).
        assert_eq!(node.input.capacity(), 3);
        assert_eq!(node.output.capacity(), 1);
        assert_eq!(node.attribute.capacity(), 2);
        // Growth by half past that: 4, 6, 9 places for 4 to 9 elements.
        let many = DerivedNode {
            input: (0..7).map(|i| i.to_string()).collect(),
            ..DerivedNode::default()
        };
        let node = NodeProto::decode(many.encode_to_vec().as_slice()).unwrap();
        assert_eq!(node.input.len(), 7);
        assert_eq!(node.input.capacity(), 9);
        // Fields c3 does not read (doc_string, 6) are skipped.
        let mut with_doc = bytes.clone();
        with_doc.extend_from_slice(&[0x32, 2, b'h', b'i']);
        assert_eq!(
            NodeProto::decode(with_doc.as_slice()).unwrap(),
            node_of(&derived)
        );
    }

    fn node_of(d: &DerivedNode) -> NodeProto {
        NodeProto::decode(d.encode_to_vec().as_slice()).unwrap()
    }

    #[test]
    fn a_bad_node_field_is_named_as_the_derived_decoder_names_it() {
        // input 1 = bytes 0xff (not UTF-8); op_type with a varint wire type.
        let bad_utf8 = [0x0a, 1, 0xff];
        let ours = NodeProto::decode(&bad_utf8[..]).unwrap_err().to_string();
        let derived = DerivedNode::decode(&bad_utf8[..]).unwrap_err().to_string();
        assert_eq!(ours.replace("NodeProto", "DerivedNode"), derived);
        assert!(ours.contains("NodeProto.input"), "{ours}");
        let bad_wire = [0x20, 1];
        let ours = NodeProto::decode(&bad_wire[..]).unwrap_err().to_string();
        let derived = DerivedNode::decode(&bad_wire[..]).unwrap_err().to_string();
        assert_eq!(ours.replace("NodeProto", "DerivedNode"), derived);
        assert!(ours.contains("NodeProto.op_type"), "{ours}");
    }

    /// Names are read whole from the buffer when they lie in one piece,
    /// and by prost otherwise: either way as the derived decoder reads
    /// them (text beyond ASCII, a field given twice), and a length past
    /// the end fails as it does.
    #[test]
    fn names_read_as_the_derived_decoder_reads_them() {
        let derived = DerivedNode {
            input: vec!["caf\u{e9}".into(), "\u{4e2d}\u{6587}/x".into(), "".into()],
            output: vec!["y".repeat(300)],
            name: Some("n\u{e9}".into()),
            op_type: Some("Conv".into()),
            ..DerivedNode::default()
        };
        let bytes = derived.encode_to_vec();
        assert_eq!(node_of(&derived).input, derived.input);
        assert_eq!(node_of(&derived).output, derived.output);
        assert_eq!(node_of(&derived).name, derived.name);
        // In two pieces, split inside a name: prost reads across them.
        for cut in [1, 3, 5, 9, bytes.len() - 2] {
            let (a, b) = bytes.split_at(cut);
            let node = NodeProto::decode(bytes::Buf::chain(a, b)).unwrap();
            assert_eq!(node, node_of(&derived), "cut at {cut}");
        }
        // A name given twice: the last one stands.
        let twice = [&[0x1a, 1, b'a'][..], &[0x1a, 2, b'b', b'c']].concat();
        let node = NodeProto::decode(twice.as_slice()).unwrap();
        assert_eq!(node.name.as_deref(), Some("bc"));
        assert_eq!(
            DerivedNode::decode(twice.as_slice()).unwrap().name,
            node.name
        );
        // A length past the end, a name cut inside a character, and a
        // ten-byte length whose last byte overflows 64 bits (not a varint
        // to prost: it must not read as a length of 0).
        let overlong = [
            0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02,
        ];
        for bad in [
            &[0x0a, 5, b'a'][..],
            &[0x0a, 1, 0xc3],
            &[0x22, 0x80],
            &overlong,
        ] {
            let ours = NodeProto::decode(bad).unwrap_err().to_string();
            let derived = DerivedNode::decode(bad).unwrap_err().to_string();
            assert_eq!(ours.replace("NodeProto", "DerivedNode"), derived);
        }
    }
}
