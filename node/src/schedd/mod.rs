//! The access point role (`aerie-node access-point`): HTCondor's schedd and shadow for real
//! jobs. Users queue jobs over a Unix socket or, with a token or an administrator's
//! certificate, over mutual TLS (schedd.proto); the queue is durable in RocksDB
//! (every change synced before it is acknowledged) with a history of finished jobs; the
//! leader asks for the idle jobs and delivers grants (negotiation.proto); the access point
//! claims the slots, activates them with the jobs and their input files, renews the claims
//! and records the jobs' events (execute.proto), writing outputs back into each job's `Iwd`
//! as its owner.
//!
//! One job per module: [`job`] (ids, statuses, attribute names), [`queue`] (the pure rules),
//! [`store`] (RocksDB), [`claims`] (the pure claim bookkeeping), [`deferral`] and
//! [`crontab`] (when a deferred or crontab job is offered and started, pure), [`usermap`] and
//! [`assign_group`] (accounting groups from a map file, pure), [`files`] (input and output
//! files as the owner), [`daemon`] (the queue behind its lock), [`query`] (condor_q's and condor_history's
//! answers, as ads or rows), [`shadow`] (a claim's life),
//! [`service`] (gRPC), [`who`] (a TCP caller as a job owner), [`revocations`] (revoked tokens
//! from the CMs), [`ads`] (Submitter and Scheduler ads), [`metrics`], [`args`], [`run`].
//!
//! On restart the queue is kept, and jobs that were running go back to idle: their claims
//! are not kept across restarts (reconnecting to running jobs within their lease is future
//! work); they are matched again only after 3 x `ALIVE_INTERVAL`, when the old claims'
//! leases have passed at the execute nodes, so a job never runs twice.
pub mod ads;
pub mod args;
pub mod assign_group;
pub mod claims;
pub mod crontab;
pub mod daemon;
pub mod deferral;
pub mod files;
pub mod job;
pub mod metrics;
pub mod query;
pub mod queue;
pub mod revocations;
pub mod run;
pub mod service;
pub mod shadow;
pub mod store;
pub mod usermap;
pub mod who;
