//! The device catalog: each device's peak throughput per precision and its
//! memory bandwidth, loaded from YAML (the built-in `rules/devices.yaml` and
//! `--devices` files). The roofline that uses them is [`crate::cost::roofline`](mod@crate::cost::roofline).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::rule::SourceFile;
use super::time::{TimeDef, TimeModel};
use super::yaml::OrderedMap;
use crate::error::RuleError;
use crate::ir::DType;

/// The built-in catalog, embedded.
pub const BUILTIN_DEVICES: (&str, &str) = (
    "rules/devices.yaml",
    include_str!("../../rules/devices.yaml"),
);

/// Precision keys a catalog may use, narrowest last.
pub const PRECISIONS: &[&str] = &[
    "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceDef {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    peak: BTreeMap<String, f64>,
    bandwidth: f64,
    #[serde(default)]
    memory_gib: Option<f64>,
    source: String,
    #[serde(default)]
    peak_counts: Option<String>,
    #[serde(default)]
    time: Option<TimeDef>,
    #[serde(default)]
    calibration: Option<Calibration>,
}

/// What the operations of a device's peak are, and so what a layer's
/// compute time divides by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PeakCounts {
    /// A multiply-add is two operations, as vendors count their peaks: the
    /// time divides the layer's work counted so, whatever `--no-fma` says.
    #[default]
    MultiplyAddAsTwo,
    /// The FLOPs the report shows (a multiply-add is one with FMA on): the
    /// chainer_computational_cost article's arithmetic.
    Reported,
}

impl PeakCounts {
    /// The `peak_counts:` value that selects it.
    pub fn key(self) -> &'static str {
        match self {
            PeakCounts::MultiplyAddAsTwo => "multiply-add-as-two",
            PeakCounts::Reported => "reported",
        }
    }

    /// How reports say it.
    pub fn describe(self) -> &'static str {
        match self {
            PeakCounts::MultiplyAddAsTwo => "peaks count a multiply-add as 2 FLOPs",
            PeakCounts::Reported => {
                "peaks divide the FLOPs as reported (FMA on: a multiply-add is 1), as the chainer_computational_cost article did"
            }
        }
    }
}

/// Where a calibrated device's figures came from (`c3 calibrate`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    #[serde(default)]
    pub date: Option<String>,
    #[serde(default)]
    pub runtime: Option<String>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub threads: Option<u64>,
    #[serde(default)]
    pub reports: Option<u64>,
    #[serde(default)]
    pub kernels: Option<u64>,
    #[serde(default)]
    pub models: Vec<String>,
    /// Relative errors of the calibration models' predicted totals, each
    /// predicted by a fit without it.
    #[serde(default)]
    pub error: Option<CalibrationError>,
}

/// See [`Calibration::error`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationError {
    pub median: f64,
    pub worst: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    /// The catalog key (`gtx1080ti`).
    pub key: String,
    /// The full name (`NVIDIA GeForce GTX 1080 Ti`).
    pub name: String,
    pub aliases: Vec<String>,
    /// Operations per second by precision key.
    pub peak: BTreeMap<String, f64>,
    /// Bytes per second.
    pub bandwidth: f64,
    /// Memory, in bytes, where the catalog says (`memory_gib`).
    pub memory: Option<u64>,
    pub source: String,
    /// Catalog file and line.
    pub origin: String,
    pub peak_counts: PeakCounts,
    /// A calibrated device's time model (predicted times).
    pub time: Option<std::sync::Arc<TimeModel>>,
    pub calibration: Option<Calibration>,
}

/// Lower-case letters and digits only: `H100-SXM` and `h100_sxm` match `h100sxm`.
fn normalize(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Devices by key. The built-in ones are read the first time a device is
/// looked up or listed: a run without `--device` never parses the catalog.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Whether the built-in devices come first.
    builtin: bool,
    devices: OnceLock<Vec<Device>>,
}

impl Catalog {
    /// The built-in catalog, read when first used.
    pub fn builtin() -> Result<Catalog, RuleError> {
        Ok(Catalog {
            builtin: true,
            devices: OnceLock::new(),
        })
    }

    /// The built-in devices, parsed now.
    fn parse_builtin() -> Result<Vec<Device>, RuleError> {
        let mut c = Catalog::default();
        c.add_source(BUILTIN_DEVICES.0, BUILTIN_DEVICES.1)?;
        Ok(c.devices.into_inner().unwrap_or_default())
    }

    fn devices(&self) -> &Vec<Device> {
        self.devices.get_or_init(|| {
            if !self.builtin {
                return Vec::new();
            }
            // The embedded file is ours, and the tests load it: it cannot
            // fail in a build that passed them.
            Self::parse_builtin().unwrap_or_else(|e| panic!("the built-in device catalog: {e}"))
        })
    }

    fn devices_mut(&mut self) -> &mut Vec<Device> {
        self.devices();
        self.devices.get_mut().expect("initialised just above")
    }

    /// Adds (or replaces, by key) the devices of a catalog file.
    pub fn add_source(&mut self, path: &str, text: &str) -> Result<Vec<String>, RuleError> {
        let src = SourceFile::new(path, text, false);
        let defs: OrderedMap<DeviceDef> =
            serde_saphyr::from_str(text).map_err(|e| crate::rules::pack::yaml_error(&src, &e))?;
        // Counted before any is checked: the devices kept from before (not
        // replaced by this file) and this file's.
        let incoming: std::collections::HashSet<&str> =
            defs.0.iter().map(|(k, _)| k.as_str()).collect();
        let kept = self
            .devices()
            .iter()
            .filter(|x| !incoming.contains(x.key.as_str()))
            .count();
        if let Some((key, _)) = defs.0.get(MAX_DEVICES.saturating_sub(kept)) {
            return Err(src.error_at(
                src.key_offset(key),
                format!(
                    "{} devices in force, which exceeds the limit of {MAX_DEVICES} (MAX_DEVICES)",
                    kept + incoming.len()
                ),
                Some(key),
            ));
        }
        let mut keys = Vec::new();
        let mut added = Vec::new();
        for (key, d) in defs.0 {
            // The loader's one-pass index of top-level keys: no scan per key.
            let byte = src.key_offset(&key);
            let at = |m: String| src.error_at(byte, m, Some(&key));
            if !(MIN_BANDWIDTH..=MAX_BANDWIDTH).contains(&d.bandwidth) {
                return Err(at(format!(
                    "device {key}: bandwidth must be a positive number of bytes/s from {MIN_BANDWIDTH:e} to {MAX_BANDWIDTH:e} (MIN_BANDWIDTH, MAX_BANDWIDTH), not {:e}",
                    d.bandwidth
                )));
            }
            if d.peak.is_empty() {
                return Err(at(format!("device {key}: no peak throughput")));
            }
            let memory = match d.memory_gib {
                None => None,
                Some(g) if g.is_finite() && (MIN_MEMORY_GIB..=MAX_MEMORY_GIB).contains(&g) => {
                    Some((g * (1u64 << 30) as f64).round() as u64)
                }
                Some(g) => {
                    return Err(at(format!(
                        "device {key}: memory_gib must be a number of GiB from {MIN_MEMORY_GIB} to {MAX_MEMORY_GIB} (MIN_MEMORY_GIB, MAX_MEMORY_GIB), not {g}"
                    )));
                }
            };
            for (p, v) in &d.peak {
                if !PRECISIONS.contains(&p.as_str()) {
                    return Err(at(format!(
                        "device {key}: unknown precision '{p}' (one of {})",
                        PRECISIONS.join(", ")
                    )));
                }
                if !(MIN_PEAK..=MAX_PEAK).contains(v) {
                    return Err(at(format!(
                        "device {key}: peak {p} must be a positive number of operations/s from {MIN_PEAK:e} to {MAX_PEAK:e} (MIN_PEAK, MAX_PEAK), not {v:e}"
                    )));
                }
            }
            let peak_counts = match d.peak_counts.as_deref() {
                None | Some("multiply-add-as-two") => PeakCounts::MultiplyAddAsTwo,
                Some("reported") => PeakCounts::Reported,
                Some(other) => {
                    return Err(at(format!(
                        "device {key}: peak_counts must be multiply-add-as-two or reported, not '{other}'"
                    )));
                }
            };
            let time = match d.time {
                None => None,
                Some(t) => Some(std::sync::Arc::new(
                    TimeModel::from_def(t).map_err(|m| at(format!("device {key}: {m}")))?,
                )),
            };
            let (line, _) = src.line_col(byte);
            let dev = Device {
                key: key.clone(),
                name: d.name,
                aliases: d.aliases,
                peak: d.peak,
                bandwidth: d.bandwidth,
                memory,
                source: d.source,
                origin: format!("{path}:{line}"),
                peak_counts,
                time,
                calibration: d.calibration,
            };
            added.push(dev);
            keys.push(key);
        }
        // Replaces by key in one pass, not one pass per device.
        let new: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        let devices = self.devices_mut();
        devices.retain(|x| !new.contains(x.key.as_str()));
        devices.extend(added);
        Ok(keys)
    }

    /// Finds a device by key, alias or full name, ignoring case and punctuation.
    pub fn find(&self, name: &str) -> Option<&Device> {
        let n = normalize(name);
        self.devices().iter().find(|d| {
            normalize(&d.key) == n
                || normalize(&d.name) == n
                || d.aliases.iter().any(|a| normalize(a) == n)
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = &Device> {
        self.devices().iter()
    }

    pub fn len(&self) -> usize {
        self.devices().len()
    }

    pub fn is_empty(&self) -> bool {
        self.devices().is_empty()
    }
}

/// The precision key a tensor type computes in.
pub fn precision_of(t: DType) -> &'static str {
    match t {
        DType::Float64 => "fp64",
        DType::Float16 => "fp16",
        DType::Bfloat16 => "bf16",
        DType::Float8E4M3Fn
        | DType::Float8E4M3Fnuz
        | DType::Float8E5M2
        | DType::Float8E5M2Fnuz
        | DType::Float8E8M0 => "fp8",
        DType::Int8 | DType::Uint8 => "int8",
        DType::Int4 | DType::Uint4 | DType::Float4E2M1 | DType::Int2 | DType::Uint2 => "int4",
        _ => "fp32",
    }
}

/// Devices in force at most (the built-in catalog's, packs' and `--devices`
/// files'): each is a line of `c3 devices` and a name every lookup compares.
pub const MAX_DEVICES: usize = 1024;

/// A device's peak throughput per precision runs from a microcontroller's
/// thousand operations per second to an exascale machine's 1e18: outside,
/// times would print as infinite or zero. NaN is outside too.
pub const MIN_PEAK: f64 = 1e3;
/// See [`MIN_PEAK`].
pub const MAX_PEAK: f64 = 1e18;
/// A device's memory runs from 1 MiB to 1 PiB (in GiB).
pub const MIN_MEMORY_GIB: f64 = 1.0 / 1024.0;
pub const MAX_MEMORY_GIB: f64 = 1024.0 * 1024.0;

/// A device's memory bandwidth runs from 1 KB/s to 1 PB/s (bytes/s).
pub const MIN_BANDWIDTH: f64 = 1e3;
/// See [`MIN_BANDWIDTH`].
pub const MAX_BANDWIDTH: f64 = 1e15;

/// Where to look when a device has no peak for a precision.
fn fallbacks(p: &str) -> &'static [&'static str] {
    match p {
        "int4" => &["int4", "int8", "fp16", "fp32"],
        "int8" => &["int8", "fp16", "fp32"],
        "fp8" => &["fp8", "fp16", "bf16", "fp32"],
        "fp16" => &["fp16", "bf16", "fp32"],
        "bf16" => &["bf16", "fp16", "fp32"],
        "tf32" => &["tf32", "fp32"],
        "fp64" => &["fp64", "fp32"],
        _ => &["fp32", "tf32", "fp16"],
    }
}

impl Device {
    /// The peak for a precision in units of 10^12 per second, if the
    /// catalog gives one (what the device tables show).
    pub fn peak_tera(&self, precision: &str) -> Option<f64> {
        self.peak.get(precision).map(|v| v / 1e12)
    }

    /// The memory bandwidth in GB/s.
    pub fn bandwidth_giga(&self) -> f64 {
        self.bandwidth / 1e9
    }

    /// The peak used for a precision, and the precision it really is.
    pub fn peak_for(&self, precision: &str) -> (f64, &'static str) {
        for p in fallbacks(precision) {
            if let Some(v) = self.peak.get(*p) {
                return (*v, p);
            }
        }
        // A catalog entry always has at least one peak: take the first.
        let (p, v) = self
            .peak
            .iter()
            .next()
            .expect("catalog entries have a peak");
        let key = PRECISIONS
            .iter()
            .find(|k| **k == p.as_str())
            .copied()
            .unwrap_or("fp32");
        (*v, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_loads_and_names_match_loosely() {
        let c = Catalog::builtin().unwrap();
        assert!(c.len() >= 15, "{} devices", c.len());
        assert_eq!(c.find("GTX1080Ti").unwrap().key, "gtx1080ti");
        assert_eq!(c.find("h100-sxm").unwrap().key, "h100-sxm");
        assert_eq!(c.find("H100_SXM").unwrap().key, "h100-sxm");
        assert_eq!(c.find("NVIDIA A100 80GB SXM").unwrap().key, "a100-80gb");
        assert!(c.find("tpu").is_none());
        for d in c.iter() {
            // Intel publishes only Gaudi 3's BF16 and FP8 peaks; its other
            // precisions take the BF16 one, a looser lower bound on time.
            if d.key != "gaudi3" {
                assert!(d.peak.contains_key("fp32"), "{} has no fp32 peak", d.key);
            }
            assert!(!d.source.is_empty());
        }
        assert_eq!(
            c.find("gaudi3").unwrap().peak_for("fp32"),
            (1835e12, "bf16")
        );
    }

    #[test]
    fn the_builtin_catalog_is_parsed_only_when_used() {
        // A run without --device never reads rules/devices.yaml (issue 15,
        // start-up): the catalog is empty until a device is looked up.
        let c = Catalog::builtin().unwrap();
        assert!(c.devices.get().is_none());
        let parsed = Catalog::parse_builtin().unwrap();
        assert_eq!(c.len(), parsed.len());
        assert!(c.devices.get().is_some());
        // A catalog file added over it keeps the built-in devices: 1 more.
        let mut c = Catalog::builtin().unwrap();
        c.add_source(
            "d.yaml",
            "x:\n  name: X\n  peak: {fp32: 1.0e12}\n  bandwidth: 1.0e9\n  source: s\n",
        )
        .unwrap();
        assert_eq!(c.len(), parsed.len() + 1);
        assert_eq!(c.find("x").unwrap().bandwidth, 1.0e9);
    }

    #[test]
    fn missing_precisions_fall_back_to_wider_ones() {
        let c = Catalog::builtin().unwrap();
        let v100 = c.find("v100").unwrap();
        assert_eq!(v100.peak_for("int8"), (125.0e12, "fp16"));
        assert_eq!(v100.peak_for("bf16"), (125.0e12, "fp16"));
        let m2 = c.find("apple-m2").unwrap();
        assert_eq!(m2.peak_for("fp16"), (3.6e12, "fp32"));
    }

    #[test]
    fn bad_catalogs_say_where() {
        let mut c = Catalog::default();
        let e = c
            .add_source(
                "d.yaml",
                "x:\n  name: X\n  peak: {fp33: 1.0}\n  bandwidth: 1.0e9\n  source: s\n",
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "d.yaml:1:1: device x: unknown precision 'fp33' (one of fp64, fp32, tf32, fp16, bf16, fp8, int8, int4) in `x`"
        );
        let e = c.add_source(
            "d.yaml",
            "x:\n  name: X\n  peak: {fp32: 1.0}\n  bandwidth: -1\n  source: s\n",
        );
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("bandwidth must be a positive")
        );
        // Infinite, NaN, subnormal, implausibly large: refused with the bounds.
        for (peak, bw, says) in [
            (
                ".inf",
                "1.0e9",
                "peak fp32 must be a positive number of operations/s from 1e3 to 1e18 (MIN_PEAK, MAX_PEAK), not inf",
            ),
            (".nan", "1.0e9", "not NaN"),
            ("1.0e-310", "1.0e9", "(MIN_PEAK, MAX_PEAK), not 1e-310"),
            ("1.0e19", "1.0e9", "(MIN_PEAK, MAX_PEAK), not 1e19"),
            (
                "1.0e12",
                "1.0e16",
                "bandwidth must be a positive number of bytes/s from 1e3 to 1e15 (MIN_BANDWIDTH, MAX_BANDWIDTH), not 1e16",
            ),
            ("1.0e12", ".inf", "(MIN_BANDWIDTH, MAX_BANDWIDTH), not inf"),
        ] {
            let text = format!(
                "x:\n  name: X\n  peak: {{fp32: {peak}}}\n  bandwidth: {bw}\n  source: s\n"
            );
            let e = Catalog::default().add_source("d.yaml", &text).unwrap_err();
            assert!(e.to_string().contains(says), "{peak} {bw}: {e}");
        }
    }
}
