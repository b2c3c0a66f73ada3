//! The test suite of chainer_computational_cost 0.1.2
//! (`tests/test_cost_calculators/*.py`), ported case by case.
//!
//! Every test is named `<file>_<original test name>` and keeps the original's
//! shapes and expected numbers. The original counted memory in elements, c3
//! counts bytes, so each memory figure is written as the original's element
//! count times `F32` (4 bytes per float32 element).
//!
//! Chainer functions map to the ONNX ops a Chainer trace records (see
//! `tests/fixtures/chainer/*.trace.json`): Convolution2DFunction -> Conv,
//! Deconvolution2DFunction -> ConvTranspose, LinearFunction -> Gemm (transB=1),
//! GetItem -> Slice, BroadcastTo -> Expand, ResizeImages -> Resize,
//! Max/Min/Sum with an axis -> ReduceMax/ReduceMin/ReduceSum, NormalizeL2 ->
//! LpNormalization, Unpooling2D -> Upsample, Upsampling2D -> MaxUnpool, and so
//! on. FMA is off unless the original test passed `fma_1flop=True`
//! (`calculate_cost` passes nothing by default).
//!
//! Where the built-in rules deliberately differ from the original (each rule's
//! doc says so), the original's number is asserted with the `chainer` pack
//! and the built-in number with its own formula. Everywhere else the built-in
//! rules are asserted, and `counted` also checks that the pack agrees.
//!
//! Not ported:
//! - `test_cost_calculator.py`: it tests the Python registration API
//!   (`register`, `calculators`), which has no counterpart in c3's rule files.
//! - `test_connection.py::test_shift`: Chainer's Shift has no ONNX op.

use crate::common::*;

use c3::ir::DType;
use c3::rules::Evaluation;
use c3::rules::rule::show_value;

/// Bytes per int64 element (ONNX's index and shape type).
const I64: u64 = 8;
/// Bytes per int32 element (Chainer's index type).
const I32: u64 = 4;

/// Evaluates with the built-in rules and checks that the `chainer` pack gives
/// the same figures (it overrides only where the two differ).
fn counted(l: &Layer, fma: bool) -> Evaluation {
    let ev = l.eval(fma);
    let ch = l.eval_with(chainer(), fma);
    assert_eq!(
        (ch.flops, ch.mread, ch.mwrite),
        (ev.flops, ev.mread, ev.mwrite),
        "the chainer pack counts {} differently",
        l.node.op
    );
    // Every param the pack reports is the built-in one (the pack's Gemm
    // leaves out transA and transB).
    for (name, v) in ch.params.iter() {
        assert_eq!(
            show_value(v),
            param(&ev, name),
            "param {name} of {}",
            l.node.op
        );
    }
    ev
}

/// A 2-D (de)convolution layer: square kernel `k`, stride `s`, symmetric
/// padding `p`, dilation `d`, `g` groups; `b` is the bias shape or absent.
fn conv2d(
    op: &str,
    x: &[u64],
    w: &[u64],
    b: Option<&[u64]>,
    y: &[u64],
    (k, s, p, d, g): (i64, i64, i64, i64, i64),
) -> Layer {
    let l = layer(op).input(x).input(w);
    let l = match b {
        Some(b) => l.input(b),
        None => l.absent(),
    };
    l.output(y)
        .ints("kernel_shape", &[k, k])
        .ints("strides", &[s, s])
        .ints("pads", &[p, p, p, p])
        .ints("dilations", &[d, d])
        .int("group", g)
}

// ---------------------------------------------------------------------------
// test_activation.py
// ---------------------------------------------------------------------------

#[test]
fn activation_activation_prelu() {
    // x: (1, 3, 100, 100), W: (3,)
    let x = 3 * 100 * 100;
    let w = 3;
    let ev = counted(
        &layer("PRelu")
            .input(&[1, 3, 100, 100])
            .input(&[3])
            .output(&[1, 3, 100, 100]),
        false,
    );
    assert_eq!(ev.flops, x); // |x|: one select per element
    assert_eq!(ev.mread, (x + w) * F32); // |x| + |W|
    assert_eq!(ev.mwrite, x * F32); // |x|
    assert_eq!(param(&ev, "w_shape"), "[3]"); // W.shape
}

#[test]
fn activation_activation_relu() {
    let x = 3 * 100 * 100;
    let ev = counted(
        &layer("Relu")
            .input(&[1, 3, 100, 100])
            .output(&[1, 3, 100, 100]),
        false,
    );
    assert_eq!(ev.flops, x); // |x|: one max per element
    assert_eq!(ev.mread, x * F32);
    assert_eq!(ev.mwrite, x * F32);
    assert!(ev.params.is_empty()); // params == {}
}

#[test]
fn activation_activation_leaky_relu() {
    let x = 3 * 100 * 100;
    let ev = counted(
        &layer("LeakyRelu")
            .input(&[1, 3, 100, 100])
            .output(&[1, 3, 100, 100]),
        false,
    );
    assert_eq!(ev.flops, 2 * x); // 2|x|: y = max(x, a*x)
    assert_eq!(ev.mread, x * F32);
    assert_eq!(ev.mwrite, x * F32);
}

#[test]
fn activation_activation_sigmoid() {
    let x = 3 * 100 * 100;
    let ev = counted(
        &layer("Sigmoid")
            .input(&[1, 3, 100, 100])
            .output(&[1, 3, 100, 100]),
        false,
    );
    assert_eq!(ev.flops, 4 * x); // 4|x|: negate, exp, +1, reciprocal
    assert_eq!(ev.mread, x * F32);
    assert_eq!(ev.mwrite, x * F32);
    assert!(ev.params.is_empty()); // params == {}
}

#[test]
fn activation_softmax() {
    // x: (1, 100), Chainer's default axis 1.
    let x = 100;
    let ev = counted(
        &layer("Softmax")
            .input(&[1, 100])
            .output(&[1, 100])
            .int("axis", 1),
        false,
    );
    // exp term, sum term, div term: |x| + (|x| - 1) + |x|
    assert_eq!(ev.flops, x + (x - 1) + x);
    assert_eq!(ev.mread, x * F32);
    assert_eq!(ev.mwrite, x * F32);
    assert_eq!(param(&ev, "axis"), "1");
}

#[test]
fn activation_softmax_axis() {
    // x: (1, 32, 128), axis 2.
    let x = 32 * 128;
    let ev = counted(
        &layer("Softmax")
            .input(&[1, 32, 128])
            .output(&[1, 32, 128])
            .int("axis", 2),
        false,
    );
    // exp term, sum term (32 rows of 128 - 1 additions), div term
    assert_eq!(ev.flops, x + 32 * (128 - 1) + x);
    assert_eq!(ev.mread, x * F32);
    assert_eq!(ev.mwrite, x * F32);
    assert_eq!(param(&ev, "axis"), "2");
}

// ---------------------------------------------------------------------------
// test_array.py
// ---------------------------------------------------------------------------

#[test]
fn array_broadcast_to() {
    // BroadcastTo((1, 3, 10, 10)) of x: (1, 3, 1, 1); the target shape is the
    // int64 shape tensor of Expand, metadata that is not counted as a read.
    let ev = counted(
        &layer("Expand")
            .input(&[1, 3, 1, 1])
            .input_typed(&[4], DType::Int64)
            .output(&[1, 3, 10, 10]),
        false,
    );
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, 3 * F32); // |x|
    assert_eq!(ev.mwrite, (3 * 10 * 10) * F32); // |y|
    assert_eq!(param(&ev, "shape"), "[1, 3, 10, 10]");
}

#[test]
fn array_concat() {
    // Concat() of [x, x], x: (1, 3, 10, 10); default axis 1 -> (1, 6, 10, 10).
    let x = [1, 3, 10, 10];
    let ev = counted(
        &layer("Concat")
            .input(&x)
            .input(&x)
            .output(&[1, 6, 10, 10])
            .int("axis", 1),
        false,
    );
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, 2 * (3 * 10 * 10) * F32); // sum of |x_i|
    assert_eq!(ev.mwrite, 2 * (3 * 10 * 10) * F32);
    assert_eq!(param(&ev, "axis"), "1");
}

#[test]
fn array_concat_more() {
    // Concat(axis=2) of four x: (1, 3, 10, 10) -> (1, 3, 40, 10).
    let x = [1, 3, 10, 10];
    let ev = counted(
        &layer("Concat")
            .input(&x)
            .input(&x)
            .input(&x)
            .input(&x)
            .output(&[1, 3, 40, 10])
            .int("axis", 2),
        false,
    );
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, 4 * (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, 4 * (3 * 10 * 10) * F32);
    assert_eq!(param(&ev, "axis"), "2");
}

#[test]
fn array_reshape() {
    // Reshape((1, -1)) of x: (1, 3, 100, 100) -> (1, 30000).
    let ev = counted(
        &layer("Reshape")
            .input(&[1, 3, 100, 100])
            .input_typed(&[2], DType::Int64)
            .output(&[1, 30000]),
        false,
    );
    // A view: nothing is read or written.
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, 0);
    assert_eq!(ev.mwrite, 0);
    assert_eq!(param(&ev, "in_shape"), "[1, 3, 100, 100]");
    // The original reported the requested (1, -1); c3 the resolved shape.
    assert_eq!(param(&ev, "out_shape"), "[1, 30000]");
}

/// ResizeImages -> Resize (bilinear), output size given by the int64 `sizes`.
fn resize(y: &[u64]) -> Layer {
    layer("Resize")
        .input(&[1, 3, 10, 10])
        .absent() // roi
        .absent() // scales
        .input_typed(&[4], DType::Int64) // sizes
        .output(y)
        .string("mode", "linear")
}

#[test]
fn array_resize_expand() {
    // ResizeImages((15, 15)) of x: (1, 3, 10, 10).
    let ev = counted(&resize(&[1, 3, 15, 15]), false);
    assert_eq!(ev.flops, 3 * 15 * 15 * 9); // 9 FLOPs per output pixel
    // min(4|y|, |x|) = min(2700, 300): the input is read once.
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, (3 * 15 * 15) * F32);
    // The original reported size (15, 15); c3 the whole output shape.
    assert_eq!(param(&ev, "size"), "[1, 3, 15, 15]");
}

#[test]
fn array_resize_shrink() {
    // ResizeImages((4, 4)) of x: (1, 3, 10, 10).
    let ev = counted(&resize(&[1, 3, 4, 4]), false);
    assert_eq!(ev.flops, 3 * 4 * 4 * 9);
    // min(4|y|, |x|) = min(192, 300): 4 (neighbours) * 3 (channels) * out_h * out_w
    assert_eq!(ev.mread, (4 * 3 * 4 * 4) * F32);
    assert_eq!(ev.mwrite, (3 * 4 * 4) * F32);
    assert_eq!(param(&ev, "size"), "[1, 3, 4, 4]");
}

#[test]
fn array_transpose() {
    // Transpose((0, 3, 1, 2)) of x: (1, 3, 10, 10) -> (1, 10, 3, 10).
    let ev = counted(
        &layer("Transpose")
            .input(&[1, 3, 10, 10])
            .output(&[1, 10, 3, 10])
            .ints("perm", &[0, 3, 1, 2]),
        false,
    );
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, (3 * 10 * 10) * F32);
    assert_eq!(param(&ev, "axes"), "[0, 3, 1, 2]");
}

#[test]
fn array_get_item_one() {
    // x[0, 0, 0, 0] of x: (1, 3, 10, 10) -> a scalar, shape ().
    let ev = counted(&layer("Slice").input(&[1, 3, 10, 10]).output(&[]), false);
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, F32); // |y| = 1: only the selected element
    assert_eq!(ev.mwrite, F32);
    assert_eq!(param(&ev, "out_shape"), "[]");
}

#[test]
fn array_get_item_slice() {
    // x[0, 0, :, :] of x: (1, 3, 10, 10) -> (10, 10).
    let ev = counted(
        &layer("Slice").input(&[1, 3, 10, 10]).output(&[10, 10]),
        false,
    );
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, (10 * 10) * F32); // |y|
    assert_eq!(ev.mwrite, (10 * 10) * F32);
    assert_eq!(param(&ev, "out_shape"), "[10, 10]");
}

#[test]
fn array_get_item_slice2() {
    // x[0, 0, :] of x: (1, 3, 10, 10) -> (10, 10), same as x[0, 0, :, :].
    let ev = counted(
        &layer("Slice").input(&[1, 3, 10, 10]).output(&[10, 10]),
        false,
    );
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, (10 * 10) * F32);
    assert_eq!(ev.mwrite, (10 * 10) * F32);
}

// ---------------------------------------------------------------------------
// test_connection.py
//
// Convolution output size: get_conv_outsize(10, k=3, s=1, p=1) =
// (10 + 2*1 - 3) / 1 + 1 = 10. Deconvolution output size:
// get_deconv_outsize(10, k=3, s=2, p=0) = 2 * (10 - 1) + 3 - 2*0 = 21, and
// with dilation 3 the kernel spans 3 + (3 - 1) * (3 - 1) = 7, so 18 + 7 = 25.
// ---------------------------------------------------------------------------

/// Checks the params c3 reports for a 2-D (de)convolution.
fn assert_conv_params(ev: &Evaluation, [k, s, p, d, groups, nobias]: [&str; 6]) {
    assert_eq!(param(ev, "k"), k);
    assert_eq!(param(ev, "s"), s);
    assert_eq!(param(ev, "p"), p);
    assert_eq!(param(ev, "d"), d);
    assert_eq!(param(ev, "groups"), groups);
    assert_eq!(param(ev, "nobias"), nobias);
}

#[test]
fn connection_conv2d_with_bias_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k) = (3, 10, 10, 12, 10, 10, 3);
    let l = conv2d(
        "Conv",
        &[1, 3, 10, 10],
        &[12, 3, 3, 3],
        Some(&[12]),
        &[1, 12, 10, 10],
        (3, 1, 1, 1, 1),
    );
    let ev = counted(&l, true);
    assert_eq!(ev.flops, c_in * c_out * k * k * h_out * w_out);
    // |x| + |W| + |b|
    assert_eq!(
        ev.mread,
        (c_in * h_in * w_in + c_out * c_in * k * k + c_out) * F32
    );
    assert_eq!(ev.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &ev,
        ["[3, 3]", "[1, 1]", "[1, 1, 1, 1]", "[1, 1]", "1", "false"],
    );
}

#[test]
fn connection_conv2d_nobias_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k) = (3, 10, 10, 12, 10, 10, 3);
    let l = conv2d(
        "Conv",
        &[1, 3, 10, 10],
        &[12, 3, 3, 3],
        None,
        &[1, 12, 10, 10],
        (3, 1, 1, 1, 1),
    );
    let ev = counted(&l, true);
    // With FMA the bias does not matter.
    assert_eq!(ev.flops, c_in * c_out * k * k * h_out * w_out);
    // |x| + |W|
    assert_eq!(ev.mread, (c_in * h_in * w_in + c_out * c_in * k * k) * F32);
    assert_eq!(ev.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &ev,
        ["[3, 3]", "[1, 1]", "[1, 1, 1, 1]", "[1, 1]", "1", "true"],
    );
}

#[test]
fn connection_conv2d_with_bias_no_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k) = (3, 10, 10, 12, 10, 10, 3);
    let l = conv2d(
        "Conv",
        &[1, 3, 10, 10],
        &[12, 3, 3, 3],
        Some(&[12]),
        &[1, 12, 10, 10],
        (3, 1, 1, 1, 1),
    );
    let ev = counted(&l, false);
    // k*k*c_in products and as many additions (the bias included) per output.
    assert_eq!(ev.flops, 2 * (c_in * c_out * k * k * h_out * w_out));
    assert_eq!(
        ev.mread,
        (c_in * h_in * w_in + c_out * c_in * k * k + c_out) * F32
    );
    assert_eq!(ev.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &ev,
        ["[3, 3]", "[1, 1]", "[1, 1, 1, 1]", "[1, 1]", "1", "false"],
    );
}

#[test]
fn connection_conv2d_nobias_no_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k) = (3, 10, 10, 12, 10, 10, 3);
    let l = conv2d(
        "Conv",
        &[1, 3, 10, 10],
        &[12, 3, 3, 3],
        None,
        &[1, 12, 10, 10],
        (3, 1, 1, 1, 1),
    );
    // The original: 2 (c_in c_out - 1) k k h_out w_out = 63000.
    let orig = l.eval_with(chainer(), false);
    assert_eq!(orig.flops, 2 * (c_in * c_out - 1) * k * k * h_out * w_out);
    assert_eq!(
        orig.mread,
        (c_in * h_in * w_in + c_out * c_in * k * k) * F32
    );
    assert_eq!(orig.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &orig,
        ["[3, 3]", "[1, 1]", "[1, 1, 1, 1]", "[1, 1]", "1", "true"],
    );

    // Built-in: a dot product of length c_in k k costs 2 c_in k k - 1 FLOPs,
    // for each of the c_out h_out w_out outputs = 63600.
    let ev = l.eval(false);
    assert_eq!(ev.flops, (2 * c_in * k * k - 1) * c_out * h_out * w_out);
    assert_eq!(ev.mread, orig.mread);
    assert_eq!(ev.mwrite, orig.mwrite);
}

#[test]
fn connection_conv2d_grouped_with_bias_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k, g) = (8, 10, 10, 12, 10, 10, 3, 2);
    let l = conv2d(
        "Conv",
        &[1, 8, 10, 10],
        &[12, 4, 3, 3], // (c_out, c_in / g, k, k)
        Some(&[12]),
        &[1, 12, 10, 10],
        (3, 1, 1, 1, 2),
    );
    let ev = counted(&l, true);
    assert_eq!(ev.flops, (c_in * c_out * k * k * h_out * w_out) / g);
    assert_eq!(
        ev.mread,
        (c_in * h_in * w_in + c_out * c_in * k * k / g + c_out) * F32
    );
    assert_eq!(ev.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &ev,
        ["[3, 3]", "[1, 1]", "[1, 1, 1, 1]", "[1, 1]", "2", "false"],
    );
}

#[test]
fn connection_conv2d_grouped_nobias_no_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k, g) = (8, 10, 10, 12, 10, 10, 3, 2);
    let l = conv2d(
        "Conv",
        &[1, 8, 10, 10],
        &[12, 4, 3, 3],
        None,
        &[1, 12, 10, 10],
        (3, 1, 1, 1, 2),
    );
    // The original: 2 g (c_in c_out / g^2 - 1) k k h_out w_out = 82800.
    let orig = l.eval_with(chainer(), false);
    assert_eq!(
        orig.flops,
        2 * g * (c_in * c_out / (g * g) - 1) * k * k * h_out * w_out
    );
    assert_eq!(
        orig.mread,
        (c_in * h_in * w_in + c_out * c_in * k * k / g) * F32
    );
    assert_eq!(orig.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &orig,
        ["[3, 3]", "[1, 1]", "[1, 1, 1, 1]", "[1, 1]", "2", "true"],
    );

    // Built-in: (2 (c_in / g) k k - 1) FLOPs per output element = 85200.
    let ev = l.eval(false);
    assert_eq!(
        ev.flops,
        (2 * (c_in / g) * k * k - 1) * c_out * h_out * w_out
    );
    assert_eq!(ev.mread, orig.mread);
    assert_eq!(ev.mwrite, orig.mwrite);
}

#[test]
fn connection_deconv2d_with_bias_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k) = (3, 10, 10, 12, 21, 21, 3);
    let l = conv2d(
        "ConvTranspose",
        &[1, 3, 10, 10],
        &[3, 12, 3, 3], // (c_in, c_out, k, k)
        Some(&[12]),
        &[1, 12, 21, 21],
        (3, 2, 0, 1, 1),
    );
    let ev = counted(&l, true);
    // Every input pixel times every c_out k k filter tap.
    assert_eq!(ev.flops, c_in * c_out * k * k * h_in * w_in);
    assert_eq!(
        ev.mread,
        (c_in * h_in * w_in + c_in * c_out * k * k + c_out) * F32
    );
    assert_eq!(ev.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &ev,
        ["[3, 3]", "[2, 2]", "[0, 0, 0, 0]", "[1, 1]", "1", "false"],
    );
}

#[test]
fn connection_deconv2d_with_nobias_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k) = (3, 10, 10, 12, 21, 21, 3);
    let l = conv2d(
        "ConvTranspose",
        &[1, 3, 10, 10],
        &[3, 12, 3, 3],
        None,
        &[1, 12, 21, 21],
        (3, 2, 0, 1, 1),
    );
    let ev = counted(&l, true);
    assert_eq!(ev.flops, c_in * c_out * k * k * h_in * w_in);
    assert_eq!(ev.mread, (c_in * h_in * w_in + c_in * c_out * k * k) * F32);
    assert_eq!(ev.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &ev,
        ["[3, 3]", "[2, 2]", "[0, 0, 0, 0]", "[1, 1]", "1", "true"],
    );
}

#[test]
fn connection_deconv2d_with_bias_no_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k) = (3, 10, 10, 12, 21, 21, 3);
    let l = conv2d(
        "ConvTranspose",
        &[1, 3, 10, 10],
        &[3, 12, 3, 3],
        Some(&[12]),
        &[1, 12, 21, 21],
        (3, 2, 0, 1, 1),
    );
    let ev = counted(&l, false);
    assert_eq!(ev.flops, 2 * c_in * c_out * k * k * h_in * w_in);
    assert_eq!(
        ev.mread,
        (c_in * h_in * w_in + c_in * c_out * k * k + c_out) * F32
    );
    assert_eq!(ev.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &ev,
        ["[3, 3]", "[2, 2]", "[0, 0, 0, 0]", "[1, 1]", "1", "false"],
    );
}

#[test]
fn connection_deconv2d_with_nobias_no_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k) = (3, 10, 10, 12, 21, 21, 3);
    let l = conv2d(
        "ConvTranspose",
        &[1, 3, 10, 10],
        &[3, 12, 3, 3],
        None,
        &[1, 12, 21, 21],
        (3, 2, 0, 1, 1),
    );
    let ev = counted(&l, false);
    // Still 2 FLOPs per product without a bias: the output starts from zero
    // and every product is accumulated into it.
    assert_eq!(ev.flops, 2 * c_in * c_out * k * k * h_in * w_in);
    assert_eq!(ev.mread, (c_in * h_in * w_in + c_in * c_out * k * k) * F32);
    assert_eq!(ev.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &ev,
        ["[3, 3]", "[2, 2]", "[0, 0, 0, 0]", "[1, 1]", "1", "true"],
    );
}

#[test]
fn connection_deconv2d_grouped_with_bias_fma() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k, g) = (8, 10, 10, 12, 21, 21, 3, 2);
    let l = conv2d(
        "ConvTranspose",
        &[1, 8, 10, 10],
        &[8, 6, 3, 3], // (c_in, c_out / g, k, k)
        Some(&[12]),
        &[1, 12, 21, 21],
        (3, 2, 0, 1, 2),
    );
    let ev = counted(&l, true);
    assert_eq!(ev.flops, c_in * c_out * k * k * h_in * w_in / g);
    assert_eq!(
        ev.mread,
        (c_in * h_in * w_in + c_in * c_out * k * k / g + c_out) * F32
    );
    assert_eq!(ev.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &ev,
        ["[3, 3]", "[2, 2]", "[0, 0, 0, 0]", "[1, 1]", "2", "false"],
    );
}

#[test]
fn connection_deconv2d_with_bias_fma_dilate() {
    let (c_in, h_in, w_in, c_out, h_out, w_out, k) = (3, 10, 10, 12, 25, 25, 3);
    let l = conv2d(
        "ConvTranspose",
        &[1, 3, 10, 10],
        &[3, 12, 3, 3],
        Some(&[12]),
        &[1, 12, 25, 25],
        (3, 2, 0, 3, 1),
    );
    let ev = counted(&l, true);
    // Dilation changes the output size, not the work.
    assert_eq!(ev.flops, c_in * c_out * k * k * h_in * w_in);
    assert_eq!(
        ev.mread,
        (c_in * h_in * w_in + c_in * c_out * k * k + c_out) * F32
    );
    assert_eq!(ev.mwrite, (c_out * h_out * w_out) * F32);
    assert_conv_params(
        &ev,
        ["[3, 3]", "[2, 2]", "[0, 0, 0, 0]", "[3, 3]", "1", "false"],
    );
}

/// LinearFunction -> Gemm(transB=1): x (1, 10), W (20, 10), b (20,) or absent.
fn linear(bias: bool) -> Layer {
    let l = layer("Gemm").input(&[1, 10]).input(&[20, 10]);
    let l = if bias { l.input(&[20]) } else { l.absent() };
    l.output(&[1, 20]).int("transB", 1)
}

// The built-in Gemm differs from the original only for a bias at batch > 1;
// these cases have batch 1, so `counted` checks both agree.

#[test]
fn connection_linear_nobias_fma() {
    let ev = counted(&linear(false), true);
    assert_eq!(ev.flops, 10 * 20);
    assert_eq!(ev.mread, (10 + 10 * 20) * F32); // input data and weight matrix
    assert_eq!(ev.mwrite, 20 * F32);
    assert_eq!(param(&ev, "nobias"), "true");
}

#[test]
fn connection_linear_nobias_no_fma() {
    let ev = counted(&linear(false), false);
    // For each output neuron, 10 multiplications and 10 - 1 additions.
    assert_eq!(ev.flops, (10 + 10 - 1) * 20);
    assert_eq!(ev.mread, (10 + 10 * 20) * F32);
    assert_eq!(ev.mwrite, 20 * F32);
    assert_eq!(param(&ev, "nobias"), "true");
}

#[test]
fn connection_linear_withbias_fma() {
    let ev = counted(&linear(true), true);
    assert_eq!(ev.flops, 10 * 20 + 20); // multiply-adds, then the bias
    assert_eq!(ev.mread, (10 * 20 + 10 + 20) * F32); // input data, weight matrix, bias
    assert_eq!(ev.mwrite, 20 * F32);
    assert_eq!(param(&ev, "nobias"), "false");
}

// ---------------------------------------------------------------------------
// test_math.py
// ---------------------------------------------------------------------------

const X: [u64; 4] = [1, 3, 10, 10];

/// An element-wise binary op of two x: (1, 3, 10, 10).
fn binary(op: &str) -> Evaluation {
    counted(&layer(op).input(&X).input(&X).output(&X), false)
}

/// The original's `_calc` for two operands: |y| FLOPs, |x| + |x| read.
fn assert_binary(ev: &Evaluation) {
    assert_eq!(ev.flops, 3 * 10 * 10);
    assert_eq!(ev.mread, (3 * 10 * 10) * 2 * F32);
    assert_eq!(ev.mwrite, (3 * 10 * 10) * F32);
    assert!(ev.params.is_empty()); // params == {}
}

/// An op with a constant operand: `XConstant(value)` as the op with the scalar
/// constant second, `XFromConstant(value)` with it first.
///
/// The original reads `xp.size(x)` for the constant, the input's size whatever
/// the constant's (the test's constant is x itself): 2|x|. The `chainer` pack
/// reproduces that; the built-in rules read the scalar once: |x| + 1.
fn assert_constant(op: &str, constant_first: bool) {
    let l = if constant_first {
        layer(op).input(&[]).input(&X)
    } else {
        layer(op).input(&X).input(&[])
    }
    .output(&X);
    let orig = l.eval_with(chainer(), false);
    assert_eq!(orig.flops, 3 * 10 * 10);
    assert_eq!(orig.mread, (3 * 10 * 10) * 2 * F32);
    assert_eq!(orig.mwrite, (3 * 10 * 10) * F32);

    let ev = l.eval(false);
    assert_eq!(ev.flops, 3 * 10 * 10);
    assert_eq!(ev.mread, (3 * 10 * 10 + 1) * F32); // |x| + |c|, c a scalar
    assert_eq!(ev.mwrite, (3 * 10 * 10) * F32);

    // With the test's literal constant (x itself, as large as the input) both
    // count 2|x|.
    let full = layer(op).input(&X).input(&X).output(&X);
    assert_eq!(counted(&full, false).mread, (3 * 10 * 10) * 2 * F32);
}

#[test]
fn math_add() {
    assert_binary(&binary("Add"));
}

#[test]
fn math_add_multiple() {
    // Add of 10 arrays: ONNX's variadic Sum.
    let n_array = 10;
    let mut l = layer("Sum");
    for _ in 0..n_array {
        l = l.input(&X);
    }
    let ev = counted(&l.output(&X), false);
    assert_eq!(ev.flops, (n_array - 1) * 3 * 10 * 10);
    assert_eq!(ev.mread, n_array * (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, (3 * 10 * 10) * F32);
    assert!(ev.params.is_empty());
}

#[test]
fn math_add_constant() {
    assert_constant("Add", false); // AddConstant: x + c
}

#[test]
fn math_div() {
    assert_binary(&binary("Div"));
}

#[test]
fn math_div_constant() {
    assert_constant("Div", true); // DivFromConstant: c / x
}

#[test]
fn math_mul() {
    assert_binary(&binary("Mul"));
}

#[test]
fn math_mul_constant() {
    assert_constant("Mul", false); // MulConstant: x * c
}

#[test]
fn math_sub() {
    assert_binary(&binary("Sub"));
}

#[test]
fn math_sub_constant() {
    assert_constant("Sub", true); // SubFromConstant: c - x
}

/// A reduction of x: (1, 3, 10, 10) over `axes` (None: all), keepdims=False.
fn reduce(op: &str, axes: Option<&[i64]>, y: &[u64]) -> Evaluation {
    let l = layer(op).input(&X).output(y).int("keepdims", 0);
    let l = match axes {
        Some(a) => l.ints("axes", a),
        None => l,
    };
    counted(&l, false)
}

#[test]
fn math_max_noaxis() {
    let ev = reduce("ReduceMax", None, &[]);
    assert_eq!(ev.flops, 3 * 10 * 10 - 1); // |x| - 1
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, F32); // one value
    assert_eq!(param(&ev, "axis"), "none");
}

#[test]
fn math_max_axis() {
    // axis=2: (1, 3, 10, 10) -> (1, 3, 10)
    let ev = reduce("ReduceMax", Some(&[2]), &[1, 3, 10]);
    assert_eq!(ev.flops, 3 * (10 - 1) * 10);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, (3 * 10) * F32);
    assert_eq!(param(&ev, "axis"), "[2]");
}

#[test]
fn math_max_axes() {
    // axis=(1, 2): (1, 3, 10, 10) -> (1, 10)
    let ev = reduce("ReduceMax", Some(&[1, 2]), &[1, 10]);
    // (B-1)ACD over axis 1, then (C-1)AD over axis 2
    assert_eq!(ev.flops, (3 - 1) * 10 * 10 + (10 - 1) * 10);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, 10 * F32);
    assert_eq!(param(&ev, "axis"), "[1, 2]");
}

#[test]
fn math_max_axes_rev() {
    // axis=(2, 1): completely equivalent to axis=(1, 2).
    let ev = reduce("ReduceMax", Some(&[2, 1]), &[1, 10]);
    assert_eq!(ev.flops, (3 - 1) * 10 * 10 + (10 - 1) * 10);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, 10 * F32);
    assert_eq!(param(&ev, "axis"), "[2, 1]");
}

#[test]
fn math_max_all_axes() {
    // axis=(0, 1, 2, 3): completely equivalent to axis=None.
    let ev = reduce("ReduceMax", Some(&[0, 1, 2, 3]), &[]);
    assert_eq!(ev.flops, 3 * 10 * 10 - 1);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, F32);
    assert_eq!(param(&ev, "axis"), "[0, 1, 2, 3]");
}

#[test]
fn math_min_noaxis() {
    let ev = reduce("ReduceMin", None, &[]);
    assert_eq!(ev.flops, 3 * 10 * 10 - 1);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, F32);
    assert_eq!(param(&ev, "axis"), "none");
}

/// ArgMax/ArgMin(axis=1) of x: (1, 3, 10, 10) -> (1, 10, 10).
///
/// Chainer's argmax/argmin return int32 (4 bytes, as the original's element
/// count assumes), and a Chainer trace records that dtype. An ONNX model's
/// ArgMax output is int64: c3 writes it at 8 bytes, with or without the pack.
fn assert_arg(op: &str) {
    let l = |dtype| {
        layer(op)
            .input(&X)
            .output_typed(&[1, 10, 10], dtype)
            .int("axis", 1)
            .int("keepdims", 0)
    };
    let ev = counted(&l(DType::Int32), false);
    // exactly the same as max over axis 1
    assert_eq!(ev.flops, (3 - 1) * 10 * 10);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, (10 * 10) * I32); // int32 is as large as float32
    assert_eq!(param(&ev, "axis"), "1");

    // ONNX's int64 indices: the built-in rule writes each at its 8 bytes, the
    // chainer pack at the input's 4, as the original did.
    let onnx = l(DType::Int64);
    assert_eq!(onnx.eval(false).flops, ev.flops);
    assert_eq!(onnx.eval(false).mwrite, (10 * 10) * I64);
    assert_eq!(onnx.eval_with(chainer(), false).mwrite, (10 * 10) * F32);
}

#[test]
fn math_argmax() {
    assert_arg("ArgMax");
}

#[test]
fn math_argmin() {
    assert_arg("ArgMin");
}

#[test]
fn math_sum() {
    // axis=1: (1, 3, 10, 10) -> (1, 10, 10)
    let ev = reduce("ReduceSum", Some(&[1]), &[1, 10, 10]);
    assert_eq!(ev.flops, (3 - 1) * 10 * 10);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, (10 * 10) * F32);
    assert_eq!(param(&ev, "axis"), "[1]");
}

#[test]
fn math_sum_axes() {
    // axis=(1, 2): (1, 3, 10, 10) -> (1, 10)
    let ev = reduce("ReduceSum", Some(&[1, 2]), &[1, 10]);
    assert_eq!(ev.flops, (3 - 1) * 10 * 10 + (10 - 1) * 10);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, 10 * F32);
    assert_eq!(param(&ev, "axis"), "[1, 2]");
}

#[test]
fn math_sum_noaxis() {
    let ev = reduce("ReduceSum", None, &[]);
    assert_eq!(ev.flops, 3 * 10 * 10 - 1);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32);
    assert_eq!(ev.mwrite, F32);
    assert_eq!(param(&ev, "axis"), "none");
}

// ---------------------------------------------------------------------------
// test_normalization.py
// ---------------------------------------------------------------------------

/// FixedBatchNormalization -> BatchNormalization: x (1, 3, 10, 10), then
/// gamma, beta, mean and var, each (3,).
fn fixed_bn(eps: f64) -> Layer {
    layer("BatchNormalization")
        .input(&X)
        .input(&[3])
        .input(&[3])
        .input(&[3])
        .input(&[3])
        .output(&X)
        .float("epsilon", eps)
}

#[test]
fn normalization_fixed_bn() {
    let ev = counted(&fixed_bn(1e-5), false);
    // One channel-wise scale and shift per element.
    assert_eq!(ev.flops, 3 * 10 * 10 * 2);
    // input data, scale and shift params
    assert_eq!(ev.mread, (3 * 10 * 10 + (3 + 3)) * F32);
    assert_eq!(ev.mwrite, (3 * 10 * 10) * F32);
    assert_eq!(param(&ev, "eps"), "0.00001");
}

#[test]
fn normalization_fixed_bn_fma() {
    // Chainer's default eps is 2e-5.
    let ev = counted(&fixed_bn(2e-5), true);
    assert_eq!(ev.flops, 3 * 10 * 10); // the scale and shift fuse into an FMA
    assert_eq!(ev.mread, (3 * 10 * 10 + (3 + 3)) * F32);
    assert_eq!(ev.mwrite, (3 * 10 * 10) * F32);
    assert_eq!(param(&ev, "eps"), "0.00002");
}

/// NormalizeL2 -> LpNormalization(p=2) of x: (1, c, h, w) along `axis`.
fn normalize_l2(axis: i64) -> Layer {
    layer("LpNormalization")
        .input(&X)
        .output(&X)
        .int("axis", axis)
        .int("p", 2)
}

#[test]
fn normalization_normalize_no_fma() {
    let (c, h, w) = (3, 10, 10);
    let ev = counted(&normalize_l2(2), false);
    // (3h + 1) per vector along axis 2 (length h), c w vectors
    assert_eq!(ev.flops, (3 * h + 1) * c * w);
    assert_eq!(ev.mread, (c * h * w) * F32);
    assert_eq!(ev.mwrite, (c * h * w) * F32);
    assert_eq!(param(&ev, "axis"), "2");
}

#[test]
fn normalization_normalize_fma() {
    let (c, h, w) = (3, 10, 10);
    let ev = counted(&normalize_l2(2), true);
    assert_eq!(ev.flops, (2 * h + 2) * c * w);
    assert_eq!(ev.mread, (c * h * w) * F32);
    assert_eq!(ev.mwrite, (c * h * w) * F32);
    assert_eq!(param(&ev, "axis"), "2");
}

#[test]
fn normalization_normalize_2axes() {
    // NormalizeL2(axis=(2, 3)): the original warns and uses the first axis.
    let (c, h, w) = (3, 10, 10);
    let ev = counted(&normalize_l2(2), true);
    assert_eq!(ev.flops, (2 * h + 2) * c * w);
    assert_eq!(ev.mread, (c * h * w) * F32);
    assert_eq!(ev.mwrite, (c * h * w) * F32);
    assert_eq!(param(&ev, "axis"), "2");
}

/// LocalResponseNormalization(n=5, k=2, alpha=1e-4, beta=0.75) -> LRN of
/// x: (1, 8, 10, 10). The built-in LRN differs from the original only at
/// batch > 1 (the original leaves the batch out); here the batch is 1.
fn lrn() -> Layer {
    layer("LRN")
        .input(&[1, 8, 10, 10])
        .output(&[1, 8, 10, 10])
        .int("size", 5)
        .float("bias", 2.0)
        .float("alpha", 0.0001)
        .float("beta", 0.75)
}

fn assert_lrn_params(ev: &Evaluation) {
    assert_eq!(param(ev, "n"), "5");
    assert_eq!(param(ev, "k"), "2");
    assert_eq!(param(ev, "alpha"), "0.0001");
    assert_eq!(param(ev, "beta"), "0.75");
}

#[test]
fn normalization_lrn() {
    let (c, h, w) = (8, 10, 10);
    let ev = counted(&lrn(), false);
    // c (square) + (c - 1) (running sum) + c (window sum) + 3c (scale, add, pow)
    assert_eq!(ev.flops, (6 * c - 1) * h * w);
    assert_eq!(ev.mread, (c * h * w) * F32);
    assert_eq!(ev.mwrite, (c * h * w) * F32);
    assert_lrn_params(&ev);
}

#[test]
fn normalization_lrn_fma() {
    let (c, h, w) = (8, 10, 10);
    let ev = counted(&lrn(), true);
    assert_eq!(ev.flops, (5 * c - 1) * h * w); // alpha and k fuse into an FMA
    assert_eq!(ev.mread, (c * h * w) * F32);
    assert_eq!(ev.mwrite, (c * h * w) * F32);
    assert_lrn_params(&ev);
}

// ---------------------------------------------------------------------------
// test_pooling.py
//
// Pooling output size, cover_all=True (ONNX ceil_mode=1):
// get_conv_outsize(100, k=2, s=2, p=0, cover_all=True) =
// (100 + 2*0 - 2 + 2 - 1) / 2 + 1 = 50.
// Unpooling output size without outsize, cover_all=True:
// get_deconv_outsize(10, k=3, s=3, p=0, cover_all=True) =
// 3 * (10 - 1) + 3 - 3 + 1 - 2*0 = 28.
// ---------------------------------------------------------------------------

/// A 2x2, stride 2, unpadded pooling of x: (1, 3, 100, 100) -> (1, 3, 50, 50).
fn pool2d(op: &str) -> Evaluation {
    counted(
        &layer(op)
            .input(&[1, 3, 100, 100])
            .output(&[1, 3, 50, 50])
            .ints("kernel_shape", &[2, 2])
            .ints("strides", &[2, 2])
            .ints("pads", &[0, 0, 0, 0])
            .int("ceil_mode", 1),
        false,
    )
}

fn assert_pool_params(ev: &Evaluation, k: &str, s: &str, p: &str) {
    assert_eq!(param(ev, "k"), k);
    assert_eq!(param(ev, "s"), s);
    assert_eq!(param(ev, "p"), p);
}

#[test]
fn pooling_max_pooling() {
    let ev = pool2d("MaxPool");
    // (output size) * (2*2 - 1 comparisons per window)
    assert_eq!(ev.flops, (3 * 50 * 50) * (2 * 2 - 1));
    assert_eq!(ev.mread, (3 * 100 * 100) * F32); // |x|
    assert_eq!(ev.mwrite, (3 * 50 * 50) * F32);
    assert_pool_params(&ev, "[2, 2]", "[2, 2]", "[0, 0, 0, 0]");
}

#[test]
fn pooling_average_pooling() {
    let ev = pool2d("AveragePool");
    // (output size) * (2*2 - 1 additions + 1 division per window)
    assert_eq!(ev.flops, (3 * 50 * 50) * ((2 * 2 - 1) + 1));
    assert_eq!(ev.mread, (3 * 100 * 100) * F32);
    assert_eq!(ev.mwrite, (3 * 50 * 50) * F32);
    assert_pool_params(&ev, "[2, 2]", "[2, 2]", "[0, 0, 0, 0]");
}

/// Unpooling2D(ksize=3, stride=3) -> Upsample(nearest) of x: (1, 3, 10, 10).
fn unpooling(y: &[u64]) -> Evaluation {
    counted(
        &layer("Upsample")
            .input(&[1, 3, 10, 10])
            .output(y)
            .string("mode", "nearest"),
        false,
    )
}

#[test]
fn pooling_unpooling_2d() {
    // outsize=(30, 30)
    let ev = unpooling(&[1, 3, 30, 30]);
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32); // 1 * 3 * 10 * 10: min(|y|, |x|) = |x|
    assert_eq!(ev.mwrite, (3 * 30 * 30) * F32);
    // The original reported outsize (30, 30); c3 the whole output shape.
    assert_eq!(param(&ev, "size"), "[1, 3, 30, 30]");
}

#[test]
fn pooling_unpooling_2d_no_outsize() {
    let ev = unpooling(&[1, 3, 28, 28]);
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, (3 * 10 * 10) * F32); // 1 * 3 * 10 * 10
    assert_eq!(ev.mwrite, (3 * 28 * 28) * F32);
    assert_eq!(param(&ev, "size"), "[1, 3, 28, 28]");
}

/// Upsampling2D(indices, ksize=3, stride=3) -> MaxUnpool of x: (1, 3, 10, 10)
/// with indices of the same shape. ONNX MaxUnpool's own output size is
/// (10 - 1) * 3 + 3 = 30; another size (Chainer's cover_all 28) needs the
/// int64 `output_shape` input, which is metadata and not counted as a read.
fn upsampling(y: &[u64], indices: DType) -> Layer {
    let l = layer("MaxUnpool")
        .input(&[1, 3, 10, 10])
        .input_typed(&[1, 3, 10, 10], indices);
    let l = if y[2] == 30 {
        l
    } else {
        l.input_typed(&[4], DType::Int64)
    };
    l.output(y)
        .ints("kernel_shape", &[3, 3])
        .ints("strides", &[3, 3])
        .ints("pads", &[0, 0, 0, 0])
}

/// The original reads the indices at the float32 size: 2|x| elements. With
/// Chainer's int32 indices the built-in rules agree; with ONNX's int64
/// indices the built-in rules read them at 8 bytes and the pack keeps 2|x|.
fn assert_upsampling(y: &[u64]) {
    let (n, c, oh, ow) = (y[0], y[1], y[2], y[3]);
    let ev = counted(&upsampling(y, DType::Int32), false);
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, (2 * 3 * 10 * 10) * F32); // |x| + |indices|
    assert_eq!(ev.mwrite, (n * c * oh * ow) * F32);
    assert_pool_params(&ev, "[3, 3]", "[3, 3]", "[0, 0, 0, 0]");
    assert_eq!(param(&ev, "outsize"), format!("[1, 3, {oh}, {ow}]"));

    let l64 = upsampling(y, DType::Int64);
    let orig = l64.eval_with(chainer(), false);
    assert_eq!(orig.flops, 0);
    assert_eq!(orig.mread, (2 * 3 * 10 * 10) * F32);
    assert_eq!(orig.mwrite, (n * c * oh * ow) * F32);
    let own = l64.eval(false);
    assert_eq!(own.mread, (3 * 10 * 10) * F32 + (3 * 10 * 10) * I64); // |x| + |I|
    assert_eq!(own.mwrite, orig.mwrite);
}

#[test]
fn pooling_upsampling_2d() {
    // outsize=(30, 30)
    assert_upsampling(&[1, 3, 30, 30]);
}

#[test]
fn pooling_upsampling_2d_no_outsize() {
    assert_upsampling(&[1, 3, 28, 28]);
}

#[test]
fn chainer_pack_writes_argmax_indices_at_the_input_element_size() {
    // ONNX ArgMax returns int64; the original counted its output at the
    // input's 4-byte float32 size: (1, 3, 10, 10) -> 100 indices = 400 bytes.
    let l = layer("ArgMax")
        .input(&[1, 3, 10, 10])
        .output_typed(&[1, 10, 10], DType::Int64)
        .int("axis", 1)
        .int("keepdims", 0);
    assert_eq!(l.eval_with(chainer(), true).mwrite, 10 * 10 * F32);
    // Built-in: each index at its own 8 bytes.
    assert_eq!(l.eval(true).mwrite, 10 * 10 * I64);
}
