//! Shape construction and data movement: Shape, Size, Constant, ConstantOfShape,
//! Range, Reshape, Flatten, Squeeze, Unsqueeze, Expand, Concat, Split, Slice,
//! Gather, Transpose, Tile, Pad and kin. Values fold through them.

use super::OpEntry;

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    Vec::new()
}
