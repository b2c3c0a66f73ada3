//! Sizes known only at run time: how they are named, bound with --dim,
//! taken at their upper bounds, and reported when nothing binds them.

use c3::onnx::proto::{Dimension, TensorShapeProto, TensorTypeProto, TypeProto};
use c3::rules::CountOptions;

use crate::common::onnx::*;

/// y = Relu(x) with x declared as `dims` (`None` for an unnamed dimension,
/// `Some(-1)` for the -1 some exporters write, a name otherwise).
fn relu_of(dims: &[Dimension]) -> ModelProto {
    let x = build::value(
        "x",
        TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: Some(FLOAT),
                shape: Some(TensorShapeProto { dim: dims.to_vec() }),
            }),
            ..Default::default()
        },
    );
    model(GraphProto {
        node: vec![node("Relu", &["x"], &["y"])],
        input: vec![x],
        output: vec![untyped("y")],
        ..Default::default()
    })
}

fn value(v: i64) -> Dimension {
    Dimension {
        dim_value: Some(v),
        dim_param: None,
    }
}

fn param(p: &str) -> Dimension {
    Dimension {
        dim_value: None,
        dim_param: Some(p.into()),
    }
}

fn unnamed() -> Dimension {
    Dimension {
        dim_value: None,
        dim_param: None,
    }
}

#[test]
fn unnamed_input_dimensions_get_names_to_bind() {
    // -1 (paddle2onnx), "?" and no name at all each become `x_dimI`.
    let m = relu_of(&[value(-1), param("?"), unnamed(), value(8)]);
    let (code, _, err) = c3_on(&m, "unnamed", &["estimate"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "sizes unknown until bound: x_dim0, x_dim1, x_dim2; bind them with --dim x_dim0=N --dim x_dim1=N --dim x_dim2=N"
        ),
        "{err}"
    );
    let (code, out, err) = c3_on(
        &m,
        "unnamed",
        &[
            "estimate", "--format", "json", "--dim", "x_dim0=2", "--dim", "x_dim1=3", "--dim",
            "x_dim2=5",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Relu: one maximum per element, 2 * 3 * 5 * 8 of them.
    assert_eq!(json["total"]["flops"], 2 * 3 * 5 * 8);
}

#[test]
fn other_negative_dimensions_are_refused() {
    let m = relu_of(&[value(-2), value(8)]);
    let (code, _, err) = c3_on(&m, "negative", &["estimate"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("'x' declares a negative dimension -2"),
        "{err}"
    );
}

#[test]
fn the_error_names_the_inputs_sizes_not_what_follows_from_them() {
    // y = Relu(x); z = Concat(y, y): every size follows from batch.
    let mut m = relu_of(&[param("batch"), value(4)]);
    let g = m.graph.as_mut().unwrap();
    g.node
        .push(with_int(node("Concat", &["y", "y"], &["z"]), "axis", 0));
    g.output = vec![untyped("z")];
    let (code, _, err) = c3_on(&m, "roots", &["estimate"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("sizes unknown until bound: batch; bind them with --dim batch=N"),
        "{err}"
    );
}

/// y = If(c) { Relu(x[0:4]) } else { Relu(x) } over x[10]: the output has 4
/// or 10 elements; Neg(y) after it.
fn if_of_sizes() -> ModelProto {
    let slice_inits = [("s0", 0), ("s4", 4)].map(|(n, v)| {
        let mut t = scalar(n, INT64, v);
        t.dims = vec![1];
        t
    });
    let then_g = GraphProto {
        node: vec![
            node("Slice", &["x", "s0", "s4"], &["xs"]),
            node("Relu", &["xs"], &["t"]),
        ],
        output: vec![untyped("t")],
        ..Default::default()
    };
    let else_g = GraphProto {
        node: vec![node("Relu", &["x"], &["e"])],
        output: vec![untyped("e")],
        ..Default::default()
    };
    model(GraphProto {
        node: vec![
            with_graph(
                with_graph(node("If", &["c"], &["y"]), "then_branch", then_g),
                "else_branch",
                else_g,
            ),
            node("Neg", &["y"], &["z"]),
        ],
        initializer: slice_inits.to_vec(),
        input: vec![float("x", &[10]), typed("c", BOOL, &[])],
        output: vec![untyped("z")],
        ..Default::default()
    })
}

#[test]
fn a_size_that_depends_on_the_branch_is_at_most_the_larger() {
    let r = cost(&if_of_sizes());
    // The else branch (10 maxima) is the larger and is counted; Neg after
    // the If sees at most 10 elements.
    assert_eq!(layer(&r, "Neg-1").flops, 10);
    assert_eq!(r.assumed.len(), 1);
    assert_eq!(r.assumed[0].value, 10);
    assert_eq!(r.assumed[0].op, "If");
    assert_eq!(r.total.flops, 10 + 10);
}

/// A detection head's post-processing: NonMaxSuppression over 1,000 boxes
/// and 80 classes keeping at most `keep` per class, then a Gather of the
/// kept boxes by the selected indices.
fn nms_model(keep: Option<i64>) -> ModelProto {
    let mut inputs = vec!["boxes", "scores"];
    let mut initializer = vec![scalar("two", INT64, 2), weights("scale", &[4])];
    if let Some(k) = keep {
        inputs.push("keep");
        initializer.push(TensorProto {
            name: Some("keep".into()),
            dims: vec![1],
            data_type: Some(INT64),
            raw_data: Some(k.to_le_bytes().to_vec().into()),
            ..Default::default()
        });
    }
    let mut squeeze_axes = scalar("zero", INT64, 0);
    squeeze_axes.dims = vec![1];
    initializer.push(squeeze_axes);
    model(GraphProto {
        node: vec![
            node("NonMaxSuppression", &inputs, &["sel"]),
            with_int(node("Gather", &["sel", "two"], &["idx"]), "axis", 1),
            node("Squeeze", &["boxes", "zero"], &["b2"]),
            node("Gather", &["b2", "idx"], &["picked"]),
            node("Mul", &["picked", "scale"], &["out"]),
        ],
        initializer,
        input: vec![
            float("boxes", &[1, 1000, 4]),
            float("scores", &[1, 80, 1000]),
        ],
        output: vec![untyped("out")],
        ..Default::default()
    })
}

#[test]
fn data_dependent_sizes_take_their_upper_bound() {
    let r = cost(&nms_model(Some(50)));
    // At most batch * classes * min(keep, boxes) = 1 * 80 * 50 = 4,000
    // boxes are selected; the Mul scales 4,000 boxes of 4 coordinates.
    assert_eq!(r.assumed.len(), 1);
    assert_eq!(r.assumed[0].value, 4000);
    assert_eq!(r.assumed[0].op, "NonMaxSuppression");
    assert_eq!(layer(&r, "Mul-1").flops, 4000 * 4);
    // The selected indices: 4,000 int64 triples written.
    assert_eq!(layer(&r, "NonMaxSuppression-1").mwrite, 4000 * 3 * 8);
    // Without max_output_boxes_per_class nothing is selected (its default
    // is 0): the size is known, no bound is needed.
    let r = cost(&nms_model(None));
    assert!(r.assumed.is_empty());
    assert_eq!(layer(&r, "Mul-1").flops, 0);
    // --dim overrides the bound.
    let symbol = {
        let r = cost(&nms_model(Some(50)));
        r.assumed[0].symbol.clone()
    };
    let r = cost_with(
        &nms_model(Some(50)),
        CountOptions::default(),
        &[(&symbol, 10)],
    );
    assert!(r.assumed.is_empty());
    assert_eq!(layer(&r, "Mul-1").flops, 10 * 4);
    // The report says what it assumed.
    let (code, out, err) = c3_on(&nms_model(Some(50)), "nms", &["estimate", "--format", "md"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "taken at their upper bounds (--dim NAME=N sets them): nms_1 = 4000 (NonMaxSuppression)"
        ),
        "{out}"
    );
}

#[test]
fn an_input_size_that_only_a_subgraph_reads_must_be_bound_too() {
    // All the work is inside the If: y = If(c) { Relu(x) } else { Neg(x) },
    // x[batch, 4]. The If's own tensors know nothing of batch.
    let branch = |op: &str, out: &str| GraphProto {
        node: vec![node(op, &["x"], &[out])],
        output: vec![untyped(out)],
        ..Default::default()
    };
    let m = model(GraphProto {
        node: vec![with_graph(
            with_graph(
                node("If", &["c"], &["y"]),
                "then_branch",
                branch("Relu", "t"),
            ),
            "else_branch",
            branch("Neg", "e"),
        )],
        input: vec![float("x", &[-1, 4]), typed("c", BOOL, &[])],
        output: vec![typed("y", FLOAT, &[-1, 4])],
        ..Default::default()
    });
    let (code, _, err) = c3_on(&m, "only_in_body", &["estimate"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sizes unknown until bound: batch;"), "{err}");
    // Bound, both branches cost 3 * 4: Relu a maximum, Neg a negation each.
    let r = cost_with(&m, CountOptions::default(), &[("batch", 3)]);
    assert_eq!(r.total.flops, 12);
}

#[test]
fn sizes_made_up_after_an_unknown_op_name_that_op() {
    // Erfc is no ONNX operator (a converter's mistake): its output's shape
    // is unknown, so is the float product's after it, and Shape of that has
    // a made-up length that the Cast after it cannot be costed without. The
    // error names Erfc as the cause.
    let m = model(GraphProto {
        node: vec![
            node("Erfc", &["x"], &["y"]),
            node("Mul", &["y", "x"], &["z"]),
            node("Shape", &["z"], &["s"]),
            with_int(node("Cast", &["s"], &["c"]), "to", 1),
        ],
        input: vec![float("x", &[2, 3])],
        output: vec![untyped("c")],
        ..Default::default()
    });
    let (code, _, err) = c3_on(&m, "unknown_op", &["estimate"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("they follow from layers c3 could not analyse, first 'Erfc-1' (Erfc)"),
        "{err}"
    );
}

/// x `[batch, 256]` reshaped by a shape only known at run time (so c3
/// makes its sizes up), declared `[batch, 256]` in value_info, then a
/// 256 x 256 product and a Relu whose output is declared `[batch, 256]`.
fn declared_batch() -> ModelProto {
    model(GraphProto {
        node: vec![
            node("Reshape", &["x", "s"], &["r"]),
            node("MatMul", &["r", "w"], &["h"]),
            node("Relu", &["h"], &["y"]),
        ],
        input: vec![float("x", &[-1, 256]), typed("s", INT64, &[2])],
        output: vec![float("y", &[-1, 256])],
        value_info: vec![float("r", &[-1, 256])],
        initializer: vec![weights("w", &[256, 256])],
        ..Default::default()
    })
}

#[test]
fn an_input_shape_binds_the_symbols_it_replaces_everywhere() {
    // Issue 54: `--input x=2x256` said what `--dim batch=2` says, yet the
    // value_info's `batch` stayed unbound and the run failed.
    let m = declared_batch();
    let run = |args: &[&str], name: &str| {
        let mut all = vec!["estimate", "--format", "json"];
        all.extend(args);
        let (code, out, err) = c3_on(&m, name, &all);
        assert_eq!(code, 0, "{args:?}: {err}");
        let mut json: serde_json::Value = serde_json::from_str(&out).unwrap();
        json.as_object_mut().unwrap().remove("meta");
        json
    };
    let by_dim = run(&["--dim", "batch=2"], "by_dim");
    let by_input = run(&["--input", "x=2x256"], "by_input");
    assert_eq!(by_dim, by_input);
    // MatMul: 2 x 256 outputs, 256 multiply-adds each; Relu: one maximum
    // per element, 2 x 256; the Reshape moves nothing.
    assert_eq!(by_input["total"]["flops"], 2 * 256 * 256 + 2 * 256);
    // Unbound, the run asks for batch; bound twice over, it refuses the
    // contradiction in one line.
    let (code, _, err) = c3_on(&m, "unbound", &["estimate"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = c3_on(
        &m,
        "contradicted",
        &["estimate", "--input", "x=2x256", "--dim", "batch=3"],
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err.trim(),
        "error: --input x=2x256 makes batch = 2, but --dim batch makes it 3"
    );
}
