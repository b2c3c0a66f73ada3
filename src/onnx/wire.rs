//! A look at a model's protobuf wire format before it is decoded: decoding
//! allocates every node, so a file of tens of millions of tiny nodes must be
//! refused by counting them first. Only the messages that can hold nodes are
//! entered; everything else (weights included) is skipped by its length.

use prost::encoding::decode_varint;

/// The messages on the way to a node.
#[derive(Clone, Copy)]
enum Kind {
    Model,
    Graph,
    Node,
    Attribute,
    Function,
}

impl Kind {
    /// The kind of field `field` of this message, if it is one to enter.
    fn child(self, field: u64) -> Option<Kind> {
        match (self, field) {
            (Kind::Model, 7) => Some(Kind::Graph),
            (Kind::Model, 25) => Some(Kind::Function),
            (Kind::Graph, 1) | (Kind::Function, 7) => Some(Kind::Node),
            (Kind::Node, 5) => Some(Kind::Attribute),
            (Kind::Attribute, 6 | 11) => Some(Kind::Graph),
            _ => None,
        }
    }
}

/// The nodes of a serialized model (main graph, subgraphs, function bodies),
/// counted up to a little past `limit`. Malformed bytes end the count where
/// they start: the decoder reports them.
pub fn count_nodes(bytes: &[u8], limit: usize) -> usize {
    let mut count = 0;
    scan(bytes, Kind::Model, 0, limit, &mut count);
    count
}

fn scan(mut b: &[u8], kind: Kind, depth: usize, limit: usize, count: &mut usize) {
    // Deeper files are refused by the decoder's own limit.
    if depth > super::MAX_MESSAGE_DEPTH {
        return;
    }
    while !b.is_empty() && *count <= limit {
        let Ok(tag) = decode_varint(&mut b) else {
            return;
        };
        let skip = match tag & 7 {
            0 => {
                if decode_varint(&mut b).is_err() {
                    return;
                }
                0
            }
            1 => 8,
            5 => 4,
            2 => {
                let Ok(len) = decode_varint(&mut b) else {
                    return;
                };
                let Some(len) = usize::try_from(len).ok().filter(|&l| l <= b.len()) else {
                    return;
                };
                let (payload, rest) = b.split_at(len);
                if let Some(child) = kind.child(tag >> 3) {
                    if matches!(child, Kind::Node) {
                        *count += 1;
                    }
                    scan(payload, child, depth + 1, limit, count);
                }
                b = rest;
                0
            }
            // Groups (deprecated, not in ONNX) and invalid wire types.
            _ => return,
        };
        if skip > b.len() {
            return;
        }
        b = &b[skip..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto};
    use prost::Message;

    #[test]
    fn counts_nodes_in_graphs_subgraphs_and_functions() {
        let leaf = NodeProto {
            op_type: Some("Relu".into()),
            ..Default::default()
        };
        let sub = GraphProto {
            node: vec![leaf.clone(), leaf.clone()],
            ..Default::default()
        };
        let with_sub = NodeProto {
            attribute: vec![AttributeProto {
                g: Some(Box::new(sub.clone())),
                graphs: vec![sub],
                ..Default::default()
            }],
            ..leaf.clone()
        };
        let m = ModelProto {
            graph: Some(GraphProto {
                node: vec![leaf.clone(), with_sub],
                ..Default::default()
            }),
            functions: vec![FunctionProto {
                node: vec![leaf.clone(), leaf.clone(), leaf],
                ..Default::default()
            }],
            ..Default::default()
        };
        // 2 in the main graph, 2 x 2 in its subgraphs, 3 in the function.
        assert_eq!(count_nodes(&m.encode_to_vec(), 100), 9);
        // The count stops a little past the limit.
        assert_eq!(count_nodes(&m.encode_to_vec(), 1), 2);
        // Garbage ends the count without a panic.
        assert_eq!(count_nodes(&[0x3a, 0xff, 0xff, 0xff], 100), 0);
        assert_eq!(count_nodes(&[0x3b, 0x0a, 0x00], 100), 0);
    }
}
