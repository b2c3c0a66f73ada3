//! The library's front door: the whole estimate pipeline behind three calls,
//! shared by the command line, tests and any binding.
//!
//! ```
//! use c3::{EstimateOptions, Model, ReportOptions};
//!
//! let trace = br#"{"layers": [{"op": "Relu", "inputs": [{"shape": ["batch", 64]}],
//!                               "outputs": [{"shape": ["batch", 64]}]}]}"#;
//! let model = Model::from_bytes(trace.to_vec(), "inline.json").unwrap();
//! let mut opts = EstimateOptions::default();
//! opts.dims.insert("batch".into(), 2);
//! opts.device = Some("h100".into());
//! let estimate = model.estimate(&opts).unwrap();
//! assert_eq!(estimate.report.total.flops, 2 * 64); // one max per element
//! assert_eq!(estimate.report.total.mread, 2 * 64 * 4); // float32 input, read once
//! assert!(estimate.roofline.is_some());
//! let text = estimate.render(&ReportOptions::default());
//! assert!(text.contains("Relu-1"));
//! ```

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use crate::cost::{self, CostReport, Roofline};
use crate::error::{Error, Result};
/// The what-if storage types of `--weights` and `--activations`.
pub use crate::ir::Precision;
use crate::ir::{DType, Graph};
use crate::onnx::OnnxModel;
use crate::onnx::infer::{InferOptions, Inferred, Taken};
use crate::output::Output;
use crate::report::{self, ReportOptions};
use crate::rules::{CountOptions, RuleSet};

mod about;
mod dims;
mod fit;

/// A model or operator trace, read and checked, not yet costed.
pub struct Model {
    path: String,
    source: Source,
}

enum Source {
    Onnx(Box<OnnxModel>),
    Trace(Box<Graph>),
}

/// What to estimate and how. `Default` is the built-in rules, FMA counted
/// as one FLOP, no bindings, no device.
#[derive(Debug, Clone, Default)]
pub struct EstimateOptions {
    /// Symbolic dimensions bound everywhere (`batch` = 8).
    pub dims: BTreeMap<String, i64>,
    /// ONNX input shapes that replace the declared ones.
    pub inputs: BTreeMap<String, Vec<u64>>,
    /// Rule packs loaded over the built-in rules, in order: folders or
    /// built-in pack names (`chainer`, `fused`).
    pub packs: Vec<String>,
    pub count: CountOptions,
    /// What-if storage type of the weights.
    pub weights: Option<DType>,
    /// What-if type of the activations.
    pub activations: Option<DType>,
    /// A device of the catalog: adds roofline times.
    pub device: Option<String>,
    /// A measured latency in seconds, compared with the roofline bounds.
    pub measured_s: Option<f64>,
    /// A runtime's profile of this model, joined to its layers (each layer
    /// gets the time its kernel took): one file, or a TensorRT profile and
    /// its engine's layer information (either order, told apart by content).
    pub profile: Vec<String>,
    /// An operator with no rule is an error ([`Error::Unsupported`]), not
    /// a layer left out of the totals.
    pub strict: bool,
    /// Count every node as executed, as an eager framework does: nothing
    /// is folded away at load time (`--no-fold`).
    pub no_fold: bool,
    /// Count a training step: the backward pass, the optimizer's step and
    /// training memory (`--training`).
    pub training: Option<crate::cost::training::TrainingOptions>,
}

impl EstimateOptions {
    /// The built-in rules with [`EstimateOptions::packs`] loaded over them.
    pub fn rules(&self) -> Result<RuleSet> {
        RuleSet::with_packs(&self.packs)
    }

    /// Checks what can be checked without the model (the packs load, the
    /// device is in the catalog), so that a bad option fails at once rather
    /// than after a long analysis.
    pub fn check(&self) -> Result<()> {
        if self.device.is_none() && self.packs.is_empty() && self.count.prune.is_none() {
            return Ok(()); // the built-in rules alone always load
        }
        let rules = self.rules()?;
        if let Some(name) = &self.device {
            rules.device(name)?;
        }
        self.check_prune(&rules)
    }

    /// `--prune` acts through `nnz()`: without a rule that uses it the
    /// flag would change nothing, silently.
    fn check_prune(&self, rules: &RuleSet) -> Result<()> {
        if self.count.prune.is_some() && rules.iter().all(|r| r.nonzero_inputs().is_empty()) {
            return Err(Error::Usage(
                "--prune counts the weights of rules that use nnz(), and no rule in force does \
                 (add --rules sparse)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// The costs of a model, and its roofline times when a device was given.
pub struct Estimate {
    pub report: CostReport,
    pub roofline: Option<Roofline>,
    /// The graph that was costed.
    pub graph: Graph,
    /// The model and every option in force (JSON's `meta`).
    pub meta: report::Meta,
    /// The options in force as (label, value), for human formats.
    pub about: Vec<(String, String)>,
}

/// How the graph to cost is inferred.
enum Inferring {
    /// From the model: its main graph's nodes taken out of it, and its
    /// initializers, where given ([`Model::estimate_file`]).
    Here(Option<Taken>, Option<Vec<crate::proto::TensorProto>>),
    /// Already, by the caller, every value kept: its nodes become the graph.
    Done(Inferred),
}

/// Every value of an ONNX model with its inferred type and shape.
pub struct Shapes {
    pub inferred: Inferred,
    /// JSON's `meta`: the model, and the dims and inputs bound.
    pub meta: report::Meta,
    model: OnnxModel,
}

impl Model {
    /// Reads an ONNX model (`.onnx`) or an operator trace (JSON; told apart by
    /// its first byte); `-` reads either from standard input.
    pub fn open(path: &str) -> Result<Model> {
        if path == STDIN {
            return Model::from_bytes(read_stdin()?, STDIN_NAME);
        }
        let source = if crate::trace::is_trace_file(path)? {
            Source::Trace(Box::new(crate::trace::read_trace(path)?))
        } else {
            Source::Onnx(Box::new(crate::onnx::load(path).map_err(neither)?))
        };
        Ok(Model {
            path: path.to_string(),
            source,
        })
    }

    /// Reads an ONNX model, whatever the file holds; `-` reads standard
    /// input.
    pub fn open_onnx(path: &str) -> Result<Model> {
        if path == STDIN {
            let bytes = Bytes::from(read_stdin()?);
            return Ok(Model {
                path: STDIN_NAME.to_string(),
                source: Source::Onnx(Box::new(crate::onnx::from_bytes(bytes, STDIN_NAME)?)),
            });
        }
        Ok(Model {
            path: path.to_string(),
            source: Source::Onnx(Box::new(crate::onnx::load(path)?)),
        })
    }

    /// A model or trace held in memory; `name` stands for its path in
    /// messages.
    pub fn from_bytes(bytes: impl Into<Bytes>, name: &str) -> Result<Model> {
        let bytes: Bytes = bytes.into();
        let source = if crate::trace::starts_like_json(&bytes) {
            Source::Trace(Box::new(crate::trace::parse_trace(&bytes, name)?))
        } else {
            Source::Onnx(Box::new(
                crate::onnx::from_bytes(bytes, name).map_err(neither)?,
            ))
        };
        Ok(Model {
            path: name.to_string(),
            source,
        })
    }

    /// Its main graph's nodes as runtimes and viewers know them (for a
    /// profile's join); none for a trace, whose layers are known by name.
    pub fn identities(&self) -> Vec<crate::ir::NodeIdentity> {
        match &self.source {
            Source::Onnx(m) => m.identities(),
            Source::Trace(_) => Vec::new(),
        }
    }

    /// The path (or name) the model was read from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether this is an operator trace rather than an ONNX model.
    pub fn is_trace(&self) -> bool {
        matches!(self.source, Source::Trace(_))
    }

    /// The graph the cost stage sees, every symbol bound: ONNX shapes are
    /// inferred first. An unbound symbol is an error that names the flags to
    /// bind it.
    pub fn graph(
        &self,
        dims: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Vec<u64>>,
    ) -> Result<Graph> {
        self.graph_with(dims, inputs, true, Inferring::Here(None, None))
    }

    /// [`Model::graph`]; with `fold` false nothing is folded away.
    fn graph_with(
        &self,
        dims: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Vec<u64>>,
        fold: bool,
        inferring: Inferring,
    ) -> Result<Graph> {
        let mut graph = match &self.source {
            Source::Trace(g) => {
                if !inputs.is_empty() {
                    return Err(Error::Usage(
                        "--input applies to ONNX models, not traces".into(),
                    ));
                }
                (**g).clone()
            }
            Source::Onnx(m) => match inferring {
                Inferring::Here(taken, initializers) => {
                    let opts = infer_options(dims, inputs, true, false);
                    crate::onnx::infer::graph::infer_graph_with(
                        m,
                        taken,
                        &opts,
                        fold,
                        initializers,
                    )?
                }
                Inferring::Done(inferred) => crate::onnx::infer::to_graph_with(inferred, fold),
            },
        };
        let declared = match &self.source {
            Source::Onnx(m) => m.model.graph.as_ref(),
            Source::Trace(_) => None,
        };
        dims::check_dims(
            dims,
            declared,
            || dims::listed(&graph.input_symbols, &graph.bounds, &graph.bound_symbols),
            |known| known.extend(graph.symbols()),
        )?;
        graph.bind(dims);
        let unbound = graph.unbound_symbols();
        if unbound.is_empty() {
            return Ok(graph);
        }
        let flags: Vec<String> = unbound.iter().map(|s| format!("--dim {s}=N")).collect();
        let or_input = if self.is_trace() {
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
                    crate::ir::qualified(&n.domain, &n.op)
                )
            }
            _ => String::new(),
        };
        Err(Error::Input {
            path: self.path.clone(),
            message: format!(
                "sizes unknown until bound: {}; bind them with {}{or_input}{cause}",
                unbound.join(", "),
                flags.join(" ")
            ),
        })
    }

    /// Costs every layer; with a device, its roofline times too.
    pub fn estimate(&self, opts: &EstimateOptions) -> Result<Estimate> {
        let rules = opts.rules()?;
        let ids = self.identities_for(opts);
        let graph = self.prepare(opts, &rules, Inferring::Here(None, None))?;
        costed(
            graph,
            &rules,
            opts,
            opts.meta(self),
            opts.about(&self.path),
            &ids,
        )
    }

    /// [`Model::estimate`], consuming the model: each node's record is
    /// dropped once inferred, so a large model never holds its decoded
    /// nodes and their inferred facts at once (the command line's way).
    pub fn into_estimate(self, opts: &EstimateOptions) -> Result<Estimate> {
        self.estimate_taken(opts, None)
    }

    /// [`Model::open`] then [`Model::into_estimate`], the main graph's node
    /// records left encoded until inference reaches each (a large model's
    /// nodes are never all decoded at once).
    pub fn estimate_file(path: &str, opts: &EstimateOptions) -> Result<Estimate> {
        // A profile's join needs the nodes as the file lists them: decoded.
        if path == STDIN || !opts.profile.is_empty() || crate::trace::is_trace_file(path)? {
            return Model::open(path)?.into_estimate(opts);
        }
        let (model, taken) = Model::open_encoded(path).map_err(neither)?;
        model.estimate_taken(opts, taken)
    }

    /// The ONNX model at `path`, and its main graph's node records left
    /// encoded beside it ([`crate::onnx::load_encoded`]) when they are
    /// plainly readable.
    fn open_encoded(path: &str) -> Result<(Model, Option<Taken>)> {
        let (m, encoded) = crate::onnx::load_encoded(path)?;
        let model = Model {
            path: path.to_string(),
            source: Source::Onnx(Box::new(m)),
        };
        Ok((model, encoded.map(Taken::Encoded)))
    }

    /// [`Model::into_estimate`] of the main graph's nodes `taken` (or, when
    /// `None`, taken out of the model here).
    fn estimate_taken(mut self, opts: &EstimateOptions, taken: Option<Taken>) -> Result<Estimate> {
        let rules = opts.rules()?;
        let ids = self.identities_for(opts);
        let taken = match &mut self.source {
            Source::Onnx(m) => taken.or_else(|| take_nodes(m).map(Taken::Nodes)),
            Source::Trace(_) => None,
        };
        // The main graph's initializers go to the walk, which frees them
        // once their facts are made, unless a rule reads a weight's
        // nonzeros (counted from them after the walk).
        let initializers = match &mut self.source {
            Source::Onnx(m) if !rules.reads_nonzeros() => m
                .model
                .graph
                .as_mut()
                .map(|g| std::mem::take(&mut g.initializer)),
            _ => None,
        };
        let graph = self.prepare(opts, &rules, Inferring::Here(taken, initializers))?;
        // The weights' records have given all they had to give: shapes,
        // and the nonzeros a rule asked for.
        if let Source::Onnx(m) = &mut self.source
            && let Some(g) = &mut m.model.graph
        {
            g.initializer = Vec::new();
            g.sparse_initializer = Vec::new();
        }
        costed(
            graph,
            &rules,
            opts,
            opts.meta(&self),
            opts.about(&self.path),
            &ids,
        )
    }

    /// [`Model::identities`] when a profile is to be joined, else none.
    fn identities_for(&self, opts: &EstimateOptions) -> Vec<crate::ir::NodeIdentity> {
        if !opts.profile.is_empty() {
            self.identities()
        } else {
            Vec::new()
        }
    }

    /// The graph to cost: shapes inferred and bound, nonzeros counted.
    /// `taken`: the main graph's nodes, taken out of the model
    /// ([`Model::into_estimate`]).
    fn prepare(
        &self,
        opts: &EstimateOptions,
        rules: &RuleSet,
        inferring: Inferring,
    ) -> Result<Graph> {
        opts.check_prune(rules)?;
        let mut graph = self.graph_with(&opts.dims, &opts.inputs, !opts.no_fold, inferring)?;
        if opts.count.prune.is_none() && rules.reads_nonzeros() {
            self.count_nonzeros(&mut graph.nodes, rules, &mut Weights::default())?;
        }
        graph.override_precision(opts.weights, opts.activations);
        Ok(graph)
    }

    /// Counts the nonzero elements of each weight a rule asks `nnz()` of,
    /// reading those weights and no others, each once (`weights.counted`,
    /// by name). Subgraph bodies included; a trace has no values, so
    /// nothing to read.
    fn count_nonzeros<'m>(
        &'m self,
        nodes: &mut [crate::ir::Node],
        rules: &RuleSet,
        weights: &mut Weights<'m>,
    ) -> Result<()> {
        let Source::Onnx(m) = &self.source else {
            return Ok(());
        };
        let Some(g) = &m.model.graph else {
            return Ok(());
        };
        for node in nodes {
            for b in &mut node.bodies {
                if let Ok(body) = &mut b.graph {
                    self.count_nonzeros(&mut body.nodes, rules, weights)?;
                }
            }
            let Some(rule) = rules.get(&node.domain, &node.op) else {
                continue;
            };
            for i in rule.nonzero_inputs() {
                let Some(Some(fact)) = std::sync::Arc::make_mut(&mut node.inputs).get_mut(i) else {
                    continue;
                };
                let Some(name) = fact.name.as_deref().filter(|_| fact.constant) else {
                    continue;
                };
                if let Some(&z) = weights.counted.get(name) {
                    fact.nonzeros = Some(z);
                    continue;
                }
                // A constant c3 computed (folded) has no stored values: it
                // stays dense. The weights are looked up by name, indexed
                // on the first look (a search of the list each time took
                // time growing with the square of a large model's size).
                let by_name = weights.by_name.get_or_insert_with(|| {
                    g.initializer
                        .iter()
                        .filter_map(|t| Some((t.name.as_deref()?, t)))
                        .collect()
                });
                let Some(&t) = by_name.get(name) else {
                    continue;
                };
                let fail = |e: String| Error::Input {
                    path: self.path.clone(),
                    message: format!("weight '{name}' of layer '{}': {e}", node.name),
                };
                let dtype = crate::onnx::tensor::dtype_of(t).map_err(fail)?;
                let n = crate::onnx::tensor::element_count(&t.dims).map_err(fail)?;
                let at = crate::onnx::nonzero::location(t, &m.dir).map_err(fail)?;
                let z = crate::onnx::nonzero::count(&at, dtype, n).map_err(fail)?;
                weights.counted.insert(name.to_string(), z);
                fact.nonzeros = Some(z);
            }
        }
        Ok(())
    }

    /// Infers the type and shape of every value (ONNX models only).
    pub fn shapes(
        self,
        dims: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Vec<u64>>,
    ) -> Result<Shapes> {
        self.shapes_with(dims, inputs, false, None)
    }

    /// [`Model::shapes`] for listing them only (the command line without
    /// `-o`): the inferred nodes are not kept ([`Inferred::nodes`] is
    /// empty) and the model's decoded nodes are dropped as they are
    /// inferred, so the model cannot be written back.
    pub(crate) fn shapes_listed(
        self,
        dims: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Vec<u64>>,
    ) -> Result<Shapes> {
        self.shapes_with(dims, inputs, true, None)
    }

    /// [`Model::shapes_listed`] of the ONNX model at `path`, read as
    /// [`Model::estimate_file`] reads it: the main graph's node records
    /// stay encoded and each is decoded in its turn, so the decoded graph
    /// is never held whole (111k-node graph: 56 MB fewer pages touched).
    pub(crate) fn shapes_listed_file(
        path: &str,
        dims: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Vec<u64>>,
    ) -> Result<Shapes> {
        if path == STDIN {
            return Model::open_onnx(path)?.shapes_listed(dims, inputs);
        }
        let (model, taken) = Model::open_encoded(path)?;
        model.shapes_with(dims, inputs, true, taken)
    }

    /// [`Model::shapes_listed_file`] for a copy of the model at `out`, which
    /// is checked first ([`crate::onnx::write::check_copy`]): while the
    /// main graph's nodes are there to check, before inference lets go of
    /// them.
    pub(crate) fn shapes_copied_file(
        path: &str,
        dims: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Vec<u64>>,
        out: &Output,
    ) -> Result<Shapes> {
        let (model, taken) = match path {
            STDIN => (Model::open_onnx(path)?, None),
            _ => Model::open_encoded(path)?,
        };
        if let Source::Onnx(m) = &model.source {
            crate::onnx::write::check_copy(m, taken.as_ref(), out)?;
        }
        model.shapes_with(dims, inputs, true, taken)
    }

    /// The shapes; when `listed`, of the main graph's nodes `taken` (or,
    /// when `None`, taken out of the model here).
    fn shapes_with(
        self,
        dims: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Vec<u64>>,
        listed: bool,
        taken: Option<Taken>,
    ) -> Result<Shapes> {
        let mut model = match self.source {
            Source::Onnx(model) => model,
            Source::Trace(_) => {
                return Err(Error::Usage(format!(
                    "{}: shapes are inferred for ONNX models, not traces",
                    self.path
                )));
            }
        };
        let opts = infer_options(dims, inputs, false, listed);
        let taken = match listed {
            true => taken.or_else(|| take_nodes(&mut model).map(Taken::Nodes)),
            false => None,
        };
        let inferred = match taken {
            Some(taken) => crate::onnx::infer::infer_taken(&model, taken, &opts)?,
            None => crate::onnx::infer::infer(&model, &opts)?,
        };
        dims::check_dims(
            dims,
            model.model.graph.as_ref(),
            || {
                dims::listed(
                    &inferred.input_symbols,
                    &inferred.bounds,
                    &inferred.bound_symbols,
                )
            },
            |known| {
                for (_, fact) in &inferred.values {
                    for d in fact.shape.iter().flatten() {
                        if let crate::ir::Dim::Sym(s) = d {
                            known.extend(s.symbols());
                        }
                    }
                }
            },
        )?;
        let mut meta = report::Meta {
            model: Some(self.path),
            input: Some("onnx"),
            ..Default::default()
        };
        meta.set("dims", serde_json::json!(dims));
        meta.set("inputs", serde_json::json!(inputs));
        Ok(Shapes {
            inferred,
            model: *model,
            meta,
        })
    }
}

impl Model {
    /// How Model Explorer knows this model's nodes: the ONNX graph's name and
    /// each layer's node keys; a trace's layers by their names.
    pub fn node_ids(
        &self,
        opts: &EstimateOptions,
    ) -> Result<crate::report::model_explorer::NodeIds> {
        use crate::report::model_explorer::NodeIds;
        match &self.source {
            Source::Trace(_) => Ok(NodeIds {
                graph: std::path::Path::new(&self.path)
                    .file_stem()
                    .map_or("trace".into(), |s| s.to_string_lossy().into_owned()),
                keys: Default::default(),
            }),
            Source::Onnx(model) => {
                let inferred = infer(model, &opts.dims, &opts.inputs, true)?;
                let graph = model
                    .model
                    .graph
                    .as_ref()
                    .and_then(|g| g.name.clone())
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| "main_graph".into());
                Ok(NodeIds {
                    graph,
                    keys: crate::onnx::annotate::node_keys(model, &inferred, !opts.no_fold),
                })
            }
        }
    }

    /// A copy of the ONNX model with each costed node's figures in its
    /// `metadata_props` and the inferred shapes in `value_info`
    /// (`c3 annotate`); every original byte is kept.
    pub fn annotate(&self, opts: &EstimateOptions) -> Result<crate::onnx::annotate::Annotated> {
        self.annotated(opts, |pieces| Ok(pieces.joined()))
    }

    /// Writes [`Model::annotate`]'s copy through `out`, the bytes kept as
    /// they were (the weights) straight from the mapped file; returns how
    /// many nodes got costs and how many value_info entries were added.
    pub fn annotate_to(&self, opts: &EstimateOptions, out: &Output) -> Result<(usize, usize)> {
        let mapped = match &self.source {
            Source::Onnx(m) => m.mapped(),
            Source::Trace(_) => None,
        };
        if let Source::Onnx(m) = &self.source {
            crate::onnx::write::check_copy(m, None, out)?;
        }
        self.annotated(opts, |pieces| {
            out.write_parts(&pieces.slices(), mapped)?;
            Ok((pieces.nodes, pieces.value_info))
        })
    }

    /// The annotated copy, as pieces, handed to `then`.
    fn annotated<R>(
        &self,
        opts: &EstimateOptions,
        then: impl FnOnce(crate::onnx::annotate::Pieces<'_>) -> Result<R>,
    ) -> Result<R> {
        let Source::Onnx(model) = &self.source else {
            return Err(Error::Usage(format!(
                "{}: annotate needs an ONNX model, not a trace",
                self.path
            )));
        };
        // One inference gives the values written, where each layer's node
        // is, and then the graph costed.
        let inferred = infer(model, &opts.dims, &opts.inputs, false)?;
        let fold = !opts.no_fold;
        let sources = crate::onnx::annotate::layer_sources(model, &inferred, fold);
        let infos = crate::onnx::write::value_info_fields(model, &inferred);
        let rules = opts.rules()?;
        let graph = self.prepare(opts, &rules, Inferring::Done(inferred))?;
        let ids = self.identities_for(opts);
        let estimate = costed(
            graph,
            &rules,
            opts,
            opts.meta(self),
            opts.about(&self.path),
            &ids,
        )?;
        let (report, roofline) = (&estimate.report, estimate.roofline.as_ref());
        then(crate::onnx::annotate::pieces(
            model, &sources, infos, report, roofline,
        )?)
    }
}

impl Estimate {
    /// The report in a format of [`ReportOptions`]; the estimate's own
    /// meta and options where `opts` gives none.
    pub fn render(&self, opts: &ReportOptions) -> String {
        report::render(&self.report, &self.filled(opts), self.roofline.as_ref())
    }

    /// [`Estimate::render`]'s text written to `w` (JSON as it is made).
    pub fn write(&self, opts: &ReportOptions, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        report::write(&self.report, &self.filled(opts), self.roofline.as_ref(), w)
    }

    /// `opts` with this estimate's meta and options where it has none.
    fn filled(&self, opts: &ReportOptions) -> ReportOptions {
        let mut opts = opts.clone();
        if opts.meta.is_none() {
            opts.meta = Some(self.meta.clone());
        }
        if opts.about.is_empty() {
            opts.about = self.about.clone();
        }
        opts
    }

    /// The report as JSON text (what `--format json` prints).
    pub fn to_json(&self) -> String {
        self.render(&ReportOptions {
            format: report::Format::Json,
            ..ReportOptions::default()
        })
    }

    /// The layers no rule counted, as `op (n)` by op, or `None` when every
    /// layer was counted.
    pub fn unsupported_ops(&self) -> Option<String> {
        self.report.unsupported_by_op()
    }
}

/// Costs a prepared graph under `opts`' rules; with a device, its roofline
/// times too.
fn costed(
    graph: Graph,
    rules: &RuleSet,
    opts: &EstimateOptions,
    meta: report::Meta,
    about: Vec<(String, String)>,
    ids: &[crate::ir::NodeIdentity],
) -> Result<Estimate> {
    // Times need each layer's work as a peak counts it, and its class.
    let count = CountOptions {
        timing: opts.count.timing || opts.device.is_some() || !opts.profile.is_empty(),
        ..opts.count
    };
    let mut report = cost::estimate(&graph, rules, count)?;
    if !opts.profile.is_empty() {
        let profile = crate::profile::read_all(&opts.profile)?;
        report.measured = Some(cost::measured::join(&report, &profile, ids)?);
    }
    if opts.strict
        && let Some(ops) = report.unsupported_by_op()
    {
        let count = report.unsupported.len();
        return Err(Error::Unsupported { count, ops });
    }
    if let Some(t) = &opts.training {
        report.training = Some(cost::training::apply(&graph, rules, &report, count, t)?);
    }
    let roofline = match &opts.device {
        None => None,
        Some(name) => {
            let device = rules.device(name)?;
            let measured = opts
                .measured_s
                .or_else(|| report.measured.as_ref().and_then(|m| m.run_s));
            if let Some(t) = &mut report.training {
                t.capacity = device.memory.map(|m| (device.key.clone(), m));
            }
            Some(cost::roofline(&report, device, measured)?)
        }
    };
    Ok(Estimate {
        report,
        roofline,
        graph,
        meta,
        about,
    })
}

impl Shapes {
    /// Writes a copy of the model with the inferred shapes in its value_info
    /// (atomically); returns how many entries were added.
    pub fn write_model(&self, path: &str) -> Result<usize> {
        crate::onnx::write::write_value_info(&self.model, &self.inferred, path)
    }

    /// The bytes of that copy, and how many entries were added.
    pub fn model_bytes(&self) -> (Vec<u8>, usize) {
        crate::onnx::write::with_value_info(&self.model, &self.inferred)
    }

    /// Writes that copy through `out`, the model's own bytes straight from
    /// the mapped file, then the value_info entries (never joined in
    /// memory); returns how many entries were added.
    pub fn write_model_to(&self, out: &Output) -> Result<usize> {
        crate::onnx::write::check_copy(&self.model, None, out)?;
        let (patch, n) = crate::onnx::write::value_info_patch(&self.model, &self.inferred);
        let (mark, rest) = crate::onnx::write::marked(&self.model.bytes);
        out.write_parts(&[&mark, rest, &patch], self.model.mapped())?;
        Ok(n)
    }
}

fn infer(
    model: &OnnxModel,
    dims: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Vec<u64>>,
    nodes_only: bool,
) -> Result<Inferred> {
    crate::onnx::infer::infer(model, &infer_options(dims, inputs, nodes_only, false))
}

fn infer_options(
    dims: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Vec<u64>>,
    nodes_only: bool,
    values_only: bool,
) -> InferOptions {
    InferOptions {
        dims: dims.clone(),
        inputs: inputs.clone(),
        nodes_only,
        values_only,
    }
}

/// The weights [`Model::count_nonzeros`] read: their nonzeros by name, and
/// the model's initializers by name, indexed once one is looked for.
#[derive(Default)]
struct Weights<'m> {
    counted: HashMap<String, u64>,
    /// (A model's initializer names are its own: loading refuses two.)
    by_name: Option<HashMap<&'m str, &'m crate::proto::TensorProto>>,
}

/// The main graph's nodes, taken out of `model` (its graph then holds
/// none) to be dropped one by one as inference goes.
fn take_nodes(model: &mut OnnxModel) -> Option<Vec<crate::proto::NodeProto>> {
    model
        .model
        .graph
        .as_mut()
        .map(|g| std::mem::take(&mut g.node))
}

/// The model path that means standard input.
pub const STDIN: &str = "-";
/// How standard input is named in messages.
const STDIN_NAME: &str = "<stdin>";
/// Standard input is read into memory, at most this much (protobuf's own
/// limit for one message; a trace has its smaller limit on top).
pub const MAX_STDIN_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// Standard input, whole, refused past [`MAX_STDIN_BYTES`] while reading.
fn read_stdin() -> Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_STDIN_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(STDIN_NAME, e))?;
    let bad = |message: String| Error::Input {
        path: STDIN_NAME.into(),
        message,
    };
    if bytes.len() as u64 > MAX_STDIN_BYTES {
        return Err(bad(format!(
            "more than the limit of {MAX_STDIN_BYTES} bytes on standard input"
        )));
    }
    if bytes.is_empty() {
        return Err(bad("standard input is empty".into()));
    }
    if crate::trace::starts_like_json(&bytes) && bytes.len() as u64 > crate::trace::MAX_TRACE_BYTES
    {
        return Err(bad(format!(
            "trace is {} bytes, which exceeds the limit of {} bytes",
            bytes.len(),
            crate::trace::MAX_TRACE_BYTES
        )));
    }
    Ok(bytes)
}

/// A file that does not decode as ONNX and does not start like a trace is
/// neither: say so, then what the ONNX decoder found.
fn neither(e: Error) -> Error {
    match e {
        Error::Input { path, message }
            if message.starts_with("not a valid ONNX model")
                || message.starts_with("not an ONNX model") =>
        {
            Error::Input {
                path,
                message: format!(
                    "neither an ONNX model nor an operator trace (JSON); as ONNX, {message}"
                ),
            }
        }
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &[u8] = br#"{"layers": [{"op": "Relu", "inputs": [{"shape": ["batch", 64]}],
                               "outputs": [{"shape": ["batch", 64]}]}]}"#;

    #[test]
    fn an_unbound_symbol_names_the_flag_that_binds_it() {
        let model = Model::from_bytes(TRACE.to_vec(), "t.json").unwrap();
        assert!(model.is_trace());
        let e = model.estimate(&EstimateOptions::default()).err().unwrap();
        assert_eq!(
            e.to_string(),
            "t.json: sizes unknown until bound: batch; bind them with --dim batch=N"
        );
    }

    #[test]
    fn what_if_types_change_the_bytes_moved() {
        let model = Model::from_bytes(TRACE.to_vec(), "t.json").unwrap();
        let mut opts = EstimateOptions::default();
        opts.dims.insert("batch".into(), 3);
        opts.activations = Some(DType::Float16);
        let e = model.estimate(&opts).unwrap();
        // 3 * 64 float16 values read, 2 bytes each.
        assert_eq!(e.report.total.mread, 3 * 64 * 2);
        assert!(e.unsupported_ops().is_none());
    }

    /// The command line lists shapes without keeping the inferred nodes or
    /// the decoded ones, and reads a file's node records as an estimate
    /// does (left encoded, each decoded in its turn), its nodes' values
    /// kept by slot rather than by name: the values must be those of a
    /// full inference.
    #[test]
    fn listing_shapes_alone_gives_every_value_a_full_inference_gives() {
        let root = env!("CARGO_MANIFEST_DIR");
        for file in [
            "tests/fixtures/exports/mvit.onnx",
            "tests/fixtures/exports/fasterrcnn.onnx",
            "tests/fixtures/exports/mixtral.onnx",
            "tests/fixtures/exports/ssdlite.onnx",
            "tests/fixtures/exports/resnet18_int8.onnx",
            "examples/onnx/gpt_decoder_dynamo.onnx",
        ] {
            let path = format!("{root}/{file}");
            let none = BTreeMap::new();
            let full = Model::open(&path)
                .unwrap()
                .shapes(&none, &BTreeMap::new())
                .unwrap();
            let listed = Model::open(&path)
                .unwrap()
                .shapes_listed(&none, &BTreeMap::new())
                .unwrap();
            let (_, encoded) = crate::onnx::load_encoded(&path).unwrap();
            assert!(encoded.is_some(), "{file}: its records are left encoded");
            let from_file = Model::shapes_listed_file(&path, &none, &BTreeMap::new()).unwrap();
            assert!(full.inferred.values.len() > 100, "{file}");
            assert!(!full.inferred.nodes.is_empty(), "{file}");
            assert!(listed.inferred.nodes.is_empty(), "{file}");
            assert!(from_file.inferred.nodes.is_empty(), "{file}");
            assert_eq!(listed.inferred.values, full.inferred.values, "{file}");
            assert_eq!(from_file.inferred.values, full.inferred.values, "{file}");
        }
    }
}
