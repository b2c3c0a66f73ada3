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
            body.push(NodeProto {
                domain: Some("local".into()),
                ..build::node(&format!("f{}", i + 1), &["a"], &[out])
            });
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
        m.functions.push(FunctionProto {
            name: Some(format!("f{i}")),
            domain: Some("local".into()),
            input: vec!["a".into()],
            output: vec!["b".into()],
            node: body,
            opset_import: vec![opset("", 17), opset("local", 1)],
            ..Default::default()
        });
    }
    m.graph.as_mut().unwrap().node = vec![NodeProto {
        domain: Some("local".into()),
        ..build::node("f0", &["x"], &["y"])
    }];
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
        let call = |from: &str, to: &str| NodeProto {
            domain: Some("local".into()),
            ..build::node(&callee, &[from], &[to])
        };
        let body = match i + 1 < levels {
            true => vec![call("a", "t"), call("t", "b")],
            false => vec![build::node("Relu", &["a"], &["b"])],
        };
        m.functions.push(FunctionProto {
            name: Some(format!("f{i}")),
            domain: Some("local".into()),
            input: vec!["a".into()],
            output: vec!["b".into()],
            node: body,
            opset_import: vec![opset("", 17), opset("local", 1)],
            ..Default::default()
        });
    }
    m.graph.as_mut().unwrap().node = vec![NodeProto {
        domain: Some("local".into()),
        ..build::node("f0", &["x"], &["y"])
    }];
    let f = c.file("m.onnx", &m.encode_to_vec());
    c.rejects(
        &f,
        &[
            "functions expand the model to 786431 nodes",
            "EXPANSION_BASE_BYTES, EXPANSION_BYTES_PER_BYTE",
        ],
    );
}
