//! Parsing formula and pattern text (grammar/formula.pest) into the syntax tree.
//!
//! `build.rs` includes this file to read the built-in rules when c3 is
//! built (see [`super::packed`]): of the crate, it uses only the rule
//! modules `build.rs` includes with it (`ast`, `blocks`, `packed`,
//! `parse`, `yaml`).

use pest::Parser;
use pest::iterators::Pair;

use super::ast::{BinOp, DimPat, Expr, ExprKind, Span, TensorPat, UnOp};

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/formula.pest"]
struct FormulaParser;

/// A syntax error: what was expected and where (a byte offset in the text).
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub message: String,
    pub offset: usize,
}

/// Formulas longer than this (in characters) are refused (a rule file is read by people).
pub const MAX_FORMULA_LEN: usize = 4096;
/// Deeper nesting than this is refused before the parser can recurse into it.
pub const MAX_NESTING: usize = 64;
/// Prefix operators (`-`, `!`) and conditionals (`?`) each take the parser one
/// level deeper: a formula may hold this many.
pub const MAX_RECURSIVE_OPERATORS: usize = 4 * MAX_NESTING;

fn rule_name(rule: &Rule) -> String {
    match rule {
        Rule::EOI => "end of formula",
        Rule::expr | Rule::or_expr | Rule::cmp_expr => "an expression",
        Rule::add_expr | Rule::unary | Rule::postfix => "an expression",
        Rule::int => "a number",
        Rule::string => "a string",
        Rule::size => "|tensor|",
        Rule::call => "a function call",
        Rule::list => "a list",
        Rule::ident => "a name",
        Rule::paren => "(",
        Rule::index => "[index]",
        Rule::or_op | Rule::and_op | Rule::cmp_op | Rule::add_op | Rule::mul_op => "an operator",
        Rule::question => "?",
        Rule::colon => "':'",
        Rule::prefix_op => "- or !",
        Rule::tensor_pat => "a tensor pattern like X[N, C, *S]",
        Rule::dims => "[dims]",
        Rule::dim => "a dimension",
        Rule::rest => "*name",
        Rule::optional => "?",
        Rule::variadic => "...",
        _ => "something else",
    }
    .to_string()
}

fn syntax_error(e: pest::error::Error<Rule>) -> SyntaxError {
    let offset = match e.location {
        pest::error::InputLocation::Pos(p) => p,
        pest::error::InputLocation::Span((s, _)) => s,
    };
    let e = e.renamed_rules(rule_name);
    let mut message = e.variant.message().to_string();
    // pest lists the same friendly name once per grammar rule; say it once.
    if let Some(rest) = message.strip_prefix("expected ") {
        let mut seen: Vec<&str> = Vec::new();
        for part in rest.split(", ").flat_map(|p| p.split(" or ")) {
            let part = part.trim_start_matches("or ").trim();
            if !part.is_empty() && !seen.contains(&part) {
                seen.push(part);
            }
        }
        message = format!("expected {}", seen.join(" or "));
    }
    SyntaxError { message, offset }
}

/// Refuses texts that are too long or nest too deep, before pest recurses.
fn check_limits(text: &str) -> Result<(), SyntaxError> {
    let chars = text.chars().count();
    if chars > MAX_FORMULA_LEN {
        return Err(SyntaxError {
            message: format!(
                "formula is {chars} characters, which exceeds the limit of {MAX_FORMULA_LEN}"
            ),
            offset: 0,
        });
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(SyntaxError {
                        message: format!(
                            "brackets nest deeper than the limit of {MAX_NESTING} levels"
                        ),
                        offset: i,
                    });
                }
            }
            ')' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    // Long runs of prefix operators or `?` also recurse.
    let ops = text
        .chars()
        .filter(|c| matches!(c, '-' | '!' | '?'))
        .count();
    if ops > MAX_RECURSIVE_OPERATORS {
        return Err(SyntaxError {
            message: format!(
                "formula has {ops} of the operators -, ! and ?, which exceeds the limit of {MAX_RECURSIVE_OPERATORS} operators"
            ),
            offset: 0,
        });
    }
    Ok(())
}

/// Parses one formula.
pub fn parse_formula(text: &str) -> Result<Expr, SyntaxError> {
    check_limits(text)?;
    let mut pairs = FormulaParser::parse(Rule::formula, text).map_err(syntax_error)?;
    let formula = pairs
        .next()
        .expect("grammar: formula always yields one pair");
    let expr = formula
        .into_inner()
        .next()
        .expect("grammar: formula holds an expr");
    build_expr(expr)
}

fn span_of(pair: &Pair<Rule>) -> Span {
    let s = pair.as_span();
    Span {
        start: s.start(),
        end: s.end(),
    }
}

fn join(a: Span, b: Span) -> Span {
    Span {
        start: a.start.min(b.start),
        end: a.end.max(b.end),
    }
}

fn binary(op: BinOp, left: Expr, right: Expr) -> Expr {
    let span = join(left.span, right.span);
    Expr::new(ExprKind::Binary(op, Box::new(left), Box::new(right)), span)
}

/// Whether `op` binds tighter than the other operators of its rule: `&&`
/// within `||`, and `*`, `/`, `%` within `+` and `-`.
fn binds_tighter(op: BinOp) -> bool {
    matches!(op, BinOp::And | BinOp::Mul | BinOp::Div | BinOp::Rem)
}

/// `first op operand op operand ...` as a tree: the tighter operators
/// first, every operator left-associative, as one grammar rule per level
/// would have nested them.
fn fold_two_levels(first: Expr, rest: Vec<(BinOp, Expr)>) -> Expr {
    // The operands and looser operators folded so far, and the operator
    // that joins them to the run of tighter ones being folded in `run`.
    let mut done: Option<(Expr, BinOp)> = None;
    let mut run = first;
    for (op, operand) in rest {
        if binds_tighter(op) {
            run = binary(op, run, operand);
        } else {
            let left = match done.take() {
                Some((left, loose)) => binary(loose, left, run),
                None => run,
            };
            done = Some((left, op));
            run = operand;
        }
    }
    match done {
        Some((left, loose)) => binary(loose, left, run),
        None => run,
    }
}

fn build_expr(pair: Pair<Rule>) -> Result<Expr, SyntaxError> {
    let span = span_of(&pair);
    match pair.as_rule() {
        Rule::expr => {
            let mut inner = pair.into_inner();
            let cond = build_expr(inner.next().expect("grammar: expr starts with or_expr"))?;
            if inner.next().is_none() {
                return Ok(cond);
            }
            let then = build_expr(inner.next().expect("grammar: ? is followed by expr"))?;
            inner.next(); // ':'
            let other = build_expr(inner.next().expect("grammar: : is followed by expr"))?;
            Ok(Expr::new(
                ExprKind::Cond(Box::new(cond), Box::new(then), Box::new(other)),
                span,
            ))
        }
        Rule::or_expr | Rule::cmp_expr | Rule::add_expr => {
            let mut inner = pair.into_inner();
            let first = build_expr(inner.next().expect("grammar: operand"))?;
            let mut rest = Vec::new();
            while let Some(op) = inner.next() {
                let op = BinOp::from_symbol(op.as_str()).expect("grammar: operator symbol");
                let right =
                    build_expr(inner.next().expect("grammar: operator has a right operand"))?;
                rest.push((op, right));
            }
            Ok(fold_two_levels(first, rest))
        }
        Rule::unary => {
            let mut ops = Vec::new();
            let mut operand = None;
            for p in pair.into_inner() {
                match p.as_rule() {
                    Rule::prefix_op => ops.push((p.as_str() == "-", span_of(&p))),
                    _ => operand = Some(build_expr(p)?),
                }
            }
            let mut e = operand.expect("grammar: unary has an operand");
            for (neg, op_span) in ops.into_iter().rev() {
                let op = if neg { UnOp::Neg } else { UnOp::Not };
                let span = join(op_span, e.span);
                e = Expr::new(ExprKind::Unary(op, Box::new(e)), span);
            }
            Ok(e)
        }
        Rule::postfix => {
            let mut inner = pair.into_inner();
            let mut e = build_expr(inner.next().expect("grammar: postfix has a primary"))?;
            for index in inner {
                let idx_span = span_of(&index);
                let i = build_expr(
                    index
                        .into_inner()
                        .next()
                        .expect("grammar: index holds expr"),
                )?;
                let span = join(e.span, idx_span);
                e = Expr::new(ExprKind::Index(Box::new(e), Box::new(i)), span);
            }
            Ok(e)
        }
        Rule::paren => {
            // Keep the parentheses in the span, so errors quote them too.
            let mut inner =
                build_expr(pair.into_inner().next().expect("grammar: paren holds expr"))?;
            inner.span = span;
            Ok(inner)
        }
        Rule::int => {
            let v: i64 = pair.as_str().parse().map_err(|_| SyntaxError {
                message: format!("number {} does not fit in 64 bits", pair.as_str()),
                offset: span.start,
            })?;
            Ok(Expr::new(ExprKind::Int(v), span))
        }
        Rule::string => {
            let s = pair.as_str();
            Ok(Expr::new(
                ExprKind::Str(s[1..s.len() - 1].to_string()),
                span,
            ))
        }
        Rule::ident => Ok(Expr::new(ExprKind::Name(pair.as_str().to_string()), span)),
        Rule::size => {
            let name = pair.into_inner().next().expect("grammar: |ident|").as_str();
            Ok(Expr::new(ExprKind::Size(name.to_string()), span))
        }
        Rule::call => {
            let mut inner = pair.into_inner();
            let name = inner
                .next()
                .expect("grammar: call has a name")
                .as_str()
                .to_string();
            let args = inner.map(build_expr).collect::<Result<Vec<_>, _>>()?;
            Ok(Expr::new(ExprKind::Call(name, args), span))
        }
        Rule::list => {
            let items = pair
                .into_inner()
                .map(build_expr)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Expr::new(ExprKind::List(items), span))
        }
        other => unreachable!("grammar: unexpected rule {other:?} in expression"),
    }
}

/// Parses an `inputs:` / `outputs:` pattern list.
pub fn parse_patterns(text: &str) -> Result<Vec<TensorPat>, SyntaxError> {
    check_limits(text)?;
    let mut pairs = FormulaParser::parse(Rule::patterns, text).map_err(syntax_error)?;
    let list = pairs
        .next()
        .expect("grammar: patterns always yields one pair");
    let mut out = Vec::new();
    for pat in list.into_inner() {
        if pat.as_rule() != Rule::tensor_pat {
            continue; // EOI
        }
        let span = span_of(&pat);
        let mut inner = pat.into_inner();
        let name = inner
            .next()
            .expect("grammar: pattern has a name")
            .as_str()
            .to_string();
        let mut tp = TensorPat {
            name,
            dims: None,
            optional: false,
            variadic: false,
            span,
        };
        for part in inner {
            match part.as_rule() {
                Rule::variadic => tp.variadic = true,
                Rule::optional => tp.optional = true,
                Rule::dims => {
                    let mut dims = Vec::new();
                    for dim in part.into_inner() {
                        let d = dim
                            .into_inner()
                            .next()
                            .expect("grammar: dim holds one item");
                        dims.push(match d.as_rule() {
                            Rule::int => {
                                DimPat::Fixed(d.as_str().parse().map_err(|_| SyntaxError {
                                    message: format!("dimension {} is too large", d.as_str()),
                                    offset: d.as_span().start(),
                                })?)
                            }
                            Rule::rest => DimPat::Rest(
                                d.into_inner()
                                    .next()
                                    .expect("grammar: *ident")
                                    .as_str()
                                    .into(),
                            ),
                            _ => DimPat::Name(d.as_str().to_string()),
                        });
                    }
                    tp.dims = Some(dims);
                }
                _ => {}
            }
        }
        out.push(tp);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Expr {
        Expr::new(ExprKind::Name(s.into()), Span::default())
    }

    #[test]
    fn precedence_and_associativity() {
        let e = parse_formula("a - b - c * d").unwrap();
        // (a - b) - (c * d)
        match e.kind {
            ExprKind::Binary(BinOp::Sub, l, r) => {
                assert!(matches!(l.kind, ExprKind::Binary(BinOp::Sub, ..)));
                assert!(matches!(r.kind, ExprKind::Binary(BinOp::Mul, ..)));
            }
            other => panic!("unexpected tree {other:?}"),
        }
    }

    /// `&&` and `||` share a grammar rule, as do `*` and `+`: the tree still
    /// nests them by precedence, left to right within a level, each node
    /// spanning its operands.
    #[test]
    fn two_levels_in_one_rule_nest_by_precedence() {
        let show = |e: &Expr| -> String {
            fn go(e: &Expr, text: &str, out: &mut String) {
                match &e.kind {
                    ExprKind::Binary(op, l, r) => {
                        out.push('(');
                        go(l, text, out);
                        out.push_str(op.symbol());
                        go(r, text, out);
                        out.push(')');
                    }
                    _ => out.push_str(&text[e.span.start..e.span.end]),
                }
            }
            let mut out = String::new();
            go(e, "a+b*c-d/e%f||g&&h&&i||j", &mut out);
            out
        };
        let e = parse_formula("a+b*c-d/e%f||g&&h&&i||j").unwrap();
        assert_eq!(show(&e), "((((a+(b*c))-((d/e)%f))||((g&&h)&&i))||j)");
        assert_eq!((e.span.start, e.span.end), (0, 23));
        let ExprKind::Binary(_, l, _) = &e.kind else {
            panic!("a binary tree")
        };
        // `a+b*c-d/e%f||g&&h&&i`: everything but `||j`.
        assert_eq!((l.span.start, l.span.end), (0, 20));
        // Comparisons still do not chain.
        assert_eq!(parse_formula("a < b < c").unwrap_err().offset, 6);
    }

    #[test]
    fn sizes_calls_conditionals_and_indexing() {
        let e = parse_formula("fma ? |Y| * prod(K) : (B ? 2 : 1) * S[-1]").unwrap();
        let ExprKind::Cond(c, _, _) = &e.kind else {
            panic!("expected a conditional")
        };
        assert_eq!(**c, name("fma"));
        assert!(parse_formula("|X| + |W| + |B|").is_ok());
        assert!(parse_formula("mode == \"linear\" && !B").is_ok());
        assert!(parse_formula("[1, 2, K[0]]").is_ok());
    }

    #[test]
    fn syntax_errors_say_where() {
        let e = parse_formula("2 * (3 + ").unwrap_err();
        assert_eq!(e.offset, 9);
        assert!(e.message.starts_with("expected"), "{}", e.message);
        let e = parse_formula("a b").unwrap_err();
        assert_eq!(e.offset, 2);
        let e = parse_formula("99999999999999999999").unwrap_err();
        assert!(e.message.contains("64 bits"));
        let deep = "(".repeat(100) + "1" + &")".repeat(100);
        assert!(parse_formula(&deep).unwrap_err().message.contains("nest"));
    }

    #[test]
    fn patterns() {
        let p = parse_patterns("X[N, C, *S], W[M, Cg, *K], B[M]?, Rest...").unwrap();
        assert_eq!(p.len(), 4);
        assert_eq!(p[0].to_string(), "X[N, C, *S]");
        assert!(p[2].optional);
        assert!(p[3].variadic);
        assert_eq!(p[1].dims.as_ref().unwrap()[2], DimPat::Rest("K".into()));
        assert!(parse_patterns("").unwrap().is_empty());
        assert!(parse_patterns("X[N,").is_err());
    }
}
