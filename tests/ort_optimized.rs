//! Models as onnxruntime saves them after its graph optimizations (issue
//! 54): com.microsoft FusedConv and FusedGemm and the com.microsoft.nchwc
//! operators, their rules against hand counts, then the models
//! `scripts/ort_optimized.py` saved (tests/fixtures/ort_optimized/) against
//! onnxruntime's shapes and the unoptimized models' counts.

use std::path::Path;

use crate::common::cli::C3;
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

// ------------------------------------------------------- optimized models

/// The fixtures `scripts/ort_optimized.py` wrote: each model optimized at
/// EXTENDED (`ext`) and ALL (`all`, NCHWc at this machine's block of 16),
/// the zoo also at ALL without the NCHWc transformer (`alln`).
const OPTIMIZED: [&str; 7] = [
    "resnet18.ext",
    "resnet18.all",
    "mobilenet_v3_small.ext",
    "mobilenet_v3_small.all",
    "zoo.ext",
    "zoo.all",
    "zoo.alln",
];

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/ort_optimized/{name}"))
}

/// `c3 estimate --format json` of a fixture, FMA on or off.
fn estimate(name: &str, fma: bool) -> serde_json::Value {
    let mut c3 = C3::new().args(["estimate", "--format", "json"]);
    if !fma {
        c3 = c3.arg("--no-fma");
    }
    let run = c3.arg(fixture(&format!("{name}.onnx"))).run();
    assert_eq!(run.code, 0, "{name}: {}", run.stderr);
    run.json()
}

/// The multiply-adds of a report's convolutions and matrix products, from
/// the shapes c3 gives their layers: |Y| * W[1] * kh * kw per convolution
/// (Conv, FusedConv, NCHWc Conv), M * N * K per Gemm or FusedGemm.
fn products(report: &serde_json::Value) -> u64 {
    let dims = |t: &serde_json::Value| -> Vec<u64> {
        t["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect()
    };
    let mut total = 0;
    for l in report["layers"].as_array().unwrap() {
        let op = l["op"].as_str().unwrap().rsplit("::").next().unwrap();
        let y: u64 = dims(&l["outputs"][0]).iter().product();
        match op {
            "Conv" | "FusedConv" => total += y * dims(&l["inputs"][1])[1..].iter().product::<u64>(),
            "Gemm" | "FusedGemm" => {
                let a = dims(&l["inputs"][0]);
                total += y * if l["attrs"]["transA"] == 1 {
                    a[0]
                } else {
                    a[1]
                };
            }
            _ => {}
        }
    }
    total
}

#[test]
fn optimized_models_have_onnxruntimes_shapes_and_every_layer_counted() {
    for name in OPTIMIZED {
        let want: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(fixture(&format!("{name}.shapes.json"))).unwrap(),
        )
        .unwrap();
        let run = C3::new()
            .args(["shapes", "--format", "json"])
            .arg(fixture(&format!("{name}.onnx")))
            .run();
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let got = run.json();
        let mut differ = Vec::new();
        for (value, shape) in want["shapes"].as_object().unwrap() {
            let mine = &got["tensors"][value]["shape"];
            if mine != shape {
                differ.push(format!("{value}: {mine} vs onnxruntime's {shape}"));
            }
        }
        assert!(differ.is_empty(), "{name}:\n{}", differ.join("\n"));
        let report = estimate(name, true);
        assert_eq!(report["unsupported"], serde_json::json!([]), "{name}");
        // Each op of the optimized model is a layer (the stripped weights'
        // ConstantOfShape nodes are folded away).
        for (op, n) in want["counts"].as_object().unwrap() {
            let layers = report["layers"].as_array().unwrap();
            let counted = layers.iter().filter(|l| l["op"] == op.as_str()).count();
            assert_eq!(Some(counted as u64), n.as_u64(), "{name}: {op}");
        }
        // The products recomputed from onnxruntime's shapes.
        assert_eq!(Some(products(&report)), want["products"].as_u64(), "{name}");
        // The ALL fixtures were made at a block of 16 (AVX-512), which the
        // padded counts below assume.
        if name.ends_with(".all") {
            assert_eq!(want["block"], 16, "{name}");
        }
    }
}

#[test]
fn optimizing_changes_no_flop_where_no_channel_is_padded() {
    // torchvision's resnet18, counted unoptimized: 1,814,073,344
    // multiply-adds in its 20 convolutions and classifier, 1,818,765,800
    // FLOPs with the Relus, residual Adds and pools. FusedConv (ext) and
    // NCHWc Conv (all) count the Conv, Add and Relu they replace, and
    // every channel count of resnet18 is a multiple of the block.
    // mobilenet_v3_small: 56,510,400 and 60,839,136, the same at ext (its
    // HardSwish is HardSigmoid and Mul there, 4 FLOPs either way, 5
    // without FMA); the zoo (scripts/ort_optimized.py) at ext and at ALL
    // without NCHWc (where Z is its residual Add): 4,080,448 and 4,130,410.
    for (model, optimized, fma_products, fma_flops) in [
        (
            "resnet18",
            &["ext", "all"][..],
            1_814_073_344u64,
            1_818_765_800u64,
        ),
        ("mobilenet_v3_small", &["ext"][..], 56_510_400, 60_839_136),
        ("zoo", &["ext", "alln"][..], 4_080_448, 4_130_410),
    ] {
        let original = estimate(model, true);
        assert_eq!(products(&original), fma_products, "{model}");
        assert_eq!(original["total"]["flops"], fma_flops, "{model}");
        let original_no_fma = estimate(model, false)["total"]["flops"].clone();
        for level in optimized {
            let name = format!("{model}.{level}");
            let report = estimate(&name, true);
            assert_eq!(products(&report), fma_products, "{name}");
            assert_eq!(report["total"]["flops"], fma_flops, "{name}");
            assert_eq!(
                estimate(&name, false)["total"]["flops"],
                original_no_fma,
                "{name}"
            );
        }
    }
}

#[test]
fn nchwc_layers_count_the_padded_channels() {
    // At a block of 16, mobilenet_v3_small's 24, 40, 72, 88 and 120
    // channels (and the 8 of its first squeeze) are padded: its
    // convolutions' products grow from 56,510,400 to 61,827,168, the
    // multiply-adds onnxruntime's shapes make.
    let report = estimate("mobilenet_v3_small.all", true);
    assert_eq!(products(&report), 61_827_168);
    // A ReorderInput of 120 channels gives ceil(120 / 16) * 16 = 128, the
    // count the convolution reading it has in its weights (their shape
    // settles it: 120 would be 120 at a block of 8).
    let layers = report["layers"].as_array().unwrap();
    let padded: Vec<(u64, u64)> = layers
        .iter()
        .filter(|l| l["op"] == "com.microsoft.nchwc::ReorderInput")
        .map(|l| {
            let c = |t: &serde_json::Value| t["shape"][1].as_u64().unwrap();
            (c(&l["inputs"][0]), c(&l["outputs"][0]))
        })
        .collect();
    assert_eq!(padded.len(), 10);
    assert!(padded.contains(&(120, 128)), "{padded:?}");
    assert!(
        padded.iter().all(|&(c, p)| p == c.div_ceil(16) * 16),
        "{padded:?}"
    );
    // The zoo at ALL: its 24-channel convolutions run on 32 (4,548,928
    // products against 4,080,448); its NHWC input is reordered with
    // channels_last, [1, 12, 10, 16] into [1, 16, 12, 10].
    let zoo = estimate("zoo.all", true);
    assert_eq!(products(&zoo), 4_548_928);
    let first = &zoo["layers"][0];
    assert_eq!(first["op"], "com.microsoft.nchwc::ReorderInput");
    assert_eq!(
        first["outputs"][0]["shape"],
        serde_json::json!([1, 16, 12, 10])
    );
}
