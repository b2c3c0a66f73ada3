//! Evaluating a compiled rule ([`super::compile`]) on one node: binding the
//! node's shapes and attributes, running the formulas, memoizing by shape.

use std::fmt;
use std::sync::Arc;

use evalexpr::{EvalexprError, Value};

use super::ast::{BinOp, DimPat, Expr, ExprKind};
pub(crate) use super::bind::bind_dims;
use super::compile::*;
use super::lower::{self, NameKind, Scope, Units};
use crate::ir::{AttrValue, Dim, Node, TensorFact};

/// Switches that change how a rule counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountOptions {
    /// A multiply-add counts as one FLOP (the default) rather than two.
    pub fma: bool,
    /// Attention counts every (query, key) pair, masked or not
    /// (`--attention full`); by default only the unmasked ones.
    pub full_attention: bool,
    /// Which If branch the totals count (`--if-branch`).
    pub branch: BranchChoice,
    /// `--prune R`: every constant counted by `nnz()` as if the fraction R
    /// of its elements were zero, its values unread.
    pub prune: Option<Prune>,
    /// Also count what timing a layer needs: its work in a device's own
    /// convention (a multiply-add is two operations, whatever `fma` says)
    /// and its kernel class (`--device`, `--profile`).
    pub timing: bool,
}

/// A pruning fraction R, 0 ≤ R < 1, held exactly in billionths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prune {
    billionths: u64,
}

impl Prune {
    const ONE: u64 = 1_000_000_000;

    /// The nonzero elements left of `n` once the fraction R is zero:
    /// `n - floor(n * R)`.
    pub fn nonzeros_of(self, n: u64) -> u64 {
        let zeros = (n as u128 * self.billionths as u128 / Self::ONE as u128) as u64;
        n - zeros
    }

    /// R as a decimal number again (`0.9`).
    pub fn fraction(self) -> f64 {
        self.billionths as f64 / Self::ONE as f64
    }
}

impl std::str::FromStr for Prune {
    type Err = String;
    /// A decimal fraction at least 0 and below 1, with up to 9 decimals.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "'{s}' is not a fraction from 0 up to (not including) 1 with at most 9 decimals \
                 (0.9 counts 90% of each weight as zero)"
            )
        };
        let (int, frac) = s.trim().split_once('.').unwrap_or((s.trim(), ""));
        let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
        if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) || frac.len() > 9 {
            return Err(bad());
        }
        if !int.bytes().all(|b| b == b'0') {
            return Err(bad());
        }
        let billionths = format!("{frac:0<9}").parse::<u64>().map_err(|_| bad())?;
        Ok(Prune { billionths })
    }
}

impl Default for CountOptions {
    fn default() -> Self {
        Self {
            fma: true,
            full_attention: false,
            branch: BranchChoice::Larger,
            prune: None,
            timing: false,
        }
    }
}

impl CountOptions {
    /// The defaults with the FMA switch set.
    pub fn fma(fma: bool) -> Self {
        Self {
            fma,
            ..Self::default()
        }
    }
}

/// Which of an If's two branches the totals count; the other is reported
/// beside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BranchChoice {
    /// The one with more work (FLOPs plus IOPs, then bytes): an upper bound.
    Larger,
    /// The one with less work: a lower bound.
    Smaller,
    /// Always the then branch.
    Then,
    /// Always the else branch.
    Else,
}

impl BranchChoice {
    /// The value `--if-branch` takes for it.
    pub fn name(self) -> &'static str {
        match self {
            BranchChoice::Larger => "larger",
            BranchChoice::Smaller => "smaller",
            BranchChoice::Then => "then",
            BranchChoice::Else => "else",
        }
    }
}

impl std::str::FromStr for BranchChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "larger" => BranchChoice::Larger,
            "smaller" => BranchChoice::Smaller,
            "then" => BranchChoice::Then,
            "else" => BranchChoice::Else,
            _ => {
                return Err(format!(
                    "unknown branch '{s}' (larger, smaller, then, else)"
                ));
            }
        })
    }
}

/// The result of applying a rule to one node.
/// The attributes a rule shows, by name, as evaluated for a layer.
pub type Params = Arc<[(String, Value)]>;

#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub flops: u64,
    /// FLOPs with a multiply-add counted as two (the convention of device
    /// peaks), whatever `fma` says; `flops` unless `timing` was asked.
    pub work: u64,
    /// The rule's `class:` for this node, with `timing`.
    pub class: Option<Arc<str>>,
    /// The kernel calls it makes (the rule's `calls:`, else 1), with
    /// `timing`.
    pub calls: u64,
    /// With `timing`, for a rule with a `time:` formula: what the formula
    /// reads of this evaluation, kept until the layer is timed on a device.
    pub time: Option<Arc<super::time_formula::TimeInputs>>,
    /// Bytes read.
    pub mread: u64,
    /// Bytes written.
    pub mwrite: u64,
    /// Integer operations.
    pub iops: u64,
    /// Shared: every layer the same evaluation is remembered for holds
    /// these, not a copy.
    pub params: Params,
    /// Every name the rule bound, in binding order (for `c3 explain`).
    pub bindings: Vec<(String, Value)>,
}

/// Why a rule could not be applied to a node.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// The node does not fit the rule's patterns (a bad trace or model).
    Binding(String),
    /// A formula failed (overflow, division by zero, wrong type).
    Formula {
        origin: Origin,
        what: String,
        text: String,
        message: String,
    },
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Binding(m) => f.write_str(m),
            EvalError::Formula {
                origin,
                what,
                text,
                message,
            } => write!(f, "{origin}: {message} in {what} `{text}`"),
        }
    }
}

/// The variables one evaluation sees, keyed by the rule's own names.
pub(crate) struct Env<'r> {
    pub(super) vars: rustc_hash::FxHashMap<&'r str, Value>,
    /// Work done so far (see [`lower::MAX_EVAL_WORK`]); once it passes the
    /// limit, every read fails and `over_budget` says why.
    work: std::cell::Cell<u64>,
    over_budget: std::cell::Cell<bool>,
}

impl evalexpr::Context for Env<'_> {
    fn get_value(&self, identifier: &str) -> Option<&Value> {
        let v = self.vars.get(identifier)?;
        // evalexpr copies what it reads: a list costs its size.
        let cost = match v {
            Value::Tuple(_) | Value::String(_) => {
                lower::check_value(v).unwrap_or(lower::MAX_VALUE_SIZE)
            }
            _ => 1,
        };
        if !self.spend(cost as u64) {
            return None;
        }
        Some(v)
    }
    fn call_function(&self, identifier: &str, argument: &Value) -> evalexpr::EvalexprResult<Value> {
        if !self.spend(1) {
            return Err(EvalexprError::CustomMessage(over_budget_message()));
        }
        let v = lower::call(identifier, argument)?;
        if let Value::Tuple(_) | Value::String(_) = &v {
            let size = lower::check_value(&v).map_err(EvalexprError::CustomMessage)?;
            if !self.spend(size as u64) {
                return Err(EvalexprError::CustomMessage(over_budget_message()));
            }
        }
        Ok(v)
    }
    fn are_builtin_functions_disabled(&self) -> bool {
        true
    }
    fn set_builtin_functions_disabled(&mut self, disabled: bool) -> evalexpr::EvalexprResult<()> {
        if disabled {
            Ok(())
        } else {
            Err(EvalexprError::CustomMessage(
                "builtin functions stay disabled".into(),
            ))
        }
    }
}

fn over_budget_message() -> String {
    format!(
        "evaluating this layer exceeds the limit of {} units of work (MAX_EVAL_WORK)",
        lower::MAX_EVAL_WORK
    )
}

impl<'r> Env<'r> {
    pub(super) fn new() -> Self {
        Env {
            vars: rustc_hash::FxHashMap::with_capacity_and_hasher(64, Default::default()),
            work: std::cell::Cell::new(0),
            over_budget: std::cell::Cell::new(false),
        }
    }

    pub(super) fn set(&mut self, var: &'r str, v: Value) {
        self.vars.insert(var, v);
    }

    /// Takes `cost` from the layer's work budget; false once it is spent.
    fn spend(&self, cost: u64) -> bool {
        let w = self.work.get().saturating_add(cost);
        self.work.set(w);
        if w > lower::MAX_EVAL_WORK {
            self.over_budget.set(true);
        }
        !self.over_budget.get()
    }
}

/// What a default of value `d` takes, when attribute value `v` is not
/// that. Numbers stand for numbers (defaults write a float's `1` as an
/// int); a string is not a number, a list not a scalar.
fn kind_mismatch(v: &AttrValue, d: &Value) -> Option<&'static str> {
    use AttrValue as A;
    let number = matches!(v, A::Int(_) | A::Float(_));
    let (ok, want) = match d {
        Value::Int(_) | Value::Float(_) | Value::Boolean(_) => (number, "a number"),
        Value::String(_) => (matches!(v, A::Str(_)), "a string"),
        Value::Tuple(t) => match t.first() {
            Some(Value::Int(_) | Value::Float(_)) => {
                (matches!(v, A::Ints(_) | A::Floats(_)), "a list of numbers")
            }
            Some(Value::String(_)) => (matches!(v, A::Strs(_)), "strings"),
            _ => (
                matches!(v, A::Ints(_) | A::Floats(_) | A::Strs(_)),
                "a list",
            ),
        },
        _ => (true, ""),
    };
    (!ok).then_some(want)
}

pub fn attr_value(a: &AttrValue) -> Value {
    match a {
        AttrValue::Int(i) => Value::Int(*i),
        AttrValue::Float(f) => Value::Float(*f),
        AttrValue::Str(s) => Value::String(s.clone()),
        AttrValue::Ints(v) => Value::Tuple(v.iter().map(|&i| Value::Int(i)).collect()),
        AttrValue::Floats(v) => Value::Tuple(v.iter().map(|&f| Value::Float(f)).collect()),
        AttrValue::Strs(v) => Value::Tuple(v.iter().map(|s| Value::String(s.clone())).collect()),
    }
}

/// An attribute value as words of a memo key: a tag, then the value (lengths
/// first, so no two values give the same words).
pub(crate) fn attr_key(v: &AttrValue, k: &mut Vec<u64>) {
    let strs = |k: &mut Vec<u64>, s: &str| {
        k.push(s.len() as u64);
        k.extend(s.as_bytes().chunks(8).map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        }));
    };
    match v {
        AttrValue::Int(i) => k.extend([1, *i as u64]),
        AttrValue::Float(f) => k.extend([2, f.to_bits()]),
        AttrValue::Str(s) => {
            k.push(3);
            strs(k, s);
        }
        AttrValue::Ints(v) => {
            k.extend([4, v.len() as u64]);
            k.extend(v.iter().map(|&i| i as u64));
        }
        AttrValue::Floats(v) => {
            k.extend([5, v.len() as u64]);
            k.extend(v.iter().map(|f| f.to_bits()));
        }
        AttrValue::Strs(v) => {
            k.extend([6, v.len() as u64]);
            for s in v {
                strs(k, s);
            }
        }
    }
}

pub(crate) fn dim_value(d: &Dim, tensor: &str) -> Result<i64, EvalError> {
    match d {
        Dim::Known(n) => i64::try_from(*n)
            .map_err(|_| EvalError::Binding(format!("dimension {n} of {tensor} is too large"))),
        Dim::Sym(s) => {
            let names = s.symbols();
            let flags: Vec<String> = names.iter().map(|n| format!("--dim {n}=N")).collect();
            Err(EvalError::Binding(format!(
                "dimension '{s}' of {tensor} is unknown; bind it with {}",
                flags.join(" ")
            )))
        }
    }
}

/// What `nnz(T)` is for a tensor of `n` elements: under `--prune` a
/// constant's count less the fraction pruned; else the nonzeros counted in
/// its values when c3 read them; else every element.
fn nonzeros_of(t: &TensorFact, n: i64, opts: CountOptions) -> i64 {
    let n_u = n.max(0) as u64;
    let z = match (t.constant, opts.prune, t.nonzeros) {
        (true, Some(p), _) => p.nonzeros_of(n_u),
        (true, None, Some(z)) => z.min(n_u),
        _ => n_u,
    };
    z as i64
}

pub(crate) fn tensor_counts(t: &TensorFact, name: &str) -> Result<(i64, i64), EvalError> {
    let mut n: i64 = 1;
    for d in t.shape.iter() {
        n = n.checked_mul(dim_value(d, name)?).ok_or_else(|| {
            EvalError::Binding(format!("{name}: element count overflows 64 bits"))
        })?;
    }
    let bits = n
        .checked_mul(t.dtype.bits() as i64)
        .ok_or_else(|| EvalError::Binding(format!("{name}: size in bits overflows 64 bits")))?;
    Ok((n, bits))
}

impl Formula {
    pub(super) fn eval(&self, env: &Env, what: What) -> Result<Value, EvalError> {
        let v = self.code.eval_with_context(env).map_err(|e| {
            let message = match e {
                _ if env.over_budget.get() => over_budget_message(),
                EvalexprError::CustomMessage(m) => m,
                EvalexprError::DivisionError { .. } => "division by zero".to_string(),
                EvalexprError::ModulationError { .. } => "remainder by zero".to_string(),
                EvalexprError::AdditionError { .. }
                | EvalexprError::SubtractionError { .. }
                | EvalexprError::MultiplicationError { .. }
                | EvalexprError::NegationError { .. } => "integer overflow".to_string(),
                other => other.to_string(),
            };
            let (origin, text) = self.culprit(env, &message);
            EvalError::Formula {
                origin,
                what: what.to_string(),
                text,
                message,
            }
        })?;
        // A string built with `+` inside evalexpr is checked here.
        if let Value::Tuple(_) | Value::String(_) = &v {
            lower::check_value(&v).map_err(|message| EvalError::Formula {
                origin: self.origin.clone(),
                what: what.to_string(),
                text: self.text.clone(),
                message,
            })?;
        }
        Ok(v)
    }

    /// For a division by zero, the divisor that is zero; otherwise the formula.
    fn culprit(&self, env: &Env, message: &str) -> (Origin, String) {
        if message.contains("by zero") {
            let mut found = None;
            self.ast.walk(&mut |e| {
                if found.is_some() {
                    return;
                }
                if let ExprKind::Binary(BinOp::Div | BinOp::Rem, _, d) = &e.kind
                    && self.sub_is_zero(d, env)
                {
                    found = Some(e.span);
                }
            });
            if let Some(span) = found {
                let (line, col) = self.position(span.start);
                let origin = Origin {
                    line,
                    col,
                    ..self.origin.clone()
                };
                return (origin, self.text[span.start..span.end].to_string());
            }
        }
        (self.origin.clone(), self.text.clone())
    }

    fn sub_is_zero(&self, d: &Expr, env: &Env) -> bool {
        // Re-lowering cannot fail: the whole formula lowered with these names.
        struct Any<'a>(&'a Env<'a>);
        impl Scope for Any<'_> {
            fn kind(&self, name: &str) -> Option<NameKind> {
                let probe = |v: String| self.0.vars.contains_key(v.as_str());
                if probe(lower::var_present(name)) {
                    Some(NameKind::Tensor { variadic: false })
                } else if probe(lower::var_count(name)) {
                    Some(NameKind::Tensor { variadic: true })
                } else if probe(lower::var_dim(name)) {
                    Some(NameKind::Dim)
                } else if probe(lower::var_attr(name)) {
                    Some(NameKind::Attr)
                } else if probe(lower::var_let(name)) {
                    Some(NameKind::Let {
                        counts_elements: false,
                    })
                } else if probe(lower::var_switch(name)) {
                    Some(NameKind::Switch)
                } else if probe(lower::var_timing(name)) {
                    Some(NameKind::Timing)
                } else {
                    None
                }
            }
        }
        let Ok(code) = lower::lower(d, &Any(env), Units::Elements) else {
            return false;
        };
        match evalexpr::build_operator_tree(&code).and_then(|c| c.eval_with_context(env)) {
            Ok(Value::Int(0)) => true,
            // A time formula's divisor may be a real number.
            Ok(Value::Float(f)) => f == 0.0,
            _ => false,
        }
    }

    /// Line and column in the rule file of byte `offset` of the formula text.
    fn position(&self, offset: usize) -> (usize, usize) {
        // Walk from the formula's start in the same way the loader located it.
        let before = &self.text[..offset.min(self.text.len())];
        match before.rfind('\n') {
            None => (self.origin.line, self.origin.col + before.chars().count()),
            Some(i) => (
                self.origin.line + before.matches('\n').count(),
                before[i + 1..].chars().count() + 1,
            ),
        }
    }

    pub(super) fn eval_count(&self, env: &Env, what: What, units: Units) -> Result<u64, EvalError> {
        let v = self.eval(env, what)?;
        let fail = |message: String| EvalError::Formula {
            origin: self.origin.clone(),
            what: what.to_string(),
            text: self.text.clone(),
            message,
        };
        let n = match v {
            Value::Int(n) => n,
            other => {
                return Err(fail(format!(
                    "a count must be an integer, this is {}",
                    lower::describe(&other)
                )));
            }
        };
        let n = u64::try_from(n).map_err(|_| fail(format!("a count cannot be negative ({n})")))?;
        Ok(match units {
            Units::Elements | Units::Seconds => n,
            Units::Bits => n.div_ceil(8),
        })
    }

    /// Byte offset of the formula in its file (for tools that point into it).
    pub fn start_byte(&self) -> usize {
        self.start_byte
    }
}

impl CostRule {
    /// Binds the rule's patterns to a node's tensors: every name when `all`,
    /// else only those the formulas read (checks run either way).
    fn bind<'r>(
        &'r self,
        node: &Node,
        opts: CountOptions,
        env: &mut Env<'r>,
        all: bool,
    ) -> Result<(), EvalError> {
        let mut bound: Vec<(&str, Value)> = Vec::new();
        let n_in = self.inputs.len();
        for (pats, tensors, side, base) in [
            (&self.inputs, &node.inputs, "input", 0),
            (&self.outputs, &node.outputs, "output", n_in),
        ] {
            let variadic = pats.last().is_some_and(|p| p.variadic);
            let fixed = if variadic { pats.len() - 1 } else { pats.len() };
            if !variadic && tensors.len() > pats.len() {
                // Trailing absent tensors are harmless; present extra ones are not.
                if tensors[pats.len()..].iter().any(Option::is_some) {
                    return Err(EvalError::Binding(format!(
                        "has {} {side}s, but the rule for {} takes at most {} ({})",
                        tensors.len(),
                        self.op,
                        pats.len(),
                        join_patterns(pats)
                    )));
                }
            }
            for (i, p) in pats.iter().enumerate().take(fixed) {
                let [
                    present,
                    elements,
                    bits_k,
                    width,
                    shape,
                    _,
                    nonzeros,
                    constant,
                ] = &self.keys.tensors[base + i];
                let read = self.keys.tensors_read[base + i].map(|r| r || all);
                let mut set = |k: usize, key: &'r Arc<str>, v: Value| {
                    if read[k] {
                        env.set(key, v);
                    }
                };
                match tensors.get(i).and_then(Option::as_ref) {
                    None if p.optional => {
                        set(0, present, Value::Boolean(false));
                        set(1, elements, Value::Int(0));
                        set(2, bits_k, Value::Int(0));
                        set(4, shape, Value::Empty);
                        set(3, width, Value::Int(0));
                        set(6, nonzeros, Value::Int(0));
                        set(7, constant, Value::Boolean(false));
                    }
                    None => {
                        return Err(EvalError::Binding(format!(
                            "{side} {} ({}) of {} is missing",
                            i + 1,
                            p.name,
                            self.op
                        )));
                    }
                    Some(t) => {
                        // Checks every dimension: known, and within i64.
                        let (n, bits) = tensor_counts(t, &p.name)?;
                        set(0, present, Value::Boolean(true));
                        set(1, elements, Value::Int(n));
                        set(2, bits_k, Value::Int(bits));
                        set(3, width, Value::Int(t.dtype.bits() as i64));
                        set(6, nonzeros, Value::Int(nonzeros_of(t, n, opts)));
                        set(7, constant, Value::Boolean(t.constant));
                        if p.dims.is_none() && !read[4] {
                            continue;
                        }
                        let dims = t
                            .shape
                            .iter()
                            .map(|d| dim_value(d, &p.name).map(Value::Int))
                            .collect::<Result<Vec<_>, _>>()?;
                        if let Some(pat) = &p.dims {
                            bind_dims(p, pat, &dims, side, &mut bound)?;
                        }
                        set(4, shape, Value::Tuple(dims));
                    }
                }
            }
            if variadic {
                let p = &pats[fixed];
                let [_, elements, bits_k, _, _, count_k, ..] = &self.keys.tensors[base + fixed];
                let read = self.keys.tensors_read[base + fixed].map(|r| r || all);
                let (mut count, mut n, mut bits) = (0i64, 0i64, 0i64);
                for t in tensors.iter().skip(fixed).flatten() {
                    let (tn, tb) = tensor_counts(t, &p.name)?;
                    count += 1;
                    let overflow =
                        || EvalError::Binding(format!("{}: total size overflows", p.name));
                    n = n.checked_add(tn).ok_or_else(overflow)?;
                    bits = bits.checked_add(tb).ok_or_else(overflow)?;
                }
                if count == 0 && !p.optional {
                    return Err(EvalError::Binding(format!(
                        "{} needs at least one {side} for {}...",
                        self.op, p.name
                    )));
                }
                for (k, key, v) in [(5, count_k, count), (1, elements, n), (2, bits_k, bits)] {
                    if read[k] {
                        env.set(key, Value::Int(v));
                    }
                }
            }
        }
        for ((name, key), read) in self.keys.dims.iter().zip(&self.keys.dims_read) {
            if (*read || all)
                && let Some(i) = bound.iter().position(|(n, _)| n == name)
            {
                env.set(key, bound.swap_remove(i).1);
            }
        }
        Ok(())
    }

    /// The inputs, by position, whose nonzero count a formula reads
    /// (`nnz(W)`): the only tensors whose values an estimate reads.
    pub fn nonzero_inputs(&self) -> Vec<usize> {
        (0..self.inputs.len())
            .filter(|&i| self.keys.tensors_read.get(i).is_some_and(|r| r[6]))
            .collect()
    }

    /// Applies the rule to one node.
    pub fn evaluate(&self, node: &Node, opts: CountOptions) -> Result<Evaluation, EvalError> {
        // The key is made in a list kept for the thread's next evaluation,
        // and copied only into the memo (a large graph's 118k evaluations
        // each allocated one).
        thread_local! {
            static KEY: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
        }
        let mut key = KEY.take();
        key.clear();
        let ev = match self.memo_key(node, opts, &mut key) {
            Some(()) => self.evaluate_keyed(node, opts, &key),
            None => self.evaluate_uncached(node, opts),
        };
        KEY.set(key);
        ev
    }

    /// [`CostRule::evaluate`] of a node whose memo key is `key`.
    fn evaluate_keyed(
        &self,
        node: &Node,
        opts: CountOptions,
        key: &[u64],
    ) -> Result<Evaluation, EvalError> {
        if let Some(ev) = self.memo.with(|m| m.get(key).cloned()) {
            // Tests check every remembered result against a fresh evaluation,
            // as Debug text: a NaN parameter (attribute `alpha: nan`) is not
            // == itself, but prints the same.
            debug_assert_eq!(
                format!("{:?}", Ok::<_, EvalError>(&ev)),
                format!("{:?}", self.evaluate_uncached(node, opts))
            );
            return Ok(ev);
        }
        let ev = self.evaluate_uncached(node, opts)?;
        self.memo.with(|m| {
            if m.len() < MEMO_LIMIT {
                m.insert(key.to_vec(), ev.clone());
            }
        });
        Ok(ev)
    }

    /// Everything an evaluation reads from a node and the options, as one
    /// key, written to `k`: the switches, each tensor slot's presence,
    /// element width and dimensions, and the value of each attribute the
    /// rule declares. `None` for a node with a symbolic dimension (that
    /// evaluation fails anyway). Whatever `bind` or `evaluate_with` starts
    /// reading must be added here.
    fn memo_key(&self, node: &Node, opts: CountOptions, k: &mut Vec<u64>) -> Option<()> {
        k.extend([
            opts.fma as u64 | (opts.timing as u64) << 1,
            opts.full_attention as u64,
            node.opset as u64,
            opts.prune.map_or(u64::MAX, |p| p.billionths),
        ]);
        for side in [&node.inputs, &node.outputs] {
            k.push(side.len() as u64);
            for t in side.iter() {
                let Some(t) = t else {
                    k.push(u64::MAX);
                    continue;
                };
                k.extend([
                    t.dtype.bits(),
                    t.shape.len() as u64,
                    t.constant as u64,
                    t.nonzeros.unwrap_or(u64::MAX),
                ]);
                for d in t.shape.iter() {
                    k.push(d.known()?);
                }
            }
        }
        for a in &self.attrs {
            match node.attrs.get(&a.name) {
                None => k.push(0),
                Some(v) => attr_key(v, k),
            }
        }
        Some(())
    }

    /// [`CostRule::evaluate`] without the memo.
    pub fn evaluate_uncached(
        &self,
        node: &Node,
        opts: CountOptions,
    ) -> Result<Evaluation, EvalError> {
        match self.evaluate_with(node, opts, false) {
            // Names no formula reads were left unbound; bind them all to find
            // the culprit of a formula error.
            Err(EvalError::Formula { .. }) => self.evaluate_with(node, opts, true),
            r => r,
        }
    }

    /// Applies the rule and also reports every name it bound (`c3 explain`).
    pub fn explain(&self, node: &Node, opts: CountOptions) -> Result<Evaluation, EvalError> {
        self.evaluate_with(node, opts, true)
    }

    /// The environment every formula of the rule is evaluated in: the
    /// switches, the patterns' bindings, the attributes and the `let`s.
    pub(super) fn env_for(
        &self,
        node: &Node,
        opts: CountOptions,
        keep_bindings: bool,
    ) -> Result<Env<'_>, EvalError> {
        let mut env = Env::new();
        let switches = [
            Value::Boolean(opts.fma),
            Value::Int(node.opset),
            Value::Boolean(true),
            Value::Boolean(false),
            Value::Boolean(opts.full_attention),
        ];
        for ((key, v), read) in self
            .keys
            .switches
            .iter()
            .zip(switches)
            .zip(&self.keys.switches_read)
        {
            if *read || keep_bindings {
                env.set(key, v);
            }
        }
        self.bind(node, opts, &mut env, keep_bindings)?;

        for (a, key) in self.attrs.iter().zip(&self.keys.attrs) {
            let v = match (node.attrs.get(&a.name), &a.default) {
                (Some(v), Some(d)) => {
                    // The default says what the rule takes: an attribute of
                    // another kind is an error, not a value costed as absent.
                    if let Ok(dv) = d.eval(&env, What::AttrDefault(&a.name))
                        && let Some(want) = kind_mismatch(v, &dv)
                    {
                        return Err(EvalError::Binding(format!(
                            "attribute '{}' is {}, but the rule for {} takes {want}",
                            a.name,
                            v.kind_name(),
                            self.op
                        )));
                    }
                    attr_value(v)
                }
                (Some(v), None) => attr_value(v),
                (None, Some(d)) => d.eval(&env, What::AttrDefault(&a.name))?,
                (None, None) => Value::Empty,
            };
            env.set(key, v);
        }
        for ((name, f), key) in self.lets.iter().zip(&self.keys.lets) {
            let v = f.eval(&env, What::Let(name))?;
            env.set(key, v);
        }
        Ok(env)
    }

    fn evaluate_with(
        &self,
        node: &Node,
        opts: CountOptions,
        keep_bindings: bool,
    ) -> Result<Evaluation, EvalError> {
        let mut env = self.env_for(node, opts, keep_bindings)?;
        let flops = self
            .flops
            .eval_count(&env, What::Named("flops"), Units::Elements)?;
        let mread = self
            .mread
            .eval_count(&env, What::Named("mread"), Units::Bits)?;
        let mwrite = self
            .mwrite
            .eval_count(&env, What::Named("mwrite"), Units::Bits)?;
        let iops = match &self.iops {
            Some(f) => f.eval_count(&env, What::Named("iops"), Units::Elements)?,
            None => 0,
        };
        let params = self
            .params
            .iter()
            .map(|(n, f)| Ok((n.clone(), f.eval(&env, What::Param(n))?)))
            .collect::<Result<Params, EvalError>>()?;
        let bindings = if keep_bindings {
            self.collect_bindings(&env)
        } else {
            Vec::new()
        };
        let (work, class, calls, time) = if opts.timing {
            let class = self.class_of(&env)?;
            let calls = match &self.calls {
                Some(f) => f.eval_count(&env, What::Named("calls"), Units::Elements)?,
                None => 1,
            };
            // Kept before `work` rebinds `fma` and the `let`s.
            let time = self.time_inputs(&env);
            (self.work(&mut env, opts, flops)?, class, calls, time)
        } else {
            (flops, None, 1, None)
        };
        Ok(Evaluation {
            flops,
            work,
            class,
            calls,
            time,
            mread,
            mwrite,
            iops,
            params,
            bindings,
        })
    }

    /// The layer's FLOPs with a multiply-add counted as two: `flops` again
    /// with `fma` off (its `let`s first), when `fma` is on and read.
    fn work<'r>(
        &'r self,
        env: &mut Env<'r>,
        opts: CountOptions,
        flops: u64,
    ) -> Result<u64, EvalError> {
        if !opts.fma || !self.keys.switches_read.first().copied().unwrap_or(false) {
            return Ok(flops);
        }
        env.set(&self.keys.switches[0], Value::Boolean(false));
        for ((name, f), key) in self.lets.iter().zip(&self.keys.lets) {
            let v = f.eval(env, What::Let(name))?;
            env.set(key, v);
        }
        self.flops
            .eval_count(env, What::Named("flops"), Units::Elements)
    }

    /// The `class:` formula's string, if the rule has one.
    fn class_of(&self, env: &Env<'_>) -> Result<Option<Arc<str>>, EvalError> {
        let Some(f) = &self.class else {
            return Ok(None);
        };
        match f.eval(env, What::Named("class"))? {
            Value::String(s) => Ok(Some(Arc::from(s.as_str()))),
            other => Err(EvalError::Formula {
                origin: f.origin.clone(),
                what: "class".into(),
                text: f.text.clone(),
                message: format!(
                    "a class must be a string, this is {}",
                    lower::describe(&other)
                ),
            }),
        }
    }

    fn collect_bindings(&self, env: &Env) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        let get = |v: String| env.vars.get(v.as_str()).cloned().unwrap_or(Value::Empty);
        let mut dims_seen: Vec<&str> = Vec::new();
        for p in self.inputs.iter().chain(self.outputs.iter()) {
            if p.variadic {
                out.push((format!("count({})", p.name), get(lower::var_count(&p.name))));
                out.push((format!("|{}|", p.name), get(lower::var_elements(&p.name))));
                continue;
            }
            out.push((format!("|{}|", p.name), get(lower::var_elements(&p.name))));
            for d in p.dims.iter().flatten() {
                if let DimPat::Name(n) | DimPat::Rest(n) = d
                    && !dims_seen.contains(&n.as_str())
                {
                    dims_seen.push(n);
                    out.push((n.clone(), get(lower::var_dim(n))));
                }
            }
        }
        for a in &self.attrs {
            out.push((a.name.clone(), get(lower::var_attr(&a.name))));
        }
        for (n, _) in &self.lets {
            out.push((n.clone(), get(lower::var_let(n))));
        }
        out
    }
}
