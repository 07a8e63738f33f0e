//! The typed read side of the admin protocol: what `cmctl` and the test kit may ask a CM about
//! the replicated state, and the typed answers.
//!
//! A query is a value of one of the query types below; [`AdminQuery::Answer`] names the type
//! its answer decodes to, so a client cannot read a userprio answer as a policy answer, and
//! renaming a field breaks the build instead of a run. On the wire a query travels as the JSON
//! of [`Query`] (the enum of all of them) and its answer as the JSON of its `Answer` type; the
//! CM answers with [`Query::answer`] after the linearizability check (or at once for a stale
//! read).
use crate::accountant::{AccountantParams, UserprioRow};
use crate::state::{
    AdRecord, AuditRecord, CycleRecord, DrainRequest, GroupPolicy, GroupQuotaRecord, PoolState,
    TokenRecord,
};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many of the latest cycle records the negotiator status returns.
pub const NEGOTIATOR_STATUS_CYCLES: usize = 10;

/// A query with a typed answer.
pub trait AdminQuery: Into<Query> {
    /// What the CM answers.
    type Answer: Serialize + DeserializeOwned;
}

/// Every query a CM answers: the wire form of the query types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Query {
    /// The whole replicated state.
    State(StateQuery),
    /// The ledger as `condor_userprio` shows it.
    Userprio(UserprioQuery),
    /// Runtime group quotas, surplus flags, concurrency limits and drains.
    Policy(PolicyQuery),
    /// The absent and offline ads.
    Ads(AdsQuery),
    /// Every negotiation cycle record kept.
    Cycles(CyclesQuery),
    /// Whether negotiation is paused, and the latest cycles.
    Negotiator(NegotiatorQuery),
    /// A few counters for convergence checks.
    Summary(SummaryQuery),
    /// The issued tokens (`cmctl token list`).
    Tokens(TokensQuery),
    /// The audit log (`cmctl audit`).
    Audit(AuditQuery),
}

/// Why a query could not be answered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// The state could not be encoded (a value JSON cannot carry).
    #[error("encoding the answer to a {query} query: {error}")]
    Encoding {
        /// Which query.
        query: &'static str,
        /// serde_json's message.
        error: String,
    },
}

impl Query {
    /// A short name for logs and metric labels.
    pub fn name(&self) -> &'static str {
        match self {
            Query::State(_) => "state",
            Query::Userprio(_) => "userprio",
            Query::Policy(_) => "policy",
            Query::Ads(_) => "ads",
            Query::Cycles(_) => "cycles",
            Query::Negotiator(_) => "negotiator",
            Query::Summary(_) => "summary",
            Query::Tokens(_) => "tokens",
            Query::Audit(_) => "audit",
        }
    }

    /// Answers from `state`, as the JSON of the query's answer type. `leader` is what the
    /// answering CM knows of the Raft leader (only the negotiator status shows it).
    pub fn answer(
        &self,
        state: &PoolState,
        leader: Option<LeaderInfo>,
    ) -> Result<String, QueryError> {
        let json = match self {
            Query::State(_) => serde_json::to_string(state),
            Query::Userprio(q) => serde_json::to_string(&q.answer(state)),
            Query::Policy(q) => serde_json::to_string(&q.answer(state)),
            Query::Ads(_) => serde_json::to_string(&state.ads),
            Query::Cycles(_) => serde_json::to_string(&state.cycles),
            Query::Negotiator(q) => serde_json::to_string(&q.answer(state, leader)),
            Query::Summary(q) => serde_json::to_string(&q.answer(state)),
            Query::Tokens(_) => serde_json::to_string(&state.tokens.values().collect::<Vec<_>>()),
            Query::Audit(q) => serde_json::to_string(&q.answer(state)),
        };
        json.map_err(|e| QueryError::Encoding {
            query: self.name(),
            error: e.to_string(),
        })
    }
}

/// Declares a query type: its wire variant and its answer type.
macro_rules! query_kind {
    ($ty:ident, $variant:ident, $answer:ty) => {
        impl From<$ty> for Query {
            fn from(q: $ty) -> Query {
                Query::$variant(q)
            }
        }
        impl AdminQuery for $ty {
            type Answer = $answer;
        }
    };
}

/// The whole replicated state (tests, debugging).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateQuery;
query_kind!(StateQuery, State, PoolState);

/// `condor_userprio`'s rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserprioQuery {
    /// The caller's clock (Unix seconds) for ages; the state's time when absent.
    #[serde(default)]
    pub now: Option<i64>,
}
query_kind!(UserprioQuery, Userprio, UserprioReport);

/// The ledger at a time, with the runtime group policy `condor_userprio -quotas` shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserprioReport {
    /// The time the rows were computed for.
    pub now: i64,
    /// The last accountant tick (HTCondor's `LastUpdate`), if any.
    pub last_tick: Option<i64>,
    /// The ledger's parameters (half-life, default factors...).
    pub params: AccountantParams,
    /// One row per submitter and accounting group.
    pub rows: Vec<UserprioRow>,
    /// Runtime quota and surplus overrides by group.
    pub groups: BTreeMap<String, GroupPolicy>,
    /// Each group's quota as the last committed cycle computed it (empty before the first
    /// cycle, and from CMs that predate it).
    #[serde(default)]
    pub last_cycle_groups: Vec<GroupQuotaRecord>,
}

impl UserprioQuery {
    fn answer(&self, state: &PoolState) -> UserprioReport {
        let now = self.now.unwrap_or(state.now);
        UserprioReport {
            now,
            last_tick: state.accountant.last_tick(),
            params: state.accountant.params().clone(),
            rows: state.accountant.userprio_rows(now),
            groups: state.groups.clone(),
            last_cycle_groups: state
                .cycles
                .back()
                .map(|c| c.groups.clone())
                .unwrap_or_default(),
        }
    }
}

/// The runtime pool policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyQuery;
query_kind!(PolicyQuery, Policy, PolicyReport);

/// Runtime policy: what admins changed over the configuration files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyReport {
    /// Quota and surplus overrides by group.
    pub groups: BTreeMap<String, GroupPolicy>,
    /// Concurrency limits by lower-case name.
    pub limits: BTreeMap<String, f64>,
    /// Pending drain requests by machine.
    pub drains: BTreeMap<String, DrainRequest>,
}

impl PolicyQuery {
    fn answer(&self, state: &PoolState) -> PolicyReport {
        PolicyReport {
            groups: state.groups.clone(),
            limits: state.limits.clone(),
            drains: state.drains.clone(),
        }
    }
}

/// The absent and offline ads: bucket (ad type, or `Offline`) -> record name -> ad.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AdsQuery;
query_kind!(AdsQuery, Ads, BTreeMap<String, BTreeMap<String, AdRecord>>);

/// The issued tokens the state keeps, by id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokensQuery;
query_kind!(TokensQuery, Tokens, Vec<TokenRecord>);

/// The audit records at or after `since` (all when absent), oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditQuery {
    /// Only records at or after this time (Unix seconds).
    #[serde(default)]
    pub since: Option<i64>,
}
query_kind!(AuditQuery, Audit, Vec<AuditRecord>);

impl AuditQuery {
    fn answer<'a>(&self, state: &'a PoolState) -> Vec<&'a AuditRecord> {
        let since = self.since.unwrap_or(i64::MIN);
        state.audit.iter().filter(|r| r.time >= since).collect()
    }
}

/// Every cycle record the state keeps, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CyclesQuery;
query_kind!(CyclesQuery, Cycles, std::collections::VecDeque<CycleRecord>);

/// The leader-run negotiation's status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NegotiatorQuery;
query_kind!(NegotiatorQuery, Negotiator, NegotiatorReport);

/// A Raft leader as a CM knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderInfo {
    /// Its Raft node id.
    pub id: u64,
    /// Its gRPC address.
    pub addr: String,
}

/// `cmctl negotiator status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NegotiatorReport {
    /// The leader (the CM that negotiates), as the answering CM knows it.
    pub leader: Option<LeaderInfo>,
    /// No cycle runs while set.
    pub paused: bool,
    /// How many `cycle-now` requests were committed.
    pub cycle_requests: u64,
    /// The latest [`NEGOTIATOR_STATUS_CYCLES`] cycle records, oldest first.
    pub cycles: Vec<CycleRecord>,
    /// The version of the replicated negotiation policy in force (0: none yet).
    #[serde(default)]
    pub policy_version: u64,
    /// Who proposed that policy (CM address and file).
    #[serde(default)]
    pub policy_source: String,
}

impl NegotiatorQuery {
    fn answer(&self, state: &PoolState, leader: Option<LeaderInfo>) -> NegotiatorReport {
        let skip = state.cycles.len().saturating_sub(NEGOTIATOR_STATUS_CYCLES);
        NegotiatorReport {
            leader,
            paused: state.negotiator.paused,
            cycle_requests: state.negotiator.cycle_requests,
            cycles: state.cycles.iter().skip(skip).cloned().collect(),
            policy_version: state.policy.as_ref().map_or(0, |p| p.version),
            policy_source: state
                .policy
                .as_ref()
                .map(|p| p.source.clone())
                .unwrap_or_default(),
        }
    }
}

/// Counters that tell whether two CMs applied the same log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SummaryQuery;
query_kind!(SummaryQuery, Summary, StateSummary);

/// A few counters of the state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateSummary {
    /// Commands applied, refused ones included.
    pub applied_commands: u64,
    /// The state's time (the highest time any command carried).
    pub now: i64,
    /// Records in the ledger.
    pub submitters: usize,
    /// Groups with runtime overrides.
    pub groups: usize,
    /// Runtime concurrency limits.
    pub limits: usize,
}

impl SummaryQuery {
    fn answer(&self, state: &PoolState) -> StateSummary {
        StateSummary {
            applied_commands: state.applied_commands,
            now: state.now,
            submitters: state.accountant.records().count(),
            groups: state.groups.len(),
            limits: state.limits.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Command, Request};

    /// Answers `q` and decodes the answer as its declared type, as a client does.
    fn ask<Q: AdminQuery + Clone>(state: &PoolState, q: Q) -> Q::Answer {
        let q: Query = q.into();
        let wire = serde_json::to_string(&q).unwrap();
        let q: Query = serde_json::from_str(&wire).unwrap();
        serde_json::from_str(&q.answer(state, None).unwrap()).unwrap()
    }

    #[test]
    fn every_query_answers_in_its_declared_type() {
        let mut s = PoolState::default();
        s.apply(&Request::new(Command::SetLimit {
            name: "DB".into(),
            limit: Some(2.0),
        }));
        for i in 1..=12 {
            s.apply(&Request::new(Command::RecordCycle(CycleRecord {
                term: 1,
                cycle: i,
                end_time: 100 + i as i64,
                groups: vec![GroupQuotaRecord {
                    name: "group_a".into(),
                    effective_quota: i as f64,
                    ..Default::default()
                }],
                ..Default::default()
            })));
        }
        assert_eq!(ask(&s, PolicyQuery).limits["db"], 2.0);
        let n = ask(&s, NegotiatorQuery);
        assert_eq!(n.cycles.len(), NEGOTIATOR_STATUS_CYCLES);
        assert_eq!(n.cycles.first().map(|c| c.cycle), Some(3));
        assert_eq!(ask(&s, CyclesQuery).len(), 12);
        assert_eq!(ask(&s, SummaryQuery).applied_commands, 13);
        assert_eq!(ask(&s, SummaryQuery).now, 112);
        let u = ask(&s, UserprioQuery { now: Some(5000) });
        assert_eq!((u.now, u.last_tick), (5000, None));
        // The quotas of the last cycle, not of an earlier one.
        let quota: Vec<_> = u
            .last_cycle_groups
            .iter()
            .map(|g| (g.name.as_str(), g.effective_quota))
            .collect();
        assert_eq!(quota, [("group_a", 12.0)]);
        assert!(ask(&s, AdsQuery).is_empty());
        assert_eq!(ask(&s, StateQuery).applied_commands, 13);
    }
}
