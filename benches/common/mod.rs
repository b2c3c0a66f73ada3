//! Models the benchmarks run on, built in memory with `c3::onnx::build` (no
//! Python, no files): the same shapes `scripts/gen_bench_models.py`
//! writes for `scripts/bench.sh`.
#![allow(dead_code)]

use bytes::Bytes;
use c3::onnx::build::{self, FLOAT, int, int64_list as int64s, ints, zeros};
use c3::onnx::proto::{AttributeProto, GraphProto, NodeProto, ValueInfoProto};

fn node(op: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    build::node_with(op, inputs, outputs, attrs)
}

/// A float32 value: of these sizes, or of unknown rank.
fn value(name: &str, dims: Option<&[i64]>) -> ValueInfoProto {
    match dims {
        Some(d) => build::sized_value(name, FLOAT, d),
        None => build::value(name, build::rankless_type(FLOAT)),
    }
}

/// The file's bytes of a model of `graph` at ai.onnx `opset`.
fn model(graph: GraphProto, opset: i64) -> Bytes {
    Bytes::from(build::encode(&build::model(graph, opset)))
}

/// A decoder-shaped graph of at least `n_nodes` nodes: blocks of 18 nodes
/// (attention and MLP: MatMul, Add, Reshape, Transpose, Split, Mul, Softmax,
/// Relu), d = 64, 4 heads, 128 tokens, weights shared across blocks.
pub fn transformer(n_nodes: usize) -> Bytes {
    let (d, heads, seq) = (64i64, 4i64, 128i64);
    let init = vec![
        zeros("wqkv", &[d, 3 * d]),
        zeros("bqkv", &[3 * d]),
        zeros("wo", &[d, d]),
        zeros("w1", &[d, 4 * d]),
        zeros("w2", &[4 * d, d]),
        zeros("scale", &[]),
        int64s("split_heads", &[1, seq, 3, heads, d / heads]),
        int64s("merge", &[1, seq, d]),
    ];
    let mut nodes = Vec::new();
    let mut x = "x".to_string();
    let mut layer = 0;
    while nodes.len() < n_nodes {
        let p = |s: &str| format!("l{layer}_{s}");
        let n = |op: &str, i: &[&str], o: &[&str], a| {
            let i: Vec<String> = i.iter().map(|s| s.to_string()).collect();
            let o: Vec<String> = o.iter().map(|s| p(s)).collect();
            node(
                op,
                &i.iter().map(String::as_str).collect::<Vec<_>>(),
                &o.iter().map(String::as_str).collect::<Vec<_>>(),
                a,
            )
        };
        let (qkv0, qkv, qkv_h, qkv_t) = (p("qkv0"), p("qkv"), p("qkv_h"), p("qkv_t"));
        let (q, k, v, kt, s0, s, a) = (p("q"), p("k"), p("v"), p("kt"), p("s0"), p("s"), p("a"));
        let (o, o_t, o_m, proj, res1) = (p("o"), p("o_t"), p("o_m"), p("proj"), p("res1"));
        let (h, h_act, mlp) = (p("h"), p("h_act"), p("mlp"));
        nodes.extend([
            n("MatMul", &[&x, "wqkv"], &["qkv0"], vec![]),
            n("Add", &[&qkv0, "bqkv"], &["qkv"], vec![]),
            n("Reshape", &[&qkv, "split_heads"], &["qkv_h"], vec![]),
            n(
                "Transpose",
                &[&qkv_h],
                &["qkv_t"],
                vec![ints("perm", &[2, 0, 3, 1, 4])],
            ),
            n(
                "Split",
                &[&qkv_t],
                &["q", "k", "v"],
                vec![int("axis", 0), int("num_outputs", 3)],
            ),
            n(
                "Transpose",
                &[&k],
                &["kt"],
                vec![ints("perm", &[0, 1, 2, 4, 3])],
            ),
            n("MatMul", &[&q, &kt], &["s0"], vec![]),
            n("Mul", &[&s0, "scale"], &["s"], vec![]),
            n("Softmax", &[&s], &["a"], vec![int("axis", -1)]),
            n("MatMul", &[&a, &v], &["o"], vec![]),
            n(
                "Transpose",
                &[&o],
                &["o_t"],
                vec![ints("perm", &[0, 1, 3, 2, 4])],
            ),
            n("Reshape", &[&o_t, "merge"], &["o_m"], vec![]),
            n("MatMul", &[&o_m, "wo"], &["proj"], vec![]),
            n("Add", &[&x, &proj], &["res1"], vec![]),
            n("MatMul", &[&res1, "w1"], &["h"], vec![]),
            n("Relu", &[&h], &["h_act"], vec![]),
            n("MatMul", &[&h_act, "w2"], &["mlp"], vec![]),
            n("Add", &[&res1, &mlp], &["out"], vec![]),
        ]);
        x = p("out");
        layer += 1;
    }
    let graph = GraphProto {
        node: nodes,
        name: Some(format!("transformer_{n_nodes}")),
        initializer: init,
        input: vec![value("x", Some(&[1, seq, d]))],
        output: vec![value(&x, None)],
        ..Default::default()
    };
    model(graph, 18)
}

/// VGG16's layers with its real weight sizes: 138 million float32
/// parameters, about 553 MB of `raw_data`, which c3 must never read.
pub fn vgg16() -> Bytes {
    let mut nodes = Vec::new();
    let mut init = Vec::new();
    let (mut x, mut c) = ("input".to_string(), 3i64);
    let cfg: [i64; 18] = [
        64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0,
    ];
    for (i, &v) in cfg.iter().enumerate() {
        if v == 0 {
            let y = format!("pool{i}");
            nodes.push(node(
                "MaxPool",
                &[&x],
                &[&y],
                vec![ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])],
            ));
            x = y;
            continue;
        }
        let (w, b, y, r) = (
            format!("conv{i}_w"),
            format!("conv{i}_b"),
            format!("conv{i}"),
            format!("relu{i}"),
        );
        init.push(zeros(&w, &[v, c, 3, 3]));
        init.push(zeros(&b, &[v]));
        nodes.push(node(
            "Conv",
            &[&x, &w, &b],
            &[&y],
            vec![ints("kernel_shape", &[3, 3]), ints("pads", &[1, 1, 1, 1])],
        ));
        nodes.push(node("Relu", &[&y], &[&r], vec![]));
        (x, c) = (r, v);
    }
    nodes.push(node("Flatten", &[&x], &["flat"], vec![int("axis", 1)]));
    let (mut x, mut n_in) = ("flat".to_string(), 512 * 7 * 7i64);
    for (j, n_out) in [4096i64, 4096, 1000].into_iter().enumerate() {
        let (w, b, y) = (format!("fc{j}_w"), format!("fc{j}_b"), format!("fc{j}"));
        init.push(zeros(&w, &[n_out, n_in]));
        init.push(zeros(&b, &[n_out]));
        nodes.push(node("Gemm", &[&x, &w, &b], &[&y], vec![int("transB", 1)]));
        (x, n_in) = (y, n_out);
        if j < 2 {
            let r = format!("fc_relu{j}");
            nodes.push(node("Relu", &[&x], &[&r], vec![]));
            x = r;
        }
    }
    nodes.push(node("Softmax", &[&x], &["prob"], vec![int("axis", 1)]));
    let graph = GraphProto {
        node: nodes,
        name: Some("vgg16".into()),
        initializer: init,
        input: vec![value("input", Some(&[1, 3, 224, 224]))],
        output: vec![value("prob", None)],
        ..Default::default()
    };
    model(graph, 17)
}

/// Short runs: the project's machines have 2 shared cores, and these
/// benchmarks look for large changes, not 1% ones.
pub fn config() -> criterion::Criterion {
    criterion::Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3))
}
