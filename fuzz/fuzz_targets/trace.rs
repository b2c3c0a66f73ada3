//! Operator-trace JSON through the trace reader, costing and every report
//! format.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = c3::fuzz::trace(data);
});
