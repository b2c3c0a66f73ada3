//! The operator trace front end: a JSON list of layers, as a framework hook
//! (like the original tool's Chainer FunctionHook) writes it.
//!
//! ```json
//! {"layers": [{"op": "Conv", "domain": "", "name": "conv1",
//!              "attrs": {"strides": [2, 2], "group": 1},
//!              "inputs": [{"shape": [1, 3, 224, 224], "dtype": "float32"}, null],
//!              "outputs": [{"shape": [1, 64, 112, 112]}]}]}
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::ir::{AttrValue, DEFAULT_OPSET, DType, Dim, Graph, Node, TensorFact, name_unnamed};
use crate::ir::{MAX_NODES, MAX_RANK};

#[derive(Deserialize)]
struct TraceFile {
    layers: Vec<TraceLayer>,
    /// Opset of the default domain for every layer that names none.
    #[serde(default)]
    opset: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceLayer {
    op: String,
    #[serde(default)]
    domain: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    opset: Option<i64>,
    #[serde(default)]
    attrs: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    inputs: Vec<Option<TraceTensor>>,
    #[serde(default)]
    outputs: Vec<Option<TraceTensor>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceTensor {
    shape: Vec<TraceDim>,
    #[serde(default)]
    dtype: Option<String>,
    /// The tensor's name, linking producers to consumers.
    #[serde(default)]
    name: Option<String>,
    /// A constant of the model (weight, bias, statistics).
    #[serde(default, rename = "const")]
    constant: bool,
}

enum TraceDim {
    Size(i64),
    Symbol(String),
}

/// A size or a name; a size that does not fit 64 bits is refused where it
/// stands (serde's untagged enums would only say that nothing matched).
impl<'de> Deserialize<'de> for TraceDim {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct DimVisitor;
        impl serde::de::Visitor<'_> for DimVisitor {
            type Value = TraceDim;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a dimension: a size or a symbol name")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<TraceDim, E> {
                Ok(TraceDim::Size(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<TraceDim, E> {
                i64::try_from(v).map(TraceDim::Size).map_err(|_| {
                    E::custom(format!(
                        "dimension {v} exceeds the limit of {} (2^63 - 1)",
                        i64::MAX
                    ))
                })
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<TraceDim, E> {
                Err(E::custom(format!("dimension {v:?} is not an integer")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<TraceDim, E> {
                Ok(TraceDim::Symbol(v.to_string()))
            }
        }
        d.deserialize_any(DimVisitor)
    }
}

/// Trace files larger than this are refused before they are read.
pub const MAX_TRACE_BYTES: u64 = 256 * 1024 * 1024;
/// JSON nesting depth: serde_json's own limit, which refuses deeper input.
pub const MAX_JSON_DEPTH: usize = 128;

/// Traces up to this size are read whole (parsing from memory is faster);
/// larger ones are parsed as they are read, so that memory follows what the
/// file holds rather than its length (a file of blanks costs nothing).
const READ_WHOLE_BYTES: u64 = 32 * 1024 * 1024;

/// Reads a trace file. Its bytes are counted while they are read, not
/// taken from what the file system reports (a /proc file or a pipe reports
/// 0): past `MAX_TRACE_BYTES` reading stops and the trace is refused.
pub fn read_trace(path: &str) -> Result<Graph> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let too_big = || Error::Input {
        path: path.to_string(),
        message: format!(
            "trace file exceeds the limit of {MAX_TRACE_BYTES} bytes (MAX_TRACE_BYTES)"
        ),
    };
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if len > MAX_TRACE_BYTES {
        return Err(too_big());
    }
    let mut head = Vec::new();
    (&mut file)
        .take(READ_WHOLE_BYTES + 1)
        .read_to_end(&mut head)
        .map_err(|e| Error::io(path, e))?;
    if head.len() as u64 <= READ_WHOLE_BYTES {
        return parse_trace(&head, path);
    }
    // Longer: what came so far, then the rest as it is parsed, cut at the
    // limit (one byte more than allowed makes the refusal certain).
    let rest = std::io::Cursor::new(head)
        .chain(file)
        .take(MAX_TRACE_BYTES + 1);
    let mut counted = Counted {
        inner: rest,
        seen: 0,
    };
    let parsed = serde_json::from_reader(std::io::BufReader::with_capacity(1 << 16, &mut counted));
    if counted.seen > MAX_TRACE_BYTES {
        return Err(too_big());
    }
    from_file(parsed, path)
}

/// A reader that counts the bytes it passes on.
struct Counted<R> {
    inner: R,
    seen: u64,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen += n as u64;
        Ok(n)
    }
}

/// Parses trace JSON; `path` is only used in error messages.
pub fn parse_trace(bytes: &[u8], path: &str) -> Result<Graph> {
    from_file(serde_json::from_slice(bytes), path)
}

fn from_file(file: serde_json::Result<TraceFile>, path: &str) -> Result<Graph> {
    let bad = |message: String| Error::Input {
        path: path.to_string(),
        message,
    };
    let file: TraceFile = file.map_err(|e| {
        let mut message = strip_position(&e.to_string());
        if message == "recursion limit exceeded" {
            message = format!("JSON nesting exceeds the limit of {MAX_JSON_DEPTH} levels");
        }
        bad(format!(
            "line {} column {}: not a valid trace: {message}",
            e.line(),
            e.column(),
        ))
    })?;
    if file.layers.len() > MAX_NODES {
        return Err(bad(format!(
            "{} layers, which exceeds the limit of {MAX_NODES} layers",
            file.layers.len()
        )));
    }
    let default_opset = file.opset.unwrap_or(DEFAULT_OPSET);
    let mut nodes = Vec::with_capacity(file.layers.len());
    for (i, layer) in file.layers.into_iter().enumerate() {
        let here = |m: String| bad(format!("layer {} ({}): {m}", i + 1, layer.op));
        if layer.op.is_empty() {
            return Err(here("\"op\" is empty".into()));
        }
        let mut attrs = BTreeMap::new();
        for (k, v) in &layer.attrs {
            attrs.insert(
                k.clone(),
                attr_from_json(v).map_err(|m| here(format!("attribute {k}: {m}")))?,
            );
        }
        let tensors = |list: &[Option<TraceTensor>], side: &str| {
            list.iter()
                .enumerate()
                .map(|(j, t)| {
                    t.as_ref()
                        .map(|t| {
                            tensor_from_trace(t).map_err(|m| here(format!("{side} {}: {m}", j + 1)))
                        })
                        .transpose()
                })
                .collect::<Result<Vec<_>>>()
        };
        let inputs = tensors(&layer.inputs, "input")?;
        let outputs = tensors(&layer.outputs, "output")?;
        let domain = crate::ir::domain_key(&layer.domain).to_string();
        nodes.push(Node {
            name: layer.name.clone(),
            op: layer.op.clone(),
            domain,
            opset: layer.opset.unwrap_or(default_opset),
            attrs,
            inputs,
            outputs,
            bodies: Vec::new(),
        });
    }
    name_unnamed(&mut nodes);
    Ok(Graph {
        nodes,
        ..Graph::default()
    })
}

fn strip_position(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

fn tensor_from_trace(t: &TraceTensor) -> Result<TensorFact, String> {
    let dtype = match &t.dtype {
        None => DType::Float32,
        Some(name) => DType::parse(name).ok_or_else(|| format!("unknown dtype '{name}'"))?,
    };
    if t.shape.len() > MAX_RANK {
        return Err(format!(
            "rank {}, which exceeds the limit of {MAX_RANK}",
            t.shape.len()
        ));
    }
    let shape = t
        .shape
        .iter()
        .map(|d| match d {
            TraceDim::Size(n) if *n >= 0 => Ok(Dim::Known(*n as u64)),
            TraceDim::Size(n) => Err(format!("negative dimension {n}")),
            TraceDim::Symbol(s) if is_symbol(s) => Ok(Dim::symbol(s.clone())),
            TraceDim::Symbol(s) => Err(format!("dimension {s:?} is neither a number nor a name")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TensorFact {
        constant: t.constant,
        name: t.name.clone(),
        ..TensorFact::new(dtype, shape)
    })
}

fn is_symbol(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn attr_from_json(v: &serde_json::Value) -> Result<AttrValue, String> {
    use serde_json::Value as J;
    Ok(match v {
        J::Bool(b) => AttrValue::Int(*b as i64),
        J::Number(n) => match n.as_i64() {
            Some(i) => AttrValue::Int(i),
            None => AttrValue::Float(n.as_f64().ok_or("number out of range")?),
        },
        J::String(s) => AttrValue::Str(s.clone()),
        J::Array(items) => {
            if items.iter().all(|x| x.is_i64() || x.is_boolean()) {
                AttrValue::Ints(
                    items
                        .iter()
                        .map(|x| {
                            x.as_i64()
                                .unwrap_or_else(|| x.as_bool().unwrap_or(false) as i64)
                        })
                        .collect(),
                )
            } else if items.iter().all(serde_json::Value::is_number) {
                AttrValue::Floats(items.iter().filter_map(serde_json::Value::as_f64).collect())
            } else if items.iter().all(serde_json::Value::is_string) {
                AttrValue::Strs(
                    items
                        .iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect(),
                )
            } else {
                return Err("a list must hold only integers, only numbers or only strings".into());
            }
        }
        J::Null => return Err("null is not an attribute value (leave the attribute out)".into()),
        J::Object(_) => return Err("an object is not an attribute value".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_layers_with_defaults() {
        let g = parse_trace(
            br#"{"layers": [
              {"op": "Conv", "name": "conv1", "attrs": {"strides": [2, 2], "group": 1, "alpha": 0.5, "mode": "linear"},
               "inputs": [{"shape": [1, 3, 8, 8]}, {"shape": [4, 3, 3, 3], "dtype": "float16"}, null],
               "outputs": [{"shape": ["batch", 4, 3, 3]}]},
              {"op": "Relu", "inputs": [{"shape": [2]}], "outputs": [{"shape": [2]}]}]}"#,
            "t.json",
        )
        .unwrap();
        let conv = &g.nodes[0];
        assert_eq!(conv.attrs["strides"], AttrValue::Ints(vec![2, 2]));
        assert_eq!(conv.attrs["alpha"], AttrValue::Float(0.5));
        assert_eq!(conv.inputs[0].as_ref().unwrap().dtype, DType::Float32);
        assert_eq!(conv.inputs[1].as_ref().unwrap().dtype, DType::Float16);
        assert!(conv.inputs[2].is_none());
        assert_eq!(
            conv.outputs[0].as_ref().unwrap().shape[0],
            Dim::symbol("batch")
        );
        assert_eq!(conv.opset, DEFAULT_OPSET);
        assert_eq!(g.nodes[1].name, "Relu-1");
    }

    #[test]
    fn bad_traces_say_where() {
        let err = |s: &str| parse_trace(s.as_bytes(), "t.json").unwrap_err().to_string();
        assert!(
            err("{").starts_with("t.json: line 1 column 1"),
            "{}",
            err("{")
        );
        assert!(
            err(r#"{"layers": [{"op": "Relu", "inputs": [{"shape": [-1]}]}]}"#)
                .contains("layer 1 (Relu): input 1: negative dimension -1")
        );
        assert!(
            err(r#"{"layers": [{"op": "Relu", "inputs": [{"shape": [1], "dtype": "f99"}]}]}"#)
                .contains("unknown dtype 'f99'")
        );
        assert!(
            err(r#"{"layers": [{"op": "Relu", "atrs": {}}]}"#).contains("unknown field `atrs`")
        );
    }
}
