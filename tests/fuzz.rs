//! Replays what the fuzz targets start from and what they found.
//!
//! `tests/fixtures/fuzz/TARGET/` holds every input that once crashed, hung or
//! ran away with memory in a fuzz target (scripts/fuzz.sh); each must now run
//! through the same entry point (src/fuzz.rs) without a panic, and through
//! the `c3` binary with a one-line error or a report. The seed corpora in
//! `fuzz/corpus/` are real rules and traces: they must all be accepted, or
//! the fuzzers would start from nothing but errors.

use std::path::{Path, PathBuf};

use crate::common::cli::C3;

/// The files of `dir` (a path in the repository), hidden ones aside, sorted.
fn files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
        })
        .collect();
    out.sort();
    out
}

/// Runs every file of `tests/fixtures/fuzz/TARGET/` (there must be some)
/// through its entry point (a panic fails the test; an error must be one
/// line) and, with `cli`, through `c3 estimate`. Returns how many of them the
/// entry point refused.
fn replay(target: &str, run: fn(&[u8]) -> c3::error::Result<usize>, cli: bool) -> usize {
    let found = files(&format!("tests/fixtures/fuzz/{target}"));
    assert!(
        !found.is_empty(),
        "tests/fixtures/fuzz/{target} holds no input"
    );
    let mut refused = 0;
    for f in &found {
        if let Err(e) = run(&std::fs::read(f).unwrap()) {
            let e = e.to_string();
            assert_eq!(e.lines().count(), 1, "{}: {e}", f.display());
            refused += 1;
        }
        if cli {
            cli_outcome(&["estimate", f.to_str().unwrap()]);
        }
    }
    refused
}

/// Runs `c3 ARGS` and checks the outcome a user must get: a report (0), or
/// one line on stderr with exit 2 (3 for unsupported operators).
fn cli_outcome(args: &[&str]) {
    let run = C3::new().args(args).run();
    match run.code {
        0 => {}
        code @ (2 | 3) => {
            run.one_line_error(code);
        }
        code => panic!("c3 {args:?}: exit {code}, stderr {}", run.stderr),
    }
}

#[test]
fn found_onnx_inputs_are_errors_not_crashes() {
    // Three files: the Slice and the output-less RMSNormalization are
    // refused, the NaN attribute is costed (tests below).
    assert_eq!(replay("onnx_model", c3::fuzz::onnx, true), 2);
}

#[test]
fn found_rule_files_are_errors_not_crashes() {
    // Rule files need a model to be costed on: the entry point only. The
    // one file (brackets nested 1000 deep) is refused.
    assert_eq!(replay("rule_file", c3::fuzz::rules, false), 1);
}

#[test]
fn found_traces_are_errors_not_crashes() {
    // The one file (JSON nested 10,000 deep) is refused.
    assert_eq!(replay("trace", c3::fuzz::trace, true), 1);
}

/// A fixture of tests/fixtures/fuzz/TARGET.
fn fixture(target: &str, name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz")
        .join(target)
        .join(name);
    std::fs::read(path).unwrap()
}

/// As in tests/hostile.rs (`formula_nested_1000_brackets_deep`): a formula
/// within the length limit whose brackets nest 1000 deep would recurse as
/// deep in the parser; the nesting limit refuses it at the 65th bracket,
/// column 11 + 64 = 75 of line 7.
#[test]
fn a_rule_file_nesting_brackets_1000_deep_is_an_error() {
    let bytes = fixture("rule_file", "brackets_nested_1000_deep.yaml");
    let e = c3::fuzz::rules(&bytes).unwrap_err().to_string();
    assert!(e.contains(":7:75:"), "{e}");
    assert!(
        e.contains("brackets nest deeper than the limit of 64 levels"),
        "{e}"
    );
}

/// As in tests/hostile.rs (`trace_nested_10000_deep`): an attribute of
/// 10,000 nested JSON arrays would recurse as deep in the reader; the
/// nesting limit refuses it.
#[test]
fn a_trace_nesting_json_10000_deep_is_an_error() {
    let bytes = fixture("trace", "json_nested_10000_deep.json");
    let e = c3::fuzz::trace(&bytes).unwrap_err().to_string();
    assert!(
        e.contains("JSON nesting exceeds the limit of 128 levels"),
        "{e}"
    );
}

/// Runs every seed of `fuzz/corpus/TARGET` (at least `min` of them), fails
/// on any error, and returns how many there are and the names of those that
/// costed no layer.
fn seeds_costing_nothing(
    target: &str,
    min: usize,
    run: fn(&[u8]) -> c3::error::Result<usize>,
) -> (usize, Vec<String>) {
    let seeds = files(&format!("fuzz/corpus/{target}"));
    assert!(seeds.len() >= min, "{} seeds", seeds.len());
    let mut nothing = Vec::new();
    for f in &seeds {
        match run(&std::fs::read(f).unwrap()) {
            Err(e) => panic!("{}: {e}", f.display()),
            Ok(0) => nothing.push(f.file_name().unwrap().to_string_lossy().into_owned()),
            Ok(_) => {}
        }
    }
    (seeds.len(), nothing)
}

#[test]
fn every_rule_seed_loads_and_evaluates() {
    // One per rule of rules/*.yaml (devices aside), their docs cut short.
    let (seeds, unevaluated) = seeds_costing_nothing("rule_file", 240, c3::fuzz::rules);
    // Rules whose inputs none of the six layouts fit (a LSTM's weights, a
    // Loop's body) are only parsed and compiled; at least six in seven
    // must evaluate on some layout.
    eprintln!(
        "{} of {seeds} unevaluated: {unevaluated:?}",
        unevaluated.len()
    );
    assert!(unevaluated.len() * 7 <= seeds, "{unevaluated:?}");
}

#[test]
fn every_trace_seed_is_costed() {
    let (_, uncosted) = seeds_costing_nothing("trace", 30, c3::fuzz::trace);
    // Only the chainer pack's MultiAdd has no built-in rule: it stays in the
    // corpus for the unsupported-operator path.
    assert_eq!(uncosted, ["MultiAdd_3.json"]);
}

#[test]
fn onnx_seeds_run_through_the_fuzz_entry_point() {
    let seeds = files("fuzz/corpus/onnx_model");
    assert!(seeds.len() >= 200, "{} seeds", seeds.len());
    let ok = seeds
        .iter()
        .filter(|f| c3::fuzz::onnx(&std::fs::read(f).unwrap()).is_ok())
        .count();
    // A few conformance models hold ops c3 lists as unsupported by design or
    // inputs c3 refuses on purpose; nearly all must be costed.
    assert!(
        ok * 100 >= seeds.len() * 95,
        "{ok} of {} costed",
        seeds.len()
    );
}

/// A file of tests/fixtures/fuzz/onnx_model.
fn found_onnx(name: &str) -> Vec<u8> {
    fixture("onnx_model", name)
}

/// The error `c3::fuzz::onnx` gives for a file of tests/fixtures/fuzz/onnx_model.
fn onnx_error(name: &str) -> String {
    c3::fuzz::onnx(&found_onnx(name)).unwrap_err().to_string()
}

/// Found by onnx_model: a Slice without `axes` whose three starts meet data
/// of rank 2 (starts[i] slices axis i, so axis 2 does not exist) indexed
/// past the shape and panicked.
#[test]
fn slice_with_more_starts_than_axes_is_an_error() {
    let e = onnx_error("slice_starts_beyond_rank.onnx");
    assert!(e.contains("Slice has 3 starts for data of rank 2"), "{e}");
}

/// Found by onnx_model: an RMSNormalization node declaring no output. Shape
/// functions that refine output 0 after setting it indexed an empty list;
/// the cost stage now names the missing output instead.
#[test]
fn a_node_without_outputs_is_an_error() {
    let e = onnx_error("rmsnorm_without_outputs.onnx");
    assert!(
        e.contains("output 1 (Y) of RMSNormalization is missing"),
        "{e}"
    );
}

/// Found by onnx_model: a Swish with `alpha: nan`, costed a second time,
/// failed the debug check that a remembered evaluation equals a fresh one
/// (NaN != NaN). The second run takes the remembered path.
#[test]
fn a_nan_attribute_is_remembered_like_any_other() {
    let bytes = found_onnx("nan_attribute_remembered.onnx");
    // Two layers, Swish and Mul, both times.
    for _ in 0..2 {
        assert_eq!(c3::fuzz::onnx(&bytes).unwrap(), 2);
    }
}

#[test]
fn found_packs_are_errors_not_crashes() {
    // The seed pack (a rule with lets, a device, a fusion) loads: 0 refused.
    assert_eq!(replay("rule_pack", c3::fuzz::pack, false), 0);
}

#[test]
fn symbolic_arithmetic_programs_run() {
    // Programs never fail as a whole; each op is checked inside.
    assert_eq!(replay("dim_arith", c3::fuzz::dims, false), 0);
    // `a` pushed, then squared 40 times: a^2 .. a^128 are 7 squares; the
    // 8th (a^256) passes MAX_DIM_DEGREE and gives no value, so the stack
    // is empty and the other 32 do nothing: 1 + 7 = 8 values.
    assert_eq!(
        c3::fuzz::dims(&fixture("dim_arith", "squares_40_times")).unwrap(),
        8
    );
    // Found by the 30-minute run of 2026-11-23 as a 5 s timeout while the
    // machine was loaded (load average 9; alone it runs in 85 ms under
    // ASan): 102 bytes, 51 operations (two bytes each) on products of many
    // terms, of which 48 give a value under today's limits (MAX_DIM_TERMS
    // 1,024, MAX_DIM_PRODUCT 4,225; 46 under the former 64 terms); the
    // others find too few operands or pass a limit.
    assert_eq!(
        c3::fuzz::dims(&fixture("dim_arith", "slow_products_under_load")).unwrap(),
        48
    );
}

#[test]
fn found_function_programs_are_errors_not_crashes() {
    // The chain of unnamed calls is costed; the function calling itself
    // is refused.
    assert_eq!(replay("functions", c3::fuzz::functions, false), 1);
    let e = c3::fuzz::functions(&fixture("functions", "function_calling_itself"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("function 'f0' calls itself"), "{e}");
}

#[test]
fn function_seeds_expand_and_are_costed() {
    // A chain of 8 unnamed calls (one Relu at the bottom), Ifs and a
    // referring attribute, and calls that double 7 times.
    let (seeds, uncosted) = seeds_costing_nothing("functions", 3, c3::fuzz::functions);
    assert_eq!((seeds, uncosted.len()), (3, 0), "{uncosted:?}");
    // Each body ends in an Identity: 8 of them, the Relu, the main
    // graph's Identity.
    let chain = fixture("functions", "chain_of_unnamed_calls");
    assert_eq!(c3::fuzz::functions(&chain).unwrap(), 8 + 1 + 1);
    let doubling = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/functions/calls_doubling"),
    )
    .unwrap();
    // 128 copies of f7 (a Relu and an Identity: 256 layers), the 127
    // Identities of the functions that call two (383), and the main
    // graph's Identity.
    assert_eq!(c3::fuzz::functions(&doubling).unwrap(), 383 + 1);
}

/// How many random programs [`random_function_programs_expand_or_fail_cleanly`]
/// runs: 256, or `C3_FUZZ_CASES` for a longer search where libFuzzer cannot
/// be built (no network for cargo-fuzz).
fn function_cases() -> u32 {
    std::env::var("C3_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(function_cases()))]

    /// Random inputs of the `functions` target: the model expands and is
    /// costed, or is refused with one line; its names never outgrow the
    /// nesting (the entry point asserts it).
    #[test]
    fn random_function_programs_expand_or_fail_cleanly(
        data in proptest::collection::vec(proptest::num::u8::ANY, 0..160)
    ) {
        if let Err(e) = c3::fuzz::functions(&data) {
            proptest::prop_assert_eq!(e.to_string().lines().count(), 1);
        }
    }
}
