//! The rule set in force: the built-in rules, then packs loaded over them.

use std::borrow::Cow;
use std::path::Path;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use super::blocks::Block;
use super::devices::Catalog;
use super::fusions::Fusions;
use super::rule::{CostRule, SourceFile};
use super::yaml::RuleFileDef;
use crate::error::{Error, RuleError};

/// The built-in rule files, embedded so `c3` works from any directory: one
/// per operator family, named like the family's shape file in `src/shape/`
/// (see `shape::FAMILIES`).
pub const BUILTIN_RULES: &[(&str, &str)] = &[
    (
        "rules/activation.yaml",
        include_str!("../../rules/activation.yaml"),
    ),
    ("rules/math.yaml", include_str!("../../rules/math.yaml")),
    ("rules/logic.yaml", include_str!("../../rules/logic.yaml")),
    ("rules/conv.yaml", include_str!("../../rules/conv.yaml")),
    ("rules/matmul.yaml", include_str!("../../rules/matmul.yaml")),
    (
        "rules/pooling.yaml",
        include_str!("../../rules/pooling.yaml"),
    ),
    (
        "rules/normalization.yaml",
        include_str!("../../rules/normalization.yaml"),
    ),
    (
        "rules/quantization.yaml",
        include_str!("../../rules/quantization.yaml"),
    ),
    ("rules/loss.yaml", include_str!("../../rules/loss.yaml")),
    (
        "rules/reduction.yaml",
        include_str!("../../rules/reduction.yaml"),
    ),
    (
        "rules/recurrent.yaml",
        include_str!("../../rules/recurrent.yaml"),
    ),
    (
        "rules/attention.yaml",
        include_str!("../../rules/attention.yaml"),
    ),
    (
        "rules/microsoft.yaml",
        include_str!("../../rules/microsoft.yaml"),
    ),
    ("rules/nchwc.yaml", include_str!("../../rules/nchwc.yaml")),
    ("rules/tensor.yaml", include_str!("../../rules/tensor.yaml")),
    (
        "rules/generator.yaml",
        include_str!("../../rules/generator.yaml"),
    ),
    (
        "rules/indexing.yaml",
        include_str!("../../rules/indexing.yaml"),
    ),
    (
        "rules/sequence.yaml",
        include_str!("../../rules/sequence.yaml"),
    ),
    (
        "rules/resample.yaml",
        include_str!("../../rules/resample.yaml"),
    ),
    ("rules/signal.yaml", include_str!("../../rules/signal.yaml")),
    ("rules/random.yaml", include_str!("../../rules/random.yaml")),
    (
        "rules/strings.yaml",
        include_str!("../../rules/strings.yaml"),
    ),
    (
        "rules/control.yaml",
        include_str!("../../rules/control.yaml"),
    ),
    ("rules/ml.yaml", include_str!("../../rules/ml.yaml")),
    (
        "rules/training.yaml",
        include_str!("../../rules/training.yaml"),
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
        name: "sparse",
        summary: "sparse kernels: Gemm, MatMul, Conv and ConvTranspose count only their constant weight's nonzeros (`nnz`, `--prune`) and read it as compressed rows",
        files: &[(
            "rules/packs/sparse/sparse.yaml",
            include_str!("../../rules/packs/sparse/sparse.yaml"),
        )],
    },
    BuiltinPack {
        name: "chainer",
        summary: "reproduces chainer_computational_cost 0.1.2 to the integer, quirks included",
        files: &[
            (
                "rules/packs/chainer/chainer.yaml",
                include_str!("../../rules/packs/chainer/chainer.yaml"),
            ),
            (
                "rules/packs/chainer/devices.yaml",
                include_str!("../../rules/packs/chainer/devices.yaml"),
            ),
        ],
    },
];

/// Rule files larger than this are refused before they are parsed.
pub const MAX_RULE_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// `*.yaml` files one pack folder may hold.
pub const MAX_PACK_FILES: usize = 256;

/// Reads one rule file, counting its bytes as they are read (a /proc file
/// reports a size of 0). Anything but a regular file is refused unopened,
/// so a FIFO cannot block the read.
fn read_rule_file(path: &Path, shown: &str) -> Result<String, Error> {
    let bad = |message: String| Error::Input {
        path: shown.to_string(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| Error::io(shown, e))?;
    if !meta.is_file() {
        return Err(bad("is not a regular file".into()));
    }
    if meta.len() > MAX_RULE_FILE_BYTES {
        return Err(bad(format!(
            "rule file is {} bytes, which exceeds the limit of {MAX_RULE_FILE_BYTES} bytes",
            meta.len()
        )));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(shown, e))?;
    let bytes = crate::ir::read_bounded(file, MAX_RULE_FILE_BYTES)
        .map_err(|e| Error::io(shown, e))?
        .ok_or_else(|| {
            bad(format!(
                "rule file exceeds the limit of {MAX_RULE_FILE_BYTES} bytes (MAX_RULE_FILE_BYTES)"
            ))
        })?;
    String::from_utf8(bytes).map_err(|_| bad("rule file is not UTF-8 text".into()))
}

/// Every rule in force, by (domain, op); later loads override earlier ones.
/// A pack's `devices.yaml` adds to the device catalog.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// Rules by domain ([`crate::ir::domain_lookup_key`]), then op: looked
    /// up without allocating. A built-in rule's names are the index's own
    /// (`'static`), so making the set allocates no name.
    rules: FxHashMap<Cow<'static, str>, FxHashMap<Cow<'static, str>, Entry>>,
    pub devices: Catalog,
    pub fusions: Fusions,
}

/// A built-in rule's place: its file in [`BUILTIN_RULES`], its block, and
/// its definition as `build.rs` read it (see [`super::packed`]).
#[derive(Debug, Clone, Copy)]
struct Builtin {
    file: usize,
    block: &'static Block<'static>,
    packed: Option<&'static [u8]>,
}

/// One rule of a set. A built-in rule is compiled the first time it is looked
/// up, so a run pays only for the operators its model uses (compiling all 244
/// took about 30 ms, most of a small model's run). The rule is boxed: a
/// compiled rule is over a kilobyte, and the 244 entries of the built-in set
/// are made on every run while only a few are ever compiled.
#[derive(Debug, Clone)]
struct Entry {
    /// Where a built-in rule not compiled yet is read from.
    block: Option<Builtin>,
    rule: OnceLock<Box<CostRule>>,
}

impl Entry {
    fn compiled(rule: CostRule) -> Self {
        Self {
            block: None,
            rule: OnceLock::from(Box::new(rule)),
        }
    }

    fn rule(&self, op: &str) -> &CostRule {
        self.rule.get_or_init(|| {
            let builtin = self
                .block
                .expect("a rule without a block was compiled when added");
            // Every built-in rule is compiled by the tests, so this cannot fail
            // for a build that passed them.
            Box::new(
                compile_builtin(builtin)
                    .unwrap_or_else(|e| panic!("built-in rule {op} does not compile: {e}")),
            )
        })
    }
}

/// Each built-in block's definition and parsed texts, written by `build.rs`
/// with [`super::packed::write_def`].
static BUILTIN_PACKED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/builtin_rules.bin"));

/// The blocks of every file in `rules/` (`rules/conv.yaml`), found by
/// `build.rs` with [`super::blocks::scan_blocks`] when c3 was built, and
/// where each block's definition lies in [`BUILTIN_PACKED`] (`None` for a
/// block the build could not read: a run reads its YAML and reports why).
type BuiltinFile = (
    &'static str,
    &'static [Block<'static>],
    &'static [Option<(usize, usize)>],
);
static BUILTIN_BLOCKS: &[BuiltinFile] = &include!(concat!(env!("OUT_DIR"), "/builtin_blocks.rs"));

/// A built-in rule file's blocks, in the order they are written.
fn builtin_file(path: &str) -> Option<&'static BuiltinFile> {
    BUILTIN_BLOCKS.iter().find(|(p, ..)| *p == path)
}

/// The blocks of a built-in rule file, in the order they are written.
fn builtin_blocks(path: &str) -> &'static [Block<'static>] {
    builtin_file(path).map_or(&[], |(_, blocks, _)| blocks)
}

/// Compiles one built-in rule from its block alone: from the definition
/// `build.rs` read, or from the block's YAML when it read none.
fn compile_builtin(builtin: Builtin) -> Result<CostRule, RuleError> {
    let Builtin {
        file,
        block,
        packed,
    } = builtin;
    let (path, text) = BUILTIN_RULES[file];
    let op = block.op;
    let src = SourceFile::block(path, text, block.range.clone(), block.line, op);
    let mut def = match packed.and_then(super::packed::read_def) {
        Some(def) => def,
        None => {
            let file: RuleFileDef = serde_saphyr::from_str(&text[block.range.clone()])
                .map_err(|e| yaml_error(&src, &e))?;
            match <[_; 1]>::try_from(file.0) {
                Ok([(name, def)]) if name == op => def,
                _ => {
                    return Err(src.error_at(
                        src.base,
                        format!("the block of {op} holds other keys"),
                        None,
                    ));
                }
            }
        }
    };
    // The block alone does not hold the file's `domain:` key.
    if !block.own_domain && !block.domain.is_empty() {
        def.domain.get_or_insert_with(|| block.domain.to_string());
    }
    CostRule::compile(op, &def, &src)
}

impl RuleSet {
    /// A device of the catalog (or of a pack) by name or alias; an unknown
    /// one is a usage error listing the known ones.
    pub fn device(&self, name: &str) -> crate::error::Result<&crate::rules::devices::Device> {
        self.devices.find(name).ok_or_else(|| {
            let names: Vec<&str> = self.devices.iter().map(|d| d.key.as_str()).collect();
            let hint = crate::error::did_you_mean(
                name,
                self.devices.iter().flat_map(|d| {
                    std::iter::once(d.key.as_str()).chain(d.aliases.iter().map(String::as_str))
                }),
            );
            crate::error::Error::Usage(format!(
                "--device {name}: unknown device{hint} (known: {})",
                names.join(", ")
            ))
        })
    }

    /// An empty set (no rules at all).
    pub fn empty() -> Self {
        Self::default()
    }

    /// The built-in rules, each compiled when first looked up.
    pub fn builtin() -> Result<Self, RuleError> {
        let mut set = Self::empty();
        set.devices = Catalog::builtin()?;
        for (file, (path, _)) in BUILTIN_RULES.iter().enumerate() {
            let Some((_, blocks, packed)) = builtin_file(path) else {
                continue;
            };
            for (block, packed) in blocks.iter().zip(*packed) {
                set.rules
                    .entry(Cow::Borrowed(crate::ir::domain_lookup_key(block.domain)))
                    .or_default()
                    .insert(
                        Cow::Borrowed(block.op),
                        Entry {
                            block: Some(Builtin {
                                file,
                                block,
                                packed: packed.map(|(start, end)| &BUILTIN_PACKED[start..end]),
                            }),
                            rule: OnceLock::new(),
                        },
                    );
            }
        }
        Ok(set)
    }

    /// The built-in rules, every one compiled now from its whole file: what
    /// the tests use to report a broken built-in rule as an error.
    pub fn builtin_compiled() -> Result<Self, RuleError> {
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
        let (rules, mut errors) = compile_source(path, text, builtin)?;
        if !errors.is_empty() {
            return Err(errors.swap_remove(0));
        }
        Ok(self.insert_all(rules))
    }

    /// Parses one file of a pack and adds (or overrides) its rules: a rule
    /// for an op in force may give only the fields it changes.
    pub fn add_pack_source(
        &mut self,
        path: &str,
        text: &str,
        builtin: bool,
    ) -> Result<Vec<String>, RuleError> {
        let (rules, mut errors) = compile_pack_source(path, text, builtin, self)?;
        if !errors.is_empty() {
            return Err(errors.swap_remove(0));
        }
        Ok(self.insert_all(rules))
    }

    /// Puts compiled rules in the set; returns their qualified names.
    fn insert_all(&mut self, rules: Vec<CostRule>) -> Vec<String> {
        let mut ops = Vec::new();
        for rule in rules {
            ops.push(rule.qualified_name());
            self.rules
                .entry(Cow::Owned(
                    crate::ir::domain_lookup_key(&rule.domain).to_string(),
                ))
                .or_default()
                .insert(Cow::Owned(rule.op.clone()), Entry::compiled(rule));
        }
        ops
    }

    /// The built-in rules with packs loaded over them, in order.
    pub fn with_packs(packs: &[String]) -> Result<Self, Error> {
        let mut set = Self::builtin()?;
        for p in packs {
            set.load_pack(p)?;
        }
        Ok(set)
    }

    /// Loads a pack over the built-in rules to check it (`c3 rules check`):
    /// a folder, a rule file or a built-in pack's name. Every file is read
    /// and every rule compiled on its own, so that all the pack's errors are
    /// found at once, not only the first.
    pub fn check_pack(spec: &str) -> Result<PackCheck, Error> {
        let builtin = Self::builtin()?;
        let mut set = builtin.clone();
        let path = Path::new(spec);
        let files: Vec<(String, String, bool)> = if path.is_dir() {
            yaml_files(path)?
                .into_iter()
                .map(|f| {
                    let shown = f.display().to_string();
                    Ok((shown.clone(), read_rule_file(&f, &shown)?, false))
                })
                .collect::<Result<_, Error>>()?
        } else if let Some(pack) = BUILTIN_PACKS.iter().find(|p| p.name == spec) {
            pack.files
                .iter()
                .map(|(f, t)| (f.to_string(), t.to_string(), true))
                .collect()
        } else if path.is_file() {
            vec![(spec.to_string(), read_rule_file(path, spec)?, false)]
        } else {
            return Err(no_pack(spec, "no such folder or file"));
        };
        let mut check = PackCheck::default();
        for (shown, text, is_builtin) in files {
            let added = match Path::new(&shown).file_stem().and_then(|s| s.to_str()) {
                Some("devices") => set.devices.add_source(&shown, &text).map(|names| {
                    check.devices.extend(names);
                    Vec::new()
                }),
                Some("fusions") => set.fusions.add_source(&shown, &text).map(|names| {
                    check.fusions.extend(names);
                    Vec::new()
                }),
                _ => compile_pack_source(&shown, &text, is_builtin, &set).map(|(rules, errors)| {
                    check.errors.extend(errors);
                    for r in &rules {
                        if let Some(o) = &r.overrides {
                            check.overrides.push((r.qualified_name(), o.fields.clone()));
                        }
                    }
                    rules
                }),
            };
            match added {
                Ok(rules) => check.ops.extend(set.insert_all(rules)),
                Err(e) => check.errors.push(e),
            }
        }
        check.overridden = check.overrides.len();
        let _ = builtin;
        Ok(check)
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
        Err(no_pack(&format!("--rules {spec}"), "no such folder"))
    }

    fn load_file(&mut self, path: &Path) -> Result<Vec<String>, Error> {
        let shown = path.display().to_string();
        let text = read_rule_file(path, &shown)?;
        self.add_file_text(path, &shown, &text, false)
    }

    /// Loads a pack given as (file name, text) pairs, as [`RuleSet::load_dir`]
    /// loads a folder's files: in name order, each by its name's kind
    /// (`devices.yaml`, `fusions.yaml`, rules). For the fuzz targets.
    pub fn load_texts(&mut self, files: &[(String, String)]) -> Result<Vec<String>, Error> {
        if files.len() > MAX_PACK_FILES {
            return Err(Error::Input {
                path: "pack".into(),
                message: format!(
                    "the pack exceeds the limit of {MAX_PACK_FILES} *.yaml files (MAX_PACK_FILES)"
                ),
            });
        }
        let mut sorted: Vec<&(String, String)> = files.iter().collect();
        sorted.sort();
        let mut ops = Vec::new();
        for (name, text) in sorted {
            ops.extend(self.add_file_text(Path::new(name), name, text, false)?);
        }
        Ok(ops)
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
            _ => Ok(self.add_pack_source(shown, text, builtin)?),
        }
    }

    /// Loads every `*.yaml` / `*.yml` file of a folder, in name order. Each
    /// must be a regular file inside the folder: a link that leads out of
    /// it, or anything that is not a regular file, is refused unread.
    pub fn load_dir(&mut self, dir: &Path) -> Result<Vec<String>, Error> {
        let mut ops = Vec::new();
        for f in yaml_files(dir)? {
            ops.extend(self.load_file(&f)?);
        }
        Ok(ops)
    }

    /// The rule for an op, if any. `domain` `ai.onnx` is the default domain.
    pub fn get(&self, domain: &str, op: &str) -> Option<&CostRule> {
        Some(
            self.rules
                .get(crate::ir::domain_lookup_key(domain))?
                .get(op)?
                .rule(op),
        )
    }

    /// Whether a rule of the set reads a weight's nonzeros (`nnz()`), so
    /// that an estimate must count them. Only a pack's rules can: no
    /// built-in rule does (a test holds them to it), so the built-in ones
    /// are not compiled to ask.
    pub fn reads_nonzeros(&self) -> bool {
        self.rules.values().flat_map(|ops| ops.values()).any(|e| {
            e.block.is_none() && e.rule.get().is_some_and(|r| !r.nonzero_inputs().is_empty())
        })
    }

    /// Looks an op up by `Op` or `domain::Op`, case-insensitively when exact fails.
    pub fn find(&self, name: &str) -> Option<&CostRule> {
        let (domain, op) = name.rsplit_once("::").unwrap_or(("", name));
        let domain = crate::ir::domain_key(domain);
        self.get(domain, op).or_else(|| {
            self.entries()
                .find(|(d, o, _)| o.eq_ignore_ascii_case(op) && (domain.is_empty() || *d == domain))
                .map(|(_, o, e)| e.rule(o))
        })
    }

    /// (domain, op, entry), sorted by domain then op.
    fn entries(&self) -> impl Iterator<Item = (&str, &str, &Entry)> {
        let mut all: Vec<(&str, &str, &Entry)> = self
            .rules
            .iter()
            .flat_map(|(d, ops)| {
                let d = crate::ir::domain_key(d);
                ops.iter().map(move |(o, e)| (d, o.as_ref(), e))
            })
            .collect();
        all.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        all.into_iter()
    }

    /// Every rule, sorted by domain then op; compiles the built-in ones not
    /// compiled yet.
    pub fn iter(&self) -> impl Iterator<Item = &CostRule> {
        self.entries().map(|(_, op, e)| e.rule(op))
    }

    pub fn len(&self) -> usize {
        self.rules.values().map(|ops| ops.len()).sum()
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
    // A built-in block is parsed alone: its lines start at the block's line.
    let line = line + src.line_col(src.base).0 - 1;
    let mut message = e.without_snippet().to_string();
    // serde-saphyr appends the position; we print it in front instead.
    if let Some(i) = message.find(" at line ") {
        message.truncate(i);
    }
    // A file that does not show itself one of c3's (`--rules /etc/passwd`,
    // a config of secrets) is named, never quoted: neither its line nor
    // the parser's message, which may hold a value of it.
    if !src.builtin && !shows_itself(src.text, line) {
        return RuleError {
            path: src.path.to_string(),
            line,
            col,
            message: "not a file of c3 rules, devices or fusions (a YAML mapping of names, each a mapping of a rule's, a device's or a fusion's keys); its text is not shown".into(),
            text: None,
        };
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

/// Keys only a rule, a device or a fusion has: a file whose first entry
/// holds one is c3's.
const OWN_KEYS: &[&str] = &[
    "flops",
    "mread",
    "mwrite",
    "backward",
    "peak",
    "bandwidth",
    "chain",
];

/// Whether a file shows itself one of c3's YAML files: its YAML (the whole
/// text, or when that does not parse, the text without the line of the
/// error, or the lines before it) is a mapping whose first entry (a file's
/// `domain:` aside) is a mapping holding one of [`OWN_KEYS`].
fn shows_itself(text: &str, line: usize) -> bool {
    struct Shown(bool);
    impl<'de> serde::Deserialize<'de> for Shown {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(FileVisitor)
        }
    }
    struct FileVisitor;
    impl<'de> serde::de::Visitor<'de> for FileVisitor {
        type Value = Shown;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("anything")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Shown, A::Error> {
            use serde::de::IgnoredAny;
            let mut shown = None;
            while let Some(key) = map.next_key::<String>()? {
                if shown.is_some() || key == super::yaml::FILE_DOMAIN_KEY {
                    map.next_value::<IgnoredAny>()?;
                } else {
                    shown = Some(map.next_value::<Keys>()?.0);
                }
            }
            Ok(Shown(shown.unwrap_or(false)))
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Shown, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(Shown(false))
        }
        fn visit_str<E>(self, _: &str) -> Result<Shown, E> {
            Ok(Shown(false))
        }
        fn visit_bool<E>(self, _: bool) -> Result<Shown, E> {
            Ok(Shown(false))
        }
        fn visit_i64<E>(self, _: i64) -> Result<Shown, E> {
            Ok(Shown(false))
        }
        fn visit_u64<E>(self, _: u64) -> Result<Shown, E> {
            Ok(Shown(false))
        }
        fn visit_f64<E>(self, _: f64) -> Result<Shown, E> {
            Ok(Shown(false))
        }
        fn visit_unit<E>(self) -> Result<Shown, E> {
            Ok(Shown(false))
        }
    }
    /// Whether a mapping holds one of [`OWN_KEYS`] (anything else does not
    /// parse, and the file does not show itself).
    struct Keys(bool);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(KeysVisitor)
        }
    }
    struct KeysVisitor;
    impl<'de> serde::de::Visitor<'de> for KeysVisitor {
        type Value = Keys;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("anything")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
            let mut own = false;
            while let Some(key) = map.next_key::<String>()? {
                own |= OWN_KEYS.contains(&key.as_str());
                map.next_value::<serde::de::IgnoredAny>()?;
            }
            Ok(Keys(own))
        }
    }
    let parsed = |t: &str| serde_saphyr::from_str::<Shown>(t).map(|s| s.0);
    if let Ok(shown) = parsed(text) {
        return shown;
    }
    // Not YAML as a whole: the file without the line the parser stopped
    // at, else the lines before it.
    let lines = || text.split_inclusive('\n').enumerate();
    let without: String = lines()
        .filter(|(i, _)| i + 1 != line)
        .map(|(_, l)| l)
        .collect();
    let before: String = lines()
        .take_while(|(i, _)| i + 1 < line)
        .map(|(_, l)| l)
        .collect();
    parsed(&without)
        .or_else(|_| parsed(&before))
        .unwrap_or(false)
}

/// What `c3 rules check` found in a pack: the ops it defines, how many of
/// them override a built-in rule, its devices and fusions, and every error.
#[derive(Debug, Default)]
pub struct PackCheck {
    pub ops: Vec<String>,
    pub overridden: usize,
    /// Each rule that overrides one in force, with the fields it gives.
    pub overrides: Vec<(String, Vec<&'static str>)>,
    /// The devices and fusions its `devices.yaml` and `fusions.yaml` add.
    pub devices: Vec<String>,
    pub fusions: Vec<String>,
    pub errors: Vec<RuleError>,
}

/// Compiles each rule of a rule file on its own: the rules that compile,
/// and the error of each one that does not. YAML that does not parse is
/// the one error of its file.
fn compile_source(
    path: &str,
    text: &str,
    builtin: bool,
) -> Result<(Vec<CostRule>, Vec<RuleError>), RuleError> {
    let src = SourceFile::new(path, text, builtin);
    let def: RuleFileDef = serde_saphyr::from_str(text).map_err(|e| yaml_error(&src, &e))?;
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for (op, rule_def) in &def.0 {
        match CostRule::compile(op, rule_def, &src) {
            Ok(rule) => rules.push(rule),
            Err(e) => errors.push(e),
        }
    }
    Ok((rules, errors))
}

/// Compiles each rule of a pack's file on its own over the rules in force
/// (`set`): a rule for an op in force takes the fields it does not give
/// from that rule. A rule whose key is no operator of the default domain,
/// with no `domain:` declaring it a custom one, is an error.
fn compile_pack_source(
    path: &str,
    text: &str,
    builtin: bool,
    set: &RuleSet,
) -> Result<(Vec<CostRule>, Vec<RuleError>), RuleError> {
    use super::partial::{PackRuleDef, keep_origins};
    let src = SourceFile::new(path, text, builtin);
    let def: RuleFileDef<PackRuleDef> =
        serde_saphyr::from_str(text).map_err(|e| yaml_error(&src, &e))?;
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for (op, rule_def) in def.0 {
        let at = src.key_offset(&op);
        let err = |m: String| src.error_at(at, m, Some(&op));
        let domain = rule_def.domain.clone();
        let base = set.get(domain.as_deref().unwrap_or(""), &op);
        if domain.is_none() && base.is_none() && !builtin_ops("").contains(&op.as_str()) {
            let ops = builtin_ops("");
            let hint = crate::error::nearest(&op, ops.iter().copied())
                .map_or(String::new(), |n| format!(" (did you mean '{n}'?)"));
            errors.push(err(format!(
                "{op}: no operator '{op}' in ai.onnx{hint}; a custom operator gives its domain (domain: com.example)"
            )));
            continue;
        }
        let given = rule_def.given();
        let full = match rule_def.complete(&op, base, super::yaml::Place::Byte(at)) {
            Ok(d) => d,
            Err(m) => {
                errors.push(err(m));
                continue;
            }
        };
        match CostRule::compile(&op, &full, &src) {
            Ok(mut rule) => {
                if let Some(b) = base {
                    keep_origins(&mut rule, b, &given);
                }
                rules.push(rule)
            }
            Err(e) => errors.push(e),
        }
    }
    Ok((rules, errors))
}

/// The ops of the built-in rule files in `domain` (`""`: ai.onnx).
fn builtin_ops(domain: &str) -> Vec<&'static str> {
    let key = crate::ir::domain_lookup_key(domain);
    BUILTIN_RULES
        .iter()
        .flat_map(|(path, _)| builtin_blocks(path).iter())
        .filter(|b| crate::ir::domain_lookup_key(b.domain) == key)
        .map(|b| b.op)
        .collect()
}

/// A pack folder's `*.yaml` / `*.yml` files, in name order.
fn yaml_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, Error> {
    let shown = dir.display().to_string();
    let bad = |path: &Path, message: String| Error::Input {
        path: path.display().to_string(),
        message,
    };
    let base = dir.canonicalize().map_err(|e| Error::io(&shown, e))?;
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(&shown, e))? {
        let path = entry.map_err(|e| Error::io(&shown, e))?.path();
        if !path.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            continue;
        }
        if files.len() == MAX_PACK_FILES {
            return Err(bad(
                dir,
                format!(
                    "the pack exceeds the limit of {MAX_PACK_FILES} *.yaml files (MAX_PACK_FILES)"
                ),
            ));
        }
        let real = path
            .canonicalize()
            .map_err(|e| Error::io(path.display().to_string(), e))?;
        if real.parent() != Some(base.as_path()) {
            return Err(bad(
                &path,
                "leads outside the pack's folder; a pack's files must be inside it".into(),
            ));
        }
        let kind =
            std::fs::metadata(&real).map_err(|e| Error::io(path.display().to_string(), e))?;
        if !kind.is_file() {
            return Err(bad(
                &path,
                "is not a regular file; a pack's files must be".into(),
            ));
        }
        files.push(path);
    }
    files.sort();
    if files.is_empty() {
        return Err(Error::Input {
            path: shown,
            message: "no *.yaml rule files in this folder".into(),
        });
    }
    Ok(files)
}

/// A pack that names neither a folder, a file nor a built-in pack.
fn no_pack(place: &str, what: &str) -> Error {
    let names: Vec<&str> = BUILTIN_PACKS.iter().map(|p| p.name).collect();
    Error::Usage(format!(
        "{place}: {what}, and no built-in pack of that name (built-in packs: {})",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::super::blocks::scan_blocks;
    use super::*;
    use crate::ir::{AttrValue, DType};
    use crate::rules::CountOptions;

    fn domain_of(d: &super::super::yaml::RuleDef) -> &str {
        crate::ir::domain_key(d.domain.as_deref().unwrap_or(""))
    }

    /// [`RuleSet::reads_nonzeros`] does not compile the built-in rules to
    /// ask them: none may read `nnz()`. A pack's rule that does is seen.
    #[test]
    fn no_builtin_rule_reads_nonzeros_and_a_packs_rule_is_seen_to() {
        let set = RuleSet::builtin_compiled().unwrap_or_else(|e| panic!("{e}"));
        for (domain, op, e) in set.entries() {
            let rule = e.rule(op);
            assert!(
                rule.nonzero_inputs().is_empty(),
                "{domain}::{op} reads nnz()"
            );
        }
        assert!(!set.reads_nonzeros());
        assert!(!RuleSet::builtin().unwrap().reads_nonzeros());
        let root = env!("CARGO_MANIFEST_DIR");
        let sparse = RuleSet::with_packs(&[format!("{root}/rules/packs/sparse/sparse.yaml")])
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(sparse.reads_nonzeros());
    }

    #[test]
    fn every_builtin_rule_compiles_from_its_whole_file() {
        let set = RuleSet::builtin_compiled().unwrap_or_else(|e| panic!("{e}"));
        let keys: usize = BUILTIN_RULES
            .iter()
            .map(|(_, t)| serde_saphyr::from_str::<RuleFileDef>(t).unwrap().0.len())
            .sum();
        // No two files define the same (domain, op): one rule per key.
        assert_eq!(set.len(), keys);
    }

    #[test]
    fn the_line_scan_finds_what_a_full_parse_finds() {
        for (path, text) in BUILTIN_RULES {
            let def: RuleFileDef = serde_saphyr::from_str(text).unwrap();
            let want: Vec<(&str, &str)> = def
                .0
                .iter()
                .map(|(op, d)| (op.as_str(), domain_of(d)))
                .collect();
            let got: Vec<(&str, &str)> = scan_blocks(text)
                .iter()
                .map(|b| (b.op, crate::ir::domain_key(b.domain)))
                .collect();
            assert_eq!(got, want, "{path}");
        }
    }

    /// The index `build.rs` made is the scan of the files compiled in, and
    /// each block's line is where its key is.
    #[test]
    fn the_built_index_is_the_scan_of_each_builtin_file() {
        for (path, text) in BUILTIN_RULES {
            let blocks = builtin_blocks(path);
            assert!(!blocks.is_empty(), "{path}");
            assert_eq!(blocks, scan_blocks(text).as_slice(), "{path}");
            for b in blocks {
                let line = text[b.range.clone()].lines().next().unwrap();
                assert!(line.starts_with(b.op), "{path}: {line}");
                assert_eq!(text.lines().nth(b.line - 1), Some(line), "{path}");
                assert_eq!(
                    SourceFile::new(path, text, true).line_col(b.range.start),
                    (b.line, 1)
                );
            }
        }
    }

    /// Every built-in rule was read when c3 was built, each of its texts
    /// parsed, and what the build wrote reads back as the run's own
    /// reading of the block's YAML and parsing of its texts.
    #[test]
    fn every_builtin_rule_was_read_when_built_as_a_run_reads_it() {
        let mut rules = 0;
        for (path, text) in BUILTIN_RULES {
            let (_, blocks, packed) = builtin_file(path).unwrap();
            assert_eq!(blocks.len(), packed.len(), "{path}");
            for (b, range) in blocks.iter().zip(*packed) {
                let (start, end) =
                    range.unwrap_or_else(|| panic!("{path}: {} was not read when built", b.op));
                let got = super::super::packed::read_def(&BUILTIN_PACKED[start..end]).unwrap();
                let mut file: RuleFileDef = serde_saphyr::from_str(&text[b.range.clone()]).unwrap();
                let (op, mut want) = file.0.pop().unwrap();
                assert_eq!(op, b.op);
                super::super::packed::parse_texts(&mut want);
                let got = format!("{got:?}");
                assert_eq!(got, format!("{want:?}"), "{path}: {op}");
                assert!(!got.contains("tree: None"), "{path}: {op}: {got}");
                rules += 1;
            }
        }
        assert_eq!(rules, RuleSet::builtin().unwrap().len());
    }

    #[test]
    fn a_rule_compiled_from_its_block_equals_the_rule_compiled_from_its_file() {
        let eager = RuleSet::builtin_compiled().unwrap();
        let lazy = RuleSet::builtin().unwrap();
        assert_eq!(lazy.len(), eager.len());
        for r in eager.iter() {
            let l = lazy
                .get(&r.domain, &r.op)
                .unwrap_or_else(|| panic!("{} missing", r.qualified_name()));
            // Debug shows every field: formulas, their code, origins, offsets.
            assert_eq!(format!("{l:?}"), format!("{r:?}"), "{}", r.qualified_name());
        }
    }

    fn conv(x: DType, strides: i64) -> crate::ir::Node {
        let t = |d: DType, dims: &[u64]| {
            Some(crate::ir::TensorFact::new(
                d,
                dims.iter().map(|&n| crate::ir::Dim::Known(n)).collect(),
            ))
        };
        crate::ir::Node {
            name: "c".into(),
            op: "Conv".into(),
            domain: String::new(),
            opset: crate::ir::DEFAULT_OPSET,
            attrs: [("strides".to_string(), AttrValue::Ints(vec![strides; 2]))].into(),
            inputs: vec![
                t(x, &[1, 8, 16, 16]),
                t(DType::Float32, &[8, 8, 3, 3]),
                t(DType::Float32, &[8]),
            ]
            .into(),
            outputs: vec![t(DType::Float32, &[1, 8, 16, 16])].into(),
            bodies: Vec::new(),
        }
    }

    #[test]
    fn remembered_evaluations_follow_options_types_and_attributes() {
        let set = RuleSet::builtin().unwrap();
        let rule = set.get("", "Conv").unwrap();
        let fma = CountOptions::fma(true);
        let no_fma = CountOptions::fma(false);
        for _ in 0..2 {
            // |Y| = 8 * 16 * 16 = 2048 outputs, window = Cg * 3 * 3 = 72.
            let ev = rule.evaluate(&conv(DType::Float32, 1), fma).unwrap();
            assert_eq!(ev.flops, 2048 * 72);
            // Bytes: X 2048 * 4, W 576 * 4, B 8 * 4.
            assert_eq!(ev.mread, 8192 + 2304 + 32);
            // Without FMA and with a bias: 2 * 72 FLOPs per output.
            let ev = rule.evaluate(&conv(DType::Float32, 1), no_fma).unwrap();
            assert_eq!(ev.flops, 2 * 2048 * 72);
            // A float16 X: 2048 * 2 bytes.
            let ev = rule.evaluate(&conv(DType::Float16, 1), fma).unwrap();
            assert_eq!(ev.mread, 4096 + 2304 + 32);
            let ev = rule.evaluate(&conv(DType::Float32, 2), fma).unwrap();
            let s = ev.params.iter().find(|(n, _)| n == "s").unwrap();
            assert_eq!(s.1, evalexpr::Value::Tuple(vec![2.into(), 2.into()]));
        }
        assert_eq!(rule.memo.len(), 4);
    }

    /// A rule of a test file: `|X|` FLOPs, nothing read or written.
    fn rule_text(op: &str, domain: Option<&str>) -> String {
        let domain = domain.map_or(String::new(), |d| format!("  domain: {d}\n"));
        format!(
            "{op}:\n{domain}  category: Test\n  summary: s\n  doc: d\n  inputs: \"X\"\n  \
             outputs: \"Y\"\n  flops: \"|X|\"\n  mread: 0\n  mwrite: 0\n"
        )
    }

    #[test]
    fn a_file_level_domain_is_the_default_of_its_rules() {
        let text = format!(
            "domain: com.example\n\n{}\n{}",
            rule_text("Fused", None),
            rule_text("Plain", Some("ai.onnx"))
        );
        let mut set = RuleSet::empty();
        let ops = set.add_source("pack/example.yaml", &text, false).unwrap();
        // The rule without a domain takes the file's; `ai.onnx` overrides it.
        assert_eq!(ops, ["com.example::Fused", "Plain"]);
        // A file without a `domain:` key means ai.onnx, as before.
        let mut set = RuleSet::empty();
        let ops = set
            .add_source("pack/plain.yaml", &rule_text("Fused", None), false)
            .unwrap();
        assert_eq!(ops, ["Fused"]);
        // Two file-level domains are an error (at the second), not a choice.
        let twice = format!("domain: a\ndomain: b\n{}", rule_text("Fused", None));
        let e = RuleSet::empty()
            .add_source("pack/twice.yaml", &twice, false)
            .unwrap_err();
        let e = e.to_string();
        assert!(
            e.starts_with("pack/twice.yaml:2:1: duplicate mapping key: domain"),
            "{e}"
        );
    }

    #[test]
    fn the_line_scan_reads_a_file_level_domain() {
        let text: &'static str = Box::leak(
            format!(
                "# header\n\ndomain: com.microsoft\n\n{}\n{}",
                rule_text("Fused", None),
                rule_text("Plain", Some("ai.onnx"))
            )
            .into_boxed_str(),
        );
        let got: Vec<(&str, &str, usize)> = scan_blocks(text)
            .iter()
            .map(|b| (b.op, b.domain, b.line))
            .collect();
        // Plain's key follows Fused's lines and a blank one. Domains are as
        // written: `ai.onnx` becomes the default domain's key when compiled.
        let lines = rule_text("Fused", None).lines().count() + 1;
        assert_eq!(
            got,
            [
                ("Fused", "com.microsoft", 5),
                ("Plain", "ai.onnx", 5 + lines)
            ]
        );
        // The built-in com.microsoft rules come from their own family's file.
        let set = RuleSet::builtin().unwrap();
        let a = set.get("com.microsoft", "Attention").unwrap();
        assert_eq!(a.origin.file, "rules/microsoft.yaml");
    }

    #[test]
    fn find_falls_back_to_any_case_and_to_a_domain() {
        let set = RuleSet::builtin().unwrap();
        assert_eq!(set.find("conv").map(|r| r.op.as_str()), Some("Conv"));
        assert_eq!(
            set.find("ai.onnx::Conv").map(|r| r.op.as_str()),
            Some("Conv")
        );
        let a = set.find("com.microsoft::attention").unwrap();
        assert_eq!(
            (a.domain.as_str(), a.op.as_str()),
            ("com.microsoft", "Attention")
        );
        assert!(set.find("NoSuchOp").is_none());
    }
}
