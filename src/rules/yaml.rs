//! The shape of a rule file as serde reads it (through serde-saphyr, which
//! keeps every value's line and column).
//!
//! `build.rs` includes this file to read the built-in rules when c3 is
//! built (see [`super::packed`]): of the crate, it uses only the rule
//! modules `build.rs` includes with it (`ast`, `blocks`, `packed`,
//! `parse`, `yaml`).

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_saphyr::Spanned;

use super::ast::{Expr, TensorPat};

/// A YAML mapping that keeps its keys in file order.
#[derive(Debug, Clone)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for MapVisitor<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out: Vec<(String, V)> = Vec::new();
                // A set, so a mapping of many keys loads in linear time.
                let mut seen = std::collections::HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(de::Error::custom(format!("duplicate key '{key}'")));
                    }
                    let value = map.next_value()?;
                    out.push((key, value));
                }
                Ok(OrderedMap(out))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(OrderedMap(Vec::new()))
            }
        }
        d.deserialize_map(MapVisitor(PhantomData))
    }
}

/// Formula text from any YAML scalar: `0`, `-1`, `|X| + |Y|`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scalar(pub String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl Visitor<'_> for ScalarVisitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a formula (a string or a number)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
                Err(E::custom(format!(
                    "{v} is not an integer; formulas use integer arithmetic"
                )))
            }
        }
        d.deserialize_any(ScalarVisitor)
    }
}

/// A formula or pattern list as written, with where it starts and, for a
/// built-in rule read when c3 was built, its syntax tree.
#[derive(Debug, Clone)]
pub struct Text {
    pub value: Scalar,
    pub at: Place,
    /// The parsed text, when `build.rs` parsed it already (`None` when read
    /// from YAML at run time, or when the build could not parse it: the
    /// run then parses it and reports the error).
    pub tree: Option<Tree>,
}

/// Where a value starts in the text serde read: its byte offset, or its
/// line and column (1-based) when the parser gave no offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Byte(usize),
    LineCol(usize, usize),
}

/// A value's syntax tree: a formula, or an `inputs:`/`outputs:` list.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    Formula(Expr),
    Patterns(Vec<TensorPat>),
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Spanned::<Scalar>::deserialize(d)?;
        let loc = &s.referenced;
        let at = match loc.span().byte_offset() {
            Some(b) => Place::Byte(b as usize),
            None => Place::LineCol(loc.line() as usize, loc.column() as usize),
        };
        Ok(Text {
            value: s.value,
            at,
            tree: None,
        })
    }
}

/// One operator's rule as written in a rule file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleDef {
    /// ONNX domain; absent or `ai.onnx` for the default domain.
    #[serde(default)]
    pub domain: Option<String>,
    pub category: String,
    pub summary: String,
    pub doc: String,
    pub inputs: Text,
    pub outputs: Text,
    /// Attribute name → default formula (`~` for none).
    #[serde(default)]
    pub attrs: OrderedMap<Option<Text>>,
    #[serde(default, rename = "let")]
    pub lets: OrderedMap<Text>,
    pub flops: Text,
    pub mread: Text,
    pub mwrite: Text,
    /// Integer operations (quantized arithmetic), reported apart from FLOPs.
    #[serde(default)]
    pub iops: Option<Text>,
    /// The kernel class of a layer (a string formula: `"depthwise"`), by
    /// which a calibrated device groups layers ([`crate::rules::time`]).
    #[serde(default)]
    pub class: Option<Text>,
    /// How many kernel calls a layer makes (a batched matrix product, one
    /// a matrix): a calibrated device pays its per-kernel cost that often.
    #[serde(default)]
    pub calls: Option<Text>,
    /// The seconds one run of a layer takes on a device (a real-number
    /// formula over the rule's names and the device's figures), over the
    /// device's time model ([`crate::rules::time_formula`]).
    #[serde(default)]
    pub time: Option<Text>,
    #[serde(default)]
    pub params: OrderedMap<Text>,
    /// Why layers of this op are listed as unsupported rather than counted
    /// (an op whose cost is no function of its own node).
    #[serde(default)]
    pub unsupported: Option<String>,
    /// The costs of the backward pass (`--training`): each input's
    /// gradient and what the backward reads from the forward.
    #[serde(default)]
    pub backward: Option<BackwardDef>,
}

/// A rule's `backward:` section as written: by input pattern name, the
/// formulas of that input's gradient, and `saves:`, the comma-separated
/// pattern names of the tensors the backward reads (kept alive from the
/// forward). `backward: {}` says no input gets a gradient.
#[derive(Debug, Clone, Default)]
pub struct BackwardDef {
    pub grads: Vec<(String, GradDef)>,
    pub saves: Option<String>,
}

/// One input's gradient: FLOPs, bytes read, bytes written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GradDef {
    pub flops: Text,
    pub mread: Text,
    pub mwrite: Text,
}

/// The key of a `backward:` section that is not an input's name.
pub const SAVES_KEY: &str = "saves";

impl<'de> Deserialize<'de> for BackwardDef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct BackwardVisitor;
        impl<'de> Visitor<'de> for BackwardVisitor {
            type Value = BackwardDef;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of input names to {flops, mread, mwrite}, and saves")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = BackwardDef::default();
                let mut seen = std::collections::HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(de::Error::custom(format!("duplicate key '{key}'")));
                    }
                    if key == SAVES_KEY {
                        out.saves = Some(map.next_value()?);
                    } else {
                        out.grads.push((key, map.next_value()?));
                    }
                }
                Ok(out)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(BackwardDef::default())
            }
        }
        d.deserialize_map(BackwardVisitor)
    }
}

/// A rule file: operator name → rule. A top-level `domain:` key is the file's
/// domain: every rule of the file without a `domain:` of its own takes it.
/// `D` is a built-in rule ([`RuleDef`], every field given) or a pack's
/// (which may give only some: see `rules::partial`).
#[derive(Debug)]
pub struct RuleFileDef<D = RuleDef>(pub Vec<(String, D)>);

impl<D> Default for RuleFileDef<D> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

/// A rule definition whose domain a file-level `domain:` fills in.
pub trait Domained {
    fn domain_mut(&mut self) -> &mut Option<String>;
}

impl Domained for RuleDef {
    fn domain_mut(&mut self) -> &mut Option<String> {
        &mut self.domain
    }
}

pub use super::blocks::FILE_DOMAIN_KEY;

impl<'de, D: Deserialize<'de> + Domained> Deserialize<'de> for RuleFileDef<D> {
    fn deserialize<De: Deserializer<'de>>(d: De) -> Result<Self, De::Error> {
        struct FileVisitor<D>(PhantomData<D>);
        impl<'de, D: Deserialize<'de> + Domained> Visitor<'de> for FileVisitor<D> {
            type Value = RuleFileDef<D>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut domain: Option<String> = None;
                let mut out: Vec<(String, D)> = Vec::new();
                let mut seen = std::collections::HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == FILE_DOMAIN_KEY {
                        if domain.is_some() {
                            return Err(de::Error::custom(format!("duplicate key '{key}'")));
                        }
                        domain = Some(map.next_value()?);
                        continue;
                    }
                    if !seen.insert(key.clone()) {
                        return Err(de::Error::custom(format!("duplicate key '{key}'")));
                    }
                    out.push((key, map.next_value()?));
                }
                for (_, rule) in &mut out {
                    let d = rule.domain_mut();
                    if d.is_none() {
                        d.clone_from(&domain);
                    }
                }
                Ok(RuleFileDef(out))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RuleFileDef::default())
            }
        }
        d.deserialize_map(FileVisitor(PhantomData))
    }
}
