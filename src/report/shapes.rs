//! `c3 shapes`: every value of a model with its inferred type and shape.

use crate::ir::{DType, Dim};
use crate::onnx::infer::Inferred;

use super::{ListFormat, Meta};

fn dim_json(d: &Dim) -> serde_json::Value {
    match d {
        Dim::Known(n) => serde_json::json!(n),
        Dim::Sym(s) => serde_json::json!(s.to_string()),
    }
}

/// Every value of the main graph, in definition order; JSON starts with
/// `meta`.
pub fn shapes(inferred: &Inferred, format: ListFormat, meta: &Meta) -> String {
    match format {
        ListFormat::Json => {
            let mut tensors = serde_json::Map::new();
            for (name, f) in &inferred.values {
                tensors.insert(
                    name.clone(),
                    serde_json::json!({
                        "dtype": f.dtype.map(DType::name),
                        "shape": f.shape.as_ref().map(|s| s.iter().map(dim_json).collect::<Vec<_>>()),
                    }),
                );
            }
            super::meta::wrap(meta, "tensors", &tensors)
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
