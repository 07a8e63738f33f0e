//! The execute node role, `aerie-node execute`: HTCondor's startd and starter
//! (`src/condor_startd.V6`, `src/condor_starter.V6.1`) made of the pieces beside it: the slots
//! from the HTCondor configuration ([`crate::startd::layout`]) on the detected machine, each
//! slot's claim in the claim core ([`crate::startd`]) and its state in the startd policy state
//! machine ([`crate::policy`]), jobs run by the starter ([`crate::starter`]), and the ads
//! streamed to the CMs ([`crate::advertise`]).
//!
//! * [`args`]: the command line;
//! * [`slots`]: the slot manager, pure (time passed in): claims, activations, keep-alives,
//!   releases, preemption, drains and the periodic evaluation, and the slot ads;
//! * [`jobs`]: starting, watching and signalling the jobs, and their events to the access
//!   points' `Shadow` service;
//! * [`service`]: the `Startd` and `Execute` gRPC services;
//! * [`metrics`]: the Prometheus metrics at `/metrics`;
//! * [`run`]: the daemon: configuration, listeners, the 1 s evaluation loop, shutdown.
pub mod args;
pub mod jobs;
pub mod metrics;
pub mod run;
pub mod service;
pub mod slots;

pub use args::ExecuteArgs;
pub use run::run;

#[cfg(test)]
mod tests;
