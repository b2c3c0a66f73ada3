//! Control flow (If, Loop, Scan), sequences and optionals.

use super::OpEntry;

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    Vec::new()
}
