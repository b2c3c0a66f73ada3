//! The graph IR every front end produces and the cost stage consumes.
//!
//! A front end (the operator trace today, ONNX after shape inference) turns its
//! input into a [`Graph`]: an ordered list of [`Node`]s, each carrying the facts
//! the cost rules need about its input and output tensors (element type and
//! shape) and its attributes with their ONNX names.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

pub use dim::SymInt;
pub use domain::{
    DEFAULT_DOMAIN, domain_key, domain_lookup_key, domain_shown, imported_opset, qualified,
};
pub use limits::*;

pub mod dim;
mod domain;
pub mod identity;
mod limits;

pub use identity::NodeIdentity;

/// One dimension of a tensor shape: a known size, or a symbolic one (`batch`,
/// `2*seq`, `floor((H-1)/2)+1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dim {
    Known(u64),
    /// Always a symbolic [`SymInt`]; a known value is `Known`.
    Sym(SymInt),
}

impl Dim {
    /// A named symbol.
    pub fn symbol(name: impl Into<String>) -> Dim {
        Dim::Sym(SymInt::sym(name))
    }

    /// The dimension as a signed value, for arithmetic.
    pub fn to_symint(&self) -> SymInt {
        match self {
            Dim::Known(n) => SymInt::Int(*n as i64),
            Dim::Sym(s) => s.clone(),
        }
    }

    /// A value as a dimension; `None` when it is a negative number.
    pub fn from_symint(v: &SymInt) -> Option<Dim> {
        match v {
            SymInt::Int(n) => u64::try_from(*n).ok().map(Dim::Known),
            SymInt::Sym(_) => Some(Dim::Sym(v.clone())),
        }
    }

    pub fn known(&self) -> Option<u64> {
        match self {
            Dim::Known(n) => Some(*n),
            Dim::Sym(_) => None,
        }
    }

    /// Replaces bound symbols by their values.
    pub fn bind(&self, values: &BTreeMap<String, i64>) -> Dim {
        match self {
            Dim::Known(_) => self.clone(),
            Dim::Sym(s) => Dim::from_symint(&s.bind(values)).unwrap_or_else(|| self.clone()),
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Known(n) => write!(f, "{n}"),
            Dim::Sym(s) => write!(f, "{s}"),
        }
    }
}

/// A what-if storage type for weights or activations (`--weights`,
/// `--activations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    #[value(alias = "float32")]
    Fp32,
    #[value(alias = "float16")]
    Fp16,
    #[value(alias = "bfloat16")]
    Bf16,
    #[value(alias = "float8", alias = "float8e4m3fn")]
    Fp8,
    Int8,
    Int4,
}

impl Precision {
    pub fn dtype(self) -> DType {
        match self {
            Precision::Fp32 => DType::Float32,
            Precision::Fp16 => DType::Float16,
            Precision::Bf16 => DType::Bfloat16,
            Precision::Fp8 => DType::Float8E4M3Fn,
            Precision::Int8 => DType::Int8,
            Precision::Int4 => DType::Int4,
        }
    }
}

/// Element types, numbered as in ONNX's `TensorProto.DataType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    Float32,
    Uint8,
    Int8,
    Uint16,
    Int16,
    Int32,
    Int64,
    String,
    Bool,
    Float16,
    Float64,
    Uint32,
    Uint64,
    Complex64,
    Complex128,
    Bfloat16,
    Float8E4M3Fn,
    Float8E4M3Fnuz,
    Float8E5M2,
    Float8E5M2Fnuz,
    Uint4,
    Int4,
    Float4E2M1,
    Float8E8M0,
    Uint2,
    Int2,
}

/// Every element type with its ONNX code, canonical name and storage width.
const DTYPES: &[(DType, i32, &str, u64)] = &[
    (DType::Float32, 1, "float32", 32),
    (DType::Uint8, 2, "uint8", 8),
    (DType::Int8, 3, "int8", 8),
    (DType::Uint16, 4, "uint16", 16),
    (DType::Int16, 5, "int16", 16),
    (DType::Int32, 6, "int32", 32),
    (DType::Int64, 7, "int64", 64),
    // Strings have no fixed width; a pointer-sized handle is what a runtime moves.
    (DType::String, 8, "string", 64),
    (DType::Bool, 9, "bool", 8),
    (DType::Float16, 10, "float16", 16),
    (DType::Float64, 11, "float64", 64),
    (DType::Uint32, 12, "uint32", 32),
    (DType::Uint64, 13, "uint64", 64),
    (DType::Complex64, 14, "complex64", 64),
    (DType::Complex128, 15, "complex128", 128),
    (DType::Bfloat16, 16, "bfloat16", 16),
    (DType::Float8E4M3Fn, 17, "float8e4m3fn", 8),
    (DType::Float8E4M3Fnuz, 18, "float8e4m3fnuz", 8),
    (DType::Float8E5M2, 19, "float8e5m2", 8),
    (DType::Float8E5M2Fnuz, 20, "float8e5m2fnuz", 8),
    (DType::Uint4, 21, "uint4", 4),
    (DType::Int4, 22, "int4", 4),
    (DType::Float4E2M1, 23, "float4e2m1", 4),
    (DType::Float8E8M0, 24, "float8e8m0", 8),
    (DType::Uint2, 25, "uint2", 2),
    (DType::Int2, 26, "int2", 2),
];

/// Other spellings frameworks write for the same types.
const DTYPE_ALIASES: &[(&str, DType)] = &[
    ("float", DType::Float32),
    ("f32", DType::Float32),
    ("half", DType::Float16),
    ("f16", DType::Float16),
    ("double", DType::Float64),
    ("f64", DType::Float64),
    ("bf16", DType::Bfloat16),
    ("int", DType::Int32),
    ("long", DType::Int64),
    ("bool_", DType::Bool),
];

impl DType {
    fn entry(self) -> &'static (DType, i32, &'static str, u64) {
        DTYPES
            .iter()
            .find(|e| e.0 == self)
            .expect("every DType variant is listed in DTYPES")
    }

    /// The ONNX `TensorProto.DataType` code.
    pub fn onnx_code(self) -> i32 {
        self.entry().1
    }

    pub fn from_onnx_code(code: i32) -> Option<DType> {
        DTYPES.iter().find(|e| e.1 == code).map(|e| e.0)
    }

    /// Canonical lower-case name (`float32`, `int4`...).
    pub fn name(self) -> &'static str {
        self.entry().2
    }

    /// Storage width of one element in bits (4-bit types count half a byte).
    pub fn bits(self) -> u64 {
        self.entry().3
    }

    /// Parses a canonical name or a common alias, case-insensitively.
    pub fn parse(name: &str) -> Option<DType> {
        let lower = name.to_ascii_lowercase();
        DTYPES
            .iter()
            .find(|e| e.2 == lower)
            .map(|e| e.0)
            .or_else(|| DTYPE_ALIASES.iter().find(|a| a.0 == lower).map(|a| a.1))
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What is known about one tensor: its element type and shape, and whether
/// it is a constant of the model (a weight, bias or other parameter).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorFact {
    pub dtype: DType,
    /// Shared: a layer's copy of its tensors shares their dimensions.
    pub shape: std::sync::Arc<[Dim]>,
    pub constant: bool,
    /// The value's name in the model, when known: it links producers to
    /// consumers (fusion needs that). Shared: a layer's copy of its
    /// tensors shares their names.
    pub name: Option<std::sync::Arc<str>>,
    /// For a constant whose values c3 read: how many of its elements are
    /// nonzero (filled in only for the weights a rule asks `nnz()` of).
    pub nonzeros: Option<u64>,
}

impl TensorFact {
    /// A shape as a person types it: `1x3x224x224`, `scalar`, with `:float16` after it to set the dtype.
    pub fn parse_text(s: &str) -> Result<TensorFact, String> {
        let (shape, dtype) = match s.split_once(':') {
            Some((sh, dt)) => (
                sh,
                DType::parse(dt).ok_or_else(|| format!("unknown dtype '{dt}'"))?,
            ),
            None => (s, DType::Float32),
        };
        let dims = if shape == "scalar" {
            Vec::new()
        } else {
            shape
                .split(['x', 'X', ','])
                .map(|d| {
                    d.trim()
                        .parse::<u64>()
                        .map(Dim::Known)
                        .map_err(|_| format!("'{d}' is not a dimension (write 1x3x224x224)"))
                })
                .collect::<Result<Vec<_>, String>>()?
        };
        if dims.len() > MAX_RANK {
            return Err(format!(
                "rank {}, which exceeds the limit of {MAX_RANK} (MAX_RANK)",
                dims.len()
            ));
        }
        Ok(TensorFact::new(dtype, dims))
    }
}

impl TensorFact {
    pub fn new(dtype: DType, shape: Vec<Dim>) -> Self {
        Self {
            dtype,
            shape: shape.into(),
            constant: false,
            name: None,
            nonzeros: None,
        }
    }

    /// The same tensor marked as a constant (a weight).
    pub fn constant(self) -> Self {
        Self {
            constant: true,
            ..self
        }
    }

    /// A float32 tensor of known dimensions (handy in tests and traces).
    pub fn f32(dims: &[u64]) -> Self {
        Self::new(
            DType::Float32,
            dims.iter().map(|&d| Dim::Known(d)).collect(),
        )
    }

    /// The shape as people read it: see [`shape_string`].
    pub fn shape_string(&self) -> String {
        shape_string(&self.shape)
    }
}

/// A shape as every human-readable output shows it: `1x3x224x224` when
/// every size is known, `[batch, seq, 512]` when a symbol is in it
/// (`batchxseqx512` would not read), `scalar` for rank 0.
///
/// ```
/// use c3::ir::{Dim, shape_string};
/// assert_eq!(shape_string(&[Dim::Known(1), Dim::Known(3)]), "1x3");
/// let s = [Dim::symbol("batch"), Dim::symbol("seq"), Dim::Known(512)];
/// assert_eq!(shape_string(&s), "[batch, seq, 512]");
/// ```
pub fn shape_string(shape: &[Dim]) -> String {
    if shape.is_empty() {
        return "scalar".to_string();
    }
    let dims: Vec<String> = shape.iter().map(Dim::to_string).collect();
    if shape.iter().all(|d| d.known().is_some()) {
        dims.join("x")
    } else {
        format!("[{}]", dims.join(", "))
    }
}

/// An attribute value with ONNX's attribute kinds collapsed to what formulas use.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Int(i64),
    Float(f64),
    Str(String),
    Ints(Vec<i64>),
    Floats(Vec<f64>),
    Strs(Vec<String>),
}

impl AttrValue {
    /// The kind, as a phrase for errors: "an int", "strings".
    pub fn kind_name(&self) -> &'static str {
        match self {
            AttrValue::Int(_) => "an int",
            AttrValue::Float(_) => "a float",
            AttrValue::Str(_) => "a string",
            AttrValue::Ints(_) => "ints",
            AttrValue::Floats(_) => "floats",
            AttrValue::Strs(_) => "strings",
        }
    }

    /// An attribute as a person types it (`c3 explain --attr`): `2` an int,
    /// `0.5` a float, `2,2` or `[2, 2]` a list, anything else a string.
    pub fn parse_text(v: &str) -> AttrValue {
        let ints: Option<Vec<i64>> = v.split(',').map(|x| x.trim().parse().ok()).collect();
        let floats: Option<Vec<f64>> = v.split(',').map(|x| x.trim().parse().ok()).collect();
        let is_list = v.contains(',') || v.starts_with('[');
        let stripped = v.trim_start_matches('[').trim_end_matches(']');
        if is_list && stripped != v {
            return Self::parse_list(stripped);
        }
        match (ints, floats) {
            (Some(i), _) if is_list => AttrValue::Ints(i),
            (Some(i), _) => AttrValue::Int(i[0]),
            (None, Some(f)) if is_list => AttrValue::Floats(f),
            (None, Some(f)) => AttrValue::Float(f[0]),
            _ if is_list => AttrValue::Strs(v.split(',').map(|s| s.trim().to_string()).collect()),
            _ => AttrValue::Str(v.to_string()),
        }
    }

    fn parse_list(inner: &str) -> AttrValue {
        if inner.trim().is_empty() {
            return AttrValue::Ints(Vec::new());
        }
        match Self::parse_text(&format!("{inner},")) {
            // The trailing comma marks a list; drop the empty last item it made.
            AttrValue::Strs(mut v) => {
                v.pop();
                AttrValue::Strs(v)
            }
            other => other,
        }
    }
}

impl fmt::Display for AttrValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, v: &[T]) -> fmt::Result {
            f.write_str("[")?;
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{x}")?;
            }
            f.write_str("]")
        }
        match self {
            AttrValue::Int(v) => write!(f, "{v}"),
            AttrValue::Float(v) => write!(f, "{v}"),
            AttrValue::Str(v) => write!(f, "{v:?}"),
            AttrValue::Ints(v) => list(f, v),
            AttrValue::Floats(v) => list(f, v),
            AttrValue::Strs(v) => list(f, v),
        }
    }
}

/// A node's attributes by name, in name order. A list kept sorted: a
/// B-tree map allocates room for eleven entries (over 600 bytes) for the
/// one or two most nodes have.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attrs(Vec<(String, AttrValue)>);

impl Attrs {
    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(name))
    }

    pub fn get(&self, name: &str) -> Option<&AttrValue> {
        self.find(name).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Sets `name`, returning the value it replaces.
    pub fn insert(&mut self, name: String, value: AttrValue) -> Option<AttrValue> {
        match self.find(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (name, value));
                None
            }
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<AttrValue> {
        self.find(name).ok().map(|i| self.0.remove(i).1)
    }

    /// In name order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&String, &AttrValue)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// As a map would collect them: sorted by name, a repeated name keeping
/// its last value.
impl FromIterator<(String, AttrValue)> for Attrs {
    fn from_iter<I: IntoIterator<Item = (String, AttrValue)>>(iter: I) -> Attrs {
        let mut list: Vec<(String, AttrValue)> = iter.into_iter().collect();
        // Stable: equal names stay in arrival order, the last one kept.
        list.sort_by(|a, b| a.0.cmp(&b.0));
        list.reverse();
        list.dedup_by(|a, b| a.0 == b.0);
        list.reverse();
        list.shrink_to_fit();
        Attrs(list)
    }
}

impl<const N: usize> From<[(String, AttrValue); N]> for Attrs {
    fn from(list: [(String, AttrValue); N]) -> Attrs {
        list.into_iter().collect()
    }
}

impl From<BTreeMap<String, AttrValue>> for Attrs {
    fn from(map: BTreeMap<String, AttrValue>) -> Attrs {
        map.into_iter().collect()
    }
}

impl<'a> IntoIterator for &'a Attrs {
    type Item = (&'a String, &'a AttrValue);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, AttrValue)>,
        fn(&'a (String, AttrValue)) -> (&'a String, &'a AttrValue),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl std::ops::Index<&str> for Attrs {
    type Output = AttrValue;
    fn index(&self, name: &str) -> &AttrValue {
        self.get(name)
            .unwrap_or_else(|| panic!("no attribute '{name}'"))
    }
}

/// A node's (or a layer's) input or output tensors, `None` for an absent
/// optional one. Shared: a layer's list is its node's, not a copy.
pub type Tensors = std::sync::Arc<[Option<TensorFact>]>;

/// How many items ahead of the one at hand a pass over nodes or layers
/// asks for their tensor lists ([`prefetch`]).
pub(crate) const AHEAD: usize = 8;

/// Asks the processor for what a pass over a node or a layer reads, some
/// items before the pass reaches it: its tensor lists (and a node's
/// attributes) each lie in an allocation of their own, made long before,
/// and on a large graph waiting for them was most of the costing passes
/// (the cost rules, parameters, memory, the JSON rows). The first two
/// 64-byte lines of each: a list's first tensor ends in the second.
#[inline(always)]
pub(crate) fn prefetch<const N: usize>(at: Option<[*const u8; N]>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(at) = at {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        for p in at {
            let p = p.cast::<i8>();
            // SAFETY: SSE is part of x86-64, and a prefetch reads nothing
            // and never faults, whatever the address.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p);
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// [`prefetch`] of the names of `tensors`: passes that file or look up
/// tensors by name read each name's bytes, another allocation of its own.
/// Called on an item half-way to the one at hand, its lists having come.
#[inline(always)]
pub(crate) fn prefetch_names<'a>(tensors: impl Iterator<Item = &'a TensorFact>) {
    for t in tensors {
        prefetch(t.name.as_ref().map(|n| [n.as_ptr()]));
    }
}

impl Node {
    /// Where its tensor lists and attributes lie, for [`prefetch`].
    pub(crate) fn ahead(&self) -> [*const u8; 3] {
        [
            self.inputs.as_ptr().cast(),
            self.outputs.as_ptr().cast(),
            self.attrs.0.as_ptr().cast(),
        ]
    }
}

/// One operator application.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The layer name shown in reports (the node's own name, or `OpType-N`).
    pub name: String,
    /// ONNX `op_type`.
    pub op: String,
    /// ONNX domain; `""` is the default `ai.onnx` domain.
    pub domain: String,
    /// Opset version of the node's domain.
    pub opset: i64,
    pub attrs: Attrs,
    /// In ONNX input order; `None` for an absent optional input.
    pub inputs: Tensors,
    pub outputs: Tensors,
    /// The subgraphs the node runs (If branches, Loop and Scan bodies).
    pub bodies: Vec<Body>,
}

/// A subgraph a node runs: an If branch, a Loop, Scan or SequenceMap body.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The graph attribute that holds it (`then_branch`, `body`).
    pub attr: String,
    /// The names of its inputs, which its node gives it on each run (a
    /// Loop's counter and carried values); empty for an If branch.
    pub inputs: Vec<String>,
    /// Runs per run of the node: Loop's trip count, Scan's sequence length;
    /// 1 for a branch.
    pub repeats: Dim,
    /// One of several alternatives of which one runs (If's branches).
    pub alternative: bool,
    /// Its nodes, or why they could not be inferred (a branch that cannot
    /// run on these shapes).
    pub graph: std::result::Result<Graph, String>,
    /// A loop run trip by trip: each trip's graph with its own sizes, which
    /// costing sums in place of `repeats` times `graph` (the last trip);
    /// empty otherwise.
    pub trips: Vec<Graph>,
}

/// Whether a type holds real numbers (the types `--weights` and
/// `--activations` may change).
pub fn is_float(t: DType) -> bool {
    matches!(
        t,
        DType::Float32
            | DType::Float16
            | DType::Bfloat16
            | DType::Float64
            | DType::Float8E4M3Fn
            | DType::Float8E4M3Fnuz
            | DType::Float8E5M2
            | DType::Float8E5M2Fnuz
    )
}

/// An ordered list of nodes, in execution order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    /// Nodes whose tensors' shapes could not be inferred, with the reason;
    /// they are reported, never counted as zero.
    pub unanalysed: Vec<(Node, String)>,
    /// Nodes left out because every input is a constant (an engine folds them).
    pub folded: usize,
    /// Those nodes, where their tensors are known: costed apart, to show
    /// what folding saves.
    pub folded_nodes: Vec<Node>,
    /// Names of the graph's outputs (they must be written, fused or not).
    pub outputs: Vec<String>,
    /// Upper bounds of the data-dependent sizes (symbols) in the graph.
    pub bounds: BTreeMap<String, Bound>,
    /// The sizes [`Graph::bind`] took at their upper bound.
    pub assumed: Vec<Assumed>,
    /// The symbols in the model inputs' shapes not bound yet: binding them
    /// settles most of the others.
    pub input_symbols: Vec<String>,
    /// Symbols inference made up under a name a binding gave, and so took
    /// as that value: they are known names, though no shape holds them.
    pub bound_symbols: Vec<String>,
    /// What a trace says its backward pass ran (`backward_of` records).
    pub backward: Vec<BackwardRecord>,
    /// Names of the constants a trace marks as the model's state, not
    /// parameters (PyTorch's buffers), sorted.
    pub buffers: Vec<String>,
}

/// One operation of a recorded backward pass: part of the backward of the
/// main graph's node `of` (its index in [`Graph::nodes`]). Without
/// `grads` it is costed as the op it is (a matrix product); with them, by
/// its rule's backward for those inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct BackwardRecord {
    pub of: usize,
    pub node: Node,
    pub grads: Option<Vec<usize>>,
}

/// An upper bound of a size only known at run time, and the op that makes
/// the size (NonMaxSuppression selects at most what its inputs allow).
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub at_most: SymInt,
    pub op: String,
}

/// A data-dependent size that costs take at its upper bound, nothing else
/// having bound it.
#[derive(Debug, Clone, PartialEq)]
pub struct Assumed {
    pub symbol: String,
    pub value: u64,
    pub op: String,
}

/// Adds the symbols in a node's tensor shapes and its bodies' run counts.
fn symbols_of(node: &Node, out: &mut BTreeSet<String>) {
    let dims = node
        .inputs
        .iter()
        .chain(node.outputs.iter())
        .flatten()
        .flat_map(|t| t.shape.iter())
        .chain(node.bodies.iter().map(|b| &b.repeats));
    for d in dims {
        if let Dim::Sym(s) = d {
            out.extend(s.symbols());
        }
    }
}

/// The newest `ai.onnx` opset c3 knows; used when a trace names none.
pub const DEFAULT_OPSET: i64 = 23;

/// Gives unnamed nodes the name `OpType-N`, N counting from 1 per op type in
/// execution order (the original tool's convention).
pub fn name_unnamed(nodes: &mut [Node]) {
    let mut namer = Namer::default();
    for node in nodes {
        namer.name(node);
    }
}

/// [`name_unnamed`] a node at a time, in execution order.
#[derive(Default)]
pub struct Namer {
    counts: rustc_hash::FxHashMap<String, u64>,
}

impl Namer {
    /// Counts `node` among those of its type and, if it has no name, gives
    /// it `OpType-N`.
    pub fn name(&mut self, node: &mut Node) {
        use std::fmt::Write as _;
        // Count without copying the op name but the first time it is seen.
        let n = match self.counts.get_mut(node.op.as_str()) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                self.counts.insert(node.op.clone(), 1);
                1
            }
        };
        if node.name.is_empty() {
            let mut name = String::with_capacity(node.op.len() + 8);
            let _ = write!(name, "{}-{n}", node.op);
            node.name = name;
        }
    }
}

impl Graph {
    /// Calls `f` on every node, those inside subgraphs, those not
    /// analysed and a trace's backward records included; a node before its
    /// bodies' nodes.
    pub fn for_each_node(&self, f: &mut impl FnMut(&Node)) {
        let unanalysed = self.unanalysed.iter().map(|(n, _)| n);
        let backward = self.backward.iter().map(|r| &r.node);
        for node in self.nodes.iter().chain(unanalysed).chain(backward) {
            f(node);
            for b in &node.bodies {
                if let Ok(g) = &b.graph {
                    g.for_each_node(f);
                }
            }
        }
    }

    /// [`Graph::for_each_node`], with each node mutable.
    pub fn for_each_node_mut(&mut self, f: &mut impl FnMut(&mut Node)) {
        let unanalysed = self.unanalysed.iter_mut().map(|(n, _)| n);
        let backward = self.backward.iter_mut().map(|r| &mut r.node);
        for node in self.nodes.iter_mut().chain(unanalysed).chain(backward) {
            f(node);
            for b in &mut node.bodies {
                if let Ok(g) = &mut b.graph {
                    g.for_each_node_mut(f);
                }
            }
        }
    }

    /// Replaces symbols by values: those given (`--dim`), then each
    /// data-dependent size nothing gave at its upper bound (recorded in
    /// `assumed`). Symbols without either stay.
    pub fn bind(&mut self, given: &BTreeMap<String, i64>) {
        self.input_symbols.retain(|s| !given.contains_key(s));
        if given.is_empty() && self.bounds.is_empty() {
            return;
        }
        // The symbols still in the graph, which only a bound needs.
        let mut present = BTreeSet::new();
        if !self.bounds.is_empty() {
            self.for_each_node(&mut |node| symbols_of(node, &mut present));
        }
        let mut values = given.clone();
        // A bound may be made of other bounded sizes (NonZero of what an
        // If of data-dependent sizes returned): settle them until nothing
        // more follows.
        loop {
            let mut settled = false;
            for (name, b) in &self.bounds {
                if !present.contains(name) || values.contains_key(name) {
                    continue;
                }
                if let Some(v) = b.at_most.bind(&values).as_int().filter(|v| *v >= 0) {
                    values.insert(name.clone(), v);
                    self.assumed.push(Assumed {
                        symbol: name.clone(),
                        value: v as u64,
                        op: b.op.clone(),
                    });
                    settled = true;
                }
            }
            if !settled {
                break;
            }
        }
        self.settle(&values);
    }

    /// Replaces symbols by the values given, everywhere: in every layer's
    /// tensors, folded ones included, and subgraphs' run counts.
    pub fn settle(&mut self, values: &BTreeMap<String, i64>) {
        if values.is_empty() {
            return;
        }
        let bind_tensors = |node: &mut Node| {
            let symbolic = |t: &TensorFact| t.shape.iter().any(|d| matches!(d, Dim::Sym(_)));
            // Lists without a symbol are left as they are, shared or not.
            if !node
                .inputs
                .iter()
                .chain(node.outputs.iter())
                .flatten()
                .any(symbolic)
            {
                return;
            }
            for t in std::sync::Arc::make_mut(&mut node.inputs)
                .iter_mut()
                .chain(std::sync::Arc::make_mut(&mut node.outputs).iter_mut())
                .flatten()
            {
                // Shared with copies of the fact: replaced only where a
                // symbol is bound.
                if symbolic(t) {
                    t.shape = t.shape.iter().map(|d| d.bind(values)).collect();
                }
            }
        };
        self.for_each_node_mut(&mut |node| {
            bind_tensors(node);
            for b in &mut node.bodies {
                b.repeats = b.repeats.bind(values);
            }
        });
        self.folded_nodes.iter_mut().for_each(bind_tensors);
    }

    /// Every symbol left in the graph's layers and subgraphs' run counts.
    pub fn symbols(&self) -> BTreeSet<String> {
        let mut all = BTreeSet::new();
        self.for_each_node(&mut |n| symbols_of(n, &mut all));
        all
    }

    /// The symbols that keep the graph from being costed, in name order:
    /// the model inputs' unbound sizes wherever they reach (the others
    /// follow from them), else those left in the graph's own layers. (What
    /// is left inside a subgraph only keeps its node from being counted.)
    pub fn unbound_symbols(&self) -> Vec<String> {
        let mut everywhere = BTreeSet::new();
        if !self.input_symbols.is_empty() {
            self.for_each_node(&mut |n| symbols_of(n, &mut everywhere));
            let inputs: Vec<String> = self
                .input_symbols
                .iter()
                .filter(|s| everywhere.contains(*s))
                .cloned()
                .collect();
            if !inputs.is_empty() {
                return inputs;
            }
        }
        // A node's own tensors: its subgraphs' run counts are its concern.
        let own_of = |nodes: &[Node]| {
            let mut own = BTreeSet::new();
            for t in nodes
                .iter()
                .enumerate()
                .flat_map(|(i, n)| {
                    prefetch(nodes.get(i + AHEAD).map(Node::ahead));
                    n.inputs.iter().chain(n.outputs.iter())
                })
                .flatten()
            {
                for d in t.shape.iter() {
                    if let Dim::Sym(s) = d {
                        own.extend(s.symbols());
                    }
                }
            }
            own
        };
        // A large graph's nodes are looked through in two halves on two
        // threads: the walk is most of the time between inference and
        // costing, when nothing else runs (111k nodes: 3.4 ms).
        let own = if crate::threads::second_thread(self.nodes.len()) {
            let (a, b) = self.nodes.split_at(self.nodes.len() / 2);
            let (mut own, more) = crate::threads::both(|| own_of(a), || own_of(b));
            own.extend(more);
            own
        } else {
            own_of(&self.nodes)
        };
        own.into_iter().collect()
    }

    /// What-if precisions: every floating-point constant tensor (weights)
    /// becomes `weights`, every other floating-point tensor `activations`.
    /// Bytes and the compute precision follow.
    pub fn override_precision(&mut self, weights: Option<DType>, activations: Option<DType>) {
        // Nothing to change: no walk over every tensor of every node.
        if weights.is_none() && activations.is_none() {
            return;
        }
        let mut retype = |node: &mut Node| {
            for t in std::sync::Arc::make_mut(&mut node.inputs)
                .iter_mut()
                .chain(std::sync::Arc::make_mut(&mut node.outputs).iter_mut())
                .flatten()
            {
                if !is_float(t.dtype) {
                    continue;
                }
                let to = if t.constant { weights } else { activations };
                if let Some(d) = to {
                    t.dtype = d;
                }
            }
        };
        self.for_each_node_mut(&mut retype);
        // Folded nodes too: the parameters a layer counts may be theirs.
        self.for_each_folded_mut(&mut retype);
    }

    /// Calls `f` on every folded node, those of subgraphs included.
    fn for_each_folded_mut(&mut self, f: &mut impl FnMut(&mut Node)) {
        self.folded_nodes.iter_mut().for_each(&mut *f);
        let unanalysed = self.unanalysed.iter_mut().map(|(n, _)| n);
        for node in self.nodes.iter_mut().chain(unanalysed) {
            for b in &mut node.bodies {
                if let Ok(g) = &mut b.graph {
                    g.for_each_folded_mut(f);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_behave_as_a_map_by_name() {
        let a: Attrs = [
            ("strides".to_string(), AttrValue::Ints(vec![2, 2])),
            ("group".to_string(), AttrValue::Int(1)),
            ("alpha".to_string(), AttrValue::Float(0.5)),
            // A repeated name keeps its last value, as a map's insert does.
            ("group".to_string(), AttrValue::Int(4)),
        ]
        .into();
        assert_eq!(a.len(), 3);
        let names: Vec<&str> = a.keys().map(String::as_str).collect();
        assert_eq!(names, ["alpha", "group", "strides"]);
        assert_eq!(a.get("group"), Some(&AttrValue::Int(4)));
        assert_eq!(a["strides"], AttrValue::Ints(vec![2, 2]));
        assert_eq!(a.get("pads"), None);
        assert!(!a.contains_key("pads"));
        let mut b = a.clone();
        assert_eq!(b.insert("pads".into(), AttrValue::Int(0)), None);
        assert_eq!(
            b.insert("alpha".into(), AttrValue::Float(1.0)),
            Some(AttrValue::Float(0.5))
        );
        let names: Vec<&str> = b.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["alpha", "group", "pads", "strides"]);
        assert_eq!(b.remove("group"), Some(AttrValue::Int(4)));
        assert_eq!(b.len(), 3);
        // The same entries in any order are the same attributes.
        let map: BTreeMap<String, AttrValue> = a
            .iter()
            .rev()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(Attrs::from(map), a);
    }

    #[test]
    fn dtype_codes_names_and_widths() {
        assert_eq!(DType::parse("float32"), Some(DType::Float32));
        assert_eq!(DType::parse("FLOAT"), Some(DType::Float32));
        assert_eq!(DType::parse("half"), Some(DType::Float16));
        assert_eq!(DType::parse("int4").map(DType::bits), Some(4));
        assert_eq!(DType::from_onnx_code(16), Some(DType::Bfloat16));
        assert_eq!(DType::Int64.onnx_code(), 7);
        assert_eq!(DType::parse("nope"), None);
        // Every code 1..=26 maps to exactly one type.
        for code in 1..=26 {
            let t = DType::from_onnx_code(code).unwrap();
            assert_eq!(t.onnx_code(), code);
        }
    }

    #[test]
    fn unnamed_nodes_are_numbered_per_op() {
        let node = |op: &str, name: &str| Node {
            name: name.into(),
            op: op.into(),
            domain: String::new(),
            opset: DEFAULT_OPSET,
            attrs: Attrs::default(),
            inputs: Default::default(),
            outputs: Default::default(),
            bodies: vec![],
        };
        let mut nodes = vec![
            node("Relu", ""),
            node("Conv", "conv1"),
            node("Relu", ""),
            node("Conv", ""),
        ];
        name_unnamed(&mut nodes);
        let names: Vec<_> = nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["Relu-1", "conv1", "Relu-2", "Conv-2"]);
    }

    /// A large graph's symbols are gathered in two halves: the same set as
    /// one pass over it, from either half and from inputs or outputs.
    #[test]
    fn unbound_symbols_of_a_large_graph_are_those_of_one_pass() {
        let tensor = |d: Dim| TensorFact {
            dtype: DType::Float32,
            shape: vec![Dim::Known(1), d].into(),
            constant: false,
            name: None,
            nonzeros: None,
        };
        let node = |i: usize| {
            let input = match i {
                4_990 => Dim::symbol("b"),
                _ => Dim::Known(i as u64),
            };
            let output = match i {
                3 | 2_600 => Dim::symbol("a"),
                _ => Dim::Known(i as u64 + 1),
            };
            Node {
                name: format!("n{i}"),
                op: "Relu".into(),
                domain: String::new(),
                opset: DEFAULT_OPSET,
                attrs: Attrs::default(),
                inputs: vec![Some(tensor(input))].into(),
                outputs: vec![Some(tensor(output))].into(),
                bodies: vec![],
            }
        };
        for n in [
            10,
            crate::threads::SECOND_THREAD_FROM - 1,
            crate::threads::SECOND_THREAD_FROM,
            5_000,
        ] {
            let graph = Graph {
                nodes: (0..n).map(node).collect(),
                ..Graph::default()
            };
            // "a" in both halves of 5,000 (split at 2,500), "b" in the
            // second only.
            let expected = if n > 4_990 { vec!["a", "b"] } else { vec!["a"] };
            assert_eq!(graph.unbound_symbols(), expected, "{n} nodes");
        }
    }
}
