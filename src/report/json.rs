//! `--format json`: the whole result with exact integers (bytes in bytes).
//!
//! Serialized straight from the report (no intermediate JSON tree), so a
//! 100,000-layer model costs one pass and little memory.

use std::io::{self, Write};

use evalexpr::Value;
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};

use crate::cost::fusion::FusedGroup;
use crate::cost::{CostReport, LayerCost, Totals};
use crate::cost::{LayerTime, Roofline};
use crate::ir::qualified;
use crate::ir::{AHEAD, Dim, TensorFact, prefetch};

use super::pretty::{self, Chunked};
use super::{Meta, Parts, ReportOptions, SortKey, layer_rows};

struct DimJ<'a>(&'a Dim);

impl Serialize for DimJ<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Dim::Known(n) => s.serialize_u64(*n),
            Dim::Sym(v) => s.collect_str(v),
        }
    }
}

struct TensorJ<'a>(&'a Option<TensorFact>);

impl Serialize for TensorJ<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(t) = self.0 else {
            return s.serialize_none();
        };
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("dtype", t.dtype.name())?;
        m.serialize_entry("shape", &t.shape.iter().map(DimJ).collect::<Vec<_>>())?;
        m.end()
    }
}

/// A formula value (a param) as JSON.
struct ValueJ<'a>(&'a Value);

impl Serialize for ValueJ<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) if f.is_finite() => s.serialize_f64(*f),
            Value::Float(_) | Value::Empty => s.serialize_none(),
            Value::String(v) => s.serialize_str(v),
            Value::Boolean(b) => s.serialize_bool(*b),
            Value::Tuple(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(&ValueJ(i))?;
                }
                seq.end()
            }
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A float, `null` when not finite.
fn num(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

struct LayerJ<'a> {
    l: &'a LayerCost,
    time: Option<&'a LayerTime>,
    /// With `--training`: the layer's backward (`null`: none).
    backward: Option<Option<super::training::BackwardJ>>,
    /// What timing adds to the row (see [`extras`]).
    extra: Vec<(&'static str, Scalar<'a>)>,
}

/// A value of a row's timing entries.
#[derive(Clone)]
enum Scalar<'a> {
    Uint(u64),
    Num(Option<f64>),
    Text(Option<&'a str>),
    Index(Option<u32>),
    Owned(Option<String>),
}

impl Serialize for Scalar<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Scalar::Uint(n) => s.serialize_u64(*n),
            Scalar::Num(v) => v.and_then(num).serialize(s),
            Scalar::Text(v) => v.serialize(s),
            Scalar::Index(v) => v.serialize(s),
            Scalar::Owned(v) => v.serialize(s),
        }
    }
}

/// The entries a row gains with timing, in order: the layer's work as a
/// peak counts it, its kernel class, its rule's category, the layer its
/// input comes from; with a profile, its measured time (on the layer that
/// shows its kernel group's time), its group and the layer whose time it
/// is in; where layers are predicted (a calibrated device, a rule's `time:`
/// formula), its predicted time, time group, what predicted it (`rule` or
/// `model`) and where the rule's formula is written.
fn extras<'a>(
    report: &'a CostReport,
    i: usize,
    time: Option<&'a LayerTime>,
    roofline: Option<&'a Roofline>,
) -> Vec<(&'static str, Scalar<'a>)> {
    let l = &report.layers[i];
    let mut v = Vec::new();
    if l.category.is_some() {
        v.extend([
            ("work", Scalar::Uint(l.work)),
            ("class", Scalar::Text(l.class.as_deref())),
            ("category", Scalar::Text(l.category.as_deref())),
            ("calls", Scalar::Uint(l.calls)),
            (
                "input_from",
                Scalar::Text(
                    l.input_from
                        .map(|p| report.layers[p as usize].name.as_str()),
                ),
            ),
        ]);
    }
    if let Some(m) = &report.measured {
        v.extend([
            ("measured_s", Scalar::Num(m.layer_s(i))),
            (
                "kernel",
                Scalar::Index(m.layer_group.get(i).copied().flatten()),
            ),
            (
                "measured_in",
                Scalar::Text(m.fused_into(i).map(|j| report.layers[j].name.as_str())),
            ),
        ]);
    }
    if let (Some(t), Some(r)) = (time, roofline)
        && r.predicts()
    {
        let model = r.device.time.as_ref();
        v.extend([
            ("predicted_s", Scalar::Num(t.predicted_s)),
            (
                "time_group",
                Scalar::Text(
                    t.group
                        .zip(model)
                        .and_then(|(g, m)| m.groups.get(g))
                        .map(|g| g.key.as_str()),
                ),
            ),
            ("predicted_by", Scalar::Text(t.predicted_by())),
            (
                "time_formula",
                Scalar::Owned(t.by_rule.as_ref().map(|o| o.to_string())),
            ),
        ]);
    }
    v
}

impl Serialize for LayerJ<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let l = self.l;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("name", &l.name)?;
        m.serialize_entry("op", &qualified(&l.domain, &l.op))?;
        m.serialize_entry("flops", &l.flops)?;
        m.serialize_entry("iops", &l.iops)?;
        m.serialize_entry("mread", &l.mread)?;
        m.serialize_entry("mwrite", &l.mwrite)?;
        m.serialize_entry("mrw", &l.mrw())?;
        m.serialize_entry("inputs", &l.inputs.iter().map(TensorJ).collect::<Vec<_>>())?;
        m.serialize_entry(
            "outputs",
            &l.outputs.iter().map(TensorJ).collect::<Vec<_>>(),
        )?;
        m.serialize_entry("attrs", &ParamsJ(&l.attrs))?;
        m.serialize_entry("params", &l.params)?;
        m.serialize_entry("weight_bytes", &l.weight_bytes)?;
        m.serialize_entry("live_bytes", &l.live_bytes)?;
        m.serialize_entry("fused", &l.fused)?;
        m.serialize_entry("runs", &l.runs)?;
        if let Some(t) = self.time {
            m.serialize_entry("precision", t.precision)?;
            m.serialize_entry("precision_asked", t.asked)?;
            m.serialize_entry("compute_s", &num(t.compute_s))?;
            m.serialize_entry("memory_s", &num(t.memory_s))?;
            m.serialize_entry("bound_s", &num(t.bound_s))?;
            m.serialize_entry("bound", t.bound.as_str())?;
            m.serialize_entry("intensity", &t.intensity.and_then(num))?;
        }
        for (k, v) in &self.extra {
            m.serialize_entry(k, v)?;
        }
        if let Some(b) = &self.backward {
            m.serialize_entry("backward", b)?;
        }
        m.end()
    }
}

struct ParamsJ<'a>(&'a [(String, Value)]);

impl Serialize for ParamsJ<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, &ValueJ(v))?;
        }
        m.end()
    }
}

#[derive(Serialize)]
struct SummaryJ<'a> {
    op: String,
    layers: u64,
    flops: u64,
    iops: u64,
    mread: u64,
    mwrite: u64,
    mrw: u64,
    params: u64,
    weight_bytes: u64,
    /// With a profile: the time of the kernel groups this type leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    measured_s: Option<f64>,
    /// On a calibrated device: the type's predicted time.
    #[serde(skip_serializing_if = "Option::is_none")]
    predicted_s: Option<f64>,
    /// With `--training`: the type's backward.
    #[serde(skip_serializing_if = "Option::is_none")]
    backward: Option<super::training::TotalsJ>,
    #[serde(skip)]
    _t: std::marker::PhantomData<&'a ()>,
}

#[derive(Serialize)]
struct TotalJ<'a> {
    flops: u64,
    iops: u64,
    mread: u64,
    mwrite: u64,
    mrw: u64,
    layers: u64,
    /// Each distinct parameter tensor once.
    params: u64,
    weight_bytes: u64,
    /// A trace's buffers (state, not parameters), each once.
    #[serde(skip_serializing_if = "is_zero")]
    buffers: u64,
    #[serde(skip_serializing_if = "is_zero")]
    buffer_bytes: u64,
    peak_activation_bytes: u64,
    peak_at: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    compute_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bound_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additive_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    measured_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    efficiency_bound: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    efficiency_additive: Option<f64>,
    /// With timing: the operations compute times divide by the peaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    work: Option<u64>,
    /// With a profile: its kernels' times, summed.
    #[serde(skip_serializing_if = "Option::is_none")]
    kernels_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    predicted_s: Option<f64>,
    /// The range the calibration's residuals give the prediction.
    #[serde(skip_serializing_if = "Option::is_none")]
    predicted_low_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    predicted_high_s: Option<f64>,
    /// Layers a rule's `time:` formula predicted.
    #[serde(skip_serializing_if = "Option::is_none")]
    predicted_by_rules: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    efficiency_predicted: Option<f64>,
    /// With `--training`: the backward pass, the optimizer's step and the
    /// memory of a step.
    #[serde(skip_serializing_if = "Option::is_none")]
    backward: Option<super::training::TotalsJ>,
    #[serde(skip_serializing_if = "Option::is_none")]
    optimizer: Option<super::training::OptimizerJ<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    training_memory: Option<super::training::MemoryJ<'a>>,
}

/// A profile's join (`--profile`).
#[derive(Serialize)]
struct ProfileJ<'a> {
    file: &'a str,
    runtime: &'a str,
    provider: Option<&'a str>,
    threads: Option<u64>,
    runs: usize,
    warmup_dropped: usize,
    run_s: Option<f64>,
    kernels: usize,
    kernels_s: Option<f64>,
    /// Kernel time joined to layers, folded ones included, 0 to 1.
    joined_share: Option<f64>,
    folded_s: Option<f64>,
    unjoined_s: Option<f64>,
    groups: Vec<GroupJ<'a>>,
    inserted: Vec<InsertedJ<'a>>,
    folded: Vec<FoldedJ<'a>>,
    unjoined: Vec<UnjoinedJ<'a>>,
    layers_without_kernel: Vec<&'a str>,
}

#[derive(Serialize)]
struct GroupJ<'a> {
    kernels: &'a [String],
    op: &'a str,
    measured_s: Option<f64>,
    /// With a device: the kernel's roofline bound, its layers as one
    /// kernel ([`crate::cost::measured::Measured::group_bounds`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    bound_s: Option<f64>,
    /// Indices into `layers` (all of them, whatever rows are shown).
    layers: &'a [usize],
    lead: &'a str,
}

#[derive(Serialize)]
struct InsertedJ<'a> {
    kernel: &'a str,
    op: &'a str,
    measured_s: Option<f64>,
    group: usize,
}

#[derive(Serialize)]
struct FoldedJ<'a> {
    kernel: &'a str,
    layer: &'a str,
    measured_s: Option<f64>,
}

#[derive(Serialize)]
struct UnjoinedJ<'a> {
    kernel: &'a str,
    op: &'a str,
    measured_s: Option<f64>,
}

fn profile_j<'a>(
    report: &'a CostReport,
    m: &'a crate::cost::measured::Measured,
    roofline: Option<&Roofline>,
) -> ProfileJ<'a> {
    let bounds = roofline.map(|r| m.group_bounds(report, r));
    ProfileJ {
        file: &m.path,
        runtime: &m.runtime,
        provider: m.provider.as_deref(),
        threads: m.threads,
        runs: m.runs,
        warmup_dropped: m.dropped,
        run_s: m.run_s.and_then(num),
        kernels: m.kernels,
        kernels_s: num(m.kernels_s),
        joined_share: num(m.joined_share()),
        folded_s: num(m.folded_s()),
        unjoined_s: num(m.unjoined_s()),
        groups: m
            .groups
            .iter()
            .enumerate()
            .map(|(k, g)| GroupJ {
                kernels: &g.kernels,
                op: &g.op,
                measured_s: num(g.seconds),
                bound_s: bounds.as_ref().and_then(|b| num(b[k])),
                layers: &g.layers,
                lead: &report.layers[g.lead].name,
            })
            .collect(),
        inserted: m
            .inserted
            .iter()
            .map(|k| InsertedJ {
                kernel: &k.name,
                op: &k.op,
                measured_s: num(k.seconds),
                group: k.group,
            })
            .collect(),
        folded: m
            .folded
            .iter()
            .map(|k| FoldedJ {
                kernel: &k.name,
                layer: &k.layer,
                measured_s: num(k.seconds),
            })
            .collect(),
        unjoined: m
            .unjoined
            .iter()
            .map(|k| UnjoinedJ {
                kernel: &k.name,
                op: &k.op,
                measured_s: num(k.seconds),
            })
            .collect(),
        layers_without_kernel: m
            .without_kernel
            .iter()
            .map(|&i| report.layers[i].name.as_str())
            .collect(),
    }
}

#[derive(Serialize)]
struct UnsupportedJ<'a> {
    name: &'a str,
    op: String,
    reason: &'a str,
}

#[derive(Serialize)]
struct DeviceJ<'a> {
    name: &'a str,
    description: &'a str,
    bandwidth: f64,
    /// How its peaks count operations (`multiply-add-as-two`, `reported`).
    peak_counts: &'static str,
    /// Whether it carries a calibrated time model (predicted times).
    calibrated: bool,
    /// The peaks the layers were timed at, one per (asked, used) precision.
    peaks: Vec<PeakJ>,
}

#[derive(Serialize)]
struct PeakJ {
    precision_asked: &'static str,
    precision: &'static str,
    fell_back: bool,
    peak: f64,
    layers: usize,
    compute_s: Option<f64>,
}

#[derive(Serialize)]
struct FusionJ<'a> {
    group: &'a str,
    pattern: &'a str,
    layers: Vec<&'a str>,
    saved_bytes: u64,
}

#[derive(Serialize)]
struct SkippedJ<'a> {
    node: &'a str,
    branch: &'a str,
    reason: &'a str,
    flops: u64,
    iops: u64,
    mread: u64,
    mwrite: u64,
    mrw: u64,
    layers: Vec<LayerJ<'a>>,
}

#[derive(Serialize)]
struct Doc<'a> {
    meta: Meta,
    /// Left out with `--summary`.
    #[serde(skip_serializing_if = "Option::is_none")]
    layers: Option<Vec<LayerJ<'a>>>,
    /// Left out with `--layers`.
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<Vec<SummaryJ<'a>>>,
    total: TotalJ<'a>,
    unsupported: Vec<UnsupportedJ<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<DeviceJ<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fusions: Vec<FusionJ<'a>>,
    /// If branches the totals leave out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    skipped_branches: Vec<SkippedJ<'a>>,
    /// Data-dependent sizes taken at their upper bounds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    assumed: Vec<AssumedJ<'a>>,
    /// Layers folded away at load time, with what they would have cost.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    folded: Vec<LayerJ<'a>>,
    /// A runtime's profile joined to the layers.
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<ProfileJ<'a>>,
    /// With `--training`: what trains, what is not counted, `--fit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    training: Option<super::training::TrainingJ<'a>>,
    /// With `--depth`: the module tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    tree: Option<Vec<super::tree::TreeNode>>,
}

#[derive(Serialize)]
struct AssumedJ<'a> {
    symbol: &'a str,
    value: u64,
    op: &'a str,
}

fn summary_row<'a>(op: String, t: &Totals, times: (Option<f64>, Option<f64>)) -> SummaryJ<'a> {
    SummaryJ {
        measured_s: times.0.and_then(num),
        predicted_s: times.1.and_then(num),
        op,
        layers: t.layers,
        flops: t.flops,
        iops: t.iops,
        mread: t.mread,
        mwrite: t.mwrite,
        mrw: t.mrw,
        params: t.params,
        weight_bytes: t.weight_bytes,
        backward: None,
        _t: std::marker::PhantomData,
    }
}

fn fusion<'a>(report: &'a CostReport, g: &'a FusedGroup) -> FusionJ<'a> {
    FusionJ {
        group: &g.id,
        pattern: &g.pattern,
        layers: g
            .members
            .iter()
            .map(|&i| report.layers[i].name.as_str())
            .collect(),
        saved_bytes: g.saved_bytes,
    }
}

/// The report as JSON with no meta options (the library's plain form).
pub fn to_json(report: &CostReport, roofline: Option<&Roofline>) -> String {
    render(report, &ReportOptions::default(), roofline)
}

/// The report as JSON: `meta`, the parts asked for (`--summary`,
/// `--layers`), the layer rows `--sort` and `--top` chose, and the totals
/// over every layer.
pub fn render(report: &CostReport, opts: &ReportOptions, roofline: Option<&Roofline>) -> String {
    // About 600 bytes a layer row.
    let mut out = Vec::with_capacity(4096 + 640 * report.layers.len());
    write(report, opts, roofline, &mut out).expect("writing to memory cannot fail");
    // serde_json writes only valid UTF-8 (its strings are Rust strings).
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// [`render`]'s text written to `w` as it is made, with no copy of the
/// whole text in memory (a 100,000-layer report is some 60 MB).
pub fn write(
    report: &CostReport,
    opts: &ReportOptions,
    roofline: Option<&Roofline>,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    write_doc(&doc(report, opts, roofline), w)
}

/// The document, its parts borrowed from the report.
fn doc<'a>(
    report: &'a CostReport,
    opts: &ReportOptions,
    roofline: Option<&'a Roofline>,
) -> Doc<'a> {
    let t = &report.total;
    let measured = roofline
        .and_then(|r| r.measured_s)
        .or_else(|| report.measured.as_ref().and_then(|m| m.run_s))
        .and_then(num);
    let timing = report.layers.iter().any(|l| l.category.is_some());
    let predicted = roofline.and_then(|r| r.predicted_s);
    let training = report.training.as_ref();
    let mut meta = opts.meta.clone().unwrap_or_default();
    meta.set("parts", opts.parts.name());
    meta.set("sort", opts.sort.map(SortKey::name));
    meta.set("top", opts.top);
    Doc {
        meta,
        layers: (opts.parts != Parts::Summary).then(|| {
            layer_rows(report, roofline, opts.sort, opts.top)
                .into_iter()
                .map(|i| {
                    let time = roofline.and_then(|r| r.layers.get(i));
                    LayerJ {
                        l: &report.layers[i],
                        time,
                        extra: extras(report, i, time, roofline),
                        backward: report.training.as_ref().map(|t| {
                            super::training::layer_j(t.layers.get(i).and_then(|b| b.as_ref()))
                        }),
                    }
                })
                .collect()
        }),
        summary: (opts.parts != Parts::Layers).then(|| {
            report
                .summary
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let times = super::timing::by_type(report, roofline, &s.domain, &s.op);
                    let mut row = summary_row(qualified(&s.domain, &s.op), &s.totals, times);
                    row.backward = training
                        .and_then(|t| t.by_type.get(i))
                        .map(super::training::totals_j);
                    row
                })
                .collect()
        }),
        total: TotalJ {
            flops: t.flops,
            iops: t.iops,
            mread: t.mread,
            mwrite: t.mwrite,
            mrw: t.mrw,
            layers: t.layers,
            params: t.params,
            weight_bytes: t.weight_bytes,
            buffers: report.buffers.0,
            buffer_bytes: report.buffers.1,
            peak_activation_bytes: report.peak.bytes,
            peak_at: report.peak.at.as_deref(),
            compute_s: roofline.and_then(|r| num(r.compute_s)),
            memory_s: roofline.and_then(|r| num(r.memory_s)),
            bound_s: roofline.and_then(|r| num(r.bound_s)),
            additive_s: roofline.and_then(|r| num(r.additive_s)),
            measured_s: measured,
            efficiency_bound: roofline.and_then(|r| r.efficiency(r.bound_s)).and_then(num),
            efficiency_additive: roofline
                .and_then(|r| r.efficiency(r.additive_s))
                .and_then(num),
            work: timing.then_some(roofline.map_or(t.work, |r| r.work)),
            kernels_s: report.measured.as_ref().and_then(|m| num(m.kernels_s)),
            predicted_s: predicted.and_then(num),
            predicted_low_s: roofline
                .and_then(|r| r.predicted_range)
                .and_then(|r| num(r.0)),
            predicted_high_s: roofline
                .and_then(|r| r.predicted_range)
                .and_then(|r| num(r.1)),
            predicted_by_rules: roofline.map(Roofline::by_rules).filter(|n| *n > 0),
            efficiency_predicted: predicted
                .zip(measured)
                .filter(|(_, m)| *m > 0.0)
                .and_then(|(p, m)| num(p / m)),
            backward: training.map(|t| super::training::totals_j(&t.total)),
            optimizer: training.and_then(super::training::optimizer_j),
            training_memory: training.map(super::training::memory_j),
        },
        unsupported: report
            .unsupported
            .iter()
            .map(|u| UnsupportedJ {
                name: &u.name,
                op: qualified(&u.domain, &u.op),
                reason: &u.reason,
            })
            .collect(),
        device: roofline.map(|r| DeviceJ {
            name: &r.device.key,
            description: &r.device.name,
            bandwidth: r.device.bandwidth,
            peak_counts: r.device.peak_counts.key(),
            calibrated: r.device.time.is_some(),
            peaks: r
                .peaks
                .iter()
                .map(|g| PeakJ {
                    precision_asked: g.asked,
                    precision: g.used,
                    fell_back: g.fell_back(),
                    peak: g.peak,
                    layers: g.layers,
                    compute_s: num(g.compute_s),
                })
                .collect(),
        }),
        fusions: report.fusions.iter().map(|g| fusion(report, g)).collect(),
        skipped_branches: report
            .skipped
            .iter()
            .map(|b| SkippedJ {
                node: &b.node,
                branch: &b.branch,
                reason: &b.reason,
                flops: b.totals.flops,
                iops: b.totals.iops,
                mread: b.totals.mread,
                mwrite: b.totals.mwrite,
                mrw: b.totals.mrw,
                layers: b
                    .layers
                    .iter()
                    .map(|l| LayerJ {
                        l,
                        time: None,
                        extra: Vec::new(),
                        backward: None,
                    })
                    .collect(),
            })
            .collect(),
        assumed: report
            .assumed
            .iter()
            .map(|a| AssumedJ {
                symbol: &a.symbol,
                value: a.value,
                op: &a.op,
            })
            .collect(),
        folded: report
            .folded
            .iter()
            .map(|l| LayerJ {
                l,
                time: None,
                extra: Vec::new(),
                backward: None,
            })
            .collect(),
        profile: report
            .measured
            .as_ref()
            .map(|m| profile_j(report, m, roofline)),
        training: training.map(super::training::training_j),
        tree: opts.depth.map(|d| super::tree::tree(report, d)),
    }
}

/// The text serde would write for `doc` (the same bytes: a test holds them
/// to it), its layer rows written by hand: serde's calls per key and
/// value were a quarter of a large model's estimate.
fn write_doc(doc: &Doc<'_>, w: &mut dyn Write) -> io::Result<()> {
    pretty::stream(w, |c| {
        c.write_all(b"{")?;
        c.key(1, true, "meta")?;
        c.value(&doc.meta, 1)?;
        if let Some(layers) = &doc.layers {
            c.key(1, false, "layers")?;
            rows(c, layers, 1)?;
        }
        if let Some(summary) = &doc.summary {
            c.key(1, false, "summary")?;
            c.value(summary, 1)?;
        }
        c.key(1, false, "total")?;
        c.value(&doc.total, 1)?;
        c.key(1, false, "unsupported")?;
        c.value(&doc.unsupported, 1)?;
        if let Some(device) = &doc.device {
            c.key(1, false, "device")?;
            c.value(device, 1)?;
        }
        if !doc.fusions.is_empty() {
            c.key(1, false, "fusions")?;
            c.value(&doc.fusions, 1)?;
        }
        if !doc.skipped_branches.is_empty() {
            c.key(1, false, "skipped_branches")?;
            c.value(&doc.skipped_branches, 1)?;
        }
        if !doc.assumed.is_empty() {
            c.key(1, false, "assumed")?;
            c.value(&doc.assumed, 1)?;
        }
        if !doc.folded.is_empty() {
            c.key(1, false, "folded")?;
            rows(c, &doc.folded, 1)?;
        }
        if let Some(p) = &doc.profile {
            c.key(1, false, "profile")?;
            c.value(p, 1)?;
        }
        if let Some(t) = &doc.training {
            c.key(1, false, "training")?;
            c.value(t, 1)?;
        }
        if let Some(t) = &doc.tree {
            c.key(1, false, "tree")?;
            c.value(t, 1)?;
        }
        c.close(0, b"}")
    })
}

/// A list of layer rows, opened on a line `level` deep.
fn rows(c: &mut Chunked<'_>, layers: &[LayerJ<'_>], level: usize) -> io::Result<()> {
    if layers.is_empty() {
        return c.write_all(b"[]");
    }
    c.write_all(b"[")?;
    let keys = RowKeys::at(level + 1);
    c.items(layers, |c, i, l| {
        // The row's name and op type lie apart from it too.
        prefetch(layers.get(i + AHEAD).map(|j| {
            let [inputs, outputs] = j.l.ahead();
            [inputs, outputs, j.l.name.as_ptr(), j.l.op.as_ptr()]
        }));
        c.item(level + 1, i == 0)?;
        row(c, l, level + 1, &keys)
    })?;
    c.close(level, b"]")
}

/// The keys of a layer row written `level` deep (as [`row`] takes it: its
/// entries one deeper), each as [`Chunked::key`] writes it
/// ([`pretty::key_text`]), in the row's order.
struct RowKeys {
    name: Vec<u8>,
    op: Vec<u8>,
    /// flops, iops, mread, mwrite, mrw.
    counts: [Vec<u8>; 5],
    inputs: Vec<u8>,
    outputs: Vec<u8>,
    attrs: Vec<u8>,
    /// params, weight_bytes, live_bytes.
    sizes: [Vec<u8>; 3],
    fused: Vec<u8>,
    runs: Vec<u8>,
}

impl RowKeys {
    fn at(level: usize) -> RowKeys {
        let k = level + 1;
        let key = |name| pretty::key_text(k, false, name);
        RowKeys {
            name: pretty::key_text(k, true, "name"),
            op: key("op"),
            counts: ["flops", "iops", "mread", "mwrite", "mrw"].map(key),
            inputs: key("inputs"),
            outputs: key("outputs"),
            attrs: key("attrs"),
            sizes: ["params", "weight_bytes", "live_bytes"].map(key),
            fused: key("fused"),
            runs: key("runs"),
        }
    }
}

/// One layer, as [`LayerJ`] serializes it; `keys`: its keys at its depth.
fn row(c: &mut Chunked<'_>, j: &LayerJ<'_>, level: usize, keys: &RowKeys) -> io::Result<()> {
    let (l, k) = (j.l, level + 1);
    c.write_all(b"{")?;
    c.write_all(&keys.name)?;
    c.text(&l.name)?;
    c.write_all(&keys.op)?;
    if l.domain.is_empty() {
        c.text(&l.op)?;
    } else {
        c.text(&qualified(&l.domain, &l.op))?;
    }
    let counts = [l.flops, l.iops, l.mread, l.mwrite, l.mrw()];
    for (key, n) in keys.counts.iter().zip(counts) {
        c.write_all(key)?;
        c.uint(n)?;
    }
    c.write_all(&keys.inputs)?;
    tensors(c, &l.inputs, k)?;
    c.write_all(&keys.outputs)?;
    tensors(c, &l.outputs, k)?;
    c.write_all(&keys.attrs)?;
    // Shared by the layers of one evaluation.
    let attrs = (l.attrs.as_ptr() as usize, 0, k as u32);
    c.shared(attrs, |c| c.value(&ParamsJ(&l.attrs), k))?;
    let sizes = [l.params, l.weight_bytes, l.live_bytes];
    for (key, n) in keys.sizes.iter().zip(sizes) {
        c.write_all(key)?;
        c.uint(n)?;
    }
    c.write_all(&keys.fused)?;
    c.scalar(&l.fused)?;
    c.write_all(&keys.runs)?;
    c.uint(l.runs)?;
    if let Some(t) = j.time {
        c.key(k, false, "precision")?;
        c.scalar(t.precision)?;
        c.key(k, false, "precision_asked")?;
        c.scalar(t.asked)?;
        for (name, v) in [
            ("compute_s", t.compute_s),
            ("memory_s", t.memory_s),
            ("bound_s", t.bound_s),
        ] {
            c.key(k, false, name)?;
            c.scalar(&num(v))?;
        }
        c.key(k, false, "bound")?;
        c.scalar(t.bound.as_str())?;
        c.key(k, false, "intensity")?;
        c.scalar(&t.intensity.and_then(num))?;
    }
    for (name, v) in &j.extra {
        c.key(k, false, name)?;
        c.scalar(v)?;
    }
    if let Some(b) = &j.backward {
        c.key(k, false, "backward")?;
        c.value(b, k)?;
    }
    c.close(level, b"}")
}

/// A tensor, as [`TensorJ`] serializes it, opened on a line `level` deep.
fn tensor(c: &mut Chunked<'_>, t: &TensorFact, level: usize) -> io::Result<()> {
    let k = level + 1;
    c.write_all(b"{")?;
    c.key(k, true, "dtype")?;
    c.plain(t.dtype.name())?;
    c.key(k, false, "shape")?;
    dims(c, &t.shape, k)?;
    c.close(level, b"}")
}

/// A shape as a JSON array whose key is `level` deep (its elements one
/// deeper): sizes as numbers, symbolic ones as text. `c3 shapes` writes
/// its listing's shapes with it too.
pub(super) fn dims(c: &mut Chunked<'_>, dims: &[Dim], level: usize) -> io::Result<()> {
    if dims.is_empty() {
        return c.write_all(b"[]");
    }
    c.write_all(b"[")?;
    for (i, d) in dims.iter().enumerate() {
        c.item(level + 1, i == 0)?;
        match d {
            Dim::Known(n) => c.uint(*n)?,
            Dim::Sym(v) => c.text(&v.to_string())?,
        }
    }
    c.close(level, b"]")
}

/// A layer's inputs or outputs, as [`TensorJ`] serializes each.
fn tensors(c: &mut Chunked<'_>, list: &[Option<TensorFact>], level: usize) -> io::Result<()> {
    if list.is_empty() {
        return c.write_all(b"[]");
    }
    c.write_all(b"[")?;
    for (i, t) in list.iter().enumerate() {
        c.item(level + 1, i == 0)?;
        let Some(t) = t else {
            c.write_all(b"null")?;
            continue;
        };
        // The sizes are shared by a tensor's producer and its readers.
        let key = (t.shape.as_ptr() as usize, 1 + t.dtype as u32, level as u32);
        c.shared(key, |c| tensor(c, t, level + 1))?;
    }
    c.close(level, b"]")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Element type names are written without serde's escaping pass: each
    /// must be what serde writes for it, the name in plain quotes.
    #[test]
    fn element_type_names_need_no_escaping() {
        let names: Vec<&str> = (0..64)
            .filter_map(crate::ir::DType::from_onnx_code)
            .map(|d| d.name())
            .collect();
        // ONNX codes 1-26, less 0 (undefined).
        assert_eq!(names.len(), 26);
        for name in names {
            let mut out = Vec::new();
            pretty::stream(&mut out, |c| c.plain(name)).unwrap();
            let serde = serde_json::to_string(name).unwrap() + "\n";
            assert_eq!(String::from_utf8(out).unwrap(), serde);
        }
    }
    use crate::model::{EstimateOptions, Model};

    /// The layer rows written by hand must be the bytes serde writes for
    /// the same document: models whose reports hold every part (fused
    /// groups, skipped If branches, assumed sizes, folded layers, a
    /// device's times), every layer of each, each part alone, sorted and
    /// cut.
    #[test]
    fn the_hand_written_rows_are_serdes_bytes() {
        let root = env!("CARGO_MANIFEST_DIR");
        let bound = |list: &[(&str, i64)]| list.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let mut parts_seen = std::collections::BTreeSet::new();
        for (file, dims, packs, device) in [
            (
                "tests/fixtures/exports/fasterrcnn.onnx",
                bound(&[]),
                vec![],
                Some("a100"),
            ),
            (
                "tests/fixtures/exports/mixtral.onnx",
                bound(&[]),
                vec![],
                None,
            ),
            (
                "tests/fixtures/exports/resnet18_int8.onnx",
                bound(&[]),
                vec![],
                Some("h100"),
            ),
            (
                "examples/onnx/gpt_decoder_dynamo.onnx",
                bound(&[("batch", 2), ("seq", 16)]),
                vec!["fused".to_string()],
                Some("h100"),
            ),
            ("examples/resnet50.trace.json", bound(&[]), vec![], None),
        ] {
            let opts = EstimateOptions {
                dims,
                packs,
                device: device.map(str::to_string),
                ..EstimateOptions::default()
            };
            let e = Model::open(&format!("{root}/{file}"))
                .unwrap()
                .estimate(&opts)
                .unwrap();
            for (parts, sort, top) in [
                (Parts::Both, None, None),
                (Parts::Layers, Some(SortKey::Flops), Some(3)),
                (Parts::Summary, None, None),
            ] {
                let report_opts = ReportOptions {
                    parts,
                    sort,
                    top,
                    meta: Some(e.meta.clone()),
                    ..ReportOptions::default()
                };
                let doc = doc(&e.report, &report_opts, e.roofline.as_ref());
                let (mut ours, mut serde) = (Vec::new(), Vec::new());
                write_doc(&doc, &mut ours).unwrap();
                pretty::to_writer(&doc, &mut serde).unwrap();
                assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    String::from_utf8(serde).unwrap(),
                    "{file} {parts:?}"
                );
                let json = serde_json::to_value(&doc).unwrap();
                parts_seen.extend(json.as_object().unwrap().keys().cloned());
            }
        }
        let every = [
            "meta",
            "layers",
            "summary",
            "total",
            "unsupported",
            "device",
            "fusions",
            "skipped_branches",
            "assumed",
            "folded",
        ];
        for part in every {
            assert!(parts_seen.contains(part), "no report had {part}");
        }
    }
}
