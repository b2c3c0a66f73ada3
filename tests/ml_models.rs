//! ai.onnx.ml graphs as skl2onnx and onnxmltools (LightGBM, XGBoost) write
//! them (issue 54 item 2), saved by `scripts/ml_models.py` in
//! tests/fixtures/ml/ with onnxruntime's shape and type of every tensor its
//! run on 3 rows returned: c3's shapes (`--dim N=3`) against those, then
//! each layer's counts against the rules' formulas.

use std::path::{Path, PathBuf};

use crate::common::cli::C3;

const FIXTURES: [&str; 13] = [
    "rf_int",
    "rf_str",
    "xgb_binary",
    "xgb_multi",
    "lgbm_binary",
    "svc_proba",
    "svc_binary",
    "svc_votes",
    "svm_linear",
    "linear_binary",
    "tree5",
    "class_list",
    "columns",
];

fn fixture(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/ml/{file}"))
}

fn json_of(args: &[&str], name: &str) -> serde_json::Value {
    let run = C3::new()
        .args(args)
        .arg(fixture(&format!("{name}.onnx")))
        .run();
    assert_eq!(run.code, 0, "{name}: {}", run.stderr);
    run.json()
}

#[test]
fn ml_graphs_have_onnxruntimes_shapes_and_types() {
    for name in FIXTURES {
        let want: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(fixture(&format!("{name}.shapes.json"))).unwrap(),
        )
        .unwrap();
        let got = json_of(&["shapes", "--format", "json", "--dim", "N=3"], name);
        let mut differ = Vec::new();
        for (value, shape) in want["shapes"].as_object().unwrap() {
            let mine = &got["tensors"][value];
            if &mine["shape"] != shape || mine["dtype"] != want["types"][value] {
                differ.push(format!(
                    "{value}: {} {} vs onnxruntime's {} {shape}",
                    mine["dtype"], mine["shape"], want["types"][value]
                ));
            }
        }
        assert!(differ.is_empty(), "{name}:\n{}", differ.join("\n"));
    }
}

#[test]
fn the_class_list_lookup_keeps_the_batch_symbol() {
    // Without --dim: the argmax [N, 1] has N indices, so a 1-D class list
    // gives [1, N], and the Reshape to [-1] after it gives [N].
    let got = json_of(&["shapes", "--format", "json"], "class_list");
    let t = &got["tensors"];
    assert_eq!(t["picked"]["shape"], serde_json::json!([1, "N"]));
    assert_eq!(t["label"]["shape"], serde_json::json!(["N"]));
}

/// (fixture, layer, FLOPs, bytes read, bytes written) with FMA, 3 rows.
/// The stump has 3 nodes and 2 leaves; F = 4 features.
const COUNTS: [(&str, &str, u64, u64, u64); 16] = [
    // 3 * (3 nodes + 2 leaves * 3 weights); X 3*4 floats; Y 3 int64 + Z 3*3.
    (
        "rf_int",
        "TreeEnsembleClassifier",
        3 * (3 + 6),
        12 * 4,
        3 * 8 + 9 * 4,
    ),
    // ZipMap: 9 scores read, 9 entries of a 4-byte score and 8-byte label.
    ("rf_int", "ZipMap", 0, 9 * 4, 9 * (4 + 8)),
    // String labels: 8-byte handles, counted as int64 labels.
    (
        "rf_str",
        "TreeEnsembleClassifier",
        3 * (3 + 6),
        12 * 4,
        3 * 8 + 9 * 4,
    ),
    // Binary: one weight per leaf, 2 scores per row.
    (
        "xgb_binary",
        "TreeEnsembleClassifier",
        3 * (3 + 2),
        12 * 4,
        3 * 8 + 6 * 4,
    ),
    (
        "xgb_multi",
        "TreeEnsembleClassifier",
        3 * (3 + 8),
        12 * 4,
        3 * 8 + 12 * 4,
    ),
    (
        "lgbm_binary",
        "TreeEnsembleClassifier",
        3 * (3 + 2),
        12 * 4,
        3 * 8 + 6 * 4,
    ),
    ("lgbm_binary", "ZipMap", 0, 6 * 4, 6 * (4 + 8)),
    // SVC: 3 rows * (3 vectors * 4 + 6 coefficients) MACs; 3 probabilities.
    (
        "svc_proba",
        "SVMClassifier",
        3 * (12 + 6),
        12 * 4,
        3 * 8 + 9 * 4,
    ),
    // Binary, no prob_a: (2 * 4 + 2) MACs per row, 2 scores per row.
    (
        "svc_binary",
        "SVMClassifier",
        3 * (8 + 2),
        12 * 4,
        3 * 8 + 6 * 4,
    ),
    // 4 classes, no prob_a: (4 * 4 + 12) MACs per row, 4 * 3 / 2 scores.
    (
        "svc_votes",
        "SVMClassifier",
        3 * (16 + 12),
        12 * 4,
        3 * 8 + 3 * 6 * 4,
    ),
    // Linear mode: 3 rows * 12 coefficients; 3 scores per row.
    ("svm_linear", "SVMClassifier", 3 * 12, 12 * 4, 3 * 8 + 9 * 4),
    // 3 * 4 MACs + 3 intercepts + LOGISTIC 4 * 3 rows * 1 column.
    (
        "linear_binary",
        "LinearClassifier",
        12 + 3 + 4 * 3,
        12 * 4,
        3 * 8 + 6 * 4,
    ),
    // 3 rows * (1 node + 2 leaves); float64 X 3*4 and Y 3*3.
    ("tree5", "TreeEnsemble", 3 * (1 + 2), 12 * 8, 9 * 8),
    // The [1, 3] lookup: 3 int64 indices and 3 int64 classes read.
    (
        "class_list",
        "ArrayFeatureExtractor",
        0,
        3 * 8 + 3 * 8,
        3 * 8,
    ),
    // [3, 2] of [3, 4]: 2 int64 indices and 6 floats read.
    ("columns", "ArrayFeatureExtractor", 0, 2 * 8 + 6 * 4, 6 * 4),
    ("class_list", "Reshape", 0, 0, 0),
];

#[test]
fn ml_layers_are_counted_from_those_shapes() {
    for name in FIXTURES {
        let report = json_of(&["estimate", "--format", "json", "--dim", "N=3"], name);
        assert_eq!(report["unsupported"], serde_json::json!([]), "{name}");
        let layers = report["layers"].as_array().unwrap();
        for (fixture, layer, flops, mread, mwrite) in COUNTS.iter().filter(|c| c.0 == name) {
            let l = layers
                .iter()
                .find(|l| l["name"] == *layer)
                .unwrap_or_else(|| panic!("{fixture}: no layer {layer}"));
            let got = (&l["flops"], &l["mread"], &l["mwrite"]);
            assert_eq!(
                got,
                (
                    &serde_json::json!(flops),
                    &serde_json::json!(mread),
                    &serde_json::json!(mwrite)
                ),
                "{fixture} {layer}"
            );
        }
    }
}
