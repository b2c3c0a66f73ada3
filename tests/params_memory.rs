//! Model-level figures (issue 18, items 1 and 2): parameters (each distinct
//! weight tensor once, with its bytes) and the peak of live activation bytes.

use crate::common::cli::C3;
use crate::common::onnx::*;
use c3::rules::CountOptions;

const F32: u64 = 4;

fn conv(inputs: &[&str], out: &str) -> NodeProto {
    let mut n = node("Conv", inputs, &[out]);
    n.attribute.push(build::ints("pads", &[1, 1, 1, 1]));
    n
}

/// A residual block: y = Conv(Relu(Conv(x, W, B1)), W, B2) + x, both
/// convolutions sharing the weight W[8, 8, 3, 3]; x is [batch, 8, 4, 4].
fn residual() -> ModelProto {
    model(GraphProto {
        node: vec![
            conv(&["x", "W", "B1"], "a"),
            node("Relu", &["a"], &["b"]),
            conv(&["b", "W", "B2"], "c"),
            node("Add", &["c", "x"], &["y"]),
        ],
        initializer: vec![
            weights("W", &[8, 8, 3, 3]),
            weights("B1", &[8]),
            weights("B2", &[8]),
        ],
        input: vec![float("x", &[-1, 8, 4, 4])],
        output: vec![untyped("y")],
        ..Default::default()
    })
}

#[test]
fn a_shared_weight_counts_once_in_the_total() {
    let r = cost_with(&residual(), CountOptions::default(), &[("batch", 1)]);
    // Each convolution reads W (8 x 8 x 3 x 3 = 576) and its own bias (8).
    assert_eq!(layer(&r, "Conv-1").params, 576 + 8);
    assert_eq!(layer(&r, "Conv-2").params, 576 + 8);
    assert_eq!(layer(&r, "Conv-1").weight_bytes, (576 + 8) * F32);
    assert_eq!(layer(&r, "Relu-1").params, 0);
    // The total and the Conv row count W once: 576 + 8 + 8, not 2 x 584.
    assert_eq!(r.total.params, 576 + 8 + 8);
    assert_eq!(r.total.weight_bytes, (576 + 8 + 8) * F32);
    let conv_row = r.summary.iter().find(|s| s.op == "Conv").unwrap();
    assert_eq!(conv_row.totals.params, 576 + 8 + 8);
}

#[test]
fn a_residual_block_worked_out_by_hand() {
    // batch = 2: every activation is 2 x 8 x 4 x 4 = 256 floats, 1,024 bytes.
    let t = 2 * 8 * 4 * 4 * F32;
    let r = cost_with(&residual(), CountOptions::default(), &[("batch", 2)]);
    // Conv-1 (node 0): x (input, live from the start to Add) and a (0..1).
    assert_eq!(layer(&r, "Conv-1").live_bytes, 2 * t);
    // Relu-1 (node 1): x, a and b (1..2).
    assert_eq!(layer(&r, "Relu-1").live_bytes, 3 * t);
    // Conv-2 (node 2): x, b and c (2..3).
    assert_eq!(layer(&r, "Conv-2").live_bytes, 3 * t);
    // Add-1 (node 3): x, c and y (the output, to the end).
    assert_eq!(layer(&r, "Add-1").live_bytes, 3 * t);
    // The skip connection keeps x alive: three tensors at once, where a
    // plain chain holds two. The peak is first reached at Relu-1.
    assert_eq!(r.peak.bytes, 3 * t);
    assert_eq!(r.peak.at.as_deref(), Some("Relu-1"));
    // The weights are not activations: W and the biases are in no figure.
    let r1 = cost_with(&residual(), CountOptions::default(), &[("batch", 1)]);
    assert_eq!(r1.peak.bytes, 3 * 8 * 4 * 4 * F32);
}

#[test]
fn the_cli_reports_params_and_the_peak_in_every_format() {
    let m = residual();
    let (code, out, err) = c3_on(
        &m,
        "residual-json",
        &["estimate", "--dim", "batch=2", "--format", "json"],
    );
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    crate::common::schema::assert_valid("estimate.schema.json", &j);
    assert_eq!(j["total"]["params"], 592); // 576 + 8 + 8
    assert_eq!(j["total"]["weight_bytes"], 592 * 4);
    assert_eq!(j["total"]["peak_activation_bytes"], 3 * 1024);
    assert_eq!(j["total"]["peak_at"], "Relu-1");
    assert_eq!(j["layers"][0]["params"], 584);
    assert_eq!(j["layers"][0]["attrs"]["groups"], 1);
    assert_eq!(j["summary"][0]["params"], 592);
    // CSV: params by default, live bytes on request; the total row holds
    // the distinct parameters, the peak and (`peak_at`, a column CSV adds
    // beside live bytes) the layer where it occurs.
    let (_, csv, _) = c3_on(
        &m,
        "residual-csv",
        &[
            "estimate",
            "--dim",
            "batch=2",
            "--format",
            "csv",
            "--columns",
            "name,params,weights,live",
        ],
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "name,params,weights,live,peak_at");
    assert_eq!(lines[1], "Conv-1,584,2336,2048,");
    assert_eq!(lines[5], "total,592,2368,3072,Relu-1");
    // Markdown and the table: the summary's Params column and the line
    // under the tables.
    for format in ["md", "table"] {
        let (_, text, _) = c3_on(
            &m,
            &format!("residual-{format}"),
            &["estimate", "--dim", "batch=2", "--format", format],
        );
        assert!(
            text.contains(
                "Parameters: 592 (2.31 KiB of weights); peak activation memory: 3.00 KiB at Relu-1"
            ),
            "{text}"
        );
    }
    // HTML: two cards among the totals.
    let (_, html, _) = c3_on(
        &m,
        "residual-html",
        &["estimate", "--dim", "batch=2", "--format", "html"],
    );
    assert!(html.contains(
        r#"label">Parameters</div><div class="value">592</div><div class="note">2.312 KiB of weights</div>"#
    ));
    assert!(html.contains(
        r#"label">Peak activations</div><div class="value">3.000 KiB</div><div class="note">at Relu-1</div>"#
    ));
}

/// x[1, 8, 4, 4] through a convolution whose weight is stored as int8
/// (576 values, a float scale and an int8 zero point) and dequantized.
fn quantized() -> ModelProto {
    model(GraphProto {
        node: vec![
            node("DequantizeLinear", &["Wq", "s", "zp"], &["W"]),
            conv(&["x", "W"], "y"),
        ],
        initializer: vec![
            build::raw_tensor("Wq", 3, &[8, 8, 3, 3], Some(vec![0; 576])),
            weights("s", &[]),
            build::raw_tensor("zp", 3, &[], Some(vec![0])),
        ],
        input: vec![float("x", &[1, 8, 4, 4])],
        output: vec![untyped("y")],
        ..Default::default()
    })
}

#[test]
fn quantized_weights_count_at_their_own_size() {
    // Folded (the default): the dequantization runs at load time, and the
    // convolution's weight counts as what it is made from: 576 int8 values
    // (1 byte each), the float scale (4 bytes), the int8 zero point (1).
    let (code, out, err) = c3_on(&quantized(), "quantized", &["estimate", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["layers"][0]["op"], "Conv");
    assert_eq!(j["layers"][0]["params"], 576 + 1 + 1);
    assert_eq!(j["total"]["params"], 578);
    assert_eq!(j["total"]["weight_bytes"], 576 + 4 + 1);
    // Not folded: DequantizeLinear reads the same three tensors; its float
    // output is an activation the convolution reads.
    let (_, out, _) = c3_on(
        &quantized(),
        "quantized-nofold",
        &["estimate", "--no-fold", "--format", "json"],
    );
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["layers"][0]["op"], "DequantizeLinear");
    assert_eq!(j["layers"][0]["params"], 578);
    assert_eq!(j["layers"][1]["params"], 0);
    assert_eq!(j["total"]["params"], 578);
    assert_eq!(j["total"]["weight_bytes"], 581);
    // What if the float weights were int8: the 592 residual values, 1 byte.
    let (_, out, _) = c3_on(
        &residual(),
        "residual-int8",
        &[
            "estimate",
            "--dim",
            "batch=1",
            "--weights",
            "int8",
            "--format",
            "json",
        ],
    );
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["total"]["params"], 592);
    assert_eq!(j["total"]["weight_bytes"], 592);
}

/// A trace whose constants are marked `"const": true`: an int8 weight, an
/// int4 weight with a float scale, a bias shared by name, and an unnamed
/// constant.
const TRACE: &str = r#"{"layers": [
  {"op": "MatMulInteger", "name": "mmi",
   "inputs": [{"shape": [4, 16], "dtype": "uint8", "name": "x"},
              {"shape": [16, 32], "dtype": "int8", "const": true, "name": "w"}],
   "outputs": [{"shape": [4, 32], "dtype": "int32", "name": "y"}]},
  {"op": "Cast", "name": "cast", "attrs": {"to": 1},
   "inputs": [{"shape": [4, 32], "dtype": "int32", "name": "y"}],
   "outputs": [{"shape": [4, 32], "name": "yf"}]},
  {"op": "DequantizeLinear", "name": "dq",
   "inputs": [{"shape": [32, 8], "dtype": "int4", "const": true, "name": "q"},
              {"shape": [], "const": true, "name": "s"}],
   "outputs": [{"shape": [32, 8], "name": "qf"}]},
  {"op": "MatMul", "name": "mm",
   "inputs": [{"shape": [4, 32], "name": "yf"}, {"shape": [32, 8], "name": "qf"}],
   "outputs": [{"shape": [4, 8], "name": "z"}]},
  {"op": "Add", "name": "add1",
   "inputs": [{"shape": [4, 8], "name": "z"}, {"shape": [8], "const": true, "name": "bias"}],
   "outputs": [{"shape": [4, 8], "name": "z1"}]},
  {"op": "Add", "name": "add2",
   "inputs": [{"shape": [4, 8], "name": "z1"}, {"shape": [8], "const": true, "name": "bias"}],
   "outputs": [{"shape": [4, 8], "name": "z2"}]},
  {"op": "Mul", "name": "mul",
   "inputs": [{"shape": [4, 8], "name": "z2"}, {"shape": [8], "const": true}],
   "outputs": [{"shape": [4, 8]}]}
]}"#;

#[test]
fn a_trace_counts_its_const_tensors() {
    let j = C3::new()
        .args(["estimate", "-", "--format", "json"])
        .stdin(TRACE)
        .run()
        .ok()
        .json();
    let params = |i: usize| j["layers"][i]["params"].as_u64().unwrap();
    let bytes = |i: usize| j["layers"][i]["weight_bytes"].as_u64().unwrap();
    // mmi: the int8 weight, 16 x 32 = 512 values of 1 byte.
    assert_eq!((params(0), bytes(0)), (512, 512));
    // dq: 32 x 8 = 256 int4 values (128 bytes) and the float scale (4).
    assert_eq!((params(2), bytes(2)), (256 + 1, 128 + 4));
    // mm reads no constant; each Add reads the bias (8 floats).
    assert_eq!(params(3), 0);
    assert_eq!((params(4), params(5)), (8, 8));
    assert_eq!(params(6), 8);
    // The total counts the bias once (named), the unnamed constant apart:
    // 512 + 257 + 8 + 8 = 785 values, 512 + 132 + 32 + 32 = 708 bytes.
    assert_eq!(j["total"]["params"], 785);
    assert_eq!(j["total"]["weight_bytes"], 708);
    let add = j["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["op"] == "Add")
        .unwrap();
    assert_eq!(add["params"], 8);
    // Live bytes, the tensors linked by name (the last one by its layer):
    // x 64 (uint8), y 512 (int32), yf 512, qf 1,024, z, z1, z2 and the
    // unnamed output 128 each.
    let live: Vec<u64> = (0..7)
        .map(|i| j["layers"][i]["live_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(
        live,
        [
            64 + 512,         // mmi: x, y
            512 + 512,        // cast: y, yf
            512 + 1024,       // dq: yf (read by mm), qf
            512 + 1024 + 128, // mm: yf, qf, z
            128 + 128,        // add1: z, z1
            128 + 128,        // add2: z1, z2
            128 + 128,        // mul: z2, its output
        ]
    );
    assert_eq!(j["total"]["peak_activation_bytes"], 1664);
    assert_eq!(j["total"]["peak_at"], "mm");
}

#[test]
fn symbolic_sizes_are_bound_as_for_costs() {
    let trace = r#"{"layers": [{"op": "Relu",
        "inputs": [{"shape": ["batch", 64], "name": "a"}],
        "outputs": [{"shape": ["batch", 64], "name": "b"}]}]}"#;
    let run = C3::new().args(["estimate", "-"]).stdin(trace).run();
    assert_eq!(
        run.one_line_error(2),
        "error: <stdin>: sizes unknown until bound: batch; bind them with --dim batch=N"
    );
    let j = C3::new()
        .args(["estimate", "-", "--dim", "batch=3", "--format", "json"])
        .stdin(trace)
        .run()
        .ok()
        .json();
    // a and b, 3 x 64 floats each.
    assert_eq!(j["total"]["peak_activation_bytes"], 2 * 3 * 64 * 4);
}

#[test]
fn a_loop_body_adds_its_own_peak_at_its_node_once() {
    // Loop(M = 5, h0[1, 64]) with body h -> h @ W + b, as in control_flow.
    let body = GraphProto {
        node: vec![
            node("MatMul", &["h", "W"], &["hw"]),
            node("Add", &["hw", "b"], &["h_next"]),
            node("Identity", &["cond_in"], &["cond_out"]),
        ],
        input: vec![
            typed("i", INT64, &[]),
            typed("cond_in", BOOL, &[]),
            untyped("h"),
        ],
        output: vec![untyped("cond_out"), untyped("h_next")],
        ..Default::default()
    };
    let m = model(GraphProto {
        node: vec![with_graph(
            node("Loop", &["M", "", "h0"], &["h_final"]),
            "body",
            body,
        )],
        initializer: vec![
            weights("W", &[64, 64]),
            weights("b", &[64]),
            scalar("M", INT64, 5),
        ],
        input: vec![float("h0", &[1, 64])],
        output: vec![untyped("h_final")],
        ..Default::default()
    });
    let r = cost(&m);
    // The Loop: h0 and h_final, 64 floats each (M is a constant).
    let outer = 2 * 64 * F32;
    assert_eq!(layer(&r, "Loop-1").live_bytes, outer);
    // Inside: cond_in (a 1-byte bool, an input of the body, live to the
    // Identity), h (256), hw (256): 513 bytes over the Loop's.
    assert_eq!(
        layer(&r, "Loop-1/body/MatMul-1").live_bytes,
        outer + 1 + 256 + 256
    );
    // Add: cond_in, hw and h_next (an output of the body, to its end).
    assert_eq!(
        layer(&r, "Loop-1/body/Add-1").live_bytes,
        outer + 1 + 256 + 256
    );
    // Identity: cond_in, h_next and cond_out.
    assert_eq!(
        layer(&r, "Loop-1/body/Identity-1").live_bytes,
        outer + 1 + 256 + 1
    );
    // Five runs reuse the memory: the peak is not multiplied.
    assert_eq!(r.peak.bytes, outer + 513);
    assert_eq!(r.peak.at.as_deref(), Some("Loop-1/body/MatMul-1"));
    // Nor are the weights: W and b, read five times, are 4,096 + 64 values.
    assert_eq!(r.total.params, 64 * 64 + 64);
}

#[test]
fn an_if_counts_the_branch_the_totals_count() {
    let then_g = GraphProto {
        node: vec![node("MatMul", &["x", "W"], &["t"])],
        output: vec![untyped("t")],
        ..Default::default()
    };
    let else_g = GraphProto {
        node: vec![node("Relu", &["x"], &["e"]), node("Relu", &["e"], &["f"])],
        output: vec![untyped("f")],
        ..Default::default()
    };
    let m = model(GraphProto {
        node: vec![with_graph(
            with_graph(node("If", &["c"], &["y"]), "then_branch", then_g),
            "else_branch",
            else_g,
        )],
        initializer: vec![weights("W", &[64, 64])],
        input: vec![float("x", &[1, 64]), typed("c", BOOL, &[])],
        output: vec![untyped("y")],
        ..Default::default()
    });
    // x (read by the branches: live up to the If), c (1 byte) and y.
    let outer = 64 * F32 + 1 + 64 * F32;
    let r = cost(&m);
    // The then branch is counted (4,096 FLOPs against 128): t, 256 bytes.
    assert_eq!(layer(&r, "If-1").live_bytes, outer);
    assert_eq!(
        layer(&r, "If-1/then_branch/MatMul-1").live_bytes,
        outer + 256
    );
    assert_eq!(r.peak.bytes, outer + 256);
    // Counting the else branch instead: e and f live at once at its second
    // Relu, 512 bytes over the If's.
    let opts = CountOptions {
        branch: c3::rules::rule::BranchChoice::Else,
        ..CountOptions::default()
    };
    let r = cost_with(&m, opts, &[]);
    assert_eq!(r.peak.bytes, outer + 512);
    assert_eq!(r.peak.at.as_deref(), Some("If-1/else_branch/Relu-2"));
}

/// Parameters of the shipped exports against their initializers' element
/// counts (summed with `onnx.numpy_helper`, onnx 1.23.2).
#[test]
fn real_exports_count_their_initializers() {
    let cases: &[(&str, &[&str], u64)] = &[
        // Every float initializer, each once: blocks.0.ln1's weight and
        // bias feed five LayerNormalizations and count once.
        (
            "gpt_decoder_dynamo",
            &["--dim", "batch=1", "--dim", "seq=8"],
            167_170,
        ),
        // The same 167,168 initializer values, and ten float scalars the
        // TorchScript exporter writes as Constant nodes (two per block:
        // 0.25, -inf, sqrt(2), 1 and 0.5), which are constants of the model too.
        (
            "gpt_decoder_torchscript",
            &["--dim", "batch=1", "--dim", "seq=8"],
            167_168 + 10,
        ),
        // The light models keep each large weight as a ConstantOfShape of
        // its shape (an int64 initializer `<name>__SHAPE`): those weights'
        // elements plus the float initializers.
        ("light_bvlc_alexnet", &[], 60_965_224),
        ("light_densenet121", &[], 8_145_384 + 768),
        ("light_inception_v1", &[], 6_997_480 + 1_072),
        ("light_inception_v2", &[], 11_229_992 + 4_800),
        // One float initializer (1 value, a data-queue blob) is read by no
        // node: it is not counted.
        ("light_resnet50", &[], 25_608_360 + 1_793 - 1),
        ("light_shufflenet", &[], 1_420_032 + 120),
        ("light_squeezenet", &[], 1_234_856 + 640),
        ("light_vgg19", &[], 143_667_112 + 128),
        ("light_zfnet512", &[], 87_250_536 + 1 - 1),
    ];
    for (name, args, want) in cases {
        let j = C3::new()
            .args(["estimate", "--format", "json"])
            .arg(format!("examples/onnx/{name}.onnx"))
            .args(*args)
            .run()
            .ok()
            .json();
        assert_eq!(j["total"]["params"], *want, "{name}");
        // float32 weights: 4 bytes each.
        assert_eq!(j["total"]["weight_bytes"], want * 4, "{name}");
    }
}

#[test]
fn diff_compares_the_peak_of_live_activation_bytes() {
    // The residual block at batch 2 (A) and 4 (B): each activation is
    // batch x 8 x 4 x 4 floats, 1,024 then 2,048 bytes.
    let (t2, t4) = (2 * 8 * 4 * 4 * F32, 4 * 8 * 4 * 4 * F32);
    let (code, out, err) = c3_on(
        &residual(),
        "residual-diff",
        &[
            "diff", "--dim", "batch=2", "--b-dim", "batch=4", "--format", "json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    crate::common::schema::assert_valid("diff.schema.json", &j);
    // Three tensors at once at the peak (x held by the skip connection).
    let total = &j["total"];
    assert_eq!(total["a"]["peak_activation_bytes"], 3 * t2);
    assert_eq!(total["b"]["peak_activation_bytes"], 3 * t4);
    assert_eq!(total["delta"]["peak_activation_bytes"], 3 * (t4 - t2));
    assert_eq!(total["a"]["peak_at"], "Relu-1");
    assert_eq!(total["b"]["peak_at"], "Relu-1");
    // A layer's figure is its own live bytes: Conv-1 holds x and a.
    assert_eq!(j["layers"][0]["name"], "Conv-1");
    assert_eq!(j["layers"][0]["a"]["peak_activation_bytes"], 2 * t2);
    assert_eq!(j["layers"][0]["b"]["peak_activation_bytes"], 2 * t4);
    // A type's is its layers' largest: Conv-2 holds x, b and c.
    let conv = &j["summary"][0];
    assert_eq!(conv["op"], "Conv");
    assert_eq!(conv["a"]["peak_activation_bytes"], 3 * t2);
    // Markdown shows it beside the other figures, in bytes' units.
    let (_, md, _) = c3_on(
        &residual(),
        "residual-diff-md",
        &[
            "diff",
            "--dim",
            "batch=2",
            "--b-dim",
            "batch=4",
            "--format",
            "md",
            "--summary",
        ],
    );
    assert!(
        md.contains("Live (KiB) A | Live (KiB) B | Live (KiB) Δ | Live Δ%"),
        "{md}"
    );
    // total: 3 KiB -> 6 KiB, +3 KiB, +100%.
    assert!(md.contains("| 3.000 | 6.000 | +3.000 | +100.000 |"), "{md}");
}

/// A weight given by a Constant node, transposed at load time, then read
/// by a MatMul: x [2, 8] · Wᵀ, W a Constant [4, 8].
fn constant_weight() -> ModelProto {
    let mut constant = node("Constant", &[], &["W"]);
    constant.name = Some("c".into());
    constant
        .attribute
        .push(build::tensor_attr("value", weights("W", &[4, 8])));
    let mut transpose = node("Transpose", &["W"], &["Wt"]);
    transpose.name = Some("t".into());
    transpose.attribute.push(build::ints("perm", &[1, 0]));
    let mut matmul = node("MatMul", &["x", "Wt"], &["y"]);
    matmul.name = Some("mm".into());
    model(GraphProto {
        node: vec![constant, transpose, matmul],
        input: vec![float("x", &[2, 8])],
        output: vec![untyped("y")],
        ..Default::default()
    })
}

#[test]
fn a_constant_node_is_a_weight_not_a_folded_layer() {
    // Folded: the Constant is data, as an initializer is, so only the
    // Transpose made of it is listed as folded away; the MatMul's weight is
    // the 4 × 8 = 32 values (128 bytes) the Constant holds.
    let (code, out, err) = c3_on(
        &constant_weight(),
        "constant",
        &["estimate", "--format", "json"],
    );
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names = |key: &str| -> Vec<String> {
        j[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names("layers"), ["mm"]);
    assert_eq!(names("folded"), ["t"]);
    assert_eq!(j["layers"][0]["params"], 32);
    assert_eq!(j["total"]["weight_bytes"], 32 * F32);
    // 2 × 8 × 4 = 64 multiply-adds.
    assert_eq!(j["total"]["flops"], 64);
    // Not folded, every node runs as an eager framework runs it, the
    // Constant included (at no cost).
    let (_, out, _) = c3_on(
        &constant_weight(),
        "constant-nofold",
        &["estimate", "--no-fold", "--format", "json"],
    );
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ops: Vec<&str> = j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["Constant", "Transpose", "MatMul"]);
    assert_eq!(j["layers"][0]["flops"], 0);
    assert_eq!(j["layers"][2]["flops"], 64);
    // The Transpose reads the 32 weights; what it makes is an activation
    // the MatMul reads, though its value is known at load time.
    let params: Vec<u64> = j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["params"].as_u64().unwrap())
        .collect();
    assert_eq!(params, [0, 32, 0]);
    assert_eq!(j["total"]["params"], 32);
}

/// `c3 estimate --format json` of `m`, folded or not (`--no-fold`), in a
/// scratch folder named after `name` and `fold`; it must succeed.
fn estimated(m: &ModelProto, name: &str, fold: bool) -> serde_json::Value {
    let args: &[&str] = match fold {
        true => &["estimate", "--format", "json"],
        false => &["estimate", "--no-fold", "--format", "json"],
    };
    let (code, out, err) = c3_on(m, &format!("{name}-{fold}"), args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// `--no-fold` counts a weight once whatever its size: a transposed
/// initializer of 4 × 8 values (its transpose worked out at load time) as
/// one of 2000 × 8 (too large to be).
#[test]
fn unfolded_weights_count_once_whatever_their_size() {
    for rows in [4, 2000] {
        let mut transpose = node("Transpose", &["W"], &["Wt"]);
        transpose.attribute.push(build::ints("perm", &[1, 0]));
        let m = model(GraphProto {
            node: vec![transpose, node("MatMul", &["x", "Wt"], &["y"])],
            initializer: vec![weights("W", &[rows, 8])],
            input: vec![float("x", &[2, 8])],
            output: vec![untyped("y")],
            ..Default::default()
        });
        for fold in [true, false] {
            let j = estimated(&m, &format!("unfolded-{rows}"), fold);
            assert_eq!(j["total"]["params"], rows * 8, "{rows} rows, fold {fold}");
        }
    }
}

/// A Constant holds a weight whichever attribute writes its value: 64
/// values as `value_floats` and 64 as a `value` tensor are 128 parameters,
/// folded or run (`--no-fold`), where a run counted the first as an
/// activation and only the second as a weight.
#[test]
fn a_constants_values_are_weights_however_written() {
    let mut floats = node("Constant", &[], &["a"]);
    floats
        .attribute
        .push(build::floats("value_floats", &[1.0; 64]));
    let mut tensor = node("Constant", &[], &["b"]);
    tensor
        .attribute
        .push(build::tensor_attr("value", weights("B", &[64])));
    let m = model(GraphProto {
        node: vec![
            floats,
            tensor,
            node("Mul", &["x", "a"], &["t"]),
            node("Add", &["t", "b"], &["y"]),
        ],
        input: vec![float("x", &[1, 64])],
        output: vec![untyped("y")],
        ..Default::default()
    });
    for fold in [true, false] {
        let j = estimated(&m, "constant-attrs", fold);
        assert_eq!(j["total"]["params"], 128, "fold {fold}");
        // Each reader reads its 64 weights (256 bytes) and the 64 values of
        // x or t: 512 bytes.
        for l in j["layers"].as_array().unwrap() {
            if l["op"] != "Constant" {
                assert_eq!(
                    (l["params"].as_u64(), l["mread"].as_u64()),
                    (Some(64), Some(512))
                );
            }
        }
    }
}
