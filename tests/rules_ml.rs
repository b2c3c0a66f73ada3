//! ai.onnx.ml and ai.onnx.preview.training rules.

use crate::common::*;

use c3::ir::{AttrValue, DType};

const ML: &str = "ai.onnx.ml";
const TRAINING: &str = "ai.onnx.preview.training";

fn ml(op: &str) -> Layer {
    let mut l = layer(op);
    l.node.domain = ML.to_string();
    l
}

fn training(op: &str) -> Layer {
    let mut l = layer(op);
    l.node.domain = TRAINING.to_string();
    l
}

fn floats(n: usize) -> AttrValue {
    AttrValue::Floats(vec![0.5; n])
}

#[test]
fn elementwise_and_lookups() {
    // Binarizer, Imputer: one comparison per element of a 3x4 input.
    for op in ["Binarizer", "Imputer"] {
        let ev = ml(op).input(&[3, 4]).output(&[3, 4]).eval(true);
        assert_eq!(ev.flops, 12, "{op}");
        assert_eq!(ev.mread, 12 * F32, "{op}");
        assert_eq!(ev.mwrite, 12 * F32, "{op}");
    }
    // Scaler: (x - offset) * scale, 2 FLOPs per element with or without FMA.
    for fma in [true, false] {
        let ev = ml("Scaler").input(&[3, 4]).output(&[3, 4]).eval(fma);
        assert_eq!(ev.flops, 2 * 12);
    }
    // Lookups: no arithmetic; int64 in, float (or int64) out.
    for op in ["CategoryMapper", "LabelEncoder"] {
        let ev = ml(op)
            .input_typed(&[5], DType::Int64)
            .output_typed(&[5], DType::Int64)
            .eval(true);
        assert_eq!(ev.flops, 0, "{op}");
        assert_eq!(ev.mread, 5 * 8, "{op}");
        assert_eq!(ev.mwrite, 5 * 8, "{op}");
    }
    // OneHotEncoder: 5 int64 values, 3 categories -> 5x3 float output.
    let ev = ml("OneHotEncoder")
        .input_typed(&[5], DType::Int64)
        .output(&[5, 3])
        .eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (0, 5 * 8, 15 * F32));
}

#[test]
fn gathers_and_copies() {
    // ArrayFeatureExtractor: 2x10 input, 3 int64 indices -> 2x3 output; only
    // the 6 selected elements and the indices are read.
    let ev = ml("ArrayFeatureExtractor")
        .input(&[2, 10])
        .input_typed(&[3], DType::Int64)
        .output(&[2, 3])
        .eval(true);
    assert_eq!(ev.flops, 0);
    assert_eq!(ev.mread, 3 * 8 + 6 * F32);
    assert_eq!(ev.mwrite, 6 * F32);
    // FeatureVectorizer: 2x3 and 2x4 concatenated into 2x7.
    let ev = ml("FeatureVectorizer")
        .input(&[2, 3])
        .input(&[2, 4])
        .output(&[2, 7])
        .eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (0, 14 * F32, 14 * F32));
}

#[test]
fn linear_classifier() {
    // 4 rows, 3 features, 2 classes (6 coefficients, 2 intercepts), softmax:
    // 4*6 MACs + 4*2 bias + 3*8 softmax + 4*(2-1) argmax.
    let l = ml("LinearClassifier")
        .input(&[4, 3])
        .output_typed(&[4], DType::Int64)
        .output(&[4, 2])
        .attr("coefficients", floats(6))
        .attr("intercepts", floats(2))
        .string("post_transform", "SOFTMAX");
    let ev = l.eval(true);
    assert_eq!(ev.flops, 24 + 8 + 24 + 4);
    assert_eq!(ev.mread, 12 * F32);
    assert_eq!(ev.mwrite, 4 * 8 + 8 * F32);
    assert_eq!(l.eval(false).flops, 2 * 24 + 8 + 24 + 4);
    assert_eq!(param(&ev, "classes"), "2");
    // No intercepts, no post-transform: 24 MACs + 4 argmax comparisons.
    let ev = ml("LinearClassifier")
        .input(&[4, 3])
        .output_typed(&[4], DType::Int64)
        .output(&[4, 2])
        .attr("coefficients", floats(6))
        .eval(true);
    assert_eq!(ev.flops, 24 + 4);
}

#[test]
fn linear_regressor() {
    // 5 rows, 4 features, 2 targets: 5*8 MACs + 5*2 intercept additions.
    let l = ml("LinearRegressor")
        .input(&[5, 4])
        .output(&[5, 2])
        .attr("coefficients", floats(8))
        .attr("intercepts", floats(2))
        .int("targets", 2);
    assert_eq!(l.eval(true).flops, 40 + 10);
    assert_eq!(l.eval(false).flops, 80 + 10);
    assert_eq!(l.eval(true).mread, 20 * F32);
    assert_eq!(l.eval(true).mwrite, 10 * F32);
}

#[test]
fn normalizer() {
    // 2 rows of 4. MAX: 3 comparisons + 4 divisions per row.
    let l = |norm: &str| {
        ml("Normalizer")
            .input(&[2, 4])
            .output(&[2, 4])
            .string("norm", norm)
    };
    assert_eq!(l("MAX").eval(true).flops, 2 * (3 + 4));
    // L1: 4 abs + 3 adds + 4 divisions.
    assert_eq!(l("L1").eval(true).flops, 2 * (4 + 3 + 4));
    // L2: 4 MACs (7 without FMA) + 1 sqrt + 4 divisions.
    assert_eq!(l("L2").eval(true).flops, 2 * (4 + 1 + 4));
    assert_eq!(l("L2").eval(false).flops, 2 * (7 + 1 + 4));
    assert_eq!(l("L2").eval(true).mread, 8 * F32);
}

#[test]
fn svm() {
    // 3 rows, 4 features, 5 support vectors (20 values), 5 coefficients:
    // 3 * (20 + 5) MACs.
    let l = ml("SVMClassifier")
        .input(&[3, 4])
        .output_typed(&[3], DType::Int64)
        .output(&[3, 2])
        .attr("support_vectors", floats(20))
        .attr("coefficients", floats(5))
        .string("kernel_type", "RBF");
    let ev = l.eval(true);
    assert_eq!(ev.flops, 3 * 25);
    assert_eq!(l.eval(false).flops, 2 * 3 * 25);
    assert_eq!(param(&ev, "vectors"), "5");
    assert_eq!(ev.mwrite, 3 * 8 + 6 * F32);
    // Regressor, linear mode: no support vectors, 4 coefficients -> 3*4 MACs.
    let ev = ml("SVMRegressor")
        .input(&[3, 4])
        .output(&[3, 1])
        .attr("coefficients", floats(4))
        .eval(true);
    assert_eq!(ev.flops, 12);
}

#[test]
fn map_operators() {
    // The map inputs' size is unknown to shape inference; the rules count on
    // the output side. A map of 6 entries is described here by its values.
    // CastMap DENSE, 6 entries -> [1, 6] float: the 6 values are read in key
    // order (counted at the output's 4 bytes) and 6 floats written.
    let ev = ml("CastMap")
        .input_typed(&[6], DType::String)
        .output(&[1, 6])
        .eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (0, 6 * F32, 6 * F32));
    assert_eq!(param(&ev, "form"), "\"DENSE\"");
    // SPARSE to int64, max_map 10: at most 10 int64 keys placing 10 values of
    // 8 bytes.
    let ev = ml("CastMap")
        .input(&[3])
        .output_typed(&[1, 10], DType::Int64)
        .string("map_form", "SPARSE")
        .int("max_map", 10)
        .string("cast_to", "TO_INT64")
        .eval(true);
    assert_eq!((ev.mread, ev.mwrite), (10 * 8 + 10 * 8, 10 * 8));
    // DictVectorizer, 4-word vocabulary of float64 values: 4 lookups of
    // 8-byte values, [1, 4] float64 written.
    let ev = ml("DictVectorizer")
        .input_typed(&[2], DType::Float64)
        .output_typed(&[1, 4], DType::Float64)
        .eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (0, 4 * 8, 4 * 8));
    assert_eq!(param(&ev, "vocabulary"), "4");
    // ZipMap, 5 rows of 3 scores: 15 floats read; 15 entries written, each
    // a 4-byte score and an 8-byte label.
    let ev = ml("ZipMap").input(&[5, 3]).output(&[5]).eval(true);
    assert_eq!(
        (ev.flops, ev.mread, ev.mwrite),
        (0, 15 * F32, 15 * (F32 + 8))
    );
    assert_eq!(param(&ev, "classes"), "3");
}

#[test]
fn tree_ensembles() {
    // 10 samples, 7 nodes, 4 leaf weights: 10 * (7 + 4) upper bound.
    let ev = ml("TreeEnsembleRegressor")
        .input(&[10, 3])
        .output(&[10, 1])
        .ints("nodes_featureids", &[0, 1, 2, 0, 0, 0, 0])
        .ints("target_ids", &[0, 0, 0, 0])
        .eval(true);
    assert_eq!(ev.flops, 10 * (7 + 4));
    assert_eq!(ev.mread, 30 * F32);
    let ev = ml("TreeEnsembleClassifier")
        .input(&[10, 3])
        .output_typed(&[10], DType::Int64)
        .output(&[10, 2])
        .ints("nodes_featureids", &[0, 1, 2])
        .ints("class_ids", &[0, 1, 0, 1])
        .eval(true);
    assert_eq!(ev.flops, 10 * (3 + 4));
    assert_eq!(ev.mwrite, 10 * 8 + 20 * F32);
    let ev = ml("TreeEnsemble")
        .input(&[10, 3])
        .output(&[10, 1])
        .ints("nodes_featureids", &[0, 1, 2])
        .ints("leaf_targetids", &[0, 0, 0, 0])
        .eval(true);
    assert_eq!(ev.flops, 10 * (3 + 4));
}

/// R and T scalars, then `groups` tensors of 6 elements each.
fn optimizer(op: &str, groups: usize, outs: usize) -> Layer {
    let mut l = training(op).input(&[]).input_typed(&[], DType::Int64);
    for _ in 0..groups {
        l = l.input(&[2, 3]);
    }
    for _ in 0..outs {
        l = l.output(&[2, 3]);
    }
    l
}

#[test]
fn optimizers() {
    // Adagrad: X, G, H of 6 elements: 3 + 6 * 7 (9 without FMA).
    let l = optimizer("Adagrad", 3, 2);
    let ev = l.eval(true);
    assert_eq!(ev.flops, 3 + 6 * 7);
    assert_eq!(l.eval(false).flops, 3 + 6 * 9);
    assert_eq!(ev.mread, F32 + 8 + 18 * F32);
    assert_eq!(ev.mwrite, 12 * F32);
    assert_eq!(param(&ev, "elements"), "6");
    // Adam: two parameters of 6 (8 tensors): 7 + 12 * 11 (15 without FMA).
    let l = optimizer("Adam", 8, 6);
    assert_eq!(l.eval(true).flops, 7 + 12 * 11);
    assert_eq!(l.eval(false).flops, 7 + 12 * 15);
    // Momentum: standard 6 * 4 (7), nesterov 6 * 5 (9).
    let l = optimizer("Momentum", 3, 2);
    assert_eq!(l.eval(true).flops, 6 * 4);
    assert_eq!(l.eval(false).flops, 6 * 7);
    let l = l.string("mode", "nesterov");
    assert_eq!(l.eval(true).flops, 6 * 5);
    assert_eq!(l.eval(false).flops, 6 * 9);
}
