//! Writing ONNX: a copy of a model with its inferred shapes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::ir::Dim;
use crate::onnx::OnnxModel;
use crate::onnx::external;
use crate::onnx::infer::{Inferred, Taken};

/// Writes a copy of the model with every inferred node output in value_info
/// (see [`with_value_info`]), atomically: a temporary file renamed into
/// place, unless [`check_copy_at`] refuses it. Returns how many entries
/// were added.
pub fn write_value_info(model: &OnnxModel, inferred: &Inferred, out: &str) -> Result<usize> {
    check_copy_at(model, None, Path::new(out), out)?;
    let (patch, n) = value_info_patch(model, inferred);
    let (mark, rest) = marked(&model.bytes);
    let parts: [&[u8]; 3] = [&mark, rest, &patch];
    crate::output::write_atomic_mapped(std::path::Path::new(out), &parts, model.mapped(), out)?;
    Ok(n)
}

/// A copy of the model with every inferred node output in value_info, and
/// how many entries were added: the model's own bytes, then
/// [`value_info_patch`].
pub fn with_value_info(model: &OnnxModel, inferred: &Inferred) -> (Vec<u8>, usize) {
    let (patch, n) = value_info_patch(model, inferred);
    let (mark, rest) = marked(&model.bytes);
    let mut bytes = Vec::with_capacity(mark.len() + model.bytes.len() + patch.len());
    bytes.extend_from_slice(&mark);
    bytes.extend_from_slice(rest);
    bytes.extend_from_slice(&patch);
    (bytes, n)
}

/// Refuses a copy of `model` at `out` that would lose or destroy its
/// weights kept in external files ([`check_copy_at`]). A copy on standard
/// output is the reader's to place. `taken`: the main graph's nodes, where
/// they were taken out of the model to be inferred one by one.
pub fn check_copy(
    model: &OnnxModel,
    taken: Option<&Taken>,
    out: &crate::output::Output,
) -> Result<()> {
    match out.file() {
        Some(file) => check_copy_at(model, taken, file, out.shown()),
        None => Ok(()),
    }
}

/// Refuses a copy of `model` at `file` (named `shown`) where a tensor
/// anywhere in it (a body, a function, a node's attribute) keeps its data
/// in an external file, and `file` is that file (refused with or without
/// --force: the weights would be lost), or lies in another folder, where
/// the file's name, relative to the model's folder, no longer leads to it.
///
/// Rewriting the names for the new folder is no way out: a name that
/// leads from there to the model's folder climbs out of the copy's
/// folder, and is refused by c3 (and by ONNX) when the copy is read.
/// Copying the data files beside the copy would write files the command
/// does not own (and gigabytes). So the user is told what would work.
pub fn check_copy_at(
    model: &OnnxModel,
    taken: Option<&Taken>,
    file: &Path,
    shown: &str,
) -> Result<()> {
    use crate::error::Error;
    let mut locations = BTreeSet::new();
    external::of_model(&model.model, &mut locations);
    match taken {
        Some(Taken::Nodes(nodes)) => external::of_nodes(nodes, &mut locations),
        // Only a record that holds a location can hold a tensor with one.
        Some(Taken::Encoded(nodes)) => {
            for n in nodes.decode_holding(external::LOCATION_KEY) {
                let n = n.map_err(|message| Error::Input {
                    path: model.path.clone(),
                    message,
                })?;
                external::of_nodes(std::slice::from_ref(&n), &mut locations);
            }
        }
        None => {}
    }
    if locations.is_empty() {
        return Ok(());
    }
    for location in &locations {
        if names_one_file(&model.dir.join(location), file) {
            return Err(Error::Usage(format!(
                "-o {shown}: this is the model's external data file {location}; write the copy to another file"
            )));
        }
    }
    if folder(file) != model.dir.canonicalize().ok() {
        let location = locations.first().map_or("", String::as_str);
        return Err(Error::Usage(format!(
            "-o {shown}: the model keeps weights in {location}, named from its own folder; write the copy in that folder ({}), or copy the model and its data files to the other folder and run c3 on that copy",
            model.dir.display()
        )));
    }
    Ok(())
}

/// The folder `p` is in, resolved; `None` where it cannot be.
fn folder(p: &Path) -> Option<PathBuf> {
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    dir.canonicalize().ok()
}

/// Whether `a` and `b` are one file, or (where `a` is not there yet) the
/// same name in the same folder: a data file the model names but lacks
/// would be the copy.
fn names_one_file(a: &Path, b: &Path) -> bool {
    crate::output::is_same_file(a, b)
        || (a.file_name().is_some() && a.file_name() == b.file_name() && folder(a) == folder(b))
}

/// c3's mark, to write first in a copy of a model, and the model's bytes
/// after the mark an earlier copy put first (all of them where there is
/// none): a copy of a copy carries one mark.
pub fn marked(bytes: &[u8]) -> (Vec<u8>, &[u8]) {
    let mark = crate::output::mark::onnx_mark();
    (mark, &bytes[crate::output::mark::onnx_mark_len(bytes)..])
}

/// What a copy of the model appends to the model's own bytes to carry every
/// inferred node output in value_info, and how many entries that is: a
/// second serialized `ModelProto` holding only them.
/// Protobuf merges it into the first, so the original bytes (weights
/// included) are copied unchanged, and a writer can send them straight from
/// the mapped file.
pub fn value_info_patch(model: &OnnxModel, inferred: &Inferred) -> (Vec<u8>, usize) {
    let (graph, n) = value_info_fields(model, inferred);
    // ModelProto.graph (7).
    let mut patch = Vec::with_capacity(graph.len() + 11);
    put_len(&mut patch, 7, &graph);
    (patch, n)
}

/// Appends a length-delimited field's key and length, `len` bytes of
/// payload to follow.
pub(crate) fn put_prefix(out: &mut Vec<u8>, field: u64, len: usize) {
    use prost::encoding::encode_varint;
    encode_varint((field << 3) | 2, out);
    encode_varint(len as u64, out);
}

/// Appends a length-delimited field.
pub(crate) fn put_len(out: &mut Vec<u8>, field: u64, payload: &[u8]) {
    put_prefix(out, field, payload.len());
    out.extend_from_slice(payload);
}

/// The inferred shapes of the main graph's values that the model does not
/// declare, as the `GraphProto.value_info` fields that carry them, and how
/// many they are.
///
/// Encoded here, field by field, as prost encodes the `ValueInfoProto`s of
/// a graph (the tests hold the two to the same bytes), without building
/// them: on a 111k-node graph that building, prost's sizing of each
/// nesting level again for every level above it, and the freeing were two
/// thirds of writing the copy.
pub(crate) fn value_info_fields(model: &OnnxModel, inferred: &Inferred) -> (Vec<u8>, usize) {
    use prost::encoding::{encode_varint, encoded_len_varint as len_of};
    // A varint field's key, one byte: (field number << 3) | 0, each number
    // below 16; each key in the sizes below is one byte too.
    let key = |field: u64, out: &mut Vec<u8>| out.push((field << 3) as u8);
    // A length-delimited field of `len` bytes, its key included.
    let delimited = |len: usize| 1 + len_of(len as u64) + len;
    let mut graph = Vec::new();
    let mut shape = Vec::new();
    let mut n = 0;
    for (name, dtype, dims) in undeclared_tensors(model, inferred) {
        // TensorShapeProto: each Dimension (field 1), its size (field 1) or
        // its symbol (field 2); a size past i64 is left out, as prost
        // leaves out a `None`.
        shape.clear();
        for d in dims {
            match d {
                Dim::Known(v) => match i64::try_from(*v) {
                    Ok(v) => {
                        put_prefix(&mut shape, 1, 1 + len_of(v as u64));
                        key(1, &mut shape);
                        encode_varint(v as u64, &mut shape);
                    }
                    Err(_) => put_prefix(&mut shape, 1, 0),
                },
                Dim::Sym(sym) => {
                    let sym = sym.to_string();
                    put_prefix(&mut shape, 1, delimited(sym.len()));
                    put_len(&mut shape, 2, sym.as_bytes());
                }
            }
        }
        // An int32 is a varint of its 64-bit sign extension.
        let code = i64::from(dtype.onnx_code()) as u64;
        let tensor = 1 + len_of(code) + delimited(shape.len());
        let type_len = delimited(tensor);
        let info = delimited(name.len()) + delimited(type_len);
        // GraphProto.value_info (13): ValueInfoProto { name (1), type (2):
        // TypeProto { tensor_type (1): TensorTypeProto { elem_type (1),
        // shape (2) } } }.
        put_prefix(&mut graph, 13, info);
        put_len(&mut graph, 1, name.as_bytes());
        put_prefix(&mut graph, 2, type_len);
        put_prefix(&mut graph, 1, tensor);
        key(1, &mut graph);
        encode_varint(code, &mut graph);
        put_len(&mut graph, 2, &shape);
        n += 1;
    }
    (graph, n)
}

/// The main graph's values whose inferred type and shape a copy of the
/// model adds: tensors with both known, in the order they were inferred,
/// that the model does not declare (as an input, output, value_info or
/// initializer).
fn undeclared_tensors<'a>(
    model: &'a OnnxModel,
    inferred: &'a Inferred,
) -> impl Iterator<Item = (&'a str, crate::ir::DType, &'a [Dim])> {
    let mut declared: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
    if let Some(g) = model.model.graph.as_ref() {
        for v in g.input.iter().chain(&g.output).chain(&g.value_info) {
            declared.insert(v.name.as_deref().unwrap_or(""));
        }
        for t in &g.initializer {
            declared.insert(t.name.as_deref().unwrap_or(""));
        }
    }
    inferred.values.iter().filter_map(move |(name, f)| {
        if declared.contains(name.as_str()) || f.kind != crate::shape::ValueKind::Tensor {
            return None;
        }
        Some((name.as_str(), f.dtype?, f.shape.as_deref()?))
    })
}

/// [`value_info_fields`] as `ValueInfoProto`s, for prost to encode: what
/// the tests hold the hand encoding to.
#[cfg(test)]
fn inferred_value_info(
    model: &OnnxModel,
    inferred: &Inferred,
) -> Vec<crate::proto::ValueInfoProto> {
    use crate::proto::{Dimension, TensorShapeProto, TensorTypeProto, TypeProto, ValueInfoProto};
    undeclared_tensors(model, inferred)
        .map(|(name, dtype, shape)| {
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
            ValueInfoProto {
                name: Some(name.to_string()),
                r#type: Some(TypeProto {
                    tensor_type: Some(TensorTypeProto {
                        elem_type: Some(dtype.onnx_code()),
                        shape: Some(TensorShapeProto { dim }),
                    }),
                    ..Default::default()
                }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::DType;
    use crate::onnx::build::{FLOAT, tensor_type, value};
    use crate::onnx::infer::test_model::model;
    use crate::proto::{GraphProto, ModelProto, TensorProto};
    use crate::shape::Fact;
    use prost::Message;

    /// prost's encoding of the patch: the `ValueInfoProto`s built, then
    /// encoded as a model holding them alone.
    fn by_prost(m: &OnnxModel, inferred: &Inferred) -> Vec<u8> {
        ModelProto {
            graph: Some(GraphProto {
                value_info: inferred_value_info(m, inferred),
                ..Default::default()
            }),
            ..Default::default()
        }
        .encode_to_vec()
    }

    fn inferred(values: Vec<(&str, Fact)>) -> Inferred {
        let values = values.into_iter().map(|(n, f)| (n.to_string(), f));
        Inferred {
            values: values.collect(),
            ..Default::default()
        }
    }

    /// Every kind of entry and of size, against prost: sizes of one to six
    /// varint bytes and zero, a size past i64 (left out), symbols (a name,
    /// a product), a scalar, a name of 200 bytes (a two-byte length); and
    /// what is left out: a declared input, output, value_info or
    /// initializer, a sequence, an unknown shape.
    #[test]
    fn the_patch_is_the_bytes_prost_makes() {
        let mut g = GraphProto {
            input: vec![value("x", tensor_type(FLOAT, &["2"]))],
            output: vec![value("y", tensor_type(FLOAT, &["2"]))],
            value_info: vec![value("v", tensor_type(FLOAT, &["2"]))],
            ..Default::default()
        };
        g.initializer.push(TensorProto {
            name: Some("w".into()),
            ..Default::default()
        });
        let m = model(g, 17);
        let known = |d: &[u64]| d.iter().map(|&n| Dim::Known(n)).collect::<Vec<_>>();
        let product = crate::ir::SymInt::sym("batch")
            .mul(&crate::ir::SymInt::sym("seq"))
            .unwrap();
        let product = Dim::from_symint(&product).unwrap();
        let long = "n".repeat(200);
        let values = vec![
            ("x", Fact::new(DType::Float32, known(&[2]))),
            (
                "a",
                Fact::new(DType::Float32, known(&[1, 127, 128, 1 << 40])),
            ),
            ("huge", Fact::new(DType::Int64, known(&[u64::MAX, 3]))),
            ("y", Fact::new(DType::Float32, known(&[2]))),
            (
                "sym",
                Fact::new(
                    DType::Float16,
                    vec![Dim::symbol("batch"), product, Dim::Known(0)],
                ),
            ),
            ("scalar", Fact::new(DType::Bool, Vec::new())),
            ("v", Fact::new(DType::Float32, known(&[2]))),
            ("w", Fact::new(DType::Float32, known(&[2]))),
            ("seq", Fact::sequence(Some(DType::Float32), Vec::new())),
            ("unknown", Fact::tensor(Some(DType::Float32), None)),
            (long.as_str(), Fact::new(DType::Uint8, known(&[5]))),
        ];
        let inferred = inferred(values);
        let (patch, n) = value_info_patch(&m, &inferred);
        assert_eq!(patch, by_prost(&m, &inferred));
        // a, huge, sym, scalar and the long name.
        assert_eq!(n, 5);
        let back = ModelProto::decode(&patch[..]).unwrap().graph.unwrap();
        let names: Vec<_> = back
            .value_info
            .iter()
            .map(|v| v.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a", "huge", "sym", "scalar", long.as_str()]);
        // No entry at all: an empty graph, as prost writes a default one.
        let (patch, n) = value_info_patch(&m, &self::inferred(Vec::new()));
        assert_eq!((patch.as_slice(), n), (&[0x3a, 0][..], 0));
    }

    /// Every real export, as inferred: the same bytes as prost's.
    #[test]
    fn real_exports_patch_as_prost_does() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/exports");
        for name in ["resnet18_int8", "fasterrcnn", "mvit", "mixtral", "ssdlite"] {
            let path = dir.join(format!("{name}.onnx"));
            let m = crate::onnx::load(path.to_str().unwrap()).unwrap();
            let inferred = crate::onnx::infer::infer(&m, &Default::default()).unwrap();
            let (patch, n) = value_info_patch(&m, &inferred);
            assert!(n > 50, "{name}: {n}");
            assert!(patch == by_prost(&m, &inferred), "{name}");
        }
    }
}

#[cfg(test)]
mod copy_tests {
    use super::*;
    use crate::onnx::build::{FLOAT, GraphBuilder, node, raw_tensor, sized_value, tensor_attr};
    use crate::proto::{StringStringEntryProto, TensorProto};
    use prost::Message;

    /// A main-graph Constant whose value is in `w.bin`, loaded as an
    /// estimate loads it: its node record left encoded, out of the model.
    /// The copy check finds it in the record; without the record it is
    /// not seen, which is why `shapes -o` checks before inferring.
    #[test]
    fn a_node_left_encoded_is_checked_from_its_record() {
        let value = TensorProto {
            data_location: Some(1),
            external_data: vec![StringStringEntryProto {
                key: Some("location".into()),
                value: Some("w.bin".into()),
            }],
            ..raw_tensor("k", FLOAT, &[4], None)
        };
        let mut constant = node("Constant", &[], &["k"]);
        constant.attribute.push(tensor_attr("value", value));
        let m = GraphBuilder::new()
            .input(sized_value("x", FLOAT, &[4]))
            .node(constant)
            .node(node("Add", &["x", "k"], &["y"]))
            .output(sized_value("y", FLOAT, &[4]))
            .model(17);
        let dir = std::env::temp_dir().join(format!("c3-copy-check-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("other")).unwrap();
        std::fs::write(dir.join("w.bin"), [0u8; 16]).unwrap();
        let path = dir.join("m.onnx");
        std::fs::write(&path, m.encode_to_vec()).unwrap();
        let (model, encoded) = crate::onnx::load_encoded(path.to_str().unwrap()).unwrap();
        assert!(model.model.graph.as_ref().unwrap().node.is_empty());
        let taken = Taken::Encoded(encoded.unwrap());
        let elsewhere = dir.join("other/copy.onnx");
        let err = check_copy_at(&model, Some(&taken), &elsewhere, "copy.onnx").unwrap_err();
        assert!(err.to_string().contains("keeps weights in w.bin"), "{err}");
        let err = check_copy_at(&model, Some(&taken), &dir.join("w.bin"), "w.bin").unwrap_err();
        assert!(
            err.to_string().contains("external data file w.bin"),
            "{err}"
        );
        check_copy_at(&model, Some(&taken), &dir.join("copy.onnx"), "copy.onnx").unwrap();
        check_copy_at(&model, None, &elsewhere, "copy.onnx").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
