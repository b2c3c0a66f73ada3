//! The three pictures of a report: the HTML page, the annotated ONNX copy
//! for Netron, Model Explorer's node data. Each is checked against the JSON
//! report of the same model and options.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::common::cli::{C3, ROOT};
use crate::common::onnx::{GraphProto, float, model, node, weights, with_int};
use prost::Message;
use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    crate::common::cli::scratch("pictures", name)
}

fn example(name: &str) -> String {
    format!("{ROOT}/examples/onnx/{name}")
}

/// Runs c3 and returns its standard output; fails the test on an error.
fn c3(args: &[&str]) -> String {
    let r = C3::new().args(args).run();
    r.ok();
    r.stdout
}

fn json_report(model: &str, extra: &[&str]) -> Value {
    let mut args = vec!["estimate", model, "--format", "json"];
    args.extend(extra);
    serde_json::from_str(&c3(&args)).expect("the JSON report parses")
}

/// What the test reads back of an annotated file: the fields c3 writes.
#[derive(Clone, PartialEq, Message)]
struct Entry {
    #[prost(string, optional, tag = "1")]
    key: Option<String>,
    #[prost(string, optional, tag = "2")]
    value: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct NodeMeta {
    #[prost(string, repeated, tag = "2")]
    output: Vec<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
    #[prost(message, repeated, tag = "5")]
    attribute: Vec<AttrMeta>,
    #[prost(message, repeated, tag = "9")]
    metadata_props: Vec<Entry>,
}

#[derive(Clone, PartialEq, Message)]
struct AttrMeta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(message, optional, tag = "6")]
    g: Option<GraphMeta>,
}

#[derive(Clone, PartialEq, Message)]
struct GraphMeta {
    #[prost(message, repeated, tag = "1")]
    node: Vec<NodeMeta>,
}

#[derive(Clone, PartialEq, Message)]
struct ModelMeta {
    #[prost(message, optional, tag = "7")]
    graph: Option<GraphMeta>,
    #[prost(message, repeated, tag = "14")]
    metadata_props: Vec<Entry>,
}

fn props(entries: &[Entry]) -> HashMap<String, String> {
    entries
        .iter()
        .map(|e| {
            (
                e.key.clone().unwrap_or_default(),
                e.value.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Each main-graph node's c3 entries (all its metadata), by node name.
fn node_props(meta: &ModelMeta) -> HashMap<String, HashMap<String, String>> {
    meta.graph
        .iter()
        .flat_map(|g| &g.node)
        .map(|n| (n.name.clone().unwrap_or_default(), props(&n.metadata_props)))
        .collect()
}

/// Times agree to the last bit or two: serde_json's default float parser
/// (no `float_roundtrip`) may read a number one unit off in the last place.
fn assert_close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 4.0 * f64::EPSILON * b.abs(),
        "{what}: {a} vs {b}"
    );
}

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("pictures")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn annotate_puts_the_json_report_s_figures_on_the_nodes_and_keeps_every_original_field() {
    let src = example("light_squeezenet.onnx");
    let out = dir("annotate").join("annotated.onnx");
    let out_s = out.to_str().unwrap();
    let run = C3::new()
        .args(["annotate", &src, "--device", "h100", "-o", out_s])
        .run();
    run.ok();
    let status = run.stderr.clone();
    assert_eq!(
        status,
        format!("wrote {out_s}: costs on 66 nodes, 105 inferred value_info entries\n")
    );
    let report = json_report(&src, &["--device", "h100"]);
    let bytes = std::fs::read(&out).unwrap();

    // Re-decoded by c3's own loader, the copy is the original plus the
    // inferred value_info: every other field c3 reads is equal, weights
    // included.
    let original = c3::onnx::load(&src).unwrap();
    let copy = c3::onnx::from_bytes(bytes.clone().into(), out_s).unwrap();
    let (og, cg) = (
        original.model.graph.as_ref().unwrap(),
        copy.model.graph.as_ref().unwrap(),
    );
    assert_eq!(og.initializer.len(), 52);
    for (a, b) in og.initializer.iter().zip(&cg.initializer) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.raw_data, b.raw_data, "weights of {:?}", a.name);
    }
    assert_eq!(cg.value_info.len(), og.value_info.len() + 105);
    let mut stripped = copy.model.clone();
    if let Some(g) = stripped.graph.as_mut() {
        g.value_info.truncate(og.value_info.len());
    }
    assert_eq!(stripped, original.model);

    // Every layer's figures, on the node of the same name.
    let meta = ModelMeta::decode(bytes.as_slice()).unwrap();
    let nodes = node_props(&meta);
    let layers = report["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 66);
    for l in layers {
        let name = l["name"].as_str().unwrap();
        let p = &nodes[name];
        for key in ["flops", "mread", "mwrite"] {
            assert_eq!(p[&format!("c3.{key}")], l[key].to_string(), "{name} {key}");
        }
        let bound_s: f64 = p["c3.bound_s"].parse().unwrap();
        assert_close(bound_s, l["bound_s"].as_f64().unwrap(), name);
        assert_eq!(p["c3.bound"], l["bound"].as_str().unwrap());
    }
    // The model's totals.
    let m = props(&meta.metadata_props);
    let t = &report["total"];
    for key in ["flops", "mread", "mwrite", "mrw", "layers"] {
        assert_eq!(m[&format!("c3.{key}")], t[key].to_string(), "total {key}");
    }
    assert_eq!(m["c3.device"], report["device"]["name"].as_str().unwrap());
    let total_s: f64 = m["c3.bound_s"].parse().unwrap();
    assert_close(total_s, t["bound_s"].as_f64().unwrap(), "total");

    // Annotating the copy replaces c3's entries instead of adding more, and
    // finds every shape already declared: the same bytes.
    let again = dir("annotate-again").join("again.onnx");
    c3(&[
        "annotate",
        out_s,
        "--device",
        "h100",
        "-o",
        again.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&again).unwrap(), bytes);
}

/// conv (named) → two unnamed Relus, on 1x8x16x16 float32.
fn small_model() -> crate::common::onnx::ModelProto {
    let conv = with_int(
        crate::common::onnx::NodeProto {
            name: Some("conv".into()),
            ..node("Conv", &["x", "w"], &["c"])
        },
        "group",
        1,
    );
    let mut conv = conv;
    conv.attribute.push(c3::proto::AttributeProto {
        name: Some("pads".into()),
        r#type: Some(c3::proto::attr_type::INTS),
        ints: vec![1, 1, 1, 1],
        ..Default::default()
    });
    model(GraphProto {
        name: Some("small".into()),
        node: vec![
            conv,
            node("Relu", &["c"], &["r1"]),
            node("Relu", &["r1"], &["r2"]),
        ],
        input: vec![float("x", &[1, 8, 16, 16])],
        output: vec![float("r2", &[1, 8, 16, 16])],
        initializer: vec![weights("w", &[8, 8, 3, 3])],
        ..Default::default()
    })
}

/// On a calibrated device with a pack whose Relu rule has a `time:`
/// formula, each node says what predicted its time: the Convs the device's
/// time model (`c3.predicted_by: model`), the Relus the formula, with
/// where it is written.
#[test]
fn annotate_says_what_predicted_each_nodes_time() {
    let d = scratch("pictures-predicted");
    let pack = d.join("pack");
    std::fs::create_dir_all(&pack).unwrap();
    std::fs::write(
        pack.join("devices.yaml"),
        "cpu:\n  name: test cpu\n  peak: {fp32: 1.0e11}\n  bandwidth: 1.0e10\n  source: made by hand\n  time:\n    groups:\n      \"*\": {compute: 0.5, memory: 1.0, kernel_s: 1.0e-6}\n",
    )
    .unwrap();
    // Every Relu takes 2 µs.
    std::fs::write(pack.join("relu.yaml"), "Relu:\n  time: \"2 / 1000000\"\n").unwrap();
    let out = d.join("annotated.onnx");
    let src = example("light_squeezenet.onnx");
    let pack = pack.to_str().unwrap();
    c3(&[
        "annotate",
        &src,
        "--rules",
        pack,
        "--device",
        "cpu",
        "-o",
        out.to_str().unwrap(),
    ]);
    let report = json_report(&src, &["--rules", pack, "--device", "cpu"]);
    let meta = ModelMeta::decode(std::fs::read(&out).unwrap().as_slice()).unwrap();
    let nodes = node_props(&meta);
    let (mut rule, mut model) = (0, 0);
    for l in report["layers"].as_array().unwrap() {
        let p = &nodes[l["name"].as_str().unwrap()];
        let by = l["predicted_by"].as_str().unwrap();
        assert_eq!(p["c3.predicted_by"], by);
        let predicted: f64 = p["c3.predicted_s"].parse().unwrap();
        assert_close(predicted, l["predicted_s"].as_f64().unwrap(), "predicted");
        match l["op"].as_str().unwrap() {
            "Relu" => {
                rule += 1;
                assert_eq!(by, "rule");
                assert_close(predicted, 2e-6, "a Relu's formula");
                assert!(p["c3.time_formula"].ends_with("relu.yaml:2:10"), "{p:?}");
            }
            _ => {
                model += 1;
                assert_eq!(by, "model");
                assert!(!p.contains_key("c3.time_formula"));
            }
        }
    }
    // SqueezeNet 1.1: 26 Relus of 66 layers.
    assert_eq!((rule, model), (26, 40));
}

#[test]
fn unnamed_nodes_are_annotated_and_keyed_as_model_explorer_names_them() {
    let d = scratch("pictures-small");
    let src = d.join("small.onnx");
    std::fs::write(&src, small_model().encode_to_vec()).unwrap();
    let src = src.to_str().unwrap();
    let out = d.join("annotated.onnx");
    c3(&["annotate", src, "-o", out.to_str().unwrap()]);
    let meta = ModelMeta::decode(std::fs::read(&out).unwrap().as_slice()).unwrap();
    let nodes = meta.graph.unwrap().node;
    // conv: 8 x 16 x 16 = 2,048 outputs x (8 x 3 x 3 = 72) window, one FLOP
    // per multiply-add: 147,456; reads x (2,048) and w (576) floats =
    // 10,496 bytes; writes 8,192.
    let conv = props(&nodes[0].metadata_props);
    assert_eq!(conv["c3.flops"], "147456");
    assert_eq!(conv["c3.mread"], "10496");
    assert_eq!(conv["c3.mwrite"], "8192");
    // Each Relu: one FLOP per element (2,048), reads and writes 8,192 bytes.
    for n in &nodes[1..] {
        let p = props(&n.metadata_props);
        assert_eq!(p["c3.flops"], "2048");
        assert_eq!(p["c3.mread"], "8192");
        assert_eq!(p["c3.mwrite"], "8192");
        // No device, no time.
        assert!(!p.contains_key("c3.bound_s"));
    }

    // Model Explorer's ONNX adapter calls an unnamed node `<node_I>`; the
    // first output's tensor name is written too.
    let data: Value =
        serde_json::from_str(&c3(&["estimate", src, "--format", "model-explorer"])).unwrap();
    let results = &data["small"]["results"];
    assert_eq!(results["conv"]["value"], 147456);
    assert_eq!(results["c"]["value"], 147456);
    assert_eq!(results["<node_1>"]["value"], 2048);
    assert_eq!(results["r1"]["value"], 2048);
    assert_eq!(results["<node_2>"]["value"], 2048);
    assert_eq!(results["r2"]["value"], 2048);
    assert_eq!(results.as_object().unwrap().len(), 6);
    assert_eq!(data["small"]["gradient"][0]["stop"], 0.0);
    assert_eq!(data["small"]["gradient"][2]["stop"], 1.0);
}

#[test]
fn model_explorer_values_are_the_json_report_s() {
    let src = example("light_squeezenet.onnx");
    let report = json_report(&src, &["--device", "h100"]);
    for (metric, field) in [
        ("flops", "flops"),
        ("mread", "mread"),
        ("mwrite", "mwrite"),
        ("mrw", "mrw"),
        ("bound_s", "bound_s"),
    ] {
        let text = c3(&[
            "estimate",
            &src,
            "--device",
            "h100",
            "--format",
            "model-explorer",
            "--metric",
            metric,
        ]);
        let data: Value = serde_json::from_str(&text).unwrap();
        // The graph id is the ONNX graph's name.
        let results = data["squeezenet_old"]["results"].as_object().unwrap();
        for l in report["layers"].as_array().unwrap() {
            let name = l["name"].as_str().unwrap();
            assert_eq!(results[name]["value"], l[field], "{metric} of {name}");
        }
    }
    // bound_s needs a device: a usage error, exit code 1.
    let r = C3::new()
        .args([
            "estimate",
            &src,
            "--format",
            "model-explorer",
            "--metric",
            "bound_s",
        ])
        .run();
    assert_eq!(
        r.one_line_error(1),
        "error: --metric bound_s needs --device"
    );
}

/// Checks that the tags of an HTML page nest: every element opened is
/// closed in order, except void elements; script and style bodies are raw
/// text. Returns the count of each element.
fn check_markup(html: &str) -> HashMap<String, usize> {
    const VOID: &[&str] = &["meta", "input", "br", "hr", "img", "link"];
    let mut stack: Vec<String> = Vec::new();
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at..];
        if let Some(r) = rest.strip_prefix("<!--") {
            rest = &r[r.find("-->").expect("comment closed") + 3..];
            continue;
        }
        let end = rest.find('>').expect("tag closed");
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') {
            assert_eq!(tag, "!DOCTYPE html");
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack
                .pop()
                .unwrap_or_else(|| panic!("</{name}> closes nothing"));
            assert_eq!(open, name, "<{open}> closed by </{name}>");
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(!name.is_empty(), "bad tag <{tag}>");
        // Attribute values are quoted: an even number of quotes.
        assert_eq!(tag.matches('"').count() % 2, 0, "quotes in <{tag}>");
        *counts.entry(name.clone()).or_default() += 1;
        if tag.ends_with('/') || VOID.contains(&name.as_str()) {
            continue;
        }
        if name == "script" || name == "style" {
            let close = format!("</{name}>");
            let body_end = rest.find(&close).expect("raw text element closed");
            rest = &rest[body_end + close.len()..];
            continue;
        }
        stack.push(name);
    }
    assert!(stack.is_empty(), "left open: {stack:?}");
    counts
}

fn assert_offline(html: &str) {
    for needle in [
        "http://", "https://", "//cdn", " src=", " href=", "url(", "@import",
    ] {
        assert!(!html.contains(needle), "the page refers to {needle}");
    }
}

#[test]
fn the_html_page_holds_every_layer_fetches_nothing_and_nests() {
    let src = example("light_squeezenet.onnx");
    let html = c3(&["estimate", &src, "--device", "h100", "--format", "html"]);
    assert_offline(&html);
    let counts = check_markup(&html);
    let report = json_report(&src, &["--device", "h100"]);
    for l in report["layers"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        // In the table readable without JavaScript, and in the script's data.
        assert!(
            html.contains(&format!("<td>{name}</td>")),
            "{name} in the table"
        );
        assert!(
            html.contains(&format!("[\"{name}\",")),
            "{name} in the data"
        );
    }
    // One table row per layer without JavaScript (plus the header row);
    // the summary table has one per op type (7) plus its header; the
    // options table 6 rows (model, fma, attention, if branch, device, and
    // the one peak the layers were timed at).
    assert_eq!(counts["tr"], (66 + 1) + (7 + 1) + 6);
    // The roofline: one line per distinct peak plus the bandwidth roof.
    assert!(html.contains("<h2>Roofline</h2>"));
    // The light and the dark theme follow the system.
    assert!(html.contains("@media (prefers-color-scheme: dark)"));
}

#[test]
fn a_large_model_s_page_stays_near_the_json_s_size_and_its_charts_do_not_grow() {
    // 20,000 layers: a trace of Relus of growing sizes.
    let n = 20_000;
    let mut layers = Vec::with_capacity(n);
    for i in 0..n {
        let size = 64 + (i % 97) * 8;
        layers.push(format!(
            r#"{{"op": "Relu", "name": "relu_{i}", "inputs": [{{"shape": [1, {size}]}}], "outputs": [{{"shape": [1, {size}]}}]}}"#
        ));
    }
    let d = dir("large");
    let trace = d.join("large.trace.json");
    std::fs::write(&trace, format!("{{\"layers\": [{}]}}", layers.join(",\n"))).unwrap();
    let trace = trace.to_str().unwrap();
    let html = c3(&["estimate", trace, "--device", "h100", "--format", "html"]);
    let json = c3(&["estimate", trace, "--device", "h100", "--format", "json"]);
    assert_offline(&html);
    let counts = check_markup(&html);
    assert!(
        html.len() < json.len(),
        "html {} bytes, json {} bytes",
        html.len(),
        json.len()
    );
    for i in [0, 1, n / 2, n - 1] {
        assert!(html.contains(&format!("<td>relu_{i}</td>")));
    }
    // The chart along the network bins 20,000 layers into 480 bars of
    // ceil(20,000 / 480) = 42 layers (the last holds 20,000 - 476 x 42 = 8):
    // 477 bars per panel, two panels (FLOPs, bytes), linear and log: 1,908,
    // plus the by-type bars (3 shares of one type) and legend (1).
    assert_eq!(counts["rect"], 4 * 477 + 3 + 1);
    assert!(html.contains("(each bar sums 42 layers)"));
    // Relus of 97 sizes share an intensity (1 FLOP per 8 bytes) and fall on
    // a few pixels of the roofline: far fewer points than layers.
    assert!(counts["circle"] < 100, "{} points", counts["circle"]);
}

/// The model's graph fields, each as its own bytes (protobuf would merge them).
#[derive(Clone, PartialEq, Message)]
struct GraphFields {
    #[prost(bytes = "vec", repeated, tag = "7")]
    graphs: Vec<Vec<u8>>,
}

#[test]
fn annotate_writes_one_graph_field_which_netron_reads_whole() {
    // `c3 shapes -o` appends its value_info in a second graph field; a reader
    // that keeps the last one (Netron does) would see a graph of shapes only.
    let d = dir("one-graph");
    let shaped = d.join("shaped.onnx");
    let shaped_s = shaped.to_str().unwrap();
    c3(&[
        "shapes",
        &example("light_bvlc_alexnet.onnx"),
        "-o",
        shaped_s,
    ]);
    let fields = |p: &Path| GraphFields::decode(std::fs::read(p).unwrap().as_slice()).unwrap();
    assert_eq!(fields(&shaped).graphs.len(), 2);
    let out = d.join("annotated.onnx");
    c3(&["annotate", shaped_s, "-o", out.to_str().unwrap()]);
    assert_eq!(fields(&out).graphs.len(), 1);
    // Same model to c3's loader, shapes included (nothing left to add).
    let a = c3::onnx::load(shaped_s).unwrap();
    let b = c3::onnx::load(out.to_str().unwrap()).unwrap();
    assert_eq!(a.model, b.model);
}

fn layer(name: &str, op: &str, flops: u64, mread: u64, mwrite: u64) -> c3::cost::LayerCost {
    c3::cost::LayerCost {
        name: name.into(),
        op: op.into(),
        domain: String::new(),
        flops,
        work: flops,
        class: None,
        category: None,
        input_from: None,
        calls: 1,
        mread,
        mwrite,
        iops: 0,
        inputs: Default::default(),
        outputs: Default::default(),
        attrs: Default::default(),
        params: 0,
        weight_bytes: 0,
        live_bytes: 0,
        fused: None,
        runs: 1,
        time: None,
    }
}

#[test]
fn the_page_lists_unsupported_layers_assumed_sizes_fused_groups_and_skipped_branches() {
    use c3::cost::{CostReport, OpSummary, SkippedBranch, Totals, Unsupported};
    let mut conv = layer("conv<1>", "Conv", 1000, 400, 200);
    let mut relu = layer("relu & co", "Relu", 50, 200, 200);
    conv.fused = Some("conv_relu#1".into());
    relu.fused = Some("conv_relu#1".into());
    let totals = |flops, mread, mwrite| Totals {
        layers: 1,
        flops,
        work: flops,
        mread,
        mwrite,
        mrw: mread + mwrite,
        iops: 0,
        params: 0,
        weight_bytes: 0,
    };
    let report = CostReport {
        summary: vec![
            OpSummary {
                op: "Conv".into(),
                domain: String::new(),
                totals: totals(1000, 400, 200),
            },
            OpSummary {
                op: "Relu".into(),
                domain: String::new(),
                totals: totals(50, 200, 200),
            },
        ],
        layers: vec![conv, relu],
        total: Totals {
            layers: 2,
            ..totals(1050, 600, 400)
        },
        unsupported: vec![Unsupported {
            name: "mystery".into(),
            op: "Frobnicate".into(),
            domain: "com.example".into(),
            reason: "no cost rule".into(),
        }],
        fusions: vec![c3::cost::fusion::FusedGroup {
            id: "conv_relu#1".into(),
            pattern: "conv_relu".into(),
            members: vec![0, 1],
            saved_bytes: 400,
        }],
        skipped: vec![SkippedBranch {
            node: "if_0".into(),
            branch: "else_branch".into(),
            reason: "the then branch is larger".into(),
            totals: totals(7, 8, 9),
            layers: vec![layer("if_0/else_branch/Add-1", "Add", 7, 8, 9)],
        }],
        assumed: vec![c3::ir::Assumed {
            symbol: "nonzero_0".into(),
            value: 4096,
            op: "NonZero".into(),
        }],
        folded: Vec::new(),
        peak: Default::default(),
        measured: None,
        buffers: (0, 0),
        training: None,
    };
    let opts = c3::report::ReportOptions {
        format: c3::report::Format::Html,
        ..Default::default()
    };
    let html = c3::report::render(&report, &opts, None);
    assert_offline(&html);
    check_markup(&html);
    // Names are escaped wherever they appear.
    assert!(html.contains("<td>conv&lt;1&gt;</td>"));
    assert!(html.contains("<td>relu &amp; co</td>"));
    assert!(html.contains(
        "<tr><td>mystery</td><td>com.example::Frobnicate</td><td>no cost rule</td></tr>"
    ));
    assert!(html.contains("<tr><td>nonzero_0</td><td class=\"n\">4096</td><td>NonZero</td></tr>"));
    // The group saves 400 bytes: 400 B (under 1 KiB, no prefix).
    assert!(html.contains(
        "<tr><td>conv_relu#1</td><td>conv&lt;1&gt;, relu &amp; co</td><td class=\"n\">400 B</td></tr>"
    ));
    // The branch: 1 layer, 7 FLOPs, 8 + 9 = 17 bytes.
    assert!(html.contains(
        "<tr><td>if_0/else_branch</td><td class=\"n\">1</td><td class=\"n\">7</td><td class=\"n\">17 B</td><td>the then branch is larger</td></tr>"
    ));
    // No device: no roofline.
    assert!(!html.contains("<h2>Roofline</h2>"));
}

#[test]
fn a_function_call_carries_the_sum_of_its_expanded_layers() {
    use c3::onnx::proto::{FunctionProto, OperatorSetIdProto};
    // `local::Twice` is Relu then Relu; the main graph calls it, unnamed,
    // then runs one Relu of its own.
    let mut m = model(GraphProto {
        name: Some("calls".into()),
        node: vec![
            crate::common::onnx::NodeProto {
                domain: Some("local".into()),
                ..node("Twice", &["x"], &["y"])
            },
            node("Relu", &["y"], &["z"]),
        ],
        input: vec![float("x", &[1, 2048])],
        output: vec![float("z", &[1, 2048])],
        ..Default::default()
    });
    m.opset_import.push(OperatorSetIdProto {
        domain: Some("local".into()),
        version: Some(1),
    });
    m.functions.push(FunctionProto {
        name: Some("Twice".into()),
        domain: Some("local".into()),
        input: vec!["a".into()],
        output: vec!["b".into()],
        node: vec![node("Relu", &["a"], &["t"]), node("Relu", &["t"], &["b"])],
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        ..Default::default()
    });
    let d = scratch("pictures-function");
    let src = d.join("calls.onnx");
    std::fs::write(&src, m.encode_to_vec()).unwrap();
    let out = d.join("annotated.onnx");
    let run = C3::new()
        .args([
            "annotate",
            src.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .run();
    run.ok();
    // The status line goes to stderr, the data (none here) to stdout.
    assert!(run.stderr.contains("costs on 2 nodes"), "{}", run.stderr);
    let meta = ModelMeta::decode(std::fs::read(&out).unwrap().as_slice()).unwrap();
    let nodes = meta.graph.unwrap().node;
    // Each Relu: 2,048 FLOPs, 8,192 bytes read and 8,192 written; the call
    // runs two.
    let call = props(&nodes[0].metadata_props);
    assert_eq!(call["c3.flops"], "4096");
    assert_eq!(call["c3.mread"], "16384");
    assert_eq!(call["c3.mwrite"], "16384");
    let relu = props(&nodes[1].metadata_props);
    assert_eq!(relu["c3.flops"], "2048");
    // The model's total: all three.
    assert_eq!(props(&meta.metadata_props)["c3.flops"], "6144");
}

/// Loop `loop` (3 runs) whose body is MatMul(h, W) then an unnamed If on the
/// outer `go` (Relu or Sigmoid of the product), then If `top_if` on `go`
/// (Relu or Neg of the loop's result); every value is float32 [1, 64].
fn nested_model() -> crate::common::onnx::ModelProto {
    use crate::common::onnx::{BOOL, INT64, NodeProto, scalar, typed, with_graph};
    let branch = |op: &str, input: &str, out: &str| GraphProto {
        node: vec![node(op, &[input], &[out])],
        output: vec![float(out, &[1, 64])],
        ..Default::default()
    };
    let inner_if = with_graph(
        with_graph(
            node("If", &["go"], &["h_next"]),
            "then_branch",
            branch("Relu", "hw", "r"),
        ),
        "else_branch",
        branch("Sigmoid", "hw", "s"),
    );
    let body = GraphProto {
        node: vec![
            node("MatMul", &["h_in", "W"], &["hw"]),
            inner_if,
            node("Identity", &["cond_in"], &["cond_out"]),
        ],
        input: vec![
            typed("i", INT64, &[]),
            typed("cond_in", BOOL, &[]),
            float("h_in", &[1, 64]),
        ],
        output: vec![typed("cond_out", BOOL, &[]), float("h_next", &[1, 64])],
        ..Default::default()
    };
    let lp = NodeProto {
        name: Some("loop".into()),
        ..with_graph(node("Loop", &["M", "", "x"], &["h"]), "body", body)
    };
    let top_if = NodeProto {
        name: Some("top_if".into()),
        ..with_graph(
            with_graph(
                node("If", &["go"], &["y"]),
                "then_branch",
                branch("Relu", "h", "y1"),
            ),
            "else_branch",
            branch("Neg", "h", "y2"),
        )
    };
    model(GraphProto {
        name: Some("flow".into()),
        node: vec![lp, top_if],
        input: vec![float("x", &[1, 64]), typed("go", BOOL, &[])],
        output: vec![float("y", &[1, 64])],
        initializer: vec![weights("W", &[64, 64]), scalar("M", INT64, 3)],
        ..Default::default()
    })
}

/// The nodes of `g` and of every body under it, by layer name as the
/// report gives it (`loop/body/MatMul-1`): each node's c3 entries.
fn annotated_nodes(
    g: &GraphMeta,
    prefix: &str,
    out: &mut HashMap<String, HashMap<String, String>>,
) {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for n in &g.node {
        let name = match n.name.as_deref() {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => {
                // The op type is not decoded: these tests name it by its
                // first output's producer, known from the model.
                let op = match n.output.first().map(String::as_str) {
                    Some("hw") => "MatMul",
                    Some("h_next") => "If",
                    Some("cond_out") => "Identity",
                    Some("r" | "y1") => "Relu",
                    Some("s") => "Sigmoid",
                    Some("y2") => "Neg",
                    other => panic!("unexpected node {other:?}"),
                };
                let c = counts.entry(op.to_string()).or_default();
                *c += 1;
                format!("{op}-{c}")
            }
        };
        let full = format!("{prefix}{name}");
        for a in &n.attribute {
            if let Some(body) = &a.g {
                let attr = a.name.clone().unwrap_or_default();
                annotated_nodes(body, &format!("{full}/{attr}/"), out);
            }
        }
        out.insert(full, props(&n.metadata_props));
    }
}

#[test]
fn annotate_and_model_explorer_reach_nodes_inside_if_and_loop_bodies() {
    let d = scratch("pictures-bodies");
    let src = d.join("flow.onnx");
    std::fs::write(&src, nested_model().encode_to_vec()).unwrap();
    let src = src.to_str().unwrap();
    let out = d.join("annotated.onnx");
    let run = C3::new()
        .args(["annotate", src, "-o", out.to_str().unwrap()])
        .run();
    run.ok();
    let report = json_report(src, &[]);
    let layers = report["layers"].as_array().unwrap();
    // loop, its MatMul, If and Identity, one branch of the inner If, top_if
    // and one of its branches.
    assert_eq!(layers.len(), 7, "{layers:?}");
    assert!(run.stderr.contains("costs on 7 nodes"), "{}", run.stderr);
    let bytes = std::fs::read(&out).unwrap();
    // c3's own reader takes the copy, and it is the same model to it.
    let copy = c3::onnx::from_bytes(bytes.clone().into(), out.to_str().unwrap()).unwrap();
    let original = c3::onnx::load(src).unwrap();
    let mut stripped = copy.model.clone();
    if let Some(g) = stripped.graph.as_mut() {
        g.value_info.clear();
    }
    assert_eq!(stripped, original.model);

    let meta = ModelMeta::decode(bytes.as_slice()).unwrap();
    let mut nodes = HashMap::new();
    annotated_nodes(meta.graph.as_ref().unwrap(), "", &mut nodes);
    // Every layer's figures on its node, wherever it sits.
    for l in layers {
        let name = l["name"].as_str().unwrap();
        let p = &nodes[name];
        for key in ["flops", "mread", "mwrite"] {
            assert_eq!(p[&format!("c3.{key}")], l[key].to_string(), "{name} {key}");
        }
    }
    // The body's MatMul, three runs of [1, 64] @ [64, 64]: 3 x 64 x 64 =
    // 12,288 FLOPs; reads h and W, 3 x (64 + 4,096) x 4 = 49,920 bytes;
    // writes 3 x 64 x 4 = 768.
    let mm = &nodes["loop/body/MatMul-1"];
    assert_eq!(mm["c3.flops"], "12288");
    assert_eq!(mm["c3.mread"], "49920");
    assert_eq!(mm["c3.mwrite"], "768");
    // Two levels down: the inner If counts its larger branch (--if-branch
    // larger), Sigmoid at 4 FLOPs an element: 3 runs x 64 x 4 = 768; the
    // Relu of the other branch carries nothing.
    let sigmoid = &nodes["loop/body/If-1/else_branch/Sigmoid-1"];
    assert_eq!(sigmoid["c3.flops"], "768");
    assert!(nodes["loop/body/If-1/then_branch/Relu-1"].is_empty());
    // The top If's branches cost the same (64 FLOPs, one an element); the
    // else branch is counted.
    assert_eq!(nodes["top_if/else_branch/Neg-1"]["c3.flops"], "64");
    assert!(nodes["top_if/then_branch/Relu-1"].is_empty());
    // Nodes with entries: exactly the layers.
    let costed = nodes
        .values()
        .filter(|p| p.contains_key("c3.flops"))
        .count();
    assert_eq!(costed, 7);

    // Model Explorer: body nodes under the body's graph id as the ONNX
    // adapter names it (`<owner id>/<attribute>`), unnamed ones `<node_I>`
    // by their index in their own graph.
    let data: Value =
        serde_json::from_str(&c3(&["estimate", src, "--format", "model-explorer"])).unwrap();
    let body = &data["loop/body"]["results"];
    assert_eq!(body["<node_0>"]["value"], 12288);
    assert_eq!(body["hw"]["value"], 12288);
    assert_eq!(
        body["<node_2>"]["value"],
        l_flops(layers, "loop/body/Identity-1")
    );
    let deep = &data["loop/body/<node_1>/else_branch"]["results"];
    assert_eq!(deep["<node_0>"]["value"], 768, "{data}");
    assert_eq!(deep["s"]["value"], 768);
    let top = &data["top_if/else_branch"]["results"];
    assert_eq!(top["<node_0>"]["value"], 64);
    // The main graph keeps its own nodes only.
    let main = data["flow"]["results"].as_object().unwrap();
    assert!(main.contains_key("loop") && main.contains_key("top_if"));
    assert!(main.keys().all(|k| !k.contains('/')), "{main:?}");
}

fn l_flops(layers: &[Value], name: &str) -> u64 {
    layers
        .iter()
        .find(|l| l["name"] == name)
        .and_then(|l| l["flops"].as_u64())
        .unwrap()
}
