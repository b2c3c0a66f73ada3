//! Neural-network layers: convolutions, pooling, normalizations, matrix
//! products, quantization and losses.

use super::OpEntry;

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    Vec::new()
}
