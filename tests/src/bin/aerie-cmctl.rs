//! `cmctl` under another name, for the integration tests (same code, same flags).
fn main() {
    std::process::exit(cmctl::cli_main());
}
