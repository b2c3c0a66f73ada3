//! ONNX bytes through the loader's checks, shape inference, costing and
//! every report format. An error is a fine outcome; a panic is not.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = c3::fuzz::onnx(data);
});
