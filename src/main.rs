//! The `zut` binary: everything lives in the library; this maps the result
//! to the exit status.

fn main() {
    std::process::exit(zut::app::main());
}
