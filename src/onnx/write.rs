//! Writing ONNX: a copy of a model with its inferred shapes.

use crate::error::Result;
use crate::ir::Dim;
use crate::onnx::OnnxModel;
use crate::onnx::infer::Inferred;

/// Writes a copy of the model with every inferred node output in value_info
/// (see [`with_value_info`]), atomically: a temporary file renamed into
/// place. Returns how many entries were added.
pub fn write_value_info(model: &OnnxModel, inferred: &Inferred, out: &str) -> Result<usize> {
    let (bytes, n) = with_value_info(model, inferred);
    crate::output::write_atomic(std::path::Path::new(out), &bytes, out)?;
    Ok(n)
}

/// A copy of the model with every inferred node output in value_info, and
/// how many entries were added. The entries go in a second serialized
/// `ModelProto` appended to the file: protobuf merges it into the first, so
/// the original bytes (weights included) are copied unchanged.
pub fn with_value_info(model: &OnnxModel, inferred: &Inferred) -> (Vec<u8>, usize) {
    use crate::proto::{GraphProto, ModelProto};
    use prost::Message;
    let entries = inferred_value_info(model, inferred);
    let n = entries.len();
    let patch = ModelProto {
        graph: Some(GraphProto {
            value_info: entries,
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut bytes = Vec::with_capacity(model.bytes.len() + 64 * n);
    bytes.extend_from_slice(&model.bytes);
    bytes.extend_from_slice(&patch.encode_to_vec());
    (bytes, n)
}

/// The inferred shapes of the main graph's values that the model does not
/// declare, as `ValueInfoProto`s.
pub(crate) fn inferred_value_info(
    model: &OnnxModel,
    inferred: &Inferred,
) -> Vec<crate::proto::ValueInfoProto> {
    use crate::proto::{Dimension, TensorShapeProto, TensorTypeProto, TypeProto, ValueInfoProto};
    let mut declared: std::collections::HashSet<&str> = std::collections::HashSet::new();
    if let Some(g) = model.model.graph.as_ref() {
        for v in g.input.iter().chain(&g.output).chain(&g.value_info) {
            declared.insert(v.name.as_deref().unwrap_or(""));
        }
        for t in &g.initializer {
            declared.insert(t.name.as_deref().unwrap_or(""));
        }
    }
    let mut out = Vec::new();
    for (name, f) in &inferred.values {
        if declared.contains(name.as_str()) || f.kind != crate::shape::ValueKind::Tensor {
            continue;
        }
        let (Some(dtype), Some(shape)) = (f.dtype, &f.shape) else {
            continue;
        };
        let dim = shape
            .iter()
            .map(|d| match d {
                Dim::Known(n) => Dimension {
                    dim_value: i64::try_from(*n).ok(),
                    dim_param: None,
                },
                Dim::Sym(s) => Dimension {
                    dim_value: None,
                    dim_param: Some(s.to_string()),
                },
            })
            .collect();
        out.push(ValueInfoProto {
            name: Some(name.clone()),
            r#type: Some(TypeProto {
                tensor_type: Some(TensorTypeProto {
                    elem_type: Some(dtype.onnx_code()),
                    shape: Some(TensorShapeProto { dim }),
                }),
                ..Default::default()
            }),
        });
    }
    out
}
