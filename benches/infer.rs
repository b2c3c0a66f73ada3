//! Shape inference over a decoded model (`c3::onnx::infer::infer`), and the
//! conversion to the graph the cost stage reads.

mod common;

use c3::onnx::infer::{InferOptions, infer, to_graph};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn shapes(c: &mut Criterion) {
    let mut g = c.benchmark_group("infer");
    // What `c3 estimate` asks for: node facts only.
    let opts = InferOptions {
        nodes_only: true,
        ..Default::default()
    };
    for n in [1_000, 10_000] {
        let model = c3::onnx::from_bytes(common::transformer(n), "t.onnx").unwrap();
        let nodes = model.model.graph.as_ref().unwrap().node.len();
        g.throughput(Throughput::Elements(nodes as u64));
        g.bench_function(format!("transformer_{n}"), |b| {
            b.iter(|| infer(black_box(&model), &opts).unwrap())
        });
        g.bench_function(format!("to_graph_{n}"), |b| {
            b.iter_batched(
                || infer(&model, &opts).unwrap(),
                to_graph,
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = shapes
}
criterion_main!(benches);
