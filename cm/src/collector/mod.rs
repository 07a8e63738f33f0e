//! The collector every CM runs: the soft-state table of live ads (slots, submitters, daemons),
//! rebuilt from the nodes' updates and relayed between CMs, never written to the Raft log —
//! except absent and offline ads, which the leader commits so they survive any crash.
//!
//! [`AdTable`] is pure and deterministic (time is always passed in), so its rules — keys as
//! HTCondor hashes ads, dedup, validation, `CLASSAD_LIFETIME` expiry, absent ads
//! (`ABSENT_REQUIREMENTS`, `ABSENT_EXPIRE_ADS_AFTER`, `EXPIRE_INVALIDATED_ADS`), offline ads,
//! last-writer-wins for relayed updates and the digest comparison, queries with a constraint
//! and a projection — are unit-tested without a clock. [`service`] serves it over gRPC,
//! [`text`] renders condor_status's `-long` and `-af` text of the matching ads on the CM,
//! [`relay`] sends accepted updates to the other CMs and exchanges digests, [`absent`] writes
//! absent/offline ads through Raft, and [`run`] starts them all for the daemon.
pub mod absent;
pub mod binding;
pub mod relay;
pub mod run;
pub mod service;
mod table;
pub mod text;

pub use table::{
    address_host, is_private_attr, AdError, AdKey, AdTable, AdType, CollectorParams, DigestDiff,
    DigestEntry, DigestPage, ExpiryReport, HiddenAd, Query, RelayItem, ReplicatedAd, Shown,
    TotalsRow, Update, Version,
};

#[cfg(test)]
mod relay_tests;
#[cfg(test)]
mod service_tests;
#[cfg(test)]
mod text_tests;
