//! Training (issue 51): each layer's backward from its rule or its
//! category's default, which gradients a step computes, the optimizer's
//! step, training memory, `--fit`, a trace's recorded backward, and bad
//! input. The models are traces written here, so that every expected
//! number can be worked out by hand beside it.

use crate::common::cli::{C3, scratch};

/// A tensor of a trace: named, so that c3 follows the graph through it.
fn t(name: &str, shape: &[&str], constant: bool) -> String {
    let dims: Vec<String> = shape
        .iter()
        .map(|d| match d.parse::<u64>() {
            Ok(n) => n.to_string(),
            Err(_) => format!("\"{d}\""),
        })
        .collect();
    format!(
        r#"{{"name": "{name}", "shape": [{}], "dtype": "float32"{}}}"#,
        dims.join(", "),
        if constant { r#", "const": true"# } else { "" }
    )
}

/// An MLP: x[b, 16] → fc1 (Gemm, 32 out) → Relu → fc2 (Gemm, 4 out).
/// Parameters: 16·32 + 32 + 32·4 + 4 = 676.
fn mlp(batch: &str) -> String {
    let b = batch;
    format!(
        r#"{{"layers": [
          {{"op": "Gemm", "name": "fc1", "attrs": {{"transB": 1}},
            "inputs": [{}, {}, {}], "outputs": [{}]}},
          {{"op": "Relu", "name": "relu", "inputs": [{}], "outputs": [{}]}},
          {{"op": "Gemm", "name": "fc2", "attrs": {{"transB": 1}},
            "inputs": [{}, {}, {}], "outputs": [{}]}}
        ]}}"#,
        t("x", &[b, "16"], false),
        t("fc1.weight", &["32", "16"], true),
        t("fc1.bias", &["32"], true),
        t("h", &[b, "32"], false),
        t("h", &[b, "32"], false),
        t("r", &[b, "32"], false),
        t("r", &[b, "32"], false),
        t("fc2.weight", &["4", "32"], true),
        t("fc2.bias", &["4"], true),
        t("y", &[b, "4"], false),
    )
}

/// `c3 estimate TRACE --format json --training ARGS`, checked against the
/// report's schema.
fn estimate(trace: &str, args: &[&str]) -> serde_json::Value {
    // A folder of its own for each call: tests run at once, and scratch()
    // empties the folder it gives.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let key = fxhash(&format!("{trace}{args:?}{n}"));
    let dir = scratch("training", &format!("{key:x}"));
    let path = dir.join("model.json");
    std::fs::write(&path, trace).unwrap();
    let j = C3::new()
        .arg("estimate")
        .arg(&path)
        .args(["--format", "json", "--training"])
        .args(args)
        .run()
        .json();
    crate::common::schema::assert_valid("estimate.schema.json", &j);
    j
}

fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

fn layer<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no layer {name}"))
}

#[test]
fn an_mlp_trains_every_weight_and_not_its_input() {
    let j = estimate(&mlp("8"), &["--optimizer", "adam"]);
    // fc1: no gradient of x (a graph input); ∂W = M·N·K = 8·32·16 = 4096
    // products, ∂b = |Y| − |b| = 256 − 32 = 224 adds.
    assert_eq!(layer(&j, "fc1")["backward"]["flops"], 4096 + 224);
    assert_eq!(
        layer(&j, "fc1")["backward"]["grads"],
        serde_json::json!([1, 2])
    );
    // relu: one select per element of its 8·32 input.
    assert_eq!(layer(&j, "relu")["backward"]["flops"], 256);
    // fc2: ∂A = ∂W = 8·4·32 = 1024 each, ∂b = 32 − 4 = 28.
    assert_eq!(layer(&j, "fc2")["backward"]["flops"], 1024 + 1024 + 28);
    assert_eq!(j["total"]["backward"]["flops"], 4320 + 256 + 2076);
    // Adam: 9 FLOPs a parameter with FMA.
    assert_eq!(j["total"]["optimizer"]["flops"], 676 * 9);
    let m = &j["total"]["training_memory"];
    // fp32: weights 4, gradients 4, Adam's m and v 8 bytes a parameter.
    assert_eq!(m["weights"], 676 * 4);
    assert_eq!(m["gradients"], 676 * 4);
    assert_eq!(m["optimizer_states"], 676 * 8);
    // Saved: fc1 keeps x (8·16·4 = 512 B), relu its output r (8·32·4 =
    // 1024 B), which fc2 keeps too: counted once.
    assert_eq!(m["saved_activations"], 512 + 1024);
    assert_eq!(layer(&j, "fc2")["backward"]["saves"], 1024);
    // The largest working set: relu reads ∂r and writes ∂h, 1024 B each.
    assert_eq!(m["transient"], 2048);
    assert_eq!(m["peak"], 676 * 16 + 1536 + 2048);
    assert_eq!(j["training"]["trainable_params"], 676);
}

#[test]
fn adam_holds_sixteen_bytes_a_parameter_in_fp32_and_in_bf16_with_fp32_masters() {
    let fp32 = estimate(&mlp("8"), &["--optimizer", "adam"]);
    let bf16 = estimate(
        &mlp("8"),
        &[
            "--optimizer",
            "adam",
            "--weights",
            "bf16",
            "--master-weights",
            "fp32",
        ],
    );
    let states = |j: &serde_json::Value| {
        let m = &j["total"]["training_memory"];
        ["weights", "gradients", "optimizer_states"]
            .iter()
            .map(|k| m[k].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(states(&fp32), 676 * 16);
    // bf16: weights 2 + gradients 2, and fp32 master, m and v: 12.
    assert_eq!(states(&bf16), 676 * 16);
    assert_eq!(bf16["total"]["training_memory"]["weights"], 676 * 2);
    assert_eq!(
        bf16["total"]["training_memory"]["optimizer_states"],
        676 * 12
    );
    // Without a master copy, bf16 states: 2 + 2 + 4.
    let plain = estimate(&mlp("8"), &["--optimizer", "adam", "--weights", "bf16"]);
    assert_eq!(states(&plain), 676 * 8);
    // SGD keeps no state.
    let sgd = estimate(&mlp("8"), &["--optimizer", "sgd"]);
    assert_eq!(sgd["total"]["training_memory"]["optimizer_states"], 0);
    assert_eq!(sgd["total"]["optimizer"]["flops"], 676);
}

#[test]
fn frozen_weights_get_no_gradient_and_nothing_upstream_of_them_does() {
    let j = estimate(&mlp("8"), &["--freeze", "fc1.*"]);
    // fc1 trains nothing, so neither fc1 nor relu computes a gradient.
    assert!(layer(&j, "fc1")["backward"].is_null());
    assert!(layer(&j, "relu")["backward"].is_null());
    // fc2: ∂W and ∂b only, 1024 + 28; its input needs no gradient.
    assert_eq!(layer(&j, "fc2")["backward"]["flops"], 1024 + 28);
    assert_eq!(j["training"]["trainable_params"], 132);
    assert_eq!(j["training"]["frozen_params"], 544);
    // Freezing by layer name does the same.
    let k = estimate(&mlp("8"), &["--freeze", "fc?"]);
    assert_eq!(k["training"]["trainable_params"], 0);
    assert_eq!(k["total"]["backward"]["flops"], 0);
}

/// A residual block: x → conv1 → relu1 → conv2 → add(·, x) → relu2, on
/// 1×4×8×8 with 3×3 kernels padded to keep the size.
fn residual() -> String {
    let a = ["1", "4", "8", "8"];
    let w = ["4", "4", "3", "3"];
    let conv = |name: &str, x: &str, wn: &str, y: &str| {
        format!(
            r#"{{"op": "Conv", "name": "{name}", "attrs": {{"pads": [1, 1, 1, 1]}},
               "inputs": [{}, {}], "outputs": [{}]}}"#,
            t(x, &a, false),
            t(wn, &w, true),
            t(y, &a, false)
        )
    };
    format!(
        r#"{{"layers": [{}, {{"op": "Relu", "name": "relu1", "inputs": [{}], "outputs": [{}]}},
          {}, {{"op": "Add", "name": "add", "inputs": [{}, {}], "outputs": [{}]}},
          {{"op": "Relu", "name": "relu2", "inputs": [{}], "outputs": [{}]}}]}}"#,
        conv("conv1", "x", "w1", "y1"),
        t("y1", &a, false),
        t("r1", &a, false),
        conv("conv2", "r1", "w2", "y2"),
        t("y2", &a, false),
        t("x", &a, false),
        t("s", &a, false),
        t("s", &a, false),
        t("out", &a, false),
    )
}

#[test]
fn a_residual_blocks_saved_activations_worked_out_by_hand() {
    let j = estimate(&residual(), &[]);
    // Each activation is 1·4·8·8 = 256 floats, 1024 bytes. conv1 keeps x
    // (for ∂W1), relu1 its output r1, conv2 r1 again (one tensor), the
    // add nothing, relu2 its output: x, r1 and out, 3072 bytes.
    assert_eq!(layer(&j, "conv1")["backward"]["saves"], 1024);
    assert_eq!(layer(&j, "add")["backward"]["saves"], 0);
    assert_eq!(j["total"]["training_memory"]["saved_activations"], 3 * 1024);
    // Backward FLOPs: conv1 ∂W1 only (x is an input): |Y|·Cg·k² = 256·36 =
    // 9216; relu1 256; conv2 ∂X and ∂W, 9216 each; the add passes ∂s on
    // to y2 (no reduction: 0) and gives x none; relu2 256.
    assert_eq!(layer(&j, "conv1")["backward"]["flops"], 9216);
    assert_eq!(
        layer(&j, "add")["backward"]["grads"],
        serde_json::json!([0])
    );
    assert_eq!(j["total"]["backward"]["flops"], 9216 + 256 + 2 * 9216 + 256);
    // Recomputing the block (its layers are named conv*, relu*, add: one
    // block each under this glob) keeps only what each reads from outside.
    let r = estimate(&residual(), &["--recompute", "conv2"]);
    // conv2's input r1 comes from outside its block: still kept.
    assert_eq!(r["total"]["training_memory"]["saved_activations"], 3 * 1024);
    // and its backward runs its forward again: 9216 more.
    assert_eq!(
        r["total"]["backward"]["flops"],
        j["total"]["backward"]["flops"].as_u64().unwrap() + 9216
    );
}

#[test]
fn without_fma_the_backward_counts_each_multiply_and_add() {
    let j = estimate(&residual(), &["--no-fma"]);
    // conv2's ∂X: 2 · 9216; ∂W: each of the 144 weights sums 64 products,
    // 2·9216 − 144; conv1's ∂W the same.
    assert_eq!(
        layer(&j, "conv2")["backward"]["flops"],
        2 * 9216 + 2 * 9216 - 144
    );
    assert_eq!(layer(&j, "conv1")["backward"]["flops"], 2 * 9216 - 144);
}

#[test]
fn fit_finds_the_largest_batch_whose_step_fits() {
    let j = estimate(
        &mlp("batch"),
        &[
            "--optimizer",
            "adam",
            "--device",
            "gtx1080ti",
            "--fit",
            "batch",
        ],
    );
    // Per sample: x 64 B and r 128 B saved, and relu's working set 256 B:
    // the peak is 676·16 + 448·b bytes, within 11 GiB up to
    // b = ⌊(11·2^30 − 10816) / 448⌋.
    let largest = (11u64 * (1 << 30) - 10816) / 448;
    assert_eq!(j["training"]["fit"]["largest"], largest);
    assert_eq!(j["training"]["fit"]["dim"], "batch");
    let m = &j["total"]["training_memory"];
    assert_eq!(m["peak"], 10816 + 448 * largest);
    assert_eq!(m["fits"], true);
    assert_eq!(m["capacity"], 11u64 << 30);
    // One more sample does not fit.
    let over = largest + 1;
    let k = estimate(
        &mlp("batch"),
        &[
            "--optimizer",
            "adam",
            "--device",
            "gtx1080ti",
            "--dim",
            &format!("batch={over}"),
        ],
    );
    assert_eq!(k["total"]["training_memory"]["fits"], false);
    assert!(k["total"]["training_memory"]["margin"].as_i64().unwrap() < 0);
}

#[test]
fn a_traces_recorded_backward_replaces_the_rules() {
    // A conv whose backward the framework ran as the weight's gradient
    // (the Conv rule's ∂W: 9216) and an extra product of 2×3 by 3×4 (24).
    let a = ["1", "4", "8", "8"];
    let conv = format!(
        r#"{{"op": "Conv", "name": "conv", "attrs": {{"pads": [1, 1, 1, 1]}},
            "inputs": [{}, {}], "outputs": [{}]"#,
        t("x", &a, false),
        t("w", &["4", "4", "3", "3"], true),
        t("y", &a, false)
    );
    let trace = format!(
        r#"{{"layers": [{conv}}}, {conv}, "backward_of": 0, "grads": [1]}},
          {{"op": "MatMul", "backward_of": 0, "inputs": [{}, {}], "outputs": [{}]}}]}}"#,
        t("p", &["2", "3"], false),
        t("q", &["3", "4"], false),
        t("pq", &["2", "4"], false)
    );
    let j = estimate(&trace, &[]);
    assert_eq!(j["layers"].as_array().unwrap().len(), 1);
    assert_eq!(layer(&j, "conv")["backward"]["flops"], 9216 + 24);
    assert_eq!(j["training"]["recorded"], true);
}

#[test]
fn every_format_shows_the_backward() {
    let dir = scratch("training", "formats");
    let path = dir.join("mlp.json");
    std::fs::write(&path, mlp("8")).unwrap();
    for (format, want) in [
        ("table", "Bwd KFLOPs"),
        ("md", "Training step"),
        ("csv", "backward_flops"),
        // Adam's step and the peak on the total row: 676 · 9 FLOPs.
        ("csv", ",6084,"),
        ("html", "Training step"),
    ] {
        let out = C3::new()
            .arg("estimate")
            .arg(&path)
            .args(["--training", "--optimizer", "adam", "--format", format])
            .run()
            .ok()
            .stdout
            .clone();
        assert!(out.contains(want), "{format}: {out}");
    }
}

#[test]
fn bad_training_input_gets_one_line() {
    let dir = scratch("training", "bad");
    let a = t("x", &["2", "3"], false);
    for (trace, want) in [
        (
            format!(r#"{{"layers": [{{"op": "Relu", "backward_of": 0, "inputs": [{a}]}}]}}"#),
            "backward_of 0 is no earlier forward layer",
        ),
        (
            format!(
                r#"{{"layers": [{{"op": "Relu", "inputs": [{a}]}}, {{"op": "Relu", "backward_of": 0, "grads": [3], "inputs": [{a}]}}]}}"#
            ),
            "grads names input 3",
        ),
        (
            format!(r#"{{"layers": [{{"op": "Relu", "grads": [0], "inputs": [{a}]}}]}}"#),
            "grads is given without backward_of",
        ),
    ] {
        let path = dir.join("bad.json");
        std::fs::write(&path, &trace).unwrap();
        let line = C3::new()
            .arg("estimate")
            .arg(&path)
            .arg("--training")
            .run()
            .one_line_error(2)
            .to_string();
        assert!(line.contains(want), "{line}");
    }
    let path = dir.join("mlp.json");
    std::fs::write(&path, mlp("8")).unwrap();
    for (args, want) in [
        (&["--optimizer", "adam"][..], "--training"),
        (
            &["--training", "--optimizer", "adagrad"],
            "unknown optimizer 'adagrad'",
        ),
        (&["--training", "--fit", "batch"], "--device"),
    ] {
        let line = C3::new()
            .arg("estimate")
            .arg(&path)
            .args(args)
            .run()
            .one_line_error(1)
            .to_string();
        assert!(line.contains(want), "{args:?}: {line}");
    }
    // A device without memory in the catalog cannot answer --fit.
    std::fs::write(&path, mlp("batch")).unwrap();
    let line = C3::new()
        .arg("estimate")
        .arg(&path)
        .args(["--training", "--device", "xeon-8480", "--fit", "batch"])
        .run()
        .one_line_error(1)
        .to_string();
    assert!(line.contains("memory"), "{line}");
}

#[test]
fn a_tensor_read_twice_sums_its_two_gradients() {
    // conv → relu → add(b, b): b's gradient is the sum of the add's two.
    let a = ["1", "4", "8", "8"];
    let trace = format!(
        r#"{{"layers": [
          {{"op": "Conv", "name": "conv", "attrs": {{"pads": [1, 1, 1, 1]}},
            "inputs": [{}, {}], "outputs": [{}]}},
          {{"op": "Relu", "name": "relu", "inputs": [{}], "outputs": [{}]}},
          {{"op": "Add", "name": "add", "inputs": [{}, {}], "outputs": [{}]}}]}}"#,
        t("x", &a, false),
        t("w", &["4", "4", "3", "3"], true),
        t("a", &a, false),
        t("a", &a, false),
        t("b", &a, false),
        t("b", &a, false),
        t("b", &a, false),
        t("s", &a, false),
    );
    let j = estimate(&trace, &[]);
    // relu: 256 selects, and the sum of b's two gradients: 256 additions,
    // reading both (2 · 1024 B) and writing one (1024 B).
    assert_eq!(layer(&j, "relu")["backward"]["flops"], 256 + 256);
    assert_eq!(layer(&j, "relu")["backward"]["mread"], 2 * 1024 + 2 * 1024);
    assert_eq!(layer(&j, "add")["backward"]["flops"], 0);
    assert_eq!(j["total"]["backward"]["flops"], 9216 + 512);
}

#[test]
fn scalar_constants_and_running_statistics_do_not_train() {
    // y = x · 0.5 (a one-element constant), then a batch norm whose
    // running mean and variance are constants too: only scale and B train.
    let trace = format!(
        r#"{{"layers": [
          {{"op": "Conv", "name": "conv", "inputs": [{}, {}], "outputs": [{}]}},
          {{"op": "Mul", "name": "half", "inputs": [{}, {}], "outputs": [{}]}},
          {{"op": "BatchNormalization", "name": "bn",
            "inputs": [{}, {}, {}, {}, {}], "outputs": [{}]}}]}}"#,
        t("x", &["2", "3", "4", "4"], false),
        t("w", &["3", "3", "1", "1"], true),
        t("c", &["2", "3", "4", "4"], false),
        t("c", &["2", "3", "4", "4"], false),
        t("k", &[], true),
        t("h", &["2", "3", "4", "4"], false),
        t("h", &["2", "3", "4", "4"], false),
        t("bn.weight", &["3"], true),
        t("bn.bias", &["3"], true),
        t("bn.running_mean", &["3"], true),
        t("bn.running_var", &["3"], true),
        t("y", &["2", "3", "4", "4"], false),
    );
    let j = estimate(&trace, &[]);
    // Trainable: w (9), bn.weight and bn.bias (3 each); frozen: the
    // constant 0.5 and the running statistics, 1 + 3 + 3.
    assert_eq!(j["training"]["trainable_params"], 9 + 3 + 3);
    assert_eq!(j["training"]["frozen_params"], 1 + 3 + 3);
    assert_eq!(
        layer(&j, "half")["backward"]["grads"],
        serde_json::json!([0])
    );
    assert_eq!(
        layer(&j, "bn")["backward"]["grads"],
        serde_json::json!([0, 1, 2])
    );
    // bn: ∂X 4·96, ∂scale 2·96, ∂B 96 − 3 (96 = 2·3·4·4 elements).
    assert_eq!(layer(&j, "bn")["backward"]["flops"], 4 * 96 + 2 * 96 + 93);
}

#[test]
fn resnet50_trains_what_torch_trains() {
    let j = C3::new()
        .args([
            "estimate",
            &format!(
                "{}/examples/onnx/light_resnet50.onnx",
                crate::common::cli::ROOT
            ),
            "--format",
            "json",
            "--training",
            "--optimizer",
            "adamw",
            "--device",
            "h100",
        ])
        .run()
        .json();
    crate::common::schema::assert_valid("estimate.schema.json", &j);
    // torchvision's resnet50 has 25,557,032 parameters; the export's other
    // 53,120 floats are the batch norms' running means and variances
    // (2 × 26,560 channels), which do not train.
    assert_eq!(j["training"]["trainable_params"], 25_557_032);
    assert_eq!(j["training"]["frozen_params"], 53_120);
    assert_eq!(j["total"]["optimizer"]["flops"], 25_557_032u64 * 10);
    // The first convolution computes no input gradient, so the backward is
    // under twice the forward.
    let (f, b) = (
        j["total"]["flops"].as_u64().unwrap(),
        j["total"]["backward"]["flops"].as_u64().unwrap(),
    );
    assert!(b < 2 * f && b > f, "{b} vs {f}");
    assert_eq!(j["total"]["training_memory"]["fits"], true);
    assert!(j["training"]["not_counted"].as_array().unwrap().is_empty());
}

#[test]
fn explain_shows_the_backward_or_its_default() {
    let conv = C3::new()
        .args(["explain", "Conv"])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(
        conv.contains("backward ∂W: flops = fma ? |Y| * window"),
        "{conv}"
    );
    assert!(conv.contains("backward saves X, W"), "{conv}");
    let tanh = C3::new()
        .args(["explain", "Tanh"])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(
        tanh.contains("the pointwise default of Activation"),
        "{tanh}"
    );
    let iff = C3::new().args(["explain", "If"]).run().ok().stdout.clone();
    assert!(iff.contains("not counted in training"), "{iff}");
}

#[test]
fn a_traces_buffers_are_reported_apart_from_its_parameters() {
    // A batch norm whose running statistics the trace marks as buffers.
    let stat = |name: &str| {
        format!(
            r#"{{"name": "{name}", "shape": [3], "dtype": "float32", "const": true, "buffer": true}}"#
        )
    };
    let trace = format!(
        r#"{{"layers": [{{"op": "BatchNormalization", "name": "bn",
            "inputs": [{}, {}, {}, {}, {}], "outputs": [{}]}}]}}"#,
        t("x", &["2", "3", "4", "4"], false),
        t("bn.weight", &["3"], true),
        t("bn.bias", &["3"], true),
        stat("bn.running_mean"),
        stat("bn.running_var"),
        t("y", &["2", "3", "4", "4"], false),
    );
    let j = estimate(&trace, &[]);
    // Parameters: scale and bias, 3 + 3; buffers: the statistics, 3 + 3
    // floats (24 bytes).
    assert_eq!(j["total"]["params"], 6);
    assert_eq!(j["total"]["buffers"], 6);
    assert_eq!(j["total"]["buffer_bytes"], 24);
    assert_eq!(j["training"]["trainable_params"], 6);
}
