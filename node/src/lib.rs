//! aerie-node: the execute-node (startd) and access-point (schedd) agent of an Aerie pool.
//!
//! Today it plays a simulated pool (`aerie-node simulate`): many slots and one access point
//! with many submitters, advertising to the CMs' collectors, answering the leader's requests
//! and grants, claiming slots and "running" jobs for a sampled time; and it audits the
//! startds' claims logs (`aerie-node check-claims`). `aerie-node access-point` runs a real
//! access point ([`schedd`]): a durable job queue users submit to, whose jobs it runs on the
//! pool's execute nodes. The startd and access point rules are
//! pure cores ([`startd`], [`access_point`]) that a real node will reuse.
#![warn(missing_docs)]

pub mod access_point;
pub mod advertise;
pub mod args;
pub mod check;
pub mod claims_log;
pub mod cli;
pub mod execute;
pub mod policy;
pub mod pool;
pub mod requests;
pub mod schedd;
pub mod service;
pub mod sim;
pub mod simulate;
pub mod startd;
pub mod starter;
pub mod transfer_path;
