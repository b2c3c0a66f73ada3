//! Splitting a rule file into its rules' blocks without parsing the YAML.
//!
//! The build script (`build.rs`) includes this file to index the built-in
//! rule files once, at build time, so a run starts with the index made
//! (scanning 200 KB of rules took a tenth of a small model's estimate); the
//! tests compare that index with this scan and with a full parse. It uses
//! nothing but `std` for that reason.

use std::ops::Range;

/// The key of a rule file's own domain (no ONNX operator has this name).
pub const FILE_DOMAIN_KEY: &str = "domain";

/// One top-level key of a rule file: a rule and where its text lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block<'a> {
    pub op: &'a str,
    /// The rule's domain as written (`""` when neither the rule nor the
    /// file names one): the file's domain unless the rule names its own.
    pub domain: &'a str,
    /// Whether the rule names its own domain.
    pub own_domain: bool,
    /// Bytes of the file, from the key's line to the next top-level key.
    pub range: Range<usize>,
    /// The 1-based line the key is on.
    pub line: usize,
}

/// Splits a rule file at its top-level keys (`Conv:` at column 0) and reads
/// each block's `domain:` line. Meant for the built-in files, which are ours:
/// a test checks that it agrees with a full parse of each. The library
/// itself reads the index `build.rs` made with it.
#[cfg_attr(not(test), allow(dead_code))]
pub fn scan_blocks(text: &str) -> Vec<Block<'_>> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut file_domain = "";
    // Whether the last top-level key opened a rule (not the file's domain).
    let mut open = false;
    // The indentation of the open block's own keys, once seen.
    let mut indent = None;
    let mut offset = 0;
    for (number, line) in text.split_inclusive('\n').enumerate() {
        let at = offset;
        offset += line.len();
        let body = line.trim_start_matches(' ');
        if body.trim().is_empty() || body.starts_with('#') {
            continue;
        }
        let depth = line.len() - body.len();
        if depth == 0 {
            if let Some((key, value)) = line.split_once(':')
                && !key.is_empty()
                && !line.starts_with(['\t', '-'])
            {
                if let Some(b) = blocks.last_mut() {
                    b.range.end = at;
                }
                if key == FILE_DOMAIN_KEY {
                    file_domain = domain_value(value);
                    // Rules above the file's domain take it too.
                    for b in &mut blocks {
                        if !b.own_domain {
                            b.domain = file_domain;
                        }
                    }
                    open = false;
                    continue;
                }
                blocks.push(Block {
                    op: key.trim().trim_matches(['"', '\'']),
                    domain: file_domain,
                    own_domain: false,
                    range: at..text.len(),
                    line: number + 1,
                });
                open = true;
                indent = None;
            }
            continue;
        }
        if !open {
            continue;
        }
        let Some(b) = blocks.last_mut() else { continue };
        let indent = *indent.get_or_insert(depth);
        if depth == indent
            && let Some(value) = body.strip_prefix("domain:")
        {
            b.domain = domain_value(value);
            b.own_domain = true;
        }
    }
    blocks
}

/// A `domain:` line's value as written, without comment or quotes.
#[cfg_attr(not(test), allow(dead_code))]
fn domain_value(value: &str) -> &str {
    let value = value.split(" #").next().unwrap_or("").trim();
    value.trim_matches(['"', '\''])
}
