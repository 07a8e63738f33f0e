//! A graceful drain across a machine's slots (the other slots' part passed in as
//! [`Sim::others`]) and backfill under a drain's START expression (`condor_drain -start`,
//! `DEFAULT_DRAINING_START_EXPR`; HTCondor's `ResMgr::startDraining`,
//! `ResMgr::gracefulDrainingTimeRemaining`, `ResMgr::checkForDrainCompletion` and
//! `Resource::retirementExpired`).
use super::*;
use crate::policy::Activity::*;
use crate::policy::State::*;

/// A graceful drain, with `start` as its START expression.
fn graceful(start: Option<&str>) -> Event {
    Event::Drain(DrainRequest {
        id: "3".into(),
        schedule: DrainSchedule::Graceful,
        reason: "defrag".into(),
        resume_on_completion: false,
        start: start.map(|s| DrainStart::parse(s).expect("test START parses")),
    })
}

/// Another slot of the machine still runs an original job with `secs` of retirement left.
fn original_elsewhere(secs: i64) -> MachineDrain {
    MachineDrain {
        retirement_remaining: secs,
        originals_running: true,
    }
}

/// A slot drained (no job of its own) while another slot's original job has an hour left.
fn drained_beside_a_long_job(start: Option<&str>) -> Sim {
    let mut sim = Sim::new("MAXJOBRETIREMENTTIME = 7200\nMachineMaxVacateTime = 60\n");
    sim.others_drained = false;
    sim.others = original_elsewhere(3600);
    sim.tick();
    sim.on(graceful(start));
    sim.is(Drained, Retiring);
    sim
}

#[test]
fn a_shorter_retirement_is_not_cut_for_its_vacate_time_while_a_longer_one_runs() {
    // This slot's job may retire for 100 s, another slot's for an hour. Alone, it would be
    // soft-killed at 40 s so that its 60 s of vacate time end with its retirement; on a
    // draining machine its retirement is the machine's while it has any of its own left
    // (Resource::retirementExpired), so it runs to 100 s.
    let mut sim = Sim::new("MAXJOBRETIREMENTTIME = 100\nMachineMaxVacateTime = 60\n");
    sim.others = original_elsewhere(3600);
    sim.busy("c1", job(""));
    sim.on(graceful(None));
    sim.is(Claimed, Retiring);
    sim.at(41);
    sim.others = original_elsewhere(3559);
    assert!(sim.tick().transitions.is_empty(), "kept past 100 - 60 s");
    sim.at(100);
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![18]);
    assert_eq!(soft_kill(&step, "c1"), Some(60));
}

#[test]
fn every_job_goes_when_the_longest_retirement_is_down_to_its_vacate_time() {
    // This job has 50 s of its own left when the longest job on the machine must begin its
    // 60 s of vacating: both go now.
    let mut sim = Sim::new("MAXJOBRETIREMENTTIME = 100\nMachineMaxVacateTime = 60\n");
    sim.others = original_elsewhere(3600);
    sim.busy("c1", job(""));
    sim.on(graceful(None));
    sim.at(49);
    sim.others = original_elsewhere(61);
    assert!(sim.tick().transitions.is_empty());
    sim.at(50);
    sim.others = original_elsewhere(60);
    assert_eq!(sim.tick().numbers(), vec![18]);
}

#[test]
fn a_job_start_no_longer_takes_keeps_only_its_own_retirement() {
    // Resource::retirementExpired coordinates only jobs the slot's START still takes.
    let conf = "START = Owner != \"bob\"\nMAXJOBRETIREMENTTIME = 100\nMachineMaxVacateTime = 60\n";
    let mut sim = Sim::new(conf);
    sim.others = original_elsewhere(3600);
    sim.busy("c1", job(""));
    sim.on(graceful(Some("Owner == \"carol\"")));
    // The drain's START (carol only) no longer takes alice's job: 100 - 60 s of vacate.
    sim.at(41);
    assert_eq!(sim.tick().numbers(), vec![18]);
}

#[test]
fn without_a_start_expression_a_drained_slot_takes_no_job() {
    let mut sim = drained_beside_a_long_job(None);
    assert_eq!(sim.attr("Requirements"), classad::Value::Bool(false));
    let step = sim.claim("b1", job(""));
    assert!(
        matches!(&step.actions[0], Action::ClaimRefused { reason, .. } if reason.contains("draining"))
    );
    sim.is(Drained, Retiring);
}

#[test]
fn a_drained_slot_takes_a_job_its_drain_start_matches_and_runs_it() {
    let mut sim = drained_beside_a_long_job(Some("Owner == \"alice\""));
    // It advertises the drain's START and no longer Requirements = False.
    assert!(sim.slot.attributes().lookup("Requirements").is_none());
    assert_eq!(
        sim.slot.attributes().lookup("Start").map(|e| e.to_string()),
        Some("Owner == \"alice\"".to_string())
    );
    let step = sim.claim("b0", job("Owner = \"bob\"\n"));
    assert!(
        matches!(step.actions[0], Action::ClaimRefused { .. }),
        "START is the drain's"
    );
    let backfill = job("");
    let step = sim.claim("b1", backfill.clone());
    assert!(did(&step, &accepted("b1")));
    sim.is(Claimed, Idle);
    assert_eq!(
        sim.attr("AcceptedWhileDraining"),
        classad::Value::Bool(true)
    );
    // It waits for its activation rather than closing for the drain.
    sim.at(1);
    assert!(sim.tick().transitions.is_empty());
    let step = sim.activate("b1", backfill);
    assert!(did(&step, &start_job("b1")));
    sim.is(Claimed, Busy);
    // Runs while the original job elsewhere has retirement left.
    sim.at(600);
    sim.others = original_elsewhere(3000);
    assert!(sim.tick().transitions.is_empty());
    sim.is(Claimed, Busy);
}

#[test]
fn jobs_accepted_while_draining_are_vacated_when_the_last_original_job_is_done() {
    let mut sim = drained_beside_a_long_job(Some("True"));
    let backfill = job("");
    sim.claim("b1", backfill.clone());
    sim.activate("b1", backfill);
    sim.is(Claimed, Busy);
    // The original job elsewhere finishes: checkForDrainCompletion.
    sim.at(900);
    sim.others = MachineDrain::default();
    let step = sim.tick();
    assert_eq!(soft_kill(&step, "b1"), Some(60));
    sim.is(Preempting, Vacating);
    // START is false from now until the drain ends.
    assert!(sim.slot.attributes().lookup("Start").is_none());
    let step = sim.exit("b1", false);
    assert!(did(&step, &evict("b1", Cause::Drain)));
    sim.is(Drained, Retiring);
    let step = sim.claim("b2", job(""));
    assert!(matches!(step.actions[0], Action::ClaimRefused { .. }));
}

#[test]
fn a_job_accepted_while_draining_without_retirement_of_its_own_is_vacated_at_once() {
    // Resource::retirementExpired synchronises only a job with retirement of its own left:
    // one that asks for none (MaxJobRetirementTime = 0) is evicted as soon as it runs.
    let mut sim = drained_beside_a_long_job(Some("True"));
    let backfill = job("MaxJobRetirementTime = 0\n");
    sim.claim("b1", backfill.clone());
    let step = sim.activate("b1", backfill);
    assert_eq!(soft_kill(&step, "b1"), Some(60));
}

#[test]
fn a_claim_accepted_while_draining_runs_one_job_only() {
    let mut sim = drained_beside_a_long_job(Some("True"));
    let backfill = job("");
    sim.claim("b1", backfill.clone());
    sim.activate("b1", backfill.clone());
    sim.at(30);
    let step = sim.exit("b1", true);
    // Idle on a draining machine: the claim closes (HTCondor's claim_is_closing).
    assert!(
        did(&step, &release("b1", Cause::Drain)),
        "{:?}",
        step.actions
    );
    let step = sim.activate("b1", backfill);
    assert!(!did(&step, &start_job("b1")));
}

#[test]
fn on_an_idle_machine_a_drain_start_takes_nothing() {
    // No original job anywhere: the final draining begins at once (an accepted job would
    // have no retirement at all).
    let mut sim = Sim::new("");
    sim.tick();
    sim.on(graceful(Some("True")));
    let step = sim.claim("b1", job(""));
    assert!(matches!(step.actions[0], Action::ClaimRefused { .. }));
}

#[test]
fn default_draining_start_expr_is_the_start_of_a_drain_that_names_none() {
    let p = policy("DEFAULT_DRAINING_START_EXPR = MaxJobRetirementTime == 0\n");
    let start = p.default_draining_start.expect("knob read");
    assert_eq!(start.text, "MaxJobRetirementTime == 0");
    assert!(policy("").default_draining_start.is_none());
}

#[test]
fn a_drain_start_that_does_not_parse_is_an_error_naming_it() {
    let e = DrainStart::parse("Owner == ").unwrap_err();
    assert!(e.contains("-start") && e.contains("Owner =="), "{e}");
}
