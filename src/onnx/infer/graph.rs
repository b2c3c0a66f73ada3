//! From inferred facts to the IR: the [`ir::Graph`] the cost stage sees.

use super::*;

/// A fact as the cost stage needs it: a tensor of known element type and shape.
/// Constants (initializers, values known at load time, what folded nodes
/// produce) count as weights for `--weights`; the name links producers to
/// consumers for fusion.
pub(super) fn tensor_of(
    name: String,
    f: Fact,
    folded: &HashSet<String>,
) -> std::result::Result<TensorFact, String> {
    // A sequence or an optional is described by its element, as the rules
    // for them expect; they never count the container itself, so one whose
    // elements differ in shape stands as a scalar of its element type.
    let (dtype, shape) = match (f.dtype, f.shape, &f.kind) {
        (Some(d), Some(s), ValueKind::Tensor | ValueKind::Sequence | ValueKind::Optional) => (d, s),
        (d, None, ValueKind::Sequence | ValueKind::Optional) => {
            (d.unwrap_or(DType::Float32), Vec::new())
        }
        _ => return Err(format!("the shape of '{name}' is unknown")),
    };
    Ok(TensorFact {
        dtype,
        shape,
        constant: f.constant.is_some() || f.value.is_some() || folded.contains(&name),
        name: Some(name),
        nonzeros: None,
    })
}

/// Whether an engine folds the node away at load time: every input is a
/// constant (an initializer, a value known at load time, or what a folded
/// node produces, listed in `folded`), and its subgraphs (if any) hold
/// nothing that must run. Constness alone decides: never the size of a value.
pub(crate) fn folds(n: &InferredNode, folded: &HashSet<String>) -> bool {
    let constant = |(name, f): &(String, Fact)| {
        f.value.is_some() || f.constant.is_some() || folded.contains(name)
    };
    n.inputs.iter().flatten().all(constant)
        && n.bodies.iter().all(|b| match &b.nodes {
            Ok(nodes) => {
                let mut inner = folded.clone();
                folding(nodes, &mut inner).into_iter().all(|f| f)
            }
            Err(_) => false,
        })
}

/// Which of `nodes` (in execution order) fold; what the folded ones
/// produce joins `folded`.
pub(crate) fn folding(nodes: &[InferredNode], folded: &mut HashSet<String>) -> Vec<bool> {
    nodes
        .iter()
        .map(|n| {
            let f = folds(n, folded);
            if f {
                folded.extend(n.outputs.iter().flatten().map(|(name, _)| name.clone()));
            }
            f
        })
        .collect()
}

/// The graph the cost stage sees. Nodes an engine folds at load time (all
/// inputs constant) are left out; nodes whose shapes are unknown are listed
/// as not analysed, with the reason. Consumes the inference result: nothing
/// is copied.
pub fn to_graph(inferred: Inferred) -> ir::Graph {
    to_graph_with(inferred, true)
}

/// [`to_graph`], or with `fold` false every node counted as executed, as
/// an eager framework runs it (`--no-fold`).
pub fn to_graph_with(inferred: Inferred, fold: bool) -> ir::Graph {
    let mut folded_names = HashSet::default();
    let mut graph = graph_of(
        inferred.nodes,
        inferred.outputs,
        "",
        &mut folded_names,
        fold,
    );
    graph.bounds = inferred.bounds;
    graph.input_symbols = inferred.input_symbols;
    graph.bound_symbols = inferred.bound_symbols;
    graph
}

/// One graph level: the main graph, or a subgraph whose node names get
/// `prefix` (`loop/body/`). `folded_names` holds what folded nodes produce,
/// here and in enclosing graphs.
pub(super) fn graph_of(
    nodes: Vec<InferredNode>,
    outputs: Vec<String>,
    prefix: &str,
    folded_names: &mut HashSet<String>,
    fold: bool,
) -> ir::Graph {
    // What folded nodes produce (weights built by ConstantOfShape, say) is
    // a constant of the model too.
    let folding = if fold {
        folding(&nodes, folded_names)
    } else {
        vec![false; nodes.len()]
    };
    let conv = |list: Vec<Option<(String, Fact)>>,
                folded: &HashSet<String>|
     -> std::result::Result<Vec<Option<TensorFact>>, String> {
        list.into_iter()
            .map(|t| t.map(|(name, f)| tensor_of(name, f, folded)).transpose())
            .collect()
    };
    let mut folded = 0;
    let folds = folding.iter().filter(|&&f| f).count();
    let mut folded_nodes = Vec::with_capacity(folds);
    // Per node: the node, why it is not analysed, its bodies and their runs.
    let mut plain: Vec<ir::Node> = Vec::with_capacity(nodes.len() - folds);
    let mut rest = Vec::with_capacity(nodes.len() - folds);
    for (n, folds_away) in nodes.into_iter().zip(folding) {
        let mut node = ir::Node {
            name: n.name,
            op: n.op,
            domain: n.domain,
            opset: n.opset,
            attrs: n.attrs,
            inputs: Vec::new(),
            outputs: Vec::new(),
            bodies: Vec::new(),
        };
        let reason = match (conv(n.inputs, folded_names), conv(n.outputs, folded_names)) {
            (Ok(inputs), Ok(outputs)) => {
                node.inputs = inputs;
                node.outputs = outputs;
                None
            }
            (Err(reason), _) | (_, Err(reason)) => Some(reason),
        };
        if folds_away {
            folded += 1;
            if reason.is_none() {
                folded_nodes.push(node);
            }
            continue;
        }
        plain.push(node);
        rest.push((reason, n.bodies, n.repeats));
    }
    // Number unnamed nodes in execution order, analysed or not.
    ir::name_unnamed(&mut plain);
    ir::name_unnamed(&mut folded_nodes);
    for n in folded_nodes.iter_mut().filter(|_| !prefix.is_empty()) {
        n.name = format!("{prefix}{}", n.name);
    }
    let mut graph = ir::Graph {
        folded,
        folded_nodes,
        outputs,
        nodes: Vec::with_capacity(plain.len()),
        ..ir::Graph::default()
    };
    for (mut node, (reason, bodies, repeats)) in plain.into_iter().zip(rest) {
        if !prefix.is_empty() {
            node.name = format!("{prefix}{}", node.name);
        }
        // If's branches are alternatives; other bodies run `repeats` times.
        let alternative = node.op == "If" && node.domain.is_empty();
        let repeats = repeats.unwrap_or(Dim::Known(1));
        node.bodies = bodies
            .into_iter()
            .map(|b| ir::Body {
                trips: b
                    .trips
                    .into_iter()
                    .map(|nodes| {
                        let inner = format!("{}/{}/", node.name, b.attr);
                        graph_of(nodes, b.outputs.clone(), &inner, folded_names, fold)
                    })
                    .collect(),
                graph: b.nodes.map(|nodes| {
                    let inner = format!("{}/{}/", node.name, b.attr);
                    graph_of(nodes, b.outputs, &inner, folded_names, fold)
                }),
                attr: b.attr,
                inputs: b.inputs,
                repeats: repeats.clone(),
                alternative,
            })
            .collect();
        match reason {
            None => graph.nodes.push(node),
            Some(r) => graph.unanalysed.push((node, r)),
        }
    }
    graph
}
