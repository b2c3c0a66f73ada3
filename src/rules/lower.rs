//! Lowering a checked formula tree to evalexpr text, once, at load time, and
//! the functions that text calls at evaluation time.
//!
//! Every name is prefixed by its kind (`d_N` a dimension, `a_axis` an attribute,
//! `n_X` an element count...) so rule names can never collide with evalexpr's
//! own identifiers, and every call is `c3_f(argc, args...)` so a single list
//! argument is never mistaken for an argument tuple.

use evalexpr::{EvalexprError, EvalexprResult, Value};

use super::ast::{BinOp, Expr, ExprKind, Span, UnOp};

/// `fill(n, v)` builds lists of at most this many elements.
pub const MAX_FILL: usize = 4096;
/// The size of any value a formula builds or a `let` holds: list elements
/// (counted through nested lists) plus string bytes. Values are copied each
/// time a formula reads them, so this bounds what one read can cost.
pub const MAX_VALUE_SIZE: usize = 4096;
/// Lists may nest this deep (a list of lists is 2).
pub const MAX_VALUE_DEPTH: usize = 8;
/// The work one layer's evaluation may do: the sizes of every value its
/// formulas read or their functions build, summed over all its formulas.
/// Built-in rules stay under a few thousand.
pub const MAX_EVAL_WORK: u64 = 1 << 18;

/// A value's size (see [`MAX_VALUE_SIZE`]) and list depth, or an error
/// naming the limit it passes. Stops at the first limit passed, so checking
/// costs at most `MAX_VALUE_SIZE` steps.
pub fn check_value(v: &Value) -> Result<usize, String> {
    fn walk(v: &Value, depth: usize, size: &mut usize) -> Result<(), String> {
        match v {
            Value::Tuple(t) => {
                if depth >= MAX_VALUE_DEPTH {
                    return Err(format!(
                        "a list nests deeper than the limit of {MAX_VALUE_DEPTH} levels (MAX_VALUE_DEPTH)"
                    ));
                }
                if t.is_empty() {
                    *size += 1;
                }
                for x in t {
                    walk(x, depth + 1, size)?;
                }
            }
            Value::String(s) => *size += s.len().max(1),
            _ => *size += 1,
        }
        if *size > MAX_VALUE_SIZE {
            return Err(format!(
                "a value exceeds the limit of {MAX_VALUE_SIZE} elements and string bytes (MAX_VALUE_SIZE)"
            ));
        }
        Ok(())
    }
    let mut size = 0;
    walk(v, 0, &mut size)?;
    Ok(size)
}

/// What a name in a formula stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A tensor of the pattern list; as a bare name, whether it is present.
    Tensor { variadic: bool },
    /// One dimension bound by a pattern.
    Dim,
    /// A `*S` list of dimensions.
    List,
    /// An attribute (by its ONNX name).
    Attr,
    /// A `let` name; `counts_elements` when it uses `|X|`.
    Let { counts_elements: bool },
    /// `fma`, `full_attention`, `opset`, `true`, `false`.
    Switch,
    /// A figure a `time:` formula reads of the layer and the device
    /// (`peak`, `compute_s`: [`super::time_formula::TIME_NAMES`]), bound
    /// when the layer is timed, not when it is costed.
    Timing,
}

/// The switches every formula may use.
pub const SWITCHES: &[&str] = &["fma", "opset", "true", "false", "full_attention"];

/// Functions available in formulas: name, min and max argument count, meaning.
pub const FUNCTIONS: &[(&str, usize, usize, &str)] = &[
    ("min", 1, 64, "smallest of the arguments (or of one list)"),
    ("max", 1, 64, "largest of the arguments (or of one list)"),
    ("sum", 1, 1, "sum of a list"),
    ("prod", 1, 1, "product of a list (1 for an empty list)"),
    ("len", 1, 1, "length of a list"),
    ("cdiv", 2, 2, "ceiling division"),
    (
        "at",
        2,
        2,
        "list element; a negative index counts from the end",
    ),
    (
        "take",
        2,
        2,
        "first n elements (n < 0: all but the last -n)",
    ),
    (
        "drop",
        2,
        2,
        "all but the first n elements (n < 0: the last -n)",
    ),
    ("fill", 2, 2, "a list of n copies of a value"),
    (
        "mismatches",
        2,
        2,
        "number of positions where two lists differ",
    ),
    ("shape", 1, 1, "the shape of a tensor, as a list"),
    ("rank", 1, 1, "the rank of a tensor"),
    ("count", 1, 1, "how many tensors a variadic pattern matched"),
    (
        "nnz",
        1,
        1,
        "nonzero elements of a constant tensor, counted in the model's weights (its element count when it is not a constant or its values are not in the model; with --prune R, the element count less the fraction R)",
    ),
    (
        "constant",
        1,
        1,
        "whether a tensor is a constant of the model (a weight)",
    ),
    (
        "has",
        1,
        1,
        "whether an optional tensor or attribute is present",
    ),
    (
        "width",
        1,
        1,
        "bits per element of a tensor's dtype (0 when absent)",
    ),
    (
        "index_space",
        2,
        65,
        "product of the sizes of every distinct index of an Einstein-summation equation, given its operands' shapes (absent ones skipped)",
    ),
];

/// Resolves names while lowering; implemented by the rule compiler.
pub trait Scope {
    fn kind(&self, name: &str) -> Option<NameKind>;
    /// Every name bound, for an unknown name's "did you mean".
    fn names(&self) -> Vec<&str> {
        Vec::new()
    }
}

/// The error of a name no pattern, attribute or `let` binds: the nearest
/// bound name, or, for a word that reads as a string value (`NOTSET`), how
/// to write a string in YAML.
fn unknown_name(n: &str, scope: &dyn Scope) -> String {
    // ONNX's string values are capitals (`NOTSET`, `SAME_UPPER`): such a
    // word is taken for a string, whatever name it is near.
    let capitals = !n.chars().any(|c| c.is_ascii_lowercase());
    let hint = crate::error::did_you_mean(n, scope.names());
    if !hint.is_empty() && !capitals {
        return format!("unknown name '{n}'{hint}");
    }
    format!(
        "unknown name '{n}'; a string is written in double quotes inside the YAML value: '\"{n}\"'"
    )
}

/// Whether `|X|` means an element count (FLOPs, `let`, params) or a storage
/// size in bits (memory formulas; the caller turns bits into bytes); and
/// `Seconds`, a `time:` formula: element counts, and `/` divides exactly
/// (a time is a real number: `5 / 1000000` is 5 µs, not 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    Elements,
    Bits,
    Seconds,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LowerError {
    pub message: String,
    pub span: Span,
}

fn err<T>(message: impl Into<String>, span: Span) -> Result<T, LowerError> {
    Err(LowerError {
        message: message.into(),
        span,
    })
}

/// evalexpr variable names for each kind of binding.
pub fn var_dim(name: &str) -> String {
    format!("d_{name}")
}
pub fn var_attr(name: &str) -> String {
    format!("a_{name}")
}
pub fn var_let(name: &str) -> String {
    format!("l_{name}")
}
pub fn var_switch(name: &str) -> String {
    format!("k_{name}")
}
pub fn var_present(name: &str) -> String {
    format!("p_{name}")
}
pub fn var_elements(name: &str) -> String {
    format!("n_{name}")
}
pub fn var_bits(name: &str) -> String {
    format!("b_{name}")
}
pub fn var_shape(name: &str) -> String {
    format!("s_{name}")
}
pub fn var_width(name: &str) -> String {
    format!("w_{name}")
}
pub fn var_count(name: &str) -> String {
    format!("c_{name}")
}
pub fn var_nonzeros(name: &str) -> String {
    format!("z_{name}")
}
pub fn var_constant(name: &str) -> String {
    format!("q_{name}")
}
pub fn var_timing(name: &str) -> String {
    format!("t_{name}")
}

/// Lowers `e` to evalexpr text, checking every name and call on the way.
pub fn lower(e: &Expr, scope: &dyn Scope, units: Units) -> Result<String, LowerError> {
    let mut out = String::new();
    emit(e, scope, units, &mut out)?;
    Ok(out)
}

fn emit_call(
    f: &str,
    args: &[&Expr],
    scope: &dyn Scope,
    units: Units,
    out: &mut String,
) -> Result<(), LowerError> {
    out.push_str(&format!("c3_{f}({}", args.len()));
    for a in args {
        out.push_str(", ");
        emit(a, scope, units, out)?;
    }
    out.push(')');
    Ok(())
}

fn tensor_arg<'a>(
    f: &str,
    args: &'a [Expr],
    scope: &dyn Scope,
    span: Span,
) -> Result<(&'a str, bool), LowerError> {
    match args {
        [
            Expr {
                kind: ExprKind::Name(n),
                span: arg_span,
            },
        ] => match scope.kind(n) {
            Some(NameKind::Tensor { variadic }) => Ok((n.as_str(), variadic)),
            Some(_) => err(
                format!("{f}() takes a tensor name; '{n}' is not a tensor"),
                *arg_span,
            ),
            None => err(unknown_name(n, scope), *arg_span),
        },
        _ => err(format!("{f}() takes one tensor name"), span),
    }
}

fn emit(e: &Expr, scope: &dyn Scope, units: Units, out: &mut String) -> Result<(), LowerError> {
    match &e.kind {
        ExprKind::Int(v) => out.push_str(&v.to_string()),
        ExprKind::Str(s) => {
            out.push('"');
            out.push_str(s);
            out.push('"');
        }
        ExprKind::Name(n) => match scope.kind(n) {
            Some(NameKind::Tensor { variadic: false }) => out.push_str(&var_present(n)),
            Some(NameKind::Tensor { variadic: true }) => {
                out.push_str(&format!("({} > 0)", var_count(n)))
            }
            Some(NameKind::Dim | NameKind::List) => out.push_str(&var_dim(n)),
            Some(NameKind::Attr) => out.push_str(&var_attr(n)),
            Some(NameKind::Let { counts_elements }) => {
                if counts_elements && units == Units::Bits {
                    return err(
                        format!(
                            "'{n}' counts elements (it uses |X|), but memory formulas count \
                             bytes: write the |X| terms here directly"
                        ),
                        e.span,
                    );
                }
                out.push_str(&var_let(n))
            }
            Some(NameKind::Switch) => out.push_str(&var_switch(n)),
            Some(NameKind::Timing) => out.push_str(&var_timing(n)),
            None => return err(unknown_name(n, scope), e.span),
        },
        ExprKind::Size(n) => match scope.kind(n) {
            Some(NameKind::Tensor { .. }) => out.push_str(&match units {
                Units::Elements | Units::Seconds => var_elements(n),
                Units::Bits => var_bits(n),
            }),
            Some(_) => return err(format!("|{n}| needs a tensor; '{n}' is not one"), e.span),
            None => {
                let hint = crate::error::did_you_mean(n, scope.names());
                return err(format!("unknown tensor '{n}'{hint}"), e.span);
            }
        },
        ExprKind::Call(f, args) => {
            let Some(&(_, lo, hi, _)) = FUNCTIONS.iter().find(|x| x.0 == f) else {
                let hint = crate::error::did_you_mean(f, FUNCTIONS.iter().map(|x| x.0));
                return err(format!("unknown function '{f}'{hint}"), e.span);
            };
            if args.len() < lo || args.len() > hi {
                let want = if lo == hi {
                    format!("{lo}")
                } else {
                    format!("{lo} to {hi}")
                };
                return err(
                    format!("{f}() takes {want} argument(s), got {}", args.len()),
                    e.span,
                );
            }
            match f.as_str() {
                "shape" => {
                    let (t, variadic) = tensor_arg(f, args, scope, e.span)?;
                    if variadic {
                        return err("shape() of a variadic pattern is not defined", e.span);
                    }
                    out.push_str(&var_shape(t));
                }
                "rank" => {
                    let (t, variadic) = tensor_arg(f, args, scope, e.span)?;
                    if variadic {
                        return err("rank() of a variadic pattern is not defined", e.span);
                    }
                    out.push_str(&format!("c3_len(1, {})", var_shape(t)));
                }
                "width" => {
                    let (t, variadic) = tensor_arg(f, args, scope, e.span)?;
                    if variadic {
                        return err("width() of a variadic pattern is not defined", e.span);
                    }
                    out.push_str(&var_width(t));
                }
                "nnz" | "constant" => {
                    let (t, variadic) = tensor_arg(f, args, scope, e.span)?;
                    if variadic {
                        return err(
                            format!("{f}() of a variadic pattern is not defined"),
                            e.span,
                        );
                    }
                    out.push_str(&if f == "nnz" {
                        var_nonzeros(t)
                    } else {
                        var_constant(t)
                    });
                }
                "count" => {
                    let (t, variadic) = tensor_arg(f, args, scope, e.span)?;
                    if !variadic {
                        return err(
                            format!("count() takes a variadic pattern; '{t}' is not"),
                            e.span,
                        );
                    }
                    out.push_str(&var_count(t));
                }
                "has" => match args.as_slice() {
                    [
                        Expr {
                            kind: ExprKind::Name(n),
                            ..
                        },
                    ] if matches!(scope.kind(n), Some(NameKind::Attr)) => {
                        out.push_str(&format!("c3_has(1, {})", var_attr(n)));
                    }
                    [
                        Expr {
                            kind: ExprKind::Name(n),
                            ..
                        },
                    ] if matches!(scope.kind(n), Some(NameKind::Tensor { .. })) => {
                        emit(&args[0], scope, units, out)?;
                    }
                    _ => return err("has() takes a tensor or attribute name", e.span),
                },
                _ => emit_call(f, &args.iter().collect::<Vec<_>>(), scope, units, out)?,
            }
        }
        ExprKind::List(items) => {
            emit_call("list", &items.iter().collect::<Vec<_>>(), scope, units, out)?
        }
        ExprKind::Index(base, i) => emit_call("at", &[base, i], scope, units, out)?,
        ExprKind::Unary(op, a) => {
            out.push_str(if *op == UnOp::Neg { "(-(" } else { "(!(" });
            emit(a, scope, units, out)?;
            out.push_str("))");
        }
        ExprKind::Binary(BinOp::Div, a, b) if units == Units::Seconds => {
            emit_call("fdiv", &[a, b], scope, units, out)?
        }
        ExprKind::Binary(op, a, b) => {
            out.push('(');
            emit(a, scope, units, out)?;
            out.push(' ');
            out.push_str(match op {
                BinOp::Rem => "%",
                other => other.symbol(),
            });
            out.push(' ');
            emit(b, scope, units, out)?;
            out.push(')');
        }
        // evalexpr has no lazy conditional: both branches are evaluated.
        ExprKind::Cond(c, a, b) => emit_call("if", &[c, a, b], scope, units, out)?,
    }
    Ok(())
}

// ------------------------------------------------------------------ runtime

fn fail<T>(msg: impl Into<String>) -> EvalexprResult<T> {
    Err(EvalexprError::CustomMessage(msg.into()))
}

fn int(v: &Value, what: &str) -> EvalexprResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Boolean(b) => Ok(*b as i64),
        Value::Empty => fail(format!("{what}: value is absent")),
        other => fail(format!(
            "{what}: expected an integer, got {}",
            describe(other)
        )),
    }
}

/// A number of a time formula as a real number.
fn real(v: &Value, what: &str) -> EvalexprResult<f64> {
    match v {
        Value::Float(f) => Ok(*f),
        other => int(other, what).map(|i| i as f64),
    }
}

/// `min` or `max` of numbers one of which is real.
fn real_extreme(name: &str, items: &[Value]) -> EvalexprResult<Value> {
    let mut best: Option<f64> = None;
    for v in items {
        let v = real(v, name)?;
        best = Some(match best {
            None => v,
            Some(b) if name == "min" => b.min(v),
            Some(b) => b.max(v),
        });
    }
    best.map(Value::Float)
        .map_or_else(|| fail(format!("{name}() of an empty list")), Ok)
}

fn list<'a>(v: &'a Value, what: &str) -> EvalexprResult<&'a [Value]> {
    match v {
        Value::Tuple(t) => Ok(t),
        Value::Empty => fail(format!("{what}: value is absent")),
        other => fail(format!("{what}: expected a list, got {}", describe(other))),
    }
}

/// A short description of a value for error messages.
pub fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string {s:?}"),
        Value::Float(f) => format!("the number {f}"),
        Value::Int(i) => format!("the integer {i}"),
        Value::Boolean(b) => format!("{b}"),
        Value::Tuple(_) => "a list".into(),
        Value::Empty => "nothing".into(),
    }
}

fn overflow<T>(what: &str) -> EvalexprResult<T> {
    fail(format!("{what}: integer overflow"))
}

fn resolve_index(i: i64, len: usize, what: &str) -> EvalexprResult<usize> {
    let len_i = len as i64;
    let j = if i < 0 { i + len_i } else { i };
    if j < 0 || j >= len_i {
        return fail(format!(
            "{what}: index {i} is out of range for a list of {len}"
        ));
    }
    Ok(j as usize)
}

fn resolve_count(n: i64, len: usize) -> usize {
    let len_i = len as i64;
    let k = if n < 0 { len_i + n } else { n };
    k.clamp(0, len_i) as usize
}

/// Calls the formula function `c3_<name>`; `arg` is `(argc, args...)`.
pub fn call(identifier: &str, arg: &Value) -> EvalexprResult<Value> {
    let Some(name) = identifier.strip_prefix("c3_") else {
        return Err(EvalexprError::FunctionIdentifierNotFound(identifier.into()));
    };
    let args: &[Value] = match arg {
        Value::Tuple(t) if !t.is_empty() => {
            let n = int(&t[0], name)? as usize;
            if n + 1 != t.len() {
                return fail(format!("{name}: malformed call"));
            }
            &t[1..]
        }
        // `c3_f(0)` has no arguments.
        Value::Int(0) => &[],
        _ => return fail(format!("{name}: malformed call")),
    };
    match (name, args) {
        ("if", [c, a, b]) => {
            let c = match c {
                Value::Boolean(b) => *b,
                Value::Int(i) => *i != 0,
                other => {
                    return fail(format!(
                        "condition: expected true or false, got {}",
                        describe(other)
                    ));
                }
            };
            Ok(if c { a.clone() } else { b.clone() })
        }
        ("list", items) => {
            let v = Value::Tuple(items.to_vec());
            check_value(&v).map_err(EvalexprError::CustomMessage)?;
            Ok(v)
        }
        ("min" | "max", items) => {
            let items = match items {
                [Value::Tuple(t)] => t.as_slice(),
                _ => items,
            };
            // A time formula compares seconds: with a real number among
            // them, all are compared as real numbers.
            if items.iter().any(|v| matches!(v, Value::Float(_))) {
                return real_extreme(name, items);
            }
            let mut best: Option<i64> = None;
            for v in items {
                let v = int(v, name)?;
                best = Some(match best {
                    None => v,
                    Some(b) if name == "min" => b.min(v),
                    Some(b) => b.max(v),
                });
            }
            match best {
                Some(b) => Ok(Value::Int(b)),
                None => fail(format!("{name}() of an empty list")),
            }
        }
        ("fdiv", [a, b]) => {
            let (a, b) = (real(a, "division")?, real(b, "division")?);
            if b == 0.0 {
                return fail("division by zero");
            }
            Ok(Value::Float(a / b))
        }
        ("sum", [l]) => {
            let mut acc: i64 = 0;
            for v in list(l, name)? {
                acc = acc
                    .checked_add(int(v, name)?)
                    .map_or_else(|| overflow(name), Ok)?;
            }
            Ok(Value::Int(acc))
        }
        ("prod", [l]) => {
            let mut acc: i64 = 1;
            for v in list(l, name)? {
                acc = acc
                    .checked_mul(int(v, name)?)
                    .map_or_else(|| overflow(name), Ok)?;
            }
            Ok(Value::Int(acc))
        }
        ("len", [l]) => Ok(Value::Int(list(l, name)?.len() as i64)),
        ("cdiv", [a, b]) => {
            let (a, b) = (int(a, name)?, int(b, name)?);
            if b == 0 {
                return fail("division by zero");
            }
            // Ceiling division for any signs: -floor(-a / b).
            let q = a.checked_div(b).map_or_else(|| overflow(name), Ok)?;
            let r = a % b;
            Ok(Value::Int(if r != 0 && ((r > 0) == (b > 0)) {
                q + 1
            } else {
                q
            }))
        }
        ("at", [l, i]) => {
            let l = list(l, "index")?;
            let j = resolve_index(int(i, "index")?, l.len(), "index")?;
            Ok(l[j].clone())
        }
        ("take", [l, n]) => {
            let l = list(l, name)?;
            let k = resolve_count(int(n, name)?, l.len());
            Ok(Value::Tuple(l[..k].to_vec()))
        }
        ("drop", [l, n]) => {
            let l = list(l, name)?;
            let k = resolve_count(int(n, name)?, l.len());
            Ok(Value::Tuple(l[k..].to_vec()))
        }
        ("fill", [n, v]) => {
            let n = int(n, name)?;
            if n < 0 {
                return fail(format!("fill: length {n} is negative"));
            }
            if n > MAX_FILL as i64 {
                return fail(format!(
                    "fill: length {n} exceeds the limit of {MAX_FILL} elements"
                ));
            }
            // Checked before the copies are made.
            let one = check_value(v).map_err(EvalexprError::CustomMessage)?;
            if (n as usize).saturating_mul(one) > MAX_VALUE_SIZE {
                return fail(format!(
                    "fill: {n} copies of a value of size {one} exceed the limit of {MAX_VALUE_SIZE} elements and string bytes (MAX_VALUE_SIZE)"
                ));
            }
            let v = Value::Tuple(vec![v.clone(); n as usize]);
            check_value(&v).map_err(EvalexprError::CustomMessage)?;
            Ok(v)
        }
        ("mismatches", [a, b]) => {
            let (a, b) = (list(a, name)?, list(b, name)?);
            if a.len() != b.len() {
                return fail(format!(
                    "mismatches: lists have different lengths ({} and {})",
                    a.len(),
                    b.len()
                ));
            }
            Ok(Value::Int(
                a.iter().zip(b).filter(|(x, y)| x != y).count() as i64
            ))
        }
        ("has", [v]) => Ok(Value::Boolean(!matches!(v, Value::Empty))),
        ("index_space", [eq, shapes @ ..]) => {
            let Value::String(eq) = eq else {
                return fail(format!(
                    "index_space: the equation must be a string, got {}",
                    describe(eq)
                ));
            };
            // Absent optional operands do not take part.
            let mut dims = Vec::new();
            for s in shapes.iter().filter(|s| !matches!(s, Value::Empty)) {
                let d = list(s, name)?
                    .iter()
                    .map(|v| int(v, name))
                    .collect::<EvalexprResult<Vec<i64>>>()?;
                dims.push(d);
            }
            index_space(eq, &dims)
                .map(Value::Int)
                .map_err(EvalexprError::CustomMessage)
        }
        _ => Err(EvalexprError::FunctionIdentifierNotFound(identifier.into())),
    }
}

/// The size of an Einstein summation's full index space: the product of
/// every distinct index's size, the dimensions an ellipsis stands for
/// broadcast across the operands. Sizes of one broadcast to the others.
pub fn index_space(equation: &str, shapes: &[Vec<i64>]) -> Result<i64, String> {
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let lhs = eq.split("->").next().unwrap_or("");
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != shapes.len() {
        return Err(format!(
            "einsum '{equation}' has {} operands, the node {}",
            terms.len(),
            shapes.len()
        ));
    }
    // Index letter -> size; the ellipsis dimensions, aligned on the right.
    let mut sizes: std::collections::BTreeMap<char, i64> = Default::default();
    let mut ellipsis: Vec<i64> = Vec::new();
    let merge = |slot: &mut i64, d: i64, what: &dyn Fn() -> String| -> Result<(), String> {
        match (*slot, d) {
            (a, b) if a == b || b == 1 => Ok(()),
            (1, b) => {
                *slot = b;
                Ok(())
            }
            (a, b) => Err(format!(
                "{} is {a} in one operand and {b} in another",
                what()
            )),
        }
    };
    for (term, shape) in terms.iter().zip(shapes) {
        let (before, after) = match term.split_once("...") {
            Some((b, a)) => (b, Some(a)),
            None => (*term, None),
        };
        let letters = before.chars().count() + after.map_or(0, |a| a.chars().count());
        if let Some(c) = term.chars().find(|c| !c.is_ascii_alphabetic() && *c != '.') {
            return Err(format!("einsum '{equation}': '{c}' is not an index letter"));
        }
        if after.is_some_and(|a| a.contains('.')) || (after.is_none() && term.contains('.')) {
            return Err(format!(
                "einsum '{equation}': a term has a malformed ellipsis"
            ));
        }
        let rank = shape.len();
        if letters > rank || (after.is_none() && letters != rank) {
            return Err(format!(
                "einsum '{equation}': term '{term}' does not fit an operand of rank {rank}"
            ));
        }
        let spread = rank - letters;
        let mut axis = shape.iter();
        for c in before.chars() {
            let d = *axis.next().expect("rank checked");
            let slot = sizes.entry(c).or_insert(d);
            merge(slot, d, &|| format!("einsum index '{c}'"))?;
        }
        let middle: Vec<i64> = axis.by_ref().take(spread).copied().collect();
        if ellipsis.len() < middle.len() {
            let mut wider = vec![1; middle.len() - ellipsis.len()];
            wider.extend(&ellipsis);
            ellipsis = wider;
        }
        let offset = ellipsis.len() - middle.len();
        for (i, &d) in middle.iter().enumerate() {
            merge(&mut ellipsis[offset + i], d, &|| {
                "an ellipsis dimension".to_string()
            })?;
        }
        for c in after.unwrap_or("").chars() {
            let d = *axis.next().expect("rank checked");
            let slot = sizes.entry(c).or_insert(d);
            merge(slot, d, &|| format!("einsum index '{c}'"))?;
        }
    }
    sizes
        .values()
        .chain(&ellipsis)
        .try_fold(1i64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| "index_space: integer overflow".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::parse::parse_formula;

    struct TestScope;
    impl Scope for TestScope {
        fn kind(&self, name: &str) -> Option<NameKind> {
            match name {
                "X" | "Y" => Some(NameKind::Tensor { variadic: false }),
                "N" => Some(NameKind::Dim),
                "K" => Some(NameKind::List),
                "axis" => Some(NameKind::Attr),
                "n" => Some(NameKind::Let {
                    counts_elements: true,
                }),
                "fma" => Some(NameKind::Switch),
                _ => None,
            }
        }
        fn names(&self) -> Vec<&str> {
            vec!["X", "Y", "N", "K", "axis", "n", "fma"]
        }
    }

    fn low(src: &str, units: Units) -> Result<String, LowerError> {
        lower(&parse_formula(src).unwrap(), &TestScope, units)
    }

    #[test]
    fn lowering_prefixes_names_and_counts_arguments() {
        assert_eq!(
            low("fma ? |X| * prod(K) : 2 * N", Units::Elements).unwrap(),
            "c3_if(3, k_fma, (n_X * c3_prod(1, d_K)), (2 * d_N))"
        );
        assert_eq!(low("|X| + |Y|", Units::Bits).unwrap(), "(b_X + b_Y)");
        assert_eq!(
            low("K[axis]", Units::Elements).unwrap(),
            "c3_at(2, d_K, a_axis)"
        );
    }

    /// In a time formula `/` divides exactly: 5 / 1000000 is 5 µs, not 0.
    #[test]
    fn a_time_formula_divides_exactly_and_compares_seconds() {
        assert_eq!(
            low("|X| / N + 5 / 1000000", Units::Seconds).unwrap(),
            "(c3_fdiv(2, n_X, d_N) + c3_fdiv(2, 5, 1000000))"
        );
        let args = |v: Vec<Value>| {
            let mut all = vec![Value::Int(v.len() as i64)];
            all.extend(v);
            Value::Tuple(all)
        };
        assert_eq!(
            call("c3_fdiv", &args(vec![Value::Int(5), Value::Int(1_000_000)])).unwrap(),
            Value::Float(5e-6)
        );
        assert!(call("c3_fdiv", &args(vec![Value::Int(1), Value::Float(0.0)])).is_err());
        // With a real number among them, min and max compare real numbers;
        // integers alone stay integers.
        assert_eq!(
            call("c3_max", &args(vec![Value::Float(2e-6), Value::Int(0)])).unwrap(),
            Value::Float(2e-6)
        );
        assert_eq!(
            call("c3_min", &args(vec![Value::Int(3), Value::Int(2)])).unwrap(),
            Value::Int(2)
        );
    }

    #[test]
    fn lowering_rejects_unknown_names_and_bad_calls() {
        // Nothing is near 'Qz': the error says how a string is written.
        let e = low("N + Qz", Units::Elements).unwrap_err();
        assert_eq!(
            e.message,
            "unknown name 'Qz'; a string is written in double quotes inside the YAML value: '\"Qz\"'"
        );
        assert_eq!(e.span, Span { start: 4, end: 6 });
        // A typo of a bound name gets it suggested.
        let e = low("axes + 1", Units::Elements).unwrap_err();
        assert_eq!(e.message, "unknown name 'axes'; did you mean 'axis'?");
        assert_eq!(
            low("prd(K)", Units::Elements).unwrap_err().message,
            "unknown function 'prd'; did you mean 'prod'?"
        );
        assert!(
            low("cdiv(N)", Units::Elements)
                .unwrap_err()
                .message
                .contains("takes 2")
        );
        assert!(
            low("|N|", Units::Elements)
                .unwrap_err()
                .message
                .contains("not one")
        );
        assert!(
            low("n + |X|", Units::Bits)
                .unwrap_err()
                .message
                .contains("counts elements")
        );
    }

    #[test]
    fn runtime_functions() {
        let t = |v: Vec<i64>| Value::Tuple(v.into_iter().map(Value::Int).collect());
        let args = |v: Vec<Value>| {
            let mut all = vec![Value::Int(v.len() as i64)];
            all.extend(v);
            Value::Tuple(all)
        };
        assert_eq!(
            call("c3_prod", &args(vec![t(vec![2, 3, 4])])).unwrap(),
            Value::Int(24)
        );
        assert_eq!(
            call("c3_prod", &args(vec![t(vec![])])).unwrap(),
            Value::Int(1)
        );
        assert_eq!(
            call("c3_cdiv", &args(vec![Value::Int(7), Value::Int(2)])).unwrap(),
            Value::Int(4)
        );
        assert_eq!(
            call("c3_cdiv", &args(vec![Value::Int(-7), Value::Int(2)])).unwrap(),
            Value::Int(-3)
        );
        assert_eq!(
            call("c3_at", &args(vec![t(vec![5, 6, 7]), Value::Int(-1)])).unwrap(),
            Value::Int(7)
        );
        assert!(call("c3_at", &args(vec![t(vec![5]), Value::Int(3)])).is_err());
        assert_eq!(
            call("c3_drop", &args(vec![t(vec![1, 2, 3]), Value::Int(1)])).unwrap(),
            t(vec![2, 3])
        );
        assert_eq!(
            call("c3_take", &args(vec![t(vec![1, 2, 3]), Value::Int(-1)])).unwrap(),
            t(vec![1, 2])
        );
        assert_eq!(
            call("c3_max", &args(vec![Value::Int(3), Value::Int(9)])).unwrap(),
            Value::Int(9)
        );
        assert_eq!(
            call("c3_min", &args(vec![t(vec![4, 2])])).unwrap(),
            Value::Int(2)
        );
        assert!(call("c3_prod", &args(vec![t(vec![i64::MAX, 2])])).is_err());
        assert!(call("c3_cdiv", &args(vec![Value::Int(1), Value::Int(0)])).is_err());
        assert_eq!(
            call(
                "c3_mismatches",
                &args(vec![t(vec![1, 2, 3]), t(vec![1, 5, 6])])
            )
            .unwrap(),
            Value::Int(2)
        );
    }
}
