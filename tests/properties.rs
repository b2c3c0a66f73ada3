//! Properties of the grammar, the evaluator and the rules.

use crate::common;

use c3::ir::{AttrValue, DEFAULT_OPSET, DType, Dim, Node, TensorFact};
use c3::rules::ast::{DimPat, TensorPat};
use c3::rules::parse::parse_formula;
use c3::rules::render::{to_latex, to_text};
use c3::rules::{CostRule, CountOptions, RuleSet};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Random formula text built from the grammar's productions.
fn formula() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (0u32..1000).prop_map(|n| n.to_string()),
        prop::sample::select(vec!["N", "C", "K", "fma", "axis", "window", "x_1"])
            .prop_map(String::from),
        prop::sample::select(vec!["|X|", "|W|", "|Y|"]).prop_map(String::from),
        prop::sample::select(vec!["\"linear\"", "\"\""]).prop_map(String::from),
    ];
    leaf.prop_recursive(6, 64, 4, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["+", "-", "*", "/", "%", "&&", "||"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            // Comparisons do not chain: each one is parenthesized whole.
            (
                inner.clone(),
                prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">="]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("(({a}) {op} ({b}))")),
            inner.clone().prop_map(|a| format!("({a})")),
            inner.clone().prop_map(|a| format!("-{a}")),
            inner.clone().prop_map(|a| format!("!({a})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("({c}) ? {a} : {b}")),
            (
                prop::sample::select(vec!["min", "max", "prod", "cdiv", "f"]),
                prop::collection::vec(inner.clone(), 0..3)
            )
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            prop::collection::vec(inner.clone(), 0..3)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            (inner.clone(), inner).prop_map(|(a, i)| format!("({a})[{i}]")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any text at all: the parser answers Ok or Err, never panics.
    #[test]
    fn parser_never_panics_on_any_text(s in "\\PC{0,200}") {
        let _ = parse_formula(&s);
    }

    /// Text made of formula characters exercises the grammar's error paths.
    #[test]
    fn parser_never_panics_on_formula_like_text(s in "[|()\\[\\]?:!*/%+<>=&, a-zA-Z0-9_\"-]{0,120}") {
        if let Ok(e) = parse_formula(&s) {
            let _ = to_latex(&e);
            prop_assert_eq!(parse_formula(&to_text(&e)).unwrap(), e);
        }
    }

    /// Parse, render as text, parse again: the same tree.
    #[test]
    fn parse_render_parse_is_the_same_tree(s in formula()) {
        let tree = parse_formula(&s).unwrap();
        let text = to_text(&tree);
        prop_assert_eq!(parse_formula(&text).unwrap(), tree, "rendered as {}", text);
    }

    /// A rule file with an arbitrary formula loads or fails with a located error.
    #[test]
    fn rule_loading_never_panics(f in "\\PC{0,80}") {
        let yaml = format!(
            "Relu:\n  category: A\n  summary: s\n  doc: d\n  inputs: \"X[N, *S]\"\n  outputs: \"Y\"\n  flops: {}\n  mread: \"|X|\"\n  mwrite: 0\n",
            serde_json::to_string(&f).unwrap()
        );
        if let Err(e) = RuleSet::empty().add_source("p.yaml", &yaml, false) {
            prop_assert!(e.to_string().starts_with("p.yaml:"), "{}", e);
        }
    }
}

/// Sizes for every pattern name of a rule: each dimension name gets one value
/// and every `*list` one shared length, so convolution windows, spatial dims
/// and resize axes line up.
fn node_for(rule: &CostRule, dims: &[u64], list_len: usize, present: &[bool]) -> Node {
    let mut values: BTreeMap<String, u64> = BTreeMap::new();
    let mut next = 0usize;
    let mut dim = |name: &str, values: &mut BTreeMap<String, u64>| {
        *values.entry(name.to_string()).or_insert_with(|| {
            next += 1;
            dims[next % dims.len()]
        })
    };
    let mut shape_of = |p: &TensorPat, values: &mut BTreeMap<String, u64>| -> Vec<u64> {
        match &p.dims {
            None => (0..list_len + 2)
                .map(|i| dims[(i * 7 + 3) % dims.len()])
                .collect(),
            Some(pat) => {
                let mut out = Vec::new();
                for d in pat {
                    match d {
                        DimPat::Fixed(n) => out.push(*n),
                        DimPat::Name(n) => out.push(dim(n, values)),
                        DimPat::Rest(n) => {
                            for i in 0..list_len {
                                out.push(dim(&format!("{n}#{i}"), values));
                            }
                        }
                    }
                }
                out
            }
        }
    };
    let fact = |d: Vec<u64>| {
        Some(TensorFact::new(
            DType::Float32,
            d.into_iter().map(Dim::Known).collect(),
        ))
    };
    let mut inputs = Vec::new();
    for (i, p) in rule.inputs.iter().enumerate() {
        let shape = shape_of(p, &mut values);
        if p.variadic {
            inputs.extend((0..1 + i % 3).map(|_| fact(shape.clone())));
        } else if p.optional && !present[i % present.len()] {
            inputs.push(None);
        } else {
            inputs.push(fact(shape));
        }
    }
    // Outputs without a pattern take the first present input's shape, as
    // element-wise ops and reductions with keepdims do.
    let first = inputs.iter().flatten().next().cloned();
    let mut outputs = Vec::new();
    for p in &rule.outputs {
        if p.optional {
            outputs.push(None);
        } else if p.dims.is_none() {
            outputs.push(first.clone());
        } else {
            outputs.push(fact(shape_of(p, &mut values)));
        }
    }
    let mut attrs = BTreeMap::new();
    // Einsum needs an equation that fits the operands: each one's axes are
    // the first letters, as the output's (they all share one shape here).
    if rule.op == "Einsum" {
        let term = |t: &TensorFact| "abcdefghij"[..t.shape.len()].to_string();
        let lhs: Vec<String> = inputs.iter().flatten().map(term).collect();
        let rhs = outputs
            .iter()
            .flatten()
            .map(term)
            .next()
            .unwrap_or_default();
        attrs.insert(
            "equation".into(),
            AttrValue::Str(format!("{}->{rhs}", lhs.join(","))),
        );
    }
    // The one required attribute formulas use: a pooling window per spatial dim.
    if rule
        .attrs
        .iter()
        .any(|a| a.name == "kernel_shape" && a.default.is_none())
    {
        attrs.insert("kernel_shape".into(), AttrValue::Ints(vec![2; list_len]));
    }
    Node {
        name: rule.op.clone(),
        op: rule.op.clone(),
        domain: rule.domain.clone(),
        opset: DEFAULT_OPSET,
        attrs: attrs.into(),
        inputs: inputs.into(),
        outputs: outputs.into(),
        bodies: Vec::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// For every built-in rule, on random valid shapes: the rule evaluates, and
    /// FLOPs without FMA are never fewer than with it. (The `chainer` pack's
    /// Conv breaks this on purpose; see the test below.)
    #[test]
    fn fma_off_never_counts_fewer_flops(
        dims in prop::collection::vec(1u64..7, 8),
        list_len in 1usize..4,
        present in prop::collection::vec(any::<bool>(), 4),
    ) {
        for rule in common::builtin().iter() {
            let rule = rule.clone();
            let node = node_for(&rule, &dims, list_len, &present);
            let on = rule.evaluate(&node, CountOptions::fma(true));
            let off = rule.evaluate(&node, CountOptions::fma(false));
            let (on, off) = match (on, off) {
                (Ok(a), Ok(b)) => (a, b),
                (a, b) => panic!("{} ({}) failed on {:?}: {:?} / {:?}", rule.op, rule.origin, node, a.err(), b.err()),
            };
            prop_assert!(off.flops >= on.flops, "{}: {} < {}", rule.op, off.flops, on.flops);
            prop_assert_eq!(off.mread, on.mread, "{}: FMA changes no byte", rule.op);
            prop_assert_eq!(off.mwrite, on.mwrite);
        }
    }
}

#[test]
fn every_builtin_rule_has_docs_and_a_category() {
    for r in common::builtin().iter() {
        assert!(!r.doc.trim().is_empty(), "{} has no doc", r.op);
        assert!(!r.summary.is_empty(), "{} has no summary", r.op);
        assert!(!r.category.is_empty(), "{} has no category", r.op);
    }
    // The original tool's operators, by ONNX name (DESIGN.md's mapping).
    let original = [
        "PRelu",
        "Relu",
        "LeakyRelu",
        "Sigmoid",
        "Softmax",
        "Expand",
        "Concat",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Resize",
        "Transpose",
        "Slice",
        "Gather",
        "Conv",
        "ConvTranspose",
        "Gemm",
        "MatMul",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "ReduceMax",
        "ReduceMin",
        "ReduceSum",
        "ArgMax",
        "ArgMin",
        "BatchNormalization",
        "LpNormalization",
        "LRN",
        "AveragePool",
        "MaxPool",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "Upsample",
        "MaxUnpool",
    ];
    for op in original {
        assert!(common::builtin().get("", op).is_some(), "no rule for {op}");
    }
    let _ = RuleSet::empty();
}

#[test]
fn the_original_conv_without_bias_can_count_fewer_flops_without_fma() {
    // chainer_computational_cost 0.1.2, one input and one output channel, a
    // 1x1 kernel, no bias: FMA on counts C * M * |O| = 1, FMA off counts
    // 2 * (C * M - 1) * |O| = 0. The built-in rule counts (2k - 1) = 1.
    let conv = common::layer("Conv")
        .input(&[1, 1, 1, 1])
        .input(&[1, 1, 1, 1])
        .absent()
        .output(&[1, 1, 1, 1]);
    assert_eq!(conv.eval_with(common::chainer(), true).flops, 1);
    assert_eq!(conv.eval_with(common::chainer(), false).flops, 0);
    assert_eq!(conv.eval(false).flops, 1);
}
