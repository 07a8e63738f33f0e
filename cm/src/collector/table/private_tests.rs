//! Private attributes: kept apart from the public ad, never returned or probed by a query,
//! handed to the negotiator, and carried by the relayed text.
use super::tests::{params, slot, T0};
use super::*;
use classad::parse_expr;

#[test]
fn private_attributes_are_kept_apart_and_never_queried() {
    let mut t = AdTable::new(params());
    let text = format!(
        "{}ClaimId = \"<10.0.0.1:9618>#123#secret\"\ncapability = \"cap-secret\"\n\
         _condor_privAccessToken = \"tok\"\nClaimIdPublic = \"visible\"\n",
        slot("slot1@a", "Unclaimed", 1)
    );
    t.advertise_text(&text, T0).unwrap();
    let all = t.query(&Query::default());
    let out = all[0].to_old_syntax();
    assert!(!out.contains("secret") && !out.contains("tok"), "{out}");
    assert!(out.contains("ClaimIdPublic = \"visible\""), "{out}");
    // Not through a projection, and not probeable through a constraint.
    let q = Query {
        projection: vec!["ClaimId".into(), "Name".into()],
        ..Query::default()
    };
    assert_eq!(t.query(&q)[0].to_old_syntax(), "Name = \"slot1@a\"\n");
    let q = Query {
        constraint: Some(parse_expr("ClaimId =!= undefined").unwrap()),
        ..Query::default()
    };
    assert!(t.query(&q).is_empty());
    // The negotiator gets them.
    let p = t
        .private_attrs(&AdType::Machine, "slot1@a")
        .expect("private part");
    assert_eq!(p.len(), 3);
    assert_eq!(
        p.eval_attr("claimid").as_str(),
        Some("<10.0.0.1:9618>#123#secret")
    );
    // A new claim id is a change, not a duplicate.
    let text2 = text.replace("#123#", "#124#");
    assert_eq!(t.advertise_text(&text2, T0 + 1).unwrap().1, Update::Changed);
    assert_eq!(
        t.advertise_text(&text2, T0 + 2).unwrap().1,
        Update::Unchanged
    );
    assert!(is_private_attr("CHILDCLAIMIDS") && !is_private_attr("Claim"));
}

#[test]
fn relayed_text_carries_private_attributes() {
    let mut t = AdTable::new(params());
    let text = format!(
        "{}ClaimId = \"<1.2.3.4:9618>#1#secret\"\n",
        slot("s@a", "Unclaimed", 1)
    );
    let (k, _) = t.advertise_text(&text, T0).unwrap();
    let item = t.relay_item(&k).unwrap();
    let mut other = AdTable::new(params());
    other
        .apply_relayed_text(item.text.as_deref().unwrap(), item.version, T0)
        .unwrap();
    assert!(other.private_attrs(&AdType::Machine, "s@a").is_some());
    assert!(other.query(&Query::default())[0]
        .lookup("ClaimId")
        .is_none());
}

/// Issue 13.3: two machines that name a slot alike. Each slot's claim capability is found by
/// its whole key, and one machine's invalidation removes only its own ad.
#[test]
fn same_name_on_two_hosts_keeps_each_capability_and_invalidates_only_its_own() {
    let mut t = AdTable::new(params());
    let at = |ip: &str, secret: &str| {
        format!(
            "{}MyAddress = \"<{ip}:9618?noUDP>\"\nClaimId = \"{secret}\"\n",
            slot("slot1@localhost", "Unclaimed", 1)
        )
    };
    let (ka, _) = t.advertise_text(&at("10.0.0.1", "claim-a"), T0).unwrap();
    let (kb, _) = t.advertise_text(&at("10.0.0.2", "claim-b"), T0).unwrap();
    let claim = |t: &AdTable, k: &AdKey| {
        t.private_attrs_of(k)
            .and_then(|p| p.eval_attr("ClaimId").as_str().map(str::to_string))
    };
    assert_eq!(claim(&t, &ka).as_deref(), Some("claim-a"));
    assert_eq!(claim(&t, &kb).as_deref(), Some("claim-b"));
    // The query hands out each ad with its own key.
    let keyed = t.query_keyed(&Query::default());
    assert_eq!(
        keyed.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
        vec![ka.clone(), kb.clone()]
    );
    // Host b invalidates its slot: host a's stays.
    assert!(t.invalidate(&AdType::Machine, "slot1@localhost", "10.0.0.2", T0 + 1));
    assert_eq!(claim(&t, &ka).as_deref(), Some("claim-a"));
    assert!(t.get_key(&kb).is_none());
    assert!(!t.invalidate(&AdType::Machine, "slot1@localhost", "10.0.0.9", T0 + 1));
    // An operator's invalidation without an address takes every ad of the name.
    assert!(t.invalidate(&AdType::Machine, "slot1@localhost", "", T0 + 2));
    assert!(t.is_empty());
}
