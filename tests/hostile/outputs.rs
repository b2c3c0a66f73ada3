//! Issue 53 item 4: whose file it is. A user's file that mentions c3
//! (a trace with a `c3_version` key, a model with a `c3.generator` entry
//! anywhere but first) is not c3's: `-o` onto it is refused, exit 1, one
//! line, and the file is kept.

use super::*;

#[test]
fn a_trace_that_mentions_c3_version_is_not_replaced() {
    let c = case("output_mentions_c3_version");
    let text = br#"{"c3_version": "0.1.0", "layers": [{"op": "Relu", "inputs": [{"shape": [1, 4]}], "outputs": [{"shape": [1, 4]}]}]}"#;
    let trace = c.file("trace.json", text);
    let model = c.file("m.onnx", &relu_model());
    c.fails(
        &["estimate", &model, "--format", "json", "-o", &trace],
        1,
        &["c3 did not generate", "--force"],
    );
    assert_eq!(std::fs::read(&trace).unwrap(), text);
}

#[test]
fn a_model_with_c3s_entry_out_of_place_is_not_replaced() {
    let c = case("output_c3_generator_not_first");
    let mut bytes = relu_model();
    // ModelProto.metadata_props { "c3.generator": "c3 0.1" }, last.
    bytes.extend_from_slice(b"\x72\x16\x0a\x0cc3.generator\x12\x06c3 0.1");
    let theirs = c.file("theirs.onnx", &bytes);
    let model = c.file("m.onnx", &relu_model());
    c.fails(
        &["annotate", &model, "-o", &theirs],
        1,
        &["c3 did not generate"],
    );
    assert_eq!(std::fs::read(&theirs).unwrap(), bytes);
}

// ------------------------------------------ issue 53 item 3: copies keep weights

/// A model whose initializer `w` (4 floats) is in `w.bin` beside it.
fn with_external_weights(c: &Case) -> (String, Vec<u8>) {
    let data = vec![0u8; 16];
    c.file("w.bin", &data);
    let t = external("w", FLOAT, &[4], &[("location", "w.bin")]);
    (c.file("m.onnx", &with_initializer(t)), data)
}

/// A copy in another folder would name `w.bin` from there: refused, one
/// line, exit 1; in the model's own folder it is written.
#[test]
fn a_copy_in_another_folder_is_refused_where_weights_are_external() {
    let c = case("output_external_copy_elsewhere");
    let (model, _) = with_external_weights(&c);
    std::fs::create_dir_all(c.path("other")).unwrap();
    let elsewhere = c.path("other/a.onnx");
    let elsewhere = elsewhere.to_str().unwrap();
    for cmd in ["annotate", "shapes"] {
        c.fails(
            &[cmd, &model, "-o", elsewhere],
            1,
            &["w.bin", "that folder"],
        );
        assert!(!c.path("other/a.onnx").exists(), "{cmd}");
    }
    let beside = c.path("a.onnx");
    let beside = beside.to_str().unwrap();
    for cmd in ["annotate", "shapes"] {
        assert_eq!(c.run(&[cmd, &model, "-o", beside], 0).code, 0, "{cmd}");
    }
}

/// `-o` onto the model's own external data file is refused, --force or not.
#[test]
fn a_copy_onto_the_models_external_data_is_refused_even_forced() {
    let c = case("output_onto_external_data");
    let (model, data) = with_external_weights(&c);
    let bin = c.path("w.bin");
    let bin = bin.to_str().unwrap();
    for cmd in ["annotate", "shapes"] {
        c.fails(
            &[cmd, &model, "-o", bin, "--force"],
            1,
            &["external data file w.bin"],
        );
        assert_eq!(std::fs::read(bin).unwrap(), data, "{cmd}");
    }
}

/// A repeated `location`: ONNX reads the last one, and so is it vetted.
#[test]
fn a_repeated_location_is_vetted_as_onnx_reads_it() {
    let c = case("output_external_location_twice");
    c.file("w.bin", &[0u8; 16]);
    let t = external(
        "w",
        FLOAT,
        &[4],
        &[("location", "w.bin"), ("location", "../w.bin")],
    );
    let f = c.file("m.onnx", &with_initializer(t));
    c.rejects(&f, &["'../w.bin' leaves the model's folder"]);
}
