//! The ONNX front end: a model file's records read without its weights
//! ([`read`]) and decoded zero-copy with prost.
//!
//! Loading checks what can be checked without touching weight bytes: every
//! tensor's declared shape against its stored size, every external data
//! location (it must stay inside the model's folder), dimensions, nesting.
//! [`infer`] then walks the graph and infers every value's shape.

pub mod annotate;
pub mod build;
mod encoded;
mod external;
pub mod infer;
pub mod nonzero;
pub use crate::proto;
pub mod read;
pub mod tensor;
mod wire;
pub mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
pub use encoded::{Encoded, Outline};
use proto::{GraphProto, ModelProto};

pub use crate::ir::{MAX_GRAPH_DEPTH, MAX_MESSAGE_DEPTH, MAX_NODES, MAX_RANK, domain_key};

/// A loaded model: the decoded message, backed by the mapped file.
pub struct OnnxModel {
    pub path: String,
    /// The model's folder: external data must stay inside it.
    pub dir: PathBuf,
    pub model: ModelProto,
    /// Opset version by domain (`""` for ai.onnx).
    pub opsets: BTreeMap<String, i64>,
    /// The mapped file (or the bytes the model was decoded from); tensor
    /// data are slices of it. Touched only where a value is read and when
    /// the model is copied (`shapes -o`, `annotate`).
    pub bytes: Bytes,
    /// The open file `bytes` map, when they map one: a copy of the model
    /// copies its large spans from it ([`OnnxModel::mapped`]).
    pub file: Option<std::fs::File>,
}

impl OnnxModel {
    /// Its main graph's nodes as other tools know them (in file order); empty
    /// when the nodes were taken out of the model.
    pub fn identities(&self) -> Vec<crate::ir::NodeIdentity> {
        let Some(g) = &self.model.graph else {
            return Vec::new();
        };
        g.node
            .iter()
            .enumerate()
            .map(|(index, n)| crate::ir::NodeIdentity {
                index,
                name: n.name.clone().unwrap_or_default(),
                op: n.op_type.clone().unwrap_or_default(),
                outputs: n.output.iter().filter(|o| !o.is_empty()).cloned().collect(),
            })
            .collect()
    }

    /// The file the model's bytes map, and the mapping, for a writer to
    /// copy large spans of it from the file ([`crate::output::Mapped`]).
    pub fn mapped(&self) -> Option<crate::output::Mapped<'_>> {
        self.file.as_ref().map(|file| crate::output::Mapped {
            file,
            bytes: &self.bytes,
        })
    }
}

fn bad(path: &str, message: impl Into<String>) -> Error {
    Error::Input {
        path: path.to_string(),
        message: message.into(),
    }
}

/// Loads and checks a model file. Its records are read with positioned
/// reads and its large tensor payloads left where they are (see [`read`]):
/// the file is also mapped, so such a payload is a slice of the mapping,
/// read only when the model is copied.
pub fn load(path: &str) -> Result<OnnxModel> {
    let (file, bytes) = mapped(path)?;
    let skimmed = read::skim(&file).map_err(|e| Error::io(path, e))?;
    let mut model = decode_checked(Records::Copied(&skimmed), bytes, path)?.0;
    model.file = Some(file);
    Ok(model)
}

/// [`load`], with the main graph's node records left encoded and handed
/// back beside the model (whose graph then holds no node): for a caller
/// that infers the model once, decoding each node in its turn. `None`
/// when the records are not plainly readable: the model then holds them.
pub fn load_encoded(path: &str) -> Result<(OnnxModel, Option<Encoded>)> {
    let (file, bytes) = mapped(path)?;
    let file_len = bytes.len();
    // The copy is counted and decoded while the looker reads the last
    // records (on a large model a millisecond or more); what came of it
    // counts once the whole model is checked.
    let (skimmed, blocks, early) = read::skim_aside_then(&file, |copy| {
        let counted = wire::count_copy(copy, file_len)?;
        // More records of values than the nodes set aside can name: the
        // model is refused once they are counted, not decoded first.
        if !counted.values_may_fit(file_len.saturating_sub(copy.len())) {
            return None;
        }
        let decoded = decode_sized(copy.clone(), counted.main(), true);
        Some(Box::new(Early { counted, decoded }))
    })
    .map_err(|e| Error::io(path, e))?;
    let (mut model, encoded) = decode_checked(
        Records::Aside(skimmed, blocks, early.flatten()),
        bytes,
        path,
    )?;
    model.file = Some(file);
    Ok((model, encoded))
}

/// The copy of a model whose records were set aside, counted and decoded
/// before the records were counted ([`load_encoded`]).
struct Early {
    counted: wire::Counted,
    decoded: Decoded,
}

/// A model as decoding left it, and whether decoding finished.
type Decoded = (ModelProto, Result<(), prost::DecodeError>);

/// `bytes` decoded into a model whose main graph's lists are first made
/// the size `main` counted. `aside`: the main graph's node records were set
/// aside, and its node list stays empty.
fn decode_sized(bytes: impl bytes::Buf, main: wire::MainGraph, aside: bool) -> Decoded {
    let mut model = ModelProto::default();
    // A model with nodes or initializers has a graph, so decoding into one
    // already there changes nothing.
    if main.nodes > 0 || main.initializers > 0 {
        model.graph = Some(GraphProto {
            node: Vec::with_capacity(if aside { 0 } else { main.nodes }),
            initializer: Vec::with_capacity(main.initializers),
            ..GraphProto::default()
        });
    }
    let done = model.merge(bytes);
    (model, done)
}

/// The model file, open and mapped. Its records are then read from the
/// file without their large payloads ([`read::skim`]).
fn mapped(path: &str) -> Result<(std::fs::File, Bytes)> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(bad(path, "not a file"));
    }
    if meta.len() == 0 {
        return Err(bad(path, "empty file"));
    }
    read::advise_random(&file);
    // SAFETY: the mapping is read-only; c3 reads the model once and exits.
    // Another process truncating the file meanwhile could fault, as with any
    // memory-mapped reader; that is the price of never copying weights.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    // Pages touched are read alone, not with their neighbours. A failed
    // hint changes nothing but speed.
    let _ = map.advise(memmap2::Advice::Random);
    Ok((file, Bytes::from_owner(map)))
}

/// The bytes a model's records are decoded from.
enum Records<'a> {
    /// The model's own bytes: what decoding keeps of them (small tensor
    /// payloads) are slices of them.
    Shared(Bytes),
    /// The copy [`read::skim`] made: what decoding keeps is copied out, so
    /// the copy is freed once decoded.
    Copied(&'a [u8]),
    /// The copy [`read::skim_aside_then`] made, and the main graph's node
    /// records it set aside (left encoded, [`Encoded`]); `None` when it
    /// could not, and the copy holds them. What decoding keeps of the copy
    /// are slices of it. With the copy already counted and decoded, when it
    /// was while the records were looked at.
    Aside(Bytes, Option<encoded::Blocks>, Option<Box<Early>>),
}

/// Decodes and checks a model held in memory; `path` names it in errors and
/// gives the folder external data is read from.
pub fn from_bytes(bytes: Bytes, path: &str) -> Result<OnnxModel> {
    Ok(decode_checked(Records::Shared(bytes.clone()), bytes, path)?.0)
}

/// Decodes `records` (the model's bytes, or the skimmed copy of them
/// [`read::skim`] makes), whose stored payloads are slices of `bytes`;
/// with the main graph's node records left encoded when `records` asks.
fn decode_checked(
    records: Records<'_>,
    bytes: Bytes,
    path: &str,
) -> Result<(OnnxModel, Option<Encoded>)> {
    let (wire, aside): (&[u8], _) = match &records {
        Records::Shared(b) => (b, None),
        Records::Copied(b) => (b, None),
        Records::Aside(b, blocks, _) => (b, blocks.as_ref()),
    };
    let main = match &records {
        Records::Aside(_, _, Some(early)) => wire::check_counted(early.counted, aside, bytes.len()),
        _ => wire::check(wire, aside, bytes.len()),
    }
    .map_err(|m| bad(path, m))?;
    // The main graph's lists are made their size at once.
    let ((mut model, decoded), kept) = match records {
        Records::Aside(_, blocks, Some(early)) => (early.decoded, blocks),
        // Decoded from shared bytes: the small payloads kept (shapes,
        // biases) are slices of the copy, not copies of their own; the copy
        // lives as long as they do (until the estimate lets go of the
        // initializers).
        Records::Aside(b, blocks, None) => {
            let aside = blocks.is_some();
            (decode_sized(b, main, aside), blocks)
        }
        Records::Shared(b) => (decode_sized(b, main, false), None),
        Records::Copied(b) => (decode_sized(b, main, false), None),
    };
    decoded.map_err(|e| {
        bad(
            path,
            format!("not a valid ONNX model: {}", decode_message(&e)),
        )
    })?;
    read::attach(&mut model, &bytes).map_err(|m| bad(path, m))?;
    let Some(graph) = &model.graph else {
        return Err(bad(path, "not an ONNX model: it has no graph"));
    };
    let opsets = opset_map(&model.opset_import).map_err(|m| bad(path, m))?;
    let dir = Path::new(path)
        .parent()
        .map(Path::to_path_buf)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    let mut files = tensor::ExternalFiles::new(&dir);
    check_graph(graph, &mut files, 0).map_err(|m| bad(path, m))?;
    for f in &model.functions {
        let name = f.name.as_deref().unwrap_or("");
        let here = |m: String| bad(path, format!("function '{name}': {m}"));
        opset_map(&f.opset_import).map_err(here)?;
        check_nodes(&f.node, &mut files, 1).map_err(here)?;
        // A default stands for the attribute a call leaves out: its tensor
        // is vetted as the body's own.
        for a in &f.attribute_proto {
            check_attr_graphs(a, &mut files, 1).map_err(here)?;
        }
    }
    let encoded = kept.map(|blocks| Encoded::new(blocks, bytes.clone(), dir.clone()));
    let model = OnnxModel {
        path: path.to_string(),
        dir,
        model,
        opsets,
        bytes,
        file: None,
    };
    Ok((model, encoded))
}

/// Opset version by domain. A version below 1 exists in no domain; a domain
/// imported twice at different versions has no version at all.
pub fn opset_map(list: &[proto::OperatorSetIdProto]) -> Result<BTreeMap<String, i64>, String> {
    let mut opsets = BTreeMap::new();
    for o in list {
        let shown = o.domain.as_deref().unwrap_or("");
        let d = domain_key(shown).to_string();
        let v = o.version.unwrap_or(1);
        if v < 1 {
            return Err(format!(
                "opset_import: domain '{shown}' version {v} does not exist (versions start at 1)"
            ));
        }
        if let Some(old) = opsets.insert(d, v)
            && old != v
        {
            return Err(format!(
                "opset_import lists domain '{shown}' twice, at versions {old} and {v}"
            ));
        }
    }
    Ok(opsets)
}

/// prost's message, without its prefix and with the path of fields cut to
/// its first few steps (a file nested 100 deep would print all 100).
fn decode_message(e: &prost::DecodeError) -> String {
    let s = e.to_string();
    let s = s
        .strip_prefix("failed to decode Protobuf message: ")
        .unwrap_or(&s);
    let mut parts: Vec<&str> = s.split(": ").collect();
    let last = parts.pop().unwrap_or("");
    let last = if last == "recursion limit reached" {
        format!("messages nest deeper than the limit of {MAX_MESSAGE_DEPTH} levels")
    } else {
        last.to_string()
    };
    if parts.len() > 3 {
        let more = parts.len() - 3;
        parts.truncate(3);
        format!("{}: ({more} more): {last}", parts.join(": "))
    } else {
        parts.push(&last);
        parts.join(": ")
    }
}

fn check_attr_graphs(
    a: &proto::AttributeProto,
    files: &mut tensor::ExternalFiles<'_>,
    depth: usize,
) -> Result<(), String> {
    if let Some(t) = &a.t {
        tensor::check_in(t, files)
            .map_err(|m| format!("attribute '{}': {m}", a.name.as_deref().unwrap_or("")))?;
    }
    for t in &a.tensors {
        tensor::check_in(t, files)
            .map_err(|m| format!("attribute '{}': {m}", a.name.as_deref().unwrap_or("")))?;
    }
    if let Some(sp) = &a.sparse_tensor {
        tensor::check_sparse(sp, files)
            .map_err(|m| format!("attribute '{}': {m}", a.name.as_deref().unwrap_or("")))?;
    }
    for g in a.g.iter().map(|g| &**g).chain(a.graphs.iter()) {
        check_graph(g, files, depth)?;
    }
    Ok(())
}

/// Checks a graph and its subgraphs: tensors' sizes and external locations,
/// declared dimensions, nesting depth, unique initializer names.
fn check_graph(
    g: &GraphProto,
    files: &mut tensor::ExternalFiles<'_>,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_GRAPH_DEPTH {
        return Err(format!(
            "subgraphs nest deeper than the limit of {MAX_GRAPH_DEPTH} levels"
        ));
    }
    // Hashed as the walk's tables are (FxHash): SipHash, the standard
    // set's, cost a model of 70k initializers 7 million instructions here.
    let mut names: rustc_hash::FxHashSet<&str> =
        rustc_hash::FxHashSet::with_capacity_and_hasher(g.initializer.len(), Default::default());
    for t in &g.initializer {
        let name = t.name.as_deref().unwrap_or("");
        if !names.insert(name) {
            return Err(format!("initializer '{name}' is defined twice"));
        }
        tensor::check_in(t, files).map_err(|m| format!("initializer '{name}': {m}"))?;
    }
    for (i, sp) in g.sparse_initializer.iter().enumerate() {
        let name = sp
            .values
            .as_ref()
            .and_then(|v| v.name.as_deref())
            .unwrap_or("");
        tensor::check_sparse(sp, files)
            .map_err(|m| format!("sparse initializer {} '{name}': {m}", i + 1))?;
    }
    for v in g.input.iter().chain(&g.output).chain(&g.value_info) {
        if let Some(t) = &v.r#type {
            check_type(t).map_err(|m| format!("'{}' {m}", v.name.as_deref().unwrap_or("")))?;
        }
    }
    check_nodes(&g.node, files, depth + 1)
}

/// Checks nodes and, at `depth`, the graphs of their attributes.
fn check_nodes(
    nodes: &[proto::NodeProto],
    files: &mut tensor::ExternalFiles<'_>,
    depth: usize,
) -> Result<(), String> {
    for n in nodes {
        let name = n.name.as_deref().unwrap_or("");
        if n.op_type.as_deref().unwrap_or("").is_empty() {
            return Err(format!("node '{name}' has no op_type"));
        }
        for a in &n.attribute {
            check_attr_graphs(a, files, depth).map_err(|m| format!("node '{name}': {m}"))?;
        }
    }
    Ok(())
}

/// A declared type's shapes (nested in sequences, optionals and maps too):
/// rank within [`MAX_RANK`], no negative dimension. The decoder bounds the
/// nesting.
fn check_type(t: &proto::TypeProto) -> Result<(), String> {
    for tt in t.tensor_type.iter().chain(&t.sparse_tensor_type) {
        if let Some(shape) = &tt.shape {
            if shape.dim.len() > MAX_RANK {
                return Err(format!(
                    "has rank {}, which exceeds the limit of {MAX_RANK}",
                    shape.dim.len()
                ));
            }
            // -1 is how some exporters (paddle2onnx) write "unknown".
            if let Some(d) = shape
                .dim
                .iter()
                .find_map(|d| d.dim_value.filter(|v| *v < -1))
            {
                return Err(format!("declares a negative dimension {d}"));
            }
        }
    }
    let inner = t
        .sequence_type
        .iter()
        .chain(&t.optional_type)
        .filter_map(|e| e.elem_type.as_ref())
        .chain(t.map_type.iter().filter_map(|m| m.value_type.as_ref()));
    for e in inner {
        check_type(e)?;
    }
    Ok(())
}
