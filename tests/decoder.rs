//! A GPT-style decoder exported from PyTorch (`scripts/gpt_decoder.py`, both
//! exporters): every layer is analysed, and the MatMul FLOPs equal the
//! analytic count for its dimensions (issue 4).

use serde_json::Value;

use crate::common::cli::C3;

const MODELS: [&str; 2] = ["gpt_decoder_torchscript.onnx", "gpt_decoder_dynamo.onnx"];

// The decoder's dimensions (scripts/gpt_decoder.py).
const V: u64 = 512; // vocabulary
const D: u64 = 64; // d_model
const H: u64 = 4; // heads
const DH: u64 = D / H; // head width
const L: u64 = 2; // blocks

fn estimate(model: &str, b: u64, s: u64, extra: &[&str]) -> Value {
    let path = format!("{}/examples/onnx/{model}", env!("CARGO_MANIFEST_DIR"));
    let (bd, sd) = (format!("batch={b}"), format!("seq={s}"));
    let mut args = vec!["estimate", &path, "--dim", &bd, "--dim", &sd];
    args.extend(["--format", "json", "--strict"]);
    args.extend(extra);
    C3::new().args(&args).run().json()
}

fn layers<'a>(j: &'a Value, op: &str) -> Vec<&'a Value> {
    j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["op"] == op)
        .collect()
}

fn sum(layers: &[&Value], key: &str) -> u64 {
    layers.iter().map(|l| l[key].as_u64().unwrap()).sum()
}

fn out_shape(l: &Value) -> Vec<u64> {
    l["outputs"][0]["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap())
        .collect()
}

/// MatMul FLOPs with FMA (one FLOP per multiply-add): every output element
/// of a MatMul is a dot product of length K, so K FLOPs. PyTorch's
/// `nn.Linear` on a 3-D input is exported as MatMul + Add, never Gemm: the
/// bias is a separate Add layer, not part of this count.
fn analytic_matmul_flops(b: u64, s: u64) -> u64 {
    let per_block = 3 * b * s * D * D // q, k, v projections: [B,S,d] x [d,d]
        + b * H * s * s * DH          // scores q @ kᵀ: [B,h,S,dh] x [B,h,dh,S]
        + b * H * s * s * DH          // probs @ v: [B,h,S,S] x [B,h,S,dh]
        + b * s * D * D               // output projection
        + 2 * b * s * D * (4 * D); // MLP: d -> 4d -> d
    L * per_block + b * s * D * V // + LM head [B,S,d] x [d,V]
}

/// Output elements of all MatMuls: without FMA each costs 2K - 1 FLOPs, so
/// the count is 2 x (the FMA count) - (output elements).
fn matmul_outputs(b: u64, s: u64) -> u64 {
    let per_block = 3 * b * s * D // q, k, v
        + b * H * s * s           // scores
        + b * s * D               // probs @ v ([B,h,S,dh])
        + b * s * D               // output projection
        + b * s * 4 * D           // MLP up
        + b * s * D; // MLP down
    L * per_block + b * s * V
}

#[test]
fn pytorch_decoders_are_fully_analysed_and_matmuls_match_the_analytic_count() {
    // B=2, S=32 (the full context): per block 786,432 (qkv) + 131,072 (scores)
    // + 131,072 (probs @ v) + 262,144 (out) + 2,097,152 (MLP) = 3,407,872;
    // 2 blocks + 2,097,152 (LM head) = 8,912,896.
    assert_eq!(analytic_matmul_flops(2, 32), 8_912_896);
    // B=3, S=17: 2 x 2,617,728 + 1,671,168 = 6,906,624.
    assert_eq!(analytic_matmul_flops(3, 17), 6_906_624);
    for model in MODELS {
        for (b, s) in [(2, 32), (3, 17)] {
            let j = estimate(model, b, s, &[]);
            // --strict already refuses unsupported and not-analysed layers;
            // the list says so too.
            assert_eq!(j["unsupported"], serde_json::json!([]), "{model}");
            assert!(layers(&j, "Gemm").is_empty(), "{model}: Linear became Gemm");
            let mm = layers(&j, "MatMul");
            // Per block q, k, v, scores, probs @ v, out, MLP up and down; and
            // the LM head.
            assert_eq!(mm.len() as u64, 8 * L + 1, "{model}");
            assert_eq!(
                sum(&mm, "flops"),
                analytic_matmul_flops(b, s),
                "{model} B={b} S={s}"
            );

            // The attention matmuls are the full S x S square: PyTorch's causal
            // mask is data (masked_fill after the matmul), so the upper
            // triangle is computed and then discarded, and counted.
            let square: Vec<_> = mm.iter().filter(|l| out_shape(l) == [b, H, s, s]).collect();
            assert_eq!(square.len() as u64, L, "{model}");
            for l in square {
                assert_eq!(l["flops"], b * H * s * s * DH, "{model}");
            }

            // Without FMA a multiply-add is two FLOPs, less one per dot product.
            let j = estimate(model, b, s, &["--no-fma"]);
            let mm = layers(&j, "MatMul");
            assert_eq!(
                sum(&mm, "flops"),
                2 * analytic_matmul_flops(b, s) - matmul_outputs(b, s),
                "{model} --no-fma"
            );
        }
    }
}

#[test]
fn both_exports_cost_the_same_arithmetic() {
    // The TorchScript export writes GELU as x * 0.5 * (1 + erf(x / √2)) in five
    // nodes, the dynamo export as one Gelu node; the Gelu rule counts the same
    // five operations per element, so the totals agree even though the graphs
    // (215 and 74 nodes) do not.
    let (b, s) = (2, 32);
    let ts = estimate(MODELS[0], b, s, &[]);
    let dy = estimate(MODELS[1], b, s, &[]);
    assert_eq!(ts["total"]["flops"], dy["total"]["flops"]);
    assert_eq!(ts["total"]["flops"], 9_339_648u64);
    // What is not MatMul, in the dynamo export:
    let add = sum(&layers(&dy, "Add"), "flops");
    // Adds: per block 6 Linear biases (q, k, v, out and MLP down: d each; MLP
    // up: 4d) and 2 residuals, plus the token + position embedding sum.
    assert_eq!(
        add,
        L * (5 * b * s * D + b * s * 4 * D + 2 * b * s * D) + b * s * D
    );
    // The score scaling: one multiplication per score.
    assert_eq!(sum(&layers(&dy, "Mul"), "flops"), L * b * H * s * s);
    // GELU, 5 FLOPs per element of the [B, S, 4d] hidden layer.
    assert_eq!(sum(&layers(&dy, "Gelu"), "flops"), L * 5 * b * s * 4 * D);
    // MatMuls are 95% of the total: 8,912,896 of 9,339,648.
    let mm = sum(&layers(&dy, "MatMul"), "flops");
    assert_eq!(mm, analytic_matmul_flops(b, s));
    assert_eq!(mm * 100 / dy["total"]["flops"].as_u64().unwrap(), 95);
}

#[test]
fn a_sequence_longer_than_the_context_is_refused() {
    // The position embedding has 32 rows: seq=33 would gather row 32.
    for model in MODELS {
        let path = format!("{}/examples/onnx/{model}", env!("CARGO_MANIFEST_DIR"));
        let run = C3::new()
            .args(["estimate", &path, "--dim", "batch=1", "--dim", "seq=33"])
            .run();
        let err = run.one_line_error(2);
        assert!(
            err.contains("index 32 is out of range for size 32"),
            "{err}"
        );
    }
}
