//! Convolutions: Conv, ConvTranspose, DeformConv, and Col2Im; onnxruntime's
//! FusedConv (com.microsoft), a Conv with its activation and an added input.
//!
//! Convolutions and pooling share one sliding-window rule ([`Window`]), which
//! works on symbolic spatial sizes too (`floor((H+2-3)/2)+1`).

// ---------------------------------------------------------------- helpers

use super::ctx::{InferCtx, Result, ShapeError, dim, err, join};
use super::dims::{believable_rank, fresh_dims};
use super::dims::{overflow, same_size};
use super::fact::Fact;
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// Input `i`'s dims `[N, C, spatial...]`, requiring at least one spatial axis.
pub(super) fn nc_spatial(ctx: &InferCtx, i: usize) -> Result<Option<Vec<Dim>>> {
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
pub(super) struct Window {
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
    pub(super) fn read(ctx: &InferCtx, n: usize, kernel: Vec<Option<i64>>) -> Result<Window> {
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
                all.min_with(&starts)?
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
    pub(super) fn transposed_dim(
        &self,
        i: usize,
        size: &Dim,
        output_padding: i64,
    ) -> Result<Option<Dim>> {
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
pub(super) fn window_dims(ctx: &InferCtx, w: &Window, spatial: &[Dim]) -> Result<Vec<Dim>> {
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
pub(super) fn conv(ctx: &mut InferCtx) -> Result<()> {
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

/// The activations onnxruntime fuses into a convolution or a Gemm (its
/// `activation` attribute); absent, none.
const FUSED_ACTIVATIONS: [&str; 7] = [
    "Relu",
    "LeakyRelu",
    "Sigmoid",
    "Tanh",
    "HardSigmoid",
    "Clip",
    "HardSwish",
];

/// Refuses an `activation` the fused kernels do not have: its cost rule
/// could not count it.
pub(super) fn fused_activation(ctx: &InferCtx) -> Result<()> {
    match ctx.attr_string("activation") {
        Some(a) if !a.is_empty() && !FUSED_ACTIVATIONS.contains(&a.as_str()) => err(format!(
            "{} activation {a:?} is none onnxruntime fuses ({})",
            ctx.op,
            FUSED_ACTIVATIONS.join(", ")
        )),
        _ => Ok(()),
    }
}

/// FusedConv and NCHWc's Conv: a Conv whose optional input 3 (`Z`, `Sum`)
/// is added to the output, so has its shape.
pub(super) fn fused_conv(ctx: &mut InferCtx) -> Result<()> {
    fused_activation(ctx)?;
    conv(ctx)?;
    if let (Some(z), Some(y)) = (
        ctx.shape(3),
        ctx.outputs.first().and_then(|o| o.shape.as_ref()),
    ) {
        let what = format!("{} added input vs output", ctx.op);
        super::dims::same_shape(z, y, &what)?;
    }
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

// ---------------------------------------------------------------- normalizations

// ---------------------------------------------------------------- matrix products

// ---------------------------------------------------------------- Einsum

// ---------------------------------------------------------------- quantization

// ---------------------------------------------------------------- losses

// ---------------------------------------------------------------- registry

/// Col2Im: `[N, C * prod(block), L]` becomes `[N, C, *image_shape]`.
fn col2im(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.require(0)?.dtype;
    let Some(s) = ctx.shape(0).cloned() else {
        ctx.set(0, Fact::tensor(dtype, None));
        return Ok(());
    };
    let [n, cb, _] = s.as_slice() else {
        return err(format!("Col2Im input [{}] must have rank 3", join(&s)));
    };
    let image: Vec<Dim> = match ctx.ints(1) {
        Some(v) => v.iter().map(dim).collect::<Result<_>>()?,
        None => match ctx
            .shape(1)
            .and_then(|s| s.first())
            .and_then(Dim::known)
            .and_then(believable_rank)
            .map(|k| fresh_dims(ctx, k, "col2im"))
        {
            Some(dims) => dims,
            None => {
                ctx.set(0, Fact::tensor(dtype, None));
                return Ok(());
            }
        },
    };
    let c = match ctx.ints(2) {
        Some(block) => {
            let mut prod = SymInt::Int(1);
            for b in &block {
                prod = prod.mul(b)?;
            }
            match cb.to_symint().exact_div(&prod) {
                Some(c) => dim(&c)?,
                None if cb.known().is_some() && prod.is_known() => {
                    return err(format!(
                        "input channels {cb} are not a multiple of the block size {prod}"
                    ));
                }
                None => ctx.fresh_dim("col2im"),
            }
        }
        None => ctx.fresh_dim("col2im"),
    };
    let mut out = vec![n.clone(), c];
    out.extend(image);
    ctx.set(0, Fact::tensor(dtype, Some(out)));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 4] = [
        ("Conv", conv),
        ("ConvTranspose", conv_transpose),
        ("DeformConv", conv),
        ("Col2Im", col2im),
    ];
    let mut ops: Vec<OpEntry> = table.iter().map(|(op, f)| ("", *op, *f)).collect();
    ops.push(("com.microsoft", "FusedConv", fused_conv));
    ops
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::indexing::tests as ix;

    use super::*;
    use crate::proto::AttributeProto;

    pub(in crate::shape) use crate::shape::ctx::run_onnx_op as run_at;

    pub(in crate::shape) fn run(
        op: &str,
        attrs: &[AttributeProto],
        inputs: Vec<Option<Fact>>,
    ) -> Result<Vec<Fact>> {
        run_at(op, 22, attrs, inputs, 1)
    }

    pub(in crate::shape) fn shape0(
        op: &str,
        attrs: &[AttributeProto],
        inputs: Vec<Option<Fact>>,
    ) -> Vec<Dim> {
        run(op, attrs, inputs).expect("infers")[0]
            .shape
            .clone()
            .expect("has a shape")
    }

    /// Dims from "batch", "3", ... (numbers known, names symbols).
    pub(in crate::shape) fn d(dims: &[&str]) -> Vec<Dim> {
        dims.iter()
            .map(|s| {
                s.parse()
                    .map(Dim::Known)
                    .unwrap_or_else(|_| Dim::symbol(*s))
            })
            .collect()
    }

    pub(in crate::shape) fn f32(dims: &[&str]) -> Option<Fact> {
        Some(Fact::new(DType::Float32, d(dims)))
    }

    pub(in crate::shape) fn typed(t: DType, dims: &[&str]) -> Option<Fact> {
        Some(Fact::new(t, d(dims)))
    }

    pub(in crate::shape) fn ints(name: &str, v: &[i64]) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            ints: v.to_vec(),
            ..Default::default()
        }
    }

    pub(in crate::shape) fn int(name: &str, v: i64) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            i: Some(v),
            ..Default::default()
        }
    }

    pub(in crate::shape) fn string(name: &str, v: &str) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            s: Some(v.as_bytes().to_vec().into()),
            ..Default::default()
        }
    }

    pub(in crate::shape) fn sym(name: &str) -> SymInt {
        SymInt::sym(name)
    }

    pub(in crate::shape) fn eval(d: &Dim, name: &str, v: i64) -> i64 {
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
    pub(in crate::shape) fn pool_agrees(attrs: &[AttributeProto]) {
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
    fn unknown_rank_keeps_the_type() {
        let x = || Some(Fact::tensor(Some(DType::Float16), None));
        let out = run("Conv", &[], vec![x(), f32(&["8", "3", "3", "3"])]).unwrap();
        assert_eq!(out[0], Fact::tensor(Some(DType::Float16), None));
        let out = run("MatMul", &[], vec![x(), f32(&["3", "3"])]).unwrap();
        assert_eq!(out[0].shape, None);
    }

    #[test]
    fn col2im_channels_must_divide_by_the_block() {
        let x = ix::f32s(vec![ix::k(1), ix::k(7), ix::k(25)]);
        let image = ix::i64s(vec![ix::k(2)], &[5, 5]);
        let block = ix::i64s(vec![ix::k(2)], &[2, 2]);
        assert!(ix::run("Col2Im", 18, &[], vec![x, image, block], 1).is_err());
    }
}
