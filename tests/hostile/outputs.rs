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
