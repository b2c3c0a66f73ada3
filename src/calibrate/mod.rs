//! `c3 calibrate`: a device's time model fitted to c3's own JSON reports of
//! profiled runs (`c3 estimate MODEL --profile FILE --format json`), written
//! as a pack (`DIR/devices.yaml`) that `--rules DIR --device NAME` predicts
//! with ([`crate::rules::time`], [`crate::cost::predict`]).
//!
//! The model a reader can check: every layer belongs to a group (its op and
//! kernel class, else its op, else its rule's category, else `*`; a layer
//! the runtime fused into the kernel before it to the fused group of each),
//! and takes `compute_s / compute + memory_s / memory + kernel_s`, where
//! `compute_s` and `memory_s` are its roofline times. The three figures of
//! every group are fitted at once by non-negative least squares ([`nnls`]):
//! one equation per kernel group of each profile (its measured time, plus
//! its share of the run's time outside the kernels, against the sum over
//! its layers) and one per run (the run's time against all its layers),
//! each weighted by the run's time, so that every model counts alike. A
//! group seen in fewer than [`MIN_SAMPLES`] kernels is not fitted: its
//! layers fall back to the next broader group, and the output says so.
//! Which layers the runtime fuses is learnt from the profiles: a layer of
//! one group after a layer of another that ran in that layer's kernel in
//! most of the cases seen.

pub mod nnls;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::ir::DType;
use crate::rules::devices::{Device, precision_of};
use crate::rules::time::{ANY, CATEGORY_PREFIX, FUSED_SUFFIX, LayerKind, TimeGroup, TimeModel};

/// A group needs this many kernels in the profiles to be fitted.
pub const MIN_SAMPLES: usize = 8;
/// A layer is taken to run inside the kernel before it when it did in more
/// than half of at least this many cases.
pub const MIN_FUSED_CASES: usize = 2;
/// Reports one calibration may read.
pub const MAX_REPORTS: usize = 4096;
/// A report larger than this is refused unread.
pub const MAX_REPORT_BYTES: u64 = 1 << 30;

/// What `c3 calibrate` is asked.
#[derive(Debug, Clone, Default)]
pub struct CalibrateOptions {
    /// The device's key in the pack.
    pub name: String,
    /// A device whose peaks and bandwidth the efficiencies are relative to;
    /// `None`: the best throughput the profiles show.
    pub base: Option<Device>,
    /// Says what ran the profiles, where they do not (`onnxruntime 1.32.0`).
    pub runtime: Option<String>,
    pub threads: Option<u64>,
    /// The calibration's date (`YYYY-MM-DD`); today when `None`.
    pub date: Option<String>,
}

#[derive(Deserialize)]
struct ReportJ {
    #[serde(default)]
    meta: MetaJ,
    #[serde(default)]
    layers: Option<Vec<LayerJ>>,
    #[serde(default)]
    profile: Option<ProfileJ>,
}

#[derive(Deserialize, Default)]
struct MetaJ {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    options: Option<OptionsJ>,
}

#[derive(Deserialize, Default)]
struct OptionsJ {
    #[serde(default)]
    dims: BTreeMap<String, i64>,
}

#[derive(Deserialize)]
struct LayerJ {
    name: String,
    op: String,
    #[serde(default)]
    iops: u64,
    mrw: u64,
    #[serde(default)]
    inputs: Vec<Option<TensorJ>>,
    #[serde(default)]
    runs: Option<u64>,
    #[serde(default)]
    work: Option<u64>,
    #[serde(default)]
    class: Option<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    input_from: Option<String>,
    #[serde(default)]
    calls: Option<u64>,
}

#[derive(Deserialize)]
struct TensorJ {
    dtype: String,
}

#[derive(Deserialize)]
struct ProfileJ {
    runtime: String,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    threads: Option<u64>,
    #[serde(default)]
    run_s: Option<f64>,
    #[serde(default)]
    kernels_s: Option<f64>,
    groups: Vec<GroupJ>,
}

#[derive(Deserialize)]
struct GroupJ {
    #[serde(default)]
    measured_s: Option<f64>,
    layers: Vec<usize>,
    lead: String,
}

/// A kernel group of a run: its layers, the one that shows its time, and
/// the time.
struct Group {
    layers: Vec<usize>,
    lead: usize,
    seconds: f64,
}

/// One layer of a report, as the fit sees it.
struct Layer {
    op: String,
    class: Option<String>,
    category: String,
    /// The layer its input comes from, by index.
    from: Option<usize>,
    precision: &'static str,
    work: f64,
    bytes: f64,
    /// Kernel calls in all: its runs times the calls of a run.
    runs: f64,
}

impl Layer {
    fn kind(&self) -> LayerKind<'_> {
        LayerKind {
            op: &self.op,
            class: self.class.as_deref(),
            category: &self.category,
        }
    }
}

/// One profiled run.
struct Run {
    /// The model, for fits that leave it out.
    model: String,
    /// What the provenance lists (`light_resnet50.onnx (batch=4)`).
    label: String,
    layers: Vec<Layer>,
    groups: Vec<Group>,
    run_s: f64,
    runtime: String,
    provider: Option<String>,
    threads: Option<u64>,
}

/// Reads the reports.
fn read_runs(paths: &[String]) -> Result<Vec<Run>> {
    if paths.is_empty() {
        return Err(Error::Usage("calibrate needs at least one report".into()));
    }
    if paths.len() > MAX_REPORTS {
        return Err(Error::Usage(format!(
            "{} reports, past the limit of {MAX_REPORTS} (MAX_REPORTS)",
            paths.len()
        )));
    }
    paths.iter().map(|p| read_run(p)).collect()
}

fn read_run(path: &str) -> Result<Run> {
    let bad = |message: String| Error::Input {
        path: path.to_string(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(bad("a report must be a regular file".into()));
    }
    if meta.len() > MAX_REPORT_BYTES {
        return Err(bad(format!(
            "{} bytes, past the limit of {MAX_REPORT_BYTES} (MAX_REPORT_BYTES)",
            meta.len()
        )));
    }
    let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let report: ReportJ = serde_json::from_slice(&text).map_err(|e| {
        bad(format!(
            "not a c3 JSON report ({} at line {} column {}); make one with c3 estimate MODEL --profile FILE --format json",
            match e.classify() {
                serde_json::error::Category::Data => "fields missing or of the wrong type",
                serde_json::error::Category::Eof => "the JSON ends early",
                _ => "not valid JSON",
            },
            e.line(),
            e.column()
        ))
    })?;
    let Some(profile) = report.profile else {
        return Err(bad(
            "the report has no measured times: make it with c3 estimate MODEL --profile FILE --format json".into(),
        ));
    };
    let Some(layers_j) = report.layers else {
        return Err(bad("the report has no layers (made with --summary?)".into()));
    };
    let by_name: BTreeMap<&str, usize> = layers_j
        .iter()
        .enumerate()
        .map(|(i, l)| (l.name.as_str(), i))
        .collect();
    let mut layers = Vec::with_capacity(layers_j.len());
    for l in &layers_j {
        let Some(work) = l.work else {
            return Err(bad(format!(
                "layer '{}' has no work count: the report was made by an older c3",
                crate::error::one_line(&l.name)
            )));
        };
        let dtype = l
            .inputs
            .iter()
            .flatten()
            .next()
            .and_then(|t| DType::parse(&t.dtype))
            .unwrap_or(DType::Float32);
        layers.push(Layer {
            op: l.op.clone(),
            class: l.class.clone(),
            category: l.category.clone().unwrap_or_default(),
            from: l
                .input_from
                .as_deref()
                .and_then(|n| by_name.get(n).copied()),
            precision: precision_of(dtype),
            work: work.saturating_add(l.iops) as f64,
            bytes: l.mrw as f64,
            runs: l
                .runs
                .unwrap_or(1)
                .max(1)
                .saturating_mul(l.calls.unwrap_or(1).max(1)) as f64,
        });
    }
    let mut groups = Vec::with_capacity(profile.groups.len());
    for g in &profile.groups {
        let t = g.measured_s.unwrap_or(0.0);
        let lead = by_name.get(g.lead.as_str()).copied();
        match lead {
            Some(lead)
                if t.is_finite()
                    && t >= 0.0
                    && !g.layers.is_empty()
                    && g.layers.iter().all(|&i| i < layers.len()) =>
            {
                groups.push(Group {
                    layers: g.layers.clone(),
                    lead,
                    seconds: t,
                });
            }
            _ => {
                return Err(bad(
                    "a kernel group of the profile names no layer of the report".into(),
                ));
            }
        }
    }
    // TensorRT times the engine's layers and no whole run: the layers' sum
    // is the run it gives (the GPU runs them one after another).
    let run_s = match profile.runtime.as_str() {
        "tensorrt" => profile.run_s.or(profile.kernels_s),
        _ => profile.run_s,
    }
    .filter(|t| t.is_finite() && *t > 0.0)
    .ok_or_else(|| bad("the profile records no run time".into()))?;
    let model = report.meta.model.unwrap_or_else(|| path.to_string());
    let file = std::path::Path::new(&model)
        .file_name()
        .map_or(model.clone(), |f| f.to_string_lossy().into_owned());
    let dims = report
        .meta
        .options
        .map(|o| o.dims)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>();
    let label = if dims.is_empty() {
        file
    } else {
        format!("{file} ({})", dims.join(", "))
    };
    Ok(Run {
        model,
        label,
        layers,
        groups,
        run_s,
        runtime: profile.runtime,
        provider: profile.provider,
        threads: profile.threads,
    })
}

/// The roofline the efficiencies are relative to: a device's peaks and
/// bandwidth, or the best a kernel group of the profiles reached.
fn base_of(runs: &[Run], base: Option<&Device>) -> (BTreeMap<String, f64>, f64) {
    if let Some(d) = base {
        return (d.peak.clone(), d.bandwidth);
    }
    let mut rates: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    let mut bandwidths = Vec::new();
    for r in runs {
        for g in &r.groups {
            let (layers, t) = (&g.layers, &g.seconds);
            // Short kernels say more of their launch than of their rate.
            if *t < 20e-6 {
                continue;
            }
            let work: f64 = layers.iter().map(|&i| r.layers[i].work).sum();
            let bytes: f64 = layers.iter().map(|&i| r.layers[i].bytes).sum();
            if let Some(&i) = layers
                .iter()
                .max_by(|&&a, &&b| r.layers[a].work.total_cmp(&r.layers[b].work))
                && work > 0.0
            {
                rates
                    .entry(r.layers[i].precision)
                    .or_default()
                    .push(work / t);
            }
            if bytes > 0.0 {
                bandwidths.push(bytes / t);
            }
        }
    }
    // A high percentile rather than the maximum: a kernel joined to layers
    // of another can show an impossible rate.
    let high = |v: &mut Vec<f64>| -> Option<f64> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(v[(v.len() - 1) * 95 / 100])
    };
    let mut peaks: BTreeMap<String, f64> = rates
        .into_iter()
        .filter_map(|(p, mut v)| high(&mut v).map(|r| (p.to_string(), r)))
        .filter(|(_, r)| *r >= crate::rules::devices::MIN_PEAK)
        .collect();
    if peaks.is_empty() {
        peaks.insert("fp32".into(), 1e9);
    }
    let bandwidth = high(&mut bandwidths)
        .filter(|b| *b >= crate::rules::devices::MIN_BANDWIDTH)
        .unwrap_or(1e9);
    (peaks, bandwidth)
}

/// The peak a precision is timed at: its own, else fp32's, else any.
fn peak_of(peaks: &BTreeMap<String, f64>, precision: &str) -> f64 {
    peaks
        .get(precision)
        .or_else(|| peaks.get("fp32"))
        .or_else(|| peaks.values().next())
        .copied()
        .unwrap_or(1e9)
}

/// A layer's group key without the fused suffix (`Conv/depthwise`).
fn key_of(l: &Layer) -> String {
    l.kind().key()
}

/// Learns which (layer, producer) keys the runtime fuses: a layer counts
/// as fused in a case when it shares its producer's kernel group without
/// being the layer that shows the group's time.
fn learn_fusions(runs: &[Run]) -> Vec<(String, String)> {
    let mut cases: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for r in runs {
        let mut group_of = vec![None; r.layers.len()];
        for (g, group) in r.groups.iter().enumerate() {
            for &i in &group.layers {
                group_of[i] = Some(g);
            }
        }
        for (i, l) in r.layers.iter().enumerate() {
            let Some(p) = l.from else { continue };
            let same = group_of[i].is_some_and(|g| group_of[p] == Some(g) && r.groups[g].lead != i);
            let e = cases
                .entry((key_of(l), key_of(&r.layers[p])))
                .or_insert((0, 0));
            e.0 += usize::from(same);
            e.1 += 1;
        }
    }
    cases
        .into_iter()
        .filter(|(_, (fused, all))| *fused >= MIN_FUSED_CASES && 2 * fused > *all)
        .map(|(k, _)| k)
        .collect()
}

/// How broad a group is: each layer is fitted at the most specific level
/// that has enough kernels, and each level's groups are fitted with every
/// layer at that level or broader, so a broad group is the fit of all the
/// layers it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    /// Op and kernel class (`Conv/depthwise`), or the op of a rule
    /// without classes.
    Specific,
    /// The op of a rule with classes (`Conv`).
    Op,
    /// The rule's category (`category Activation`).
    Category,
    /// Every layer (`*`).
    Any,
}

const LEVELS: [Level; 4] = [Level::Specific, Level::Op, Level::Category, Level::Any];

/// A layer's group at a level, `None` where the level is the one before
/// (the op of a rule without classes).
fn level_key(l: &Layer, fused: bool, level: Level) -> Option<String> {
    let suffix = if fused { FUSED_SUFFIX } else { "" };
    match level {
        Level::Specific => Some(format!("{}{suffix}", key_of(l))),
        Level::Op => l.class.as_ref().map(|_| format!("{}{suffix}", l.op)),
        Level::Category => Some(format!("{CATEGORY_PREFIX}{}{suffix}", l.category)),
        Level::Any => Some(format!("{ANY}{suffix}")),
    }
}

/// The fitted device, and what the fit says of itself.
pub struct Calibrated {
    pub device_yaml: String,
    /// Lines for the person who ran it.
    pub summary: Vec<String>,
}

/// One level's fit: its groups and, per run, the normal equations of the
/// run's kernel groups (so a fit can leave a model out).
struct LevelFit {
    level: Level,
    keys: Vec<String>,
    /// The level each key is of.
    key_levels: Vec<Level>,
    per_run: Vec<nnls::Normal>,
}

/// Each layer's roofline features: compute_s, memory_s, and its runs (each
/// run pays a kernel's cost).
fn features(l: &Layer, peaks: &BTreeMap<String, f64>, bw: f64) -> [f64; 3] {
    [l.work / peak_of(peaks, l.precision), l.bytes / bw, l.runs]
}

/// Which layers of a run the model fuses into the kernel before them.
fn fused_flags(r: &Run, fused: &TimeModel) -> Vec<bool> {
    r.layers
        .iter()
        .map(|l| {
            l.from
                .is_some_and(|p| fused.is_fused(&l.kind(), &r.layers[p].kind()))
        })
        .collect()
}

/// The equations of one level: one per kernel group of each run, its time
/// (with the run's time outside the joined kernels shared evenly) against
/// the sum over its layers, weighted by the run's time.
fn level_fit(
    level: Level,
    runs: &[Run],
    flags: &[Vec<bool>],
    seen: &BTreeMap<String, usize>,
    peaks: &BTreeMap<String, f64>,
    bw: f64,
) -> LevelFit {
    let mut keys: Vec<String> = Vec::new();
    let mut key_levels = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut layer_cols: Vec<Vec<usize>> = Vec::with_capacity(runs.len());
    for (r, run) in runs.iter().enumerate() {
        let mut cols = Vec::with_capacity(run.layers.len());
        for (l, &f) in run.layers.iter().zip(&flags[r]) {
            let (key, at) = LEVELS
                .iter()
                .filter(|&&lv| lv >= level)
                .find_map(|&lv| {
                    let k = level_key(l, f, lv)?;
                    (seen.get(&k).copied().unwrap_or(0) >= MIN_SAMPLES || k == ANY)
                        .then_some((k, lv))
                })
                .unwrap_or_else(|| (ANY.to_string(), Level::Any));
            let col = *index.entry(key.clone()).or_insert_with(|| {
                keys.push(key);
                key_levels.push(at);
                keys.len() - 1
            });
            cols.push(col);
        }
        layer_cols.push(cols);
    }
    let n = 3 * keys.len();
    let mut per_run = Vec::with_capacity(runs.len());
    for (r, run) in runs.iter().enumerate() {
        let mut m = nnls::Normal::new(n);
        let joined: f64 = run.groups.iter().map(|g| g.seconds).sum();
        let gap = (run.run_s - joined).max(0.0) / run.groups.len().max(1) as f64;
        for g in &run.groups {
            let mut e: BTreeMap<usize, f64> = BTreeMap::new();
            for &i in &g.layers {
                let c = layer_cols[r][i];
                for (k, v) in features(&run.layers[i], peaks, bw).iter().enumerate() {
                    *e.entry(3 * c + k).or_insert(0.0) += v;
                }
            }
            let row: Vec<(usize, f64)> = e.into_iter().filter(|(_, v)| *v != 0.0).collect();
            m.add(&row, g.seconds + gap, 1.0 / run.run_s);
        }
        per_run.push(m);
    }
    LevelFit {
        level,
        keys,
        key_levels,
        per_run,
    }
}

/// The groups the fits give, each from the fit of its own level, with the
/// runs in `keep` only.
fn coefficients(
    fits: &[LevelFit],
    keep: &[bool],
    seen: &BTreeMap<String, usize>,
) -> BTreeMap<String, [f64; 3]> {
    let mut out = BTreeMap::new();
    for fit in fits {
        let n = 3 * fit.keys.len();
        let mut m = nnls::Normal::new(n);
        for (r, part) in fit.per_run.iter().enumerate() {
            if keep[r] {
                m.g.iter_mut().zip(&part.g).for_each(|(a, b)| *a += b);
                m.h.iter_mut().zip(&part.h).for_each(|(a, b)| *a += b);
            }
        }
        let x = m.solve();
        for (i, key) in fit.keys.iter().enumerate() {
            let own = fit.key_levels[i] == fit.level;
            let enough = seen.get(key).copied().unwrap_or(0) >= MIN_SAMPLES || key == ANY;
            if own && enough && !out.contains_key(key) {
                out.insert(key.clone(), [x[3 * i], x[3 * i + 1], x[3 * i + 2]]);
            }
        }
    }
    out
}

/// A time model from fitted coefficients (seconds per roofline second,
/// per kernel).
fn model_of(coef: &BTreeMap<String, [f64; 3]>, fused: &[(String, String)]) -> TimeModel {
    let eff = |c: f64| (c > 1.0 / crate::rules::time::MAX_EFFICIENCY).then(|| 1.0 / c);
    let mut keys: Vec<&String> = coef.keys().collect();
    // Most specific first, `*` last.
    keys.sort_by_key(|k| {
        (
            k.starts_with(ANY),
            k.starts_with(CATEGORY_PREFIX),
            k.as_str(),
        )
    });
    TimeModel {
        groups: keys
            .into_iter()
            .map(|k| {
                let x = coef[k];
                TimeGroup {
                    key: k.clone(),
                    compute: eff(x[0]),
                    memory: eff(x[1]),
                    kernel_s: x[2].min(crate::rules::time::MAX_KERNEL_S),
                    samples: 0,
                    residual: None,
                }
            })
            .collect(),
        fused: fused.to_vec(),
        range: None,
    }
}

/// A run's predicted total under a model.
fn predicted(
    run: &Run,
    flags: &[bool],
    model: &TimeModel,
    peaks: &BTreeMap<String, f64>,
    bw: f64,
) -> f64 {
    run.layers
        .iter()
        .zip(flags)
        .map(|(l, &f)| {
            let [c, m, k] = features(l, peaks, bw);
            let g = model.group(&l.kind(), f);
            g.time(c, m) + g.kernel_s * (k - 1.0)
        })
        .sum()
}

/// Fits a device to the reports at `paths`.
pub fn calibrate(paths: &[String], opts: &CalibrateOptions) -> Result<Calibrated> {
    let runs = read_runs(paths)?;
    if runs.iter().all(|r| r.groups.is_empty()) {
        return Err(Error::Input {
            path: paths[0].clone(),
            message: "the reports join no kernel to a layer: nothing to fit".into(),
        });
    }
    let (peaks, bandwidth) = base_of(&runs, opts.base.as_ref());
    let fused = learn_fusions(&runs);
    let pairs = TimeModel {
        fused: fused.clone(),
        ..TimeModel::default()
    };
    let flags: Vec<Vec<bool>> = runs.iter().map(|r| fused_flags(r, &pairs)).collect();
    // Kernel groups each candidate group appears in.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (r, run) in runs.iter().enumerate() {
        for g in &run.groups {
            let mut keys: BTreeSet<String> = BTreeSet::new();
            for &i in &g.layers {
                keys.extend(
                    LEVELS
                        .iter()
                        .filter_map(|&lv| level_key(&run.layers[i], flags[r][i], lv)),
                );
            }
            for k in keys {
                *seen.entry(k).or_insert(0) += 1;
            }
        }
    }
    let fits: Vec<LevelFit> = LEVELS
        .iter()
        .map(|&lv| level_fit(lv, &runs, &flags, &seen, &peaks, bandwidth))
        .collect();
    let all = vec![true; runs.len()];
    let mut model = model_of(&coefficients(&fits, &all, &seen), &fused);
    // Left out one model at a time: the errors a model not in the fit sees.
    let models: BTreeSet<&str> = runs.iter().map(|r| r.model.as_str()).collect();
    let mut errors: Vec<(String, f64)> = Vec::new();
    for m in &models {
        let keep: Vec<bool> = runs.iter().map(|r| r.model != *m).collect();
        let without = if models.len() > 1 {
            model_of(&coefficients(&fits, &keep, &seen), &fused)
        } else {
            model.clone()
        };
        for (r, run) in runs.iter().enumerate().filter(|(_, r)| r.model == *m) {
            let p = predicted(run, &flags[r], &without, &peaks, bandwidth);
            errors.push((run.label.clone(), p / run.run_s - 1.0));
        }
    }
    // Each group's samples (kernels whose lead it times) and relative error
    // on them; which candidate groups had too few kernels, and what times
    // their layers instead.
    let mut residuals: Vec<Vec<f64>> = vec![Vec::new(); model.groups.len()];
    let mut samples = vec![0u64; model.groups.len()];
    let mut fallbacks: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for (r, run) in runs.iter().enumerate() {
        let group_at = |i: usize| {
            let g = model.group(&run.layers[i].kind(), flags[r][i]);
            model
                .groups
                .iter()
                .position(|x| std::ptr::eq(x, g))
                .unwrap_or(0)
        };
        for (i, l) in run.layers.iter().enumerate() {
            let own = level_key(l, flags[r][i], Level::Specific).unwrap_or_default();
            let used = &model.groups[group_at(i)].key;
            if *used != own {
                fallbacks.insert(
                    own.clone(),
                    (seen.get(&own).copied().unwrap_or(0), used.clone()),
                );
            }
        }
        for g in &run.groups {
            let at = group_at(g.lead);
            samples[at] += 1;
            let p: f64 = g
                .layers
                .iter()
                .map(|&i| {
                    let [c, m, k] = features(&run.layers[i], &peaks, bandwidth);
                    let grp = &model.groups[group_at(i)];
                    grp.time(c, m) + grp.kernel_s * (k - 1.0)
                })
                .sum();
            if g.seconds > 0.0 {
                residuals[at].push((p / g.seconds - 1.0).abs());
            }
        }
    }
    for (i, g) in model.groups.iter_mut().enumerate() {
        g.samples = samples[i];
        g.residual = crate::profile::median(&mut residuals[i]);
    }
    let mut errs: Vec<f64> = errors.iter().map(|e| e.1).collect();
    errs.sort_by(f64::total_cmp);
    let pick = |q: usize| errs[(errs.len() - 1) * q / 100];
    model.range = (!errs.is_empty()).then(|| (pick(10).max(-0.99), pick(90)));
    let mut abs: Vec<f64> = errs.iter().map(|e| e.abs()).collect();
    let median = crate::profile::median(&mut abs).unwrap_or(0.0);
    let worst = abs.iter().fold(0.0f64, |m, v| m.max(*v));
    let first = &runs[0];
    let date = opts.date.clone().unwrap_or_else(today);
    let runtime = opts
        .runtime
        .clone()
        .unwrap_or_else(|| first.runtime.clone());
    let threads = opts.threads.or(first.threads);
    let provider = first.provider.clone();
    let kernels: usize = runs.iter().map(|r| r.groups.len()).sum();
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    let device_yaml = render_device(&Rendered {
        key: &opts.name,
        runtime: &runtime,
        provider: provider.as_deref(),
        threads,
        date: &date,
        peaks: &peaks,
        bandwidth,
        base: opts.base.as_ref(),
        labels: &labels,
        kernels,
        median,
        worst,
        model: &model,
    });
    let mut summary = vec![format!(
        "fitted {} groups to {kernels} kernels of {} runs of {} models; the runs' totals, each predicted without its model: median error {:.1}%, worst {:.1}%",
        model.groups.len(),
        runs.len(),
        models.len(),
        100.0 * median,
        100.0 * worst
    )];
    for (label, e) in &errors {
        summary.push(format!("  {label}: {:+.1}%", 100.0 * e));
    }
    for (key, (n, to)) in &fallbacks {
        summary.push(format!(
            "  {key}: {n} kernel(s), fewer than {MIN_SAMPLES}: timed by '{to}'"
        ));
    }
    Ok(Calibrated {
        device_yaml,
        summary,
    })
}

/// Today's date, `YYYY-MM-DD` (UTC).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The Gregorian date of a day counted from 1970-01-01.
fn civil(days: i64) -> (i64, i64, i64) {
    // Howard Hinnant's days-to-civil arithmetic.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A string as a double-quoted YAML scalar.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A float as YAML reads it back exactly.
fn float(v: f64) -> String {
    let s = format!("{v:e}");
    // `1e-6` is a YAML 1.2 float only with a dot in the mantissa.
    match s.split_once('e') {
        Some((m, e)) if !m.contains('.') => format!("{m}.0e{e}"),
        _ => s,
    }
}

struct Rendered<'a> {
    key: &'a str,
    runtime: &'a str,
    provider: Option<&'a str>,
    threads: Option<u64>,
    date: &'a str,
    peaks: &'a BTreeMap<String, f64>,
    bandwidth: f64,
    base: Option<&'a Device>,
    labels: &'a [String],
    kernels: usize,
    median: f64,
    worst: f64,
    model: &'a TimeModel,
}

/// The first line of every pack `c3 calibrate` writes.
pub const MARK: &str = "# Written by `c3 calibrate`";

fn render_device(r: &Rendered<'_>) -> String {
    let mut out = String::new();
    let threads = r.threads.map_or(String::new(), |t| {
        format!(", {t} thread{}", if t == 1 { "" } else { "s" })
    });
    let provider = r.provider.map_or(String::new(), |p| format!(" {p}"));
    let _ = writeln!(
        out,
        "{MARK} on {}: a device whose times are predicted.",
        r.date
    );
    out.push_str(
        "# Each layer takes compute_s / compute + memory_s / memory + kernel_s,\n\
         # compute_s and memory_s being its roofline times on the peaks and\n\
         # bandwidth below, with the figures of its group: its op and kernel\n\
         # class, else its op, its rule's category, else `*`; a layer fused\n\
         # into the kernel before it (`fused:`) by the fused group of each.\n\
         # A group without `compute` (or `memory`) has no such term.\n\n",
    );
    let _ = writeln!(out, "{}:", quoted(r.key));
    let _ = writeln!(
        out,
        "  name: {}",
        quoted(&format!(
            "{} (calibrated: {}{provider}{threads})",
            r.key, r.runtime
        ))
    );
    let peaks: Vec<String> = r
        .peaks
        .iter()
        .map(|(p, v)| format!("{p}: {}", float(*v)))
        .collect();
    let _ = writeln!(out, "  peak: {{{}}}", peaks.join(", "));
    let _ = writeln!(out, "  bandwidth: {}", float(r.bandwidth));
    let base = match r.base {
        Some(d) => format!("the peaks and bandwidth of {} ({})", d.key, d.source),
        None => "peaks and bandwidth: the best rates the profiles' kernels reached".to_string(),
    };
    let _ = writeln!(
        out,
        "  source: {}",
        quoted(&format!(
            "c3 calibrate, {}, from {} profiled runs ({}{provider}{threads}); {base}",
            r.date,
            r.labels.len(),
            r.runtime
        ))
    );
    out.push_str("  calibration:\n");
    let _ = writeln!(out, "    date: {}", quoted(r.date));
    let _ = writeln!(out, "    runtime: {}", quoted(r.runtime));
    if let Some(p) = r.provider {
        let _ = writeln!(out, "    provider: {}", quoted(p));
    }
    if let Some(t) = r.threads {
        let _ = writeln!(out, "    threads: {t}");
    }
    let _ = writeln!(out, "    reports: {}", r.labels.len());
    let _ = writeln!(out, "    kernels: {}", r.kernels);
    out.push_str("    models:\n");
    for l in r.labels {
        let _ = writeln!(out, "      - {}", quoted(l));
    }
    out.push_str("    # The runs' totals, each predicted by a fit without its model.\n");
    let _ = writeln!(
        out,
        "    error: {{median: {}, worst: {}}}",
        float(r.median),
        float(r.worst)
    );
    out.push_str("  time:\n");
    if let Some((lo, hi)) = r.model.range {
        out.push_str("    # Relative errors of those totals, 10th and 90th percentile.\n");
        let _ = writeln!(out, "    range: [{}, {}]", float(lo), float(hi));
    }
    if r.model.fused.is_empty() {
        out.push_str("    fused: []\n");
    } else {
        out.push_str("    fused:\n");
        for (a, b) in &r.model.fused {
            let _ = writeln!(out, "      - {}", quoted(&format!("{a} after {b}")));
        }
    }
    out.push_str("    groups:\n");
    for g in &r.model.groups {
        let mut parts = Vec::new();
        if let Some(c) = g.compute {
            parts.push(format!("compute: {}", float(c)));
        }
        if let Some(m) = g.memory {
            parts.push(format!("memory: {}", float(m)));
        }
        parts.push(format!("kernel_s: {}", float(g.kernel_s)));
        parts.push(format!("samples: {}", g.samples));
        if let Some(res) = g.residual {
            parts.push(format!("residual: {}", float(res)));
        }
        let _ = writeln!(out, "      {}: {{{}}}", quoted(&g.key), parts.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_become_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_788), (2026, 12, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
    }

    #[test]
    fn floats_and_strings_read_back() {
        assert_eq!(float(1e-6), "1.0e-6");
        assert_eq!(float(0.25), "2.5e-1");
        assert_eq!(quoted("a \"b\"\n"), "\"a \\\"b\\\"\\u000a\"");
    }
}
