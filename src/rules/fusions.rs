//! Fusion patterns: chains of operators an inference engine runs as one
//! kernel, so the tensors passed between them are never written to memory
//! nor read back.
//!
//! A pack declares them in a `fusions.yaml`:
//!
//! ```yaml
//! conv_bn_relu:
//!   chain: [Conv, BatchNormalization, Relu|Clip]
//!   doc: Convolution with the batch norm folded in and the activation applied on the way out.
//! ```
//!
//! Each step names one op or alternatives separated by `|`. A chain matches
//! layers where each one consumes the previous one's first output, and every
//! tensor passed inside the chain is used by nothing outside it. With named
//! tensors (ONNX, or a trace that names them) the data flow decides; in an
//! anonymous trace, consecutive layers whose shapes connect.

use serde::Deserialize;

use super::yaml::OrderedMap;
use crate::error::RuleError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FusionDef {
    chain: Vec<String>,
    doc: String,
}

/// One fusion pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Fusion {
    pub name: String,
    /// Each step: the ops it accepts.
    pub chain: Vec<Vec<String>>,
    pub doc: String,
    /// File and line.
    pub origin: String,
}

impl Fusion {
    /// `Conv → BatchNormalization → Relu|Clip`
    pub fn chain_text(&self) -> String {
        self.chain
            .iter()
            .map(|s| s.join("|"))
            .collect::<Vec<_>>()
            .join(" → ")
    }
}

/// Fusion patterns in force at most (a pack's and the built-in ones).
pub const MAX_FUSIONS: usize = 256;
/// Steps one fusion chain may have.
pub const MAX_FUSION_STEPS: usize = 16;
/// Alternatives one step of a chain may accept (`Relu|Clip` has two).
pub const MAX_FUSION_ALTERNATIVES: usize = 64;

/// The fusion patterns in force.
#[derive(Debug, Clone, Default)]
pub struct Fusions {
    patterns: Vec<Fusion>,
}

impl Fusions {
    /// Adds (or replaces, by name) the patterns of a `fusions.yaml`.
    pub fn add_source(&mut self, path: &str, text: &str) -> Result<Vec<String>, RuleError> {
        let src = crate::rules::rule::SourceFile::new(path, text, false);
        let defs: OrderedMap<FusionDef> =
            serde_saphyr::from_str(text).map_err(|e| crate::rules::pack::yaml_error(&src, &e))?;
        let mut names = Vec::new();
        let mut added = Vec::new();
        for (name, d) in defs.0 {
            // The loader's one-pass index of top-level keys: no scan per name.
            let line = src.line_col(src.key_offset(&name)).0;
            let limit = |message: String| RuleError {
                path: path.to_string(),
                line,
                col: 1,
                message,
                text: None,
            };
            if d.chain.len() > MAX_FUSION_STEPS {
                return Err(limit(format!(
                    "fusion {name}: the chain exceeds the limit of {MAX_FUSION_STEPS} steps (MAX_FUSION_STEPS)"
                )));
            }
            if d.chain.len() < 2 {
                return Err(RuleError {
                    path: path.to_string(),
                    line,
                    col: 1,
                    message: format!("fusion {name}: a chain needs at least two ops"),
                    text: Some(name),
                });
            }
            let chain: Vec<Vec<String>> = d
                .chain
                .iter()
                .map(|s| s.split('|').map(|o| o.trim().to_string()).collect())
                .collect();
            if chain.iter().any(|s| s.len() > MAX_FUSION_ALTERNATIVES) {
                return Err(limit(format!(
                    "fusion {name}: a step exceeds the limit of {MAX_FUSION_ALTERNATIVES} alternatives (MAX_FUSION_ALTERNATIVES)"
                )));
            }
            if let Some(bad) = chain.iter().flatten().find(|o| o.is_empty()) {
                return Err(RuleError {
                    path: path.to_string(),
                    line,
                    col: 1,
                    message: format!("fusion {name}: empty op name '{bad}' in the chain"),
                    text: Some(name),
                });
            }
            added.push(Fusion {
                name: name.clone(),
                chain,
                doc: d.doc.trim().to_string(),
                origin: format!("{path}:{line}"),
            });
            names.push(name);
        }
        // Replaces by name in one pass, not one pass per pattern.
        let new: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
        self.patterns.retain(|p| !new.contains(p.name.as_str()));
        self.patterns.extend(added);
        if self.patterns.len() > MAX_FUSIONS {
            return Err(RuleError {
                path: path.to_string(),
                line: 1,
                col: 1,
                message: format!(
                    "{} fusion patterns in force, which exceeds the limit of {MAX_FUSIONS} (MAX_FUSIONS)",
                    self.patterns.len()
                ),
                text: None,
            });
        }
        Ok(names)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Fusion> {
        self.patterns.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}
