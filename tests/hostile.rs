//! Hostile inputs, one case each: every one must end in exactly one line on
//! stderr starting `error:` that names the place, and exit code 2 (3 for an
//! unsupported op under `--strict`; 0 where the input is legitimately fine,
//! with the reason next to the case). Never a panic (101), a crash or a hang.
//!
//! Each case writes its files into a folder of its own and runs the real
//! binary on them. With `C3_HOSTILE_DIR` set, the folders are made there and
//! kept, each with a `cmd` file (the arguments, one per line) and an `expect`
//! file (the exit code): `scripts/hostile.sh` replays them under
//! `/usr/bin/time` to measure time and peak memory. Timing is never asserted
//! here; a run is only killed after [`KILL_AFTER`] so that a hang fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use c3::onnx::build::{
    self, BOOL, FLOAT, INT64, STRING, graph_attr, int64_list, opset, raw_tensor, sized_type,
    sized_value, tensor_attr, untyped,
};
use c3::onnx::proto::{
    AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, StringStringEntryProto,
    TensorProto, attr_type,
};
use prost::Message;

use crate::common::cli::{C3, Run};

/// A run still going after this long is killed and fails its case.
const KILL_AFTER: Duration = Duration::from_secs(20);

// ------------------------------------------------------------------ harness

/// One hostile case: a folder for its files and one run of `c3`.
pub(crate) struct Case {
    name: &'static str,
    dir: PathBuf,
}

pub(crate) fn case(name: &'static str) -> Case {
    let base = match std::env::var_os("C3_HOSTILE_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile"),
    };
    let dir = base.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Case { name, dir }
}

impl Case {
    /// Writes a file of the case; returns its path.
    pub(crate) fn file(&self, name: &str, bytes: &[u8]) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    }

    /// A file of `len` bytes that starts with `head` and is sparse after it:
    /// large on paper, nothing written to disk.
    pub(crate) fn sparse_file(&self, name: &str, head: &[u8], len: u64) -> String {
        let p = self.dir.join(name);
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(head).unwrap();
        f.set_len(len).unwrap();
        p.to_str().unwrap().to_string()
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Runs `c3 args...`, killing it after [`KILL_AFTER`]; records the
    /// command and the expected code for scripts/hostile.sh.
    pub(crate) fn run(&self, args: &[&str], expect: i32) -> Run {
        std::fs::write(self.dir.join("cmd"), args.join("\n") + "\n").unwrap();
        std::fs::write(self.dir.join("expect"), format!("{expect}\n")).unwrap();
        C3::new().args(args).kill_after(KILL_AFTER).run()
    }

    /// Asserts `c3 args...` fails with `code` and one line `error: ...`
    /// holding every string of `want` (the place first: file, node, limit).
    pub(crate) fn fails(&self, args: &[&str], code: i32, want: &[&str]) {
        let o = self.run(args, code);
        let name = self.name;
        let err = &o.stderr;
        assert_eq!(o.code, code, "{name}: exit code; stderr: {err}");
        assert!(
            err.starts_with("error: ") && err.ends_with('\n') && err.lines().count() == 1,
            "{name}: not one `error:` line: {err:?}"
        );
        // One line a person reads: no dump of the input.
        assert!(
            err.len() < 600,
            "{name}: {} bytes of error: {err}",
            err.len()
        );
        for w in want {
            assert!(err.contains(w), "{name}: expected {w:?} in: {err}");
        }
    }

    /// `c3 estimate FILE --format json` fails with exit 2 naming the file.
    pub(crate) fn rejects(&self, file: &str, want: &[&str]) {
        let mut all = vec![file];
        all.extend_from_slice(want);
        self.fails(&["estimate", file, "--format", "json"], 2, &all);
    }

    /// Like [`Case::rejects`] for a layer the rules cannot count: the layer
    /// is the place (the cost stage does not know the file).
    fn rejects_layer(&self, file: &str, want: &[&str]) {
        self.fails(&["estimate", file, "--format", "json"], 2, want);
    }

    /// `c3 estimate FILE --format json` succeeds; returns the JSON report.
    pub(crate) fn accepts(&self, args: &[&str]) -> serde_json::Value {
        let o = self.run(args, 0);
        assert_eq!(o.code, 0, "{}: {}", self.name, o.stderr);
        serde_json::from_str(&o.stdout)
            .unwrap_or_else(|e| panic!("{}: {e}: {}", self.name, o.stdout))
    }
}

// --------------------------------------------------------- model builders

/// A node named after its op and first output (errors name the node).
fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        name: Some(format!("{op}_{}", outputs.first().copied().unwrap_or(""))),
        ..build::node(op, inputs, outputs)
    }
}

/// `n` as a call of a model-local function (domain `local`).
fn local_call(n: NodeProto) -> NodeProto {
    NodeProto {
        domain: Some("local".into()),
        ..n
    }
}

/// The model-local function `name` (domain `local`, opsets 17 and
/// `local` 1): input `a`, output `b`, these nodes.
fn local_function(name: String, body: Vec<NodeProto>) -> FunctionProto {
    FunctionProto {
        name: Some(name),
        domain: Some("local".into()),
        input: vec!["a".into()],
        output: vec!["b".into()],
        node: body,
        opset_import: vec![opset("", 17), opset("local", 1)],
        ..Default::default()
    }
}

fn with_attr(mut n: NodeProto, a: AttributeProto) -> NodeProto {
    n.attribute.push(a);
    n
}

fn model(graph: GraphProto) -> ModelProto {
    build::model(graph, 17)
}

/// x[1, 8] -> Relu -> y: a well-formed model the cases spoil.
fn float_tensor(name: &str, dims: &[i64], raw: Option<Vec<u8>>) -> TensorProto {
    raw_tensor(name, FLOAT, dims, raw)
}

fn relu_graph() -> GraphProto {
    GraphProto {
        name: Some("main".into()),
        node: vec![node("Relu", &["x"], &["y"])],
        input: vec![sized_value("x", FLOAT, &[1, 8])],
        output: vec![untyped("y")],
        ..Default::default()
    }
}

fn relu_model() -> Vec<u8> {
    model(relu_graph()).encode_to_vec()
}

/// The Relu model with one more initializer.
fn with_initializer(t: TensorProto) -> Vec<u8> {
    let mut g = relu_graph();
    g.initializer.push(t);
    model(g).encode_to_vec()
}

fn external(name: &str, dtype: i32, dims: &[i64], entries: &[(&str, &str)]) -> TensorProto {
    TensorProto {
        data_location: Some(1),
        external_data: entries
            .iter()
            .map(|(k, v)| StringStringEntryProto {
                key: Some(k.to_string()),
                value: Some(v.to_string()),
            })
            .collect(),
        ..raw_tensor(name, dtype, dims, None)
    }
}

/// x[1, 8] reshaped by the initializer `shape` (int64 values `target`).
fn reshape_model(shape: TensorProto) -> Vec<u8> {
    let mut g = relu_graph();
    g.node = vec![node("Reshape", &["x", "shape"], &["y"])];
    g.initializer.push(shape);
    model(g).encode_to_vec()
}

/// Protobuf field `field`, length-delimited, holding `payload`.
fn ld(field: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 8);
    prost::encoding::encode_varint(u64::from(field << 3 | 2), &mut out);
    prost::encoding::encode_varint(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

fn concat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

// -------------------------------------------------- protobuf-level damage

#[test]
fn zero_length_file() {
    let c = case("onnx_zero_length");
    c.rejects(&c.file("m.onnx", b""), &["empty file"]);
}

#[test]
fn not_protobuf_at_all() {
    let c = case("onnx_not_protobuf");
    let f = c.file("m.onnx", b"hello, this is not a model at all\n");
    c.rejects(&f, &["not a valid ONNX model"]);
}

#[test]
fn truncated_protobuf() {
    let c = case("onnx_truncated");
    let good = relu_model();
    let f = c.file("m.onnx", &good[..good.len() / 2]);
    c.rejects(&f, &["not a valid ONNX model"]);
}

#[test]
fn wrong_wire_type() {
    // Field 7 (graph) must be length-delimited; here it is a varint.
    let c = case("onnx_wrong_wire_type");
    let f = c.file("m.onnx", &[0x38, 0x01]);
    c.rejects(&f, &["not a valid ONNX model", "wire type"]);
}

#[test]
fn length_past_the_end() {
    // Field 7 claims 127 bytes; one follows.
    let c = case("onnx_length_past_end");
    let f = c.file("m.onnx", &[0x3a, 0x7f, 0x00]);
    c.rejects(&f, &["not a valid ONNX model"]);
}

#[test]
fn length_of_2_pow_63() {
    // Field 7 claims 2^63 bytes: no allocation may follow the claim.
    let c = case("onnx_length_2_pow_63");
    let mut bytes = vec![0x3a];
    prost::encoding::encode_varint(1 << 63, &mut bytes);
    bytes.push(0);
    let f = c.file("m.onnx", &bytes);
    c.rejects(&f, &["not a valid ONNX model"]);
}

#[test]
fn varint_of_eleven_bytes() {
    // ir_version (field 1) as a varint that never ends within 10 bytes.
    let c = case("onnx_huge_varint");
    let f = c.file(
        "m.onnx",
        &[
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ],
    );
    c.rejects(&f, &["not a valid ONNX model", "varint"]);
}

#[test]
fn no_graph() {
    let c = case("onnx_no_graph");
    let f = c.file("m.onnx", &[0x08, 0x07]);
    c.rejects(&f, &["it has no graph"]);
}

#[test]
fn bit_flips_in_the_graph_field_tag() {
    // 0x3a (field 7, length-delimited) with bit 0 flipped is 0x3b: field 7
    // as a start-group marker that no end-group closes.
    let c = case("onnx_bitflip_tag");
    let mut bytes = relu_model();
    let at = bytes.iter().position(|&b| b == 0x3a).unwrap();
    bytes[at] ^= 0x01;
    let f = c.file("m.onnx", &bytes);
    c.rejects(&f, &["not a valid ONNX model"]);
}

#[test]
fn bit_flip_in_a_length() {
    // The graph's length byte with its top bit set turns it into a
    // two-byte varint that claims far more bytes than follow.
    let c = case("onnx_bitflip_length");
    let mut bytes = relu_model();
    let at = bytes.iter().position(|&b| b == 0x3a).unwrap() + 1;
    bytes[at] ^= 0x80;
    let f = c.file("m.onnx", &bytes);
    c.rejects(&f, &["not a valid ONNX model"]);
}

/// Every single-bit flip of a small model, through the library (one process
/// per flip would take minutes): each gives a model or an error of one line,
/// never a panic.
#[test]
fn every_single_bit_flip_is_a_model_or_a_one_line_error() {
    let mut g = relu_graph();
    g.node = vec![
        node("Reshape", &["x", "shape"], &["r"]),
        node("Relu", &["r"], &["y"]),
    ];
    g.initializer.push(int64_list("shape", &[2, 4]));
    let good = model(g).encode_to_vec();
    let rules = c3::rules::RuleSet::builtin().unwrap();
    let (mut ok, mut refused) = (0, 0);
    for bit in 0..good.len() * 8 {
        let mut bytes = good.clone();
        bytes[bit / 8] ^= 1 << (bit % 8);
        let run = std::panic::catch_unwind(|| -> Result<(), String> {
            let m = c3::onnx::from_bytes(bytes.into(), "flip.onnx").map_err(|e| e.to_string())?;
            let inferred =
                c3::onnx::infer::infer(&m, &Default::default()).map_err(|e| e.to_string())?;
            let graph = c3::onnx::infer::to_graph(inferred);
            c3::cost::estimate(&graph, &rules, Default::default()).map_err(|e| e.to_string())?;
            Ok(())
        });
        match run {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => {
                assert!(!e.contains('\n') && e.len() < 600, "bit {bit}: {e}");
                refused += 1;
            }
            Err(_) => panic!("bit {bit}: panicked"),
        }
    }
    // Flips in names and sizes still make models; flips in tags do not.
    assert!(ok > 0 && refused > 0, "{ok} models, {refused} refused");
}

// ------------------------------------------------------------- nesting

/// An If node whose then-branch is the graph `inner` (raw bytes).
fn if_node(inner: &[u8]) -> Vec<u8> {
    let attr = concat(&[
        &AttributeProto {
            name: Some("then_branch".into()),
            r#type: Some(attr_type::GRAPH),
            ..Default::default()
        }
        .encode_to_vec(),
        &ld(6, inner),
    ]);
    concat(&[&node("If", &["c"], &["o"]).encode_to_vec(), &ld(5, &attr)])
}

/// A graph holding one If node whose then-branch is `inner` (raw bytes).
fn if_around(inner: &[u8]) -> Vec<u8> {
    ld(1, &if_node(inner))
}

#[test]
fn subgraphs_nested_10000_deep() {
    let c = case("onnx_subgraphs_nested_10000");
    let mut g = GraphProto::default().encode_to_vec();
    for _ in 0..10_000 {
        g = if_around(&g);
    }
    let f = c.file("m.onnx", &ld(7, &g));
    c.rejects(&f, &["not a valid ONNX model", "limit of 100"]);
}

#[test]
fn types_nested_10000_deep() {
    // A graph input of type sequence(sequence(...(tensor))) 10,000 deep.
    let c = case("onnx_types_nested_10000");
    let mut t = sized_type(FLOAT, &[1]).encode_to_vec();
    for _ in 0..10_000 {
        t = ld(4, &ld(1, &t)); // TypeProto.sequence_type.elem_type
    }
    let input = concat(&[&ld(1, b"x"), &ld(2, &t)]);
    let f = c.file("m.onnx", &ld(7, &ld(11, &input)));
    c.rejects(&f, &["not a valid ONNX model", "limit of 100"]);
}

#[test]
fn function_body_with_a_graph_attribute_nested_10000_deep() {
    let c = case("onnx_function_attr_nested_10000");
    let mut g = GraphProto::default().encode_to_vec();
    for _ in 0..10_000 {
        g = if_around(&g);
    }
    let function = concat(&[&ld(1, b"f"), &ld(7, &if_node(&g))]);
    let bytes = concat(&[&model(relu_graph()).encode_to_vec(), &ld(25, &function)]);
    let f = c.file("m.onnx", &bytes);
    c.rejects(&f, &["not a valid ONNX model"]);
}

#[test]
fn a_bad_initializer_in_a_graph_attribute_of_a_function() {
    let c = case("onnx_function_attr_bad_tensor");
    let branch = GraphProto {
        initializer: vec![float_tensor("w", &[-3], None)],
        output: vec![untyped("w")],
        ..Default::default()
    };
    let f = FunctionProto {
        name: Some("f".into()),
        domain: Some("local".into()),
        input: vec!["a".into()],
        output: vec!["b".into()],
        node: vec![with_attr(
            node("If", &["a"], &["b"]),
            graph_attr("then_branch", branch),
        )],
        ..Default::default()
    };
    let mut m = model(relu_graph());
    m.functions.push(f);
    let file = c.file("m.onnx", &m.encode_to_vec());
    c.rejects(
        &file,
        &[
            "function 'f'",
            "node 'If_b'",
            "initializer 'w'",
            "negative dimension -3",
        ],
    );
}

#[test]
fn a_function_that_calls_itself() {
    let c = case("onnx_function_recursive");
    let f = FunctionProto {
        name: Some("f".into()),
        domain: Some("local".into()),
        input: vec!["a".into()],
        output: vec!["b".into()],
        node: vec![NodeProto {
            domain: Some("local".into()),
            ..node("f", &["a"], &["b"])
        }],
        opset_import: vec![opset("local", 1)],
        ..Default::default()
    };
    let mut m = model(relu_graph());
    m.opset_import.push(opset("local", 1));
    m.graph.as_mut().unwrap().node = vec![NodeProto {
        domain: Some("local".into()),
        ..node("f", &["x"], &["y"])
    }];
    m.functions.push(f);
    let file = c.file("m.onnx", &m.encode_to_vec());
    c.rejects(&file, &["function 'f' calls itself"]);
}

#[test]
fn functions_that_double_at_every_level() {
    // f0 calls f1 twice, f1 calls f2 twice, ... f39: 2^40 nodes once
    // expanded, from 80 nodes in the file.
    let c = case("onnx_function_bomb");
    let levels = 40;
    let mut m = model(relu_graph());
    m.opset_import.push(opset("local", 1));
    for i in 0..levels {
        let callee = format!("f{}", i + 1);
        let body = if i + 1 < levels {
            vec![
                local_call(node(&callee, &["a"], &["t"])),
                local_call(node(&callee, &["t"], &["b"])),
            ]
        } else {
            vec![node("Relu", &["a"], &["b"])]
        };
        m.functions.push(local_function(format!("f{i}"), body));
    }
    m.graph.as_mut().unwrap().node = vec![local_call(node("f0", &["x"], &["y"]))];
    let file = c.file("m.onnx", &m.encode_to_vec());
    c.rejects(
        &file,
        &[
            "functions expand the model to",
            "exceeds the limit of 1000000 nodes",
        ],
    );
}

/// A Loop whose body is `inner`: the carried value changes shape at every
/// iteration, so the body is inferred three times.
fn loop_around(inner: Option<GraphProto>, level: usize) -> GraphProto {
    let first = match inner {
        None => with_attr(
            node("Concat", &["c_in", "c_in"], &["c_out"]),
            build::int("axis", 0),
        ),
        Some(g) => with_attr(
            node("Loop", &["", "", "c_in"], &["c_out"]),
            graph_attr("body", g),
        ),
    };
    let body_nodes = vec![first, node("Identity", &["cond_in"], &["cond_out"])];
    GraphProto {
        name: Some(format!("body{level}")),
        input: vec![
            sized_value("i", INT64, &[]),
            sized_value("cond_in", BOOL, &[]),
            untyped("c_in"),
        ],
        node: body_nodes,
        output: vec![untyped("cond_out"), untyped("c_out")],
        ..Default::default()
    }
}

#[test]
fn loops_nested_until_inference_explodes() {
    // 25 nested Loops, each body's carried value doubling: 3^25 body runs
    // unless the visit budget stops them (the decoder allows ~33 levels).
    let c = case("onnx_loop_bomb");
    let mut body = loop_around(None, 0);
    for level in 1..25 {
        body = loop_around(Some(body), level);
    }
    let mut g = relu_graph();
    g.node = vec![with_attr(
        node("Loop", &["", "", "x"], &["y"]),
        graph_attr("body", body),
    )];
    let file = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&file, &["exceeds the limit of", "node visits"]);
}

#[test]
fn ifs_nested_12_deep_whose_branches_all_fail() {
    // An unknown condition runs both branches; each innermost branch fails,
    // so every level fails twice: the error must not double with the depth.
    // (The file doubles too: 2^12 leaves, 600 KB.)
    let c = case("onnx_if_bomb");
    let leaf = GraphProto {
        node: vec![node("Reshape", &["x", "bad"], &["r"])],
        initializer: vec![int64_list("bad", &[3, 5])],
        output: vec![untyped("r")],
        ..Default::default()
    };
    let mut g = leaf;
    for level in 0..12 {
        let o = format!("o{level}");
        let n = node("If", &["cond"], &[&o]);
        let n = with_attr(n, graph_attr("then_branch", g.clone()));
        let n = with_attr(n, graph_attr("else_branch", g));
        g = GraphProto {
            node: vec![n],
            output: vec![untyped(&o)],
            ..Default::default()
        };
    }
    let mut main = relu_graph();
    main.input.push(sized_value("cond", BOOL, &[]));
    main.node = g.node;
    main.output = vec![untyped("o11")];
    let file = c.file("m.onnx", &model(main).encode_to_vec());
    c.rejects(
        &file,
        &["node 'If_o11'", "cannot reshape 8 elements into 15"],
    );
}

// ------------------------------------------------------- graph structure

#[test]
fn cyclic_graph() {
    let c = case("onnx_cycle");
    let mut g = relu_graph();
    g.node = vec![
        node("Add", &["x", "b"], &["a"]),
        node("Relu", &["a"], &["b"]),
    ];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&f, &["the graph has a cycle through node 'Add_a'"]);
}

#[test]
fn node_that_reads_its_own_output() {
    let c = case("onnx_self_cycle");
    let mut g = relu_graph();
    g.node = vec![node("Add", &["x", "y"], &["y"])];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&f, &["the graph has a cycle through node 'Add_y'"]);
}

#[test]
fn names_with_newlines_still_give_one_line() {
    let c = case("onnx_newline_in_name");
    let mut g = relu_graph();
    g.node = vec![node("Relu", &["x"], &["y"])];
    g.node[0].name = Some("evil\nerror: forged second line".into());
    g.node[0].input = vec!["missing\r\n".into()];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(
        &f,
        &["node 'evil\\nerror: forged second line' (Relu) reads 'missing\\r\\n'"],
    );
}

#[test]
fn external_data_that_is_a_fifo() {
    // Opening a named pipe for reading would block forever.
    let c = case("onnx_external_fifo");
    let fifo = c.path("w.bin");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return; // no mkfifo here: nothing to test
    }
    let t = external("shape", INT64, &[2], &[("location", "w.bin")]);
    let f = c.file("m.onnx", &reshape_model(t));
    c.rejects(
        &f,
        &["initializer 'shape': external data 'w.bin' is not a regular file"],
    );
}

#[test]
fn dangling_input() {
    let c = case("onnx_dangling");
    let mut g = relu_graph();
    g.node = vec![node("Relu", &["nope"], &["y"])];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(
        &f,
        &["node 'Relu_y' (Relu) reads 'nope', which nothing produces"],
    );
}

#[test]
fn duplicate_node_outputs() {
    let c = case("onnx_duplicate_output");
    let mut g = relu_graph();
    g.node.push(node("Relu", &["x"], &["y"]));
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&f, &["value 'y' is defined twice"]);
}

#[test]
fn duplicate_graph_inputs() {
    let c = case("onnx_duplicate_input");
    let mut g = relu_graph();
    g.input.push(sized_value("x", FLOAT, &[2, 2]));
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&f, &["graph input 'x' is declared twice"]);
}

#[test]
fn duplicate_initializers() {
    let c = case("onnx_duplicate_initializer");
    let mut g = relu_graph();
    g.node = vec![node("Add", &["x", "w"], &["y"])];
    g.initializer
        .push(float_tensor("w", &[8], Some(vec![0; 32])));
    g.initializer
        .push(float_tensor("w", &[1], Some(vec![0; 4])));
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&f, &["initializer 'w' is defined twice"]);
}

#[test]
fn node_output_named_like_an_input() {
    let c = case("onnx_output_shadows_input");
    let mut g = relu_graph();
    g.node.push(node("Relu", &["y"], &["x"]));
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&f, &["value 'x' is defined twice"]);
}

#[test]
fn node_without_op_type() {
    let c = case("onnx_empty_op_type");
    let mut g = relu_graph();
    g.node[0].op_type = None;
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&f, &["node 'Relu_y' has no op_type"]);
}

#[test]
fn more_nodes_than_the_limit() {
    // MAX_NODES + 1 empty nodes (two bytes each): refused by counting, before
    // any node is decoded.
    let c = case("onnx_node_count");
    let n = c3::onnx::MAX_NODES + 1;
    let mut g = Vec::with_capacity(n * 2);
    for _ in 0..n {
        g.extend_from_slice(&[0x0a, 0x00]);
    }
    let f = c.file("m.onnx", &ld(7, &g));
    c.rejects(
        &f,
        &[&format!(
            "exceeds the limit of {} nodes",
            c3::onnx::MAX_NODES
        )],
    );
}

#[test]
fn node_with_100000_inputs() {
    // Legitimately fine: Sum of 100,000 copies of x is 99,999 additions per
    // element, 8 elements: 799,992 FLOPs; it reads 100,000 x 32 bytes.
    let c = case("onnx_100000_inputs");
    let mut g = relu_graph();
    let inputs = vec!["x"; 100_000];
    g.node = vec![node("Sum", &inputs, &["y"])];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    let j = c.accepts(&["estimate", &f, "--format", "json"]);
    assert_eq!(j["total"]["flops"], 99_999 * 8);
    assert_eq!(j["total"]["mread"], 100_000 * 32);
}

#[test]
fn unknown_opset_domain_is_unsupported_and_strict_exits_3() {
    // A node in a domain no rule knows, not even imported: listed as
    // unsupported (exit 0 with a warning); --strict makes it exit 3.
    let c = case("onnx_unknown_domain_strict");
    let mut g = relu_graph();
    g.node[0].domain = Some("com.nowhere".into());
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.fails(
        &["estimate", &f, "--strict"],
        3,
        &["are not counted", "com.nowhere::Relu"],
    );
}

#[test]
fn opset_version_zero() {
    let c = case("onnx_opset_zero");
    let mut m = model(relu_graph());
    m.opset_import = vec![opset("", 0)];
    let f = c.file("m.onnx", &m.encode_to_vec());
    c.rejects(&f, &["opset_import", "version 0"]);
}

#[test]
fn opset_listed_twice_with_different_versions() {
    let c = case("onnx_opset_twice");
    let mut m = model(relu_graph());
    m.opset_import = vec![opset("", 13), opset("ai.onnx", 17)];
    let f = c.file("m.onnx", &m.encode_to_vec());
    c.rejects(&f, &["opset_import", "twice"]);
}

#[test]
fn opset_version_from_the_future() {
    // Legitimately fine: a model from a newer onnx release than c3 knows
    // gets the newest semantics c3 has (Relu: one FLOP per element, 8).
    let c = case("onnx_opset_future");
    let mut m = model(relu_graph());
    m.opset_import = vec![opset("", 1_000_000)];
    let f = c.file("m.onnx", &m.encode_to_vec());
    let j = c.accepts(&["estimate", &f, "--format", "json"]);
    assert_eq!(j["total"]["flops"], 8);
}

// ----------------------------------------------------- tensors and shapes

#[test]
fn rank_65_graph_input() {
    let c = case("onnx_rank_65_input");
    let mut g = relu_graph();
    g.input = vec![sized_value("x", FLOAT, &[1; 65])];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&f, &["'x' has rank 65, which exceeds the limit of 64"]);
}

#[test]
fn rank_65_initializer() {
    let c = case("onnx_rank_65_initializer");
    let f = c.file(
        "m.onnx",
        &with_initializer(float_tensor("w", &[1; 65], Some(vec![0; 4]))),
    );
    c.rejects(
        &f,
        &["initializer 'w'", "rank 65, which exceeds the limit of 64"],
    );
}

#[test]
fn rank_65_constant_attribute() {
    let c = case("onnx_rank_65_constant");
    let mut g = relu_graph();
    g.node.push(with_attr(
        node("Constant", &[], &["k"]),
        tensor_attr("value", float_tensor("", &[1; 65], Some(vec![0; 4]))),
    ));
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(
        &f,
        &[
            "node 'Constant_k'",
            "rank 65, which exceeds the limit of 64",
        ],
    );
}

#[test]
fn raw_data_shorter_than_declared() {
    let c = case("onnx_short_raw_data");
    let f = c.file(
        "m.onnx",
        &with_initializer(float_tensor("w", &[2, 3], Some(vec![0; 8]))),
    );
    c.rejects(
        &f,
        &["initializer 'w': raw_data is 8 bytes, but 6 float32 elements need 24"],
    );
}

#[test]
fn a_declared_2_pow_31_element_tensor() {
    // 2^31 float32 elements declared, 4 bytes stored: refused by arithmetic
    // on the lengths, nothing allocated.
    let c = case("onnx_2_pow_31_tensor");
    let f = c.file(
        "m.onnx",
        &with_initializer(float_tensor("w", &[1 << 31], Some(vec![0; 4]))),
    );
    c.rejects(
        &f,
        &["raw_data is 4 bytes, but 2147483648 float32 elements need 8589934592"],
    );
}

#[test]
fn a_2_pow_31_element_activation_is_only_arithmetic() {
    // Legitimately fine: Relu over 2^31 elements costs 2^31 FLOPs, counted
    // without any tensor being allocated.
    let c = case("onnx_2_pow_31_activation");
    let mut g = relu_graph();
    g.input = vec![sized_value("x", FLOAT, &[1 << 31, 1])];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    let j = c.accepts(&["estimate", &f, "--format", "json"]);
    assert_eq!(j["total"]["flops"], 1u64 << 31);
}

#[test]
fn initializer_dims_product_overflows() {
    let c = case("onnx_dims_overflow_initializer");
    let f = c.file(
        "m.onnx",
        &with_initializer(float_tensor("w", &[1 << 32, 1 << 32], None)),
    );
    c.rejects(&f, &["initializer 'w'", "overflows 64 bits"]);
}

#[test]
fn string_tensor_dims_product_overflows() {
    let c = case("onnx_string_dims_overflow");
    let t = TensorProto {
        name: Some("s".into()),
        dims: vec![1 << 40, 1 << 40],
        data_type: Some(STRING),
        string_data: vec![b"a".to_vec().into()],
        ..Default::default()
    };
    let f = c.file("m.onnx", &with_initializer(t));
    c.rejects(&f, &["initializer 's'", "overflows 64 bits"]);
}

#[test]
fn declared_activation_dims_product_overflows() {
    // Each dimension is valid; their product is not: the layer's cost says so.
    let c = case("onnx_dims_overflow_activation");
    let mut g = relu_graph();
    g.input = vec![sized_value("x", FLOAT, &[1 << 40, 1 << 40])];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects_layer(
        &f,
        &["layer 'Relu_y' (Relu): X: element count overflows 64 bits"],
    );
}

#[test]
fn negative_dimension_in_value_info() {
    let c = case("onnx_negative_dim_value_info");
    let mut g = relu_graph();
    g.value_info.push(sized_value("y", FLOAT, &[3, -5]));
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&f, &["'y' declares a negative dimension -5"]);
}

#[test]
fn negative_dimension_in_graph_input() {
    let c = case("onnx_negative_dim_input");
    let mut g = relu_graph();
    // -1 is how paddle2onnx writes "unknown" (it becomes the symbol
    // x_dim0); any other negative size is refused.
    g.input = vec![sized_value("x", FLOAT, &[-2, 8])];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects(&f, &["'x' declares a negative dimension -2"]);
}

#[test]
fn negative_dimension_in_initializer() {
    let c = case("onnx_negative_dim_initializer");
    let f = c.file(
        "m.onnx",
        &with_initializer(float_tensor("w", &[-2, 3], None)),
    );
    c.rejects(&f, &["initializer 'w': negative dimension -2"]);
}

#[test]
fn initializer_without_data() {
    let c = case("onnx_initializer_no_data");
    let f = c.file("m.onnx", &with_initializer(float_tensor("w", &[4], None)));
    c.rejects(&f, &["initializer 'w': no data for 4 declared elements"]);
}

#[test]
fn unknown_data_type() {
    let c = case("onnx_unknown_dtype");
    let t = TensorProto {
        data_type: Some(999),
        ..float_tensor("w", &[1], Some(vec![0; 4]))
    };
    let f = c.file("m.onnx", &with_initializer(t));
    c.rejects(&f, &["initializer 'w': unknown data type 999"]);
}

#[test]
fn reshape_to_a_gigantic_shape() {
    // 8 elements cannot become 2^62 x 4 of them (a product that overflows).
    let c = case("onnx_reshape_gigantic");
    let f = c.file("m.onnx", &reshape_model(int64_list("shape", &[1 << 62, 4])));
    c.rejects(&f, &["node 'Reshape_y' (Reshape)"]);
}

#[test]
fn reshape_to_a_negative_shape() {
    let c = case("onnx_reshape_negative");
    let f = c.file("m.onnx", &reshape_model(int64_list("shape", &[-4, -2])));
    c.rejects(&f, &["node 'Reshape_y' (Reshape)"]);
}

#[test]
fn expand_to_a_gigantic_shape() {
    // Expand's target folds to 2^40 x 2^40: each size is fine, the layer's
    // element count overflows.
    let c = case("onnx_expand_gigantic");
    let mut g = relu_graph();
    g.input = vec![sized_value("x", FLOAT, &[1, 1])];
    g.node = vec![node("Expand", &["x", "shape"], &["y"])];
    g.initializer.push(int64_list("shape", &[1 << 40, 1 << 40]));
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects_layer(
        &f,
        &["layer 'Expand_y' (Expand): Y: element count overflows 64 bits"],
    );
}

#[test]
fn constant_of_shape_gigantic() {
    // ConstantOfShape(2^62 x 2^62) then Relu: the value is never built.
    let c = case("onnx_constant_of_shape_gigantic");
    let mut g = relu_graph();
    g.input = vec![sized_value("x", FLOAT, &[1])];
    g.node = vec![
        node("ConstantOfShape", &["shape"], &["k"]),
        node("Add", &["x", "k"], &["y"]),
    ];
    g.initializer.push(int64_list("shape", &[1 << 62, 1 << 62]));
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    c.rejects_layer(
        &f,
        &["layer 'Add_y' (Add): B: element count overflows 64 bits"],
    );
}

// --------------------------------------------------------- external data

#[test]
fn external_data_inside_the_folder() {
    // Legitimately fine: the data is in the model's folder and of the
    // declared size (4 float32, 16 bytes); Relu counts 8 FLOPs.
    let c = case("onnx_external_ok");
    c.file("w.bin", &[0; 16]);
    let t = external("w", FLOAT, &[4], &[("location", "w.bin")]);
    let f = c.file("m.onnx", &with_initializer(t));
    let j = c.accepts(&["estimate", &f, "--format", "json"]);
    assert_eq!(j["total"]["flops"], 8);
}

fn external_case(name: &'static str, location: &str, want: &[&str]) {
    let c = case(name);
    let t = external("w", FLOAT, &[4], &[("location", location)]);
    let f = c.file("m.onnx", &with_initializer(t));
    c.rejects(&f, want);
}

#[test]
fn external_data_with_dot_dot() {
    external_case(
        "onnx_external_dotdot",
        "../w.bin",
        &["initializer 'w'", "'../w.bin' leaves the model's folder"],
    );
}

#[test]
fn external_data_with_an_absolute_path() {
    external_case(
        "onnx_external_absolute",
        "/etc/passwd",
        &["'/etc/passwd' leaves the model's folder"],
    );
}

#[cfg(unix)]
#[test]
fn external_data_through_a_symlink_out_of_the_folder() {
    let c = case("onnx_external_symlink");
    std::os::unix::fs::symlink("/etc/passwd", c.path("link.bin")).unwrap();
    let t = external("w", FLOAT, &[4], &[("location", "link.bin")]);
    let f = c.file("m.onnx", &with_initializer(t));
    c.rejects(&f, &["'link.bin' resolves outside the model's folder"]);
}

#[cfg(unix)]
#[test]
fn external_data_through_a_symlinked_folder() {
    let c = case("onnx_external_symlink_dir");
    std::os::unix::fs::symlink("/etc", c.path("sub")).unwrap();
    let t = external("w", FLOAT, &[4], &[("location", "sub/passwd")]);
    let f = c.file("m.onnx", &with_initializer(t));
    c.rejects(&f, &["'sub/passwd' resolves outside the model's folder"]);
}

#[test]
fn external_data_that_is_missing_when_needed() {
    let c = case("onnx_external_missing");
    let t = external("shape", INT64, &[2], &[("location", "gone.bin")]);
    let f = c.file("m.onnx", &reshape_model(t));
    c.rejects(&f, &["node 'Reshape_y'", "gone.bin"]);
}

#[test]
fn external_data_past_the_end_of_its_file() {
    let c = case("onnx_external_short");
    c.file("w.bin", &[0; 8]);
    let t = external(
        "shape",
        INT64,
        &[2],
        &[("location", "w.bin"), ("offset", "4")],
    );
    let f = c.file("m.onnx", &reshape_model(t));
    c.rejects(&f, &["initializer 'shape': external data 'w.bin' is 8 bytes, but 2 int64 elements need 16 at offset 4"]);
}

#[test]
fn external_data_declaring_2_pow_40_elements() {
    // The shape tensor of a Reshape declares 2^40 int64 elements in a file
    // of 16 bytes: the declared length is checked, nothing is allocated.
    let c = case("onnx_external_huge");
    c.file("w.bin", &[0; 16]);
    let t = external(
        "shape",
        INT64,
        &[1 << 40],
        &[("location", "w.bin"), ("length", "8796093022208")],
    );
    let f = c.file("m.onnx", &reshape_model(t));
    c.rejects(&f, &["initializer 'shape': external data 'w.bin' is 16 bytes, but 1099511627776 int64 elements need 8796093022208"]);
}

// ------------------------------------------------------------- traces

pub(crate) const RELU_TRACE: &str = r#"{"layers": [{"op": "Relu", "inputs": [{"shape": [2, 3]}], "outputs": [{"shape": [2, 3]}]}]}"#;

#[test]
fn trace_nested_10000_deep() {
    let c = case("trace_nested_10000");
    let deep = format!(
        r#"{{"layers": [{{"op": "Relu", "attrs": {{"a": {}1{}}}}}]}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let f = c.file("t.json", deep.as_bytes());
    c.rejects(
        &f,
        &[
            "line 1 column",
            "JSON nesting exceeds the limit of 128 levels",
        ],
    );
}

#[test]
fn trace_dimension_of_2_pow_63() {
    let c = case("trace_dim_2_pow_63");
    let t = r#"{"layers": [{"op": "Relu", "inputs": [{"shape": [9223372036854775808]}], "outputs": [{"shape": [1]}]}]}"#;
    let f = c.file("t.json", t.as_bytes());
    c.rejects(&f, &["line 1 column", "9223372036854775808"]);
}

#[test]
fn trace_dimension_that_is_a_fraction() {
    let c = case("trace_dim_fraction");
    let t = r#"{"layers": [{"op": "Relu", "inputs": [{"shape": [2.5]}], "outputs": [{"shape": [1]}]}]}"#;
    let f = c.file("t.json", t.as_bytes());
    c.rejects(&f, &["line 1 column", "dimension 2.5 is not an integer"]);
}

#[test]
fn trace_dimension_product_overflows() {
    let c = case("trace_dims_overflow");
    let t = r#"{"layers": [{"op": "Relu", "inputs": [{"shape": [4294967296, 4294967296]}], "outputs": [{"shape": [1]}]}]}"#;
    let f = c.file("t.json", t.as_bytes());
    c.rejects_layer(
        &f,
        &["layer 'Relu-1' (Relu): X: element count overflows 64 bits"],
    );
}

#[test]
fn trace_rank_65() {
    let c = case("trace_rank_65");
    let dims = vec!["1"; 65].join(", ");
    let t = format!(
        r#"{{"layers": [{{"op": "Relu", "inputs": [{{"shape": [{dims}]}}], "outputs": [{{"shape": [1]}}]}}]}}"#
    );
    let f = c.file("t.json", t.as_bytes());
    c.rejects(
        &f,
        &[
            "line 1 column",
            "more than 64 dimensions (MAX_RANK), which exceeds the limit",
        ],
    );
}

#[test]
fn trace_with_invalid_utf8() {
    let c = case("trace_invalid_utf8");
    let f = c.file("t.json", b"{\"layers\": [{\"op\": \"Re\xff\xfelu\"}]}");
    c.rejects(&f, &["line 1 column", "not a valid trace"]);
}

#[test]
fn trace_truncated() {
    let c = case("trace_truncated");
    let f = c.file("t.json", &RELU_TRACE.as_bytes()[..40]);
    c.rejects(&f, &["not a valid trace"]);
}

#[test]
fn trace_of_40_mb_of_blanks() {
    // Past the size read whole: parsed as it is read, the blanks cost no
    // memory; the trace has no layers (found at the `}`, byte 40 MiB + 1).
    let c = case("trace_40mb_blanks");
    let mut t = vec![b' '; 40 * 1024 * 1024];
    t[0] = b'{';
    t.push(b'}');
    let f = c.file("t.json", &t);
    c.rejects(&f, &["line 1 column 41943041", "missing field `layers`"]);
}

/// A trace of `MAX_NODES + 1` layers whose first layer is not a valid
/// layer, after `pad` blanks.
fn too_many_layers_first_one_bad(pad: usize) -> Vec<u8> {
    let mut t = b"{\"layers\": [".to_vec();
    t.resize(t.len() + pad, b' ');
    t.extend_from_slice(b"{\"op\":\"R\",\"bogus\":1},");
    t.extend(b"{\"op\":\"R\"},".repeat(c3::onnx::MAX_NODES - 1));
    t.extend_from_slice(b"{\"op\":\"R\"}]}");
    t
}

#[test]
fn trace_layers_are_counted_before_any_is_built() {
    // Read whole (11 MB): the count comes first, so the limit is the error,
    // not the bad field of layer 1 that building it would have met.
    let c = case("trace_count_first_small");
    let f = c.file("t.json", &too_many_layers_first_one_bad(0));
    c.rejects(&f, &["more than 1000000 layers (MAX_NODES)"]);
}

#[test]
fn trace_past_the_read_whole_size_is_counted_before_any_layer_is_built() {
    // 34 MiB of blanks first: past the 32 MiB read whole, so parsed as it
    // is read; still counted before building (a million layers built
    // before the refusal would cost hundreds of MB): the limit is the
    // error, not layer 1's bad field. Generated here, never committed.
    let c = case("trace_count_first_streamed");
    let f = c.file("t.json", &too_many_layers_first_one_bad(34 << 20));
    c.rejects(&f, &["more than 1000000 layers (MAX_NODES)"]);
    // Under the limit, the same streamed file is built and checked: layer
    // 1's unknown field is the error.
    let mut ok = b"{\"layers\": [".to_vec();
    ok.resize(ok.len() + (34 << 20), b' ');
    ok.extend_from_slice(b"{\"op\":\"R\",\"bogus\":1}]}");
    let g = c.file("one.json", &ok);
    let o = C3::new()
        .args(["estimate", &g])
        .kill_after(KILL_AFTER)
        .run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("unknown field `bogus`"), "{}", o.stderr);
}

#[test]
fn trace_past_the_read_whole_size_from_a_pipe() {
    // The CLI refuses a pipe before reading it ("not a regular file"); the
    // library's reader, given one, cannot read it twice (count, then
    // build): past 32 MiB it refuses with the way out, standard input.
    let c = case("trace_streamed_fifo");
    let fifo = c.path("t.json");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
    let path = fifo.clone();
    let writer = std::thread::spawn(move || {
        let mut w = std::fs::OpenOptions::new().write(true).open(path)?;
        w.write_all(b"{\"layers\": [")?;
        w.write_all(&vec![b' '; 33 << 20])?;
        w.write_all(b"]}")
    });
    let e = c3::trace::read_trace(fifo.to_str().unwrap())
        .map(|_| ())
        .unwrap_err();
    // The writer stops at the broken pipe once the reader has gone.
    let _ = writer.join();
    let e = e.to_string();
    assert!(
        e.contains("is read twice") && e.contains("on standard input (`-`)"),
        "{e}"
    );
}

#[test]
fn trace_larger_than_the_limit() {
    // A file starting `{` (so a trace), one byte over the limit, sparse.
    let c = case("trace_too_large");
    let f = c.sparse_file("t.json", b"{", c3::trace::MAX_TRACE_BYTES + 1);
    c.rejects(
        &f,
        &[&format!(
            "exceeds the limit of {} bytes",
            c3::trace::MAX_TRACE_BYTES
        )],
    );
}

// -------------------------------------------------------------- rules

const RELU_HEAD: &str =
    "Relu:\n  category: Activation\n  summary: s\n  doc: d\n  inputs: \"X\"\n  outputs: \"Y\"\n";

/// A case whose pack holds `pack.yaml` with `yaml`; runs estimate on a
/// one-Relu trace with it.
pub(crate) fn pack_case(name: &'static str, yaml: &[u8], code: i32, want: &[&str]) {
    let c = case(name);
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    std::fs::create_dir_all(c.path("pack")).unwrap();
    let file = c.file("pack/pack.yaml", yaml);
    let mut all = vec![file.as_str()];
    all.extend_from_slice(want);
    c.fails(
        &[
            "estimate",
            &trace,
            "--rules",
            c.path("pack").to_str().unwrap(),
        ],
        code,
        &all,
    );
}

pub(crate) fn relu_rule(flops: &str) -> Vec<u8> {
    format!("{RELU_HEAD}  flops: \"{flops}\"\n  mread: \"|X|\"\n  mwrite: \"|Y|\"\n").into_bytes()
}

#[test]
fn formula_that_overflows() {
    pack_case(
        "rules_formula_overflow",
        &relu_rule("|X| * 9223372036854775807"),
        2,
        &[":7:11: integer overflow in flops", "(layer 'Relu-1', Relu)"],
    );
}

#[test]
fn formula_that_divides_by_zero() {
    pack_case(
        "rules_formula_div_zero",
        &relu_rule("|X| / (|Y| - |Y|)"),
        2,
        &[":7:11: division by zero in flops `|X| / (|Y| - |Y|)` (layer 'Relu-1', Relu)"],
    );
}

#[test]
fn formula_nested_10000_brackets_deep() {
    // 20,003 characters: the length limit refuses it first.
    let f = format!("{}|X|{}", "(".repeat(10_000), ")".repeat(10_000));
    pack_case(
        "rules_formula_nested_10000",
        &relu_rule(&f),
        2,
        &[
            ":7:11:",
            "formula is 20003 characters, which exceeds the limit of 4096",
        ],
    );
}

#[test]
fn formula_nested_1000_brackets_deep() {
    // Within the length limit: the nesting limit refuses it, pointing at
    // the 65th bracket (column 11 + 64).
    let f = format!("{}|X|{}", "(".repeat(1000), ")".repeat(1000));
    pack_case(
        "rules_formula_nested_1000",
        &relu_rule(&f),
        2,
        &[":7:75:", "brackets nest deeper than the limit of 64 levels"],
    );
}

#[test]
fn formula_of_5000_characters() {
    let f = format!("|X|{}", " + 1".repeat(1250));
    pack_case(
        "rules_formula_5000_chars",
        &relu_rule(&f),
        2,
        &[":7:", "5003 characters, which exceeds the limit of 4096"],
    );
}

#[test]
fn formula_with_a_long_run_of_prefix_operators() {
    let f = format!("{}|X|", "-".repeat(1000));
    pack_case(
        "rules_formula_prefix_run",
        &relu_rule(&f),
        2,
        &[":7:", "exceeds the limit of 256 operators"],
    );
}

#[test]
fn formula_building_a_gigantic_list() {
    pack_case(
        "rules_formula_fill_huge",
        &relu_rule("len(fill(|X| * 1000000000, 1))"),
        2,
        &[
            ":7:11:",
            "exceeds the limit of 4096 elements",
            "(layer 'Relu-1', Relu)",
        ],
    );
}

#[test]
fn yaml_alias_bomb() {
    // Nine levels of ten aliases each: 10^9 strings if expanded.
    let mut y = String::from("a0: &a0 [\"lol\"]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        y.push_str(&format!(
            "a{i}: &a{i} [{}]\n",
            [prev.as_str(); 10].join(", ")
        ));
    }
    pack_case("rules_yaml_alias_bomb", y.as_bytes(), 2, &["pack.yaml:"]);
}

#[test]
fn yaml_nested_10000_deep() {
    let y = format!("Relu: {}1{}\n", "[".repeat(10_000), "]".repeat(10_000));
    pack_case(
        "rules_yaml_nested_10000",
        y.as_bytes(),
        2,
        &["pack.yaml:1:"],
    );
}

#[test]
fn yaml_block_mappings_nested_2500_deep() {
    // 3.1 MB of indentation, under the file size limit.
    let mut y = String::new();
    for i in 0..2500 {
        y.push_str(&" ".repeat(i));
        y.push_str("k:\n");
    }
    pack_case(
        "rules_yaml_block_nested_2500",
        y.as_bytes(),
        2,
        &["pack.yaml:2:2:"],
    );
}

#[test]
fn yaml_with_invalid_utf8() {
    let mut y = relu_rule("|X|");
    y.splice(2..2, [0xff, 0xfe]);
    pack_case("rules_yaml_invalid_utf8", &y, 2, &["UTF-8"]);
}

#[test]
fn pack_of_100_mb() {
    // A 100 MB rule file (sparse: nothing written): refused by its size,
    // before it is read.
    let c = case("rules_pack_100mb");
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    std::fs::create_dir_all(c.path("pack")).unwrap();
    let big = c.sparse_file("pack/huge.yaml", b"Relu:\n", 100 * 1024 * 1024);
    c.fails(
        &[
            "estimate",
            &trace,
            "--rules",
            c.path("pack").to_str().unwrap(),
        ],
        2,
        &[
            &big,
            "104857600 bytes, which exceeds the limit of 4194304 bytes",
        ],
    );
}

#[test]
fn devices_file_of_100_mb() {
    let c = case("rules_devices_100mb");
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    std::fs::create_dir_all(c.path("pack")).unwrap();
    let big = c.sparse_file("pack/devices.yaml", b"x:\n", 100 * 1024 * 1024);
    c.fails(
        &[
            "estimate",
            &trace,
            "--rules",
            c.path("pack").to_str().unwrap(),
        ],
        2,
        &[&big, "exceeds the limit of 4194304 bytes"],
    );
}

mod copies;
mod models;
mod names;
mod outputs;
mod round3;
