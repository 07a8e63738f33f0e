//! `aerie-cm config-val` prints what `condor_config_val` (HTCondor 23.9.6, reference chroot)
//! prints for the same file.
#[path = "../../config/tests/common/mod.rs"]
mod common;
use common::*;
use std::process::Command;

const CONF: &str = r#"GROUP_NAMES = group_physics, group_physics.hep
GROUP_QUOTA_group_physics = 20
GROUP_QUOTA_group_physics.hep = 15
GROUP_ACCEPT_SURPLUS_group_physics.hep = true
XSW_LIMIT = 3
MINUTE = 60
StartIdleTime = 15 * $(MINUTE)
START = KeyboardIdle > $(StartIdleTime)
DAEMON_LIST = $(DAEMON_LIST) COLLECTOR NEGOTIATOR
NEGOTIATOR.NEGOTIATOR_INTERVAL = 30
EMPTY =
STATE_FILE = $(SPOOL)/Accountantnew.log
use ROLE : Submit
"#;

fn ours(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_aerie-cm"));
    c.arg("config-val")
        .args(args)
        .env_remove("AERIE_CONFIG")
        .env_remove("CONDOR_CONFIG");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("run aerie-cm");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn setup(name: &str) -> Scratch {
    let s = Scratch::new(name);
    s.write("cm.conf", CONF);
    s
}

const NAMES: &[&str] = &[
    "GROUP_NAMES",
    "GROUP_QUOTA_group_physics.hep",
    "group_accept_surplus_GROUP_PHYSICS.HEP",
    "XSW_LIMIT",
    "START",
    "DAEMON_LIST",
    "NEGOTIATOR_INTERVAL",
    "STATE_FILE",
    "SPOOL",
    "PRIORITY_HALFLIFE",
];

#[test]
fn plain_values_match_condor_config_val() {
    let s = setup("cv-plain");
    let theirs = condor_config_val(&s.theirs_path("cm.conf"), NAMES);
    let conf = s.ours_path("cm.conf").display().to_string();
    let mut args = vec!["--config", conf.as_str()];
    args.extend_from_slice(NAMES);
    let (code, out, _) = ours(&args, &[]);
    assert_eq!(out, theirs.stdout);
    assert_eq!(code, 0);
    assert!(theirs.ok);
}

#[test]
fn subsystem_prefix_matches() {
    let s = setup("cv-subsys");
    let theirs = condor_config_val(
        &s.theirs_path("cm.conf"),
        &["-subsystem", "negotiator", "NEGOTIATOR_INTERVAL"],
    );
    let conf = s.ours_path("cm.conf").display().to_string();
    let (_, out, _) = ours(
        &[
            "--config",
            &conf,
            "--subsystem",
            "negotiator",
            "NEGOTIATOR_INTERVAL",
        ],
        &[],
    );
    assert_eq!(out, theirs.stdout);
    assert_eq!(out, "30\n");
}

#[test]
fn undefined_and_empty_names_exit_non_zero() {
    let s = setup("cv-undef");
    let theirs = condor_config_val(
        &s.theirs_path("cm.conf"),
        &["XSW_LIMIT", "NO_SUCH_KNOB", "EMPTY"],
    );
    let conf = s.ours_path("cm.conf").display().to_string();
    let (code, out, err) = ours(
        &["--config", &conf, "XSW_LIMIT", "NO_SUCH_KNOB", "EMPTY"],
        &[],
    );
    assert_eq!(out, theirs.stdout);
    assert_eq!(err, theirs.stderr);
    assert_eq!(err, "Not defined: NO_SUCH_KNOB\nNot defined: EMPTY\n");
    assert_eq!(code, 1);
    assert!(!theirs.ok);
}

#[test]
fn verbose_names_file_line_and_default() {
    let s = setup("cv-verbose");
    let names = [
        "GROUP_QUOTA_group_physics.hep",
        "START",
        "PRIORITY_HALFLIFE",
        "DAEMON_LIST",
    ];
    let mut targs = vec!["-verbose"];
    targs.extend_from_slice(&names);
    let theirs = condor_config_val(&s.theirs_path("cm.conf"), &targs);
    let conf = s.ours_path("cm.conf").display().to_string();
    let mut args = vec!["--config", conf.as_str(), "--verbose"];
    args.extend_from_slice(&names);
    let (code, out, _) = ours(&args, &[]);
    assert_eq!(code, 0);
    // same text once the two trees' directories are made the same
    let ours_text = out.replace(&s.ours.display().to_string(), &s.theirs);
    assert_eq!(ours_text, theirs.stdout);
    assert!(out.contains(" # at: <Default>\n # raw: PRIORITY_HALFLIFE = 86400\n"));
    assert!(out.contains("cm.conf, line 3\n"));
    assert!(out.contains("use ROLE:Submit+0\n"));
}

#[test]
fn dump_with_pattern_lists_matching_knobs() {
    let s = setup("cv-dump");
    let theirs = condor_config_val(&s.theirs_path("cm.conf"), &["-dump", "GROUP_"]);
    let conf = s.ours_path("cm.conf").display().to_string();
    let (code, out, _) = ours(&["--config", &conf, "--dump", "GROUP_"], &[]);
    assert_eq!(code, 0);
    let body = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(body(&out), body(&theirs.stdout));
    assert!(out.contains("GROUP_QUOTA_group_physics.hep = 15\n"));
    assert!(out.contains("# Parameters with names that match GROUP_:\n"));
}

#[test]
fn config_from_environment_and_clear_errors() {
    let dir = std::env::temp_dir().join(format!("aerie-cv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.conf");
    std::fs::write(&good, "FOO = bar\n").unwrap();
    let (code, out, _) = ours(&["FOO"], &[("AERIE_CONFIG", good.to_str().unwrap())]);
    assert_eq!((code, out.as_str()), (0, "bar\n"));
    let bad = dir.join("bad.conf");
    std::fs::write(&bad, "FOO = bar\nif $(FOO) > 1\nendif\n").unwrap();
    let (code, _, err) = ours(&["--config", bad.to_str().unwrap(), "FOO"], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.conf, line 2"), "{err}");
    assert!(
        err.contains("complex conditionals are not supported"),
        "{err}"
    );
    let (code, _, err) = ours(&["FOO"], &[("AERIE_CONFIG", "/nonexistent/aerie.conf")]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/aerie.conf"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
