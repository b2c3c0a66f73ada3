//! The string and image-decoding rules and the onnxruntime contrib
//! (com.microsoft) rules added with them, each against hand counts.

mod common;
use common::*;

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
