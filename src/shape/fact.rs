//! What is known about one value of the graph.

use std::fmt;
use std::sync::Arc;

use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// Integer tensors up to this many elements are carried as values, so shape
/// computations (Shape → Gather → Concat → Reshape) fold.
pub const MAX_VALUE_ELEMENTS: usize = 4096;

/// The kind of a graph value.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueKind {
    Tensor,
    /// A sequence of tensors; `dtype`/`shape` describe an element.
    Sequence,
    /// An optional value; `dtype`/`shape` describe the contained tensor.
    Optional,
    Map,
}

/// The data of a small tensor, flattened in row-major order. Shared, not
/// copied, when a fact is: a value is read by each of its consumers and
/// kept in the records, and may hold `MAX_VALUE_ELEMENTS` entries.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorValue {
    /// Integer and boolean tensors; entries may be symbolic (from `Shape`).
    Ints(Arc<Vec<SymInt>>),
    Floats(Arc<Vec<f64>>),
    Strings(Arc<Vec<String>>),
}

impl TensorValue {
    pub fn ints(v: Vec<SymInt>) -> TensorValue {
        TensorValue::Ints(Arc::new(v))
    }

    pub fn floats(v: Vec<f64>) -> TensorValue {
        TensorValue::Floats(Arc::new(v))
    }

    pub fn strings(v: Vec<String>) -> TensorValue {
        TensorValue::Strings(Arc::new(v))
    }

    pub fn len(&self) -> usize {
        match self {
            TensorValue::Ints(v) => v.len(),
            TensorValue::Floats(v) => v.len(),
            TensorValue::Strings(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values as integers: symbolic entries kept, floats truncated.
    pub fn as_ints(&self) -> Option<Vec<SymInt>> {
        match self {
            TensorValue::Ints(v) => Some(v.to_vec()),
            TensorValue::Floats(v) => Some(v.iter().map(|f| SymInt::Int(*f as i64)).collect()),
            TensorValue::Strings(_) => None,
        }
    }

    /// The values as known integers, if none is symbolic: those of
    /// [`TensorValue::as_ints`], read without copying them first.
    pub fn as_known_ints(&self) -> Option<Vec<i64>> {
        match self {
            TensorValue::Ints(v) => v.iter().map(SymInt::as_int).collect(),
            TensorValue::Floats(v) => Some(v.iter().map(|f| *f as i64).collect()),
            TensorValue::Strings(_) => None,
        }
    }

    pub fn as_floats(&self) -> Option<Vec<f64>> {
        match self {
            TensorValue::Floats(v) => Some(v.to_vec()),
            TensorValue::Ints(v) => v.iter().map(|i| i.as_int().map(|i| i as f64)).collect(),
            TensorValue::Strings(_) => None,
        }
    }
}

/// A constant whose data is loaded only when a shape computation needs it
/// (an initializer's bytes stay untouched otherwise).
pub trait ConstantData: Send + Sync {
    fn load(&self) -> Result<TensorValue, String>;
}

/// What is known about a value: kind, element type, shape, maybe its data.
#[derive(Clone)]
pub struct Fact {
    pub kind: ValueKind,
    pub dtype: Option<DType>,
    /// `None` when even the rank is unknown.
    pub shape: Option<Vec<Dim>>,
    pub value: Option<TensorValue>,
    /// For constants: their data, loaded on demand.
    pub constant: Option<Arc<dyn ConstantData>>,
    /// For a sequence whose length is known: each position's tensor fact
    /// (`dtype`/`shape` then say only what all of them share).
    pub elements: Option<Vec<Fact>>,
}

impl PartialEq for Fact {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.dtype == other.dtype
            && self.shape == other.shape
            && self.value == other.value
            && self.elements == other.elements
    }
}

impl fmt::Debug for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fact({self})")
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ValueKind::Tensor => {}
            ValueKind::Sequence => f.write_str("seq ")?,
            ValueKind::Optional => f.write_str("optional ")?,
            ValueKind::Map => f.write_str("map ")?,
        }
        match self.dtype {
            Some(t) => write!(f, "{t}")?,
            None => f.write_str("?")?,
        }
        match &self.shape {
            Some(s) => {
                let dims: Vec<String> = s.iter().map(Dim::to_string).collect();
                write!(f, "[{}]", dims.join(", "))
            }
            None => f.write_str("[?]"),
        }
    }
}

impl Fact {
    /// Nothing known.
    pub fn unknown() -> Fact {
        Fact {
            kind: ValueKind::Tensor,
            dtype: None,
            shape: None,
            value: None,
            constant: None,
            elements: None,
        }
    }

    pub fn tensor(dtype: Option<DType>, shape: Option<Vec<Dim>>) -> Fact {
        Fact {
            dtype,
            shape,
            ..Fact::unknown()
        }
    }

    /// A tensor of known type and shape.
    pub fn new(dtype: DType, shape: Vec<Dim>) -> Fact {
        Fact::tensor(Some(dtype), Some(shape))
    }

    /// A tensor holding `value`, whose shape is given.
    pub fn with_value(dtype: DType, shape: Vec<Dim>, value: TensorValue) -> Fact {
        Fact {
            value: Some(value),
            ..Fact::new(dtype, shape)
        }
    }

    /// A 1-D int64 tensor holding `values` (what `Shape` produces).
    pub fn ints_1d(values: Vec<SymInt>) -> Fact {
        let n = values.len() as u64;
        Fact::with_value(DType::Int64, vec![Dim::Known(n)], TensorValue::ints(values))
    }

    pub fn rank(&self) -> Option<usize> {
        self.shape.as_ref().map(Vec::len)
    }

    /// Whether every dimension is a known number.
    pub fn is_fully_known(&self) -> bool {
        self.shape
            .as_ref()
            .is_some_and(|s| s.iter().all(|d| d.known().is_some()))
    }

    /// Element count, when the shape is known (possibly symbolic) and the
    /// count computable. Where a count past the dimension limits must fail
    /// the node, shape functions use [`InferCtx::elements_of`].
    ///
    /// [`InferCtx::elements_of`]: super::ctx::InferCtx::elements_of
    pub fn elements(&self) -> Option<SymInt> {
        self.element_count()?.ok()
    }

    /// Element count when the shape is known, or why it cannot be computed.
    pub fn element_count(&self) -> Option<Result<SymInt, crate::dim::Overflow>> {
        let mut n = SymInt::Int(1);
        for d in self.shape.as_ref()? {
            n = match n.mul(&d.to_symint()) {
                Ok(v) => v,
                Err(e) => return Some(Err(e)),
            };
        }
        Some(Ok(n))
    }

    /// The same fact with another shape (value dropped).
    pub fn reshaped(&self, shape: Option<Vec<Dim>>) -> Fact {
        Fact {
            kind: self.kind.clone(),
            dtype: self.dtype,
            shape,
            value: None,
            constant: None,
            elements: None,
        }
    }

    /// A sequence of `elements`, known position by position; its element
    /// type and shape are what they all share.
    pub fn sequence(dtype: Option<DType>, elements: Vec<Fact>) -> Fact {
        let shape = match elements.split_first() {
            Some((first, rest)) if rest.iter().all(|e| e.shape == first.shape) => {
                first.shape.clone()
            }
            _ => None,
        };
        Fact {
            kind: ValueKind::Sequence,
            elements: Some(
                elements
                    .into_iter()
                    .map(|e| Fact {
                        value: e.value,
                        ..Fact::tensor(e.dtype, e.shape)
                    })
                    .collect(),
            ),
            ..Fact::tensor(dtype, shape)
        }
    }

    /// Takes from a declared type what inference did not find: the kind and
    /// element type when nothing was inferred, the shape when even the rank is
    /// unknown, and known sizes where inference only has a symbol.
    pub(crate) fn refine(&mut self, d: Fact) {
        let f = self;
        if f.kind == ValueKind::Tensor && f.dtype.is_none() && f.shape.is_none() {
            f.kind = d.kind.clone();
        }
        if f.dtype.is_none() {
            f.dtype = d.dtype;
        }
        match (&mut f.shape, d.shape) {
            // A sequence known position by position whose elements differ has
            // no shape they share: a declared one (`[?, ?]`) adds nothing but
            // made-up sizes.
            (None, Some(_)) if f.elements.is_some() => {}
            (None, Some(s)) => {
                f.shape = Some(s);
                f.kind = d.kind;
            }
            (Some(s), Some(ds)) if f.kind == d.kind && s.len() == ds.len() => {
                for (x, y) in s.iter_mut().zip(ds) {
                    if matches!(x, Dim::Sym(_)) && matches!(y, Dim::Known(_)) {
                        *x = y;
                    }
                }
            }
            _ => {}
        }
    }
}
