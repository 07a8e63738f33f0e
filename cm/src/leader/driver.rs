//! When the leader negotiates: every `NEGOTIATOR_INTERVAL` from the start of the previous
//! cycle, or sooner when an operator's `cycle-now` bumps the replicated request counter, never
//! sooner than `NEGOTIATOR_CYCLE_DELAY` after the previous cycle ended. A newly elected
//! leader negotiates at once (failover time is measured to its first completed cycle).
use super::cycle::CycleEnd;
use super::negotiator_ad::AdFacts;
use super::{stats, Leader};
use std::time::{Duration, Instant};

/// How often the loop looks at the leadership and the request counter.
const POLL: Duration = Duration::from_millis(100);

/// What the timing remembers across terms: the end of this CM's last cycle, so a CM that
/// leads again soon after still keeps `NEGOTIATOR_CYCLE_DELAY`.
#[derive(Debug, Default)]
pub(super) struct Timing {
    last_end: Option<Instant>,
}

/// Runs the cycles of `term` until this CM no longer leads it.
pub(super) async fn cycles(l: &Leader, term: u64, timing: &mut Timing) {
    let mut next_due = Instant::now();
    let mut last_cycle = 0u64;
    let mut seen_requests = l
        .state
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .state
        .negotiator
        .cycle_requests;
    let mut facts = AdFacts {
        addr: l.addr.clone(),
        ..Default::default()
    };
    let mut syncing_logged = false;
    // The timing of the replicated policy, recomputed when its version changes.
    let mut timing_of: Option<(u64, super::Knobs)> = None;
    while l.leadership.leads(term) {
        let (requests, last_in_term, knobs) = {
            let a = l.state.read().unwrap_or_else(|p| p.into_inner());
            let s = &a.state;
            let version = s.policy.as_ref().map_or(0, |p| p.version);
            let knobs = match &timing_of {
                Some((v, k)) if *v == version => k.clone(),
                _ => {
                    let k = l.cycle_knobs(s.policy.as_ref());
                    timing_of = Some((version, k.clone()));
                    k
                }
            };
            (
                s.negotiator.cycle_requests,
                s.cycles
                    .iter()
                    .rev()
                    .find(|r| r.term == term)
                    .map(|r| r.cycle)
                    .unwrap_or(0),
                knobs,
            )
        };
        let now = Instant::now();
        let poked = requests > seen_requests;
        let gap_ok = timing.last_end.is_none_or(|e| now >= e + knobs.cycle_delay);
        if !((now >= next_due || poked) && gap_ok) {
            tokio::time::sleep(POLL).await;
            continue;
        }
        seen_requests = requests;
        let cycle = last_cycle.max(last_in_term) + 1;
        next_due = now + knobs.interval;
        match l.run_cycle(term, cycle, seen_requests).await {
            Ok(CycleEnd::Completed(c)) => {
                last_cycle = cycle;
                timing.last_end = Some(Instant::now());
                stats::record_cycle("completed");
                stats::record_completed(now.elapsed(), c.record.matches, c.delivery.refused);
                tracing::info!(
                    term,
                    cycle,
                    slots = c.record.slots,
                    jobs = c.record.idle_jobs,
                    matches = c.record.matches,
                    accepted = c.delivery.accepted,
                    refused = c.delivery.refused,
                    seconds = c.record.duration_seconds,
                    phases_ms = %c.phases,
                    "negotiation cycle done"
                );
                facts = c.facts;
                facts.cycle_requests_seen = seen_requests;
                l.publish_ad(&facts);
            }
            Ok(CycleEnd::Paused) => {
                stats::record_cycle("paused");
                tracing::info!(term, "negotiation paused: cycle skipped");
                facts.paused = true;
                facts.term = term;
                facts.leader_id = l.id;
                facts.cycle_requests_seen = seen_requests;
                l.publish_ad(&facts);
            }
            Ok(CycleEnd::Syncing) => {
                stats::record_cycle("syncing");
                if !syncing_logged {
                    syncing_logged = true;
                    tracing::info!(
                        term,
                        "collector not yet compared with a peer's since this CM started: the cycle waits for it"
                    );
                }
                // Again at the next poll, not a whole interval later.
                next_due = Instant::now();
                tokio::time::sleep(POLL).await;
            }
            Ok(CycleEnd::NoDemand) => {
                stats::record_cycle("no_demand");
                tracing::debug!(term, "no submitter ads: nothing to negotiate");
            }
            Ok(CycleEnd::Deposed { step }) => {
                last_cycle = cycle;
                stats::record_cycle("deposed");
                tracing::info!(
                    term,
                    cycle,
                    step,
                    "lost leadership mid-cycle: nothing more sent"
                );
            }
            Err(e) => {
                last_cycle = cycle;
                timing.last_end = Some(Instant::now());
                stats::record_cycle("failed");
                tracing::warn!(term, cycle, error = %e, "negotiation cycle failed");
            }
        }
    }
}
