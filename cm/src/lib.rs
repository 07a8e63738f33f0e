//! The Aerie central manager: configuration lookup, the accountant and negotiator (pure
//! libraries), the replicated Raft core, the collector and the leader-run negotiation.
pub mod accountant;
pub mod admin;
pub mod collector;
pub mod config_val;
pub mod daemon;
pub mod metrics;
pub mod negotiation;
pub mod negotiator;
pub mod raft;
pub mod state;
pub mod store;
