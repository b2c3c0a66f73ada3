//! What the integration tests share: a one-layer node evaluated by the
//! built-in rules or a pack (here), the `c3` runner ([`cli`]) and ONNX models
//! ([`onnx`]).
#![allow(dead_code)]

use std::sync::OnceLock;

use c3::ir::{AttrValue, DEFAULT_OPSET, DType, Dim, Node, TensorFact};
use c3::rules::rule::show_value;
use c3::rules::{CountOptions, Evaluation, RuleSet};

pub mod cli;
pub mod onnx;
pub mod schema;

/// Bytes per float32 element: the original tool counted elements, c3 bytes.
pub const F32: u64 = 4;

pub fn builtin() -> &'static RuleSet {
    static SET: OnceLock<RuleSet> = OnceLock::new();
    SET.get_or_init(|| RuleSet::builtin().expect("built-in rules load"))
}

/// The built-in rules with the `chainer` compatibility pack over them.
pub fn chainer() -> &'static RuleSet {
    static SET: OnceLock<RuleSet> = OnceLock::new();
    SET.get_or_init(|| {
        let mut s = RuleSet::builtin().expect("built-in rules load");
        s.load_pack("chainer").expect("chainer pack loads");
        s
    })
}

pub struct Layer {
    pub node: Node,
}

/// A layer of operator `op` with no tensors yet (opset: the newest).
pub fn layer(op: &str) -> Layer {
    Layer {
        node: Node {
            name: op.to_string(),
            op: op.to_string(),
            domain: String::new(),
            opset: DEFAULT_OPSET,
            attrs: Default::default(),
            inputs: Default::default(),
            outputs: Default::default(),
            bodies: Vec::new(),
        },
    }
}

/// `list` with `t` after its tensors.
fn push(list: &c3::ir::Tensors, t: Option<TensorFact>) -> c3::ir::Tensors {
    list.iter().cloned().chain([t]).collect()
}

fn fact(dims: &[u64], dtype: DType) -> TensorFact {
    TensorFact::new(dtype, dims.iter().map(|&d| Dim::Known(d)).collect())
}

impl Layer {
    /// A float32 input.
    pub fn input(self, dims: &[u64]) -> Self {
        self.input_typed(dims, DType::Float32)
    }
    pub fn input_typed(mut self, dims: &[u64], dtype: DType) -> Self {
        self.node.inputs = push(&self.node.inputs, Some(fact(dims, dtype)));
        self
    }
    /// An absent optional input.
    pub fn absent(mut self) -> Self {
        self.node.inputs = push(&self.node.inputs, None);
        self
    }
    /// A float32 output.
    pub fn output(self, dims: &[u64]) -> Self {
        self.output_typed(dims, DType::Float32)
    }
    pub fn output_typed(mut self, dims: &[u64], dtype: DType) -> Self {
        self.node.outputs = push(&self.node.outputs, Some(fact(dims, dtype)));
        self
    }
    pub fn attr(mut self, name: &str, v: AttrValue) -> Self {
        self.node.attrs.insert(name.to_string(), v);
        self
    }
    pub fn int(self, name: &str, v: i64) -> Self {
        self.attr(name, AttrValue::Int(v))
    }
    pub fn ints(self, name: &str, v: &[i64]) -> Self {
        self.attr(name, AttrValue::Ints(v.to_vec()))
    }
    pub fn float(self, name: &str, v: f64) -> Self {
        self.attr(name, AttrValue::Float(v))
    }
    pub fn string(self, name: &str, v: &str) -> Self {
        self.attr(name, AttrValue::Str(v.to_string()))
    }
    pub fn opset(mut self, v: i64) -> Self {
        self.node.opset = v;
        self
    }

    /// Evaluates with the built-in rules.
    pub fn eval(&self, fma: bool) -> Evaluation {
        self.eval_with(builtin(), fma)
    }

    /// Evaluates with the given rule set; panics with the error if it fails.
    pub fn eval_with(&self, rules: &RuleSet, fma: bool) -> Evaluation {
        self.eval_opts(rules, CountOptions::fma(fma))
    }

    /// Evaluates with the built-in rules and `--attention full` (FMA on).
    #[allow(dead_code)] // not every test binary uses it
    pub fn eval_full_attention(&self) -> Evaluation {
        let opts = CountOptions {
            full_attention: true,
            ..CountOptions::default()
        };
        self.eval_opts(builtin(), opts)
    }

    fn eval_opts(&self, rules: &RuleSet, opts: CountOptions) -> Evaluation {
        let rule = rules
            .get(&self.node.domain, &self.node.op)
            .unwrap_or_else(|| panic!("no rule for {}", self.node.op));
        rule.evaluate(&self.node, opts)
            .unwrap_or_else(|e| panic!("{}: {e}", self.node.op))
    }
}

/// A reported param, as `c3` prints it (`[3, 3]`, `2`, `none`).
pub fn param(ev: &Evaluation, name: &str) -> String {
    ev.params
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| show_value(v))
        .unwrap_or_else(|| panic!("no param {name} in {:?}", ev.params))
}
