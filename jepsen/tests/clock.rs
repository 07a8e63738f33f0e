//! Clock faults of a three-CM cluster under the write/read workload, every CM under
//! libfaketime (see src/clock.rs): the leader's wall clock stepped forward and back while
//! writes go on, and one CM's clock off for the whole run. Raft's timers run on the monotonic
//! clock, which the faults leave alone, so the cluster must not notice beyond its logs. Each
//! needs root, `ip` and Debian's `faketime`: without them it fails saying so.

mod common;

use aerie_jepsen::history::FaultKind;
use std::time::Duration;

fn clock_faults(o: &aerie_jepsen::scenario::Outcome) -> Vec<(u64, i64, Duration, Duration)> {
    o.history
        .faults
        .iter()
        .filter_map(|f| match f.kind {
            FaultKind::Clock(by) => Some((f.node, by, f.start, f.end)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_leader_whose_clock_jumps_forward_and_back_loses_nothing() {
    let o = common::play("clock-jump-leader", common::seed(), Duration::from_secs(8));
    let jumps = clock_faults(&o);
    assert!(
        jumps.iter().any(|j| j.1 > 0) && jumps.iter().any(|j| j.1 < 0),
        "{jumps:?}"
    );
    // Every jump was set right, and writes were acknowledged while a clock was off.
    for (node, by, start, end) in &jumps {
        assert_ne!(*end, Duration::MAX, "CM {node}'s {by:+} s never set right");
        assert!(
            o.history.writes_within(*start, *end, |_| true, true) > 0,
            "no write acknowledged while CM {node} was {by:+} s off"
        );
    }
}

#[test]
fn a_cm_with_a_skewed_clock_takes_part_as_any_other() {
    let o = common::play("clock-skew", common::seed(), Duration::from_secs(8));
    let skews = clock_faults(&o);
    assert_eq!(skews.len(), 1, "{skews:?}");
    let (node, by, start, end) = skews[0];
    assert!((60..=3600).contains(&by.abs()));
    assert_eq!((start, end), (Duration::ZERO, Duration::MAX));
    // The skewed CM answered the final linearizable read, and writes through it were
    // acknowledged: it is a full member, not cut off by its clock.
    assert!(o.finals.iter().any(|(id, _)| *id == node));
    assert!(
        o.history
            .writes_within(Duration::ZERO, Duration::MAX, |n| n == node, true)
            > 0,
        "no write through CM {node} ({by:+} s) was acknowledged"
    );
}

/// `YYYY-MM-DD` of Unix time `secs` (UTC), as tracing stamps log lines.
fn utc_date(secs: i64) -> String {
    let t = classad::builtins::time::calendar::gmtime(secs);
    format!("{:04}-{:02}-{:02}", t.year, t.mon, t.mday)
}

#[test]
fn utc_dates_are_computed_right() {
    assert_eq!(utc_date(0), "1970-01-01");
    assert_eq!(utc_date(951_782_400), "2000-02-29");
    assert_eq!(utc_date(1_700_000_000), "2023-11-14");
}

/// The mechanism itself, on the real daemon: started under libfaketime with its file a day
/// ahead, it stamps its log lines (tracing reads `SystemTime`) with tomorrow's date, and
/// with `FAKETIME_DONT_FAKE_MONOTONIC` its timers still run (it gets as far as logging).
#[test]
fn libfaketime_moves_the_daemons_wall_clock() {
    use std::collections::BTreeMap;
    aerie_tests::test_pool();
    let clocks = aerie_jepsen::clock::Clocks::new([1], &BTreeMap::from([(1, 86_400)]))
        .unwrap_or_else(|e| panic!("{e:#}"));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cm.log");
    let addr = format!("127.0.0.1:{}", aerie_tests::free_port());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_aerie-jepsen-cm"))
        .args(["--id", "1", "--listen", &addr, "--bootstrap", "--peers"])
        .arg(format!("1={addr}"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .envs(clocks.env(1))
        .env("AERIE_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start the daemon");
    let tomorrow = utc_date(aerie_tests::unix_now() + 86_400);
    let today = utc_date(aerie_tests::unix_now());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains(&tomorrow) || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        text.contains(&tomorrow) && !text.contains(&today),
        "the log should be stamped {tomorrow}, not {today}:\n{text}"
    );
}
