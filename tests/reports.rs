//! Issue 13's reports: layers in the model's order, the roofline naming the
//! peaks it used, JSON with `meta` checked against the shipped schemas, CSV
//! as one table, and a table that fits the terminal.

use c3::onnx::build::GraphBuilder;

use crate::common::onnx::{float, model, node};
use crate::common::{cli::C3, onnx::c3_on};

fn named(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> c3::onnx::proto::NodeProto {
    let mut n = node(op, inputs, outputs);
    n.name = Some(name.into());
    n
}

/// Two branches from one Relu, written branch by branch: a first-in,
/// first-out sort would interleave them (a, b1, c1, b2, c2).
fn two_branches() -> c3::onnx::proto::ModelProto {
    let g = GraphBuilder::new()
        .input(float("x", &[1, 64]))
        .node(named("Relu", "a", &["x"], &["ya"]))
        .node(named("Relu", "b1", &["ya"], &["yb1"]))
        .node(named("Relu", "b2", &["yb1"], &["yb2"]))
        .node(named("Relu", "c1", &["ya"], &["yc1"]))
        .node(named("Relu", "c2", &["yc1"], &["yc2"]))
        .node(named("Add", "join", &["yb2", "yc2"], &["y"]))
        .output(float("y", &[1, 64]))
        .build();
    model(g)
}

fn layer_names(json: &serde_json::Value) -> Vec<String> {
    json["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn layers_keep_the_order_of_the_model_s_nodes() {
    let (code, out, err) = c3_on(&two_branches(), "order", &["estimate", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(layer_names(&j), ["a", "b1", "b2", "c1", "c2", "join"]);
}

#[test]
fn only_a_real_dependency_reorders_layers() {
    // `join` is written first but reads what the others make: it moves after
    // them; the rest keep their places.
    let g = GraphBuilder::new()
        .input(float("x", &[1, 64]))
        .node(named("Add", "join", &["yb", "yc"], &["y"]))
        .node(named("Relu", "b", &["x"], &["yb"]))
        .node(named("Relu", "c", &["x"], &["yc"]))
        .output(float("y", &[1, 64]))
        .build();
    let (code, out, err) = c3_on(&model(g), "reorder", &["estimate", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(layer_names(&j), ["b", "c", "join"]);
}

#[test]
fn light_resnet50_lists_its_nodes_in_file_order() {
    let run = C3::new()
        .args(["estimate", "examples/onnx/light_resnet50.onnx", "--format", "json"])
        .run();
    let j = run.ok().json();
    let names = layer_names(&j);
    // The first bottleneck: n4 (1x1 conv), n5 (its BatchNorm), n6 (Relu), ...
    // and the shortcut conv n12 after the main path, as the file has them.
    let at = |n: &str| names.iter().position(|x| x == n).unwrap();
    assert!(at("n4") < at("n5") && at("n5") < at("n6") && at("n6") < at("n12"));
    assert_eq!(&names[..6], ["n0", "n1", "n2", "n3", "n4", "n5"]);
}
