//! Keys: `Name` and `MyType` are required, and ads are keyed by name and daemon host as
//! HTCondor's collector hashed them (submitters by schedd as well).
use super::tests::{params, slot, T0};
use super::*;

fn at(name: &str, ip: &str) -> String {
    format!(
        "{}MyAddress = \"<{ip}:9618?addrs={ip}-9618&noUDP>\"\n",
        slot(name, "Unclaimed", 1024)
    )
}

#[test]
fn ads_without_name_or_mytype_are_refused_with_the_attribute_named() {
    let mut t = AdTable::new(params());
    let e = t
        .advertise_text("MyType = \"Machine\"\nMemory = 5\n", T0)
        .unwrap_err();
    assert_eq!(e.attribute.as_deref(), Some("Name"));
    assert!(e.to_string().contains("Name"), "{e}");
    let e = t
        .advertise_text("Name = \"slot1@b\"\nMemory = 5\n", T0)
        .unwrap_err();
    assert_eq!(e.ad, "slot1@b");
    assert_eq!(e.attribute.as_deref(), Some("MyType"));
    assert_eq!(
        e.to_string(),
        "ad \"slot1@b\", attribute MyType: missing (every ad needs a MyType)"
    );
    let e = t
        .advertise_text("Name = 7\nMyType = \"Machine\"\n", T0)
        .unwrap_err();
    assert!(e.reason.contains("integer"), "{e}");
    assert!(t.is_empty(), "nothing stored after refusals");
}

#[test]
fn ads_are_keyed_by_name_and_daemon_host_as_htcondor_hashes_them() {
    let mut t = AdTable::new(params());
    let (k1, _) = t
        .advertise_text(&at("slot1@localhost", "10.0.0.1"), T0)
        .unwrap();
    let (k2, _) = t
        .advertise_text(&at("slot1@localhost", "10.0.0.2"), T0)
        .unwrap();
    assert_eq!(
        k1,
        AdKey::new(AdType::Machine, "slot1@localhost", "10.0.0.1")
    );
    assert_eq!(k2.addr, "10.0.0.2");
    assert_eq!(t.len(), 2, "same name, two machines: two ads");
    // Another port on the same host is the same daemon (HTCondor keys by host).
    let (k3, u) = t
        .advertise_text(
            &at("slot1@localhost", "10.0.0.1").replace("9618?", "9619?"),
            T0 + 1,
        )
        .unwrap();
    assert_eq!((k3, u), (k1.clone(), Update::Changed));
    // The older StartdIpAddr is used when MyAddress is missing.
    let old = format!(
        "{}StartdIpAddr = \"<10.0.0.3:9618>\"\n",
        slot("s@h", "Unclaimed", 1)
    );
    assert_eq!(t.advertise_text(&old, T0).unwrap().0.addr, "10.0.0.3");
    // get() by name finds the first of them.
    assert!(t.get(&AdType::Machine, "slot1@localhost").is_some());
    // Submitters of one user through two schedds are two ads.
    let sub = |schedd: &str| {
        format!(
            "MyType = \"Submitter\"\nName = \"u@d\"\nScheddName = \"{schedd}\"\nRunningJobs = 1\n"
        )
    };
    t.advertise_text(&sub("ap1"), T0).unwrap();
    t.advertise_text(&sub("ap2"), T0).unwrap();
    let q = Query {
        ad_type: Some(AdType::Submitter),
        ..Query::default()
    };
    assert_eq!(t.query(&q).len(), 2);
}
