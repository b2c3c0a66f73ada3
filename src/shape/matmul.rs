//! Matrix products: Gemm, MatMul (numpy-style batch broadcasting) and Einsum;
//! onnxruntime's FusedGemm (com.microsoft), a Gemm with its activation.

use super::ctx::{InferCtx, Result, ShapeError, broadcast, err, join};
use super::dims::{same_size, unify};
use super::fact::Fact;
use super::{InferFn, OpEntry};
use crate::ir::{DType, Dim};
use std::collections::BTreeMap;

/// numpy matmul: 1-D operands gain and then lose an axis; batch axes broadcast.
fn matmul_shape(a: &[Dim], b: &[Dim]) -> Result<Vec<Dim>> {
    let (Some((ka, a_rest)), Some((n, b_rest))) = (a.split_last(), b.split_last()) else {
        return err("MatMul operands must not be scalars");
    };
    // a: [..., M, K]; for 1-D a there is no M.
    let (m, a_batch) = match a_rest.split_last() {
        Some((m, batch)) => (Some(m), batch),
        None => (None, a_rest),
    };
    // b: [..., K, N]; for 1-D b the only axis is K and there is no N.
    let (kb, n, b_batch) = match b_rest.split_last() {
        Some((k, batch)) => (k, Some(n), batch),
        None => (n, None, b_rest),
    };
    same_size(ka, kb, "MatMul inner dimensions")?;
    let mut out = broadcast(a_batch, b_batch)?;
    out.extend(m.cloned());
    out.extend(n.cloned());
    Ok(out)
}

/// MatMul, MatMulInteger (int32), QLinearMatMul (typed by y_zero_point).
pub(super) fn matmul(ctx: &mut InferCtx) -> Result<()> {
    let (ai, bi, dtype) = match ctx.op {
        "MatMulInteger" => (0, 1, Some(DType::Int32)),
        "QLinearMatMul" => (0, 3, ctx.dtype(7)),
        _ => (0, 1, ctx.dtype(0)),
    };
    let shape = match (ctx.shape(ai), ctx.shape(bi)) {
        (Some(a), Some(b)) => Some(matmul_shape(a, b)?),
        _ => None,
    };
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// Gemm: `op(A) [M, K] x op(B) [K, N] -> [M, N]`, op a transpose per transA/B;
/// C broadcasts to the result.
fn gemm(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    let operand = |i: usize, trans: &str| -> Result<Option<(Dim, Dim)>> {
        match ctx.shape(i) {
            Some(s) if s.len() == 2 => {
                let (r, c) = (s[0].clone(), s[1].clone());
                Ok(Some(if ctx.attr_int_or(trans, 0) != 0 {
                    (c, r)
                } else {
                    (r, c)
                }))
            }
            Some(s) => err(format!(
                "Gemm input {} must be 2-D, got [{}]",
                i + 1,
                join(s)
            )),
            None => Ok(None),
        }
    };
    let (a, b) = (operand(0, "transA")?, operand(1, "transB")?);
    let shape = match (a, b) {
        (Some((m, ka)), Some((kb, n))) => {
            same_size(&ka, &kb, "Gemm inner dimensions")?;
            Some(vec![m, n])
        }
        _ => None,
    };
    if let (Some(out), Some(c)) = (&shape, ctx.shape(2)) {
        // Unidirectional: C may not grow the result.
        let b = broadcast(out, c)?;
        if b.len() != out.len() || b.iter().zip(out).any(|(x, y)| unify(x, y).is_none()) {
            return err(format!(
                "Gemm C [{}] does not broadcast to [{}]",
                join(c),
                join(out)
            ));
        }
    }
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// One subscript of an Einsum term.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sub {
    Label(char),
    Ellipsis,
}

/// Parses one term (`ij`, `...ij`, `b...`); at most one ellipsis.
fn einsum_term(t: &str) -> Result<Vec<Sub>> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("...") {
            if out.contains(&Sub::Ellipsis) {
                return err(format!("Einsum term {t:?} has more than one ellipsis"));
            }
            out.push(Sub::Ellipsis);
            rest = r;
        } else if c.is_ascii_alphabetic() {
            out.push(Sub::Label(c));
            rest = &rest[1..];
        } else {
            return err(format!("Einsum term {t:?} has an invalid character {c:?}"));
        }
    }
    Ok(out)
}

/// Einsum: labels take their input's sizes; `...` broadcasts; without `->`
/// the output is the ellipsis then the labels seen once, in ASCII order.
fn einsum(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.dtype(0);
    let eq: String = ctx
        .attr_string("equation")
        .ok_or_else(|| ShapeError("Einsum needs an equation".into()))?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(einsum_term(r)?)),
        None => (eq.as_str(), None),
    };
    let terms: Vec<Vec<Sub>> = lhs.split(',').map(einsum_term).collect::<Result<_>>()?;
    if terms.len() != ctx.n_inputs() {
        return err(format!(
            "Einsum equation {eq:?} has {} operands, the node {} inputs",
            terms.len(),
            ctx.n_inputs()
        ));
    }
    let mut sizes: BTreeMap<char, Dim> = BTreeMap::new();
    let mut counts: BTreeMap<char, usize> = BTreeMap::new();
    let mut ellipsis: Vec<Dim> = Vec::new();
    let mut all_known = true;
    for (i, term) in terms.iter().enumerate() {
        let labels = term.iter().filter(|s| **s != Sub::Ellipsis).count();
        for s in term {
            if let Sub::Label(c) = s {
                *counts.entry(*c).or_default() += 1;
            }
        }
        let Some(shape) = ctx.shape(i) else {
            all_known = false;
            continue;
        };
        let has_ellipsis = term.contains(&Sub::Ellipsis);
        if shape.len() < labels || (!has_ellipsis && shape.len() != labels) {
            return err(format!(
                "Einsum operand {} of shape [{}] does not fit its term in {eq:?}",
                i + 1,
                join(shape)
            ));
        }
        let ell_rank = shape.len() - labels;
        let mut dims = shape.iter();
        for s in term {
            match s {
                Sub::Ellipsis => {
                    let part: Vec<Dim> = dims.by_ref().take(ell_rank).cloned().collect();
                    ellipsis = broadcast(&ellipsis, &part)?;
                }
                Sub::Label(c) => {
                    let Some(d) = dims.next() else { break };
                    let merged = match sizes.get(c) {
                        None => d.clone(),
                        // A size of 1 broadcasts against the label's other uses.
                        Some(Dim::Known(1)) => d.clone(),
                        Some(prev) if *d == Dim::Known(1) => prev.clone(),
                        Some(prev) => same_size(prev, d, &format!("Einsum label {c}"))?,
                    };
                    sizes.insert(*c, merged);
                }
            }
        }
    }
    let out_subs = match rhs {
        Some(r) => {
            for s in &r {
                if let Sub::Label(c) = s
                    && !counts.contains_key(c)
                {
                    return err(format!(
                        "Einsum output label {c} is not among the inputs in {eq:?}"
                    ));
                }
            }
            r
        }
        None => {
            let mut r = vec![Sub::Ellipsis];
            // BTreeMap iterates in ASCII order, so `Z` comes before `a` (numpy's order).
            r.extend(
                counts
                    .iter()
                    .filter(|(_, n)| **n == 1)
                    .map(|(c, _)| Sub::Label(*c)),
            );
            r
        }
    };
    let shape = if all_known {
        let mut out = Vec::new();
        for s in out_subs {
            match s {
                Sub::Ellipsis => out.extend(ellipsis.iter().cloned()),
                Sub::Label(c) => out.extend(sizes.get(&c).cloned()),
            }
        }
        Some(out)
    } else {
        None
    };
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 3] =
        [("Gemm", gemm), ("MatMul", matmul), ("Einsum", einsum)];
    let mut ops: Vec<OpEntry> = table.iter().map(|(op, f)| ("", *op, *f)).collect();
    ops.push(("com.microsoft", "FusedGemm", fused_gemm));
    ops
}

/// FusedGemm: Gemm's shapes; its activation one the kernel has.
fn fused_gemm(ctx: &mut InferCtx) -> Result<()> {
    super::conv::fused_activation(ctx)?;
    gemm(ctx)
}

#[cfg(test)]
mod tests {
    use super::super::conv::tests::*;

    use crate::shape::Fact;

    #[test]
    fn gemm_transposes_and_checks_c() {
        let attrs = [int("transA", 1), int("transB", 1)];
        let out = shape0(
            "Gemm",
            &attrs,
            vec![f32(&["K", "M"]), f32(&["N", "K"]), f32(&["N"])],
        );
        assert_eq!(out, d(&["M", "N"]));
        assert!(
            run(
                "Gemm",
                &[],
                vec![f32(&["2", "3"]), f32(&["3", "4"]), f32(&["3"])]
            )
            .is_err()
        );
        assert!(run("Gemm", &[], vec![f32(&["2", "3", "1"]), f32(&["3", "4"])]).is_err());
    }

    #[test]
    fn einsum_equations() {
        let es = |eq: &str, inputs: Vec<Option<Fact>>| {
            run("Einsum", &[string("equation", eq)], inputs).map(|o| o[0].shape.clone())
        };
        let ok = |v: &[&str]| Ok(Some(d(v)));
        assert_eq!(
            es("ij,jk", vec![f32(&["2", "3"]), f32(&["3", "4"])]),
            ok(&["2", "4"])
        );
        assert_eq!(es("ii", vec![f32(&["3", "3"])]), ok(&[]));
        // Implicit output in ASCII order: `B` before `a`.
        assert_eq!(es("aB", vec![f32(&["2", "3"])]), ok(&["3", "2"]));
        assert_eq!(
            es(
                "...ij, ...jk -> ...ik",
                vec![f32(&["b", "1", "2", "3"]), f32(&["5", "3", "4"])]
            ),
            ok(&["b", "5", "2", "4"])
        );
        assert_eq!(es("bij->jb", vec![f32(&["B", "2", "3"])]), ok(&["3", "B"]));
        assert_eq!(es("i...->...", vec![f32(&["4"])]), ok(&[]));
        assert!(es("ij,jk", vec![f32(&["2", "3"]), f32(&["4", "5"])]).is_err());
        assert!(es("ijk", vec![f32(&["2", "3"])]).is_err());
        assert!(es("ij->iz", vec![f32(&["2", "3"])]).is_err());
        assert!(es("i.j", vec![f32(&["2", "3"])]).is_err());
        assert!(es("ij", vec![f32(&["2", "3"]), f32(&["3"])]).is_err());
    }
}
