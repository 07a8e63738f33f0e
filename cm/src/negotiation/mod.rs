//! The leader-run negotiation: every CM runs the loop, only the Raft leader negotiates.
//!
//! A cycle (`cycle.rs`), as HTCondor's negotiator runs one but fenced by the Raft term:
//! 1. confirm leadership with a quorum (so the state holds everything committed before);
//!    skip when an operator paused negotiation (replicated flag);
//! 2. snapshot the local collector: live slot ads with their private claim capability, and
//!    the submitter ads (`snapshot.rs`); with no submitter ads there is no demand and the
//!    cycle ends here, committing nothing;
//! 3. commit an accountant tick with the usage of the claimed slots (`usage.rs`), at the
//!    leader's time, never earlier than any committed time;
//! 4. ask every access point for its idle jobs, concurrently, with a deadline
//!    (`requests.rs`);
//! 5. overlay the replicated runtime policy on the configured negotiator settings
//!    (`policy.rs`);
//! 6. run the pure negotiator library off the async threads; stop if deposed meanwhile;
//! 7. send each access point the grants its jobs won, with the term (`grants.rs`);
//! 8. commit the cycle record; 9. publish the Negotiator ad (`ad.rs`); 10. metrics
//!    (`stats.rs`).
//!
//! The loop (`driver.rs`) decides when, from `NEGOTIATOR_INTERVAL`, `NEGOTIATOR_CYCLE_DELAY`
//! (`knobs.rs`) and the replicated `cycle-now` counter.
pub mod ad;
mod cycle;
mod driver;
pub mod grants;
pub mod knobs;
pub mod policy;
pub mod requests;
pub mod snapshot;
mod stats;
pub mod usage;

pub use cycle::{Completed, CycleEnd, CycleError};
pub use knobs::Knobs;

use crate::collector::service::SharedTable;
use aerie_core::negotiator::NegotiatorConfig;
use crate::raft::{NodeId, Raft};
use crate::store::SharedState;
use std::sync::Arc;

/// What the negotiation of one CM works with.
pub struct Negotiation {
    pub id: NodeId,
    /// This CM's advertised address (the Negotiator ad's name and address).
    pub addr: String,
    pub raft: Raft,
    pub state: SharedState,
    pub table: SharedTable,
    /// The configuration file's negotiator settings (runtime policy is laid over them).
    pub config: NegotiatorConfig,
    pub knobs: Knobs,
}

impl Negotiation {
    /// Builds the negotiation from the daemon's optional configuration file (negotiator
    /// knobs and timing) and the environment (`AERIE_NEGOTIATOR_*`). A bad knob is an error
    /// naming it.
    pub fn new(
        id: NodeId,
        addr: String,
        raft: Raft,
        state: SharedState,
        table: SharedTable,
        cfg: Option<&aerie_config::Config>,
    ) -> anyhow::Result<Self> {
        let config = match cfg {
            Some(c) => NegotiatorConfig::from_config(c)
                .map_err(|e| anyhow::anyhow!("negotiator configuration: {e}"))?,
            None => NegotiatorConfig::default(),
        };
        let knobs = Knobs::from_lookup(
            |k| cfg.and_then(|c| c.expanded(k).ok().flatten()),
            |k| std::env::var(k).ok(),
        )
        .map_err(|e| anyhow::anyhow!("negotiation timing: {e}"))?;
        Ok(Negotiation {
            id,
            addr,
            raft,
            state,
            table,
            config,
            knobs,
        })
    }
}

/// Starts the loop; it runs until the task is aborted.
pub fn spawn(n: Negotiation) -> tokio::task::JoinHandle<()> {
    tokio::spawn(driver::run(Arc::new(n)))
}
