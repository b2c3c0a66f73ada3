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
/// Initializers and tensors in attributes (dense and sparse), in all graphs
/// together. Counted on the wire format before anything is decoded.
pub const MAX_TENSORS: usize = 1_000_000;
/// Graph inputs, outputs and value_info entries, in all graphs together.
/// Counted on the wire format.
pub const MAX_VALUE_INFOS: usize = 1_000_000;
/// Records that describe values (initializers, dense and sparse, graph
/// inputs, outputs and value_info entries, all graphs together) may number
/// this many plus [`VALUE_RECORDS_PER_NAME`] per input and output name of
/// the nodes: a graph's values are read or written by its nodes, and each
/// record costs about a kilobyte once decoded and inferred. Counted on the
/// wire format.
pub const VALUE_RECORDS_BASE: usize = 32_768;
/// See [`VALUE_RECORDS_BASE`].
pub const VALUE_RECORDS_PER_NAME: usize = 2;
/// Declared dimensions in all value types together (a rank-4 value has 4),
/// so that millions of empty dimension records cannot cost gigabytes.
/// Counted on the wire format.
pub const MAX_DECLARED_DIMS: usize = 8_000_000;
/// Input and output names of one node (one trace layer): a Sum of 100,000
/// inputs is legitimate. Counted on the wire format.
pub const MAX_NODE_IO: usize = 1_000_000;
/// Attributes of one node (one trace layer). Counted on the wire format.
pub const MAX_NODE_ATTRIBUTES: usize = 1_024;
/// Values in one attribute (ints, floats, strings, tensors, graphs) or one
/// trace attribute list. Counted on the wire format.
pub const MAX_ATTRIBUTE_VALUES: usize = 1_000_000;
/// Strings in string tensors (`string_data`), in all tensors together.
/// Counted on the wire format.
pub const MAX_STRING_ELEMENTS: usize = 1_000_000;
/// Every decoded record together (messages, names, list entries): what
/// decoding a model may allocate is proportional to this, whatever the mix.
pub const MAX_MODEL_ITEMS: usize = 16_000_000;
/// `--measured` runs from one picosecond to about 31 years: a time outside
/// would make efficiencies infinite or zero.
pub const MIN_MEASURED_S: f64 = 1e-12;
/// See [`MIN_MEASURED_S`].
pub const MAX_MEASURED_S: f64 = 1e9;
/// Decoding a model may allocate this much plus [`DECODE_BYTES_PER_BYTE`]
/// per byte of the file, estimated on the wire format from the records it
/// holds: memory follows the graph's metadata, and a file of millions of
/// empty records (2 bytes on disk, hundreds once decoded) is refused before
/// it costs a gigabyte. Real graphs need a few bytes per byte of metadata.
pub const DECODE_BASE_BYTES: usize = 64 << 20;
/// See [`DECODE_BASE_BYTES`].
pub const DECODE_BYTES_PER_BYTE: usize = 32;
/// Terms a symbolic dimension's polynomial may hold (`a*b + a + b + 1` has
/// four). Most shape arithmetic stays under ten; a detector's kept boxes
/// are a sum over its classes (SSDlite's 90: `min(300, nonzero_1) + ...`),
/// so a thousand classes fit.
pub const MAX_DIM_TERMS: usize = 1024;
/// Products of sums grow exponentially: one product of two symbolic
/// dimensions may multiply at most this many pairs of terms, (1 + terms of
/// one) x (1 + terms of the other), which bounds what each costs.
pub const MAX_DIM_PRODUCT: usize = 4225;
/// The highest total power of one term of a symbolic dimension (`batch^2*seq`
/// has degree 3): the element count of a rank-64 tensor whose sizes are all
/// one symbol, squared.
pub const MAX_DIM_DEGREE: u32 = 128;
/// Terms and atoms a symbolic dimension may hold in all, counting those
/// nested inside `floor`, `ceil`, `max` and `min`.
pub const MAX_DIM_SIZE: usize = 8192;
/// How deep `floor`, `ceil`, `max` and `min` may nest in a symbolic
/// dimension: what works on one (printing, comparing, evaluating) recurses
/// once per level.
pub const MAX_DIM_NESTING: usize = 128;

/// Reads at most `limit` bytes of a file, counting while it reads rather
/// than trusting the size the file system reports (files under /proc report
/// 0). `Ok(None)` when the file holds more than `limit` bytes.
pub fn read_bounded(file: impl std::io::Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}
