//! `c3 explain`: how a rule counts an operator, and, given shapes and
//! attributes, its evaluation step by step.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::ir::{AttrValue, Node, TensorFact, domain_shown};
use crate::rules::ast::TensorPat;
use crate::rules::value::show_value;
use crate::rules::{CostRule, CountOptions, render};

/// What to evaluate a rule on: tensors by their pattern name (a variadic
/// name repeated) and attributes, as `c3 explain --in/--attr` give them.
#[derive(Debug, Clone, Default)]
pub struct ExplainInput {
    pub tensors: Vec<(String, TensorFact)>,
    pub attrs: Vec<(String, AttrValue)>,
    pub opset: i64,
    pub count: CountOptions,
}

/// The rule's text; evaluated too when `input` gives any tensor or attribute.
/// Every line passes through [`super::text::shown`]: a pack's names and doc
/// text reach the terminal as text.
pub fn explain(rule: &CostRule, input: &ExplainInput) -> Result<String> {
    let out = explain_raw(rule, input)?;
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

fn explain_raw(rule: &CostRule, input: &ExplainInput) -> Result<String> {
    let mut out = describe(rule);
    if rule.unsupported.is_some() || (input.tensors.is_empty() && input.attrs.is_empty()) {
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

/// The rule as written: origin, doc, patterns and formulas.
fn describe(rule: &CostRule) -> String {
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
        domain_shown(&rule.domain),
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
    for (n, f) in &rule.params {
        out.push_str(&format!("  param {n} = {}\n", render::to_text(&f.ast)));
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
    for (i, p) in rule.outputs.iter().enumerate() {
        if !p.optional && !p.variadic && outputs.get(i).is_none_or(Option::is_none) {
            return Err(Error::Usage(format!(
                "output {} needs a shape: add --in {}=... (c3 explain does not infer shapes yet)",
                p.name, p.name
            )));
        }
    }
    Ok(Node {
        name: rule.op.clone(),
        op: rule.op.clone(),
        domain: rule.domain.clone(),
        opset: input.opset,
        attrs,
        inputs,
        outputs,
        bodies: Vec::new(),
    })
}
