//! DETAILS.md: every rule's documentation and formulas, rendered through
//! `templates/DETAILS.md.tera` from the rule set itself.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::rules::RuleSet;
use crate::rules::ast::TensorPat;
use crate::rules::render::{latex_name, to_latex, to_text};

/// The template, embedded so `c3 docs` works from any directory.
pub const TEMPLATE: &str = include_str!("../templates/DETAILS.md.tera");
/// One rule's section, which both pages include.
const RULE_TEMPLATE: &str = include_str!("../templates/rule.md.tera");
/// A pack's page (`c3 docs --rules PACK`).
const PACK_TEMPLATE: &str = include_str!("../templates/PACK.md.tera");

/// The templates, each under the name the others include it by.
fn templates() -> Result<tera::Tera> {
    let mut tera = tera::Tera::new();
    tera.add_raw_templates([
        ("rule.md", RULE_TEMPLATE),
        ("DETAILS.md", TEMPLATE),
        ("PACK.md", PACK_TEMPLATE),
    ])
    .map_err(|e| Error::Usage(format!("templates/: {e}")))?;
    Ok(tera)
}

/// One trailing newline, no trailing spaces, no run of blank lines: the
/// file is checked byte for byte.
fn tidy(out: &str) -> String {
    let mut cleaned: String = out
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n");
    while cleaned.contains("\n\n\n") {
        cleaned = cleaned.replace("\n\n\n", "\n\n");
    }
    cleaned.trim().to_string() + "\n"
}

/// The page of a pack's rules (`ops`, qualified names, as `c3 rules
/// check` lists them), each as DETAILS.md shows a rule, with what it
/// overrides.
pub fn render_pack(set: &RuleSet, ops: &[String], pack: &str) -> Result<String> {
    let rules: Vec<RuleDoc> = ops
        .iter()
        .filter_map(|q| set.find(q))
        .map(rule_doc)
        .collect();
    let mut ctx = tera::Context::new();
    ctx.insert("pack", pack);
    ctx.insert("rule_count", &rules.len());
    ctx.insert("rules", &rules);
    let out = templates()?
        .render("PACK.md", &ctx)
        .map_err(|e| Error::Usage(format!("templates/PACK.md.tera: {e}")))?;
    Ok(tidy(&out))
}

/// A page's sections by heading (`### Conv`, `## Training`), in order; the
/// text before the first heading is under `""`.
fn sections(text: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = vec![("", String::new())];
    for line in text.lines() {
        if line.starts_with('#') {
            out.push((line, String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// Each heading's first section, to look a heading up once.
fn first_sections<'a>(list: &'a [(&'a str, String)]) -> rustc_hash::FxHashMap<&'a str, &'a String> {
    let mut m = rustc_hash::FxHashMap::default();
    for (k, v) in list {
        m.entry(*k).or_insert(v);
    }
    m
}

/// How `new` differs from `old`, section by section: the rules (`###`
/// headings) whose text changed, came or went, and the first section that
/// differs (`None` when none does).
pub fn changes(old: &str, new: &str) -> (Vec<String>, Option<String>) {
    let (a, b) = (sections(old), sections(new));
    let (in_a, in_b) = (first_sections(&a), first_sections(&b));
    let mut changed = Vec::new();
    let mut first = None;
    for (h, body) in &b {
        if in_a.get(h) != Some(&body) {
            if first.is_none() {
                first = Some(h.trim_start_matches('#').trim().to_string());
            }
            if let Some(rule) = h.strip_prefix("### ") {
                changed.push(rule.to_string());
            }
        }
    }
    for (h, _) in &a {
        if !in_b.contains_key(h) {
            if first.is_none() {
                first = Some(h.trim_start_matches('#').trim().to_string());
            }
            if let Some(rule) = h.strip_prefix("### ") {
                changed.push(format!("{rule} (gone)"));
            }
        }
    }
    (changed, first)
}

#[derive(Serialize)]
struct NamedFormula {
    name: String,
    /// The name as LaTeX (underscores escaped).
    tex: String,
    latex: String,
    text: String,
}

#[derive(Serialize)]
struct RuleDoc {
    op: String,
    qualified: String,
    anchor: String,
    domain: String,
    summary: String,
    doc: String,
    source: String,
    inputs: String,
    outputs: String,
    attrs: Vec<NamedFormula>,
    lets: Vec<NamedFormula>,
    formulas: Vec<NamedFormula>,
    params: Vec<NamedFormula>,
    unsupported: Option<String>,
    /// For a pack's rule over one in force: what it overrides.
    overrides: Option<String>,
    /// The rule's backward formulas, one row each.
    backward: Vec<NamedFormula>,
    /// What the backward keeps from the forward (`saves:`).
    saves: Option<String>,
    /// Without a `backward:` section: its category's default, or none.
    backward_default: Option<String>,
}

#[derive(Serialize)]
struct BackwardDefaultDoc {
    categories: String,
    kind: String,
    flops: String,
    mread: String,
    mwrite: String,
    saves: String,
}

#[derive(Serialize)]
struct OptimizerDoc {
    name: String,
    states: u64,
    flops_fma: u64,
    flops: u64,
    doc: String,
}

#[derive(Serialize)]
struct TimeNameDoc {
    name: &'static str,
    doc: &'static str,
}

#[derive(Serialize)]
struct FusionDoc {
    name: String,
    chain: String,
    doc: String,
}

#[derive(Serialize)]
struct DeviceDoc {
    key: String,
    name: String,
    fp32: String,
    tf32: String,
    fp16: String,
    bf16: String,
    fp8: String,
    int8: String,
    bandwidth: String,
    source: String,
}

#[derive(Serialize)]
struct Category {
    name: String,
    rules: Vec<RuleDoc>,
}

/// A GitHub-style heading anchor.
fn anchor(s: &str) -> String {
    s.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '_' => Some(c),
            ' ' => Some('-'),
            _ => None,
        })
        .collect()
}

fn patterns_latex(p: &[TensorPat]) -> String {
    p.iter()
        .map(|t| {
            let mut s = latex_name(&t.name);
            if t.variadic {
                s.push_str("_{1..n}");
            } else if let Some(dims) = &t.dims {
                let inner: Vec<String> = dims
                    .iter()
                    .map(|d| match d {
                        crate::rules::ast::DimPat::Fixed(n) => n.to_string(),
                        crate::rules::ast::DimPat::Name(n) => latex_name(n),
                        crate::rules::ast::DimPat::Rest(n) => format!("{}\\ldots", latex_name(n)),
                    })
                    .collect();
                s.push_str(&format!("\\left[{}\\right]", inner.join(", ")));
            }
            if t.optional {
                s.push_str("^{?}");
            }
            s
        })
        .collect::<Vec<_>>()
        .join(",\\ ")
}

/// `docs --check` reads at most this much of the file it compares.
pub const MAX_DOCS_BYTES: u64 = 16 * 1024 * 1024;

/// The file `docs --check` compares, read with a bound (a `/proc` file or a
/// device reports no size to trust).
pub fn read_bounded(path: &str) -> Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_DOCS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > MAX_DOCS_BYTES {
        return Err(Error::Input {
            path: path.to_string(),
            message: format!("larger than the limit of {MAX_DOCS_BYTES} bytes"),
        });
    }
    // Not UTF-8 cannot equal the rendered text: compare it as it is.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A rule's section as the templates show it.
fn rule_doc(r: &crate::rules::CostRule) -> RuleDoc {
    let nf = |name: &str, f: &crate::rules::Formula| NamedFormula {
        name: name.to_string(),
        tex: latex_name(name),
        latex: to_latex(&f.ast),
        text: to_text(&f.ast),
    };
    RuleDoc {
        op: r.op.clone(),
        qualified: r.qualified_name(),
        anchor: anchor(&r.qualified_name()),
        domain: crate::ir::domain_shown(&r.domain).to_string(),
        summary: r.summary.clone(),
        doc: r.doc.clone(),
        source: format!("{}:{}", r.origin.file, r.origin.line),
        inputs: patterns_latex(&r.inputs),
        outputs: patterns_latex(&r.outputs),
        attrs: r
            .attrs
            .iter()
            .map(|a| NamedFormula {
                name: a.name.clone(),
                tex: latex_name(&a.name),
                latex: a
                    .default
                    .as_ref()
                    .map_or(String::new(), |d| to_latex(&d.ast)),
                text: a
                    .default
                    .as_ref()
                    .map_or("(none)".into(), |d| to_text(&d.ast)),
            })
            .collect(),
        lets: r.lets.iter().map(|(n, f)| nf(n, f)).collect(),
        formulas: r
            .formulas()
            .into_iter()
            .map(|(name, f)| match name {
                "flops" => nf("FLOPs", f),
                "iops" => nf("IOPs", f),
                _ => nf(name, f),
            })
            // The kernel class a calibrated device times apart.
            .chain(r.class.iter().map(|f| nf("class", f)))
            .chain(r.calls.iter().map(|f| nf("calls", f)))
            // Seconds on a device, over its time model; its `/` is exact.
            .chain(r.time.iter().map(|f| NamedFormula {
                latex: crate::rules::render::to_latex_real(&f.ast),
                ..nf("time (s)", f)
            }))
            .collect(),
        params: r.params.iter().map(|(n, f)| nf(n, f)).collect(),
        unsupported: r.unsupported.clone(),
        overrides: r.overrides.as_ref().map(overrides_line),
        backward: r
            .backward
            .iter()
            .flat_map(|b| b.grads.iter())
            .flat_map(|(_, input, fs)| {
                ["FLOPs", "mread", "mwrite"]
                    .into_iter()
                    .zip(fs)
                    .map(move |(what, f)| {
                        let mut n = nf(what, f);
                        n.name = format!("backward ∂{input}: {what}");
                        n
                    })
            })
            .collect(),
        saves: r.backward.as_ref().map(|b| {
            b.saves_text
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "nothing".into())
        }),
        backward_default: match &r.backward {
            Some(_) => None,
            None => Some(
                crate::cost::training::DefaultKind::of(&r.category)
                    .map_or("none".to_string(), |k| format!("{k:?}").to_lowercase()),
            ),
        },
    }
}

/// What a pack's rule overrides, as its page says it.
fn overrides_line(o: &crate::rules::partial::Overrides) -> String {
    format!(
        "Overrides the {} rule in `{}:{}`: gives {}{}.",
        if o.base.builtin { "built-in" } else { "pack's" },
        o.base.file,
        o.base.line,
        o.fields.join(", "),
        if o.taken.is_empty() {
            String::new()
        } else {
            format!("; takes {} from it", o.taken.join(", "))
        }
    )
}

/// Renders DETAILS.md for a rule set.
pub fn render(rules: &RuleSet) -> Result<String> {
    let mut categories: Vec<Category> = Vec::new();
    // Sections follow the operator families (one rule file each), in the
    // order of the built-in files; a pack's files come after, by name.
    let family = |r: &crate::rules::CostRule| -> (usize, String) {
        let file = r.origin.file.to_string();
        let rank = crate::rules::BUILTIN_RULES
            .iter()
            .position(|(p, _)| *p == file)
            .unwrap_or(usize::MAX);
        let stem = std::path::Path::new(&file)
            .file_stem()
            .map_or(file.clone(), |s| s.to_string_lossy().into_owned());
        (rank, stem)
    };
    let mut sorted: Vec<_> = rules.iter().map(|r| (family(r), r)).collect();
    sorted.sort_by(|(fa, a), (fb, b)| {
        (fa, a.domain.as_str(), a.op.as_str()).cmp(&(fb, b.domain.as_str(), b.op.as_str()))
    });
    for ((_, family), r) in sorted {
        let doc = rule_doc(r);
        match categories.iter_mut().find(|c| c.name == family) {
            Some(c) => c.rules.push(doc),
            None => categories.push(Category {
                name: family,
                rules: vec![doc],
            }),
        }
    }
    let tera = templates()?;
    let mut ctx = tera::Context::new();
    ctx.insert("categories", &categories);
    let devices: Vec<DeviceDoc> = rules
        .devices
        .iter()
        .map(|d| {
            let tf = |p: &str| d.peak_tera(p).map_or("-".to_string(), |v| format!("{v}"));
            DeviceDoc {
                key: d.key.clone(),
                name: d.name.clone(),
                fp32: tf("fp32"),
                tf32: tf("tf32"),
                fp16: tf("fp16"),
                bf16: tf("bf16"),
                fp8: tf("fp8"),
                int8: tf("int8"),
                bandwidth: format!("{}", d.bandwidth_giga()),
                source: d.source.clone(),
            }
        })
        .collect();
    ctx.insert("devices", &devices);
    // The figures a rule's `time:` formula reads, from the list that binds them.
    let time_names: Vec<TimeNameDoc> = crate::rules::time_formula::TIME_NAMES
        .iter()
        .map(|&(name, doc)| TimeNameDoc { name, doc })
        .collect();
    ctx.insert("time_names", &time_names);
    // Training: the backward's defaults by category, and the optimizers.
    use crate::cost::training::{DEFAULTS, OPTIMIZERS};
    let mut kinds: Vec<BackwardDefaultDoc> = Vec::new();
    for (category, kind) in DEFAULTS {
        let name = format!("{kind:?}").to_lowercase();
        match kinds.iter_mut().find(|k| k.kind == name) {
            Some(k) => {
                k.categories.push_str(", ");
                k.categories.push_str(category);
            }
            None => {
                let [flops, mread, mwrite, saves] = kind.formulas();
                kinds.push(BackwardDefaultDoc {
                    categories: category.to_string(),
                    kind: name,
                    flops: flops.into(),
                    mread: mread.into(),
                    mwrite: mwrite.into(),
                    saves: saves.into(),
                });
            }
        }
    }
    ctx.insert("backward_defaults", &kinds);
    let optimizers: Vec<OptimizerDoc> = OPTIMIZERS
        .iter()
        .map(|o| OptimizerDoc {
            name: o.name.into(),
            states: o.states,
            flops_fma: o.flops_fma,
            flops: o.flops,
            doc: o.doc.into(),
        })
        .collect();
    ctx.insert("optimizers", &optimizers);
    // The built-in packs and the fused pack's patterns.
    let mut fused = RuleSet::empty();
    fused.load_pack("fused")?;
    let patterns: Vec<FusionDoc> = fused
        .fusions
        .iter()
        .map(|f| FusionDoc {
            name: f.name.clone(),
            // No `|` inside a Markdown table: alternatives read "a / b".
            chain: f
                .chain
                .iter()
                .map(|s| s.join(" / "))
                .collect::<Vec<_>>()
                .join(" → "),
            doc: f.doc.clone(),
        })
        .collect();
    ctx.insert("fusions", &patterns);
    // The sparse pack's rules, with their FLOPs and read formulas.
    let mut sparse = RuleSet::empty();
    sparse.load_pack("sparse")?;
    let sparse_rules: Vec<serde_json::Value> = sparse
        .iter()
        .map(|r| {
            let let_text = r
                .lets
                .iter()
                .map(|(n, f)| format!("${} = {}$", latex_name(n), to_latex(&f.ast)))
                .collect::<Vec<_>>()
                .join(", ");
            serde_json::json!({
                "op": r.op,
                "lets": let_text,
                "flops": to_latex(&r.flops.ast),
                "mread": to_latex(&r.mread.ast),
            })
        })
        .collect();
    ctx.insert("sparse_rules", &sparse_rules);
    let packs: Vec<serde_json::Value> = crate::rules::BUILTIN_PACKS
        .iter()
        .map(|p| serde_json::json!({"name": p.name, "summary": p.summary}))
        .collect();
    ctx.insert("packs", &packs);
    ctx.insert("rule_count", &rules.len());
    let out = tera
        .render("DETAILS.md", &ctx)
        .map_err(|e| Error::Usage(format!("templates/DETAILS.md.tera: {e}")))?;
    Ok(tidy(&out))
}

/// Whether the file at `path` holds exactly `expected` (for `docs --check`).
/// Anything but a regular file is refused unopened, as a bad `-o` (a FIFO
/// nobody writes would block the open, a device may never end); a file is
/// read at most one byte past `expected`: a longer file differs.
pub fn is_current(path: &str, expected: &str) -> Result<bool> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::Usage(format!(
            "docs --check -o {}: not a regular file (a FIFO, a device, a folder); --check compares a file",
            crate::report::text::shown(path)
        )));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let bytes =
        crate::ir::read_bounded(file, expected.len() as u64).map_err(|e| Error::io(path, e))?;
    Ok(bytes.is_some_and(|b| b == expected.as_bytes()))
}
