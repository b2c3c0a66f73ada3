//! The string and image-decoding rules and the onnxruntime contrib
//! (com.microsoft) rules added with them, each against hand counts.

use crate::common::*;

use c3::ir::DType;

/// A com.microsoft (onnxruntime contrib) layer.
fn ms(op: &str) -> Layer {
    let mut l = layer(op);
    l.node.domain = "com.microsoft".to_string();
    l
}

// -------------------------------------------------------------------- strings

#[test]
fn string_ops_count_no_flops_and_their_tensors() {
    // bool output: 1 byte per element; the test tensors are f32 (4 bytes).
    let e = layer("RegexFullMatch")
        .input(&[2, 3])
        .output_typed(&[2, 3], DType::Bool)
        .eval(true);
    assert_eq!((e.flops, e.mread, e.mwrite), (0, 6 * 4, 6));

    let e = layer("StringConcat")
        .input(&[2, 3])
        .input(&[3])
        .output(&[2, 3])
        .eval(true);
    assert_eq!((e.flops, e.mread, e.mwrite), (0, (6 + 3) * 4, 6 * 4));

    let e = layer("StringNormalizer")
        .input(&[1, 5])
        .output(&[1, 4])
        .eval(true);
    assert_eq!((e.flops, e.mread, e.mwrite), (0, 5 * 4, 4 * 4));

    // Y (2, 3) padded substrings, Z (2,) int64 counts.
    let e = layer("StringSplit")
        .input(&[2])
        .output(&[2, 3])
        .output_typed(&[2], DType::Int64)
        .eval(true);
    assert_eq!((e.flops, e.mread, e.mwrite), (0, 2 * 4, 6 * 4 + 2 * 8));

    // 224 x 224 RGB uint8 from a 5000-byte stream.
    let e = layer("ImageDecoder")
        .input_typed(&[5000], DType::Uint8)
        .output_typed(&[224, 224, 3], DType::Uint8)
        .eval(true);
    assert_eq!((e.flops, e.mread, e.mwrite), (0, 5000, 224 * 224 * 3));
}

#[test]
fn tfidf_counts_one_lookup_per_ngram_position() {
    // |X| = 2 * 6 = 12 int64; grams 1..=2 (2 lengths), skips 0..=1 (2): 12 * 2 * 2 = 48 IOPs.
    let l = layer("TfIdfVectorizer")
        .input_typed(&[2, 6], DType::Int64)
        .output(&[2, 7])
        .int("min_gram_length", 1)
        .int("max_gram_length", 2)
        .int("max_skip_count", 1)
        .string("mode", "TF");
    let e = l.eval(true);
    assert_eq!(
        (e.flops, e.iops, e.mread, e.mwrite),
        (0, 48, 12 * 8, 14 * 4)
    );
    // TFIDF: one weighting multiplication per output, 14.
    let e = l.string("mode", "TFIDF").eval(true);
    assert_eq!((e.flops, e.iops), (14, 48));
}

// -------------------------------------------------------------- com.microsoft

#[test]
fn bias_add_and_bias_split_gelu() {
    // Y (2, 3, 4): 2 additions per output, 2 * 24 = 48.
    let e = ms("BiasAdd")
        .input(&[2, 3, 4])
        .input(&[4])
        .input(&[2, 3, 4])
        .output(&[2, 3, 4])
        .eval(true);
    assert_eq!(
        (e.flops, e.mread, e.mwrite),
        (48, (24 + 4 + 24) * 4, 24 * 4)
    );

    // X (2, 3, 8) -> Y (2, 3, 4): 2 bias adds + gelu 5 + multiply 1 = 8 per output.
    let l = ms("BiasSplitGelu")
        .input(&[2, 3, 8])
        .input(&[8])
        .output(&[2, 3, 4]);
    let e = l.eval(false);
    assert_eq!((e.flops, e.mread, e.mwrite), (8 * 24, (48 + 8) * 4, 24 * 4));
    assert_eq!(l.eval(true).flops, 8 * 24);
}

#[test]
fn gemm_fast_gelu_counts_the_product_and_fast_gelu() {
    // X (2, 3, 5) W (5, 4) bias (4): |Y| = 24, K = 5.
    // FMA: 24 * 5 + 24 * (8 + 1) = 336; without: 24 * 9 + 24 * (9 + 1) = 456.
    let l = ms("GemmFastGelu")
        .input(&[2, 3, 5])
        .input(&[5, 4])
        .input(&[4])
        .output(&[2, 3, 4]);
    let e = l.eval(true);
    assert_eq!(
        (e.flops, e.mread, e.mwrite),
        (336, (30 + 20 + 4) * 4, 24 * 4)
    );
    assert_eq!(l.eval(false).flops, 456);
}

#[test]
fn transpose_matmul_counts_as_fused_matmul() {
    // A (2, 5, 3) with transA: K = 5; Y (2, 3, 4), |Y| = 24.
    let l = ms("TransposeMatMul")
        .input(&[2, 5, 3])
        .input(&[2, 5, 4])
        .output(&[2, 3, 4])
        .int("transA", 1);
    assert_eq!(l.eval(true).flops, 24 * 5);
    assert_eq!(l.eval(false).flops, 24 * 9);
    // alpha = 0.5: one more multiplication per output.
    let e = l.float("alpha", 0.5).eval(true);
    assert_eq!(
        (e.flops, e.mread, e.mwrite),
        (24 * 5 + 24, (30 + 40) * 4, 24 * 4)
    );
}

#[test]
fn matmul_integer_to_float_counts_iops_and_a_scale() {
    // A u8 (3, 5), B i8 (5, 4), a_scale (1), b_scale (4), a_zero_point (1),
    // no b_zero_point, bias (4): |Y| = 12, K = 5.
    let l = ms("MatMulIntegerToFloat")
        .input_typed(&[3, 5], DType::Uint8)
        .input_typed(&[5, 4], DType::Int8)
        .input(&[1])
        .input(&[4])
        .input_typed(&[1], DType::Uint8)
        .absent()
        .input(&[4])
        .output(&[3, 4]);
    let e = l.eval(true);
    // IOPs: 12 * 5 + |A| 15 = 75; FLOPs: scale + bias, 2 * 12.
    assert_eq!((e.flops, e.iops), (24, 75));
    assert_eq!((e.mread, e.mwrite), (15 + 20 + 4 + 16 + 1 + 16, 12 * 4));
    // Without FMA: 12 * (2 * 5 - 1) + 15 = 123.
    assert_eq!(l.eval(false).iops, 123);
}

#[test]
fn dynamic_quantize_matmul_counts_quantize_product_and_dequantize() {
    // A f32 (3, 5), B i8 (5, 4), b_scale (1): |A| = 15, |Y| = 12, K = 5.
    let l = ms("DynamicQuantizeMatMul")
        .input(&[3, 5])
        .input_typed(&[5, 4], DType::Int8)
        .input(&[1])
        .output(&[3, 4]);
    let e = l.eval(true);
    // FLOPs: min/max 2 * 14 + 8 + divide and round 2 * 15 + scale 12 = 78.
    // IOPs: zero point 15 + product 12 * 5 + A zero point 15 = 90.
    assert_eq!((e.flops, e.iops), (78, 90));
    // A read twice (2 * 60 bytes), B 20, b_scale 4.
    assert_eq!((e.mread, e.mwrite), (120 + 20 + 4, 48));
    assert_eq!(l.eval(false).iops, 15 + 12 * 9 + 15);
}

#[test]
fn qattention_projects_in_integers_and_attends_in_floats() {
    // input u8 (1, 2, 4), weight i8 (4, 6), bias (6), scales (1): one head,
    // Dv = 2, Dq = (6 - 2) / 2 = 2, d = dv = 2, S = L = 2, pairs n = 4, rows 2.
    let l = ms("QAttention")
        .input_typed(&[1, 2, 4], DType::Uint8)
        .input_typed(&[4, 6], DType::Int8)
        .input(&[6])
        .input(&[1])
        .input(&[1])
        .output(&[1, 2, 2])
        .int("num_heads", 1);
    let e = l.eval(true);
    // IOPs: 2 * 6 projected elements * Din 4 = 48.
    // FLOPs: dequantize + bias 2 * 12 = 24; QK^T 4 * 2 = 8; scale 4, softmax
    // 3 * 4 - 2 = 10; softmax . V 4 * 2 = 8: 24 + 30 = 54.
    assert_eq!((e.flops, e.iops), (54, 48));
    assert_eq!((e.mread, e.mwrite), (8 + 24 + 24 + 4 + 4, 4 * 4));
    // Without FMA: IOPs 12 * 7 = 84; QK^T 4 * 3 = 12, . V 2 * (8 - 2) = 12.
    let e = l.eval(false);
    assert_eq!((e.flops, e.iops), (24 + 12 + 14 + 12, 84));
    // unidirectional: n = S L - S(S - 1)/2 = 3 pairs; FMA: 24 + 6 + 3 + 7 + 6 = 46.
    assert_eq!(l.int("unidirectional", 1).eval(true).flops, 46);
}

#[test]
fn sparse_attention_counts_dense_causal_as_an_upper_bound() {
    // B = 1, S = 4, N = 2, N_kv = 1, d = 32 / (1 * 4 * 2) = 4, cache L = 24 / 4 = 6.
    // Causal, aligned to the end: query i sees 3 + i keys, n = 3 + 4 + 5 + 6 = 18.
    let l = ms("SparseAttention")
        .input(&[1, 4, 8])
        .input(&[1, 4, 4])
        .input(&[1, 4, 4])
        .input(&[1, 1, 6, 4])
        .input(&[1, 1, 6, 4])
        .input_typed(&[1, 2], DType::Int32)
        .input_typed(&[1, 1], DType::Int32)
        .input_typed(&[1], DType::Int32)
        .input_typed(&[1], DType::Int32)
        .output(&[1, 4, 8])
        .output(&[1, 1, 6, 4])
        .output(&[1, 1, 6, 4])
        .int("num_heads", 2)
        .int("kv_num_heads", 1);
    // Per head, FMA: QK^T 18 * 4 = 72, scale 18 + softmax 3 * 18 - 4 = 68,
    // . V 72: 212; two heads 424.
    let e = l.eval(true);
    assert_eq!(e.flops, 424);
    // Without FMA: 18 * 7 = 126, 68, 4 * (36 - 4) = 128: 322 per head.
    assert_eq!(l.eval(false).flops, 644);
    // --attention full: n = 4 * 6 = 24: 96 + (24 + 72 - 4) + 96 = 284 per head.
    assert_eq!(l.eval_full_attention().flops, 2 * 284);
    assert_eq!(
        (e.mread, e.mwrite),
        (128 + 64 + 64 + 96 + 96 + 8 + 4 + 4 + 4, 128 + 96 + 96)
    );
}

// ------------------------------------------------------------ ONNX opset 27

#[test]
fn causal_conv_with_state_counts_taps_bias_and_silu() {
    // input (1, 2, 5), weight (2, 1, 3), bias (2): |Y| = 10, k = 3.
    let l = layer("CausalConvWithState")
        .input(&[1, 2, 5])
        .input(&[2, 1, 3])
        .input(&[2])
        .output(&[1, 2, 5])
        .output(&[1, 2, 2]);
    let e = l.eval(true);
    // FMA: 10 * (3 + 1) = 40; without: 10 * (5 + 1) = 60.
    assert_eq!(
        (e.flops, e.mread, e.mwrite),
        (40, (10 + 6 + 2) * 4, (10 + 4) * 4)
    );
    assert_eq!(l.eval(false).flops, 60);
    // silu: + 5 per output.
    assert_eq!(l.string("activation", "silu").eval(true).flops, 90);
}

#[test]
fn linear_attention_counts_the_recurrence_per_token() {
    // B = 1, T = 2, H_q = 2, H_kv = 1, d_k = 2, d_v = 3: s = 6.
    let l = layer("LinearAttention")
        .input(&[1, 2, 4])
        .input(&[1, 2, 2])
        .input(&[1, 2, 3])
        .output(&[1, 2, 6])
        .output(&[1, 1, 2, 3])
        .int("q_num_heads", 2)
        .int("kv_num_heads", 1);
    // linear, FMA: update 2 tokens * 6 = 12; readout 2 * 2 * (6 + 3) = 36.
    let lin = l.string("update_rule", "linear");
    let e = lin.eval(true);
    assert_eq!(
        (e.flops, e.mread, e.mwrite),
        (48, (4 + 2 + 3) * 2 * 4, (12 + 6) * 4)
    );
    // Without FMA: update 2 * 12 = 24; readout 4 * (3 * 3 + 3) = 48.
    assert_eq!(lin.eval(false).flops, 72);

    // gated_delta (default) with decay (1, 2, 1) and beta (1, 2, 1), no past:
    // update per token 6 + (6 + 2 * 3) + 6 = 24, 2 tokens 48; readout 36; exp 2.
    let e = layer("LinearAttention")
        .input(&[1, 2, 4])
        .input(&[1, 2, 2])
        .input(&[1, 2, 3])
        .absent()
        .input(&[1, 2, 1])
        .input(&[1, 2, 1])
        .output(&[1, 2, 6])
        .output(&[1, 1, 2, 3])
        .int("q_num_heads", 2)
        .int("kv_num_heads", 1)
        .eval(true);
    assert_eq!(e.flops, 86);
}

#[test]
fn ms_causal_conv_with_state_counts_every_spatial_tap() {
    // 2-D: input (1, 2, 3, 4), weight (2, 1, 2, 3): 6 taps per output, |Y| = 24.
    let l = ms("CausalConvWithState")
        .input(&[1, 2, 3, 4])
        .input(&[2, 1, 2, 3])
        .output(&[1, 2, 3, 4])
        .int("ndim", 2);
    let e = l.eval(true);
    assert_eq!(
        (e.flops, e.mread, e.mwrite),
        (24 * 6, (24 + 12) * 4, 24 * 4)
    );
    // Without FMA: 24 * (2 * 6 - 1) = 264; swish: + 24 * 5.
    assert_eq!(l.eval(false).flops, 264);
    assert_eq!(l.string("activation", "swish").eval(true).flops, 24 * 11);
}

#[test]
fn flex_attention_counts_dense_attention_without_the_modifiers() {
    // Q (1, 2, 3, 4), K (1, 1, 5, 4), V (1, 1, 5, 2): 2 query heads, n = 15 pairs.
    let mut l = layer("FlexAttention")
        .input(&[1, 2, 3, 4])
        .input(&[1, 1, 5, 4])
        .input(&[1, 1, 5, 2])
        .output(&[1, 2, 3, 2]);
    l.node.domain = "ai.onnx.preview".to_string();
    // FMA per head: QK^T 60 + scale 15 + softmax 45 - 3 + . V 30 = 147.
    let e = l.eval(true);
    assert_eq!(
        (e.flops, e.mread, e.mwrite),
        (294, (24 + 20 + 10) * 4, 12 * 4)
    );
    // Without FMA: 15 * 7 + 57 + 2 * (30 - 3) = 216 per head.
    assert_eq!(l.eval(false).flops, 432);
}

#[test]
fn ms_linear_attention_counts_as_the_onnx_rule() {
    // B = 1, T = 2, H_q = 2, H_kv = 1, d_k = 2, d_v = 3, linear rule:
    // update 2 * 6 = 12, readout 2 tokens * 2 heads * (6 + 3) = 36.
    let e = ms("LinearAttention")
        .input(&[1, 2, 4])
        .input(&[1, 2, 2])
        .input(&[1, 2, 3])
        .output(&[1, 2, 6])
        .output(&[1, 1, 2, 3])
        .int("q_num_heads", 2)
        .int("kv_num_heads", 1)
        .string("update_rule", "linear")
        .eval(true);
    assert_eq!(
        (e.flops, e.mread, e.mwrite),
        (48, (4 + 2 + 3) * 2 * 4, (12 + 6) * 4)
    );
}

#[test]
fn dynamic_quantize_lstm_counts_integer_gates_and_float_cells() {
    // X (S 2, B 1, I 3) f32; W i8 (1, 3, 8) and R i8 (1, 2, 8): H = 2,
    // 4H = 8 gate units; B (1, 16) f32; scales f32, zero points i8.
    let l = ms("DynamicQuantizeLSTM")
        .input(&[2, 1, 3])
        .input_typed(&[1, 3, 8], DType::Int8)
        .input_typed(&[1, 2, 8], DType::Int8)
        .input(&[1, 16])
        .absent()
        .absent()
        .absent()
        .absent()
        .input(&[1])
        .input_typed(&[1], DType::Int8)
        .input(&[1])
        .input_typed(&[1], DType::Int8)
        .output(&[2, 1, 1, 2])
        .output(&[1, 1, 2])
        .int("hidden_size", 2);
    let e = l.eval(true);
    // FLOPs: quantize X (6 elements) 2 * 5 + 8 + 2 * 6 = 30; h at each of
    // the 2 steps (2 elements) 2 * 1 + 8 + 2 * 2 = 14, 28; 16 gate units
    // (2 steps x 8) dequantized twice and biased twice, 64; the cells
    // 2 steps x 2 units x (14 + 2 + 1) = 68: 190.
    // IOPs: zero points of X twice 12, of h twice 2 * 2 * 2 = 8; the
    // integer dot products 16 x (3 + 2) = 80: 100.
    assert_eq!((e.flops, e.iops), (190, 100));
    // X twice (2 x 24 bytes), W 24, R 16, B 64, scales 4 + 4, zero points
    // 1 + 1; Y (4 floats) and Y_h (2).
    assert_eq!((e.mread, e.mwrite), (48 + 24 + 16 + 64 + 8 + 2, 16 + 8));
    // Without FMA: dot products 2 * 5 - 1 = 9 each, cells 14 + 3 + 1 = 18.
    let e = l.eval(false);
    assert_eq!(
        (e.flops, e.iops),
        (30 + 28 + 64 + 2 * 2 * 18, 12 + 8 + 16 * 9)
    );
}

#[test]
fn qembed_layer_normalization_dequantizes_what_it_gathers() {
    // ids int32 (1, 2); u8 word (10, 4) and position (8, 4) tables, gamma
    // and beta (4); f32 scales, u8 zero points; no segment, no mask.
    let l = ms("QEmbedLayerNormalization")
        .input_typed(&[1, 2], DType::Int32)
        .absent()
        .input_typed(&[10, 4], DType::Uint8)
        .input_typed(&[8, 4], DType::Uint8)
        .absent()
        .input_typed(&[4], DType::Uint8)
        .input_typed(&[4], DType::Uint8)
        .absent()
        .input(&[1])
        .input(&[1])
        .absent()
        .input(&[1])
        .input(&[1])
        .input_typed(&[1], DType::Uint8)
        .input_typed(&[1], DType::Uint8)
        .absent()
        .input_typed(&[1], DType::Uint8)
        .input_typed(&[1], DType::Uint8)
        .output(&[1, 2, 4]);
    let e = l.eval(true);
    // Dequantized: 2 tokens x 4 x 2 tables + gamma 4 + beta 4 = 24, one IOP
    // and one FLOP each; the sum of the two rows 8; the normalization
    // 2 x (5 x 4 + 3) = 46: 24 + 8 + 46 = 78 FLOPs.
    assert_eq!((e.flops, e.iops), (78, 24));
    // ids 8 bytes, gamma and beta 4 + 4, the gathered rows 8 + 8 (one byte
    // each), four scales 16 and four zero points 4; the output 8 floats.
    assert_eq!((e.mread, e.mwrite), (8 + 8 + 16 + 16 + 4, 32));
    // Without FMA the normalization is 7h + 2 = 30 a token.
    assert_eq!(l.eval(false).flops, 24 + 8 + 60);
}
