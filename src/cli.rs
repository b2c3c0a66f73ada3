//! The `c3` command line: flags defined once with clap (every value typed,
//! so `--help` lists what each takes), each command dispatched to the
//! library ([`crate::commands`], [`crate::Model`], [`crate::report`]).

use clap::{Args, Parser, Subcommand};

use crate::commands::{self, ReportRequest, Target};
use crate::error::{Error, Result};
use crate::model::{EstimateOptions, Precision};
use crate::output;
use crate::report::model_explorer::Metric;
use crate::report::{self, ColorChoice, Column, Format, ListFormat, Meta, Parts, SortKey, Unit};
use crate::rules::rule::BranchChoice;
use crate::rules::{CountOptions, RuleSet};

mod reference;
mod usage;
use crate::commands::parse::*;
pub use reference::ExplainArgs;

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
    /// Per-layer and per-operator-type costs of a model or operator trace;
    /// given several models or a folder, one totals row per model.
    Estimate(EstimateArgs),
    /// Compare B with A per layer, per operator type and in total (B − A):
    /// two models under the same options, or one model under two
    /// (`c3 diff m.onnx --b-rules fused`).
    #[command(override_usage = "c3 diff [OPTIONS] <A> [B]")]
    Diff(DiffArgs),
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
    /// Fit a device's time model to reports of profiled runs (`c3 estimate
    /// MODEL --profile FILE --format json`) and write it as a pack:
    /// `DIR/devices.yaml`, used with `--rules DIR --device NAME`.
    Calibrate(CalibrateArgs),
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
    /// Override a model input's shape, e.g. `--input images=1x3x224x224`;
    /// the names its declared shape had there are bound too, as `--dim`.
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
    /// More models or folders: one totals row per model, analysed in
    /// parallel (`diff`: the model B).
    #[arg(value_name = "MORE")]
    pub more: Vec<String>,
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
    /// flops%, mread%, mwrite%, mrw%, inputs, outputs, attrs, params, weights,
    /// live; or default, percent, all.
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
    /// Add the module tree: layers grouped by name, N levels deep.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=64))]
    pub depth: Option<u8>,
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
    /// A runtime's profile of the model (onnxruntime's JSON, a trace from
    /// c3.torch.profile, or TensorRT's layer profile): each layer gets the
    /// time its kernel took. Given twice: a TensorRT profile and its
    /// engine's layer information (trtexec --exportLayerInfo), either order.
    #[arg(long, value_name = "FILE", action = clap::ArgAction::Append)]
    pub profile: Vec<String>,
    #[command(flatten)]
    pub training: TrainingArgs,
    /// Write the report to a file instead of standard output (`-`: standard
    /// output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,
    /// Replace an existing output file c3 does not recognise as its own.
    #[arg(long)]
    pub force: bool,
}

/// A training step's options (`--training` and those that refine it).
#[derive(Args, Debug, Default)]
pub struct TrainingArgs {
    /// Count a training step: each layer's backward pass, and training
    /// memory (weights, gradients, optimizer states, saved activations).
    #[arg(long)]
    pub training: bool,
    /// Weights that do not train: a glob (`*`, `?`) of weight names or of
    /// the layers that read them (repeatable): `--freeze '/layer1/*'`.
    #[arg(long, value_name = "PATTERN", requires = "training")]
    pub freeze: Vec<String>,
    /// The optimizer whose step is counted: sgd, momentum, adam, adamw.
    #[arg(long, value_name = "NAME", requires = "training")]
    pub optimizer: Option<crate::cost::training::Optimizer>,
    /// The optimizer keeps a master copy of the weights in this type
    /// (mixed precision: `--weights bf16 --activations bf16
    /// --master-weights fp32`).
    #[arg(
        long,
        value_name = "TYPE",
        value_enum,
        ignore_case = true,
        requires = "training"
    )]
    pub master_weights: Option<Precision>,
    /// Recompute the activations of each block matching this glob in the
    /// backward instead of keeping them (activation checkpointing; a block
    /// is the shortest name prefix, cut at `/` or `.`, the glob matches).
    #[arg(long, value_name = "PATTERN", requires = "training")]
    pub recompute: Vec<String>,
    /// Find the largest size of this dimension whose training step fits
    /// the device's memory: `--fit batch` (with --device).
    #[arg(long, value_name = "DIM", requires_all = ["training", "device"])]
    pub fit: Option<String>,
}

impl TrainingArgs {
    fn options(&self) -> Option<crate::cost::training::TrainingOptions> {
        self.training
            .then(|| crate::cost::training::TrainingOptions {
                freeze: self.freeze.clone(),
                optimizer: self.optimizer,
                master_weights: self.master_weights.map(Precision::dtype),
                recompute: self.recompute.clone(),
                fit: self.fit.clone(),
            })
    }
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    #[command(flatten)]
    pub a: EstimateArgs,
    #[command(flatten)]
    pub b: BArgs,
}

/// What B changes of A's options: `c3 diff m.onnx --b-weights int8`.
#[derive(Args, Debug)]
pub struct BArgs {
    /// B's rule packs, in place of A's (repeatable): `--b-rules fused`.
    #[arg(long = "b-rules", value_name = "DIR")]
    pub b_packs: Vec<String>,
    /// B's weights stored in this type (what if).
    #[arg(
        long = "b-weights",
        value_name = "TYPE",
        value_enum,
        ignore_case = true
    )]
    pub b_weights: Option<Precision>,
    /// B's activations of this type (what if).
    #[arg(
        long = "b-activations",
        value_name = "TYPE",
        value_enum,
        ignore_case = true
    )]
    pub b_activations: Option<Precision>,
    /// B binds a symbolic dimension to this value: `--b-dim batch=8`.
    #[arg(long = "b-dim", value_name = "NAME=N", value_parser = parse_dim)]
    pub b_dims: Vec<(String, i64)>,
    /// B counts a multiply-add as two FLOPs.
    #[arg(long = "b-no-fma")]
    pub b_no_fma: bool,
    /// B folds no constant node away.
    #[arg(long = "b-no-fold")]
    pub b_no_fold: bool,
    /// B's attention counting.
    #[arg(long = "b-attention", value_enum)]
    pub b_attention: Option<Attention>,
    /// B counts each weight a rule asks `nnz()` of as if the fraction R of
    /// it were zero: `c3 diff m.onnx --rules sparse --b-prune 0.5`.
    #[arg(long = "b-prune", value_name = "R")]
    pub b_prune: Option<crate::rules::Prune>,
    /// Show only the rows that differ (the total stays).
    #[arg(long)]
    pub changed: bool,
    /// B's roofline times on this device, A's on `--device`:
    /// `c3 diff m.onnx --device a100 --b-device h100`.
    #[arg(long = "b-device", value_name = "NAME", requires = "device")]
    pub b_device: Option<String>,
}

impl DiffArgs {
    fn options_b(&self) -> EstimateOptions {
        let (a, b) = (&self.a, &self.b);
        let mut o = a.options();
        if !b.b_packs.is_empty() {
            o.packs = b.b_packs.clone();
        }
        o.weights = b.b_weights.map(Precision::dtype).or(o.weights);
        o.activations = b.b_activations.map(Precision::dtype).or(o.activations);
        o.dims.extend(b.b_dims.iter().cloned());
        let attention = b.b_attention.unwrap_or(a.attention);
        o.count = CountOptions {
            prune: b.b_prune.or(a.prune),
            ..count_options(a.no_fma || b.b_no_fma, attention, a.if_branch)
        };
        o.no_fold |= b.b_no_fold;
        o.device = b.b_device.clone().or(o.device);
        o
    }

    fn run(&self) -> Result<String> {
        let a = &self.a;
        if a.more.len() > 1 {
            return Err(Error::Usage(format!(
                "diff compares two models, A and B; {} were given",
                a.more.len() + 1
            )));
        }
        let models = (a.source.model.as_str(), a.more.first().map(String::as_str));
        let options = (&a.options(), &self.options_b());
        commands::diff(models, options, &a.request(), &a.target(), self.b.changed)
    }
}

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// c3's JSON reports with measured times.
    #[arg(value_name = "REPORT", required = true)]
    pub reports: Vec<String>,
    /// The pack folder to write (made if missing): DIR/devices.yaml.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: String,
    /// The device's name in the pack (what --device takes).
    #[arg(long)]
    pub name: String,
    /// A device of the catalog whose peaks and bandwidth the fitted
    /// efficiencies are relative to (default: the best rates the profiles
    /// reached).
    #[arg(long, value_name = "DEVICE")]
    pub base: Option<String>,
    /// What ran the profiles, for the provenance (`onnxruntime 1.32.0`).
    #[arg(long, value_name = "TEXT")]
    pub runtime: Option<String>,
    /// Threads the runtime ran on, where the profiles do not say.
    #[arg(long, value_name = "N")]
    pub threads: Option<u64>,
    /// Replace a devices.yaml that c3 calibrate did not write.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct DocsArgs {
    /// Fail when the file differs from what the rules render.
    #[arg(long)]
    pub check: bool,
    /// The file to write or check (`-`: standard output; default
    /// DETAILS.md, or standard output with --rules).
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    /// Document a pack's rules instead, and what each overrides.
    #[arg(long = "rules", value_name = "PACK")]
    pub pack: Option<String>,
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
        Command::Estimate(a) if a.more.is_empty() && !is_dir(&a.source.model) => {
            commands::estimate(&a.source.model, &a.options(), &a.request(), &a.target())
        }
        Command::Estimate(a) => {
            let models: Vec<String> = std::iter::once(&a.source.model)
                .chain(&a.more)
                .cloned()
                .collect();
            commands::estimate_many(&models, &a.options(), &a.request(), &a.target())
        }
        Command::Diff(a) => a.run(),
        Command::Explain(a) => reference::explain(&a),
        Command::Docs(a) => {
            commands::docs(a.output.as_deref(), a.check, a.force, a.pack.as_deref())
        }
        Command::Rules(RulesCommand::List { rules, format }) => {
            let text = report::catalog::rules_list(&rules.load()?, format);
            Ok(Meta::listing(&rules.packs).wrap_text("rules", text))
        }
        Command::Rules(RulesCommand::Check { dir }) => commands::rules_check(&dir),
        Command::Completions { shell } => reference::completions(shell),
        Command::Man => reference::man(),
        Command::Shapes(a) => {
            let target = Target {
                path: a.output.clone(),
                force: a.force,
            };
            commands::shapes(&a.source.model, &a.source.bindings(), a.format, &target)
        }
        Command::Annotate(a) if !a.more.is_empty() => {
            Err(Error::Usage("annotate takes one model".into()))
        }
        Command::Annotate(a) => commands::annotate(&a.source.model, &a.options(), &a.target()),
        Command::Calibrate(a) => {
            let target = Target {
                path: Some(a.output),
                force: a.force,
            };
            let opts = crate::calibrate::CalibrateOptions {
                name: a.name,
                runtime: a.runtime,
                threads: a.threads,
                ..Default::default()
            };
            commands::calibrate(&a.reports, &target, a.base.as_deref(), opts)
        }
        Command::Devices { rules, format } => {
            let text = report::catalog::devices(&rules.load()?, format);
            Ok(Meta::listing(&rules.packs).wrap_text("devices", text))
        }
    }
}

fn parse_columns(s: &str) -> std::result::Result<Columns, String> {
    report::parse_columns(s).map(Columns)
}

fn is_dir(path: &str) -> bool {
    path != output::STDOUT && std::path::Path::new(path).is_dir()
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
        timing: false,
    }
}

impl ModelArgs {
    fn bindings(&self) -> commands::Bindings {
        (
            self.dims.iter().cloned().collect(),
            self.inputs.iter().cloned().collect(),
        )
    }
}

impl EstimateArgs {
    fn options(&self) -> EstimateOptions {
        let (dims, inputs) = self.source.bindings();
        EstimateOptions {
            dims,
            inputs,
            packs: self.rules.packs.clone(),
            count: CountOptions {
                prune: self.prune,
                ..count_options(self.no_fma, self.attention, self.if_branch)
            },
            weights: self.weights.map(Precision::dtype),
            activations: self.activations.map(Precision::dtype),
            device: self.device.clone(),
            measured_s: self.measured,
            profile: self.profile.clone(),
            strict: self.strict,
            no_fold: self.no_fold,
            training: self.training.options(),
        }
    }

    fn request(&self) -> ReportRequest {
        ReportRequest {
            format: self.format,
            unit: self.unit,
            digits: self.digits,
            columns: self.columns.as_ref().map(|c| c.0.clone()),
            parts: match (self.summary, self.layers) {
                (true, _) => Parts::Summary,
                (_, true) => Parts::Layers,
                _ => Parts::Both,
            },
            metric: self.metric,
            sort: self.sort,
            top: self.top,
            color: self.color,
            depth: self.depth.map(usize::from),
        }
    }

    fn target(&self) -> Target {
        Target {
            path: self.output.clone(),
            force: self.force,
        }
    }
}
