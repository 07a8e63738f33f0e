//! The commands of the replicated log and their responses.
//!
//! Log entries are stored and shipped as JSON. Each entry is a [`Request`] with a version tag:
//! a later binary that changes a command's shape keeps decoding `v: 1` entries (new fields get
//! `#[serde(default)]`, renamed commands keep an alias) so old logs still apply after upgrades.
use super::audit::AuditStamp;
use super::backup::Backup;
use super::negotiation_policy::PolicyProposal;
use super::policy::{CycleRecord, DrainRequest, Quota};
use super::tokens::TokenRecord;
use crate::accountant::AccountantCommand;
use serde::{Deserialize, Serialize};

/// The command encoding this binary writes.
pub const COMMAND_VERSION: u32 = 1;

/// The newest cluster feature version this binary supports. New kinds of commands come with a
/// new feature version and are proposed only once the cluster has committed it
/// ([`Command::SetFeatureVersion`]), which its leader does only when every member says it
/// supports it: so during a rolling upgrade no replica meets a command it cannot decode (it
/// would stop applying the log) or applies one its peers refuse (the replicas would diverge).
///
/// 1: the commands up to `RequestCycle`. 2: `SetFeatureVersion`, `PutAds`, `RemoveAds`.
/// 3: `RequestDrain` with a request id, `-start`, `-check` and `-resume-on-completion`.
/// 4: `SetPolicy` (the replicated negotiation policy, `cmctl reconfig`) and `Restore`
/// (`cmctl snapshot restore`). 5: `IssueToken`, `RevokeToken` and audit stamps on requests.
pub const FEATURE_VERSION: u32 = 5;

/// One log entry's application data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The command encoding it was written with ([`COMMAND_VERSION`] for new entries).
    pub v: u32,
    /// The command.
    pub cmd: Command,
    /// Who asked for it, from where, when: set for admin writes by the CM that received them
    /// (feature version 5; older entries have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditStamp>,
}

impl Request {
    /// `cmd` in this binary's encoding.
    pub fn new(cmd: Command) -> Self {
        Request {
            v: COMMAND_VERSION,
            cmd,
            audit: None,
        }
    }
}

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{}:{}", self.v, self.cmd.name())
    }
}

/// Everything that changes the replicated state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Command {
    /// Changes nothing (leader confirmation, tests).
    Noop,
    /// A fair-share ledger change: a tick or any `condor_userprio` edit.
    Accountant(AccountantCommand),
    /// Runtime group quota; `None` returns to the configured value.
    SetQuota {
        /// The group (`group_a`, `group_a.sub`).
        group: String,
        /// The quota, or `None` to drop the override.
        quota: Option<Quota>,
    },
    /// Runtime `GROUP_ACCEPT_SURPLUS` for one group; `None` returns to the configured value.
    SetSurplus {
        /// The group.
        group: String,
        /// Whether it may use other groups' unused quota, or `None` to drop the override.
        allow: Option<bool>,
    },
    /// Runtime concurrency limit; `None` returns to the configured value.
    SetLimit {
        /// The limit's name (`sw_license`, `sw_license.big`), compared case-insensitively.
        name: String,
        /// How many concurrent uses it allows, or `None` to drop the override.
        limit: Option<f64>,
    },
    /// `condor_drain`: ask a machine to drain.
    RequestDrain(DrainRequest),
    /// `condor_drain -cancel`.
    CancelDrain {
        /// The machine whose drain request is dropped.
        machine: String,
    },
    /// Store an absent or offline ad (replaces one with the same type and name).
    PutAd {
        /// The bucket: the ad's `MyType` for an absent ad, `Offline` for an offline one.
        ad_type: String,
        /// The record name (the ad's `Name`, and its address when it has one).
        name: String,
        /// The ad in new ClassAd syntax.
        text: String,
        /// When it went absent or offline (leader time, Unix seconds).
        time: i64,
    },
    /// Drop a stored absent or offline ad (the machine is back, or the ad expired).
    RemoveAd {
        /// The bucket, as in `PutAd`.
        ad_type: String,
        /// The record name, as in `PutAd`.
        name: String,
    },
    /// The summary of a completed negotiation cycle.
    RecordCycle(CycleRecord),
    /// Pause (true) or resume (false) the leader-run negotiation.
    SetNegotiatorPaused {
        /// Paused (true) or running (false).
        paused: bool,
    },
    /// Ask the leader for a negotiation cycle now (`cmctl negotiator cycle-now`).
    RequestCycle,
    /// Raise the cluster's feature version (never lowers it): committed by the leader once
    /// every member supports `version`.
    SetFeatureVersion {
        /// The new feature version.
        version: u32,
    },
    /// Store many absent or offline ads in one entry (a rack going down is one commit, not
    /// thousands). Feature version 2.
    PutAds {
        /// The ads, each as `PutAd` gives one.
        ads: Vec<AdPut>,
    },
    /// Drop many stored ads in one entry; names not held are skipped. Feature version 2.
    RemoveAds {
        /// The ads, by bucket and name.
        ads: Vec<AdRef>,
    },
    /// Replace the negotiation policy (seeded from the first leader's file, then
    /// `cmctl reconfig`); the ledger's parameters follow it. Feature version 4.
    SetPolicy(PolicyProposal),
    /// Put back what a pool snapshot holds (`cmctl snapshot restore`): the ledger, the
    /// policy, the runtime overrides, drain requests and absent ads. Feature version 4.
    Restore(Box<Backup>),
    /// Record a token the leader signed (`cmctl token create`). Sent by cmctl with an empty
    /// `jti` and `issued` = 0 and `expires` = the lifetime in seconds; the leader assigns the
    /// id and times before proposing. Feature version 5.
    IssueToken(TokenRecord),
    /// Revoke an issued token (`cmctl token revoke`): every CM refuses it from then on.
    /// Feature version 5.
    RevokeToken {
        /// The token's id.
        jti: String,
    },
}

/// One absent or offline ad to store (see [`Command::PutAd`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdPut {
    /// The bucket: the ad's `MyType` for an absent ad, `Offline` for an offline one.
    pub ad_type: String,
    /// The record name (the ad's `Name`, and its address when it has one).
    pub name: String,
    /// The ad in new ClassAd syntax.
    pub text: String,
    /// When it went absent or offline (leader time, Unix seconds).
    pub time: i64,
}

/// A stored absent or offline ad, by bucket and record name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdRef {
    /// The bucket.
    pub ad_type: String,
    /// The record name.
    pub name: String,
}

impl Command {
    /// A short name for logs and metrics labels.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Noop => "noop",
            Command::Accountant(_) => "accountant",
            Command::SetQuota { .. } => "set_quota",
            Command::SetSurplus { .. } => "set_surplus",
            Command::SetLimit { .. } => "set_limit",
            Command::RequestDrain(_) => "request_drain",
            Command::CancelDrain { .. } => "cancel_drain",
            Command::PutAd { .. } => "put_ad",
            Command::RemoveAd { .. } => "remove_ad",
            Command::RecordCycle(_) => "record_cycle",
            Command::SetNegotiatorPaused { .. } => "set_negotiator_paused",
            Command::RequestCycle => "request_cycle",
            Command::SetFeatureVersion { .. } => "set_feature_version",
            Command::PutAds { .. } => "put_ads",
            Command::RemoveAds { .. } => "remove_ads",
            Command::SetPolicy(_) => "set_policy",
            Command::Restore(_) => "restore",
            Command::IssueToken(_) => "issue_token",
            Command::RevokeToken { .. } => "revoke_token",
        }
    }

    /// Whether only the leader writes this command (ticks, its own accountant parameters,
    /// cycle records, absent and offline ads, the feature version): the admin API refuses it
    /// from anyone but another CM.
    pub fn is_internal(&self) -> bool {
        use crate::accountant::AccountantCommand as A;
        matches!(
            self,
            Command::Accountant(A::Tick { .. } | A::SetParams(_))
                | Command::RecordCycle(_)
                | Command::PutAd { .. }
                | Command::PutAds { .. }
                | Command::SetFeatureVersion { .. }
                | Command::SetPolicy(_)
        )
    }

    /// The cluster feature version a command needs (see [`FEATURE_VERSION`]).
    pub fn required_feature(&self) -> u32 {
        match self {
            Command::PutAds { .. } | Command::RemoveAds { .. } => 2,
            Command::RequestDrain(d) if d.has_v3_fields() => 3,
            Command::SetPolicy(_) | Command::Restore(_) => 4,
            Command::IssueToken(_) | Command::RevokeToken { .. } => 5,
            _ => 1,
        }
    }
}

/// What applying a command answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommandResponse {
    /// Applied (false: refused, the state unchanged, `error` says why).
    pub ok: bool,
    /// Why the command was refused (empty when `ok`).
    #[serde(default)]
    pub error: String,
    /// What the command answered besides success, for the commands that answer something.
    #[serde(default)]
    pub result: Option<CommandResult>,
}

/// The answers of the commands that give one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CommandResult {
    /// `RequestCycle`: the request counter after it, and whether negotiation is paused (then
    /// no cycle runs until it is resumed, which the operator should be told).
    CycleRequested {
        /// `NegotiatorControl::cycle_requests` after this request.
        cycle_requests: u64,
        /// Whether negotiation is paused.
        paused: bool,
    },
    /// `SetPolicy`: the policy version now in force and the knobs that changed (none when the
    /// proposal equals the policy in force, whose version then stays).
    PolicySet {
        /// The version in force.
        version: u64,
        /// Knobs whose values changed.
        changed: Vec<String>,
    },
    /// `Restore`: what was put back.
    Restored {
        /// Submitters and groups in the restored ledger.
        submitters: usize,
        /// The policy version in force afterwards (0: none).
        policy_version: u64,
    },
    /// `IssueToken`: the token's id, and the signed token (filled in by the leader's admin
    /// service for the caller; never in the log).
    TokenIssued {
        /// The token's id.
        jti: String,
        /// The signed token (empty as the state answers).
        #[serde(default)]
        token: String,
        /// When it expires (Unix seconds).
        expires: i64,
    },
}

impl CommandResponse {
    /// A refusal with its reason.
    pub fn refused(error: impl Into<String>) -> Self {
        CommandResponse {
            ok: false,
            error: error.into(),
            result: None,
        }
    }
}
