//! Issue 53 item 3: copies keep their weights. A tensor with its data in a
//! side file may sit in the main graph, in an If, Loop or Scan body, in a
//! node's attribute (a Constant's value) or in a model-local function (its
//! default attributes too); wherever it sits, its file is vetted on reading
//! (inside the model's folder, no link out), and a copy (`annotate`,
//! `shapes -o`) in another folder, or onto that file, is refused with one
//! line, exit 1, nothing written. And `annotate` takes what `estimate` and
//! `shapes -o` take: unknown fields of every wire type, groups included,
//! kept byte for byte.

use super::*;

// ------------------------------------------------------------ builders

/// An If on `c` whose then-branch adds the initializer `wt` (4 floats,
/// `entries` its external data) to `x`; the else-branch is a Relu.
fn if_with_external_body(entries: &[(&str, &str)]) -> Vec<u8> {
    let then = GraphProto {
        node: vec![node("Add", &["x", "wt"], &["t"])],
        initializer: vec![external("wt", FLOAT, &[4], entries)],
        output: vec![untyped("t")],
        ..Default::default()
    };
    let other = GraphProto {
        node: vec![node("Relu", &["x"], &["e"])],
        output: vec![untyped("e")],
        ..Default::default()
    };
    let n = with_attr(node("If", &["c"], &["y"]), graph_attr("then_branch", then));
    let g = GraphProto {
        name: Some("main".into()),
        node: vec![with_attr(n, graph_attr("else_branch", other))],
        input: vec![sized_value("c", BOOL, &[]), sized_value("x", FLOAT, &[4])],
        output: vec![untyped("y")],
        ..Default::default()
    };
    model(g).encode_to_vec()
}

/// A Loop (3 trips) whose body adds the initializer `wb` (4 floats in
/// `location`) to its carried value.
fn loop_with_external_body(location: &str) -> Vec<u8> {
    let body = GraphProto {
        node: vec![
            node("Identity", &["cond"], &["cond_out"]),
            node("Add", &["v", "wb"], &["v_out"]),
        ],
        initializer: vec![external("wb", FLOAT, &[4], &[("location", location)])],
        input: vec![
            sized_value("i", INT64, &[]),
            sized_value("cond", BOOL, &[]),
            sized_value("v", FLOAT, &[4]),
        ],
        output: vec![untyped("cond_out"), untyped("v_out")],
        ..Default::default()
    };
    let mut g = relu_graph();
    g.input = vec![sized_value("x", FLOAT, &[4])];
    g.initializer.push(build::scalar("trips", INT64, 3));
    g.node = vec![with_attr(
        node("Loop", &["trips", "", "x"], &["y"]),
        graph_attr("body", body),
    )];
    model(g).encode_to_vec()
}

/// The main graph calls `local.AddK`, whose body adds a Constant to its
/// input: the Constant's value (4 floats in `location`) is its own or,
/// with `default`, the function's default for the attribute `value`.
fn function_with_external_constant(location: &str, default: bool) -> Vec<u8> {
    let value = external("k", FLOAT, &[4], &[("location", location)]);
    let mut constant = node("Constant", &[], &["k"]);
    let mut f = FunctionProto {
        name: Some("AddK".into()),
        domain: Some("local".into()),
        input: vec!["a".into()],
        output: vec!["b".into()],
        opset_import: vec![opset("", 17)],
        ..Default::default()
    };
    if default {
        // The body's Constant takes the call's `value`, this one when the
        // call has none.
        constant.attribute.push(AttributeProto {
            name: Some("value".into()),
            ref_attr_name: Some("value".into()),
            r#type: Some(attr_type::TENSOR),
            ..Default::default()
        });
        f.attribute_proto.push(tensor_attr("value", value));
    } else {
        constant.attribute.push(tensor_attr("value", value));
    }
    f.node = vec![constant, node("Add", &["a", "k"], &["b"])];
    let mut g = relu_graph();
    g.input = vec![sized_value("x", FLOAT, &[4])];
    g.node = vec![NodeProto {
        domain: Some("local".into()),
        ..node("AddK", &["x"], &["y"])
    }];
    let mut m = model(g);
    m.opset_import.push(opset("local", 1));
    m.functions.push(f);
    m.encode_to_vec()
}

/// A main-graph Constant whose value (4 floats) is in `w.bin`, added to
/// `x`: its node record is left encoded as an estimate reads it.
fn constant_with_external_value() -> Vec<u8> {
    let value = external("k", FLOAT, &[4], &[("location", "w.bin")]);
    let mut g = relu_graph();
    g.input = vec![sized_value("x", FLOAT, &[4])];
    g.node = vec![
        with_attr(node("Constant", &[], &["k"]), tensor_attr("value", value)),
        node("Add", &["x", "k"], &["y"]),
    ];
    model(g).encode_to_vec()
}

// ------------------------------- main-graph initializers (the first round)

/// A model whose initializer `w` (4 floats) is in `w.bin` beside it.
fn with_external_weights(c: &Case) -> (String, Vec<u8>) {
    let data = vec![0u8; 16];
    c.file("w.bin", &data);
    let t = external("w", FLOAT, &[4], &[("location", "w.bin")]);
    (c.file("m.onnx", &with_initializer(t)), data)
}

/// A copy in another folder would name `w.bin` from there: refused, one
/// line, exit 1; in the model's own folder it is written. The refusal
/// runs last, for scripts/hostile.sh to replay.
#[test]
fn a_copy_in_another_folder_is_refused_where_weights_are_external() {
    let c = case("output_external_copy_elsewhere");
    let (model, _) = with_external_weights(&c);
    for cmd in ["annotate", "shapes"] {
        copy_elsewhere_is_refused(&c, &model, cmd, "w.bin");
    }
}

/// `-o` onto the model's own external data file is refused, --force or not.
#[test]
fn a_copy_onto_the_models_external_data_is_refused_even_forced() {
    let c = case("output_onto_external_data");
    let (model, data) = with_external_weights(&c);
    let bin = c.path("w.bin");
    let bin = bin.to_str().unwrap();
    for cmd in ["annotate", "shapes"] {
        c.fails(
            &[cmd, &model, "-o", bin, "--force"],
            1,
            &["external data file w.bin"],
        );
        assert_eq!(std::fs::read(bin).unwrap(), data, "{cmd}");
    }
}

/// A repeated `location`: ONNX reads the last one, and so is it vetted.
#[test]
fn a_repeated_location_is_vetted_as_onnx_reads_it() {
    let c = case("output_external_location_twice");
    c.file("w.bin", &[0u8; 16]);
    let t = external(
        "w",
        FLOAT,
        &[4],
        &[("location", "w.bin"), ("location", "../w.bin")],
    );
    let f = c.file("m.onnx", &with_initializer(t));
    c.rejects(&f, &["'../w.bin' leaves the model's folder"]);
}

// ----------------------------------------- reading: every tensor is vetted

#[test]
fn an_if_body_initializer_that_leaves_the_folder_is_refused() {
    let c = case("onnx_external_if_body_dotdot");
    let f = c.file(
        "m.onnx",
        &if_with_external_body(&[("location", "../w.bin")]),
    );
    c.rejects(
        &f,
        &[
            "node 'If_y'",
            "initializer 'wt'",
            "'../w.bin' leaves the model's folder",
        ],
    );
}

/// Refused by `annotate` too (it reads the model as `estimate` does), and
/// nothing is written.
#[cfg(unix)]
#[test]
fn a_loop_body_initializer_through_a_link_out_is_refused() {
    let c = case("onnx_external_loop_body_symlink");
    std::os::unix::fs::symlink("/etc/passwd", c.path("link.bin")).unwrap();
    let f = c.file("m.onnx", &loop_with_external_body("link.bin"));
    let out = c.path("a.onnx");
    c.fails(
        &["annotate", &f, "-o", out.to_str().unwrap()],
        2,
        &[
            "node 'Loop_y'",
            "initializer 'wb'",
            "'link.bin' resolves outside the model's folder",
        ],
    );
    assert!(!out.exists());
}

/// Refused by `shapes -o` too, nothing written.
#[test]
fn a_function_constant_at_an_absolute_path_is_refused() {
    let c = case("onnx_external_function_constant_absolute");
    let f = c.file(
        "m.onnx",
        &function_with_external_constant("/etc/passwd", false),
    );
    let out = c.path("s.onnx");
    c.fails(
        &["shapes", &f, "-o", out.to_str().unwrap()],
        2,
        &[
            "function 'AddK'",
            "attribute 'value'",
            "'/etc/passwd' leaves the model's folder",
        ],
    );
    assert!(!out.exists());
}

/// A function's default attribute is vetted as its body's own tensors.
#[cfg(unix)]
#[test]
fn a_function_default_through_a_link_out_is_refused() {
    let c = case("onnx_external_function_default_symlink");
    std::os::unix::fs::symlink("/etc/passwd", c.path("link.bin")).unwrap();
    let f = c.file("m.onnx", &function_with_external_constant("link.bin", true));
    c.rejects(
        &f,
        &[
            "function 'AddK'",
            "attribute 'value'",
            "'link.bin' resolves outside the model's folder",
        ],
    );
}

// ------------------------------------ copying: every tensor's file is kept

/// `model`'s copy in `other/` is refused (one line, exit 1, not written);
/// beside the model it is written and still names the data. The refusal
/// runs last: scripts/hostile.sh replays it.
fn copy_elsewhere_is_refused(c: &Case, model: &str, cmd: &str, data: &str) {
    std::fs::create_dir_all(c.path("other")).unwrap();
    let beside = c.path("beside.onnx");
    let o = c.run(&[cmd, model, "-o", beside.to_str().unwrap()], 0);
    assert_eq!(o.code, 0, "{}: {}", c.name, o.stderr);
    let copy = std::fs::read(&beside).unwrap();
    let named = data.as_bytes();
    assert!(copy.windows(named.len()).any(|w| w == named), "{}", c.name);
    let elsewhere = c.path("other/a.onnx");
    c.fails(
        &[cmd, model, "-o", elsewhere.to_str().unwrap()],
        1,
        &[
            &format!("keeps weights in {data}"),
            "write the copy in that folder",
            "copy the model and its data files",
        ],
    );
    assert!(!elsewhere.exists(), "{}", c.name);
}

#[test]
fn annotate_elsewhere_is_refused_where_an_if_body_keeps_external_weights() {
    let c = case("output_external_if_body_copy_elsewhere");
    c.file("wt.bin", &[0; 16]);
    let f = c.file("m.onnx", &if_with_external_body(&[("location", "wt.bin")]));
    copy_elsewhere_is_refused(&c, &f, "annotate", "wt.bin");
}

#[test]
fn shapes_elsewhere_is_refused_where_a_function_keeps_external_weights() {
    let c = case("output_external_function_copy_elsewhere");
    c.file("w.bin", &[0; 16]);
    let f = c.file("m.onnx", &function_with_external_constant("w.bin", false));
    copy_elsewhere_is_refused(&c, &f, "shapes", "w.bin");
}

/// The main graph's nodes are read one by one for `shapes -o` (their
/// records left encoded): a Constant's file is found in its record.
#[test]
fn shapes_elsewhere_is_refused_where_a_main_graph_constant_is_external() {
    let c = case("output_external_constant_copy_elsewhere");
    c.file("w.bin", &[0; 16]);
    let f = c.file("m.onnx", &constant_with_external_value());
    copy_elsewhere_is_refused(&c, &f, "shapes", "w.bin");
}

/// `-o` onto a file the model reads weights from, `--force` or not:
/// refused, exit 1, the file kept.
fn copy_onto_data_is_refused(c: &Case, model: &str, cmd: &str, data: &str) {
    let bin = c.path(data);
    let before = std::fs::read(&bin).unwrap();
    c.fails(
        &[cmd, model, "-o", bin.to_str().unwrap(), "--force"],
        1,
        &[&format!("external data file {data}")],
    );
    assert_eq!(std::fs::read(&bin).unwrap(), before, "{}", c.name);
}

#[test]
fn annotate_onto_an_if_bodys_external_data_is_refused() {
    let c = case("output_onto_if_body_external_data");
    c.file("wt.bin", &[7; 16]);
    // The first location is not the one ONNX reads: the last is.
    let entries = [("location", "decoy.bin"), ("location", "wt.bin")];
    let f = c.file("m.onnx", &if_with_external_body(&entries));
    copy_onto_data_is_refused(&c, &f, "annotate", "wt.bin");
}

#[test]
fn shapes_onto_a_function_defaults_external_data_is_refused() {
    let c = case("output_onto_function_default_external_data");
    c.file("w.bin", &[7; 16]);
    let f = c.file("m.onnx", &function_with_external_constant("w.bin", true));
    copy_onto_data_is_refused(&c, &f, "shapes", "w.bin");
}

/// A data file the model names but lacks (legal until a value is read)
/// would be the copy itself: refused, and not made.
#[test]
fn annotate_onto_a_missing_external_data_file_is_refused() {
    let c = case("output_onto_missing_external_data");
    let f = c.file("m.onnx", &loop_with_external_body("gone.bin"));
    let gone = c.path("gone.bin");
    c.fails(
        &["annotate", &f, "-o", gone.to_str().unwrap()],
        1,
        &["external data file gone.bin"],
    );
    assert!(!gone.exists());
}

// ------------------------------------------ annotate: unknown groups kept

/// A protobuf group of field `field` (wire types 3 and 4) around `inner`:
/// legal protobuf that ONNX's schema never uses, so an unknown field that
/// protobuf (and so `onnx.load`) keeps.
fn group(field: u32, inner: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_varint(u64::from(field << 3 | 3), &mut out);
    out.extend_from_slice(inner);
    prost::encoding::encode_varint(u64::from(field << 3 | 4), &mut out);
    out
}

/// A group holding a varint, a string, a fixed 32-bit and a fixed 64-bit
/// number and a group of its own; `tag` makes each one's bytes its own.
fn unknown_group(tag: u8) -> Vec<u8> {
    let mut inner = vec![0x08, tag]; // 1: varint
    inner.extend_from_slice(&ld(2, &[b'g', tag])); // 2: string
    inner.extend([0x1d, tag, 0, 0, 0]); // 3: fixed32
    inner.extend([0x21, tag, 0, 0, 0, 0, 0, 0, 0]); // 4: fixed64
    inner.extend(group(5, &[0x08, tag])); // 5: a group
    group(1000 + u32::from(tag), &inner)
}

/// A message's bytes with `extra` appended: protobuf merges the fields of
/// one message however they are ordered.
fn plus(msg: impl Message, extra: &[u8]) -> Vec<u8> {
    concat(&[&msg.encode_to_vec(), extra])
}

/// How often `needle` occurs in `hay`.
fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// Groups in the model, the main graph, a node, an initializer, an
/// attribute and a node of an If body (a node annotate rewrites).
#[test]
fn annotate_keeps_unknown_groups_everywhere_byte_for_byte() {
    let c = case("annotate_unknown_groups");
    let groups: Vec<Vec<u8>> = (1..=6).map(unknown_group).collect();
    let body_node = plus(node("Relu", &["x"], &["t"]), &groups[5]);
    let then = concat(&[
        &ld(1, &body_node),
        &GraphProto {
            output: vec![untyped("t")],
            ..Default::default()
        }
        .encode_to_vec(),
    ]);
    let then_attr = concat(&[
        &AttributeProto {
            name: Some("then_branch".into()),
            r#type: Some(attr_type::GRAPH),
            ..Default::default()
        }
        .encode_to_vec(),
        &ld(6, &then),
        &groups[4],
    ]);
    let other = graph_attr(
        "else_branch",
        GraphProto {
            node: vec![node("Relu", &["x"], &["e"])],
            output: vec![untyped("e")],
            ..Default::default()
        },
    );
    let if_node = concat(&[
        &plus(
            with_attr(node("If", &["c"], &["i"]), other),
            &ld(5, &then_attr),
        ),
        &groups[2],
    ]);
    let mut g = relu_graph();
    g.input = vec![
        sized_value("c", BOOL, &[]),
        sized_value("x", FLOAT, &[1, 8]),
    ];
    g.node = vec![node("Relu", &["i"], &["y"])];
    let graph = concat(&[
        &ld(1, &if_node),
        &g.encode_to_vec(),
        &ld(
            5,
            &plus(float_tensor("w", &[2], Some(vec![0; 8])), &groups[3]),
        ),
        &groups[1],
    ]);
    let mut m = model(GraphProto::default());
    m.graph = None;
    let bytes = concat(&[&m.encode_to_vec(), &ld(7, &graph), &groups[0]]);
    let f = c.file("m.onnx", &bytes);
    let out = c.path("a.onnx");
    let o = c.run(&["annotate", &f, "-o", out.to_str().unwrap()], 0);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let copy = std::fs::read(&out).unwrap();
    for (i, g) in groups.iter().enumerate() {
        assert_eq!(count(&copy, g), 1, "group {i}");
    }
    // The If, the Relu of its branch counted (the then-branch, where the
    // group is) and the main Relu get costs, the model its totals: four
    // entries. The copy reads back, and annotated again keeps each group
    // once and its entries replaced.
    assert_eq!(count(&copy, b"c3.flops"), 4);
    let again = c.path("b.onnx");
    let o = c.run(
        &[
            "annotate",
            out.to_str().unwrap(),
            "-o",
            again.to_str().unwrap(),
        ],
        0,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let twice = std::fs::read(&again).unwrap();
    for g in &groups {
        assert_eq!(count(&twice, g), 1);
    }
    assert_eq!(count(&twice, b"c3.flops"), 4);
}

/// Groups nested 40 deep in a node (far below the decoder's limit of
/// 100 levels), and one after the node's other fields: kept.
#[test]
fn annotate_keeps_groups_nested_40_deep() {
    let c = case("annotate_groups_nested");
    let mut nested = vec![0x08, 0x01];
    for level in 0..40 {
        nested = group(2000 + level, &nested);
    }
    let mut g = relu_graph();
    let relu = g.node.remove(0);
    let graph = concat(&[&ld(1, &plus(relu, &nested)), &g.encode_to_vec()]);
    let mut m = model(GraphProto::default());
    m.graph = None;
    let f = c.file("m.onnx", &concat(&[&m.encode_to_vec(), &ld(7, &graph)]));
    let out = c.path("a.onnx");
    let o = c.run(&["annotate", &f, "-o", out.to_str().unwrap()], 0);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let copy = std::fs::read(&out).unwrap();
    assert_eq!(count(&copy, &nested), 1);
    assert_eq!(count(&copy, b"c3.flops"), 2);
}

/// Malformed groups are refused as `estimate` refuses them: one line,
/// exit 2, nothing written.
fn annotate_refuses(name: &'static str, bad: &[u8]) {
    let c = case(name);
    let mut g = relu_graph();
    let relu = g.node.remove(0);
    let graph = concat(&[&ld(1, &plus(relu, bad)), &g.encode_to_vec()]);
    let mut m = model(GraphProto::default());
    m.graph = None;
    let f = c.file("m.onnx", &concat(&[&m.encode_to_vec(), &ld(7, &graph)]));
    let out = c.path("a.onnx");
    c.fails(
        &["annotate", &f, "-o", out.to_str().unwrap()],
        2,
        &[&f, "not a valid ONNX model"],
    );
    assert!(!out.exists());
}

#[test]
fn annotate_refuses_a_group_end_without_its_start() {
    // Field 1000's end, alone.
    annotate_refuses("annotate_group_end_alone", &[0xc4, 0x3e]);
}

#[test]
fn annotate_refuses_a_group_closed_by_another() {
    // Field 1000 opened, field 1001 closed.
    annotate_refuses(
        "annotate_group_closed_by_another",
        &[0xc3, 0x3e, 0xcc, 0x3e],
    );
}
