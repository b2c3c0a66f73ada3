//! Control flow: If, Loop, Scan and SequenceMap.
//!
//! A sequence's fact describes one element (`kind` Sequence, element dtype
//! and shape; shape `None` when the elements may differ); an optional's fact
//! describes the tensor it may hold. Subgraph bodies are inferred through
//! `ctx.subgraphs`, which also merges in the body's declared output types.

use super::ctx::{InferCtx, Result, ShapeError, axis, axis_inclusive, dim, err};
use super::fact::{Fact, TensorValue, ValueKind};
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};
use crate::proto::{GraphProto, TypeProto};

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 4] = [
        ("If", if_op),
        ("Loop", loop_op),
        ("Scan", scan),
        ("SequenceMap", sequence_map),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

// ---------------------------------------------------------------- helpers

fn graph<'a>(ctx: &InferCtx<'a>, name: &str) -> Result<&'a GraphProto> {
    ctx.attr_graph(name)
        .ok_or_else(|| ShapeError(format!("{} needs the graph attribute '{name}'", ctx.op)))
}

/// Input `i`'s fact, or nothing known when it is absent.
fn input_or_unknown(ctx: &InferCtx, i: usize) -> Fact {
    ctx.input(i).cloned().unwrap_or_else(Fact::unknown)
}

/// The element types of two facts that must agree.
pub(super) fn same_dtype(a: Option<DType>, b: Option<DType>, what: &str) -> Result<Option<DType>> {
    match (a, b) {
        (Some(x), Some(y)) if x != y => err(format!("{what}: element types {x} and {y} differ")),
        _ => Ok(a.or(b)),
    }
}

/// A fact that holds either `a` or `b` (If's two branches, a loop-carried
/// value before and after an iteration): dims that agree are kept, the others
/// become fresh symbols; shapes of different rank leave the rank unknown.
fn either(ctx: &InferCtx, a: &Fact, b: &Fact, what: &str) -> Result<Fact> {
    if a.kind != b.kind {
        return Ok(Fact::unknown());
    }
    let dtype = same_dtype(a.dtype, b.dtype, what)?;
    let shape = match (&a.shape, &b.shape) {
        (Some(x), Some(y)) if x.len() == y.len() => Some(
            x.iter()
                .zip(y)
                .map(|(p, q)| match (p.known(), q.known()) {
                    _ if p == q => p.clone(),
                    // Whichever it is, it is at most the larger.
                    (Some(a), Some(b)) => ctx.bounded_dim("either", SymInt::Int(a.max(b) as i64)),
                    // Symbolic sizes: at most the larger of the two, once
                    // they are known (a detector's boxes, before and after
                    // a data-dependent branch).
                    // (Past the dimension limits it is the node's error.)
                    _ => match ctx.folded(p.to_symint().max_with(&q.to_symint())) {
                        Some(m) => ctx.bounded_dim("either", m),
                        None => ctx.fresh_dim("either"),
                    },
                })
                .collect(),
        ),
        _ => None,
    };
    // Equal known data stays known whichever value it is.
    let value = match (&a.value, &b.value) {
        (Some(x), Some(y)) if x == y && a.shape == shape => Some(x.clone()),
        _ => None,
    };
    Ok(Fact {
        kind: a.kind.clone(),
        dtype,
        shape,
        value,
        constant: None,
        // Positions agree only when both sides know the same ones.
        elements: (a.elements == b.elements)
            .then(|| a.elements.clone())
            .flatten(),
    })
}

/// Whether two facts describe the same kind, type and shape.
fn same_type(a: &Fact, b: &Fact) -> bool {
    a.kind == b.kind && a.dtype == b.dtype && a.shape == b.shape
}

/// The element of a sequence (or a tensor passed as is), as a tensor fact.
fn element(f: &Fact) -> Fact {
    match f.kind {
        ValueKind::Sequence | ValueKind::Optional => Fact::tensor(f.dtype, f.shape.clone()),
        _ => f.clone(),
    }
}

/// A sequence whose elements are like `f`.
pub(super) fn sequence_of(f: &Fact) -> Fact {
    Fact {
        kind: ValueKind::Sequence,
        ..Fact::tensor(f.dtype, f.shape.clone())
    }
}

/// A tensor fact from a declared type (Optional's `type` attribute); a
/// sequence or map inside is not representable and stays unknown.
pub(super) fn type_fact(ctx: &InferCtx, t: &TypeProto) -> Fact {
    let Some(tt) = t.tensor_type.as_ref().or(t.sparse_tensor_type.as_ref()) else {
        return Fact::unknown();
    };
    let dtype = tt.elem_type.and_then(DType::from_onnx_code);
    let shape = tt.shape.as_ref().map(|s| {
        s.dim
            .iter()
            .map(|d| match (d.dim_value, d.dim_param.as_deref()) {
                (Some(v), _) if v >= 0 => Dim::Known(v as u64),
                (None, Some(p)) if !p.is_empty() => Dim::symbol(p),
                _ => ctx.fresh_dim("unk"),
            })
            .collect()
    });
    Fact::tensor(dtype, shape)
}

/// A single known integer from input `i` (a scalar or one-element tensor).
fn scalar_int(ctx: &InferCtx, i: usize) -> Option<SymInt> {
    match ctx.ints(i)?.as_slice() {
        [v] => Some(v.clone()),
        _ => None,
    }
}

/// `shape` with `d` in front.
fn with_leading(d: &Dim, shape: &Option<Vec<Dim>>) -> Option<Vec<Dim>> {
    shape.as_ref().map(|s| {
        std::iter::once(d.clone())
            .chain(s.iter().cloned())
            .collect()
    })
}

/// A Loop's `M` at or above this, with a run-time condition, stands for
/// "until the condition says stop" (2^31: no real loop runs that often).
const MAX_PLAUSIBLE_TRIPS: i64 = 1 << 31;

/// The iteration count of a loop as a dimension: `known` when the model fixes
/// it, otherwise one fresh symbol shared by every scan output.
fn trip_dim(ctx: &InferCtx, known: Option<SymInt>) -> Result<Dim> {
    match known {
        Some(v) => dim(&v),
        None => Ok(ctx.fresh_dim("iterations")),
    }
}

// ---------------------------------------------------------------- If

/// If: the branch a known condition selects, else what both branches agree on.
fn if_op(ctx: &mut InferCtx) -> Result<()> {
    let then_g = graph(ctx, "then_branch")?;
    let else_g = graph(ctx, "else_branch")?;
    let n = ctx.n_outputs();
    // A malformed branch is an error whichever branch runs.
    for (g, which) in [(then_g, "then"), (else_g, "else")] {
        if g.output.len() != n {
            return err(format!(
                "the {which} branch has {} outputs, the node {n}",
                g.output.len()
            ));
        }
    }
    let run = |g: &GraphProto| ctx.subgraphs.infer(g, &[]);
    let cond = scalar_int(ctx, 0).and_then(|c| c.as_int()).map(|c| c != 0);
    let outs = match cond {
        Some(true) => run(then_g)?,
        Some(false) => run(else_g)?,
        None => match (run(then_g), run(else_g)) {
            (Ok(t), Ok(e)) => t
                .iter()
                .zip(&e)
                .enumerate()
                .map(|(i, (a, b))| either(ctx, a, b, &format!("output {}", i + 1)))
                .collect::<Result<Vec<_>>>()?,
            // A branch that cannot run on these shapes is never taken: models
            // dispatch on rank or size this way (AffineGrid's 2-D/3-D split).
            (Ok(only), Err(_)) | (Err(_), Ok(only)) => only,
            // Both messages while short: nested Ifs would double them per level.
            (Err(a), Err(b)) if a.0.len() + b.0.len() < 300 => {
                return err(format!("both branches fail: then: {a}; else: {b}"));
            }
            (Err(a), Err(_)) => return err(format!("both branches fail; then: {a}")),
        },
    };
    for (i, f) in outs.into_iter().enumerate() {
        ctx.set(i, f);
    }
    Ok(())
}

// ---------------------------------------------------------------- Loop, Scan

/// What a loop body gives for its carried values and scan-output elements.
struct BodyFacts {
    carried: Vec<Fact>,
    scans: Vec<Fact>,
}

/// Fact by fact, a fact covering both lists (`either`).
fn either_all(ctx: &InferCtx, a: &[Fact], b: &[Fact], what: &str) -> Result<Vec<Fact>> {
    a.iter()
        .zip(b)
        .enumerate()
        .map(|(i, (x, y))| either(ctx, x, y, &format!("{what} {}", i + 1)))
        .collect()
}

fn all_same(a: &[Fact], b: &[Fact]) -> bool {
    a.iter().zip(b).all(|(x, y)| same_type(x, y))
}

/// A carried tensor that grows by the same step each iteration (a Loop
/// that concatenates one piece per trip, as Mask R-CNN pastes its masks):
/// where its first two iterations add the same `g` to a size `d0`, after
/// `trips` iterations it is `d0 + trips * g` (`exact` when every trip is
/// known to run; otherwise at most that), in place of a size made up for
/// "either". Sizes past the dimension limits keep what they had.
fn grown(
    ctx: &InferCtx,
    initial: &[Fact],
    first: &[Fact],
    second: &[Fact],
    trips: &SymInt,
    exact: bool,
    later: &mut [Fact],
) -> Result<()> {
    for (k, out) in later.iter_mut().enumerate() {
        let (Some(d0), Some(d1), Some(d2)) = (
            initial.get(k).and_then(|f| f.shape.as_ref()),
            first.get(k).and_then(|f| f.shape.as_ref()),
            second.get(k).and_then(|f| f.shape.as_ref()),
        ) else {
            continue;
        };
        let Some(shape) = out.shape.as_mut() else {
            continue;
        };
        if d0.len() != shape.len() || d1.len() != shape.len() || d2.len() != shape.len() {
            continue;
        }
        for (axis, size) in shape.iter_mut().enumerate() {
            let (a, b, c) = (
                d0[axis].to_symint(),
                d1[axis].to_symint(),
                d2[axis].to_symint(),
            );
            let (Some(g), Some(g2)) = (ctx.folded(b.sub(&a)), ctx.folded(c.sub(&b))) else {
                continue;
            };
            if g != g2 || g.as_int() == Some(0) {
                continue;
            }
            let Some(total) = ctx.folded(trips.mul(&g).and_then(|t| a.add(&t))) else {
                continue;
            };
            *size = if exact {
                dim(&total)?
            } else {
                ctx.bounded_dim("either", total)
            };
        }
    }
    Ok(())
}

/// Infers a loop body whose carried values may change between iterations.
/// The body's inputs are `before`, the carried values, then `after`; its
/// carried outputs start at `offset`, its scan-output elements follow them.
///
/// The first run takes the initial values. If the body returns them
/// unchanged they are loop-invariant. Otherwise the second run takes the
/// first iteration's results; if those come back unchanged they describe
/// every later iteration, else a third run takes what covers both (`either`).
/// Without `at_least_once` the loop may also run zero times and leave the
/// initial values.
#[allow(clippy::too_many_arguments)]
fn run_body(
    ctx: &InferCtx,
    body: &GraphProto,
    before: &[Fact],
    initial: &[Fact],
    after: &[Fact],
    offset: usize,
    at_least_once: bool,
    trips: Option<(&SymInt, bool)>,
) -> Result<BodyFacts> {
    let n = initial.len();
    // Whether every run's condition output (a Loop's output 0) is known
    // to go on: then the loop runs all its trips.
    let goes_on = std::cell::Cell::new(offset == 1);
    let run = |carried: &[Fact]| -> Result<BodyFacts> {
        let inputs: Vec<Fact> = before.iter().chain(carried).chain(after).cloned().collect();
        let out = ctx.subgraphs.infer(body, &inputs)?;
        if offset == 1 {
            let go = out
                .first()
                .and_then(|f| f.value.as_ref())
                .and_then(|v| v.as_known_ints());
            if go.as_deref() != Some(&[1]) {
                goes_on.set(false);
            }
        }
        if out.len() < offset + n {
            return err(format!(
                "the body has {} outputs, fewer than the {} it must return",
                out.len(),
                offset + n
            ));
        }
        Ok(BodyFacts {
            carried: out[offset..offset + n].to_vec(),
            scans: out[offset + n..].to_vec(),
        })
    };
    // Only kinds, types and shapes carry over; data changes.
    let stripped: Vec<Fact> = initial
        .iter()
        .map(|f| f.reshaped(f.shape.clone()))
        .collect();
    let first = run(&stripped)?;
    let (later, last) = if all_same(&first.carried, &stripped) {
        (first.carried.clone(), None)
    } else {
        let second = run(&first.carried)?;
        if all_same(&second.carried, &first.carried) {
            (second.carried.clone(), Some(second))
        } else {
            let wide = either_all(ctx, &first.carried, &second.carried, "loop-carried value")?;
            let third = run(&wide)?;
            let mut later = either_all(ctx, &wide, &third.carried, "loop-carried value")?;
            if let Some((t, starts)) = trips {
                let exact = starts && goes_on.get();
                grown(
                    ctx,
                    &stripped,
                    &first.carried,
                    &second.carried,
                    t,
                    exact,
                    &mut later,
                )?;
            }
            (later, Some(third))
        }
    };
    let carried = if at_least_once {
        later
    } else {
        // After an iteration the value is the body's: its kind wins (an
        // optional sequence carried in comes out a sequence).
        let initial: Vec<Fact> = initial
            .iter()
            .zip(&later)
            .map(|(i, l)| Fact {
                kind: l.kind.clone(),
                ..i.clone()
            })
            .collect();
        either_all(ctx, &initial, &later, "loop-carried value")?
    };
    // Every iteration's scan element has the same shape: the first's and
    // the later ones' agree where known.
    let scans = match last {
        Some(last) => either_all(ctx, &first.scans, &last.scans, "scan output")?,
        None => first.scans,
    };
    Ok(BodyFacts { carried, scans })
}

/// Loops of at most this many known trips that carry a sequence known
/// position by position are run trip by trip.
const MAX_UNROLLED_TRIPS: i64 = 64;

/// Runs a loop that fills a sequence (how TorchScript writes
/// `tensor_split`) once per trip, with the iteration number known, so that
/// each position gets its own shape. `None` where that does not apply: no
/// such sequence, too many trips, or a condition that is not known to hold.
fn unroll(
    ctx: &InferCtx,
    body: &GraphProto,
    initial: &[Fact],
    trips: i64,
) -> Result<Option<BodyFacts>> {
    let fills_a_sequence = initial.iter().any(|f| f.elements.is_some());
    if !fills_a_sequence || !(1..=MAX_UNROLLED_TRIPS).contains(&trips) {
        return Ok(None);
    }
    let mut carried: Vec<Fact> = initial
        .iter()
        .map(|f| Fact {
            constant: None,
            ..f.clone()
        })
        .collect();
    let mut scans: Option<Vec<Fact>> = None;
    ctx.subgraphs.start_trips(body);
    let done = run_trips(ctx, body, &mut carried, &mut scans, trips);
    ctx.subgraphs.end_trips(body, matches!(done, Ok(true)));
    if !done? {
        return Ok(None);
    }
    Ok(Some(BodyFacts {
        carried,
        scans: scans.unwrap_or_default(),
    }))
}

/// [`unroll`]'s trips, one run of the body each with its iteration number
/// known; `false` when a condition may stop the loop early.
fn run_trips(
    ctx: &InferCtx,
    body: &GraphProto,
    carried: &mut Vec<Fact>,
    scans: &mut Option<Vec<Fact>>,
    trips: i64,
) -> Result<bool> {
    let n = carried.len();
    for i in 0..trips {
        let iteration = Fact::with_value(
            DType::Int64,
            vec![],
            TensorValue::ints(vec![SymInt::Int(i)]),
        );
        let go = Fact::with_value(DType::Bool, vec![], TensorValue::ints(vec![SymInt::Int(1)]));
        let inputs: Vec<Fact> = [iteration, go]
            .into_iter()
            .chain(std::mem::take(carried))
            .collect();
        let out = ctx.subgraphs.infer(body, &inputs)?;
        if out.len() < 1 + n {
            return err(format!(
                "the body has {} outputs, fewer than the {} it must return",
                out.len(),
                1 + n
            ));
        }
        // A condition that may stop the loop early: no trip-by-trip answer.
        let goes_on = out[0].value.as_ref().and_then(|v| v.as_known_ints());
        if goes_on.as_deref() != Some(&[1]) {
            return Ok(false);
        }
        *carried = out[1..1 + n].to_vec();
        let these = out[1 + n..].to_vec();
        *scans = Some(match scans.take() {
            None => these,
            Some(before) => either_all(ctx, &before, &these, "scan output")?,
        });
    }
    Ok(true)
}

/// Loop: carried values keep the shapes that do not change across
/// iterations; scan outputs stack one element per iteration.
fn loop_op(ctx: &mut InferCtx) -> Result<()> {
    let body = graph(ctx, "body")?;
    let initial: Vec<Fact> = (2..ctx.n_inputs())
        .map(|i| input_or_unknown(ctx, i))
        .collect();
    let m = scalar_int(ctx, 0);
    // At least one iteration when M >= 1 and the condition starts true.
    let cond = match ctx.input(1) {
        None => Some(true),
        Some(_) => scalar_int(ctx, 1).and_then(|c| c.as_int()).map(|c| c != 0),
    };
    let at_least_once =
        cond == Some(true) && m.as_ref().and_then(SymInt::as_int).is_some_and(|m| m >= 1);
    let before = [
        Fact::new(DType::Int64, vec![]),
        Fact::new(DType::Bool, vec![]),
    ];
    // Exporters write `while` loops as M = INT64_MAX with a run-time
    // condition: there the count is data.
    let while_loop = ctx.input(1).is_some()
        && cond.is_none()
        && m.as_ref()
            .and_then(SymInt::as_int)
            .is_some_and(|m| m >= MAX_PLAUSIBLE_TRIPS);
    let unrolled = match (m.as_ref().and_then(SymInt::as_int), cond) {
        (Some(trips), Some(true)) => unroll(ctx, body, &initial, trips)?,
        _ => None,
    };
    let facts = match unrolled {
        Some(f) => f,
        None => {
            // A known trip count, or one the data bounds, sizes what
            // grows by a step per trip.
            let grows_with = m
                .as_ref()
                .filter(|_| !while_loop)
                .map(|m| (m, cond == Some(true)));
            run_body(
                ctx,
                body,
                &before,
                &initial,
                &[],
                1,
                at_least_once,
                grows_with,
            )?
        }
    };
    // The trip count M when the model fixes it: exact unless the condition
    // stops the loop early, so an upper bound in any case. Exporters write
    // `while` loops as M = INT64_MAX with a run-time condition: there the
    // count is data, a fresh symbol.
    let sentinel = while_loop;
    let trips = match cond {
        Some(false) => Dim::Known(0),
        _ => trip_dim(ctx, m.filter(|_| !sentinel))?,
    };
    ctx.set_repeats(trips.clone());
    let n = initial.len();
    for (i, f) in facts.carried.into_iter().enumerate() {
        ctx.set(i, f);
    }
    for (k, e) in facts.scans.iter().enumerate() {
        ctx.set(n + k, Fact::tensor(e.dtype, with_leading(&trips, &e.shape)));
    }
    Ok(())
}

/// Scan: opset 9+ scans each input along its own axis; opset 8 has a batch
/// axis 0 on every input and output and scans axis 1.
fn scan(ctx: &mut InferCtx) -> Result<()> {
    let body = graph(ctx, "body")?;
    let m = ctx
        .attr_int("num_scan_inputs")
        .ok_or_else(|| ShapeError("Scan needs num_scan_inputs".into()))?;
    let batched = ctx.opset < 9;
    let first = usize::from(batched); // opset 8's sequence_lens input
    let n_in = ctx.n_inputs();
    let m = usize::try_from(m)
        .ok()
        .filter(|&m| m >= 1 && first + m <= n_in)
        .ok_or_else(|| {
            ShapeError(format!(
                "num_scan_inputs {m} does not fit the node's {n_in} inputs"
            ))
        })?;
    let n_state = n_in - first - m;
    let axes = match ctx.attr_ints("scan_input_axes") {
        Some(a) if !batched => a,
        _ => vec![if batched { 1 } else { 0 }; m],
    };
    if axes.len() != m {
        return err(format!(
            "scan_input_axes has {} entries for {m} scan inputs",
            axes.len()
        ));
    }
    // The batch size (opset 8) and sequence length every scan input shares.
    let mut batch: Option<Dim> = None;
    let mut seq: Option<Dim> = None;
    // Strips the batch axis (opset 8) from a state or scan input.
    let unbatch = |f: &Fact, batch: &mut Option<Dim>| -> Result<Fact> {
        let Some(s) = f.shape.as_ref().filter(|_| batched) else {
            return Ok(f.clone());
        };
        let Some((b, rest)) = s.split_first() else {
            return err("Scan (opset 8) inputs need a batch axis");
        };
        agree(batch, b, "batch size")?;
        Ok(f.reshaped(Some(rest.to_vec())))
    };
    let mut initial = Vec::with_capacity(n_state);
    for i in first..first + n_state {
        initial.push(unbatch(&input_or_unknown(ctx, i), &mut batch)?);
    }
    let mut elements = Vec::with_capacity(m);
    for (j, &a) in axes.iter().enumerate() {
        let f = unbatch(&input_or_unknown(ctx, first + n_state + j), &mut batch)?;
        // In opset 8 the sequence axis is 1 of the batched input: 0 here.
        let a = if batched { a - 1 } else { a };
        let shape = match &f.shape {
            Some(s) => {
                let mut s = s.clone();
                let d = s.remove(axis(a, s.len())?);
                agree(&mut seq, &d, "sequence length")?;
                Some(s)
            }
            None => None,
        };
        elements.push(f.reshaped(shape));
    }
    let seq = match seq {
        Some(d) => d,
        None => ctx.fresh_dim("scan"),
    };
    let at_least_once = seq.known().is_some_and(|n| n >= 1);
    let facts = run_body(ctx, body, &[], &initial, &elements, 0, at_least_once, None)?;
    let batch = match (batched, batch) {
        (false, _) => None,
        (true, Some(b)) => Some(b),
        (true, None) => Some(ctx.fresh_dim("batch")),
    };
    // The body runs once per step of the sequence, for each batch entry.
    let repeats = match &batch {
        Some(b) => dim(&b.to_symint().mul(&seq.to_symint())?)?,
        None => seq.clone(),
    };
    ctx.set_repeats(repeats);
    let out_axes = ctx.attr_ints("scan_output_axes").unwrap_or_default();
    let mut results = facts.carried;
    for (k, e) in facts.scans.iter().enumerate() {
        let shape = match &e.shape {
            Some(s) => {
                let a = if batched {
                    0
                } else {
                    out_axes.get(k).copied().unwrap_or(0)
                };
                let at = axis_inclusive(a, s.len())?;
                let mut s = s.clone();
                s.insert(at, seq.clone());
                Some(s)
            }
            None => None,
        };
        results.push(Fact::tensor(e.dtype, shape));
    }
    for (i, f) in results.into_iter().enumerate() {
        let f = match &batch {
            Some(b) => f.reshaped(with_leading(b, &f.shape)),
            None => f,
        };
        ctx.set(i, f);
    }
    Ok(())
}

/// Records a size several inputs must share: a known size wins over a
/// symbol; two different known sizes are an error.
fn agree(slot: &mut Option<Dim>, d: &Dim, what: &str) -> Result<()> {
    match (slot.as_ref().and_then(Dim::known), d.known()) {
        (Some(a), Some(b)) if a != b => {
            err(format!("scan inputs disagree on the {what}: {a} and {b}"))
        }
        (Some(_), _) => Ok(()),
        (None, Some(_)) => {
            *slot = Some(d.clone());
            Ok(())
        }
        (None, None) => {
            slot.get_or_insert_with(|| d.clone());
            Ok(())
        }
    }
}

// ---------------------------------------------------------------- sequences

/// SequenceMap: the body runs once per element (sequence inputs give it an
/// element, tensor inputs are passed whole); each output is a sequence.
fn sequence_map(ctx: &mut InferCtx) -> Result<()> {
    let body = graph(ctx, "body")?;
    let inputs: Vec<Fact> = (0..ctx.n_inputs())
        .map(|i| element(&input_or_unknown(ctx, i)))
        .collect();
    let out = ctx.subgraphs.infer(body, &inputs)?;
    // Once per element: sequence lengths are not tracked, so the count is a
    // symbol unless a tensor-only call makes it one.
    let any_sequence =
        (0..ctx.n_inputs()).any(|i| ctx.input(i).is_some_and(|f| f.kind == ValueKind::Sequence));
    let repeats = if any_sequence {
        ctx.fresh_dim("elements")
    } else {
        Dim::Known(1)
    };
    ctx.set_repeats(repeats);
    for (i, f) in out.iter().enumerate() {
        // A sequence of sequences has no tensor element to describe.
        let f = match f.kind {
            ValueKind::Tensor => sequence_of(f),
            _ => sequence_of(&Fact::unknown()),
        };
        ctx.set(i, f);
    }
    Ok(())
}

// ---------------------------------------------------------------- optionals

#[cfg(test)]
pub(super) mod tests {
    use crate::ir::Dim;
    use crate::onnx::infer::test_model::*;
    use crate::proto::{AttributeProto, GraphProto, TypeProto};
    use crate::shape::Fact;

    pub(in crate::shape) const FLOAT: i32 = 1;
    pub(in crate::shape) const INT64: i32 = 7;
    pub(in crate::shape) const BOOL: i32 = 9;

    pub(in crate::shape) fn t(dims: &[&str]) -> TypeProto {
        tensor_type(FLOAT, dims)
    }

    /// A fresh symbol made by inference (not one of the model's names).
    pub(in crate::shape) fn is_fresh(d: &Dim, hint: &str) -> bool {
        matches!(d, Dim::Sym(_)) && d.to_string().starts_with(&format!("{hint}_"))
    }

    pub(in crate::shape) fn shape(f: &Fact) -> Vec<Dim> {
        f.shape.clone().expect("shape known")
    }

    /// A branch that returns `op(inputs)` as its only output.
    pub(in crate::shape) fn branch(op: &str, inputs: &[&str]) -> GraphProto {
        graph(
            vec![],
            vec![node(op, inputs, &["out"], vec![])],
            vec![untyped("out")],
        )
    }

    #[test]
    fn loop_carried_data_is_kept_only_where_the_loop_surely_runs() {
        // The body returns a constant [7] whatever it is given.
        let body = graph(
            vec![
                value("i", tensor_type(INT64, &[])),
                value("c", tensor_type(BOOL, &[])),
                untyped("v"),
            ],
            vec![
                node("Identity", &["c"], &["c_out"], vec![]),
                node("Identity", &["seven"], &["v_out"], vec![]),
            ],
            vec![untyped("c_out"), untyped("v_out")],
        );
        let mut g = graph(
            vec![value("cond", tensor_type(BOOL, &[]))],
            vec![node(
                "Loop",
                &["M", "cond", "v0"],
                &["v"],
                vec![graph_attr("body", body)],
            )],
            vec![untyped("v")],
        );
        g.initializer = vec![
            int64s("M", &[], &[3]),
            int64s("v0", &[1], &[5]),
            int64s("seven", &[1], &[7]),
        ];
        // The condition may stop it before the first iteration: 5 or 7.
        let m = model(g.clone(), 16);
        let v = fact(&m, "v").unwrap();
        assert_eq!((v.to_string(), v.value), ("int64[1]".into(), None));
        // No condition: 3 iterations, the last gives 7.
        g.node[0].input[1] = String::new();
        let v = fact(&model(g, 16), "v").unwrap();
        assert_eq!(v.value.and_then(|v| v.as_known_ints()), Some(vec![7]));
    }

    /// `y = If(cond) then {then} else {else}` over inputs a [batch, 3],
    /// b [batch, 4], c [2].
    pub(in crate::shape) fn if_model(
        cond: Option<bool>,
        then: GraphProto,
        other: GraphProto,
    ) -> crate::onnx::OnnxModel {
        let mut g = graph(
            vec![
                value("a", t(&["batch", "3"])),
                value("b", t(&["batch", "4"])),
                value("c", t(&["2"])),
            ],
            vec![node(
                "If",
                &["cond"],
                &["y"],
                vec![
                    graph_attr("then_branch", then),
                    graph_attr("else_branch", other),
                ],
            )],
            vec![untyped("y")],
        );
        match cond {
            Some(v) => {
                let mut c = int64s("cond", &[], &[i64::from(v)]);
                c.data_type = Some(BOOL);
                c.raw_data = Some(vec![u8::from(v)].into());
                g.initializer.push(c);
            }
            None => g.input.push(value("cond", tensor_type(BOOL, &[]))),
        }
        model(g, 16)
    }

    #[test]
    fn if_with_a_known_condition_takes_its_branch_only() {
        // The else branch adds [batch, 3] to [2], which cannot broadcast: a
        // branch never taken for these shapes.
        let bad = branch("Add", &["a", "c"]);
        let m = if_model(Some(true), branch("Identity", &["b"]), bad.clone());
        assert_eq!(fact_of(&m, "y").unwrap(), "float32[batch, 4]");
        // Unknown condition: the branch that cannot run is not the one taken.
        let m = if_model(None, branch("Identity", &["b"]), bad.clone());
        assert_eq!(fact_of(&m, "y").unwrap(), "float32[batch, 4]");
        // Both branches impossible: the model is inconsistent.
        let m = if_model(None, bad.clone(), bad);
        let e = fact_of(&m, "y").unwrap_err();
        assert!(e.contains("both branches fail"), "{e}");
    }

    /// A Loop over v0 [batch] with body `v = Add(v, w)`, scanning `v`;
    /// `trips` is the M initializer (absent: no trip count).
    pub(in crate::shape) fn loop_model(trips: Option<i64>, w: &[&str]) -> crate::onnx::OnnxModel {
        let body = graph(
            vec![
                value("i", tensor_type(INT64, &[])),
                value("c", tensor_type(BOOL, &[])),
                untyped("v"),
            ],
            vec![
                node("Identity", &["c"], &["c_out"], vec![]),
                node("Add", &["v", "w"], &["v_out"], vec![]),
                node("Identity", &["v_out"], &["s"], vec![]),
            ],
            vec![untyped("c_out"), untyped("v_out"), untyped("s")],
        );
        let mut g = graph(
            vec![
                value("v0", t(&["batch"])),
                value("w", t(w)),
                value("cond", tensor_type(BOOL, &[])),
            ],
            vec![node(
                "Loop",
                &[if trips.is_some() { "M" } else { "" }, "cond", "v0"],
                &["v_final", "scanned"],
                vec![graph_attr("body", body)],
            )],
            vec![untyped("v_final"), untyped("scanned")],
        );
        if let Some(n) = trips {
            g.initializer.push(int64s("M", &[], &[n]));
        }
        model(g, 16)
    }

    #[test]
    fn loop_scan_outputs_stack_one_element_per_iteration() {
        // The carried value keeps its shape; M = 5 iterations stack [batch].
        let m = loop_model(Some(5), &["batch"]);
        assert_eq!(fact_of(&m, "v_final").unwrap(), "float32[batch]");
        assert_eq!(fact_of(&m, "scanned").unwrap(), "float32[5, batch]");
        // No trip count: the number of iterations is a fresh symbol.
        let m = loop_model(None, &["batch"]);
        let s = shape(&fact(&m, "scanned").unwrap());
        assert!(is_fresh(&s[0], "iterations"));
        assert_eq!(s[1], Dim::symbol("batch"));
    }

    #[test]
    fn loop_carried_value_that_changes_shape_gets_a_fresh_dim() {
        // v0 [batch] + w [3] is [3] after one iteration ([batch] must be 1 or
        // 3); after none it is still [batch]: the size is not loop-invariant.
        let m = loop_model(Some(2), &["3"]);
        let v = fact(&m, "v_final").unwrap();
        let s = shape(&v);
        assert_eq!(s.len(), 1);
        assert!(is_fresh(&s[0], "either"), "{v}");
        // Every iteration's scan element is [3] (the second body run sees the
        // widened value and still gives [3]).
        assert_eq!(fact_of(&m, "scanned").unwrap(), "float32[2, 3]");
        // Without a condition the 2 iterations surely run: [3] at the end.
        let mut m = m;
        let g = m.model.graph.as_mut().unwrap();
        g.node[0].input[1] = String::new();
        assert_eq!(fact_of(&m, "v_final").unwrap(), "float32[3]");
    }

    #[test]
    fn loop_body_must_return_its_carried_values() {
        let body = graph(
            vec![
                value("i", tensor_type(INT64, &[])),
                value("c", tensor_type(BOOL, &[])),
            ],
            vec![],
            vec![untyped("c")],
        );
        let g = graph(
            vec![
                value("v0", t(&["2"])),
                value("cond", tensor_type(BOOL, &[])),
            ],
            vec![node(
                "Loop",
                &["", "cond", "v0"],
                &["v"],
                vec![graph_attr("body", body)],
            )],
            vec![untyped("v")],
        );
        let e = fact_of(&model(g, 16), "v").unwrap_err();
        assert!(e.contains("fewer than the 2"), "{e}");
    }

    /// Scan (opset 9) over x [batch, 7, 4] along axis 1 with state s [4];
    /// the body adds the element to the state and emits it.
    pub(in crate::shape) fn scan_model(out_axis: i64) -> crate::onnx::OnnxModel {
        let body = graph(
            vec![untyped("s_in"), untyped("x_t")],
            vec![
                node("Add", &["s_in", "x_t"], &["s_out"], vec![]),
                node("Identity", &["x_t"], &["y_t"], vec![]),
            ],
            vec![untyped("s_out"), untyped("y_t")],
        );
        let g = graph(
            vec![value("s", t(&["4"])), value("x", t(&["batch", "7", "4"]))],
            vec![node(
                "Scan",
                &["s", "x"],
                &["s_final", "ys"],
                vec![
                    graph_attr("body", body),
                    int("num_scan_inputs", 1),
                    ints("scan_input_axes", &[1]),
                    ints("scan_output_axes", &[out_axis]),
                ],
            )],
            vec![untyped("s_final"), untyped("ys")],
        );
        model(g, 16)
    }

    #[test]
    fn scan_uses_its_input_and_output_axes() {
        // Elements are x[:, t, :] = [batch, 4]; s + element broadcasts to
        // [batch, 4], so the state is not invariant.
        let m = scan_model(-1);
        assert_eq!(fact_of(&m, "ys").unwrap(), "float32[batch, 4, 7]");
        let m = scan_model(0);
        assert_eq!(fact_of(&m, "ys").unwrap(), "float32[7, batch, 4]");
        // The state becomes [batch, 4] in the first of the 7 iterations and
        // stays so.
        assert_eq!(fact_of(&m, "s_final").unwrap(), "float32[batch, 4]");
    }

    #[test]
    fn scan_inputs_must_agree_on_the_sequence_length() {
        let body = graph(
            vec![untyped("p"), untyped("q")],
            vec![node("Add", &["p", "q"], &["r"], vec![])],
            vec![untyped("r")],
        );
        let g = graph(
            vec![value("x", t(&["5", "2"])), value("z", t(&["6", "2"]))],
            vec![node(
                "Scan",
                &["x", "z"],
                &["r"],
                vec![graph_attr("body", body), int("num_scan_inputs", 2)],
            )],
            vec![untyped("r")],
        );
        let e = fact_of(&model(g, 11), "r").unwrap_err();
        assert!(e.contains("sequence length: 5 and 6"), "{e}");
    }

    #[test]
    fn scan_opset_8_has_a_batch_axis() {
        // sequence_lens absent; state [batch, 2], input [batch, seq, 2].
        let body = graph(
            vec![untyped("s_in"), untyped("x_t")],
            vec![
                node("Add", &["s_in", "x_t"], &["s_out"], vec![]),
                node("Identity", &["s_out"], &["y_t"], vec![]),
            ],
            vec![untyped("s_out"), untyped("y_t")],
        );
        let g = graph(
            vec![
                value("s", t(&["b", "2"])),
                value("x", t(&["b", "seq", "2"])),
            ],
            vec![node(
                "Scan",
                &["", "s", "x"],
                &["s_final", "ys"],
                vec![graph_attr("body", body), int("num_scan_inputs", 1)],
            )],
            vec![untyped("s_final"), untyped("ys")],
        );
        let m = model(g, 8);
        assert_eq!(fact_of(&m, "s_final").unwrap(), "float32[b, 2]");
        assert_eq!(fact_of(&m, "ys").unwrap(), "float32[b, seq, 2]");
    }

    /// A graph over a [batch, 3], b [batch, 3], c [batch, 4] running `nodes`.
    pub(in crate::shape) fn seq_model(
        nodes: Vec<crate::proto::NodeProto>,
        out: &str,
    ) -> crate::onnx::OnnxModel {
        let g = graph(
            vec![
                value("a", t(&["batch", "3"])),
                value("b", t(&["batch", "3"])),
                value("c", t(&["batch", "4"])),
                value("i", tensor_type(INT64, &[])),
            ],
            nodes,
            vec![untyped(out)],
        );
        model(g, 18)
    }

    /// SplitToSequence of x [6, batch] along axis 0 with an optional split
    /// initializer (`dims` [] for a scalar).
    pub(in crate::shape) fn split_model(
        split: Option<(&[i64], &[i64])>,
        attrs: Vec<AttributeProto>,
    ) -> crate::onnx::OnnxModel {
        let mut g = graph(
            vec![value("x", t(&["6", "batch"]))],
            vec![node(
                "SplitToSequence",
                if split.is_some() {
                    &["x", "split"]
                } else {
                    &["x"]
                },
                &["s"],
                attrs,
            )],
            vec![untyped("s")],
        );
        if let Some((dims, v)) = split {
            g.initializer.push(int64s("split", dims, v));
        }
        model(g, 24)
    }

    #[test]
    fn split_to_sequence_knows_equal_chunks() {
        type Case<'a> = (Option<(&'a [i64], &'a [i64])>, Vec<AttributeProto>, &'a str);
        let cases: [Case; 7] = [
            // No split: chunks of 1, kept or dropped axis.
            (None, vec![], "seq float32[1, batch]"),
            (None, vec![int("keepdims", 0)], "seq float32[batch]"),
            (
                None,
                vec![int("axis", -1), int("keepdims", 0)],
                "seq float32[6]",
            ),
            // Scalar split: 6 = 3 chunks of 2; 4 leaves a last chunk of 2.
            (Some((&[], &[2])), vec![], "seq float32[2, batch]"),
            (Some((&[], &[4])), vec![], "seq float32[?]"),
            (Some((&[], &[8])), vec![], "seq float32[6, batch]"),
            // 1-D split: equal entries, or not.
            (Some((&[2], &[3, 3])), vec![], "seq float32[3, batch]"),
        ];
        for (split, attrs, want) in cases {
            let m = split_model(split, attrs);
            assert_eq!(fact_of(&m, "s").unwrap(), want, "{split:?}");
        }
        let m = split_model(Some((&[2], &[1, 5])), vec![]);
        assert_eq!(fact_of(&m, "s").unwrap(), "seq float32[?]");
        let m = split_model(Some((&[2], &[2, 3])), vec![]);
        let e = fact_of(&m, "s").unwrap_err();
        assert!(e.contains("do not add up to the axis size 6"), "{e}");
    }

    #[test]
    fn sequence_map_runs_the_body_on_an_element() {
        // Body: out = Add(element, t) with t [3] passed whole.
        let body = graph(
            vec![untyped("e"), untyped("t")],
            vec![node("Add", &["e", "t"], &["o"], vec![])],
            vec![untyped("o")],
        );
        let g = graph(
            vec![value("a", t(&["batch", "3"])), value("w", t(&["3"]))],
            vec![
                node("SequenceConstruct", &["a", "a"], &["s"], vec![]),
                node(
                    "SequenceMap",
                    &["s", "w"],
                    &["r"],
                    vec![graph_attr("body", body)],
                ),
            ],
            vec![untyped("r")],
        );
        assert_eq!(
            fact_of(&model(g, 17), "r").unwrap(),
            "seq float32[batch, 3]"
        );
    }

    #[test]
    fn if_keeps_what_both_branches_agree_on() {
        // [batch, 3] or [batch, 4]: batch either way, the other dim unknown.
        let m = if_model(None, branch("Identity", &["a"]), branch("Identity", &["b"]));
        let y = fact(&m, "y").unwrap();
        let s = shape(&y);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0], Dim::symbol("batch"));
        assert!(is_fresh(&s[1], "either"), "{y}");
        // Different ranks: the rank is unknown.
        let m = if_model(None, branch("Identity", &["a"]), branch("Identity", &["c"]));
        assert_eq!(fact_of(&m, "y").unwrap(), "float32[?]");
    }

    #[test]
    fn if_branch_count_must_match() {
        let two = graph(
            vec![],
            vec![
                node("Identity", &["a"], &["p"], vec![]),
                node("Identity", &["a"], &["q"], vec![]),
            ],
            vec![untyped("p"), untyped("q")],
        );
        // Even where the condition is unknown and the else branch would do.
        let m = if_model(None, two, branch("Identity", &["a"]));
        let e = fact_of(&m, "y").unwrap_err();
        assert!(e.contains("then branch has 2 outputs"), "{e}");
    }
}
