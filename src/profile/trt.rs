//! TensorRT's layer profile as trtexec writes it (`--exportProfile`): a
//! JSON list whose first record is `{"count": N}`, the iterations timed,
//! then one record a layer of the engine with its total time over them
//! (`timeMs`), its mean (`averageMs`) and, from TensorRT 8.4, its median
//! (`medianMs`), in milliseconds. A layer's time is its median where the
//! file has one, else its mean. There is no time of a whole run.
//!
//! Beside it, the engine's layer information (`--exportLayerInfo`, a JSON
//! object with `Layers`) gives each layer's type, tensors and, with
//! `--profilingVerbosity=detailed` from TensorRT 8.6, the ONNX nodes it
//! ran (`Metadata`). The layers' names say what they ran too: read by
//! [`super::trt_name`].

use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde::de::{SeqAccess, Visitor};

use super::{Kernel, MAX_PROFILE_EVENTS, Profile, bounded, json_error, trt_name};

/// A layer's time past this (an hour an iteration) is not a time.
const MAX_LAYER_MS: f64 = 3.6e6;

/// A list of records, refused past [`MAX_PROFILE_EVENTS`].
struct List<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = List<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of layer records")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List<T>, A::Error> {
                use serde::de::Error as _;
                let mut out = Vec::new();
                while let Some(x) = seq.next_element::<T>()? {
                    if out.len() == MAX_PROFILE_EVENTS {
                        return Err(A::Error::custom(format!(
                            "more than {MAX_PROFILE_EVENTS} records (MAX_PROFILE_EVENTS)"
                        )));
                    }
                    out.push(x);
                }
                Ok(List(out))
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    #[serde(default)]
    count: Option<f64>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    time_ms: Option<f64>,
    #[serde(default)]
    average_ms: Option<f64>,
    #[serde(default)]
    median_ms: Option<f64>,
}

/// Whether a JSON list is TensorRT's profile: its first record's first key
/// is `count`.
pub(super) fn is_profile(bytes: &[u8]) -> bool {
    first_key(bytes, b'[', b"{") == Some(b"count".as_slice())
}

/// Whether a JSON object is TensorRT's layer information: its first key is
/// `Layers`.
pub(super) fn is_layer_info(bytes: &[u8]) -> bool {
    first_key(bytes, b'{', b"") == Some(b"Layers".as_slice())
}

/// The first key of the object at the start of `bytes` (after `open` and
/// the further openings in `then`), unescaped keys only.
fn first_key<'a>(bytes: &'a [u8], open: u8, then: &[u8]) -> Option<&'a [u8]> {
    let mut rest = bytes;
    for &c in std::iter::once(&open).chain(then) {
        rest = rest.trim_ascii_start();
        rest = rest.strip_prefix(&[c])?;
    }
    let rest = rest.trim_ascii_start().strip_prefix(b"\"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    Some(&rest[..end])
}

/// Reads TensorRT's profile from JSON text.
pub(super) fn parse(bytes: &[u8]) -> Result<Profile, String> {
    let records: List<super::Object<Record>> =
        serde_json::from_slice(bytes).map_err(|e| json_error(&e))?;
    let mut count: Option<u64> = None;
    let mut kernels = Vec::new();
    for super::Object(r) in records.0 {
        if let Some(c) = r.count {
            if count.is_some() {
                return Err(
                    "the profile holds the timings of several optimization profiles or contexts (a {\"count\"} record starts each); c3 reads one: profile the engine with one"
                        .into(),
                );
            }
            if !(c.is_finite() && c >= 1.0 && c.fract() == 0.0 && c <= 1e15) {
                return Err(format!(
                    "its count of iterations is {c}, not a whole number of at least 1"
                ));
            }
            count = Some(c as u64);
            continue;
        }
        let Some(name) = r.name else {
            return Err("a record with neither a count nor a layer's name".into());
        };
        let Some(n) = count else {
            return Err("a layer's record before the count of iterations".into());
        };
        let ms = match (r.median_ms, r.average_ms, r.time_ms) {
            (Some(m), _, _) => ("medianMs", m),
            (None, Some(a), _) => ("averageMs", a),
            (None, None, Some(t)) => ("timeMs", t / n as f64),
            (None, None, None) => {
                return Err(format!(
                    "layer {}: no time (medianMs, averageMs or timeMs)",
                    crate::error::cut(&name, 60)
                ));
            }
        };
        if !(ms.1.is_finite() && (0.0..=MAX_LAYER_MS).contains(&ms.1)) {
            return Err(format!(
                "layer {}: {} of {} is not a time in milliseconds",
                crate::error::cut(&name, 60),
                ms.0,
                if ms.1.abs() < 1e15 {
                    ms.1.to_string()
                } else {
                    format!("{:e}", ms.1)
                }
            ));
        }
        let name = bounded(&name)?;
        let (members, op) = trt_name::read(&name);
        kernels.push(Kernel {
            name,
            op,
            seconds: ms.1 / 1e3,
            inputs: Vec::new(),
            outputs: Vec::new(),
            members,
        });
    }
    let Some(runs) = count else {
        return Err("no {\"count\"} record: not a TensorRT profile".into());
    };
    Ok(Profile {
        path: String::new(),
        runtime: "tensorrt".into(),
        provider: None,
        threads: None,
        runs: runs.try_into().unwrap_or(usize::MAX),
        dropped: 0,
        run_s: None,
        kernels,
    })
}

#[derive(Deserialize)]
struct LayerInfo {
    #[serde(rename = "Layers")]
    layers: List<Layer>,
}

/// A layer: its name alone (the default verbosity), or described.
#[derive(Deserialize)]
#[serde(untagged)]
enum Layer {
    Name(String),
    Described(Described),
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Described {
    name: String,
    #[serde(default)]
    layer_type: Option<String>,
    #[serde(default)]
    inputs: Vec<Tensor>,
    #[serde(default)]
    outputs: Vec<Tensor>,
    #[serde(default)]
    metadata: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Tensor {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    dimensions: Option<Vec<i64>>,
}

/// Adds what the layer information `bytes` says of each layer to the
/// profile's kernels: its type, tensors, and the ONNX nodes it ran. A file
/// that names too few of the profile's layers is of another engine.
pub(super) fn describe(profile: &mut Profile, bytes: &[u8]) -> Result<(), String> {
    let info: LayerInfo = serde_json::from_slice(bytes).map_err(|e| json_error(&e))?;
    let mut by_name: FxHashMap<String, Described> = FxHashMap::default();
    let listed = info.layers.0.len();
    for layer in info.layers.0 {
        match layer {
            Layer::Name(n) => {
                by_name.entry(bounded(&n)?).or_insert(Described {
                    name: n,
                    layer_type: None,
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                    metadata: None,
                });
            }
            Layer::Described(d) => {
                by_name.entry(bounded(&d.name)?).or_insert(d);
            }
        }
    }
    let mut found = 0usize;
    for k in &mut profile.kernels {
        let Some(d) = by_name.get(&k.name) else {
            continue;
        };
        found += 1;
        if let Some(t) = d.layer_type.as_deref().filter(|t| !t.is_empty()) {
            k.op = bounded(t)?;
        }
        let dims = |v: &[Tensor]| -> Vec<Vec<i64>> {
            v.iter()
                .map(|t| t.dimensions.clone().unwrap_or_default())
                .collect()
        };
        k.inputs = dims(&d.inputs);
        k.outputs = dims(&d.outputs);
        if k.members.serves.is_some() {
            continue;
        }
        let more = d
            .metadata
            .as_deref()
            .into_iter()
            .flat_map(trt_name::metadata_members)
            .chain(d.outputs.iter().filter_map(|t| t.name.as_deref()));
        for m in more {
            if !k.members.names.iter().any(|n| n == m) {
                k.members.names.push(bounded(m)?);
            }
        }
    }
    // Half the profile's layers at least, or the two are of two engines.
    if found * 2 < profile.kernels.len() {
        return Err(format!(
            "the layer information is not of this profile's engine: {found} of the profile's {} layers are among its {listed}",
            profile.kernels.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{parse as read_profile, parse_with};

    const PROFILE: &str = r#"[
      { "count" : 200 },
      { "name" : "/conv1/Conv + /relu/Relu", "timeMs" : 30.0, "averageMs" : 0.15, "medianMs" : 0.14, "percentage" : 60 },
      { "name" : "Reformatting CopyNode for Input Tensor 0 to /fc/Gemm", "timeMs" : 2.0, "averageMs" : 0.01, "percentage" : 4 },
      { "name" : "/fc/Gemm", "timeMs" : 18.0, "averageMs" : 0.09, "percentage" : 36 }
    ]"#;

    #[test]
    fn median_where_there_is_one_else_the_mean() {
        let p = read_profile(PROFILE.as_bytes(), "p.json").unwrap();
        assert_eq!(p.runtime, "tensorrt");
        assert_eq!((p.runs, p.dropped, p.run_s), (200, 0, None));
        let ops: Vec<&str> = p.kernels.iter().map(|k| k.op.as_str()).collect();
        assert_eq!(ops, ["", "Reformat", ""]);
        // 0.14 ms (median), 0.01 ms and 0.09 ms (means).
        for (k, ms) in p.kernels.iter().zip([0.14, 0.01, 0.09]) {
            assert!((k.seconds - ms / 1e3).abs() < 1e-15, "{}", k.seconds);
        }
        assert_eq!(p.kernels[0].members.names, ["/conv1/Conv", "/relu/Relu"]);
        assert_eq!(p.kernels[1].members.serves.as_deref(), Some("/fc/Gemm"));
        // 0.14 + 0.01 + 0.09 ms.
        assert!((p.kernels_s() - 0.24e-3).abs() < 1e-12);
    }

    #[test]
    fn a_mean_from_the_total_when_only_the_total_is_given() {
        let p = read_profile(br#"[{"count": 4}, {"name": "a", "timeMs": 2.0}]"#, "p.json").unwrap();
        // 2 ms over 4 iterations.
        assert_eq!(p.kernels[0].seconds, 0.5e-3);
    }

    #[test]
    fn bad_counts_and_times_are_refused() {
        let e = super::super::tests::refused;
        assert_eq!(
            e(r#"[{"count": 0}, {"name": "a", "averageMs": 1}]"#),
            "p.json: its count of iterations is 0, not a whole number of at least 1"
        );
        assert!(e(r#"[{"count": -3}]"#).contains("count of iterations is -3"));
        assert_eq!(
            e(r#"[{"count": 1}, {"name": "a", "averageMs": -1}]"#),
            "p.json: layer a: averageMs of -1 is not a time in milliseconds"
        );
        assert!(
            e(r#"[{"count": 1}, {"name": "a", "medianMs": 1e300}]"#).contains("medianMs of 1e300")
        );
        assert!(e(r#"[{"count": 1}, {"name": "a", "medianMs": NaN}]"#).contains("not valid JSON"));
        assert!(e(r#"[{"count": 1}, {"name": "a"}]"#).contains("layer a: no time"));
        assert!(
            e(r#"[{"count": 1}, {"name": "a", "averageMs": 1}, {"count": 1}, {"name": "a", "averageMs": 1}]"#)
                .contains("several optimization profiles")
        );
        assert_eq!(
            e(r#"[{"count": 5}]"#),
            "p.json: the tensorrt profile records no kernel time"
        );
        let long = format!(
            r#"[{{"count": 1}}, {{"name": "{}", "averageMs": 1}}]"#,
            "x".repeat(5000)
        );
        assert!(e(&long).contains("MAX_PROFILE_NAME"), "{}", e(&long));
    }

    #[test]
    fn layer_information_adds_types_tensors_and_members() {
        let info = r#"{"Layers": [
          {"Name": "/conv1/Conv + /relu/Relu", "LayerType": "CaskConvolution",
           "Inputs": [{"Name": "x", "Dimensions": [1, 3, 8, 8]}],
           "Outputs": [{"Name": "r1", "Dimensions": [1, 4, 8, 8]}],
           "Metadata": "[ONNX Layer: /conv1/Conv]\u001f[ONNX Layer: /bn/BatchNormalization]\u001f[ONNX Layer: /relu/Relu]"},
          {"Name": "Reformatting CopyNode for Input Tensor 0 to /fc/Gemm", "LayerType": "Reformat",
           "Outputs": [{"Name": "r1 copy", "Dimensions": [1, 4, 8, 8]}]},
          "/fc/Gemm"], "Bindings": ["x", "y"]}"#;
        let p = parse_with(
            PROFILE.as_bytes(),
            "p.json",
            Some((info.as_bytes(), "l.json")),
        )
        .unwrap();
        let k = &p.kernels[0];
        assert_eq!(k.op, "CaskConvolution");
        assert_eq!(
            k.members.names,
            ["/conv1/Conv", "/relu/Relu", "/bn/BatchNormalization", "r1"]
        );
        assert_eq!(k.outputs, [vec![1, 4, 8, 8]]);
        // A reformat serves its layer: its tensors are TensorRT's.
        assert!(p.kernels[1].members.names.is_empty());
        assert_eq!(p.kernels[1].op, "Reformat");
        assert_eq!(p.kernels[2].op, "");
    }

    #[test]
    fn layer_information_of_another_engine_is_refused() {
        let info = r#"{"Layers": ["/other/Conv", "/other/Relu"]}"#;
        let e = parse_with(
            PROFILE.as_bytes(),
            "p.json",
            Some((info.as_bytes(), "l.json")),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "l.json: the layer information is not of this profile's engine: 0 of the profile's 3 layers are among its 2"
        );
        let e = parse_with(
            PROFILE.as_bytes(),
            "p.json",
            Some((b"{\"Layers\": 3}", "l.json")),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("l.json: invalid type: integer"), "{e}");
    }
}
