//! Models as onnxruntime saves them after its graph optimizations (issue
//! 54): com.microsoft FusedConv and FusedGemm and the com.microsoft.nchwc
//! operators, their rules against hand counts.

use crate::common::*;

/// A layer of `domain`.
fn of(domain: &str, op: &str) -> Layer {
    let mut l = layer(op);
    l.node.domain = domain.to_string();
    l
}

const MS: &str = "com.microsoft";
const NCHWC: &str = "com.microsoft.nchwc";

/// X [1, 16, 8, 8] through W [32, 16, 3, 3] (pads 1) and B [32] into Y
/// [1, 32, 8, 8], with `activation` and, when `added`, a Z of Y's shape.
fn conv_like(domain: &str, op: &str, activation: Option<&str>, added: bool) -> Layer {
    let mut l = of(domain, op)
        .input(&[1, 16, 8, 8])
        .input(&[32, 16, 3, 3])
        .input(&[32]);
    if added {
        l = l.input(&[1, 32, 8, 8]);
    }
    l = l.ints("pads", &[1, 1, 1, 1]).output(&[1, 32, 8, 8]);
    match activation {
        Some(a) => l.string("activation", a),
        None => l,
    }
}

/// |Y| = 32 * 8 * 8 = 2048 outputs, each a window of 16 * 3 * 3 = 144.
const Y: u64 = 2048;
const WINDOW: u64 = 144;

#[test]
fn fused_conv_counts_its_conv_the_added_input_and_the_activation() {
    // Without an activation or Z it is a Conv: 2048 * 144 multiply-adds,
    // the bias in them; 2 * 2048 * 144 without FMA.
    let e = conv_like(MS, "FusedConv", None, false).eval(true);
    assert_eq!(e.flops, Y * WINDOW);
    assert_eq!(
        conv_like(MS, "FusedConv", None, false).eval(false).flops,
        2 * Y * WINDOW
    );
    // Each activation per output element, as its own rule counts it.
    for (act, on, off) in [
        ("Relu", 1, 1),
        ("LeakyRelu", 2, 2),
        ("Sigmoid", 4, 4),
        ("Tanh", 1, 1),
        ("HardSigmoid", 3, 4),
        ("Clip", 2, 2),
        ("HardSwish", 4, 5),
    ] {
        let l = conv_like(MS, "FusedConv", Some(act), false);
        assert_eq!(l.eval(true).flops, Y * WINDOW + on * Y, "{act}");
        assert_eq!(l.eval(false).flops, 2 * Y * WINDOW + off * Y, "{act}");
    }
    // Z adds one addition per output; everything is read once, Y written once.
    let e = conv_like(MS, "FusedConv", Some("Relu"), true).eval(true);
    assert_eq!(e.flops, Y * WINDOW + Y + Y);
    assert_eq!(e.mread, (16 * 64 + 32 * 144 + 32 + Y) * F32);
    assert_eq!(e.mwrite, Y * F32);
    assert_eq!(param(&e, "act"), "\"Relu\"");
    // What it replaces, Conv then Add then Relu, costs the same FLOPs.
    let conv = layer("Conv")
        .input(&[1, 16, 8, 8])
        .input(&[32, 16, 3, 3])
        .input(&[32])
        .ints("pads", &[1, 1, 1, 1])
        .output(&[1, 32, 8, 8]);
    let add = layer("Add")
        .input(&[1, 32, 8, 8])
        .input(&[1, 32, 8, 8])
        .output(&[1, 32, 8, 8]);
    let relu = layer("Relu").input(&[1, 32, 8, 8]).output(&[1, 32, 8, 8]);
    for fma in [true, false] {
        let parts = conv.eval(fma).flops + add.eval(fma).flops + relu.eval(fma).flops;
        let fused = conv_like(MS, "FusedConv", Some("Relu"), true)
            .eval(fma)
            .flops;
        assert_eq!(fused, parts, "fma {fma}");
    }
}

#[test]
fn fused_gemm_counts_its_gemm_and_the_activation() {
    // A [4, 64] x B [64, 32] + C [32]: 4 * 32 = 128 outputs of K = 64.
    let l = |act: &str| {
        of(MS, "FusedGemm")
            .input(&[4, 64])
            .input(&[64, 32])
            .input(&[32])
            .output(&[4, 32])
            .string("activation", act)
    };
    // 128 * 64 multiply-adds, 128 bias additions, 128 maxima.
    let e = l("Relu").eval(true);
    assert_eq!(e.flops, 128 * 64 + 128 + 128);
    assert_eq!(e.mread, (256 + 2048 + 32) * F32);
    assert_eq!(e.mwrite, 128 * F32);
    // Without FMA: 2K per output with the bias, then the activation.
    assert_eq!(l("LeakyRelu").eval(false).flops, 128 * 2 * 64 + 2 * 128);
    assert_eq!(l("HardSigmoid").eval(false).flops, 128 * 2 * 64 + 4 * 128);
}

#[test]
fn nchwc_conv_is_a_fused_conv_with_its_sum() {
    // The same counts as FusedConv: its Sum is FusedConv's Z.
    for (act, added) in [
        (None, false),
        (Some("Relu"), true),
        (Some("HardSwish"), false),
    ] {
        for fma in [true, false] {
            let nchwc = conv_like(NCHWC, "Conv", act, added).eval(fma);
            let fused = conv_like(MS, "FusedConv", act, added).eval(fma);
            assert_eq!((nchwc.flops, nchwc.mread), (fused.flops, fused.mread));
        }
    }
    // Depthwise over 32 blocked channels: group 32, W [32, 1, 3, 3], a
    // window of 9 per output, 2048 * 9 multiply-adds.
    let e = of(NCHWC, "Conv")
        .input(&[1, 32, 8, 8])
        .input(&[32, 1, 3, 3])
        .int("group", 32)
        .ints("pads", &[1, 1, 1, 1])
        .output(&[1, 32, 8, 8])
        .eval(true);
    assert_eq!(e.flops, Y * 9);
    assert_eq!(param(&e, "groups"), "32");
}

#[test]
fn nchwc_reorders_copy_and_pools_count_their_plain_forms() {
    // ReorderInput: 24 channels padded to 32, a copy of 24 * 35 elements
    // into 32 * 35; ReorderOutput the way back.
    let e = of(NCHWC, "ReorderInput")
        .input(&[1, 24, 7, 5])
        .output(&[1, 32, 7, 5])
        .eval(true);
    assert_eq!((e.flops, e.mread, e.mwrite), (0, 840 * F32, 1120 * F32));
    let e = of(NCHWC, "ReorderOutput")
        .input(&[1, 32, 7, 5])
        .output(&[1, 24, 7, 5])
        .int("channels", 24)
        .eval(true);
    assert_eq!((e.flops, e.mread, e.mwrite), (0, 1120 * F32, 840 * F32));
    // X [1, 32, 8, 6]; 2 x 2 windows, stride 2: Y [1, 32, 4, 3], 384 outputs.
    let pool = |op: &str| {
        of(NCHWC, op)
            .input(&[1, 32, 8, 6])
            .ints("kernel_shape", &[2, 2])
            .ints("strides", &[2, 2])
            .output(&[1, 32, 4, 3])
            .eval(true)
    };
    assert_eq!(pool("MaxPool").flops, 384 * 3); // window - 1 comparisons
    assert_eq!(pool("AveragePool").flops, 384 * 4); // 3 additions, 1 division
    let global = |op: &str| {
        of(NCHWC, op)
            .input(&[1, 32, 8, 6])
            .output(&[1, 32, 1, 1])
            .eval(true)
            .flops
    };
    assert_eq!(global("GlobalAveragePool"), 32 * 48); // 47 additions, 1 division
    assert_eq!(global("GlobalMaxPool"), 32 * 47);
    // Upsample [1, 32, 6, 5] by 2 x 2 into [1, 32, 12, 10]: nearest copies
    // (the 960 inputs read once); linear interpolates 4 neighbours with 3
    // interpolations of 3 FLOPs, 9 per output.
    let up = |mode: &str| {
        of(NCHWC, "Upsample")
            .input(&[1, 32, 6, 5])
            .output(&[1, 32, 12, 10])
            .ints("scales", &[1, 1, 2, 2])
            .string("mode", mode)
            .eval(true)
    };
    let e = up("nearest");
    assert_eq!((e.flops, e.mread, e.mwrite), (0, 960 * F32, 3840 * F32));
    assert_eq!(up("linear").flops, 9 * 3840);
}

/// x [1, 24, 4, 4] into NCHWc, then a 1 x 1 NCHWc Conv for each of
/// `convs` (its weights' input channels), each back to 24 channels.
fn reordered(convs: &[i64]) -> crate::common::onnx::ModelProto {
    use crate::common::onnx::*;
    let mut nodes = vec![with_domain(node("ReorderInput", &["x"], &["xb"]))];
    let mut init = Vec::new();
    let mut outputs = Vec::new();
    for (i, &c) in convs.iter().enumerate() {
        let (w, y, out) = (format!("w{i}"), format!("yb{i}"), format!("y{i}"));
        init.push(weights(&w, &[32, c, 1, 1]));
        nodes.push(with_domain(node("Conv", &["xb", &w], &[&y])));
        let mut back = with_domain(node("ReorderOutput", &[&y], &[&out]));
        back.attribute.push(build::int("channels", 24));
        nodes.push(back);
        outputs.push(untyped(&out));
    }
    if convs.is_empty() {
        let mut back = with_domain(node("ReorderOutput", &["xb"], &["y"]));
        back.attribute.push(build::int("channels", 24));
        nodes.push(back);
        outputs.push(untyped("y"));
    }
    let mut m = model(GraphProto {
        node: nodes,
        input: vec![float("x", &[1, 24, 4, 4])],
        output: outputs,
        initializer: init,
        ..Default::default()
    });
    m.opset_import.push(build::opset(NCHWC, 1));
    m
}

fn with_domain(mut n: crate::common::onnx::NodeProto) -> crate::common::onnx::NodeProto {
    n.domain = Some(NCHWC.into());
    n
}

#[test]
fn a_reorder_takes_the_padded_channels_the_convolution_reading_it_has() {
    use crate::common::onnx::c3_on;
    // 24 channels are 24 at a block of 8 and 32 at 16; the weights
    // [32, 32, 1, 1] say 32, for the reorder's output and the Conv's input.
    let (code, out, err) = c3_on(
        &reordered(&[32]),
        "settled",
        &["estimate", "--format", "json"],
    );
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let reorder = &report["layers"][0];
    assert_eq!(
        reorder["outputs"][0]["shape"],
        serde_json::json!([1, 32, 4, 4])
    );
    // A copy of 24 * 16 floats into 32 * 16, 4 bytes each; the Conv: 32 *
    // 16 outputs of 32 multiply-adds.
    assert_eq!(reorder["mread"], 24 * 16 * F32);
    assert_eq!(reorder["mwrite"], 32 * 16 * F32);
    assert_eq!(report["layers"][1]["flops"], 32 * 16 * 32);
    // Two convolutions that disagree make the model an error, in one line.
    let (code, _, err) = c3_on(&reordered(&[32, 24]), "disagree", &["estimate"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "NCHWc Conv input channels: 24 here, but 32 where nchwc_channels_1 was settled before"
        ),
        "{err}"
    );
    // Nothing settles a reorder no convolution reads: it asks for the size.
    let (code, _, err) = c3_on(&reordered(&[]), "unsettled", &["estimate"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("sizes unknown until bound: nchwc_channels_1"),
        "{err}"
    );
}
