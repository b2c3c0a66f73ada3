//! Control flow: If branches, Loop, Scan and SequenceMap bodies are costed
//! where their node stands, their layers multiplied by the number of runs.

use crate::common::onnx::*;
use c3::rules::rule::BranchChoice;
use c3::rules::{CountOptions, RuleSet};

/// Loop body: (i, cond, h[1, 64]) -> (cond, h @ W + b): the weights W[64, 64]
/// and b[64] are the main graph's.
fn matmul_body() -> GraphProto {
    GraphProto {
        node: vec![
            node("MatMul", &["h", "W"], &["hw"]),
            node("Add", &["hw", "b"], &["h_next"]),
            node("Identity", &["cond_in"], &["cond_out"]),
        ],
        input: vec![
            typed("i", INT64, &[]),
            typed("cond_in", BOOL, &[]),
            untyped("h"),
        ],
        output: vec![untyped("cond_out"), untyped("h_next")],
        ..Default::default()
    }
}

/// h[1, 64] carried through `trips` iterations of `matmul_body`; `m` and
/// `cond` name the Loop's first two inputs ("" for absent).
fn loop_model(
    m: &str,
    cond: &str,
    inits: Vec<TensorProto>,
    inputs: Vec<ValueInfoProto>,
) -> ModelProto {
    let mut initializer = vec![weights("W", &[64, 64]), weights("b", &[64])];
    initializer.extend(inits);
    let mut input = vec![float("h0", &[1, 64])];
    input.extend(inputs);
    model(GraphProto {
        node: vec![with_graph(
            node("Loop", &[m, cond, "h0"], &["h_final"]),
            "body",
            matmul_body(),
        )],
        initializer,
        input,
        output: vec![untyped("h_final")],
        ..Default::default()
    })
}

#[test]
fn a_loop_body_is_counted_once_per_iteration() {
    let m = loop_model("M", "", vec![scalar("M", INT64, 5)], vec![]);
    let r = cost(&m);
    // Per iteration, h[1, 64] @ W[64, 64]: 64 outputs of 64 multiply-adds,
    // 64 * 64 = 4,096 FLOPs with FMA; the bias Add 64 FLOPs. Five iterations.
    let mm = layer(&r, "Loop-1/body/MatMul-1");
    assert_eq!(mm.runs, 5);
    assert_eq!(mm.flops, 5 * 64 * 64);
    // Reads h (64 floats) and W (64 * 64 floats), writes 64 floats, each run.
    assert_eq!(mm.mread, 5 * (64 + 64 * 64) * 4);
    assert_eq!(mm.mwrite, 5 * 64 * 4);
    assert_eq!(layer(&r, "Loop-1/body/Add-1").flops, 5 * 64);
    // The Loop itself reads M (an int64 scalar) and moves nothing else.
    let lp = layer(&r, "Loop-1");
    assert_eq!((lp.flops, lp.mread, lp.mwrite), (0, 8, 0));
    assert!(
        lp.attrs
            .iter()
            .any(|(k, v)| k == "body_runs" && *v == evalexpr::Value::Int(5)),
        "{:?}",
        lp.attrs
    );
    // The body's layers follow the Loop in the layer list; Identity moves
    // nothing. Totals are the sum of the layers.
    let mut names: Vec<&str> = r.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names[0], "Loop-1");
    names.sort();
    assert_eq!(
        names,
        [
            "Loop-1",
            "Loop-1/body/Add-1",
            "Loop-1/body/Identity-1",
            "Loop-1/body/MatMul-1",
        ]
    );
    assert_eq!(r.total.flops, 5 * (64 * 64 + 64));
    assert!(r.unsupported.is_empty(), "{:?}", r.unsupported);
    // The summary counts the body's MatMul as a MatMul.
    let row = r.summary.iter().find(|s| s.op == "MatMul").unwrap();
    assert_eq!(row.totals.flops, 5 * 64 * 64);
}

#[test]
fn fma_off_doubles_the_body_multiply_adds() {
    let m = loop_model("M", "", vec![scalar("M", INT64, 3)], vec![]);
    let r = cost_with(&m, CountOptions::fma(false), &[]);
    // Without a bias input, each output is 64 products and 63 additions.
    assert_eq!(
        layer(&r, "Loop-1/body/MatMul-1").flops,
        3 * 64 * (2 * 64 - 1)
    );
}

#[test]
fn a_loop_whose_count_is_data_is_listed_until_it_is_bound() {
    // No M and a run-time condition: the count is a symbol c3 names; the
    // Loop is listed as not counted (a warning; --strict fails).
    let m = loop_model("", "go", vec![], vec![typed("go", BOOL, &[])]);
    let (code, out, err) = c3_on(&m, "while", &["estimate", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Loop (1)"), "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["total"]["flops"], 0);
    let reason = json["unsupported"][0]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(json["unsupported"][0]["name"], "Loop-1");
    let symbol = reason
        .split("--dim ")
        .nth(1)
        .and_then(|s| s.split('=').next())
        .expect("the reason says which symbol to bind")
        .to_string();
    assert!(symbol.starts_with("iterations_"), "{reason}");
    let (code, _, err) = c3_on(&m, "while", &["estimate", "--strict"]);
    assert_eq!(code, 3, "{err}");
    let bind = format!("{symbol}=7");
    let (code, out, err) = c3_on(
        &m,
        "while",
        &["estimate", "--format", "json", "--dim", &bind],
    );
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Seven iterations of 64 * 64 + 64 FLOPs.
    assert_eq!(json["total"]["flops"], 7 * (64 * 64 + 64));
    let body = json["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "Loop-1/body/MatMul-1")
        .unwrap();
    assert_eq!(body["runs"], 7);
}

#[test]
fn an_exporter_while_loop_is_not_counted_int64_max_times() {
    // torch.onnx writes `while` as M = INT64_MAX with a run-time condition.
    let m = loop_model(
        "M",
        "go",
        vec![scalar("M", INT64, i64::MAX)],
        vec![typed("go", BOOL, &[])],
    );
    let r = cost(&m);
    assert_eq!(r.total.flops, 0);
    assert!(
        r.unsupported[0].reason.contains("--dim iterations_"),
        "{}",
        r.unsupported[0].reason
    );
    // With M small and the same condition, M is the bound that is counted.
    let m = loop_model(
        "M",
        "go",
        vec![scalar("M", INT64, 4)],
        vec![typed("go", BOOL, &[])],
    );
    assert_eq!(cost(&m).total.flops, 4 * (64 * 64 + 64));
}

#[test]
fn a_loop_that_starts_false_runs_no_iteration() {
    let m = loop_model(
        "M",
        "stop",
        vec![scalar("M", INT64, 9), scalar("stop", BOOL, 0)],
        vec![],
    );
    let r = cost(&m);
    assert_eq!(layer(&r, "Loop-1/body/MatMul-1").runs, 0);
    assert_eq!(r.total.flops, 0);
}

#[test]
fn nested_loops_multiply_their_counts() {
    // outer: 3 iterations of { inner: 4 iterations of h @ W + b }.
    let inner = with_graph(
        node("Loop", &["M4", "", "h"], &["h_next"]),
        "body",
        matmul_body(),
    );
    let outer_body = GraphProto {
        node: vec![inner, node("Identity", &["c_in"], &["c_out"])],
        input: vec![
            typed("j", INT64, &[]),
            typed("c_in", BOOL, &[]),
            untyped("h"),
        ],
        output: vec![untyped("c_out"), untyped("h_next")],
        ..Default::default()
    };
    let m = model(GraphProto {
        node: vec![with_graph(
            node("Loop", &["M3", "", "h0"], &["h_final"]),
            "body",
            outer_body,
        )],
        initializer: vec![
            weights("W", &[64, 64]),
            weights("b", &[64]),
            scalar("M3", INT64, 3),
            scalar("M4", INT64, 4),
        ],
        input: vec![float("h0", &[1, 64])],
        output: vec![untyped("h_final")],
        ..Default::default()
    });
    let r = cost(&m);
    let mm = layer(&r, "Loop-1/body/Loop-1/body/MatMul-1");
    assert_eq!(mm.runs, 12);
    assert_eq!(mm.flops, 12 * 64 * 64);
    // The inner Loop reads its M once per outer iteration.
    assert_eq!(layer(&r, "Loop-1/body/Loop-1").mread, 3 * 8);
    assert_eq!(r.total.flops, 12 * (64 * 64 + 64));
}

/// y = If(c) { x @ W } else { Relu(x) }, x[1, 64]; `cond` is an input or a
/// constant.
fn if_model(cond: Option<bool>) -> ModelProto {
    let then_g = GraphProto {
        node: vec![node("MatMul", &["x", "W"], &["t"])],
        output: vec![untyped("t")],
        ..Default::default()
    };
    let else_g = GraphProto {
        node: vec![node("Relu", &["x"], &["e"])],
        output: vec![untyped("e")],
        ..Default::default()
    };
    let mut initializer = vec![weights("W", &[64, 64])];
    let mut input = vec![float("x", &[1, 64])];
    match cond {
        Some(c) => initializer.push(scalar("c", BOOL, i64::from(c))),
        None => input.push(typed("c", BOOL, &[])),
    }
    let n = with_graph(
        with_graph(node("If", &["c"], &["y"]), "then_branch", then_g),
        "else_branch",
        else_g,
    );
    model(GraphProto {
        node: vec![n],
        initializer,
        input,
        output: vec![untyped("y")],
        ..Default::default()
    })
}

#[test]
fn an_if_counts_its_larger_branch_and_reports_the_other() {
    let r = cost(&if_model(None));
    // then: 64 * 64 FLOPs; else: 64 maxima. The larger is counted.
    assert_eq!(layer(&r, "If-1/then_branch/MatMul-1").flops, 64 * 64);
    // The If reads its boolean condition: one byte.
    assert_eq!(layer(&r, "If-1").mread, 1);
    assert_eq!(r.total.flops, 64 * 64);
    assert_eq!(r.skipped.len(), 1);
    let s = &r.skipped[0];
    assert_eq!(
        (s.node.as_str(), s.branch.as_str()),
        ("If-1", "else_branch")
    );
    assert_eq!(s.totals.flops, 64);
    // Relu reads and writes 64 floats.
    assert_eq!(s.totals.mrw, 2 * 64 * 4);
    assert_eq!(s.layers[0].name, "If-1/else_branch/Relu-1");
    assert!(
        s.reason.contains("then_branch is counted instead"),
        "{}",
        s.reason
    );
}

#[test]
fn if_branch_picks_the_branch_to_count() {
    let m = if_model(None);
    let pick = |b: BranchChoice| {
        cost_with(
            &m,
            CountOptions {
                branch: b,
                ..CountOptions::default()
            },
            &[],
        )
    };
    for (choice, flops, skipped) in [
        (BranchChoice::Larger, 64 * 64, "else_branch"),
        (BranchChoice::Then, 64 * 64, "else_branch"),
        (BranchChoice::Smaller, 64, "then_branch"),
        (BranchChoice::Else, 64, "then_branch"),
    ] {
        let r = pick(choice);
        assert_eq!(r.total.flops, flops, "{choice:?}");
        assert_eq!(r.skipped[0].branch, skipped, "{choice:?}");
    }
    // The flag, and the JSON list of what is not counted.
    let (code, out, err) = c3_on(
        &m,
        "if_flag",
        &["estimate", "--format", "json", "--if-branch", "smaller"],
    );
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["total"]["flops"], 64);
    let skipped = &json["skipped_branches"][0];
    assert_eq!(skipped["branch"], "then_branch");
    assert_eq!(skipped["flops"], 64 * 64);
    assert_eq!(skipped["layers"][0]["name"], "If-1/then_branch/MatMul-1");
    let (code, _, err) = c3_on(&m, "if_bad_flag", &["estimate", "--if-branch", "both"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--if-branch"), "{err}");
}

#[test]
fn a_known_condition_costs_only_its_branch() {
    // c = false: only else runs; the If is not folded, since Relu reads x.
    // The other branch is dead code: nothing to report beside the totals.
    let r = cost(&if_model(Some(false)));
    assert_eq!(r.total.flops, 64);
    assert_eq!(layer(&r, "If-1/else_branch/Relu-1").flops, 64);
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    let branch = layer(&r, "If-1").attrs.iter().find(|(k, _)| k == "branch");
    assert_eq!(
        branch.map(|(_, v)| v.clone()),
        Some(evalexpr::Value::String("else_branch".into()))
    );
}

#[test]
fn the_table_lists_runs_and_what_is_not_counted() {
    let (code, out, err) = c3_on(
        &if_model(None),
        "if_table",
        &["estimate", "--format", "table"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("If branches not counted: 1"), "{out}");
    assert!(out.contains("If-1/else_branch (1 layers"), "{out}");
    let m = loop_model("M", "", vec![scalar("M", INT64, 5)], vec![]);
    let (code, out, err) = c3_on(&m, "loop_table", &["estimate", "--format", "csv"]);
    assert_eq!(code, 0, "{err}");
    let header = out.lines().next().unwrap();
    assert!(header.starts_with("name,op,runs,"), "{header}");
    assert!(out.contains("Loop-1/body/MatMul-1,MatMul,5,"), "{out}");
}

/// Scan summing the rows of x[seq, 16] into a running total s[16].
fn scan_model(seq: i64) -> ModelProto {
    let body = GraphProto {
        node: vec![node("Add", &["s", "row"], &["s_next"])],
        input: vec![untyped("s"), untyped("row")],
        output: vec![untyped("s_next")],
        ..Default::default()
    };
    let n = with_int(
        with_graph(node("Scan", &["s0", "x"], &["s_final"]), "body", body),
        "num_scan_inputs",
        1,
    );
    model(GraphProto {
        node: vec![n],
        input: vec![float("s0", &[16]), float("x", &[seq, 16])],
        output: vec![untyped("s_final")],
        ..Default::default()
    })
}

#[test]
fn a_scan_body_runs_once_per_step() {
    let r = cost(&scan_model(10));
    // Ten steps of a 16-element addition; each reads 2 * 16 floats, writes 16.
    let add = layer(&r, "Scan-1/body/Add-1");
    assert_eq!(add.runs, 10);
    assert_eq!(add.flops, 10 * 16);
    assert_eq!(add.mread, 10 * 2 * 16 * 4);
    assert_eq!(add.mwrite, 10 * 16 * 4);
    assert_eq!(r.total.flops, 160);
    // A symbolic sequence length is bound with --dim like any other.
    let r = cost_with(&scan_model(-1), CountOptions::default(), &[("batch", 6)]);
    assert_eq!(r.total.flops, 6 * 16);
}

#[test]
fn every_operator_with_a_rule_has_its_doc_and_control_flow_is_covered() {
    let rules = RuleSet::builtin().unwrap();
    for op in ["If", "Loop", "Scan", "SequenceMap"] {
        let r = rules.get("", op).expect("a control-flow rule");
        assert_eq!(r.category, "Control flow");
        assert!(r.unsupported.is_none());
    }
    // Gradient's cost is the backward graph's: listed, with the reason.
    let g = rules.get("ai.onnx.preview.training", "Gradient").unwrap();
    assert!(g.unsupported.as_deref().unwrap().contains("backward pass"));
}

#[test]
fn sequences_of_differing_shapes_are_costed_by_what_goes_in() {
    // SequenceEmpty, insert x[2, 3] then y[1, 3], SequenceLength: the
    // sequence's elements differ in shape, which no rule needs to know.
    let mut empty = node("SequenceEmpty", &[], &["s0"]);
    empty.attribute.push(build::int("dtype", i64::from(FLOAT)));
    let m = model(GraphProto {
        node: vec![
            empty,
            node("SequenceInsert", &["s0", "x"], &["s1"]),
            node("SequenceInsert", &["s1", "y"], &["s2"]),
            node("SequenceLength", &["s2"], &["n"]),
        ],
        input: vec![float("x", &[2, 3]), float("y", &[1, 3])],
        output: vec![untyped("n")],
        ..Default::default()
    });
    let r = cost(&m);
    assert!(r.unsupported.is_empty(), "{:?}", r.unsupported);
    // Each inserted tensor is copied in: read and written once (6 and 3
    // floats); the length is one int64 written.
    assert_eq!(layer(&r, "SequenceInsert-1").mread, 6 * 4);
    assert_eq!(layer(&r, "SequenceInsert-2").mwrite, 3 * 4);
    assert_eq!(layer(&r, "SequenceLength-1").mwrite, 8);
    assert_eq!(r.total.mrw, 2 * (6 + 3) * 4 + 8);
}
