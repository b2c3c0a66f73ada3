//! Recurrent layers: RNN, GRU and LSTM.

use super::ctx::{InferCtx, Result, err};
use super::dims::{all, dim_of, div_dim, sizes_agree};
use super::fact::Fact;
use super::{InferFn, OpEntry};
use crate::ir::Dim;

/// RNN, GRU, LSTM: Y, Y_h (and LSTM's Y_c) from X's sequence and batch,
/// the direction count and the hidden size.
fn recurrent(ctx: &mut InferCtx) -> Result<()> {
    let gates: i64 = match ctx.op {
        "RNN" => 1,
        "GRU" => 3,
        _ => 4,
    };
    let x = ctx.require(0)?;
    let dtype = x.dtype.or_else(|| ctx.dtype(1));
    if let Some(r) = x.rank()
        && r != 3
    {
        return err(format!("X must be 3-D, got rank {r}"));
    }
    let layout = if ctx.opset >= 14 {
        ctx.attr_int_or("layout", 0)
    } else {
        0
    };
    let dirs: u64 = match ctx.attr_string_or("direction", "forward").as_str() {
        "forward" | "reverse" => 1,
        "bidirectional" => 2,
        other => return err(format!("unknown direction '{other}'")),
    };
    if let Some(w) = dim_of(ctx, 1, 0).and_then(|d| d.known())
        && w != dirs
    {
        return err(format!(
            "W has {w} directions but the direction attribute says {dirs}"
        ));
    }
    let hidden = match ctx.attr_int("hidden_size") {
        Some(h) if h <= 0 => return err(format!("hidden_size must be positive, got {h}")),
        Some(h) => {
            let h = Some(Dim::Known(h as u64));
            sizes_agree(&h, &dim_of(ctx, 2, 2), "hidden_size and R's last dimension")?;
            h
        }
        None => match dim_of(ctx, 2, 2) {
            Some(d) => Some(d),
            None => match dim_of(ctx, 1, 1) {
                Some(d) => div_dim(&d, gates, "W's gate rows")?,
                None => None,
            },
        },
    };
    let (seq, batch) = if layout == 0 {
        (dim_of(ctx, 0, 0), dim_of(ctx, 0, 1))
    } else {
        (dim_of(ctx, 0, 1), dim_of(ctx, 0, 0))
    };
    let dirs = Some(Dim::Known(dirs));
    let (y, y_h) = if layout == 0 {
        (
            all(&[seq, dirs.clone(), batch.clone(), hidden.clone()]),
            all(&[dirs, batch, hidden]),
        )
    } else {
        (
            all(&[batch.clone(), seq, dirs.clone(), hidden.clone()]),
            all(&[batch, dirs, hidden]),
        )
    };
    ctx.set(0, Fact::tensor(dtype, y));
    ctx.set(1, Fact::tensor(dtype, y_h.clone()));
    if ctx.op == "LSTM" {
        ctx.set(2, Fact::tensor(dtype, y_h));
    }
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 3] =
        [("RNN", recurrent), ("GRU", recurrent), ("LSTM", recurrent)];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::reduction::testing::*;

    #[test]
    fn lstm_layouts_and_hidden_size_from_weights() {
        // No hidden_size attribute: R is [dirs, 4*hidden, hidden].
        let inputs = vec![f32("seq,batch,10"), f32("2,80,10"), f32("2,80,20")];
        let attrs = [astr("direction", "bidirectional")];
        let out = run("", "LSTM", 14, &attrs, inputs.clone(), 3).unwrap();
        assert_eq!(shapes(&out), "seq,2,batch,20;2,batch,20;2,batch,20");
        // layout=1 is batch-major.
        let attrs = [astr("direction", "bidirectional"), ai("layout", 1)];
        let inputs = vec![f32("batch,seq,10"), f32("2,80,10"), f32("2,80,20")];
        let out = run("", "LSTM", 14, &attrs, inputs, 3).unwrap();
        assert_eq!(shapes(&out), "batch,seq,2,20;batch,2,20;batch,2,20");
    }

    #[test]
    fn gru_hidden_from_w_and_direction_mismatch() {
        // Only W known: 3 gates of 5 rows each.
        let out = run(
            "",
            "GRU",
            7,
            &[],
            vec![f32("4,1,3"), f32("1,15,3"), None],
            2,
        )
        .unwrap();
        assert_eq!(shapes(&out), "4,1,1,5;1,1,5");
        let e = run(
            "",
            "RNN",
            7,
            &[],
            vec![f32("4,1,3"), f32("2,5,3"), f32("2,5,5")],
            2,
        )
        .unwrap_err();
        assert!(e.0.contains("directions"), "{e}");
        // hidden_size 4 contradicts R's (1, 5, 5).
        let inputs = vec![f32("4,1,3"), f32("1,5,3"), f32("1,5,5")];
        assert!(run("", "RNN", 7, &[ai("hidden_size", 4)], inputs, 2).is_err());
    }
}
