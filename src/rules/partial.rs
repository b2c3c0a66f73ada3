//! A pack's rule as written: every field optional. A rule for an op the
//! rules in force already have gives only what it changes (`flops:`
//! alone, or `mread:` and a `doc:`) and takes the rest from the rule it
//! overrides; a rule for a new op gives every required field.
//!
//! The merge is made on the definitions: the fields taken are the texts of
//! the rule overridden, compiled with the pack's in one scope (a pack that
//! renames a pattern or a `let` has its own formulas see the new names),
//! and each formula taken keeps the origin of the rule it came from.

use serde::Deserialize;

use super::compile::CostRule;
use super::yaml::{BackwardDef, Domained, GradDef, OrderedMap, Place, RuleDef, Scalar, Text};

/// One rule of a pack file, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackRuleDef {
    #[serde(default)]
    pub domain: Option<String>,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub doc: Option<String>,
    #[serde(default)]
    pub inputs: Option<Text>,
    #[serde(default)]
    pub outputs: Option<Text>,
    #[serde(default)]
    pub attrs: Option<OrderedMap<Option<Text>>>,
    #[serde(default, rename = "let")]
    pub lets: Option<OrderedMap<Text>>,
    #[serde(default)]
    pub flops: Option<Text>,
    #[serde(default)]
    pub mread: Option<Text>,
    #[serde(default)]
    pub mwrite: Option<Text>,
    #[serde(default)]
    pub iops: Option<Text>,
    #[serde(default)]
    pub class: Option<Text>,
    #[serde(default)]
    pub calls: Option<Text>,
    #[serde(default)]
    pub time: Option<Text>,
    #[serde(default)]
    pub params: Option<OrderedMap<Text>>,
    #[serde(default)]
    pub unsupported: Option<String>,
    #[serde(default)]
    pub backward: Option<BackwardDef>,
}

impl Domained for PackRuleDef {
    fn domain_mut(&mut self) -> &mut Option<String> {
        &mut self.domain
    }
}

/// The fields a rule has, in the order a rule file writes them.
pub const FIELDS: &[&str] = &[
    "category",
    "summary",
    "doc",
    "inputs",
    "outputs",
    "attrs",
    "let",
    "flops",
    "mread",
    "mwrite",
    "iops",
    "class",
    "calls",
    "time",
    "params",
    "unsupported",
    "backward",
];

/// The fields a rule for a new op must give.
const REQUIRED: &[&str] = &[
    "category", "summary", "doc", "inputs", "outputs", "flops", "mread", "mwrite",
];

/// A text taken from the rule overridden, placed at the pack's rule (where
/// an error in it is reported).
fn taken(text: &str, at: Place) -> Text {
    Text {
        value: Scalar(text.to_string()),
        at,
        tree: None,
    }
}

/// Named entries of the rule overridden with the pack's over them: a name
/// the pack gives replaces the same name where it stands, a new one comes
/// after.
fn merged<V: Clone>(base: Vec<(String, V)>, over: Option<OrderedMap<V>>) -> OrderedMap<V> {
    let mut out = base;
    for (k, v) in over.map(|m| m.0).unwrap_or_default() {
        match out.iter_mut().find(|(n, _)| *n == k) {
            Some(slot) => slot.1 = v,
            None => out.push((k, v)),
        }
    }
    OrderedMap(out)
}

impl PackRuleDef {
    /// The fields this rule gives, in [`FIELDS`] order.
    pub fn given(&self) -> Vec<&'static str> {
        let has = [
            self.category.is_some(),
            self.summary.is_some(),
            self.doc.is_some(),
            self.inputs.is_some(),
            self.outputs.is_some(),
            self.attrs.is_some(),
            self.lets.is_some(),
            self.flops.is_some(),
            self.mread.is_some(),
            self.mwrite.is_some(),
            self.iops.is_some(),
            self.class.is_some(),
            self.calls.is_some(),
            self.time.is_some(),
            self.params.is_some(),
            self.unsupported.is_some(),
            self.backward.is_some(),
        ];
        FIELDS
            .iter()
            .zip(has)
            .filter(|(_, h)| *h)
            .map(|(f, _)| *f)
            .collect()
    }

    /// The whole rule: the fields given, and the others from `base` (the
    /// rule in force for the op), texts placed at `at`. Without a base,
    /// every required field must be given.
    pub fn complete(self, op: &str, base: Option<&CostRule>, at: Place) -> Result<RuleDef, String> {
        let Some(b) = base else {
            let given = self.given();
            let missing: Vec<&str> = REQUIRED
                .iter()
                .filter(|f| !given.contains(f))
                .copied()
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "rule {op}: no rule in force for it to take {} from; a rule for a new op gives {}",
                    missing.join(", "),
                    REQUIRED.join(", ")
                ));
            }
            return Ok(self.into_def(None, at));
        };
        Ok(self.into_def(Some(b), at))
    }

    fn into_def(self, b: Option<&CostRule>, at: Place) -> RuleDef {
        // A rule that restates its patterns restates its rule: only the
        // required fields it leaves out are taken (they must make sense with
        // the new patterns); the optional ones (attributes, lets, class,
        // calls, params, backward...) are the pack's alone.
        let restated = self.inputs.is_some() || self.outputs.is_some();
        let opt = if restated { None } else { b };
        let text = |t: Option<Text>, from: Option<&str>| {
            t.unwrap_or_else(|| taken(from.unwrap_or(""), at))
        };
        let opt_text = |t: Option<Text>, from: Option<&super::Formula>| {
            t.or_else(|| from.map(|f| taken(&f.text, at)))
        };
        let attrs = opt.map_or_else(Vec::new, |b| {
            b.attrs
                .iter()
                .map(|a| {
                    (
                        a.name.clone(),
                        a.default.as_ref().map(|d| taken(&d.text, at)),
                    )
                })
                .collect()
        });
        let lets = opt.map_or_else(Vec::new, |b| {
            b.lets
                .iter()
                .map(|(n, f)| (n.clone(), taken(&f.text, at)))
                .collect()
        });
        let params = opt.map_or_else(Vec::new, |b| {
            b.params
                .iter()
                .map(|(n, f)| (n.clone(), taken(&f.text, at)))
                .collect()
        });
        let backward = self.backward.or_else(|| {
            opt.and_then(|b| b.backward.as_ref()).map(|bw| BackwardDef {
                grads: bw
                    .grads
                    .iter()
                    .map(|(_, name, [f, r, w])| {
                        let g = GradDef {
                            flops: taken(&f.text, at),
                            mread: taken(&r.text, at),
                            mwrite: taken(&w.text, at),
                        };
                        (name.clone(), g)
                    })
                    .collect(),
                saves: bw.saves_text.clone(),
            })
        });
        RuleDef {
            domain: self.domain.or_else(|| b.map(|b| b.domain.clone())),
            category: self
                .category
                .or_else(|| b.map(|b| b.category.clone()))
                .unwrap_or_default(),
            summary: self
                .summary
                .or_else(|| b.map(|b| b.summary.clone()))
                .unwrap_or_default(),
            doc: self
                .doc
                .or_else(|| b.map(|b| b.doc.clone()))
                .unwrap_or_default(),
            inputs: text(self.inputs, b.map(|b| b.inputs_text.as_str())),
            outputs: text(self.outputs, b.map(|b| b.outputs_text.as_str())),
            attrs: merged(attrs, self.attrs),
            lets: merged(lets, self.lets),
            flops: text(self.flops, b.map(|b| b.flops.text.as_str())),
            mread: text(self.mread, b.map(|b| b.mread.text.as_str())),
            mwrite: text(self.mwrite, b.map(|b| b.mwrite.text.as_str())),
            iops: opt_text(self.iops, opt.and_then(|b| b.iops.as_ref())),
            class: opt_text(self.class, opt.and_then(|b| b.class.as_ref())),
            calls: opt_text(self.calls, opt.and_then(|b| b.calls.as_ref())),
            time: opt_text(self.time, opt.and_then(|b| b.time.as_deref())),
            params: merged(params, self.params),
            unsupported: self
                .unsupported
                .or_else(|| opt.and_then(|b| b.unsupported.clone())),
            backward,
        }
    }
}

/// Where a pack's rule took its fields from: the rule it overrides and the
/// fields it gives itself (`c3 rules check`, `c3 explain`, `c3 docs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overrides {
    /// The rule overridden: `rules/conv.yaml:4`, built-in or a pack's.
    pub base: super::Origin,
    /// The fields the pack gives, in [`FIELDS`] order.
    pub fields: Vec<&'static str>,
    /// The fields taken from the base (those it has that the pack does
    /// not give).
    pub taken: Vec<&'static str>,
}

/// After compiling a merged rule, each formula taken from the base keeps
/// the base's origin, so that an error or `c3 explain` names the file it
/// was written in.
pub fn keep_origins(rule: &mut CostRule, base: &CostRule, given: &[&'static str]) {
    let keep = |f: &mut super::Formula, from: &super::Formula| f.origin = from.origin.clone();
    if !given.contains(&"flops") {
        keep(&mut rule.flops, &base.flops);
    }
    if !given.contains(&"mread") {
        keep(&mut rule.mread, &base.mread);
    }
    if !given.contains(&"mwrite") {
        keep(&mut rule.mwrite, &base.mwrite);
    }
    for (name, field, from) in [
        ("iops", rule.iops.as_mut(), base.iops.as_ref()),
        ("class", rule.class.as_mut(), base.class.as_ref()),
        ("calls", rule.calls.as_mut(), base.calls.as_ref()),
        (
            "time",
            rule.time.as_mut().map(std::sync::Arc::make_mut),
            base.time.as_deref(),
        ),
    ] {
        if let (false, Some(f), Some(b)) = (given.contains(&name), field, from) {
            keep(f, b);
        }
    }
    let named = |list: &mut Vec<(String, super::Formula)>, from: &[(String, super::Formula)]| {
        for (n, f) in list.iter_mut() {
            if let Some((_, b)) = from.iter().find(|(m, _)| m == n)
                && b.text == f.text
            {
                keep(f, b);
            }
        }
    };
    named(&mut rule.lets, &base.lets);
    named(&mut rule.params, &base.params);
    if !given.contains(&"backward")
        && let (Some(bw), Some(from)) = (rule.backward.as_mut(), base.backward.as_ref())
    {
        for ((_, _, fs), (_, _, bs)) in bw.grads.iter_mut().zip(&from.grads) {
            for (f, b) in fs.iter_mut().zip(bs) {
                keep(f, b);
            }
        }
    }
    let restated = given.contains(&"inputs") || given.contains(&"outputs");
    let has = [
        true,
        true,
        true,
        true,
        true,
        !base.attrs.is_empty(),
        !base.lets.is_empty(),
        true,
        true,
        true,
        base.iops.is_some(),
        base.class.is_some(),
        base.calls.is_some(),
        base.time.is_some(),
        !base.params.is_empty(),
        base.unsupported.is_some(),
        base.backward.is_some(),
    ];
    let taken = FIELDS
        .iter()
        .zip(has)
        .filter(|(f, h)| *h && !given.contains(f))
        .filter(|(f, _)| !restated || REQUIRED.contains(f))
        .map(|(f, _)| *f)
        .collect();
    rule.overrides = Some(Overrides {
        base: base.origin.clone(),
        fields: given.to_vec(),
        taken,
    });
}
