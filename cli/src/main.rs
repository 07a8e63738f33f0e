//! `cmctl`: the admin's command line for an Aerie pool.
use clap::{Parser, Subcommand};

mod eval;

#[derive(Parser)]
#[command(name = "cmctl", version, about = "Administer an Aerie central manager")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate ClassAd expressions, as classad_eval does.
    Eval(eval::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Eval(args) => eval::run(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("cmctl: {err:#}");
            std::process::exit(2);
        }
    }
}
