//! `aerie-node`: the execute-node and access-point agent (simulate, check-claims).
fn main() {
    std::process::exit(aerie_node::cli::cli_main());
}
