//! Rendering the formula tree: canonical plain text (for `c3 explain`, and
//! parseable again into the same tree) and LaTeX (for DETAILS.md).

use super::ast::{BinOp, Expr, ExprKind, UnOp};

/// Canonical text with only the parentheses the grammar needs.
pub fn to_text(e: &Expr) -> String {
    let mut out = String::new();
    text(e, &mut out);
    out
}

/// Writes `body`, between `open` and `close` when `wrap` is set.
fn wrapped(out: &mut String, wrap: bool, open: &str, close: &str, body: impl FnOnce(&mut String)) {
    if wrap {
        out.push_str(open);
    }
    body(out);
    if wrap {
        out.push_str(close);
    }
}

/// Writes each item with `f`, separated by commas.
fn comma_list(out: &mut String, items: &[Expr], f: impl Fn(&Expr, &mut String)) {
    for (i, a) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        f(a, out);
    }
}

fn text_wrapped(e: &Expr, wrap: bool, out: &mut String) {
    wrapped(out, wrap, "(", ")", |o| text(e, o));
}

fn text_list(items: &[Expr], out: &mut String) {
    comma_list(out, items, text);
}

fn text(e: &Expr, out: &mut String) {
    match &e.kind {
        ExprKind::Int(v) => out.push_str(&v.to_string()),
        ExprKind::Str(s) => {
            out.push('"');
            out.push_str(s);
            out.push('"');
        }
        ExprKind::Name(n) => out.push_str(n),
        ExprKind::Size(n) => {
            out.push('|');
            out.push_str(n);
            out.push('|');
        }
        ExprKind::Call(f, args) => {
            out.push_str(f);
            out.push('(');
            text_list(args, out);
            out.push(')');
        }
        ExprKind::List(items) => {
            out.push('[');
            text_list(items, out);
            out.push(']');
        }
        ExprKind::Index(base, i) => {
            text_wrapped(base, base.precedence() < 7, out);
            out.push('[');
            text(i, out);
            out.push(']');
        }
        ExprKind::Unary(op, a) => {
            out.push(if *op == UnOp::Neg { '-' } else { '!' });
            text_wrapped(a, a.precedence() < 6, out);
        }
        ExprKind::Binary(op, a, b) => {
            let p = op.precedence();
            // Comparisons do not chain, so both sides must bind tighter.
            let left_wrap = if op.is_comparison() {
                a.precedence() <= p
            } else {
                a.precedence() < p
            };
            text_wrapped(a, left_wrap, out);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            text_wrapped(b, b.precedence() <= p, out);
        }
        ExprKind::Cond(c, a, b) => {
            text_wrapped(c, c.precedence() == 0, out);
            out.push_str(" ? ");
            text(a, out);
            out.push_str(" : ");
            text(b, out);
        }
    }
}

/// LaTeX for GitHub math (`$...$`). Uses no `|`, so it is safe in Markdown tables.
pub fn to_latex(e: &Expr) -> String {
    let mut out = String::new();
    latex(e, &mut out, false);
    out
}

/// LaTeX of a formula whose `/` divides exactly (a `time:` formula's): a
/// fraction, not the floor of one.
pub fn to_latex_real(e: &Expr) -> String {
    let mut out = String::new();
    latex(e, &mut out, true);
    out
}

/// A name as LaTeX: one letter stays italic, longer names are `\mathit{...}`.
pub fn latex_name(n: &str) -> String {
    let escaped = n.replace('_', "\\_");
    if n.chars().count() == 1 {
        escaped
    } else if n.len() == 2
        && n.as_bytes()[0].is_ascii_alphabetic()
        && n.as_bytes()[1].is_ascii_lowercase()
        && n.as_bytes()[0].is_ascii_uppercase()
    {
        // `Cg`, `Mg`: a dimension with a one-letter qualifier reads as a subscript.
        format!("{}_{{{}}}", &n[..1], &n[1..])
    } else {
        format!("\\mathit{{{escaped}}}")
    }
}

fn latex_wrapped(e: &Expr, wrap: bool, out: &mut String, real: bool) {
    wrapped(out, wrap, "\\left(", "\\right)", |o| latex(e, o, real));
}

fn latex_args(args: &[Expr], out: &mut String, real: bool) {
    comma_list(out, args, |a, o| latex(a, o, real));
}

/// `real`: `/` divides exactly.
fn latex(e: &Expr, out: &mut String, real: bool) {
    match &e.kind {
        ExprKind::Int(v) => out.push_str(&v.to_string()),
        ExprKind::Str(s) => out.push_str(&format!("\\text{{\"{s}\"}}")),
        ExprKind::Name(n) => match n.as_str() {
            "fma" => out.push_str("\\mathrm{fma}"),
            "full_attention" => out.push_str("\\mathrm{full\\_attention}"),
            "opset" => out.push_str("\\mathrm{opset}"),
            "true" | "false" => out.push_str(&format!("\\mathrm{{{n}}}")),
            _ => out.push_str(&latex_name(n)),
        },
        ExprKind::Size(n) => out.push_str(&format!("\\lvert {} \\rvert", latex_name(n))),
        ExprKind::Call(f, args) => match (f.as_str(), args.as_slice()) {
            ("prod", [a]) => {
                out.push_str("\\prod ");
                latex_wrapped(a, a.precedence() < 7, out, real);
            }
            ("sum", [a]) => {
                out.push_str("\\sum ");
                latex_wrapped(a, a.precedence() < 7, out, real);
            }
            ("cdiv", [a, b]) => {
                out.push_str("\\left\\lceil ");
                latex(a, out, real);
                out.push_str(" / ");
                latex(b, out, real);
                out.push_str(" \\right\\rceil");
            }
            ("min" | "max", _) => {
                out.push_str(&format!("\\{f}\\left("));
                latex_args(args, out, real);
                out.push_str("\\right)");
            }
            _ => {
                out.push_str(&format!(
                    "\\operatorname{{{}}}\\left(",
                    f.replace('_', "\\_")
                ));
                latex_args(args, out, real);
                out.push_str("\\right)");
            }
        },
        ExprKind::List(items) => {
            out.push_str("\\left[");
            latex_args(items, out, real);
            out.push_str("\\right]");
        }
        ExprKind::Index(base, i) => {
            latex_wrapped(base, base.precedence() < 7, out, real);
            out.push_str("_{");
            latex(i, out, real);
            out.push('}');
        }
        ExprKind::Unary(op, a) => {
            out.push_str(if *op == UnOp::Neg { "-" } else { "\\lnot " });
            latex_wrapped(a, a.precedence() < 6, out, real);
        }
        ExprKind::Binary(BinOp::Div, a, b) if real => {
            out.push_str("\\frac{");
            latex(a, out, real);
            out.push_str("}{");
            latex(b, out, real);
            out.push('}');
        }
        ExprKind::Binary(BinOp::Div, a, b) => {
            out.push_str("\\left\\lfloor ");
            latex_wrapped(a, a.precedence() < BinOp::Div.precedence(), out, real);
            out.push_str(" / ");
            latex_wrapped(b, b.precedence() <= BinOp::Div.precedence(), out, real);
            out.push_str(" \\right\\rfloor");
        }
        ExprKind::Binary(op, a, b) => {
            let p = op.precedence();
            let left_wrap = if op.is_comparison() {
                a.precedence() <= p
            } else {
                a.precedence() < p
            };
            latex_wrapped(a, left_wrap, out, real);
            out.push_str(match op {
                BinOp::Or => " \\lor ",
                BinOp::And => " \\land ",
                BinOp::Eq => " = ",
                BinOp::Ne => " \\neq ",
                BinOp::Lt => " < ",
                BinOp::Le => " \\le ",
                BinOp::Gt => " > ",
                BinOp::Ge => " \\ge ",
                BinOp::Add => " + ",
                BinOp::Sub => " - ",
                BinOp::Mul => " \\cdot ",
                BinOp::Rem => " \\bmod ",
                BinOp::Div => unreachable!("handled above"),
            });
            latex_wrapped(b, b.precedence() <= p, out, real);
        }
        ExprKind::Cond(c, a, b) => {
            out.push_str("\\left(");
            latex(a, out, real);
            out.push_str("\\ \\text{if}\\ ");
            latex(c, out, real);
            out.push_str("\\ \\text{else}\\ ");
            latex(b, out, real);
            out.push_str("\\right)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::parse::parse_formula;

    fn roundtrip(src: &str) -> String {
        let e = parse_formula(src).unwrap();
        let t = to_text(&e);
        assert_eq!(parse_formula(&t).unwrap(), e, "{src} -> {t}");
        t
    }

    #[test]
    fn text_keeps_only_needed_parentheses() {
        assert_eq!(roundtrip("(a + b) * c"), "(a + b) * c");
        assert_eq!(roundtrip("a + (b * c)"), "a + b * c");
        assert_eq!(roundtrip("a - (b - c)"), "a - (b - c)");
        assert_eq!(roundtrip("(a < b) == c"), "(a < b) == c");
        assert_eq!(roundtrip("(c ? a : b) + 1"), "(c ? a : b) + 1");
        assert_eq!(roundtrip("-(a + b)"), "-(a + b)");
        assert_eq!(roundtrip("(a+b)[0]"), "(a + b)[0]");
        assert_eq!(
            roundtrip("fma?|Y|*w:2*|Y|*w"),
            "fma ? |Y| * w : 2 * |Y| * w"
        );
    }

    #[test]
    fn latex_forms() {
        let e = parse_formula("fma ? |Y| * Cg * prod(K) : (2 * Cg * prod(K) - 1) * |Y|").unwrap();
        assert_eq!(
            to_latex(&e),
            "\\left(\\lvert Y \\rvert \\cdot C_{g} \\cdot \\prod K\\ \\text{if}\\ \\mathrm{fma}\\ \\text{else}\\ \\left(2 \\cdot C_{g} \\cdot \\prod K - 1\\right) \\cdot \\lvert Y \\rvert\\right)"
        );
        let e = parse_formula("|X| / c + cdiv(a, b) + S[-1]").unwrap();
        assert_eq!(
            to_latex(&e),
            "\\left\\lfloor \\lvert X \\rvert / c \\right\\rfloor + \\left\\lceil a / b \\right\\rceil + S_{-1}"
        );
        assert!(!to_latex(&e).contains('|'));
        // A time formula's `/` divides exactly: a fraction.
        let e = parse_formula("compute_s / compute_eff + 3 / 1000000").unwrap();
        assert_eq!(
            to_latex_real(&e),
            "\\frac{\\mathit{compute\\_s}}{\\mathit{compute\\_eff}} + \\frac{3}{1000000}"
        );
        // A sum dividend keeps its brackets inside the floor.
        let e = parse_formula("(taps - 1) / 3").unwrap();
        assert_eq!(
            to_latex(&e),
            "\\left\\lfloor \\left(\\mathit{taps} - 1\\right) / 3 \\right\\rfloor"
        );
    }
}
