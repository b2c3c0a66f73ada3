//! Neural-network layers: convolutions, pooling, normalizations, matrix
//! products, quantization and losses.
//!
//! Convolutions and pooling share one sliding-window rule ([`Window`]), which
//! works on symbolic spatial sizes too (`floor((H+2-3)/2)+1`).

use std::collections::BTreeMap;

use super::ctx::{InferCtx, Result, ShapeError, axis, broadcast, dim, dtype_code, err, join};
use super::fact::Fact;
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

// ---------------------------------------------------------------- helpers

/// The framework's overflow error, for plain `i64` arithmetic on attributes.
fn overflow() -> ShapeError {
    crate::dim::Overflow.into()
}

/// Two sizes that must be equal: `None` when they are known and differ;
/// otherwise the better known one (a symbol against a number is the number).
fn unify(a: &Dim, b: &Dim) -> Option<Dim> {
    match (a, b) {
        (Dim::Known(x), Dim::Known(y)) => (x == y).then(|| a.clone()),
        (Dim::Sym(_), Dim::Known(_)) => Some(b.clone()),
        _ => Some(a.clone()),
    }
}

/// Checks that two sizes can be equal, naming what they are.
fn same_size(a: &Dim, b: &Dim, what: &str) -> Result<Dim> {
    unify(a, b).ok_or_else(|| ShapeError(format!("{what}: {a} does not match {b}")))
}

/// Shapes that must be identical, dimension by dimension.
fn same_shape(a: &[Dim], b: &[Dim], what: &str) -> Result<Vec<Dim>> {
    if a.len() != b.len() {
        return err(format!(
            "{what}: shapes [{}] and [{}] differ in rank",
            join(a),
            join(b)
        ));
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| same_size(x, y, what))
        .collect()
}

/// Output 0 takes input 0's type and shape (normalizations that keep the shape).
fn same_as_input(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    ctx.set(0, x.reshaped(x.shape.clone()));
    Ok(())
}

/// Input `i`'s dims `[N, C, spatial...]`, requiring at least one spatial axis.
fn nc_spatial(ctx: &InferCtx, i: usize) -> Result<Option<Vec<Dim>>> {
    match ctx.shape(i) {
        Some(s) if s.len() < 3 => err(format!(
            "{} needs an input of rank 3 or more (N, C, spatial...), got [{}]",
            ctx.op,
            join(s)
        )),
        s => Ok(s.cloned()),
    }
}

// ---------------------------------------------------------------- sliding windows

#[derive(Debug, Clone, Copy, PartialEq)]
enum AutoPad {
    NotSet,
    SameUpper,
    SameLower,
    Valid,
}

/// The sliding-window attributes of a convolution or pooling node.
struct Window {
    /// Per spatial axis; `None` where the kernel size is not known.
    kernel: Vec<Option<i64>>,
    strides: Vec<i64>,
    dilations: Vec<i64>,
    /// Explicit pads, all begins then all ends; `None` when absent.
    pads: Option<Vec<i64>>,
    auto_pad: AutoPad,
    ceil_mode: bool,
}

/// A per-axis integer attribute of length `n`, each at least `min`.
fn per_axis(ctx: &InferCtx, name: &str, n: usize, min: i64) -> Result<Option<Vec<i64>>> {
    match ctx.attr_ints(name) {
        // An empty list is what some exporters write for "not given".
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) if v.len() != n => err(format!(
            "{} attribute {name} has {} values, expected {n}",
            ctx.op,
            v.len()
        )),
        Some(v) if v.iter().any(|&x| x < min) => err(format!(
            "{} attribute {name} = {v:?} must be at least {min}",
            ctx.op
        )),
        Some(v) => Ok(Some(v)),
    }
}

impl Window {
    /// Reads the attributes for `n` spatial axes; `kernel` comes from the
    /// weights when `kernel_shape` is absent.
    fn read(ctx: &InferCtx, n: usize, kernel: Vec<Option<i64>>) -> Result<Window> {
        let kernel = match per_axis(ctx, "kernel_shape", n, 1)? {
            Some(k) => k.into_iter().map(Some).collect(),
            None if kernel.len() == n => kernel,
            None => {
                return err(format!(
                    "{} kernel has {} spatial axes, the input {n}",
                    ctx.op,
                    kernel.len()
                ));
            }
        };
        if kernel.iter().flatten().any(|&k| k < 1) {
            return err(format!("{} kernel sizes must be positive", ctx.op));
        }
        let pads = match ctx.attr_ints("pads") {
            Some(p) if p.is_empty() => None,
            Some(p) if p.len() != 2 * n => {
                return err(format!(
                    "{} has {} pads, expected {} (begins and ends)",
                    ctx.op,
                    p.len(),
                    2 * n
                ));
            }
            Some(p) if p.iter().any(|&x| x < 0) => {
                return err(format!("{} pads {p:?} must not be negative", ctx.op));
            }
            p => p,
        };
        let auto_pad = match ctx.attr_string_or("auto_pad", "NOTSET").as_str() {
            "NOTSET" | "" => AutoPad::NotSet,
            "SAME_UPPER" => AutoPad::SameUpper,
            "SAME_LOWER" => AutoPad::SameLower,
            "VALID" => AutoPad::Valid,
            other => return err(format!("{} has unknown auto_pad {other:?}", ctx.op)),
        };
        Ok(Window {
            kernel,
            strides: per_axis(ctx, "strides", n, 1)?.unwrap_or_else(|| vec![1; n]),
            dilations: per_axis(ctx, "dilations", n, 1)?.unwrap_or_else(|| vec![1; n]),
            pads,
            auto_pad,
            ceil_mode: ctx.attr_int_or("ceil_mode", 0) != 0,
        })
    }

    fn same(&self) -> bool {
        // Explicit pads win over auto_pad, as in ONNX's own inference.
        self.pads.is_none() && matches!(self.auto_pad, AutoPad::SameUpper | AutoPad::SameLower)
    }

    fn stride(&self, i: usize) -> i64 {
        self.strides.get(i).copied().unwrap_or(1)
    }

    /// `(k - 1) * dilation + 1`, when the kernel size is known.
    fn effective_kernel(&self, i: usize) -> Result<Option<i64>> {
        let Some(k) = self.kernel.get(i).copied().flatten() else {
            return Ok(None);
        };
        let d = self.dilations.get(i).copied().unwrap_or(1);
        (k - 1)
            .checked_mul(d)
            .and_then(|x| x.checked_add(1))
            .map(Some)
            .ok_or_else(overflow)
    }

    /// Explicit (begin, end) pads of axis `i`; zero when absent.
    fn pad(&self, i: usize) -> (i64, i64) {
        let Some(p) = &self.pads else {
            return (0, 0);
        };
        let n = p.len() / 2;
        (
            p.get(i).copied().unwrap_or(0),
            p.get(i + n).copied().unwrap_or(0),
        )
    }

    /// Output size of a convolution or pooling along axis `i`; `None` when
    /// the kernel size is unknown.
    ///
    /// `out = floor((in + pads - ek) / s) + 1`, or with `ceil_mode`
    /// `ceil(...) + 1` less the windows that would start in the end padding
    /// (PyTorch's rule, which ONNX adopted): at most `ceil((in + pad_begin) / s)`.
    /// SAME padding gives `ceil(in / s)` whatever the kernel.
    fn out_dim(&self, i: usize, size: &Dim) -> Result<Option<Dim>> {
        let x = size.to_symint();
        let s = self.stride(i);
        if self.same() {
            return Ok(Some(dim(&x.ceil_div(s)?)?));
        }
        let Some(ek) = self.effective_kernel(i)? else {
            return Ok(None);
        };
        let (pb, pe) = self.pad(i);
        let padded = x.add(&SymInt::Int(pb.checked_add(pe).ok_or_else(overflow)?))?;
        let span = padded.sub(&SymInt::Int(ek))?;
        if let Some(v) = span.as_int()
            && v < 0
        {
            return err(format!(
                "window of {ek} is larger than the padded input of {}",
                v + ek
            ));
        }
        let out = if self.ceil_mode {
            let all = span.ceil_div(s)?.add(&SymInt::Int(1))?;
            // Only when a stride reaches past the end padding can a window start there.
            if s.checked_add(pe).ok_or_else(overflow)? > ek {
                let starts = x.add(&SymInt::Int(pb))?.ceil_div(s)?;
                all.min_with(&starts)
            } else {
                all
            }
        } else {
            span.floor_div(s)?.add(&SymInt::Int(1))?
        };
        Ok(Some(dim(&out)?))
    }

    /// Output size of a transposed convolution along axis `i`:
    /// `s * (in - 1) + output_padding + ek - pads`; SAME pads take
    /// `max(0, ek + output_padding - s)` in all (as onnxruntime does), so
    /// the output is `in * s` for the usual kernels.
    fn transposed_dim(&self, i: usize, size: &Dim, output_padding: i64) -> Result<Option<Dim>> {
        let Some(ek) = self.effective_kernel(i)? else {
            return Ok(None);
        };
        let s = self.stride(i);
        let grown = ek.checked_add(output_padding).ok_or_else(overflow)?;
        let pads = if self.same() {
            grown.checked_sub(s).ok_or_else(overflow)?.max(0)
        } else {
            let (pb, pe) = self.pad(i);
            pb.checked_add(pe).ok_or_else(overflow)?
        };
        let out = size
            .to_symint()
            .sub(&SymInt::Int(1))?
            .mul(&SymInt::Int(s))?
            .add(&SymInt::Int(grown.checked_sub(pads).ok_or_else(overflow)?))?;
        Ok(Some(dim(&out)?))
    }
}

/// Output spatial sizes for `spatial` input sizes; an unknown kernel size
/// gives a fresh symbol.
fn window_dims(ctx: &InferCtx, w: &Window, spatial: &[Dim]) -> Result<Vec<Dim>> {
    spatial
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let o = w
                .out_dim(i, d)
                .map_err(|e| ShapeError(format!("{} spatial axis {i}: {e}", ctx.op)))?;
            Ok(o.unwrap_or_else(|| ctx.fresh_dim("window")))
        })
        .collect()
}

/// Kernel sizes from a weight shape `[M, C/g, k...]` (known ones only).
fn kernel_of(w: &[Dim]) -> Vec<Option<i64>> {
    w.iter()
        .skip(2)
        .map(|d| d.known().and_then(|k| i64::try_from(k).ok()))
        .collect()
}

fn group(ctx: &InferCtx) -> Result<i64> {
    let g = ctx.attr_int_or("group", 1);
    if g < 1 {
        return err(format!("{} group {g} must be positive", ctx.op));
    }
    Ok(g)
}

// ---------------------------------------------------------------- convolutions

/// Conv, ConvInteger, QLinearConv, DeformConv: `[N, C, in...]` with weights
/// `[M, C/group, k...]` give `[N, M, out...]`.
fn conv(ctx: &mut InferCtx) -> Result<()> {
    // QLinearConv interleaves scales and zero points: x, x_scale, x_zp, w, ...
    let (xi, wi) = if ctx.op == "QLinearConv" {
        (0, 3)
    } else {
        (0, 1)
    };
    let dtype = match ctx.op {
        "ConvInteger" => Some(DType::Int32),
        "QLinearConv" => ctx.dtype(7),
        _ => ctx.dtype(xi),
    };
    let Some(x) = nc_spatial(ctx, xi)? else {
        ctx.set(0, Fact::tensor(dtype, None));
        return Ok(());
    };
    let n = x.len() - 2;
    let g = group(ctx)?;
    let w = ctx.shape(wi).cloned();
    if let Some(w) = &w {
        if w.len() != x.len() {
            return err(format!(
                "{} weights [{}] do not have the input's rank {}",
                ctx.op,
                join(w),
                x.len()
            ));
        }
        // Input channels = weight's C/group * group.
        if let (Some(c), Some(cg)) = (x[1].known(), w[1].known())
            && cg.checked_mul(g as u64) != Some(c)
        {
            return err(format!(
                "{} input has {c} channels, weights expect {cg} x group {g}",
                ctx.op
            ));
        }
    }
    let kernel = w.as_deref().map(kernel_of).unwrap_or_else(|| vec![None; n]);
    let win = Window::read(ctx, n, kernel)?;
    let m = match w.as_ref().and_then(|w| w.first()) {
        Some(m) => m.clone(),
        None => ctx.fresh_dim("channels"),
    };
    let mut out = vec![x[0].clone(), m];
    out.extend(window_dims(ctx, &win, &x[2..])?);
    ctx.set(0, Fact::tensor(dtype, Some(out)));
    Ok(())
}

/// ConvTranspose: weights `[C, M/group, k...]` give `[N, M, out...]`, the
/// sizes from `output_shape` when given, else from the strides.
fn conv_transpose(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    let Some(x) = nc_spatial(ctx, 0)? else {
        ctx.set(0, Fact::tensor(dtype, None));
        return Ok(());
    };
    let n = x.len() - 2;
    let g = group(ctx)?;
    let w = ctx.shape(1).cloned();
    if let Some(w) = &w {
        if w.len() != x.len() {
            return err(format!(
                "ConvTranspose weights [{}] do not have the input's rank {}",
                join(w),
                x.len()
            ));
        }
        same_size(&x[1], &w[0], "ConvTranspose input channels vs weights")?;
    }
    if let Some(c) = x[1].known()
        && c % g as u64 != 0
    {
        return err(format!(
            "ConvTranspose input channels {c} do not divide by group {g}"
        ));
    }
    let kernel = w.as_deref().map(kernel_of).unwrap_or_else(|| vec![None; n]);
    let win = Window::read(ctx, n, kernel)?;
    let m = match w.as_ref().and_then(|w| w.get(1)) {
        Some(m) => dim(&m.to_symint().mul(&SymInt::Int(g))?)?,
        None => ctx.fresh_dim("channels"),
    };
    let mut out = vec![x[0].clone(), m];
    match ctx.attr_ints("output_shape").filter(|s| !s.is_empty()) {
        Some(shape) => {
            // Spatial sizes; some exporters write the whole shape.
            let spatial = match shape.len() {
                l if l == n => &shape[..],
                l if l == n + 2 => &shape[2..],
                l => {
                    return err(format!(
                        "ConvTranspose output_shape has {l} values for {n} spatial axes"
                    ));
                }
            };
            for &s in spatial {
                out.push(dim(&SymInt::Int(s))?);
            }
        }
        None => {
            let pads = per_axis(ctx, "output_padding", n, 0)?.unwrap_or_else(|| vec![0; n]);
            for ((i, d), p) in x[2..].iter().enumerate().zip(pads) {
                let o = win.transposed_dim(i, d, p)?;
                out.push(o.unwrap_or_else(|| ctx.fresh_dim("window")));
            }
        }
    }
    ctx.set(0, Fact::tensor(dtype, Some(out)));
    Ok(())
}

// ---------------------------------------------------------------- pooling

/// MaxPool, AveragePool, LpPool: `[N, C, out...]`; MaxPool's optional
/// Indices output has the same shape, int64.
fn pool(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    if !ctx.has_attr("kernel_shape") {
        return err(format!("{} needs kernel_shape", ctx.op));
    }
    let shape = match nc_spatial(ctx, 0)? {
        Some(x) => {
            let win = Window::read(ctx, x.len() - 2, Vec::new())?;
            let mut out = x[..2].to_vec();
            out.extend(window_dims(ctx, &win, &x[2..])?);
            Some(out)
        }
        None => None,
    };
    ctx.set(0, Fact::tensor(dtype, shape.clone()));
    ctx.set(1, Fact::tensor(Some(DType::Int64), shape));
    Ok(())
}

/// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: spatial sizes become 1.
fn global_pool(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let shape = match &x.shape {
        Some(s) if s.len() < 2 => {
            return err(format!(
                "{} needs an input of rank 2 or more, got [{}]",
                ctx.op,
                join(s)
            ));
        }
        Some(s) => Some(
            s.iter()
                .enumerate()
                .map(|(i, d)| if i < 2 { d.clone() } else { Dim::Known(1) })
                .collect(),
        ),
        None => None,
    };
    ctx.set(0, x.reshaped(shape));
    Ok(())
}

/// MaxUnpool: `output_shape` (input 2) when given, else
/// `(in - 1) * s + k - pads` per axis.
fn max_unpool(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    let x = nc_spatial(ctx, 0)?;
    if ctx.input(2).is_some() {
        let shape = match (ctx.ints(2), &x) {
            (Some(v), _) => {
                if let Some(x) = &x
                    && v.len() != x.len()
                {
                    return err(format!(
                        "MaxUnpool output_shape has {} values for an input of rank {}",
                        v.len(),
                        x.len()
                    ));
                }
                Some(v.iter().map(dim).collect::<Result<Vec<_>>>()?)
            }
            // The sizes are data: keep N and C, the rest are run-time sizes.
            (None, Some(x)) => Some(
                x.iter()
                    .enumerate()
                    .map(|(i, d)| {
                        if i < 2 {
                            d.clone()
                        } else {
                            ctx.fresh_dim("unpool")
                        }
                    })
                    .collect(),
            ),
            (None, None) => None,
        };
        ctx.set(0, Fact::tensor(dtype, shape));
        return Ok(());
    }
    if !ctx.has_attr("kernel_shape") {
        return err("MaxUnpool needs kernel_shape");
    }
    let shape = match x {
        Some(x) => {
            let win = Window::read(ctx, x.len() - 2, Vec::new())?;
            let mut out = x[..2].to_vec();
            for (i, d) in x[2..].iter().enumerate() {
                // Unpooling is a transposed pooling without output padding.
                let o = win.transposed_dim(i, d, 0)?;
                out.push(o.unwrap_or_else(|| ctx.fresh_dim("unpool")));
            }
            Some(out)
        }
        None => None,
    };
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

// ---------------------------------------------------------------- normalizations

/// BatchNormalization: Y is X; the statistics outputs (running mean and
/// variance at 14+, also the saved ones before) are per channel, shaped like
/// the mean input.
fn batch_norm(ctx: &mut InferCtx) -> Result<()> {
    same_as_input(ctx)?;
    let stat_shape = ctx
        .shape(3)
        .cloned()
        .or_else(|| ctx.shape(0).and_then(|s| s.get(1)).map(|c| vec![c.clone()]));
    let stat = Fact::tensor(ctx.dtype(3).or(ctx.dtype(0)), stat_shape);
    for i in 1..ctx.n_outputs() {
        ctx.set(i, stat.clone());
    }
    Ok(())
}

/// LayerNormalization: Y is X; Mean and InvStdDev keep the axes before
/// `axis` and are 1 after, typed by `stash_type`.
fn layer_norm(ctx: &mut InferCtx) -> Result<()> {
    same_as_input(ctx)?;
    let stash = dtype_code(ctx.attr_int_or("stash_type", 1))?;
    let shape = match ctx.shape(0) {
        Some(s) => {
            let a = axis(ctx.attr_int_or("axis", -1), s.len())?;
            Some(
                s.iter()
                    .enumerate()
                    .map(|(i, d)| if i < a { d.clone() } else { Dim::Known(1) })
                    .collect(),
            )
        }
        None => None,
    };
    let stat = Fact::tensor(Some(stash), shape);
    ctx.set(1, stat.clone());
    ctx.set(2, stat);
    Ok(())
}

/// GroupNormalization: Y is X; the channels must split into `num_groups`.
fn group_norm(ctx: &mut InferCtx) -> Result<()> {
    same_as_input(ctx)?;
    let groups = ctx.attr_int_or("num_groups", 1);
    let channels = ctx.shape(0).and_then(|s| s.get(1)).and_then(Dim::known);
    match (u64::try_from(groups), channels) {
        (Ok(0) | Err(_), _) => err(format!(
            "GroupNormalization num_groups {groups} must be positive"
        )),
        (Ok(g), Some(c)) if c % g != 0 => err(format!(
            "GroupNormalization: {c} channels do not split into {g} groups"
        )),
        _ => Ok(()),
    }
}

/// RMSNormalization: X's shape, the scale's type.
fn rms_norm(ctx: &mut InferCtx) -> Result<()> {
    same_as_input(ctx)?;
    if let Some(s) = ctx.shape(0) {
        axis(ctx.attr_int_or("axis", -1), s.len())?;
    }
    if let (Some(t), Some(o)) = (ctx.dtype(1), ctx.output_mut(0)) {
        o.dtype = Some(t);
    }
    Ok(())
}

/// SwiGLU: gate and value have identical shapes (no broadcasting).
fn swiglu(ctx: &mut InferCtx) -> Result<()> {
    let a = ctx.require(0)?.clone();
    let shape = match (&a.shape, ctx.shape(1)) {
        (Some(x), Some(y)) => Some(same_shape(x, y, "SwiGLU gate vs value")?),
        (s, o) => s.clone().or(o.cloned()),
    };
    ctx.set(0, Fact::tensor(a.dtype.or(ctx.dtype(1)), shape));
    Ok(())
}

// ---------------------------------------------------------------- matrix products

/// numpy matmul: 1-D operands gain and then lose an axis; batch axes broadcast.
fn matmul_shape(a: &[Dim], b: &[Dim]) -> Result<Vec<Dim>> {
    let (Some((ka, a_rest)), Some((n, b_rest))) = (a.split_last(), b.split_last()) else {
        return err("MatMul operands must not be scalars");
    };
    // a: [..., M, K]; for 1-D a there is no M.
    let (m, a_batch) = match a_rest.split_last() {
        Some((m, batch)) => (Some(m), batch),
        None => (None, a_rest),
    };
    // b: [..., K, N]; for 1-D b the only axis is K and there is no N.
    let (kb, n, b_batch) = match b_rest.split_last() {
        Some((k, batch)) => (k, Some(n), batch),
        None => (n, None, b_rest),
    };
    same_size(ka, kb, "MatMul inner dimensions")?;
    let mut out = broadcast(a_batch, b_batch)?;
    out.extend(m.cloned());
    out.extend(n.cloned());
    Ok(out)
}

/// MatMul, MatMulInteger (int32), QLinearMatMul (typed by y_zero_point).
fn matmul(ctx: &mut InferCtx) -> Result<()> {
    let (ai, bi, dtype) = match ctx.op {
        "MatMulInteger" => (0, 1, Some(DType::Int32)),
        "QLinearMatMul" => (0, 3, ctx.dtype(7)),
        _ => (0, 1, ctx.dtype(0)),
    };
    let shape = match (ctx.shape(ai), ctx.shape(bi)) {
        (Some(a), Some(b)) => Some(matmul_shape(a, b)?),
        _ => None,
    };
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// Gemm: `op(A) [M, K] x op(B) [K, N] -> [M, N]`, op a transpose per transA/B;
/// C broadcasts to the result.
fn gemm(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    let operand = |i: usize, trans: &str| -> Result<Option<(Dim, Dim)>> {
        match ctx.shape(i) {
            Some(s) if s.len() == 2 => {
                let (r, c) = (s[0].clone(), s[1].clone());
                Ok(Some(if ctx.attr_int_or(trans, 0) != 0 {
                    (c, r)
                } else {
                    (r, c)
                }))
            }
            Some(s) => err(format!(
                "Gemm input {} must be 2-D, got [{}]",
                i + 1,
                join(s)
            )),
            None => Ok(None),
        }
    };
    let (a, b) = (operand(0, "transA")?, operand(1, "transB")?);
    let shape = match (a, b) {
        (Some((m, ka)), Some((kb, n))) => {
            same_size(&ka, &kb, "Gemm inner dimensions")?;
            Some(vec![m, n])
        }
        _ => None,
    };
    if let (Some(out), Some(c)) = (&shape, ctx.shape(2)) {
        // Unidirectional: C may not grow the result.
        let b = broadcast(out, c)?;
        if b.len() != out.len() || b.iter().zip(out).any(|(x, y)| unify(x, y).is_none()) {
            return err(format!(
                "Gemm C [{}] does not broadcast to [{}]",
                join(c),
                join(out)
            ));
        }
    }
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

// ---------------------------------------------------------------- Einsum

/// One subscript of an Einsum term.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sub {
    Label(char),
    Ellipsis,
}

/// Parses one term (`ij`, `...ij`, `b...`); at most one ellipsis.
fn einsum_term(t: &str) -> Result<Vec<Sub>> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("...") {
            if out.contains(&Sub::Ellipsis) {
                return err(format!("Einsum term {t:?} has more than one ellipsis"));
            }
            out.push(Sub::Ellipsis);
            rest = r;
        } else if c.is_ascii_alphabetic() {
            out.push(Sub::Label(c));
            rest = &rest[1..];
        } else {
            return err(format!("Einsum term {t:?} has an invalid character {c:?}"));
        }
    }
    Ok(out)
}

/// Einsum: labels take their input's sizes; `...` broadcasts; without `->`
/// the output is the ellipsis then the labels seen once, in ASCII order.
fn einsum(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    let eq: String = ctx
        .attr_string("equation")
        .ok_or_else(|| ShapeError("Einsum needs an equation".into()))?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(einsum_term(r)?)),
        None => (eq.as_str(), None),
    };
    let terms: Vec<Vec<Sub>> = lhs.split(',').map(einsum_term).collect::<Result<_>>()?;
    if terms.len() != ctx.n_inputs() {
        return err(format!(
            "Einsum equation {eq:?} has {} operands, the node {} inputs",
            terms.len(),
            ctx.n_inputs()
        ));
    }
    let mut sizes: BTreeMap<char, Dim> = BTreeMap::new();
    let mut counts: BTreeMap<char, usize> = BTreeMap::new();
    let mut ellipsis: Vec<Dim> = Vec::new();
    let mut all_known = true;
    for (i, term) in terms.iter().enumerate() {
        let labels = term.iter().filter(|s| **s != Sub::Ellipsis).count();
        for s in term {
            if let Sub::Label(c) = s {
                *counts.entry(*c).or_default() += 1;
            }
        }
        let Some(shape) = ctx.shape(i) else {
            all_known = false;
            continue;
        };
        let has_ellipsis = term.contains(&Sub::Ellipsis);
        if shape.len() < labels || (!has_ellipsis && shape.len() != labels) {
            return err(format!(
                "Einsum operand {} of shape [{}] does not fit its term in {eq:?}",
                i + 1,
                join(shape)
            ));
        }
        let ell_rank = shape.len() - labels;
        let mut dims = shape.iter();
        for s in term {
            match s {
                Sub::Ellipsis => {
                    let part: Vec<Dim> = dims.by_ref().take(ell_rank).cloned().collect();
                    ellipsis = broadcast(&ellipsis, &part)?;
                }
                Sub::Label(c) => {
                    let Some(d) = dims.next() else { break };
                    let merged = match sizes.get(c) {
                        None => d.clone(),
                        // A size of 1 broadcasts against the label's other uses.
                        Some(Dim::Known(1)) => d.clone(),
                        Some(prev) if *d == Dim::Known(1) => prev.clone(),
                        Some(prev) => same_size(prev, d, &format!("Einsum label {c}"))?,
                    };
                    sizes.insert(*c, merged);
                }
            }
        }
    }
    let out_subs = match rhs {
        Some(r) => {
            for s in &r {
                if let Sub::Label(c) = s
                    && !counts.contains_key(c)
                {
                    return err(format!(
                        "Einsum output label {c} is not among the inputs in {eq:?}"
                    ));
                }
            }
            r
        }
        None => {
            let mut r = vec![Sub::Ellipsis];
            // BTreeMap iterates in ASCII order, so `Z` comes before `a` (numpy's order).
            r.extend(
                counts
                    .iter()
                    .filter(|(_, n)| **n == 1)
                    .map(|(c, _)| Sub::Label(*c)),
            );
            r
        }
    };
    let shape = if all_known {
        let mut out = Vec::new();
        for s in out_subs {
            match s {
                Sub::Ellipsis => out.extend(ellipsis.iter().cloned()),
                Sub::Label(c) => out.extend(sizes.get(&c).cloned()),
            }
        }
        Some(out)
    } else {
        None
    };
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

// ---------------------------------------------------------------- quantization

/// Checks the scale's shape against the input (a scalar, a 1-D per-axis
/// vector, or the input's shape blocked along `axis`) and the zero point's
/// against the scale.
fn check_quant_params(ctx: &InferCtx, x: &[Dim]) -> Result<()> {
    let Some(s) = ctx.shape(1) else {
        return Ok(());
    };
    // A scalar or a single value (`[]`, `[1]`: models mix them) is per-tensor.
    let single = |s: &[Dim]| s.iter().all(|d| *d == Dim::Known(1));
    if let Some(z) = ctx.shape(2)
        && !(single(s) && single(z))
    {
        same_shape(s, z, &format!("{} scale vs zero point", ctx.op))?;
    }
    if single(s) {
        return Ok(());
    }
    let block = ctx.attr_int_or("block_size", 0);
    // An axis that does not fit (a 1-D x with the default axis 1) means per-tensor.
    let Ok(a) = axis(ctx.attr_int_or("axis", 1), x.len()) else {
        return Ok(());
    };
    let what = format!("{} scale vs x", ctx.op);
    if block > 0 {
        if s.len() != x.len() {
            return err(format!(
                "{what}: blocked scale [{}] must have x's rank [{}]",
                join(s),
                join(x)
            ));
        }
        for (i, (sd, xd)) in s.iter().zip(x).enumerate() {
            if i == a {
                let blocks = dim(&xd.to_symint().ceil_div(block)?)?;
                same_size(sd, &blocks, &format!("{what} blocks of {block}"))?;
            } else {
                same_size(sd, xd, &what)?;
            }
        }
    } else if s.len() == 1 {
        same_size(&s[0], &x[a], &format!("{what} along axis {a}"))?;
    }
    Ok(())
}

/// QuantizeLinear: x's shape; the type from `output_dtype`, else the zero
/// point's, else uint8.
fn quantize(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let zp_type = ctx.input(2).map(|f| f.dtype);
    let dtype = match ctx.attr_int_or("output_dtype", 0) {
        0 => zp_type.unwrap_or(Some(DType::Uint8)),
        code => {
            let t = dtype_code(code)?;
            if let Some(Some(z)) = zp_type
                && z != t
            {
                return err(format!(
                    "QuantizeLinear output_dtype {t} differs from the zero point's {z}"
                ));
            }
            Some(t)
        }
    };
    if let Some(s) = &x.shape
        && ctx.opset >= 13
    {
        check_quant_params(ctx, s)?;
    }
    ctx.set(0, Fact::tensor(dtype, x.shape));
    Ok(())
}

/// DequantizeLinear: x's shape; float32 before 19, then the scale's type
/// unless `output_dtype` says otherwise.
fn dequantize(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let dtype = match ctx.attr_int_or("output_dtype", 0) {
        0 if ctx.opset >= 19 => ctx.dtype(1),
        0 => Some(DType::Float32),
        code => Some(dtype_code(code)?),
    };
    if let Some(s) = &x.shape
        && ctx.opset >= 13
    {
        check_quant_params(ctx, s)?;
    }
    ctx.set(0, Fact::tensor(dtype, x.shape));
    Ok(())
}

/// DynamicQuantizeLinear: uint8 data of x's shape, scalar scale and zero point.
fn dynamic_quantize(ctx: &mut InferCtx) -> Result<()> {
    let shape = ctx.require(0)?.shape.clone();
    ctx.set(0, Fact::tensor(Some(DType::Uint8), shape));
    ctx.set(1, Fact::new(DType::Float32, Vec::new()));
    ctx.set(2, Fact::new(DType::Uint8, Vec::new()));
    Ok(())
}

// ---------------------------------------------------------------- losses

/// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: scores `[N, C, d...]`
/// and labels `[N, d...]` give a loss per label (`none`) or a scalar;
/// SoftmaxCrossEntropyLoss's optional log_prob is shaped like the scores.
fn loss(ctx: &mut InferCtx) -> Result<()> {
    let scores = ctx.require(0)?.clone();
    let labels = ctx.shape(1).cloned();
    // The labels are the scores without the class axis.
    let per_label = match (&scores.shape, &labels) {
        (Some(s), Some(l)) => {
            if s.len() < 2 {
                return err(format!("{} scores [{}] need a class axis", ctx.op, join(s)));
            }
            let mut without_c = s.clone();
            without_c.remove(1);
            Some(same_shape(
                &without_c,
                l,
                &format!("{} scores without the class axis vs labels", ctx.op),
            )?)
        }
        (Some(s), None) if s.len() >= 2 => {
            let mut without_c = s.clone();
            without_c.remove(1);
            Some(without_c)
        }
        (_, l) => l.clone(),
    };
    let shape = match ctx.attr_string_or("reduction", "mean").as_str() {
        "none" => per_label,
        "mean" | "sum" => Some(Vec::new()),
        other => return err(format!("{} has unknown reduction {other:?}", ctx.op)),
    };
    ctx.set(0, Fact::tensor(scores.dtype, shape));
    ctx.set(1, scores.reshaped(scores.shape.clone()));
    Ok(())
}

// ---------------------------------------------------------------- registry

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: &[(&'static str, InferFn)] = &[
        ("Conv", conv),
        ("ConvInteger", conv),
        ("QLinearConv", conv),
        ("DeformConv", conv),
        ("ConvTranspose", conv_transpose),
        ("MaxPool", pool),
        ("AveragePool", pool),
        ("LpPool", pool),
        ("GlobalAveragePool", global_pool),
        ("GlobalMaxPool", global_pool),
        ("GlobalLpPool", global_pool),
        ("MaxUnpool", max_unpool),
        ("BatchNormalization", batch_norm),
        ("InstanceNormalization", same_as_input),
        ("LayerNormalization", layer_norm),
        ("GroupNormalization", group_norm),
        ("RMSNormalization", rms_norm),
        ("LpNormalization", same_as_input),
        ("MeanVarianceNormalization", same_as_input),
        ("LRN", same_as_input),
        ("SwiGLU", swiglu),
        ("Gemm", gemm),
        ("MatMul", matmul),
        ("MatMulInteger", matmul),
        ("QLinearMatMul", matmul),
        ("Einsum", einsum),
        ("QuantizeLinear", quantize),
        ("DequantizeLinear", dequantize),
        ("DynamicQuantizeLinear", dynamic_quantize),
        ("SoftmaxCrossEntropyLoss", loss),
        ("NegativeLogLikelihoodLoss", loss),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::proto::AttributeProto;

    fn run_at(
        op: &str,
        opset: i64,
        attrs: &[AttributeProto],
        inputs: Vec<Option<Fact>>,
        n_out: usize,
    ) -> Result<Vec<Fact>> {
        crate::shape::ctx::run_op("", op, opset, attrs, inputs, n_out)
    }

    fn run(op: &str, attrs: &[AttributeProto], inputs: Vec<Option<Fact>>) -> Result<Vec<Fact>> {
        run_at(op, 22, attrs, inputs, 1)
    }

    fn shape0(op: &str, attrs: &[AttributeProto], inputs: Vec<Option<Fact>>) -> Vec<Dim> {
        run(op, attrs, inputs).expect("infers")[0]
            .shape
            .clone()
            .expect("has a shape")
    }

    /// Dims from "batch", "3", ... (numbers known, names symbols).
    fn d(dims: &[&str]) -> Vec<Dim> {
        dims.iter()
            .map(|s| {
                s.parse()
                    .map(Dim::Known)
                    .unwrap_or_else(|_| Dim::symbol(*s))
            })
            .collect()
    }

    fn f32(dims: &[&str]) -> Option<Fact> {
        Some(Fact::new(DType::Float32, d(dims)))
    }

    fn typed(t: DType, dims: &[&str]) -> Option<Fact> {
        Some(Fact::new(t, d(dims)))
    }

    fn ints(name: &str, v: &[i64]) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            ints: v.to_vec(),
            ..Default::default()
        }
    }

    fn int(name: &str, v: i64) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            i: Some(v),
            ..Default::default()
        }
    }

    fn string(name: &str, v: &str) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            s: Some(v.as_bytes().to_vec().into()),
            ..Default::default()
        }
    }

    fn sym(name: &str) -> SymInt {
        SymInt::sym(name)
    }

    fn eval(d: &Dim, name: &str, v: i64) -> i64 {
        d.to_symint()
            .eval_with(&|s| (s == name).then_some(v))
            .expect("evaluates")
    }

    #[test]
    fn conv_symbolic_spatial_and_batch() {
        // 3x3, stride 2, pad 1: out = floor((H + 2 - 3) / 2) + 1, so 224 -> 112.
        let out = shape0(
            "Conv",
            &[ints("strides", &[2, 2]), ints("pads", &[1, 1, 1, 1])],
            vec![f32(&["batch", "3", "H", "W"]), f32(&["16", "3", "3", "3"])],
        );
        let h = sym("H").sub(&SymInt::Int(1)).unwrap().floor_div(2).unwrap();
        let h = h.add(&SymInt::Int(1)).unwrap();
        assert_eq!(out[..2], d(&["batch", "16"]));
        assert_eq!(out[2], Dim::Sym(h));
        assert_eq!(eval(&out[2], "H", 224), 112);
        assert_eq!(eval(&out[3], "W", 7), 4);
    }

    #[test]
    fn conv_same_padding_is_ceil_of_input_over_stride() {
        let out = shape0(
            "Conv",
            &[string("auto_pad", "SAME_UPPER"), ints("strides", &[2])],
            vec![f32(&["1", "4", "L"]), f32(&["8", "4", "5"])],
        );
        // Whatever the kernel: ceil(L / 2).
        assert_eq!(out[2], Dim::Sym(sym("L").ceil_div(2).unwrap()));
        assert_eq!(eval(&out[2], "L", 9), 5);
    }

    #[test]
    fn conv_channel_mismatch_is_an_error() {
        let r = run(
            "Conv",
            &[],
            vec![f32(&["1", "4", "9"]), f32(&["8", "3", "3"])],
        );
        assert!(r.is_err(), "4 channels cannot feed weights for 3");
        // Grouped: 4 channels = 2 per group x 2 groups.
        let out = shape0(
            "Conv",
            &[int("group", 2)],
            vec![f32(&["1", "4", "9"]), f32(&["8", "2", "3"])],
        );
        assert_eq!(out, d(&["1", "8", "7"]));
    }

    #[test]
    fn conv_integer_and_qlinear_types() {
        let out = run(
            "ConvInteger",
            &[],
            vec![
                typed(DType::Uint8, &["1", "1", "5", "5"]),
                typed(DType::Uint8, &["2", "1", "3", "3"]),
            ],
        )
        .unwrap();
        assert_eq!(out[0], Fact::new(DType::Int32, d(&["1", "2", "3", "3"])));
        // QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp; typed by y_zp.
        let scalar = |t| typed(t, &[]);
        let out = run(
            "QLinearConv",
            &[],
            vec![
                typed(DType::Int8, &["1", "1", "5", "5"]),
                scalar(DType::Float32),
                scalar(DType::Int8),
                typed(DType::Int8, &["2", "1", "3", "3"]),
                scalar(DType::Float32),
                scalar(DType::Int8),
                scalar(DType::Float32),
                scalar(DType::Int8),
            ],
        )
        .unwrap();
        assert_eq!(out[0], Fact::new(DType::Int8, d(&["1", "2", "3", "3"])));
    }

    #[test]
    fn conv_with_symbolic_kernel_gets_a_fresh_size() {
        // The kernel size is not known, so neither is the output's: a new symbol.
        let out = shape0(
            "Conv",
            &[],
            vec![f32(&["1", "3", "9"]), f32(&["8", "3", "k"])],
        );
        assert_eq!(out[..2], d(&["1", "8"]));
        assert!(matches!(out[2], Dim::Sym(_)));
    }

    /// The known-size path and the symbolic path must agree for every size.
    fn pool_agrees(attrs: &[AttributeProto]) {
        let sym_out = shape0("MaxPool", attrs, vec![f32(&["1", "1", "H"])]);
        // From 5: the largest (dilated) kernel below spans 5.
        for h in 5..40 {
            let known = shape0("MaxPool", attrs, vec![f32(&["1", "1", &h.to_string()])]);
            assert_eq!(
                Dim::Known(eval(&sym_out[2], "H", h) as u64),
                known[2],
                "H = {h}, attrs {attrs:?}"
            );
        }
    }

    #[test]
    fn pool_symbolic_matches_known_sizes() {
        pool_agrees(&[ints("kernel_shape", &[3]), ints("strides", &[2])]);
        pool_agrees(&[
            ints("kernel_shape", &[3]),
            ints("strides", &[2]),
            int("ceil_mode", 1),
        ]);
        // Stride past the end pad: the last window may start in the padding.
        pool_agrees(&[
            ints("kernel_shape", &[2]),
            ints("strides", &[3]),
            ints("pads", &[1, 1]),
            int("ceil_mode", 1),
        ]);
        pool_agrees(&[
            ints("kernel_shape", &[3]),
            ints("strides", &[2]),
            ints("dilations", &[2]),
        ]);
        pool_agrees(&[
            ints("kernel_shape", &[3]),
            ints("strides", &[3]),
            string("auto_pad", "SAME_LOWER"),
        ]);
    }

    #[test]
    fn pool_ceil_mode_drops_a_window_starting_in_the_padding() {
        // ONNX's test_maxpool_2d_ceil_output_size_reduce_by_one: a 2x2 input,
        // kernel 1, stride 2: ceil(1 / 2) + 1 = 2 windows, but the second would
        // start past the input, so 1.
        let out = shape0(
            "MaxPool",
            &[
                ints("kernel_shape", &[1, 1]),
                ints("strides", &[2, 2]),
                int("ceil_mode", 1),
            ],
            vec![f32(&["1", "1", "2", "2"])],
        );
        assert_eq!(out, d(&["1", "1", "1", "1"]));
    }

    #[test]
    fn maxpool_indices_are_int64() {
        let out = run_at(
            "MaxPool",
            12,
            &[ints("kernel_shape", &[2, 2])],
            vec![f32(&["N", "C", "4", "4"])],
            2,
        )
        .unwrap();
        assert_eq!(out[1], Fact::new(DType::Int64, d(&["N", "C", "3", "3"])));
    }

    #[test]
    fn window_errors_do_not_panic() {
        let x = || vec![f32(&["1", "1", "4"])];
        // No kernel_shape.
        assert!(run("AveragePool", &[], x()).is_err());
        // Kernel larger than the input.
        assert!(run("AveragePool", &[ints("kernel_shape", &[5])], x()).is_err());
        // Wrong number of pads, negative pads, zero stride.
        for bad in [
            ints("pads", &[1]),
            ints("pads", &[-1, 0]),
            ints("strides", &[0]),
        ] {
            assert!(run("MaxPool", &[ints("kernel_shape", &[2]), bad], x()).is_err());
        }
        // Dilation that overflows 64 bits.
        let huge = [ints("kernel_shape", &[i64::MAX]), ints("dilations", &[4])];
        assert!(run("MaxPool", &huge, x()).is_err());
        // Rank too small for N, C, spatial.
        assert!(run("MaxPool", &[ints("kernel_shape", &[2])], vec![f32(&["4"])]).is_err());
    }

    #[test]
    fn global_pool_keeps_batch_and_channels() {
        let out = shape0("GlobalAveragePool", &[], vec![f32(&["N", "64", "H", "W"])]);
        assert_eq!(out, d(&["N", "64", "1", "1"]));
    }

    #[test]
    fn conv_transpose_symbolic_and_output_shape() {
        // stride 2, kernel 3, pads 1+1, output_padding 1: out = 2 * (H - 1) + 1 + 3 - 2 = 2H.
        let out = shape0(
            "ConvTranspose",
            &[
                ints("strides", &[2]),
                ints("pads", &[1, 1]),
                ints("output_padding", &[1]),
                int("group", 2),
            ],
            vec![f32(&["N", "4", "H"]), f32(&["4", "3", "3"])],
        );
        let two_h = sym("H").mul(&SymInt::Int(2)).unwrap();
        assert_eq!(out, vec![Dim::symbol("N"), Dim::Known(6), Dim::Sym(two_h)]);
        // SAME: in * stride.
        let out = shape0(
            "ConvTranspose",
            &[string("auto_pad", "SAME_UPPER"), ints("strides", &[2])],
            vec![f32(&["N", "4", "5"]), f32(&["4", "3", "3"])],
        );
        assert_eq!(out, d(&["N", "3", "10"]));
        // output_shape, given as the whole shape by some exporters.
        let out = shape0(
            "ConvTranspose",
            &[ints("output_shape", &[1, 3, 11])],
            vec![f32(&["N", "4", "5"]), f32(&["4", "3", "3"])],
        );
        assert_eq!(out, d(&["N", "3", "11"]));
    }

    #[test]
    fn max_unpool_output_shape_folds_from_values() {
        let shape = Fact::ints_1d(vec![
            sym("N"),
            SymInt::Int(1),
            SymInt::Int(5),
            SymInt::Int(5),
        ]);
        let out = shape0(
            "MaxUnpool",
            &[ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])],
            vec![
                f32(&["N", "1", "2", "2"]),
                typed(DType::Int64, &["N", "1", "2", "2"]),
                Some(shape),
            ],
        );
        assert_eq!(out, d(&["N", "1", "5", "5"]));
        // Without output_shape: (2 - 1) * 2 + 2 = 4.
        let out = shape0(
            "MaxUnpool",
            &[ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])],
            vec![
                f32(&["N", "1", "2", "2"]),
                typed(DType::Int64, &["N", "1", "2", "2"]),
            ],
        );
        assert_eq!(out, d(&["N", "1", "4", "4"]));
    }

    #[test]
    fn layer_norm_statistics_shape_and_stash_type() {
        let out = run_at(
            "LayerNormalization",
            17,
            &[int("axis", -2), int("stash_type", 1)],
            vec![
                typed(DType::Float16, &["batch", "seq", "768"]),
                typed(DType::Float16, &["768"]),
            ],
            3,
        )
        .unwrap();
        assert_eq!(
            out[0],
            Fact::new(DType::Float16, d(&["batch", "seq", "768"]))
        );
        assert_eq!(out[1], Fact::new(DType::Float32, d(&["batch", "1", "1"])));
        assert_eq!(out[2], out[1]);
        assert!(
            run(
                "LayerNormalization",
                &[int("axis", 3)],
                vec![f32(&["2", "3"])]
            )
            .is_err()
        );
    }

    #[test]
    fn batch_norm_training_outputs_per_channel() {
        let c = || f32(&["3"]);
        let out = run_at(
            "BatchNormalization",
            15,
            &[int("training_mode", 1)],
            vec![f32(&["N", "3", "H", "W"]), c(), c(), c(), c()],
            3,
        )
        .unwrap();
        assert_eq!(out[0].shape, Some(d(&["N", "3", "H", "W"])));
        assert_eq!(out[2], Fact::new(DType::Float32, d(&["3"])));
    }

    #[test]
    fn group_norm_groups_must_divide_channels() {
        let x = || vec![f32(&["1", "6", "4"]), f32(&["6"]), f32(&["6"])];
        assert!(run("GroupNormalization", &[int("num_groups", 4)], x()).is_err());
        assert_eq!(
            shape0("GroupNormalization", &[int("num_groups", 3)], x()),
            d(&["1", "6", "4"])
        );
    }

    #[test]
    fn rms_norm_takes_the_scale_type() {
        let out = run_at(
            "RMSNormalization",
            23,
            &[],
            vec![f32(&["B", "8"]), typed(DType::Float16, &["8"])],
            1,
        )
        .unwrap();
        assert_eq!(out[0], Fact::new(DType::Float16, d(&["B", "8"])));
    }

    #[test]
    fn swiglu_shapes_must_match() {
        assert_eq!(
            shape0("SwiGLU", &[], vec![f32(&["B", "4"]), f32(&["3", "4"])]),
            d(&["3", "4"])
        );
        assert!(run("SwiGLU", &[], vec![f32(&["2", "4"]), f32(&["4"])]).is_err());
    }

    #[test]
    fn matmul_broadcasts_batches_and_handles_vectors() {
        let mm = |a: &[&str], b: &[&str]| run("MatMul", &[], vec![f32(a), f32(b)]);
        let out = mm(&["batch", "1", "M", "64"], &["8", "64", "N"]).unwrap();
        assert_eq!(out[0].shape, Some(d(&["batch", "8", "M", "N"])));
        assert_eq!(mm(&["K"], &["K"]).unwrap()[0].shape, Some(vec![]));
        assert_eq!(
            mm(&["5"], &["B", "5", "7"]).unwrap()[0].shape,
            Some(d(&["B", "7"]))
        );
        assert_eq!(
            mm(&["B", "3", "5"], &["5"]).unwrap()[0].shape,
            Some(d(&["B", "3"]))
        );
        assert!(mm(&["2", "3"], &["4", "5"]).is_err(), "inner 3 vs 4");
        assert!(mm(&[], &["4"]).is_err(), "scalars are not matrices");
        let out = run(
            "MatMulInteger",
            &[],
            vec![
                typed(DType::Uint8, &["2", "3"]),
                typed(DType::Int8, &["3", "4"]),
            ],
        )
        .unwrap();
        assert_eq!(out[0], Fact::new(DType::Int32, d(&["2", "4"])));
    }

    #[test]
    fn gemm_transposes_and_checks_c() {
        let attrs = [int("transA", 1), int("transB", 1)];
        let out = shape0(
            "Gemm",
            &attrs,
            vec![f32(&["K", "M"]), f32(&["N", "K"]), f32(&["N"])],
        );
        assert_eq!(out, d(&["M", "N"]));
        assert!(
            run(
                "Gemm",
                &[],
                vec![f32(&["2", "3"]), f32(&["3", "4"]), f32(&["3"])]
            )
            .is_err()
        );
        assert!(run("Gemm", &[], vec![f32(&["2", "3", "1"]), f32(&["3", "4"])]).is_err());
    }

    #[test]
    fn einsum_equations() {
        let es = |eq: &str, inputs: Vec<Option<Fact>>| {
            run("Einsum", &[string("equation", eq)], inputs).map(|o| o[0].shape.clone())
        };
        let ok = |v: &[&str]| Ok(Some(d(v)));
        assert_eq!(
            es("ij,jk", vec![f32(&["2", "3"]), f32(&["3", "4"])]),
            ok(&["2", "4"])
        );
        assert_eq!(es("ii", vec![f32(&["3", "3"])]), ok(&[]));
        // Implicit output in ASCII order: `B` before `a`.
        assert_eq!(es("aB", vec![f32(&["2", "3"])]), ok(&["3", "2"]));
        assert_eq!(
            es(
                "...ij, ...jk -> ...ik",
                vec![f32(&["b", "1", "2", "3"]), f32(&["5", "3", "4"])]
            ),
            ok(&["b", "5", "2", "4"])
        );
        assert_eq!(es("bij->jb", vec![f32(&["B", "2", "3"])]), ok(&["3", "B"]));
        assert_eq!(es("i...->...", vec![f32(&["4"])]), ok(&[]));
        assert!(es("ij,jk", vec![f32(&["2", "3"]), f32(&["4", "5"])]).is_err());
        assert!(es("ijk", vec![f32(&["2", "3"])]).is_err());
        assert!(es("ij->iz", vec![f32(&["2", "3"])]).is_err());
        assert!(es("i.j", vec![f32(&["2", "3"])]).is_err());
        assert!(es("ij", vec![f32(&["2", "3"]), f32(&["3"])]).is_err());
    }

    #[test]
    fn quantize_output_types() {
        let q = |attrs: &[AttributeProto], zp: Option<Fact>| {
            let mut inputs = vec![f32(&["N", "4"]), f32(&[])];
            inputs.extend(zp.map(Some));
            run("QuantizeLinear", attrs, inputs).map(|o| o[0].dtype)
        };
        assert_eq!(q(&[], None), Ok(Some(DType::Uint8)));
        assert_eq!(
            q(&[], Some(Fact::new(DType::Int8, vec![]))),
            Ok(Some(DType::Int8))
        );
        assert_eq!(q(&[int("output_dtype", 22)], None), Ok(Some(DType::Int4)));
        assert!(
            q(
                &[int("output_dtype", 22)],
                Some(Fact::new(DType::Int8, vec![]))
            )
            .is_err()
        );
        // Blocked: 4 columns in blocks of 2 need 2 scales per row, not 3.
        let blocked = [int("axis", 1), int("block_size", 2)];
        let r = run(
            "QuantizeLinear",
            &blocked,
            vec![f32(&["3", "4"]), f32(&["3", "3"])],
        );
        assert!(r.is_err());
        let r = run(
            "QuantizeLinear",
            &blocked,
            vec![f32(&["3", "4"]), f32(&["3", "2"])],
        );
        assert_eq!(r.unwrap()[0].shape, Some(d(&["3", "4"])));
    }

    #[test]
    fn dequantize_output_type_by_opset() {
        let x = || vec![typed(DType::Int8, &["5"]), typed(DType::Float16, &[])];
        let t = |opset| run_at("DequantizeLinear", opset, &[], x(), 1).unwrap()[0].dtype;
        assert_eq!(t(13), Some(DType::Float32));
        assert_eq!(t(21), Some(DType::Float16));
        let out = run_at("DequantizeLinear", 23, &[int("output_dtype", 1)], x(), 1).unwrap();
        assert_eq!(out[0].dtype, Some(DType::Float32));
    }

    #[test]
    fn dynamic_quantize_outputs() {
        let out = run_at("DynamicQuantizeLinear", 11, &[], vec![f32(&["N", "3"])], 3).unwrap();
        assert_eq!(out[0], Fact::new(DType::Uint8, d(&["N", "3"])));
        assert_eq!(out[1], Fact::new(DType::Float32, vec![]));
        assert_eq!(out[2], Fact::new(DType::Uint8, vec![]));
    }

    #[test]
    fn losses_by_reduction() {
        let inputs = || vec![f32(&["N", "5", "d"]), typed(DType::Int64, &["N", "d"])];
        let none = run_at(
            "SoftmaxCrossEntropyLoss",
            13,
            &[string("reduction", "none")],
            inputs(),
            2,
        )
        .unwrap();
        assert_eq!(none[0].shape, Some(d(&["N", "d"])));
        assert_eq!(none[1].shape, Some(d(&["N", "5", "d"])));
        let mean = run("NegativeLogLikelihoodLoss", &[], inputs()).unwrap();
        assert_eq!(mean[0].shape, Some(vec![]));
        let bad = vec![f32(&["2", "5", "3"]), typed(DType::Int64, &["2", "4"])];
        assert!(run("NegativeLogLikelihoodLoss", &[], bad).is_err());
        let r = run(
            "NegativeLogLikelihoodLoss",
            &[string("reduction", "avg")],
            inputs(),
        );
        assert!(r.is_err());
    }

    #[test]
    fn unknown_rank_keeps_the_type() {
        let x = || Some(Fact::tensor(Some(DType::Float16), None));
        let out = run("Conv", &[], vec![x(), f32(&["8", "3", "3", "3"])]).unwrap();
        assert_eq!(out[0], Fact::tensor(Some(DType::Float16), None));
        let out = run("MatMul", &[], vec![x(), f32(&["3", "3"])]).unwrap();
        assert_eq!(out[0].shape, None);
    }
}
