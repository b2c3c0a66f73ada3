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
        for (name, d) in defs.0 {
            let line = text
                .lines()
                .position(|l| l.starts_with(&format!("{name}:")))
                .map_or(1, |i| i + 1);
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
            if let Some(bad) = chain.iter().flatten().find(|o| o.is_empty()) {
                return Err(RuleError {
                    path: path.to_string(),
                    line,
                    col: 1,
                    message: format!("fusion {name}: empty op name '{bad}' in the chain"),
                    text: Some(name),
                });
            }
            self.patterns.retain(|p| p.name != name);
            self.patterns.push(Fusion {
                name: name.clone(),
                chain,
                doc: d.doc.trim().to_string(),
                origin: format!("{path}:{line}"),
            });
            names.push(name);
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
