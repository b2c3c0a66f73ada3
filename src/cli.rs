//! The `c3` command line: flags defined once with clap (every value typed,
//! so `--help` lists what each takes), each command dispatched to the
//! library ([`crate::Model`], [`crate::report`]).

use std::io::{IsTerminal, Write};

use clap::{Args, Parser, Subcommand};

use crate::error::{Error, Result};
use crate::ir::{AttrValue, DEFAULT_OPSET, Dim, TensorFact};
use crate::model::{EstimateOptions, Model, Precision};
use crate::report::explain::ExplainInput;
use crate::report::model_explorer::Metric;
use crate::report::{self, Column, Format, ListFormat, Parts, ReportOptions, Unit};
use crate::rules::rule::BranchChoice;
use crate::rules::{CountOptions, RuleSet};

#[derive(Parser, Debug)]
#[command(
    name = "c3",
    version,
    about = "Theoretical FLOPs and memory traffic of a neural network's forward pass, from declarative rules"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Per-layer and per-operator-type costs of a model or operator trace.
    Estimate(EstimateArgs),
    /// How an operator is counted; with --in, evaluate the rule step by step.
    Explain(ExplainArgs),
    /// Render DETAILS.md from the rules (or check that it is up to date).
    Docs(DocsArgs),
    /// List the rules in force, or validate a rule pack.
    #[command(subcommand)]
    Rules(RulesCommand),
    /// Every tensor of a model with its inferred type and shape.
    Shapes(ShapesArgs),
    /// A copy of an ONNX model with each node's costs in its metadata_props
    /// (Netron shows them) and the inferred shapes in value_info; takes the
    /// options of `estimate` (-o is required).
    Annotate(EstimateArgs),
    /// The device catalog for roofline estimates.
    Devices {
        #[command(flatten)]
        rules: RuleArgs,
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
}

#[derive(Args, Debug)]
pub struct ShapesArgs {
    #[command(flatten)]
    pub source: ModelArgs,
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    /// Write a copy of the model with the inferred shapes in its value_info.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,
}

#[derive(Args, Debug, Default)]
pub struct RuleArgs {
    /// A rule pack: a folder of YAML rule files, or a built-in pack name
    /// (`chainer`). Repeatable; later packs override earlier ones.
    #[arg(long = "rules", value_name = "DIR")]
    pub packs: Vec<String>,
}

impl RuleArgs {
    fn load(&self) -> Result<RuleSet> {
        RuleSet::with_packs(&self.packs)
    }
}

#[derive(Args, Debug, Default)]
pub struct ModelArgs {
    /// An ONNX model (.onnx) or an operator trace (JSON).
    pub model: String,
    /// Bind a symbolic dimension everywhere, e.g. `--dim batch=8`.
    #[arg(long = "dim", value_name = "NAME=N", value_parser = parse_dim)]
    pub dims: Vec<(String, i64)>,
    /// Override a model input's shape, e.g. `--input images=1x3x224x224`.
    #[arg(long = "input", value_name = "NAME=SHAPE", value_parser = parse_input)]
    pub inputs: Vec<(String, Vec<u64>)>,
}

/// `--attention`: which (query, key) pairs attention rules count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Attention {
    /// Those a causal or windowed mask leaves.
    Masked,
    /// All of them, the whole square.
    Full,
}

/// `--columns`: the layer columns, parsed.
#[derive(Debug, Clone)]
pub struct Columns(Vec<Column>);

#[derive(Args, Debug)]
pub struct EstimateArgs {
    #[command(flatten)]
    pub source: ModelArgs,
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Count a multiply-add as two FLOPs instead of one.
    #[arg(long)]
    pub no_fma: bool,
    /// Attention: `masked` counts the (query, key) pairs a causal or
    /// windowed mask leaves; `full` counts the whole square.
    #[arg(long, value_enum, default_value_t = Attention::Masked)]
    pub attention: Attention,
    /// Which If branch the totals count (the other is reported beside them).
    #[arg(long, value_name = "WHICH", value_enum, default_value_t = BranchChoice::Larger)]
    pub if_branch: BranchChoice,
    /// Output format (default: table on a terminal, md otherwise).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// The figure `--format model-explorer` colours the nodes by.
    #[arg(long, value_enum, default_value_t = Metric::Flops)]
    pub metric: Metric,
    /// Unit prefix (FLOPs by 1000, bytes by 1024).
    #[arg(long, value_enum, default_value_t = Unit::Auto)]
    pub unit: Unit,
    /// Digits after the decimal point, 0 to 10.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=10))]
    pub digits: u8,
    /// Layer columns: comma list of name, op, flops, mread, mwrite, mrw,
    /// flops%, mread%, mwrite%, mrw%, inputs, outputs, params; or default, percent, all.
    #[arg(long, default_value = "default", value_parser = parse_columns)]
    pub columns: Columns,
    /// Only the per-operator-type summary.
    #[arg(long, conflicts_with = "layers")]
    pub summary: bool,
    /// Only the per-layer report.
    #[arg(long)]
    pub layers: bool,
    /// Fail (exit code 3) when an operator has no rule.
    #[arg(long)]
    pub strict: bool,
    /// Add roofline times on a device of the catalog (`c3 devices` lists them).
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// What if the weights were stored in this type.
    #[arg(long, value_name = "TYPE", value_enum, ignore_case = true)]
    pub weights: Option<Precision>,
    /// What if the activations were of this type.
    #[arg(long, value_name = "TYPE", value_enum, ignore_case = true)]
    pub activations: Option<Precision>,
    /// A measured latency (`2.4ms`, `850us`) to compare with the roofline bounds.
    #[arg(long, value_name = "TIME", requires = "device", value_parser = parse_measured)]
    pub measured: Option<f64>,
    /// Write the report to a file instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// Operator name (`Conv`, or `domain::Op`).
    pub op: String,
    #[command(flatten)]
    pub rules: RuleArgs,
    /// A tensor's shape by its pattern name, e.g. `--in X=1x3x224x224`
    /// (`:float16` after the shape sets the dtype; repeat a variadic name).
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
}

#[derive(Args, Debug)]
pub struct DocsArgs {
    /// Fail when the file differs from what the rules render.
    #[arg(long)]
    pub check: bool,
    /// The file to write or check.
    #[arg(short = 'o', long = "output", default_value = "DETAILS.md")]
    pub output: String,
}

#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// Every op with a rule and the file its rule came from.
    List {
        #[command(flatten)]
        rules: RuleArgs,
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
    /// Validate a rule pack folder without a model.
    Check {
        /// The pack folder.
        dir: String,
    },
}

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 1 } else { 0 };
        }
    };
    match run(cli) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(out.as_bytes());
            0
        }
        Err(e) => {
            eprintln!("error: {}", crate::error::one_line(&e.to_string()));
            e.exit_code()
        }
    }
}

/// Runs one command; what it returns goes to standard output.
pub fn run(cli: Cli) -> Result<String> {
    match cli.command {
        Command::Estimate(a) => estimate(&a),
        Command::Explain(a) => explain(&a),
        Command::Docs(a) => docs(&a),
        Command::Rules(RulesCommand::List { rules, format }) => {
            Ok(report::catalog::rules_list(&rules.load()?, format))
        }
        Command::Rules(RulesCommand::Check { dir }) => rules_check(&dir),
        Command::Shapes(a) => shapes(&a),
        Command::Annotate(a) => annotate(&a),
        Command::Devices { rules, format } => Ok(report::catalog::devices(&rules.load()?, format)),
    }
}

fn count_options(no_fma: bool, attention: Attention, branch: BranchChoice) -> CountOptions {
    CountOptions {
        fma: !no_fma,
        full_attention: attention == Attention::Full,
        branch,
    }
}

fn estimate_options(a: &EstimateArgs) -> EstimateOptions {
    EstimateOptions {
        dims: a.source.dims.iter().cloned().collect(),
        inputs: a.source.inputs.iter().cloned().collect(),
        packs: a.rules.packs.clone(),
        count: count_options(a.no_fma, a.attention, a.if_branch),
        weights: a.weights.map(Precision::dtype),
        activations: a.activations.map(Precision::dtype),
        device: a.device.clone(),
        measured_s: a.measured,
    }
}

fn estimate(a: &EstimateArgs) -> Result<String> {
    let format = match a.format {
        Some(f) => f,
        None if std::io::stdout().is_terminal() && a.output.is_none() => Format::Table,
        None => Format::Md,
    };
    let opts = estimate_options(a);
    let model = Model::open(&a.source.model)?;
    if a.metric == Metric::BoundS && a.device.is_none() {
        return Err(Error::Usage("--metric bound_s needs --device".into()));
    }
    let report_opts = ReportOptions {
        format,
        unit: a.unit,
        digits: a.digits.into(),
        columns: a.columns.0.clone(),
        parts: match (a.summary, a.layers) {
            (true, _) => Parts::Summary,
            (_, true) => Parts::Layers,
            _ => Parts::Both,
        },
        about: opts.about(&a.source.model),
        metric: a.metric,
        node_ids: match format {
            Format::ModelExplorer => model.node_ids(&opts)?,
            _ => Default::default(),
        },
    };
    let estimate = model.estimate(&opts)?;
    if let Some(ops) = estimate.unsupported_ops() {
        let count = estimate.report.unsupported.len();
        if a.strict {
            return Err(Error::Unsupported { count, ops });
        }
        eprintln!("warning: {count} layer(s) are not counted (see the unsupported list): {ops}");
    }
    let text = estimate.render(&report_opts);
    // The process exits next: freeing a large model's graph and report
    // piece by piece would cost more than writing them.
    std::mem::forget(estimate);
    match &a.output {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
            Ok(String::new())
        }
        None => Ok(text),
    }
}

fn annotate(a: &EstimateArgs) -> Result<String> {
    let Some(out) = &a.output else {
        return Err(Error::Usage("annotate needs -o OUT.onnx".into()));
    };
    let done = Model::open(&a.source.model)?.annotate(&estimate_options(a))?;
    std::fs::write(out, &done.bytes).map_err(|e| Error::io(out, e))?;
    Ok(format!(
        "wrote {out}: costs on {} nodes, {} inferred value_info entries\n",
        done.nodes, done.value_info
    ))
}

fn explain(a: &ExplainArgs) -> Result<String> {
    let rules = a.rules.load()?;
    let rule = rules.find(&a.op).ok_or_else(|| {
        Error::Usage(format!(
            "no rule for operator '{}' (`c3 rules list` shows every rule)",
            a.op
        ))
    })?;
    let input = ExplainInput {
        tensors: a.tensors.clone(),
        attrs: a.attrs.clone(),
        opset: a.opset,
        count: count_options(a.no_fma, a.attention, BranchChoice::Larger),
    };
    report::explain::explain(rule, &input)
}

fn docs(a: &DocsArgs) -> Result<String> {
    let text = crate::docs::render(&RuleSet::builtin()?)?;
    if a.check {
        if !crate::docs::is_current(&a.output, &text)? {
            return Err(Error::Stale(format!(
                "{} is out of date with the rules: run `c3 docs -o {}` and commit it",
                a.output, a.output
            )));
        }
        return Ok(format!("{} is up to date\n", a.output));
    }
    std::fs::write(&a.output, &text).map_err(|e| Error::io(&a.output, e))?;
    Ok(format!("wrote {}\n", a.output))
}

fn rules_check(dir: &str) -> Result<String> {
    let (ops, overridden) = RuleSet::check_pack(dir)?;
    Ok(format!(
        "{dir}: ok, {} rule(s): {} ({overridden} override built-in rules)\n",
        ops.len(),
        ops.join(", "),
    ))
}

fn shapes(a: &ShapesArgs) -> Result<String> {
    let dims = a.source.dims.iter().cloned().collect();
    let inputs = a.source.inputs.iter().cloned().collect();
    let shapes = Model::open_onnx(&a.source.model)?.shapes(&dims, &inputs)?;
    let mut note = String::new();
    if let Some(out) = &a.output {
        let n = shapes.write_model(out)?;
        note = format!("wrote {out} with {n} inferred value_info entries\n");
    }
    Ok(note + &report::shapes::shapes(&shapes.inferred, a.format))
}

// ------------------------------------------------------------ value parsers

fn split_kv(s: &str) -> std::result::Result<(&str, &str), String> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| "expected NAME=VALUE".to_string())
}

fn parse_dim(s: &str) -> std::result::Result<(String, i64), String> {
    let (k, v) = split_kv(s)?;
    let n = v
        .parse()
        .ok()
        .filter(|n: &i64| *n >= 0)
        .ok_or_else(|| format!("{v} is not a non-negative integer"))?;
    Ok((k.to_string(), n))
}

fn parse_input(s: &str) -> std::result::Result<(String, Vec<u64>), String> {
    let (k, v) = split_kv(s)?;
    let t = TensorFact::parse_text(v)?;
    Ok((
        k.to_string(),
        t.shape.iter().filter_map(Dim::known).collect(),
    ))
}

fn parse_tensor(s: &str) -> std::result::Result<(String, TensorFact), String> {
    let (k, v) = split_kv(s)?;
    Ok((k.to_string(), TensorFact::parse_text(v)?))
}

fn parse_attr_flag(s: &str) -> std::result::Result<(String, AttrValue), String> {
    let (k, v) = split_kv(s)?;
    Ok((k.to_string(), AttrValue::parse_text(v)))
}

fn parse_columns(s: &str) -> std::result::Result<Columns, String> {
    report::parse_columns(s).map(Columns)
}

fn parse_measured(s: &str) -> std::result::Result<f64, String> {
    crate::cost::parse_duration(s).ok_or_else(|| "expected a duration like 2.4ms or 850us".into())
}
