//! c3's integration tests: one test binary, one module per area, sharing
//! `common` (the CLI runner, rule-layer and ONNX helpers). The ONNX
//! conformance sweep is the other test target (tests/conformance.rs).
//!
//! Run one area with a filter: `cargo test --test main hostile::`.

mod common;

mod cli;
mod compare;
mod control_flow;
mod conventions;
mod decoder;
mod exports;
mod fusion;
mod fuzz;
mod hostile;
mod hostile_packs;
mod io;
mod latency;
mod latency_trt;
mod layout;
mod ml_models;
mod networks;
mod onnx_files;
mod original_suite;
mod ort_optimized;
mod packs;
mod params_memory;
mod pictures;
mod properties;
mod report_formats;
mod reports;
mod roofline;
mod rule_coverage;
mod rule_time;
mod rules_elementwise;
mod rules_misc;
mod rules_ml;
mod rules_ms;
mod rules_normpool;
mod rules_quantization;
mod rules_tensorix;
mod rules_transformer;
mod sparse;
mod symbols;
mod training;
