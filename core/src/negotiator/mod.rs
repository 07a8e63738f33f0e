//! The negotiator: one pure, deterministic negotiation cycle.
//!
//! [`negotiate`] takes the slot ads, the idle job ads, the accountant's ledger, the
//! configuration and the time, and returns an [`Outcome`]: the matches (with the reason
//! and whom they preempt), per-submitter and per-group figures and `LastNegotiationCycle*`
//! statistics. Nothing here reads a clock, a file or a random number: the same input always
//! gives the same outcome, so the Raft leader and `cmctl what-if` agree.
//!
//! The cycle follows HTCondor 23.9.6's matchmaker (matchmaker.cpp, GroupEntry.cpp: read, not
//! copied); see `cycle.rs` for the steps and the choices where the manual is silent.
mod candidates;
pub mod config;
mod cycle;
mod figures;
mod groups;
mod keys;
pub mod limits;
mod matchmaking;
pub mod outcome;
mod pie;
mod prep;
mod scan;
mod state;
mod tables;
mod turn;

pub use config::{ConfigError, GroupConfig, GroupQuota, NegotiatorConfig};
pub use cycle::negotiate;
pub use outcome::{GroupFigures, LimitedBy, Match, MatchReason, Outcome, SubmitterFigures};

use classad::ClassAd;

/// What one cycle works on: the slot ads (as `condor_status -long` shows them) and the idle
/// job ads (as `condor_q -long` shows them).
#[derive(Clone, Debug, Default)]
pub struct NegotiationInput {
    pub slots: Vec<ClassAd>,
    pub jobs: Vec<ClassAd>,
}
