//! `c3._c3`: the Rust side of the Python package. Two functions, no state:
//! [`estimate`] runs the estimate pipeline on a model held in memory or on
//! disk and returns the rendered report (JSON for `c3.Report`, or a table);
//! [`cli`] runs any other `c3` command line and returns what it prints.
//! Everything else (the `Report` class, the torch hook) is Python.

use std::collections::BTreeMap;

use pyo3::PyTypeInfo;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use c3::error::Error;
use c3::ir::DType;
use c3::report::{self, Format, Parts, ReportOptions, Unit};
use c3::rules::CountOptions;
use c3::{EstimateOptions, Model};

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
/// `UsageError`: a `C3Error` and a `ValueError` both, so that every wrong
/// option value of `c3.estimate` is a ValueError, those Python checks
/// and those c3 checks alike. Made at import (`create_exception!` takes one
/// base class).
static USAGE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn usage_error(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    let t = USAGE_ERROR.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        let bases = PyTuple::new(
            py,
            [
                py.get_type::<C3Error>().into_any(),
                py.get_type::<PyValueError>().into_any(),
            ],
        )?;
        let dict = PyDict::new(py);
        dict.set_item("__module__", "c3._c3")?;
        dict.set_item(
            "__doc__",
            "A bad option value: unknown device, unit, column, precision (the CLI's exit code 1).",
        )?;
        let made = PyType::type_object(py).call1(("UsageError", bases, dict))?;
        Ok(made.cast_into::<PyType>()?.unbind())
    })?;
    Ok(t.bind(py))
}
create_exception!(
    _c3,
    UnsupportedOpError,
    C3Error,
    "Operators without a cost rule, when `strict=True` (the CLI's exit code 3)."
);

/// The Python exception for a c3 error: its class follows the CLI's exit code.
fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let msg = keyword_names(&c3::error::one_line(&e.to_string()));
    match e.exit_code() {
        1 => match usage_error(py) {
            Ok(t) => PyErr::from_type(t.clone(), msg),
            Err(e) => e,
        },
        3 => UnsupportedOpError::new_err(msg),
        _ => InputError::new_err(msg),
    }
}

/// The stack c3's work runs on, whatever the calling thread's: a Python
/// thread may have been started with a small one (`threading.stack_size`),
/// where a deeply nested model would overflow it and end the interpreter.
/// Reserved, not touched: memory is only used as deep as the work goes.
const WORK_STACK_BYTES: usize = 64 << 20;

/// Runs `work` on a thread of its own with [`WORK_STACK_BYTES`] of stack,
/// without the GIL, and waits for it. A panic (a bug) is an error, never
/// an interpreter that ends.
fn on_own_stack<R: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<R, Error> + Send,
) -> PyResult<R> {
    let done = py.detach(|| {
        std::thread::scope(|s| {
            let thread = std::thread::Builder::new()
                .name("c3".into())
                .stack_size(WORK_STACK_BYTES)
                .spawn_scoped(s, work)
                .map_err(|e| Error::Usage(format!("c3 could not start its thread: {e}")))?;
            thread.join().unwrap_or_else(|_| {
                Err(Error::Input {
                    path: "c3".into(),
                    message: "an internal error stopped the estimate (a bug: please report it)"
                        .into(),
                })
            })
        })
    });
    done.map_err(|e| to_py(py, e))
}

/// The command line's flags named in a message, as `c3.estimate`'s keywords:
/// `--dim batch=N` becomes `dims={'batch': N}`, `--input x=1x3x224x224`
/// becomes `inputs={'x': [1, 3, 224, 224]}`.
fn keyword_names(msg: &str) -> String {
    let mut dims = Vec::new();
    let mut out = String::new();
    let mut rest = msg;
    while let Some(i) = rest.find("--dim ") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 6..];
        let end = tail.find(' ').unwrap_or(tail.len());
        match tail[..end].strip_suffix("=N") {
            Some(name) => {
                if dims.is_empty() {
                    out.push('\u{0}');
                }
                dims.push(format!("'{name}': N"));
                // The flags are listed one after another: drop the space.
                rest = tail[end..].strip_prefix(' ').unwrap_or(&tail[end..]);
            }
            None => {
                out.push_str("--dim ");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    let out = out.replacen('\u{0}', &format!("dims={{{}}} ", dims.join(", ")), 1);
    out.replace(" )", ")")
        .replace(" ;", ";")
        .replace(
            "--input NAME=1x3x224x224",
            "inputs={'NAME': [1, 3, 224, 224]}",
        )
        .replace("--input applies", "inputs= applies")
        .trim_end()
        .to_string()
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

/// `training=True` and the options that refine it; they need it.
fn training_options(
    training: bool,
    freeze: &[String],
    optimizer: Option<&str>,
    master_weights: Option<&str>,
    recompute: &[String],
) -> Result<Option<c3::cost::training::TrainingOptions>, Error> {
    use c3::cost::training::{OPTIMIZERS, Optimizer, TrainingOptions};
    if !training {
        let given = [
            ("freeze", !freeze.is_empty()),
            ("optimizer", optimizer.is_some()),
            ("master_weights", master_weights.is_some()),
            ("recompute", !recompute.is_empty()),
        ];
        if let Some((name, _)) = given.iter().find(|(_, g)| *g) {
            return Err(usage(format!("{name} needs training=True")));
        }
        return Ok(None);
    }
    let optimizer = match optimizer {
        None => None,
        Some(o) => Some(Optimizer::parse(o).ok_or_else(|| {
            let names: Vec<&str> = OPTIMIZERS.iter().map(|d| d.name).collect();
            usage(format!("optimizer {o}: one of {}", names.join(", ")))
        })?),
    };
    Ok(Some(TrainingOptions {
        freeze: freeze.to_vec(),
        optimizer,
        master_weights: precision("master_weights", master_weights)?,
        recompute: recompute.to_vec(),
        fit: None,
    }))
}

/// What the model argument holds.
enum Source {
    /// An ONNX file or a trace file, told apart by content as `c3 estimate` does.
    Path(String),
    /// The bytes of an ONNX model or of trace JSON (told apart the same way).
    Bytes(Vec<u8>),
}

/// The estimate options, as `c3.estimate` passes them.
struct Options {
    estimate: EstimateOptions,
    report: ReportOptions,
}

/// The chain of `c3 estimate`, through the library's facade: read, cost,
/// check `strict`, render.
fn run_estimate(source: Source, name: &str, o: &Options) -> Result<String, Error> {
    // Under `strict`, the facade refuses unsupported operators itself.
    // The model is used once: each node is dropped once inferred (from a
    // file, each is also decoded only in its turn).
    let estimate = match source {
        Source::Path(path) => Model::estimate_file(&path, &o.estimate)?,
        Source::Bytes(bytes) => Model::from_bytes(bytes, name)?.into_estimate(&o.estimate)?,
    };
    Ok(estimate.render(&o.report))
}

/// Runs `c3 estimate` on a model and returns the rendered report.
///
/// `kind` says what `model` holds: "path" (a str: an ONNX file or a trace
/// file), "onnx" (the bytes of a model) or "trace" (trace JSON, bytes).
#[pyfunction]
#[pyo3(signature = (model, kind, name, *, dims, inputs, rules, device, measured, profile, fma,
                    attention, if_branch, prune, weights, activations, strict, format, unit,
                    digits, columns, parts, training=false, freeze=Vec::new(), optimizer=None,
                    master_weights=None, recompute=Vec::new(), depth=None))]
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
    profile: Vec<String>,
    fma: bool,
    attention: &str,
    if_branch: &str,
    prune: Option<String>,
    weights: Option<String>,
    activations: Option<String>,
    strict: bool,
    format: &str,
    unit: &str,
    digits: usize,
    columns: &str,
    parts: &str,
    training: bool,
    freeze: Vec<String>,
    optimizer: Option<String>,
    master_weights: Option<String>,
    recompute: Vec<String>,
    depth: Option<usize>,
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
        let measured_s = match &measured {
            None => None,
            Some(m) => Some(c3::cost::parse_duration(m).ok_or_else(|| {
                usage(format!(
                    "measured {m}: expected a duration like 2.4ms or 850us"
                ))
            })?),
        };
        Ok(Options {
            estimate: EstimateOptions {
                dims: dims.clone(),
                inputs: inputs.clone(),
                packs: rules.clone(),
                count: CountOptions {
                    fma,
                    full_attention,
                    branch: if_branch.parse().map_err(usage)?,
                    prune: match &prune {
                        None => None,
                        Some(p) => Some(p.parse().map_err(|e| usage(format!("prune {e}")))?),
                    },
                    timing: false,
                },
                weights: precision("weights", weights.as_deref())?,
                activations: precision("activations", activations.as_deref())?,
                device: device.clone(),
                measured_s,
                profile: profile.clone(),
                strict,
                training: training_options(
                    training,
                    &freeze,
                    optimizer.as_deref(),
                    master_weights.as_deref(),
                    &recompute,
                )?,
                ..EstimateOptions::default()
            },
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
                depth: match depth {
                    Some(d) if !(1..=64).contains(&d) => {
                        return Err(usage(format!("depth {d}: 1 to 64")));
                    }
                    d => d,
                },
                ..ReportOptions::default()
            },
        })
    };
    let options = options().map_err(|e| to_py(py, e))?;
    let source = match kind {
        "path" => Source::Path(model.extract()?),
        "onnx" | "trace" => Source::Bytes(model.extract()?),
        _ => return Err(to_py(py, usage(format!("unknown model kind {kind}")))),
    };
    let name = name.to_string();
    // The estimate holds no Python object: other threads run meanwhile.
    on_own_stack(py, move || run_estimate(source, &name, &options))
}

/// Runs a `c3` command line (without the program name) and returns what it
/// prints: `["devices", "--format", "json"]`, `["explain", "Conv"]`.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    on_own_stack(py, move || c3::run_args(args))
}

#[pymodule]
fn _c3(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add("C3Error", py.get_type::<C3Error>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("UsageError", usage_error(py)?)?;
    m.add("UnsupportedOpError", py.get_type::<UnsupportedOpError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::keyword_names;

    #[test]
    fn flags_in_messages_become_keywords() {
        assert_eq!(
            keyword_names("t: sizes unknown until bound: a, b; bind them with --dim a=N --dim b=N"),
            "t: sizes unknown until bound: a, b; bind them with dims={'a': N, 'b': N}"
        );
        assert_eq!(
            keyword_names(
                "m: sizes unknown until bound: n; bind them with --dim n=N (or give an input's shape with --input NAME=1x3x224x224)"
            ),
            "m: sizes unknown until bound: n; bind them with dims={'n': N} (or give an input's shape with inputs={'NAME': [1, 3, 224, 224]})"
        );
        assert_eq!(keyword_names("no flags here"), "no flags here");
    }
}
