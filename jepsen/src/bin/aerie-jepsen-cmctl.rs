//! `cmctl` under another name, for the real pool of `pool-real` (same code, same flags):
//! jobs are submitted and watched with it as a user would.
fn main() {
    std::process::exit(cmctl::cli_main());
}
