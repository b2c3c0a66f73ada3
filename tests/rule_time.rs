//! A rule's `time:` formula (issue 50): a pack for one engine gives the
//! seconds a layer takes as it gives its FLOPs, over the device's time
//! model; reports mark what predicted each layer, errors point into the
//! pack, and `c3 explain` and `c3 docs` show the formula.

use crate::common::cli::{C3, ROOT, pack_folder};
use crate::common::schema;

/// A pack folder `NAME` with these files.
fn pack(name: &str, files: &[(&str, &str)]) -> String {
    pack_folder("rule_time", name, files).display().to_string()
}

/// An uncalibrated device: 100 GFLOP/s at fp32 and 10 GB/s.
const PLAIN: (&str, &str) = (
    "devices.yaml",
    "cpu:\n  name: test cpu\n  peak: {fp32: 1.0e11}\n  bandwidth: 1.0e10\n  source: by hand\n",
);

/// A convolution (1x3x8x8 by 4x3x3x3, no bias: 1x4x6x6) and a ReLU on it.
const TRACE: &str = r#"{"layers": [
    {"name": "c", "op": "Conv", "inputs": [{"name": "x", "shape": [1, 3, 8, 8]}, {"shape": [4, 3, 3, 3], "const": true}], "outputs": [{"name": "y", "shape": [1, 4, 6, 6]}]},
    {"name": "r", "op": "Relu", "inputs": [{"name": "y", "shape": [1, 4, 6, 6]}], "outputs": [{"name": "z", "shape": [1, 4, 6, 6]}]}
]}"#;

/// `c3 estimate TRACE --rules PACK --device cpu --format FORMAT`.
fn run(pack: &str, format: &str) -> crate::common::cli::Run {
    C3::new()
        .args(["estimate", "-", "--rules", pack, "--device", "cpu"])
        .args(["--format", format])
        .stdin(TRACE)
        .run()
}

#[test]
fn a_time_formula_for_conv_gives_its_predicted_time() {
    // A rule that gives only `time:` keeps the rest of the built-in Conv.
    let p = pack(
        "conv",
        &[
            PLAIN,
            (
                "conv.yaml",
                "Conv:\n  time: \"compute_s * 2 + |Y| / 1000000000 + 3 / 1000000\"\n",
            ),
        ],
    );
    let r = run(&p, "json");
    let j = r.json();
    schema::assert_valid("estimate.schema.json", &j);
    let conv = &j["layers"][0];
    // Its work is 2 * 27 - 1 = 53 operations for each of |Y| = 144 outputs
    // (no bias, a multiply-add as two): 7,632, over 1e11 FLOP/s. The
    // formula: twice that compute time, a nanosecond per output element
    // (`/` divides exactly in a time formula) and 3 µs.
    assert_eq!(conv["work"], 7632);
    let want: f64 = 7632.0 / 1e11 * 2.0 + 144.0 / 1e9 + 3.0 / 1e6;
    // Exactly: as the report writes it (reading JSON may round the last
    // digit).
    let written = format!("\"predicted_s\": {}", serde_json::to_string(&want).unwrap());
    assert!(r.stdout.contains(&written), "{written}: {}", r.stdout);
    assert_eq!(conv["predicted_by"], "rule");
    assert_eq!(conv["time_formula"], format!("{p}/conv.yaml:2:10"));
    // An uncalibrated device has no time group, and no time model for the
    // ReLU: it has no predicted time, and the model no predicted total.
    assert!(conv["time_group"].is_null());
    let relu = &j["layers"][1];
    assert!(relu["predicted_s"].is_null() && relu["predicted_by"].is_null());
    assert!(j["total"].get("predicted_s").is_none(), "{}", j["total"]);
    assert_eq!(j["total"]["predicted_by_rules"], 1);
    // The bound stays the roofline's, the larger of its two times.
    let (c, m) = (conv["compute_s"].as_f64(), conv["memory_s"].as_f64());
    assert_eq!(conv["bound_s"].as_f64(), c.zip(m).map(|(c, m)| c.max(m)));
    // The per-type summary predicts the type whose layers have a time.
    let summary = j["summary"].as_array().unwrap();
    assert_eq!(summary[0]["predicted_s"], conv["predicted_s"]);
    assert!(summary[1].get("predicted_s").is_none());
    // Without --device the formula is not evaluated.
    let j = C3::new()
        .args(["estimate", "-", "--rules", &p, "--format", "json"])
        .stdin(TRACE)
        .run()
        .json();
    assert!(j["layers"][0].get("predicted_s").is_none());
    // `c3 rules check` names the field the rule overrides.
    let r = C3::new().args(["rules", "check", &p]).run();
    r.ok();
    assert!(r.stdout.contains("Conv (overrides time)"), "{}", r.stdout);
}

#[test]
fn every_format_marks_the_layers_a_formula_predicted() {
    let p = pack(
        "formats",
        &[
            PLAIN,
            ("conv.yaml", "Conv:\n  time: \"compute_s + 1 / 1000000\"\n"),
        ],
    );
    // 7,632 / 1e11 s + 1 µs = 1.076 µs, marked in the tables; the line
    // under the roofline lists the formula and why there is no total.
    for format in ["table", "md"] {
        let out = run(&p, format).ok().stdout.clone();
        assert!(out.contains("1.076 †"), "{format}: {out}");
        assert!(
            out.contains(&format!(
                "† predicted by rules' time: formulas: Conv ({p}/conv.yaml:2:10) x1"
            )),
            "{format}: {out}"
        );
        assert!(out.contains("so no total"), "{format}: {out}");
    }
    let csv = run(&p, "csv").ok().stdout.clone();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |k: &str| header.iter().position(|h| *h == k).unwrap();
    let (pred, by) = (at("predicted_us"), at("predicted_by"));
    let conv: Vec<&str> = lines.next().unwrap().split(',').collect();
    let relu: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!((conv[pred], conv[by]), ("1.076", "rule"));
    assert_eq!((relu[pred], relu[by]), ("", ""));
    let html = run(&p, "html").ok().stdout.clone();
    assert!(
        html.contains(&format!(
            "<span title=\"time: {p}/conv.yaml:2:10\">†</span>"
        )),
        "{html}"
    );
    // The card under the page's head counts them (HTML escapes the ').
    assert!(
        html.contains("1 layer by rules&#39; time: formulas"),
        "{html}"
    );
}

/// A calibrated device (the one tests/latency.rs predicts squeezenet
/// with): convolutions at half the peak plus 10 µs, ReLUs after dense
/// convolutions fused at a tenth of the bandwidth's time, the rest at the
/// bandwidth plus 1 µs.
const CALIBRATED: (&str, &str) = (
    "devices.yaml",
    "cpu:\n  name: test cpu\n  peak: {fp32: 1.0e11}\n  bandwidth: 1.0e10\n  source: made by hand\n  time:\n    range: [-0.1, 0.2]\n    fused: [\"Relu after Conv/dense\"]\n    groups:\n      \"Conv\": {compute: 0.5, kernel_s: 1.0e-5}\n      \"Relu (fused)\": {memory: 10.0}\n      \"*\": {memory: 1.0, kernel_s: 1.0e-6}\n",
);

/// `c3 estimate squeezenet --rules PACK --device cpu --format json`.
fn squeezenet(pack: &str) -> serde_json::Value {
    C3::new()
        .args([
            "estimate",
            &format!("{ROOT}/examples/onnx/light_squeezenet.onnx"),
            "--rules",
            pack,
            "--device",
            "cpu",
            "--format",
            "json",
        ])
        .run()
        .json()
}

#[test]
fn a_formula_reads_the_calibrated_group_and_overrides_the_model() {
    let model = squeezenet(&pack("model", &[CALIBRATED]));
    // The time model's own arithmetic as a formula, for Conv and Relu: a
    // group without a compute (or memory) term has an infinite efficiency,
    // so its term is 0, and every layer gets the time the model gives it.
    let same = "compute_s / compute_eff + memory_s / memory_eff + calls * kernel_s";
    let rules = format!("Conv:\n  time: \"{same}\"\nRelu:\n  time: \"{same}\"\n");
    let j = squeezenet(&pack("same", &[CALIBRATED, ("rules.yaml", &rules)]));
    schema::assert_valid("estimate.schema.json", &j);
    let (a, b) = (
        model["layers"].as_array().unwrap(),
        j["layers"].as_array().unwrap(),
    );
    let mut by_rule = 0;
    for (m, l) in a.iter().zip(b) {
        assert_eq!(l["predicted_s"], m["predicted_s"], "{}", l["name"]);
        assert_eq!(l["time_group"], m["time_group"], "{}", l["name"]);
        assert_eq!(m["predicted_by"], "model");
        let op = l["op"].as_str().unwrap();
        let want = if op == "Conv" || op == "Relu" {
            "rule"
        } else {
            "model"
        };
        assert_eq!(l["predicted_by"], want, "{}", l["name"]);
        by_rule += usize::from(want == "rule");
    }
    assert!(b.iter().any(|l| l["time_group"] == "Relu (fused)"));
    assert_eq!(j["total"]["predicted_s"], model["total"]["predicted_s"]);
    assert_eq!(j["total"]["predicted_by_rules"], by_rule);
    // The calibration's range is the time model's: with formulas in force
    // it is not given.
    assert!(model["total"]["predicted_low_s"].is_number());
    assert!(j["total"].get("predicted_low_s").is_none());

    // A formula of its own for Conv: 3 µs a kernel call over its roofline
    // bound, whatever the group says.
    let rules = "Conv:\n  time: \"max(compute_s, memory_s) + calls * 3 / 1000000\"\n";
    let j = squeezenet(&pack("own", &[CALIBRATED, ("rules.yaml", rules)]));
    for l in j["layers"].as_array().unwrap() {
        if l["op"] == "Conv" {
            let bound = l["bound_s"].as_f64().unwrap();
            let got = l["predicted_s"].as_f64().unwrap();
            assert!((got - (bound + 3e-6)).abs() <= 1e-15, "{}", l["name"]);
            assert_eq!(l["time_group"], "Conv");
        } else {
            assert_eq!(l["predicted_by"], "model");
        }
    }
}

#[test]
fn bad_time_formulas_are_one_line_errors_at_their_place() {
    let conv = |name: &str, formula: &str, device: (&str, &str)| {
        let p = pack(
            name,
            &[
                device,
                ("conv.yaml", &format!("Conv:\n  time: '{formula}'\n")),
            ],
        );
        (p.clone(), run(&p, "json"))
    };
    // An unknown name is found when the pack loads, device or not, with
    // the nearest name the formula could mean.
    let (p, r) = conv("unknown", "compute_s / compute_ef", PLAIN);
    assert_eq!(
        r.one_line_error(2),
        format!(
            "error: {p}/conv.yaml:2:22: unknown name 'compute_ef'; did you mean 'compute_eff'? in `compute_ef`"
        )
    );
    let r = C3::new().args(["rules", "check", &p]).run();
    r.code(2);
    assert!(
        r.stderr.contains("did you mean 'compute_eff'?"),
        "{}",
        r.stderr
    );
    // What the formula gives is checked when the layer is timed.
    for (name, formula, device, message) in [
        (
            "string",
            "\"fast\"",
            PLAIN,
            "a time must be a number of seconds, this is the string \"fast\" in time `\"fast\"`",
        ),
        (
            "negative",
            "0 - compute_s",
            PLAIN,
            "a time cannot be negative (-7.632e-8 s) in time `0 - compute_s`",
        ),
        (
            "zero",
            "compute_s / (kernel_s * 2)",
            PLAIN,
            "division by zero in time `compute_s / (kernel_s * 2)`",
        ),
        // The Conv group has no memory term: its efficiency is infinite.
        (
            "infinite",
            "memory_s * memory_eff",
            CALIBRATED,
            "a time must be a finite number of seconds, this is inf in time `memory_s * memory_eff`",
        ),
    ] {
        let (p, r) = conv(name, formula, device);
        assert_eq!(
            r.one_line_error(2),
            format!("error: {p}/conv.yaml:2:10: {message} (layer 'c', Conv)"),
            "{name}"
        );
        // Without --device it is never evaluated.
        C3::new()
            .args(["estimate", "-", "--rules", &p])
            .stdin(TRACE)
            .run()
            .ok();
    }
    // A rule that binds a name the time formula reads cannot have one.
    let p = pack(
        "binds",
        &[(
            "op.yaml",
            "Op:\n  domain: com.example\n  category: Custom\n  summary: s\n  doc: d\n  inputs: \"X\"\n  outputs: \"Y\"\n  attrs:\n    peak: 1\n  flops: \"|X|\"\n  mread: \"|X|\"\n  mwrite: \"|Y|\"\n  time: \"peak\"\n",
        )],
    );
    let r = C3::new().args(["rules", "check", &p]).run();
    let e = &r.code(2).stderr;
    assert!(
        e.contains("op.yaml:13:10: rule Op: 'peak' is a name of the rule"),
        "{e}"
    );
}

#[test]
fn explain_and_docs_show_the_formula_and_where_it_came_from() {
    let p = pack(
        "explain",
        &[
            PLAIN,
            (
                "conv.yaml",
                "Conv:\n  time: \"compute_s / 2 + 3 / 1000000\"\n",
            ),
        ],
    );
    let out = C3::new()
        .args(["explain", "Conv", "--rules", &p])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(
        out.contains(&format!(
            "  time   = compute_s / 2 + 3 / 1000000    (seconds a run takes, on --device; pack, {p}/conv.yaml:2:10)"
        )),
        "{out}"
    );
    assert!(out.contains("fields:   time from the pack;"), "{out}");
    // A pack's page renders it as DETAILS.md renders formulas, its `/` a
    // fraction (it divides exactly).
    let page = C3::new()
        .args(["docs", "--rules", &p])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(
        page.contains("| time (s) | $\\frac{\\mathit{compute\\_s}}{2} + \\frac{3}{1000000}$ |"),
        "{page}"
    );
    assert!(page.contains("gives time; takes category"), "{page}");
    // DETAILS.md lists every name the formula reads, and the precedence.
    let details = std::fs::read_to_string(format!("{ROOT}/DETAILS.md")).unwrap();
    for (name, _) in c3::rules::time_formula::TIME_NAMES {
        assert!(details.contains(&format!("| `{name}` |")), "{name}");
    }
    assert!(details.contains("its rule's `time:` formula, else the calibrated"));
}

#[test]
fn a_loop_body_layer_is_timed_once_a_run() {
    use crate::common::onnx::*;
    // Five iterations of h[1, 64] @ W[64, 64].
    let body = GraphProto {
        node: vec![
            node("MatMul", &["h", "W"], &["h_next"]),
            node("Identity", &["cond_in"], &["cond_out"]),
        ],
        input: vec![
            typed("i", INT64, &[]),
            typed("cond_in", BOOL, &[]),
            untyped("h"),
        ],
        output: vec![untyped("cond_out"), untyped("h_next")],
        ..Default::default()
    };
    let m = model(GraphProto {
        node: vec![with_graph(
            node("Loop", &["M", "", "h0"], &["h_final"]),
            "body",
            body,
        )],
        initializer: vec![weights("W", &[64, 64]), scalar("M", INT64, 5)],
        input: vec![float("h0", &[1, 64])],
        output: vec![untyped("h_final")],
        ..Default::default()
    });
    let p = pack(
        "loop",
        &[
            PLAIN,
            (
                "matmul.yaml",
                "MatMul:\n  time: \"flops / 1000000000 + 1 / 1000000\"\n",
            ),
        ],
    );
    let args = [
        "estimate", "--rules", &p, "--device", "cpu", "--format", "json",
    ];
    let (code, out, err) = c3_on(&m, "rule_time_loop", &args);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mm = j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "Loop-1/body/MatMul-1")
        .unwrap();
    // Each run: 64 outputs of 64 multiply-adds, 4,096 FLOPs, a nanosecond
    // each, plus 1 µs; five runs.
    assert_eq!(
        (mm["runs"].as_u64(), mm["flops"].as_u64()),
        (Some(5), Some(5 * 4096))
    );
    let want: f64 = (4096.0 / 1e9 + 1.0 / 1e6) * 5.0;
    let got = mm["predicted_s"].as_f64().unwrap();
    assert!((got - want).abs() <= 1e-18, "{got} {want}");
}
