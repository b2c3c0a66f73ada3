//! The `c3` binary: parse arguments, run, turn errors into one line and an exit code.

// Inference and costing allocate many small objects per node; mimalloc
// makes that several times cheaper than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
fn main() {
    std::process::exit(c3::run_cli());
}
