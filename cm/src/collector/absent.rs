//! Absent and offline ads through Raft, so they survive any crash.
//!
//! The collector table finds them (an expired slot that `ABSENT_REQUIREMENTS` keeps, an ad
//! advertised with `Offline = true`) on every CM, but only the Raft leader writes them
//! (`crate::leader::absent` commits what [`plan`] says): `PutAd` for a hidden ad the
//! replicated state does not hold yet, `RemoveAd` when the machine's next live update
//! (received directly or relayed) is newer than the stored ad, and `RemoveAd` after
//! `ABSENT_EXPIRE_ADS_AFTER` (never when 0). Every CM mirrors the replicated ads into its
//! table ([`spawn_mirror`], [`AdTable::sync_replicated`]), so `condor_status -absent` gives the
//! same answer on any CM, also right after a full-cluster restart. A hidden ad found here and
//! not committed yet is kept, and proposed by whichever CM leads next, however long the
//! cluster goes without a leader: a rack going down during an election is not forgotten.
use super::service::SharedTable;
use super::{AdKey, AdTable, ReplicatedAd};
use aerie_core::state::{AdRecord, Command};
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

/// The bucket of `PoolState.ads` holding offline ads (absent ads go under their `MyType`).
pub const OFFLINE_BUCKET: &str = "Offline";

/// The replicated ads: bucket -> record name -> record (`PoolState.ads`).
pub type Replicated = BTreeMap<String, BTreeMap<String, AdRecord>>;

/// The name an ad is stored under in `PoolState.ads`: its `Name`, plus its address when it
/// has one (two machines may give their slots the same name).
pub fn record_name(key: &AdKey) -> String {
    if key.addr.is_empty() {
        key.name.clone()
    } else {
        format!("{} {}", key.name, key.addr)
    }
}

fn bucket(key: &AdKey, offline: bool) -> String {
    if offline {
        OFFLINE_BUCKET.to_string()
    } else {
        key.ad_type.as_str().to_string()
    }
}

/// The replicated ads as the table takes them.
pub fn replicated_ads(r: &Replicated) -> Vec<ReplicatedAd<'_>> {
    r.iter()
        .flat_map(|(b, m)| {
            let offline = b == OFFLINE_BUCKET;
            m.iter().map(move |(name, rec)| ReplicatedAd {
                bucket: b,
                name,
                text: &rec.text,
                time: rec.time,
                offline,
            })
        })
        .collect()
}

/// What the leader should commit now, given its table and the replicated ads. Pure, so the
/// rules are unit-tested without Raft.
pub fn plan(table: &AdTable, replicated: &Replicated, now: i64) -> Vec<Command> {
    let mut out = Vec::new();
    let expire_after = table.params().absent_expire_ads_after;
    // 1. Hidden ads found here (not mirrored from the replicated state), however old.
    for h in table.hidden() {
        if h.replicated {
            continue;
        }
        let b = bucket(&h.key, h.offline);
        let name = record_name(&h.key);
        let held = replicated.get(&b).and_then(|m| m.get(&name));
        let differs = !matches!(held, Some(r) if r.text == h.text && r.time == h.since);
        if differs {
            out.push(Command::PutAd {
                ad_type: b,
                name,
                text: h.text,
                time: h.since,
            });
        }
    }
    // 2. Replicated ads whose machine is back, or that are past ABSENT_EXPIRE_ADS_AFTER.
    let mut removing = HashSet::new();
    for (b, m) in replicated {
        for (name, rec) in m {
            // The key as mirrored (parsing the record only if it is not mirrored yet).
            let key = match table.mirrored_key(b, name) {
                Some(k) => Some(k.clone()),
                None => key_of(&rec.text),
            };
            let back = key
                .and_then(|k| table.live_updated(&k))
                .is_some_and(|updated| updated >= rec.time);
            let expired = b != OFFLINE_BUCKET
                && expire_after > 0
                && now.saturating_sub(rec.time) > expire_after;
            if (back || expired) && removing.insert((b.clone(), name.clone())) {
                out.push(Command::RemoveAd {
                    ad_type: b.clone(),
                    name: name.clone(),
                });
            }
        }
    }
    out
}

/// The table key of a stored ad's text.
fn key_of(text: &str) -> Option<AdKey> {
    let mut t = AdTable::default();
    t.advertise_text(text, 0).ok().map(|(k, _)| k)
}

/// Mirrors the replicated ads into the table, every `every` until aborted (every CM).
pub fn spawn_mirror(
    state: crate::raft::store::SharedState,
    table: SharedTable,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut reported = HashSet::new();
        loop {
            tick.tick().await;
            let replicated: Replicated = state
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .state
                .ads
                .clone();
            let mut t = table.write().unwrap_or_else(|p| p.into_inner());
            for bad in t.sync_replicated(&replicated_ads(&replicated)) {
                // Once per distinct problem, not every sweep.
                if reported.insert(bad.clone()) {
                    tracing::warn!(error = %bad, "a replicated absent/offline ad cannot be read");
                }
            }
        }
    })
}
