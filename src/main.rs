//! The `c3` binary: parse arguments, run, turn errors into one line and an exit code.
fn main() {
    std::process::exit(c3::cli::main());
}
