//! The seed's example policies (seed 001 §3.5.9; INVENTORY §10.9, §10.10), each run through
//! the transitions it is meant to cause, with the numbers it takes.
use super::*;
use crate::policy::State::*;
use crate::policy::{Activity::*, Cause};

/// The seed's "Default Policy Settings" block, as printed (continuations joined; the
/// unbalanced `MachineBusy` is kept: nothing refers to it). `IS_OWNER` is the seed's
/// reconstructed default; `SmallJob` and `IsVanilla` are HTCondor's defaults.
const SEED_DEFAULT_POLICY: &str = r#"
MINUTE          = 60
HOUR            = (60 * $(MINUTE))
StateTimer      = (CurrentTime - EnteredCurrentState)
ActivityTimer   = (CurrentTime - EnteredCurrentActivity)
ActivationTimer = (CurrentTime - JobStart)
LastCkpt        = (CurrentTime - LastPeriodicCheckpoint)
NonCondorLoadAvg        = (LoadAvg - CondorLoadAvg)
BackgroundLoad          = 0.3
HighLoad                = 0.5
StartIdleTime           = 15 * $(MINUTE)
ContinueIdleTime        = 5 * $(MINUTE)
MaxSuspendTime          = 10 * $(MINUTE)
KeyboardBusy            = KeyboardIdle < $(MINUTE)
ConsoleBusy             = (ConsoleIdle  < $(MINUTE))
CPUIdle                = $(NonCondorLoadAvg) <= $(BackgroundLoad)
CPUBusy                = $(NonCondorLoadAvg) >= $(HighLoad)
KeyboardNotBusy         = ($(KeyboardBusy) == False)
MachineBusy             = ($(CPUBusy) || $(KeyboardBusy)
WANT_SUSPEND       = ( $(SmallJob) || $(KeyboardNotBusy) \
                       || $(IsVanilla) )
WANT_VACATE        = ( $(ActivationTimer) > 10 * $(MINUTE) \
                       || $(IsVanilla) )
START        = ( (KeyboardIdle > $(StartIdleTime)) \
                  && ( $(CPUIdle) || \
                       (State != "Unclaimed" && State != "Owner")) )
SUSPEND         = ( $(KeyboardBusy) || \
                 ( (CpuBusyTime > 2 * $(MINUTE)) \
                    && $(ActivationTimer) > 90 ) )
CONTINUE        = ( $(CPUIdle) && ($(ActivityTimer) > 10) \
                  && (KeyboardIdle > $(ContinueIdleTime)) )
PREEMPT	        = ( ((Activity == "Suspended") && \
                    ($(ActivityTimer) > $(MaxSuspendTime))) \
                    || (SUSPEND && (WANT_SUSPEND == False)) )
MachineMaxVacateTime = 10 * $(MINUTE)
KILL            = False
IS_OWNER = (START =?= False)
"#;

/// The default policy on a desktop: start after 15 idle minutes; suspend on the keyboard;
/// continue after 5 idle minutes; after 10 minutes suspended, retire (0 s) and vacate.
#[test]
fn seed_default_policy_suspends_continues_then_vacates_on_keyboard_use() {
    let mut sim = Sim::new(SEED_DEFAULT_POLICY);
    sim.set("KeyboardIdle", "100");
    assert!(sim.tick().transitions.is_empty(), "owner busy: stays Owner");
    sim.at(900).set("KeyboardIdle", "1000");
    assert_eq!(sim.tick().numbers(), vec![1]);
    sim.busy("c1", job(""));
    // The owner touches the keyboard: a small vanilla job is suspended (14).
    sim.at(1000).set("KeyboardIdle", "2");
    assert_eq!(sim.tick().numbers(), vec![14]);
    // Idle 5 minutes again and suspended over 10 s: continue (15).
    sim.at(1400).set("KeyboardIdle", "301");
    assert_eq!(sim.tick().numbers(), vec![15]);
    // Back at the keyboard for good: suspended (14), then after 10 minutes PREEMPT (16),
    // no retirement (18), and WANT_VACATE is true for vanilla: Vacating with 600 s.
    sim.at(2000).set("KeyboardIdle", "2");
    assert_eq!(sim.tick().numbers(), vec![14]);
    sim.at(2600);
    assert!(sim.tick().transitions.is_empty());
    sim.at(2601);
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![16, 18]);
    sim.is(Preempting, Vacating);
    assert_eq!(soft_kill(&step, "c1"), Some(600));
    // The job leaves: back to the owner (22), who is still typing, so the slot stays Owner.
    sim.at(2610);
    assert_eq!(sim.exit("c1", false).numbers(), vec![22]);
    sim.is(Owner, Idle);
}

#[test]
fn seed_default_policy_kills_a_big_standard_job_that_ran_under_ten_minutes() {
    // Not small, not vanilla, keyboard busy: WANT_SUSPEND is false, so PREEMPT (SUSPEND and
    // not WANT_SUSPEND) retires it (13, 18); it ran under 10 minutes, so WANT_VACATE is false
    // and it is killed, not vacated.
    let mut sim = Sim::new(SEED_DEFAULT_POLICY);
    sim.busy("c1", job("JobUniverse = 1\nImageSize = 100000\n"));
    sim.at(300).set("KeyboardIdle", "2");
    let step = sim.tick();
    assert_eq!(step.numbers(), vec![13, 18]);
    sim.is(Preempting, Killing);
    assert!(did(&step, &hard_kill("c1")));
}

#[test]
fn uwcs_desktop_metaknob_suspends_a_vanilla_job_on_keyboard_use() {
    // HTCondor 23's packaged form of the seed's default policy.
    let mut sim = Sim::new("use POLICY : UWCS_DESKTOP\n");
    sim.busy("c1", job(""));
    sim.at(100).set("KeyboardIdle", "2");
    assert_eq!(sim.tick().numbers(), vec![14]);
    // IS_OWNER = (START =?= False): with the keyboard busy an unclaimed slot is Owner.
    let mut sim = Sim::new("use POLICY : UWCS_DESKTOP\n");
    sim.set("KeyboardIdle", "2");
    assert!(sim.tick().transitions.is_empty());
    sim.is(Owner, Idle);
}

#[test]
fn always_run_jobs_metaknob_never_suspends_and_retires_without_limit() {
    let mut sim = Sim::new("use POLICY : ALWAYS_RUN_JOBS\nRANK = ImageSize\n");
    sim.busy("c1", job(""));
    sim.at(100).set("KeyboardIdle", "0").set("LoadAvg", "4.0");
    assert!(sim.tick().transitions.is_empty());
    sim.claim("c2", job("ImageSize = 9000\n"));
    sim.is(Claimed, Retiring);
    sim.at(86400 * 365);
    assert!(sim.tick().transitions.is_empty());
    sim.is(Claimed, Retiring);
}

/// The seed's desktop/non-desktop policy, over the default macros. `JustCpu` is used but not
/// defined in the seed; HTCondor's POLICY_EXPR_FRAGMENTS defines it as below.
fn desktop_policy() -> String {
    format!(
        r#"{SEED_DEFAULT_POLICY}
JustCpu = ($(CPUBusy) && ($(KeyboardBusy) == False))
START = ( ($(CPUIdle) || (State != "Unclaimed" && State != "Owner")) \
          && (IsDesktop =!= True || (KeyboardIdle > $(StartIdleTime))) )
WANT_SUSPEND = ( $(SmallJob) || $(JustCpu) \
                 || $(IsVanilla) )
WANT_VACATE  = ( $(ActivationTimer) > 10 * $(MINUTE) \
                 || $(IsVanilla) )
SUSPEND = ( ((CpuBusyTime > 2 * $(MINUTE)) && ($(ActivationTimer) > 90)) \
            || ( IsDesktop =?= True && $(KeyboardBusy) ) )
CONTINUE = ( $(CPUIdle) && ($(ActivityTimer) > 300) \
             && (IsDesktop =!= True || (KeyboardIdle > $(ContinueIdleTime))) )
PREEMPT = ( ((Activity == "Suspended") && \
            ($(ActivityTimer) > $(MaxSuspendTime))) \
           || (SUSPEND && (WANT_SUSPEND == False)) )
MAXJOBRETIREMENTTIME = (IsDesktop =!= True) * 0
MachineMaxVacateTime = 10 * $(MINUTE)
KILL = False
"#
    )
}

#[test]
fn desktop_policy_suspends_on_the_keyboard_only_on_desktops() {
    let mut dedicated = Sim::new(&desktop_policy());
    dedicated.set("KeyboardIdle", "2");
    dedicated.busy("c1", job(""));
    dedicated.at(100);
    assert!(dedicated.tick().transitions.is_empty(), "keyboard ignored");
    dedicated.is(Claimed, Busy);

    let mut desktop = Sim::new(&desktop_policy());
    desktop.set("IsDesktop", "True");
    desktop.busy("c1", job(""));
    desktop.at(100).set("KeyboardIdle", "2");
    assert_eq!(desktop.tick().numbers(), vec![14]);
    // CONTINUE waits for 300 s suspended and 5 idle minutes.
    desktop.at(400).set("KeyboardIdle", "1000");
    assert!(desktop.tick().transitions.is_empty());
    desktop.at(401);
    assert_eq!(desktop.tick().numbers(), vec![15]);
}

#[test]
fn desktop_policy_start_needs_idle_keyboard_on_desktops_only() {
    let mut desktop = Sim::new(&desktop_policy());
    desktop.set("IsDesktop", "True").set("KeyboardIdle", "60");
    desktop.tick();
    desktop.is(Owner, Idle);
    let mut dedicated = Sim::new(&desktop_policy());
    dedicated.set("KeyboardIdle", "60");
    assert_eq!(dedicated.tick().numbers(), vec![1]);
}

/// The seed's MaxJobRetirementTime example: 3600 s, unless a preempting claim ranks 600 or more.
const RETIREMENT_EXAMPLE: &str = "RANK = ImageSize\n\
    MAXJOBRETIREMENTTIME = 3600 * (MY.PreemptingRank =?= UNDEFINED || PreemptingRank < 600)\n\
    MachineMaxVacateTime = 0\n";

#[test]
fn max_job_retirement_time_example_gives_an_hour_to_ordinary_preemptors() {
    let mut sim = Sim::new(RETIREMENT_EXAMPLE);
    sim.busy("c1", job("ImageSize = 100\n"));
    sim.at(10);
    assert_eq!(
        sim.claim("c2", job("ImageSize = 500\n")).numbers(),
        vec![13]
    );
    sim.at(3599);
    assert!(sim.tick().transitions.is_empty());
    sim.at(3600);
    assert_eq!(sim.tick().numbers(), vec![18]);
}

#[test]
fn max_job_retirement_time_example_preempts_at_once_for_preempting_rank_600() {
    let mut sim = Sim::new(RETIREMENT_EXAMPLE);
    sim.busy("c1", job("ImageSize = 100\n"));
    sim.at(10);
    let step = sim.claim("c2", job("ImageSize = 600\n"));
    assert_eq!(step.numbers(), vec![13, 18]);
    sim.is(Preempting, Vacating);
    assert_eq!(sim.slot.cause, Some(Cause::RankPreemption));
}

#[test]
fn test_job_policy_never_suspends_or_preempts_coltrane() {
    let conf = format!(
        "{SEED_DEFAULT_POLICY}\nSTART = ($(START)) || Owner == \"coltrane\"\n\
         SUSPEND = ($(SUSPEND)) && Owner != \"coltrane\"\nCONTINUE = $(CONTINUE)\n\
         PREEMPT = ($(PREEMPT)) && Owner != \"coltrane\"\nKILL = $(KILL)\n"
    );
    let mut sim = Sim::new(&conf);
    // The owner is typing: nobody else's job would start, coltrane's does.
    sim.set("KeyboardIdle", "2");
    sim.tick();
    sim.is(Unclaimed, Idle);
    let refused = sim.claim("x", job(""));
    assert!(matches!(refused.actions[0], Action::ClaimRefused { .. }));
    sim.claim("c1", job("Owner = \"coltrane\"\n"));
    sim.activate("c1", job("Owner = \"coltrane\"\n"));
    sim.at(3600);
    assert!(sim.tick().transitions.is_empty());
    sim.is(Claimed, Busy);
}

#[test]
fn disabling_preemption_retires_for_two_days_and_claim_worklife_forces_renegotiation() {
    let conf = "MAXJOBRETIREMENTTIME = $(HOUR) * 24 * 2\nPREEMPT = False\nRANK = 0\n\
                CLAIM_WORKLIFE = 1200\n";
    let mut sim = Sim::new(conf);
    sim.busy("c1", job(""));
    // A user-priority preemption: equal rank, the job keeps running for up to 2 days.
    assert_eq!(sim.claim("c2", job("")).numbers(), vec![13]);
    sim.at(86400);
    assert!(sim.tick().transitions.is_empty());
    sim.at(2 * 86400 - 600);
    assert_eq!(sim.tick().numbers(), vec![18]);
    // Without a preemptor, CLAIM_WORKLIFE ends the claim when its job ends after 20 minutes.
    let mut sim = Sim::new(conf);
    sim.busy("c1", job(""));
    sim.at(1201);
    assert_eq!(sim.exit("c1", true).numbers(), vec![12, 10, 22, 1]);
}
