//! Tests of the state machine: one per numbered transition of the seed's diagram
//! (`transitions.rs`), the seed's example policies (`examples.rs`), and the timers, leases,
//! retirement arithmetic and drains (`timers.rs`), and a graceful drain across slots with its
//! START expression (`drain.rs`). Time is injected: every step happens at an
//! explicit second.
mod drain;
mod examples;
mod timers;
mod transitions;

use super::*;
use aerie_config::{Config, Context, LoadOptions};
use classad::ClassAd;
use std::sync::Arc;

/// The start of every test's clock.
pub const T0: i64 = 1_700_000_000;

/// An idle desktop: keyboard untouched for a day, no load.
pub const IDLE_MACHINE: &str = "SlotID = 1\nCpus = 1\nMemory = 1024\nKeyboardIdle = 86400\n\
    ConsoleIdle = 86400\nLoadAvg = 0.0\nCondorLoadAvg = 0.0\nCpuBusyTime = 0\n";

/// A vanilla job of alice's.
pub const ALICE_JOB: &str = "JobUniverse = 5\nOwner = \"alice\"\nUser = \"alice@ap\"\n\
    ClusterId = 7\nProcId = 0\nImageSize = 1000\n";

/// Parses old-syntax ad text.
pub fn ad(text: &str) -> Arc<ClassAd> {
    Arc::new(classad::parse_ad(text).expect("test ad parses"))
}

/// A job ad: [`ALICE_JOB`] with `extra` lines laid over it.
pub fn job(extra: &str) -> Arc<ClassAd> {
    ad(&format!("{ALICE_JOB}{extra}"))
}

/// The policy of a configuration text, read for the STARTD subsystem.
pub fn policy(text: &str) -> Policy {
    let opts = LoadOptions {
        context: Context::subsystem("STARTD"),
        allow_commands: false,
        local_config: false,
        env_overrides: false,
    };
    let cfg = Config::parse_str(text, "test.conf", &opts).expect("test configuration reads");
    Policy::from_config(&cfg).expect("test policy reads")
}

/// One slot driven through events at chosen seconds.
pub struct Sim {
    pub policy: Policy,
    pub machine: ClassAd,
    pub slot: Slot,
    pub now: i64,
    pub others_drained: bool,
    /// What the machine's other slots add to a graceful drain.
    pub others: MachineDrain,
    /// The access point sends a keep-alive before every tick (off to test leases).
    pub alive: bool,
}

impl Sim {
    /// A slot in Owner at [`T0`] on an idle machine under the configuration `conf`.
    pub fn new(conf: &str) -> Sim {
        Sim {
            policy: policy(conf),
            machine: (*ad(IDLE_MACHINE)).clone(),
            slot: Slot::new(T0),
            now: T0,
            others_drained: true,
            others: MachineDrain::default(),
            alive: true,
        }
    }

    /// Moves the clock to `T0 + secs`.
    pub fn at(&mut self, secs: i64) -> &mut Sim {
        assert!(T0 + secs >= self.now, "time runs forward in tests");
        self.now = T0 + secs;
        self
    }

    /// Sets machine attribute `name` to the expression `value`.
    pub fn set(&mut self, name: &str, value: &str) -> &mut Sim {
        self.machine
            .insert_expr_str(name, value)
            .expect("test attribute parses");
        self
    }

    /// Applies `event` now and keeps the new slot. The machine's drain is this one slot's
    /// unless a test sets [`Sim::others`] (the other slots' part of it).
    pub fn on(&mut self, event: Event) -> Step {
        let view = eval::View::new(
            &self.machine,
            &self.policy,
            &self.slot.attributes(),
            self.now,
        );
        let own = MachineDrain::of([(&self.slot, view)], self.now);
        let drain = MachineDrain {
            retirement_remaining: own
                .retirement_remaining
                .max(self.others.retirement_remaining),
            originals_running: own.originals_running || self.others.originals_running,
        };
        let inputs = Inputs {
            policy: &self.policy,
            machine: &self.machine,
            now: self.now,
            other_slots_drained: self.others_drained,
            drain,
        };
        let step = self.slot.step(&inputs, &event);
        self.slot = step.slot.clone();
        step
    }

    pub fn tick(&mut self) -> Step {
        if self.alive {
            let now = self.now;
            if let Some(c) = self.slot.claim.as_mut() {
                c.renew(now);
            }
        }
        self.on(Event::Tick)
    }

    pub fn match_notice(&mut self, id: &str) -> Step {
        self.on(Event::MatchNotified {
            claim_id: id.into(),
        })
    }

    pub fn claim(&mut self, id: &str, request: Arc<ClassAd>) -> Step {
        self.on(Event::ClaimRequest {
            claim_id: id.into(),
            request,
            alive_interval: None,
        })
    }

    pub fn activate(&mut self, id: &str, job: Arc<ClassAd>) -> Step {
        self.on(Event::Activate {
            claim_id: id.into(),
            job,
        })
    }

    pub fn exit(&mut self, id: &str, completed: bool) -> Step {
        self.on(Event::StarterExited {
            claim_id: id.into(),
            completed,
        })
    }

    /// Unclaimed, then claimed as `id` by `job` and running it, all at the current second.
    pub fn busy(&mut self, id: &str, job: Arc<ClassAd>) {
        self.tick();
        self.claim(id, job.clone());
        self.activate(id, job);
        self.is(State::Claimed, Activity::Busy);
    }

    /// Asserts the slot's state and activity.
    pub fn is(&self, state: State, activity: Activity) {
        assert_eq!(
            (self.slot.state, self.slot.activity),
            (state, activity),
            "slot state/activity"
        );
    }

    /// A slot attribute as the state machine publishes it.
    pub fn attr(&self, name: &str) -> classad::Value {
        self.slot.attributes().eval_attr(name)
    }
}

/// Whether `step` asked for `action`.
pub fn did(step: &Step, action: &Action) -> bool {
    step.actions.contains(action)
}

/// Whether `step` asked for a soft kill of `id`, and with what vacate time.
pub fn soft_kill(step: &Step, id: &str) -> Option<i64> {
    step.actions.iter().find_map(|a| match a {
        Action::SoftKill {
            claim_id,
            max_vacate_time,
            ..
        } if claim_id == id => Some(*max_vacate_time),
        _ => None,
    })
}

/// `HardKill` of `id`.
pub fn hard_kill(id: &str) -> Action {
    Action::HardKill {
        claim_id: id.into(),
    }
}

/// `ClaimAccepted` of `id`.
pub fn accepted(id: &str) -> Action {
    Action::ClaimAccepted {
        claim_id: id.into(),
    }
}

/// `StartJob` of `id`.
pub fn start_job(id: &str) -> Action {
    Action::StartJob {
        claim_id: id.into(),
    }
}

/// `SuspendJob` of `id`.
pub fn suspend_job(id: &str) -> Action {
    Action::SuspendJob {
        claim_id: id.into(),
    }
}

/// `ContinueJob` of `id`.
pub fn continue_job(id: &str) -> Action {
    Action::ContinueJob {
        claim_id: id.into(),
    }
}

/// `KillProcessTree` of `id`.
pub fn kill_tree(id: &str) -> Action {
    Action::KillProcessTree {
        claim_id: id.into(),
    }
}

/// `EvictJob` of `id` for `cause`.
pub fn evict(id: &str, cause: Cause) -> Action {
    Action::EvictJob {
        claim_id: id.into(),
        cause,
    }
}

/// `ReleaseClaim` of `id` for `cause`.
pub fn release(id: &str, cause: Cause) -> Action {
    Action::ReleaseClaim {
        claim_id: id.into(),
        cause,
    }
}
