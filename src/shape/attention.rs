//! Attention-style operators of the standard set: Attention (23+),
//! RotaryEmbedding, LinearAttention, CausalConvWithState (27) and
//! ai.onnx.preview FlexAttention.

use super::ctx::{InferCtx, Result, err};
use super::dims::{add_dim, all, dim_of, div_dim, like_input, mul_dim, sizes_agree};
use super::fact::Fact;
use super::{InferFn, OpEntry};
use crate::ir::Dim;

/// One of Q, K, V seen as (batch, heads, sequence, head size).
#[derive(Default)]
pub(super) struct Heads {
    pub batch: Option<Dim>,
    pub heads: Option<Dim>,
    pub seq: Option<Dim>,
    pub head_size: Option<Dim>,
    /// Whether the input was 3-D (heads packed into the last axis).
    pub packed: bool,
}

/// Reads input `i` as 4-D (B, H, S, D) or 3-D (B, S, H*D) with `heads` heads.
pub(super) fn heads_of(ctx: &InferCtx, i: usize, heads: Option<i64>, what: &str) -> Result<Heads> {
    let Some(s) = ctx.shape(i) else {
        return Ok(Heads::default());
    };
    match s.as_slice() {
        [b, h, sq, d] => Ok(Heads {
            batch: Some(b.clone()),
            heads: Some(h.clone()),
            seq: Some(sq.clone()),
            head_size: Some(d.clone()),
            packed: false,
        }),
        [b, sq, hidden] => {
            let head_size = match heads {
                Some(n) => div_dim(hidden, n, &format!("{what}'s hidden size over its heads"))?,
                None => None,
            };
            Ok(Heads {
                batch: Some(b.clone()),
                heads: heads.map(|n| Dim::Known(n as u64)),
                seq: Some(sq.clone()),
                head_size,
                packed: true,
            })
        }
        _ => err(format!("{what} must be 3-D or 4-D, got rank {}", s.len())),
    }
}

/// `a * b` when both are present.
fn mul_both(a: &Option<Dim>, b: &Option<Dim>) -> Result<Option<Dim>> {
    match (a, b) {
        (Some(a), Some(b)) => Ok(Some(mul_dim(a, b)?)),
        _ => Ok(None),
    }
}

/// Attention (opset 23+): Y, present_key, present_value, qk_matmul_output.
fn attention(ctx: &mut InferCtx) -> Result<()> {
    let q_heads = ctx.attr_int("q_num_heads");
    let kv_heads = ctx.attr_int("kv_num_heads");
    let q = heads_of(ctx, 0, q_heads, "Q")?;
    let k = heads_of(ctx, 1, kv_heads, "K")?;
    let v = heads_of(ctx, 2, kv_heads, "V")?;
    sizes_agree(&q.head_size, &k.head_size, "Q and K head sizes")?;
    sizes_agree(&k.seq, &v.seq, "K and V sequence lengths")?;
    if let (Some(Dim::Known(hq)), Some(Dim::Known(hkv))) = (&q.heads, &k.heads)
        && (*hkv == 0 || hq % hkv != 0)
    {
        return err(format!(
            "{hq} query heads are not a multiple of {hkv} key/value heads"
        ));
    }
    let y = if q.packed {
        all(&[
            q.batch.clone(),
            q.seq.clone(),
            mul_both(&q.heads, &v.head_size)?,
        ])
    } else {
        all(&[
            q.batch.clone(),
            q.heads.clone(),
            q.seq.clone(),
            v.head_size.clone(),
        ])
    };
    // The cache grows by this step's keys: past (B, Hkv, P, D) + kv sequence.
    let total = match (ctx.input(4).is_some(), dim_of(ctx, 4, 2), &k.seq) {
        (false, _, seq) => seq.clone(),
        (true, Some(p), Some(s)) => Some(add_dim(&p, s)?),
        (true, _, _) => None,
    };
    let batch = q.batch.clone().or(k.batch.clone());
    let present_key = all(&[
        batch.clone(),
        k.heads.clone(),
        total.clone(),
        k.head_size.clone(),
    ]);
    let present_value = all(&[
        batch.clone(),
        k.heads.clone(),
        total.clone(),
        v.head_size.clone(),
    ]);
    let qk = all(&[batch, q.heads.clone(), q.seq.clone(), total]);
    let (tq, tk, tv) = (ctx.dtype(0), ctx.dtype(1), ctx.dtype(2));
    ctx.set(0, Fact::tensor(tq, y));
    ctx.set(1, Fact::tensor(tk.or(tq), present_key));
    ctx.set(2, Fact::tensor(tv, present_value));
    ctx.set(3, Fact::tensor(tq, qk));
    Ok(())
}

/// FlexAttention: rank-4 Q (B, Hq, L, D) and V (B, Hkv, S, Dv) give (B, Hq, L, Dv).
fn flex_attention(ctx: &mut InferCtx) -> Result<()> {
    for (i, name) in [(0, "Q"), (1, "K"), (2, "V")] {
        if let Some(r) = ctx.rank(i)
            && r != 4
        {
            return err(format!("{name} must be 4-D, got rank {r}"));
        }
    }
    let y = all(&[
        dim_of(ctx, 0, 0),
        dim_of(ctx, 0, 1),
        dim_of(ctx, 0, 2),
        dim_of(ctx, 2, 3),
    ]);
    ctx.set(0, Fact::tensor(ctx.dtype(0), y));
    Ok(())
}

/// LinearAttention: packed (B, T, H*D) inputs; output (B, T, Hq*dv) and the
/// recurrent state (B, Hkv, dk, dv).
pub(super) fn linear_attention(ctx: &mut InferCtx) -> Result<()> {
    let (Some(hq), Some(hkv)) = (ctx.attr_int("q_num_heads"), ctx.attr_int("kv_num_heads")) else {
        return err("LinearAttention needs q_num_heads and kv_num_heads");
    };
    if hkv <= 0 || hq % hkv != 0 {
        return err(format!(
            "{hq} query heads are not a multiple of {hkv} key/value heads"
        ));
    }
    for (i, name) in [(0, "query"), (1, "key"), (2, "value")] {
        if let Some(r) = ctx.rank(i)
            && r != 3
        {
            return err(format!("{name} must be 3-D, got rank {r}"));
        }
    }
    let q = heads_of(ctx, 0, Some(hq), "query")?;
    let k = heads_of(ctx, 1, Some(hkv), "key")?;
    let v = heads_of(ctx, 2, Some(hkv), "value")?;
    sizes_agree(&q.head_size, &k.head_size, "query and key head sizes")?;
    let out = all(&[
        q.batch.clone(),
        q.seq.clone(),
        mul_both(&q.heads, &v.head_size)?,
    ]);
    // Without a past state, d_k may come from the query as well as the key.
    let dk = k.head_size.or(q.head_size);
    let state = match ctx.shape(3) {
        Some(s) => Some(s.clone()),
        None => with_window(ctx, all(&[q.batch.or(k.batch), k.heads, dk, v.head_size]))?,
    };
    let t = ctx.dtype(0);
    ctx.set(0, Fact::tensor(t, out));
    ctx.set(1, Fact::tensor(ctx.dtype(3).or(t), state));
    Ok(())
}

/// The com.microsoft versions' `state_window` W > 0 adds a leading axis of
/// W per-position states to the state tensors.
fn with_window(ctx: &InferCtx, state: Option<Vec<Dim>>) -> Result<Option<Vec<Dim>>> {
    match ctx.attr_int_or("state_window", 0) {
        0 => Ok(state),
        w if !(0..=8).contains(&w) => err(format!("state_window must be in [0, 8], got {w}")),
        w => Ok(state.map(|s| std::iter::once(Dim::Known(w as u64)).chain(s).collect())),
    }
}

/// CausalConvWithState: output like the input (B, C, L); the carry state
/// (B, C, (k-1)*dilation) for a (C, 1, k) kernel. The com.microsoft version
/// adds `dilation`, a channels-last layout (B, L, d1..dn) with state
/// (B, state_len, d1..dn), and `state_window`; only its 1-D form is inferred.
pub(super) fn causal_conv_with_state(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?;
    let channels_last = ctx.attr_int_or("channels_last", 0) != 0;
    let one_d = ctx.attr_int_or("ndim", 1) == 1;
    if let Some(r) = x.rank()
        && (r < 3 || (r != 3 && one_d && !channels_last))
    {
        return err(format!("input must be 3-D, got rank {r}"));
    }
    let out = x.reshaped(x.shape.clone());
    let dilation = ctx.attr_int_or("dilation", 1);
    if dilation < 1 {
        return err(format!("dilation must be at least 1, got {dilation}"));
    }
    let state_len = match dim_of(ctx, 1, 2) {
        Some(Dim::Known(0)) => return err("the kernel size must be at least 1"),
        Some(k) => {
            let taps = k.to_symint().sub(&1.into())?;
            Some(super::ctx::dim(&taps.mul(&dilation.into())?)?)
        }
        None => None,
    };
    let state = match (&x.shape, one_d, channels_last) {
        (_, false, _) => None,
        (Some(s), true, true) => state_len.map(|n| {
            let mut out = s.clone();
            out[1] = n;
            out
        }),
        _ => all(&[dim_of(ctx, 0, 0), dim_of(ctx, 0, 1), state_len]),
    };
    let state = with_window(ctx, state)?;
    let t = ctx.dtype(0);
    ctx.set(0, out);
    ctx.set(1, Fact::tensor(t, state));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let list: [(&'static str, &'static str, InferFn); 5] = [
        ("", "Attention", attention),
        ("", "RotaryEmbedding", like_input),
        ("", "LinearAttention", linear_attention),
        ("", "CausalConvWithState", causal_conv_with_state),
        ("ai.onnx.preview", "FlexAttention", flex_attention),
    ];
    list.to_vec()
}

#[cfg(test)]
mod tests {
    use super::super::reduction::testing::*;
    use crate::ir::DType;

    #[test]
    fn attention_3d_gqa_with_cache() {
        // Q (B, S, 9*8), K (B, 6, 3*8), V (B, 6, 3*10), past (B, 3, P, .).
        let attrs = [ai("q_num_heads", 9), ai("kv_num_heads", 3)];
        let inputs = vec![
            f32("batch,4,72"),
            f32("batch,6,24"),
            f32("batch,6,30"),
            None,
            f32("batch,3,past,8"),
            f32("batch,3,past,10"),
        ];
        let out = run("", "Attention", 23, &attrs, inputs, 4).unwrap();
        assert_eq!(
            shapes(&out),
            "batch,4,90;batch,3,past+6,8;batch,3,past+6,10;batch,9,4,past+6"
        );
    }

    #[test]
    fn attention_4d_without_cache() {
        let inputs = vec![f32("2,8,seq,16"), f32("2,2,kv,16"), f32("2,2,kv,32")];
        let out = run("", "Attention", 24, &[], inputs, 4).unwrap();
        assert_eq!(shapes(&out), "2,8,seq,32;2,2,kv,16;2,2,kv,32;2,8,seq,kv");
    }

    #[test]
    fn attention_errors() {
        // 6 query heads cannot share 4 key/value heads.
        let inputs = vec![f32("1,6,3,8"), f32("1,4,3,8"), f32("1,4,3,8")];
        assert!(run("", "Attention", 23, &[], inputs, 1).is_err());
        // A 3-D hidden size that is not a multiple of the head count.
        let attrs = [ai("q_num_heads", 5), ai("kv_num_heads", 5)];
        let inputs = vec![f32("1,3,12"), f32("1,3,10"), f32("1,3,10")];
        assert!(run("", "Attention", 23, &attrs, inputs, 1).is_err());
    }

    #[test]
    fn linear_attention_gqa() {
        let attrs = [ai("q_num_heads", 8), ai("kv_num_heads", 2)];
        let inputs = vec![f32("b,t,64"), f32("b,t,16"), f32("b,t,32")];
        let out = run("", "LinearAttention", 27, &attrs, inputs, 2).unwrap();
        assert_eq!(shapes(&out), "b,t,128;b,2,8,16");
        assert!(run("", "LinearAttention", 27, &[], vec![f32("b,t,64")], 2).is_err());
    }

    #[test]
    fn causal_conv_state_is_kernel_minus_one() {
        let inputs = vec![f32("b,c,len"), f32("c,1,4")];
        let out = run("", "CausalConvWithState", 27, &[], inputs, 2).unwrap();
        assert_eq!(shapes(&out), "b,c,len;b,c,3");
    }

    #[test]
    fn flex_attention_and_rotary() {
        let inputs = vec![f32("b,8,l,16"), f32("b,2,s,16"), f32("b,2,s,32")];
        let out = run("ai.onnx.preview", "FlexAttention", 1, &[], inputs, 1).unwrap();
        assert_eq!(shapes(&out), "b,8,l,32");
        let inputs = vec![t(DType::Float16, "b,s,64"), f32("p,16"), f32("p,16")];
        let out = run("", "RotaryEmbedding", 23, &[], inputs, 1).unwrap();
        assert_eq!(
            (shapes(&out), out[0].dtype),
            ("b,s,64".into(), Some(DType::Float16))
        );
    }

    #[test]
    fn contrib_state_window_dilation_channels_last() {
        let ms = "com.microsoft";
        // Dilation 2 doubles the carry; a window of 3 states leads.
        let attrs = [ai("dilation", 2), ai("state_window", 3)];
        let out = run(
            ms,
            "CausalConvWithState",
            1,
            &attrs,
            vec![f32("b,c,len"), f32("c,1,4")],
            2,
        )
        .unwrap();
        assert_eq!(shapes(&out), "b,c,len;3,b,c,6");
        // Channels-last (B, L, d1, d2): the state replaces the sequence axis.
        let attrs = [ai("channels_last", 1)];
        let out = run(
            ms,
            "CausalConvWithState",
            1,
            &attrs,
            vec![f32("b,len,4,32"), f32("128,1,4")],
            2,
        )
        .unwrap();
        assert_eq!(shapes(&out), "b,len,4,32;b,3,4,32");
        let attrs = [
            ai("q_num_heads", 4),
            ai("kv_num_heads", 4),
            ai("state_window", 2),
        ];
        let inputs = vec![f32("b,t,32"), f32("b,t,32"), f32("b,t,32")];
        let out = run(ms, "LinearAttention", 1, &attrs, inputs, 2).unwrap();
        assert_eq!(shapes(&out), "b,t,32;2,b,4,8,8");
    }
}
