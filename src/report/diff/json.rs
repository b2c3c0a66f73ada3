//! A diff as JSON, written a row at a time: `a` and `b` (each side's model
//! and options, as an estimate's `meta`), the `layers` asked for, `meta`
//! (with the parts shown), the `summary` asked for and `total`. Every
//! object's keys are in sorted order, as a `serde_json::Value` has them.

use std::borrow::Cow;
use std::io::{self, Write};

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use super::{Diff, DiffRow, FIGURES, Side, Sides};
use crate::report::pretty::{self, Chunked};
use crate::report::{Meta, Parts};

/// Writes the diff as pretty JSON text ending in a line break.
pub(super) fn write(d: &Diff, sides: &Sides, parts: Parts, w: &mut dyn Write) -> io::Result<()> {
    let mut meta = Meta::default();
    meta.set("parts", parts.name());
    // A meta as a value: its keys, and its options', sorted.
    let to_value = |m: &Meta| serde_json::to_value(m).unwrap_or(Value::Null);
    pretty::stream(w, |c| {
        c.write_all(b"{")?;
        c.key(1, true, "a")?;
        c.value(&to_value(&sides.meta.0), 1)?;
        c.key(1, false, "b")?;
        c.value(&to_value(&sides.meta.1), 1)?;
        if parts != Parts::Summary {
            c.key(1, false, "layers")?;
            list(c, d.layers().map(RowJ::layer))?;
        }
        c.key(1, false, "meta")?;
        c.value(&to_value(&meta), 1)?;
        if parts != Parts::Layers {
            c.key(1, false, "summary")?;
            list(c, d.summary.iter().map(RowJ::summary))?;
        }
        c.key(1, false, "total")?;
        c.value(&RowJ::figures(&d.total, Some(d.peak_at)), 1)?;
        c.close(0, b"}")
    })
}

/// A list of rows whose key is one deep, each row written as it comes.
fn list<'r>(c: &mut Chunked<'_>, rows: impl Iterator<Item = RowJ<'r>>) -> io::Result<()> {
    let mut first = true;
    for r in rows {
        if first {
            c.write_all(b"[")?;
        }
        c.item(2, first)?;
        c.value(&r, 2)?;
        first = false;
    }
    if first {
        return c.write_all(b"[]");
    }
    c.close(1, b"]")
}

/// One row as an object: `a` and `b` (a missing side `null`), `delta`,
/// and a layer's `name` and `op` or a type's `op`.
struct RowJ<'r> {
    a: Option<SideJ<'r>>,
    b: Option<SideJ<'r>>,
    delta: DeltaJ,
    name: Option<Cow<'r, str>>,
    op: Option<Cow<'r, str>>,
}

impl<'r> RowJ<'r> {
    /// A row's figures; the total's sides with the layer each peaks at.
    fn figures(r: &DiffRow, peak_at: Option<(Option<&'r str>, Option<&'r str>)>) -> RowJ<'r> {
        let side = |t: &Option<Side>, at: Option<Option<&'r str>>| {
            t.map(|side| SideJ { side, peak_at: at })
        };
        RowJ {
            a: side(&r.a, peak_at.map(|p| p.0)),
            b: side(&r.b, peak_at.map(|p| p.1)),
            delta: DeltaJ::of(r),
            name: None,
            op: None,
        }
    }

    fn layer(r: DiffRow<'r>) -> RowJ<'r> {
        let figures = RowJ::figures(&r, None);
        RowJ {
            name: Some(r.name),
            op: Some(r.op),
            ..figures
        }
    }

    fn summary(r: &'r DiffRow) -> RowJ<'r> {
        RowJ {
            op: Some(Cow::Borrowed(&r.name)),
            ..RowJ::figures(r, None)
        }
    }
}

impl Serialize for RowJ<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("a", &self.a)?;
        m.serialize_entry("b", &self.b)?;
        m.serialize_entry("delta", &self.delta)?;
        if let Some(name) = &self.name {
            m.serialize_entry("name", name)?;
        }
        if let Some(op) = &self.op {
            m.serialize_entry("op", op)?;
        }
        m.end()
    }
}

/// A number of a side or of a difference.
#[derive(Clone, Copy)]
enum Num<'a> {
    Count(u64),
    /// A difference: within ±2^63 (every real model's) an integer, a
    /// larger one a float.
    Change(i128),
    Seconds(f64),
    At(Option<&'a str>),
}

impl Serialize for Num<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Num::Count(n) => s.serialize_u64(n),
            Num::Change(d) => match i64::try_from(d) {
                Ok(d) => s.serialize_i64(d),
                Err(_) => s.serialize_f64(d as f64),
            },
            Num::Seconds(v) => s.serialize_f64(v),
            Num::At(at) => at.serialize(s),
        }
    }
}

/// Writes `entries` as an object, its keys sorted.
fn sorted_map<S: Serializer>(s: S, mut entries: Vec<(&str, Num<'_>)>) -> Result<S::Ok, S::Error> {
    entries.sort_unstable_by_key(|e| e.0);
    let mut m = s.serialize_map(Some(entries.len()))?;
    for (k, v) in &entries {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

/// One side's figures; the total's carry the layer its memory peaks at.
#[derive(Clone, Copy)]
struct SideJ<'a> {
    side: Side,
    peak_at: Option<Option<&'a str>>,
}

impl Serialize for SideJ<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut entries: Vec<(&str, Num)> = FIGURES
            .iter()
            .map(|f| (f.key, Num::Count((f.of)(&self.side))))
            .collect();
        if let Some(b) = self.side.bound_s {
            entries.push(("bound_s", Num::Seconds(b)));
        }
        if let Some(at) = self.peak_at {
            entries.push(("peak_at", Num::At(at)));
        }
        sorted_map(s, entries)
    }
}

/// B − A of each figure, and of the bound when timed.
#[derive(Clone, Copy)]
struct DeltaJ {
    figures: [i128; FIGURES.len()],
    bound_s: Option<f64>,
}

impl DeltaJ {
    fn of(r: &DiffRow) -> DeltaJ {
        DeltaJ {
            figures: std::array::from_fn(|i| r.delta(&FIGURES[i])),
            bound_s: r.delta_s(),
        }
    }
}

impl Serialize for DeltaJ {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut entries: Vec<(&str, Num)> = FIGURES
            .iter()
            .zip(self.figures)
            .map(|(f, d)| (f.key, Num::Change(d)))
            .collect();
        if let Some(b) = self.bound_s {
            entries.push(("bound_s", Num::Seconds(b)));
        }
        sorted_map(s, entries)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::model::{EstimateOptions, Model};

    /// What the diff's JSON was when it was made whole, as a value: the
    /// bytes the rows written one by one are held to.
    fn whole(d: &Diff, sides: &Sides, parts: Parts) -> String {
        let row_json = |r: &DiffRow| {
            let side = |t: &Option<Side>| match t {
                None => Value::Null,
                Some(t) => {
                    let mut m: Map<_, _> = FIGURES
                        .iter()
                        .map(|f| (f.key.to_string(), json!((f.of)(t))))
                        .collect();
                    if let Some(b) = t.bound_s {
                        m.insert("bound_s".into(), json!(b));
                    }
                    m.into()
                }
            };
            let mut delta: Map<String, Value> = FIGURES
                .iter()
                .map(|f| {
                    let d = r.delta(f);
                    let v = i64::try_from(d).map_or_else(|_| json!(d as f64), |d| json!(d));
                    (f.key.to_string(), v)
                })
                .collect();
            if let Some(d) = r.delta_s() {
                delta.insert("bound_s".into(), json!(d));
            }
            let mut m = Map::new();
            m.insert("a".into(), side(&r.a));
            m.insert("b".into(), side(&r.b));
            m.insert("delta".into(), delta.into());
            m
        };
        let mut meta = Meta::default();
        meta.set("parts", parts.name());
        let mut doc = Map::new();
        let to_value = |m: &Meta| serde_json::to_value(m).unwrap();
        doc.insert("meta".into(), to_value(&meta));
        doc.insert("a".into(), to_value(&sides.meta.0));
        doc.insert("b".into(), to_value(&sides.meta.1));
        let mut total = row_json(&d.total);
        for (side, at) in [("a", &d.peak_at.0), ("b", &d.peak_at.1)] {
            if let Some(Value::Object(m)) = total.get_mut(side) {
                m.insert("peak_at".into(), json!(at));
            }
        }
        doc.insert("total".into(), total.into());
        if parts != Parts::Layers {
            let rows = d.summary.iter().map(|r| {
                let mut m = Map::new();
                m.insert("op".into(), r.name.to_string().into());
                m.extend(row_json(r));
                Value::from(m)
            });
            doc.insert("summary".into(), rows.collect::<Vec<_>>().into());
        }
        if parts != Parts::Summary {
            let rows = d.layers().map(|r| {
                let mut m = Map::new();
                m.insert("name".into(), r.name.to_string().into());
                m.insert("op".into(), r.op.to_string().into());
                m.extend(row_json(&r));
                Value::from(m)
            });
            doc.insert("layers".into(), rows.collect::<Vec<_>>().into());
        }
        serde_json::to_string_pretty(&Value::from(doc)).unwrap() + "\n"
    }

    /// Diffs of two models, of one model under two option sets (timed on
    /// two devices, layers of one side only, ops that differ, the changed
    /// rows alone), each part: the rows written as they come are the
    /// bytes of the document made whole.
    #[test]
    fn rows_written_one_by_one_are_the_whole_document() {
        let root = env!("CARGO_MANIFEST_DIR");
        let at = |f: &str| format!("{root}/{f}");
        let opts = |packs: &[&str], device: Option<&str>| EstimateOptions {
            packs: packs.iter().map(|p| p.to_string()).collect(),
            device: device.map(str::to_string),
            ..EstimateOptions::default()
        };
        let squeezenet = "examples/onnx/light_squeezenet.onnx";
        let mut emptied = 0;
        for (a, oa, b, ob) in [
            (
                squeezenet,
                opts(&[], None),
                "examples/onnx/light_bvlc_alexnet.onnx",
                opts(&[], None),
            ),
            (
                squeezenet,
                opts(&[], Some("a100")),
                squeezenet,
                opts(&["fused"], Some("h100")),
            ),
            (
                "examples/resnet50.trace.json",
                opts(&[], Some("a100")),
                squeezenet,
                opts(&[], None),
            ),
            // Nothing differs: no row is changed.
            (
                squeezenet,
                opts(&[], None),
                squeezenet,
                EstimateOptions {
                    strict: true,
                    ..opts(&[], None)
                },
            ),
            (
                "tests/fixtures/exports/resnet18_int8.onnx",
                opts(&[], None),
                "tests/fixtures/exports/mixtral.onnx",
                opts(&[], None),
            ),
        ] {
            let ea = Model::open(&at(a)).unwrap().estimate(&oa).unwrap();
            let eb = Model::open(&at(b)).unwrap().estimate(&ob).unwrap();
            let sides = Sides {
                meta: (ea.meta.clone(), eb.meta.clone()),
                about: (ea.about.clone(), eb.about.clone()),
            };
            for changed in [false, true] {
                let mut d = super::super::diff(
                    (&ea.report, ea.roofline.as_ref()),
                    (&eb.report, eb.roofline.as_ref()),
                );
                if changed {
                    d.only_changed();
                    emptied += usize::from(d.layer_count() == 0 && d.summary.is_empty());
                }
                for parts in [Parts::Both, Parts::Layers, Parts::Summary] {
                    let mut ours = Vec::new();
                    write(&d, &sides, parts, &mut ours).unwrap();
                    assert_eq!(
                        String::from_utf8(ours).unwrap(),
                        whole(&d, &sides, parts),
                        "{a} {b} {parts:?} {changed}"
                    );
                }
            }
        }
        // Empty lists were written too.
        assert_eq!(emptied, 1);
    }
}
