//! A PyTorch profiler trace (Chrome trace JSON, `{"traceEvents": [...]}`)
//! as `c3.torch.profile` records it: passes of the model under the c3.torch
//! hook are ranges named `c3.pass`, and in them each layer is a range named
//! `c3.layer <name>` with the layer's name as the hook gives it
//! (`layer1.0.conv1`), so a layer joins its range by name; passes without
//! the hook are ranges named `c3.run`, and give the run's time. Its `c3`
//! object says what ran it. Times are in µs.

use serde::Deserialize;
use serde::de::{MapAccess, SeqAccess, Visitor};

use super::{Kernel, MAX_PROFILE_EVENTS, Profile, Runs, bounded, json_error, median};

/// The range of a pass without the hook: the run's time.
pub const RUN: &str = "c3.run";
/// The range of a pass under the hook, which holds the layers' ranges.
pub const PASS: &str = "c3.pass";
/// What a layer's range is named before the layer's name.
pub const LAYER: &str = "c3.layer ";

#[derive(Deserialize)]
struct Event {
    #[serde(default)]
    ph: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(default)]
    dur: Option<f64>,
}

/// What `c3.torch.profile` says of the run.
#[derive(Deserialize, Default)]
struct About {
    #[serde(default)]
    threads: Option<u64>,
    #[serde(default)]
    device: Option<String>,
}

#[derive(Default)]
struct Seen {
    runs: Vec<(f64, f64)>,
    passes: Vec<(f64, f64)>,
    layers: Vec<(f64, String, f64)>,
    about: About,
    events: usize,
    has_events: bool,
}

struct EventList<'a>(&'a mut Seen);

impl<'de> serde::de::DeserializeSeed<'de> for EventList<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventList<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        use serde::de::Error as _;
        while let Some(super::Object(e)) = seq.next_element::<super::Object<Event>>()? {
            let seen = &mut *self.0;
            seen.events += 1;
            if seen.events > MAX_PROFILE_EVENTS {
                return Err(A::Error::custom(format!(
                    "more than {MAX_PROFILE_EVENTS} events (MAX_PROFILE_EVENTS)"
                )));
            }
            let (Some("X"), Some(name), Some(ts), Some(dur)) =
                (e.ph.as_deref(), e.name, e.ts, e.dur)
            else {
                continue;
            };
            // A run, pass or layer whose time is no time is a damaged trace.
            let k = seen.events;
            let timed = || super::timed_event(k, &name, ts, dur).map_err(A::Error::custom);
            if name == RUN {
                timed()?;
                seen.runs.push((ts, dur));
            } else if name == PASS {
                timed()?;
                seen.passes.push((ts, dur));
            } else if let Some(layer) = name.strip_prefix(LAYER) {
                timed()?;
                let layer = bounded(layer).map_err(A::Error::custom)?;
                seen.layers.push((ts, layer, dur));
            }
        }
        Ok(())
    }
}

struct Trace<'a>(&'a mut Seen);

impl<'de> serde::de::DeserializeSeed<'de> for Trace<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Trace<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Chrome trace object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "traceEvents" => {
                    self.0.has_events = true;
                    map.next_value_seed(EventList(self.0))?;
                }
                "c3" => self.0.about = map.next_value()?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Reads a `c3.torch.profile` trace from JSON text.
pub(super) fn parse(bytes: &[u8]) -> Result<Profile, String> {
    use serde::de::DeserializeSeed;
    let mut seen = Seen::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Trace(&mut seen)
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| json_error(&e))?;
    if !seen.has_events {
        return Err("a JSON object without traceEvents: not a Chrome trace".into());
    }
    if seen.layers.is_empty() {
        return Err(format!(
            "a Chrome trace without c3's layer ranges ('{LAYER}<name>'): record it with c3.torch.profile"
        ));
    }
    seen.runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    seen.passes.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The layers' passes: `c3.pass` ranges, or (a trace without them) the runs.
    let passes = if seen.passes.is_empty() {
        &seen.runs
    } else {
        &seen.passes
    };
    let mut runs = Runs::new(passes.len().max(1));
    for (ts, name, dur) in seen.layers {
        let run = if passes.is_empty() {
            Some(0)
        } else {
            let i = passes.partition_point(|r| r.0 <= ts);
            i.checked_sub(1)
                .filter(|&i| ts <= passes[i].0 + passes[i].1)
        };
        if let Some(run) = run {
            runs.add(
                run,
                Kernel {
                    name,
                    op: String::new(),
                    seconds: dur / 1e6,
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                    members: Default::default(),
                },
            );
        }
    }
    // The first pass and run warm caches and allocators: dropped when
    // there are more.
    let first_pass = usize::from(passes.len() > 1);
    let dropped = usize::from(seen.runs.len() > 1);
    let mut kept: Vec<f64> = seen.runs[dropped.min(seen.runs.len())..]
        .iter()
        .map(|r| r.1 / 1e6)
        .collect();
    Ok(Profile {
        path: String::new(),
        runtime: "pytorch".into(),
        provider: seen.about.device,
        threads: seen.about.threads,
        runs: seen.runs.len(),
        dropped,
        run_s: median(&mut kept),
        kernels: runs.kernels(first_pass),
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse as read_profile;

    #[test]
    fn layer_ranges_are_kernels_named_by_layer() {
        let trace = r#"{"schemaVersion": 1, "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "c3.run", "ts": 0, "dur": 100},
            {"ph": "X", "cat": "user_annotation", "name": "c3.layer conv1", "ts": 1, "dur": 60},
            {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "ts": 2, "dur": 58},
            {"ph": "X", "cat": "user_annotation", "name": "c3.run", "ts": 200, "dur": 80},
            {"ph": "X", "cat": "user_annotation", "name": "c3.layer conv1", "ts": 201, "dur": 50},
            {"ph": "X", "cat": "user_annotation", "name": "c3.layer relu", "ts": 252, "dur": 10},
            {"ph": "i", "name": "c3.layer relu", "ts": 260}
        ], "c3": {"threads": 1, "device": "cpu"}}"#;
        // Without c3.pass ranges, the runs hold the layers.
        let p = read_profile(trace.as_bytes(), "t.json").unwrap();
        assert_eq!(p.runtime, "pytorch");
        assert_eq!((p.runs, p.dropped, p.threads), (2, 1, Some(1)));
        assert_eq!(p.run_s, Some(80e-6));
        let k: Vec<(&str, f64)> = p
            .kernels
            .iter()
            .map(|k| (k.name.as_str(), k.seconds))
            .collect();
        assert_eq!(k, [("conv1", 50e-6), ("relu", 10e-6)]);
    }

    #[test]
    fn passes_hold_the_layers_and_runs_give_the_time() {
        let trace = r#"{"traceEvents": [
            {"ph": "X", "name": "c3.pass", "ts": 0, "dur": 500},
            {"ph": "X", "name": "c3.layer fc", "ts": 10, "dur": 300},
            {"ph": "X", "name": "c3.pass", "ts": 1000, "dur": 400},
            {"ph": "X", "name": "c3.layer fc", "ts": 1010, "dur": 200},
            {"ph": "X", "name": "c3.run", "ts": 2000, "dur": 260},
            {"ph": "X", "name": "c3.run", "ts": 3000, "dur": 240}
        ]}"#;
        let p = read_profile(trace.as_bytes(), "t.json").unwrap();
        // The second pass's layer time, the second run's time.
        assert_eq!(p.kernels[0].seconds, 200e-6);
        assert_eq!(p.run_s, Some(240e-6));
        assert_eq!((p.runs, p.dropped), (2, 1));
    }

    #[test]
    fn traces_without_c3_ranges_are_refused() {
        let e = read_profile(br#"{"traceEvents": []}"#, "t.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("record it with c3.torch.profile"), "{e}");
        let e = read_profile(br#"{"layers": []}"#, "t.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a Chrome trace"), "{e}");
    }
}
