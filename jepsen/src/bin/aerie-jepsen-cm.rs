//! `aerie-cm serve` under another name, for the fault-injection tests (same code, same flags).
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "aerie-jepsen-cm",
    about = "aerie-cm serve, for the jepsen tests"
)]
struct Cli {
    #[command(flatten)]
    args: aerie_cm::daemon::Args,
}

fn main() {
    let cli = Cli::parse();
    match aerie_cm::daemon::run(cli.args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("aerie-cm: {e:#}");
            std::process::exit(2);
        }
    }
}
