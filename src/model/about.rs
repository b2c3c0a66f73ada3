//! What an estimate says of the options it ran under: JSON's `meta` and
//! the human formats' `Options:` line.

use super::{DType, EstimateOptions, Model};
use crate::report;

impl EstimateOptions {
    /// JSON's `meta` for an estimate of `model` with these options.
    pub fn meta(&self, model: &Model) -> report::Meta {
        use serde_json::{Value, json};
        let mut m = report::Meta {
            model: Some(model.path.clone()),
            input: Some(if model.is_trace() { "trace" } else { "onnx" }),
            ..Default::default()
        };
        m.set("fma", self.count.fma);
        m.set(
            "attention",
            if self.count.full_attention {
                "full"
            } else {
                "masked"
            },
        );
        m.set("if_branch", self.count.branch.name());
        if let Some(p) = self.count.prune {
            m.set("prune", p.fraction());
        }
        m.set("packs", self.packs.clone());
        m.set("dims", json!(self.dims));
        m.set("inputs", json!(self.inputs));
        m.set("device", self.device.clone());
        m.set("measured_s", self.measured_s);
        // One file as a string; TensorRT's pair as a list.
        match self.profile.as_slice() {
            [] => m.set("profile", Value::Null),
            [one] => m.set("profile", one.clone()),
            more => m.set("profile", json!(more)),
        }
        let name = |t: Option<DType>| t.map_or(Value::Null, |t| Value::from(t.name()));
        m.set("weights", name(self.weights));
        m.set("activations", name(self.activations));
        m.set("strict", self.strict);
        if let Some(t) = &self.training {
            m.set(
                "training",
                json!({
                    "freeze": t.freeze,
                    "optimizer": t.optimizer.map(|o| o.def().name),
                    "master_weights": name(t.master_weights),
                    "recompute": t.recompute,
                    "fit": t.fit,
                }),
            );
        }
        m
    }

    /// The options in force as (label, value), for a report's header.
    pub fn about(&self, model: &str) -> Vec<(String, String)> {
        let mut v = vec![("model".to_string(), model.to_string())];
        let mut add = |k: &str, val: String| v.push((k.to_string(), val));
        for p in &self.packs {
            add("rules", p.clone());
        }
        add(
            "fma",
            if self.count.fma {
                "on (a multiply-add is 1 FLOP)"
            } else {
                "off (a multiply-add is 2 FLOPs)"
            }
            .into(),
        );
        add(
            "attention",
            if self.count.full_attention {
                "full"
            } else {
                "masked"
            }
            .into(),
        );
        add("if branch counted", self.count.branch.name().into());
        for (k, n) in &self.dims {
            add("dim", format!("{k}={n}"));
        }
        for (k, shape) in &self.inputs {
            let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
            add("input", format!("{k}={}", dims.join("x")));
        }
        if let Some(p) = self.count.prune {
            add(
                "what if pruned",
                format!("{} of each weight nnz() counts is zero", p.fraction()),
            );
        }
        if let Some(w) = self.weights {
            add("what if weights were", w.name().to_string());
        }
        if let Some(t) = self.activations {
            add("what if activations were", t.name().to_string());
        }
        if let Some(d) = &self.device {
            add("device", d.clone());
        }
        if let Some(m) = self.measured_s {
            add("measured", crate::report::human_time(m, 3));
        }
        if !self.profile.is_empty() {
            add("profile", self.profile.join(", "));
        }
        if let Some(t) = &self.training {
            let mut what = vec!["forward and backward".to_string()];
            if let Some(o) = t.optimizer {
                what.push(format!("{} step", o.def().name));
            }
            add("training", what.join(", "));
            for f in &t.freeze {
                add("frozen", f.clone());
            }
            if let Some(m) = t.master_weights {
                add("master weights", m.name().to_string());
            }
            for r in &t.recompute {
                add("recomputed", r.clone());
            }
        }
        v
    }
}
