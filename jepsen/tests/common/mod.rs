//! What every scenario test does: play a named scenario and fail on any checker's violation.

use aerie_jepsen::scenario::{execute, plan, Outcome};
use std::path::PathBuf;
use std::time::Duration;

/// Plays scenario `name` (faults lasting `time`, random choices from `seed`), prints its
/// summary, and asserts every checker passed and some operation was acknowledged.
pub fn play(name: &str, seed: u64, time: Duration) -> Outcome {
    let plan = plan(name, seed, time).expect("a known scenario");
    let daemon = PathBuf::from(env!("CARGO_BIN_EXE_aerie-jepsen-cm"));
    let o = execute(&plan, daemon).unwrap_or_else(|e| panic!("jepsen: {e:#}"));
    eprintln!("jepsen {name} (seed {seed}): {}", o.summary());
    assert!(
        o.report.valid(),
        "{name}: checkers failed:\n{}",
        o.report.render()
    );
    assert!(o.history.counts().0 > 0, "{name}: nothing was acknowledged");
    o
}

/// The seed of a randomized test: `AERIE_JEPSEN_SEED`, else the time.
#[allow(dead_code)]
pub fn seed() -> u64 {
    std::env::var("AERIE_JEPSEN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| aerie_tests::unix_now() as u64)
}
