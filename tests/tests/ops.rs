//! `ops/`: the monitoring files checked with the real tools, Debian's `prometheus` package.
//!
//! - `promtool` checks the scrape configuration and the rules, and runs the alert rules' unit
//!   tests (every alert fires on its fault); the dashboards are what `generate.py` makes, their
//!   structure holds, and every metric and label they and the rules name is one a CM exports
//!   (`cm/src/metrics/catalogue.rs`) — `ops/check/rules.sh`;
//! - the dashboards against Grafana's own schema (`@grafana/schema`, checked by the TypeScript
//!   compiler) — `ops/check/grafana_schema.py`, run by `rules.sh`;
//! - a live 3-CM cluster with a simulated pool, a real execute node and a real access point
//!   running real jobs, scraped by a real Prometheus: each CM's `/metrics` has every
//!   catalogued metric with its type, HELP text and labels, the node's and access point's
//!   agree with their code, every dashboard panel's query returns data, every rule evaluates,
//!   and `cmctl userprio -quotas` shows the last cycle's quotas — `ops/check/live.sh`.
//!
//! Neither is skipped when `prometheus` is missing: the test fails saying how to install it.
use std::path::{Path, PathBuf};
use std::process::Command;

const CM: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const NODE: &str = env!("CARGO_BIN_EXE_aerie-node-sim");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the repository")
        .to_path_buf()
}

fn require(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "`{tool}` is not installed: install Debian's prometheus package \
         (scripts/deps.sh prometheus, or apt-get install prometheus)"
    );
}

fn run(script: &str, env: &[(&str, &str)]) {
    // The scripts' daemons inherit the test pool's credentials (AERIE_CREDENTIALS).
    aerie_tests::test_pool();
    let path = repo().join(script);
    let out = Command::new("bash")
        .arg(&path)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(
        out.status.success(),
        "{script} failed ({}):\n{text}",
        out.status
    );
}

#[test]
fn promtool_checks_and_unit_tests_the_rules_and_the_dashboards_name_real_metrics() {
    require("promtool");
    run("ops/check/rules.sh", &[]);
}

#[test]
fn a_real_prometheus_scraping_a_live_cluster_answers_every_panel_and_rule() {
    require("prometheus");
    require("promtool");
    run(
        "ops/check/live.sh",
        &[
            ("AERIE_CM_SERVE_BIN", CM),
            ("AERIE_NODE_BIN", NODE),
            ("AERIE_CMCTL_BIN", CMCTL),
        ],
    );
}
