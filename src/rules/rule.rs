//! A compiled cost rule ([`CostRule`]) and its evaluation on one node: the
//! names of both halves, [`super::compile`] and [`super::eval`], in one place.

pub use super::compile::*;
pub use super::eval::*;
pub use super::value::{show_value, value_to_json};
pub use crate::ir::qualified;
