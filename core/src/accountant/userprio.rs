//! The ledger to and from `condor_userprio -l`: thin layers over [`AccountingAd`], which owns
//! the format.
//!
//! An accounting record's `Priority` is the *effective* priority, as HTCondor's accountant
//! reports it (`Accountant::GetPriority` is the real priority times the factor): a fresh
//! submitter with factor 1000 shows 500. [`parse_userprio`] divides by the factor in force
//! (the record's own, or the default for a factor nobody set, which HTCondor prints as 0) and
//! [`Accountant::to_userprio_long`] multiplies (tests/reference/negotiator/userprio_import.sh
//! checks both against the real `condor_userprio`).
use super::userprio_ad::{AccountingAd, AccountingRecord, UserprioParseError};
use super::*;

/// The ledger record for an accounting record, with what HTCondor would assume where the
/// record says nothing.
fn ledger_record(rec: &AccountingRecord, acct: &Accountant) -> Record {
    let is_group = rec
        .is_accounting_group
        .unwrap_or_else(|| !rec.name.contains('@'));
    // HTCondor prints 0 for a factor nobody set (groups, often); below 1 means "use the
    // default", as Accountant.cpp's GetPriorityFactor reads it.
    let set_factor = rec.priority_factor.filter(|f| *f >= MIN_PRIORITY_FACTOR);
    let factor = set_factor.unwrap_or_else(|| acct.default_factor(&rec.name));
    Record {
        real_priority: rec
            .priority
            .map(|effective| effective / factor)
            .unwrap_or(MIN_PRIORITY)
            .max(MIN_PRIORITY),
        priority_factor: factor,
        factor_set: set_factor.is_some(),
        floor: rec.floor.unwrap_or(0.0).max(0.0),
        ceiling: rec
            .ceiling
            .map(|c| if c < 0.0 { -1.0 } else { c })
            .unwrap_or(-1.0),
        accumulated_usage: rec
            .weighted_accumulated_usage
            .or(rec.accumulated_usage)
            .unwrap_or(0.0),
        begin_usage_time: rec.begin_usage_time.unwrap_or(0),
        last_usage_time: rec.last_usage_time.unwrap_or(0),
        weighted_slots_at_last_tick: rec
            .weighted_resources_used
            .or(rec.resources_used.map(|n| n as f64))
            .unwrap_or(0.0),
        hier_weighted_slots_at_last_tick: rec.hier_weighted_resources_used.unwrap_or(0.0),
        is_group,
    }
}

/// Parses a `condor_userprio -l` (or `-l -modular`) dump into an accountant with `params`.
pub fn parse_userprio(
    text: &str,
    source_name: &str,
    params: AccountantParams,
) -> Result<Accountant, UserprioParseError> {
    let dump = AccountingAd::parse(text, source_name)?;
    let mut acct = Accountant::new(params);
    for rec in &dump.records {
        let record = ledger_record(rec, &acct);
        acct.insert_record(rec.name.clone(), record);
    }
    acct.set_last_tick(dump.last_update);
    Ok(acct)
}

impl Accountant {
    /// The ledger as `condor_userprio -l` prints it (flat form), readable by [`parse_userprio`].
    pub fn to_userprio_long(&self, now: i64) -> String {
        let records = self
            .userprio_rows(now)
            .into_iter()
            .map(|row| {
                let hier = self
                    .record(&row.name)
                    .filter(|r| r.is_group)
                    .map(|r| r.hier_weighted_slots_at_last_tick);
                AccountingRecord {
                    priority: Some(row.effective_priority),
                    priority_factor: Some(row.priority_factor),
                    weighted_resources_used: Some(row.resources_used),
                    hier_weighted_resources_used: hier,
                    weighted_accumulated_usage: Some(row.accumulated_usage),
                    begin_usage_time: Some(row.begin_usage_time),
                    last_usage_time: Some(row.last_usage_time),
                    is_accounting_group: Some(row.is_group),
                    accounting_group: Some(row.accounting_group),
                    ceiling: Some(row.ceiling),
                    floor: Some(row.floor),
                    name: row.name,
                    ..Default::default()
                }
            })
            .collect();
        AccountingAd {
            last_update: Some(self.last_tick().unwrap_or(now)),
            records,
        }
        .to_long()
    }
}
