//! The shape of the code itself: rules the codebase keeps so the next
//! engineer can find their way (README, "Repository layout").

use std::path::Path;

use crate::common::cli::ROOT;

/// Lines of a source file before its unit tests (`#[cfg(test)]` at the
/// start of a line, which c3 keeps at a file's bottom).
fn code_lines(text: &str) -> usize {
    text.lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .count()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_source_file_holds_more_than_1000_lines_of_code() {
    let mut files = Vec::new();
    rust_files(&Path::new(ROOT).join("src"), &mut files);
    assert!(files.len() > 50, "{} files under src/", files.len());
    let over: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = code_lines(&std::fs::read_to_string(f).unwrap());
            (n > 1000).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(over.is_empty(), "split these: {over:?}");
}

#[test]
fn code_lines_stop_at_the_unit_tests() {
    // Two lines of code, then the test module: 2.
    assert_eq!(
        code_lines("fn a() {}\nfn b() {}\n#[cfg(test)]\nmod tests {}\n"),
        2
    );
}
