//! The shape of the code itself: rules the codebase keeps so the next
//! engineer can find their way (docs/development.md, "Repository layout").

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

#[test]
fn the_licence_notice_changelog_and_rust_version_are_shipped() {
    let root = Path::new(ROOT);
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_default();
    // Cargo.toml names the MIT licence; LICENSE holds it.
    assert!(read("Cargo.toml").contains("license = \"MIT\""));
    assert!(read("LICENSE").starts_with("MIT License"));
    // The model-zoo files are Apache-2.0: a notice says so beside them.
    assert!(read("examples/onnx/NOTICE").contains("Apache License, Version 2.0"));
    assert!(read("CHANGELOG.md").contains("## Unreleased"));
    // The minimum Rust version is declared, and README states the same one.
    let manifest = read("Cargo.toml");
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("Cargo.toml declares rust-version");
    assert!(
        read("README.md").contains(&format!("needs Rust {version} or")),
        "README states rust-version {version}"
    );
    assert!(read("README.md").contains("cargo install --path ."));
}

#[test]
fn no_compiled_python_is_committed() {
    // What git tracks, when the tests run from a checkout.
    let Ok(out) = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(ROOT)
        .output()
    else {
        return;
    };
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.lines().count() > 100, "git lists the checkout");
    let compiled: Vec<&str> = listed
        .lines()
        .filter(|f| f.ends_with(".pyc") || f.contains("__pycache__"))
        .collect();
    assert!(compiled.is_empty(), "{compiled:?}");
    assert!(
        std::fs::read_to_string(Path::new(ROOT).join(".gitignore"))
            .unwrap()
            .contains("__pycache__/")
    );
}

#[test]
fn readme_tells_the_two_resnet50s_apart_with_their_real_figures() {
    use crate::common::cli::C3;
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    assert!(readme.contains("is a different ResNet50"));
    // The zoo's v1.5 export strides on the 3x3 convolutions: 4,117,136,287
    // FLOPs; Chainer's MSRA network on the first 1x1: 3,884,871,583.
    for (model, flops, shown) in [
        (
            "examples/onnx/light_resnet50.onnx",
            4_117_136_287u64,
            "4.117 GFLOPs",
        ),
        (
            "examples/resnet50.trace.json",
            3_884_871_583,
            "3.885 GFLOPs",
        ),
    ] {
        let j = C3::new()
            .args(["estimate", model, "--format", "json", "--summary"])
            .run()
            .json();
        assert_eq!(j["total"]["flops"], flops, "{model}");
        assert!(readme.contains(shown), "README gives {shown} for {model}");
    }
}

/// Lines of code: neither blank nor comments (doc comments included: they
/// are `--help` text, counted with the code they describe only by
/// [`code_lines`]).
fn statements(text: &str) -> usize {
    text.lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .count()
}

#[test]
fn the_command_line_stays_thin() {
    // Issue 11: clap definitions and dispatch only, about 400 lines; what
    // the commands do lives in the library (commands/, output.rs, report/).
    // Issue 50 added a command (`calibrate`) and a flag (`--profile`): some
    // 40 lines of definitions. Issue 51 added six training flags (their
    // definitions and the struct they fill): some 25 more; issue 52 added
    // `docs --rules` and `diff --changed`, ten more.
    let root = Path::new(ROOT);
    let mut files = vec![root.join("src/cli.rs"), root.join("src/main.rs")];
    rust_files(&root.join("src/cli"), &mut files);
    let n: usize = files
        .iter()
        .map(|f| statements(&std::fs::read_to_string(f).unwrap()))
        .sum();
    assert!(n <= 530, "the CLI module holds {n} lines of code");
    assert!(n > 100, "the CLI module is found: {n} lines");
    assert_eq!(statements("// a\n\nfn a() {}\n  /// b\n"), 1);
}

/// GitHub's anchor for a Markdown heading: lower case, punctuation other
/// than `-` and `_` dropped, spaces made `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of a Markdown page outside its fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The targets of a line's Markdown links (`[text](target)`).
fn links(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &line[i + 2..];
            rest.find(')').map(|j| &rest[..j])
        })
        .filter(|t| !t.contains(char::is_whitespace))
        .collect()
}

#[test]
fn the_readme_is_short_and_every_link_of_the_guide_resolves() {
    let root = Path::new(ROOT);
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let n = readme.lines().count();
    assert!(
        n <= 400,
        "README.md holds {n} lines: the rest belongs in docs/"
    );
    let mut pages = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            // README links every page of the guide.
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                readme.contains(&format!("(docs/{name})")),
                "README links docs/{name}"
            );
            pages.push(p);
        }
    }
    assert!(pages.len() > 10, "{} pages", pages.len());
    assert_eq!(
        anchor("Sparsity: the `sparse` pack, `nnz` and `--prune`"),
        "sparsity-the-sparse-pack-nnz-and---prune"
    );
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for link in prose(&text).into_iter().flat_map(links) {
            if link.contains("://") {
                continue;
            }
            let (file, fragment) = link.split_once('#').unwrap_or((link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let found = target.exists()
                && (fragment.is_empty()
                    || target.extension().is_none_or(|x| x != "md")
                    || prose(&std::fs::read_to_string(&target).unwrap())
                        .iter()
                        .filter_map(|l| l.strip_prefix('#'))
                        .any(|h| anchor(h.trim_start_matches('#')) == fragment));
            if !found {
                broken.push(format!("{}: {link}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:?}");
}
