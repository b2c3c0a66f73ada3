//! c3: the theoretical cost of a neural network's forward pass, layer by layer.
//!
//! Data moves one way: a front end ([`trace`]) builds the [`ir::Graph`], the
//! cost stage ([`cost`]) applies the [`rules`] to every node, and [`report`]
//! formats the result. [`docs`] renders DETAILS.md from the same rules.
//!
//! ```
//! use c3::cost::estimate;
//! use c3::rules::{CountOptions, RuleSet};
//!
//! let trace = br#"{"layers": [{"op": "Relu", "inputs": [{"shape": [1, 64]}],
//!                               "outputs": [{"shape": [1, 64]}]}]}"#;
//! let graph = c3::trace::parse_trace(trace, "inline").unwrap();
//! let rules = RuleSet::builtin().unwrap();
//! let report = estimate(&graph, &rules, CountOptions::default()).unwrap();
//! assert_eq!(report.total.flops, 64); // one max per element
//! assert_eq!(report.total.mread, 64 * 4); // the float32 input, read once
//! assert_eq!(report.layers[0].name, "Relu-1");
//! ```

pub mod cli;
pub mod cost;
pub mod device;
pub mod dim;
pub mod docs;
pub mod error;
pub mod fusion;
pub mod fuzz;
pub mod ir;
pub mod onnx;
pub mod report;
pub mod rules;
pub mod shape;
pub mod trace;

pub use error::{Error, Result};
