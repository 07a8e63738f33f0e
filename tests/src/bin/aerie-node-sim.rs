//! `aerie-node` under another name, for the integration tests (same code, same flags).
fn main() {
    std::process::exit(aerie_node::cli::cli_main());
}
