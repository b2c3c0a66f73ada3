//! The `c3` binary: parse arguments, run, turn errors into one line and an exit code.

mod allocator;

fn main() {
    #[cfg(not(target_os = "linux"))]
    allocator::set_allocator_options();
    c3::exit(c3::run_cli());
}
