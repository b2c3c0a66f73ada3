//! ONNX models built in memory, without Python or files.
//!
//! Small constructors for the protobuf messages of [`super::proto`]: types,
//! values, nodes, attributes, initializers, graphs and models. c3's own unit
//! tests, integration tests, benchmarks and fuzz seeds use them, and so can a
//! library user who wants to cost a graph made in code:
//!
//! ```
//! use c3::onnx::build::{self, FLOAT, GraphBuilder};
//!
//! let model = GraphBuilder::new()
//!     .input(build::value("x", build::tensor_type(FLOAT, &["batch", "8"])))
//!     .node(build::node("Relu", &["x"], &["y"]))
//!     .output(build::untyped("y"))
//!     .model(17);
//! let bytes = build::encode(&model);
//! let loaded = c3::onnx::from_bytes(bytes.into(), "relu.onnx").unwrap();
//! assert_eq!(loaded.opsets[""], 17);
//! ```
//!
//! Nothing here checks what it builds: a test may build a broken model on
//! purpose, and the loader ([`super::from_bytes`]) is what checks.

use bytes::Bytes;
use prost::Message;

use super::proto::{
    AttributeProto, Dimension, ElemTypeProto, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto, TensorShapeProto, TensorTypeProto, TypeProto, ValueInfoProto,
    attr_type,
};

/// `TensorProto.DataType` codes of the element types tests use most.
pub const FLOAT: i32 = 1;
/// 64-bit signed integer.
pub const INT64: i32 = 7;
/// Strings (no fixed size per element).
pub const STRING: i32 = 8;
/// Booleans, one byte each.
pub const BOOL: i32 = 9;

/// The IR version models are written with (ONNX 1.13 and later read it).
pub const IR_VERSION: i64 = 8;

/// A tensor shape: each entry that parses as an integer is a size (written
/// as it is, negative or not), any other is a symbol (`dim_param`).
pub fn shape(dims: &[&str]) -> TensorShapeProto {
    TensorShapeProto {
        dim: dims
            .iter()
            .map(|d| match d.parse::<i64>() {
                Ok(v) => Dimension {
                    dim_value: Some(v),
                    dim_param: None,
                },
                Err(_) => Dimension {
                    dim_value: None,
                    dim_param: Some((*d).to_string()),
                },
            })
            .collect(),
    }
}

/// A tensor type of element type `elem` and the shape of [`shape`].
pub fn tensor_type(elem: i32, dims: &[&str]) -> TypeProto {
    TypeProto {
        tensor_type: Some(TensorTypeProto {
            elem_type: Some(elem),
            shape: Some(shape(dims)),
        }),
        ..Default::default()
    }
}

/// A tensor type of known sizes only.
pub fn sized_type(elem: i32, dims: &[i64]) -> TypeProto {
    let dims: Vec<String> = dims.iter().map(i64::to_string).collect();
    let dims: Vec<&str> = dims.iter().map(String::as_str).collect();
    tensor_type(elem, &dims)
}

/// A tensor type of unknown rank.
pub fn rankless_type(elem: i32) -> TypeProto {
    TypeProto {
        tensor_type: Some(TensorTypeProto {
            elem_type: Some(elem),
            shape: None,
        }),
        ..Default::default()
    }
}

/// A sequence whose elements have type `elem`.
pub fn seq_type(elem: TypeProto) -> TypeProto {
    TypeProto {
        sequence_type: Some(Box::new(ElemTypeProto {
            elem_type: Some(elem),
        })),
        ..Default::default()
    }
}

/// A named value of type `t` (a graph input, output or `value_info`).
pub fn value(name: &str, t: TypeProto) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(t),
    }
}

/// A named tensor value of known sizes (`value(name, sized_type(..))`).
pub fn sized_value(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    value(name, sized_type(elem, dims))
}

/// A named value without a declared type (inference provides it).
pub fn untyped(name: &str) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: None,
    }
}

/// A node of operator `op` in the default domain, without a name or
/// attributes. An empty input name is an absent optional input.
pub fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        input: inputs.iter().map(|s| (*s).to_string()).collect(),
        output: outputs.iter().map(|s| (*s).to_string()).collect(),
        ..Default::default()
    }
}

/// [`node`] with attributes.
pub fn node_with(
    op: &str,
    inputs: &[&str],
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        attribute: attrs,
        ..node(op, inputs, outputs)
    }
}

fn attr(name: &str, kind: i32) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(kind),
        ..Default::default()
    }
}

/// An integer attribute.
pub fn int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        i: Some(v),
        ..attr(name, attr_type::INT)
    }
}

/// A list-of-integers attribute.
pub fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        ints: v.to_vec(),
        ..attr(name, attr_type::INTS)
    }
}

/// A float attribute.
pub fn float(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        f: Some(v),
        ..attr(name, attr_type::FLOAT)
    }
}

/// A list-of-floats attribute.
pub fn floats(name: &str, v: &[f32]) -> AttributeProto {
    AttributeProto {
        floats: v.to_vec(),
        ..attr(name, attr_type::FLOATS)
    }
}

/// A string attribute.
pub fn string(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        s: Some(Bytes::copy_from_slice(v.as_bytes())),
        ..attr(name, attr_type::STRING)
    }
}

/// A list-of-strings attribute.
pub fn strings(name: &str, v: &[&str]) -> AttributeProto {
    AttributeProto {
        strings: v
            .iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect(),
        ..attr(name, attr_type::STRINGS)
    }
}

/// A subgraph attribute (an If branch, a Loop or Scan body).
pub fn graph_attr(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto {
        g: Some(Box::new(g)),
        ..attr(name, attr_type::GRAPH)
    }
}

/// A tensor attribute (a Constant's `value`).
pub fn tensor_attr(name: &str, t: TensorProto) -> AttributeProto {
    AttributeProto {
        t: Some(Box::new(t)),
        ..attr(name, attr_type::TENSOR)
    }
}

/// A tensor of element type `elem` and shape `dims` holding `raw` as its
/// `raw_data` (`None`: no data at all).
pub fn raw_tensor(name: &str, elem: i32, dims: &[i64], raw: Option<Vec<u8>>) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(elem),
        raw_data: raw.map(Bytes::from),
        ..Default::default()
    }
}

/// A float32 tensor of zeros (weights whose values never matter to costs).
/// A dimension below zero counts as zero elements.
pub fn zeros(name: &str, dims: &[i64]) -> TensorProto {
    let n: usize = dims
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(0))
        .product();
    raw_tensor(name, FLOAT, dims, Some(vec![0u8; 4 * n]))
}

/// An int64 tensor of shape `dims` holding `v` (little-endian `raw_data`).
pub fn int64s(name: &str, dims: &[i64], v: &[i64]) -> TensorProto {
    let raw = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    raw_tensor(name, INT64, dims, Some(raw))
}

/// A one-dimensional int64 tensor holding `v` (a Reshape's shape, a Slice's
/// starts).
pub fn int64_list(name: &str, v: &[i64]) -> TensorProto {
    let len = i64::try_from(v.len()).unwrap_or(i64::MAX);
    int64s(name, &[len], v)
}

/// A scalar: int64 `v`, or for [`BOOL`] `v != 0`.
pub fn scalar(name: &str, elem: i32, v: i64) -> TensorProto {
    let raw = if elem == BOOL {
        vec![u8::from(v != 0)]
    } else {
        v.to_le_bytes().to_vec()
    };
    raw_tensor(name, elem, &[], Some(raw))
}

/// One `opset_import` entry (`""` is ai.onnx).
pub fn opset(domain: &str, version: i64) -> OperatorSetIdProto {
    OperatorSetIdProto {
        domain: Some(domain.into()),
        version: Some(version),
    }
}

/// A graph of these inputs, nodes and outputs.
pub fn graph(
    inputs: Vec<ValueInfoProto>,
    nodes: Vec<NodeProto>,
    outputs: Vec<ValueInfoProto>,
) -> GraphProto {
    GraphProto {
        input: inputs,
        node: nodes,
        output: outputs,
        ..Default::default()
    }
}

/// A model of graph `g` importing ai.onnx at `opset_version`.
pub fn model(g: GraphProto, opset_version: i64) -> ModelProto {
    ModelProto {
        ir_version: Some(IR_VERSION),
        opset_import: vec![opset("", opset_version)],
        graph: Some(g),
        ..Default::default()
    }
}

/// The model's protobuf encoding: what an `.onnx` file holds.
pub fn encode(m: &ModelProto) -> Vec<u8> {
    m.encode_to_vec()
}

/// A graph assembled one part at a time.
#[derive(Debug, Clone, Default)]
pub struct GraphBuilder {
    graph: GraphProto,
}

impl GraphBuilder {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the graph.
    pub fn name(mut self, name: &str) -> Self {
        self.graph.name = Some(name.into());
        self
    }

    /// Adds a graph input.
    pub fn input(mut self, v: ValueInfoProto) -> Self {
        self.graph.input.push(v);
        self
    }

    /// Adds a node (nodes run in the order they are added).
    pub fn node(mut self, n: NodeProto) -> Self {
        self.graph.node.push(n);
        self
    }

    /// Adds a graph output.
    pub fn output(mut self, v: ValueInfoProto) -> Self {
        self.graph.output.push(v);
        self
    }

    /// Adds an initializer (a weight, or a constant input such as a shape).
    pub fn initializer(mut self, t: TensorProto) -> Self {
        self.graph.initializer.push(t);
        self
    }

    /// Declares the type of an intermediate value.
    pub fn value_info(mut self, v: ValueInfoProto) -> Self {
        self.graph.value_info.push(v);
        self
    }

    /// The graph.
    pub fn build(self) -> GraphProto {
        self.graph
    }

    /// A model of the graph importing ai.onnx at `opset_version`.
    pub fn model(self, opset_version: i64) -> ModelProto {
        model(self.graph, opset_version)
    }
}
