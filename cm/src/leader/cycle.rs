//! One negotiation cycle as the leader runs it (steps 1 to 9 of the module doc), separate
//! from the timer loop in `driver` so it can be driven directly.
use super::grants::{build_grants, deliver, Delivery};
use super::negotiator_ad::{negotiator_ad, negotiator_name, AdFacts};
use super::requests::fetch_jobs;
use super::snapshot::PoolSnapshot;
use super::stats::Phases;
use super::tick::{claimed_usage, tick_time, Anchor};
use super::Leader;
use crate::collector::service::unix_now;
use crate::raft::leadership::ConfirmError;
use crate::raft::propose::{propose, ProposeError};
use aerie_core::accountant::AccountantCommand;
use aerie_core::negotiator::requests::significant_names;
use aerie_core::negotiator::{negotiate, LimitedBy, NegotiationInput};
use aerie_core::state::{Command, CommandResponse, CycleRecord};
use std::time::Instant;

/// How a cycle ended.
#[derive(Debug)]
pub enum CycleEnd {
    /// Ran to the end; its record is committed.
    Completed(Box<Completed>),
    /// The replicated pause flag is set; nothing was done.
    Paused,
    /// This CM stopped leading term `term` during the cycle; nothing more was sent.
    Deposed {
        /// The step at which it noticed (`confirm`, `tick`, `negotiate`, `deliver`, `record`).
        step: &'static str,
    },
    /// No submitter ads: no access point has jobs, so there is nothing to negotiate and
    /// nothing is committed (an idle pool does not grow the Raft log; the next tick charges
    /// the whole elapsed interval, and without submitters no job holds a slot to charge).
    NoDemand,
    /// This CM restarted and its collector has not yet compared its table with a peer's (it
    /// sees only the nodes that updated since): nothing is charged or negotiated until it has,
    /// for at most a few digest intervals (`AdTable::peer_synced`).
    Syncing,
}

/// The figures of a completed cycle.
#[derive(Debug)]
pub struct Completed {
    /// The committed cycle record.
    pub record: CycleRecord,
    /// What the access points made of the grants.
    pub delivery: Delivery,
    /// What the Negotiator ad showed.
    pub facts: AdFacts,
    /// Each phase's time in milliseconds (`Phases::summary`).
    pub phases: String,
}

/// Why a cycle could not run (logged by the caller; the next cycle tries again).
pub type CycleError = String;

impl Leader {
    /// The anchor of this CM's tick times, after replacing it with `set` if given.
    fn tick_anchor(&self, set: Option<Anchor>) -> Option<Anchor> {
        let mut a = self.tick_anchor.lock().unwrap_or_else(|p| p.into_inner());
        if set.is_some() {
            *a = set;
        }
        *a
    }

    /// Whether this CM still leads `term`.
    pub fn leads(&self, term: u64) -> bool {
        self.leadership.leads(term)
    }

    /// Commits one command; `Ok(None)` when leadership was lost.
    async fn commit(&self, cmd: Command) -> Result<Option<CommandResponse>, String> {
        match propose(self.leadership.raft(), cmd, self.knobs.ap_timeout * 2).await {
            Ok(c) => Ok(Some(c.response)),
            Err(ProposeError::NotLeader { .. }) => Ok(None),
            Err(e @ ProposeError::Timeout(_)) => Err(format!("commit {e}")),
            Err(ProposeError::Fatal(e)) => Err(format!("commit failed: {e}")),
        }
    }

    /// Runs cycle number `cycle` of `term` (the caller picks the number; it must grow);
    /// `requested` is the `cycle-now` counter the caller has acted on.
    pub async fn run_cycle(
        &self,
        term: u64,
        cycle: u64,
        requested: u64,
    ) -> Result<CycleEnd, CycleError> {
        let started = Instant::now();
        let mut phases = Phases::start(started);
        // 1. Everything committed before this point is applied here. 2. The pool as this
        // CM's collector sees it, taken while the confirmation is in flight: the collector's
        // table is not Raft state, and a new leader's first confirmation waits for its term's
        // first entry to commit (a tenth of a second or more, as long as the snapshot).
        let confirm = async {
            let r = self.leadership.confirm(self.knobs.ap_timeout).await;
            (r, Instant::now())
        };
        // On a thread of its own: on an async worker it held up the confirmation it was
        // meant to overlap (Raft's core runs on those workers).
        let table = self.table.clone();
        let take = tokio::task::spawn_blocking(move || {
            let t = table.read().unwrap_or_else(|p| p.into_inner());
            t.peer_synced(Instant::now())
                .then(|| (PoolSnapshot::take(&t), Instant::now()))
        });
        let ((confirmed, confirmed_at), taken) = tokio::join!(confirm, take);
        let taken = taken.map_err(|e| format!("pool snapshot task failed: {e}"))?;
        match confirmed {
            Err(ConfirmError::Timeout(_)) => return Err("leadership not confirmed in time".into()),
            Err(ConfirmError::NotLeader) => return Ok(CycleEnd::Deposed { step: "confirm" }),
            Ok(()) => {}
        }
        if !self.leads(term) {
            return Ok(CycleEnd::Deposed { step: "confirm" });
        }
        phases.end_overlapped("confirm", confirmed_at);
        // The policy in force now is the one this cycle negotiates with and records.
        let (paused, state_now, last_tick, cfg, policy_version, knobs) = {
            let a = self.state.read().unwrap_or_else(|p| p.into_inner());
            let (cfg, version, warnings) = a.state.policy_config(&self.config);
            for w in warnings {
                tracing::warn!(term, cycle, "{w}");
            }
            (
                a.state.negotiator.paused,
                a.state.now,
                a.state.accountant.last_tick(),
                cfg,
                version,
                self.cycle_knobs(a.state.policy.as_ref()),
            )
        };
        let use_slot_weights = cfg.use_slot_weights;
        if paused {
            return Ok(CycleEnd::Paused);
        }

        let Some((snap, taken_at)) = taken else {
            return Ok(CycleEnd::Syncing);
        };
        phases.end_overlapped("snapshot", taken_at);
        phases.resume(Instant::now());
        if snap.submitters.is_empty() {
            return Ok(CycleEnd::NoDemand);
        }

        // 3. Charge usage up to now; time never runs backwards across leaders.
        let max_step = (knobs.interval * 10).max(std::time::Duration::from_secs(600));
        let (wall, mono) = (unix_now(), Instant::now());
        let steady = self.tick_anchor(None).and_then(|a| a.steady(term, mono));
        let (now, clock) = tick_time(
            wall,
            state_now,
            last_tick,
            max_step.as_secs() as i64,
            steady,
        );
        if steady.is_none() {
            // The term's first tick: later ones measure from here.
            self.tick_anchor(Some(Anchor {
                term,
                time: now,
                at: mono,
            }));
        }
        metrics::gauge!("aerie_negotiation_clock_offset_seconds").set(clock.offset as f64);
        if let Some(w) = clock.warning {
            tracing::warn!(term, cycle, offset_seconds = clock.offset, "{w}");
        }
        let usage = claimed_usage(&snap.slots, use_slot_weights);
        let name = negotiator_name(&self.addr);
        let aps = snap.access_points();
        let significant = significant_names(&cfg, &snap.slots);
        phases.end("significant", Instant::now());

        // 4. The tick's commit and the access points' idle jobs at once: neither needs the
        // other, and both mostly wait (a quorum's fsync; the access points' answers).
        let tick = async {
            let r = self
                .commit(Command::Accountant(AccountantCommand::Tick { now, usage }))
                .await;
            (r, Instant::now())
        };
        let fetch = fetch_jobs(aps, term, cycle, &name, significant, self.knobs.ap_timeout);
        let ((ticked, tick_done), jobs) = tokio::join!(tick, fetch);
        match ticked? {
            None => return Ok(CycleEnd::Deposed { step: "tick" }),
            Some(r) if !r.ok => {
                tracing::warn!(term, cycle, error = %r.error, "accountant tick refused; negotiating with the ledger as it is")
            }
            Some(_) => {}
        }
        phases.end_overlapped("tick", tick_done);
        phases.end("requests", Instant::now());

        // 5. The ledger after the tick (the policy was taken at step 1).
        let (acct, prev_end) = {
            let a = self.state.read().unwrap_or_else(|p| p.into_inner());
            let s = &a.state;
            (s.accountant.clone(), s.cycles.back().map(|r| r.end_time))
        };

        // 6. Negotiate off the async threads.
        if !self.leads(term) {
            return Ok(CycleEnd::Deposed { step: "negotiate" });
        }
        // The ads move into the task and come back with the outcome: cloning, then
        // dropping, 150,000 ads cost a tenth of a second at 50,000 slots.
        let mut snap = snap;
        let mut jobs = jobs;
        let input = NegotiationInput {
            slots: std::mem::take(&mut snap.slots),
            jobs: std::mem::take(&mut jobs.jobs),
        };
        // Bounded in time: every evaluation is bounded (classad::MAX_EVAL_STEPS), but many
        // expensive ones can still add up. A thread cannot be stopped; its outcome is dropped.
        let limit = knobs.max_cycle_time;
        let task = tokio::task::spawn_blocking(move || {
            let outcome = negotiate(&input, &acct, &cfg, now);
            (outcome, input)
        });
        let outcome = match tokio::time::timeout(limit, task).await {
            Err(_) => {
                return Err(format!(
                    "matchmaking took longer than NEGOTIATOR_MAX_TIME_PER_CYCLE ({} s): \
                     abandoned, no grant sent",
                    limit.as_secs()
                ))
            }
            Ok(r) => {
                let (outcome, input) = r.map_err(|e| format!("negotiation task failed: {e}"))?;
                snap.slots = input.slots;
                jobs.jobs = input.jobs;
                outcome
            }
        };
        phases.end("matchmaking", Instant::now());
        for w in &outcome.warnings {
            tracing::warn!(term, cycle, "negotiator: {w}");
        }
        if !self.leads(term) {
            return Ok(CycleEnd::Deposed { step: "deliver" });
        }

        // 7. Grants to the access points that offered the jobs, only while a fresh
        // confirmation of leadership holds: the quorum may have gone while we negotiated.
        let mut grants = build_grants(
            &outcome,
            &snap,
            &jobs.origin,
            &jobs.access_points,
            &jobs.autocluster,
        );
        phases.end("build_grants", Instant::now());
        let undeliverable = grants.undeliverable.len() as u64;
        // Signed before the lease is taken: the lease (80 % of the shortest election timeout)
        // is then all for delivery. A grant signed by a leader that turns out deposed is never
        // sent.
        if let Some(signer) = super::grants::leader_signer() {
            super::grants::sign_grants(&mut grants, signer, term, unix_now());
        }
        phases.end("sign", Instant::now());
        let lease_end = match self
            .leadership
            .confirm_lease(self.knobs.ap_timeout, self.lease)
            .await
        {
            Ok(end) => end,
            Err(ConfirmError::NotLeader) => return Ok(CycleEnd::Deposed { step: "deliver" }),
            Err(ConfirmError::Timeout(_)) => {
                return Err("leadership not confirmed before delivery: no grant sent".into())
            }
        };
        if !self.leads(term) {
            return Ok(CycleEnd::Deposed { step: "deliver" });
        }
        phases.end("lease", Instant::now());
        let mut delivery = deliver(
            grants,
            term,
            cycle,
            self.id,
            self.knobs.ap_timeout,
            lease_end,
        )
        .await;
        delivery.refused += undeliverable;
        phases.end("deliver", Instant::now());

        // 8. The cycle record.
        // From the tick time and the elapsed time, not the wall clock: a clock jump must not
        // carry the replicated time (and with it the next tick) along.
        let end_time = now.saturating_add(started.elapsed().as_secs() as i64);
        let rejections = outcome
            .stats
            .get("LastNegotiationCycleRejections0")
            .copied()
            .unwrap_or(outcome.rejections.len() as f64) as u64;
        let record = CycleRecord {
            term,
            cycle,
            start_time: now,
            end_time,
            slots: snap.slots.len() as u64,
            submitters: outcome.submitters.len() as u64,
            matches: outcome.matches.len() as u64,
            rejections,
            leader_id: self.id,
            duration_seconds: started.elapsed().as_secs_f64(),
            idle_jobs: jobs.jobs.len() as u64,
            access_points: jobs.access_points.len() as u64,
            access_points_failed: jobs.failed.len() as u64,
            grants_accepted: delivery.accepted,
            grants_refused: delivery.refused,
            matched_by_submitter: outcome
                .matches_by_submitter()
                .into_iter()
                .map(|(k, v)| (k, v as u64))
                .collect(),
            requested,
            policy_version,
            groups: outcome.groups.iter().map(|g| g.quota_record()).collect(),
        };
        match self.commit(Command::RecordCycle(record.clone())).await? {
            None => return Ok(CycleEnd::Deposed { step: "record" }),
            Some(r) if !r.ok => {
                tracing::warn!(term, cycle, error = %r.error, "cycle record refused")
            }
            Some(_) => {}
        }
        phases.end("record", Instant::now());

        // 9. The Negotiator ad.
        let facts = AdFacts {
            addr: self.addr.clone(),
            term,
            leader_id: self.id,
            paused: false,
            cycle_requests_seen: 0,
            last: Some(record.clone()),
            previous_end: prev_end,
            stats: outcome.stats.clone(),
            share_limited: outcome
                .submitters
                .iter()
                .filter(|s| s.limited_by == LimitedBy::Share)
                .map(|s| s.name.clone())
                .collect(),
            failed_aps: jobs.failed.iter().map(|(a, _)| a.clone()).collect(),
        };
        Ok(CycleEnd::Completed(Box::new(Completed {
            record,
            delivery,
            facts,
            phases: phases.summary(),
        })))
    }

    /// Stores the Negotiator ad in this CM's collector table.
    pub fn publish_ad(&self, facts: &AdFacts) {
        let ad = negotiator_ad(facts);
        let mut t = self.table.write().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = t.advertise(ad, unix_now()) {
            tracing::warn!(error = %e, "Negotiator ad refused by the local collector");
        }
    }
}
