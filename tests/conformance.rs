//! ONNX node conformance: the node test cases of the `onnx` 1.23.2 package
//! (scripts/onnx_conformance.py made tests/fixtures/onnx-node/), each a small
//! model whose outputs' true types and shapes are known. c3 must get at least
//! as many cases fully right as ONNX's own `infer_shapes(data_prop=True)`.
//!
//! `C3_CONFORMANCE=<substring>` prints every matching case's result;
//! the full list of failures goes to `target/conformance-failures.txt`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use c3::ir::Dim;
use c3::onnx::infer::{InferOptions, infer};
use c3::shape::{Fact, ValueKind};
use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/onnx-node");

/// Cases c3 must get fully right; raised as shape inference grows. ONNX's
/// own count on these files (`onnx_ok` in the manifest) is 1,649.
const FLOOR: usize = 1801;

fn shape_of(v: &Value) -> Option<Vec<u64>> {
    v.as_array()?.iter().map(Value::as_u64).collect()
}

fn show(f: &Fact) -> String {
    f.to_string()
}

/// Whether an inferred fact is exactly the expected output.
fn matches(got: &Fact, want: &Value) -> Result<(), String> {
    let kind = want["kind"].as_str().unwrap_or("tensor");
    let dtype = want["dtype"].as_str();
    let dtype_ok = |f: &Fact| dtype.is_none() || f.dtype.map(|d| d.name()) == dtype;
    let shape_ok = |f: &Fact, shape: &Value| match (&f.shape, shape_of(shape)) {
        (Some(s), Some(w)) => {
            s.len() == w.len() && s.iter().zip(&w).all(|(d, w)| *d == Dim::Known(*w))
        }
        _ => false,
    };
    let ok = match kind {
        "tensor" => got.kind == ValueKind::Tensor && dtype_ok(got) && shape_ok(got, &want["shape"]),
        "sequence" => {
            let elems = want["elements"].as_array().cloned().unwrap_or_default();
            let same = elems.windows(2).all(|w| w[0]["shape"] == w[1]["shape"]);
            got.kind == ValueKind::Sequence
                && dtype_ok(got)
                && (elems.is_empty() || !same || shape_ok(got, &elems[0]["shape"]))
        }
        "optional" => match want["element"].as_object() {
            None => got.kind == ValueKind::Optional,
            Some(e) => {
                let e = Value::Object(e.clone());
                let inner_kind = e["kind"].as_str().unwrap_or("tensor");
                got.kind == ValueKind::Optional
                    && (inner_kind != "tensor"
                        || (e["dtype"]
                            .as_str()
                            .is_none_or(|d| got.dtype.map(|x| x.name()) == Some(d))
                            && shape_ok(got, &e["shape"])))
            }
        },
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{} got {}, want {}", want["name"], show(got), want))
    }
}

fn run_case(name: &str, case: &Value) -> Result<(), String> {
    let path = format!("{DIR}/{name}.onnx");
    let model = c3::onnx::load(&path).map_err(|e| format!("load: {e}"))?;
    let inferred = infer(&model, &InferOptions::default()).map_err(|e| format!("infer: {e}"))?;
    let values: BTreeMap<&str, &Fact> = inferred
        .values
        .iter()
        .map(|(n, f)| (n.as_str(), f))
        .collect();
    for want in case["outputs"].as_array().into_iter().flatten() {
        let oname = want["name"].as_str().unwrap_or("");
        let got = values
            .get(oname)
            .ok_or_else(|| format!("output {oname} was not inferred"))?;
        matches(got, want)?;
    }
    Ok(())
}

#[test]
fn onnx_node_conformance() {
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{DIR}/manifest.json")).unwrap())
            .unwrap();
    let cases = manifest["cases"].as_object().unwrap();
    let filter = std::env::var("C3_CONFORMANCE").ok();
    let (mut pass, mut onnx_ok, mut both) = (0, 0, 0);
    let mut failures_by_op: BTreeMap<String, usize> = BTreeMap::new();
    let mut log = String::new();
    for (name, case) in cases {
        if case["onnx_ok"].as_bool() == Some(true) {
            onnx_ok += 1;
        }
        // The op a case tests: expanded cases are named after it.
        let op = case["op"].as_str().unwrap_or("?").to_string();
        let result = std::panic::catch_unwind(|| run_case(name, case))
            .unwrap_or_else(|_| Err("panicked".to_string()));
        if let Some(f) = &filter
            && name.contains(f.as_str())
        {
            println!("{name} ({op}): {result:?}");
        }
        match result {
            Ok(()) => {
                pass += 1;
                if case["onnx_ok"].as_bool() == Some(true) {
                    both += 1;
                }
            }
            Err(e) => {
                *failures_by_op.entry(op.clone()).or_default() += 1;
                let _ = writeln!(log, "{name} ({op}): {e}");
            }
        }
    }
    let mut by_count: Vec<_> = failures_by_op.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1));
    let summary: Vec<String> = by_count.iter().map(|(op, n)| format!("{op} {n}")).collect();
    let _ = std::fs::write(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/target/conformance-failures.txt"
        ),
        format!("failures by op: {}\n\n{log}", summary.join(", ")),
    );
    println!(
        "conformance: {pass} of {} cases fully right (onnx {}: {onnx_ok}; c3 gets {both} of those); failures by op: {}",
        cases.len(),
        manifest["onnx_version"],
        summary.join(", ")
    );
    assert!(
        pass >= FLOOR,
        "{pass} cases right, below the floor of {FLOOR}"
    );
}
