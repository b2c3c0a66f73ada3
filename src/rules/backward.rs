//! A rule's backward formulas (`backward:`) evaluated on a node: the cost
//! of the gradients a training step computes for its inputs.

use super::compile::{CostRule, What};
use super::eval::EvalError;
use super::lower::Units;
use crate::ir::Node;
use crate::rules::CountOptions;

/// The cost of a layer's backward pass, from its rule's `backward:`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackwardEvaluation {
    pub flops: u64,
    /// Bytes read.
    pub mread: u64,
    /// Bytes written.
    pub mwrite: u64,
    /// The input positions whose gradient was counted.
    pub grads: Vec<usize>,
}

impl CostRule {
    /// The backward pass's cost for the gradients of the inputs at
    /// `grads` (positions), from the rule's `backward:` section: `None`
    /// when the rule has none. An input the section gives no gradient for
    /// gets none.
    pub fn evaluate_backward(
        &self,
        node: &Node,
        opts: CountOptions,
        grads: &[usize],
    ) -> Result<Option<BackwardEvaluation>, EvalError> {
        let Some(b) = &self.backward else {
            return Ok(None);
        };
        let env = self.env_for(node, opts, false)?;
        let mut out = BackwardEvaluation::default();
        for (i, name, [flops, mread, mwrite]) in &b.grads {
            if !grads.contains(i) {
                continue;
            }
            let what = |part: &'static str| format!("backward {name} {part}");
            let f = flops.eval_count(&env, What::Backward(&what("flops")), Units::Elements)?;
            let r = mread.eval_count(&env, What::Backward(&what("mread")), Units::Bits)?;
            let w = mwrite.eval_count(&env, What::Backward(&what("mwrite")), Units::Bits)?;
            let add = |a: u64, b: u64| {
                a.checked_add(b).ok_or_else(|| {
                    EvalError::Binding(format!("the backward of {} overflows 64 bits", self.op))
                })
            };
            out.flops = add(out.flops, f)?;
            out.mread = add(out.mread, r)?;
            out.mwrite = add(out.mwrite, w)?;
            out.grads.push(*i);
        }
        Ok(Some(out))
    }
}
