// `cmctl what-if` on dumps in the formats the HTCondor tools print.
use std::path::PathBuf;
use std::process::Command;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("aerie-whatif-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn slots_dump(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "MyType = \"Machine\"\nName = \"slot1@node{i}.example.org\"\nMachine = \"node{i}.example.org\"\nState = \"Unclaimed\"\nActivity = \"Idle\"\nCpus = 1\nMemory = 2048\nDisk = 1000000\nSlotID = 1\nRequirements = START\nSTART = true\nRank = 0.0\nNETWORK = \"NETWORK_A\"\n\n"
        ));
    }
    s
}

fn jobs_dump(owner: &str, cluster: u32, n: usize, extra: &str) -> String {
    let mut s = String::new();
    for p in 0..n {
        s.push_str(&format!(
            "MyType = \"Job\"\nClusterId = {cluster}\nProcId = {p}\nOwner = \"{owner}\"\nUser = \"{owner}@example.org\"\nJobStatus = 1\nQDate = {}\nRequestCpus = 1\nRequestMemory = 128\nRequirements = (TARGET.Memory >= RequestMemory)\n{extra}\n",
            1_700_000_000 + p
        ));
    }
    s
}

fn cmctl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cmctl"))
        .args(args)
        .output()
        .expect("run cmctl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn fair_share_and_concurrency_limits_from_dumps() {
    let d = dir("fair");
    std::fs::write(d.join("slots"), slots_dump(12)).unwrap();
    let mut jobs = jobs_dump("alice", 10, 20, "");
    jobs.push_str(&jobs_dump("bob", 20, 20, ""));
    jobs.push_str(&jobs_dump("carol", 30, 5, "ConcurrencyLimits = \"xsw\"\n"));
    std::fs::write(d.join("jobs"), jobs).unwrap();
    // Flat condor_userprio -l: alice EUP 10, bob EUP 20, carol EUP 1.
    std::fs::write(
        d.join("prio"),
        "LastUpdate = 1700000000\nName1 = \"alice@example.org\"\nPriority1 = 10.0\nPriorityFactor1 = 1.0\n\
         Name2 = \"bob@example.org\"\nPriority2 = 20.0\nPriorityFactor2 = 1.0\n\
         Name3 = \"carol@example.org\"\nPriority3 = 1.0\nPriorityFactor3 = 1.0\nNumSubmittors = 3\n",
    )
    .unwrap();
    std::fs::write(
        d.join("config"),
        "XSW_LIMIT = 3\nPREEMPTION_REQUIREMENTS = False\n",
    )
    .unwrap();
    let p = |f: &str| d.join(f).display().to_string();
    let (code, out, err) = cmctl(&[
        "what-if",
        "--slots",
        &p("slots"),
        "--jobs",
        &p("jobs"),
        "--config",
        &p("config"),
        "--userprio",
        &p("prio"),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let matches = v["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 12);
    let count = |u: &str| matches.iter().filter(|m| m["submitter"] == u).count();
    // carol (best priority) is held to 3 by XSW_LIMIT; alice:bob share the rest 2:1 in
    // HTCondor's spin arithmetic.
    assert_eq!(count("carol@example.org"), 3);
    assert_eq!(count("alice@example.org") + count("bob@example.org"), 9);
    assert!(count("alice@example.org") > count("bob@example.org"));
    assert_eq!(matches[0]["reason"], "no_preemption");
    assert!(matches[0]["preempts"].is_null());
    assert!(matches[0]["job"].as_str().unwrap().contains('.'));
    let carol = v["submitters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "carol@example.org")
        .unwrap();
    assert_eq!(carol["limited_by"]["concurrency_limit"], "xsw");
    // The table form names every submitter.
    let (code, out, _) = cmctl(&[
        "what-if",
        "--slots",
        &p("slots"),
        "--jobs",
        &p("jobs"),
        "--userprio",
        &p("prio"),
    ]);
    assert_eq!(code, 0);
    assert!(
        out.contains("alice@example.org") && out.contains("Limited by") && out.contains("matches")
    );
}

#[test]
fn group_quotas_from_config() {
    let d = dir("groups");
    std::fs::write(d.join("slots"), slots_dump(30)).unwrap();
    let mut jobs = jobs_dump(
        "einstein",
        1,
        60,
        "AccountingGroup = \"group_physics.hep.einstein\"\n",
    );
    jobs.push_str(&jobs_dump(
        "curie",
        2,
        60,
        "AccountingGroup = \"group_chemistry.curie\"\n",
    ));
    std::fs::write(d.join("jobs"), jobs).unwrap();
    std::fs::write(
        d.join("config"),
        "GROUP_NAMES = group_physics, group_physics.hep, group_physics.lep, group_chemistry\n\
         GROUP_QUOTA_group_physics = 20\nGROUP_QUOTA_group_physics.hep = 15\nGROUP_QUOTA_group_physics.lep = 5\n\
         GROUP_QUOTA_group_chemistry = 10\nGROUP_ACCEPT_SURPLUS = false\nGROUP_ACCEPT_SURPLUS_group_physics.hep = true\n\
         GROUP_ACCEPT_SURPLUS_group_physics.lep = true\nNEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = false\n",
    )
    .unwrap();
    let p = |f: &str| d.join(f).display().to_string();
    let (code, out, err) = cmctl(&[
        "what-if",
        "--slots",
        &p("slots"),
        "--jobs",
        &p("jobs"),
        "--config",
        &p("config"),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let matches = v["matches"].as_array().unwrap();
    let count = |u: &str| matches.iter().filter(|m| m["submitter"] == u).count();
    assert_eq!(count("group_physics.hep.einstein@example.org"), 20);
    assert_eq!(count("group_chemistry.curie@example.org"), 10);
    let hep = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "group_physics.hep")
        .unwrap();
    assert_eq!(hep["quota"], 15.0);
    assert_eq!(hep["allocated"], 20.0);
}

#[test]
fn bad_input_names_file_ad_and_line() {
    let d = dir("bad");
    std::fs::write(
        d.join("slots"),
        format!("{}Name = \"x\"\nCpus = (1 +\n", slots_dump(2)),
    )
    .unwrap();
    std::fs::write(d.join("jobs"), jobs_dump("a", 1, 1, "")).unwrap();
    let p = |f: &str| d.join(f).display().to_string();
    let (code, _, err) = cmctl(&["what-if", "--slots", &p("slots"), "--jobs", &p("jobs")]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&p("slots")) && err.contains("ad 3") && err.contains("line 3"),
        "{err}"
    );
    std::fs::write(d.join("jobs2"), "MyType = \"Job\"\nOwner = \"a\"\n").unwrap();
    std::fs::write(d.join("slots"), slots_dump(1)).unwrap();
    let (code, _, err) = cmctl(&["what-if", "--slots", &p("slots"), "--jobs", &p("jobs2")]);
    assert_eq!(code, 2);
    assert!(err.contains("jobs2") && err.contains("ClusterId"), "{err}");
    std::fs::write(d.join("cfg"), "PREEMPTION_REQUIREMENTS = (1 +\n").unwrap();
    let (code, _, err) = cmctl(&[
        "what-if",
        "--slots",
        &p("slots"),
        "--jobs",
        &p("jobs"),
        "--config",
        &p("cfg"),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("PREEMPTION_REQUIREMENTS"), "{err}");
}

/// Dumps taken from the real HTCondor 23.9.6 pool (tests/reference/negotiator/redistribution.sh
/// with DUMP set): `condor_status -long`, `condor_q -long`, `condor_userprio -l` (flat and
/// -modular). The real negotiator matched a 5, b 46, c 19 on this pool; what-if must agree.
#[test]
fn real_htcondor_dumps_reproduce_the_real_negotiator() {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/reference/negotiator/dumps/redistribution");
    for prio in ["userprio.txt", "userprio-modular.txt"] {
        let p = |f: &str| d.join(f).display().to_string();
        let (code, out, err) = cmctl(&[
            "what-if",
            "--slots",
            &p("slots.txt"),
            "--jobs",
            &p("jobs.txt"),
            "--userprio",
            &p(prio),
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let m = v["matches"].as_array().unwrap();
        let count = |u: &str| m.iter().filter(|x| x["submitter"] == u).count();
        assert_eq!(
            (
                count("a@ref.test"),
                count("b@ref.test"),
                count("c@ref.test")
            ),
            (5, 46, 19),
            "{prio}"
        );
    }
}

/// Dumps big enough to be read in pieces on several threads: a bad line late in each is still
/// reported with its ad and line counted from the start of its file, slots first.
#[test]
fn bad_line_deep_in_a_big_dump_names_its_ad_and_line() {
    let d = dir("big");
    // 14 lines per slot ad (13 attributes and the blank line): 4,000 ads, about 1 MB.
    let mut slots = slots_dump(4000);
    let at = slots
        .match_indices("MyType")
        .nth(3499)
        .map(|(i, _)| i)
        .unwrap();
    slots.insert_str(at, "Memory = (2048 *\n");
    std::fs::write(d.join("slots"), &slots).unwrap();
    let mut jobs = jobs_dump("a", 1, 4000, "");
    jobs.push_str("Bad = 08\n");
    std::fs::write(d.join("jobs"), &jobs).unwrap();
    std::fs::write(d.join("good-slots"), slots_dump(4000)).unwrap();
    let p = |f: &str| d.join(f).display().to_string();
    let (code, _, err) = cmctl(&["what-if", "--slots", &p("slots"), "--jobs", &p("jobs")]);
    assert_eq!(code, 2);
    let want = format!("{}: ad 3500 (line {}, column ", p("slots"), 3499 * 14 + 1);
    assert!(err.contains(&want), "{err}");
    let (code, _, err) = cmctl(&["what-if", "--slots", &p("good-slots"), "--jobs", &p("jobs")]);
    assert_eq!(code, 2);
    // 11 lines per job ad: the bad line is the first after the last ad.
    let want = format!("{}: ad 4001 (line {}, column 7)", p("jobs"), 4000 * 11 + 1);
    assert!(err.contains(&want), "{err}");
}
