//! Reads the built-in rule files (`rules/*.yaml`) when c3 is built, so a
//! run starts from what this reads:
//!
//! - where each rule's block lies, so that a run looks a rule up without
//!   scanning 200 KB of YAML first (the scan is `src/rules/blocks.rs`, the
//!   same code the tests check against a full parse);
//! - each rule's definition with its formulas and patterns parsed, in the
//!   form of `src/rules/packed.rs`: a run compiles a rule from it without
//!   reading YAML or running the formula grammar. The reading is the
//!   library's own (`yaml.rs`, `parse.rs`), included here; a text this
//!   cannot read or parse is left for the run, which reports it.

use std::fmt::Write as _;
use std::path::Path;

#[allow(dead_code)]
#[path = "src/rules/ast.rs"]
mod ast;
#[path = "src/rules/blocks.rs"]
mod blocks;
#[allow(dead_code)]
#[path = "src/rules/packed.rs"]
mod packed;
#[allow(dead_code)]
#[path = "src/rules/parse.rs"]
mod parse;
#[allow(dead_code)]
#[path = "src/rules/yaml.rs"]
mod yaml;

/// One built-in rule's block read and its texts parsed, as `packed.rs`
/// writes it; `None` when the block does not read as one rule named `op`.
fn pack_block(op: &str, block: &str) -> Option<Vec<u8>> {
    let def: yaml::RuleFileDef = serde_saphyr::from_str(block).ok()?;
    let [(name, mut def)] = <[_; 1]>::try_from(def.0).ok()?;
    if name != op {
        return None;
    }
    packed::parse_texts(&mut def);
    Some(packed::write_def(&def))
}

fn main() {
    println!("cargo:rerun-if-changed=rules");
    println!("cargo:rerun-if-changed=grammar/formula.pest");
    for file in ["ast", "blocks", "packed", "parse", "yaml"] {
        println!("cargo:rerun-if-changed=src/rules/{file}.rs");
    }
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&root).join("rules");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable rules/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    // An array expression of (path, blocks, each block's bytes in
    // builtin_rules.bin), included by src/rules/pack.rs.
    let mut out = String::from("[\n");
    let mut bin = Vec::new();
    for path in files {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = format!("rules/{}", path.file_name().unwrap().to_string_lossy());
        writeln!(out, "    ({name:?}, &[").unwrap();
        let blocks = blocks::scan_blocks(&text);
        for b in &blocks {
            writeln!(
                out,
                "        Block {{ op: {:?}, domain: {:?}, own_domain: {}, range: {}..{}, line: {} }},",
                b.op, b.domain, b.own_domain, b.range.start, b.range.end, b.line
            )
            .unwrap();
        }
        out.push_str("    ], &[\n");
        for b in &blocks {
            match pack_block(b.op, &text[b.range.clone()]) {
                Some(bytes) => {
                    writeln!(
                        out,
                        "        Some(({}, {})),",
                        bin.len(),
                        bin.len() + bytes.len()
                    )
                    .unwrap();
                    bin.extend(bytes);
                }
                None => out.push_str("        None,\n"),
            }
        }
        out.push_str("    ]),\n");
    }
    out.push(']');
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    for (file, bytes) in [
        ("builtin_blocks.rs", out.into_bytes()),
        ("builtin_rules.bin", bin),
    ] {
        let target = Path::new(&dir).join(file);
        std::fs::write(&target, bytes).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
    }
}
