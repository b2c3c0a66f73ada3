//! Issue 13's reports: layers in the model's order, the roofline naming the
//! peaks it used, JSON with `meta` checked against the shipped schemas, CSV
//! as one table, and a table that fits the terminal.

use c3::onnx::build::GraphBuilder;

use crate::common::onnx::{float, model, node};
use crate::common::{cli::C3, onnx::c3_on};

fn named(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> c3::onnx::proto::NodeProto {
    let mut n = node(op, inputs, outputs);
    n.name = Some(name.into());
    n
}

/// Two branches from one Relu, written branch by branch: a first-in,
/// first-out sort would interleave them (a, b1, c1, b2, c2).
fn two_branches() -> c3::onnx::proto::ModelProto {
    let g = GraphBuilder::new()
        .input(float("x", &[1, 64]))
        .node(named("Relu", "a", &["x"], &["ya"]))
        .node(named("Relu", "b1", &["ya"], &["yb1"]))
        .node(named("Relu", "b2", &["yb1"], &["yb2"]))
        .node(named("Relu", "c1", &["ya"], &["yc1"]))
        .node(named("Relu", "c2", &["yc1"], &["yc2"]))
        .node(named("Add", "join", &["yb2", "yc2"], &["y"]))
        .output(float("y", &[1, 64]))
        .build();
    model(g)
}

fn layer_names(json: &serde_json::Value) -> Vec<String> {
    json["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn layers_keep_the_order_of_the_model_s_nodes() {
    let (code, out, err) = c3_on(&two_branches(), "order", &["estimate", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(layer_names(&j), ["a", "b1", "b2", "c1", "c2", "join"]);
}

#[test]
fn only_a_real_dependency_reorders_layers() {
    // `join` is written first but reads what the others make: it moves after
    // them; the rest keep their places.
    let g = GraphBuilder::new()
        .input(float("x", &[1, 64]))
        .node(named("Add", "join", &["yb", "yc"], &["y"]))
        .node(named("Relu", "b", &["x"], &["yb"]))
        .node(named("Relu", "c", &["x"], &["yc"]))
        .output(float("y", &[1, 64]))
        .build();
    let (code, out, err) = c3_on(&model(g), "reorder", &["estimate", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(layer_names(&j), ["b", "c", "join"]);
}

#[test]
fn light_resnet50_lists_its_nodes_in_file_order() {
    let run = C3::new()
        .args([
            "estimate",
            "examples/onnx/light_resnet50.onnx",
            "--format",
            "json",
        ])
        .run();
    let j = run.ok().json();
    let names = layer_names(&j);
    // The first bottleneck: n4 (1x1 conv), n5 (its BatchNorm), n6 (Relu), ...
    // and the shortcut conv n12 after the main path, as the file has them.
    let at = |n: &str| names.iter().position(|x| x == n).unwrap();
    assert!(at("n4") < at("n5") && at("n5") < at("n6") && at("n6") < at("n12"));
    assert_eq!(&names[..6], ["n0", "n1", "n2", "n3", "n4", "n5"]);
}

// ---------------------------------------------------------------- item 1

const RESNET: &str = "examples/resnet50.trace.json";
fn estimate(args: &[&str]) -> crate::common::cli::Run {
    C3::new().arg("estimate").arg(RESNET).args(args).run()
}

#[test]
fn the_roofline_names_the_peak_it_used() {
    // fp16 activations on a GTX 1080 Ti: every layer is timed at its fp16
    // rate, 0.1656 TFLOP/s, and the header says so (not "fp32 10.6").
    let run = estimate(&[
        "--device",
        "gtx1080ti",
        "--activations",
        "fp16",
        "--format",
        "md",
    ]);
    let md = &run.ok().stdout;
    assert!(
        md.contains("- fp16 peak 0.166 TFLOP/s: 176 layers, compute 46.761 ms"),
        "{md}"
    );
    assert!(!md.contains("10.6 TFLOP/s"), "{md}");
    assert!(md.contains("what if activations were float16"), "{md}");
    // The work as the peak counts it (a multiply-add as two operations,
    // what --no-fma reports): 7,743,646,647 / 165.6e9 s = 46.761 ms.
    assert_eq!(format!("{:.3}", 7_743_646_647.0 / 165.6e9 * 1e3), "46.761");

    let j = estimate(&[
        "--device",
        "gtx1080ti",
        "--activations",
        "fp16",
        "--format",
        "json",
    ])
    .json();
    let peaks = &j["device"]["peaks"];
    assert_eq!(peaks.as_array().unwrap().len(), 1);
    assert_eq!(peaks[0]["precision"], "fp16");
    assert_eq!(peaks[0]["fell_back"], false);
    assert_eq!(peaks[0]["peak"], 165.6e9);
    assert_eq!(peaks[0]["layers"], 176);
    assert_eq!(j["layers"][0]["precision"], "fp16");
    assert_eq!(j["meta"]["options"]["activations"], "float16");
}

#[test]
fn a_precision_without_a_peak_says_what_it_fell_back_to() {
    // The GTX 1080 Ti has no bf16 peak: bf16 layers use its fp16 one.
    let run = estimate(&[
        "--device",
        "gtx1080ti",
        "--activations",
        "bf16",
        "--format",
        "table",
    ]);
    let out = &run.ok().stdout;
    assert!(
        out.contains(
            "bf16 layers timed at the fp16 peak 0.166 TFLOP/s (the device has no bf16 peak): 176 layers"
        ),
        "{out}"
    );
    let j = estimate(&[
        "--device",
        "gtx1080ti",
        "--activations",
        "bf16",
        "--format",
        "json",
    ])
    .json();
    let g = &j["device"]["peaks"][0];
    assert_eq!(
        (g["precision_asked"].as_str(), g["precision"].as_str()),
        (Some("bf16"), Some("fp16"))
    );
    assert_eq!(g["fell_back"], true);
    assert_eq!(j["layers"][0]["precision_asked"], "bf16");
    // CSV names each row's precision, and the fallback.
    let csv = estimate(&[
        "--device",
        "gtx1080ti",
        "--activations",
        "bf16",
        "--format",
        "csv",
    ]);
    let header = csv.ok().stdout.lines().next().unwrap().to_string();
    assert!(
        header.ends_with(",bound,flop_per_byte,precision"),
        "{header}"
    );
    assert!(
        csv.stdout
            .lines()
            .nth(1)
            .unwrap()
            .ends_with(",bf16 (as fp16)")
    );
    // The HTML page lists it with the options.
    let html = estimate(&[
        "--device",
        "gtx1080ti",
        "--activations",
        "bf16",
        "--format",
        "html",
    ]);
    assert!(html.ok().stdout.contains(
        "timed at</th><td>bf16 layers timed at the fp16 peak 0.166 TFLOP/s (the device has no bf16 peak)"
    ));
}

#[test]
fn every_what_if_in_force_is_stated() {
    let run = estimate(&[
        "--device",
        "a100",
        "--weights",
        "int8",
        "--no-fma",
        "--attention",
        "full",
        "--rules",
        "fused",
        "--format",
        "md",
    ]);
    let md = &run.ok().stdout;
    let options = md
        .lines()
        .find(|l| l.starts_with("Options: "))
        .expect("an options line");
    for want in [
        "rules fused",
        "fma off (a multiply-add is 2 FLOPs)",
        "attention full",
        "what if weights were int8",
        "device a100",
    ] {
        assert!(options.contains(want), "{want} in {options}");
    }
}

#[test]
fn a_layer_with_no_work_is_bound_by_nothing() {
    // Reshape-1 moves no bytes and does no arithmetic.
    let j = estimate(&["--device", "h100", "--format", "json"]).json();
    let reshape = j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "Reshape-1")
        .unwrap();
    assert_eq!(
        (reshape["flops"].as_u64(), reshape["mrw"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(reshape["bound"], "none");
    assert_eq!(reshape["bound_s"], 0.0);
    assert_eq!(j["layers"][0]["bound"], "compute");
}

// ---------------------------------------------------------------- item 8

#[test]
fn json_outputs_carry_meta_and_fit_their_schemas() {
    use crate::common::schema::assert_valid;
    let j = estimate(&[
        "--device",
        "gtx1080ti",
        "--measured",
        "2.4ms",
        "--rules",
        "fused",
        "--weights",
        "fp16",
        "--format",
        "json",
    ])
    .json();
    assert_valid("estimate.schema.json", &j);
    let m = &j["meta"];
    assert_eq!(m["c3_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["model"], RESNET);
    assert_eq!(m["input"], "trace");
    let o = &m["options"];
    assert_eq!(o["fma"], true);
    assert_eq!(o["attention"], "masked");
    assert_eq!(o["if_branch"], "larger");
    assert_eq!(o["packs"], serde_json::json!(["fused"]));
    assert_eq!(o["dims"], serde_json::json!({}));
    assert_eq!(o["device"], "gtx1080ti");
    assert_eq!(o["measured_s"], 2.4e-3);
    assert_eq!(o["weights"], "float16");
    assert_eq!(o["strict"], false);

    // Bound dimensions are options too (the decoder's batch and seq).
    let d = C3::new()
        .args(["estimate", "examples/onnx/gpt_decoder_dynamo.onnx"])
        .args(["--dim", "batch=2", "--dim", "seq=32", "--format", "json"])
        .run()
        .json();
    assert_valid("estimate.schema.json", &d);
    assert_eq!(
        d["meta"]["options"]["dims"],
        serde_json::json!({"batch": 2, "seq": 32})
    );

    // An ONNX model, and a model with If branches and unsupported layers.
    let onnx = C3::new()
        .args([
            "estimate",
            "examples/onnx/light_resnet50.onnx",
            "--format",
            "json",
        ])
        .args(["--input", "gpu_0/data_0=1x3x224x224"])
        .run()
        .json();
    assert_valid("estimate.schema.json", &onnx);
    assert_eq!(onnx["meta"]["input"], "onnx");
    assert_eq!(
        onnx["meta"]["options"]["inputs"],
        serde_json::json!({"gpu_0/data_0": [1, 3, 224, 224]})
    );
    let shapes = C3::new()
        .args([
            "shapes",
            "examples/onnx/light_resnet50.onnx",
            "--format",
            "json",
        ])
        .run()
        .json();
    assert_valid("shapes.schema.json", &shapes);
    assert_eq!(shapes["meta"]["model"], "examples/onnx/light_resnet50.onnx");
    let devices = C3::new().args(["devices", "--format", "json"]).run().json();
    assert_valid("devices.schema.json", &devices);
    let rules = C3::new()
        .args(["rules", "list", "--format", "json", "--rules", "chainer"])
        .run()
        .json();
    assert_valid("rules-list.schema.json", &rules);
    assert_eq!(
        rules["meta"]["options"]["packs"],
        serde_json::json!(["chainer"])
    );
}

#[test]
fn the_schema_check_finds_what_breaks_it() {
    use crate::common::schema::errors;
    let mut j = estimate(&["--format", "json"]).json();
    assert!(errors("estimate.schema.json", &j).is_empty());
    j["layers"][0]["bound"] = "sideways".into();
    j["total"]["flops"] = (-1).into();
    j.as_object_mut().unwrap().remove("meta");
    j["summary"][0]["colour"] = "blue".into();
    let e = errors("estimate.schema.json", &j);
    assert_eq!(
        e,
        [
            "$: 'meta' is required",
            r#"$.layers[0].bound: "sideways" is not one of ["compute","memory","none"]"#,
            "$.summary[0]: 'colour' is not allowed",
            "$.total.flops: -1 is below 0",
        ],
        "{e:?}"
    );
}

#[test]
fn summary_and_layers_pick_parts_of_the_json() {
    let summary = estimate(&["--summary", "--format", "json"]).json();
    assert!(summary.get("layers").is_none());
    assert_eq!(summary["summary"][0]["op"], "Conv");
    assert_eq!(summary["total"]["flops"], 3_884_871_583u64);
    assert_eq!(summary["meta"]["options"]["parts"], "summary");
    let layers = estimate(&["--layers", "--format", "json"]).json();
    assert!(layers.get("summary").is_none());
    assert_eq!(layers["layers"].as_array().unwrap().len(), 176);
}

// ---------------------------------------------------------------- item 9

#[test]
fn csv_is_one_table_of_exact_integers() {
    let out = estimate(&["--format", "csv"]).ok().stdout.clone();
    let lines: Vec<&str> = out.lines().collect();
    // A header, 176 layers and the total: no blank line, no second table.
    assert_eq!(lines.len(), 1 + 176 + 1);
    assert_eq!(lines[0], "name,op,flops,mread,mwrite,mrw,params");
    // conv1: 118,013,952 FLOPs; 640,000 bytes read, 3,211,264 written;
    // its weights 64 x 3 x 7 x 7 = 9,408 and its bias 64: 9,472 params.
    assert_eq!(
        lines[1],
        "Convolution2DFunction-1,Conv,118013952,640000,3211264,3851264,9472"
    );
    // The totals: 269,226,304 read + 143,920,960 written = 413,147,264 bytes.
    assert_eq!(269_226_304u64 + 143_920_960, 413_147_264);
    // Parameters: the trace names no tensor, so each constant counts; the
    // ONNX export's 25,610,152 (see exports::) and conv1's bias, 64.
    assert_eq!(
        lines[177],
        "total,,3884871583,269226304,143920960,413147264,25610216"
    );
    // --summary picks the summary table, in the same units.
    let out = estimate(&["--format", "csv", "--summary"])
        .ok()
        .stdout
        .clone();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "op,layers,flops,mread,mwrite,mrw,params,flops%,mread%,mwrite%,mrw%"
    );
    assert!(lines.iter().all(|l| !l.is_empty()));
    assert!(lines.last().unwrap().starts_with("total,176,3884871583,"));
    // A unit is asked for: the header names it.
    let out = estimate(&["--format", "csv", "--unit", "M"])
        .ok()
        .stdout
        .clone();
    assert!(
        out.starts_with("name,op,flops_M,mread_MiB,mwrite_MiB,mrw_MiB,params_M\n"),
        "{out}"
    );
}

// ---------------------------------------------------------------- item 4

fn widest_line(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn the_table_fits_80_columns() {
    let run = C3::new()
        .args([
            "estimate",
            "examples/onnx/light_resnet50.onnx",
            "--device",
            "h100",
        ])
        .args(["--format", "table", "--columns", "percent"])
        .env("COLUMNS", "80")
        .run();
    let out = &run.ok().stdout;
    let table_lines = out
        .lines()
        .filter(|l| l.starts_with(['│', '┌', '└', '╞', '├']));
    assert!(table_lines.clone().count() > 176);
    assert!(
        table_lines.map(|l| l.chars().count()).all(|w| w <= 80),
        "{out}"
    );
    assert!(out.contains("To fit 80 columns: left out "), "{out}");
    // The notes and the roofline paragraph wrap at spaces too.
    assert!(widest_line(out) <= 80, "{out}");
    assert!(out.contains("\n  sum of per-layer bounds "), "{out}");
    // Every layer is still one row: 176 layers, the total, the header.
    let rows = out
        .lines()
        .take_while(|l| !l.starts_with('└'))
        .filter(|l| l.starts_with('│'));
    assert_eq!(rows.count(), 1 + 176 + 1);
    // Without a width (a file), nothing is left out.
    let wide = C3::new()
        .args([
            "estimate",
            "examples/onnx/light_resnet50.onnx",
            "--device",
            "h100",
        ])
        .args(["--format", "table", "--columns", "percent"])
        .run();
    assert!(widest_line(&wide.ok().stdout) > 80);
    assert!(!wide.stdout.contains("To fit"));
}

#[test]
fn sort_and_top_cut_the_layer_rows_but_not_the_totals() {
    let out = estimate(&["--format", "csv", "--sort", "mrw", "--top", "3"])
        .ok()
        .stdout
        .clone();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1 + 3 + 1);
    // mrw is the sixth column (params the seventh).
    let mrw = |l: &str| l.split(',').nth(5).unwrap().parse::<u64>().unwrap();
    assert!(mrw(lines[1]) >= mrw(lines[2]) && mrw(lines[2]) >= mrw(lines[3]));
    assert_eq!(mrw(lines[4]), 413_147_264);
    let md = estimate(&["--format", "md", "--sort", "flops", "--top", "2"])
        .ok()
        .stdout
        .clone();
    assert!(
        md.contains("Showing 2 of 176 layers, largest flops first; the total counts all 176."),
        "{md}"
    );
    // Times need a device.
    let run = estimate(&["--sort", "bound_s"]);
    assert_eq!(
        run.one_line_error(1),
        "error: --sort bound_s needs --device"
    );
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let plain = estimate(&["--format", "table"]).ok().stdout.clone();
    assert!(!plain.contains('\x1b'));
    let always = estimate(&["--format", "table", "--color", "always"])
        .ok()
        .stdout
        .clone();
    assert!(always.contains("\x1b[1mLayers\x1b[0m"), "{always}");
    let never = C3::new()
        .args(["estimate", RESNET, "--format", "table", "--color", "never"])
        .env("NO_COLOR", "1")
        .run();
    assert!(!never.ok().stdout.contains('\x1b'));
}
