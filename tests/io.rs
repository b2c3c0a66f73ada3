//! Files and streams (issue 13 items 2, 3, 5, 6; issue 12 item 8): no
//! command replaces a file c3 did not write or the model it reads, output
//! files are replaced whole, data go to stdout and status to stderr, `-`
//! reads standard input, and a flag c3 cannot honour is an error before the
//! model is read.

use std::path::{Path, PathBuf};

use crate::common::cli::{C3, Run};

const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/resnet50.trace.json");
const RESNET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/onnx/light_resnet50.onnx"
);
const GPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/onnx/gpt_decoder_dynamo.onnx"
);

/// One Relu over 1x64 float32 values.
const RELU_TRACE: &str = r#"{"layers": [{"op": "Relu", "inputs": [{"shape": [1, 64]}],
    "outputs": [{"shape": [1, 64]}]}]}"#;

fn c3(args: &[&str]) -> Run {
    C3::new().args(args).run()
}

fn c3_in(dir: &Path, args: &[&str]) -> Run {
    C3::new().args(args).dir(dir).run()
}

fn scratch(name: &str) -> PathBuf {
    crate::common::cli::scratch("io", name)
}

/// The files of a folder, by name, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn total_flops(json: &serde_json::Value) -> u64 {
    json["total"]["flops"].as_u64().expect("total.flops")
}

// ------------------------------------------------- item 2: no file destroyed

#[test]
fn docs_keeps_a_details_md_it_did_not_write_unless_forced() {
    let dir = scratch("docs_own");
    std::fs::write(dir.join("DETAILS.md"), "my own notes\n").unwrap();
    let err = c3_in(&dir, &["docs"]).one_line_error(1).to_string();
    assert!(
        err.contains("c3 did not generate") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("DETAILS.md")).unwrap(),
        "my own notes\n"
    );
    // -o - prints it and leaves the file alone.
    let r = c3_in(&dir, &["docs", "-o", "-"]);
    r.ok();
    assert!(
        r.stdout.starts_with("# How c3 counts each operator"),
        "{}",
        &r.stdout[..80]
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("DETAILS.md")).unwrap(),
        "my own notes\n"
    );
    // --force replaces it; what c3 wrote carries its mark and is replaced
    // again without --force, and --check agrees with it.
    let r = c3_in(&dir, &["docs", "--force"]);
    r.ok();
    assert_eq!(r.stdout, "", "status goes to stderr");
    assert_eq!(r.stderr, "wrote DETAILS.md\n");
    c3_in(&dir, &["docs"]).ok();
    c3_in(&dir, &["docs", "--check"]).ok();
    assert_eq!(listing(&dir), ["DETAILS.md"], "no temporary file left");
}

#[test]
fn o_refuses_an_existing_file_c3_did_not_write_and_force_replaces_it() {
    let dir = scratch("o_refuses");
    std::fs::write(dir.join("r.md"), "notes").unwrap();
    let err = c3_in(&dir, &["estimate", RESNET, "-o", "r.md"])
        .one_line_error(1)
        .to_string();
    assert!(
        err.contains("-o r.md: an existing file that c3 did not generate"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(dir.join("r.md")).unwrap(), "notes");
    c3_in(&dir, &["estimate", RESNET, "-o", "r.md", "--force"]).ok();
    assert!(
        std::fs::read_to_string(dir.join("r.md"))
            .unwrap()
            .contains("| n0 | Conv |"),
        "the report replaced the notes"
    );

    // An HTML report carries c3's generator mark: re-running replaces it.
    c3_in(
        &dir,
        &["estimate", RESNET, "--format", "html", "-o", "r.html"],
    )
    .ok();
    c3_in(
        &dir,
        &["estimate", RESNET, "--format", "html", "-o", "r.html"],
    )
    .ok();

    // A model c3 wrote carries its mark and is replaced again; a model it
    // did not write is not, without --force.
    c3_in(&dir, &["shapes", RESNET, "-o", "s.onnx"]).ok();
    c3_in(&dir, &["shapes", RESNET, "-o", "s.onnx"]).ok();
    c3_in(&dir, &["annotate", RESNET, "-o", "s.onnx"]).ok();
    std::fs::copy(RESNET, dir.join("s.onnx")).unwrap();
    let before = std::fs::read(dir.join("s.onnx")).unwrap();
    let err = c3_in(&dir, &["shapes", RESNET, "-o", "s.onnx"])
        .one_line_error(1)
        .to_string();
    assert!(
        err.contains("-o s.onnx: an existing file that c3 did not generate; add --force"),
        "{err}"
    );
    c3_in(&dir, &["annotate", RESNET, "-o", "s.onnx"]).one_line_error(1);
    assert_eq!(std::fs::read(dir.join("s.onnx")).unwrap(), before);
    c3_in(&dir, &["annotate", RESNET, "-o", "s.onnx", "--force"]).ok();
    assert_ne!(std::fs::read(dir.join("s.onnx")).unwrap(), before);
    assert_eq!(
        listing(&dir),
        ["r.html", "r.md", "s.onnx"],
        "no temporary file left"
    );
}

#[test]
fn o_dash_is_standard_output_for_every_command() {
    let r = c3(&[
        "estimate",
        RESNET,
        "--summary",
        "--format",
        "csv",
        "-o",
        "-",
    ]);
    r.ok();
    assert!(r.stdout.starts_with("op,"), "{}", r.stdout);
    let r = c3(&["docs", "-o", "-"]);
    r.ok();
    assert!(r.stdout.contains("Generated by `c3 docs`"));
    // A model on stdout, no status line among its bytes: the copy starts with
    // the original model's bytes.
    for cmd in ["shapes", "annotate"] {
        let r = c3(&[cmd, RESNET, "-o", "-"]);
        r.ok();
        assert_eq!(r.stderr, "", "{cmd}");
        let original = std::fs::read(RESNET).unwrap();
        assert!(
            r.stdout.len() > original.len() / 2,
            "{cmd}: the model is on stdout"
        );
    }
    let err = c3(&["shapes", RESNET, "-o", "-", "--format", "table"])
        .one_line_error(1)
        .to_string();
    assert!(err.contains("--format"), "{err}");
}

#[test]
fn o_naming_the_input_model_is_refused_through_any_path() {
    let dir = scratch("o_input");
    std::fs::create_dir(dir.join("x")).unwrap();
    std::fs::copy(RESNET, dir.join("model.onnx")).unwrap();
    let before = std::fs::read(dir.join("model.onnx")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.join("model.onnx"), dir.join("link.onnx")).unwrap();
    let tries: &[&[&str]] = &[
        &[
            "estimate",
            "model.onnx",
            "-o",
            "./x/../model.onnx",
            "--force",
        ],
        &["shapes", "model.onnx", "-o", "model.onnx", "--force"],
        &["annotate", "./model.onnx", "-o", "model.onnx", "--force"],
        #[cfg(unix)]
        &["annotate", "link.onnx", "-o", "model.onnx", "--force"],
        #[cfg(unix)]
        &["shapes", "model.onnx", "-o", "link.onnx", "--force"],
    ];
    for args in tries {
        let err = c3_in(&dir, args).one_line_error(1).to_string();
        assert!(err.contains("this is the input"), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(dir.join("model.onnx")).unwrap(), before);
}

// ------------------------------------------- item 3: data out, status apart

#[test]
fn with_o_nothing_but_status_on_stderr() {
    let dir = scratch("o_quiet");
    let r = c3_in(&dir, &["estimate", RESNET, "-o", "r.md"]);
    r.ok();
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("", ""));
    let r = c3_in(&dir, &["shapes", RESNET, "-o", "s.onnx"]);
    r.ok();
    assert_eq!(r.stdout, "", "no table unless asked");
    assert!(r.stderr.starts_with("wrote s.onnx with "), "{}", r.stderr);
    // Asked for, the table comes on stdout.
    let r = c3_in(
        &dir,
        &["shapes", RESNET, "-o", "t.onnx", "--format", "json"],
    );
    r.ok();
    assert!(r.stdout.contains("\"tensors\""), "{}", r.stdout);
    let r = c3_in(&dir, &["annotate", RESNET, "-o", "a.onnx"]);
    r.ok();
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.starts_with("wrote a.onnx: costs on "),
        "{}",
        r.stderr
    );
}

#[test]
#[cfg(target_os = "linux")]
fn a_full_standard_output_is_an_error_and_a_closed_pipe_is_not() {
    let r = C3::new()
        .args(["estimate", RESNET])
        .stdout_to("/dev/full")
        .run();
    let err = r.one_line_error(2);
    assert!(
        err.contains("standard output") && err.contains("No space left"),
        "{err}"
    );
    // `| head -c 10`: the JSON report is far longer than a pipe's buffer.
    let r = C3::new()
        .args(["estimate", RESNET, "--format", "json"])
        .stdout_closed_after(10)
        .run();
    r.ok();
    assert_eq!(r.stderr, "", "a closed pipe ends quietly");
}

// ---------------------------------------------------- item 5: the Unix way

#[test]
fn dash_reads_a_trace_or_a_model_from_standard_input() {
    let r = C3::new()
        .args(["estimate", "-", "--format", "json"])
        .stdin(RELU_TRACE)
        .run()
        .json();
    assert_eq!(total_flops(&r), 64, "one max per element: 1*64");
    assert_eq!(r["total"]["mread"], 64 * 4, "the float32 input, read once");
    // The same totals as from the files.
    for path in [TRACE, RESNET] {
        let from_file = total_flops(&c3(&["estimate", path, "--format", "json"]).json());
        let piped = C3::new()
            .args(["estimate", "-", "--format", "json"])
            .stdin(std::fs::read(path).unwrap())
            .run()
            .json();
        assert_eq!(total_flops(&piped), from_file, "{path}");
    }
    // Piped, the model-zoo ResNet50 is still its 4.117 GFLOPs (README).
    let piped = C3::new()
        .args(["estimate", "-", "--format", "json"])
        .stdin(std::fs::read(RESNET).unwrap())
        .run()
        .json();
    assert_eq!(total_flops(&piped) / 1_000_000, 4117);
    let err = C3::new()
        .args(["estimate", "-"])
        .stdin("")
        .run()
        .one_line_error(2)
        .to_string();
    assert!(err.contains("standard input is empty"), "{err}");
}

#[test]
fn a_byte_order_mark_before_a_trace_is_accepted() {
    let dir = scratch("bom");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(RELU_TRACE.as_bytes());
    std::fs::write(dir.join("t.json"), &bytes).unwrap();
    let r = c3_in(&dir, &["estimate", "t.json", "--format", "json"]).json();
    assert_eq!(total_flops(&r), 64, "one max per element: 1*64");
    let r = C3::new()
        .args(["estimate", "-", "--format", "json"])
        .stdin(bytes)
        .run()
        .json();
    assert_eq!(total_flops(&r), 64);
}

#[test]
fn a_file_that_is_neither_onnx_nor_a_trace_says_so() {
    let dir = scratch("neither");
    std::fs::write(dir.join("notes.txt"), "hello world\n").unwrap();
    let err = c3_in(&dir, &["estimate", "notes.txt"])
        .one_line_error(2)
        .to_string();
    assert!(
        err.contains("notes.txt: neither an ONNX model nor an operator trace"),
        "{err}"
    );
    let err = C3::new()
        .args(["estimate", "-"])
        .stdin("hello world\n")
        .run()
        .one_line_error(2)
        .to_string();
    assert!(
        err.contains("<stdin>: neither an ONNX model nor an operator trace"),
        "{err}"
    );
}

// ---------------------------------------- item 6: nothing ignored silently

#[test]
fn a_dim_the_model_does_not_have_is_an_error_listing_its_symbols() {
    let err = c3(&["estimate", GPT, "--dim", "batch=1", "--dim", "sqe=8"])
        .one_line_error(1)
        .to_string();
    assert!(
        err.contains(
            "--dim sqe: the model has no dimension of that name; its symbols are batch, seq"
        ),
        "{err}"
    );
    let err = c3(&["estimate", RESNET, "--dim", "batch=1"])
        .one_line_error(1)
        .to_string();
    assert!(err.contains("it has no symbolic dimensions"), "{err}");
    // The names it has still bind.
    c3(&["estimate", GPT, "--dim", "batch=1", "--dim", "seq=8"]).ok();
}

#[test]
fn a_report_flag_the_format_cannot_honour_is_an_error_naming_it() {
    let err = c3(&[
        "estimate",
        RESNET,
        "--format",
        "json",
        "--columns",
        "all",
        "--unit",
        "G",
    ])
    .one_line_error(1)
    .to_string();
    assert!(
        err.contains("--columns, --unit cannot be honoured by --format json"),
        "{err}"
    );
    let err = c3(&["estimate", RESNET, "--format", "md", "--metric", "flops"])
        .one_line_error(1)
        .to_string();
    assert!(
        err.contains("--metric cannot be honoured by --format md"),
        "{err}"
    );
}

#[test]
fn flags_are_checked_before_the_model_is_read() {
    // The model does not exist: each error is about the flag, not the file.
    let missing = "no-such-model.onnx";
    let cases: &[(&[&str], &str)] = &[
        (&["--device", "gtx9999"], "--device gtx9999: unknown device"),
        (
            &["--device", "h100", "--measured", "2.4parsecs"],
            "--measured",
        ),
        (&["--weights", "fp7"], "--weights"),
        (
            &["-o", "no/such/folder/r.md"],
            "the folder no/such/folder does not exist",
        ),
        (
            &["--rules", "no/such/pack"],
            "--rules no/such/pack: no such folder",
        ),
    ];
    for (flags, want) in cases {
        let mut args = vec!["estimate", missing];
        args.extend_from_slice(flags);
        let err = c3(&args).one_line_error(1).to_string();
        assert!(err.contains(want), "{flags:?}: {err}");
    }
}

#[test]
fn clap_errors_are_one_line_and_help_is_not() {
    let err = c3(&["estimate", RESNET, "--format", "htm"])
        .one_line_error(1)
        .to_string();
    assert!(
        err.contains("invalid value 'htm' for '--format <FORMAT>'")
            && err.contains("[possible values: table, md, csv, json, html, model-explorer]"),
        "{err}"
    );
    c3(&["estimate"]).one_line_error(1);
    c3(&[]).one_line_error(1);
    let r = c3(&["estimate", "--help"]);
    r.ok();
    assert!(r.stdout.lines().count() > 10 && r.stdout.contains("Usage: c3 estimate"));
    let r = c3(&["--version"]);
    r.ok();
    assert_eq!(r.stdout, format!("c3 {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
#[cfg(unix)]
fn o_to_a_device_writes_in_place_and_o_to_a_folder_is_refused() {
    // `-o /dev/null` (the benchmarks' idiom) writes to the device; it is
    // not replaced by a file.
    use std::os::unix::fs::FileTypeExt;
    for cmd in ["estimate", "shapes", "annotate"] {
        c3(&[cmd, RESNET, "-o", "/dev/null"]).ok();
        let meta = std::fs::metadata("/dev/null").unwrap();
        assert!(meta.file_type().is_char_device(), "{cmd}");
    }
    let dir = scratch("o_folder");
    let err = c3_in(&dir, &["estimate", RESNET, "-o", "."])
        .one_line_error(1)
        .to_string();
    assert!(err.contains("-o .: a folder, not a file"), "{err}");
}

#[test]
fn shapes_refuses_a_dim_the_model_does_not_have() {
    let err = c3(&["shapes", GPT, "--dim", "bach=1"])
        .one_line_error(1)
        .to_string();
    assert!(
        err.contains(
            "--dim bach: the model has no dimension of that name; its symbols are batch, seq"
        ),
        "{err}"
    );
    c3(&["shapes", GPT, "--dim", "batch=1"]).ok();
}

// ------------------------------------- issue 52 item 5, issue 53 item 4

/// Every format, from `estimate`, a batch and `diff`, and every model c3
/// writes, is c3's own the second time: the same command run twice
/// succeeds without --force, and so does a copy of a copy.
#[test]
fn every_format_written_twice_is_replaced_without_force() {
    let dir = scratch("twice");
    let runs: &[&[&str]] = &[
        &["estimate", RESNET, "-o", "r"],
        &["estimate", RESNET, "--summary", "-o", "r"],
        &["estimate", RESNET, "--format", "md", "-o", "r"],
        &["estimate", RESNET, "--format", "csv", "-o", "r"],
        &[
            "estimate",
            RESNET,
            "--format",
            "csv",
            "--columns",
            "flops,params",
            "-o",
            "r",
        ],
        &["estimate", RESNET, "--format", "json", "-o", "r"],
        &["estimate", RESNET, "--format", "html", "-o", "r"],
        &["estimate", RESNET, "--format", "model-explorer", "-o", "r"],
        &["estimate", TRACE, "--format", "csv", "-o", "r"],
        &["estimate", RESNET, TRACE, "-o", "r"],
        &["estimate", RESNET, TRACE, "--format", "json", "-o", "r"],
        &["diff", RESNET, TRACE, "-o", "r"],
        &["diff", RESNET, TRACE, "--format", "md", "-o", "r"],
        &[
            "diff",
            RESNET,
            TRACE,
            "--format",
            "csv",
            "--summary",
            "-o",
            "r",
        ],
        &["diff", RESNET, TRACE, "--format", "json", "-o", "r"],
        &["annotate", RESNET, "-o", "r"],
        &["shapes", RESNET, "-o", "r"],
    ];
    for args in runs {
        c3_in(&dir, args).ok();
        c3_in(&dir, args).ok();
        std::fs::remove_file(dir.join("r")).unwrap();
    }
    // A copy of a copy carries one mark, first.
    c3_in(&dir, &["annotate", RESNET, "-o", "a.onnx"]).ok();
    c3_in(&dir, &["shapes", "a.onnx", "-o", "s.onnx"]).ok();
    c3_in(&dir, &["annotate", "s.onnx", "-o", "a.onnx"]).ok();
    for f in ["a.onnx", "s.onnx"] {
        let bytes = std::fs::read(dir.join(f)).unwrap();
        let mark = b"c3.generator";
        let count = bytes.windows(mark.len()).filter(|w| w == mark).count();
        assert_eq!(count, 1, "{f}");
        assert_eq!(&bytes[4..16], mark, "{f}: the first field");
    }
    assert_eq!(
        listing(&dir),
        ["a.onnx", "s.onnx"],
        "no temporary file left"
    );
}

/// A user's file that mentions c3 where c3 writes nothing of the kind (a
/// trace with a `c3_version` key, a note quoting a report, a spreadsheet)
/// is kept: one line, exit 1, the file as it was.
#[test]
fn a_file_that_merely_mentions_c3_is_kept_without_force() {
    let dir = scratch("mentions");
    let files: &[(&str, &str)] = &[
        ("t.json", r#"{"c3_version": "0.1.0", "layers": []}"#),
        (
            "m.json",
            "{\n  \"meta\": {\n    \"model\": \"x\",\n    \"c3_version\": \"1\"\n  }\n}\n",
        ),
        (
            "n.md",
            "# notes\n\nc3_version and <meta name=\"generator\" content=\"c3\">\n",
        ),
        ("s.csv", "Name,Op,FLOPs\nconv,Conv,1\n"),
        (
            "x.html",
            "<html><meta name=\"generator\" content=\"c3\"></html>",
        ),
        ("l.txt", "Layers\nof my cake\n"),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
        let err = c3_in(&dir, &["estimate", RESNET, "--format", "json", "-o", name])
            .one_line_error(1)
            .to_string();
        assert!(err.contains("c3 did not generate"), "{name}: {err}");
        assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), *text);
    }
    // A model whose metadata says c3 somewhere other than first is not c3's.
    let mut model = std::fs::read(RESNET).unwrap();
    model.extend_from_slice(b"\x72\x16\x0a\x0cc3.generator\x12\x06c3 0.1");
    std::fs::write(dir.join("u.onnx"), &model).unwrap();
    for cmd in ["annotate", "shapes"] {
        c3_in(&dir, &[cmd, RESNET, "-o", "u.onnx"]).one_line_error(1);
        assert!(std::fs::read(dir.join("u.onnx")).unwrap() == model, "{cmd}");
    }
}

/// A name of 243 bytes is legal (255 is the limit); the temporary file
/// beside it is named within the limit too.
#[test]
fn a_243_byte_file_name_is_written() {
    let dir = scratch("long_name");
    let name = format!("{}.csv", "r".repeat(239));
    assert_eq!(name.len(), 243);
    for _ in 0..2 {
        c3_in(&dir, &["estimate", RESNET, "--format", "csv", "-o", &name]).ok();
    }
    let onnx = format!("{}.onnx", "m".repeat(238));
    c3_in(&dir, &["annotate", RESNET, "-o", &onnx]).ok();
    let mut want = vec![name, onnx];
    want.sort();
    assert_eq!(listing(&dir), want);
}
