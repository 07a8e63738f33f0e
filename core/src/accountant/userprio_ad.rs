//! HTCondor's accounting ad, the format of `condor_userprio -l`: the one record type, reader
//! and writer that `cmctl userprio` and `cmctl what-if` share.
//!
//! The negotiator reports its accountant as one ad, the flat layout: `LastUpdate`,
//! `NumSubmittors` and, for each record `N` (groups first, then submitters), `NameN`,
//! `PriorityN`, `PriorityFactorN`, ... `condor_userprio -l -modular` prints one ad per record
//! instead, with the same attributes unnumbered (and `SubmittorId`, which is not kept).
//! [`AccountingAd::parse`] reads both layouts with the `classad` crate's old-syntax parser;
//! [`AccountingAd::to_long`] writes the flat one.
//!
//! The text is HTCondor 23.9.6's, checked against the real `condor_userprio -inputfile FILE
//! -l`, which reads a file and prints it back with `fPrintAd`:
//! * old ClassAd syntax: a string escapes only its quote (`\"`), and every other backslash
//!   stands for itself, so the name `c\d@pool` is written `"c\d@pool"` and `"c\\d@pool"`
//!   reads as a name with two backslashes (`classad_eval`, a new-syntax tool, reads C escapes
//!   instead: the same text is `c\d@pool` there);
//! * reals as `%.16G` with `.0` added to whole numbers (`1000.0`, `0.1`, `1E+20`); `Ceiling`
//!   and `Floor` are integers in HTCondor's ad and are written as integers when whole;
//! * attributes sorted by name without regard to case.
use classad::{ClassAd, Value};

/// Error reading a `condor_userprio -l` dump: names the file and the ad or attribute.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct UserprioParseError {
    /// The file (or other source) the dump came from, as the caller named it.
    pub source_name: String,
    /// What is wrong, naming the ad (`ad 2: ...`) or the line and column of a syntax error.
    pub message: String,
}

/// One record of the accounting ad, a submitter or an accounting group, as HTCondor carries it.
///
/// HTCondor leaves attributes out (groups have no `Ceiling`, submitters no quotas, hand-made
/// and older dumps have fewer), so every field but the name is optional: readers decide what a
/// missing one means. A value of the wrong type reads as missing, as HTCondor's lookups treat
/// it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccountingRecord {
    /// `Name`: `user@domain`, `group.user@domain`, or a group's name (`<none>` for the root).
    pub name: String,
    /// `Priority`: HTCondor's negotiator reports the effective priority here (the real
    /// priority times the factor).
    pub priority: Option<f64>,
    /// `PriorityFactor` (HTCondor reports 0 where nobody set one, as for groups, often).
    pub priority_factor: Option<f64>,
    /// `ResourcesUsed`: slots in use.
    pub resources_used: Option<i64>,
    /// `WeightedResourcesUsed`: weighted slots in use.
    pub weighted_resources_used: Option<f64>,
    /// `HierWeightedResourcesUsed`: a group's weighted slots in use over its whole subtree.
    pub hier_weighted_resources_used: Option<f64>,
    /// `AccumulatedUsage`: slot-seconds used since `BeginUsageTime`.
    pub accumulated_usage: Option<f64>,
    /// `WeightedAccumulatedUsage`: weighted slot-seconds used since `BeginUsageTime`.
    pub weighted_accumulated_usage: Option<f64>,
    /// `BeginUsageTime`: when usage started being accumulated (Unix seconds, 0 for never).
    pub begin_usage_time: Option<i64>,
    /// `LastUsageTime`: when the record last had slots in use (Unix seconds, 0 for never).
    pub last_usage_time: Option<i64>,
    /// `AccountingGroup`: the accounting group of the record (`<none>` outside every group).
    pub accounting_group: Option<String>,
    /// `IsAccountingGroup`: whether the record is a group rather than a submitter.
    pub is_accounting_group: Option<bool>,
    /// `Ceiling`: the most weighted slots the submitter may hold, -1 for no ceiling.
    /// HTCondor's is an integer; Aerie's may have a fraction.
    pub ceiling: Option<f64>,
    /// `Floor`: the weighted slots the submitter is given first, 0 for no floor. HTCondor's is
    /// an integer; Aerie's may have a fraction.
    pub floor: Option<f64>,
    /// `Requested`: the weighted slots a group's submitters asked for in the last cycle.
    pub requested: Option<f64>,
    /// `EffectiveQuota`: a group's quota in the last cycle, after surplus sharing.
    pub effective_quota: Option<f64>,
    /// `ConfigQuota`: a group's configured quota (`GROUP_QUOTA_*`).
    pub config_quota: Option<f64>,
    /// `SubtreeQuota`: the quota of a group and its subgroups together.
    pub subtree_quota: Option<f64>,
    /// `SurplusPolicy`: how a group shares surplus, `no`, `regroup` or `byquota`.
    pub surplus_policy: Option<String>,
    /// `GroupSortKey`: the order groups negotiate in.
    pub group_sort_key: Option<f64>,
    /// `SubmitterShare`: the submitter's share of the pool in the last cycle.
    pub submitter_share: Option<f64>,
    /// `SubmitterLimit`: the weighted slots the submitter was allowed in the last cycle.
    pub submitter_limit: Option<f64>,
}

/// A whole `condor_userprio -l` dump: the time of the last priority update and the records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccountingAd {
    /// `LastUpdate`: when the accountant last updated priorities (Unix seconds). A -modular
    /// dump may carry one per ad; the latest is kept.
    pub last_update: Option<i64>,
    /// The records in the dump's order (`Name1`, `Name2`, ... in the flat layout).
    pub records: Vec<AccountingRecord>,
}

/// A field of a record, typed as the ad carries it.
enum Slot<'a> {
    Real(&'a mut Option<f64>),
    /// A number HTCondor keeps as an integer (`Ceiling`, `Floor`) and Aerie as a real:
    /// written as an integer when whole.
    Whole(&'a mut Option<f64>),
    Int(&'a mut Option<i64>),
    Text(&'a mut Option<String>),
    Flag(&'a mut Option<bool>),
}

impl Slot<'_> {
    /// Sets the field from an attribute's value (missing when it has another type).
    fn read(self, v: &Value) {
        match self {
            Slot::Real(f) | Slot::Whole(f) => *f = v.as_number(),
            Slot::Int(f) => *f = integer(v),
            Slot::Text(f) => *f = v.as_str().map(str::to_string),
            Slot::Flag(f) => *f = v.as_bool(),
        }
    }

    /// The field's value for the ad, if it has one.
    fn value(&self) -> Option<Value> {
        Some(match self {
            Slot::Real(f) => Value::Real((**f)?),
            Slot::Whole(f) => {
                let x = (**f)?;
                if x.fract() == 0.0 && x.abs() < 9.0e15 {
                    Value::Int(x as i64)
                } else {
                    Value::Real(x)
                }
            }
            Slot::Int(f) => Value::Int((**f)?),
            Slot::Text(f) => Value::str(f.as_deref()?),
            Slot::Flag(f) => Value::Bool((**f)?),
        })
    }
}

/// An integer as HTCondor's `LookupInteger` takes it: a real is truncated.
fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => other.as_number().map(|x| x as i64),
    }
}

impl AccountingRecord {
    /// Every attribute but `Name`, by HTCondor's name, with the field that holds it: the one
    /// list the reader fills and the writer prints.
    fn slots(&mut self) -> [(&'static str, Slot<'_>); 21] {
        [
            ("Priority", Slot::Real(&mut self.priority)),
            ("PriorityFactor", Slot::Real(&mut self.priority_factor)),
            ("ResourcesUsed", Slot::Int(&mut self.resources_used)),
            (
                "WeightedResourcesUsed",
                Slot::Real(&mut self.weighted_resources_used),
            ),
            (
                "HierWeightedResourcesUsed",
                Slot::Real(&mut self.hier_weighted_resources_used),
            ),
            ("AccumulatedUsage", Slot::Real(&mut self.accumulated_usage)),
            (
                "WeightedAccumulatedUsage",
                Slot::Real(&mut self.weighted_accumulated_usage),
            ),
            ("BeginUsageTime", Slot::Int(&mut self.begin_usage_time)),
            ("LastUsageTime", Slot::Int(&mut self.last_usage_time)),
            ("AccountingGroup", Slot::Text(&mut self.accounting_group)),
            (
                "IsAccountingGroup",
                Slot::Flag(&mut self.is_accounting_group),
            ),
            ("Ceiling", Slot::Whole(&mut self.ceiling)),
            ("Floor", Slot::Whole(&mut self.floor)),
            ("Requested", Slot::Real(&mut self.requested)),
            ("EffectiveQuota", Slot::Real(&mut self.effective_quota)),
            ("ConfigQuota", Slot::Real(&mut self.config_quota)),
            ("SubtreeQuota", Slot::Real(&mut self.subtree_quota)),
            ("SurplusPolicy", Slot::Text(&mut self.surplus_policy)),
            ("GroupSortKey", Slot::Real(&mut self.group_sort_key)),
            ("SubmitterShare", Slot::Real(&mut self.submitter_share)),
            ("SubmitterLimit", Slot::Real(&mut self.submitter_limit)),
        ]
    }

    /// The record whose attribute names end in `suffix` (`"3"` in the flat layout, `""` in
    /// -modular); `None` when its `Name` is missing or not a string.
    fn read(ad: &ClassAd, suffix: &str) -> Option<AccountingRecord> {
        let name = ad.eval_attr(&format!("Name{suffix}"));
        let mut rec = AccountingRecord {
            name: name.as_str()?.to_string(),
            ..Default::default()
        };
        for (attr, slot) in rec.slots() {
            slot.read(&ad.eval_attr(&format!("{attr}{suffix}")));
        }
        Some(rec)
    }

    /// The record's attributes (those it has), each name followed by `suffix`.
    fn attrs(&self, suffix: &str) -> Vec<(String, Value)> {
        let mut fields = self.clone();
        let mut out = vec![(format!("Name{suffix}"), Value::str(&self.name))];
        for (attr, slot) in fields.slots() {
            if let Some(v) = slot.value() {
                out.push((format!("{attr}{suffix}"), v));
            }
        }
        out
    }
}

impl AccountingAd {
    /// Reads a `condor_userprio -l` dump, flat or `-modular` (ads separated by blank lines,
    /// any mix of the two); `source_name` names it in errors.
    pub fn parse(text: &str, source_name: &str) -> Result<AccountingAd, UserprioParseError> {
        let err = |m: String| UserprioParseError {
            source_name: source_name.to_string(),
            message: m,
        };
        let ads = classad::parse_old_ads_strict(text).map_err(|e| err(e.to_string()))?;
        let mut dump = AccountingAd::default();
        for (i, ad) in ads.iter().enumerate() {
            if let Some(t) = integer(&ad.eval_attr("LastUpdate")) {
                dump.last_update = Some(dump.last_update.map_or(t, |l| l.max(t)));
            }
            if ad.lookup("Name1").is_some() || ad.lookup("NumSubmittors").is_some() {
                dump.read_flat(ad)
                    .map_err(|m| err(format!("ad {}: {m}", i + 1)))?;
            } else if ad.lookup("Name").is_some() {
                let rec = AccountingRecord::read(ad, "")
                    .ok_or_else(|| err(format!("ad {}: Name is not a string", i + 1)))?;
                dump.records.push(rec);
            } else if ad.lookup("LastUpdate").is_none() && !ad.is_empty() {
                return Err(err(format!(
                    "ad {}: neither Name nor Name1 (is this condor_userprio -l output?)",
                    i + 1
                )));
            }
        }
        Ok(dump)
    }

    /// The records of a flat ad: `Name1`, `Name2`, ... up to `NumSubmittors` and on while
    /// there are more; a record missing below `NumSubmittors` is an error.
    fn read_flat(&mut self, ad: &ClassAd) -> Result<(), String> {
        let n = ad
            .eval_attr("NumSubmittors")
            .as_number()
            .map_or(0, |v| v as usize);
        for k in 1.. {
            match AccountingRecord::read(ad, &k.to_string()) {
                Some(rec) => self.records.push(rec),
                None if k > n => break,
                None => return Err(format!("Name{k} is missing or not a string")),
            }
        }
        Ok(())
    }

    /// The flat layout as `condor_userprio -l` prints it, readable by [`AccountingAd::parse`]
    /// and by the real `condor_userprio -inputfile`: `LastUpdate` (when known),
    /// `NumSubmittors` and the records numbered from 1 in order.
    pub fn to_long(&self) -> String {
        let mut attrs = Vec::new();
        if let Some(t) = self.last_update {
            attrs.push(("LastUpdate".to_string(), Value::Int(t)));
        }
        attrs.push((
            "NumSubmittors".to_string(),
            Value::Int(self.records.len() as i64),
        ));
        for (i, rec) in self.records.iter().enumerate() {
            attrs.extend(rec.attrs(&(i + 1).to_string()));
        }
        print_sorted(attrs)
    }
}

/// An ad as HTCondor's `fPrintAd` prints it: one `Name = value` a line in old syntax,
/// attributes sorted by name without regard to case.
fn print_sorted(mut attrs: Vec<(String, Value)>) -> String {
    attrs.sort_by_cached_key(|(name, _)| name.to_ascii_lowercase());
    let mut ad = ClassAd::with_capacity(attrs.len());
    for (name, v) in attrs {
        ad.insert_value(&name, v);
    }
    ad.to_old_syntax()
}

#[cfg(test)]
mod tests;
