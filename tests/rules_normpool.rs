//! Rules of the normalization, pooling and reduction families added for issue 4:
//! every rule evaluated on a concrete node, the expected numbers worked out
//! by hand next to them.

use crate::common::*;

use c3::ir::DType;

// ------------------------------------------------------------ normalization

#[test]
fn layer_normalization_counts_rows_of_the_trailing_axes() {
    // X [2, 3, 4], axis -1: rows of c = 4, 6 rows.
    let l = layer("LayerNormalization")
        .input(&[2, 3, 4])
        .input(&[4])
        .input(&[4])
        .output(&[2, 3, 4]);
    let on = l.eval(true);
    assert_eq!(on.flops, (5 * 4 + 4) * 6); // (5c + 4) per row = 144
    let off = l.eval(false);
    assert_eq!(off.flops, (7 * 4 + 3) * 6); // (7c + 3) per row with a bias = 186
    assert_eq!(on.mread, (24 + 4 + 4) * F32);
    assert_eq!(on.mwrite, 24 * F32);
    assert_eq!(param(&on, "axis"), "-1");

    // No bias: nothing changes with FMA (the scale is a plain multiply), 6c + 3 without.
    let nob = layer("LayerNormalization")
        .input(&[2, 3, 4])
        .input(&[4])
        .absent()
        .output(&[2, 3, 4]);
    assert_eq!(nob.eval(true).flops, 24 * 6); // (5c + 4) * 6
    assert_eq!(nob.eval(false).flops, 27 * 6); // (6c + 3) * 6
    assert_eq!(nob.eval(true).mread, (24 + 4) * F32);

    // axis 1: one row of c = 12 per batch entry; Mean and InvStdDev written.
    let ax = layer("LayerNormalization")
        .input(&[2, 3, 4])
        .input(&[3, 4])
        .input(&[3, 4])
        .output(&[2, 3, 4])
        .output(&[2, 1, 1])
        .output(&[2, 1, 1])
        .int("axis", 1);
    let ev = ax.eval(true);
    assert_eq!(ev.flops, (5 * 12 + 4) * 2); // 128
    assert_eq!(ax.eval(false).flops, (7 * 12 + 3) * 2); // 174
    assert_eq!(ev.mread, (24 + 12 + 12) * F32);
    assert_eq!(ev.mwrite, (24 + 2 + 2) * F32);
}

#[test]
fn rms_normalization_counts_squares_mean_root_division_and_scale() {
    // X [2, 8], axis -1: 2 rows of c = 8.
    let l = layer("RMSNormalization")
        .input(&[2, 8])
        .input(&[8])
        .output(&[2, 8]);
    assert_eq!(l.eval(true).flops, (3 * 8 + 3) * 2); // 54
    assert_eq!(l.eval(false).flops, (4 * 8 + 2) * 2); // 68
    assert_eq!(l.eval(true).mread, (16 + 8) * F32);
    assert_eq!(l.eval(true).mwrite, 16 * F32);
    // axis 0: a single row of 16.
    let all = layer("RMSNormalization")
        .input(&[2, 8])
        .input(&[2, 8])
        .output(&[2, 8])
        .int("axis", 0);
    assert_eq!(all.eval(false).flops, 4 * 16 + 2); // 66
}

#[test]
fn group_normalization_counts_per_group_statistics() {
    // X [2, 6, 4, 4] = 192 elements, 3 groups: N * G = 6 groups of 32.
    let l = layer("GroupNormalization")
        .input(&[2, 6, 4, 4])
        .input(&[6])
        .input(&[6])
        .output(&[2, 6, 4, 4])
        .int("num_groups", 3);
    let on = l.eval(true);
    assert_eq!(on.flops, 5 * 192 + 5 * 6); // (4g + 5) * 6 + 192 = 990
    assert_eq!(l.eval(false).flops, 7 * 192 + 4 * 6); // (5g + 4) * 6 + 2 * 192 = 1368
    assert_eq!(on.mread, (192 + 6 + 6) * F32);
    assert_eq!(on.mwrite, 192 * F32);
    assert_eq!(param(&on, "groups"), "3");

    // Without num_groups (invalid, but it must evaluate): one group per instance.
    let none = layer("GroupNormalization")
        .input(&[2, 6, 4, 4])
        .input(&[6])
        .input(&[6])
        .output(&[2, 6, 4, 4]);
    assert_eq!(none.eval(true).flops, 5 * 192 + 5 * 2); // 970
    // More groups than channels: counted as C groups.
    let many = layer("GroupNormalization")
        .input(&[2, 6, 4, 4])
        .input(&[6])
        .input(&[6])
        .output(&[2, 6, 4, 4])
        .int("num_groups", 10);
    assert_eq!(many.eval(true).flops, 5 * 192 + 5 * 12); // 1020
}

#[test]
fn instance_normalization_counts_per_instance_and_channel() {
    // input [2, 3, 5, 5] = 150 elements, 6 pairs of c = 25.
    let l = layer("InstanceNormalization")
        .input(&[2, 3, 5, 5])
        .input(&[3])
        .input(&[3])
        .output(&[2, 3, 5, 5]);
    assert_eq!(l.eval(true).flops, 5 * 150 + 3 * 6); // (5c + 3) * 6 = 768
    assert_eq!(l.eval(false).flops, 7 * 150 + 2 * 6); // (7c + 2) * 6 = 1062
    assert_eq!(l.eval(true).mread, (150 + 3 + 3) * F32);
    assert_eq!(l.eval(true).mwrite, 150 * F32);
}

#[test]
fn mean_variance_normalization_finds_the_group_size_from_axes() {
    // X [2, 3, 4, 5] = 120, default axes [0, 2, 3]: groups of 2 * 4 * 5 = 40, 3 groups.
    let l = layer("MeanVarianceNormalization")
        .input(&[2, 3, 4, 5])
        .output(&[2, 3, 4, 5]);
    assert_eq!(l.eval(true).flops, 4 * 120 + 5 * 3); // (4r + 5) * 3 = 495
    assert_eq!(l.eval(false).flops, 5 * 120 + 4 * 3); // (5r + 4) * 3 = 612
    assert_eq!(l.eval(true).mread, 120 * F32);
    assert_eq!(l.eval(true).mwrite, 120 * F32);

    // A negative axis: axes [-1] reduces the last dimension, 24 groups of 5.
    let last = layer("MeanVarianceNormalization")
        .input(&[2, 3, 4, 5])
        .output(&[2, 3, 4, 5])
        .ints("axes", &[-1]);
    assert_eq!(last.eval(true).flops, 4 * 120 + 5 * 24); // 600
    assert_eq!(last.eval(false).flops, 5 * 120 + 4 * 24); // 696

    // Mixed signs: axes [0, -2] = dims 0 and 2, groups of 2 * 4 = 8, 15 groups.
    let mixed = layer("MeanVarianceNormalization")
        .input(&[2, 3, 4, 5])
        .output(&[2, 3, 4, 5])
        .ints("axes", &[0, -2]);
    assert_eq!(mixed.eval(true).flops, 4 * 120 + 5 * 15); // 555
}

// ------------------------------------------------------------------ pooling

#[test]
fn lp_pool_counts_powers_sum_and_root_per_window() {
    // X [1, 2, 6, 6], 3x3 windows, stride 3: Y [1, 2, 2, 2], k = 9.
    let l = |p: Option<f64>| {
        let l = layer("LpPool")
            .input(&[1, 2, 6, 6])
            .output(&[1, 2, 2, 2])
            .ints("kernel_shape", &[3, 3])
            .ints("strides", &[3, 3]);
        match p {
            Some(p) if p.fract() == 0.0 && p > 2.5 => l.int("p", p as i64),
            Some(p) => l.float("p", p).opset(2),
            None => l,
        }
    };
    let p2 = l(None);
    assert_eq!(p2.eval(true).flops, 8 * (9 + 1)); // p = 2 with FMA: k + 1 per output
    assert_eq!(p2.eval(false).flops, 8 * 2 * 9); // 2k per output = 144
    assert_eq!(p2.eval(true).mread, 72 * F32);
    assert_eq!(p2.eval(true).mwrite, 8 * F32);
    // Opset 2 writes p as a float: 2.0 still fuses.
    assert_eq!(l(Some(2.0)).eval(true).flops, 80);
    assert_eq!(l(Some(1.0)).eval(true).flops, 144); // p = 1: nothing fuses
    assert_eq!(l(Some(3.0)).eval(true).flops, 144); // p = 3 (int attribute)
    assert_eq!(param(&p2.eval(true), "norm"), "2");
}

#[test]
fn global_lp_pool_counts_the_whole_spatial_extent() {
    // X [2, 3, 4, 4] = 96, 6 outputs of 16 positions.
    let l = layer("GlobalLpPool")
        .input(&[2, 3, 4, 4])
        .output(&[2, 3, 1, 1]);
    assert_eq!(l.eval(true).flops, 96 + 6); // (s + 1) per output
    assert_eq!(l.eval(false).flops, 2 * 96); // 2s per output
    assert_eq!(l.eval(true).mread, 96 * F32);
    assert_eq!(l.eval(true).mwrite, 6 * F32);
    let p3 = layer("GlobalLpPool")
        .input(&[2, 3, 4, 4])
        .output(&[2, 3, 1, 1])
        .int("p", 3);
    assert_eq!(p3.eval(true).flops, 2 * 96);
}

#[test]
fn max_roi_pool_assumes_rois_spanning_the_map() {
    // X [1, 4, 14, 14] = 784, 3 RoIs, 7x7 bins: Y [3, 4, 7, 7] = 588, bins of 2 * 2.
    let l = layer("MaxRoiPool")
        .input(&[1, 4, 14, 14])
        .input(&[3, 5])
        .output(&[3, 4, 7, 7])
        .ints("pooled_shape", &[7, 7]);
    let ev = l.eval(true);
    assert_eq!(ev.flops, 588 * (4 - 1)); // 1764
    assert_eq!(l.eval(false).flops, 1764);
    // min(4 * 588, 784) of X, plus the 15 RoI coordinates.
    assert_eq!(ev.mread, (784 + 15) * F32);
    assert_eq!(ev.mwrite, 588 * F32);
    assert_eq!(param(&ev, "pooled"), "[7, 7]");
    // 5x5 bins of a 14x14 map: ceil(14 / 5) = 3, bins of 9.
    let five = layer("MaxRoiPool")
        .input(&[1, 4, 14, 14])
        .input(&[3, 5])
        .output(&[3, 4, 5, 5]);
    assert_eq!(five.eval(true).flops, 300 * 8); // 2400
}

#[test]
fn roi_align_counts_bilinear_samples_per_bin() {
    // X [1, 8, 16, 16] = 2048, 5 RoIs, Y [5, 8, 7, 7] = 1960 bins.
    let l = |mode: &str, ratio: i64| {
        layer("RoiAlign")
            .input(&[1, 8, 16, 16])
            .input(&[5, 4])
            .input_typed(&[5], DType::Int64)
            .output(&[5, 8, 7, 7])
            .string("mode", mode)
            .int("sampling_ratio", ratio)
            .int("output_height", 7)
            .int("output_width", 7)
    };
    // sampling_ratio 2: n = 4 samples of 4 taps per bin.
    assert_eq!(l("avg", 2).eval(true).flops, 1960 * (4 * 4 + 1)); // 4n + 1 = 33320
    assert_eq!(l("avg", 2).eval(false).flops, 1960 * (8 * 4)); // 8n = 62720
    assert_eq!(l("max", 2).eval(true).flops, 1960 * (5 * 4 - 1)); // 5n - 1 = 37240
    assert_eq!(l("max", 2).eval(false).flops, 1960 * (8 * 4 - 1)); // 8n - 1 = 60760
    // Adaptive: ceil(16 / 7) = 3 per axis, n = 9.
    assert_eq!(l("avg", 0).eval(true).flops, 1960 * (4 * 9 + 1)); // 72520
    let ev = l("avg", 2).eval(true);
    // min(4 * 4 * 1960, 2048) of X, 20 RoI coordinates, 5 int64 indices.
    assert_eq!(ev.mread, (2048 + 20) * F32 + 5 * 8);
    assert_eq!(ev.mwrite, 1960 * F32);
    assert_eq!(param(&ev, "mode"), "\"avg\"");

    // Few bins on a large map: only the taps are read.
    let small = layer("RoiAlign")
        .input(&[1, 8, 64, 64])
        .input(&[1, 4])
        .input_typed(&[1], DType::Int64)
        .output(&[1, 8, 2, 2])
        .int("sampling_ratio", 1);
    let ev = small.eval(true);
    assert_eq!(ev.flops, 32 * 5); // n = 1: 4n + 1
    assert_eq!(ev.mread, 4 * 32 * F32 + 4 * F32 + 8); // 4 taps * 32 bins, RoI, index
}

// --------------------------------------------------------------- reductions

fn reduce(op: &str) -> Layer {
    // data [4, 5, 6] = 120 reduced over axis 1 to [4, 1, 6] = 24.
    layer(op)
        .input(&[4, 5, 6])
        .output(&[4, 1, 6])
        .ints("axes", &[1])
}

#[test]
fn reductions_count_the_elementwise_part_plus_the_reduction() {
    let cases: &[(&str, u64, u64)] = &[
        // (op, FMA on, FMA off)
        ("ReduceMean", 96 + 24, 96 + 24),        // adds + divisions
        ("ReduceProd", 96, 96),                  // multiplications
        ("ReduceL1", 120 + 96, 120 + 96),        // abs + adds
        ("ReduceL2", 120 + 24, 120 + 96 + 24),   // (squares +) adds + roots
        ("ReduceSumSquare", 120, 120 + 96),      // (squares +) adds
        ("ReduceLogSum", 96 + 24, 96 + 24),      // adds + logs
        ("ReduceLogSumExp", 120 + 96 + 24, 240), // exps + adds + logs
    ];
    for &(op, on, off) in cases {
        let l = reduce(op);
        assert_eq!(l.eval(true).flops, on, "{op} with FMA");
        assert_eq!(l.eval(false).flops, off, "{op} without FMA");
        assert_eq!(l.eval(true).mread, 120 * F32, "{op}");
        assert_eq!(l.eval(true).mwrite, 24 * F32, "{op}");
        assert_eq!(param(&l.eval(true), "axis"), "[1]", "{op}");
    }
}

#[test]
fn reductions_take_axes_as_an_unread_input_and_never_go_negative() {
    // Opset 18 style: axes as an int64 input, metadata, not read.
    let l = layer("ReduceMean")
        .input(&[4, 5, 6])
        .input_typed(&[1], DType::Int64)
        .output(&[4, 6])
        .int("keepdims", 0);
    assert_eq!(l.eval(true).flops, 120); // 96 adds + 24 divisions
    assert_eq!(l.eval(true).mread, 120 * F32);

    // noop_with_empty_axes: the element-wise part remains.
    let noop = layer("ReduceLogSum")
        .input(&[4, 5, 6])
        .output(&[4, 5, 6])
        .int("noop_with_empty_axes", 1);
    assert_eq!(noop.eval(true).flops, 120); // one log per element
    let sq = layer("ReduceSumSquare")
        .input(&[4, 5, 6])
        .output(&[4, 5, 6])
        .int("noop_with_empty_axes", 1);
    assert_eq!(sq.eval(false).flops, 120); // one square per element

    // An empty input reduced to a non-empty output: no negative additions.
    let empty = layer("ReduceProd").input(&[0, 3]).output(&[1, 3]);
    assert_eq!(empty.eval(true).flops, 0);
    let mean = layer("ReduceMean").input(&[0, 3]).output(&[1, 3]);
    assert_eq!(mean.eval(true).flops, 3); // 0 adds + 3 divisions
}

#[test]
fn cumulative_scans_count_one_op_per_element() {
    for op in ["CumSum", "CumProd"] {
        // x [3, 4], axis a 0-D int64 input (metadata, not read).
        let l = layer(op)
            .input(&[3, 4])
            .input_typed(&[], DType::Int64)
            .output(&[3, 4])
            .int("exclusive", 1);
        let ev = l.eval(true);
        assert_eq!(ev.flops, 12, "{op}"); // |x|
        assert_eq!(l.eval(false).flops, 12, "{op}");
        assert_eq!(ev.mread, 12 * F32, "{op}");
        assert_eq!(ev.mwrite, 12 * F32, "{op}");
        assert_eq!(param(&ev, "exclusive"), "1", "{op}");
    }
}
