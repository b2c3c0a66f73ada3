//! Decoding a model held in memory (`c3::onnx::from_bytes`): structure only,
//! weights are slices of the buffer and never read.

mod common;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for n in [1_000, 10_000] {
        let bytes = common::transformer(n);
        let nodes = c3::onnx::from_bytes(bytes.clone(), "t.onnx")
            .unwrap()
            .model
            .graph
            .unwrap()
            .node
            .len();
        g.throughput(Throughput::Elements(nodes as u64));
        g.bench_function(format!("transformer_{n}"), |b| {
            b.iter(|| c3::onnx::from_bytes(black_box(bytes.clone()), "t.onnx").unwrap())
        });
    }
    // 553 MB of embedded weights: the time must not depend on their size.
    let bytes = common::vgg16();
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("vgg16_553MB", |b| {
        b.iter(|| c3::onnx::from_bytes(black_box(bytes.clone()), "vgg16.onnx").unwrap())
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = decode
}
criterion_main!(benches);
