//! onnxruntime's profile (`SessionOptions.enable_profiling`): a JSON list of
//! Chrome-style events. `cat: "Session"` events named `model_run` span one
//! run each; `cat: "Node"` events named `<node>_kernel_time` are kernels,
//! with `args.op_name`, `args.provider`, the input and output shapes and,
//! with a thread pool, `args.thread_scheduling_stats`. Times are in µs.

use serde::Deserialize;
use serde::de::{IgnoredAny, SeqAccess, Visitor};

use super::{Kernel, MAX_PROFILE_EVENTS, Profile, Runs, bounded, json_error, median};

#[derive(Deserialize)]
struct Event {
    #[serde(default)]
    cat: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(default)]
    dur: Option<f64>,
    #[serde(default)]
    args: Option<Args>,
}

#[derive(Deserialize, Default)]
struct Args {
    #[serde(default)]
    op_name: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    input_type_shape: Option<Vec<TypeShape>>,
    #[serde(default)]
    output_type_shape: Option<Vec<TypeShape>>,
    #[serde(default)]
    thread_scheduling_stats: Option<Stats>,
}

/// `{"float": [1, 3, 224, 224]}`: one tensor's element type and shape.
#[derive(Deserialize)]
struct TypeShape(std::collections::BTreeMap<String, Vec<i64>>);

impl TypeShape {
    fn shape(self) -> Vec<i64> {
        self.0.into_values().next().unwrap_or_default()
    }
}

/// A kernel's thread statistics: an empty string without a thread pool, an
/// object naming the threads that helped otherwise.
#[derive(Deserialize)]
#[serde(untagged)]
enum Stats {
    Pool {
        #[serde(default)]
        sub_threads: std::collections::BTreeMap<String, IgnoredAny>,
    },
    Other(IgnoredAny),
}

/// What the events give, kept as they stream by.
#[derive(Default)]
struct Seen {
    /// `model_run` spans: (start, duration) in µs.
    runs: Vec<(f64, f64)>,
    /// Kernels, each with its start (µs) and its time in seconds.
    kernels: Vec<(f64, Kernel)>,
    provider: Option<String>,
    /// Most helper threads any kernel named.
    sub_threads: Option<usize>,
    events: usize,
    /// The first event that is nearly a kernel or a run, and what it lacks:
    /// told when the list has neither.
    near: Option<String>,
}

/// What event `k`, one of onnxruntime's categories, lacks to be a kernel or
/// a run, if it is meant as one: a field, or (a Node event) the name.
fn lacks(k: usize, e: &Event) -> Option<String> {
    let cat = e.cat.as_deref()?;
    let name = e.name.as_deref();
    let meant = cat == "Node" || (cat == "Session" && matches!(name, None | Some("model_run")));
    let missing: Vec<&str> = [
        ("name", name.is_none()),
        ("ts", e.ts.is_none()),
        ("dur", e.dur.is_none()),
    ]
    .into_iter()
    .filter_map(|(field, absent)| absent.then_some(field))
    .collect();
    match name {
        _ if !meant => None,
        _ if !missing.is_empty() => Some(format!(
            "event {k} (cat {}) has no {}",
            crate::error::cut(cat, 40),
            missing.join(" or ")
        )),
        Some(name) if cat == "Node" && !name.ends_with("_kernel_time") => Some(format!(
            "event {k} (cat Node, '{}') is not named <node>_kernel_time",
            crate::error::cut(name, 80)
        )),
        _ => None,
    }
}

struct Events<'a>(&'a mut Seen);

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of profile events")
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
            let k = seen.events;
            if seen.near.is_none() {
                seen.near = lacks(k, &e);
            }
            let (Some(cat), Some(name), Some(ts), Some(dur)) = (&e.cat, &e.name, e.ts, e.dur)
            else {
                continue;
            };
            // A run or a kernel whose time is no time is a damaged profile.
            let timed = || super::timed_event(k, name, ts, dur).map_err(A::Error::custom);
            match cat.as_str() {
                "Session" if name == "model_run" => {
                    timed()?;
                    seen.runs.push((ts, dur));
                }
                "Node" => {
                    let Some(node) = name.strip_suffix("_kernel_time") else {
                        continue;
                    };
                    timed()?;
                    let args = e.args.unwrap_or_default();
                    let node = bounded(node).map_err(A::Error::custom)?;
                    let op =
                        bounded(args.op_name.as_deref().unwrap_or("")).map_err(A::Error::custom)?;
                    if seen.provider.is_none() {
                        seen.provider = args.provider.clone();
                    }
                    if let Some(Stats::Pool { sub_threads }) = &args.thread_scheduling_stats {
                        let n = seen.sub_threads.get_or_insert(0);
                        *n = (*n).max(sub_threads.len());
                    }
                    let shapes = |v: Option<Vec<TypeShape>>| -> Vec<Vec<i64>> {
                        v.unwrap_or_default()
                            .into_iter()
                            .map(TypeShape::shape)
                            .collect()
                    };
                    seen.kernels.push((
                        ts,
                        Kernel {
                            name: node,
                            op,
                            seconds: dur / 1e6,
                            inputs: shapes(args.input_type_shape),
                            outputs: shapes(args.output_type_shape),
                            members: Default::default(),
                        },
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

struct Top<'a>(&'a mut Seen);

impl<'de> serde::de::DeserializeSeed<'de> for Top<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(Events(self.0))
    }
}

/// Reads onnxruntime's profile from JSON text.
pub(super) fn parse(bytes: &[u8]) -> Result<Profile, String> {
    use serde::de::DeserializeSeed;
    let mut seen = Seen::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Top(&mut seen)
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| json_error(&e))?;
    if seen.kernels.is_empty() && seen.runs.is_empty() && seen.events > 0 {
        return Err(match seen.near {
            Some(near) => format!(
                "no onnxruntime kernel (cat Node, named <node>_kernel_time, with ts and dur) or run (cat Session, model_run) in this JSON list: {near}"
            ),
            None => "no onnxruntime events (cat Session or Node) in this JSON list: not an onnxruntime profile".into(),
        });
    }
    // Each kernel belongs to the run whose span holds its start; kernels
    // outside every run (or a profile without model_run) make one run.
    seen.runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n_runs = seen.runs.len().max(1);
    let mut runs = Runs::new(n_runs);
    for (ts, kernel) in seen.kernels {
        let run = if seen.runs.is_empty() {
            Some(0)
        } else {
            // The last run starting at or before the kernel, if it spans it.
            let i = seen.runs.partition_point(|r| r.0 <= ts);
            i.checked_sub(1).filter(|&i| {
                let (start, d) = seen.runs[i];
                ts <= start + d
            })
        };
        if let Some(run) = run {
            runs.add(run, kernel);
        }
    }
    // The first run warms caches and allocators: dropped when there are more.
    let dropped = usize::from(seen.runs.len() > 1);
    let mut kept: Vec<f64> = seen.runs[dropped.min(seen.runs.len())..]
        .iter()
        .map(|r| r.1 / 1e6)
        .collect();
    Ok(Profile {
        path: String::new(),
        runtime: "onnxruntime".into(),
        provider: seen.provider,
        threads: seen.sub_threads.map(|n| n as u64 + 1),
        runs: seen.runs.len(),
        dropped,
        run_s: median(&mut kept),
        kernels: runs.kernels(dropped),
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse as read_profile;
    use super::super::tests::refused;

    /// Two runs of two kernels; the first is dropped as a warm-up.
    const TWO_RUNS: &str = r#"[
      {"cat": "Session", "name": "model_loading_uri", "ts": 0, "dur": 50, "ph": "X", "args": {}},
      {"cat": "Session", "name": "model_run", "ts": 100, "dur": 900, "ph": "X", "args": {}},
      {"cat": "Node", "name": "conv_kernel_time", "ts": 110, "dur": 600, "ph": "X",
       "args": {"op_name": "Conv", "provider": "CPUExecutionProvider",
                "input_type_shape": [{"float": [1, 3, 8, 8]}, {"float": [4, 3, 3, 3]}],
                "output_type_shape": [{"float": [1, 4, 6, 6]}], "thread_scheduling_stats": ""}},
      {"cat": "Node", "name": "relu_kernel_time", "ts": 720, "dur": 100, "ph": "X", "args": {"op_name": "Relu"}},
      {"cat": "Node", "name": "relu_fence_before", "ts": 719, "dur": 0, "ph": "X", "args": {"op_name": "Relu"}},
      {"cat": "Session", "name": "model_run", "ts": 2000, "dur": 500, "ph": "X", "args": {}},
      {"cat": "Node", "name": "conv_kernel_time", "ts": 2010, "dur": 300, "ph": "X", "args": {"op_name": "Conv",
       "thread_scheduling_stats": {"main_thread": {}, "sub_threads": {"7": {"num_run": 1}}}}},
      {"cat": "Node", "name": "relu_kernel_time", "ts": 2320, "dur": 40, "ph": "X", "args": {"op_name": "Relu"}}
    ]"#;

    #[test]
    fn runs_after_the_first_give_each_kernel_its_time() {
        let p = read_profile(TWO_RUNS.as_bytes(), "p.json").unwrap();
        assert_eq!((p.runs, p.dropped), (2, 1));
        assert_eq!(p.runtime, "onnxruntime");
        assert_eq!(p.provider.as_deref(), Some("CPUExecutionProvider"));
        // One helper thread named in the second run's stats: 2 threads.
        assert_eq!(p.threads, Some(2));
        // The second run: 500 µs; its kernels 300 and 40 µs.
        assert_eq!(p.run_s, Some(500e-6));
        let k: Vec<(&str, &str, f64)> = p
            .kernels
            .iter()
            .map(|k| (k.name.as_str(), k.op.as_str(), k.seconds))
            .collect();
        assert_eq!(k, [("conv", "Conv", 300e-6), ("relu", "Relu", 40e-6)]);
        // Shapes are those of the kernel's first event.
        assert_eq!(p.kernels[0].inputs, [vec![1, 3, 8, 8], vec![4, 3, 3, 3]]);
        assert_eq!(p.kernels[0].outputs, [vec![1, 4, 6, 6]]);
        assert!((p.kernels_s() - 340e-6).abs() < 1e-12);
    }

    #[test]
    fn one_run_is_kept_and_other_json_is_refused() {
        let one = r#"[{"cat": "Session", "name": "model_run", "ts": 0, "dur": 10, "args": {}},
                      {"cat": "Node", "name": "a_kernel_time", "ts": 1, "dur": 7, "args": {"op_name": "Add"}}]"#;
        let p = read_profile(one.as_bytes(), "p.json").unwrap();
        assert_eq!((p.runs, p.dropped, p.kernels.len()), (1, 0, 1));
        assert_eq!(p.threads, None);
        // TensorRT's layer profile is a list too, of other records: told
        // apart by its first, and read by its own reader.
        let trt = r#"[{"count": 10}, {"name": "conv1", "timeMs": 1.5, "averageMs": 0.15}]"#;
        let p = read_profile(trt.as_bytes(), "t.json").unwrap();
        assert_eq!(p.runtime, "tensorrt");
        // A list of other records is still refused.
        let other = r#"[{"name": "conv1", "timeMs": 1.5}]"#;
        let e = read_profile(other.as_bytes(), "t.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not an onnxruntime profile"), "{e}");
        let e = read_profile(b"[1, 2]", "p.json").unwrap_err().to_string();
        assert!(e.contains("invalid type: integer"), "{e}");
    }

    /// A list of onnxruntime-like events with no kernel or run says which
    /// event came closest and what it lacks.
    #[test]
    fn a_list_without_kernels_names_what_its_events_lack() {
        let e = refused(r#"[{"cat": "Node", "name": "conv", "ts": 1, "dur": 2}]"#);
        assert!(
            e.ends_with("run (cat Session, model_run) in this JSON list: event 1 (cat Node, 'conv') is not named <node>_kernel_time"),
            "{e}"
        );
        let e = refused(r#"[{"cat": "Node", "name": "conv_kernel_time", "ts": 1}]"#);
        assert!(e.ends_with("event 1 (cat Node) has no dur"), "{e}");
        // Session events other than model_run need no time; model_run does.
        let e = refused(
            r#"[{"cat": "Session", "name": "session_initialization"},
                {"cat": "Session", "name": "model_run", "dur": 3}]"#,
        );
        assert!(e.ends_with("event 2 (cat Session) has no ts"), "{e}");
        let e = refused(r#"[{"cat": "Node"}]"#);
        assert!(
            e.ends_with("event 1 (cat Node) has no name or ts or dur"),
            "{e}"
        );
        // Events of no onnxruntime category: another program's list.
        let e = refused(r#"[{"cat": "gpu", "name": "k", "ts": 1, "dur": 2}]"#);
        assert!(e.ends_with("not an onnxruntime profile"), "{e}");
    }

    /// An event that is a list (or a list of lists) is no event; each
    /// reader says so, where, rather than reading its items as fields.
    #[test]
    fn an_event_that_is_not_an_object_is_refused_as_such() {
        // serde_json places the error at the last byte read before the
        // list: the opening bracket of the whole, or the space before.
        let cases: [(&str, &str); 3] = [
            ("[[[\"Node\"]]]", "at line 1 column 1"),
            (
                "{\"traceEvents\": [{\"ph\": \"X\"}, [1, 2]]}",
                "at line 1 column 30",
            ),
            ("[{\"count\": 3}, [\"conv\", 1.5]]", "at line 1 column 15"),
        ];
        for (json, at) in cases {
            assert_eq!(
                refused(json),
                format!("p.json: invalid type: sequence, expected an event (a JSON object) {at}"),
                "{json}"
            );
        }
    }
}
