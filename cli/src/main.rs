//! `cmctl`: the admin's command line for an Aerie pool (see the library for the commands).
fn main() {
    // Like every Unix filter, stop quietly when the reader goes away (`cmctl status | head`):
    // Rust ignores SIGPIPE, so printing to a closed pipe would panic instead.
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(cmctl::cli_main());
}
