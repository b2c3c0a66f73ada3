//! Issue 12, items 5-7: everything in a model is bounded (not only nodes),
//! attributes of the wrong type are errors, names are text. Each case is
//! judged like the rest of `hostile::` (one `error:` line, exit 2) and
//! replayed by scripts/hostile.sh.

use super::*;
use c3::onnx::build::{floats, string};
use c3::onnx::proto::SparseTensorProto;

/// The Relu model followed by more fields of its graph (protobuf merges a
/// repeated message field: the decoder sees one graph).
fn relu_plus(graph_fields: &[u8]) -> Vec<u8> {
    concat(&[&relu_model(), &ld(7, graph_fields)])
}

/// `n` copies of an empty length-delimited field `field`.
fn empties(field: u32, n: usize) -> Vec<u8> {
    ld(field, &[]).repeat(n)
}

// ---------------------------------------- item 5: everything is bounded

#[test]
fn more_initializers_than_the_limit() {
    let c = case("onnx_initializer_count");
    let f = c.file("m.onnx", &relu_plus(&empties(5, c3::ir::MAX_TENSORS + 1)));
    c.rejects(
        &f,
        &["1000001 tensors", "limit of 1000000 tensors (MAX_TENSORS)"],
    );
}

#[test]
fn many_empty_records_under_every_count() {
    // 999,000 empty initializers: under MAX_TENSORS, 2 bytes each on disk
    // but a few hundred once decoded. Refused by the decoding budget
    // (64 MiB + 32 bytes per byte of the file) before any is decoded.
    let c = case("onnx_decode_budget");
    let f = c.file("m.onnx", &relu_plus(&empties(5, 999_000)));
    c.rejects(
        &f,
        &[
            "decoding the model's 999013 records",
            "DECODE_BASE_BYTES, DECODE_BYTES_PER_BYTE)",
        ],
    );
}

#[test]
fn more_value_infos_than_the_limit() {
    let c = case("onnx_value_info_count");
    let f = c.file(
        "m.onnx",
        &relu_plus(&empties(13, c3::ir::MAX_VALUE_INFOS + 1)),
    );
    c.rejects(
        &f,
        &[
            "1000003 graph inputs, outputs and value_info entries",
            "limit of 1000000 entries (MAX_VALUE_INFOS)",
        ],
    );
}

#[test]
fn more_string_elements_than_the_limit() {
    // One string tensor of 1,000,001 empty strings: 2 bytes each on disk,
    // 32 once decoded; refused before.
    let c = case("onnx_string_elements");
    let tensor = empties(6, c3::ir::MAX_STRING_ELEMENTS + 1);
    let f = c.file("m.onnx", &relu_plus(&ld(5, &tensor)));
    c.rejects(
        &f,
        &["1000001 string tensor elements", "(MAX_STRING_ELEMENTS)"],
    );
}

#[test]
fn node_with_more_names_than_the_limit() {
    let c = case("onnx_node_io_count");
    let mut g = relu_graph();
    g.node[0].input = vec![String::new(); c3::ir::MAX_NODE_IO + 1];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(
        &f,
        &[
            "node 'Relu_y' (Relu) has 1000002 input and output names",
            "(MAX_NODE_IO)",
        ],
    );
}

#[test]
fn node_with_more_attributes_than_the_limit() {
    let c = case("onnx_attribute_count");
    let mut g = relu_graph();
    g.node[0].attribute = (0..=c3::ir::MAX_NODE_ATTRIBUTES)
        .map(|i| build::int(&format!("a{i}"), 1))
        .collect();
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(
        &f,
        &[
            "node 'Relu_y' (Relu) has 1025 attributes",
            "(MAX_NODE_ATTRIBUTES)",
        ],
    );
}

#[test]
fn attribute_with_more_values_than_the_limit() {
    let c = case("onnx_attribute_values");
    let mut g = relu_graph();
    g.node[0].attribute = vec![build::ints(
        "big",
        &vec![0; c3::ir::MAX_ATTRIBUTE_VALUES + 1],
    )];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(
        &f,
        &[
            "attribute 'big' has 1000001 values",
            "(MAX_ATTRIBUTE_VALUES)",
        ],
    );
}

/// Relu of a Constant whose `sparse_value` is `sp`.
fn sparse_constant(sp: SparseTensorProto) -> Vec<u8> {
    let mut g = relu_graph();
    g.input.clear();
    let mut k = node("Constant", &[], &["x"]);
    k.attribute.push(AttributeProto {
        name: Some("sparse_value".into()),
        r#type: Some(attr_type::SPARSE_TENSOR),
        sparse_tensor: Some(Box::new(sp)),
        ..Default::default()
    });
    g.node.insert(0, k);
    model(g).encode_to_vec()
}

#[test]
fn sparse_constant_index_outside_its_shape() {
    // Two values at linear indices 3 and 9 of a [2, 4] tensor (8 elements).
    let c = case("onnx_sparse_index");
    let f = c.file(
        "m.onnx",
        &sparse_constant(SparseTensorProto {
            values: Some(float_tensor("v", &[2], Some(vec![0; 8]))),
            indices: Some(build::int64s("i", &[2], &[3, 9])),
            dims: vec![2, 4],
        }),
    );
    c.rejects(
        &f,
        &[
            "node 'Constant_x'",
            "attribute 'sparse_value'",
            "index 9 is outside the shape [2, 4]",
        ],
    );
}

#[test]
fn sparse_initializer_of_rank_65() {
    let c = case("onnx_sparse_rank_65");
    let mut g = relu_graph();
    g.sparse_initializer.push(SparseTensorProto {
        values: Some(float_tensor("w", &[0], Some(vec![]))),
        indices: None,
        dims: vec![1; 65],
    });
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(
        &f,
        &[
            "sparse initializer 1 'w'",
            "rank 65, which exceeds the limit of 64 (MAX_RANK)",
        ],
    );
}

#[test]
fn sparse_values_that_are_not_a_list() {
    let c = case("onnx_sparse_values_2d");
    let f = c.file(
        "m.onnx",
        &sparse_constant(SparseTensorProto {
            values: Some(float_tensor("v", &[1, 2], Some(vec![0; 8]))),
            indices: Some(build::int64s("i", &[2], &[0, 1])),
            dims: vec![8],
        }),
    );
    c.rejects(
        &f,
        &["sparse tensor values must be 1-D, not of shape [1, 2]"],
    );
}

#[test]
fn trace_with_more_layers_than_the_limit() {
    // Counted before any layer is built: 11 MB of `{"op":"R"}`.
    let c = case("trace_layer_count");
    let mut t = String::from("{\"layers\": [");
    t.push_str(&"{\"op\":\"R\"},".repeat(c3::onnx::MAX_NODES));
    t.push_str("{\"op\":\"R\"}]}");
    let f = c.file("t.json", t.as_bytes());
    c.rejects(&f, &["more than 1000000 layers (MAX_NODES)"]);
}

#[test]
fn trace_attribute_list_longer_than_the_limit() {
    let c = case("trace_attribute_values");
    let list = vec!["0"; c3::ir::MAX_ATTRIBUTE_VALUES + 1].join(",");
    let t = format!(r#"{{"layers": [{{"op": "Relu", "attrs": {{"a": [{list}]}}}}]}}"#);
    let f = c.file("t.json", t.as_bytes());
    c.rejects(&f, &["(MAX_ATTRIBUTE_VALUES)"]);
}

#[test]
fn input_flag_of_rank_65() {
    let c = case("flag_input_rank_65");
    let f = c.file("m.onnx", &relu_model());
    let shape = format!("x={}", vec!["1"; 65].join("x"));
    c.fails(
        &["estimate", &f, "--input", &shape],
        1,
        &[
            "--input",
            "rank 65, which exceeds the limit of 64 (MAX_RANK)",
        ],
    );
    let o = c.run(&["estimate", &f, "--input", &shape], 1);
    assert_ne!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("rank 65, which exceeds the limit of 64 (MAX_RANK)"),
        "{}",
        o.stderr
    );
}

// ------------------------------- item 6: attributes of the wrong type

/// x[1, 8] -> `op` (with attribute `a`) -> y.
fn one_attr_model(op: &str, a: AttributeProto) -> Vec<u8> {
    let mut g = relu_graph();
    g.node = vec![with_attr(node(op, &["x"], &["y"]), a)];
    model(g).encode_to_vec()
}

#[test]
fn string_where_ints_are_expected() {
    let c = case("onnx_attr_string_for_ints");
    let f = c.file(
        "m.onnx",
        &one_attr_model("Transpose", string("perm", "1,0")),
    );
    c.rejects(
        &f,
        &[
            "node 'Transpose_y' (Transpose)",
            "attribute 'perm' is a string, but Transpose takes ints there",
        ],
    );
}

#[test]
fn floats_where_ints_are_expected() {
    let c = case("onnx_attr_floats_for_ints");
    let f = c.file(
        "m.onnx",
        &one_attr_model("Transpose", floats("perm", &[1.0, 0.0])),
    );
    c.rejects(
        &f,
        &[
            "node 'Transpose_y'",
            "attribute 'perm' is floats, but Transpose takes ints there",
        ],
    );
}

#[test]
fn graph_where_an_int_is_expected() {
    let c = case("onnx_attr_graph_for_int");
    let f = c.file(
        "m.onnx",
        &one_attr_model("Flatten", graph_attr("axis", relu_graph())),
    );
    c.rejects(
        &f,
        &[
            "node 'Flatten_y'",
            "attribute 'axis' is a graph, but Flatten takes an int there",
        ],
    );
}

#[test]
fn trace_attribute_of_the_wrong_kind() {
    // The rule for Flatten takes a number for axis (its default is 1).
    let c = case("trace_attr_string_for_int");
    let t = r#"{"layers": [{"op": "Flatten", "name": "f", "attrs": {"axis": "one"},
        "inputs": [{"shape": [2, 3]}], "outputs": [{"shape": [2, 3]}]}]}"#;
    let f = c.file("t.json", t.as_bytes());
    c.rejects_layer(
        &f,
        &["attribute 'axis' is a string, but the rule for Flatten takes a number"],
    );
}

#[test]
fn trace_opset_that_does_not_exist() {
    let c = case("trace_opset_0");
    let f = c.file("t.json", br#"{"opset": 0, "layers": [{"op": "Relu"}]}"#);
    c.rejects(&f, &["opset 0 does not exist (versions start at 1)"]);
    let c = case("trace_layer_opset_negative");
    let f = c.file("t.json", br#"{"layers": [{"op": "Relu", "opset": -3}]}"#);
    c.rejects(&f, &["layer 1 (Relu): opset -3 does not exist"]);
}

#[test]
fn implausible_devices_are_refused() {
    for (name, peak, bw, says) in [
        ("pack_device_peak_inf", ".inf", "1.0e9", "not inf"),
        (
            "pack_device_bandwidth_huge",
            "1.0e12",
            "1.0e300",
            "(MIN_BANDWIDTH, MAX_BANDWIDTH)",
        ),
    ] {
        let c = case(name);
        let pack = c.path("pack");
        std::fs::create_dir_all(&pack).unwrap();
        std::fs::write(
            pack.join("devices.yaml"),
            format!(
                "evil:\n  name: Evil\n  peak: {{fp32: {peak}}}\n  bandwidth: {bw}\n  source: s\n"
            ),
        )
        .unwrap();
        let f = c.file("m.onnx", &relu_model());
        let pack = pack.to_str().unwrap().to_string();
        c.fails(
            &["estimate", &f, "--rules", &pack, "--device", "evil"],
            2,
            &["devices.yaml", "device evil", says],
        );
    }
}

#[test]
fn implausible_measured_times_are_refused() {
    for (name, t) in [
        ("flag_measured_tiny", "0.000000000000001ns"),
        ("flag_measured_huge", "99999999999999999999s"),
    ] {
        let c = case(name);
        let f = c.file("m.onnx", &relu_model());
        c.fails(
            &["estimate", &f, "--device", "h100", "--measured", t],
            1,
            &[
                "--measured",
                "outside the plausible range",
                "(MIN_MEASURED_S)",
            ],
        );
        let o = c.run(&["estimate", &f, "--device", "h100", "--measured", t], 1);
        assert_ne!(o.code, 0, "{name}: {}", o.stderr);
        assert!(
            o.stderr.contains("(MIN_MEASURED_S)"),
            "{name}: {}",
            o.stderr
        );
    }
}

// ---------------------------------------------------- item 7: names are text

#[test]
fn escape_sequences_in_names_are_shown_as_text() {
    // A node and an op named with a terminal escape (clear screen, red)
    // and a newline: every human format prints them escaped; JSON keeps them.
    let c = case("names_with_escapes");
    let mut g = relu_graph();
    g.node[0].name = Some("\x1b[2J\x1b[31mevil\nline|cell".into());
    g.node.push(node("\x1b]0;title\x07Op", &["y"], &["z"]));
    g.output = vec![untyped("z")];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    for format in ["table", "md", "csv"] {
        let o = c.run(&["estimate", &f, "--format", format], 0);
        assert_eq!(o.code, 0, "{format}: {}", o.stderr);
        assert!(
            !o.stdout.contains('\x1b') && !o.stdout.contains('\x07'),
            "{format}: raw escape in {:?}",
            o.stdout
        );
        assert!(!o.stderr.contains('\x1b'), "{format}: raw escape on stderr");
        if format != "csv" {
            assert!(
                o.stdout.contains("\\u{1b}[2J\\u{1b}[31mevil\\nline"),
                "{format}: {}",
                o.stdout
            );
        }
    }
    let o = c.run(&["estimate", &f, "--format", "md"], 0);
    assert!(o.stdout.contains("evil\\nline\\|cell"), "{}", o.stdout);
    let j = c.accepts(&["estimate", &f, "--format", "json"]);
    let names: Vec<&str> = j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    assert!(
        names.contains(&"\x1b[2J\x1b[31mevil\nline|cell"),
        "{names:?}"
    );
}

#[test]
fn symbol_names_starting_with_a_multibyte_character() {
    // A symbol `ß` in a quotient was sliced at byte 1, inside the character.
    let c = case("onnx_multibyte_symbol");
    let mut g = relu_graph();
    g.input = vec![build::value("x", build::tensor_type(FLOAT, &["ß", "8"]))];
    g.node = vec![with_attr(
        node("AveragePool", &["x"], &["y"]),
        build::ints("kernel_shape", &[3]),
    )];
    g.input = vec![build::value(
        "x",
        build::tensor_type(FLOAT, &["1", "1", "ß"]),
    )];
    g.node[0].attribute.push(build::ints("strides", &[2]));
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    let o = c.run(&["shapes", &f], 0);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // 1x1x(floor((ß - 3) / 2) + 1): a quotient of a sum that starts with ß.
    assert!(
        o.stdout.contains("[1, 1, floor((ß-3)/2)+1]"),
        "{}",
        o.stdout
    );
}
