//! Model-local functions: a call expands into the function's nodes, each
//! inferred in turn under the call's name.

use super::*;

impl Walker<'_> {
    /// Expands a call of a model-local function.
    pub(super) fn expand(
        &self,
        call: &NodeProto,
        f: &FunctionProto,
        inputs: &[Option<(String, Fact)>],
        scope: &Scope,
        depth: usize,
        prefix: &str,
    ) -> std::result::Result<Vec<InferredNode>, String> {
        if depth > MAX_GRAPH_DEPTH {
            return Err(self.over_limit(format!(
                "functions nest deeper than the limit of {MAX_GRAPH_DEPTH} levels"
            )));
        }
        // The body sees only its formal inputs; rename them to fresh names.
        // An unnamed call is known by its first output, unique in its graph:
        // inside a body that output already carries the prefix, which is
        // not repeated (names grow by one call's part a level, not double).
        let own = call.name.as_deref().filter(|s| !s.is_empty()).or_else(|| {
            call.output
                .iter()
                .find(|o| !o.is_empty())
                .map(|o| o.strip_prefix(prefix).unwrap_or(o))
        });
        let tag = [prefix, own.or(f.name.as_deref()).unwrap_or(""), "/"].concat();
        // Formal inputs the call leaves out read as absent (an empty name).
        let absent: HashSet<&str> = f
            .input
            .iter()
            .enumerate()
            .filter(|(i, _)| !matches!(inputs.get(*i), Some(Some(_))))
            .map(|(_, v)| v.as_str())
            .collect();
        let rename = |v: &str| {
            if v.is_empty() || absent.contains(v) {
                String::new()
            } else {
                format!("{tag}{v}")
            }
        };
        let mut inner = Scope {
            vars: Vars::default(),
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
            .map(|n| instantiate(n, None, &rename, &attr_of))
            .collect();
        let g = GraphProto {
            node: body,
            ..Default::default()
        };
        // The body's nodes are of the opsets the function imports.
        let mut opsets = self.model.opsets.clone();
        for o in &f.opset_import {
            let d = domain_key(o.domain.as_deref().unwrap_or("")).to_string();
            opsets.insert(d, o.version.unwrap_or(1));
        }
        let (order, _) = topo_order(&g.node[..], &inner, depth + 1, &self.visits)?;
        self.charge(0)?;
        let empty = HashMap::default();
        let mut records = Vec::new();
        for i in order {
            let n = &g.node[i];
            for r in self
                .infer_node(
                    n,
                    None,
                    &inner,
                    depth + 1,
                    &opsets,
                    &empty,
                    &tag,
                    Names::Copied,
                )?
                .0
            {
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
            op: FUNCTION_OUTPUTS.into(),
            domain: String::new(),
            opset: 0,
            attrs: ir::Attrs::default(),
            inputs: Default::default(),
            outputs: call_outputs,
            has_shape_fn: true,
            bodies: Vec::new(),
            repeats: None,
        });
        Ok(records)
    }
}

/// A function body's node for one call: attributes that refer to the call's
/// (`ref_attr_name`) take its values, and the names of the function's scope
/// get the call's prefix, also where a nested subgraph reads them. `local`
/// holds the names nested subgraphs define themselves, which stay as they are.
fn instantiate(
    n: &NodeProto,
    local: Option<&HashSet<String>>,
    rename: &dyn Fn(&str) -> String,
    attr_of: &dyn Fn(&str) -> Option<AttributeProto>,
) -> NodeProto {
    let outer = |v: &str| local.is_none_or(|l| !l.contains(v));
    let mut n = n.clone();
    for i in &mut n.input {
        if outer(i) {
            *i = rename(i);
        }
    }
    if local.is_none() {
        for o in &mut n.output {
            *o = rename(o);
        }
    }
    n.attribute = n
        .attribute
        .iter()
        .filter_map(|a| {
            if let Some(r) = &a.ref_attr_name {
                // The caller's value (a caller's graph reads the caller's names).
                return attr_of(r).map(|mut v| {
                    v.name = a.name.clone();
                    v
                });
            }
            let mut a = a.clone();
            for g in a.g.iter_mut().map(|g| &mut **g).chain(a.graphs.iter_mut()) {
                let mut bound = local.cloned().unwrap_or_default();
                bound.extend(g.input.iter().filter_map(|v| v.name.clone()));
                bound.extend(g.initializer.iter().filter_map(|t| t.name.clone()));
                bound.extend(g.node.iter().flat_map(|m| m.output.iter().cloned()));
                g.node = g
                    .node
                    .iter()
                    .map(|m| instantiate(m, Some(&bound), rename, attr_of))
                    .collect();
                for o in &mut g.output {
                    if let Some(name) = &mut o.name
                        && !bound.contains(name.as_str())
                    {
                        *name = rename(name);
                    }
                }
            }
            Some(a)
        })
        .collect();
    n
}

/// What expanding a model's functions may make, at most this many bytes
/// plus [`EXPANSION_BYTES_PER_BYTE`] per byte of the file: each node of the
/// expanded model counted as [`EXPANDED_NODE_BYTES`], and the names the
/// expansion makes (each prefixed by its calls') as their bytes. Estimated
/// from the call graph before any call is expanded, so that a file of a
/// few KB cannot make hundreds of MB of nodes and names.
pub const EXPANSION_BASE_BYTES: u64 = 16 << 20;
/// See [`EXPANSION_BASE_BYTES`].
pub const EXPANSION_BYTES_PER_BYTE: u64 = 256;
/// What one node of the expanded model counts toward the expansion's
/// limit, beside its names: about what c3 spends on a node.
pub const EXPANDED_NODE_BYTES: u64 = 1024;

/// The model once its functions are expanded, subgraphs included.
pub(super) struct Expansion {
    /// Its nodes: what inference will record and visit at least once.
    pub nodes: u64,
    /// The bytes of the names the expansion makes.
    pub name_bytes: u64,
}

/// One level's expansion: its nodes, the names in it that a call's prefix
/// goes in front of, and their bytes before that prefix.
#[derive(Clone, Copy, Default)]
struct Size {
    nodes: u64,
    names: u64,
    bytes: u64,
}

/// The size of the model once its functions are expanded. Computed from
/// the call graph (each function's size once), so functions that call each
/// other twice per level are refused before the first expansion.
pub(super) fn expansion(
    nodes: &(impl NodeList + ?Sized),
    functions: &Functions,
) -> std::result::Result<Expansion, String> {
    let mut sizer = Sizer {
        functions,
        sizes: HashMap::default(),
        open: HashSet::default(),
    };
    let s = sizer.size(nodes, 0, false)?;
    Ok(Expansion {
        nodes: s.nodes,
        name_bytes: s.bytes,
    })
}

struct Sizer<'a, 'm> {
    functions: &'a Functions<'m>,
    sizes: HashMap<(String, String), Size>,
    open: HashSet<(String, String)>,
}

impl Sizer<'_, '_> {
    /// `named`: the level is inside a function, so its own names are made
    /// by the expansion (with the call's prefix).
    fn size(
        &mut self,
        nodes: &(impl NodeList + ?Sized),
        depth: usize,
        named: bool,
    ) -> std::result::Result<Size, String> {
        if depth > MAX_GRAPH_DEPTH {
            return Err(format!(
                "functions and subgraphs nest deeper than the limit of {MAX_GRAPH_DEPTH} levels"
            ));
        }
        let mut total = Size::default();
        for i in 0..nodes.count() {
            total.nodes = total.nodes.saturating_add(1);
            if named {
                let name = Some(nodes.name(i)).filter(|n| !n.is_empty());
                for v in nodes.inputs(i).chain(nodes.outputs(i)).chain(name) {
                    if !v.is_empty() {
                        total.names = total.names.saturating_add(1);
                        total.bytes = total.bytes.saturating_add(v.len() as u64);
                    }
                }
            }
            for g in nodes.graphs(i) {
                let s = self.size(&g.node[..], depth + 1, named)?;
                total.nodes = total.nodes.saturating_add(s.nodes);
                total.names = total.names.saturating_add(s.names);
                total.bytes = total.bytes.saturating_add(s.bytes);
            }
            if self.functions.is_empty() {
                continue;
            }
            let (op, domain) = nodes.op(i);
            let domain = domain_key(domain);
            // Calls expand only where c3 has no shape logic of its own.
            if registry(domain, op).is_some() {
                continue;
            }
            let key = (domain.to_string(), op.to_string());
            let Some(f) = self.functions.get(&key) else {
                continue;
            };
            let s = match self.sizes.get(&key) {
                Some(&s) => s,
                None => {
                    if !self.open.insert(key.clone()) {
                        return Err(format!(
                            "function '{}' calls itself, directly or through others",
                            key.1
                        ));
                    }
                    let s = self.size(&f.node[..], depth + 1, true)?;
                    self.open.remove(&key);
                    self.sizes.insert(key, s);
                    s
                }
            };
            // The call's part of the prefix, as [`Walker::expand`] makes it.
            let own = Some(nodes.name(i))
                .filter(|n| !n.is_empty())
                .or_else(|| nodes.outputs(i).find(|o| !o.is_empty()))
                .or(f.name.as_deref())
                .map_or(0, str::len) as u64;
            total.nodes = total.nodes.saturating_add(s.nodes);
            total.names = total.names.saturating_add(s.names);
            let prefixed = own.saturating_add(1).saturating_mul(s.names);
            total.bytes = total.bytes.saturating_add(prefixed.saturating_add(s.bytes));
        }
        Ok(total)
    }
}
