//! Measured time, the front end: a runtime's profile read into the kernels
//! it ran and how long each took, per run of the model. Each format has its
//! reader (`ort`: onnxruntime's JSON, `chrome`: a PyTorch profiler
//! trace, `trt`: TensorRT's layer profile, with the engine's layer
//! information beside it where given); what it is is decided from the
//! content. Joining the kernels to
//! a report's layers is [`crate::cost::measured`].
//!
//! Only what a join needs is kept of each event (name, operator, duration,
//! shapes), as the events are read: a profile of many runs costs its text
//! and one record a kernel.

mod chrome;
mod ort;
mod trt;
mod trt_name;

use std::io::Read;

use crate::error::{Error, Result};

/// Profiles larger than this are refused unread.
pub const MAX_PROFILE_BYTES: u64 = 2 << 30;
/// Events one profile may hold (onnxruntime writes one per kernel a run).
pub const MAX_PROFILE_EVENTS: usize = 20_000_000;
/// A kernel name (and every other string kept) is at most this long.
pub const MAX_PROFILE_NAME: usize = 4096;

/// A runtime's profile: the kernels of one run, each with its median time
/// over the runs kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The file, as given.
    pub path: String,
    /// `onnxruntime`, `pytorch`, `tensorrt`.
    pub runtime: String,
    /// The execution provider, where the profile names one.
    pub provider: Option<String>,
    /// Threads the runtime ran kernels on, where the profile tells.
    pub threads: Option<u64>,
    /// Runs in the file, and how many of the first were dropped as warm-up.
    pub runs: usize,
    pub dropped: usize,
    /// The median time of a kept run, as the runtime records it
    /// (onnxruntime's `model_run`).
    pub run_s: Option<f64>,
    /// The kernels of a run, in the order the first kept run ran them.
    pub kernels: Vec<Kernel>,
}

impl Profile {
    /// The sum of the kernels' median times.
    pub fn kernels_s(&self) -> f64 {
        self.kernels
            .iter()
            .map(|k| k.seconds)
            .fold(0.0, |a, b| a + b)
    }
}

/// One kernel (a node the runtime ran, fused or not).
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// The runtime's name for it (`r2_nchwc`, `/layer1/conv1/Conv`).
    pub name: String,
    /// Its operator (`Conv`, `FusedConv`, `ReorderInput`).
    pub op: String,
    /// Median over the kept runs of its time in a run (a kernel that runs
    /// several times in one run, in a loop, summed).
    pub seconds: f64,
    /// Shapes of its inputs and outputs, where the profile records them.
    pub inputs: Vec<Vec<i64>>,
    pub outputs: Vec<Vec<i64>>,
    /// What the runtime says the kernel ran, where it says (TensorRT).
    pub members: Members,
}

/// The nodes a kernel ran as its runtime names them: empty for runtimes
/// that do not tell (onnxruntime, PyTorch), whose kernels are joined by
/// their names alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Members {
    /// Node, tensor or weight names; those that are no layer of the model
    /// (weights, the runtime's own) are passed over.
    pub names: Vec<String>,
    /// A region from one node to another (both named), the nodes between
    /// them in the graph's order included: TensorRT's Myelin regions.
    pub range: Option<(String, String)>,
    /// For a kernel the runtime inserted beside another (a reformat, a
    /// shuffle): the kernel it serves, by name or by a member's name;
    /// empty: the kernel before it.
    pub serves: Option<String>,
}

/// What a profile is, from its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A JSON list of events with `cat` and `dur` (onnxruntime).
    Ort,
    /// A JSON object with `traceEvents` (Chrome trace: PyTorch's profiler).
    Chrome,
    /// A JSON list whose first record is `{"count": N}` (TensorRT's
    /// `trtexec --exportProfile`).
    Trt,
    /// A JSON object with `Layers` (TensorRT's `trtexec --exportLayerInfo`):
    /// read only beside a TensorRT profile.
    TrtLayers,
}

/// What a file's bytes are, or why they are no profile.
fn kind(bytes: &[u8]) -> std::result::Result<Kind, String> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        None => Err("the profile is empty".into()),
        Some(b'[') if trt::is_profile(bytes) => Ok(Kind::Trt),
        Some(b'[') => Ok(Kind::Ort),
        Some(b'{') if trt::is_layer_info(bytes) => Ok(Kind::TrtLayers),
        Some(b'{') => Ok(Kind::Chrome),
        Some(_) => Err(
            "not a profile c3 reads: expected onnxruntime's JSON list of events, a Chrome trace (a JSON object with traceEvents) or TensorRT's layer profile"
                .into(),
        ),
    }
}

/// Reads the profile files of one `--profile` (given once, or twice: a
/// TensorRT profile and its engine's layer information, in either order).
pub fn read_all(paths: &[String]) -> Result<Profile> {
    match paths {
        [one] => read(one),
        [a, b] => {
            let (a_bytes, b_bytes) = (read_bytes(a)?, read_bytes(b)?);
            let kind_of = |bytes: &[u8], path: &str| {
                kind(bytes).map_err(|message| Error::Input {
                    path: path.to_string(),
                    message,
                })
            };
            match (kind_of(&a_bytes, a)?, kind_of(&b_bytes, b)?) {
                (Kind::Trt, Kind::TrtLayers) => parse_with(&a_bytes, a, Some((&b_bytes, b))),
                (Kind::TrtLayers, Kind::Trt) => parse_with(&b_bytes, b, Some((&a_bytes, a))),
                (ka, _) => {
                    let odd = if matches!(ka, Kind::Trt | Kind::TrtLayers) {
                        b
                    } else {
                        a
                    };
                    Err(Error::Input {
                        path: odd.clone(),
                        message: "a second --profile is TensorRT's layer information beside its profile (--exportProfile and --exportLayerInfo); this file is neither of the pair".into(),
                    })
                }
            }
        }
        _ => Err(Error::Usage(format!(
            "--profile is given once, or twice for a TensorRT profile and its layer information, not {} times",
            paths.len()
        ))),
    }
}

/// Reads a profile file.
pub fn read(path: &str) -> Result<Profile> {
    parse(&read_bytes(path)?, path)
}

/// A profile file's bytes, under [`MAX_PROFILE_BYTES`].
fn read_bytes(path: &str) -> Result<Vec<u8>> {
    let bad = |message: String| Error::Input {
        path: path.to_string(),
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(bad("a profile must be a regular file".into()));
    }
    if meta.len() > MAX_PROFILE_BYTES {
        return Err(bad(format!(
            "the profile is {} bytes, past the limit of {MAX_PROFILE_BYTES} (MAX_PROFILE_BYTES)",
            meta.len()
        )));
    }
    // Read whole, under the limit (a /proc file reports a size of 0).
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_PROFILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > MAX_PROFILE_BYTES {
        return Err(bad(format!(
            "the profile is past the limit of {MAX_PROFILE_BYTES} bytes (MAX_PROFILE_BYTES)"
        )));
    }
    Ok(bytes)
}

/// Reads a profile from its bytes; `path` names it in errors.
pub fn parse(bytes: &[u8], path: &str) -> Result<Profile> {
    parse_with(bytes, path, None)
}

/// Reads a profile from its bytes, with TensorRT's layer information
/// (its bytes and path) where given.
fn parse_with(bytes: &[u8], path: &str, layers: Option<(&[u8], &str)>) -> Result<Profile> {
    let bad = |message: String| Error::Input {
        path: path.to_string(),
        message,
    };
    let mut profile = match kind(bytes).map_err(bad)? {
        Kind::Ort => ort::parse(bytes),
        Kind::Chrome => chrome::parse(bytes),
        Kind::Trt => trt::parse(bytes),
        Kind::TrtLayers => Err(
            "this is TensorRT's layer information (--exportLayerInfo), not a profile: give it beside the profile trtexec wrote with --exportProfile (--profile P.json --profile L.json)"
                .into(),
        ),
    }
    .map_err(bad)?;
    if profile.kernels.is_empty() {
        return Err(bad(format!(
            "the {} profile records no kernel time{}",
            profile.runtime,
            if profile.runs == 0 { " and no run" } else { "" }
        )));
    }
    if let Some((info, info_path)) = layers {
        trt::describe(&mut profile, info).map_err(|message| Error::Input {
            path: info_path.to_string(),
            message,
        })?;
    }
    Ok(Profile {
        path: path.to_string(),
        ..profile
    })
}

/// An event or record read from a JSON object only. serde's derived
/// structs also take a list of their fields in order, which no runtime
/// writes; read that way, a list in place of an event was refused as
/// "expected a string" (its first item taken for the first field). Here it
/// is "expected an event (a JSON object)".
pub(super) struct Object<T>(pub T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an event (a JSON object)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData)).map(Object)
    }
}

/// A JSON error from serde_json as a profile reader says it: where, what.
fn json_error(e: &serde_json::Error) -> String {
    let what = match e.classify() {
        serde_json::error::Category::Eof => "the JSON ends early".to_string(),
        serde_json::error::Category::Syntax => "not valid JSON".to_string(),
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            // serde's message names the field and the type it wanted; it
            // quotes no content of the file.
            let m = e.to_string();
            match m.find(" at line ") {
                Some(i) => m[..i].to_string(),
                None => m,
            }
        }
    };
    format!("{what} at line {} column {}", e.line(), e.column())
}

/// The median of some values (the mean of the middle two for an even count).
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// One run's kernel times by name, in the order first seen; turned into
/// the profile's kernels (median per name over the kept runs).
#[derive(Default)]
pub(crate) struct Runs {
    /// Per run: (kernel index, seconds) in order.
    runs: Vec<Vec<(usize, f64)>>,
    names: rustc_hash::FxHashMap<String, usize>,
    /// Each kernel as first seen (its time set at the end).
    kernels: Vec<Kernel>,
}

impl Runs {
    pub(crate) fn new(runs: usize) -> Runs {
        Runs {
            runs: vec![Vec::new(); runs],
            ..Runs::default()
        }
    }

    /// Records a kernel event of run `run`: `kernel` with its time in
    /// `seconds` (its shapes kept from the first event of its name).
    pub(crate) fn add(&mut self, run: usize, kernel: Kernel) {
        let seconds = kernel.seconds;
        let id = match self.names.get(&kernel.name) {
            Some(&id) => id,
            None => {
                let id = self.kernels.len();
                self.names.insert(kernel.name.clone(), id);
                self.kernels.push(kernel);
                id
            }
        };
        if let Some(r) = self.runs.get_mut(run) {
            r.push((id, seconds));
        }
    }

    /// The kernels, each the median of its per-run sums over the runs from
    /// `first` on, in the order of the first of those runs that ran it.
    pub(crate) fn kernels(self, first: usize) -> Vec<Kernel> {
        let kept = &self.runs[first.min(self.runs.len())..];
        let mut order: Vec<usize> = Vec::new();
        let mut seen = vec![false; self.kernels.len()];
        let mut per_run = vec![Vec::new(); self.kernels.len()];
        for run in kept {
            let mut sums: rustc_hash::FxHashMap<usize, f64> = Default::default();
            for &(id, s) in run {
                if !seen[id] {
                    seen[id] = true;
                    order.push(id);
                }
                *sums.entry(id).or_insert(0.0) += s;
            }
            for (id, s) in sums {
                per_run[id].push(s);
            }
        }
        let mut slots: Vec<Option<Kernel>> = self.kernels.into_iter().map(Some).collect();
        order
            .into_iter()
            .filter_map(|id| {
                let mut k = slots[id].take()?;
                // A kernel missing from some runs counts zero there.
                let mut times = std::mem::take(&mut per_run[id]);
                times.resize(kept.len().max(times.len()), 0.0);
                k.seconds = median(&mut times).unwrap_or(0.0);
                Some(k)
            })
            .collect()
    }
}

/// The longest event read as a time, in µs (an hour): longer is damage.
const MAX_EVENT_US: f64 = 3.6e9;

/// Checks the time of event `k`, `name`, one the profile times a kernel,
/// layer or run by: a start and a `dur` in µs that are no time (negative,
/// past an hour, not finite) make the profile a damaged one, not one to
/// join without the event.
pub(super) fn timed_event(k: usize, name: &str, ts: f64, dur: f64) -> Result<(), String> {
    match ts.is_finite() && (0.0..=MAX_EVENT_US).contains(&dur) {
        true => Ok(()),
        false => Err(format!(
            "event {k} ('{}'): dur {dur} µs at ts {ts} is not a time (negative, or past an hour)",
            crate::error::cut(name, 80)
        )),
    }
}

/// A name kept from a profile, refused past [`MAX_PROFILE_NAME`] bytes (a
/// damaged or hostile file, not a runtime's name).
pub(crate) fn bounded(s: &str) -> Result<String, String> {
    if s.len() > MAX_PROFILE_NAME {
        return Err(format!(
            "a name of {} bytes, past the limit of {MAX_PROFILE_NAME} (MAX_PROFILE_NAME)",
            s.len()
        ));
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line a profile's text is refused with, read as `p.json`.
    pub(super) fn refused(text: &str) -> String {
        parse(text.as_bytes(), "p.json").unwrap_err().to_string()
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn what_is_not_a_profile_says_so() {
        let e = parse(b"  \n ", "p.json").unwrap_err().to_string();
        assert_eq!(e, "p.json: the profile is empty");
        let e = parse(b"ONNX\x08\x07", "p.json").unwrap_err().to_string();
        assert!(e.starts_with("p.json: not a profile c3 reads"), "{e}");
        let e = parse(b"[{\"cat\": \"Node\", \"name\": ", "p.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("the JSON ends early at line 1"), "{e}");
        let e = parse(b"[]", "p.json").unwrap_err().to_string();
        assert_eq!(
            e,
            "p.json: the onnxruntime profile records no kernel time and no run"
        );
    }
}
