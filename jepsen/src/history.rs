//! The history of a run, as Jepsen records it: every client operation with its invocation and
//! completion times and outcome, the partitions the nemesis made, and every CM's view of its
//! role sampled through the run. Times are offsets from the start of the run, so the history
//! is plain data the checkers read without a clock.

use std::collections::BTreeMap;
use std::time::Duration;

/// What a client asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum OpKind {
    /// `SetLimit name = value`; every name is written once, so a value identifies its write.
    Write {
        /// The limit's name (unique in a run).
        name: String,
        /// The value written.
        value: f64,
    },
    /// A linearizable read of every limit.
    Read,
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Acknowledged: a write committed, a read answered (with what it saw).
    Ok(Option<BTreeMap<String, f64>>),
    /// Refused for sure (the CM answered that it did not do it).
    Fail(String),
    /// No answer in time, or the connection broke: it may or may not have happened.
    Unknown(String),
}

/// One client operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// The client that issued it.
    pub process: usize,
    /// The CM it was sent to.
    pub node: u64,
    /// What it asked for.
    pub kind: OpKind,
    /// When it was sent.
    pub invoke: Duration,
    /// When it ended.
    pub complete: Duration,
    /// How it ended.
    pub outcome: Outcome,
}

impl Op {
    /// Whether it was acknowledged.
    pub fn is_ok(&self) -> bool {
        matches!(self.outcome, Outcome::Ok(_))
    }
}

/// One partition over `[start, end]` (the time the cuts were in place and the time their
/// removal began).
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// What was cut, for people (`isolate 2`, `halves [1, 2] | [3, 4, 5]`, `bridge ...`).
    pub shape: String,
    /// The CMs on the minority side, which must commit nothing while cut off (empty when no
    /// side is a minority, as in a bridge where both sides hold a majority with the middle).
    pub minority: Vec<u64>,
    /// When the cut was in place.
    pub start: Duration,
    /// When the heal began.
    pub end: Duration,
}

/// What a process nemesis did to one CM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaultKind {
    /// `kill -9`, then a restart on the same data directory at `end`.
    Kill,
    /// `SIGSTOP`, then `SIGCONT` at `end`.
    Pause,
    /// Its data directory's file system filled up, then space freed at `end`.
    DiskFull,
    /// Every sync of its data directory delayed this many milliseconds ([`crate::stall`]),
    /// back to none at `end`.
    DiskStall(u64),
    /// Its wall clock set this many seconds off the true time (libfaketime, see
    /// [`crate::clock`]), then set right at `end`; its monotonic clock untouched.
    Clock(i64),
    /// A Raft membership change ([`crate::membership`]) that began at `start` and was
    /// committed at `end`.
    Membership(Change),
}

/// A Raft membership change, as `cmctl cluster add|remove` makes one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// A CM started with `--join` on an empty data directory was added as a voter.
    Add,
    /// A CM was removed from the voters (and then stopped, as an operator would).
    Remove,
}

/// One process or disk fault on one CM over `[start, end]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// What was done.
    pub kind: FaultKind,
    /// To which CM.
    pub node: u64,
    /// When it was done.
    pub start: Duration,
    /// When it was undone.
    pub end: Duration,
}

/// One CM's answer to a status request.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// When it answered.
    pub at: Duration,
    /// The CM.
    pub node: u64,
    /// Its Raft term.
    pub term: u64,
    /// Its role (`Leader`, `Follower`, `Candidate`, `Learner`).
    pub state: String,
}

/// Everything a run recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// Client operations, in completion order.
    pub ops: Vec<Op>,
    /// The partitions, in order.
    pub partitions: Vec<Partition>,
    /// The process and disk faults, in order.
    pub faults: Vec<Fault>,
    /// Status samples of every CM.
    pub samples: Vec<Sample>,
}

impl History {
    /// The writes sent at or after `start` and completed by `end` through a CM for which
    /// `via` holds, acknowledged (`ok`) or not.
    pub fn writes_within(
        &self,
        start: Duration,
        end: Duration,
        via: impl Fn(u64) -> bool,
        ok: bool,
    ) -> usize {
        self.ops
            .iter()
            .filter(|op| {
                matches!(op.kind, OpKind::Write { .. })
                    && op.invoke >= start
                    && op.complete <= end
                    && via(op.node)
                    && op.is_ok() == ok
            })
            .count()
    }

    /// Counts of acknowledged, failed and unknown operations.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for op in &self.ops {
            match op.outcome {
                Outcome::Ok(_) => c.0 += 1,
                Outcome::Fail(_) => c.1 += 1,
                Outcome::Unknown(_) => c.2 += 1,
            }
        }
        c
    }
}
