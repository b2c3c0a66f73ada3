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
            .map(|d| crate::cost::roofline(&report, d, Some(1e-3)))
            .transpose()?;
        for format in <Format as clap::ValueEnum>::value_variants() {
            let options = ReportOptions {
                format: *format,
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
                outputs: vec![Some(TensorFact::f32(layout.output))].into(),
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

/// A rule pack as a folder: the input holds several files, each starting
/// with a line `--- NAME` (text before the first such line is `rules.yaml`);
/// a name whose stem is `devices` or `fusions` is that kind of file, any
/// other a rule file. The pack is loaded over the built-in rules as `c3
/// --rules FOLDER` loads one, then a chain of layers (built-in ops, then
/// one layer per op the pack defines, each consuming the previous one's
/// output, so fusion patterns can match) is costed, fused and rendered, and
/// the pack's last devices take the roofline. Returns the layers costed.
pub fn pack(data: &[u8]) -> Result<usize> {
    let text = std::str::from_utf8(data).map_err(|e| Error::Input {
        path: "fuzz-pack".into(),
        message: format!("not UTF-8: {e}"),
    })?;
    let mut files: Vec<(String, String)> = Vec::new();
    let mut name = "rules.yaml".to_string();
    let mut body = String::new();
    for line in text.split_inclusive('\n') {
        if let Some(n) = line.strip_prefix("--- ") {
            if !body.is_empty() || name != "rules.yaml" {
                files.push((name, std::mem::take(&mut body)));
            }
            name = format!("{}.yaml", n.trim());
        } else {
            body.push_str(line);
        }
    }
    files.push((name, body));
    let mut set = builtin().clone();
    let ops = set.load_texts(&files)?;
    let mut chain: Vec<(String, String)> = ["Relu", "Sigmoid", "Relu", "Softmax", "Abs"]
        .iter()
        .map(|o| (String::new(), o.to_string()))
        .collect();
    for q in ops.iter().take(64) {
        let (domain, op) = q.rsplit_once("::").unwrap_or(("", q));
        chain.push((domain.to_string(), op.to_string()));
    }
    let tensor = |i: usize| {
        let mut t = TensorFact::f32(&[2, 3]);
        t.name = Some(format!("t{i}").into());
        Some(t)
    };
    let nodes = chain
        .iter()
        .enumerate()
        .map(|(i, (domain, op))| Node {
            name: format!("layer{i}"),
            op: op.clone(),
            domain: domain.clone(),
            opset: crate::ir::DEFAULT_OPSET,
            attrs: crate::ir::Attrs::default(),
            inputs: vec![tensor(i)].into(),
            outputs: vec![tensor(i + 1)].into(),
            bodies: Vec::new(),
        })
        .collect();
    let graph = Graph {
        nodes,
        ..Graph::default()
    };
    // A layer the pack's rules refuse is that layer's error, as in `rules`.
    // Timing on, so that the pack's `time:` formulas run on its devices.
    let timing = CountOptions {
        timing: true,
        ..CountOptions::default()
    };
    let report = crate::cost::estimate(&graph, &set, timing)?;
    let n = set.devices.len();
    for d in set.devices.iter().skip(n.saturating_sub(4)) {
        // A time formula that fails on a layer is that layer's error: the
        // other devices are still timed.
        if let Ok(r) = crate::cost::roofline(&report, d, Some(1e-3)) {
            crate::report::render(&report, &ReportOptions::default(), Some(&r));
        }
    }
    cost_and_render(graph, &set)
}

/// Symbolic dimension arithmetic: the input is a little program over a
/// stack of values (symbols `a`..`d`, small and extreme integers, `+ - *`,
/// negation, floor, ceiling and exact division, max, min). Each result is
/// checked against plain 128-bit arithmetic on the values it stands for
/// with `a..d` = 0, 1, 3, 7: an arithmetic result that exists must be
/// exact. Returns how many operations gave a value. A failed check panics.
pub fn dims(data: &[u8]) -> Result<usize> {
    use crate::dim::SymInt;
    const ENVS: [[i64; 4]; 3] = [[0, 1, 3, 7], [1, 1, 1, 1], [2, 5, 0, 9]];
    fn lookup(env: &[i64; 4], s: &str) -> Option<i64> {
        let i = ["a", "b", "c", "d"].iter().position(|n| *n == s)?;
        Some(env[i])
    }
    let mut stack: Vec<SymInt> = Vec::new();
    let mut done = 0;
    let mut bytes = data.iter().copied();
    while let Some(b) = bytes.next() {
        if stack.len() > 64 {
            stack.remove(0);
        }
        let arg = bytes.next().unwrap_or(0);
        let v = match b % 12 {
            0 => Some(SymInt::sym(["a", "b", "c", "d"][(arg % 4) as usize])),
            1 => Some(SymInt::Int(match arg {
                0 => i64::MIN,
                1 => i64::MAX,
                2 => -1,
                n => n as i64 - 128,
            })),
            11 => {
                // Squares the top value: x^(2^k) after k of them.
                let Some(x) = stack.pop() else { continue };
                let r = x.mul(&x).ok();
                if let Some(r) = &r {
                    for env in &ENVS {
                        let e = |s: &str| lookup(env, s);
                        if let (Ok(p), Ok(got)) = (x.eval_with(&e), r.eval_with(&e)) {
                            let want = (p as i128).checked_mul(p as i128);
                            assert_eq!(Some(got as i128), want, "square of {x} gave {r}");
                        }
                    }
                }
                r
            }
            op => {
                let (Some(y), Some(x)) = (stack.pop(), stack.pop()) else {
                    continue;
                };
                let k = (arg as i8) as i64;
                let (r, want): (Option<SymInt>, &dyn Fn(i128, i128) -> Option<i128>) = match op {
                    2 => (x.add(&y).ok(), &|p, q| p.checked_add(q)),
                    3 => (x.sub(&y).ok(), &|p, q| p.checked_sub(q)),
                    4 => (x.mul(&y).ok(), &|p, q| p.checked_mul(q)),
                    5 => (x.neg().ok(), &|p, _| p.checked_neg()),
                    6 if k != 0 => (x.floor_div(k).ok(), &|p, _| Some(p.div_euclid(k as i128))),
                    7 if k != 0 => (x.ceil_div(k).ok(), &|p, _| {
                        Some(-((-p).div_euclid(k as i128)))
                    }),
                    8 => (x.exact_div(&y), &|p, q| {
                        (q != 0 && p % q == 0).then(|| p / q)
                    }),
                    9 => (x.max_with(&y).ok(), &|p, q| Some(p.max(q))),
                    10 => (x.min_with(&y).ok(), &|p, q| Some(p.min(q))),
                    _ => (Some(x.clone()), &|p, _| Some(p)),
                };
                if let Some(r) = &r {
                    for env in &ENVS {
                        let e = |s: &str| lookup(env, s);
                        if let (Ok(p), Ok(q), Ok(got)) =
                            (x.eval_with(&e), y.eval_with(&e), r.eval_with(&e))
                        {
                            // Exact division is only claimed when it holds
                            // for every value of the symbols.
                            if op == 8 && !(y.is_known()) {
                                continue;
                            }
                            if let Some(w) = want(p as i128, q as i128) {
                                assert_eq!(got as i128, w, "op {op} on {x} and {y} gave {r}");
                            }
                        }
                    }
                    let _ = (r.to_string(), r.symbols(), r.is_non_negative());
                }
                r
            }
        };
        if let Some(v) = v {
            done += 1;
            stack.push(v);
        }
    }
    Ok(done)
}

/// Model-local functions, the model built from a little program so that
/// every input is a model that loads: the input's bytes, a few at a time,
/// make up to 8 functions of domain `local` whose bodies hold Relus, Adds,
/// calls (of a later function, or one time in 16 of any, itself included:
/// recursion), Ifs whose branches call one,
/// and LeakyRelus whose `alpha` refers to the call's; nodes named or
/// not, values named with short, long or prefix-like names. The main graph
/// calls some of them. The model is loaded, inferred (calls expanded),
/// costed and rendered; on the way, no layer or value name may be longer
/// than one name of the file per level of nesting (names grow linearly
/// with depth, never doubling). Returns the layers costed. A failed check
/// panics.
pub fn functions(data: &[u8]) -> Result<usize> {
    use crate::onnx::build;
    use crate::proto::{AttributeProto, FunctionProto, NodeProto, attr_type};
    use prost::Message;
    let mut bytes = data.iter().copied();
    let mut next = move || bytes.next().unwrap_or(0);
    let count = 1 + usize::from(next() % 8);
    let mut longest = 0;
    let mut name_of = |b: u8| -> String {
        let n = match b % 8 {
            0 | 1 => String::new(),
            2 => "t".into(),
            3 => "y/t".into(),
            4 => "a".into(),
            5 => "x".repeat(usize::from(b)),
            6 => "/".into(),
            _ => format!("v{}", b / 8),
        };
        longest = longest.max(n.len());
        n
    };
    let local = |n: NodeProto| NodeProto {
        domain: Some("local".into()),
        ..n
    };
    let mut functions = Vec::new();
    for i in 0..count {
        let mut body: Vec<NodeProto> = Vec::new();
        let mut last = "a".to_string();
        let steps = usize::from(next() % 6);
        for k in 0..steps {
            let (what, arg, output, named) = (next(), next(), next(), next());
            let out = match name_of(output) {
                n if n.is_empty() || n == "a" => format!("o{k}"),
                n => format!("{n}{k}"),
            };
            // A call goes to a later function, or (one time in 16) to any,
            // so that most programs expand and some recurse.
            let callee = match arg {
                240.. => Some(usize::from(arg) % count),
                _ if i + 1 < count => Some(i + 1 + usize::from(arg) % (count - i - 1)),
                _ => None,
            };
            let what = match callee {
                None if what % 5 == 2 || what % 5 == 3 => 0,
                _ => what % 5,
            };
            let callee = format!("f{}", callee.unwrap_or(0));
            let mut n = match what {
                0 => build::node("Relu", &[&last], &[&out]),
                1 => build::node("Add", &[&last, "a"], &[&out]),
                2 => local(build::node(&callee, &[&last, "c"], &[&out])),
                3 => {
                    let call = local(build::node(&callee, &[&last, "c"], &["inner"]));
                    let branch = |name: &str| crate::proto::GraphProto {
                        name: Some(name.into()),
                        node: vec![call.clone()],
                        output: vec![build::untyped("inner")],
                        ..Default::default()
                    };
                    let mut n = build::node("If", &["c"], &[&out]);
                    n.attribute = vec![
                        build::graph_attr("then_branch", branch("then")),
                        build::graph_attr("else_branch", branch("else")),
                    ];
                    n
                }
                _ => {
                    let mut n = build::node("LeakyRelu", &[&last], &[&out]);
                    n.attribute.push(AttributeProto {
                        name: Some("alpha".into()),
                        ref_attr_name: Some("alpha".into()),
                        r#type: Some(attr_type::FLOAT),
                        ..Default::default()
                    });
                    n
                }
            };
            let name = name_of(named);
            if !name.is_empty() {
                n.name = Some(name);
            }
            body.push(n);
            last = out;
        }
        body.push(build::node("Identity", &[&last], &["b"]));
        functions.push(FunctionProto {
            name: Some(format!("f{i}")),
            domain: Some("local".into()),
            input: vec!["a".into(), "c".into()],
            output: vec!["b".into()],
            attribute: vec!["alpha".into()],
            node: body,
            opset_import: vec![build::opset("", 17), build::opset("local", 1)],
            ..Default::default()
        });
    }
    let mut main = Vec::new();
    let mut last = "x".to_string();
    for k in 0..1 + usize::from(next() % 3) {
        let out = format!("m{k}");
        let mut call = local(build::node(
            &format!("f{}", usize::from(next()) % count),
            &[&last, "c"],
            &[&out],
        ));
        call.name = Some(name_of(next())).filter(|n| !n.is_empty());
        if next() % 2 == 0 {
            call.attribute.push(build::float("alpha", 0.5));
        }
        main.push(call);
        last = out;
    }
    main.push(build::node("Identity", &[&last], &["y"]));
    let graph = crate::proto::GraphProto {
        name: Some("main".into()),
        node: main,
        input: vec![
            build::sized_value("x", build::FLOAT, &[1, 8]),
            build::sized_value("c", build::BOOL, &[]),
        ],
        output: vec![build::untyped("y")],
        ..Default::default()
    };
    let mut model = build::model(graph, 17);
    model.opset_import.push(build::opset("local", 1));
    model.functions = functions;
    let encoded = Bytes::from(model.encode_to_vec());
    let loaded = crate::onnx::from_bytes(encoded, "/c3-fuzz/functions.onnx")?;
    let opts = crate::onnx::infer::InferOptions {
        nodes_only: true,
        ..Default::default()
    };
    let graph = crate::onnx::infer::to_graph(crate::onnx::infer::infer(&loaded, &opts)?);
    // One name of the file (and its `/`) per level of calls and bodies,
    // and room for `OpType-N`.
    let bound = (crate::ir::MAX_GRAPH_DEPTH + 2) * (longest + 8) + 32;
    fn check(g: &Graph, bound: usize) {
        for n in &g.nodes {
            assert!(n.name.len() <= bound, "a {}-byte layer name", n.name.len());
            for t in n.inputs.iter().chain(n.outputs.iter()).flatten() {
                let len = t.name.as_deref().map_or(0, str::len);
                assert!(len <= bound, "a {len}-byte value name");
            }
            for b in &n.bodies {
                if let Ok(g) = &b.graph {
                    check(g, bound);
                }
            }
        }
    }
    check(&graph, bound);
    cost_and_render(graph, builtin())
}
