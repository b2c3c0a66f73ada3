//! The ONNX front end: a memory-mapped file decoded zero-copy with prost.
//!
//! Loading checks what can be checked without touching weight bytes: every
//! tensor's declared shape against its stored size, every external data
//! location (it must stay inside the model's folder), dimensions, nesting.
//! [`infer`] then walks the graph and infers every value's shape.

pub mod infer;
pub mod proto;
pub mod tensor;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use proto::{GraphProto, ModelProto};

/// Subgraphs (If/Loop/Scan bodies) may nest this deep.
pub const MAX_GRAPH_DEPTH: usize = 64;
/// Tensor rank limit for declared shapes.
pub const MAX_RANK: usize = 64;

/// A loaded model: the decoded message, backed by the mapped file.
pub struct OnnxModel {
    pub path: String,
    /// The model's folder: external data must stay inside it.
    pub dir: PathBuf,
    pub model: ModelProto,
    /// Opset version by domain (`""` for ai.onnx).
    pub opsets: BTreeMap<String, i64>,
    /// The mapped file; tensor data are slices of it.
    pub bytes: Bytes,
}

fn bad(path: &str, message: impl Into<String>) -> Error {
    Error::Input {
        path: path.to_string(),
        message: message.into(),
    }
}

/// Normalizes `ai.onnx` to `""`.
pub fn domain_key(d: &str) -> &str {
    if d == "ai.onnx" { "" } else { d }
}

/// Loads and checks a model file.
pub fn load(path: &str) -> Result<OnnxModel> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(bad(path, "not a file"));
    }
    if meta.len() == 0 {
        return Err(bad(path, "empty file"));
    }
    // SAFETY: the mapping is read-only; c3 reads the model once and exits.
    // Another process truncating the file meanwhile could fault, as with any
    // memory-mapped reader; that is the price of never copying weights.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    let bytes = Bytes::from_owner(map);
    from_bytes(bytes, path)
}

/// Decodes and checks a model held in memory; `path` names it in errors and
/// gives the folder external data is read from.
pub fn from_bytes(bytes: Bytes, path: &str) -> Result<OnnxModel> {
    let model = ModelProto::decode(bytes.clone()).map_err(|e| {
        bad(
            path,
            format!("not a valid ONNX model: {}", decode_message(&e)),
        )
    })?;
    let Some(graph) = &model.graph else {
        return Err(bad(path, "not an ONNX model: it has no graph"));
    };
    let mut opsets = BTreeMap::new();
    for o in &model.opset_import {
        let d = domain_key(o.domain.as_deref().unwrap_or("")).to_string();
        opsets.insert(d, o.version.unwrap_or(1));
    }
    let dir = Path::new(path)
        .parent()
        .map(Path::to_path_buf)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    check_graph(graph, &dir, 0).map_err(|m| bad(path, m))?;
    for f in &model.functions {
        for n in &f.node {
            for a in &n.attribute {
                check_attr_graphs(a, &dir, 1).map_err(|m| bad(path, m))?;
            }
        }
    }
    Ok(OnnxModel {
        path: path.to_string(),
        dir,
        model,
        opsets,
        bytes,
    })
}

fn decode_message(e: &prost::DecodeError) -> String {
    let s = e.to_string();
    s.strip_prefix("failed to decode Protobuf message: ")
        .unwrap_or(&s)
        .to_string()
}

fn check_attr_graphs(a: &proto::AttributeProto, dir: &Path, depth: usize) -> Result<(), String> {
    if let Some(t) = &a.t {
        tensor::check(t, dir)
            .map_err(|m| format!("attribute '{}': {m}", a.name.as_deref().unwrap_or("")))?;
    }
    for t in &a.tensors {
        tensor::check(t, dir)?;
    }
    for g in a.g.iter().map(|g| &**g).chain(a.graphs.iter()) {
        check_graph(g, dir, depth)?;
    }
    Ok(())
}

/// Checks a graph and its subgraphs: tensors' sizes and external locations,
/// declared dimensions, nesting depth.
fn check_graph(g: &GraphProto, dir: &Path, depth: usize) -> Result<(), String> {
    if depth > MAX_GRAPH_DEPTH {
        return Err(format!(
            "subgraphs nest deeper than {MAX_GRAPH_DEPTH} levels"
        ));
    }
    for t in &g.initializer {
        let name = t.name.as_deref().unwrap_or("");
        if t.dims.len() > MAX_RANK {
            return Err(format!(
                "initializer '{name}' has rank {}, more than {MAX_RANK}",
                t.dims.len()
            ));
        }
        tensor::check(t, dir).map_err(|m| format!("initializer '{name}': {m}"))?;
    }
    for v in g.input.iter().chain(&g.output).chain(&g.value_info) {
        if let Some(tt) = v.r#type.as_ref().and_then(|t| t.tensor_type.as_ref())
            && let Some(shape) = &tt.shape
        {
            if shape.dim.len() > MAX_RANK {
                return Err(format!(
                    "'{}' has rank {}, more than {MAX_RANK}",
                    v.name.as_deref().unwrap_or(""),
                    shape.dim.len()
                ));
            }
            // -1 is how some exporters (paddle2onnx) write "unknown".
            if let Some(d) = shape
                .dim
                .iter()
                .find_map(|d| d.dim_value.filter(|v| *v < -1))
            {
                return Err(format!(
                    "'{}' declares a negative dimension {d}",
                    v.name.as_deref().unwrap_or("")
                ));
            }
        }
    }
    for n in &g.node {
        if n.op_type.as_deref().unwrap_or("").is_empty() {
            return Err(format!(
                "node '{}' has no op_type",
                n.name.as_deref().unwrap_or("")
            ));
        }
        for a in &n.attribute {
            check_attr_graphs(a, dir, depth + 1)
                .map_err(|m| format!("node '{}': {m}", n.name.as_deref().unwrap_or("")))?;
        }
    }
    Ok(())
}
