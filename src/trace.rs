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
use crate::ir::{MAX_ATTRIBUTE_VALUES, MAX_NODE_ATTRIBUTES, MAX_NODE_IO, MAX_NODES, MAX_RANK};

/// The lists of a trace that [`bounded`] reads, for the limit's error.
const LAYERS: u8 = 0;
const DIMS: u8 = 1;
const TENSORS: u8 = 2;

fn list_name(kind: u8) -> &'static str {
    match kind {
        LAYERS => "layers (MAX_NODES)",
        DIMS => "dimensions (MAX_RANK)",
        _ => "tensors (MAX_NODE_IO)",
    }
}

/// A JSON list read element by element and refused at element `N + 1`, so
/// that a hostile list costs no more than the limit allows.
fn bounded<'de, D, T, const N: usize, const K: u8>(d: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct V<T, const N: usize, const K: u8>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>, const N: usize, const K: u8> serde::de::Visitor<'de> for V<T, N, K> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a list of at most {N} {}", list_name(K))
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Vec<T>, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = seq.next_element()? {
                if out.len() == N {
                    return Err(serde::de::Error::custom(format!(
                        "more than {N} {}, which exceeds the limit",
                        list_name(K)
                    )));
                }
                out.push(x);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(V::<T, N, K>(std::marker::PhantomData))
}

/// A layer's attributes, at most [`MAX_NODE_ATTRIBUTES`] of them.
fn bounded_attrs<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<BTreeMap<String, TraceAttr>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = BTreeMap<String, TraceAttr>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "an object of at most {MAX_NODE_ATTRIBUTES} attributes")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((k, v)) = map.next_entry::<String, TraceAttr>()? {
                out.insert(k, v);
                if out.len() > MAX_NODE_ATTRIBUTES {
                    return Err(serde::de::Error::custom(format!(
                        "more than {MAX_NODE_ATTRIBUTES} attributes, which exceeds the limit (MAX_NODE_ATTRIBUTES)"
                    )));
                }
            }
            Ok(out)
        }
    }
    d.deserialize_map(V)
}

/// An attribute's value as it is parsed: a scalar, a list of at most
/// [`MAX_ATTRIBUTE_VALUES`] scalars, or what is not a value (kept to say so
/// with the layer's name).
enum TraceAttr {
    Value(AttrValue),
    Bad(&'static str),
}

/// 24 bytes (a boxed string): a list of a million is what the limit allows.
enum Scalar {
    Int(i64),
    Float(f64),
    Str(Box<str>),
    Other,
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(AttrVisitor).map(|a| match a {
            TraceAttr::Value(AttrValue::Int(i)) => Scalar::Int(i),
            TraceAttr::Value(AttrValue::Float(f)) => Scalar::Float(f),
            TraceAttr::Value(AttrValue::Str(s)) => Scalar::Str(s.into_boxed_str()),
            _ => Scalar::Other,
        })
    }
}

struct AttrVisitor;

impl<'de> serde::de::Visitor<'de> for AttrVisitor {
    type Value = TraceAttr;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an attribute value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<TraceAttr, E> {
        Ok(TraceAttr::Value(AttrValue::Int(v as i64)))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<TraceAttr, E> {
        Ok(TraceAttr::Value(AttrValue::Int(v)))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<TraceAttr, E> {
        Ok(TraceAttr::Value(match i64::try_from(v) {
            Ok(i) => AttrValue::Int(i),
            Err(_) => AttrValue::Float(v as f64),
        }))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<TraceAttr, E> {
        Ok(TraceAttr::Value(AttrValue::Float(v)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<TraceAttr, E> {
        Ok(TraceAttr::Value(AttrValue::Str(v.to_string())))
    }
    fn visit_unit<E>(self) -> std::result::Result<TraceAttr, E> {
        Ok(TraceAttr::Bad(
            "null is not an attribute value (leave the attribute out)",
        ))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<TraceAttr, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(TraceAttr::Bad("an object is not an attribute value"))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<TraceAttr, A::Error> {
        // Collected typed as they come (ints take 8 bytes each), so that the
        // largest list the limit allows stays small.
        let mut acc = AttrValue::Ints(Vec::new());
        let mut bad = false;
        let mut n = 0;
        while let Some(x) = seq.next_element::<Scalar>()? {
            n += 1;
            if n > MAX_ATTRIBUTE_VALUES {
                return Err(serde::de::Error::custom(format!(
                    "an attribute list longer than {MAX_ATTRIBUTE_VALUES} values, which exceeds the limit (MAX_ATTRIBUTE_VALUES)"
                )));
            }
            if bad {
                continue;
            }
            match (&mut acc, x) {
                (AttrValue::Ints(v), Scalar::Int(i)) => v.push(i),
                (AttrValue::Ints(v), Scalar::Float(f)) => {
                    let mut fl: Vec<f64> = v.iter().map(|&i| i as f64).collect();
                    fl.push(f);
                    acc = AttrValue::Floats(fl);
                }
                (AttrValue::Ints(v), Scalar::Str(s)) if v.is_empty() && n == 1 => {
                    acc = AttrValue::Strs(vec![s.into_string()]);
                }
                (AttrValue::Floats(v), Scalar::Int(i)) => v.push(i as f64),
                (AttrValue::Floats(v), Scalar::Float(f)) => v.push(f),
                (AttrValue::Strs(v), Scalar::Str(s)) => v.push(s.into_string()),
                _ => bad = true,
            }
        }
        Ok(if bad {
            TraceAttr::Bad("a list must hold only integers, only numbers or only strings")
        } else {
            TraceAttr::Value(acc)
        })
    }
}

impl<'de> Deserialize<'de> for TraceAttr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(AttrVisitor)
    }
}

#[derive(Deserialize)]
struct TraceFile {
    /// Counted while parsing: a file of a million empty layers is refused
    /// at layer [`MAX_NODES`] + 1, before the rest is built.
    #[serde(deserialize_with = "bounded::<_, _, MAX_NODES, LAYERS>")]
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
    #[serde(default, deserialize_with = "bounded_attrs")]
    attrs: BTreeMap<String, TraceAttr>,
    #[serde(default, deserialize_with = "bounded::<_, _, MAX_NODE_IO, TENSORS>")]
    inputs: Vec<Option<TraceTensor>>,
    #[serde(default, deserialize_with = "bounded::<_, _, MAX_NODE_IO, TENSORS>")]
    outputs: Vec<Option<TraceTensor>>,
    /// A record of the backward pass: the index (in `layers`, from 0) of
    /// the forward layer whose backward it is part of.
    #[serde(default)]
    backward_of: Option<usize>,
    /// With `backward_of`: the input positions whose gradient this record
    /// computes, costed by the rule's backward (without: the op's own
    /// formulas).
    #[serde(default, deserialize_with = "bounded_grads")]
    grads: Option<Vec<usize>>,
}

fn bounded_grads<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Vec<usize>>, D::Error> {
    bounded::<D, usize, MAX_NODE_IO, TENSORS>(d).map(Some)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceTensor {
    #[serde(deserialize_with = "bounded::<_, _, MAX_RANK, DIMS>")]
    shape: Vec<TraceDim>,
    #[serde(default)]
    dtype: Option<String>,
    /// The tensor's name, linking producers to consumers.
    #[serde(default)]
    name: Option<String>,
    /// A constant of the model (weight, bias, statistics).
    #[serde(default, rename = "const")]
    constant: bool,
    /// A constant that is the model's state, not a parameter (BatchNorm's
    /// running statistics: PyTorch's buffers); needs a name.
    #[serde(default)]
    buffer: bool,
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
/// The UTF-8 byte order mark, accepted before a trace's JSON.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
/// JSON nesting depth: serde_json's own limit, which refuses deeper input.
pub const MAX_JSON_DEPTH: usize = 128;

/// A string of a trace (a layer's name, op, attribute, tensor name) may be
/// at most this long as written in the file: checked on the bytes as they
/// are read, before the JSON parser holds the string, so that a 200 MB name
/// is refused without being held even once.
pub const MAX_TRACE_STRING_BYTES: u64 = 64 * 1024;

/// Follows a trace's bytes, in pieces, through its JSON strings: the
/// length of each, as written, against [`MAX_TRACE_STRING_BYTES`].
#[derive(Default)]
struct StringLengths {
    /// Bytes fed so far.
    seen: u64,
    in_string: bool,
    /// The last byte fed was the `\` of an escape, inside a string.
    escaped: bool,
    /// Bytes of the current string so far, and where it starts.
    run: u64,
    start: u64,
}

impl StringLengths {
    /// Feeds the next piece; the offset of a string found too long.
    fn feed(&mut self, piece: &[u8]) -> std::result::Result<(), u64> {
        let mut i = 0;
        while i < piece.len() {
            if !self.in_string {
                let Some(k) = memchr::memchr(b'"', &piece[i..]) else {
                    break;
                };
                i += k + 1;
                self.in_string = true;
                self.run = 0;
                self.start = self.seen + i as u64 - 1;
                continue;
            }
            if self.escaped {
                self.escaped = false;
                self.run += 1;
                i += 1;
            } else {
                match memchr::memchr2(b'"', b'\\', &piece[i..]) {
                    None => {
                        self.run += (piece.len() - i) as u64;
                        i = piece.len();
                    }
                    Some(k) => {
                        self.run += k as u64;
                        i += k;
                        if piece[i] == b'\\' {
                            self.escaped = true;
                            self.run += 1;
                        } else {
                            self.in_string = false;
                        }
                        i += 1;
                    }
                }
            }
            if self.run > MAX_TRACE_STRING_BYTES {
                return Err(self.start);
            }
        }
        self.seen += piece.len() as u64;
        if self.in_string && self.run > MAX_TRACE_STRING_BYTES {
            return Err(self.start);
        }
        Ok(())
    }
}

/// The error of a string past [`MAX_TRACE_STRING_BYTES`] at `offset`.
fn long_string(path: &str, offset: u64) -> Error {
    Error::Input {
        path: path.to_string(),
        message: format!(
            "byte {offset}: not a valid trace: a string longer than {MAX_TRACE_STRING_BYTES} bytes, which exceeds the limit (MAX_TRACE_STRING_BYTES)"
        ),
    }
}

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
    // Sized from what the file system says, only as a hint (a /proc file
    // says 0): growing by doubling would hold two copies of a large head.
    let mut head = Vec::with_capacity(len.min(READ_WHOLE_BYTES + 1) as usize);
    (&mut file)
        .take(READ_WHOLE_BYTES + 1)
        .read_to_end(&mut head)
        .map_err(|e| Error::io(path, e))?;
    if head.len() as u64 <= READ_WHOLE_BYTES {
        return parse_trace(&head, path);
    }
    // A byte order mark some editors write first is skipped.
    let skip = if head.starts_with(UTF8_BOM) {
        UTF8_BOM.len()
    } else {
        0
    };
    // Longer: parsed as it is read, in two passes like `parse_trace`'s:
    // the layers are counted first, building none (a million tiny layers
    // built before the refusal would cost hundreds of MB), then the file
    // is read again from where the head ended and built. Each pass is cut
    // at the limit (one byte more than allowed makes the refusal certain).
    fn stream<'a>(head: &'a [u8], file: &'a mut std::fs::File) -> impl std::io::Read + 'a {
        std::io::Cursor::new(head)
            .chain(file)
            .take(MAX_TRACE_BYTES + 1)
    }
    // A pipe cannot go back: found out before anything more is read.
    use std::io::Seek;
    let after_head = head.len() as u64;
    let rewind = |file: &mut std::fs::File| {
        file.seek(std::io::SeekFrom::Start(after_head))
            .map(drop)
            .map_err(|_| Error::Input {
                path: path.to_string(),
                message: format!(
                    "a trace over {} MiB is read twice (its layers counted first), which this file cannot be; give it on standard input (`-`)",
                    READ_WHOLE_BYTES >> 20
                ),
            })
    };
    rewind(&mut file)?;
    let (seen, long, count) = {
        let mut counting = Counted::new(stream(&head[skip..], &mut file));
        // Buffered outside the counter: serde_json reads a byte at a time.
        let buffered = std::io::BufReader::with_capacity(1 << 16, &mut counting);
        let count = serde_json::from_reader::<_, LayerCount>(buffered);
        (counting.seen, counting.long, count)
    };
    if seen > MAX_TRACE_BYTES {
        return Err(too_big());
    }
    if let Some(offset) = long {
        return Err(long_string(path, offset));
    }
    if let Err(e) = count {
        layer_limit(&e, path)?;
    }
    rewind(&mut file)?;
    let mut counted = Counted::new(stream(&head[skip..], &mut file));
    let parsed = serde_json::from_reader(std::io::BufReader::with_capacity(1 << 16, &mut counted));
    if counted.seen > MAX_TRACE_BYTES {
        return Err(too_big());
    }
    if let Some(offset) = counted.long {
        return Err(long_string(path, offset));
    }
    from_file(parsed, path)
}

/// A reader that counts the bytes it passes on, and stops at a string past
/// [`MAX_TRACE_STRING_BYTES`] (where it started goes in `long`).
struct Counted<R> {
    inner: R,
    seen: u64,
    strings: StringLengths,
    long: Option<u64>,
}

impl<R> Counted<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            seen: 0,
            strings: StringLengths::default(),
            long: None,
        }
    }
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen += n as u64;
        if let Err(offset) = self.strings.feed(&buf[..n]) {
            self.long = Some(offset);
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a string past the limit",
            ));
        }
        Ok(n)
    }
}

/// Parses trace JSON; `path` is only used in error messages. The layers are
/// counted first, without building any, so that a file of a million tiny
/// layers costs nothing before it is refused.
pub fn parse_trace(bytes: &[u8], path: &str) -> Result<Graph> {
    let bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
    StringLengths::default()
        .feed(bytes)
        .map_err(|offset| long_string(path, offset))?;
    if let Err(e) = serde_json::from_slice::<LayerCount>(bytes) {
        layer_limit(&e, path)?;
    }
    from_file(serde_json::from_slice(bytes), path)
}

/// The error of a counting pass when it is the layer limit; other errors
/// are left to the pass that builds the layers, which says them better.
fn layer_limit(e: &serde_json::Error, path: &str) -> Result<()> {
    let message = strip_position(&e.to_string());
    if message.contains("(MAX_NODES)") {
        return Err(Error::Input {
            path: path.to_string(),
            message: format!(
                "line {} column {}: not a valid trace: {message}",
                e.line(),
                e.column()
            ),
        });
    }
    Ok(())
}

/// A trace read only to count its layers (anything else is ignored; other
/// errors are left to the real parse).
#[derive(Deserialize)]
struct LayerCount {
    #[serde(deserialize_with = "count_layers")]
    #[allow(dead_code)]
    layers: usize,
}

fn count_layers<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<usize, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of layers")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<usize, A::Error> {
            let mut n = 0;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                n += 1;
                if n > MAX_NODES {
                    return Err(serde::de::Error::custom(format!(
                        "more than {MAX_NODES} {}, which exceeds the limit",
                        list_name(LAYERS)
                    )));
                }
            }
            Ok(n)
        }
    }
    d.deserialize_seq(V)
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
    let default_opset = match file.opset {
        Some(v) => check_opset(v).map_err(bad)?,
        None => DEFAULT_OPSET,
    };
    let mut nodes = Vec::with_capacity(file.layers.len());
    let mut backward = Vec::new();
    let mut buffers = std::collections::BTreeSet::new();
    // Each forward record's node, by record index.
    let mut node_of: Vec<Option<usize>> = Vec::with_capacity(file.layers.len());
    for (i, layer) in file.layers.into_iter().enumerate() {
        let here = |m: String| bad(format!("layer {} ({}): {m}", i + 1, layer.op));
        if layer.op.is_empty() {
            return Err(here("\"op\" is empty".into()));
        }
        let mut attrs = BTreeMap::new();
        for (k, v) in layer.attrs {
            match v {
                TraceAttr::Value(v) => attrs.insert(k, v),
                TraceAttr::Bad(m) => return Err(here(format!("attribute {k}: {m}"))),
            };
        }
        let opset = match layer.opset {
            Some(v) => check_opset(v).map_err(&here)?,
            None => default_opset,
        };
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
        for t in layer.inputs.iter().chain(&layer.outputs).flatten() {
            if t.buffer {
                let Some(n) = &t.name else {
                    return Err(here("a buffer tensor needs a name".into()));
                };
                buffers.insert(n.clone());
            }
        }
        let domain = crate::ir::domain_key(&layer.domain).to_string();
        if let Some(g) = layer
            .grads
            .as_ref()
            .and_then(|g| g.iter().find(|&&g| g >= inputs.len()))
        {
            return Err(here(format!(
                "grads names input {g}, and the layer has {} (positions count from 0)",
                inputs.len()
            )));
        }
        let node = Node {
            name: layer.name.clone(),
            op: layer.op.clone(),
            domain,
            opset,
            attrs: attrs.into_iter().collect(),
            inputs: inputs.into(),
            outputs: outputs.into(),
            bodies: Vec::new(),
        };
        match layer.backward_of {
            None if layer.grads.is_some() => {
                return Err(here("grads is given without backward_of".into()));
            }
            None => {
                node_of.push(Some(nodes.len()));
                nodes.push(node);
            }
            Some(k) => {
                let Some(&Some(of)) = node_of.get(k) else {
                    return Err(here(format!(
                        "backward_of {k} is no earlier forward layer (indices count from 0)"
                    )));
                };
                node_of.push(None);
                backward.push(crate::ir::BackwardRecord {
                    of,
                    node,
                    grads: layer.grads,
                });
            }
        }
    }
    name_unnamed(&mut nodes);
    Ok(Graph {
        nodes,
        backward,
        buffers: buffers.into_iter().collect(),
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
        constant: t.constant || t.buffer,
        name: t.name.as_deref().map(Into::into),
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

/// An opset version, refused like an ONNX model's `opset_import` below 1.
fn check_opset(v: i64) -> std::result::Result<i64, String> {
    if v >= 1 {
        Ok(v)
    } else {
        Err(format!("opset {v} does not exist (versions start at 1)"))
    }
}

/// Whether bytes start like JSON (an operator trace): `{` after blanks and
/// an optional UTF-8 byte order mark.
pub(crate) fn starts_like_json(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Whether a file is an operator trace (JSON) rather than an ONNX model:
/// whether its first bytes start like JSON.
pub(crate) fn is_trace_file(path: &str) -> Result<bool> {
    use std::io::Read;
    // Reading a pipe or a device could block or never end.
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::Input {
            path: path.to_string(),
            message: "not a regular file".into(),
        });
    }
    let io = |e| Error::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    // A plain read would read ahead and mark a page where reading ahead
    // goes on: the ONNX reader's first read there would then pull in the
    // whole file, weights included.
    crate::onnx::read::advise_random(&file);
    let mut head = [0u8; 64];
    let n = file.read(&mut head).map_err(io)?;
    let first = head[..n].strip_prefix(UTF8_BOM).unwrap_or(&head[..n]);
    if let Some(b) = first.iter().find(|b| !b.is_ascii_whitespace()) {
        return Ok(*b == b'{');
    }
    // Blanks all through the head (no ONNX model starts so): read on to
    // the first byte that is not one, as far as a trace may go (a trace of
    // more blanks than that is refused by its size).
    let mut piece = vec![0u8; 64 << 10];
    let mut seen = n as u64;
    loop {
        let k = file.read(&mut piece).map_err(io)?;
        if k == 0 {
            return Ok(false);
        }
        if let Some(b) = piece[..k].iter().find(|b| !b.is_ascii_whitespace()) {
            return Ok(*b == b'{');
        }
        seen += k as u64;
        if seen > MAX_TRACE_BYTES {
            return Ok(true);
        }
    }
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
