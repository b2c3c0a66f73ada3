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

/// An atom of a polynomial.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    Symbol(String),
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

/// An arithmetic result that does not fit in 64 bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow;

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("integer overflow")
    }
}

type R<T> = Result<T, Overflow>;

fn mul_monomials(a: &Monomial, b: &Monomial) -> Monomial {
    let mut m: BTreeMap<Atom, u32> = BTreeMap::new();
    for (atom, p) in a.iter().chain(b) {
        *m.entry(atom.clone()).or_insert(0) += p;
    }
    m.into_iter().collect()
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

    fn add(&self, other: &Poly) -> R<Poly> {
        let mut out = self.clone();
        out.constant = out.constant.checked_add(other.constant).ok_or(Overflow)?;
        for (m, c) in &other.terms {
            let e = out.terms.entry(m.clone()).or_insert(0);
            *e = e.checked_add(*c).ok_or(Overflow)?;
            if *e == 0 {
                out.terms.remove(m);
            }
        }
        Ok(out)
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
        let mut out = self.scale(other.constant)?;
        for (m, c) in &other.terms {
            // self.constant * c * m
            if self.constant != 0 {
                let mut t = Poly::constant(0);
                t.terms
                    .insert(m.clone(), self.constant.checked_mul(*c).ok_or(Overflow)?);
                out = out.add(&t)?;
            }
            for (m2, c2) in &self.terms {
                let mut t = Poly::constant(0);
                t.terms
                    .insert(mul_monomials(m, m2), c.checked_mul(*c2).ok_or(Overflow)?);
                out = out.add(&t)?;
            }
        }
        Ok(out)
    }

    /// The exact quotient when every coefficient divides by `k`.
    fn exact_div(&self, k: i64) -> Option<Poly> {
        if k == 0 || self.constant % k != 0 || self.terms.values().any(|c| c % k != 0) {
            return None;
        }
        Some(Poly {
            constant: self.constant / k,
            terms: self.terms.iter().map(|(m, c)| (m.clone(), c / k)).collect(),
        })
    }

    fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<i64, EvalError> {
        let mut acc = self.constant as i128;
        for (m, c) in &self.terms {
            let mut t = *c as i128;
            for (atom, p) in m {
                let v = atom.eval(env)? as i128;
                for _ in 0..*p {
                    t = t.checked_mul(v).ok_or(EvalError::Overflow)?;
                }
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
            Atom::Symbol(s) => env(s).ok_or_else(|| EvalError::Unbound(s.clone()))?,
            Atom::FloorDiv(a, k) => {
                if *k == 0 {
                    return Err(EvalError::DivisionByZero);
                }
                a.eval_with(env)?.div_euclid(*k)
            }
            Atom::CeilDiv(a, k) => {
                if *k == 0 {
                    return Err(EvalError::DivisionByZero);
                }
                let v = a.eval_with(env)?;
                -((-v).div_euclid(*k))
            }
            Atom::Max(a, b) => a.eval_with(env)?.max(b.eval_with(env)?),
            Atom::Min(a, b) => a.eval_with(env)?.min(b.eval_with(env)?),
        })
    }

    fn symbols(&self, out: &mut Vec<String>) {
        match self {
            Atom::Symbol(s) => {
                if !out.contains(s) {
                    out.push(s.clone())
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

impl SymInt {
    pub fn sym(name: impl Into<String>) -> SymInt {
        SymInt::from_poly(Poly::atom(Atom::Symbol(name.into())))
    }

    fn from_poly(p: Poly) -> SymInt {
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
        match (self, o) {
            (SymInt::Int(a), SymInt::Int(b)) => a.checked_add(*b).map(SymInt::Int).ok_or(Overflow),
            _ => Ok(SymInt::from_poly(self.poly().add(&o.poly())?)),
        }
    }

    pub fn sub(&self, o: &SymInt) -> R<SymInt> {
        self.add(&o.neg()?)
    }

    pub fn neg(&self) -> R<SymInt> {
        match self {
            SymInt::Int(a) => a.checked_neg().map(SymInt::Int).ok_or(Overflow),
            SymInt::Sym(p) => Ok(SymInt::from_poly(p.scale(-1)?)),
        }
    }

    pub fn mul(&self, o: &SymInt) -> R<SymInt> {
        match (self, o) {
            (SymInt::Int(a), SymInt::Int(b)) => a.checked_mul(*b).map(SymInt::Int).ok_or(Overflow),
            _ => Ok(SymInt::from_poly(self.poly().mul(&o.poly())?)),
        }
    }

    /// Floor division by a known non-zero divisor.
    pub fn floor_div(&self, k: i64) -> R<SymInt> {
        if k == 0 {
            return Err(Overflow);
        }
        match self {
            SymInt::Int(a) => Ok(SymInt::Int(a.div_euclid(k))),
            SymInt::Sym(p) => Ok(match p.exact_div(k) {
                Some(q) => SymInt::from_poly(q),
                None if k == 1 => self.clone(),
                None => SymInt::from_poly(Poly::atom(Atom::FloorDiv(self.clone(), k))),
            }),
        }
    }

    /// Ceiling division by a known non-zero divisor.
    pub fn ceil_div(&self, k: i64) -> R<SymInt> {
        if k == 0 {
            return Err(Overflow);
        }
        match self {
            SymInt::Int(a) => Ok(SymInt::Int(-((-a).div_euclid(k)))),
            SymInt::Sym(p) => Ok(match p.exact_div(k) {
                Some(q) => SymInt::from_poly(q),
                None => SymInt::from_poly(Poly::atom(Atom::CeilDiv(self.clone(), k))),
            }),
        }
    }

    /// Division by a possibly symbolic divisor: exact when the divisor is a
    /// factor (`2*batch*seq / seq`), else `None`.
    pub fn exact_div(&self, d: &SymInt) -> Option<SymInt> {
        match (self, d) {
            (_, SymInt::Int(0)) => None,
            (SymInt::Int(a), SymInt::Int(b)) => (a % b == 0).then(|| SymInt::Int(a / b)),
            (_, SymInt::Int(b)) => self.poly().exact_div(*b).map(SymInt::from_poly),
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
                    if c % dc != 0 {
                        return None;
                    }
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
                        out.constant += c / dc;
                    } else {
                        out.terms.insert(mono, c / dc);
                    }
                }
                Some(SymInt::from_poly(out))
            }
            (SymInt::Int(_), SymInt::Sym(_)) => None,
        }
    }

    pub fn max_with(&self, o: &SymInt) -> SymInt {
        match (self, o) {
            (SymInt::Int(a), SymInt::Int(b)) => SymInt::Int(*a.max(b)),
            _ if self == o => self.clone(),
            _ => SymInt::from_poly(Poly::atom(Atom::Max(
                self.clone().min_of(o.clone()),
                self.clone().max_of(o.clone()),
            ))),
        }
    }

    pub fn min_with(&self, o: &SymInt) -> SymInt {
        match (self, o) {
            (SymInt::Int(a), SymInt::Int(b)) => SymInt::Int(*a.min(b)),
            _ if self == o => self.clone(),
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
    // Past the first character (a sign), which may be several bytes long.
    let mut rest = text.chars();
    rest.next();
    if rest.as_str().contains(['+', '-']) {
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
        assert!(s("a").max_with(&b.sub(&i(4)).unwrap()).is_non_negative());
    }

    #[test]
    fn overflow_is_an_error() {
        assert_eq!(i(i64::MAX).add(&i(1)), Err(Overflow));
        assert!(s("x").mul(&i(i64::MAX)).unwrap().mul(&i(2)).is_err());
    }
}
