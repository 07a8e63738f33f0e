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

/// One partition: `isolated` cut off from every other CM over `[start, end]` (the times the
/// cut was in place and the time it was removed).
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// The CM alone on its side.
    pub isolated: u64,
    /// When the cut was in place.
    pub start: Duration,
    /// When the heal began.
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
    /// Status samples of every CM.
    pub samples: Vec<Sample>,
}

impl History {
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
