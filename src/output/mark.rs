//! How c3 knows a file it wrote: by what it writes at the very start of
//! each format, checked there and nowhere else, so that a user's file that
//! merely mentions c3 (a `"c3_version"` key in a trace, a note that quotes
//! a report) is never taken for c3's.
//!
//! - JSON: c3's own layout of its first key, `{\n  "meta": {\n
//!   "c3_version": "` (a batch: `{\n"models": [\n{\n  "meta": ...`; a
//!   diff: `{\n  "a": {\n    "c3_version": "`).
//! - HTML: the head c3 writes up to `<meta name="generator" content="c3">`.
//! - Model Explorer: `{\n  "GRAPH": {\n    "gradient": [\n      {\n        "bgColor": "`.
//! - Markdown and table: a section title c3 writes on the first line and
//!   the table under it (`| ` two lines on, or `┌` on the next line), or a
//!   diff's `A: ... Options: ` and `B: ` lines (`- A: `, `- B: ` in
//!   Markdown).
//! - CSV: a header of c3's column keys alone, one of them a cost column.
//! - ONNX (`annotate`, `shapes -o`): a first `metadata_props` entry
//!   `c3.generator` = `c3 VERSION`, written before every other field.

/// ModelProto.metadata_props (14), length-delimited.
const METADATA_TAG: u8 = (14 << 3) | 2;
/// The ONNX mark's key.
pub const ONNX_KEY: &str = "c3.generator";

/// The first field c3 writes into a model: the `c3.generator` entry.
pub fn onnx_mark() -> Vec<u8> {
    let value = format!("c3 {}", env!("CARGO_PKG_VERSION"));
    let mut entry = Vec::new();
    for (field, s) in [(1u8, ONNX_KEY), (2u8, value.as_str())] {
        entry.push((field << 3) | 2);
        entry.push(s.len() as u8);
        entry.extend_from_slice(s.as_bytes());
    }
    let mut out = vec![METADATA_TAG, entry.len() as u8];
    out.extend(entry);
    out
}

/// The length of the mark a model's bytes start with, 0 where they do not.
pub fn onnx_mark_len(bytes: &[u8]) -> usize {
    // Every length is below 128 (one varint byte): c3 writes it so.
    let (Some(&tag), Some(&len)) = (bytes.first(), bytes.get(1)) else {
        return 0;
    };
    let len = usize::from(len);
    if tag != METADATA_TAG || len >= 128 {
        return 0;
    }
    let Some(entry) = bytes.get(2..2 + len) else {
        return 0;
    };
    let key = [
        &[(1 << 3) | 2, ONNX_KEY.len() as u8][..],
        ONNX_KEY.as_bytes(),
    ]
    .concat();
    let Some(rest) = entry.strip_prefix(&key[..]) else {
        return 0;
    };
    match rest {
        [0x12, n, value @ ..] if usize::from(*n) == value.len() && value.starts_with(b"c3 ") => {
            2 + len
        }
        _ => 0,
    }
}

/// Whether `head`, a model's first bytes, starts with c3's mark.
pub fn is_onnx(head: &[u8]) -> bool {
    onnx_mark_len(head) > 0
}

/// The first lines' titles of c3's tables.
fn is_title(line: &str) -> bool {
    matches!(
        line,
        "Layers" | "Summary by operator type" | "Unsupported operators (not counted)"
    ) || line
        .strip_prefix("Totals of ")
        .and_then(|r| r.strip_suffix(" model(s)"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The cost columns a CSV header of c3's names at least one of.
const COSTS: [&str; 5] = ["flops", "mread", "mwrite", "mrw", "params"];

/// Whether a CSV's first line is a header c3 writes: lower-case keys
/// (`flops`, `flops_a`, `flops%`), one of them a cost.
fn is_csv_header(line: &str) -> bool {
    let keys: Vec<&str> = line.split(',').collect();
    let key = |k: &&str| {
        let k = k.strip_suffix('%').unwrap_or(k);
        k.starts_with(|c: char| c.is_ascii_lowercase())
            && k.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    keys.len() >= 2
        && keys.iter().all(key)
        && keys.iter().any(|k| {
            COSTS
                .iter()
                .any(|c| k.trim_end_matches('%').split('_').next() == Some(*c))
        })
}

/// Whether `head`, a file's first bytes, starts as a report c3 writes.
pub fn is_report(head: &[u8]) -> bool {
    const STARTS: [&[u8]; 4] = [
        b"{\n  \"meta\": {\n    \"c3_version\": \"",
        b"{\n\"models\": [\n{\n  \"meta\": {\n    \"c3_version\": \"",
        b"{\n  \"a\": {\n    \"c3_version\": \"",
        b"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"generator\" content=\"c3\">\n",
    ];
    if STARTS.iter().any(|s| head.starts_with(s)) || is_model_explorer(head) {
        return true;
    }
    // Text: the first three lines, whole (a cut line is no mark).
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
    };
    let mut lines = text.split('\n');
    let (Some(one), Some(two)) = (lines.next(), lines.next()) else {
        return false;
    };
    let three = lines.next().unwrap_or("");
    // A diff: `A: ` and `B: ` (a table), or `- A: ` and `- B: ` (Markdown).
    let side = |line: &str, s: &str| line.strip_prefix("- ").unwrap_or(line).starts_with(s);
    let diff = side(one, "A: ") && one.contains(". Options: ") && side(two, "B: ");
    let table = is_title(one) && two.starts_with('┌');
    let md =
        one.strip_prefix("### ").is_some_and(is_title) && two.is_empty() && three.starts_with("| ");
    diff || table || md || is_csv_header(one)
}

/// Model Explorer's node data as c3 lays it out: a graph id (a JSON
/// string) whose object starts with the gradient.
fn is_model_explorer(head: &[u8]) -> bool {
    let Some(rest) = head.strip_prefix(b"{\n  \"") else {
        return false;
    };
    // The graph id's end: the first quote not escaped.
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'\\' => i += 2,
            b'"' => break,
            b'\n' => return false,
            _ => i += 1,
        }
    }
    rest.get(i..).is_some_and(|r| {
        r.starts_with(b"\": {\n    \"gradient\": [\n      {\n        \"bgColor\": \"")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_onnx_mark_is_read_back_and_nothing_else_is() {
        let m = onnx_mark();
        assert_eq!(onnx_mark_len(&m), m.len());
        let mut model = m.clone();
        model.extend_from_slice(&[0x08, 0x07]);
        assert!(is_onnx(&model));
        // An ordinary model starts with ir_version; a mark cut short is none.
        assert!(!is_onnx(&[0x08, 0x07, 0x72, 0x00]));
        assert!(!is_onnx(&m[..m.len() - 1]));
    }

    #[test]
    fn a_file_that_mentions_c3_is_not_c3s() {
        for text in [
            "{\"layers\": [], \"c3_version\": \"0.1.0\"}",
            "{\n  \"meta\": {\n    \"model\": \"x\", \"c3_version\": \"1\"",
            "my notes on c3_version and <meta name=\"generator\" content=\"c3\">",
            "### Notes\n\n| a | b |\n",
            "Layers\nof my cake\n",
            "a,b,c\n1,2,3\n",
            "Name,Op,FLOPs\n",
            "- A: my first point\n- B: my second\n",
            "{\n  \"g\": {\n    \"results\": {}",
        ] {
            assert!(!is_report(text.as_bytes()), "{text}");
        }
        for text in [
            "{\n  \"meta\": {\n    \"c3_version\": \"0.1.0\",",
            "name,op,flops,mread,mwrite,mrw,params\nn0,Conv,1,2,3,4,5\n",
            "flops,params\n",
            "op,layers_a,layers_b,layers_delta,flops_a,flops%\n",
            "### Layers\n\n| Layer | Op |\n",
            "Totals of 2 model(s)\n┌──\n",
            "{\n  \"g\\\"x\": {\n    \"gradient\": [\n      {\n        \"bgColor\": \"#ffffcc\",",
        ] {
            assert!(is_report(text.as_bytes()), "{text}");
        }
    }
}
