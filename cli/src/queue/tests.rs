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

/// The jobs the access point would answer with: those the constraint `p` makes for user
/// `me` selects (evaluated here as the access point would).
fn select(all: &[ClassAd], p: &Parsed, me: &str) -> Vec<ClassAd> {
    let c = constraint(p, me);
    if c.is_empty() {
        return all.to_vec();
    }
    let e = classad::parse_expr(&c).unwrap();
    all.iter()
        .filter(|a| matches!(a.eval_expr(&e), Value::Bool(true)))
        .cloned()
        .collect()
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
fn json_of_one_job_matches_condor_q() {
    let want = include_str!("../../tests/fixtures/queue/pool.json_1.0.out");
    assert_eq!(q_pool(&["-json", "1.0"]), want);
}

#[test]
fn long_prints_every_attribute_sorted() {
    assert_eq!(q_pool(&["-long"]), POOL_ADS);
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

#[test]
fn better_analyze_counts_slots_per_clause() {
    let job = &ads(POOL_ADS)[0];
    let slot = |extra: &str| {
        ads(&format!(
            "MyType = \"Machine\"\nName = \"slot1@n\"\nMachine = \"n\"\nArch = \"X86_64\"\nOpSys = \"LINUX\"\n\
             Disk = 1000000\nMemory = 1024\nRequirements = true\nFileSystemDomain = \"ref.test\"\nState = \"Unclaimed\"\n{extra}\n"
        ))
        .remove(0)
    };
    let slots = vec![
        slot("Memory = 50\nMachine = \"n1\""),
        slot("Requirements = false\nMachine = \"n2\""),
        slot("Machine = \"n3\""),
        slot("OpSys = \"WINDOWS\"\nMachine = \"n3\""),
        slot("State = \"Claimed\"\nMachine = \"n4\""),
    ];
    let a = analyze::analyse(job, &slots);
    assert_eq!(
        (
            a.slots,
            a.machines,
            a.rejected_by_job,
            a.rejected_by_slot,
            a.matched_claimed,
            a.matched_available
        ),
        (5, 4, 2, 1, 1, 1)
    );
    let counts: Vec<(&str, usize)> = a.clauses.iter().map(|(c, n)| (c.as_str(), *n)).collect();
    assert_eq!(
        counts,
        vec![
            ("TARGET.Arch == \"X86_64\"", 5),
            ("TARGET.OpSys == \"LINUX\"", 4),
            ("TARGET.Disk >= RequestDisk", 5),
            ("TARGET.Memory >= RequestMemory", 4),
            (
                "(TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)",
                5
            ),
        ]
    );
    let text = analyze::render(job, &a);
    assert!(
        text.contains("[1]           4  TARGET.OpSys == \"LINUX\"\n"),
        "{text}"
    );
    assert!(
        text.contains("      2 slots are rejected by your job's requirements\n"),
        "{text}"
    );
    assert!(text.contains("    RequestMemory = 100\n"), "{text}");
    assert!(
        text.contains(
            "001.000:  Run analysis summary ignoring user priority.  Of 5 slots on 4 machines,"
        ),
        "{text}"
    );
}
