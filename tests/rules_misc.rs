//! Losses, SwiGLU, DeformConv and Det.

use crate::common::*;

use c3::ir::DType;

#[test]
fn nll_loss_mean_with_weights() {
    // scores 4x5, targets 4 (int64), weights 5: negate and weight each of the
    // 4 picked scores (8), sum them (3), divide by the summed weights (1 + 3).
    let l = layer("NegativeLogLikelihoodLoss")
        .input(&[4, 5])
        .input_typed(&[4], DType::Int64)
        .input(&[5])
        .output(&[]);
    let ev = l.eval(true);
    assert_eq!(ev.flops, 4 + 4 + 3 + (1 + 3));
    // Only the 4 picked float32 scores, the int64 targets and the weights are read.
    assert_eq!(ev.mread, 4 * F32 + 4 * 8 + 5 * F32);
    // reduction none: just the negations.
    let none = layer("NegativeLogLikelihoodLoss")
        .input(&[4, 5])
        .input_typed(&[4], DType::Int64)
        .output(&[4])
        .string("reduction", "none");
    assert_eq!(none.eval(true).flops, 4);
}

#[test]
fn softmax_cross_entropy() {
    // scores 2x3x4 (C=3, 8 rows of 3): log-softmax 2*24 + 8*2 + 8 = 72, then
    // 8 negations, 7 additions and a division (mean).
    let l = layer("SoftmaxCrossEntropyLoss")
        .input(&[2, 3, 4])
        .input_typed(&[2, 4], DType::Int64)
        .output(&[]);
    assert_eq!(l.eval(true).flops, (2 * 24 + 8 * 2 + 8) + 8 + 7 + 1);
}

#[test]
fn swiglu_and_det() {
    let s = layer("SwiGLU")
        .input(&[2, 16])
        .input(&[2, 16])
        .output(&[2, 16]);
    assert_eq!(s.eval(true).flops, 7 * 32);
    // Two 4x4 matrices: 14 multiply-adds ((3*4*7)/6), 6 divisions, 3 diagonal products each.
    let d = layer("Det").input(&[2, 4, 4]).output(&[2]);
    assert_eq!(d.eval(true).flops, 2 * (14 + 6 + 3));
    assert_eq!(d.eval(false).flops, 2 * (28 + 6 + 3));
}

#[test]
fn deform_conv_samples_then_convolves() {
    // X 1x2x5x5, W 4x2x3x3, offsets 1x18x3x3, Y 1x4x3x3, no bias, no mask.
    let l = layer("DeformConv")
        .input(&[1, 2, 5, 5])
        .input(&[4, 2, 3, 3])
        .input(&[1, 18, 3, 3])
        .output(&[1, 4, 3, 3]);
    // samples N*C*prod(K)*prod(O) = 2*9*9 = 162, 4 FLOPs each with FMA;
    // convolution |Y| * Cg * prod(K) = 36 * 18.
    assert_eq!(l.eval(true).flops, 162 * 4 + 36 * 18);
    // Without FMA: 7 per sample, (2*18 - 1) per output.
    assert_eq!(l.eval(false).flops, 162 * 7 + 36 * 35);
}
