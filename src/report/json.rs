//! `--format json`: the whole result with exact integers (bytes in bytes).

use serde_json::{Map, Value, json};

use crate::cost::{CostReport, Totals};
use crate::device::Roofline;
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

/// A float as JSON (`null` when not finite).
fn num(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

pub fn to_json(report: &CostReport, roofline: Option<&Roofline>) -> String {
    let mut layers: Vec<Value> = report
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
                "fused": l.fused,
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
    let mut device = Value::Null;
    if let Some(r) = roofline {
        for (l, t) in layers.iter_mut().zip(&r.layers) {
            if let Value::Object(m) = l {
                m.insert("precision".into(), json!(t.precision));
                m.insert("compute_s".into(), num(t.compute_s));
                m.insert("memory_s".into(), num(t.memory_s));
                m.insert("bound_s".into(), num(t.bound_s));
                m.insert("bound".into(), json!(t.bound.as_str()));
                m.insert("intensity".into(), t.intensity.map_or(Value::Null, num));
            }
        }
        total.insert("compute_s".into(), num(r.compute_s));
        total.insert("memory_s".into(), num(r.memory_s));
        total.insert("bound_s".into(), num(r.bound_s));
        total.insert("additive_s".into(), num(r.additive_s));
        if let Some(m) = r.measured_s {
            total.insert("measured_s".into(), num(m));
            let eff = |v: Option<f64>| v.map_or(Value::Null, num);
            total.insert("efficiency_bound".into(), eff(r.efficiency(r.bound_s)));
            total.insert(
                "efficiency_additive".into(),
                eff(r.efficiency(r.additive_s)),
            );
        }
        device = json!({
            "name": r.device.key,
            "description": r.device.name,
            "bandwidth": num(r.device.bandwidth),
        });
    }
    let unsupported: Vec<Value> = report
        .unsupported
        .iter()
        .map(|u| json!({"name": u.name, "op": qualified(&u.domain, &u.op), "reason": u.reason}))
        .collect();
    let mut doc = json!({
        "layers": layers,
        "summary": summary,
        "total": total,
        "unsupported": unsupported,
    });
    if !device.is_null() {
        doc["device"] = device;
    }
    if !report.fusions.is_empty() {
        let groups: Vec<Value> = report
            .fusions
            .iter()
            .map(|g| {
                let members: Vec<&str> = g
                    .members
                    .iter()
                    .map(|&i| report.layers[i].name.as_str())
                    .collect();
                json!({
                    "group": g.id,
                    "pattern": g.pattern,
                    "layers": members,
                    "saved_bytes": g.saved_bytes,
                })
            })
            .collect();
        doc["fusions"] = Value::Array(groups);
    }
    serde_json::to_string_pretty(&doc).expect("JSON values always serialize") + "\n"
}
