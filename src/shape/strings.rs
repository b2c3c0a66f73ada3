//! String and image-decoding operators: StringSplit, StringNormalizer,
//! StringConcat, RegexFullMatch, TfIdfVectorizer and ImageDecoder.

use super::ctx::{InferCtx, Result, ShapeError, broadcast, err, join};
use super::fact::Fact;
use super::indexing::same_shape_as;
use super::{InferFn, OpEntry};
use crate::ir::{DType, Dim};

/// ImageDecoder: `[H, W, channels]` uint8; H and W are in the image bytes.
fn image_decoder(ctx: &mut InferCtx) -> Result<()> {
    let channels = if ctx.attr_string_or("pixel_format", "RGB") == "Grayscale" {
        1
    } else {
        3
    };
    let shape = vec![
        ctx.fresh_dim("height"),
        ctx.fresh_dim("width"),
        Dim::Known(channels),
    ];
    ctx.set(0, Fact::new(DType::Uint8, shape));
    Ok(())
}

/// StringSplit: substrings `[*X, max_splits]`, lengths `[*X]`.
fn string_split(ctx: &mut InferCtx) -> Result<()> {
    let shape = ctx.require(0)?.shape.clone();
    let subs = shape.clone().map(|mut s| {
        s.push(ctx.fresh_dim("splits"));
        s
    });
    ctx.set(0, Fact::tensor(Some(DType::String), subs));
    ctx.set(1, Fact::tensor(Some(DType::Int64), shape));
    Ok(())
}

/// StringNormalizer: same shape unless stop words may remove entries
/// (`[C]` → `[C']`, `[1, C]` → `[1, C']`).
fn string_normalizer(ctx: &mut InferCtx) -> Result<()> {
    let shape = ctx.require(0)?.shape.clone();
    let stops = ctx.attr_strings("stopwords").unwrap_or_default();
    let shape = match shape {
        Some(s) if !stops.is_empty() => match s.len() {
            1 => Some(vec![ctx.fresh_dim("strings")]),
            2 => Some(vec![Dim::Known(1), ctx.fresh_dim("strings")]),
            _ => {
                return err(format!(
                    "StringNormalizer input [{}] must be [C] or [1, C]",
                    join(&s)
                ));
            }
        },
        s => s,
    };
    ctx.set(0, Fact::tensor(Some(DType::String), shape));
    Ok(())
}

/// StringConcat broadcasts its two inputs.
fn string_concat(ctx: &mut InferCtx) -> Result<()> {
    let shape = match (ctx.shape(0), ctx.shape(1)) {
        (Some(a), Some(b)) => Some(broadcast(a, b)?),
        _ => None,
    };
    ctx.set(0, Fact::tensor(Some(DType::String), shape));
    Ok(())
}

fn regex_full_match(ctx: &mut InferCtx) -> Result<()> {
    same_shape_as(ctx, Some(DType::Bool))
}

/// TfIdfVectorizer: `[max(ngram_indexes) + 1]`, with the batch in front for
/// 2-D input.
fn tfidf(ctx: &mut InferCtx) -> Result<()> {
    ctx.require(0)?;
    let idx = ctx.attr_ints("ngram_indexes").unwrap_or_default();
    let width = idx.iter().max().map_or(Ok(0), |&m| {
        m.checked_add(1)
            .filter(|&w| w >= 0)
            .ok_or_else(|| ShapeError(format!("ngram index {m} is invalid")))
    })?;
    let width = Dim::Known(width as u64);
    let shape = match ctx.shape(0) {
        None => None,
        Some(s) if s.len() == 1 => Some(vec![width]),
        Some(s) if s.len() == 2 => Some(vec![s[0].clone(), width]),
        Some(s) => {
            return err(format!(
                "TfIdfVectorizer input [{}] must be 1-D or 2-D",
                join(s)
            ));
        }
    };
    ctx.set(0, Fact::tensor(Some(DType::Float32), shape));
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 6] = [
        ("ImageDecoder", image_decoder),
        ("StringSplit", string_split),
        ("StringNormalizer", string_normalizer),
        ("StringConcat", string_concat),
        ("RegexFullMatch", regex_full_match),
        ("TfIdfVectorizer", tfidf),
    ];
    table.iter().map(|(op, f)| ("", *op, *f)).collect()
}
