//! TensorRT's layer profiles (issue 50): trtexec's `--exportProfile` file,
//! with or without the engine's `--exportLayerInfo` beside it, joined to
//! the layers its names list. The fixtures were written in trtexec 8.6's
//! format by scripts/trt_fixtures.py (no TensorRT here), from the models'
//! own node names.

use crate::common::cli::{C3, profile_fixture as profile, scratch, shipped as model};

/// `c3 estimate MODEL --profile F1 [--profile F2] --format json`.
fn joined(m: &str, files: &[&str]) -> serde_json::Value {
    let mut c = C3::new().args(["estimate", &model(m), "--format", "json"]);
    for f in files {
        c = c.args(["--profile", f]);
    }
    c.run().json()
}

fn names(j: &serde_json::Value, layers: &serde_json::Value) -> Vec<String> {
    layers
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            j["layers"][i.as_u64().unwrap() as usize]["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn a_resnet_engine_joins_every_layer_by_the_nodes_it_names() {
    let j = joined(
        "light_resnet50",
        &[&profile("light_resnet50.trt.profile.json")],
    );
    let p = &j["profile"];
    assert_eq!(p["runtime"], "tensorrt");
    // trtexec timed 1873 iterations; it has no time of a whole run.
    assert_eq!(
        (p["runs"].as_u64(), p["warmup_dropped"].as_u64()),
        (Some(1873), Some(0))
    );
    assert!(p["run_s"].is_null() && j["total"]["measured_s"].is_null());
    // 69 engine layers: 66 run model nodes, 3 were inserted (two
    // reformatting copies, one shuffle) and go with the layer they serve.
    // Their medianMs sum to 0.267067 ms, all of it joined: 100%.
    assert_eq!(p["kernels"], 69);
    assert_eq!(p["groups"].as_array().unwrap().len(), 66);
    assert!((p["kernels_s"].as_f64().unwrap() - 267.067e-6).abs() < 1e-12);
    assert_eq!(p["joined_share"].as_f64(), Some(1.0));
    assert!(p["unjoined"].as_array().unwrap().is_empty());
    assert!(p["layers_without_kernel"].as_array().unwrap().is_empty());
    // `gpu_0/conv1_w_0 + n0 + n1 + PWN(n2)`: the weight is no layer, the
    // three nodes one group on the convolution, with the reformatting copy
    // before it: 4.451 + 3.937 µs.
    let g = &p["groups"][0];
    assert_eq!(names(&j, &g["layers"]), ["n0", "n1", "n2"]);
    assert_eq!(g["lead"], "n0");
    assert_eq!(g["op"], "Conv");
    assert!((g["measured_s"].as_f64().unwrap() - 8.388e-6).abs() < 1e-12);
    assert_eq!(j["layers"][1]["measured_in"], "n0");
    assert_eq!(j["layers"][2]["measured_in"], "n0");
    assert!(j["layers"][2]["measured_s"].is_null());
    // A residual block's Sum and Relu fused into the convolution before
    // them (`n12 + n13 + n14 + PWN(n15)`), and, later, a pointwise layer
    // of their own (`PWN(PWN(n170), n171)`), led by the Sum.
    let group_of = |layer: &str| {
        let i = j["layers"]
            .as_array()
            .unwrap()
            .iter()
            .position(|l| l["name"] == layer)
            .unwrap();
        &p["groups"][j["layers"][i]["kernel"].as_u64().unwrap() as usize]
    };
    assert_eq!(
        names(&j, &group_of("n14")["layers"]),
        ["n12", "n13", "n14", "n15"]
    );
    let pwn = group_of("n171");
    assert_eq!(pwn["kernels"][0], "PWN(PWN(n170), n171)");
    assert_eq!(names(&j, &pwn["layers"]), ["n170", "n171"]);
    assert_eq!(pwn["lead"], "n170");
    // The inserted layers, each with the one its name says it serves (the
    // unnamed shuffle with the layer before it).
    let inserted: Vec<(String, String)> = p["inserted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let lead = &p["groups"][k["group"].as_u64().unwrap() as usize]["lead"];
            (
                k["kernel"].as_str().unwrap().to_string(),
                lead.as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        inserted,
        [
            (
                "Reformatting CopyNode for Input Tensor 0 to gpu_0/conv1_w_0 + n0 + n1 + PWN(n2)"
                    .into(),
                "n0".into()
            ),
            ("(Unnamed Layer* 313) [Shuffle]".into(), "n172".into()),
            (
                "Reformatting CopyNode for Input Tensor 0 to n174".into(),
                "n174".into()
            ),
        ]
    );
    // The Reshape TensorRT ran as that shuffle is no layer of the engine's:
    // it goes with the Gemm it feeds.
    assert_eq!(names(&j, &group_of("n173")["layers"]), ["n173", "n174"]);
}

#[test]
fn a_myelin_region_covers_the_nodes_between_its_ends() {
    let j = joined("calib_vit_b1", &[&profile("calib_vit_b1.trt.profile.json")]);
    let p = &j["profile"];
    // Five layers: the patch convolution, a copy, the region, the class
    // token's Gather and the head; 4.143 + 4.284 + 27.017 + 3.239 + 2.948
    // = 41.631 µs, all joined.
    assert_eq!(p["kernels"], 5);
    assert!((p["kernels_s"].as_f64().unwrap() - 41.631e-6).abs() < 1e-12);
    assert_eq!(p["joined_share"].as_f64(), Some(1.0));
    let region = &p["groups"][1];
    assert_eq!(
        region["kernels"][0],
        "{ForeignNode[node_view...node_layer_norm_12]}"
    );
    assert_eq!(region["op"], "Myelin");
    // Of the model's 182 layers, all but the convolution, the Gather and the
    // Gemm: 179, from node_view to node_layer_norm_12 in the graph's order,
    // the copy's 4.284 µs with the region's 27.017.
    let layers = names(&j, &region["layers"]);
    assert_eq!(layers.len(), 179);
    assert_eq!(
        (layers[0].as_str(), layers[178].as_str()),
        ("node_view", "node_layer_norm_12")
    );
    assert!((region["measured_s"].as_f64().unwrap() - 31.301e-6).abs() < 1e-12);
    // The region's time on its layer with the most work.
    assert_eq!(region["lead"], "node_MatMul_45");
    assert_eq!(p["inserted"][0]["group"], 1);
}

#[test]
fn layer_information_gives_the_layer_types_in_either_order() {
    let (p, l) = (
        profile("light_resnet50.trt.profile.json"),
        profile("light_resnet50.trt.layers.json"),
    );
    let a = joined("light_resnet50", &[&p, &l]);
    let b = joined("light_resnet50", &[&l, &p]);
    assert_eq!(a["profile"], b["profile"]);
    let g = &a["profile"]["groups"];
    assert_eq!(g[0]["op"], "CaskConvolution");
    assert_eq!(g[1]["op"], "CaskPooling");
    assert_eq!(a["profile"]["joined_share"].as_f64(), Some(1.0));
    // The Gemm's Metadata names the Reshape before it: the group has it.
    let gemm = g
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["lead"] == "n174")
        .unwrap();
    assert_eq!(names(&a, &gemm["layers"]), ["n173", "n174"]);
    // The options say both files.
    assert_eq!(a["meta"]["options"]["profile"], serde_json::json!([p, l]));
    let v = joined(
        "calib_vit_b1",
        &[
            &profile("calib_vit_b1.trt.profile.json"),
            &profile("calib_vit_b1.trt.layers.json"),
        ],
    );
    assert_eq!(v["profile"]["groups"][0]["op"], "CaskConvolution");
    assert_eq!(
        v["profile"]["groups"][1]["layers"]
            .as_array()
            .unwrap()
            .len(),
        179
    );
}

#[test]
fn a_layer_naming_nothing_of_the_model_is_listed_unjoined() {
    let dir = scratch("latency_trt", "unjoined");
    let text = std::fs::read_to_string(profile("light_resnet50.trt.profile.json")).unwrap();
    let more = text.trim_end().trim_end_matches(']').to_string()
        + ", { \"name\" : \"myPlugin_0 + (Unnamed Layer* 400) [PluginV2]\", \"averageMs\" : 0.032933 }\n]\n";
    let path = dir.join("plugin.json");
    std::fs::write(&path, more).unwrap();
    let j = joined("light_resnet50", &[path.to_str().unwrap()]);
    let p = &j["profile"];
    assert_eq!(
        p["unjoined"][0]["kernel"],
        "myPlugin_0 + (Unnamed Layer* 400) [PluginV2]"
    );
    // 267.067 of 267.067 + 32.933 = 300 µs joined: 89.02%.
    let share = p["joined_share"].as_f64().unwrap();
    assert!((share - 267.067 / 300.0).abs() < 1e-9, "{share}");
}

#[test]
fn bad_tensorrt_files_are_one_line_and_exit_2() {
    let dir = scratch("latency_trt", "bad");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let resnet_p = profile("light_resnet50.trt.profile.json");
    let resnet_l = profile("light_resnet50.trt.layers.json");
    let vit_l = profile("calib_vit_b1.trt.layers.json");
    let ort = profile("light_resnet50.all.json");
    let zero = write(
        "zero.json",
        r#"[{"count": 0}, {"name": "n0", "averageMs": 1}]"#,
    );
    let negative = write(
        "neg.json",
        r#"[{"count": 5}, {"name": "n0", "averageMs": -0.5}]"#,
    );
    let nan = write(
        "nan.json",
        r#"[{"count": 5}, {"name": "n0", "averageMs": NaN}]"#,
    );
    let twice = write(
        "two.json",
        r#"[{"count": 5}, {"name": "n0", "medianMs": 1}, {"count": 5}, {"name": "n0", "medianMs": 1}]"#,
    );
    let deep = write(
        "deep.json",
        &format!(
            r#"[{{"count": 5}}, {{"name": "{}n0{}", "medianMs": 1}}]"#,
            "PWN(".repeat(800),
            ")".repeat(800)
        ),
    );
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec![&resnet_l],
            &resnet_l,
            "TensorRT's layer information (--exportLayerInfo), not a profile",
        ),
        (vec![&ort, &ort], &ort, "neither of the pair"),
        (vec![&resnet_p, &resnet_p], &resnet_p, "neither of the pair"),
        (
            vec![&resnet_p, &vit_l],
            &vit_l,
            "not of this profile's engine: 0 of the profile's 69 layers",
        ),
        (vec![&zero], &zero, "count of iterations is 0"),
        (
            vec![&negative],
            &negative,
            "layer n0: averageMs of -0.5 is not a time",
        ),
        (vec![&nan], &nan, "not valid JSON"),
        (vec![&twice], &twice, "several optimization profiles"),
    ];
    for (files, named, says) in cases {
        let mut c = C3::new().args(["estimate", &model("light_resnet50")]);
        for f in &files {
            c = c.args(["--profile", f]);
        }
        let line = c.run().one_line_error(2).to_string();
        assert!(
            line.contains(named) && line.contains(says),
            "{files:?}: {line}"
        );
    }
    // A name nested 800 deep (4002 bytes, under MAX_PROFILE_NAME) is read:
    // its one member, n0, is a layer.
    let j = joined("light_resnet50", &[&deep]);
    assert_eq!(j["profile"]["groups"][0]["lead"], "n0");
    // A profile of another model.
    let line = C3::new()
        .args(["estimate", &model("calib_vit_b1"), "--profile", &resnet_p])
        .run()
        .one_line_error(2)
        .to_string();
    assert!(
        line.contains("the profile is not of this model: 0 of its 66 kernels"),
        "{line}"
    );
    // Three files: a usage error.
    C3::new()
        .args(["estimate", &model("light_resnet50")])
        .args([
            "--profile",
            &resnet_p,
            "--profile",
            &resnet_l,
            "--profile",
            &resnet_l,
        ])
        .run()
        .one_line_error(1);
}

/// Reports of TensorRT profiles calibrate a device: TensorRT records no
/// run, so a run's time is its engine layers' sum (`kernels_s`), and the
/// pack says the runtime it was fitted on.
#[test]
fn tensorrt_reports_calibrate_a_device() {
    let dir = scratch("latency_trt", "calibrate");
    let mut reports = Vec::new();
    for (m, p) in [
        ("light_resnet50", "light_resnet50.trt.profile.json"),
        ("calib_vit_b1", "calib_vit_b1.trt.profile.json"),
    ] {
        let path = dir.join(format!("{m}.json"));
        let j = joined(m, &[&profile(p)]);
        assert!(j["profile"]["run_s"].is_null());
        assert!(j["profile"]["kernels_s"].as_f64().unwrap() > 0.0);
        std::fs::write(&path, j.to_string()).unwrap();
        reports.push(path.display().to_string());
    }
    let pack = dir.join("pack");
    C3::new()
        .args(["calibrate", "-o", pack.to_str().unwrap(), "--name", "trt"])
        .args(&reports)
        .run()
        .ok();
    let yaml = std::fs::read_to_string(pack.join("devices.yaml")).unwrap();
    assert!(yaml.contains("runtime: \"tensorrt\""), "{yaml}");
    assert!(yaml.contains("reports: 2"), "{yaml}");
    // The pack predicts: a total of the model it was fitted on.
    let j = C3::new()
        .args([
            "estimate",
            &model("light_resnet50"),
            "--rules",
            pack.to_str().unwrap(),
            "--device",
            "trt",
            "--format",
            "json",
        ])
        .run()
        .json();
    assert!(j["total"]["predicted_s"].as_f64().unwrap() > 0.0);
}
