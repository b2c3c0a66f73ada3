//! The syntax tree of formulas and shape patterns, with source spans.
//!
//! This tree is the single source of truth for a formula: it is rendered to
//! plain text (`c3 explain`), to LaTeX (DETAILS.md) and lowered to evalexpr.
//!
//! `build.rs` includes this file to read the built-in rules when c3 is
//! built (see [`super::packed`]): of the crate, it uses only the rule
//! modules `build.rs` includes with it (`ast`, `blocks`, `packed`,
//! `parse`, `yaml`).

use std::fmt;

/// Byte range inside the formula text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }

    pub fn from_symbol(s: &str) -> Option<BinOp> {
        Some(match s {
            "||" => BinOp::Or,
            "&&" => BinOp::And,
            "==" => BinOp::Eq,
            "!=" => BinOp::Ne,
            "<" => BinOp::Lt,
            "<=" => BinOp::Le,
            ">" => BinOp::Gt,
            ">=" => BinOp::Ge,
            "+" => BinOp::Add,
            "-" => BinOp::Sub,
            "*" => BinOp::Mul,
            "/" => BinOp::Div,
            "%" => BinOp::Rem,
            _ => return None,
        })
    }

    /// Binding strength; larger binds tighter.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
            BinOp::Add | BinOp::Sub => 4,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 5,
        }
    }

    pub fn is_comparison(self) -> bool {
        self.precedence() == 3
    }
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    Int(i64),
    Str(String),
    /// A bound name: dimension, list, attribute, `let`, tensor (its presence),
    /// or a switch (`fma`, `opset`).
    Name(String),
    /// `|X|`: the element count of tensor X (its storage size in memory formulas).
    Size(String),
    Call(String, Vec<Expr>),
    List(Vec<Expr>),
    Index(Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
}

#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// Equality of trees ignores spans, so a parsed, rendered and re-parsed
/// formula compares equal to the original.
impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        use ExprKind::*;
        match (&self.kind, &other.kind) {
            (Int(a), Int(b)) => a == b,
            (Str(a), Str(b)) | (Name(a), Name(b)) | (Size(a), Size(b)) => a == b,
            (Call(f, a), Call(g, b)) => f == g && a == b,
            (List(a), List(b)) => a == b,
            (Index(a, i), Index(b, j)) => a == b && i == j,
            (Unary(o, a), Unary(p, b)) => o == p && a == b,
            (Binary(o, a, b), Binary(p, c, d)) => o == p && a == c && b == d,
            (Cond(a, b, c), Cond(d, e, f)) => a == d && b == e && c == f,
            _ => false,
        }
    }
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Self {
        Self { kind, span }
    }

    /// Calls `f` on this node and every node below it, parents first.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Int(_) | ExprKind::Str(_) | ExprKind::Name(_) | ExprKind::Size(_) => {}
            ExprKind::Call(_, args) | ExprKind::List(args) => args.iter().for_each(|a| a.walk(f)),
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Unary(_, a) => a.walk(f),
            ExprKind::Cond(a, b, c) => {
                a.walk(f);
                b.walk(f);
                c.walk(f);
            }
        }
    }

    /// Binding strength of this node's top-level operator.
    pub fn precedence(&self) -> u8 {
        match &self.kind {
            ExprKind::Cond(..) => 0,
            ExprKind::Binary(op, ..) => op.precedence(),
            ExprKind::Unary(..) => 6,
            _ => 7,
        }
    }
}

/// One dimension in a shape pattern.
#[derive(Debug, Clone, PartialEq)]
pub enum DimPat {
    /// A literal size that must match.
    Fixed(u64),
    /// A name bound to one dimension.
    Name(String),
    /// `*S`: a name bound to the list of all remaining dimensions.
    Rest(String),
}

/// One tensor in an `inputs:` or `outputs:` pattern list.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorPat {
    pub name: String,
    /// `None` when the pattern says nothing about the shape (`X`).
    pub dims: Option<Vec<DimPat>>,
    pub optional: bool,
    /// `Xs...`: every remaining tensor.
    pub variadic: bool,
    pub span: Span,
}

impl fmt::Display for TensorPat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if self.variadic {
            return f.write_str("...");
        }
        if let Some(dims) = &self.dims {
            f.write_str("[")?;
            for (i, d) in dims.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                match d {
                    DimPat::Fixed(n) => write!(f, "{n}")?,
                    DimPat::Name(n) => f.write_str(n)?,
                    DimPat::Rest(n) => write!(f, "*{n}")?,
                }
            }
            f.write_str("]")?;
        }
        if self.optional {
            f.write_str("?")?;
        }
        Ok(())
    }
}
