//! Compiling a rule: a YAML rule definition checked and each of its
//! formulas compiled once to evalexpr, giving a [`CostRule`]. Evaluating it
//! on a node is [`super::eval`].

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use evalexpr::Node as Code;
use rustc_hash::{FxHashMap, FxHashSet};

use super::ast::{DimPat, Expr, ExprKind, TensorPat};
use super::eval::*;
use super::lower::{self, NameKind, Scope, Units};
use super::parse::{parse_formula, parse_patterns};
use super::yaml::{Place, RuleDef, Text, Tree};
use crate::error::RuleError;
use crate::ir::qualified;

/// Where a rule (or one of its formulas) was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `rules/nn.yaml` for built-in rules, the file's path for packs.
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub builtin: bool,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// One formula: its text, its tree, and the evalexpr code lowered from it.
#[derive(Debug, Clone)]
pub struct Formula {
    pub text: String,
    pub ast: Expr,
    pub code: Code,
    pub origin: Origin,
    /// The source text the formula came from and its start, to point into it.
    pub(crate) start_byte: usize,
}

#[derive(Debug, Clone)]
pub struct AttrDecl {
    pub name: String,
    pub default: Option<Formula>,
}

/// The evalexpr variable names a rule binds, made once at load time so an
/// evaluation allocates no names.
#[derive(Debug, Clone, Default)]
pub(crate) struct Keys {
    /// Per pattern, inputs then outputs: present, elements, bits, width,
    /// shape, count, nonzeros, constant.
    pub(crate) tensors: Vec<[Arc<str>; 8]>,
    /// Dimension and list names with their keys.
    pub(crate) dims: Vec<(String, Arc<str>)>,
    pub(crate) attrs: Vec<Arc<str>>,
    pub(crate) lets: Vec<Arc<str>>,
    /// Keys of [`lower::SWITCHES`], in its order.
    pub(crate) switches: Vec<Arc<str>>,
    /// Whether some formula of the rule reads each key above (tensors, dims,
    /// switches): an evaluation binds only those, unless it reports them all.
    pub(crate) tensors_read: Vec<[bool; 8]>,
    pub(crate) dims_read: Vec<bool>,
    pub(crate) switches_read: Vec<bool>,
    /// The rule's keys its `time:` formula reads: their values are kept
    /// from the evaluation for the layer's timing.
    pub(crate) time_reads: Vec<Arc<str>>,
}

impl Keys {
    fn new(
        inputs: &[TensorPat],
        outputs: &[TensorPat],
        attrs: &[AttrDecl],
        lets: &[(String, Formula)],
    ) -> Keys {
        let arc = |s: String| -> Arc<str> { Arc::from(s) };
        let mut dims: Vec<(String, Arc<str>)> = Vec::new();
        for p in inputs.iter().chain(outputs) {
            for d in p.dims.iter().flatten() {
                if let DimPat::Name(n) | DimPat::Rest(n) = d
                    && !dims.iter().any(|(x, _)| x == n)
                {
                    dims.push((n.clone(), arc(lower::var_dim(n))));
                }
            }
        }
        Keys {
            tensors: inputs
                .iter()
                .chain(outputs)
                .map(|p| {
                    [
                        arc(lower::var_present(&p.name)),
                        arc(lower::var_elements(&p.name)),
                        arc(lower::var_bits(&p.name)),
                        arc(lower::var_width(&p.name)),
                        arc(lower::var_shape(&p.name)),
                        arc(lower::var_count(&p.name)),
                        arc(lower::var_nonzeros(&p.name)),
                        arc(lower::var_constant(&p.name)),
                    ]
                })
                .collect(),
            dims,
            attrs: attrs
                .iter()
                .map(|a| arc(lower::var_attr(&a.name)))
                .collect(),
            lets: lets.iter().map(|(n, _)| arc(lower::var_let(n))).collect(),
            switches: lower::SWITCHES
                .iter()
                .map(|n| arc(lower::var_switch(n)))
                .collect(),
            tensors_read: Vec::new(),
            dims_read: Vec::new(),
            switches_read: Vec::new(),
            time_reads: Vec::new(),
        }
    }

    /// Records which keys the compiled formulas read.
    fn mark_read<'f>(&mut self, formulas: impl Iterator<Item = &'f Formula>) {
        let mut read: FxHashSet<&str> = FxHashSet::default();
        for f in formulas {
            read.extend(f.code.iter_variable_identifiers());
        }
        let is_read = |k: &Arc<str>| read.contains(&**k);
        self.tensors_read = self
            .tensors
            .iter()
            .map(|t| t.each_ref().map(is_read))
            .collect();
        self.dims_read = self.dims.iter().map(|(_, k)| is_read(k)).collect();
        self.switches_read = self.switches.iter().map(is_read).collect();
    }
}

/// What a formula computes, for error messages (built only on error).
#[derive(Clone, Copy)]
pub(crate) enum What<'a> {
    Named(&'static str),
    AttrDefault(&'a str),
    Let(&'a str),
    Param(&'a str),
    Backward(&'a str),
}

impl fmt::Display for What<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Named(s) => f.write_str(s),
            What::AttrDefault(n) => write!(f, "the default of attribute {n}"),
            What::Let(n) => write!(f, "let {n}"),
            What::Param(n) => write!(f, "param {n}"),
            What::Backward(s) => f.write_str(s),
        }
    }
}

/// A cost rule, compiled once (a built-in one when first looked up).
#[derive(Debug, Clone)]
pub struct CostRule {
    pub op: String,
    /// `""` for the default ONNX domain.
    pub domain: String,
    pub category: String,
    pub summary: String,
    pub doc: String,
    pub origin: Origin,
    pub inputs: Vec<TensorPat>,
    pub outputs: Vec<TensorPat>,
    pub inputs_text: String,
    pub outputs_text: String,
    pub attrs: Vec<AttrDecl>,
    pub lets: Vec<(String, Formula)>,
    pub flops: Formula,
    pub mread: Formula,
    pub mwrite: Formula,
    /// Integer operations, when the rule has an `iops:` formula.
    pub iops: Option<Formula>,
    /// The layer's kernel class (a string), when the rule has a `class:`
    /// formula: a calibrated device times each class apart.
    pub class: Option<Formula>,
    /// The kernel calls a layer makes, when the rule has a `calls:` formula
    /// (1 otherwise).
    pub calls: Option<Formula>,
    /// The seconds one run of a layer takes on a device, when the rule has
    /// a `time:` formula: it overrides the device's time model for the
    /// layer ([`super::time_formula`]). Shared with the layers it times.
    pub time: Option<Arc<Formula>>,
    pub params: Vec<(String, Formula)>,
    /// Set when c3 lists this op's layers as unsupported, with the reason,
    /// instead of counting them.
    pub unsupported: Option<String>,
    /// The backward pass's formulas, when the rule has a `backward:`
    /// section (otherwise its category's default applies: see
    /// [`crate::cost::training`]).
    pub backward: Option<Backward>,
    /// For a pack's rule over one already in force: that rule, and the
    /// fields the pack gives (the others are taken from it).
    pub overrides: Option<super::partial::Overrides>,
    pub(crate) keys: Keys,
    pub(crate) memo: Memo,
}

/// A rule's `backward:` section, compiled.
#[derive(Debug, Clone, Default)]
pub struct Backward {
    /// By input position: the name of the input and its gradient's FLOPs,
    /// bytes read and bytes written.
    pub grads: Vec<(usize, String, [Formula; 3])>,
    /// The tensors the backward reads, as positions in the rule's inputs
    /// then outputs (a variadic pattern stands for all its tensors).
    pub saves: Vec<usize>,
    /// `saves:` as written (pattern names), for the documentation.
    pub saves_text: Option<String>,
}

/// Results of [`CostRule::evaluate`] by everything an evaluation reads from
/// its node (see [`CostRule::memo_key`]): a model's repeated blocks have the
/// same few nodes many times over. Failed evaluations are not kept.
#[derive(Default)]
pub(crate) struct Memo(std::sync::Mutex<MemoTable>);

pub(crate) type MemoTable = rustc_hash::FxHashMap<Vec<u64>, Evaluation>;

/// Distinct nodes kept per rule; past that, evaluations are not remembered.
pub(crate) const MEMO_LIMIT: usize = 4096;

impl Memo {
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut MemoTable) -> R) -> R {
        // A poisoned lock only means another thread panicked mid-insert.
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.with(|m| m.len())
    }
}

impl Clone for Memo {
    fn clone(&self) -> Self {
        Memo::default()
    }
}

impl fmt::Debug for Memo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Memo")
    }
}

/// The lines of `text`, each with its line break, as
/// `str::split_inclusive('\n')` gives them, found with memchr: a compiled
/// rule's source (a pack's file, a built-in rule's block) is indexed by
/// them.
pub(crate) fn lines_inclusive(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut breaks = memchr::memchr_iter(b'\n', text.as_bytes());
    std::iter::from_fn(move || match breaks.next() {
        Some(end) => {
            let line = &text[start..=end];
            start = end + 1;
            Some(line)
        }
        None if start < text.len() => {
            let line = &text[start..];
            start = text.len();
            Some(line)
        }
        None => None,
    })
}

/// The source a rule file was read from, to turn offsets into line:col.
/// Cloning shares the indexes.
#[derive(Clone)]
pub struct SourceFile<'a> {
    pub path: &'a str,
    pub text: &'a str,
    pub builtin: bool,
    /// Where the text serde parsed starts in `text`: 0 for a whole file, the
    /// block's start for a built-in rule parsed alone.
    pub base: usize,
    /// Byte offset of every line's start in `indexed`, to turn offsets
    /// into line:col.
    lines: Arc<[usize]>,
    /// The bytes `lines` covers: the whole file, or one built-in rule's block.
    indexed: Range<usize>,
    /// The 0-based number of the line `indexed` starts on.
    first_line: usize,
    /// Byte offset of every top-level key (`Conv:`) in `indexed`, to name a
    /// rule's line.
    keys: Arc<FxHashMap<&'a str, usize>>,
}

impl<'a> SourceFile<'a> {
    /// Indexes the file's lines and top-level keys once.
    pub fn new(path: &'a str, text: &'a str, builtin: bool) -> Self {
        let mut lines = vec![0];
        let mut keys = FxHashMap::default();
        let mut offset = 0;
        for line in lines_inclusive(text) {
            // Only lines at column 0 can be keys: look for the colon there alone.
            if !line.starts_with([' ', '\t', '#', '-', '\n'])
                && let Some((key, _)) = line.split_once(':')
                && !key.is_empty()
            {
                let key = key.trim().trim_matches(['"', '\'']);
                keys.entry(key).or_insert(offset);
            }
            offset += line.len();
            lines.push(offset);
        }
        Self {
            path,
            text,
            builtin,
            base: 0,
            lines: lines.into(),
            indexed: 0..text.len(),
            first_line: 0,
            keys: Arc::new(keys),
        }
    }

    /// One rule's block of a built-in file, indexed alone: `block` is where
    /// its text lies, from its key `op` on line `line` (1-based). Compiling a
    /// built-in rule reads nothing of the file outside its block.
    pub(crate) fn block(
        path: &'a str,
        text: &'a str,
        block: Range<usize>,
        line: usize,
        op: &'a str,
    ) -> Self {
        let mut lines = vec![block.start];
        let mut offset = block.start;
        for l in lines_inclusive(&text[block.clone()]) {
            offset += l.len();
            lines.push(offset);
        }
        Self {
            path,
            text,
            builtin: true,
            base: block.start,
            lines: lines.into(),
            first_line: line.saturating_sub(1),
            keys: Arc::new(FxHashMap::from_iter([(op, block.start)])),
            indexed: block,
        }
    }

    /// Byte offset of the line that opens the top-level key `key` (0 if none).
    pub fn key_offset(&self, key: &str) -> usize {
        self.keys.get(key).copied().unwrap_or(0)
    }
}

impl SourceFile<'_> {
    /// Line and column (1-based, in characters) of a byte offset.
    pub fn line_col(&self, byte: usize) -> (usize, usize) {
        let byte = byte.min(self.text.len());
        let (line, start) = if self.indexed.start <= byte && byte <= self.indexed.end {
            let idx = self
                .lines
                .partition_point(|&start| start <= byte)
                .saturating_sub(1);
            (self.first_line + idx, self.lines[idx].min(byte))
        } else {
            // Outside a block's index (no rule's own text is): counted.
            let before = &self.text.as_bytes()[..byte];
            (
                memchr::memchr_iter(b'\n', before).count(),
                memchr::memrchr(b'\n', before).map_or(0, |i| i + 1),
            )
        };
        (line + 1, self.text[start..byte].chars().count() + 1)
    }

    /// Byte offset of a value's first character from serde-saphyr's location.
    pub fn start_of(&self, t: &Text) -> usize {
        match t.at {
            Place::Byte(b) => (self.base + b).min(self.text.len()),
            Place::LineCol(line, col) => self.byte_of(line, col),
        }
    }

    /// Byte offset of a line and column of the parsed text (from `base`).
    pub fn byte_of(&self, line: usize, col: usize) -> usize {
        let mut offset = self.base;
        for (i, l) in self.text[self.base..].split_inclusive('\n').enumerate() {
            if i + 1 == line {
                return offset
                    + l.char_indices()
                        .nth(col.saturating_sub(1))
                        .map_or(l.len(), |(b, _)| b);
            }
            offset += l.len();
        }
        self.text.len()
    }

    /// Where byte `offset` of a scalar's text sits in the file. The scalar may
    /// be quoted or a block; its lines are found in the file from its start.
    pub fn locate(&self, start: usize, scalar: &str, offset: usize) -> usize {
        let offset = offset.min(scalar.len());
        let line_start = scalar[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line_text = scalar[line_start..].split('\n').next().unwrap_or("");
        if !line_text.is_empty()
            && let Some(pos) = self.text.get(start..).and_then(|rest| rest.find(line_text))
        {
            return start + pos + (offset - line_start);
        }
        start
    }

    pub fn error_at(
        &self,
        byte: usize,
        message: impl Into<String>,
        text: Option<&str>,
    ) -> RuleError {
        let (line, col) = self.line_col(byte);
        RuleError {
            path: self.path.to_string(),
            line,
            col,
            message: message.into(),
            text: text.map(str::to_string),
        }
    }
}

/// What each name of a rule stands for, as the rule is compiled.
#[derive(Default)]
pub(crate) struct RuleScope {
    names: FxHashMap<String, NameKind>,
}

impl Scope for RuleScope {
    fn kind(&self, name: &str) -> Option<NameKind> {
        self.names.get(name).copied()
    }

    fn names(&self) -> Vec<&str> {
        self.names.keys().map(String::as_str).collect()
    }
}

impl RuleScope {
    fn with_switches() -> Self {
        let mut s = Self::default();
        for n in lower::SWITCHES {
            s.names.insert((*n).to_string(), NameKind::Switch);
        }
        s
    }
}

/// Whether `e` mentions `|X|` directly or through a `let` that does.
pub(crate) fn counts_elements(e: &Expr, scope: &RuleScope) -> bool {
    let mut found = false;
    e.walk(&mut |n| match &n.kind {
        ExprKind::Size(_) => found = true,
        ExprKind::Name(name) => {
            if let Some(NameKind::Let {
                counts_elements: true,
            }) = scope.kind(name)
            {
                found = true;
            }
        }
        _ => {}
    });
    found
}

pub(crate) fn compile_formula(
    src: &SourceFile,
    t: &Text,
    scope: &RuleScope,
    units: Units,
) -> Result<Formula, RuleError> {
    let text = t.value.0.clone();
    let start = src.start_of(t);
    let ast = match &t.tree {
        Some(Tree::Formula(ast)) => ast.clone(),
        _ => parse_formula(&text).map_err(|e| {
            src.error_at(
                src.locate(start, &text, e.offset),
                format!("syntax error: {}", e.message),
                Some(&text),
            )
        })?,
    };
    let code_text = lower::lower(&ast, scope, units).map_err(|e| {
        src.error_at(
            src.locate(start, &text, e.span.start),
            e.message,
            Some(&text[e.span.start..e.span.end]),
        )
    })?;
    let code = evalexpr::build_operator_tree(&code_text).map_err(|e| {
        src.error_at(
            start,
            format!("internal: lowered formula does not build: {e}"),
            Some(&text),
        )
    })?;
    // Positions are of the formula text itself, not of an opening quote.
    let start = src.locate(start, &text, 0);
    let (line, col) = src.line_col(start);
    Ok(Formula {
        text,
        ast,
        code,
        origin: Origin {
            file: src.path.to_string(),
            line,
            col,
            builtin: src.builtin,
        },
        start_byte: start,
    })
}

/// `let` names one rule may define (the built-in rules use at most 19):
/// each is compiled once and evaluated for every layer the rule counts.
pub const MAX_RULE_LETS: usize = 256;

impl CostRule {
    /// Compiles one rule of a rule file: parses its patterns and formulas,
    /// resolves every name, and lowers each formula to evalexpr.
    pub fn compile(op: &str, def: &RuleDef, src: &SourceFile) -> Result<CostRule, RuleError> {
        if let Some((name, t)) = def.lets.0.get(MAX_RULE_LETS) {
            return Err(src.error_at(
                src.start_of(t),
                format!(
                    "rule {op}: {} let names, which exceeds the limit of {MAX_RULE_LETS} per rule (MAX_RULE_LETS)",
                    def.lets.0.len()
                ),
                Some(name),
            ));
        }
        let mut scope = RuleScope::with_switches();
        let op_byte = src.key_offset(op);
        let (line, col) = src.line_col(op_byte);
        let origin = Origin {
            file: src.path.to_string(),
            line,
            col,
            builtin: src.builtin,
        };

        let mut pattern_lists = Vec::new();
        for t in [&def.inputs, &def.outputs] {
            let text = &t.value.0;
            let start = src.start_of(t);
            let pats = match &t.tree {
                Some(Tree::Patterns(pats)) => pats.clone(),
                _ => parse_patterns(text).map_err(|e| {
                    src.error_at(
                        src.locate(start, text, e.offset),
                        format!("pattern syntax error: {}", e.message),
                        Some(text),
                    )
                })?,
            };
            for (i, p) in pats.iter().enumerate() {
                let at = |msg: String| {
                    src.error_at(
                        src.locate(start, text, p.span.start),
                        msg,
                        Some(&text[p.span.start..p.span.end]),
                    )
                };
                if p.variadic && i + 1 != pats.len() {
                    return Err(at(format!(
                        "variadic pattern '{}...' must come last",
                        p.name
                    )));
                }
                if scope.names.contains_key(&p.name) {
                    return Err(at(format!("name '{}' is bound twice", p.name)));
                }
                scope.names.insert(
                    p.name.clone(),
                    NameKind::Tensor {
                        variadic: p.variadic,
                    },
                );
                let Some(dims) = &p.dims else { continue };
                if dims.iter().filter(|d| matches!(d, DimPat::Rest(_))).count() > 1 {
                    return Err(at(format!(
                        "pattern '{}' has more than one *list: it cannot bind",
                        p.name
                    )));
                }
                for d in dims {
                    let (name, kind) = match d {
                        DimPat::Fixed(_) => continue,
                        DimPat::Name(n) => (n, NameKind::Dim),
                        DimPat::Rest(n) => (n, NameKind::List),
                    };
                    match scope.kind(name) {
                        None => {
                            scope.names.insert(name.clone(), kind);
                        }
                        Some(k) if k == kind => {} // a repeated name must match
                        Some(_) => {
                            return Err(at(format!(
                                "'{name}' is bound as two different things; it cannot bind"
                            )));
                        }
                    }
                }
            }
            pattern_lists.push(pats);
        }
        let outputs = pattern_lists.pop().unwrap_or_default();
        let inputs = pattern_lists.pop().unwrap_or_default();

        let declare = |scope: &mut RuleScope, name: &str, kind: NameKind, t: Option<&Text>| {
            if scope.names.contains_key(name) {
                let byte = t.map_or(op_byte, |t| src.start_of(t));
                return Err(src.error_at(
                    byte,
                    format!("name '{name}' is already bound"),
                    Some(name),
                ));
            }
            scope.names.insert(name.to_string(), kind);
            Ok(())
        };

        // Attribute defaults may use pattern names only, so declare attributes after.
        let mut attrs = Vec::new();
        for (name, default) in &def.attrs.0 {
            let default = default
                .as_ref()
                .map(|t| compile_formula(src, t, &scope, Units::Elements))
                .transpose()?;
            attrs.push(AttrDecl {
                name: name.clone(),
                default,
            });
        }
        for (name, default) in &def.attrs.0 {
            declare(&mut scope, name, NameKind::Attr, default.as_ref())?;
        }

        let mut lets = Vec::new();
        for (name, t) in &def.lets.0 {
            let f = compile_formula(src, t, &scope, Units::Elements)?;
            let counts_elements = counts_elements(&f.ast, &scope);
            declare(&mut scope, name, NameKind::Let { counts_elements }, Some(t))?;
            lets.push((name.clone(), f));
        }

        let flops = compile_formula(src, &def.flops, &scope, Units::Elements)?;
        let mread = compile_formula(src, &def.mread, &scope, Units::Bits)?;
        let mwrite = compile_formula(src, &def.mwrite, &scope, Units::Bits)?;
        let iops = def
            .iops
            .as_ref()
            .map(|t| compile_formula(src, t, &scope, Units::Elements))
            .transpose()?;
        let class = def
            .class
            .as_ref()
            .map(|t| compile_formula(src, t, &scope, Units::Elements))
            .transpose()?;
        let calls = def
            .calls
            .as_ref()
            .map(|t| compile_formula(src, t, &scope, Units::Elements))
            .transpose()?;
        let params = def
            .params
            .0
            .iter()
            .map(|(n, t)| Ok((n.clone(), compile_formula(src, t, &scope, Units::Elements)?)))
            .collect::<Result<Vec<_>, RuleError>>()?;
        let time = def
            .time
            .as_ref()
            .map(|t| compile_time(op, src, t, &scope).map(Arc::new))
            .transpose()?;

        let backward = def
            .backward
            .as_ref()
            .map(|b| compile_backward(op, b, src, &scope, &inputs, &outputs))
            .transpose()?;
        let domain = crate::ir::domain_key(def.domain.as_deref().unwrap_or("")).to_string();
        let mut keys = Keys::new(&inputs, &outputs, &attrs, &lets);
        keys.mark_read(
            attrs
                .iter()
                .filter_map(|a| a.default.as_ref())
                .chain(lets.iter().map(|(_, f)| f))
                .chain([&flops, &mread, &mwrite])
                .chain(iops.as_ref())
                .chain(class.as_ref())
                .chain(calls.as_ref())
                .chain(time.as_deref())
                .chain(params.iter().map(|(_, f)| f))
                .chain(
                    backward
                        .iter()
                        .flat_map(|b| b.grads.iter().flat_map(|(_, _, fs)| fs.iter())),
                ),
        );
        keys.time_reads = time
            .as_deref()
            .map_or_else(Vec::new, super::time_formula::rule_keys);
        Ok(CostRule {
            op: op.to_string(),
            domain,
            category: def.category.clone(),
            summary: def.summary.trim().to_string(),
            doc: def.doc.trim_end().to_string(),
            origin,
            inputs_text: join_patterns(&inputs),
            outputs_text: join_patterns(&outputs),
            inputs,
            outputs,
            attrs,
            lets,
            keys,
            memo: Memo::default(),
            flops,
            mread,
            mwrite,
            iops,
            class,
            calls,
            time,
            params,
            unsupported: def.unsupported.as_ref().map(|s| s.trim().to_string()),
            backward,
            overrides: None,
        })
    }

    /// The rule's cost formulas in the order they are shown: `flops`,
    /// `iops` when the rule has one, `mread`, `mwrite`. `c3 explain` and
    /// DETAILS.md both list them from here.
    pub fn formulas(&self) -> Vec<(&'static str, &Formula)> {
        let mut v = vec![("flops", &self.flops)];
        if let Some(i) = &self.iops {
            v.push(("iops", i));
        }
        v.extend([("mread", &self.mread), ("mwrite", &self.mwrite)]);
        v
    }

    /// `Conv` or `com.microsoft::Attention`.
    pub fn qualified_name(&self) -> String {
        qualified(&self.domain, &self.op)
    }
}

/// Compiles a rule's `time:` formula in the scope of its other formulas
/// and the figures of [`super::time_formula::TIME_NAMES`]; a rule that
/// binds one of those names itself is refused (which would the formula
/// mean?).
fn compile_time(
    op: &str,
    src: &SourceFile,
    t: &Text,
    scope: &RuleScope,
) -> Result<Formula, RuleError> {
    let mut time_scope = RuleScope {
        names: scope.names.clone(),
    };
    for (name, _) in super::time_formula::TIME_NAMES {
        if time_scope
            .names
            .insert((*name).to_string(), NameKind::Timing)
            .is_some()
        {
            // At the formula's text, not its opening quote.
            let start = src.start_of(t);
            return Err(src.error_at(
                src.locate(start, &t.value.0, 0),
                format!(
                    "rule {op}: '{name}' is a name of the rule, and a time: formula reads the layer's {name} under it; \
                     a rule with a time: formula cannot bind it"
                ),
                Some(name),
            ));
        }
    }
    compile_formula(src, t, &time_scope, Units::Seconds)
}

/// Compiles a rule's `backward:` section in the scope of its forward
/// formulas (every pattern, attribute and `let` name).
fn compile_backward(
    op: &str,
    def: &super::yaml::BackwardDef,
    src: &SourceFile,
    scope: &RuleScope,
    inputs: &[TensorPat],
    outputs: &[TensorPat],
) -> Result<Backward, RuleError> {
    let mut grads = Vec::with_capacity(def.grads.len());
    for (name, g) in &def.grads {
        let Some(i) = inputs.iter().position(|p| p.name == *name) else {
            let known: Vec<&str> = inputs.iter().map(|p| p.name.as_str()).collect();
            return Err(src.error_at(
                src.start_of(&g.flops),
                format!(
                    "rule {op}: backward: '{name}' is no input of the rule (its inputs: {})",
                    known.join(", ")
                ),
                Some(name),
            ));
        };
        if inputs[i].variadic {
            return Err(src.error_at(
                src.start_of(&g.flops),
                format!(
                    "rule {op}: backward: '{name}' is variadic; a gradient is given for one input"
                ),
                Some(name),
            ));
        }
        let flops = compile_formula(src, &g.flops, scope, Units::Elements)?;
        let mread = compile_formula(src, &g.mread, scope, Units::Bits)?;
        let mwrite = compile_formula(src, &g.mwrite, scope, Units::Bits)?;
        grads.push((i, name.clone(), [flops, mread, mwrite]));
    }
    grads.sort_by_key(|(i, _, _)| *i);
    let mut saves = Vec::new();
    if let Some(t) = &def.saves {
        for name in t.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let Some(slot) = inputs.iter().chain(outputs).position(|p| p.name == name) else {
                return Err(src.error_at(
                    src.key_offset(op),
                    format!("rule {op}: backward saves '{name}', which is no input or output of the rule"),
                    Some(name),
                ));
            };
            if !saves.contains(&slot) {
                saves.push(slot);
            }
        }
    }
    Ok(Backward {
        grads,
        saves,
        saves_text: def.saves.as_ref().map(|t| t.trim().to_string()),
    })
}

pub(crate) fn join_patterns(p: &[TensorPat]) -> String {
    p.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    /// Same lines as `split_inclusive('\n')`: the line index and the rule
    /// blocks are built from them.
    #[test]
    fn lines_inclusive_splits_as_split_inclusive() {
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "\n\nx:\n  y: 1\n\n",
            "é:\n  ü\r\nz",
        ] {
            let ours: Vec<&str> = super::lines_inclusive(text).collect();
            let std: Vec<&str> = text.split_inclusive('\n').collect();
            assert_eq!(ours, std, "{text:?}");
        }
    }
}
