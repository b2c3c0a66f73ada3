//! Issue 18 items 4 and 5: `c3 diff A B` (and one model under two option
//! sets), and `c3 estimate A B C...` (and a folder), each compared with
//! single runs of `c3 estimate`.

use serde_json::Value;

use crate::common::cli::{C3, scratch};
use crate::common::schema::assert_valid;

const SQUEEZENET: &str = "examples/onnx/light_squeezenet.onnx";
const ALEXNET: &str = "examples/onnx/light_bvlc_alexnet.onnx";
const TRACE: &str = "examples/resnet50.trace.json";
const FIGURES: [&str; 6] = ["layers", "flops", "iops", "mread", "mwrite", "mrw"];

/// `c3 estimate MODEL ARGS --format json`.
fn single(model: &str, args: &[&str]) -> Value {
    C3::new()
        .args(["estimate", model, "--format", "json"])
        .args(args)
        .run()
        .json()
}

/// Asserts a diff row's `a`, `b` and `delta` against two sets of figures
/// (an estimate's `total`, a summary row, or a layer).
fn assert_row(row: &Value, a: &Value, b: &Value, at: &str) {
    for f in FIGURES {
        let (x, y) = (a[f].as_i64().unwrap_or(0), b[f].as_i64().unwrap_or(0));
        if !a.is_null() {
            assert_eq!(row["a"][f].as_i64(), Some(x), "{at}: a.{f}");
        }
        if !b.is_null() {
            assert_eq!(row["b"][f].as_i64(), Some(y), "{at}: b.{f}");
        }
        // delta = b − a, a missing side counting as zero.
        assert_eq!(row["delta"][f].as_i64(), Some(y - x), "{at}: delta.{f}");
    }
}

/// A trace of one Relu on a [1, n] float tensor.
fn relu_trace(dir: &std::path::Path, name: &str, n: u64) -> String {
    let path = dir.join(name);
    let text = format!(
        r#"{{"layers": [{{"op": "Relu", "inputs": [{{"shape": [1, {n}]}}], "outputs": [{{"shape": [1, {n}]}}]}}]}}"#
    );
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn diff_of_two_hand_built_traces_has_a_b_and_b_minus_a() {
    let dir = scratch("compare", "relu");
    let a = relu_trace(&dir, "a.json", 64);
    let b = relu_trace(&dir, "b.json", 256);
    let j = C3::new()
        .args(["diff", &a, &b, "--format", "json"])
        .run()
        .json();
    assert_valid("diff.schema.json", &j);
    let t = &j["total"];
    // Relu: one max per element (n FLOPs), n·4 bytes read and written.
    assert_eq!(t["a"]["flops"], 64);
    assert_eq!(t["b"]["flops"], 256);
    assert_eq!(t["delta"]["flops"], 256 - 64);
    assert_eq!(t["a"]["mrw"], 64 * 4 * 2);
    assert_eq!(t["delta"]["mrw"], (256 - 64) * 4 * 2);
    assert_eq!(j["summary"][0]["op"], "Relu");
    assert_eq!(j["summary"][0]["delta"]["mread"], (256 - 64) * 4);
    // The one layer of each, matched by its name.
    assert_eq!(j["layers"].as_array().unwrap().len(), 1);
    assert_eq!(j["layers"][0]["name"], "Relu-1");
    assert_eq!(j["layers"][0]["delta"]["mwrite"], (256 - 64) * 4);
    assert_eq!(j["a"]["model"], a.as_str());
    assert_eq!(j["b"]["model"], b.as_str());
}

#[test]
fn diff_of_two_models_equals_their_single_runs() {
    let j = C3::new()
        .args(["diff", SQUEEZENET, ALEXNET, "--format", "json"])
        .run()
        .json();
    assert_valid("diff.schema.json", &j);
    let (a, b) = (single(SQUEEZENET, &[]), single(ALEXNET, &[]));
    assert_row(&j["total"], &a["total"], &b["total"], "total");
    // Per type: every type of either model, with its single-run figures.
    let by_op = |e: &Value, op: &str| {
        e["summary"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["op"] == op)
            .cloned()
            .unwrap_or(Value::Null)
    };
    let rows = j["summary"].as_array().unwrap();
    for r in rows {
        let op = r["op"].as_str().unwrap();
        assert_row(r, &by_op(&a, op), &by_op(&b, op), op);
    }
    let types = |e: &Value| e["summary"].as_array().unwrap().len();
    assert!(rows.len() >= types(&a).max(types(&b)));
    // Per layer, matched by name: squeezenet's layers come first, each with
    // its own figures.
    let layers = j["layers"].as_array().unwrap();
    for (i, l) in a["layers"].as_array().unwrap().iter().enumerate() {
        assert_eq!(layers[i]["name"], l["name"]);
        assert_eq!(layers[i]["a"]["flops"], l["flops"], "{}", l["name"]);
    }
}

#[test]
fn one_model_under_two_option_sets_reads_as_b_flags() {
    const GPT: &str = "examples/onnx/gpt_decoder_dynamo.onnx";
    let seq: &[&str] = &["--dim", "batch=1", "--dim", "seq=32"];
    for (model, a_args, b_flag, value, same_as) in [
        (TRACE, &[][..], "--b-weights", "int8", "--weights"),
        (TRACE, &[], "--b-rules", "fused", "--rules"),
        (GPT, seq, "--b-dim", "batch=4", "--dim"),
    ] {
        let j = C3::new()
            .args(["diff", model, b_flag, value, "--format", "json"])
            .args(a_args)
            .run()
            .json();
        assert_valid("diff.schema.json", &j);
        let a = single(model, a_args);
        // B: A's options, then the one B changes (a later --dim wins).
        let b = single(model, &[a_args, &[same_as, value]].concat());
        assert_row(&j["total"], &a["total"], &b["total"], b_flag);
        assert_eq!(j["a"]["model"], j["b"]["model"]);
    }
    // int8 weights: each weight byte is a quarter of float32's, so B reads
    // less and computes the same.
    let j = C3::new()
        .args([
            "diff",
            SQUEEZENET,
            "--b-weights",
            "int8",
            "--format",
            "json",
        ])
        .run()
        .json();
    assert_eq!(j["total"]["delta"]["flops"], 0);
    assert!(j["total"]["delta"]["mread"].as_i64().unwrap() < 0);
    assert_eq!(j["b"]["options"]["weights"], "int8");
}

#[test]
fn diff_renders_every_format_with_the_same_numbers() {
    let run = |format: &str, extra: &[&str]| {
        C3::new()
            .args(["diff", SQUEEZENET, "--b-rules", "fused", "--format", format])
            .args(extra)
            .env("COLUMNS", "80")
            .run()
    };
    let j = run("json", &[]).json();
    let total = &j["total"];
    // CSV: exact integers; the summary's last row is the total.
    let csv = run("csv", &["--summary"]);
    csv.ok();
    let lines: Vec<&str> = csv.stdout.lines().collect();
    let keys: Vec<&str> = lines[0].split(',').collect();
    let last: Vec<&str> = lines.last().unwrap().split(',').collect();
    assert_eq!(last[0], "total");
    for (k, v) in keys.iter().zip(&last) {
        // CSV names the weights' bytes by their column, `weights`; JSON by
        // the total's key, `weight_bytes`.
        let k = &k
            .replace("weights_", "weight_bytes_")
            .replace("live_", "peak_activation_bytes_");
        if let Some(f) = k.strip_suffix("_delta") {
            assert_eq!(v.parse::<i64>().ok(), total["delta"][f].as_i64(), "{k}");
        } else if let Some(f) = k.strip_suffix("_a") {
            assert_eq!(v.parse::<i64>().ok(), total["a"][f].as_i64(), "{k}");
        }
    }
    // The layers' CSV: one row per layer.
    let csv = run("csv", &[]);
    assert_eq!(
        csv.stdout.lines().count(),
        1 + j["layers"].as_array().unwrap().len()
    );
    let md = run("md", &[]);
    md.ok();
    assert!(md.stdout.contains("### Difference by layer (B − A)"));
    assert!(
        md.stdout
            .contains("### Difference by operator type (B − A)")
    );
    assert!(
        md.stdout
            .contains("- B: examples/onnx/light_squeezenet.onnx. Options: rules fused")
    );
    let table = run("table", &["--summary"]);
    table.ok();
    assert!(table.stdout.contains("Difference by operator type (B − A)"));
    for line in table.stdout.lines() {
        assert!(line.chars().count() <= 80, "{line}");
    }
}

#[test]
fn diff_refuses_what_it_cannot_compare_on_one_line() {
    let err = |args: &[&str]| {
        C3::new()
            .arg("diff")
            .args(args)
            .run()
            .one_line_error(1)
            .to_string()
    };
    assert!(err(&[SQUEEZENET]).contains("diff needs a second model"));
    assert!(err(&[SQUEEZENET, SQUEEZENET]).contains("--b-"));
    assert!(err(&[SQUEEZENET, ALEXNET, TRACE]).contains("3 were given"));
    assert!(
        err(&[SQUEEZENET, ALEXNET, "--device", "a100", "--measured", "2ms"]).contains("--measured")
    );
    assert!(err(&[SQUEEZENET, ALEXNET, "--format", "html"]).contains("table, md, csv or json"));
    // A model that cannot be read: exit 2, naming it.
    let dir = scratch("compare", "bad_diff");
    let bad = dir.join("bad.onnx");
    std::fs::write(&bad, b"not a model").unwrap();
    let msg = C3::new()
        .args(["diff", SQUEEZENET])
        .arg(&bad)
        .run()
        .one_line_error(2)
        .to_string();
    assert!(msg.contains("bad.onnx"), "{msg}");
}

#[test]
fn a_batch_s_json_holds_each_model_s_single_run() {
    let j = C3::new()
        .args(["estimate", SQUEEZENET, TRACE, ALEXNET, "--format", "json"])
        .run()
        .json();
    assert_valid("batch.schema.json", &j);
    let models = j["models"].as_array().unwrap();
    assert_eq!(models.len(), 3);
    for (m, path) in models.iter().zip([SQUEEZENET, TRACE, ALEXNET]) {
        assert_valid("estimate.schema.json", m);
        assert_eq!(m, &single(path, &[]), "{path}");
    }
    // --summary applies to each model.
    let j = C3::new()
        .args([
            "estimate",
            SQUEEZENET,
            TRACE,
            "--format",
            "json",
            "--summary",
        ])
        .run()
        .json();
    assert_eq!(j["models"][1], single(TRACE, &["--summary"]));
}

#[test]
fn a_folder_is_its_models_and_a_failing_one_is_reported_on_its_row() {
    let dir = scratch("compare", "folder");
    for m in [SQUEEZENET, ALEXNET] {
        let name = std::path::Path::new(m).file_name().unwrap();
        std::fs::copy(
            crate::common::cli::ROOT.to_string() + "/" + m,
            dir.join(name),
        )
        .unwrap();
    }
    std::fs::write(dir.join("broken.onnx"), b"not a model").unwrap();
    std::fs::write(dir.join("notes.txt"), b"not looked at").unwrap();
    let folder = dir.to_string_lossy().into_owned();
    let run = C3::new()
        .args(["estimate", &folder, "--format", "csv"])
        .run();
    // The worst exit code of the three: the broken model's 2.
    let err = run.one_line_error(2);
    assert!(err.contains("1 of 3 model(s) failed"), "{err}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "model,layers,flops,mread,mwrite,mrw,params,weights,live,note"
    );
    // Sorted by name: broken, alexnet, squeezenet; the broken row holds its
    // error, the others their single runs' totals.
    // (quoted: the message holds a comma)
    assert!(
        lines[1].contains("broken.onnx,,,,,,,,,\"error: "),
        "{}",
        lines[1]
    );
    for (line, model) in lines[2..].iter().zip([ALEXNET, SQUEEZENET]) {
        let t = &single(model, &[])["total"];
        let cells: Vec<&str> = line.split(',').collect();
        for (i, f) in ["layers", "flops", "mread", "mwrite", "mrw"]
            .iter()
            .enumerate()
        {
            assert_eq!(
                cells[i + 1].parse::<u64>().ok(),
                t[f].as_u64(),
                "{model} {f}"
            );
        }
    }
    // JSON: the failed model as {model, error, exit_code}, the others whole.
    let run = C3::new()
        .args(["estimate", &folder, "--format", "json"])
        .run();
    run.code(2);
    let j: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_valid("batch.schema.json", &j);
    assert_eq!(j["models"][0]["exit_code"], 2);
    assert!(j["models"][0]["error"].as_str().unwrap().contains("ONNX"));
    assert_eq!(j["models"][2]["total"], single(SQUEEZENET, &[])["total"]);
    // A model found in the folder is never the output.
    let target = dir.join("light_squeezenet.onnx");
    let msg = C3::new()
        .args(["estimate", &folder, "-o"])
        .arg(&target)
        .run()
        .one_line_error(1)
        .to_string();
    assert!(msg.contains("this is the input"), "{msg}");
    // Table and Markdown: one row per model.
    let md = C3::new()
        .args(["estimate", &folder, "--format", "md"])
        .run();
    md.code(2);
    assert!(md.stdout.contains("### Totals of 3 model(s)"));
    assert_eq!(
        md.stdout.lines().filter(|l| l.starts_with("| ")).count(),
        1 + 3
    );
}

#[test]
fn a_batch_refuses_what_a_table_of_models_cannot_show() {
    let msg = C3::new()
        .args(["estimate", SQUEEZENET, ALEXNET, "--sort", "flops"])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(msg.contains("--sort"), "{msg}");
    let msg = C3::new()
        .args([
            "estimate",
            SQUEEZENET,
            ALEXNET,
            "--summary",
            "--format",
            "md",
        ])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(msg.contains("--summary"), "{msg}");
}

#[test]
fn layers_match_by_name_in_order_and_either_side_may_lack_one() {
    let dir = scratch("compare", "names");
    let layer = |name: &str, op: &str, n: u64| {
        format!(
            r#"{{"op": "{op}", "name": "{name}", "inputs": [{{"shape": [1, {n}]}}], "outputs": [{{"shape": [1, {n}]}}]}}"#
        )
    };
    let write = |file: &str, layers: &[String]| {
        let path = dir.join(file);
        std::fs::write(&path, format!(r#"{{"layers": [{}]}}"#, layers.join(","))).unwrap();
        path.to_string_lossy().into_owned()
    };
    // A: x (64), x (32), only_a (16); B: x (64), x (128), only_b (8).
    let a = write(
        "a.json",
        &[
            layer("x", "Relu", 64),
            layer("x", "Relu", 32),
            layer("only_a", "Relu", 16),
        ],
    );
    let b = write(
        "b.json",
        &[
            layer("x", "Relu", 64),
            layer("x", "Relu", 128),
            layer("only_b", "Relu", 8),
        ],
    );
    let j = C3::new()
        .args(["diff", &a, &b, "--format", "json", "--layers"])
        .run()
        .json();
    assert_valid("diff.schema.json", &j);
    assert!(
        j.get("summary").is_none(),
        "--layers leaves the summary out"
    );
    let l = j["layers"].as_array().unwrap();
    let names: Vec<&str> = l.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["x", "x", "only_a", "only_b"]);
    // The first x with the first x: 64 − 64 FLOPs (Relu: one per element).
    assert_eq!(l[0]["delta"]["flops"], 0);
    // The second with the second: 128 − 32.
    assert_eq!(l[1]["delta"]["flops"], 128 - 32);
    // Only in A: B is null and counts as 0, so delta = −16; only in B: +8.
    assert!(l[2]["b"].is_null());
    assert_eq!(l[2]["delta"]["flops"], -16);
    assert!(l[3]["a"].is_null());
    assert_eq!(l[3]["delta"]["flops"], 8);
    assert_eq!(l[3]["delta"]["mrw"], 8 * 4 * 2);
    // The total: (64 + 128 + 8) − (64 + 32 + 16) FLOPs.
    assert_eq!(
        j["total"]["delta"]["flops"],
        (64 + 128 + 8) - (64 + 32 + 16)
    );
}

#[test]
fn diff_compares_roofline_bounds_when_both_sides_are_timed() {
    // A on an A100, B the same model on an H100: each side's bounds are its
    // single run's, per layer, per type (the sum of its layers') and in total.
    let j = C3::new()
        .args(["diff", SQUEEZENET, "--device", "a100", "--b-device", "h100"])
        .args(["--format", "json"])
        .run()
        .json();
    crate::common::schema::assert_valid("diff.schema.json", &j);
    let a = single(SQUEEZENET, &["--device", "a100"]);
    let b = single(SQUEEZENET, &["--device", "h100"]);
    let close = |x: &Value, y: &Value| {
        let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
        assert!((x - y).abs() <= 1e-12 * y.abs().max(1e-9), "{x} vs {y}");
    };
    close(&j["total"]["a"]["bound_s"], &a["total"]["bound_s"]);
    close(&j["total"]["b"]["bound_s"], &b["total"]["bound_s"]);
    let delta = b["total"]["bound_s"].as_f64().unwrap() - a["total"]["bound_s"].as_f64().unwrap();
    close(&j["total"]["delta"]["bound_s"], &delta.into());
    // The same counts on both sides: only the time moves.
    assert_eq!(j["total"]["delta"]["flops"], 0);
    for (i, row) in j["layers"].as_array().unwrap().iter().enumerate() {
        close(&row["a"]["bound_s"], &a["layers"][i]["bound_s"]);
        close(&row["b"]["bound_s"], &b["layers"][i]["bound_s"]);
    }
    let conv_a: f64 = a["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["op"] == "Conv")
        .map(|l| l["bound_s"].as_f64().unwrap())
        .sum();
    let conv = j["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["op"] == "Conv")
        .unwrap();
    close(&conv["a"]["bound_s"], &conv_a.into());
    // A hand-built trace: one ReLU over n floats reads and writes 4n bytes
    // each, so on a device its bound is max(n / peak, 8n / bandwidth); the
    // same device on both sides with twice the elements doubles it.
    let dir = scratch("compare", "timed");
    let (t1, t2) = (
        relu_trace(&dir, "a", 1 << 20),
        relu_trace(&dir, "b", 2 << 20),
    );
    let j = C3::new()
        .args(["diff", &t1, &t2, "--device", "a100", "--format", "json"])
        .run()
        .json();
    let ta = j["total"]["a"]["bound_s"].as_f64().unwrap();
    let tb = j["total"]["b"]["bound_s"].as_f64().unwrap();
    assert!((tb - 2.0 * ta).abs() <= 1e-12 * tb, "{ta} {tb}");
    let single_a = single(&t1, &["--device", "a100"]);
    close(&j["total"]["a"]["bound_s"], &single_a["total"]["bound_s"]);
    // Tables show the bound in µs beside the counts; CSV keys name it.
    let csv = C3::new()
        .args([
            "diff",
            &t1,
            &t2,
            "--device",
            "a100",
            "--format",
            "csv",
            "--summary",
        ])
        .run();
    let header = csv.stdout.lines().next().unwrap().to_string();
    assert!(
        header.ends_with("bound_us_a,bound_us_b,bound_us_delta,bound_delta_pct"),
        "{header}"
    );
    // The total row: B − A is +100% of A.
    let last = csv.stdout.lines().last().unwrap().to_string();
    assert!(last.ends_with(",+100.000"), "{last}");
    // Untimed, no bound at all; --b-device needs --device.
    let j = single(SQUEEZENET, &[]);
    assert!(j["total"].get("bound_s").is_none());
    let err = C3::new()
        .args(["diff", SQUEEZENET, "--b-device", "h100"])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(err.contains("--device"), "{err}");
}
