//! The `c3` binary: parse arguments, run, turn errors into one line and an exit code.

// Inference and costing allocate many small objects per node; mimalloc
// makes that several times cheaper than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// mimalloc's run-time options (`mimalloc.h`), linked in with it.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

fn main() {
    // Memory freed between stages (a large model's decoded nodes, once
    // inferred) goes back to the system after 10 ms, as mimalloc v2 did,
    // instead of v3's full second: the process no longer grows by what it
    // freed. 111k-node graph: peak RSS 241 MB -> 183 MB at the same time
    // (0 ms saves 6 MB more but costs 0.3 s of page faults).
    // mimalloc's own variable, when set, still decides.
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a plain integer option before any thread starts.
        // 15 is `mi_option_purge_delay` in `mimalloc.h`'s `mi_option_e`
        // (the same position in its v2 and v3); the value is in ms.
        unsafe { mi_option_set(15, 10) };
    }
    c3::exit(c3::run_cli());
}
