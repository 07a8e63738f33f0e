//! The replicated state machine: everything the CMs agree on through Raft.
//!
//! [`PoolState`] is a plain value; [`PoolState::apply`] is the only way to change it and is
//! deterministic (no clock, no randomness, no I/O), so every replica that applies the same
//! committed log holds the same state. Time enters only inside commands (the leader's clock at
//! proposal time), and [`PoolState::now`] never runs backwards across leaders.
//!
//! A command the state refuses (unknown submitter, bad value) is still a committed log entry:
//! it changes nothing and its [`CommandResponse`] carries the reason.
pub mod audit;
pub mod backup;
mod command;
pub mod negotiation_policy;
mod overlay;
mod policy;
pub mod tokens;

pub use audit::{AuditRecord, AuditStamp, MAX_AUDIT_RECORDS};
pub use command::{
    AdPut, AdRef, Command, CommandResponse, CommandResult, Request, COMMAND_VERSION,
    FEATURE_VERSION,
};
pub use negotiation_policy::{NegotiationPolicy, PolicyProposal};
pub use overlay::overlay_policy;
pub use policy::{
    AdRecord, CycleRecord, DrainRequest, GroupPolicy, GroupQuotaRecord, NegotiatorControl, Quota,
    MAX_CYCLE_RECORDS,
};
pub use tokens::TokenRecord;

use crate::accountant::{Accountant, AccountantCommand, AccountantParams};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// The whole replicated state; a snapshot is this value serialized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolState {
    /// The fair-share ledger (priorities, factors, usage).
    pub accountant: Accountant,
    /// Runtime group policy (quota, surplus) by group name, overriding the config files.
    #[serde(default)]
    pub groups: BTreeMap<String, GroupPolicy>,
    /// Runtime concurrency limits by limit name (lower case, as HTCondor compares them).
    #[serde(default)]
    pub limits: BTreeMap<String, f64>,
    /// Pending drain requests by machine name.
    #[serde(default)]
    pub drains: BTreeMap<String, DrainRequest>,
    /// Absent and offline ads: ad type -> name -> ClassAd text.
    #[serde(default)]
    pub ads: BTreeMap<String, BTreeMap<String, AdRecord>>,
    /// The most recent negotiation cycle records (bounded).
    #[serde(default)]
    pub cycles: VecDeque<CycleRecord>,
    /// Pause flag and cycle-now requests of the leader-run negotiation.
    #[serde(default)]
    pub negotiator: NegotiatorControl,
    /// Highest time (Unix seconds) carried by any applied command; never decreases.
    #[serde(default)]
    pub now: i64,
    /// Number of commands applied (refused ones included), a cheap convergence check.
    #[serde(default)]
    pub applied_commands: u64,
    /// The cluster's feature version: the commands it may carry (see [`FEATURE_VERSION`]).
    #[serde(default = "first_feature_version")]
    pub feature_version: u32,
    /// The negotiation policy every leader negotiates with (`None` until the first leader
    /// with a configuration file seeds it; states from before feature version 4 have none).
    #[serde(default)]
    pub policy: Option<NegotiationPolicy>,
    /// Issued tokens by id (feature version 5).
    #[serde(default)]
    pub tokens: BTreeMap<String, TokenRecord>,
    /// The newest audited admin writes, oldest first (at most [`MAX_AUDIT_RECORDS`]).
    #[serde(default)]
    pub audit: VecDeque<AuditRecord>,
}

fn first_feature_version() -> u32 {
    1
}

impl Default for PoolState {
    fn default() -> Self {
        PoolState::new(AccountantParams::default())
    }
}

impl PoolState {
    /// An empty pool with the given accountant parameters.
    pub fn new(params: AccountantParams) -> Self {
        PoolState {
            accountant: Accountant::new(params),
            groups: BTreeMap::new(),
            limits: BTreeMap::new(),
            drains: BTreeMap::new(),
            ads: BTreeMap::new(),
            cycles: VecDeque::new(),
            negotiator: NegotiatorControl::default(),
            now: 0,
            applied_commands: 0,
            feature_version: first_feature_version(),
            policy: None,
            tokens: BTreeMap::new(),
            audit: VecDeque::new(),
        }
    }

    /// Applies one committed request. Deterministic; a refused command leaves the state as it
    /// was (apart from the applied-commands counter) and answers with the reason.
    pub fn apply(&mut self, req: &Request) -> CommandResponse {
        self.applied_commands = self.applied_commands.saturating_add(1);
        if req.v > COMMAND_VERSION {
            return CommandResponse::refused(format!(
                "command version {} is newer than this CM understands ({COMMAND_VERSION})",
                req.v
            ));
        }
        let response = match self.apply_command(&req.cmd) {
            Ok(result) => CommandResponse {
                ok: true,
                error: String::new(),
                result,
            },
            Err(e) => CommandResponse::refused(e),
        };
        if let Some(stamp) = &req.audit {
            self.record_audit(stamp, &req.cmd, &response);
        }
        response
    }

    /// Appends an audit record for `cmd`, dropping the oldest beyond [`MAX_AUDIT_RECORDS`].
    fn record_audit(&mut self, stamp: &AuditStamp, cmd: &Command, r: &CommandResponse) {
        self.audit.push_back(AuditRecord {
            time: stamp.time,
            who: stamp.who.clone(),
            from: stamp.from.clone(),
            command: cmd.name().to_string(),
            summary: audit::shorten(&serde_json::to_string(cmd).unwrap_or_default()),
            ok: r.ok,
            error: r.error.clone(),
        });
        while self.audit.len() > MAX_AUDIT_RECORDS {
            self.audit.pop_front();
        }
    }

    fn issue_token(&mut self, t: &TokenRecord) -> Result<Option<CommandResult>, String> {
        t.check()?;
        if self.tokens.contains_key(&t.jti) {
            return Err(format!("a token with id {} was already issued", t.jti));
        }
        self.tokens
            .retain(|_, old| old.expires + tokens::KEEP_EXPIRED > t.issued);
        self.tokens.insert(t.jti.clone(), t.clone());
        Ok(Some(CommandResult::TokenIssued {
            jti: t.jti.clone(),
            token: String::new(),
            expires: t.expires,
        }))
    }

    fn apply_command(&mut self, cmd: &Command) -> Result<Option<CommandResult>, String> {
        if cmd.required_feature() > self.feature_version {
            return Err(format!(
                "{} needs cluster feature version {}; this cluster runs {} (every CM must \
                 support it first)",
                cmd.name(),
                cmd.required_feature(),
                self.feature_version
            ));
        }
        match cmd {
            Command::Noop => Ok(None),
            Command::Accountant(ac) => {
                // The accountant refuses ticks older than its last one itself.
                self.accountant.apply(ac).map_err(|e| e.to_string())?;
                if let AccountantCommand::Tick { now, .. } = ac {
                    self.now = self.now.max(*now);
                }
                Ok(None)
            }
            Command::SetQuota { group, quota } => {
                policy::check_group_name(group)?;
                if let Some(q) = quota {
                    q.validate()?;
                }
                self.groups.entry(group.clone()).or_default().quota = *quota;
                self.prune_group(group);
                Ok(None)
            }
            Command::SetSurplus { group, allow } => {
                policy::check_group_name(group)?;
                self.groups.entry(group.clone()).or_default().accept_surplus = *allow;
                self.prune_group(group);
                Ok(None)
            }
            Command::SetLimit { name, limit } => {
                let key = policy::limit_key(name)?;
                match limit {
                    Some(v) => {
                        if !v.is_finite() || *v < 0.0 {
                            return Err(format!(
                                "bad value for concurrency limit {name}: {v} (must be a number >= 0)"
                            ));
                        }
                        self.limits.insert(key, *v);
                    }
                    None => {
                        self.limits.remove(&key);
                    }
                }
                Ok(None)
            }
            Command::RequestDrain(d) => {
                if d.machine.is_empty() {
                    return Err("drain request without a machine name".into());
                }
                self.drains.insert(d.machine.clone(), d.clone());
                Ok(None)
            }
            Command::CancelDrain { machine } => {
                if self.drains.remove(machine).is_none() {
                    return Err(format!("no drain request for machine {machine}"));
                }
                Ok(None)
            }
            Command::PutAd {
                ad_type,
                name,
                text,
                time,
            } => {
                if ad_type.is_empty() || name.is_empty() {
                    return Err("an absent/offline ad needs an ad type and a name".into());
                }
                self.ads.entry(ad_type.clone()).or_default().insert(
                    name.clone(),
                    AdRecord {
                        text: text.clone(),
                        time: *time,
                    },
                );
                Ok(None)
            }
            Command::RemoveAd { ad_type, name } => {
                if !self.remove_ad(ad_type, name) {
                    return Err(format!("no {ad_type} ad named {name}"));
                }
                Ok(None)
            }
            Command::PutAds { ads } => {
                // All or nothing: check every record before storing any.
                if let Some(a) = ads
                    .iter()
                    .find(|a| a.ad_type.is_empty() || a.name.is_empty())
                {
                    return Err(format!(
                        "an absent/offline ad needs an ad type and a name ({:?} {:?})",
                        a.ad_type, a.name
                    ));
                }
                for a in ads {
                    self.ads.entry(a.ad_type.clone()).or_default().insert(
                        a.name.clone(),
                        AdRecord {
                            text: a.text.clone(),
                            time: a.time,
                        },
                    );
                }
                Ok(None)
            }
            Command::RemoveAds { ads } => {
                for a in ads {
                    self.remove_ad(&a.ad_type, &a.name);
                }
                Ok(None)
            }
            Command::SetFeatureVersion { version } => {
                if *version > FEATURE_VERSION {
                    return Err(format!(
                        "feature version {version} is newer than this CM supports \
                         ({FEATURE_VERSION})"
                    ));
                }
                if *version < self.feature_version {
                    return Err(format!(
                        "feature version {version} is older than the cluster's ({}); it never \
                         goes down",
                        self.feature_version
                    ));
                }
                self.feature_version = *version;
                Ok(None)
            }
            Command::RecordCycle(rec) => {
                if let Some(last) = self.cycles.back() {
                    if (rec.term, rec.cycle) <= (last.term, last.cycle) {
                        return Err(format!(
                            "cycle record (term {}, cycle {}) is not after (term {}, cycle {})",
                            rec.term, rec.cycle, last.term, last.cycle
                        ));
                    }
                }
                // Only the last cycle's group quotas are shown anywhere: older records drop
                // theirs, so a pool of many groups does not keep 100 copies in every snapshot.
                if let Some(last) = self.cycles.back_mut() {
                    last.groups = Vec::new();
                }
                self.cycles.push_back(rec.clone());
                while self.cycles.len() > MAX_CYCLE_RECORDS {
                    self.cycles.pop_front();
                }
                self.now = self.now.max(rec.end_time);
                Ok(None)
            }
            Command::SetPolicy(p) => self.set_policy(p).map(Some),
            Command::Restore(b) => self.restore(b).map(Some),
            Command::IssueToken(t) => self.issue_token(t),
            Command::RevokeToken { jti } => match self.tokens.get_mut(jti) {
                Some(t) => {
                    t.revoked = true;
                    Ok(None)
                }
                None => Err(format!(
                    "no token with id {jti} (see `cmctl token list`; records of tokens expired \
                     over a day ago are dropped)"
                )),
            },
            Command::SetNegotiatorPaused { paused } => {
                self.negotiator.paused = *paused;
                Ok(None)
            }
            Command::RequestCycle => {
                self.negotiator.cycle_requests = self.negotiator.cycle_requests.saturating_add(1);
                Ok(Some(CommandResult::CycleRequested {
                    cycle_requests: self.negotiator.cycle_requests,
                    paused: self.negotiator.paused,
                }))
            }
        }
    }

    /// Drops one stored absent/offline ad (and its bucket once empty); whether it was held.
    fn remove_ad(&mut self, bucket: &str, name: &str) -> bool {
        let removed = self
            .ads
            .get_mut(bucket)
            .and_then(|m| m.remove(name))
            .is_some();
        if self.ads.get(bucket).is_some_and(|m| m.is_empty()) {
            self.ads.remove(bucket);
        }
        removed
    }

    /// Drops a group entry that no longer overrides anything.
    fn prune_group(&mut self, group: &str) {
        if self.groups.get(group).is_some_and(|g| g.is_empty()) {
            self.groups.remove(group);
        }
    }
}

#[cfg(test)]
mod tests;
