//! The command line's conventions (issue 13, items 10 to 14): `explain`
//! infers and checks shapes, `rules check` reports every error, shell
//! completions and a man page, `--version` everywhere, aliases of devices,
//! symbolic shapes as lists.

use crate::common::cli::{C3, Run};

fn c3(args: &[&str]) -> Run {
    C3::new().args(args).run()
}

#[test]
fn explain_infers_the_outputs_with_the_models_shape_inference() {
    // ResNet50's first convolution, no Y given: Y = 1x64x112x112 since
    // (224 + 3 + 3 - 7) / 2 + 1 = 112; flops = 64 * 112 * 112 outputs
    // times a 3 * 7 * 7 = 147 window = 118013952.
    let r = c3(&[
        "explain",
        "Conv",
        "--in",
        "X=1x3x224x224",
        "--in",
        "W=64x3x7x7",
        "--attr",
        "strides=2,2",
        "--attr",
        "pads=3,3,3,3",
    ]);
    r.ok();
    assert!(
        r.stdout.contains("  Y = 1x64x112x112 float32 (inferred)\n"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("  flops  = 118013952\n"), "{}", r.stdout);
    // 64 * 112 * 112 float32 outputs written: 802816 * 4 bytes.
    assert!(
        r.stdout.contains("  mwrite = 3211264 bytes\n"),
        "{}",
        r.stdout
    );
    // Gemm infers Y = 2x5 from A = 2x3 and B = 3x5: 2 * 5 * 3 = 30 MACs.
    let r = c3(&["explain", "Gemm", "--in", "A=2x3", "--in", "B=3x5"]);
    r.ok();
    assert!(r.stdout.contains("  mwrite = 40 bytes\n"), "{}", r.stdout);
    // MaxPool 2x2, stride 1, on 8x8: Y = 1x3x7x7 = 147 outputs, 3 compares
    // each = 441 flops; the optional Indices is not asked for, so only Y's
    // 147 * 4 bytes are written.
    let r = c3(&[
        "explain",
        "MaxPool",
        "--in",
        "X=1x3x8x8",
        "--attr",
        "kernel_shape=2,2",
    ]);
    r.ok();
    assert!(r.stdout.contains("  flops  = 441\n"), "{}", r.stdout);
    assert!(r.stdout.contains("  mwrite = 588 bytes\n"), "{}", r.stdout);
}

#[test]
fn explain_refuses_shapes_that_contradict_the_operator() {
    // A 3-d X with a 2-d kernel.
    let r = c3(&["explain", "Conv", "--in", "X=1x3x224", "--in", "W=64x3x7x7"]);
    let e = r.one_line_error(1);
    assert!(e.contains("Conv: the shapes given do not fit"), "{e}");
    // A given output that the inputs do not produce.
    let r = c3(&["explain", "Relu", "--in", "X=1x3", "--in", "Y=1x4"]);
    let e = r.one_line_error(1);
    assert!(e.contains("Relu gives Y the shape 1x3, not 1x4"), "{e}");
    // Gemm's inner dimensions differ.
    let r = c3(&["explain", "Gemm", "--in", "A=2x3", "--in", "B=4x5"]);
    let e = r.one_line_error(1);
    assert!(e.contains("3 does not match 4"), "{e}");
}

#[test]
fn explain_takes_a_domain_either_way_and_suggests_names() {
    for name in ["com.microsoft.Attention", "com.microsoft::Attention"] {
        let r = c3(&["explain", name]);
        r.ok();
        assert!(
            r.stdout.starts_with("com.microsoft::Attention — "),
            "{}",
            r.stdout
        );
    }
    for (typo, meant) in [
        ("Conx", "Conv"),
        ("matmull", "MatMul"),
        ("com.microsoft.Atention", "com.microsoft::Attention"),
        // A bare name against the operators of every domain.
        ("FusdGemm", "com.microsoft::FusedGemm"),
    ] {
        let r = c3(&["explain", typo]);
        let e = r.one_line_error(1);
        assert!(e.contains(&format!("did you mean '{meant}'?")), "{e}");
    }
    // Nothing near: no guess.
    let e = c3(&["explain", "xyzzy"]).one_line_error(1).to_string();
    assert!(!e.contains("did you mean"), "{e}");
}

/// A rule of the `Activation` category with the given formulas.
fn rule(op: &str, flops: &str, mread: &str) -> String {
    format!(
        "{op}:\n  summary: s\n  category: Activation\n  doc: d\n  inputs: \"X\"\n  outputs: \"Y\"\n  flops: \"{flops}\"\n  mread: \"{mread}\"\n  mwrite: 0\n"
    )
}

#[test]
fn rules_check_reports_every_error_of_a_pack() {
    let dir = crate::common::cli::scratch("conventions", "rules_check_all");
    // Two bad rules in one file, a third in another; a good rule between.
    std::fs::write(
        dir.join("a.yaml"),
        rule("Relu", "|Z|", "0") + &rule("Sigmoid", "|X|", "|Q|") + &rule("Tanh", "|X|", "|X|"),
    )
    .unwrap();
    std::fs::write(dir.join("b.yaml"), rule("Elu", "|X| +", "0")).unwrap();
    let r = C3::new().args(["rules", "check"]).arg(&dir).run();
    r.code(2);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{}", r.stderr);
    assert!(
        lines[0].ends_with("a.yaml:7:11: unknown tensor 'Z' in `|Z|`"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with("a.yaml:17:11: unknown tensor 'Q' in `|Q|`"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains("b.yaml:7:16: syntax error"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].ends_with(": 3 error(s) in this pack"),
        "{}",
        lines[3]
    );
}

#[test]
fn rules_check_takes_the_built_in_pack_names() {
    // chainer.yaml overrides ten built-in rules.
    let r = c3(&["rules", "check", "chainer"]);
    r.ok();
    assert!(
        r.stdout
            .starts_with("chainer: ok, 10 rule(s), 10 overriding rules in force: Conv (overrides "),
        "{}",
        r.stdout
    );
    for pack in ["naive", "fused", "sparse"] {
        c3(&["rules", "check", pack]).ok();
    }
    let e = c3(&["rules", "check", "no_such_pack"])
        .one_line_error(1)
        .to_string();
    assert!(
        e.contains("built-in packs: naive, fused, sparse, chainer"),
        "{e}"
    );
}

#[test]
fn completions_and_man_come_from_the_flag_definitions() {
    for (shell, marker) in [
        ("bash", "_c3()"),
        ("zsh", "#compdef c3"),
        ("fish", "complete -c c3"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let r = c3(&["completions", shell]);
        r.ok();
        assert!(r.stdout.contains(marker), "{shell}: {}", r.stdout);
        // Every subcommand and a flag of each are offered.
        for word in ["estimate", "explain", "devices", "no-fma", "attr"] {
            assert!(r.stdout.contains(word), "{shell} lacks {word}");
        }
    }
    let e = c3(&["completions", "tcsh"]);
    e.code(1);
    let r = c3(&["man"]);
    r.ok();
    assert!(r.stdout.contains(".TH c3 1"), "{}", r.stdout);
    assert!(r.stdout.contains("completions"), "{}", r.stdout);
}

#[test]
fn every_subcommand_has_version() {
    let want = format!("{}\n", env!("CARGO_PKG_VERSION"));
    for cmd in [
        &["--version"][..],
        &["estimate", "--version"],
        &["explain", "--version"],
        &["rules", "check", "--version"],
        &["devices", "--version"],
        &["man", "--version"],
    ] {
        let r = c3(cmd);
        r.ok();
        assert!(r.stdout.starts_with("c3"), "{cmd:?}: {}", r.stdout);
        assert!(r.stdout.ends_with(&want), "{cmd:?}: {}", r.stdout);
    }
}

#[test]
fn devices_show_their_aliases() {
    let r = c3(&["devices"]);
    r.ok();
    // rules/devices.yaml: a100-40gb is also a100, a100-40, a100-sxm4-40gb.
    let flat: String = r.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("v100-sxm2, v100sxm"), "{}", r.stdout);
    let j = c3(&["devices", "--format", "json"]).json();
    let a100 = j["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "a100-40gb")
        .unwrap();
    assert_eq!(
        a100["aliases"],
        serde_json::json!(["a100", "a100-40", "a100-sxm4-40gb"])
    );
}

#[test]
fn symbolic_shapes_read_as_lists() {
    // The GPT decoder's input is int64 [batch, seq].
    let r = c3(&["shapes", "examples/onnx/gpt_decoder_dynamo.onnx"]);
    r.ok();
    assert!(r.stdout.contains("[batch, seq]"), "{}", r.stdout);
    // Known sizes keep the compact form.
    assert!(r.stdout.contains("512x64"), "{}", r.stdout);
}

#[test]
fn input_errors_on_ir3_models_list_the_real_inputs() {
    use crate::common::onnx::{build, c3_on, float, node, weights};
    // IR 3 lists the initializer W among the graph's inputs.
    let g = build::GraphBuilder::new()
        .input(float("x", &[1, 4]))
        .input(float("W", &[4, 2]))
        .initializer(weights("W", &[4, 2]))
        .node(node("MatMul", &["x", "W"], &["y"]))
        .output(float("y", &[1, 2]))
        .build();
    let mut m = build::model(g, 17);
    m.ir_version = Some(3);
    let (code, _, err) = c3_on(&m, "ir3_inputs", &["estimate", "--input", "nope=1x4"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("--input nope: the model has no input of that name (inputs: x)"),
        "{err}"
    );
    // The initializer is no input to give a shape to either.
    let (code, _, err) = c3_on(&m, "ir3_inputs", &["estimate", "--input", "W=4x2"]);
    assert_eq!(code, 1, "{err}");
}

/// `into_estimate` drops each node's decoded record once it is inferred,
/// and each value's facts after its last reader (the command line's way,
/// to bound a large model's memory): the costs
/// must be the ones `estimate` finds on a model that keeps them: models
/// with Loop and If bodies, a dynamo export, a trace.
#[test]
fn estimating_while_dropping_the_decoded_nodes_changes_no_figure() {
    let root = env!("CARGO_MANIFEST_DIR");
    let bound = |list: &[(&str, i64)]| list.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    for (file, dims) in [
        (
            "examples/onnx/gpt_decoder_dynamo.onnx",
            bound(&[("batch", 2), ("seq", 16)]),
        ),
        ("examples/onnx/light_inception_v1.onnx", bound(&[])),
        ("tests/fixtures/exports/fasterrcnn.onnx", bound(&[])),
        ("tests/fixtures/exports/mvit.onnx", bound(&[])),
        ("tests/fixtures/exports/mixtral.onnx", bound(&[])),
        ("tests/fixtures/exports/ssdlite.onnx", bound(&[])),
        (
            "examples/onnx/gpt_decoder_torchscript.onnx",
            bound(&[("batch", 2), ("seq", 16)]),
        ),
        ("examples/resnet50.trace.json", bound(&[])),
    ] {
        let path = format!("{root}/{file}");
        let opts = c3::EstimateOptions {
            dims,
            ..c3::EstimateOptions::default()
        };
        let kept = c3::Model::open(&path).unwrap().estimate(&opts).unwrap();
        let dropped = c3::Model::open(&path)
            .unwrap()
            .into_estimate(&opts)
            .unwrap();
        // The nodes left encoded by the loader, each decoded in its turn.
        let encoded = c3::Model::estimate_file(&path, &opts).unwrap();
        assert!(kept.report.total.flops > 0, "{file}");
        assert_eq!(kept.to_json(), dropped.to_json(), "{file}");
        assert_eq!(kept.to_json(), encoded.to_json(), "{file}");
    }
}

/// Nodes left encoded until inference reaches them: a file whose nodes are
/// not in running order, one whose If node holds subgraphs (decoded whole
/// for ordering), and broken records, refused with the loader's words.
#[test]
fn nodes_left_encoded_are_costed_and_checked_as_decoded_ones() {
    use c3::onnx::build::{self, FLOAT, GraphBuilder, graph_attr, node, sized_value, untyped};
    let dir = crate::common::cli::scratch("conventions", "encoded");
    let branch = |op: &str, out: &str| {
        GraphBuilder::new()
            .node(node(op, &["y"], &[out]))
            .output(untyped(out))
            .build()
    };
    let mut cond = node("If", &["c"], &["z"]);
    cond.attribute = vec![
        graph_attr("then_branch", branch("Relu", "t")),
        graph_attr("else_branch", branch("Sigmoid", "e")),
    ];
    // Listed backwards: the If first, then what feeds it.
    let m = GraphBuilder::new()
        .input(sized_value("x", FLOAT, &[2, 8]))
        .input(sized_value("c", build::BOOL, &[]))
        .node(cond)
        .node(node("Relu", &["x"], &["y"]))
        .output(untyped("z"))
        .model(17);
    let (kept, encoded) = estimated_both_ways(&dir, "if.onnx", &m);
    // The Relu runs first though listed second; of the If's branches the
    // dearer is counted (Sigmoid, 4 FLOPs an element over 2x8 = 64).
    let ops: Vec<&str> = encoded
        .report
        .layers
        .iter()
        .map(|l| l.op.as_str())
        .collect();
    assert_eq!(ops, ["Relu", "If", "Sigmoid"]);
    assert_eq!(encoded.report.layers[2].flops, 64);
    assert_eq!(kept.to_json(), encoded.to_json());

    // A node with no op type, and a node name that is not UTF-8.
    let mut bare = m.clone();
    bare.graph.as_mut().unwrap().node[1].op_type = None;
    let err = refused_from_file(&dir, "bare.onnx", &build::encode(&bare));
    assert!(err.ends_with("has no op_type"), "{err}");
    let mut named = m.clone();
    named.graph.as_mut().unwrap().node[1].name = Some("NAME".into());
    let mut bytes = build::encode(&named);
    let at = bytes.windows(4).position(|w| w == b"NAME").unwrap();
    bytes[at] = 0xff;
    let err = refused_from_file(&dir, "utf8.onnx", &bytes);
    assert!(
        err.contains("utf8.onnx") && err.contains("not UTF-8"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
}

/// A graph large enough to be decoded ahead on a second thread (4,096
/// nodes and more) is costed as one decoded whole, and a broken record far
/// into it stops the walk with the loader's words, without a hang.
#[test]
fn nodes_decoded_ahead_are_costed_and_checked_as_decoded_ones() {
    use c3::onnx::build::{self, FLOAT, GraphBuilder, node, sized_value, untyped};
    let dir = crate::common::cli::scratch("conventions", "ahead");
    let n = 5000;
    let mut g = GraphBuilder::new().input(sized_value("v0", FLOAT, &[4, 8]));
    for i in 0..n {
        g = g.node(node("Relu", &[&format!("v{i}")], &[&format!("v{}", i + 1)]));
    }
    let m = g.output(untyped(&format!("v{n}"))).model(17);
    let (kept, ahead) = estimated_both_ways(&dir, "chain.onnx", &m);
    // 5,000 Relus over 4x8 = 32 elements, one FLOP each.
    assert_eq!(ahead.report.total.flops, 5000 * 32);
    assert_eq!(kept.to_json(), ahead.to_json());

    let mut bare = m.clone();
    bare.graph.as_mut().unwrap().node[4500].op_type = None;
    let err = refused_from_file(&dir, "bare.onnx", &build::encode(&bare));
    assert!(err.ends_with("has no op_type"), "{err}");
}

/// `m` written to `dir/name` and estimated twice: opened and decoded
/// whole, and through `Model::estimate_file` (node records left encoded).
fn estimated_both_ways(
    dir: &std::path::Path,
    name: &str,
    m: &c3::proto::ModelProto,
) -> (c3::Estimate, c3::Estimate) {
    let path = dir.join(name);
    std::fs::write(&path, c3::onnx::build::encode(m)).unwrap();
    let path = path.to_str().unwrap();
    let opts = c3::EstimateOptions::default();
    let kept = c3::Model::open(path).unwrap().estimate(&opts).unwrap();
    let encoded = c3::Model::estimate_file(path, &opts).unwrap();
    (kept, encoded)
}

/// The error `Model::estimate_file` gives for `bytes` written to
/// `dir/name`, as text; the file must be refused.
fn refused_from_file(dir: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let opts = c3::EstimateOptions::default();
    c3::Model::estimate_file(path.to_str().unwrap(), &opts)
        .err()
        .expect("refused")
        .to_string()
}

/// The cost graph built a node at a time as inference goes
/// (`infer_graph`) is the one built from the whole inference afterwards,
/// folded or not: Loop and If bodies (reading the main graph's values by
/// name), sequences, dynamo exports (model-local functions). Also with the
/// nodes taken out of the model, as an estimate takes them: the main
/// graph's values are then kept by slot, not by name, and let go after
/// their last reader.
#[test]
fn the_graph_built_during_inference_is_the_one_built_after_it() {
    use c3::onnx::infer::{InferOptions, Taken, infer, infer_graph, to_graph_with};
    let root = env!("CARGO_MANIFEST_DIR");
    for file in [
        "tests/fixtures/exports/fasterrcnn.onnx",
        "tests/fixtures/exports/mvit.onnx",
        "tests/fixtures/exports/ssdlite.onnx",
        "examples/onnx/gpt_decoder_dynamo.onnx",
        "examples/onnx/light_densenet121.onnx",
    ] {
        let model = c3::onnx::load(&format!("{root}/{file}")).unwrap();
        let opts = InferOptions {
            nodes_only: true,
            ..InferOptions::default()
        };
        for fold in [true, false] {
            let after = to_graph_with(infer(&model, &opts).unwrap(), fold);
            let during = infer_graph(&model, None, &opts, fold).unwrap();
            assert!(after.nodes.len() > 10, "{file}");
            assert_eq!(during, after, "{file} fold={fold}");
            let mut bare = c3::onnx::load(&format!("{root}/{file}")).unwrap();
            let nodes = std::mem::take(&mut bare.model.graph.as_mut().unwrap().node);
            let taken = infer_graph(&bare, Some(Taken::Nodes(nodes)), &opts, fold).unwrap();
            assert_eq!(taken, after, "{file} fold={fold}, nodes taken");
        }
    }
}

/// A graph of 4,096 nodes and more is recorded on a second thread while
/// inference goes on: its graph is still the one built from the whole
/// inference afterwards (folded nodes, a node folded for reading what a
/// folded node made, values read three nodes after they are made and let
/// go after their last reader), and a node's input made by another node is
/// that node's output, shared.
#[test]
fn a_large_graph_recorded_apart_is_the_one_built_after_inference() {
    use c3::onnx::build::{FLOAT, GraphBuilder, node, sized_value, untyped, zeros};
    use c3::onnx::infer::{InferOptions, Taken, infer, infer_graph, to_graph_with};
    let n = 6000;
    let mut g = GraphBuilder::new()
        .input(sized_value("v0", FLOAT, &[4, 8]))
        .initializer(zeros("w", &[4, 8]));
    for i in 0..n {
        let (x, y) = (format!("v{i}"), format!("v{}", i + 1));
        g = match i % 3 {
            // A Softmax of the weight folds away (its one input is
            // constant), and so does a Softmax of that: constant only as
            // what a folded node made (inference works out no values).
            0 => {
                let (c, d) = (format!("c{i}"), format!("d{i}"));
                g.node(node("Softmax", &["w"], &[&c]))
                    .node(node("Softmax", &[&c], &[&d]))
                    .node(node("Add", &[&x, &d], &[&y]))
            }
            1 if i > 3 => g.node(node("Mul", &[&x, &format!("v{}", i - 3)], &[&y])),
            _ => g.node(node("Relu", &[&x], &[&y])),
        };
    }
    let m = g.output(untyped(&format!("v{n}"))).model(17);
    let dir = crate::common::cli::scratch("conventions", "recorded_apart");
    let path = dir.join("chain.onnx");
    std::fs::write(&path, c3::onnx::build::encode(&m)).unwrap();
    let model = c3::onnx::load(path.to_str().unwrap()).unwrap();
    let opts = InferOptions {
        nodes_only: true,
        ..InferOptions::default()
    };
    for fold in [true, false] {
        let after = to_graph_with(infer(&model, &opts).unwrap(), fold);
        // The nodes taken out of the model, as an estimate does: each
        // value is then let go after its last reader.
        let mut bare = c3::onnx::load(path.to_str().unwrap()).unwrap();
        let nodes = std::mem::take(&mut bare.model.graph.as_mut().unwrap().node);
        let during = infer_graph(&bare, Some(Taken::Nodes(nodes)), &opts, fold).unwrap();
        // 10,000 nodes (2,000 of them Softmaxes of the weight, 2,000 of
        // those), of which those 4,000 fold away when folding.
        let folded = if fold { 4000 } else { 0 };
        assert_eq!(during.nodes.len(), 10000 - folded, "fold={fold}");
        assert_eq!(during.folded, folded);
        assert_eq!(during, after, "fold={fold}");
        let mut made = std::collections::HashMap::new();
        for t in during.nodes.iter().flat_map(|n| n.outputs.iter().flatten()) {
            made.insert(t.name.clone().unwrap(), t);
        }
        let mut shared = 0;
        for t in during.nodes.iter().flat_map(|n| n.inputs.iter().flatten()) {
            if let Some(p) = made.get(t.name.as_ref().unwrap()) {
                assert!(std::sync::Arc::ptr_eq(&t.shape, &p.shape), "{:?}", t.name);
                shared += 1;
            }
        }
        // Each of the 6,000 chain nodes reads the one before it but the
        // first, each Mul (i = 4, 7, ... 5998: 1,999) one more, and when
        // not folding each second Softmax reads the first and each Add the
        // second (2 x 2,000).
        assert_eq!(shared, 5999 + 1999 + if fold { 0 } else { 4000 });
    }
}

/// A layer's tensor lists are its node's, shared, not copies (a 111k-node
/// graph's layers held 20 MB of copies); the main level's layers follow
/// the nodes they cost, in order.
#[test]
fn layers_share_their_nodes_tensor_lists() {
    let path = format!(
        "{}/examples/onnx/light_densenet121.onnx",
        env!("CARGO_MANIFEST_DIR")
    );
    let e = c3::Model::open(&path)
        .unwrap()
        .into_estimate(&c3::EstimateOptions::default())
        .unwrap();
    let nodes = &e.graph.nodes;
    // DenseNet-121: the stem, two per dense layer (2 x (6 + 12 + 24 + 16)),
    // three transitions and the classifier as a 1x1 convolution: 121.
    assert_eq!(nodes.iter().filter(|n| n.op == "Conv").count(), 121);
    assert_eq!(e.report.layers.len(), nodes.len());
    for (l, n) in e.report.layers.iter().zip(nodes) {
        assert_eq!(l.name, n.name);
        assert!(std::sync::Arc::ptr_eq(&l.inputs, &n.inputs), "{}", l.name);
        assert!(std::sync::Arc::ptr_eq(&l.outputs, &n.outputs), "{}", l.name);
    }
    // A node's input made by another node is that node's output tensor:
    // the same name and dimensions, not copies.
    let mut made = std::collections::HashMap::new();
    for t in nodes.iter().flat_map(|n| n.outputs.iter().flatten()) {
        made.insert(t.name.clone().unwrap(), t);
    }
    let mut shared = 0;
    for t in nodes.iter().flat_map(|n| n.inputs.iter().flatten()) {
        if let Some(p) = made.get(t.name.as_ref().unwrap()) {
            assert!(std::sync::Arc::ptr_eq(&t.shape, &p.shape), "{:?}", t.name);
            assert!(std::sync::Arc::ptr_eq(
                t.name.as_ref().unwrap(),
                p.name.as_ref().unwrap()
            ));
            shared += 1;
        }
    }
    // Every layer but the first reads the activation another one made
    // (DenseNet's Concat reads several): at least one per other layer.
    assert!(shared >= nodes.len() - 1, "{shared} of {}", nodes.len());
}

#[test]
fn the_library_facade_gives_what_the_command_line_prints() {
    // What examples/estimate.rs does, checked against `c3 estimate`.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/onnx/light_resnet50.onnx"
    );
    let model = c3::Model::open(path).unwrap();
    let opts = c3::EstimateOptions {
        device: Some("a100".into()),
        ..c3::EstimateOptions::default()
    };
    let estimate = model.estimate(&opts).unwrap();
    let cli = c3(&["estimate", path, "--format", "json", "--device", "a100"]).json();
    let total = &estimate.report.total;
    assert_eq!(cli["total"]["flops"].as_u64(), Some(total.flops));
    assert_eq!(cli["total"]["mread"].as_u64(), Some(total.mread));
    assert_eq!(cli["total"]["mwrite"].as_u64(), Some(total.mwrite));
    let roofline = estimate.roofline.as_ref().unwrap();
    assert_eq!(roofline.device.key, "a100-40gb");
    // The sum of per-layer bounds lies between the larger of the two totals
    // and their sum (the additive estimate).
    assert!(roofline.bound_s >= roofline.compute_s.max(roofline.memory_s));
    assert!(roofline.bound_s <= roofline.additive_s);
    let text = estimate.render(&c3::ReportOptions {
        format: c3::report::Format::Md,
        parts: c3::report::Parts::Summary,
        ..c3::ReportOptions::default()
    });
    assert!(text.contains("| Conv | 53 |"), "{text}");
}
