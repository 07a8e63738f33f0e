//! The command line, the FILE and what each command asks of an ad, without a CM. Where the
//! behaviour follows condor_advertise 23.9.6 it was checked against the real tool and
//! collector (the reference chroot); where it deliberately differs, the test says so.
use super::*;

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn cmd(name: &str) -> &'static AdCommand {
    lookup(name).unwrap_or_else(|e| panic!("{e}"))
}

fn one(text: &str) -> FileAd {
    let mut ads = read_ads("f.ad", text, false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ads.len(), 1);
    ads.remove(0)
}

#[test]
fn command_line_as_condor_advertise_takes_it() {
    let p = parse(&args(&[
        "-multiple",
        "-tcp",
        "UPDATE_STARTD_AD",
        "slots.ad",
    ]))
    .unwrap();
    assert_eq!(p.command.map(|c| c.name), Some("UPDATE_STARTD_AD"));
    assert_eq!(p.file.as_deref(), Some("slots.ad"));
    assert!(p.multiple && !p.udp && !p.debug);
    // Prefixes, options after the positionals, "-" for standard input, lower case.
    let p = parse(&args(&["invalidate_startd_ads", "-", "-m", "-debug", "-u"])).unwrap();
    assert_eq!(p.command.map(|c| c.name), Some("INVALIDATE_STARTD_ADS"));
    assert_eq!(p.file.as_deref(), Some("-"));
    assert!(p.multiple && p.debug && p.udp);
    // No command at all: read standard input, the command comes from MyType.
    assert_eq!(parse(&[]).unwrap(), Parsed::default());
    let p = parse(&args(&["-pool", "cm2:7101", "UPDATE_AD_GENERIC"])).unwrap();
    assert_eq!(p.pool.as_deref(), Some("cm2:7101"));
    assert!(parse(&args(&["-help"])).unwrap().help);
    for (bad, says) in [
        (&["UPDATE_FOO_AD"][..], "unknown command name UPDATE_FOO_AD"),
        (&["UPDATE_STARTD_AD", "a", "b"], "extra argument b"),
        (&["-pool"], "-pool requires an argument"),
        (&["-frobnicate"], "unknown argument -frobnicate"),
        (&["UPDATE_ACCOUNTING_AD"], "cmctl userprio"),
        (&["UPDATE_LICENSE_AD"], "UPDATE_AD_GENERIC"),
    ] {
        let e = parse(&args(bad)).unwrap_err();
        assert!(e.contains(says), "{bad:?}: {e}");
    }
}

#[test]
fn one_ad_comments_and_stray_blank_lines() {
    let ads = read_ads(
        "slot.ad",
        "# an offline machine\nMyType = \"Machine\"\nName = \"slot1@n1\"\n\n  \nOffline = true\n",
        false,
    )
    .unwrap();
    assert_eq!(ads.len(), 1);
    let ad = &ads[0];
    assert_eq!((ad.index, ad.line), (1, 1));
    assert_eq!(ad.name().as_deref(), Some("slot1@n1"));
    assert!(ad.ad.eval_attr("Offline").is_true());
    // The text sent is the file's lines with the blank line dropped: one ad for the collector.
    assert!(!ad.text.contains("\n\n"), "{:?}", ad.text);
    assert_eq!(ad.label(), "slot.ad, ad 1 (line 1, \"slot1@n1\")");
}

#[test]
fn two_ads_need_multiple() {
    let text = "MyType = \"Machine\"\nName = \"slot1@a\"\n\n\
                MyType = \"Machine\"\nName = \"slot1@b\"\nCpus = 2\n";
    // condor_advertise without -multiple merges these into one ad named slot1@b; refused.
    let e = read_ads("two.ad", text, false).unwrap_err();
    assert!(e.contains("two.ad holds more than one ad"), "{e}");
    assert!(e.contains("line 4 sets MyType again"), "{e}");
    assert!(e.contains("-multiple"), "{e}");
    let ads = read_ads("two.ad", text, true).unwrap();
    let names: Vec<_> = ads.iter().map(|a| (a.index, a.line, a.name())).collect();
    assert_eq!(
        names,
        vec![
            (1, 1, Some("slot1@a".to_string())),
            (2, 4, Some("slot1@b".to_string()))
        ]
    );
}

#[test]
fn a_line_that_does_not_parse_names_file_ad_line_and_attribute() {
    let text = "MyType = \"Machine\"\nName = \"slot1@a\"\n\n\
                MyType = \"Machine\"\nName = \"slot1@bad\"\nMemory = 1024 +\nCpus = 1\n";
    let e = read_ads("bad.ad", text, true).unwrap_err();
    assert!(
        e.starts_with("bad.ad, ad 2 (line 4, \"slot1@bad\"), attribute Memory: line 6"),
        "{e}"
    );
    let e = read_ads("bad.ad", "MyType = \"Machine\"\nno equals sign\n", false).unwrap_err();
    assert!(
        e.starts_with("bad.ad, ad 1 (line 1): line 2 does not parse"),
        "{e}"
    );
    assert_eq!(
        read_ads("empty.ad", "\n# nothing\n\n", true).unwrap_err(),
        "empty.ad is empty"
    );
}

#[test]
fn an_update_must_agree_with_my_type() {
    let slot = one("MyType = \"Machine\"\nName = \"slot1@a\"\n");
    cmd("UPDATE_STARTD_AD").check_update(&slot).unwrap();
    cmd("UPDATE_STARTD_AD_WITH_ACK")
        .check_update(&slot)
        .unwrap();
    // HTCondor's collector files a Scheduler ad sent with UPDATE_STARTD_AD in the slot table;
    // Aerie keys ads by MyType, so the disagreement is refused before anything is sent.
    let e = cmd("UPDATE_SCHEDD_AD").check_update(&slot).unwrap_err();
    assert_eq!(
        e,
        "f.ad, ad 1 (line 1, \"slot1@a\"), attribute MyType: \"Machine\" does not agree with \
         UPDATE_SCHEDD_AD, which sends \"Scheduler\" ads"
    );
    let e = cmd("UPDATE_AD_GENERIC").check_update(&slot).unwrap_err();
    assert!(
        e.contains("has a command of its own, UPDATE_STARTD_AD"),
        "{e}"
    );
    let widget = one("MyType = \"Widget\"\nName = \"w1\"\n");
    cmd("UPDATE_AD_GENERIC").check_update(&widget).unwrap();
    assert!(cmd("UPDATE_STARTD_AD").check_update(&widget).is_err());
    // Spellings the collector takes for the same table; HTCondor's masters say DaemonMaster.
    let slot2 = one("MyType = \"slot\"\nName = \"slot2@a\"\n");
    cmd("UPDATE_STARTD_AD").check_update(&slot2).unwrap();
    let master = one("MyType = \"DaemonMaster\"\nName = \"cm1\"\n");
    cmd("UPDATE_MASTER_AD").check_update(&master).unwrap();
    // No MyType: the collector refuses it with its own reason.
    cmd("UPDATE_STARTD_AD")
        .check_update(&one("Name = \"x\"\n"))
        .unwrap();
    // A query ad is not published.
    let q = one("MyType = \"Query\"\nTargetType = \"Machine\"\nName = \"x\"\n");
    assert!(cmd("UPDATE_STARTD_AD").check_update(&q).is_err());
    assert!(AdCommand::for_type("Query").is_err());
    // Without COMMAND, the first ad's MyType picks it.
    assert_eq!(
        AdCommand::for_type("Scheduler").unwrap().name,
        "UPDATE_SCHEDD_AD"
    );
    assert_eq!(
        AdCommand::for_type("Widget").unwrap().name,
        "UPDATE_AD_GENERIC"
    );
}

#[test]
fn a_query_ad_picks_by_name_or_by_requirements() {
    let inv = cmd("INVALIDATE_STARTD_ADS");
    // The manual's example: Name picks the ad; Requirements is not looked at (HTCondor's
    // collector removes the named ad even with Requirements = false).
    let q = one(
        "MyType = \"Query\"\nTargetType = \"Machine\"\nName = \"slot1@n1\"\n\
         Requirements = Name == \"slot1@n1\"\n",
    );
    assert_eq!(
        inv.invalidation(&q).unwrap(),
        Invalidation {
            types: vec!["Machine".into()],
            select: Select::Name {
                name: "slot1@n1".into(),
                addr: String::new()
            }
        }
    );
    // The published ad itself works as a query ad: its MyType and its daemon's address.
    let ad =
        one("MyType = \"Machine\"\nName = \"slot1@n1\"\nMyAddress = \"<10.0.0.7:9618?sock=x>\"\n");
    let plan = inv.invalidation(&ad).unwrap();
    assert_eq!(
        plan.select,
        Select::Name {
            name: "slot1@n1".into(),
            addr: "<10.0.0.7:9618?sock=x>".into()
        }
    );
    assert!(picks(&plan, &ad.ad));
    let elsewhere =
        one("MyType = \"Machine\"\nName = \"slot1@n1\"\nMyAddress = \"<10.0.0.8:9618>\"\n");
    assert!(!picks(&plan, &elsewhere.ad));
    // Without Name, Requirements picks every ad it is true for.
    let q =
        one("MyType = \"Query\"\nTargetType = \"Machine\"\nRequirements = MY.Machine == \"n1\"\n");
    let plan = inv.invalidation(&q).unwrap();
    assert!(matches!(plan.select, Select::Constraint(_)));
    assert!(picks(
        &plan,
        &one("MyType = \"Machine\"\nName = \"s\"\nMachine = \"n1\"\n").ad
    ));
    assert!(!picks(
        &plan,
        &one("MyType = \"Machine\"\nName = \"s\"\nMachine = \"n2\"\n").ad
    ));
    assert!(!picks(
        &plan,
        &one("MyType = \"Scheduler\"\nName = \"s\"\nMachine = \"n1\"\n").ad
    ));
    // Neither: HTCondor's collector logs "Invalidation missing Requirements" and does
    // nothing while condor_advertise reports success; refused here.
    let e = inv
        .invalidation(&one("MyType = \"Query\"\nTargetType = \"Machine\"\n"))
        .unwrap_err();
    assert!(
        e.contains("attribute Requirements: missing, and no Name either"),
        "{e}"
    );
    // TargetType must agree with the command.
    let e = inv
        .invalidation(&one(
            "MyType = \"Query\"\nTargetType = \"Scheduler\"\nName = \"s\"\n",
        ))
        .unwrap_err();
    assert!(
        e.contains("attribute TargetType: \"Scheduler\" does not agree with INVALIDATE_STARTD_ADS"),
        "{e}"
    );
    // The generic command needs the type, or Any with Requirements.
    let gen = cmd("INVALIDATE_ADS_GENERIC");
    assert!(gen
        .invalidation(&one("MyType = \"Query\"\nName = \"w1\"\n"))
        .unwrap_err()
        .contains("attribute TargetType: missing"));
    let q = one("MyType = \"Query\"\nTargetType = \"Any\"\nRequirements = Color == \"blue\"\n");
    assert_eq!(gen.invalidation(&q).unwrap().types, vec!["Any".to_string()]);
    let q = one("MyType = \"Query\"\nTargetType = \"Widget\"\nName = \"w1\"\n");
    assert_eq!(
        gen.invalidation(&q).unwrap().types,
        vec!["Widget".to_string()]
    );
    // A master's ads are DaemonMaster in HTCondor and Master in Aerie: both go.
    let q = one("MyType = \"Query\"\nName = \"cm1\"\n");
    assert_eq!(
        cmd("INVALIDATE_MASTER_ADS").invalidation(&q).unwrap().types,
        vec!["DaemonMaster".to_string(), "Master".to_string()]
    );
}

#[test]
fn daemon_address_hosts() {
    for (addr, host) in [
        ("<10.0.0.7:9618?addrs=10.0.0.7-9618&alias=n1>", "10.0.0.7"),
        ("n1.example:9618", "n1.example"),
        ("<[::1]:9618>", "::1"),
        ("n1", "n1"),
    ] {
        assert_eq!(address_host(addr), host, "{addr}");
    }
}
