//! TensorRT's names for an engine's layers, read into the ONNX names they
//! are made of. A layer built from several nodes is named after them joined
//! with ` + ` (weights among them); pointwise nodes run as one kernel are
//! `PWN(a, b)`, which nests; a Myelin region is `{ForeignNode[first...last]}`,
//! the nodes from `first` to `last` in the graph's order. Layers TensorRT
//! adds of its own serve another: `Reformatting CopyNode for Input Tensor 0
//! to <layer>`, `copied_squeeze_after_<name>`, `(Unnamed Layer* 12) [Shuffle]`.
//!
//! The reading is iterative (a work list, no recursion), so a name nested
//! as deep as its length allows costs at most its length squared steps.

use super::Members;

/// What TensorRT names a copy of a tensor between two formats, before the
/// layer it serves (`Input Tensor 0 to <layer>`).
const COPY_NODE: &str = "Reformatting CopyNode for ";
/// Shuffles TensorRT adds around a layer, before the name they follow.
const AFTER: [&str; 2] = ["copied_squeeze_after_", "unsqueeze_node_after_"];
/// The name of a layer TensorRT made with no ONNX node behind it.
const UNNAMED: &str = "(Unnamed Layer* ";

/// A layer's name read: what it ran and a label for its operator where the
/// name tells one (empty otherwise).
pub(super) fn read(name: &str) -> (Members, String) {
    if let Some(rest) = name.strip_prefix(COPY_NODE) {
        let target = rest.split_once(" to ").map_or("", |(_, t)| t);
        return (serving(target), "Reformat".into());
    }
    for prefix in AFTER {
        if let Some(target) = name.strip_prefix(prefix) {
            return (serving(target), "Shuffle".into());
        }
    }
    if let Some(kind) = unnamed_kind(name) {
        return (serving(""), kind.to_string());
    }
    let mut members = Members::default();
    let mut work: Vec<&str> = vec![name];
    while let Some(term) = work.pop() {
        let term = term.trim();
        if term.is_empty() {
            continue;
        }
        let parts = split_top(term, " + ");
        if parts.len() > 1 {
            work.extend(parts.into_iter().rev());
            continue;
        }
        if let Some(inner) = term
            .strip_prefix("{ForeignNode[")
            .and_then(|r| r.strip_suffix("]}"))
        {
            match inner.split_once("...") {
                Some((a, b)) if !a.is_empty() && !b.is_empty() && members.range.is_none() => {
                    members.range = Some((a.to_string(), b.to_string()));
                }
                _ => members.names.push(inner.to_string()),
            }
            continue;
        }
        if let Some(inner) = term.strip_prefix("PWN(").and_then(|r| r.strip_suffix(')')) {
            work.extend(split_top(inner, ", ").into_iter().rev());
            continue;
        }
        members.names.push(term.to_string());
    }
    let op = if members.range.is_some() && members.names.is_empty() {
        "Myelin"
    } else {
        ""
    };
    (members, op.into())
}

fn serving(target: &str) -> Members {
    Members {
        serves: Some(target.to_string()),
        ..Members::default()
    }
}

/// `Shuffle` of `(Unnamed Layer* 12) [Shuffle]`.
fn unnamed_kind(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(UNNAMED)?;
    let (_, kind) = rest.split_once(") [")?;
    kind.strip_suffix(']')
}

/// `s` cut at each `sep` outside parentheses (a name whose parentheses do
/// not balance is cut nowhere past the imbalance).
fn split_top<'a>(s: &'a str, sep: &str) -> Vec<&'a str> {
    let mut parts = Vec::new();
    let mut depth = 0i64;
    let mut start = 0;
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ if depth == 0 && bytes[i..].starts_with(sep.as_bytes()) => {
                parts.push(&s[start..i]);
                i += sep.len();
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&s[start..]);
    parts
}

/// The ONNX node names of a layer information's `Metadata`
/// (`[ONNX Layer: /a/Conv]\u{1f}[ONNX Layer: /a/Relu]`).
pub(super) fn metadata_members(metadata: &str) -> impl Iterator<Item = &str> {
    metadata.split('\u{1f}').filter_map(|part| {
        let inner = part
            .trim()
            .strip_prefix("[ONNX Layer: ")?
            .strip_suffix(']')?;
        (!inner.is_empty()).then_some(inner)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(name: &str) -> Vec<String> {
        read(name).0.names
    }

    #[test]
    fn fused_layers_name_their_members() {
        assert_eq!(
            names("features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)"),
            [
                "features.0.0.weight",
                "QuantizeLinear_8",
                "Conv_12",
                "Clip_16"
            ]
        );
        assert_eq!(
            names("/layer1/layer1.0/conv1/Conv + /layer1/layer1.0/relu/Relu"),
            ["/layer1/layer1.0/conv1/Conv", "/layer1/layer1.0/relu/Relu"]
        );
        assert_eq!(names("PWN(PWN(/a/Relu), /b/Add)"), ["/a/Relu", "/b/Add"]);
        // Unnamed layers inside a fused name are members like the others
        // (they match no layer, and are passed over by the join).
        assert_eq!(
            names("Gemm_864 + (Unnamed Layer* 849) [Shuffle] + x"),
            ["Gemm_864", "(Unnamed Layer* 849) [Shuffle]", "x"]
        );
        let (m, op) = read("/a/Conv");
        assert_eq!(
            (m.names, m.range, m.serves, op.as_str()),
            (vec!["/a/Conv".to_string()], None, None, "")
        );
    }

    #[test]
    fn myelin_regions_are_ranges() {
        let (m, op) = read("{ForeignNode[/blocks.0/norm1/ReduceMean.../head/Gemm]}");
        assert_eq!(
            m.range,
            Some(("/blocks.0/norm1/ReduceMean".into(), "/head/Gemm".into()))
        );
        assert!(m.names.is_empty());
        assert_eq!(op, "Myelin");
        // One node alone is a region of one.
        assert_eq!(names("{ForeignNode[/a/MatMul]}"), ["/a/MatMul"]);
    }

    #[test]
    fn inserted_layers_serve_the_one_they_name() {
        let (m, op) = read("Reformatting CopyNode for Input Tensor 0 to Conv_12 + PWN(Clip_16)");
        assert_eq!(m.serves.as_deref(), Some("Conv_12 + PWN(Clip_16)"));
        assert_eq!(op, "Reformat");
        let (m, op) = read("copied_squeeze_after_(Unnamed Layer* 850) [ElementWise]");
        assert_eq!(
            m.serves.as_deref(),
            Some("(Unnamed Layer* 850) [ElementWise]")
        );
        assert_eq!(op, "Shuffle");
        // An unnamed layer alone serves the layer before it.
        let (m, op) = read("(Unnamed Layer* 849) [Shuffle]");
        assert_eq!((m.serves.as_deref(), op.as_str()), (Some(""), "Shuffle"));
    }

    #[test]
    fn deep_nesting_and_odd_parentheses_do_not_break_the_reading() {
        let deep = format!("{}x{}", "PWN(".repeat(1000), ")".repeat(1000));
        assert_eq!(names(&deep), ["x"]);
        // Unclosed: the name is kept whole.
        assert_eq!(names("PWN(PWN(a"), ["PWN(PWN(a"]);
        assert_eq!(names("a +  + b"), ["a", "b"]);
    }

    #[test]
    fn metadata_lists_onnx_layers() {
        let m: Vec<&str> =
            metadata_members("[ONNX Layer: /a/Conv]\u{1f}[ONNX Layer: /a/Relu]\u{1f}other")
                .collect();
        assert_eq!(m, ["/a/Conv", "/a/Relu"]);
    }
}
