//! Everything only the Raft leader does. Every CM runs [`run`]; it waits until its CM leads a
//! term, runs that term's duties side by side until the term ends, and waits again.
//!
//! The duties of a term, each ending by itself once the CM no longer leads it:
//! * [`policy`]: seed the replicated negotiation policy from this CM's file when the state
//!   has none (before the cluster supports it, [`params`]: commit the file's accountant
//!   parameters when the ledger's differ);
//! * [`features`]: raise the cluster's feature version once every member supports it;
//! * [`absent`]: commit absent and offline ads the collector found, and remove them when the
//!   machine is back or they expire, so they survive any crash;
//! * [`drains`]: send the replicated drain requests to the machines, and their cancellations;
//! * [`driver`]: the negotiation cycles, every `NEGOTIATOR_INTERVAL` or on `cycle-now`
//!   ([`knobs`]).
//!
//! A negotiation cycle ([`cycle`]), as HTCondor's negotiator runs one but fenced by the term:
//! 1. confirm leadership with a quorum (so the state holds everything committed before);
//!    skip when an operator paused negotiation (replicated flag);
//! 2. snapshot the local collector: live slot ads with their private claim capability, and
//!    the submitter ads ([`snapshot`]); with no submitter ads there is no demand and the
//!    cycle ends here, committing nothing;
//! 3. commit an accountant tick with the usage of the claimed slots ([`tick`]), at the
//!    leader's time, never earlier than any committed time;
//! 4. ask every access point for its idle jobs, concurrently, with a deadline ([`requests`]);
//! 5. negotiate with the replicated policy (or, before one is seeded, this CM's file) with
//!    the runtime overrides laid over it (`PoolState::policy_config`); the cycle record names
//!    the policy version;
//! 6. run the pure negotiator (`aerie_core::negotiator`) off the async threads; stop if
//!    deposed meanwhile;
//! 7. confirm leadership again, right before delivery, and send each access point the grants
//!    its jobs won, with the term, within the lease that confirmation gives ([`grants`]): a
//!    leader that lost its quorum while negotiating delivers nothing (DESIGN invariant 2);
//! 8. commit the cycle record; 9. publish the Negotiator ad ([`negotiator_ad`]); 10. metrics
//!    ([`stats`]).
//!
//! Every write goes through [`crate::raft::propose`] with a deadline, and every question of
//! leadership through [`crate::raft::leadership::Leadership`].
pub mod absent;
mod cycle;
pub mod drains;
mod driver;
pub mod features;
pub mod grants;
pub mod knobs;
pub mod negotiator_ad;
mod params;
mod policy;
pub mod requests;
pub mod snapshot;
mod stats;
pub mod tick;

pub use cycle::{Completed, CycleEnd, CycleError};
pub use knobs::Knobs;

use crate::collector::service::SharedTable;
use crate::policy::FilePolicy;
use crate::raft::leadership::Leadership;
use crate::raft::store::SharedState;
use crate::raft::NodeId;
use aerie_core::accountant::AccountantParams;
use aerie_core::negotiator::NegotiatorConfig;
use aerie_core::state::NegotiationPolicy;
use std::sync::Arc;
use std::time::Duration;

/// What the leader's duties work with.
pub struct Leader {
    /// This CM's Raft node id.
    pub id: NodeId,
    /// This CM's advertised address (the Negotiator ad's name and address).
    pub addr: String,
    /// Who leads; the Raft handle for proposals.
    pub leadership: Leadership,
    /// The applied replicated state.
    pub state: SharedState,
    /// This CM's collector table.
    pub table: SharedTable,
    /// The configuration file's negotiator settings, used until a replicated policy exists.
    pub config: NegotiatorConfig,
    /// The configuration file as a negotiation policy (seeds the replicated one).
    pub file_policy: Arc<FilePolicy>,
    /// The configuration file's accountant parameters, committed when the ledger's differ;
    /// `None` without a configuration file (the ledger's stay).
    pub accountant_params: Option<AccountantParams>,
    /// Cycle timing from the file and environment (the replicated policy's timing, with the
    /// environment winning, once there is one: [`Leader::cycle_knobs`]).
    pub knobs: Knobs,
    /// How often absent and offline ads are looked at.
    pub absent_sweep: Duration,
    /// How long a confirmation of leadership stays good for delivering grants: shorter than
    /// the shortest election timeout, so no grant leaves after another CM could lead.
    pub lease: Duration,
    /// Where this CM's monotonic clock stood at its first accountant tick of the term it
    /// leads (see `tick::Anchor`): the term's later ticks measure time from there.
    pub tick_anchor: std::sync::Mutex<Option<tick::Anchor>>,
}

impl Leader {
    /// Builds the leader's duties from the daemon's optional configuration file (negotiator
    /// knobs and timing, accountant parameters) and the environment (`AERIE_NEGOTIATOR_*`).
    /// A bad knob is an error naming it.
    /// `election_min` is the shortest election timeout (the lease is 80% of it).
    pub fn new(
        leadership: Leadership,
        addr: String,
        state: SharedState,
        table: SharedTable,
        cfg: Option<&aerie_config::Config>,
        file_policy: Arc<FilePolicy>,
        election_min: Duration,
    ) -> anyhow::Result<Self> {
        let config = match cfg {
            Some(c) => NegotiatorConfig::from_config(c)
                .map_err(|e| anyhow::anyhow!("negotiator configuration: {e}"))?,
            None => NegotiatorConfig::default(),
        };
        let accountant_params = match cfg {
            Some(c) => Some(
                AccountantParams::from_config(c)
                    .map_err(|e| anyhow::anyhow!("accountant configuration: {e}"))?,
            ),
            None => None,
        };
        let knobs = Knobs::read(&crate::knob::Knobs::new(cfg))?;
        Ok(Leader {
            id: leadership.id(),
            addr,
            leadership,
            state,
            table,
            config,
            file_policy,
            accountant_params,
            knobs,
            absent_sweep: crate::collector::service::SWEEP_INTERVAL,
            lease: election_min.mul_f64(0.8),
            tick_anchor: Default::default(),
        })
    }
}

impl Leader {
    /// The cycle timing for `policy`: its `NEGOTIATOR_INTERVAL`, `NEGOTIATOR_CYCLE_DELAY` and
    /// `NEGOTIATOR_MAX_TIME_PER_CYCLE` (the environment still winning, for tests), this CM's
    /// own without a policy or when the policy's do not read.
    pub fn cycle_knobs(&self, policy: Option<&NegotiationPolicy>) -> Knobs {
        let Some(p) = policy else {
            return self.knobs.clone();
        };
        let mut cfg = aerie_config::Config::empty(aerie_config::Context::subsystem("NEGOTIATOR"));
        let read = aerie_core::state::negotiation_policy::CYCLE_KNOBS
            .iter()
            .filter_map(|k| p.knobs.get(*k).map(|v| (k, v)))
            .try_for_each(|(k, v)| cfg.set(k, v).map_err(|e| e.to_string()))
            .and_then(|()| {
                Knobs::read(&crate::knob::Knobs::new(Some(&cfg))).map_err(|e| e.to_string())
            });
        match read {
            Ok(k) => Knobs {
                ap_timeout: self.knobs.ap_timeout,
                ..k
            },
            Err(e) => {
                tracing::warn!(policy_version = p.version, error = %e, "replicated cycle timing unusable; using this CM's");
                self.knobs.clone()
            }
        }
    }
}

/// Starts the leader's loop, and on every CM the check of its file against the replicated
/// policy; they run until the task is aborted or Raft shuts down.
pub fn spawn(leader: Leader) -> tokio::task::JoinHandle<()> {
    let watch = crate::policy::watch(leader.state.clone(), leader.file_policy.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = watch => {}
            _ = run(Arc::new(leader)) => {}
        }
    })
}

/// Waits for each term this CM leads and runs its duties until the term ends.
async fn run(l: Arc<Leader>) {
    let mut timing = driver::Timing::default();
    stats::set_leader(false);
    while let Some(term) = l.leadership.wait_to_lead().await {
        stats::set_leader(true);
        tracing::info!(term, "leader: negotiation starts");
        tokio::join!(
            policy::seed(&l, term),
            features::raise(&l, term),
            absent::commit_while_leading(&l, term),
            drains::deliver_while_leading(&l, term),
            driver::cycles(&l, term, &mut timing),
        );
        stats::set_leader(false);
        tracing::info!(term, "no longer leader: negotiation stops");
        // Do not spin while openraft still shows this CM leading a term it cannot serve.
        l.leadership.wait_deposed(term).await;
    }
}
