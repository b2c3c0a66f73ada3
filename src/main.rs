//! The `c3` binary: parse arguments, run, turn errors into one line and an exit code.

// Inference and costing allocate many small objects per node; mimalloc
// makes that several times cheaper than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// mimalloc's run-time options (`mimalloc.h`), linked in with it.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in `mimalloc.h`'s `mi_option_e` (the same
/// position in its v2 and v3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

fn main() {
    // Memory freed between stages (a large model's decoded nodes, once
    // inferred) goes back to the system at once instead of 10 ms later:
    // the next stage reuses it rather than growing the process by as
    // much (peak RSS of a 111k-node model 276 MB -> 212 MB, same time).
    // SAFETY: sets a plain integer option before any thread starts.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    std::process::exit(c3::run_cli());
}
