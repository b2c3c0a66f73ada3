//! The external data files a model's tensors name, wherever the tensors
//! sit: what a copy of the model must still find and must not overwrite.
//!
//! ONNX reads a tensor's data from a side file where its `data_location`
//! is EXTERNAL, at the last `location` entry of its `external_data`, from
//! the model's folder. Such tensors sit in the main graph, in the bodies of
//! If, Loop and Scan nodes at any depth, in node attributes (a Constant's
//! value) and in model-local functions, their default attributes included.

use std::collections::BTreeSet;

use crate::proto::{AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto};

/// The bytes every record holding a tensor with external data holds: the
/// key of its `location` entry. A node record without them holds none (a
/// tensor with external data and no location is refused on loading).
pub const LOCATION_KEY: &[u8] = b"location";

/// The locations a model's tensors name, each once: in its graph (the
/// nodes it holds) and its functions.
pub fn of_model(m: &ModelProto, out: &mut BTreeSet<String>) {
    if let Some(g) = &m.graph {
        of_graph(g, out);
    }
    for f in &m.functions {
        of_nodes(&f.node, out);
        for a in &f.attribute_proto {
            of_attribute(a, out);
        }
    }
}

/// The locations `nodes`' tensors name, in their attributes and bodies.
pub fn of_nodes(nodes: &[NodeProto], out: &mut BTreeSet<String>) {
    for n in nodes {
        for a in &n.attribute {
            of_attribute(a, out);
        }
    }
}

fn of_graph(g: &GraphProto, out: &mut BTreeSet<String>) {
    for t in &g.initializer {
        of_tensor(t, out);
    }
    for sp in &g.sparse_initializer {
        sp.values
            .iter()
            .chain(&sp.indices)
            .for_each(|t| of_tensor(t, out));
    }
    of_nodes(&g.node, out);
}

fn of_attribute(a: &AttributeProto, out: &mut BTreeSet<String>) {
    a.t.iter().for_each(|t| of_tensor(t, out));
    a.tensors.iter().for_each(|t| of_tensor(t, out));
    if let Some(sp) = &a.sparse_tensor {
        sp.values
            .iter()
            .chain(&sp.indices)
            .for_each(|t| of_tensor(t, out));
    }
    for g in a.g.iter().map(|g| &**g).chain(&a.graphs) {
        of_graph(g, out);
    }
}

fn of_tensor(t: &TensorProto, out: &mut BTreeSet<String>) {
    if t.data_location == Some(super::tensor::EXTERNAL)
        && let Ok(location) = super::tensor::location_of(t)
        && !out.contains(location)
    {
        out.insert(location.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::build::{FLOAT, graph_attr, node, raw_tensor, tensor_attr};
    use crate::proto::{FunctionProto, SparseTensorProto, StringStringEntryProto};

    fn external(location: &str) -> TensorProto {
        let entry = |v: &str| StringStringEntryProto {
            key: Some("location".into()),
            value: Some(v.into()),
        };
        TensorProto {
            data_location: Some(1),
            // ONNX reads the last entry of a key.
            external_data: vec![entry("not-this.bin"), entry(location)],
            ..raw_tensor("w", FLOAT, &[1], None)
        }
    }

    /// One tensor in each place a tensor may sit, and one stored inline:
    /// each external one's last location, and only those.
    #[test]
    fn every_place_a_tensor_sits_is_looked_at() {
        let body = GraphProto {
            initializer: vec![external("body.bin")],
            node: vec![node("Constant", &[], &["k"])],
            ..Default::default()
        };
        let mut deeper = node("If", &["c"], &["o"]);
        deeper.attribute.push(graph_attr("then_branch", body));
        let mut main = GraphProto {
            initializer: vec![external("main.bin"), raw_tensor("v", FLOAT, &[1], None)],
            sparse_initializer: vec![SparseTensorProto {
                values: Some(external("sparse.bin")),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut constant = node("Constant", &[], &["a"]);
        constant
            .attribute
            .push(tensor_attr("value", external("constant.bin")));
        let mut outer = node("Loop", &[], &["l"]);
        outer.attribute.push(graph_attr(
            "body",
            GraphProto {
                node: vec![deeper],
                ..Default::default()
            },
        ));
        main.node = vec![constant, outer];
        let mut in_function = node("Constant", &[], &["f"]);
        in_function
            .attribute
            .push(tensor_attr("value", external("function.bin")));
        let m = ModelProto {
            graph: Some(main),
            functions: vec![FunctionProto {
                node: vec![in_function],
                attribute_proto: vec![tensor_attr("value", external("default.bin"))],
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut found = BTreeSet::new();
        of_model(&m, &mut found);
        let want = [
            "body.bin",
            "constant.bin",
            "default.bin",
            "function.bin",
            "main.bin",
            "sparse.bin",
        ];
        assert_eq!(found.iter().collect::<Vec<_>>(), want);
    }
}
