//! Leases, KILLING_TIMEOUT, CLAIM_WORKLIFE, the retirement and vacate arithmetic, claim rank
//! comparison, drains, shutdowns, `_VANILLA` forms and configuration errors.
use super::*;
use crate::policy::State::*;
use crate::policy::{Activity::*, Cause};

#[test]
fn a_claim_whose_lease_passes_is_dropped_and_its_job_evicted() {
    let mut sim = Sim::new("");
    sim.alive = false;
    sim.busy("c1", job("JobLeaseDuration = 60\n"));
    sim.at(50);
    sim.on(Event::KeepAlive {
        claim_id: "c1".into(),
    });
    sim.at(109);
    assert!(sim.tick().transitions.is_empty());
    sim.at(110);
    let step = sim.tick();
    sim.is(Preempting, Killing);
    assert!(did(&step, &hard_kill("c1")));
    let step = sim.exit("c1", false);
    assert!(did(&step, &evict("c1", Cause::LeaseExpired)));
    assert!(did(&step, &release("c1", Cause::LeaseExpired)));
    assert_eq!(step.numbers(), vec![25, 1]);
}

#[test]
fn without_job_lease_duration_the_lease_is_alives_missed_times_the_alive_interval() {
    let mut sim = Sim::new("MAX_CLAIM_ALIVES_MISSED = 6\n");
    sim.alive = false;
    sim.tick();
    let step = sim.on(Event::ClaimRequest {
        claim_id: "c1".into(),
        request: job(""),
        alive_interval: Some(10),
    });
    assert_eq!(step.numbers(), vec![5]);
    sim.at(59);
    assert!(sim.tick().transitions.is_empty());
    sim.at(60);
    // An idle claim has no job to kill: Preempting, then Owner, then Unclaimed.
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![10, 25, 1]);
}

#[test]
fn killing_timeout_sigkills_the_starter_process_tree_once() {
    let mut sim = Sim::new("KILLING_TIMEOUT = 30\n");
    sim.busy("c1", job(""));
    sim.on(Event::Vacate { fast: true });
    sim.is(Preempting, Killing);
    sim.at(29);
    assert!(sim.tick().actions.is_empty());
    sim.at(30);
    let step = sim.tick();
    assert!(did(&step, &kill_tree("c1")));
    sim.at(31);
    assert!(!did(&sim.tick(), &kill_tree("c1")));
}

#[test]
fn claim_worklife_closes_the_claim_once_its_job_ends() {
    let mut sim = Sim::new("CLAIM_WORKLIFE = 1200\n");
    sim.busy("c1", job(""));
    sim.at(1300);
    // The running job goes on past the worklife...
    assert!(sim.tick().transitions.is_empty());
    // ...but once it ends the claim closes, without preempting anything.
    let step = sim.exit("c1", true);
    assert_eq!(step.numbers(), vec![12, 10, 22, 1]);
    assert!(did(&step, &release("c1", Cause::ClaimWorklife)));
}

#[test]
fn a_claim_that_never_ran_a_job_is_not_closed_by_claim_worklife() {
    let mut sim = Sim::new("CLAIM_WORKLIFE = 10\n");
    sim.tick();
    sim.claim("c1", job(""));
    sim.at(100).on(Event::KeepAlive {
        claim_id: "c1".into(),
    });
    assert!(sim.tick().transitions.is_empty());
    sim.is(Claimed, Idle);
}

/// A slot running alice's job since T0, preempted by a better-ranked claim at `preempt_at`.
fn preempted(conf: &str, job_extra: &str, preempt_at: i64) -> Sim {
    let mut sim = Sim::new(&format!("RANK = ImageSize\n{conf}"));
    sim.busy("c1", job(job_extra));
    sim.at(preempt_at);
    sim.claim("c2", job("ImageSize = 9000\n"));
    sim
}

#[test]
fn the_retirement_clock_pauses_while_the_job_is_suspended() {
    let mut sim = preempted(
        "MAXJOBRETIREMENTTIME = 1000\nMachineMaxVacateTime = 0\nWANT_SUSPEND = True\n\
         SUSPEND = KeyboardIdle < 60\nCONTINUE = KeyboardIdle > 60\n",
        "",
        100,
    );
    sim.is(Claimed, Retiring);
    sim.at(200).set("KeyboardIdle", "1");
    sim.tick();
    sim.is(Claimed, Suspended);
    sim.at(700).set("KeyboardIdle", "1000");
    sim.tick();
    sim.is(Claimed, Retiring);
    // 1000 s of run time at 1500 s of wall time (500 s suspended).
    sim.at(1499);
    assert!(sim.tick().transitions.is_empty());
    sim.at(1500);
    assert_eq!(sim.tick().numbers(), vec![18]);
}

#[test]
fn the_smaller_of_the_machine_and_job_retirement_times_wins() {
    let conf = "MAXJOBRETIREMENTTIME = 3600\nMachineMaxVacateTime = 0\n";
    let mut sim = preempted(conf, "MaxJobRetirementTime = 100\n", 10);
    sim.at(99);
    assert!(sim.tick().transitions.is_empty());
    sim.at(100);
    assert_eq!(sim.tick().numbers(), vec![18]);
    // A job cannot ask for more than the machine gives.
    let conf = "MAXJOBRETIREMENTTIME = 100\nMachineMaxVacateTime = 0\n";
    let mut sim = preempted(conf, "MaxJobRetirementTime = 3600\n", 10);
    sim.at(100);
    assert_eq!(sim.tick().numbers(), vec![18]);
}

#[test]
fn a_smaller_job_max_vacate_time_wins() {
    let sim_step = {
        let mut sim = Sim::new("MachineMaxVacateTime = 600\n");
        sim.busy("c1", job("JobMaxVacateTime = 60\n"));
        sim.on(Event::Vacate { fast: false })
    };
    assert_eq!(soft_kill(&sim_step, "c1"), Some(60));
}

#[test]
fn a_larger_job_max_vacate_time_is_paid_from_unused_retirement() {
    // 3600 s retirement, machine vacate 600, job asks 1200: the slot vacates at 2400 s of run
    // time and grants 1200 s.
    let conf = "MAXJOBRETIREMENTTIME = 3600\nMachineMaxVacateTime = 600\n";
    let mut sim = preempted(conf, "JobMaxVacateTime = 1200\n", 10);
    sim.at(2399);
    assert!(sim.tick().transitions.is_empty());
    sim.at(2400);
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![18]);
    assert_eq!(soft_kill(&step, "c1"), Some(1200));
}

#[test]
fn a_preempting_claim_of_lower_rank_is_refused_and_of_equal_rank_preempts_by_priority() {
    let mut sim = Sim::new("RANK = ImageSize\nMAXJOBRETIREMENTTIME = 3600\n");
    sim.busy("c1", job(""));
    let step = sim.claim("c2", job("ImageSize = 10\n"));
    assert!(matches!(&step.actions[0], Action::ClaimRefused { claim_id, .. } if claim_id == "c2"));
    sim.is(Claimed, Busy);
    let step = sim.claim("c3", job(""));
    assert_eq!(step.numbers(), vec![13]);
    assert_eq!(sim.slot.cause, Some(Cause::PriorityPreemption));
    // A better preempting claim replaces the waiting one, which is refused.
    let step = sim.claim("c4", job("ImageSize = 2000\n"));
    assert!(matches!(&step.actions[0], Action::ClaimRefused { claim_id, .. } if claim_id == "c3"));
    assert_eq!(sim.slot.preempting.as_ref().unwrap().id, "c4");
}

#[test]
fn a_claim_request_start_rejects_is_refused() {
    let mut sim = Sim::new("START = Owner != \"mallory\"\n");
    sim.tick();
    let step = sim.claim("c1", job("Owner = \"mallory\"\n"));
    assert!(matches!(step.actions[0], Action::ClaimRefused { .. }));
    sim.is(Unclaimed, Idle);
}

fn drain(schedule: DrainSchedule) -> Event {
    Event::Drain(DrainRequest {
        id: "7".into(),
        schedule,
        reason: "test".into(),
        resume_on_completion: false,
        start: None,
    })
}

#[test]
fn graceful_drain_retires_the_job_and_cancelling_it_unretires() {
    let mut sim = Sim::new("MAXJOBRETIREMENTTIME = 3600\n");
    sim.busy("c1", job(""));
    let step = sim.on(drain(DrainSchedule::Graceful));
    assert_eq!(step.numbers(), vec![13]);
    sim.at(100);
    assert!(sim.tick().transitions.is_empty());
    let step = sim.on(Event::CancelDrain { request_id: None });
    assert_eq!(step.numbers(), vec![19]);
    sim.is(Claimed, Busy);
}

#[test]
fn graceful_drain_lets_the_job_finish_then_drains_the_slot() {
    let mut sim = Sim::new("MAXJOBRETIREMENTTIME = 3600\n");
    sim.busy("c1", job(""));
    sim.on(drain(DrainSchedule::Graceful));
    sim.at(500);
    let step = sim.exit("c1", true);
    assert_eq!(step.numbers(), vec![18, 22, 36, 33]);
    sim.is(Drained, Idle);
}

#[test]
fn quick_drain_skips_retirement_but_honours_vacate_time() {
    let mut sim = Sim::new("MAXJOBRETIREMENTTIME = 3600\nMachineMaxVacateTime = 300\n");
    sim.busy("c1", job(""));
    let step = sim.on(drain(DrainSchedule::Quick));
    sim.is(Preempting, Vacating);
    assert_eq!(soft_kill(&step, "c1"), Some(300));
    let step = sim.exit("c1", false);
    assert_eq!(step.numbers(), vec![22, 36, 33]);
    assert!(did(&step, &evict("c1", Cause::Drain)));
}

#[test]
fn fast_drain_kills_the_job() {
    let mut sim = Sim::new("MAXJOBRETIREMENTTIME = 3600\n");
    sim.busy("c1", job(""));
    let step = sim.on(drain(DrainSchedule::Fast));
    sim.is(Preempting, Killing);
    assert!(did(&step, &hard_kill("c1")));
    // A second drain while one is in force is refused.
    let step = sim.on(drain(DrainSchedule::Graceful));
    assert!(matches!(step.actions[0], Action::DrainRefused { .. }));
}

#[test]
fn a_peaceful_shutdown_never_kills_and_a_fast_one_kills_at_once() {
    let mut sim = Sim::new("");
    sim.busy("c1", job(""));
    sim.on(Event::Shutdown(Shutdown::Peaceful));
    sim.at(86400 * 30);
    sim.tick();
    sim.is(Claimed, Retiring);
    sim.on(Event::Shutdown(Shutdown::Fast));
    sim.is(Preempting, Killing);
}

#[test]
fn vanilla_forms_win_for_vanilla_jobs_only() {
    let conf = "WANT_SUSPEND = True\nSUSPEND = False\nSUSPEND_VANILLA = KeyboardIdle < 60\n";
    let mut sim = Sim::new(conf);
    sim.busy("c1", job(""));
    sim.at(1).set("KeyboardIdle", "1");
    assert_eq!(sim.tick().numbers(), vec![14]);
    // A non-vanilla job (JobUniverse 7, scheduler... any other universe) reads SUSPEND.
    let mut sim = Sim::new(conf);
    sim.busy("c1", job("JobUniverse = 7\n"));
    sim.at(1).set("KeyboardIdle", "1");
    assert!(sim.tick().transitions.is_empty());
}

#[test]
fn an_undefined_vanilla_form_falls_back_to_the_plain_one() {
    let conf = "WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\nSUSPEND_VANILLA = NoSuchAttr\n";
    let mut sim = Sim::new(conf);
    sim.busy("c1", job(""));
    sim.at(1).set("KeyboardIdle", "1");
    assert_eq!(sim.tick().numbers(), vec![14]);
}

#[test]
fn a_policy_expression_that_does_not_parse_names_its_knob_and_file() {
    let opts = LoadOptions {
        context: Context::subsystem("STARTD"),
        allow_commands: false,
        local_config: false,
        env_overrides: false,
    };
    let cfg = Config::parse_str("PREEMPT = (KeyboardIdle <\n", "startd.conf", &opts).unwrap();
    let err = Policy::from_config(&cfg).unwrap_err();
    assert_eq!(err.knob, "PREEMPT");
    let text = err.to_string();
    assert!(
        text.contains("PREEMPT") && text.contains("startd.conf"),
        "{text}"
    );
}

#[test]
fn htcondor_23_defaults_are_read_when_nothing_is_configured() {
    let p = Policy::default();
    assert_eq!(p.killing_timeout, 30);
    assert_eq!(p.match_timeout, 120);
    assert_eq!(p.claim_worklife, Some(1200));
    assert_eq!(p.max_claim_alives_missed, 6);
    let mut sim = Sim::new("");
    sim.busy("c1", job(""));
    // MachineMaxVacateTime = 10 * 60; MaxJobRetirementTime 0: vacated at once when preempted.
    let step = sim.on(Event::Vacate { fast: false });
    assert_eq!(soft_kill(&step, "c1"), Some(600));
}

#[test]
fn the_job_retirement_time_reads_the_injected_clock() {
    // The job's own expression uses time(): it must see the step's `now`, not the real clock.
    let conf = "MAXJOBRETIREMENTTIME = 3600\nMachineMaxVacateTime = 0\n";
    let own = format!(
        "MaxJobRetirementTime = ifThenElse(time() < {}, 3600, 0)\n",
        T0 + 500
    );
    let mut sim = preempted(conf, &own, 10);
    sim.at(499);
    assert!(sim.tick().transitions.is_empty());
    sim.at(500);
    assert_eq!(sim.tick().numbers(), vec![18]);
}

#[test]
fn owner_slots_take_matches_and_claims_unnumbered() {
    // HTCondor's match_info and request_claim accept an Owner slot whose START takes the job
    // ("the resource is available to run a job, regardless of if it is in the Owner or
    // Unclaimed state"); the diagram numbers neither move.
    let mut sim = Sim::new("IS_OWNER = True\n");
    let step = sim.match_notice("c1");
    assert_eq!(step.transitions[0].number, None);
    sim.is(Matched, Idle);
    let step = sim.claim("c1", job(""));
    assert_eq!(step.numbers(), vec![9]);
    let mut sim = Sim::new("IS_OWNER = True\n");
    let step = sim.claim("c1", job(""));
    assert_eq!(step.transitions[0].number, None);
    sim.is(Claimed, Idle);
}

#[test]
fn the_access_point_releasing_a_busy_claim_vacates_its_job() {
    let mut sim = Sim::new("MAXJOBRETIREMENTTIME = 3600\n");
    sim.busy("c1", job(""));
    let step = sim.on(Event::ReleaseClaim {
        claim_id: "c1".into(),
    });
    sim.is(Preempting, Vacating);
    assert_eq!(soft_kill(&step, "c1"), Some(600));
    let step = sim.exit("c1", false);
    assert!(did(&step, &release("c1", Cause::Released)));
}

#[test]
fn a_keep_alive_renews_the_lease_without_evaluating_the_policy() {
    let mut sim = Sim::new("START = KeyboardIdle > 600\n");
    sim.tick();
    sim.claim("c1", job(""));
    sim.at(5).set("KeyboardIdle", "0");
    let step = sim.on(Event::KeepAlive {
        claim_id: "c1".into(),
    });
    assert!(step.transitions.is_empty() && step.actions.is_empty());
    assert_eq!(
        sim.slot.claim.as_ref().unwrap().lease_expires_at,
        T0 + 5 + 1800
    );
}

#[test]
fn an_activation_the_slot_no_longer_matches_is_refused_and_the_rank_follows_the_job() {
    let mut sim = Sim::new("RANK = ImageSize\nSTART = ImageSize < 5000\n");
    sim.tick();
    sim.claim("c1", job(""));
    assert_eq!(sim.attr("CurrentRank").as_number(), Some(1000.0));
    let step = sim.activate("c1", job("ImageSize = 6000\n"));
    assert!(matches!(step.actions[0], Action::ActivationRefused { .. }));
    sim.is(Claimed, Idle);
    sim.activate("c1", job("ImageSize = 2000\n"));
    sim.is(Claimed, Busy);
    assert_eq!(sim.attr("CurrentRank").as_number(), Some(2000.0));
}

#[test]
fn a_drain_gives_up_a_match_and_drains_the_slot() {
    // HTCondor's retire_claim on a Matched slot sends it to Owner; Owner then drains (36).
    let mut sim = Sim::new("");
    sim.tick();
    sim.match_notice("c1");
    let step = sim.on(drain(DrainSchedule::Graceful));
    assert_eq!(step.numbers(), vec![8, 36, 33]);
    sim.is(Drained, Idle);
}
