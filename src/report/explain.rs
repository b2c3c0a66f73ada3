//! `c3 explain`: how a rule counts an operator, and, given shapes and
//! attributes, its evaluation step by step. Outputs left out are inferred
//! by the operator's shape function (the registry that models use), which
//! also refuses inputs that contradict the operator.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::ir::{AttrValue, Node, TensorFact, domain_shown};
use crate::proto::{AttributeProto, GraphProto, TensorProto};
use crate::rules::ast::TensorPat;
use crate::rules::value::show_value;
use crate::rules::{CostRule, CountOptions, RuleSet, render};
use crate::shape::Fact;
use crate::shape::ctx::{InferCtx, ShapeError, SubgraphInfer, Symbols, TensorDecoder};

/// What to evaluate a rule on: tensors by their pattern name (a variadic
/// name repeated) and attributes, as `c3 explain --in/--attr` give them.
#[derive(Debug, Clone, Default)]
pub struct ExplainInput {
    pub tensors: Vec<(String, TensorFact)>,
    pub attrs: Vec<(String, AttrValue)>,
    pub opset: i64,
    pub count: CountOptions,
    /// Times the evaluation on this device of the rule set too
    /// (`--device`): its roofline and, on a calibrated device or with the
    /// rule's `time:` formula, its predicted time.
    pub device: Option<String>,
}

/// The rule's text; evaluated too when `input` gives any tensor or attribute.
/// Every line passes through [`super::text::shown`]: a pack's names and doc
/// text reach the terminal as text.
pub fn explain(rules: &RuleSet, rule: &CostRule, input: &ExplainInput) -> Result<String> {
    let out = explain_raw(rules, rule, input)?;
    let mut safe = String::with_capacity(out.len());
    for line in out.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        safe.push_str(&super::text::shown(body));
        safe.push_str(end);
    }
    Ok(safe)
}

fn explain_raw(rules: &RuleSet, rule: &CostRule, input: &ExplainInput) -> Result<String> {
    let mut out = describe(rule);
    let given = !(input.tensors.is_empty() && input.attrs.is_empty());
    if input.device.is_some() && (!given || rule.unsupported.is_some()) {
        return Err(Error::Usage(match &rule.unsupported {
            Some(_) => format!("--device: {} is not counted, so not timed", rule.op),
            None => format!(
                "--device times an evaluation: give {}'s tensors with --in (inputs: {})",
                rule.op, rule.inputs_text
            ),
        }));
    }
    if rule.unsupported.is_some() || !given {
        return Ok(out);
    }
    let node = node_of(rule, input)?;
    let ev = rule
        .explain(&node, input.count)
        .map_err(|e| Error::Usage(format!("cannot evaluate {}: {e}", rule.op)))?;
    out.push_str(&format!(
        "\nEvaluated (fma {}):\n",
        if input.count.fma { "on" } else { "off" }
    ));
    for (p, t) in rule.outputs.iter().zip(node.outputs.iter()) {
        if let Some(t) = t
            && !input.tensors.iter().any(|(n, _)| *n == p.name)
        {
            out.push_str(&format!(
                "  {} = {} {} (inferred)\n",
                p.name,
                t.shape_string(),
                t.dtype
            ));
        }
    }
    for (n, v) in &ev.bindings {
        out.push_str(&format!("  {n} = {}\n", show_value(v)));
    }
    out.push_str(&format!(
        "  flops  = {}\n  iops   = {}\n  mread  = {} bytes\n  mwrite = {} bytes\n",
        ev.flops, ev.iops, ev.mread, ev.mwrite
    ));
    for (n, v) in ev.params.iter() {
        out.push_str(&format!("  attr {n} = {}\n", show_value(v)));
    }
    if let Some(name) = &input.device {
        out.push_str(&timed(rules, node, rules.device(name)?, input.count)?);
    }
    Ok(out)
}

/// The evaluated layer's times on `device`, costed and timed as `c3
/// estimate --device` costs and times a model's layer: the roofline's
/// terms, its bound, and the predicted time where the device's time model
/// or the rule's `time:` formula gives one.
fn timed(
    rules: &RuleSet,
    node: Node,
    device: &crate::rules::devices::Device,
    count: CountOptions,
) -> Result<String> {
    let graph = crate::ir::Graph {
        nodes: vec![node],
        ..crate::ir::Graph::default()
    };
    let count = CountOptions {
        timing: true,
        ..count
    };
    let report = crate::cost::estimate(&graph, rules, count)?;
    let r = crate::cost::roofline(&report, device, None)?;
    let (Some(l), Some(t)) = (report.layers.first(), r.layers.first()) else {
        return Err(Error::Usage(
            "--device: the layer was not costed (every input a constant folds it away)".into(),
        ));
    };
    let us = |s: f64| super::human_time(s, 3);
    let counts = match device.peak_counts {
        crate::rules::devices::PeakCounts::MultiplyAddAsTwo => "a multiply-add as 2",
        crate::rules::devices::PeakCounts::Reported => "as the FLOPs above",
    };
    let fell_back = match t.precision == t.asked {
        true => String::new(),
        false => format!(", for want of a {} peak", t.asked),
    };
    // Integer peaks are operations, as `c3 devices` gives them (TOPS).
    let unit = match t.precision.starts_with("int") {
        true => "OPS",
        false => "FLOP/s",
    };
    let peak = match t.peak >= 1e12 {
        true => format!("{:.1} T{unit}", t.peak / 1e12),
        false => format!("{:.1} G{unit}", t.peak / 1e9),
    };
    let mut out = format!(
        "\nOn {}:\n  {} peak {peak}{fell_back} ({counts}), {:.1} GB/s\n",
        device.name,
        t.precision,
        device.bandwidth / 1e9
    );
    let mut line = |name: &str, value: String, why: &str| {
        out.push_str(&format!("  {name:<9} = {value:<14} ({why})\n"));
    };
    line(
        "work",
        t.work(l).to_string(),
        "FLOPs as the peak counts them, plus IOPs",
    );
    line("compute_s", us(t.compute_s), "work / peak");
    line("memory_s", us(t.memory_s), "(mread + mwrite) / bandwidth");
    let bound = match t.bound {
        crate::cost::Bound::None => "no work and no traffic".to_string(),
        b => format!("{}-bound", b.as_str()),
    };
    line("bound", us(t.bound_s), &bound);
    let model = device.time.as_deref();
    let term = |t: &str, e: Option<f64>| e.map(|e| format!("{t} / {e:.3}"));
    match (
        t.predicted_s,
        &t.by_rule,
        t.group.and_then(|g| model?.groups.get(g)),
    ) {
        (Some(p), Some(origin), _) => line(
            "predicted",
            us(p),
            &format!("the rule's time formula, {origin}"),
        ),
        (Some(p), None, Some(g)) => {
            let mut terms: Vec<String> = [term("compute_s", g.compute), term("memory_s", g.memory)]
                .into_iter()
                .flatten()
                .collect();
            terms.push(format!("{} a kernel", us(g.kernel_s)));
            line("predicted", us(p), &format!("time group {}", g.key));
            out.push_str(&format!("              = {}\n", terms.join(" + ")));
        }
        (Some(p), None, None) => line("predicted", us(p), "the device's time model"),
        (None, ..) => {}
    }
    Ok(out)
}

/// The rule as written: origin, doc, patterns and formulas.
fn describe(rule: &CostRule) -> String {
    let mut out = String::new();
    let origin = if rule.origin.builtin {
        format!("built-in, {}:{}", rule.origin.file, rule.origin.line)
    } else {
        format!("pack, {}:{}", rule.origin.file, rule.origin.line)
    };
    out.push_str(&format!(
        "{} — {}\n  domain:   {}\n  category: {}\n  rule:     {}\n",
        rule.qualified_name(),
        rule.summary,
        domain_shown(&rule.domain),
        rule.category,
        origin
    ));
    if let Some(o) = &rule.overrides {
        let taken = &o.taken;
        out.push_str(&format!(
            "  fields:   {} from the pack; {} from {} {}:{}\n",
            o.fields.join(", "),
            if taken.is_empty() {
                "nothing".to_string()
            } else {
                taken.join(", ")
            },
            if o.base.builtin { "built-in" } else { "pack" },
            o.base.file,
            o.base.line
        ));
    }
    out.push('\n');
    for line in rule.doc.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    if let Some(reason) = &rule.unsupported {
        out.push_str(&format!(
            "\n  Not counted: layers of this op are listed as unsupported: {reason}\n"
        ));
        return out;
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
    for (name, f) in rule.formulas() {
        let bytes = if name.starts_with('m') {
            "    (|T| in bytes)"
        } else {
            ""
        };
        out.push_str(&format!(
            "  {name:<6} = {}{bytes}\n",
            render::to_text(&f.ast)
        ));
    }
    if let Some(f) = &rule.time {
        // Its own place: a pack's partial rule may take it from another file.
        let from = if f.origin.builtin { "built-in" } else { "pack" };
        out.push_str(&format!(
            "  time   = {}    (seconds a run takes, on --device; {from}, {})\n",
            render::to_text(&f.ast),
            f.origin
        ));
    }
    for (n, f) in &rule.params {
        out.push_str(&format!("  attr {n} = {}\n", render::to_text(&f.ast)));
    }
    match &rule.backward {
        Some(b) => {
            for (_, input, [flops, mread, mwrite]) in &b.grads {
                out.push_str(&format!(
                    "  backward ∂{input}: flops = {}; mread = {}; mwrite = {}\n",
                    render::to_text(&flops.ast),
                    render::to_text(&mread.ast),
                    render::to_text(&mwrite.ast)
                ));
            }
            let saves = b.saves_text.as_deref().filter(|s| !s.is_empty());
            out.push_str(&format!(
                "  backward saves {}\n",
                saves.unwrap_or("nothing")
            ));
        }
        None => {
            let kind = crate::cost::training::DefaultKind::of(&rule.category);
            out.push_str(&match kind {
                Some(k) => {
                    let [f, r, w, keeps] = k.formulas();
                    format!(
                        "  backward: the {} default of {}, per input X_i: flops = {f}; mread = {r}; mwrite = {w}; keeps {keeps}\n",
                        format!("{k:?}").to_lowercase(),
                        rule.category
                    )
                }
                None => "  backward: none (not counted in training)\n".to_string(),
            });
        }
    }
    out
}

/// Places each given tensor by its pattern name.
fn place(
    pats: &[TensorPat],
    given: &mut BTreeMap<String, Vec<TensorFact>>,
) -> Result<Vec<Option<TensorFact>>> {
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
}

/// The node the rule is evaluated on.
fn node_of(rule: &CostRule, input: &ExplainInput) -> Result<Node> {
    let mut given: BTreeMap<String, Vec<TensorFact>> = BTreeMap::new();
    for (k, t) in &input.tensors {
        given.entry(k.clone()).or_default().push(t.clone());
    }
    let inputs = place(&rule.inputs, &mut given)?;
    let outputs = place(&rule.outputs, &mut given)?;
    if let Some(name) = given.keys().next() {
        return Err(Error::Usage(format!(
            "--in {name}: {} has no tensor named {name} (inputs: {}; outputs: {})",
            rule.op, rule.inputs_text, rule.outputs_text
        )));
    }
    let mut attrs = BTreeMap::new();
    for (k, v) in &input.attrs {
        if !rule.attrs.iter().any(|d| d.name == *k) {
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
        attrs.insert(k.clone(), v.clone());
    }
    let outputs = infer_outputs(rule, input, &inputs, outputs)?;
    Ok(Node {
        name: rule.op.clone(),
        op: rule.op.clone(),
        domain: rule.domain.clone(),
        opset: input.opset,
        attrs: attrs.into_iter().collect(),
        inputs: inputs.into(),
        outputs: outputs.into(),
        bodies: Vec::new(),
    })
}

/// The rule for an operator as a person names it: `Conv`, `conv`,
/// `com.microsoft::Attention` or `com.microsoft.Attention`. An unknown name
/// is an error that suggests the nearest one.
///
/// ```
/// use c3::report::explain::find_rule;
/// let rules = c3::rules::RuleSet::builtin().unwrap();
/// let a = find_rule(&rules, "com.microsoft.Attention").unwrap();
/// assert_eq!(a.qualified_name(), "com.microsoft::Attention");
/// let e = find_rule(&rules, "Conx").unwrap_err().to_string();
/// assert!(e.contains("did you mean 'Conv'?"));
/// ```
pub fn find_rule<'a>(rules: &'a RuleSet, name: &str) -> Result<&'a CostRule> {
    if let Some(r) = rules.find(name) {
        return Ok(r);
    }
    // `domain.Op`: op names hold no dot, so the last one ends the domain.
    if !name.contains("::")
        && let Some((domain, op)) = name.rsplit_once('.')
        && let Some(r) = rules.find(&format!("{domain}::{op}"))
    {
        return Ok(r);
    }
    let hint = nearest(rules, name).map_or(String::new(), |n| format!("; did you mean '{n}'?"));
    Err(Error::Usage(format!(
        "no rule for operator '{name}'{hint} (`c3 rules list` shows every rule)"
    )))
}

/// The rule closest to `name` in edits ([`crate::error::nearest`]), by its
/// qualified name (`com.microsoft::FusedConv`) or, for a bare name, by its
/// operator's (`fusedconv`).
fn nearest(rules: &RuleSet, name: &str) -> Option<String> {
    let mut want = name.to_string();
    if !want.contains("::")
        && let Some((domain, op)) = want.rsplit_once('.')
    {
        want = format!("{domain}::{op}");
    }
    let qualified: Vec<String> = rules.iter().map(|r| r.qualified_name()).collect();
    if let Some(q) = crate::error::nearest(&want, qualified.iter().map(String::as_str)) {
        return Some(q.to_string());
    }
    if want.contains("::") {
        return None;
    }
    let op = crate::error::nearest(&want, rules.iter().map(|r| r.op.as_str()))?;
    rules
        .iter()
        .find(|r| r.op == op)
        .map(|r| r.qualified_name())
}

/// The outputs the rule is evaluated on: those given, the others inferred
/// by the same shape functions as a model's nodes. When every required input
/// is given, inference also checks them: shapes that contradict the operator
/// (a 3-d X for a 2-d kernel), or a given output that differs from the
/// inferred one, are errors.
fn infer_outputs(
    rule: &CostRule,
    input: &ExplainInput,
    inputs: &[Option<TensorFact>],
    mut outputs: Vec<Option<TensorFact>>,
) -> Result<Vec<Option<TensorFact>>> {
    let missing_input = rule
        .inputs
        .iter()
        .enumerate()
        .find(|(i, p)| !p.optional && !p.variadic && inputs.get(*i).is_none_or(Option::is_none))
        .map(|(_, p)| p.name.clone());
    let missing_output = rule
        .outputs
        .iter()
        .enumerate()
        .find(|(i, p)| !p.optional && !p.variadic && outputs.get(*i).is_none_or(Option::is_none))
        .map(|(_, p)| p.name.clone());
    let shape_fn = crate::shape::registry(&rule.domain, &rule.op);
    // Outputs all variadic (If, Loop, Split): their number is the caller's,
    // so there is nothing to infer; the rule counts those given.
    if rule.outputs.iter().all(|p| p.variadic) {
        return Ok(outputs);
    }
    let (Some(f), None) = (shape_fn, &missing_input) else {
        return match missing_output {
            None => Ok(outputs),
            Some(name) => Err(Error::Usage(match missing_input {
                Some(i) if shape_fn.is_some() => format!(
                    "output {name} is inferred from the inputs: add --in {i}=... (or --in {name}=...)"
                ),
                _ => format!("output {name} needs a shape: add --in {name}=..."),
            })),
        };
    };
    let attrs: Vec<AttributeProto> = input.attrs.iter().map(|(k, v)| attribute(k, v)).collect();
    let facts: Vec<Option<Fact>> = inputs
        .iter()
        .map(|t| t.as_ref().map(|t| Fact::new(t.dtype, t.shape.to_vec())))
        .collect();
    let n_out = rule
        .outputs
        .iter()
        .filter(|p| !p.variadic)
        .count()
        .max(outputs.len());
    let symbols = Symbols::default();
    let mut ctx = InferCtx::new(
        &rule.op,
        &rule.domain,
        input.opset,
        &attrs,
        facts,
        n_out,
        &NoBodies,
        &NoBodies,
        &symbols,
    );
    f(&mut ctx).map_err(|e| {
        Error::Usage(format!(
            "{}: the shapes given do not fit: {e}",
            rule.qualified_name()
        ))
    })?;
    outputs.resize(n_out, None);
    let all_optional = rule.outputs.iter().all(|p| p.optional || p.variadic);
    for (i, fact) in ctx.outputs.iter().enumerate() {
        let name = rule.outputs.get(i).map_or("output", |p| p.name.as_str());
        let inferred = match (&fact.shape, fact.dtype) {
            (Some(shape), Some(dtype)) => Some(TensorFact::new(dtype, shape.clone())),
            _ => None,
        };
        // An optional output nobody asked for (MaxPool's Indices) stays
        // absent, as in a model whose node does not list it; when all are
        // optional (LSTM), the first one is the result a node lists.
        let wanted = rule.outputs.get(i).is_some_and(|p| !p.optional) || (i == 0 && all_optional);
        match (&outputs[i], inferred) {
            (Some(given), Some(inferred)) if given.shape != inferred.shape => {
                return Err(Error::Usage(format!(
                    "--in {name}: {} gives {name} the shape {}, not {}",
                    rule.qualified_name(),
                    inferred.shape_string(),
                    given.shape_string()
                )));
            }
            (None, Some(inferred)) if wanted => outputs[i] = Some(inferred),
            _ => {}
        }
    }
    if let Some((_, p)) =
        rule.outputs.iter().enumerate().find(|(i, p)| {
            !p.optional && !p.variadic && outputs.get(*i).is_none_or(Option::is_none)
        })
    {
        return Err(Error::Usage(format!(
            "output {0} cannot be inferred from these inputs: add --in {0}=...",
            p.name
        )));
    }
    // Optional outputs nobody asked for stay absent, as in a model.
    while outputs.last().is_some_and(Option::is_none) {
        outputs.pop();
    }
    Ok(outputs)
}

/// `--attr` as the ONNX attribute a shape function reads.
fn attribute(name: &str, v: &AttrValue) -> AttributeProto {
    // ONNX AttributeType codes.
    let mut a = AttributeProto {
        name: Some(name.to_string()),
        ..Default::default()
    };
    match v {
        // `--attr alpha=1` types a float attribute as a whole number: it
        // is held as both, and the shape function reads the one it wants.
        AttrValue::Int(i) => (a.r#type, a.i, a.f) = (Some(2), Some(*i), Some(*i as f32)),
        AttrValue::Float(f) => (a.r#type, a.f) = (Some(1), Some(*f as f32)),
        AttrValue::Str(s) => (a.r#type, a.s) = (Some(3), Some(s.clone().into_bytes().into())),
        AttrValue::Ints(v) => (a.r#type, a.ints) = (Some(7), v.clone()),
        AttrValue::Floats(v) => {
            (a.r#type, a.floats) = (Some(6), v.iter().map(|&f| f as f32).collect());
        }
        AttrValue::Strs(v) => {
            a.r#type = Some(8);
            a.strings = v.iter().map(|s| s.clone().into_bytes().into()).collect();
        }
    }
    a
}

/// `c3 explain` evaluates one operator alone: no subgraph, no tensor
/// attribute to read.
struct NoBodies;

impl SubgraphInfer for NoBodies {
    fn infer(&self, _: &GraphProto, _: &[Fact]) -> Result<Vec<Fact>, ShapeError> {
        Err(ShapeError("c3 explain does not infer subgraphs".into()))
    }
}

impl TensorDecoder for NoBodies {
    fn fact_of(&self, _: &TensorProto) -> Result<Fact, ShapeError> {
        Err(ShapeError(
            "c3 explain does not read tensor attributes".into(),
        ))
    }
}
