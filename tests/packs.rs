//! Packs as a rule author writes them: a rule that gives only what it
//! changes, keys that must name operators, and the nearest name suggested
//! for every unknown one.

use crate::common::cli::{C3, ROOT, pack_folder, scratch};

fn pack(name: &str, yaml: &str) -> String {
    pack_folder("packs", name, &[("rules.yaml", yaml)])
        .display()
        .to_string()
}

fn resnet50() -> String {
    format!("{ROOT}/examples/onnx/light_resnet50.onnx")
}

fn conv_row(args: &[&str]) -> Vec<u64> {
    let out = C3::new()
        .args(["estimate", &resnet50(), "--summary", "--format", "csv"])
        .args(args)
        .run()
        .ok()
        .stdout
        .clone();
    let line = out
        .lines()
        .find(|l| l.starts_with("Conv,"))
        .unwrap()
        .to_string();
    line.split(',')
        .skip(1)
        .take(5)
        .map(|v| v.parse().unwrap())
        .collect()
}

#[test]
fn a_rule_that_gives_only_flops_keeps_the_rest_of_the_rule_it_overrides() {
    let p = pack(
        "flops_only",
        "Conv:\n  flops: \"2 * |Y| * window\"\n  doc: |\n    Every multiply-add as two.\n",
    );
    let base = conv_row(&[]);
    let over = conv_row(&["--rules", &p]);
    // 53 layers; FLOPs doubled (4,087,136,256 multiply-adds, bias adds
    // dropped: all convolutions of this export have no bias), bytes as the
    // built-in rule counts them.
    assert_eq!(base[0], 53);
    assert_eq!(over[1], 2 * 4_087_136_256);
    assert_eq!(over[2..], base[2..]);
    let check = C3::new()
        .args(["rules", "check", &p])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(
        check.contains("1 rule(s), 1 overriding rules in force: Conv (overrides doc, flops)"),
        "{check}"
    );
    let explain = C3::new()
        .args(["explain", "Conv", "--rules", &p])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(
        explain.contains("fields:   doc, flops from the pack; category, summary, inputs, outputs, attrs, let, mread, mwrite, class, params, backward from built-in rules/conv.yaml:"),
        "{explain}"
    );
    assert!(explain.contains("Every multiply-add as two."), "{explain}");
    // The backward it keeps is the built-in one.
    assert!(explain.contains("backward ∂W"), "{explain}");
}

#[test]
fn a_rule_that_restates_its_patterns_takes_only_the_required_fields() {
    let p = pack(
        "restated",
        "Conv:\n  inputs: \"X[N, C, *S], W[M, Cg, *K], B[M]?\"\n  let:\n    window: \"Cg * prod(K)\"\n  flops: \"|Y| * window\"\n",
    );
    let explain = C3::new()
        .args(["explain", "Conv", "--rules", &p])
        .run()
        .ok()
        .stdout
        .clone();
    // mread and mwrite are the built-in ones; the backward is not taken.
    assert!(explain.contains("mread  = |X| + |W| + |B|"), "{explain}");
    assert!(
        explain.contains("backward: the product default"),
        "{explain}"
    );
}

#[test]
fn a_new_op_gives_every_required_field() {
    let p = pack(
        "new_op",
        "Frob:\n  domain: com.example\n  category: Math\n  flops: \"|X|\"\n",
    );
    let line = C3::new()
        .args(["rules", "check", &p])
        .run()
        .stderr
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(
        line.contains("rule Frob: no rule in force for it to take summary, doc, inputs, outputs, mread, mwrite from"),
        "{line}"
    );
}

#[test]
fn a_key_that_is_no_operator_is_an_error_that_names_the_nearest() {
    let p = pack("lower_case", "conv:\n  flops: \"1\"\n");
    for args in [vec!["rules", "check", &p], vec!["estimate", "--rules", &p]] {
        let mut args = args;
        let model = resnet50();
        if args[0] == "estimate" {
            args.insert(1, &model);
        }
        let r = C3::new().args(&args).run();
        r.code(2);
        assert!(
            r.stderr
                .contains("conv: no operator 'conv' in ai.onnx (did you mean 'Conv'?); a custom operator gives its domain"),
            "{}",
            r.stderr
        );
    }
    // Declared custom: accepted.
    let p = pack(
        "custom",
        "conv:\n  domain: com.example\n  category: Math\n  summary: s\n  doc: d\n  inputs: \"X\"\n  outputs: \"Y\"\n  flops: \"|X|\"\n  mread: \"|X|\"\n  mwrite: \"|Y|\"\n",
    );
    let out = C3::new()
        .args(["rules", "check", &p])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(out.contains("com.example::conv (new)"), "{out}");
}

#[test]
fn unknown_names_suggest_the_nearest_known_one() {
    let p = pack("typo", "Conv:\n  flops: \"prd(K) * |Y|\"\n");
    let r = C3::new().args(["rules", "check", &p]).run();
    assert!(
        r.stderr
            .contains("unknown function 'prd'; did you mean 'prod'?"),
        "{}",
        r.stderr
    );
    let p = pack("string", "Conv:\n  flops: \"auto_pad == NOTSET ? 1 : 2\"\n");
    let r = C3::new().args(["rules", "check", &p]).run();
    assert!(
        r.stderr.contains("unknown name 'NOTSET'; a string is written in double quotes inside the YAML value: '\"NOTSET\"'"),
        "{}",
        r.stderr
    );
    // Written as explain prints it, the string works.
    let p = pack(
        "string_ok",
        "Conv:\n  flops: 'auto_pad == \"NOTSET\" ? |Y| : 0'\n",
    );
    C3::new().args(["rules", "check", &p]).run().ok();
    let e = C3::new()
        .args(["estimate", &resnet50(), "--device", "h10"])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(e.contains("unknown device; did you mean 'h100'?"), "{e}");
    let e = C3::new()
        .args(["estimate", &resnet50(), "--columns", "name,flop"])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(e.contains("did you mean 'flops'?"), "{e}");
}

#[test]
fn a_packs_page_renders_its_rules_and_what_each_overrides() {
    let p = pack(
        "page",
        "Conv:\n  flops: \"2 * |Y| * window\"\n  doc: |\n    Every multiply-add as two.\n",
    );
    let dir = scratch("packs", "page_out");
    let page = dir.join("PACK.md");
    let page = page.to_str().unwrap();
    let r = C3::new().args(["docs", "--rules", &p, "-o", page]).run();
    r.ok();
    let text = std::fs::read_to_string(page).unwrap();
    assert!(text.contains("### Conv"), "{text}");
    assert!(
        text.contains("Overrides the built-in rule in `rules/conv.yaml:"),
        "{text}"
    );
    assert!(text.contains("gives doc, flops; takes category"), "{text}");
    assert!(
        text.contains("$2 \\cdot \\lvert Y \\rvert \\cdot \\mathit{window}$"),
        "{text}"
    );
    // Only the pack's rules: no other heading of a rule.
    assert_eq!(text.matches("\n### ").count(), 1, "{text}");
    // Written again: c3 knows its own page, and says nothing changed.
    let r = C3::new().args(["docs", "--rules", &p, "-o", page]).run();
    r.ok();
    assert!(r.stderr.contains("nothing changed"), "{}", r.stderr);
    C3::new()
        .args(["docs", "--rules", &p, "-o", page, "--check"])
        .run()
        .ok();
    // A changed rule is named, by --check and when written.
    std::fs::write(
        format!("{p}/rules.yaml"),
        "Conv:\n  flops: \"3 * |Y| * window\"\n",
    )
    .unwrap();
    let e = C3::new()
        .args(["docs", "--rules", &p, "-o", page, "--check"])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(e.contains("(first difference: Conv)"), "{e}");
    let r = C3::new().args(["docs", "--rules", &p, "-o", page]).run();
    r.ok();
    assert!(r.stderr.contains("1 rule(s) changed: Conv"), "{}", r.stderr);
}

/// Every line of a table's rows, cell by cell (the columns between `┆`).
fn cells(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .filter(|l| l.starts_with('│'))
        .map(|l| {
            l.trim_matches('│')
                .split('┆')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn at_80_columns_names_a_user_types_are_never_cut_or_wrapped() {
    let devices = C3::new()
        .args(["devices"])
        .env("COLUMNS", "80")
        .run()
        .ok()
        .stdout
        .clone();
    assert!(
        devices.lines().all(|l| l.chars().count() <= 80),
        "{devices}"
    );
    let keys: Vec<String> = cells(&devices)
        .into_iter()
        .map(|r| r[0].clone())
        .filter(|k| !k.is_empty() && k != "Device")
        .collect();
    // Each key whole on its line: the Name column wraps instead.
    for key in [
        "jetson-agx-orin",
        "jetson-orin-nano-super",
        "a100-40gb",
        "h100-sxm",
    ] {
        assert!(
            keys.iter().any(|k| k == key),
            "{key} in {keys:?}\n{devices}"
        );
    }
    // A diff's summary keeps whole op names, giving up A's columns first.
    let diff = C3::new()
        .args([
            "diff",
            &resnet50(),
            "--b-rules",
            "fused",
            "--summary",
            "--format",
            "table",
        ])
        .env("COLUMNS", "80")
        .run()
        .ok()
        .stdout
        .clone();
    let ops: Vec<String> = cells(&diff).into_iter().map(|r| r[0].clone()).collect();
    assert!(ops.iter().any(|o| o == "BatchNormalization"), "{diff}");
    assert!(!diff.contains('…'), "{diff}");
    // --changed: only the types whose figures differ, and the total.
    let changed = C3::new()
        .args([
            "diff",
            &resnet50(),
            "--b-rules",
            "fused",
            "--summary",
            "--format",
            "csv",
            "--changed",
        ])
        .run()
        .ok()
        .stdout
        .clone();
    let rows: Vec<&str> = changed
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        rows,
        ["Conv", "BatchNormalization", "Relu", "Sum", "total"],
        "{changed}"
    );
    // With training's columns too, op names stay whole: columns go first.
    let t = C3::new()
        .args([
            "estimate",
            &resnet50(),
            "--training",
            "--top",
            "3",
            "--sort",
            "flops",
            "--format",
            "table",
        ])
        .env("COLUMNS", "80")
        .run()
        .ok()
        .stdout
        .clone();
    let ops: Vec<String> = cells(&t).into_iter().map(|r| r[1].clone()).collect();
    assert!(ops.iter().filter(|o| *o == "Conv").count() >= 3, "{t}");
    assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
}

#[test]
fn help_and_usage_errors_read_cleanly() {
    let help = C3::new()
        .args(["estimate", "--help"])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(!help.contains(".rs`"), "{help}");
    let line = C3::new()
        .args(["estimate"])
        .run()
        .one_line_error(1)
        .to_string();
    assert_eq!(
        line,
        "error: the following required arguments were not provided: <MODEL>"
    );
}

#[test]
fn the_module_tree_groups_layers_by_name_and_adds_up_to_the_totals() {
    let model = format!("{ROOT}/examples/onnx/gpt_decoder_torchscript.onnx");
    let j = C3::new()
        .args([
            &"estimate".to_string(),
            &model,
            &"--dim".into(),
            &"batch=1".into(),
            &"--dim".into(),
            &"seq=8".into(),
            &"--depth".into(),
            &"2".into(),
            &"--format".into(),
            &"json".into(),
        ])
        .run()
        .json();
    crate::common::schema::assert_valid("estimate.schema.json", &j);
    let tree = j["tree"].as_array().unwrap();
    let layers = j["layers"].as_array().unwrap();
    // The top level's figures add up to the totals: every layer is under
    // exactly one top-level node.
    for key in ["layers", "flops", "mread", "mwrite"] {
        let top: u64 = tree
            .iter()
            .filter(|n| n["level"] == 1)
            .map(|n| n[key].as_u64().unwrap())
            .sum();
        assert_eq!(top, j["total"][key].as_u64().unwrap(), "{key}");
    }
    // A node is the sum of the layers under its name: /blocks.0/attn/...
    let attn = tree.iter().find(|n| n["path"] == "blocks.0/attn").unwrap();
    let under: Vec<&serde_json::Value> = layers
        .iter()
        .filter(|l| l["name"].as_str().unwrap().starts_with("/blocks.0/attn/"))
        .collect();
    assert_eq!(attn["layers"], under.len());
    let flops: u64 = under.iter().map(|l| l["flops"].as_u64().unwrap()).sum();
    assert_eq!(attn["flops"], flops);
    assert!(flops > 0);
    // Nodes come depth first: blocks.0's children right after it.
    let at = tree.iter().position(|n| n["path"] == "blocks.0").unwrap();
    assert_eq!(
        tree[at + 1]["path"].as_str().unwrap().split('/').next(),
        Some("blocks.0")
    );
    // CSV with --depth is the tree, one row a node, by path.
    let csv = C3::new()
        .args([
            &"estimate".to_string(),
            &model,
            &"--dim".into(),
            &"batch=1".into(),
            &"--dim".into(),
            &"seq=8".into(),
            &"--depth".into(),
            &"2".into(),
            &"--format".into(),
            &"csv".into(),
        ])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(csv.starts_with("path,layers,flops,"), "{csv}");
    assert!(
        csv.lines().any(|l| l.starts_with("blocks.0/attn,")),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), tree.len() + 2, "header, nodes, total");
    // Every other format shows it too.
    for (format, want) in [
        ("md", "### Module tree (depth 2)"),
        ("html", "<h2>Module tree"),
    ] {
        let out = C3::new()
            .args([
                &"estimate".to_string(),
                &model,
                &"--dim".into(),
                &"batch=1".into(),
                &"--dim".into(),
                &"seq=8".into(),
                &"--depth".into(),
                &"2".into(),
                &"--format".into(),
                &format.to_string(),
            ])
            .run()
            .ok()
            .stdout
            .clone();
        assert!(out.contains(want), "{format}");
        assert!(out.contains("attn"), "{format}");
    }
}
