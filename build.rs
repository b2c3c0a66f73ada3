//! Indexes the built-in rule files (`rules/*.yaml`) when c3 is built:
//! where each rule's block lies, so that a run looks a rule up without
//! scanning 200 KB of YAML first. The scan is `src/rules/blocks.rs`, the
//! same code the tests check against a full parse.

use std::fmt::Write as _;
use std::path::Path;

#[path = "src/rules/blocks.rs"]
mod blocks;

fn main() {
    println!("cargo:rerun-if-changed=rules");
    println!("cargo:rerun-if-changed=src/rules/blocks.rs");
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&root).join("rules");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable rules/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    // An array expression of (path, blocks), included by src/rules/pack.rs.
    let mut out = String::from("[\n");
    for path in files {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = format!("rules/{}", path.file_name().unwrap().to_string_lossy());
        writeln!(out, "    ({name:?}, &[").unwrap();
        for b in blocks::scan_blocks(&text) {
            writeln!(
                out,
                "        Block {{ op: {:?}, domain: {:?}, own_domain: {}, range: {}..{}, line: {} }},",
                b.op, b.domain, b.own_domain, b.range.start, b.range.end, b.line
            )
            .unwrap();
        }
        out.push_str("    ]),\n");
    }
    out.push(']');
    let target =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtin_blocks.rs");
    std::fs::write(&target, out).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
}
