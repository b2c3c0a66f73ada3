//! Each front end run from raw bytes to a rendered report, the way `c3
//! estimate` runs it: the entry points of the fuzz targets in `fuzz/` and of
//! the regression tests that replay what fuzzing found (`tests/fuzz.rs`).
//!
//! Every function returns the error a user would see; a panic, a hang or a
//! runaway allocation inside one is a bug.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::ir::{AttrValue, Graph, Node, TensorFact};
use crate::report::{Format, ReportOptions};
use crate::rules::{CountOptions, RuleSet};

/// Symbols nothing binds take this size, so that costing runs (and is
/// fuzzed) on graphs whose sizes the file leaves open.
const FREE_SIZE: i64 = 3;

/// The built-in rules, loaded once per process.
fn builtin() -> &'static RuleSet {
    static RULES: OnceLock<RuleSet> = OnceLock::new();
    RULES.get_or_init(|| RuleSet::builtin().expect("the built-in rules load"))
}

/// Binds what is left open, costs the graph with each counting switch that
/// changes formulas, and renders every report format. Returns the number
/// of layers in the report.
fn cost_and_render(mut graph: Graph, rules: &RuleSet) -> Result<usize> {
    graph.bind(&BTreeMap::new());
    let free: BTreeMap<String, i64> = graph
        .unbound_symbols()
        .into_iter()
        .map(|s| (s, FREE_SIZE))
        .collect();
    graph.bind(&free);
    let plain = CountOptions::default();
    let switched = CountOptions {
        fma: false,
        full_attention: true,
        ..plain
    };
    let mut costed = 0;
    for opts in [plain, switched] {
        let report = crate::cost::estimate(&graph, rules, opts)?;
        costed = report.layers.len();
        let roofline = rules
            .devices
            .iter()
            .next()
            .map(|d| crate::cost::roofline(&report, d, Some(1e-3)));
        for format in [
            Format::Table,
            Format::Json,
            Format::Csv,
            Format::Md,
            Format::Html,
            Format::ModelExplorer,
        ] {
            let options = ReportOptions {
                format,
                ..ReportOptions::default()
            };
            crate::report::render(&report, &options, roofline.as_ref());
        }
    }
    Ok(costed)
}

/// An ONNX file: decoded and checked, shapes inferred, costed and reported;
/// returns the number of layers costed. External data resolve against a
/// folder that does not exist.
pub fn onnx(data: &[u8]) -> Result<usize> {
    let model = crate::onnx::from_bytes(Bytes::copy_from_slice(data), "/c3-fuzz/model.onnx")?;
    let opts = crate::onnx::infer::InferOptions {
        nodes_only: true,
        ..Default::default()
    };
    let inferred = crate::onnx::infer::infer(&model, &opts)?;
    cost_and_render(crate::onnx::infer::to_graph(inferred), builtin())
}

/// An operator trace (JSON): read, costed and reported; returns the number
/// of layers costed.
pub fn trace(data: &[u8]) -> Result<usize> {
    let graph = crate::trace::parse_trace(data, "fuzz.trace.json")?;
    cost_and_render(graph, builtin())
}

/// A layer each fuzzed rule is evaluated on: input shapes, output shape,
/// and a `kernel_shape` attribute when it has one.
struct Layout {
    inputs: &'static [&'static [u64]],
    output: &'static [u64],
    kernel: Option<&'static [i64]>,
}

/// Element-wise, binary, pooling, convolution, Gemm and MatMul shapes.
const LAYOUTS: &[Layout] = &[
    Layout {
        inputs: &[&[2, 3, 8, 8]],
        output: &[2, 3, 8, 8],
        kernel: None,
    },
    Layout {
        inputs: &[&[2, 3, 8, 8], &[2, 3, 8, 8]],
        output: &[2, 3, 8, 8],
        kernel: None,
    },
    Layout {
        inputs: &[&[2, 3, 8, 8]],
        output: &[2, 3, 6, 6],
        kernel: Some(&[3, 3]),
    },
    Layout {
        inputs: &[&[2, 3, 8, 8], &[4, 3, 3, 3], &[4]],
        output: &[2, 4, 6, 6],
        kernel: None,
    },
    Layout {
        inputs: &[&[5, 6], &[6, 7], &[7]],
        output: &[5, 7],
        kernel: None,
    },
    Layout {
        inputs: &[&[2, 5, 6], &[6, 7]],
        output: &[2, 5, 7],
        kernel: None,
    },
];

/// A rule file: the whole text also tried as one formula and as a tensor
/// pattern list (the grammar's two entry points), then the file loaded over
/// the built-in rules and each rule it defines evaluated on every layer of
/// [`LAYOUTS`], one at a time. A layout the rule's patterns refuse is an
/// error of that layer only. Returns how many layers were costed.
pub fn rules(data: &[u8]) -> Result<usize> {
    let text = std::str::from_utf8(data).map_err(|e| Error::Input {
        path: "fuzz.yaml".into(),
        message: format!("not UTF-8: {e}"),
    })?;
    let _ = crate::rules::parse::parse_formula(text);
    let _ = crate::rules::parse::parse_patterns(text);
    let mut set = builtin().clone();
    let ops = set.add_source("fuzz.yaml", text, false)?;
    let mut costed = 0;
    for name in &ops {
        let Some(rule) = set.find(name) else { continue };
        for layout in LAYOUTS {
            let attrs = layout
                .kernel
                .map(|k| ("kernel_shape".to_string(), AttrValue::Ints(k.to_vec())))
                .into_iter()
                .collect();
            let layer = Node {
                name: "layer".into(),
                op: rule.op.clone(),
                domain: rule.domain.clone(),
                opset: crate::ir::DEFAULT_OPSET,
                attrs,
                inputs: layout
                    .inputs
                    .iter()
                    .map(|d| Some(TensorFact::f32(d)))
                    .collect(),
                outputs: vec![Some(TensorFact::f32(layout.output))],
                bodies: Vec::new(),
            };
            let graph = Graph {
                nodes: vec![layer],
                ..Graph::default()
            };
            if cost_and_render(graph, &set).is_ok() {
                costed += 1;
            }
        }
    }
    Ok(costed)
}
