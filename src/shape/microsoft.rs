//! com.microsoft (onnxruntime contrib) operators: fused attention, layer
//! normalizations, GELU variants and quantized/fused matrix products.
//! Semantics follow onnxruntime's docs/ContribOperators.md.

use super::attention::{causal_conv_with_state, heads_of, linear_attention};
use super::ctx::{InferCtx, Result, ShapeError, axis, broadcast, dim, err};
use super::dims::{add_dim, all, dim_of, div_dim, like_input, mul_dim, sizes_agree};
use super::fact::Fact;
use super::{InferFn, OpEntry};
use crate::dim::SymInt;
use crate::ir::{DType, Dim};

const MS: &str = "com.microsoft";

/// The required `num_heads` attribute.
fn num_heads(ctx: &InferCtx, name: &str) -> Result<i64> {
    match ctx.attr_int(name) {
        Some(n) if n > 0 => Ok(n),
        Some(n) => err(format!("{name} must be positive, got {n}")),
        None => err(format!("{} needs the {name} attribute", ctx.op)),
    }
}

fn known(n: i64) -> Dim {
    Dim::Known(n.max(0) as u64)
}

/// Attention (BERT/GPT-2 style, fused QKV projection) and its quantized
/// QAttention: output (B, S, v_hidden), present (2, B, N, past + S, head_size).
fn ms_attention(ctx: &mut InferCtx) -> Result<()> {
    let n = num_heads(ctx, "num_heads")?;
    if let Some(r) = ctx.rank(0)
        && r != 3
    {
        return err(format!("input must be 3-D, got rank {r}"));
    }
    // Hidden sizes of Q, K, V: the attribute, else a third each of the
    // projection's width (weights' columns or the bias length).
    let (qk_hidden, v_hidden) = match ctx.attr_ints("qkv_hidden_sizes") {
        Some(s) if !s.is_empty() => match s.as_slice() {
            [q, k, v] if q == k => (Some(known(*q)), Some(known(*v))),
            _ => return err(format!("qkv_hidden_sizes must be [h, h, v], got {s:?}")),
        },
        _ => {
            let width = dim_of(ctx, 1, 1).or_else(|| dim_of(ctx, 2, 0));
            let third = match width {
                Some(w) => div_dim(&w, 3, "the QKV projection width")?,
                None => None,
            };
            (third.clone(), third)
        }
    };
    let (batch, seq) = (dim_of(ctx, 0, 0), dim_of(ctx, 0, 1));
    let out = all(&[batch.clone(), seq.clone(), v_hidden]);
    let head = match &qk_hidden {
        Some(h) => div_dim(h, n, "hidden size over num_heads")?,
        None => None,
    };
    // QAttention has scales and zero points before its past.
    let past = if ctx.op == "QAttention" { 8 } else { 4 };
    let present = match ctx.shape(past) {
        Some(p) if p.len() != 5 => return err(format!("past must be 5-D, got rank {}", p.len())),
        Some(p) if ctx.attr_int_or("past_present_share_buffer", 0) != 0 => Some(p.clone()),
        Some(p) => match &seq {
            Some(s) => {
                let mut p = p.clone();
                p[3] = add_dim(&p[3], s)?;
                Some(p)
            }
            None => None,
        },
        None if ctx.input(past).is_some() => None,
        None => all(&[Some(Dim::Known(2)), batch, Some(known(n)), seq, head]),
    };
    // QAttention's input is quantized; its float type is the bias's.
    let t = if ctx.op == "QAttention" {
        ctx.dtype(2)
    } else {
        ctx.dtype(0)
    };
    ctx.set(0, Fact::tensor(t, out));
    ctx.set(1, Fact::tensor(t, present));
    Ok(())
}

/// MultiHeadAttention: separate, packed-KV (B, L, N, 2, H) or packed-QKV
/// (B, S, N, 3, H) inputs; output (B, S, v_hidden), present (B, N, P+L, H).
fn multi_head_attention(ctx: &mut InferCtx) -> Result<()> {
    let n = num_heads(ctx, "num_heads")?;
    let q = ctx.shape(0).cloned();
    let k = ctx.shape(1).cloned();
    let v = ctx.shape(2).cloned();
    if let Some(q) = &q
        && q.len() != 3
        && q.len() != 5
    {
        return err(format!(
            "query must be 3-D or packed 5-D, got rank {}",
            q.len()
        ));
    }
    let get = |s: &Option<Vec<Dim>>, i: usize| s.as_ref().and_then(|s| s.get(i)).cloned();
    let (batch, seq) = (get(&q, 0), get(&q, 1));
    let nd = known(n);
    // (kv length, key head size, value head size) and whether K/V are
    // already per-head caches (B, N, L, H) that attention reads as is.
    let (kv_len, hk, hv, kv_is_cache) = match (q.as_ref().map(Vec::len), k.as_ref().map(Vec::len)) {
        (Some(5), _) => (get(&q, 1), get(&q, 4), get(&q, 4), false),
        (_, Some(5)) => (get(&k, 1), get(&k, 4), get(&k, 4), false),
        (_, Some(4)) => (get(&k, 2), get(&k, 3), get(&v, 3), true),
        _ => {
            let per_head = |d: Option<Dim>| match d {
                Some(d) => div_dim(&d, n, "hidden size over num_heads"),
                None => Ok(None),
            };
            let hv = match v.as_ref().map(Vec::len) {
                Some(4) => get(&v, 3),
                _ => per_head(get(&v, 2))?,
            };
            (get(&k, 1).or(get(&v, 1)), per_head(get(&k, 2))?, hv, false)
        }
    };
    let v_hidden = match &hv {
        Some(h) => Some(mul_dim(&nd, h)?),
        None => None,
    };
    let out = all(&[batch.clone(), seq.clone(), v_hidden]);
    let present = |past: usize, head: &Option<Dim>, cache: usize| -> Result<Option<Vec<Dim>>> {
        if kv_is_cache {
            return Ok(ctx.shape(cache).cloned());
        }
        // With past_sequence_length the cache is a shared, fixed-size buffer.
        if ctx.input(8).is_some() {
            return Ok(ctx.shape(past).cloned());
        }
        let total = match (ctx.input(past).is_some(), dim_of(ctx, past, 2), &kv_len) {
            (false, _, l) => l.clone(),
            (true, Some(p), Some(l)) => Some(add_dim(&p, l)?),
            (true, _, _) => None,
        };
        Ok(all(&[batch.clone(), Some(nd.clone()), total, head.clone()]))
    };
    let present_key = present(6, &hk, 1)?;
    let present_value = present(7, &hv, 2)?;
    let t = ctx.dtype(0);
    ctx.set(0, Fact::tensor(t, out));
    ctx.set(1, Fact::tensor(ctx.dtype(6).or(t), present_key));
    ctx.set(2, Fact::tensor(ctx.dtype(7).or(t), present_value));
    Ok(())
}

/// `max(a, b)`, picking one side when their difference is a known number.
fn max_dim(a: &Dim, b: &Dim) -> Result<Dim> {
    let (x, y) = (a.to_symint(), b.to_symint());
    match x.sub(&y)?.as_int() {
        Some(d) if d >= 0 => Ok(a.clone()),
        Some(_) => Ok(b.clone()),
        None => dim(&x.max_with(&y)?),
    }
}

/// GroupQueryAttention: output (B, S, N*H); present caches
/// (B, kv_N, max(past, total_sequence_length), H) as onnxruntime infers them.
/// SparseAttention has the same inputs up to its past buffers, which it
/// always shares with present.
fn group_query_attention(ctx: &mut InferCtx) -> Result<()> {
    let n = num_heads(ctx, "num_heads")?;
    let kv_n = num_heads(ctx, "kv_num_heads")?;
    if n % kv_n != 0 {
        return err(format!(
            "{n} query heads are not a multiple of {kv_n} key/value heads"
        ));
    }
    if let Some(r) = ctx.rank(0)
        && r != 3
    {
        return err(format!("query must be 3-D, got rank {r}"));
    }
    let (batch, seq, d) = (dim_of(ctx, 0, 0), dim_of(ctx, 0, 1), dim_of(ctx, 0, 2));
    // Separate K/V: query is (B, S, N*H); packed: (B, S, (N + 2*kv_N)*H).
    let packed = ctx.input(2).is_none();
    let head = match &d {
        Some(d) if packed => div_dim(d, n + 2 * kv_n, "packed QKV width over all heads")?,
        Some(d) => div_dim(d, n, "query hidden size over num_heads")?,
        None => None,
    };
    let kv_len = if packed {
        seq.clone()
    } else {
        dim_of(ctx, 2, 1)
    };
    let out = match &head {
        Some(h) => all(&[batch.clone(), seq, Some(mul_dim(&known(n), h)?)]),
        None => None,
    };
    let total_input = if ctx.op == "SparseAttention" { 7 } else { 6 };
    let total = ctx
        .ints(total_input)
        .and_then(|v| v.first().cloned())
        .map(|s: SymInt| dim(&s))
        .transpose()?;
    sizes_agree(
        &dim_of(ctx, 3, 1),
        &Some(known(kv_n)),
        "past_key's heads and kv_num_heads",
    )?;
    sizes_agree(
        &dim_of(ctx, 3, 3),
        &head,
        "past_key's and the query's head sizes",
    )?;
    let present_len = match (ctx.input(3).is_some(), dim_of(ctx, 3, 2), total) {
        (true, p, _) if ctx.op == "SparseAttention" => p,
        (true, Some(p), Some(t)) => Some(max_dim(&p, &t)?),
        // A past buffer but no known total: the length depends on whether
        // past and present share one buffer.
        (true, _, None) => Some(ctx.fresh_dim("present_seq")),
        (true, None, Some(_)) => None,
        (false, _, Some(t)) => Some(t),
        (false, _, None) => kv_len,
    };
    let present = all(&[batch, Some(known(kv_n)), present_len, head]);
    let t = ctx.dtype(0);
    ctx.set(0, Fact::tensor(t, out));
    ctx.set(1, Fact::tensor(ctx.dtype(3).or(t), present.clone()));
    ctx.set(2, Fact::tensor(ctx.dtype(4).or(t), present));
    Ok(())
}

/// `shape` with every axis from `from` on set to 1 (saved statistics).
fn stats_shape(shape: &[Dim], from: usize) -> Vec<Dim> {
    shape
        .iter()
        .enumerate()
        .map(|(i, d)| if i < from { d.clone() } else { Dim::Known(1) })
        .collect()
}

/// Errors when input `j` does not broadcast against input `i`.
fn check_broadcast(ctx: &InferCtx, i: usize, j: usize) -> Result<()> {
    if let (Some(a), Some(b)) = (ctx.shape(i), ctx.shape(j)) {
        broadcast(a, b)?;
    }
    Ok(())
}

/// SkipLayerNormalization, SkipSimplifiedLayerNormalization: output and
/// input+skip(+bias) sum like the input; float32 mean/inv_std_var with the
/// last axis reduced to 1.
fn skip_layer_norm(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    check_broadcast(ctx, 0, 1)?;
    let stats = x
        .shape
        .as_ref()
        .map(|s| stats_shape(s, s.len().saturating_sub(1)));
    ctx.set(0, x.reshaped(x.shape.clone()));
    ctx.set(1, Fact::tensor(Some(DType::Float32), stats.clone()));
    ctx.set(2, Fact::tensor(Some(DType::Float32), stats));
    ctx.set(3, x.reshaped(x.shape.clone()));
    Ok(())
}

/// SimplifiedLayerNormalization (RMSNorm): Y like X; inv_std_var in the
/// stash type with the normalized axes reduced to 1.
pub(super) fn simplified_layer_norm(ctx: &mut InferCtx) -> Result<()> {
    let x = ctx.require(0)?.clone();
    let stash = ctx.attr_int_or("stash_type", 1);
    let stash = DType::from_onnx_code(stash as i32)
        .ok_or_else(|| ShapeError(format!("unknown stash_type {stash}")))?;
    let stats = match &x.shape {
        Some(s) => Some(stats_shape(s, axis(ctx.attr_int_or("axis", -1), s.len())?)),
        None => None,
    };
    ctx.set(0, x.reshaped(x.shape.clone()));
    ctx.set(1, Fact::tensor(Some(stash), stats));
    Ok(())
}

/// EmbedLayerNormalization (and QEmbedLayerNormalization, its tables
/// quantized): (B, S) ids give (B, S, hidden) embeddings, a (B) int32 mask
/// index and (not the quantized one) the pre-normalization sum.
fn embed_layer_norm(ctx: &mut InferCtx) -> Result<()> {
    if let Some(r) = ctx.rank(0)
        && r != 2
    {
        return err(format!("input_ids must be 2-D, got rank {r}"));
    }
    let hidden = dim_of(ctx, 2, 1).or_else(|| dim_of(ctx, 5, 0));
    sizes_agree(
        &hidden,
        &dim_of(ctx, 3, 1),
        "word and position embedding widths",
    )?;
    let (batch, seq) = (dim_of(ctx, 0, 0), dim_of(ctx, 0, 1));
    let out = all(&[batch.clone(), seq, hidden]);
    // QEmbedLayerNormalization's tables are quantized; its output has the
    // type of their scales.
    let t = if ctx.op == "QEmbedLayerNormalization" {
        ctx.dtype(8)
    } else {
        ctx.dtype(2)
    };
    ctx.set(0, Fact::tensor(t, out.clone()));
    ctx.set(1, Fact::tensor(Some(DType::Int32), all(&[batch])));
    ctx.set(2, Fact::tensor(t, out));
    Ok(())
}

/// DynamicQuantizeLSTM: as LSTM (Y (S, D, B, H), Y_h and Y_c (D, B, H)),
/// with W (D, I, 4H) and R (D, H, 4H) transposed against LSTM's.
fn dynamic_quantize_lstm(ctx: &mut InferCtx) -> Result<()> {
    if let Some(r) = ctx.rank(0)
        && r != 3
    {
        return err(format!("X must be 3-D, got rank {r}"));
    }
    let dirs: u64 = match ctx.attr_string_or("direction", "forward").as_str() {
        "forward" | "reverse" => 1,
        "bidirectional" => 2,
        other => return err(format!("unknown direction '{other}'")),
    };
    let hidden = match ctx.attr_int("hidden_size") {
        Some(h) if h <= 0 => return err(format!("hidden_size must be positive, got {h}")),
        Some(h) => Some(Dim::Known(h as u64)),
        None => dim_of(ctx, 2, 1),
    };
    sizes_agree(&hidden, &dim_of(ctx, 2, 1), "hidden_size and R's rows")?;
    let dirs = Some(Dim::Known(dirs));
    sizes_agree(
        &dirs,
        &dim_of(ctx, 1, 0),
        "the direction attribute and W's directions",
    )?;
    let (seq, batch) = (dim_of(ctx, 0, 0), dim_of(ctx, 0, 1));
    let t = ctx.dtype(0);
    let state = all(&[dirs.clone(), batch.clone(), hidden.clone()]);
    ctx.set(0, Fact::tensor(t, all(&[seq, dirs, batch, hidden])));
    ctx.set(1, Fact::tensor(t, state.clone()));
    ctx.set(2, Fact::tensor(t, state));
    Ok(())
}

/// Gelu, QuickGelu, FastGelu, BiasGelu, BiasAdd: X's shape; a bias (and
/// BiasAdd's skip) must broadcast against it.
fn gelu(ctx: &mut InferCtx) -> Result<()> {
    check_broadcast(ctx, 0, 1)?;
    check_broadcast(ctx, 0, 2)?;
    like_input(ctx)
}

/// numpy matmul of two shapes (vectors promoted and their axis dropped).
fn matmul_shape(a: &[Dim], b: &[Dim]) -> Result<Vec<Dim>> {
    let (Some(ka), Some(kb)) = (
        a.last(),
        if b.len() == 1 {
            b.first()
        } else {
            b.get(b.len().wrapping_sub(2))
        },
    ) else {
        return err("matmul inputs must have rank at least 1");
    };
    sizes_agree(
        &Some(ka.clone()),
        &Some(kb.clone()),
        "matmul inner dimensions",
    )?;
    let batch_a = &a[..a.len().saturating_sub(2)];
    let batch_b = &b[..b.len().saturating_sub(2)];
    let mut out = broadcast(batch_a, batch_b)?;
    if a.len() >= 2 {
        out.push(a[a.len() - 2].clone());
    }
    if b.len() >= 2 {
        out.push(b[b.len() - 1].clone());
    }
    Ok(out)
}

/// A matmul operand after FusedMatMul's transposes: transBatch moves the
/// first axis in front of the last one, trans swaps the last two.
fn fused_operand(s: &[Dim], trans_batch: bool, trans: bool) -> Vec<Dim> {
    let mut s = s.to_vec();
    let n = s.len();
    if n < 2 {
        return s;
    }
    if trans_batch {
        let first = s.remove(0);
        s.insert(n - 2, first);
    }
    if trans {
        s.swap(n - 2, n - 1);
    }
    s
}

/// FusedMatMul: MatMul with optional transposes of either operand.
fn fused_matmul(ctx: &mut InferCtx) -> Result<()> {
    let flag = |name: &str| ctx.attr_int_or(name, 0) != 0;
    let shape = match (ctx.shape(0), ctx.shape(1)) {
        (Some(a), Some(b)) => {
            let a = fused_operand(a, flag("transBatchA"), flag("transA"));
            let b = fused_operand(b, flag("transBatchB"), flag("transB"));
            Some(matmul_shape(&a, &b)?)
        }
        _ => None,
    };
    ctx.set(0, Fact::tensor(ctx.dtype(0), shape));
    Ok(())
}

/// MatMul-like contrib ops: GemmFastGelu (float), DynamicQuantizeMatMul
/// (float A, quantized B), MatMulIntegerToFloat (quantized A and B, float
/// result of the scales' type).
fn matmul_like(ctx: &mut InferCtx) -> Result<()> {
    let shape = match (ctx.shape(0), ctx.shape(1)) {
        (Some(a), Some(b)) => Some(matmul_shape(a, b)?),
        _ => None,
    };
    let t = if ctx.op == "MatMulIntegerToFloat" {
        ctx.dtype(2)
    } else {
        ctx.dtype(0)
    };
    ctx.set(0, Fact::tensor(t, shape));
    Ok(())
}

/// BiasSplitGelu: (N, S, D) plus bias gives (N, S, D/2).
fn bias_split_gelu(ctx: &mut InferCtx) -> Result<()> {
    check_broadcast(ctx, 0, 1)?;
    let shape = match ctx.shape(0) {
        Some(s) => match s.split_last() {
            Some((d, rest)) => div_dim(d, 2, "BiasSplitGelu's hidden size")?.map(|h| {
                let mut out = rest.to_vec();
                out.push(h);
                out
            }),
            None => return err("BiasSplitGelu's input must have rank at least 1"),
        },
        None => None,
    };
    ctx.set(0, Fact::tensor(ctx.dtype(0), shape));
    Ok(())
}

/// MatMulNBits: A (..., K) times the dequantized (K, N) weight.
fn matmul_nbits(ctx: &mut InferCtx) -> Result<()> {
    let (Some(k), Some(n)) = (ctx.attr_int("K"), ctx.attr_int("N")) else {
        return err("MatMulNBits needs the K and N attributes");
    };
    let shape = match ctx.shape(0) {
        Some(a) => {
            let Some(last) = a.last() else {
                return err("A must have rank at least 1");
            };
            sizes_agree(
                &Some(last.clone()),
                &Some(known(k)),
                "A's last dimension and K",
            )?;
            let mut out = a.clone();
            let i = out.len() - 1;
            out[i] = known(n);
            Some(out)
        }
        None => None,
    };
    ctx.set(0, Fact::tensor(ctx.dtype(0), shape));
    Ok(())
}

/// RotaryEmbedding (contrib): the input rotated in place. The head layout
/// must still be consistent with num_heads when given.
fn rotary(ctx: &mut InferCtx) -> Result<()> {
    if let Some(n) = ctx.attr_int("num_heads")
        && n > 0
        && ctx.rank(0) == Some(3)
    {
        heads_of(ctx, 0, Some(n), "input")?;
    }
    like_input(ctx)
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let list: [(&'static str, InferFn); 28] = [
        ("QuantizeLinear", super::quantization::quantize),
        ("DequantizeLinear", super::quantization::dequantize),
        ("Attention", ms_attention),
        ("QAttention", ms_attention),
        ("SparseAttention", group_query_attention),
        ("TransposeMatMul", fused_matmul),
        ("GemmFastGelu", matmul_like),
        ("DynamicQuantizeMatMul", matmul_like),
        ("MatMulIntegerToFloat", matmul_like),
        ("BiasAdd", gelu),
        ("BiasSplitGelu", bias_split_gelu),
        ("MultiHeadAttention", multi_head_attention),
        ("GroupQueryAttention", group_query_attention),
        ("SkipLayerNormalization", skip_layer_norm),
        ("SkipSimplifiedLayerNormalization", skip_layer_norm),
        ("SimplifiedLayerNormalization", simplified_layer_norm),
        ("EmbedLayerNormalization", embed_layer_norm),
        ("QEmbedLayerNormalization", embed_layer_norm),
        ("DynamicQuantizeLSTM", dynamic_quantize_lstm),
        ("BiasGelu", gelu),
        ("FastGelu", gelu),
        ("Gelu", gelu),
        ("QuickGelu", gelu),
        ("FusedMatMul", fused_matmul),
        ("MatMulNBits", matmul_nbits),
        ("RotaryEmbedding", rotary),
        // The same shapes as the ONNX operators of the same name.
        ("LinearAttention", linear_attention),
        ("CausalConvWithState", causal_conv_with_state),
    ];
    list.iter().map(|(op, f)| (MS, *op, *f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::reduction::testing::*;
    use super::MS;
    use crate::ir::DType;

    #[test]
    fn quantized_lstm_and_embedding_layer_norm() {
        // DynamicQuantizeLSTM: W (2, 10, 4H) and R (2, H, 4H), H = 20.
        let attrs = [astr("direction", "bidirectional"), ai("hidden_size", 20)];
        let inputs = vec![
            f32("seq,batch,10"),
            t(DType::Int8, "2,10,80"),
            t(DType::Int8, "2,20,80"),
        ];
        let out = run(MS, "DynamicQuantizeLSTM", 1, &attrs, inputs.clone(), 3).unwrap();
        assert_eq!(shapes(&out), "seq,2,batch,20;2,batch,20;2,batch,20");
        assert_eq!(out[0].dtype, Some(DType::Float32));
        // hidden_size 16 contradicts R's 20 rows.
        let attrs = [ai("hidden_size", 16), astr("direction", "bidirectional")];
        assert!(run(MS, "DynamicQuantizeLSTM", 1, &attrs, inputs, 3).is_err());
        // QEmbedLayerNormalization: u8 tables of width 8, f32 scales.
        let inputs = vec![
            t(DType::Int32, "b,s"),
            None,
            t(DType::Uint8, "100,8"),
            t(DType::Uint8, "64,8"),
            None,
            t(DType::Uint8, "8"),
            t(DType::Uint8, "8"),
            None,
            f32(""),
        ];
        let out = run(MS, "QEmbedLayerNormalization", 1, &[], inputs, 2).unwrap();
        assert_eq!(shapes(&out), "b,s,8;b");
        assert_eq!(out[0].dtype, Some(DType::Float32));
    }

    #[test]
    fn attention_output_and_present() {
        // BERT-base: 768 hidden, 12 heads; weights (768, 3*768).
        let attrs = [ai("num_heads", 12)];
        let inputs = vec![f32("batch,seq,768"), f32("768,2304"), f32("2304")];
        let out = run(MS, "Attention", 1, &attrs, inputs, 2).unwrap();
        assert_eq!(shapes(&out), "batch,seq,768;2,batch,12,seq,64");
        // GPT-2 with a past of P tokens and distinct V width.
        let attrs = [ai("num_heads", 2), aints("qkv_hidden_sizes", &[8, 8, 12])];
        let inputs = vec![f32("1,s,8"), f32("8,28"), None, None, f32("2,1,2,p,4")];
        let out = run(MS, "Attention", 1, &attrs, inputs, 2).unwrap();
        assert_eq!(shapes(&out), "1,s,12;2,1,2,p+s,4");
        assert!(run(MS, "Attention", 1, &[], vec![f32("1,2,8")], 1).is_err());
    }

    #[test]
    fn multi_head_attention_layouts() {
        let attrs = [ai("num_heads", 4)];
        // Separate Q/K/V with a cache of P tokens.
        let inputs = vec![
            f32("b,s,64"),
            f32("b,l,64"),
            f32("b,l,32"),
            None,
            None,
            None,
            f32("b,4,p,16"),
            f32("b,4,p,8"),
        ];
        let out = run(MS, "MultiHeadAttention", 1, &attrs, inputs, 3).unwrap();
        assert_eq!(shapes(&out), "b,s,32;b,4,l+p,16;b,4,l+p,8");
        // Packed QKV (B, S, N, 3, H), no cache.
        let out = run(
            MS,
            "MultiHeadAttention",
            1,
            &attrs,
            vec![f32("b,s,4,3,16")],
            3,
        )
        .unwrap();
        assert_eq!(shapes(&out), "b,s,64;b,4,s,16;b,4,s,16");
        // Cross attention with per-head K/V (B, N, L, H): present is K/V itself.
        let inputs = vec![f32("b,s,64"), f32("b,4,l,16"), f32("b,4,l,16")];
        let out = run(MS, "MultiHeadAttention", 1, &attrs, inputs, 3).unwrap();
        assert_eq!(shapes(&out), "b,s,64;b,4,l,16;b,4,l,16");
    }

    #[test]
    fn group_query_attention_present_length() {
        let attrs = [ai("num_heads", 8), ai("kv_num_heads", 2)];
        let total = Some(crate::shape::Fact::with_value(
            DType::Int32,
            vec![],
            crate::shape::TensorValue::ints(vec![crate::dim::SymInt::sym("t")]),
        ));
        let inputs = |past: &str, total: Option<crate::shape::Fact>| {
            vec![
                f32("b,s,512"),
                f32("b,s,128"),
                f32("b,s,128"),
                f32(past),
                f32(past),
                t(DType::Int32, "b"),
                total,
            ]
        };
        // Shared buffer of 4096 against a symbolic total: max of both.
        let out = run(
            MS,
            "GroupQueryAttention",
            1,
            &attrs,
            inputs("b,2,4096,64", total.clone()),
            3,
        )
        .unwrap();
        assert_eq!(
            shapes(&out),
            "b,s,512;b,2,max(4096,t),64;b,2,max(4096,t),64"
        );
        // total = past + 1 is known to exceed the past: present is the total.
        let total_p1 = Some(crate::shape::Fact::with_value(
            DType::Int32,
            vec![],
            crate::shape::TensorValue::ints(vec![
                crate::dim::SymInt::sym("p").add(&1.into()).unwrap(),
            ]),
        ));
        let out = run(
            MS,
            "GroupQueryAttention",
            1,
            &attrs,
            inputs("b,2,p,64", total_p1),
            3,
        )
        .unwrap();
        assert_eq!(shapes(&out), "b,s,512;b,2,p+1,64;b,2,p+1,64");
        // Packed QKV: 768 = (8 + 2*2) * 64.
        let out = run(
            MS,
            "GroupQueryAttention",
            1,
            &attrs,
            vec![f32("b,s,768")],
            3,
        )
        .unwrap();
        assert_eq!(shapes(&out), "b,s,512;b,2,s,64;b,2,s,64");
    }

    #[test]
    fn layer_norms() {
        let inputs = vec![t(DType::Float16, "b,s,768"), f32("s,768"), f32("768")];
        let out = run(MS, "SkipLayerNormalization", 1, &[], inputs, 4).unwrap();
        assert_eq!(shapes(&out), "b,s,768;b,s,1;b,s,1;b,s,768");
        assert_eq!(
            (out[0].dtype, out[1].dtype),
            (Some(DType::Float16), Some(DType::Float32))
        );
        let bad = vec![f32("b,s,768"), f32("s,512"), f32("768")];
        assert!(run(MS, "SkipSimplifiedLayerNormalization", 1, &[], bad, 1).is_err());
        let out = run(
            "",
            "SimplifiedLayerNormalization",
            17,
            &[ai("axis", 1)],
            vec![f32("b,s,8"), f32("s,8")],
            2,
        )
        .unwrap();
        assert_eq!(shapes(&out), "b,s,8;b,1,1");
    }

    #[test]
    fn embed_layer_norm_outputs() {
        let inputs = vec![
            t(DType::Int32, "b,s"),
            t(DType::Int32, "b,s"),
            f32("30522,768"),
            f32("512,768"),
            f32("2,768"),
            f32("768"),
            f32("768"),
        ];
        let out = run(MS, "EmbedLayerNormalization", 1, &[], inputs, 3).unwrap();
        assert_eq!(shapes(&out), "b,s,768;b;b,s,768");
        assert_eq!(out[1].dtype, Some(DType::Int32));
    }

    #[test]
    fn gelus_keep_the_input_shape() {
        for op in ["BiasGelu", "FastGelu", "Gelu", "QuickGelu"] {
            let out = run(MS, op, 1, &[], vec![f32("b,s,3072"), f32("3072")], 1).unwrap();
            assert_eq!(shapes(&out), "b,s,3072", "{op}");
        }
        assert!(run(MS, "BiasGelu", 1, &[], vec![f32("b,s,3072"), f32("768")], 1).is_err());
    }

    #[test]
    fn fused_matmul_transposes() {
        let out = run(
            MS,
            "FusedMatMul",
            1,
            &[ai("transB", 1)],
            vec![f32("b,s,64"), f32("b,t,64")],
            1,
        )
        .unwrap();
        assert_eq!(shapes(&out), "b,s,t");
        // transBatchA: (s, b, k) read as (b, s, k).
        let attrs = [ai("transBatchA", 1)];
        let out = run(
            MS,
            "FusedMatMul",
            1,
            &attrs,
            vec![f32("s,b,64"), f32("b,64,n")],
            1,
        )
        .unwrap();
        assert_eq!(shapes(&out), "b,s,n");
        assert!(run(MS, "FusedMatMul", 1, &[], vec![f32("2,3"), f32("4,5")], 1).is_err());
    }

    #[test]
    fn matmul_nbits_and_rotary() {
        let attrs = [
            ai("K", 4096),
            ai("N", 11008),
            ai("bits", 4),
            ai("block_size", 32),
        ];
        let inputs = vec![
            t(DType::Float16, "b,s,4096"),
            t(DType::Uint8, "11008,128,16"),
        ];
        let out = run(MS, "MatMulNBits", 1, &attrs, inputs, 1).unwrap();
        assert_eq!(
            (shapes(&out), out[0].dtype),
            ("b,s,11008".into(), Some(DType::Float16))
        );
        let bad = vec![f32("b,s,1024")];
        assert!(run(MS, "MatMulNBits", 1, &attrs, bad, 1).is_err());
        let out = run(
            MS,
            "RotaryEmbedding",
            1,
            &[ai("num_heads", 32)],
            vec![f32("b,s,4096")],
            1,
        )
        .unwrap();
        assert_eq!(shapes(&out), "b,s,4096");
    }

    #[test]
    fn quantized_attention_and_sparse_attention() {
        // QAttention: uint8 input, float bias; past is input 9.
        let attrs = [ai("num_heads", 12)];
        let mut inputs = vec![
            t(DType::Uint8, "b,s,768"),
            t(DType::Int8, "768,2304"),
            f32("2304"),
        ];
        inputs.extend([None, None, None, None, None, f32("2,b,12,p,64")]);
        let out = run(MS, "QAttention", 1, &attrs, inputs, 2).unwrap();
        assert_eq!(shapes(&out), "b,s,768;2,b,12,p+s,64");
        assert_eq!(out[0].dtype, Some(DType::Float32));
        // SparseAttention: present is the shared past buffer.
        let attrs = [
            ai("num_heads", 32),
            ai("kv_num_heads", 8),
            ai("sparse_block_size", 64),
        ];
        let inputs = vec![
            f32("b,s,3072"),
            None,
            None,
            f32("b,8,8192,64"),
            f32("b,8,8192,64"),
        ];
        let out = run(MS, "SparseAttention", 1, &attrs, inputs, 3).unwrap();
        assert_eq!(shapes(&out), "b,s,2048;b,8,8192,64;b,8,8192,64");
    }

    #[test]
    fn matmul_like_and_bias_ops() {
        let inputs = vec![
            t(DType::Uint8, "b,s,64"),
            t(DType::Int8, "64,32"),
            t(DType::Float16, ""),
        ];
        let out = run(MS, "MatMulIntegerToFloat", 1, &[], inputs, 1).unwrap();
        assert_eq!(
            (shapes(&out), out[0].dtype),
            ("b,s,32".into(), Some(DType::Float16))
        );
        let out = run(
            MS,
            "GemmFastGelu",
            1,
            &[],
            vec![f32("s,64"), f32("64,256")],
            1,
        )
        .unwrap();
        assert_eq!(shapes(&out), "s,256");
        let out = run(
            MS,
            "TransposeMatMul",
            1,
            &[ai("transA", 1)],
            vec![f32("64,s"), f32("64,8")],
            1,
        )
        .unwrap();
        assert_eq!(shapes(&out), "s,8");
        let out = run(
            MS,
            "BiasSplitGelu",
            1,
            &[],
            vec![f32("n,hw,2560"), f32("2560")],
            1,
        )
        .unwrap();
        assert_eq!(shapes(&out), "n,hw,1280");
        let inputs = vec![f32("n,hw,320"), f32("320"), f32("n,hw,320")];
        let out = run(MS, "BiasAdd", 1, &[], inputs, 1).unwrap();
        assert_eq!(shapes(&out), "n,hw,320");
    }

    #[test]
    fn group_query_attention_checks_the_past_layout() {
        let attrs = [ai("num_heads", 8), ai("kv_num_heads", 2)];
        // A past with 4 heads contradicts kv_num_heads = 2.
        let inputs = vec![
            f32("b,s,512"),
            f32("b,s,128"),
            f32("b,s,128"),
            f32("b,4,p,64"),
        ];
        assert!(run(MS, "GroupQueryAttention", 1, &attrs, inputs, 3).is_err());
        // Without a known total the present length is a fresh symbol.
        let inputs = vec![
            f32("b,s,512"),
            f32("b,s,128"),
            f32("b,s,128"),
            f32("b,2,p,64"),
        ];
        let out = run(MS, "GroupQueryAttention", 1, &attrs, inputs, 3).unwrap();
        assert_eq!(
            shapes(&out),
            "b,s,512;b,2,present_seq_1,64;b,2,present_seq_1,64"
        );
    }
}
