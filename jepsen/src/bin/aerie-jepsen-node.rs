//! `aerie-node` under another name, for the pool scenarios (same code, same flags): the
//! simulated execute nodes and access point run as `aerie-jepsen-node simulate`.
fn main() {
    std::process::exit(aerie_node::cli::cli_main());
}
