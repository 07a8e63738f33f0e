//! One test per numbered transition of the seed's state diagram (seed 001 §3.5.7), named by
//! its number. Benchmarking (3, 4) and backfill (7, 26-32) are left out.
use super::*;
use crate::policy::State::*;
use crate::policy::{Activity::*, Cause};

/// The seed's reconstructed default IS_OWNER, a function of START.
const SHARED_DESKTOP: &str = "IS_OWNER = (START =?= False)\n";

#[test]
fn transition_1_owner_to_unclaimed_when_start_is_not_false() {
    // Seed example: KeyboardIdle is 34 s. With `&&` START is locally FALSE (Owner is
    // undefined, and anything && FALSE is FALSE): the slot stays in Owner.
    let mut sim = Sim::new(&format!(
        "{SHARED_DESKTOP}START = KeyboardIdle > 15 * $(MINUTE) && Owner == \"coltrane\"\n"
    ));
    sim.set("KeyboardIdle", "34");
    assert!(sim.tick().transitions.is_empty());
    sim.is(Owner, Idle);
    // With `||` START is UNDEFINED locally (FALSE || UNDEFINED): transition 1.
    let mut sim = Sim::new(&format!(
        "{SHARED_DESKTOP}START = KeyboardIdle > 15 * $(MINUTE) || Owner == \"coltrane\"\n"
    ));
    sim.set("KeyboardIdle", "34");
    assert_eq!(sim.tick().numbers(), vec![1]);
    sim.is(Unclaimed, Idle);
    assert_eq!(sim.slot.entered_state, T0);
}

#[test]
fn transition_1_uses_htcondor_23_default_is_owner_false() {
    // HTCondor 23.9.6's IS_OWNER default is False (condor_config_val IS_OWNER), so even a
    // START that is locally false leaves Owner.
    let mut sim = Sim::new("START = False\n");
    assert_eq!(sim.tick().numbers(), vec![1]);
    sim.is(Unclaimed, Idle);
}

#[test]
fn transition_2_unclaimed_to_owner_when_is_owner_becomes_true() {
    let mut sim = Sim::new(&format!(
        "{SHARED_DESKTOP}START = KeyboardIdle > 15 * $(MINUTE)\n"
    ));
    sim.tick();
    sim.is(Unclaimed, Idle);
    sim.at(60).set("KeyboardIdle", "5");
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![2]);
    sim.is(Owner, Idle);
    assert_eq!(sim.slot.entered_state, T0 + 60);
    assert!(did(&step, &Action::SendAd));
}

#[test]
fn transition_5_unclaimed_to_claimed_when_the_schedd_claims_before_the_match_notice() {
    let mut sim = Sim::new("");
    sim.tick();
    let step = sim.claim("c1", job(""));
    assert_eq!(step.numbers(), vec![5]);
    sim.is(Claimed, Idle);
    assert!(did(&step, &accepted("c1")));
    assert_eq!(sim.attr("RemoteOwner").as_str(), Some("alice"));
    assert_eq!(sim.attr("RemoteUser").as_str(), Some("alice@ap"));
}

#[test]
fn transition_6_unclaimed_to_matched_on_the_match_notification() {
    let mut sim = Sim::new("");
    sim.tick();
    let step = sim.match_notice("c1");
    assert_eq!(step.numbers(), vec![6]);
    sim.is(Matched, Idle);
    // A matched slot lies about its START: Requirements = False.
    assert_eq!(sim.attr("Requirements"), classad::Value::Bool(false));
}

#[test]
fn transition_8_matched_to_owner_when_match_timeout_passes() {
    let mut sim = Sim::new("MATCH_TIMEOUT = 120\n");
    sim.tick();
    sim.match_notice("c1");
    sim.at(119);
    assert!(sim.tick().transitions.is_empty());
    sim.is(Matched, Idle);
    sim.at(120);
    // Back to Owner, and at once on to Unclaimed ("it will probably leave the Owner state
    // right away").
    assert_eq!(sim.tick().numbers(), vec![8, 1]);
    sim.is(Unclaimed, Idle);
    assert!(sim.slot.matched.is_none());
}

#[test]
fn transition_8_is_not_taken_on_start_false_as_htcondor_does_not_check_it() {
    // The seed says a START locally FALSE also sends Matched to Owner; HTCondor's
    // ResState::eval_policy (matched_state) checks neither START nor IS_OWNER and waits
    // for the claim or MATCH_TIMEOUT. The real behaviour wins.
    let mut sim = Sim::new("START = KeyboardIdle > 600\n");
    sim.tick();
    sim.match_notice("c1");
    sim.at(10).set("KeyboardIdle", "0");
    assert!(sim.tick().transitions.is_empty());
    sim.is(Matched, Idle);
}

#[test]
fn transition_9_matched_to_claimed_when_claimed_within_match_timeout() {
    let mut sim = Sim::new("");
    sim.tick();
    sim.match_notice("c1");
    sim.at(30);
    // Another claim id than the match's is refused.
    let refused = sim.claim("other", job(""));
    assert!(matches!(refused.actions[0], Action::ClaimRefused { .. }));
    sim.is(Matched, Idle);
    let step = sim.claim("c1", job(""));
    assert_eq!(step.numbers(), vec![9]);
    sim.is(Claimed, Idle);
    assert_eq!(sim.slot.entered_state, T0 + 30);
}

#[test]
fn transition_10_claimed_idle_to_preempting_when_start_becomes_false() {
    let mut sim = Sim::new("START = KeyboardIdle > 600\n");
    sim.tick();
    sim.claim("c1", job(""));
    sim.at(5).set("KeyboardIdle", "3");
    let step = sim.tick();
    // No starter: Preempting only tells the access point the claim is broken, then the slot
    // goes to the owner (22) and, IS_OWNER being false, on to Unclaimed (1).
    assert_eq!(step.numbers(), vec![10, 22, 1]);
    assert!(did(&step, &release("c1", Cause::StartFalse)));
    assert!(!step
        .actions
        .iter()
        .any(|a| matches!(a, Action::SoftKill { .. })));
}

#[test]
fn transition_10_claimed_idle_to_preempting_on_condor_vacate() {
    let mut sim = Sim::new("");
    sim.tick();
    sim.claim("c1", job(""));
    let step = sim.on(Event::Vacate { fast: false });
    assert_eq!(step.transitions[0].number, Some(10));
    assert_eq!(step.transitions[0].to, (Preempting, Vacating));
    sim.is(Unclaimed, Idle);
}

#[test]
fn transition_11_claimed_idle_to_busy_when_the_claim_is_activated() {
    let mut sim = Sim::new("");
    sim.tick();
    sim.claim("c1", job(""));
    sim.at(3);
    let step = sim.activate("c1", job(""));
    assert_eq!(step.numbers(), vec![11]);
    sim.is(Claimed, Busy);
    assert!(did(&step, &start_job("c1")));
    assert_eq!(sim.attr("JobStart").as_int(), Some(T0 + 3));
    assert_eq!(sim.attr("JobId").as_str(), Some("7.0"));
    // The claim's rank is now the job's.
    assert_eq!(sim.attr("CurrentRank").as_number(), Some(0.0));
    // A second activation of a busy claim is refused.
    let again = sim.activate("c1", job(""));
    assert!(matches!(again.actions[0], Action::ActivationRefused { .. }));
}

#[test]
fn transition_12_busy_to_idle_when_the_starter_exits() {
    let mut sim = Sim::new("");
    sim.busy("c1", job(""));
    sim.at(100);
    let step = sim.exit("c1", true);
    assert_eq!(step.numbers(), vec![12]);
    sim.is(Claimed, Idle);
    assert!(!step
        .actions
        .iter()
        .any(|a| matches!(a, Action::EvictJob { .. })));
}

#[test]
fn transition_13_busy_to_retiring_when_preempt_is_true_and_want_suspend_is_not() {
    let mut sim = Sim::new("PREEMPT = KeyboardIdle < 60\nMAXJOBRETIREMENTTIME = 3600\n");
    sim.busy("c1", job(""));
    sim.at(10).set("KeyboardIdle", "1");
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![13]);
    sim.is(Claimed, Retiring);
    assert!(sim.slot.claim.as_ref().unwrap().preempt_was_true);
}

#[test]
fn transition_13_busy_to_retiring_for_a_better_ranked_claim() {
    let mut sim = Sim::new("RANK = ImageSize\nMAXJOBRETIREMENTTIME = 3600\n");
    sim.busy("c1", job(""));
    sim.at(10);
    let step = sim.claim("c2", job("ImageSize = 5000\nOwner = \"bob\"\n"));
    assert_eq!(step.numbers(), vec![13]);
    sim.is(Claimed, Retiring);
    assert_eq!(sim.slot.cause, Some(Cause::RankPreemption));
    assert_eq!(sim.attr("PreemptingRank").as_number(), Some(5000.0));
    assert_eq!(sim.attr("CurrentRank").as_number(), Some(1000.0));
    // No answer to the preempting claim until the preemption is over.
    assert!(!step
        .actions
        .iter()
        .any(|a| matches!(a, Action::ClaimAccepted { .. })));
    assert_eq!(sim.attr("Requirements"), classad::Value::Bool(false));
}

#[test]
fn transition_14_busy_to_suspended_when_want_suspend_and_suspend_are_true() {
    let mut sim = Sim::new("WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\n");
    sim.busy("c1", job(""));
    sim.at(10).set("KeyboardIdle", "1");
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![14]);
    sim.is(Claimed, Suspended);
    assert!(did(&step, &suspend_job("c1")));
}

#[test]
fn transition_15_suspended_to_busy_when_continue_is_true() {
    let mut sim = Sim::new(
        "WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\nCONTINUE = KeyboardIdle > 300\n",
    );
    sim.busy("c1", job(""));
    sim.at(10).set("KeyboardIdle", "1");
    sim.tick();
    sim.at(400).set("KeyboardIdle", "301");
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![15]);
    sim.is(Claimed, Busy);
    assert!(did(&step, &continue_job("c1")));
}

#[test]
fn transition_16_suspended_to_retiring_when_preempt_is_true() {
    let mut sim = Sim::new(
        "WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\nCONTINUE = False\n\
         PREEMPT = Activity == \"Suspended\" && $(ActivityTimer) > 600\n\
         MAXJOBRETIREMENTTIME = 3600\n",
    );
    sim.busy("c1", job(""));
    sim.at(10).set("KeyboardIdle", "1");
    sim.tick();
    sim.at(610);
    assert!(sim.tick().transitions.is_empty());
    sim.at(611);
    let step = sim.tick();
    // Into Retiring (16), which resumes the job (HTCondor's ResState::leave_action); entering
    // Retiring re-evaluates at once, and SUSPEND still holds, so the retiring job is
    // suspended again (20), its retirement clock paused: ResState::eval_policy checks
    // SUSPEND for Busy and Retiring alike.
    assert_eq!(step.numbers(), vec![16, 20]);
    sim.is(Claimed, Suspended);
    let id = || "c1".to_string();
    let signals: Vec<_> = step
        .actions
        .iter()
        .filter(|a| matches!(a, Action::ContinueJob { .. } | Action::SuspendJob { .. }))
        .collect();
    assert_eq!(
        signals,
        vec![
            &Action::ContinueJob { claim_id: id() },
            &Action::SuspendJob { claim_id: id() }
        ]
    );
    assert!(sim.slot.claim.as_ref().unwrap().preempt_was_true);
    // Once the owner leaves, CONTINUE goes back to Retiring (16), never to Busy.
    sim.at(700).set("KeyboardIdle", "1000");
    sim.policy = policy(
        "WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\nCONTINUE = KeyboardIdle > 300\n\
         MAXJOBRETIREMENTTIME = 3600\n",
    );
    assert_eq!(sim.tick().numbers(), vec![16]);
    sim.is(Claimed, Retiring);
}

#[test]
fn transition_16_suspended_to_retiring_when_continue_is_true_after_preemption() {
    let mut sim = Sim::new(
        "RANK = ImageSize\nMAXJOBRETIREMENTTIME = 3600\nWANT_SUSPEND = True\n\
         SUSPEND = KeyboardIdle < 60\nCONTINUE = KeyboardIdle > 300\n",
    );
    sim.busy("c1", job(""));
    sim.at(10).set("KeyboardIdle", "1");
    sim.tick();
    sim.is(Claimed, Suspended);
    sim.claim("c2", job("ImageSize = 9000\n"));
    sim.is(Claimed, Suspended);
    sim.at(20).set("KeyboardIdle", "1000");
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![16]);
    sim.is(Claimed, Retiring);
}

#[test]
fn transition_17_suspended_to_preempting_when_retirement_runs_out_while_suspended() {
    // MaxJobRetirementTime drops while the job is suspended in retirement.
    let mut sim = Sim::new(
        "RANK = ImageSize\nMAXJOBRETIREMENTTIME = ifThenElse(RetireLong =?= True, 7200, 0)\n\
         MachineMaxVacateTime = 60\nWANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\n\
         CONTINUE = False\n",
    );
    sim.set("RetireLong", "True");
    sim.busy("c1", job(""));
    sim.at(10);
    sim.claim("c2", job("ImageSize = 9000\n"));
    sim.is(Claimed, Retiring);
    sim.at(20).set("KeyboardIdle", "1");
    assert_eq!(sim.tick().numbers(), vec![20]);
    sim.at(30).set("RetireLong", "False");
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![17]);
    sim.is(Preempting, Vacating);
    assert_eq!(soft_kill(&step, "c1"), Some(60));
}

#[test]
fn transition_18_retiring_to_preempting_when_retirement_time_is_used() {
    // 3600 s of retirement, 600 s of vacate time: the slot starts vacating at 3000 s of run
    // time so that the hard kill lands exactly at 3600 s.
    let mut sim = Sim::new("PREEMPT = KeyboardIdle < 60\nMAXJOBRETIREMENTTIME = 3600\n");
    sim.busy("c1", job(""));
    sim.at(100).set("KeyboardIdle", "1");
    sim.tick();
    sim.is(Claimed, Retiring);
    sim.at(2999);
    assert!(sim.tick().transitions.is_empty());
    sim.at(3000);
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![18]);
    sim.is(Preempting, Vacating);
    assert_eq!(soft_kill(&step, "c1"), Some(600));
    assert_eq!(sim.attr("Requirements"), classad::Value::Bool(false));
}

#[test]
fn transition_18_retiring_to_preempting_when_the_job_finishes() {
    let mut sim = Sim::new("PREEMPT = KeyboardIdle < 60\nMAXJOBRETIREMENTTIME = 3600\n");
    sim.busy("c1", job(""));
    sim.at(100).set("KeyboardIdle", "1");
    sim.tick();
    sim.at(200);
    let step = sim.exit("c1", true);
    // 18 into Preempting, no starter left, so straight on to Owner (22), and, IS_OWNER being
    // false, Unclaimed (1).
    assert_eq!(step.numbers(), vec![18, 22, 1]);
    sim.is(Unclaimed, Idle);
    assert!(!step
        .actions
        .iter()
        .any(|a| matches!(a, Action::EvictJob { .. })));
    assert!(did(&step, &release("c1", Cause::Preempt)));
}

#[test]
fn transition_19_retiring_to_busy_when_the_preempting_claim_goes_away() {
    let mut sim = Sim::new("RANK = ImageSize\nMAXJOBRETIREMENTTIME = 3600\n");
    sim.busy("c1", job(""));
    sim.at(10);
    sim.claim("c2", job("ImageSize = 9000\n"));
    sim.is(Claimed, Retiring);
    sim.at(20);
    let step = sim.on(Event::ReleaseClaim {
        claim_id: "c2".into(),
    });
    assert_eq!(step.numbers(), vec![19]);
    sim.is(Claimed, Busy);
    assert!(sim.slot.preempting.is_none());
}

#[test]
fn transition_19_is_impossible_after_preempt() {
    let mut sim =
        Sim::new("RANK = ImageSize\nMAXJOBRETIREMENTTIME = 3600\nPREEMPT = KeyboardIdle < 60\n");
    sim.busy("c1", job(""));
    sim.at(10).set("KeyboardIdle", "1");
    sim.tick();
    sim.is(Claimed, Retiring);
    sim.at(20).set("KeyboardIdle", "1000");
    assert!(sim.tick().transitions.is_empty());
    sim.is(Claimed, Retiring);
}

#[test]
fn transition_20_retiring_to_suspended() {
    let mut sim = Sim::new(
        "RANK = ImageSize\nMAXJOBRETIREMENTTIME = 3600\nWANT_SUSPEND = True\n\
         SUSPEND = KeyboardIdle < 60\n",
    );
    sim.busy("c1", job(""));
    sim.at(10);
    sim.claim("c2", job("ImageSize = 9000\n"));
    sim.at(20).set("KeyboardIdle", "1");
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![20]);
    sim.is(Claimed, Suspended);
}

#[test]
fn transition_21_vacating_to_killing_when_kill_is_true() {
    let mut sim = Sim::new("PREEMPT = KeyboardIdle < 60\nKILL = KeyboardIdle < 10\n");
    sim.busy("c1", job(""));
    sim.at(10).set("KeyboardIdle", "30");
    sim.tick();
    sim.is(Preempting, Vacating);
    sim.at(11).set("KeyboardIdle", "2");
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![21]);
    sim.is(Preempting, Killing);
    assert!(did(&step, &hard_kill("c1")));
}

#[test]
fn transition_21_vacating_to_killing_when_the_vacate_time_runs_out() {
    let mut sim = Sim::new("PREEMPT = KeyboardIdle < 60\nMachineMaxVacateTime = 30\n");
    sim.busy("c1", job(""));
    sim.at(10).set("KeyboardIdle", "1");
    sim.tick();
    sim.is(Preempting, Vacating);
    sim.at(39);
    assert!(sim.tick().transitions.is_empty());
    sim.at(40);
    assert_eq!(sim.tick().numbers(), vec![21]);
    sim.is(Preempting, Killing);
}

#[test]
fn transition_22_preempting_to_owner_when_the_starter_exits_after_the_owner_came_back() {
    let mut sim = Sim::new(&format!(
        "{SHARED_DESKTOP}START = KeyboardIdle > 600\nPREEMPT = KeyboardIdle < 60\n"
    ));
    sim.busy("c1", job(""));
    sim.at(10).set("KeyboardIdle", "1");
    let step = sim.tick();
    // Zero retirement by default: 13 then 18 at once; the job gets its KillSig.
    assert_eq!(step.numbers(), vec![13, 18]);
    assert!(step.actions.iter().any(|a| matches!(a,
        Action::SoftKill { claim_id, signal, .. } if claim_id == "c1" && signal == "SIGTERM")));
    sim.at(15);
    let step = sim.exit("c1", false);
    assert_eq!(step.numbers(), vec![22]);
    sim.is(Owner, Idle);
    assert!(did(&step, &evict("c1", Cause::Preempt)));
    assert!(did(&step, &release("c1", Cause::Preempt)));
}

#[test]
fn transition_23_preempting_to_claimed_when_preempted_for_a_better_match() {
    let mut sim = Sim::new("RANK = ImageSize\n");
    sim.busy("c1", job("KillSig = \"SIGUSR1\"\n"));
    sim.at(10);
    let step = sim.claim("c2", job("ImageSize = 9000\nOwner = \"bob\"\n"));
    assert_eq!(step.numbers(), vec![13, 18]);
    assert!(step.actions.iter().any(|a| matches!(a,
        Action::SoftKill { signal, .. } if signal == "SIGUSR1")));
    sim.at(12);
    let step = sim.exit("c1", false);
    assert_eq!(step.numbers(), vec![23]);
    sim.is(Claimed, Idle);
    assert!(did(&step, &accepted("c2")));
    assert!(did(&step, &evict("c1", Cause::RankPreemption)));
    assert_eq!(sim.slot.claim.as_ref().unwrap().id, "c2");
    assert_eq!(sim.attr("RemoteOwner").as_str(), Some("bob"));
    assert_eq!(sim.attr("CurrentRank").as_number(), Some(9000.0));
}

#[test]
fn transition_24_killing_to_claimed_when_preempted_for_a_better_match() {
    let mut sim = Sim::new("RANK = ImageSize\nKILL = True\n");
    sim.busy("c1", job(""));
    sim.at(10);
    let step = sim.claim("c2", job("ImageSize = 9000\n"));
    assert_eq!(step.numbers(), vec![13, 18]);
    sim.is(Preempting, Vacating);
    // KILL is read at the next evaluation.
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![21]);
    assert!(did(&step, &hard_kill("c1")));
    let step = sim.exit("c1", false);
    assert_eq!(step.numbers(), vec![24]);
    sim.is(Claimed, Idle);
    assert!(did(&step, &accepted("c2")));
}

#[test]
fn transition_25_killing_to_owner_when_the_owner_caused_it() {
    // WANT_VACATE false with PREEMPT true: straight to Killing (HTCondor's
    // ResState::change(preempting_state)).
    let mut sim = Sim::new("PREEMPT = KeyboardIdle < 60\nWANT_VACATE = False\n");
    sim.busy("c1", job(""));
    sim.at(10).set("KeyboardIdle", "1");
    let step = sim.tick();
    assert_eq!(step.transitions.last().unwrap().to, (Preempting, Killing));
    assert!(did(&step, &hard_kill("c1")));
    let step = sim.exit("c1", false);
    assert_eq!(step.numbers(), vec![25, 1]);
    sim.is(Unclaimed, Idle);
}

fn drain(schedule: DrainSchedule, resume: bool) -> Event {
    Event::Drain(DrainRequest {
        id: "1".into(),
        schedule,
        reason: "defrag".into(),
        resume_on_completion: resume,
        start: None,
    })
}

#[test]
fn transition_33_drained_retiring_to_idle_when_all_slots_have_drained() {
    let mut sim = Sim::new("");
    sim.tick();
    sim.others_drained = false;
    sim.on(drain(DrainSchedule::Graceful, false));
    sim.is(Drained, Retiring);
    sim.others_drained = true;
    let step = sim.at(5).tick();
    assert_eq!(step.numbers(), vec![33]);
    sim.is(Drained, Idle);
    assert_eq!(sim.attr("Draining"), classad::Value::Bool(true));
    assert_eq!(sim.attr("DrainingRequestId").as_str(), Some("1"));
    assert_eq!(sim.attr("DrainReason").as_str(), Some("defrag"));
}

#[test]
fn transition_34_drained_to_owner_when_draining_is_cancelled() {
    let mut sim = Sim::new("");
    sim.tick();
    sim.on(drain(DrainSchedule::Graceful, false));
    sim.is(Drained, Idle);
    // A wrong request id is refused.
    let step = sim.on(Event::CancelDrain {
        request_id: Some("9".into()),
    });
    assert!(matches!(step.actions[0], Action::DrainRefused { .. }));
    sim.is(Drained, Idle);
    let step = sim.on(Event::CancelDrain {
        request_id: Some("1".into()),
    });
    assert_eq!(step.numbers(), vec![34, 1]);
    sim.is(Unclaimed, Idle);
    assert!(sim.attr("Draining").is_undefined());
}

#[test]
fn transition_35_drained_to_owner_when_draining_is_finalized() {
    let mut sim = Sim::new("");
    sim.tick();
    let step = sim.on(drain(DrainSchedule::Graceful, true));
    // 37 into Drained/Retiring, 33 once drained, 35 resuming on completion, 1 to Unclaimed.
    assert_eq!(step.numbers(), vec![37, 33, 35, 1]);
    sim.is(Unclaimed, Idle);
    assert!(sim.slot.drain.is_none());
}

#[test]
fn transition_36_owner_to_drained_when_draining_starts_in_owner() {
    let mut sim = Sim::new("IS_OWNER = True\n");
    sim.tick();
    sim.is(Owner, Idle);
    sim.others_drained = false;
    let step = sim.on(drain(DrainSchedule::Graceful, false));
    assert_eq!(step.numbers(), vec![36]);
    sim.is(Drained, Retiring);
    assert_eq!(sim.attr("Requirements"), classad::Value::Bool(false));
}

#[test]
fn transition_37_unclaimed_to_drained_when_draining_starts_in_unclaimed() {
    let mut sim = Sim::new("");
    sim.tick();
    sim.others_drained = false;
    let step = sim.on(drain(DrainSchedule::Quick, false));
    assert_eq!(step.numbers(), vec![37]);
    sim.is(Drained, Retiring);
    // A draining machine takes no claim.
    let step = sim.claim("c1", job(""));
    assert!(matches!(step.actions[0], Action::ClaimRefused { .. }));
}

#[test]
fn every_numbered_transition_but_benchmarking_and_backfill_has_a_test() {
    let source = include_str!("transitions.rs");
    let left_out = [3, 4, 7, 26, 27, 28, 29, 30, 31, 32];
    for n in (1..=37).filter(|n| !left_out.contains(n)) {
        assert!(
            source.contains(&format!("fn transition_{n}_")),
            "transition {n} has no test"
        );
    }
}
