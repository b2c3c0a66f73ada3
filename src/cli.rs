//! The `c3` command line: flags defined once with clap (every value typed,
//! so `--help` lists what each takes), each command dispatched to the
//! library ([`crate::Model`], [`crate::report`]).

use std::io::IsTerminal;

use clap::{Args, Parser, Subcommand};

use crate::error::{Error, Result};
use crate::model::{EstimateOptions, Model, Precision};
use crate::output::{self, Kind};
use crate::report::model_explorer::Metric;
use crate::report::{
    self, ColorChoice, Column, Format, ListFormat, Meta, Parts, ReportOptions, SortKey, Unit,
};
use crate::rules::rule::BranchChoice;
use crate::rules::{CountOptions, RuleSet};

mod reference;
mod usage;
mod values;
mod write;
pub use reference::ExplainArgs;
use values::*;
use write::{annotate, docs, output_of, shapes};

#[derive(Parser, Debug)]
#[command(
    name = "c3",
    version,
    propagate_version = true,
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
    /// Shell completions for c3, from the same flag definitions as --help.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// c3's manual page (roff), from the same flag definitions as --help.
    Man,
    /// The device catalog for roofline estimates, with each device's aliases.
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
    /// The listing's format (default: table; with -o, no listing unless
    /// a format is given).
    #[arg(long, value_enum)]
    pub format: Option<ListFormat>,
    /// Write a copy of the model with the inferred shapes in its value_info
    /// (`-` for standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
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
    /// An ONNX model (.onnx) or an operator trace (JSON); `-` reads
    /// standard input.
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
    /// Count every node as executed, as an eager framework runs it: nodes
    /// whose inputs are all constants are not folded away.
    #[arg(long)]
    pub no_fold: bool,
    /// Attention: `masked` counts the (query, key) pairs a causal or
    /// windowed mask leaves; `full` counts the whole square.
    #[arg(long, value_enum, default_value_t = Attention::Masked)]
    pub attention: Attention,
    /// Which If branch the totals count (the other is reported beside them).
    #[arg(long, value_name = "WHICH", value_enum, default_value_t = BranchChoice::Larger)]
    pub if_branch: BranchChoice,
    /// Count each weight a rule asks `nnz()` of (`--rules sparse`) as if
    /// the fraction R of it were zero, without reading it (0 <= R < 1).
    #[arg(long, value_name = "R")]
    pub prune: Option<crate::rules::Prune>,
    /// Output format (default: table on a terminal, md otherwise).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// The figure `--format model-explorer` colours the nodes by (default:
    /// flops).
    #[arg(long, value_enum)]
    pub metric: Option<Metric>,
    /// Unit prefix (FLOPs by 1000, bytes by 1024).
    #[arg(long, value_enum)]
    pub unit: Option<Unit>,
    /// Digits after the decimal point, 0 to 10 (default: 3).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=10))]
    pub digits: Option<u8>,
    /// Layer columns: comma list of name, op, flops, mread, mwrite, mrw,
    /// flops%, mread%, mwrite%, mrw%, inputs, outputs, params; or default, percent, all.
    #[arg(long, value_parser = parse_columns)]
    pub columns: Option<Columns>,
    /// Only the per-operator-type summary.
    #[arg(long, conflicts_with = "layers")]
    pub summary: bool,
    /// Only the per-layer report.
    #[arg(long)]
    pub layers: bool,
    /// Sort the layer rows by a figure, largest first (the totals are kept).
    #[arg(long, value_name = "COLUMN", value_enum)]
    pub sort: Option<SortKey>,
    /// Show only the first N layer rows (after --sort); the totals count all.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Colour the table: on a terminal without NO_COLOR (auto), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
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
    /// Write the report to a file instead of standard output (`-`: standard
    /// output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,
    /// Replace an existing output file c3 does not recognise as its own.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct DocsArgs {
    /// Fail when the file differs from what the rules render.
    #[arg(long)]
    pub check: bool,
    /// The file to write or check (`-`: standard output).
    #[arg(short = 'o', long = "output", default_value = "DETAILS.md")]
    pub output: String,
    /// Replace a file that does not carry c3's generated-by comment.
    #[arg(long, conflicts_with = "check")]
    pub force: bool,
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
    /// Validate a rule pack without a model; reports every error in it.
    Check {
        /// The pack: a folder, a rule file, or a built-in pack's name.
        #[arg(value_name = "PACK")]
        dir: String,
    },
}

/// Runs the command line and returns the process exit code.
/// Runs a command line given as arguments (without the program name) and
/// returns what it prints on standard output; `--help` is a usage error.
pub fn run_args(args: Vec<String>) -> Result<String> {
    let argv = std::iter::once("c3".to_string()).chain(args);
    let cli = Cli::try_parse_from(argv).map_err(|e| Error::Usage(usage::clap_line(&e)))?;
    run(cli)
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return usage::clap_error(&e),
    };
    let done = run(cli).and_then(|out| output::write_stdout(out.as_bytes()));
    match done {
        Ok(()) => 0,
        Err(e) => {
            eprintln!(
                "error: {}",
                crate::error::one_line(&crate::report::text::shown(&e.to_string()))
            );
            e.exit_code()
        }
    }
}

/// Runs one command; what it returns goes to standard output.
pub fn run(cli: Cli) -> Result<String> {
    match cli.command {
        Command::Estimate(a) => estimate(&a),
        Command::Explain(a) => reference::explain(&a),
        Command::Docs(a) => docs(&a),
        Command::Rules(RulesCommand::List { rules, format }) => {
            let text = report::catalog::rules_list(&rules.load()?, format);
            Ok(Meta::listing(&rules.packs).wrap_text("rules", text))
        }
        Command::Rules(RulesCommand::Check { dir }) => reference::rules_check(&dir),
        Command::Completions { shell } => reference::completions(shell),
        Command::Man => reference::man(),
        Command::Shapes(a) => shapes(&a),
        Command::Annotate(a) => annotate(&a),
        Command::Devices { rules, format } => {
            let text = report::catalog::devices(&rules.load()?, format);
            Ok(Meta::listing(&rules.packs).wrap_text("devices", text))
        }
    }
}

pub(crate) fn count_options(
    no_fma: bool,
    attention: Attention,
    branch: BranchChoice,
) -> CountOptions {
    CountOptions {
        fma: !no_fma,
        full_attention: attention == Attention::Full,
        branch,
        prune: None,
    }
}

pub(super) fn estimate_options(a: &EstimateArgs) -> EstimateOptions {
    EstimateOptions {
        dims: a.source.dims.iter().cloned().collect(),
        inputs: a.source.inputs.iter().cloned().collect(),
        packs: a.rules.packs.clone(),
        count: CountOptions {
            prune: a.prune,
            ..count_options(a.no_fma, a.attention, a.if_branch)
        },
        weights: a.weights.map(Precision::dtype),
        activations: a.activations.map(Precision::dtype),
        device: a.device.clone(),
        measured_s: a.measured,
        strict: a.strict,
        no_fold: a.no_fold,
    }
}

fn estimate(a: &EstimateArgs) -> Result<String> {
    let out = output_of(&a.output, Kind::Report, a.force, &a.source.model)?;
    let terminal = std::io::stdout().is_terminal() && out.is_stdout();
    let format = match a.format {
        Some(f) => f,
        None if terminal => Format::Table,
        None => Format::Md,
    };
    usage::check_report_flags(a, format)?;
    let opts = estimate_options(a);
    opts.check()?;
    let model = Model::open(&a.source.model)?;
    let report_opts = ReportOptions {
        format,
        unit: a.unit.unwrap_or(Unit::Auto),
        digits: a.digits.unwrap_or(3).into(),
        columns: match &a.columns {
            Some(c) => c.0.clone(),
            None => report::parse_columns("default").map_err(Error::Usage)?,
        },
        parts: match (a.summary, a.layers) {
            (true, _) => Parts::Summary,
            (_, true) => Parts::Layers,
            _ => Parts::Both,
        },
        about: opts.about(&a.source.model),
        metric: a.metric.unwrap_or(Metric::Flops),
        node_ids: match format {
            Format::ModelExplorer => model.node_ids(&opts)?,
            _ => Default::default(),
        },
        meta: None,
        sort: a.sort,
        top: a.top,
        width: report::terminal_width(terminal),
        color: format == Format::Table && a.color.wanted(terminal),
    };
    let estimate = model.estimate(&opts)?;
    if let Some(ops) = estimate.unsupported_ops() {
        let count = estimate.report.unsupported.len();
        eprintln!(
            "warning: {count} layer(s) are not counted (see the unsupported list): {}",
            crate::report::text::shown(&ops)
        );
    }
    let text = estimate.render(&report_opts);
    // Freeing a large model's graph and report piece by piece costs more
    // than writing them: another thread does it while the output is
    // written, and the binary exits without waiting for it.
    std::thread::spawn(move || drop(estimate));
    if out.is_stdout() {
        return Ok(text);
    }
    out.write(text.as_bytes())?;
    Ok(String::new())
}
