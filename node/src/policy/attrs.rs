//! The attributes the state machine owns in the slot ad (HTCondor's `ResState::publish`,
//! `Claim::publish`, `Reqexp::unavail` and `ResMgr::publish_draining_attrs`): `State`,
//! `Activity`, `EnteredCurrentState`, `EnteredCurrentActivity`, `CurrentRank`, the claim's
//! `RemoteUser`/`RemoteOwner`, the job's `JobId`/`JobStart`, a preempting claim's
//! `PreemptingRank`/`PreemptingUser`, the drain's `Draining`/`DrainReason`/`DrainingRequestId`,
//! a drain's START expression as `Start`, `AcceptedWhileDraining`, and `Requirements = False`
//! while the slot takes no new match (Matched, Preempting, Drained without a drain START, or
//! Claimed with a preempting claim waiting).
use super::claim::Claim;
use super::machine::Slot;
use super::state::State;
use classad::{ClassAd, Expr, Value};

/// The slot's own attributes, to lay over the machine ad.
pub fn own_attrs(slot: &Slot) -> ClassAd {
    let mut ad = ClassAd::new();
    ad.insert_str("State", slot.state.as_str());
    ad.insert_str("Activity", slot.activity.as_str());
    ad.insert_int("EnteredCurrentState", slot.entered_state);
    ad.insert_int("EnteredCurrentActivity", slot.entered_activity);
    ad.insert_real("CurrentRank", slot.claim.as_ref().map_or(0.0, |c| c.rank));
    if let Some(c) = &slot.claim {
        publish_user(&mut ad, c, "RemoteUser", "RemoteOwner");
        if let Some(job) = &c.job {
            ad.insert_int("JobStart", job.started_at);
            if let (Some(cluster), Some(proc_)) = (
                job.ad.eval_attr("ClusterId").as_int(),
                job.ad.eval_attr("ProcId").as_int(),
            ) {
                ad.insert_str("JobId", &format!("{cluster}.{proc_}"));
            }
        }
    }
    if let Some(p) = &slot.preempting {
        ad.insert_real("PreemptingRank", p.rank);
        publish_user(&mut ad, p, "PreemptingUser", "PreemptingOwner");
    }
    if let Some(c) = &slot.claim {
        ad.insert_bool("AcceptedWhileDraining", c.accepted_while_draining);
    }
    if let Some(d) = &slot.drain {
        ad.insert_bool("Draining", true);
        ad.insert_str("DrainReason", &d.reason);
        ad.insert_str("DrainingRequestId", &d.id);
        // `Reqexp::unavail(start_expr)`: the drain's START replaces the slot's.
        if let Some(start) = d.backfill_start() {
            ad.insert_shared("Start", start.expr.clone());
        }
    }
    if unavailable(slot) {
        ad.insert("Requirements", Expr::Lit(Value::Bool(false)));
    }
    ad
}

/// Whether the slot advertises `Requirements = False`.
pub fn unavailable(slot: &Slot) -> bool {
    let backfill = slot
        .drain
        .as_ref()
        .is_some_and(|d| d.backfill_start().is_some());
    match slot.state {
        State::Matched | State::Preempting => true,
        State::Drained => !backfill,
        _ => slot.preempting.is_some(),
    }
}

fn publish_user(ad: &mut ClassAd, c: &Claim, user_attr: &str, owner_attr: &str) {
    let user = c.request.eval_attr("User");
    let owner = c.request.eval_attr("Owner");
    if let Some(u) = user.as_str().or(owner.as_str()) {
        ad.insert_str(user_attr, u);
    }
    if let Some(o) = owner.as_str().or(user.as_str()) {
        ad.insert_str(owner_attr, o);
    }
}
