//! Keeping CMs in step: last-writer-wins for relayed updates and invalidations, tombstones,
//! the digest comparison, Lamport ordering of sequence numbers, and relayed slots that arrive
//! already expired.
use super::tests::{absent_params, params, slot, state, T0};
use super::*;

fn v(time: i64, seq: u64, origin: u64) -> Version {
    Version { time, seq, origin }
}

#[test]
fn relayed_ads_are_stored_last_writer_wins_and_duplicates_ignored() {
    let mut t = AdTable::new(params());
    t.set_origin_id(2);
    let a = slot("slot1@a", "Unclaimed", 1024);
    let b = slot("slot1@a", "Claimed", 1024);
    assert!(t.apply_relayed_text(&a, v(T0, 5, 1), T0).unwrap().is_some());
    // The same version again (a duplicate) and an older one are ignored.
    assert!(t.apply_relayed_text(&a, v(T0, 5, 1), T0).unwrap().is_none());
    assert!(t.apply_relayed_text(&b, v(T0, 4, 1), T0).unwrap().is_none());
    assert_eq!(state(&t, "slot1@a").as_deref(), Some("Unclaimed"));
    // Same second, another origin: the higher id wins the tie only on equal sequence.
    assert!(t.apply_relayed_text(&b, v(T0, 5, 3), T0).unwrap().is_some());
    assert_eq!(state(&t, "slot1@a").as_deref(), Some("Claimed"));
    // Expiry uses the origin's receive time: relayed at T0, it expires at T0 + 900 here too.
    assert!(t.expire(T0 + 900).removed.is_empty());
    assert_eq!(t.expire(T0 + 901).removed.len(), 1);
    // An ad already expired at its origin is not brought back.
    assert!(t
        .apply_relayed_text(&a, v(T0, 9, 1), T0 + 2000)
        .unwrap()
        .is_none());
    assert!(t.is_empty());
}

#[test]
fn relayed_invalidations_win_over_older_copies_only() {
    let mut t = AdTable::new(params());
    let a = slot("slot1@a", "Unclaimed", 1024);
    let key = AdKey::new(AdType::Machine, "slot1@a", "");
    t.apply_relayed_text(&a, v(T0, 1, 1), T0).unwrap();
    assert!(
        !t.apply_relayed_invalidate(&key, v(T0 - 1, 1, 2), T0),
        "older: ignored"
    );
    assert!(t.apply_relayed_invalidate(&key, v(T0 + 1, 1, 2), T0));
    assert!(t.is_empty());
    // The tombstone keeps an older copy (a late relay or a digest) from resurrecting it.
    assert!(t
        .apply_relayed_text(&a, v(T0, 1, 1), T0 + 2)
        .unwrap()
        .is_none());
    assert_eq!(t.relay_item(&key).unwrap().text, None);
    // A newer update brings it back.
    assert!(t
        .apply_relayed_text(&a, v(T0 + 5, 1, 1), T0 + 5)
        .unwrap()
        .is_some());
    // A local invalidation reports what to relay.
    let items = t.invalidate_name(&AdType::Machine, "slot1@a", "", T0 + 6);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].text, None);
    assert!(items[0].version.time == T0 + 6);
}

#[test]
fn digest_diff_sends_newer_and_missing_and_asks_for_the_rest() {
    let mut mine = AdTable::new(params());
    mine.set_origin_id(1);
    let mut theirs = AdTable::new(params());
    theirs.set_origin_id(2);
    // Both hold s1 (theirs newer); only mine holds s2; only theirs holds s3; s4 equal.
    let s = |n: &str, st: &str| slot(n, st, 1024);
    mine.apply_relayed_text(&s("s1@a", "Unclaimed"), v(T0, 1, 1), T0)
        .unwrap();
    theirs
        .apply_relayed_text(&s("s1@a", "Claimed"), v(T0 + 1, 1, 2), T0)
        .unwrap();
    mine.apply_relayed_text(&s("s2@a", "Unclaimed"), v(T0, 2, 1), T0)
        .unwrap();
    theirs
        .apply_relayed_text(&s("s3@a", "Unclaimed"), v(T0, 3, 2), T0)
        .unwrap();
    mine.apply_relayed_text(&s("s4@a", "Unclaimed"), v(T0, 4, 1), T0)
        .unwrap();
    theirs
        .apply_relayed_text(&s("s4@a", "Unclaimed"), v(T0, 4, 1), T0)
        .unwrap();

    let diff = theirs.diff_digest(&mine.digest());
    let key = |n: &str| AdKey::new(AdType::Machine, n, "");
    let newer: Vec<&AdKey> = diff.newer.iter().map(|i| &i.key).collect();
    assert_eq!(newer, vec![&key("s1@a"), &key("s3@a")]);
    assert_eq!(diff.wanted, vec![key("s2@a")]);
    // Applying both directions converges.
    for i in &diff.newer {
        mine.apply_relayed_text(i.text.as_deref().unwrap(), i.version, T0)
            .unwrap();
    }
    for k in &diff.wanted {
        let i = mine.relay_item(k).unwrap();
        theirs
            .apply_relayed_text(i.text.as_deref().unwrap(), i.version, T0)
            .unwrap();
    }
    assert_eq!(mine.digest(), theirs.digest());
    assert_eq!(theirs.diff_digest(&mine.digest()), DigestDiff::default());
}

#[test]
fn a_change_made_after_seeing_a_relayed_one_is_ordered_after_it() {
    // CM 2 holds CM 1's ad (sequence 40); an invalidation on CM 2 in the same second must
    // win on CM 1, although CM 2 itself received few updates.
    let a = slot("slot1@a", "Unclaimed", 1024);
    let mut cm1 = AdTable::new(params());
    cm1.set_origin_id(1);
    let mut cm2 = AdTable::new(params());
    cm2.set_origin_id(2);
    for _ in 0..40 {
        cm1.advertise_text(&a, T0).unwrap();
    }
    let key = AdKey::new(AdType::Machine, "slot1@a", "");
    let held = cm1.relay_item(&key).unwrap();
    cm2.apply_relayed_text(held.text.as_deref().unwrap(), held.version, T0)
        .unwrap();
    let inv = cm2.invalidate_name(&AdType::Machine, "slot1@a", "", T0);
    assert!(inv[0].version > held.version);
    assert!(cm1.apply_relayed_invalidate(&key, inv[0].version, T0));
    assert!(cm1.is_empty());
    // A CM whose clock is behind still orders a node's newer update after the held copy.
    cm2.apply_relayed_text(&a, v(T0 + 10, 1, 1), T0 + 10)
        .unwrap();
    cm2.advertise_text(&slot("slot1@a", "Claimed", 1024), T0 + 5)
        .unwrap();
    assert!(cm2.version_of(&key).unwrap() > v(T0 + 10, 1, 1));
}

#[test]
fn a_relayed_slot_expired_on_arrival_still_becomes_absent() {
    // The relay was slower than the ad's lifetime: a slot ABSENT_REQUIREMENTS keeps is stored
    // so this CM's sweep makes it absent (the leader must learn of it to commit it).
    let mut t = AdTable::new(absent_params("True"));
    let a = format!("{}ClassAdLifetime = 2\n", slot("slot1@a", "Unclaimed", 1));
    assert!(t
        .apply_relayed_text(&a, v(T0, 1, 1), T0 + 10)
        .unwrap()
        .is_some());
    assert_eq!(t.expire(T0 + 10).made_absent.len(), 1);
    // Other ads expired on arrival are dropped.
    let mut t = AdTable::new(absent_params("False"));
    assert!(t
        .apply_relayed_text(&a, v(T0, 1, 1), T0 + 10)
        .unwrap()
        .is_none());
}

/// Issue 13.10: CMs whose clocks disagree by more than an ad's lifetime. A fresh ad relayed by
/// a CM an hour behind is not dropped as expired, and one relayed by a CM an hour ahead does
/// not outlive its lifetime here: the relay carries the ad's age, and each CM expires ads by
/// its own clock.
#[test]
fn relayed_ads_expire_by_their_age_whatever_the_sender_clock() {
    let sl = |name: &str, st: &str| slot(name, st, 1024);
    let mut t = AdTable::new(params());
    let behind = v(T0 - 3600, 1, 2);
    assert!(t
        .apply_relayed_aged(&sl("slow@a", "Unclaimed"), behind, 0, T0)
        .unwrap()
        .is_some());
    let ahead = v(T0 + 3600, 1, 3);
    assert!(t
        .apply_relayed_aged(&sl("fast@a", "Unclaimed"), ahead, 0, T0)
        .unwrap()
        .is_some());
    // Heard of 100 s ago at its origin: expires 100 s early here.
    t.apply_relayed_aged(&sl("aged@a", "Unclaimed"), v(T0, 9, 2), 100, T0)
        .unwrap();
    assert_eq!(t.len(), 3);
    let r = t.expire(T0 + 850);
    assert_eq!(r.removed.len(), 1, "{r:?}");
    let r = t.expire(T0 + 901);
    assert_eq!(r.removed.len(), 2, "{r:?}");
    assert!(t.is_empty());
    // An ad older than its lifetime when it arrives is not stored at all.
    assert!(t
        .apply_relayed_aged(&sl("stale@a", "Unclaimed"), v(T0, 10, 2), 901, T0)
        .unwrap()
        .is_none());
}

#[test]
fn a_table_is_peer_synced_once_compared_or_once_the_wait_is_over() {
    let now = std::time::Instant::now();
    let wait = std::time::Duration::from_secs(30);
    // No relay expects a comparison (a table in a test, a tool): complete as it is.
    assert!(AdTable::new(params()).peer_synced(now));
    let mut t = AdTable::new(params());
    t.expect_peer_sync(now + wait);
    assert!(!t.peer_synced(now));
    assert!(t.peer_synced(now + wait), "the wait is bounded");
    t.mark_peer_synced();
    assert!(t.peer_synced(now));
}
