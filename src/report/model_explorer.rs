//! `--format model-explorer`: one metric per node as Model Explorer's node
//! data, so its graph view colours the heavy nodes.
//!
//! The file maps a graph id to `results` (node key → `{"value": N}`) and a
//! `gradient` whose stops (0 = the smallest value, 1 = the largest) give
//! the colours. Model Explorer matches a key against node ids and against
//! the `tensor_name` of a node's outputs. The ONNX adapter
//! (model-explorer-onnx) tags outputs with `__tensor_tag` instead, so only
//! node ids match there: c3 writes each node's value under its id (the
//! node's name, `<node_I>` when unnamed) and again under its first output
//! tensor name, for adapters that match by tensor; a layer with no ONNX
//! node (a trace's) goes under its layer name. A layer inside an If, Loop
//! or Scan body goes under the body's graph id as the adapter names it
//! (`<owner id>/<attribute>`, `then_branch` of node `if_0` is
//! `if_0/then_branch`), keyed the same way within it.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::cost::CostReport;
use crate::cost::Roofline;

/// The per-node figure `--metric` picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Metric {
    /// FLOPs.
    #[default]
    Flops,
    /// Bytes read.
    Mread,
    /// Bytes written.
    Mwrite,
    /// Bytes read plus written.
    Mrw,
    /// The roofline time bound in seconds (needs --device).
    #[value(name = "bound_s")]
    BoundS,
    /// The measured time in seconds, on the node that shows its kernel
    /// group's time (needs --profile).
    #[value(name = "measured_s")]
    MeasuredS,
    /// The predicted time in seconds (needs a calibrated --device).
    #[value(name = "predicted_s")]
    PredictedS,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Flops => "flops",
            Metric::Mread => "mread",
            Metric::Mwrite => "mwrite",
            Metric::Mrw => "mrw",
            Metric::BoundS => "bound_s",
            Metric::MeasuredS => "measured_s",
            Metric::PredictedS => "predicted_s",
        }
    }
}

/// How the nodes of the model are known to Model Explorer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeIds {
    /// The graph's id: the ONNX graph's name (the file name for a trace).
    pub graph: String,
    /// Layer name → the id of the body graph that holds its ONNX node
    /// (`None`: the main graph) and the node's keys (id, first output
    /// tensor).
    pub keys: HashMap<String, (Option<String>, Vec<String>)>,
}

#[derive(Serialize)]
struct Stop {
    stop: f64,
    #[serde(rename = "bgColor")]
    bg_color: &'static str,
}

/// Light yellow for the lightest node to dark red for the heaviest.
const GRADIENT: [Stop; 3] = [
    Stop {
        stop: 0.0,
        bg_color: "#ffffcc",
    },
    Stop {
        stop: 0.5,
        bg_color: "#fd8d3c",
    },
    Stop {
        stop: 1.0,
        bg_color: "#bd0026",
    },
];

/// The node data of `metric`; `bound_s` needs `roofline` (its nodes are
/// left out otherwise). Layers that share a node (a function call's) add up.
pub fn render(
    report: &CostReport,
    roofline: Option<&Roofline>,
    metric: Metric,
    ids: &NodeIds,
) -> String {
    // Per graph, in order of first appearance: the keys in order and sums.
    type Sums<'a> = (Vec<&'a str>, HashMap<&'a str, Value>);
    let mut graphs: Vec<(&str, Sums)> = Vec::new();
    // Where each graph is in `graphs`: a model with 25,000 bodies looked
    // each layer's graph up along the list (1.9 s against 0.48 s for CSV).
    let mut at_of: HashMap<&str, usize> = HashMap::new();
    for (i, l) in report.layers.iter().enumerate() {
        let v = match metric {
            Metric::Flops => json!(l.flops),
            Metric::Mread => json!(l.mread),
            Metric::Mwrite => json!(l.mwrite),
            Metric::Mrw => json!(l.mrw()),
            Metric::BoundS => match roofline.and_then(|r| r.layers.get(i)) {
                Some(t) if t.bound_s.is_finite() => json!(t.bound_s),
                _ => continue,
            },
            Metric::MeasuredS => match report.measured.as_ref().and_then(|m| m.layer_s(i)) {
                Some(t) => json!(t),
                None => continue,
            },
            Metric::PredictedS => match roofline
                .and_then(|r| r.layers.get(i))
                .and_then(|t| t.predicted_s)
            {
                Some(t) if t.is_finite() => json!(t),
                _ => continue,
            },
        };
        let (graph, keys): (&str, &[String]) = match ids.keys.get(&l.name) {
            Some((g, k)) => (g.as_deref().unwrap_or(&ids.graph), k),
            None => (&ids.graph, std::slice::from_ref(&l.name)),
        };
        let at = *at_of.entry(graph).or_insert_with(|| {
            graphs.push((graph, Default::default()));
            graphs.len() - 1
        });
        let (order, sums) = &mut graphs[at].1;
        for key in keys {
            match sums.get_mut(key.as_str()) {
                None => {
                    order.push(key);
                    sums.insert(key, v.clone());
                }
                Some(old) => *old = add(old, &v),
            }
        }
    }
    let mut doc = Map::new();
    if graphs.is_empty() {
        graphs.push((&ids.graph, Default::default()));
    }
    for (graph, (order, mut sums)) in graphs {
        let mut results = Map::new();
        for k in order {
            if let Some(v) = sums.remove(k) {
                results.insert(k.to_string(), json!({ "value": v }));
            }
        }
        doc.insert(
            graph.to_string(),
            json!({ "results": results, "gradient": GRADIENT }),
        );
    }
    super::pretty::to_string(&doc, 4096)
}

/// Two values of one metric added: integers exactly (saturating, as the
/// totals would have refused an overflow), times as floats.
fn add(a: &Value, b: &Value) -> Value {
    match (a.as_u64(), b.as_u64()) {
        (Some(x), Some(y)) => json!(x.saturating_add(y)),
        _ => json!(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
    }
}
