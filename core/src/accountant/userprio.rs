//! `condor_userprio -l` export and import.
//!
//! Two layouts exist: the flat one (one ad, attributes numbered `Name1`, `Priority1`, ...,
//! plus `LastUpdate` and `NumSubmittors`) and `-modular` (one ad per submitter or group with
//! unnumbered attributes). Both are read; the flat one is written.
use super::*;
use classad::{ClassAd, Value};

/// Error reading a `condor_userprio -l` dump: names the file and the ad or attribute.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct UserprioParseError {
    pub source_name: String,
    pub message: String,
}

fn num(ad: &ClassAd, name: &str) -> Option<f64> {
    ad.eval_attr(name).as_number()
}

fn text(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.eval_attr(name) {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

/// Reads one record whose attributes carry `suffix` (`"3"` in the flat form, `""` in -modular).
fn record_from(ad: &ClassAd, suffix: &str, acct: &Accountant) -> Option<(String, Record)> {
    let a = |n: &str| format!("{n}{suffix}");
    let name = text(ad, &a("Name"))?;
    let is_group = match ad.eval_attr(&a("IsAccountingGroup")) {
        Value::Bool(b) => b,
        _ => !name.contains('@'),
    };
    // HTCondor prints 0 for a factor nobody set (groups, often); below 1 means "use the
    // default", as Accountant.cpp's GetPriorityFactor reads it.
    let set_factor = num(ad, &a("PriorityFactor")).filter(|f| *f >= MIN_PRIORITY_FACTOR);
    let factor = set_factor.unwrap_or_else(|| acct.default_factor(&name));
    let rec = Record {
        real_priority: num(ad, &a("Priority"))
            .unwrap_or(MIN_PRIORITY)
            .max(MIN_PRIORITY),
        priority_factor: factor,
        factor_set: set_factor.is_some(),
        floor: num(ad, &a("Floor")).unwrap_or(0.0).max(0.0),
        ceiling: num(ad, &a("Ceiling"))
            .map(|c| if c < 0.0 { -1.0 } else { c })
            .unwrap_or(-1.0),
        accumulated_usage: num(ad, &a("WeightedAccumulatedUsage"))
            .or_else(|| num(ad, &a("AccumulatedUsage")))
            .unwrap_or(0.0),
        begin_usage_time: num(ad, &a("BeginUsageTime")).unwrap_or(0.0) as i64,
        last_usage_time: num(ad, &a("LastUsageTime")).unwrap_or(0.0) as i64,
        weighted_slots_at_last_tick: num(ad, &a("WeightedResourcesUsed"))
            .or_else(|| num(ad, &a("ResourcesUsed")))
            .unwrap_or(0.0),
        hier_weighted_slots_at_last_tick: num(ad, &a("HierWeightedResourcesUsed")).unwrap_or(0.0),
        is_group,
    };
    Some((name, rec))
}

/// Parses a `condor_userprio -l` (or `-l -modular`) dump into an accountant with `params`.
pub fn parse_userprio(
    text_in: &str,
    source_name: &str,
    params: AccountantParams,
) -> Result<Accountant, UserprioParseError> {
    let err = |m: String| UserprioParseError {
        source_name: source_name.to_string(),
        message: m,
    };
    let ads = classad::parse_old_ads_strict(text_in).map_err(|e| err(e.to_string()))?;
    let mut acct = Accountant::new(params);
    let mut last: Option<i64> = None;
    for (i, ad) in ads.iter().enumerate() {
        if let Some(t) = num(ad, "LastUpdate") {
            last = Some(last.map_or(t as i64, |l: i64| l.max(t as i64)));
        }
        if ad.lookup("Name1").is_some() || ad.lookup("NumSubmittors").is_some() {
            let n = num(ad, "NumSubmittors").map(|v| v as usize).unwrap_or(0);
            let mut k = 1;
            loop {
                match record_from(ad, &k.to_string(), &acct) {
                    Some((name, rec)) => acct.insert_record(name, rec),
                    None if k > n => break,
                    None => {
                        return Err(err(format!(
                            "ad {}: Name{k} is missing or not a string",
                            i + 1
                        )))
                    }
                }
                k += 1;
            }
        } else if ad.lookup("Name").is_some() {
            let (name, rec) = record_from(ad, "", &acct)
                .ok_or_else(|| err(format!("ad {}: Name is not a string", i + 1)))?;
            acct.insert_record(name, rec);
        } else if ad.lookup("LastUpdate").is_none() && !ad.is_empty() {
            return Err(err(format!(
                "ad {}: neither Name nor Name1 (is this condor_userprio -l output?)",
                i + 1
            )));
        }
    }
    acct.set_last_tick(last);
    Ok(acct)
}

impl Accountant {
    /// The ledger as `condor_userprio -l` prints it (flat form), readable by [`parse_userprio`].
    pub fn to_userprio_long(&self, now: i64) -> String {
        let mut out = String::new();
        let last = self.last_tick().unwrap_or(now);
        out.push_str(&format!("LastUpdate = {last}\n"));
        let rows = self.userprio_rows(now);
        for (i, r) in rows.iter().enumerate() {
            let k = i + 1;
            let rec = self.record(&r.name);
            out.push_str(&format!("Name{k} = {}\n", Value::str(&r.name)));
            out.push_str(&format!("Priority{k} = {}\n", Value::Real(r.real_priority)));
            out.push_str(&format!(
                "PriorityFactor{k} = {}\n",
                Value::Real(r.priority_factor)
            ));
            out.push_str(&format!(
                "EffectivePriority{k} = {}\n",
                Value::Real(r.effective_priority)
            ));
            out.push_str(&format!(
                "WeightedResourcesUsed{k} = {}\n",
                Value::Real(r.resources_used)
            ));
            if let Some(rec) = rec {
                if rec.is_group {
                    out.push_str(&format!(
                        "HierWeightedResourcesUsed{k} = {}\n",
                        Value::Real(rec.hier_weighted_slots_at_last_tick)
                    ));
                }
            }
            out.push_str(&format!(
                "WeightedAccumulatedUsage{k} = {}\n",
                Value::Real(r.accumulated_usage)
            ));
            out.push_str(&format!("BeginUsageTime{k} = {}\n", r.begin_usage_time));
            out.push_str(&format!("LastUsageTime{k} = {}\n", r.last_usage_time));
            out.push_str(&format!(
                "IsAccountingGroup{k} = {}\n",
                if r.is_group { "true" } else { "false" }
            ));
            out.push_str(&format!(
                "AccountingGroup{k} = {}\n",
                Value::str(&r.accounting_group)
            ));
            out.push_str(&format!("Ceiling{k} = {}\n", Value::Real(r.ceiling)));
            out.push_str(&format!("Floor{k} = {}\n", Value::Real(r.floor)));
        }
        out.push_str(&format!("NumSubmittors = {}\n", rows.len()));
        out
    }
}
