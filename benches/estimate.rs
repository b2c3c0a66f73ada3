//! A whole `c3 estimate` on the 10,000-node transformer, in memory: decode,
//! infer shapes, cost every node, render the Markdown report; and the cost
//! and report stages (Markdown, JSON) alone.

mod common;

use c3::cost::estimate;
use c3::onnx::infer::{InferOptions, infer, to_graph};
use c3::report::{Format, ReportOptions, render};
use c3::rules::{CountOptions, RuleSet};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn whole(c: &mut Criterion) {
    let bytes = common::transformer(10_000);
    let opts = InferOptions {
        nodes_only: true,
        ..Default::default()
    };
    let md = ReportOptions {
        format: Format::Md,
        ..Default::default()
    };
    let run = |bytes: bytes::Bytes| {
        let rules = RuleSet::builtin().unwrap();
        let model = c3::onnx::from_bytes(bytes, "t.onnx").unwrap();
        let graph = to_graph(infer(&model, &opts).unwrap());
        let report = estimate(&graph, &rules, CountOptions::default()).unwrap();
        render(&report, &md, None)
    };
    let graph = to_graph(
        infer(
            &c3::onnx::from_bytes(bytes.clone(), "t.onnx").unwrap(),
            &opts,
        )
        .unwrap(),
    );
    let rules = RuleSet::builtin().unwrap();
    let report = estimate(&graph, &rules, CountOptions::default()).unwrap();

    let mut g = c.benchmark_group("estimate");
    g.throughput(Throughput::Elements(graph.nodes.len() as u64));
    g.bench_function("transformer_10000_whole", |b| {
        b.iter(|| run(black_box(bytes.clone())))
    });
    // As a run sees it: a fresh rule set, so rules compile and memos start
    // empty.
    g.bench_function("transformer_10000_cost", |b| {
        b.iter_batched(
            || RuleSet::builtin().unwrap(),
            |rules| estimate(black_box(&graph), &rules, CountOptions::default()).unwrap(),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("transformer_10000_render_md", |b| {
        b.iter(|| render(black_box(&report), &md, None))
    });
    // The pretty JSON text of every layer (a third of a whole run's
    // instructions before its indentation was written in one piece).
    let json = ReportOptions {
        format: Format::Json,
        ..Default::default()
    };
    g.bench_function("transformer_10000_render_json", |b| {
        b.iter(|| render(black_box(&report), &json, None))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = whole
}
criterion_main!(benches);
