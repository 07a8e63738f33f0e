//! `cmctl advertise`, condor_advertise against real CMs: a slot ad published through one CM is
//! seen from every CM, an offline ad shows with `cmctl status -offline` and an invalidation
//! removes it (through Raft) as it removes live ads picked by Name or by Requirements; a
//! refused ad is reported with the file, its name and the attribute, a file with two ads
//! needs `-multiple`, and an unreachable CM is a failure, with condor_advertise's summary
//! line and exit codes.
use aerie_core::admin::AdsQuery;
use aerie_tests::*;
use std::path::Path;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");

const CONFIG: &str = "\
AERIE_COLLECTOR_RELAY_INTERVAL = 50ms
AERIE_COLLECTOR_DIGEST_INTERVAL = 1s
";

fn cmctl(cms: &[String], args: &[&str]) -> (i32, String, String) {
    run_cmctl(CMCTL, cms, args, None)
}

/// `cmctl` through the one CM at `addr`.
fn cmctl_at(addr: &str, args: &[&str]) -> (i32, String, String) {
    cmctl(&[addr.to_string()], args)
}

fn slot(name: &str, host: &str, extra: &str) -> String {
    format!(
        "MyType = \"Machine\"\nName = \"{name}\"\nMachine = \"{host}\"\n\
         MyAddress = \"<10.8.0.1:9618?sock=startd_{host}>\"\nState = \"Unclaimed\"\n\
         Activity = \"Idle\"\nOpSys = \"LINUX\"\nArch = \"X86_64\"\nMemory = 1024\n\
         ClassAdLifetime = 3600\n{extra}"
    )
}

/// Ads one after the other, a blank line between them (each ends with a newline).
fn several(ads: &[String]) -> String {
    ads.join("\n")
}

fn write(dir: &Path, file: &str, text: &str) -> String {
    let p = dir.join(file);
    std::fs::write(&p, text).expect("write the ad file");
    p.display().to_string()
}

/// The names `cmctl status ARGS -af Name` prints through the CM at `addr`.
fn status_names(addr: &str, args: &[&str]) -> anyhow::Result<Vec<String>> {
    let mut all = args.to_vec();
    all.extend(["-af", "Name"]);
    let mut line = vec!["status"];
    line.extend(all);
    let (code, out, err) = cmctl_at(addr, &line);
    if code != 0 {
        anyhow::bail!("cmctl status through {addr}: exit {code}: {err}");
    }
    let mut names: Vec<String> = out.lines().map(str::to_string).collect();
    names.sort();
    Ok(names)
}

/// Waits until `cmctl status ARGS` through every CM of `addrs` names exactly `want`.
async fn every_cm_shows(addrs: &[String], args: &[&str], want: &[&str], within: Duration) {
    for a in addrs {
        eventually(
            &format!("cmctl status {args:?} through {a} shows {want:?}"),
            within,
            || async move {
                match status_names(a, args)? {
                    got if got == want => Ok(Some(())),
                    got => anyhow::bail!("it shows {got:?}"),
                }
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Waits until the replicated state, read through `addr`, holds `n` offline ads.
async fn offline_records(addr: &str, n: usize, what: &str) {
    eventually(what, Duration::from_secs(20), || async move {
        let ads = query(addr, AdsQuery, false).await?;
        Ok((ads.get("Offline").map_or(0, |m| m.len()) == n).then_some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ads_are_published_through_any_cm_and_invalidated() {
    let c = Cluster::start_with_config(daemon_bin(BIN), 3, &[], CONFIG).expect("start");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let all: Vec<String> = c.running().into_iter().map(|(_, a)| a).collect();
    let (a1, a2, a3) = (c.addr(1), c.addr(2), c.addr(3));
    let dir = c.dir.path();
    // Every CM knows the whole cluster, so it relays what it takes to the others: a hidden
    // (offline) ad is not in the digests that repair live ads later, and only the leader
    // commits it, from its own collector.
    for a in &all {
        eventually(
            "the CM knows the cluster",
            Duration::from_secs(20),
            || async move {
                let s = status(a).await?;
                Ok((s.has_leader && s.members.len() == 3).then_some(()))
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    }

    // One slot through CM 2 only: every CM shows it.
    let one = write(dir, "slot.ad", &slot("slot1@adv1", "adv1", ""));
    let (code, out, err) = cmctl_at(&a2, &["advertise", "UPDATE_STARTD_AD", &one]);
    assert_eq!(
        (code, out.as_str()),
        (0, format!("Sent 1 of 1 ad to {a2}.\n").as_str()),
        "{err}"
    );
    every_cm_shows(&all, &[], &["slot1@adv1"], Duration::from_secs(20)).await;

    // Two ads with -multiple from standard input, the second offline, through any CM.
    let two = several(&[
        slot("slot2@adv1", "adv1", ""),
        slot("slot1@off1", "off1", "Offline = true\n"),
    ]);
    let (code, out, err) = run_cmctl(
        CMCTL,
        &all,
        &[
            "advertise",
            "-multiple",
            "-tcp",
            "-debug",
            "UPDATE_STARTD_AD",
            "-",
        ],
        Some(&two),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("(stdin), ad 1 (line 1, \"slot2@adv1\"): new"),
        "{out}"
    );
    assert!(
        out.contains("(stdin), ad 2 (line 12, \"slot1@off1\"): new"),
        "{out}"
    );
    assert!(out.contains("Sent 2 of 2 ads to "), "{out}");
    every_cm_shows(
        &all,
        &[],
        &["slot1@adv1", "slot2@adv1"],
        Duration::from_secs(20),
    )
    .await;
    every_cm_shows(
        &all,
        &["-offline"],
        &["slot1@off1"],
        Duration::from_secs(20),
    )
    .await;
    // The leader commits the offline ad through Raft; give its own collector's mirror a
    // couple of sweeps (2 s) to take the record back, or it would commit the ad again
    // after the invalidation removed it (see the report: an invalidation should drop the
    // hidden ad from the collectors too).
    offline_records(&a1, 1, "the offline ad is in the replicated state").await;
    tokio::time::sleep(Duration::from_secs(5)).await;

    // The manual's query ad removes the offline ad, through CM 3.
    let inv = write(
        dir,
        "remove_file",
        "MyType = \"Query\"\nTargetType = \"Machine\"\nName = \"slot1@off1\"\n\
         Requirements = Name == \"slot1@off1\"\n",
    );
    let (code, out, err) = cmctl_at(&a3, &["advertise", "INVALIDATE_STARTD_ADS", &inv]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "{inv}, ad 1 (line 1, \"slot1@off1\"): removed 1 ad: Machine \"slot1@off1\" (offline)"
        )),
        "{out}"
    );
    assert!(out.contains(&format!("Sent 1 of 1 ad to {a3}.")), "{out}");
    offline_records(&a2, 0, "the offline ad left the replicated state").await;
    // Each collector drops it once it is older than the leader's grace (30 s).
    every_cm_shows(&all, &["-offline"], &[], Duration::from_secs(60)).await;

    // Without a Name, Requirements picks the ads: both slots of adv1 go, from every CM.
    let inv = write(
        dir,
        "by_machine",
        "MyType = \"Query\"\nTargetType = \"Machine\"\nRequirements = MY.Machine == \"adv1\"\n",
    );
    let (code, out, err) = cmctl_at(&a1, &["advertise", "INVALIDATE_STARTD_ADS", &inv]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("removed 2 ads: Machine \"slot1@adv1\", Machine \"slot2@adv1\""),
        "{out}"
    );
    every_cm_shows(&all, &[], &[], Duration::from_secs(20)).await;
    let (code, out, _) = cmctl_at(&a1, &["advertise", "INVALIDATE_STARTD_ADS", &inv]);
    assert_eq!(code, 0);
    assert!(out.contains("no ad matched"), "{out}");

    // A refused ad: the file, the ad's position and name, the attribute; the good one goes.
    let bad = write(
        dir,
        "bad.ad",
        &several(&[
            slot("slot1@good", "good", ""),
            slot("slot1@bad", "bad", "ClassAdLifetime = \"soon\"\n"),
        ]),
    );
    let (code, out, err) = cmctl(&all, &["advertise", "-multiple", "UPDATE_STARTD_AD", &bad]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("Sent 1 of 2 ads to "), "{out}");
    assert!(
        err.contains(&format!(
            "{bad}, ad 2 (line 12, \"slot1@bad\"): refused: ad \"slot1@bad\", attribute \
             ClassAdLifetime:"
        )),
        "{err}"
    );
    every_cm_shows(&all, &[], &["slot1@good"], Duration::from_secs(20)).await;

    // Two ads without -multiple: refused before anything is sent.
    let two = write(
        dir,
        "two.ad",
        &several(&[slot("slot1@t1", "t1", ""), slot("slot1@t2", "t2", "")]),
    );
    let (code, out, err) = cmctl(&all, &["advertise", "UPDATE_STARTD_AD", &two]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(&format!("{two} holds more than one ad")),
        "{err}"
    );
    assert!(err.contains("-multiple"), "{err}");
    // A slot ad sent as a schedd's: MyType must agree with the command.
    let (code, _, err) = cmctl(&all, &["advertise", "UPDATE_SCHEDD_AD", &one]);
    assert_eq!(code, 1);
    assert!(
        err.contains("attribute MyType: \"Machine\" does not agree with UPDATE_SCHEDD_AD"),
        "{err}"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(status_names(&a3, &[]).expect("status"), vec!["slot1@good"]);
    assert!(status_names(&a3, &["-schedd"]).expect("status").is_empty());
}

/// condor_advertise against a collector that does not answer: "Sent 0 of 1 ad" and exit 1.
#[test]
fn an_unreachable_cm_is_a_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = write(dir.path(), "slot.ad", &slot("slot1@x", "x", ""));
    let dead = format!("127.0.0.1:{}", free_port());
    let (code, out, err) = cmctl_at(
        &dead,
        &["advertise", "--timeout", "3", "UPDATE_STARTD_AD", &one],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(out, format!("Sent 0 of 1 ad to {dead}.\n"));
    assert!(err.contains(&format!("{dead}: not reachable")), "{err}");
}
