//! `c3 shapes`: every value of a model with its inferred type and shape.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};

use crate::ir::{DType, Dim};
use crate::onnx::infer::Inferred;
use crate::shape::Fact;

use super::{ListFormat, Meta};

/// One value's type and shape, written straight from the fact.
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
        m.serialize_entry("dtype", &self.0.dtype.map(DType::name))?;
        m.serialize_entry("shape", &self.0.shape.as_deref().map(ShapeJ))?;
        m.end()
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
            // By name, as JSON objects have always listed them here; a name
            // defined twice shows its last fact.
            let tensors: BTreeMap<&str, TensorJ> = inferred
                .values
                .iter()
                .map(|(name, f)| (name.as_str(), TensorJ(f)))
                .collect();
            // About 120 bytes a value.
            super::meta::wrap_sized(meta, "tensors", &tensors, 4096 + 128 * tensors.len())
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
    use crate::shape::fact::Fact;

    /// A name wider than the terminal wraps within its cell, every line of
    /// the table within the width; with no width the table is whole, one
    /// line a tensor.
    #[test]
    fn a_long_name_wraps_within_its_cell_to_the_width() {
        let long = format!("blocks/{}/out", "x".repeat(90));
        let inferred = Inferred {
            values: vec![
                (
                    long.clone(),
                    Fact::new(crate::ir::DType::Float32, vec![crate::ir::Dim::Known(3)]),
                ),
                ("y".into(), Fact::new(crate::ir::DType::Int64, vec![])),
            ],
            nodes: Vec::new(),
            outputs: Vec::new(),
            bounds: Default::default(),
            input_symbols: Vec::new(),
            bound_symbols: Vec::new(),
        };
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
}
