//! Starting a CM's collector: the table, the gRPC service, and the background tasks (expiry
//! sweep, relay to the other CMs, the contact check, the mirror of the replicated absent/offline ads). The daemon calls
//! [`start`] once Raft is up and [`Running::stop`] on shutdown.
use super::absent;
use super::relay::{Relay, RelayParams};
use super::service::{self, CollectorService, SWEEP_INTERVAL};
use super::{AdTable, CollectorParams};
use crate::raft::contact;
use crate::raft::leadership::Leadership;
use crate::raft::store::ClusterId;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// A running collector.
pub struct Running {
    /// The gRPC service (ingest and queries) over the table.
    pub service: CollectorService,
    /// The relay to the other CMs.
    pub relay: Arc<Relay>,
    /// The background tasks by name; the daemon watches them (none may end while it runs).
    pub tasks: Vec<(&'static str, tokio::task::JoinHandle<()>)>,
}

/// Reads the collector's knobs from `cfg` (defaults without one) and starts it.
///
/// The collector closes its ad streams once this CM has been out of touch with a leader
/// holding a quorum for `AERIE_COLLECTOR_CUTOFF_TIMEOUT` ([`crate::raft::contact`]); `fresh`
/// is how old a quorum's acknowledgement may be for the leader to count as in touch.
pub fn start(
    cfg: Option<&aerie_config::Config>,
    leadership: &Leadership,
    cluster: &ClusterId,
    fresh: Duration,
    state: crate::raft::store::SharedState,
) -> Result<Running, String> {
    let (id, raft) = (leadership.id(), leadership.raft());
    let cutoff = service::cutoff_timeout(cfg)?;
    let (params, relay_params, rate) = match cfg {
        Some(c) => (
            CollectorParams::from_config(c)?,
            RelayParams::from_config(c)?,
            service::max_update_rate(c)?,
        ),
        None => (
            CollectorParams::default(),
            RelayParams::default(),
            service::DEFAULT_MAX_UPDATE_RATE,
        ),
    };
    let mut table = AdTable::new(params);
    table.set_origin_id(id);
    // The leader waits this long at most for a first comparison with a peer's table
    // (immediate on start; a few retries' worth when peers are slow or unreachable).
    table.expect_peer_sync(std::time::Instant::now() + relay_params.digest_interval * 3);
    let table = Arc::new(RwLock::new(table));
    let relay = Relay::new(id, table.clone(), relay_params);
    let mut svc = CollectorService::new(table.clone()).with_relay(relay.clone());
    svc.max_update_rate = rate;
    let lead = leadership.clone();
    svc.current_term = Some(Arc::new(move || lead.metrics().current_term));
    svc.identity_limit = service::identity_limiter(service::max_update_rate_per_identity(cfg)?);
    let (cut_off, contact) = contact::spawn(leadership.clone(), cluster.clone(), fresh, cutoff);
    svc.cut_off = Some(cut_off);
    let tasks = vec![
        ("contact with the leader", contact),
        (
            "collector expiry sweep",
            service::spawn_expiry(table.clone(), SWEEP_INTERVAL),
        ),
        (
            "collector relay membership watch",
            relay.spawn_membership_watch(raft.clone()),
        ),
        (
            "absent-ad mirror",
            absent::spawn_mirror(state, table, SWEEP_INTERVAL),
        ),
    ];
    Ok(Running {
        service: svc,
        relay,
        tasks,
    })
}

impl Running {
    /// Stops the background tasks and the relay.
    pub fn stop(&self) {
        for (_, t) in &self.tasks {
            t.abort();
        }
        self.relay.shutdown();
    }
}
