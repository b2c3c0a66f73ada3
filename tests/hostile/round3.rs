//! Issue 53, the third round of hostile inputs: one section per class.
//! Each case is judged like the rest of `hostile::` (one `error:` line, the
//! exit code) and replayed by scripts/hostile.sh.

use super::*;

// ------------------------------------------- item 1: model-local functions

/// Functions `f0` .. `f{depth-1}` of domain `local`: `f{i}` calls
/// `f{i+1}` (an unnamed node writing `out`) then runs `extra` unnamed
/// Relus after it; the last holds one Relu. The main graph calls `f0`.
fn chain_of_calls(depth: usize, out: &str, extra: usize) -> ModelProto {
    let mut m = model(relu_graph());
    m.opset_import.push(opset("local", 1));
    for i in 0..depth {
        let mut body = Vec::new();
        if i + 1 < depth {
            body.push(local_call(build::node(
                &format!("f{}", i + 1),
                &["a"],
                &[out],
            )));
            let mut last = out.to_string();
            for k in 0..extra {
                let next = format!("r{k}");
                body.push(build::node("Relu", &[&last], &[&next]));
                last = next;
            }
            body.push(build::node("Relu", &[&last], &["b"]));
        } else {
            body.push(build::node("Relu", &["a"], &["b"]));
        }
        m.functions.push(local_function(format!("f{i}"), body));
    }
    m.graph.as_mut().unwrap().node = vec![local_call(build::node("f0", &["x"], &["y"]))];
    m
}

#[test]
fn unnamed_calls_nested_60_deep_have_names_that_grow_by_a_level() {
    // Each unnamed call is known by its output `t`; inside a body that
    // output is already `y/t/...`, which was once repeated: names doubled
    // at every level (2^60 bytes). Now a level adds `t/`: the deepest
    // value is y/ + 59 x t/ + b, 123 bytes. A 3 KB model, costed.
    let c = case("onnx_function_unnamed_chain");
    let f = c.file("m.onnx", &chain_of_calls(60, "t", 0).encode_to_vec());
    let report = c.accepts(&["estimate", &f, "--format", "json"]);
    assert_eq!(report["layers"].as_array().unwrap().len(), 60);
    let o = C3::new()
        .args(["shapes", &f, "--format", "json"])
        .kill_after(KILL_AFTER)
        .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let longest = v["tensors"]
        .as_object()
        .unwrap()
        .keys()
        .max_by_key(|k| k.len())
        .unwrap()
        .clone();
    assert_eq!(longest, format!("y/{}b", "t/".repeat(59)));
}

#[test]
fn unnamed_calls_with_long_names_nested_deep_are_refused_by_the_expansion_limit() {
    // 63 levels whose calls write a 10,000-byte name, each body 100 Relus
    // more: every level's names carry the prefix of all above, some 4 GB
    // of names from a 1 MB file. Refused from the call graph, before the
    // first call is expanded.
    let c = case("onnx_function_long_names");
    let long = "n".repeat(10_000);
    let f = c.file("m.onnx", &chain_of_calls(63, &long, 100).encode_to_vec());
    c.rejects(
        &f,
        &[
            "functions expand the model to",
            "bytes of names",
            ": EXPANSION_BASE_BYTES, EXPANSION_BYTES_PER_BYTE)",
        ],
    );
}

#[test]
fn functions_that_double_19_times_are_refused_under_the_node_limit() {
    // f0 calls f1 twice, ... f18 holds a Relu: 786,431 nodes once
    // expanded, under MAX_NODES, from a 1.5 KB file: each expanded node
    // costs about a kilobyte, so the expansion's own limit refuses it.
    let c = case("onnx_function_bomb_under_node_limit");
    let mut m = model(relu_graph());
    m.opset_import.push(opset("local", 1));
    let levels = 19;
    for i in 0..levels {
        let callee = format!("f{}", i + 1);
        let call = |from: &str, to: &str| local_call(build::node(&callee, &[from], &[to]));
        let body = match i + 1 < levels {
            true => vec![call("a", "t"), call("t", "b")],
            false => vec![build::node("Relu", &["a"], &["b"])],
        };
        m.functions.push(local_function(format!("f{i}"), body));
    }
    m.graph.as_mut().unwrap().node = vec![local_call(build::node("f0", &["x"], &["y"]))];
    let f = c.file("m.onnx", &m.encode_to_vec());
    c.rejects(
        &f,
        &[
            "functions expand the model to 786431 nodes",
            "EXPANSION_BASE_BYTES, EXPANSION_BYTES_PER_BYTE",
        ],
    );
}

// ------------------------------------------- item 2: a batch survives

/// A folder `models` with a good model and `bad`, the names of files that
/// are not models (made by the caller).
fn batch_folder(c: &Case) -> PathBuf {
    let dir = c.path("models");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("good.onnx"), relu_model()).unwrap();
    dir
}

#[test]
fn dangling_and_looping_links_in_a_folder_are_reported_on_their_rows() {
    // A link to nowhere, a link to itself and a FIFO, each named .onnx:
    // each is a row with its error (the FIFO unopened), the good model is
    // costed, and the exit code is the worst.
    let c = case("batch_dangling_links");
    let dir = batch_folder(&c);
    std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("dangling.onnx")).unwrap();
    std::os::unix::fs::symlink(dir.join("loop.onnx"), dir.join("loop.onnx")).unwrap();
    let made = Command::new("mkfifo").arg(dir.join("fifo.onnx")).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
    let d = dir.to_str().unwrap();
    c.fails(
        &["estimate", d, "--format", "json"],
        2,
        &["3 of 4 model(s) failed"],
    );
    let o = C3::new()
        .args(["estimate", d, "--format", "json"])
        .kill_after(KILL_AFTER)
        .run();
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let rows = v["models"].as_array().unwrap();
    let error = |name: &str| {
        rows.iter()
            .find(|r| r["model"].as_str().is_some_and(|m| m.ends_with(name)))
            .and_then(|r| r["error"].as_str())
            .unwrap_or_else(|| panic!("no error row for {name}: {v}"))
            .to_string()
    };
    assert!(error("dangling.onnx").contains("No such file"), "{v}");
    assert!(error("loop.onnx").contains("symbolic links"), "{v}");
    assert!(error("fifo.onnx").contains("not a regular file"), "{v}");
    // The good one: its row is its estimate.
    assert_eq!(
        rows.iter().filter(|r| r.get("error").is_none()).count(),
        1,
        "{v}"
    );
}

#[test]
fn a_folder_of_only_dangling_links_fails() {
    let c = case("batch_only_dangling_links");
    let dir = c.path("models");
    std::fs::create_dir_all(&dir).unwrap();
    for n in ["a.onnx", "b.json"] {
        std::os::unix::fs::symlink(dir.join("gone"), dir.join(n)).unwrap();
    }
    c.fails(
        &["estimate", dir.to_str().unwrap()],
        2,
        &["2 of 2 model(s) failed"],
    );
}

/// A chain of `n` Relus: about a kilobyte a node once inferred and costed.
fn relu_chain(n: usize) -> Vec<u8> {
    let names: Vec<String> = (0..=n).map(|i| format!("v{i}")).collect();
    let mut g = relu_graph();
    g.input = vec![sized_value("v0", FLOAT, &[1, 8])];
    g.output = vec![untyped(&names[n])];
    g.node = (0..n)
        .map(|i| build::node("Relu", &[&names[i]], &[&names[i + 1]]))
        .collect();
    model(g).encode_to_vec()
}

#[test]
fn a_batch_survives_a_model_that_ends_its_process() {
    // Under a 150 MB address-space limit, a 200,000-node model runs out of
    // memory and its process aborts; the small model beside it is still
    // reported, its row says how the other's process ended, and the
    // exit code is 2 after one line.
    let c = case("batch_survives_an_abort");
    let big = c.file("big.onnx", &relu_chain(200_000));
    let small = c.file("small.onnx", &relu_model());
    let args = ["estimate", &big, &small, "--format", "json"];
    std::fs::write(c.path("ulimit"), "-v 150000\n").unwrap();
    std::fs::write(c.path("cmd"), args.join("\n") + "\n").unwrap();
    std::fs::write(c.path("expect"), "2\n").unwrap();
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 150000 && exec \"$0\" \"$@\"")
        .arg(crate::common::cli::BIN)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("1 of 2 model(s) failed"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["models"].as_array().unwrap();
    let e = rows[0]["error"].as_str().unwrap();
    assert!(
        e.starts_with("estimating it ended its process (signal 6"),
        "{e}"
    );
    assert!(e.contains("memory allocation of"), "{e}");
    assert_eq!(rows[0]["exit_code"], 2);
    assert_eq!(rows[1]["total"]["flops"], 8, "{}", rows[1]);
}

#[test]
fn a_batch_with_a_function_bomb_reports_the_others() {
    // The bomb of `functions_that_double_at_every_level` beside a good
    // model, as a table: the good row has figures, the bomb's the limit.
    let c = case("batch_function_bomb");
    let good = c.file("good.onnx", &relu_model());
    let bomb = c.file(
        "bomb.onnx",
        &chain_of_calls(63, &"n".repeat(10_000), 100).encode_to_vec(),
    );
    c.fails(
        &["estimate", &good, &bomb, "--format", "csv"],
        2,
        &["1 of 2 model(s) failed"],
    );
    let o = C3::new()
        .args(["estimate", &good, &bomb, "--format", "csv"])
        .run();
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert!(
        lines[1].starts_with(&format!("{good},1,8,")),
        "{}",
        o.stdout
    );
    assert!(
        lines[2].contains("error: functions expand the model"),
        "{}",
        o.stdout
    );
}

// ------------------------------------------------------- item 5: traces

#[test]
fn a_trace_after_65_blanks_is_a_trace() {
    // The kind was decided from the first 64 bytes: all blanks, so ONNX.
    // Now from the first byte that is not one, however far.
    let c = case("trace_after_65_blanks");
    let mut t = vec![b' '; 65];
    t.extend_from_slice(RELU_TRACE.as_bytes());
    let f = c.file("t.json", &t);
    let r = c.accepts(&["estimate", &f, "--format", "json"]);
    assert_eq!(r["layers"].as_array().unwrap().len(), 1);
    // 100,000 blanks, newlines and tabs among them, then a broken trace:
    // a trace's error, not "neither ONNX nor a trace".
    let mut t = b" \n\t\r".repeat(25_000);
    t.extend_from_slice(b"{\"layers\": [{\"op\": \"Relu\", \"nope\": 1}]}");
    let g = c.file("u.json", &t);
    let c2 = case("trace_after_100k_blanks");
    c2.rejects(&g, &["not a valid trace", "unknown field `nope`"]);
}

#[test]
fn only_blanks_are_neither_a_model_nor_a_trace() {
    let c = case("blanks_only");
    let f = c.file("t.json", &[b' '; 100]);
    c.rejects(&f, &["neither an ONNX model nor an operator trace"]);
}

/// A one-layer trace whose layer name is `name_len` bytes, the whole file
/// past 32 MiB when `pad` (so parsed as it is read).
fn trace_with_long_name(name_len: usize, pad: bool) -> Vec<u8> {
    let mut t = b"{\"layers\": [".to_vec();
    if pad {
        t.resize(t.len() + (33 << 20), b' ');
    }
    t.extend_from_slice(b"{\"op\": \"Relu\", \"name\": \"");
    t.resize(t.len() + name_len, b'a');
    t.extend_from_slice(
        b"\", \"inputs\": [{\"shape\": [1, 8]}], \"outputs\": [{\"shape\": [1, 8]}]}]}",
    );
    t
}

#[test]
fn a_200_mb_layer_name_is_refused_while_it_is_read() {
    // Once held five times (1 GB); now refused at its 64 KiB + 1st byte,
    // the string never held. Streamed (past 32 MiB of file), the name
    // starting at byte 35.
    let c = case("trace_200mb_name");
    // Written a megabyte at a time, never held here either.
    let path = c.path("t.json");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    w.write_all(b"{\"layers\": [{\"op\": \"Relu\", \"name\": \"")
        .unwrap();
    let mb = vec![b'a'; 1 << 20];
    for _ in 0..200 {
        w.write_all(&mb).unwrap();
    }
    w.write_all(b"\"}]}").unwrap();
    drop(w);
    let f = path.to_str().unwrap();
    c.rejects(
        f,
        &[
            "byte 35: not a valid trace: a string longer than 65536 bytes",
            "(MAX_TRACE_STRING_BYTES)",
        ],
    );
}

#[test]
fn long_strings_are_refused_in_small_and_streamed_traces_alike() {
    // Read whole (1 MB) and parsed as read (33 MiB of blanks first); an
    // attribute's string and a tensor name too.
    let c = case("trace_long_name_small");
    let f = c.file("t.json", &trace_with_long_name(1 << 20, false));
    c.rejects(&f, &["(MAX_TRACE_STRING_BYTES)"]);
    let c = case("trace_long_name_streamed");
    let f = c.file("t.json", &trace_with_long_name(1 << 20, true));
    c.rejects(&f, &["(MAX_TRACE_STRING_BYTES)"]);
    let c = case("trace_long_attribute");
    let attr = format!(
        "{{\"layers\": [{{\"op\": \"Relu\", \"attrs\": {{\"mode\": \"{}\"}}}}]}}",
        "m".repeat(70_000)
    );
    let f = c.file("t.json", attr.as_bytes());
    c.rejects(&f, &["a string longer than 65536 bytes"]);
    // Escapes count as written, and the limit itself is fine.
    let c = case("trace_name_at_the_limit");
    let at = trace_with_long_name(c3::trace::MAX_TRACE_STRING_BYTES as usize, false);
    let f = c.file("t.json", &at);
    let r = c.accepts(&["estimate", &f, "--format", "json"]);
    assert_eq!(r["layers"][0]["name"].as_str().unwrap().len(), 65_536);
}

#[test]
fn a_warning_is_one_line_cut_like_an_error() {
    // A 1 MB op name with no rule: the warning names it, cut to the
    // error line's length, on one line.
    let c = case("warning_1mb_op");
    let op = "Q".repeat(1 << 20);
    let mut g = relu_graph();
    g.node = vec![NodeProto {
        name: Some("n".into()),
        ..build::node(&op, &["x"], &["y"])
    }];
    let f = c.file("m.onnx", &model(g).encode_to_vec());
    let o = c.run(&["estimate", &f, "--format", "csv"], 0);
    assert_eq!(o.code, 0, "{}", &o.stderr[..o.stderr.len().min(300)]);
    assert_eq!(o.stderr.lines().count(), 1);
    assert!(o.stderr.starts_with("warning: 1 layer(s) are not counted"));
    assert!(o.stderr.len() < 600, "{} bytes", o.stderr.len());
    assert!(o.stderr.contains(" … "), "{}", o.stderr);
    // The trace's op name, at the string limit, likewise.
    let c = case("warning_long_trace_op");
    let t = format!(
        "{{\"layers\": [{{\"op\": \"{}\", \"inputs\": [{{\"shape\": [1]}}]}}]}}",
        "Z".repeat(60_000)
    );
    let f = c.file("t.json", t.as_bytes());
    let o = c.run(&["estimate", &f, "--format", "csv"], 0);
    assert_eq!(o.code, 0, "{}", &o.stderr[..o.stderr.len().min(300)]);
    assert_eq!(o.stderr.lines().count(), 1);
    assert!(o.stderr.len() < 600, "{} bytes", o.stderr.len());
}

// ------------------------------------- item 8: records that are not nodes

/// The Relu model with `n` value_info entries `v0000000`.. of rank 4.
fn with_value_infos(n: usize) -> Vec<u8> {
    let mut fields = Vec::new();
    for i in 0..n {
        let v = sized_value(&format!("v{i:07}"), FLOAT, &[1, 1, 1, 1]);
        fields.extend(ld(13, &v.encode_to_vec()));
    }
    relu_plus(&fields)
}

/// The Relu model followed by more fields of its graph.
fn relu_plus(graph_fields: &[u8]) -> Vec<u8> {
    concat(&[&relu_model(), &ld(7, graph_fields)])
}

#[test]
fn a_million_value_infos_beside_one_node_are_refused_before_decoding() {
    // 999,990 entries of rank 4 (36 MB): under MAX_VALUE_INFOS, 634 MB
    // once decoded and inferred. A graph's values are its nodes': refused
    // by the records a node's names allow, before any is decoded.
    let c = case("onnx_value_infos_one_node");
    let f = c.file("m.onnx", &with_value_infos(999_990));
    c.rejects(
        &f,
        &[
            "the model holds 999992 initializers, graph inputs, outputs and value_info entries for 2 names",
            "(32768 + 2 per name: VALUE_RECORDS_BASE, VALUE_RECORDS_PER_NAME)",
        ],
    );
}

#[test]
fn a_million_unused_initializers_beside_one_node_are_refused() {
    // 1 GB and 4 s once decoded; initializers are records of values too.
    let c = case("onnx_initializers_one_node");
    let t = float_tensor("w", &[1], Some(vec![0; 4])).encode_to_vec();
    let f = c.file("m.onnx", &relu_plus(&ld(5, &t).repeat(500_000)));
    c.rejects(&f, &["500002 initializers", "VALUE_RECORDS_BASE"]);
    // At the limit (32,768 + 2 x 2 names, the input and output declared
    // among them) the model is costed.
    let c = case("onnx_value_infos_at_the_limit");
    let f = c.file("m.onnx", &with_value_infos(32_770));
    c.accepts(&["estimate", &f, "--format", "json"]);
}

// --------------------------- item 7: a file that is not rules is not quoted

/// `c3 estimate` of the Relu trace with `--rules FILE` fails with one line
/// naming FILE; returns the line.
fn rules_error(c: &Case, file: &str) -> String {
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    let args = ["estimate", &trace, "--rules", file];
    c.fails(
        &args,
        2,
        &[file, "not a file of c3 rules, devices or fusions"],
    );
    c.run(&args, 2).stderr
}

#[test]
fn rules_given_etc_passwd_name_it_and_quote_nothing() {
    // Its first line was quoted (`root:x:0:0:...`).
    let c = case("rules_etc_passwd");
    let e = rules_error(&c, "/etc/passwd");
    assert!(e.contains("/etc/passwd:1:1:"), "{e}");
    assert!(!e.contains("root"), "{e}");
}

#[test]
fn rules_given_files_of_secrets_quote_none() {
    // YAML that parses (a config), YAML that does not (an INI file), and
    // a mapping of mappings without a rule's keys: named, with the place,
    // never a word of them, the parser's message (which quotes values)
    // left out too.
    for (name, text) in [
        (
            "rules_yaml_secrets",
            "database:\n  password: hunter2\n  user: admin\n",
        ),
        (
            "rules_ini_secrets",
            "[default]\naws_secret_access_key = hunter2\n",
        ),
        (
            "rules_compose_secrets",
            "services:\n  db:\n    environment: {PASSWORD: hunter2}\n",
        ),
        ("rules_list_secrets", "- hunter2\n- {token: hunter2}\n"),
    ] {
        let c = case(name);
        let f = c.file("config.yaml", text.as_bytes());
        let e = rules_error(&c, &f);
        assert!(!e.contains("hunter2") && !e.contains("password"), "{e}");
        assert!(!e.contains("aws_") && !e.contains("PASSWORD"), "{e}");
    }
}

#[test]
fn a_rule_file_with_a_mistake_is_still_quoted() {
    // A typo on line 2 of a rule (the file parses: its first rule has
    // `flops`) and a YAML error after the first rule: the line is shown.
    let c = case("rules_typo_quoted");
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    let typo = String::from_utf8(relu_rule("|X|"))
        .unwrap()
        .replace("  category:", "  categroy:");
    let f = c.file("typo.yaml", typo.as_bytes());
    c.fails(
        &["estimate", &trace, "--rules", &f],
        2,
        &[
            ":2:",
            "unknown field `categroy`",
            "in `categroy: Activation`",
        ],
    );
    let c = case("rules_syntax_quoted");
    let trace = c.file("t.json", RELU_TRACE.as_bytes());
    let mut broken = relu_rule("|X|");
    broken.extend_from_slice(b"Sigmoid: [unclosed\n");
    let f = c.file("broken.yaml", &broken);
    c.fails(
        &["estimate", &trace, "--rules", &f],
        2,
        &["in `Sigmoid: [unclosed`"],
    );
}
