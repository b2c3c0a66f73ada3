//! Measured and predicted time (issue 50): profiles joined to layers, the
//! calibration's fit, predictions from a calibrated pack, and bad input.
//! The profiles are trimmed onnxruntime profiles of shipped models
//! (tests/fixtures/profiles, made by scripts/profile_fixtures.py).

use crate::common::cli::{C3, profile_fixture as profile, scratch, shipped as model};

/// `c3 estimate MODEL --profile FILE --format json [extra]`.
fn joined(m: &str, file: &str, extra: &[&str]) -> serde_json::Value {
    C3::new()
        .args([
            "estimate",
            &model(m),
            "--profile",
            &profile(file),
            "--format",
            "json",
        ])
        .args(extra)
        .run()
        .json()
}

#[test]
fn every_committed_profile_joins_at_least_95_percent_of_its_kernel_time() {
    for (m, file, extra) in [
        ("light_resnet50", "light_resnet50.all.json", &[][..]),
        ("light_resnet50", "light_resnet50.off.json", &[]),
        ("light_squeezenet", "light_squeezenet.all.json", &[]),
        ("light_inception_v2", "light_inception_v2.all.json", &[]),
        ("calib_mobilenetv3_b1", "calib_mobilenetv3_b1.all.json", &[]),
        ("calib_mobilenetv3_b1", "calib_mobilenetv3_b1.off.json", &[]),
        ("calib_vit_b1", "calib_vit_b1.all.json", &[]),
        (
            "gpt_decoder_dynamo",
            "gpt_decoder_dynamo.all.json",
            &["--dim", "batch=1", "--dim", "seq=32"],
        ),
    ] {
        let j = joined(m, file, extra);
        let p = &j["profile"];
        let share = p["joined_share"].as_f64().unwrap();
        assert!(share >= 0.95, "{file}: {share}");
        // Three runs, the first dropped: each kernel the median of two.
        assert_eq!(
            (p["runs"].as_u64(), p["warmup_dropped"].as_u64()),
            (Some(3), Some(1)),
            "{file}"
        );
        assert_eq!(p["runtime"], "onnxruntime");
        assert_eq!(p["provider"], "CPUExecutionProvider");
        // The total's measured time is the run's, and the kernels' sum is
        // no more than it (the runtime's own steps lie between kernels).
        let (run, kernels) = (
            j["total"]["measured_s"].as_f64().unwrap(),
            j["total"]["kernels_s"].as_f64().unwrap(),
        );
        assert!(
            kernels > 0.0 && kernels <= run * 1.05,
            "{file}: {kernels} {run}"
        );
        // Every kernel group's time sits on one layer of it.
        let layers = j["layers"].as_array().unwrap();
        let shown: f64 = layers.iter().filter_map(|l| l["measured_s"].as_f64()).sum();
        let groups: f64 = p["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["measured_s"].as_f64().unwrap())
            .sum();
        assert!((shown - groups).abs() <= 1e-9 * groups, "{file}");
    }
}

#[test]
fn a_fused_kernel_covers_its_group_and_a_layout_kernel_goes_with_a_neighbour() {
    let j = joined("light_resnet50", "light_resnet50.all.json", &[]);
    let p = &j["profile"];
    // onnxruntime runs n0 (Conv), n1 (BatchNormalization) and n2 (Relu) as
    // one NCHWc convolution named after n2's output, r2.
    let g = &p["groups"][0];
    assert_eq!(g["kernels"][0], "r2_nchwc");
    assert_eq!(g["layers"], serde_json::json!([0, 1, 2]));
    assert_eq!(g["lead"], "n0");
    let layers = j["layers"].as_array().unwrap();
    assert_eq!(layers[0]["measured_s"], g["measured_s"]);
    assert_eq!(layers[1]["measured_in"], "n0");
    assert!(layers[1]["measured_s"].is_null());
    // The layout kernel it inserted before the classifier goes with the
    // kernel before it; nothing is left unjoined.
    let inserted = p["inserted"].as_array().unwrap();
    assert!(
        inserted.iter().all(|k| k["op"] == "ReorderOutput"),
        "{inserted:?}"
    );
    assert!(!inserted.is_empty());
    assert!(p["unjoined"].as_array().unwrap().is_empty());
    assert_eq!(p["unjoined_s"], 0.0);
}

#[test]
fn without_optimizations_the_weight_builders_join_the_folded_layers() {
    // ORT_DISABLE_ALL runs every ConstantOfShape that builds a weight: c3
    // folds them (their inputs are constants), so their time joins the
    // folded layers and is no layer's measured time.
    let j = joined("light_resnet50", "light_resnet50.off.json", &[]);
    let p = &j["profile"];
    let folded = p["folded"].as_array().unwrap();
    assert!(folded.len() >= 100, "{}", folded.len());
    assert!(
        folded
            .iter()
            .all(|k| k["layer"].as_str().unwrap().starts_with("ConstantOfShape"))
    );
    // Each of the 176 layers ran as its own kernel, named as in the model.
    assert_eq!(p["groups"].as_array().unwrap().len(), 176);
    assert!(p["layers_without_kernel"].as_array().unwrap().is_empty());
}

#[test]
fn a_function_op_the_runtime_expands_joins_all_its_kernels() {
    // Without optimizations onnxruntime runs HardSwish as its function
    // body, HardSigmoid_N then Mul_N+1 (nodes of its own making): both
    // join the HardSwish layer, by place and shape.
    let j = joined("calib_mobilenetv3_b1", "calib_mobilenetv3_b1.off.json", &[]);
    let p = &j["profile"];
    assert!(
        p["unjoined"].as_array().unwrap().is_empty(),
        "{}",
        p["unjoined"]
    );
    let g = p["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["kernels"][0] == "HardSigmoid_261")
        .unwrap();
    assert_eq!(
        g["kernels"],
        serde_json::json!(["HardSigmoid_261", "Mul_262"])
    );
    assert_eq!(g["lead"], "/features/features.0/features.0.2/HardSwish");
}

#[test]
fn a_pytorch_trace_joins_the_hooks_layers_by_name() {
    let j = C3::new()
        .args([
            "estimate",
            &profile("tiny_cnn.trace.json"),
            "--profile",
            &profile("tiny_cnn.torch.json"),
            "--format",
            "json",
        ])
        .run()
        .json();
    let p = &j["profile"];
    assert_eq!(p["runtime"], "pytorch");
    assert_eq!(p["joined_share"], 1.0);
    // Every layer of the trace is a kernel of its own.
    let layers = j["layers"].as_array().unwrap();
    assert_eq!(p["groups"].as_array().unwrap().len(), layers.len());
    assert!(
        layers
            .iter()
            .all(|l| l["measured_s"].as_f64().unwrap() > 0.0)
    );
}

/// What `c3 estimate` prints of light_resnet50 with its committed
/// onnxruntime profile (default optimizations) on `--device h100`, in
/// `format`; it must succeed.
fn resnet50_profiled_on_h100(format: &str) -> String {
    C3::new()
        .args([
            "estimate",
            &model("light_resnet50"),
            "--profile",
            &profile("light_resnet50.all.json"),
            "--device",
            "h100",
            "--format",
            format,
        ])
        .run()
        .ok()
        .stdout
        .clone()
}

#[test]
fn every_format_shows_measured_time_beside_the_bound() {
    let args = resnet50_profiled_on_h100;
    let md = args("md");
    assert!(md.contains("| Measured (µs) | Bound/Meas % |"), "{md}");
    assert!(md.contains("| Measured (µs) | Time % |"), "{md}");
    assert!(md.contains("### Measured ("), "{md}");
    assert!(md.contains("100.0% of kernel time joined"), "{md}");
    // A layer fused into another's kernel says whose time holds its own.
    assert!(md.contains("| in n0 |"), "{md}");
    let csv = args("csv");
    let header = csv.lines().next().unwrap();
    assert!(
        header.ends_with("measured_us,measured_in,bound_of_measured_pct"),
        "{header}"
    );
    let table = args("table");
    assert!(table.contains("Measured (µs)"), "{table}");
    let html = args("html");
    assert!(html.contains("<h2>Measured against the bound</h2>"));
    assert!(html.contains("\"measured\":true"));
}

/// A fused kernel's bound is its layers' roofline as one kernel: their
/// compute summed, against the bytes crossing its edge. onnxruntime runs
/// light_resnet50's n0 (Conv), n1 (BatchNormalization) and n2 (Relu) as
/// one kernel, `r2_nchwc`; n0's and n1's outputs (1x64x112x112 float32,
/// 3,211,264 bytes each) never leave it, so of the three layers' 19.7 MB
/// only n0's reads, n1's parameters and n2's write cross:
/// 639,744 + (3,211,776 - 3,211,264) + (3,211,264 - 3,211,264) + 3,211,264
/// = 3,851,520 bytes, 1.15 µs on h100 (3.35 TB/s), under the 3.55 µs of
/// compute (n0 3.511, n1 0.024, n2 0.012). The layers' own bounds summed
/// are 7.35 µs.
#[test]
fn a_fused_kernels_bound_counts_only_the_bytes_crossing_its_edge() {
    let j: serde_json::Value = serde_json::from_str(&resnet50_profiled_on_h100("json")).unwrap();
    crate::common::schema::assert_valid("estimate.schema.json", &j);
    let layers = j["layers"].as_array().unwrap();
    let f = |i: usize, k: &str| layers[i][k].as_f64().unwrap();
    let group = &j["profile"]["groups"][0];
    assert_eq!(group["kernels"][0], "r2_nchwc");
    assert_eq!(group["layers"], serde_json::json!([0, 1, 2]));
    let internal = 3_211_264.0;
    assert_eq!((f(0, "mwrite"), f(1, "mwrite")), (internal, internal));
    let crossing =
        f(0, "mread") + (f(1, "mread") - internal) + (f(2, "mread") - internal) + f(2, "mwrite");
    assert_eq!(crossing, 3_851_520.0);
    let compute = f(0, "compute_s") + f(1, "compute_s") + f(2, "compute_s");
    let bound = group["bound_s"].as_f64().unwrap();
    assert!(compute > crossing / 3.35e12);
    assert!((bound - compute).abs() < 1e-15, "{bound} {compute}");
    let own: f64 = (0..3).map(|i| f(i, "bound_s")).sum();
    assert!((own - 7.346e-6).abs() < 1e-9 && bound < own / 2.0, "{own}");
    // A kernel of one layer is bounded by that layer: r3_nchwc is n3's.
    assert_eq!(j["profile"]["groups"][1]["bound_s"], layers[3]["bound_s"]);
    // The table's share is the kernel's bound over its measured time:
    // 100 * 3.547 µs / 2118 µs = 0.17%.
    let md = resnet50_profiled_on_h100("md");
    let row = md.lines().find(|l| l.starts_with("| n0 |")).unwrap();
    assert!(row.ends_with("| 2118.000 | 0.2 |"), "{row}");
}

#[test]
fn a_profile_of_another_model_is_refused() {
    let line = C3::new()
        .args([
            "estimate",
            &model("light_vgg19"),
            "--profile",
            &profile("light_resnet50.all.json"),
        ])
        .run()
        .one_line_error(2)
        .to_string();
    assert!(line.contains("the profile is not of this model"), "{line}");
    assert!(line.contains("light_resnet50.all.json"), "{line}");
}

#[test]
fn bad_profiles_get_one_line_and_exit_2() {
    let dir = scratch("latency", "bad_profiles");
    let long = format!(
        r#"[{{"cat": "Node", "name": "{}_kernel_time", "ts": 1, "dur": 2, "args": {{}}}}]"#,
        "x".repeat(5000)
    );
    for (name, text, says) in [
        (
            "notjson.json",
            "model_run, 12 ms".to_string(),
            "not a profile c3 reads",
        ),
        ("empty.json", String::new(), "the profile is empty"),
        (
            "cut.json",
            "[{\"cat\": \"Node\"".to_string(),
            "the JSON ends early",
        ),
        (
            "tensorrt.json",
            r#"{"Layers": ["conv1"], "Bindings": []}"#.to_string(),
            "TensorRT's layer information",
        ),
        (
            "trace.json",
            r#"{"layers": []}"#.to_string(),
            "not a Chrome trace",
        ),
        ("norun.json", "[]".to_string(), "records no kernel time"),
        ("long.json", long, "MAX_PROFILE_NAME"),
        // A kernel or run whose time is no time: negative, or past an hour
        // (3.6e9 µs).
        (
            "negative.json",
            r#"[{"cat": "Node", "name": "n0_kernel_time", "ts": 1, "dur": -5, "args": {}}]"#
                .to_string(),
            "event 1 ('n0_kernel_time'): dur -5 µs at ts 1 is not a time",
        ),
        (
            "forever.json",
            r#"[{"cat": "Node", "name": "n0_kernel_time", "ts": 1, "dur": 2, "args": {}},
                {"cat": "Session", "name": "model_run", "ts": 0, "dur": 3.7e9}]"#
                .to_string(),
            "event 2 ('model_run'): dur 3700000000 µs at ts 0 is not a time",
        ),
        // An event that is a list; Node events none of which is a kernel.
        (
            "nested.json",
            "[[[[\"Node\"]]]]".to_string(),
            "expected an event (a JSON object) at line 1 column 1",
        ),
        (
            "fences.json",
            r#"[{"cat": "Node", "name": "n0_fence_before", "ts": 1, "dur": 0}]"#.to_string(),
            "event 1 (cat Node, 'n0_fence_before') is not named <node>_kernel_time",
        ),
        // The same in a PyTorch trace from c3.torch.profile.
        (
            "torch_negative.json",
            r#"{"traceEvents": [{"ph": "X", "name": "c3.layer conv1", "ts": 5, "dur": -1}]}"#
                .to_string(),
            "event 1 ('c3.layer conv1'): dur -1 µs at ts 5 is not a time",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let line = C3::new()
            .args(["estimate", &model("light_squeezenet"), "--profile"])
            .arg(&path)
            .run()
            .one_line_error(2)
            .to_string();
        assert!(line.contains(says), "{name}: {line}");
        assert!(line.len() < 400, "{name}: {line}");
    }
    // A folder and a missing file.
    for path in [
        dir.to_str().unwrap().to_string(),
        format!("{}/missing.json", dir.display()),
    ] {
        C3::new()
            .args(["estimate", &model("light_squeezenet"), "--profile", &path])
            .run()
            .one_line_error(2);
    }
}

/// A report `c3 calibrate` reads, made from known figures: `layers` of
/// (op, class, category, work, bytes), each its own kernel group, timed
/// as the model says on a GTX 1080 Ti's roofline (10.6 TFLOP/s, 484 GB/s).
fn synthetic_report(name: &str, layers: &[(&str, Option<&str>, &str, u64, u64)]) -> String {
    // Truth: Conv/dense at 40% of the peak, 25% of the bandwidth and 5 µs
    // a kernel; Relu memory-bound at half the bandwidth and 2 µs a kernel.
    let time = |op: &str, work: u64, bytes: u64| {
        let (c, m) = (work as f64 / 10.6e12, bytes as f64 / 484e9);
        match op {
            "Conv" => c / 0.4 + m / 0.25 + 5e-6,
            _ => m / 0.5 + 2e-6,
        }
    };
    let mut rows = Vec::new();
    let mut groups = Vec::new();
    let mut run = 0.0;
    for (i, (op, class, category, work, bytes)) in layers.iter().enumerate() {
        let from = if i == 0 {
            "null".to_string()
        } else {
            format!("\"l{}\"", i - 1)
        };
        let class = class.map_or("null".to_string(), |c| format!("\"{c}\""));
        rows.push(format!(
            r#"{{"name": "l{i}", "op": "{op}", "iops": 0, "mrw": {bytes}, "inputs": [{{"dtype": "float32", "shape": [1]}}], "runs": 1, "work": {work}, "class": {class}, "category": "{category}", "input_from": {from}}}"#
        ));
        let t = time(op, *work, *bytes);
        run += t;
        groups.push(format!(
            r#"{{"measured_s": {t:e}, "layers": [{i}], "lead": "l{i}"}}"#
        ));
    }
    format!(
        r#"{{"meta": {{"model": "{name}.onnx"}}, "layers": [{}], "profile": {{"runtime": "onnxruntime", "provider": "CPUExecutionProvider", "threads": 1, "run_s": {run:e}, "groups": [{}]}}}}"#,
        rows.join(", "),
        groups.join(", ")
    )
}

/// The figures of one group in a written devices.yaml.
fn group_figures(yaml: &str, key: &str) -> String {
    yaml.lines()
        .find(|l| l.trim_start().starts_with(&format!("\"{key}\":")))
        .unwrap_or_else(|| panic!("no group {key} in {yaml}"))
        .to_string()
}

fn figure(line: &str, name: &str) -> Option<f64> {
    let at = line.find(&format!("{name}: "))? + name.len() + 2;
    let rest = &line[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

#[test]
fn the_fit_recovers_known_coefficients_from_reports_made_from_them() {
    let dir = scratch("latency", "fit");
    // Two models, each with convolutions and ReLUs of assorted sizes: every
    // group is seen in more than 8 kernels, and work and bytes vary apart.
    let mut paths = Vec::new();
    for (k, name) in ["a", "b"].iter().enumerate() {
        let mut layers = Vec::new();
        for i in 0..10u64 {
            let s = (i + 1) * (k as u64 + 1);
            layers.push((
                "Conv",
                Some("dense"),
                "Connection",
                3_000_000 * s * s + 7_000_000,
                40_000 * s + 900_000 * (i % 3),
            ));
            layers.push((
                "Relu",
                None,
                "Activation",
                50_000 * s,
                200_000 * s + 10_000 * (i % 4),
            ));
        }
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, synthetic_report(name, &layers)).unwrap();
        paths.push(path.display().to_string());
    }
    let pack = dir.join("pack");
    let out = C3::new()
        .args([
            "calibrate",
            "-o",
            pack.to_str().unwrap(),
            "--name",
            "synthetic",
            "--base",
            "gtx1080ti",
        ])
        .args(&paths)
        .run();
    out.ok();
    assert!(out.stdout.contains("fitted"), "{}", out.stdout);
    let yaml = std::fs::read_to_string(pack.join("devices.yaml")).unwrap();
    assert!(yaml.starts_with("# Written by `c3 calibrate`"));
    let close = |got: Option<f64>, want: f64| {
        let g = got.unwrap_or(f64::NAN);
        assert!(
            (g - want).abs() <= 1e-9 * want,
            "{g} against {want} in {yaml}"
        );
    };
    // Exact data: each group's figures come back, from its own fit and
    // from the fits of the broader groups that hold only it.
    for key in ["Conv/dense", "Conv", "category Connection"] {
        let line = group_figures(&yaml, key);
        close(figure(&line, "compute"), 0.4);
        close(figure(&line, "memory"), 0.25);
        close(figure(&line, "kernel_s"), 5e-6);
    }
    for key in ["Relu", "category Activation"] {
        let line = group_figures(&yaml, key);
        assert_eq!(figure(&line, "compute"), None, "{line}");
        close(figure(&line, "memory"), 0.5);
        close(figure(&line, "kernel_s"), 2e-6);
    }
    // Each model predicted by a fit without it is exact too.
    assert!(
        out.stdout.contains("median error 0.0%, worst 0.0%"),
        "{}",
        out.stdout
    );
    // The pack loads, lists its provenance and predicts.
    let devices = C3::new()
        .args(["devices", "--rules", pack.to_str().unwrap()])
        .run();
    devices.ok();
    assert!(
        devices.stdout.contains("synthetic: calibrated"),
        "{}",
        devices.stdout
    );
    assert!(
        devices.stdout.contains("from 2 models (40 kernels)"),
        "{}",
        devices.stdout
    );
}

/// A pack folder `latency/NAME` whose devices.yaml holds device `cpu`
/// ("test cpu": 1e11 op/s, 1e10 B/s) with the `time:` block `time` (its
/// lines indented by four), beside the other `files` given.
fn hand_made_device(name: &str, time: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let devices = format!(
        "cpu:\n  name: test cpu\n  peak: {{fp32: 1.0e11}}\n  bandwidth: 1.0e10\n  source: made by hand\n  time:\n{time}"
    );
    let mut all = vec![("devices.yaml", devices.as_str())];
    all.extend_from_slice(files);
    crate::common::cli::pack_folder("latency", name, &all)
}

#[test]
fn a_calibrated_pack_predicts_every_layer_and_the_total() {
    // Convolutions at half the peak plus 10 µs, everything else at the
    // bandwidth plus 1 µs; Relu after Conv/dense runs in the conv's kernel
    // at a tenth of the bandwidth's time.
    let pack = hand_made_device(
        "predict",
        "    range: [-0.1, 0.2]\n    fused: [\"Relu after Conv/dense\"]\n    groups:\n      \"Conv\": {compute: 0.5, kernel_s: 1.0e-5}\n      \"Relu (fused)\": {memory: 10.0}\n      \"*\": {memory: 1.0, kernel_s: 1.0e-6}\n",
        &[],
    );
    let j = C3::new()
        .args([
            "estimate",
            &model("light_squeezenet"),
            "--rules",
            pack.to_str().unwrap(),
            "--device",
            "cpu",
            "--format",
            "json",
        ])
        .run()
        .json();
    let layers = j["layers"].as_array().unwrap();
    let mut sum = 0.0;
    for l in layers {
        let (c, m) = (
            l["compute_s"].as_f64().unwrap(),
            l["memory_s"].as_f64().unwrap(),
        );
        let want = match (l["op"].as_str().unwrap(), l["time_group"].as_str().unwrap()) {
            ("Conv", "Conv") => c / 0.5 + 1e-5,
            ("Relu", "Relu (fused)") => m / 10.0,
            (_, "*") => m + 1e-6,
            other => panic!("{other:?}"),
        };
        let got = l["predicted_s"].as_f64().unwrap();
        assert!(
            (got - want).abs() <= 1e-12 + 1e-9 * want,
            "{}: {got} {want}",
            l["name"]
        );
        sum += got;
    }
    let total = j["total"]["predicted_s"].as_f64().unwrap();
    assert!((total - sum).abs() <= 1e-9 * sum);
    // The range: p / (1 + 0.2) to p / (1 - 0.1).
    let (lo, hi) = (
        j["total"]["predicted_low_s"].as_f64().unwrap(),
        j["total"]["predicted_high_s"].as_f64().unwrap(),
    );
    assert!((lo - total / 1.2).abs() <= 1e-9 * total && (hi - total / 0.9).abs() <= 1e-9 * total);
    assert_eq!(j["device"]["calibrated"], true);
    // Squeezenet's ReLUs after dense (3x3) convolutions are fused; those
    // after pointwise ones are not (the pack names Conv/dense only).
    assert!(layers.iter().any(|l| l["time_group"] == "Relu (fused)"));
    assert!(
        layers
            .iter()
            .any(|l| l["op"] == "Relu" && l["time_group"] == "*")
    );
    let md = C3::new()
        .args([
            "estimate",
            &model("light_squeezenet"),
            "--rules",
            pack.to_str().unwrap(),
            "--device",
            "cpu",
            "--format",
            "md",
        ])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(md.contains("Predicted (µs)"), "{md}");
    assert!(md.contains("- predicted "), "{md}");
}

#[test]
fn calibration_refuses_what_it_cannot_fit() {
    let dir = scratch("latency", "refused");
    let plain = dir.join("plain.json");
    let j = C3::new()
        .args([
            "estimate",
            &model("light_squeezenet"),
            "--format",
            "json",
            "-o",
        ])
        .arg(&plain)
        .run();
    j.ok();
    let pack = dir.join("pack");
    let line = C3::new()
        .args(["calibrate", "-o", pack.to_str().unwrap(), "--name", "x"])
        .arg(&plain)
        .run()
        .one_line_error(2)
        .to_string();
    assert!(line.contains("the report has no measured times"), "{line}");
    // Nothing is left behind.
    assert!(!pack.exists());
    let line = C3::new()
        .args(["calibrate", "-o", pack.to_str().unwrap(), "--name", ""])
        .arg(&plain)
        .run()
        .one_line_error(1)
        .to_string();
    assert!(line.contains("--name"), "{line}");
    // A report with measured times but no kernel joined to a layer gives
    // the fit no sample.
    let empty = dir.join("empty.json");
    let one = synthetic_report("empty", &[("Relu", None, "elementwise", 0, 4096)]);
    let at = one.find(r#""groups": ["#).unwrap();
    std::fs::write(&empty, format!(r#"{}"groups": []}}}}"#, &one[..at])).unwrap();
    let line = C3::new()
        .args(["calibrate", "-o", pack.to_str().unwrap(), "--name", "x"])
        .arg(&empty)
        .run()
        .one_line_error(2)
        .to_string();
    assert!(line.contains("nothing to fit"), "{line}");
    assert!(!pack.exists());
    // A devices.yaml c3 calibrate did not write is not replaced.
    std::fs::create_dir_all(&pack).unwrap();
    std::fs::write(pack.join("devices.yaml"), "mine: {}\n").unwrap();
    let report = dir.join("r.json");
    C3::new()
        .args([
            "estimate",
            &model("light_squeezenet"),
            "--profile",
            &profile("light_squeezenet.all.json"),
            "--format",
            "json",
            "-o",
        ])
        .arg(&report)
        .run()
        .ok();
    let line = C3::new()
        .args(["calibrate", "-o", pack.to_str().unwrap(), "--name", "x"])
        .arg(&report)
        .run()
        .one_line_error(1)
        .to_string();
    assert!(line.contains("add --force"), "{line}");
    assert_eq!(
        std::fs::read_to_string(pack.join("devices.yaml")).unwrap(),
        "mine: {}\n"
    );
}

#[test]
fn measured_and_predicted_times_sort_and_colour_and_annotate() {
    let m = model("light_squeezenet");
    let prof = profile("light_squeezenet.all.json");
    // Sorted by measured time: the first row is the slowest kernel group.
    let j = C3::new()
        .args([
            "estimate",
            &m,
            "--profile",
            &prof,
            "--sort",
            "measured_s",
            "--top",
            "3",
            "--format",
            "json",
        ])
        .run()
        .json();
    let times: Vec<f64> = j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["measured_s"].as_f64().unwrap())
        .collect();
    assert_eq!(times.len(), 3);
    assert!(times[0] >= times[1] && times[1] >= times[2], "{times:?}");
    let most = j["profile"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["measured_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(times[0], most);
    // Without a profile, --sort measured_s and --metric measured_s say what
    // they need.
    let line = C3::new()
        .args(["estimate", &m, "--sort", "measured_s"])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(line.contains("--sort measured_s needs --profile"), "{line}");
    let line = C3::new()
        .args([
            "estimate",
            &m,
            "--format",
            "model-explorer",
            "--metric",
            "measured_s",
        ])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(
        line.contains("--metric measured_s needs --profile"),
        "{line}"
    );
    let me = C3::new()
        .args([
            "estimate",
            &m,
            "--profile",
            &prof,
            "--format",
            "model-explorer",
            "--metric",
            "measured_s",
        ])
        .run()
        .json();
    let text = me.to_string();
    assert!(text.contains("\"value\""), "{text}");
    // A batch or a diff takes no profile (one profile is of one model).
    let line = C3::new()
        .args(["estimate", &m, &model("light_vgg19"), "--profile", &prof])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(line.contains("--profile"), "{line}");
    // annotate puts each node's measured time in its metadata.
    let dir = scratch("latency", "annotate");
    let out = dir.join("a.onnx");
    C3::new()
        .args(["annotate", &m, "--profile", &prof, "-o"])
        .arg(&out)
        .run()
        .ok();
    let bytes = std::fs::read(&out).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("c3.measured_s"), "no measured_s in the copy");
}

#[test]
fn a_batched_product_of_activations_calls_its_kernel_once_a_matrix() {
    // [2, 3, 4, 5] x [2, 3, 5, 6]: 2 x 3 = 6 matrix products; with a
    // constant right side (a linear layer), one call.
    let trace = r#"{"layers": [
        {"name": "qk", "op": "MatMul", "inputs": [{"shape": [2, 3, 4, 5]}, {"shape": [2, 3, 5, 6]}], "outputs": [{"shape": [2, 3, 4, 6]}]},
        {"name": "fc", "op": "MatMul", "inputs": [{"shape": [2, 3, 4, 5]}, {"shape": [5, 6], "const": true}], "outputs": [{"shape": [2, 3, 4, 6]}]}
    ]}"#;
    let j = C3::new()
        .args(["estimate", "-", "--device", "h100", "--format", "json"])
        .stdin(trace)
        .run()
        .json();
    let layers = j["layers"].as_array().unwrap();
    assert_eq!(
        (layers[0]["class"].as_str(), layers[0]["calls"].as_u64()),
        (Some("activations"), Some(6))
    );
    assert_eq!(
        (layers[1]["class"].as_str(), layers[1]["calls"].as_u64()),
        (Some("weights"), Some(1))
    );
    // A calibrated device pays its kernel cost each call: 6 x 1 µs.
    let dir = hand_made_device(
        "calls",
        "    groups:\n      \"*\": {kernel_s: 1.0e-6}\n",
        &[],
    );
    let j = C3::new()
        .args([
            "estimate",
            "-",
            "--rules",
            dir.to_str().unwrap(),
            "--device",
            "cpu",
            "--format",
            "json",
        ])
        .stdin(trace)
        .run()
        .json();
    let p: Vec<f64> = j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["predicted_s"].as_f64().unwrap())
        .collect();
    assert!(
        (p[0] - 6e-6).abs() < 1e-15 && (p[1] - 1e-6).abs() < 1e-15,
        "{p:?}"
    );
}

/// `c3 explain OP --in ... --device D` times the evaluation as `estimate`
/// times a layer. The pack's device: 1e11 op/s, 1e10 B/s; Conv's time
/// group at half the peak plus 10 µs a kernel; MatMul timed by the pack's
/// `time:` formula, `max(compute_s, memory_s) * 5 / 4`.
#[test]
fn explain_times_an_evaluation_on_a_device() {
    let pack = hand_made_device(
        "explain",
        "    groups:\n      \"Conv\": {compute: 0.5, kernel_s: 1.0e-5}\n      \"*\": {memory: 1.0, kernel_s: 1.0e-6}\n",
        &[(
            "mm.yaml",
            "MatMul:\n  time: \"max(compute_s, memory_s) * 5 / 4\"\n",
        )],
    );
    let explain = |args: &[&str]| {
        C3::new()
            .args([
                "explain",
                "--rules",
                pack.to_str().unwrap(),
                "--device",
                "cpu",
            ])
            .args(args)
            .run()
    };
    // Conv 3 -> 64 channels, 7x7, stride 2 on 224x224: |Y| = 64 * 112 *
    // 112 = 802,816 outputs of a 147-long window; without a bias each is
    // 147 multiplies and 146 adds, so work = 802,816 * 293 = 235,225,088:
    // 2.352 ms at 1e11 op/s. Bytes: 639,744 read, 3,211,264 written,
    // 385.101 µs at 1e10 B/s. Predicted: 2.35225 ms / 0.5 + 10 µs.
    let conv = explain(&[
        "Conv",
        "--in",
        "X=1x3x224x224",
        "--in",
        "W=64x3x7x7",
        "--attr",
        "strides=2,2",
        "--attr",
        "pads=3,3,3,3",
    ]);
    let out = &conv.ok().stdout;
    assert!(
        out.contains("On test cpu:\n  fp32 peak 100.0 GFLOP/s (a multiply-add as 2), 10.0 GB/s\n"),
        "{out}"
    );
    for line in [
        "work      = 235225088 ",
        "compute_s = 2.352 ms ",
        "memory_s  = 385.101 µs ",
        "bound     = 2.352 ms       (compute-bound)",
        "predicted = 4.715 ms       (time group Conv)\n              = compute_s / 0.500 + 10.000 µs a kernel\n",
    ] {
        assert!(out.contains(line), "{line} in {out}");
    }
    // MatMul 64x256 by 256x128: work 64 * 128 * 511 = 4,186,112, 41.861
    // µs; (65,536 + 131,072 + 32,768) bytes, 22.938 µs; the formula gives
    // 41.861 * 5 / 4 = 52.326 µs.
    let mm = explain(&["MatMul", "--in", "A=64x256", "--in", "B=256x128"]);
    let out = &mm.ok().stdout;
    assert!(out.contains("bound     = 41.861 µs"), "{out}");
    assert!(
        out.contains("predicted = 52.326 µs      (the rule's time formula, "),
        "{out}"
    );
    assert!(out.contains("mm.yaml:2:"), "{out}");
    // Without shapes there is nothing to time: a usage error.
    let line = explain(&["Conv"]).one_line_error(1).to_string();
    assert!(line.contains("--device times an evaluation"), "{line}");
}
