//! Size limits every front end enforces, so that no input can make a later
//! stage allocate or recurse without bound. They live with the IR because the
//! ONNX loader, the trace reader and shape inference all check them.

/// Subgraphs (If/Loop/Scan bodies) and function calls may nest this deep.
pub const MAX_GRAPH_DEPTH: usize = 64;
/// Tensor rank limit for declared shapes and stored tensors.
pub const MAX_RANK: usize = 64;
/// Nodes a model may hold in all (main graph, subgraphs, function bodies;
/// and again once its functions are expanded). Ten times the largest real
/// graphs; c3 needs about 3 KB and 9 µs per node, so this bounds what any
/// file can cost. Counted on the wire format before anything is decoded.
pub const MAX_NODES: usize = 1_000_000;
/// How deep protobuf messages may nest: prost's own decoder limit, which
/// refuses deeper files before c3 sees them.
pub const MAX_MESSAGE_DEPTH: usize = 100;
