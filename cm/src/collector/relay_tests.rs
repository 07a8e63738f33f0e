//! The relay queue (dedup, bound, requeue) and the leader's absent/offline plan.
use super::absent::{plan, record_name, replicated_ads, Replicated, OFFLINE_BUCKET};
use super::relay::{oldest_age, RelayQueue};
use super::*;
use aerie_core::state::{AdRecord, Command};

const T0: i64 = 1_700_000_000;

fn item(name: &str, time: i64) -> RelayItem {
    RelayItem {
        key: AdKey::new(AdType::Machine, name, ""),
        version: Version {
            time,
            seq: 0,
            origin: 1,
        },
        heard: time,
        text: Some(format!("t{time}").into()),
    }
}

#[test]
fn queue_keeps_one_change_per_ad_in_first_queued_order() {
    let mut q = RelayQueue::new(100);
    q.push(item("a", 1));
    q.push(item("b", 1));
    q.push(item("a", 2));
    q.push(item("a", 0)); // older than the queued one: ignored
    assert_eq!(q.len(), 2);
    let got = q.take(10);
    assert_eq!(got, vec![item("a", 2), item("b", 1)]);
    assert!(q.is_empty());
}

#[test]
fn relay_lag_is_the_age_of_the_oldest_change_relayed() {
    let items = [item("a", T0 - 7), item("b", T0 - 2), item("c", T0 + 5)];
    assert_eq!(oldest_age(&items, T0), 7);
    // A change heard "in the future" (a clock step) counts as 0, not negative.
    assert_eq!(oldest_age(&items[2..], T0), 0);
    assert_eq!(oldest_age(&[], T0), 0);
}

#[test]
fn queue_is_bounded_dropping_the_oldest_and_batches_by_size() {
    let mut q = RelayQueue::new(3);
    let dropped: usize = (0..5).map(|i| q.push(item(&format!("s{i}"), i))).sum();
    assert_eq!(dropped, 2);
    assert_eq!(q.take(2), vec![item("s2", 2), item("s3", 3)]);
    // A failed batch goes back unless a newer change for the ad was queued meanwhile.
    q.push(item("s2", 9));
    assert_eq!(q.requeue(vec![item("s2", 2), item("s3", 3)]), 0);
    let rest = q.take(10);
    assert!(rest.contains(&item("s2", 9)) && rest.contains(&item("s3", 3)));
    assert_eq!(rest.len(), 3);
}

fn absent_table() -> AdTable {
    AdTable::new(CollectorParams {
        absent_requirements: Some(classad::parse_expr("True").unwrap()),
        absent_expire_ads_after: 100,
        ..CollectorParams::default()
    })
}

const SLOT: &str =
    "MyType = \"Machine\"\nName = \"s@a\"\nMyAddress = \"<10.0.0.1:1>\"\nMemory = 1\n";

/// The one absent/offline ad a plan commits.
struct Put {
    ad_type: String,
    name: String,
    text: String,
    time: i64,
}

impl Put {
    /// `rep` once the leader's command is committed.
    fn commit_into(&self, rep: &mut Replicated) {
        rep.entry(self.ad_type.clone()).or_default().insert(
            self.name.clone(),
            AdRecord {
                text: self.text.clone(),
                time: self.time,
            },
        );
    }
}

/// The plan's only command, which must be a `PutAd`.
fn only_put(cmds: &[Command]) -> Put {
    match cmds {
        [Command::PutAd {
            ad_type,
            name,
            text,
            time,
        }] => Put {
            ad_type: ad_type.clone(),
            name: name.clone(),
            text: text.clone(),
            time: *time,
        },
        _ => panic!("one PutAd expected: {cmds:?}"),
    }
}

#[test]
fn leader_commits_new_absent_ads_then_removes_them_when_the_machine_returns() {
    let mut t = absent_table();
    t.advertise_text(SLOT, T0).unwrap();
    assert_eq!(t.expire(T0 + 901).made_absent.len(), 1);
    let mut rep = Replicated::new();
    let cmds = plan(&t, &rep, T0 + 902);
    let put = only_put(&cmds);
    assert_eq!(
        (put.ad_type.as_str(), put.name.as_str(), put.time),
        ("Machine", "s@a 10.0.0.1", T0 + 901)
    );
    assert!(put.text.contains("Absent = true"));
    put.commit_into(&mut rep);
    // Once replicated (and mirrored), nothing more to do.
    t.sync_replicated(&replicated_ads(&rep));
    assert!(plan(&t, &rep, T0 + 903).is_empty());

    // A fresh table (a restarted CM) gets the absent ad from the replicated state.
    let mut fresh = absent_table();
    fresh.sync_replicated(&replicated_ads(&rep));
    assert!(fresh.is_absent(&AdType::Machine, "s@a"));

    // The machine's next update: the leader removes the replicated ad.
    fresh.advertise_text(SLOT, T0 + 950).unwrap();
    let cmds = plan(&fresh, &rep, T0 + 951);
    assert!(
        matches!(cmds.as_slice(), [Command::RemoveAd { ad_type, name }] if ad_type == "Machine" && name == "s@a 10.0.0.1"),
        "{cmds:?}"
    );
    // ... and ABSENT_EXPIRE_ADS_AFTER (100 s here) removes one that never comes back.
    let cmds = plan(&absent_table(), &rep, T0 + 901 + 101);
    assert!(
        matches!(cmds.as_slice(), [Command::RemoveAd { .. }]),
        "{cmds:?}"
    );
}

#[test]
fn offline_ads_go_to_their_own_bucket_and_pending_ads_wait_for_a_leader() {
    let mut t = absent_table();
    t.advertise_text(&format!("{SLOT}Offline = true\n"), T0)
        .unwrap();
    let cmds = plan(&t, &Replicated::new(), T0 + 1);
    assert!(
        matches!(cmds.as_slice(), [Command::PutAd { ad_type, .. }] if ad_type == OFFLINE_BUCKET),
        "{cmds:?}"
    );
    // Issue 13.9: not committed for ten minutes (no leader): kept, and the next leader
    // still proposes it.
    t.sync_replicated(&[]);
    assert_eq!(t.len(), 1);
    let cmds = plan(&t, &Replicated::new(), T0 + 600);
    assert!(
        matches!(cmds.as_slice(), [Command::PutAd { .. }]),
        "{cmds:?}"
    );
    // Committed, then removed by the leader: the mirror drops it.
    let mut rep = Replicated::new();
    only_put(&cmds).commit_into(&mut rep);
    t.sync_replicated(&replicated_ads(&rep));
    assert_eq!(t.len(), 1);
    t.sync_replicated(&[]);
    assert!(t.is_empty());
    assert_eq!(record_name(&AdKey::new(AdType::Machine, "n", "")), "n");
}

#[test]
fn replicated_ads_written_elsewhere_are_mirrored_not_rewritten() {
    // A record in new syntax (an admin tool, an older CM): mirrored, never re-committed in
    // this CM's spelling; one that cannot be read is reported and left alone.
    let mut rep = Replicated::new();
    rep.entry("Machine".into()).or_default().insert(
        "s@a".into(),
        AdRecord {
            text: "[ MyType = \"Machine\"; Name = \"s@a\"; Absent = true ]".into(),
            time: T0,
        },
    );
    rep.entry("Machine".into()).or_default().insert(
        "bad".into(),
        AdRecord {
            text: "[ Name = \"bad\" ]".into(),
            time: T0,
        },
    );
    let mut t = absent_table();
    let bad = t.sync_replicated(&replicated_ads(&rep));
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(t.is_absent(&AdType::Machine, "s@a"));
    assert!(plan(&t, &rep, T0 + 1).is_empty());
}

/// A slot ad's text, with a state that tells the copies apart.
fn slot_text(name: &str, state: &str) -> String {
    format!(
        "MyType = \"Machine\"\nName = \"{name}\"\nMachine = \"host\"\nState = \"{state}\"\n\
         Cpus = 1\nMemory = 1024\nStartdIpAddr = \"<10.0.0.1:9618>\"\n"
    )
}

fn shared(origin: u64) -> super::service::SharedTable {
    let mut t = AdTable::new(CollectorParams::default());
    t.set_origin_id(origin);
    std::sync::Arc::new(std::sync::RwLock::new(t))
}

/// A whole digest exchange as the relay runs it, in pages of `page` entries with replies cut
/// at `cap` bytes: returns how often each key was pushed to the answering CM.
fn exchange_in_pages(
    asker: &super::service::SharedTable,
    answerer: &super::service::SharedTable,
    page: usize,
    cap: usize,
) -> std::collections::HashMap<AdKey, usize> {
    use super::relay::{
        answer_digest_capped, apply_relayed, digest_page, item_to_pb, key_from_pb, next_page,
    };
    let digest = asker.read().unwrap().digest();
    let mut pushed = std::collections::HashMap::new();
    let mut after: Option<AdKey> = None;
    let mut requests = 0;
    loop {
        requests += 1;
        assert!(requests < 1000, "the exchange does not end");
        let (req, page_end) = digest_page(1, &digest, after.as_ref(), page);
        assert!(req.entries.len() <= page);
        let reply = answer_digest_capped(answerer, &req, cap);
        apply_relayed(asker, &reply.newer);
        let items: Vec<_> = reply
            .wanted
            .iter()
            .map(|k| {
                let key = key_from_pb(k);
                *pushed.entry(key.clone()).or_insert(0) += 1;
                item_to_pb(&asker.read().unwrap().relay_item(&key).unwrap(), T0)
            })
            .collect();
        apply_relayed(answerer, &items);
        match next_page(
            after.as_ref(),
            reply.covered.as_ref().map(key_from_pb),
            page_end,
        )
        .unwrap()
        {
            Some(k) => after = Some(k),
            None => break,
        }
    }
    assert!(
        requests > 3,
        "the pool was compared in pages ({requests} requests)"
    );
    pushed
}

#[test]
fn digest_pages_and_capped_replies_converge_without_sending_a_key_twice() {
    let (a, b) = (shared(1), shared(2));
    let now = crate::collector::service::unix_now();
    let v = |time: i64, origin: u64| Version {
        time,
        seq: 1,
        origin,
    };
    {
        let (mut a, mut b) = (a.write().unwrap(), b.write().unwrap());
        for i in 0..60 {
            let name = format!("slot{i:03}@h");
            match i % 4 {
                // Only the asker holds it.
                0 => drop(a.apply_relayed_text(&slot_text(&name, "Unclaimed"), v(now, 1), now)),
                // Only the answerer.
                1 => drop(b.apply_relayed_text(&slot_text(&name, "Unclaimed"), v(now, 2), now)),
                // Both; the answerer's copy newer.
                2 => {
                    drop(a.apply_relayed_text(&slot_text(&name, "Unclaimed"), v(now - 5, 1), now));
                    drop(b.apply_relayed_text(&slot_text(&name, "Claimed"), v(now, 2), now));
                }
                // Both, the same version.
                _ => {
                    drop(a.apply_relayed_text(&slot_text(&name, "Owner"), v(now, 1), now));
                    drop(b.apply_relayed_text(&slot_text(&name, "Owner"), v(now, 1), now));
                }
            }
        }
        assert_eq!(a.digest().len(), 45);
        assert_eq!(b.digest().len(), 45);
    }
    // Pages of 7 entries and replies cut after about two ads.
    let pushed = exchange_in_pages(&a, &b, 7, 300);
    assert_eq!(pushed.len(), 15, "the asker's own ads went across");
    assert!(
        pushed.values().all(|n| *n == 1),
        "no key pushed twice: {pushed:?}"
    );
    let (a, b) = (a.read().unwrap(), b.read().unwrap());
    assert_eq!(a.digest(), b.digest());
    assert_eq!(a.digest().len(), 60);
    assert_eq!(a.diff_digest(&b.digest()), DigestDiff::default());
}

#[test]
fn a_digest_reply_is_cut_at_its_cap_and_says_how_far_it_is_complete() {
    let (a, b) = (shared(1), shared(2));
    let now = crate::collector::service::unix_now();
    for i in 0..10 {
        let text = slot_text(&format!("slot{i}@h"), "Unclaimed");
        b.write().unwrap().advertise_text(&text, now).unwrap();
    }
    let empty = a.read().unwrap().digest();
    let (req, end) = super::relay::digest_page(1, &empty, None, 100);
    assert_eq!(end, None);
    let whole = super::relay::answer_digest_capped(&b, &req, usize::MAX);
    assert_eq!((whole.newer.len(), whole.covered), (10, None));
    let cut = super::relay::answer_digest_capped(&b, &req, 1);
    // At least one ad, so a peer paging through always advances; complete up to it.
    assert_eq!(cut.newer.len(), 1);
    assert_eq!(
        cut.covered.as_ref().map(|k| k.name.as_str()),
        Some("slot0@h")
    );
}

#[test]
fn an_offline_ad_whose_relay_was_lost_reaches_the_leader_by_digest_until_committed() {
    // CM 3 took the offline ad before it knew its peers (its relay went nowhere); the
    // leader only commits what its own table holds. Found by CI: the test
    // `absent_and_offline_ads_survive_a_full_cluster_restart` waited forever for it.
    let mut cm3 = absent_table();
    cm3.set_origin_id(3);
    let mut leader = absent_table();
    leader.set_origin_id(2);
    cm3.advertise_text(&format!("{SLOT}Offline = true\n"), T0)
        .unwrap();
    let diff = leader.diff_digest(&cm3.digest());
    let key = AdKey::new(AdType::Machine, "s@a", "10.0.0.1");
    assert_eq!(diff.wanted, vec![key.clone()], "{diff:?}");
    let item = cm3
        .relay_item(&key)
        .expect("the pending offline ad is sent");
    leader
        .apply_relayed_text(item.text.as_deref().unwrap(), item.version, T0)
        .unwrap();
    let cmds = plan(&leader, &Replicated::new(), T0 + 1);
    let put = only_put(&cmds);
    assert_eq!(put.ad_type, OFFLINE_BUCKET);
    // Committed and mirrored on both: Raft carries it from now on, the digest no longer.
    let mut rep = Replicated::new();
    put.commit_into(&mut rep);
    for t in [&mut cm3, &mut leader] {
        t.sync_replicated(&replicated_ads(&rep));
        assert!(t.digest().is_empty(), "{:?}", t.digest());
        assert_eq!(t.len(), 1);
    }
    assert_eq!(leader.diff_digest(&cm3.digest()), DigestDiff::default());
}
