//! Hostile ads published the way an admin or a broken node would, with `cmctl advertise`
//! (issue 13.17), against three real CMs (issues 13.1, 13.2, 13.3 and 13.8):
//! * a claimed slot with `SlotWeight = 1e308` is charged a bounded usage, and the ledger
//!   survives a full restart of the cluster (13.1: once it froze accounting and made the
//!   snapshot unreadable);
//! * a `Name` computed through an exponential attribute chain is refused naming the
//!   attribute, and a query whose constraint walks such a chain ends in bounded time while
//!   other queries go on (13.2);
//! * two slots with the same `Name` on different hosts are two ads, and an invalidation names
//!   which one it removes (13.3);
//! * an ad asking to live far longer than the collector allows is refused, and one host cannot
//!   flood the replicated state with offline ads (13.8).
use aerie_core::admin::UserprioQuery;
use aerie_tests::*;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");

const CONFIG: &str = "\
AERIE_COLLECTOR_RELAY_INTERVAL = 50ms
AERIE_COLLECTOR_DIGEST_INTERVAL = 1s
AERIE_COLLECTOR_MAX_OFFLINE_ADS_PER_HOST = 3
";
const FAST: &[(&str, &str)] = &[
    ("AERIE_NEGOTIATOR_INTERVAL", "1"),
    ("AERIE_NEGOTIATOR_CYCLE_DELAY", "1"),
];

fn slot(name: &str, host: &str, ip: &str, extra: &str) -> String {
    format!(
        "MyType = \"Machine\"\nName = \"{name}\"\nMachine = \"{host}\"\n\
         MyAddress = \"<{ip}:9618?sock=startd>\"\nState = \"Unclaimed\"\n\
         Activity = \"Idle\"\nOpSys = \"LINUX\"\nArch = \"X86_64\"\nMemory = 1024\n\
         Cpus = 1\nClassAdLifetime = 3600\n{extra}"
    )
}

fn advertise(cms: &[String], command: &str, text: &str, multiple: bool) -> (i32, String) {
    let mut args = vec!["advertise"];
    if multiple {
        args.push("-multiple");
    }
    args.extend([command, "-"]);
    let (code, out, err) = run_cmctl(CMCTL, cms, &args, Some(text));
    (code, format!("{out}{err}"))
}

fn status(cms: &[String], args: &[&str]) -> (i32, String) {
    let mut all = vec!["status"];
    all.extend(args);
    let (code, out, err) = run_cmctl(CMCTL, cms, &all, None);
    (code, format!("{out}{err}"))
}

/// `a0 = a1 + a1; ...; a60 = 1`: evaluating a0 naively takes 2^60 steps.
fn chain() -> String {
    let mut s = String::new();
    for i in 0..60 {
        s.push_str(&format!("a{i} = a{} + a{}\n", i + 1, i + 1));
    }
    s.push_str("a60 = 1\n");
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_ads_through_cmctl_advertise_are_bounded_refused_or_kept_apart() {
    let mut c = Cluster::start_with_config(daemon_bin(BIN), 3, FAST, CONFIG).expect("start");
    wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader");
    let cms: Vec<String> = c.running().into_iter().map(|(_, a)| a).collect();

    // 13.1: a claimed slot worth 1e308 slots, and a submitter so that cycles charge usage.
    let poison = slot(
        "slot1@huge",
        "huge",
        "10.9.0.1",
        "State = \"Claimed\"\nActivity = \"Busy\"\nRemoteUser = \"mallory@pool\"\n\
         RemoteOwner = \"mallory@pool\"\nSlotWeight = 1e308\n",
    );
    let (code, out) = advertise(&cms, "UPDATE_STARTD_AD", &poison, false);
    assert_eq!(code, 0, "{out}");
    let submitter = "MyType = \"Submitter\"\nName = \"mallory@pool\"\nScheddName = \"ap.pool\"\n\
                     ScheddIpAddr = \"<127.0.0.1:9>\"\nMyAddress = \"<127.0.0.1:9>\"\n\
                     IdleJobs = 1\nRunningJobs = 1\nClassAdLifetime = 3600\n";
    let (code, out) = advertise(&cms, "UPDATE_SUBMITTOR_AD", submitter, false);
    assert_eq!(code, 0, "{out}");
    let usage = |cms: Vec<String>| async move {
        let r = query_retry(&cms[0], UserprioQuery::default(), Duration::from_secs(10)).await?;
        Ok::<_, anyhow::Error>(
            r.rows
                .iter()
                .find(|r| r.name == "mallory@pool")
                .map(|r| r.accumulated_usage),
        )
    };
    let charged = eventually("mallory charged", Duration::from_secs(30), || {
        let cms = cms.clone();
        async move { Ok(usage(cms).await?.filter(|u| *u > 0.0)) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", c.log(1)));
    assert!(charged.is_finite(), "usage {charged}");

    // 13.2: an exponential Name is refused, naming the attribute; a constraint walking the
    // chain is refused in bounded time, and an ordinary query still answers.
    let exp = slot("x", "exp", "10.9.0.2", &chain()).replace("Name = \"x\"", "Name = a0");
    let (code, out) = advertise(&cms, "UPDATE_STARTD_AD", &exp, false);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Name"), "{out}");
    let heavy = slot("slot1@exp", "exp", "10.9.0.2", &chain());
    let (code, out) = advertise(&cms, "UPDATE_STARTD_AD", &heavy, false);
    assert_eq!(code, 0, "{out}");
    let t = std::time::Instant::now();
    // The chain's evaluation stops at its step budget: ERROR, so the ad does not match (a
    // whole pool of such ads would exceed the query's budget and be refused as too expensive).
    let (code, out) = status(&cms, &["-constraint", "a0 > 0", "-af", "Name"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("slot1@exp"), "{out}");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let (code, out) = status(&cms, &["-af", "Name"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("slot1@exp"), "{out}");

    // 13.3: the same Name on two hosts is two ads; the invalidation names the host.
    let twins = format!(
        "{}\n{}",
        slot("slot1@twin", "twin", "10.9.0.3", ""),
        slot("slot1@twin", "twin", "10.9.0.4", "")
    );
    let (code, out) = advertise(&cms, "UPDATE_STARTD_AD", &twins, true);
    assert_eq!(code, 0, "{out}");
    let addrs = |cms: Vec<String>| async move {
        let (code, out) = status(
            &cms,
            &["-constraint", "Name == \"slot1@twin\"", "-af", "MyAddress"],
        );
        anyhow::ensure!(code == 0, "{out}");
        let mut v: Vec<String> = out.lines().map(str::to_string).collect();
        v.sort();
        Ok(v)
    };
    eventually("both twins", Duration::from_secs(20), || {
        let cms = cms.clone();
        async move { Ok((addrs(cms).await?.len() == 2).then_some(())) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let remove_one = "MyType = \"Query\"\nTargetType = \"Machine\"\nName = \"slot1@twin\"\n\
                      MyAddress = \"<10.9.0.4:9618?sock=startd>\"\n";
    let (code, out) = advertise(&cms, "INVALIDATE_STARTD_ADS", remove_one, false);
    assert_eq!(code, 0, "{out}");
    eventually("one twin left", Duration::from_secs(20), || {
        let cms = cms.clone();
        async move {
            let v = addrs(cms).await?;
            Ok((v == ["<10.9.0.3:9618?sock=startd>"]).then_some(()))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));

    // 13.8: a lifetime beyond the bound is refused; one host's offline ads are capped.
    let forever = slot("slot1@forever", "forever", "10.9.0.5", "")
        .replace("ClassAdLifetime = 3600", "ClassAdLifetime = 1000000000");
    let (code, out) = advertise(&cms, "UPDATE_STARTD_AD", &forever, false);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("ClassAdLifetime"), "{out}");
    let flood: Vec<String> = (1..=6)
        .map(|i| {
            slot(
                &format!("slot{i}@flood"),
                "flood",
                "10.9.0.6",
                "Offline = true\n",
            )
        })
        .collect();
    let (code, out) = advertise(&cms, "UPDATE_STARTD_AD", &flood.join("\n"), true);
    assert_eq!(
        code, 1,
        "more offline ads than the host may hold are refused: {out}"
    );
    assert!(out.contains("Sent 3 of 6 ads"), "{out}");

    // The ledger, charged by the poisoned slot, survives a full restart of the cluster.
    let before = usage(cms.clone()).await.expect("usage").expect("a row");
    for id in c.ids() {
        c.stop(id);
    }
    for id in c.ids() {
        c.restart(id).expect("restart");
    }
    wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader after the restart");
    let after = eventually("the ledger back", Duration::from_secs(30), || {
        let cms = cms.clone();
        async move { usage(cms).await }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", c.log(1)));
    assert!(after.is_finite() && after >= before, "{before} -> {after}");
}
