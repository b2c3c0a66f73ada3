//! Snapshots of the four report formats on a small trace with every kind of
//! row: counted layers, two of one type, a view, and an unsupported op.

use c3::cost::estimate;
use c3::report::{Format, ReportOptions, Unit, parse_columns, render};
use c3::rules::{CountOptions, RuleSet};

const TRACE: &str = r#"{"layers": [
  {"op": "Conv", "name": "conv1", "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
   "inputs": [{"shape": [1, 3, 32, 32]}, {"shape": [16, 3, 3, 3], "const": true}, {"shape": [16], "const": true}],
   "outputs": [{"shape": [1, 16, 32, 32]}]},
  {"op": "Relu", "inputs": [{"shape": [1, 16, 32, 32]}], "outputs": [{"shape": [1, 16, 32, 32]}]},
  {"op": "MaxPool", "attrs": {"kernel_shape": [2, 2], "strides": [2, 2]},
   "inputs": [{"shape": [1, 16, 32, 32]}], "outputs": [{"shape": [1, 16, 16, 16]}]},
  {"op": "Reshape", "inputs": [{"shape": [1, 16, 16, 16]}, {"shape": [2], "dtype": "int64", "const": true}],
   "outputs": [{"shape": [1, 4096]}]},
  {"op": "Gemm", "name": "fc", "attrs": {"transB": 1},
   "inputs": [{"shape": [1, 4096]}, {"shape": [10, 4096], "dtype": "float16", "const": true}, {"shape": [10], "const": true}],
   "outputs": [{"shape": [1, 10]}]},
  {"op": "Relu", "inputs": [{"shape": [1, 10]}], "outputs": [{"shape": [1, 10]}]},
  {"op": "CustomNorm", "name": "custom", "inputs": [{"shape": [1, 10]}], "outputs": [{"shape": [1, 10]}]}
]}"#;

fn report(format: Format, unit: Unit, columns: &str) -> String {
    let graph = c3::trace::parse_trace(TRACE.as_bytes(), "t.json").unwrap();
    let rules = RuleSet::builtin().unwrap();
    let costs = estimate(&graph, &rules, CountOptions::default()).unwrap();
    let opts = ReportOptions {
        format,
        unit,
        digits: 3,
        columns: parse_columns(columns).unwrap(),
        ..ReportOptions::default()
    };
    render(&costs, &opts, None)
}

#[test]
fn table() {
    insta::assert_snapshot!(report(Format::Table, Unit::Auto, "default"));
}

#[test]
fn markdown_with_all_columns() {
    insta::assert_snapshot!(report(Format::Md, Unit::K, "all"));
}

#[test]
fn csv_exact() {
    insta::assert_snapshot!(report(Format::Csv, Unit::None, "percent"));
}

#[test]
fn json() {
    insta::assert_snapshot!(report(Format::Json, Unit::Auto, "default"));
}

#[test]
fn figures_in_the_snapshots() {
    // conv1: 16 x 32 x 32 outputs x (3 x 3 x 3) window = 442,368 FLOPs with FMA.
    // fc: float16 weights are 2 bytes: (4096 + 10) x 4 + 40960 x 2 = 98,344 bytes.
    let j: serde_json::Value =
        serde_json::from_str(&report(Format::Json, Unit::Auto, "default")).unwrap();
    assert_eq!(j["layers"][0]["flops"], 16 * 32 * 32 * 27);
    assert_eq!(j["layers"][4]["mread"], (4096 + 10) * 4 + 40960 * 2);
    assert_eq!(j["layers"][3]["name"], "Reshape-1");
    assert_eq!(j["layers"][3]["mrw"], 0);
    assert_eq!(j["summary"][1]["op"], "Relu");
    assert_eq!(j["summary"][1]["layers"], 2);
    assert_eq!(j["total"]["layers"], 6);
    // Parameters (the tensors marked const; the int64 shape is not one):
    // conv1 16 x 3 x 3 x 3 + 16 = 448, fc 10 x 4096 + 10 = 40,970.
    assert_eq!(j["layers"][0]["params"], 16 * 27 + 16);
    assert_eq!(j["layers"][3]["params"], 0);
    assert_eq!(j["total"]["params"], 448 + 40_970);
    // Bytes: 448 float32, 40,960 float16 and 10 float32.
    assert_eq!(j["total"]["weight_bytes"], 448 * 4 + 40_960 * 2 + 10 * 4);
    // The trace names no tensor: each is live during the layers listing it.
    // Relu-1 reads and writes 16 x 32 x 32 floats: 2 x 65,536 bytes, the peak.
    assert_eq!(j["layers"][0]["live_bytes"], (3 + 16) * 32 * 32 * 4);
    assert_eq!(j["total"]["peak_activation_bytes"], 2 * 65_536);
    assert_eq!(j["total"]["peak_at"], "Relu-1");
}

/// A table long enough to be formatted on two threads (8,192 rows and
/// more) keeps every row in order with its own numbers: layer `r{i}` is a
/// Relu over 1 x (i+1) floats, one FLOP per element, reading and writing
/// 4 (i+1) bytes.
#[test]
fn a_long_table_keeps_its_rows_in_order() {
    let n = 9000;
    let layers: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"op": "Relu", "name": "r{i}", "inputs": [{{"shape": [1, {w}]}}], "outputs": [{{"shape": [1, {w}]}}]}}"#,
                w = i + 1
            )
        })
        .collect();
    let trace = format!(r#"{{"layers": [{}]}}"#, layers.join(","));
    let graph = c3::trace::parse_trace(trace.as_bytes(), "t.json").unwrap();
    let costs = estimate(
        &graph,
        &RuleSet::builtin().unwrap(),
        CountOptions::default(),
    )
    .unwrap();
    let opts = ReportOptions {
        format: Format::Md,
        unit: Unit::K,
        digits: 3,
        ..ReportOptions::default()
    };
    let text = render(&costs, &opts, None);
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| r")).collect();
    assert_eq!(rows.len(), n);
    // kFLOPs divide by 1000, KiB by 1024.
    for (i, row) in rows.iter().enumerate() {
        let w = (i + 1) as f64;
        let kib = |b: f64| format!("{:.3}", b / 1024.0);
        let want = format!(
            "| r{i} | Relu | {:.3} | {} | {} | {} | 0.000 |",
            w / 1000.0,
            kib(4.0 * w),
            kib(4.0 * w),
            kib(8.0 * w)
        );
        assert_eq!(*row, want);
    }
}
