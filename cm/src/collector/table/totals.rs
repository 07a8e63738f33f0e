//! Totals over the table: the ads of a query grouped by the values of some attributes, with
//! a count and integer sums per group — what `condor_status -total` prints (by Arch/OpSys and
//! State) and the totals under its `-submitters` table (running, idle and held jobs).
//!
//! HTCondor's condor_status fetches every ad and counts on the client
//! (src/condor_status.V6/totals.cpp, `TrackTotals`); at 50,000 slots that is hundreds of
//! megabytes over the wire. Here the CM counts under its read lock and answers with a few
//! rows; how the rows are labelled and printed stays the client's business.
use super::{AdTable, Query, LAST_HEARD_FROM};
use classad::Value;
use std::collections::HashMap;

/// One group of [`AdTable::totals`].
#[derive(Clone, Debug, PartialEq)]
pub struct TotalsRow {
    /// The evaluated values of the grouping attributes, in the order asked.
    pub key: Vec<Value>,
    /// How many ads fell in the group.
    pub count: u64,
    /// The sums of the summed attributes, in the order asked: each evaluated as an integer,
    /// 0 when it is not one (as condor_status counts a missing `RunningJobs`).
    pub sums: Vec<i64>,
}

impl AdTable {
    /// The ads `q` selects (its projection and limit are ignored), grouped by the values of
    /// `group_by` evaluated in each ad (with `LastHeardFrom` as queries see it), with the
    /// count and the sums of `sum` per group, in the order each group was first met. Fails,
    /// as [`AdTable::try_query`] does, once the constraint has cost more than `budget`.
    pub fn totals(
        &self,
        q: &Query,
        group_by: &[String],
        sum: &[String],
        budget: u64,
    ) -> Result<Vec<TotalsRow>, classad::EvalLimit> {
        let stamp_always = group_by
            .iter()
            .chain(sum)
            .any(|a| a.eq_ignore_ascii_case(LAST_HEARD_FROM));
        let mut rows: Vec<TotalsRow> = Vec::new();
        // Keyed by the values' debug form: exact (reals included) and hashable, which
        // `Value` itself is not.
        let mut index: HashMap<String, usize> = HashMap::new();
        self.scan(q, budget, stamp_always, |_, e, stamped| {
            let ad = stamped.as_ref().unwrap_or(&e.ad);
            let key: Vec<Value> = group_by.iter().map(|a| ad.eval_attr(a)).collect();
            let i = *index.entry(format!("{key:?}")).or_insert_with(|| {
                rows.push(TotalsRow {
                    key,
                    count: 0,
                    sums: vec![0; sum.len()],
                });
                rows.len() - 1
            });
            let row = &mut rows[i];
            row.count += 1;
            for (s, a) in row.sums.iter_mut().zip(sum) {
                *s = s.saturating_add(ad.eval_attr(a).as_int().unwrap_or(0));
            }
            true
        })?;
        Ok(rows)
    }
}
