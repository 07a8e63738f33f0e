//! `cmctl`: the admin's command line for an Aerie pool.
use clap::{Parser, Subcommand};

mod client;
mod cluster;
mod eval;
mod negotiator;
mod quota;
mod status;
mod userprio;
mod whatif;

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
    /// Show or change user priorities, as condor_userprio does (replicated through Raft).
    Userprio(userprio::Args),
    /// Raft membership of the central managers: status, add, remove, snapshot.
    Cluster(cluster::Args),
    /// Runtime group quotas and surplus flags.
    Quota(quota::QuotaArgs),
    /// Runtime concurrency limits.
    Limit(quota::LimitArgs),
    /// The leader-run negotiation: pause, resume, cycle-now, status.
    Negotiator(negotiator::Args),
    /// Query the collector, as condor_status does (any CM answers).
    Status(status::Args),
    /// Run one negotiation cycle offline on condor_status/condor_q/condor_userprio dumps.
    WhatIf(whatif::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Eval(args) => eval::run(args),
        Command::Userprio(args) => userprio::run(args),
        Command::Cluster(args) => cluster::run(args),
        Command::Quota(args) => quota::run_quota(args),
        Command::Limit(args) => quota::run_limit(args),
        Command::WhatIf(args) => whatif::run(args),
        Command::Negotiator(args) => negotiator::run(args),
        Command::Status(args) => status::run(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("cmctl: {err:#}");
            std::process::exit(2);
        }
    }
}
