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
