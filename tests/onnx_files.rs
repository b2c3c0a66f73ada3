//! The ONNX front end on well-formed files (hostile ones: tests/hostile.rs).

use std::path::{Path, PathBuf};

use c3::onnx::proto::{
    AttributeProto, GraphProto, MapTypeProto, ModelProto, NodeProto, TensorTypeProto, TypeProto,
};
use prost::Message;

use crate::common::cli::C3;
use crate::common::onnx::{FLOAT, build, float as value, model, node, untyped};

fn scratch(name: &str) -> PathBuf {
    crate::common::cli::scratch("onnx", name)
}

/// x[batch, 8] -> Relu -> y
fn relu_graph() -> GraphProto {
    build::graph(
        vec![value("x", &[-1, 8])],
        vec![node("Relu", &["x"], &["y"])],
        vec![untyped("y")],
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

/// Runs `c3 args...` and returns (exit code, stdout, stderr).
fn c3(args: &[&str]) -> (i32, String, String) {
    let r = C3::new().args(args).run();
    (r.code, r.stdout, r.stderr)
}

#[test]
fn symbolic_batch_flows_and_binds() {
    let dir = scratch("symbolic");
    let path = write(&dir, "relu.onnx", &model(relu_graph()).encode_to_vec());
    let (code, out, err) = c3(&["shapes", &path, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["tensors"]["y"]["shape"], serde_json::json!(["batch", 8]));
    assert_eq!(j["tensors"]["y"]["dtype"], "float32");

    // Costs need numbers: the error names the symbol and the flag.
    let (code, _, err) = c3(&["estimate", &path]);
    assert_eq!(code, 2);
    assert!(
        err.contains("sizes unknown until bound: batch; bind them with --dim batch=N (or give"),
        "{err}"
    );
    // --dim binds it; --input overrides the whole input.
    let (code, out, err) = c3(&["estimate", &path, "--dim", "batch=4", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["total"]["flops"], 4 * 8);
    let (_, out, _) = c3(&["estimate", &path, "--input", "x=2x8", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["total"]["flops"], 2 * 8);
    let (code, _, err) = c3(&["estimate", &path, "--input", "nope=2x8"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("--input nope: the model has no input of that name (inputs: x)"),
        "{err}"
    );
}

#[test]
fn shapes_output_writes_value_info_and_keeps_the_original_bytes() {
    let dir = scratch("shapes_o");
    let mut g = relu_graph();
    g.node.push(node("Relu", &["y"], &["z"]));
    g.output = vec![value("z", &[-1, 8])];
    let bytes = model(g).encode_to_vec();
    let path = write(&dir, "m.onnx", &bytes);
    let out = dir.join("out.onnx");
    let (code, stdout, err) = c3(&["shapes", &path, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(stdout, "", "with -o, no listing unless --format asks");
    assert!(err.starts_with("wrote"), "{err}");
    let written = std::fs::read(&out).unwrap();
    // c3's mark first, then the original bytes.
    let kept = &written[c3::output::mark::onnx_mark_len(&written)..];
    assert_eq!(
        &kept[..bytes.len()],
        &bytes[..],
        "original bytes are copied unchanged"
    );
    let m = ModelProto::decode(&written[..]).unwrap();
    let g = m.graph.unwrap();
    assert_eq!(g.node.len(), 2);
    let vi: Vec<&str> = g
        .value_info
        .iter()
        .filter_map(|v| v.name.as_deref())
        .collect();
    assert_eq!(vi, ["y"]);
    let dims = &g.value_info[0]
        .r#type
        .as_ref()
        .unwrap()
        .tensor_type
        .as_ref()
        .unwrap()
        .shape
        .as_ref()
        .unwrap()
        .dim;
    assert_eq!(dims[0].dim_param.as_deref(), Some("batch"));
    assert_eq!(dims[1].dim_value, Some(8));
}

/// The nine model-zoo "light" models the onnx package ships: every tensor
/// gets a fully known shape, every layer has a rule, nothing is unanalysed.
#[test]
fn light_models_are_fully_analysed() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/onnx");
    let mut models: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "onnx"))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("light_"))
        })
        .collect();
    models.sort();
    // The decoders beside them have symbolic axes: tests/decoder.rs.
    assert_eq!(models.len(), 9);
    for m in &models {
        let path = m.to_str().unwrap();
        let (code, out, err) = c3(&["shapes", path, "--format", "json"]);
        assert_eq!(code, 0, "{path}: {err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        for (name, t) in j["tensors"].as_object().unwrap() {
            let shape = t["shape"]
                .as_array()
                .unwrap_or_else(|| panic!("{path}: {name} has no shape"));
            assert!(
                shape.iter().all(serde_json::Value::is_u64),
                "{path}: {name} is {shape:?}"
            );
        }
        let (code, out, err) = c3(&["estimate", path, "--format", "json", "--strict"]);
        assert_eq!(code, 0, "{path}: {err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(j["unsupported"], serde_json::json!([]), "{path}");
        assert!(j["total"]["flops"].as_u64().unwrap() > 0, "{path}");
    }
    // ResNet50: the input and the 1000 class probabilities.
    let (_, out, _) = c3(&[
        "shapes",
        &format!("{dir}/light_resnet50.onnx"),
        "--format",
        "json",
    ]);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        j["tensors"]["gpu_0/data_0"]["shape"],
        serde_json::json!([1, 3, 224, 224])
    );
    assert_eq!(
        j["tensors"]["gpu_0/softmax_1"]["shape"],
        serde_json::json!([1, 1000])
    );
}

fn with_attrs(mut n: NodeProto, attrs: Vec<AttributeProto>) -> NodeProto {
    n.attribute = attrs;
    n
}

/// A decoder-shaped graph (attention and MLP blocks of MatMul, Add, Reshape,
/// Transpose, Split, Mul, Softmax, Relu), `layers` blocks deep.
fn decoder(layers: usize, d: i64, heads: i64, seq: i64) -> ModelProto {
    let w = |name: &str, dims: &[i64]| {
        build::raw_tensor(
            name,
            FLOAT,
            dims,
            Some(vec![0; 4 * dims.iter().product::<i64>() as usize]),
        )
    };
    let inits = vec![
        w("wqkv", &[d, 3 * d]),
        w("bqkv", &[3 * d]),
        w("wo", &[d, d]),
        w("w1", &[d, 4 * d]),
        w("w2", &[4 * d, d]),
        w("scale", &[]),
        build::int64_list("split_heads", &[1, seq, 3, heads, d / heads]),
        build::int64_list("merge", &[1, seq, d]),
    ];
    let mut nodes = Vec::new();
    let mut x = "x".to_string();
    for l in 0..layers {
        let p = |s: &str| format!("l{l}_{s}");
        let n = |op: &str, i: &[&str], o: &[&str]| node(op, i, o);
        nodes.push(n("MatMul", &[&x, "wqkv"], &[&p("qkv0")]));
        nodes.push(n("Add", &[&p("qkv0"), "bqkv"], &[&p("qkv")]));
        nodes.push(n("Reshape", &[&p("qkv"), "split_heads"], &[&p("qkv_h")]));
        nodes.push(with_attrs(
            n("Transpose", &[&p("qkv_h")], &[&p("qkv_t")]),
            vec![build::ints("perm", &[2, 0, 3, 1, 4])],
        ));
        nodes.push(with_attrs(
            n("Split", &[&p("qkv_t")], &[&p("q"), &p("k"), &p("v")]),
            vec![build::int("axis", 0), build::int("num_outputs", 3)],
        ));
        nodes.push(with_attrs(
            n("Transpose", &[&p("k")], &[&p("kt")]),
            vec![build::ints("perm", &[0, 1, 2, 4, 3])],
        ));
        nodes.push(n("MatMul", &[&p("q"), &p("kt")], &[&p("s0")]));
        nodes.push(n("Mul", &[&p("s0"), "scale"], &[&p("s")]));
        nodes.push(with_attrs(
            n("Softmax", &[&p("s")], &[&p("a")]),
            vec![build::int("axis", -1)],
        ));
        nodes.push(n("MatMul", &[&p("a"), &p("v")], &[&p("o")]));
        nodes.push(with_attrs(
            n("Transpose", &[&p("o")], &[&p("o_t")]),
            vec![build::ints("perm", &[0, 1, 3, 2, 4])],
        ));
        nodes.push(n("Reshape", &[&p("o_t"), "merge"], &[&p("o_m")]));
        nodes.push(n("MatMul", &[&p("o_m"), "wo"], &[&p("proj")]));
        nodes.push(n("Add", &[&x, &p("proj")], &[&p("res1")]));
        nodes.push(n("MatMul", &[&p("res1"), "w1"], &[&p("h")]));
        nodes.push(n("Relu", &[&p("h")], &[&p("h_act")]));
        nodes.push(n("MatMul", &[&p("h_act"), "w2"], &[&p("mlp")]));
        nodes.push(n("Add", &[&p("res1"), &p("mlp")], &[&p("out")]));
        x = p("out");
    }
    let mut m = model(GraphProto {
        node: nodes,
        input: vec![value("x", &[1, seq, d])],
        output: vec![untyped(&x)],
        initializer: inits,
        ..Default::default()
    });
    m.opset_import[0].version = Some(18);
    m
}

#[test]
fn a_decoder_graphs_matmul_flops_equal_the_analytic_count() {
    let (layers, d, heads, seq) = (3u64, 64u64, 4u64, 128u64);
    let dir = scratch("decoder");
    let path = write(
        &dir,
        "decoder.onnx",
        &decoder(layers as usize, d as i64, heads as i64, seq as i64).encode_to_vec(),
    );
    let (code, out, err) = c3(&["estimate", &path, "--format", "json", "--strict"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let matmul = j["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["op"] == "MatMul")
        .unwrap()
        .clone();
    // Per block, with FMA (one FLOP per multiply-add); at d = 64, 4 heads
    // and 128 tokens that is 8,388,608, and 25,165,824 for the 3 blocks:
    let dh = d / heads;
    let per_layer = seq * 3 * d * d           // x · Wqkv
        + heads * seq * seq * dh              // q · kᵀ
        + heads * seq * dh * seq              // a · v
        + seq * d * d                         // o · Wo
        + seq * 4 * d * d                     // res · W1
        + seq * d * 4 * d; // h · W2
    assert_eq!(matmul["flops"], layers * per_layer);
    assert_eq!(matmul["layers"], 6 * layers);
    assert_eq!(j["total"]["layers"], 18 * layers);
}

#[test]
fn a_map_input_carries_its_value_type_and_is_reported_not_analysed() {
    // M: map(string -> float64) -> DictVectorizer over 3 words -> V.
    let map = TypeProto {
        map_type: Some(Box::new(MapTypeProto {
            key_type: Some(8), // string
            value_type: Some(TypeProto {
                tensor_type: Some(TensorTypeProto {
                    elem_type: Some(11), // double
                    shape: None,
                }),
                ..Default::default()
            }),
        })),
        ..Default::default()
    };
    let mut dv = node("DictVectorizer", &["M"], &["V"]);
    dv.domain = Some("ai.onnx.ml".into());
    dv.attribute = vec![build::strings("string_vocabulary", &["a", "b", "c"])];
    let mut m = model(GraphProto {
        node: vec![dv],
        input: vec![build::value("M", map)],
        output: vec![untyped("V")],
        ..Default::default()
    });
    m.opset_import.push(build::opset("ai.onnx.ml", 3));
    let path = write(&scratch("map_input"), "dict.onnx", &m.encode_to_vec());
    let (code, out, err) = c3(&["shapes", &path, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    // onnxruntime's layout: [1, vocabulary], of the map's value type.
    assert_eq!(j["tensors"]["V"]["dtype"], "float64");
    assert_eq!(j["tensors"]["V"]["shape"], serde_json::json!([1, 3]));
    // The ONNX front end costs tensors only: the layer is listed, not counted.
    let (code, out, _) = c3(&["estimate", &path, "--format", "json"]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["unsupported"][0]["op"], "ai.onnx.ml::DictVectorizer");
    assert_eq!(j["unsupported"][0]["reason"], "the shape of 'M' is unknown");
}

/// The main graph's node and initializer lists are decoded into lists
/// made their size at once (the wire check counts them first): a list
/// grown by doubling would hold up to twice its room.
#[test]
fn the_main_graphs_lists_are_decoded_at_their_size() {
    let path = format!(
        "{}/examples/onnx/gpt_decoder_torchscript.onnx",
        env!("CARGO_MANIFEST_DIR")
    );
    let m = c3::onnx::load(&path).unwrap();
    let g = m.model.graph.as_ref().unwrap();
    assert!(g.node.len() > 100 && !g.initializer.is_empty());
    assert_eq!(g.node.capacity(), g.node.len());
    assert_eq!(g.initializer.capacity(), g.initializer.len());
}
