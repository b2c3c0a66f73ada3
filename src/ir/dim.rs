//! Integer values that may be symbolic: a dimension like `batch`, `2*seq`,
//! `seq+past` or `floor((H+1)/2)`.
//!
//! A symbolic value is a polynomial with integer coefficients over atoms; an
//! atom is a named symbol or an operation that is not a polynomial (floor and
//! ceiling division, max, min) applied to other values. Polynomials are kept
//! canonical (terms sorted, like terms merged), so equal expressions compare
//! equal and `batch * 64 / 64` simplifies back to `batch`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::limits::{
    MAX_DIM_DEGREE, MAX_DIM_NESTING, MAX_DIM_PRODUCT, MAX_DIM_SIZE, MAX_DIM_TERMS,
};

/// An atom of a polynomial.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    /// Every term that holds the symbol shares its name (copying a term
    /// counts a reference instead of copying the text).
    Symbol(Arc<str>),
    FloorDiv(SymInt, i64),
    CeilDiv(SymInt, i64),
    Max(SymInt, SymInt),
    Min(SymInt, SymInt),
}

/// A product of atoms with their powers, sorted.
type Monomial = Vec<(Atom, u32)>;

/// `Σ coef · monomial + constant`, with no zero coefficients.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Poly {
    terms: BTreeMap<Monomial, i64>,
    constant: i64,
}

/// An integer that is known or symbolic.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SymInt {
    Int(i64),
    Sym(Arc<Poly>),
}

/// An arithmetic result that does not fit in 64 bits, or a symbolic value
/// larger than the limits allow (`MAX_DIM_TERMS`, `MAX_DIM_DEGREE`,
/// `MAX_DIM_SIZE`). `Overflow` is also the plain 64-bit overflow value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow {
    limit: Limit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    Bits,
    Terms,
    Degree,
    Size,
    Product,
    Nesting,
}

/// The 64-bit overflow.
#[allow(non_upper_case_globals)]
pub const Overflow: Overflow = Overflow { limit: Limit::Bits };

const fn too_big(limit: Limit) -> Overflow {
    Overflow { limit }
}

impl Overflow {
    /// Whether this is a symbolic value past `MAX_DIM_TERMS`,
    /// `MAX_DIM_DEGREE` or `MAX_DIM_SIZE`, rather than a 64-bit overflow:
    /// shape inference may leave an overflowing value unknown, but a model
    /// whose shape arithmetic grows past the limits is refused.
    pub fn is_limit(&self) -> bool {
        self.limit != Limit::Bits
    }
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            Limit::Bits => f.write_str("overflows 64 bits"),
            Limit::Terms => write!(
                f,
                "exceeds the limit of {MAX_DIM_TERMS} terms per symbolic dimension (MAX_DIM_TERMS)"
            ),
            Limit::Degree => write!(
                f,
                "exceeds the limit of degree {MAX_DIM_DEGREE} per symbolic dimension (MAX_DIM_DEGREE)"
            ),
            Limit::Size => write!(
                f,
                "exceeds the limit of {MAX_DIM_SIZE} terms and atoms per symbolic dimension (MAX_DIM_SIZE)"
            ),
            Limit::Nesting => write!(
                f,
                "nests floor, ceil, max and min more than {MAX_DIM_NESTING} deep in a symbolic dimension (MAX_DIM_NESTING)"
            ),
            Limit::Product => write!(
                f,
                "multiplies more than {MAX_DIM_PRODUCT} pairs of terms of symbolic dimensions (MAX_DIM_PRODUCT)"
            ),
        }
    }
}

type R<T> = Result<T, Overflow>;

/// The product of two monomials; powers add with a check, so `x^(2^32)`
/// never wraps to `x^0`, and no term's degree passes `MAX_DIM_DEGREE`.
fn mul_monomials(a: &Monomial, b: &Monomial) -> R<Monomial> {
    let mut m: BTreeMap<Atom, u32> = BTreeMap::new();
    let mut degree: u32 = 0;
    for (atom, p) in a.iter().chain(b) {
        let e = m.entry(atom.clone()).or_insert(0);
        *e = e.checked_add(*p).ok_or(too_big(Limit::Degree))?;
        degree = degree.checked_add(*p).ok_or(too_big(Limit::Degree))?;
    }
    if degree > MAX_DIM_DEGREE {
        return Err(too_big(Limit::Degree));
    }
    Ok(m.into_iter().collect())
}

impl Poly {
    fn constant(c: i64) -> Self {
        Poly {
            terms: BTreeMap::new(),
            constant: c,
        }
    }

    fn atom(a: Atom) -> Self {
        let mut terms = BTreeMap::new();
        terms.insert(vec![(a, 1)], 1);
        Poly { terms, constant: 0 }
    }

    fn add_assign(&mut self, other: &Poly) -> R<()> {
        self.constant = self.constant.checked_add(other.constant).ok_or(Overflow)?;
        for (m, c) in &other.terms {
            let e = self.terms.entry(m.clone()).or_insert(0);
            *e = e.checked_add(*c).ok_or(Overflow)?;
            if *e == 0 {
                self.terms.remove(m);
            }
        }
        Ok(())
    }

    fn scale(&self, k: i64) -> R<Poly> {
        if k == 0 {
            return Ok(Poly::constant(0));
        }
        let mut out = Poly::constant(self.constant.checked_mul(k).ok_or(Overflow)?);
        for (m, c) in &self.terms {
            out.terms
                .insert(m.clone(), c.checked_mul(k).ok_or(Overflow)?);
        }
        Ok(out)
    }

    fn mul(&self, other: &Poly) -> R<Poly> {
        // At most MAX_DIM_PRODUCT products, merged in place.
        let pairs = (self.terms.len() + 1).saturating_mul(other.terms.len() + 1);
        if pairs > MAX_DIM_PRODUCT {
            return Err(too_big(Limit::Product));
        }
        let mut out = self.scale(other.constant)?;
        let mut put = |m: Monomial, c: i64| -> R<()> {
            let e = out.terms.entry(m).or_insert(0);
            *e = e.checked_add(c).ok_or(Overflow)?;
            Ok(())
        };
        for (m, c) in &other.terms {
            if self.constant != 0 {
                put(m.clone(), self.constant.checked_mul(*c).ok_or(Overflow)?)?;
            }
            for (m2, c2) in &self.terms {
                put(mul_monomials(m, m2)?, c.checked_mul(*c2).ok_or(Overflow)?)?;
            }
        }
        out.terms.retain(|_, c| *c != 0);
        Ok(out)
    }

    /// Whether the polynomial is within `MAX_DIM_TERMS` and, counting what
    /// is nested in its atoms, `MAX_DIM_SIZE`. Stops counting at the limit,
    /// so the check costs at most `MAX_DIM_SIZE` steps.
    fn check_size(&self) -> R<()> {
        if self.terms.len() > MAX_DIM_TERMS {
            return Err(too_big(Limit::Terms));
        }
        let mut budget = MAX_DIM_SIZE;
        self.spend(&mut budget, 0).map_err(too_big)
    }

    /// Takes this polynomial's size from `budget`, `depth` levels down into
    /// `floor`, `ceil`, `max` and `min`: the limit it passes, if any. Stops
    /// at the limit, so it recurses at most `MAX_DIM_NESTING` levels.
    fn spend(&self, budget: &mut usize, depth: usize) -> Result<(), Limit> {
        for m in self.terms.keys() {
            for (atom, _) in m {
                if *budget == 0 {
                    return Err(Limit::Size);
                }
                *budget -= 1;
                let inner = match atom {
                    Atom::Symbol(_) => continue,
                    Atom::FloorDiv(a, _) | Atom::CeilDiv(a, _) => vec![a],
                    Atom::Max(a, b) | Atom::Min(a, b) => vec![a, b],
                };
                if depth >= MAX_DIM_NESTING {
                    return Err(Limit::Nesting);
                }
                for v in inner {
                    if let SymInt::Sym(p) = v {
                        p.spend(budget, depth + 1)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The exact quotient when every coefficient divides by `k`.
    fn exact_div(&self, k: i64) -> Option<Poly> {
        let div = |c: i64| (c.checked_rem(k)? == 0).then(|| c.checked_div(k)).flatten();
        let mut terms = BTreeMap::new();
        for (m, c) in &self.terms {
            terms.insert(m.clone(), div(*c)?);
        }
        Some(Poly {
            constant: div(self.constant)?,
            terms,
        })
    }

    fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<i64, EvalError> {
        let mut acc = self.constant as i128;
        for (m, c) in &self.terms {
            let mut t = *c as i128;
            for (atom, p) in m {
                let v = atom.eval(env)? as i128;
                // Checked square-and-multiply, not a loop over the power.
                let pw = v.checked_pow(*p).ok_or(EvalError::Overflow)?;
                t = t.checked_mul(pw).ok_or(EvalError::Overflow)?;
            }
            acc = acc.checked_add(t).ok_or(EvalError::Overflow)?;
        }
        i64::try_from(acc).map_err(|_| EvalError::Overflow)
    }

    fn symbols(&self, out: &mut Vec<String>) {
        for m in self.terms.keys() {
            for (a, _) in m {
                a.symbols(out);
            }
        }
    }
}

/// Why a symbolic value could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    Unbound(String),
    Overflow,
    DivisionByZero,
}

impl Atom {
    fn is_non_negative(&self) -> bool {
        match self {
            Atom::Symbol(_) => true,
            Atom::FloorDiv(a, k) | Atom::CeilDiv(a, k) => *k > 0 && a.is_non_negative(),
            Atom::Max(a, b) => a.is_non_negative() || b.is_non_negative(),
            Atom::Min(a, b) => a.is_non_negative() && b.is_non_negative(),
        }
    }

    fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<i64, EvalError> {
        Ok(match self {
            Atom::Symbol(s) => env(s).ok_or_else(|| EvalError::Unbound(s.to_string()))?,
            Atom::FloorDiv(a, k) => {
                if *k == 0 {
                    return Err(EvalError::DivisionByZero);
                }
                a.eval_with(env)?
                    .checked_div_euclid(*k)
                    .ok_or(EvalError::Overflow)?
            }
            Atom::CeilDiv(a, k) => {
                if *k == 0 {
                    return Err(EvalError::DivisionByZero);
                }
                let v = a.eval_with(env)?;
                ceil_div(v, *k).ok_or(EvalError::Overflow)?
            }
            Atom::Max(a, b) => a.eval_with(env)?.max(b.eval_with(env)?),
            Atom::Min(a, b) => a.eval_with(env)?.min(b.eval_with(env)?),
        })
    }

    fn symbols(&self, out: &mut Vec<String>) {
        match self {
            Atom::Symbol(s) => {
                if !out.iter().any(|o| **o == **s) {
                    out.push(s.to_string())
                }
            }
            Atom::FloorDiv(a, _) | Atom::CeilDiv(a, _) => a.symbols_into(out),
            Atom::Max(a, b) | Atom::Min(a, b) => {
                a.symbols_into(out);
                b.symbols_into(out);
            }
        }
    }
}

/// `ceil(v / k)` for a non-zero `k`, `None` when it does not fit.
fn ceil_div(v: i64, k: i64) -> Option<i64> {
    v.checked_neg()?.checked_div_euclid(k)?.checked_neg()
}

/// A running sum: each [`Sum::add`] gives what [`SymInt::add`] would, the
/// same value and the same refusal, but the terms are added in place, not
/// copied at each step (a Concat of n symbolic sizes copied O(n^2) terms).
#[derive(Debug)]
pub struct Sum(Poly);

impl Default for Sum {
    fn default() -> Self {
        Sum(Poly::constant(0))
    }
}

impl Sum {
    pub fn add(&mut self, o: &SymInt) -> R<()> {
        match o {
            SymInt::Int(k) => self.0.constant = self.0.constant.checked_add(*k).ok_or(Overflow)?,
            SymInt::Sym(p) => self.0.add_assign(p)?,
        }
        // `add` checks every symbolic result's size.
        if !self.0.terms.is_empty() || matches!(o, SymInt::Sym(_)) {
            self.0.check_size()?;
        }
        Ok(())
    }

    pub fn value(self) -> SymInt {
        SymInt::wrap(self.0)
    }
}

impl SymInt {
    pub fn sym(name: impl Into<String>) -> SymInt {
        SymInt::wrap(Poly::atom(Atom::Symbol(name.into().into())))
    }

    /// A polynomial as a value, refused when it is larger than the limits.
    fn from_poly(p: Poly) -> R<SymInt> {
        p.check_size()?;
        Ok(SymInt::wrap(p))
    }

    fn wrap(p: Poly) -> SymInt {
        if p.terms.is_empty() {
            SymInt::Int(p.constant)
        } else {
            SymInt::Sym(Arc::new(p))
        }
    }

    fn poly(&self) -> Poly {
        match self {
            SymInt::Int(v) => Poly::constant(*v),
            SymInt::Sym(p) => (**p).clone(),
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            SymInt::Int(v) => Some(*v),
            SymInt::Sym(_) => None,
        }
    }

    pub fn is_known(&self) -> bool {
        matches!(self, SymInt::Int(_))
    }

    pub fn add(&self, o: &SymInt) -> R<SymInt> {
        if let (SymInt::Int(a), SymInt::Int(b)) = (self, o) {
            return a.checked_add(*b).map(SymInt::Int).ok_or(Overflow);
        }
        // A running sum of the two: one copy of `self`'s terms, `o`'s added
        // in place, the size checked as every symbolic result's is.
        let mut sum = Sum(self.poly());
        sum.add(o)?;
        Ok(sum.value())
    }

    pub fn sub(&self, o: &SymInt) -> R<SymInt> {
        self.add(&o.neg()?)
    }

    pub fn neg(&self) -> R<SymInt> {
        match self {
            SymInt::Int(a) => a.checked_neg().map(SymInt::Int).ok_or(Overflow),
            SymInt::Sym(p) => SymInt::from_poly(p.scale(-1)?),
        }
    }

    pub fn mul(&self, o: &SymInt) -> R<SymInt> {
        match (self, o) {
            (SymInt::Int(a), SymInt::Int(b)) => a.checked_mul(*b).map(SymInt::Int).ok_or(Overflow),
            _ => SymInt::from_poly(self.poly().mul(&o.poly())?),
        }
    }

    /// Floor division by a known non-zero divisor.
    pub fn floor_div(&self, k: i64) -> R<SymInt> {
        if k == 0 {
            return Err(Overflow);
        }
        match self {
            SymInt::Int(a) => a.checked_div_euclid(k).map(SymInt::Int).ok_or(Overflow),
            SymInt::Sym(p) => match p.exact_div(k) {
                Some(q) => SymInt::from_poly(q),
                None if k == 1 => Ok(self.clone()),
                None => SymInt::from_poly(Poly::atom(Atom::FloorDiv(self.clone(), k))),
            },
        }
    }

    /// Ceiling division by a known non-zero divisor.
    pub fn ceil_div(&self, k: i64) -> R<SymInt> {
        if k == 0 {
            return Err(Overflow);
        }
        match self {
            SymInt::Int(a) => ceil_div(*a, k).map(SymInt::Int).ok_or(Overflow),
            SymInt::Sym(p) => match p.exact_div(k) {
                Some(q) => SymInt::from_poly(q),
                None => SymInt::from_poly(Poly::atom(Atom::CeilDiv(self.clone(), k))),
            },
        }
    }

    /// Division by a possibly symbolic divisor: exact when the divisor is a
    /// factor (`2*batch*seq / seq`), else `None`.
    pub fn exact_div(&self, d: &SymInt) -> Option<SymInt> {
        match (self, d) {
            (_, SymInt::Int(0)) => None,
            (SymInt::Int(a), SymInt::Int(b)) => {
                (a.checked_rem(*b)? == 0).then(|| a.checked_div(*b).map(SymInt::Int))?
            }
            (_, SymInt::Int(b)) => self.poly().exact_div(*b).map(SymInt::wrap),
            (SymInt::Sym(p), SymInt::Sym(q)) => {
                // A single-term divisor divides each term of the dividend.
                let (dm, dc) = match (q.constant, q.terms.len()) {
                    (0, 1) => q.terms.iter().next().map(|(m, c)| (m.clone(), *c))?,
                    _ => return (p == q).then_some(SymInt::Int(1)),
                };
                if p.constant != 0 {
                    return None;
                }
                let mut out = Poly::constant(0);
                for (m, c) in &p.terms {
                    if c.checked_rem(dc)? != 0 {
                        return None;
                    }
                    let q = c.checked_div(dc)?;
                    let mut rest: BTreeMap<Atom, u32> = m.iter().cloned().collect();
                    for (atom, pw) in &dm {
                        let have = rest.get_mut(atom)?;
                        if *have < *pw {
                            return None;
                        }
                        *have -= pw;
                        if *have == 0 {
                            rest.remove(atom);
                        }
                    }
                    let mono: Monomial = rest.into_iter().collect();
                    if mono.is_empty() {
                        out.constant = out.constant.checked_add(q)?;
                    } else {
                        out.terms.insert(mono, q);
                    }
                }
                Some(SymInt::wrap(out))
            }
            (SymInt::Int(_), SymInt::Sym(_)) => None,
        }
    }

    /// `max(self, o)`; an atom holding both operands, so its size is
    /// checked like any other result (nested `max` grows without a product).
    pub fn max_with(&self, o: &SymInt) -> R<SymInt> {
        match (self, o) {
            (SymInt::Int(a), SymInt::Int(b)) => Ok(SymInt::Int(*a.max(b))),
            _ if self == o => Ok(self.clone()),
            _ => SymInt::from_poly(Poly::atom(Atom::Max(
                self.clone().min_of(o.clone()),
                self.clone().max_of(o.clone()),
            ))),
        }
    }

    /// `min(self, o)`, size-checked like [`SymInt::max_with`].
    pub fn min_with(&self, o: &SymInt) -> R<SymInt> {
        match (self, o) {
            (SymInt::Int(a), SymInt::Int(b)) => Ok(SymInt::Int(*a.min(b))),
            _ if self == o => Ok(self.clone()),
            _ => SymInt::from_poly(Poly::atom(Atom::Min(
                self.clone().min_of(o.clone()),
                self.clone().max_of(o.clone()),
            ))),
        }
    }

    // Canonical argument order for the commutative max/min atoms.
    fn min_of(self, o: SymInt) -> SymInt {
        if self <= o { self } else { o }
    }
    fn max_of(self, o: SymInt) -> SymInt {
        if self <= o { o } else { self }
    }

    /// Whether the value is surely >= 0. Symbols stand for sizes, so they
    /// are; a polynomial is when its constant and every coefficient are
    /// non-negative and so is each atom.
    pub fn is_non_negative(&self) -> bool {
        match self {
            SymInt::Int(n) => *n >= 0,
            SymInt::Sym(p) => {
                p.constant >= 0
                    && p.terms
                        .iter()
                        .all(|(m, c)| *c > 0 && m.iter().all(|(a, _)| a.is_non_negative()))
            }
        }
    }

    /// Evaluates with symbol values from `env`.
    pub fn eval_with(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<i64, EvalError> {
        match self {
            SymInt::Int(v) => Ok(*v),
            SymInt::Sym(p) => p.eval(env),
        }
    }

    /// Replaces the bound symbols by their values, simplifying what it can.
    pub fn bind(&self, values: &BTreeMap<String, i64>) -> SymInt {
        match self {
            SymInt::Int(_) => self.clone(),
            SymInt::Sym(_) => match self.eval_with(&|s| values.get(s).copied()) {
                Ok(v) => SymInt::Int(v),
                Err(_) => self.clone(),
            },
        }
    }

    /// The symbols this value depends on, in order of appearance.
    pub fn symbols(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.symbols_into(&mut out);
        out
    }

    fn symbols_into(&self, out: &mut Vec<String>) {
        if let SymInt::Sym(p) = self {
            p.symbols(out);
        }
    }
}

impl From<i64> for SymInt {
    fn from(v: i64) -> Self {
        SymInt::Int(v)
    }
}

/// A value in parentheses when it is a sum, so a quotient reads right.
fn grouped(v: &SymInt) -> String {
    let text = v.to_string();
    if text.chars().skip(1).any(|c| c == '+' || c == '-') {
        format!("({text})")
    } else {
        text
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::Symbol(s) => f.write_str(s),
            Atom::FloorDiv(a, k) => write!(f, "floor({}/{k})", grouped(a)),
            Atom::CeilDiv(a, k) => write!(f, "ceil({}/{k})", grouped(a)),
            Atom::Max(a, b) => write!(f, "max({a},{b})"),
            Atom::Min(a, b) => write!(f, "min({a},{b})"),
        }
    }
}

impl fmt::Display for SymInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = match self {
            SymInt::Int(v) => return write!(f, "{v}"),
            SymInt::Sym(p) => p,
        };
        let mut first = true;
        for (m, c) in &p.terms {
            let mono: Vec<String> = m
                .iter()
                .map(|(a, pw)| {
                    if *pw == 1 {
                        a.to_string()
                    } else {
                        format!("{a}^{pw}")
                    }
                })
                .collect();
            let mono = mono.join("*");
            let (sign, mag) = if *c < 0 {
                ("-", c.unsigned_abs())
            } else {
                ("+", *c as u64)
            };
            if first {
                if sign == "-" {
                    f.write_str("-")?;
                }
            } else {
                f.write_str(sign)?;
            }
            if mag == 1 {
                f.write_str(&mono)?;
            } else {
                write!(f, "{mag}*{mono}")?;
            }
            first = false;
        }
        match p.constant {
            0 => Ok(()),
            c if c < 0 => write!(f, "-{}", c.unsigned_abs()),
            c => write!(f, "+{c}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: &str) -> SymInt {
        SymInt::sym(n)
    }
    fn i(v: i64) -> SymInt {
        SymInt::Int(v)
    }

    /// A running sum gives, step by step, what adding one at a time gives:
    /// the value, terms that cancel back to a known number, an overflow,
    /// and the terms limit (MAX_DIM_TERMS = 1024 distinct symbols: the
    /// 1,025th is refused at the step that adds it, by both).
    #[test]
    fn a_running_sum_gives_what_adding_one_at_a_time_gives() {
        let minus_a = s("a").neg().unwrap();
        let cases: Vec<Vec<SymInt>> = vec![
            vec![i(2), i(3)],
            vec![i(2), s("a"), i(3), s("b"), s("a")],
            // 1 + a + 4 - a = 5: known again once a cancels.
            vec![i(1), s("a"), i(4), minus_a.clone()],
            vec![s("a"), minus_a, i(7), s("c")],
            vec![i(i64::MAX), i(1)],
            vec![s("a"), i(i64::MAX), i(1)],
            (0..1100).map(|k| s(&format!("n{k}"))).collect(),
        ];
        for items in cases {
            let mut one_at_a_time = Ok(i(0));
            let mut sum = Sum::default();
            let mut summed = Ok(());
            for x in &items {
                one_at_a_time = one_at_a_time.and_then(|acc| acc.add(x));
                summed = summed.and_then(|()| sum.add(x));
                assert_eq!(summed.is_ok(), one_at_a_time.is_ok(), "{items:?}");
                if let (Err(e), Err(f)) = (&summed, &one_at_a_time) {
                    assert_eq!(e, f);
                }
            }
            if let Ok(v) = one_at_a_time {
                assert_eq!(sum.value(), v, "{items:?}");
            }
        }
        let mut sum = Sum::default();
        for x in [i(1), s("a"), i(4), s("a").neg().unwrap()] {
            sum.add(&x).unwrap();
        }
        assert_eq!(sum.value(), i(5));
        // The refusals themselves: a known sum past 64 bits, a symbolic one
        // whose constant passes it, and the 1,025th distinct symbol (the
        // terms limit, MAX_DIM_TERMS = 1024) at the step that adds it.
        let mut sum = Sum::default();
        sum.add(&i(i64::MAX)).unwrap();
        assert_eq!(sum.add(&i(1)), Err(Overflow));
        let mut sum = Sum::default();
        sum.add(&s("a")).unwrap();
        sum.add(&i(i64::MAX)).unwrap();
        assert_eq!(sum.add(&i(1)), Err(Overflow));
        let mut sum = Sum::default();
        let added: Vec<R<()>> = (0..1025).map(|k| sum.add(&s(&format!("n{k}")))).collect();
        assert!(added[..1024].iter().all(Result::is_ok));
        assert_eq!(added[1024], Err(too_big(Limit::Terms)));
    }

    #[test]
    fn polynomials_are_canonical() {
        let b = s("batch");
        let total = b
            .mul(&i(3))
            .unwrap()
            .mul(&i(224))
            .unwrap()
            .mul(&i(224))
            .unwrap();
        assert_eq!(total.to_string(), "150528*batch");
        assert_eq!(total.exact_div(&i(150528)), Some(b.clone()));
        assert_eq!(total.floor_div(150528).unwrap(), b);
        // seq + past == past + seq, and x - x == 0.
        let a = s("seq").add(&s("past")).unwrap();
        let c = s("past").add(&s("seq")).unwrap();
        assert_eq!(a, c);
        assert_eq!(a.sub(&c).unwrap(), i(0));
        assert_eq!(b.add(&b).unwrap().to_string(), "2*batch");
        // (batch * seq * 64) / seq = 64 * batch
        let bs = b.mul(&s("seq")).unwrap().mul(&i(64)).unwrap();
        assert_eq!(bs.exact_div(&s("seq")), Some(b.mul(&i(64)).unwrap()));
        assert_eq!(bs.exact_div(&s("other")), None);
    }

    #[test]
    fn divisions_that_are_not_exact_stay_symbolic_and_evaluate() {
        // A convolution's output length: floor((H + 2 - 3) / 2) + 1.
        let h = s("H");
        let o = h
            .add(&i(2))
            .unwrap()
            .sub(&i(3))
            .unwrap()
            .floor_div(2)
            .unwrap()
            .add(&i(1))
            .unwrap();
        assert_eq!(o.to_string(), "floor((H-1)/2)+1");
        let env = |n: &str| (n == "H").then_some(224);
        assert_eq!(o.eval_with(&env), Ok(112));
        assert_eq!(o.eval_with(&|_| None), Err(EvalError::Unbound("H".into())));
        let mut b = BTreeMap::new();
        b.insert("H".to_string(), 224);
        assert_eq!(o.bind(&b), i(112));
        assert_eq!(o.symbols(), vec!["H".to_string()]);
        assert_eq!(s("a").max_with(&s("b")), s("b").max_with(&s("a")));
        assert_eq!(s("a").min_with(&s("b")).unwrap().to_string(), "min(a,b)");
        assert_eq!(i(7).ceil_div(2).unwrap(), i(4));
    }

    #[test]
    fn sign_of_symbolic_values() {
        let b = s("batch");
        assert!(b.is_non_negative());
        assert!(b.mul(&i(3)).unwrap().add(&i(1)).unwrap().is_non_negative());
        assert!(!b.sub(&i(1)).unwrap().is_non_negative()); // batch - 1 may be -1
        assert!(!b.neg().unwrap().is_non_negative());
        assert!(
            b.add(&i(7))
                .unwrap()
                .floor_div(2)
                .unwrap()
                .is_non_negative()
        );
        assert!(
            s("a")
                .max_with(&b.sub(&i(4)).unwrap())
                .unwrap()
                .is_non_negative()
        );
    }

    #[test]
    fn overflow_is_an_error() {
        assert_eq!(i(i64::MAX).add(&i(1)), Err(Overflow));
        assert!(s("x").mul(&i(i64::MAX)).unwrap().mul(&i(2)).is_err());
    }

    #[test]
    fn powers_never_wrap_and_sizes_are_bounded() {
        // x squared 7 times is x^128 (2^7 = MAX_DIM_DEGREE); once more is
        // x^256, refused instead of wrapping the power as it once did.
        let mut x = s("x");
        for _ in 0..7 {
            x = x.mul(&x).unwrap();
        }
        assert_eq!(x.to_string(), "x^128");
        // 2^128 overflows i128; 1^128 = 1 is computed by fast powers.
        assert_eq!(x.eval_with(&|_| Some(1)), Ok(1));
        assert_eq!(x.eval_with(&|_| Some(2)), Err(EvalError::Overflow));
        let e = x.mul(&x).unwrap_err();
        assert_eq!(
            e.to_string(),
            "exceeds the limit of degree 128 per symbolic dimension (MAX_DIM_DEGREE)"
        );
        // (a+1)(b+1)... over 11 symbols has 2^11 - 1 = 2,047 terms besides
        // the constant > MAX_DIM_TERMS = 1,024 (each product multiplies
        // 2^10 x 2 = 2,048 pairs at most, within MAX_DIM_PRODUCT).
        let mut p = i(1);
        let mut err = None;
        let mut factors = 0;
        for n in ["a", "b", "c", "d", "e", "f", "g", "h", "j", "k", "l", "m"] {
            match p.mul(&s(n).add(&i(1)).unwrap()) {
                Ok(v) => {
                    p = v;
                    factors += 1;
                }
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        assert_eq!(factors, 10);
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("exceeds the limit of 1024 terms per symbolic dimension (MAX_DIM_TERMS)")
        );
        // A sum of 100 symbols times another: 101 x 101 = 10,201 pairs of
        // terms > MAX_DIM_PRODUCT = 4,225, refused before any is multiplied.
        let sum = |p: &str| (0..100).fold(i(0), |acc, k| acc.add(&s(&format!("{p}{k}"))).unwrap());
        let e = sum("u").mul(&sum("v")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "multiplies more than 4225 pairs of terms of symbolic dimensions (MAX_DIM_PRODUCT)"
        );
        // A detector's kept boxes, one min(300, n_k) per class of 90, fit.
        let kept = (0..90).fold(i(0), |acc, k| {
            acc.add(&i(300).min_with(&s(&format!("n{k}"))).unwrap())
                .unwrap()
        });
        assert_eq!(kept.eval_with(&|_| Some(1000)), Ok(90 * 300));
        // Nesting floor() 129 deep passes MAX_DIM_NESTING.
        let mut f = s("h");
        let mut err = None;
        for _ in 0..10_000 {
            match f.add(&i(1)).and_then(|v| v.floor_div(2)) {
                Ok(v) => f = v,
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        assert!(err.unwrap().to_string().contains("MAX_DIM_NESTING"));
    }

    #[test]
    fn nested_max_and_min_are_bounded() {
        // max(x_k, max(x_(k-1), ...)) nests one level deeper per Max
        // node: past MAX_DIM_NESTING = 128 levels it is refused, like any
        // other value past a limit, instead of growing with every node.
        let mut m = s("x0");
        let mut levels = 0;
        let err = loop {
            levels += 1;
            let next = s(&format!("x{levels}"));
            let r = if levels % 2 == 0 {
                m.max_with(&next)
            } else {
                m.min_with(&next)
            };
            match r {
                Ok(v) => m = v,
                Err(e) => break e,
            }
        };
        assert!(err.is_limit());
        assert!(err.to_string().contains("MAX_DIM_NESTING"), "{err}");
        // Level k's innermost max/min lies k - 1 levels down: 128 first
        // at k = 129.
        assert_eq!(levels, 129);
        assert!(!Overflow.is_limit());
    }

    #[test]
    fn extreme_divisions_do_not_panic() {
        assert_eq!(i(i64::MIN).floor_div(-1), Err(Overflow));
        assert_eq!(i(i64::MIN).ceil_div(-1), Err(Overflow));
        assert_eq!(i(i64::MIN).exact_div(&i(-1)), None);
        let m = s("x").mul(&i(i64::MIN)).unwrap();
        assert_eq!(m.exact_div(&i(-1)), None);
        assert_eq!(m.exact_div(&s("x").neg().unwrap()), None);
        // A name that starts with a multi-byte character prints whole.
        assert_eq!(
            s("é").add(&i(1)).unwrap().floor_div(2).unwrap().to_string(),
            "floor((é+1)/2)"
        );
    }
}
