//! `--dim` names checked against the model's: a binding for a dimension
//! the model does not have is a usage error, never ignored.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// Refuses a `--dim` for a name the model does not have (a typo would
/// otherwise be ignored), listing the names it has: the symbols its
/// inputs, outputs and value_info declare and those inference made up.
/// `known`: the symbols inference listed (the inputs', the bounded ones);
/// `in_layers` adds those left in its layers' shapes.
pub(super) fn check_dims(
    dims: &BTreeMap<String, i64>,
    declared: Option<&crate::proto::GraphProto>,
    known: impl FnOnce() -> std::collections::BTreeSet<String>,
    in_layers: impl FnOnce(&mut std::collections::BTreeSet<String>),
) -> Result<()> {
    // The symbols are gathered only when a `--dim` is to be checked.
    if dims.is_empty() {
        return Ok(());
    }
    let mut known = known();
    if let Some(g) = declared {
        declared_symbols(g, &mut known);
    }
    // The layers are looked through only for a name found nowhere else: a
    // `--dim` for an input's symbol (`batch`, `seq`), the usual one, needs
    // no walk over every tensor of the graph (111k-node decoder: 28
    // million instructions, on the thread everything else waits for).
    if dims.keys().any(|k| !known.contains(k)) {
        in_layers(&mut known);
    }
    let unknown: Vec<&str> = dims
        .keys()
        .filter(|k| !known.contains(*k))
        .map(String::as_str)
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let has = if known.is_empty() {
        "it has no symbolic dimensions".to_string()
    } else {
        let names: Vec<&str> = known.iter().map(String::as_str).collect();
        format!("its symbols are {}", names.join(", "))
    };
    Err(Error::Usage(format!(
        "--dim {}: the model has no dimension of that name; {has}",
        unknown.join(", ")
    )))
}

/// The symbols inference listed: its inputs', and those it bounded.
pub(super) fn listed<V>(
    input_symbols: &[String],
    bounds: &BTreeMap<String, V>,
    bound_symbols: &[String],
) -> std::collections::BTreeSet<String> {
    let mut known: std::collections::BTreeSet<String> = input_symbols.iter().cloned().collect();
    known.extend(bounds.keys().cloned());
    known.extend(bound_symbols.iter().cloned());
    known
}

/// The symbols a graph's inputs, outputs and value_info declare, and the
/// names inference gives an input's unnamed dimensions (`x_dim0`).
fn declared_symbols(g: &crate::proto::GraphProto, out: &mut std::collections::BTreeSet<String>) {
    for (i, v) in g
        .input
        .iter()
        .chain(&g.output)
        .chain(&g.value_info)
        .enumerate()
    {
        let is_input = i < g.input.len();
        let name = v.name.as_deref().unwrap_or("");
        let Some(shape) = v
            .r#type
            .as_ref()
            .and_then(|t| t.tensor_type.as_ref())
            .and_then(|t| t.shape.as_ref())
        else {
            continue;
        };
        for (k, d) in shape.dim.iter().enumerate() {
            match (d.dim_value, d.dim_param.as_deref()) {
                (Some(v), _) if v >= 0 => {}
                (None, Some(p)) if !p.is_empty() && p != "?" => {
                    out.insert(p.to_string());
                }
                _ if is_input => {
                    out.insert(format!("{name}_dim{k}"));
                }
                _ => {}
            }
        }
    }
}
