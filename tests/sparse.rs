//! Sparsity (issue 18, item 3): the `sparse` pack, `nnz(T)` read from the
//! weights, and `--prune R`.

use std::path::{Path, PathBuf};

use c3::ir::TensorFact;
use c3::onnx::proto::TensorProto;
use c3::rules::RuleSet;
use prost::Message;

use crate::common::cli::C3;
use crate::common::layer;
use crate::common::onnx::{FLOAT, build, float as value, model, node};

fn scratch(name: &str) -> PathBuf {
    crate::common::cli::scratch("sparse", name)
}

fn sparse() -> RuleSet {
    RuleSet::with_packs(&["sparse".into()]).unwrap()
}

/// A float32 weight of shape `dims` whose element `i` is `f(i)` (raw_data).
fn weight(name: &str, dims: &[i64], f: impl Fn(usize) -> f32) -> TensorProto {
    let n: usize = dims.iter().map(|&d| d as usize).product();
    let raw = (0..n).flat_map(|i| f(i).to_le_bytes()).collect();
    build::raw_tensor(name, FLOAT, dims, Some(raw))
}

/// Every `k`-th element 0.5, the others zero: `ceil(n / k)` nonzeros.
fn every(k: usize) -> impl Fn(usize) -> f32 {
    move |i| if i % k == 0 { 0.5 } else { 0.0 }
}

fn write(dir: &Path, name: &str, g: c3::onnx::proto::GraphProto) -> String {
    let p = dir.join(name);
    std::fs::write(&p, model(g).encode_to_vec()).unwrap();
    p.to_str().unwrap().to_string()
}

/// The pruning article's MLP, 784 -> 1000 -> 1000 -> 10, Gemm + ReLU,
/// weights stored [out, in] (transB = 1) with known zeros: W1 keeps every
/// 10th element (78,400 of 784,000), W2 every 4th (250,000 of 1,000,000),
/// W3 every 2nd (5,000 of 10,000); biases are dense.
fn mlp(dir: &Path) -> String {
    let gemm = |x: &str, w: &str, b: &str, y: &str| {
        build::node_with("Gemm", &[x, w, b], &[y], vec![build::int("transB", 1)])
    };
    let g = build::GraphBuilder::new()
        .input(value("x", &[1, 784]))
        .initializer(weight("W1", &[1000, 784], every(10)))
        .initializer(weight("b1", &[1000], |_| 1.0))
        .initializer(weight("W2", &[1000, 1000], every(4)))
        .initializer(weight("b2", &[1000], |_| 1.0))
        .initializer(weight("W3", &[10, 1000], every(2)))
        .initializer(weight("b3", &[10], |_| 1.0))
        .node(gemm("x", "W1", "b1", "h1"))
        .node(node("Relu", &["h1"], &["r1"]))
        .node(gemm("r1", "W2", "b2", "h2"))
        .node(node("Relu", &["h2"], &["r2"]))
        .node(gemm("r2", "W3", "b3", "y"))
        .output(value("y", &[1, 10]))
        .build();
    write(dir, "mlp.onnx", g)
}

fn estimate(path: &str, extra: &[&str]) -> serde_json::Value {
    C3::new()
        .args(["estimate", path, "--format", "json"])
        .args(extra)
        .run()
        .json()
}

fn layer_flops(j: &serde_json::Value) -> Vec<u64> {
    let layers = j["layers"].as_array().unwrap();
    layers
        .iter()
        .map(|l| l["flops"].as_u64().unwrap())
        .collect()
}

#[test]
fn the_articles_mlp_counts_only_the_nonzero_weights() {
    let dir = scratch("mlp");
    let path = mlp(&dir);
    let dense = estimate(&path, &[]);
    // M = 1 row: M * |W| multiply-adds plus the bias, and 1,000 max per ReLU.
    assert_eq!(
        layer_flops(&dense),
        [784_000 + 1000, 1000, 1_000_000 + 1000, 1000, 10_000 + 10]
    );
    let j = estimate(&path, &["--rules", "sparse"]);
    // M * nnz(W) multiply-adds, the bias as in the dense rule.
    assert_eq!(
        layer_flops(&j),
        [78_400 + 1000, 1000, 250_000 + 1000, 1000, 5_000 + 10]
    );
    assert_eq!(j["total"]["flops"], 337_410);
    // W1 as compressed rows: nnz * (4 + 4) + 4 * (1000 + 1) bytes, beside
    // x (784 * 4) and b1 (1000 * 4).
    let l1 = &j["layers"][0];
    assert_eq!(l1["mread"], 784 * 4 + 1000 * 4 + 78_400 * 8 + 4 * 1001);
    assert_eq!(l1["mread"], 638_340);
    // W3: 5,000 * 8 + 4 * 11, beside r2 (1000 * 4) and b3 (10 * 4).
    assert_eq!(j["layers"][4]["mread"], 4000 + 40 + 40_000 + 44);
    // Without FMA: 2 multiply-adds' worth per nonzero, the bias added in.
    let j = estimate(&path, &["--rules", "sparse", "--no-fma"]);
    assert_eq!(layer_flops(&j)[0], 2 * 78_400);

    // --prune 0.9 counts each weight as if 90% were zero, whatever it
    // holds: W2 keeps 100,000, W3 1,000; W1 happens to keep 78,400.
    let j = estimate(&path, &["--rules", "sparse", "--prune", "0.9"]);
    assert_eq!(
        layer_flops(&j),
        [78_400 + 1000, 1000, 100_000 + 1000, 1000, 1_000 + 10]
    );
    // --prune 0 is the dense count.
    let j = estimate(&path, &["--rules", "sparse", "--prune", "0"]);
    assert_eq!(j["total"]["flops"], dense["total"]["flops"]);
}

#[test]
fn a_convolution_with_zeros_in_typed_float_data() {
    let dir = scratch("conv");
    // W[4, 3, 3, 3] in float_data (not raw_data): 20 of 108 taps nonzero.
    let vals: Vec<f32> = (0..108).map(|i| if i < 20 { 1.0 } else { 0.0 }).collect();
    let w = TensorProto {
        name: Some("W".into()),
        dims: vec![4, 3, 3, 3],
        data_type: Some(FLOAT),
        float_data: Some(
            vals.iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<_>>()
                .into(),
        ),
        ..Default::default()
    };
    let conv = build::node_with(
        "Conv",
        &["x", "W"],
        &["y"],
        vec![build::ints("pads", &[1, 1, 1, 1])],
    );
    let g = build::GraphBuilder::new()
        .input(value("x", &[1, 3, 8, 8]))
        .initializer(w)
        .node(conv)
        .output(value("y", &[1, 4, 8, 8]))
        .build();
    let path = write(&dir, "conv.onnx", g);
    // Dense: |Y| * Cg * prod(K) = 256 * 27.
    assert_eq!(estimate(&path, &[])["total"]["flops"], 256 * 27);
    let j = estimate(&path, &["--rules", "sparse"]);
    // N * prod(O) * nnz(W) = 1 * 64 * 20.
    assert_eq!(j["total"]["flops"], 64 * 20);
    // x (192 * 4) and W as compressed rows: 20 * (4 + 4) + 4 * (4 + 1).
    assert_eq!(j["total"]["mread"], 768 + 160 + 20);
    // The nonzero count is among the attributes the layer shows.
    assert_eq!(j["layers"][0]["attrs"]["nnz"], 20);
}

#[test]
fn weights_in_external_data_are_counted_in_their_file() {
    let dir = scratch("external");
    // W[3, 4] = 0, 1, 0, 2, ... in w.bin at offset 8: 6 nonzeros.
    let vals: Vec<f32> = (0..12).map(|i| (i % 2) as f32).collect();
    let mut bytes = vec![0xffu8; 8];
    bytes.extend(vals.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(dir.join("w.bin"), &bytes).unwrap();
    let entry = |k: &str, v: &str| c3::onnx::proto::StringStringEntryProto {
        key: Some(k.into()),
        value: Some(v.into()),
    };
    let w = TensorProto {
        name: Some("W".into()),
        dims: vec![4, 3],
        data_type: Some(FLOAT),
        data_location: Some(1),
        external_data: vec![
            entry("location", "w.bin"),
            entry("offset", "8"),
            entry("length", "48"),
        ],
        ..Default::default()
    };
    let g = build::GraphBuilder::new()
        .input(value("x", &[5, 4]))
        .initializer(w)
        .node(node("MatMul", &["x", "W"], &["y"]))
        .output(value("y", &[5, 3]))
        .build();
    let path = write(&dir, "ext.onnx", g);
    let j = estimate(&path, &["--rules", "sparse"]);
    // |Y| / rows * nnz(W) = 15 / 3 * 6 multiply-adds.
    assert_eq!(j["total"]["flops"], 5 * 6);
    // x (20 * 4) and W as 3 compressed rows: 6 * 8 + 4 * (3 + 1).
    assert_eq!(j["total"]["mread"], 80 + 48 + 16);
}

#[test]
fn with_no_zeros_the_sparse_rules_count_as_the_dense_ones() {
    let rules = sparse();
    let w = |dims: &[u64]| TensorFact::f32(dims).constant();
    let cases = [
        layer("Gemm")
            .input(&[8, 16])
            .input(&[16, 32])
            .input(&[32])
            .output(&[8, 32]),
        layer("Gemm")
            .input(&[8, 16])
            .input(&[16, 32])
            .output(&[8, 32]),
        layer("MatMul")
            .input(&[2, 8, 16])
            .input(&[16, 32])
            .output(&[2, 8, 32]),
        layer("Conv")
            .input(&[2, 4, 10, 10])
            .input(&[6, 2, 3, 3])
            .int("group", 2)
            .output(&[2, 6, 8, 8]),
        layer("ConvTranspose")
            .input(&[1, 4, 5, 5])
            .input(&[4, 3, 3, 3])
            .output(&[1, 3, 7, 7]),
    ];
    for mut case in cases {
        // The weight, input 2, is a constant with no counted zeros: nnz = |W|.
        let inputs = std::sync::Arc::make_mut(&mut case.node.inputs);
        let t = inputs[1].take().unwrap();
        inputs[1] = Some(w(&t
            .shape
            .iter()
            .map(|d| d.known().unwrap())
            .collect::<Vec<_>>()));
        for fma in [true, false] {
            let dense = case.eval(fma).flops;
            let sparse = case.eval_with(&rules, fma).flops;
            assert_eq!(sparse, dense, "{} fma={fma}", case.node.op);
        }
    }
    // The same Gemm with 10 of its 512 weights nonzero: 8 rows * 10.
    let mut g = layer("Gemm")
        .input(&[8, 16])
        .input(&[16, 32])
        .output(&[8, 32]);
    std::sync::Arc::make_mut(&mut g.node.inputs)[1] = Some(TensorFact {
        nonzeros: Some(10),
        ..w(&[16, 32])
    });
    assert_eq!(g.eval_with(&rules, true).flops, 8 * 10);
    // Not a constant (an activation): dense, whatever it holds.
    std::sync::Arc::make_mut(&mut g.node.inputs)[1] = Some(TensorFact {
        nonzeros: Some(10),
        ..TensorFact::f32(&[16, 32])
    });
    assert_eq!(g.eval_with(&rules, true).flops, 8 * 16 * 32);
}

#[test]
fn prune_takes_a_fraction_below_one() {
    let dir = scratch("prune_flag");
    let path = mlp(&dir);
    for bad in ["1", "1.0", "-0.1", "0.5x", "", "0.1234567891", "nan"] {
        let r = C3::new()
            .args([
                "estimate",
                &path,
                "--rules",
                "sparse",
                &format!("--prune={bad}"),
            ])
            .run();
        let line = r.one_line_error(1);
        assert!(line.contains("--prune"), "{line}");
    }
    // Without a rule that uses nnz() the flag would change nothing.
    let r = C3::new().args(["estimate", &path, "--prune", "0.5"]).run();
    let line = r.one_line_error(1);
    assert!(line.contains("add --rules sparse"), "{line}");
}

#[test]
fn a_huge_zero_weight_is_streamed_from_a_sparse_file() {
    let dir = scratch("huge");
    // W[4096, 4096] float32: 64 MiB of zeros in a file with a hole, so
    // nothing is written to disk and counting reads it front to back.
    let f = std::fs::File::create(dir.join("w.bin")).unwrap();
    f.set_len(4096 * 4096 * 4).unwrap();
    let entry = |k: &str, v: &str| c3::onnx::proto::StringStringEntryProto {
        key: Some(k.into()),
        value: Some(v.into()),
    };
    let w = TensorProto {
        name: Some("W".into()),
        dims: vec![4096, 4096],
        data_type: Some(FLOAT),
        data_location: Some(1),
        external_data: vec![entry("location", "w.bin")],
        ..Default::default()
    };
    let g = build::GraphBuilder::new()
        .input(value("x", &[2, 4096]))
        .initializer(w)
        .node(node("MatMul", &["x", "W"], &["y"]))
        .output(value("y", &[2, 4096]))
        .build();
    let path = write(&dir, "huge.onnx", g);
    let j = estimate(&path, &["--rules", "sparse"]);
    // No nonzeros: no multiply-adds; reads x (2 * 4096 * 4) and the 4097
    // row pointers of an empty matrix.
    assert_eq!(j["total"]["flops"], 0);
    assert_eq!(j["total"]["mread"], 2 * 4096 * 4 + 4 * 4097);
}

#[test]
fn a_weight_of_a_type_nnz_cannot_count_is_a_clear_error() {
    let dir = scratch("complex");
    // W[4, 3] complex64 (8 bytes an element): not a number nnz() can count.
    let w = build::raw_tensor("W", 14, &[4, 3], Some(vec![0u8; 12 * 8]));
    let g = build::GraphBuilder::new()
        .input(crate::common::onnx::typed("x", 14, &[2, 4]))
        .initializer(w)
        .node(node("MatMul", &["x", "W"], &["y"]))
        .output(crate::common::onnx::typed("y", 14, &[2, 3]))
        .build();
    let path = write(&dir, "complex.onnx", g);
    // The dense rules never read it.
    estimate(&path, &[]);
    let r = C3::new()
        .args(["estimate", &path, "--rules", "sparse"])
        .run();
    let line = r.one_line_error(2);
    assert!(
        line.ends_with(
            "weight 'W' of layer 'MatMul-1': nnz() counts numbers, and cannot count the \
             nonzero elements of a complex64 tensor"
        ),
        "{line}"
    );
}

#[test]
fn diff_compares_the_weights_as_they_are_with_them_pruned() {
    let dir = scratch("diff_prune");
    let path = mlp(&dir);
    // A: the sparse rules over the weights' real zeros (337,410 FLOPs, as
    // above); B: every weight as if half were zero, whatever it holds.
    let j = C3::new()
        .args(["diff", &path, "--rules", "sparse", "--b-prune", "0.5"])
        .args(["--format", "json"])
        .run()
        .json();
    assert_eq!(j["total"]["a"]["flops"], 337_410);
    // B: 1 * |W| / 2 multiply-adds per Gemm plus the bias, 1,000 per ReLU:
    // (392,000 + 1,000) + 1,000 + (500,000 + 1,000) + 1,000 + (5,000 + 10).
    assert_eq!(j["total"]["b"]["flops"], 901_010);
    assert_eq!(j["total"]["delta"]["flops"], 901_010 - 337_410);
    assert_eq!(j["b"]["options"]["prune"], 0.5);
    // The first layer's compressed rows: nnz * 8 + 4 * 1,001 bytes, beside
    // x and b1: 78,400 nonzeros in A, 392,000 in B.
    let l1 = &j["layers"][0];
    assert_eq!(l1["a"]["mread"], 784 * 4 + 1000 * 4 + 78_400 * 8 + 4 * 1001);
    assert_eq!(
        l1["b"]["mread"],
        784 * 4 + 1000 * 4 + 392_000 * 8 + 4 * 1001
    );
    // --prune on A is B's too, unless --b-prune changes it.
    let j = C3::new()
        .args(["diff", &path, "--rules", "sparse", "--prune", "0.9"])
        .args(["--b-prune", "0.5", "--format", "json"])
        .run()
        .json();
    assert_eq!(
        j["total"]["a"]["flops"],
        78_400 + 1000 + 1000 + 101_000 + 1000 + 1010
    );
    assert_eq!(j["total"]["b"]["flops"], 901_010);
    // Without a rule that uses nnz() on B's side, the flag would change
    // nothing: a usage error naming B.
    let line = C3::new()
        .args(["diff", &path, "--b-prune", "0.5"])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(
        line.contains("B (--b-*)") && line.contains("add --rules sparse"),
        "{line}"
    );
}
