//! Rule-file text through the formula grammar, YAML loading, rule
//! compilation and evaluation of every rule it defines.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = c3::fuzz::rules(data);
});
