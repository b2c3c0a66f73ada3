//! The `c3` command line: flags defined once with clap, each command a
//! function returning the text to print or an [`Error`].

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};

use clap::{Args, Parser, Subcommand};

mod pictures;

use crate::cost::{self, CostReport};
use crate::error::{Error, Result};
use crate::ir::{AttrValue, DEFAULT_OPSET, DType, Dim, Graph, Node, TensorFact};
use crate::report::model_explorer::Metric;
use crate::report::{self, Format, Parts, ReportOptions, Unit};
use crate::rules::rule::BranchChoice;
use crate::rules::rule::show_value;
use crate::rules::{CountOptions, RuleSet, render};

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
    /// Write a copy of an ONNX model with each node's costs in its
    /// metadata_props (Netron shows them) and the inferred shapes in
    /// value_info; takes the options of `estimate` (-o is required).
    Annotate(EstimateArgs),
    /// The device catalog for roofline estimates.
    Devices {
        #[command(flatten)]
        rules: RuleArgs,
        /// table or json
        #[arg(long, default_value = "table")]
        format: String,
    },
}

#[derive(Args, Debug)]
pub struct ShapesArgs {
    #[command(flatten)]
    pub source: ModelArgs,
    /// table or json
    #[arg(long, default_value = "table")]
    pub format: String,
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
    pub fn load(&self) -> Result<RuleSet> {
        let mut set = RuleSet::builtin()?;
        for p in &self.packs {
            set.load_pack(p)?;
        }
        Ok(set)
    }
}

#[derive(Args, Debug, Default)]
pub struct ModelArgs {
    /// An ONNX model (.onnx) or an operator trace (JSON).
    pub model: String,
    /// Bind a symbolic dimension everywhere, e.g. `--dim batch=8`.
    #[arg(long = "dim", value_name = "NAME=N")]
    pub dims: Vec<String>,
    /// Override a model input's shape, e.g. `--input images=1x3x224x224`.
    #[arg(long = "input", value_name = "NAME=SHAPE")]
    pub inputs: Vec<String>,
}

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
    /// Which If branch the totals count: larger, smaller, then, else (the
    /// other is reported beside them).
    #[arg(long, value_name = "WHICH", default_value = "larger")]
    pub if_branch: BranchChoice,
    /// Output format: table, md, csv, json, html, model-explorer (default:
    /// table on a terminal, md otherwise).
    #[arg(long)]
    pub format: Option<String>,
    /// The figure `--format model-explorer` colours the nodes by.
    #[arg(long, value_enum, default_value_t = Metric::Flops)]
    pub metric: Metric,
    /// Unit prefix: auto, none, K, M, G, T (FLOPs by 1000, bytes by 1024).
    #[arg(long, default_value = "auto")]
    pub unit: String,
    /// Digits after the decimal point (0 to 10).
    #[arg(long, default_value_t = 3)]
    pub digits: usize,
    /// Layer columns: comma list of name, op, flops, mread, mwrite, mrw,
    /// flops%, mread%, mwrite%, mrw%, inputs, outputs, params; or default, percent, all.
    #[arg(long, default_value = "default")]
    pub columns: String,
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
    /// What if the weights were stored in this type: fp32, fp16, bf16, fp8, int8, int4.
    #[arg(long, value_name = "TYPE")]
    pub weights: Option<String>,
    /// What if the activations were of this type: fp32, fp16, bf16, fp8, int8, int4.
    #[arg(long, value_name = "TYPE")]
    pub activations: Option<String>,
    /// A measured latency (`2.4ms`, `850us`) to compare with the roofline bounds.
    #[arg(long, value_name = "TIME", requires = "device")]
    pub measured: Option<String>,
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
    #[arg(long = "in", value_name = "NAME=SHAPE")]
    pub tensors: Vec<String>,
    /// An attribute, e.g. `--attr strides=2,2` or `--attr mode=linear`.
    #[arg(long = "attr", value_name = "NAME=VALUE")]
    pub attrs: Vec<String>,
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
        /// table or json
        #[arg(long, default_value = "table")]
        format: String,
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
            eprintln!("error: {}", one_line(&e.to_string()));
            e.exit_code()
        }
    }
}

/// Errors are printed at most this many characters long.
pub const MAX_ERROR_CHARS: usize = 480;

/// An error as one line a person reads: control characters (a newline in a
/// node's name) become spaces, and an overlong message (a long chain of
/// nested subgraphs) keeps its start, which names the place, and its end,
/// which says what went wrong.
pub fn one_line(message: &str) -> String {
    let clean: Vec<char> = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.len() <= MAX_ERROR_CHARS {
        return clean.into_iter().collect();
    }
    let head = MAX_ERROR_CHARS / 3;
    let tail = MAX_ERROR_CHARS - head - 3;
    let mut out: String = clean[..head].iter().collect();
    out.push_str(" … ");
    out.extend(&clean[clean.len() - tail..]);
    out
}

/// Runs one command; what it returns goes to standard output.
pub fn run(cli: Cli) -> Result<String> {
    match cli.command {
        Command::Estimate(a) => estimate(&a),
        Command::Explain(a) => explain(&a),
        Command::Docs(a) => docs(&a),
        Command::Rules(RulesCommand::List { rules, format }) => rules_list(&rules.load()?, &format),
        Command::Rules(RulesCommand::Check { dir }) => rules_check(&dir),
        Command::Shapes(a) => shapes(&a),
        Command::Annotate(a) => pictures::annotate(&a),
        Command::Devices { rules, format } => devices(&rules.load()?, &format),
    }
}

fn parse_kv<'a>(s: &'a str, flag: &str) -> Result<(&'a str, &'a str)> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| Error::Usage(format!("{flag} {s}: expected NAME=VALUE")))
}

fn parse_dims(list: &[String]) -> Result<BTreeMap<String, i64>> {
    let mut out = BTreeMap::new();
    for d in list {
        let (k, v) = parse_kv(d, "--dim")?;
        let n: i64 =
            v.parse().ok().filter(|n: &i64| *n >= 0).ok_or_else(|| {
                Error::Usage(format!("--dim {d}: {v} is not a non-negative integer"))
            })?;
        out.insert(k.to_string(), n);
    }
    Ok(out)
}

fn report_options(a: &EstimateArgs) -> Result<ReportOptions> {
    let format = match &a.format {
        Some(f) => f.parse::<Format>().map_err(Error::Usage)?,
        None if std::io::stdout().is_terminal() && a.output.is_none() => Format::Table,
        None => Format::Md,
    };
    if a.digits > 10 {
        return Err(Error::Usage(format!(
            "--digits {}: must be 0 to 10",
            a.digits
        )));
    }
    Ok(ReportOptions {
        format,
        unit: a.unit.parse::<Unit>().map_err(Error::Usage)?,
        digits: a.digits,
        columns: report::parse_columns(&a.columns).map_err(Error::Usage)?,
        parts: if a.summary {
            Parts::Summary
        } else if a.layers {
            Parts::Layers
        } else {
            Parts::Both
        },
        metric: a.metric,
        ..ReportOptions::default()
    })
}

/// Whether a file is an operator trace (JSON) rather than an ONNX model.
fn is_trace(path: &str) -> Result<bool> {
    use std::io::Read;
    // Reading a pipe or a device could block or never end.
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::Input {
            path: path.to_string(),
            message: "not a regular file".into(),
        });
    }
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| Error::io(path, e))?;
    Ok(head[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'))
}

fn parse_inputs(list: &[String]) -> Result<BTreeMap<String, Vec<u64>>> {
    let mut out = BTreeMap::new();
    for i in list {
        let (k, v) = parse_kv(i, "--input")?;
        let t = parse_shape(v, &format!("--input {i}"))?;
        out.insert(
            k.to_string(),
            t.shape.iter().filter_map(Dim::known).collect(),
        );
    }
    Ok(out)
}

/// Loads an ONNX model and infers its shapes (only the nodes' when
/// `nodes_only`: costing needs no list of every value).
fn infer_model(
    a: &ModelArgs,
    nodes_only: bool,
) -> Result<(crate::onnx::OnnxModel, crate::onnx::infer::Inferred)> {
    let model = crate::onnx::load(&a.model)?;
    let opts = crate::onnx::infer::InferOptions {
        dims: parse_dims(&a.dims)?,
        inputs: parse_inputs(&a.inputs)?,
        nodes_only,
    };
    let inferred = crate::onnx::infer::infer(&model, &opts)?;
    Ok((model, inferred))
}

/// Reads the model or trace into the graph the cost stage sees.
fn read_graph(a: &ModelArgs) -> Result<Graph> {
    let trace = is_trace(&a.model)?;
    let mut graph = if trace {
        if !a.inputs.is_empty() {
            return Err(Error::Usage(
                "--input applies to ONNX models, not traces".into(),
            ));
        }
        crate::trace::read_trace(&a.model)?
    } else {
        crate::onnx::infer::to_graph(infer_model(a, true)?.1)
    };
    graph.bind(&parse_dims(&a.dims)?);
    let unbound = graph.unbound_symbols();
    if !unbound.is_empty() {
        let flags: Vec<String> = unbound.iter().map(|s| format!("--dim {s}=N")).collect();
        let or_input = if trace {
            ""
        } else {
            " (or give an input's shape with --input NAME=1x3x224x224)"
        };
        // Sizes made up after a layer c3 could not analyse come from it:
        // name that layer, the cause to fix.
        let cause = match graph.unanalysed.first() {
            Some((n, why)) if unbound.iter().all(|s| !graph.input_symbols.contains(s)) => {
                format!(
                    "; they follow from layers c3 could not analyse, first '{}' ({}): {why}",
                    n.name,
                    crate::rules::rule::qualified(&n.domain, &n.op)
                )
            }
            _ => String::new(),
        };
        return Err(Error::Input {
            path: a.model.clone(),
            message: format!(
                "sizes unknown until bound: {}; bind them with {}{or_input}{cause}",
                unbound.join(", "),
                flags.join(" ")
            ),
        });
    }
    Ok(graph)
}

/// A what-if precision name.
fn precision_type(flag: &str, v: &Option<String>) -> Result<Option<DType>> {
    let Some(v) = v else { return Ok(None) };
    let t = match v.to_ascii_lowercase().as_str() {
        "fp32" | "float32" => DType::Float32,
        "fp16" | "float16" => DType::Float16,
        "bf16" | "bfloat16" => DType::Bfloat16,
        "fp8" | "float8" | "float8e4m3fn" => DType::Float8E4M3Fn,
        "int8" => DType::Int8,
        "int4" => DType::Int4,
        _ => {
            return Err(Error::Usage(format!(
                "{flag} {v}: expected fp32, fp16, bf16, fp8, int8 or int4"
            )));
        }
    };
    Ok(Some(t))
}

/// `--attention`: which (query, key) pairs attention rules count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Attention {
    /// Those a causal or windowed mask leaves.
    Masked,
    /// All of them, the whole square.
    Full,
}

/// The counting switches of `c3 estimate`.
fn count_options(a: &EstimateArgs) -> CountOptions {
    CountOptions {
        fma: !a.no_fma,
        full_attention: a.attention == Attention::Full,
        branch: a.if_branch,
    }
}

/// Reads the model or trace and computes its costs (shared by tests).
pub fn estimate_report(a: &EstimateArgs) -> Result<CostReport> {
    let opts = count_options(a);
    let rules = a.rules.load()?;
    let mut graph = read_graph(&a.source)?;
    graph.override_precision(
        precision_type("--weights", &a.weights)?,
        precision_type("--activations", &a.activations)?,
    );
    let report = cost::estimate(&graph, &rules, opts);
    // `c3 estimate` exits right after this: freeing a large graph node by
    // node would cost more than it saves.
    std::mem::forget(graph);
    report
}

fn estimate(a: &EstimateArgs) -> Result<String> {
    let mut opts = report_options(a)?;
    opts.about = pictures::about(a);
    if opts.format == Format::ModelExplorer {
        opts.node_ids = pictures::node_ids(a)?;
    }
    let report = estimate_report(a)?;
    if !report.unsupported.is_empty() {
        let mut by_op: BTreeMap<String, usize> = BTreeMap::new();
        for u in &report.unsupported {
            *by_op
                .entry(crate::rules::rule::qualified(&u.domain, &u.op))
                .or_default() += 1;
        }
        let ops: Vec<String> = by_op.iter().map(|(op, n)| format!("{op} ({n})")).collect();
        if a.strict {
            return Err(Error::Unsupported {
                count: report.unsupported.len(),
                ops: ops.join(", "),
            });
        }
        eprintln!(
            "warning: {} layer(s) are not counted (see the unsupported list): {}",
            report.unsupported.len(),
            ops.join(", ")
        );
    }
    let roofline = match &a.device {
        None => None,
        Some(name) => {
            let rules = a.rules.load()?;
            let device = rules.devices.find(name).ok_or_else(|| {
                let names: Vec<&str> = rules.devices.iter().map(|d| d.key.as_str()).collect();
                Error::Usage(format!(
                    "--device {name}: unknown device (known: {})",
                    names.join(", ")
                ))
            })?;
            let measured = match &a.measured {
                None => None,
                Some(m) => Some(crate::device::parse_duration(m).ok_or_else(|| {
                    Error::Usage(format!(
                        "--measured {m}: expected a duration like 2.4ms or 850us"
                    ))
                })?),
            };
            Some(crate::device::roofline(&report, device, measured))
        }
    };
    let text = report::render(&report, &opts, roofline.as_ref());
    // The process exits next: freeing a large model's report piece by piece
    // would cost more than writing it.
    std::mem::forget(report);
    std::mem::forget(roofline);
    match &a.output {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
            Ok(String::new())
        }
        None => Ok(text),
    }
}

fn parse_shape(s: &str, flag: &str) -> Result<TensorFact> {
    let (shape, dtype) = match s.split_once(':') {
        Some((sh, dt)) => (
            sh,
            DType::parse(dt)
                .ok_or_else(|| Error::Usage(format!("{flag}: unknown dtype '{dt}'")))?,
        ),
        None => (s, DType::Float32),
    };
    let dims = if shape == "scalar" {
        Vec::new()
    } else {
        shape
            .split(['x', 'X', ','])
            .map(|d| {
                d.trim().parse::<u64>().map(Dim::Known).map_err(|_| {
                    Error::Usage(format!(
                        "{flag}: '{d}' is not a dimension (write 1x3x224x224)"
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?
    };
    Ok(TensorFact::new(dtype, dims))
}

fn parse_attr(v: &str) -> AttrValue {
    let ints: Option<Vec<i64>> = v.split(',').map(|x| x.trim().parse().ok()).collect();
    let floats: Option<Vec<f64>> = v.split(',').map(|x| x.trim().parse().ok()).collect();
    let is_list = v.contains(',') || v.starts_with('[');
    let stripped = v.trim_start_matches('[').trim_end_matches(']');
    if is_list && stripped != v {
        return parse_list_attr(stripped);
    }
    match (ints, floats) {
        (Some(i), _) if is_list => AttrValue::Ints(i),
        (Some(i), _) => AttrValue::Int(i[0]),
        (None, Some(f)) if is_list => AttrValue::Floats(f),
        (None, Some(f)) => AttrValue::Float(f[0]),
        _ if is_list => AttrValue::Strs(v.split(',').map(|s| s.trim().to_string()).collect()),
        _ => AttrValue::Str(v.to_string()),
    }
}

fn parse_list_attr(inner: &str) -> AttrValue {
    if inner.trim().is_empty() {
        return AttrValue::Ints(Vec::new());
    }
    match parse_attr(&format!("{inner},")) {
        // The trailing comma marks a list; drop the empty last item it made.
        AttrValue::Strs(mut v) => {
            v.pop();
            AttrValue::Strs(v)
        }
        other => other,
    }
}

fn explain(a: &ExplainArgs) -> Result<String> {
    let rules = a.rules.load()?;
    let rule = rules.find(&a.op).ok_or_else(|| {
        Error::Usage(format!(
            "no rule for operator '{}' (`c3 rules list` shows every rule)",
            a.op
        ))
    })?;
    let mut out = String::new();
    let origin = if rule.origin.builtin {
        format!("built-in, {}:{}", rule.origin.file, rule.origin.line)
    } else {
        format!("pack, {}:{}", rule.origin.file, rule.origin.line)
    };
    out.push_str(&format!(
        "{} — {}\n  domain:   {}\n  category: {}\n  rule:     {}\n\n",
        rule.qualified_name(),
        rule.summary,
        if rule.domain.is_empty() {
            "ai.onnx"
        } else {
            &rule.domain
        },
        rule.category,
        origin
    ));
    for line in rule.doc.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    if let Some(reason) = &rule.unsupported {
        out.push_str(&format!(
            "\n  Not counted: layers of this op are listed as unsupported: {reason}\n"
        ));
        return Ok(out);
    }
    out.push('\n');
    out.push_str(&format!(
        "  inputs:  {}\n  outputs: {}\n",
        rule.inputs_text, rule.outputs_text
    ));
    for at in &rule.attrs {
        let d = at
            .default
            .as_ref()
            .map_or("(none)".to_string(), |d| render::to_text(&d.ast));
        out.push_str(&format!("  attr {} = {d}\n", at.name));
    }
    for (n, f) in &rule.lets {
        out.push_str(&format!("  let {n} = {}\n", render::to_text(&f.ast)));
    }
    out.push_str(&format!(
        "  flops  = {}\n",
        render::to_text(&rule.flops.ast)
    ));
    if let Some(i) = &rule.iops {
        out.push_str(&format!("  iops   = {}\n", render::to_text(&i.ast)));
    }
    out.push_str(&format!(
        "  mread  = {}    (|T| in bytes)\n",
        render::to_text(&rule.mread.ast)
    ));
    out.push_str(&format!(
        "  mwrite = {}    (|T| in bytes)\n",
        render::to_text(&rule.mwrite.ast)
    ));
    for (n, f) in &rule.params {
        out.push_str(&format!("  param {n} = {}\n", render::to_text(&f.ast)));
    }
    if a.tensors.is_empty() && a.attrs.is_empty() {
        return Ok(out);
    }

    // Evaluate on the given shapes: place each tensor by its pattern name.
    let mut given: BTreeMap<String, Vec<TensorFact>> = BTreeMap::new();
    for t in &a.tensors {
        let (k, v) = parse_kv(t, "--in")?;
        given
            .entry(k.to_string())
            .or_default()
            .push(parse_shape(v, &format!("--in {t}"))?);
    }
    let place = |pats: &[crate::rules::ast::TensorPat],
                 given: &mut BTreeMap<String, Vec<TensorFact>>| {
        let mut list: Vec<Option<TensorFact>> = Vec::new();
        for p in pats {
            let mut ts = given.remove(&p.name).unwrap_or_default();
            if p.variadic {
                list.extend(ts.into_iter().map(Some));
            } else {
                if ts.len() > 1 {
                    return Err(Error::Usage(format!(
                        "--in {}: given more than once",
                        p.name
                    )));
                }
                list.push(ts.pop());
            }
        }
        while list.last().is_some_and(Option::is_none) {
            list.pop();
        }
        Ok(list)
    };
    let inputs = place(&rule.inputs, &mut given)?;
    let outputs = place(&rule.outputs, &mut given)?;
    if let Some(name) = given.keys().next() {
        return Err(Error::Usage(format!(
            "--in {name}: {} has no tensor named {name} (inputs: {}; outputs: {})",
            rule.op, rule.inputs_text, rule.outputs_text
        )));
    }
    let mut attrs = BTreeMap::new();
    for at in &a.attrs {
        let (k, v) = parse_kv(at, "--attr")?;
        if !rule.attrs.iter().any(|d| d.name == k) {
            let known: Vec<&str> = rule.attrs.iter().map(|d| d.name.as_str()).collect();
            return Err(Error::Usage(format!(
                "--attr {k}: {} has no attribute {k} (attributes: {})",
                rule.op,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
        attrs.insert(k.to_string(), parse_attr(v));
    }
    for (i, p) in rule.outputs.iter().enumerate() {
        if !p.optional && !p.variadic && outputs.get(i).is_none_or(Option::is_none) {
            return Err(Error::Usage(format!(
                "output {} needs a shape: add --in {}=... (c3 explain does not infer shapes yet)",
                p.name, p.name
            )));
        }
    }
    let node = Node {
        name: rule.op.clone(),
        op: rule.op.clone(),
        domain: rule.domain.clone(),
        opset: a.opset,
        attrs,
        inputs,
        outputs,
        bodies: Vec::new(),
    };
    let ev = rule
        .explain(
            &node,
            CountOptions {
                full_attention: a.attention == Attention::Full,
                ..CountOptions::fma(!a.no_fma)
            },
        )
        .map_err(|e| Error::Usage(format!("cannot evaluate {}: {e}", rule.op)))?;
    out.push_str(&format!(
        "\nEvaluated (fma {}):\n",
        if a.no_fma { "off" } else { "on" }
    ));
    for (n, v) in &ev.bindings {
        out.push_str(&format!("  {n} = {}\n", show_value(v)));
    }
    out.push_str(&format!(
        "  flops  = {}\n  iops   = {}\n  mread  = {} bytes\n  mwrite = {} bytes\n",
        ev.flops, ev.iops, ev.mread, ev.mwrite
    ));
    for (n, v) in &ev.params {
        out.push_str(&format!("  param {n} = {}\n", show_value(v)));
    }
    Ok(out)
}

fn docs(a: &DocsArgs) -> Result<String> {
    let text = crate::docs::render(&RuleSet::builtin()?)?;
    if a.check {
        let current = std::fs::read_to_string(&a.output).map_err(|e| Error::io(&a.output, e))?;
        if current != text {
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

fn rules_list(rules: &RuleSet, format: &str) -> Result<String> {
    let source = |r: &crate::rules::CostRule| format!("{}:{}", r.origin.file, r.origin.line);
    match format {
        "json" => {
            let list: Vec<serde_json::Value> = rules
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "op": r.op,
                        "domain": if r.domain.is_empty() { "ai.onnx" } else { &r.domain },
                        "category": r.category,
                        "source": source(r),
                        "builtin": r.origin.builtin,
                    })
                })
                .collect();
            Ok(serde_json::to_string_pretty(&list).expect("JSON values always serialize") + "\n")
        }
        "table" => {
            let mut t = comfy_table::Table::new();
            t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
                .set_header(vec!["Op", "Domain", "Category", "Source"]);
            for r in rules.iter() {
                let src = if r.origin.builtin {
                    format!("{} (built-in)", source(r))
                } else {
                    source(r)
                };
                t.add_row(vec![
                    r.op.clone(),
                    if r.domain.is_empty() {
                        "ai.onnx".into()
                    } else {
                        r.domain.clone()
                    },
                    r.category.clone(),
                    src,
                ]);
            }
            Ok(format!("{t}\n{} rules\n", rules.len()))
        }
        other => Err(Error::Usage(format!(
            "--format {other}: expected table or json"
        ))),
    }
}

fn rules_check(dir: &str) -> Result<String> {
    let mut set = RuleSet::builtin()?;
    if !std::path::Path::new(dir).is_dir() {
        return Err(Error::Usage(format!("{dir}: not a folder")));
    }
    let builtin = set.clone();
    let ops = set.load_dir(std::path::Path::new(dir))?;
    let overridden = ops.iter().filter(|q| builtin.find(q).is_some()).count();
    Ok(format!(
        "{dir}: ok, {} rule(s): {} ({} override built-in rules)\n",
        ops.len(),
        ops.join(", "),
        overridden
    ))
}

fn dim_json(d: &Dim) -> serde_json::Value {
    match d {
        Dim::Known(n) => serde_json::json!(n),
        Dim::Sym(s) => serde_json::json!(s.to_string()),
    }
}

fn shapes(a: &ShapesArgs) -> Result<String> {
    let (model, inferred) = infer_model(&a.source, false)?;
    let mut note = String::new();
    if let Some(out) = &a.output {
        let n = write_value_info(&model, &inferred, out)?;
        note = format!("wrote {out} with {n} inferred value_info entries\n");
    }
    let text = match a.format.as_str() {
        "json" => {
            let mut tensors = serde_json::Map::new();
            for (name, f) in &inferred.values {
                tensors.insert(
                    name.clone(),
                    serde_json::json!({
                        "dtype": f.dtype.map(DType::name),
                        "shape": f.shape.as_ref().map(|s| s.iter().map(dim_json).collect::<Vec<_>>()),
                    }),
                );
            }
            serde_json::to_string_pretty(&serde_json::json!({ "tensors": tensors }))
                .expect("JSON values always serialize")
                + "\n"
        }
        "table" => {
            let mut t = comfy_table::Table::new();
            t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
                .set_header(vec!["Tensor", "Type", "Shape"]);
            for (name, f) in &inferred.values {
                let shape = match &f.shape {
                    Some(s) => crate::ir::shape_string(s),
                    None => "?".to_string(),
                };
                let dtype = f.dtype.map_or("?".to_string(), |d| d.name().to_string());
                t.add_row(vec![name.clone(), dtype, shape]);
            }
            format!("{t}\n{} tensors\n", inferred.values.len())
        }
        other => {
            return Err(Error::Usage(format!(
                "--format {other}: expected table or json"
            )));
        }
    };
    Ok(note + &text)
}

/// Writes a copy of the model with every inferred node output in value_info.
/// The entries go in a second serialized `ModelProto` appended to the file:
/// protobuf merges it into the first, so the original bytes (weights
/// included) are copied unchanged.
fn write_value_info(
    model: &crate::onnx::OnnxModel,
    inferred: &crate::onnx::infer::Inferred,
    out: &str,
) -> Result<usize> {
    use crate::onnx::proto::{
        Dimension, GraphProto, ModelProto, TensorShapeProto, TensorTypeProto, TypeProto,
        ValueInfoProto,
    };
    use prost::Message;
    let graph = model
        .model
        .graph
        .as_ref()
        .expect("loader checked the graph");
    let mut skip: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for v in graph
        .input
        .iter()
        .chain(&graph.output)
        .chain(&graph.value_info)
    {
        skip.insert(v.name.as_deref().unwrap_or(""));
    }
    for t in &graph.initializer {
        skip.insert(t.name.as_deref().unwrap_or(""));
    }
    let mut entries = Vec::new();
    for (name, f) in &inferred.values {
        if skip.contains(name.as_str()) || f.kind != crate::shape::ValueKind::Tensor {
            continue;
        }
        let (Some(dtype), Some(shape)) = (f.dtype, &f.shape) else {
            continue;
        };
        let dim = shape
            .iter()
            .map(|d| match d {
                Dim::Known(n) => Dimension {
                    dim_value: Some(*n as i64),
                    dim_param: None,
                },
                Dim::Sym(s) => Dimension {
                    dim_value: None,
                    dim_param: Some(s.to_string()),
                },
            })
            .collect();
        entries.push(ValueInfoProto {
            name: Some(name.clone()),
            r#type: Some(TypeProto {
                tensor_type: Some(TensorTypeProto {
                    elem_type: Some(dtype.onnx_code()),
                    shape: Some(TensorShapeProto { dim }),
                }),
                ..Default::default()
            }),
        });
    }
    let n = entries.len();
    let patch = ModelProto {
        graph: Some(GraphProto {
            value_info: entries,
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut bytes = Vec::with_capacity(model.bytes.len() + 64 * n);
    bytes.extend_from_slice(&model.bytes);
    bytes.extend_from_slice(&patch.encode_to_vec());
    std::fs::write(out, bytes).map_err(|e| Error::io(out, e))?;
    Ok(n)
}

fn devices(rules: &RuleSet, format: &str) -> Result<String> {
    match format {
        "json" => {
            let list: Vec<serde_json::Value> = rules
                .devices
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "name": d.key,
                        "description": d.name,
                        "aliases": d.aliases,
                        "peak_flops": d.peak,
                        "bandwidth": d.bandwidth,
                        "source": d.source,
                    })
                })
                .collect();
            Ok(serde_json::to_string_pretty(&list).expect("JSON values always serialize") + "\n")
        }
        "table" => {
            let mut t = comfy_table::Table::new();
            t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
                .set_header(vec![
                    "Device", "Name", "FP32", "FP16", "BF16", "FP8", "INT8", "GB/s",
                ]);
            let tf = |d: &crate::device::Device, p: &str| {
                d.peak
                    .get(p)
                    .map_or("-".to_string(), |v| format!("{:.1}", v / 1e12))
            };
            for d in rules.devices.iter() {
                t.add_row(vec![
                    d.key.clone(),
                    d.name.clone(),
                    tf(d, "fp32"),
                    tf(d, "fp16"),
                    tf(d, "bf16"),
                    tf(d, "fp8"),
                    tf(d, "int8"),
                    format!("{:.1}", d.bandwidth / 1e9),
                ]);
            }
            Ok(format!(
                "{t}\nPeaks in TFLOP/s (TOPS for INT8), dense; {} devices. Sources: c3 devices --format json\n",
                rules.devices.len()
            ))
        }
        other => Err(Error::Usage(format!(
            "--format {other}: expected table or json"
        ))),
    }
}
