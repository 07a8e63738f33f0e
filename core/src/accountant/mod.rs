//! The accountant: HTCondor's user-priority ledger as a deterministic state machine.
//!
//! Every change arrives as an [`AccountantCommand`] that carries its own time, so the same
//! command sequence always yields the same ledger on every Raft replica. There is no clock,
//! no randomness and no I/O here. A command that fails leaves the ledger untouched.
//!
//! Behaviour follows HTCondor 23.9.6 (`Accountant.cpp`, read, not copied):
//! * real priority decays with `beta = 0.5^(dt / PRIORITY_HALFLIFE)`:
//!   `rup = beta * max(rup, 0.5) + (1 - beta) * weighted_slots_in_use`, clamped at 0.5;
//! * the usage charged over an interval is the usage reported at its *end* (HTCondor recounts
//!   the claims just before it updates priorities);
//! * a submitter's priority factor is fixed when its record is created (nice-user, then
//!   `GROUP_PRIO_FACTOR_<group>`, then remote domain, then `DEFAULT_PRIO_FACTOR`) and only
//!   `SetFactor` changes it afterwards;
//! * a group record (`group_a.b`) is charged with the usage of its direct members, and its
//!   priority follows the usage of its whole subtree (HTCondor's `HierWeightedResourcesUsed`);
//!   `<none>` is charged with the usage of submitters outside every group.

mod userprio;
mod userprio_ad;

pub use userprio::parse_userprio;
pub use userprio_ad::{AccountingAd, AccountingRecord, UserprioParseError};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The lowest real priority a submitter can have (HTCondor's `MinPriority`).
pub const MIN_PRIORITY: f64 = 0.5;
/// Priority factors below this are refused (HTCondor's `MIN_PRIORITY_FACTOR`).
pub const MIN_PRIORITY_FACTOR: f64 = 1.0;
/// The name of the root accounting group, charged with ungrouped submitters' usage.
pub const ROOT_GROUP: &str = "<none>";
/// Submitter-name prefix HTCondor gives `nice_user` jobs.
pub const NICE_USER_PREFIX: &str = "nice-user";

/// The largest value an admin may give a priority, factor, floor, ceiling or accumulated
/// usage, and a configuration a factor. Far above any real pool's numbers (HTCondor's largest
/// default factor is 1e10), and low enough that no product or sum of ledger values leaves the
/// finite numbers: an infinite value would be written to JSON as `null`, and a snapshot
/// holding one could not be read back, so the CM could not restart.
pub const MAX_LEDGER_VALUE: f64 = 1e15;

/// The most weighted slots one submitter may be charged for in one tick (a bound far above any
/// pool; a tick above it is refused as malformed rather than charged).
pub const MAX_WEIGHTED_SLOTS: f64 = 1e12;

/// The most one slot may weigh (`SlotWeight`, else `Cpus`). A slot ad is the pool's input to
/// the ledger and to the pie: one ad advertising `SlotWeight = 1e308` must not make a usage
/// infinite. Every reader of a slot's weight bounds it with [`bounded_slot_weight`].
pub const MAX_SLOT_WEIGHT: f64 = 1e6;

/// A slot weight as the ledger and the negotiator use it: between 0 and [`MAX_SLOT_WEIGHT`],
/// and 1 when it is not a number.
pub fn bounded_slot_weight(w: f64) -> f64 {
    if w.is_nan() {
        1.0
    } else {
        w.clamp(0.0, MAX_SLOT_WEIGHT)
    }
}

/// Accountant configuration; `Default` is HTCondor 23.9.6's built-in configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccountantParams {
    /// `PRIORITY_HALFLIFE`, seconds (86400).
    pub priority_halflife: f64,
    /// `DEFAULT_PRIO_FACTOR` (1000).
    pub default_prio_factor: f64,
    /// `NICE_USER_PRIO_FACTOR` (1e10 in 23.9.6; the old manual's "ten million" is outdated).
    pub nice_user_prio_factor: f64,
    /// `REMOTE_PRIO_FACTOR` (1e7); only used when `local_domain` is set, as in HTCondor.
    pub remote_prio_factor: f64,
    /// `ACCOUNTANT_LOCAL_DOMAIN`. `None` makes every submitter local.
    pub local_domain: Option<String>,
    /// `GROUP_NAMES`: the configured accounting groups (case-insensitive).
    pub group_names: Vec<String>,
    /// `GROUP_PRIO_FACTOR_<group>`, keyed by group name as configured.
    pub group_prio_factors: BTreeMap<String, f64>,
}

impl Default for AccountantParams {
    fn default() -> Self {
        AccountantParams {
            priority_halflife: 86400.0,
            default_prio_factor: 1000.0,
            nice_user_prio_factor: 1e10,
            remote_prio_factor: 1e7,
            local_domain: None,
            group_names: Vec::new(),
            group_prio_factors: BTreeMap::new(),
        }
    }
}

impl AccountantParams {
    /// The accountant's knobs (`PRIORITY_HALFLIFE`, `DEFAULT_PRIO_FACTOR`,
    /// `NICE_USER_PRIO_FACTOR`, `REMOTE_PRIO_FACTOR`, `ACCOUNTANT_LOCAL_DOMAIN`, `GROUP_NAMES`,
    /// `GROUP_PRIO_FACTOR_<g>`) from an HTCondor-syntax configuration.
    pub fn from_config(cfg: &aerie_config::Config) -> Result<Self, String> {
        crate::negotiator::NegotiatorConfig::from_config(cfg)
            .map(|c| c.accountant)
            .map_err(|e| e.to_string())
    }

    /// Checks the values an admin could get wrong, naming the knob.
    pub fn validate(&self) -> Result<(), AccountantError> {
        let check = |what: &str, v: f64, min: f64| {
            if !v.is_finite() || v < min || v > MAX_LEDGER_VALUE {
                Err(AccountantError::BadValue {
                    what: what.to_string(),
                    value: v,
                })
            } else {
                Ok(())
            }
        };
        if !(self.priority_halflife.is_finite()
            && self.priority_halflife > 0.0
            && self.priority_halflife <= MAX_LEDGER_VALUE)
        {
            return Err(AccountantError::BadValue {
                what: "PRIORITY_HALFLIFE".into(),
                value: self.priority_halflife,
            });
        }
        check(
            "DEFAULT_PRIO_FACTOR",
            self.default_prio_factor,
            MIN_PRIORITY_FACTOR,
        )?;
        check(
            "NICE_USER_PRIO_FACTOR",
            self.nice_user_prio_factor,
            MIN_PRIORITY_FACTOR,
        )?;
        check(
            "REMOTE_PRIO_FACTOR",
            self.remote_prio_factor,
            MIN_PRIORITY_FACTOR,
        )?;
        for (g, f) in &self.group_prio_factors {
            check(&format!("GROUP_PRIO_FACTOR_{g}"), *f, 0.0)?;
        }
        Ok(())
    }
}

/// Weighted slots a submitter has in use at the time of a tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// `group.user@domain` or `user@domain`.
    pub submitter: String,
    /// Sum of the SlotWeight of the slots the submitter's jobs hold.
    pub weighted_slots: f64,
}

/// Every change to the ledger. Each command is deterministic given the ledger it applies to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AccountantCommand {
    /// Age priorities to `now` and charge the given usage over the elapsed interval.
    Tick {
        /// The leader's time, Unix seconds (never earlier than the last tick).
        now: i64,
        /// Weighted slots in use per submitter at `now`.
        usage: Vec<Usage>,
    },
    /// The parameters of the leader's configuration (half-life, default factors, groups).
    SetParams(AccountantParams),
    /// `condor_userprio -setprio`.
    SetPriority {
        /// The submitter (`user@domain`) or group (`group_a`).
        name: String,
        /// The new value.
        value: f64,
    },
    /// `condor_userprio -setfactor`.
    SetFactor {
        /// The submitter (`user@domain`) or group (`group_a`).
        name: String,
        /// The new value.
        value: f64,
    },
    /// `condor_userprio -setfloor`; 0 removes the floor.
    SetFloor {
        /// The submitter (`user@domain`) or group (`group_a`).
        name: String,
        /// The new value.
        value: f64,
    },
    /// `condor_userprio -setceil`; -1 removes the ceiling.
    SetCeiling {
        /// The submitter (`user@domain`) or group (`group_a`).
        name: String,
        /// The new value.
        value: f64,
    },
    /// `condor_userprio -resetusage`.
    ResetUsage {
        /// The submitter (`user@domain`) or group (`group_a`).
        name: String,
    },
    /// `condor_userprio -resetall`.
    ResetAll,
    /// `condor_userprio -delete`.
    Delete {
        /// The submitter (`user@domain`) or group (`group_a`).
        name: String,
    },
    /// `condor_userprio -setaccum`.
    SetAccumulatedUsage {
        /// The submitter (`user@domain`) or group (`group_a`).
        name: String,
        /// The new value.
        value: f64,
    },
    /// `condor_userprio -setbegin`.
    SetBeginUsageTime {
        /// The submitter (`user@domain`) or group (`group_a`).
        name: String,
        /// The new time, Unix seconds.
        time: i64,
    },
    /// `condor_userprio -setlast`.
    SetLastUsageTime {
        /// The submitter (`user@domain`) or group (`group_a`).
        name: String,
        /// The new time, Unix seconds.
        time: i64,
    },
}

/// Why a command was refused. The ledger is unchanged when one of these is returned.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum AccountantError {
    /// An edit names a record the ledger does not hold.
    #[error("unknown submitter or group {0:?} (condor_userprio lists the known names)")]
    UnknownSubmitter(String),
    /// A number out of range (negative factor, NaN usage...).
    #[error("bad value {value} for {what}")]
    BadValue {
        /// What the number was for (`priority factor of alice@pool`).
        what: String,
        /// The number.
        value: f64,
    },
    /// A submitter name the ledger cannot key (empty, spaces, control characters).
    #[error("bad submitter name {name:?}: {why}")]
    BadName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// A tick older than the last one.
    #[error(
        "accountant tick at {now} is older than the last tick at {last}; refused \
         (time never runs backwards; check the clocks of the central managers)"
    )]
    TimeWentBackwards {
        /// The last tick's time.
        last: i64,
        /// The refused tick's time.
        now: i64,
    },
}

/// One ledger entry: a submitter (`user@domain`, `group.user@domain`) or a group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Real user priority (RUP), never below 0.5.
    pub real_priority: f64,
    /// Priority factor; EUP = RUP x factor.
    pub priority_factor: f64,
    /// True once an admin set the factor explicitly (kept across `SetParams`).
    pub factor_set: bool,
    /// `condor_userprio -setfloor` value in slot weight; 0 = none.
    pub floor: f64,
    /// `condor_userprio -setceil` value in slot weight; negative = none.
    pub ceiling: f64,
    /// Weighted slot-seconds used since `begin_usage_time`.
    pub accumulated_usage: f64,
    /// When usage was first charged (0 = never).
    pub begin_usage_time: i64,
    /// When usage was last charged (0 = never).
    pub last_usage_time: i64,
    /// Weighted slots in use at the last tick (direct members only, for a group).
    pub weighted_slots_at_last_tick: f64,
    /// For a group: weighted slots in use at the last tick by its whole subtree.
    pub hier_weighted_slots_at_last_tick: f64,
    /// A group record (its name has no `@`).
    pub is_group: bool,
}

impl Record {
    fn new(factor: f64, is_group: bool) -> Self {
        Record {
            real_priority: MIN_PRIORITY,
            priority_factor: factor,
            factor_set: false,
            floor: 0.0,
            ceiling: -1.0,
            accumulated_usage: 0.0,
            begin_usage_time: 0,
            last_usage_time: 0,
            weighted_slots_at_last_tick: 0.0,
            hier_weighted_slots_at_last_tick: 0.0,
            is_group,
        }
    }

    /// Effective priority: RUP (never below 0.5) times the factor.
    pub fn effective_priority(&self) -> f64 {
        self.real_priority.max(MIN_PRIORITY) * self.priority_factor
    }

    /// The ceiling, if one is set.
    pub fn ceiling(&self) -> Option<f64> {
        (self.ceiling >= 0.0).then_some(self.ceiling)
    }
}

/// One row of `condor_userprio -l`, for `cmctl userprio` and `what-if`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserprioRow {
    /// The submitter (`user@domain`, `group.user@domain`) or group (`group_a`, `<none>`).
    pub name: String,
    /// Real priority times the factor (`Priority`): the lower, the larger the pie slice.
    pub effective_priority: f64,
    /// The decayed usage (`Priority / PriorityFactor`), at least 0.5.
    pub real_priority: f64,
    /// `PriorityFactor`.
    pub priority_factor: f64,
    /// Weighted slots in use at the last tick (subtree total for a group).
    pub resources_used: f64,
    /// Weighted slot-seconds charged so far (`WeightedAccumulatedUsage`).
    pub accumulated_usage: f64,
    /// When usage was first charged (`BeginUsageTime`), Unix seconds.
    pub begin_usage_time: i64,
    /// When usage was last charged (`LastUsageTime`), Unix seconds.
    pub last_usage_time: i64,
    /// `Floor`: slots the submitter gets before others' shares (0: none).
    pub floor: f64,
    /// `Ceiling`: the most slots it may hold (-1: no ceiling).
    pub ceiling: f64,
    /// An accounting group's record rather than a submitter's.
    pub is_group: bool,
    /// The accounting group the name belongs to (`<none>` outside every group).
    pub accounting_group: String,
}

/// The ledger: parameters, records in deterministic (sorted) order, and the last tick time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Accountant {
    params: AccountantParams,
    ledger: BTreeMap<String, Record>,
    last_tick: Option<i64>,
}

/// The domain part of `user@domain` (empty if there is none).
pub fn domain_of(name: &str) -> &str {
    name.rfind('@').map(|p| &name[p + 1..]).unwrap_or("")
}

/// The configured group a name belongs to, as HTCondor's `GetAssignedGroup` decides:
/// `a.b.user@dom` belongs to the deepest configured prefix of `a.b` (walking down from the
/// top, case-insensitively); a name without `@` is a group itself (mapped to its configured
/// spelling); everything else belongs to `<none>`.
pub fn assign_group(group_names: &[String], name: &str) -> String {
    let find = |g: &str| {
        group_names
            .iter()
            .find(|c| c.eq_ignore_ascii_case(g))
            .cloned()
    };
    let Some(at) = name.rfind('@') else {
        return find(name).unwrap_or_else(|| ROOT_GROUP.to_string());
    };
    let local = &name[..at];
    let Some(dot) = local.rfind('.') else {
        return ROOT_GROUP.to_string();
    };
    let path = &local[..dot];
    let mut best = ROOT_GROUP.to_string();
    for (i, c) in path
        .char_indices()
        .chain(std::iter::once((path.len(), '.')))
    {
        if c == '.' {
            match find(&path[..i]) {
                Some(g) => best = g,
                None => break,
            }
        }
    }
    best
}

impl Accountant {
    /// An empty ledger with these parameters.
    pub fn new(params: AccountantParams) -> Self {
        Accountant {
            params,
            ledger: BTreeMap::new(),
            last_tick: None,
        }
    }

    /// The parameters it decays and charges with.
    pub fn params(&self) -> &AccountantParams {
        &self.params
    }

    /// The record of a submitter or group.
    pub fn record(&self, name: &str) -> Option<&Record> {
        self.ledger.get(name)
    }

    /// Every record, sorted by name.
    pub fn records(&self) -> impl Iterator<Item = (&str, &Record)> {
        self.ledger.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The time of the last tick (HTCondor's `LastUpdate`), if any.
    pub fn last_tick(&self) -> Option<i64> {
        self.last_tick
    }

    /// The configured group a name belongs to; see [`assign_group`].
    pub fn assigned_group(&self, name: &str) -> String {
        assign_group(&self.params.group_names, name)
    }

    /// The factor a new record gets (HTCondor's `GetPriorityFactor` on first sight).
    pub fn default_factor(&self, name: &str) -> f64 {
        let p = &self.params;
        // `get`, not slicing: a name is untrusted input and may put a multi-byte character
        // across the prefix's length (slicing there would panic in every replica's apply).
        if name
            .get(..NICE_USER_PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(NICE_USER_PREFIX))
            && name.contains('@')
        {
            return p.nice_user_prio_factor;
        }
        let group = self.assigned_group(name);
        if let Some(f) = p
            .group_prio_factors
            .iter()
            .find(|(g, _)| g.eq_ignore_ascii_case(&group))
            .map(|(_, f)| *f)
        {
            if f != 0.0 {
                return f;
            }
        }
        if let Some(local) = &p.local_domain {
            if !local.is_empty() && name.contains('@') && domain_of(name) != local {
                return p.remote_prio_factor;
            }
        }
        p.default_prio_factor
    }

    /// Effective user priority (lower is better). Unknown names get what a new record would.
    pub fn effective_priority(&self, name: &str) -> f64 {
        match self.ledger.get(name) {
            Some(r) => r.effective_priority(),
            None => MIN_PRIORITY * self.default_factor(name),
        }
    }

    /// Real user priority (0.5 for unknown names).
    pub fn real_priority(&self, name: &str) -> f64 {
        self.ledger
            .get(name)
            .map(|r| r.real_priority.max(MIN_PRIORITY))
            .unwrap_or(MIN_PRIORITY)
    }

    /// The rows `condor_userprio -l` shows, in name order.
    pub fn userprio_rows(&self, _now: i64) -> Vec<UserprioRow> {
        self.ledger
            .iter()
            .map(|(name, r)| UserprioRow {
                name: name.clone(),
                effective_priority: r.effective_priority(),
                real_priority: r.real_priority.max(MIN_PRIORITY),
                priority_factor: r.priority_factor,
                resources_used: if r.is_group {
                    r.hier_weighted_slots_at_last_tick
                        .max(r.weighted_slots_at_last_tick)
                } else {
                    r.weighted_slots_at_last_tick
                },
                accumulated_usage: r.accumulated_usage,
                begin_usage_time: r.begin_usage_time,
                last_usage_time: r.last_usage_time,
                floor: r.floor,
                ceiling: r.ceiling,
                is_group: r.is_group,
                accounting_group: if r.is_group {
                    name.clone()
                } else {
                    self.assigned_group(name)
                },
            })
            .collect()
    }

    /// Inserts a record as-is (used by `condor_userprio -l` import).
    pub fn insert_record(&mut self, name: String, record: Record) {
        self.ledger.insert(name, record);
    }

    /// Sets the last tick time directly (used by import).
    pub fn set_last_tick(&mut self, t: Option<i64>) {
        self.last_tick = t;
    }

    fn check_name(name: &str) -> Result<(), AccountantError> {
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(AccountantError::BadName {
                name: name.to_string(),
                why: "submitter names may not be empty or contain spaces".into(),
            });
        }
        Ok(())
    }

    fn entry(&mut self, name: &str) -> &mut Record {
        if !self.ledger.contains_key(name) {
            let factor = self.default_factor(name);
            self.ledger
                .insert(name.to_string(), Record::new(factor, !name.contains('@')));
        }
        // The key was just inserted if absent.
        self.ledger.get_mut(name).expect("record present")
    }

    fn existing(&mut self, name: &str) -> Result<&mut Record, AccountantError> {
        self.ledger
            .get_mut(name)
            .ok_or_else(|| AccountantError::UnknownSubmitter(name.to_string()))
    }

    /// A value an edit sets: finite, at least `min`, at most [`MAX_LEDGER_VALUE`].
    fn finite(what: &str, v: f64, min: f64) -> Result<(), AccountantError> {
        if !v.is_finite() || v < min || v > MAX_LEDGER_VALUE {
            return Err(AccountantError::BadValue {
                what: what.to_string(),
                value: v,
            });
        }
        Ok(())
    }

    /// Applies one command. Deterministic: no clock, no randomness. Err leaves the ledger unchanged.
    pub fn apply(&mut self, cmd: &AccountantCommand) -> Result<(), AccountantError> {
        use AccountantCommand as C;
        match cmd {
            C::Tick { now, usage } => self.tick(*now, usage),
            C::SetParams(p) => {
                p.validate()?;
                self.params = p.clone();
                // Factors nobody set follow the new defaults, as a freshly started
                // HTCondor negotiator would assign them.
                let names: Vec<String> = self.ledger.keys().cloned().collect();
                for n in names {
                    let f = self.default_factor(&n);
                    if let Some(r) = self.ledger.get_mut(&n) {
                        if !r.factor_set {
                            r.priority_factor = f;
                        }
                    }
                }
                Ok(())
            }
            C::SetPriority { name, value } => {
                Self::check_name(name)?;
                Self::finite("priority", *value, 0.0)?;
                self.entry(name).real_priority = value.max(MIN_PRIORITY);
                Ok(())
            }
            C::SetFactor { name, value } => {
                Self::check_name(name)?;
                Self::finite(
                    "priority factor (must be >= 1)",
                    *value,
                    MIN_PRIORITY_FACTOR,
                )?;
                let r = self.entry(name);
                r.priority_factor = *value;
                r.factor_set = true;
                Ok(())
            }
            C::SetFloor { name, value } => {
                Self::check_name(name)?;
                Self::finite("floor (must be >= 0)", *value, 0.0)?;
                self.entry(name).floor = *value;
                Ok(())
            }
            C::SetCeiling { name, value } => {
                Self::check_name(name)?;
                if !value.is_finite() || *value > MAX_LEDGER_VALUE {
                    return Err(AccountantError::BadValue {
                        what: "ceiling".into(),
                        value: *value,
                    });
                }
                self.entry(name).ceiling = if *value < 0.0 { -1.0 } else { *value };
                Ok(())
            }
            C::ResetUsage { name } => {
                let now = self.last_tick.unwrap_or(0);
                let r = self.existing(name)?;
                r.accumulated_usage = 0.0;
                r.begin_usage_time = now;
                Ok(())
            }
            C::ResetAll => {
                let now = self.last_tick.unwrap_or(0);
                for r in self.ledger.values_mut() {
                    r.accumulated_usage = 0.0;
                    r.begin_usage_time = now;
                }
                Ok(())
            }
            C::Delete { name } => self
                .ledger
                .remove(name)
                .map(|_| ())
                .ok_or_else(|| AccountantError::UnknownSubmitter(name.clone())),
            C::SetAccumulatedUsage { name, value } => {
                Self::finite("accumulated usage", *value, 0.0)?;
                self.existing(name)?.accumulated_usage = *value;
                Ok(())
            }
            C::SetBeginUsageTime { name, time } => {
                Self::finite("begin usage time", *time as f64, 0.0)?;
                self.existing(name)?.begin_usage_time = *time;
                Ok(())
            }
            C::SetLastUsageTime { name, time } => {
                Self::finite("last usage time", *time as f64, 0.0)?;
                self.existing(name)?.last_usage_time = *time;
                Ok(())
            }
        }
    }

    /// The tick: validate everything first so an error changes nothing, then age and charge.
    fn tick(&mut self, now: i64, usage: &[Usage]) -> Result<(), AccountantError> {
        if let Some(last) = self.last_tick {
            if now < last {
                return Err(AccountantError::TimeWentBackwards { last, now });
            }
        }
        // Sum usage per submitter (a submitter may be reported in several parts).
        let mut per_sub: BTreeMap<&str, f64> = BTreeMap::new();
        for u in usage {
            Self::check_name(&u.submitter)?;
            if !u.weighted_slots.is_finite()
                || u.weighted_slots < 0.0
                || u.weighted_slots > MAX_WEIGHTED_SLOTS
            {
                return Err(AccountantError::BadValue {
                    what: format!("weighted slots in use by {}", u.submitter),
                    value: u.weighted_slots,
                });
            }
            let sum = per_sub.entry(u.submitter.as_str()).or_insert(0.0);
            *sum += u.weighted_slots;
            if *sum > MAX_WEIGHTED_SLOTS {
                return Err(AccountantError::BadValue {
                    what: format!("weighted slots in use by {}", u.submitter),
                    value: *sum,
                });
            }
        }
        // Direct usage per group and subtree usage per group.
        let mut direct: BTreeMap<String, f64> = BTreeMap::new();
        let mut hier: BTreeMap<String, f64> = BTreeMap::new();
        for (&sub, &w) in &per_sub {
            let g = if sub.contains('@') {
                self.assigned_group(sub)
            } else {
                continue;
            };
            *direct.entry(g.clone()).or_insert(0.0) += w;
            if g != ROOT_GROUP {
                let mut part = g.as_str();
                loop {
                    *hier.entry(part.to_string()).or_insert(0.0) += w;
                    match part.rfind('.') {
                        Some(p) => part = &part[..p],
                        None => break,
                    }
                }
            }
        }
        // Make sure every configured group, the root and every charged submitter has a record.
        let mut to_create: Vec<String> = vec![ROOT_GROUP.to_string()];
        to_create.extend(self.params.group_names.iter().cloned());
        to_create.extend(per_sub.keys().map(|s| s.to_string()));
        to_create.extend(hier.keys().cloned());
        for n in &to_create {
            self.entry(n);
        }
        let dt = self.last_tick.map(|l| now.saturating_sub(l)).unwrap_or(0);
        let beta = if dt > 0 {
            0.5f64.powf(dt as f64 / self.params.priority_halflife)
        } else {
            1.0
        };
        for (name, r) in self.ledger.iter_mut() {
            let used = if r.is_group {
                direct.get(name).copied().unwrap_or(0.0)
            } else {
                per_sub.get(name.as_str()).copied().unwrap_or(0.0)
            };
            let hier_used = if r.is_group {
                hier.get(name).copied().unwrap_or(0.0)
            } else {
                0.0
            };
            // HTCondor: a group's priority follows the subtree usage when there is any.
            let prio_usage = if hier_used > 0.0 { hier_used } else { used };
            if dt > 0 {
                let old = r.real_priority.max(MIN_PRIORITY);
                r.real_priority = (old * beta + prio_usage * (1.0 - beta)).max(MIN_PRIORITY);
                // Bounded so that no number of ticks makes it infinite (see MAX_LEDGER_VALUE).
                r.accumulated_usage = (r.accumulated_usage + used * dt as f64).min(f64::MAX / 2.0);
                if r.accumulated_usage > 0.0 && r.begin_usage_time == 0 {
                    r.begin_usage_time = now;
                }
                if used > 0.0 {
                    r.last_usage_time = now;
                }
            }
            r.weighted_slots_at_last_tick = used;
            r.hier_weighted_slots_at_last_tick = hier_used;
        }
        self.last_tick = Some(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
