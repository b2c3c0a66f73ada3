//! Walks a loaded model in topological order and infers every value's fact,
//! then hands the cost stage an [`ir::Graph`](crate::ir::Graph).

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::proto::{
    AttributeProto, FunctionProto, GraphProto, NodeProto, TensorProto, TypeProto, attr_type,
};
use super::{MAX_GRAPH_DEPTH, OnnxModel, domain_key, tensor};
use crate::error::{Error, Result};
use crate::ir::{self, AttrValue, DType, Dim, TensorFact};
use crate::shape::ctx::{SubgraphInfer, TensorDecoder};
use crate::shape::fact::ConstantData;
use crate::shape::{Fact, InferCtx, ShapeError, TensorValue, ValueKind, registry};

/// Caller-supplied facts: symbol bindings and input shape overrides.
#[derive(Debug, Clone, Default)]
pub struct InferOptions {
    /// `--dim name=value`
    pub dims: BTreeMap<String, i64>,
    /// `--input name=shape`
    pub inputs: BTreeMap<String, Vec<u64>>,
}

/// One node after inference.
#[derive(Debug, Clone)]
pub struct InferredNode {
    pub name: String,
    pub op: String,
    pub domain: String,
    pub opset: i64,
    pub attrs: BTreeMap<String, AttrValue>,
    /// (value name, fact); `None` for an absent optional input.
    pub inputs: Vec<Option<(String, Fact)>>,
    pub outputs: Vec<Option<(String, Fact)>>,
    /// Whether c3 has shape logic for the op.
    pub has_shape_fn: bool,
}

impl InferredNode {
    /// Every input is a constant or a value known at load time: an inference
    /// engine folds the node away before running the model.
    pub fn is_constant(&self) -> bool {
        self.inputs
            .iter()
            .flatten()
            .all(|(_, f)| f.value.is_some() || f.constant.is_some())
    }
}

/// The result of inference over the main graph.
pub struct Inferred {
    /// Every value of the main graph, in definition order.
    pub values: Vec<(String, Fact)>,
    pub nodes: Vec<InferredNode>,
}

/// An initializer (or Constant tensor) whose data is read only when needed.
struct LazyTensor {
    tensor: TensorProto,
    dir: PathBuf,
}

impl ConstantData for LazyTensor {
    fn load(&self) -> std::result::Result<TensorValue, String> {
        tensor::decode(&self.tensor, &self.dir)
    }
}

fn tensor_fact(t: &TensorProto, dir: &Path) -> std::result::Result<Fact, String> {
    let dtype = tensor::dtype_of(t)?;
    let shape = t
        .dims
        .iter()
        .map(|&d| {
            u64::try_from(d)
                .map(Dim::Known)
                .map_err(|_| format!("negative dimension {d}"))
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Fact {
        constant: Some(Arc::new(LazyTensor {
            tensor: t.clone(),
            dir: dir.to_path_buf(),
        })),
        ..Fact::new(dtype, shape)
    })
}

/// Values visible to a graph: its own, then its enclosing graphs'.
struct Scope<'p> {
    vars: HashMap<String, Fact>,
    parent: Option<&'p Scope<'p>>,
}

impl Scope<'_> {
    fn get(&self, name: &str) -> Option<&Fact> {
        self.vars
            .get(name)
            .or_else(|| self.parent.and_then(|p| p.get(name)))
    }
}

struct Walker<'m> {
    model: &'m OnnxModel,
    functions: HashMap<(String, String), &'m FunctionProto>,
    opts: &'m InferOptions,
    fresh: Cell<u64>,
}

fn node_label(n: &NodeProto) -> String {
    match n.name.as_deref() {
        Some(name) if !name.is_empty() => {
            format!("node '{name}' ({})", n.op_type.as_deref().unwrap_or(""))
        }
        _ => format!("a {} node", n.op_type.as_deref().unwrap_or("")),
    }
}

/// The value names a graph uses but does not define (it takes them from the
/// enclosing scope).
fn free_names(g: &GraphProto, depth: usize) -> HashSet<String> {
    let mut defined: HashSet<&str> = HashSet::new();
    for v in &g.input {
        defined.insert(v.name.as_deref().unwrap_or(""));
    }
    for t in &g.initializer {
        defined.insert(t.name.as_deref().unwrap_or(""));
    }
    for n in &g.node {
        for o in &n.output {
            defined.insert(o);
        }
    }
    let mut free = HashSet::new();
    for n in &g.node {
        for name in node_uses(n, depth) {
            if !name.is_empty() && !defined.contains(name.as_str()) {
                free.insert(name);
            }
        }
    }
    free
}

/// Names a node reads: its inputs and its subgraphs' free names.
fn node_uses(n: &NodeProto, depth: usize) -> Vec<String> {
    let mut out: Vec<String> = n.input.clone();
    if depth < MAX_GRAPH_DEPTH {
        for a in &n.attribute {
            for g in a.g.iter().map(|g| &**g).chain(a.graphs.iter()) {
                out.extend(free_names(g, depth + 1));
            }
        }
    }
    out
}

/// Node indices in an order where every value is defined before use.
fn topo_order(
    g: &GraphProto,
    scope: &Scope,
    depth: usize,
) -> std::result::Result<Vec<usize>, String> {
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (i, n) in g.node.iter().enumerate() {
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            if producer.insert(o, i).is_some() || scope.vars.contains_key(o.as_str()) {
                return Err(format!(
                    "value '{o}' is defined twice ({} defines it again)",
                    node_label(n)
                ));
            }
        }
    }
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); g.node.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); g.node.len()];
    for (i, n) in g.node.iter().enumerate() {
        for name in node_uses(n, depth) {
            if name.is_empty() {
                continue;
            }
            match producer.get(name.as_str()) {
                Some(&p) => {
                    deps[i].push(p);
                    users[p].push(i);
                }
                None if scope.get(&name).is_some() => {}
                None => {
                    return Err(format!(
                        "{} reads '{name}', which nothing produces",
                        node_label(n)
                    ));
                }
            }
        }
    }
    let mut pending: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut ready: VecDeque<usize> = (0..g.node.len()).filter(|&i| pending[i] == 0).collect();
    let mut order = Vec::with_capacity(g.node.len());
    while let Some(i) = ready.pop_front() {
        order.push(i);
        for &u in &users[i] {
            pending[u] -= 1;
            if pending[u] == 0 {
                ready.push_back(u);
            }
        }
    }
    if order.len() != g.node.len() {
        let stuck = (0..g.node.len()).find(|&i| pending[i] > 0).unwrap_or(0);
        return Err(format!(
            "the graph has a cycle through {}",
            node_label(&g.node[stuck])
        ));
    }
    Ok(order)
}

fn attr_value(a: &AttributeProto) -> Option<AttrValue> {
    let s = |b: &bytes::Bytes| String::from_utf8_lossy(b).into_owned();
    Some(match a.r#type.unwrap_or(0) {
        attr_type::FLOAT => AttrValue::Float(f64::from(a.f?)),
        attr_type::INT => AttrValue::Int(a.i?),
        attr_type::STRING => AttrValue::Str(s(a.s.as_ref()?)),
        attr_type::FLOATS => AttrValue::Floats(a.floats.iter().map(|&f| f64::from(f)).collect()),
        attr_type::INTS => AttrValue::Ints(a.ints.clone()),
        attr_type::STRINGS => AttrValue::Strs(a.strings.iter().map(s).collect()),
        // Old files leave the type out; guess from the field that is set.
        0 if a.i.is_some() => AttrValue::Int(a.i?),
        0 if a.f.is_some() => AttrValue::Float(f64::from(a.f?)),
        0 if !a.ints.is_empty() => AttrValue::Ints(a.ints.clone()),
        0 if a.s.is_some() => AttrValue::Str(s(a.s.as_ref()?)),
        _ => return None,
    })
}

impl<'m> Walker<'m> {
    fn fresh_symbol(&self, hint: &str) -> Dim {
        let n = self.fresh.get() + 1;
        self.fresh.set(n);
        Dim::symbol(format!("{hint}_{n}"))
    }

    fn declared(&self, t: Option<&TypeProto>, top: bool, name: &str) -> Fact {
        let Some(t) = t else { return Fact::unknown() };
        let (kind, tt) = if let Some(tt) = &t.tensor_type {
            (ValueKind::Tensor, Some(tt))
        } else if let Some(s) = &t.sequence_type {
            (
                ValueKind::Sequence,
                s.elem_type.as_ref().and_then(|e| e.tensor_type.as_ref()),
            )
        } else if let Some(o) = &t.optional_type {
            (
                ValueKind::Optional,
                o.elem_type.as_ref().and_then(|e| e.tensor_type.as_ref()),
            )
        } else if t.map_type.is_some() {
            (ValueKind::Map, None)
        } else if let Some(st) = &t.sparse_tensor_type {
            (ValueKind::Tensor, Some(st))
        } else {
            (ValueKind::Tensor, None)
        };
        let dtype = tt
            .and_then(|tt| tt.elem_type)
            .and_then(DType::from_onnx_code);
        let shape = tt.and_then(|tt| tt.shape.as_ref()).map(|s| {
            s.dim
                .iter()
                .map(|d| match (d.dim_value, d.dim_param.as_deref()) {
                    (Some(v), _) => Dim::Known(v.max(0) as u64),
                    (None, Some(p)) if !p.is_empty() => match self.opts.dims.get(p) {
                        Some(&v) if top => Dim::Known(v as u64),
                        _ => Dim::symbol(p),
                    },
                    _ => self.fresh_symbol("unk"),
                })
                .collect::<Vec<_>>()
        });
        let shape = match (top, self.opts.inputs.get(name)) {
            (true, Some(dims)) => Some(dims.iter().map(|&d| Dim::Known(d)).collect()),
            _ => shape,
        };
        Fact {
            kind,
            ..Fact::tensor(dtype, shape)
        }
    }

    /// Infers a graph's nodes into `scope`; records nodes when `record` is set.
    fn walk(
        &self,
        g: &GraphProto,
        scope: &mut Scope,
        depth: usize,
        mut record: Option<&mut Vec<InferredNode>>,
        values: Option<&mut Vec<(String, Fact)>>,
    ) -> std::result::Result<(), String> {
        if depth > MAX_GRAPH_DEPTH {
            return Err(format!(
                "subgraphs nest deeper than {MAX_GRAPH_DEPTH} levels"
            ));
        }
        let mut order_names: Vec<String> = Vec::new();
        for t in &g.initializer {
            let name = t.name.clone().unwrap_or_default();
            let f = tensor_fact(t, &self.model.dir)
                .map_err(|m| format!("initializer '{name}': {m}"))?;
            scope.vars.insert(name.clone(), f);
            order_names.push(name);
        }
        let declared: HashMap<&str, &TypeProto> = g
            .value_info
            .iter()
            .chain(&g.output)
            .filter_map(|v| Some((v.name.as_deref()?, v.r#type.as_ref()?)))
            .collect();
        let order = topo_order(g, scope, depth)?;
        for i in order {
            let n = &g.node[i];
            let rec = self
                .infer_node(n, scope, depth, &declared, "")
                .map_err(|m| format!("{}: {m}", node_label(n)))?;
            for r in rec {
                for (name, f) in r.outputs.iter().flatten() {
                    scope.vars.insert(name.clone(), f.clone());
                    order_names.push(name.clone());
                }
                if let Some(list) = record.as_deref_mut() {
                    list.push(r);
                }
            }
        }
        if let Some(values) = values {
            values.extend(
                order_names
                    .into_iter()
                    .filter_map(|n| scope.vars.get(&n).map(|f| (n.clone(), f.clone()))),
            );
        }
        Ok(())
    }

    /// Infers one node; a call of a model-local function expands into the
    /// function's nodes, each returned as its own record.
    fn infer_node(
        &self,
        n: &NodeProto,
        scope: &Scope,
        depth: usize,
        declared: &HashMap<&str, &TypeProto>,
        prefix: &str,
    ) -> std::result::Result<Vec<InferredNode>, String> {
        let op = n.op_type.clone().unwrap_or_default();
        let domain = domain_key(n.domain.as_deref().unwrap_or("")).to_string();
        let opset = self.model.opsets.get(&domain).copied().unwrap_or(1);
        let inputs: Vec<Option<(String, Fact)>> = n
            .input
            .iter()
            .map(|name| {
                if name.is_empty() {
                    None
                } else {
                    Some((
                        name.clone(),
                        scope.get(name).cloned().unwrap_or_else(Fact::unknown),
                    ))
                }
            })
            .collect();
        let infer = registry(&domain, &op);
        if infer.is_none()
            && let Some(f) = self.functions.get(&(domain.clone(), op.clone()))
        {
            return self.expand(n, f, &inputs, scope, depth, prefix);
        }
        let mut outputs: Vec<Fact> = vec![Fact::unknown(); n.output.len()];
        if let Some(infer) = infer {
            let sub = SubWalker {
                walker: self,
                scope,
                depth,
            };
            let mut ctx = InferCtx::new(
                &op,
                &domain,
                opset,
                &n.attribute,
                inputs
                    .iter()
                    .map(|i| i.as_ref().map(|(_, f)| f.clone()))
                    .collect(),
                n.output.len(),
                &sub,
                &sub,
                &self.fresh,
            );
            infer(&mut ctx).map_err(|e| e.0)?;
            outputs = ctx.outputs;
        }
        // Where inference knows less than the model declares, take the declaration.
        for (o, name) in outputs.iter_mut().zip(&n.output) {
            if let Some(t) = declared.get(name.as_str()) {
                let d = self.declared(Some(t), false, name);
                if o.shape.is_none() && d.shape.is_some() {
                    o.shape = d.shape;
                    o.kind = d.kind;
                }
                if o.dtype.is_none() {
                    o.dtype = d.dtype;
                }
            }
        }
        let name = match n.name.as_deref() {
            Some(s) if !s.is_empty() => format!("{prefix}{s}"),
            _ => String::new(),
        };
        Ok(vec![InferredNode {
            name,
            op,
            domain,
            opset,
            attrs: n
                .attribute
                .iter()
                .filter_map(|a| Some((a.name.clone()?, attr_value(a)?)))
                .collect(),
            inputs,
            outputs: n
                .output
                .iter()
                .zip(outputs)
                .map(|(name, f)| (!name.is_empty()).then(|| (name.clone(), f)))
                .collect(),
            has_shape_fn: infer.is_some(),
        }])
    }

    /// Expands a call of a model-local function.
    fn expand(
        &self,
        call: &NodeProto,
        f: &FunctionProto,
        inputs: &[Option<(String, Fact)>],
        scope: &Scope,
        depth: usize,
        prefix: &str,
    ) -> std::result::Result<Vec<InferredNode>, String> {
        if depth > MAX_GRAPH_DEPTH {
            return Err(format!(
                "functions nest deeper than {MAX_GRAPH_DEPTH} levels"
            ));
        }
        let fname = f.name.clone().unwrap_or_default();
        // The body sees only its formal inputs; rename them to fresh names.
        let tag = format!(
            "{prefix}{}/",
            call.name
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or(fname.clone())
        );
        let rename = |v: &str| {
            if v.is_empty() {
                String::new()
            } else {
                format!("{tag}{v}")
            }
        };
        let mut inner = Scope {
            vars: HashMap::new(),
            parent: Some(scope),
        };
        for (formal, actual) in f.input.iter().zip(inputs) {
            if let Some((_, fact)) = actual {
                inner.vars.insert(rename(formal), fact.clone());
            }
        }
        // Attributes: the caller's values, then the function's defaults.
        let attr_of = |name: &str| -> Option<AttributeProto> {
            call.attribute
                .iter()
                .find(|a| a.name.as_deref() == Some(name))
                .or_else(|| {
                    f.attribute_proto
                        .iter()
                        .find(|a| a.name.as_deref() == Some(name))
                })
                .cloned()
        };
        let body: Vec<NodeProto> = f
            .node
            .iter()
            .map(|n| {
                let mut n = n.clone();
                n.input = n.input.iter().map(|i| rename(i)).collect();
                n.output = n.output.iter().map(|o| rename(o)).collect();
                n.attribute = n
                    .attribute
                    .iter()
                    .filter_map(|a| match &a.ref_attr_name {
                        Some(r) => attr_of(r).map(|mut v| {
                            v.name = a.name.clone();
                            v
                        }),
                        None => Some(a.clone()),
                    })
                    .collect();
                n
            })
            .collect();
        let g = GraphProto {
            node: body,
            ..Default::default()
        };
        let order = topo_order(&g, &inner, depth + 1)?;
        let empty = HashMap::new();
        let mut records = Vec::new();
        for i in order {
            let n = &g.node[i];
            for r in self.infer_node(n, &inner, depth + 1, &empty, &tag)? {
                for (name, fact) in r.outputs.iter().flatten() {
                    inner.vars.insert(name.clone(), fact.clone());
                }
                records.push(r);
            }
        }
        // The call's outputs are the body's formal outputs.
        let mut call_outputs = Vec::new();
        for (formal, actual) in f.output.iter().zip(&call.output) {
            if actual.is_empty() {
                continue;
            }
            let fact = inner
                .vars
                .get(&rename(formal))
                .cloned()
                .unwrap_or_else(Fact::unknown);
            call_outputs.push(Some((actual.clone(), fact)));
        }
        // A pass-through record that defines the call's outputs in the caller's scope.
        records.push(InferredNode {
            name: String::new(),
            op: "__function_outputs__".into(),
            domain: String::new(),
            opset: 0,
            attrs: BTreeMap::new(),
            inputs: Vec::new(),
            outputs: call_outputs,
            has_shape_fn: true,
        });
        Ok(records)
    }
}

struct SubWalker<'a, 'm> {
    walker: &'a Walker<'m>,
    scope: &'a Scope<'a>,
    depth: usize,
}

impl SubgraphInfer for SubWalker<'_, '_> {
    fn infer(&self, g: &GraphProto, inputs: &[Fact]) -> std::result::Result<Vec<Fact>, ShapeError> {
        let mut scope = Scope {
            vars: HashMap::new(),
            parent: Some(self.scope),
        };
        for (i, v) in g.input.iter().enumerate() {
            let name = v.name.clone().unwrap_or_default();
            let declared = self.walker.declared(v.r#type.as_ref(), false, &name);
            let given = inputs.get(i).cloned().unwrap_or_else(Fact::unknown);
            let fact = Fact {
                shape: given.shape.clone().or(declared.shape),
                dtype: given.dtype.or(declared.dtype),
                kind: if given.shape.is_some() || given.dtype.is_some() {
                    given.kind.clone()
                } else {
                    declared.kind
                },
                value: given.value.clone(),
                constant: given.constant.clone(),
            };
            scope.vars.insert(name, fact);
        }
        self.walker
            .walk(g, &mut scope, self.depth + 1, None, None)
            .map_err(ShapeError)?;
        Ok(g.output
            .iter()
            .map(|o| {
                let name = o.name.as_deref().unwrap_or("");
                let declared = self.walker.declared(o.r#type.as_ref(), false, name);
                match scope.get(name) {
                    Some(f) => Fact {
                        shape: f.shape.clone().or(declared.shape),
                        dtype: f.dtype.or(declared.dtype),
                        ..f.clone()
                    },
                    None => declared,
                }
            })
            .collect())
    }
}

impl TensorDecoder for SubWalker<'_, '_> {
    fn fact_of(&self, t: &TensorProto) -> std::result::Result<Fact, ShapeError> {
        tensor_fact(t, &self.walker.model.dir).map_err(ShapeError)
    }
}

/// Infers every value of the model's main graph.
pub fn infer(model: &OnnxModel, opts: &InferOptions) -> Result<Inferred> {
    let bad = |m: String| Error::Input {
        path: model.path.clone(),
        message: m,
    };
    let g = model
        .model
        .graph
        .as_ref()
        .expect("loader checked the graph");
    let functions = model
        .model
        .functions
        .iter()
        .map(|f| {
            (
                (
                    domain_key(f.domain.as_deref().unwrap_or("")).to_string(),
                    f.name.clone().unwrap_or_default(),
                ),
                f,
            )
        })
        .collect();
    let walker = Walker {
        model,
        functions,
        opts,
        fresh: Cell::new(0),
    };
    for name in opts.inputs.keys() {
        if !g.input.iter().any(|v| v.name.as_deref() == Some(name)) {
            let names: Vec<&str> = g.input.iter().filter_map(|v| v.name.as_deref()).collect();
            return Err(Error::Usage(format!(
                "--input {name}: the model has no input of that name (inputs: {})",
                names.join(", ")
            )));
        }
    }
    let mut scope = Scope {
        vars: HashMap::new(),
        parent: None,
    };
    let mut values = Vec::new();
    let initializers: HashSet<&str> = g
        .initializer
        .iter()
        .filter_map(|t| t.name.as_deref())
        .collect();
    for v in &g.input {
        let name = v.name.clone().unwrap_or_default();
        if initializers.contains(name.as_str()) {
            continue; // an initializer listed as input (IR < 4) is a constant
        }
        let f = walker.declared(v.r#type.as_ref(), true, &name);
        if scope.vars.insert(name.clone(), f.clone()).is_some() {
            return Err(bad(format!("graph input '{name}' is declared twice")));
        }
        values.push((name, f));
    }
    let mut nodes = Vec::new();
    walker
        .walk(g, &mut scope, 0, Some(&mut nodes), Some(&mut values))
        .map_err(bad)?;
    nodes.retain(|n| n.op != "__function_outputs__");
    Ok(Inferred { values, nodes })
}

/// A fact as the cost stage needs it: a tensor of known element type and shape.
fn tensor_of(f: &Fact) -> Option<TensorFact> {
    if f.kind != ValueKind::Tensor {
        return None;
    }
    Some(TensorFact::new(f.dtype?, f.shape.clone()?))
}

/// The graph the cost stage sees. Nodes an engine folds at load time (all
/// inputs constant) are left out; nodes whose shapes are unknown are listed
/// as not analysed, with the reason.
pub fn to_graph(inferred: &Inferred) -> ir::Graph {
    let conv =
        |list: &[Option<(String, Fact)>]| -> std::result::Result<Vec<Option<TensorFact>>, String> {
            list.iter()
                .map(|t| match t {
                    None => Ok(None),
                    Some((name, f)) => tensor_of(f)
                        .map(Some)
                        .ok_or_else(|| format!("the shape of '{name}' is unknown")),
                })
                .collect()
        };
    let mut folded = 0;
    let mut entries: Vec<(ir::Node, Option<String>)> = Vec::new();
    for n in &inferred.nodes {
        if n.is_constant() {
            folded += 1;
            continue;
        }
        let mut node = ir::Node {
            name: n.name.clone(),
            op: n.op.clone(),
            domain: n.domain.clone(),
            opset: n.opset,
            attrs: n.attrs.clone(),
            inputs: Vec::new(),
            outputs: Vec::new(),
        };
        let reason = match (conv(&n.inputs), conv(&n.outputs)) {
            (Ok(inputs), Ok(outputs)) => {
                node.inputs = inputs;
                node.outputs = outputs;
                None
            }
            (Err(reason), _) | (_, Err(reason)) => Some(reason),
        };
        entries.push((node, reason));
    }
    // Number unnamed nodes in execution order, analysed or not.
    let mut plain: Vec<ir::Node> = entries.iter().map(|(n, _)| n.clone()).collect();
    ir::name_unnamed(&mut plain);
    let mut graph = ir::Graph {
        folded,
        ..ir::Graph::default()
    };
    for (node, (_, reason)) in plain.into_iter().zip(entries) {
        match reason {
            None => graph.nodes.push(node),
            Some(r) => graph.unanalysed.push((node, r)),
        }
    }
    graph
}
