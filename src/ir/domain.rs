//! Operator domains. ONNX names its default domain both `""` and `"ai.onnx"`;
//! c3 keys everything by `""` and shows `ai.onnx`. These two functions are the
//! only place that equivalence is written down.

/// The default operator domain as users write and read it.
pub const DEFAULT_DOMAIN: &str = "ai.onnx";

/// The key c3 stores a domain under: `"ai.onnx"` becomes `""`, anything else
/// is kept as it is.
///
/// ```
/// assert_eq!(c3::ir::domain_key("ai.onnx"), "");
/// assert_eq!(c3::ir::domain_key("com.microsoft"), "com.microsoft");
/// ```
pub fn domain_key(d: &str) -> &str {
    if d == DEFAULT_DOMAIN { "" } else { d }
}

/// How a stored domain key is shown: `""` becomes `"ai.onnx"`.
///
/// ```
/// assert_eq!(c3::ir::domain_shown(""), "ai.onnx");
/// ```
pub fn domain_shown(d: &str) -> &str {
    if d.is_empty() { DEFAULT_DOMAIN } else { d }
}

/// An op's name as c3 shows it: `Conv`, or `com.microsoft::Attention`.
pub fn qualified(domain: &str, op: &str) -> String {
    if domain.is_empty() {
        op.to_string()
    } else {
        format!("{domain}::{op}")
    }
}
