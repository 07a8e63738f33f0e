//! `aerie-node check-claims` on hand-written logs: a clean log passes with its summary, a
//! double claim and a stale-term claim are caught and named by file, line and slot.
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-node");

fn check(dir: &Path, name: &str, text: &str, json: bool) -> (i32, String) {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write log");
    let mut cmd = Command::new(BIN);
    cmd.arg("check-claims").arg(&path);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("run aerie-node check-claims");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_clean_log_passes_with_a_summary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = r#"{"event":"start","time_ms":1}
{"event":"claim","slot":"slot1@m","job":"1.0","submitter":"a@d","term":1,"cycle":1,"time_ms":2}
{"event":"refused","slot":"slot1@m","job":"2.0","reason":"already claimed","by":"startd","time_ms":3}
{"event":"release","slot":"slot1@m","job":"1.0","submitter":"a@d","time_ms":4}
{"event":"claim","slot":"slot1@m","job":"2.0","submitter":"b@d","term":2,"cycle":3,"time_ms":5}
"#;
    let (code, out) = check(dir.path(), "ok.log", log, true);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json summary");
    assert_eq!(v["ok"], true);
    assert_eq!(v["summary"]["claims"], 2);
    assert_eq!(v["summary"]["releases"], 1);
    assert_eq!(v["summary"]["refusals"]["already claimed"], 1);
    assert_eq!(v["summary"]["submitters"]["b@d"]["running"], 1);
    assert_eq!(v["summary"]["submitters"]["a@d"]["running"], 0);
}

#[test]
fn a_double_claim_is_a_violation_named_by_file_line_and_slot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = r#"{"event":"start","time_ms":1}
{"event":"claim","slot":"slot1@m","job":"1.0","submitter":"a@d","term":1,"cycle":1,"time_ms":2}
{"event":"claim","slot":"slot2@m","job":"3.0","submitter":"a@d","term":1,"cycle":1,"time_ms":2}
{"event":"claim","slot":"slot1@m","job":"2.0","submitter":"b@d","term":1,"cycle":2,"time_ms":3}
"#;
    let (code, out) = check(dir.path(), "double.log", log, false);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("double.log:4"), "{out}");
    assert!(out.contains("slot slot1@m"), "{out}");
    assert!(out.contains("still claimed for job 1.0"), "{out}");
    assert!(!out.contains("slot2@m:"), "{out}");
}

#[test]
fn a_stale_term_claim_is_a_violation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = r#"{"event":"claim","slot":"slot1@m","job":"1.0","submitter":"a@d","term":5,"cycle":1,"time_ms":2}
{"event":"release","slot":"slot1@m","job":"1.0","submitter":"a@d","time_ms":3}
{"event":"claim","slot":"slot1@m","job":"2.0","submitter":"a@d","term":4,"cycle":9,"time_ms":4}
"#;
    let (code, out) = check(dir.path(), "stale.log", log, true);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json summary");
    let viol = &v["summary"]["violations"][0];
    assert_eq!(viol["line"], 3);
    assert_eq!(viol["slot"], "slot1@m");
    assert!(viol["file"].as_str().unwrap_or("").ends_with("stale.log"));
    assert!(viol["message"]
        .as_str()
        .unwrap_or("")
        .contains("term 4 after accepting term 5"));
}

#[test]
fn a_stale_term_on_a_partitionable_parent_is_a_violation() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Two dynamic slots of one partitionable slot: the fence is on the parent.
    let log = r#"{"event":"claim","slot":"slot1_1@m","parent":"slot1@m","job":"1.0","term":5,"time_ms":2}
{"event":"claim","slot":"slot1_2@m","parent":"slot1@m","job":"2.0","term":3,"time_ms":3}
"#;
    let (code, out) = check(dir.path(), "p.log", log, false);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("p.log:2"), "{out}");
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let out = Command::new(BIN)
        .args(["check-claims", "/nonexistent/claims.log"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/claims.log"));
}
