//! ONNX models built in memory for tests: value, node and initializer
//! builders, the cost pipeline `c3 estimate` runs, and the binary on a file.

use std::path::{Path, PathBuf};
use std::process::Command;

use c3::cost::{CostReport, estimate};
pub use c3::onnx::proto::{
    AttributeProto, Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TensorTypeProto, TypeProto, ValueInfoProto, attr_type,
};
use c3::rules::{CountOptions, RuleSet};
use prost::Message;

pub const BIN: &str = env!("CARGO_BIN_EXE_c3");
pub const FLOAT: i32 = 1;
pub const INT64: i32 = 7;
pub const BOOL: i32 = 9;

/// A tensor value; a negative size is the symbol `batch`.
pub fn typed(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: Some(elem),
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| Dimension {
                            dim_value: (d >= 0).then_some(d),
                            dim_param: (d < 0).then(|| "batch".to_string()),
                        })
                        .collect(),
                }),
            }),
            ..Default::default()
        }),
    }
}

pub fn float(name: &str, dims: &[i64]) -> ValueInfoProto {
    typed(name, FLOAT, dims)
}

/// A value whose type the body's inference provides.
pub fn untyped(name: &str) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: None,
    }
}

pub fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

pub fn with_graph(mut n: NodeProto, attr: &str, g: GraphProto) -> NodeProto {
    n.attribute.push(AttributeProto {
        name: Some(attr.into()),
        r#type: Some(attr_type::GRAPH),
        g: Some(Box::new(g)),
        ..Default::default()
    });
    n
}

pub fn with_int(mut n: NodeProto, attr: &str, v: i64) -> NodeProto {
    n.attribute.push(AttributeProto {
        name: Some(attr.into()),
        r#type: Some(attr_type::INT),
        i: Some(v),
        ..Default::default()
    });
    n
}

/// A float initializer of zeros (its values never matter to costs).
pub fn weights(name: &str, dims: &[i64]) -> TensorProto {
    let n: i64 = dims.iter().product();
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(FLOAT),
        raw_data: Some(vec![0u8; 4 * n as usize].into()),
        ..Default::default()
    }
}

/// A scalar initializer: int64 or bool.
pub fn scalar(name: &str, elem: i32, v: i64) -> TensorProto {
    let raw: Vec<u8> = if elem == BOOL {
        vec![u8::from(v != 0)]
    } else {
        v.to_le_bytes().to_vec()
    };
    TensorProto {
        name: Some(name.into()),
        dims: vec![],
        data_type: Some(elem),
        raw_data: Some(raw.into()),
        ..Default::default()
    }
}

pub fn model(graph: GraphProto) -> ModelProto {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(graph),
        ..Default::default()
    }
}

pub fn cost_with(m: &ModelProto, opts: CountOptions, dims: &[(&str, i64)]) -> CostReport {
    let bytes = bytes::Bytes::from(m.encode_to_vec());
    let loaded = c3::onnx::from_bytes(bytes, "control.onnx").expect("the model loads");
    let infer_opts = c3::onnx::infer::InferOptions {
        dims: dims.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..Default::default()
    };
    let inferred = c3::onnx::infer::infer(&loaded, &infer_opts).expect("shapes are inferred");
    let mut graph = c3::onnx::infer::to_graph(inferred);
    // As `c3 estimate` does: --dim values, then upper bounds for the rest.
    graph.bind(&infer_opts.dims);
    let rules = RuleSet::builtin().unwrap();
    estimate(&graph, &rules, opts).expect("the model is costed")
}

pub fn cost(m: &ModelProto) -> CostReport {
    cost_with(m, CountOptions::default(), &[])
}

pub fn layer<'a>(r: &'a CostReport, name: &str) -> &'a c3::cost::LayerCost {
    r.layers.iter().find(|l| l.name == name).unwrap_or_else(|| {
        let names: Vec<&str> = r.layers.iter().map(|l| l.name.as_str()).collect();
        panic!("no layer {name} among {names:?}")
    })
}

pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("models")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes the model and runs `c3 args... MODEL`: (exit code, stdout, stderr).
pub fn c3_on(m: &ModelProto, name: &str, args: &[&str]) -> (i32, String, String) {
    let path = scratch(name).join("model.onnx");
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    let out = Command::new(BIN).args(args).arg(&path).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
