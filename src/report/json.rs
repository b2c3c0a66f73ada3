//! `--format json`: the whole result with exact integers (bytes in bytes).

use serde_json::{Map, Value, json};

use crate::cost::{CostReport, Totals};
use crate::ir::TensorFact;
use crate::rules::rule::{qualified, value_to_json};

fn tensor(t: &Option<TensorFact>) -> Value {
    match t {
        None => Value::Null,
        Some(t) => json!({
            "dtype": t.dtype.name(),
            "shape": t.shape.iter().map(|d| match d {
                crate::ir::Dim::Known(n) => json!(n),
                crate::ir::Dim::Sym(s) => json!(s.to_string()),
            }).collect::<Vec<_>>(),
        }),
    }
}

fn totals(t: &Totals) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("flops".into(), json!(t.flops));
    m.insert("mread".into(), json!(t.mread));
    m.insert("mwrite".into(), json!(t.mwrite));
    m.insert("mrw".into(), json!(t.mrw));
    m
}

pub fn to_json(report: &CostReport) -> String {
    let layers: Vec<Value> = report
        .layers
        .iter()
        .map(|l| {
            let params: Map<String, Value> = l
                .params
                .iter()
                .map(|(k, v)| (k.clone(), value_to_json(v)))
                .collect();
            json!({
                "name": l.name,
                "op": qualified(&l.domain, &l.op),
                "flops": l.flops,
                "mread": l.mread,
                "mwrite": l.mwrite,
                "mrw": l.mrw(),
                "inputs": l.inputs.iter().map(tensor).collect::<Vec<_>>(),
                "outputs": l.outputs.iter().map(tensor).collect::<Vec<_>>(),
                "params": params,
            })
        })
        .collect();
    let summary: Vec<Value> = report
        .summary
        .iter()
        .map(|s| {
            let mut m = Map::new();
            m.insert("op".into(), json!(qualified(&s.domain, &s.op)));
            m.insert("layers".into(), json!(s.totals.layers));
            m.extend(totals(&s.totals));
            Value::Object(m)
        })
        .collect();
    let mut total = totals(&report.total);
    total.insert("layers".into(), json!(report.total.layers));
    let unsupported: Vec<Value> = report
        .unsupported
        .iter()
        .map(|u| json!({"name": u.name, "op": qualified(&u.domain, &u.op)}))
        .collect();
    let doc = json!({
        "layers": layers,
        "summary": summary,
        "total": total,
        "unsupported": unsupported,
    });
    serde_json::to_string_pretty(&doc).expect("JSON values always serialize") + "\n"
}
