//! `c3 shapes`: every value of a model with its inferred type and shape.

use std::io::Write;

use crate::onnx::infer::Inferred;
use crate::shape::Fact;

use super::{ListFormat, Meta};

/// Values by name, as JSON objects have always listed them here, each
/// name once with its last fact (a name defined twice shows the later);
/// written as one object.
struct ByName<'a>(Vec<(&'a str, &'a Fact)>);

impl<'a> ByName<'a> {
    /// Sorted as a list, not built as a tree: a 111k-node graph's 120k
    /// values took 20 ms as a `BTreeMap`.
    fn of(values: &'a [(String, Fact)]) -> ByName<'a> {
        let mut once: Vec<(&str, &Fact)> = Vec::with_capacity(values.len());
        for (name, at) in by_name(values) {
            let f = &values[at as usize].1;
            match once.last_mut() {
                Some(last) if last.0 == name => last.1 = f,
                _ => once.push((name, f)),
            }
        }
        ByName(once)
    }
}

/// The values' names, each with its place in `values`, sorted by name and
/// stably: a name's entries stay in definition order. A long list's two
/// halves are sorted on two threads, then merged: on the 111k-node
/// graph's 120k names, 12-15 ms -> 7-11 ms of a stage no other thread
/// shares (the end of `shapes --format json`).
fn by_name(values: &[(String, Fact)]) -> Vec<(&str, u32)> {
    // Within u32: a model holds at most MAX_MODEL_ITEMS values.
    let mut all: Vec<(&str, u32)> = values
        .iter()
        .enumerate()
        .map(|(k, (n, _))| (n.as_str(), k as u32))
        .collect();
    let sort = |part: &mut [(&str, u32)]| part.sort_by(|a, b| a.0.cmp(b.0));
    if !crate::threads::second_thread(all.len()) {
        sort(&mut all);
        return all;
    }
    let (left, right) = all.split_at_mut(values.len() / 2);
    crate::threads::both(|| sort(left), || sort(right));
    let mut merged = Vec::with_capacity(values.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() && j < right.len() {
        // The left half's entry first at a tie: it was defined first.
        if right[j].0 < left[i].0 {
            merged.push(right[j]);
            j += 1;
        } else {
            merged.push(left[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&left[i..]);
    merged.extend_from_slice(&right[j..]);
    merged
}

impl ByName<'_> {
    /// `{"meta": ..., "tensors": {...}}` as [`super::meta::wrap_sized`]
    /// writes it through serde, the values written by hand: a long list
    /// shared with a second thread ([`super::pretty::Chunked::items`]).
    fn write(&self, meta: &Meta, w: &mut dyn Write) -> std::io::Result<()> {
        super::pretty::stream(w, |c| {
            c.write_all(b"{")?;
            c.key(1, true, "meta")?;
            c.value(meta, 1)?;
            c.key(1, false, "tensors")?;
            if self.0.is_empty() {
                c.write_all(b"{}")?;
            } else {
                c.write_all(b"{")?;
                c.items(&self.0, |c, i, (name, f)| {
                    c.item(2, i == 0)?;
                    c.text(name)?;
                    c.write_all(b": {")?;
                    c.key(3, true, "dtype")?;
                    match f.dtype {
                        Some(d) => c.plain(d.name())?,
                        None => c.write_all(b"null")?,
                    }
                    c.key(3, false, "shape")?;
                    match f.shape.as_deref() {
                        None => c.write_all(b"null")?,
                        Some(dims) => super::json::dims(c, dims, 3)?,
                    }
                    c.close(2, b"}")
                })?;
                c.close(1, b"}")?;
            }
            c.close(0, b"}")
        })
    }
}

/// Every value of the main graph, in definition order; JSON starts with
/// `meta`.
pub fn shapes(inferred: &Inferred, format: ListFormat, meta: &Meta) -> String {
    shapes_fitted(inferred, format, meta, None)
}

/// [`shapes`], a table fitted to `width` columns when one is given.
pub fn shapes_fitted(
    inferred: &Inferred,
    format: ListFormat,
    meta: &Meta,
    width: Option<usize>,
) -> String {
    match format {
        ListFormat::Json => {
            let tensors = ByName::of(&inferred.values);
            // About 120 bytes a value.
            let mut out = Vec::with_capacity(4096 + 128 * tensors.0.len());
            tensors
                .write(meta, &mut out)
                .expect("writing to memory cannot fail");
            // Names are Rust strings, and the rest is ASCII.
            String::from_utf8(out).expect("JSON text is UTF-8")
        }
        ListFormat::Table => {
            let mut t = comfy_table::Table::new();
            t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
                .set_header(vec!["Tensor", "Type", "Shape"]);
            // Fitted to a terminal (or `COLUMNS`), as the estimate's tables
            // are: a long name wraps within its cell instead of the
            // terminal wrapping every row. A file takes the table whole.
            if let Some(w) = width {
                t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
                    .set_width(u16::try_from(w).unwrap_or(u16::MAX));
            }
            for (name, f) in &inferred.values {
                let shape = match &f.shape {
                    Some(s) => crate::ir::shape_string(s),
                    None => "?".to_string(),
                };
                let dtype = f.dtype.map_or("?".to_string(), |d| d.name().to_string());
                t.add_row(
                    [name.as_str(), &dtype, &shape].map(|c| super::text::shown(c).into_owned()),
                );
            }
            format!("{t}\n{} tensors\n", inferred.values.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Dim;
    use crate::shape::fact::Fact;
    use serde::Serialize;
    use serde::ser::{SerializeMap, SerializeSeq, Serializer};

    /// One value's type and shape, as serde writes it: the reference the
    /// hand-written text is held to.
    struct TensorJ<'a>(&'a Fact);

    impl Serialize for TensorJ<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            struct ShapeJ<'a>(&'a [Dim]);
            impl Serialize for ShapeJ<'_> {
                fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    let mut seq = s.serialize_seq(Some(self.0.len()))?;
                    for d in self.0 {
                        match d {
                            Dim::Known(n) => seq.serialize_element(n)?,
                            Dim::Sym(v) => seq.serialize_element(&v.to_string())?,
                        }
                    }
                    seq.end()
                }
            }
            let mut m = s.serialize_map(Some(2))?;
            m.serialize_entry("dtype", &self.0.dtype.map(crate::ir::DType::name))?;
            m.serialize_entry("shape", &self.0.shape.as_deref().map(ShapeJ))?;
            m.end()
        }
    }

    impl Serialize for ByName<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut m = s.serialize_map(Some(self.0.len()))?;
            for (name, f) in &self.0 {
                m.serialize_entry(name, &TensorJ(f))?;
            }
            m.end()
        }
    }

    /// A listing of `values` alone.
    fn listing(values: Vec<(String, Fact)>) -> Inferred {
        Inferred {
            values,
            ..Default::default()
        }
    }

    /// The JSON listing, written by hand, is the text serde writes for the
    /// same document: names to escape, a name defined twice, unknown
    /// types and shapes, scalars, symbolic sizes, and enough values
    /// (3,000) for a second thread to write some of them.
    #[test]
    fn the_json_listing_is_what_serde_writes() {
        let f32s = |dims: Vec<crate::ir::Dim>| Fact::new(crate::ir::DType::Float32, dims);
        let mut values: Vec<(String, Fact)> = vec![
            ("quote\"d".into(), f32s(vec![crate::ir::Dim::Known(2)])),
            ("tab\there\\".into(), Fact::unknown()),
            (
                "ünï".into(),
                Fact::tensor(None, Some(vec![crate::ir::Dim::Known(1)])),
            ),
            ("scalar".into(), f32s(vec![])),
            (
                "sym".into(),
                f32s(vec![
                    crate::ir::Dim::symbol("batch"),
                    crate::ir::Dim::Known(3),
                ]),
            ),
            ("twice".into(), f32s(vec![crate::ir::Dim::Known(1)])),
        ];
        values.extend((0..3000).map(|i| (format!("v{i}"), f32s(vec![crate::ir::Dim::Known(i)]))));
        values.push(("twice".into(), f32s(vec![crate::ir::Dim::Known(5)])));
        let inferred = listing(values);
        let meta = Meta::default();
        let by_hand = shapes(&inferred, ListFormat::Json, &meta);
        let tensors = ByName::of(&inferred.values);
        let serde = super::super::meta::wrap_sized(&meta, "tensors", &tensors, 0);
        assert_eq!(by_hand, serde);
        // 3,007 entries, 3,006 names: `twice` once, with its later fact.
        assert_eq!(tensors.0.len(), 3006);
        assert!(by_hand.contains(
            "\"twice\": {\n      \"dtype\": \"float32\",\n      \"shape\": [\n        5\n"
        ));
        // No values: an empty object.
        let none = listing(Vec::new());
        assert_eq!(
            shapes(&none, ListFormat::Json, &meta),
            super::super::meta::wrap_sized(&meta, "tensors", &ByName::of(&[]), 0)
        );
    }

    /// A name wider than the terminal wraps within its cell, every line of
    /// the table within the width; with no width the table is whole, one
    /// line a tensor.
    #[test]
    fn a_long_name_wraps_within_its_cell_to_the_width() {
        let long = format!("blocks/{}/out", "x".repeat(90));
        let inferred = listing(vec![
            (
                long.clone(),
                Fact::new(crate::ir::DType::Float32, vec![crate::ir::Dim::Known(3)]),
            ),
            ("y".into(), Fact::new(crate::ir::DType::Int64, vec![])),
        ]);
        let meta = Meta::default();
        let fitted = shapes_fitted(&inferred, ListFormat::Table, &meta, Some(60));
        let widths: Vec<usize> = fitted.lines().map(|l| l.chars().count()).collect();
        assert!(widths.iter().all(|&w| w <= 60), "{fitted}");
        // The name is all there, over several lines.
        let cells: String = fitted
            .lines()
            .filter_map(|l| l.strip_prefix("│ "))
            .map(|l| l.split(' ').next().unwrap_or(""))
            .collect();
        assert!(cells.contains(&long), "{fitted}");
        let whole = shapes(&inferred, ListFormat::Table, &meta);
        // Box top, header, rule, two rows, bottom, and the count.
        assert_eq!(whole.lines().count(), 7, "{whole}");
        assert!(whole.lines().any(|l| l.contains(&long)));
        assert!(fitted.lines().count() > 7);
        assert!(fitted.ends_with("2 tensors\n"));
    }

    /// A long list (sorted in two halves on two cores, then merged) lists
    /// each name once, in byte order, with its last fact: 6,000 values,
    /// each of 3,000 names defined once in each half, value i with shape
    /// [i], so a name's later fact is its second, of shape [i + 3000].
    #[test]
    fn a_long_list_names_each_value_once_with_its_last_fact() {
        use crate::ir::{DType, Dim};
        let values: Vec<(String, Fact)> = (0..6000u64)
            .map(|i| {
                let f = Fact::new(DType::Float32, vec![Dim::Known(i)]);
                (format!("v{}", i % 3000), f)
            })
            .collect();
        let listed = ByName::of(&values);
        assert_eq!(listed.0.len(), 3000);
        let mut names: Vec<String> = (0..3000).map(|i| format!("v{i}")).collect();
        names.sort();
        for ((name, f), want) in listed.0.iter().zip(&names) {
            assert_eq!(name, want);
            let i: u64 = name[1..].parse().unwrap();
            assert_eq!(f.shape.as_deref(), Some(&[Dim::Known(i + 3000)][..]));
        }
    }
}
