//! Issue 14: what real exports need — shape values that fold whatever their
//! element type, partly known values, clamped sizes, empty reductions,
//! constants evaluated, folding decided by constness, sequences per position.
//! Each cause has a minimal model here.

use std::collections::BTreeMap;

use c3::onnx::build::{self, FLOAT, INT64, int, ints, node_with, tensor_type, value};

use c3::onnx::proto::AttributeProto;

use crate::common::onnx::*;

/// Infers `m` (with `dims` bound) and prints every value's fact by name.
fn facts(m: &ModelProto, dims: &[(&str, i64)]) -> BTreeMap<String, String> {
    let bytes = bytes::Bytes::from(build::encode(m));
    let loaded = c3::onnx::from_bytes(bytes, "exports.onnx").expect("the model loads");
    let opts = c3::onnx::infer::InferOptions {
        dims: dims.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..Default::default()
    };
    let inferred = c3::onnx::infer::infer(&loaded, &opts).expect("shapes are inferred");
    inferred
        .values
        .into_iter()
        .map(|(n, f)| (n, f.to_string()))
        .collect()
}

fn fact(m: &ModelProto, name: &str) -> String {
    facts(m, &[])
        .remove(name)
        .unwrap_or_else(|| panic!("no value {name}"))
}

fn input(name: &str, elem: i32, dims: &[&str]) -> ValueInfoProto {
    value(name, tensor_type(elem, dims))
}

/// `ConstantOfShape(Cast(Reduce(Cast(Shape(x), FLOAT)), INT64))` over x[2, 3]:
/// the padded size torchvision's detectors compute.
fn reduce_float_shape(op: &str) -> ModelProto {
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["2", "3"]))
        .node(node("Shape", &["x"], &["s"]))
        .node(node_with("Cast", &["s"], &["sf"], vec![int("to", 1)]))
        .node(node_with(op, &["sf"], &["r"], vec![int("keepdims", 1)]))
        .node(node_with("Cast", &["r"], &["ri"], vec![int("to", 7)]))
        .node(node("ConstantOfShape", &["ri"], &["y"]))
        .output(untyped("y"))
        .build();
    model(g)
}

#[test]
fn float_reductions_of_shapes_fold_like_integer_ones() {
    // Shape [2, 3] as floats: max 3, min 2, sum 5, product 6.
    for (op, want) in [
        ("ReduceMax", 3),
        ("ReduceMin", 2),
        ("ReduceSum", 5),
        ("ReduceProd", 6),
    ] {
        assert_eq!(
            fact(&reduce_float_shape(op), "y"),
            format!("float32[{want}]"),
            "{op}"
        );
    }
}

#[test]
fn concat_of_known_and_unknown_shape_values_keeps_the_known_elements() {
    // p = Unsqueeze(ReduceMax(Cast(x, INT64)), 0): a size read from data.
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["5"]))
        .initializer(build::int64_list("head", &[1, 60]))
        .initializer(build::int64_list("zero", &[0]))
        .node(node_with("Cast", &["x"], &["xi"], vec![int("to", 7)]))
        .node(node_with(
            "ReduceMax",
            &["xi"],
            &["m"],
            vec![int("keepdims", 0)],
        ))
        .node(node("Unsqueeze", &["m", "zero"], &["p"]))
        .node(node_with(
            "Concat",
            &["head", "p", "p"],
            &["s"],
            vec![int("axis", 0)],
        ))
        .node(node("ConstantOfShape", &["s"], &["y"]))
        .output(untyped("y"))
        .build();
    let y = fact(&model(g), "y");
    // [1, 60, ?, ?]: the two unknown elements are sizes of their own.
    assert!(y.starts_with("float32[1, 60, value_"), "{y}");
    assert_eq!(y.matches(", ").count(), 3, "{y}");
}

/// `x[:end]` on x[n, 4] (Slice over axis 0, opset 13).
fn head_of(end: i64) -> ModelProto {
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["n", "4"]))
        .initializer(build::int64_list("starts", &[0]))
        .initializer(build::int64_list("ends", &[end]))
        .initializer(build::int64_list("axes", &[0]))
        .node(node("Slice", &["x", "starts", "ends", "axes"], &["y"]))
        .node(node("Relu", &["y"], &["z"]))
        .output(untyped("z"))
        .build();
    model(g)
}

#[test]
fn a_slice_past_a_symbolic_size_is_clamped_to_it() {
    let m = head_of(100);
    assert_eq!(fact(&m, "y"), "float32[min(100,n), 4]");
    // Bound below the end and above it: n rows, then 100.
    assert_eq!(facts(&m, &[("n", 30)])["y"], "float32[30, 4]");
    assert_eq!(facts(&m, &[("n", 300)])["y"], "float32[100, 4]");
    // Relu costs one maximum per element: min(n, 100) * 4 of them.
    for (n, want) in [(30, 30 * 4), (300, 100 * 4)] {
        let r = cost_with(&m, Default::default(), &[("n", n)]);
        assert_eq!(layer(&r, "Relu-1").flops, want, "n = {n}");
    }
}

#[test]
fn reductions_of_an_empty_tensor_are_counted_not_refused() {
    // x[0, 5] reduced over axis 0 with keepdims: [1, 5], nothing compared.
    for op in ["ReduceMax", "ReduceMin", "ReduceSum"] {
        let g = build::GraphBuilder::new()
            .input(input("x", FLOAT, &["0", "5"]))
            .node(node_with(op, &["x"], &["y"], vec![ints("axes", &[0])]))
            .output(untyped("y"))
            .build();
        let m = build::model(g, 12);
        let r = cost(&m);
        assert_eq!(r.unsupported.len(), 0, "{op}");
        let l = &r.layers[0];
        assert_eq!(l.flops, 0, "{op}: max(0 - 5, 0)");
        // Writes the 5 outputs (float32): 20 bytes.
        assert_eq!(l.mwrite, 5 * 4, "{op}");
    }
}

#[test]
fn one_hot_of_constants_is_evaluated() {
    // TorchScript's repeat_interleave builds Tile's repeats as
    // Reshape(OneHot(indices, depth, [off, on]), [-1]).
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["2", "3", "4"]))
        .initializer(build::int64_list("idx", &[1]))
        .initializer(build::int64_list("depth", &[3]))
        .initializer(build::int64_list("vals", &[1, 2]))
        .initializer(build::int64_list("flat", &[-1]))
        .node(node("OneHot", &["idx", "depth", "vals"], &["oh"]))
        .node(node("Reshape", &["oh", "flat"], &["reps"]))
        .node(node("Tile", &["x", "reps"], &["y"]))
        .output(untyped("y"))
        .build();
    let m = model(g);
    // OneHot([1], depth 3, off 1, on 2) = [[1, 2, 1]]: x tiled [2, 6, 4].
    assert_eq!(fact(&m, "y"), "float32[2, 6, 4]");
}

/// `Conv(Relu(w0), w)`: every input a constant, w0 of `n` elements.
fn conv_of_constants(channels: i64) -> ModelProto {
    // w0[1, channels, 4, 4]: 16 * channels elements.
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["1", "1"]))
        .initializer(weights("w0", &[1, channels, 4, 4]))
        .initializer(weights("w", &[8, channels, 3, 3]))
        .node(node("Relu", &["w0"], &["r"]))
        .node(node("Conv", &["r", "w"], &["c"]))
        .node(node("Add", &["x", "c"], &["y"]))
        .output(untyped("y"))
        .build();
    model(g)
}

#[test]
fn folding_is_decided_by_constness_at_every_size() {
    // 256 channels: 4,096 elements; 260: 4,160 (past the carried-value
    // limit). Either way Relu and Conv fold and only the Add runs.
    for channels in [256, 260] {
        let r = cost(&conv_of_constants(channels));
        let ops: Vec<&str> = r.layers.iter().map(|l| l.op.as_str()).collect();
        assert_eq!(ops, ["Add"], "{channels} channels");
    }
    // MatMul(ConstantOfShape(Shape(x)), w) over x[n, n]: x's shape is
    // known, so the MatMul folds at n = 1024 and at n = 1025 alike.
    for n in [1024, 1025] {
        let g = build::GraphBuilder::new()
            .input(input("x", FLOAT, &[&n.to_string(), &n.to_string()]))
            .initializer(weights("w", &[n, 2]))
            .node(node("Shape", &["x"], &["s"]))
            .node(node("ConstantOfShape", &["s"], &["c"]))
            .node(node("MatMul", &["c", "w"], &["y"]))
            .node(node("Relu", &["x"], &["z"]))
            .output(untyped("y"))
            .output(untyped("z"))
            .build();
        let r = cost(&model(g));
        let ops: Vec<&str> = r.layers.iter().map(|l| l.op.as_str()).collect();
        assert_eq!(ops, ["Shape", "Relu"], "n = {n}");
    }
}

/// A com.microsoft node (onnxruntime's contrib operators).
fn ms(op: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    let mut n = node_with(op, inputs, outputs, attrs);
    n.domain = Some("com.microsoft".into());
    n
}

const UINT8: i32 = 2;

#[test]
fn onnxruntime_quantized_operators_have_shapes_and_integer_costs() {
    // What onnxruntime's QOperator quantizer writes, one of each: s and z
    // are the (shared) float scale and uint8 zero point.
    let mut scale = build::raw_tensor("s", FLOAT, &[], Some(0.5f32.to_le_bytes().to_vec()));
    scale.name = Some("s".into());
    let g = build::GraphBuilder::new()
        .input(input("x", UINT8, &["1", "2", "4", "4"]))
        .initializer(scale)
        .initializer(build::raw_tensor("z", UINT8, &[], Some(vec![128])))
        .initializer(build::raw_tensor("w", UINT8, &[3, 2], Some(vec![1; 6])))
        .initializer(build::int64_list("flat", &[1, 2]))
        .node(ms(
            "QLinearAdd",
            &["x", "s", "z", "x", "s", "z", "s", "z"],
            &["a"],
            vec![],
        ))
        .node(ms(
            "QLinearGlobalAveragePool",
            &["a", "s", "z", "s", "z"],
            &["p"],
            vec![],
        ))
        .node(node("Reshape", &["p", "flat"], &["f"]))
        .node(ms(
            "QGemm",
            &["f", "s", "z", "w", "s", "z", "", "s", "z"],
            &["y"],
            vec![int("transB", 1)],
        ))
        .node(ms(
            "QLinearConcat",
            &["s", "z", "y", "s", "z", "y", "s", "z"],
            &["c"],
            vec![int("axis", 1)],
        ))
        .node(ms(
            "QLinearSigmoid",
            &["c", "s", "z", "s", "z"],
            &["g"],
            vec![],
        ))
        .node(ms(
            "QLinearReduceMean",
            &["g", "s", "z", "s", "z"],
            &["r"],
            vec![ints("axes", &[1])],
        ))
        .node(ms("DequantizeLinear", &["r", "s", "z"], &["out"], vec![]))
        .output(untyped("out"))
        .build();
    let mut m = model(g);
    m.opset_import.push(build::opset("com.microsoft", 1));
    let f = facts(&m, &[]);
    for (name, want) in [
        ("a", "uint8[1, 2, 4, 4]"),
        ("p", "uint8[1, 2, 1, 1]"),
        ("y", "uint8[1, 3]"),
        ("c", "uint8[1, 6]"),
        ("g", "uint8[1, 6]"),
        ("r", "uint8[1, 1]"),
        ("out", "float32[1, 1]"),
    ] {
        assert_eq!(f[name], want, "{name}");
    }
    let r = cost(&m);
    assert!(r.unsupported.is_empty(), "{:?}", r.unsupported);
    let figures: Vec<(&str, u64, u64)> = r
        .layers
        .iter()
        .map(|l| (l.op.as_str(), l.flops, l.iops))
        .collect();
    assert_eq!(
        figures,
        [
            // 32 outputs: 4 FLOPs and 3 IOPs each.
            ("QLinearAdd", 4 * 32, 3 * 32),
            // 2 outputs of 16 inputs: 32 IOPs summing, 2 + 2 per output.
            ("QLinearGlobalAveragePool", 2 * 2, 32 + 2 * 2),
            ("Reshape", 0, 0),
            // M N K = 1 * 3 * 2 = 6 multiply-adds, |A| + |B| = 2 + 6 zero
            // points, 3 outputs' zero points; 2 FLOPs per output.
            ("QGemm", 2 * 3, 6 + 2 + 6 + 3),
            ("QLinearConcat", 2 * 6, 2 * 6),
            ("QLinearSigmoid", 7 * 6, 2 * 6),
            // 6 summed into 1: 5 IOPs, then 2 per output.
            ("QLinearReduceMean", 2, 5 + 2),
            ("DequantizeLinear", 1, 1),
        ]
    );
}

#[test]
fn sequences_know_each_position_when_positions_are_known() {
    // SequenceAt(SequenceInsert(SequenceEmpty, x), 0) is x; the pieces of
    // SplitToSequence with sizes [1, 3] are [1, 4] and [3, 4], joined back
    // to [4, 4].
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["batch", "7"]))
        .input(input("y", FLOAT, &["4", "4"]))
        .initializer(build::int64_list("zero", &[0]))
        .initializer(build::int64_list("one", &[1]))
        .initializer(build::int64_list("sizes", &[1, 3]))
        .node(node_with(
            "SequenceEmpty",
            &[],
            &["e"],
            vec![int("dtype", 1)],
        ))
        .node(node("SequenceInsert", &["e", "x"], &["s"]))
        .node(node("SequenceAt", &["s", "zero"], &["x0"]))
        .node(node("SplitToSequence", &["y", "sizes"], &["parts"]))
        .node(node("SequenceAt", &["parts", "zero"], &["p0"]))
        .node(node("SequenceAt", &["parts", "one"], &["p1"]))
        .node(node_with(
            "ConcatFromSequence",
            &["parts"],
            &["whole"],
            vec![int("axis", 0)],
        ))
        .output(untyped("x0"))
        .output(untyped("whole"))
        .build();
    let f = facts(&model(g), &[]);
    assert_eq!(f["x0"], "float32[batch, 7]");
    assert_eq!(f["p0"], "float32[1, 4]");
    assert_eq!(f["p1"], "float32[3, 4]");
    // 1 + 3 rows.
    assert_eq!(f["whole"], "float32[4, 4]");
}

#[test]
fn binding_an_invented_symbol_reinfers_what_follows_from_it() {
    // c = Expand(min(x), Concat([3], p)) with p read from data: [3, v] for
    // a size v c3 names; y = Reshape(c, [-1, 2]) follows from it.
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["5"]))
        .initializer(build::int64_list("three", &[3]))
        .initializer(build::int64_list("zero", &[0]))
        .initializer(build::int64_list("pairs", &[-1, 2]))
        .node(node_with("Cast", &["x"], &["xi"], vec![int("to", 7)]))
        .node(node_with(
            "ReduceMax",
            &["xi"],
            &["m"],
            vec![int("keepdims", 0)],
        ))
        .node(node("Unsqueeze", &["m", "zero"], &["p"]))
        .node(node_with(
            "Concat",
            &["three", "p"],
            &["s"],
            vec![int("axis", 0)],
        ))
        .node(node_with(
            "ReduceMin",
            &["x"],
            &["lo"],
            vec![int("keepdims", 1)],
        ))
        .node(node("Expand", &["lo", "s"], &["c"]))
        .node(node("Reshape", &["c", "pairs"], &["y"]))
        .node(node("Relu", &["y"], &["z"]))
        .output(untyped("z"))
        .build();
    let m = model(g);
    let c = fact(&m, "c");
    let v = c
        .strip_prefix("float32[3, ")
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or_else(|| panic!("{c}"))
        .to_string();
    // Bound to 4: c is [3, 4] and the Reshape's -1 is 3 * 4 / 2 = 6.
    let f = facts(&m, &[(v.as_str(), 4)]);
    assert_eq!(f["c"], "float32[3, 4]");
    assert_eq!(f["y"], "float32[6, 2]");
    // `c3 shapes` takes the binding too.
    let flag = format!("{v}=4");
    let (code, out, err) = c3_on(&m, "bind_invented", &["shapes", "--dim", &flag]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("[6, 2]") || out.contains("6x2") || out.contains("6, 2"),
        "{out}"
    );
    // And the estimate: Relu, one maximum per element, 6 * 2 of them.
    let (code, out, err) = c3_on(
        &m,
        "bind_invented",
        &["estimate", "--format", "json", "--dim", &flag],
    );
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let relu = json["layers"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["op"] == "Relu"))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(relu["flops"], 6 * 2);
}

#[test]
fn a_declared_output_shape_used_as_a_fallback_takes_the_bindings() {
    // An op c3 does not know: its output is what the model declares.
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["batch", "4"]))
        .node(node("NoSuchOp", &["x"], &["y"]))
        .output(input("y", FLOAT, &["batch", "4"]))
        .build();
    let m = model(g);
    assert_eq!(facts(&m, &[("batch", 1)])["y"], "float32[1, 4]");
}

#[test]
fn a_loop_filling_a_sequence_gives_each_piece_its_shape() {
    // As TorchScript writes tensor_split: a Loop of 3 trips inserting
    // x[:, :i + 1] into a sequence, then SequenceAt per piece.
    let body = build::GraphBuilder::new()
        .input(input("i", INT64, &[]))
        .input(input("go", build::BOOL, &[]))
        // Declared as MViT's export declares it: two dimensions of no size.
        .input(value("s", build::seq_type(tensor_type(FLOAT, &["", ""]))))
        .initializer(build::int64_list("one", &[1]))
        .initializer(build::int64_list("zero", &[0]))
        .node(node("Add", &["i", "one"], &["end"]))
        .node(node("Slice", &["x", "zero", "end", "one"], &["piece"]))
        .node(node("SequenceInsert", &["s", "piece"], &["s2"]))
        .node(node("Identity", &["go"], &["go2"]))
        .output(untyped("go2"))
        .output(untyped("s2"))
        .build();
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["batch", "6"]))
        .initializer(build::scalar("trips", INT64, 3))
        .initializer(build::scalar("yes", build::BOOL, 1))
        .initializer(build::int64_list("first", &[0]))
        .initializer(build::int64_list("last", &[2]))
        .node(node_with(
            "SequenceEmpty",
            &[],
            &["empty"],
            vec![int("dtype", 1)],
        ))
        .node(with_graph(
            node("Loop", &["trips", "yes", "empty"], &["pieces"]),
            "body",
            body,
        ))
        .node(node("SequenceAt", &["pieces", "first"], &["p0"]))
        .node(node("SequenceAt", &["pieces", "last"], &["p2"]))
        .node(node("SequenceLength", &["pieces"], &["n"]))
        .output(untyped("p0"))
        .output(untyped("p2"))
        .build();
    let m = model(g);
    let f = facts(&m, &[]);
    // Pieces of 1, 2 and 3 columns.
    assert_eq!(f["p0"], "float32[batch, 1]");
    assert_eq!(f["p2"], "float32[batch, 3]");
    // Costed, not listed as unsupported: the sequence carried through the
    // body is known piece by piece, so the body's declared `[batch, 6]`
    // (or `[?, ?]`, as MViT's export declares it) adds no made-up size.
    let r = cost_with(&m, Default::default(), &[("batch", 4)]);
    assert!(r.unsupported.is_empty(), "{:?}", r.unsupported);
    let slice = layer(&r, "Loop-1/body/Slice-1");
    assert_eq!(slice.runs, 3);
    // Run trip by trip, each trip is costed on its own sizes: x[:, :1],
    // x[:, :2] and x[:, :3] write 4 x (1 + 2 + 3) floats, 96 bytes (the last
    // trip three times over would say 144).
    assert_eq!(slice.mwrite, 4 * (1 + 2 + 3) * 4);
    assert_eq!(layer(&r, "Loop-1/body/SequenceInsert-1").runs, 3);
    assert_eq!(layer(&r, "SequenceAt-1").mwrite, 4 * 4);
    assert_eq!(layer(&r, "SequenceAt-2").mwrite, 4 * 3 * 4);
}

#[test]
fn folded_layers_are_listed_with_their_cost_and_no_fold_counts_them() {
    let m = conv_of_constants(260);
    let ops = |json: &serde_json::Value, key: &str| -> Vec<(String, u64)> {
        json[key]
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|l| {
                        (
                            l["op"].as_str().unwrap_or("").to_string(),
                            l["flops"].as_u64().unwrap_or(0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    // Relu: 260 * 4 * 4 = 4,160 maxima; Conv: [1, 8, 2, 2] outputs of
    // 260 * 3 * 3 = 2,340 multiply-adds each; Add: 32 sums.
    let folded = vec![("Relu".to_string(), 4160), ("Conv".to_string(), 32 * 2340)];
    let (code, out, err) = c3_on(&m, "folded", &["estimate", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(ops(&json, "layers"), [("Add".to_string(), 32)]);
    assert_eq!(ops(&json, "folded"), folded);
    assert_eq!(json["total"]["flops"], 32);
    let (code, out, err) = c3_on(&m, "folded", &["estimate", "--format", "json", "--no-fold"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(ops(&json, "folded"), []);
    assert_eq!(json["total"]["flops"], 4160 + 32 * 2340 + 32);
    // The text report lists them too.
    let (code, out, err) = c3_on(&m, "folded", &["estimate"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Folded at load time"), "{out}");
    assert!(out.contains("Conv-1 (Conv): 74880 FLOPs"), "{out}");
}

/// Each export `scripts/export_issue14.py` made (weight-stripped, in
/// tests/fixtures/exports/) against onnxruntime's shapes recorded with it:
/// every top-level value's shape, no unsupported layer, and as many
/// convolutions and matrix products as the export has.
#[test]
fn real_exports_have_onnxruntimes_shapes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/exports");
    let mut checked = 0;
    for name in ["resnet18_int8", "fasterrcnn", "mvit", "mixtral", "ssdlite"] {
        let model = dir.join(format!("{name}.onnx"));
        let want: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.shapes.json"))).unwrap(),
        )
        .unwrap();
        let run = crate::common::cli::C3::new()
            .args(["shapes", "--format", "json"])
            .arg(&model)
            .run();
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let got = run.json();
        let shapes = want["shapes"].as_object().unwrap();
        let mut differ = Vec::new();
        // The inputs' sizes are fixed: a size c3 leaves symbolic is data
        // (NonZero, NonMaxSuppression, an If over data), taken at its upper
        // bound when costed; every other size must be onnxruntime's.
        let mut symbolic = 0;
        for (value, shape) in shapes.iter().filter(|(_, s)| s.is_array()) {
            let mine = &got["tensors"][value]["shape"];
            let agree = match (mine.as_array(), shape.as_array()) {
                (Some(a), Some(b)) if a.len() == b.len() => a.iter().zip(b).all(|(x, y)| {
                    symbolic += usize::from(x.is_string());
                    x.is_string() || x == y
                }),
                _ => false,
            };
            if !agree {
                differ.push(format!("{value}: {mine} vs {shape}"));
            }
        }
        // Data decides sizes only in the detectors (NonMaxSuppression,
        // TopK) and the Mixtral's expert routing (NonZero).
        if ["resnet18_int8", "mvit"].contains(&name) {
            assert_eq!(symbolic, 0, "{name}");
        }
        assert!(differ.is_empty(), "{name}:\n{}", differ.join("\n"));
        let run = crate::common::cli::C3::new()
            .args(["estimate", "--format", "json"])
            .arg(&model)
            .run();
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let report = run.json();
        assert_eq!(
            report["unsupported"].as_array().map(Vec::len),
            Some(0),
            "{name}"
        );
        for (op, n) in want["counts"].as_object().unwrap() {
            let counted = report["layers"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|l| {
                    l["op"]
                        .as_str()
                        .is_some_and(|o| o.rsplit("::").next() == Some(op))
                })
                .count();
            assert_eq!(Some(counted as u64), n.as_u64(), "{name}: {op}");
        }
        checked += 1;
    }
    // The QOperator ResNet18 (34 values, 20 QLinearConv, 1 QGemm), Faster
    // R-CNN (1,517 values, 75 Conv, 4 Gemm), MViT (12,266 values, 49 Conv,
    // 115 MatMul, 1 Gemm), the tiny Mixtral (881 values, 31 MatMul) and
    // SSDlite (3,593 values, 98 Conv; its kept boxes sum 90 classes'
    // min(300, n): past the former limit of 64 terms a dimension).
    assert_eq!(checked, 5);
}

/// `shapes -o` reads a model as the listing does (its nodes decoded each in
/// its turn and dropped once inferred) and writes the model's bytes straight
/// from the mapped file: on every real export, the copy is byte for byte the
/// one the library makes from the whole decoded model, and the count it
/// reports is the number of value_info entries the copy gained.
#[test]
fn shapes_o_writes_what_the_whole_model_gives() {
    use prost::Message;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/exports");
    let out = crate::common::cli::scratch("exports", "shapes_o");
    let mut written = Vec::new();
    for name in ["resnet18_int8", "fasterrcnn", "mvit", "mixtral", "ssdlite"] {
        let model = dir.join(format!("{name}.onnx"));
        let path = model.to_str().unwrap();
        let copy = out.join(format!("{name}.onnx"));
        let run = crate::common::cli::C3::new()
            .args(["shapes", path, "-o", copy.to_str().unwrap()])
            .run();
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let got = std::fs::read(&copy).unwrap();
        let (want, n) = c3::Model::open_onnx(path)
            .unwrap()
            .shapes(&BTreeMap::new(), &BTreeMap::new())
            .unwrap()
            .model_bytes();
        assert!(got == want, "{name}: the copies differ");
        let original = std::fs::read(&model).unwrap();
        // c3's mark first, then the original bytes.
        let kept = &got[c3::output::mark::onnx_mark_len(&got)..];
        assert_eq!(&kept[..original.len()], &original[..], "{name}");
        let entries = |b: &[u8]| {
            c3::onnx::proto::ModelProto::decode(b)
                .unwrap()
                .graph
                .map_or(0, |g| g.value_info.len())
        };
        assert_eq!(entries(&got), entries(&original) + n, "{name}");
        assert!(
            run.stderr
                .contains(&format!(" with {n} inferred value_info")),
            "{name}: {}",
            run.stderr
        );
        written.push(n);
    }
    // Every value a node makes that the export does not declare as an
    // input, output, value_info or initializer (counted with the onnx
    // package: 58, 1,604, 12,447, 896, 3,702), but MViT's 153 sequences
    // (51 pooling loops, each a SequenceEmpty, a Loop and a SequenceInsert
    // output), which are not tensors: 12,447 - 153 = 12,294.
    assert_eq!(written, [58, 1604, 12_294, 896, 3702]);
}

/// Pad and Resize over symbolic sizes and sizes partly known as values.
#[test]
fn pad_and_resize_of_symbolic_and_partly_known_sizes() {
    let scales: Vec<u8> = [1f32, 1.0, 2.0, 0.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["1", "3", "n", "m"]))
        .input(input("y", FLOAT, &["1", "3", "a", "b"]))
        .initializer(build::int64_list("pads", &[0, 0, -2, 1, 0, 0, -3, 1]))
        .initializer(build::int64_list("from", &[2]))
        .initializer(build::int64_list("to", &[4]))
        .initializer(build::int64_list("nc", &[1, 3]))
        .initializer(build::int64_list("box", &[100, 100]))
        .initializer(build::raw_tensor("scales", FLOAT, &[4], Some(scales)))
        // Negative pads crop: n - 2 - 3 rows, m + 1 + 1 columns.
        .node(node("Pad", &["x", "pads"], &["p"]))
        // Sizes [1, 3] ++ y's last two sizes, known only as symbols.
        .node(node("Shape", &["y"], &["ys"]))
        .node(node("Slice", &["ys", "from", "to"], &["hw"]))
        .node(node_with(
            "Concat",
            &["nc", "hw"],
            &["sizes"],
            vec![int("axis", 0)],
        ))
        .node(node("Resize", &["x", "", "", "sizes"], &["r"]))
        // Scales 2 and 0.5: 2n rows and floor(m / 2) columns.
        .node(node("Resize", &["x", "", "scales"], &["r2"]))
        // Into a 100 x 100 box, keeping the aspect ratio: the scale is
        // min(100 / n, 100 / m), known once n and m are.
        .node(node_with(
            "Resize",
            &["x", "", "", "box"],
            &["r3"],
            vec![
                ints("axes", &[2, 3]),
                build::string("keep_aspect_ratio_policy", "not_larger"),
            ],
        ))
        .output(untyped("p"))
        .output(untyped("r"))
        .output(untyped("r2"))
        .output(untyped("r3"))
        .build();
    let m = build::model(g, 19);
    let f = facts(&m, &[]);
    assert_eq!(f["p"], "float32[1, 3, n-5, m+2]");
    assert_eq!(f["r"], "float32[1, 3, a, b]");
    assert_eq!(f["r2"], "float32[1, 3, 2*n, floor(m/2)]");
    // n = 200, m = 100: scale min(0.5, 1) = 0.5, so 100 x 50; the padded
    // size 200 - 5 = 195.
    let f = facts(&m, &[("n", 200), ("m", 100), ("a", 7), ("b", 9)]);
    assert_eq!(f["p"], "float32[1, 3, 195, 102]");
    assert_eq!(f["r"], "float32[1, 3, 7, 9]");
    assert_eq!(f["r3"], "float32[1, 3, 100, 50]");
}

/// A Loop that grows a carried tensor by one piece per trip (how Mask
/// R-CNN pastes its masks): after M trips it has at most M pieces (the
/// body's condition could stop it sooner), a size costs take at M.
#[test]
fn a_loop_that_grows_a_tensor_each_trip_is_bounded_by_its_trips() {
    let body = build::GraphBuilder::new()
        .input(input("i", INT64, &[]))
        .input(input("go", build::BOOL, &[]))
        .input(input("acc", FLOAT, &["", "4"]))
        .node(node_with(
            "Concat",
            &["acc", "x"],
            &["acc2"],
            vec![int("axis", 0)],
        ))
        .node(node("Identity", &["go"], &["go2"]))
        .output(untyped("go2"))
        .output(untyped("acc2"))
        .build();
    let g = build::GraphBuilder::new()
        .input(input("x", FLOAT, &["1", "4"]))
        .initializer(build::scalar("three", INT64, 3))
        .initializer(build::scalar("yes", build::BOOL, 1))
        .initializer(build::zeros("empty", &[0, 4]))
        .node(with_graph(
            node("Loop", &["three", "yes", "empty"], &["all"]),
            "body",
            body,
        ))
        .node(node("Relu", &["all"], &["y"]))
        .output(untyped("y"))
        .build();
    let m = model(g);
    let f = facts(&m, &[]);
    assert!(f["all"].starts_with("float32[either_"), "{}", f["all"]);
    // Costs take the bound: 0 rows + 3 trips x 1 row, so the Relu over
    // [3, 4] is 12 FLOPs, and the report says the size was assumed.
    let r = cost(&m);
    assert_eq!(layer(&r, "Relu-1").flops, 3 * 4);
    assert!(
        r.assumed
            .iter()
            .any(|a| a.value == 3 && a.symbol.starts_with("either_")),
        "{:?}",
        r.assumed
    );
}
