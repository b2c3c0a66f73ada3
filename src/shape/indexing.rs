//! Indexing and selection: Gather, GatherElements/ND, Scatter*, TopK,
//! NonZero, Unique, Compress and NonMaxSuppression.
//!
//! Sizes that depend on data (NonZero's count, Unique's, NMS's selection)
//! are fresh symbols unless the data itself is known, in which case they are
//! counted.

// ---------------------------------------------------------------- helpers

use super::ctx::{InferCtx, Result, ShapeError, axis, dim, err, join};
use super::dims::{count, fold_map, known_usize, like_input, out_fact, strides};
use super::fact::{Fact, MAX_VALUE_ELEMENTS, TensorValue};
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};
use std::collections::HashSet;

/// A scalar (or one-element) input's value, possibly symbolic.
pub(super) fn scalar(ctx: &InferCtx, i: usize) -> Option<SymInt> {
    match ctx.ints(i)?.as_slice() {
        [x] => Some(x.clone()),
        _ => None,
    }
}

/// The element type an attribute names by its ONNX code, else `default`.
pub(super) fn dtype_attr(
    ctx: &InferCtx,
    name: &str,
    default: Option<DType>,
) -> Result<Option<DType>> {
    match ctx.attr_int(name) {
        None => Ok(default),
        Some(code) => i32::try_from(code)
            .ok()
            .and_then(DType::from_onnx_code)
            .map(Some)
            .ok_or_else(|| ShapeError(format!("`{name}` names unknown element type {code}"))),
    }
}

/// A dimension from a value when it is known, else a fresh symbol.
pub(super) fn dim_or_fresh(ctx: &InferCtx, v: Option<&SymInt>, hint: &str) -> Result<Dim> {
    match v {
        Some(v) => dim(v),
        None => Ok(ctx.fresh_dim(hint)),
    }
}

/// Output 0 has input 0's shape and the given type.
pub(super) fn same_shape_as(ctx: &mut InferCtx, dtype: Option<DType>) -> Result<()> {
    let shape = ctx.require(0)?.shape.clone();
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// One element of a known tensor, hashable, for counting distinct values.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Elem {
    Int(i64),
    /// Bits of the value, with -0.0 folded into 0.0 (they compare equal).
    Float(u64),
    Str(String),
}

/// The known elements of input `i`; `None` when any is symbolic or unknown.
fn elems(ctx: &InferCtx, i: usize) -> Option<Vec<Elem>> {
    match ctx.value(i)? {
        TensorValue::Ints(v) => v.iter().map(|x| x.as_int().map(Elem::Int)).collect(),
        TensorValue::Floats(v) => Some(
            v.iter()
                .map(|f| Elem::Float(if *f == 0.0 { 0 } else { f.to_bits() }))
                .collect(),
        ),
        TensorValue::Strings(v) => Some(v.iter().cloned().map(Elem::Str).collect()),
    }
}

fn is_nonzero(e: &Elem) -> bool {
    match e {
        Elem::Int(i) => *i != 0,
        Elem::Float(b) => *b != 0,
        Elem::Str(s) => !s.is_empty(),
    }
}

/// Input `i`'s known sizes and data, when the data fills the shape (so
/// positions computed from the sizes are in the data).
fn shaped_data(ctx: &InferCtx, i: usize) -> Option<(Vec<u64>, Vec<Elem>)> {
    let dims = known_dims(ctx.shape(i)?)?;
    let data = elems(ctx, i)?;
    fills(&dims, data.len()).then_some((dims, data))
}

/// Whether `len` values are exactly a tensor of sizes `dims`.
fn fills(dims: &[u64], len: usize) -> bool {
    count(dims) == Some(len as u64)
}

/// The known sizes of a shape.
fn known_dims(s: &[Dim]) -> Option<Vec<u64>> {
    s.iter().map(Dim::known).collect()
}

// ---------------------------------------------------------------- folding
//
// Shape vectors are sometimes edited with Gather/Scatter ops (an exporter
// writing `shape[i] = n`); with known indices these fold like Gather does.

/// Input `i`'s known sizes and integer data (entries may be symbolic), when
/// the data fills the shape.
fn int_data(ctx: &InferCtx, i: usize) -> Option<(Vec<u64>, Vec<SymInt>)> {
    let dims = known_dims(ctx.shape(i)?)?;
    let TensorValue::Ints(v) = ctx.value(i)? else {
        return None;
    };
    fills(&dims, v.len()).then_some((dims, v.to_vec()))
}

/// Input `i`'s known sizes and known index values.
fn index_data(ctx: &InferCtx, i: usize) -> Option<(Vec<u64>, Vec<i64>)> {
    let (dims, v) = int_data(ctx, i)?;
    let v = v.iter().map(SymInt::as_int).collect::<Option<Vec<_>>>()?;
    Some((dims, v))
}

/// An index into a dimension of size `n`, negative counting from the end;
/// `None` when out of range.
fn wrap(i: i64, n: u64) -> Option<u64> {
    let n = i64::try_from(n).ok()?;
    let j = if i < 0 { i.checked_add(n)? } else { i };
    (0..n).contains(&j).then_some(j as u64)
}

/// The flat data position an index tuple (addressing the leading
/// dimensions) starts at.
fn nd_offset(tuple: &[i64], dims: &[u64], st: &[u64]) -> Option<usize> {
    let mut off = 0u64;
    for ((&t, &n), &s) in tuple.iter().zip(dims).zip(st) {
        off = off.checked_add(wrap(t, n)?.checked_mul(s)?)?;
    }
    usize::try_from(off).ok()
}

/// For GatherElements/ScatterElements: the flat data position that element
/// `p` of the indices addresses (its own coordinates, with `index` on the
/// axis).
fn element_target(
    p: usize,
    ix_dims: &[u64],
    data_dims: &[u64],
    a: usize,
    index: i64,
) -> Option<usize> {
    let ist = strides(ix_dims);
    let dst = strides(data_dims);
    let mut off = 0u64;
    for d in 0..ix_dims.len() {
        let n = *data_dims.get(d)?;
        let c = if d == a {
            wrap(index, n)?
        } else {
            let c = (p as u64).checked_div(ist[d])? % ix_dims[d].max(1);
            (c < n).then_some(c)?
        };
        off = off.checked_add(c.checked_mul(*dst.get(d)?)?)?;
    }
    usize::try_from(off).ok()
}

/// A scatter reduction of the old and new value (a value past the
/// dimension limits is the node's error, see [`InferCtx::folded`]).
fn combine(ctx: &InferCtx, reduction: &str, old: &SymInt, new: &SymInt) -> Option<SymInt> {
    match reduction {
        "none" => Some(new.clone()),
        "add" => ctx.folded(old.add(new)),
        "mul" => ctx.folded(old.mul(new)),
        "max" => ctx.folded(old.max_with(new)),
        "min" => ctx.folded(old.min_with(new)),
        _ => None,
    }
}

fn reduction(ctx: &InferCtx) -> String {
    ctx.attr_string_or("reduction", "none")
}

fn fold_gather_elements(ctx: &InferCtx, a: usize) -> Option<TensorValue> {
    let (dd, data) = int_data(ctx, 0)?;
    let (id, idx) = index_data(ctx, 1)?;
    let out = idx
        .iter()
        .enumerate()
        .map(|(p, &i)| data.get(element_target(p, &id, &dd, a, i)?).cloned())
        .collect::<Option<Vec<_>>>()?;
    Some(TensorValue::ints(out))
}

/// GatherND without batch dimensions: each index tuple picks a slice.
fn fold_gather_nd(ctx: &InferCtx) -> Option<TensorValue> {
    if ctx.attr_int_or("batch_dims", 0) != 0 {
        return None;
    }
    let (dd, data) = int_data(ctx, 0)?;
    let (id, idx) = index_data(ctx, 1)?;
    let k = usize::try_from(*id.last()?).ok().filter(|&k| k > 0)?;
    let slice = usize::try_from(count(dd.get(k..)?)?).ok()?;
    let st = strides(&dd);
    if (idx.len() / k).checked_mul(slice)? > MAX_VALUE_ELEMENTS {
        return None;
    }
    let mut out = Vec::new();
    for tuple in idx.chunks_exact(k) {
        let off = nd_offset(tuple, &dd, &st)?;
        out.extend_from_slice(data.get(off..off.checked_add(slice)?)?);
    }
    Some(TensorValue::ints(out))
}

/// ScatterND: each index tuple's slice of the data takes an update slice.
fn fold_scatter_nd(ctx: &InferCtx) -> Option<TensorValue> {
    let (dd, mut data) = int_data(ctx, 0)?;
    let (id, idx) = index_data(ctx, 1)?;
    let (_, upd) = int_data(ctx, 2)?;
    let k = usize::try_from(*id.last()?).ok().filter(|&k| k > 0)?;
    let slice = usize::try_from(count(dd.get(k..)?)?).ok()?;
    let st = strides(&dd);
    let how = reduction(ctx);
    if upd.len() != (idx.len() / k).checked_mul(slice)? {
        return None;
    }
    for (tuple, new) in idx.chunks_exact(k).zip(upd.chunks(slice.max(1))) {
        let off = nd_offset(tuple, &dd, &st)?;
        for (e, n) in new.iter().enumerate() {
            let slot = data.get_mut(off.checked_add(e)?)?;
            *slot = combine(ctx, &how, slot, n)?;
        }
    }
    Some(TensorValue::ints(data))
}

/// Scatter/ScatterElements: element p of the updates goes where element p
/// of the indices points.
fn fold_scatter_elements(ctx: &InferCtx, a: usize) -> Option<TensorValue> {
    let (dd, mut data) = int_data(ctx, 0)?;
    let (id, idx) = index_data(ctx, 1)?;
    let (ud, upd) = int_data(ctx, 2)?;
    if ud != id {
        return None;
    }
    let how = if ctx.op == "Scatter" {
        "none".to_string()
    } else {
        reduction(ctx)
    };
    for (p, (&i, n)) in idx.iter().zip(&upd).enumerate() {
        let slot = data.get_mut(element_target(p, &id, &dd, a, i)?)?;
        *slot = combine(ctx, &how, slot, n)?;
    }
    Some(TensorValue::ints(data))
}

// ---------------------------------------------------------------- gather / scatter

/// GatherElements: the output takes the indices' shape and the data's type.
fn gather_elements(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.require(0)?.dtype;
    let mut value = None;
    if let (Some(r), Some(q)) = (ctx.rank(0), ctx.rank(1)) {
        if r != q {
            return err(format!(
                "data (rank {r}) and indices (rank {q}) must have the same rank"
            ));
        }
        let a = axis(ctx.attr_int_or("axis", 0), r)?;
        value = fold_gather_elements(ctx, a);
    }
    let shape = ctx.shape(1).cloned();
    ctx.set(
        0,
        Fact {
            value,
            ..Fact::tensor(dtype, shape)
        },
    );
    Ok(())
}

/// GatherND: `indices.shape[:-1] + data.shape[batch_dims + k:]`, with `k`
/// the indices' last dimension.
fn gather_nd(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.require(0)?.dtype;
    let mut shape = None;
    if let (Some(d), Some(ix)) = (ctx.shape(0), ctx.shape(1)) {
        let Some((last, outer)) = ix.split_last() else {
            return err("GatherND indices must have rank 1 or more");
        };
        let b = ctx.attr_int_or("batch_dims", 0);
        let b = usize::try_from(b)
            .ok()
            .filter(|&b| b < d.len().min(ix.len()))
            .ok_or_else(|| {
                ShapeError(format!(
                    "batch_dims {b} must be below both ranks ({} and {})",
                    d.len(),
                    ix.len()
                ))
            })?;
        if let Some(k) = last.known() {
            let end = usize::try_from(k)
                .ok()
                .and_then(|k| k.checked_add(b))
                .filter(|&e| e <= d.len())
                .ok_or_else(|| {
                    ShapeError(format!(
                        "indices address {k} dimensions after {b} batch dimensions of data [{}]",
                        join(d)
                    ))
                })?;
            let mut s = outer.to_vec();
            s.extend_from_slice(&d[end..]);
            shape = Some(s);
        }
    }
    let value = shape.as_ref().and_then(|_| fold_gather_nd(ctx));
    ctx.set(
        0,
        Fact {
            value,
            ..Fact::tensor(dtype, shape)
        },
    );
    Ok(())
}

/// Scatter, ScatterElements, ScatterND, TensorScatter: the data, updated in
/// place, keeps its shape. Ranks that cannot go together are errors.
fn scatter(ctx: &mut InferCtx) -> Result<()> {
    let (a, b) = match ctx.op {
        // indices and updates have the data's rank.
        "Scatter" | "ScatterElements" => (1, 2),
        // update has the cache's rank.
        "TensorScatter" => (0, 1),
        _ => (0, 0),
    };
    for i in [a, b] {
        if let (Some(r), Some(q)) = (ctx.rank(0), ctx.rank(i))
            && r != q
        {
            return err(format!("input {} has rank {q}, the data rank {r}", i + 1));
        }
    }
    let mut value = None;
    if let Some(r) = ctx.rank(0) {
        match ctx.op {
            "Scatter" | "ScatterElements" => {
                let a = axis(ctx.attr_int_or("axis", 0), r)?;
                value = fold_scatter_elements(ctx, a);
            }
            "TensorScatter" => {
                axis(ctx.attr_int_or("axis", -2), r)?;
            }
            _ => value = fold_scatter_nd(ctx),
        }
    }
    like_input(ctx)?;
    if let Some(o) = ctx.output_mut(0) {
        o.value = value;
    }
    Ok(())
}

// ---------------------------------------------------------------- selection

/// TopK: the axis shrinks to `k` (attribute before opset 10, input after).
fn top_k(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.require(0)?.dtype;
    let k = if ctx.opset < 10 {
        ctx.attr_int("k").map(SymInt::Int)
    } else {
        scalar(ctx, 1)
    };
    let mut shape = None;
    if let Some(s) = ctx.shape(0) {
        let a = axis(ctx.attr_int_or("axis", -1), s.len())?;
        // k read from data is at most the axis size.
        let kd = match &k {
            Some(k) => dim(k)?,
            None => ctx.bounded_dim("topk", s[a].to_symint()),
        };
        let mut s = s.clone();
        if let Some(slot) = s.get_mut(a) {
            if let (Some(k), Some(n)) = (kd.known(), slot.known())
                && k > n
            {
                return err(format!("k = {k} exceeds the axis size {n}"));
            }
            *slot = kd;
        }
        shape = Some(s);
    }
    ctx.set(0, Fact::tensor(dtype, shape.clone()));
    ctx.set(1, Fact::tensor(Some(DType::Int64), shape));
    Ok(())
}

/// NonZero: `[rank, count]`; the count (and the indices) are known when the
/// input's data is.
fn non_zero(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?;
    let Some(s) = x.shape.clone() else {
        ctx.set(0, Fact::tensor(Some(DType::Int64), None));
        return Ok(());
    };
    let rank = s.len() as u64;
    let Some((dims, data)) = shaped_data(ctx, 0) else {
        // At most every element is non-zero.
        let n = match ctx.elements_of(x) {
            Some(all) => ctx.bounded_dim("nonzero", all),
            None => ctx.fresh_dim("nonzero"),
        };
        ctx.set(0, Fact::new(DType::Int64, vec![Dim::Known(rank), n]));
        return Ok(());
    };
    let hits: Vec<usize> = (0..data.len()).filter(|&i| is_nonzero(&data[i])).collect();
    let shape = vec![Dim::Known(rank), Dim::Known(hits.len() as u64)];
    let mut fact = Fact::new(DType::Int64, shape);
    if hits.len().saturating_mul(s.len()) <= MAX_VALUE_ELEMENTS {
        // Row d holds coordinate d of every hit, in row-major order.
        let mut rows = vec![Vec::with_capacity(hits.len()); s.len()];
        for &flat in &hits {
            let mut rest = flat as u64;
            for (d, &n) in dims.iter().enumerate().rev() {
                if n > 0 {
                    rows[d].push(SymInt::Int((rest % n) as i64));
                    rest /= n;
                }
            }
        }
        fact.value = Some(TensorValue::ints(rows.concat()));
    }
    ctx.set(0, fact);
    Ok(())
}

/// How many distinct elements (no axis) or slices along `axis` the known
/// data of input 0 has.
fn distinct_count(ctx: &InferCtx, ax: Option<usize>) -> Option<u64> {
    let Some(a) = ax else {
        return Some(elems(ctx, 0)?.iter().collect::<HashSet<_>>().len() as u64);
    };
    let (dims, data) = shaped_data(ctx, 0)?;
    // Empty data says nothing useful (and its axis may still be huge).
    if data.is_empty() {
        return None;
    }
    let n = *dims.get(a)? as usize;
    let inner = count(dims.get(a + 1..)?)? as usize;
    let outer = count(dims.get(..a)?)?;
    let slices: HashSet<Vec<&Elem>> = (0..n)
        .map(|i| {
            (0..outer as usize)
                .flat_map(|o| (0..inner).map(move |j| (o * n + i) * inner + j))
                .filter_map(|k| data.get(k))
                .collect()
        })
        .collect();
    Some(slices.len() as u64)
}

/// Unique: Y, indices, inverse_indices, counts. The number of unique values
/// is counted when the data is known, else a fresh symbol.
fn unique(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let ax = match (ctx.attr_int("axis"), x.rank()) {
        (Some(a), Some(r)) => Some(Some(axis(a, r)?)),
        // An axis over an unknown rank: the slices cannot be described.
        (Some(_), None) => None,
        (None, _) => Some(None),
    };
    // At most every element (or slice along the axis) is distinct.
    let all = match (ax, &x.shape) {
        (Some(None), _) => ctx.elements_of(&x),
        (Some(Some(a)), Some(s)) => s.get(a).map(Dim::to_symint),
        _ => None,
    };
    let u = match (ax.and_then(|a| distinct_count(ctx, a)), all) {
        (Some(n), _) => Dim::Known(n),
        (None, Some(all)) => ctx.bounded_dim("unique", all),
        (None, None) => ctx.fresh_dim("unique"),
    };
    let (y, inverse) = match (ax, &x.shape) {
        (Some(None), _) => {
            let n = match ctx.elements_of(&x) {
                Some(n) => Some(vec![dim(&n)?]),
                None => None,
            };
            (Some(vec![u.clone()]), n)
        }
        (Some(Some(a)), Some(s)) => {
            let mut y = s.clone();
            let n = y.get(a).cloned();
            if let Some(slot) = y.get_mut(a) {
                *slot = u.clone();
            }
            (Some(y), n.map(|n| vec![n]))
        }
        _ => (None, None),
    };
    ctx.set(0, Fact::tensor(x.dtype, y));
    ctx.set(1, Fact::new(DType::Int64, vec![u.clone()]));
    ctx.set(2, Fact::tensor(Some(DType::Int64), inverse));
    ctx.set(3, Fact::new(DType::Int64, vec![u]));
    Ok(())
}

/// Compress: the selected axis (or the flattened input) keeps as many
/// entries as the condition has true values.
fn compress(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let ax = match (ctx.attr_int("axis"), x.rank()) {
        (Some(a), Some(r)) => Some(axis(a, r)?),
        (Some(_), None) => {
            ctx.set(0, Fact::tensor(x.dtype, None));
            return Ok(());
        }
        (None, _) => None,
    };
    // Entries past the axis length are discarded, so count only those.
    let limit = match ax {
        Some(a) => x.shape.as_ref().and_then(|s| s.get(a)).and_then(Dim::known),
        None => x.elements().and_then(|n| n.as_int()).map(|n| n as u64),
    };
    let count = elems(ctx, 1).map(|c| {
        let take = limit.map_or(c.len(), |l| c.len().min(l as usize));
        c.iter().take(take).filter(|e| is_nonzero(e)).count() as u64
    });
    // At most every entry the condition covers is kept.
    let covered = ctx.shape(1).and_then(|s| s.first()).and_then(Dim::known);
    let at_most = match (limit, covered) {
        (Some(l), Some(c)) => Some(l.min(c)),
        (l, c) => l.or(c),
    };
    let n = match (count, at_most) {
        (Some(n), _) => Dim::Known(n),
        (None, Some(m)) => ctx.bounded_dim("compress", SymInt::Int(m as i64)),
        (None, None) => ctx.fresh_dim("compress"),
    };
    let shape = match ax {
        None => Some(vec![n]),
        Some(a) => x.shape.map(|mut s| {
            if let Some(slot) = s.get_mut(a) {
                *slot = n;
            }
            s
        }),
    };
    ctx.set(0, Fact::tensor(x.dtype, shape));
    Ok(())
}

/// NonMaxSuppression: `[selected, 3]` int64 triples; how many are selected
/// depends on the boxes, but never more than `max_output_boxes_per_class`
/// (absent: 0) or the boxes there are, per batch entry and class.
fn non_max_suppression(ctx: &mut InferCtx) -> Result<()> {
    let dims = |i: usize, k: usize| ctx.shape(i).and_then(|s| s.get(k)).map(Dim::to_symint);
    let (batch, classes, boxes) = (dims(1, 0), dims(1, 1), dims(0, 1));
    let per_class = match ctx.input(2) {
        None => Some(SymInt::Int(0)),
        Some(_) => scalar(ctx, 2),
    };
    let at_most = match (batch, classes, boxes) {
        (Some(b), Some(c), Some(s)) => {
            let each = match (per_class.as_ref().and_then(SymInt::as_int), s.as_int()) {
                (Some(m), Some(n)) => SymInt::Int(m.clamp(0, n)),
                // At most the boxes there are, however large the limit
                // (torchvision passes the largest int64).
                (Some(m), None) => s.min_with(&SymInt::Int(m.max(0)))?,
                (None, _) => s,
            };
            Some(b.mul(&c)?.mul(&each)?)
        }
        _ => None,
    };
    let n = match at_most {
        Some(m) => ctx.bounded_dim("nms", m),
        None => ctx.fresh_dim("nms"),
    };
    ctx.set(0, Fact::new(DType::Int64, vec![n, Dim::Known(3)]));
    Ok(())
}

// ---------------------------------------------------------------- resampling

// ---------------------------------------------------------------- strings

// ---------------------------------------------------------------- signal

// ---------------------------------------------------------------- random

// ---------------------------------------------------------------- text

// ---------------------------------------------------------------- ai.onnx.ml

// ---------------------------------------------------------------- training

// ---------------------------------------------------------------- table

/// Gather: the indexed axis is replaced by the indices' shape.
fn gather(ctx: &mut InferCtx) -> Result<()> {
    let Some(f) = gather_of_sizes(ctx)? else {
        return gather_any(ctx);
    };
    ctx.set(0, f);
    Ok(())
}

/// Gather, whatever its inputs ([`gather`]).
fn gather_any(ctx: &mut InferCtx) -> Result<()> {
    let data = ctx.require(0)?.clone();
    let idx_shape = ctx.shape(1).cloned();
    let (Some(s), Some(q)) = (data.shape.clone(), idx_shape) else {
        ctx.set(0, Fact::tensor(data.dtype, None));
        return Ok(());
    };
    let a = axis(ctx.attr_int_or("axis", 0), s.len())?;
    let mut shape = s[..a].to_vec();
    shape.extend(q.iter().cloned());
    shape.extend(s[a + 1..].iter().cloned());
    let indices = ctx.known_ints(1);
    // Resolve negative indices; known out-of-range ones are an error.
    let resolved: Option<Vec<usize>> = match (&indices, s[a].known()) {
        (Some(ix), Some(n)) => Some(
            ix.iter()
                .map(|&i| {
                    let j = if i < 0 {
                        i as i128 + n as i128
                    } else {
                        i as i128
                    };
                    usize::try_from(j)
                        .ok()
                        .filter(|&j| (j as u64) < n)
                        .ok_or_else(|| {
                            ShapeError(format!("Gather index {i} is out of range for size {n}"))
                        })
                })
                .collect::<Result<_>>()?,
        ),
        _ => None,
    };
    let q_rank = q.len();
    let value = resolved.and_then(|ix| {
        let q_strides = strides(&known_usize(&q)?);
        fold_map(ctx, &shape, |o, src| {
            src[..a].copy_from_slice(&o[..a]);
            let flat = o[a..a + q_rank]
                .iter()
                .zip(&q_strides)
                .map(|(i, st)| i * st)
                .sum::<usize>();
            src[a] = *ix.get(flat)?;
            src[a + 1..].copy_from_slice(&o[a + q_rank..]);
            Some(())
        })
    });
    ctx.set(0, out_fact(data.dtype, Some(shape), value));
    Ok(())
}

/// Gather from a 1-D integer vector whose entries are known, at indices
/// of known shape: `x.shape[1]` as exports write it (Shape, then Gather
/// of a constant), thousands of times in a decoder's shape arithmetic.
/// The fact [`gather_any`] makes (the indices resolved and checked
/// alike, the value where it folds one), without its copies of
/// the input's fact, of both shapes and of the index list; `None` where
/// that path is needed.
fn gather_of_sizes(ctx: &InferCtx) -> Result<Option<Fact>> {
    let Some(data) = ctx.input(0) else {
        return Ok(None);
    };
    let (Some(s), Some(TensorValue::Ints(v)), Some(q)) = (&data.shape, &data.value, ctx.shape(1))
    else {
        return Ok(None);
    };
    let [Dim::Known(n)] = s[..] else {
        return Ok(None);
    };
    if v.len() as u64 != n {
        return Ok(None);
    }
    // The output's shape: the indices' (the data is 1-D, so axis 0).
    axis(ctx.attr_int_or("axis", 0), 1)?;
    let unfolded = || Ok(Some(out_fact(data.dtype, Some(q.clone()), None)));
    let Some(ix) = ctx.known_ints(1) else {
        return unfolded();
    };
    let mut resolved = Vec::with_capacity(ix.len());
    for &i in &ix {
        let j = if i < 0 {
            i as i128 + n as i128
        } else {
            i as i128
        };
        let j = usize::try_from(j)
            .ok()
            .filter(|&j| (j as u64) < n)
            .ok_or_else(|| ShapeError(format!("Gather index {i} is out of range for size {n}")))?;
        resolved.push(j);
    }
    // One output entry per index, in order, as far as the indices' shape
    // is known and holds few enough (the general path's `fold_map`).
    let count = known_usize(q).and_then(|d| d.iter().try_fold(1usize, |a, &d| a.checked_mul(d)));
    let Some(count) = count.filter(|&c| c <= MAX_VALUE_ELEMENTS && c <= resolved.len()) else {
        return unfolded();
    };
    let value = TensorValue::ints(resolved[..count].iter().map(|&j| v[j].clone()).collect());
    Ok(Some(out_fact(data.dtype, Some(q.clone()), Some(value))))
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 12] = [
        ("GatherElements", gather_elements),
        ("GatherND", gather_nd),
        ("Gather", gather),
        ("Scatter", scatter),
        ("ScatterElements", scatter),
        ("ScatterND", scatter),
        ("TensorScatter", scatter),
        ("TopK", top_k),
        ("NonZero", non_zero),
        ("Unique", unique),
        ("Compress", compress),
        ("NonMaxSuppression", non_max_suppression),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
pub(super) mod tests {

    use super::*;
    use crate::proto::AttributeProto;
    use crate::shape::fact::ValueKind;

    pub(in crate::shape) fn attr(name: &str) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            ..Default::default()
        }
    }
    pub(in crate::shape) fn int(name: &str, v: i64) -> AttributeProto {
        AttributeProto {
            i: Some(v),
            ..attr(name)
        }
    }
    pub(in crate::shape) fn ints(name: &str, v: &[i64]) -> AttributeProto {
        AttributeProto {
            ints: v.to_vec(),
            ..attr(name)
        }
    }
    pub(in crate::shape) fn floats(name: &str, v: &[f32]) -> AttributeProto {
        AttributeProto {
            floats: v.to_vec(),
            ..attr(name)
        }
    }
    pub(in crate::shape) fn string(name: &str, v: &str) -> AttributeProto {
        AttributeProto {
            s: Some(v.as_bytes().to_vec().into()),
            ..attr(name)
        }
    }

    pub(in crate::shape) fn k(n: u64) -> Dim {
        Dim::Known(n)
    }
    pub(in crate::shape) fn sym(s: &str) -> Dim {
        Dim::symbol(s)
    }
    pub(in crate::shape) fn f32s(dims: Vec<Dim>) -> Option<Fact> {
        Some(Fact::new(DType::Float32, dims))
    }
    pub(in crate::shape) fn i64s(dims: Vec<Dim>, v: &[i64]) -> Option<Fact> {
        let vals = TensorValue::ints(v.iter().map(|&x| SymInt::Int(x)).collect());
        Some(Fact::with_value(DType::Int64, dims, vals))
    }
    pub(in crate::shape) fn floats_value(v: &[f64]) -> Option<Fact> {
        let n = v.len() as u64;
        Some(Fact::with_value(
            DType::Float32,
            vec![k(n)],
            TensorValue::floats(v.to_vec()),
        ))
    }

    pub(in crate::shape) use crate::shape::ctx::run_onnx_op as run;
    pub(in crate::shape) fn shape(f: &Fact) -> Vec<Dim> {
        f.shape.clone().unwrap_or_default()
    }
    pub(in crate::shape) fn is_fresh(d: &Dim) -> bool {
        matches!(d, Dim::Sym(_))
    }

    pub(in crate::shape) fn ints_of(f: &Fact) -> Option<Vec<SymInt>> {
        f.value.as_ref().and_then(TensorValue::as_ints)
    }
    pub(in crate::shape) fn known(v: &[i64]) -> Option<Vec<SymInt>> {
        Some(v.iter().map(|&x| SymInt::Int(x)).collect())
    }

    #[test]
    fn scatter_nd_edits_a_shape_vector() {
        // shape [1, 2, 3] with entry 1 set to the symbol `batch`.
        let data = i64s(vec![k(3)], &[1, 2, 3]);
        let idx = i64s(vec![k(1), k(1)], &[1]);
        let upd = Some(Fact::ints_1d(vec![SymInt::sym("batch")]));
        let out = run(
            "ScatterND",
            18,
            &[],
            vec![data.clone(), idx.clone(), upd],
            1,
        )
        .unwrap();
        let want = vec![SymInt::Int(1), SymInt::sym("batch"), SymInt::Int(3)];
        assert_eq!(ints_of(&out[0]), Some(want));
        // With reduction add, 2 + 5 = 7.
        let upd = i64s(vec![k(1)], &[5]);
        let out = run(
            "ScatterND",
            18,
            &[string("reduction", "add")],
            vec![data, idx, upd],
            1,
        )
        .unwrap();
        assert_eq!(ints_of(&out[0]), known(&[1, 7, 3]));
    }

    #[test]
    fn scatter_and_gather_elements_fold_with_negative_indices() {
        // [[1, 2], [3, 4]] gathered on axis 1 by [[0, 0], [-1, 0]].
        let data = i64s(vec![k(2), k(2)], &[1, 2, 3, 4]);
        let idx = i64s(vec![k(2), k(2)], &[0, 0, -1, 0]);
        let out = run(
            "GatherElements",
            13,
            &[int("axis", 1)],
            vec![data.clone(), idx],
            1,
        )
        .unwrap();
        assert_eq!(ints_of(&out[0]), known(&[1, 1, 4, 3]));
        // Scatter [9] to row 1 of column 0: [[1, 2], [9, 4]].
        let idx = i64s(vec![k(1), k(1)], &[1]);
        let upd = i64s(vec![k(1), k(1)], &[9]);
        let out = run("ScatterElements", 13, &[], vec![data, idx, upd], 1).unwrap();
        assert_eq!(ints_of(&out[0]), known(&[1, 2, 9, 4]));
    }

    #[test]
    fn gather_nd_folds_the_spec_example() {
        // data [[0, 1], [2, 3]], indices [[0, 0], [1, 1]] -> [0, 3].
        let data = i64s(vec![k(2), k(2)], &[0, 1, 2, 3]);
        let idx = i64s(vec![k(2), k(2)], &[0, 0, 1, 1]);
        let out = run("GatherND", 13, &[], vec![data, idx], 1).unwrap();
        assert_eq!(shape(&out[0]), vec![k(2)]);
        assert_eq!(ints_of(&out[0]), known(&[0, 3]));
    }

    #[test]
    fn top_k_reads_k_from_attribute_or_input_and_keeps_batch() {
        // Opset 9: k is an attribute; the batch symbol flows through.
        let out = run(
            "TopK",
            9,
            &[int("k", 5)],
            vec![f32s(vec![sym("b"), k(10)])],
            2,
        )
        .unwrap();
        assert_eq!(shape(&out[0]), vec![sym("b"), k(5)]);
        assert_eq!(out[1].dtype, Some(DType::Int64));
        // Opset 10+: k is input 1.
        let x = f32s(vec![sym("b"), k(10)]);
        let out = run("TopK", 11, &[], vec![x.clone(), i64s(vec![k(1)], &[3])], 2).unwrap();
        assert_eq!(shape(&out[1]), vec![sym("b"), k(3)]);
        // k known only at run time: a fresh symbol on the axis.
        let out = run("TopK", 11, &[], vec![x.clone(), f32s(vec![k(1)])], 2).unwrap();
        assert!(is_fresh(&shape(&out[0])[1]));
        // k larger than the axis is an inconsistent model.
        assert!(run("TopK", 11, &[], vec![x, i64s(vec![k(1)], &[11])], 2).is_err());
    }

    #[test]
    fn non_zero_counts_and_folds_known_data() {
        // [[1, 0], [0, 3]]: hits at (0, 0) and (1, 1).
        let x = i64s(vec![k(2), k(2)], &[1, 0, 0, 3]);
        let out = run("NonZero", 13, &[], vec![x], 1).unwrap();
        assert_eq!(shape(&out[0]), vec![k(2), k(2)]);
        let want: Vec<SymInt> = [0, 1, 0, 1].iter().map(|&v| SymInt::Int(v)).collect();
        assert_eq!(out[0].value, Some(TensorValue::ints(want)));
        // Unknown data: a fresh count.
        let out = run("NonZero", 13, &[], vec![f32s(vec![sym("b"), k(4)])], 1).unwrap();
        assert_eq!(shape(&out[0])[0], k(2));
        assert!(is_fresh(&shape(&out[0])[1]));
    }

    #[test]
    fn unique_counts_known_data_and_keeps_other_dims() {
        // [2, 1, 2, 3] has 3 distinct values; inverse indices cover all 4.
        let x = i64s(vec![k(4)], &[2, 1, 2, 3]);
        let out = run("Unique", 11, &[], vec![x], 4).unwrap();
        assert_eq!(shape(&out[0]), vec![k(3)]);
        assert_eq!(shape(&out[2]), vec![k(4)]);
        assert_eq!(shape(&out[3]), vec![k(3)]);
        // Along axis 1 of [b, 5] unknown data: [b, u], inverse [5].
        let out = run(
            "Unique",
            11,
            &[int("axis", -1)],
            vec![f32s(vec![sym("b"), k(5)])],
            4,
        )
        .unwrap();
        let y = shape(&out[0]);
        assert_eq!(y[0], sym("b"));
        assert!(is_fresh(&y[1]));
        assert_eq!(shape(&out[2]), vec![k(5)]);
    }

    #[test]
    fn compress_counts_a_known_condition() {
        let cond = Some(Fact::with_value(
            DType::Bool,
            vec![k(3)],
            TensorValue::ints(vec![SymInt::Int(1), SymInt::Int(0), SymInt::Int(1)]),
        ));
        let x = f32s(vec![k(3), sym("w")]);
        let out = run("Compress", 11, &[int("axis", 0)], vec![x, cond], 1).unwrap();
        assert_eq!(shape(&out[0]), vec![k(2), sym("w")]);
    }

    #[test]
    fn gather_nd_with_batch_dims_and_bad_index_depth() {
        // data [b, 3, 4], indices [b, 5, 1], batch_dims 1 -> [b, 5, 4].
        let data = f32s(vec![sym("b"), k(3), k(4)]);
        let idx = Some(Fact::new(DType::Int64, vec![sym("b"), k(5), k(1)]));
        let out = run(
            "GatherND",
            13,
            &[int("batch_dims", 1)],
            vec![data.clone(), idx],
            1,
        )
        .unwrap();
        assert_eq!(shape(&out[0]), vec![sym("b"), k(5), k(4)]);
        // Indexing 4 dimensions of a rank-3 tensor cannot work.
        let idx = Some(Fact::new(DType::Int64, vec![k(2), k(4)]));
        assert!(run("GatherND", 13, &[], vec![data, idx], 1).is_err());
    }

    #[test]
    fn gather_elements_needs_equal_ranks() {
        let data = f32s(vec![k(3), k(3)]);
        let idx = Some(Fact::new(DType::Int64, vec![k(2)]));
        assert!(run("GatherElements", 13, &[], vec![data, idx], 1).is_err());
    }

    pub(in crate::shape) fn strs(name: &str, v: &[&str]) -> AttributeProto {
        AttributeProto {
            strings: v.iter().map(|s| s.as_bytes().to_vec().into()).collect(),
            ..attr(name)
        }
    }

    pub(in crate::shape) fn map_of(dtype: DType) -> Option<Fact> {
        Some(Fact {
            kind: ValueKind::Map,
            ..Fact::tensor(Some(dtype), None)
        })
    }

    #[test]
    fn odd_inputs_never_panic() {
        // Errors are fine; panics are not. Every op meets missing inputs,
        // scalars, unknown ranks, zero and huge sizes, and odd values.
        let huge = k(u64::MAX / 2);
        let cases: Vec<Vec<Option<Fact>>> = vec![
            vec![],
            vec![None, None, None, None],
            vec![Some(Fact::unknown()); 5],
            vec![f32s(vec![]); 5],
            vec![f32s(vec![k(0), huge.clone(), huge.clone()]); 5],
            vec![
                i64s(vec![k(0), huge.clone()], &[]),
                i64s(vec![k(1)], &[-5]),
                i64s(vec![k(2), k(1)], &[7, -9]),
                i64s(vec![huge.clone()], &[]),
            ],
            vec![
                i64s(vec![k(2), k(2)], &[1, 2, 3, 4]),
                i64s(vec![k(2), k(2)], &[i64::MIN, i64::MAX, 0, -1]),
                i64s(vec![k(2), k(2)], &[5, 6, 7, 8]),
                i64s(vec![k(1)], &[i64::MAX]),
            ],
            vec![f32s(vec![sym("a"), sym("b"), sym("c"), sym("d")]); 5],
        ];
        let attrs = [
            int("axis", 1),
            int("batch_dims", 1),
            int("k", i64::MAX),
            ints("axes", &[-1]),
            floats("scales", &[f32::NAN]),
        ];
        for (domain, op, _) in ops() {
            for opset in [7, 11, 20] {
                for inputs in &cases {
                    for a in [&attrs[..], &[]] {
                        let _ = crate::shape::ctx::run_op(domain, op, opset, a, inputs.clone(), 4);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod gather_tests {
    use super::super::tensor::tests::*;
    use super::{gather, gather_any};
    use crate::dim::SymInt;
    use crate::ir::{DType, Dim};

    use crate::shape::{Fact, TensorValue};

    #[test]
    fn gather_of_sizes_is_the_general_gather() {
        // A shape's sizes, one of them symbolic.
        let sizes = Some(Fact::ints_1d(vec![
            Dim::symbol("batch").to_symint(),
            SymInt::Int(7),
            SymInt::Int(64),
        ]));
        let grid = Some(Fact::with_value(
            DType::Int64,
            vec![k(2), k(2)],
            TensorValue::ints([0, -1, 2, 1].map(SymInt::Int).to_vec()),
        ));
        let floats = Some(Fact::with_value(
            DType::Float32,
            vec![k(1)],
            TensorValue::floats(vec![1.0]),
        ));
        let indices = [
            scalar_i(-1),
            scalar_i(0),
            vec_i(&[2, 0, 1]),
            grid,
            scalar_i(3),
            scalar_i(-4),
            Some(Fact::new(DType::Int64, vec![])),
            Some(Fact::new(DType::Int64, vec![Dim::symbol("n")])),
            Some(Fact::with_value(
                DType::Int64,
                vec![Dim::symbol("n")],
                TensorValue::ints(vec![SymInt::Int(1)]),
            )),
            Some(Fact::with_value(
                DType::Int64,
                vec![k(3)],
                TensorValue::ints(vec![SymInt::Int(1)]),
            )),
            floats,
            vec_i(&[]),
            None,
        ];
        for ix in indices {
            for attrs in [vec![], vec![int("axis", -1)], vec![int("axis", 1)]] {
                same_as(
                    gather,
                    gather_any,
                    "Gather",
                    13,
                    &attrs,
                    vec![sizes.clone(), ix.clone()],
                );
            }
        }
        // Entries that disagree with the vector's length take the general way.
        let short = Some(Fact::with_value(
            DType::Int64,
            vec![k(3)],
            TensorValue::ints(vec![SymInt::Int(1)]),
        ));
        same_as(
            gather,
            gather_any,
            "Gather",
            13,
            &[],
            vec![short, scalar_i(0)],
        );
    }

    #[test]
    fn gather_folds_and_checks_indices() {
        let m = Fact::with_value(
            DType::Int64,
            vec![k(2), k(3)],
            TensorValue::ints((1..=6).map(SymInt::Int).collect()),
        );
        // Column -1 of a 2x3 matrix, as a [2] vector.
        let out = one(
            "Gather",
            13,
            &[int("axis", 1)],
            vec![Some(m.clone()), scalar_i(-1)],
        );
        assert_eq!(out.shape, Some(vec![k(2)]));
        assert_eq!(known_vals(&out), vec![3, 6]);
        assert!(run("Gather", 13, &[], vec![Some(m), vec_i(&[2])], 1).is_err());
    }
}
