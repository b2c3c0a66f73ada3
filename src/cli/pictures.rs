//! The command line's hooks for the pictures of a report: the HTML page's
//! header, Model Explorer's node keys, and `c3 annotate`.

use super::{EstimateArgs, estimate_report, infer_model, is_trace};
use crate::cost::CostReport;
use crate::error::{Error, Result};
use crate::report::model_explorer::{Metric, NodeIds};

/// The roofline times of `--device`, if given: the lookup `estimate` does
/// inline, kept apart here so that function stays as it was while the
/// pipeline moves into the library (then one copy can go).
pub(super) fn roofline_of(
    a: &EstimateArgs,
    report: &CostReport,
) -> Result<Option<crate::device::Roofline>> {
    Ok(match &a.device {
        None => None,
        Some(name) => {
            let rules = a.rules.load()?;
            let device = rules.devices.find(name).ok_or_else(|| {
                let names: Vec<&str> = rules.devices.iter().map(|d| d.key.as_str()).collect();
                Error::Usage(format!(
                    "--device {name}: unknown device (known: {})",
                    names.join(", ")
                ))
            })?;
            let measured = match &a.measured {
                None => None,
                Some(m) => Some(crate::device::parse_duration(m).ok_or_else(|| {
                    Error::Usage(format!(
                        "--measured {m}: expected a duration like 2.4ms or 850us"
                    ))
                })?),
            };
            Some(crate::device::roofline(report, device, measured))
        }
    })
}

/// The model and the options in force, for the HTML page's header.
pub(super) fn about(a: &EstimateArgs) -> Vec<(String, String)> {
    let mut v = vec![("model".to_string(), a.source.model.clone())];
    let mut add = |k: &str, val: String| v.push((k.to_string(), val));
    for p in &a.rules.packs {
        add("rules", p.clone());
    }
    add(
        "fma",
        if a.no_fma {
            "off (a multiply-add is 2 FLOPs)"
        } else {
            "on (a multiply-add is 1 FLOP)"
        }
        .into(),
    );
    add("attention", format!("{:?}", a.attention).to_lowercase());
    add("if branch counted", a.if_branch.name().into());
    for d in &a.source.dims {
        add("dim", d.clone());
    }
    for i in &a.source.inputs {
        add("input", i.clone());
    }
    if let Some(w) = &a.weights {
        add("what if weights were", w.clone());
    }
    if let Some(t) = &a.activations {
        add("what if activations were", t.clone());
    }
    if let Some(d) = &a.device {
        add("device", d.clone());
    }
    if let Some(m) = &a.measured {
        add("measured", m.clone());
    }
    v
}

/// How Model Explorer knows the model's nodes: the ONNX graph's name and
/// each layer's node keys; a trace's layers by their names.
pub(super) fn node_ids(a: &EstimateArgs) -> Result<NodeIds> {
    if a.metric == Metric::BoundS && a.device.is_none() {
        return Err(Error::Usage("--metric bound_s needs --device".into()));
    }
    if is_trace(&a.source.model)? {
        let stem = std::path::Path::new(&a.source.model)
            .file_stem()
            .map_or("trace".into(), |s| s.to_string_lossy().into_owned());
        return Ok(NodeIds {
            graph: stem,
            keys: Default::default(),
        });
    }
    let (model, inferred) = infer_model(&a.source, true)?;
    let graph = model
        .model
        .graph
        .as_ref()
        .and_then(|g| g.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "main_graph".into());
    Ok(NodeIds {
        graph,
        keys: crate::onnx::annotate::node_keys(&model, &inferred),
    })
}

/// `c3 annotate`: the model with costs on its nodes, written to `-o`.
pub(super) fn annotate(a: &EstimateArgs) -> Result<String> {
    let Some(out) = &a.output else {
        return Err(Error::Usage("annotate needs -o OUT.onnx".into()));
    };
    if is_trace(&a.source.model)? {
        return Err(Error::Usage(
            "annotate needs an ONNX model, not a trace".into(),
        ));
    }
    let (model, inferred) = infer_model(&a.source, false)?;
    let report = estimate_report(a)?;
    let roofline = roofline_of(a, &report)?;
    let done = crate::onnx::annotate::annotate(&model, &inferred, &report, roofline.as_ref())?;
    std::fs::write(out, &done.bytes).map_err(|e| Error::io(out, e))?;
    Ok(format!(
        "wrote {out}: costs on {} nodes, {} inferred value_info entries\n",
        done.nodes, done.value_info
    ))
}
