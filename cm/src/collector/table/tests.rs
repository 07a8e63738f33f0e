//! AdTable rules with explicit times: dedup, validation of the ad's own attributes, parse and
//! size refusals, CLASSAD_LIFETIME expiry, absent ads (the seeds' worked example 22: lifetime
//! 900 s, last update 901 s ago), offline ads, invalidation, and queries with a constraint and
//! a projection. The fixtures at the top are shared with `key_tests`, `private_tests` and
//! `sync_tests`.
use super::*;
use classad::{parse_expr, Value};

pub(super) const T0: i64 = 1_700_000_000;

pub(super) fn slot(name: &str, state: &str, memory: i64) -> String {
    format!(
        "MyType = \"Machine\"\nTargetType = \"Job\"\nName = \"{name}\"\nMachine = \"{}\"\n\
         State = \"{state}\"\nActivity = \"Idle\"\nMemory = {memory}\nCpus = 1\n",
        name.split('@').nth(1).unwrap_or("host")
    )
}

pub(super) fn params() -> CollectorParams {
    CollectorParams::default()
}

pub(super) fn absent_params(req: &str) -> CollectorParams {
    CollectorParams {
        absent_requirements: Some(parse_expr(req).expect("ABSENT_REQUIREMENTS parses")),
        ..CollectorParams::default()
    }
}

/// The `State` of the machine ad named `name` (which must be held).
pub(super) fn state(t: &AdTable, name: &str) -> Option<String> {
    t.get(&AdType::Machine, name)
        .unwrap()
        .eval_attr("State")
        .as_str()
        .map(str::to_string)
}

fn names(ads: &[classad::ClassAd]) -> Vec<String> {
    ads.iter()
        .map(|a| a.eval_attr("Name").as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn identical_update_only_refreshes_the_timestamp() {
    let mut t = AdTable::new(params());
    let text = slot("slot1@a", "Unclaimed", 1024);
    let (key, u) = t.advertise_text(&text, T0).expect("accepted");
    assert_eq!(key, AdKey::new(AdType::Machine, "slot1@a", ""));
    assert_eq!(u, Update::New);
    // Same ad, attributes in another order and in new syntax: still unchanged.
    let reordered = "[ Cpus = 1; Memory = 1024; Activity = \"Idle\"; State = \"Unclaimed\"; \
                     Machine = \"a\"; Name = \"slot1@a\"; TargetType = \"Job\"; MyType = \"Machine\" ]";
    assert_eq!(
        t.advertise_text(reordered, T0 + 600).unwrap().1,
        Update::Unchanged
    );
    // The refresh counts: 600 + 900 s later it is still alive, one second more and it expires.
    assert!(t.expire(T0 + 600 + 900).removed.is_empty());
    assert_eq!(t.len(), 1);
    let r = t.expire(T0 + 600 + 901);
    assert_eq!(r.removed, vec![key]);
    assert!(t.is_empty());
}

#[test]
fn a_changed_ad_replaces_the_stored_one() {
    let mut t = AdTable::new(params());
    t.advertise_text(&slot("slot1@a", "Unclaimed", 1024), T0)
        .unwrap();
    let (_, u) = t
        .advertise_text(&slot("slot1@a", "Claimed", 1024), T0 + 5)
        .unwrap();
    assert_eq!(u, Update::Changed);
    assert_eq!(t.len(), 1);
    let ad = t.get(&AdType::Machine, "slot1@a").expect("stored");
    assert_eq!(ad.eval_attr("State").as_str(), Some("Claimed"));
}

#[test]
fn same_name_different_types_are_different_ads() {
    let mut t = AdTable::new(params());
    t.advertise_text(&slot("alice@pool", "Unclaimed", 1), T0)
        .unwrap();
    t.advertise_text(
        "MyType = \"Submitter\"\nName = \"alice@pool\"\nIdleJobs = 3\n",
        T0,
    )
    .unwrap();
    t.advertise_text("MyType = \"Scheduler\"\nName = \"ap1\"\n", T0)
        .unwrap();
    assert_eq!(t.len(), 3);
    let q = Query {
        ad_type: Some(AdType::parse("submitter")),
        ..Query::default()
    };
    let subs = t.query(&q);
    assert_eq!(names(&subs), vec!["alice@pool"]);
    assert_eq!(subs[0].eval_attr("IdleJobs").as_int(), Some(3));
    assert_eq!(t.query(&Query::default()).len(), 3);
}

#[test]
fn oversized_and_unparsable_ads_are_refused_and_the_table_is_unaffected() {
    let mut t = AdTable::new(CollectorParams {
        max_ad_size: 200,
        ..params()
    });
    t.advertise_text(&slot("slot1@a", "Unclaimed", 1), T0)
        .unwrap();
    let big = format!(
        "{}Junk = \"{}\"\n",
        slot("slot2@a", "Unclaimed", 1),
        "x".repeat(300)
    );
    let e = t.advertise_text(&big, T0).unwrap_err();
    assert_eq!(e.ad, "slot2@a");
    assert!(
        e.reason.contains("AERIE_COLLECTOR_MAX_AD_SIZE") && e.reason.contains("200"),
        "{e}"
    );
    let e = t
        .advertise_text(
            "MyType = \"Machine\"\nName = \"slot3@a\"\nMemory = (1 +\n",
            T0,
        )
        .unwrap_err();
    assert_eq!(e.ad, "slot3@a");
    assert!(e.reason.starts_with("does not parse: line"), "{e}");
    assert_eq!(t.len(), 1);
}

#[test]
fn classad_lifetime_attribute_overrides_the_configured_lifetime() {
    let mut t = AdTable::new(params());
    let text = format!("{}ClassAdLifetime = 60\n", slot("slot1@a", "Unclaimed", 1));
    t.advertise_text(&text, T0).unwrap();
    t.advertise_text(&slot("slot2@a", "Unclaimed", 1), T0)
        .unwrap();
    let r = t.expire(T0 + 61);
    assert_eq!(r.removed, vec![AdKey::new(AdType::Machine, "slot1@a", "")]);
    assert_eq!(t.len(), 1);
    let e = t
        .advertise_text(
            &format!(
                "{}ClassAdLifetime = \"long\"\n",
                slot("slot3@a", "Unclaimed", 1)
            ),
            T0,
        )
        .unwrap_err();
    assert_eq!(e.attribute.as_deref(), Some("ClassAdLifetime"));
}

/// Seeds, worked example 22: CLASSAD_LIFETIME 900 s, last update 901 s ago.
#[test]
fn expired_slot_is_removed_when_absent_requirements_is_unset_or_false() {
    for p in [params(), absent_params("False")] {
        let mut t = AdTable::new(p);
        t.advertise_text(&slot("slot1@a", "Unclaimed", 1), T0)
            .unwrap();
        assert!(
            t.expire(T0 + 900).removed.is_empty(),
            "900 s is not older than 900 s"
        );
        let r = t.expire(T0 + 901);
        assert_eq!(r.removed.len(), 1);
        assert!(r.made_absent.is_empty());
        assert!(t.is_empty());
    }
}

#[test]
fn expired_slot_becomes_absent_hidden_from_plain_queries_then_dropped_after_30_days() {
    // A typical site setting: dedicated machines (here: those with Memory >= 1024) are kept.
    let mut t = AdTable::new(absent_params("Memory >= 1024"));
    t.advertise_text(&slot("slot1@big", "Unclaimed", 2048), T0)
        .unwrap();
    t.advertise_text(&slot("slot1@small", "Unclaimed", 512), T0)
        .unwrap();
    t.advertise_text(
        "MyType = \"Submitter\"\nName = \"u@d\"\nMemory = 4096\n",
        T0,
    )
    .unwrap();
    let r = t.expire(T0 + 901);
    assert_eq!(
        r.made_absent,
        vec![AdKey::new(AdType::Machine, "slot1@big", "")]
    );
    // Only slot ads can become absent; the submitter and the small slot are removed.
    assert_eq!(r.removed.len(), 2);
    assert!(t.is_absent(&AdType::Machine, "slot1@big"));
    let ad = t.get(&AdType::Machine, "slot1@big").unwrap();
    assert!(matches!(ad.eval_attr("Absent"), Value::Bool(true)));

    // Invisible to a plain query (the negotiator never sees it) ...
    let plain = Query {
        ad_type: Some(AdType::Machine),
        ..Query::default()
    };
    assert!(t.query(&plain).is_empty());
    // ... shown by -absent, and when the constraint mentions Absent.
    let absent = Query {
        absent: true,
        ..plain.clone()
    };
    assert_eq!(names(&t.query(&absent)), vec!["slot1@big"]);
    let mentions = Query {
        constraint: Some(parse_expr("Absent =?= true").unwrap()),
        ..plain.clone()
    };
    assert_eq!(names(&t.query(&mentions)), vec!["slot1@big"]);

    // Kept for ABSENT_EXPIRE_ADS_AFTER (30 days = 2,592,000 s) from when it became absent.
    assert!(t.expire(T0 + 901 + 2_592_000).removed.is_empty());
    let r = t.expire(T0 + 901 + 2_592_001);
    assert_eq!(
        r.removed,
        vec![AdKey::new(AdType::Machine, "slot1@big", "")]
    );
    assert!(t.is_empty());
}

#[test]
fn absent_expire_ads_after_zero_keeps_absent_ads_forever() {
    let mut t = AdTable::new(CollectorParams {
        absent_expire_ads_after: 0,
        ..absent_params("True")
    });
    t.advertise_text(&slot("slot1@a", "Unclaimed", 1), T0)
        .unwrap();
    assert_eq!(t.expire(T0 + 901).made_absent.len(), 1);
    assert_eq!(t.expire(T0 + 100 * 365 * 86_400).removed.len(), 0);
    assert_eq!(t.absent_count(), 1);
}

#[test]
fn the_machines_next_update_replaces_its_absent_ad() {
    let mut t = AdTable::new(absent_params("True"));
    t.advertise_text(&slot("slot1@a", "Unclaimed", 1), T0)
        .unwrap();
    t.expire(T0 + 901);
    assert!(t.is_absent(&AdType::Machine, "slot1@a"));
    let (_, u) = t
        .advertise_text(&slot("slot1@a", "Unclaimed", 1), T0 + 1000)
        .unwrap();
    assert_eq!(u, Update::ReplacedAbsent);
    assert!(!t.is_absent(&AdType::Machine, "slot1@a"));
    let ad = t.get(&AdType::Machine, "slot1@a").unwrap();
    assert!(
        ad.lookup("Absent").is_none(),
        "the fresh ad is not marked absent"
    );
    assert_eq!(
        names(&t.query(&Query {
            ad_type: Some(AdType::Machine),
            ..Query::default()
        })),
        vec!["slot1@a"]
    );
}

#[test]
fn invalidate_removes_unless_expire_invalidated_ads_makes_it_absent() {
    let mut t = AdTable::new(absent_params("True"));
    t.advertise_text(&slot("slot1@a", "Unclaimed", 1), T0)
        .unwrap();
    assert!(t.invalidate(&AdType::Machine, "slot1@a", "", T0 + 1));
    assert!(t.is_empty());
    assert!(!t.invalidate(&AdType::Machine, "slot1@a", "", T0 + 1));

    // EXPIRE_INVALIDATED_ADS = True: the UPS case, the slot becomes absent.
    let mut t = AdTable::new(CollectorParams {
        expire_invalidated_ads: true,
        ..absent_params("True")
    });
    t.advertise_text(&slot("slot1@a", "Unclaimed", 1), T0)
        .unwrap();
    assert!(t.invalidate(&AdType::Machine, "slot1@a", "", T0 + 1));
    assert!(t.is_absent(&AdType::Machine, "slot1@a"));
    // ... but only when ABSENT_REQUIREMENTS holds.
    let mut t = AdTable::new(CollectorParams {
        expire_invalidated_ads: true,
        ..absent_params("False")
    });
    t.advertise_text(&slot("slot1@a", "Unclaimed", 1), T0)
        .unwrap();
    assert!(t.invalidate(&AdType::Machine, "slot1@a", "", T0 + 1));
    assert!(t.is_empty());
}

#[test]
fn query_constraint_projection_and_limit() {
    let mut t = AdTable::new(params());
    for (i, (state, mem)) in [("Unclaimed", 1024), ("Claimed", 2048), ("Unclaimed", 4096)]
        .iter()
        .enumerate()
    {
        t.advertise_text(
            &slot(&format!("slot{}@h", i + 1), state, *mem),
            T0 + i as i64,
        )
        .unwrap();
    }
    let q = Query {
        ad_type: Some(AdType::Machine),
        constraint: Some(parse_expr("State == \"Unclaimed\" && Memory > 2000").unwrap()),
        projection: vec!["Name".into(), "Memory".into(), "NoSuchAttr".into()],
        ..Query::default()
    };
    let ads = t.query(&q);
    assert_eq!(ads.len(), 1);
    assert_eq!(
        ads[0].to_old_syntax(),
        "Name = \"slot3@h\"\nMemory = 4096\n"
    );

    // Without a projection every attribute comes back, with LastHeardFrom.
    let all = t.query(&Query {
        ad_type: Some(AdType::Machine),
        ..Query::default()
    });
    assert_eq!(names(&all), vec!["slot1@h", "slot2@h", "slot3@h"]);
    assert_eq!(all[1].eval_attr("LastHeardFrom").as_int(), Some(T0 + 1));
    assert_eq!(all[1].eval_attr("Cpus").as_int(), Some(1));

    // An undefined constraint result does not match.
    let q = Query {
        constraint: Some(parse_expr("NoSuchAttr > 3").unwrap()),
        ..Query::default()
    };
    assert!(t.query(&q).is_empty());

    let q = Query {
        limit: 2,
        ..Query::default()
    };
    assert_eq!(t.query(&q).len(), 2);
}

#[test]
fn params_come_from_the_configuration_with_catalogue_defaults() {
    let opts = aerie_config::LoadOptions::for_subsystem("COLLECTOR");
    let c = aerie_config::Config::parse_str("", "empty", &opts).expect("empty config");
    let p = CollectorParams::from_config(&c).expect("defaults");
    assert_eq!(p.classad_lifetime, 900);
    assert_eq!(p.absent_expire_ads_after, 2_592_000);
    assert!(!p.expire_invalidated_ads);
    assert_eq!(p.max_ad_size, 1_048_576);

    let c = aerie_config::Config::parse_str(
        "CLASSAD_LIFETIME = 60\nABSENT_REQUIREMENTS = Memory > 10\nABSENT_EXPIRE_ADS_AFTER = 0\n\
         EXPIRE_INVALIDATED_ADS = True\nAERIE_COLLECTOR_MAX_AD_SIZE = 4096\n",
        "site",
        &opts,
    )
    .expect("config");
    let p = CollectorParams::from_config(&c).expect("params");
    assert_eq!(p.classad_lifetime, 60);
    assert_eq!(p.absent_expire_ads_after, 0);
    assert!(p.expire_invalidated_ads);
    assert_eq!(p.max_ad_size, 4096);
    let mut t = AdTable::new(p);
    t.advertise_text(&slot("slot1@a", "Unclaimed", 11), T0)
        .unwrap();
    assert_eq!(t.expire(T0 + 61).made_absent.len(), 1);

    let c = aerie_config::Config::parse_str("AERIE_COLLECTOR_MAX_AD_SIZE = -1\n", "bad", &opts)
        .expect("config");
    let e = CollectorParams::from_config(&c).unwrap_err();
    assert!(e.contains("AERIE_COLLECTOR_MAX_AD_SIZE"), "{e}");
}

#[test]
fn text_with_two_ads_or_none_is_refused() {
    let mut t = AdTable::new(params());
    let two = format!(
        "{}\n{}",
        slot("slot1@a", "Unclaimed", 1),
        slot("slot2@a", "Unclaimed", 1)
    );
    let e = t.advertise_text(&two, T0).unwrap_err();
    assert!(e.reason.contains("2 ads"), "{e}");
    let e = t.advertise_text("\n\n", T0).unwrap_err();
    assert_eq!(e.reason, "is empty");
    assert!(t.is_empty());
}

#[test]
fn last_heard_from_can_be_constrained_and_projected() {
    let mut t = AdTable::new(params());
    t.advertise_text(&slot("slot1@old", "Unclaimed", 1), T0)
        .unwrap();
    t.advertise_text(&slot("slot1@new", "Unclaimed", 1), T0 + 300)
        .unwrap();
    let q = Query {
        constraint: Some(parse_expr(&format!("LastHeardFrom >= {}", T0 + 100)).unwrap()),
        projection: vec!["Name".into(), "lastheardfrom".into()],
        ..Query::default()
    };
    let ads = t.query(&q);
    assert_eq!(ads.len(), 1);
    assert_eq!(
        ads[0].to_old_syntax(),
        format!("Name = \"slot1@new\"\nlastheardfrom = {}\n", T0 + 300)
    );
}

#[test]
fn text_index_follows_updates_expiry_absence_and_invalidation() {
    let mut t = AdTable::new(absent_params("Memory > 100"));
    let a1 = slot("slot1@a", "Unclaimed", 1024);
    let a2 = slot("slot1@a", "Claimed", 1024);
    t.advertise_text(&a1, T0).unwrap();
    assert_eq!(t.advertise_text(&a1, T0 + 1).unwrap().1, Update::Unchanged);
    assert_eq!(t.advertise_text(&a2, T0 + 2).unwrap().1, Update::Changed);
    // Back to the first text: a change again, not a stale "unchanged".
    assert_eq!(t.advertise_text(&a1, T0 + 3).unwrap().1, Update::Changed);
    assert_eq!(state(&t, "slot1@a").as_deref(), Some("Unclaimed"));
    assert_eq!(t.text_index_len(), 1);
    // Absent: the same text again replaces the absent ad (it is not "unchanged").
    t.expire(T0 + 3 + 901);
    assert!(t.is_absent(&AdType::Machine, "slot1@a"));
    assert_eq!(t.text_index_len(), 0);
    assert_eq!(
        t.advertise_text(&a1, T0 + 2000).unwrap().1,
        Update::ReplacedAbsent
    );
    assert_eq!(
        t.advertise_text(&a1, T0 + 2001).unwrap().1,
        Update::Unchanged
    );
    // Invalidated, then the same text: a new ad.
    assert!(t.invalidate(&AdType::Machine, "slot1@a", "", T0 + 2002));
    assert_eq!(t.text_index_len(), 0);
    assert_eq!(t.advertise_text(&a1, T0 + 2003).unwrap().1, Update::New);
    // A parsed-ad update (no text) clears the hash, so the old text is a change.
    let ad = classad::parse_ad(&a2).unwrap();
    assert_eq!(t.advertise(ad, T0 + 2004).unwrap().1, Update::Changed);
    assert_eq!(t.text_index_len(), 0);
    assert_eq!(t.advertise_text(&a1, T0 + 2005).unwrap().1, Update::Changed);
}

#[test]
fn offline_ads_are_hidden_until_asked_for() {
    let mut t = AdTable::new(params());
    let text = format!("{}Offline = true\n", slot("s@a", "Unclaimed", 1));
    t.advertise_text(&text, T0).unwrap();
    assert!(t.query(&Query::default()).is_empty());
    let q = Query {
        absent: true,
        ..Query::default()
    };
    assert_eq!(t.query(&q).len(), 1);
    let h = t.hidden();
    assert_eq!(h.len(), 1);
    assert!(h[0].offline);
    // Not committed yet: peers repair it by digest (a lost relay would leave the leader
    // without it); once committed, Raft carries it (relay_tests).
    assert_eq!(t.digest().len(), 1);
}

/// Issue 13.8: what makes a table grow for ever is refused or bounded, with reasons.
#[test]
fn lifetimes_offline_ads_and_tombstones_are_bounded() {
    let mut t = AdTable::new(CollectorParams {
        max_ad_lifetime: 3600,
        max_offline_ads: 3,
        max_offline_ads_per_host: 2,
        max_tombstones: 100,
        ..CollectorParams::default()
    });
    // An ad that would never expire.
    let e = t
        .advertise_text(
            &format!(
                "{}ClassAdLifetime = 999999999\n",
                slot("s@a", "Unclaimed", 1)
            ),
            T0,
        )
        .unwrap_err();
    assert_eq!(e.attribute.as_deref(), Some("ClassAdLifetime"));
    assert!(e.reason.contains("AERIE_COLLECTOR_MAX_AD_LIFETIME"), "{e}");
    assert!(t
        .advertise_text(
            &format!("{}ClassAdLifetime = 3600\n", slot("s@a", "Unclaimed", 1)),
            T0
        )
        .is_ok());
    // A string lifetime is named as what it is.
    let e = t
        .advertise_text(
            &format!(
                "{}ClassAdLifetime = \"long\"\n",
                slot("s@a", "Unclaimed", 1)
            ),
            T0,
        )
        .unwrap_err();
    assert!(e.reason.contains("the string \"long\""), "{e}");
    // Offline ads: two per host, three in all; a refresh of one held always passes.
    let offline = |name: &str, ip: &str| {
        format!(
            "{}Offline = true\nMyAddress = \"<{ip}:9618>\"\n",
            slot(name, "Unclaimed", 1)
        )
    };
    for n in ["o1@h", "o2@h"] {
        t.advertise_text(&offline(n, "10.0.0.1"), T0)
            .expect("within quota");
    }
    let e = t
        .advertise_text(&offline("o3@h", "10.0.0.1"), T0)
        .unwrap_err();
    assert!(e.reason.contains("PER_HOST"), "{e}");
    assert!(t
        .advertise_text(&offline("o1@h", "10.0.0.1"), T0 + 1)
        .is_ok());
    t.advertise_text(&offline("o4@g", "10.0.0.2"), T0)
        .expect("another host");
    let e = t
        .advertise_text(&offline("o5@f", "10.0.0.3"), T0)
        .unwrap_err();
    assert!(e.reason.contains("AERIE_COLLECTOR_MAX_OFFLINE_ADS"), "{e}");
    // Relayed invalidations of keys never held: remembered, but not without bound.
    for i in 0..1000 {
        let key = AdKey::new(AdType::Machine, format!("gone{i}@x"), "10.9.9.9");
        let v = Version {
            time: T0 + i,
            seq: 1,
            origin: 2,
        };
        t.apply_relayed_invalidate(&key, v, T0 + i);
    }
    assert!(t.tombstone_count() <= 100, "{}", t.tombstone_count());
    assert!(t.tombstone_count() >= 80);
}

/// Issue 13.2: nothing an ad says can hold the table's lock for long. `Name` (and `MyType`,
/// `ClassAdLifetime`, `Offline`) must be written as values, and a query whose constraint
/// costs too much is refused instead of running for ever.
#[test]
fn expensive_ads_and_constraints_cannot_hold_the_table() {
    let mut chain = String::new();
    for i in 0..60 {
        chain.push_str(&format!("a{i} = a{} + a{}\n", i + 1, i + 1));
    }
    chain.push_str("a60 = 1\n");
    let mut t = AdTable::new(params());
    let e = t
        .advertise_text(
            &format!("MyType = \"Machine\"\nName = strcat(\"x\", a0)\n{chain}"),
            T0,
        )
        .unwrap_err();
    assert_eq!(e.attribute.as_deref(), Some("Name"));
    assert!(e.reason.contains("not the expression"), "{e}");
    for attr in ["ClassAdLifetime = a0", "Offline = a0 > 0"] {
        let e = t
            .advertise_text(
                &format!("{}{attr}\n{chain}", slot("s@a", "Unclaimed", 1)),
                T0,
            )
            .unwrap_err();
        assert!(e.reason.contains("not the expression"), "{attr}: {e}");
    }
    // Stored with the chain as ordinary attributes, the ad is fine; a constraint over the
    // chain does not match it (too expensive for one ad), and over many ads the query is
    // refused once it has cost its budget.
    for i in 0..300 {
        t.advertise_text(
            &format!("{}{chain}", slot(&format!("s{i}@a"), "Unclaimed", 1)),
            T0,
        )
        .unwrap();
    }
    let q = Query {
        constraint: Some(parse_expr("a0 > 0").unwrap()),
        ..Query::default()
    };
    let e = t.try_query(&q, 5 * classad::MAX_EVAL_STEPS).unwrap_err();
    assert_eq!(e.steps, 5 * classad::MAX_EVAL_STEPS);
    let mut one = AdTable::new(params());
    one.advertise_text(&format!("{}{chain}", slot("s@a", "Unclaimed", 1)), T0)
        .unwrap();
    assert!(one.query(&q).is_empty());
}
