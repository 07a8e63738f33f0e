//! `aerie-cm`: the central-manager daemon and its tools.
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "aerie-cm", version, about = "Aerie central manager")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one central-manager node (collector, Raft member, negotiator when leader).
    Serve(aerie_cm::daemon::Args),
    /// Print configuration values, as condor_config_val does.
    ConfigVal(aerie_cm::config_val::Args),
    /// Make and inspect the pool's credentials (CA, daemon and admin certificates).
    Security(aerie_cm::security_cmd::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => aerie_cm::daemon::run(args),
        Command::ConfigVal(args) => aerie_cm::config_val::run(args),
        Command::Security(args) => aerie_cm::security_cmd::run(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("aerie-cm: {err:#}");
            std::process::exit(2);
        }
    }
}
