//! condor_q's and condor_history's views against what the real tools (HTCondor 23.9.6, in the
//! reference chroot) printed for the same ads: `cli/tests/fixtures/queue/` (README.md there
//! says how they were made).
use super::*;
use crate::history;

const POOL_ADS: &str = include_str!("../../tests/fixtures/queue/pool.ads");
const MIXED_ADS: &str = include_str!("../../tests/fixtures/queue/mixed.ads");
const MIXED_HISTORY: &str = include_str!("../../tests/fixtures/queue/mixed.history");

/// The fixtures' clock: the reference pool's `ServerTime`, dates in UTC (the chroot's zone).
const CLOCK: Clock = Clock {
    now: 1_795_677_713,
    local: false,
};

fn ads(text: &str) -> Vec<ClassAd> {
    classad::parse_old_ads(text).unwrap()
}

/// The jobs the constraint `p` makes for user `me` selects, evaluated as the access point
/// would, whole.
fn picked<'a>(all: &'a [ClassAd], p: &Parsed, me: &str) -> Vec<&'a ClassAd> {
    let c = constraint(p, me);
    let e = (!c.is_empty()).then(|| classad::parse_expr(&c).unwrap());
    all.iter()
        .filter(|a| {
            e.as_ref()
                .is_none_or(|e| matches!(a.eval_expr(e), Value::Bool(true)))
        })
        .collect()
}

/// The jobs the access point would answer with ([`picked`]) as cmctl reads them: cut to the
/// view's [`projection`] and sent in rows (as `cmctl q` asks for them), or whole ads when the
/// view has no projection, so every view below is checked on the attributes and the path
/// `cmctl q` uses.
fn select(all: &[ClassAd], p: &Parsed, me: &str) -> Vec<ClassAd> {
    in_rows(&picked(all, p, me), &projection(&p.view))
}

/// `ads` as an access point answers a query asking for rows, read back as cmctl reads it.
fn in_rows(ads: &[&ClassAd], projection: &[String]) -> Vec<ClassAd> {
    if projection.is_empty() {
        return ads.iter().map(|a| (*a).clone()).collect();
    }
    let mut w = aerie_proto::rows::RowWriter::new(projection);
    ads.iter().for_each(|a| w.push(a));
    aerie_proto::rows::read_ads(&w.finish()).unwrap()
}

/// `ads` as an access point answered before rows (each ad [`cut`], in old syntax), read back
/// as cmctl read it.
fn in_text(ads: &[&ClassAd], projection: &[String]) -> Vec<ClassAd> {
    let reply = aerie_proto::schedd::QueryReply {
        ads: ads
            .iter()
            .map(|a| cut(a, projection).to_old_syntax())
            .collect(),
        ..Default::default()
    };
    aerie_proto::rows::read_ads(&reply).unwrap()
}

/// What `cmctl q ARGS` prints for user `me` when the access point answers in rows and when it
/// answers in ad text: the same, byte for byte, for every view that asks for rows.
#[test]
fn rows_print_what_ad_text_printed() {
    let views: [&[&str]; 12] = [
        &[],
        &["-nobatch"],
        &["-af", "ClusterId", "ProcId"],
        &["-af:jh", "Owner", "MemoryUsage", "RemoteUserCpu", "Gone"],
        &["-af:r", "MemoryUsage", "Requirements", "JobStatus"],
        &["-af:l", "Cmd", "Args", "Arguments", "QDate"],
        &["-constraint", "JobStatus == 1"],
        &["-nobatch", "-constraint", "ProcId > 0 && Owner =!= \"x\""],
        &["-hold"],
        &["-run"],
        &["-batch", "1"],
        &["-nobatch", "2.0", "3"],
    ];
    let mut printed = 0;
    for fixture in [POOL_ADS, MIXED_ADS] {
        let all = ads(fixture);
        let every: Vec<&ClassAd> = all.iter().collect();
        let status = ["JobStatus".to_string()];
        let totals_rows = views::Totals::of(&in_rows(&every, &status));
        let totals_text = views::Totals::of(&in_text(&every, &status));
        assert_eq!(totals_rows, totals_text);
        assert_eq!(totals_rows, views::Totals::of(&all));
        // The access point's per-status counts make the same summary.
        let mut counts = vec![0; 8];
        for a in &all {
            counts[a.eval_attr("JobStatus").as_int().unwrap() as usize] += 1;
        }
        assert_eq!(views::Totals::of_counts(&counts), totals_rows);
        for v in views {
            for who in [&[][..], &["-allusers"]] {
                let mut a = args(v);
                a.extend(args(who));
                let p = parse(&a).unwrap();
                let projection = projection(&p.view);
                assert!(!projection.is_empty(), "{a:?}");
                let jobs = picked(&all, &p, "ref");
                let by_rows = render(&p, &in_rows(&jobs, &projection), Some(&totals_rows), &CLOCK);
                let by_text = render(&p, &in_text(&jobs, &projection), Some(&totals_text), &CLOCK);
                assert_eq!(by_rows, by_text, "cmctl q {a:?}");
                printed += by_rows.lines().count();
            }
        }
    }
    // The views printed jobs, not only headers.
    assert!(printed > 300, "{printed} lines");
}

/// `ad` cut to `projection` (whole when empty) with the attributes the kept expressions refer
/// to, as the access point's `queue::project` does.
fn cut(ad: &ClassAd, projection: &[String]) -> ClassAd {
    if projection.is_empty() {
        return ad.clone();
    }
    let mut out = ClassAd::new();
    let mut wanted = projection.to_vec();
    while let Some(a) = wanted.pop() {
        if let (false, Some(e)) = (out.contains(&a), ad.lookup(&a)) {
            wanted.extend(e.references().internal);
            out.insert(&a, e.clone());
        }
    }
    out
}

#[test]
fn the_tables_ask_for_a_few_attributes_and_long_for_all() {
    let all = ads(MIXED_ADS);
    let p = parse(&args(&["-allusers", "-nobatch"])).unwrap();
    let sent: usize = select(&all, &p, "ref").iter().map(ClassAd::len).sum();
    let whole: usize = all.iter().map(ClassAd::len).sum();
    assert!(sent * 3 < whole, "{sent} of {whole} attributes sent");
    let p = parse(&args(&["-af", "Owner"])).unwrap();
    assert_eq!(projection(&p.view), ["ClusterId", "ProcId", "Owner"]);
    assert!(projection(&parse(&args(&["-long"])).unwrap().view).is_empty());
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The real tool's output without condor_q's `-- Schedd:` / `-- Jobads:` heading (two blank
/// lines and the line naming the schedd and the time).
fn body(fixture: &str) -> &str {
    let rest = fixture.strip_prefix("\n\n").unwrap_or(fixture);
    if rest.starts_with("-- ") {
        rest.split_once('\n').map(|x| x.1).unwrap_or("")
    } else {
        fixture
    }
}

/// Lines with trailing blanks cut: condor_q run on `-jobads` pads its summary line with spaces
/// up to a width it computes for the missing "all users" line.
fn trimmed(s: &str) -> String {
    s.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

/// Runs `cmctl q ARGS` as user `ref` over the pool's queue (whose whole queue the summary's
/// second line counts).
fn q_pool(a: &[&str]) -> String {
    let all = ads(POOL_ADS);
    let p = parse(&args(a)).unwrap();
    let picked = select(&all, &p, "ref");
    render(&p, &picked, Some(&views::Totals::of(&all)), &CLOCK)
}

#[test]
fn default_batch_view_matches_condor_q() {
    let want = include_str!("../../tests/fixtures/queue/pool.batch.out");
    assert_eq!(q_pool(&[]), body(want));
}

#[test]
fn nobatch_view_matches_condor_q() {
    let want = include_str!("../../tests/fixtures/queue/pool.nobatch.out");
    assert_eq!(q_pool(&["-nobatch"]), body(want));
}

#[test]
fn hold_view_matches_condor_q() {
    let want = include_str!("../../tests/fixtures/queue/pool.hold.out");
    assert_eq!(q_pool(&["-hold"]), body(want));
}

#[test]
fn run_view_with_nothing_running_is_the_header_alone() {
    let want = include_str!("../../tests/fixtures/queue/pool.run.out");
    assert_eq!(q_pool(&["-run"]), body(want));
}

#[test]
fn a_query_matching_nothing_still_counts_all_users() {
    let want = include_str!("../../tests/fixtures/queue/pool.nomatch.out");
    assert_eq!(q_pool(&["nosuchuser"]), body(want));
    assert_eq!(q_pool(&["9999.0"]), body(want));
}

#[test]
fn autoformat_matches_condor_q() {
    let want = include_str!("../../tests/fixtures/queue/pool.af.out");
    assert_eq!(
        q_pool(&["-af", "ClusterId", "ProcId", "Owner", "JobStatus"]),
        want
    );
    let want = include_str!("../../tests/fixtures/queue/pool.af_j.out");
    assert_eq!(q_pool(&["-af:j", "ClusterId", "Cmd"]), want);
    let want = include_str!("../../tests/fixtures/queue/pool.af_h.out");
    assert_eq!(
        q_pool(&["-af:h", "ClusterId", "Cmd", "RequestMemory"]),
        want
    );
}

#[test]
fn autoformat_options_match_condor_q() {
    // The second reference session queued cluster 1 (three jobs of ref) alone.
    let cases: [(&[&str], &str); 5] = [
        (
            &["-af:jh", "ClusterId", "Owner"],
            include_str!("../../tests/fixtures/queue/cluster1.af_jh.out"),
        ),
        (
            &["-af:l", "ClusterId", "Owner"],
            include_str!("../../tests/fixtures/queue/cluster1.af_l.out"),
        ),
        (
            &["-af:,", "ClusterId", "Owner"],
            include_str!("../../tests/fixtures/queue/cluster1.af_comma.out"),
        ),
        (
            &["-af:t", "ClusterId", "Owner"],
            include_str!("../../tests/fixtures/queue/cluster1.af_t.out"),
        ),
        (
            &["-af", "ClusterId", "NoSuchAttr"],
            include_str!("../../tests/fixtures/queue/cluster1.af_undefined.out"),
        ),
    ];
    for (a, want) in cases {
        let mut with_cluster = vec!["1".to_string()];
        with_cluster.extend(args(a));
        let p = parse(&with_cluster).unwrap();
        let got = render(&p, &select(&ads(POOL_ADS), &p, "ref"), None, &CLOCK);
        assert_eq!(got, want, "cmctl q {a:?}");
    }
}

#[test]
fn json_of_one_job_matches_condor_q() {
    let want = include_str!("../../tests/fixtures/queue/pool.json_1.0.out");
    assert_eq!(q_pool(&["-json", "1.0"]), want);
}

#[test]
fn long_prints_every_attribute_sorted() {
    assert_eq!(q_pool(&["-long"]), POOL_ADS);
    // condor_history -long of two removed jobs: the same form.
    let removed = include_str!("../../tests/fixtures/queue/history.long.ads");
    let p = history::parse(&args(&["-long"])).unwrap().unwrap();
    assert_eq!(history::render(&p, &ads(removed), &CLOCK), removed);
}

/// condor_q -jobads over a queue of several users with running, held, completed and removed
/// jobs, batch names spanning clusters, and wide owners and sizes.
fn q_mixed(a: &[&str]) -> String {
    let all = ads(MIXED_ADS);
    let p = parse(&args(a)).unwrap();
    render(&p, &select(&all, &p, "ref"), None, &CLOCK)
}

#[test]
fn mixed_queue_views_match_condor_q() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["-allusers"],
            include_str!("../../tests/fixtures/queue/mixed.batch.out"),
        ),
        (
            &["-allusers", "-nobatch"],
            include_str!("../../tests/fixtures/queue/mixed.nobatch.out"),
        ),
        (
            &["-allusers", "-run"],
            include_str!("../../tests/fixtures/queue/mixed.run.out"),
        ),
        (
            &["-allusers", "-hold"],
            include_str!("../../tests/fixtures/queue/mixed.hold.out"),
        ),
    ];
    for (a, want) in cases {
        assert_eq!(trimmed(&q_mixed(a)), trimmed(body(want)), "cmctl q {a:?}");
    }
}

#[test]
fn only_the_callers_jobs_unless_asked() {
    let p = parse(&[]).unwrap();
    assert_eq!(constraint(&p, "alice"), "(Owner == \"alice\")");
    let p = parse(&args(&["-allusers", "-constraint", "JobPrio > 0"])).unwrap();
    assert_eq!(constraint(&p, "alice"), "(JobPrio > 0)");
    let p = parse(&args(&["bob", "7", "12.3", "-hold"])).unwrap();
    assert_eq!(
        constraint(&p, "alice"),
        "(Owner == \"bob\" || ClusterId == 7 || ClusterId == 12 && ProcId == 3) && (JobStatus == 5)"
    );
    let mixed = ads(MIXED_ADS);
    let ids = |a: &[&str], me: &str| -> Vec<(i64, i64)> {
        select(&mixed, &parse(&args(a)).unwrap(), me)
            .iter()
            .map(columns::job_id)
            .collect()
    };
    assert_eq!(ids(&[], "alice"), vec![(7, 0), (7, 1), (7, 2), (7, 3)]);
    assert_eq!(ids(&["10.0", "1000"], "alice"), vec![(10, 0), (1000, 12)]);
    assert!(parse(&args(&["-constraint", "Owner =="])).is_err());
    assert!(parse(&args(&["-better-analyze", "bob"])).is_err());
    assert!(parse(&args(&["-bogus"])).is_err());
}

/// condor_history reads its file from the end: the newest job first.
fn history_ads() -> Vec<ClassAd> {
    let text: String = MIXED_HISTORY
        .lines()
        .map(|l| {
            if l.starts_with("***") {
                "\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let mut v = ads(&text);
    v.reverse();
    v
}

#[test]
fn history_table_matches_condor_history() {
    let run = |a: &[&str]| {
        let p = history::parse(&args(a)).unwrap().unwrap();
        let mut v = history_ads();
        if p.limit > 0 {
            v.truncate(p.limit as usize);
        }
        history::render(&p, &v, &CLOCK)
    };
    assert_eq!(
        run(&[]),
        include_str!("../../tests/fixtures/queue/mixed.history.out")
    );
    assert_eq!(
        run(&["-limit", "3"]),
        include_str!("../../tests/fixtures/queue/mixed.history3.out")
    );
    assert_eq!(
        run(&["-af", "ClusterId", "ProcId", "Owner"]),
        include_str!("../../tests/fixtures/queue/mixed.history_af.out")
    );
    let p = history::parse(&args(&[
        "-constraint",
        "ExitCode == 0",
        "alice",
        "-match",
        "2",
    ]))
    .unwrap()
    .unwrap();
    assert_eq!(p.limit, 2);
    assert_eq!(
        history::constraint(&p),
        "(ExitCode == 0) && (Owner == \"alice\")"
    );
}

/// The lines of `text` from the first that starts with `from` up to the first blank line.
fn block<'a>(text: &'a str, from: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| !l.starts_with(from))
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn better_analyze_matches_condor_qs_counts() {
    // condor_q -better-analyze 1.0 in the reference pool with these four slots: one too
    // small, one whose START is false, one Windows, one that fits.
    let job = &ads(POOL_ADS)[0];
    let slots = ads(include_str!("../../tests/fixtures/queue/analyze.slots.ads"));
    let want = include_str!("../../tests/fixtures/queue/pool.better_analyze.out");
    let a = analyze::analyse(job, &slots);
    let got = analyze::render(job, &a);
    for from in [
        "The Requirements expression for job 1.000 is",
        "Job 1.000 defines the following attributes:",
        "001.000:  Run analysis summary",
    ] {
        assert_eq!(block(&got, from), block(want, from), "{got}");
    }
    let counts: Vec<(&str, usize)> = a.clauses.iter().map(|(c, n)| (c.as_str(), *n)).collect();
    assert_eq!(
        counts,
        vec![
            ("TARGET.Arch == \"X86_64\"", 4),
            ("TARGET.OpSys == \"LINUX\"", 3),
            ("TARGET.Disk >= RequestDisk", 4),
            ("TARGET.Memory >= RequestMemory", 3),
            (
                "(TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)",
                4
            ),
        ]
    );
    assert!(
        got.contains("[1]           3  TARGET.OpSys == \"LINUX\"\n"),
        "{got}"
    );
}

#[test]
fn better_analyze_tells_claimed_slots_apart() {
    let job = &ads(POOL_ADS)[0];
    let slot = |extra: &str| {
        ads(&format!(
            "Arch = \"X86_64\"\nOpSys = \"LINUX\"\nDisk = 1000000\nMemory = 1024\n\
             Requirements = true\nFileSystemDomain = \"ref.test\"\nState = \"Unclaimed\"\n{extra}\n"
        ))
        .remove(0)
    };
    let slots = vec![
        slot("State = \"Claimed\"\nRemoteUser = \"ref@ref.test\""),
        slot("State = \"Claimed\"\nRemoteUser = \"bob@ref.test\""),
        slot(""),
    ];
    let a = analyze::analyse(job, &slots);
    assert_eq!((a.running_yours, a.serving_others, a.available), (1, 1, 1));
}
