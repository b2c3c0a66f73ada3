//! A calibrated device's time model, as a pack's `devices.yaml` states it
//! (`time:`): per group of layers, a compute and a memory efficiency over
//! the device's roofline and a fixed cost per kernel, and which layers the
//! runtime fuses into the kernel of the layer before them. `c3 calibrate`
//! writes it ([`crate::calibrate`]); [`crate::cost::predict`] applies it.
//!
//! A layer's time is `compute_s / compute + memory_s / memory + kernel_s`,
//! where `compute_s` and `memory_s` are its roofline times on the device and
//! a group without a `compute` (or `memory`) term has none.

use serde::Deserialize;

use super::yaml::OrderedMap;

/// The suffix of a group that times fused layers (`Relu (fused)`).
pub const FUSED_SUFFIX: &str = " (fused)";
/// The prefix of a group that times a whole category (`category Activation`).
pub const CATEGORY_PREFIX: &str = "category ";
/// The group every layer falls back to.
pub const ANY: &str = "*";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TimeDef {
    groups: OrderedMap<GroupDef>,
    #[serde(default)]
    fused: Vec<String>,
    #[serde(default)]
    range: Option<[f64; 2]>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupDef {
    #[serde(default)]
    compute: Option<f64>,
    #[serde(default)]
    memory: Option<f64>,
    #[serde(default)]
    kernel_s: f64,
    #[serde(default)]
    samples: u64,
    #[serde(default)]
    residual: Option<f64>,
}

/// One group's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeGroup {
    /// `Conv/depthwise`, `Relu (fused)`, `category Activation`, `*`.
    pub key: String,
    /// Fraction of the roofline's compute rate the group reaches; `None`:
    /// its compute takes no time of its own.
    pub compute: Option<f64>,
    /// Fraction of the roofline's bandwidth; `None`: no memory term.
    pub memory: Option<f64>,
    /// Seconds added per layer of the group (a kernel's launch and the
    /// runtime's step between kernels).
    pub kernel_s: f64,
    /// Kernels the calibration saw in the group.
    pub samples: u64,
    /// The group's relative error on the calibration's kernels.
    pub residual: Option<f64>,
}

impl TimeGroup {
    /// The group's time for roofline times `compute_s` and `memory_s`.
    pub fn time(&self, compute_s: f64, memory_s: f64) -> f64 {
        let part = |t: f64, e: Option<f64>| e.map_or(0.0, |e| t / e);
        part(compute_s, self.compute) + part(memory_s, self.memory) + self.kernel_s
    }
}

/// A device's time model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TimeModel {
    pub groups: Vec<TimeGroup>,
    /// `(layer, producer)` group names: a layer of the first whose input
    /// comes from a layer of the second runs inside that layer's kernel.
    pub fused: Vec<(String, String)>,
    /// Relative errors of the calibration's totals (low, high): a predicted
    /// time `p` stands for a measured one from `p / (1 + high)` to
    /// `p / (1 + low)`.
    pub range: Option<(f64, f64)>,
}

/// What a layer is, for its time group.
#[derive(Debug, Clone, Copy)]
pub struct LayerKind<'a> {
    pub op: &'a str,
    pub class: Option<&'a str>,
    pub category: &'a str,
}

impl LayerKind<'_> {
    /// `Conv/depthwise`, or the op alone.
    pub fn key(&self) -> String {
        match self.class {
            Some(c) => format!("{}/{c}", self.op),
            None => self.op.to_string(),
        }
    }
}

/// Efficiencies above this are refused: no group runs a hundred times faster
/// than its roofline.
pub const MAX_EFFICIENCY: f64 = 100.0;
/// A kernel's fixed cost is under ten seconds.
pub const MAX_KERNEL_S: f64 = 10.0;
/// Groups one device may declare.
pub const MAX_GROUPS: usize = 4096;

impl TimeModel {
    /// Checks a parsed `time:` section; `Err` says what is wrong.
    pub(crate) fn from_def(def: TimeDef) -> Result<TimeModel, String> {
        if def.groups.0.len() > MAX_GROUPS {
            return Err(format!(
                "{} time groups, which exceeds the limit of {MAX_GROUPS} (MAX_GROUPS)",
                def.groups.0.len()
            ));
        }
        if !def.groups.0.iter().any(|(k, _)| k == ANY) {
            return Err(format!(
                "time: no '{ANY}' group, which every layer falls back to"
            ));
        }
        let mut groups = Vec::with_capacity(def.groups.0.len());
        for (key, g) in def.groups.0 {
            let eff = |what: &str, v: Option<f64>| match v {
                Some(e) if !(e > 0.0 && e <= MAX_EFFICIENCY) => Err(format!(
                    "time group '{key}': {what} must be an efficiency above 0 and at most {MAX_EFFICIENCY}, not {e}"
                )),
                _ => Ok(v),
            };
            let compute = eff("compute", g.compute)?;
            let memory = eff("memory", g.memory)?;
            if !(0.0..=MAX_KERNEL_S).contains(&g.kernel_s) {
                return Err(format!(
                    "time group '{key}': kernel_s must be from 0 to {MAX_KERNEL_S} seconds, not {}",
                    g.kernel_s
                ));
            }
            if let Some(r) = g.residual
                && !r.is_finite()
            {
                return Err(format!(
                    "time group '{key}': residual must be a number, not {r}"
                ));
            }
            groups.push(TimeGroup {
                key,
                compute,
                memory,
                kernel_s: g.kernel_s,
                samples: g.samples,
                residual: g.residual,
            });
        }
        let mut fused = Vec::with_capacity(def.fused.len());
        for f in &def.fused {
            let Some((a, b)) = f.split_once(" after ") else {
                return Err(format!(
                    "time: fused entry '{f}' is not of the form 'LAYER after PRODUCER' (`Relu after Conv`)"
                ));
            };
            fused.push((a.trim().to_string(), b.trim().to_string()));
        }
        let range = match def.range {
            None => None,
            Some([lo, hi]) if lo.is_finite() && hi.is_finite() && lo <= hi && lo > -1.0 => {
                Some((lo, hi))
            }
            Some([lo, hi]) => {
                return Err(format!(
                    "time: range must be two relative errors, low then high, above -1 (not [{lo}, {hi}])"
                ));
            }
        };
        Ok(TimeModel {
            groups,
            fused,
            range,
        })
    }

    /// Whether a layer of kind `layer` whose input comes from a layer of
    /// kind `producer` runs inside the producer's kernel.
    pub fn is_fused(&self, layer: &LayerKind<'_>, producer: &LayerKind<'_>) -> bool {
        let (lk, pk) = (layer.key(), producer.key());
        self.fused
            .iter()
            .any(|(a, b)| (*a == lk || *a == layer.op) && (*b == pk || *b == producer.op))
    }

    /// The group that times a layer: its op and class, its op, its category,
    /// then `*`; a fused layer looks for the fused group of each first.
    pub fn group(&self, layer: &LayerKind<'_>, fused: bool) -> &TimeGroup {
        let category = format!("{CATEGORY_PREFIX}{}", layer.category);
        let mut names: Vec<String> = Vec::with_capacity(8);
        for base in [
            Some(layer.key()),
            layer.class.map(|_| layer.op.to_string()),
            Some(category),
            Some(ANY.to_string()),
        ]
        .into_iter()
        .flatten()
        {
            if fused {
                names.push(format!("{base}{FUSED_SUFFIX}"));
            } else {
                names.push(base);
            }
        }
        if fused {
            names.push(ANY.to_string());
        }
        // from_def makes sure the `*` group exists; a model without groups
        // times nothing.
        static NOTHING: TimeGroup = TimeGroup {
            key: String::new(),
            compute: None,
            memory: None,
            kernel_s: 0.0,
            samples: 0,
            residual: None,
        };
        names
            .iter()
            .find_map(|n| self.groups.iter().find(|g| g.key == *n))
            .or_else(|| self.groups.iter().find(|g| g.key == ANY))
            .unwrap_or(&NOTHING)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(yaml: &str) -> Result<TimeModel, String> {
        let def: TimeDef = serde_saphyr::from_str(yaml).map_err(|e| e.to_string())?;
        TimeModel::from_def(def)
    }

    #[test]
    fn a_layer_finds_its_most_specific_group() {
        let m = model(
            "groups:\n  Conv/depthwise: {compute: 0.25, kernel_s: 1.0e-6}\n  Conv: {compute: 0.5}\n  \
             Relu (fused): {memory: 1.0}\n  category Activation: {memory: 0.5, kernel_s: 2.0e-6}\n  \
             '*': {compute: 1.0, memory: 1.0, kernel_s: 3.0e-6}\nfused: [Relu after Conv]\n",
        )
        .unwrap();
        let dw = LayerKind {
            op: "Conv",
            class: Some("depthwise"),
            category: "Connection",
        };
        let kxk = LayerKind {
            op: "Conv",
            class: Some("kxk"),
            category: "Connection",
        };
        let relu = LayerKind {
            op: "Relu",
            class: None,
            category: "Activation",
        };
        let tanh = LayerKind {
            op: "Tanh",
            class: None,
            category: "Activation",
        };
        let pad = LayerKind {
            op: "Pad",
            class: None,
            category: "Tensor",
        };
        assert_eq!(m.group(&dw, false).key, "Conv/depthwise");
        assert_eq!(m.group(&kxk, false).key, "Conv");
        assert_eq!(m.group(&relu, true).key, "Relu (fused)");
        assert_eq!(m.group(&relu, false).key, "category Activation");
        assert_eq!(m.group(&tanh, true).key, "*");
        assert_eq!(m.group(&pad, false).key, "*");
        assert!(m.is_fused(&relu, &kxk));
        assert!(!m.is_fused(&tanh, &kxk));
        // Conv/depthwise: 4 µs of compute at a quarter of the peak is 16 µs,
        // no memory term, plus 1 µs a kernel.
        let t = m.group(&dw, false).time(4e-6, 9.0);
        assert!((t - 17e-6).abs() < 1e-12, "{t}");
    }

    #[test]
    fn bad_models_say_what_is_wrong() {
        let e = model("groups:\n  Conv: {compute: 0.5}\n").unwrap_err();
        assert!(e.contains("no '*' group"), "{e}");
        let e = model("groups:\n  '*': {compute: 0}\n").unwrap_err();
        assert!(e.contains("compute must be an efficiency above 0"), "{e}");
        let e = model("groups:\n  '*': {kernel_s: -1}\n").unwrap_err();
        assert!(e.contains("kernel_s must be from 0"), "{e}");
        let e = model("groups:\n  '*': {}\nfused: [Relu]\n").unwrap_err();
        assert!(e.contains("not of the form 'LAYER after PRODUCER'"), "{e}");
        let e = model("groups:\n  '*': {}\nrange: [0.2, 0.1]\n").unwrap_err();
        assert!(e.contains("range must be"), "{e}");
        let e = model("groups:\n  '*': {speed: 1}\n").unwrap_err();
        assert!(e.contains("speed"), "{e}");
    }
}
