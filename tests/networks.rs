//! Whole networks traced from Chainer (scripts/chainer_trace.py), compared with
//! the figures chainer_computational_cost 0.1.2 printed for the same forward
//! pass (tests/fixtures/chainer/expected.json and *.layers.json).

use crate::common::{builtin, chainer};
use c3::cost::{CostReport, estimate};
use c3::ir::{Dim, Graph};
use c3::rules::{CountOptions, RuleSet};
use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/chainer");

fn trace(net: &str) -> Graph {
    c3::trace::read_trace(&format!("{DIR}/{net}.trace.json")).expect("fixture trace reads")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(format!("{DIR}/expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json is JSON")
}

fn run(net: &str, rules: &RuleSet, fma: bool) -> CostReport {
    estimate(&trace(net), rules, CountOptions::fma(fma)).expect("the trace is costed")
}

/// Asserts the totals equal the original tool's, as (flops, mread, mwrite, layers).
fn assert_totals(report: &CostReport, want: &Value, what: &str) {
    let got = (
        report.total.flops,
        report.total.mread,
        report.total.mwrite,
        report.total.layers,
    );
    let want = (
        want["flops"].as_u64().unwrap(),
        want["mread"].as_u64().unwrap(),
        want["mwrite"].as_u64().unwrap(),
        want["layers"].as_u64().unwrap(),
    );
    assert_eq!(got, want, "{what}: (flops, mread, mwrite, layers)");
}

const NETS: &[&str] = &[
    "resnet50_b1",
    "resnet50_b2",
    "vgg16_b1",
    "googlenet_b1",
    "mixed_b1",
    "mixed_b2",
];

#[test]
fn chainer_pack_reproduces_the_original_to_the_integer() {
    let exp = expected();
    for net in NETS {
        for (fma, key) in [(true, "fma"), (false, "nofma")] {
            let report = run(net, chainer(), fma);
            assert_totals(&report, &exp[net][key], &format!("{net} {key}"));
        }
    }
}

#[test]
fn chainer_pack_matches_every_layer_of_the_original() {
    for net in NETS {
        let text = std::fs::read_to_string(format!("{DIR}/{net}.layers.json")).unwrap();
        let layers: Vec<Value> = serde_json::from_str(&text).unwrap();
        let report = run(net, chainer(), true);
        assert_eq!(report.layers.len(), layers.len(), "{net}: counted layers");
        for (ours, theirs) in report.layers.iter().zip(&layers) {
            assert_eq!(
                ours.name,
                theirs["name"].as_str().unwrap(),
                "{net}: layer order"
            );
            let got = (ours.flops, ours.mread, ours.mwrite);
            let want = (
                theirs["flops"].as_u64().unwrap(),
                theirs["mread"].as_u64().unwrap(),
                theirs["mwrite"].as_u64().unwrap(),
            );
            assert_eq!(got, want, "{net} {}", ours.name);
        }
    }
}

#[test]
fn resnet50_matches_the_article() {
    // The article's ResNet50, batch 1, FMA on: 3,884,871,583 FLOPs and
    // 413,147,264 bytes read + written (394.008 MiB).
    let report = run("resnet50_b1", builtin(), true);
    assert_eq!(report.total.flops, 3_884_871_583);
    assert_eq!(report.total.mrw, 413_147_264);
    assert_eq!(report.total.layers, 176);
    // The summary the article shows: 53 convolutions holding 3855.925 MFLOPs.
    let conv = report.summary.iter().find(|s| s.op == "Conv").unwrap();
    assert_eq!(conv.totals.layers, 53);
    assert_eq!(conv.totals.flops / 1000, 3_855_925);
}

#[test]
fn default_rules_agree_with_the_original_where_it_counts_right() {
    // Batch 1 networks with biased convolutions (VGG16, GoogLeNet) match in
    // both FMA modes; ResNet50 (bias-free convolutions) matches with FMA on.
    let exp = expected();
    for net in ["vgg16_b1", "googlenet_b1"] {
        for (fma, key) in [(true, "fma"), (false, "nofma")] {
            assert_totals(
                &run(net, builtin(), fma),
                &exp[net][key],
                &format!("{net} {key}"),
            );
        }
    }
    assert_totals(
        &run("resnet50_b1", builtin(), true),
        &exp["resnet50_b1"]["fma"],
        "resnet50_b1 fma",
    );
}

fn known(d: &Dim) -> u64 {
    match d {
        Dim::Known(n) => *n,
        Dim::Sym(s) => panic!("symbol {s} in a fixture"),
    }
}

#[test]
fn default_rules_differ_from_the_original_only_by_its_documented_quirks() {
    // Without FMA the original counts a bias-free convolution as
    // 2 * G * (Cg * Mg - 1) * prod(K) * prod(O) * N; c3 counts
    // (2 * Cg * prod(K) - 1) * |Y|. Sum the difference layer by layer.
    let exp = expected();
    let graph = trace("resnet50_b1");
    let mut quirk: i128 = 0;
    for node in graph
        .nodes
        .iter()
        .filter(|n| n.op == "Conv" && n.inputs.get(2).is_none_or(Option::is_none))
    {
        let x = node.inputs[0].as_ref().unwrap();
        let w = node.inputs[1].as_ref().unwrap();
        let y = node.outputs[0].as_ref().unwrap();
        let dims = |t: &c3::ir::TensorFact| t.shape.iter().map(known).collect::<Vec<u64>>();
        let (xd, wd, yd) = (dims(x), dims(w), dims(y));
        let g = 1; // ResNet50 has no grouped convolution
        let (n, c, m) = (xd[0] as i128, xd[1] as i128, wd[0] as i128);
        let kk: i128 = wd[2..].iter().product::<u64>() as i128;
        let o: i128 = yd[2..].iter().product::<u64>() as i128;
        let original = 2 * g * ((c / g) * (m / g) - 1) * kk * o * n;
        let ours = (2 * (c / g) * kk - 1) * m * o * n;
        quirk += original - ours;
    }
    assert_eq!(quirk, 9_470_916);
    let ours = run("resnet50_b1", builtin(), false).total.flops as i128;
    let theirs = exp["resnet50_b1"]["nofma"]["flops"].as_i64().unwrap() as i128;
    assert_eq!(theirs - ours, quirk);

    // At batch 2 the original adds the classifier's 1000 biases once, not per
    // sample, and writes one row of 1000 float32 outputs, not two.
    let ours = run("resnet50_b2", builtin(), true);
    let theirs = &exp["resnet50_b2"]["fma"];
    assert_eq!(ours.total.flops - theirs["flops"].as_u64().unwrap(), 1000);
    assert_eq!(
        ours.total.mwrite - theirs["mwrite"].as_u64().unwrap(),
        1000 * 4
    );
    assert_eq!(ours.total.mread, theirs["mread"].as_u64().unwrap());
}

#[test]
fn multi_add_is_reported_unsupported_not_counted() {
    // Chainer's MultiAdd (a three-way add) has no ONNX op; the original skips
    // it, and c3 lists it as unsupported.
    let report = run("mixed_b1", builtin(), true);
    let ops: Vec<&str> = report.unsupported.iter().map(|u| u.op.as_str()).collect();
    assert_eq!(ops, ["MultiAdd"]);
}
