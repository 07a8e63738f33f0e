//! Step 3 of a cycle: who uses which slots, for the accountant's tick.
//!
//! HTCondor's rule (the accountant's `CheckMatches`, and the negotiator cycle's own usage
//! count in `aerie_core::negotiator`): every slot in state `Claimed` (or `Preempting`) that is not
//! a partitionable slot charges its `SlotWeight` (else `Cpus`, else 1; 1 when slot weights are
//! off) to the slot's `AccountingGroup` if it has one, else to its `RemoteUser`.
use aerie_core::accountant::{bounded_slot_weight, Usage};
use classad::{ClassAd, Value};
use std::collections::BTreeMap;

fn num(ad: &ClassAd, name: &str) -> Option<f64> {
    match ad.eval_attr(name) {
        Value::Int(i) => Some(i as f64),
        Value::Real(r) if r.is_finite() => Some(r),
        _ => None,
    }
}

fn nonempty_str(ad: &ClassAd, name: &str) -> Option<String> {
    super::snapshot::attr_str(ad, name).filter(|s| !s.is_empty())
}

/// The weight a slot charges, bounded ([`bounded_slot_weight`]) so that no slot ad can make a
/// submitter's usage unbounded.
pub fn slot_weight(ad: &ClassAd, use_slot_weights: bool) -> f64 {
    if !use_slot_weights {
        return 1.0;
    }
    num(ad, "SlotWeight")
        .or_else(|| num(ad, "Cpus"))
        .filter(|w| *w >= 0.0)
        .map(bounded_slot_weight)
        .unwrap_or(1.0)
}

/// Weighted slots in use per submitter, sorted by name. A slot whose user name the
/// accountant would refuse (empty, spaces) is skipped with a warning rather than failing the
/// whole tick.
pub fn claimed_usage(slots: &[ClassAd], use_slot_weights: bool) -> Vec<Usage> {
    let mut per: BTreeMap<String, f64> = BTreeMap::new();
    for ad in slots {
        let state = super::snapshot::attr_str(ad, "State").unwrap_or_default();
        if state != "Claimed" && state != "Preempting" {
            continue;
        }
        if matches!(ad.eval_attr("PartitionableSlot"), Value::Bool(true)) {
            continue;
        }
        let Some(who) =
            nonempty_str(ad, "AccountingGroup").or_else(|| nonempty_str(ad, "RemoteUser"))
        else {
            continue;
        };
        if who.chars().any(|c| c.is_whitespace() || c.is_control()) {
            tracing::warn!(
                slot = super::snapshot::attr_str(ad, "Name").unwrap_or_default(),
                user = who,
                "claimed slot names a user with spaces; its usage is not charged"
            );
            continue;
        }
        *per.entry(who).or_insert(0.0) += slot_weight(ad, use_slot_weights);
    }
    per.into_iter()
        .map(|(submitter, weighted_slots)| Usage {
            submitter,
            weighted_slots,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_old_ads_strict(text).unwrap().remove(0)
    }

    #[test]
    fn claimed_slots_charge_group_else_user_with_their_weight() {
        let slots = vec![
            ad("Name = \"s1\"\nState = \"Claimed\"\nRemoteUser = \"alice@p\"\nSlotWeight = 2\n"),
            ad("Name = \"s2\"\nState = \"Claimed\"\nRemoteUser = \"alice@p\"\nCpus = 4\n"),
            ad("Name = \"s3\"\nState = \"Claimed\"\nRemoteUser = \"bob@p\"\nAccountingGroup = \"group_a.bob@p\"\nSlotWeight = Cpus * 2\nCpus = 3\n"),
            ad("Name = \"s4\"\nState = \"Preempting\"\nRemoteUser = \"carol@p\"\n"),
            // Not charged: idle, partitionable, unnamed, bad name.
            ad("Name = \"s5\"\nState = \"Unclaimed\"\nRemoteUser = \"dave@p\"\n"),
            ad("Name = \"s6\"\nState = \"Claimed\"\nPartitionableSlot = true\nRemoteUser = \"erin@p\"\n"),
            ad("Name = \"s7\"\nState = \"Claimed\"\n"),
            ad("Name = \"s8\"\nState = \"Claimed\"\nRemoteUser = \"bad user\"\n"),
        ];
        let u = claimed_usage(&slots, true);
        let got: Vec<(&str, f64)> = u
            .iter()
            .map(|x| (x.submitter.as_str(), x.weighted_slots))
            .collect();
        assert_eq!(
            got,
            vec![("alice@p", 6.0), ("carol@p", 1.0), ("group_a.bob@p", 6.0)]
        );
        // Without slot weights every slot counts 1.
        let u = claimed_usage(&slots, false);
        assert_eq!(u[0].weighted_slots, 2.0);
    }

    /// Issue 13's poison pill: claimed slots advertising `SlotWeight = 1e308` used to make a
    /// submitter's accumulated usage infinite, which JSON writes as `null`, so the next
    /// snapshot could not be read and the CM could not restart.
    #[test]
    fn an_absurd_slot_weight_cannot_poison_the_replicated_ledger() {
        use aerie_core::accountant::{AccountantCommand, MAX_SLOT_WEIGHT};
        use aerie_core::state::{Command, PoolState, Request};
        let slots: Vec<ClassAd> = (0..2)
            .map(|i| {
                ad(&format!(
                    "Name = \"s{i}\"\nState = \"Claimed\"\nRemoteUser = \"mallory@p\"\nSlotWeight = 1e308\n"
                ))
            })
            .collect();
        let usage = claimed_usage(&slots, true);
        assert_eq!(usage[0].weighted_slots, 2.0 * MAX_SLOT_WEIGHT);
        let mut state = PoolState::default();
        for now in [1_000, 1_000 + 86_400 * 365] {
            let r = state.apply(&Request::new(Command::Accountant(
                AccountantCommand::Tick {
                    now,
                    usage: usage.clone(),
                },
            )));
            assert!(r.ok, "{r:?}");
        }
        let rec = state.accountant.record("mallory@p").expect("charged");
        assert!(rec.accumulated_usage.is_finite() && rec.accumulated_usage > 0.0);
        let json = serde_json::to_string(&state).expect("encode");
        let back: PoolState = serde_json::from_str(&json).expect("the state reads back");
        assert_eq!(back, state);
    }
}
