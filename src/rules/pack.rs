//! The rule set in force: the built-in rules, then packs loaded over them.

use std::collections::BTreeMap;
use std::path::Path;

use super::rule::{CostRule, SourceFile};
use super::yaml::RuleFileDef;
use crate::device::Catalog;
use crate::error::{Error, RuleError};
use crate::fusion::Fusions;

/// The built-in rule files, embedded so `c3` works from any directory.
pub const BUILTIN_RULES: &[(&str, &str)] = &[
    (
        "rules/activation.yaml",
        include_str!("../../rules/activation.yaml"),
    ),
    ("rules/math.yaml", include_str!("../../rules/math.yaml")),
    ("rules/nn.yaml", include_str!("../../rules/nn.yaml")),
    (
        "rules/normalization.yaml",
        include_str!("../../rules/normalization.yaml"),
    ),
    (
        "rules/pooling.yaml",
        include_str!("../../rules/pooling.yaml"),
    ),
    (
        "rules/reduction.yaml",
        include_str!("../../rules/reduction.yaml"),
    ),
    ("rules/tensor.yaml", include_str!("../../rules/tensor.yaml")),
    // Families added after the original tool's operators, one file each.
    (
        "rules/indexing.yaml",
        include_str!("../../rules/indexing.yaml"),
    ),
    ("rules/logic.yaml", include_str!("../../rules/logic.yaml")),
    ("rules/loss.yaml", include_str!("../../rules/loss.yaml")),
    ("rules/ml.yaml", include_str!("../../rules/ml.yaml")),
    (
        "rules/strings.yaml",
        include_str!("../../rules/strings.yaml"),
    ),
    (
        "rules/training.yaml",
        include_str!("../../rules/training.yaml"),
    ),
    (
        "rules/quantization.yaml",
        include_str!("../../rules/quantization.yaml"),
    ),
    (
        "rules/recurrent.yaml",
        include_str!("../../rules/recurrent.yaml"),
    ),
    (
        "rules/transformer.yaml",
        include_str!("../../rules/transformer.yaml"),
    ),
    (
        "rules/control.yaml",
        include_str!("../../rules/control.yaml"),
    ),
];

/// A built-in pack: a name users pass to `--rules`, what it is for, its files.
pub struct BuiltinPack {
    pub name: &'static str,
    pub summary: &'static str,
    pub files: &'static [(&'static str, &'static str)],
}

pub const BUILTIN_PACKS: &[BuiltinPack] = &[
    BuiltinPack {
        name: "naive",
        summary: "the default: every layer reads its inputs and writes its outputs (no fusion)",
        files: &[],
    },
    BuiltinPack {
        name: "fused",
        summary: "the fusions a typical inference engine makes (Conv+BN+ReLU, GEMM+bias+activation, attention...)",
        files: &[(
            "rules/packs/fused/fusions.yaml",
            include_str!("../../rules/packs/fused/fusions.yaml"),
        )],
    },
    BuiltinPack {
        name: "chainer",
        summary: "reproduces chainer_computational_cost 0.1.2 to the integer, quirks included",
        files: &[(
            "rules/packs/chainer/chainer.yaml",
            include_str!("../../rules/packs/chainer/chainer.yaml"),
        )],
    },
];

/// Rule files larger than this are refused before they are parsed.
pub const MAX_RULE_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Every rule in force, by (domain, op); later loads override earlier ones.
/// A pack's `devices.yaml` adds to the device catalog.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// Rules by domain, then op: looked up without allocating.
    rules: BTreeMap<String, BTreeMap<String, CostRule>>,
    pub devices: Catalog,
    pub fusions: Fusions,
}

impl RuleSet {
    /// An empty set (no rules at all).
    pub fn empty() -> Self {
        Self::default()
    }

    /// The built-in rules.
    pub fn builtin() -> Result<Self, RuleError> {
        let mut set = Self::empty();
        set.devices = Catalog::builtin()?;
        for (path, text) in BUILTIN_RULES {
            set.add_source(path, text, true)?;
        }
        Ok(set)
    }

    /// Parses one rule file and adds (or overrides) its rules; returns the
    /// qualified names of the ops it defined.
    pub fn add_source(
        &mut self,
        path: &str,
        text: &str,
        builtin: bool,
    ) -> Result<Vec<String>, RuleError> {
        let src = SourceFile::new(path, text, builtin);
        let def: RuleFileDef = serde_saphyr::from_str(text).map_err(|e| yaml_error(&src, &e))?;
        let mut ops = Vec::new();
        for (op, rule_def) in &def.0 {
            let rule = CostRule::compile(op, rule_def, &src)?;
            ops.push(rule.qualified_name());
            self.rules
                .entry(rule.domain.clone())
                .or_default()
                .insert(rule.op.clone(), rule);
        }
        Ok(ops)
    }

    /// Loads a pack: a folder of `*.yaml` files (read in name order), or the
    /// name of a built-in pack.
    pub fn load_pack(&mut self, spec: &str) -> Result<Vec<String>, Error> {
        let path = Path::new(spec);
        if path.is_dir() {
            return self.load_dir(path);
        }
        if let Some(pack) = BUILTIN_PACKS.iter().find(|p| p.name == spec) {
            let mut ops = Vec::new();
            for (file, text) in pack.files {
                ops.extend(self.add_file_text(Path::new(file), file, text, true)?);
            }
            return Ok(ops);
        }
        if path.exists() && path.is_file() {
            return self.load_file(path);
        }
        let names: Vec<&str> = BUILTIN_PACKS.iter().map(|p| p.name).collect();
        Err(Error::Usage(format!(
            "--rules {spec}: no such folder, and no built-in pack of that name (built-in packs: {})",
            names.join(", ")
        )))
    }

    fn load_file(&mut self, path: &Path) -> Result<Vec<String>, Error> {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| Error::io(&shown, e))?;
        if meta.len() > MAX_RULE_FILE_BYTES {
            return Err(Error::Input {
                path: shown,
                message: format!(
                    "rule file is {} bytes, which exceeds the limit of {MAX_RULE_FILE_BYTES} bytes",
                    meta.len()
                ),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(&shown, e))?;
        self.add_file_text(path, &shown, &text, false)
    }

    /// Adds one file of a pack: `devices.yaml` extends the device catalog,
    /// `fusions.yaml` declares fusion patterns, any other file holds rules.
    fn add_file_text(
        &mut self,
        path: &Path,
        shown: &str,
        text: &str,
        builtin: bool,
    ) -> Result<Vec<String>, Error> {
        match path.file_stem().and_then(|s| s.to_str()) {
            Some("devices") => {
                self.devices.add_source(shown, text)?;
                Ok(Vec::new())
            }
            Some("fusions") => {
                self.fusions.add_source(shown, text)?;
                Ok(Vec::new())
            }
            _ => Ok(self.add_source(shown, text, builtin)?),
        }
    }

    /// Loads every `*.yaml` / `*.yml` file of a folder, in name order.
    pub fn load_dir(&mut self, dir: &Path) -> Result<Vec<String>, Error> {
        let shown = dir.display().to_string();
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(&shown, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(Error::Input {
                path: shown,
                message: "no *.yaml rule files in this folder".into(),
            });
        }
        let mut ops = Vec::new();
        for f in files {
            ops.extend(self.load_file(&f)?);
        }
        Ok(ops)
    }

    /// The rule for an op, if any. `domain` `ai.onnx` is the default domain.
    pub fn get(&self, domain: &str, op: &str) -> Option<&CostRule> {
        let domain = if domain == "ai.onnx" { "" } else { domain };
        self.rules.get(domain)?.get(op)
    }

    /// Looks an op up by `Op` or `domain::Op`, case-insensitively when exact fails.
    pub fn find(&self, name: &str) -> Option<&CostRule> {
        let (domain, op) = name.rsplit_once("::").unwrap_or(("", name));
        self.get(domain, op).or_else(|| {
            self.iter().find(|r| {
                r.op.eq_ignore_ascii_case(op) && (domain.is_empty() || r.domain == domain)
            })
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = &CostRule> {
        self.rules.values().flat_map(BTreeMap::values)
    }

    pub fn len(&self) -> usize {
        self.rules.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

/// A YAML or schema error as `path:line:col: message`.
pub(crate) fn yaml_error(src: &SourceFile, e: &serde_saphyr::Error) -> RuleError {
    let (line, col) = e.location().map_or((1, 1), |l| {
        (l.line().max(1) as usize, l.column().max(1) as usize)
    });
    let mut message = e.without_snippet().to_string();
    // serde-saphyr appends the position; we print it in front instead.
    if let Some(i) = message.find(" at line ") {
        message.truncate(i);
    }
    let line_text = src
        .text
        .lines()
        .nth(line - 1)
        .map(str::trim)
        .filter(|t| !t.is_empty());
    RuleError {
        path: src.path.to_string(),
        line,
        col,
        message: message.trim().to_string(),
        text: line_text.map(str::to_string),
    }
}
