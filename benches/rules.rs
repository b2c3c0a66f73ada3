//! The rule engine: loading the built-in rules, compiling one, and applying
//! one to a node (`CostRule::evaluate`, with and without its memo), reported
//! per node.

mod common;

use c3::ir::{AttrValue, DEFAULT_OPSET, DType, Dim, Node, TensorFact};
use c3::rules::{CountOptions, RuleSet};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn fact(dims: &[u64]) -> Option<TensorFact> {
    Some(TensorFact::new(
        DType::Float32,
        dims.iter().map(|&d| Dim::Known(d)).collect(),
    ))
}

fn node(op: &str, inputs: &[&[u64]], outputs: &[&[u64]], attrs: &[(&str, AttrValue)]) -> Node {
    Node {
        name: op.to_string(),
        op: op.to_string(),
        domain: String::new(),
        opset: DEFAULT_OPSET,
        attrs: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        inputs: inputs.iter().map(|d| fact(d)).collect(),
        outputs: outputs.iter().map(|d| fact(d)).collect(),
        bodies: Vec::new(),
    }
}

fn loading(c: &mut Criterion) {
    let mut g = c.benchmark_group("rules");
    // What every run pays: the index of the built-in rules, none compiled.
    g.bench_function("builtin_index", |b| b.iter(|| RuleSet::builtin().unwrap()));
    // All 244 rules compiled (what `c3 rules list` and `c3 docs` pay).
    g.bench_function("builtin_compile_all", |b| {
        b.iter(|| RuleSet::builtin_compiled().unwrap())
    });
    // The first lookup of an op compiles its rule from its block.
    for op in ["Conv", "MatMul", "Relu"] {
        g.bench_function(format!("first_lookup_{op}"), |b| {
            b.iter_batched(
                || RuleSet::builtin().unwrap(),
                |set| set.get("", op).is_some(),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

fn evaluate(c: &mut Criterion) {
    let set = RuleSet::builtin().unwrap();
    let opts = CountOptions::default();
    let cases = [
        node(
            "Conv",
            &[&[1, 64, 56, 56], &[64, 64, 3, 3], &[64]],
            &[&[1, 64, 56, 56]],
            &[
                ("kernel_shape", AttrValue::Ints(vec![3, 3])),
                ("pads", AttrValue::Ints(vec![1, 1, 1, 1])),
            ],
        ),
        node(
            "MatMul",
            &[&[1, 128, 64], &[64, 192]],
            &[&[1, 128, 192]],
            &[],
        ),
        node(
            "Attention",
            &[&[1, 8, 128, 64], &[1, 8, 128, 64], &[1, 8, 128, 64]],
            &[&[1, 8, 128, 64]],
            &[],
        ),
        node("Relu", &[&[1, 64, 56, 56]], &[&[1, 64, 56, 56]], &[]),
    ];
    let mut g = c.benchmark_group("evaluate");
    g.throughput(Throughput::Elements(1));
    for n in &cases {
        let rule = set.get("", &n.op).unwrap();
        // The work itself: bind the node, run every formula.
        g.bench_function(&n.op, |b| {
            b.iter(|| rule.evaluate_uncached(black_box(n), opts).unwrap())
        });
        // A node seen before (a repeated block): one memo lookup.
        rule.evaluate(n, opts).unwrap();
        g.bench_function(format!("{}_remembered", n.op), |b| {
            b.iter(|| rule.evaluate(black_box(n), opts).unwrap())
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = loading, evaluate
}
criterion_main!(benches);
