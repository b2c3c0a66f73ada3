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
