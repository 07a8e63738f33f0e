//! The Aerie central manager: configuration lookup, the accountant and negotiator (pure
//! libraries), the replicated Raft core, the collector and the leader-run negotiation.
#![warn(missing_docs)]
pub mod admin;
pub mod collector;
pub mod config_val;
pub mod daemon;
pub mod knob;
pub mod leader;
pub mod limits;
pub mod metrics;
pub mod policy;
pub mod raft;
pub mod security_cmd;
