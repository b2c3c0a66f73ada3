//! The cost stage: applies the rule set to every node of a graph.

use evalexpr::Value;

use crate::error::{Error, Result};
use crate::ir::{Graph, Node, TensorFact};
use crate::rules::{CountOptions, EvalError, RuleSet};

/// The cost of one layer.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerCost {
    pub name: String,
    pub op: String,
    pub domain: String,
    pub flops: u64,
    /// Bytes read.
    pub mread: u64,
    /// Bytes written.
    pub mwrite: u64,
    /// Integer operations (quantized arithmetic), kept apart from FLOPs.
    pub iops: u64,
    pub inputs: Vec<Option<TensorFact>>,
    pub outputs: Vec<Option<TensorFact>>,
    pub params: Vec<(String, Value)>,
    /// The fused group this layer belongs to (`conv_bn_relu#3`), if any.
    pub fused: Option<String>,
}

impl LayerCost {
    /// Bytes read plus bytes written.
    pub fn mrw(&self) -> u64 {
        // Cannot overflow: the totals check the same sums.
        self.mread.saturating_add(self.mwrite)
    }
}

/// A layer that is not counted (no rule, or shapes unknown): listed, never
/// counted as zero silently.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported {
    pub name: String,
    pub op: String,
    pub domain: String,
    pub reason: String,
}

/// The reason given for an operator without a rule.
pub const NO_RULE: &str = "no cost rule";

/// Sums over a set of layers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub layers: u64,
    pub flops: u64,
    pub mread: u64,
    pub mwrite: u64,
    pub mrw: u64,
    pub iops: u64,
}

impl Totals {
    fn add(&mut self, l: &LayerCost) -> Result<()> {
        let overflow = || Error::Layer {
            layer: l.name.clone(),
            op: l.op.clone(),
            message: "totals overflow 64 bits".into(),
        };
        self.layers += 1;
        self.flops = self.flops.checked_add(l.flops).ok_or_else(overflow)?;
        self.mread = self.mread.checked_add(l.mread).ok_or_else(overflow)?;
        self.mwrite = self.mwrite.checked_add(l.mwrite).ok_or_else(overflow)?;
        self.mrw = self.mread.checked_add(self.mwrite).ok_or_else(overflow)?;
        self.iops = self.iops.checked_add(l.iops).ok_or_else(overflow)?;
        Ok(())
    }
}

/// The summary row of one operator type.
#[derive(Debug, Clone, PartialEq)]
pub struct OpSummary {
    pub op: String,
    pub domain: String,
    pub totals: Totals,
}

/// Everything the reports show.
#[derive(Debug, Clone, PartialEq)]
pub struct CostReport {
    pub layers: Vec<LayerCost>,
    /// Per operator type, in the order each type first appears.
    pub summary: Vec<OpSummary>,
    pub total: Totals,
    pub unsupported: Vec<Unsupported>,
    /// Groups of layers fused by the pack's patterns.
    pub fusions: Vec<crate::fusion::FusedGroup>,
}

/// Applies the rules to every node, in order.
pub fn estimate(graph: &Graph, rules: &RuleSet, opts: CountOptions) -> Result<CostReport> {
    let mut layers = Vec::with_capacity(graph.nodes.len());
    let mut layer_nodes = Vec::with_capacity(graph.nodes.len());
    let mut unsupported = Vec::new();
    for node in &graph.nodes {
        match rules.get(&node.domain, &node.op) {
            None => unsupported.push(Unsupported {
                name: node.name.clone(),
                op: node.op.clone(),
                domain: node.domain.clone(),
                reason: NO_RULE.into(),
            }),
            Some(rule) => {
                layers.push(cost_of(node, rule, opts)?);
                layer_nodes.push(node);
            }
        }
    }
    let fusions = crate::fusion::apply(&rules.fusions, &layer_nodes, &mut layers, &graph.outputs);
    for (node, reason) in &graph.unanalysed {
        let reason = match rules.get(&node.domain, &node.op) {
            None => format!("{NO_RULE}; {reason}"),
            Some(_) => reason.clone(),
        };
        unsupported.push(Unsupported {
            name: node.name.clone(),
            op: node.op.clone(),
            domain: node.domain.clone(),
            reason,
        });
    }
    let mut total = Totals::default();
    let mut summary: Vec<OpSummary> = Vec::new();
    for l in &layers {
        total.add(l)?;
        let row = match summary
            .iter_mut()
            .position(|s| s.op == l.op && s.domain == l.domain)
        {
            Some(i) => &mut summary[i],
            None => {
                summary.push(OpSummary {
                    op: l.op.clone(),
                    domain: l.domain.clone(),
                    totals: Totals::default(),
                });
                summary.last_mut().expect("just pushed")
            }
        };
        row.totals.add(l)?;
    }
    Ok(CostReport {
        layers,
        summary,
        total,
        unsupported,
        fusions,
    })
}

fn cost_of(node: &Node, rule: &crate::rules::CostRule, opts: CountOptions) -> Result<LayerCost> {
    let ev = rule.evaluate(node, opts).map_err(|e| match e {
        EvalError::Formula {
            origin,
            what,
            text,
            message,
        } => Error::Formula {
            origin: origin.to_string(),
            message: format!("{message} in {what} `{text}`"),
            layer: node.name.clone(),
            op: node.op.clone(),
        },
        EvalError::Binding(message) => Error::Layer {
            layer: node.name.clone(),
            op: node.op.clone(),
            message,
        },
    })?;
    Ok(LayerCost {
        name: node.name.clone(),
        op: node.op.clone(),
        domain: node.domain.clone(),
        flops: ev.flops,
        mread: ev.mread,
        mwrite: ev.mwrite,
        iops: ev.iops,
        inputs: node.inputs.clone(),
        outputs: node.outputs.clone(),
        params: ev.params,
        fused: None,
    })
}
