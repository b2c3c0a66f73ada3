//! Symbolic dimension arithmetic, checked against plain integers.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = c3::fuzz::dims(data);
});
