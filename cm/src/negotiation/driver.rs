//! The timer loop every CM runs: it negotiates only while this CM is the Raft leader, every
//! `NEGOTIATOR_INTERVAL` from the start of the previous cycle, or sooner when an operator's
//! `cycle-now` bumps the replicated request counter — never sooner than `NEGOTIATOR_CYCLE_DELAY`
//! after the previous cycle ended. A newly elected leader negotiates at once (failover time
//! is measured to its first completed cycle).
use super::ad::AdFacts;
use super::cycle::CycleEnd;
use super::stats;
use super::Negotiation;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the loop looks at the leadership and the request counter.
const POLL: Duration = Duration::from_millis(100);

pub(super) async fn run(n: Arc<Negotiation>) {
    let mut led: Option<u64> = None;
    let mut next_due = Instant::now();
    let mut last_end: Option<Instant> = None;
    let mut seen_requests = 0u64;
    let mut last_cycle = 0u64;
    let mut facts = AdFacts {
        addr: n.addr.clone(),
        ..Default::default()
    };
    stats::set_leader(false);
    loop {
        let (leader, term) = {
            let m = n.raft.metrics().borrow().clone();
            (m.current_leader, m.current_term)
        };
        if leader != Some(n.id) {
            if led.take().is_some() {
                stats::set_leader(false);
                tracing::info!(term, "no longer leader: negotiation stops");
            }
            tokio::time::sleep(POLL).await;
            continue;
        }
        let (requests, last_in_term) = {
            let a = n.state.read().unwrap_or_else(|p| p.into_inner());
            let s = &a.state;
            (
                s.negotiator.cycle_requests,
                s.cycles
                    .iter()
                    .rev()
                    .find(|r| r.term == term)
                    .map(|r| r.cycle)
                    .unwrap_or(0),
            )
        };
        if led != Some(term) {
            led = Some(term);
            stats::set_leader(true);
            next_due = Instant::now();
            last_cycle = 0;
            seen_requests = requests;
            tracing::info!(term, "leader: negotiation starts");
        }
        let now = Instant::now();
        let poked = requests > seen_requests;
        let gap_ok = last_end.is_none_or(|e| now >= e + n.knobs.cycle_delay);
        if (now >= next_due || poked) && gap_ok {
            seen_requests = requests;
            let cycle = last_cycle.max(last_in_term) + 1;
            next_due = now + n.knobs.interval;
            match n.run_cycle(term, cycle, seen_requests).await {
                Ok(CycleEnd::Completed(c)) => {
                    last_cycle = cycle;
                    last_end = Some(Instant::now());
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
                        "negotiation cycle done"
                    );
                    facts = c.facts;
                    facts.cycle_requests_seen = seen_requests;
                    n.publish_ad(&facts);
                }
                Ok(CycleEnd::Paused) => {
                    stats::record_cycle("paused");
                    tracing::info!(term, "negotiation paused: cycle skipped");
                    facts.paused = true;
                    facts.term = term;
                    facts.leader_id = n.id;
                    facts.cycle_requests_seen = seen_requests;
                    n.publish_ad(&facts);
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
                    last_end = Some(Instant::now());
                    stats::record_cycle("failed");
                    tracing::warn!(term, cycle, error = %e, "negotiation cycle failed");
                }
            }
            continue;
        }
        tokio::time::sleep(POLL).await;
    }
}
