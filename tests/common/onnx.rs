//! ONNX models in tests: short forms over the library's builder
//! (`c3::onnx::build`) with a negative size meaning the symbol `batch` and
//! ai.onnx opset 17, the cost pipeline `c3 estimate` runs, and the binary on
//! a model written to a file.

use c3::cost::{CostReport, estimate};
pub use c3::onnx::build::{self, BOOL, FLOAT, INT64, scalar, untyped};
pub use c3::onnx::proto::{GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto};
use c3::rules::{CountOptions, RuleSet};

use super::cli::{C3, scratch};

/// A tensor value; a negative size is the symbol `batch`.
pub fn typed(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    let dims: Vec<String> = dims
        .iter()
        .map(|&d| if d < 0 { "batch".into() } else { d.to_string() })
        .collect();
    let dims: Vec<&str> = dims.iter().map(String::as_str).collect();
    build::value(name, build::tensor_type(elem, &dims))
}

pub fn float(name: &str, dims: &[i64]) -> ValueInfoProto {
    typed(name, FLOAT, dims)
}

pub fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    build::node(op, inputs, outputs)
}

pub fn with_graph(mut n: NodeProto, attr: &str, g: GraphProto) -> NodeProto {
    n.attribute.push(build::graph_attr(attr, g));
    n
}

pub fn with_int(mut n: NodeProto, attr: &str, v: i64) -> NodeProto {
    n.attribute.push(build::int(attr, v));
    n
}

/// A float initializer of zeros (its values never matter to costs).
pub fn weights(name: &str, dims: &[i64]) -> TensorProto {
    build::zeros(name, dims)
}

/// A model of `graph` at ai.onnx opset 17.
pub fn model(graph: GraphProto) -> ModelProto {
    build::model(graph, 17)
}

pub fn cost_with(m: &ModelProto, opts: CountOptions, dims: &[(&str, i64)]) -> CostReport {
    let bytes = bytes::Bytes::from(build::encode(m));
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

/// Writes the model and runs `c3 args... MODEL`: (exit code, stdout, stderr).
pub fn c3_on(m: &ModelProto, name: &str, args: &[&str]) -> (i32, String, String) {
    let path = scratch("models", name).join("model.onnx");
    std::fs::write(&path, build::encode(m)).unwrap();
    let run = C3::new().args(args).arg(&path).run();
    (run.code, run.stdout, run.stderr)
}
