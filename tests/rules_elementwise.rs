//! The element-wise rules: unary and binary math (rules/math.yaml), the
//! activations beyond the original tool's (rules/activation.yaml), and
//! comparisons, logic, Where and Cast (rules/logic.yaml).

use crate::common::*;

use c3::ir::DType;

/// Bytes per int64 element.
const I64: u64 = 8;
/// Bytes per bool element.
const BOOL: u64 = 1;

/// A float32 [2, 3, 4] tensor: 24 elements.
const S: [u64; 3] = [2, 3, 4];
const N: u64 = 24;

/// (flops with FMA, flops without, mread, mwrite) of a one-input op on S.
fn unary(op: &str) -> (u64, u64, u64, u64) {
    let l = layer(op).input(&S).output(&S);
    let on = l.eval(true);
    let off = l.eval(false);
    assert_eq!((on.mread, on.mwrite), (off.mread, off.mwrite), "{op}");
    (on.flops, off.flops, on.mread, on.mwrite)
}

/// Asserts a one-input float32 op costs `on` (FMA) and `off` FLOPs per
/// element and reads and writes S once.
fn per_element(op: &str, on: u64, off: u64) {
    assert_eq!(
        unary(op),
        (on * N, off * N, N * F32, N * F32),
        "{op}: {on} (FMA) / {off} FLOPs per element"
    );
}

#[test]
fn one_flop_unary_math() {
    // Rounding, sign bit, negation, reciprocal (one division) and each
    // transcendental: 1 FLOP per element, 24 * 4 bytes in and out.
    for op in [
        "Abs",
        "Neg",
        "Reciprocal",
        "Floor",
        "Ceil",
        "Round",
        "Sqrt",
        "Exp",
        "Log",
        "Erf",
        "Sin",
        "Cos",
        "Tan",
        "Asin",
        "Acos",
        "Atan",
        "Sinh",
        "Cosh",
        "Asinh",
        "Acosh",
        "Atanh",
        "Tanh",
    ] {
        per_element(op, 1, 1);
    }
}

#[test]
fn sign_is_two_comparisons() {
    // x > 0 and x < 0; the select of 1, -1 or 0 is free.
    per_element("Sign", 2, 2);
}

#[test]
fn binary_math_with_broadcasting() {
    // A [2, 3, 4] against B [4]: one op per output element (24); A read
    // whole (96 bytes), B once (16 bytes).
    for op in [
        "Pow",
        "Mod",
        "BitShift",
        "BitwiseAnd",
        "BitwiseOr",
        "BitwiseXor",
    ] {
        let ev = layer(op).input(&S).input(&[4]).output(&S).eval(true);
        assert_eq!(ev.flops, N, "{op}");
        assert_eq!(ev.mread, (N + 4) * F32, "{op}");
        assert_eq!(ev.mwrite, N * F32, "{op}");
        assert_eq!(
            layer(op).input(&S).input(&[4]).output(&S).eval(false).flops,
            N
        );
    }
    let ev = layer("Mod")
        .input(&S)
        .input(&[4])
        .output(&S)
        .int("fmod", 1)
        .eval(true);
    assert_eq!(param(&ev, "fmod"), "1");
    // Integer bit ops on int64: bytes at 8 per element.
    let ev = layer("BitShift")
        .input_typed(&[10], DType::Int64)
        .input_typed(&[1], DType::Int64)
        .output_typed(&[10], DType::Int64)
        .string("direction", "LEFT")
        .eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (10, 11 * I64, 10 * I64));
    assert_eq!(param(&ev, "direction"), "\"LEFT\"");
    let ev = layer("BitwiseNot")
        .input_typed(&[10], DType::Int64)
        .output_typed(&[10], DType::Int64)
        .eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (10, 10 * I64, 10 * I64));
}

#[test]
fn variadic_max_min_mean() {
    // Three inputs [2, 3, 4], [3, 4], [4] to a [2, 3, 4] output.
    let l = |op: &str| layer(op).input(&S).input(&[3, 4]).input(&[4]).output(&S);
    // Max, Min: n - 1 = 2 comparisons per output element = 48.
    // Mean: 2 additions and a division = 3 * 24 = 72.
    for (op, flops) in [("Max", 2 * N), ("Min", 2 * N), ("Mean", 3 * N)] {
        for fma in [true, false] {
            let ev = l(op).eval(fma);
            assert_eq!(ev.flops, flops, "{op}");
            assert_eq!(ev.mread, (24 + 12 + 4) * F32, "{op}");
            assert_eq!(ev.mwrite, N * F32, "{op}");
        }
    }
    // One input: Max is a copy (0), Mean still divides by 1 (24).
    assert_eq!(layer("Max").input(&S).output(&S).eval(true).flops, 0);
    assert_eq!(layer("Mean").input(&S).output(&S).eval(true).flops, N);
}

#[test]
fn clip_counts_the_bounds_given() {
    // Opset 11+: both bounds as scalar inputs, 2 comparisons per element,
    // the two scalars read (4 bytes each).
    let ev = layer("Clip")
        .input(&S)
        .input(&[])
        .input(&[])
        .output(&S)
        .eval(false);
    assert_eq!(
        (ev.flops, ev.mread, ev.mwrite),
        (2 * N, (N + 2) * F32, N * F32)
    );
    assert_eq!(param(&ev, "bounds"), "2");
    // Only a lower bound (max absent): 1 per element, as Relu.
    let ev = layer("Clip")
        .input(&S)
        .input(&[])
        .absent()
        .output(&S)
        .eval(true);
    assert_eq!((ev.flops, ev.mread), (N, (N + 1) * F32));
    // Only an upper bound (min absent, its slot empty).
    let ev = layer("Clip")
        .input(&S)
        .absent()
        .input(&[])
        .output(&S)
        .eval(true);
    assert_eq!(ev.flops, N);
    // No bound at all: nothing to compare, still one pass over the data.
    let ev = layer("Clip").input(&S).output(&S).eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (0, N * F32, N * F32));
    // Opset 6: bounds are attributes; both given = 2 per element.
    let ev = layer("Clip")
        .input(&S)
        .output(&S)
        .float("min", 0.0)
        .float("max", 6.0)
        .opset(6)
        .eval(true);
    assert_eq!((ev.flops, ev.mread), (2 * N, N * F32));
    let ev = layer("Clip")
        .input(&S)
        .output(&S)
        .float("min", 0.0)
        .opset(6)
        .eval(true);
    assert_eq!(ev.flops, N);
}

#[test]
fn piecewise_and_smooth_activations() {
    // Elu: exp, -1, *alpha, compare = 4 (no multiply-add as written).
    per_element("Elu", 4, 4);
    // Selu: exp, alpha*e - alpha (FMA 1 / 2), compare, *gamma = 4 / 5.
    per_element("Selu", 4, 5);
    // Celu: max, /alpha, exp, -1, *alpha, min, + = 7.
    per_element("Celu", 7, 7);
    // HardSigmoid: alpha*x + beta (1 / 2), min, max = 3 / 4.
    per_element("HardSigmoid", 3, 4);
    // HardSwish: HardSigmoid and *x = 4 / 5.
    per_element("HardSwish", 4, 5);
    // Softplus: exp, +1, log = 3.
    per_element("Softplus", 3, 3);
    // Softsign: abs, +1, divide = 3.
    per_element("Softsign", 3, 3);
    // ThresholdedRelu: one comparison = 1.
    per_element("ThresholdedRelu", 1, 1);
    // Shrink: two comparisons, + bias, - bias = 4.
    per_element("Shrink", 4, 4);
    // Mish: exp, +1, log, tanh, *x = 5.
    per_element("Mish", 5, 5);
    // Swish: *alpha, Sigmoid's 4, *x = 6.
    per_element("Swish", 6, 6);
}

#[test]
fn activation_params() {
    let ev = layer("Elu")
        .input(&S)
        .output(&S)
        .float("alpha", 0.5)
        .eval(true);
    assert_eq!(param(&ev, "alpha"), "0.5");
    let ev = layer("Shrink")
        .input(&S)
        .output(&S)
        .float("lambd", 1.5)
        .eval(true);
    assert_eq!(param(&ev, "lambd"), "1.5");
}

#[test]
fn gelu_exact_and_tanh() {
    // Exact: /sqrt2, erf, +1, *x, *0.5 = 5 per element, FMA or not.
    per_element("Gelu", 5, 5);
    let l = layer("Gelu")
        .input(&S)
        .output(&S)
        .string("approximate", "none");
    assert_eq!(l.eval(false).flops, 5 * N);
    // Tanh: x*x, *x, 0.044715*x^3 + x (FMA 1 / 2), *sqrt(2/pi), tanh, +1,
    // *x, *0.5 = 8 with FMA, 9 without.
    let l = layer("Gelu")
        .input(&S)
        .output(&S)
        .string("approximate", "tanh");
    assert_eq!(l.eval(true).flops, 8 * N);
    assert_eq!(l.eval(false).flops, 9 * N);
    assert_eq!(param(&l.eval(true), "approximate"), "\"tanh\"");
}

#[test]
fn hardmax_axis_by_opset() {
    // Opset 13, axis -1: rows of c = 4, 6 rows, 3 comparisons each = 18.
    let ev = layer("Hardmax").input(&S).output(&S).eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (18, N * F32, N * F32));
    // axis 1 at opset 13: c = 3, 8 rows * 2 = 16.
    let ev = layer("Hardmax")
        .input(&S)
        .output(&S)
        .int("axis", 1)
        .eval(true);
    assert_eq!(ev.flops, 16);
    // Opset 11, default axis 1 flattens [3, 4]: c = 12, 2 rows * 11 = 22.
    let ev = layer("Hardmax").input(&S).output(&S).opset(11).eval(true);
    assert_eq!(ev.flops, 22);
    assert_eq!(param(&ev, "axis"), "1");
}

#[test]
fn logsoftmax_is_softmax_plus_a_log() {
    // Opset 13, axis -1, c = 4: 3 * 24 (exp, divide, log) + 6 * 3 = 90.
    let l = layer("LogSoftmax").input(&S).output(&S);
    assert_eq!(l.eval(true).flops, 3 * N + 6 * 3);
    assert_eq!(l.eval(false).flops, 90);
    let soft = layer("Softmax").input(&S).output(&S).eval(true).flops;
    assert_eq!(l.eval(true).flops, soft + N);
    // Opset 11, axis 1: c = 12, 2 rows: 72 + 2 * 11 = 94.
    let ev = layer("LogSoftmax")
        .input(&S)
        .output(&S)
        .opset(11)
        .eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (94, N * F32, N * F32));
    // Opset 11, axis 0: c = 24, one row: 72 + 23 = 95.
    let ev = layer("LogSoftmax")
        .input(&S)
        .output(&S)
        .int("axis", 0)
        .opset(11)
        .eval(true);
    assert_eq!(ev.flops, 95);
}

#[test]
fn comparisons_write_booleans() {
    // A [2, 3, 4] float against B [3, 1]: one comparison per output element
    // (24); reads 24 + 3 floats, writes 24 one-byte booleans.
    for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"] {
        for fma in [true, false] {
            let ev = layer(op)
                .input(&S)
                .input(&[3, 1])
                .output_typed(&S, DType::Bool)
                .eval(fma);
            assert_eq!(
                (ev.flops, ev.mread, ev.mwrite),
                (N, (N + 3) * F32, N * BOOL),
                "{op}"
            );
        }
    }
}

#[test]
fn boolean_logic() {
    // And/Or/Xor on booleans [2, 3, 4] and [4]: 24 ops, 28 bytes in, 24 out.
    for op in ["And", "Or", "Xor"] {
        let ev = layer(op)
            .input_typed(&S, DType::Bool)
            .input_typed(&[4], DType::Bool)
            .output_typed(&S, DType::Bool)
            .eval(true);
        assert_eq!(
            (ev.flops, ev.mread, ev.mwrite),
            (N, 28 * BOOL, N * BOOL),
            "{op}"
        );
    }
    let ev = layer("Not")
        .input_typed(&S, DType::Bool)
        .output_typed(&S, DType::Bool)
        .eval(false);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (N, N * BOOL, N * BOOL));
}

#[test]
fn nan_and_inf_tests() {
    // One test per element, float32 in, bool out.
    for op in ["IsNaN", "IsInf"] {
        let ev = layer(op).input(&S).output_typed(&S, DType::Bool).eval(true);
        assert_eq!(
            (ev.flops, ev.mread, ev.mwrite),
            (N, N * F32, N * BOOL),
            "{op}"
        );
    }
    // Only positive infinity: still one test per element.
    let ev = layer("IsInf")
        .input(&S)
        .output_typed(&S, DType::Bool)
        .int("detect_negative", 0)
        .eval(false);
    assert_eq!(ev.flops, N);
    assert_eq!(param(&ev, "detect_negative"), "0");
    assert_eq!(param(&ev, "detect_positive"), "1");
}

#[test]
fn where_is_data_movement() {
    // condition bool [2, 1, 4], X float [2, 3, 4], Y float [] (a scalar):
    // no FLOPs; reads 8 bytes + 96 + 4, writes 96.
    for fma in [true, false] {
        let ev = layer("Where")
            .input_typed(&[2, 1, 4], DType::Bool)
            .input(&S)
            .input(&[])
            .output(&S)
            .eval(fma);
        assert_eq!(
            (ev.flops, ev.mread, ev.mwrite),
            (0, 8 * BOOL + N * F32 + F32, N * F32)
        );
    }
}

#[test]
fn cast_moves_bytes_at_both_types() {
    // float32 -> float16: no FLOPs, 24 * 4 bytes read, 24 * 2 written.
    let ev = layer("Cast")
        .input(&S)
        .output_typed(&S, DType::Float16)
        .int("to", 10)
        .eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (0, N * F32, N * 2));
    // int64 -> float32 without FMA: the same, 24 * 8 read, 24 * 4 written.
    let ev = layer("Cast")
        .input_typed(&S, DType::Int64)
        .output(&S)
        .int("to", 1)
        .eval(false);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (0, N * I64, N * F32));
    // CastLike: the target tensor only lends its type and is not read.
    let ev = layer("CastLike")
        .input(&S)
        .input_typed(&[1000], DType::Float16)
        .output_typed(&S, DType::Float16)
        .eval(true);
    assert_eq!((ev.flops, ev.mread, ev.mwrite), (0, N * F32, N * 2));
}
