//! Pack data, below the cost stage: rule files (loading with serde-saphyr,
//! the formula grammar in pest, [`compile`] each formula once to evalexpr,
//! [`eval`] a rule on a node), the device catalog ([`devices`]) and fusion
//! definitions ([`fusions`]). The algorithms that use the last two are
//! [`crate::cost::roofline`](mod@crate::cost::roofline) and [`crate::cost::fusion`].

pub mod ast;
pub mod backward;
mod bind;
pub(crate) mod blocks;
pub mod compile;
pub mod devices;
pub mod eval;
pub mod fusions;
pub mod lower;
pub mod pack;
pub mod packed;
pub mod parse;
pub mod partial;
pub mod render;
pub mod rule;
pub mod time;
pub mod time_formula;
pub mod value;
pub mod yaml;

pub use pack::{BUILTIN_PACKS, BUILTIN_RULES, RuleSet};
pub use rule::{CostRule, CountOptions, EvalError, Evaluation, Formula, Origin, Prune};
