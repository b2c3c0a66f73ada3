//! Indexing, selection and resampling: GatherElements/ND, Scatter*, TopK,
//! NonZero, Unique, Resize, GridSample, signal, random and string operators.

use super::OpEntry;

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    Vec::new()
}
