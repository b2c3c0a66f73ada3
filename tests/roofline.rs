//! Roofline arithmetic on the original article's ResNet50 (batch 1, FMA on):
//! 3,884,871,583 FLOPs and 413,147,264 bytes read + written, on a GTX 1080 Ti
//! (10.6 TFLOP/s FP32, 484 GB/s). The `chainer` pack times it as the article
//! did (its FLOPs over the peak); the built-in device divides the work as
//! the peak counts it, a multiply-add as two operations.

use crate::common::cli::C3;

const RESNET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/resnet50.trace.json");

fn json(args: &[&str]) -> serde_json::Value {
    C3::new().args(args).run().json()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-30)
}

#[test]
fn compute_time_divides_the_work_as_the_peak_counts_it_whatever_fma_says() {
    // The default: the time divides the layers' work with a multiply-add
    // as two operations, which is exactly what --no-fma reports as FLOPs:
    // 7,743,646,647 (against 3,884,871,583 with FMA on).
    let with_fma = json(&[
        "estimate",
        RESNET,
        "--device",
        "gtx1080ti",
        "--format",
        "json",
    ]);
    let without = json(&[
        "estimate",
        RESNET,
        "--device",
        "gtx1080ti",
        "--no-fma",
        "--format",
        "json",
    ]);
    let (a, b) = (&with_fma["total"], &without["total"]);
    assert_eq!(a["flops"], 3_884_871_583u64);
    assert_eq!(b["flops"], 7_743_646_647u64);
    assert_eq!(a["work"], 7_743_646_647u64);
    assert_eq!(b["work"], 7_743_646_647u64);
    // 7,743,646,647 / 10.6e12 s = 730.533 µs either way.
    assert_eq!(a["compute_s"], b["compute_s"]);
    let compute = a["compute_s"].as_f64().unwrap();
    assert!(close(compute, 7_743_646_647.0 / 10.6e12));
    assert_eq!(format!("{:.1}", compute * 1e6), "730.5");
    assert_eq!(with_fma["device"]["peak_counts"], "multiply-add-as-two");
    // Under the chainer pack the article's device counts the FLOPs as
    // reported: half the time with FMA on.
    let chainer = json(&[
        "estimate",
        RESNET,
        "--rules",
        "chainer",
        "--device",
        "gtx1080ti",
        "--format",
        "json",
    ]);
    assert_eq!(chainer["device"]["peak_counts"], "reported");
    let c = chainer["total"]["compute_s"].as_f64().unwrap();
    assert!(close(c, 3_884_871_583.0 / 10.6e12));
    // The human formats say which convention the peaks use.
    let md = C3::new()
        .args([
            "estimate",
            RESNET,
            "--device",
            "gtx1080ti",
            "--format",
            "md",
        ])
        .run()
        .ok()
        .stdout
        .clone();
    assert!(md.contains("peaks count a multiply-add as 2 FLOPs"), "{md}");
    assert!(
        md.contains("(of 7.744 G operations as the peaks count them)"),
        "{md}"
    );
}

#[test]
fn the_articles_resnet50_on_a_gtx_1080_ti() {
    let j = json(&[
        "estimate",
        RESNET,
        "--rules",
        "chainer",
        "--device",
        "gtx1080ti",
        "--measured",
        "2.41957ms",
        "--format",
        "json",
    ]);
    let t = &j["total"];
    assert_eq!(t["flops"], 3_884_871_583u64);
    assert_eq!(t["mrw"], 413_147_264u64);
    // Compute: 3,884,871,583 / 10.6e12 s = 366.497 µs (the article: 366 µs).
    let compute = t["compute_s"].as_f64().unwrap();
    assert!(close(compute, 3_884_871_583.0 / 10.6e12));
    assert_eq!(format!("{:.1}", compute * 1e6), "366.5");
    // Memory: 413,147,264 B / 484e9 B/s = 853.6 µs. The article printed
    // 814 µs because it divided 394.008 MiB by 484 decimal GB/s
    // (394.008e6 / 484e9 s = 814 µs).
    let memory = t["memory_s"].as_f64().unwrap();
    assert!(close(memory, 413_147_264.0 / 484e9));
    assert_eq!(format!("{:.1}", memory * 1e6), "853.6");
    // The additive estimate is all compute plus all memory time; the sum of
    // per-layer bounds can only be smaller (each layer overlaps its two).
    let additive = t["additive_s"].as_f64().unwrap();
    assert!(close(additive, compute + memory));
    let bound = t["bound_s"].as_f64().unwrap();
    assert!(bound <= additive && bound >= compute.max(memory));
    // TensorRT's 2.41957 ms in the article: about 50% of the additive estimate.
    let eff = t["efficiency_additive"].as_f64().unwrap();
    assert!(close(eff, additive / 2.41957e-3));
    assert_eq!(format!("{:.1}", eff * 100.0), "50.4");
    // Every layer carries its times; the first convolution is compute-bound:
    // 118,013,952 FLOPs over 640,000 + 3,211,264 bytes = 30.6 FLOP/byte.
    let l = &j["layers"][0];
    assert_eq!(l["bound"], "compute");
    assert_eq!(l["precision"], "fp32");
    assert!(close(
        l["intensity"].as_f64().unwrap(),
        118_013_952.0 / 3_851_264.0
    ));
    assert!(close(
        l["compute_s"].as_f64().unwrap(),
        118_013_952.0 / 10.6e12
    ));
    assert_eq!(j["device"]["name"], "gtx1080ti");
}

#[test]
fn the_catalog_lists_at_least_fifteen_devices_with_sources() {
    let j = json(&["devices", "--format", "json"]);
    let list = j["devices"].as_array().unwrap();
    assert!(list.len() >= 15);
    let find = |n: &str| list.iter().find(|d| d["name"] == n).unwrap().clone();
    let gtx = find("gtx1080ti");
    assert_eq!(gtx["peak_flops"]["fp32"], 1.06e13);
    assert_eq!(gtx["bandwidth"], 4.84e11);
    for name in [
        "v100",
        "t4",
        "a10",
        "a100-40gb",
        "a100-80gb",
        "l4",
        "l40s",
        "h100-sxm",
        "h100-pcie",
        "h200",
        "rtx3090",
        "rtx4090",
        "jetson-agx-orin",
    ] {
        let d = find(name);
        assert!(d["peak_flops"]["fp32"].as_f64().unwrap() > 0.0, "{name}");
        assert!(!d["source"].as_str().unwrap().is_empty(), "{name}");
    }
    assert_eq!(find("h100-sxm")["bandwidth"], 3.35e12);
    assert_eq!(find("a100-80gb")["peak_flops"]["bf16"], 3.12e14);
    // Current parts, each with its vendor's dense figures and memory as
    // sold: (key, a precision, its peak, bytes/s, GiB).
    for (name, precision, peak, bandwidth, gib) in [
        ("b200", "fp8", 4.5e15, 7.7e12, 180.0),
        ("gb200", "fp8", 5.0e15, 8.0e12, 186.0),
        ("mi300x", "bf16", 1.3074e15, 5.3e12, 192.0),
        ("mi325x", "bf16", 1.3074e15, 6.0e12, 256.0),
        ("gaudi3", "bf16", 1.835e15, 3.67e12, 128.0),
        ("jetson-orin-nano-super", "int8", 3.35e13, 1.02e11, 8.0),
        ("apple-m4-max", "fp32", 1.72e13, 5.46e11, 128.0),
    ] {
        let d = find(name);
        assert_eq!(d["peak_flops"][precision], peak, "{name}");
        assert_eq!(d["bandwidth"], bandwidth, "{name}");
        assert_eq!(d["memory_gib"], gib, "{name}");
        assert!(!d["source"].as_str().unwrap().is_empty(), "{name}");
    }
    // A CPU's memory is the machine's: none is given.
    assert!(find("xeon-8480").get("memory_gib").is_none());
}

#[test]
fn devices_are_matched_loosely_and_unknown_ones_are_usage_errors() {
    let j = json(&[
        "estimate", RESNET, "--device", "H100_SXM", "--format", "json",
    ]);
    assert_eq!(j["device"]["name"], "h100-sxm");
    let run = C3::new()
        .args(["estimate", RESNET, "--device", "tpu-v9"])
        .run();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("--device tpu-v9: unknown device"));
}

#[test]
fn precision_what_ifs_recount_bytes_and_pick_the_peak() {
    let run = |extra: &[&str]| {
        let mut args = vec!["estimate", RESNET, "--device", "t4", "--format", "json"];
        args.extend_from_slice(extra);
        json(&args)
    };
    let base = run(&[]);
    let (r, w) = (
        base["total"]["mread"].as_u64().unwrap(),
        base["total"]["mwrite"].as_u64().unwrap(),
    );
    assert_eq!((r, w), (269_226_304, 143_920_960));
    // Every tensor of the trace is float32: in fp16 every byte count halves,
    // in int8 it quarters, and the peak follows the activations' type.
    let half = run(&["--weights", "fp16", "--activations", "fp16"]);
    assert_eq!(half["total"]["mread"], r / 2);
    assert_eq!(half["total"]["mwrite"], w / 2);
    assert_eq!(half["layers"][0]["precision"], "fp16");
    let int8 = run(&["--weights", "int8", "--activations", "int8"]);
    assert_eq!(int8["total"]["mread"], r / 4);
    assert_eq!(int8["layers"][0]["precision"], "int8");
    // T4: 130 TOPS int8 against 8.1 TFLOP/s fp32.
    let c32 = base["total"]["compute_s"].as_f64().unwrap();
    let c8 = int8["total"]["compute_s"].as_f64().unwrap();
    assert!(close(c8, c32 * 8.1 / 130.0));
    // Weights only: ResNet50 reads 25,557,096 float32 parameters (conv and fc
    // weights and biases, BN scales and shifts); in fp16 that is 2 bytes less each.
    let wf16 = run(&["--weights", "fp16"]);
    assert_eq!(r - wf16["total"]["mread"].as_u64().unwrap(), 25_557_096 * 2);
    assert_eq!(wf16["total"]["mwrite"], w);
    assert_eq!(wf16["layers"][0]["precision"], "fp32");
}
