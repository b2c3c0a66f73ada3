//! `c3._c3`: the Rust side of the Python package. Two functions, no state:
//! [`estimate`] runs the estimate pipeline on a model held in memory or on
//! disk and returns the rendered report (JSON for `c3.Report`, or a table);
//! [`cli`] runs any other `c3` command line and returns what it prints.
//! Everything else (the `Report` class, the torch hook) is Python.

use std::collections::BTreeMap;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use c3::error::Error;
use c3::ir::{DType, Graph};
use c3::report::{self, Format, Parts, ReportOptions, Unit};
use c3::rules::{CountOptions, RuleSet};

create_exception!(
    _c3,
    C3Error,
    PyException,
    "An error from c3, with the command line's one-line message."
);
create_exception!(
    _c3,
    InputError,
    C3Error,
    "A model, trace or rule file c3 cannot read or analyse (the CLI's exit code 2)."
);
create_exception!(
    _c3,
    UsageError,
    C3Error,
    "A bad option value: unknown device, unit, column, precision (the CLI's exit code 1)."
);
create_exception!(
    _c3,
    UnsupportedOpError,
    C3Error,
    "Operators without a cost rule, when `strict=True` (the CLI's exit code 3)."
);

/// The Python exception for a c3 error: its class follows the CLI's exit code.
fn to_py(e: Error) -> PyErr {
    let msg = c3::cli::one_line(&e.to_string());
    match e.exit_code() {
        1 => UsageError::new_err(msg),
        3 => UnsupportedOpError::new_err(msg),
        _ => InputError::new_err(msg),
    }
}

fn usage(msg: String) -> Error {
    Error::Usage(msg)
}

/// A what-if precision name, as `--weights` and `--activations` take it.
fn precision(flag: &str, v: Option<&str>) -> Result<Option<DType>, Error> {
    let Some(v) = v else { return Ok(None) };
    let t = match v.to_ascii_lowercase().as_str() {
        "fp32" | "float32" => DType::Float32,
        "fp16" | "float16" => DType::Float16,
        "bf16" | "bfloat16" => DType::Bfloat16,
        "fp8" | "float8" | "float8e4m3fn" => DType::Float8E4M3Fn,
        "int8" => DType::Int8,
        "int4" => DType::Int4,
        _ => {
            return Err(usage(format!(
                "{flag} {v}: expected fp32, fp16, bf16, fp8, int8 or int4"
            )));
        }
    };
    Ok(Some(t))
}

/// What the model argument holds.
enum Source {
    /// An ONNX file or a trace file, told apart by content as `c3 estimate` does.
    Path(String),
    /// The bytes of an ONNX model.
    Onnx(Vec<u8>),
    /// Trace JSON.
    Trace(Vec<u8>),
}

/// Whether a file is an operator trace (its first non-blank byte is `{`).
fn is_trace(path: &str) -> Result<bool, Error> {
    use std::io::Read;
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

/// The estimate options, as `c3.estimate` passes them.
struct Options {
    dims: BTreeMap<String, i64>,
    inputs: BTreeMap<String, Vec<u64>>,
    packs: Vec<String>,
    device: Option<String>,
    measured: Option<String>,
    count: CountOptions,
    weights: Option<DType>,
    activations: Option<DType>,
    strict: bool,
    report: ReportOptions,
}

// GLUE: this is the chain of `c3 estimate` (src/cli.rs: read_graph,
// estimate_report, estimate) for a model in memory or on disk. When the
// library grows an estimate facade, this function becomes one call to it.
fn run_estimate(source: Source, name: &str, o: &Options) -> Result<String, Error> {
    let mut rules = RuleSet::builtin()?;
    for p in &o.packs {
        rules.load_pack(p)?;
    }
    let (mut graph, trace): (Graph, bool) = match source {
        Source::Trace(bytes) => (c3::trace::parse_trace(&bytes, name)?, true),
        Source::Path(path) if is_trace(&path)? => (c3::trace::read_trace(&path)?, true),
        Source::Path(path) => (infer(&c3::onnx::load(&path)?, o)?, false),
        Source::Onnx(bytes) => (infer(&c3::onnx::from_bytes(bytes.into(), name)?, o)?, false),
    };
    if trace && !o.inputs.is_empty() {
        return Err(usage("inputs= applies to ONNX models, not traces".into()));
    }
    graph.bind(&o.dims);
    let unbound = graph.unbound_symbols();
    if !unbound.is_empty() {
        let given: Vec<String> = unbound.iter().map(|s| format!("'{s}': N")).collect();
        return Err(Error::Input {
            path: name.to_string(),
            message: format!(
                "sizes unknown until bound: {}; bind them with dims={{{}}}",
                unbound.join(", "),
                given.join(", ")
            ),
        });
    }
    graph.override_precision(o.weights, o.activations);
    let cost = c3::cost::estimate(&graph, &rules, o.count)?;
    if o.strict && !cost.unsupported.is_empty() {
        let mut by_op: BTreeMap<String, usize> = BTreeMap::new();
        for u in &cost.unsupported {
            *by_op
                .entry(c3::rules::rule::qualified(&u.domain, &u.op))
                .or_default() += 1;
        }
        let ops: Vec<String> = by_op.iter().map(|(op, n)| format!("{op} ({n})")).collect();
        return Err(Error::Unsupported {
            count: cost.unsupported.len(),
            ops: ops.join(", "),
        });
    }
    let roofline = match &o.device {
        None => None,
        Some(dev) => {
            let device = rules.devices.find(dev).ok_or_else(|| {
                let names: Vec<&str> = rules.devices.iter().map(|d| d.key.as_str()).collect();
                usage(format!(
                    "device {dev}: unknown device (known: {})",
                    names.join(", ")
                ))
            })?;
            let measured = match &o.measured {
                None => None,
                Some(m) => Some(c3::device::parse_duration(m).ok_or_else(|| {
                    usage(format!(
                        "measured {m}: expected a duration like 2.4ms or 850us"
                    ))
                })?),
            };
            Some(c3::device::roofline(&cost, device, measured))
        }
    };
    Ok(report::render(&cost, &o.report, roofline.as_ref()))
}

fn infer(model: &c3::onnx::OnnxModel, o: &Options) -> Result<Graph, Error> {
    let opts = c3::onnx::infer::InferOptions {
        dims: o.dims.clone(),
        inputs: o.inputs.clone(),
        nodes_only: true,
    };
    Ok(c3::onnx::infer::to_graph(c3::onnx::infer::infer(
        model, &opts,
    )?))
}

/// Runs `c3 estimate` on a model and returns the rendered report.
///
/// `kind` says what `model` holds: "path" (a str: an ONNX file or a trace
/// file), "onnx" (the bytes of a model) or "trace" (trace JSON, bytes).
#[pyfunction]
#[pyo3(signature = (model, kind, name, *, dims, inputs, rules, device, measured, fma,
                    attention, if_branch, weights, activations, strict, format, unit,
                    digits, columns, parts))]
#[allow(clippy::too_many_arguments)]
fn estimate(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    kind: &str,
    name: &str,
    dims: BTreeMap<String, i64>,
    inputs: BTreeMap<String, Vec<u64>>,
    rules: Vec<String>,
    device: Option<String>,
    measured: Option<String>,
    fma: bool,
    attention: &str,
    if_branch: &str,
    weights: Option<String>,
    activations: Option<String>,
    strict: bool,
    format: &str,
    unit: &str,
    digits: usize,
    columns: &str,
    parts: &str,
) -> PyResult<String> {
    let options = || -> Result<Options, Error> {
        if let Some((k, v)) = dims.iter().find(|(_, v)| **v < 0) {
            return Err(usage(format!("dims {k}={v}: not a non-negative integer")));
        }
        let full_attention = match attention {
            "masked" => false,
            "full" => true,
            _ => return Err(usage(format!("attention {attention}: masked or full"))),
        };
        if digits > 10 {
            return Err(usage(format!("digits {digits}: must be 0 to 10")));
        }
        Ok(Options {
            dims: dims.clone(),
            inputs: inputs.clone(),
            packs: rules.clone(),
            device: device.clone(),
            measured: measured.clone(),
            count: CountOptions {
                fma,
                full_attention,
                branch: if_branch.parse().map_err(usage)?,
            },
            weights: precision("weights", weights.as_deref())?,
            activations: precision("activations", activations.as_deref())?,
            strict,
            report: ReportOptions {
                format: format.parse::<Format>().map_err(usage)?,
                unit: unit.parse::<Unit>().map_err(usage)?,
                digits,
                columns: report::parse_columns(columns).map_err(usage)?,
                parts: match parts {
                    "both" => Parts::Both,
                    "layers" => Parts::Layers,
                    "summary" => Parts::Summary,
                    _ => return Err(usage(format!("parts {parts}: both, layers or summary"))),
                },
            },
        })
    };
    let options = options().map_err(to_py)?;
    let source = match kind {
        "path" => Source::Path(model.extract()?),
        "onnx" => Source::Onnx(model.extract()?),
        "trace" => Source::Trace(model.extract()?),
        _ => return Err(UsageError::new_err(format!("unknown model kind {kind}"))),
    };
    let name = name.to_string();
    // The estimate holds no Python object: let other threads run meanwhile.
    py.detach(move || run_estimate(source, &name, &options))
        .map_err(to_py)
}

/// Runs a `c3` command line (without the program name) and returns what it
/// prints: `["devices", "--format", "json"]`, `["explain", "Conv"]`.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    use clap::Parser;
    let argv = std::iter::once("c3".to_string()).chain(args);
    let parsed =
        c3::cli::Cli::try_parse_from(argv).map_err(|e| UsageError::new_err(one_line(&e)))?;
    py.detach(move || c3::cli::run(parsed)).map_err(to_py)
}

fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("bad arguments");
    c3::cli::one_line(first.trim_start_matches("error: "))
}

#[pymodule]
fn _c3(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add("C3Error", py.get_type::<C3Error>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("UnsupportedOpError", py.get_type::<UnsupportedOpError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
