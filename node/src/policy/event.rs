//! What goes into the state machine (events) and what comes out (actions and the transitions
//! taken, numbered as in the seed's state diagram, seed 001 §3.5.7).
use super::drain::DrainRequest;
use super::state::{Activity, State};
use classad::ClassAd;
use std::sync::Arc;

/// Something that happened to the slot.
#[derive(Clone, Debug)]
pub enum Event {
    /// Periodic evaluation (HTCondor's `POLLING_INTERVAL`/`UPDATE_INTERVAL` timer): IS_OWNER,
    /// START, SUSPEND, CONTINUE, PREEMPT, KILL, retirement, and the timers (MATCH_TIMEOUT,
    /// the claim lease, the vacate time, KILLING_TIMEOUT).
    Tick,
    /// The negotiator's match notification (`MATCH_INFO`).
    MatchNotified {
        /// The claim id the match was made with.
        claim_id: String,
    },
    /// An access point asks to claim the slot (`REQUEST_CLAIM`); on a claimed slot this is a
    /// preempting claim, compared by RANK.
    ClaimRequest {
        /// The claim id presented.
        claim_id: String,
        /// The request (job) ad.
        request: Arc<ClassAd>,
        /// The access point's keep-alive interval, if it said.
        alive_interval: Option<i64>,
    },
    /// The access point starts a job on its claim (`ACTIVATE_CLAIM`).
    Activate {
        /// The claim.
        claim_id: String,
        /// The job ad.
        job: Arc<ClassAd>,
    },
    /// The claim's starter exited: the job finished, or left after being vacated or killed.
    StarterExited {
        /// The claim.
        claim_id: String,
        /// The job completed by itself (not evicted).
        completed: bool,
    },
    /// A keep-alive from the access point renews the claim's lease.
    KeepAlive {
        /// The claim.
        claim_id: String,
    },
    /// The access point gives up the claim, or its preempting claim (`RELEASE_CLAIM`).
    ReleaseClaim {
        /// The claim.
        claim_id: String,
    },
    /// `condor_vacate` (graceful: retire, then vacate) or `condor_vacate -fast` (kill).
    Vacate {
        /// `-fast`.
        fast: bool,
    },
    /// A drain request for the machine.
    Drain(DrainRequest),
    /// `condor_drain -cancel`, of the given request id or of whatever drain is in force.
    CancelDrain {
        /// The request id, if named.
        request_id: Option<String>,
    },
    /// The startd is shutting down.
    Shutdown(Shutdown),
}

/// How the startd shuts down (seed 001 transitions 13 and 18).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// Jobs retire (MaxJobRetirementTime), then are vacated.
    Graceful,
    /// Retirement is unlimited: no job is killed.
    Peaceful,
    /// No retirement: jobs are killed.
    Fast,
}

/// Why a claim is being broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// PREEMPT became true (the owner is back).
    Preempt,
    /// START became false for the claim's job while the claim was idle.
    StartFalse,
    /// CLAIM_WORKLIFE ran out on an idle claim.
    ClaimWorklife,
    /// A claim the slot ranks higher arrived.
    RankPreemption,
    /// The negotiator preempted for a user with better priority (equal slot rank).
    PriorityPreemption,
    /// `condor_vacate`.
    Vacate,
    /// The machine is draining.
    Drain,
    /// The claim's lease passed without a keep-alive.
    LeaseExpired,
    /// The access point released the claim.
    Released,
    /// The startd is shutting down.
    Shutdown,
}

impl Cause {
    /// Whether the claim is broken for a better match (a preempting claim) rather than for
    /// the owner, a command or a timer.
    pub fn is_better_match(self) -> bool {
        matches!(self, Cause::RankPreemption | Cause::PriorityPreemption)
    }
}

/// What the node must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Reply OK to a claim request (at once, or when a preemption has finished).
    ClaimAccepted {
        /// The claim.
        claim_id: String,
    },
    /// Reply NOT_OK to a claim request.
    ClaimRefused {
        /// The claim.
        claim_id: String,
        /// Why, for the log and the access point.
        reason: String,
    },
    /// Refuse an activation.
    ActivationRefused {
        /// The claim.
        claim_id: String,
        /// Why.
        reason: String,
    },
    /// Start the job (spawn the starter).
    StartJob {
        /// The claim.
        claim_id: String,
    },
    /// Suspend the job (SIGSTOP its process group).
    SuspendJob {
        /// The claim.
        claim_id: String,
    },
    /// Continue the suspended job (SIGCONT).
    ContinueJob {
        /// The claim.
        claim_id: String,
    },
    /// Ask the job to leave: its `KillSig`, then SIGKILL after `max_vacate_time` seconds.
    SoftKill {
        /// The claim.
        claim_id: String,
        /// The job's `KillSig` (SIGTERM unless set).
        signal: String,
        /// Seconds before the hard kill.
        max_vacate_time: i64,
    },
    /// Kill the job now (SIGKILL).
    HardKill {
        /// The claim.
        claim_id: String,
    },
    /// KILLING_TIMEOUT passed in Killing: SIGKILL the starter's whole process tree.
    KillProcessTree {
        /// The claim.
        claim_id: String,
    },
    /// The job was evicted: it goes back to idle at its access point.
    EvictJob {
        /// The claim.
        claim_id: String,
        /// Why.
        cause: Cause,
    },
    /// The claim is broken: tell its access point (HTCondor's `Claim::vacate`).
    ReleaseClaim {
        /// The claim.
        claim_id: String,
        /// Why.
        cause: Cause,
    },
    /// Refuse a drain request (one is already in force).
    DrainRefused {
        /// The request.
        request_id: String,
        /// Why.
        reason: String,
    },
    /// The slot ad changed: send it to the collector.
    SendAd,
}

/// One transition taken: its number in the seed's diagram (`None` for the few transitions
/// HTCondor makes that the diagram does not number), from and to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The seed's number.
    pub number: Option<u8>,
    /// State and activity before.
    pub from: (State, Activity),
    /// State and activity after.
    pub to: (State, Activity),
}
