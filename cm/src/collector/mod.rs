//! The collector every CM runs: the soft-state table of live ads (slots, submitters, daemons),
//! rebuilt from the nodes' updates and never written to the Raft log.
//!
//! [`AdTable`] is pure and deterministic (time is always passed in), so its rules — dedup,
//! validation, `CLASSAD_LIFETIME` expiry, absent ads (`ABSENT_REQUIREMENTS`,
//! `ABSENT_EXPIRE_ADS_AFTER`, `EXPIRE_INVALIDATED_ADS`), queries with a constraint and a
//! projection — are unit-tested without a clock. [`service`] serves it over gRPC.
pub mod service;
pub mod synthetic;
mod table;

pub use table::{
    is_private_attr, AdError, AdKey, AdTable, AdType, CollectorParams, ExpiryReport, Query, Update,
};

#[cfg(test)]
mod tests;
