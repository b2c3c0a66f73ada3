//! The `c3` binary end to end: exit codes, one-line errors, packs, explain, docs.

use std::path::{Path, PathBuf};

use crate::common::cli::{C3, ROOT, Run};

const RESNET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/resnet50.trace.json");

fn c3(args: &[&str]) -> Run {
    C3::new().args(args).run()
}

fn c3_in(dir: &Path, args: &[&str]) -> Run {
    C3::new().args(args).dir(dir).run()
}

/// A fresh folder for one test, under cargo's target dir.
fn scratch(name: &str) -> PathBuf {
    crate::common::cli::scratch("cli", name)
}

/// A pack folder holding one rule file with the given text.
fn pack(name: &str, yaml: &str) -> PathBuf {
    crate::common::cli::pack_folder("cli", name, &[("pack.yaml", yaml)])
}

const RELU_HEAD: &str =
    "Relu:\n  category: Activation\n  summary: s\n  doc: d\n  inputs: \"X\"\n  outputs: \"Y\"\n";

/// Runs `c3 estimate` with a pack and returns (exit code, first stderr line).
fn estimate_with_pack(name: &str, yaml: &str) -> (i32, String) {
    let dir = pack(name, yaml);
    let r = c3(&[
        "estimate",
        RESNET,
        "--rules",
        dir.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let line = r.stderr.lines().next().unwrap_or("").to_string();
    let shown = line.replace(&format!("{}/", dir.display()), "");
    (r.code, shown)
}

#[test]
fn estimate_json_has_exact_totals() {
    let r = c3(&["estimate", RESNET, "--format", "json"]);
    r.ok();
    let j = r.json();
    assert_eq!(j["total"]["flops"], 3_884_871_583u64);
    assert_eq!(j["total"]["mread"], 269_226_304u64);
    assert_eq!(j["total"]["mwrite"], 143_920_960u64);
    assert_eq!(j["total"]["mrw"], 413_147_264u64);
    assert_eq!(j["total"]["layers"], 176);
    // The first convolution: 64 x 112 x 112 outputs of a 3 x 7 x 7 window.
    let conv1 = &j["layers"][0];
    assert_eq!(conv1["name"], "Convolution2DFunction-1");
    assert_eq!(conv1["flops"], 64 * 112 * 112 * 3 * 49);
    assert_eq!(conv1["attrs"]["k"], serde_json::json!([7, 7]));
    assert_eq!(
        conv1["inputs"][0]["shape"],
        serde_json::json!([1, 3, 224, 224])
    );
    assert_eq!(j["summary"][0]["op"], "Conv");
    assert_eq!(j["summary"][0]["layers"], 53);
    assert_eq!(j["unsupported"], serde_json::json!([]));
}

#[test]
fn no_fma_doubles_multiply_adds() {
    let j = c3(&["estimate", RESNET, "--format", "json", "--no-fma"]).json();
    // Bias-free convolutions count 2k - 1 per output; see tests/networks.rs.
    assert_eq!(j["total"]["flops"], 7_743_646_647u64);
}

#[test]
fn pack_overriding_relu_moves_the_total_by_exactly_its_change() {
    let base = c3(&["estimate", RESNET, "--format", "json"]).json();
    let relu = base["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["op"] == "Relu")
        .unwrap()
        .clone();
    // 49 ReLU layers over 9,081,856 elements in all (the article's 9.082 MFLOPs).
    assert_eq!(relu["layers"], 49);
    assert_eq!(relu["flops"], 9_081_856u64);
    let dir = pack(
        "relu_pack",
        &format!("{RELU_HEAD}  flops: \"3 * |X|\"\n  mread: \"|X|\"\n  mwrite: 0\n"),
    );
    let r = c3(&[
        "estimate",
        RESNET,
        "--format",
        "json",
        "--rules",
        dir.to_str().unwrap(),
    ]);
    r.ok();
    let j = r.json();
    // Three FLOPs per element instead of one: +2 * 9,081,856; writes drop by
    // 9,081,856 float32 elements.
    assert_eq!(j["total"]["flops"], 3_884_871_583u64 + 2 * 9_081_856);
    assert_eq!(j["total"]["mwrite"], 143_920_960u64 - 4 * 9_081_856);
    assert_eq!(j["total"]["mread"], base["total"]["mread"]);

    // `c3 rules list` names the pack file as Relu's source; others stay built-in.
    let list = c3(&[
        "rules",
        "list",
        "--format",
        "json",
        "--rules",
        dir.to_str().unwrap(),
    ])
    .json();
    let entry = |op: &str| {
        list["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["op"] == op)
            .unwrap()
            .clone()
    };
    assert_eq!(
        entry("Relu")["source"],
        format!("{}:1", dir.join("pack.yaml").display())
    );
    assert_eq!(entry("Relu")["builtin"], false);
    assert_eq!(entry("Conv")["source"], "rules/conv.yaml:4");
    assert_eq!(entry("Conv")["category"], "Connection");
}

#[test]
fn rules_list_json_describes_every_builtin_rule() {
    // Issue 4: `[{"op", "domain", "category", "source"}...]`, one per rule.
    let r = c3(&["rules", "list", "--format", "json"]);
    r.ok();
    let list = r.json();
    // Issue 13: the list follows `meta`.
    assert_eq!(list["meta"]["options"]["packs"], serde_json::json!([]));
    let list = list["rules"].as_array().expect("a JSON array");
    let rules = c3::rules::RuleSet::builtin().unwrap();
    assert_eq!(list.len(), rules.iter().count());
    let mut seen = std::collections::BTreeSet::new();
    for e in list {
        for key in ["op", "domain", "category", "source"] {
            let v = e[key].as_str().unwrap_or_else(|| panic!("{key} in {e}"));
            assert!(!v.is_empty(), "empty {key} in {e}");
        }
        let (op, domain) = (e["op"].as_str().unwrap(), e["domain"].as_str().unwrap());
        // Built-in rules say where they come from: rules/<family>.yaml:<line>.
        let source = e["source"].as_str().unwrap();
        let (file, line) = source.rsplit_once(':').unwrap();
        assert!(file.starts_with("rules/") && file.ends_with(".yaml"), "{e}");
        assert!(line.parse::<u32>().is_ok_and(|l| l > 0), "{e}");
        assert!(rules.get(domain, op).is_some(), "{e} is not a rule");
        assert!(seen.insert((domain, op)), "{e} listed twice");
    }
}

#[test]
fn broken_rule_files_name_the_place() {
    let rest = "  flops: \"|X|\"\n  mread: \"|X|\"\n  mwrite: \"|Y|\"\n";
    // A YAML error.
    let (code, line) = estimate_with_pack("yaml_error", "Relu:\n  category: [unclosed\n");
    assert_eq!(code, 2);
    assert!(line.starts_with("error: pack.yaml:"), "{line}");

    // An unknown field.
    let (code, line) =
        estimate_with_pack("unknown_field", &format!("{RELU_HEAD}{rest}  flopz: 1\n"));
    assert_eq!(code, 2);
    assert!(
        line.starts_with("error: pack.yaml:10:3: unknown field `flopz`"),
        "{line}"
    );

    // A formula syntax error: line 7, column 16 is the `)` after `2 *`.
    let (code, line) = estimate_with_pack(
        "syntax_error",
        &format!("{RELU_HEAD}  flops: \"(2 * ) + |X|\"\n  mread: \"|X|\"\n  mwrite: \"|Y|\"\n"),
    );
    assert_eq!(code, 2);
    assert_eq!(
        line,
        "error: pack.yaml:7:16: syntax error: expected an expression in `(2 * ) + |X|`"
    );

    // An unknown name, pointed at exactly.
    let (code, line) = estimate_with_pack(
        "unknown_name",
        &format!("{RELU_HEAD}  flops: \"2 * |X| + Q\"\n  mread: \"|X|\"\n  mwrite: \"|Y|\"\n"),
    );
    assert_eq!(code, 2);
    assert_eq!(
        line,
        "error: pack.yaml:7:21: unknown name 'Q'; a string is written in double quotes inside the YAML value: '\"Q\"' in `Q`"
    );

    // A pattern that cannot bind: two lists in one tensor.
    let (code, line) = estimate_with_pack(
        "bad_pattern",
        &RELU_HEAD
            .replace("inputs: \"X\"", "inputs: \"X[*A, *B]\"")
            .to_string()
            .replace("outputs: \"Y\"\n", &format!("outputs: \"Y\"\n{rest}")),
    );
    assert_eq!(code, 2);
    assert_eq!(
        line,
        "error: pack.yaml:5:12: pattern 'X' has more than one *list: it cannot bind in `X[*A, *B]`"
    );
    // Formulas that divide by zero or overflow: tests/hostile.rs.
}

#[test]
fn rules_check_validates_a_pack_without_a_model() {
    let good = pack(
        "check_good",
        &format!("{RELU_HEAD}  flops: \"|X|\"\n  mread: \"|X|\"\n  mwrite: \"|Y|\"\n"),
    );
    let r = c3(&["rules", "check", good.to_str().unwrap()]);
    r.ok();
    assert!(
        r.stdout
            .contains("ok, 1 rule(s), 1 overriding rules in force: Relu (overrides category, summary, doc, inputs, outputs, flops, mread, mwrite)"),
        "{}",
        r.stdout
    );

    let bad = pack(
        "check_bad",
        &format!("{RELU_HEAD}  flops: \"|Z|\"\n  mread: 0\n  mwrite: 0\n"),
    );
    let r = c3(&["rules", "check", bad.to_str().unwrap()]);
    r.code(2);
    assert!(
        r.stderr.contains("pack.yaml:7:11: unknown tensor 'Z'"),
        "{}",
        r.stderr
    );
}

#[test]
fn explain_prints_the_rule_and_evaluates_it() {
    let r = c3(&["explain", "Conv"]);
    r.ok();
    let out = r.stdout;
    assert!(
        out.contains("rule:     built-in, rules/conv.yaml:4"),
        "{out}"
    );
    assert!(
        out.contains("inputs:  X[N, C, *S], W[M, Cg, *K], B[M]?"),
        "{out}"
    );
    assert!(out.contains("let window = Cg * prod(K)"), "{out}");

    // ResNet50's first convolution: 64 x 112 x 112 outputs, 3 x 7 x 7 window.
    let r = c3(&[
        "explain",
        "Conv",
        "--in",
        "X=1x3x224x224",
        "--in",
        "W=64x3x7x7",
        "--in",
        "B=64",
        "--in",
        "Y=1x64x112x112",
        "--attr",
        "strides=2,2",
        "--attr",
        "pads=3,3,3,3",
    ]);
    r.ok();
    let out = r.stdout;
    assert!(out.contains("  window = 147\n"), "{out}");
    assert!(out.contains("  flops  = 118013952\n"), "{out}");
    // (150528 + 9408 + 64) float32 elements read, 802816 written.
    assert!(out.contains("  mread  = 640000 bytes\n"), "{out}");
    assert!(out.contains("  mwrite = 3211264 bytes\n"), "{out}");
    assert!(out.contains("  attr s = [2, 2]\n"), "{out}");
    assert!(out.contains("  attr d = [1, 1]\n"), "{out}");

    // FMA off, no bias: (2 * 147 - 1) per output.
    let r = c3(&[
        "explain",
        "Conv",
        "--no-fma",
        "--in",
        "X=1x3x224x224",
        "--in",
        "W=64x3x7x7",
        "--in",
        "Y=1x64x112x112",
        "--attr",
        "strides=2,2",
        "--attr",
        "pads=3,3,3,3",
    ]);
    assert!(
        r.stdout
            .contains(&format!("  flops  = {}\n", 293 * 64 * 112 * 112)),
        "{}",
        r.stdout
    );

    // The pack's rule is explained with its file and line.
    let r = c3(&["explain", "Gemm", "--rules", "chainer"]);
    assert!(
        r.stdout
            .contains("rule:     built-in, rules/packs/chainer/chainer.yaml:"),
        "{}",
        r.stdout
    );
}

#[test]
fn explain_errors_are_usage_errors() {
    let r = c3(&["explain", "NoSuchOp"]);
    r.code(1);
    assert!(
        r.stderr
            .starts_with("error: no rule for operator 'NoSuchOp'"),
        "{}",
        r.stderr
    );
    let r = c3(&["explain", "Relu", "--in", "X=1x3", "--in", "Q=2"]);
    r.code(1);
    assert!(
        r.stderr.contains("--in Q: Relu has no tensor named Q"),
        "{}",
        r.stderr
    );
    // Y is inferred from X, so only a missing X leaves it unknown.
    let r = c3(&["explain", "Conv", "--in", "W=64x3x7x7"]);
    r.code(1);
    assert!(
        r.stderr
            .contains("output Y is inferred from the inputs: add --in X=..."),
        "{}",
        r.stderr
    );
    let r = c3(&["explain", "Conv", "--attr", "stride=2"]);
    r.code(1);
    assert!(
        r.stderr.contains("Conv has no attribute stride"),
        "{}",
        r.stderr
    );
}

#[test]
fn docs_check_accepts_the_committed_details_and_rejects_a_stale_copy() {
    let r = c3(&["docs", "--check"]);
    assert_eq!(
        r.code, 0,
        "DETAILS.md is stale: run `c3 docs`\n{}",
        r.stderr
    );
    let dir = scratch("docs_stale");
    let stale = std::fs::read_to_string(Path::new(ROOT).join("DETAILS.md")).unwrap() + "\nedited\n";
    std::fs::write(dir.join("DETAILS.md"), stale).unwrap();
    let r = c3_in(&dir, &["docs", "--check"]);
    r.code(1);
    assert!(
        r.stderr.contains("DETAILS.md is out of date"),
        "{}",
        r.stderr
    );
    let r = c3_in(&dir, &["docs"]);
    r.code(0);
    assert_eq!(c3_in(&dir, &["docs", "--check"]).code, 0);
}

#[test]
fn unsupported_ops_are_listed_warned_and_strict_fails() {
    let dir = scratch("unsupported");
    let trace = dir.join("t.json");
    std::fs::write(
        &trace,
        r#"{"layers": [
          {"op": "Relu", "inputs": [{"shape": [2, 3]}], "outputs": [{"shape": [2, 3]}]},
          {"op": "FancyOp", "name": "fancy", "inputs": [{"shape": [2, 3]}], "outputs": [{"shape": [2, 3]}]}]}"#,
    )
    .unwrap();
    let t = trace.to_str().unwrap();
    let r = c3(&["estimate", t, "--format", "json"]);
    r.code(0);
    assert!(
        r.stderr.contains(
            "warning: 1 layer(s) are not counted (see the unsupported list): FancyOp (1)"
        )
    );
    assert_eq!(
        r.json()["unsupported"],
        serde_json::json!([{"name": "fancy", "op": "FancyOp", "reason": "no cost rule"}])
    );
    assert_eq!(r.json()["total"]["flops"], 6);
    let r = c3(&["estimate", t, "--format", "md"]);
    assert!(r.stdout.contains("- fancy (FancyOp)"), "{}", r.stdout);
    let r = c3(&["estimate", t, "--strict"]);
    r.code(3);
    assert!(
        r.stderr
            .contains("1 layer(s) are not counted (FancyOp (1))"),
        "{}",
        r.stderr
    );
}

#[test]
fn bad_inputs_fail_with_one_line_and_exit_2() {
    // Malformed files (empty, truncated, overflowing...): tests/hostile.rs.
    let dir = scratch("bad_inputs");
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "rank.json",
            br#"{"layers": [{"op": "Conv", "inputs": [{"shape": [8]}, {"shape": [4, 3, 3, 3]}], "outputs": [{"shape": [1, 4, 6, 6]}]}]}"#,
            "layer 'Conv-1' (Conv): input X: pattern X[N, C, *S] needs rank at least 2",
        ),
        (
            "mismatch.json",
            br#"{"layers": [{"op": "Conv", "inputs": [{"shape": [1, 3, 8, 8]}, {"shape": [4, 3, 3, 3]}, {"shape": [5]}], "outputs": [{"shape": [1, 4, 6, 6]}]}]}"#,
            "input B: 'M' is 5 here but 4 elsewhere",
        ),
        (
            "symbol.json",
            br#"{"layers": [{"op": "Relu", "inputs": [{"shape": ["batch", 3]}], "outputs": [{"shape": ["batch", 3]}]}]}"#,
            "sizes unknown until bound: batch; bind them with --dim batch=N",
        ),
    ];
    for (name, bytes, want) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let r = c3(&["estimate", path.to_str().unwrap()]);
        let err = r.one_line_error(2);
        assert!(err.contains(want), "{name}: {err}");
    }
    let r = c3(&["estimate", "no/such/file.json"]);
    r.code(2);
    // --dim binds the symbol.
    let r = c3(&[
        "estimate",
        dir.join("symbol.json").to_str().unwrap(),
        "--dim",
        "batch=4",
        "--format",
        "json",
    ]);
    r.ok();
    assert_eq!(r.json()["total"]["flops"], 12);
}

#[test]
fn usage_errors_exit_1() {
    assert_eq!(c3(&["estimate"]).code, 1);
    assert_eq!(c3(&["estimate", RESNET, "--unit", "Q"]).code, 1);
    assert_eq!(c3(&["estimate", RESNET, "--digits", "11"]).code, 1);
    assert_eq!(c3(&["estimate", RESNET, "--columns", "nope"]).code, 1);
    assert_eq!(c3(&["estimate", RESNET, "--rules", "no-such-pack"]).code, 1);
    assert_eq!(c3(&["--help"]).code, 0);
}

#[test]
fn output_file_and_columns() {
    let dir = scratch("output_file");
    let out = dir.join("r.csv");
    let r = c3(&[
        "estimate",
        RESNET,
        "--format",
        "csv",
        "--unit",
        "none",
        "--columns",
        "name,flops,flops%",
        "--layers",
        "-o",
        out.to_str().unwrap(),
    ]);
    r.ok();
    let text = std::fs::read_to_string(out).unwrap();
    let mut lines = text.lines();
    // CSV headers are the --columns names (issue 13).
    assert_eq!(lines.next(), Some("name,flops,flops%"));
    assert_eq!(
        lines.next(),
        Some("Convolution2DFunction-1,118013952,3.038")
    );
    assert_eq!(text.lines().last(), Some("total,3884871583,100.000"));
}

#[test]
fn attention_full_counts_the_whole_square() {
    // Causal self-attention, one head of d = 4 over 3 tokens.
    let run = |mode: &str| {
        c3(&[
            "explain",
            "Attention",
            "--attention",
            mode,
            "--in",
            "Q=1x1x3x4",
            "--in",
            "K=1x1x3x4",
            "--in",
            "V=1x1x3x4",
            "--in",
            "Y=1x1x3x4",
            "--attr",
            "is_causal=1",
        ])
    };
    // masked: n = 1 + 2 + 3 = 6 pairs over 3 rows,
    // 6 * 4 + (6 + 18 - 3) + 6 * 4 = 69.
    let r = run("masked");
    r.ok();
    assert!(r.stdout.contains("  flops  = 69\n"), "{}", r.stdout);
    // full: n = 3 * 3 = 9 pairs, 9 * 4 + (9 + 27 - 3) + 9 * 4 = 105.
    let r = run("full");
    assert!(r.stdout.contains("  flops  = 105\n"), "{}", r.stdout);
    let r = run("square");
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("--attention"), "{}", r.stderr);
}
