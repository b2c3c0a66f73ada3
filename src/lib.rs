//! c3: the theoretical cost of a neural network's forward pass, layer by layer.
//!
//! Data moves one way: a front end ([`trace`]) builds the [`ir::Graph`], the
//! cost stage ([`cost`]) applies the [`rules`] to every node, and [`report`]
//! formats the result. [`docs`] renders DETAILS.md from the same rules.

pub mod cli;
pub mod cost;
pub mod docs;
pub mod error;
pub mod ir;
pub mod report;
pub mod rules;
pub mod trace;

pub use error::{Error, Result};
