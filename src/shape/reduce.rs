//! Reductions, recurrent layers, attention and the com.microsoft operators.

use super::OpEntry;

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    Vec::new()
}
