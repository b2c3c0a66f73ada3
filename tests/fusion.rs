//! Fusion patterns from packs: the intermediate tensors of a fused chain are
//! neither written nor read back.

use std::path::Path;

use crate::common::cli::C3;

const RESNET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/resnet50.trace.json");

fn run(args: &[&str]) -> (i32, String, String) {
    let r = C3::new().args(args).run();
    (r.code, r.stdout, r.stderr)
}

fn json(args: &[&str]) -> serde_json::Value {
    C3::new().args(args).run().json()
}

#[test]
fn the_fused_pack_on_resnet50() {
    let naive = json(&["estimate", RESNET, "--rules", "naive", "--format", "json"]);
    assert_eq!(naive["total"]["mrw"], 413_147_264u64);
    assert!(naive.get("fusions").is_none());
    let fused = json(&["estimate", RESNET, "--rules", "fused", "--format", "json"]);
    let groups = fused["fusions"].as_array().unwrap();
    let count = |p: &str| groups.iter().filter(|g| g["pattern"] == p).count();
    // conv1 and two convolutions per bottleneck block (16 blocks): Conv→BN→ReLU;
    // every block's last convolution joins the residual add and ReLU; the four
    // projection shortcuts' third convolution keeps only its BN.
    assert_eq!(count("conv_bn_act"), 1 + 2 * 16);
    assert_eq!(count("conv_bn_add_act"), 16);
    assert_eq!(count("conv_bn"), 4);
    // The first group: conv1's 1x64x112x112 float32 output (3,211,264 bytes)
    // is neither written by Conv nor read by BN, and the same for BN → ReLU.
    assert_eq!(
        groups[0]["layers"],
        serde_json::json!([
            "Convolution2DFunction-1",
            "FixedBatchNormalization-1",
            "ReLU-1"
        ])
    );
    assert_eq!(groups[0]["saved_bytes"], 4 * 3_211_264u64);
    let conv1 = &fused["layers"][0];
    assert_eq!(conv1["mwrite"], 0);
    assert_eq!(conv1["fused"], "conv_bn_act#1");
    // FLOPs do not change; memory traffic drops by 48.8%.
    assert_eq!(fused["total"]["flops"], naive["total"]["flops"]);
    let saved: u64 = groups
        .iter()
        .map(|g| g["saved_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(fused["total"]["mrw"], 413_147_264u64 - saved);
    assert_eq!(fused["total"]["mrw"], 211_640_448u64);
    assert_eq!(
        format!("{:.1}", 100.0 * saved as f64 / 413_147_264.0),
        "48.8"
    );
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fusion")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn named_tensors_decide_by_data_flow() {
    // conv → bn → relu, but bn's output also feeds an Add: only Conv→BN may
    // fuse (the BN output must be written for the Add).
    let dir = scratch("dataflow");
    let trace = dir.join("t.json");
    let t = |name: &str| format!(r#"{{"shape": [1, 4, 8, 8], "name": "{name}"}}"#);
    std::fs::write(
        &trace,
        format!(
            r#"{{"layers": [
  {{"op": "Conv", "inputs": [{x}, {{"shape": [4, 4, 1, 1], "const": true}}], "outputs": [{c}]}},
  {{"op": "BatchNormalization", "inputs": [{c2}, {{"shape": [4]}}, {{"shape": [4]}}, {{"shape": [4]}}, {{"shape": [4]}}], "outputs": [{b}]}},
  {{"op": "Relu", "inputs": [{b2}], "outputs": [{r}]}},
  {{"op": "Add", "inputs": [{b3}, {r2}], "outputs": [{a}]}}]}}"#,
            x = t("x"), c = t("c"), c2 = t("c"), b = t("b"), b2 = t("b"), r = t("r"), b3 = t("b"), r2 = t("r"), a = t("a"),
        ),
    )
    .unwrap();
    let j = json(&[
        "estimate",
        trace.to_str().unwrap(),
        "--rules",
        "fused",
        "--format",
        "json",
    ]);
    let groups = j["fusions"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0]["pattern"], "conv_bn");
    // Saved: c (1x4x8x8 float32 = 1,024 bytes) written once and read once.
    assert_eq!(groups[0]["saved_bytes"], 2 * 1024);
    // Relu and Add stay separate: b is needed by both.
    assert_eq!(j["layers"][2]["fused"], serde_json::Value::Null);
}

#[test]
fn a_pack_declares_its_own_fusions_and_errors_name_the_place() {
    let dir = scratch("pack");
    std::fs::write(
        dir.join("fusions.yaml"),
        "relu_relu:\n  chain: [Relu, Relu]\n  doc: two ReLUs in one pass\n",
    )
    .unwrap();
    let trace = dir.join("t.json");
    std::fs::write(
        &trace,
        r#"{"layers": [
  {"op": "Relu", "inputs": [{"shape": [10]}], "outputs": [{"shape": [10]}]},
  {"op": "Relu", "inputs": [{"shape": [10]}], "outputs": [{"shape": [10]}]}]}"#,
    )
    .unwrap();
    let j = json(&[
        "estimate",
        trace.to_str().unwrap(),
        "--rules",
        dir.to_str().unwrap(),
        "--format",
        "json",
    ]);
    // 10 float32 elements not written by the first ReLU nor read by the second.
    assert_eq!(j["total"]["mrw"], 2 * 40);
    assert_eq!(j["fusions"][0]["group"], "relu_relu#1");

    let bad = scratch("bad");
    std::fs::write(
        bad.join("fusions.yaml"),
        "x: 1\nlonely:\n  chain: [Relu]\n  doc: d\n",
    )
    .unwrap();
    let (code, _, err) = run(&["rules", "check", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("fusions.yaml:1:"), "{err}");
    std::fs::write(
        bad.join("fusions.yaml"),
        "lonely:\n  chain: [Relu]\n  doc: d\n",
    )
    .unwrap();
    let (code, _, err) = run(&["rules", "check", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("fusions.yaml:1:1: fusion lonely: a chain needs at least two ops"),
        "{err}"
    );
}

#[test]
fn onnx_models_fuse_by_data_flow_and_know_their_weights() {
    let model = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/onnx/light_resnet50.onnx"
    );
    let naive = json(&["estimate", model, "--format", "json"]);
    let fused = json(&["estimate", model, "--rules", "fused", "--format", "json"]);
    let groups = fused["fusions"].as_array().unwrap();
    let count = |p: &str| groups.iter().filter(|g| g["pattern"] == p).count();
    // The same 53 groups as the Chainer trace, found through tensor names.
    assert_eq!(
        (
            count("conv_bn_act"),
            count("conv_bn_add_act"),
            count("conv_bn")
        ),
        (33, 16, 4)
    );
    let saved: u64 = groups
        .iter()
        .map(|g| g["saved_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(
        fused["total"]["mrw"].as_u64().unwrap(),
        naive["total"]["mrw"].as_u64().unwrap() - saved
    );
    // The light model builds its weights with ConstantOfShape (folded, not
    // counted); they are constants all the same: 25,557,032 float32
    // parameters, 2 bytes less each in fp16.
    let half = json(&["estimate", model, "--weights", "fp16", "--format", "json"]);
    assert_eq!(
        naive["total"]["mrw"].as_u64().unwrap() - half["total"]["mrw"].as_u64().unwrap(),
        25_557_032 * 2
    );
}
