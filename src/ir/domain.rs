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

/// The key a table looks a domain up by: its shown name, never `""`.
/// Comparing two empty strings hands glibc's `memcmp` an empty `String`'s
/// dangling pointer, and its masked vector load on an unmapped address
/// costs about 130 ns on the project's machine, a hundred times a real
/// compare; every lookup by domain went through one.
///
/// ```
/// assert_eq!(c3::ir::domain_lookup_key(""), "ai.onnx");
/// assert_eq!(c3::ir::domain_lookup_key("ai.onnx"), "ai.onnx");
/// assert_eq!(c3::ir::domain_lookup_key("com.microsoft"), "com.microsoft");
/// ```
pub fn domain_lookup_key(d: &str) -> &str {
    domain_shown(domain_key(d))
}

/// The opset a model imports for a domain key (`opset_import` by key). The
/// default domain, the first key when present, is found without comparing
/// empty strings (see [`domain_lookup_key`]).
///
/// ```
/// let opsets = std::collections::BTreeMap::from([(String::new(), 17), ("com.microsoft".into(), 1)]);
/// assert_eq!(c3::ir::imported_opset(&opsets, ""), Some(17));
/// assert_eq!(c3::ir::imported_opset(&opsets, "ai.onnx.ml"), None);
/// ```
pub fn imported_opset(
    opsets: &std::collections::BTreeMap<String, i64>,
    domain: &str,
) -> Option<i64> {
    let found = if domain.is_empty() {
        opsets.first_key_value().filter(|(k, _)| k.is_empty())
    } else {
        opsets.get_key_value(domain)
    };
    found.map(|(_, v)| *v)
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
