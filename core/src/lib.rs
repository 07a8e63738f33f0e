//! Aerie's pure core: everything the central managers agree on and compute, with no I/O.
//!
//! * [`accountant`]: the fair-share ledger (HTCondor's `Accountant`): priorities, factors,
//!   usage and its decay, as `condor_userprio` shows them;
//! * [`negotiator`]: one negotiation cycle as a pure function of the slots, the jobs, the
//!   ledger, the configuration and the time (HTCondor's `Matchmaker::negotiationTime`);
//! * [`state`]: the replicated pool state and the commands that change it;
//! * [`print`]: condor_status's `-long` and `-af` text for one ad, which the collector renders
//!   and `cmctl` prints alike;
//! * [`admin`]: the typed queries that read it and the error kinds of the admin API, so the
//!   daemon, `cmctl` and the tests speak one typed protocol.
//!
//! Nothing here reads a clock, a file or the network: time is always an argument, so cycles
//! and ledgers replay exactly (in tests, in `cmctl what-if`, on every Raft replica).
#![warn(missing_docs)]
pub mod accountant;
pub mod admin;
pub mod negotiator;
pub mod print;
pub mod state;
