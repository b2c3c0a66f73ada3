//! A rule pack as a folder of files (rules, devices.yaml, fusions.yaml)
//! loaded together, then costed, fused and rendered.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = c3::fuzz::pack(data);
});
