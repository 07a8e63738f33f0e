//! `cmctl`: the admin's command line for an Aerie pool. The binary is [`cli_main`]; the library
//! exists so that the integration tests run the very same command line as a binary of their
//! own package (cargo builds only the package under test's binaries).
#![warn(missing_docs)]
use clap::{Parser, Subcommand};

mod advertise;
mod args;
mod audit;
mod client;
mod cluster;
mod drain;
mod eval;
mod history;
mod jobs;
mod negotiator;
mod queue;
mod quota;
mod reconfig;
mod schedd;
mod snapshot;
mod status;
mod submit;
mod token;
mod userprio;
mod whatif;
#[cfg(test)]
mod wire_tests;

#[derive(Parser)]
#[command(
    name = "cmctl",
    version,
    about = "Administer an Aerie pool and use its access points"
)]
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
    /// Make a CM re-read its configuration file and propose its negotiation policy, as
    /// condor_reconfig does (the policy is replicated: every leader negotiates with it).
    Reconfig(reconfig::Args),
    /// Save the pool's replicated state to a file, or restore it into a running cluster.
    Snapshot(snapshot::Args),
    /// Query the collector, as condor_status does (any CM answers).
    Status(status::Args),
    /// Run one negotiation cycle offline on condor_status/condor_q/condor_userprio dumps.
    WhatIf(whatif::Args),
    /// Publish or remove ads in the collector, as condor_advertise does (-tcp is accepted:
    /// Aerie always sends over gRPC on TCP; -help for the details).
    Advertise(advertise::Args),
    /// Submit jobs to an access point, as condor_submit does (-dry-run: only print the ads).
    /// The access point: -name SOCKET, else $AERIE_AP_SOCKET, else $AERIE_RUN_DIR/ap.sock.
    Submit(submit::Args),
    /// Drain machines, or cancel a drain, as condor_drain does (replicated through Raft; the
    /// leader carries it out on the machine).
    Drain(drain::Args),
    /// Show the jobs in an access point's queue, as condor_q does.
    Q(queue::Args),
    /// Remove jobs, as condor_rm does.
    Rm(jobs::Args),
    /// Hold jobs, as condor_hold does.
    Hold(jobs::Args),
    /// Release held jobs, as condor_release does.
    Release(jobs::Args),
    /// Stop running jobs and put them back to idle, as condor_vacate_job does.
    VacateJob(jobs::Args),
    /// Change the priority of jobs (JobPrio), as condor_prio does.
    Prio(jobs::Args),
    /// Change attributes of queued jobs, as condor_qedit does.
    Qedit(jobs::Args),
    /// Show finished jobs, newest first, as condor_history does.
    History(history::Args),
    /// Tokens for people and scripts, as condor_token_create/list/revoke: create (signed by
    /// a CM), list, revoke (replicated through Raft).
    Token(token::Args),
    /// The audit log of admin writes: who changed what, when, from where.
    Audit(audit::Args),
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
        Command::Reconfig(args) => reconfig::run(args),
        Command::Snapshot(args) => snapshot::run(args),
        Command::Status(args) => status::run(args),
        Command::Advertise(args) => advertise::run(args),
        Command::Submit(args) => submit::run(args),
        Command::Drain(args) => drain::run(args),
        Command::Q(args) => queue::run(args),
        Command::Rm(args) => jobs::run(jobs::Tool::Rm, args),
        Command::Hold(args) => jobs::run(jobs::Tool::Hold, args),
        Command::Release(args) => jobs::run(jobs::Tool::Release, args),
        Command::VacateJob(args) => jobs::run(jobs::Tool::Vacate, args),
        Command::Prio(args) => jobs::run(jobs::Tool::Prio, args),
        Command::Qedit(args) => jobs::run(jobs::Tool::Qedit, args),
        Command::History(args) => history::run(args),
        Command::Token(args) => token::run(args),
        Command::Audit(args) => audit::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("cmctl: {err:#}");
            2
        }
    }
}
