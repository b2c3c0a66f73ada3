//! Model-local functions built from the input (calls nested, doubled,
//! recursive; names short, long, empty), expanded, costed and reported;
//! no expanded name may grow faster than the nesting. An error is a fine
//! outcome; a panic is not.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = c3::fuzz::functions(data);
});
