//! Step 10: Prometheus metrics of the leader-run negotiation (see `crate::metrics` for the
//! exporter). Names: `aerie_negotiation_cycles_total{outcome}`,
//! `aerie_negotiation_cycle_duration_seconds` (histogram), `aerie_negotiation_matches_total`,
//! `aerie_negotiation_grants_refused_total`, `aerie_negotiation_leader` (1 while this CM
//! negotiates), `aerie_negotiation_phase_duration_seconds{phase}` (histogram; HTCondor's
//! Negotiator ad splits its cycle time alike: `LastNegotiationCyclePhase1Duration`... in
//! `src/condor_negotiator.V6/matchmaker.cpp`).
use std::time::{Duration, Instant};

/// Times the phases of one cycle: each [`Phases::end`] records the time since the previous
/// one under its phase name, and keeps it for the cycle's log line.
#[derive(Debug)]
pub struct Phases {
    last: Instant,
    done: Vec<(&'static str, Duration)>,
}

impl Phases {
    /// Starts timing at `now`.
    pub fn start(now: Instant) -> Self {
        Phases {
            last: now,
            done: Vec::new(),
        }
    }

    /// The phase `phase` ended at `now`.
    pub fn end(&mut self, phase: &'static str, now: Instant) {
        self.end_overlapped(phase, now);
        self.resume(now);
    }

    /// The phase `phase`, which ran alongside the next one from the same start, ended at
    /// `at`: the next phase is still timed from that start (so such phases add up to more
    /// than the cycle).
    pub fn end_overlapped(&mut self, phase: &'static str, at: Instant) {
        let d = at.saturating_duration_since(self.last);
        metrics::histogram!("aerie_negotiation_phase_duration_seconds", "phase" => phase)
            .record(d.as_secs_f64());
        self.done.push((phase, d));
    }

    /// The next phase is timed from `now` (after phases that ran alongside each other).
    pub fn resume(&mut self, now: Instant) {
        self.last = now;
    }

    /// The phases so far in milliseconds, `confirm=1 snapshot=40 ...`: where a slow cycle
    /// spent its time, in the log line an operator reads first.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .done
            .iter()
            .map(|(p, d)| format!("{p}={}", d.as_millis()))
            .collect();
        parts.join(" ")
    }
}

/// A cycle ended: "completed", "paused", "no_demand", "syncing", "deposed" or "failed".
pub fn record_cycle(outcome: &'static str) {
    metrics::counter!("aerie_negotiation_cycles_total", "outcome" => outcome).increment(1);
}

pub fn record_completed(d: Duration, matches: u64, refused: u64) {
    metrics::histogram!("aerie_negotiation_cycle_duration_seconds").record(d.as_secs_f64());
    metrics::counter!("aerie_negotiation_matches_total").increment(matches);
    metrics::counter!("aerie_negotiation_grants_refused_total").increment(refused);
}

pub fn set_leader(on: bool) {
    metrics::gauge!("aerie_negotiation_leader").set(if on { 1.0 } else { 0.0 });
}
