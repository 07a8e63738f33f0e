//! The summary of `jepsen/run --runs K` (`DIR/summary.json`): over the runs of each scenario
//! (and over all runs), the median and 99th percentile of the unavailability window and the
//! faults survived per run, read from each run's `results.json` value
//! ([`crate::results::results`]). Issue 17 asks for the write-unavailability window as a
//! median and p99, not one sample.

use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The `p`-th percentile (0-100) of `values` by the nearest-rank method (the smallest value
/// with at least `p`% of the values at or below it), `None` when there are none.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    Some(v[rank.min(v.len()) - 1])
}

/// The faults a run survived: the sum of its `faults` counts.
fn faults_of(r: &Value) -> u64 {
    r["faults"]
        .as_object()
        .map(|m| m.values().filter_map(Value::as_u64).sum())
        .unwrap_or(0)
}

fn stats(runs: &[&Value]) -> Value {
    let unavailable: Vec<f64> = runs
        .iter()
        .filter_map(|r| r["unavailability"]["longest_without_acknowledged_write_ms"].as_f64())
        .collect();
    let faults: Vec<f64> = runs.iter().map(|r| faults_of(r) as f64).collect();
    json!({
        "runs": runs.len(),
        "valid": runs.iter().filter(|r| r["valid"] == json!(true)).count(),
        "unavailability_ms": {
            "p50": percentile(&unavailable, 50.0),
            "p99": percentile(&unavailable, 99.0),
            "max": percentile(&unavailable, 100.0),
        },
        "faults_per_run": {
            "p50": percentile(&faults, 50.0),
            "min": percentile(&faults, 0.0),
            "max": percentile(&faults, 100.0),
        },
        "per_run": runs.iter().map(|r| json!({
            "scenario": r["scenario"], "seed": r["seed"], "valid": r["valid"],
            "faults": r["faults"], "faults_survived": faults_of(r),
            "unavailability_ms": r["unavailability"]["longest_without_acknowledged_write_ms"],
        })).collect::<Vec<_>>(),
    })
}

/// The summary of `results` (one `results.json` value per run): `all` over every run and
/// `scenarios` per scenario name.
pub fn summarize(results: &[Value]) -> Value {
    let mut by: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for r in results {
        by.entry(r["scenario"].as_str().unwrap_or("?").to_string())
            .or_default()
            .push(r);
    }
    json!({
        "all": stats(&results.iter().collect::<Vec<_>>()),
        "scenarios": by.iter().map(|(k, v)| (k.clone(), stats(v))).collect::<serde_json::Map<_, _>>(),
    })
}

/// One line per scenario for people: runs, valid runs, unavailability p50/p99, faults.
pub fn render(summary: &Value) -> String {
    let ms = |v: &Value| {
        v.as_f64()
            .map_or("-".into(), |x| format!("{:.2} s", x / 1000.0))
    };
    let n = |v: &Value| v.as_f64().map_or("-".into(), |x| format!("{x:.0}"));
    let mut out = String::new();
    let mut line = |name: &str, s: &Value| {
        out.push_str(&format!(
            "{name}: {} runs, {} valid, unavailability p50 {} p99 {} max {}, faults survived per \
             run p50 {} (min {}, max {})\n",
            s["runs"],
            s["valid"],
            ms(&s["unavailability_ms"]["p50"]),
            ms(&s["unavailability_ms"]["p99"]),
            ms(&s["unavailability_ms"]["max"]),
            n(&s["faults_per_run"]["p50"]),
            n(&s["faults_per_run"]["min"]),
            n(&s["faults_per_run"]["max"]),
        ))
    };
    if let Some(m) = summary["scenarios"].as_object() {
        for (name, s) in m {
            line(name, s);
        }
    }
    line("all", &summary["all"]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&v, 100.0), Some(100.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), Some(2.0));
        // One run: every percentile is that run.
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[f64::NAN, 4.0], 50.0), Some(4.0));
    }

    fn run(scenario: &str, seed: u64, valid: bool, unavailable: f64, kills: u64) -> Value {
        json!({
            "scenario": scenario, "seed": seed, "valid": valid,
            "faults": {"partition": 1, "kill": kills, "pause": 0, "clock": 0, "membership": 0},
            "unavailability": {"longest_without_acknowledged_write_ms": unavailable},
        })
    }

    #[test]
    fn the_summary_has_percentiles_per_scenario_and_over_all_runs() {
        let runs = vec![
            run("kill-leader", 1, true, 3000.0, 1),
            run("kill-leader", 2, true, 1000.0, 2),
            run("kill-leader", 3, false, 2000.0, 1),
            run("halves", 1, true, 6000.0, 0),
        ];
        let s = summarize(&runs);
        let k = &s["scenarios"]["kill-leader"];
        assert_eq!(k["runs"], json!(3));
        assert_eq!(k["valid"], json!(2));
        assert_eq!(k["unavailability_ms"]["p50"], json!(2000.0));
        assert_eq!(k["unavailability_ms"]["p99"], json!(3000.0));
        assert_eq!(k["faults_per_run"]["max"], json!(3.0));
        assert_eq!(k["per_run"][1]["faults_survived"], json!(3));
        assert_eq!(s["all"]["runs"], json!(4));
        assert_eq!(s["all"]["unavailability_ms"]["max"], json!(6000.0));
        let text = render(&s);
        assert!(
            text.contains("kill-leader: 3 runs, 2 valid, unavailability p50 2.00 s p99 3.00 s"),
            "{text}"
        );
        assert!(
            text.contains("faults survived per run p50 2 (min 1, max 3)"),
            "{text}"
        );
        assert!(text.lines().last().unwrap().starts_with("all: 4 runs"));
    }
}
