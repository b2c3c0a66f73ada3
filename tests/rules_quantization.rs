//! Quantization rules: integer arithmetic counted as IOPs, apart from FLOPs.

use crate::common::*;

use c3::ir::DType;

const I8: u64 = 1;

fn scalar(l: Layer, dtype: DType) -> Layer {
    l.input_typed(&[], dtype)
}

#[test]
fn quantize_and_dequantize_linear() {
    // 1x64 float32 -> int8: 2 FLOPs (divide, round) and 1 IOP (zero point) each.
    let q = layer("QuantizeLinear").input(&[1, 64]);
    let q = scalar(q, DType::Float32);
    let q = scalar(q, DType::Int8).output_typed(&[1, 64], DType::Int8);
    let ev = q.eval(true);
    assert_eq!((ev.flops, ev.iops), (2 * 64, 64));
    assert_eq!(ev.mread, 64 * F32 + F32 + I8);
    assert_eq!(ev.mwrite, 64 * I8);
    // Back: 1 IOP (subtract the zero point) and 1 FLOP (scale) each.
    let d = layer("DequantizeLinear").input_typed(&[1, 64], DType::Int8);
    let d = scalar(d, DType::Float32);
    let d = scalar(d, DType::Int8).output(&[1, 64]);
    let ev = d.eval(true);
    assert_eq!((ev.flops, ev.iops), (64, 64));
    assert_eq!(ev.mwrite, 64 * F32);
}

#[test]
fn qlinear_matmul_counts_products_zero_points_and_requantization() {
    let mut l = layer("QLinearMatMul").input_typed(&[1, 64], DType::Int8);
    l = scalar(scalar(l, DType::Float32), DType::Int8);
    l = l.input_typed(&[64, 32], DType::Int8);
    l = scalar(scalar(l, DType::Float32), DType::Int8);
    l = scalar(scalar(l, DType::Float32), DType::Int8);
    let l = l.output_typed(&[1, 32], DType::Int8);
    let ev = l.eval(true);
    // 32 outputs x K=64 multiply-adds, zero points off 64 + 2048 inputs, 32 output zero points.
    assert_eq!(ev.iops, 32 * 64 + 64 + 64 * 32 + 32);
    // Requantization: scale and round per output.
    assert_eq!(ev.flops, 2 * 32);
    // Without FMA: (2K - 1) per output.
    assert_eq!(l.eval(false).iops, 32 * (2 * 64 - 1) + 64 + 64 * 32 + 32);
    // int8 data (1 byte each), three float32 scales, three int8 zero points.
    assert_eq!(ev.mread, 64 * I8 + 64 * 32 * I8 + 3 * F32 + 3 * I8);
}

#[test]
fn integer_matmul_and_conv_without_zero_points() {
    let l = layer("MatMulInteger")
        .input_typed(&[4, 16], DType::Uint8)
        .input_typed(&[16, 8], DType::Int8)
        .output_typed(&[4, 8], DType::Int32);
    let ev = l.eval(true);
    assert_eq!((ev.flops, ev.iops), (0, 4 * 8 * 16));
    assert_eq!(ev.mwrite, 4 * 8 * 4);
    // ConvInteger: 1x3x8x8 * 4x3x3x3 -> 1x4x6x6, window 3*3*3 = 27.
    let c = layer("ConvInteger")
        .input_typed(&[1, 3, 8, 8], DType::Uint8)
        .input_typed(&[4, 3, 3, 3], DType::Uint8)
        .output_typed(&[1, 4, 6, 6], DType::Int32);
    assert_eq!(c.eval(true).iops, 4 * 6 * 6 * 27);
    assert_eq!(c.eval(false).iops, 4 * 6 * 6 * (2 * 27 - 1));
}

#[test]
fn dynamic_quantize_reads_twice() {
    let l = layer("DynamicQuantizeLinear")
        .input(&[100])
        .output_typed(&[100], DType::Uint8)
        .output(&[])
        .output_typed(&[], DType::Uint8);
    let ev = l.eval(true);
    // min and max (2 x 99 comparisons), 8 for scale and zero point, 2 per element to quantize.
    assert_eq!(ev.flops, 2 * 99 + 8 + 2 * 100);
    assert_eq!(ev.iops, 100);
    assert_eq!(ev.mread, 2 * 100 * F32);
    assert_eq!(ev.mwrite, 100 + 4 + 1);
}
