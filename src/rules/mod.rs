//! Rule files: loading (serde-saphyr), the formula grammar (pest), compiling
//! each formula once to evalexpr, and applying a rule to a node.

pub mod ast;
pub mod compile;
pub mod devices;
pub mod eval;
pub mod fusions;
pub mod lower;
pub mod pack;
pub mod parse;
pub mod render;
pub mod rule;
pub mod value;
pub mod yaml;

pub use pack::{BUILTIN_PACKS, BUILTIN_RULES, RuleSet};
pub use rule::{CostRule, CountOptions, EvalError, Evaluation, Formula, Origin};
