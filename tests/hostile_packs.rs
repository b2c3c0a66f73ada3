//! Hostile rule packs and symbolic arithmetic (issue 12, items 1-4): files
//! that lead out of a pack, endless files, values that grow without bound,
//! dimension polynomials that explode. Same harness and judgement as
//! `hostile.rs`: one `error:` line, the expected exit code, no panic.

use std::process::Command;

use c3::onnx::build::{self, FLOAT, graph, node, tensor_type, untyped, value};
use prost::Message;

use crate::hostile::{RELU_TRACE, case, pack_case, relu_rule};

/// A pack folder `pack` whose `rules.yaml` is a link to `target`; runs
/// estimate with it and checks nothing of the target is quoted.
fn linked_pack(name: &'static str, target: &str) {
    let c = case(name);
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    std::fs::create_dir_all(c.path("pack")).unwrap();
    c.file("pack/a.yaml", &relu_rule("|X|"));
    let link = c.path("pack/rules.yaml");
    std::os::unix::fs::symlink(target, &link).unwrap();
    let pack = c.path("pack");
    let args = ["estimate", &trace, "--rules", pack.to_str().unwrap()];
    c.fails(
        &args,
        2,
        &[link.to_str().unwrap(), "leads outside the pack's folder"],
    );
    let err = c.run(&args, 2).stderr;
    assert!(!err.contains("root:") && !err.contains("PATH="), "{err}");
}

#[test]
fn pack_file_linked_to_etc_passwd() {
    linked_pack("packs_link_passwd", "/etc/passwd");
}

#[test]
fn pack_file_linked_to_proc_environ() {
    linked_pack("packs_link_environ", "/proc/self/environ");
}

#[test]
fn pack_file_linked_inside_the_pack_is_fine() {
    // A link to a sibling file stays inside the folder: loaded as usual.
    let c = case("packs_link_inside");
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    std::fs::create_dir_all(c.path("pack")).unwrap();
    c.file("pack/real.txt", &relu_rule("7 * |X|"));
    std::os::unix::fs::symlink("real.txt", c.path("pack/rules.yaml")).unwrap();
    let pack = c.path("pack");
    let r = c.accepts(&[
        "estimate",
        &trace,
        "--rules",
        pack.to_str().unwrap(),
        "--format",
        "json",
    ]);
    // 7 * |X| = 7 * 2*3 = 42
    assert_eq!(r["layers"][0]["flops"], 42, "{r}");
}

#[test]
fn pack_file_that_is_a_fifo() {
    // Reading a named pipe would block forever: refused unopened.
    let c = case("packs_fifo");
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    std::fs::create_dir_all(c.path("pack")).unwrap();
    let fifo = c.path("pack/rules.yaml");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
    let pack = c.path("pack");
    c.fails(
        &["estimate", &trace, "--rules", pack.to_str().unwrap()],
        2,
        &[fifo.to_str().unwrap(), "is not a regular file"],
    );
}

#[test]
fn pack_of_too_many_files() {
    let c = case("packs_too_many_files");
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    std::fs::create_dir_all(c.path("pack")).unwrap();
    for i in 0..=c3::rules::pack::MAX_PACK_FILES {
        c.file(&format!("pack/r{i}.yaml"), b"{}\n");
    }
    let pack = c.path("pack");
    c.fails(
        &["estimate", &trace, "--rules", pack.to_str().unwrap()],
        2,
        &["exceeds the limit of 256 *.yaml files (MAX_PACK_FILES)"],
    );
}

#[test]
fn docs_check_against_an_endless_file() {
    // /dev/zero reports size 0 and never ends: not a regular file, so
    // refused unopened as a bad -o (exit 1, as for -o -).
    let c = case("docs_check_dev_zero");
    c.fails(
        &["docs", "--check", "-o", "/dev/zero"],
        1,
        &["-o /dev/zero: not a regular file"],
    );
}

#[test]
fn docs_check_against_a_fifo_nobody_writes() {
    // Opening a FIFO for reading waits for a writer: checked before the
    // open, refused at once. A symlink to one too.
    let c = case("docs_check_fifo");
    let fifo = c.path("DETAILS.md");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
    let fifo = fifo.to_str().unwrap();
    c.fails(
        &["docs", "--check", "-o", fifo],
        1,
        &[fifo, "not a regular file"],
    );
    let link = c.path("link.md");
    std::os::unix::fs::symlink(fifo, &link).unwrap();
    let c2 = case("docs_check_fifo_link");
    c2.fails(
        &["docs", "--check", "-o", link.to_str().unwrap()],
        1,
        &["link.md: not a regular file"],
    );
}

#[test]
fn trace_from_proc_is_read_with_a_bound() {
    // /proc/self/environ reports size 0; it is read (the user named it) and
    // refused as JSON without quoting it.
    let c = case("trace_proc_environ");
    let o = c.run(&["estimate", "/proc/self/environ", "--format", "json"], 2);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    assert!(!o.stderr.contains("PATH="), "{}", o.stderr);
}

/// `n` squared `k` times through Shape -> Mul(s, s) -> ... : a dimension
/// `n^(2^k)`, the count that once wrapped to `n^0`.
fn squaring_model(k: usize) -> Vec<u8> {
    let mut nodes = vec![node("Shape", &["x"], &["s0"])];
    for i in 0..k {
        let (a, b) = (format!("s{i}"), format!("s{}", i + 1));
        let mut n = node("Mul", &[&a, &a], &[&b]);
        n.name = Some(format!("square{}", i + 1));
        nodes.push(n);
    }
    let last = format!("s{k}");
    let mut e = node("ConstantOfShape", &[&last], &["y"]);
    e.name = Some("fill".into());
    nodes.push(e);
    let x = value("x", tensor_type(FLOAT, &["n"]));
    build::model(graph(vec![x], nodes, vec![untyped("y")]), 17).encode_to_vec()
}

/// The shape `c3 shapes` infers for `y`.
fn shape_of_y(c: &crate::hostile::Case, f: &str) -> String {
    let o = c.run(&["shapes", f, "--format", "json"], 0);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let r: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    r["tensors"]["y"]["shape"].to_string()
}

#[test]
fn dimension_squared_until_past_the_degree_limit() {
    // n^(2^8) = n^256 > MAX_DIM_DEGREE = 128: the 8th square is an error
    // naming it, never a fresh symbol (nor n^0 = 1, as it once was).
    let c = case("dim_squared_8_times");
    let f = c.file("m.onnx", &squaring_model(8));
    c.rejects(
        &f,
        &[
            "square8",
            "exceeds the limit of degree 128",
            "MAX_DIM_DEGREE",
        ],
    );
}

#[test]
fn dimension_squared_40_times_never_wraps() {
    // 2^32 once wrapped the u32 power to 0: `n^0`, a size of 1. Squaring
    // stops at the 8th node, whatever follows.
    let c = case("dim_squared_40_times");
    let f = c.file("m.onnx", &squaring_model(40));
    c.rejects(
        &f,
        &[
            "square8",
            "exceeds the limit of degree 128",
            "MAX_DIM_DEGREE",
        ],
    );
    // `shapes` infers the same way, and refuses the same way.
    c.fails(&["shapes", &f], 2, &["square8", "MAX_DIM_DEGREE"]);
}

/// `Max(m_k, s)` nested `k` times over `s = Shape(x)` and `t = Shape(z)`:
/// `max(n, max(n, ... max(n, m)))`, one atom more per node and no product.
fn nested_max_model(k: usize) -> Vec<u8> {
    let mut nodes = vec![
        node("Shape", &["x"], &["s"]),
        node("Shape", &["z"], &["m0"]),
    ];
    for i in 0..k {
        let (a, b) = (format!("m{i}"), format!("m{}", i + 1));
        // Alternating the operand order changes nothing: max is canonical.
        let mut n = if i % 2 == 0 {
            node("Max", &[&a, "s"], &[&b])
        } else {
            node("Min", &["s", &a], &[&b])
        };
        n.name = Some(format!("nest{}", i + 1));
        nodes.push(n);
    }
    let last = format!("m{k}");
    nodes.push(node("ConstantOfShape", &[&last], &["y"]));
    let x = value("x", tensor_type(FLOAT, &["n"]));
    let z = value("z", tensor_type(FLOAT, &["m"]));
    build::model(graph(vec![x, z], nodes, vec![untyped("y")]), 17).encode_to_vec()
}

#[test]
fn dimension_nested_in_max_past_the_size_limit() {
    // Node k nests its innermost max/min k - 1 levels down: past
    // MAX_DIM_NESTING = 128 first at k = 129, so `nest129` is the error
    // (printing, comparing and evaluating a value recurse once a level).
    let c = case("dim_nested_max_130");
    let f = c.file("m.onnx", &nested_max_model(130));
    c.rejects(
        &f,
        &[
            "nest129",
            "nests floor, ceil, max and min more than 128 deep",
            "MAX_DIM_NESTING",
        ],
    );
    // One level less is a value: 127 atoms max/min, 128 symbols `n` and
    // one `m`, innermost `max(m,n)`; with n = 3 and m = 5 it evaluates to
    // max(3, min(3, ... max(5, 3))) = 3.
    let g = c.file("ok.onnx", &nested_max_model(127));
    let y = shape_of_y(&c, &g);
    assert_eq!(y.matches("max(").count(), 64, "{y}");
    assert_eq!(y.matches("min(").count(), 63, "{y}");
    assert!(y.contains("max(m,n)"), "{y}");
    let o = c.run(
        &[
            "shapes", &g, "--format", "json", "--dim", "n=3", "--dim", "m=5",
        ],
        0,
    );
    let r: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r["tensors"]["y"]["shape"], serde_json::json!([3]), "{r}");
}

/// `s3 = Shape(x)^3` repeated 64 times by Concat, expanded into a tensor of
/// shape `[n^3] * 64` and reshaped to `[-1]`: an element count of `n^192`.
fn reshaped_cubes_model() -> Vec<u8> {
    let mut nodes = vec![
        node("Shape", &["x"], &["s"]),
        node("Mul", &["s", "s"], &["s2"]),
        node("Mul", &["s2", "s"], &["s3"]),
    ];
    let copies = vec!["s3"; 64];
    let mut cat = node("Concat", &copies, &["dims"]);
    cat.attribute.push(build::int("axis", 0));
    nodes.push(cat);
    nodes.push(node("Expand", &["one", "dims"], &["big"]));
    let mut flat = node("Reshape", &["big", "minus_one"], &["y"]);
    flat.name = Some("flat".into());
    nodes.push(flat);
    let x = value("x", tensor_type(FLOAT, &["n"]));
    let one = value("one", tensor_type(FLOAT, &[]));
    let mut g = graph(vec![x, one], nodes, vec![untyped("y")]);
    g.initializer.push(build::int64_list("minus_one", &[-1]));
    build::model(g, 17).encode_to_vec()
}

#[test]
fn element_count_of_reshaped_shape_values_past_the_degree_limit() {
    // (n^3)^64 = n^192 > MAX_DIM_DEGREE = 128 elements to reshape: an
    // error naming the Reshape, not a fresh symbol for its size.
    let c = case("dim_reshape_n192");
    let f = c.file("m.onnx", &reshaped_cubes_model());
    c.rejects(
        &f,
        &["flat", "exceeds the limit of degree 128", "MAX_DIM_DEGREE"],
    );
}

#[test]
fn dimension_squared_within_the_limit_is_exact() {
    // n^(2^7) = n^128 = MAX_DIM_DEGREE: kept exactly.
    let c = case("dim_squared_7_times");
    let f = c.file("m.onnx", &squaring_model(7));
    assert_eq!(shape_of_y(&c, &f), r#"["n^128"]"#);
}

/// `c = [n^64, n^64, n^64]` (Shape(x) squared 6 times, concatenated
/// thrice), then `tail` (nodes reading `c` or `big = Expand(one, c)`).
fn three_n64_model(tail: Vec<c3::onnx::proto::NodeProto>) -> Vec<u8> {
    let mut nodes = vec![node("Shape", &["x"], &["s0"])];
    for i in 0..6 {
        let (a, b) = (format!("s{i}"), format!("s{}", i + 1));
        nodes.push(node("Mul", &[&a, &a], &[&b]));
    }
    let mut cat = node("Concat", &["s6", "s6", "s6"], &["c"]);
    cat.attribute.push(build::int("axis", 0));
    nodes.push(cat);
    nodes.push(node("Expand", &["one", "c"], &["big"]));
    nodes.extend(tail);
    let x = value("x", tensor_type(FLOAT, &["n"]));
    let one = value("one", tensor_type(FLOAT, &[]));
    build::model(graph(vec![x, one], nodes, vec![untyped("y")]), 17).encode_to_vec()
}

#[test]
fn reduced_and_counted_shape_values_past_the_degree_limit() {
    // n^64 * n^64 * n^64 = n^192 > MAX_DIM_DEGREE = 128, whether a
    // ReduceProd folds it from the values or Size counts `big`'s elements.
    let c = case("dim_reduceprod_size_n192");
    let mut prod = node("ReduceProd", &["c"], &["y"]);
    prod.name = Some("prod".into());
    prod.attribute.push(build::int("keepdims", 0));
    let f = c.file("prod.onnx", &three_n64_model(vec![prod]));
    c.rejects(&f, &["prod", "(ReduceProd)", "MAX_DIM_DEGREE"]);
    let mut size = node("Size", &["big"], &["y"]);
    size.name = Some("count".into());
    let g = c.file("size.onnx", &three_n64_model(vec![size]));
    c.rejects(&g, &["count", "(Size)", "MAX_DIM_DEGREE"]);
    // Two of the three: n^128, within the limit, is the size exactly.
    let gather = node("Slice", &["c", "zero", "two"], &["c2"]);
    let prod2 = node("ReduceProd", &["c2"], &["p"]);
    let fill = node("ConstantOfShape", &["p"], &["y"]);
    let model = three_n64_model(vec![gather, prod2, fill]);
    let mut m = c3::onnx::proto::ModelProto::decode(model.as_slice()).unwrap();
    let g = m.graph.as_mut().unwrap();
    g.initializer.push(build::int64_list("zero", &[0]));
    g.initializer.push(build::int64_list("two", &[2]));
    let h = c.file("ok.onnx", &m.encode_to_vec());
    assert_eq!(shape_of_y(&c, &h), r#"["n^128"]"#);
}

/// Concat of `k` inputs `[d_i]` along axis 0: a size `d_1 + ... + d_k`.
fn concat_model(k: usize) -> Vec<u8> {
    let names: Vec<String> = (0..k).map(|i| format!("x{i}")).collect();
    let inputs = names
        .iter()
        .enumerate()
        .map(|(i, n)| value(n, tensor_type(FLOAT, &[&format!("d{i}")])))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut n = node("Concat", &refs, &["y"]);
    n.name = Some("join".into());
    n.attribute.push(build::int("axis", 0));
    build::model(graph(inputs, vec![n], vec![untyped("y")]), 17).encode_to_vec()
}

#[test]
fn dimension_with_more_terms_than_the_limit() {
    // d0 + ... + d1024 has 1,025 terms > MAX_DIM_TERMS = 1,024: an error
    // naming the node.
    let c = case("dim_1025_terms");
    let f = c.file("m.onnx", &concat_model(1025));
    c.rejects(
        &f,
        &["join", "exceeds the limit of 1024 terms", "MAX_DIM_TERMS"],
    );
}

#[test]
fn dimension_with_as_many_terms_as_the_limit() {
    let c = case("dim_1024_terms");
    let f = c.file("m.onnx", &concat_model(1024));
    let dims: Vec<String> = (0..1024).map(|i| format!("d{i}=1")).collect();
    let mut args = vec!["estimate", &f, "--format", "json"];
    for d in &dims {
        args.extend(["--dim", d]);
    }
    let r = c.accepts(&args);
    // Concat reads 1,024 floats and writes 1,024: (1,024 + 1,024) * 4 bytes.
    assert_eq!(
        r["layers"][0]["mread"].as_u64().unwrap() + r["layers"][0]["mwrite"].as_u64().unwrap(),
        8192,
        "{r}"
    );
}

/// A Relu rule with `lets` (name, formula) before its counts.
fn rule_with_lets(lets: &[(String, String)], flops: &str) -> Vec<u8> {
    let mut y = String::from(
        "Relu:\n  category: Activation\n  summary: s\n  doc: d\n  inputs: \"X\"\n  outputs: \"Y\"\n  let:\n",
    );
    for (n, f) in lets {
        y += &format!("    {n}: '{f}'\n");
    }
    y += &format!("  flops: \"{flops}\"\n  mread: \"|X|\"\n  mwrite: \"|Y|\"\n");
    y.into_bytes()
}

#[test]
fn fill_of_fills() {
    // 4096 copies of a 4096-element list: 16M elements, refused before
    // any copy is made.
    pack_case(
        "values_fill_of_fills",
        &relu_rule("len(fill(4096, fill(4096, 1)))"),
        2,
        &[
            ":7:11:",
            "fill: 4096 copies of a value of size 4096",
            "MAX_VALUE_SIZE",
        ],
    );
}

#[test]
fn string_doubled_by_lets() {
    // s0 has 8 bytes, s_k = s_(k-1) + s_(k-1) has 8 * 2^k: s10 = 8192 bytes
    // passes MAX_VALUE_SIZE = 4096 at its own line (the 12th of the file).
    let mut lets = vec![("s0".to_string(), "\"abcdefgh\"".to_string())];
    for i in 1..=40 {
        lets.push((format!("s{i}"), format!("s{} + s{}", i - 1, i - 1)));
    }
    pack_case(
        "values_string_doubling",
        &rule_with_lets(&lets, "|X|"),
        2,
        &[":18:11:", "let s10", "MAX_VALUE_SIZE"],
    );
}

#[test]
fn list_literal_of_a_large_let_many_times() {
    // 1500 reads of a 4096-element list: 6M elements to copy, stopped by
    // the work limit after 64 of them.
    let all = vec!["a"; 1500].join(",");
    let lets = vec![
        ("a".to_string(), "fill(4096, 1)".to_string()),
        ("b".to_string(), format!("[{all}]")),
    ];
    pack_case(
        "values_list_of_lets",
        &rule_with_lets(&lets, "len(b)"),
        2,
        &[
            ":9:9:",
            "exceeds the limit of 262144 units of work (MAX_EVAL_WORK)",
        ],
    );
}

#[test]
fn lists_nested_by_lets() {
    let mut lets = vec![("l0".to_string(), "[1]".to_string())];
    for i in 1..=20 {
        lets.push((format!("l{i}"), format!("[l{}]", i - 1)));
    }
    pack_case(
        "values_nested_lists",
        &rule_with_lets(&lets, "len(l20)"),
        2,
        &["let l8", "MAX_VALUE_DEPTH"],
    );
}

#[test]
fn values_within_the_limits_count() {
    // len(fill(4096, 1)) + sum(fill(64, 2)) = 4096 + 128 = 4224 FLOPs.
    let c = case("values_within_limits");
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    std::fs::create_dir_all(c.path("pack")).unwrap();
    c.file(
        "pack/a.yaml",
        &relu_rule("len(fill(4096, 1)) + sum(fill(64, 2))"),
    );
    let pack = c.path("pack");
    let r = c.accepts(&[
        "estimate",
        &trace,
        "--rules",
        pack.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(r["layers"][0]["flops"], 4224, "{r}");
}

/// A pack folder holding `files` (name, text); runs estimate with it.
fn pack_files(name: &'static str, files: &[(&str, String)]) -> (crate::hostile::Case, Vec<String>) {
    let c = case(name);
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    std::fs::create_dir_all(c.path("pack")).unwrap();
    for (f, text) in files {
        c.file(&format!("pack/{f}"), text.as_bytes());
    }
    let pack = c.path("pack").to_str().unwrap().to_string();
    let args = vec!["estimate".into(), trace, "--rules".into(), pack];
    (c, args)
}

/// A Relu rule whose lets are `v0 = |X|`, `v_k = v_(k-1) + 1` up to `v_last`.
fn counting_lets(last: usize) -> String {
    let mut lets = vec![("v0".to_string(), "|X|".to_string())];
    for i in 1..=last {
        lets.push((format!("v{i}"), format!("v{} + 1", i - 1)));
    }
    String::from_utf8(rule_with_lets(&lets, &format!("v{last}"))).unwrap()
}

#[test]
fn as_many_lets_in_one_rule_as_the_limit_load_and_count() {
    // MAX_RULE_LETS = 256 lets, v0..v255: v255 = |X| + 255 = 6 + 255 = 261 FLOPs.
    let last = c3::rules::compile::MAX_RULE_LETS - 1;
    let (c, mut args) = pack_files("load_256_lets", &[("a.yaml", counting_lets(last))]);
    args.extend(["--format".into(), "json".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = c.accepts(&args);
    assert_eq!(r["layers"][0]["flops"], 261, "{r}");
}

#[test]
fn more_lets_in_one_rule_than_the_limit() {
    // 3001 lets: refused at the 257th, v256, on line 8 + 256 = 264 (the
    // lets start on line 8), before any formula is compiled.
    let (c, args) = pack_files("load_3001_lets", &[("a.yaml", counting_lets(3000))]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    c.fails(
        &args,
        2,
        &[
            "a.yaml:264:11:",
            "rule Relu: 3001 let names, which exceeds the limit of 256 per rule (MAX_RULE_LETS)",
        ],
    );
}

/// A devices file of `n` devices `d0`..: 1e12 fp32 operations/s, 1e11 bytes/s.
fn devices_file(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "d{i}:\n  name: D{i}\n  peak: {{fp32: 1.0e12}}\n  bandwidth: 1.0e11\n  source: s\n"
            )
        })
        .collect()
}

/// Devices a pack may add to the built-in catalog within MAX_DEVICES.
fn devices_left() -> usize {
    let builtin = c3::rules::devices::Catalog::builtin().unwrap().len();
    c3::rules::devices::MAX_DEVICES - builtin
}

#[test]
fn as_many_devices_as_the_limit_load() {
    let n = devices_left();
    let (c, mut args) = pack_files(
        "load_max_devices",
        &[
            ("a.yaml", String::from_utf8(relu_rule("|X|")).unwrap()),
            ("devices.yaml", devices_file(n)),
        ],
    );
    // The last one is found: 6 FLOPs at 1e12/s = 6e-12 s of compute.
    let last = format!("d{}", n - 1);
    args.extend([
        "--device".into(),
        last.clone(),
        "--format".into(),
        "json".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = c.accepts(&args);
    assert!(r.to_string().contains(&format!("D{}", n - 1)), "{r}");
}

#[test]
fn more_devices_than_the_limit() {
    // 5000 devices: refused at the first one past MAX_DEVICES = 1024 with
    // the built-in ones, `d{left}`, on line 5 * left + 1 (five lines each).
    let left = devices_left();
    let (c, args) = pack_files(
        "load_5000_devices",
        &[
            ("a.yaml", String::from_utf8(relu_rule("|X|")).unwrap()),
            ("devices.yaml", devices_file(5000)),
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let at = format!("devices.yaml:{}:1:", 5 * left + 1);
    let total = format!("{} devices in force", 5000 + 1024 - left);
    c.fails(
        &args,
        2,
        &[&at, &total, "exceeds the limit of 1024 (MAX_DEVICES)"],
    );
}

fn fusions_case(name: &'static str, fusions: String, want: &[&str]) {
    let (c, args) = pack_files(
        name,
        &[
            ("a.yaml", String::from_utf8(relu_rule("|X|")).unwrap()),
            ("fusions.yaml", fusions),
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    c.fails(&args, 2, want);
}

#[test]
fn too_many_fusion_patterns() {
    let f: String = (0..=256)
        .map(|i| format!("f{i}:\n  chain: [Conv, Relu]\n  doc: d\n"))
        .collect();
    fusions_case(
        "fusions_too_many",
        f,
        &["fusions.yaml", "exceeds the limit of 256 (MAX_FUSIONS)"],
    );
}

#[test]
fn fusion_step_with_too_many_alternatives() {
    let alts: Vec<String> = (0..65).map(|i| format!("Op{i}")).collect();
    let f = format!("x:\n  chain: [Conv, {}]\n  doc: d\n", alts.join("|"));
    fusions_case(
        "fusions_too_many_alternatives",
        f,
        &[
            "fusions.yaml:1:1",
            "exceeds the limit of 64 alternatives (MAX_FUSION_ALTERNATIVES)",
        ],
    );
}

#[test]
fn fusion_chain_too_long() {
    let f = format!("y:\n  chain: [{}]\n  doc: d\n", vec!["Relu"; 17].join(", "));
    fusions_case(
        "fusions_chain_too_long",
        f,
        &[
            "fusions.yaml:1:1",
            "exceeds the limit of 16 steps (MAX_FUSION_STEPS)",
        ],
    );
}
