//! The view a shape function has of one node: its input facts, attributes
//! (with typed getters), opset, and the outputs it fills in.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;

use super::fact::{Fact, MAX_VALUE_ELEMENTS, TensorValue};
use crate::dim::{Overflow, SymInt};
use crate::ir::{Bound, DType, Dim};
use crate::proto::{AttributeProto, GraphProto, TensorProto, attr_type};

/// Why a node's shapes cannot be inferred (an inconsistent model).
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeError(pub String);

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Overflow> for ShapeError {
    fn from(e: Overflow) -> Self {
        ShapeError(format!("dimension arithmetic {e}"))
    }
}

/// The symbols inference makes up for sizes only known at run time, and
/// the upper bounds known for some of them (NonMaxSuppression selects at
/// most what its attributes allow, NonZero at most every element).
#[derive(Debug, Default)]
pub struct Symbols {
    count: Cell<u64>,
    bounds: RefCell<BTreeMap<String, Bound>>,
    /// Values the user bound (`--dim unk_3=5`): a symbol made up under a
    /// bound name is that value from the start, so what follows from it is
    /// inferred with the value known.
    bound: BTreeMap<String, i64>,
    /// The names of `bound` that a symbol was made up under: `--dim` named
    /// them, and they are gone from the graph because they were bound.
    used: RefCell<std::collections::BTreeSet<String>>,
    /// Values later nodes settled for symbols made up before them (the
    /// channels an NCHWc reorder padded to, which the convolution reading
    /// them knows from its weights): every use of the symbol takes them
    /// once inference is over.
    learned: RefCell<BTreeMap<String, i64>>,
}

impl Symbols {
    /// Symbols whose names in `bound` take those values.
    pub fn with_bindings(bound: BTreeMap<String, i64>) -> Symbols {
        Symbols {
            bound,
            ..Symbols::default()
        }
    }

    /// A new symbol `hint_N`, or its value when the user bound it.
    pub fn fresh(&self, hint: &str) -> Dim {
        let n = self.count.get() + 1;
        self.count.set(n);
        let name = format!("{hint}_{n}");
        match self.bound.get(&name).and_then(|&v| u64::try_from(v).ok()) {
            Some(v) => {
                self.used.borrow_mut().insert(name);
                Dim::Known(v)
            }
            None => Dim::symbol(name),
        }
    }

    /// A new symbol known to be at most `at_most`.
    pub fn bounded(&self, hint: &str, at_most: SymInt, op: &str) -> Dim {
        let d = self.fresh(hint);
        if let Dim::Sym(s) = &d {
            self.bounds.borrow_mut().insert(
                s.to_string(),
                Bound {
                    at_most,
                    op: op.to_string(),
                },
            );
        }
        d
    }

    /// Every bound recorded, by symbol name.
    pub fn into_bounds(self) -> BTreeMap<String, Bound> {
        self.bounds.into_inner()
    }

    /// The bound names a symbol was made up under (see [`Symbols::fresh`]).
    pub fn used_bindings(&self) -> Vec<String> {
        self.used.borrow().iter().cloned().collect()
    }

    /// Settles the made-up symbol `name` as `value`; the value it had when
    /// an earlier node settled it otherwise.
    pub fn learn(&self, name: &str, value: i64) -> std::result::Result<(), i64> {
        let mut learned = self.learned.borrow_mut();
        match learned.get(name) {
            Some(&had) if had != value => Err(had),
            Some(_) => Ok(()),
            None => {
                learned.insert(name.to_string(), value);
                Ok(())
            }
        }
    }

    /// Every value settled by [`Symbols::learn`], by symbol name.
    pub fn take_learned(&self) -> BTreeMap<String, i64> {
        std::mem::take(&mut self.learned.borrow_mut())
    }
}

/// Infers a subgraph (an If branch, a Loop or Scan body) given facts for its
/// formal inputs; returns facts for its outputs.
pub trait SubgraphInfer {
    fn infer(&self, graph: &GraphProto, inputs: &[Fact]) -> Result<Vec<Fact>>;

    /// From here on each run of `graph` is one trip of a loop run trip by
    /// trip: keep every run, not only the last.
    fn start_trips(&self, _graph: &GraphProto) {}

    /// The trips of `graph` are over: keep them for costing when `keep`
    /// (each trip then costs what its own sizes make it), or forget them.
    fn end_trips(&self, _graph: &GraphProto, _keep: bool) {}
}

/// Decodes a tensor attribute (Constant's `value`) into a fact with its data.
pub trait TensorDecoder {
    fn fact_of(&self, t: &TensorProto) -> Result<Fact>;
}

pub struct InferCtx<'a> {
    pub op: &'a str,
    pub domain: &'a str,
    pub opset: i64,
    attrs: &'a [AttributeProto],
    inputs: Vec<Option<Fact>>,
    /// One per node output; start unknown.
    pub outputs: Vec<Fact>,
    pub subgraphs: &'a dyn SubgraphInfer,
    pub tensors: &'a dyn TensorDecoder,
    symbols: &'a Symbols,
    /// How many times the node runs its subgraphs per run of its own
    /// (Loop's trip count, Scan's sequence length); `None`: once.
    repeats: Option<Dim>,
    /// The first attribute read as a type it does not have (a string where
    /// ints are expected), or the first symbolic value past the dimension
    /// limits met while folding: the node is an error, never costed as if
    /// the attribute were absent or the value unknown. See
    /// [`InferCtx::node_error`].
    refused: RefCell<Option<String>>,
}

pub type Result<T> = std::result::Result<T, ShapeError>;

/// The ai.onnx opset [`InferCtx::run_like`] runs float forms at (attributes
/// as every opset from 13 on reads them).
const FLOAT_FORM_OPSET: i64 = 17;

pub fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(ShapeError(msg.into()))
}

impl<'a> InferCtx<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        op: &'a str,
        domain: &'a str,
        opset: i64,
        attrs: &'a [AttributeProto],
        inputs: Vec<Option<Fact>>,
        n_outputs: usize,
        subgraphs: &'a dyn SubgraphInfer,
        tensors: &'a dyn TensorDecoder,
        symbols: &'a Symbols,
    ) -> Self {
        Self {
            op,
            domain,
            opset,
            attrs,
            inputs,
            outputs: vec![Fact::unknown(); n_outputs],
            subgraphs,
            tensors,
            symbols,
            repeats: None,
            refused: RefCell::new(None),
        }
    }

    /// A new symbol for a size only known at run time (NonZero's count...).
    pub fn fresh_dim(&self, hint: &str) -> Dim {
        self.symbols.fresh(hint)
    }

    /// Settles `d`, a symbol made up by an earlier node (a bare one, as
    /// [`InferCtx::fresh_dim`] makes), as `value` for all its uses; an
    /// error when a node settled it otherwise. Other dimensions are left
    /// as they are.
    pub fn learn(&self, d: &Dim, value: u64, what: &str) -> Result<()> {
        let Dim::Sym(s) = d else { return Ok(()) };
        let names = s.symbols();
        let [name] = names.as_slice() else {
            return Ok(());
        };
        if *d != Dim::symbol(name.as_str()) {
            return Ok(());
        }
        let value = i64::try_from(value)
            .map_err(|_| ShapeError(format!("{what}: {value} is too large")))?;
        self.symbols.learn(name, value).map_err(|had| {
            ShapeError(format!(
                "{what}: {value} here, but {had} where {name} was settled before"
            ))
        })
    }

    /// A new symbol for a size only known at run time that cannot exceed
    /// `at_most` (costs take the bound when nothing else binds it).
    pub fn bounded_dim(&self, hint: &str, at_most: SymInt) -> Dim {
        match at_most.as_int() {
            Some(0) => Dim::Known(0),
            _ => self.symbols.bounded(hint, at_most, self.op),
        }
    }

    /// Runs the default-domain operator `op`'s shape function on `inputs`
    /// with this node's attributes: quantized forms (QLinearConcat, QGemm)
    /// are shaped as their float forms are.
    pub fn run_like(
        &self,
        op: &str,
        inputs: Vec<Option<Fact>>,
        n_outputs: usize,
    ) -> Result<Vec<Fact>> {
        let f = super::registry("", op)
            .ok_or_else(|| ShapeError(format!("no shape function for {op}")))?;
        let mut inner = InferCtx::new(
            op,
            "",
            FLOAT_FORM_OPSET,
            self.attrs,
            inputs,
            n_outputs,
            self.subgraphs,
            self.tensors,
            self.symbols,
        );
        let r = f(&mut inner);
        // What the float form refused is this node's error.
        if let Some(m) = inner.node_error() {
            self.refused.borrow_mut().get_or_insert(m);
        }
        r?;
        Ok(inner.outputs)
    }

    // ------------------------------------------------------------ inputs

    pub fn n_inputs(&self) -> usize {
        self.inputs.len()
    }

    /// Input `i`, `None` when absent (an empty name) or beyond the list.
    pub fn input(&self, i: usize) -> Option<&Fact> {
        self.inputs.get(i).and_then(Option::as_ref)
    }

    pub fn require(&self, i: usize) -> Result<&Fact> {
        self.input(i)
            .ok_or_else(|| ShapeError(format!("input {} is required", i + 1)))
    }

    /// The shape of input `i`, when known.
    pub fn shape(&self, i: usize) -> Option<&Vec<Dim>> {
        self.input(i).and_then(|f| f.shape.as_ref())
    }

    pub fn rank(&self, i: usize) -> Option<usize> {
        self.shape(i).map(Vec::len)
    }

    pub fn dtype(&self, i: usize) -> Option<DType> {
        self.input(i).and_then(|f| f.dtype)
    }

    /// The data of input `i` when it is known or a small constant.
    pub fn value(&self, i: usize) -> Option<TensorValue> {
        let f = self.input(i)?;
        if let Some(v) = &f.value {
            return Some(v.clone());
        }
        let c = f.constant.as_ref()?;
        let small = f
            .elements()
            .and_then(|n| n.as_int())
            .is_some_and(|n| n >= 0 && n as usize <= MAX_VALUE_ELEMENTS);
        if !small {
            return None;
        }
        c.load().ok()
    }

    pub fn ints(&self, i: usize) -> Option<Vec<SymInt>> {
        self.value(i)?.as_ints()
    }

    pub fn known_ints(&self, i: usize) -> Option<Vec<i64>> {
        self.value(i)?.as_known_ints()
    }

    pub fn floats(&self, i: usize) -> Option<Vec<f64>> {
        self.value(i)?.as_floats()
    }

    // ------------------------------------------------------------ attributes

    pub fn attr(&self, name: &str) -> Option<&'a AttributeProto> {
        self.attrs.iter().find(|a| a.name.as_deref() == Some(name))
    }

    pub fn has_attr(&self, name: &str) -> bool {
        self.attr(name).is_some()
    }

    /// Attribute `name` when it holds `want` (an `AttributeProto` type);
    /// one of another type is recorded as an error and reads as absent.
    fn typed(&self, name: &str, want: i32) -> Option<&'a AttributeProto> {
        let a = self.attr(name)?;
        let got = attr_kind(a);
        if got == want {
            return Some(a);
        }
        self.refused.borrow_mut().get_or_insert_with(|| {
            format!(
                "attribute '{name}' is {}, but {} takes {} there",
                kind_name(got),
                self.op,
                kind_name(want)
            )
        });
        None
    }

    /// The first attribute a shape function read as a type it does not
    /// have, or the first value it folded past the dimension limits, as an
    /// error message.
    pub fn node_error(&self) -> Option<String> {
        self.refused.borrow().clone()
    }

    /// The element count of `f` when its shape is known; a count past the
    /// dimension limits is the node's error (see [`InferCtx::folded`]).
    pub fn elements_of(&self, f: &Fact) -> Option<SymInt> {
        self.folded(f.element_count()?)
    }

    /// A value folded by symbolic arithmetic, when it has one: a 64-bit
    /// overflow leaves it unknown (the model computes it at run time), but
    /// a value past `MAX_DIM_TERMS`, `MAX_DIM_DEGREE` or `MAX_DIM_SIZE` is
    /// recorded as the node's error, never replaced by a fresh symbol.
    pub fn folded(&self, r: std::result::Result<SymInt, Overflow>) -> Option<SymInt> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                if e.is_limit() {
                    self.refused
                        .borrow_mut()
                        .get_or_insert_with(|| ShapeError::from(e).0);
                }
                None
            }
        }
    }

    pub fn attr_int(&self, name: &str) -> Option<i64> {
        self.typed(name, attr_type::INT).map(|a| a.i.unwrap_or(0))
    }

    pub fn attr_int_or(&self, name: &str, default: i64) -> i64 {
        self.attr_int(name).unwrap_or(default)
    }

    pub fn attr_ints(&self, name: &str) -> Option<Vec<i64>> {
        self.typed(name, attr_type::INTS).map(|a| a.ints.clone())
    }

    pub fn attr_float(&self, name: &str) -> Option<f64> {
        self.typed(name, attr_type::FLOAT)
            .map(|a| f64::from(a.f.unwrap_or(0.0)))
    }

    pub fn attr_floats(&self, name: &str) -> Option<Vec<f64>> {
        self.typed(name, attr_type::FLOATS)
            .map(|a| a.floats.iter().map(|&f| f64::from(f)).collect())
    }

    pub fn attr_string(&self, name: &str) -> Option<String> {
        self.typed(name, attr_type::STRING)
            .map(|a| String::from_utf8_lossy(a.s.as_deref().unwrap_or_default()).into_owned())
    }

    pub fn attr_string_or(&self, name: &str, default: &str) -> String {
        self.attr_string(name)
            .unwrap_or_else(|| default.to_string())
    }

    pub fn attr_strings(&self, name: &str) -> Option<Vec<String>> {
        self.typed(name, attr_type::STRINGS).map(|a| {
            a.strings
                .iter()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
    }

    pub fn attr_tensor(&self, name: &str) -> Option<&'a TensorProto> {
        self.typed(name, attr_type::TENSOR)
            .and_then(|a| a.t.as_deref())
    }

    pub fn attr_graph(&self, name: &str) -> Option<&'a GraphProto> {
        self.typed(name, attr_type::GRAPH)
            .and_then(|a| a.g.as_deref())
    }

    // ------------------------------------------------------------ outputs

    pub fn n_outputs(&self) -> usize {
        self.outputs.len()
    }

    /// The input facts (handed back to the caller), the outputs, and how
    /// many times the subgraphs run.
    pub fn into_parts(self) -> (Vec<Option<Fact>>, Vec<Fact>, Option<Dim>) {
        (self.inputs, self.outputs, self.repeats)
    }

    /// Says how many times the node's subgraphs run per run of the node.
    pub fn set_repeats(&mut self, d: Dim) {
        self.repeats = Some(d);
    }

    /// Sets output `i` (ignored when the node has fewer outputs).
    pub fn set(&mut self, i: usize, f: Fact) {
        if let Some(o) = self.outputs.get_mut(i) {
            *o = f;
        }
    }

    /// Output `i`, to refine what was set; `None` when the node has fewer
    /// outputs (a node may declare none).
    pub fn output_mut(&mut self, i: usize) -> Option<&mut Fact> {
        self.outputs.get_mut(i)
    }
}

// ---------------------------------------------------------------- helpers

/// Normalizes a possibly negative axis against `rank`.
pub fn axis(a: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    let n = if a < 0 { a + r } else { a };
    if n < 0 || n >= r {
        return err(format!("axis {a} is out of range for rank {rank}"));
    }
    Ok(n as usize)
}

/// Normalizes an axis that may also equal `rank` (Unsqueeze, Concat of 0-d...).
pub fn axis_inclusive(a: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    let n = if a < 0 { a + r + 1 } else { a };
    if n < 0 || n > r {
        return err(format!("axis {a} is out of range for rank {rank}"));
    }
    Ok(n as usize)
}

/// numpy-style broadcasting of two shapes.
pub fn broadcast(a: &[Dim], b: &[Dim]) -> Result<Vec<Dim>> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let da = if i + a.len() >= n {
            Some(&a[i + a.len() - n])
        } else {
            None
        };
        let db = if i + b.len() >= n {
            Some(&b[i + b.len() - n])
        } else {
            None
        };
        out.push(match (da, db) {
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (Some(x), Some(y)) => broadcast_dim(x, y).ok_or_else(|| {
                ShapeError(format!(
                    "shapes [{}] and [{}] do not broadcast",
                    join(a),
                    join(b)
                ))
            })?,
            (None, None) => unreachable!("i < n"),
        });
    }
    Ok(out)
}

fn broadcast_dim(x: &Dim, y: &Dim) -> Option<Dim> {
    match (x, y) {
        (Dim::Known(1), d) | (d, Dim::Known(1)) => Some(d.clone()),
        (Dim::Known(a), Dim::Known(b)) => (a == b).then(|| x.clone()),
        _ if x == y => Some(x.clone()),
        // A symbol against a known size > 1: the symbol must equal it.
        (Dim::Sym(_), Dim::Known(_)) => Some(y.clone()),
        (Dim::Known(_), Dim::Sym(_)) => Some(x.clone()),
        // Two different symbols: one of them is 1 at run time; keep the first.
        (Dim::Sym(_), Dim::Sym(_)) => Some(x.clone()),
    }
}

/// Broadcasts every present input's shape; `None` if one is unknown.
pub fn broadcast_all(shapes: &[Option<&Vec<Dim>>]) -> Result<Option<Vec<Dim>>> {
    let mut acc: Vec<Dim> = Vec::new();
    for s in shapes {
        match s {
            None => return Ok(None),
            Some(s) => acc = broadcast(&acc, s)?,
        }
    }
    Ok(Some(acc))
}

pub fn join(s: &[Dim]) -> String {
    s.iter().map(Dim::to_string).collect::<Vec<_>>().join(", ")
}

/// A dimension from a computed value; negative results are an error.
pub fn dim(v: &SymInt) -> Result<Dim> {
    Dim::from_symint(v).ok_or_else(|| ShapeError(format!("computed dimension {v} is negative")))
}

/// `[n]` dims from known sizes.
pub fn known(dims: &[u64]) -> Vec<Dim> {
    dims.iter().map(|&d| Dim::Known(d)).collect()
}

/// For unit tests of operators that have no subgraphs or tensor attributes.
#[cfg(test)]
pub struct NoSubgraphs;

#[cfg(test)]
impl SubgraphInfer for NoSubgraphs {
    fn infer(&self, _: &GraphProto, _: &[Fact]) -> Result<Vec<Fact>> {
        err("no subgraphs in unit tests")
    }
}

#[cfg(test)]
impl TensorDecoder for NoSubgraphs {
    fn fact_of(&self, _: &TensorProto) -> Result<Fact> {
        err("no tensors in unit tests")
    }
}

/// Runs an ai.onnx operator's shape function at `opset` on `inputs`, with
/// `n_outputs` outputs: the one way shape unit tests run an op.
#[cfg(test)]
pub fn run_onnx_op(
    op: &str,
    opset: i64,
    attrs: &[AttributeProto],
    inputs: Vec<Option<Fact>>,
    n_outputs: usize,
) -> Result<Vec<Fact>> {
    run_op("", op, opset, attrs, inputs, n_outputs)
}

/// Runs a registered shape function of any domain on the given inputs (unit
/// tests).
#[cfg(test)]
pub fn run_op(
    domain: &str,
    op: &str,
    opset: i64,
    attrs: &[AttributeProto],
    inputs: Vec<Option<Fact>>,
    n_outputs: usize,
) -> Result<Vec<Fact>> {
    let f = super::registry(domain, op)
        .ok_or_else(|| ShapeError(format!("no shape function for {op}")))?;
    run_fn(f, domain, op, opset, attrs, inputs, n_outputs)
}

/// Runs shape function `f` as `op` of `domain` on the given inputs (unit
/// tests: a family's own functions, registered or not).
#[cfg(test)]
pub fn run_fn(
    f: super::InferFn,
    domain: &str,
    op: &str,
    opset: i64,
    attrs: &[AttributeProto],
    inputs: Vec<Option<Fact>>,
    n_outputs: usize,
) -> Result<Vec<Fact>> {
    let symbols = Symbols::default();
    let mut ctx = InferCtx::new(
        op,
        domain,
        opset,
        attrs,
        inputs,
        n_outputs,
        &NoSubgraphs,
        &NoSubgraphs,
        &symbols,
    );
    f(&mut ctx)?;
    Ok(ctx.outputs)
}

/// The type an attribute holds: its declared `type`, or for files that
/// leave it out, the type of the one field that is set.
pub fn attr_kind(a: &AttributeProto) -> i32 {
    use attr_type::*;
    match a.r#type {
        Some(t) if t != 0 => t,
        _ if a.g.is_some() => GRAPH,
        _ if a.t.is_some() => TENSOR,
        _ if a.sparse_tensor.is_some() => SPARSE_TENSOR,
        _ if a.tp.is_some() => TYPE_PROTO,
        _ if a.s.is_some() => STRING,
        _ if a.f.is_some() => FLOAT,
        _ if !a.floats.is_empty() => FLOATS,
        _ if !a.strings.is_empty() => STRINGS,
        _ if !a.tensors.is_empty() => TENSORS,
        _ if !a.graphs.is_empty() => GRAPHS,
        _ if !a.ints.is_empty() => INTS,
        // `i` set, or nothing at all (an int 0 written by a proto3 writer).
        _ => INT,
    }
}

/// An attribute type as a phrase: "a string", "ints".
pub fn kind_name(t: i32) -> String {
    use attr_type::*;
    match t {
        FLOAT => "a float".into(),
        INT => "an int".into(),
        STRING => "a string".into(),
        TENSOR => "a tensor".into(),
        GRAPH => "a graph".into(),
        FLOATS => "floats".into(),
        INTS => "ints".into(),
        STRINGS => "strings".into(),
        TENSORS => "tensors".into(),
        GRAPHS => "graphs".into(),
        SPARSE_TENSOR => "a sparse tensor".into(),
        12 => "sparse tensors".into(),
        TYPE_PROTO => "a type".into(),
        14 => "types".into(),
        t => format!("of unknown type {t}"),
    }
}

/// An element type from an attribute holding an ONNX type code.
pub fn dtype_code(code: i64) -> Result<DType> {
    i32::try_from(code)
        .ok()
        .and_then(DType::from_onnx_code)
        .ok_or_else(|| ShapeError(format!("unknown element type {code}")))
}
