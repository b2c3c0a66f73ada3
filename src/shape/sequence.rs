//! Sequences and optionals: construction, access, insertion and erasure,
//! splitting to and concatenating from sequences, and optional values.

use super::control::{same_dtype, sequence_of, type_fact};
use super::ctx::{InferCtx, Result, ShapeError, axis, axis_inclusive, err};
use super::fact::{Fact, TensorValue, ValueKind};
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

/// The element shape of a sequence holding `a`'s and `b`'s elements: kept
/// only when they agree.
fn common_shape(a: &Option<Vec<Dim>>, b: &Option<Vec<Dim>>) -> Option<Vec<Dim>> {
    match (a, b) {
        (Some(x), Some(y)) if x == y => Some(x.clone()),
        _ => None,
    }
}

fn sequence_construct(ctx: &mut InferCtx) -> Result<()> {
    let first = ctx.require(0)?.clone();
    let mut dtype = first.dtype;
    let mut elements = vec![first];
    for i in 1..ctx.n_inputs() {
        let f = ctx.require(i)?;
        dtype = same_dtype(dtype, f.dtype, "SequenceConstruct")?;
        elements.push(f.clone());
    }
    ctx.set(0, Fact::sequence(dtype, elements));
    Ok(())
}

/// A position of a sequence of `len` elements, negative from the end;
/// `None` when it is unknown or out of range.
fn position(ctx: &InferCtx, i: usize, len: usize) -> Option<usize> {
    let p = *ctx.known_ints(i)?.first()?;
    let p = if p < 0 { p + len as i64 } else { p };
    usize::try_from(p).ok().filter(|&p| p < len)
}

/// SequenceAt: the element at a known position when positions are known,
/// else what every element shares.
fn sequence_at(ctx: &mut InferCtx) -> Result<()> {
    let s = ctx.require(0)?;
    let at = s
        .elements
        .as_ref()
        .and_then(|e| Some(e.get(position(ctx, 1, e.len())?)?.clone()));
    let out = at.unwrap_or_else(|| Fact::tensor(s.dtype, s.shape.clone()));
    ctx.set(0, out);
    Ok(())
}

fn sequence_empty(ctx: &mut InferCtx) -> Result<()> {
    let code = ctx.attr_int_or("dtype", 1);
    let dtype = i32::try_from(code)
        .ok()
        .and_then(DType::from_onnx_code)
        .ok_or_else(|| ShapeError(format!("SequenceEmpty: unknown dtype {code}")))?;
    // No element yet: nothing is known of their shape, and the length is 0.
    ctx.set(
        0,
        Fact {
            kind: ValueKind::Sequence,
            elements: Some(Vec::new()),
            ..Fact::tensor(Some(dtype), None)
        },
    );
    Ok(())
}

/// Where SequenceInsert and SequenceErase act on `len` known positions: at
/// the end without a position input; `None` when the position is unknown.
fn edit_at(ctx: &InferCtx, len: usize, inserting: bool) -> Option<usize> {
    if ctx.input(2).is_none() {
        return if inserting {
            Some(len)
        } else {
            len.checked_sub(1)
        };
    }
    // Inserting may also append: position `len` is allowed.
    position(ctx, 2, len + usize::from(inserting))
}

fn sequence_insert(ctx: &mut InferCtx) -> Result<()> {
    let s = ctx.require(0)?;
    let t = ctx.require(1)?;
    let dtype = same_dtype(s.dtype, t.dtype, "SequenceInsert")?;
    if let Some(mut e) = s.elements.clone()
        && let Some(at) = edit_at(ctx, e.len(), true)
    {
        e.insert(at, t.clone());
        ctx.set(0, Fact::sequence(dtype, e));
        return Ok(());
    }
    // Nothing inserted yet: the element shape is the new tensor's.
    let shape = match &s.elements {
        Some(e) if e.is_empty() => t.shape.clone(),
        _ => common_shape(&s.shape, &t.shape),
    };
    ctx.set(
        0,
        Fact {
            kind: ValueKind::Sequence,
            ..Fact::tensor(dtype, shape)
        },
    );
    Ok(())
}

fn sequence_erase(ctx: &mut InferCtx) -> Result<()> {
    let s = ctx.require(0)?;
    if let Some(mut e) = s.elements.clone()
        && let Some(at) = edit_at(ctx, e.len(), false)
    {
        e.remove(at);
        let dtype = s.dtype;
        ctx.set(0, Fact::sequence(dtype, e));
        return Ok(());
    }
    ctx.set(0, sequence_of(s));
    Ok(())
}

fn sequence_length(ctx: &mut InferCtx) -> Result<()> {
    let len = ctx
        .input(0)
        .and_then(|s| s.elements.as_ref())
        .map(|e| TensorValue::ints(vec![SymInt::Int(e.len() as i64)]));
    let mut out = Fact::new(DType::Int64, vec![]);
    out.value = len;
    ctx.set(0, out);
    Ok(())
}

/// ConcatFromSequence: the axis grows by an unknown total (the sequence's
/// length is not tracked), or a new axis of unknown length is inserted.
fn concat_from_sequence(ctx: &mut InferCtx) -> Result<()> {
    let s = ctx.require(0)?.clone();
    let a = ctx
        .attr_int("axis")
        .ok_or_else(|| ShapeError("ConcatFromSequence needs axis".into()))?;
    let new_axis = ctx.attr_int_or("new_axis", 0) != 0;
    if let Some(e) = s.elements.as_ref().filter(|e| !e.is_empty()) {
        let inputs: Vec<Option<Fact>> = e.iter().cloned().map(Some).collect();
        let joined = if new_axis {
            // Each element gains the new axis of size 1, then Concat.
            let mut grown = Vec::with_capacity(inputs.len());
            for f in inputs.into_iter().flatten() {
                let shape = match f.shape {
                    Some(mut sh) => {
                        sh.insert(axis_inclusive(a, sh.len())?, Dim::Known(1));
                        Some(sh)
                    }
                    None => None,
                };
                grown.push(Some(Fact::tensor(f.dtype, shape)));
            }
            ctx.run_like("Concat", grown, 1)?
        } else {
            ctx.run_like("Concat", inputs, 1)?
        };
        let f = joined.into_iter().next().unwrap_or_else(Fact::unknown);
        ctx.set(0, Fact::tensor(s.dtype, f.shape));
        return Ok(());
    }
    let shape = match s.shape {
        Some(mut shape) => {
            if new_axis {
                let at = axis_inclusive(a, shape.len())?;
                shape.insert(at, ctx.fresh_dim("concat"));
            } else {
                let at = axis(a, shape.len())?;
                shape[at] = ctx.fresh_dim("concat");
            }
            Some(shape)
        }
        None => None,
    };
    ctx.set(0, Fact::tensor(s.dtype, shape));
    Ok(())
}

/// SplitToSequence: the element shape is known when every chunk has the same
/// size along the axis.
fn split_to_sequence(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let seq = |shape: Option<Vec<Dim>>| Fact {
        kind: ValueKind::Sequence,
        ..Fact::tensor(x.dtype, shape)
    };
    let Some(shape) = x.shape.clone() else {
        ctx.set(0, seq(None));
        return Ok(());
    };
    let at = axis(ctx.attr_int_or("axis", 0), shape.len())?;
    let total = shape[at].clone();
    let with = |d: Dim| {
        let mut s = shape.clone();
        s[at] = d;
        Some(s)
    };
    let element = if ctx.input(1).is_none() {
        // Chunks of 1; keepdims = 0 drops the axis.
        if ctx.attr_int_or("keepdims", 1) != 0 {
            with(Dim::Known(1))
        } else {
            let mut s = shape.clone();
            s.remove(at);
            Some(s)
        }
    } else {
        let split = ctx.known_ints(1);
        match (ctx.rank(1), split) {
            (Some(0), Some(v)) => {
                let size = match v.as_slice() {
                    [s] if *s > 0 => *s as u64,
                    _ => return err(format!("split size {v:?} must be positive")),
                };
                match total.known() {
                    // One chunk holds everything; equal chunks all have `size`.
                    Some(t) if t <= size => with(Dim::Known(t)),
                    Some(t) if t % size == 0 => with(Dim::Known(size)),
                    _ if size == 1 => with(Dim::Known(1)),
                    _ => None,
                }
            }
            (Some(1), Some(v)) => {
                if v.iter().any(|&s| s < 0) {
                    return err(format!("split sizes {v:?} must not be negative"));
                }
                let sum = v.iter().try_fold(0i64, |a, &s| a.checked_add(s));
                if let (Some(t), Some(sum)) = (total.known(), sum)
                    && Some(t) != u64::try_from(sum).ok()
                {
                    return err(format!(
                        "split sizes {v:?} do not add up to the axis size {t}"
                    ));
                }
                // Known sizes: a shape per position.
                let pieces: Vec<Fact> = v
                    .iter()
                    .map(|&n| Fact::tensor(x.dtype, with(Dim::Known(n as u64))))
                    .collect();
                ctx.set(0, Fact::sequence(x.dtype, pieces));
                return Ok(());
            }
            // One split entry of unknown value: the single chunk is everything.
            (Some(1), None)
                if ctx
                    .shape(1)
                    .is_some_and(|s| s.first() == Some(&Dim::Known(1))) =>
            {
                with(total)
            }
            _ => None,
        }
    };
    ctx.set(0, seq(element));
    Ok(())
}

fn optional(ctx: &mut InferCtx) -> Result<()> {
    let inner = match ctx.input(0) {
        // An optional sequence cannot say what its elements are.
        Some(f) if f.kind != ValueKind::Tensor => Fact::unknown(),
        Some(f) => f.clone(),
        None => match ctx.attr("type").and_then(|a| a.tp.as_ref()) {
            Some(t) => type_fact(ctx, t),
            None => return err("Optional needs an input or the 'type' attribute"),
        },
    };
    ctx.set(
        0,
        Fact {
            kind: ValueKind::Optional,
            ..Fact::tensor(inner.dtype, inner.shape)
        },
    );
    Ok(())
}

/// OptionalGetElement: the held tensor; from opset 18 a plain tensor or
/// sequence passes through.
fn optional_get_element(ctx: &mut InferCtx) -> Result<()> {
    let f = ctx.require(0)?;
    let out = match f.kind {
        ValueKind::Optional => Fact::tensor(f.dtype, f.shape.clone()),
        _ => Fact {
            constant: None,
            ..f.clone()
        },
    };
    ctx.set(0, out);
    Ok(())
}

/// OptionalHasElement: a boolean scalar, known when the input is absent
/// (false) or a value that is not optional (true).
fn optional_has_element(ctx: &mut InferCtx) -> Result<()> {
    let known = match ctx.input(0) {
        None => Some(false),
        Some(f) if f.kind == ValueKind::Sequence => Some(true),
        Some(f) if f.kind == ValueKind::Tensor && (f.dtype.is_some() || f.shape.is_some()) => {
            Some(true)
        }
        Some(_) => None,
    };
    let value = known.map(|b| TensorValue::ints(vec![SymInt::Int(i64::from(b))]));
    ctx.set(
        0,
        Fact {
            value,
            ..Fact::new(DType::Bool, vec![])
        },
    );
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 11] = [
        ("SequenceConstruct", sequence_construct),
        ("SequenceAt", sequence_at),
        ("SequenceEmpty", sequence_empty),
        ("SequenceInsert", sequence_insert),
        ("SequenceErase", sequence_erase),
        ("SequenceLength", sequence_length),
        ("ConcatFromSequence", concat_from_sequence),
        ("SplitToSequence", split_to_sequence),
        ("Optional", optional),
        ("OptionalGetElement", optional_get_element),
        ("OptionalHasElement", optional_has_element),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::control::tests::*;
    use crate::onnx::infer::test_model::*;
    use crate::proto::attr_type;

    use crate::ir::Dim;
    use crate::proto::AttributeProto;
    use crate::shape::{TensorValue, ValueKind};

    #[test]
    fn sequences_describe_their_elements() {
        let m = seq_model(
            vec![
                node("SequenceConstruct", &["a", "b"], &["s"], vec![]),
                node("SequenceAt", &["s", "i"], &["e"], vec![]),
                node("SequenceInsert", &["s", "c"], &["s2"], vec![]),
                node("SequenceErase", &["s2"], &["s3"], vec![]),
                node("SequenceLength", &["s3"], &["n"], vec![]),
            ],
            "n",
        );
        assert_eq!(fact_of(&m, "s").unwrap(), "seq float32[batch, 3]");
        assert_eq!(fact_of(&m, "e").unwrap(), "float32[batch, 3]");
        // Elements [batch, 3] and [batch, 4]: no one shape describes them all.
        assert_eq!(fact_of(&m, "s2").unwrap(), "seq float32[?]");
        // c erased again: both remaining elements are [batch, 3], and there
        // are two of them.
        assert_eq!(fact_of(&m, "s3").unwrap(), "seq float32[batch, 3]");
        let n = fact(&m, "n").unwrap();
        assert_eq!(n.to_string(), "int64[]");
        assert_eq!(n.value, Some(TensorValue::ints(vec![2.into()])));
    }

    #[test]
    fn sequence_element_types_must_agree() {
        let m = seq_model(
            vec![node("SequenceInsert", &["s", "i"], &["s2"], vec![])],
            "s2",
        );
        let mut m = m;
        let g = m.model.graph.as_mut().unwrap();
        g.node
            .insert(0, node("SequenceConstruct", &["a"], &["s"], vec![]));
        let e = fact_of(&m, "s2").unwrap_err();
        assert!(e.contains("element types float32 and int64 differ"), "{e}");
    }

    #[test]
    fn sequence_empty_has_its_dtype_and_no_element_shape() {
        let m = seq_model(
            vec![node(
                "SequenceEmpty",
                &[],
                &["s"],
                vec![int("dtype", INT64 as i64)],
            )],
            "s",
        );
        let s = fact(&m, "s").unwrap();
        assert_eq!(s.kind, ValueKind::Sequence);
        assert_eq!(s.to_string(), "seq int64[?]");
    }

    #[test]
    fn concat_from_sequence_grows_or_inserts_an_axis_of_unknown_size() {
        let m = seq_model(
            vec![
                node("SequenceConstruct", &["a", "b"], &["s"], vec![]),
                node(
                    "ConcatFromSequence",
                    &["s"],
                    &["cat"],
                    vec![int("axis", -1)],
                ),
                node(
                    "ConcatFromSequence",
                    &["s"],
                    &["stack"],
                    vec![int("axis", -1), int("new_axis", 1)],
                ),
                node("ConcatFromSequence", &["s"], &["bad"], vec![int("axis", 2)]),
            ],
            "cat",
        );
        // axis 2 is past the rank of [batch, 3] without new_axis.
        let e = fact_of(&m, "cat").unwrap_err();
        assert!(e.contains("axis 2 is out of range for rank 2"), "{e}");
        let g = m.model.graph.clone().unwrap();
        let mut g2 = g.clone();
        g2.node.pop();
        let m = model(g2, 18);
        // The positions are known: a[batch, 3] and b[batch, 3] joined, 3 + 3
        // along the last axis, or stacked on a new axis of 2.
        assert_eq!(fact_of(&m, "cat").unwrap(), "float32[batch, 6]");
        assert_eq!(fact_of(&m, "stack").unwrap(), "float32[batch, 3, 2]");
        // Positions unknown (a sequence input): the axis is of unknown size.
        let mut g3 = g.clone();
        g3.node.remove(0);
        g3.node.pop();
        g3.input
            .push(value("s", seq_type(tensor_type(FLOAT, &["batch", "3"]))));
        let m = model(g3, 18);
        let cat = shape(&fact(&m, "cat").unwrap());
        assert_eq!(cat[0], Dim::symbol("batch"));
        assert!(is_fresh(&cat[1], "concat"));
        let stack = shape(&fact(&m, "stack").unwrap());
        assert_eq!(stack.len(), 3);
        assert!(is_fresh(&stack[2], "concat"));
    }

    #[test]
    fn optionals_hold_a_tensor() {
        let ty = AttributeProto {
            name: Some("type".into()),
            r#type: Some(attr_type::TYPE_PROTO),
            tp: Some(Box::new(t(&["n", "2"]))),
            ..Default::default()
        };
        let g = graph(
            vec![value("a", t(&["batch", "3"]))],
            vec![
                node("Optional", &["a"], &["o"], vec![]),
                node("Optional", &[], &["none"], vec![ty]),
                node("OptionalGetElement", &["o"], &["got"], vec![]),
                node("OptionalGetElement", &["a"], &["plain"], vec![]),
                node("OptionalHasElement", &["none"], &["has"], vec![]),
                node("OptionalHasElement", &[""], &["absent"], vec![]),
                node("OptionalHasElement", &["a"], &["tensor"], vec![]),
            ],
            vec![untyped("has")],
        );
        let m = model(g, 18);
        assert_eq!(fact_of(&m, "o").unwrap(), "optional float32[batch, 3]");
        assert_eq!(fact_of(&m, "none").unwrap(), "optional float32[n, 2]");
        assert_eq!(fact_of(&m, "got").unwrap(), "float32[batch, 3]");
        // From opset 18 a plain tensor passes through.
        assert_eq!(fact_of(&m, "plain").unwrap(), "float32[batch, 3]");
        // Whether an optional holds something is known only at run time...
        let has = fact(&m, "has").unwrap();
        assert_eq!(has.to_string(), "bool[]");
        assert_eq!(has.value, None);
        // ...but an absent input holds nothing, and a tensor always something.
        let v = |name: &str| {
            fact(&m, name)
                .unwrap()
                .value
                .and_then(|v| v.as_known_ints())
        };
        assert_eq!(v("absent"), Some(vec![0]));
        assert_eq!(v("tensor"), Some(vec![1]));
    }
}
