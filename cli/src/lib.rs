//! `cmctl`: the admin's command line for an Aerie pool. The binary is [`cli_main`]; the library
//! exists so that the integration tests run the very same command line as a binary of their
//! own package (cargo builds only the package under test's binaries).
#![warn(missing_docs)]
use clap::{Parser, Subcommand};

mod advertise;
mod args;
mod client;
mod cluster;
mod drain;
mod eval;
mod negotiator;
mod quota;
mod status;
mod submit;
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
    /// Publish or remove ads in the collector, as condor_advertise does (-tcp is accepted:
    /// Aerie always sends over gRPC on TCP; -help for the details).
    Advertise(advertise::Args),
    /// Read a submit description and build its job ads, as condor_submit does; only
    /// -dry-run works until the access point exists.
    Submit(submit::Args),
    /// Drain machines, or cancel a drain, as condor_drain does (replicated through Raft; the
    /// leader carries it out on the machine).
    Drain(drain::Args),
}

/// Parses this process's arguments, runs the subcommand and returns the exit code.
pub fn cli_main() -> i32 {
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
        Command::Advertise(args) => advertise::run(args),
        Command::Submit(args) => submit::run(args),
        Command::Drain(args) => drain::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("cmctl: {err:#}");
            2
        }
    }
}
