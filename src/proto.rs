//! ONNX protobuf messages, shared by the loader ([`crate::onnx`]) and shape
//! inference ([`crate::shape`]), which reads attributes and subgraphs from them.
//!
//! The subset of ONNX's protobuf schema c3 reads, with field numbers from
//! `onnx/onnx.proto` (IR version 11). Fields c3 does not need are left out and
//! skipped by the decoder.
//!
//! Tensor payloads are kept as `Bytes`, never copied: `raw_data`, and the
//! packed numeric fields too (a packed repeated field is one length-delimited
//! blob on the wire, so it can be held as bytes and decoded only when a value
//! is needed). Large ones are slices of the memory-mapped file, small ones of
//! the records read from it (see `onnx::read`).

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

#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub op_type: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub domain: Option<String>,
    #[prost(string, optional, tag = "8")]
    pub overload: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
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
