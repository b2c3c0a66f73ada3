//! The metadata, generator, sequence, data-movement, indexing and signal
//! rules (rules/tensor.yaml, generator.yaml, sequence.yaml, indexing.yaml,
//! resample.yaml, random.yaml, signal.yaml). Bytes are float32 (4) unless a
//! tensor is typed otherwise: int64 8, int32 4, bool 1.

use crate::common::*;

use c3::ir::DType;

const I64: u64 = 8;

/// (flops, mread, mwrite) with FMA on, then the FLOPs with FMA off.
fn counts(l: &Layer) -> (u64, u64, u64, u64) {
    let on = l.eval(true);
    let off = l.eval(false);
    assert_eq!((on.mread, on.mwrite), (off.mread, off.mwrite));
    (on.flops, on.mread, on.mwrite, off.flops)
}

// ---------------------------------------------------------------- metadata

#[test]
fn metadata_and_views_cost_nothing() {
    let shape = layer("Shape")
        .input(&[2, 3, 4])
        .output_typed(&[3], DType::Int64);
    assert_eq!(counts(&shape), (0, 0, 0, 0));
    assert_eq!(param(&shape.eval(true), "in_shape"), "[2, 3, 4]");
    let size = layer("Size")
        .input(&[2, 3, 4])
        .output_typed(&[], DType::Int64);
    assert_eq!(counts(&size), (0, 0, 0, 0));
    let constant = layer("Constant").output(&[10, 10]);
    assert_eq!(counts(&constant), (0, 0, 0, 0));
    let bitcast = layer("BitCast")
        .input(&[4])
        .output_typed(&[4], DType::Int32)
        .int("to", 6);
    assert_eq!(counts(&bitcast), (0, 0, 0, 0));
    let optional = layer("Optional").input(&[5]).output(&[5]);
    assert_eq!(counts(&optional), (0, 0, 0, 0));
    let empty_optional = layer("Optional").absent().output(&[5]);
    assert_eq!(counts(&empty_optional), (0, 0, 0, 0));
    let get = layer("OptionalGetElement").input(&[5]).output(&[5]);
    assert_eq!(counts(&get), (0, 0, 0, 0));
    let seq_empty = layer("SequenceEmpty").output(&[]);
    assert_eq!(counts(&seq_empty), (0, 0, 0, 0));
    let erase = layer("SequenceErase")
        .input(&[2, 3])
        .input_typed(&[], DType::Int64)
        .output(&[2, 3]);
    assert_eq!(counts(&erase), (0, 0, 0, 0));
}

#[test]
fn scalar_flags_and_lengths_are_written() {
    // One bool byte; one int64.
    let has = layer("OptionalHasElement")
        .input(&[5])
        .output_typed(&[], DType::Bool);
    assert_eq!(counts(&has), (0, 0, 1, 0));
    let len = layer("SequenceLength")
        .input(&[2, 3])
        .output_typed(&[], DType::Int64);
    assert_eq!(counts(&len), (0, 0, I64, 0));
}

// ---------------------------------------------------------------- generators

#[test]
fn constant_of_shape_and_eye_like_write_their_output() {
    // The shape input is metadata: 2 * 3 floats written.
    let c = layer("ConstantOfShape")
        .input_typed(&[2], DType::Int64)
        .output(&[2, 3]);
    assert_eq!(counts(&c), (0, 0, 6 * F32, 0));
    // Only the input's shape is used.
    let eye = layer("EyeLike").input(&[4, 5]).output(&[4, 5]).int("k", 1);
    assert_eq!(counts(&eye), (0, 0, 20 * F32, 0));
}

#[test]
fn range_adds_once_per_element() {
    let r = layer("Range")
        .input(&[])
        .input(&[])
        .input(&[])
        .output(&[10]);
    // 10 additions; three scalars read; 10 floats written.
    assert_eq!(counts(&r), (10, 3 * F32, 10 * F32, 10));
}

#[test]
fn one_hot_fills_and_reads_indices_and_values() {
    let l = layer("OneHot")
        .input_typed(&[2, 3], DType::Int64)
        .input_typed(&[], DType::Int64)
        .input(&[2])
        .output(&[2, 3, 10]);
    // Reads 6 int64 indices and 2 values; writes 60 floats.
    assert_eq!(counts(&l), (0, 6 * I64 + 2 * F32, 60 * F32, 0));
}

#[test]
fn random_generators_count_per_sample() {
    // Normal: 6 FLOPs per sample with FMA, 7 without; 10 samples.
    let n = layer("RandomNormal").output(&[2, 5]).ints("shape", &[2, 5]);
    assert_eq!(counts(&n), (60, 0, 10 * F32, 70));
    let nl = layer("RandomNormalLike").input(&[2, 5]).output(&[2, 5]);
    assert_eq!(counts(&nl), (60, 0, 10 * F32, 70));
    // Uniform: 2 with FMA, 3 without.
    let u = layer("RandomUniform")
        .output(&[2, 5])
        .ints("shape", &[2, 5]);
    assert_eq!(counts(&u), (20, 0, 10 * F32, 30));
    let ul = layer("RandomUniformLike").input(&[2, 5]).output(&[2, 5]);
    assert_eq!(counts(&ul), (20, 0, 10 * F32, 30));
    // Bernoulli: a uniform and a comparison per element; p is read.
    let b = layer("Bernoulli").input(&[4]).output(&[4]);
    assert_eq!(counts(&b), (8, 4 * F32, 4 * F32, 8));
}

#[test]
fn multinomial_builds_the_distribution_then_searches_it() {
    // B = 2 rows of C = 10 classes, S = 3 samples each (int32):
    // 2 * B * C + |Y| * (C + 2) = 40 + 6 * 12 = 112.
    let l = layer("Multinomial")
        .input(&[2, 10])
        .output_typed(&[2, 3], DType::Int32)
        .int("sample_size", 3);
    assert_eq!(counts(&l), (112, 20 * F32, 6 * 4, 112));
}

// ---------------------------------------------------------------- sequences

#[test]
fn sequences_copy_the_tensors_that_enter_or_leave() {
    // Sequence values are given by their element tensor; their size is unused.
    let construct = layer("SequenceConstruct")
        .input(&[2, 3])
        .input(&[4])
        .output(&[2, 3]);
    assert_eq!(counts(&construct), (0, 10 * F32, 10 * F32, 0));
    assert_eq!(param(&construct.eval(true), "count"), "2");
    let at = layer("SequenceAt")
        .input(&[7, 7])
        .input_typed(&[], DType::Int64)
        .output(&[2, 3]);
    assert_eq!(counts(&at), (0, 6 * F32, 6 * F32, 0));
    let insert = layer("SequenceInsert")
        .input(&[5])
        .input(&[2, 3])
        .input_typed(&[], DType::Int64)
        .output(&[5]);
    assert_eq!(counts(&insert), (0, 6 * F32, 6 * F32, 0));
    let concat = layer("ConcatFromSequence")
        .input(&[2, 3])
        .output(&[4, 3])
        .int("axis", 0);
    assert_eq!(counts(&concat), (0, 12 * F32, 12 * F32, 0));
    let split = layer("SplitToSequence")
        .input(&[6, 4])
        .absent()
        .output(&[3, 4]);
    assert_eq!(counts(&split), (0, 24 * F32, 24 * F32, 0));
}

// ---------------------------------------------------------------- data movement

#[test]
fn split_reads_the_input_and_writes_every_output() {
    let l = layer("Split")
        .input(&[6, 4])
        .input_typed(&[2], DType::Int64)
        .output(&[2, 4])
        .output(&[4, 4]);
    assert_eq!(counts(&l), (0, 24 * F32, 24 * F32, 0));
    assert_eq!(param(&l.eval(true), "parts"), "2");
    // Opset 2 to 12: the sizes are an attribute.
    let old = layer("Split")
        .input(&[6])
        .output(&[3])
        .output(&[3])
        .ints("split", &[3, 3])
        .opset(11);
    assert_eq!(counts(&old), (0, 6 * F32, 6 * F32, 0));
}

#[test]
fn tile_reads_once_and_writes_the_repeats() {
    let l = layer("Tile")
        .input(&[2, 3])
        .input_typed(&[2], DType::Int64)
        .output(&[4, 9]);
    assert_eq!(counts(&l), (0, 6 * F32, 36 * F32, 0));
    // Opset 1: input, tiles, axis.
    let old = layer("Tile")
        .input(&[2, 3])
        .input_typed(&[], DType::Int64)
        .input_typed(&[], DType::Int64)
        .output(&[2, 9])
        .opset(1);
    assert_eq!(counts(&old), (0, 6 * F32, 18 * F32, 0));
}

#[test]
fn pad_copies_and_reads_the_pad_value() {
    // 48 floats and the scalar pad value read; 108 written.
    let l = layer("Pad")
        .input(&[1, 3, 4, 4])
        .input_typed(&[8], DType::Int64)
        .input(&[])
        .output(&[1, 3, 6, 6]);
    assert_eq!(counts(&l), (0, 49 * F32, 108 * F32, 0));
    let reflect = layer("Pad")
        .input(&[1, 3, 4, 4])
        .input_typed(&[8], DType::Int64)
        .output(&[1, 3, 6, 6])
        .string("mode", "reflect");
    assert_eq!(counts(&reflect), (0, 48 * F32, 108 * F32, 0));
    // Opset 2: pads are an attribute, only the data is an input.
    let old = layer("Pad")
        .input(&[4])
        .output(&[6])
        .ints("pads", &[1, 1])
        .opset(2);
    assert_eq!(counts(&old), (0, 4 * F32, 6 * F32, 0));
}

#[test]
fn depth_and_space_permutations_copy() {
    let d2s = layer("DepthToSpace")
        .input(&[1, 8, 2, 2])
        .output(&[1, 2, 4, 4])
        .int("blocksize", 2);
    assert_eq!(counts(&d2s), (0, 32 * F32, 32 * F32, 0));
    let s2d = layer("SpaceToDepth")
        .input(&[1, 2, 4, 4])
        .output(&[1, 8, 2, 2])
        .int("blocksize", 2);
    assert_eq!(counts(&s2d), (0, 32 * F32, 32 * F32, 0));
}

#[test]
fn reverse_sequence_reads_the_lengths() {
    // 30 floats and 3 int64 lengths read.
    let l = layer("ReverseSequence")
        .input(&[5, 3, 2])
        .input_typed(&[3], DType::Int64)
        .output(&[5, 3, 2]);
    assert_eq!(counts(&l), (0, 30 * F32 + 3 * I64, 30 * F32, 0));
}

#[test]
fn center_crop_pad_reads_the_shared_region() {
    // Crop: the 6 * 8 * 3 = 144 kept elements are read.
    let crop = layer("CenterCropPad")
        .input(&[10, 8, 3])
        .input_typed(&[3], DType::Int64)
        .output(&[6, 8, 3]);
    assert_eq!(counts(&crop), (0, 144 * F32, 144 * F32, 0));
    // Pad: all 48 inputs read, 108 written.
    let pad = layer("CenterCropPad")
        .input(&[4, 4, 3])
        .input_typed(&[3], DType::Int64)
        .output(&[6, 6, 3]);
    assert_eq!(counts(&pad), (0, 48 * F32, 108 * F32, 0));
}

#[test]
fn trilu_selects_once_per_element() {
    let l = layer("Trilu").input(&[2, 4, 4]).output(&[2, 4, 4]);
    assert_eq!(counts(&l), (32, 32 * F32, 32 * F32, 32));
    let with_k = layer("Trilu")
        .input(&[4, 4])
        .input_typed(&[], DType::Int64)
        .output(&[4, 4])
        .int("upper", 0);
    assert_eq!(counts(&with_k), (16, 16 * F32, 16 * F32, 16));
}

#[test]
fn compress_reads_the_condition_and_the_kept_slices() {
    // 2 of 5 rows of 3 kept: 6 floats and 5 bools read.
    let l = layer("Compress")
        .input(&[5, 3])
        .input_typed(&[5], DType::Bool)
        .output(&[2, 3])
        .int("axis", 0);
    assert_eq!(counts(&l), (0, 6 * F32 + 5, 6 * F32, 0));
}

#[test]
fn col2im_adds_every_column_element() {
    // C = 2 channels, 2x2 blocks, L = 9 blocks: |X| = 1 * 8 * 9 = 72 additions
    // into a 4x4 image.
    let l = layer("Col2Im")
        .input(&[1, 8, 9])
        .input_typed(&[2], DType::Int64)
        .input_typed(&[2], DType::Int64)
        .output(&[1, 2, 4, 4]);
    assert_eq!(counts(&l), (72, 72 * F32, 32 * F32, 72));
    assert_eq!(param(&l.eval(true), "image"), "[4, 4]");
}

// ---------------------------------------------------------------- gathers and scatters

#[test]
fn gathers_read_the_selected_elements_and_the_indices() {
    let ge = layer("GatherElements")
        .input(&[3, 4])
        .input_typed(&[3, 2], DType::Int64)
        .output(&[3, 2])
        .int("axis", 1);
    assert_eq!(counts(&ge), (0, 6 * F32 + 6 * I64, 6 * F32, 0));
    // 5 index pairs pick 5 rows of 4.
    let nd = layer("GatherND")
        .input(&[2, 3, 4])
        .input_typed(&[5, 2], DType::Int64)
        .output(&[5, 4]);
    assert_eq!(counts(&nd), (0, 20 * F32 + 10 * I64, 20 * F32, 0));
}

#[test]
fn scatter_elements_reduces_once_per_update() {
    let l = |reduction: &str| {
        layer("ScatterElements")
            .input(&[4, 4])
            .input_typed(&[2, 4], DType::Int64)
            .input(&[2, 4])
            .output(&[4, 4])
            .string("reduction", reduction)
    };
    // 16 data, 8 int64 indices and 8 updates read; 16 written.
    let bytes = (16 * F32 + 8 * I64 + 8 * F32, 16 * F32);
    assert_eq!(counts(&l("none")), (0, bytes.0, bytes.1, 0));
    assert_eq!(counts(&l("add")), (8, bytes.0, bytes.1, 8));
    assert_eq!(counts(&l("max")), (8, bytes.0, bytes.1, 8));
    // The deprecated Scatter (opset 9-10) is the same copy.
    let s = layer("Scatter")
        .input(&[4, 4])
        .input_typed(&[2, 4], DType::Int64)
        .input(&[2, 4])
        .output(&[4, 4])
        .opset(10);
    assert_eq!(counts(&s), (0, bytes.0, bytes.1, 0));
}

#[test]
fn scatter_nd_reduces_once_per_update_element() {
    let l = |reduction: &str| {
        layer("ScatterND")
            .input(&[4, 5])
            .input_typed(&[3, 1], DType::Int64)
            .input(&[3, 5])
            .output(&[4, 5])
            .string("reduction", reduction)
    };
    let bytes = (20 * F32 + 3 * I64 + 15 * F32, 20 * F32);
    assert_eq!(counts(&l("none")), (0, bytes.0, bytes.1, 0));
    assert_eq!(counts(&l("mul")), (15, bytes.0, bytes.1, 15));
}

#[test]
fn tensor_scatter_copies_the_cache() {
    let l = layer("TensorScatter")
        .input(&[2, 8, 4])
        .input(&[2, 1, 4])
        .input_typed(&[2], DType::Int64)
        .output(&[2, 8, 4]);
    assert_eq!(counts(&l), (0, 64 * F32 + 8 * F32 + 2 * I64, 64 * F32, 0));
}

// ---------------------------------------------------------------- selection

#[test]
fn top_k_counts_a_partial_selection_sort() {
    // n = 10, k = 4: k (2n - k - 1) / 2 = 4 * 15 / 2 = 30 per row, 3 rows.
    let l = layer("TopK")
        .input(&[3, 10])
        .input_typed(&[1], DType::Int64)
        .output(&[3, 4])
        .output_typed(&[3, 4], DType::Int64)
        .int("axis", -1);
    assert_eq!(counts(&l), (90, 30 * F32, 12 * F32 + 12 * I64, 90));
    assert_eq!(param(&l.eval(true), "k"), "4");
    // The same along axis 0.
    let axis0 = layer("TopK")
        .input(&[10, 3])
        .input_typed(&[1], DType::Int64)
        .output(&[4, 3])
        .output_typed(&[4, 3], DType::Int64)
        .int("axis", 0);
    assert_eq!(axis0.eval(true).flops, 90);
    // k = 1 is ArgMax's count: n - 1 = 9 per row, |X| - |Y| = 27.
    let k1 = layer("TopK")
        .input(&[3, 10])
        .input_typed(&[1], DType::Int64)
        .output(&[3, 1])
        .output_typed(&[3, 1], DType::Int64);
    assert_eq!(k1.eval(true).flops, 27);
    // Opset 1: k is an attribute and there is no K input.
    let old = layer("TopK")
        .input(&[3, 10])
        .output(&[3, 4])
        .output_typed(&[3, 4], DType::Int64)
        .int("k", 4)
        .opset(1);
    assert_eq!(old.eval(true).flops, 90);
}

#[test]
fn non_zero_compares_every_element() {
    // 7 non-zero elements of a 4x5 matrix: a 2 x 7 int64 index matrix.
    let l = layer("NonZero")
        .input(&[4, 5])
        .output_typed(&[2, 7], DType::Int64);
    assert_eq!(counts(&l), (20, 20 * F32, 14 * I64, 20));
}

#[test]
fn unique_compares_every_slice_with_the_uniques() {
    // Flattened: n = |X| = 10 elements against u = 6 uniques: 60.
    let flat = layer("Unique")
        .input(&[2, 5])
        .output(&[6])
        .output_typed(&[6], DType::Int64)
        .output_typed(&[10], DType::Int64)
        .output_typed(&[6], DType::Int64);
    assert_eq!(
        counts(&flat),
        (60, 10 * F32, 6 * F32 + (6 + 10 + 6) * I64, 60)
    );
    // Along axis 0: 4 rows of 3 against 2 unique rows, n * |Y| = 4 * 6 = 24.
    let rows = layer("Unique")
        .input(&[4, 3])
        .output(&[2, 3])
        .int("axis", 0);
    assert_eq!(counts(&rows), (24, 12 * F32, 6 * F32, 24));
    // A negative axis: 4 columns of 3 against 2 unique columns.
    let cols = layer("Unique")
        .input(&[3, 4])
        .output(&[3, 2])
        .int("axis", -1);
    assert_eq!(cols.eval(true).flops, 24);
}

#[test]
fn non_max_suppression_counts_every_pair() {
    // B = 1, C = 2 classes, S = 5 boxes: 10 pairs. Per class: 5 threshold
    // tests + 5 * 3 areas + 14 * 10 = 160; 320 in all.
    let l = |cpb: i64, score: bool| {
        let l = layer("NonMaxSuppression")
            .input(&[1, 5, 4])
            .input(&[1, 2, 5])
            .input_typed(&[1], DType::Int64)
            .input(&[1]);
        let l = if score { l.input(&[1]) } else { l.absent() };
        l.output_typed(&[3, 3], DType::Int64)
            .int("center_point_box", cpb)
    };
    let bytes = (20 * F32 + 10 * F32 + I64 + F32 + F32, 9 * I64);
    assert_eq!(counts(&l(0, true)), (320, bytes.0, bytes.1, 320));
    // Centre boxes: 6 more per box, 5 + 45 + 140 = 190 per class.
    assert_eq!(l(1, true).eval(true).flops, 380);
    // No score threshold: 15 + 140 = 155 per class, one scalar less read.
    assert_eq!(counts(&l(0, false)), (310, bytes.0 - F32, bytes.1, 310));
    // Only boxes and scores (opset 10 allows that).
    let bare = layer("NonMaxSuppression")
        .input(&[1, 5, 4])
        .input(&[1, 2, 5])
        .output_typed(&[0, 3], DType::Int64);
    assert_eq!(counts(&bare), (310, 30 * F32, 0, 310));
}

// ---------------------------------------------------------------- sampling grids

#[test]
fn grid_sample_interpolates_like_resize() {
    let l = |mode: &str, opset: i64| {
        layer("GridSample")
            .input(&[1, 3, 16, 16])
            .input(&[1, 4, 4, 2])
            .output(&[1, 3, 4, 4])
            .string("mode", mode)
            .opset(opset)
    };
    // |Y| = 48, |grid| = 32. Bilinear: 4 taps, 9 FLOPs per output; one
    // multiply-add per grid coordinate. Reads min(4 * 48, 768) + 32 floats.
    let read = (4 * 48 + 32) * F32;
    assert_eq!(
        counts(&l("linear", 20)),
        (9 * 48 + 32, read, 48 * F32, 9 * 48 + 64)
    );
    assert_eq!(
        counts(&l("bilinear", 16)),
        (9 * 48 + 32, read, 48 * F32, 9 * 48 + 64)
    );
    // Nearest: one tap, no interpolation.
    assert_eq!(
        counts(&l("nearest", 20)),
        (32, (48 + 32) * F32, 48 * F32, 64)
    );
    // Bicubic: 16 taps, (16 - 1) / 3 = 5 cubic steps of 4 (FMA) or 7;
    // the read is capped at the whole input, 768 floats.
    assert_eq!(
        counts(&l("cubic", 20)),
        (20 * 48 + 32, (768 + 32) * F32, 48 * F32, 35 * 48 + 64)
    );
    // The default mode is (bi)linear in every opset.
    let default = layer("GridSample")
        .input(&[1, 3, 16, 16])
        .input(&[1, 4, 4, 2])
        .output(&[1, 3, 4, 4])
        .opset(16);
    assert_eq!(default.eval(true).flops, 9 * 48 + 32);
}

#[test]
fn affine_grid_is_a_small_matrix_product_per_point() {
    // R = 2: |grid| = 2 * 5 * 6 * 2 = 120 coordinates of 2 multiply-adds.
    let l = layer("AffineGrid")
        .input(&[2, 2, 3])
        .input_typed(&[4], DType::Int64)
        .output(&[2, 5, 6, 2]);
    assert_eq!(counts(&l), (240, 12 * F32, 120 * F32, 480));
    assert_eq!(param(&l.eval(true), "size"), "[5, 6]");
}

// ---------------------------------------------------------------- signal processing

#[test]
fn dft_counts_the_naive_transform() {
    // Real input, n = 16 along axis -2 (opset 20's default): 32 complex
    // outputs (64 values) of 16 taps, 1 multiply-add per value and tap.
    let real = layer("DFT")
        .input(&[2, 16, 1])
        .output(&[2, 16, 2])
        .opset(20);
    assert_eq!(
        counts(&real),
        (32 * 16 * 2, 32 * F32, 64 * F32, 32 * 16 * 4)
    );
    assert_eq!(param(&real.eval(true), "taps"), "16");
    // One-sided: 9 bins of the same 16 taps.
    let onesided = layer("DFT")
        .input(&[2, 16, 1])
        .output(&[2, 9, 2])
        .int("onesided", 1)
        .opset(20);
    assert_eq!(onesided.eval(true).flops, 18 * 16 * 2);
    // Complex inverse: 4 multiply-adds per tap, and a division per output.
    let inverse = layer("DFT")
        .input(&[2, 16, 2])
        .output(&[2, 16, 2])
        .int("inverse", 1)
        .opset(20);
    assert_eq!(
        counts(&inverse),
        (32 * 16 * 4 + 64, 64 * F32, 64 * F32, 32 * 16 * 8 + 64)
    );
    // dft_length truncating to 8: 8 taps.
    let truncated = layer("DFT")
        .input(&[1, 16, 1])
        .input_typed(&[], DType::Int64)
        .output(&[1, 8, 2])
        .opset(20);
    assert_eq!(truncated.eval(true).flops, 8 * 8 * 2);
    // IRFFT (ONNX's test_dft_irfft_opset19): 6 complex bins to 10 real
    // values along axis 1; each of the |Y| = 100 values sums the 6 bins at 2
    // multiply-adds each, then one division.
    let irfft = layer("DFT")
        .input(&[1, 6, 10, 2])
        .output(&[1, 10, 10, 1])
        .int("onesided", 1)
        .int("inverse", 1)
        .int("axis", 1)
        .opset(19);
    assert_eq!(
        counts(&irfft),
        (100 * 6 * 2 + 100, 120 * F32, 100 * F32, 100 * 6 * 4 + 100)
    );
    // Opset 17: the axis is an attribute, 1 by default.
    let old = layer("DFT")
        .input(&[1, 8, 3, 1])
        .output(&[1, 8, 3, 2])
        .opset(17);
    assert_eq!(old.eval(true).flops, 24 * 8 * 2);
    let old_axis2 = layer("DFT")
        .input(&[1, 8, 3, 1])
        .output(&[1, 8, 3, 2])
        .int("axis", 2)
        .opset(17);
    assert_eq!(old_axis2.eval(true).flops, 24 * 3 * 2);
}

#[test]
fn stft_windows_and_transforms_every_frame() {
    // 64 real samples, a 16-sample window, step 8: 7 frames of 9 bins.
    // Per frame: 16 window products + 9 * 16 * 2 = 304 (592 without FMA).
    let l = layer("STFT")
        .input(&[1, 64, 1])
        .input_typed(&[], DType::Int64)
        .input(&[16])
        .absent()
        .output(&[1, 7, 9, 2]);
    assert_eq!(counts(&l), (7 * 304, 80 * F32, 126 * F32, 7 * 592));
    assert_eq!(param(&l.eval(true), "frame"), "16");
    // No window, frame_length 16: n = 2 * (9 - 1) = 16, no products.
    let bare = layer("STFT")
        .input(&[1, 64, 1])
        .input_typed(&[], DType::Int64)
        .absent()
        .input_typed(&[], DType::Int64)
        .output(&[1, 7, 9, 2]);
    assert_eq!(counts(&bare), (7 * 288, 64 * F32, 126 * F32, 7 * 576));
}

#[test]
fn window_functions_count_per_element() {
    let w = |op: &str| layer(op).input_typed(&[], DType::Int64).output(&[10]);
    assert_eq!(counts(&w("HannWindow")), (30, 0, 10 * F32, 40));
    assert_eq!(counts(&w("HammingWindow")), (30, 0, 10 * F32, 40));
    assert_eq!(counts(&w("BlackmanWindow")), (60, 0, 10 * F32, 80));
}

#[test]
fn mel_weight_matrix_counts_edges_and_weights() {
    // 257 bins x 40 mel bins: 4 * 10280 + 8 * 42 + 8 (9 * 42 + 8 without FMA).
    let l = layer("MelWeightMatrix")
        .input_typed(&[], DType::Int64)
        .input_typed(&[], DType::Int64)
        .input_typed(&[], DType::Int64)
        .input(&[])
        .input(&[])
        .output(&[257, 40]);
    assert_eq!(
        counts(&l),
        (41120 + 336 + 8, 0, 10280 * F32, 41120 + 378 + 8)
    );
}
