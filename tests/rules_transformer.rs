//! The transformer and recurrent rules: Einsum, attention, rotary embeddings,
//! onnxruntime's fused ops, LSTM, GRU and RNN, each against hand counts.

use crate::common;
use crate::common::*;

use c3::ir::DType;

/// A com.microsoft (onnxruntime contrib) layer.
fn ms(op: &str) -> Layer {
    let mut l = layer(op);
    l.node.domain = "com.microsoft".to_string();
    l
}

/// FLOPs with and without FMA.
fn flops(l: &Layer) -> (u64, u64) {
    (l.eval(true).flops, l.eval(false).flops)
}

// ------------------------------------------------------------------ recurrent

#[test]
fn lstm_counts_gates_bias_activations_and_cell_per_step() {
    // S = 2, B = 3, I = 4, H = 5 (4H = 20 gate units), bias, one direction.
    let l = layer("LSTM")
        .input(&[2, 3, 4])
        .input(&[1, 20, 4])
        .input(&[1, 20, 5])
        .input(&[1, 40])
        .output(&[2, 1, 3, 5])
        .output(&[1, 3, 5])
        .output(&[1, 3, 5])
        .int("hidden_size", 5);
    // FMA: 20 * (4 + 5) + 2 * 20 = 220 gate FLOPs, 5 * (14 + 2 + 1) = 85 per
    // unit; 2 steps * 3 batch = 6 * 305.
    // No FMA: 20 * (2 * 9 - 1) + 40 = 380, 5 * (14 + 3 + 1) = 90; 6 * 470.
    assert_eq!(flops(&l), (6 * 305, 6 * 470));
    let ev = l.eval(true);
    assert_eq!(ev.mread, (24 + 80 + 100 + 40) * F32);
    assert_eq!(ev.mwrite, (30 + 15 + 15) * F32);
    assert_eq!(param(&ev, "directions"), "1");
}

#[test]
fn lstm_bidirectional_batch_first_with_peepholes_and_clip() {
    // layout = 1: X is [B = 3, S = 2, I = 4]; P [2, 3H]; no bias.
    let l = layer("LSTM")
        .input(&[3, 2, 4])
        .input(&[2, 20, 4])
        .input(&[2, 20, 5])
        .absent()
        .absent()
        .absent()
        .absent()
        .input(&[2, 15])
        .output(&[3, 2, 2, 5])
        .int("layout", 1)
        .string("direction", "bidirectional")
        .float("clip", 1.0);
    // FMA: 20 * 9 = 180; 5 * (3 + 14 + 2 + 1 + 10) = 150 -> 330.
    // No FMA: 20 * 17 = 340; 5 * (6 + 14 + 3 + 1 + 10) = 170 -> 510.
    // 2 steps * 3 batch * 2 directions = 12.
    assert_eq!(flops(&l), (12 * 330, 12 * 510));
    let ev = l.eval(true);
    assert_eq!(param(&ev, "seq"), "2");
    assert_eq!(param(&ev, "batch"), "3");
    assert_eq!(ev.mread, (24 + 160 + 200 + 30) * F32);
}

#[test]
fn gru_counts_the_reset_gate_the_same_in_both_orders() {
    // S = 3, B = 2, I = 4, H = 5 (3H = 15), bias.
    let gru = |lbr: i64| {
        layer("GRU")
            .input(&[3, 2, 4])
            .input(&[1, 15, 4])
            .input(&[1, 15, 5])
            .input(&[1, 30])
            .output(&[3, 1, 2, 5])
            .output(&[1, 2, 5])
            .int("linear_before_reset", lbr)
    };
    // FMA: 15 * 9 + 30 = 165; 5 * (1 + 9 + 3) = 65 -> 230, times 6.
    // No FMA: 15 * 17 + 30 = 285; 5 * (1 + 9 + 4) = 70 -> 355, times 6.
    assert_eq!(flops(&gru(0)), (6 * 230, 6 * 355));
    assert_eq!(flops(&gru(1)), flops(&gru(0)));
    let ev = gru(0).eval(true);
    assert_eq!(ev.mread, (24 + 60 + 75 + 30) * F32);
    assert_eq!(ev.mwrite, (30 + 10) * F32);
}

#[test]
fn rnn_counts_one_dot_product_and_a_tanh_per_unit() {
    // S = 4, B = 1, I = 3, H = 2, no bias.
    let l = layer("RNN")
        .input(&[4, 1, 3])
        .input(&[1, 2, 3])
        .input(&[1, 2, 2])
        .output(&[4, 1, 1, 2])
        .output(&[1, 1, 2]);
    // FMA: 2 * (3 + 2) + 2 * 1 = 12 per step; no FMA: 2 * 9 + 2 = 20.
    assert_eq!(flops(&l), (4 * 12, 4 * 20));
    let ev = l.eval(true);
    assert_eq!(ev.mread, (12 + 6 + 4) * F32);
    assert_eq!(ev.mwrite, (8 + 2) * F32);
}

// ------------------------------------------------------------------ Einsum

/// An Einsum layer of `equation` over float32 operands of these shapes.
fn einsum(equation: &str, inputs: &[&[u64]], output: &[u64]) -> Layer {
    let mut l = layer("Einsum");
    for i in inputs {
        l = l.input(i);
    }
    l.output(output).string("equation", equation)
}

#[test]
fn einsum_counts_the_full_index_space_of_any_equation() {
    // bhqd,bhkd->bhqk: P = 2 * 3 * 4 * 8 * 5 = 960 points, |Y| = 120 dot
    // products of length 8: 960 FLOPs with FMA, 2 * 960 - 120 without.
    let l = einsum(
        "bhqd,bhkd->bhqk",
        &[&[2, 3, 4, 8], &[2, 3, 5, 8]],
        &[2, 3, 4, 5],
    );
    assert_eq!(flops(&l), (960, 2 * 960 - 120));
    let ev = l.eval(true);
    assert_eq!(ev.mread, (192 + 240) * F32);
    assert_eq!(ev.mwrite, 120 * F32);
    assert_eq!(param(&ev, "equation"), "\"bhqd,bhkd->bhqk\"");
    assert_eq!(param(&ev, "points"), "960");

    // ij,ik->jk (Aᵀ B): P = 3 * 4 * 5 = 60, |Y| = 20.
    let ta = einsum("ij,ik->jk", &[&[3, 4], &[3, 5]], &[4, 5]);
    assert_eq!(flops(&ta), (60, 2 * 60 - 20));

    // Two contracted indices, ijk,jkl->il: P = 2 * 3 * 4 * 5 = 120, |Y| = 10.
    let two = einsum("ijk,jkl->il", &[&[2, 3, 4], &[3, 4, 5]], &[2, 5]);
    assert_eq!(flops(&two), (120, 2 * 120 - 10));

    // i,j->ij: P = |Y| = 12, one multiplication per output element.
    let outer = einsum("i,j->ij", &[&[3], &[4]], &[3, 4]);
    assert_eq!(flops(&outer), (12, 12));

    // Three operands, ij,jk,kl->il: P = 2 * 3 * 4 * 5 = 120 points of two
    // multiplications and an addition: 2P with FMA, 3P - |Y| without.
    let three = einsum("ij,jk,kl->il", &[&[2, 3], &[3, 4], &[4, 5]], &[2, 5]);
    assert_eq!(flops(&three), (240, 3 * 120 - 10));

    // An ellipsis broadcasts: ...ij,...jk->...ik over [2, 3, 4, 5] and
    // [3, 5, 6]: the batch is [2, 3], P = 2 * 3 * 4 * 5 * 6 = 720.
    let e = einsum(
        "...ij,...jk->...ik",
        &[&[2, 3, 4, 5], &[3, 5, 6]],
        &[2, 3, 4, 6],
    );
    assert_eq!(flops(&e), (720, 2 * 720 - 144));

    // A size of 1 broadcasts: bij,bjk->bik with b = 1 and 3: P = 3 * 4 * 5 * 6.
    let b = einsum("bij,bjk->bik", &[&[1, 4, 5], &[3, 5, 6]], &[3, 4, 6]);
    assert_eq!(flops(&b).0, 360);
}

#[test]
fn einsum_with_one_operand_adds_what_it_reduces() {
    // ij->ji: a transpose, no arithmetic.
    let t = einsum("ij->ji", &[&[3, 4]], &[4, 3]);
    assert_eq!(flops(&t), (0, 0));
    // ij->i: 12 points into 3 outputs, 9 additions.
    let r = einsum("ij->i", &[&[3, 4]], &[3]);
    assert_eq!(flops(&r), (9, 9));
    // ii->i takes the diagonal (P = 4 = |Y|); ii-> sums it, 3 additions.
    assert_eq!(flops(&einsum("ii->i", &[&[4, 4]], &[4])), (0, 0));
    assert_eq!(flops(&einsum("ii->", &[&[4, 4]], &[])), (3, 3));
}

#[test]
fn einsum_equations_that_do_not_fit_their_operands_are_errors() {
    let rule = common::builtin().get("", "Einsum").unwrap();
    let fails = |l: Layer| {
        rule.evaluate(&l.node, c3::rules::CountOptions::default())
            .unwrap_err()
            .to_string()
    };
    let e = fails(einsum("ij,jk->ik", &[&[2, 3], &[4, 5]], &[2, 5]));
    assert!(
        e.contains("einsum index 'j' is 3 in one operand and 4 in another"),
        "{e}"
    );
    let e = fails(einsum("ij,jk->ik", &[&[2, 3]], &[2, 3]));
    assert!(e.contains("has 2 operands, the node 1"), "{e}");
    let e = fails(einsum("ijk->i", &[&[2, 3]], &[2]));
    assert!(
        e.contains("term 'ijk' does not fit an operand of rank 2"),
        "{e}"
    );
}

// ------------------------------------------------------------------ attention

#[test]
fn attention_4d_gqa_counts_per_query_head() {
    // B = 2, Hq = 4, Sq = 3, d = 8; Hkv = 2, Skv = 5, dv = 6.
    let l = layer("Attention")
        .input(&[2, 4, 3, 8])
        .input(&[2, 2, 5, 8])
        .input(&[2, 2, 5, 6])
        .output(&[2, 4, 3, 6]);
    // 8 query heads, n = 3 * 5 = 15 pairs over 3 rows.
    // FMA: 15 * 8 + (15 + 3 * 15 - 3) + 15 * 6 = 120 + 57 + 90 = 267.
    // No FMA: 15 * 15 + 57 + 6 * (30 - 3) = 225 + 57 + 162 = 444.
    assert_eq!(flops(&l), (8 * 267, 8 * 444));
    let ev = l.eval(true);
    // K and V are read once, whatever the number of query heads sharing them.
    assert_eq!(ev.mread, (192 + 160 + 120) * F32);
    assert_eq!(ev.mwrite, 144 * F32);
    assert_eq!(param(&ev, "heads"), "4");
    assert_eq!(param(&ev, "kv_len"), "5");
}

#[test]
fn attention_3d_causal_with_past_counts_the_unmasked_pairs() {
    // Q [1, 4, 2 * 8], K and V [1, 4, 1 * 8], past of 6: L = 10.
    let l = layer("Attention")
        .input(&[1, 4, 16])
        .input(&[1, 4, 8])
        .input(&[1, 4, 8])
        .absent()
        .input(&[1, 1, 6, 8])
        .input(&[1, 1, 6, 8])
        .output(&[1, 4, 16])
        .output(&[1, 1, 10, 8])
        .output(&[1, 1, 10, 8])
        .int("q_num_heads", 2)
        .int("kv_num_heads", 1)
        .int("is_causal", 1);
    // n = Sq * L - Sq * (Sq - 1) / 2 = 40 - 6 = 34 pairs per query head.
    // FMA: 34 * 8 + (34 + 102 - 4) + 34 * 8 = 676.
    // No FMA: 34 * 15 + 132 + 8 * (68 - 4) = 1154.
    assert_eq!(flops(&l), (2 * 676, 2 * 1154));
    // --attention full: every query scores all 10 keys, n = 4 * 10 = 40.
    // FMA: 40 * 8 + (40 + 120 - 4) + 40 * 8 = 796 per query head.
    assert_eq!(l.eval_full_attention().flops, 2 * 796);
    let ev = l.eval(true);
    assert_eq!(ev.mread, (64 + 32 + 32 + 48 + 48) * F32);
    assert_eq!(ev.mwrite, (64 + 80 + 80) * F32);
    assert_eq!(param(&ev, "kv_len"), "10");
}

#[test]
fn attention_causal_without_past_is_top_left_and_windows_cap_the_keys() {
    // Cross attention, Sq = 2 over Skv = 5, no past: query i sees i + 1 keys,
    // n = 1 + 2 = 3; a float mask costs one addition per pair.
    let l = layer("Attention")
        .input(&[1, 1, 2, 4])
        .input(&[1, 1, 5, 4])
        .input(&[1, 1, 5, 4])
        .input(&[1, 1, 2, 5])
        .output(&[1, 1, 2, 4])
        .int("is_causal", 1);
    // FMA: 3 * 4 + (3 * 2 + 9 - 2) + 3 * 4 = 37; no FMA: 21 + 13 + 16 = 50.
    assert_eq!(flops(&l), (37, 50));
    // --attention full: n = 2 * 5 = 10: 40 + (10 * 2 + 30 - 2) + 40 = 128.
    assert_eq!(l.eval_full_attention().flops, 128);
    // softcap c * tanh(x / c): 3 more per pair when positive; 0.0 is off.
    assert_eq!(l.eval(true).flops, 37);
    let capped = |c: f64| {
        layer("Attention")
            .input(&[1, 1, 2, 4])
            .input(&[1, 1, 5, 4])
            .input(&[1, 1, 5, 4])
            .input(&[1, 1, 2, 5])
            .output(&[1, 1, 2, 4])
            .int("is_causal", 1)
            .float("softcap", c)
    };
    assert_eq!(capped(30.0).eval(true).flops, 37 + 3 * 3);
    assert_eq!(capped(0.0).eval(true).flops, 37);
    assert_eq!(l.eval(true).mread, (8 + 20 + 20 + 10) * F32);

    // left_window_size = 0: each of 3 queries sees only its own key, n = 3.
    let w = layer("Attention")
        .input(&[1, 1, 3, 4])
        .input(&[1, 1, 3, 4])
        .input(&[1, 1, 3, 4])
        .output(&[1, 1, 3, 4])
        .int("is_causal", 1)
        .int("left_window_size", 0);
    // FMA: 3 * 4 + (3 + 9 - 3) + 3 * 4 = 33.
    assert_eq!(w.eval(true).flops, 33);
}

#[test]
fn attention_with_an_external_cache_aligns_the_queries_on_its_end() {
    // nonpad_kv_seqlen: K and V are the whole cache (6 keys), 2 new queries,
    // offset 6 - 2 = 4: n = Sq * Sk - Sq * (Sq - 1) / 2 = 12 - 1 = 11.
    let ext = |sq: u64, sk: u64| {
        layer("Attention")
            .input(&[1, 1, sq, 4])
            .input(&[1, 1, sk, 4])
            .input(&[1, 1, sk, 4])
            .absent()
            .absent()
            .absent()
            .input_typed(&[1], DType::Int64)
            .output(&[1, 1, sq, 4])
            .int("is_causal", 1)
    };
    // FMA: 44 + (11 + 33 - 2) + 44 = 130; no FMA: 77 + 42 + 4 * (22 - 2) = 199.
    assert_eq!(flops(&ext(2, 6)), (130, 199));
    assert_eq!(ext(2, 6).eval(true).mread, (8 + 24 + 24) * F32 + 8);
    // 4 queries over 2 keys: offset -2, the first two rows are fully masked,
    // the others see 1 and 2 keys: n = 3 over 2 rows.
    // FMA: 12 + (3 + 9 - 2) + 12 = 34.
    assert_eq!(ext(4, 2).eval(true).flops, 34);
    // --attention full: no row is skipped, n = 4 * 2 = 8 over 4 rows:
    // 32 + (8 + 24 - 4) + 32 = 92.
    assert_eq!(ext(4, 2).eval_full_attention().flops, 92);
}

#[test]
fn rotary_embedding_counts_the_rotated_part_and_the_cache_rows_used() {
    // X [2, 4, 3, 8]; cos/sin [10, 2]: 4 of 8 head elements rotated.
    let l = layer("RotaryEmbedding")
        .input(&[2, 4, 3, 8])
        .input(&[10, 2])
        .input(&[10, 2])
        .input_typed(&[2, 3], DType::Int64)
        .output(&[2, 4, 3, 8]);
    // 24 head vectors * 4 rotated = 96 elements: 2 FLOPs each with FMA, 3 without.
    assert_eq!(flops(&l), (192, 288));
    let ev = l.eval(true);
    // 6 tokens read one cache row of 2 floats from each cache: 48 bytes each.
    assert_eq!(ev.mread, 192 * F32 + 6 * 8 + 48 + 48);
    assert_eq!(ev.mwrite, 192 * F32);
    assert_eq!(param(&ev, "rotary_dim"), "4");

    // 3-D X [1, 5, 3 * 4], caches [B, S, 2] without position_ids: all rotated.
    let t = layer("RotaryEmbedding")
        .input(&[1, 5, 12])
        .input(&[1, 5, 2])
        .input(&[1, 5, 2])
        .output(&[1, 5, 12])
        .int("num_heads", 3);
    assert_eq!(flops(&t), (120, 180));
    assert_eq!(t.eval(true).mread, (60 + 10 + 10) * F32);
}

#[test]
fn ms_rotary_embedding_takes_position_ids_second() {
    let l = ms("RotaryEmbedding")
        .input(&[1, 5, 12])
        .input_typed(&[1, 5], DType::Int64)
        .input(&[16, 2])
        .input(&[16, 2])
        .output(&[1, 5, 12])
        .int("num_heads", 3);
    // 15 head vectors of 4, all rotated: 60 elements.
    assert_eq!(flops(&l), (120, 180));
    // 5 tokens use 5 of the 16 cache rows.
    assert_eq!(l.eval(true).mread, 60 * F32 + 5 * 8 + 2 * 10 * F32);
    // Without num_heads the head is the rotated width.
    let n = ms("RotaryEmbedding")
        .input(&[1, 5, 12])
        .input_typed(&[1, 5], DType::Int64)
        .input(&[16, 2])
        .input(&[16, 2])
        .output(&[1, 5, 12]);
    assert_eq!(flops(&n), (120, 180));
}

#[test]
fn multi_head_attention_separate_qkv_and_bias() {
    // query [2, 3, 16], key [2, 5, 16], value [2, 5, 12], 4 heads: d = 4,
    // dv = 3, 8 heads of n = 15 pairs over 3 rows.
    let mha = |bias: bool| {
        let l = ms("MultiHeadAttention")
            .input(&[2, 3, 16])
            .input(&[2, 5, 16])
            .input(&[2, 5, 12]);
        let l = if bias { l.input(&[44]) } else { l };
        l.output(&[2, 3, 12]).int("num_heads", 4)
    };
    // FMA: 60 + (15 + 45 - 3) + 45 = 162; no FMA: 105 + 57 + 3 * 27 = 243.
    assert_eq!(flops(&mha(false)), (8 * 162, 8 * 243));
    // The bias adds to Q (2 * 3 * 16) and to K and V (2 * 5 * (16 + 12)).
    assert_eq!(mha(true).eval(true).flops, 8 * 162 + 96 + 280);
    let ev = mha(false).eval(true);
    assert_eq!(ev.mread, (96 + 160 + 120) * F32);
    assert_eq!(ev.mwrite, 72 * F32);
    assert_eq!(param(&ev, "kv_len"), "5");
}

#[test]
fn multi_head_attention_decoding_with_past_and_causal_mask() {
    // One new token over 4 past ones, 2 heads of 4.
    let l = ms("MultiHeadAttention")
        .input(&[1, 1, 8])
        .input(&[1, 1, 8])
        .input(&[1, 1, 8])
        .absent()
        .absent()
        .absent()
        .input(&[1, 2, 4, 4])
        .input(&[1, 2, 4, 4])
        .output(&[1, 1, 8])
        .output(&[1, 2, 5, 4])
        .output(&[1, 2, 5, 4])
        .int("num_heads", 2)
        .int("unidirectional", 1);
    // n = 5 (the one query sees all 5 keys).
    // FMA: 20 + (5 + 15 - 1) + 20 = 59; no FMA: 35 + 19 + 4 * 9 = 90.
    assert_eq!(flops(&l), (2 * 59, 2 * 90));
    // Nothing is masked when decoding one token: --attention full agrees.
    assert_eq!(l.eval_full_attention().flops, 2 * 59);
    let ev = l.eval(true);
    assert_eq!(ev.mread, (8 * 3 + 32 + 32) * F32);
    assert_eq!(ev.mwrite, (8 + 40 + 40) * F32);
}

/// GroupQueryAttention: 4 query heads of 8 sharing 2 KV heads, 4 new tokens
/// over a past of 6 (present 10).
fn gqa() -> Layer {
    ms("GroupQueryAttention")
        .input(&[1, 4, 32])
        .input(&[1, 4, 16])
        .input(&[1, 4, 16])
        .input(&[1, 2, 6, 8])
        .input(&[1, 2, 6, 8])
        .input_typed(&[1], DType::Int32)
        .input_typed(&[], DType::Int32)
}

#[test]
fn group_query_attention_shares_kv_heads_and_counts_causal_pairs() {
    let l = gqa()
        .output(&[1, 4, 32])
        .output(&[1, 2, 10, 8])
        .output(&[1, 2, 10, 8])
        .int("num_heads", 4)
        .int("kv_num_heads", 2);
    // n = 4 * 10 - 4 * 3 / 2 = 34 pairs per query head, 4 query heads.
    // FMA: 272 + (34 + 102 - 4) + 272 = 676; no FMA: 510 + 132 + 8 * 64 = 1154.
    assert_eq!(flops(&l), (4 * 676, 4 * 1154));
    // --attention full: n = 4 * 10 = 40: 320 + (40 + 120 - 4) + 320 = 796.
    assert_eq!(l.eval_full_attention().flops, 4 * 796);
    let ev = l.eval(true);
    // K, V and the caches once each; seqlens_k (one int32) is read.
    assert_eq!(ev.mread, (128 + 64 + 64 + 96 + 96) * F32 + 4);
    assert_eq!(ev.mwrite, (128 + 160 + 160) * F32);
    assert_eq!(param(&ev, "kv_len"), "10");
}

#[test]
fn group_query_attention_local_window_and_rotary() {
    let l = gqa()
        .input(&[16, 4])
        .input(&[16, 4])
        .output(&[1, 4, 32])
        .output(&[1, 2, 10, 8])
        .output(&[1, 2, 10, 8])
        .int("num_heads", 4)
        .int("kv_num_heads", 2)
        .int("local_window_size", 2)
        .int("do_rotary", 1);
    // Each query sees 3 keys: n = 12. FMA: 96 + (12 + 36 - 4) + 96 = 236 per
    // head. Rotary: (4 * 4 + 4 * 2) head vectors of 8, 2 FLOPs per element.
    assert_eq!(l.eval(true).flops, 4 * 236 + 2 * 24 * 8);
    assert_eq!(
        l.eval(false).flops,
        4 * (12 * 15 + 44 + 8 * 20) + 3 * 24 * 8
    );
    // 4 tokens read a cache row of d / 2 = 4 floats from each cache.
    let ev = l.eval(true);
    assert_eq!(ev.mread, (128 + 64 + 64 + 96 + 96) * F32 + 4 + 2 * 16 * F32);
}

#[test]
fn ms_attention_projects_then_attends() {
    // input [2, 3, 8], weights [8, 24] (8 + 8 + 8), bias, 2 heads of 4.
    let l = ms("Attention")
        .input(&[2, 3, 8])
        .input(&[8, 24])
        .input(&[24])
        .output(&[2, 3, 8])
        .int("num_heads", 2);
    // Projection: 2 * 3 * 24 outputs of 8 + 1 (FMA) or 16 (no FMA).
    // Attention: 4 heads, n = 9 over 3 rows.
    // FMA: 36 + (9 + 27 - 3) + 36 = 105; no FMA: 63 + 33 + 4 * 15 = 156.
    assert_eq!(flops(&l), (144 * 9 + 4 * 105, 144 * 16 + 4 * 156));
    let ev = l.eval(true);
    assert_eq!(ev.mread, (48 + 192 + 24) * F32);
    assert_eq!(ev.mwrite, 48 * F32);
}

#[test]
fn ms_attention_gpt2_decoding_with_past() {
    let l = ms("Attention")
        .input(&[1, 1, 8])
        .input(&[8, 24])
        .input(&[24])
        .absent()
        .input(&[2, 1, 2, 4, 4])
        .output(&[1, 1, 8])
        .output(&[2, 1, 2, 5, 4])
        .int("num_heads", 2)
        .int("unidirectional", 1);
    // Projection 24 * 9 = 216; 2 heads of n = 5: 20 + 19 + 20 = 59.
    assert_eq!(l.eval(true).flops, 216 + 2 * 59);
    assert_eq!(l.eval_full_attention().flops, 216 + 2 * 59);
    let ev = l.eval(true);
    assert_eq!(param(&ev, "kv_len"), "5");
    assert_eq!(ev.mwrite, (8 + 80) * F32);
}

// ------------------------------------------------------------------ normalization

#[test]
fn skip_layer_normalization_adds_then_normalizes() {
    // [2, 3, 4]: 6 vectors of c = 4; skip, beta and bias.
    let l = ms("SkipLayerNormalization")
        .input(&[2, 3, 4])
        .input(&[2, 3, 4])
        .input(&[4])
        .input(&[4])
        .input(&[4])
        .output(&[2, 3, 4])
        .output(&[2, 3, 1])
        .output(&[2, 3, 1])
        .output(&[2, 3, 4]);
    // 2 additions per element, then 5c + 3 = 23 (FMA) or 7c + 2 = 30.
    assert_eq!(flops(&l), (48 + 6 * 23, 48 + 6 * 30));
    let ev = l.eval(true);
    assert_eq!(ev.mread, (24 + 24 + 4 + 4 + 4) * F32);
    assert_eq!(ev.mwrite, (24 + 6 + 6 + 24) * F32);
    // Without beta and bias: 1 addition, then 5c + 3 or 6c + 2 = 26.
    let bare = ms("SkipLayerNormalization")
        .input(&[2, 3, 4])
        .input(&[2, 3, 4])
        .input(&[4])
        .output(&[2, 3, 4]);
    assert_eq!(flops(&bare), (24 + 6 * 23, 24 + 6 * 26));
}

#[test]
fn skip_simplified_layer_normalization_is_a_residual_rms_norm() {
    let l = ms("SkipSimplifiedLayerNormalization")
        .input(&[2, 3, 4])
        .input(&[2, 3, 4])
        .input(&[4])
        .output(&[2, 3, 4]);
    // 1 addition per element, then 3c + 3 = 15 or 4c + 2 = 18 per vector.
    assert_eq!(flops(&l), (24 + 6 * 15, 24 + 6 * 18));
    assert_eq!(l.eval(true).mread, (24 + 24 + 4) * F32);
}

#[test]
fn simplified_layer_normalization_in_both_domains() {
    for domain in ["", "com.microsoft"] {
        let mut l = layer("SimplifiedLayerNormalization")
            .input(&[2, 3, 8])
            .input(&[8])
            .output(&[2, 3, 8]);
        l.node.domain = domain.to_string();
        // 6 vectors of 8: 3c + 3 = 27 (FMA) or 4c + 2 = 34.
        assert_eq!(flops(&l), (6 * 27, 6 * 34), "{domain}");
        let ev = l.eval(true);
        assert_eq!(ev.mread, (48 + 8) * F32);
        assert_eq!(ev.mwrite, 48 * F32);
        // axis = 1: 2 vectors of 24, 3 * 24 + 3 = 75 or 4 * 24 + 2 = 98.
        let mut a = layer("SimplifiedLayerNormalization")
            .input(&[2, 3, 8])
            .input(&[3, 8])
            .output(&[2, 3, 8])
            .output(&[2, 1, 1])
            .int("axis", 1);
        a.node.domain = domain.to_string();
        assert_eq!(flops(&a), (2 * 75, 2 * 98), "{domain}");
        assert_eq!(a.eval(true).mwrite, (48 + 2) * F32);
    }
}

#[test]
fn embed_layer_normalization_reads_only_the_gathered_rows() {
    let i32 = DType::Int32;
    let l = ms("EmbedLayerNormalization")
        .input_typed(&[2, 3], i32)
        .input_typed(&[2, 3], i32)
        .input(&[100, 4])
        .input(&[16, 4])
        .input(&[2, 4])
        .input(&[4])
        .input(&[4])
        .input_typed(&[2, 3], i32)
        .output(&[2, 3, 4])
        .output_typed(&[2], i32);
    // 2 additions per element, 6 tokens * (5h + 3 = 23 | 7h + 2 = 30), and
    // 6 - 2 additions for the mask index.
    assert_eq!(flops(&l), (48 + 6 * 23 + 4, 48 + 6 * 30 + 4));
    let ev = l.eval(true);
    // ids, segment ids, mask (6 int32 each), gamma and beta, then 6 rows of 4
    // floats from the word and position tables and all of the 2-row segment
    // table.
    assert_eq!(ev.mread, 3 * 6 * 4 + 8 * F32 + 2 * 24 * F32 + 8 * F32);
    assert_eq!(ev.mwrite, 24 * F32 + 2 * 4);
}

// ------------------------------------------------------------------ activations

#[test]
fn gelu_variants_count_per_element() {
    let x = |op: &str| ms(op).input(&[2, 5]).output(&[2, 5]);
    assert_eq!(flops(&x("Gelu")), (5 * 10, 5 * 10));
    assert_eq!(flops(&x("QuickGelu")), (6 * 10, 6 * 10));
    // FastGelu: 8 with FMA (0.044715 x^3 + x fused), 9 without.
    assert_eq!(flops(&x("FastGelu")), (8 * 10, 9 * 10));
    let fast_bias = ms("FastGelu").input(&[2, 5]).input(&[5]).output(&[2, 5]);
    assert_eq!(flops(&fast_bias), (9 * 10, 10 * 10));
    assert_eq!(fast_bias.eval(true).mread, 15 * F32);
    let bias_gelu = ms("BiasGelu").input(&[2, 5]).input(&[5]).output(&[2, 5]);
    assert_eq!(flops(&bias_gelu), (6 * 10, 6 * 10));
    assert_eq!(bias_gelu.eval(true).mread, 15 * F32);
    assert_eq!(bias_gelu.eval(true).mwrite, 10 * F32);
}

// ------------------------------------------------------------------ matmuls

#[test]
fn fused_matmul_finds_k_through_the_transposes() {
    let plain = ms("FusedMatMul")
        .input(&[2, 3, 4])
        .input(&[2, 4, 5])
        .output(&[2, 3, 5]);
    // 30 outputs of K = 4: 120 FLOPs with FMA, 30 * 7 without.
    assert_eq!(flops(&plain), (120, 210));
    assert_eq!(plain.eval(true).mread, (24 + 40) * F32);
    // transA: A [2, 4, 3], K is the second-to-last dimension.
    let ta = ms("FusedMatMul")
        .input(&[2, 4, 3])
        .input(&[2, 4, 5])
        .output(&[2, 3, 5])
        .int("transA", 1);
    assert_eq!(flops(&ta), (120, 210));
    // transBatchA + transA: A [4, 2, 3] becomes [2, 3, 4]; K = 4 is dim 0.
    // alpha adds one multiplication per output.
    let tb = ms("FusedMatMul")
        .input(&[4, 2, 3])
        .input(&[2, 4, 5])
        .output(&[2, 3, 5])
        .int("transA", 1)
        .int("transBatchA", 1)
        .float("alpha", 0.125);
    assert_eq!(flops(&tb), (120 + 30, 210 + 30));
    // alpha = 1 scales nothing.
    let one = ms("FusedMatMul")
        .input(&[2, 3, 4])
        .input(&[2, 4, 5])
        .output(&[2, 3, 5])
        .float("alpha", 1.0);
    assert_eq!(flops(&one), (120, 210));
}

#[test]
fn matmul_nbits_dequantizes_then_multiplies() {
    // A [1, 3, 64], 4-bit weights N = 32, K = 64, block 32: B [32, 2, 16].
    let l = ms("MatMulNBits")
        .input(&[1, 3, 64])
        .input_typed(&[32, 2, 16], DType::Uint8)
        .input(&[64])
        .input_typed(&[32], DType::Uint8)
        .output(&[1, 3, 32])
        .int("K", 64)
        .int("N", 32)
        .int("bits", 4)
        .int("block_size", 32);
    // Dequantization 32 * 64 multiply-adds; 96 outputs of K = 64.
    assert_eq!(flops(&l), (2048 + 96 * 64, 2 * 2048 + 96 * 127));
    let ev = l.eval(true);
    assert_eq!(ev.mread, 192 * F32 + 1024 + 64 * F32 + 32);
    assert_eq!(ev.mwrite, 96 * F32);
    // A bias adds one FLOP per output (two per output without FMA: 2K).
    let b = ms("MatMulNBits")
        .input(&[1, 3, 64])
        .input_typed(&[32, 2, 16], DType::Uint8)
        .input(&[64])
        .absent()
        .absent()
        .input(&[32])
        .output(&[1, 3, 32]);
    assert_eq!(flops(&b), (2048 + 96 * 65, 4096 + 96 * 128));
}
