//! The accounting ad against dumps the real HTCondor 23.9.6 printed (the differential tests
//! against the running tool are in `cli/src/userprio/tests.rs`).
use super::*;

/// `condor_userprio -l` and `-l -modular` from the real pool of
/// tests/reference/negotiator/redistribution.sh.
const FLAT: &str =
    include_str!("../../../../tests/reference/negotiator/dumps/redistribution/userprio.txt");
const MODULAR: &str = include_str!(
    "../../../../tests/reference/negotiator/dumps/redistribution/userprio-modular.txt"
);

#[test]
fn real_flat_dump_prints_back_byte_for_byte() {
    let ad = AccountingAd::parse(FLAT, "userprio.txt").unwrap();
    assert_eq!(ad.last_update, Some(1795337538));
    assert_eq!(ad.records.len(), 4);
    let c = &ad.records[1];
    assert_eq!(c.name, "c@ref.test");
    assert_eq!(c.priority, Some(19.999198));
    assert_eq!(c.resources_used, Some(19));
    assert_eq!((c.ceiling, c.floor), (Some(-1.0), Some(0.0)));
    assert_eq!(c.is_accounting_group, Some(false));
    assert_eq!(ad.records[0].surplus_policy.as_deref(), Some("byquota"));
    assert_eq!(ad.to_long(), FLAT);
}

#[test]
fn modular_dump_reads_as_the_flat_one() {
    let flat = AccountingAd::parse(FLAT, "userprio.txt").unwrap();
    let modular = AccountingAd::parse(MODULAR, "userprio-modular.txt").unwrap();
    assert_eq!(modular.records, flat.records);
    // -inputfile -modular keeps only the numbered attributes: no LastUpdate.
    assert_eq!(modular.last_update, None);
}

fn named(names: &[&str]) -> AccountingAd {
    AccountingAd {
        last_update: Some(1_700_000_000),
        records: names
            .iter()
            .map(|n| AccountingRecord {
                name: n.to_string(),
                priority: Some(0.5),
                ..Default::default()
            })
            .collect(),
    }
}

#[test]
fn escaped_names_are_written_as_condor_userprio_prints_them() {
    // Old syntax escapes only the quote; condor_userprio -inputfile FILE -l prints exactly
    // these lines for these names.
    let ad = named(&[
        "a\"b@pool",
        "c\\d@pool",
        "e\\f\"g@pool",
        "q\\\"x@pool",
        "x\\",
    ]);
    let text = ad.to_long();
    for line in [
        r#"Name1 = "a\"b@pool""#,
        r#"Name2 = "c\d@pool""#,
        r#"Name3 = "e\f\"g@pool""#,
        r#"Name4 = "q\\"x@pool""#,
        r#"Name5 = "x\""#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
    }
    assert_eq!(AccountingAd::parse(&text, "t").unwrap(), ad);
    // A doubled backslash is two backslashes, as condor_userprio reads it.
    let two = AccountingAd::parse("Name1 = \"c\\\\d@pool\"\n", "t").unwrap();
    assert_eq!(two.records[0].name, "c\\\\d@pool");
}

#[test]
fn numbers_print_as_condor_userprio_prints_them() {
    let mut ad = named(&["u@d"]);
    let r = &mut ad.records[0];
    r.priority = Some(0.30000000000000004);
    r.priority_factor = Some(1000.0);
    r.weighted_accumulated_usage = Some(1e20);
    r.ceiling = Some(-1.0);
    r.floor = Some(2.5);
    r.resources_used = Some(3);
    let text = ad.to_long();
    for line in [
        "Priority1 = 0.3",
        "PriorityFactor1 = 1000.0",
        "WeightedAccumulatedUsage1 = 1E+20",
        "Ceiling1 = -1",
        "Floor1 = 2.5",
        "ResourcesUsed1 = 3",
        "NumSubmittors = 1",
        "LastUpdate = 1700000000",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
    }
}

#[test]
fn errors_name_the_source_and_the_ad() {
    let e = AccountingAd::parse("NumSubmittors = 2\nName1 = \"a@b\"\n", "p.txt").unwrap_err();
    assert_eq!(
        e.to_string(),
        "p.txt: ad 1: Name2 is missing or not a string"
    );
    let e = AccountingAd::parse("A = 1\n\nName = 3\n", "p.txt").unwrap_err();
    assert!(
        e.to_string().starts_with("p.txt: ad 1: neither Name"),
        "{e}"
    );
    let e = AccountingAd::parse("Name = 3\n", "p.txt").unwrap_err();
    assert_eq!(e.to_string(), "p.txt: ad 1: Name is not a string");
}
