//! The commands that need no model: `explain`, `completions` and `man`.

use clap::{Args, CommandFactory};

use super::{Attention, Cli, RuleArgs, count_options};
use crate::commands::parse::{parse_attr_flag, parse_tensor};
use crate::error::{Error, Result};
use crate::ir::{AttrValue, DEFAULT_OPSET, TensorFact};
use crate::report;
use crate::report::explain::ExplainInput;
use crate::rules::rule::BranchChoice;

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// Operator name (`Conv`, `com.microsoft::Attention` or
    /// `com.microsoft.Attention`).
    pub op: String,
    #[command(flatten)]
    pub rules: RuleArgs,
    /// A tensor's shape by its pattern name, e.g. `--in X=1x3x224x224`
    /// (`:float16` after the shape sets the dtype; repeat a variadic name).
    /// Outputs are inferred from the inputs when left out.
    #[arg(long = "in", value_name = "NAME=SHAPE", value_parser = parse_tensor)]
    pub tensors: Vec<(String, TensorFact)>,
    /// An attribute, e.g. `--attr strides=2,2` or `--attr mode=linear`.
    #[arg(long = "attr", value_name = "NAME=VALUE", value_parser = parse_attr_flag)]
    pub attrs: Vec<(String, AttrValue)>,
    /// Opset version of the operator's domain.
    #[arg(long, default_value_t = DEFAULT_OPSET)]
    pub opset: i64,
    /// Count a multiply-add as two FLOPs instead of one.
    #[arg(long)]
    pub no_fma: bool,
    /// Attention: `masked` (the default) or `full`, as for `c3 estimate`.
    #[arg(long, value_enum, default_value_t = Attention::Masked)]
    pub attention: Attention,
    /// Time the evaluation on a device of the catalog or of a pack
    /// (`c3 devices`): its roofline and, on a calibrated device or with
    /// the rule's `time:` formula, its predicted time. Needs `--in`.
    #[arg(long)]
    pub device: Option<String>,
}

pub(super) fn explain(a: &ExplainArgs) -> Result<String> {
    let rules = a.rules.load()?;
    let rule = report::explain::find_rule(&rules, &a.op)?;
    let input = ExplainInput {
        tensors: a.tensors.clone(),
        attrs: a.attrs.clone(),
        opset: a.opset,
        count: count_options(a.no_fma, a.attention, BranchChoice::Larger),
        device: a.device.clone(),
    };
    report::explain::explain(&rules, rule, &input)
}

/// A completion script for `shell`.
pub(super) fn completions(shell: clap_complete::Shell) -> Result<String> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "c3", &mut out);
    String::from_utf8(out).map_err(|e| Error::Usage(format!("completions: {e}")))
}

/// The manual page, in roff (`c3 man > c3.1; man ./c3.1`).
pub(super) fn man() -> Result<String> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(|e| Error::io("man", e))?;
    String::from_utf8(out).map_err(|e| Error::Usage(format!("man: {e}")))
}
