//! Shapes and data movement: Shape, Size, Reshape, Flatten, Squeeze,
//! Unsqueeze, Expand, Concat, Split, Slice, Transpose, Tile, Pad and kin.
//! Values fold through them.

// ---------------------------------------------------------------- helpers

use std::sync::Arc;

use super::ctx::{
    InferCtx, Result, ShapeError, axis, axis_inclusive, broadcast, dim, dtype_code, err, join,
};
use super::dims::{
    Param, axes_of, dense, fold_map, fresh_dims, grid_take, index_map, ints_param, known_param,
    known_usize, like_input, out_fact, product, same_data, shape_len, strides, take, to_dim,
};
use super::fact::{Fact, MAX_VALUE_ELEMENTS, TensorValue};
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// Two sizes that must be equal (Concat's other axes): the known one wins.
pub(super) fn unify(a: &Dim, b: &Dim, what: &str) -> Result<Dim> {
    match (a, b) {
        (Dim::Known(x), Dim::Known(y)) if x != y => {
            err(format!("{what}: sizes {x} and {y} differ"))
        }
        (Dim::Sym(_), Dim::Known(_)) => Ok(b.clone()),
        _ => Ok(a.clone()),
    }
}

// ---------------------------------------------------------------- constants

// ---------------------------------------------------------------- shapes

/// Shape: the dimensions as an int64 vector (a slice of them from opset 15).
fn shape_op(ctx: &mut InferCtx) -> Result<()> {
    let Some(s) = ctx.shape(0).cloned() else {
        let n = ctx.fresh_dim("rank");
        ctx.set(0, Fact::new(DType::Int64, vec![n]));
        return Ok(());
    };
    let r = s.len() as i64;
    let norm = |v: i64| (if v < 0 { v.saturating_add(r) } else { v }).clamp(0, r) as usize;
    let start = norm(ctx.attr_int_or("start", 0));
    let end = norm(ctx.attr_int_or("end", r)).max(start);
    let dims = s.get(start..end).unwrap_or_default();
    ctx.set(0, Fact::ints_1d(dims.iter().map(Dim::to_symint).collect()));
    Ok(())
}

/// Size: the element count as an int64 scalar.
fn size(ctx: &mut InferCtx) -> Result<()> {
    let n = ctx.elements_of(ctx.require(0)?);
    ctx.set(
        0,
        out_fact(
            Some(DType::Int64),
            Some(vec![]),
            n.map(|n| TensorValue::ints(vec![n])),
        ),
    );
    Ok(())
}

/// Reshape: 0 copies the input's size (unless `allowzero`), one -1 is inferred.
fn reshape(ctx: &mut InferCtx) -> Result<()> {
    // Read in place, as Unsqueeze reads its input.
    let data = ctx.require(0)?;
    let dtype = data.dtype;
    let target = match ints_param(ctx, "shape", 1, 5) {
        Param::Known(v) => Some(v),
        _ => None,
    };
    let allowzero = ctx.attr_int_or("allowzero", 0) != 0;
    let shape = match target {
        None => shape_len(ctx, 1).map(|n| fresh_dims(ctx, n, "reshape")),
        Some(t) => Some(reshape_dims(ctx, data, &t, allowzero)?),
    };
    let value = same_data(ctx, &shape);
    ctx.set(0, out_fact(dtype, shape, value));
    Ok(())
}

fn reshape_dims(ctx: &InferCtx, data: &Fact, t: &[SymInt], allowzero: bool) -> Result<Vec<Dim>> {
    let mut out: Vec<Option<Dim>> = Vec::with_capacity(t.len());
    let mut infer_at = None;
    for (i, v) in t.iter().enumerate() {
        out.push(match v.as_int() {
            Some(0) if !allowzero => Some(match &data.shape {
                Some(s) => s.get(i).cloned().ok_or_else(|| {
                    ShapeError(format!(
                        "Reshape copies dimension {i} of a rank-{} input",
                        s.len()
                    ))
                })?,
                None => ctx.fresh_dim("reshape"),
            }),
            Some(-1) => {
                if infer_at.replace(i).is_some() {
                    return err("Reshape has more than one -1");
                }
                None
            }
            _ => Some(to_dim(v, "Reshape dimension")?),
        });
    }
    let total = ctx.elements_of(data);
    let rest = product(out.iter().flatten())?;
    match infer_at {
        None => {
            if let (Some(a), Some(b)) = (total.as_ref().and_then(SymInt::as_int), rest.as_int())
                && a != b
            {
                return err(format!("cannot reshape {a} elements into {b}"));
            }
        }
        Some(i) => {
            let inferred = match total {
                None => ctx.fresh_dim("reshape"),
                Some(total) => match total.exact_div(&rest) {
                    Some(q) => to_dim(&q, "Reshape dimension")?,
                    None => match (total.as_int(), rest.as_int()) {
                        (Some(a), Some(b)) => {
                            return err(format!(
                                "cannot reshape {a} elements into a multiple of {b}"
                            ));
                        }
                        // Valid models divide exactly, so the floor is the size.
                        (None, Some(b)) if b > 0 => {
                            to_dim(&total.floor_div(b)?, "Reshape dimension")?
                        }
                        _ => ctx.fresh_dim("reshape"),
                    },
                },
            };
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(inferred);
            }
        }
    }
    Ok(out.into_iter().flatten().collect())
}

/// Flatten: [prod(d[..axis]), prod(d[axis..])].
fn flatten(ctx: &mut InferCtx) -> Result<()> {
    let data = ctx.require(0)?.clone();
    let shape = match &data.shape {
        None => None,
        Some(s) => {
            // Unlike Unsqueeze's, a negative axis counts from the rank: -1 is r-1.
            let a = ctx.attr_int_or("axis", 1);
            let r = s.len() as i64;
            let a = match if a < 0 { a + r } else { a } {
                n if (0..=r).contains(&n) => n as usize,
                _ => return err(format!("Flatten axis {a} is out of range for rank {r}")),
            };
            Some(vec![dim(&product(&s[..a])?)?, dim(&product(&s[a..])?)?])
        }
    };
    let value = same_data(ctx, &shape);
    ctx.set(0, out_fact(data.dtype, shape, value));
    Ok(())
}

/// Squeeze: drops the listed size-1 axes, or every size-1 axis.
fn squeeze(ctx: &mut InferCtx) -> Result<()> {
    let data = ctx.require(0)?.clone();
    let axes = known_param(ctx, "axes", 1, 13);
    let shape = match (&data.shape, axes) {
        (None, _) | (_, Param::Unknown) => None,
        (Some(s), Param::Absent) => {
            // A symbolic size may be 1 at run time: then the rank is unknown.
            if s.iter().any(|d| d.known().is_none()) {
                None
            } else {
                Some(s.iter().filter(|d| d.known() != Some(1)).cloned().collect())
            }
        }
        (Some(s), Param::Known(a)) => {
            let a = axes_of(&a, s.len())?;
            for &k in &a {
                if let Some(n) = s[k].known()
                    && n != 1
                {
                    return err(format!("Squeeze axis {k} has size {n}, not 1"));
                }
            }
            Some(
                s.iter()
                    .enumerate()
                    .filter(|(k, _)| !a.contains(k))
                    .map(|(_, d)| d.clone())
                    .collect(),
            )
        }
    };
    let value = same_data(ctx, &shape);
    ctx.set(0, out_fact(data.dtype, shape, value));
    Ok(())
}

/// Unsqueeze: inserts size-1 axes at positions of the output.
fn unsqueeze(ctx: &mut InferCtx) -> Result<()> {
    // Read in place: a copy of the input's fact was a third of the work.
    let data = ctx.require(0)?;
    let dtype = data.dtype;
    let shape = match (&data.shape, known_param(ctx, "axes", 1, 13)) {
        (Some(s), Param::Known(a)) => {
            let rank = s.len() + a.len();
            let a = axes_of(&a, rank)?;
            let mut rest = s.iter();
            Some(
                (0..rank)
                    .map(|k| {
                        if a.contains(&k) {
                            Dim::Known(1)
                        } else {
                            rest.next().cloned().unwrap_or(Dim::Known(1))
                        }
                    })
                    .collect(),
            )
        }
        (_, Param::Absent) => return err("Unsqueeze needs axes"),
        _ => None,
    };
    let value = same_data(ctx, &shape);
    ctx.set(0, out_fact(dtype, shape, value));
    Ok(())
}

/// Expand: broadcasts the input against a shape given as data.
fn expand(ctx: &mut InferCtx) -> Result<()> {
    let data = ctx.require(0)?.clone();
    let shape = match (&data.shape, ctx.ints(1)) {
        (Some(s), Some(t)) => {
            let t = t
                .iter()
                .map(|d| to_dim(d, "Expand dimension"))
                .collect::<Result<Vec<_>>>()?;
            Some(broadcast(s, &t)?)
        }
        (s, None) => {
            match (s, shape_len(ctx, 1)) {
                (Some(s), Some(n)) => {
                    // A size > 1 survives whatever the target says there.
                    let rank = n.max(s.len());
                    Some(
                        (0..rank)
                            .map(
                                |k| match (k + s.len()).checked_sub(rank).and_then(|j| s.get(j)) {
                                    Some(d @ Dim::Known(v)) if *v != 1 => d.clone(),
                                    _ => ctx.fresh_dim("expand"),
                                },
                            )
                            .collect(),
                    )
                }
                _ => None,
            }
        }
        (None, Some(_)) => None,
    };
    let value = shape.as_ref().and_then(|out| {
        let in_rank = data.rank()?;
        let in_dims = known_usize(data.shape.as_ref()?)?;
        let off = out.len().checked_sub(in_rank)?;
        fold_map(ctx, out, |o, src| {
            for (k, s) in src.iter_mut().enumerate() {
                *s = if in_dims[k] == 1 { 0 } else { o[k + off] };
            }
            Some(())
        })
    });
    ctx.set(0, out_fact(data.dtype, shape, value));
    Ok(())
}

/// Concat: sizes along `axis` add up, the others must agree.
fn concat(ctx: &mut InferCtx) -> Result<()> {
    let Some(f) = concat_of_sizes(ctx)? else {
        return concat_any(ctx);
    };
    ctx.set(0, f);
    Ok(())
}

/// Concat, whatever its inputs ([`concat()`]).
fn concat_any(ctx: &mut InferCtx) -> Result<()> {
    let present: Vec<usize> = (0..ctx.n_inputs())
        .filter(|&i| ctx.input(i).is_some())
        .collect();
    if present.is_empty() {
        return err("Concat needs at least one input");
    }
    let dtype = present.iter().find_map(|&i| ctx.dtype(i));
    let Some(rank) = present.iter().find_map(|&i| ctx.rank(i)) else {
        ctx.set(0, Fact::tensor(dtype, None));
        return Ok(());
    };
    // Concat-1 had a default axis of 1; it is required since opset 4.
    let a = axis(
        ctx.attr_int_or("axis", if ctx.opset < 4 { 1 } else { 0 }),
        rank,
    )?;
    // Sizes off the axis: the known ones win; none known is a fresh size.
    let mut other: Vec<Option<Dim>> = vec![None; rank];
    let mut along = Some(crate::dim::Sum::default());
    for &i in &present {
        let Some(s) = ctx.shape(i) else {
            along = None;
            continue;
        };
        if s.len() != rank {
            return err(format!("Concat inputs have ranks {rank} and {}", s.len()));
        }
        for (k, d) in s.iter().enumerate() {
            if k != a {
                other[k] = Some(match &other[k] {
                    Some(p) => unify(p, d, "Concat")?,
                    None => d.clone(),
                });
            }
        }
        if let Some(n) = &mut along {
            n.add(&s[a].to_symint())?;
        }
    }
    let mut out: Vec<Dim> = other
        .into_iter()
        .enumerate()
        .map(|(k, d)| match d {
            Some(d) => d,
            None if k == a => Dim::Known(0), // set below
            None => ctx.fresh_dim("concat"),
        })
        .collect();
    out[a] = match along {
        Some(n) => dim(&n.value())?,
        None => ctx.fresh_dim("concat"),
    };
    let value = concat_values(ctx, &present, a, &out);
    ctx.set(0, out_fact(dtype, Some(out), value));
    Ok(())
}

/// Concat of known 1-D integer vectors (a shape for Reshape, thousands in a
/// decoder's export): [`concat_any`]'s fact and checks, in its order, but
/// no copy of each part nor map of output places; `None`: that path.
fn concat_of_sizes(ctx: &InferCtx) -> Result<Option<Fact>> {
    let (mut dtype, mut total, mut present) = (None, 0u64, Vec::with_capacity(ctx.n_inputs()));
    for i in 0..ctx.n_inputs() {
        let Some(f) = ctx.input(i) else { continue };
        let Some([Dim::Known(n)]) = f.shape.as_deref() else {
            return Ok(None);
        };
        dtype = dtype.or(f.dtype);
        total = total.saturating_add(*n);
        present.push((i, *n));
    }
    if present.is_empty() || total > MAX_VALUE_ELEMENTS as u64 {
        return Ok(None);
    }
    let default_axis = if ctx.opset < 4 { 1 } else { 0 };
    axis(ctx.attr_int_or("axis", default_axis), 1)?;
    let mut all = Vec::with_capacity(total as usize);
    for (i, n) in present {
        match ctx.value(i) {
            Some(TensorValue::Ints(v)) if v.len() as u64 == n => all.extend(v.iter().cloned()),
            _ => return Ok(None),
        }
    }
    let (shape, value) = (vec![Dim::Known(total)], TensorValue::ints(all));
    Ok(Some(out_fact(dtype, Some(shape), Some(value))))
}

/// Input `i` as a short 1-D integer vector whose elements are unknown:
/// one fresh symbol each.
fn unknown_elements(ctx: &InferCtx, i: usize) -> Option<(Vec<usize>, TensorValue)> {
    let len = match ctx.shape(i)?.as_slice() {
        [Dim::Known(n)] if *n <= 8 => *n as usize,
        _ => return None,
    };
    if !ctx.dtype(i).is_some_and(super::math::is_integer) {
        return None;
    }
    let v = (0..len)
        .map(|_| ctx.fresh_dim("value").to_symint())
        .collect();
    Some((vec![len], TensorValue::ints(v)))
}

fn concat_values(ctx: &InferCtx, present: &[usize], a: usize, out: &[Dim]) -> Option<TensorValue> {
    let known: Vec<Option<(Vec<usize>, TensorValue)>> =
        present.iter().map(|&i| dense(ctx, i)).collect();
    // A shape vector built from known and unknown parts (`Concat([1, 60],
    // p, p)`) keeps its known elements: each unknown one is a size of its
    // own, so `ConstantOfShape` of it is `[1, 60, ?, ?]`.
    let shape_vector = out.len() == 1 && known.iter().any(Option::is_some);
    let parts: Vec<(Vec<usize>, TensorValue)> = present
        .iter()
        .zip(known)
        .map(|(&i, k)| k.or_else(|| shape_vector.then(|| unknown_elements(ctx, i)).flatten()))
        .collect::<Option<_>>()?;
    let out_dims = known_usize(out)?;
    if out_dims.iter().try_fold(1usize, |x, &d| x.checked_mul(d))? > MAX_VALUE_ELEMENTS {
        return None;
    }
    // Join all data into one flat list, then map output positions into it.
    let mut all = parts.first()?.1.clone();
    let mut bases = vec![0usize];
    for (_, v) in &parts[1..] {
        bases.push(all.len());
        all = match (all, v) {
            (TensorValue::Ints(mut x), TensorValue::Ints(y)) => {
                Arc::make_mut(&mut x).extend(y.iter().cloned());
                TensorValue::Ints(x)
            }
            (TensorValue::Strings(mut x), TensorValue::Strings(y)) => {
                Arc::make_mut(&mut x).extend(y.iter().cloned());
                TensorValue::Strings(x)
            }
            (x, y) => {
                let mut x = x.as_floats()?;
                x.extend(y.as_floats()?);
                TensorValue::floats(x)
            }
        };
    }
    let pos = index_map(&out_dims, |o| {
        let mut j = *o.get(a)?;
        for ((dims, _), base) in parts.iter().zip(&bases) {
            if j < dims[a] {
                let st = strides(dims);
                let off: usize = o
                    .iter()
                    .enumerate()
                    .map(|(k, &x)| if k == a { j * st[k] } else { x * st[k] })
                    .sum();
                return Some(base + off);
            }
            j -= dims[a];
        }
        None
    })?;
    take(&all, &pos)
}

/// Split: one output per part along `axis`; parts from `split`, from
/// `num_outputs` (opset 18, the last part may be smaller), or equal.
fn split(ctx: &mut InferCtx) -> Result<()> {
    let data = ctx.require(0)?.clone();
    let n_out = ctx.n_outputs();
    let Some(s) = data.shape.clone() else {
        for i in 0..n_out {
            ctx.set(i, Fact::tensor(data.dtype, None));
        }
        return Ok(());
    };
    let a = axis(ctx.attr_int_or("axis", 0), s.len())?;
    let total = s[a].to_symint();
    // Split-1 could take `split` as its second input; 2..=12 as an attribute.
    let parts = if ctx.opset < 13 && ctx.opset >= 2 {
        known_param(ctx, "split", 1, i64::MAX)
    } else if ctx.opset < 2 && ctx.input(1).is_some() {
        known_param(ctx, "split", 1, 1)
    } else {
        known_param(ctx, "split", 1, 13)
    };
    let sizes: Vec<Option<SymInt>> = match parts {
        Param::Known(p) => {
            if p.len() != n_out {
                return err(format!("Split has {} parts for {n_out} outputs", p.len()));
            }
            let sum = p.iter().try_fold(0i64, |x, &y| x.checked_add(y));
            if let (Some(sum), Some(t)) = (sum, total.as_int())
                && sum != t
            {
                return err(format!("Split parts add up to {sum}, not {t}"));
            }
            p.into_iter().map(|v| Some(SymInt::Int(v))).collect()
        }
        Param::Unknown => vec![None; n_out],
        Param::Absent => {
            let n = ctx.attr_int("num_outputs").unwrap_or(n_out as i64);
            if n <= 0 || n as usize != n_out {
                return err(format!("Split into {n} parts with {n_out} outputs"));
            }
            equal_parts(&total, n, ctx.has_attr("num_outputs"))?
        }
    };
    let mut offset = Some(0usize);
    for (i, size) in sizes.iter().enumerate() {
        let mut shape = s.clone();
        shape[a] = match size {
            Some(v) => to_dim(v, "Split part")?,
            None => ctx.fresh_dim("split"),
        };
        let start = offset;
        offset = match (offset, size.as_ref().and_then(SymInt::as_int)) {
            (Some(o), Some(v)) => usize::try_from(v).ok().and_then(|v| o.checked_add(v)),
            _ => None,
        };
        let value = start.and_then(|start| {
            fold_map(ctx, &shape, |o, src| {
                src.copy_from_slice(o);
                src[a] = o[a] + start;
                Some(())
            })
        });
        ctx.set(i, out_fact(data.dtype, Some(shape), value));
    }
    Ok(())
}

/// `n` equal parts of `total`; with `uneven` (num_outputs) the parts are
/// ceil(total/n) and the last one takes the rest.
fn equal_parts(total: &SymInt, n: i64, uneven: bool) -> Result<Vec<Option<SymInt>>> {
    let n_usize = n as usize;
    if let Some(t) = total.as_int() {
        if uneven {
            let chunk = SymInt::Int(t).ceil_div(n)?.as_int().unwrap_or(0);
            let mut left = t;
            return Ok((0..n_usize)
                .map(|_| {
                    let v = chunk.min(left).max(0);
                    left -= v;
                    Some(SymInt::Int(v))
                })
                .collect());
        }
        if t % n != 0 {
            return err(format!("cannot split {t} into {n} equal parts"));
        }
        return Ok(vec![Some(SymInt::Int(t / n)); n_usize]);
    }
    Ok(match total.exact_div(&SymInt::Int(n)) {
        Some(q) => vec![Some(q); n_usize],
        None if !uneven => vec![Some(total.floor_div(n)?); n_usize],
        None => vec![None; n_usize],
    })
}

/// Indices this far out are "to the end" (INT_MAX, INT64_MAX in exports).
const BIG: i64 = i32::MAX as i64;

/// Slice: starts/ends/axes as attributes before opset 10, inputs after.
fn slice(ctx: &mut InferCtx) -> Result<()> {
    let data = ctx.require(0)?.clone();
    let Some(s) = data.shape.clone() else {
        ctx.set(0, Fact::tensor(data.dtype, None));
        return Ok(());
    };
    let rank = s.len();
    let starts = ints_param(ctx, "starts", 1, 10);
    let ends = ints_param(ctx, "ends", 2, 10);
    let axes = known_param(ctx, "axes", 3, 10);
    let steps = known_param(ctx, "steps", 4, 10);
    let axes = match axes {
        Param::Known(a) => Some(axes_of(&a, rank)?),
        Param::Absent => None,
        Param::Unknown => {
            // Any axis may change.
            let shape = fresh_dims(ctx, rank, "slice");
            ctx.set(0, Fact::tensor(data.dtype, Some(shape)));
            return Ok(());
        }
    };
    let (Param::Known(starts), Param::Known(ends)) = (starts, ends) else {
        let mut shape = s.clone();
        match &axes {
            Some(a) => a.iter().for_each(|&k| shape[k] = ctx.fresh_dim("slice")),
            None => shape = fresh_dims(ctx, rank, "slice"),
        }
        ctx.set(0, Fact::tensor(data.dtype, Some(shape)));
        return Ok(());
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len()).collect());
    let steps = match steps {
        Param::Known(v) => Some(v),
        Param::Absent => Some(vec![1; starts.len()]),
        Param::Unknown => None,
    };
    if ends.len() != starts.len()
        || axes.len() != starts.len()
        || steps.as_ref().is_some_and(|v| v.len() != starts.len())
    {
        return err("Slice starts, ends, axes and steps differ in length");
    }
    if axes.len() > rank {
        // Without `axes`, starts[i] slices axis i: more starts than axes.
        return err(format!(
            "Slice has {} starts for data of rank {rank}",
            axes.len()
        ));
    }
    let mut shape = s.clone();
    // Per output axis: (first input index, step), for folding.
    let mut walk: Vec<Option<(i64, i64)>> = vec![Some((0, 1)); rank];
    for (j, &a) in axes.iter().enumerate() {
        let Some(step) = steps.as_ref().map(|v| v[j]) else {
            shape[a] = ctx.fresh_dim("slice");
            walk[a] = None;
            continue;
        };
        if step == 0 {
            return err("Slice step is 0");
        }
        let (d, w) = slice_axis(&s[a], &starts[j], &ends[j], step)?;
        shape[a] = d;
        walk[a] = w;
    }
    // An axis of unknown step has a fresh size, so no value either way.
    let value = walk
        .iter()
        .copied()
        .collect::<Option<Vec<(i64, i64)>>>()
        .and_then(|grid| grid_take(ctx, &shape, &grid));
    ctx.set(0, out_fact(data.dtype, Some(shape), value));
    Ok(())
}

/// One sliced axis: its new size, and (first index, step) when known.
fn slice_axis(
    d: &Dim,
    start: &SymInt,
    end: &SymInt,
    step: i64,
) -> Result<(Dim, Option<(i64, i64)>)> {
    if let (Some(n), Some(s), Some(e)) = (d.known(), start.as_int(), end.as_int()) {
        // The spec's clamping, in i128 so that INT64 extremes cannot overflow.
        let (n, s, e, st) = (n as i128, s as i128, e as i128, step as i128);
        let s = if s < 0 { s + n } else { s };
        let e = if e < 0 { e + n } else { e };
        let (s, e) = if st > 0 {
            (s.clamp(0, n), e.clamp(0, n))
        } else {
            (s.clamp(0, (n - 1).max(0)), e.clamp(-1, n - 1))
        };
        let len = if st > 0 {
            (e - s + st - 1) / st
        } else {
            (s - e + (-st) - 1) / (-st)
        }
        .max(0);
        let len = u64::try_from(len).map_err(|_| ShapeError("Slice size overflows".into()))?;
        return Ok((Dim::Known(len), Some((s as i64, step))));
    }
    // A symbolic size (or bounds): assume the literal bounds lie within the
    // axis, as every exporter's sizes do; "to the end" markers map to it.
    let d = d.to_symint();
    let at = |v: &SymInt, far: SymInt, near_end: SymInt| -> Result<SymInt> {
        Ok(match v.as_int() {
            Some(x) if x >= BIG => far,
            Some(x) if x <= -BIG => near_end,
            Some(x) if x < 0 => d.add(v)?,
            _ => v.clone(),
        })
    };
    let len = if step > 0 {
        let s = at(start, d.clone(), SymInt::Int(0))?;
        // A literal end past a symbolic size is clamped to it: `x[:100]` on
        // `[n, 4]` is `min(n, 100)` rows.
        let e = match end.as_int() {
            Some(x) if x > 0 && x < BIG => d.min_with(end)?,
            _ => at(end, d.clone(), SymInt::Int(0))?,
        };
        e.sub(&s)?.ceil_div(step)?
    } else {
        let last = d.sub(&SymInt::Int(1))?;
        let s = at(start, last, SymInt::Int(-1))?;
        let e = at(end, d.clone(), SymInt::Int(-1))?;
        s.sub(&e)?.ceil_div(
            step.checked_neg()
                .ok_or_else(|| ShapeError("Slice step overflows".into()))?,
        )?
    };
    let len = match len.as_int() {
        Some(n) if n < 0 => SymInt::Int(0),
        _ => len,
    };
    Ok((dim(&len)?, None))
}

/// Transpose: dimensions permuted by `perm` (reversed by default).
fn transpose(ctx: &mut InferCtx) -> Result<()> {
    let data = ctx.require(0)?.clone();
    let Some(s) = data.shape.clone() else {
        ctx.set(0, Fact::tensor(data.dtype, None));
        return Ok(());
    };
    let perm: Vec<usize> = match ctx.attr_ints("perm") {
        Some(p) => {
            if p.len() != s.len() {
                return err(format!(
                    "Transpose perm has {} entries for rank {}",
                    p.len(),
                    s.len()
                ));
            }
            axes_of(&p, s.len())?
        }
        None => (0..s.len()).rev().collect(),
    };
    let shape: Vec<Dim> = perm.iter().map(|&p| s[p].clone()).collect();
    let value = fold_map(ctx, &shape, |o, src| {
        for (k, &p) in perm.iter().enumerate() {
            src[p] = o[k];
        }
        Some(())
    });
    ctx.set(0, out_fact(data.dtype, Some(shape), value));
    Ok(())
}

/// Tile: each size times its repeat count.
fn tile(ctx: &mut InferCtx) -> Result<()> {
    let data = ctx.require(0)?.clone();
    let Some(s) = data.shape.clone() else {
        ctx.set(0, Fact::tensor(data.dtype, None));
        return Ok(());
    };
    let shape = match ctx.ints(1) {
        Some(r) => {
            if r.len() != s.len() {
                return err(format!("Tile has {} repeats for rank {}", r.len(), s.len()));
            }
            s.iter()
                .zip(&r)
                .map(|(d, r)| to_dim(&d.to_symint().mul(r)?, "Tile size"))
                .collect::<Result<Vec<_>>>()?
        }
        None => fresh_dims(ctx, s.len(), "tile"),
    };
    let in_dims = known_usize(&s);
    let value = in_dims.and_then(|in_dims| {
        fold_map(ctx, &shape, |o, src| {
            for (k, x) in src.iter_mut().enumerate() {
                *x = o[k].checked_rem(in_dims[k])?;
            }
            Some(())
        })
    });
    ctx.set(0, out_fact(data.dtype, Some(shape), value));
    Ok(())
}

/// Pad: begin and end pads per axis (attribute before opset 11; input
/// after, with an `axes` input from 18).
fn pad(ctx: &mut InferCtx) -> Result<()> {
    let data = ctx.require(0)?.clone();
    let Some(s) = data.shape.clone() else {
        ctx.set(0, Fact::tensor(data.dtype, None));
        return Ok(());
    };
    let rank = s.len();
    let pads = if ctx.opset < 2 {
        ints_param(ctx, "paddings", 1, i64::MAX)
    } else {
        ints_param(ctx, "pads", 1, 11)
    };
    let axes: Vec<usize> = match known_param(ctx, "axes", 3, 18) {
        Param::Known(a) if ctx.opset >= 18 => axes_of(&a, rank)?,
        Param::Unknown if ctx.opset >= 18 => {
            ctx.set(
                0,
                Fact::tensor(data.dtype, Some(fresh_dims(ctx, rank, "pad"))),
            );
            return Ok(());
        }
        _ => (0..rank).collect(),
    };
    let mut shape = s.clone();
    match pads {
        Param::Known(p) => {
            if p.len() != 2 * axes.len() {
                return err(format!("Pad has {} pads for {} axes", p.len(), axes.len()));
            }
            for (j, &a) in axes.iter().enumerate() {
                let v = s[a].to_symint().add(&p[j])?.add(&p[j + axes.len()])?;
                shape[a] = to_dim(&v, "padded size")?;
            }
        }
        Param::Unknown => axes.iter().for_each(|&a| shape[a] = ctx.fresh_dim("pad")),
        Param::Absent => return err("Pad needs pads"),
    }
    ctx.set(0, Fact::tensor(data.dtype, Some(shape)));
    Ok(())
}

/// CenterCropPad: the listed axes take the sizes given as data.
fn center_crop_pad(ctx: &mut InferCtx) -> Result<()> {
    let data = ctx.require(0)?.clone();
    let Some(s) = data.shape.clone() else {
        ctx.set(0, Fact::tensor(data.dtype, None));
        return Ok(());
    };
    let axes = match ctx.attr_ints("axes") {
        Some(a) => axes_of(&a, s.len())?,
        None => (0..s.len()).collect(),
    };
    let mut shape = s.clone();
    match ctx.ints(1) {
        Some(v) => {
            if v.len() != axes.len() {
                return err(format!(
                    "CenterCropPad has {} sizes for {} axes",
                    v.len(),
                    axes.len()
                ));
            }
            for (&a, v) in axes.iter().zip(&v) {
                shape[a] = to_dim(v, "CenterCropPad size")?;
            }
        }
        None => axes.iter().for_each(|&a| shape[a] = ctx.fresh_dim("crop")),
    }
    ctx.set(0, Fact::tensor(data.dtype, Some(shape)));
    Ok(())
}

// ---------------------------------------------------------------- others

/// BitCast: same shape, another type of the same width.
fn bit_cast(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let to = dtype_code(
        ctx.attr_int("to")
            .ok_or_else(|| ShapeError("BitCast needs `to`".into()))?,
    )?;
    if let Some(from) = x.dtype
        && from.bits() != to.bits()
    {
        return err(format!("BitCast from {from} to {to} changes the width"));
    }
    ctx.set(0, Fact::tensor(Some(to), x.shape.clone()));
    Ok(())
}

/// OneHot: a new axis of size `depth` at `axis`; type of `values`.
fn one_hot(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(2);
    let depth = ctx
        .floats(1)
        .filter(|v| v.len() == 1)
        .and_then(|v| v.first().copied());
    let shape = match ctx.shape(0).cloned() {
        Some(s) => {
            let a = axis_inclusive(ctx.attr_int_or("axis", -1), s.len())?;
            let d = match depth {
                Some(d) if (1.0..1e15).contains(&d) => Dim::Known(d as u64),
                Some(d) => return err(format!("OneHot depth {d} is not positive")),
                None => ctx.fresh_dim("depth"),
            };
            let mut out = s;
            out.insert(a, d);
            Some(out)
        }
        None => None,
    };
    let value = shape.as_deref().and_then(|s| one_hot_values(ctx, s));
    ctx.set(0, out_fact(dtype, shape, value));
    Ok(())
}

/// OneHot of known indices, depth and values (TorchScript's
/// `repeat_interleave` builds its repeat counts so): the data, row-major.
fn one_hot_values(ctx: &InferCtx, out: &[Dim]) -> Option<TensorValue> {
    let dims = known_usize(out)?;
    let total = dims.iter().try_fold(1usize, |x, &d| x.checked_mul(d))?;
    if total > MAX_VALUE_ELEMENTS {
        return None;
    }
    let indices = ctx.known_ints(0)?;
    let a = axis_inclusive(ctx.attr_int_or("axis", -1), dims.len() - 1).ok()?;
    let depth = dims[a];
    let inner: usize = dims[a + 1..].iter().product();
    let pick = |on: bool| if on { 1 } else { 0 };
    let at = |flat: usize| -> bool {
        let (outer, rest) = (flat / (depth * inner), flat % (depth * inner));
        let (d, k) = (rest / inner, rest % inner);
        let i = indices.get(outer * inner + k).copied().unwrap_or(-1);
        let i = if i < 0 { i + depth as i64 } else { i };
        i == d as i64
    };
    Some(match ctx.value(2)? {
        TensorValue::Ints(v) if v.len() == 2 => {
            TensorValue::ints((0..total).map(|f| v[pick(at(f))].clone()).collect())
        }
        TensorValue::Floats(v) if v.len() == 2 => {
            TensorValue::floats((0..total).map(|f| v[pick(at(f))]).collect())
        }
        _ => return None,
    })
}

/// DepthToSpace / SpaceToDepth on NCHW with `blocksize`.
fn depth_space(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let b = ctx
        .attr_int("blocksize")
        .ok_or_else(|| ShapeError("needs blocksize".into()))?;
    if b <= 0 {
        return err(format!("blocksize {b} is not positive"));
    }
    let shape = match &x.shape {
        None => None,
        Some(s) if s.len() != 4 => {
            return err(format!("{} needs a 4-D input, got [{}]", ctx.op, join(s)));
        }
        Some(s) => {
            let bb = SymInt::Int(
                b.checked_mul(b)
                    .ok_or_else(|| ShapeError("blocksize overflows".into()))?,
            );
            let b = SymInt::Int(b);
            let div = |v: &Dim, k: &SymInt| -> Result<Dim> {
                let v = v.to_symint();
                match v.exact_div(k) {
                    Some(q) => dim(&q),
                    None if v.is_known() => {
                        err(format!("{} size {v} is not a multiple of {k}", ctx.op))
                    }
                    None => dim(&v.floor_div(k.as_int().unwrap_or(1))?),
                }
            };
            let mul = |v: &Dim, k: &SymInt| -> Result<Dim> { dim(&v.to_symint().mul(k)?) };
            Some(if ctx.op == "DepthToSpace" {
                vec![
                    s[0].clone(),
                    div(&s[1], &bb)?,
                    mul(&s[2], &b)?,
                    mul(&s[3], &b)?,
                ]
            } else {
                vec![
                    s[0].clone(),
                    mul(&s[1], &bb)?,
                    div(&s[2], &b)?,
                    div(&s[3], &b)?,
                ]
            })
        }
    };
    ctx.set(0, Fact::tensor(x.dtype, shape));
    Ok(())
}

/// Identity-like ops pass the value through too.
fn identity(ctx: &mut InferCtx) -> Result<()> {
    let mut x = ctx.require(0)?.clone();
    if x.value.is_none() {
        x.value = ctx.value(0);
    }
    x.constant = None;
    ctx.set(0, x);
    Ok(())
}

fn dropout(ctx: &mut InferCtx) -> Result<()> {
    identity(ctx)?;
    let shape = ctx.shape(0).cloned();
    ctx.set(1, Fact::tensor(Some(DType::Bool), shape));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 22] = [
        ("Shape", shape_op),
        ("Size", size),
        ("Reshape", reshape),
        ("Flatten", flatten),
        ("Squeeze", squeeze),
        ("Unsqueeze", unsqueeze),
        ("Expand", expand),
        ("Concat", concat),
        ("Split", split),
        ("Slice", slice),
        ("Transpose", transpose),
        ("Tile", tile),
        ("Pad", pad),
        ("CenterCropPad", center_crop_pad),
        ("OneHot", one_hot),
        ("Trilu", like_input),
        ("ReverseSequence", like_input),
        ("BitCast", bit_cast),
        ("DepthToSpace", depth_space),
        ("SpaceToDepth", depth_space),
        ("Identity", identity),
        ("Dropout", dropout),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
pub(super) mod tests {

    use super::*;
    use crate::proto::AttributeProto;

    pub(in crate::shape) fn int(name: &str, v: i64) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            i: Some(v),
            ..Default::default()
        }
    }
    pub(in crate::shape) fn ints(name: &str, v: &[i64]) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            ints: v.to_vec(),
            ..Default::default()
        }
    }

    /// Runs `op` (ai.onnx at `opset`, any family) on `inputs`; returns its outputs.
    pub(in crate::shape) use crate::shape::ctx::run_onnx_op as run;
    pub(in crate::shape) fn one(
        op: &str,
        opset: i64,
        attrs: &[AttributeProto],
        inputs: Vec<Option<Fact>>,
    ) -> Fact {
        run(op, opset, attrs, inputs, 1).expect("inference succeeds")[0].clone()
    }

    pub(in crate::shape) fn s(n: &str) -> Dim {
        Dim::symbol(n)
    }
    pub(in crate::shape) fn k(n: u64) -> Dim {
        Dim::Known(n)
    }
    pub(in crate::shape) fn f32(dims: Vec<Dim>) -> Option<Fact> {
        Some(Fact::new(DType::Float32, dims))
    }
    /// A 1-D int64 tensor with known data.
    pub(in crate::shape) fn vec_i(v: &[i64]) -> Option<Fact> {
        Some(Fact::ints_1d(v.iter().map(|&x| SymInt::Int(x)).collect()))
    }
    pub(in crate::shape) fn scalar_i(v: i64) -> Option<Fact> {
        Some(Fact::with_value(
            DType::Int64,
            vec![],
            TensorValue::ints(vec![SymInt::Int(v)]),
        ))
    }
    pub(in crate::shape) fn known_vals(f: &Fact) -> Vec<i64> {
        f.value
            .as_ref()
            .and_then(TensorValue::as_known_ints)
            .expect("a known value")
    }

    /// Runs `f` and `g` as `op` on the same inputs: the same facts (values
    /// included), or the same error.
    pub(in crate::shape) fn same_as(
        f: crate::shape::InferFn,
        g: crate::shape::InferFn,
        op: &str,
        opset: i64,
        attrs: &[AttributeProto],
        inputs: Vec<Option<Fact>>,
    ) {
        use crate::shape::ctx::run_fn;
        let a = run_fn(f, "", op, opset, attrs, inputs.clone(), 1);
        let b = run_fn(g, "", op, opset, attrs, inputs.clone(), 1);
        match (a, b) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{op} of {inputs:?}");
                assert_eq!(a[0].value, b[0].value, "{op} of {inputs:?}");
            }
            (Err(a), Err(b)) => assert_eq!(a.0, b.0, "{op} of {inputs:?}"),
            (a, b) => panic!("{op} of {inputs:?}: {a:?} against {b:?}"),
        }
    }

    /// Concat of known integer vectors takes a way of its own: the fact
    /// the general one makes, or its error, whatever the parts are
    /// (symbolic entries, an absent part, a part of unknown entries or of
    /// floats, a scalar, a wrong axis, Concat-1's default axis).
    #[test]
    fn concat_of_sizes_is_the_general_concat() {
        let sized = |n: &str| Some(Fact::ints_1d(vec![s(n).to_symint(), SymInt::Int(3)]));
        let floats = Some(Fact::with_value(
            DType::Float32,
            vec![k(2)],
            TensorValue::floats(vec![1.5, 2.0]),
        ));
        let unknown = Some(Fact::new(DType::Int64, vec![k(2)]));
        let cases: Vec<(i64, Vec<AttributeProto>, Vec<Option<Fact>>)> = vec![
            (
                13,
                vec![int("axis", 0)],
                vec![vec_i(&[1]), sized("seq"), vec_i(&[12, 64])],
            ),
            (
                13,
                vec![int("axis", -1)],
                vec![vec_i(&[1]), None, vec_i(&[4])],
            ),
            (13, vec![int("axis", 1)], vec![vec_i(&[1]), vec_i(&[2])]),
            (13, vec![int("axis", 0)], vec![vec_i(&[1]), unknown]),
            (13, vec![int("axis", 0)], vec![vec_i(&[1]), floats]),
            (13, vec![int("axis", 0)], vec![vec_i(&[1]), scalar_i(2)]),
            (13, vec![int("axis", 0)], vec![None]),
            (1, vec![], vec![vec_i(&[1]), vec_i(&[2])]),
            (13, vec![int("axis", 0)], vec![vec_i(&[])]),
        ];
        for (opset, attrs, inputs) in cases {
            same_as(concat, concat_any, "Concat", opset, &attrs, inputs);
        }
    }

    #[test]
    fn shape_gather_concat_reshape_gives_reshape_a_symbolic_shape() {
        // x: [batch, seq, 768] viewed as heads: Reshape(x, Concat(Shape(x)[0:2], [12, 64])).
        let x = f32(vec![s("batch"), s("seq"), k(768)]);
        let shape = one("Shape", 21, &[], vec![x.clone()]);
        let bs = one("Gather", 13, &[], vec![Some(shape), vec_i(&[0, 1])]);
        let target = one(
            "Concat",
            13,
            &[int("axis", 0)],
            vec![Some(bs), vec_i(&[12, 64])],
        );
        let out = one("Reshape", 14, &[], vec![x, Some(target)]);
        assert_eq!(out.shape, Some(vec![s("batch"), s("seq"), k(12), k(64)]));
    }

    #[test]
    fn shape_start_end_select_a_range_of_dimensions() {
        let x = f32(vec![k(2), s("n"), k(5), k(7)]);
        let out = one(
            "Shape",
            15,
            &[int("start", 1), int("end", -1)],
            vec![x.clone()],
        );
        assert_eq!(out.shape, Some(vec![k(2)]));
        assert_eq!(
            out.value,
            Some(TensorValue::ints(vec![SymInt::sym("n"), SymInt::Int(5)]))
        );
        // A start past the end gives an empty vector, not an error.
        let out = one("Shape", 15, &[int("start", 3), int("end", 1)], vec![x]);
        assert_eq!(out.shape, Some(vec![k(0)]));
    }

    #[test]
    fn reshape_infers_minus_one_symbolically_and_rejects_bad_counts() {
        // [batch, seq, 768] -> [0, -1]: the -1 is seq*768 exactly.
        let x = f32(vec![s("batch"), s("seq"), k(768)]);
        let out = one("Reshape", 14, &[], vec![x, vec_i(&[0, -1])]);
        let seq768 = SymInt::sym("seq").mul(&SymInt::Int(768)).unwrap();
        assert_eq!(out.shape, Some(vec![s("batch"), Dim::Sym(seq768)]));
        // allowzero keeps a literal 0 as a size.
        let out = one(
            "Reshape",
            14,
            &[int("allowzero", 1)],
            vec![f32(vec![k(0), k(3)]), vec_i(&[3, 0])],
        );
        assert_eq!(out.shape, Some(vec![k(3), k(0)]));
        // 12 elements do not make rows of 5; nor can two sizes be inferred.
        assert!(
            run(
                "Reshape",
                14,
                &[],
                vec![f32(vec![k(3), k(4)]), vec_i(&[5, -1])],
                1
            )
            .is_err()
        );
        assert!(
            run(
                "Reshape",
                14,
                &[],
                vec![f32(vec![k(3), k(4)]), vec_i(&[-1, -1])],
                1
            )
            .is_err()
        );
        // Before opset 5 the target is the `shape` attribute.
        let out = one(
            "Reshape",
            4,
            &[ints("shape", &[-1])],
            vec![f32(vec![k(3), k(4)])],
        );
        assert_eq!(out.shape, Some(vec![k(12)]));
    }

    #[test]
    fn reshape_with_unknown_target_keeps_its_rank() {
        let target = Some(Fact::new(DType::Int64, vec![k(3)]));
        let out = one("Reshape", 14, &[], vec![f32(vec![k(6)]), target]);
        assert_eq!(out.rank(), Some(3));
        assert!(out.shape.unwrap().iter().all(|d| d.known().is_none()));
    }

    #[test]
    fn slice_of_symbolic_axes() {
        let x = f32(vec![s("batch"), s("seq"), k(64)]);
        // x[:, -1:, :] keeps one position; x[:, 1:, :] drops one.
        let out = one(
            "Slice",
            13,
            &[],
            vec![x.clone(), vec_i(&[-1]), vec_i(&[i64::MAX]), vec_i(&[1])],
        );
        assert_eq!(out.shape, Some(vec![s("batch"), k(1), k(64)]));
        let out = one(
            "Slice",
            13,
            &[],
            vec![x.clone(), vec_i(&[1]), vec_i(&[i64::MAX]), vec_i(&[1])],
        );
        let seq1 = SymInt::sym("seq").sub(&SymInt::Int(1)).unwrap();
        assert_eq!(out.shape, Some(vec![s("batch"), Dim::Sym(seq1), k(64)]));
        // x[:, ::-1, :] reverses the whole axis.
        let out = one(
            "Slice",
            13,
            &[],
            vec![
                x,
                vec_i(&[-1]),
                vec_i(&[i64::MIN]),
                vec_i(&[1]),
                vec_i(&[-1]),
            ],
        );
        assert_eq!(out.shape, Some(vec![s("batch"), s("seq"), k(64)]));
    }

    #[test]
    fn slice_clamps_and_folds_values() {
        let v = vec_i(&[10, 20, 30, 40, 50]);
        let out = one(
            "Slice",
            13,
            &[],
            vec![v.clone(), vec_i(&[-3]), vec_i(&[100])],
        );
        assert_eq!(known_vals(&out), vec![30, 40, 50]);
        let out = one(
            "Slice",
            13,
            &[],
            vec![
                v.clone(),
                vec_i(&[4]),
                vec_i(&[-100]),
                vec_i(&[0]),
                vec_i(&[-2]),
            ],
        );
        assert_eq!(known_vals(&out), vec![50, 30, 10]);
        // Opset 1-9: attributes.
        let out = one(
            "Slice",
            9,
            &[ints("starts", &[1]), ints("ends", &[3])],
            vec![v.clone()],
        );
        assert_eq!(known_vals(&out), vec![20, 30]);
        assert!(
            run(
                "Slice",
                13,
                &[],
                vec![v, vec_i(&[0]), vec_i(&[1]), vec_i(&[0]), vec_i(&[0])],
                1
            )
            .is_err()
        );
    }

    /// A 2-D value sliced on both axes reads each output place at
    /// start + k * step per axis, backwards too, whatever the step's size
    /// when an axis keeps one entry.
    #[test]
    fn slice_folds_values_on_every_axis() {
        // [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
        let grid = Some(Fact::with_value(
            DType::Int64,
            vec![k(3), k(4)],
            TensorValue::ints((0..12).map(SymInt::Int).collect()),
        ));
        let slice = |starts: &[i64], ends: &[i64], steps: &[i64]| {
            let axes = vec_i(&[0, 1]);
            let inputs = vec![grid.clone(), vec_i(starts), vec_i(ends), axes, vec_i(steps)];
            let out = one("Slice", 13, &[], inputs);
            (out.shape.clone().unwrap(), known_vals(&out))
        };
        // Rows 2, 1 (from 2 down, not reaching 0); columns 1, 3.
        assert_eq!(
            slice(&[2, 1], &[0, 4], &[-1, 2]),
            (vec![k(2), k(2)], vec![9, 11, 5, 7])
        );
        // Every row backwards, the first column alone (a step past 64
        // bits' worth of places, never taken).
        assert_eq!(
            slice(&[-1, 0], &[i64::MIN, 1], &[-1, i64::MAX]),
            (vec![k(3), k(1)], vec![8, 4, 0])
        );
        // No row at all: an empty value.
        assert_eq!(slice(&[1, 0], &[1, 4], &[1, 1]), (vec![k(0), k(4)], vec![]));
    }

    #[test]
    fn squeeze_and_unsqueeze() {
        // With no axes, a symbolic size might be 1: the rank is unknown.
        let out = one("Squeeze", 13, &[], vec![f32(vec![k(1), s("n")])]);
        assert_eq!(out.shape, None);
        let out = one(
            "Squeeze",
            13,
            &[],
            vec![f32(vec![k(1), s("n")]), vec_i(&[0])],
        );
        assert_eq!(out.shape, Some(vec![s("n")]));
        assert!(
            run(
                "Squeeze",
                11,
                &[ints("axes", &[1])],
                vec![f32(vec![k(1), k(3)])],
                1
            )
            .is_err()
        );
        // Unsqueeze's axes index the output: -1 is the new last axis.
        let out = one("Unsqueeze", 13, &[], vec![scalar_i(7), vec_i(&[0])]);
        assert_eq!(out.shape, Some(vec![k(1)]));
        assert_eq!(known_vals(&out), vec![7]);
        let out = one(
            "Unsqueeze",
            11,
            &[ints("axes", &[0, -1])],
            vec![f32(vec![s("n")])],
        );
        assert_eq!(out.shape, Some(vec![k(1), s("n"), k(1)]));
        assert!(
            run(
                "Unsqueeze",
                13,
                &[],
                vec![f32(vec![k(2)]), vec_i(&[0, 0])],
                1
            )
            .is_err()
        );
    }

    #[test]
    fn concat_adds_along_the_axis_and_checks_the_others() {
        let out = one(
            "Concat",
            13,
            &[int("axis", 1)],
            vec![f32(vec![s("b"), s("p")]), f32(vec![s("b"), s("q")])],
        );
        let pq = SymInt::sym("p").add(&SymInt::sym("q")).unwrap();
        assert_eq!(out.shape, Some(vec![s("b"), Dim::Sym(pq)]));
        // An input of unknown shape: the axis size becomes unknown, the others stay.
        let out = one(
            "Concat",
            13,
            &[int("axis", 0)],
            vec![Some(Fact::unknown()), f32(vec![k(2), s("n")])],
        );
        assert_eq!(out.rank(), Some(2));
        assert_eq!(out.shape.as_ref().map(|v| v[1].clone()), Some(s("n")));
        assert!(out.shape.unwrap()[0].known().is_none());
        assert!(
            run(
                "Concat",
                13,
                &[int("axis", 0)],
                vec![f32(vec![k(1), k(2)]), f32(vec![k(1), k(3)])],
                1
            )
            .is_err()
        );
        // 2-D values fold along axis 1.
        let a = Fact::with_value(
            DType::Int64,
            vec![k(2), k(1)],
            TensorValue::ints(vec![1.into(), 2.into()]),
        );
        let b = Fact::with_value(
            DType::Int64,
            vec![k(2), k(2)],
            TensorValue::ints(vec![3.into(), 4.into(), 5.into(), 6.into()]),
        );
        let out = one("Concat", 13, &[int("axis", -1)], vec![Some(a), Some(b)]);
        assert_eq!(known_vals(&out), vec![1, 3, 4, 2, 5, 6]);
    }

    #[test]
    fn expand_broadcasts_symbolic_sizes() {
        let target = Some(Fact::ints_1d(vec![SymInt::sym("b"), SymInt::Int(1)]));
        let out = one("Expand", 13, &[], vec![f32(vec![k(1), s("n")]), target]);
        assert_eq!(out.shape, Some(vec![s("b"), s("n")]));
        let out = one("Expand", 13, &[], vec![vec_i(&[4, 5]), vec_i(&[2, 1])]);
        assert_eq!(known_vals(&out), vec![4, 5, 4, 5]);
    }

    #[test]
    fn split_variants() {
        // num_outputs (opset 18): 7 in 3 parts is 3, 3, 1.
        let outs = run(
            "Split",
            18,
            &[int("num_outputs", 3)],
            vec![f32(vec![k(7)])],
            3,
        )
        .unwrap();
        let sizes: Vec<_> = outs
            .iter()
            .map(|f| f.shape.clone().unwrap()[0].clone())
            .collect();
        assert_eq!(sizes, vec![k(3), k(3), k(1)]);
        // Equal parts of a symbolic size: 2*n in 2 is n.
        let two_n = Dim::Sym(SymInt::sym("n").mul(&SymInt::Int(2)).unwrap());
        let outs = run("Split", 13, &[], vec![f32(vec![two_n])], 2).unwrap();
        assert_eq!(outs[1].shape, Some(vec![s("n")]));
        // Sizes from the attribute (opset 11) and folded values.
        let outs = run(
            "Split",
            11,
            &[ints("split", &[1, 2])],
            vec![vec_i(&[7, 8, 9])],
            2,
        )
        .unwrap();
        assert_eq!(known_vals(&outs[1]), vec![8, 9]);
        assert!(run("Split", 13, &[], vec![f32(vec![k(5)]), vec_i(&[1, 2])], 2).is_err());
    }

    #[test]
    fn transpose_and_tile_fold() {
        let m = Fact::with_value(
            DType::Int64,
            vec![k(2), k(3)],
            TensorValue::ints((1..=6).map(SymInt::Int).collect()),
        );
        let out = one("Transpose", 13, &[], vec![Some(m)]);
        assert_eq!(out.shape, Some(vec![k(3), k(2)]));
        assert_eq!(known_vals(&out), vec![1, 4, 2, 5, 3, 6]);
        let out = one("Tile", 13, &[], vec![vec_i(&[1, 2]), vec_i(&[2])]);
        assert_eq!(known_vals(&out), vec![1, 2, 1, 2]);
        assert!(
            run(
                "Transpose",
                13,
                &[ints("perm", &[0, 0])],
                vec![f32(vec![k(1), k(2)])],
                1
            )
            .is_err()
        );
    }

    #[test]
    fn pad_reads_pads_from_where_the_opset_keeps_them() {
        let x = f32(vec![s("n"), k(4)]);
        let out = one("Pad", 2, &[ints("pads", &[0, 1, 0, 2])], vec![x.clone()]);
        assert_eq!(out.shape, Some(vec![s("n"), k(7)]));
        let out = one("Pad", 13, &[], vec![x.clone(), vec_i(&[1, 0, 1, 0])]);
        let n2 = SymInt::sym("n").add(&SymInt::Int(2)).unwrap();
        assert_eq!(out.shape, Some(vec![Dim::Sym(n2), k(4)]));
        // Opset 18: pads for the listed axes only.
        let out = one(
            "Pad",
            18,
            &[],
            vec![x.clone(), vec_i(&[1, 1]), None, vec_i(&[-1])],
        );
        assert_eq!(out.shape, Some(vec![s("n"), k(6)]));
        // Cropping below zero is inconsistent.
        assert!(run("Pad", 13, &[], vec![x, vec_i(&[0, -3, 0, -2])], 1).is_err());
    }

    #[test]
    fn flatten_depth_to_space_det() {
        let x = f32(vec![s("b"), k(3), k(4), k(5)]);
        let out = one("Flatten", 13, &[int("axis", -1)], vec![x.clone()]);
        let b60 = SymInt::sym("b").mul(&SymInt::Int(60)).unwrap();
        assert_eq!(
            out.shape,
            Some(vec![Dim::Sym(b60.floor_div(5).unwrap()), k(5)])
        );
        let out = one("Flatten", 13, &[int("axis", 0)], vec![x]);
        assert_eq!(out.shape, Some(vec![k(1), Dim::Sym(b60)]));
        let out = one(
            "DepthToSpace",
            13,
            &[int("blocksize", 2)],
            vec![f32(vec![s("b"), k(8), s("h"), k(3)])],
        );
        let h2 = SymInt::sym("h").mul(&SymInt::Int(2)).unwrap();
        assert_eq!(out.shape, Some(vec![s("b"), k(2), Dim::Sym(h2), k(6)]));
        assert!(
            run(
                "SpaceToDepth",
                13,
                &[int("blocksize", 2)],
                vec![f32(vec![k(1), k(1), k(3), k(4)])],
                1
            )
            .is_err()
        );
        let out = one("Det", 11, &[], vec![f32(vec![s("b"), k(3), k(3)])]);
        assert_eq!(out.shape, Some(vec![s("b")]));
        assert!(run("Det", 11, &[], vec![f32(vec![k(3), k(2)])], 1).is_err());
    }

    #[test]
    fn constant_of_shape_and_size_fold() {
        let target = Some(Fact::ints_1d(vec![SymInt::sym("n"), SymInt::Int(2)]));
        let out = one("ConstantOfShape", 9, &[], vec![target]);
        assert_eq!(out.dtype, Some(DType::Float32));
        assert_eq!(out.shape, Some(vec![s("n"), k(2)]));
        let out = one("ConstantOfShape", 9, &[], vec![vec_i(&[2])]);
        assert_eq!(out.value, Some(TensorValue::floats(vec![0.0, 0.0])));
        assert!(run("ConstantOfShape", 9, &[], vec![vec_i(&[-1])], 1).is_err());
        let out = one("Size", 13, &[], vec![f32(vec![s("n"), k(2)])]);
        let n2 = SymInt::sym("n").mul(&SymInt::Int(2)).unwrap();
        assert_eq!(out.value, Some(TensorValue::ints(vec![n2])));
    }

    #[test]
    fn one_hot_crop_bitcast_eyelike() {
        // OneHot: depth 10 inserted before the last axis (axis -2 of the output).
        let values = Some(Fact::new(DType::Int32, vec![k(2)]));
        let out = one(
            "OneHot",
            11,
            &[int("axis", -2)],
            vec![f32(vec![s("b"), k(4)]), scalar_i(10), values],
        );
        assert_eq!(
            (out.dtype, out.shape),
            (Some(DType::Int32), Some(vec![s("b"), k(10), k(4)]))
        );
        // CenterCropPad on the listed axes only.
        let out = one(
            "CenterCropPad",
            18,
            &[ints("axes", &[1])],
            vec![f32(vec![s("b"), k(9)]), vec_i(&[4])],
        );
        assert_eq!(out.shape, Some(vec![s("b"), k(4)]));
        let bitcast = |to: i64| run("BitCast", 26, &[int("to", to)], vec![f32(vec![s("n")])], 1);
        assert_eq!(bitcast(6).unwrap()[0].dtype, Some(DType::Int32));
        assert!(bitcast(7).is_err(), "float32 to int64 changes the width");
        assert!(run("EyeLike", 9, &[], vec![f32(vec![k(3)])], 1).is_err());
    }
}
