//! The commands that write files (`annotate`, `docs`, `shapes -o`): each
//! checks its `-o` target before reading anything, writes through
//! [`crate::output`], and reports what it wrote on stderr.

use super::{DocsArgs, EstimateArgs, ShapesArgs, estimate_options};
use crate::error::{Error, Result};
use crate::model::Model;
use crate::output::{self, Kind, Output};
use crate::report::{self, ListFormat};
use crate::rules::RuleSet;

/// Where `-o` sends the output, checked before the model is read.
pub(super) fn output_of(
    target: &Option<String>,
    kind: Kind,
    force: bool,
    model: &str,
) -> Result<Output> {
    match target {
        Some(t) => Output::check(t, kind, force, &[model]),
        None => Ok(Output::stdout()),
    }
}

pub(super) fn annotate(a: &EstimateArgs) -> Result<String> {
    let Some(target) = &a.output else {
        return Err(Error::Usage("annotate needs -o OUT.onnx".into()));
    };
    let out = Output::check(target, Kind::Onnx, a.force, &[&a.source.model])?;
    let opts = estimate_options(a);
    opts.check()?;
    let done = Model::open(&a.source.model)?.annotate(&opts)?;
    out.write(&done.bytes)?;
    if !out.is_stdout() {
        eprintln!(
            "wrote {target}: costs on {} nodes, {} inferred value_info entries",
            done.nodes, done.value_info
        );
    }
    Ok(String::new())
}

pub(super) fn docs(a: &DocsArgs) -> Result<String> {
    if a.check {
        if a.output == output::STDOUT {
            return Err(Error::Usage("docs --check needs a file, not -o -".into()));
        }
        let text = crate::docs::render(&RuleSet::builtin()?)?;
        if !crate::docs::is_current(&a.output, &text)? {
            return Err(Error::Stale(format!(
                "{} is out of date with the rules: run `c3 docs -o {}` and commit it",
                a.output, a.output
            )));
        }
        eprintln!("{} is up to date", a.output);
        return Ok(String::new());
    }
    let out = Output::check(&a.output, Kind::Docs, a.force, &[])?;
    let text = crate::docs::render(&RuleSet::builtin()?)?;
    if out.is_stdout() {
        return Ok(text);
    }
    out.write(text.as_bytes())?;
    eprintln!("wrote {}", a.output);
    Ok(String::new())
}

pub(super) fn shapes(a: &ShapesArgs) -> Result<String> {
    let out = output_of(&a.output, Kind::Onnx, a.force, &a.source.model)?;
    if a.output.is_some() && out.is_stdout() && a.format.is_some() {
        return Err(Error::Usage(
            "shapes -o - writes the model to standard output: --format has no room there".into(),
        ));
    }
    let dims = a.source.dims.iter().cloned().collect();
    let inputs = a.source.inputs.iter().cloned().collect();
    let shapes = Model::open_onnx(&a.source.model)?.shapes(&dims, &inputs)?;
    let Some(target) = &a.output else {
        let format = a.format.unwrap_or(ListFormat::Table);
        return Ok(report::shapes::shapes(
            &shapes.inferred,
            format,
            &shapes.meta,
        ));
    };
    let (bytes, n) = shapes.model_bytes();
    out.write(&bytes)?;
    if out.is_stdout() {
        return Ok(String::new());
    }
    eprintln!("wrote {target} with {n} inferred value_info entries");
    Ok(a.format
        .map(|f| report::shapes::shapes(&shapes.inferred, f, &shapes.meta))
        .unwrap_or_default())
}
